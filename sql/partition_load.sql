-- One part of a partitioned graph (issue 16): gnn.load_graph(..., part_column, part)
-- loads the rows of one part, every edge with an endpoint among them and the
-- halo; checked against the whole graph (degrees and neighbours of every own
-- node), the halo against SQL over the tables, owners against gnn.partition's
-- output; halo nodes carry no label or split; a part trains; errors.
CREATE EXTENSION IF NOT EXISTS gnn;
SET client_min_messages = warning;
SELECT setseed(0.25);
CREATE TABLE pl_nodes AS
  SELECT id, (id % 4)::int AS label,
         CASE WHEN id % 5 = 0 THEN 'train' WHEN id % 5 = 1 THEN 'val' ELSE 'test' END AS split,
         (SELECT array_agg(CASE WHEN j % 4 = id % 4 THEN 0.4 ELSE 0 END + random()::real ORDER BY j)
            FROM generate_series(0, 7) j)::real[] AS feat
  FROM generate_series(0, 399) id;
CREATE TABLE pl_edges AS
  SELECT s.id AS src,
         CASE WHEN random() < 0.85 THEN ((random() * 99)::int * 4 + s.id % 4) % 400
              ELSE (random() * 399)::int END AS dst
  FROM pl_nodes s, generate_series(1, 3) k;
DELETE FROM pl_edges WHERE src = dst;
SELECT nodes FROM gnn.load_graph('pl', 'pl_edges', nodes => 'pl_nodes', features => 'feat',
                                 label => 'label', split => 'split', undirected => true);
-- a whole graph has no part
SELECT count(*) AS part_rows FROM gnn.graph_part('pl');
SELECT count(*) AS halo_rows FROM gnn.halo('pl');

-- the assignment, from gnn.partition, joined to the node table by a view
CREATE TABLE pl_parts AS SELECT node AS id, part FROM gnn.partition('pl', 3, seed => 1);
CREATE VIEW pl_nodes_p AS SELECT n.*, p.part FROM pl_nodes n JOIN pl_parts p USING (id);
SELECT k AS part, g.nodes > 0 AS has_nodes, g.feature_dim,
       g.train + g.val + g.test = (SELECT count(*) FROM pl_parts WHERE part = k) AS only_own_have_splits
FROM generate_series(0, 2) k,
     LATERAL gnn.load_graph('pl' || k, 'pl_edges', nodes => 'pl_nodes_p', features => 'feat',
                            label => 'label', split => 'split', undirected => true,
                            part_column => 'part', part => k) g
ORDER BY k;

-- own nodes: exactly the part's rows; halo: exactly the other endpoints of their edges
SELECT p.part, g.part AS graph_part, g.part_column, g.own = p.rows AS own_is_the_part,
       g.nodes = g.own + g.halo AS nodes_add_up, g.halo_unknown, g.own_edges <= g.edges AS own_edges_le
FROM (SELECT part, count(*) AS rows FROM pl_parts GROUP BY part) p,
     LATERAL gnn.graph_part('pl' || p.part) g
ORDER BY p.part;
SELECT sum(own) AS own_total FROM generate_series(0, 2) k, LATERAL gnn.graph_part('pl' || k);
CREATE TABLE pl_halo_sql AS
  SELECT DISTINCT p.part, x.other AS node
  FROM pl_parts p
  JOIN LATERAL (SELECT dst AS other FROM pl_edges WHERE src = p.id
                UNION SELECT src FROM pl_edges WHERE dst = p.id) x ON true
  JOIN pl_parts q ON q.id = x.other
  WHERE q.part <> p.part;
SELECT k AS part,
       (SELECT count(*) FROM (SELECT node FROM gnn.halo('pl' || k) EXCEPT
                              SELECT node FROM pl_halo_sql WHERE part = k) a) AS halo_not_in_sql,
       (SELECT count(*) FROM (SELECT node FROM pl_halo_sql WHERE part = k EXCEPT
                              SELECT node FROM gnn.halo('pl' || k)) b) AS sql_not_in_halo,
       (SELECT count(*) FROM gnn.halo('pl' || k) h JOIN pl_parts q ON q.id = h.node
        WHERE h.owner IS DISTINCT FROM q.part) AS wrong_owner,
       (SELECT count(*) FROM gnn.halo('pl' || k) WHERE own_neighbors < 1) AS halo_without_own_neighbour
