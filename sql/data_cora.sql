-- Cora from ../shared/data (the runner skips this test where the data is missing).
CREATE EXTENSION IF NOT EXISTS gnn;
\getenv datadir GNN_DATA_DIR
\set nodes_file :datadir '/cora/nodes.csv'
\set edges_file :datadir '/cora/edges.csv'
\set coo_file :datadir '/cora/features_coo.csv'
CREATE TABLE cora_nodes (id int PRIMARY KEY, label int, split text);
CREATE TABLE cora_edges (src int, dst int);
CREATE TABLE cora_coo (id int, feature int, value real);
COPY cora_nodes FROM :'nodes_file' WITH (FORMAT csv, HEADER true);
COPY cora_edges FROM :'edges_file' WITH (FORMAT csv, HEADER true);
COPY cora_coo FROM :'coo_file' WITH (FORMAT csv, HEADER true);
-- dense real[] features from the dense file: whole lines, split on commas
\set feat_file :datadir '/cora/features.csv'
CREATE TABLE raw_lines (line text);
COPY raw_lines FROM :'feat_file' WITH (FORMAT text);
CREATE TABLE cora_feat AS
  SELECT n.id, n.label, n.split, f.x
  FROM cora_nodes n JOIN
       (SELECT split_part(line, ',', 1)::int AS id,
               string_to_array(substr(line, strpos(line, ',') + 1), ',')::real[] AS x
        FROM raw_lines WHERE line NOT LIKE 'id,%') f USING (id);
-- the dense and the sparse forms agree
SELECT count(*) AS nonzeros_match FROM cora_coo c JOIN cora_feat f USING (id) WHERE f.x[c.feature + 1] = c.value;

SELECT nodes, edges, feature_dim, features, classes, train, val, test
FROM gnn.load_graph('cora', 'cora_edges', nodes => 'cora_feat', features => 'x',
                    label => 'label', split => 'split', undirected => true);
SELECT nodes, edges, feature_dim, features
FROM gnn.load_graph('cora_sparse', 'cora_edges', nodes => 'cora_nodes', sparse_features => 'cora_coo',
                    label => 'label', split => 'split', undirected => true);
-- directed: 5429 arcs; the nodes are the endpoints
SELECT nodes, edges FROM gnn.load_graph('cora_directed', 'cora_edges');

-- every node's degree equals the one SQL computes over the same table
WITH arcs AS (SELECT src, dst FROM cora_edges UNION SELECT dst, src FROM cora_edges),
     deg AS (SELECT n.id, count(a.dst) AS d FROM cora_nodes n LEFT JOIN arcs a ON a.src = n.id GROUP BY n.id)
SELECT count(*) AS nodes_checked,
       count(*) FILTER (WHERE gnn.degree('cora', id) <> d) AS mismatches
FROM deg;
WITH deg AS (SELECT src AS id, count(*) AS d FROM cora_edges GROUP BY src)
SELECT count(*) FILTER (WHERE gnn.degree('cora_directed', id) <> d) AS directed_mismatches FROM deg;
-- neighbours agree with the table
SELECT array_agg(neighbor ORDER BY neighbor) = (SELECT array_agg(x::bigint ORDER BY x) FROM
        (SELECT dst AS x FROM cora_edges WHERE src = 35 UNION SELECT src FROM cora_edges WHERE dst = 35) s)
FROM gnn.neighbors('cora', 35);

-- end to end: a GCN trained through gnn.train reaches published accuracy, and
-- gnn.predict scored against the labels by SQL agrees with the recorded metric
SET client_min_messages = warning;
SELECT gnn.train('cora_sparse', model => 'gcn', name => 'cora_gcn', hidden => 16, epochs => 200, lr => 0.01,
                 weight_decay => 5e-4, dropout => 0.5, seed => 1, wait => true) > 0 AS trained;
RESET client_min_messages;
SELECT (metrics->>'test_acc')::float8 >= 0.80 AS at_least_80_percent, (metrics->>'epochs_run')::int AS epochs
FROM gnn.models WHERE name = 'cora_gcn';
SELECT abs(avg((p.label = n.label)::int) - (SELECT (metrics->>'test_acc')::float8 FROM gnn.models WHERE name = 'cora_gcn'))
       < 1e-6 AS predict_agrees
FROM gnn.predict('cora_gcn') p JOIN cora_nodes n USING (id) WHERE n.split = 'test';
SELECT gnn.drop_model('cora_gcn');

-- link prediction with the task's defaults reaches GAE's quality (test AUC >= 0.90):
-- GraphSAGE (gnn.train's default model), GCN, and through the graph's one edge type
SET client_min_messages = warning;
SELECT gnn.train('cora_sparse', task => 'link_prediction', name => 'cora_lp_sage', seed => 1, wait => true) > 0 AS trained;
SELECT gnn.train('cora_sparse', task => 'link_prediction', model => 'gcn', name => 'cora_lp_gcn', seed => 1,
                 wait => true) > 0 AS trained;
SELECT gnn.train('cora_sparse', task => 'link_prediction', name => 'cora_lp_typed', seed => 1, wait => true,
                 options => '{"edge_type": "cora_edges"}') > 0 AS trained;
RESET client_min_messages;
SELECT name, (metrics->>'test_auc')::float8 >= 0.90 AS auc_at_least_0_90, params->>'epochs' AS epochs,
       params->>'dropout' AS dropout
FROM gnn.models WHERE name LIKE 'cora_lp%' ORDER BY name;
SELECT gnn.drop_model(n) FROM unnest(ARRAY['cora_lp_sage', 'cora_lp_gcn', 'cora_lp_typed']) n;
SELECT gnn.drop_graph('cora'), gnn.drop_graph('cora_sparse'), gnn.drop_graph('cora_directed');
