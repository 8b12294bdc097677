#!/usr/bin/env bash
# Runs every test suite: core unit tests (plain C, no server), pg_regress on a
# temporary instance, TAP tests with prove.  Ends with "N passed, N failed"
# summing all suites and exits non-zero on any failure.
set -uo pipefail
source "$(dirname "$0")/lib.sh"
cd "$REPO_ROOT"

PASS=0
FAIL=0
SKIP=0
# each suite's time, printed as it ends and again in a table at the end
SUITE_NAME=""; SUITE_T0=0; TIMES=()
suite_end() {
  if [ -n "$SUITE_NAME" ]; then
    local d=$((SECONDS - SUITE_T0))
    TIMES+=("$(printf '%5d s  %s' "$d" "$SUITE_NAME")")
    printf -- '--- time: %d s (%s)\n' "$d" "$SUITE_NAME"
  fi
  SUITE_NAME=""
}
suite() { suite_end; SUITE_NAME=$1; SUITE_T0=$SECONDS; printf '\n=== %s\n' "$1"; }
# what failed, repeated at the very end, where a log's tail (CI's) shows it
FAILED=()
tally() { # name pass fail [lines naming what failed]
  printf -- '--- %s: %d passed, %d failed\n' "$1" "$2" "$3"
  PASS=$((PASS + $2)); FAIL=$((FAIL + $3))
  if [ "$3" -gt 0 ]; then
    FAILED+=("$1: $3 failed")
    [ -n "${4:-}" ] && while IFS= read -r l; do FAILED+=("    $l"); done < <(printf '%s\n' "$4" | head -8)
  fi
  return 0
}

# GNN_SUITES (for development): a subset of core, asan, regress, docs, peers, tap, fuzzsql; model (make fuzz only)
want() { if [ "$1" = model ]; then [[ " ${GNN_SUITES:-} " == *" model "* ]]; else [ -z "${GNN_SUITES:-}" ] || [[ " $GNN_SUITES " == *" $1 "* ]]; fi; }

# ------------------------------------------------------------------ core unit tests
# Test programs run two at a time (GNN_TEST_JOBS), each into its own file, and
# are tallied in name order; test_threads, which measures how threads behave on
# a busy machine, runs alone afterwards.
BIN_OUT=$(mktemp -d /tmp/gnn-bin-XXXXXX)
trap 'rm -rf "$BIN_OUT"' EXIT
par_run() {  # par_run DIR JOBS ENV-ASSIGNMENTS BIN...: DIR/<name>.out and DIR/<name>.rc
  local dir=$1 jobs=$2 envs=$3; shift 3
  [ $# -gt 0 ] || return 0
  printf '%s\n' "$@" | xargs -P "$jobs" -I{} bash -c \
    'b=$(basename "$1"); env '"$envs"' "$1" > "$2/$b.out" 2>&1; echo $? > "$2/$b.rc"' _ {} "$dir"
}
run_bins() {  # run_bins DIR ENV-ASSIGNMENTS BIN...: the alone-only ones after the rest
  local dir=$1 envs=$2 t; shift 2
  local many=() alone=()
  for t in "$@"; do
    [ -x "$t" ] || continue
    case "$(basename "$t")" in test_threads) alone+=("$t") ;; *) many+=("$t") ;; esac
  done
  par_run "$dir" "${GNN_TEST_JOBS:-2}" "$envs" "${many[@]}"
  par_run "$dir" 1 "$envs" "${alone[@]}"
}
suite "core unit tests"
if want core; then
mkdir -p "$BIN_OUT/core"
run_bins "$BIN_OUT/core" "" test/core/bin/test_*
for t in test/core/bin/test_*; do
  [ -f "$BIN_OUT/core/$(basename "$t").rc" ] || continue
  out=$(cat "$BIN_OUT/core/$(basename "$t").out"); rc=$(cat "$BIN_OUT/core/$(basename "$t").rc")
  echo "$out" | grep -E '^(not )?ok |^# ' | grep -vE '^ok .*' | head -50
  p=$(echo "$out" | grep -c '^ok ')
  f=$(echo "$out" | grep -c '^not ok ')
  s=$(echo "$out" | grep -c '^ok .*# SKIP')
  SKIP=$((SKIP + s))
  if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; echo "$(basename "$t") exited with status $rc"; echo "$out" | tail -5; fi
  tally "$(basename "$t")" "$p" "$f" "$(echo "$out" | grep -E '^not ok |exited|Assert|Segmentation' ; [ "$rc" -ne 0 ] && echo "exit status $rc")"
