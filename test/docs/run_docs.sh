#!/usr/bin/env bash
# test/docs/run_docs.sh [--fill] [FILE.md ...]: every ```sql block of README.md and
# docs/*.md (docs/reference.md has none: test/docs/reference.sh checks it) runs,
# in order, one psql session per file in a fresh database of one temporary
# instance, and its output is compared with the ```text block shown after it
# (test/docs/docblocks.py says how, and the markers that skip a block or expect
# an error).  Prints TAP lines and "# docs: N passed, N failed, N skipped".
# Needs the extension installed (make install) and root (servers run as postgres).
set -uo pipefail
source "$(dirname "$0")/../lib.sh"
cd "$REPO_ROOT"

# --fill: rewrite each ```text block with the output its sql block gave (after an
# intended change of output; review it with git diff)
MODE=compare
[ "${1:-}" = "--fill" ] && { MODE=fill; shift; }
if [ $# -gt 0 ]; then FILES=("$@"); else
  FILES=(README.md)
  for f in docs/*.md; do [ "$f" = docs/reference.md ] || FILES+=("$f"); done
fi

make_workdir DW
trap 'pg_stop "$DW"; [ -n "${GNN_KEEP:-}" ] || rm -rf "$DW"' EXIT

# what a block may need that this machine may lack: NAME<TAB>reason
SKIPS="$DW/skips"; : > "$SKIPS"
EXT=$(pg_config --sharedir)/extension
LIB=$(pg_config --pkglibdir)
# files run side by side (below); one thread per job: this suite shares a small machine with
# the others, and results do not depend on gnn.threads
CONF=("max_worker_processes = 32" "gnn.max_jobs = 12" "gnn.threads = 1")
[ -f "$EXT/vector.control" ] || printf 'pgvector\tpgvector is not installed (make deps builds it from ../shared/vendor when that is there)\n' >> "$SKIPS"
if [ -f "$EXT/pg_cron.control" ] && [ -f "$LIB/pg_cron.so" ]; then
  CONF+=("shared_preload_libraries = 'gnn,pg_cron'" "cron.database_name = 'docs_operations'")
else
  printf 'pg_cron\tpg_cron is not installed\n' >> "$SKIPS"
fi
DATA=$(gnn_data_dir || true)
[ -n "$DATA" ] || printf 'cora\t../shared/data is not there (Cora)\n' >> "$SKIPS"

PORT=$(free_port)
pg_start "$DW" "$PORT" "${CONF[@]}" || { echo "not ok 1 - docs: the server did not start"; exit 1; }

# each file's session runs as soon as one of GNN_DOCS_JOBS (default 3) slots is free:
# the blocks mostly wait for training workers, so files overlap well even on 2 cores
T0=$(date +%s)
run_file() {  # run_file FILE STEM
  local f=$1 stem=$2 db="docs_$2" dir="$DW/run_$2" t
  t=$(date +%s)
  as_pg "'$PG_BINDIR/createdb' -h '$DW' -p $PORT '$db'" > "$dir/createdb.log" 2>&1 || {
    { echo "createdb failed"; cat "$dir/createdb.log"; } > "$dir/output.txt"; return; }
  as_pg "cd '$dir' && PGTZ=UTC GNN_DATA_DIR='$DATA' '$PG_BINDIR/psql' -X -q -h '$DW' -p $PORT -d '$db' \
    -v ON_ERROR_STOP=0 -P pager=off < script.sql > output.txt 2>&1"
  echo $(( $(date +%s) - t )) > "$dir/seconds"
}
STEMS=()
for f in "${FILES[@]}"; do
  stem=$(basename "$f" .md | tr 'A-Z' 'a-z' | tr -c 'a-z0-9\n' '_')
  STEMS+=("$stem")
  # psql runs in a directory of its own, as from a clone: \i test/shop_schema.sql works
  dir="$DW/run_$stem"; mkdir -p "$dir/test"; cp test/*.sql "$dir/test/"
  {
    echo '\set QUIET on'
    echo '\pset pager off'
    echo 'SET client_min_messages = warning;'
    python3 test/docs/docblocks.py script "$f" "$SKIPS"
  } > "$dir/script.sql"
  chown -R postgres:postgres "$dir"
  while [ "$(jobs -rp | wc -l)" -ge "${GNN_DOCS_JOBS:-3}" ]; do sleep 0.2; done
  run_file "$f" "$stem" &
done
wait

N=0; FAILED=0; SKIPPED=0
for i in "${!FILES[@]}"; do
  f=${FILES[$i]}; dir="$DW/run_${STEMS[$i]}"
  [ $MODE = fill ] && python3 test/docs/docblocks.py fill "$f" "$SKIPS" "$dir/output.txt"
  res=$(python3 test/docs/docblocks.py compare "$f" "$SKIPS" "$dir/output.txt")
  while IFS= read -r l; do
    case "$l" in
      "ok - "*) N=$((N + 1)); echo "ok $N - ${l#ok - }"; [[ "$l" == *"# SKIP "* ]] && SKIPPED=$((SKIPPED + 1)) ;;
      "not ok - "*) N=$((N + 1)); FAILED=$((FAILED + 1)); echo "not ok $N - ${l#not ok - }" ;;
      *) echo "$l" ;;
    esac
  done <<< "$res"
  echo "# $f: $(cat "$dir/seconds" 2>/dev/null || echo '?') s"
done
echo "# docs: $((N - FAILED)) passed, $FAILED failed, $SKIPPED skipped, $(( $(date +%s) - T0 )) s"
[ $FAILED -eq 0 ]
