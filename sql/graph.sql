-- Loading graphs from tables into shared memory, inspecting them, and every
-- kind of bad input, each of which must leave nothing behind.
CREATE EXTENSION IF NOT EXISTS gnn;
SET client_min_messages = notice;

CREATE TABLE e (src bigint, dst bigint, w real);
INSERT INTO e VALUES (1, 2, 1), (2, 3, 1), (3, 1, 1), (1, 2, 2.5), (3, 3, 1), (10, 1, 1);
CREATE TABLE n (id bigint PRIMARY KEY, feat real[], label int, split text);
INSERT INTO n VALUES (1, '{1,0}', 0, 'train'), (2, '{0,1}', 1, 'val'), (3, '{1,1}', NULL, 'test'),
                     (10, '{0,0}', 1, NULL), (11, '{2,2}', 0, 'train');

-- edges only: the nodes are the endpoints; the duplicate 1->2 merges (weights summed)
SELECT name, nodes, edges, feature_dim, features, classes, undirected
FROM gnn.load_graph('g1', 'e', weight => 'w');
SELECT * FROM gnn.neighbors('g1', 1) ORDER BY neighbor;
SELECT gnn.degree('g1', 3), gnn.degree('g1', 3, 'in'), gnn.degree('g1', 3, 'both');
SELECT * FROM gnn.neighbors('g1', 3, 'in') ORDER BY neighbor;

-- with a node table: features, labels, split; node 11 is isolated
SELECT name, nodes, edges, feature_dim, features, classes, train, val, test, undirected
FROM gnn.load_graph('g2', 'e', nodes => 'n', features => 'feat', label => 'label',
                    split => 'split', undirected => true);
SELECT gnn.degree('g2', 11), gnn.degree('g2', 1);
SELECT name, nodes, edges FROM gnn.graphs ORDER BY name;
SELECT gnn.memory_used() = (SELECT sum(bytes) FROM gnn.graphs);

-- text labels become classes numbered in sorted order
CREATE TABLE nt (id int, cls text);
INSERT INTO nt VALUES (1, 'spam'), (2, 'ham'), (3, 'spam'), (10, 'eggs');
SELECT classes FROM gnn.load_graph('g3', 'e', nodes => 'nt', label => 'cls');

-- sparse features from a (node, index, value) table
CREATE TABLE sf (id int, feature int, value real);
INSERT INTO sf VALUES (1, 0, 1), (1, 4, 2), (3, 2, 0.5);
SELECT feature_dim, features FROM gnn.load_graph('g4', 'e', nodes => 'n', sparse_features => 'sf');

-- replace
SELECT edges FROM gnn.load_graph('g1', 'e', replace => true, undirected => true);
SELECT gnn.load_graph('g1', 'e');

