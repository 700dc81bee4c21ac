package chatclient

import (
	"time"

	"github.com/turnlog/turnlog/worker"
)

// SetBeforeSend runs fn just before c sends each request (a test's way to
// make something happen between Ask's checks and its send).
func SetBeforeSend(c *Client, fn func(worker.Request)) { c.beforeSend = fn }

// SetPollEvery makes c read the log every d while it waits (a test's way
// to make many reads in a short wait).
func SetPollEvery(c *Client, d time.Duration) { c.pollEvery = d }
