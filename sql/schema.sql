-- Schema graphs: tables as node types, foreign keys as edge types, keys of
-- every supported type, ordinary columns encoded as features.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS gnn;
RESET client_min_messages;
CREATE SCHEMA sg;
SET search_path = sg, public;

CREATE TABLE cat (id text PRIMARY KEY, name text, premium boolean);
CREATE TABLE item (id bigint PRIMARY KEY, cat_id text REFERENCES cat, price numeric,
                   tag text, added date, vec real[], note json);
CREATE TABLE person (id uuid PRIMARY KEY, age int, vip boolean, country text,
                     boss uuid REFERENCES person);
CREATE TABLE buy (id int PRIMARY KEY, person_id uuid NOT NULL REFERENCES person,
                  item_id bigint REFERENCES item, at timestamptz, qty smallint);
INSERT INTO cat VALUES ('c-1', 'books', false), ('c-2', 'music', true), ('c-10', 'film', NULL);
-- keys at the ends of bigint's range, negative and zero
INSERT INTO item VALUES
  (-9223372036854775808, 'c-1', 10.5, 'a', '2024-01-01', '{1,2}', '{}'),
  (0,                     'c-2', 20,   'b', '2024-02-01', '{3,4}', NULL),
  (42,                    'c-2', NULL, 'a', NULL,         NULL,    NULL),
  (9223372036854775807,  NULL,  5,    'c', '2024-03-01', '{5,6}', NULL);
INSERT INTO person VALUES
  ('00000000-0000-0000-0000-000000000001', 30, true,  'fr', NULL),
  ('ffffffff-ffff-ffff-ffff-ffffffffffff', 40, false, 'de', '00000000-0000-0000-0000-000000000001'),
  ('12345678-9abc-def0-1234-56789abcdef0', NULL, NULL, NULL, '00000000-0000-0000-0000-000000000001');
INSERT INTO buy VALUES
  (1, '00000000-0000-0000-0000-000000000001', -9223372036854775808, '2024-05-01 10:00+00', 1),
  (2, 'ffffffff-ffff-ffff-ffff-ffffffffffff', 9223372036854775807, '2024-05-02 10:00+00', 2),
  (3, '12345678-9abc-def0-1234-56789abcdef0', NULL, '2024-05-03 10:00+00', 3),   -- a NULL foreign key: no edge
  (4, '12345678-9abc-def0-1234-56789abcdef0', 0, NULL, NULL);

SELECT name, nodes, edges, feature_dim, features, classes
FROM gnn.load_schema_graph('shop', ARRAY['cat', 'item', 'person', 'buy']::regclass[]);
SELECT * FROM gnn.graph_types('shop');
SELECT type, "column", column_type, encoding, feature_offset, width FROM gnn.graph_columns('shop');
SELECT name, nodes, edges FROM gnn.graphs WHERE name = 'shop';
-- the encodings kept with the graph: a standardised numeric column, a category with its values
SELECT type, "column", detail->>'kind' AS kind, detail->'categories' AS categories, detail->>'missing' AS missing
FROM gnn.graph_columns('shop') WHERE "column" IN ('price', 'tag', 'country');

-- a target with a label: text classes on persons, boolean classes, numeric regression targets
SELECT name, classes FROM gnn.load_schema_graph('shop_vip', ARRAY['cat', 'item', 'person', 'buy']::regclass[],
                                                target => 'person', label => 'vip');
SELECT name, classes FROM gnn.load_schema_graph('shop_age', ARRAY['person', 'buy']::regclass[],
                                                target => 'person', label => 'age');
SELECT count(*) AS columns_without_label FROM gnn.graph_columns('shop_age') WHERE "column" = 'age';
SELECT name, classes FROM gnn.load_schema_graph('shop_price', ARRAY['item', 'cat']::regclass[],
                                                target => 'item', label => 'price');
SELECT gnn._graph_meta('shop_price')->>'task' AS task;

-- options: features chosen per table, columns excluded, keys named, time columns
SELECT name, nodes, edges, feature_dim
FROM gnn.load_schema_graph('shop2', ARRAY['cat', 'item']::regclass[],
                           options => '{"features": {"item": ["price"]}, "exclude": {"cat": ["name"]},
                                        "keys": {"cat": "id"}}');
