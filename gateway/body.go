package gateway

// A recorded call's request body: read whole (the gateway forwards and
// records the same bytes), and the proxies' copy buffers, pooled.

import (
	"io"
	"net/http"
	"sync"
)

// readBody reads up to limit+1 bytes of the request's body, into a buffer
// of its declared length when it declares one within the limit (net/http
// then stops the body there); read by io.ReadAll, a 12 KB body would be
// copied through a dozen growing buffers.
func readBody(r *http.Request, limit int64) ([]byte, error) {
	if r.ContentLength <= 0 || r.ContentLength > limit {
		return io.ReadAll(io.LimitReader(r.Body, limit+1))
	}
	buf := make([]byte, r.ContentLength)
	if _, err := io.ReadFull(r.Body, buf); err != nil {
		return nil, err
	}
	return buf, nil
}

// bufferPool lends the proxies their copy buffers, which ReverseProxy
// would otherwise allocate (32 KB) for every response.
type bufferPool struct{ p sync.Pool }

func (b *bufferPool) Get() []byte {
	if v, ok := b.p.Get().(*[]byte); ok {
		return *v
	}
	return make([]byte, 32<<10)
}

func (b *bufferPool) Put(buf []byte) { b.p.Put(&buf) }

var copyBuffers = &bufferPool{}
