#!/usr/bin/env bash
# bench/load_graph.sh: gnn.load_graph against a sequential scan of the same tables.
#
# For each size (EDGES:SCALE), generates an R-MAT edge table (src int, dst int;
# 2^SCALE node ids) and a node table (id int primary key, feat real[DIM]) for
# ids 0..2^SCALE-1, then, in one session, times RUNS rounds of:
#   count(*) over edges, count(*) over nodes (planner defaults: parallel scan
#   allowed), the same with max_parallel_workers_per_gather = 0 (serial),
#   serial sums over the columns (scans that deform the tuples, as a load must),
#   load_graph(edges only), load_graph(edges + nodes with 128-dim features), and
#   both again with persist => false (no graph store file: the store write's share;
#   the two pairs swap order every round, since a load right after a drop reuses
#   the memory it freed).
# Rounds interleave the statements so noise hits all of them alike; each
# figure is the median over rounds.  Writes a markdown report to stdout and to
# bench/results/load_graph-<UTC timestamp>.md.
#
#   bash bench/load_graph.sh                          # default: 1M and 10M edges, 5 rounds
#   SIZES="1000000:17" RUNS=3 bash bench/load_graph.sh
#   PROFILE=1 bash bench/load_graph.sh                # also perf-record one load per size
set -euo pipefail
source "$(dirname "$0")/../test/lib.sh"
BENCH="$REPO_ROOT/bench"
SIZES=${SIZES:-"1000000:17 10000000:20"}
RUNS=${RUNS:-5}
DIM=${DIM:-128}
SEED=${SEED:-42}
SHARED_BUFFERS=${SHARED_BUFFERS:-2GB}
PROFILE=${PROFILE:-0}

mkdir -p "$BENCH/bin" "$BENCH/results"
cc -O2 -Wall -o "$BENCH/bin/rmat" "$BENCH/rmat.c"
cc -O2 -Wall -o "$BENCH/bin/memtouch" "$BENCH/memtouch.c"
install -m 755 "$BENCH/bin/rmat" /tmp/gnn-bench-rmat.$$   # readable by postgres

make_workdir DIR
PORT=$(free_port)
cleanup() { pg_stop "$DIR"; rm -rf "$DIR" /tmp/gnn-bench-rmat.$$; }
trap cleanup EXIT
pg_start "$DIR" "$PORT" "shared_buffers = $SHARED_BUFFERS" "gnn.max_graph_memory = 8GB" \
  "max_wal_size = 8GB" "checkpoint_timeout = 1h" "autovacuum = off"
psql_pg() { su postgres -s /bin/bash -c "'$PG_BINDIR/psql' -X -q -h '$DIR' -p $PORT -d postgres -v ON_ERROR_STOP=1 -P pager=off $*"; }

