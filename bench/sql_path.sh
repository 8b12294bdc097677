#!/usr/bin/env bash
# bench/sql_path.sh: the SQL path against the core alone (issue #4, "Speed").
#  1. Overhead of gnn.train (background worker, catalog writes) over the core
#     CLI driver on the same job: Cora GCN, 200 full-batch epochs, same thread
#     count, same hyper-parameters; median of RUNS.
#  2. gnn.embed rows/s beside COPY of the same rows into an empty table with
#     the same primary key; median of RUNS.
# Writes bench/results/sql_path-<UTC stamp>.md.
#   RUNS=5 THREADS=1 NODES=200000 bash bench/sql_path.sh
set -euo pipefail
source "$(dirname "$0")/../test/lib.sh"
cd "$REPO_ROOT"
RUNS=${RUNS:-5}
THREADS=${THREADS:-1}
NODES=${NODES:-200000}
DATA=$(gnn_data_dir) || { echo "sql_path: ../shared/data not found; skipping the Cora part" >&2; DATA=""; }
mkdir -p bench/bin bench/results
cc -std=gnu11 -O2 -fno-trapping-math -fopenmp -Isrc/core -o bench/bin/gnn_train_cli bench/gnn_train_cli.c src/core/*/*.c \
   -lopenblas -lmetis $(test -f /usr/include/liburing.h && echo -luring || true) -lgomp -lpthread -lm -ldl
STAMP=$(date -u +%Y%m%dT%H%M%SZ)
REPORT=bench/results/sql_path-$STAMP.md
median() { sort -n | awk '{a[NR]=$1} END {if (NR%2) printf "%.1f\n", a[(NR+1)/2]; else printf "%.1f\n", (a[NR/2]+a[NR/2+1])/2}'; }

make_workdir DIR
PORT=$(free_port)
cleanup() { pg_stop "$DIR"; rm -rf "$DIR"; }
trap cleanup EXIT
pg_start "$DIR" "$PORT" "gnn.threads = $THREADS" "shared_buffers = 1GB" "max_wal_size = 4GB"
psql_pg() { su postgres -s /bin/bash -c "'$PG_BINDIR/psql' -X -q -At -h '$DIR' -p $PORT -d postgres -v ON_ERROR_STOP=1 $*"; }
# ms of one statement, from psql's \timing
time_sql() { psql_pg -c "'\\timing on'" -c "\"$1\"" | sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p' | tail -1; }

{
  echo "# SQL path vs. core driver, $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo
  echo "- commit: $(git rev-parse --short HEAD); command: \`RUNS=$RUNS THREADS=$THREADS NODES=$NODES bash bench/sql_path.sh\`"
  echo "- machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(free -g | awk '/Mem:/{print $2}') GiB RAM"
  echo
} | tee "$REPORT"
psql_pg -c "'CREATE EXTENSION gnn'" >/dev/null

if [ -n "$DATA" ]; then
  psql_pg >/dev/null <<SQL
CREATE TABLE papers (id int PRIMARY KEY, label int, split text);
CREATE TABLE cites (src int, dst int);
CREATE TABLE words (id int, feature int, value real);
\copy papers FROM '$DATA/cora/nodes.csv' WITH (FORMAT csv, HEADER true)
\copy cites FROM '$DATA/cora/edges.csv' WITH (FORMAT csv, HEADER true)
\copy words FROM '$DATA/cora/features_coo.csv' WITH (FORMAT csv, HEADER true)
SELECT gnn.load_graph('cora', 'cites', nodes => 'papers', label => 'label', split => 'split',
                      sparse_features => 'words', undirected => true);
SQL
  cli=(); sqlt=()
  for r in $(seq 1 "$RUNS"); do
    # the CLI's own figure for the training loop (CSV loading excluded)
    secs=$(bench/bin/gnn_train_cli --data "$DATA/cora" --model gcn --epochs 200 --seeds 1 --threads "$THREADS" |
           sed -n 's/^time per run \([0-9.]*\) s.*/\1/p')
    cli+=("$(echo "$secs * 1000" | bc)")
    sqlt+=("$(time_sql "SELECT gnn.train('cora', model => 'gcn', name => 'bench', hidden => 16, epochs => 200, lr => 0.01, weight_decay => 5e-4, dropout => 0.5, device => 'cpu', seed => $r, wait => true)")")
  done
  c=$(printf '%s\n' "${cli[@]}" | median)
  s=$(printf '%s\n' "${sqlt[@]}" | median)
  {
    echo "## gnn.train vs. the core CLI: Cora GCN, 200 epochs, $THREADS thread(s)"
    echo
    echo "| path | median ms | runs (ms) |"
    echo "|---|---:|---|"
    echo "| core CLI (\`gnn_train_cli --data cora --model gcn --epochs 200 --seeds 1\`): its training loop alone | $c | ${cli[*]} |"
    echo "| \`gnn.train(..., wait => true)\` (worker start, catalog, model row included) | $s | ${sqlt[*]} |"
    echo
    echo "Overhead of the SQL path: $(echo "scale=1; ($s - $c) * 100 / $c" | bc)%"
    echo
  } | tee -a "$REPORT"