done
fi

# ------------------------------------------------------------------ layers (no server)
# the folder-to-folder arrows of the built objects (ARCHITECTURE.md, test/layers.sh)
suite "layers"
if want layers; then
  out=$(bash test/layers.sh 2>&1); rc=$?
  echo "$out" | grep -E '^not ok |^#   ' | head -40
  p=$(echo "$out" | grep -c '^ok ')
  f=$(echo "$out" | grep -c '^not ok ')
  if [ $rc -ne 0 ] && [ "$f" -eq 0 ]; then f=1; echo "test/layers.sh exited with status $rc"; fi
  tally "layers" "$p" "$f"
fi

# ------------------------------------------------------------------ core tests under ASan + UBSan
# test/core/bin-san (make core-tests-san), two at a time with one thread each.
# make test leaves out the ones that take long under the sanitizers and whose
# code the others reach (they run plain above): test_train (minutes),
# test_estimate and test_relabel_math (arithmetic), test_topk (a scan the
# inference tests run), test_linkpred, test_subgraph_train and test_train_mb
# (training loops that test_train_small and test_hetero run under them).
# make fuzz (GNN_SAN_FULL=1), and SANITIZE=1, run every one.  The rest run their
# randomised and exhaustive loops short (GNN_TEST_SHORT: the same first seeds;
# test/core/check.h's check_len), full under make fuzz and in the plain run above.
SAN_LONG=" test_train test_estimate test_relabel_math test_topk test_linkpred test_subgraph_train test_train_mb "
suite "core unit tests, AddressSanitizer + UndefinedBehaviorSanitizer"
if want asan; then
mkdir -p "$BIN_OUT/san"
SAN_BINS=()
for t in test/core/bin-san/test_*; do
  [ -x "$t" ] || continue
  if [ -z "${GNN_SAN_FULL:-}" ] && [[ "$SAN_LONG" == *" $(basename "$t") "* ]]; then
    echo "# $(basename "$t"): make fuzz runs it under the sanitizers"; continue
  fi
  SAN_BINS+=("$t")
done
# the CUDA runtime keeps allocations LeakSanitizer cannot attribute (its module is
# unloaded by then): under the sanitizers the parity tests skip CUDA; the plain run loads it
run_bins "$BIN_OUT/san" "GNN_CUDA_SO=/nonexistent/gnn_cuda.so ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 \
  UBSAN_OPTIONS=print_stacktrace=1 OMP_NUM_THREADS=1 GNN_TEST_SHORT=$([ -n "${GNN_SAN_FULL:-}" ] && echo 0 || echo 1)" "${SAN_BINS[@]}"
