#!/usr/bin/env bash
# bench/partition_bench.sh: METIS (4 and 16 parts) against streaming and
# random on a products-size R-MAT graph generated in memory (issue 7).
#   NODES=2500000 EDGES=60000000 PARTS="4 16" bash bench/partition_bench.sh
# Writes bench/results/partition-<date>.txt with the machine and command.
set -euo pipefail
cd "$(dirname "$0")/.."
NODES=${NODES:-2500000}
EDGES=${EDGES:-60000000}
PARTS=${PARTS:-"4 16"}
mkdir -p bench/bin bench/results
cc -std=gnu11 -O2 -fopenmp -Wall -Isrc/core -o bench/bin/partition_bench bench/partition_bench.c src/core/*/*.c \
   -lopenblas -lmetis $(test -f /usr/include/liburing.h && echo -luring || true) -lgomp -lpthread -lm -ldl
out="bench/results/partition-$(date -u +%Y%m%dT%H%M%SZ).txt"
{
  echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(hostname): $(nproc) cores, $(free -g | awk '/Mem:/ {print $2}') GB RAM, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
  echo "# command: bench/bin/partition_bench $NODES $EDGES $PARTS (METIS $(dpkg-query -W -f='${Version}' libmetis5 2>/dev/null || echo '?'))"
  bench/bin/partition_bench "$NODES" "$EDGES" $PARTS
} | tee "$out"
