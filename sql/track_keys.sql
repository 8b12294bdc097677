-- Change capture of graphs keyed by text and uuid ids: edge rows and node
-- data change in place (a delta, or a merge), nodes that come or go make the
-- refresh reload (a text-keyed graph numbers its nodes in key order); after
-- random changes the graph equals a fresh load, and incremental embeddings
-- equal a full write, named by their keys.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS gnn;
SET client_min_messages = notice;

CREATE TABLE tk_nodes (id text PRIMARY KEY, feat real[] NOT NULL, label int, split text);
CREATE TABLE tk_edges (src text NOT NULL REFERENCES tk_nodes ON DELETE CASCADE,
                       dst text NOT NULL REFERENCES tk_nodes ON DELETE CASCADE,
                       w int NOT NULL DEFAULT 1);
SELECT setseed(0.25);
INSERT INTO tk_nodes SELECT 'user-' || i, ARRAY[random(), random(), (i % 3)::float8]::real[], i % 3,
       CASE i % 4 WHEN 0 THEN 'train' WHEN 1 THEN 'val' WHEN 2 THEN 'test' END
FROM generate_series(1, 120) i;
INSERT INTO tk_edges SELECT 'user-' || i, 'user-' || (1 + (i * 7 + k * 13) % 120), 1 + (i + k) % 3
FROM generate_series(1, 120) i, generate_series(1, 3) k;

SELECT nodes, edges FROM gnn.load_graph('tk', 'tk_edges', nodes => 'tk_nodes', features => 'feat',
    label => 'label', split => 'split', weight => 'w', track => true);
SELECT tracked, pending_changes FROM gnn.graphs WHERE name = 'tk';

CREATE FUNCTION tk_same() RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
    PERFORM gnn.load_graph('tk_fresh', 'tk_edges', nodes => 'tk_nodes', features => 'feat', label => 'label',
                           split => 'split', weight => 'w', replace => true);
    RETURN gnn.graph_digest('tk') = gnn.graph_digest('tk_fresh');
END $$;
-- every node's degrees and neighbours by key, against the tables
CREATE FUNCTION tk_rows_same() RETURNS boolean LANGUAGE sql AS $$
SELECT bool_and(gnn.degree('tk', n.id, 'out') = (SELECT count(DISTINCT dst) FROM tk_edges WHERE src = n.id)
            AND gnn.degree('tk', n.id, 'in') = (SELECT count(DISTINCT src) FROM tk_edges WHERE dst = n.id)
            AND (SELECT coalesce(array_agg(key ORDER BY key), '{}') FROM gnn.neighbors('tk', n.id, 'out'))
              = (SELECT coalesce(array_agg(DISTINCT dst ORDER BY dst), '{}') FROM tk_edges WHERE src = n.id))
FROM tk_nodes n $$;
SELECT tk_same() AS same_at_start, tk_rows_same() AS rows_at_start;

-- edge rows in, out and updated, features, labels and splits: no node comes or goes
INSERT INTO tk_edges VALUES ('user-1', 'user-2', 5), ('user-2', 'user-1', 1);
DELETE FROM tk_edges WHERE src = 'user-3';
UPDATE tk_edges SET w = w + 1 WHERE src = 'user-5';
UPDATE tk_edges SET dst = 'user-9' WHERE src = 'user-6';
UPDATE tk_nodes SET feat = '{-1, -1, -1}', split = 'test' WHERE id = 'user-7';
UPDATE tk_nodes SET label = 2 WHERE id = 'user-8';
SELECT inserted_edges, deleted_edges, inserted_nodes, deleted_nodes, updated_nodes FROM gnn.refresh_graph('tk');
SELECT tk_same() AS same_after_refresh, tk_rows_same() AS rows_after_refresh;

-- over a delta: the same, read in place
SET gnn.merge_threshold = 0.9;
INSERT INTO tk_edges VALUES ('user-11', 'user-12', 1);
DELETE FROM tk_edges WHERE src = 'user-13';
UPDATE tk_nodes SET feat = '{0.5, 0.5, 0.5}' WHERE id = 'user-14';
SELECT inserted_edges, deleted_edges, updated_nodes FROM gnn.refresh_graph('tk');
SELECT delta_bytes > 0 AS kept_a_delta FROM gnn.graphs WHERE name = 'tk';
SELECT tk_same() AS same_over_delta, tk_rows_same() AS rows_over_delta;
RESET gnn.merge_threshold;

