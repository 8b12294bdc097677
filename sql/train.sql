-- Training jobs end to end on a generated planted-partition graph: train in
-- a background worker, the catalog, predictions that agree with the
-- recorded metrics, embeddings written back, and bad input.
CREATE EXTENSION IF NOT EXISTS gnn;
-- job notices name the device, which depends on the machine
SET client_min_messages = warning;
SELECT setseed(0.25);
CREATE TABLE pp_nodes AS
  SELECT id, (id % 3)::int AS label,
         CASE WHEN id < 60 THEN 'train' WHEN id < 260 THEN 'val' WHEN id < 560 THEN 'test' END AS split,
         (SELECT array_agg(CASE WHEN j % 3 = id % 3 THEN 0.5 ELSE 0 END + random()::real ORDER BY j)
            FROM generate_series(0, 11) j)::real[] AS feat
  FROM generate_series(0, 599) id;
CREATE TABLE pp_edges AS
  SELECT s.id AS src,
         CASE WHEN random() < 0.8 THEN ((random() * 199)::int * 3 + s.id % 3) % 600
              ELSE (random() * 599)::int END AS dst
  FROM pp_nodes s, generate_series(1, 4) k;
SELECT nodes, edges > 0 AS has_edges FROM gnn.load_graph('pp', 'pp_edges', nodes => 'pp_nodes', features => 'feat',
                                             label => 'label', split => 'split', undirected => true);

-- a GCN, waited for (what pg_cron does)
SELECT gnn.train('pp', model => 'gcn', name => 'pp_gcn', hidden => 16, epochs => 60, seed => 7,
                 wait => true) AS job \gset
SELECT id = :job AS same_job, graph, model_name, model, state, epoch, epochs, error IS NULL AS no_error,
       finished >= started AS timed
FROM gnn.jobs WHERE id = :job;
SELECT count(*) = 60 AS one_log_row_per_epoch, bool_and(seconds >= 0) AS timed,
       bool_and(compute_seconds >= 0 AND eval_seconds >= 0 AND compute_seconds + eval_seconds <= seconds * 1.5 + 0.01)
         AS compute_and_eval_timed,
       bool_and(sample_seconds IS NULL AND gather_seconds IS NULL AND wait_seconds IS NULL) AS full_batch_samples_nothing
FROM gnn.training_log WHERE job = :job;
SELECT name, version, graph, model, task, job = :job AS from_job, params->>'hidden' AS hidden,
       (metrics->>'test_acc')::float8 > 0.8 AS accurate, (metrics->>'epochs_run')::int AS epochs_run,
       length(weights) > 0 AS has_weights
FROM gnn.models WHERE graph = 'pp';

-- predictions agree with the recorded test accuracy
SELECT abs(avg((p.label = n.label)::int) - (SELECT (metrics->>'test_acc')::float8 FROM gnn.models
                                            WHERE name = 'pp_gcn')) < 1e-6 AS predict_matches_metrics
FROM gnn.predict('pp_gcn') p JOIN pp_nodes n USING (id) WHERE n.split = 'test';
SELECT count(*), bool_and(score > 0 AND score <= 1) AS probabilities FROM gnn.predict('pp_gcn');
SELECT id, label = id % 3 AS plausible FROM gnn.predict('pp_gcn', ARRAY[0, 1, 2]::bigint[]) ORDER BY id;
-- every class's probability: they sum to 1, the label's is the score; NULL unless asked
SELECT bool_and(abs((SELECT sum(x) FROM unnest(class_probabilities) x) - 1) < 1e-5) AS sums_to_one,
       bool_and(class_probabilities[label + 1] = score) AS score_is_the_labels,
       bool_and(array_length(class_probabilities, 1) = 3) AS three_classes
FROM gnn.predict('pp_gcn', probabilities => true);
SELECT count(*) FILTER (WHERE class_probabilities IS NULL) AS not_asked FROM gnn.predict('pp_gcn', ARRAY[1, 2]::bigint[]);
-- the per-class report: the confusion matrix counts the labelled test nodes, its diagonal the test accuracy,
-- and each class's recall is its row's diagonal share
WITH m AS (SELECT metrics FROM gnn.models WHERE name = 'pp_gcn'),
     c AS (SELECT r.i - 1 AS t, x.j - 1 AS p, x.v::int AS n
           FROM m, jsonb_array_elements(metrics->'test_confusion') WITH ORDINALITY r(row, i),
                jsonb_array_elements_text(r.row) WITH ORDINALITY x(v, j))
SELECT (SELECT sum(n) FROM c) = (SELECT count(*) FROM pp_nodes WHERE split = 'test') AS counts_test_nodes,
       abs((SELECT sum(n) FILTER (WHERE t = p)::float8 / sum(n) FROM c) - (SELECT (metrics->>'test_acc')::float8 FROM m))
         < 1e-6 AS diagonal_is_accuracy,
       (SELECT bool_and(abs((e->>'recall')::float8 - (SELECT sum(n) FILTER (WHERE t = p)::float8 / sum(n) FROM c
                                                       WHERE t = (e->>'class')::int)) < 1e-6)
        FROM m, jsonb_array_elements(metrics->'test_classes') e) AS recall_per_class,
       (SELECT (metrics->>'test_macro_f1')::float8 BETWEEN 0 AND 1 FROM m) AS macro_f1;

