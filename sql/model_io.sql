-- Models out and in: gnn.export_model writes safetensors (PyG's layout for
-- GCN, GraphSAGE, node2vec; gnn's for the others), gnn.import_model
-- registers such a blob as the next version of a name, checked against the
-- graph; exported and imported back, a model answers as the original;
-- malformed blobs (truncated, bytes changed, not safetensors at all) are
-- refused with a clear error and leave nothing behind.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS gnn;
SET gnn.threads = 1;
SELECT setseed(0.5);
CREATE TABLE io_nodes AS
  SELECT id, (ARRAY['cat', 'dog', 'eel'])[1 + id % 3] AS kind,
         CASE WHEN id < 90 THEN 'train' WHEN id < 180 THEN 'val' ELSE 'test' END AS split,
         (SELECT array_agg(CASE WHEN j % 3 = id % 3 THEN 0.5 ELSE 0 END + random()::real ORDER BY j)
            FROM generate_series(0, 5) j)::real[] AS feat
  FROM generate_series(0, 299) id;
CREATE TABLE io_edges AS
  SELECT s.id AS src, ((random() * 99)::int * 3 + s.id % 3) % 300 AS dst FROM io_nodes s, generate_series(1, 3) k;
SELECT nodes FROM gnn.load_graph('io', 'io_edges', nodes => 'io_nodes', features => 'feat', label => 'kind',
                                 split => 'split', undirected => true);
SELECT gnn.train('io', model => 'gcn', name => 'io_gcn', epochs => 30, seed => 1, wait => true) > 0 AS gcn;
SELECT gnn.train('io', model => 'gat', name => 'io_gat', epochs => 5, seed => 1, wait => true) > 0 AS gat;
SELECT gnn.train('io', model => 'node2vec', name => 'io_n2v', epochs => 1, seed => 1,
                 options => '{"dim": 8, "walk_length": 5, "window": 3, "walks_per_node": 2}', wait => true) > 0 AS n2v;

-- safetensors: the header names PyG's tensors, the metadata what the model is
SELECT h > 0 AS header_length,
       position('convs.0.lin.weight' IN header) > 0 AS pyg_names,
       position('"layout":"pyg"' IN header) > 0 AS layout,
       position('"classes":"[\"cat\",\"dog\",\"eel\"]"' IN header) > 0 AS class_names
FROM (SELECT h, convert_from(substring(b FROM 9 FOR h), 'UTF8') AS header
      FROM (SELECT b, get_byte(b, 0) + 256 * get_byte(b, 1) AS h FROM (SELECT gnn.export_model('io_gcn') AS b) x) y) z;
SELECT position('"layout":"gnn"' IN convert_from(substring(b FROM 9 FOR get_byte(b, 0) + 256 * get_byte(b, 1)), 'UTF8')) > 0
  AS gat_in_gnn_layout FROM (SELECT gnn.export_model('io_gat') AS b) x;

-- exported and imported back: the same answers, with the class names
SELECT gnn.import_model('io_back', gnn.export_model('io_gcn'), 'io') AS version;
SELECT model, task, params->>'imported' AS imported, metrics->>'layout' AS layout, classes
FROM gnn.models WHERE name = 'io_back';
SELECT bool_and(a.label = b.label AND a.class = b.class AND abs(a.score - b.score) < 1e-6) AS same_predictions
FROM gnn.predict('io_gcn') a JOIN gnn.predict('io_back') b USING (id);
SELECT gnn.import_model('io_back', gnn.export_model('io_gat'), 'io') AS next_version;
SELECT bool_and(a.label = b.label) AS gat_same FROM gnn.predict('io_gat') a JOIN gnn.predict('io_back') b USING (id);
SELECT gnn.import_model('io_n2v_back', gnn.export_model('io_n2v'), 'io') AS n2v_version;
SELECT task FROM gnn.models WHERE name = 'io_n2v_back';
SELECT gnn.embedding('io_n2v', 7) = gnn.embedding('io_n2v_back', 7) AS same_rows;
-- an export of a version; the deployed one by default
SELECT gnn.export_model('io_back', 1) = gnn.export_model('io_back', version => 1) AS by_version;

-- refused: not safetensors, truncated, bytes changed, the wrong graph or task
\set VERBOSITY default
SELECT gnn.import_model('io_bad', '\x00'::bytea, 'io');
SELECT gnn.import_model('io_bad', substring(gnn.export_model('io_gcn') FROM 1 FOR 100), 'io');
SELECT gnn.import_model('io_bad', overlay(gnn.export_model('io_gcn') PLACING '\xff'::bytea FROM 9 FOR 1), 'io');
SELECT gnn.import_model('io_bad', gnn.export_model('io_gcn'), 'io', task => 'regression');
SELECT gnn.import_model('io_bad', gnn.export_model('io_gcn'), 'io', task => 'embedding');
SELECT gnn.import_model('io_bad', gnn.export_model('io_gcn'), 'io', task => 'clustering');
SELECT gnn.import_model('io_bad', gnn.export_model('io_gcn'), 'nope');
SELECT gnn.import_model('io_bad', gnn.export_model('io_gcn'), 'io', options => '{"row_normalise": "yes"}');
SELECT gnn.import_model(NULL, '\x00'::bytea, 'io');
CREATE TABLE io_wide AS SELECT id, feat || feat AS feat FROM io_nodes;
SELECT nodes FROM gnn.load_graph('io_wide', 'io_edges', nodes => 'io_wide', features => 'feat');
SELECT gnn.import_model('io_bad', gnn.export_model('io_gcn'), 'io_wide');
CREATE TABLE io_few AS SELECT * FROM io_nodes WHERE id < 100;
SELECT nodes FROM gnn.load_graph('io_few', 'io_edges', nodes => 'io_few', features => 'feat', skip_dangling => true);
SELECT gnn.import_model('io_bad', gnn.export_model('io_n2v'), 'io_few');
SELECT gnn.export_model('nope');
-- random shapes: truncations and changed bytes are refused or load cleanly, none crashes
CREATE TABLE io_fuzz_out (outcome text);
DO $$
DECLARE b bytea := gnn.export_model('io_gcn');
BEGIN
  FOR i IN 1..60 LOOP
    BEGIN
      PERFORM gnn.import_model('io_fuzz', CASE WHEN i % 2 = 0 THEN substring(b FROM 1 FOR (i * 37) % length(b))
                                               ELSE set_byte(b, 8 + (i * 131) % 400, (i * 7) % 256) END, 'io');
      INSERT INTO io_fuzz_out VALUES ('loaded');
    EXCEPTION WHEN invalid_binary_representation OR datatype_mismatch THEN
      INSERT INTO io_fuzz_out VALUES ('refused');
    END;
  END LOOP;
END $$;
SELECT count(*) AS tries, count(*) FILTER (WHERE outcome = 'refused') > 40 AS mostly_refused FROM io_fuzz_out;
SELECT (SELECT count(*) FROM io_fuzz_out WHERE outcome = 'loaded') = (SELECT count(*) FROM gnn.models WHERE name = 'io_fuzz')
  AS only_loaded_ones_registered;

-- a rolled-back import leaves nothing; another role sees none of it
BEGIN;
SELECT gnn.import_model('io_rb', gnn.export_model('io_gcn'), 'io');
ROLLBACK;
SELECT count(*) AS rolled_back FROM gnn.models WHERE name = 'io_rb';
CREATE ROLE io_other;
GRANT USAGE ON SCHEMA gnn TO io_other;
SET ROLE io_other;
SELECT gnn.export_model('io_gcn');
SELECT gnn.import_model('x', '\x00'::bytea, 'io');
RESET ROLE;
REVOKE USAGE ON SCHEMA gnn FROM io_other;
DROP ROLE io_other;

SELECT gnn.drop_model(name) FROM (SELECT DISTINCT name FROM gnn.models WHERE name LIKE 'io%') m ORDER BY name;
SELECT gnn.drop_graph('io'), gnn.drop_graph('io_wide'), gnn.drop_graph('io_few');
DROP TABLE io_nodes, io_edges, io_wide, io_few, io_fuzz_out;
RESET gnn.threads;
