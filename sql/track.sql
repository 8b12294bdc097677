-- Change capture and refresh (gnn.track, gnn.refresh_graph): a tracked graph
-- follows its tables, and after random changes equals a fresh load.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS gnn;
SET client_min_messages = notice;

CREATE TABLE tr_nodes (id bigint PRIMARY KEY, feat real[] NOT NULL, label text, split text);
CREATE TABLE tr_edges (src bigint NOT NULL REFERENCES tr_nodes ON DELETE CASCADE,
                       dst bigint NOT NULL REFERENCES tr_nodes ON DELETE CASCADE,
                       w int NOT NULL DEFAULT 1);
INSERT INTO tr_nodes SELECT i, ARRAY[i, i % 3]::real[], 'c' || (i % 3),
       CASE i % 4 WHEN 0 THEN 'train' WHEN 1 THEN 'val' WHEN 2 THEN 'test' END
FROM generate_series(1, 40) i;
INSERT INTO tr_edges SELECT i, 1 + (i * 7) % 40, 1 + i % 3 FROM generate_series(1, 40) i;
INSERT INTO tr_edges SELECT i, 1 + (i * 11) % 40, 2 FROM generate_series(1, 40, 2) i;

SELECT nodes, edges, classes FROM gnn.load_graph('tr', 'tr_edges', nodes => 'tr_nodes', features => 'feat',
    label => 'label', split => 'split', weight => 'w', track => true);
SELECT name, nodes, edges, tracked, pending_changes, refreshed_at IS NULL AS never
FROM gnn.graphs WHERE name = 'tr';

-- the triggers are there, four per table
SELECT tgrelid::regclass, count(*) FROM pg_trigger
WHERE tgfoid = 'gnn._capture()'::regprocedure GROUP BY 1 ORDER BY 1;

-- a fresh load of the same tables, to compare with
CREATE FUNCTION tr_same() RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
    PERFORM gnn.load_graph('tr_fresh', 'tr_edges', nodes => 'tr_nodes', features => 'feat', label => 'label',
                           split => 'split', weight => 'w', replace => true);
    RETURN gnn.graph_digest('tr') = gnn.graph_digest('tr_fresh');
END $$;
SELECT tr_same() AS same_at_start;

-- changes: edges in, out, updated; nodes in, out (with their edges), updated
INSERT INTO tr_nodes VALUES (41, '{41,2}', 'c2', 'train'), (42, '{42,0}', NULL, NULL);
INSERT INTO tr_edges VALUES (41, 1, 5), (42, 41, 1), (1, 42, 1);
DELETE FROM tr_edges WHERE src = 3;
UPDATE tr_edges SET w = w + 1 WHERE src = 5;
UPDATE tr_edges SET dst = 2 WHERE src = 6;
UPDATE tr_nodes SET feat = '{-1,-1}', split = 'test' WHERE id = 7;
UPDATE tr_nodes SET label = 'c0' WHERE id = 8;
UPDATE tr_nodes SET label = label WHERE id < 20;       -- changes nothing loaded
DELETE FROM tr_nodes WHERE id = 9;                      -- and its edges (cascade)
BEGIN;
INSERT INTO tr_edges VALUES (10, 10, 100);
DELETE FROM tr_nodes WHERE id = 11;
ROLLBACK;                                               -- leaves nothing behind
SELECT pending_changes > 0 AS pending FROM gnn.graphs WHERE name = 'tr';
SELECT tr_same() AS same_before_refresh;
SELECT inserted_edges, deleted_edges, inserted_nodes, deleted_nodes, updated_nodes
FROM gnn.refresh_graph('tr');
SELECT tr_same() AS same_after_refresh;
SELECT pending_changes, refreshed_at IS NOT NULL AS refreshed FROM gnn.graphs WHERE name = 'tr';
-- nothing pending: a no-op
SELECT inserted_edges, deleted_edges FROM gnn.refresh_graph('tr');
SELECT gnn.degree('tr', 41, 'out'), gnn.degree('tr', 1, 'in') = (SELECT count(DISTINCT src) FROM tr_edges WHERE dst = 1);

-- an insert and a delete of the same row cancel
INSERT INTO tr_edges VALUES (12, 13, 1);
DELETE FROM tr_edges WHERE src = 12 AND dst = 13;
SELECT inserted_edges, deleted_edges FROM gnn.refresh_graph('tr');
SELECT tr_same() AS same_after_cancel;

-- a new text class cannot be merged: the refresh reloads
UPDATE tr_nodes SET label = 'c9' WHERE id = 12;
SELECT inserted_nodes > 0 AS reloaded FROM gnn.refresh_graph('tr');
SELECT tr_same() AS same_after_new_class, classes FROM gnn.graphs WHERE name = 'tr';

