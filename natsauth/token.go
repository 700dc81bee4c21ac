package natsauth

// This file holds the HTTP API's token, which lives beside the NATS keys
// in <data>/auth/ and is guarded the same way: whoever reads it may do
// through HTTP what the admin key allows through NATS.

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// TokenFileName is the file of the key directory that holds the HTTP
// API's bearer token: the token alone on one line, so that
// "Authorization: Bearer $(cat <data>/auth/http.token)" works in a shell.
const TokenFileName = "http.token"

// TokenFile is where the HTTP API's token lives in the key directory dir.
func TokenFile(dir string) string { return filepath.Join(dir, TokenFileName) }

// tokenBytes is the entropy of a token EnsureToken makes: 256 bits.
const tokenBytes = 32

// EnsureToken returns the HTTP API's token from dir's token file, and
// created true when it made the file: 256 random bits, base64url, in a
// file of mode 0600 in dir (created with mode 0700). A token the operator
// wrote there is used as it is. As with the keys (see Ensure), a
// directory or token file that other users may read is refused, not
// repaired, and so is an empty file or one whose token holds white space.
func EnsureToken(dir string) (token string, created bool, err error) {
	return httpToken.ensure(dir, TokenFile(dir))
}

// ReadToken reads a token file: its first line that is neither empty nor a
// comment (#). A file that other users may read is refused.
func ReadToken(path string) (string, error) { return httpToken.read(path) }

// MetricsTokenFileName is the file of a key directory that holds the token
// the workers' --metrics listeners require (worker --metrics-token-file,
// or TURNLOG_METRICS_TOKEN in worker.env: turnlog auth init --worker-env
// makes it) and a Prometheus scrape sends (authorization:
// credentials_file). It is apart from the HTTP API's token: whoever
// scrapes the workers may read their series, nothing more.
const MetricsTokenFileName = "metrics.token"

// MetricsTokenFile is where the workers' metrics token lives in the key
// directory dir.
func MetricsTokenFile(dir string) string { return filepath.Join(dir, MetricsTokenFileName) }

// EnsureMetricsToken is EnsureToken for the workers' metrics token
// (MetricsTokenFile): made when missing, kept when present, refused when
// other users may read it.
func EnsureMetricsToken(dir string) (token string, created bool, err error) {
	return metricsToken.ensure(dir, MetricsTokenFile(dir))
}

// ReadMetricsToken reads a file that holds the token of a worker's
// --metrics listener (worker --metrics-token-file) as ReadToken reads the
// HTTP API's: the first line that is neither empty nor a comment, from a
// file that other users may not read.
func ReadMetricsToken(path string) (string, error) { return metricsToken.read(path) }

// tokenKind is what a token file holds, for its errors.
type tokenKind struct {
	// what the token is, as an error names it.
	what string
	// renew says how to replace a token that may have leaked; remake,
	// how to get a file that holds a token.
	renew, remake string
}

var (
	httpToken = tokenKind{what: "the HTTP API's token",
		renew:  "make a new token if it was exposed (delete " + TokenFileName + "; the next start makes a new one)",
		remake: "or delete the file and the next start makes a new one"}
	// Nothing makes a worker's token file but auth init --worker-env,
	// into the directory it is given.
	metricsToken = tokenKind{what: "the metrics token",
		renew:  "make a new token if it was exposed (write a new one there, and give it to the scrapers)",
		remake: "as turnlog auth init --worker-env does in " + MetricsTokenFileName}
)

func (k tokenKind) ensure(dir, path string) (token string, created bool, err error) {
	if err := keyDirHolding(dir, k.what+" and NATS credentials", k.renew); err != nil {
		return "", false, err
	}
	token, err = k.read(path)
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		return token, false, err
	}
	token, err = k.write(path)
	if errors.Is(err, fs.ErrExist) {
		// Another process made it first: use theirs.
		token, err = k.read(path)
		return token, false, err
	}
	return token, err == nil, err
}

func (k tokenKind) read(path string) (string, error) {
	if _, err := os.Stat(path); err != nil {
		return "", fmt.Errorf("read %s: %w", k.what, err)
	}
	if err := private(path, 0o600, k.what, k.renew); err != nil {
		return "", err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("read %s: %w", k.what, err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if strings.ContainsAny(line, " \t") {
			return "", fmt.Errorf("%s: the token holds white space; write the token alone on its line, %s", path, k.remake)
		}
		return line, nil
	}
	return "", fmt.Errorf("%s holds no token; write one on its own line, %s", path, k.remake)
}

// write makes a new token and writes it to path, which must not exist
// (fs.ErrExist otherwise).
func (k tokenKind) write(path string) (string, error) {
	b := make([]byte, tokenBytes)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("make %s: %w", k.what, err)
	}
	token := base64.RawURLEncoding.EncodeToString(b)
	if err := writeSecret(path, []byte(token+"\n")); err != nil {
		return "", fmt.Errorf("write %s: %w", k.what, err)
	}
	return token, nil
}
