#!/usr/bin/env bash
# test/peers/pyg_export.sh: PyG loads what gnn.export_model writes and
# reproduces gnn's logits on Cora within 1e-5 (GCN and GraphSAGE), and a
# model exported and imported back answers as the original.  Needs the
# peers (bash ../shared/vendor/peers/build.sh /opt/gnn-peers; GNN_PEERS
# names another place) and ../shared/data; skips with a message without
# them.  Prints TAP lines.
set -uo pipefail
source "$(dirname "$0")/../lib.sh"
cd "$REPO_ROOT"
PEERS=${GNN_PEERS:-/opt/gnn-peers}
if ! DATA=$(gnn_data_dir); then echo "ok 1 # SKIP ../shared/data not found"; exit 0; fi
if [ ! -f "$PEERS/env.sh" ]; then
  echo "ok 1 # SKIP the PyG peers are not built in $PEERS (bash ../shared/vendor/peers/build.sh $PEERS, 40-60 min)"; exit 0
fi
PY=(env OMP_NUM_THREADS=1 PYTHONPATH="$(. "$PEERS/env.sh"; echo "$PYTHONPATH")" /usr/bin/python3)
make_workdir W
PORT=$(free_port)
trap 'pg_stop "$W"; rm -rf "$W"' EXIT
pg_start "$W" "$PORT" "gnn.threads = 1" >/dev/null || { echo "not ok 1 - the server did not start"; exit 1; }
chmod 777 "$W"
psql_pg() { su postgres -s /bin/bash -c "'$PG_BINDIR/psql' -X -q -At -h '$W' -p $PORT -d postgres -v ON_ERROR_STOP=1 $*"; }
psql_pg >/dev/null 2>"$W/load.err" <<SQL || { echo "not ok 1 - loading Cora"; cat "$W/load.err"; exit 1; }
SET client_min_messages = warning;
CREATE EXTENSION gnn;
CREATE TABLE papers (id int PRIMARY KEY, label int, split text);
CREATE TABLE cites (src int, dst int);
CREATE TABLE words (id int, feature int, value real);
\copy papers FROM '$DATA/cora/nodes.csv' WITH (FORMAT csv, HEADER true)
\copy cites FROM '$DATA/cora/edges.csv' WITH (FORMAT csv, HEADER true)
\copy words FROM '$DATA/cora/features_coo.csv' WITH (FORMAT csv, HEADER true)
SELECT gnn.load_graph('cora', 'cites', nodes => 'papers', label => 'label', split => 'split',
                      sparse_features => 'words', undirected => true);
SELECT gnn.train('cora', model => 'gcn', name => 'x_gcn', epochs => 20, seed => 1, wait => true);
SELECT gnn.train('cora', model => 'graphsage', name => 'x_sage', epochs => 10, seed => 1, wait => true);
COPY (SELECT encode(gnn.export_model('x_gcn'), 'hex')) TO '$W/x_gcn.hex';
COPY (SELECT encode(gnn.export_model('x_sage'), 'hex')) TO '$W/x_sage.hex';
COPY (SELECT id, array_to_string(embedding, ',') FROM gnn._embedding_rows('x_gcn', layer => 1)) TO '$W/x_gcn.csv' WITH (FORMAT csv);
COPY (SELECT id, array_to_string(embedding, ',') FROM gnn._embedding_rows('x_sage', layer => 1)) TO '$W/x_sage.csv' WITH (FORMAT csv);
SQL
n=0
for m in x_gcn x_sage; do
  n=$((n + 1))
  python3 -c "import sys; open(sys.argv[2], 'wb').write(bytes.fromhex(open(sys.argv[1]).read().replace('\\\\x', '').replace('\\\\n', '').strip()))" \
    "$W/$m.hex" "$W/$m.safetensors"
  # the CSV's second column is quoted (it holds commas): unquote it
  sed -i 's/"//g' "$W/$m.csv"
  if out=$("${PY[@]}" bench/pyg_export_check.py --data "$DATA/cora" --blob "$W/$m.safetensors" --logits "$W/$m.csv" 2>&1); then
    echo "ok $n - PyG loads gnn.export_model('$m') and reproduces its logits: $out"
  else
    echo "not ok $n - PyG on gnn.export_model('$m'): $out"
  fi
done
# exported and imported back: the same predictions
n=$((n + 1))
same=$(psql_pg -c "\"SELECT gnn.import_model('x_back', gnn.export_model('x_sage'), 'cora') > 0\"" \
       -c "\"SELECT bool_and(a.label = b.label AND abs(a.score - b.score) < 1e-6) FROM gnn.predict('x_sage') a JOIN gnn.predict('x_back') b USING (id)\"" 2>&1 | tail -1)
[ "$same" = "t" ] && echo "ok $n - exported and imported back: the same predictions" || echo "not ok $n - import of an export: $same"
