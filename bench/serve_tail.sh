#!/usr/bin/env bash
# bench/serve_tail.sh: serving at the tail (issue #42), on an R-MAT graph of
# 2^SCALE nodes and EDGES undirected edges (2 x EDGES arcs), DIM-dim
# features; a GraphSAGE model (hidden 64, 2 layers, 1 epoch) for
# gnn.similar / gnn.embedding / gnn.predict and a node2vec model (64 wide,
# short walks, 1 epoch) for gnn.recommend.
#
# Every figure is pgbench's per-call latency (its -l log), CLIENTS clients x
# CALLS calls, p50 / p90 / p99 / max, with the machine's load average beside
# it:
#   - gnn.similar and gnn.recommend once their indexes are ready, with
#     persistent connections, and with a new connection per call (-C: the
#     connection's set-up counted);
#   - the first gnn.embedding of 1 node and gnn.predict of 1 and 10 nodes in
#     a new session (-C), the results shared;
#   - gnn.similar with persistent connections while a training job runs on
#     the same graph, against the idle figure of the same run;
#   - baseline from the same run: gnn.similar with exact => true (the full
#     scan every call paid before the index), persistent connections.
# Writes a markdown report to stdout and bench/results/serve-tail-<UTC>.md.
#
#   bash bench/serve_tail.sh                          # SCALE=20 EDGES=10000000 DIM=64
#   SCALE=17 EDGES=1000000 CALLS=50 bash bench/serve_tail.sh   # a quick run
set -euo pipefail
source "$(dirname "$0")/../test/lib.sh"
BENCH="$REPO_ROOT/bench"
SCALE=${SCALE:-20}
EDGES=${EDGES:-10000000}
DIM=${DIM:-64}
CLIENTS=${CLIENTS:-8}
CALLS=${CALLS:-200}
FIRST_CALLS=${FIRST_CALLS:-25}
THREADS=${THREADS:-2}
SEED=${SEED:-42}
N=$(( 1 << SCALE ))

source "$BENCH/rmat_tables.sh"
mkdir -p "$BENCH/results"
rmat_build

make_workdir DIR
PORT=$(free_port)
# HUGE=1 (the default where this runs as root): the server's shared memory in
# 2 MB pages (huge_pages = on, vm.nr_hugepages reserved for the run and given
# back after), with min_dynamic_shared_memory holding the graph, the shared
# results and their indexes: every new session then maps them with one
# page-table entry per 2 MB instead of taking a fault per 4 kB page it
# touches (13 us each on this virtual machine).  HUGE=0: 4 kB pages.
HUGE=${HUGE:-$([ -w /proc/sys/vm/nr_hugepages ] && echo 1 || echo 0)}
DSM_MB=${DSM_MB:-6144}
HUGE_CONF=()
OLD_HUGE=""
if [ "$HUGE" = 1 ]; then
  OLD_HUGE=$(cat /proc/sys/vm/nr_hugepages)
  need=$(( (1024 + DSM_MB) / 2 + 128 ))
  echo "$need" > /proc/sys/vm/nr_hugepages
  if [ "$(cat /proc/sys/vm/nr_hugepages)" -ge "$need" ]; then
    HUGE_CONF=("huge_pages = on" "min_dynamic_shared_memory = ${DSM_MB}MB")
  else
    echo "$OLD_HUGE" > /proc/sys/vm/nr_hugepages; OLD_HUGE=""; HUGE=0
  fi
fi
cleanup() { pg_stop "$DIR"; rm -rf "$DIR" "$RMAT"; [ -n "$OLD_HUGE" ] && echo "$OLD_HUGE" > /proc/sys/vm/nr_hugepages; true; }
trap cleanup EXIT
pg_start "$DIR" "$PORT" "shared_buffers = 1GB" "gnn.max_graph_memory = 8GB" "gnn.max_cache_memory = 6GB" ${HUGE_CONF[@]+"${HUGE_CONF[@]}"} \
  "gnn.threads = $THREADS" "max_wal_size = 8GB" "autovacuum = off" "max_connections = 50" \
  "max_worker_processes = 16"
psql_pg() { su postgres -s /bin/bash -c "'$PG_BINDIR/psql' -X -q -At -h '$DIR' -p $PORT -d postgres -v ON_ERROR_STOP=1 $*"; }
load() { cut -d' ' -f1-3 /proc/loadavg; }

