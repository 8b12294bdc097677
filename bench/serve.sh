#!/usr/bin/env bash
# bench/serve.sh: inference served to applications, on an R-MAT graph of
# 2^SCALE nodes and EDGES undirected edges (2 x EDGES arcs) with DIM-dim
# features, a GraphSAGE model (hidden 128, 2 layers) trained for one epoch.
#
# Measures, each in a new session (psql or pgbench -C: a connection per call,
# as a connection pool hands out):
#   - training time and the shared full-graph pass the worker runs after it
#     (gnn.models.metrics->'seconds', gnn.jobs.results_seconds);
#   - with nothing cached (gnn.cache_drop): the first gnn.embedding of 1 node
#     and gnn.predict of 10 nodes (exact k-hop inference), CALLS calls each,
#     statement time from psql \timing, and the size of each neighbourhood;
#   - the same calls answered from the shared results;
#   - gnn.similar(model, node, 10) once the embeddings are shared: pgbench,
#     CLIENTS concurrent sessions, SIMILAR calls in all, a new connection per
#     call; p50 / p99 / max;
#   - baseline from the same run: the full pass a session ran before the
#     shared cache (one gnn.similar with nothing cached).
# Writes a markdown report to stdout and bench/results/serve-<UTC>.md.
#
#   bash bench/serve.sh                          # SCALE=20 EDGES=10000000 DIM=64
#   SCALE=17 EDGES=1000000 bash bench/serve.sh   # a quick run
set -euo pipefail
source "$(dirname "$0")/../test/lib.sh"
BENCH="$REPO_ROOT/bench"
SCALE=${SCALE:-20}
EDGES=${EDGES:-10000000}
DIM=${DIM:-64}
CALLS=${CALLS:-20}
CLIENTS=${CLIENTS:-8}
SIMILAR=${SIMILAR:-200}
THREADS=${THREADS:-2}
SEED=${SEED:-42}

source "$BENCH/rmat_tables.sh"
mkdir -p "$BENCH/results"
rmat_build

make_workdir DIR
PORT=$(free_port)
cleanup() { pg_stop "$DIR"; rm -rf "$DIR" "$RMAT"; }
trap cleanup EXIT
pg_start "$DIR" "$PORT" "shared_buffers = 1GB" "gnn.max_graph_memory = 8GB" "gnn.max_cache_memory = 4GB" \
  "gnn.threads = $THREADS" "max_wal_size = 8GB" "autovacuum = off" "max_connections = 50"
psql_pg() { su postgres -s /bin/bash -c "'$PG_BINDIR/psql' -X -q -At -h '$DIR' -p $PORT -d postgres -v ON_ERROR_STOP=1 $*"; }

