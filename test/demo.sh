#!/usr/bin/env bash
# make demo: a throwaway cluster that loads a graph (Cora from ../shared/data,
# else a generated planted-partition graph) and shows what gnn does with it.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
make_workdir DIR
PORT=$(free_port)
cleanup() { pg_stop "$DIR"; rm -rf "$DIR"; }
trap cleanup EXIT
pg_start "$DIR" "$PORT"
PSQL=(su postgres -s /bin/bash -c "'$PG_BINDIR/psql' -X -h '$DIR' -p $PORT -d postgres -v ON_ERROR_STOP=1 -P pager=off")
run_sql() { "${PSQL[@]}" ; }

if DATA=$(gnn_data_dir); then
  echo "== loading Cora from $DATA"
  cat <<SQL | run_sql
CREATE EXTENSION gnn;
CREATE TABLE papers (id int PRIMARY KEY, label int, split text);
CREATE TABLE cites (src int, dst int);
CREATE TABLE words (id int, feature int, value real);
\copy papers FROM '$DATA/cora/nodes.csv' WITH (FORMAT csv, HEADER true)
\copy cites FROM '$DATA/cora/edges.csv' WITH (FORMAT csv, HEADER true)
\copy words FROM '$DATA/cora/features_coo.csv' WITH (FORMAT csv, HEADER true)
\timing on
SELECT * FROM gnn.load_graph('cora', edges => 'cites', nodes => 'papers', label => 'label',
                             split => 'split', sparse_features => 'words', undirected => true);
\timing off
SQL
  G=cora; NODE=35
else
  echo "== ../shared/data not found: generating a planted-partition graph"
  { echo "CREATE EXTENSION gnn;"; cat "$REPO_ROOT/test/planted_partition.sql";
    echo "SELECT * FROM gnn.load_graph('planted', edges => 'pp_edges', nodes => 'pp_nodes', features => 'feat',
                                   label => 'label', split => 'split', undirected => true);"; } | run_sql
  G=planted; NODE=7
fi

cat <<SQL | run_sql
\echo == what is loaded (gnn.graphs)
SELECT name, owner, nodes, edges, feature_dim, features, classes, train, val, test,
       pg_size_pretty(bytes) AS size FROM gnn.graphs;
\echo == degree distribution
SELECT width_bucket(gnn.degree('$G', n), 0, 20, 4) AS bucket, min(gnn.degree('$G', n)) AS min_degree,
       max(gnn.degree('$G', n)) AS max_degree, count(*) AS nodes
FROM (SELECT ids AS n FROM generate_series(0, 99) ids) s GROUP BY 1 ORDER BY 1;
\echo == neighbours of node $NODE
SELECT * FROM gnn.neighbors('$G', $NODE) ORDER BY neighbor LIMIT 10;
SQL
echo "== demo finished; the throwaway cluster is removed"
