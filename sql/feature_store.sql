-- Features on disk (feature_store => 'disk'): the feature matrix in the graph
-- store's features file, read through a cache smaller than it; training,
-- inference and write-back equal the same graph with its features in memory.
-- job notices name the device, which depends on the machine
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS gnn;
SELECT setseed(0.5);
CREATE TABLE fs_nodes AS
  SELECT id, (id % 3)::int AS label,
         CASE WHEN id < 300 THEN 'train' WHEN id < 450 THEN 'val' ELSE 'test' END AS split,
         (SELECT array_agg(CASE WHEN j % 3 = id % 3 THEN 0.5 ELSE 0 END + random()::real ORDER BY j)
            FROM generate_series(0, 31) j)::real[] AS feat
  FROM generate_series(0, 599) id;
CREATE TABLE fs_edges AS
  SELECT s.id AS src,
         CASE WHEN random() < 0.8 THEN ((random() * 199)::int * 3 + s.id % 3) % 600
              ELSE (random() * 599)::int END AS dst
  FROM fs_nodes s, generate_series(1, 4) k;

SELECT name, nodes, feature_dim FROM gnn.load_graph('fs_mem', 'fs_edges', nodes => 'fs_nodes', features => 'feat',
                                  label => 'label', split => 'split', undirected => true);
SELECT name, nodes, feature_dim FROM gnn.load_graph('fs_disk', 'fs_edges', nodes => 'fs_nodes', features => 'feat',
                                  label => 'label', split => 'split', undirected => true, feature_store => 'disk');
-- 'auto' keeps features that fit in memory there
SELECT name FROM gnn.load_graph('fs_auto', 'fs_edges', nodes => 'fs_nodes', features => 'feat', feature_store => 'auto');
-- the region of the disk graph holds no features: 600 x 32 floats fewer
SELECT name, feature_store, persisted, state FROM gnn.graphs WHERE name LIKE 'fs_%' ORDER BY name;
SELECT (SELECT bytes FROM gnn.graphs WHERE name = 'fs_mem') - (SELECT bytes FROM gnn.graphs WHERE name = 'fs_disk')
         >= 600 * 32 * 4 AS features_not_in_memory;
-- the graph's shared cache is made on its first use, as big as gnn.feature_cache_size says then
-- (8 kB: 64 of the 600 rows), and counted in gnn.memory_used(); the worker uses it too
SET gnn.feature_cache_size = '8kB';
SHOW gnn.feature_cache_size;
SELECT count(*) AS caches_before_first_use FROM gnn.feature_caches;
SELECT gnn.memory_used() AS memory_before \gset
-- the same graph, features included, read back through the store
SELECT gnn.graph_digest('fs_mem') = gnn.graph_digest('fs_disk') AS same_digest;
SELECT graph, capacity_rows, cached_rows, hits, misses, evictions,
       gnn.memory_used() - :memory_before = bytes AS counted_in_memory_used
FROM gnn.feature_caches;
-- its files: the graph and one features file of its version
SELECT f LIKE 'features-%.gnn' OR f = 'graph.gnn' AS known_file, count(*)
FROM pg_ls_dir('gnn/' || (SELECT oid FROM pg_database WHERE datname = current_database()) || '/' ||
               (SELECT oid FROM pg_roles WHERE rolname = current_user) || '_' || encode('fs_disk', 'hex')) f
GROUP BY 1 ORDER BY 1;

SELECT gnn.train(g, model => 'graphsage', name => g || '_sage', hidden => 16, epochs => 4, seed => 5,
                 options => '{"fanouts": [5, 5], "batch_size": 64}', wait => true) > 0 AS trained
FROM unnest(ARRAY['fs_mem', 'fs_disk']) g;
SELECT gnn.train(g, model => 'gcn', name => g || '_gcn', hidden => 16, epochs => 4, seed => 5, wait => true) > 0 AS trained
FROM unnest(ARRAY['fs_mem', 'fs_disk']) g;
-- every epoch's loss and accuracies are the same
SELECT m.model, count(*) AS epochs,
       bool_and(a.loss = b.loss AND a.val_acc = b.val_acc AND a.train_acc = b.train_acc) AS same_curve
