#!/usr/bin/env bash
# Latency of gnn.embedding under load: 32 pgbench sessions calling
# gnn.embedding (checked against both graph versions, as in
# test/t/005_concurrency.pl) while a job trains on the graph, another session
# replaces it every 0.3 s and a third loads and drops another graph.
#   bench/concurrency.sh [seconds=60] [clients=32]
# Prints p50 / p99 / max of gnn.embedding and the number of wrong answers.
set -euo pipefail
source "$(dirname "$0")/../test/lib.sh"
cd "$REPO_ROOT"
secs=${1:-60}
clients=${2:-32}
make_workdir BW
PORT=$(free_port)
trap 'pg_stop "$BW"; [ -n "${GNN_KEEP:-}" ] || rm -rf "$BW"' EXIT
pg_start "$BW" "$PORT" "max_connections = 80" "gnn.threads = 1" "max_parallel_workers_per_gather = 0"
PSQL="$PG_BINDIR/psql -X -q -At -h $BW -p $PORT -U postgres postgres"
# the tables and expectations of test/t/005_concurrency.pl
sed -n '/^sq(q{/,/^});/p' test/t/005_concurrency.pl | sed '1d;$d' > "$BW/setup.sql"
LOAD_A="SELECT gnn.load_graph('g', 'ea', nodes => 'na', features => 'feat', label => 'label', split => 'split', replace => true)"
LOAD_B="SELECT gnn.load_graph('g', 'eb', nodes => 'nb', features => 'feat', label => 'label', split => 'split', replace => true)"
{
  cat "$BW/setup.sql"
  echo "$LOAD_A;"
  echo "SELECT gnn.train('g', model => 'gcn', name => 'm', hidden => 16, epochs => 10, seed => 1, wait => true);"
  echo "$LOAD_B;"
  echo "INSERT INTO expect SELECT 'B', i, gnn.embedding('m', i), gnn.degree('g', i), NULL FROM generate_series(0, 49) i;"
  echo "$LOAD_A;"
  echo "INSERT INTO expect SELECT 'A', i, gnn.embedding('m', i), gnn.degree('g', i), NULL FROM generate_series(0, 49) i;"
} > "$BW/init.sql"
chown -R postgres "$BW"
as_pg "$PSQL -f '$BW/init.sql'" >/dev/null
cat > "$BW/embedding.sql" <<'SQL'
\set id random(0, 49)
SELECT 1 / (SELECT count(*) FROM expect x WHERE x.id = :id AND close_to(x.emb, gnn.embedding('m', :id)))::int;
SQL
chown postgres "$BW/embedding.sql"
job=$(as_pg "$PSQL -c \"SELECT gnn.train('g', model => 'gcn', name => 'bg', hidden => 16, epochs => 1000000, seed => 2)\"")
n=$((secs * 3))
as_pg "$PSQL -c \"DO \\\$\\\$ BEGIN FOR i IN 1..$n LOOP PERFORM gnn.load_graph('g', CASE WHEN i % 2 = 1 THEN 'eb' ELSE 'ea' END::regclass, nodes => CASE WHEN i % 2 = 1 THEN 'nb' ELSE 'na' END::regclass, features => 'feat', label => 'label', split => 'split', replace => true); PERFORM pg_sleep(0.3); END LOOP; END \\\$\\\$\"" &
r=$!
as_pg "$PSQL -c \"DO \\\$\\\$ BEGIN FOR i IN 1..$n LOOP PERFORM gnn.load_graph('other', 'oe'); PERFORM pg_sleep(0.1); PERFORM gnn.drop_graph('other'); PERFORM pg_sleep(0.1); END LOOP; END \\\$\\\$\"" &
d=$!
cd "$BW"
rc=0
as_pg "cd '$BW' && $PG_BINDIR/pgbench -n -c $clients -j 2 -T $secs -l --log-prefix=lat -f embedding.sql -h $BW -p $PORT -U postgres postgres" > "$BW/pgbench.out" 2>&1 || rc=$?
kill $r $d 2>/dev/null || true
wait 2>/dev/null || true
as_pg "$PSQL -c 'SELECT gnn.cancel($job)'" >/dev/null
grep -E 'processed|failed|latency average|tps' "$BW/pgbench.out" || true
aborted=$(grep -c 'aborted' "$BW/pgbench.out" || true)
cat "$BW"/lat* | awk '{print $3}' | sort -n > "$BW/lat.sorted"
N=$(wc -l < "$BW/lat.sorted")
pct() { sed -n "$(( ($N * $1 + 99) / 100 ))p" "$BW/lat.sorted"; }
printf 'gnn.embedding under load: %d sessions, %d s, %d calls, p50 %.2f ms, p99 %.2f ms, max %.2f ms, wrong answers/aborted clients %d, load %s\n' \
  "$clients" "$secs" "$N" "$(echo "$(pct 50) / 1000" | bc -l)" "$(echo "$(pct 99) / 1000" | bc -l)" \
  "$(echo "$(tail -1 "$BW/lat.sorted") / 1000" | bc -l)" "$aborted" "$(cut -d' ' -f1-3 /proc/loadavg)"
[ "$rc" -eq 0 ] && [ "$aborted" -eq 0 ]
