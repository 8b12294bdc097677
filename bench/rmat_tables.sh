# bench/rmat_tables.sh: sourced by the serving benches (serve.sh, serve_tail.sh,
# refresh_serve.sh) after test/lib.sh: an R-MAT graph (bench/rmat.c) as the
# tables edges (src, dst) and nodes (id, feat real[DIM], label 0-7, split
# train/val/test 10/3/3 by a hash of the id).
RMAT=/tmp/gnn-bench-rmat.$$   # the generator where postgres can run it; the caller's cleanup removes it

# rmat_build: compile the generator to $RMAT
rmat_build() {
  mkdir -p "$BENCH/bin"
  cc -O2 -Wall -o "$BENCH/bin/rmat" "$BENCH/rmat.c"
  install -m 755 "$BENCH/bin/rmat" "$RMAT"
}

# rmat_tables SCALE EDGES DIM SEED: the two tables, through the caller's psql_pg
rmat_tables() {
  local scale=$1 edges=$2 dim=$3 seed=$4
  psql_pg -c "'CREATE TABLE edges (src int, dst int); CREATE TABLE raw_nodes (id int, feat real[])'"
  "$RMAT" edges "$scale" "$edges" "$seed" | psql_pg -c "'COPY edges FROM STDIN WITH (FORMAT binary)'"
  "$RMAT" nodes "$scale" "$dim" "$((seed + 1))" | psql_pg -c "'COPY raw_nodes FROM STDIN WITH (FORMAT binary)'"
  psql_pg -c "\"CREATE TABLE nodes AS SELECT id, feat, (hashint4(id) & 7) AS label,
  CASE WHEN hashint4(id + 1) & 15 < 10 THEN 'train' WHEN hashint4(id + 1) & 15 < 13 THEN 'val' ELSE 'test' END AS split
  FROM raw_nodes; DROP TABLE raw_nodes\""
}
