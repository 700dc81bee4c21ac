package httpapi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// Running is a server started by Start.
type Running struct {
	srv  *http.Server
	addr net.Addr
	done chan struct{}
}

// Start listens on addr (HOST:PORT; port 0 picks a free one) and serves h
// in the background until ctx ends or Close is called. It returns once the
// address is bound, so a port in use is reported at once.
func Start(ctx context.Context, addr string, h http.Handler, logger *slog.Logger) (*Running, error) {
	if logger == nil {
		logger = slog.Default()
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("http api: listen on %s: %w; pick a free HOST:PORT or turn the API off with --http ''", addr, err)
	}
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       30 * time.Second,
		// No WriteTimeout: live streams (server-sent events) stay open.
		IdleTimeout: 2 * time.Minute,
		ErrorLog:    slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	// Streams end when the server shuts down (see shutdownOf); the
	// channel is registered before the first request can arrive.
	closing := make(chan struct{})
	srv.RegisterOnShutdown(sync.OnceFunc(func() { close(closing) }))
	srv.BaseContext = func(net.Listener) context.Context {
		return context.WithValue(context.Background(), shutdownKey{}, closing)
	}
	r := &Running{srv: srv, addr: ln.Addr(), done: make(chan struct{})}
	go func() {
		defer close(r.done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error("http api stopped", "err", err)
		}
	}()
	go func() {
		select {
		case <-ctx.Done():
			_ = r.Close()
		case <-r.done:
		}
	}()
	return r, nil
}

// Addr is the address the server listens on.
func (r *Running) Addr() net.Addr { return r.addr }

// URL is the server's base URL, e.g. http://127.0.0.1:8080: what a
// client on this machine calls. A server on every interface (0.0.0.0,
// ::) is called at 127.0.0.1, not at the unspecified address its
// listener reports ([::]), which no client can call.
func (r *Running) URL() string {
	if a, ok := r.addr.(*net.TCPAddr); ok && a.IP.IsUnspecified() {
		return "http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(a.Port))
	}
	return "http://" + r.addr.String()
}

// Close stops the server: no new requests, up to 5 s for those in flight.
// It is safe to call more than once.
func (r *Running) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := r.srv.Shutdown(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		err = r.srv.Close()
	}
	<-r.done
	return err
}