SELECT type, "column", encoding FROM gnn.graph_columns('shop2');
-- a table left without features: a learned embedding per node
SELECT name FROM gnn.load_schema_graph('shop3', ARRAY['cat', 'item']::regclass[],
                           options => '{"features": {"cat": [], "item": ["price"]}}');
SELECT type, "column", encoding, width FROM gnn.graph_columns('shop3') WHERE type = 'cat';
-- a declared edge where no constraint exists
CREATE TABLE tagmap (tag text PRIMARY KEY, label text);
INSERT INTO tagmap VALUES ('a', 'x'), ('b', 'y'), ('c', 'z');
SELECT name, edges FROM gnn.load_schema_graph('shop4', ARRAY['item', 'tagmap']::regclass[],
                           options => '{"edges": [{"from": "item.tag", "to": "tagmap"}]}');
SELECT kind, type, count, src_type, dst_type FROM gnn.graph_types('shop4') WHERE kind = 'edge';

-- errors, each naming what is wrong and what exists
CREATE TABLE nokey (a int, b text);
CREATE TABLE pair (a int, b int, PRIMARY KEY (a, b));
CREATE TABLE pairref (id int PRIMARY KEY, a int, b int, FOREIGN KEY (a, b) REFERENCES pair);
CREATE TABLE floaty (id float8 PRIMARY KEY);
\set VERBOSITY default
SELECT gnn.load_schema_graph('bad', ARRAY['nokey']::regclass[]);
SELECT gnn.load_schema_graph('bad', ARRAY['pair']::regclass[]);
SELECT gnn.load_schema_graph('bad', ARRAY['pair', 'pairref']::regclass[], options => '{"keys": {"pair": "a"}}');
SELECT gnn.load_schema_graph('bad', ARRAY['floaty']::regclass[]);
SELECT gnn.load_schema_graph('bad', ARRAY['nosuchtable']::regclass[]);
SELECT gnn.load_schema_graph('bad', ARRAY['cat']::regclass[], options => '{"keys": {"cat": "nosuch"}}');
SELECT gnn.load_schema_graph('bad', ARRAY['cat']::regclass[], options => '{"features": {"item": ["price"]}}');
SELECT gnn.load_schema_graph('bad', ARRAY['cat']::regclass[], options => '{"bogus": 1}');
SELECT gnn.load_schema_graph('bad', ARRAY['cat', 'cat']::regclass[]);
SELECT gnn.load_schema_graph('bad', ARRAY['cat']::regclass[], target => 'item');
SELECT gnn.load_schema_graph('bad', ARRAY['cat']::regclass[], label => 'name');
SELECT gnn.load_schema_graph('bad', ARRAY['item', 'tagmap']::regclass[],
                             options => '{"edges": [{"from": "item.nosuch", "to": "tagmap"}]}');
SELECT gnn.load_schema_graph('bad', ARRAY['item', 'cat']::regclass[], options => '{"features": {"item": ["note"]}}');
-- a declared edge to a missing key: an error naming the row, or skipped on request
INSERT INTO item VALUES (7, NULL, 1, 'zzz', NULL, NULL, NULL);
SELECT gnn.load_schema_graph('bad', ARRAY['item', 'tagmap']::regclass[],
                             options => '{"edges": [{"from": "item.tag", "to": "tagmap"}]}');
SELECT name, edges FROM gnn.load_schema_graph('shop4', ARRAY['item', 'tagmap']::regclass[], replace => true,
                             options => '{"edges": [{"from": "item.tag", "to": "tagmap"}], "skip_dangling": true}');
SELECT count(*) AS bad_graphs FROM gnn.graphs WHERE name = 'bad';
\set VERBOSITY terse

-- a role without SELECT on one of the tables cannot load the schema
CREATE ROLE sg_reader LOGIN;
GRANT USAGE ON SCHEMA sg TO sg_reader;
GRANT SELECT ON cat, item TO sg_reader;
SET ROLE sg_reader;
SELECT gnn.load_schema_graph('mine', ARRAY['cat', 'item', 'person']::regclass[]);
SELECT name, nodes FROM gnn.load_schema_graph('mine', ARRAY['cat', 'item']::regclass[]);
SELECT gnn.drop_graph('mine');
RESET ROLE;

SELECT gnn.drop_graph(g) FROM unnest(ARRAY['shop', 'shop_vip', 'shop_age', 'shop_price', 'shop2', 'shop3', 'shop4']) g;
DROP SCHEMA sg CASCADE;
DROP ROLE sg_reader;
RESET search_path;
