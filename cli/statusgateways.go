package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/turnlog/turnlog/eventlog"
)

// gatewayRow is a recording gateway as status shows it: what it said of
// itself, and whether it said so lately.
type gatewayRow struct {
	eventlog.GatewayPresence
	Running bool `json:"running"`
}

// gatewayRows reads the running gateways, and says why there are none to
// list when the credential may not read them, none ever ran or the list
// cannot be read (note: the rest of status is shown all the same).
func gatewayRows(ctx context.Context, l *eventlog.Log, buckets []bucketStatus) (rows []gatewayRow, note string) {
	for _, b := range buckets {
		if b.Name != l.Names().GatewaysBucket {
			continue
		}
		switch {
		case b.NotVisible:
			return nil, "(the list of running gateways is not visible to this credential)"
		case b.Unavailable != "":
			return nil, "(the list of running gateways cannot be read: " + b.Unavailable + ")"
		case !b.Created:
			return []gatewayRow{}, "(no recording gateway has run)"
		}
	}
	ps, err := l.ListGateways(ctx)
	if err != nil {
		return nil, "(the list of running gateways cannot be read: " + err.Error() + ")"
	}
	now := time.Now()
	rows = []gatewayRow{}
	for _, p := range ps {
		rows = append(rows, gatewayRow{GatewayPresence: p, Running: p.Running(now)})
	}
	if len(rows) == 0 {
		note = "(no recording gateway runs)"
	}
	return rows, note
}

// printGateways writes the gateways' table, or note when there is none.
func printGateways(w io.Writer, rows []gatewayRow, note string) {
	fmt.Fprintln(w, "\nGATEWAY\tLISTEN\tHOST\tSTARTED\tSEEN\tKEYS\tRECORD OPTIONAL")
	for _, g := range rows {
		seen := "running"
		if !g.Running {
			seen = "not seen since " + g.Seen.Format(time.RFC3339)
		}
		keys := "pass-through"
		if len(g.Managed) > 0 {
			keys = "managed: " + strings.Join(g.Managed, ", ")
		}
		// What a gateway wrote of itself is shown without control
		// characters: another client with the bucket's grants could
		// write an entry.
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%v\n", g.Instance, orDash(oneLine(g.Listen, 80)), orDash(oneLine(fmt.Sprintf("%s pid %d", g.Host, g.PID), 80)),
			g.Started.Format(time.RFC3339), seen, keys, g.RecordOptional)
	}
	if note != "" {
		fmt.Fprintln(w, note)
	}
}