-- TRUNCATE: a full reload
TRUNCATE tr_edges;
INSERT INTO tr_edges VALUES (1, 2, 1), (2, 3, 1);
SELECT pending_changes FROM gnn.graphs WHERE name = 'tr';
SELECT inserted_edges FROM gnn.refresh_graph('tr');
SELECT tr_same() AS same_after_truncate, edges FROM gnn.graphs WHERE name = 'tr';

-- a refresh that rolls back changes nothing; the next one applies it all
INSERT INTO tr_edges VALUES (3, 4, 1);
BEGIN;
SELECT inserted_edges FROM gnn.refresh_graph('tr');
ROLLBACK;
SELECT edges, pending_changes FROM gnn.graphs WHERE name = 'tr';
SELECT inserted_edges FROM gnn.refresh_graph('tr');
SELECT tr_same() AS same_after_rollback;

-- a refresh takes effect at commit; two in one transaction build on each other
BEGIN;
INSERT INTO tr_edges VALUES (4, 5, 1);
SELECT inserted_edges FROM gnn.refresh_graph('tr');
INSERT INTO tr_edges VALUES (5, 6, 1);
SELECT inserted_edges FROM gnn.refresh_graph('tr');
COMMIT;
SELECT tr_same() AS same_after_two, edges FROM gnn.graphs WHERE name = 'tr';

-- bad rows: the refresh fails like a load would, and nothing is lost
ALTER TABLE tr_nodes ALTER feat DROP NOT NULL;
INSERT INTO tr_nodes VALUES (50, NULL, NULL, NULL);
SELECT * FROM gnn.refresh_graph('tr');
SELECT pending_changes FROM gnn.graphs WHERE name = 'tr';
UPDATE tr_nodes SET feat = '{50,50}' WHERE id = 50;
SELECT inserted_nodes FROM gnn.refresh_graph('tr');
SELECT tr_same() AS same_after_fix;

-- a dropped column: the trigger marks a full reload, which then says what is wrong
ALTER TABLE tr_edges RENAME w TO weight2;
INSERT INTO tr_edges VALUES (6, 7, 1);
SELECT * FROM gnn.refresh_graph('tr');
ALTER TABLE tr_edges RENAME weight2 TO w;
SELECT inserted_edges > 0 AS reloaded FROM gnn.refresh_graph('tr');
SELECT tr_same() AS same_after_rename;

-- the new version counts against gnn.max_graph_memory: a refresh that does not
-- fit fails with the figure and changes nothing
CREATE TABLE tr_bigedges AS SELECT i AS src, i + 1 AS dst FROM generate_series(1, 100000) i;
SELECT (SELECT edges FROM gnn.load_graph('tr_big', 'tr_bigedges')) AS big_edges,
       gnn.memory_used() > 1048576 AS over_1mb_after;
INSERT INTO tr_edges VALUES (7, 8, 1);
SET gnn.max_graph_memory = 1;
DO $$ BEGIN PERFORM gnn.refresh_graph('tr');
EXCEPTION WHEN configuration_limit_exceeded THEN
    RAISE NOTICE 'refused: %', regexp_replace(SQLERRM, '[0-9]+ MB', 'N MB', 'g'); END $$;
RESET gnn.max_graph_memory;
SELECT gnn.drop_graph('tr_big');
SELECT pending_changes FROM gnn.graphs WHERE name = 'tr';
SELECT inserted_edges FROM gnn.refresh_graph('tr');
SELECT tr_same() AS same_after_memory_refusal;

