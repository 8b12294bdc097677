-- gnn.similar's approximate index: built in the background over a shared
-- embedding result, answers equal to the exact scan at full search width,
-- recall at least 0.95 at the default width, versioned and dropped with its
-- result, invisible to other roles, and what gnn.cache says about it.
-- 100,000 rows: test/core/test_hnsw.c; 16 sessions across a version change:
-- test/t/019_similar_index.pl.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS gnn;
SELECT setseed(0.25);
CREATE TABLE si_n AS
  SELECT id, (id % 5)::int AS label,
         CASE WHEN id % 10 < 6 THEN 'train' WHEN id % 10 < 8 THEN 'val' ELSE 'test' END AS split,
         ARRAY[(id % 5 = 0)::int + random(), (id % 5 = 1)::int + random(), (id % 5 = 2)::int + random(),
               (id % 5 = 3)::int + random(), random(), random(), random(), random()]::real[] AS feat
  FROM generate_series(1, 3000) id;
CREATE TABLE si_e AS
  SELECT s.id AS src, ((random() * 599)::int * 5 + s.id % 5) % 3000 + 1 AS dst FROM si_n s, generate_series(1, 4) k;
SELECT nodes FROM gnn.load_graph('si', 'si_e', nodes => 'si_n', features => 'feat', label => 'label', split => 'split');
SELECT gnn.train('si', model => 'graphsage', name => 'si_sage', hidden => 16, epochs => 3, seed => 1, device => 'cpu',
                 wait => true) > 0 AS trained;

-- waits until the caller's embedding result of model m has an index in a final state
CREATE FUNCTION si_wait(m text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE s text;
BEGIN
  FOR i IN 1 .. 1200 LOOP
    SELECT index INTO s FROM gnn.cache WHERE model = m AND kind = 'embedding' ORDER BY version DESC LIMIT 1;
    IF s IN ('ready', 'failed') THEN RETURN s; END IF;
    PERFORM pg_sleep(0.05);
  END LOOP;
  RETURN coalesce(s, 'no entry');
END $$;

-- the job's results are computed by its worker after gnn.train returns (the job is reported
-- at their claims); the calls below find them ready, so the misses counted further down are
-- the calls' own, not a wait for that pass
DO $$
BEGIN
  FOR i IN 1 .. 1200 LOOP
    EXIT WHEN EXISTS (SELECT FROM gnn.cache WHERE model = 'si_sage' AND kind = 'embedding' AND state = 'ready');
    PERFORM pg_sleep(0.05);
  END LOOP;
END $$;

-- below gnn.similar_index_min_rows (50,000 by default) every call scans: no index is asked for
SELECT count(*) FROM gnn.similar('si_sage', 1, 10);
SELECT index FROM gnn.cache WHERE model = 'si_sage' AND kind = 'embedding';

-- at or above it the first call asks for one (and scans meanwhile); a worker builds it
SET gnn.similar_index_min_rows = 1000;
SELECT count(*) FROM gnn.similar('si_sage', 1, 10);
SELECT si_wait('si_sage') AS index;
SELECT index_bytes > 3000 * 4 AS sized, index_seconds >= 0 AS timed, calls >= 2 AS calls_counted,
       p99_ms >= mean_ms AND mean_ms > 0 AS latencies, misses AS misses_of_a_worker_result
FROM gnn.cache WHERE model = 'si_sage' AND kind = 'embedding';

-- at full width the index finds exactly what the scan finds: rows, scores, order
SET gnn.similar_ef = 3000;
CREATE TABLE si_q AS SELECT id FROM generate_series(1, 3000, 11) id;
SELECT index_calls AS index_calls_before FROM gnn.cache WHERE model = 'si_sage' AND kind = 'embedding';
SELECT count(*) AS queries,
       count(*) FILTER (WHERE a IS DISTINCT FROM b) AS differing
FROM (SELECT q.id,
             (SELECT array_agg(s.id || ':' || s.score ORDER BY s.score DESC, s.id) FROM gnn.similar('si_sage', q.id, 10) s) AS a,
             (SELECT array_agg(s.id || ':' || s.score ORDER BY s.score DESC, s.id)
              FROM gnn.similar('si_sage', q.id, 10, exact => true) s) AS b
      FROM si_q q) t;