-- ---------------------------------------------------------------- bad input
SELECT gnn.memory_used() AS before \gset
SELECT count(*) AS graphs_before FROM gnn.graphs \gset
-- NULL endpoint
CREATE TABLE e_null (src int, dst int);
INSERT INTO e_null VALUES (1, 2), (NULL, 3);
SELECT gnn.load_graph('bad', 'e_null');
-- dangling edge (10 -> 1 with a node table lacking 10), and skipping it on request
CREATE TABLE n_small (id int);
INSERT INTO n_small VALUES (1), (2), (3);
SELECT gnn.load_graph('bad', 'e', nodes => 'n_small');
SELECT nodes, edges FROM gnn.load_graph('skipped', 'e', nodes => 'n_small', skip_dangling => true);
SELECT gnn.drop_graph('skipped');
-- duplicate node ids
CREATE TABLE n_dup (id int);
INSERT INTO n_dup VALUES (1), (2), (3), (10), (2);
SELECT gnn.load_graph('bad', 'e', nodes => 'n_dup');
-- feature arrays of different lengths
CREATE TABLE n_len (id int, f real[]);
INSERT INTO n_len VALUES (1, '{1,2}'), (2, '{1,2}'), (3, '{1,2,3}'), (10, '{0,0}');
SELECT gnn.load_graph('bad', 'e', nodes => 'n_len', features => 'f');
-- NULL features, NULL elements, NaN and Inf
CREATE TABLE n_nan (id int, f float8[]);
INSERT INTO n_nan VALUES (1, '{1,2}'), (2, NULL), (3, '{1,2}'), (10, '{0,0}');
SELECT gnn.load_graph('bad', 'e', nodes => 'n_nan', features => 'f');
UPDATE n_nan SET f = '{1,NULL}' WHERE id = 2;
SELECT gnn.load_graph('bad', 'e', nodes => 'n_nan', features => 'f');
UPDATE n_nan SET f = '{1,NaN}' WHERE id = 2;
SELECT gnn.load_graph('bad', 'e', nodes => 'n_nan', features => 'f');
UPDATE n_nan SET f = '{Infinity,0}' WHERE id = 2;
SELECT gnn.load_graph('bad', 'e', nodes => 'n_nan', features => 'f');
-- a bad split value, a negative label
CREATE TABLE n_split (id int, s text, l int);
INSERT INTO n_split VALUES (1, 'train', 0), (2, 'holdout', 0), (3, NULL, 0), (10, 'test', 0);
SELECT gnn.load_graph('bad', 'e', nodes => 'n_split', split => 's');
UPDATE n_split SET s = NULL, l = -1 WHERE id = 2;
SELECT gnn.load_graph('bad', 'e', nodes => 'n_split', label => 'l');
-- unknown table, column, graph; wrong column type
SELECT gnn.load_graph('bad', 'no_such_table');
SELECT gnn.load_graph('bad', 'e', src => 'source');
SELECT gnn.load_graph('bad', 'nt', src => 'cls', dst => 'id');
SELECT gnn.load_graph('bad', 'e', nodes => 'n', features => 'label', label => 'label');
SELECT gnn.degree('nope', 1);
SELECT gnn.degree('g1', 12345);
SELECT gnn.drop_graph('nope');
SELECT gnn.drop_graph('nope', if_exists => true);
-- a name already loaded, an empty edge table, an empty name
SELECT gnn.load_graph('g2', 'e');
CREATE TABLE e_empty (src int, dst int);
SELECT gnn.load_graph('bad', 'e_empty');
SELECT gnn.load_graph('', 'e');
SELECT gnn.load_graph(repeat('x', 64), 'e');
SELECT gnn.degree('g1', 1, 'sideways');
-- node data without a node table; dense and sparse together
SELECT gnn.load_graph('bad', 'e', features => 'feat');
SELECT gnn.load_graph('bad', 'e', nodes => 'n', features => 'feat', sparse_features => 'sf');
-- a limit on graph memory: the load fails before allocating and says how much it needs
SET gnn.max_graph_memory = 1;
CREATE TABLE e_big AS SELECT g AS src, (g * 7919) % 200000 AS dst FROM generate_series(1, 200000) g;
SELECT gnn.load_graph('big', 'e_big');
RESET gnn.max_graph_memory;
-- nothing was left behind by any failure
SELECT gnn.memory_used() = :before AS memory_unchanged,
       (SELECT count(*) FROM gnn.graphs) = :graphs_before AS graphs_unchanged;
SELECT count(*) FROM gnn.graphs WHERE name = 'bad';

-- identifiers are quoted, never spliced into SQL
CREATE TABLE "Mixed Case; DROP TABLE e; --" ("Src Col" int, "dst""q" int);
INSERT INTO "Mixed Case; DROP TABLE e; --" VALUES (1, 2);
SELECT nodes, edges FROM gnn.load_graph('quoted', '"Mixed Case; DROP TABLE e; --"',
                                        src => 'Src Col', dst => 'dst"q');
SELECT count(*) FROM e;

-- views are read through the executor
CREATE VIEW e_view AS SELECT src, dst FROM e WHERE src <> 10;
SELECT nodes, edges FROM gnn.load_graph('viewed', 'e_view');

-- the graph store: persisted by default, persist => false and the GUC keep one in memory only
SELECT name FROM gnn.load_graph('kept', 'e', persist => false);
SET gnn.persist_graphs = off;
SELECT name FROM gnn.load_graph('kept2', 'e');
RESET gnn.persist_graphs;
SELECT name, persisted, state, store_error FROM gnn.graphs ORDER BY name;
SELECT name FROM gnn.load_graph('kept', 'e', replace => true);
SELECT persisted FROM gnn.graphs WHERE name = 'kept';

-- drop
SELECT gnn.drop_graph(name) FROM gnn.graphs ORDER BY name;
SELECT count(*), gnn.memory_used() FROM gnn.graphs;
