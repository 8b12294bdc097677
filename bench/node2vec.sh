#!/usr/bin/env bash
# bench/node2vec.sh: node2vec on Cora, gnn against PyG 2.3's Node2Vec (issue
# #41), in the same run, at the same threads and settings: 128 wide, walks of
# 20 nodes (gnn's walk_length counts steps: 19), windows of 10, 10 walks per
# node, 1 negative per positive, p = q = 1, Cora's citations undirected.
#  - time per epoch: gnn's from gnn.training_log (the worker's epochs, walks
#    included), PyG's from its loop (walks, batches, SparseAdam); medians.
#  - accuracy: the same protocol both sides (bench/pyg_node2vec.py:
#    multinomial logistic regression, C = 1, on the 140 training nodes'
#    embeddings, accuracy on the 1000 test nodes), gnn at its default 5
#    epochs, PyG at 5, 10, 20, 40, 60, 80 (those up to PYG_EPOCHS) and PYG_EPOCHS (its example trains 100; on this
#    machine's Debian torch a PyG epoch takes tens of seconds).
# Needs ../shared/data and the peers (bash ../shared/vendor/peers/build.sh
# /opt/gnn-peers); writes bench/results/node2vec-<UTC stamp>.md.
#   THREADS=2 GNN_EPOCHS=5 PYG_EPOCHS=40 SEEDS=1 bash bench/node2vec.sh
set -euo pipefail
source "$(dirname "$0")/../test/lib.sh"
cd "$REPO_ROOT"
THREADS=${THREADS:-2}
GNN_EPOCHS=${GNN_EPOCHS:-5}
PYG_EPOCHS=${PYG_EPOCHS:-40}
SEEDS=${SEEDS:-1}
PEERS=${PEERS:-/opt/gnn-peers}
DATA=$(gnn_data_dir) || { echo "node2vec: ../shared/data not found" >&2; exit 1; }
[ -f "$PEERS/env.sh" ] || { echo "node2vec: no peers in $PEERS (bash ../shared/vendor/peers/build.sh $PEERS)" >&2; exit 1; }
PY=(env OMP_NUM_THREADS="$THREADS" OPENBLAS_NUM_THREADS="$THREADS" PYTHONPATH="$(. "$PEERS/env.sh"; echo "$PYTHONPATH")" /usr/bin/python3)
mkdir -p bench/results
STAMP=$(date -u +%Y%m%dT%H%M%SZ)
REPORT=bench/results/node2vec-$STAMP.md
median() { sort -n | awk '{a[NR]=$1} END {if (NR%2) printf "%.3f\n", a[(NR+1)/2]; else printf "%.3f\n", (a[NR/2]+a[NR/2+1])/2}'; }

make_workdir DIR
PORT=$(free_port)
cleanup() { pg_stop "$DIR"; rm -rf "$DIR"; }
trap cleanup EXIT
pg_start "$DIR" "$PORT" "gnn.threads = $THREADS"
psql_pg() { su postgres -s /bin/bash -c "'$PG_BINDIR/psql' -X -q -At -h '$DIR' -p $PORT -d postgres -v ON_ERROR_STOP=1 $*"; }
chmod 777 "$DIR"

{
  echo "# node2vec on Cora: gnn against PyG, $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo
  echo "- commit: $(git rev-parse --short HEAD); command: \`THREADS=$THREADS GNN_EPOCHS=$GNN_EPOCHS PYG_EPOCHS=$PYG_EPOCHS SEEDS=$SEEDS bash bench/node2vec.sh\`"
  echo "- machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(free -g | awk '/Mem:/{print $2}') GiB RAM; load before: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "- both: 128 wide, walks of 20 nodes, windows of 10, 10 walks per node, 1 negative, p = q = 1, $THREADS threads"
  echo
} | tee "$REPORT"

psql_pg >/dev/null <<SQL
CREATE EXTENSION gnn;
CREATE TABLE papers (id int PRIMARY KEY, label int, split text);
CREATE TABLE cites (src int, dst int);
\copy papers FROM '$DATA/cora/nodes.csv' WITH (FORMAT csv, HEADER true)
\copy cites FROM '$DATA/cora/edges.csv' WITH (FORMAT csv, HEADER true)
SELECT gnn.load_graph('cora', 'cites', nodes => 'papers', undirected => true);
SQL

