package natstest

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
)

// StoredBytes is every byte the named streams hold, each message's data
// and headers, for a test to search for what must not be stored there (a
// provider key, an erased conversation's text).
func StoredBytes(t *testing.T, js jetstream.JetStream, streams ...string) []byte {
	t.Helper()
	ctx := context.Background()
	var all bytes.Buffer
	for _, name := range streams {
		s, err := js.Stream(ctx, name)
		require.NoError(t, err)
		info, err := s.Info(ctx)
		require.NoError(t, err)
		for seq := info.State.FirstSeq; seq <= info.State.LastSeq && seq > 0; seq++ {
			m, err := s.GetMsg(ctx, seq)
			if err != nil {
				continue // deleted
			}
			all.Write(m.Data)
			for k, v := range m.Header {
				fmt.Fprint(&all, k, v)
			}
		}
	}
	return all.Bytes()
}