fi

# gnn.embed against COPY of the same rows
psql_pg >/dev/null <<SQL
SELECT setseed(0.3);
CREATE TABLE en AS SELECT id, (id % 4)::int AS label,
  CASE WHEN id % 10 = 0 THEN 'train' WHEN id % 10 = 1 THEN 'val' ELSE 'test' END AS split,
  ARRAY[(id % 4)::real, random()::real, random()::real, random()::real, random()::real, random()::real,
        random()::real, random()::real] AS feat
  FROM generate_series(0, $NODES - 1) id;
CREATE TABLE ee AS SELECT id AS src, (id * 7919 + k) % $NODES AS dst FROM generate_series(0, $NODES - 1) id,
  generate_series(1, 5) k;
SELECT gnn.load_graph('big', 'ee', nodes => 'en', features => 'feat', label => 'label', split => 'split',
                      undirected => true);
SELECT gnn.train('big', model => 'graphsage', name => 'embm', hidden => 64, epochs => 1, device => 'cpu', wait => true);
SELECT gnn.embed('embm', 'warm_emb');
COPY warm_emb TO '$DIR/emb.copy';
COPY warm_emb TO '$DIR/emb.bin' WITH (FORMAT binary);
SQL
emb=(); cp=(); cpb=()
for r in $(seq 1 "$RUNS"); do
  psql_pg -c "'DROP TABLE IF EXISTS t_embed, t_copy'" >/dev/null
  emb+=("$(time_sql "SELECT gnn.embed('embm', 't_embed')")")
  psql_pg -c "'CREATE TABLE t_copy (id bigint PRIMARY KEY, embedding real[])'" >/dev/null
  cp+=("$(time_sql "COPY t_copy FROM '$DIR/emb.copy'")")
  psql_pg -c "'DROP TABLE t_copy'" -c "'CREATE TABLE t_copy (id bigint PRIMARY KEY, embedding real[])'" >/dev/null
  cpb+=("$(time_sql "COPY t_copy FROM '$DIR/emb.bin' WITH (FORMAT binary)")")
done
e=$(printf '%s\n' "${emb[@]}" | median)
c=$(printf '%s\n' "${cp[@]}" | median)
cb=$(printf '%s\n' "${cpb[@]}" | median)
{
  echo "## gnn.embed vs. COPY: $NODES rows of (id bigint PRIMARY KEY, embedding real[64])"
  echo
  echo "| statement | median ms | rows/s | runs (ms) |"
  echo "|---|---:|---:|---|"
  echo "| \`gnn.embed('embm', 't_embed')\` (creates the table; inference cached) | $e | $(echo "$NODES * 1000 / $e" | bc) | ${emb[*]} |"
  echo "| \`COPY t_copy FROM file\` (text) into an empty table with the same primary key | $c | $(echo "$NODES * 1000 / $c" | bc) | ${cp[*]} |"
  echo "| \`COPY t_copy FROM file WITH (FORMAT binary)\`, same table | $cb | $(echo "$NODES * 1000 / $cb" | bc) | ${cpb[*]} |"
  echo
  echo "gnn.embed speed as a fraction of COPY: $(echo "scale=2; $c / $e" | bc) (text), $(echo "scale=2; $cb / $e" | bc) (binary)"
} | tee -a "$REPORT"
