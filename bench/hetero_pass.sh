#!/usr/bin/env bash
# bench/hetero_pass.sh: the heterogeneous GraphSAGE training pass against
# PyG's (issue #44), in the same run, at equal threads, on the shop schema
# (bench/schema_gen.sh: CUSTOMERS customers, PRODUCTS products, REVIEWS
# reviews, 200 categories, seed 42, no visits; by default 1.1M nodes, 4M arcs):
# 2 layers, hidden 128, fan-outs [10, 10] per edge type, batch 1024, EPOCHS
# epochs, on the CPU, time-aware sampling off and on.
#  - gnn: gnn.train(..., model => 'hetero_sage', wait => true) with
#    gnn.threads = THREADS; an epoch's training pass is gnn.training_log's
#    seconds less its evaluation (eval_seconds), and its split (sampling,
#    gathering, compute, waiting for a batch) is the same row's; sampling
#    and gathering run on the pipeline's producer thread, ahead of compute,
#    so they overlap the pass rather than add up to it.  gnn.models.metrics'
#    totals over all epochs are quoted beside them.
#  - PyG: bench/pyg_hetero.py on the same tables (bench/schema_export.sh),
#    torch at THREADS threads (OMP_NUM_THREADS too), NeighborLoader in the
#    training process (num_workers 0), --no-time for the run without
#    time-aware sampling; its pass is the training loader's sampling (the
#    Python loader: sampling, feature gathering, collation) plus compute
#    (forward, backward, step), validation not included.
# Epoch 1 is reported apart; the others are averaged (epochs 2..EPOCHS).
# Each mode runs gnn then PyG, off then on, so both see the machine alike.
# Goal (#44): gnn's pass <= 0.5x PyG's.
# Needs the peers for the PyG side (bash ../shared/vendor/peers/build.sh
# /opt/gnn-peers; PEERS names another place); without them gnn runs alone.
# Writes bench/results/hetero_pass-<UTC stamp>.md.
#   bash bench/hetero_pass.sh                  # 100k / 10k / 1M, 2 threads, 3 epochs
#   CUSTOMERS=10000 PRODUCTS=1000 REVIEWS=100000 EPOCHS=2 bash bench/hetero_pass.sh   # quick
#   THREADS=1 EXTRA='"prefetch": 0' bash bench/hetero_pass.sh   # gnn sampling in line, as PyG's loader does
set -euo pipefail
source "$(dirname "$0")/../test/lib.sh"
BENCH="$REPO_ROOT/bench"
CUSTOMERS=${CUSTOMERS:-100000}
PRODUCTS=${PRODUCTS:-10000}
REVIEWS=${REVIEWS:-1000000}
THREADS=${THREADS:-2}
EPOCHS=${EPOCHS:-3}
PEERS=${PEERS:-/opt/gnn-peers}
EXTRA=${EXTRA:-}            # more options for gnn's jobs, e.g. '"prefetch": 0'
[ "$EPOCHS" -ge 1 ] 2>/dev/null || { echo "hetero_pass: EPOCHS must be a positive integer" >&2; exit 2; }

mkdir -p "$BENCH/results"
make_workdir DIR
PORT=$(free_port)
cleanup() { pg_stop "$DIR"; rm -rf "$DIR"; }
trap cleanup EXIT
pg_start "$DIR" "$PORT" "shared_buffers = 1GB" "gnn.max_graph_memory = 12GB" "gnn.max_cache_memory = 4GB" \
  "max_wal_size = 8GB" "autovacuum = off" "gnn.threads = $THREADS"
psql_pg() { su postgres -s /bin/bash -c "'$PG_BINDIR/psql' -X -q -At -h '$DIR' -p $PORT -d postgres -v ON_ERROR_STOP=1 $*"; }
STAMP=$(date -u +%Y%m%dT%H%M%SZ)
REPORT="$BENCH/results/hetero_pass-$STAMP.md"
COMMIT=$(git -C "$REPO_ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)
DIRTY=$(git -C "$REPO_ROOT" status --porcelain --untracked-files=no 2>/dev/null | grep -q . && echo " (with uncommitted changes)" || true)
LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)
case $EPOCHS in 1) LATER="no epoch 2";; 2) LATER="epoch 2";; *) LATER="epochs 2..$EPOCHS";; esac

# the peers: PyG runs where they are
PY=()
if [ -f "$PEERS/env.sh" ] && ! /usr/bin/python3 -c 'import pandas' 2>/dev/null; then
  echo "hetero_pass: bench/pyg_hetero.py reads the CSV files with pandas: installing python3-pandas" >&2
  apt-get install -y -q python3-pandas >/dev/null || echo "hetero_pass: could not install python3-pandas" >&2