FROM generate_series(0, 2) k ORDER BY k;
-- every own node has its whole-graph degrees and neighbours
SELECT p.part,
       count(*) FILTER (WHERE gnn.degree('pl' || p.part, p.id, 'out') <> gnn.degree('pl', p.id, 'out')
                           OR gnn.degree('pl' || p.part, p.id, 'in') <> gnn.degree('pl', p.id, 'in')) AS degree_differs,
       count(*) FILTER (WHERE (SELECT array_agg(neighbor ORDER BY neighbor) FROM gnn.neighbors('pl' || p.part, p.id))
                          IS DISTINCT FROM
                          (SELECT array_agg(neighbor ORDER BY neighbor) FROM gnn.neighbors('pl', p.id))) AS neighbours_differ
FROM pl_parts p GROUP BY p.part ORDER BY p.part;
-- own nodes carry their rows' features, halo nodes zeros (their owners hold theirs)
SELECT p.part,
       count(*) FILTER (WHERE gnn.features('pl' || p.part, p.id) IS DISTINCT FROM n.feat) AS own_features_differ
FROM pl_parts p JOIN pl_nodes n USING (id) GROUP BY p.part ORDER BY p.part;
SELECT k AS part, count(*) FILTER (WHERE gnn.features('pl' || k, h.node) <> array_fill(0::real, ARRAY[8])) AS halo_nonzero
FROM generate_series(0, 2) k, LATERAL gnn.halo('pl' || k) h GROUP BY k ORDER BY k;
SELECT gnn.features('pl', 3) = (SELECT feat FROM pl_nodes WHERE id = 3) AS whole_graph_features;
-- halo nodes are in the graph (their arcs to own nodes), and nothing beyond them
SELECT count(*) AS beyond_halo
FROM pl_parts p, LATERAL gnn.neighbors('pl0', p.id) n
WHERE p.part = 0 AND NOT EXISTS (SELECT 1 FROM pl_parts q WHERE q.id = n.neighbor AND q.part = 0)
  AND NOT EXISTS (SELECT 1 FROM gnn.halo('pl0') h WHERE h.node = n.neighbor);

-- halo_hops => 2: the nodes one hop from the part keep every edge too (their
-- whole-graph degrees and neighbours), so the halo is everything within two hops
SELECT g.nodes, p.halo_hops
FROM gnn.load_graph('pl0h', 'pl_edges', nodes => 'pl_nodes_p', features => 'feat', label => 'label',
                    split => 'split', undirected => true, part_column => 'part', part => 0, halo_hops => 2) g,
     gnn.graph_part('pl0h') p;
SELECT halo_hops AS default_halo_hops FROM gnn.graph_part('pl0');
CREATE TABLE pl_hop1 AS SELECT DISTINCT x.other AS node
  FROM pl_parts p JOIN LATERAL (SELECT dst AS other FROM pl_edges WHERE src = p.id
                                UNION SELECT src FROM pl_edges WHERE dst = p.id) x ON true
  WHERE p.part = 0 AND x.other NOT IN (SELECT id FROM pl_parts WHERE part = 0);
CREATE TABLE pl_hop2 AS SELECT node FROM pl_hop1 UNION SELECT x.other
  FROM pl_hop1 h JOIN LATERAL (SELECT dst AS other FROM pl_edges WHERE src = h.node
                               UNION SELECT src FROM pl_edges WHERE dst = h.node) x ON true
  WHERE x.other NOT IN (SELECT id FROM pl_parts WHERE part = 0);
SELECT (SELECT count(*) FROM (SELECT node FROM gnn.halo('pl0h') EXCEPT SELECT node FROM pl_hop2) a) AS halo_not_in_sql,
       (SELECT count(*) FROM (SELECT node FROM pl_hop2 EXCEPT SELECT node FROM gnn.halo('pl0h')) b) AS sql_not_in_halo,
       (SELECT count(*) FROM pl_hop2) > (SELECT count(*) FROM pl_hop1) AS wider,
       (SELECT own FROM gnn.graph_part('pl0h')) = (SELECT own FROM gnn.graph_part('pl0')) AS same_own;
SELECT count(*) FILTER (WHERE gnn.degree('pl0h', node, 'in') <> gnn.degree('pl', node, 'in')
                           OR (SELECT array_agg(neighbor ORDER BY neighbor) FROM gnn.neighbors('pl0h', node))
                              IS DISTINCT FROM
                              (SELECT array_agg(neighbor ORDER BY neighbor) FROM gnn.neighbors('pl', node))) AS hop1_differs
