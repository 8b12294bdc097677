-- node2vec: embeddings from random walks, without labels or features.
-- Trained in the background worker like every model, written by gnn.embed,
-- read by gnn.embedding and gnn.similar; a graph without labels says which
-- label-free objectives apply; its options are checked; a model whose graph
-- gained or lost nodes says to train again.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS gnn;
SET client_min_messages = notice;
SET gnn.threads = 1;

-- two communities of 30 users, joined by one follow
CREATE TABLE nv_users AS SELECT id, 20 + id % 40 AS age FROM generate_series(1, 60) id;
CREATE TABLE nv_follows AS
  SELECT a.id AS follower, b.id AS followee FROM nv_users a, nv_users b
  WHERE a.id < b.id AND (a.id <= 30) = (b.id <= 30) AND (a.id + b.id) % 3 = 0
  UNION ALL SELECT 1, 31;
SELECT nodes, edges FROM gnn.load_graph('nv', edges => 'nv_follows', src => 'follower', dst => 'followee',
                                        nodes => 'nv_users', features => 'age', undirected => true);

-- no labels: the classifier says which label-free objectives apply
SELECT gnn.train('nv');

SELECT gnn.train('nv', model => 'node2vec', name => 'nv_n2v', seed => 3, epochs => 3,
                 options => '{"dim": 16, "walk_length": 10, "window": 5, "walks_per_node": 5}', wait => true) > 0 AS trained;
SELECT model, task, params->>'hidden' AS dim, params->>'window' AS "window", params->>'negatives' AS negatives,
       (metrics->>'loss')::float8 > 0 AS has_loss, metrics->>'walks' AS walks, metrics->>'device' AS device
FROM gnn.models WHERE name = 'nv_n2v';
SELECT array_length(gnn.embedding('nv_n2v', 5), 1) AS width;

-- without labels, the communities come out: a user's 10 most similar are of its own community
SELECT u.id <= 30 AS first_half, avg(((s.id <= 30) = (u.id <= 30))::int)::numeric(3, 2) AS same_community
FROM nv_users u, LATERAL gnn.similar('nv_n2v', u.id, 10) s
GROUP BY 1 ORDER BY 1;

SELECT gnn.embed('nv_n2v', 'nv_emb') AS written;
SELECT count(*), min(array_length(embedding, 1)) FROM nv_emb;
SELECT bool_and(abs(e.embedding[1] - (gnn.embedding('nv_n2v', e.id))[1]) < 1e-6) AS same_rows FROM nv_emb e;

-- it predicts no classes
SELECT * FROM gnn.predict('nv_n2v', ARRAY[1, 2]);

-- options: checked, and node2vec's alone
SELECT gnn.train('nv', model => 'node2vec', task => 'regression');
SELECT gnn.train('nv', model => 'node2vec', options => '{"fanouts": [5]}');
SELECT gnn.train('nv', model => 'node2vec', options => '{"window": 50, "walk_length": 10}');
SELECT gnn.train('nv', model => 'node2vec', options => '{"p": 0}');
SELECT gnn.train('nv', model => 'node2vec', options => '{"negatives": 1000}');
SELECT gnn.train('nv', model => 'node2vec', device => 'cuda');
SELECT gnn.train('nv', model => 'graphsage', options => '{"window": 5}');
SELECT gnn.train('nv', model => 'graphsage', task => 'embedding');
SELECT item, bytes FROM gnn.estimate('nv', model => 'node2vec', hidden => 16) WHERE item = 'embeddings';

-- cancelled half-way: the job ends cancelled, no model is written
SELECT gnn.train('nv', model => 'node2vec', name => 'nv_long', epochs => 100000,
                 options => '{"dim": 8, "walk_length": 5, "window": 3, "walks_per_node": 1}') AS long_job \gset
SELECT pg_sleep(0.5);
SELECT gnn.cancel(:long_job) AS cancel_requested;
CREATE TEMP TABLE nv_job AS SELECT :long_job::bigint AS id;
DO $$ BEGIN PERFORM gnn.wait((SELECT id FROM nv_job), '60 seconds'); EXCEPTION WHEN query_canceled THEN NULL; END $$;
SELECT state, epoch < 100000 AS stopped_early FROM gnn.jobs WHERE id = :long_job;
SELECT count(*) AS models FROM gnn.models WHERE name = 'nv_long';

-- a rolled-back train leaves no job and no model
BEGIN;
SELECT gnn.train('nv', model => 'node2vec', name => 'nv_rb', epochs => 1) > 0 AS started;
ROLLBACK;
SELECT count(*) AS rolled_back FROM gnn.models WHERE name = 'nv_rb';

-- node2vec needs no features; a row per node: once nodes come or go, the model says to train again
INSERT INTO nv_users VALUES (61, 30);
SELECT nodes FROM gnn.load_graph('nv', edges => 'nv_follows', src => 'follower', dst => 'followee',
                                 nodes => 'nv_users', undirected => true, replace => true);
SELECT gnn.train('nv');
SELECT gnn.embedding('nv_n2v', 5);

SELECT gnn.drop_graph('nv');
DROP TABLE nv_users, nv_follows, nv_emb;
RESET gnn.threads;
