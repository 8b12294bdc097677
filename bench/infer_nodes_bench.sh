#!/usr/bin/env bash
# gnn_model_infer_nodes (exact k-hop inference for a few nodes) on an
# in-memory R-MAT graph, no database.  Writes bench/results/infer_nodes-<date>.txt.
#   NODES=1000000 EDGES=10000000 DIM=64 QUERIES=50 bash bench/infer_nodes_bench.sh
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p bench/bin bench/results
gcc -std=gnu11 -O2 -fno-trapping-math -fopenmp -Isrc/core -o bench/bin/infer_nodes_bench bench/infer_nodes_bench.c src/core/*/*.c \
    -lopenblas -lmetis $(test -f /usr/include/liburing.h && echo -luring || true) -lgomp -lpthread -lm -ldl
out="bench/results/infer_nodes-$(date -u +%Y%m%dT%H%M%SZ).txt"
{
  echo "# $(date -u +%FT%TZ) $(uname -n) $(nproc) cores; load: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "# bench/bin/infer_nodes_bench ${NODES:-1000000} ${EDGES:-10000000} ${DIM:-64} ${QUERIES:-50}"
  OMP_NUM_THREADS=2 bench/bin/infer_nodes_bench "${NODES:-1000000}" "${EDGES:-10000000}" "${DIM:-64}" "${QUERIES:-50}"
} | tee "$out"
