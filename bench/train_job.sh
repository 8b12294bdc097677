#!/usr/bin/env bash
# bench/train_job.sh: what a minibatch training job pays beside its training
# passes (issue #44), on the issue's two jobs:
#   - homo: GraphSAGE on a 1M-node R-MAT graph (bench/rmat.c: SCALE 20,
#     EDGES 10M undirected = 20M arcs, 64-dim features), 100k training,
#     100k validation and 100k test nodes (by a hash of the id), fan-outs
#     [10, 5], hidden 128, 2 epochs;
#   - hetero: heterogeneous GraphSAGE on the shop schema (bench/schema_gen.sh:
#     100k customers, 10k products, 1M reviews: 1.1M nodes, 4M arcs), hidden
#     128, fan-outs [10, 10], batch 1024, 3 epochs.
# For each: gnn.train(..., wait => true)'s wall time against the sum of its
# training passes (gnn.training_log: each epoch's seconds less its
# evaluation), each epoch's evaluation, the test pass, the model's
# peak_memory_bytes and where it went against gnn.estimate's total (the
# job's working set), and the results computed after the job
# (gnn.jobs.results_seconds), and the rest of the wall time (the worker's
# start, the job's setup, its commits).  Goals (#44): wall <= 1.25x the
# passes, epoch 1's evaluation <= 1.5x a later epoch's, peak <= 2x the
# estimate.
# Writes bench/results/train_job-<UTC>.md.
#   bash bench/train_job.sh                    # both jobs
#   JOBS=homo bash bench/train_job.sh          # one of them
#   SCALE=17 EDGES=1000000 CUSTOMERS=10000 PRODUCTS=1000 REVIEWS=100000 bash bench/train_job.sh   # quick
#   RUNS=5 JOBS=homo bash bench/train_job.sh   # each job 5 times (a new worker each, on the same
#                                              # server), and the medians: single jobs vary 5-10% here
set -euo pipefail
source "$(dirname "$0")/../test/lib.sh"
BENCH="$REPO_ROOT/bench"
source "$BENCH/rmat_tables.sh"
JOBS=${JOBS:-homo hetero}
SCALE=${SCALE:-20}
EDGES=${EDGES:-10000000}
DIM=${DIM:-64}
CUSTOMERS=${CUSTOMERS:-100000}
PRODUCTS=${PRODUCTS:-10000}
REVIEWS=${REVIEWS:-1000000}
THREADS=${THREADS:-2}
RUNS=${RUNS:-1}
EXTRA=${EXTRA:-}            # more options for both jobs, e.g. '"evaluation": "full"' (homo), '"eval_nodes": 10000'

mkdir -p "$BENCH/results"
make_workdir DIR
PORT=$(free_port)
cleanup() { if [ -n "${KEEP:-}" ]; then echo "kept: $DIR (port $PORT)" >&2; else pg_stop "$DIR"; rm -rf "$DIR" "$RMAT"; fi; }
trap cleanup EXIT
pg_start "$DIR" "$PORT" "shared_buffers = 1GB" "gnn.max_graph_memory = 12GB" "gnn.max_cache_memory = 4GB" \
  "max_wal_size = 8GB" "autovacuum = off" "gnn.threads = $THREADS"
