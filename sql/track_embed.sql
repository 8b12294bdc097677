-- Incremental embeddings: after a refresh, gnn.embed(..., incremental => true)
-- recomputes only the rows within the model's reach of what changed, and the
-- table then equals a full gnn.embed of the refreshed graph (1e-5), for GCN,
-- GraphSAGE (mean and pool) and GAT.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS gnn;
SET client_min_messages = notice;

CREATE TABLE te_nodes (id bigint PRIMARY KEY, feat real[] NOT NULL, label int, split text DEFAULT 'train');
CREATE TABLE te_edges (src bigint NOT NULL REFERENCES te_nodes ON DELETE CASCADE,
                       dst bigint NOT NULL REFERENCES te_nodes ON DELETE CASCADE);
SELECT setseed(0.3);
INSERT INTO te_nodes SELECT i, ARRAY[random(), random(), random(), (i % 3)::float8]::real[], i % 3
FROM generate_series(1, 300) i;
INSERT INTO te_edges SELECT i, 1 + (i * 13 + k * 7) % 300 FROM generate_series(1, 300) i, generate_series(1, 3) k;
SELECT nodes, edges FROM gnn.load_graph('te', 'te_edges', nodes => 'te_nodes', features => 'feat', label => 'label',
                                        split => 'split', track => true);

CREATE TABLE te_models (model text, options jsonb);
INSERT INTO te_models VALUES ('gcn', '{}'), ('graphsage', '{}'), ('graphsage', '{"aggregator": "pool"}'),
                             ('gat', '{"heads": 2}');
SET client_min_messages = warning;
SELECT count(*) FROM te_models m,
    LATERAL gnn.train('te', model => m.model, name => 'te_' || m.model || coalesce('_' || (m.options->>'aggregator'), ''),
                      hidden => 8, epochs => 3, seed => 1, wait => true, options => m.options) j;
SET client_min_messages = notice;
CREATE VIEW te_names AS
SELECT 'te_' || model || coalesce('_' || (options->>'aggregator'), '') AS name FROM te_models;

-- first writes: every row (there is no earlier write to follow)
SELECT name, gnn.embed(name, name || '_inc', incremental => true) FROM te_names ORDER BY name;
-- the output layer too (two hops)
SELECT gnn.embed('te_gcn', 'te_gcn_out', layer => 1) AS rows;
SELECT gnn.embed('te_graphsage', 'te_graphsage_out', layer => 1) AS rows;

-- this version's shared results (gnn.similar ranks every row): after the
-- refresh below they are the bases a miss recomputes only changed rows from
SELECT count(*) AS ranked FROM te_names, LATERAL gnn.similar(name, 1, 3, exact => true);
SELECT n.name, c.state, c.computed = (SELECT count(*) FROM te_nodes) AS every_row
FROM te_names n JOIN gnn.cache c ON c.model = n.name AND c.kind = 'embedding' AND c.layer = 0 ORDER BY 1, 2;

-- changes: edges in and out, a feature update, a new node with edges, a
-- removed node; te_touched notes what each changes, from the statements and
-- the tables (not from gnn)
CREATE TABLE te_touched (id bigint);
INSERT INTO te_edges VALUES (1, 2), (2, 3), (100, 250);
INSERT INTO te_touched VALUES (1), (2), (3), (100), (250);
WITH d AS (DELETE FROM te_edges WHERE ctid = (SELECT ctid FROM te_edges WHERE src = 50 LIMIT 1) RETURNING src, dst)
INSERT INTO te_touched SELECT src FROM d UNION ALL SELECT dst FROM d;
UPDATE te_nodes SET feat = '{9, 9, 9, 9}' WHERE id = 77;
INSERT INTO te_touched VALUES (77);
UPDATE te_nodes SET label = 0 WHERE id = 78;                         -- no effect on embeddings
INSERT INTO te_nodes VALUES (301, '{1, 0, 1, 0}', 1);
INSERT INTO te_edges VALUES (301, 5), (6, 301);
INSERT INTO te_touched VALUES (301), (5), (6);
INSERT INTO te_touched SELECT 200 UNION SELECT dst FROM te_edges WHERE src = 200 UNION SELECT src FROM te_edges WHERE dst = 200;
DELETE FROM te_nodes WHERE id = 200;
SELECT inserted_edges, deleted_edges, inserted_nodes, deleted_nodes, updated_nodes FROM gnn.refresh_graph('te');

