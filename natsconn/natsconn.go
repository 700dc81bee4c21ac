// Package natsconn decides how a turnlog command connects to NATS, the way
// the NATS tools do: which server (--nats-url, TURNLOG_NATS_URL, NATS_URL,
// a nats CLI context, the address of the `turnlog serve` running on the
// data directory, 127.0.0.1:4222) and which credential (--creds,
// --nkey, --user, their TURNLOG_NATS_ and NATS_ variables, a context, or
// the key of the command's role in the local data directory that
// `turnlog serve` wrote). Every command connects through it, so the rules
// and the error messages are the same everywhere.
package natsconn

import (
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
	"github.com/turnlog/turnlog/natsauth"
)

// DefaultURL is where commands look for NATS when nothing says otherwise:
// `turnlog serve`'s default address.
const DefaultURL = "nats://127.0.0.1:4222"

// DefaultDataDir is `turnlog serve`'s default data directory, where
// commands look for their key when no credential was named.
const DefaultDataDir = "./.turnlog"

// Settings are what a command was told about its connection. Empty fields
// were not given on the command line; Resolve fills them from the
// environment, the context and the defaults.
type Settings struct {
	URL      string
	Creds    string // a .creds file (JWT and seed) or an nkey seed file
	NKey     string // an nkey seed file, as nats --nkey
	User     string
	Password string
	TLSCA    string
	TLSCert  string
	TLSKey   string
	// Context names a nats CLI context to take the server and
	// credential from.
	Context string
	// DataDir is the data directory whose auth/<Role>.nk is the credential
	// when no other was named.
	DataDir string
	// Role is whose key to take from DataDir: admin for the client
	// commands (the owner of a data directory is its operator), worker
	// for `turnlog worker`.
	Role natsauth.Role
	// InboxPrefix is the prefix of the connection's reply subjects. When
	// none is given (here, in TURNLOG_NATS_INBOX_PREFIX or the nats
	// context), a turnlog key (<role>.nk, named or from DataDir) gives
	// its role's, natsauth.InboxPrefix, the only one its role may
	// subscribe to; a credential of no such name, Role's if set.
	InboxPrefix string
	// Served, when set, says where the `turnlog serve` holding a data
	// directory listens for NATS clients ("" when none runs there): the
	// server when the command line, the environment and the context name
	// none, before DefaultURL. Resolve asks it about Data().
	Served func(dataDir string) string
	// Getenv reads the environment (default os.Getenv).
	Getenv func(string) string
}

// Environment variables, turnlog's first: a TURNLOG_ variable wins over
// the NATS tools' one, so a NATS_URL exported for other tools does not
// redirect turnlog when TURNLOG_NATS_URL says otherwise.
const (
	EnvURL      = "TURNLOG_NATS_URL"
	EnvCreds    = "TURNLOG_NATS_CREDS"
	EnvNKey     = "TURNLOG_NATS_NKEY"
	EnvUser     = "TURNLOG_NATS_USER"
	EnvPassword = "TURNLOG_NATS_PASSWORD"
	EnvTLSCA    = "TURNLOG_NATS_TLS_CA"
	EnvContext  = "TURNLOG_NATS_CONTEXT"
	EnvDataDir  = "TURNLOG_DATA"
	// EnvInboxPrefix is the inbox prefix of a credential whose role
	// turnlog cannot tell from its file name (see Settings.InboxPrefix).
	EnvInboxPrefix = "TURNLOG_NATS_INBOX_PREFIX"
	// EnvSeed holds an nkey seed itself rather than a file's path, for
	// containers that cannot mount a file their user may read.
	EnvSeed = "TURNLOG_NATS_SEED"
)

// layer is one source of settings; the first layer that has a value wins.
type layer struct {
	from                             string
	url, creds, nkey, user, password string
	token, jwt, seed                 string
	ca, cert, key, inboxPrefix       string
	tlsFirst                         bool
}

func (l layer) credential() bool {
	return l.creds != "" || l.nkey != "" || l.user != "" || l.token != "" || l.jwt != "" || l.seed != ""
}

