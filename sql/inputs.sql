-- Inputs that gave internal errors or wrong answers (issue #39, items 8 and
-- 9): each is now loaded right or refused naming its column, table or
-- argument; never SQLSTATE XX000.
CREATE EXTENSION IF NOT EXISTS gnn;
\set VERBOSITY default
SET client_min_messages = warning;

-- tables with no foreign key between them: nodes without arcs, not "type names are too few"
CREATE TABLE in_a (id int PRIMARY KEY, x float8, lab int, split text);
CREATE TABLE in_b (id int PRIMARY KEY, y float8);
INSERT INTO in_a SELECT i, i, i % 2, CASE WHEN i % 4 = 0 THEN 'val' ELSE 'train' END FROM generate_series(1, 40) i;
INSERT INTO in_b SELECT i, i FROM generate_series(1, 10) i;
SELECT nodes, edges, classes FROM gnn.load_schema_graph('in_nofk', ARRAY['in_a', 'in_b']::regclass[],
                                                        target => 'in_a', label => 'lab', split => 'split');
SELECT kind, type, count FROM gnn.graph_types('in_nofk') ORDER BY kind, type;
SELECT nodes FROM gnn.load_schema_graph('in_one', ARRAY['in_a']::regclass[], target => 'in_a', label => 'lab');
-- a features-only model trains on it
SELECT gnn.train('in_nofk', model => 'mlp', name => 'in_mlp', epochs => 3, device => 'cpu', wait => true) > 0 AS trained;

-- a finite float near the top of double precision is standardised, not "out of order, out of range or not finite"
CREATE TABLE in_big (id int PRIMARY KEY, x float8, lab int);
INSERT INTO in_big VALUES (1, 1e200, 0), (2, 1, 1), (3, 2, 0), (4, -1e300, 1);
SELECT nodes FROM gnn.load_schema_graph('in_big', ARRAY['in_big']::regclass[], target => 'in_big', label => 'lab');
SELECT bool_and(v BETWEEN -10 AND 10) AS finite_and_standardised
FROM generate_series(1, 4) n, LATERAL unnest(gnn.features('in_big', n)) v;
-- a numeric beyond double precision: refused, naming the column and the row, the number cut short
CREATE TABLE in_num (id int PRIMARY KEY, n numeric, lab int);
INSERT INTO in_num VALUES (1, 1, 0), (2, 1e400, 1);
SELECT nodes FROM gnn.load_schema_graph('in_num', ARRAY['in_num']::regclass[], target => 'in_num', label => 'lab');

-- +-infinity in a time column is missing, not +-292,000 years that squash every other time to 0
CREATE TABLE in_time (id int PRIMARY KEY, t timestamptz, lab int);
INSERT INTO in_time VALUES (1, 'infinity', 0), (2, '2024-01-01', 1), (3, '2024-06-01', 0), (4, '-infinity', 1);
SELECT nodes FROM gnn.load_schema_graph('in_time', ARRAY['in_time']::regclass[], target => 'in_time', label => 'lab');
SELECT column_name, encoding, width, (detail->>'missing')::bool AS missing,
       (detail->>'std')::float8 BETWEEN 1e6 AND 1e8 AS std_of_finite_times
FROM gnn.graph_columns('in_time') WHERE column_name = 't';
SELECT n, gnn.features('in_time', n) FROM generate_series(1, 4) n ORDER BY n;

-- char(n) keys: trailing blanks are padding, as char(n) compares
CREATE TABLE in_ch (id char(5) PRIMARY KEY);
CREATE TABLE in_che (s char(5), d char(5));
INSERT INTO in_ch VALUES ('a'), ('b'), ('cc');
INSERT INTO in_che VALUES ('a', 'b'), ('b', 'cc');
SELECT nodes, edges FROM gnn.load_graph('in_ch', 'in_che', 's', 'd', nodes => 'in_ch');
SELECT gnn.degree('in_ch', 'a') AS a_out, gnn.degree('in_ch', 'cc', 'in') AS cc_in;
SELECT count(*) FROM gnn.neighbors('in_ch', 'b') WHERE key = 'cc';

