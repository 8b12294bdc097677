-- Partitioning (issue 7): gnn.partition and gnn.partition_stats on a
-- generated planted-partition graph (METIS against streaming and random),
-- determinism with a seed, the assignment kept with the graph, errors, and
-- Cluster-GCN / GraphSAINT training jobs.
CREATE EXTENSION IF NOT EXISTS gnn;
SET client_min_messages = warning;
SELECT setseed(0.5);
-- four blocks of 150 nodes, 90% of edges inside a block; the label is the block
CREATE TABLE pt_nodes AS
  SELECT id, (id % 4)::int AS label,
         CASE WHEN id % 5 = 0 THEN 'train' WHEN id % 5 = 1 THEN 'val' ELSE 'test' END AS split,
         (SELECT array_agg(CASE WHEN j % 4 = id % 4 THEN 0.4 ELSE 0 END + random()::real ORDER BY j)
            FROM generate_series(0, 11) j)::real[] AS feat
  FROM generate_series(0, 599) id;
CREATE TABLE pt_edges AS
  SELECT s.id AS src,
         CASE WHEN random() < 0.9 THEN ((random() * 149)::int * 4 + s.id % 4) % 600
              ELSE (random() * 599)::int END AS dst
  FROM pt_nodes s, generate_series(1, 4) k;
DELETE FROM pt_edges WHERE src = dst;
SELECT nodes FROM gnn.load_graph('pt', 'pt_edges', nodes => 'pt_nodes', features => 'feat',
                                 label => 'label', split => 'split', undirected => true);

-- no partition yet
SELECT * FROM gnn.partition_stats('pt');
SELECT bytes AS bytes_unpartitioned FROM gnn.graphs WHERE name = 'pt' \gset

-- METIS: every node once, four parts, the planted blocks found
CREATE TABLE p1 AS SELECT * FROM gnn.partition('pt', 4, seed => 1);
SELECT count(*) AS nodes, count(DISTINCT node) AS distinct_nodes, count(DISTINCT part) AS parts,
       min(part) AS lo, max(part) AS hi FROM p1;
SELECT avg(share) > 0.9 AS blocks_recovered FROM (
  SELECT max(c)::float / sum(c) AS share FROM (
    SELECT n.label, p.part, count(*) AS c FROM p1 p JOIN pt_nodes n ON n.id = p.node GROUP BY 1, 2) t
  GROUP BY label) s;
