#!/usr/bin/env bash
# bench/refresh_serve.sh: fresh answers after a small change (issue #42).
# An R-MAT graph of 2^SCALE nodes and EDGES edge rows (undirected, DIM-wide
# features), tracked, a 2-layer GraphSAGE (fan-outs [10, 5], 1 epoch); then
# CHANGES edge rows change (half deleted, half inserted) and the graph is
# refreshed, with default settings:
#   - gnn.embed(..., incremental => true) against a full gnn.embed of the
#     same table (goal: at most 0.2x);
#   - the first gnn.similar after the refresh (a miss: the result is
#     recomputed from the previous version's, only the rows the change can
#     reach) against the same miss computing every row (no base:
#     gnn.cache_drop first).
# Writes a markdown report to stdout and bench/results/refresh-serve-<UTC>.md.
#
#   bash bench/refresh_serve.sh                         # SCALE=20 EDGES=10000000 CHANGES=1000
#   SCALE=17 EDGES=1000000 CHANGES=100 bash bench/refresh_serve.sh   # quick
set -euo pipefail
source "$(dirname "$0")/../test/lib.sh"
BENCH="$REPO_ROOT/bench"
SCALE=${SCALE:-20}
EDGES=${EDGES:-10000000}
DIM=${DIM:-64}
CHANGES=${CHANGES:-1000}
THREADS=${THREADS:-2}
SEED=${SEED:-42}
N=$(( 1 << SCALE ))

source "$BENCH/rmat_tables.sh"
mkdir -p "$BENCH/results"
rmat_build
make_workdir DIR
PORT=$(free_port)
cleanup() { pg_stop "$DIR"; rm -rf "$DIR" "$RMAT"; }
trap cleanup EXIT
pg_start "$DIR" "$PORT" "shared_buffers = 1GB" "gnn.max_graph_memory = 8GB" "gnn.max_cache_memory = 6GB" \
  "gnn.threads = $THREADS" "max_wal_size = 8GB" "autovacuum = off"
psql_pg() { su postgres -s /bin/bash -c "'$PG_BINDIR/psql' -X -q -At -h '$DIR' -p $PORT -d postgres -v ON_ERROR_STOP=1 $*"; }
secs() { # seconds one statement takes
  psql_pg <<<"\\timing on
$1" 2>/dev/null | awk '/^Time:/ {printf "%.3f\n", $2 / 1000}' | tail -1
}
STAMP=$(date -u +%Y%m%dT%H%M%SZ)
REPORT="$BENCH/results/refresh-serve-$STAMP.md"
{
  echo "# Fresh answers after a small change, $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo
  echo "- commit: $(git -C "$REPO_ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown); command: \`SCALE=$SCALE EDGES=$EDGES DIM=$DIM CHANGES=$CHANGES THREADS=$THREADS bash bench/refresh_serve.sh\`"
  echo "- machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(free -g | awk '/Mem:/{print $2}') GiB RAM; load average at start $(cut -d' ' -f1-3 /proc/loadavg); default gnn settings (gnn.threads=$THREADS)"
} | tee "$REPORT"

psql_pg -c "'CREATE EXTENSION gnn'"
rmat_tables "$SCALE" "$EDGES" "$DIM" "$SEED"
psql_pg -c "'ALTER TABLE nodes ADD PRIMARY KEY (id)'"
LOADED=$(psql_pg -c "\"SELECT nodes || ' nodes, ' || edges || ' arcs' FROM gnn.load_graph('b', 'edges', nodes => 'nodes', features => 'feat', label => 'label', split => 'split', undirected => true, skip_dangling => true, track => true)\"" 2>/dev/null)
echo "- graph: $LOADED, tracked" | tee -a "$REPORT"
psql_pg -c "\"SELECT gnn.train('b', model => 'graphsage', name => 'sage', hidden => 64, layers => 2, epochs => 1, seed => 1,
  device => 'cpu', options => '{\\\"fanouts\\\": [10, 5]}', wait => true)\"" >/dev/null 2>&1
T_FIRST=$(secs "SELECT gnn.embed('sage', 'emb_inc', incremental => true);")
echo "- first write of emb_inc (every row: there is none to follow): $T_FIRST s" | tee -a "$REPORT"
psql_pg -c "\"SELECT count(*) FROM gnn.similar('sage', 1, 10, exact => true)\"" >/dev/null

psql_pg <<SQL >/dev/null 2>&1
SELECT setseed(0.3);
DELETE FROM edges WHERE ctid IN (SELECT ctid FROM edges TABLESAMPLE SYSTEM (0.1) LIMIT $(( CHANGES / 2 )));
INSERT INTO edges SELECT (random() * $(( N - 1 )))::int, (random() * $(( N - 1 )))::int FROM generate_series(1, $(( CHANGES / 2 )));
SQL
T_REFRESH=$(secs "SELECT gnn.refresh_graph('b');")
TOUCHED=$(psql_pg -c "\"SELECT cardinality(touched) FROM gnn.graph_history ORDER BY generation DESC LIMIT 1\"")
echo "- $CHANGES edge rows changed ($(( CHANGES / 2 )) deleted, $(( CHANGES / 2 )) inserted), refreshed in $T_REFRESH s: $TOUCHED nodes touched" | tee -a "$REPORT"

# the incremental write first: nothing of the new version is cached yet
OUT=$(psql_pg <<<"\\timing on
SELECT gnn.embed('sage', 'emb_inc', incremental => true);
\\timing off
SELECT 'recomputed=' || gnn.embed_recomputed();" 2>/dev/null)
T_INC=$(echo "$OUT" | awk '/^Time:/ {printf "%.3f", $2 / 1000}')
RECOMP=$(echo "$OUT" | sed -n 's/^recomputed=//p')
T_MISS=$(secs "SELECT count(*) FROM gnn.similar('sage', 1, 10, exact => true);")
COMPUTED=$(psql_pg -c "\"SELECT computed FROM gnn.cache WHERE model = 'sage' AND kind = 'embedding' AND state = 'ready'\"")
psql_pg -c "\"SELECT gnn.cache_drop('sage')\"" >/dev/null
T_MISS_FULL=$(secs "SELECT count(*) FROM gnn.similar('sage', 1, 10, exact => true);")
T_FULL=$(secs "SELECT gnn.embed('sage', 'emb_full');")
SAME=$(psql_pg -c "\"SELECT count(DISTINCT id) || ' rows; largest difference ' || max(abs(x - y)) || ', relative to the value ' || max(abs(x - y) / greatest(abs(y), 1)) FROM emb_inc a JOIN emb_full b USING (id), unnest(a.embedding, b.embedding) u(x, y)\"")
{
  echo
  echo "| after the refresh | seconds | ratio |"
  echo "|---|---|---|"
  echo "| full gnn.embed (every row computed and written) | $T_FULL | 1.00 |"
  echo "| gnn.embed(..., incremental => true), defaults ($RECOMP rows recomputed) | $T_INC | $(awk -v a="$T_INC" -v b="$T_FULL" 'BEGIN {printf "%.3f", a / b}') |"
  echo "| first gnn.similar, a miss computing every row (no base) | $T_MISS_FULL | 1.00 |"
  echo "| first gnn.similar, a miss from the previous version's result ($COMPUTED rows computed) | $T_MISS | $(awk -v a="$T_MISS" -v b="$T_MISS_FULL" 'BEGIN {printf "%.3f", a / b}') |"
  echo
  echo "- incremental and full tables: $SAME"
  echo "- load average at the end $(cut -d' ' -f1-3 /proc/loadavg)"
} | tee -a "$REPORT"
