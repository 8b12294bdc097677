-- PostgreSQL's promises across features (issue #39): what a statement does
-- to graphs follows its transaction; capture acts only for what gnn itself
-- recorded; DDL on tracked tables is seen.  Several sessions, restarts,
-- DROP EXTENSION with running jobs and interrupts: test/t/017_promises.pl.
CREATE EXTENSION IF NOT EXISTS gnn;
CREATE TABLE pe AS SELECT i AS s, (i + 1) % 40 AS d, 1.0::float8 AS w FROM generate_series(0, 39) i;
CREATE TABLE pn AS SELECT i AS id, ARRAY[i::real, 1] AS f, i % 3 AS label, 'train' AS split FROM generate_series(0, 39) i;
SELECT nodes, edges FROM gnn.load_graph('pg', 'pe', 's', 'd', nodes => 'pn', features => 'f');
CREATE FUNCTION p_graphs() RETURNS text LANGUAGE sql AS
  $$ SELECT coalesce(string_agg(name || ':' || edges, ', ' ORDER BY name), '-') FROM gnn.graphs $$;

-- #5: a drop that rolls back leaves the graph and its store files; the
-- session sees its own drop at once
BEGIN;
SELECT gnn.drop_graph('pg');
SELECT gnn.degree('pg', 1);
ROLLBACK;
SELECT p_graphs(), (SELECT persisted FROM gnn.graphs WHERE name = 'pg') AS persisted;
SELECT gnn.degree('pg', 1);
-- a statement failing half-way drops nothing
SELECT gnn.drop_graph(x) FROM unnest(ARRAY['pg', 'missing']) x;
SELECT p_graphs();
-- a load that rolls back leaves nothing
BEGIN;
SELECT nodes FROM gnn.load_graph('ghost', 'pe', 's', 'd');
SELECT p_graphs();
ROLLBACK;
SELECT p_graphs();
-- savepoints: each level's load or drop goes with it; a replace and a drop in one transaction
BEGIN;
SELECT edges FROM gnn.load_graph('pg', 'pe', 's', 'd', replace => true, undirected => true);
SAVEPOINT a;
SELECT gnn.drop_graph('pg');
SELECT p_graphs();
ROLLBACK TO a;
SELECT p_graphs();
SAVEPOINT b;
SELECT edges FROM gnn.load_graph('pg', 'pe', 's', 'd', nodes => 'pn', replace => true);
SAVEPOINT c;
SELECT edges FROM gnn.load_graph('pg2', 'pe', 's', 'd');
ROLLBACK TO c;
RELEASE b;
SELECT p_graphs();
COMMIT;
SELECT p_graphs(), (SELECT persisted FROM gnn.graphs WHERE name = 'pg') AS persisted;
-- 200 replaces in one transaction hold one version, not 200
BEGIN;
SELECT count(*) FROM generate_series(1, 200) i, LATERAL gnn.load_graph('pg', 'pe', 's', 'd', replace => true) g;
SELECT gnn.memory_used() < 3 * (SELECT bytes FROM gnn.graphs WHERE name = 'pg') AS one_version_held;
COMMIT;
SELECT gnn.memory_used() = (SELECT sum(bytes) FROM gnn.graphs) AS accounted;
-- a job started at once cannot see a graph this transaction has not committed
BEGIN;
SELECT nodes FROM gnn.load_graph('pg3', 'pe', 's', 'd', nodes => 'pn', features => 'f', label => 'label', split => 'split');
SELECT gnn.train('pg3', 'gcn', epochs => 1, device => 'cpu', wait => true);
ROLLBACK;
-- a partition follows its transaction: seen by the transaction at once, gone with its rollback
BEGIN;
SELECT count(*) FROM gnn.partition('pg', 2, 'random', balance => '{nodes}', seed => 1);
SELECT parts FROM (SELECT count(*) - 1 AS parts FROM gnn.partition_stats('pg')) s;
ROLLBACK;
SELECT * FROM gnn.partition_stats('pg');
SELECT count(*) FROM gnn.partition('pg', 2, 'random', balance => '{nodes}', seed => 1);
SELECT count(*) - 1 AS parts FROM gnn.partition_stats('pg');
-- shared results: dropping them (gnn.cache_drop, gnn.drop_model) takes effect at commit
SELECT nodes FROM gnn.load_graph('pgm', 'pe', 's', 'd', nodes => 'pn', features => 'f', label => 'label', split => 'split');
SELECT gnn.train('pgm', 'gcn', name => 'p_model', epochs => 2, device => 'cpu', seed => 1, wait => true) > 0 AS trained;
SELECT count(*) FROM gnn.predict('p_model');
SELECT count(*) > 0 AS cached FROM gnn.cache WHERE model = 'p_model';
BEGIN;
SELECT gnn.cache_drop('p_model') AS dropping;
ROLLBACK;
SELECT count(*) > 0 AS still_cached FROM gnn.cache WHERE model = 'p_model';
BEGIN;
SELECT gnn.drop_model('p_model');
ROLLBACK;
SELECT count(*) > 0 AS still_cached_and_there FROM gnn.cache c JOIN gnn.models m ON m.name = c.model
WHERE c.model = 'p_model';
SELECT gnn.cache_drop('p_model') AS dropped;
SELECT count(*) AS left FROM gnn.cache WHERE model = 'p_model';
SELECT gnn.drop_model('p_model');
SELECT gnn.drop_graph('pgm');
-- PREPARE TRANSACTION with a staged graph change is refused (nothing is prepared or kept)
BEGIN;
SELECT gnn.drop_graph('pg');
PREPARE TRANSACTION 'p';
SELECT p_graphs();

