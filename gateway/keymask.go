package gateway

import (
	"bytes"
	"io"
	"strings"
)

// maskedBody is the body of an answer on its way to an app that called
// with a managed key. The app holds turnlog's token only; the provider key
// is turnlog's, and an upstream that echoes it ("Incorrect API key
// provided: sk-...", as some OpenAI-compatible servers answer) would hand
// it to the app. Every occurrence of the key, and every piece of it at
// least half its length (an echo cut short), is overwritten with as many
// bytes, so the answer keeps its length (its Content-Length holds) and
// everything else in it passes as it came. Bytes pass on as they arrive,
// but a read's tail that could begin the key, held until the next read
// shows whether it does: a stream's events, which end in blank lines,
// are not held.
type maskedBody struct {
	body io.ReadCloser
	key  []byte
	// buf[:ready] is ready for the app, from off; buf[ready:end] is held.
	buf             []byte
	off, ready, end int
	err             error // the body's, once what is held has gone
}

// managedKeyOf is the context key of the managed provider key a call went
// upstream with.
type managedKeyOf struct{}

// maskKey wraps body so that key never reaches the app; an empty key (a
// pass-through call: the app sent its own) leaves body as it is.
func maskKey(body io.ReadCloser, key string) io.ReadCloser {
	if len(key) < minSecretLen {
		return body
	}
	return &maskedBody{body: body, key: []byte(key)}
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
		m.buf = append(m.buf[:m.end], make([]byte, 4096+len(m.key))...)
	}
	m.buf = m.buf[:cap(m.buf)]
	n, err := m.body.Read(m.buf[m.end:])
	m.end += n
	last := err != nil
	m.mask(m.buf[:m.end], last)
	m.ready = m.end
	if !last {
		m.ready -= heldTail(m.buf[:m.end], m.key)
	} else {
		m.err = err
	}
}

// mask overwrites in b the key and every piece of it that begins it and
// is at least half its length. A piece that runs to b's end is masked only
// at the body's last read (last): before, it may yet be the whole key.
func (m *maskedBody) mask(b []byte, last bool) {
	least := max(minSecretLen, (len(m.key)+1)/2)
	for i := 0; i+least <= len(b); {
		j := bytes.Index(b[i:], m.key[:least])
		if j < 0 {
			return
		}
		at := i + j
		n := least
		for n < len(m.key) && at+n < len(b) && b[at+n] == m.key[n] {
			n++
		}
		if n == len(m.key) || at+n < len(b) || last {
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
