-- The README's walk over a relational schema, run as written (test/run_all.sh
-- checks that the block below matches README.md).
-- Set-up, not part of the walk: the shop tables of test/shop_schema.sql.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS gnn;
SET client_min_messages = warning;
\set ECHO none
\i shop_schema.sql
SET client_min_messages = warning;
\set ECHO all
-- BEGIN README WALK
SELECT nodes, edges, feature_dim FROM gnn.load_schema_graph('shop', ARRAY['customers', 'products', 'reviews', 'categories']::regclass[], target => 'customers', label => 'segment', split => 'split', options => '{"time": {"reviews": "created_at", "customers": "snapshot_at"}, "exclude": {"customers": ["churn", "spend"]}}');
SELECT kind, type, count, src_type, dst_type FROM gnn.graph_types('shop');
SELECT type, "column", encoding, width FROM gnn.graph_columns('shop') WHERE type = 'customers';
SELECT state FROM gnn.wait(gnn.train('shop', model => 'hetero_sage', name => 'shop_sage', epochs => 30, seed => 7, wait => true, options => '{"fanouts": {"reviews": [10, 5], "default": [5, 5]}, "batch_size": 64}'));
SELECT name, (metrics->>'test_acc')::float > 0.6 AS learned, metrics->>'temporal' AS temporal FROM gnn.models WHERE name = 'shop_sage';
SELECT gnn.embed('shop_sage', 'customer_embeddings');
SELECT pg_typeof(id) AS id_type, array_length(embedding, 1) AS dim FROM customer_embeddings LIMIT 1;
SELECT count(*) AS predicted FROM customers c JOIN gnn.predict('shop_sage') p ON p.key = c.id::text;
-- END README WALK
SELECT gnn.drop_model('shop_sage');
DROP TABLE customer_embeddings;
SELECT gnn.drop_graph('shop');
DROP TABLE visits, reviews, customers, products, categories;
RESET client_min_messages;
