#!/usr/bin/env bash
# A Citus cluster on this machine: a coordinator and two workers, each its own PostgreSQL 15
# instance on a loopback port, for the Citus tests and for trying the service on a distributed
# database. The extension is built first when it is missing (scripts/citus/build.sh).
#
#   scripts/citus.sh start            builds if needed, starts the three instances (seconds once built)
#   scripts/citus.sh stop             stops them (the data stays in $CITUS_DIR)
#   scripts/citus.sh status           which instances run, and the coordinator's nodes
#   scripts/citus.sh createdb NAME    a database on every node with the extension, workers registered:
#                                     DATABASE_URL=postgres://postgres@127.0.0.1:$CITUS_PORT/NAME
#   scripts/citus.sh dropdb NAME      drops it on every node
#   scripts/citus.sh test [ARGS]      start, a fresh database, npm run test:citus's suite on it, drop it
#
# CITUS_DIR (default .citus/ in the checkout) holds the data directories; CITUS_PORT (default 9700)
# is the coordinator's port, the workers listen on the next two. The instances run as the postgres
# user when started by root (PostgreSQL refuses to run as root), with trust authentication on
# 127.0.0.1 only.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${PG_BIN:-/usr/lib/postgresql/15/bin}
dir=${CITUS_DIR:-$root/.citus}
port=${CITUS_PORT:-9700}
nodes=(coordinator worker1 worker2)
port_of() { case $1 in coordinator) echo "$port" ;; worker1) echo $((port + 1)) ;; worker2) echo $((port + 2)) ;; esac; }

# Runs a command as the instances' owner: postgres when this script runs as root, else the caller.
as_owner() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}
psql_on() { # psql_on PORT DB SQL
  "$bin/psql" -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$1" -U postgres -d "$2" -Atc "$3"
}
running() { as_owner "$bin/pg_ctl" -D "$dir/$1" status >/dev/null 2>&1; }

ensure_extension() {
  if [ ! -f "$("$bin/pg_config" --pkglibdir)/citus.so" ]; then
    echo "citus: the extension is not installed: building it (a few minutes, once per machine)"
    "$root/scripts/citus/build.sh"
  fi
}

init_node() {
  local name=$1 data="$dir/$1"
  [ -f "$data/PG_VERSION" ] && return 0
  mkdir -p "$data"
  [ "$(id -u)" = 0 ] && chown postgres:postgres "$dir" "$data"
  chmod 700 "$data"
  as_owner "$bin/initdb" -D "$data" -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 >/dev/null
  cat >>"$data/postgresql.conf" <<EOF
# scripts/citus.sh
listen_addresses = '127.0.0.1'
port = $(port_of "$name")
unix_socket_directories = '$data'
shared_preload_libraries = 'citus'
max_connections = 300
# Citus commits writes that span nodes with two-phase commit.
max_prepared_transactions = 300
# Shard moves and tenant isolation copy shards with logical replication.
wal_level = logical
max_replication_slots = 20
max_wal_senders = 20
shared_buffers = 64MB
fsync = off
synchronous_commit = off
full_page_writes = off
logging_collector = off
EOF
}

start() {
  ensure_extension
  mkdir -p "$dir"
  for name in "${nodes[@]}"; do
    init_node "$name"
    if ! running "$name"; then
      as_owner "$bin/pg_ctl" -D "$dir/$name" -l "$dir/$name.log" -w -t 60 start >/dev/null || { tail -20 "$dir/$name.log"; exit 1; }
    fi
  done
  echo "citus: coordinator on 127.0.0.1:$port, workers on $((port + 1)) and $((port + 2)) (data in $dir)"
}

stop() {
  for name in "${nodes[@]}"; do
    if [ -f "$dir/$name/PG_VERSION" ] && running "$name"; then as_owner "$bin/pg_ctl" -D "$dir/$name" -m fast -w stop >/dev/null; fi
  done
  echo "citus: stopped"
}

status() {
  local code=0
  for name in "${nodes[@]}"; do
    if [ -f "$dir/$name/PG_VERSION" ] && running "$name"; then echo "$name: running on 127.0.0.1:$(port_of "$name")"; else echo "$name: stopped"; code=3; fi
  done
  return $code
}

# A database on every node, the extension in each, the workers registered with the coordinator.
createdb() {
  local name=$1
  [[ "$name" =~ ^[a-z_][a-z0-9_]*$ ]] || { echo "citus: a database name is lower-case letters, digits and _" >&2; exit 2; }
  for node in worker1 worker2 coordinator; do
    psql_on "$(port_of "$node")" postgres "CREATE DATABASE $name"
    psql_on "$(port_of "$node")" "$name" "CREATE EXTENSION citus"
  done
  psql_on "$port" "$name" "SELECT citus_set_coordinator_host('127.0.0.1', $port)" >/dev/null
  for node in worker1 worker2; do
    psql_on "$port" "$name" "SELECT citus_add_node('127.0.0.1', $(port_of "$node"))" >/dev/null
  done
  echo "postgres://postgres@127.0.0.1:$port/$name"
}

dropdb() {
  local name=$1
  for node in coordinator worker1 worker2; do
    psql_on "$(port_of "$node")" postgres "DROP DATABASE IF EXISTS $name WITH (FORCE)"
  done
}

run_tests() {
  start
  local name="crm_citus_test_$(date +%s)_$$" url status=0
  url=$(createdb "$name" | tail -1)
  echo "citus: testing on $url"
  DATABASE_URL=$url npx vitest run --config "$root/vitest.citus.config.ts" "$@" || status=$?
  dropdb "$name" || true
  return $status
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  status) status ;;
  createdb) [ -n "${2:-}" ] || { echo "usage: $0 createdb NAME" >&2; exit 2; }; createdb "$2" ;;
  dropdb) [ -n "${2:-}" ] || { echo "usage: $0 dropdb NAME" >&2; exit 2; }; dropdb "$2" ;;
  test) shift; cd "$root"; run_tests "$@" ;;
  *) echo "usage: $0 start|stop|status|createdb NAME|dropdb NAME|test [vitest args]" >&2; exit 2 ;;
esac
