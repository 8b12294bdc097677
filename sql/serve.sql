-- Serving: shared full-graph results (gnn.cache), exact k-hop inference for a
-- few nodes equal to the full pass, versioning by model row and graph
-- version.  Concurrency and roles: test/t/010_serve.pl.
CREATE EXTENSION IF NOT EXISTS gnn;
SET client_min_messages = warning;
SELECT setseed(0.75);
-- 400 nodes: node 0 is a hub (in- and out-edges to 200 nodes), 390..399 are
-- isolated, weighted edges, some self loops
CREATE TABLE sv_n AS
  SELECT id, (id % 4)::int AS label,
         CASE WHEN id % 10 < 6 THEN 'train' WHEN id % 10 < 8 THEN 'val' ELSE 'test' END AS split,
         ARRAY[(id % 4 = 0)::int + random(), (id % 4 = 1)::int + random(), (id % 4 = 2)::int + random(),
               random(), random()]::real[] AS feat
  FROM generate_series(0, 399) id;
CREATE TABLE sv_e AS
  SELECT src, dst, (0.5 + random())::real AS w FROM (
    SELECT s.id AS src, ((random() * 96)::int * 4 + s.id % 4) % 388 + 1 AS dst FROM sv_n s, generate_series(1, 3) k
    WHERE s.id < 390
    UNION ALL SELECT 0, i FROM generate_series(1, 200) i
    UNION ALL SELECT i, 0 FROM generate_series(100, 299) i
    UNION ALL SELECT i, i FROM generate_series(1, 20) i) e;
SELECT nodes, edges > 1000 AS many_edges FROM gnn.load_graph('sv', 'sv_e', nodes => 'sv_n', features => 'feat',
                                                            label => 'label', split => 'split', weight => 'w');
SELECT gnn.degree('sv', 0, 'in') AS hub_in, gnn.degree('sv', 395, 'both') AS isolated;

-- the training worker shares the default results after the job ends (wait => true returns
-- at the model; the results follow, and gnn.jobs.results_seconds says when they are there)
SELECT gnn.train('sv', model => 'gcn', name => 'sv_gcn', hidden => 8, epochs => 5, seed => 1, device => 'cpu',
                 wait => true) AS sv_job \gset
SELECT set_config('gnn_test.job', :'sv_job', false) IS NOT NULL AS job_noted;
DO $$ BEGIN
  FOR i IN 1..600 LOOP
    EXIT WHEN (SELECT results_seconds IS NOT NULL FROM gnn.jobs WHERE id = current_setting('gnn_test.job')::bigint);
    PERFORM pg_sleep(0.05);
  END LOOP;
END $$;
SELECT model, version, kind, layer, nodes, dim, hits, state, seconds >= 0 AS timed FROM gnn.cache ORDER BY kind;
SELECT results_seconds >= 0 AS results_time_reported, state FROM gnn.jobs WHERE id = :sv_job;
SELECT array_length(gnn.embedding('sv_gcn', 7), 1) AS dim;
SELECT count(*) FROM gnn.predict('sv_gcn', ARRAY[1, 2, 3]);
SELECT kind, hits FROM gnn.cache ORDER BY kind;         -- served from the shared results
CREATE TABLE from_worker AS
  SELECT id, gnn.embedding('sv_gcn', id) AS e, (SELECT score FROM gnn.predict('sv_gcn', ARRAY[id])) AS p
  FROM generate_series(0, 399, 7) id;
SELECT gnn.cache_drop('sv_gcn') AS dropped;
-- what the worker shared (one forward pass for both) equals what a session computes on its own
SELECT bool_and((SELECT max(abs(a - b)) FROM unnest(w.e, gnn.embedding('sv_gcn', w.id)) u(a, b)) < 1e-5
                AND abs(w.p - (SELECT score FROM gnn.predict('sv_gcn', ARRAY[w.id]))) < 1e-5) AS worker_results_equal
FROM from_worker w;
SELECT gnn.cache_drop('sv_gcn') IS NOT NULL AS dropped_again;
SELECT gnn.train('sv', model => 'gcn', name => 'sv_one', layers => 1, epochs => 3, seed => 1, device => 'cpu',
                 wait => true) > 0 AS trained;
CREATE TABLE one_worker AS SELECT id, gnn.embedding('sv_one', id) AS e FROM generate_series(0, 399, 7) id;
SELECT gnn.cache_drop('sv_one') AS dropped;
SELECT bool_and((SELECT max(abs(a - b)) FROM unnest(w.e, gnn.embedding('sv_one', w.id)) u(a, b)) < 1e-5)
       AS one_layer_embedding_is_raw_scores,
       bool_and((SELECT abs(sum(a) - 1) > 1e-3 FROM unnest(w.e) a)) AS not_probabilities
FROM one_worker w;
SELECT gnn.cache_drop('sv_one') IS NOT NULL AS dropped_again;
SELECT count(*) AS entries FROM gnn.cache;

-- exact k-hop inference: a few nodes computed on their own neighbourhood
-- equal the full pass (1e-5), for every architecture; the hub (node 0), its
-- neighbours, isolated nodes and self loops included
SET gnn.khop_max_fraction = 1;          -- always k-hop here, however large the neighbourhood
SELECT gnn.train('sv', model => 'graphsage', name => 'sv_sage', hidden => 8, epochs => 3, seed => 1, device => 'cpu',
                 wait => true) > 0 AS trained;