FROM pl_hop1;
SELECT gnn.load_graph('pl_bad', 'pl_edges', nodes => 'pl_nodes_p', features => 'feat', halo_hops => 2);
SELECT gnn.load_graph('pl_bad', 'pl_edges', nodes => 'pl_nodes_p', features => 'feat',
                      part_column => 'part', part => 0, halo_hops => 9);
SELECT gnn.load_schema_graph('pl_bad', ARRAY['pl_nodes']::regclass[], options => '{"halo_hops": 2}');
SELECT gnn.drop_graph('pl0h');

-- a node table holding only this server's rows: the halo's owners are unknown here
CREATE VIEW pl_nodes_p1 AS SELECT * FROM pl_nodes_p WHERE part = 1;
SELECT nodes FROM gnn.load_graph('pl1only', 'pl_edges', nodes => 'pl_nodes_p1', features => 'feat',
                                 label => 'label', undirected => true, part_column => 'part', part => 1);
SELECT g.own = (SELECT count(*) FROM pl_parts WHERE part = 1) AS own_ok,
       g.halo = (SELECT halo FROM gnn.graph_part('pl1')) AS same_halo, g.halo = g.halo_unknown AS all_unknown
FROM gnn.graph_part('pl1only') g;
SELECT count(*) FILTER (WHERE owner IS NULL) = count(*) AS owners_null FROM gnn.halo('pl1only');

-- a part trains like any graph: on its own labelled nodes
SELECT state FROM gnn.jobs
WHERE id = (SELECT gnn.train('pl0', model => 'gcn', name => 'pl0_gcn', hidden => 8, epochs => 5, seed => 1,
                             wait => true));
SELECT train > 0 AS has_train, train = (SELECT count(*) FROM pl_nodes_p WHERE part = 0 AND split = 'train') AS train_is_own
FROM gnn.graphs WHERE name = 'pl0';
-- reading a model on a part warns that the halo's features and neighbours are elsewhere
SELECT count(*) AS predicted
FROM gnn.predict('pl0_gcn', (SELECT array_agg(id ORDER BY id) FROM (SELECT id FROM pl_parts WHERE part = 0 ORDER BY id LIMIT 2) s));
-- embeddings over every part (options.peers: the servers themselves in TAP test 015_dist): what is refused here
SELECT gnn.embed('pl0_gcn', 'pl_emb', options => '{"write": "local"}');
SELECT gnn.embed('pl0_gcn', 'pl_emb', options => '{"peers": ["host=x"], "write": "nowhere"}');
SELECT gnn.embed('pl0_gcn', 'pl_nodes', column_name => 'e', options => '{"peers": ["host=x"], "write": "local"}');
SELECT count(*) AS nothing_written FROM pg_class WHERE relname = 'pl_emb';
SELECT count(*) FROM gnn.predict('pl0_gcn', options => '{"bogus": 1}');
SELECT count(*) FROM gnn.predict('pl0_gcn', as_of => '2024-01-01', options => '{"peers": ["host=x"]}');
SELECT count(*) FROM gnn.predict('pl0_gcn', options => '[1]');

-- errors
\set VERBOSITY default
SELECT gnn.load_graph('bad', 'pl_edges', nodes => 'pl_nodes_p', part_column => 'part');
SELECT gnn.load_graph('bad', 'pl_edges', nodes => 'pl_nodes_p', part => 0);
SELECT gnn.load_graph('bad', 'pl_edges', nodes => 'pl_nodes_p', part_column => 'part', part => -1);
SELECT gnn.load_graph('bad', 'pl_edges', part_column => 'part', part => 0);
SELECT gnn.load_graph('bad', 'pl_edges', nodes => 'pl_nodes_p', part_column => 'part', part => 7);
SELECT gnn.load_graph('bad', 'pl_edges', nodes => 'pl_nodes_p', part_column => 'split', part => 0);
SELECT gnn.load_graph('bad', 'pl_edges', nodes => 'pl_nodes_p', part_column => 'nope', part => 0);
SELECT gnn.load_graph('bad', 'pl_edges', nodes => 'pl_nodes_p', part_column => 'part', part => 0, track => true);
SELECT gnn.load_graph('bad', 'pl_edges', nodes => 'pl_nodes_p', features => 'feat', part_column => 'part',
                      part => 0, feature_store => 'disk');
