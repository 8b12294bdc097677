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
SELECT type, column_name, column_type, encoding, feature_offset, width FROM gnn.graph_columns('shop');
SELECT name, nodes, edges FROM gnn.graphs WHERE name = 'shop';
-- nodes named by their keys, of a node type; neighbours come back with theirs
SELECT neighbor, weight, key, neighbor_type
FROM gnn.neighbors('shop', '00000000-0000-0000-0000-000000000001', 'in', node_type => 'person') ORDER BY key;
SELECT gnn.degree('shop', -9223372036854775808, 'in', node_type => 'item') AS item_in,
       gnn.degree('shop', 'c-2', 'both', node_type => 'cat') AS cat_both;
SELECT gnn.degree('shop', 'c-99', node_type => 'cat');
SELECT gnn.degree('shop', 1, node_type => 'shelf');
-- sampling and walks start from keys of one table; rows carry the types
SELECT layer, src_key, src_type, dst_key, dst_type
FROM gnn.sample_neighbors('shop', NULL, '{-1,-1}', node_type => 'person',
                          keys => ARRAY['ffffffff-ffff-ffff-ffff-ffffffffffff'])
ORDER BY layer, src_type, src_key, dst_key;
SELECT layer, src_key, src_type, dst_key, dst_type
FROM gnn.sample_neighbors('shop', ARRAY[-9223372036854775808], '{-1}', node_type => 'item') ORDER BY src_key;
SELECT walk, step, key, type FROM gnn.random_walk('shop', NULL, 2, node_type => 'cat', keys => ARRAY['c-2'], seed => 1)
ORDER BY walk, step;
SELECT * FROM gnn.sample_neighbors('shop', ARRAY[1], '{2}', node_type => 'person');
SELECT * FROM gnn.sample_neighbors('shop', NULL, '{2}', node_type => 'person', keys => ARRAY['nope']);
SELECT * FROM gnn.sample_neighbors('shop', NULL, '{2}', node_type => 'shelf', keys => ARRAY['c-2']);
-- seed times: only rows not later than the seed's time (a graph with row times)
SELECT name FROM gnn.load_schema_graph('shop_t', ARRAY['cat', 'item', 'person', 'buy']::regclass[],
                                       options => '{"time": {"buy": "at"}}');
SELECT t AS seed_time, count(*) FILTER (WHERE src_type = 'buy') AS buys
FROM unnest(ARRAY['2024-05-01 12:00+00', '2024-05-10 00:00+00']::timestamptz[]) t,
     gnn.sample_neighbors('shop_t', NULL, '{-1}', node_type => 'person',
                          keys => ARRAY['12345678-9abc-def0-1234-56789abcdef0'], seed_times => ARRAY[t])
GROUP BY t ORDER BY t;
SELECT * FROM gnn.sample_neighbors('shop_t', NULL, '{2}', node_type => 'person',
                                   keys => ARRAY['12345678-9abc-def0-1234-56789abcdef0'], seed_times => '{}');
SELECT * FROM gnn.sample_neighbors('shop', NULL, '{2}', node_type => 'person',
                                   keys => ARRAY['12345678-9abc-def0-1234-56789abcdef0'], seed_times => ARRAY[now()]);
SELECT gnn.drop_graph('shop_t');
-- the encodings kept with the graph: a standardised numeric column, a category with its values
SELECT type, column_name, detail->>'kind' AS kind, detail->'categories' AS categories, detail->>'missing' AS missing
FROM gnn.graph_columns('shop') WHERE column_name IN ('price', 'tag', 'country');

-- a target with a label: text classes on persons, boolean classes, numeric regression targets
SELECT name, classes FROM gnn.load_schema_graph('shop_vip', ARRAY['cat', 'item', 'person', 'buy']::regclass[],
                                                target => 'person', label => 'vip');
SELECT name, classes FROM gnn.load_schema_graph('shop_age', ARRAY['person', 'buy']::regclass[],
                                                target => 'person', label => 'age');
SELECT count(*) AS columns_without_label FROM gnn.graph_columns('shop_age') WHERE column_name = 'age';
SELECT name, classes FROM gnn.load_schema_graph('shop_price', ARRAY['item', 'cat']::regclass[],
                                                target => 'item', label => 'price');
SELECT gnn._graph_meta('shop_price')->>'task' AS task;

-- options: features chosen per table, columns excluded, keys named, time columns
SELECT name, nodes, edges, feature_dim
FROM gnn.load_schema_graph('shop2', ARRAY['cat', 'item']::regclass[],
                           options => '{"features": {"item": ["price"]}, "exclude": {"cat": ["name"]},
                                        "keys": {"cat": "id"}}');
SELECT type, column_name, encoding FROM gnn.graph_columns('shop2');
-- a table left without features: a learned embedding per node
SELECT name FROM gnn.load_schema_graph('shop3', ARRAY['cat', 'item']::regclass[],
                           options => '{"features": {"cat": [], "item": ["price"]}}');
