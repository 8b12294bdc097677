-- Change capture of schema graphs (gnn.load_schema_graph(..., track => true)
-- or gnn.track): every table (and partition) gets capture triggers; a refresh
-- after changes reloads the graph from its tables (features are encoded over
-- whole columns, edges are foreign-key columns of node rows), atomically, and
-- the result equals a fresh load.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS gnn;
RESET client_min_messages;
CREATE SCHEMA ts;
SET search_path = ts, public;

CREATE TABLE cust (id uuid PRIMARY KEY, age int, country text, segment text, split text);
CREATE TABLE prod (id text PRIMARY KEY, price numeric, kind text);
CREATE TABLE ord (id bigint PRIMARY KEY, cust_id uuid REFERENCES cust ON DELETE CASCADE,
                  prod_id text REFERENCES prod ON DELETE CASCADE, qty int)
    PARTITION BY RANGE (id);
CREATE TABLE ord_a PARTITION OF ord FOR VALUES FROM (MINVALUE) TO (1000);
CREATE TABLE ord_b PARTITION OF ord FOR VALUES FROM (1000) TO (MAXVALUE);
INSERT INTO cust SELECT md5('c' || i)::uuid, 20 + i % 50, (ARRAY['fr', 'de', 'it'])[1 + i % 3],
       (ARRAY['a', 'b'])[1 + i % 2], (ARRAY['train', 'val', 'test'])[1 + i % 3]
FROM generate_series(1, 60) i;
INSERT INTO prod SELECT 'p' || i, i * 1.5, (ARRAY['x', 'y', 'z'])[1 + i % 3] FROM generate_series(1, 20) i;
INSERT INTO ord SELECT i * 17, md5('c' || (1 + i % 60))::uuid, 'p' || (1 + (i * 7) % 20), 1 + i % 4
FROM generate_series(1, 150) i;

SELECT nodes, edges FROM gnn.load_schema_graph('tsg', ARRAY['cust', 'prod', 'ord']::regclass[],
    target => 'cust', label => 'segment', split => 'split', track => true);
SELECT tracked, pending_changes FROM gnn.graphs WHERE name = 'tsg';
-- four triggers on every table and partition
SELECT tgrelid::regclass, count(*) FROM pg_trigger
WHERE tgfoid = 'gnn._capture()'::regprocedure GROUP BY 1 ORDER BY tgrelid::regclass::text;

CREATE FUNCTION ts_same() RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
    PERFORM gnn.load_schema_graph('tsg_fresh', ARRAY['cust', 'prod', 'ord']::regclass[],
        target => 'cust', label => 'segment', split => 'split', replace => true);
    RETURN gnn.graph_digest('tsg') = gnn.graph_digest('tsg_fresh');
END $$;
SELECT ts_same() AS same_at_start;

-- nothing pending: a no-op, no reload
SELECT inserted_nodes, deleted_nodes, inserted_edges FROM gnn.refresh_graph('tsg');

-- rows of every table change; the refresh reloads (and says why); equal to a fresh load
INSERT INTO cust VALUES (md5('new')::uuid, 33, 'es', 'b', 'train');
INSERT INTO ord VALUES (5000, md5('new')::uuid, 'p1', 2), (5001, md5('c1')::uuid, 'p2', 1);
UPDATE prod SET price = price * 2 WHERE id = 'p3';
DELETE FROM ord WHERE id = 17 * 3;
DELETE FROM prod WHERE id = 'p20';                  -- and its orders (cascade)
SELECT pending_changes > 0 AS pending FROM gnn.graphs WHERE name = 'tsg';
SELECT ts_same() AS same_before_refresh;
SELECT inserted_nodes, deleted_nodes, inserted_edges > 0 AS edges FROM gnn.refresh_graph('tsg');
SELECT ts_same() AS same_after_refresh, pending_changes, tracked FROM gnn.graphs WHERE name = 'tsg';
SELECT gnn.degree('tsg', md5('new')::uuid::text, 'in', node_type => 'cust') AS new_customer_orders;

-- a rolled-back change leaves nothing to refresh
BEGIN;
DELETE FROM ord;
ROLLBACK;
SELECT pending_changes FROM gnn.graphs WHERE name = 'tsg';