CREATE VIEW pl_nodes_null AS SELECT id, CASE WHEN id = 17 THEN NULL ELSE part END AS part FROM pl_nodes_p;
SELECT gnn.load_graph('bad', 'pl_edges', nodes => 'pl_nodes_null', part_column => 'part', part => 0);
CREATE VIEW pl_nodes_dup AS SELECT id, part FROM pl_nodes_p UNION ALL SELECT 5, 2;
SELECT gnn.load_graph('bad', 'pl_edges', nodes => 'pl_nodes_dup', part_column => 'part', part => 0);
CREATE TABLE pl_tnodes AS SELECT id::text AS id, part FROM pl_nodes_p;
CREATE TABLE pl_tedges AS SELECT src::text AS src, dst::text AS dst FROM pl_edges;
SELECT gnn.load_graph('bad', 'pl_tedges', nodes => 'pl_tnodes', part_column => 'part', part => 0);
SELECT count(*) AS no_bad_graph FROM gnn.graphs WHERE name = 'bad';
-- training over several servers: what options.peers accepts (the jobs themselves: TAP test 015_dist)
SELECT gnn.train('pl0', options => '{"peers": []}');
SELECT gnn.train('pl0', options => '{"peers": "host=x"}');
SELECT gnn.train('pl0', options => '{"peers": [1]}');
SELECT gnn.train('pl0', options => '{"coordinator": "host=x"}');
SELECT gnn.train('pl0', options => '{"peers": ["host=x"], "fanouts": [5, 5], "sampler": "ladies"}');
SELECT gnn.train('pl0', task => 'link_prediction', options => '{"peers": ["host=x"]}');
SELECT gnn.train('pl0', device => 'cuda', options => '{"peers": ["host=x"], "fanouts": [5, 5], "feature_slices": true}');
SELECT gnn.train('pl0', options => '{"peers": ["host=x"], "dist_timeout_ms": 5}');
SELECT count(*) AS no_job FROM gnn.jobs WHERE graph = 'pl0' AND state <> 'succeeded';

-- a P3 server's share of the feature columns (feature_slice => ARRAY[r, K]): the 8 columns over
-- 3 servers are [0, 2), [2, 5), [5, 8); every column is still checked
SELECT k AS slice, (gnn.load_graph('pl_s' || k, 'pl_edges', nodes => 'pl_nodes', features => 'feat',
                                   feature_slice => ARRAY[k, 3])).feature_dim
FROM generate_series(0, 2) k;
SELECT gnn._graph_meta('pl_s1')->'feature_slice' AS slice_meta;
SELECT gnn.features('pl_s1', 3) = (SELECT feat[3:5] FROM pl_nodes WHERE id = 3) AS slice_columns;
SELECT gnn.train('pl_s0', model => 'gcn', task => 'link_prediction', epochs => 1);
SELECT gnn.train('pl_s0', model => 'graphsage', epochs => 1, options => '{"fanouts": [2, 2], "feature_slices": true}');
SELECT gnn.load_graph('pl_bad', 'pl_edges', nodes => 'pl_nodes', features => 'feat', feature_slice => ARRAY[3, 3]);
SELECT gnn.load_graph('pl_bad', 'pl_edges', nodes => 'pl_nodes', features => 'feat', feature_slice => ARRAY[0]);
SELECT gnn.load_graph('pl_bad', 'pl_edges', nodes => 'pl_nodes', features => 'feat', feature_slice => ARRAY[[0, 2]]);
SELECT gnn.load_graph('pl_bad', 'pl_edges', nodes => 'pl_nodes', features => 'feat', feature_slice => ARRAY[NULL, 2]::int[]);
SELECT gnn.load_graph('pl_bad', 'pl_edges', nodes => 'pl_nodes', features => 'feat', feature_slice => ARRAY[0, 9]);
SELECT gnn.load_graph('pl_bad', 'pl_edges', nodes => 'pl_nodes', feature_slice => ARRAY[0, 2]);
SELECT gnn.load_graph('pl_bad', 'pl_edges', nodes => 'pl_nodes_p', features => 'feat', part_column => 'part', part => 0,
                      feature_slice => ARRAY[0, 2]);
SELECT count(*) AS no_bad_graph FROM gnn.graphs WHERE name = 'pl_bad';

-- leave nothing behind for the tests after this one
SELECT gnn.drop_model('pl0_gcn');
SELECT count(gnn.drop_graph(name)) AS dropped FROM gnn.graphs WHERE name LIKE 'pl%';