-- random DML over many seeds: always equal to a fresh load
CREATE FUNCTION tr_random(seed int, steps int) RETURNS void LANGUAGE plpgsql AS $$
DECLARE r float8; a bigint; b bigint;
BEGIN
    PERFORM setseed(seed / 1000.0);
    FOR s IN 1..steps LOOP
        r := random();
        a := 1 + floor(random() * 60)::bigint;
        b := 1 + floor(random() * 60)::bigint;
        BEGIN
            IF r < 0.35 THEN
                INSERT INTO tr_edges SELECT a, b, 1 + floor(random() * 3)::int
                WHERE EXISTS (SELECT 1 FROM tr_nodes WHERE id = a) AND EXISTS (SELECT 1 FROM tr_nodes WHERE id = b);
            ELSIF r < 0.55 THEN
                DELETE FROM tr_edges WHERE ctid = (SELECT ctid FROM tr_edges WHERE src = a LIMIT 1);
            ELSIF r < 0.65 THEN
                UPDATE tr_edges SET w = w + 1 WHERE src = a;
            ELSIF r < 0.72 THEN
                UPDATE tr_edges SET dst = b WHERE src = a AND EXISTS (SELECT 1 FROM tr_nodes WHERE id = b);
            ELSIF r < 0.80 THEN
                INSERT INTO tr_nodes VALUES (a, ARRAY[random(), random()]::real[],
                                             (ARRAY['c0', 'c1', 'c2', NULL])[1 + floor(random() * 4)::int],
                                             (ARRAY['train', 'val', 'test', NULL])[1 + floor(random() * 4)::int])
                ON CONFLICT (id) DO UPDATE SET feat = excluded.feat, label = excluded.label;
            ELSIF r < 0.87 THEN
                DELETE FROM tr_nodes WHERE id = a AND a > 3;
            ELSIF r < 0.95 THEN
                UPDATE tr_nodes SET split = (ARRAY['train', 'val', 'test', NULL])[1 + floor(random() * 4)::int],
                                    feat = ARRAY[feat[2], feat[1]]
                WHERE id BETWEEN a AND a + 3;
            ELSE
                -- a subtransaction that rolls back
                INSERT INTO tr_edges VALUES (1, 1, 9);
                RAISE EXCEPTION 'roll back';
            END IF;
        EXCEPTION WHEN raise_exception THEN NULL;
        END;
    END LOOP;
END $$;

CREATE TABLE tr_results (seed int, same boolean);
DO $$
BEGIN
    FOR seed IN 1..25 LOOP
        PERFORM tr_random(seed, 40);
        PERFORM gnn.refresh_graph('tr');
        INSERT INTO tr_results SELECT seed, tr_same();
    END LOOP;
END $$;
SELECT count(*) AS seeds, count(*) FILTER (WHERE same) AS equal FROM tr_results;


-- edges only (the node set is the endpoints), undirected, unweighted
CREATE TABLE tr_e2 (a int NOT NULL, b int NOT NULL);
INSERT INTO tr_e2 SELECT i, i + 1 FROM generate_series(1, 30) i;
SELECT edges FROM gnn.load_graph('tr2', 'tr_e2', src => 'a', dst => 'b', undirected => true, track => true);
-- a NULL column name on a tracked graph: an error, before tracking looks it up (it crashed)
SELECT gnn.load_graph('tr2', 'tr_e2', src => NULL, dst => 'b', replace => true);
SELECT gnn.load_graph('tr2', 'tr_e2', src => 'a', dst => NULL, replace => true);
SELECT tracked, edges FROM gnn.graphs WHERE name = 'tr2';
CREATE FUNCTION tr2_same() RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
    PERFORM gnn.load_graph('tr2_fresh', 'tr_e2', src => 'a', dst => 'b', undirected => true, replace => true);
    RETURN gnn.graph_digest('tr2') = gnn.graph_digest('tr2_fresh');
END $$;
DELETE FROM tr_e2 WHERE a = 30;                 -- node 31 goes
INSERT INTO tr_e2 VALUES (100, 1), (5, 5);      -- node 100 comes, a self-loop
UPDATE tr_e2 SET b = 1 WHERE a = 20;
SELECT inserted_edges, deleted_edges, inserted_nodes, deleted_nodes FROM gnn.refresh_graph('tr2');
SELECT tr2_same() AS edges_only_same;
DO $$
BEGIN
    FOR seed IN 1..15 LOOP
        PERFORM setseed(seed / 100.0);
        INSERT INTO tr_e2 SELECT 1 + floor(random() * 50), 1 + floor(random() * 50) FROM generate_series(1, 5);
        DELETE FROM tr_e2 WHERE ctid IN (SELECT ctid FROM tr_e2 ORDER BY random() LIMIT 4);
        PERFORM gnn.refresh_graph('tr2');
        IF NOT tr2_same() THEN RAISE EXCEPTION 'differs at seed %', seed; END IF;
    END LOOP;
END $$;

-- errors
SELECT gnn.refresh_graph('tr_fresh');                -- not tracked
SELECT gnn.refresh_graph('no_such_graph');
CREATE VIEW tr_view AS SELECT * FROM tr_edges;
SELECT edges FROM gnn.load_graph('trv', 'tr_view', weight => 'w');
SELECT gnn.track('trv');                             -- a view has no transition tables
CREATE TABLE tr_text (s text, d text);
INSERT INTO tr_text VALUES ('a', 'b');
SELECT edges FROM gnn.load_graph('trt', 'tr_text', src => 's', dst => 'd');
SELECT gnn.track('trt');
SELECT edges FROM gnn.load_graph('trt', 'tr_text', src => 's', dst => 'd', replace => true, track => true);
-- the trigger function only works as set up by gnn.track
SELECT gnn._capture();
CREATE TRIGGER bad AFTER INSERT ON tr_text FOR EACH ROW EXECUTE FUNCTION gnn._capture();
INSERT INTO tr_text VALUES ('x', 'y');
DROP TRIGGER bad ON tr_text;

