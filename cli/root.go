package cli

import (
	"github.com/spf13/cobra"
)

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "turnlog",
		Short: "An event-sourced conversation engine for LLM chat on NATS JetStream",
		Long: `turnlog records every change to a conversation's Turn (system prompts, user
messages, model output, reasoning, tool calls and results, reorders,
compactions) as an event in NATS JetStream, so any conversation can be
replayed exactly, verified, diffed and audited.

Start everything on this machine with an embedded NATS server:

  turnlog serve

Every client command takes --nats-url and a credential (--creds, --nkey,
--context, or the NATS_URL / NATS_CREDS variables of the NATS tools) so it
works the same against serve or an external NATS server or cluster. Without
a URL, a command goes to the serve running on its data directory
(./.turnlog, or --data / TURNLOG_DATA), at the address serve wrote into
turnlog.lock there, whatever its --listen, else to nats://127.0.0.1:4222;
without a credential, it uses the admin key that serve keeps in that data
directory (./.turnlog/auth/admin.nk).

A first tour (see README.md): turnlog chat -m hello demo, turnlog ls,
turnlog replay demo, turnlog replay --verify demo.

Shell completion: turnlog completion bash|zsh|fish|powershell prints a
script; each one's --help says how to load it, e.g. for bash:
  source <(turnlog completion bash)`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	for _, c := range commands {
		root.AddCommand(c())
	}
	reportRefusals(root)
	return root
}

// commands are the subcommands; each command's file adds its constructor
// in an init function, so adding a command touches no shared file.
var commands []func() *cobra.Command
