-- Models on schema graphs: typed models beat a features-only MLP and the
-- type-blind GCN where the label lives in the relations; keys of every type
-- round-trip through embed and predict; regression, binary classification
-- and link prediction through one edge type.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS gnn;
CREATE SCHEMA st;
SET search_path = st, public;
SET client_min_messages = warning;	-- also: no "runs on the CPU" notices from training
\set customers 1000
\set products 300
\set reviews 10000
\set visits 20000
\set ECHO none
\i shop_schema.sql
SET client_min_messages = warning;
\set ECHO all

SELECT nodes, edges, classes, train, val, test
FROM gnn.load_schema_graph('shop', ARRAY['customers', 'products', 'reviews', 'categories', 'visits']::regclass[],
                           target => 'customers', label => 'segment', split => 'split',
                           options => '{"time": {"reviews": "created_at", "customers": "snapshot_at"},
                                        "exclude": {"customers": ["churn", "spend"]}}');
SELECT kind, type, count, src_type, dst_type FROM gnn.graph_types('shop');

-- the label is the department of the products a customer reviewed: two
-- relations away from the customer, beside visits to random products
SELECT gnn.train('shop', model => 'hetero_sage', name => 'hs', epochs => 50, seed => 7, wait => true) > 0 AS trained;
SELECT gnn.train('shop', model => 'rgcn', name => 'rg', epochs => 50, seed => 7, wait => true,
                 options => '{"num_bases": 4}') > 0 AS trained;
SELECT gnn.train('shop', model => 'gcn', name => 'gcn', epochs => 100, seed => 7, wait => true) > 0 AS trained;
SELECT gnn.train('shop', model => 'mlp', name => 'mlp', epochs => 100, seed => 7, wait => true) > 0 AS trained;
-- minibatches sampled by time: the customers' snapshot times bound what their
-- neighbourhoods show (about half of their reviews), in training and evaluation
SELECT gnn.train('shop', model => 'hetero_sage', name => 'hs_time', epochs => 40, seed => 7, wait => true,
                 options => '{"fanouts": [10, 5], "batch_size": 64}') > 0 AS trained;
SELECT name, metrics->>'temporal' AS temporal, (metrics->>'test_acc')::float > 0 AS measured
FROM gnn.models WHERE name IN ('hs', 'hs_time', 'rg', 'gcn', 'mlp') ORDER BY name;
-- gnn.estimate of schema jobs (every loop: full batch, minibatch with and
-- without time, link prediction) against the heap peak each measured: within 2x
CREATE TEMP TABLE est_jobs (name text, model text, hidden int, layers int, options jsonb);
INSERT INTO est_jobs VALUES
  ('hs', 'hetero_sage', NULL, 2, '{}'), ('rg', 'rgcn', NULL, 2, '{"num_bases": 4}'),
  ('hs_time', 'hetero_sage', NULL, 2, '{"fanouts": [10, 5], "batch_size": 64}'),
  ('est_rg16', 'rgcn', 16, 2, '{}'),
  ('est_hs_mb', 'hetero_sage', 32, 2, '{"fanouts": [10, 10], "batch_size": 256}'),
  ('est_rg_mb', 'rgcn', 64, 2, '{"fanouts": [5, 5], "batch_size": 128, "temporal": false}'),
  ('est_hs_link', 'hetero_sage', 64, 2, '{"task": "link_prediction"}');
SELECT count(gnn.train('shop', j.model, coalesce(j.options->>'task', 'node_classification'), j.name, j.hidden,
                       j.layers, epochs => 3, device => 'cpu', seed => 1, wait => true,
                       options => j.options - 'task')) AS trained
FROM est_jobs j WHERE j.name LIKE 'est_%';
SELECT j.name, e.bytes::float8 / (m.metrics->>'peak_memory_bytes')::float8 BETWEEN 0.5 AND 2 AS within_2x
FROM est_jobs j JOIN gnn.models m ON m.name = j.name
CROSS JOIN LATERAL gnn.estimate('shop', j.model, j.hidden, j.layers, j.options, 'cpu') e
WHERE e.item = 'total host' ORDER BY j.name;
SELECT count(*) FILTER (WHERE gnn.drop_model(name)) AS dropped FROM est_jobs WHERE name LIKE 'est_%';

-- typed models beat the features-only MLP and the type-blind GCN by a clear margin
WITH a AS (SELECT name, (metrics->>'test_acc')::float AS acc FROM gnn.models)
SELECT (SELECT acc FROM a WHERE name = 'hs') > (SELECT acc FROM a WHERE name = 'mlp') + 0.25 AS hs_beats_mlp,
       (SELECT acc FROM a WHERE name = 'hs') > (SELECT acc FROM a WHERE name = 'gcn') + 0.08 AS hs_beats_gcn,
       (SELECT acc FROM a WHERE name = 'rg') > (SELECT acc FROM a WHERE name = 'mlp') + 0.25 AS rgcn_beats_mlp,
       (SELECT acc FROM a WHERE name = 'rg') > (SELECT acc FROM a WHERE name = 'gcn') + 0.08 AS rgcn_beats_gcn,
       (SELECT acc FROM a WHERE name = 'hs_time') > (SELECT acc FROM a WHERE name = 'mlp') + 0.25 AS hs_time_beats_mlp,
       (SELECT acc FROM a WHERE name = 'mlp') < 0.45 AS mlp_near_chance;