-- a reload keeps the graph tracked (after a restart, the same gnn.load_graph call)
SELECT tracked FROM gnn.load_graph('tr2', 'tr_e2', src => 'a', dst => 'b', undirected => true, replace => true)
JOIN gnn.graphs USING (name);
-- untrack: triggers and log go
INSERT INTO tr_e2 VALUES (7, 8);
SELECT gnn.track('tr2', false);
SELECT tracked, pending_changes FROM gnn.graphs WHERE name = 'tr2';
SELECT count(*) FROM pg_trigger WHERE tgrelid = 'tr_e2'::regclass;
SELECT gnn.track('tr2');
SELECT tracked, pending_changes FROM gnn.graphs WHERE name = 'tr2';
-- dropping the graph untracks it
SELECT gnn.drop_graph('tr2');
SELECT count(*) FROM pg_trigger WHERE tgrelid = 'tr_e2'::regclass;
SELECT count(*) FROM gnn.change_log WHERE graph = 'tr2';

-- partitioned tables: rows through the parent and straight into a partition
CREATE TABLE tr_pe (src int NOT NULL, dst int NOT NULL) PARTITION BY RANGE (src);
CREATE TABLE tr_pe1 PARTITION OF tr_pe FOR VALUES FROM (0) TO (50);
CREATE TABLE tr_pe2 PARTITION OF tr_pe FOR VALUES FROM (50) TO (1000);
INSERT INTO tr_pe SELECT i, (i * 3) % 100 FROM generate_series(1, 99) i;
SELECT edges FROM gnn.load_graph('trp', 'tr_pe', track => true);
INSERT INTO tr_pe VALUES (1, 99), (60, 2);
INSERT INTO tr_pe1 VALUES (2, 98);
DELETE FROM tr_pe2 WHERE src = 70;
SELECT inserted_edges, deleted_edges FROM gnn.refresh_graph('trp');
SELECT gnn.load_graph('trp_fresh', 'tr_pe') IS NOT NULL AS loaded;
SELECT gnn.graph_digest('trp') = gnn.graph_digest('trp_fresh') AS partitioned_same;
-- a partition attached after tracking began: its rows were never logged, so the
-- refresh reloads, and captures the partition from then on
CREATE TABLE tr_pe3 (src int NOT NULL, dst int NOT NULL);
INSERT INTO tr_pe3 VALUES (1000, 1), (1001, 2);
ALTER TABLE tr_pe ATTACH PARTITION tr_pe3 FOR VALUES FROM (1000) TO (2000);
SELECT inserted_edges > 0 AS reloaded FROM gnn.refresh_graph('trp');
INSERT INTO tr_pe3 VALUES (1002, 3);
SELECT inserted_edges, deleted_edges FROM gnn.refresh_graph('trp');
SELECT gnn.load_graph('trp_fresh', 'tr_pe', replace => true) IS NOT NULL AS loaded;
SELECT gnn.graph_digest('trp') = gnn.graph_digest('trp_fresh') AS attached_partition_same;

-- deltas: changes that keep the node set (edge rows, node data) stay a delta
-- over the loaded graph that every reader consults, piling up over refreshes
-- until they pass gnn.merge_threshold; the graph equals a fresh load, and so
-- does every row that gnn.degree and gnn.neighbors read
SET gnn.merge_threshold = 0.9;
SELECT edges > 0 AS loaded FROM gnn.load_graph('tr', 'tr_edges', nodes => 'tr_nodes', features => 'feat',
    label => 'label', split => 'split', weight => 'w', replace => true, track => true);
CREATE FUNCTION tr_rows_same() RETURNS boolean LANGUAGE sql AS $$
    SELECT NOT EXISTS (
        SELECT 1 FROM tr_nodes n, (VALUES ('in'), ('out')) d(dir)
        WHERE gnn.degree('tr', n.id, d.dir) <> gnn.degree('tr_fresh', n.id, d.dir)
           OR ARRAY(SELECT (x.neighbor, x.weight) FROM gnn.neighbors('tr', n.id, d.dir) x ORDER BY 1)
              <> ARRAY(SELECT (x.neighbor, x.weight) FROM gnn.neighbors('tr_fresh', n.id, d.dir) x ORDER BY 1))