-- a domain over a key type is its base type: bigint and text domains as keys, also in a schema graph
CREATE DOMAIN in_id AS bigint CHECK (VALUE >= 0);
CREATE DOMAIN in_key AS text;
CREATE TABLE in_dn (id in_id PRIMARY KEY, lab int);
CREATE TABLE in_de (s in_id, d in_id);
INSERT INTO in_dn VALUES (1, 0), (2, 1), (3, 0);
INSERT INTO in_de VALUES (1, 2), (2, 3);
SELECT nodes, edges FROM gnn.load_graph('in_dom', 'in_de', 's', 'd', nodes => 'in_dn');
CREATE TABLE in_dte (s in_key, d in_key);
INSERT INTO in_dte VALUES ('x', 'y');
SELECT nodes, edges FROM gnn.load_graph('in_domtext', 'in_dte', 's', 'd');
CREATE TABLE in_dref (id int PRIMARY KEY, ref in_id REFERENCES in_dn);
INSERT INTO in_dref VALUES (10, 1), (11, 3);
SELECT nodes, edges FROM gnn.load_schema_graph('in_domschema', ARRAY['in_dn', 'in_dref']::regclass[],
                                              target => 'in_dn', label => 'lab');
-- a domain over a type no key can be is still refused, naming it
CREATE DOMAIN in_fl AS float8;
CREATE TABLE in_fe (s in_fl, d in_fl);
SELECT nodes FROM gnn.load_graph('in_fl', 'in_fe', 's', 'd');

-- the gnn.max_classes hint tells a role that cannot raise it whom to ask
CREATE ROLE in_user LOGIN;
CREATE TABLE in_lab (id int PRIMARY KEY, lab int);
CREATE TABLE in_labe (s int, d int);
INSERT INTO in_lab VALUES (1, 5), (2, 20000);
INSERT INTO in_labe VALUES (1, 2);
GRANT SELECT ON in_lab, in_labe TO in_user;
SELECT nodes FROM gnn.load_graph('in_lab', 'in_labe', 's', 'd', nodes => 'in_lab', label => 'lab');
SET ROLE in_user;
SELECT nodes FROM gnn.load_graph('in_lab', 'in_labe', 's', 'd', nodes => 'in_lab', label => 'lab');
RESET ROLE;
-- and gnn.max_job_memory's too
SET gnn.max_job_memory = '1MB';
GRANT SELECT ON in_a, in_b TO in_user;
SET ROLE in_user;
SELECT nodes FROM gnn.load_schema_graph('in_u', ARRAY['in_a']::regclass[], target => 'in_a', label => 'lab', split => 'split');
SELECT gnn.train('in_u', model => 'gcn', hidden => 4096, epochs => 1);
SELECT gnn.drop_graph('in_u');
RESET ROLE;
RESET gnn.max_job_memory;

-- gnn.track of a persisted graph keeps it persisted (it comes back after a restart: test/t/017_promises.pl)
SELECT nodes FROM gnn.load_graph('in_keep', 'in_che', 's', 'd', nodes => 'in_ch');
SELECT persisted FROM gnn.graphs WHERE name = 'in_keep';
SELECT gnn.track('in_keep');
SELECT tracked, persisted FROM gnn.graphs WHERE name = 'in_keep';

SELECT gnn.drop_model('in_mlp');
SELECT count(gnn.drop_graph(g)) FROM unnest(ARRAY['in_nofk', 'in_one', 'in_big', 'in_time', 'in_ch', 'in_dom',
                                                 'in_domtext', 'in_domschema', 'in_keep']) g;
DROP TABLE in_a, in_b, in_big, in_num, in_time, in_che, in_ch, in_de, in_dte, in_dref, in_dn, in_fe, in_lab, in_labe;
DROP DOMAIN in_id;
DROP DOMAIN in_key;
DROP DOMAIN in_fl;
DROP ROLE in_user;
RESET client_min_messages;
