package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/natsauth"
	"github.com/turnlog/turnlog/natsconn"
)

func init() { commands = append(commands, newAuthCmd) }

func newAuthCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "auth",
		Short: "Make and show the NATS keys and permissions of the roles admin, client and worker",
		Long: `turnlog's NATS servers let in only three users, one per role, each
with an nkey (a key file <role>.nk) and the subjects its work needs:

  admin   everything: provisioning, templates, import, fork, erase, repair
  client  send chat requests; read conversations, snapshots, templates,
          deltas and status (chat, replay, export, diff-turns, status)
  worker  consume requests, append events, stream deltas, read and write
          snapshots, read templates; create missing streams, never change,
          purge or delete one

turnlog serve makes the keys itself (in <data>/auth/) and configures its
embedded server. For a cluster of your own NATS servers:

  turnlog auth init --dir deploy/auth   # keys, public halves, route password
  turnlog auth conf > deploy/auth.conf  # the servers' users and permissions

then give each server the configuration (include it), the public keys
(nkeys.env) and the route credential (include cluster.conf in its cluster
block), and each process its key: --creds FILE, NATS_CREDS=FILE, or
TURNLOG_NATS_SEED for a container. See docs/security.md.`,
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(newAuthInitCmd(), newAuthConfCmd())
	return cmd
}

