package natsconn_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/natsauth"
	"github.com/turnlog/turnlog/natsconn"
)

// keys makes a data directory with every role's key and returns it.
func keys(t *testing.T) string {
	t.Helper()
	data := t.TempDir()
	_, err := natsauth.Ensure(natsauth.Dir(data))
	require.NoError(t, err)
	return data
}

func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

func TestResolve(t *testing.T) {
	data := keys(t)
	other := keys(t)
	admin := natsauth.KeyFile(natsauth.Dir(data), natsauth.Admin)
	client := natsauth.KeyFile(natsauth.Dir(data), natsauth.Client)
	worker := natsauth.KeyFile(natsauth.Dir(data), natsauth.Worker)
	otherClient := natsauth.KeyFile(natsauth.Dir(other), natsauth.Client)

	cfg := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(cfg, "nats", "context"), 0o700))
	write := func(name, body string) {
		require.NoError(t, os.WriteFile(filepath.Join(cfg, "nats", "context", name+".json"), []byte(body), 0o600))
	}
	write("prod", `{"url": "nats://prod:4222", "nkey": "`+otherClient+`"}`)
	write("home", `{"url": "nats://home:4222", "nkey": "~/keys/client.nk"}`)
	write("domain", `{"url": "nats://x:4222", "jetstream_domain": "hub"}`)
	write("vault", `{"url": "nats://x:4222", "user": "u", "password": "op://vault/nats/password"}`)
	home := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(home, "keys"), 0o700))
	data2, err := os.ReadFile(client)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(home, "keys", "client.nk"), data2, 0o600))
	require.NoError(t, os.MkdirAll(filepath.Join(home, ".config", "nats", "context"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(home, ".config", "nats", "context", "athome.json"), []byte(`{"url": "nats://athome:4222"}`), 0o600))

	for _, tc := range []struct {
		name     string
		settings natsconn.Settings
		env      map[string]string
		url      string
		cred     string // a substring of Plan.Credential
		err      string
	}{
		{name: "nothing: the default URL and the admin key of ./.turnlog", settings: natsconn.Settings{}, env: map[string]string{},
			url: natsconn.DefaultURL, cred: "none"},
		{name: "TURNLOG_DATA's admin key", env: map[string]string{"TURNLOG_DATA": data},
			url: natsconn.DefaultURL, cred: admin},
		{name: "--data wins over TURNLOG_DATA", settings: natsconn.Settings{DataDir: data}, env: map[string]string{"TURNLOG_DATA": other},
			cred: admin},
		{name: "a worker takes the worker key", settings: natsconn.Settings{DataDir: data, Role: natsauth.Worker},
			cred: worker},
		{name: "NATS_URL as the NATS tools read it", env: map[string]string{"NATS_URL": "nats://elsewhere:4222"},
			url: "nats://elsewhere:4222"},
		{name: "TURNLOG_NATS_URL wins over NATS_URL", env: map[string]string{"NATS_URL": "nats://theirs:4222", "TURNLOG_NATS_URL": "nats://ours:4222"},
			url: "nats://ours:4222"},
		{name: "--nats-url wins over both", settings: natsconn.Settings{URL: "nats://flag:4222"}, env: map[string]string{"NATS_URL": "nats://theirs:4222", "TURNLOG_NATS_URL": "nats://ours:4222"},
			url: "nats://flag:4222"},
		{name: "NATS_CREDS names a key instead of the data directory's", env: map[string]string{"NATS_CREDS": client, "TURNLOG_DATA": data},
			cred: client + " (from NATS_* variables)"},
		{name: "TURNLOG_NATS_CREDS wins over NATS_CREDS", env: map[string]string{"NATS_CREDS": otherClient, "TURNLOG_NATS_CREDS": client},
			cred: client + " (from TURNLOG_NATS_* variables)"},
		{name: "--creds wins over the variables", settings: natsconn.Settings{Creds: worker}, env: map[string]string{"NATS_CREDS": client},
			cred: worker + " (from the command line)"},
		{name: "--nkey as nats --nkey", settings: natsconn.Settings{NKey: client},
			cred: client},
		{name: "a context gives URL and credential", settings: natsconn.Settings{Context: "prod"}, env: map[string]string{"XDG_CONFIG_HOME": cfg, "TURNLOG_DATA": data},
			url: "nats://prod:4222", cred: otherClient + " (from nats context prod)"},
		{name: "NATS_CONTEXT names the context", env: map[string]string{"XDG_CONFIG_HOME": cfg, "NATS_CONTEXT": "prod"},
			url: "nats://prod:4222", cred: otherClient},
		{name: "NATS_URL wins over the context's URL, as in the nats CLI", settings: natsconn.Settings{Context: "prod"}, env: map[string]string{"XDG_CONFIG_HOME": cfg, "NATS_URL": "nats://env:4222"},
			url: "nats://env:4222", cred: otherClient},
		{name: "--creds wins over the context's key", settings: natsconn.Settings{Context: "prod", Creds: client}, env: map[string]string{"XDG_CONFIG_HOME": cfg},
			url: "nats://prod:4222", cred: client + " (from the command line)"},
		{name: "~ in a context's path", settings: natsconn.Settings{Context: "home"}, env: map[string]string{"XDG_CONFIG_HOME": cfg, "HOME": home},
			cred: filepath.Join(home, "keys", "client.nk")},
		{name: "contexts live under ~/.config without XDG_CONFIG_HOME", settings: natsconn.Settings{Context: "athome"}, env: map[string]string{"HOME": home},
			url: "nats://athome:4222"},
		{name: "an unknown context", settings: natsconn.Settings{Context: "nope"}, env: map[string]string{"XDG_CONFIG_HOME": cfg},
			err: "nats context add nope"},
		{name: "a context name cannot leave the directory", settings: natsconn.Settings{Context: "../prod"}, env: map[string]string{"XDG_CONFIG_HOME": cfg},
			err: "context name"},
		{name: "a JetStream domain is refused, not ignored", settings: natsconn.Settings{Context: "domain"}, env: map[string]string{"XDG_CONFIG_HOME": cfg},
			err: "JetStream domain"},
		{name: "a secret store reference is refused", settings: natsconn.Settings{Context: "vault"}, env: map[string]string{"XDG_CONFIG_HOME": cfg},
			err: "op:// secret reference"},
		{name: "a file that is no key", settings: natsconn.Settings{Creds: filepath.Join(cfg, "nats", "context", "prod.json")},
			err: "neither a .creds file nor an nkey seed"},
		{name: "a missing key file", settings: natsconn.Settings{Creds: filepath.Join(cfg, "missing.nk")},
			err: "no such file"},
		{name: "a TLS certificate without its key", settings: natsconn.Settings{TLSCert: "cert.pem"},
			err: "both its certificate and its key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.settings
			s.Getenv = env(tc.env)
			p, err := s.Resolve()
			if tc.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.err)
				return
			}
			require.NoError(t, err)
			if tc.url != "" {
				assert.Equal(t, tc.url, p.URL)
			}
			if tc.cred != "" {
				assert.True(t, strings.Contains(p.Credential, tc.cred), "credential %q, want it to name %q", p.Credential, tc.cred)
			}
		})
	}
}

