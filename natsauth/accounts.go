package natsauth

// This file holds the NATS accounts a server with turnlog's roles has:
// turnlog's own, with JetStream, and the client role's, without it.
//
// Why two: nats-server checks the subject a user publishes to, never the
// reply subject it names, and publishes the answer there. In one account a
// holder of the read-only client key could name any subject of a stream as
// the reply of a request it may send (a stream info, a direct get, a chat
// request) and have the server store the answer there: a direct get's copy
// of a purged key's marker keeps its Nats-Rollup header and, stored under a
// key of the threading index, deleted the key's values. In an account of
// its own the client reaches turnlog's only through imports: a request it
// sends on an imported service is delivered in turnlog's account with a
// reply subject the server makes up (_R_.…), and the answer is delivered
// back in the client's account on the reply it named, where no stream
// stores anything.

import (
	"strings"
	"time"

	"github.com/turnlog/turnlog/eventlog"
)

// The accounts of a server with turnlog's roles.
const (
	// Account is turnlog's account: JetStream is enabled in it and every
	// stream and bucket lives there, with the admin and worker users. It
	// exports to ClientsAccount what the client role may ask and hear.
	Account = "TURNLOG"
	// ClientsAccount is the client role's account: no JetStream, so no
	// reply subject a client names can be stored. It imports from Account
	// the services and streams of the client's grants.
	ClientsAccount = "TURNLOG_CLIENTS"
)

// AccountOf is the account role r's user is in: the client's alone, every
// other role's in turnlog's, where the streams are. What a check of a
// server's configuration expects of each user (deploy's tests).
func AccountOf(r Role) string {
	if r == Client {
		return ClientsAccount
	}
	return Account
}

// Import is one subject that joins ClientsAccount to Account, made of one
// of the client role's grants: a publish grant is a service ClientsAccount
// imports (a request answered in turnlog's account, or a message stored
// there, such as a chat request), a subscribe grant a stream it imports
// (messages published in turnlog's account that the client hears), and the
// status ping, which nothing answers on its reply subject, a stream
// Account imports from ClientsAccount (FromClients).
type Import struct {
	Grant
	// Service is true for a service import, false for a stream import.
	Service bool
	// FromClients is true for a stream Account imports from
	// ClientsAccount: what a client publishes that turnlog's account
	// hears, with no answer awaited. nats-server keeps an entry for every
	// request sent on an imported service until it is answered or the
	// export's response threshold passes; the status ping is answered on
	// a subject of the workers' own, never on its reply, so as a service
	// each ping a client sent with a reply stayed in the server's memory
	// (found by the security probe: 500,000 pings took a server from
	// 58 MB to 770 MB). A stream import tracks nothing, and the reply
	// subject the client names comes along unchanged, in turnlog's
	// account, where no role answers it (workers have no
	// allow_responses).
	FromClients bool
	// Streamed is true for a service answered with several messages (a
	// batched direct get answers a message per match and an end of batch).
	// nats-server forgets the way back of a singleton service's request
	// after its first answer; a streamed one's lives until the export's
	// response threshold (2 minutes) passes without an answer, so only
	// the services that need it are streamed.
	Streamed bool
}

// kind is the import's word in a server's configuration.
func (im Import) kind() string {
	if im.Service {
		return "service"
	}
	return "stream"
}

// ImportsFor returns what joins ClientsAccount to Account for the
// installation named by n: every publish grant of the client role as a
// service ClientsAccount imports, but the status ping, which Account
// imports as a stream (FromClients), and every subscribe grant as a stream
// ClientsAccount imports, except the client's own inbox, which is the
// client's account's own (the answers of services come back to it there).
// Deriving them from the grants keeps the two in step: a subject granted
// to the client but not imported would reach no one.
func ImportsFor(n eventlog.Names) []Import {
	s := SpecFor(Client, n)
	inbox := InboxPrefix(Client) + ".>"
	// Not a grant: nats-server answers every $JS.API request of an account
	// without JetStream itself ("JetStream not enabled for account"),
	// beside the imported services and before them, unless the account
	// imports $JS.API.INFO from another (jetstream.go,
	// enableJetStreamInfoServiceImportOnly). The client may not send it.
	out := []Import{{Grant: Grant{jsAccountInfo, "none: it keeps the server from answering the client's JetStream requests as an account without JetStream; the client may not send it (no publish grant)"}, Service: true}}
	for _, g := range s.Publish {
		if g.Subject == n.WorkersPing() {
			out = append(out, Import{Grant: g, FromClients: true})
			continue
		}
		out = append(out, Import{Grant: g, Service: true, Streamed: batched(g.Subject)})
	}
	for _, g := range s.Subscribe {
		if g.Subject == inbox {
			continue
		}
		out = append(out, Import{Grant: g})
	}
	return out
}

// responseThreshold is how long nats-server keeps the way back of a
// client's request on a service Account exports: until the answer, or
// until this passes without one (a batched direct get's, streamed, until
// it passes whatever happens). Each entry holds about 1.3 KB, so the
// default, 2 minutes, let a client key grow a server's memory by its
// request rate times 2 minutes (the security probe: 2.35 GB from four
// connections); now by its rate times this (the server sweeps once per
// threshold, so an entry lives between one and two of them).
//
// Why 10 s: nats.go and its jetstream package give up on a request after
// 5 s (their default timeout, which turnlog keeps), and the entry is made
// when the server receives the request, after the requester started
// waiting, so no answer a requester still waits for by default is lost.
// The other 5 s leave room for a cluster under load: a chat request's
// PubAck waits for a quorum of the stream's replicas, a leader's message
// get or a direct get for a busy store, and a caller with a longer
// deadline than the default still gets an answer that is only late. An
// answer later than that is dropped: the requester times out as it would
// have at 5 s (a chat request may be sent again under the same request ID,
// which JetStream deduplicates).
const responseThreshold = 10 * time.Second

// jsAccountInfo is JetStream's account info request.
const jsAccountInfo = "$JS.API.INFO"

// batched reports whether subject is the API of a stream's batched direct
// get ($JS.API.DIRECT.GET.<stream>, the request in the body), whose answer
// is several messages. A direct get with the subject in it
// ($JS.API.DIRECT.GET.<stream>.<subject>) answers one.
func batched(subject string) bool {
	const api = "$JS.API.DIRECT.GET."
	rest, ok := strings.CutPrefix(subject, api)
	return ok && rest != "" && !strings.ContainsAny(rest, ".*>")
}