STAMP=$(date -u +%Y%m%dT%H%M%SZ)
REPORT="$BENCH/results/serve-tail-$STAMP.md"
COMMIT=$(git -C "$REPO_ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)
{
  echo "# Serving at the tail, $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo
  echo "- commit: $COMMIT; command: \`HUGE=$HUGE SCALE=$SCALE EDGES=$EDGES DIM=$DIM CLIENTS=$CLIENTS CALLS=$CALLS THREADS=$THREADS bash bench/serve_tail.sh\`"
  echo "- machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(free -g | awk '/Mem:/{print $2}') GiB RAM; $(pg_config --version); load average at start $(load)"
  echo "- server: gnn.threads=$THREADS, fsync=off; shared memory: $([ "$HUGE" = 1 ] && echo "2 MB pages (huge_pages = on, min_dynamic_shared_memory = ${DSM_MB}MB: graph, results and indexes in the main segment)" || echo "4 kB pages (HUGE=0 or no huge pages to reserve)")"
  echo
} | tee "$REPORT"

t0=$(date +%s)
psql_pg -c "'CREATE EXTENSION gnn'"
rmat_tables "$SCALE" "$EDGES" "$DIM" "$SEED"
LOADED=$(psql_pg -c "\"SELECT nodes || ' nodes, ' || edges || ' arcs' FROM gnn.load_graph('b', 'edges', nodes => 'nodes', features => 'feat', label => 'label', split => 'split', undirected => true, skip_dangling => true)\"")
echo "- graph: $LOADED ($(( $(date +%s) - t0 )) s to generate and load)" | tee -a "$REPORT"

t1=$(date +%s)
psql_pg -c "\"SELECT gnn.train('b', model => 'graphsage', name => 'sage', hidden => 64, layers => 2, epochs => 1, seed => 1,
  device => 'cpu', options => '{\\\"fanouts\\\": [10, 5]}', wait => true)\"" >/dev/null
echo "- GraphSAGE: $(( $(date +%s) - t1 )) s to train (1 epoch) and share its results" | tee -a "$REPORT"
t1=$(date +%s)
psql_pg -c "\"SELECT gnn.train('b', model => 'node2vec', name => 'n2v', epochs => 1, seed => 1,
  options => '{\\\"dim\\\": 64, \\\"walk_length\\\": 10, \\\"window\\\": 5, \\\"walks_per_node\\\": 2}', wait => true)\"" >/dev/null
echo "- node2vec: $(( $(date +%s) - t1 )) s to train (1 epoch)" | tee -a "$REPORT"

# the indexes: asked for by a first call, built in the background
t1=$(date +%s)
psql_pg -c "\"SELECT count(*) FROM gnn.similar('sage', 1, 10)\"" >/dev/null
psql_pg -c "\"SELECT count(*) FROM gnn.recommend('n2v', 1, 10)\"" >/dev/null
for _ in $(seq 1 1200); do
  pending=$(psql_pg -c "\"SELECT count(*) FROM gnn.cache WHERE kind = 'embedding' AND (index = 'building' OR link_index = 'building')\"")
  [ "$pending" = 0 ] && break
  sleep 1
done
psql_pg -c "\"SELECT model || ': ' || nodes || ' x ' || dim || ' (' || pg_size_pretty(bytes) || '), index ' || index || ', dot index ' || link_index || coalesce(' (' || pg_size_pretty(index_bytes) || ', built in ' || round(index_seconds::numeric, 1) || ' s)', '') FROM gnn.cache WHERE kind = 'embedding' ORDER BY model\"" | sed 's/^/- /' | tee -a "$REPORT"
echo "- $(( $(date +%s) - t1 )) s from the first calls to the indexes ready" | tee -a "$REPORT"

# recall of the index against the exact scan, 200 nodes
psql_pg -c "\"SELECT 'recall@10 of gnn.similar against exact => true, 200 nodes: ' || round(avg(hit)::numeric, 4) FROM (
  SELECT (e.id IN (SELECT s.id FROM gnn.similar('sage', q.id, 10) s))::int AS hit
  FROM (SELECT id FROM nodes ORDER BY hashint4(id * 13) LIMIT 200) q, gnn.similar('sage', q.id, 10, exact => true) e) t\"" \
  | sed 's/^/- /' | tee -a "$REPORT"

{
  echo
  echo "| call | connections | latency (pgbench, per call) | load average before |"
  echo "|---|---|---|---|"
} | tee -a "$REPORT"

