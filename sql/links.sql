-- Link scores and recommendations from link-prediction and node2vec models:
-- gnn.score of pairs (arrays, single pairs, ids or keys), gnn.recommend's
-- top k new partners; on held-out edges, recommend's hits@10 equals a
-- brute-force ranking of gnn.score over every candidate; typed graphs
-- through an edge type; bad calls are clear errors.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS gnn;
SET client_min_messages = notice;
SET gnn.threads = 1;

-- four communities of 25; 10% of the follows held out of the graph
CREATE TABLE lk_users AS SELECT id, id % 4 AS grp, 20 + id % 30 AS age FROM generate_series(1, 100) id;
CREATE TABLE lk_all AS
  SELECT a.id AS follower, b.id AS followee FROM lk_users a, lk_users b
  WHERE a.id <> b.id AND a.grp = b.grp AND (a.id * 7 + b.id * 13) % 5 < 2;
CREATE TABLE lk_follows AS SELECT * FROM lk_all WHERE (follower * 31 + followee) % 10 <> 0;
CREATE TABLE lk_heldout AS SELECT * FROM lk_all WHERE (follower * 31 + followee) % 10 = 0;
SELECT (SELECT count(*) FROM lk_follows) AS kept, (SELECT count(*) FROM lk_heldout) AS held_out;
SELECT nodes FROM gnn.load_graph('lk', edges => 'lk_follows', src => 'follower', dst => 'followee',
                                 nodes => 'lk_users', features => 'age', undirected => true);
SELECT gnn.train('lk', model => 'node2vec', name => 'lk_n2v', seed => 1, epochs => 3,
                 options => '{"dim": 16, "walk_length": 10, "window": 5, "walks_per_node": 5}', wait => true) > 0 AS n2v;
SELECT gnn.train('lk', task => 'link_prediction', name => 'lk_sage', seed => 1, epochs => 30, wait => true) > 0 AS sage;

-- scores: one pair, arrays by id, by key; the same number each way
SELECT gnn.score('lk_n2v', 1, 5) = s.score AS same_score, s.src, s.dst, s.src_key, s.dst_key
FROM gnn.score('lk_n2v', ARRAY[1]::bigint[], ARRAY[5]::bigint[]) s;
SELECT gnn.score('lk_n2v', '1', '5') = gnn.score('lk_n2v', 1::bigint, 5::bigint) AS by_key;
SELECT count(*) AS pairs, bool_and(score IS NOT NULL) AS scored
FROM gnn.score('lk_n2v', ARRAY[1, 2, 3, 1]::bigint[], ARRAY[5, 9, 2, 5]::bigint[]);
-- within a community scores beat across
SELECT avg(s.score) FILTER (WHERE a.grp = b.grp) > avg(s.score) FILTER (WHERE a.grp <> b.grp) AS communities
FROM gnn.score('lk_n2v', ARRAY(SELECT a FROM generate_series(1, 40) a, generate_series(1, 40) b ORDER BY a, b)::bigint[],
                         ARRAY(SELECT b FROM generate_series(1, 40) a, generate_series(1, 40) b ORDER BY a, b)::bigint[]) s
JOIN lk_users a ON a.id = s.src JOIN lk_users b ON b.id = s.dst;

-- recommend = a brute-force ranking of score over every candidate, existing partners and itself left out
CREATE FUNCTION lk_brute(m text, u bigint, k int) RETURNS TABLE (id bigint, score real) LANGUAGE sql AS $$
  SELECT s.dst, s.score
  FROM gnn.score(m, ARRAY(SELECT u FROM lk_users)::bigint[], ARRAY(SELECT id FROM lk_users ORDER BY id)::bigint[]) s
  WHERE s.dst <> u AND NOT EXISTS (SELECT 1 FROM lk_follows f WHERE (f.follower, f.followee) IN ((u, s.dst), (s.dst, u)))
  ORDER BY s.score DESC, s.dst LIMIT k $$;
