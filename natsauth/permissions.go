package natsauth

import (
	"github.com/nats-io/nats-server/v2/server"
	"github.com/turnlog/turnlog/eventlog"
)

// Grant is one subject a role may publish or subscribe to, with the reason
// it needs it: the reasons are what `turnlog auth conf` prints beside each
// subject, so an operator can review the configuration line by line.
type Grant struct {
	Subject string
	Why     string
}

// Spec is what one role may do: the subjects it may publish to and
// subscribe to, and whether it may answer requests it received (workers
// answer the status ping) without a right to publish to inboxes at large.
type Spec struct {
	Role      Role
	Publish   []Grant
	Subscribe []Grant
	Responses bool
}

// SpecFor returns role r's permissions for the installation named by n.
// Everything not listed is refused by the server. A role that may not
// publish to _INBOX.> cannot forge another client's replies (a JetStream
// acknowledgement, a direct get): replies come only from the server, or, for
// a worker, to the requests it was sent.
func SpecFor(r Role, n eventlog.Names) Spec {
	s := Spec{Role: r}
	if r == Admin {
		s.Publish = []Grant{{">", "everything: provisioning, templates, import, fork, erase, repair"}}
		s.Subscribe = []Grant{{">", "everything"}}
		return s
	}
	evs := n.EventStreams()
	rq := n.RequestsStream
	snapKV := "KV_" + n.SnapshotsBucket
	snapObj := "OBJ_" + n.SnapshotObjectsBucket
	tplKV := "KV_" + n.TemplatesBucket
	dead := n.DeadLettersStream
	ridKV := "KV_" + n.RequestIDsBucket
	histKV := "KV_" + n.HistoryBucket
	api := func(op, stream string) string { return "$JS.API." + op + "." + stream }
	pub := func(subject, why string) { s.Publish = append(s.Publish, Grant{subject, why}) }
	sub := func(subject, why string) { s.Subscribe = append(s.Subscribe, Grant{subject, why}) }

	// Opening the log looks up its streams and buckets. Whether the events
	// are sharded is found by looking for the unsharded stream, then for
	// the first shard's, whichever the installation has.
	first := n.WithEventShards(2).EventsShardStream(0)
	if n.Shards() == 1 {
		pub(api("STREAM.INFO", first), "open the log: find out the events are not sharded ("+first+" does not exist)")
	} else {
		pub(api("STREAM.INFO", n.EventsStream), "open the log: find out the events are sharded ("+n.EventsStream+" does not exist)")
		pub(api("DIRECT.GET", n.EventsStream)+".>", "find out the events are sharded without a lookup (chat)")
	}
	for _, st := range append(append([]string{}, evs...), rq, snapKV, snapObj, tplKV, dead, ridKV, histKV) {
		pub(api("STREAM.INFO", st), "open the log: look up "+st)
	}
	// Dead letters: status counts and lists them (the stream has
	// AllowDirect); a worker's metrics count them.
	pub(api("DIRECT.GET", dead), "status: list dead letters (batched direct get)")
	// Reading a conversation: direct gets by sequence and by subject (the
	// stream has AllowDirect), and the message get the stream's leader
	// alone answers: where a whole read must end and begin on a cluster,
	// whose replicas may lag (eventlog's leaderread.go), and every read of
	// a stream without direct gets.
	for _, ev := range evs {
		pub(api("DIRECT.GET", ev), "read events (batched direct get)")
		pub(api("DIRECT.GET", ev)+".>", "read a conversation's last message")
		pub(api("STREAM.MSG.GET", ev), "read a conversation's first and last message from the stream leader (a replica may lag), and events from a stream without direct gets")
	}
	// Snapshots: a large one is an object, read through an ordered push
	// consumer with flow control.
	pub(api("DIRECT.GET", snapKV)+".>", "read snapshots")
	pub(api("STREAM.MSG.GET", snapKV), "read snapshots from a bucket without direct gets")
	pub(api("DIRECT.GET", snapObj)+".>", "read a large snapshot's description")
	pub(api("STREAM.MSG.GET", snapObj), "read a large snapshot's description without direct gets")
	pub(api("DIRECT.GET", snapObj), "read a large snapshot's chunks (batched direct get: no consumer)")
	// History caches: reads of whole histories start from them.
	pub(api("DIRECT.GET", histKV)+".>", "read history caches")
	pub(api("STREAM.MSG.GET", histKV), "read history caches from a bucket without direct gets")
	// Templates: workers render them, clients show them.
	pub(api("DIRECT.GET", tplKV)+".>", "read system prompt templates")
	pub(api("STREAM.MSG.GET", tplKV), "read templates from a bucket without direct gets")
	// No role but the admin creates a consumer on a stream another role
	// writes: nats-server cannot tell, from the subject, a durable
	// consumer from an ephemeral one or a pull consumer from a push one
	// whose deliver subject is any subject of the account (the server
	// itself then writes there, whatever the creator's permissions). So
	// reads use direct gets, and a live view waits for the notice of a
	// stored step (see eventlog.Log.Watch).
	sub(InboxPrefix(r)+".>", "replies to its own requests (JetStream API, acks, direct gets); each role has its own inbox prefix")

	switch r {
	case Client:
		pub(n.ChatWildcard(), "send chat requests")
		for _, w := range n.EventsWildcards() {
			sub(w, "follow a conversation live: the notice of each step as it is appended (read then with direct gets)")
		}
		pub(api("CONSUMER.INFO", rq)+".>", "status: requests in progress")
		// A request JetStream drops as a duplicate is a re-send, or a
		// request ID of another conversation, which the sender must
		// refuse (or the request vanishes): the first request tells.
		pub(api("STREAM.MSG.GET", rq), "chat: find the conversation of a request whose ID JetStream reports as a duplicate")
		pub(api("DIRECT.GET", ridKV)+".>", "chat: find the conversation a duplicate request ID was claimed for")
		pub(api("STREAM.MSG.GET", ridKV), "chat: the same, from a bucket without direct gets")
		pub(n.WorkersPing(), "status: ask the workers who they are")
		sub(n.WorkersStatus(), "status: hear the workers say who they are")
		// Not the threading index's stream info: its counts were for
		// status, but a stream info request may ask for every subject
		// ({"subjects_filter":">"}), and the index's keys name every
		// gateway conversation (c.<conversation>) and hash every erased
		// one's ID (e.<sha256>, unsalted: a guess can be confirmed).
		// status shows the index as not visible to the client key.
		sub(n.Prefix+".delta.>", "stream an answer as it is written")
	case Worker:
		for _, st := range append(append([]string{}, evs...), rq, snapKV, snapObj, tplKV, dead, ridKV, histKV) {
			pub(api("STREAM.CREATE", st), "create "+st+" on a fresh cluster (an existing stream cannot be changed this way)")
		}
		pub(n.DeadLetterSubject(), "store a request that cannot end in a conversation as a dead letter")
		pub(api("STREAM.MSG.DELETE", dead), "delete a dead letter it stored as its request's conversation was erased (the erasure may have read the dead letters before it)")
		pub(api("STREAM.MSG.GET", rq), "find requests published on the literal "+n.Prefix+".chat.* or "+n.Prefix+".chat.> (no consumer sees them)")
		pub(api("STREAM.MSG.DELETE", rq), "delete such a request once it is a dead letter")
		pub("$JS.API.INFO", "account info: the probe that tells a lost cluster from a slow one (with "+rq+"'s info, granted above: does its leader hear from a majority), and creating a bucket (nats.go checks the account first)")
		// The filtered form only (the filter is in the subject, and the
		// server checks it against the consumer's): a consumer of one
		// partition's requests, nothing else of the stream.
		pub(api("CONSUMER.CREATE", rq)+".*."+n.Prefix+".chat.*.*", "the partition consumers of chat requests, each filtered to its partition")
		pub(api("CONSUMER.INFO", rq)+".>", "the partition consumers of chat requests")
		pub(api("CONSUMER.MSG.NEXT", rq)+".>", "pull chat requests")
		pub("$JS.ACK."+rq+".>", "acknowledge chat requests")
		pub("$JS.ACK.*.*."+rq+".>", "acknowledge chat requests (v2 subjects)")
		pub(n.EventsRoleWildcard(string(Worker)), "append the steps of the requests it serves, on the workers' own subjects: the subject a step is stored on says which role wrote it (not the admin's, nor the subjects of steps stored before roles had subjects)")
		pub(n.Prefix+".delta.>", "stream answers as they are written")
		pub("$KV."+n.SnapshotsBucket+".>", "write and drop snapshots (a cache)")
		pub("$O."+n.SnapshotObjectsBucket+".>", "write and drop large snapshots (a cache)")
		pub("$KV."+n.HistoryBucket+".>", "write history caches (a cache)")
		pub(api("STREAM.PURGE", snapObj), "drop a replaced large snapshot's chunks")
		// The recording gateway runs as a worker: its threading index.
		thrKV := "KV_" + n.ThreadsBucket
		pub(api("STREAM.INFO", thrKV), "gateway: open the threading index; worker: find the erasure notes in it")
		pub(api("STREAM.CREATE", thrKV), "gateway: create the threading index on first use")
		pub(api("DIRECT.GET", thrKV)+".>", "gateway: look calls up in the threading index; worker: read a conversation's erasure note (a request sent before the erasure is dropped)")
		pub(api("DIRECT.GET", thrKV), "gateway: look a call's earlier states up at once (batched direct get)")
		pub(api("STREAM.MSG.GET", thrKV), "gateway: the same, from a bucket without direct gets")
		pub("$KV."+n.ThreadsBucket+".>", "gateway: index recorded calls for threading")
		bgKV := "KV_" + n.BackgroundBucket
		pub(api("STREAM.INFO", bgKV), "gateway: open the list of background responses it asks the provider about")
		pub(api("STREAM.CREATE", bgKV), "gateway: create that list on first use")
		pub(api("DIRECT.GET", bgKV), "gateway: read that list (batched direct get), to ask about the responses a stopped gateway followed")
		pub("$KV."+n.BackgroundBucket+".>", "gateway: add a background response to that list, and drop it once its end is recorded")
		gwKV := "KV_" + n.GatewaysBucket
		pub(api("STREAM.INFO", gwKV), "gateway: open the list of running gateways")
		pub(api("STREAM.CREATE", gwKV), "gateway: create that list on first use")
		pub("$KV."+n.GatewaysBucket+".>", "gateway: say it runs (turnlog status lists it), and that it stopped")
		sub(n.ErasedSubject(), "gateway: let go of an erased conversation it keeps in memory (erase announces it)")
		sub(n.GatewayInstances(), "gateway: answer, by its instance ID, that it runs (another gateway closes the calls of one that stopped)")
		pub(n.GatewayInstances(), "gateway: ask whether the gateway that began an unfinished call still runs")
		sub(n.WorkersPing(), "hear the status ping")
		pub(n.WorkersStatus(), "say who it is when pinged (on a subject of its own: the role answers no requests)")
		sub("$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES."+rq+".*", "hear of a request JetStream will not deliver again (every worker that took it stopped before it ended), to end it with request.failed")
	}
	return s
}

// Permissions returns role r's permissions as nats-server takes them, for
// the installation named by n.
func Permissions(r Role, n eventlog.Names) *server.Permissions {
	s := SpecFor(r, n)
	p := &server.Permissions{
		Publish:   &server.SubjectPermission{Allow: subjects(s.Publish)},
		Subscribe: &server.SubjectPermission{Allow: subjects(s.Subscribe)},
	}
	if s.Responses {
		p.Response = &server.ResponsePermission{MaxMsgs: 1, Expires: server.DEFAULT_ALLOW_RESPONSE_EXPIRATION}
	}
	return p
}

func subjects(gs []Grant) []string {
	out := make([]string, len(gs))
	for i, g := range gs {
		out[i] = g.Subject
	}
	return out
}