func TestSeedFromTheEnvironment(t *testing.T) {
	data := keys(t)
	seed, err := os.ReadFile(natsauth.KeyFile(natsauth.Dir(data), natsauth.Worker))
	require.NoError(t, err)
	p, err := natsconn.Settings{Getenv: env(map[string]string{natsconn.EnvSeed: string(seed)})}.Resolve()
	require.NoError(t, err)
	assert.Equal(t, "the nkey seed in "+natsconn.EnvSeed, p.Credential)

	_, err = natsconn.Settings{Getenv: env(map[string]string{natsconn.EnvSeed: "SUnotaseed"})}.Resolve()
	assert.Error(t, err)
}

// TestResolveServed: the address of the serve running on the data
// directory comes after every URL the user names and before the default;
// the credential still comes from that directory's key.
func TestResolveServed(t *testing.T) {
	data := keys(t)
	var asked []string
	served := func(dir string) string { asked = append(asked, dir); return "nats://127.0.0.1:21422" }
	p, err := natsconn.Settings{DataDir: data, Served: served, Getenv: env(nil)}.Resolve()
	require.NoError(t, err)
	assert.Equal(t, "nats://127.0.0.1:21422", p.URL)
	assert.Equal(t, []string{data}, asked)
	assert.Contains(t, p.Credential, natsauth.KeyFile(natsauth.Dir(data), natsauth.Admin))
	assert.Contains(t, p.Explain(os.ErrDeadlineExceeded).Error(), "turnlog.lock")

	p, err = natsconn.Settings{DataDir: data, Served: served, Getenv: env(map[string]string{"NATS_URL": "nats://named:4222"})}.Resolve()
	require.NoError(t, err)
	assert.Equal(t, "nats://named:4222", p.URL, "a named URL wins")
	p, err = natsconn.Settings{URL: "nats://flag:4222", DataDir: data, Served: served, Getenv: env(nil)}.Resolve()
	require.NoError(t, err)
	assert.Equal(t, "nats://flag:4222", p.URL, "the flag wins")

	p, err = natsconn.Settings{DataDir: data, Served: func(string) string { return "" }, Getenv: env(nil)}.Resolve()
	require.NoError(t, err)
	assert.Equal(t, natsconn.DefaultURL, p.URL, "no serve running: the default")
	assert.NotContains(t, p.Explain(os.ErrDeadlineExceeded).Error(), "turnlog.lock")
}
