-- gnn.load_graph from ordinary columns: features => '*', an array of column
-- names, or one ordinary column, encoded as schema graphs encode them
-- (numbers standardised, categories one-hot, booleans, times, arrays, NULL
-- indicators); gnn.graph_columns describes them; a replace and a tracked
-- refresh keep the encodings; bad shapes of the argument are clear errors.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS gnn;
SET client_min_messages = notice;

CREATE TYPE lc_plan AS ENUM ('free', 'pro', 'team');
CREATE TABLE lc_users AS
  SELECT id, 18 + id % 50 AS age,
         (ARRAY['fr', 'de', 'us', 'jp'])[1 + id % 4] AS country,
         timestamptz '2024-01-01' + id * interval '1 day' AS signup_at,
         (ARRAY['free', 'pro', 'team'])[1 + id % 3]::lc_plan AS plan,
         id % 5 = 0 AS verified,
         'user' || id AS handle,
         CASE WHEN id % 7 = 0 THEN NULL ELSE id * 1.5 END AS spend,
         ARRAY[id % 2, id % 3]::real[] AS vec,
         point(id, id) AS pos,
         id % 3 AS label,
         CASE WHEN id % 10 < 6 THEN 'train' WHEN id % 10 < 8 THEN 'val' ELSE 'test' END AS split
  FROM generate_series(1, 200) id;
ALTER TABLE lc_users ADD PRIMARY KEY (id);
CREATE TABLE lc_follows AS
  SELECT id AS follower, (id + 4 * k - 1) % 200 + 1 AS followee FROM lc_users, generate_series(1, 3) k;

-- every ordinary column: the id, label and split are not features; a point
-- and an identifier-like text column are skipped, saying why
SELECT nodes, edges, feature_dim, features
FROM gnn.load_graph('lc', edges => 'lc_follows', src => 'follower', dst => 'followee', nodes => 'lc_users',
                    features => '*', label => 'label', split => 'split');
SELECT column_name, column_type, encoding, feature_offset, width, detail->>'reason' AS skipped
FROM gnn.graph_columns('lc') ORDER BY feature_offset NULLS LAST, column_name;

-- the encoded values: age standardised over the rows, country one-hot in
-- the order graph_columns gives, spend with a missing indicator
WITH c AS (SELECT column_name, feature_offset AS o, detail FROM gnn.graph_columns('lc')),
     f AS (SELECT u.id, u.age, u.country, u.spend, gnn.features('lc', u.id) AS x FROM lc_users u WHERE u.id IN (7, 8))
SELECT f.id,
       abs(f.x[(SELECT o FROM c WHERE column_name = 'age') + 1]
           - (f.age - (SELECT avg(age) FROM lc_users)) / (SELECT stddev_pop(age) FROM lc_users)) < 1e-5 AS age_ok,
       f.x[(SELECT o FROM c WHERE column_name = 'country') + 1 +
           (SELECT i - 1 FROM c, jsonb_array_elements_text(detail->'categories') WITH ORDINALITY a(v, i)
            WHERE column_name = 'country' AND v = f.country)] = 1 AS country_hot,
       (SELECT sum(v) FROM unnest(f.x[(SELECT o FROM c WHERE column_name = 'country') + 1 :
                                      (SELECT o FROM c WHERE column_name = 'country') + 4]) v) = 1 AS one_hot,
       f.x[(SELECT o FROM c WHERE column_name = 'spend') + 2] = (f.spend IS NULL)::int AS missing_flag
FROM f ORDER BY f.id;

-- a list of columns, and one ordinary column by name; a real[] column by
-- name stays as it is (no encoding)
SELECT feature_dim FROM gnn.load_graph('lc_two', edges => 'lc_follows', src => 'follower', dst => 'followee',
                                       nodes => 'lc_users', features => ARRAY['age', 'country']);
SELECT column_name, encoding, feature_offset, width FROM gnn.graph_columns('lc_two') ORDER BY feature_offset;
SELECT feature_dim FROM gnn.load_graph('lc_one', edges => 'lc_follows', src => 'follower', dst => 'followee',
                                       nodes => 'lc_users', features => 'plan');