-- #2: capture acts only for the triggers gnn.track made, for the graph it
-- made them for; trigger definitions name no graph and no owner
CREATE ROLE p_alice;
CREATE ROLE p_bob;
GRANT CREATE ON SCHEMA public TO p_alice, p_bob;
SET ROLE p_alice;
CREATE TABLE ae (s int, d int, w float8);
INSERT INTO ae SELECT i, (i + 1) % 20, 1 FROM generate_series(0, 19) i;
SELECT edges FROM gnn.load_graph('ag', 'ae', 's', 'd', weight => 'w', track => true);
SELECT tgname ~ '^gnn_capture_[0-9]+_[iudt]$' AS opaque_name, tgnargs, tgenabled FROM pg_trigger
WHERE tgrelid = 'ae'::regclass ORDER BY tgname;
SELECT tracked, pending_changes FROM gnn.graphs;
RESET ROLE;
SET ROLE p_bob;
CREATE TABLE junk (x int);
CREATE TRIGGER j1 AFTER INSERT ON junk REFERENCING NEW TABLE AS gnn_new FOR EACH STATEMENT
  EXECUTE FUNCTION gnn._capture('ag', '10', 'e', 'x', 'x', '', '');
CREATE TRIGGER j2 AFTER TRUNCATE ON junk FOR EACH STATEMENT EXECUTE FUNCTION gnn._capture();
INSERT INTO junk VALUES (1), (2);
TRUNCATE junk;
SELECT count(*) AS bobs_log_rows FROM gnn.change_log;
SELECT count(*) AS bobs_capture_rows FROM gnn.capture;
-- nor can p_bob write the binding table or the log
INSERT INTO gnn.capture VALUES (1, 1, 'ag', 'p_alice', '\x00', 'x');
RESET ROLE;
SELECT count(*) AS log_rows FROM gnn.change_log;
-- a graph the log has rows for is loaded; a dropped one's rows go with it
SELECT count(*) = 0 AS no_orphans FROM gnn.change_log l
WHERE NOT EXISTS (SELECT 1 FROM gnn.graphs g WHERE g.name = l.graph AND g.owner = l.owner);

