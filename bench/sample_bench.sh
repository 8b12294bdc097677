#!/usr/bin/env bash
# Sampling, feature gather and minibatch training on an in-memory R-MAT graph
# (no database).  Writes bench/results/sample-<date>.txt.
#   NODES=2500000 EDGES=30000000 DIM=100 BATCHES=20 bash bench/sample_bench.sh
#   SAMPLE_ONLY=1 bash bench/sample_bench.sh     # memcpy, sampler and gather only
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p bench/bin bench/results
gcc -std=gnu11 -O2 -fno-trapping-math -fopenmp -Isrc/core -o bench/bin/sample_bench bench/sample_bench.c src/core/*/*.c \
    -lopenblas -lmetis $(test -f /usr/include/liburing.h && echo -luring || true) -lgomp -lpthread -lm -ldl
out="bench/results/sample-$(date -u +%Y%m%dT%H%M%SZ).txt"
{
  echo "# $(date -u +%FT%TZ) $(uname -n) $(nproc) cores; load: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "# bench/bin/sample_bench ${NODES:-2500000} ${EDGES:-30000000} ${DIM:-100} ${BATCHES:-20}"
  SAMPLE_ONLY=${SAMPLE_ONLY:-0} OMP_NUM_THREADS=2 /usr/bin/time -v bench/bin/sample_bench "${NODES:-2500000}" "${EDGES:-30000000}" "${DIM:-100}" "${BATCHES:-20}" 2>&1 \
    | grep -vE '^\s+(Average|Exit|Page size|Signals|Swaps|Socket|File system|Voluntary|Involuntary|Minor|Major|Percent|System time|User time)'
} | tee "$out"
