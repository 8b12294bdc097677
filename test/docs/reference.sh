#!/usr/bin/env bash
# test/docs/reference.sh [--check]: docs/reference.md from the catalog of an
# installed extension.  A temporary instance runs CREATE EXTENSION gnn; every
# function, view, table, composite type and setting of the extension is read
# from pg_proc, pg_class/pg_attribute and pg_settings and written as markdown
# (test/docs/reference.py).  Without --check it writes docs/reference.md (make
# reference); with --check it compares and fails with the difference (make test,
# suite "docs").  Needs the extension installed (make install) and root (the
# server runs as postgres).
set -uo pipefail
source "$(dirname "$0")/../lib.sh"
cd "$REPO_ROOT"

CHECK=0
[ "${1:-}" = "--check" ] && CHECK=1

make_workdir RW
trap 'pg_stop "$RW"; rm -rf "$RW"' EXIT
RP=$(free_port)
pg_start "$RW" "$RP" >/dev/null || { echo "not ok - reference: the server did not start"; exit 1; }
as_pg "'$PG_BINDIR/psql' -X -q -h '$RW' -p $RP -d postgres -v ON_ERROR_STOP=1 -At -f -" \
  < test/docs/reference_catalog.sql > "$RW/catalog.json" 2> "$RW/catalog.err" || {
  echo "not ok - reference: reading the catalog failed"; cat "$RW/catalog.err"; exit 1; }
python3 test/docs/reference.py < "$RW/catalog.json" > "$RW/reference.md" || {
  echo "not ok - reference: generating the markdown failed"; exit 1; }

if [ $CHECK -eq 0 ]; then
  cp "$RW/reference.md" docs/reference.md
  echo "wrote docs/reference.md ($(wc -l < docs/reference.md) lines)"
  exit 0
fi
if diff -u docs/reference.md "$RW/reference.md" > "$RW/reference.diff"; then
  echo "ok 1 - docs/reference.md matches the installed extension's catalog"
else
  echo "not ok 1 - docs/reference.md differs from the installed extension's catalog"
  sed 's/^/# /' "$RW/reference.diff" | head -80
  echo "# regenerate with: make reference"
  exit 1
fi
