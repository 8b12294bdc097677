-- relsel_schema.sql: a relation-selective graph for issue #11.  One kind of
-- entity, people, linked by two tables with the same shape: `signal` rows
-- mostly join people of the same label, `noise` rows (three times as many)
-- join random people.  As every listed table is a node type and every
-- foreign key an edge type, a person reaches another in two hops through a
-- signal (or noise) row.  The people's own columns say nothing about the
-- label, so a model has to tell the two relations apart: one that merges
-- them (a homogeneous GNN over all links) sees mostly noise, one with
-- per-relation weights (R-GCN, typed SAGE) can keep the signal.
--
--   psql -v people=600 -v signal_edges=3000 -v noise_edges=9000 -f test/relsel_schema.sql
--
-- psql variables (defaults): people 600, signal_edges 3000, noise_edges 9000,
-- classes 3, homophily 0.9 (share of signal rows whose ends share a label),
-- seed 42.  Deterministic: values are md5 functions of (seed, row number).
--
-- Tables (current schema; dropped first):
--   people(id int PK, label int 0..classes-1, split 'train'/'val'/'test'
--          60/20/20 by hash, noise real uniform in [0,1): uninformative)
--   signal(id bigint PK, src int -> people, dst int -> people)
--   noise(id bigint PK, src int -> people, dst int -> people)
-- People ids are 1 + (i * 7919) % people (a permutation of 1..people), so
-- the label (i % classes) is not the id's residue.
--
-- Measured (defaults, seed 42), by the query at the end of this file: vote of
-- the training labels two hops away, accuracy on the test split (135 people):
--   signal only   0.993    noise only   0.385    both merged   0.844
--   same-label share of the rows' ends: signal 0.936, noise 0.332
-- (chance 1/3.  A merged majority vote still profits from the signal rows, as
-- their votes agree and the noise votes scatter; with noise_edges=30000 the
-- merged vote falls to 0.652 while signal-only stays 0.993.)
\if :{?people} \else \set people 600 \endif
\if :{?signal_edges} \else \set signal_edges 3000 \endif
\if :{?noise_edges} \else \set noise_edges 9000 \endif
\if :{?classes} \else \set classes 3 \endif
\if :{?homophily} \else \set homophily 0.9 \endif
\if :{?seed} \else \set seed 42 \endif

SET client_min_messages = warning;
-- uniform in (0, 1) from the k-th 32-bit slice of an md5 hex string
CREATE OR REPLACE FUNCTION pg_temp.rs_u(h text, k int) RETURNS float8
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$ SELECT (('x' || substr(h, 8 * k - 7, 8))::bit(32)::bigint::float8 + 0.5) / 4294967296::float8 $$;
-- person i's key (i = 0 .. n - 1): a permutation of 1 .. n
CREATE OR REPLACE FUNCTION pg_temp.rs_pid(i bigint, n bigint) RETURNS int
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$ SELECT (1 + (i * CASE WHEN n % 7919 = 0 THEN 7927 ELSE 7919 END) % n)::int $$;

DROP TABLE IF EXISTS signal, noise, people;

CREATE TABLE people AS
SELECT pg_temp.rs_pid(i, :people) AS id,
	   (i % :classes)::int AS label,
	   CASE WHEN pg_temp.rs_u(h, 1) < 0.6 THEN 'train'
			WHEN pg_temp.rs_u(h, 1) < 0.8 THEN 'val' ELSE 'test' END AS split,
	   pg_temp.rs_u(h, 2)::real AS noise
FROM generate_series(0, :people - 1) i,
	 LATERAL (SELECT md5(:'seed' || ':person:' || i) AS h) x
ORDER BY 1;

-- A signal row from person s: with probability homophily to a person of s's
-- label (index label + classes * k), else to anyone.
CREATE TABLE signal AS
SELECT i + 1 AS id, pg_temp.rs_pid(s, :people) AS src,
	   pg_temp.rs_pid(CASE WHEN pg_temp.rs_u(h, 2) < :homophily
						   THEN s % :classes + :classes * floor(pg_temp.rs_u(h, 3)
								* ((:people - 1 - s % :classes) / :classes + 1))::bigint
						   ELSE floor(pg_temp.rs_u(h, 3) * :people)::bigint END, :people) AS dst
FROM generate_series(0, :signal_edges - 1) i,
	 LATERAL (SELECT md5(:'seed' || ':signal:' || i) AS h) x,
	 LATERAL (SELECT floor(pg_temp.rs_u(h, 1) * :people)::bigint AS s) y
ORDER BY 1;

CREATE TABLE noise AS
SELECT i + 1 AS id,
	   pg_temp.rs_pid(floor(pg_temp.rs_u(h, 1) * :people)::bigint, :people) AS src,
	   pg_temp.rs_pid(floor(pg_temp.rs_u(h, 2) * :people)::bigint, :people) AS dst
FROM generate_series(0, :noise_edges - 1) i,
	 LATERAL (SELECT md5(:'seed' || ':noise:' || i) AS h) x
ORDER BY 1;

ALTER TABLE people ADD PRIMARY KEY (id);
ALTER TABLE signal ADD PRIMARY KEY (id),
	ADD FOREIGN KEY (src) REFERENCES people, ADD FOREIGN KEY (dst) REFERENCES people;
ALTER TABLE noise ADD PRIMARY KEY (id),
	ADD FOREIGN KEY (src) REFERENCES people, ADD FOREIGN KEY (dst) REFERENCES people;
RESET client_min_messages;

-- The check behind the figures above (not run here):
--
-- WITH link AS (
--     SELECT 'signal' AS rel, src AS a, dst AS b FROM signal UNION ALL
--     SELECT 'signal', dst, src FROM signal UNION ALL
--     SELECT 'noise', src, dst FROM noise UNION ALL
--     SELECT 'noise', dst, src FROM noise
-- ), votes AS (	-- training labels two hops away, per relation and merged
--     SELECT l.a, r.rel, q.label, count(*) AS n
--     FROM link l JOIN people q ON q.id = l.b AND q.split = 'train'
--     CROSS JOIN LATERAL (VALUES (l.rel), ('both')) r(rel)
--     GROUP BY 1, 2, 3
-- ), guess AS (
--     SELECT DISTINCT ON (a, rel) a, rel, label FROM votes ORDER BY a, rel, n DESC, label
-- )
-- SELECT rel, round(avg((g.label = p.label)::int), 3) AS acc_test, count(*)
-- FROM people p JOIN guess g ON g.a = p.id WHERE p.split = 'test' GROUP BY 1;
--
-- SELECT 'signal', round(avg((a.label = b.label)::int), 3)
-- FROM signal e JOIN people a ON a.id = e.src JOIN people b ON b.id = e.dst
-- UNION ALL
-- SELECT 'noise', round(avg((a.label = b.label)::int), 3)
-- FROM noise e JOIN people a ON a.id = e.src JOIN people b ON b.id = e.dst;