$$;
CREATE FUNCTION tr_delta_dml(seed int, steps int) RETURNS void LANGUAGE plpgsql AS $$
DECLARE r float8; a bigint; b bigint;
BEGIN
    PERFORM setseed(seed / 1000.0);
    FOR s IN 1..steps LOOP
        r := random();
        SELECT id INTO a FROM tr_nodes ORDER BY random() LIMIT 1;
        SELECT id INTO b FROM tr_nodes ORDER BY random() LIMIT 1;
        BEGIN
            IF r < 0.35 THEN
                INSERT INTO tr_edges VALUES (a, b, 1 + floor(random() * 3)::int);
            ELSIF r < 0.55 THEN
                DELETE FROM tr_edges WHERE ctid = (SELECT ctid FROM tr_edges WHERE src = a LIMIT 1);
            ELSIF r < 0.65 THEN
                UPDATE tr_edges SET w = w + 1 WHERE src = a;
            ELSIF r < 0.75 THEN
                UPDATE tr_edges SET dst = b WHERE src = a;
            ELSIF r < 0.92 THEN
                UPDATE tr_nodes SET feat = ARRAY[random(), random()]::real[],
                                    split = (ARRAY['train', 'val', 'test', NULL])[1 + floor(random() * 4)::int]
                WHERE id = a;
            ELSE
                INSERT INTO tr_edges VALUES (a, a, 9);
                RAISE EXCEPTION 'roll back';
            END IF;
        EXCEPTION WHEN raise_exception THEN NULL;
        END;
    END LOOP;
END $$;
CREATE TABLE tr_delta_results (seed int, delta_bytes bigint, same boolean, rows_same boolean);
-- (a refresh is published at commit: one transaction per round)
CREATE PROCEDURE tr_delta_rounds(n int) LANGUAGE plpgsql AS $$
BEGIN
    FOR seed IN 1..n LOOP
        PERFORM tr_delta_dml(seed, 8);
        COMMIT;
        PERFORM gnn.refresh_graph('tr');
        COMMIT;
        INSERT INTO tr_delta_results
        SELECT seed, (SELECT delta_bytes FROM gnn.graphs WHERE name = 'tr'), tr_same(), tr_rows_same();
        COMMIT;
    END LOOP;
END $$;
CALL tr_delta_rounds(12);
SELECT count(*) AS seeds, count(*) FILTER (WHERE same AND rows_same) AS equal,
       count(*) FILTER (WHERE delta_bytes > 0) AS as_deltas,
       bool_and(delta_bytes >= coalesce(prev, 0)) AS deltas_pile_up
FROM (SELECT *, lag(delta_bytes) OVER (ORDER BY seed) AS prev FROM tr_delta_results) x;
-- sampling and walks read the delta in place: with a seed, what they draw is what they draw on the fresh load
SELECT (SELECT array_agg((layer, src, dst) ORDER BY layer, src, dst)
        FROM gnn.sample_neighbors('tr', ARRAY(SELECT id FROM tr_nodes ORDER BY id LIMIT 10), ARRAY[3, 2], seed => 7)) =
       (SELECT array_agg((layer, src, dst) ORDER BY layer, src, dst)
        FROM gnn.sample_neighbors('tr_fresh', ARRAY(SELECT id FROM tr_nodes ORDER BY id LIMIT 10), ARRAY[3, 2], seed => 7))
       AS samples_same,
       (SELECT array_agg((walk, step, node) ORDER BY walk, step)
        FROM gnn.random_walk('tr', ARRAY(SELECT id FROM tr_nodes ORDER BY id LIMIT 10), 6, p => 0.5, q => 2, seed => 3)) =
       (SELECT array_agg((walk, step, node) ORDER BY walk, step)
        FROM gnn.random_walk('tr_fresh', ARRAY(SELECT id FROM tr_nodes ORDER BY id LIMIT 10), 6, p => 0.5, q => 2, seed => 3))
       AS walks_same,
       (SELECT delta_bytes > 0 FROM gnn.graphs WHERE name = 'tr') AS over_a_delta;
