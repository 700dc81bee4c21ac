// Package embedded runs a NATS server with JetStream inside the turnlog
// process, so that `turnlog serve` and the tests need no external server.
// The same commands work unchanged against an external server or cluster.
package embedded

import (
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// Sync modes for Config.Sync.
const (
	// SyncInterval lets JetStream fsync on its interval (2 minutes by
	// default): a process crash loses nothing (the OS has the writes), a
	// power loss can lose the last interval.
	SyncInterval = "interval"
	// SyncAlways fsyncs every write before it is acknowledged: nothing
	// acknowledged is lost even on power loss, at a large cost in
	// throughput.
	SyncAlways = "always"
)

// Config says where the embedded server keeps its data and listens.
type Config struct {
	// DataDir holds the JetStream store; it survives restarts.
	DataDir string
	// Listen is host:port for NATS clients; port 0 picks a free port, and
	// "" listens nowhere (in-process connections only).
	Listen string
	// Sync is SyncInterval (default) or SyncAlways.
	Sync string
	// MaxPayload is the largest message the server accepts (default 8 MiB,
	// so long tool results and snapshots fit).
	MaxPayload int32
	// MaxStore is the most bytes JetStream may keep on disk (max_store);
	// 0 means AutoMaxStore (75% of the space free at start, plus what the
	// store holds), -1 the server's own dynamic default.
	// JetStream refuses writes past it with "insufficient resources", and
	// accepts them again as soon as space is freed within it: a limit
	// below the disk's free space keeps a full disk from ever failing a
	// write with a file system error.
	MaxStore int64
	// Users, when not empty, turns authentication on: only these nkey
	// users may connect (in-process connections too), each within its
	// permissions (see natsauth.ServerAuth). Empty means anyone who reaches
	// the address may do anything.
	Users []*server.NkeyUser
	// Accounts are the accounts Users are in (see natsauth.ServerAuth);
	// none puts every user in the server's global account.
	Accounts []*server.Account
	// StreamsAccount is the account of Accounts that holds the streams
	// (JetStream is enabled in it). The store of a data directory follows
	// the account in use: see moveStore.
	StreamsAccount string
	// Warn, when set, is told what an operator must see at start: a data
	// directory holding streams in a store the server does not open.
	Warn func(string)
	// Lock is a lock on DataDir that the caller took beforehand (serve
	// does, before it writes keys into the directory); when nil, Start
	// takes one. Either way the Server owns it from Start on, and
	// Shutdown (or a failed Start) releases it.
	Lock *DataDirLock
}

// Validate reports the first setting that cannot work.
func (c Config) Validate() error {
	if c.DataDir == "" {
		return errors.New("data directory is empty; pass --data DIR")
	}
	switch c.Sync {
	case "", SyncInterval, SyncAlways:
	default:
		return fmt.Errorf("sync mode %q: use %q or %q", c.Sync, SyncInterval, SyncAlways)
	}
	if c.Listen != "" {
		if _, _, err := splitHostPort(c.Listen); err != nil {
			return fmt.Errorf("listen address %q: %v; use HOST:PORT such as 127.0.0.1:4222", c.Listen, err)
		}
	}
	if c.Lock != nil && filepath.Clean(c.Lock.Dir()) != filepath.Clean(c.DataDir) {
		return fmt.Errorf("the lock given is on %s, not on the data directory %s", c.Lock.Dir(), c.DataDir)
	}
	return nil
}

// Server is a running embedded NATS server.
type Server struct {
	ns      *server.Server
	auth    bool
	lock    *DataDirLock
	opts    *server.Options // as last given to the server (see RaiseMaxStore)
	dataDir string
}

// Authenticated reports whether the server refuses connections without a
// key (Config.Users was set).
func (s *Server) Authenticated() bool { return s.auth }

// Start locks the data directory (see DataDirLock), runs a server on it
// and waits until it accepts connections. A directory another process
// holds is refused at once with a *LockedError naming the holder.
func Start(c Config) (srv *Server, err error) {
	if err := c.Validate(); err != nil {
		c.Lock.Release()
		return nil, fmt.Errorf("start embedded NATS: %w", err)
	}
	lock := c.Lock
	if lock == nil {
		if lock, err = LockDataDir(c.DataDir); err != nil {
			return nil, err
		}
	}
	defer func() {
		if err != nil {
			lock.Release()
		}
	}()
	opts := &server.Options{
		ServerName: "turnlog-embedded",
		JetStream:  true,
		StoreDir:   c.DataDir,
		NoSigs:     true,
		NoLog:      true,
		MaxPayload: 8 << 20,
		SyncAlways: c.Sync == SyncAlways,
	}
	if c.MaxPayload > 0 {
		opts.MaxPayload = c.MaxPayload
	}
	switch {
	case c.MaxStore > 0:
		opts.JetStreamMaxStore = c.MaxStore
	case c.MaxStore == 0:
		// A number rather than the server's dynamic default, which
		// cannot be raised while the server runs (see FollowDisk).
		if n, ok := AutoMaxStore(c.DataDir); ok {
			opts.JetStreamMaxStore = n
		}
	}
	if len(c.Users) > 0 {
		opts.Nkeys = c.Users
		opts.Accounts = c.Accounts
	}
	if err := c.moveStore(); err != nil {
		return nil, fmt.Errorf("start embedded NATS: %w", err)
	}
	// The server wants pending capacity above the payload limit, and an
	// object read (a large snapshot) may have 32 MiB in flight to one
	// client under JetStream's flow control: below that the client would be
	// dropped as a slow consumer.
	opts.MaxPending = max(int64(opts.MaxPayload)*8, 64<<20)
	if c.Listen == "" {
		opts.DontListen = true
	} else {
		host, port, _ := splitHostPort(c.Listen)
		opts.Host, opts.Port = host, port
		if port == 0 {
			opts.Port = server.RANDOM_PORT
		} else if err := portFree(c.Listen); err != nil {
			// The server would only say so in its log (off) and time
			// out: say it at once.
			return nil, fmt.Errorf("start embedded NATS: %w", err)
		}
	}
	ns, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("start embedded NATS: %w", err)
	}
	go ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		ns.Shutdown()
		ns.WaitForShutdown()
		return nil, fmt.Errorf("start embedded NATS: not ready after 10s (is %s already in use?)", c.Listen)
	}
	srv = &Server{ns: ns, auth: len(c.Users) > 0, lock: lock, opts: opts.Clone(), dataDir: c.DataDir}
	if err := lock.SetNATS(srv.ClientURL()); err != nil {
		ns.Shutdown()
		ns.WaitForShutdown()
		return nil, err
	}
	return srv, nil
}

