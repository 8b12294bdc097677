#!/usr/bin/env bash
# bench/track.sh: a graph that follows its tables (issue #12, "Speed").
#
# NODES nodes (FEAT-wide real[] features, a label, a split) and EDGES
# weighted edges, tracked (gnn.track), then:
#   - three pairs of a full reload of the graph (gnn.load_graph, replace: the
#     baseline) and a refresh after changing 1% of the edges of the graph
#     just loaded (half deleted, half inserted, each in one statement):
#     best of 3 of each, as a ratio (goal: at most 0.10); then two more 1%
#     rounds over the delta the last one left;
#   - capture cost: rows/s of a bulk INSERT ... SELECT of BULK rows (untracked
#     and tracked interleaved, each after a CHECKPOINT) and of single-row
#     INSERTs (pgbench, one client, SECS s) into the tracked edge table and
#     into an untracked copy of it, as ratios (goal: at least 0.6);
#   - incremental embeddings: a second graph of ENODES nodes and EDEG random
#     out-edges each, a 2-layer GraphSAGE; after 100 edge changes (50 in, 50
#     out) and a refresh, gnn.embed(..., incremental => true) against a full
#     gnn.embed of the same graph, best of 3 rounds each (goal: 10x).
# Writes a markdown report to stdout and bench/results/track-<UTC>.md.
#
#   bash bench/track.sh                              # 1M nodes, 10M edges
#   NODES=100000 EDGES=1000000 bash bench/track.sh   # quick
set -euo pipefail
source "$(dirname "$0")/../test/lib.sh"
BENCH="$REPO_ROOT/bench"
NODES=${NODES:-1000000}
EDGES=${EDGES:-10000000}
FEAT=${FEAT:-16}
BULK=${BULK:-1000000}
SECS=${SECS:-10}
ENODES=${ENODES:-100000}
EDEG=${EDEG:-10}

mkdir -p "$BENCH/results"
make_workdir DIR
PORT=$(free_port)
cleanup() { if [ -n "${KEEP:-}" ]; then echo "kept: $DIR (port $PORT)" >&2; else pg_stop "$DIR"; rm -rf "$DIR"; fi; }
trap cleanup EXIT
pg_start "$DIR" "$PORT" "shared_buffers = 2GB" "gnn.max_graph_memory = 12GB" "max_wal_size = 8GB" \
  "autovacuum = off" "max_parallel_workers_per_gather = 0"
psql_pg() { su postgres -s /bin/bash -c "'$PG_BINDIR/psql' -X -q -At -h '$DIR' -p $PORT -d postgres -v ON_ERROR_STOP=1 $*"; }
stmt_s() {
  psql_pg <<<"\\timing on
$1" | awk '/^Time:/ {t = $2} END {printf "%.3f", t / 1000}'
}
best3() { local b=""; for i in 1 2 3; do t=$(stmt_s "$1"); b=$(awk -v a="$b" -v t="$t" 'BEGIN {print (a == "" || t < a) ? t : a}'); done; echo "$b"; }

