#!/usr/bin/env bash
# gnn_topk_cosine (gnn.similar's scan) on an in-memory table, no database.
# Writes bench/results/topk-<date>.txt.
#   ROWS=1000000 DIM=128 K=10 QUERIES=20 bash bench/topk_bench.sh
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p bench/bin bench/results
gcc -std=gnu11 -O2 -fno-trapping-math -fopenmp -Isrc/core -o bench/bin/topk_bench bench/topk_bench.c src/core/*/*.c \
    -lopenblas -lmetis $(test -f /usr/include/liburing.h && echo -luring || true) -lgomp -lpthread -lm -ldl
out="bench/results/topk-$(date -u +%Y%m%dT%H%M%SZ).txt"
{
  echo "# $(date -u +%FT%TZ) $(uname -n) $(nproc) cores; load: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "# bench/bin/topk_bench ${ROWS:-1000000} ${DIM:-128} ${K:-10} ${QUERIES:-20}"
  bench/bin/topk_bench "${ROWS:-1000000}" "${DIM:-128}" "${K:-10}" "${QUERIES:-20}"
} | tee "$out"