-- a refresh inside a transaction: seen at once there, by others after commit; a rollback undoes it
UPDATE cust SET age = 99 WHERE id = md5('c1')::uuid;
BEGIN;
SELECT inserted_nodes > 0 AS reloaded FROM gnn.refresh_graph('tsg');
SELECT ts_same() AS same_inside;
ROLLBACK;
SELECT pending_changes > 0 AS still_pending FROM gnn.graphs WHERE name = 'tsg';
SELECT inserted_nodes > 0 AS reloaded FROM gnn.refresh_graph('tsg');
SELECT ts_same() AS same_after_update;

-- TRUNCATE and a partition attached later: reloads that capture it from then on
TRUNCATE ord_b;
CREATE TABLE ord_c (LIKE ord);
INSERT INTO ord_c VALUES (-5, md5('c2')::uuid, 'p2', 3);
ALTER TABLE ord DETACH PARTITION ord_a;
ALTER TABLE ord ATTACH PARTITION ord_c FOR VALUES FROM (MINVALUE) TO (0);
ALTER TABLE ord ATTACH PARTITION ord_a FOR VALUES FROM (0) TO (1000);
SELECT inserted_nodes > 0 AS reloaded FROM gnn.refresh_graph('tsg');
SELECT ts_same() AS same_after_truncate_and_attach;
INSERT INTO ord_c VALUES (-6, md5('c3')::uuid, 'p3', 1);
SELECT pending_changes > 0 AS new_partition_captured FROM gnn.graphs WHERE name = 'tsg';
SELECT inserted_nodes > 0 AS reloaded FROM gnn.refresh_graph('tsg');
SELECT ts_same() AS same_after_new_partition_row;

-- untrack, track again (gnn.track reloads the schema graph as it was loaded)
SELECT gnn.track('tsg', false);
SELECT tracked FROM gnn.graphs WHERE name = 'tsg';
SELECT count(*) FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
WHERE tgfoid = 'gnn._capture()'::regprocedure AND c.relnamespace = 'ts'::regnamespace;
SELECT * FROM gnn.refresh_graph('tsg');
INSERT INTO prod VALUES ('p99', 1, 'x');
SELECT gnn.track('tsg') > 0 AS tracked_again;
SELECT ts_same() AS same_after_track;
SELECT tracked, pending_changes FROM gnn.graphs WHERE name = 'tsg';

-- options survive the reload: a key named in options.keys, an excluded column
CREATE TABLE nk (code text UNIQUE NOT NULL, v int, secret int);
CREATE TABLE nk_ref (id int PRIMARY KEY, code text REFERENCES nk (code));
INSERT INTO nk SELECT 'k' || i, i, i * 100 FROM generate_series(1, 5) i;
INSERT INTO nk_ref SELECT i, 'k' || (1 + i % 5) FROM generate_series(1, 8) i;
SELECT nodes, edges, feature_dim FROM gnn.load_schema_graph('tsk', ARRAY['nk', 'nk_ref']::regclass[],
    options => '{"keys": {"nk": "code"}, "exclude": {"nk": ["secret"]}}', track => true);
INSERT INTO nk VALUES ('k6', 6, 600);
SELECT inserted_nodes FROM gnn.refresh_graph('tsk');
SELECT nodes, feature_dim FROM gnn.graphs WHERE name = 'tsk';
SELECT gnn.degree('tsk', 'k6', 'in', node_type => 'nk') AS k6_in;

-- a dropped table: the refresh says so
DROP TABLE nk_ref;
SELECT * FROM gnn.refresh_graph('tsk');

-- another role cannot track or refresh this role's graph (names are per role)
CREATE ROLE ts_other;
GRANT USAGE ON SCHEMA ts TO ts_other;
SET ROLE ts_other;
SELECT gnn.track('tsg');
SELECT * FROM gnn.refresh_graph('tsg');
RESET ROLE;

SELECT gnn.drop_graph(g) FROM unnest(ARRAY['tsg', 'tsg_fresh', 'tsk']) g;
SELECT count(*) AS triggers_left FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
WHERE tgfoid = 'gnn._capture()'::regprocedure AND c.relnamespace = 'ts'::regnamespace;
DROP SCHEMA ts CASCADE;
REVOKE ALL ON SCHEMA public FROM ts_other;
DROP ROLE ts_other;
