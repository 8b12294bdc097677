#!/usr/bin/env bash
# bench/train_cli.sh: build bench/gnn_train_cli and run the accuracy / speed
# benchmark of the compute core on ../shared/data (10 seeds each):
#   GCN cora, GAT cora, GraphSAGE cora (mean and pool), GCN citeseer.
#   THREADS=2 SEEDS=10 BACKEND=cpu bash bench/train_cli.sh
# Prints the CLI's per-seed lines, mean/std and time-per-epoch breakdown.
set -euo pipefail
cd "$(dirname "$0")/.."
THREADS=${THREADS:-2}
SEEDS=${SEEDS:-10}
BACKEND=${BACKEND:-cpu}
DATA=${GNN_DATA_DIR:-../shared/data}
mkdir -p bench/bin
cc -std=gnu11 -O2 -fopenmp -Wall -Isrc/core -o bench/bin/gnn_train_cli bench/gnn_train_cli.c src/core/*/*.c \
   -lopenblas -lmetis $(test -f /usr/include/liburing.h && echo -luring || true) -lgomp -lpthread -lm -ldl
run() { echo "== $*"; bench/bin/gnn_train_cli --seeds "$SEEDS" --threads "$THREADS" --backend "$BACKEND" "$@"; echo; }
run --data "$DATA/cora" --model gcn --epochs 200
run --data "$DATA/cora" --model gat --epochs 200
run --data "$DATA/cora" --model graphsage --aggr mean --epochs 200
run --data "$DATA/cora" --model graphsage --aggr pool --epochs 200
run --data "$DATA/citeseer" --model gcn --epochs 200
