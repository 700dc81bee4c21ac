package templates_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/internal/natstest"
	"github.com/turnlog/turnlog/natsauth"
	"github.com/turnlog/turnlog/templates"
)

// TestTheTemplateResolvesPastAStoredCopy: a worker key's direct get, with
// the global template's key as its reply subject, had a copy stored there,
// which the templates refuse (ErrUnmarked): every new conversation's
// request failed until an admin set the template again (security probe,
// F4a). The newest value before the copies is used instead: the template
// set, or the default after a reset.
func TestTheTemplateResolvesPastAStoredCopy(t *testing.T) {
	for _, tc := range []struct {
		name    string
		reset   bool
		copies  int
		want    string
		isDflt  bool
		failing bool
	}{
		{name: "a value, one copy", copies: 1, want: "You are kind."},
		{name: "a value, three copies", copies: 3, want: "You are kind."},
		{name: "a reset, one copy", reset: true, copies: 1, isDflt: true},
		{name: "more copies than the key's history keeps", copies: 16, failing: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			srv := natstest.Start(t, natstest.WithAuth())
			l, err := eventlog.Open(ctx, srv.Conn)
			require.NoError(t, err)
			s := templates.New(l)
			_, err = s.SetGlobal(ctx, "You are kind.")
			require.NoError(t, err)
			if tc.reset {
				require.NoError(t, s.ResetGlobal(ctx))
			}

			wc := srv.ConnectAs(t, natsauth.Worker)
			subj := "$KV." + l.Names().TemplatesBucket + "." + templates.GlobalKey
			for range tc.copies {
				require.NoError(t, wc.PublishRequest("$JS.API.DIRECT.GET.KV_"+l.Names().TemplatesBucket+"."+subj, subj, nil))
			}
			require.NoError(t, wc.Flush())
			require.Eventually(t, func() bool {
				info, err := l.JetStream().Stream(ctx, "KV_"+l.Names().TemplatesBucket)
				require.NoError(t, err)
				return info.CachedInfo().State.LastSeq >= uint64(1+tc.copies+map[bool]int{true: 1}[tc.reset])
			}, 10*time.Second, 10*time.Millisecond, "the copies are stored (else the case proves nothing)")

			wl, err := eventlog.Open(ctx, wc, eventlog.WithWriterRole(string(natsauth.Worker)))
			require.NoError(t, err)
			g, err := templates.New(wl).Global(ctx) // as a worker reads it
			if tc.failing {
				require.ErrorIs(t, err, templates.ErrUnmarked, "no value is left: refused, not the copy rendered")
				assert.Contains(t, err.Error(), "template set")
				return
			}
			require.NoError(t, err, "the template still resolves")
			assert.Equal(t, tc.isDflt, g.Default)
			if !tc.isDflt {
				assert.Equal(t, tc.want, g.Text)
			}
		})
	}
}