-- a row inserted at a new key and deleted again changes nothing
BEGIN;
INSERT INTO tk_nodes VALUES ('temp', '{1, 1, 1}', 0, NULL);
INSERT INTO tk_edges VALUES ('temp', 'user-1', 1);
DELETE FROM tk_nodes WHERE id = 'temp';
COMMIT;
SELECT inserted_edges, deleted_edges, inserted_nodes, deleted_nodes FROM gnn.refresh_graph('tk');
SELECT tk_same() AS same_after_cancel;

-- a new node: a reload, which says why
INSERT INTO tk_nodes VALUES ('user-0', '{0, 0, 0}', 1, 'train');
INSERT INTO tk_edges VALUES ('user-0', 'user-1', 1);
SELECT inserted_nodes FROM gnn.refresh_graph('tk');
SELECT tk_same() AS same_after_new_node;
-- a removed node (its edges go with it): a reload too
DELETE FROM tk_nodes WHERE id = 'user-100';
SELECT inserted_nodes > 0 AS reloaded FROM gnn.refresh_graph('tk');
SELECT tk_same() AS same_after_removed_node, nodes FROM gnn.graphs WHERE name = 'tk';

-- random rounds, each refreshed and compared; count the reloads
CREATE FUNCTION tk_random(seed int, steps int) RETURNS void LANGUAGE plpgsql AS $$
DECLARE r float8; a text; b text;
BEGIN
    PERFORM setseed(seed / 1000.0);
    FOR s IN 1..steps LOOP
        r := random();
        a := 'user-' || (1 + floor(random() * 130)::int);
        b := 'user-' || (1 + floor(random() * 130)::int);
        BEGIN
            IF r < 0.40 THEN
                INSERT INTO tk_edges SELECT a, b, 1 + floor(random() * 3)::int
                WHERE EXISTS (SELECT 1 FROM tk_nodes WHERE id = a) AND EXISTS (SELECT 1 FROM tk_nodes WHERE id = b);
            ELSIF r < 0.62 THEN
                DELETE FROM tk_edges WHERE ctid = (SELECT ctid FROM tk_edges WHERE src = a LIMIT 1);
            ELSIF r < 0.72 THEN
                UPDATE tk_edges SET w = w + 1 WHERE src = a;
            ELSIF r < 0.78 THEN
                UPDATE tk_edges SET dst = b WHERE src = a AND EXISTS (SELECT 1 FROM tk_nodes WHERE id = b);
            ELSIF r < 0.90 THEN
                UPDATE tk_nodes SET feat = ARRAY[random(), random(), random()]::real[],
                                    split = (ARRAY['train', 'val', 'test', NULL])[1 + floor(random() * 4)::int]
                WHERE id = a;
            ELSIF r < 0.93 THEN
                INSERT INTO tk_nodes VALUES (a, ARRAY[random(), random(), random()]::real[], 0, 'train')
                ON CONFLICT (id) DO UPDATE SET label = 1;
            ELSIF r < 0.95 THEN
                DELETE FROM tk_nodes WHERE id = a AND a NOT IN ('user-1', 'user-2', 'user-3');
            ELSE
                INSERT INTO tk_edges VALUES ('user-1', 'user-1', 9);
                RAISE EXCEPTION 'roll back';
            END IF;
        EXCEPTION WHEN raise_exception THEN NULL;
        END;
    END LOOP;
END $$;
CREATE TABLE tk_results (seed int, same boolean, rows_same boolean, reloaded boolean);
-- (in place, no node of a text-keyed graph comes: inserted_nodes > 0 is a reload)
DO $$
DECLARE ins bigint;
BEGIN
    SET LOCAL client_min_messages = warning;
    FOR seed IN 1..20 LOOP
        PERFORM tk_random(seed, CASE WHEN seed % 2 = 0 THEN 6 ELSE 30 END);
        SELECT inserted_nodes INTO ins FROM gnn.refresh_graph('tk');
        INSERT INTO tk_results SELECT seed, tk_same(), tk_rows_same(), ins > 0;
    END LOOP;
END $$;
SELECT count(*) AS seeds, count(*) FILTER (WHERE same AND rows_same) AS equal,
       count(*) FILTER (WHERE NOT reloaded) > 0 AS some_in_place, count(*) FILTER (WHERE reloaded) > 0 AS some_reloaded
FROM tk_results;