-- #4: DDL a row trigger never sees marks the graph for a full reload, and a
-- refreshed graph equals a fresh load of the tables as they are then
SET ROLE p_alice;
INSERT INTO ae VALUES (3, 7, 2);
ALTER TABLE ae ALTER COLUMN w TYPE numeric USING w * 10;
SELECT inserted_edges, deleted_edges FROM gnn.refresh_graph('ag');
SELECT edges FROM gnn.load_graph('fresh', 'ae', 's', 'd', weight => 'w');
SELECT gnn.graph_digest('ag') = gnn.graph_digest('fresh') AS rewrite_seen;
-- src and dst swapped by renames
ALTER TABLE ae RENAME s TO tmp;
ALTER TABLE ae RENAME d TO s;
ALTER TABLE ae RENAME tmp TO d;
SELECT inserted_edges FROM gnn.refresh_graph('ag');
SELECT edges FROM gnn.load_graph('fresh', 'ae', 's', 'd', weight => 'w', replace => true);
SELECT gnn.graph_digest('ag') = gnn.graph_digest('fresh') AS renames_seen;
-- DDL that leaves every row as it was changes nothing
ALTER TABLE ae ALTER COLUMN w SET DEFAULT 1, ADD COLUMN note text;
CREATE INDEX ON ae (s);
SELECT pending_changes FROM gnn.graphs WHERE name = 'ag';
-- disabled triggers: not tracked while they are off; each refresh reloads; enabling marks a reload
ALTER TABLE ae DISABLE TRIGGER ALL;
RESET ROLE;
SELECT tracked FROM gnn.graphs WHERE name = 'ag';
SET ROLE p_alice;
INSERT INTO ae VALUES (1, 1, 1);
SELECT inserted_edges FROM gnn.refresh_graph('ag');
-- re-enabled without ALWAYS, replica sessions would be missed: not tracked either, until gnn.track
ALTER TABLE ae ENABLE TRIGGER ALL;
SELECT tracked FROM gnn.graphs WHERE name = 'ag';
SELECT gnn.track('ag');
SELECT tracked FROM gnn.graphs WHERE name = 'ag';
SELECT inserted_edges FROM gnn.refresh_graph('ag');
-- a replica-role session (logical replication's apply) is captured too
RESET ROLE;
SET session_replication_role = replica;
INSERT INTO ae VALUES (2, 2, 1);
RESET session_replication_role;
SET ROLE p_alice;
SELECT pending_changes FROM gnn.graphs WHERE name = 'ag';
SELECT inserted_edges FROM gnn.refresh_graph('ag');
SELECT edges FROM gnn.load_graph('fresh', 'ae', 's', 'd', weight => 'w', replace => true);
SELECT gnn.graph_digest('ag') = gnn.graph_digest('fresh') AS replica_seen;
-- a rolled-back drop of a tracked graph leaves its triggers and its tracking
BEGIN;
SELECT gnn.drop_graph('ag');
ROLLBACK;
SELECT tracked FROM gnn.graphs WHERE name = 'ag';
SELECT count(*) AS triggers FROM pg_trigger WHERE tgrelid = 'ae'::regclass AND tgname LIKE 'gnn_capture%';
-- a rolled-back untrack too
BEGIN;
SELECT gnn.track('ag', false);
ROLLBACK;
SELECT tracked FROM gnn.graphs WHERE name = 'ag';
-- a dropped table: no longer tracked, and the refresh says why
DROP TABLE ae;
SELECT tracked FROM gnn.graphs WHERE name = 'ag';
SELECT * FROM gnn.refresh_graph('ag');
SELECT gnn.drop_graph('ag');
SELECT gnn.drop_graph('fresh');
RESET ROLE;
SELECT count(*) AS capture_rows, (SELECT count(*) FROM gnn.change_log) AS log_rows FROM gnn.capture;

-- #9: tracking without the TRIGGER privilege says what is missing
CREATE TABLE pt (s int, d int);
INSERT INTO pt VALUES (1, 2);
GRANT SELECT ON pt TO p_bob;
SET ROLE p_bob;
SELECT edges FROM gnn.load_graph('bt', 'pt', 's', 'd', track => true);
RESET ROLE;

SELECT gnn.drop_graph('pg');
DROP TABLE pe, pn, pt, junk;
DROP FUNCTION p_graphs();
REVOKE CREATE ON SCHEMA public FROM p_alice, p_bob;
DROP ROLE p_alice;
DROP ROLE p_bob;