STAMP=$(date -u +%Y%m%dT%H%M%SZ)
REPORT="$BENCH/results/track-$STAMP.md"
COMMIT=$(git -C "$REPO_ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)
GEN_START=$(date +%s)
psql_pg <<SQL
CREATE EXTENSION gnn;
SELECT setseed(0.42);
CREATE TABLE n (id bigint PRIMARY KEY, feat real[] NOT NULL, label int, split text);
INSERT INTO n SELECT i, (SELECT array_agg(((i * 7 + j) % 100) / 100.0)::real[] FROM generate_series(1, $FEAT) j),
       i % 7, (ARRAY['train', 'val', 'test'])[1 + i % 3] FROM generate_series(0, $NODES - 1) i;
CREATE TABLE e (src bigint NOT NULL, dst bigint NOT NULL, w real NOT NULL);
INSERT INTO e SELECT (random() * ($NODES - 1))::bigint, (random() * ($NODES - 1))::bigint, 1 + (random() * 3)::int
FROM generate_series(1, $EDGES);
CREATE TABLE e_plain (LIKE e);
VACUUM ANALYZE n, e;
CHECKPOINT;
SQL
GEN_S=$(( $(date +%s) - GEN_START ))
LOAD="SELECT edges FROM gnn.load_graph('g', 'e', nodes => 'n', features => 'feat', label => 'label', split => 'split', weight => 'w', replace => true, track => true);"
psql_pg -c "\"$LOAD\"" >/dev/null
GRAPH=$(psql_pg -F "' | '" -c "\"SELECT nodes, edges, pg_size_pretty(bytes) FROM gnn.graphs WHERE name = 'g'\"")

# 1% of the edges: half deleted, half inserted
CH=$(( EDGES / 100 / 2 ))
change() {
  psql_pg <<SQL >/dev/null
DELETE FROM e WHERE ctid IN (SELECT ctid FROM e TABLESAMPLE SYSTEM (1) LIMIT $CH);
INSERT INTO e SELECT (random() * ($NODES - 1))::bigint, (random() * ($NODES - 1))::bigint, 1 + (random() * 3)::int
FROM generate_series(1, $CH);
SQL
}
# three pairs, each a full reload (the baseline) and then the refresh of a 1% change over
# that freshly loaded graph: best of 3 of each, from the same run
RELOAD_S=""; RELOADS=""
REFRESH_BEST=""; REFRESH_ROUNDS=""; CHANGE_ROWS=""
for round in 1 2 3; do
  t=$(stmt_s "$LOAD")
  RELOAD_S=$(awk -v a="$RELOAD_S" -v t="$t" 'BEGIN {print (a == "" || t < a) ? t : a}')
  RELOADS="$RELOADS${RELOADS:+, }$t s"
  change
  CHANGE_ROWS=$(psql_pg -c "\"SELECT pending_changes FROM gnn.graphs WHERE name = 'g'\"")
  t=$(stmt_s "SELECT * FROM gnn.refresh_graph('g');")
  REFRESH_BEST=$(awk -v a="$REFRESH_BEST" -v t="$t" 'BEGIN {print (a == "" || t < a) ? t : a}')
  REFRESH_ROUNDS="$REFRESH_ROUNDS${REFRESH_ROUNDS:+, }$t s (delta $(psql_pg -c "\"SELECT pg_size_pretty(delta_bytes) FROM gnn.graphs WHERE name = 'g'\""))"
done
# then two more 1% rounds over the delta the last one left (a delta carries every row
# replaced since the graph was loaded; 0 B: the round merged, gnn.merge_threshold)
PILED=""
for round in 1 2; do
  change
  t=$(stmt_s "SELECT * FROM gnn.refresh_graph('g');")
  PILED="$PILED${PILED:+, }$t s (delta $(psql_pg -c "\"SELECT pg_size_pretty(delta_bytes) FROM gnn.graphs WHERE name = 'g'\""))"
