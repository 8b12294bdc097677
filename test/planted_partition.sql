-- A planted-partition (stochastic block model) graph whose features carry the
-- class signal: the demo's default where ../shared/data is missing, and a
-- fixture for tests.  psql variables: n (nodes), c (classes), deg (average
-- degree), p_in (share of edges inside the class), dim (feature dimension).
\if :{?n} \else \set n 2000 \endif
\if :{?c} \else \set c 5 \endif
\if :{?deg} \else \set deg 8 \endif
\if :{?p_in} \else \set p_in 0.8 \endif
\if :{?dim} \else \set dim 32 \endif
SELECT setseed(0.42);
DROP TABLE IF EXISTS pp_nodes, pp_edges;
CREATE TABLE pp_nodes AS
  SELECT id, (id % :c)::int AS label,
         CASE WHEN id < 20 * :c THEN 'train' WHEN id < 20 * :c + 500 THEN 'val'
              WHEN id < 20 * :c + 1500 THEN 'test' END AS split,
         -- a noisy bump on the class's own block of coordinates
         (SELECT array_agg(CASE WHEN j % :c = id % :c THEN 0.6 ELSE 0 END + random()::real ORDER BY j)
            FROM generate_series(0, :dim - 1) j)::real[] AS feat
  FROM generate_series(0, :n - 1) id;
ALTER TABLE pp_nodes ADD PRIMARY KEY (id);
CREATE TABLE pp_edges AS
  SELECT s.id AS src,
         CASE WHEN random() < :p_in
              THEN (((random() * (:n / :c - 1))::int) * :c + s.id % :c) % :n  -- same class
              ELSE (random() * (:n - 1))::int END AS dst
  FROM pp_nodes s, generate_series(1, :deg / 2) k;
