#!/usr/bin/env bash
# bench/sage_floor.sh: issue #44's "homogeneous SAGE step within 2x of the
# GEMM floor of its own layer shapes (measured beside it)".
# Builds bench/bin/sage_floor_bench (make: linked from the core objects gnn.so
# is made of) and runs it: GraphSAGE mean, 2 layers, hidden 128, fan-outs
# [10, 5], batch 512 on an R-MAT graph (2^SCALE nodes, EDGES edges made
# undirected, 64-dim dense random features, 8 classes, 10% training nodes);
# the step (gnn_minibatch_stats.compute_s per batch: block upload, forward,
# loss, backward, Adam) with prefetch 2 (gnn.train's default) and 0, against
# the dense products of the same layer shapes timed on the same CPU backend in
# the same process.  Writes bench/results/sage_floor-<UTC stamp>.md.
#   bash bench/sage_floor.sh                                   # the issue's scale (SCALE=20 EDGES=10000000 THREADS=2)
#   SCALE=16 EDGES=500000 BATCHES=20 bash bench/sage_floor.sh  # a quick run
# The program's settings pass through from the environment: SCALE EDGES DIM
# CLASSES TRAIN_PCT HIDDEN FANOUTS BATCH BATCHES THREADS PREFETCH DROPOUT SHAPES
# REPS ROWNORM (defaults and meaning: the comment at the top of bench/sage_floor_bench.c).
set -euo pipefail
cd "$(dirname "$0")/.."
make -s bench/bin/sage_floor_bench
mkdir -p bench/results
export THREADS=${THREADS:-2}
STAMP=$(date -u +%Y%m%dT%H%M%SZ)
REPORT=bench/results/sage_floor-$STAMP.md
CMD=""
for v in SCALE EDGES DIM CLASSES TRAIN_PCT HIDDEN FANOUTS BATCH BATCHES THREADS PREFETCH DROPOUT SHAPES REPS ROWNORM; do
  [ -n "${!v:-}" ] && CMD+="$v=${!v} "
done
CMD+="bash bench/sage_floor.sh"
# uncommitted changes the program is built from (the core's sources, the program itself)
DIRTY=$(git status --porcelain -- src/core bench/sage_floor_bench.c bench/bench_util.h | awk '{print $2}' | tr '\n' ' ' | sed 's/ $//')
{
  echo "# GraphSAGE minibatch step against the GEMM floor of its layer shapes (issue #44), $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo
  echo "- commit: $(git rev-parse --short HEAD)${DIRTY:+ with uncommitted changes to $DIRTY}; command: \`$CMD\`"
  echo "- machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(free -g | awk '/Mem:/{print $2}') GiB RAM; OpenBLAS $(dpkg-query -W -f='${Version}' libopenblas0 2>/dev/null || echo '?'); load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "- program: \`bench/bin/sage_floor_bench\` (environment as in the command; OMP_NUM_THREADS=$THREADS)"
  echo
  echo '```'
} | tee "$REPORT"
set +e
OMP_NUM_THREADS=$THREADS bench/bin/sage_floor_bench 2>&1 | tee -a "$REPORT"
rc=${PIPESTATUS[0]}
set -e
{
  echo '```'
  echo
  echo "- load average after: $(cut -d' ' -f1-3 /proc/loadavg)$([ "$rc" -ne 0 ] && echo "; the program FAILED (exit $rc)")"
} | tee -a "$REPORT"
echo "report: $REPORT"
exit "$rc"