psql_pg() { su postgres -s /bin/bash -c "'$PG_BINDIR/psql' -X -q -At -h '$DIR' -p $PORT -d postgres -v ON_ERROR_STOP=1 $*"; }
STAMP=$(date -u +%Y%m%dT%H%M%SZ)
REPORT="$BENCH/results/train_job-$STAMP.md"
COMMIT=$(git -C "$REPO_ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)
DIRTY=$(git -C "$REPO_ROOT" status --porcelain --untracked-files=no 2>/dev/null | grep -q . && echo " (with uncommitted changes)" || true)
psql_pg -c "'CREATE EXTENSION gnn'"

# settle: what the steps before left running is over - the last job's worker gone (its
# results pass reported, it still frees its memory and exits), the files they wrote
# (the graph store, the tables) on disk - so that each job is measured on an idle machine
settle() {
  for _ in $(seq 1 600); do pgrep -f "gnn training job" >/dev/null || break; sleep 0.1; done
  sync
}

# job NAME GRAPH MODEL EPOCHS OPTIONS: one job, its report rows
job() {
  local name=$1 graph=$2 model=$3 epochs=$4 opts=$5 t0 t1 client wall id out
  settle
  # the statement's own time (clock_timestamp around it, in the session), and the client's
  # (starting psql and connecting included: about 0.1-0.2 s here)
  t0=$(date +%s.%N)
  out=$(psql_pg <<SQL
SET client_min_messages = warning;
SELECT set_config('bench.t0', clock_timestamp()::text, false) \\gset
SELECT gnn.train('$graph', model => '$model', name => '$name', hidden => 128, epochs => $epochs, seed => 1,
                 device => 'cpu', wait => true, options => '$opts') AS id \\gset
SELECT :id || ' ' || round(extract(epoch FROM clock_timestamp() - current_setting('bench.t0')::timestamptz)::numeric, 3);
SQL
)
  t1=$(date +%s.%N)
  read -r id wall <<< "$out"
  client=$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.2f", b - a}')
  # the results after the job: waited for here (not part of the job's time)
  wait_job_results "$id"
  psql_pg <<SQL
WITH l AS (SELECT epoch, seconds, coalesce(eval_seconds, 0) AS ev FROM gnn.training_log WHERE job = $id),
m AS (SELECT metrics FROM gnn.models WHERE name = '$name'),
e AS (SELECT bytes FROM gnn.estimate('$graph', '$model', 128, 2, '$opts', 'cpu') WHERE item = 'total host')
SELECT format(E'| %s | %s | %s (%s) | %s | **%s** | %s | %s | **%s** | %s | %s | %s | **%s** | %s | %s | %s |',
  '$name', (SELECT count(*) FROM l), $wall, $client, round((SELECT sum(seconds - ev) FROM l)::numeric, 2),
  round(($wall / (SELECT sum(seconds - ev) FROM l))::numeric, 2),
  (SELECT string_agg(round(ev::numeric, 2)::text, ' / ' ORDER BY epoch) FROM l),
  round(((SELECT metrics->>'eval_seconds' FROM m)::numeric - (SELECT sum(ev) FROM l)::numeric), 2),
  CASE WHEN (SELECT count(*) FROM l) > 1 THEN round(((SELECT ev FROM l WHERE epoch = 1) /
    nullif((SELECT avg(ev) FROM l WHERE epoch > 1), 0))::numeric, 2)::text ELSE '-' END,
  pg_size_pretty((SELECT (metrics->>'peak_memory_bytes')::bigint FROM m)),
  (SELECT metrics->'peak_memory' FROM m), pg_size_pretty((SELECT bytes FROM e)),
  round(((SELECT (metrics->>'peak_memory_bytes')::numeric FROM m) / (SELECT bytes FROM e)), 2),
  round((SELECT results_seconds FROM gnn.jobs WHERE id = $id)::numeric, 2),
  round((SELECT (metrics->>'test_acc')::numeric FROM m), 3),
  round(($wall - (SELECT sum(seconds) FROM l) -
    ((SELECT metrics->>'eval_seconds' FROM m)::numeric - (SELECT sum(ev) FROM l)::numeric))::numeric, 3));
SQL
  # (the next run's model of the same name is then the only one; its results leave the cache)
  [ "$RUNS" -gt 1 ] && psql_pg -c "\"SELECT gnn.drop_model('$name')\"" >/dev/null
  return 0
}

ROWS=""
for j in $JOBS; do
  case $j in
    homo)
      rmat_build
      rmat_tables "$SCALE" "$EDGES" "$DIM" 42
      # 10% of the nodes in each split (rmat_tables' split is 10/3/3 of 16)
      psql_pg -c "\"UPDATE nodes SET split = CASE WHEN hashint4(id + 7) & 1023 < 102 THEN 'train'
        WHEN hashint4(id + 7) & 1023 < 204 THEN 'val' WHEN hashint4(id + 7) & 1023 < 307 THEN 'test' END\""
      HOMO_GRAPH=$(psql_pg -F "' / '" -c "\"SELECT nodes, edges, feature_dim FROM gnn.load_graph('r', 'edges', nodes => 'nodes',
        features => 'feat', label => 'label', split => 'split', undirected => true, skip_dangling => true)\"")
      for _ in $(seq 1 "$RUNS"); do
        ROWS+=$(job homo_sage r graphsage 2 "{\"fanouts\": [10, 5]${EXTRA:+, $EXTRA}}")$'\n'
      done
      ;;
    hetero)
      su postgres -s /bin/bash -c "cd /tmp && CUSTOMERS=$CUSTOMERS PRODUCTS=$PRODUCTS REVIEWS=$REVIEWS SEED=42 VISITS=0 \
        bash '$BENCH/schema_gen.sh' -h '$DIR' -p $PORT -d postgres" >/dev/null
      HETERO_GRAPH=$(psql_pg -F "' / '" <<'SQL'
SELECT nodes, edges FROM gnn.load_schema_graph('shop', ARRAY['customers', 'products', 'reviews', 'categories']::regclass[],
  target => 'customers', label => 'segment', split => 'split',
  options => '{"time": {"reviews": "created_at", "customers": "snapshot_at"}, "exclude": {"customers": ["churn", "spend"]}}');
SQL
)
      for _ in $(seq 1 "$RUNS"); do
        ROWS+=$(job hetero_sage shop hetero_sage 3 "{\"fanouts\": [10, 10], \"batch_size\": 1024${EXTRA:+, $EXTRA}}")$'\n'
      done
      ;;
  esac