-- a seed time per row (load option seed_time): a customer is a row from its
-- signed_up time (what other seeds may see of it) and is predicted at its
-- snapshot; one time for every seed (train option seed_time) before any
-- review leaves every neighbourhood without reviews: features-only accuracy
SELECT nodes FROM gnn.load_schema_graph('shop_seed', ARRAY['customers', 'products', 'reviews', 'categories']::regclass[],
                           target => 'customers', label => 'segment', split => 'split',
                           options => '{"time": {"reviews": "created_at", "customers": "signed_up"},
                                        "seed_time": "snapshot_at", "exclude": {"customers": ["churn", "spend"]}}');
SELECT t->>'time' AS row_time, t->>'seed_time' AS seed_time
FROM jsonb_array_elements(gnn._graph_meta('shop_seed')->'types') t WHERE t->>'name' = 'customers';
SELECT gnn.train('shop_seed', model => 'hetero_sage', name => 'hs_seed', epochs => 30, seed => 7, wait => true,
                 options => '{"fanouts": [10, 5], "batch_size": 64}') > 0 AS trained;
SELECT gnn.train('shop_seed', model => 'hetero_sage', name => 'hs_asof', epochs => 30, seed => 7, wait => true,
                 options => '{"fanouts": [10, 5], "batch_size": 64, "seed_time": "2000-01-01"}') > 0 AS trained;
WITH a AS (SELECT name, (metrics->>'test_acc')::float AS acc, metrics->>'temporal' AS temporal FROM gnn.models)
SELECT (SELECT temporal FROM a WHERE name = 'hs_seed') AS seed_temporal,
       (SELECT temporal FROM a WHERE name = 'hs_asof') AS asof_temporal,
       (SELECT acc FROM a WHERE name = 'hs_seed') > (SELECT acc FROM a WHERE name = 'mlp') + 0.25 AS seed_beats_mlp,
       (SELECT acc FROM a WHERE name = 'hs_asof') < (SELECT acc FROM a WHERE name = 'hs_seed') - 0.25 AS asof_sees_no_reviews;
SELECT params->>'seed_time' AS as_of FROM gnn.models WHERE name = 'hs_asof';
SELECT gnn.train('shop_seed', model => 'hetero_sage', name => 'x', options => '{"seed_time": "2024-01-01"}');
SELECT gnn.train('shop_seed', model => 'hetero_sage', name => 'x', options => '{"fanouts": [5, 5], "seed_time": "infinity"}');
SELECT gnn.drop_graph('shop_seed');

-- uuid keys round-trip: embed writes a uuid id column; predict and similar carry the keys
SELECT gnn.embed('hs', 'cust_emb');
SELECT format_type(atttypid, atttypmod) AS id_type FROM pg_attribute
 WHERE attrelid = 'cust_emb'::regclass AND attname = 'id';
SELECT count(*) = (SELECT count(*) FROM customers) AS every_customer,
       count(*) FILTER (WHERE c.id IS NULL) AS unmatched
FROM cust_emb e LEFT JOIN customers c USING (id);
SELECT count(*) AS predictions, count(*) FILTER (WHERE c.id IS NULL) AS unmatched
FROM gnn.predict('hs') p LEFT JOIN customers c ON c.id::text = p.key;
SELECT p.key = c.id::text AS same_key, p.class IS NOT NULL AS has_class
FROM (SELECT id FROM customers ORDER BY id LIMIT 1) c,
     LATERAL gnn.predict('hs', ARRAY[c.id::text]) p;
SELECT array_length(gnn.embedding('hs', (SELECT id::text FROM customers ORDER BY id LIMIT 1)), 1) AS dim;
SELECT count(*) AS similar, bool_and(s.key IN (SELECT id::text FROM customers)) AS all_customers
FROM gnn.similar('hs', (SELECT id::text FROM customers ORDER BY id LIMIT 1), 5) s;
SELECT gnn.predict('hs', ARRAY['00000000-0000-0000-0000-000000000000']);
-- bigint keys (negative, beyond 2^53) and text keys of other tables
SELECT gnn.embed('hs', 'prod_emb', node_type => 'products');
SELECT format_type(atttypid, atttypmod) AS id_type FROM pg_attribute
 WHERE attrelid = 'prod_emb'::regclass AND attname = 'id';
SELECT count(*) = (SELECT count(*) FROM products) AS every_product,
       bool_and(e.id = p.id) AS same_ids, min(e.id) < 0 AS negative_keys,
       max(e.id) > 9007199254740992 AS keys_beyond_2_53
FROM prod_emb e JOIN products p USING (id);
SELECT gnn.embed('hs', 'cat_emb', node_type => 'categories');
SELECT count(*) = (SELECT count(*) FROM categories) AS every_category,
       format_type((SELECT atttypid FROM pg_attribute WHERE attrelid = 'cat_emb'::regclass AND attname = 'id'), -1) AS id_type