-- every approximate call above was answered by the index, none of the exact ones
SELECT index_calls AS index_calls_after FROM gnn.cache WHERE model = 'si_sage' AND kind = 'embedding';
-- k beyond the width: still the exact answer
SELECT (SELECT array_agg(id) FROM gnn.similar('si_sage', 5, 2999)) =
       (SELECT array_agg(id) FROM gnn.similar('si_sage', 5, 2999, exact => true)) AS all_rows_equal;

-- at the default width: recall@10 against the exact ranking
RESET gnn.similar_ef;
SELECT sum(hit)::float8 / count(*) >= 0.95 AS recall_at_least_095
FROM (SELECT (e.id IN (SELECT s.id FROM gnn.similar('si_sage', q.id, 10) s))::int AS hit
      FROM si_q q, gnn.similar('si_sage', q.id, 10, exact => true) e) t;
-- text keys take the same path
SELECT count(*) FROM gnn.similar('si_sage', '7'::text, 3);

-- gnn.recommend ranks by dot product from its own index over the same result (node2vec, link prediction)
SELECT gnn.train('si', model => 'node2vec', name => 'si_n2v', epochs => 1, seed => 1,
                 options => '{"dim": 16, "walk_length": 5, "window": 3, "walks_per_node": 2}', wait => true) > 0 AS trained;