fi
if [ -f "$PEERS/env.sh" ]; then
  PY=(env OMP_NUM_THREADS="$THREADS" OPENBLAS_NUM_THREADS="$THREADS" MKL_NUM_THREADS="$THREADS"
      PYTHONPATH="$(. "$PEERS/env.sh"; echo "$PYTHONPATH")" /usr/bin/python3)
else
  echo "hetero_pass: no peers in $PEERS (bash ../shared/vendor/peers/build.sh $PEERS): PyG skipped, gnn runs alone" >&2
fi

psql_pg -c "'CREATE EXTENSION gnn'"
echo "hetero_pass: generating the shop schema ($CUSTOMERS customers, $PRODUCTS products, $REVIEWS reviews)" >&2
su postgres -s /bin/bash -c "cd /tmp && CUSTOMERS=$CUSTOMERS PRODUCTS=$PRODUCTS REVIEWS=$REVIEWS SEED=42 VISITS=0 \
  bash '$BENCH/schema_gen.sh' -h '$DIR' -p $PORT -d postgres" >/dev/null
GRAPH=$(psql_pg -F "' / '" <<'SQL'
SELECT nodes, edges FROM gnn.load_schema_graph('shop', ARRAY['customers', 'products', 'reviews', 'categories']::regclass[],
  target => 'customers', label => 'segment', split => 'split',
  options => '{"time": {"reviews": "created_at", "customers": "snapshot_at"}, "exclude": {"customers": ["churn", "spend"]}}');
SQL
)
FEATURES=$(psql_pg <<'SQL'
SELECT string_agg(format('%s %s (%s)', type, w, cols), ', ' ORDER BY type)
FROM (SELECT type, sum(width) AS w,
             string_agg(format('%s %s', coalesce(nullif(column_name, ''), 'constant'), width), ', ' ORDER BY feature_offset) AS cols
      FROM gnn.graph_columns('shop') WHERE width > 0 GROUP BY type) c;
SQL
) || FEATURES="?"
if [ ${#PY[@]} -gt 0 ]; then
  echo "hetero_pass: exporting the tables to CSV" >&2
  PATH="$PG_BINDIR:$PATH" bash "$BENCH/schema_export.sh" "$DIR/csv" -h "$DIR" -p "$PORT" -U postgres -d postgres >&2
  # the files written out (about 100 MB) reach the disk now, not during the first run timed
  sync
fi

# gnn_run TEMPORAL: one job; sets G_* (per epoch: pass, split) and appends its log to $DIR/gnn.log
gnn_run() {
  local tm=$1 name="hetero_pass_$1" id row
  echo "hetero_pass: gnn, time-aware $tm (load $(cut -d' ' -f1-3 /proc/loadavg))" >&2
  id=$(psql_pg <<SQL
SET client_min_messages = warning;
SET gnn.threads = $THREADS;
SELECT gnn.train('shop', model => 'hetero_sage', name => '$name', hidden => 128, epochs => $EPOCHS, seed => 1,
                 device => 'cpu', wait => true,
                 options => '{"fanouts": [10, 10], "batch_size": 1024, "temporal": $tm${EXTRA:+, $EXTRA}}');
SQL
)
  # one line, fields by '|': epochs logged; epoch 1's pass; the later epochs' mean pass, sampling,
  # gathering, compute, wait (epoch 1's where there is no later one); metrics' totals; test acc; temporal; batches
  row=$(psql_pg <<SQL
WITH l AS (SELECT epoch, seconds - coalesce(eval_seconds, 0) AS pass, sample_seconds AS s, gather_seconds AS g,
                  compute_seconds AS c, wait_seconds AS w
           FROM gnn.training_log WHERE job = $id),
late AS (SELECT * FROM l WHERE epoch > 1 OR (SELECT max(epoch) FROM l) = 1),
m AS (SELECT metrics FROM gnn.models WHERE name = '$name' ORDER BY version DESC LIMIT 1)
SELECT concat_ws('|', (SELECT count(*) FROM l),
  (SELECT round(pass::numeric, 3) FROM l WHERE epoch = 1),
  (SELECT round(avg(pass)::numeric, 3) FROM late), (SELECT round(avg(s)::numeric, 3) FROM late),
  (SELECT round(avg(g)::numeric, 3) FROM late), (SELECT round(avg(c)::numeric, 3) FROM late),
  (SELECT round(avg(w)::numeric, 3) FROM late),
  (SELECT round((metrics->>'sample_seconds')::numeric, 2) FROM m), (SELECT round((metrics->>'gather_seconds')::numeric, 2) FROM m),
  (SELECT round((metrics->>'compute_seconds')::numeric, 2) FROM m),
  (SELECT round((metrics->>'test_acc')::numeric, 4) FROM m), (SELECT metrics->>'temporal' FROM m),
  (SELECT metrics->>'batches' FROM m));
SQL
)
  # the job's results pass (after it reports) runs on in its worker: waited
  # for, so that the next run, PyG's or gnn's, has the machine to itself
  wait_job_results "$id"
  IFS='|' read -r G_N G_E1 G_LATE G_S G_G G_C G_W G_MS G_MG G_MC G_ACC G_TEMP G_BATCHES <<<"$row"
  [ "$G_N" = "$EPOCHS" ] || echo "hetero_pass: gnn logged $G_N epochs of $EPOCHS" >&2
  [ "$G_TEMP" = "$tm" ] || echo "hetero_pass: gnn's job says temporal $G_TEMP, asked $tm" >&2
  {
    echo "gnn, time-aware $tm (job $id):"
    echo "epoch | seconds | eval_seconds | pass | sample | gather | compute | wait | loss | val_acc"
    psql_pg -F "' | '" <<SQL
SELECT epoch, round(seconds::numeric, 3), round(eval_seconds::numeric, 3), round((seconds - coalesce(eval_seconds, 0))::numeric, 3),
       round(sample_seconds::numeric, 3), round(gather_seconds::numeric, 3), round(compute_seconds::numeric, 3),
       round(wait_seconds::numeric, 3), round(loss::numeric, 4), round(val_acc::numeric, 4)
FROM gnn.training_log WHERE job = $id ORDER BY epoch;
SQL
    echo "metrics: $(psql_pg <<<"SELECT metrics - 'test_classes' - 'test_confusion' FROM gnn.models WHERE name = '$name' ORDER BY version DESC LIMIT 1")"
    echo
  } >>"$DIR/gnn.log"
}

# pyg_run TEMPORAL: bench/pyg_hetero.py once; sets P_* (as G_*) and appends its output to $DIR/pyg.log
pyg_run() {
  local tm=$1 out flag=()
  P_E1=-; P_LATE=-; P_S=-; P_C=-; P_ACC=-; P_GRAPH=-
  [ ${#PY[@]} -gt 0 ] || return 0
  [ "$tm" = false ] && flag=(--no-time)
  echo "hetero_pass: PyG, time-aware $tm (load $(cut -d' ' -f1-3 /proc/loadavg))" >&2
  if ! out=$("${PY[@]}" "$BENCH/pyg_hetero.py" "$DIR/csv" --threads "$THREADS" --epochs "$EPOCHS" --device cpu \
               --hidden 128 --layers 2 --fanout 10 10 --batch-size 1024 "${flag[@]}" 2>&1); then
    { echo "PyG, time-aware $tm: FAILED"; echo "$out"; echo; } >>"$DIR/pyg.log"
    echo "hetero_pass: PyG failed (time-aware $tm):" >&2; echo "$out" | tail -20 >&2
    P_E1=failed
    return 0
  fi
  { echo "PyG, time-aware $tm:"; echo "$out"; echo; } >>"$DIR/pyg.log"
  # epoch N: X s/epoch (sampling S s, compute C s), loss ...
  read -r P_E1 P_LATE P_S P_C <<<"$(echo "$out" | sed -n 's/^epoch \([0-9]*\): \([0-9.]*\) s\/epoch (sampling \([0-9.]*\) s, compute \([0-9.]*\) s).*/\1 \2 \3 \4/p' |
    awk '$1 == 1 {x1 = $2; s1 = $3; c1 = $4; one = 1} $1 > 1 {n++; x += $2; s += $3; c += $4}
         END {if (!one && !n) {print "- - - -"; exit}
              if (!n) {n = 1; x = x1; s = s1; c = c1}
              printf "%.3f %.3f %.3f %.3f\n", x1, x / n, s / n, c / n}')"
  P_ACC=$(echo "$out" | sed -n 's/^test accuracy \([0-9.]*\).*/\1/p')
  P_GRAPH="$(echo "$out" | sed -n 's/^graph: \([0-9]*\) nodes, \([0-9]*\) edges.*/\1 nodes, \2 edges/p'), input features per table $(echo "$out" | sed -n 's/^features: //p')"
  [ "$(echo "$out" | grep -c '^epoch [0-9]*:')" = "$EPOCHS" ] || echo "hetero_pass: PyG printed $(echo "$out" | grep -c '^epoch [0-9]*:') epochs of $EPOCHS" >&2
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN {if (a ~ /^[0-9.]+$/ && b ~ /^[0-9.]+$/ && b > 0) printf "%.2f", a / b; else printf "-"}'; }

ROWS=""; SPLIT=""; PYG_GRAPH=-
for tm in false true; do
  gnn_run "$tm"
  pyg_run "$tm"
  [ "$P_GRAPH" != - ] && PYG_GRAPH=$P_GRAPH
  mode=$([ "$tm" = true ] && echo on || echo off)
  late_g=$G_LATE; late_p=$P_LATE
  [ "$EPOCHS" -gt 1 ] || { late_g=-; late_p=-; }
  ROWS+="| $mode | $G_E1 | $late_g | $P_E1 | $late_p | **$(ratio "$late_g" "$late_p")** | $(ratio "$G_E1" "$P_E1") | $G_ACC | $P_ACC |"$'\n'
  SPLIT+="| $mode | $G_S / $G_G / $G_C / $G_W | $G_MS / $G_MG / $G_MC | $G_BATCHES | $P_S / $P_C |"$'\n'
done
LOAD_END=$(cut -d' ' -f1-3 /proc/loadavg)

{
  echo "# bench/hetero_pass.sh, $STAMP"
  echo
  echo "Commit $COMMIT$DIRTY; $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), $(awk '/MemTotal/ {printf "%.0f GB", $2 / 1048576}' /proc/meminfo); PostgreSQL $(pg_config --version | awk '{print $2}'); load average at the start $LOAD_START, at the end $LOAD_END."
  echo "Command: \`CUSTOMERS=$CUSTOMERS PRODUCTS=$PRODUCTS REVIEWS=$REVIEWS THREADS=$THREADS EPOCHS=$EPOCHS${EXTRA:+ EXTRA='$EXTRA'} bash bench/hetero_pass.sh\`"
  echo "Shop schema: $CUSTOMERS customers, $PRODUCTS products, $REVIEWS reviews, 200 categories (seed 42, no visits); gnn's graph (nodes / arcs): $GRAPH, input features per table (width: columns): $FEATURES; PyG's HeteroData: $PYG_GRAPH."
  echo "Both: heterogeneous GraphSAGE, 2 layers, hidden 128, fan-outs [10, 10] per edge type, batch 1024, $EPOCHS epochs, CPU, $THREADS threads (gnn.threads; torch.set_num_threads and OMP_NUM_THREADS)${EXTRA:+; gnn options also $EXTRA}."
  if [ ${#PY[@]} -gt 0 ]; then
    echo "PyG: $(PYTHONPATH="$(. "$PEERS/env.sh"; echo "$PYTHONPATH")" /usr/bin/python3 -c 'import torch, torch_geometric; print("torch", torch.__version__, "/ torch_geometric", torch_geometric.__version__)' 2>/dev/null || echo '?') from $PEERS."
  else
    echo "PyG: not run (no peers in $PEERS)."
  fi
  echo
  echo "Training pass per epoch, seconds: gnn's is gnn.training_log's seconds less eval_seconds; PyG's is its"
  echo "training loader's sampling plus compute (bench/pyg_hetero.py's s/epoch), which includes its Python"
  echo "loader (NeighborLoader in the training process: sampling, feature gathering, collation). Neither"
  echo "includes validation. Later epochs: the mean of $LATER; epoch 1 is reported apart."
  echo
  echo "| time-aware sampling | gnn pass, epoch 1 | gnn pass, $LATER | PyG pass, epoch 1 | PyG pass, $LATER | gnn / PyG, $LATER (goal <= 0.5) | gnn / PyG, epoch 1 | gnn test acc | PyG test acc |"
  echo "|---|---|---|---|---|---|---|---|---|"
  printf "%s" "$ROWS"
  echo
  echo "Where a later epoch's pass went, seconds per epoch ($LATER; epoch 1 where there is no later one). gnn's"
  echo "sampling and gathering run on its pipeline's producer thread ahead of compute (options.prefetch,"
  echo "default 2 batches), so they overlap the pass; waiting is the time compute waited for a batch."
  echo "PyG samples in line: its sampling and compute add up to its pass."
  echo
  echo "| time-aware sampling | gnn sampling / gathering / compute / waiting | gnn.models.metrics, all $EPOCHS epochs: sample / gather / compute seconds | gnn batches | PyG sampling / compute |"
  echo "|---|---|---|---|---|"
  printf "%s" "$SPLIT"
  echo
  echo "Not the same work on both sides: time-aware, gnn samples each customer as of its own seed time"
  echo "(customers.snapshot_at, the load's options.time) and PyG every customer as of one cutoff (the latest"
  echo "review), which admits every row, so gnn samples fewer reviews (gnn.models.metrics' sampled_edges in"
  echo "the logs); gnn's batches come from a producer thread beside its THREADS compute threads; the inputs"
  echo "differ (gnn skips the many-valued name columns, adds a constant column and customers.snapshot_at;"
  echo "PyG one-hot encodes the names); and the optimisers' settings differ (gnn: lr 0.01, dropout 0.5, weight"
  echo "decay 5e-4; PyG: lr 0.005, none), so the accuracies are not a like-for-like comparison."
  echo
  echo "## Logs"
  echo
  echo '```text'
  cat "$DIR/gnn.log"
  [ -f "$DIR/pyg.log" ] && cat "$DIR/pyg.log"
  echo '```'
} | tee "$REPORT"
echo "wrote $REPORT" >&2