gnn_epoch=(); gnn_acc=(); pyg_epoch=(); pyg_acc5=(); pyg_accN=()
for seed in $(seq 1 "$SEEDS"); do
  job=$(psql_pg -c "\"SELECT gnn.train('cora', model => 'node2vec', name => 'n2v', seed => $seed, epochs => $GNN_EPOCHS,
        options => '{\\\"dim\\\": 128, \\\"walk_length\\\": 19, \\\"window\\\": 10, \\\"walks_per_node\\\": 10, \\\"negatives\\\": 1}',
        wait => true)\"")
  gnn_epoch+=("$(psql_pg -c "\"SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY seconds) FROM gnn.training_log WHERE job = $job\"")")
  psql_pg -c "\"DROP TABLE IF EXISTS n2v_emb\"" -c "\"SELECT gnn.embed('n2v', 'n2v_emb')\"" >/dev/null
  psql_pg -c "\"COPY (SELECT id, array_to_string(embedding, ',') FROM n2v_emb ORDER BY id) TO '$DIR/emb.csv' WITH (FORMAT text)\""
  sed -i 's/\t/,/' "$DIR/emb.csv"
  gnn_acc+=("$("${PY[@]}" bench/pyg_node2vec.py eval --data "$DATA/cora" --emb "$DIR/emb.csv" | sed -n 's/^accuracy: //p')")
  out=$("${PY[@]}" bench/pyg_node2vec.py train --data "$DATA/cora" --threads "$THREADS" --epochs "$PYG_EPOCHS" \
        --eval-at "$(printf '%s\n' 5 10 20 40 60 80 "$PYG_EPOCHS" | awk -v m="$PYG_EPOCHS" '$1 <= m' | sort -nu | paste -sd,)" --seed "$seed")
  echo "$out" | sed -n 's/^accuracy at epoch/  PyG accuracy at epoch/p' | tee -a "$REPORT"
  pyg_epoch+=("$(echo "$out" | sed -n 's/^epoch .* seconds \([0-9.]*\)$/\1/p' | median)")
  pyg_acc5+=("$(echo "$out" | sed -n 's/^accuracy at epoch 5: //p')")
  pyg_accN+=("$(echo "$out" | sed -n "s/^accuracy at epoch $PYG_EPOCHS: //p")")
  echo "seed $seed: gnn epoch ${gnn_epoch[-1]} s, accuracy ${gnn_acc[-1]} ($GNN_EPOCHS epochs); PyG epoch ${pyg_epoch[-1]} s, accuracy ${pyg_acc5[-1]} (5 epochs), ${pyg_accN[-1]} ($PYG_EPOCHS epochs)"
done

mean() { awk '{s+=$1; n++} END {printf "%.4f", s/n}'; }
ge=$(printf '%s\n' "${gnn_epoch[@]}" | median); pe=$(printf '%s\n' "${pyg_epoch[@]}" | median)
{
  echo
  echo "| | epoch (median, s) | test accuracy (mean of $SEEDS seeds) |"
  echo "|---|---|---|"
  echo "| gnn node2vec, $GNN_EPOCHS epochs | $ge | $(printf '%s\n' "${gnn_acc[@]}" | mean) ($(IFS=' '; echo "${gnn_acc[*]}")) |"
  echo "| PyG Node2Vec, 5 epochs | $pe | $(printf '%s\n' "${pyg_acc5[@]}" | mean) ($(IFS=' '; echo "${pyg_acc5[*]}")) |"
  echo "| PyG Node2Vec, $PYG_EPOCHS epochs | | $(printf '%s\n' "${pyg_accN[@]}" | mean) ($(IFS=' '; echo "${pyg_accN[*]}")) |"
  echo
  echo "Epoch time ratio gnn / PyG: $(echo "scale=3; $ge / $pe" | bc)"
} | tee -a "$REPORT"
echo "wrote $REPORT"
