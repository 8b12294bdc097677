#!/usr/bin/env bash
# Run the SQL-level fuzzer (test/fuzz/fuzz_sql.pl) on a throwaway cluster.
#   test/fuzz/run_sql.sh [calls=2000]      GNN_FUZZ_SEED=N replays a run
# Prints the TAP output; exits non-zero on a failure.
set -uo pipefail
source "$(dirname "$0")/../lib.sh"
cd "$REPO_ROOT"
calls=${1:-${GNN_FUZZ_CALLS:-2000}}
make_workdir FW
trap '[ -n "${GNN_KEEP:-}" ] || rm -rf "$FW"' EXIT
mkdir -p "$FW/t" && cp test/fuzz/fuzz_sql.pl "$FW/t/" && chown -R postgres:postgres "$FW"
as_pg "cd '$FW' && GNN_FUZZ_CALLS=$calls GNN_FUZZ_SEED='${GNN_FUZZ_SEED:-}' GNN_FUZZ_ACCT='${GNN_FUZZ_ACCT:-}' TESTDIR='$FW' PATH='$PG_BINDIR':\$PATH \
  PG_REGRESS='$PG_REGRESS' prove -v -I '$PG_PERL' t/fuzz_sql.pl" 2>&1
rc=$?
[ $rc -ne 0 ] && [ -f "$FW/tmp_check/log/fuzz_sql_fuzz.log" ] && tail -30 "$FW/tmp_check/log/fuzz_sql_fuzz.log"
exit $rc