FROM gnn.models m
JOIN gnn.training_log a ON a.job = m.job
JOIN gnn.models n ON n.name = replace(m.name, 'fs_disk', 'fs_mem')
JOIN gnn.training_log b ON b.job = n.job AND b.epoch = a.epoch
WHERE m.name LIKE 'fs_disk_%' GROUP BY m.model ORDER BY m.model;
-- evaluation on sampled neighbourhoods (for graphs whose features do not fit in the worker): equal too
SELECT gnn.train(g, model => 'graphsage', name => g || '_sampled', hidden => 16, epochs => 3, seed => 5,
                 options => '{"fanouts": [5, 5], "batch_size": 64, "evaluation": "sampled"}', wait => true) > 0 AS trained
FROM unnest(ARRAY['fs_mem', 'fs_disk']) g;
SELECT count(*) AS epochs, bool_and(a.loss = b.loss AND a.val_acc = b.val_acc) AS same_curve,
       bool_and(a.val_acc IS NOT NULL AND a.val_acc > 0) AS evaluated,
       bool_and(a.store_hit_rate < 1) AS read_through_the_store
FROM gnn.models m JOIN gnn.training_log a ON a.job = m.job
JOIN gnn.models n ON n.name = 'fs_mem_sampled' JOIN gnn.training_log b ON b.job = n.job AND b.epoch = a.epoch
WHERE m.name = 'fs_disk_sampled';
SELECT params->>'evaluation' AS evaluation FROM gnn.models WHERE name = 'fs_disk_sampled';
-- the store's counters per epoch on the disk graph, none on the memory graph
SELECT m.graph, m.model,
       bool_and(store_hit_rate >= 0 AND store_hit_rate < 1) AS hit_rate_measured,
       bool_and(store_bytes_read >= 0) AND sum(store_bytes_read) > 0 AS bytes_read,
       bool_and(store_read_amplification IS NULL OR store_read_amplification >= 1) AS amplification_at_least_1
FROM gnn.models m JOIN gnn.training_log l ON l.job = m.job
WHERE m.graph = 'fs_disk' GROUP BY 1, 2 ORDER BY 1, 2;
SELECT count(*) AS unmeasured_epochs, count(store_hit_rate) AS measured
FROM gnn.models m JOIN gnn.training_log l ON l.job = m.job WHERE m.graph = 'fs_mem';
-- the cache counted the training jobs' reads as well as this session's
SELECT graph, capacity_rows, cached_rows, hits > 0 AS hits, misses > 600 AS misses, hit_rate < 1 AS hit_rate_below_1
FROM gnn.feature_caches;

-- inference and write-back from disk equal memory's (a few nodes' scores within rounding: one
-- model's may come from its shared result, the other's from the nodes' neighbourhoods)
SELECT bool_and(a.label = b.label AND abs(a.score - b.score) < 1e-6) AS same_predictions, count(*)
FROM gnn.predict('fs_disk_sage', ARRAY[0, 7, 123, 599]::bigint[]) a
JOIN gnn.predict('fs_mem_sage', ARRAY[0, 7, 123, 599]::bigint[]) b USING (id);
SELECT bool_and(a.label = b.label AND a.score = b.score) AS same_predictions, count(*)
FROM gnn.predict('fs_disk_gcn') a JOIN gnn.predict('fs_mem_gcn') b USING (id);
SELECT gnn.embed('fs_disk_sage', 'fs_emb_disk'), gnn.embed('fs_mem_sage', 'fs_emb_mem');
SELECT count(*), bool_and(d.embedding = m.embedding) AS same_embeddings
FROM fs_emb_disk d JOIN fs_emb_mem m USING (id);
SELECT gnn.embedding('fs_disk_gcn', 42) = gnn.embedding('fs_mem_gcn', 42) AS same_embedding;

