#!/usr/bin/env bash
# Reads of a conversation's whole history, turnlog against a plain
# PostgreSQL event-store table holding the same messages, side by side in
# one run (issue 16). Not part of CI: it installs PostgreSQL from Debian
# when it is missing (apt-get, as root), starts one in a data directory of
# its own on a port of its own, loads 1,000,000 messages over 10,000
# conversations into it (kept for later runs), and prints one JSON object
# with both stores' figures and their ratios.
#
#   benchmark/postgres/run.sh                  # full size
#   MESSAGES=100000 CONVERSATIONS=1000 benchmark/postgres/run.sh
#
# Settings (environment): PGDATA_DIR (default /tmp/turnlog-bench-pg),
# PGPORT_BENCH (15432), MESSAGES, CONVERSATIONS.
set -euo pipefail
cd "$(dirname "$0")"

DATA=${PGDATA_DIR:-/tmp/turnlog-bench-pg}
PORT=${PGPORT_BENCH:-15432}
MESSAGES=${MESSAGES:-1000000}
CONVERSATIONS=${CONVERSATIONS:-10000}

pgbin() { ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1; }
if [ -z "$(pgbin)" ]; then
  echo "installing PostgreSQL with apt-get" >&2
  as_root=""
  if [ "$(id -u)" -ne 0 ]; then as_root="sudo"; fi
  $as_root apt-get update -qq
  $as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends postgresql >/dev/null
fi
BIN=$(pgbin)
echo "PostgreSQL: $("$BIN/postgres" --version)" >&2

# PostgreSQL refuses to run as root: as root, run it as the postgres user.
as_pg() {
  if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}
if [ ! -f "$DATA/PG_VERSION" ]; then
  mkdir -p "$DATA"
  if [ "$(id -u)" -eq 0 ]; then chown postgres "$DATA"; fi
  as_pg "$BIN/initdb" -D "$DATA" -A trust -U postgres >/dev/null
fi
# synchronous_commit=off as in the issue's comparison; the socket in the
# data directory, TCP on the loopback only.
OPTS="-p $PORT -k $DATA -c listen_addresses=127.0.0.1 -c synchronous_commit=off -c shared_buffers=256MB"
start() { as_pg "$BIN/pg_ctl" -D "$DATA" -o "$OPTS" -l "$DATA/server.log" -w start >/dev/null; }
stop() { as_pg "$BIN/pg_ctl" -D "$DATA" -m fast -w stop >/dev/null 2>&1 || true; }
trap stop EXIT
stop
start

restart=("$BIN/pg_ctl" -D "$DATA" -o "$OPTS" -l "$DATA/server.log" -m fast -w restart)
if [ "$(id -u)" -eq 0 ]; then restart=(runuser -u postgres -- "${restart[@]}"); fi
go run . -dsn "host=$DATA port=$PORT user=postgres dbname=postgres" \
  -restart "$(printf '%q ' "${restart[@]}") >/dev/null" \
  -messages "$MESSAGES" -conversations "$CONVERSATIONS"