// ClientURL is the nats:// URL clients on other processes connect to, or ""
// when the server does not listen.
func (s *Server) ClientURL() string {
	addr := s.ns.Addr()
	if addr == nil {
		return ""
	}
	return s.ns.ClientURL()
}

// Connect opens an in-process connection: no TCP, the fastest way for the
// hosting process itself to talk to the server. On a server with
// authentication, opts must carry a key (nats.Nkey, nats.NkeyOptionFromSeed).
func (s *Server) Connect(opts ...nats.Option) (*nats.Conn, error) {
	opts = append([]nats.Option{nats.InProcessServer(s.ns), nats.Name("turnlog")}, opts...)
	return nats.Connect("", opts...)
}

// Shutdown stops the server and waits until it has flushed and closed its
// store, so that a restart on the same directory finds everything, then
// releases the directory's lock.
func (s *Server) Shutdown() {
	s.ns.Shutdown()
	s.ns.WaitForShutdown()
	s.lock.Release()
}

// NATS exposes the underlying server for tests and tools that need it.
func (s *Server) NATS() *server.Server { return s.ns }

func splitHostPort(hp string) (string, int, error) {
	host, ps, err := net.SplitHostPort(hp)
	if err != nil {
		return "", 0, err
	}
	port, err := strconv.Atoi(ps)
	if err != nil || port < 0 || port > 65535 {
		return "", 0, fmt.Errorf("port %q is not a number from 0 to 65535", ps)
	}
	return host, port, nil
}

// portFree reports whether hostPort can be listened on now: a server
// already there is named at once instead of after the readiness timeout.
func portFree(hostPort string) error {
	ln, err := net.Listen("tcp", hostPort)
	if err != nil {
		return fmt.Errorf("cannot listen on %s (%v): is another server using it? pass another --listen", hostPort, err)
	}
	return ln.Close()
}
