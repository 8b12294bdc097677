#!/usr/bin/env bash
# make demo: a throwaway cluster that loads a graph (Cora from ../shared/data,
# else a generated planted-partition graph) and shows what gnn does with it.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
make_workdir DIR
PORT=$(free_port)
cleanup() { pg_stop "$DIR"; rm -rf "$DIR"; }
trap cleanup EXIT
pg_start "$DIR" "$PORT"
PSQL=(su postgres -s /bin/bash -c "'$PG_BINDIR/psql' -X -h '$DIR' -p $PORT -d postgres -v ON_ERROR_STOP=1 -P pager=off")
run_sql() { "${PSQL[@]}" ; }

if DATA=$(gnn_data_dir); then
  echo "== loading Cora from $DATA"
  cat <<SQL | run_sql
CREATE EXTENSION gnn;
CREATE TABLE papers (id int PRIMARY KEY, label int, split text);
CREATE TABLE cites (src int, dst int);
CREATE TABLE words (id int, feature int, value real);
\copy papers FROM '$DATA/cora/nodes.csv' WITH (FORMAT csv, HEADER true)
\copy cites FROM '$DATA/cora/edges.csv' WITH (FORMAT csv, HEADER true)
\copy words FROM '$DATA/cora/features_coo.csv' WITH (FORMAT csv, HEADER true)
\timing on
SELECT * FROM gnn.load_graph('cora', edges => 'cites', nodes => 'papers', label => 'label',
                             split => 'split', sparse_features => 'words', undirected => true);
\timing off
SQL
  G=cora; NODE=35; NODES_TABLE=papers
else
  echo "== ../shared/data not found: generating a planted-partition graph"
  { echo "CREATE EXTENSION gnn;"; cat "$REPO_ROOT/test/planted_partition.sql";
    echo "SELECT * FROM gnn.load_graph('planted', edges => 'pp_edges', nodes => 'pp_nodes', features => 'feat',
                                   label => 'label', split => 'split', undirected => true);"; } | run_sql
  G=planted; NODE=7; NODES_TABLE=pp_nodes
fi

cat <<SQL | run_sql
\echo == what is loaded (gnn.graphs)
SELECT name, owner, nodes, edges, feature_dim, features, classes, train, val, test,
       pg_size_pretty(bytes) AS size FROM gnn.graphs;
\echo == degree distribution
SELECT width_bucket(gnn.degree('$G', n), 0, 20, 4) AS bucket, min(gnn.degree('$G', n)) AS min_degree,
       max(gnn.degree('$G', n)) AS max_degree, count(*) AS nodes
FROM (SELECT ids AS n FROM generate_series(0, 99) ids) s GROUP BY 1 ORDER BY 1;
\echo == neighbours of node $NODE
SELECT * FROM gnn.neighbors('$G', $NODE) ORDER BY neighbor LIMIT 10;
SQL
cat <<SQL | run_sql
\echo == neighbour sampling (fan-outs 5 then 3 around node $NODE, seeded) and a node2vec walk
SELECT layer, count(*) AS sampled_edges, count(DISTINCT src) AS sources FROM gnn.sample_neighbors('$G', ARRAY[$NODE]::bigint[], ARRAY[5, 3], seed => 7)
GROUP BY layer ORDER BY layer;
SELECT walk, string_agg(node::text, ' -> ' ORDER BY step) AS path
FROM gnn.random_walk('$G', ARRAY[$NODE]::bigint[], 6, p => 1, q => 0.5, seed => 7) GROUP BY walk;
\echo == METIS partitioning into 4 parts, balanced on nodes and training nodes
SELECT part, count(*) AS nodes FROM gnn.partition('$G', 4, seed => 1) GROUP BY part ORDER BY part;
SELECT coalesce(part::text, 'all') AS part, nodes, train_nodes, edges_cut, halo_nodes,
       round(cut_fraction::numeric, 3) AS cut_fraction, round(balance_nodes::numeric, 3) AS balance_nodes
FROM gnn.partition_stats('$G') ORDER BY part NULLS LAST;
\echo == Cluster-GCN: training on random unions of METIS clusters
SELECT gnn.train('$G', model => 'gcn', name => '${G}_cluster', hidden => 64, epochs => 20, seed => 1, wait => true,
                 options => '{"sampler": "cluster", "num_parts": 40, "clusters_per_batch": 5}') AS job;