-- replaced by a version with features in memory: the features file goes
SELECT name FROM gnn.load_graph('fs_disk', 'fs_edges', nodes => 'fs_nodes', features => 'feat', replace => true);
SELECT feature_store FROM gnn.graphs WHERE name = 'fs_disk';
SELECT count(*) AS caches_left FROM gnn.feature_caches;
SELECT count(*) AS features_files
FROM pg_ls_dir('gnn/' || (SELECT oid FROM pg_database WHERE datname = current_database()) || '/' ||
               (SELECT oid FROM pg_roles WHERE rolname = current_user) || '_' || encode('fs_disk', 'hex')) f
WHERE f LIKE 'features-%';
-- kept in memory only (persist => false), its features still on disk; a drop removes them
SELECT name FROM gnn.load_graph('fs_tmp', 'fs_edges', nodes => 'fs_nodes', features => 'feat',
                                persist => false, feature_store => 'disk');
SELECT persisted, feature_store FROM gnn.graphs WHERE name = 'fs_tmp';
-- one cache for every session: rows one session read are hits in the next (a cache that holds all 600)
SET gnn.feature_cache_size = '1MB';
SELECT gnn.graph_digest('fs_tmp') = gnn.graph_digest('fs_auto') AS same_digest;
SELECT capacity_rows, cached_rows, hits, misses FROM gnn.feature_caches WHERE graph = 'fs_tmp';
\c
SET client_min_messages = warning;
SELECT gnn.graph_digest('fs_tmp') = gnn.graph_digest('fs_auto') AS same_digest;
SELECT capacity_rows, cached_rows, hits, misses FROM gnn.feature_caches WHERE graph = 'fs_tmp';
-- a session with gnn.feature_cache_size = 0 reads past it, from the file
\c
SET client_min_messages = warning;
SET gnn.feature_cache_size = 0;
SELECT gnn.graph_digest('fs_tmp') = gnn.graph_digest('fs_auto') AS same_digest;
SELECT hits, misses FROM gnn.feature_caches WHERE graph = 'fs_tmp';
RESET gnn.feature_cache_size;
-- a drop frees the region and the cache: both in the graph's bytes in gnn.graphs
SELECT gnn.memory_used() - (SELECT bytes FROM gnn.graphs WHERE name = 'fs_tmp') AS memory_after_drop \gset
SELECT gnn.drop_graph('fs_tmp');
SELECT gnn.memory_used() = :memory_after_drop AS region_and_cache_freed;
SELECT count(*) AS dirs_left
FROM pg_ls_dir('gnn/' || (SELECT oid FROM pg_database WHERE datname = current_database())) d
WHERE d LIKE '%\_' || encode('fs_tmp', 'hex');