for t in "${SAN_BINS[@]}"; do
  out=$(cat "$BIN_OUT/san/$(basename "$t").out"); rc=$(cat "$BIN_OUT/san/$(basename "$t").rc")
  p=$(echo "$out" | grep -c '^ok ')
  f=$(echo "$out" | grep -c '^not ok ')
  if echo "$out" | grep -qE 'ERROR: AddressSanitizer|ERROR: LeakSanitizer|runtime error:'; then
    f=$((f + 1)); echo "$out" | grep -E -A12 'ERROR: AddressSanitizer|ERROR: LeakSanitizer|runtime error:' | head -40
  elif [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; echo "$(basename "$t") exited with status $rc"; echo "$out" | tail -5; fi
  tally "asan $(basename "$t")" "$p" "$f" "$(echo "$out" | grep -E '^not ok |ERROR: |runtime error:'; [ "$rc" -ne 0 ] && echo "exit status $rc")"
done
fi

# ------------------------------------------------------------------ pg_regress
DATA=$(gnn_data_dir || true)
make_workdir WORK
trap 'rm -rf "$BIN_OUT"; [ -n "${GNN_KEEP:-}" ] || rm -rf "$WORK"' EXIT
suite "pg_regress"
if want regress; then
cp -r sql expected test/regress.conf test/shop_schema.sql test/relsel_schema.sql "$WORK/"
chown -R postgres:postgres "$WORK"
TESTS=()
for f in sql/*.sql; do
  n=$(basename "$f" .sql)
  case "$n" in gnn--*) continue ;; esac
  if [[ "$n" == data_* ]] && [ -z "$DATA" ]; then
    echo "# SKIP $n: ../shared/data not found"; SKIP=$((SKIP + 1)); continue
  fi
  if [[ "$n" == pgvector_* ]] && [ ! -f "$(pg_config --sharedir)/extension/vector.control" ]; then
    echo "# SKIP $n: pgvector is not installed (make deps builds it from ../shared/vendor when that is there)"
    SKIP=$((SKIP + 1)); continue
  fi
  TESTS+=("$n")
done
PORT=$(free_port)
as_pg "cd '$WORK' && GNN_DATA_DIR='$DATA' PGTZ=UTC '$PG_REGRESS' --temp-instance='$WORK/tmp_instance' \
  --temp-config='$WORK/regress.conf' --bindir='$PG_BINDIR' --port=$PORT --inputdir=. --outputdir=. \
  --dbname=contrib_regression ${TESTS[*]}" > "$WORK/regress.log" 2>&1
rc=$?
cat "$WORK/regress.log" | grep -E '\.\.\. |tests|failed|passed' | head -100
p=$(grep -cE '\.\.\. ok' "$WORK/regress.log")
f=$(grep -cE '\.\.\. FAILED|\.\.\. failed' "$WORK/regress.log")
if [ $rc -ne 0 ] && [ "$f" -eq 0 ]; then f=1; tail -20 "$WORK/regress.log"; fi
if [ -s "$WORK/regression.diffs" ]; then head -150 "$WORK/regression.diffs"; fi
tally "pg_regress" "$p" "$f" "$(grep -E '\.\.\. (FAILED|failed)' "$WORK/regress.log"; [ $rc -ne 0 ] && echo "pg_regress exit status $rc")"
fi

# ------------------------------------------------------------------ docs
# every SQL block of README.md and docs/*.md against the output shown with it,
# and docs/reference.md against the installed extension's catalog
suite "docs"
if want docs && ! command -v python3 >/dev/null; then
  echo "# SKIP docs: python3 is not installed (test/docs/*.py parse the markdown)"; SKIP=$((SKIP + 1))
elif want docs; then
bash test/docs/run_docs.sh > "$WORK/docs.log" 2>&1
rc=$?
grep -E '^not ok|# SKIP|^#   |^# docs:' "$WORK/docs.log" | head -80
p=$(grep -cE '^ok [0-9]+' "$WORK/docs.log")
f=$(grep -cE '^not ok [0-9]+' "$WORK/docs.log")
s=$(grep -cE '^ok [0-9]+ .*# SKIP' "$WORK/docs.log")
SKIP=$((SKIP + s))
if [ $rc -ne 0 ] && [ "$f" -eq 0 ]; then f=1; tail -20 "$WORK/docs.log"; fi
tally "doc blocks" "$p" "$f" "$(grep -E '^not ok' "$WORK/docs.log")"
bash test/docs/reference.sh --check > "$WORK/reference.log" 2>&1
rc=$?
grep -vE '^ok ' "$WORK/reference.log" | head -90
p=$(grep -cE '^ok [0-9]+' "$WORK/reference.log")
f=$(grep -cE '^not ok [0-9]+' "$WORK/reference.log")
if [ $rc -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi
tally "docs/reference.md" "$p" "$f" "$(grep -E '^not ok' "$WORK/reference.log")"
fi

# ------------------------------------------------------------------ peers
# what users exchange with PyG: exported models load there and compute the
# same logits (skips without the peers: ../shared/vendor/peers/build.sh)
suite "PyG peer"
if want peers; then
bash test/peers/pyg_export.sh > "$WORK/peers.log" 2>&1
cat "$WORK/peers.log"
p=$(grep -cE '^ok [0-9]+' "$WORK/peers.log")
f=$(grep -cE '^not ok [0-9]+' "$WORK/peers.log")
s=$(grep -cE '^ok [0-9]+ .*# SKIP' "$WORK/peers.log")
SKIP=$((SKIP + s))
tally "PyG peer" "$p" "$f" "$(grep -E '^not ok' "$WORK/peers.log")"
fi

# ------------------------------------------------------------------ TAP
suite "TAP (prove)"
if want tap; then
mkdir -p "$WORK/tap"
cp -r test/t "$WORK/tap/"
chown -R postgres:postgres "$WORK/tap"
# Each file has its own cluster on its own port, so most run two at a time, in
# two lanes (GNN_TAP_LANES=1: one).  The files that time how fast a job stops
# runs afterwards, alone, so a neighbour cannot slow them.
# make test runs the long loops shorter (GNN_TAP_FULL=1, as make fuzz does,
# runs them at length): 007's load/drop cycles 300 (1000), 018's random steps 500 (2000),
# 005's and 011's pgbench runs 6 s and 3 s (12 s, 5 s).
TAP_ALONE=" 017_promises.pl 018_model.pl "
# files that mostly wait (003 waits for pg_cron's next minute) run in a lane of
# their own beside the two, where they cost little CPU and hold up no other file
TAP_WAITING=" 003_cron.pl "
full() { [ -n "${GNN_TAP_FULL:-}" ] && echo "$1" || echo "$2"; }
TAP_ENV="GNN_CYCLES=${GNN_CYCLES:-$(full 1000 300)} GNN_MODEL_STEPS=${GNN_TAP_MODEL_STEPS:-$(full 2000 500)} \
  GNN_CONCURRENCY_SECS=$(full 12 6) GNN_TRACK_SECS=$(full 5 3)"
# the lanes are balanced by each file's time in a lane of make test on this 2-core machine (seconds, as
# measured on a fresh clone on 2026-12-06 15:12-15:16; 015_dist runs 160 s beside another lane since 18:35)
declare -A TAP_COST=([015_dist.pl]=160 [004_faults.pl]=37 [002_jobs.pl]=31 [012_store.pl]=29 [013_feature_store.pl]=29
  [019_similar_index.pl]=28 [008_roles.pl]=20 [011_track.pl]=16 [007_cycles.pl]=14 [010_serve.pl]=13
  [005_concurrency.pl]=11 [001_graph_server.pl]=10 [016_huge_pages.pl]=9 [009_shapes.pl]=8 [014_progress.pl]=6
  [006_permissions.pl]=6 [003_cron.pl]=30)
LANE_FILES=("" ""); LANE_COST=(0 0); ALONE_FILES=""; WAITING_FILES=""
for f in $(for t in test/t/*.pl; do b=$(basename "$t"); echo "${TAP_COST[$b]:-10} $b"; done | sort -rn | cut -d' ' -f2); do
  if [[ "$TAP_ALONE" == *" $f "* ]]; then ALONE_FILES+=" t/$f"; continue; fi
  if [[ "$TAP_WAITING" == *" $f "* ]] && [ "${GNN_TAP_LANES:-2}" -gt 1 ]; then WAITING_FILES+=" t/$f"; continue; fi
  l=0; [ "${GNN_TAP_LANES:-2}" -gt 1 ] && [ "${LANE_COST[1]}" -lt "${LANE_COST[0]}" ] && l=1
  LANE_FILES[$l]+=" t/$f"; LANE_COST[$l]=$((LANE_COST[$l] + ${TAP_COST[$f]:-10}))
done
tap_run() {  # tap_run LOG FILES...
  local log=$1; shift
  as_pg "cd '$WORK/tap' && TESTDIR='$WORK/tap' PATH='$PG_BINDIR':\$PATH PG_REGRESS='$PG_REGRESS' \
    GNN_DATA_DIR='$DATA' GNN_REPO='$REPO_ROOT' $TAP_ENV prove -v --timer -I '$PG_PERL' $*" > "$log" 2>&1
}
rc=0
for l in 0 1; do [ -n "${LANE_FILES[$l]}" ] && { tap_run "$WORK/tap-lane$l.log" ${LANE_FILES[$l]} & }; done
[ -n "$WAITING_FILES" ] && { tap_run "$WORK/tap-lane2.log" $WAITING_FILES & }
for j in $(jobs -p); do wait "$j" || rc=1; done
[ -n "$ALONE_FILES" ] && { tap_run "$WORK/tap-alone.log" $ALONE_FILES || rc=1; }
cat "$WORK"/tap-lane*.log "$WORK/tap-alone.log" > "$WORK/tap.log" 2>/dev/null
grep -E '^(not )?ok |^(\[[0-9:]+\] )?t/|^Result|^# SKIP|skipped' "$WORK/tap.log" | grep -vE '^ok [0-9]+ - ' | head -60
p=$(grep -cE '^ok [0-9]+' "$WORK/tap.log")
f=$(grep -cE '^not ok [0-9]+' "$WORK/tap.log")
if [ $rc -ne 0 ] && [ "$f" -eq 0 ]; then
  f=1; tail -40 "$WORK/tap.log"
  for l in "$WORK"/tap/tmp_check/log/*.log; do [ -f "$l" ] && { echo "== $l"; tail -30 "$l"; }; done
elif [ "$f" -gt 0 ]; then
  grep -B2 -A8 '^not ok' "$WORK/tap.log" | head -80
fi
tally "TAP" "$p" "$f" "$(awk '/^(\[[0-9:]+\] )?t\/[0-9a-z_]+\.pl/ { file = $0; sub(/^\[[0-9:]+\] /, "", file); sub(/ .*/, "", file) }
  /^not ok / { print file ": " $0 }' "$WORK/tap.log"; [ $rc -ne 0 ] && grep -E '^t/.*(Wstat|Failed|Dubious)' "$WORK/tap.log")"
