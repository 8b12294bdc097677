-- Time-aware models predict as of each row's time (issue #39, item 7).
--
-- A churn canary: customers (the targets, each with a cutoff as its seed
-- time) and their events.  Only "cancel" / "renew" events carry the label
-- (a churner cancels, a stayer renews).  Customers of the train and val
-- splits have those events before their cutoff; test customers have them
-- after it, in their future, with nothing else that tells their label.  A
-- model trained with time-aware sampling must predict the test customers at
-- chance, as its job measured; before the fix gnn.predict read every
-- neighbour and scored 0.71-1.00 on them.  as_of => asks for one moment for
-- every row; on a model trained without time it is an error.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS gnn;
CREATE SCHEMA ti;
SET search_path = ti, public;
SET TimeZone = 'UTC';

-- deterministic "random" numbers: md5 of a tag (no random(), no row order)
CREATE FUNCTION ti.h(tag text) RETURNS int LANGUAGE sql IMMUTABLE
AS $$ SELECT (('x' || substr(md5(tag), 1, 8))::bit(32)::int) & 2147483647 $$;

CREATE TABLE customers (
    id bigint PRIMARY KEY,
    age int,
    signed_up timestamptz,
    cutoff timestamptz,
    churned int,
    split text
);
INSERT INTO customers
SELECT i, 18 + ti.h('age' || i) % 60,
       timestamptz '2023-01-01' + (ti.h('su' || i) % 300) * interval '1 day',
       timestamptz '2024-01-01' + (100 + ti.h('cut' || i) % 100) * interval '1 day',
       ti.h('y' || i) % 2,
       CASE i % 5 WHEN 3 THEN 'val' WHEN 4 THEN 'test' ELSE 'train' END
FROM generate_series(1, 600) i;

-- ten events per customer: 4 views before the cutoff, 3 views after it, and
-- 3 label events, before the cutoff for train / val customers, after it for
-- test customers
CREATE TABLE events (
    id bigint PRIMARY KEY,
    customer_id bigint REFERENCES customers,
    kind text,
    amount real,
    at timestamptz
);
INSERT INTO events
SELECT c.id * 10 + j, c.id,
       CASE WHEN j < 7 THEN 'view' WHEN c.churned = 1 THEN 'cancel' ELSE 'renew' END,
       (ti.h('amt' || c.id || '.' || j) % 1000) / 10.0,
       CASE WHEN j < 4 OR (j >= 7 AND c.split <> 'test')
            THEN c.cutoff - (1 + ti.h('past' || c.id || '.' || j) % 90) * interval '1 day'
            ELSE c.cutoff + (1 + ti.h('fut' || c.id || '.' || j) % 90) * interval '1 day' END
FROM customers c, generate_series(0, 9) j;

-- the canary as built: test customers' label events all lie in their future
SELECT c.split, count(*) FILTER (WHERE e.kind <> 'view' AND e.at <= c.cutoff) AS label_events_before,
       count(*) FILTER (WHERE e.kind <> 'view' AND e.at > c.cutoff) AS label_events_after
FROM customers c JOIN events e ON e.customer_id = c.id GROUP BY c.split ORDER BY c.split;

SELECT nodes, edges, classes, train, val, test
FROM gnn.load_schema_graph('ti_churn', ARRAY['customers', 'events']::regclass[],
                           target => 'customers', label => 'churned', split => 'split',
                           options => '{"time": {"events": "at", "customers": "signed_up"},
                                        "seed_time": "cutoff",
                                        "exclude": {"customers": ["signed_up"], "events": ["at"]}}');

-- time-aware (the default on a graph with times) and, for contrast, not
SELECT gnn.train('ti_churn', model => 'hetero_sage', name => 'ti_time', epochs => 40, seed => 7, wait => true,
                 options => '{"fanouts": [10, 5], "batch_size": 64}') > 0 AS trained;
SELECT gnn.train('ti_churn', model => 'hetero_sage', name => 'ti_all', epochs => 40, seed => 7, wait => true,
                 options => '{"fanouts": [10, 5], "batch_size": 64, "temporal": false}') > 0 AS trained;
SELECT name, metrics->>'temporal' AS temporal, (metrics->>'val_acc')::float >= 0.9 AS reads_label_events
FROM gnn.models WHERE name IN ('ti_time', 'ti_all') ORDER BY name;

-- predictions of the test customers (the results the job shared): as of
-- their cutoffs, chance, and the accuracy the job recorded; the model
-- trained without time reads the future
CREATE TABLE shared AS SELECT * FROM gnn.predict('ti_time');
CREATE TABLE acc AS
SELECT m.name,
       (SELECT avg((p.label = c.churned)::int)::float
          FROM gnn.predict(m.name) p JOIN customers c ON c.id = p.id WHERE c.split = 'test') AS predicted,
       (m.metrics->>'test_acc')::float AS recorded