done
# readers over the delta the rounds left against the same graph loaded flat (same run):
# node-wise sampling of 20,000 seeds, fan-outs {10, 5}, and a k-hop neighbourhood count
psql_pg -c "\"SELECT gnn.load_graph('flat', 'e', nodes => 'n', features => 'feat', label => 'label', split => 'split', weight => 'w') IS NOT NULL\"" >/dev/null
DELTA_NOW=$(psql_pg -c "\"SELECT pg_size_pretty(delta_bytes) FROM gnn.graphs WHERE name = 'g'\"")
SAMPLE_SQL="SELECT count(*) FROM gnn.sample_neighbors('%s', ARRAY(SELECT id FROM n ORDER BY id LIMIT 20000), ARRAY[10, 5], seed => 1);"
SAMPLE_DELTA=$(best3 "$(printf "$SAMPLE_SQL" g)")
SAMPLE_FLAT=$(best3 "$(printf "$SAMPLE_SQL" flat)")
SAME_SAMPLE=$(psql_pg -c "\"SELECT (SELECT array_agg((layer, src, dst) ORDER BY 1, 2, 3) FROM gnn.sample_neighbors('g', ARRAY(SELECT id FROM n ORDER BY id LIMIT 2000), ARRAY[10, 5], seed => 1)) = (SELECT array_agg((layer, src, dst) ORDER BY 1, 2, 3) FROM gnn.sample_neighbors('flat', ARRAY(SELECT id FROM n ORDER BY id LIMIT 2000), ARRAY[10, 5], seed => 1))\"")
psql_pg -c "\"SELECT gnn.drop_graph('flat')\"" >/dev/null
# the phases of one more refresh (DEBUG1 lines of gnn.refresh_graph)
change
PHASES=$(psql_pg <<<"SET client_min_messages = debug1;
SELECT * FROM gnn.refresh_graph('g');" 2>&1 | sed -n -e 's/.*gnn.refresh_graph: \(.*\) took \(.*\) s/\1: \2 s/p' -e 's/.*gnn: \(mapping in the .*\) took \(.*\) s/(\1: \2 s)/p' | paste -sd ';' | sed 's/;/; /g')
[ -n "${REFRESH_ONLY:-}" ] && { echo "reload $RELOAD_S s ($RELOADS), refresh $REFRESH_BEST s (rounds: $REFRESH_ROUNDS) = $(awk -v a="$REFRESH_BEST" -v b="$RELOAD_S" 'BEGIN {printf "%.3f", a / b}'); over the delta left: $PILED; sampling over the $DELTA_NOW delta $SAMPLE_DELTA s vs flat $SAMPLE_FLAT s (same: $SAME_SAMPLE); phases: $PHASES"; exit 0; }
SAME=$(psql_pg <<'SQL'
SELECT gnn.load_graph('fresh', 'e', nodes => 'n', features => 'feat', label => 'label', split => 'split', weight => 'w') IS NOT NULL;
SELECT gnn.graph_digest('g') = gnn.graph_digest('fresh');
SELECT gnn.drop_graph('fresh');
SQL
)
SAME=$(echo "$SAME" | sed -n 2p)

# capture cost: bulk
BULK_SQL="INSERT INTO %s SELECT (random() * ($NODES - 1))::bigint, (random() * ($NODES - 1))::bigint, 1 FROM generate_series(1, $BULK);"
# interleaved (untracked, tracked, three times), each after a checkpoint: on this kind of VM
# later statements run slower as dirty pages pile up, which all-untracked-first would
# charge to the tracked table
PLAIN_BULK=""; TRACKED_BULK=""; BULK_RUNS=""
for i in 1 2 3; do
  psql_pg -c CHECKPOINT >/dev/null
  tp=$(stmt_s "$(printf "$BULK_SQL" e_plain)")
  psql_pg -c CHECKPOINT >/dev/null
  tt=$(stmt_s "$(printf "$BULK_SQL" e)")
  PLAIN_BULK=$(awk -v a="$PLAIN_BULK" -v t="$tp" 'BEGIN {print (a == "" || t < a) ? t : a}')
  TRACKED_BULK=$(awk -v a="$TRACKED_BULK" -v t="$tt" 'BEGIN {print (a == "" || t < a) ? t : a}')
  BULK_RUNS="$BULK_RUNS${BULK_RUNS:+, }$tp / $tt s"
done
# capture cost: single rows (pgbench, one client)
SCRIPT="$DIR/one.sql"
pgb() {
  printf '\\set a random(0, %d)\n\\set b random(0, %d)\nINSERT INTO %s VALUES (:a, :b, 1);\n' $((NODES - 1)) $((NODES - 1)) "$1" > "$SCRIPT"
  chown postgres "$SCRIPT"
  su postgres -s /bin/bash -c "'$PG_BINDIR/pgbench' -n -h '$DIR' -p $PORT -c 1 -T $SECS -f '$SCRIPT' postgres" 2>/dev/null |
    awk '/^tps/ {printf "%.0f", $3}'
}
PLAIN_TPS=$(pgb e_plain)
TRACKED_TPS=$(pgb e)
PLAIN_TPS2=$(pgb e_plain)
TRACKED_TPS2=$(pgb e)
PLAIN_TPS=$(( (PLAIN_TPS + PLAIN_TPS2) / 2 ))
TRACKED_TPS=$(( (TRACKED_TPS + TRACKED_TPS2) / 2 ))
PENDING=$(psql_pg -c "\"SELECT pending_changes FROM gnn.graphs WHERE name = 'g'\"")
T_ALL=$(stmt_s "SELECT * FROM gnn.refresh_graph('g');")

# incremental embeddings
psql_pg <<SQL >/dev/null
SET client_min_messages = warning;
SELECT setseed(0.17);
CREATE TABLE en (id bigint PRIMARY KEY, feat real[] NOT NULL, label int, split text);
INSERT INTO en SELECT i, ARRAY[random(), random(), random(), random(), random(), random(), random(), (i % 5) / 5.0]::real[],
       i % 5, (ARRAY['train', 'val', 'test'])[1 + i % 3] FROM generate_series(0, $ENODES - 1) i;
CREATE TABLE ee (src bigint NOT NULL, dst bigint NOT NULL);
INSERT INTO ee SELECT i, (random() * ($ENODES - 1))::bigint FROM generate_series(0, $ENODES - 1) i, generate_series(1, $EDEG);
SELECT gnn.load_graph('emb', 'ee', nodes => 'en', features => 'feat', label => 'label', split => 'split', track => true);
SELECT gnn.train('emb', model => 'graphsage', name => 'emb_sage', hidden => 64, epochs => 2, seed => 1, wait => true);
SELECT gnn.embed('emb_sage', 'emb_inc');
SQL
FULL_BEST=""; INC_BEST=""; RECOMP=""
for round in 1 2 3; do
  psql_pg <<SQL >/dev/null
DELETE FROM ee WHERE ctid IN (SELECT ctid FROM ee TABLESAMPLE SYSTEM (1) LIMIT 50);
INSERT INTO ee SELECT (random() * ($ENODES - 1))::bigint, (random() * ($ENODES - 1))::bigint FROM generate_series(1, 50);
SELECT gnn.refresh_graph('emb');
SQL
  OUT=$(psql_pg <<<"\\timing on
SELECT gnn.embed('emb_sage', 'emb_inc', incremental => true);
\\timing off
SELECT 'recomputed=' || gnn.embed_recomputed();" 2>/dev/null)
  t=$(echo "$OUT" | awk '/^Time:/ {printf "%.3f", $2 / 1000}')
  RECOMP=$(echo "$OUT" | sed -n 's/^recomputed=//p')
  INC_BEST=$(awk -v a="$INC_BEST" -v t="$t" 'BEGIN {print (a == "" || t < a) ? t : a}')
  psql_pg -c "\"SELECT gnn.cache_drop('emb_sage')\"" >/dev/null
  t=$(stmt_s "SELECT gnn.embed('emb_sage', 'emb_full');")
  FULL_BEST=$(awk -v a="$FULL_BEST" -v t="$t" 'BEGIN {print (a == "" || t < a) ? t : a}')
done
EMB_SAME=$(psql_pg -c "\"SELECT count(DISTINCT id) || ' rows, equal within 1e-5: ' || (max(abs(x - y)) < 1e-5) FROM emb_inc a JOIN emb_full b USING (id), unnest(a.embedding, b.embedding) u(x, y)\"")

{
  echo "# bench/track.sh, $STAMP"
  echo
  echo "Commit $COMMIT; $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GB", $2 / 1048576}' /proc/meminfo); PostgreSQL $(pg_config --version | awk '{print $2}')."
  echo "$NODES nodes ($FEAT features, label, split), $EDGES weighted edges, random endpoints (generated in $GEN_S s)."
  echo "Graph (nodes | arcs | size): $GRAPH"
  echo
  echo "## Refresh after changing 1% of the edges"
  echo
  echo "| what | seconds | ratio |"
  echo "|---|---|---|"
  echo "| full reload, gnn.load_graph(..., replace => true) (baseline, best of 3: $RELOADS) | $RELOAD_S | 1.00 |"
  echo "| gnn.refresh_graph after $CH deletes + $CH inserts ($CHANGE_ROWS row changes) on the graph just loaded (best of 3 rounds, one after each reload) | $REFRESH_BEST | $(awk -v a="$REFRESH_BEST" -v b="$RELOAD_S" 'BEGIN {printf "%.3f", a / b}') |"
  echo
  echo "Rounds (each: its time, and the delta it left; 0 B: it merged into a new graph): $REFRESH_ROUNDS. Two more 1% rounds over the delta the last left: $PILED."
  echo
  echo "Reading through the $DELTA_NOW delta the rounds left, against the same tables loaded flat: gnn.sample_neighbors of 20,000 seeds, fan-outs {10, 5} (best of 3): $SAMPLE_DELTA s vs $SAMPLE_FLAT s = $(awk -v a="$SAMPLE_DELTA" -v b="$SAMPLE_FLAT" 'BEGIN {printf "%.2f", a / b}'); the same draws (2,000 seeds): $SAME_SAMPLE."
  echo
  echo "Phases of one more refresh (past gnn.merge_threshold: a merge into a new graph): $PHASES."
  echo
  echo "After the three rounds the refreshed graph equals a fresh load (gnn.graph_digest): $SAME."
  echo
  echo "## Capture cost"
  echo
  echo "| insert into the edge table | untracked | tracked | ratio |"
  echo "|---|---|---|---|"
  echo "| bulk INSERT ... SELECT of $BULK rows (rows/s, best of 3 interleaved: $BULK_RUNS) | $(awk -v t="$PLAIN_BULK" -v n="$BULK" 'BEGIN {printf "%.0f", n / t}') | $(awk -v t="$TRACKED_BULK" -v n="$BULK" 'BEGIN {printf "%.0f", n / t}') | $(awk -v a="$PLAIN_BULK" -v b="$TRACKED_BULK" 'BEGIN {printf "%.2f", a / b}') |"
  echo "| single-row INSERTs, pgbench, 1 client, 2 x $SECS s (rows/s) | $PLAIN_TPS | $TRACKED_TPS | $(awk -v a="$PLAIN_TPS" -v b="$TRACKED_TPS" 'BEGIN {printf "%.2f", b / a}') |"
  echo
  echo "Then one refresh applied the $PENDING captured row changes in $T_ALL s."
  echo
  echo "## Incremental embeddings"
  echo
  echo "$ENODES nodes, $EDEG random out-edges each, 2-layer GraphSAGE (hidden 64), the default embedding layer;"
  echo "each round changes 100 edge rows (50 deleted, 50 inserted) and refreshes."
  echo
  echo "| write | seconds (best of 3 rounds) | ratio |"
  echo "|---|---|---|"
  echo "| full gnn.embed (shared results dropped first: inference and every row) | $FULL_BEST | 1.00 |"
  echo "| gnn.embed(..., incremental => true) | $INC_BEST | $(awk -v a="$INC_BEST" -v b="$FULL_BEST" 'BEGIN {printf "%.3f (%.0fx faster)", a / b, b / a}') |"
  echo
  echo "The last incremental write recomputed about $RECOMP nodes; afterwards incremental and full tables: $EMB_SAME."
} | tee "$REPORT"
