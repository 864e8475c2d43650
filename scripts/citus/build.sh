#!/usr/bin/env bash
# Builds the Citus extension (13.2.2, the last line that supports PostgreSQL 15) from its source
# and installs it into the machine's PostgreSQL 15. Idempotent: it does nothing when citus.so is
# already installed. Needs root (Debian build packages, the PostgreSQL lib dir).
# The source tarball (8 MB) is not kept in the repository: it is looked for in $CITUS_SOURCE, then
# beside this script, then in ../shared/citus/ next to the checkout.
# Usage: build.sh [--force]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
version=13.2.2
pg_config=/usr/lib/postgresql/15/bin/pg_config
[ -x "$pg_config" ] || pg_config=$(command -v pg_config)
libdir=$("$pg_config" --pkglibdir 2>/dev/null || echo /usr/lib/postgresql/15/lib)
if [ "${1:-}" != "--force" ] && [ -f "$libdir/citus.so" ]; then
  echo "citus: already installed in $libdir"
  exit 0
fi
tarball=""
for candidate in "${CITUS_SOURCE:-}" "$here/citus-$version.tar.gz" "$root/../shared/citus/citus-$version.tar.gz"; do
  if [ -n "$candidate" ] && [ -f "$candidate" ]; then tarball=$candidate; break; fi
done
if [ -z "$tarball" ]; then
  echo "citus: the source citus-$version.tar.gz was not found (CITUS_SOURCE, $here, $root/../shared/citus)." >&2
  echo "  Download it and point CITUS_SOURCE at it:" >&2
  echo "  curl -L -o /tmp/citus-$version.tar.gz https://github.com/citusdata/citus/archive/refs/tags/v$version.tar.gz" >&2
  exit 1
fi
if [ "$(id -u)" != 0 ]; then
  echo "citus: building needs root (Debian build packages, $libdir): run it with sudo" >&2
  exit 1
fi
packages="postgresql-server-dev-15 libcurl4-openssl-dev liblz4-dev libzstd-dev libkrb5-dev libselinux1-dev libxslt1-dev libpam0g-dev libreadline-dev make gcc patch"
if ! dpkg -s $packages >/dev/null 2>&1; then
  echo "citus: installing build packages"
  apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $packages >/dev/null
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
tar xzf "$tarball" -C "$work"
cd "$work/citus-$version"
# PostgreSQL 15.20 exports have_createdb_privilege, which Citus also defines for older 15.x releases.
if grep -q 'have_createdb_privilege' "$("$pg_config" --includedir-server)/commands/dbcommands.h" 2>/dev/null; then
  patch -p1 -s < "$here/pg15.20-have_createdb_privilege.patch"
fi
echo "citus: building (a few minutes on two cores)"
./configure --without-libcurl PG_CONFIG="$pg_config" >"$work/configure.log" 2>&1 || { tail -20 "$work/configure.log"; exit 1; }
make -j"$(nproc)" >"$work/make.log" 2>&1 || { grep -m5 -E 'error|Error' "$work/make.log"; exit 1; }
make install >"$work/install.log" 2>&1 || { tail -20 "$work/install.log"; exit 1; }
echo "citus: installed into $libdir"