SELECT name, metrics->>'test_acc' AS test_acc FROM gnn.models WHERE name = '${G}_cluster';
\echo == minibatch GraphSAGE on sampled blocks (fan-outs 10, 10; batch 64)
SELECT gnn.train('$G', model => 'graphsage', name => '${G}_sage', hidden => 64, epochs => 20, seed => 1, wait => true,
                 options => '{"fanouts": [10, 10], "batch_size": 64}') AS job;
SELECT name, metrics->>'test_acc' AS test_acc, metrics->>'batches' AS batches FROM gnn.models WHERE name = '${G}_sage';
SQL

cat <<SQL | run_sql
\echo == what the job will hold, before it runs (gnn.estimate), and what it held (metrics.peak_memory_bytes)
SELECT item, pg_size_pretty(bytes) AS size, note FROM gnn.estimate('$G', 'gcn', 16);
\echo == train a GCN in a background worker (gnn.train ... wait => true)
\timing on
SELECT gnn.train('$G', model => 'gcn', name => '${G}_gcn', hidden => 16, epochs => 200, seed => 1, wait => true) AS job;
\timing off
SELECT id, model_name, state, epoch || '/' || epochs AS progress, round(loss::numeric, 3) AS loss,
       round(val_acc::numeric, 3) AS val_acc, device FROM gnn.jobs;
\echo == the model catalog
SELECT name, version, model, metrics->>'test_acc' AS test_acc, metrics->>'best_epoch' AS best_epoch,
       pg_size_pretty(length(weights)::bigint) AS weights,
       pg_size_pretty((metrics->>'peak_memory_bytes')::bigint) AS peak_memory FROM gnn.models;
\echo == predictions scored against the labels by SQL (test split)
SELECT round(avg((p.label = n.label)::int), 4) AS test_accuracy, count(*) AS test_nodes
FROM gnn.predict('${G}_gcn') p JOIN $NODES_TABLE n USING (id) WHERE n.split = 'test';
\echo == embeddings written back into a table, then queried with plain SQL
SELECT gnn.embed('${G}_gcn', '${G}_embeddings') AS rows_written;
SELECT id, array_length(embedding, 1) AS dim, embedding[1:4] AS first_values FROM ${G}_embeddings ORDER BY id LIMIT 3;
\echo == the nodes most similar to node $NODE, and their classes
SELECT s.id, round(s.score::numeric, 3) AS cosine, n.label FROM gnn.similar('${G}_gcn', $NODE, 5) s
JOIN $NODES_TABLE n USING (id) ORDER BY s.score DESC;
\echo == serving: the training worker shared the results; every session reads them (gnn.cache)
SELECT model, kind, layer, nodes, dim, pg_size_pretty(bytes) AS size, hits FROM gnn.cache WHERE model = '${G}_gcn' ORDER BY kind;
\echo == with nothing cached, a few nodes are computed exactly on their neighbourhood, in milliseconds
SELECT gnn.cache_drop('${G}_gcn') AS results_dropped;
\timing on
SELECT id, label, round(score::numeric, 3) AS probability FROM gnn.predict('${G}_gcn', ARRAY[$NODE, $NODE + 1]::bigint[]);
\timing off
SELECT count(*) AS cached_results FROM gnn.cache WHERE model = '${G}_gcn';
\echo == a job starts when its transaction commits: rolled back, nothing runs
BEGIN;
SELECT gnn.train('$G', model => 'gcn', name => 'never', epochs => 5) > 0 AS queued;
SELECT model_name, state FROM gnn.jobs WHERE model_name = 'never';
ROLLBACK;
SELECT count(*) AS jobs_named_never FROM gnn.jobs WHERE model_name = 'never';
\echo == names are per role: another role has its own '$G', and cannot reach ours
CREATE ROLE demo_other LOGIN;
GRANT SELECT ON $NODES_TABLE TO demo_other;
SET ROLE demo_other;
DO \$\$ BEGIN PERFORM gnn.degree('$G', $NODE);
EXCEPTION WHEN undefined_object THEN RAISE NOTICE 'demo_other asks for $G: %', SQLERRM; END \$\$;
SELECT name, nodes FROM gnn.load_graph('$G', '$NODES_TABLE', src => 'id', dst => 'id');
SELECT name, owner, nodes, edges FROM gnn.graphs;
SELECT gnn.drop_graph('$G');
RESET ROLE;
SELECT name, owner, nodes, edges FROM gnn.graphs;
SQL
cat <<'SQL' | run_sql
\echo == a graph that follows its tables: capture, refresh, and rewrite only the embeddings that changed
SET client_min_messages = warning;
SELECT setseed(0.5);
CREATE TABLE users (id bigint PRIMARY KEY, feat real[] NOT NULL, label int, split text);
INSERT INTO users SELECT i, ARRAY[random(), random(), (i % 4) / 4.0 + random() / 4]::real[], i % 4,
       (ARRAY['train', 'train', 'val', 'test'])[1 + i % 4] FROM generate_series(1, 5000) i;
