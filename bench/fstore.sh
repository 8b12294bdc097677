#!/usr/bin/env bash
# bench/fstore.sh: features on disk (issue #14).  bench/fstore_bench.c on an
# R-MAT graph (2^SCALE nodes, EDGES edges made undirected, DIM-dim features,
# TRAIN_PCT% training seeds), GraphSAGE fan-outs [10, 5], batch 1024, the
# pipeline 2 batches ahead:
#   1. write the features file (rows by part then degree, as a load does;
#      ORDER=degree for degree alone), drop the page cache;
#   2. EPOCHS epochs with the features in memory (the baseline);
#   3. EPOCHS epochs reading them through a cache of half the features, the
#      process in a memory cgroup of CAP_MB (less than the features: the page
#      cache cannot hold them), then again with an eighth (SMALL_MB), where
#      the cache must evict; both replay their trace through Belady's optimum.
# Root (cgroup v1 or v2 memory controller, drop_caches).  Writes
# bench/results/fstore-<UTC stamp>.md.
#   SCALE=22 EDGES=40000000 DIM=256 EPOCHS=8 TRAIN_PCT=4 bash bench/fstore.sh
set -euo pipefail
cd "$(dirname "$0")/.."
SCALE=${SCALE:-22}
EDGES=${EDGES:-40000000}
DIM=${DIM:-256}
EPOCHS=${EPOCHS:-8}
TRAIN_PCT=${TRAIN_PCT:-4}
FEAT_MB=$(( (1 << SCALE) * DIM * 4 / 1048576 ))
CACHE_MB=${CACHE_MB:-$(( FEAT_MB / 2 ))}
SMALL_MB=${SMALL_MB:-$(( FEAT_MB / 8 ))}
CAP_MB=${CAP_MB:-$(( FEAT_MB * 85 / 100 ))}
DIR=${DIR:-/var/tmp/gnn-fstore-bench}
mkdir -p bench/bin bench/results "$DIR"
gcc -std=gnu11 -O2 -fno-trapping-math -fopenmp -Isrc/core -o bench/bin/fstore_bench bench/fstore_bench.c src/core/*/*.c \
    -lopenblas -lmetis $(test -f /usr/include/liburing.h && echo -luring || true) -lgomp -lpthread -lm -ldl
STAMP=$(date -u +%Y%m%dT%H%M%SZ)
REPORT=bench/results/fstore-$STAMP.md

# a memory cgroup for the disk runs (v2 if mounted, else v1)
if [ -f /sys/fs/cgroup/cgroup.controllers ]; then
  CG=/sys/fs/cgroup/gnn-fstore-bench; mkdir -p $CG
  echo $(( CAP_MB * 1048576 )) > $CG/memory.max
  peak() { cat $CG/memory.peak 2>/dev/null || echo 0; }
  reset_peak() { :; }   # cgroup v2: memory.peak is per cgroup lifetime
else
  CG=/sys/fs/cgroup/memory/gnn-fstore-bench; mkdir -p $CG
  echo $(( CAP_MB * 1048576 )) > $CG/memory.limit_in_bytes
  echo 0 > $CG/memory.max_usage_in_bytes
  peak() { cat $CG/memory.max_usage_in_bytes; }
  reset_peak() { echo 0 > $CG/memory.max_usage_in_bytes; }
fi
capped() { ( echo $BASHPID > $CG/cgroup.procs; exec "$@" ); }
trap 'rm -rf "$DIR"; rmdir $CG 2>/dev/null || true' EXIT

{
  echo "# bench/fstore.sh, $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo
  echo "machine: $(nproc) CPUs, $(free -g | awk '/Mem/ {print $2}') GB RAM, $(uname -r); $DIR on $(df -T "$DIR" | awk 'NR==2 {print $2}')"
  echo "SCALE=$SCALE EDGES=$EDGES DIM=$DIM EPOCHS=$EPOCHS TRAIN_PCT=$TRAIN_PCT: features $FEAT_MB MB, cache $CACHE_MB MB and $SMALL_MB MB, cgroup cap $CAP_MB MB"
  echo
  echo '```'
  bench/bin/fstore_bench write "$DIR" "$SCALE" "$EDGES" "$DIM"
  sync; echo 3 > /proc/sys/vm/drop_caches
  echo "## in memory"
  bench/bin/fstore_bench memory "$DIR" "$SCALE" "$EDGES" "$DIM" "$EPOCHS" 0 "$TRAIN_PCT"
  for c in "$CACHE_MB" "$SMALL_MB"; do
    sync; echo 3 > /proc/sys/vm/drop_caches
    reset_peak
    echo "## on disk, cache $c MB, in a $CAP_MB MB cgroup"
    capped bench/bin/fstore_bench disk "$DIR" "$SCALE" "$EDGES" "$DIM" "$EPOCHS" "$c" "$TRAIN_PCT"
    echo "cgroup peak: $(( $(peak) / 1048576 )) MB"
  done
  echo '```'
} 2>&1 | tee "$REPORT"
echo "report: $REPORT"
