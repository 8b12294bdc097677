#!/usr/bin/env bash
# bench/delta_bench.sh: gnn_graph_apply_changes (a tracked graph's refresh)
# on a 1M-node, 10M-arc weighted graph with 16 dense features: 100k edge
# rows changed, then with 1000 node removals and upserts as well.
#   bash bench/delta_bench.sh [nodes edges changes nodech threads]
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p bench/bin
cc -std=gnu11 -O2 -fno-wrapv -fopenmp -Wall -Isrc/core -o bench/bin/delta_bench bench/delta_bench.c src/core/*/*.c \
   -lopenblas -lmetis $(test -f /usr/include/liburing.h && echo -luring || true) -lgomp -lpthread -lm -ldl
bench/bin/delta_bench "$@"