STAMP=$(date -u +%Y%m%dT%H%M%SZ)
REPORT="$BENCH/results/serve-$STAMP.md"
COMMIT=$(git -C "$REPO_ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)
{
  echo "# Serving inference, $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo
  echo "- commit: $COMMIT; command: \`SCALE=$SCALE EDGES=$EDGES DIM=$DIM CALLS=$CALLS CLIENTS=$CLIENTS SIMILAR=$SIMILAR THREADS=$THREADS bash bench/serve.sh\`"
  echo "- machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(free -g | awk '/Mem:/{print $2}') GiB RAM; $(pg_config --version); load average at start $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "- server: gnn.threads=$THREADS, fsync=off; each call in a new session"
  echo
} | tee "$REPORT"

t0=$(date +%s)
psql_pg -c "'CREATE EXTENSION gnn'"
rmat_tables "$SCALE" "$EDGES" "$DIM" "$SEED"
LOAD=$(psql_pg -c "\"SELECT nodes || ' nodes, ' || edges || ' arcs' FROM gnn.load_graph('b', 'edges', nodes => 'nodes', features => 'feat', label => 'label', split => 'split', undirected => true, skip_dangling => true)\"")
echo "- graph: $LOAD ($(( $(date +%s) - t0 )) s to generate and load)" | tee -a "$REPORT"

JOB=$(psql_pg -c "\"SELECT gnn.train('b', model => 'graphsage', name => 'b', hidden => 128, layers => 2, epochs => 1, seed => 1, device => 'cpu', wait => true)\"")
# the worker computes the shared results after the job is reported (#44): wait for them
wait_job_results "$JOB"
psql_pg -c "\"SELECT 'training ' || round((m.metrics->>'seconds')::numeric, 1) || ' s (1 epoch); shared full-graph pass after it (embeddings + probabilities) ' || round(j.results_seconds::numeric, 1) || ' s' FROM gnn.models m, gnn.jobs j WHERE m.name = 'b' AND j.id = $JOB\"" | sed 's/^/- /' | tee -a "$REPORT"
psql_pg -c "\"SELECT 'shared results: ' || string_agg(kind || ' ' || nodes || ' x ' || dim || ' (' || pg_size_pretty(bytes) || ')', ', ') FROM gnn.cache\"" | sed 's/^/- /' | tee -a "$REPORT"

# nodes to ask about: a deterministic sample over all degrees
NODES=$(psql_pg -c "\"SELECT string_agg(id::text, ' ') FROM (SELECT id FROM nodes WHERE id < $(( (1 << SCALE) - 10 )) ORDER BY hashint4(id * 7) LIMIT $CALLS) x\"")
timed() { # SQL -> ms of its last statement (psql \timing)
  su postgres -s /bin/bash -c "'$PG_BINDIR/psql' -X -q -h '$DIR' -p $PORT -d postgres -v ON_ERROR_STOP=1" <<SQL | grep -E '^Time:' | tail -1 | awk '{print $2}'
\\timing on
$1
SQL
}
stats() { sort -n | awk '{a[NR]=$1} END {printf "median %.1f ms, p90 %.1f ms, max %.1f ms (n=%d)", a[int((NR+1)/2)], a[int(NR*0.9+0.999)], a[NR], NR}'; }
run_calls() { # label kind(embedding|predict)
  local out="$DIR/lat.$1"; : > "$out"
  for n in $NODES; do
    if [ "$2" = embedding ]; then
      timed "SELECT array_length(gnn.embedding('b', $n), 1);" >> "$out"
    else
      timed "SELECT count(*) FROM gnn.predict('b', ARRAY[$(seq -s, "$n" $((n + 9)))]::bigint[]);" >> "$out"
    fi
  done
  echo "| $1 | $(stats < "$out") |" | tee -a "$REPORT"
}

{
  echo
  echo "| call, each in a new session | latency |"
  echo "|---|---|"
} | tee -a "$REPORT"
psql_pg -c "\"SELECT gnn.cache_drop('b')\"" >/dev/null
run_calls "gnn.embedding of 1 node, nothing cached (exact k-hop)" embedding
run_calls "gnn.predict of 10 nodes, nothing cached (exact k-hop)" predict
[ "$(psql_pg -c "'SELECT count(*) FROM gnn.cache'")" = 0 ] || echo "(some calls filled the shared results: their neighbourhood was over gnn.khop_max_fraction)" | tee -a "$REPORT"
FULL=$(timed "SELECT count(*) FROM gnn.similar('b', 1, 10);")
echo "| baseline: one full-graph pass (first gnn.similar with nothing cached; what every new session paid before) | $FULL ms |" | tee -a "$REPORT"
psql_pg -c "\"SELECT count(*) FROM gnn.predict('b')\"" >/dev/null    # shares the probabilities too
run_calls "gnn.embedding of 1 node, shared results" embedding
run_calls "gnn.predict of 10 nodes, shared results" predict

# gnn.similar from new sessions: pgbench, a connection per call
cat > "$DIR/similar.sql" <<SQL
\\set id random(0, $(( (1 << SCALE) - 1 )))
SELECT count(*) FROM gnn.similar('b', :id, 10);
SQL
chown postgres "$DIR/similar.sql"
per=$(( SIMILAR / CLIENTS ))
similar_run() { # label pgbench-flags
  rm -f "$DIR"/sim.*
  su postgres -s /bin/bash -c "cd '$DIR' && '$PG_BINDIR/pgbench' -n $2 -c $CLIENTS -j 2 -t $per -l --log-prefix=sim -f similar.sql -h '$DIR' -p $PORT postgres" > "$DIR/pgbench.out" 2>&1
  cat "$DIR"/sim.* | awk '{print $3 / 1000}' > "$DIR/lat.similar"
  SORTED=$(sort -n "$DIR/lat.similar" | awk '{a[NR]=$1} END {printf "p50 %.1f ms, p99 %.1f ms, max %.1f ms (n=%d)", a[int((NR+1)/2)], a[int(NR*0.99+0.999)], a[NR], NR}')
  echo "| gnn.similar(model, node, 10), shared embeddings, $1 | $SORTED |" | tee -a "$REPORT"
  grep -E 'failed' "$DIR/pgbench.out" | sed 's/^/    /' | tee -a "$REPORT" || true
}
similar_run "$CLIENTS new sessions at once, $per calls each (pgbench)" ""
sed -i '1i SET gnn.threads = 1;' "$DIR/similar.sql"
similar_run "$CLIENTS new sessions at once, $per calls each, gnn.threads = 1 in them (pgbench)" ""
similar_run "$CLIENTS concurrent clients, a new connection per call, gnn.threads = 1 (pgbench -C, connection time included)" "-C"
psql_pg -c "\"SELECT 'cache: ' || string_agg(kind || ' hits ' || hits, ', ') FROM gnn.cache\"" | sed 's/^/- /' | tee -a "$REPORT"
echo "- total $(( $(date +%s) - t0 )) s; load average at the end $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$REPORT"