CREATE TABLE follows (follower bigint NOT NULL REFERENCES users ON DELETE CASCADE,
                      followee bigint NOT NULL REFERENCES users ON DELETE CASCADE);
INSERT INTO follows SELECT i, 1 + ((i + k * k * 37) % 5000) FROM generate_series(1, 5000) i, generate_series(1, 4) k;
SELECT name, nodes, edges FROM gnn.load_graph('social', edges => 'follows', src => 'follower', dst => 'followee',
    nodes => 'users', features => 'feat', label => 'label', split => 'split', track => true);
SELECT gnn.train('social', model => 'graphsage', name => 'social_sage', hidden => 16, epochs => 10, seed => 1,
                 wait => true) > 0 AS trained;
SELECT gnn.embed('social_sage', 'user_embeddings') AS rows_written;
\echo == rows change as usual; the graph notes them (gnn.graphs.pending_changes)
INSERT INTO follows SELECT i, i + 1 FROM generate_series(1, 50) i;
DELETE FROM follows WHERE follower BETWEEN 100 AND 110;
UPDATE users SET feat = '{1, 1, 1}' WHERE id = 42;
INSERT INTO users VALUES (5001, '{0.5, 0.5, 0.5}', 1, 'train');
INSERT INTO follows VALUES (5001, 1), (2, 5001);
SELECT name, edges, tracked, pending_changes FROM gnn.graphs WHERE name = 'social';
SELECT inserted_edges, deleted_edges, inserted_nodes, deleted_nodes, updated_nodes FROM gnn.refresh_graph('social');
SELECT name, nodes, edges, pending_changes, refreshed_at IS NOT NULL AS refreshed FROM gnn.graphs WHERE name = 'social';
\echo == only the rows the changes can reach through the model are recomputed
SET client_min_messages = notice;
SELECT gnn.embed('social_sage', 'user_embeddings', incremental => true) AS rows_rewritten;
SET client_min_messages = warning;
SELECT gnn.embed('social_sage', 'user_embeddings_full') AS full_rows;
SELECT count(DISTINCT id) AS rows, max(abs(x - y)) < 1e-5 AS equal_to_a_full_write
FROM user_embeddings a JOIN user_embeddings_full b USING (id), unnest(a.embedding, b.embedding) u(x, y);
\echo == follows between existing users stay a delta over the loaded graph, read in place
INSERT INTO follows SELECT i, i + 7 FROM generate_series(200, 260) i;
SELECT inserted_edges FROM gnn.refresh_graph('social');
SELECT pg_size_pretty(bytes) AS graph, pg_size_pretty(delta_bytes) AS delta FROM gnn.graphs WHERE name = 'social';
SELECT gnn.degree('social', 200) AS follows_of_200;
SQL
cat <<'SQL' | run_sql
\echo == the path most users have: ordinary columns, no labels (features => '*', node2vec, recommend)
SET client_min_messages = warning;
CREATE TABLE people AS
  SELECT id, 18 + (id * 7) % 50 AS age, (ARRAY['fr', 'de', 'us', 'jp'])[1 + id % 4] AS country,
         date '2024-01-01' + (id * 13) % 365 AS signed_up, (ARRAY['free', 'pro'])[1 + id / 7 % 2] AS plan,
         'person ' || id AS name
  FROM generate_series(1, 2000) id;