func newAuthInitCmd() *cobra.Command {
	var data, dir string
	var workerEnv bool
	var routes []string
	cmd := &cobra.Command{
		Use:   "init",
		Short: "Make a key per role (kept if they exist) and print their public keys",
		Long: `init writes admin.nk, client.nk and worker.nk (nkey seeds, mode 0600, in a
directory of mode 0700) to --dir, by default <data>/auth, the directory
turnlog serve uses, and keeps any that exist. It also writes nkeys.env, the
public keys as TURNLOG_NKEY_ADMIN=... lines that the configuration of
turnlog auth conf reads (docker compose passes it to the NATS servers), and
with --worker-env, worker.env: TURNLOG_NATS_SEED=<the worker's seed>,
TURNLOG_NATS_INBOX_PREFIX=_INBOX_worker and TURNLOG_METRICS_TOKEN, the
token the workers' --metrics listeners require, for worker containers that
cannot read a mounted key file. The token is also in metrics.token (mode
0600, kept if it exists), for the scraper (Prometheus:
authorization.credentials_file).

It also writes cluster.conf (mode 0600, kept if it exists), the cluster's
route credential: a user and a random password that every node requires
of a server joining on its cluster port, and the routes of --routes with
them, for include in each node's cluster block (deploy/nats-n*.conf). The
default routes are those of docker-compose.yml's three nodes; to change
them or the password, delete cluster.conf and run init again.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if dir == "" {
				dir = natsauth.Dir(data)
			}
			created, err := natsauth.Ensure(dir)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			var env strings.Builder
			env.WriteString("# Public keys of the turnlog roles (not secret), for the NATS servers'\n# configuration: turnlog auth conf reads them as $TURNLOG_NKEY_<ROLE>.\n")
			for _, r := range natsauth.Roles {
				pub, err := natsauth.PublicKey(natsauth.KeyFile(dir, r))
				if err != nil {
					return err
				}
				state := "kept"
				for _, c := range created {
					if c == r {
						state = "created"
					}
				}
				fmt.Fprintf(out, "%-7s %s  %s (%s)\n", r, pub, natsauth.KeyFile(dir, r), state)
				fmt.Fprintf(&env, "%s=%s\n", natsauth.EnvVar(r), pub)
			}
			envFile := filepath.Join(dir, "nkeys.env")
			if err := os.WriteFile(envFile, []byte(env.String()), 0o644); err != nil {
				return fmt.Errorf("write %s: %w", envFile, err)
			}
			fmt.Fprintf(out, "public keys in %s\n", envFile)
			made, err := natsauth.EnsureCluster(dir, routes)
			if err != nil {
				return err
			}
			state := "kept"
			if made {
				state = "created"
			}
			fmt.Fprintf(out, "route credential in %s (%s; secret)\n", natsauth.ClusterFile(dir), state)
			if workerEnv {
				seed, err := os.ReadFile(natsauth.KeyFile(dir, natsauth.Worker))
				if err != nil {
					return err
				}
				line := ""
				for _, l := range strings.Split(string(seed), "\n") {
					if strings.HasPrefix(l, "SU") {
						line = l
					}
				}
				clear(seed)
				metricsToken, madeToken, err := natsauth.EnsureMetricsToken(dir)
				if err != nil {
					return err
				}
				path := filepath.Join(dir, "worker.env")
				body := "# The worker's secret key, for worker containers (docker compose env_file). Keep it secret.\n" + natsconn.EnvSeed + "=" + line + "\n" +
					"# The only reply subjects the worker role may subscribe to.\n" + natsconn.EnvInboxPrefix + "=" + natsauth.InboxPrefix(natsauth.Worker) + "\n" +
					"# The token the --metrics listener requires (also in " + natsauth.MetricsTokenFileName + ", for the scraper).\n" + envMetricsToken + "=" + metricsToken + "\n"
				f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
				if err != nil {
					return fmt.Errorf("write %s: %w", path, err)
				}
				_, err = f.WriteString(body)
				if cerr := f.Close(); err == nil {
					err = cerr
				}
				if err != nil {
					return fmt.Errorf("write %s: %w", path, err)
				}
				fmt.Fprintf(out, "worker key and metrics token for containers in %s (secret)\n", path)
				state := "kept"
				if madeToken {
					state = "created"
				}
				fmt.Fprintf(out, "the workers' metrics token in %s (%s; secret): scrapers send it as Authorization: Bearer\n", natsauth.MetricsTokenFile(dir), state)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&data, "data", envOr("TURNLOG_DATA", natsconn.DefaultDataDir), "data directory whose auth/ holds the keys (env TURNLOG_DATA)")
	cmd.Flags().StringVar(&dir, "dir", "", "directory for the keys (default <data>/auth)")
	cmd.Flags().StringSliceVar(&routes, "routes", natsauth.DefaultRoutes, "the cluster's route URLs for cluster.conf, when it is created (nats://HOST:PORT, comma-separated)")
	cmd.Flags().BoolVar(&workerEnv, "worker-env", false, "also write worker.env with the worker's seed as TURNLOG_NATS_SEED and its metrics token as TURNLOG_METRICS_TOKEN (for containers), and the token in metrics.token")
	return cmd
}

func newAuthConfCmd() *cobra.Command {
	var prefix, keys string
	var shards int
	cmd := &cobra.Command{
		Use:   "conf",
		Short: "Print the nats-server configuration of the roles: accounts, users and permissions",
		Long: `conf prints an accounts block for nats-server: one nkey user per role
with exactly the subjects it needs for the installation with --prefix,
each subject with the reason it is there. The admin and worker users are
in the account TURNLOG, with JetStream; the client user is in
TURNLOG_CLIENTS, without JetStream, which imports the client's subjects
from TURNLOG, so that no reply subject a client names is ever stored.
deploy/auth.conf is its output.
The users' public keys are read from the environment variables
TURNLOG_NKEY_ADMIN, TURNLOG_NKEY_CLIENT and TURNLOG_NKEY_WORKER (nkeys.env
of turnlog auth init), or written in when --keys names a key directory.
--event-shards names the installation's event streams (TURNLOG_EVENTS_0 ...)
when it was created with several (worker --event-shards).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if shards < 1 || shards > eventlog.MaxEventShards {
				return fmt.Errorf("--event-shards %d: use 1 to %d, the count the installation was created with", shards, eventlog.MaxEventShards)
			}
			names := eventlog.NamesFor(prefix).WithEventShards(shards)
			pubs := map[natsauth.Role]string{}
			for _, r := range natsauth.Roles {
				if keys == "" {
					pubs[r] = "$" + natsauth.EnvVar(r)
					continue
				}
				pub, err := natsauth.PublicKey(natsauth.KeyFile(keys, r))
				if err != nil {
					return err
				}
				pubs[r] = pub
			}
			_, err := fmt.Fprint(cmd.OutOrStdout(), natsauth.Conf(names, func(r natsauth.Role) string { return pubs[r] }))
			return err
		},
	}
	cmd.Flags().StringVar(&prefix, "prefix", envOr("TURNLOG_PREFIX", eventlog.DefaultPrefix), "subject prefix of the installation (env TURNLOG_PREFIX)")
	cmd.Flags().IntVar(&shards, "event-shards", 1, "event streams of the installation (worker --event-shards)")
	cmd.Flags().StringVar(&keys, "keys", "", "key directory whose public keys to write in (default: read them from TURNLOG_NKEY_* variables)")
	return cmd
}