-- incremental embeddings, by key: equal to a full write
SET client_min_messages = warning;
SELECT count(*) FROM gnn.train('tk', model => 'graphsage', name => 'tk_sage', hidden => 8, epochs => 2, seed => 1, wait => true);
SET client_min_messages = notice;
SELECT gnn.embed('tk_sage', 'tk_emb') > 0 AS first_write;
SELECT pg_typeof(id) FROM tk_emb LIMIT 1;
INSERT INTO tk_edges VALUES ('user-20', 'user-21', 1);
DELETE FROM tk_edges WHERE src = 'user-22';
UPDATE tk_nodes SET feat = '{3, 3, 3}' WHERE id = 'user-23';
SELECT updated_nodes FROM gnn.refresh_graph('tk');
SELECT gnn.embed('tk_sage', 'tk_emb', incremental => true) > 0 AS wrote,
       gnn.embed_recomputed() < (SELECT count(*) FROM tk_nodes) AS fewer_than_all;
SELECT gnn.embed('tk_sage', 'tk_emb_full') > 0 AS full_write;
SELECT (SELECT count(*) FROM tk_emb) = (SELECT count(*) FROM tk_emb_full) AS same_rows,
       (SELECT max(abs(x - y)) FROM tk_emb f JOIN tk_emb_full i USING (id), unnest(f.embedding, i.embedding) u(x, y)) < 1e-5
       AS within_1e5;
SELECT gnn.drop_model('tk_sage');

-- uuid endpoints, no node table: the node set is the endpoints
CREATE TABLE tu_edges (a uuid NOT NULL, b uuid NOT NULL);
INSERT INTO tu_edges SELECT md5('n' || i)::uuid, md5('n' || (1 + (i * 7) % 40))::uuid FROM generate_series(1, 40) i;
INSERT INTO tu_edges SELECT md5('n' || i)::uuid, md5('n' || (1 + (i * 3) % 40))::uuid FROM generate_series(1, 40) i;
SELECT nodes, edges FROM gnn.load_graph('tu', 'tu_edges', src => 'a', dst => 'b', track => true);
CREATE FUNCTION tu_same() RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
    PERFORM gnn.load_graph('tu_fresh', 'tu_edges', src => 'a', dst => 'b', replace => true);
    RETURN gnn.graph_digest('tu') = gnn.graph_digest('tu_fresh');
END $$;
-- rows among the nodes there are: in place
INSERT INTO tu_edges VALUES (md5('n1')::uuid, md5('n2')::uuid);
DELETE FROM tu_edges WHERE ctid = (SELECT ctid FROM tu_edges WHERE a = md5('n5')::uuid LIMIT 1);
SELECT inserted_edges, deleted_edges, inserted_nodes FROM gnn.refresh_graph('tu');
SELECT tu_same() AS uuid_same;
SELECT gnn.degree('tu', md5('n1')::uuid::text, 'out') = (SELECT count(DISTINCT b) FROM tu_edges WHERE a = md5('n1')::uuid)
       AS uuid_degree;
-- an endpoint loses its last row: the node goes, a reload
DELETE FROM tu_edges WHERE a = md5('n9')::uuid OR b = md5('n9')::uuid;
SELECT deleted_nodes > 0 AS reloaded FROM gnn.refresh_graph('tu');
SELECT tu_same() AS uuid_same_after_node_gone, nodes FROM gnn.graphs WHERE name = 'tu';
-- a new endpoint: a reload
INSERT INTO tu_edges VALUES (md5('new')::uuid, md5('n1')::uuid);
SELECT inserted_nodes > 0 AS reloaded FROM gnn.refresh_graph('tu');
SELECT tu_same() AS uuid_same_after_new_node, nodes FROM gnn.graphs WHERE name = 'tu';

-- an id column retyped under a tracked graph: the next refresh reloads and says why
CREATE TABLE tc_edges (a int NOT NULL, b int NOT NULL);
INSERT INTO tc_edges VALUES (1, 2), (2, 3);
SELECT edges FROM gnn.load_graph('tc', 'tc_edges', src => 'a', dst => 'b', track => true);
ALTER TABLE tc_edges ALTER COLUMN a TYPE text, ALTER COLUMN b TYPE text;
INSERT INTO tc_edges VALUES ('3', '1');
SELECT inserted_edges FROM gnn.refresh_graph('tc');
SELECT edges FROM gnn.graphs WHERE name = 'tc';

SELECT gnn.drop_graph(g) FROM unnest(ARRAY['tk', 'tk_fresh', 'tu', 'tu_fresh', 'tc']) g;
