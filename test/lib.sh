# test/lib.sh: helpers shared by the test runner, the demo and the benchmarks.
# Servers run as the unprivileged `postgres` user (initdb and postgres refuse
# root) in a directory it owns, on a free port, and are always stopped.

PG_BINDIR=$(pg_config --bindir)
PGXS_TOP=$(cd "$(dirname "$(pg_config --pgxs)")/../.." && pwd)
PG_REGRESS="$PGXS_TOP/src/test/regress/pg_regress"
PG_PERL="$PGXS_TOP/src/test/perl"
REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# ../shared/data, if present (tests skip with a message where it is missing)
gnn_data_dir() {
  local d
  for d in "${GNN_DATA_DIR:-}" "$REPO_ROOT/../shared/data"; do
    if [ -n "$d" ] && [ -r "$d/cora/nodes.csv" ]; then (cd "$d" && pwd); return 0; fi
  done
  return 1
}

free_port() {
  python3 - <<'PY' 2>/dev/null || echo $((20000 + RANDOM % 20000))
import socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()
PY
}

# run a command as postgres with a sane environment
as_pg() {
  su postgres -s /bin/bash -c "$*"
}

# make_workdir VAR: a fresh directory owned by postgres
make_workdir() {
  local d
  d=$(mktemp -d /tmp/gnn-XXXXXX)
  chown postgres:postgres "$d"
  chmod 755 "$d"
  printf -v "$1" '%s' "$d"
}

# pg_start DIR PORT [extra conf lines...]: initdb + start a cluster preloading gnn
pg_start() {
  local dir=$1 port=$2; shift 2
  as_pg "'$PG_BINDIR/initdb' -D '$dir/data' -A trust -U postgres --no-sync >'$dir/initdb.log' 2>&1" || {
    cat "$dir/initdb.log"; return 1; }
  {
    echo "port = $port"
    echo "listen_addresses = ''"
    echo "unix_socket_directories = '$dir'"
    echo "shared_preload_libraries = 'gnn'"
    echo "fsync = off"
    echo "max_worker_processes = 32"
    for l in "$@"; do echo "$l"; done
  } >> "$dir/data/postgresql.conf"
  as_pg "'$PG_BINDIR/pg_ctl' -D '$dir/data' -l '$dir/server.log' -w start >/dev/null" || {
    cat "$dir/server.log"; return 1; }
}

pg_stop() {
  local dir=$1
  [ -f "$dir/data/postmaster.pid" ] && as_pg "'$PG_BINDIR/pg_ctl' -D '$dir/data' -m fast -w stop >/dev/null 2>&1"
  return 0
}

# wait_job_results ID: until training job ID's results pass, which follows the job
# in its worker (#44), is over (gnn.jobs.results_seconds, or the worker gone), at
# most 10 minutes; through the caller's psql_pg (the benchmarks' own scratch server)
wait_job_results() {
  for _ in $(seq 1 1200); do
    [ "$(psql_pg <<<"SELECT pid IS NULL OR results_seconds IS NOT NULL FROM gnn.jobs WHERE id = $1")" = t ] && return 0
    sleep 0.5
  done
}

# shm_pages: whether this machine gives shared memory huge pages (a bench report's header line)
shm_pages() {
  local dev sys
  dev=$(awk '$2 == "/dev/shm" {n = split($4, o, ","); for (i = 1; i <= n; i++) if (o[i] ~ /^huge=/) h = o[i]} END {print h ? h : "huge=never"}' /proc/mounts)
  sys=$(sed -n 's/.*\[\(.*\)\].*/\1/p' /sys/kernel/mm/transparent_hugepage/shmem_enabled 2>/dev/null)
  echo "/dev/shm $dev, shmem_enabled ${sys:-unknown}"
}
