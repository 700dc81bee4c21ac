package chatclient

import "github.com/turnlog/turnlog/worker"

// SetBeforeSend runs fn just before c sends each request (a test's way to
// make something happen between Ask's checks and its send).
func SetBeforeSend(c *Client, fn func(worker.Request)) { c.beforeSend = fn }