// Plan is a resolved connection: where to, with what, and why, so that a
// refusal can say which credential the server refused.
type Plan struct {
	URL string
	// URLFrom says where URL came from when nothing named it but the
	// lock file of a running serve ("" otherwise), for Explain.
	URLFrom string
	// Credential describes the credential in words: a file, "the nkey seed
	// in TURNLOG_NATS_SEED", "none".
	Credential string
	// Looked lists where Resolve looked for a key when it found none.
	Looked string
	// Role is the turnlog role of the credential when its file says
	// (<role>.nk), "" otherwise.
	Role natsauth.Role
	opts []nats.Option
	// clientCert is the TLS client certificate's file ("": none); tls
	// says whether any TLS setting was given, tlsFirst whether the TLS
	// handshake comes first. Explain words a TLS failure with them.
	clientCert    string
	tls, tlsFirst bool
}

// Data is the data directory these settings name: DataDir, else
// TURNLOG_DATA, else DefaultDataDir. A worker denies its auth/ directory
// to template variables, whichever credential it connects with.
func (s Settings) Data() string {
	getenv := s.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	return first(s.DataDir, getenv(EnvDataDir), DefaultDataDir)
}

// Resolve applies the rules: the command line, then TURNLOG_ variables,
// then NATS_ variables, then the nats CLI context (--context,
// TURNLOG_NATS_CONTEXT or NATS_CONTEXT), then, for the server, the
// address of the serve running on the data directory (Served) and
// DefaultURL, and, for the credential, the role's key in the data
// directory. The credential comes whole from the first of those that
// names one, never a user from one and a password from another.
func (s Settings) Resolve() (*Plan, error) {
	getenv := s.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	layers := []layer{
		{from: "the command line", url: s.URL, creds: s.Creds, nkey: s.NKey, user: s.User, password: s.Password, ca: s.TLSCA, cert: s.TLSCert, key: s.TLSKey, inboxPrefix: s.InboxPrefix},
		{from: "TURNLOG_NATS_* variables", url: getenv(EnvURL), creds: getenv(EnvCreds), nkey: getenv(EnvNKey), user: getenv(EnvUser), password: getenv(EnvPassword), ca: getenv(EnvTLSCA), seed: getenv(EnvSeed), inboxPrefix: getenv(EnvInboxPrefix)},
		{from: "NATS_* variables", url: getenv("NATS_URL"), creds: getenv("NATS_CREDS"), nkey: getenv("NATS_NKEY"), user: getenv("NATS_USER"), password: getenv("NATS_PASSWORD"), ca: getenv("NATS_CA"), cert: getenv("NATS_CERT"), key: getenv("NATS_KEY")},
	}
	ctxName := first(s.Context, getenv(EnvContext), getenv("NATS_CONTEXT"))
	if ctxName != "" {
		c, err := LoadContext(ctxName, getenv)
		if err != nil {
			return nil, err
		}
		layers = append(layers, layer{from: "nats context " + ctxName, url: c.URL, creds: c.Creds, nkey: c.NKey, user: c.User, password: c.Password,
			token: c.Token, jwt: c.UserJWT, seed: c.UserSeed, ca: c.CA, cert: c.Cert, key: c.Key, inboxPrefix: c.InboxPrefix, tlsFirst: c.TLSFirst})
	}

	p := &Plan{Credential: "none"}
	var sec layer // the TLS settings and inbox prefix, each from the first layer that has it
	for _, l := range layers {
		p.URL = first(p.URL, l.url)
		sec.ca, sec.cert, sec.key = first(sec.ca, l.ca), first(sec.cert, l.cert), first(sec.key, l.key)
		sec.inboxPrefix = first(sec.inboxPrefix, l.inboxPrefix)
		sec.tlsFirst = sec.tlsFirst || l.tlsFirst
	}
	if p.URL == "" && s.Served != nil {
		if p.URL = s.Served(s.Data()); p.URL != "" {
			p.URLFrom = "where the turnlog serve of data directory " + s.Data() + " listens, as its turnlog.lock says"
		}
	}
	p.URL = first(p.URL, DefaultURL)
	credFound := false
	for _, l := range layers {
		if !l.credential() {
			continue
		}
		opt, desc, err := credentialOption(l)
		if err != nil {
			return nil, err
		}
		p.opts = append(p.opts, opt...)
		p.Credential = desc
		p.Role = natsauth.RoleOfKeyFile(first(l.creds, l.nkey))
		credFound = true
		break
	}
	if !credFound {
		data := s.Data()
		role := s.Role
		if role == "" {
			role = natsauth.Admin
		}
		key := natsauth.KeyFile(natsauth.Dir(data), role)
		if _, err := os.Stat(key); err == nil {
			opt, err := nkeyFile(key)
			if err != nil {
				return nil, err
			}
			p.opts = append(p.opts, opt)
			p.Credential = key + " (the " + string(role) + " key of data directory " + data + ")"
			p.Role = role
		} else {
			p.Looked = key
		}
	}
	if sec.cert != "" || sec.key != "" {
		if sec.cert == "" || sec.key == "" {
			return nil, errors.New("a TLS client certificate needs both its certificate and its key; pass both (--tls-cert and --tls-key, or NATS_CERT and NATS_KEY)")
		}
		p.opts = append(p.opts, nats.ClientCert(sec.cert, sec.key))
		p.clientCert = sec.cert
	}
	if sec.ca != "" {
		p.opts = append(p.opts, nats.RootCAs(sec.ca))
	}
	if sec.tlsFirst {
		p.opts = append(p.opts, nats.TLSHandshakeFirst())
	}
	p.tls, p.tlsFirst = sec.ca != "" || sec.cert != "" || sec.tlsFirst, sec.tlsFirst
	// The credential's role, else the command's (a worker signing with
	// TURNLOG_NATS_SEED is a worker).
	if inboxRole := first(string(p.Role), string(s.Role)); sec.inboxPrefix == "" && inboxRole != "" {
		sec.inboxPrefix = natsauth.InboxPrefix(natsauth.Role(inboxRole))
	}
	if sec.inboxPrefix != "" {
		p.opts = append(p.opts, nats.CustomInboxPrefix(sec.inboxPrefix))
	}
	return p, nil
}