SELECT count(*) FROM gnn.recommend('si_n2v', 1, 10);
SELECT count(*) FROM gnn.similar('si_n2v', 1, 10);
CREATE FUNCTION si_wait_link(m text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE s text;
BEGIN
  FOR i IN 1 .. 1200 LOOP
    SELECT link_index INTO s FROM gnn.cache WHERE model = m AND kind = 'embedding';
    IF s IN ('ready', 'failed') THEN RETURN s; END IF;
    PERFORM pg_sleep(0.05);
  END LOOP;
  RETURN coalesce(s, 'no entry');
END $$;
SELECT si_wait_link('si_n2v') AS link_index, si_wait('si_n2v') AS index;
SET gnn.similar_ef = 3000;
SELECT count(*) AS queries, count(*) FILTER (WHERE a IS DISTINCT FROM b) AS differing
FROM (SELECT (SELECT array_agg(s.id || ':' || s.score ORDER BY s.score DESC, s.id) FROM gnn.recommend('si_n2v', q.id, 10) s) AS a,
             (SELECT array_agg(s.id || ':' || s.score ORDER BY s.score DESC, s.id)
              FROM gnn.recommend('si_n2v', q.id, 10, exact => true) s) AS b
      FROM si_q q) t;
-- its neighbours and itself stay out; without exclude_existing they may come back
SELECT count(*) AS neighbours_recommended FROM gnn.recommend('si_n2v', 1, 50) r
WHERE r.id = 1 OR r.id IN (SELECT dst FROM si_e WHERE src = 1);
SELECT (SELECT array_agg(id) FROM gnn.recommend('si_n2v', 1, 20, exclude_existing => false)) =
       (SELECT array_agg(id) FROM gnn.recommend('si_n2v', 1, 20, exclude_existing => false, exact => true)) AS same_without_exclusion;
RESET gnn.similar_ef;
SELECT sum(hit)::float8 / count(*) >= 0.95 AS recommend_recall_at_least_095
FROM (SELECT (e.id IN (SELECT s.id FROM gnn.recommend('si_n2v', q.id, 10) s))::int AS hit
      FROM si_q q, gnn.recommend('si_n2v', q.id, 10, exact => true) e) t;
SELECT index_calls > 2 * (SELECT count(*) FROM si_q) AS index_answered FROM gnn.cache WHERE model = 'si_n2v' AND kind = 'embedding';
SELECT gnn.drop_model('si_n2v') AS dropped;
DROP FUNCTION si_wait_link(text);

-- another role sees neither the model, nor its result, nor its index
CREATE ROLE si_other;
GRANT USAGE ON SCHEMA gnn TO si_other;
SET ROLE si_other;
SELECT count(*) AS entries_seen FROM gnn.cache;
SELECT * FROM gnn.similar('si_sage', 1, 3);
SELECT gnn.cache_drop('si_sage') AS dropped_by_other;
RESET ROLE;
SELECT index FROM gnn.cache WHERE model = 'si_sage' AND kind = 'embedding';

-- dropping the results follows the transaction: rolled back, the index stays
BEGIN;
SELECT gnn.cache_drop('si_sage') AS dropping;
ROLLBACK;
SELECT index FROM gnn.cache WHERE model = 'si_sage' AND kind = 'embedding';
-- committed, result and index go together; the next call computes, asks, and a new index comes
SELECT gnn.cache_drop('si_sage') AS dropped;
SELECT count(*) AS entries FROM gnn.cache WHERE model = 'si_sage';
SELECT count(*) FROM gnn.similar('si_sage', 1, 10);
SELECT si_wait('si_sage') AS index, (SELECT misses FROM gnn.cache WHERE model = 'si_sage' AND kind = 'embedding') AS misses;

-- a new version has its own result and index; the old version's stay its own
SELECT gnn.train('si', model => 'graphsage', name => 'si_sage', hidden => 16, epochs => 2, seed => 2, device => 'cpu',
                 wait => true) > 0 AS retrained;
SELECT count(*) FROM gnn.similar('si_sage', 1, 10);
SELECT si_wait('si_sage') AS index;
SELECT version, index FROM gnn.cache WHERE model = 'si_sage' AND kind = 'embedding' ORDER BY version;
SET gnn.similar_ef = 3000;
SELECT bool_and(a = b) AS each_version_answers_from_its_own
FROM (SELECT v,
             (SELECT array_agg(s.id ORDER BY s.score DESC, s.id) FROM gnn.similar('si_sage', 9, 10, version => v) s) AS a,
             (SELECT array_agg(s.id ORDER BY s.score DESC, s.id) FROM gnn.similar('si_sage', 9, 10, version => v, exact => true) s) AS b
      FROM generate_series(1, 2) v) t;
RESET gnn.similar_ef;

-- the graph reloaded: a new graph version, so a new result (and index) when asked
SELECT nodes FROM gnn.load_graph('si', 'si_e', nodes => 'si_n', features => 'feat', label => 'label', split => 'split',
                                 replace => true);
SELECT count(*) FROM gnn.similar('si_sage', 1, 10);
SELECT count(*) AS entries_of_the_old_graph FROM gnn.cache c
WHERE model = 'si_sage' AND graph_version <> (SELECT max(graph_version) FROM gnn.cache WHERE model = 'si_sage');

-- bad input
SELECT * FROM gnn.similar('si_sage', 1, 0);
SET gnn.similar_ef = 0;
RESET gnn.similar_ef;

-- the planner knows how many rows a call gives: k, or the nodes and pairs asked for
CREATE FUNCTION si_rows(q text) RETURNS float8 LANGUAGE plpgsql AS $$
DECLARE j json;
BEGIN
    EXECUTE 'EXPLAIN (FORMAT JSON) ' || q INTO j;
    RETURN (j->0->'Plan'->>'Plan Rows')::float8;
END $$;
SELECT si_rows($q$SELECT * FROM gnn.similar('si_sage', 1, 25)$q$) AS similar_25,
       si_rows($q$SELECT * FROM gnn.similar('si_sage', 1)$q$) AS similar_default,
       si_rows($q$SELECT * FROM gnn.recommend('si_sage', 1, k => 3)$q$) AS recommend_3,
       si_rows($q$SELECT * FROM gnn.predict('si_sage', ARRAY[1, 2, 3, 4]::bigint[])$q$) AS predict_4,
       si_rows($q$SELECT * FROM gnn.score('si_sage', ARRAY[1, 2]::bigint[], ARRAY[3, 4]::bigint[])$q$) AS score_2;
-- per row of a join: k rows a row
ANALYZE si_q;
SELECT si_rows($q$SELECT * FROM si_q, LATERAL gnn.similar('si_sage', si_q.id, 5) s$q$) / (SELECT count(*) FROM si_q) AS per_row;
-- read in the leader of a parallel plan, never in its workers (they map no results)
SELECT proname, proparallel, count(*) FROM pg_proc
WHERE pronamespace = 'gnn'::regnamespace AND proname IN ('similar', 'recommend', 'predict', 'score', 'embedding')
GROUP BY 1, 2 ORDER BY 1;
DROP FUNCTION si_rows(text);

SELECT gnn.drop_model('si_sage') AS model_dropped;
SELECT count(*) AS entries FROM gnn.cache WHERE model = 'si_sage';
SELECT gnn.drop_graph('si') AS graph_dropped;
DROP FUNCTION si_wait(text);
DROP TABLE si_n, si_e, si_q;
REVOKE USAGE ON SCHEMA gnn FROM si_other;
DROP ROLE si_other;