SELECT type, column_name, encoding, width FROM gnn.graph_columns('shop3') WHERE type = 'cat';
-- a declared edge where no constraint exists
CREATE TABLE tagmap (tag text PRIMARY KEY, label text);
INSERT INTO tagmap VALUES ('a', 'x'), ('b', 'y'), ('c', 'z');
SELECT name, edges FROM gnn.load_schema_graph('shop4', ARRAY['item', 'tagmap']::regclass[],
                           options => '{"edges": [{"from": "item.tag", "to": "tagmap"}]}');
SELECT kind, type, count, src_type, dst_type FROM gnn.graph_types('shop4') WHERE kind = 'edge';

-- gnn.load_graph takes text and uuid ids too; results carry them in their own type
CREATE TABLE tnodes (id uuid PRIMARY KEY, feat real[], label text, split text);
INSERT INTO tnodes
  SELECT md5('n' || g)::uuid, ARRAY[g % 2, (g + 1) % 2]::real[],
         CASE WHEN g % 2 = 0 THEN 'even' ELSE 'odd' END, CASE WHEN g < 14 THEN 'train' ELSE 'test' END
  FROM generate_series(0, 19) g;
CREATE TABLE tedges (a uuid, b uuid);
INSERT INTO tedges SELECT md5('n' || g)::uuid, md5('n' || ((g + 2) % 20))::uuid FROM generate_series(0, 19) g;
SELECT name, nodes, edges, classes FROM gnn.load_graph('tg', 'tedges', src => 'a', dst => 'b', nodes => 'tnodes',
       features => 'feat', label => 'label', split => 'split', undirected => true);
SET client_min_messages = warning;
SELECT gnn.train('tg', model => 'gcn', name => 'tg_gcn', epochs => 30, seed => 1, wait => true) > 0 AS trained;
RESET client_min_messages;
SELECT gnn.embed('tg_gcn', 'tg_emb');
SELECT format_type(atttypid, atttypmod) AS id_type, (SELECT count(*) FROM tg_emb JOIN tnodes USING (id)) AS matched
FROM pg_attribute WHERE attrelid = 'tg_emb'::regclass AND attname = 'id';
SELECT count(*) AS predicted, count(*) FILTER (WHERE p.class = n.label) > 15 AS mostly_right
FROM gnn.predict('tg_gcn') p JOIN tnodes n ON n.id::text = p.key;
SELECT key = md5('n3')::uuid::text AS same_key FROM gnn.predict('tg_gcn', ARRAY[md5('n3')::uuid::text]);
SELECT count(*) AS similar FROM gnn.similar('tg_gcn', md5('n3')::uuid::text, 3);
SELECT gnn.drop_model('tg_gcn');
-- text ids without a node table: the nodes are the endpoints
CREATE TABLE wedges (a text, b text, w real);
INSERT INTO wedges VALUES ('x', 'y', 1), ('y', 'z', 2), ('z', 'x', 3), ('x', 'y', 4);
SELECT name, nodes, edges FROM gnn.load_graph('tw', 'wedges', src => 'a', dst => 'b', weight => 'w');
SELECT kind, type, count FROM gnn.graph_types('tw');
-- a dangling text key names itself; skip_dangling leaves the edge out
INSERT INTO tedges VALUES (md5('n0')::uuid, md5('nowhere')::uuid);
SELECT gnn.load_graph('bad', 'tedges', src => 'a', dst => 'b', nodes => 'tnodes');
SELECT name, edges FROM gnn.load_graph('tg', 'tedges', src => 'a', dst => 'b', nodes => 'tnodes', skip_dangling => true,
                                       replace => true);
CREATE TABLE medges (a text, b int);
SELECT gnn.load_graph('bad', 'medges', src => 'a', dst => 'b');
SELECT gnn.drop_graph('tg'), gnn.drop_graph('tw');

-- other shapes: a view (no constraints: its key and edges named in options),
-- a partitioned table, a TOASTed and NULL-heavy column
CREATE VIEW big_items AS SELECT id, cat_id, price FROM item WHERE price > 6;
CREATE TABLE ptab (id bigint PRIMARY KEY, cat_id text, blob text) PARTITION BY RANGE (id);
CREATE TABLE ptab_a PARTITION OF ptab FOR VALUES FROM (MINVALUE) TO (100);
CREATE TABLE ptab_b PARTITION OF ptab FOR VALUES FROM (100) TO (MAXVALUE);
INSERT INTO ptab SELECT g, CASE WHEN g % 3 = 0 THEN NULL ELSE 'c-' || (1 + g % 2) END,
                        CASE WHEN g % 2 = 0 THEN repeat(md5(g::text), 200) END
  FROM generate_series(1, 200) g;