fi

# ------------------------------------------------------------------ the model-based random test at length
# (make fuzz: GNN_MODEL_STEPS steps of test/t/018_model.pl; make test runs 500 in the TAP suite)
suite "model-based random test"
if want model; then
mkdir -p "$WORK/model/t"
cp test/t/018_model.pl test/t/GnnTest.pm "$WORK/model/t/"
chown -R postgres:postgres "$WORK/model"
as_pg "cd '$WORK/model' && TESTDIR='$WORK/model' PATH='$PG_BINDIR':\$PATH PG_REGRESS='$PG_REGRESS' \
  GNN_MODEL_STEPS='${GNN_MODEL_STEPS:-50000}' ${GNN_MODEL_SEED:+GNN_MODEL_SEED='$GNN_MODEL_SEED'} \
  prove -v -I '$PG_PERL' t/018_model.pl" > "$WORK/model.log" 2>&1
rc=$?
grep -E '^(not )?ok |^# model test' "$WORK/model.log" | head -20
p=$(grep -cE '^ok [0-9]+' "$WORK/model.log")
f=$(grep -cE '^not ok [0-9]+' "$WORK/model.log")
if [ $rc -ne 0 ] && [ "$f" -eq 0 ]; then f=1; tail -30 "$WORK/model.log"; fi
[ "$f" -gt 0 ] && grep -A40 'the last statements' "$WORK/model.log" | head -60
tally "model-based random test" "$p" "$f"
fi