-- embeddings back into tables
SELECT gnn.embed('pp_gcn', 'pp_emb');
SELECT count(*), min(array_length(embedding, 1)), max(array_length(embedding, 1)) FROM pp_emb;
SELECT gnn.embed('pp_gcn', 'pp_emb');   -- replaces the rows
SELECT count(*) FROM pp_emb;
SELECT gnn.embed('pp_gcn', 'pp_nodes', column_name => 'emb');
SELECT count(emb) AS filled FROM pp_nodes;
SELECT array_length(gnn.embedding('pp_gcn', 5), 1) AS dim,
       gnn.embedding('pp_gcn', 5) = (SELECT embedding FROM pp_emb WHERE id = 5) AS same_as_table;
SELECT count(*), bool_and(score BETWEEN -1.0001 AND 1.0001) AS cosine, bool_and(id <> 5) AS not_itself
FROM gnn.similar('pp_gcn', 5, 5);
-- neighbours in embedding space mostly share the class
SELECT avg((s.id % 3 = 5 % 3)::int) > 0.6 AS same_class FROM gnn.similar('pp_gcn', 5, 20) s;

-- each run of a name adds a version; no version means the latest
SELECT gnn.train('pp', model => 'graphsage', name => 'pp_gcn', hidden => 8, epochs => 3, seed => 1,
                 wait => true) > :job AS later_job;
SELECT name, version, model FROM gnn.models WHERE graph = 'pp' ORDER BY version;
SELECT count(*) FROM gnn.predict('pp_gcn', version => 1);
SELECT gnn.drop_model('pp_gcn', 1);
SELECT name, version, model FROM gnn.models WHERE graph = 'pp' ORDER BY version;

-- a job started without waiting, then waited for
SELECT gnn.train('pp', model => 'gat', name => 'pp_gat', hidden => 4, epochs => 5, seed => 3,
                 options => '{"heads": 2}') AS job2 \gset
SELECT state, epoch, epochs FROM gnn.wait(:job2);
SELECT state FROM gnn.wait(:job2, '1 second');
SELECT gnn.cancel(:job2);

-- ---------------------------------------------------------------- bad input
SET client_min_messages = notice;
SELECT gnn.train('nope');
SELECT gnn.train('pp', model => 'transformer');
SELECT gnn.train('pp', task => 'regression');
SELECT gnn.train('pp', device => 'tpu');
SELECT gnn.train('pp', options => '{"fanouts": [10, 10], "colour": "blue"}');
SELECT gnn.train('pp', options => '{"aggregator": "median"}');
SELECT gnn.train('pp', options => '{"heads": 0}');
SELECT gnn.train('pp', options => '[1, 2]');
SELECT gnn.train('pp', epochs => 0);
SELECT gnn.train('pp', hidden => -1);
SELECT gnn.train('pp', dropout => 1.5);
SELECT gnn.train('pp', lr => 'NaN');
SELECT gnn.train('pp', name => '');
SELECT gnn.wait(987654);
SELECT gnn.cancel(987654);
SELECT * FROM gnn.predict('no_model');
SELECT gnn.embedding('pp_gcn', 999999);
SELECT gnn.embedding('pp_gcn', 1, version => 42);
SELECT * FROM gnn.similar('pp_gcn', 1, 0);
SELECT gnn.embed('pp_gcn', 'pp_emb', layer => 5);
SELECT gnn.embed('pp_gcn', 'no_such_table', "column" => 'x');
SELECT gnn.drop_model('no_model');
-- device => 'cuda' without a GPU fails the job (the reason depends on the machine)
DO $$ BEGIN
  PERFORM gnn.train('pp', model => 'gcn', device => 'cuda', epochs => 1, wait => true);
  RAISE NOTICE 'trained on a GPU';
EXCEPTION WHEN OTHERS THEN
  RAISE NOTICE 'failed as expected: %', CASE WHEN SQLERRM LIKE '%device => ''cuda'' was asked for%' OR SQLERRM LIKE '%trained on a GPU%'
                                             THEN 'no GPU' ELSE SQLERRM END;
END $$;
-- a graph without features (or labels) cannot train node classification: gnn.train refuses, no job starts
CREATE TABLE tiny (src int, dst int);
INSERT INTO tiny VALUES (1, 2), (2, 3);
SELECT name FROM gnn.load_graph('tiny', 'tiny');
SET client_min_messages = warning;
DO $$ BEGIN
  PERFORM gnn.train('tiny', model => 'gcn', epochs => 1, wait => true);
EXCEPTION WHEN OTHERS THEN
  RAISE WARNING 'failed: %', regexp_replace(SQLERRM, 'job [0-9]+', 'job N');  -- ids depend on earlier tests
END $$;
RESET client_min_messages;
SELECT state FROM gnn.jobs WHERE graph = 'tiny';

SELECT gnn.drop_graph('pp'), gnn.drop_graph('tiny');
-- models outlive the graph they were trained on
SELECT count(*) FROM gnn.models WHERE graph = 'pp';
SELECT * FROM gnn.predict('pp_gcn');
-- every gnn.train marks the jobs of an earlier server lifetime failed: it reads the
-- live rows' index, not the whole history
SET enable_seqscan = off;
EXPLAIN (COSTS OFF) UPDATE gnn.job_history SET state = 'failed'
WHERE state IN ('queued', 'running') AND instance IS DISTINCT FROM 1;
RESET enable_seqscan;