CREATE TABLE people_follows AS
  SELECT id AS follower, (id + 4 * k - 1) % 2000 + 1 AS followee FROM people, generate_series(1, 5) k
  UNION ALL SELECT id, id * 37 % 2000 + 1 FROM people;
SELECT name, nodes, edges, feature_dim FROM gnn.load_graph('people', edges => 'people_follows', src => 'follower',
       dst => 'followee', nodes => 'people', features => '*', undirected => true);
SELECT column_name, encoding, width, detail->>'reason' AS skipped FROM gnn.graph_columns('people')
ORDER BY feature_offset NULLS LAST;
\timing on
SELECT gnn.train('people', model => 'node2vec', seed => 1, wait => true) > 0 AS trained;
\timing off
SELECT name, task, params->>'hidden' AS dim, round((metrics->>'loss')::numeric, 3) AS loss, metrics->>'pairs' AS pairs
FROM gnn.models WHERE name = 'people_node2vec';
\echo == the people most like person 42, and the ones it does not follow yet that the model recommends
SELECT s.id, round(s.score::numeric, 3) AS cosine, p.country FROM gnn.similar('people_node2vec', 42, 5) s
JOIN people p USING (id) ORDER BY s.score DESC;
SELECT r.id, round(r.score::numeric, 2) AS score, p.country, p.plan FROM gnn.recommend('people_node2vec', 42, 5) r
JOIN people p USING (id) ORDER BY r.score DESC;
SELECT round(gnn.score('people_node2vec', 42, 46)::numeric, 2) AS score_42_46,
       round(gnn.score('people_node2vec', 42, 43)::numeric, 2) AS score_42_43;
SQL
echo "== a relational schema as one typed graph: shop tables (uuid, bigint and text keys)"
{ echo "SET client_min_messages = warning;"; echo "\\set ECHO none";
  echo "\\set customers 1000"; echo "\\set products 300"; echo "\\set reviews 10000"; echo "\\set visits 20000";
  cat "$REPO_ROOT/test/shop_schema.sql"; } | run_sql >/dev/null
cat <<SQL | run_sql
SET client_min_messages = warning;
SELECT name, nodes, edges, feature_dim FROM gnn.load_schema_graph('shop',
       ARRAY['customers', 'products', 'reviews', 'categories', 'visits']::regclass[],
       target => 'customers', label => 'segment', split => 'split',
       options => '{"time": {"reviews": "created_at", "customers": "snapshot_at"},
                    "exclude": {"customers": ["churn", "spend"]}}');
\echo == its node and edge types (every foreign key and its reverse)
SELECT kind, type, source, count, feature_dim, src_type, dst_type FROM gnn.graph_types('shop');
\echo == how the columns of products became features
SELECT column_name, column_type, encoding, feature_offset, width, detail->'categories' AS categories
FROM gnn.graph_columns('shop') WHERE type = 'products';
\echo == the label is the department of the products a customer reviewed (visits are noise):
\echo == typed models against a features-only MLP and a type-blind GCN
SELECT gnn.train('shop', model => 'hetero_sage', name => 'shop_hetero_sage', epochs => 40, seed => 7, wait => true,
                 options => '{"fanouts": {"reviews": [10, 5], "default": [5, 5]}, "batch_size": 64}') > 0 AS trained;
SELECT gnn.train('shop', model => 'rgcn', name => 'shop_rgcn', epochs => 100, seed => 7, wait => true,
                 options => '{"num_bases": 4}') > 0 AS trained;
SELECT gnn.train('shop', model => 'gcn', name => 'shop_gcn', epochs => 100, seed => 7, wait => true) > 0 AS trained;
SELECT gnn.train('shop', model => 'mlp', name => 'shop_mlp', epochs => 100, seed => 7, wait => true) > 0 AS trained;
SELECT name, round((metrics->>'test_acc')::numeric, 3) AS test_acc, round((metrics->>'val_acc')::numeric, 3) AS val_acc,
       metrics->>'temporal' AS time_aware, round((metrics->>'seconds')::numeric, 1) AS seconds
