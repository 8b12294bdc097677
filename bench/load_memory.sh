#!/usr/bin/env bash
# bench/load_memory.sh: how much private memory the loading backend needs
# (issue #14: features larger than memory).  On one R-MAT graph with DIM-dim
# features (bench/rmat.c), each mode in a fresh session, ROUNDS times:
#   - feature_store => 'memory': the features are read into the backend, then
#     copied into the shared region;
#   - feature_store => 'disk': they go to a temporary file as the table is
#     read and from it to the features file in passes of maintenance_work_mem.
# A sampler reads the backend's RssAnon (its private memory: not the shared
# region, not the page cache) every 20 ms during the load; the report gives
# its peak and the load's time.  Writes bench/results/load_memory-<stamp>.md.
#   SCALE=20 EDGES=10000000 DIM=128 ROUNDS=2 bash bench/load_memory.sh
set -euo pipefail
source "$(dirname "$0")/../test/lib.sh"
BENCH="$REPO_ROOT/bench"
SCALE=${SCALE:-20}
EDGES=${EDGES:-10000000}
DIM=${DIM:-128}
ROUNDS=${ROUNDS:-2}
MWM=${MWM:-256MB}
mkdir -p "$BENCH/bin" "$BENCH/results"
cc -O2 -Wall -o "$BENCH/bin/rmat" "$BENCH/rmat.c"
install -m 755 "$BENCH/bin/rmat" /tmp/gnn-bench-rmat.$$

make_workdir DIR
PORT=$(free_port)
cleanup() { pg_stop "$DIR"; rm -rf "$DIR" /tmp/gnn-bench-rmat.$$ /tmp/gnn-rss.$$.*; }
trap cleanup EXIT
pg_start "$DIR" "$PORT" "shared_buffers = 1GB" "gnn.max_graph_memory = 16GB" "autovacuum = off" \
  "maintenance_work_mem = $MWM"
psql_pg() { su postgres -s /bin/bash -c "'$PG_BINDIR/psql' -X -q -At -h '$DIR' -p $PORT -d postgres -v ON_ERROR_STOP=1 $*"; }

psql_pg -c "'CREATE EXTENSION gnn'"
psql_pg -c "'CREATE TABLE edges (src int NOT NULL, dst int NOT NULL); CREATE TABLE nodes (id int PRIMARY KEY, feat real[] NOT NULL)'"
/tmp/gnn-bench-rmat.$$ edges "$SCALE" "$EDGES" 42 | psql_pg -c "'COPY edges FROM STDIN WITH (FORMAT binary)'"
/tmp/gnn-bench-rmat.$$ nodes "$SCALE" "$DIM" 43 | psql_pg -c "'COPY nodes FROM STDIN WITH (FORMAT binary)'"
psql_pg -c "'VACUUM (FREEZE, ANALYZE) edges'" -c "'VACUUM (FREEZE, ANALYZE) nodes'" -c "'CHECKPOINT'"
NODES=$(psql_pg -c "'SELECT count(*) FROM nodes'")
FEAT_MB=$(( NODES * DIM * 4 / 1048576 ))

# one load in a fresh session, its backend's RssAnon sampled: "<ms> <peak kB>"
measure() {
  local mode=$1 out=/tmp/gnn-rss.$$.$1 script=/tmp/gnn-rss.$$.sql
  cat > "$script" <<EOF
SELECT pg_backend_pid() AS pid \gset
\setenv GNN_PID :pid
\! (while kill -0 \$GNN_PID 2>/dev/null; do awk '/RssAnon/ {print \$2}' /proc/\$GNN_PID/status; sleep 0.02; done) > $out 2>/dev/null &
SELECT pg_sleep(0.1);
SELECT extract(epoch FROM clock_timestamp()) AS t0 \gset
SELECT nodes FROM gnn.load_graph('b_$mode', edges => 'edges', nodes => 'nodes', id => 'id', features => 'feat',
                                 replace => true, persist => false, feature_store => '$mode');
SELECT round((extract(epoch FROM clock_timestamp()) - :t0) * 1000);
EOF
  chmod 644 "$script"
  local ms
  ms=$(psql_pg -f "$script" | tail -1)
  sleep 0.2
  echo "$ms $(sort -n "$out" | tail -1)"
  psql_pg -c "\"SELECT gnn.drop_graph('b_$mode')\"" >/dev/null
}

STAMP=$(date -u +%Y%m%dT%H%M%SZ)
REPORT="$BENCH/results/load_memory-$STAMP.md"
declare -A T P
for r in $(seq 1 "$ROUNDS"); do
  for mode in memory disk; do
    read -r ms kb < <(measure $mode)
    echo "round $r, $mode: $ms ms, peak RssAnon $(( kb / 1024 )) MB" >&2
    T[$mode]="${T[$mode]:-} $ms"; P[$mode]="${P[$mode]:-} $kb"
  done
done
best() { tr ' ' '\n' | grep . | sort -n | head -1; }
{
  echo "# Loading backend's private memory, $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo
  echo "- commit: $(git -C "$REPO_ROOT" rev-parse --short HEAD); command: \`SCALE=$SCALE EDGES=$EDGES DIM=$DIM ROUNDS=$ROUNDS MWM=$MWM bash bench/load_memory.sh\`"
  echo "- machine: $(nproc) cores, $(free -g | awk '/Mem:/{print $2}') GiB RAM"
  echo "- graph: R-MAT scale $SCALE, $NODES nodes, $EDGES edges, $DIM-dim features ($FEAT_MB MB); maintenance_work_mem = $MWM"
  echo "- per round (ms / peak RssAnon kB): memory${T[memory]} /${P[memory]}; disk${T[disk]} /${P[disk]}"
  echo
  echo "| feature_store | load (best, ms) | peak private memory of the backend (lowest, MB) | ratio to 'memory' |"
  echo "|---|---:|---:|---:|"
  pm=$(echo "${P[memory]}" | best); pd=$(echo "${P[disk]}" | best)
  echo "| memory | $(echo "${T[memory]}" | best) | $(( pm / 1024 )) | 1.00 |"
  echo "| disk | $(echo "${T[disk]}" | best) | $(( pd / 1024 )) | $(echo "scale=2; $pd / $pm" | bc) |"
} | tee "$REPORT"