SELECT bool_and(r = b) AS recommend_is_brute_force
FROM lk_users u,
     LATERAL (SELECT array_agg(id ORDER BY score DESC, id) AS r FROM gnn.recommend('lk_n2v', u.id, 10)) x,
     LATERAL (SELECT array_agg(id ORDER BY score DESC, id) AS b FROM lk_brute('lk_n2v', u.id, 10)) y;
-- hits@10 on the held-out follows: the same either way, and well above chance
WITH rec AS (SELECT h.follower, h.followee,
                    h.followee IN (SELECT id FROM gnn.recommend('lk_n2v', h.follower, 10)) AS hit,
                    h.followee IN (SELECT id FROM lk_brute('lk_n2v', h.follower, 10)) AS brute_hit
             FROM lk_heldout h)
SELECT avg(hit::int) = avg(brute_hit::int) AS same_hits, avg(hit::int) > 0.3 AS above_chance FROM rec;
-- a GNN trained for link prediction: k new partners for every node, none it has
SELECT count(*) AS rows, count(DISTINCT a.id) AS nodes,
       bool_and(NOT EXISTS (SELECT 1 FROM lk_follows f WHERE (f.follower, f.followee) IN ((a.id, r.id), (r.id, a.id)))
                AND r.id <> a.id) AS all_new
FROM lk_users a, LATERAL gnn.recommend('lk_sage', a.id, 5) r;
-- exclude_existing => false keeps partners; k bounds the rows
SELECT count(*) FILTER (WHERE EXISTS (SELECT 1 FROM lk_follows f WHERE f.follower = 1 AND f.followee = r.id)) > 0 AS keeps_partners,
       count(*) AS rows
FROM gnn.recommend('lk_n2v', 1, 30, exclude_existing => false) r;

-- a typed graph: items -> categories through the foreign key (an edge type)
CREATE TABLE lk_cats (id int PRIMARY KEY, name text);
CREATE TABLE lk_items (id int PRIMARY KEY, cat_id int REFERENCES lk_cats, price real);
INSERT INTO lk_cats SELECT c, 'cat ' || c FROM generate_series(1, 8) c;
INSERT INTO lk_items SELECT i, 1 + (i % 8), (i % 8) * 10 + i % 3 FROM generate_series(1, 200) i;
SELECT nodes FROM gnn.load_schema_graph('lk_s', ARRAY['lk_cats', 'lk_items']::regclass[]);
SELECT gnn.train('lk_s', model => 'hetero_sage', task => 'link_prediction', name => 'lk_typed', seed => 1, epochs => 20,
                 options => '{"edge_type": "lk_items.cat_id"}', wait => true) > 0 AS typed;
-- the model's relation by default: items in, categories out, the item's own category left out
SELECT count(*) AS rows, bool_and(r.id BETWEEN 1 AND 8) AS categories,
       bool_and(r.id <> 1 + (5 % 8)) AS own_left_out
FROM gnn.recommend('lk_typed', 5, 3) r;
SELECT count(*) AS rows FROM gnn.recommend('lk_typed', 5, 3, edge_type => 'lk_items.cat_id');
SELECT s.src, s.dst, s.score = gnn.score('lk_typed', '5', '2') AS same
FROM gnn.score('lk_typed', ARRAY[5]::bigint[], ARRAY[2]::bigint[]) s;
SELECT count(*) AS items_for_category_5 FROM gnn.recommend('lk_typed', 5, 3, edge_type => 'rev_lk_items.cat_id') r WHERE r.id % 8 <> 4;
SELECT * FROM gnn.recommend('lk_typed', 500, 3);
-- the same on minibatches (fan-outs per relation), then recommended from
SELECT gnn.train('lk_s', model => 'rgcn', task => 'link_prediction', name => 'lk_typed_mb', seed => 1, epochs => 10,
                 options => '{"edge_type": "lk_items.cat_id", "fanouts": {"default": [3, 3]}, "batch_size": 32}',
                 wait => true) > 0 AS typed_minibatch;