// credentialOption turns the credential of one layer into options and a
// description.
func credentialOption(l layer) ([]nats.Option, string, error) {
	switch {
	case l.creds != "":
		opt, err := credsFile(l.creds)
		return []nats.Option{opt}, l.creds + " (from " + l.from + ")", err
	case l.nkey != "":
		opt, err := nkeyFile(l.nkey)
		return []nats.Option{opt}, l.nkey + " (from " + l.from + ")", err
	case l.jwt != "":
		return []nats.Option{nats.UserJWTAndSeed(l.jwt, l.seed)}, "the user JWT of " + l.from, nil
	case l.seed != "":
		opt, err := nkeySeed([]byte(l.seed), "the nkey seed in "+EnvSeed)
		return []nats.Option{opt}, "the nkey seed in " + EnvSeed, err
	case l.user != "":
		return []nats.Option{nats.UserInfo(l.user, l.password)}, "user " + l.user + " (from " + l.from + ")", nil
	default:
		return []nats.Option{nats.Token(l.token)}, "the token of " + l.from, nil
	}
}

// credsFile accepts what the NATS tools call credentials: a .creds file
// (a user JWT and its seed, as nsc writes) or, since turnlog's own keys
// are nkey seeds, an nkey seed file such as <data>/auth/client.nk.
func credsFile(path string) (nats.Option, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("credentials %s: %w", path, err)
	}
	defer clear(data)
	if bytes.Contains(data, []byte("BEGIN NATS USER JWT")) {
		if _, err := nkeys.ParseDecoratedJWT(data); err != nil {
			return nil, fmt.Errorf("credentials %s: %w", path, err)
		}
		return nats.UserCredentials(path), nil
	}
	return nkeyFile(path)
}

// nkeyFile is an nkey seed file, checked now so that a wrong file is
// reported before any connection attempt.
func nkeyFile(path string) (nats.Option, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("credentials %s: %w", path, err)
	}
	defer clear(data)
	if _, err := nkeySeed(data, path); err != nil {
		return nil, err
	}
	opt, err := nats.NkeyOptionFromSeed(path)
	if err != nil {
		return nil, fmt.Errorf("credentials %s: %w", path, err)
	}
	return opt, nil
}