-- the nodes within one hop downstream (out-arcs now) of what changed, and two hops
CREATE FUNCTION te_reach(hops int) RETURNS bigint LANGUAGE sql AS $$
WITH RECURSIVE r(id, h) AS (
    SELECT t.id, 0 FROM te_touched t JOIN te_nodes n USING (id)
    UNION
    SELECT e.dst, r.h + 1 FROM r JOIN te_edges e ON e.src = r.id WHERE r.h < hops
) SELECT count(DISTINCT id) FROM r $$;
-- GraphSAGE and GAT read their neighbours' values, not their degrees: the
-- first hop goes out only of the nodes whose own data changed (77's
-- features, the new 301); a node whose arcs alone changed is recomputed itself
CREATE TABLE te_data (id bigint);
INSERT INTO te_data VALUES (77), (301);
CREATE FUNCTION te_reach_free(hops int) RETURNS bigint LANGUAGE sql AS $$
WITH RECURSIVE r(id, h) AS (
    SELECT t.id, 1 FROM te_touched t JOIN te_nodes n USING (id)
    UNION
    SELECT e.dst, 1 FROM te_data d JOIN te_edges e ON e.src = d.id
    UNION
    SELECT e.dst, r.h + 1 FROM r JOIN te_edges e ON e.src = r.id WHERE r.h < hops
) SELECT count(DISTINCT id) FROM r $$;
SELECT te_reach(1) AS reach, te_reach_free(1) AS reach_degree_free;

SELECT name, gnn.embed(name, name || '_inc', incremental => true) > 0 AS wrote,
       gnn.embed_recomputed() = CASE WHEN name = 'te_gcn' THEN te_reach(1) ELSE te_reach_free(1) END
         AS recomputed_the_reach
FROM te_names ORDER BY name;
SELECT gnn.embed('te_gcn', 'te_gcn_out', layer => 1, incremental => true) > 0 AS wrote,
       gnn.embed_recomputed() = te_reach(2) AS two_hops;
SELECT gnn.embed('te_graphsage', 'te_graphsage_out', layer => 1, incremental => true) > 0 AS wrote,
       gnn.embed_recomputed() = te_reach_free(2) AS two_hops_degree_free;

-- a miss after the refresh: the previous version's results stay (stale) as
-- bases; the new result takes every row the change cannot reach from its
-- base and computes only the reach, then the base goes
SELECT n.name, c.state FROM te_names n JOIN gnn.cache c ON c.model = n.name AND c.kind = 'embedding' AND c.layer = 0 ORDER BY 1, 2;
SELECT count(*) AS ranked FROM te_names, LATERAL gnn.similar(name, 1, 3, exact => true);
SELECT n.name, c.state,
       c.computed = CASE WHEN n.name = 'te_gcn' THEN te_reach(1) ELSE te_reach_free(1) END AS computed_the_reach
FROM te_names n JOIN gnn.cache c ON c.model = n.name AND c.kind = 'embedding' AND c.layer = 0 ORDER BY 1, 2;
-- its rows equal every row computed anew (no base, the full pass)
CREATE TABLE te_partial AS SELECT n.name, t.id, gnn.embedding(n.name, t.id) AS e FROM te_names n, te_nodes t;
SELECT name, gnn.cache_drop(name) AS dropped FROM te_names ORDER BY name;
SET gnn.khop_max_fraction = 0;
SELECT p.name, count(*) AS rows, max(abs(x - y)) < 1e-5 AS equal
FROM te_partial p, LATERAL unnest(p.e, gnn.embedding(p.name, p.id)) u(x, y) GROUP BY 1 ORDER BY 1;
SELECT n.name, c.computed = (SELECT count(*) FROM te_nodes) AS every_row
FROM te_names n JOIN gnn.cache c ON c.model = n.name AND c.kind = 'embedding' AND c.layer = 0 ORDER BY 1;
RESET gnn.khop_max_fraction;

