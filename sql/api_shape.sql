-- One rule per API shape (issue #40): no argument, result column or setting
-- that needs quotes, drop and cache functions answer alike, test hooks stay
-- out of pg_settings, and the old names keep working.
CREATE EXTENSION IF NOT EXISTS gnn;
SET client_min_messages = warning;

-- Argument names that named notation (name => value) cannot take unquoted:
-- reserved and column-name keywords.  Only gnn.embed's deprecated trailing
-- "into" and "column" (the old names of table_name and column_name) remain.
SELECT p.proname, a.name, k.catdesc
FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace,
     unnest(p.proargnames, coalesce(p.proargmodes, array_fill('i'::"char", ARRAY[cardinality(p.proargnames)])))
         AS a(name, mode),
     pg_get_keywords() k
WHERE n.nspname = 'gnn' AND p.proargnames IS NOT NULL AND a.mode IN ('i', 'b', 'v')
  AND k.word = a.name AND k.catcode IN ('R', 'C')
ORDER BY 1, 2;

-- Result columns (TABLE / OUT) that a SELECT would have to quote: none.
SELECT p.proname, a.name
FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace,
     unnest(p.proargnames, p.proargmodes) AS a(name, mode), pg_get_keywords() k
WHERE n.nspname = 'gnn' AND a.mode IN ('o', 't', 'b') AND k.word = a.name AND k.catcode IN ('R', 'T')
ORDER BY 1, 2;

-- Columns of the extension's views and tables that would need quotes: none.
SELECT c.relname, a.attname
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace JOIN pg_attribute a ON a.attrelid = c.oid,
     pg_get_keywords() k
WHERE n.nspname = 'gnn' AND c.relkind IN ('r', 'v', 'p') AND a.attnum > 0 AND NOT a.attisdropped
  AND k.word = a.attname AND k.catcode IN ('R', 'T')
ORDER BY 1, 2;

-- Settings: SET gnn.x needs x to be an identifier (no reserved or
-- type/function-name keyword); none of the listed ones needs quotes.
SELECT name FROM pg_settings, pg_get_keywords() k
WHERE name LIKE 'gnn.%' AND k.word = substr(name, 5) AND k.catcode IN ('R', 'T');
SET gnn.progress = off;
SHOW gnn.progress;
RESET gnn.progress;
-- the old name still works (quoted, as it always had to be), out of pg_settings
SET gnn."verbose" = off;
SHOW gnn."verbose";
RESET gnn."verbose";
SELECT count(*) AS old_name_listed FROM pg_settings WHERE name = 'gnn.verbose';

-- Test hooks: settable by a superuser, not listed.
SELECT count(*) AS hooks_listed FROM pg_settings WHERE name LIKE 'gnn.fault%';
SET gnn.fault_backend_calls = 5;
SHOW gnn.fault_backend_calls;
RESET gnn.fault_backend_calls;

-- Drop and cache functions answer the same way: whether anything was dropped.
SELECT p.proname, format_type(p.prorettype, NULL) AS returns
FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
WHERE n.nspname = 'gnn' AND (p.proname LIKE 'drop\_%' OR p.proname = 'cache_drop')
ORDER BY 1;
SELECT gnn.drop_graph('api_missing', if_exists => true) AS graph_dropped,
       gnn.drop_model('api_missing', if_exists => true) AS model_dropped,
       gnn.cache_drop('api_missing') AS results_dropped;
SELECT gnn.drop_model('api_missing');

-- gnn.embed: table_name and column_name, and their old names
CREATE TABLE api_e (src bigint, dst bigint);
INSERT INTO api_e SELECT i, (i * 7 + 1) % 40 FROM generate_series(0, 39) i;
INSERT INTO api_e SELECT i, (i + 1) % 40 FROM generate_series(0, 39) i;
CREATE TABLE api_n (id bigint PRIMARY KEY, feat real[], label int, split text);
INSERT INTO api_n SELECT i, ARRAY[i % 2, i % 3, (i % 5) / 4.0]::real[], i % 2,
       CASE WHEN i % 4 = 0 THEN 'test' WHEN i % 4 = 1 THEN 'val' ELSE 'train' END
FROM generate_series(0, 39) i;
SELECT gnn.load_graph('api_g', 'api_e', nodes => 'api_n', features => 'feat', label => 'label',
                      split => 'split', undirected => true) IS NOT NULL AS loaded;
SELECT gnn.train('api_g', model => 'gcn', name => 'api_m', hidden => 8, epochs => 3, seed => 1,
                 wait => true) IS NOT NULL AS trained;
SELECT gnn.embed('api_m', table_name => 'api_emb') AS rows_new_name;
SELECT gnn.embed('api_m', "into" => 'api_emb2') AS rows_old_name;
SELECT gnn.embed('api_m', 'api_emb3') AS rows_positional;
SELECT gnn.embed('api_m', table_name => 'api_n', column_name => 'emb') AS rows_column;
SELECT gnn.embed('api_m', table_name => 'api_n', "column" => 'emb_old') AS rows_old_column;
SELECT count(*) AS same_rows FROM api_emb a JOIN api_emb2 b USING (id) JOIN api_emb3 c USING (id)
 JOIN api_n n USING (id)
WHERE a.embedding = b.embedding AND b.embedding = c.embedding AND c.embedding = n.emb AND n.emb = n.emb_old;
-- both names, disagreeing: an error; agreeing: fine
SELECT gnn.embed('api_m', table_name => 'api_emb', "into" => 'api_emb2');
SELECT gnn.embed('api_m', table_name => 'api_emb', "into" => 'api_emb') AS rows_both_agree;
SELECT gnn.embed('api_m');
SELECT gnn.drop_model('api_m') AS model_dropped, gnn.drop_graph('api_g') AS graph_dropped;
DROP TABLE api_e, api_n, api_emb, api_emb2, api_emb3;
