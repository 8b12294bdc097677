-- gnn.training_curve(job): a job's curves as SVG.  The document is well-formed XML, has
-- one point per logged epoch for each series whose value is the log's, marks the selected
-- epoch, names the metric by task, escapes names, and refuses a job with no log.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS gnn;
CREATE TABLE cv_nodes AS
  SELECT id, (id % 3) AS label, (id % 3) * 1.5 + (id % 7) / 7.0 AS y,
         CASE WHEN id < 120 THEN 'train' WHEN id < 180 THEN 'val' ELSE 'test' END AS split,
         (SELECT array_agg(CASE WHEN j % 3 = id % 3 THEN 1 ELSE 0 END + ((id * 7 + j) % 11) / 11.0 ORDER BY j)
            FROM generate_series(0, 11) j)::real[] AS feat
  FROM generate_series(0, 239) id;
CREATE TABLE cv_edges AS
  SELECT s.id AS src, ((s.id * 13 + k * 3) % 80) * 3 + s.id % 3 AS dst FROM cv_nodes s, generate_series(1, 3) k;
SELECT name FROM gnn.load_graph('cv', 'cv_edges', nodes => 'cv_nodes', features => 'feat', label => 'label',
                                split => 'split', undirected => true, persist => false);
SELECT gnn.train('cv', model => 'gcn', name => 'cv <gcn> & co', epochs => 12, seed => 3, wait => true) AS job \gset
SELECT gnn.training_curve(:job) AS svg \gset
SELECT xml_is_well_formed_document(:'svg') AS well_formed, length(:'svg') > 2000 AS has_content;
-- the points: series, epoch and value, read back with XPath, against gnn.training_log
CREATE TEMP TABLE cv_pts AS
SELECT (xpath('/*/@data-series', c))[1]::text AS series, (xpath('/*/@data-epoch', c))[1]::text::int AS epoch,
       (xpath('/*/@data-value', c))[1]::text::float8 AS v,
       (xpath('/*/@cy', c))[1]::text::float8 AS cy
FROM unnest(xpath('//s:circle', xmlparse(document :'svg'), ARRAY[ARRAY['s', 'http://www.w3.org/2000/svg']])) c;
SELECT p.series, count(*) AS points, count(*) = (SELECT count(*) FROM gnn.training_log WHERE job = :job) AS every_epoch,
       bool_and(p.v = CASE p.series WHEN 'loss' THEN l.loss WHEN 'train_accuracy' THEN l.train_acc ELSE l.val_acc END)
         AS values_are_the_log
FROM cv_pts p JOIN gnn.training_log l ON l.job = :job AND l.epoch = p.epoch GROUP BY 1 ORDER BY 1;
-- higher is drawn higher (SVG's y grows downward) on each axis
SELECT series, bool_and((a.v > b.v) = (a.cy < b.cy) OR a.v = b.v) AS monotone
FROM cv_pts a JOIN cv_pts b USING (series) WHERE a.epoch < b.epoch GROUP BY 1 ORDER BY 1;
-- three lines, axis labels, a legend, the title escaped, the selected epoch marked
SELECT count(*) AS lines FROM unnest(xpath('//s:polyline', xmlparse(document :'svg'),
                                           ARRAY[ARRAY['s', 'http://www.w3.org/2000/svg']]));
SELECT array_agg(t ORDER BY t) FILTER (WHERE t IN ('epoch', 'loss', 'accuracy', 'training loss',
                                                   'training accuracy', 'validation accuracy')) AS labels
FROM (SELECT (xpath('/*/text()', x))[1]::text AS t
      FROM unnest(xpath('//s:text', xmlparse(document :'svg'), ARRAY[ARRAY['s', 'http://www.w3.org/2000/svg']])) x) q;
SELECT (xpath('//s:text[@class="title"]/text()', xmlparse(document :'svg'),
              ARRAY[ARRAY['s', 'http://www.w3.org/2000/svg']]))[1]::text = 'cv &lt;gcn&gt; &amp; co: gcn on cv, job ' || :job
         AS title_escaped;
SELECT strpos(:'svg', 'selected: epoch ' || (metrics->>'best_epoch') || '<') > 0 AS best_epoch_marked
FROM gnn.models WHERE job = :job;

-- regression (a schema graph with a numeric label) is drawn as MAE, which the log keeps negated;
-- link prediction as AUC
CREATE TABLE cv_shop (id int PRIMARY KEY, size int);
CREATE TABLE cv_sale (id int PRIMARY KEY, shop int REFERENCES cv_shop, amount float8, y float8, split text);
INSERT INTO cv_shop SELECT i, i % 5 FROM generate_series(1, 30) i;
INSERT INTO cv_sale SELECT i, 1 + i % 30, (i % 13) * 1.5, (i % 13) * 1.5 + (i % 30) % 5,
                           CASE WHEN i % 10 < 6 THEN 'train' WHEN i % 10 < 8 THEN 'val' ELSE 'test' END
FROM generate_series(1, 300) i;
SELECT name FROM gnn.load_schema_graph('cv_reg', ARRAY['cv_shop', 'cv_sale']::regclass[], target => 'cv_sale',
                                       label => 'y', split => 'split', options => '{"exclude": {"cv_sale": ["amount"]}}');
SELECT gnn.train('cv_reg', model => 'hetero_sage', task => 'regression', name => 'cv_reg', epochs => 5, seed => 3,
                 wait => true) AS rjob \gset
SELECT gnn.train('cv', model => 'gcn', task => 'link_prediction', name => 'cv_lp', epochs => 5, seed => 3,
                 wait => true) AS ljob \gset
SELECT strpos(gnn.training_curve(:rjob), 'validation MAE') > 0 AS mae,
       strpos(gnn.training_curve(:ljob), 'validation AUC') > 0 AS auc,
       xml_is_well_formed_document(gnn.training_curve(:rjob)) AND xml_is_well_formed_document(gnn.training_curve(:ljob))
         AS well_formed;
SELECT count(*) AS points, bool_and((xpath('/*/@data-value', c))[1]::text::float8 = -l.val_acc) AS mae_is_minus_the_log
FROM unnest(xpath('//s:circle[@data-series="val_mae"]', xmlparse(document gnn.training_curve(:rjob)),
                  ARRAY[ARRAY['s', 'http://www.w3.org/2000/svg']])) c
JOIN gnn.training_log l ON l.job = :rjob AND l.epoch = (xpath('/*/@data-epoch', c))[1]::text::int;

-- a job with no log: a clear error
RESET client_min_messages;
\set VERBOSITY default
SELECT gnn.training_curve(-1);
\set VERBOSITY terse
SET client_min_messages = warning;
SELECT gnn.drop_graph('cv'), gnn.drop_graph('cv_reg');
DROP TABLE cv_sale, cv_shop, cv_nodes, cv_edges;
SELECT gnn.drop_model(n) FROM unnest(ARRAY['cv <gcn> & co', 'cv_reg', 'cv_lp']) n;