SELECT params->>'batch_size' AS batch_size, (metrics->>'test_auc')::float8 BETWEEN 0 AND 1 AS auc
FROM gnn.models WHERE name = 'lk_typed_mb';
SELECT count(*) AS rows FROM gnn.recommend('lk_typed_mb', 5, 3);
-- time-aware: with times on the items, each endpoint sees nothing later than itself, in training,
-- evaluation and serving (metrics.temporal)
ALTER TABLE lk_items ADD COLUMN added_at timestamptz;
UPDATE lk_items SET added_at = timestamptz '2024-01-01' + id * interval '1 day';
SELECT nodes FROM gnn.load_schema_graph('lk_t', ARRAY['lk_cats', 'lk_items']::regclass[],
                                        options => '{"time": {"lk_items": "added_at"}, "exclude": {"lk_items": ["added_at"]}}');
SELECT gnn.train('lk_t', model => 'rgcn', task => 'link_prediction', name => 'lk_time', seed => 1, epochs => 10,
                 options => '{"edge_type": "lk_items.cat_id", "fanouts": {"default": [3, 3]}, "batch_size": 32}',
                 wait => true) > 0 AS time_aware;
SELECT metrics->>'temporal' AS temporal, (metrics->>'test_auc')::float8 BETWEEN 0 AND 1 AS auc
FROM gnn.models WHERE name = 'lk_time';
SELECT count(*) AS rows FROM gnn.recommend('lk_time', 5, 3);
SELECT gnn.score('lk_time', 5, 2) = (SELECT score FROM gnn.score('lk_time', ARRAY[5]::bigint[], ARRAY[2]::bigint[])) AS same;

-- bad calls
\set VERBOSITY default
CREATE TABLE lk_labels AS SELECT id, grp, age, CASE WHEN id % 2 = 0 THEN 'train' ELSE 'test' END AS split FROM lk_users;
SELECT nodes FROM gnn.load_graph('lk_c', edges => 'lk_follows', src => 'follower', dst => 'followee',
                                 nodes => 'lk_labels', features => 'age', label => 'grp', split => 'split',
                                 undirected => true);
SELECT gnn.train('lk_c', name => 'lk_cls', seed => 1, epochs => 5, wait => true) > 0 AS classifier;
SELECT * FROM gnn.recommend('lk_cls', 1, 5);
SELECT gnn.score('lk_cls', 1, 2);
SELECT * FROM gnn.recommend('lk_n2v', 1000, 5);
SELECT * FROM gnn.recommend('lk_n2v', 1, 0);
SELECT * FROM gnn.recommend('lk_n2v', 1, 5, edge_type => 'nope');
SELECT * FROM gnn.score('lk_n2v', ARRAY[1, 2]::bigint[], ARRAY[3]::bigint[]);
SELECT * FROM gnn.score('lk_n2v', ARRAY[1, NULL]::bigint[], ARRAY[3, 4]::bigint[]);
SELECT * FROM gnn.score('lk_n2v', NULL::bigint[], ARRAY[3]::bigint[]);
SELECT * FROM gnn.score('lk_n2v', ARRAY[]::bigint[], ARRAY[]::bigint[]);
SELECT * FROM gnn.recommend('nope', 1, 5);

-- another role sees no model of ours
CREATE ROLE lk_other;
GRANT USAGE ON SCHEMA gnn TO lk_other;
SET ROLE lk_other;
SELECT * FROM gnn.recommend('lk_n2v', 1, 5);
RESET ROLE;
REVOKE USAGE ON SCHEMA gnn FROM lk_other;
DROP ROLE lk_other;

SELECT gnn.drop_graph('lk'), gnn.drop_graph('lk_c'), gnn.drop_graph('lk_s'), gnn.drop_graph('lk_t');
DROP FUNCTION lk_brute;
DROP TABLE lk_users, lk_all, lk_follows, lk_heldout, lk_labels, lk_items, lk_cats;
RESET gnn.threads;