FROM gnn.models WHERE name LIKE 'shop%' ORDER BY test_acc DESC;
\echo == customer embeddings written with the key in its own type (uuid), then queried
SELECT gnn.embed('shop_hetero_sage', 'customer_embeddings');
SELECT pg_typeof(id) AS id_type, count(*) AS rows FROM customer_embeddings GROUP BY 1;
SELECT c.id, c.country, p.class AS predicted, c.segment AS actual
FROM customers c JOIN gnn.predict('shop_hetero_sage') p ON p.key = c.id::text WHERE c.split = 'test' ORDER BY c.id LIMIT 5;
\echo == the schema graph follows its tables too: a refresh after changes reloads it
\echo == (its features are encodings of whole columns, its edges foreign-key columns of rows)
SELECT gnn.track('shop') > 0 AS tracked;
UPDATE products SET price = price * 1.1 WHERE brand = 'brand-A';
SELECT name, tracked, pending_changes FROM gnn.graphs WHERE name = 'shop';
SET client_min_messages = notice;
SELECT inserted_nodes, deleted_nodes FROM gnn.refresh_graph('shop');
SELECT name, nodes, edges, pending_changes FROM gnn.graphs WHERE name = 'shop';
SQL

echo "== features larger than memory: feature_store => 'disk' keeps them in the graph store, read through a cache"
cat <<'SQL' | run_sql
SET client_min_messages = warning;
CREATE TABLE items AS
  SELECT id, (id % 4) AS label, CASE WHEN id % 10 < 6 THEN 'train' WHEN id % 10 < 8 THEN 'val' ELSE 'test' END AS split,
         (SELECT array_agg(((id * 31 + j * 17) % 97) / 97.0 + CASE WHEN j % 4 = id % 4 THEN 0.5 ELSE 0 END ORDER BY j)
            FROM generate_series(0, 63) j)::real[] AS feat
  FROM generate_series(0, 3999) id;
CREATE TABLE item_links AS SELECT i.id AS src, (i.id * 7 + k * 4) % 4000 AS dst FROM items i, generate_series(1, 5) k;
SELECT name, nodes, feature_dim FROM gnn.load_graph('items', 'item_links', nodes => 'items', features => 'feat',
                                  label => 'label', split => 'split', undirected => true, feature_store => 'disk');
\echo == its 1 MB of features are not in shared memory (bytes), only in the store
SELECT name, bytes, feature_store FROM gnn.graphs WHERE name = 'items';
\echo == training reads them through the shared cache of the graph, made by its first use with gnn.feature_cache_size (256 kB: a quarter of them); the log shows the cache at work
SET gnn.feature_cache_size = '256kB';
SELECT gnn.train('items', model => 'graphsage', name => 'items_sage', epochs => 4, seed => 1,
                 options => '{"fanouts": [5, 5], "batch_size": 256}', wait => true) > 0 AS trained;
SELECT epoch, round(loss::numeric, 3) AS loss, round(store_hit_rate::numeric, 3) AS hit_rate, store_bytes_read,
       round(store_read_amplification::numeric, 2) AS amplification
FROM gnn.training_log l JOIN gnn.models m ON m.job = l.job WHERE m.name = 'items_sage' ORDER BY epoch;
\echo == the cache is one per graph for every session and job: predictions from this session hit rows the job read
SELECT count(*) AS predicted FROM gnn.predict('items_sage', ARRAY[1, 2, 3, 500, 3999]::bigint[]);
SELECT graph, capacity_rows, cached_rows, bytes, hits, misses, round(hit_rate::numeric, 3) AS hit_rate
FROM gnn.feature_caches;
SQL

echo "== progress in psql: a job waited for reports each tenth of its epochs (gnn.progress)"
cat <<SQL | run_sql
SELECT gnn.train('$G', model => 'gcn', name => '${G}_gcn_progress', hidden => 16, epochs => 200, seed => 2,
                 wait => true, options => '{"patience": 1000}') > 0 AS trained;
SQL

echo "== training curves as pictures: gnn.training_curve(job) draws a job's log as SVG"
CURVES="$DIR/curves"
as_pg "mkdir -p '$CURVES'"
JOBS=$(printf '%s\n' '\set QUIET on' '\pset tuples_only on' '\pset format unaligned' \
  'SELECT DISTINCT job FROM gnn.training_log ORDER BY 1;' | run_sql)