-- the new node is answered for without retraining
SELECT id, label IS NOT NULL AS predicted FROM gnn.predict('te_graphsage', ARRAY[301]::bigint[]);
SELECT array_length(gnn.embedding('te_graphsage', 301), 1) AS dim;

-- equal to a full write of the refreshed graph, every row
CREATE FUNCTION te_check(name text, layer int DEFAULT NULL) RETURNS text LANGUAGE plpgsql AS $$
DECLARE inc text := CASE WHEN layer IS NULL THEN name || '_inc' ELSE name || '_out' END;
        missing bigint; extra bigint; diff float8;
BEGIN
    PERFORM gnn.embed(name, name || '_full', layer => layer);
    EXECUTE format('SELECT count(*) FROM %I f WHERE NOT EXISTS (SELECT 1 FROM %I i WHERE i.id = f.id)', name || '_full', inc)
        INTO missing;
    EXECUTE format('SELECT count(*) FROM %I i WHERE NOT EXISTS (SELECT 1 FROM %I f WHERE i.id = f.id)', inc, name || '_full')
        INTO extra;
    EXECUTE format('SELECT max(abs(x - y)) FROM %I f JOIN %I i USING (id), unnest(f.embedding, i.embedding) u(x, y)',
                   name || '_full', inc) INTO diff;
    RETURN format('missing %s, extra %s, within 1e-5: %s', missing, extra, diff < 1e-5);
END $$;
SELECT name, te_check(name) FROM te_names ORDER BY name;
SELECT te_check('te_gcn', 1) AS output_layer;
SELECT te_check('te_graphsage', 1) AS sage_output_layer;

-- random changes over several rounds
DO $$
DECLARE a bigint; b bigint; bad text; m text;
BEGIN
    PERFORM setseed(0.7);
    FOR round IN 1..6 LOOP
        FOR k IN 1..8 LOOP
            a := 1 + floor(random() * 320)::bigint; b := 1 + floor(random() * 320)::bigint;
            IF EXISTS (SELECT 1 FROM te_nodes WHERE id = a) AND EXISTS (SELECT 1 FROM te_nodes WHERE id = b) THEN
                INSERT INTO te_edges VALUES (a, b);
            END IF;
            DELETE FROM te_edges WHERE ctid = (SELECT ctid FROM te_edges WHERE src = b LIMIT 1);
        END LOOP;
        UPDATE te_nodes SET feat = ARRAY[random(), random(), random(), random()]::real[] WHERE id = a;
        INSERT INTO te_nodes VALUES (400 + round, '{0.5, 0.5, 0.5, 0.5}', 2) ;
        INSERT INTO te_edges VALUES (400 + round, (SELECT min(id) FROM te_nodes));
        DELETE FROM te_nodes WHERE id = b AND b > 10;
        PERFORM gnn.refresh_graph('te');
        FOR m IN SELECT name FROM te_names ORDER BY name LOOP
            PERFORM gnn.embed(m, m || '_inc', incremental => true);
        END LOOP;
    END LOOP;
    FOR m IN SELECT name FROM te_names ORDER BY name LOOP
        bad := te_check(m);
        IF bad <> 'missing 0, extra 0, within 1e-5: t' THEN RAISE EXCEPTION 'model %: %', m, bad; END IF;
    END LOOP;
END $$;
SELECT 'random rounds equal' AS result;

