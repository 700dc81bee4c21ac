package natsconn

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Context is a nats CLI context: a named set of connection settings that
// `nats context add NAME ...` saves as JSON in
// $XDG_CONFIG_HOME/nats/context/NAME.json (~/.config/nats/context/NAME.json
// without XDG_CONFIG_HOME). Only the fields turnlog uses are here; a
// context that needs a feature turnlog lacks (a JetStream domain, a SOCKS
// proxy, a secret store) is refused by Load rather than half applied.
type Context struct {
	Name        string `json:"-"`
	Path        string `json:"-"`
	URL         string `json:"url"`
	Token       string `json:"token"`
	User        string `json:"user"`
	Password    string `json:"password"`
	Creds       string `json:"creds"`
	NKey        string `json:"nkey"`
	Cert        string `json:"cert"`
	Key         string `json:"key"`
	CA          string `json:"ca"`
	InboxPrefix string `json:"inbox_prefix"`
	TLSFirst    bool   `json:"tls_first"`
	UserJWT     string `json:"user_jwt"`
	UserSeed    string `json:"user_seed"`

	NSC           string `json:"nsc"`
	JSDomain      string `json:"jetstream_domain"`
	JSAPIPrefix   string `json:"jetstream_api_prefix"`
	JSEventPrefix string `json:"jetstream_event_prefix"`
	SocksProxy    string `json:"socks_proxy"`
	WinCertStore  string `json:"windows_cert_store"`
}

// ContextPath is where the nats CLI keeps the context called name.
func ContextPath(name string, getenv func(string) string) (string, error) {
	if name == "" || strings.Contains(name, "..") || strings.ContainsAny(name, `/\`) {
		return "", fmt.Errorf("context name %q: use the name `nats context ls` shows, without '/' or '..'", name)
	}
	root := getenv("XDG_CONFIG_HOME")
	if root == "" {
		home := getenv("HOME")
		if home == "" {
			h, err := os.UserHomeDir()
			if err != nil {
				return "", fmt.Errorf("context %s: find the home directory: %w; set XDG_CONFIG_HOME", name, err)
			}
			home = h
		}
		root = filepath.Join(home, ".config")
	}
	return filepath.Join(root, "nats", "context", name+".json"), nil
}

// LoadContext reads the nats CLI context called name. Paths in it may
// start with ~ or hold $VARIABLES, as the nats CLI allows.
func LoadContext(name string, getenv func(string) string) (*Context, error) {
	path, err := ContextPath(name, getenv)
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("nats context %q: %s does not exist; create it with `nats context add %s --server URL --creds FILE`, or list the known ones with `nats context ls`", name, path, name)
	}
	if err != nil {
		return nil, fmt.Errorf("nats context %q: %w", name, err)
	}
	c := &Context{Name: name, Path: path}
	if err := json.Unmarshal(data, c); err != nil {
		return nil, fmt.Errorf("nats context %q: %s is not a context file: %v", name, path, err)
	}
	if err := c.supported(); err != nil {
		return nil, err
	}
	expand := func(p string) (string, error) { return expandPath(p, getenv) }
	for _, f := range []*string{&c.Creds, &c.NKey, &c.Cert, &c.Key, &c.CA} {
		if *f, err = expand(*f); err != nil {
			return nil, fmt.Errorf("nats context %q: %w", name, err)
		}
	}
	return c, nil
}

// supported refuses what turnlog would otherwise ignore and then connect
// wrongly without.
func (c *Context) supported() error {
	unsupported := func(what string) error {
		return fmt.Errorf("nats context %q (%s) uses %s, which turnlog does not support; use a context without it, or pass --nats-url and --creds", c.Name, c.Path, what)
	}
	switch {
	case c.NSC != "":
		return unsupported("an nsc lookup (nsc)")
	case c.JSDomain != "", c.JSAPIPrefix != "", c.JSEventPrefix != "":
		return unsupported("a JetStream domain or API prefix")
	case c.SocksProxy != "":
		return unsupported("a SOCKS proxy")
	case c.WinCertStore != "":
		return unsupported("the Windows certificate store")
	case c.UserJWT != "" && c.UserSeed == "":
		return unsupported("a user JWT without its seed")
	}
	for _, v := range []string{c.Token, c.Password, c.UserJWT, c.UserSeed} {
		if s := scheme(v); secretStores[s] {
			return unsupported(fmt.Sprintf("a %s:// secret reference", s))
		}
	}
	return nil
}

// secretStores are the reference schemes of the nats CLI's context
// values that turnlog cannot resolve: a value starting with one of them
// is a reference, not the secret itself.
var secretStores = map[string]bool{"env": true, "op": true, "nsc": true, "file": true}

// expandPath turns a context's file reference into a path: file://
// prefix dropped, $VARIABLES and a leading ~ expanded. Other schemes
// (op://, env://, nsc://) name secret stores turnlog cannot read.
func expandPath(p string, getenv func(string) string) (string, error) {
	if p == "" {
		return "", nil
	}
	if s := scheme(p); secretStores[s] {
		if s != "file" {
			return "", fmt.Errorf("%q is a %s:// reference, which turnlog cannot read; use a file path", p, s)
		}
		p = strings.TrimPrefix(p, "file://")
	}
	p = os.Expand(p, getenv)
	if p == "~" || strings.HasPrefix(p, "~/") {
		home := getenv("HOME")
		if home == "" {
			h, err := os.UserHomeDir()
			if err != nil {
				return "", fmt.Errorf("expand %q: %w", p, err)
			}
			home = h
		}
		p = filepath.Join(home, strings.TrimPrefix(p, "~"))
	}
	return p, nil
}

// scheme is the scheme of a reference such as op://vault/item ("" when
// ref does not start with SCHEME://).
func scheme(ref string) string {
	s, _, found := strings.Cut(ref, "://")
	if !found {
		return ""
	}
	return s
}