SELECT name, nodes, edges FROM gnn.load_schema_graph('shapes', ARRAY['cat', 'big_items', 'ptab']::regclass[],
       options => '{"keys": {"big_items": "id"},
                    "edges": [{"from": "big_items.cat_id", "to": "cat"}, {"from": "ptab.cat_id", "to": "cat"}],
                    "max_categories": 4}');
SELECT kind, type, count FROM gnn.graph_types('shapes');
SELECT type, column_name, encoding, width, detail->>'reason' AS reason FROM gnn.graph_columns('shapes') WHERE type = 'ptab';
SELECT gnn.drop_graph('shapes');

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
-- a seed time needs a target and row times, and names a column of the target
SELECT gnn.load_schema_graph('bad', ARRAY['cat', 'item']::regclass[], options => '{"seed_time": "added"}');
SELECT gnn.load_schema_graph('bad', ARRAY['cat', 'item']::regclass[], target => 'item', options => '{"seed_time": "added"}');
SELECT gnn.load_schema_graph('bad', ARRAY['cat', 'item']::regclass[], target => 'item',
                             options => '{"seed_time": "nosuch", "time": {"item": "added"}}');
SELECT count(*) AS bad_graphs FROM gnn.graphs WHERE name = 'bad';
\set VERBOSITY terse

-- replacing a schema graph keeps its encodings: new rows are encoded with the
-- statistics and categories of the load it replaces (a model trained on it
-- reads them as it read the old rows); options.encodings = 'refit' fits afresh
SELECT name FROM gnn.load_schema_graph('enc', ARRAY['cat', 'item']::regclass[]);
CREATE TEMP TABLE enc0 AS SELECT column_name, detail::text AS detail, width FROM gnn.graph_columns('enc') WHERE type = 'item';
INSERT INTO item VALUES (100, 'c-1', 1000, 'new-tag', '2030-01-01', NULL, NULL);
SELECT name, nodes FROM gnn.load_schema_graph('enc', ARRAY['cat', 'item']::regclass[], replace => true);
SELECT gnn._graph_meta('enc')->>'encodings' AS encodings,
       bool_and(e.detail = c.detail::text AND e.width = c.width) AS same_encodings
FROM enc0 e JOIN gnn.graph_columns('enc') c ON c.type = 'item' AND c.column_name = e.column_name;
SELECT name FROM gnn.load_schema_graph('enc', ARRAY['cat', 'item']::regclass[], replace => true,
                                       options => '{"encodings": "refit"}');
SELECT gnn._graph_meta('enc')->>'encodings' AS encodings, e.column_name, e.detail = c.detail::text AS same
FROM enc0 e JOIN gnn.graph_columns('enc') c ON c.type = 'item' AND c.column_name = e.column_name
WHERE e.column_name IN ('price', 'tag', 'added') ORDER BY 2;
-- other columns: encoded afresh, with a notice
SET client_min_messages = notice;
SELECT name FROM gnn.load_schema_graph('enc', ARRAY['cat', 'item']::regclass[], replace => true,
                                       options => '{"exclude": {"item": ["price"]}}');
RESET client_min_messages;
SELECT gnn.load_schema_graph('enc', ARRAY['cat', 'item']::regclass[], replace => true, options => '{"encodings": "old"}');
SELECT gnn.drop_graph('enc');
DELETE FROM item WHERE id = 100;

-- a role without SELECT on one of the tables cannot load the schema
CREATE ROLE sg_reader LOGIN;
GRANT USAGE ON SCHEMA sg TO sg_reader;
GRANT SELECT ON cat, item TO sg_reader;
SET ROLE sg_reader;
SELECT gnn.load_schema_graph('mine', ARRAY['cat', 'item', 'person']::regclass[]);
SELECT name, nodes FROM gnn.load_schema_graph('mine', ARRAY['cat', 'item']::regclass[]);
SELECT gnn.drop_graph('mine');
RESET ROLE;

-- the graph store: schema graphs are stored by default, options.persist = false keeps one in memory
SELECT name FROM gnn.load_schema_graph('shop_mem', ARRAY['cat', 'item', 'person', 'buy']::regclass[],
                                       options => '{"persist": false}');
SELECT name, persisted FROM gnn.graphs WHERE name IN ('shop', 'shop_mem') ORDER BY name;
SELECT gnn.load_schema_graph('shop_bad', ARRAY['cat', 'item', 'person', 'buy']::regclass[],
                             options => '{"persist": "no"}');
SELECT gnn.drop_graph('shop_mem');

SELECT gnn.drop_graph(g) FROM unnest(ARRAY['shop', 'shop_vip', 'shop_age', 'shop_price', 'shop2', 'shop3', 'shop4']) g;
DROP SCHEMA sg CASCADE;
DROP ROLE sg_reader;
RESET search_path;
