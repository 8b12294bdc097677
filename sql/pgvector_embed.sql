-- gnn.embed into pgvector (the runner skips this test where pgvector is not installed):
-- options.type 'vector' writes vector(d) tables and columns, options.index adds an HNSW or
-- IVFFlat index for the distance named; an existing vector column is written as vector without
-- options, one of another dimension is a clear error; pgvector's exact top-k by cosine distance
-- is gnn.similar's; bad options are clear errors.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS gnn;
CREATE EXTENSION IF NOT EXISTS vector;
CREATE TABLE pv_nodes AS
  SELECT id, (id % 3) AS label, CASE WHEN id < 120 THEN 'train' WHEN id < 180 THEN 'val' ELSE 'test' END AS split,
         (SELECT array_agg(CASE WHEN j % 3 = id % 3 THEN 1 ELSE 0 END + ((id * 7 + j) % 11) / 11.0 ORDER BY j)
            FROM generate_series(0, 11) j)::real[] AS feat
  FROM generate_series(0, 239) id;
CREATE TABLE pv_edges AS
  SELECT s.id AS src, ((s.id * 13 + k * 3) % 80) * 3 + s.id % 3 AS dst FROM pv_nodes s, generate_series(1, 3) k;
SELECT name FROM gnn.load_graph('pv', 'pv_edges', nodes => 'pv_nodes', features => 'feat', label => 'label',
                                split => 'split', undirected => true, persist => false);
SELECT gnn.train('pv', model => 'graphsage', name => 'pv_sage', hidden => 16, epochs => 20, seed => 4,
                 wait => true) > 0 AS trained;

-- a new table of vector(16), with an HNSW index for cosine distance
SELECT gnn.embed('pv_sage', 'pv_emb', options => '{"type": "vector", "index": "hnsw", "distance": "cosine"}') AS rows;
SELECT format_type(atttypid, atttypmod) AS type FROM pg_attribute
WHERE attrelid = 'pv_emb'::regclass AND attname = 'embedding';
SELECT c.relname AS index, a.amname AS method, o.opcname AS opclass
FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am a ON a.oid = c.relam
JOIN pg_opclass o ON o.oid = i.indclass[0] WHERE i.indrelid = 'pv_emb'::regclass AND NOT i.indisprimary;
-- the same numbers as the real[] output
SELECT gnn.embed('pv_sage', 'pv_emb_real') AS rows;
SELECT count(*) AS rows, bool_and(v.embedding::real[] = r.embedding) AS same_values
FROM pv_emb v JOIN pv_emb_real r USING (id);

-- pgvector's exact nearest neighbours by cosine distance are gnn.similar's (no index scan: exact)
SET enable_indexscan = off;
SELECT n AS node,
       (SELECT array_agg(id ORDER BY score DESC, id) FROM gnn.similar('pv_sage', n, 5)) =
       (SELECT array_agg(id ORDER BY d, id) FROM (
          SELECT e.id, e.embedding <=> q.embedding AS d FROM pv_emb e, pv_emb q
          WHERE q.id = n AND e.id <> n ORDER BY d, e.id LIMIT 5) t) AS same_top5
FROM unnest(ARRAY[0, 17, 101, 239]) n;
RESET enable_indexscan;
-- through the index (approximate, usually the same at this size): the query the README shows
SET enable_seqscan = off;
SELECT count(*) AS neighbours FROM (
  SELECT id FROM pv_emb ORDER BY embedding <=> (SELECT embedding FROM pv_emb WHERE id = 17) LIMIT 5) t;
RESET enable_seqscan;

-- writing again into the vector table needs no options; the index stays, one of it
SELECT gnn.embed('pv_sage', 'pv_emb') AS rows;
SELECT count(*) AS indexes FROM pg_indexes WHERE tablename = 'pv_emb' AND indexname LIKE '%hnsw%';
-- an IVFFlat index for L2 distance on a vector column of the node table
SELECT gnn.embed('pv_sage', 'pv_nodes', column_name => 'emb_vec', options => '{"type": "vector", "index": "ivfflat", "distance": "l2"}') AS rows;
SELECT format_type(atttypid, atttypmod) AS type FROM pg_attribute
WHERE attrelid = 'pv_nodes'::regclass AND attname = 'emb_vec';
SELECT c.relname AS index, a.amname AS method, o.opcname AS opclass, c.reloptions
FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am a ON a.oid = c.relam
JOIN pg_opclass o ON o.oid = i.indclass[0] WHERE i.indrelid = 'pv_nodes'::regclass;
SELECT count(*) AS written, bool_and(n.emb_vec::real[] = r.embedding) AS same_values
FROM pv_nodes n JOIN pv_emb_real r USING (id);

-- errors
RESET client_min_messages;
\set VERBOSITY default
CREATE TABLE pv_small (id bigint PRIMARY KEY, embedding vector(3));
SELECT gnn.embed('pv_sage', 'pv_small');
SELECT gnn.embed('pv_sage', 'pv_emb_real', options => '{"type": "vector"}');
SELECT gnn.embed('pv_sage', 'pv_x', options => '{"index": "hnsw"}');
SELECT gnn.embed('pv_sage', 'pv_x', options => '{"type": "vectors"}');
SELECT gnn.embed('pv_sage', 'pv_x', options => '{"type": "vector", "distance": "manhattan"}');
SELECT gnn.embed('pv_sage', 'pv_x', options => '{"dims": 8}');
SELECT gnn.embed('pv_sage', 'pv_x', options => '["vector"]');
-- a table name near the 63-byte limit: the cosine and l2 indexes get names of their own (not one
-- truncated name, the second silently skipped), and a name another relation holds is an error, not a skip
SELECT gnn.embed('pv_sage', 'pv_a_table_whose_name_is_long_enough_to_reach_the_63_byte_limit',
                 options => '{"type": "vector", "index": "hnsw", "distance": "cosine"}') AS rows;
SELECT gnn.embed('pv_sage', 'pv_a_table_whose_name_is_long_enough_to_reach_the_63_byte_limit',
                 options => '{"type": "vector", "index": "hnsw", "distance": "l2"}') AS rows;
SELECT count(*) AS indexes, count(DISTINCT o.opcname) AS distances
FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_opclass o ON o.oid = i.indclass[0]
WHERE i.indrelid = 'pv_a_table_whose_name_is_long_enough_to_reach_the_63_byte_limit'::regclass AND c.relam <> 403;
CREATE TABLE pv_taken_embedding_hnsw_cosine (x int);
SET client_min_messages = warning;
SELECT gnn.embed('pv_sage', 'pv_taken', options => '{"type": "vector", "index": "hnsw", "distance": "cosine"}') AS rows;
RESET client_min_messages;
DROP TABLE pv_a_table_whose_name_is_long_enough_to_reach_the_63_byte_limit, pv_taken_embedding_hnsw_cosine;
-- without pgvector: real[] as before, and a clear error for the vector type
SET client_min_messages = warning;
DROP TABLE pv_emb, pv_small;
ALTER TABLE pv_nodes DROP COLUMN emb_vec;
DROP EXTENSION vector;
RESET client_min_messages;
SELECT gnn.embed('pv_sage', 'pv_emb_plain') AS rows;
SELECT gnn.embed('pv_sage', 'pv_x', options => '{"type": "vector"}');
\set VERBOSITY terse
SET client_min_messages = warning;
SELECT gnn.drop_graph('pv');
SELECT gnn.drop_model('pv_sage');
DROP TABLE pv_emb_real, pv_emb_plain, pv_nodes, pv_edges;