for j in $JOBS; do
  printf '%s\n' '\set QUIET on' '\pset tuples_only on' '\pset format unaligned' "\\o $CURVES/job-$j.svg" \
    "SELECT gnn.training_curve($j);" | run_sql
done
OUT="$REPO_ROOT/demo-out"
rm -rf "$OUT"; mkdir -p "$OUT"
cp "$CURVES"/job-*.svg "$OUT"/
echo "wrote the curves of $(echo $JOBS | wc -w) jobs to $OUT: $(cd "$OUT" && ls job-*.svg | head -4 | tr '\n' ' ')..."
PIC=$(printf '%s\n' '\set QUIET on' '\pset tuples_only on' '\pset format unaligned' \
  "SELECT job FROM gnn.models WHERE name = '${G}_gcn_progress';" | run_sql)
if command -v rsvg-convert >/dev/null; then
  rsvg-convert "$OUT/job-$PIC.svg" -o "$OUT/job-$PIC.png"
  echo "and converted the curve of ${G}_gcn_progress (job $PIC) to $OUT/job-$PIC.png ($(stat -c %s "$OUT/job-$PIC.png") bytes)"
else
  echo "(rsvg-convert, Debian's librsvg2-bin, is not installed: no PNG)"
fi

if [ -f "$(pg_config --pkglibdir)/gnn_dist.so" ]; then
  echo "== two servers, one part of the graph each, trained as one graph (Gloo; a second throwaway cluster)"
  make_workdir DIR2
  PORT2=$(free_port)
  cleanup() { pg_stop "$DIR2"; rm -rf "$DIR2"; pg_stop "$DIR"; rm -rf "$DIR"; }
  pg_start "$DIR2" "$PORT2"
  PSQL2=(su postgres -s /bin/bash -c "'$PG_BINDIR/psql' -X -q -h '$DIR2' -p $PORT2 -d postgres -v ON_ERROR_STOP=1 -P pager=off")
  { echo "SET client_min_messages = warning;"; cat "$REPO_ROOT/test/planted_partition.sql";
    echo "SELECT nodes FROM gnn.load_graph('pp_whole', edges => 'pp_edges', nodes => 'pp_nodes', features => 'feat',
                                    label => 'label', split => 'split', undirected => true, replace => true);
          CREATE TABLE pp_parts AS SELECT node AS id, part FROM gnn.partition('pp_whole', 2, seed => 1);"; } | run_sql >/dev/null
  # the peer gets the same tables (a real deployment has its own part of them)
  echo "CREATE EXTENSION gnn; CREATE TABLE pp_nodes (id int PRIMARY KEY, label int, split text, feat real[]);
        CREATE TABLE pp_edges (src int, dst int); CREATE TABLE pp_parts (id bigint, part int);" | "${PSQL2[@]}"
  for t in pp_nodes pp_edges pp_parts; do
    echo "\\copy $t TO STDOUT" | su postgres -s /bin/bash -c "'$PG_BINDIR/psql' -X -q -h '$DIR' -p $PORT -d postgres -v ON_ERROR_STOP=1" | { echo "\\copy $t FROM STDIN"; cat; echo '\.'; } | "${PSQL2[@]}"
  done
  for k in 0 1; do
    SQLK="CREATE VIEW pp_nodes_p AS SELECT n.*, p.part FROM pp_nodes n JOIN pp_parts p USING (id);
          SELECT nodes FROM gnn.load_graph('pp_part', edges => 'pp_edges', nodes => 'pp_nodes_p', features => 'feat',
                 label => 'label', split => 'split', undirected => true, part_column => 'part', part => $k);"
    if [ $k = 0 ]; then echo "$SQLK" | run_sql >/dev/null; else echo "$SQLK" | "${PSQL2[@]}" >/dev/null; fi
  done
  PEER="host=$DIR2 port=$PORT2 dbname=postgres"
  cat <<SQL | run_sql