done

{
  echo "# bench/train_job.sh, $STAMP"
  echo
  # (the server runs the installed gnn.so, which make install writes: say whether it is this tree's build)
  SO="$(pg_config --pkglibdir)/gnn.so"
  if [ -f "$REPO_ROOT/gnn.so" ] && cmp -s "$SO" "$REPO_ROOT/gnn.so"; then SO_NOTE="the installed gnn.so is this tree's build"
  else SO_NOTE="the installed gnn.so ($(date -u -r "$SO" '+%Y-%m-%d %H:%M UTC' 2>/dev/null || echo missing)) is NOT this tree's build: make install first"; fi
  echo "Commit $COMMIT$DIRTY ($SO_NOTE); $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GB", $2 / 1048576}' /proc/meminfo); gnn.threads $THREADS; load average $(cut -d' ' -f1-3 /proc/loadavg)."
  echo "Command: \`JOBS='$JOBS' SCALE=$SCALE EDGES=$EDGES DIM=$DIM CUSTOMERS=$CUSTOMERS PRODUCTS=$PRODUCTS REVIEWS=$REVIEWS EXTRA='$EXTRA' RUNS=$RUNS bash bench/train_job.sh\`"
  [ -n "${HOMO_GRAPH:-}" ] && echo "R-MAT graph (nodes / arcs / features): $HOMO_GRAPH; GraphSAGE, fan-outs [10, 5], batch 512, hidden 128, 2 epochs."
  [ -n "${HETERO_GRAPH:-}" ] && echo "Shop schema (nodes / arcs): $HETERO_GRAPH; heterogeneous GraphSAGE, fan-outs [10, 10], batch 1024, hidden 128, 3 epochs."
  echo
  echo "| job | epochs | gnn.train wall s (client's, with psql's start) | training passes s | wall / passes (goal <= 1.25) | evaluation per epoch s | test pass s | epoch 1 / later evaluation (goal <= 1.5) | peak memory | where (bytes) | gnn.estimate total host | peak / estimate (goal <= 2) | results after the job s | test acc | rest s (wall less every epoch and the test pass: the worker's start, setup, commits) |"
  echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
  printf "%s" "$ROWS"
  if [ "$RUNS" -gt 1 ]; then
    # the medians of wall / passes and of epoch 1 / later evaluation, per job (columns 6 and 9)
    echo
    printf "%s" "$ROWS" | awk -F'|' '
      function med(a, n,   i, j, t) { for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
        return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
      NF > 10 { name = $2; gsub(/[ *]/, "", name); r = $6; e = $9; gsub(/[ *]/, "", r); gsub(/[ *]/, "", e)
        k = ++n[name]; W[name, k] = r; E[name, k] = e; over[name] += (r > 1.25); eover[name] += (e > 1.5) }
      END { for (name in n) { delete a; for (i = 1; i <= n[name]; i++) a[i] = W[name, i]; mw = med(a, n[name])
          delete a; for (i = 1; i <= n[name]; i++) a[i] = E[name, i]; me = med(a, n[name])
          printf "%s, %d runs: wall / passes median %.2f (%d over 1.25); epoch 1 / later median %.2f (%d over 1.5)\n",
            name, n[name], mw, over[name], me, eover[name] } }'
  fi
} | tee "$REPORT"
