-- Model lifecycle: gnn.deploy picks the version every call uses by default
-- (by number, most_recent, best_score, rollback), gnn.train(..., deploy =>)
-- deploys a new version always or only when its validation metric beats the
-- deployed one's; gnn.models shows the deployed version, gnn.deployments the
-- history; roles, transactions and dropped versions behave.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS gnn;
SET gnn.threads = 1;
SELECT setseed(0.5);
CREATE TABLE dp_nodes AS
  SELECT id, (id % 3)::int AS label,
         CASE WHEN id < 90 THEN 'train' WHEN id < 180 THEN 'val' ELSE 'test' END AS split,
         (SELECT array_agg(CASE WHEN j % 3 = id % 3 THEN 0.5 ELSE 0 END + random()::real ORDER BY j)
            FROM generate_series(0, 7) j)::real[] AS feat
  FROM generate_series(0, 299) id;
CREATE TABLE dp_edges AS
  SELECT s.id AS src, ((random() * 99)::int * 3 + s.id % 3) % 300 AS dst FROM dp_nodes s, generate_series(1, 3) k;
SELECT nodes FROM gnn.load_graph('dp', 'dp_edges', nodes => 'dp_nodes', features => 'feat', label => 'label',
                                 split => 'split', undirected => true);

-- three versions: a good one, a poor one (1 epoch), a good one
SELECT gnn.train('dp', model => 'gcn', name => 'dp_m', epochs => 40, seed => 1, wait => true) > 0 AS v1;
SELECT gnn.train('dp', model => 'gcn', name => 'dp_m', epochs => 1, lr => 1e-6, seed => 2, wait => true) > 0 AS v2;
SELECT gnn.train('dp', model => 'gcn', name => 'dp_m', epochs => 40, seed => 3, wait => true) > 0 AS v3;
-- nothing deployed: calls use the latest
SELECT version, deployed FROM gnn.models WHERE name = 'dp_m' ORDER BY version;
CREATE FUNCTION dp_answer(v int DEFAULT NULL) RETURNS real[] LANGUAGE sql AS
  $$ SELECT gnn.embedding('dp_m', 5, version => v) $$;
-- the same version's row: from the shared result, or (asked while the job's results pass still
-- makes it) from the node's neighbourhood, which can differ in the last bits
CREATE FUNCTION dp_same(a real[], b real[]) RETURNS boolean LANGUAGE sql AS
  $$ SELECT max(abs(x - y)) < 1e-5 FROM unnest(a, b) u(x, y) $$;
SELECT dp_same(dp_answer(), dp_answer(3)) AS latest_by_default;

-- a version by number: every call uses it
SELECT gnn.deploy('dp_m', 2) AS deployed;
SELECT version, deployed FROM gnn.models WHERE name = 'dp_m' ORDER BY version;
SELECT dp_same(dp_answer(), dp_answer(2)) AS deployed_by_default, dp_answer(3) <> dp_answer(2) AS version_still_works;
SELECT count(*) = 3 AS predict_uses_it FROM gnn.predict('dp_m', ARRAY[1, 2, 3]::bigint[]);
-- best_score: the best validation accuracy; most_recent; rollback pops back
SELECT gnn.deploy('dp_m', strategy => 'best_score') = (
  SELECT version FROM gnn.models WHERE name = 'dp_m' ORDER BY (metrics->>'val_acc')::float8 DESC, version DESC LIMIT 1)
  AS best_score;
SELECT gnn.deploy('dp_m', strategy => 'most_recent') AS most_recent;
SELECT gnn.deploy('dp_m', 1) AS deployed;
SELECT gnn.deploy('dp_m', strategy => 'rollback') AS rolled_back_to;
SELECT gnn.deploy('dp_m', strategy => 'rollback') AS rolled_back_to;
SELECT version, strategy, rolled_back_at IS NOT NULL AS rolled_back FROM gnn.deployments WHERE name = 'dp_m' ORDER BY id;
SELECT version FROM gnn.models WHERE name = 'dp_m' AND deployed;
SELECT gnn.deploy('dp_m', strategy => 'rollback');

-- a deploy rolled back changes nothing
BEGIN;
SELECT gnn.deploy('dp_m', 3);
ROLLBACK;
SELECT version FROM gnn.models WHERE name = 'dp_m' AND deployed;