\echo == the part on this server: its own nodes, and the halo (the other ends of their edges)
SELECT * FROM gnn.graph_part('pp_part');
\echo == gnn.dist_check: the peer is reachable, meets this server, sums an allreduce, fetches the features of the halo
SELECT rank, server, round(meet_ms) AS meet_ms, round(allreduce_ms::numeric, 2) AS allreduce_1mb_ms, part, halo, halo_missing
FROM gnn.dist_check(ARRAY['$PEER'], graph => 'pp_part');
\echo == GCN on the whole graph here, then over the two parts (options.peers): the same loss curve
SELECT gnn.train('pp_whole', model => 'gcn', name => 'pp_one', hidden => 16, epochs => 30, dropout => 0, seed => 5,
                 wait => true) AS one \gset
SELECT gnn.train('pp_part', model => 'gcn', name => 'pp_two', hidden => 16, epochs => 30, dropout => 0, seed => 5,
                 wait => true, options => '{"peers": ["$PEER"]}') AS two \gset
SELECT a.epoch, round(a.loss::numeric, 5) AS one_server_loss, round(b.loss::numeric, 5) AS two_servers_loss,
       round(a.val_acc::numeric, 4) AS one_server_val_acc, round(b.val_acc::numeric, 4) AS two_servers_val_acc
FROM gnn.training_log a JOIN gnn.training_log b ON b.job = :two AND b.epoch = a.epoch
WHERE a.job = :one AND a.epoch IN (1, 10, 20, 30) ORDER BY a.epoch;
SELECT name, metrics->'ranks' AS ranks, metrics->'peers' AS peers FROM gnn.models WHERE name = 'pp_two';
\echo == the model trained over the two parts, embedded over both: the rows of every node, as one server computes them
SELECT gnn.embed('pp_two', 'pp_emb_parts', options => '{"peers": ["$PEER"]}') AS rows_over_parts;
SELECT gnn.embed('pp_one', 'pp_emb_one') AS rows_one_server;
SELECT count(DISTINCT id) AS nodes, max(abs(x - y)) < 1e-4 AS same_as_one_server
FROM pp_emb_parts p JOIN pp_emb_one o USING (id), LATERAL unnest(p.embedding, o.embedding) u(x, y);
SQL
  cat <<SQL | run_sql
\echo == minibatches over the two parts (one hop of halo each): GraphSAGE, fan-outs [10, 5]; the owners draw
\echo == the second hop and send the features, ahead of the steps. The draws of every node are keyed by its id,
\echo == so the run is the run of one server with streams => node (dropout 0): the same loss curve
SELECT gnn.train('pp_part', model => 'graphsage', name => 'pp_mb_two', hidden => 16, epochs => 10, seed => 5,
                 dropout => 0, wait => true, options => '{"peers": ["$PEER"], "fanouts": [10, 5], "batch_size": 64}') AS mb_two \gset
SELECT gnn.train('pp_whole', model => 'graphsage', name => 'pp_mb_one', hidden => 16, epochs => 10, seed => 5,
                 dropout => 0, wait => true, options => '{"fanouts": [10, 5], "batch_size": 64, "streams": "node"}') AS mb_one \gset
SELECT count(*) AS epochs, max(abs(a.loss - b.loss)) < 1e-5 AS same_curve
FROM gnn.training_log a JOIN gnn.training_log b USING (epoch) WHERE a.job = :mb_one AND b.job = :mb_two;
SELECT name, round((metrics->>'test_acc')::numeric, 3) AS test_acc, metrics->'ranks' AS ranks
FROM gnn.models WHERE name IN ('pp_mb_one', 'pp_mb_two') ORDER BY name;
\echo == link prediction over the two parts: pairs sampled across them, negatives from either
SELECT gnn.train('pp_part', model => 'graphsage', task => 'link_prediction', name => 'pp_lp_two', hidden => 16,
                 epochs => 20, seed => 5, wait => true, options => '{"peers": ["$PEER"], "fanouts": [10, 5]}') IS NOT NULL AS trained;
SELECT gnn.train('pp_whole', model => 'graphsage', task => 'link_prediction', name => 'pp_lp_one', hidden => 16,
                 epochs => 20, seed => 5, wait => true, options => '{"fanouts": [10, 5]}') IS NOT NULL AS trained;
