#!/usr/bin/env bash
# scripts/with-postgres.sh CMD… — runs CMD with TROUPE_PG_URL set to a
# throwaway PostgreSQL cluster (docs/server.md "Tests"): installs the
# machine's Debian `postgresql` package with apt-get when no server binaries
# are found, creates a cluster in a temporary folder (initdb, trust auth,
# listening on a free loopback port only; as the `postgres` user when run
# as root, since PostgreSQL refuses to run as root), runs CMD, then stops
# the cluster and deletes the folder, whatever CMD did. Exits with CMD's
# exit code (3 when PostgreSQL cannot be started). CMD also gets
# TROUPE_PG_STOP and TROUPE_PG_START, scripts that stop and start this
# throwaway cluster (and only it).
set -euo pipefail
if [ $# -eq 0 ]; then
  echo "usage: scripts/with-postgres.sh CMD [ARG…]" >&2
  exit 2
fi

bindir() { ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1; }
bin=$(bindir)
if [ -z "$bin" ]; then
  echo "with-postgres: installing postgresql (apt-get)" >&2
  sudo=""
  [ "$(id -u)" = 0 ] || sudo=sudo
  $sudo apt-get -o DPkg::Lock::Timeout=600 update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get -o DPkg::Lock::Timeout=600 install -y -qq postgresql >/dev/null
  bin=$(bindir)
fi
if [ -z "$bin" ]; then
  echo "with-postgres: no PostgreSQL server binaries in /usr/lib/postgresql/*/bin" >&2
  exit 3
fi

# A free loopback port: one nothing answers on, below the kernel's
# ephemeral range (ip_local_port_range), where no outgoing connection of the
# tests can hold it as its local port; the start is retried on another port
# when the bind fails all the same.
ephemeral_low=$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)
[ "$ephemeral_low" -gt 11000 ] 2>/dev/null || ephemeral_low=32768
pick_port() {
  port=""
  for _ in $(seq 1 50); do
    p=$((10000 + RANDOM % (ephemeral_low - 10000)))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
      port=$p
      return 0
    fi
  done
  echo "with-postgres: no free port found" >&2
  exit 3
}

dir=$(mktemp -d "${TMPDIR:-/tmp}/troupe-pg.XXXXXX")
as=()
if [ "$(id -u)" = 0 ]; then
  id postgres >/dev/null 2>&1 || useradd --system --no-create-home postgres
  chown postgres "$dir"
  as=(runuser -u postgres --)
fi
cleanup() {
  "${as[@]}" "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null 2>&1 || true
  rm -rf "$dir"
}
trap cleanup EXIT

"${as[@]}" "$bin/initdb" -D "$dir/data" -U troupe --auth=trust -E UTF8 --no-locale >"$dir/initdb.log" 2>&1 \
  || { cat "$dir/initdb.log" >&2; exit 3; }
started=""
for _ in 1 2 3 4 5; do
  pick_port
  if "${as[@]}" "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w \
    -o "-h 127.0.0.1 -p $port -k $dir -c fsync=on -c synchronous_commit=on" start >/dev/null; then
    started=1
    break
  fi
  # Only a port taken between the pick and the bind is worth another try.
  grep -q "could not bind" "$dir/server.log" 2>/dev/null || break
done
[ -n "$started" ] || { cat "$dir/server.log" >&2; exit 3; }

export TROUPE_PG_URL="postgres://troupe@127.0.0.1:$port/postgres"
# The cluster is this script's own, so tests may stop and start it (the
# outage test of tests/it/server_load.rs): two scripts that do just that.
printf '#!/bin/sh\nexec %s "%s/pg_ctl" -D "%s/data" -m fast -w stop\n' "${as[*]}" "$bin" "$dir" >"$dir/stop.sh"
printf '#!/bin/sh\nexec %s "%s/pg_ctl" -D "%s/data" -l "%s/server.log" -w -o "-h 127.0.0.1 -p %s -k %s -c fsync=on -c synchronous_commit=on" start\n' \
  "${as[*]}" "$bin" "$dir" "$dir" "$port" "$dir" >"$dir/start.sh"
chmod +x "$dir/stop.sh" "$dir/start.sh"
export TROUPE_PG_STOP="$dir/stop.sh" TROUPE_PG_START="$dir/start.sh"
echo "with-postgres: PostgreSQL on 127.0.0.1:$port (TROUPE_PG_URL=$TROUPE_PG_URL)" >&2
set +e
"$@"
code=$?
set -e
exit $code