bench_sql() { # name sql...
  printf '\\set id random(0, %d)\n%s\n' "$(( N - 11 ))" "$2" > "$DIR/$1.sql"
  chown postgres "$DIR/$1.sql"
}
# a pgbench thread per client: with -C a thread opens each connection before
# its clients' next transactions, so fewer threads than clients would count
# other clients' connection times into a call's latency (8 clients on 2
# threads: p50 49-58 ms where a thread each measured 26 ms, at the same tps)
run() { # label script flags calls-per-client
  local l; l=$(load)
  rm -f "$DIR"/lat.*
  su postgres -s /bin/bash -c "cd '$DIR' && '$PG_BINDIR/pgbench' -n $3 -c $CLIENTS -j $CLIENTS -t $4 -l --log-prefix=lat -f $2.sql -h '$DIR' -p $PORT postgres" > "$DIR/pgbench.out" 2>&1 || { cat "$DIR/pgbench.out"; exit 1; }
  STATS=$(cat "$DIR"/lat.* | awk '{print $3 / 1000}' | sort -n | awk '{a[NR]=$1} END {printf "p50 %.1f ms, p90 %.1f ms, p99 %.1f ms, max %.1f ms (n=%d)", a[int((NR+1)/2)], a[int(NR*0.9+0.999)], a[int(NR*0.99+0.999)], a[NR], NR}')
  echo "| $1 | $([ -n "$3" ] && echo "new per call" || echo persistent) | $STATS | $l |" | tee -a "$REPORT"
}

bench_sql similar "SELECT count(*) FROM gnn.similar('sage', :id, 10);"
bench_sql similar_exact "SELECT count(*) FROM gnn.similar('sage', :id, 10, exact => true);"
bench_sql recommend "SELECT count(*) FROM gnn.recommend('n2v', :id, 10);"
bench_sql embedding "SELECT array_length(gnn.embedding('sage', :id), 1);"
bench_sql predict1 "SELECT count(*) FROM gnn.predict('sage', ARRAY[:id]::bigint[]);"
bench_sql predict10 "SELECT count(*) FROM gnn.predict('sage', ARRAY[:id, :id + 1, :id + 2, :id + 3, :id + 4, :id + 5, :id + 6, :id + 7, :id + 8, :id + 9]::bigint[]);"

psql_pg -c "\"SELECT count(*) FROM gnn.predict('sage', ARRAY[1]::bigint[])\"" >/dev/null
run "gnn.similar(model, node, 10)" similar "" "$CALLS"
run "gnn.similar(model, node, 10)" similar "-C" "$CALLS"
run "gnn.recommend(model, node, 10)" recommend "" "$CALLS"
run "gnn.recommend(model, node, 10)" recommend "-C" "$CALLS"
run "first gnn.embedding of 1 node in a new session" embedding "-C" "$FIRST_CALLS"
run "first gnn.predict of 1 node in a new session" predict1 "-C" "$FIRST_CALLS"
run "first gnn.predict of 10 nodes in a new session" predict10 "-C" "$FIRST_CALLS"
run "baseline: gnn.similar(model, node, 10, exact => true)" similar_exact "" "$(( CALLS / 4 ))"

# readers while a training job runs on the same graph
run "gnn.similar(model, node, 10), idle (reference for the next row)" similar "" "$CALLS"
job=$(psql_pg -c "\"SELECT gnn.train('b', model => 'graphsage', name => 'busy', hidden => 64, layers => 2, epochs => 50, seed => 2, device => 'cpu', options => '{\\\"fanouts\\\": [10, 5]}')\"")
sleep 5
run "gnn.similar(model, node, 10), while a training job runs" similar "" "$CALLS"
psql_pg -c "\"SELECT gnn.cancel($job)\"" >/dev/null || true
psql_pg -c "\"SELECT 'cache: ' || string_agg(model || ' ' || kind || ': hits ' || hits || ', misses ' || misses || coalesce(', index calls ' || index_calls, '') || coalesce(', last ' || least(calls, 128) || ' calls mean ' || round(mean_ms::numeric, 1) || ' ms, p99 ' || round(p99_ms::numeric, 1) || ' ms', ''), '; ') FROM gnn.cache\"" | sed 's/^/- /' | tee -a "$REPORT"
echo "- total $(( $(date +%s) - t0 )) s; load average at the end $(load)" | tee -a "$REPORT"
