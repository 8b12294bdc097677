-- The README's walk from CREATE EXTENSION to embeddings in a table, run as
-- written (test/run_all.sh checks that the block below matches README.md).
-- Set-up, not part of the walk: a small social graph.
DROP EXTENSION IF EXISTS gnn CASCADE;
SET client_min_messages = warning;
SELECT setseed(0.1);
CREATE TABLE users AS
  SELECT id, (id % 4)::int AS label,
         CASE WHEN id < 80 THEN 'train' WHEN id < 280 THEN 'val' WHEN id < 680 THEN 'test' END AS split,
         (SELECT array_agg(CASE WHEN j % 4 = id % 4 THEN 0.5 ELSE 0 END + random()::real ORDER BY j)
            FROM generate_series(0, 15) j)::real[] AS feat
  FROM generate_series(0, 999) id;
CREATE TABLE follows AS
  SELECT u.id AS follower,
         CASE WHEN random() < 0.8 THEN ((random() * 249)::int * 4 + u.id % 4) % 1000
              ELSE (random() * 999)::int END AS followee
  FROM users u, generate_series(1, 5) k;
-- BEGIN README WALK
CREATE EXTENSION gnn;
SELECT nodes, edges, feature_dim, classes FROM gnn.load_graph('social', edges => 'follows', src => 'follower', dst => 'followee', nodes => 'users', features => 'feat', label => 'label', split => 'split', undirected => true);
SELECT gnn.train('social', model => 'graphsage', name => 'social_sage', epochs => 50, seed => 42, wait => true) > 0 AS trained;
SELECT model_name, state, epoch, epochs FROM gnn.jobs;
SELECT name, version, (metrics->>'test_acc')::float > 0.8 AS accurate FROM gnn.models;
SELECT gnn.embed('social_sage', 'user_embeddings');
SELECT id, array_length(embedding, 1) AS dim FROM user_embeddings ORDER BY id LIMIT 3;
SELECT count(*) AS neighbours FROM gnn.similar('social_sage', 42, 5);
SELECT id, label FROM gnn.predict('social_sage', ARRAY[42, 43]) ORDER BY id;
-- END README WALK
DROP TABLE user_embeddings;
SELECT gnn.drop_graph('social');