-- same seed, same assignment
CREATE TABLE p2 AS SELECT * FROM gnn.partition('pt', 4, seed => 1);
SELECT count(*) AS differing FROM p1 JOIN p2 USING (node) WHERE p1.part <> p2.part;
-- the partition (a part per node, kept with the graph) is the graph's memory: in its bytes
-- (gnn.graphs' bytes add up to gnn.memory_used(); the SQL fuzzer checks that after its run)
SELECT bytes - :bytes_unpartitioned BETWEEN 4 * 600 AND 4 * 600 + 1024 AS partition_in_bytes
FROM gnn.graphs WHERE name = 'pt';

-- statistics: a row per part and an overall row
SELECT part, nodes > 0 AS has_nodes, edges >= edges_cut AS cut_le_edges, train_nodes > 0 AS has_train,
       halo_nodes > 0 AS has_halo, method, seconds IS NULL AS per_part
FROM gnn.partition_stats('pt') WHERE part IS NOT NULL ORDER BY part;
SELECT nodes, train_nodes, cut_fraction < 0.2 AS low_cut, balance_nodes <= 1.031 AS nodes_balanced,
       balance_train <= 1.10 AS train_balanced, seconds >= 0 AS timed, method
FROM gnn.partition_stats('pt') WHERE part IS NULL;
SELECT sum(nodes) AS nodes, sum(edges) = (SELECT edges FROM gnn.partition_stats('pt') WHERE part IS NULL) AS edges_add_up
FROM gnn.partition_stats('pt') WHERE part IS NOT NULL;
CREATE TABLE cut_metis AS SELECT cut_fraction FROM gnn.partition_stats('pt') WHERE part IS NULL;

-- streaming and random against METIS (the last call is the one kept)
SELECT count(*) FROM gnn.partition('pt', 4, method => 'random', balance => '{nodes}', seed => 1);
SELECT method, cut_fraction > 2 * (SELECT cut_fraction FROM cut_metis) AS random_cuts_more
FROM gnn.partition_stats('pt') WHERE part IS NULL;
SELECT count(*) FROM gnn.partition('pt', 4, method => 'streaming', seed => 1);
SELECT method, cut_fraction >= (SELECT cut_fraction FROM cut_metis) AS not_below_metis,
       balance_nodes <= 1.06 AS capacities_hold
FROM gnn.partition_stats('pt') WHERE part IS NULL;
-- communication-volume objective and three constraints
SET gnn.partition_objective = 'volume';
SELECT count(DISTINCT part) FROM gnn.partition('pt', 3, balance => '{nodes,train,edges}', seed => 2);
SELECT count(*) AS rows, bool_and(part IS NULL OR part < 3) AS three_parts,
       max(balance_edges) FILTER (WHERE part IS NULL) <= 1.05 AS edges_balanced
FROM gnn.partition_stats('pt');
RESET gnn.partition_objective;

-- errors
SELECT * FROM gnn.partition('pt', 1);
SELECT * FROM gnn.partition('pt', 601);
SELECT * FROM gnn.partition('pt', 4, method => 'kernighan_lin');
SELECT * FROM gnn.partition('pt', 4, balance => '{nodes,weight}');
SELECT * FROM gnn.partition('nope', 4);
SET gnn.max_partition_memory = '64kB';
SELECT count(*) FROM gnn.partition('pt', 4);
SELECT count(*) FROM gnn.partition('pt', 4, method => 'streaming');
RESET gnn.max_partition_memory;
CREATE TABLE nt_edges AS SELECT src, dst FROM pt_edges;
SELECT nodes FROM gnn.load_graph('nt', 'nt_edges');
SELECT * FROM gnn.partition('nt', 2);
SELECT count(DISTINCT part) FROM gnn.partition('nt', 2, balance => '{nodes}', seed => 1);
-- a replaced or dropped graph loses its partition
SELECT nodes FROM gnn.load_graph('nt', 'nt_edges', replace => true);
SELECT * FROM gnn.partition_stats('nt');
SELECT gnn.drop_graph('nt');

-- Cluster-GCN on the stored partition (8 parts, 2 per batch) and GraphSAINT
SELECT count(*) FROM gnn.partition('pt', 8, seed => 3);
SELECT gnn.train('pt', model => 'gcn', name => 'pt_cluster', hidden => 16, epochs => 60, seed => 1,
                 wait => true, options => '{"sampler": "cluster", "clusters_per_batch": 2}') AS job \gset
SELECT state, error IS NULL AS no_error FROM gnn.jobs WHERE id = :job;
SELECT (metrics->>'test_acc')::float > 0.9 AS accurate, params->>'sampler' AS sampler
FROM gnn.models WHERE name = 'pt_cluster';
SELECT gnn.train('pt', model => 'graphsage', name => 'pt_saint', hidden => 16, epochs => 60, seed => 1,
                 wait => true, options => '{"sampler": "saint_rw", "walk_length": 2, "roots": 30, "presample": 40}') AS job \gset
SELECT state, error IS NULL AS no_error FROM gnn.jobs WHERE id = :job;
SELECT (metrics->>'test_acc')::float > 0.9 AS accurate, params->>'sampler' AS sampler,
       params->>'walk_length' AS walk_length
FROM gnn.models WHERE name = 'pt_saint';
SELECT gnn.train('pt', options => '{"sampler": "bogus"}');
SELECT gnn.train('pt', options => '{"sampler": "cluster", "num_parts": 1}');
SELECT gnn.train('pt', options => '{"sampler": "saint_rw", "walk_length": 0}');
SELECT gnn.drop_graph('pt');
