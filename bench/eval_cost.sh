#!/usr/bin/env bash
# bench/eval_cost.sh: issue #44's R-MAT job in one process, no database
# (bench/eval_cost_bench.c): its training passes, validation, test pass and
# the rest, and wall / passes - what evaluation alone costs against the goal
# of 1.25 when there is no worker to start, no graph to map and no row to
# commit.  Writes bench/results/eval_cost-<UTC stamp>.md.
#   bash bench/eval_cost.sh                              # the issue's scale
#   EBS=512,2048 RUNS=3 bash bench/eval_cost.sh          # evaluation batch sizes, alternating
#   REUSE=0,-1 RUNS=3 bash bench/eval_cost.sh            # kept layer-0 rows against none
#   SCALE=16 EDGES=500000 RUNS=1 bash bench/eval_cost.sh # a quick run
set -euo pipefail
cd "$(dirname "$0")/.."
make -s bench/bin/eval_cost_bench
mkdir -p bench/results
export THREADS=${THREADS:-2}
STAMP=$(date -u +%Y%m%dT%H%M%SZ)
REPORT=bench/results/eval_cost-$STAMP.md
CMD=""
for v in SCALE EDGES THREADS EBS SHARES REUSE RUNS EVAL_NODES; do
  [ -n "${!v:-}" ] && CMD+="$v=${!v} "
done
CMD+="bash bench/eval_cost.sh"
DIRTY=$(git status --porcelain -- src/core bench/eval_cost_bench.c bench/bench_util.h | awk '{print $2}' | tr '\n' ' ' | sed 's/ $//')
{
  echo "# Evaluation beside the training passes, one process (issue #44), $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo
  echo "- commit: $(git rev-parse --short HEAD)${DIRTY:+ with uncommitted changes to $DIRTY}; command: \`$CMD\`"
  echo "- machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(free -g | awk '/Mem:/{print $2}') GiB RAM; OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-unset}; load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo
  OMP_NUM_THREADS=$THREADS bench/bin/eval_cost_bench
} | tee "$REPORT"
