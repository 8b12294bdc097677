-- gnn.estimate: a job's memory before it runs, itemised; checked against the
-- heap peak each job measured (metrics.peak_memory_bytes): within 2x either
-- way, for full-batch, minibatch, attention and link-prediction jobs.
-- gnn.max_job_memory refuses a job whose estimate is over it.  Its own
-- graph: no data files needed.
CREATE EXTENSION IF NOT EXISTS gnn;
CREATE TABLE est_nodes AS
  SELECT i AS id, i % 5 AS label,
         CASE WHEN i % 10 < 6 THEN 'train' WHEN i % 10 < 8 THEN 'val' ELSE 'test' END AS split,
         ARRAY(SELECT ((i * 7919 + j * 104729) % 1000) / 1000.0 + CASE WHEN j % 5 = i % 5 THEN 0.5 ELSE 0 END
               FROM generate_series(1, 128) j)::real[] AS x
  FROM generate_series(0, 5999) i;
CREATE TABLE est_edges AS
  SELECT i AS src, (i * 31 + k * 977) % 6000 AS dst
  FROM generate_series(0, 5999) i, generate_series(1, 5) k;
SELECT nodes, edges, feature_dim FROM gnn.load_graph('est', 'est_edges', nodes => 'est_nodes', features => 'x',
                                                    label => 'label', split => 'split', undirected => true);

-- the items of a full-batch GCN on the CPU: every item has bytes and a note; the job's total is
-- their sum, but for those held after the job is reported (its results pass: with the model, 'total after')
SELECT item, bytes > 0 AS has_bytes, note <> '' AS has_note
FROM gnn.estimate('est', device => 'cpu');
WITH e AS (SELECT * FROM gnn.estimate('est', device => 'cpu'))
SELECT (SELECT bytes FROM e WHERE item = 'total host') =
       (SELECT sum(bytes) FROM e WHERE item NOT LIKE 'total %' AND note NOT LIKE 'after the job%') AS total_is_sum,
       (SELECT bytes FROM e WHERE item = 'total after') =
       (SELECT sum(bytes) FROM e WHERE note LIKE 'after the job%' OR item = 'parameters') AS after_is_sum,
       (SELECT string_agg(item, ', ' ORDER BY item) FROM e WHERE note LIKE 'after the job%') AS after_items;
-- wider and deeper needs more; minibatch training has the sampler's buffers
SELECT (SELECT bytes FROM gnn.estimate('est', 'gcn', 256, 3, device => 'cpu') WHERE item = 'total host') >
       (SELECT bytes FROM gnn.estimate('est', 'gcn', 16, 2, device => 'cpu') WHERE item = 'total host') AS wider_needs_more,
       (SELECT bytes FROM gnn.estimate('est', 'graphsage', 256, 3, '{"fanouts": [5, 5, 5], "batch_size": 64}', 'cpu')
        WHERE item = 'sampler buffers') > 0 AS minibatch_has_sampler;
-- on a GPU the model, features and activations are device items; 'auto' adds the GPU total it decides with
SELECT count(*) FILTER (WHERE item LIKE 'gpu: %') > 3 AS device_items,
       count(*) FILTER (WHERE item = 'total gpu') AS gpu_total
FROM gnn.estimate('est', 'graphsage', 64, device => 'cuda');
SELECT item FROM gnn.estimate('est', 'graphsage', 64) WHERE item LIKE 'total%' ORDER BY item;
-- the defaults are gnn.train's (GraphSAGE, hidden 64, 2 layers): the job an unadorned gnn.train('est') starts
SELECT (SELECT bytes FROM gnn.estimate('est', device => 'cpu') WHERE item = 'total host') =
       (SELECT bytes FROM gnn.estimate('est', 'graphsage', 64, 2, device => 'cpu') WHERE item = 'total host')
       AS defaults_are_trains;
-- gnn.train's arguments are checked the same way
SELECT * FROM gnn.estimate('est', 'nosuchmodel');
SELECT * FROM gnn.estimate('est', options => '{"fanouts": [10]}');
SELECT * FROM gnn.estimate('nosuchgraph');

-- the estimate against the peak each job measured
CREATE TEMP TABLE est_jobs (name text, model text, hidden int, layers int, options jsonb);
INSERT INTO est_jobs VALUES
  ('est_gcn', 'gcn', 16, 2, '{}'),
  ('est_gcn_wide', 'gcn', 128, 3, '{}'),
  ('est_gat', 'gat', 8, 2, '{}'),
  ('est_sage_mb', 'graphsage', 64, 2, '{"fanouts": [10, 5], "batch_size": 256}'),
  ('est_link', 'graphsage', 32, 2, '{"task": "link_prediction"}');