-- the bytes of graph and delta both count
SELECT bytes > delta_bytes AND delta_bytes > 0 AS both_counted FROM gnn.graphs WHERE name = 'tr';
-- a refresh in a transaction: seen by the transaction at once, by others at commit; a rollback drops it
BEGIN;
INSERT INTO tr_edges SELECT 1, id, 1 FROM tr_nodes WHERE id BETWEEN 2 AND 4;
SELECT inserted_edges FROM gnn.refresh_graph('tr');
SELECT gnn.degree('tr', 1, 'out') = (SELECT count(DISTINCT dst) FROM tr_edges WHERE src = 1) AS seen_in_transaction;
INSERT INTO tr_edges VALUES (2, 1, 1);
SELECT inserted_edges FROM gnn.refresh_graph('tr');    -- a second delta over the same base
SELECT gnn.degree('tr', 2, 'out') = (SELECT count(DISTINCT dst) FROM tr_edges WHERE src = 2) AS second_seen;
-- a later statement reads the pending delta over a base mapped afresh for it, alongside other graphs
SELECT gnn.degree('tr', 2, 'out') + gnn.degree('tr_fresh', 2, 'out') * 0 + gnn.degree('tr', 1, 'out') * 0 =
       (SELECT count(DISTINCT dst) FROM tr_edges WHERE src = 2) AS with_other_graphs;
SELECT (SELECT count(*) FROM gnn.neighbors('tr_fresh', 2, 'in')) >= 0 AND
       (SELECT count(*) FROM gnn.neighbors('tr', 2, 'out')) = (SELECT count(DISTINCT dst) FROM tr_edges WHERE src = 2)
       AS neighbours_with_other_graphs;
ROLLBACK;
SELECT tr_same() AS same_after_rolled_back_delta, pending_changes FROM gnn.graphs WHERE name = 'tr';
-- a node that comes merges (a delta keeps the node set)
INSERT INTO tr_nodes VALUES (1000, '{1,1}', 'c1', 'train');
INSERT INTO tr_edges VALUES (1000, 1, 1);
SELECT inserted_nodes FROM gnn.refresh_graph('tr');
SELECT delta_bytes AS delta_after_new_node FROM gnn.graphs WHERE name = 'tr';
SELECT tr_same() AS same_after_merge, tr_rows_same() AS rows_same_after_merge;
-- past the threshold the refresh merges too; 0 always merges
INSERT INTO tr_edges VALUES (1, 2, 1);
SELECT inserted_edges FROM gnn.refresh_graph('tr');
SELECT delta_bytes > 0 AS delta_again FROM gnn.graphs WHERE name = 'tr';
SET gnn.merge_threshold = 0.0001;
INSERT INTO tr_edges VALUES (2, 3, 1);
SELECT inserted_edges FROM gnn.refresh_graph('tr');
SELECT delta_bytes AS delta_past_threshold FROM gnn.graphs WHERE name = 'tr';
SET gnn.merge_threshold = 0.9;
INSERT INTO tr_edges VALUES (3, 2, 1);
SELECT inserted_edges FROM gnn.refresh_graph('tr');
SET gnn.merge_threshold = 0;
INSERT INTO tr_edges VALUES (1, 3, 1);
SELECT inserted_edges FROM gnn.refresh_graph('tr');
SELECT delta_bytes AS delta_when_off, tr_same() AS same_merged FROM gnn.graphs WHERE name = 'tr';
RESET gnn.merge_threshold;
-- merge => true merges a delta without any change pending (what the background refresher does
-- with a graph found idle)
SET gnn.merge_threshold = 0.9;
INSERT INTO tr_edges VALUES (2, 3, 1);
SELECT inserted_edges FROM gnn.refresh_graph('tr');
SELECT delta_bytes > 0 AS delta_before FROM gnn.graphs WHERE name = 'tr';
SELECT inserted_edges, deleted_edges FROM gnn.refresh_graph('tr', merge => true);
SELECT delta_bytes AS delta_after_merge, tr_same() AS same_after_merge_call, tr_rows_same() AS rows_same
FROM gnn.graphs WHERE name = 'tr';
RESET gnn.merge_threshold;

-- a merged copy (whole-graph work over a delta: training, digests, full passes) counts
-- against gnn.max_graph_memory while it lives, and is given back after
CREATE TABLE tr_mc (src int NOT NULL, dst int NOT NULL);
INSERT INTO tr_mc SELECT i, 1 + (i * 7) % 60000 FROM generate_series(1, 60000) i;
SELECT edges FROM gnn.load_graph('tr_mc', 'tr_mc', track => true);
SET gnn.merge_threshold = 0.9;
INSERT INTO tr_mc VALUES (1, 2), (3, 4);
SELECT inserted_edges FROM gnn.refresh_graph('tr_mc');
SELECT delta_bytes > 0 AS has_delta FROM gnn.graphs WHERE name = 'tr_mc';
SELECT gnn.memory_used() AS used_before \gset
SELECT length(gnn.graph_digest('tr_mc')) > 0 AS digest_over_merged_copy;
SELECT gnn.memory_used() = :used_before AS copy_given_back;
-- room for the graph, not for a copy of it
SELECT set_config('gnn.max_graph_memory', ((:used_before + 1048575) / 1048576)::text, false) IS NOT NULL AS limit_set;
DO $$ BEGIN PERFORM gnn.graph_digest('tr_mc');
EXCEPTION WHEN configuration_limit_exceeded THEN
    RAISE NOTICE 'refused: %', regexp_replace(SQLERRM, '[0-9]+ MB', 'N MB', 'g'); END $$;