SELECT name, round((metrics->>'test_auc')::numeric, 3) AS test_auc, metrics->'ranks' AS ranks
FROM gnn.models WHERE name IN ('pp_lp_one', 'pp_lp_two') ORDER BY name;
SQL
  echo "== a relational schema in two parts: a small shop on both servers, a part column in every table"
  SHOP_PARTS="SET client_min_messages = warning; CREATE SCHEMA dshop; SET search_path = dshop, public;
    \\set customers 300
    \\set products 120
    \\set reviews 2000
    $(cat "$REPO_ROOT/test/shop_schema.sql")
    ALTER TABLE categories ADD COLUMN part int; UPDATE categories SET part = abs(hashtext(id)) % 2;
    ALTER TABLE products ADD COLUMN part int; UPDATE products SET part = abs(hashtext(id::text)) % 2;
    ALTER TABLE customers ADD COLUMN part int; UPDATE customers SET part = abs(hashtext(id::text)) % 2;
    ALTER TABLE reviews ADD COLUMN part int;
    UPDATE reviews r SET part = c.part FROM customers c WHERE c.id = r.customer_id;"
  STABLES="ARRAY['dshop.customers', 'dshop.products', 'dshop.reviews', 'dshop.categories']::regclass[],
           target => 'dshop.customers', label => 'segment', split => 'split'"
  for k in 0 1; do
    SQLK="$SHOP_PARTS
      SELECT nodes FROM gnn.load_schema_graph('shop_part', $STABLES,
             options => '{\"exclude\": {\"customers\": [\"churn\", \"spend\"]}, \"part_column\": \"part\", \"part\": $k}');"
    if [ $k = 0 ]; then printf '%s\n' "$SQLK" | run_sql >/dev/null; else printf '%s\n' "$SQLK" | "${PSQL2[@]}" >/dev/null; fi
  done
  cat <<SQL | run_sql
SET client_min_messages = warning;
SELECT nodes FROM gnn.load_schema_graph('shop_whole', $STABLES,
       options => '{"exclude": {"customers": ["churn", "spend", "part"], "products": ["part"], "reviews": ["part"],
                                "categories": ["part"]}}') \gset
SELECT * FROM gnn.graph_part('shop_part');
\echo == R-GCN on the whole schema here, then over the two schema parts: the same loss curve
SELECT gnn.train('shop_whole', model => 'rgcn', name => 'shop_one', epochs => 20, dropout => 0, seed => 5,
                 wait => true) AS one \gset
SELECT gnn.train('shop_part', model => 'rgcn', name => 'shop_two', epochs => 20, dropout => 0, seed => 5,
                 wait => true, options => '{"peers": ["$PEER"]}') AS two \gset
SELECT a.epoch, round(a.loss::numeric, 5) AS one_server_loss, round(b.loss::numeric, 5) AS two_servers_loss
FROM gnn.training_log a JOIN gnn.training_log b ON b.job = :two AND b.epoch = a.epoch
WHERE a.job = :one AND a.epoch IN (1, 5, 10, 20) ORDER BY a.epoch;
SQL
  pg_stop "$DIR2"
else
  echo "== (gnn_dist.so is not installed, libgloo-dev missing: no distributed part of the demo)"
fi

echo "== graphs survive a restart: they are in the graph store (\$PGDATA/gnn), mapped on first use"
cat <<'SQL' | run_sql
SELECT name, nodes, edges, persisted, state FROM gnn.graphs ORDER BY name;
SQL
as_pg "'$PG_BINDIR/pg_ctl' -D '$DIR/data' -m fast -w restart -l '$DIR/server.log' >/dev/null"
cat <<'SQL' | run_sql
\echo == after the restart: the stored graphs are back, unmapped (the tracked ones, which follow their tables, are not stored)
SELECT name, nodes, edges, persisted, state FROM gnn.graphs ORDER BY name;
\echo == the first use of each maps it (here: its digest, over every byte of it)
SELECT name, gnn.graph_digest(name) IS NOT NULL AS usable FROM gnn.graphs WHERE persisted ORDER BY name;
SELECT name, state FROM gnn.graphs ORDER BY name;
SQL
echo "== demo finished; the throwaway cluster is removed"