SELECT j.name, gnn.train('est', j.model, coalesce(j.options->>'task', 'node_classification'), j.name,
                         j.hidden, j.layers, epochs => 3, device => 'cpu', seed => 1, wait => true,
                         options => j.options - 'task') > 0 AS trained
FROM est_jobs j ORDER BY j.name;
SELECT j.name,
       (m.metrics->>'peak_memory_bytes')::bigint > 0 AS measured,
       e.bytes::float8 / (m.metrics->>'peak_memory_bytes')::float8 BETWEEN 0.5 AND 2 AS within_2x
FROM est_jobs j
JOIN gnn.models m ON m.name = j.name
CROSS JOIN LATERAL gnn.estimate('est', j.model, j.hidden, j.layers, j.options, 'cpu') e
WHERE e.item = 'total host'
ORDER BY j.name;

-- evaluation's kept rows (a minibatch job's layer-0 rows reused within a
-- pass) are a saving, not a need: counted by the estimate, and a job over
-- gnn.max_job_memory only with them runs without them; over it without
-- them too, it is refused.  (hidden 256: the kept rows are then a quarter
-- of the estimate, and the job measures well under a cap half of them
-- below it)
SELECT gnn.train('est', 'graphsage', name => 'est_reuse', hidden => 256, epochs => 1, device => 'cpu', wait => true,
                 options => '{"fanouts": [5, 5]}') > 0 AS trained;
SELECT (metrics->>'eval_rows_reused')::bigint > 0 AS reused, (metrics->>'eval_rows_computed')::bigint > 0 AS computed
FROM gnn.models WHERE name = 'est_reuse';
CREATE TEMP TABLE est_mb AS
  SELECT item, bytes FROM gnn.estimate('est', 'graphsage', 256, 2, '{"fanouts": [5, 5]}', 'cpu');
SELECT bytes > 0 AS kept_rows_counted FROM est_mb WHERE item = 'evaluation''s kept rows';
-- gnn.train takes the kept rows at their bound first (no pass over the
-- graph's degrees), and counts them as gnn.estimate does only where the
-- bound is over the cap: a cap just over the counted estimate runs the job
-- keeping rows
SELECT set_config('gnn.max_job_memory', (t.bytes / 1024 + 1)::text || 'kB', false) IS NOT NULL AS capped
FROM est_mb t WHERE t.item = 'total host';
SELECT gnn.train('est', 'graphsage', name => 'est_reuse_cap', hidden => 256, epochs => 1, device => 'cpu', wait => true,
                 options => '{"fanouts": [5, 5]}') > 0 AS trained;
SELECT (metrics->>'eval_rows_reused')::bigint > 0 AS reused FROM gnn.models WHERE name = 'est_reuse_cap';
SELECT set_config('gnn.max_job_memory', ((t.bytes - k.bytes / 2) / 1024)::text || 'kB', false) IS NOT NULL AS capped
FROM est_mb t, est_mb k WHERE t.item = 'total host' AND k.item = 'evaluation''s kept rows';
SELECT gnn.train('est', 'graphsage', name => 'est_noreuse', hidden => 256, epochs => 1, device => 'cpu', wait => true,
                 options => '{"fanouts": [5, 5]}') > 0 AS trained;
SELECT metrics ? 'eval_rows_reused' AS reused, (metrics->>'test_nodes')::bigint > 0 AS tested
FROM gnn.models WHERE name = 'est_noreuse';
SELECT set_config('gnn.max_job_memory', ((t.bytes - k.bytes * 2) / 1024)::text || 'kB', false) IS NOT NULL AS capped
FROM est_mb t, est_mb k WHERE t.item = 'total host' AND k.item = 'evaluation''s kept rows';
DO $$
BEGIN
  PERFORM gnn.train('est', 'graphsage', name => 'est_refused', hidden => 256, epochs => 1, device => 'cpu', wait => true,
                    options => '{"fanouts": [5, 5]}');
  RAISE NOTICE 'not refused';
EXCEPTION WHEN program_limit_exceeded THEN
  RAISE NOTICE 'refused: over gnn.max_job_memory without the kept rows too';
END $$;
RESET gnn.max_job_memory;

-- the cap: refused before a worker starts, with the estimate in the error
SET gnn.max_job_memory = '1MB';
SELECT gnn.train('est', 'gcn', hidden => 16, epochs => 1, device => 'cpu', wait => true);
SELECT note FROM gnn.estimate('est') WHERE item = 'total host';
SET gnn.max_job_memory = '1GB';
SELECT gnn.train('est', 'gcn', name => 'est_capped', hidden => 16, epochs => 1, device => 'cpu', wait => true) > 0 AS trained;
RESET gnn.max_job_memory;
SELECT gnn.drop_graph('est');
DROP TABLE est_nodes, est_edges;