RESET gnn.max_graph_memory;
SELECT gnn.memory_used() = :used_before AS nothing_left_reserved;
-- reading the delta in place needs no copy
SELECT gnn.degree('tr_mc', 1) AS degree_in_place;
RESET gnn.merge_threshold;
SELECT gnn.drop_graph('tr_mc');

-- no foreign key: a node row deleted while edge rows still point at it is what a
-- load refuses; so does the refresh (with the load's own error), keeping the changes
CREATE TABLE tr_nf_nodes (id int PRIMARY KEY, feat real[] NOT NULL);
CREATE TABLE tr_nf_edges (src int NOT NULL, dst int NOT NULL);
INSERT INTO tr_nf_nodes SELECT i, ARRAY[i, 1]::real[] FROM generate_series(1, 10) i;
INSERT INTO tr_nf_edges SELECT i, 1 + i % 10 FROM generate_series(1, 10) i;
SELECT edges FROM gnn.load_graph('tr_nf', 'tr_nf_edges', nodes => 'tr_nf_nodes', features => 'feat', track => true);
DELETE FROM tr_nf_nodes WHERE id = 5;
SELECT * FROM gnn.refresh_graph('tr_nf');
SELECT pending_changes > 0 AS kept FROM gnn.graphs WHERE name = 'tr_nf';
DELETE FROM tr_nf_edges WHERE src = 5 OR dst = 5;
SELECT deleted_nodes, deleted_edges FROM gnn.refresh_graph('tr_nf');
SELECT gnn.load_graph('tr_nf_fresh', 'tr_nf_edges', nodes => 'tr_nf_nodes', features => 'feat') IS NOT NULL AS loaded;
SELECT gnn.graph_digest('tr_nf') = gnn.graph_digest('tr_nf_fresh') AS same_without_fk;

-- the log's compact edge rows (int32 ids, no flags, one weight per statement) and
-- the full ones: ids past int32 and negative, weights equal and not, NULL endpoints
CREATE TABLE tr_cw (src bigint, dst bigint, w real NOT NULL DEFAULT 1);
INSERT INTO tr_cw SELECT i, i + 1, 1 FROM generate_series(1, 20) i;
SELECT edges FROM gnn.load_graph('tr_cw', 'tr_cw', weight => 'w', track => true);
CREATE FUNCTION tr_cw_same() RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
    PERFORM gnn.load_graph('tr_cw_fresh', 'tr_cw', weight => 'w', replace => true);
    RETURN gnn.graph_digest('tr_cw') = gnn.graph_digest('tr_cw_fresh');
END $$;
INSERT INTO tr_cw SELECT i, i + 2 FROM generate_series(1, 10) i;                  -- compact: int32, no flags, w 1
INSERT INTO tr_cw VALUES (5000000000, 1, 2), (-7000000000, 3, 2);               -- ids past int32, one weight
INSERT INTO tr_cw VALUES (1, 5000000000, 0.5), (2, 3, 4.25);                    -- weights differ
DELETE FROM tr_cw WHERE src = 4 AND dst = 5;                                     -- a delete, compact
UPDATE tr_cw SET w = 3 WHERE src IN (6, 7);                                      -- an update (old and new rows)
UPDATE tr_cw SET dst = -7000000000 WHERE src = 8 AND dst = 9;
SELECT rows FROM gnn.change_log WHERE graph = 'tr_cw' ORDER BY seq;
SELECT inserted_edges, deleted_edges, inserted_nodes FROM gnn.refresh_graph('tr_cw');
SELECT tr_cw_same() AS compact_rows_same;
DELETE FROM tr_cw WHERE src = 5000000000;
INSERT INTO tr_cw SELECT -i, i, 7 FROM generate_series(1, 5) i;
SELECT inserted_edges, deleted_edges, inserted_nodes, deleted_nodes FROM gnn.refresh_graph('tr_cw');
SELECT tr_cw_same() AS compact_rows_same_again;
INSERT INTO tr_cw VALUES (NULL, 1, 1), (1, 2, 1);                                -- a NULL endpoint: flags kept
SELECT inserted_edges > 0 AS reloaded FROM gnn.refresh_graph('tr_cw');           -- the load's own error
DELETE FROM tr_cw WHERE src IS NULL;
SELECT inserted_edges > 0 AS reloaded FROM gnn.refresh_graph('tr_cw');
SELECT tr_cw_same() AS same_after_null_row;
SELECT gnn.drop_graph('tr_cw_fresh');

-- a sparse feature table: edge rows and node labels merge; a change of the feature
-- rows, or a node that goes, reloads (a node's sparse row is all its feature rows)
CREATE TABLE tr_sp_nodes (id int PRIMARY KEY, label int);
CREATE TABLE tr_sp_edges (src int NOT NULL REFERENCES tr_sp_nodes ON DELETE CASCADE,
                          dst int NOT NULL REFERENCES tr_sp_nodes ON DELETE CASCADE);
CREATE TABLE tr_sp_feat (id int NOT NULL REFERENCES tr_sp_nodes ON DELETE CASCADE, idx int NOT NULL, val real NOT NULL);
INSERT INTO tr_sp_nodes SELECT i, i % 2 FROM generate_series(1, 12) i;
INSERT INTO tr_sp_edges SELECT i, 1 + i % 12 FROM generate_series(1, 12) i;
INSERT INTO tr_sp_feat SELECT i, (i * k) % 7, k FROM generate_series(1, 12) i, generate_series(1, 2) k;
CREATE FUNCTION tr_sp_same() RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
    PERFORM gnn.load_graph('tr_sp_fresh', 'tr_sp_edges', nodes => 'tr_sp_nodes', label => 'label',
                           sparse_features => 'tr_sp_feat', sparse_index => 'idx', sparse_value => 'val', replace => true);
    RETURN gnn.graph_digest('tr_sp') = gnn.graph_digest('tr_sp_fresh');
END $$;
SELECT edges, features FROM gnn.load_graph('tr_sp', 'tr_sp_edges', nodes => 'tr_sp_nodes', label => 'label',
    sparse_features => 'tr_sp_feat', sparse_index => 'idx', sparse_value => 'val', track => true);
SELECT tgrelid::regclass, count(*) FROM pg_trigger
WHERE tgfoid = 'gnn._capture()'::regprocedure AND tgrelid::regclass::text LIKE 'tr_sp%' GROUP BY 1 ORDER BY tgrelid::regclass::text;
INSERT INTO tr_sp_edges VALUES (1, 5), (2, 7);
DELETE FROM tr_sp_edges WHERE src = 3;
UPDATE tr_sp_nodes SET label = 1 - label WHERE id = 4;
SELECT inserted_edges, deleted_edges, updated_nodes FROM gnn.refresh_graph('tr_sp');
SELECT tr_sp_same() AS sparse_same_after_merge;
INSERT INTO tr_sp_nodes VALUES (13, 0);                 -- a new node without feature rows: merges
INSERT INTO tr_sp_edges VALUES (13, 1);
SELECT inserted_nodes FROM gnn.refresh_graph('tr_sp');
SELECT tr_sp_same() AS sparse_same_after_new_node;
UPDATE tr_sp_feat SET val = 9 WHERE id = 2 AND idx = 2;
SELECT inserted_nodes > 1 AS reloaded FROM gnn.refresh_graph('tr_sp');
SELECT tr_sp_same() AS sparse_same_after_feature_change;
DELETE FROM tr_sp_nodes WHERE id = 6;                   -- its edges and feature rows cascade
SELECT inserted_nodes > 1 AS reloaded FROM gnn.refresh_graph('tr_sp');
SELECT tr_sp_same() AS sparse_same_after_node_removed;
DELETE FROM tr_sp_nodes WHERE id = 13;                  -- no feature rows: the node still goes by a reload
SELECT inserted_nodes > 1 AS reloaded FROM gnn.refresh_graph('tr_sp');
SELECT tr_sp_same() AS sparse_same_after_bare_node_removed;
-- gnn.track of a sparse graph reloads it with the same feature table
SELECT gnn.track('tr_sp', false);
SELECT gnn.track('tr_sp') > 0 AS tracked_again;
SELECT tr_sp_same() AS sparse_same_after_track, features FROM gnn.graphs WHERE name = 'tr_sp';

SELECT gnn.drop_graph(name) FROM gnn.graphs WHERE name LIKE 'tr%' ORDER BY name;
SELECT count(*) AS log_left FROM gnn.change_log;