// nkeySeed signs with a seed held in memory.
func nkeySeed(seed []byte, what string) (nats.Option, error) {
	kp, err := nkeys.ParseDecoratedNKey(seed)
	if err != nil {
		return nil, fmt.Errorf("credentials %s: neither a .creds file nor an nkey seed (%v); pass a .creds file or a <role>.nk file from the data directory's auth/", what, err)
	}
	pub, err := kp.PublicKey()
	if err != nil || !nkeys.IsValidPublicUserKey(pub) {
		return nil, fmt.Errorf("credentials %s: not a user key (a user seed starts with SU)", what)
	}
	return nats.Nkey(pub, kp.Sign), nil
}

func first(vals ...string) string {
	for _, v := range vals {
		if v != "" {
			return v
		}
	}
	return ""
}

// Options returns the resolved options plus extra (a name, timeouts,
// reconnect settings, handlers).
func (p *Plan) Options(extra ...nats.Option) []nats.Option {
	opts := []nats.Option{nats.Name("turnlog"), nats.Timeout(5 * time.Second)}
	opts = append(opts, p.opts...)
	return append(opts, extra...)
}

// Connect dials the server and explains a failure: nothing listening, a
// server that wants a credential none was found for, a credential the
// server does not know.
func (p *Plan) Connect(extra ...nats.Option) (*nats.Conn, error) {
	nc, err := nats.Connect(p.URL, p.Options(extra...)...)
	if err != nil {
		return nil, p.Explain(err)
	}
	return nc, nil
}

// Explain turns a connection error into one that says what to do.
func (p *Plan) Explain(err error) error {
	if e := p.explainTLS(err); e != nil {
		return e
	}
	if !isAuthError(err) {
		if p.URLFrom != "" {
			return fmt.Errorf("connect to NATS at %s (%s): %w; pass --nats-url", p.URL, p.URLFrom, err)
		}
		return fmt.Errorf("connect to NATS at %s: %w; start one with `turnlog serve` or pass --nats-url", p.URL, err)
	}
	if p.Credential == "none" {
		return fmt.Errorf("the NATS server at %s requires a credential and turnlog found none (no --creds, NATS_CREDS or --context, and no %s): run the command where `turnlog serve` keeps its data (./.turnlog), set TURNLOG_DATA to that directory, or pass --creds FILE: %w",
			p.URL, p.Looked, err)
	}
	return fmt.Errorf("the NATS server at %s refused the credential %s: %w; use a key that server knows (turnlog serve writes its keys to <data>/auth/, a cluster's come from `turnlog auth init`)", p.URL, p.Credential, err)
}

func isAuthError(err error) bool {
	if errors.Is(err, nats.ErrAuthorization) || errors.Is(err, nats.ErrAuthExpired) || errors.Is(err, nats.ErrAuthRevoked) {
		return true
	}
	return strings.Contains(strings.ToLower(err.Error()), "authorization violation")
}

// explainTLS words a failed TLS connection (nil for any other error): a
// server certificate no CA given vouches for, a server that wants a
// client certificate, a server that wants the handshake first.
func (p *Plan) explainTLS(err error) error {
	var verify *tls.CertificateVerificationError
	// The server's refusal of a client certificate reaches the client
	// either while nats.go completes the handshake (ErrTLS) or, in TLS
	// 1.3 where the client finishes first, as the server's alert on the
	// first read ("remote error: tls: certificate required").
	var op *net.OpError
	refused := errors.Is(err, nats.ErrTLS) || errors.As(err, &op) && op.Op == "remote error"
	switch {
	case errors.As(err, &verify):
		return fmt.Errorf("the NATS server at %s presented a TLS certificate turnlog cannot verify: %w; pass the CA that signed it with --tls-ca (or NATS_CA, or ca in the nats context)", p.URL, err)
	case refused && p.clientCert == "":
		return fmt.Errorf("the NATS server at %s ended the TLS handshake: %w; if it verifies its clients, pass a client certificate with --tls-cert and --tls-key (or NATS_CERT and NATS_KEY, or cert and key in the nats context)", p.URL, err)
	case refused:
		return fmt.Errorf("the NATS server at %s ended the TLS handshake with the client certificate %s: %w; use a certificate signed by a CA the server trusts", p.URL, p.clientCert, err)
	case errors.Is(err, io.EOF) && p.tls && !p.tlsFirst:
		return fmt.Errorf("connect to NATS at %s: the server closed the connection (%w); if it expects the TLS handshake first (handshake_first), set \"tls_first\": true in the nats context", p.URL, err)
	}
	return nil
}
