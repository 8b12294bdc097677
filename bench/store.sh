#!/usr/bin/env bash
# bench/store.sh: the graph store (issue #14, durable graphs).  On one R-MAT
# graph with 128-dim features (bench/rmat.c, as bench/load_graph.sh), per round:
#   - load_graph with persist => false (memory only) and with persist => true
#     (the store's write: checksum, write, fsync, rename), same session;
#   - the server restarted (fast shutdown, start): time from pg_ctl start to
#     accepting connections (the postmaster reads every stored header);
#   - the first use of the graph after the restart (gnn.degree: reads the file
#     into shared memory and checks it), against the load from the tables.
# Runs with fsync = on (the store's fsync is what is measured).  The page cache
# holds the file after the restart unless DROP_CACHES=1 (root: echo 3 >
# /proc/sys/vm/drop_caches before the first use, a cold read from disk).
# Writes bench/results/store-<UTC stamp>.md.
# FEATURE_STORE=disk loads with feature_store => 'disk' (the features in their own file, read
# through the cache on use: the first use maps only the rest of the region).
#   SCALE=20 EDGES=10000000 DIM=128 RUNS=3 [DROP_CACHES=1] [FEATURE_STORE=disk] bash bench/store.sh
set -euo pipefail
source "$(dirname "$0")/../test/lib.sh"
BENCH="$REPO_ROOT/bench"
SCALE=${SCALE:-20}
EDGES=${EDGES:-10000000}
DIM=${DIM:-128}
RUNS=${RUNS:-3}
DROP_CACHES=${DROP_CACHES:-0}
FEATURE_STORE=${FEATURE_STORE:-memory}
mkdir -p "$BENCH/bin" "$BENCH/results"
cc -O2 -Wall -o "$BENCH/bin/rmat" "$BENCH/rmat.c"
install -m 755 "$BENCH/bin/rmat" /tmp/gnn-bench-rmat.$$

make_workdir DIR
PORT=$(free_port)
cleanup() { pg_stop "$DIR"; rm -rf "$DIR" /tmp/gnn-bench-rmat.$$; }
trap cleanup EXIT
pg_start "$DIR" "$PORT" "shared_buffers = 2GB" "gnn.max_graph_memory = 8GB" "fsync = on" \
  "max_wal_size = 8GB" "checkpoint_timeout = 1h" "autovacuum = off"
psql_pg() { su postgres -s /bin/bash -c "'$PG_BINDIR/psql' -X -q -At -h '$DIR' -p $PORT -d postgres -v ON_ERROR_STOP=1 $*"; }
ms() { local t0 t1; t0=$(date +%s%N); "$@" >/dev/null; t1=$(date +%s%N); echo $(( (t1 - t0) / 1000000 )); }
median() { sort -n | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else printf "%.0f\n", (a[NR/2]+a[NR/2+1])/2}'; }

STAMP=$(date -u +%Y%m%dT%H%M%SZ)
REPORT="$BENCH/results/store-$STAMP.md"
psql_pg -c "'CREATE EXTENSION gnn'"
psql_pg -c "'CREATE TABLE edges (src int NOT NULL, dst int NOT NULL); CREATE TABLE nodes (id int PRIMARY KEY, feat real[] NOT NULL)'"
/tmp/gnn-bench-rmat.$$ edges "$SCALE" "$EDGES" 42 | psql_pg -c "'COPY edges FROM STDIN WITH (FORMAT binary)'"
/tmp/gnn-bench-rmat.$$ nodes "$SCALE" "$DIM" 43 | psql_pg -c "'COPY nodes FROM STDIN WITH (FORMAT binary)'"
psql_pg -c "'VACUUM (FREEZE, ANALYZE) edges'" -c "'VACUUM (FREEZE, ANALYZE) nodes'" -c "'CHECKPOINT'"
LOAD="SELECT nodes FROM gnn.load_graph('b', edges => 'edges', nodes => 'nodes', id => 'id', features => 'feat', replace => true, feature_store => '$FEATURE_STORE'"
declare -a mem per start first dig
for r in $(seq 0 "$RUNS"); do
  m=$(ms psql_pg -c "\"$LOAD, persist => false)\"")
  p=$(ms psql_pg -c "\"$LOAD, persist => true)\"")
  as_pg "'$PG_BINDIR/pg_ctl' -D '$DIR/data' -m fast -w stop >/dev/null"
  [ "$DROP_CACHES" = 1 ] && { sync; echo 3 > /proc/sys/vm/drop_caches; }
  s=$(ms as_pg "'$PG_BINDIR/pg_ctl' -D '$DIR/data' -l '$DIR/server.log' -w start")
  f=$(ms psql_pg -c "\"SELECT gnn.degree('b', 0)\"")
  # and the features read through the store, every row (the digest): disk features only pay it here
  d=$(ms psql_pg -c "\"SELECT gnn.graph_digest('b')\"")
  [ "$r" = 0 ] && continue   # warm-up round
  mem+=("$m"); per+=("$p"); start+=("$s"); first+=("$f"); dig+=("$d")
  echo "round $r: load ${m} ms, persisting load ${p} ms, restart ${s} ms, first use ${f} ms, then a digest ${d} ms" >&2
done
BYTES=$(psql_pg -c "\"SELECT bytes FROM gnn.graphs WHERE name = 'b'\"")
FILE=$(du -b "$DIR"/data/gnn/*/*/graph.gnn | cut -f1)
M=$(printf '%s\n' "${mem[@]}" | median); P=$(printf '%s\n' "${per[@]}" | median)
S=$(printf '%s\n' "${start[@]}" | median); F=$(printf '%s\n' "${first[@]}" | median)
D=$(printf '%s\n' "${dig[@]}" | median)
{
  echo "# Graph store: persist and restore, $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo
  echo "- commit: $(git -C "$REPO_ROOT" rev-parse --short HEAD); command: \`SCALE=$SCALE EDGES=$EDGES DIM=$DIM RUNS=$RUNS DROP_CACHES=$DROP_CACHES FEATURE_STORE=$FEATURE_STORE bash bench/store.sh\`"
  echo "- machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(free -g | awk '/Mem:/{print $2}') GiB RAM; disk: $(df -h "$DIR" | awk 'NR==2{print $1}')"
  echo "- graph: R-MAT scale $SCALE, $EDGES edges, $DIM-dim features; region $BYTES bytes, graph.gnn $FILE bytes; fsync = on"
  echo "- medians of $RUNS rounds after a warm-up round (ms): ${mem[*]} / ${per[*]} / ${start[*]} / ${first[*]}"
  echo
  echo "| step | ms | ratio to the load from the tables |"
  echo "|---|---:|---:|"
  echo "| load_graph, persist => false | $M | 1.00 |"
  echo "| load_graph, persist => true | $P | $(echo "scale=2; $P / $M" | bc) |"
  echo "| restart (pg_ctl start until it accepts connections) | $S | - |"
  echo "| first use after the restart (read, checksum, validate, map) | $F | $(echo "scale=3; $F / $M" | bc) |"
  echo "| then gnn.graph_digest (every byte, the features included) | $D | $(echo "scale=3; $D / $M" | bc) |"
} | tee "$REPORT"