STAMP=$(date -u +%Y%m%dT%H%M%SZ)
REPORT="$BENCH/results/load_graph-$STAMP.md"
COMMIT=$(git -C "$REPO_ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)
DIRTY=$(git -C "$REPO_ROOT" status --porcelain -- src sql 2>/dev/null | grep -q . && echo " (src/sql modified)" || true)
{
  echo "# gnn.load_graph vs. sequential scan, $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo
  echo "- commit: $COMMIT$DIRTY; command: \`SIZES=\"$SIZES\" RUNS=$RUNS DIM=$DIM bash bench/load_graph.sh\`"
  echo "- machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(free -g | awk '/Mem:/{print $2}') GiB RAM; $(pg_config --version)"
  echo "- server: shared_buffers=$SHARED_BUFFERS, fsync=off, autovacuum=off, gnn.threads=0 (all cores)"
  echo "- shared memory pages: $(shm_pages); GNN_HUGE_PAGES=${GNN_HUGE_PAGES:-unset}"
  echo "- times: median of $RUNS interleaved rounds, ms (psql \\timing); one warm-up round first"
  echo "- memory on this machine (bench/memtouch, 512 MiB):"
  echo
  "$BENCH/bin/memtouch" 512 | sed 's/^/      /'
  echo
} | tee "$REPORT"

psql_pg -c "'CREATE EXTENSION gnn'"

# prof_load TAG CALL: perf record (call graphs, all threads) of one load in a fresh session
prof_load() {
  local prof="$BENCH/results/perf-$EDGES-$1-$STAMP.txt" pidf psqlpid perfpid
  echo "== perf record of one load ($1) at $EDGES edges" >&2
  pidf=$(mktemp); chmod 666 "$pidf"
  psql_pg -At <<SQL > /dev/null &
\\o $pidf
SELECT pg_backend_pid();
\\o
SELECT pg_sleep(2);
SELECT nodes FROM $2;
SELECT gnn.drop_graph('p');
SQL
  psqlpid=$!
  for _ in $(seq 50); do [ -s "$pidf" ] && break; sleep 0.1; done
  perf record -q -g -o "$DIR/perf.data" -p "$(head -1 "$pidf")" 2>/dev/null & perfpid=$!
  wait "$psqlpid"; kill -INT "$perfpid"; wait "$perfpid" || true
  { echo "# perf record -g of: SELECT nodes FROM $2   ($EDGES edges)"
    echo "## inclusive time (children), by symbol; all threads of the backend"
    perf report -i "$DIR/perf.data" --children --sort symbol -g none --stdio 2>&1 | grep -v '^#' | grep -v '^$' | grep -v ' 0x0000' | head -50
    echo; echo "## self time by symbol"
    perf report -i "$DIR/perf.data" --no-children --sort dso,symbol -g none --stdio 2>&1 | grep -v '^#' | grep -v '^$' | head -30
  } > "$prof" || true   # head closing the pipe is not a failure
  echo "perf profile: ${prof#$REPO_ROOT/}" | tee -a "$REPORT"
  rm -f "$pidf" "$DIR/perf.data"
}

persisted_pair() {
  cat <<SQL
\\echo TAG load_edges
SELECT nodes, edges FROM gnn.load_graph('b1', edges => 'edges');
\\echo TAG load_features
SELECT nodes, edges, feature_dim FROM gnn.load_graph('b2', edges => 'edges', nodes => 'nodes', id => 'id', features => 'feat');
\\echo TAG info
SELECT name, nodes, edges, feature_dim, bytes FROM gnn.graphs ORDER BY name;
\\echo TAG none
SELECT gnn.drop_graph('b1'), gnn.drop_graph('b2');
SQL
}
np_pair() {
  cat <<SQL
\\echo TAG load_edges_np
SELECT nodes, edges FROM gnn.load_graph('b1', edges => 'edges', persist => false);
\\echo TAG load_features_np
SELECT nodes, edges, feature_dim FROM gnn.load_graph('b2', edges => 'edges', nodes => 'nodes', id => 'id', features => 'feat', persist => false);
\\echo TAG none
SELECT gnn.drop_graph('b1'), gnn.drop_graph('b2');
SQL
}

median() { sort -n | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else printf "%.3f\n", (a[NR/2]+a[NR/2+1])/2}'; }

for spec in $SIZES; do
  EDGES=${spec%%:*}; SCALE=${spec##*:}; NODES=$((1 << SCALE))
  echo "== $EDGES edges, $NODES nodes: generating" >&2
  t0=$(date +%s.%N)
  psql_pg -c "'DROP TABLE IF EXISTS edges, nodes; CREATE TABLE edges (src int NOT NULL, dst int NOT NULL); CREATE TABLE nodes (id int PRIMARY KEY, feat real[] NOT NULL)'"
  /tmp/gnn-bench-rmat.$$ edges "$SCALE" "$EDGES" "$SEED" | psql_pg -c "'COPY edges FROM STDIN WITH (FORMAT binary)'"
  /tmp/gnn-bench-rmat.$$ nodes "$SCALE" "$DIM" "$((SEED + 1))" | psql_pg -c "'COPY nodes FROM STDIN WITH (FORMAT binary)'"
  psql_pg -c "'VACUUM (FREEZE, ANALYZE) edges'" -c "'VACUUM (FREEZE, ANALYZE) nodes'" -c "'CHECKPOINT'"
  t1=$(date +%s.%N)
  SIZESQL=$(psql_pg -At -c "\"SELECT pg_size_pretty(pg_relation_size('edges')) || ' / ' || pg_size_pretty(pg_total_relation_size('nodes'))\"")
  echo "== generated in $(printf '%.0f' "$(echo "$t1 - $t0" | bc)") s; edges / nodes on disk: $SIZESQL" >&2

  # one session: a warm-up round, then RUNS timed rounds; each statement tagged
  SQL=$(mktemp); OUTF=$(mktemp); chmod 644 "$SQL"
  {
    # count(*) must scan the heap as load_graph does: no index-only scan of the primary key
    echo "SET client_min_messages = warning; SET enable_indexonlyscan = off; SET enable_indexscan = off; SET enable_bitmapscan = off;"
    for r in $(seq 0 "$RUNS"); do
      cat <<SQL
\\echo TAG count_edges
SELECT count(*) FROM edges;
\\echo TAG count_nodes
SELECT count(*) FROM nodes;
\\echo TAG none
SET max_parallel_workers_per_gather = 0;
\\echo TAG count_edges_serial
SELECT count(*) FROM edges;
\\echo TAG count_nodes_serial
SELECT count(*) FROM nodes;
\\echo TAG read_edges_serial
SELECT sum(src::int8 + dst) FROM edges;
\\echo TAG read_nodes_serial
SELECT sum(id::int8 + cardinality(feat)) FROM nodes;
\\echo TAG none
RESET max_parallel_workers_per_gather;
SQL
      # persisted loads first in even rounds, the persist => false pair first in odd ones: a load
      # right after a drop reuses the memory the drop freed (cheaper here than memory the host took back)
      if [ $((r % 2)) = 0 ]; then persisted_pair; np_pair; else np_pair; persisted_pair; fi
      cat <<SQL
\\echo TAG endround
SQL
    done
  } > "$SQL"
  psql_pg -At -c "'\\timing on'" -f "$SQL" > "$OUTF"
  # keep rounds 1..RUNS (round 0 warms the caches and the code paths)
  awk -v runs="$RUNS" '
    /^TAG endround/ {round++; next}
    /^TAG / {tag=$2; next}
    /^Time: / && round >= 1 && tag != "info" && tag != "none" {print tag, $2}
    /\|/ && tag == "info" && round == 1 {print "info", $0}
  ' "$OUTF" > "$OUTF.t"
  get() { awk -v k="$1" '$1 == k {print $2}' "$OUTF.t" | median; }
  ce=$(get count_edges); cn=$(get count_nodes); ces=$(get count_edges_serial); cns=$(get count_nodes_serial)
  rde=$(get read_edges_serial); rdn=$(get read_nodes_serial)
  le=$(get load_edges); lf=$(get load_features); len=$(get load_edges_np); lfn=$(get load_features_np)
  all() { awk -v k="$1" '$1 == k {printf "%s%.0f", sep, $2; sep=" "}' "$OUTF.t"; }
  r() { echo "scale=2; ($1) / ($2)" | bc -l | sed 's/^\./0./'; }
  {
    echo "## $EDGES edges (R-MAT scale $SCALE, $NODES node ids, $DIM-dim features); tables $SIZESQL"
    echo
    echo "| statement | median ms | all rounds ms | ratio to count(edges) | serial-scan ratio |"
    echo "|---|---:|---|---:|---:|"
    echo "| count(*) edges (parallel allowed) | $ce | $(all count_edges) | 1 | |"
    echo "| count(*) edges, serial | $ces | $(all count_edges_serial) | | 1 |"
    echo "| count(*) nodes (parallel allowed) | $cn | $(all count_nodes) | | |"
    echo "| count(*) nodes, serial | $cns | $(all count_nodes_serial) | | |"
    echo "| sum(src + dst) over edges, serial (the columns deformed) | $rde | $(all read_edges_serial) | | |"
    echo "| sum(id + cardinality(feat)) over nodes, serial (deformed; the arrays' elements not read) | $rdn | $(all read_nodes_serial) | | |"
    echo "| load_graph, edges only | $le | $(all load_edges) | **$(r "$le" "$ce")** | $(r "$le" "$ces") |"
    echo "| load_graph, edges + nodes with features | $lf | $(all load_features) | **$(r "$lf" "$ce + $cn")** (vs. count edges + count nodes) | $(r "$lf" "$ces + $cns") |"
    echo "| the same two, persist => false (no graph store file) | $len / $lfn | $(all load_edges_np) / $(all load_features_np) | $(r "$len" "$ce") / $(r "$lfn" "$ce + $cn") | $(r "$len" "$ces") / $(r "$lfn" "$ces + $cns") |"
    echo
    echo "Against the deforming scans (count(*) reads no tuple of an all-visible page; a reader of the columns must): edges only $(r "$le" "$rde")x, with features $(r "$lf" "$rde + $rdn")x; persist => false $(r "$len" "$rde")x / $(r "$lfn" "$rde + $rdn")x."
    echo
    awk '$1 == "info" {sub(/^info /, ""); print "    graph|nodes|edges|dim|bytes: " $0}' "$OUTF.t"
    echo
  } | tee -a "$REPORT"

  if [ "$PROFILE" = 1 ] && command -v perf >/dev/null; then
    prof_load edges "gnn.load_graph('p', edges => 'edges')"
    prof_load features "gnn.load_graph('p', edges => 'edges', nodes => 'nodes', id => 'id', features => 'feat')"
  fi
  rm -f "$SQL" "$OUTF" "$OUTF.t"
done
echo "report: $REPORT" >&2
