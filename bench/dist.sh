#!/usr/bin/env bash
# bench/dist.sh: training over several servers (issue #16, "Scale"): bytes
# and seconds of a full-batch step on 1, 2, 3 and 4 ranks forked on loopback
# (Gloo through src/dist/gnn_dist.so), one METIS part each, GCN and
# GraphSAGE through the core's own path (gnn_train_full with cfg.dist),
# against one process on the whole graph in the same run
# (bench/dist_bench.c says what is measured).
#  1. The collectives alone: allreduce and alltoallv, 4 kB to 32 MB.
#  2. Cora (1433-dim dense features: gradients outweigh the halo), when
#     ../shared/data has it.
#  3. R-MAT, NODES nodes, EDGES edges drawn, DIM-dim features (the halo
#     outweighs the gradients).
# One thread per rank: this machine has few cores, so 3 and 4 ranks share
# them (the report gives CPU time per epoch beside wall time).  The timed
# runs hold /tmp/gnn-bench.lock so they never overlap another benchmark.
# Writes bench/results/dist-<UTC stamp>.md.
# "1+1" in RANKS: one process on the whole graph with a second copy running
# alongside, the control for what sharing the machine's cores and memory
# bandwidth costs without any distribution.  PASSES: R-MAT runs that many
# times (a shared machine's noise: quote the medians).
#   NODES=300000 EDGES=3600000 DIM=100 HIDDEN=256 EPOCHS=4 RANKS="1 1+1 2 3 4" PASSES=2 bash bench/dist.sh
# Minibatches (issue #43): FANOUTS set trains GraphSAGE on sampled batches
# instead, each rank on its part with HALO_HOPS hops of halo (default: one
# per fan-out), BATCH seeds a global step; defaults then a 2M-node R-MAT:
#   FANOUTS=10,5 BATCH=1024 NODES=2000000 EDGES=10000000 DIM=64 HIDDEN=128 EPOCHS=3 RANKS="1 2 3" PASSES=1 bash bench/dist.sh
# With HALO_HOPS below the fan-outs' hops the owners draw the rest (sampling
# across parts) and a table splits the step (sampling, fetch, compute,
# allreduce; adjacency, feature and gradient bytes); PREFETCH batches are
# made ahead on a second mesh (MESH2=0: in line), e.g.
#   FANOUTS=10,5 HALO_HOPS=1 PREFETCH=2 bash bench/dist.sh
# P3=1 splits layer 0 by feature columns instead (every rank the whole graph,
# DIM / ranks columns; train_mb.h's feature_slices); compare its allreduce
# bytes a step with the run above's adjacency, feature and gradient bytes:
#   FANOUTS=10,5 P3=1 DIM=512 NODES=500000 EDGES=2500000 bash bench/dist.sh
set -euo pipefail
source "$(dirname "$0")/../test/lib.sh"
cd "$REPO_ROOT"
FANOUTS=${FANOUTS:-}
if [ -n "$FANOUTS" ]; then
  NODES=${NODES:-2000000}; EDGES=${EDGES:-10000000}; DIM=${DIM:-64}; HIDDEN=${HIDDEN:-128}; EPOCHS=${EPOCHS:-3}
  RANKS=${RANKS:-"1 2 3"}; PASSES=${PASSES:-1}; export MODELS=${MODELS:-graphsage} CUT_PARTS=${CUT_PARTS:-}
  export FANOUTS BATCH=${BATCH:-1024} HALO_HOPS=${HALO_HOPS:-$(echo "$FANOUTS" | tr ',' '\n' | wc -l)}
  WHAT="a minibatch step ([$FANOUTS], $BATCH seeds a global step, $HALO_HOPS hops of halo) on $RANKS ranks"
else
  WHAT="a full-batch step on 1-4 ranks"
fi
NODES=${NODES:-300000}
EDGES=${EDGES:-3600000}
DIM=${DIM:-100}
HIDDEN=${HIDDEN:-256}
EPOCHS=${EPOCHS:-4}
CORA_EPOCHS=${CORA_EPOCHS:-20}
RANKS=${RANKS:-"1 1+1 2 3 4"}
PASSES=${PASSES:-2}
LOCK=${LOCK:-/tmp/gnn-bench.lock}
mkdir -p bench/bin bench/results
make -s src/dist/gnn_dist.so
cc -std=gnu11 -O2 -fopenmp -Wall -Isrc/core -o bench/bin/dist_bench bench/dist_bench.c src/core/*/*.c \
   -lopenblas -lmetis $(test -f /usr/include/liburing.h && echo -luring || true) -lgomp -lpthread -lm -ldl
STAMP=$(date -u +%Y%m%dT%H%M%SZ)
REPORT=bench/results/dist-$STAMP.md
{
  echo "# Training over several servers: $WHAT over loopback, $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo
  echo "- commit: $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src bench || echo ' (with uncommitted changes)'); command: \`${FANOUTS:+FANOUTS=$FANOUTS BATCH=$BATCH HALO_HOPS=$HALO_HOPS PREFETCH=${PREFETCH:-1} MESH2=${MESH2:-1} P3=${P3:-0} }NODES=$NODES EDGES=$EDGES DIM=$DIM HIDDEN=$HIDDEN EPOCHS=$EPOCHS CORA_EPOCHS=$CORA_EPOCHS RANKS=\"$RANKS\" PASSES=$PASSES bash bench/dist.sh\`"
  echo "- machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(free -g | awk '/Mem:/{print $2}') GiB RAM; load before: $(cut -d' ' -f1-3 /proc/loadavg); Gloo $(dpkg-query -W -f='${Version}' libgloo-dev 2>/dev/null || echo '?'), METIS $(dpkg-query -W -f='${Version}' libmetis5 2>/dev/null || echo '?')"
  echo "- one thread per rank (OpenBLAS and the backend); with $(nproc) cores, more than $(nproc) ranks share them: wall times of 3 and 4 ranks include waiting for a core, the CPU column does not"
  echo
} | tee "$REPORT"

DATA=$(gnn_data_dir) || DATA=
if [ -n "$DATA" ]; then
  echo "## Cora" | tee -a "$REPORT"
  echo | tee -a "$REPORT"
  flock "$LOCK" bench/bin/dist_bench "$DATA/cora" "$CORA_EPOCHS" "$HIDDEN" $RANKS | tee -a "$REPORT"
else
  echo "(../shared/data not found: Cora left out)" | tee -a "$REPORT"
fi
for pass in $(seq 1 "$PASSES"); do
  echo "## R-MAT, pass $pass of $PASSES (load before: $(cut -d' ' -f1-3 /proc/loadavg))" | tee -a "$REPORT"
  echo | tee -a "$REPORT"
  SKIP_COLL=1 flock "$LOCK" bench/bin/dist_bench "rmat:$NODES:$EDGES:$DIM" "$EPOCHS" "$HIDDEN" $RANKS | tee -a "$REPORT"
done
echo "report: $REPORT"