SELECT gnn.train('sv', model => 'graphsage', name => 'sv_pool', hidden => 8, epochs => 3, seed => 1, device => 'cpu',
                 options => '{"aggregator": "pool"}', wait => true) > 0 AS trained;
SELECT gnn.train('sv', model => 'gat', name => 'sv_gat', hidden => 4, epochs => 3, seed => 1, device => 'cpu',
                 options => '{"heads": 2}', wait => true) > 0 AS trained;
SELECT gnn.train('sv', model => 'gcn', name => 'sv_gcn3', hidden => 6, layers => 3, epochs => 3, seed => 1,
                 device => 'cpu', wait => true) > 0 AS trained;
CREATE TABLE probe AS SELECT unnest(ARRAY[0, 1, 2, 7, 100, 150, 200, 299, 389, 390, 395, 399]) AS id;
CREATE TABLE khop (model text, id int, emb real[], label int, score real);
DO $$
DECLARE m text;
BEGIN
  FOREACH m IN ARRAY ARRAY['sv_gcn', 'sv_sage', 'sv_pool', 'sv_gat', 'sv_gcn3'] LOOP
    PERFORM gnn.cache_drop(m);
    INSERT INTO khop SELECT m, id, gnn.embedding(m, id) FROM probe;
    UPDATE khop k SET label = p.label, score = p.score
    FROM gnn.predict(m, (SELECT array_agg(id) FROM probe)) p WHERE k.model = m AND k.id = p.id;
  END LOOP;
END $$;
SELECT count(*) AS entries_after_khop FROM gnn.cache;    -- nothing full was computed
SELECT k.model, count(*) AS nodes,
       bool_and((SELECT max(abs(a - b)) FROM unnest(k.emb, f.embedding) u(a, b)) < 1e-5) AS embeddings_equal,
       bool_and(k.label = p.label AND abs(k.score - p.score) < 1e-5) AS predictions_equal
FROM khop k
JOIN LATERAL (SELECT * FROM gnn._embedding_rows(k.model) e WHERE e.id = k.id) f ON true
JOIN LATERAL (SELECT * FROM gnn.predict(k.model) q WHERE q.id = k.id) p ON true
GROUP BY k.model ORDER BY k.model;
-- the full passes are shared now: two results per model
SELECT model, count(*) AS results FROM gnn.cache GROUP BY model ORDER BY model;
-- other layers are results of their own
SELECT array_length(gnn.embedding('sv_gcn3', 7), 1) AS hidden_dim,
       (SELECT array_length(embedding, 1) FROM gnn._embedding_rows('sv_gcn3', 0) WHERE id = 7) AS layer0_dim;
SELECT layer, dim FROM gnn.cache WHERE model = 'sv_gcn3' AND kind = 'embedding' ORDER BY layer;
RESET gnn.khop_max_fraction;

-- similar: the top k of one pass over the shared embeddings, equal to a sort of all scores in SQL
CREATE TABLE emb AS SELECT * FROM gnn._embedding_rows('sv_sage');
SELECT array_agg(id ORDER BY score DESC, id) = (
         SELECT array_agg(id ORDER BY s DESC, id) FROM (
           SELECT e.id, (SELECT sum(a * b) / (sqrt(sum(a * a)) * sqrt(sum(b * b)))
                         FROM unnest(e.embedding, q.embedding) u(a, b)) AS s
           FROM emb e, emb q WHERE q.id = 7 AND e.id <> 7 ORDER BY s DESC, e.id LIMIT 10) x) AS same_top10
FROM gnn.similar('sv_sage', 7, 10);

-- versions: a retrain under the same name, a graph replace, a dropped model never answer from old results
SELECT gnn.embedding('sv_sage', 7) = (SELECT embedding FROM emb WHERE id = 7) AS from_cache;
SELECT gnn.drop_model('sv_sage');
SELECT count(*) AS sv_sage_entries FROM gnn.cache WHERE model = 'sv_sage';
SELECT gnn.train('sv', model => 'graphsage', name => 'sv_sage', hidden => 5, epochs => 3, seed => 2, device => 'cpu',
                 wait => true) > 0 AS retrained;
SELECT array_length(gnn.embedding('sv_sage', 7), 1) AS new_dim, version FROM gnn.models WHERE name = 'sv_sage';
CREATE TABLE before_replace AS SELECT gnn.embedding('sv_sage', 7) AS e;
UPDATE sv_n SET feat = ARRAY[feat[5], feat[4], feat[3], feat[2], feat[1]];
SELECT nodes FROM gnn.load_graph('sv', 'sv_e', nodes => 'sv_n', features => 'feat', label => 'label',
                                 split => 'split', weight => 'w', replace => true);
SELECT count(*) AS entries_after_replace FROM gnn.cache;      -- results of the replaced graph are gone
SELECT gnn.embedding('sv_sage', 7) <> (SELECT e FROM before_replace) AS answers_the_new_graph;
SELECT count(*) AS similar_rows FROM gnn.similar('sv_sage', 7, 3);
SELECT kind, graph_version > 0 AS versioned FROM gnn.cache WHERE model = 'sv_sage';
SELECT gnn.cache_drop('sv_sage', version => 0);
SELECT gnn.cache_drop('no_such_model') AS none;
SELECT gnn.drop_graph('sv');
SELECT count(*) AS entries_after_drop FROM gnn.cache;
SELECT gnn.drop_model(name) FROM (SELECT DISTINCT name FROM gnn.models WHERE name LIKE 'sv\_%') m ORDER BY name;
SELECT count(*) AS entries_left FROM gnn.cache;