-- the same over deltas (edge rows and features change, no node comes or
-- goes): the refreshes keep a delta over the loaded graph that the
-- incremental path reads in place, the full pass merged; both agree
CREATE PROCEDURE te_delta_rounds(n int) LANGUAGE plpgsql AS $$
DECLARE a bigint; b bigint; m text;
BEGIN
    PERFORM setseed(0.77);
    FOR round IN 1..n LOOP
        FOR k IN 1..4 LOOP
            -- by rank, not by scan order (which vacuum can change)
            SELECT id INTO a FROM te_nodes ORDER BY id OFFSET floor(random() * (SELECT count(*) FROM te_nodes)) LIMIT 1;
            SELECT id INTO b FROM te_nodes ORDER BY id OFFSET floor(random() * (SELECT count(*) FROM te_nodes)) LIMIT 1;
            INSERT INTO te_edges VALUES (a, b);
            DELETE FROM te_edges WHERE ctid = (SELECT ctid FROM te_edges WHERE src = b LIMIT 1);
        END LOOP;
        UPDATE te_nodes SET feat = ARRAY[random(), random(), random(), random()]::real[] WHERE id = a;
        COMMIT;
        PERFORM gnn.refresh_graph('te');
        COMMIT;
        INSERT INTO te_delta_seen SELECT delta_bytes FROM gnn.graphs WHERE name = 'te';
        FOR m IN SELECT name FROM te_names ORDER BY name LOOP
            PERFORM gnn.embed(m, m || '_inc', incremental => true);
        END LOOP;
        COMMIT;
    END LOOP;
END $$;
CREATE TABLE te_delta_seen (delta_bytes bigint);
SET gnn.merge_threshold = 0.9;
CALL te_delta_rounds(4);
RESET gnn.merge_threshold;
SELECT count(*) FILTER (WHERE delta_bytes > 0) AS rounds_as_deltas FROM te_delta_seen;
SELECT name, te_check(name) FROM te_names ORDER BY name;
-- a miss after a refresh kept as a delta: the base's rows, the rest computed
-- on the delta in place; equal to every row computed anew
SELECT count(*) AS ranked FROM te_names, LATERAL gnn.similar(name, 1, 3, exact => true);
TRUNCATE te_delta_seen;
SET gnn.merge_threshold = 0.9;
CALL te_delta_rounds(1);
RESET gnn.merge_threshold;
SELECT count(*) FILTER (WHERE delta_bytes > 0) AS round_as_delta FROM te_delta_seen;
SELECT count(*) AS ranked FROM te_names, LATERAL gnn.similar(name, 1, 3, exact => true);
SELECT n.name, c.computed < (SELECT count(*) FROM te_nodes) AS from_the_base
FROM te_names n JOIN gnn.cache c ON c.model = n.name AND c.kind = 'embedding' AND c.layer = 0 AND c.state = 'ready'
ORDER BY 1;
DROP TABLE te_partial;
CREATE TABLE te_partial AS SELECT n.name, t.id, gnn.embedding(n.name, t.id) AS e FROM te_names n, te_nodes t;
SELECT count(*) AS dropped FROM te_names WHERE gnn.cache_drop(name);
SET gnn.khop_max_fraction = 0;
SELECT p.name, max(abs(x - y)) < 1e-5 AS equal
FROM te_partial p, LATERAL unnest(p.e, gnn.embedding(p.name, p.id)) u(x, y) GROUP BY 1 ORDER BY 1;
RESET gnn.khop_max_fraction;

-- without a history to follow: every row, saying why
SELECT gnn.load_graph('te', 'te_edges', nodes => 'te_nodes', features => 'feat', label => 'label', split => 'split', replace => true)
       IS NOT NULL AS reloaded;
-- a reload leaves no base: results of the graph it replaced go, stale or not
SELECT count(*) AS entries_after_reload FROM gnn.cache c JOIN te_names n ON c.model = n.name;
SELECT gnn.embed('te_gcn', 'te_gcn_inc', incremental => true) = (SELECT count(*) FROM te_nodes) AS all_rows;
SELECT gnn.embed('te_gat', 'te_gcn_inc', incremental => true) > 0 AS other_model_all_rows;

SELECT gnn.drop_model(name) FROM te_names ORDER BY name;
SELECT gnn.drop_graph('te');