-- features bound for disk never sit in the loading backend: they go to a temporary file as the
-- table is read, and from it to the features file in passes of maintenance_work_mem (at least the
-- writer's 4 MB chunk: 4 passes over 12.8 MB here); text keys, whose rows are renumbered after
-- the scan, too
CREATE TABLE fs_big AS
  SELECT 'n' || id AS id, array_fill(((id * 7) % 1009)::real, ARRAY[256]) AS feat FROM generate_series(0, 12499) id;
CREATE TABLE fs_big_e AS SELECT 'n' || id AS src, 'n' || ((id * 31 + 7) % 12500) AS dst FROM generate_series(0, 12499) id;
SET maintenance_work_mem = '1MB';
SELECT name, nodes FROM gnn.load_graph('fs_big_disk', 'fs_big_e', nodes => 'fs_big', features => 'feat',
                                       feature_store => 'disk', persist => false);
RESET maintenance_work_mem;
SELECT name FROM gnn.load_graph('fs_big_mem', 'fs_big_e', nodes => 'fs_big', features => 'feat', persist => false);
SELECT gnn.graph_digest('fs_big_disk') = gnn.graph_digest('fs_big_mem') AS same_digest;
SELECT gnn.drop_graph('fs_big_disk'), gnn.drop_graph('fs_big_mem');
-- 'auto' spills when the table's estimate would not fit, and reads the rows back when the table
-- turns out smaller than its statistics said (12500 rows analysed, 1000 left: 12.8 MB expected, 1 MB
-- read, 2 MB free)
ALTER TABLE fs_big SET (autovacuum_enabled = false);
ANALYZE fs_big;
DELETE FROM fs_big WHERE substr(id, 2)::int >= 1000;
SELECT set_config('gnn.max_graph_memory', (gnn.memory_used() / 1048576 + 2)::text || 'MB', false) IS NOT NULL AS set;
SELECT name, nodes FROM gnn.load_graph('fs_big_auto', 'fs_big_e', nodes => 'fs_big', features => 'feat',
                                       feature_store => 'auto', persist => false, skip_dangling => true);
RESET gnn.max_graph_memory;
SELECT name FROM gnn.load_graph('fs_big_mem', 'fs_big_e', nodes => 'fs_big', features => 'feat', persist => false,
                                skip_dangling => true);
SELECT feature_store FROM gnn.graphs WHERE name = 'fs_big_auto';
SELECT gnn.graph_digest('fs_big_auto') = gnn.graph_digest('fs_big_mem') AS same_digest;
SELECT gnn.drop_graph('fs_big_auto'), gnn.drop_graph('fs_big_mem');

-- a schema graph encodes its columns as sparse rows: they stay in memory (a clear error for 'disk',
-- memory for 'auto')
CREATE TABLE fs_shop (id text PRIMARY KEY, size int, open boolean);
CREATE TABLE fs_sale (id bigint PRIMARY KEY, shop text REFERENCES fs_shop, amount numeric, kind text);
INSERT INTO fs_shop SELECT 's' || i, i * 3 % 17, i % 2 = 0 FROM generate_series(1, 40) i;
INSERT INTO fs_sale SELECT i, 's' || (1 + i % 40), (i * 7 % 100) / 3.0, (ARRAY['a', 'b', 'c'])[1 + i % 3]
FROM generate_series(1, 500) i;
SELECT name, nodes, feature_dim FROM gnn.load_schema_graph('fs_schema_mem', ARRAY['fs_shop', 'fs_sale']::regclass[]);
SELECT name, nodes, feature_dim FROM gnn.load_schema_graph('fs_schema_disk', ARRAY['fs_shop', 'fs_sale']::regclass[],
                                                           options => '{"feature_store": "disk"}');
SELECT name FROM gnn.load_schema_graph('fs_schema_auto', ARRAY['fs_shop', 'fs_sale']::regclass[],
                                       options => '{"feature_store": "auto"}');
SELECT name, features, feature_store FROM gnn.graphs WHERE name LIKE 'fs_schema%' ORDER BY name;

-- bad input
RESET client_min_messages;
\set VERBOSITY default
SELECT gnn.load_graph('fs_bad', 'fs_edges', nodes => 'fs_nodes', features => 'feat', feature_store => 'ssd');
SELECT gnn.load_graph('fs_bad', 'fs_edges', nodes => 'fs_nodes', label => 'label', feature_store => 'disk');
SELECT gnn.load_graph('fs_bad', 'fs_edges', feature_store => 'disk');
SELECT gnn.load_graph('fs_bad', 'fs_edges', nodes => 'fs_nodes', features => 'feat', feature_store => 'disk',
                      track => true);
SELECT name FROM gnn.load_graph('fs_disk', 'fs_edges', nodes => 'fs_nodes', features => 'feat', replace => true,
                                feature_store => 'disk');
SELECT gnn.track('fs_disk');
SELECT gnn.train('fs_disk', options => '{"evaluation": "partial"}');
SELECT gnn.load_schema_graph('fs_bad', ARRAY['fs_shop']::regclass[], options => '{"feature_store": true}');
SELECT count(*) FROM gnn.graphs WHERE name = 'fs_bad';
SET gnn.feature_cache_size = -1;
\set VERBOSITY terse
RESET gnn.feature_cache_size;

SET client_min_messages = warning;
SELECT gnn.drop_graph(name) FROM gnn.graphs WHERE name LIKE 'fs_%' ORDER BY name;
