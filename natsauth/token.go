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
	if err := keyDirHolding(dir, "the HTTP API's token and NATS credentials", "make a new token if it was exposed (delete "+TokenFileName+"; the next start makes a new one)"); err != nil {
		return "", false, err
	}
	path := TokenFile(dir)
	token, err = ReadToken(path)
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		return token, false, err
	}
	token, err = writeToken(path)
	if errors.Is(err, fs.ErrExist) {
		// Another server made it first: use theirs.
		token, err = ReadToken(path)
		return token, false, err
	}
	return token, err == nil, err
}

// ReadToken reads a token file: its first line that is neither empty nor a
// comment (#). A file that other users may read is refused.
func ReadToken(path string) (string, error) {
	if _, err := os.Stat(path); err != nil {
		return "", fmt.Errorf("read the HTTP API token: %w", err)
	}
	if err := private(path, 0o600, "the HTTP API's token", "make a new token if it was exposed (delete it; the next start makes a new one)"); err != nil {
		return "", err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("read the HTTP API token: %w", err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if strings.ContainsAny(line, " \t") {
			return "", fmt.Errorf("%s: the token holds white space; write the token alone on its line, or delete the file and the next start makes a new one", path)
		}
		return line, nil
	}
	return "", fmt.Errorf("%s holds no token; write one on its own line, or delete the file and the next start makes a new one", path)
}

// writeToken makes a new token and writes it to path, which must not
// exist (fs.ErrExist otherwise).
func writeToken(path string) (string, error) {
	b := make([]byte, tokenBytes)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("make the HTTP API token: %w", err)
	}
	token := base64.RawURLEncoding.EncodeToString(b)
	if err := writeSecret(path, []byte(token+"\n")); err != nil {
		return "", fmt.Errorf("write the HTTP API token: %w", err)
	}
	return token, nil
}