# ------------------------------------------------------------------ SQL fuzzer
# every gnn function (from the catalog) with random/boundary/hostile arguments;
# GNN_FUZZ_CALLS (default 2000 here; make fuzz runs more)
suite "SQL fuzzer"
if want fuzzsql; then
bash test/fuzz/run_sql.sh "${GNN_FUZZ_CALLS:-2000}" > "$WORK/fuzzsql.log" 2>&1
rc=$?
grep -E '^# [0-9]+ s;|^not ok|^# fuzz_sql' "$WORK/fuzzsql.log" | head -20
p=$(grep -cE '^ok [0-9]+' "$WORK/fuzzsql.log")
f=$(grep -cE '^not ok [0-9]+' "$WORK/fuzzsql.log")
if [ $rc -ne 0 ] && [ "$f" -eq 0 ]; then f=1; tail -30 "$WORK/fuzzsql.log"; fi
[ "$f" -gt 0 ] && grep -A12 '^not ok' "$WORK/fuzzsql.log" | head -60
tally "SQL fuzzer" "$p" "$f" "$(grep -E '^not ok' "$WORK/fuzzsql.log")"
fi

suite_end
echo
echo "=== time per suite"
[ -n "${GNN_BUILD_SECS:-}" ] && printf '%5d s  %s\n' "$GNN_BUILD_SECS" "build (make all, install, core tests, sanitizer builds)"
printf '%s\n' "${TIMES[@]}"
printf '%5d s  %s\n' "$((SECONDS + ${GNN_BUILD_SECS:-0}))" "in all"
echo
[ "$SKIP" -gt 0 ] && echo "($SKIP skipped, counted as passed where they are TAP skips)"
if [ "${#FAILED[@]}" -gt 0 ]; then echo "=== what failed"; printf '%s\n' "${FAILED[@]}"; echo; fi
echo "$PASS passed, $FAIL failed"
[ "$FAIL" -eq 0 ]
