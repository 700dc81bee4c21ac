package gateway

import (
	"bytes"
	"io"
	"net/http"
	"strings"
)

// maskedBody is the body of an answer on its way to the app and to the
// record. The credentials the call sent upstream (the managed provider
// key, which the app never holds; in pass-through the app's own) do not
// come back in it: an upstream that echoes one ("Incorrect API key
// provided: sk-...", as some OpenAI-compatible servers answer) would hand
// turnlog's key to the app, and store any key in the log. Every occurrence
// of a key, and every piece of one at least half its length that begins
// it (an echo cut short), is overwritten with as many bytes, so the answer
// keeps its length (its Content-Length holds) and everything else in it
// passes as it came. Bytes pass on as they arrive, but a read's tail that
// could begin a key, held until the next read shows whether it does: a
// stream's events, which end in blank lines, are not held.
//
// It stops an echo, not an upstream bent on leaking: a key escaped,
// encoded or cut into pieces across a stream's events passes. An
// upstream you do not trust holds the key anyway.
type maskedBody struct {
	body io.ReadCloser
	keys [][]byte
	// buf[:ready] is ready, from off; buf[ready:end] is held.
	buf             []byte
	off, ready, end int
	err             error // the body's, once what is held has gone
}

// maskKeys wraps body so that none of keys passes; with no key (none
// long enough to be one: see minSecretLen) body is left as it is.
func maskKeys(body io.ReadCloser, keys []string) io.ReadCloser {
	m := &maskedBody{body: body}
	for _, k := range keys {
		if len(k) >= minSecretLen {
			m.keys = append(m.keys, []byte(k))
		}
	}
	if len(m.keys) == 0 {
		return body
	}
	return m
}

// maskHeaders overwrites the keys in an answer's header values, as
// maskedBody does in its body.
func maskHeaders(h http.Header, keys []string) {
	for name, vs := range h {
		for i, v := range vs {
			for _, k := range keys {
				if len(k) >= minSecretLen && strings.Contains(v, k) {
					v = strings.ReplaceAll(v, k, string(maskOf(len(k))))
				}
			}
			h[name][i] = v
		}
	}
}

// Read implements io.Reader.
func (m *maskedBody) Read(p []byte) (int, error) {
	for m.off == m.ready {
		if m.err != nil {
			return 0, m.err
		}
		m.fill()
	}
	n := copy(p, m.buf[m.off:m.ready])
	m.off += n
	return n, nil
}

// fill reads the next piece of the body behind what is held and masks it.
func (m *maskedBody) fill() {
	m.end = copy(m.buf, m.buf[m.ready:m.end])
	m.off, m.ready = 0, 0
	if free := cap(m.buf) - m.end; free < 4096 {
		m.buf = append(m.buf[:m.end], make([]byte, 4096+m.longest())...)
	}
	m.buf = m.buf[:cap(m.buf)]
	n, err := m.body.Read(m.buf[m.end:])
	m.end += n
	last := err != nil
	for _, k := range m.keys {
		mask(m.buf[:m.end], k, last)
	}
	m.ready = m.end
	if last {
		m.err = err
		return
	}
	held := 0
	for _, k := range m.keys {
		held = max(held, heldTail(m.buf[:m.end], k))
	}
	m.ready -= held
}

func (m *maskedBody) longest() int {
	n := 0
	for _, k := range m.keys {
		n = max(n, len(k))
	}
	return n
}

// mask overwrites in b the key and every piece of it that begins it and
// is at least half its length. A piece that runs to b's end is masked only
// at the body's last read (last): before, it may yet be the whole key.
func mask(b, key []byte, last bool) {
	least := max(minSecretLen, (len(key)+1)/2)
	for i := 0; i+least <= len(b); {
		j := bytes.Index(b[i:], key[:least])
		if j < 0 {
			return
		}
		at := i + j
		n := least
		for n < len(key) && at+n < len(b) && b[at+n] == key[n] {
			n++
		}
		if n == len(key) || at+n < len(b) || last {
			copy(b[at:at+n], maskOf(n))
		}
		i = at + n
	}
}

// heldTail is the length of b's longest tail that is the beginning of key
// (and not all of it): bytes that may be the key's first, not yet passed on.
func heldTail(b, key []byte) int {
	for i := max(0, len(b)-(len(key)-1)); i < len(b); i++ {
		if b[i] == key[0] && bytes.HasPrefix(key, b[i:]) {
			return len(b) - i
		}
	}
	return 0
}

// maskOf is what stands for n bytes of a key: the record's words where
// they fit, stars where they do not.
func maskOf(n int) []byte {
	if n >= len(redacted) {
		return []byte(redacted + strings.Repeat("*", n-len(redacted)))
	}
	return []byte(strings.Repeat("*", n))
}

// Close implements io.Closer.
func (m *maskedBody) Close() error { return m.body.Close() }