SELECT column_name, encoding, width FROM gnn.graph_columns('lc_one');
SELECT feature_dim, gnn.features('lc_vec', 5) AS feat5
FROM gnn.load_graph('lc_vec', edges => 'lc_follows', src => 'follower', dst => 'followee',
                    nodes => 'lc_users', features => 'vec');
SELECT column_name, encoding, width FROM gnn.graph_columns('lc_vec');
SELECT feature_dim FROM gnn.load_graph('lc_names', edges => 'lc_follows', src => 'follower', dst => 'followee',
                                       nodes => 'lc_users', features => ARRAY['age', 'verified']::name[]);

-- the argument's shapes
\set VERBOSITY default
SELECT gnn.load_graph('lc_bad', edges => 'lc_follows', src => 'follower', dst => 'followee', nodes => 'lc_users', features => 42);
SELECT gnn.load_graph('lc_bad', edges => 'lc_follows', src => 'follower', dst => 'followee', nodes => 'lc_users', features => ARRAY[]::text[]);
SELECT gnn.load_graph('lc_bad', edges => 'lc_follows', src => 'follower', dst => 'followee', nodes => 'lc_users', features => ARRAY[ARRAY['age']]);
SELECT gnn.load_graph('lc_bad', edges => 'lc_follows', src => 'follower', dst => 'followee', nodes => 'lc_users', features => ARRAY['age', NULL]);
SELECT gnn.load_graph('lc_bad', edges => 'lc_follows', src => 'follower', dst => 'followee', nodes => 'lc_users', features => ARRAY['age', 'age']);
SELECT gnn.load_graph('lc_bad', edges => 'lc_follows', src => 'follower', dst => 'followee', nodes => 'lc_users', features => ARRAY['*']);
SELECT gnn.load_graph('lc_bad', edges => 'lc_follows', src => 'follower', dst => 'followee', nodes => 'lc_users', features => ARRAY['id', 'age']);
SELECT gnn.load_graph('lc_bad', edges => 'lc_follows', src => 'follower', dst => 'followee', nodes => 'lc_users', features => ARRAY['age', 'label'], label => 'label');
SELECT gnn.load_graph('lc_bad', edges => 'lc_follows', src => 'follower', dst => 'followee', nodes => 'lc_users', features => ARRAY['agee']);
SELECT gnn.load_graph('lc_bad', edges => 'lc_follows', src => 'follower', dst => 'followee', nodes => 'lc_users', features => ARRAY['pos']);
SELECT gnn.load_graph('lc_bad', edges => 'lc_follows', src => 'follower', dst => 'followee', features => ARRAY['age']);
CREATE TABLE lc_ids AS SELECT id, point(id, 0) AS p FROM lc_users;
SELECT gnn.load_graph('lc_bad', edges => 'lc_follows', src => 'follower', dst => 'followee', nodes => 'lc_ids', features => '*');
SELECT count(*) AS bad_graphs FROM gnn.graphs WHERE name = 'lc_bad';

-- a load rolled back leaves nothing
BEGIN;
SELECT nodes FROM gnn.load_graph('lc_rb', edges => 'lc_follows', src => 'follower', dst => 'followee', nodes => 'lc_users', features => '*');
ROLLBACK;
SELECT count(*) AS rolled_back FROM gnn.graphs WHERE name = 'lc_rb';

-- a role reads the columns it may: a list of them loads, '*' needs them all
CREATE ROLE lc_reader;
GRANT SELECT (id, age, country) ON lc_users TO lc_reader;
GRANT SELECT ON lc_follows TO lc_reader;
GRANT USAGE ON SCHEMA gnn TO lc_reader;
SET ROLE lc_reader;
SELECT feature_dim FROM gnn.load_graph('lc_r', edges => 'lc_follows', src => 'follower', dst => 'followee',
                                       nodes => 'lc_users', features => ARRAY['age', 'country']);
SELECT gnn.load_graph('lc_r2', edges => 'lc_follows', src => 'follower', dst => 'followee', nodes => 'lc_users', features => '*');
SELECT gnn.drop_graph('lc_r');
RESET ROLE;

