package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/spf13/pflag"
	"github.com/turnlog/turnlog/eventlog"
)

// natsFlags are the connection flags every client command takes.
type natsFlags struct {
	url      string
	creds    string
	user     string
	password string
	tlsCA    string
	prefix   string
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

func (f *natsFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.url, "nats-url", envOr("TURNLOG_NATS_URL", "nats://127.0.0.1:4222"), "NATS server URL(s), comma-separated (env TURNLOG_NATS_URL)")
	fs.StringVar(&f.creds, "creds", os.Getenv("TURNLOG_NATS_CREDS"), "NATS credentials file (env TURNLOG_NATS_CREDS)")
	fs.StringVar(&f.user, "user", os.Getenv("TURNLOG_NATS_USER"), "NATS user (env TURNLOG_NATS_USER)")
	fs.StringVar(&f.password, "password", os.Getenv("TURNLOG_NATS_PASSWORD"), "NATS password (env TURNLOG_NATS_PASSWORD)")
	fs.StringVar(&f.tlsCA, "tls-ca", os.Getenv("TURNLOG_NATS_TLS_CA"), "CA certificate file to verify the NATS server (env TURNLOG_NATS_TLS_CA)")
	fs.StringVar(&f.prefix, "prefix", envOr("TURNLOG_PREFIX", eventlog.DefaultPrefix), "subject prefix and stream name stem (env TURNLOG_PREFIX)")
}

func (f *natsFlags) options() []nats.Option {
	opts := []nats.Option{nats.Name("turnlog"), nats.Timeout(5 * time.Second)}
	if f.creds != "" {
		opts = append(opts, nats.UserCredentials(f.creds))
	}
	if f.user != "" {
		opts = append(opts, nats.UserInfo(f.user, f.password))
	}
	if f.tlsCA != "" {
		opts = append(opts, nats.RootCAs(f.tlsCA))
	}
	return opts
}

// connect dials NATS and opens the log, with an error that says what to do
// when nothing listens.
func (f *natsFlags) connect(ctx context.Context) (*nats.Conn, *eventlog.Log, error) {
	nc, err := f.dial()
	if err != nil {
		return nil, nil, err
	}
	l, err := eventlog.Open(ctx, nc, eventlog.WithPrefix(f.prefix))
	if err != nil {
		nc.Close()
		return nil, nil, err
	}
	return nc, l, nil
}

// dial connects to the first of the URLs that answers, with extra options
// after the flags' own.
func (f *natsFlags) dial(extra ...nats.Option) (*nats.Conn, error) {
	nc, err := nats.Connect(f.url, append(f.options(), extra...)...)
	if err != nil {
		return nil, fmt.Errorf("connect to NATS at %s: %w; start one with `turnlog serve` or pass --nats-url", f.url, err)
	}
	return nc, nil
}