-- train with deploy => 'if_better': a poor version is kept but not deployed, a better one is
SELECT gnn.train('dp', model => 'gcn', name => 'dp_m', epochs => 1, lr => 1e-6, seed => 4, deploy => 'if_better',
                 wait => true) > 0 AS v4_poor;
SELECT version, deployed FROM gnn.models WHERE name = 'dp_m' AND version >= 4 OR deployed ORDER BY version;
SELECT gnn.train('dp', model => 'gcn', name => 'dp_m', epochs => 60, seed => 5, deploy => 'if_better',
                 wait => true) > 0 AS v5;
SELECT (SELECT version FROM gnn.models WHERE name = 'dp_m' AND deployed) =
       CASE WHEN (SELECT (metrics->>'val_acc')::float8 FROM gnn.models WHERE name = 'dp_m' AND version = 5) >
                 (SELECT (metrics->>'val_acc')::float8 FROM gnn.models WHERE name = 'dp_m' AND version = 2)
            THEN 5 ELSE 2 END AS if_better_rule;
SELECT gnn.train('dp', model => 'gcn', name => 'dp_new', epochs => 5, seed => 1, deploy => 'if_better',
                 wait => true) > 0 AS first_version;
SELECT version, deployed FROM gnn.models WHERE name = 'dp_new';
SELECT gnn.train('dp', model => 'gcn', name => 'dp_new', epochs => 1, lr => 1e-6, seed => 2, deploy => 'always',
                 wait => true) > 0 AS always;
SELECT version, deployed FROM gnn.models WHERE name = 'dp_new' ORDER BY version;

-- nothing deployed yet: a poorer new version leaves calls on the version they used (now deployed)
SELECT gnn.train('dp', model => 'gcn', name => 'dp_keep', epochs => 40, seed => 1, wait => true) > 0 AS v1;
SELECT gnn.train('dp', model => 'gcn', name => 'dp_keep', epochs => 1, lr => 1e-6, seed => 2, deploy => 'if_better',
                 wait => true) > 0 AS v2_poor;
SELECT version, deployed FROM gnn.models WHERE name = 'dp_keep' ORDER BY version;
SELECT gnn.embedding('dp_keep', 5) = gnn.embedding('dp_keep', 5, version => 1) AS calls_keep_v1;

-- the deployed version dropped: calls use the latest again, and rollback skips it
SELECT gnn.drop_model('dp_new', 2);
SELECT gnn.embedding('dp_new', 5) = gnn.embedding('dp_new', 5, version => 1) AS latest_again;
SELECT count(*) AS deployed_rows FROM gnn.models WHERE name = 'dp_new' AND deployed;
SELECT count(*) AS history_of_dropped FROM gnn.deployments WHERE name = 'dp_new' AND version = 2;

-- bad calls
\set VERBOSITY default
SELECT gnn.deploy('dp_m');
SELECT gnn.deploy('dp_m', 99);
SELECT gnn.deploy('dp_m', 0);
SELECT gnn.deploy('nope', 1);
SELECT gnn.deploy('dp_m', 1, strategy => 'best_score');
SELECT gnn.deploy('dp_m', strategy => 'newest');
SELECT gnn.train('dp', deploy => 'sometimes');
SELECT gnn.deploy(NULL, 1);

-- another role: its own names, none of ours; it cannot write the history
CREATE ROLE dp_other;
GRANT USAGE ON SCHEMA gnn TO dp_other;
SET ROLE dp_other;
SELECT gnn.deploy('dp_m', 1);
SELECT count(*) AS visible FROM gnn.deployments;
INSERT INTO gnn.deployments (owner, name, version, strategy) VALUES ('dp_other', 'dp_m', 1, 'specific');
RESET ROLE;
REVOKE USAGE ON SCHEMA gnn FROM dp_other;
DROP ROLE dp_other;

SELECT gnn.drop_model('dp_m'), gnn.drop_model('dp_new'), gnn.drop_model('dp_keep');
SELECT gnn.drop_graph('dp');
DROP FUNCTION dp_answer, dp_same;
DROP TABLE dp_nodes, dp_edges;
RESET gnn.threads;