FROM cat_emb JOIN categories USING (id);
SELECT gnn.embed('hs', 'x_emb', node_type => 'orders');

-- regression: a numeric label
SELECT name, classes FROM gnn.load_schema_graph('shop_spend', ARRAY['customers', 'products', 'reviews', 'categories']::regclass[],
                           target => 'customers', label => 'spend', split => 'split',
                           options => '{"exclude": {"customers": ["churn", "segment"]}}');
SELECT gnn.train('shop_spend', model => 'hetero_sage', name => 'spend', task => 'regression', epochs => 60,
                 seed => 7, wait => true) > 0 AS trained;
SELECT (metrics->>'test_mae')::float < 40 AS mae_below_spread, (metrics->>'test_rmse')::float >= (metrics->>'test_mae')::float AS rmse_ge_mae
FROM gnn.models WHERE name = 'spend';
SELECT count(*) AS predictions, bool_and(label IS NULL AND class IS NULL AND score IS NOT NULL) AS values_only
FROM gnn.predict('spend');
-- the same in sampled minibatches
SELECT gnn.train('shop_spend', model => 'hetero_sage', name => 'spend_mb', task => 'regression', epochs => 30,
                 seed => 7, wait => true, options => '{"fanouts": [10, 5], "batch_size": 64}') > 0 AS trained;
SELECT (metrics->>'test_mae')::float < 40 AS mae_below_spread, (metrics->>'val_mae')::float > 0 AS has_val_mae,
       (metrics->>'test_rmse')::float >= (metrics->>'test_mae')::float AS rmse_ge_mae
FROM gnn.models WHERE name = 'spend_mb';
SELECT count(*) AS predictions, count(DISTINCT round(score::numeric, 3)) > 10 AS varied
FROM gnn.predict('spend_mb');
SELECT gnn.train('shop_spend', name => 'spend_cls', epochs => 5, wait => true);
-- binary classification: AUROC beside accuracy
SELECT name, classes FROM gnn.load_schema_graph('shop_churn', ARRAY['customers', 'products', 'reviews', 'categories']::regclass[],
                           target => 'customers', label => 'churn', split => 'split',
                           options => '{"exclude": {"customers": ["spend", "segment"]}}');
SELECT gnn.train('shop_churn', model => 'rgcn', name => 'churn', epochs => 30, seed => 7, wait => true) > 0 AS trained;
SELECT (metrics->>'test_auc')::float > 0.6 AS auc_measured, metrics ? 'val_auc' AS has_val_auc
FROM gnn.models WHERE name = 'churn';
SELECT DISTINCT class FROM gnn.predict('churn') ORDER BY class;

-- link prediction through one edge type: which category a product belongs to
SELECT gnn.train('shop', model => 'hetero_sage', name => 'prodcat', task => 'link_prediction', seed => 7, epochs => 25,
                 wait => true, options => '{"edge_type": "products.category_id"}') > 0 AS trained;
SELECT (metrics->>'test_auc')::float > 0.6 AS auc_measured FROM gnn.models WHERE name = 'prodcat';
SELECT gnn.train('shop', task => 'link_prediction', options => '{"edge_type": "products.nosuch"}');

-- a relation-selective graph: one relation carries the label, one is noise
\set ECHO none
\i relsel_schema.sql
SET client_min_messages = warning;
\set ECHO all
SELECT nodes, edges FROM gnn.load_schema_graph('relsel', ARRAY['people', 'signal', 'noise']::regclass[],
                           target => 'people', label => 'label', split => 'split',
                           options => '{"exclude": {"people": ["noise"]}}');
SELECT gnn.train('relsel', model => 'rgcn', name => 'rs_rgcn', epochs => 40, seed => 3, wait => true) > 0 AS trained;
SELECT gnn.train('relsel', model => 'gcn', name => 'rs_gcn', epochs => 150, seed => 3, wait => true) > 0 AS trained;
SELECT (SELECT (metrics->>'test_acc')::float FROM gnn.models WHERE name = 'rs_rgcn') >= 0.95 AS rgcn_95,
       (SELECT (metrics->>'test_acc')::float FROM gnn.models WHERE name = 'rs_gcn') <
       (SELECT (metrics->>'test_acc')::float FROM gnn.models WHERE name = 'rs_rgcn') - 0.1 AS gcn_far_lower;

SELECT count(*) FILTER (WHERE gnn.drop_model(n)) AS dropped
FROM unnest(ARRAY['hs', 'rg', 'gcn', 'mlp', 'hs_time', 'spend', 'churn', 'prodcat', 'rs_rgcn', 'rs_gcn', 'hs_seed', 'hs_asof', 'spend_mb']) n;
SELECT gnn.drop_graph(g) FROM unnest(ARRAY['shop', 'shop_spend', 'shop_churn', 'relsel']) g;
DROP SCHEMA st CASCADE;
RESET client_min_messages;
RESET search_path;
