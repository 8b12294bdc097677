#!/usr/bin/env bash
# bench/fullbatch.sh: full-batch Cora GCN with dense 1433-dim real[] features
# (issue #13, "Full batch near its floor" and "Good behaviour on a shared
# server").
#  1. The core (bench/fullbatch_bench): ms per epoch (training step plus
#     evaluation) split into aggregation / dense products / the rest, against
#     the floor measured in the same run (the epoch's GEMMs alone), hidden 16
#     and 64 (the SQL default), 1 and 2 threads.
#  2. Through SQL: gnn.train(..., wait => true) on the same data, 200 epochs,
#     per-epoch ms from gnn.training_log (mean of seconds; compute and
#     evaluation split), gnn.threads = 1 and 0 (all cores).
#  3. Both again with BUSY (default 2) busy processes running: the default
#     thread count against 1, and the core with GNN_ADAPTIVE_THREADS=0 (a team
#     of the configured size whatever the load: the behaviour before).
#  4. The products-size minibatch step (bench/sample_bench, 10 batches) idle
#     and busy, 2 threads against 1 (SKIP_PRODUCTS=1 leaves it out).
# Writes bench/results/fullbatch-<UTC stamp>.md.
#   EPOCHS=200 BUSY=2 bash bench/fullbatch.sh
set -euo pipefail
source "$(dirname "$0")/../test/lib.sh"
cd "$REPO_ROOT"
EPOCHS=${EPOCHS:-200}
BUSY=${BUSY:-2}
DATA=$(gnn_data_dir) || { echo "fullbatch: ../shared/data not found: nothing to measure" >&2; exit 0; }
mkdir -p bench/bin bench/results
cc -std=gnu11 -O2 -fno-trapping-math -fopenmp -Isrc/core -o bench/bin/fullbatch_bench bench/fullbatch_bench.c src/core/*/*.c \
   -lopenblas -lmetis $(test -f /usr/include/liburing.h && echo -luring || true) -lgomp -lpthread -lm -ldl
[ "${SKIP_PRODUCTS:-0}" = 1 ] || cc -std=gnu11 -O2 -fno-trapping-math -fopenmp -Isrc/core -o bench/bin/sample_bench bench/sample_bench.c \
   src/core/*/*.c -lopenblas -lmetis $(test -f /usr/include/liburing.h && echo -luring || true) -lgomp -lpthread -lm -ldl
STAMP=$(date -u +%Y%m%dT%H%M%SZ)
REPORT=bench/results/fullbatch-$STAMP.md

BUSY_PIDS=()
busy_start() { for _ in $(seq 1 "$BUSY"); do (while :; do :; done) & BUSY_PIDS+=($!); done; sleep 1; }
busy_stop() { for p in "${BUSY_PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; wait "${BUSY_PIDS[@]}" 2>/dev/null || true; BUSY_PIDS=(); }

make_workdir DIR
PORT=$(free_port)
cleanup() { busy_stop; pg_stop "$DIR"; rm -rf "$DIR"; }
trap cleanup EXIT
pg_start "$DIR" "$PORT" "shared_buffers = 512MB"
psql_pg() { su postgres -s /bin/bash -c "GNN_DATA_DIR='$DATA' '$PG_BINDIR/psql' -X -q -At -h '$DIR' -p $PORT -d postgres -v ON_ERROR_STOP=1 $*"; }

{
  echo "# Full-batch Cora GCN with dense features against its floor, $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo
  echo "- commit: $(git rev-parse --short HEAD); command: \`EPOCHS=$EPOCHS BUSY=$BUSY bash bench/fullbatch.sh\`"
  echo "- machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(free -g | awk '/Mem:/{print $2}') GiB RAM; load before: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo
} | tee "$REPORT"

psql_pg >/dev/null <<'SQL'
CREATE EXTENSION gnn;
\getenv datadir GNN_DATA_DIR
\set nodes_file :datadir '/cora/nodes.csv'
\set edges_file :datadir '/cora/edges.csv'
\set feat_file :datadir '/cora/features.csv'
CREATE TABLE cora_nodes (id int PRIMARY KEY, label int, split text);
CREATE TABLE cora_edges (src int, dst int);
COPY cora_nodes FROM :'nodes_file' WITH (FORMAT csv, HEADER true);
COPY cora_edges FROM :'edges_file' WITH (FORMAT csv, HEADER true);
CREATE TABLE raw_lines (line text);
COPY raw_lines FROM :'feat_file' WITH (FORMAT text);
CREATE TABLE cora_feat AS
  SELECT n.id, n.label, n.split, f.x
  FROM cora_nodes n JOIN
       (SELECT split_part(line, ',', 1)::int AS id,
               string_to_array(substr(line, strpos(line, ',') + 1), ',')::real[] AS x
        FROM raw_lines WHERE line NOT LIKE 'id,%') f USING (id);
SELECT gnn.load_graph('cora', 'cora_edges', nodes => 'cora_feat', features => 'x',
                      label => 'label', split => 'split', undirected => true);
SQL

# one SQL run: "ms/epoch compute eval test_acc"
sql_run() { # threads hidden
  psql_pg -c "\"SET gnn.threads = $1\"" -c "\"SELECT gnn.train('cora', model => 'gcn', name => 'b', hidden => $2, epochs => $EPOCHS, device => 'cpu', seed => 1, wait => true)\"" >/dev/null
  psql_pg -c "\"SELECT round((1000 * avg(seconds))::numeric, 2), round((1000 * avg(compute_seconds))::numeric, 2), round((1000 * avg(eval_seconds))::numeric, 2), round(max(test_acc)::numeric, 3) FROM gnn.training_log WHERE job = (SELECT max(job) FROM gnn.training_log)\"" | tr '|' ' '
}

for mode in idle busy; do
  [ "$mode" = busy ] && busy_start
  {
    echo "## $mode$([ "$mode" = busy ] && echo " ($BUSY busy processes)")"
    echo
    echo '```'
    bench/bin/fullbatch_bench "$DATA/cora" "$EPOCHS" 3
    if [ "$mode" = busy ]; then
      echo "# the same with the team fixed at the configured count (GNN_ADAPTIVE_THREADS=0: the behaviour before)"
      GNN_ADAPTIVE_THREADS=0 bench/bin/fullbatch_bench "$DATA/cora" "$EPOCHS" 3 | grep threads
    fi
    echo '```'
    echo
    echo "| through SQL, $EPOCHS epochs | gnn.threads | ms per epoch | training step | evaluation | the rest (catalog, worker) | test accuracy |"
    echo "|---|---:|---:|---:|---:|---:|---:|"
  } | tee -a "$REPORT"
  for h in 16 64; do
    for t in 1 0; do
      read -r ms comp ev acc < <(sql_run "$t" "$h")
      echo "| GCN hidden $h | $t | $ms | $comp | $ev | $(echo "$ms - $comp - $ev" | bc) | $acc |" | tee -a "$REPORT"
    done
  done
  echo | tee -a "$REPORT"
  if [ "${SKIP_PRODUCTS:-0}" != 1 ]; then
    {
      echo '```'
      PREFETCH=0 bench/bin/sample_bench 2500000 30000000 100 10 | grep -E '^training|^graph'
      if [ "$mode" = busy ]; then
        echo "# GNN_ADAPTIVE_THREADS=0"
        GNN_ADAPTIVE_THREADS=0 PREFETCH=0 bench/bin/sample_bench 2500000 30000000 100 10 | grep -E '^training \(2'
      fi
      echo '```'
      echo
    } | tee -a "$REPORT"
  fi
  [ "$mode" = busy ] && busy_stop
done
echo "report: $REPORT"