FROM gnn.models m WHERE m.name IN ('ti_time', 'ti_all');
SELECT name, predicted BETWEEN 0.3 AND 0.7 AS near_chance, predicted >= 0.9 AS reads_future,
       CASE WHEN name = 'ti_time' THEN abs(predicted - recorded) < 1e-4 END AS as_recorded
FROM acc ORDER BY name;

-- computed in this session instead: a few rows first (sampled on their own),
-- then every row; both equal what the job shared
SELECT gnn.cache_drop('ti_time') IS NOT NULL AS dropped;
CREATE TABLE few AS
SELECT * FROM gnn.predict('ti_time', ARRAY(SELECT id FROM customers WHERE split = 'test' ORDER BY id DESC LIMIT 25));
CREATE TABLE whole AS SELECT * FROM gnn.predict('ti_time');
SELECT count(*) AS rows, bool_and(f.label = w.label) AS same_label, max(abs(f.score - w.score)) < 1e-5 AS same_score
FROM few f JOIN whole w USING (id);
SELECT count(*) AS rows, bool_and(s.label = w.label) AS same_label, max(abs(s.score - w.score)) < 1e-5 AS same_score
FROM shared s JOIN whole w USING (id);

-- as_of: one moment for every row; after every event the label events leak
-- back in, before every event no customer has any
SELECT (SELECT avg((p.label = c.churned)::int)::float FROM gnn.predict('ti_time', as_of => '2030-01-01') p
          JOIN customers c ON c.id = p.id WHERE c.split = 'test') >= 0.8 AS after_all_reads_future,
       (SELECT avg((p.label = c.churned)::int)::float FROM gnn.predict('ti_time', as_of => '2020-01-01') p
          JOIN customers c ON c.id = p.id WHERE c.split = 'test') BETWEEN 0.3 AND 0.7 AS before_all_near_chance;
SELECT count(*) AS rows, bool_and(p.key = c.id::text) AS keyed
FROM gnn.predict('ti_time', ARRAY['1', '2', '3'], as_of => '2024-06-01') p JOIN customers c ON c.id = p.id;
-- a few rows at a moment (computed first, on their own) equal every row's at it
CREATE TABLE few_asof AS SELECT * FROM gnn.predict('ti_time', ARRAY[1, 2, 3, 4, 5]::bigint[], as_of => '2024-06-01');
SELECT count(*) AS rows, bool_and(f.label = a.label) AS same_label, max(abs(f.score - a.score)) < 1e-5 AS same_score
FROM few_asof f JOIN gnn.predict('ti_time', as_of => '2024-06-01') a USING (id);

-- embeddings, neighbours and embed go the same way
SELECT array_length(gnn.embedding('ti_time', 5), 1) AS dim,
       array_length(gnn.embedding('ti_time', '5', as_of => '2024-06-01'), 1) AS dim_as_of,
       gnn.embedding('ti_time', 5) <> gnn.embedding('ti_time', 5, as_of => '2030-01-01') AS moment_matters;
SELECT count(*) AS similar FROM gnn.similar('ti_time', 5, 5);
SELECT count(*) AS similar_as_of FROM gnn.similar('ti_time', '5', 5, as_of => '2024-06-01');
SELECT gnn.embed('ti_time', 'ti_emb') AS written;
SELECT gnn.embed('ti_time', 'ti_emb_asof', as_of => '2024-06-01') AS written;
SELECT count(*) AS rows, bool_and(array_length(embedding, 1) = 64) AS dims FROM ti_emb_asof;
SELECT count(*) AS rows FROM gnn._embedding_rows('ti_time', as_of => '2024-06-01');

-- refused: as_of on a model trained without time, and a time that is no moment
SELECT * FROM gnn.predict('ti_all', as_of => '2024-06-01');
SELECT gnn.embedding('ti_all', 5, as_of => '2024-06-01');
SELECT * FROM gnn.similar('ti_all', 5, as_of => '2024-06-01');
SELECT gnn.embed('ti_all', 'ti_emb_x', as_of => '2024-06-01');
SELECT * FROM gnn.predict('ti_time', as_of => 'infinity');
-- a model trained without time is answered as before (no as_of)
SELECT count(*) AS rows FROM gnn.predict('ti_all');

SELECT count(*) FILTER (WHERE gnn.drop_model(n)) AS dropped FROM unnest(ARRAY['ti_time', 'ti_all']) n;
SELECT gnn.drop_graph('ti_churn');
DROP SCHEMA ti CASCADE;
RESET TimeZone;
RESET client_min_messages;
RESET search_path;