-- replacing keeps the encodings: new rows are encoded as the old ones were
SELECT (detail->>'mean')::float8 AS age_mean FROM gnn.graph_columns('lc_two') WHERE column_name = 'age' \gset
UPDATE lc_users SET age = age + 100 WHERE id <= 100;
SELECT nodes FROM gnn.load_graph('lc_two', edges => 'lc_follows', src => 'follower', dst => 'followee',
                                 nodes => 'lc_users', features => ARRAY['age', 'country'], replace => true);
SELECT (detail->>'mean')::float8 = :age_mean AS mean_kept FROM gnn.graph_columns('lc_two') WHERE column_name = 'age';
-- other columns: encoded afresh, with a notice
SELECT nodes FROM gnn.load_graph('lc_two', edges => 'lc_follows', src => 'follower', dst => 'followee',
                                 nodes => 'lc_users', features => ARRAY['age', 'verified'], replace => true);
SELECT (detail->>'mean')::float8 > :age_mean AS refit FROM gnn.graph_columns('lc_two') WHERE column_name = 'age';

-- a tracked graph: a change of the node rows reloads them with the
-- encodings kept; edge rows merge as usual
SELECT nodes FROM gnn.load_graph('lc_tr', edges => 'lc_follows', src => 'follower', dst => 'followee',
                                 nodes => 'lc_users', features => ARRAY['age', 'country'], track => true);
SELECT gnn.features('lc_tr', 3) AS before3 \gset
INSERT INTO lc_follows VALUES (1, 2);
SELECT inserted_edges, inserted_nodes FROM gnn.refresh_graph('lc_tr');
UPDATE lc_users SET age = age + 1 WHERE id = 3;
INSERT INTO lc_users (id, age, country) VALUES (201, 30, 'xx');
SELECT inserted_nodes, deleted_nodes FROM gnn.refresh_graph('lc_tr');
SELECT nodes, feature_dim FROM gnn.graphs WHERE name = 'lc_tr';
SELECT abs((gnn.features('lc_tr', 3))[1] - ((:'before3'::real[])[1] + 1 / (c.detail->>'std')::float8)) < 1e-5 AS age_moved,
       (gnn.features('lc_tr', 3))[2:5] = (:'before3'::real[])[2:5] AS country_same,
       (gnn.features('lc_tr', 201))[2:5] = '{0,0,0,0}' AS unseen_category
FROM gnn.graph_columns('lc_tr') c WHERE c.column_name = 'age';
-- gnn.track again reloads from the graph's own record: the same columns, encoded as before
SELECT (detail->>'mean')::float8 AS tr_mean FROM gnn.graph_columns('lc_tr') WHERE column_name = 'age' \gset
UPDATE lc_users SET age = 0;
SELECT gnn.track('lc_tr') AS tables;
SELECT column_name, encoding, (detail->>'mean')::float8 = :tr_mean AS kept
FROM gnn.graph_columns('lc_tr') ORDER BY feature_offset;

-- DDL: a column dropped from under a tracked graph, and '*' on a table with a dropped column
ALTER TABLE lc_users DROP COLUMN country;
SELECT inserted_nodes > 0 AS reloaded FROM gnn.refresh_graph('lc_tr');
SELECT column_name, encoding FROM gnn.graph_columns('lc_tr') ORDER BY feature_offset;
SELECT feature_dim FROM gnn.load_graph('lc_star', edges => 'lc_follows', src => 'follower', dst => 'followee',
                                       nodes => 'lc_users', features => '*', label => 'label', split => 'split');
SELECT count(*) FILTER (WHERE column_name LIKE '%dropped%') AS dropped_columns, count(*) AS columns
FROM gnn.graph_columns('lc_star');

SELECT gnn.drop_graph(name) FROM gnn.graphs WHERE name LIKE 'lc%' ORDER BY name;
DROP TABLE lc_follows, lc_users, lc_ids;
DROP TYPE lc_plan;
REVOKE USAGE ON SCHEMA gnn FROM lc_reader;
DROP ROLE lc_reader;
