-- shop_schema.sql: a seeded "shop" schema (categories, products, customers,
-- reviews) for issue #11: relational schemas as heterogeneous graphs.  Tests,
-- the demo and the benchmarks load it; bench/schema_gen.sh runs it at scale.
--
--   psql -v customers=300 -v products=200 -v categories=12 -v reviews=3000 \
--        -v seed=42 -f test/shop_schema.sql
--
-- psql variables (defaults): customers 300, products 200, categories 12,
-- reviews 3000, seed 42; also groups 4 (category groups = label classes,
-- 2..8), affinity 0.7 (share of a customer's reviews that go to products of
-- their preferred group), brand_signal 0.5 (share of products whose brand is
-- one of their group's three brands), noise 0.05 (share of labels replaced by
-- another class).  Needs categories >= groups, products >= groups.
--
-- Tables (in the current schema; dropped first):
--   categories(id text 'cat-07' PK, name, dept, created_at)
--   products(id bigint PK, category_id -> categories, name, brand, price,
--            weight_kg, added_at)
--   customers(id uuid PK, age, country, signed_up, segment, split, churn, spend)
--   reviews(id bigint PK, customer_id -> customers, product_id -> products
--           (NULL on ~3% of rows: no edge), rating, body_len, created_at)
--
-- The planted label.  Categories fall into `groups` departments (category c
-- is in department c % groups, categories.dept names it).  Each customer has
-- a hidden preferred department; each review goes, with probability
-- `affinity`, to a product of that department, otherwise to any product.
-- customers.segment is then the department most of the customer's reviewed
-- products belong to (ties: the smaller name), replaced by another
-- department for a `noise` share of customers.  So the label is a function of
-- the graph customer <- review -> product -> category (products one hop past
-- the reviews, their department one more), while:
--   - the customer's own columns (age, country, signed_up) are independent
--     of it: a features-only model on customers is at chance (1 / groups);
--   - the product's own columns are only weakly informative: the brand is one
--     of the department's three brands for a `brand_signal` share of products
--     (else any of 3 * groups brands), the price's log-mean shifts a little
--     with the department.  Aggregated over a customer's ~10 reviewed
--     products, brands recover much of the label (see test/shop_check.sql);
--     the department itself sits on the category.
--   churn (bool) and spend (numeric) are further targets driven by the same
--   (noise-free) majority department: churn probability 0.15 .. 0.85 and
--   spend mean 50 .. 50 + 40 * (groups - 1) across departments, plus noise.
--   split: 70% train, 15% val, 15% test, by hash.
--
-- Keys: categories are text ('cat-000'), products are bigint spread over
-- about +-2e18 (negative and beyond 2^53, so a key that passes through a
-- double is caught), customers are uuid (md5-derived), reviews 1..reviews.
--
-- Time: reviews.created_at lies in [2023-01-01, 2025-01-01) UTC; each
-- customer becomes active at a hashed time in the first 18 months, signed up
-- up to a year before that, and reviews after it.  Products were added
-- (added_at) in the 3 years before 2023, categories earlier still.
--
-- Determinism: every value is a function of (seed, row number) through md5
-- (no random(), no dependence on row order or parallel plans; times are
-- computed as epoch seconds, so not on TimeZone either), so two runs with the
-- same variables give identical tables.  Fingerprints at the defaults
-- (md5(string_agg(t::text, E'\n' ORDER BY id)) per table, TimeZone UTC):
--   categories 585877d6d49c7567383eae28627d02fe  products 05d79dc3439c6ef9a3370a3248d55d21
--   customers  94ed002f512e3eb0fb78bacf982a72c6  reviews  2c9044b0fb1d5b59368d4986af040a2e
--
-- Each customer gets at least min(3, reviews / customers) reviews with a
-- product; the rest are spread with a heavy tail (customer index ~
-- customers * u^1.5: at the benchmark scale the busiest has ~700 reviews).
\if :{?customers} \else \set customers 300 \endif
\if :{?products} \else \set products 200 \endif
\if :{?categories} \else \set categories 12 \endif
\if :{?reviews} \else \set reviews 3000 \endif
\if :{?seed} \else \set seed 42 \endif
\if :{?groups} \else \set groups 4 \endif
\if :{?affinity} \else \set affinity 0.7 \endif
\if :{?brand_signal} \else \set brand_signal 0.5 \endif
\if :{?noise} \else \set noise 0.05 \endif
\if :{?visits} \else \set visits 6000 \endif

SET client_min_messages = warning;
-- (psql does not substitute variables inside dollar quotes: check here)
CREATE OR REPLACE FUNCTION pg_temp.shop_fail(msg text) RETURNS int
LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION '%', msg; END $$;
SELECT count(pg_temp.shop_fail('shop_schema.sql: need 2 <= groups <= 8, groups <= categories, '
							   'groups <= products <= 2e7, customers >= 1, reviews >= 0')) AS shop_failed
WHERE NOT (:groups BETWEEN 2 AND 8 AND :categories >= :groups AND :products >= :groups
		   AND :products <= 20000000 AND :customers >= 1 AND :reviews >= 0) \gset

-- Helpers (session-local).  The planner inlines them only where each
-- parameter is used once or its argument is cheap: keep it so (a call that
-- is not inlined costs microseconds, times 10M reviews), and float8, not
-- numeric, arithmetic.
-- shop_u(h, k): the k-th (1..4) 32-bit slice of the md5 hex h as a uniform
-- number in (0, 1).
CREATE OR REPLACE FUNCTION pg_temp.shop_u(h text, k int) RETURNS float8
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$ SELECT (('x' || substr(h, 8 * k - 7, 8))::bit(32)::bigint::float8 + 0.5) / 4294967296::float8 $$;
-- shop_z(h, k): a standard normal from slices k and k + 1 (Box-Muller).
CREATE OR REPLACE FUNCTION pg_temp.shop_z(h text, k int) RETURNS float8
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$ SELECT sqrt(-2 * ln(pg_temp.shop_u(h, k))) * cos(2 * pi() * pg_temp.shop_u(h, k + 1)) $$;
-- shop_pid(j, np): product j's key (j = 0 .. np - 1; ascending in j):
-- (j - np / 2) * (4e18 / np) + 7919 * j + 13, written with j once.
CREATE OR REPLACE FUNCTION pg_temp.shop_pid(j bigint, np bigint) RETURNS bigint
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$ SELECT j * (4000000000000000000 / np + 7919) - (np / 2) * (4000000000000000000 / np) + 13 $$;
-- shop_cat(c, nc): category c's key, zero-padded to at least two digits.
CREATE OR REPLACE FUNCTION pg_temp.shop_cat(c bigint, nc bigint) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$ SELECT 'cat-' || lpad(c::text, greatest(2, length((nc - 1)::text)), '0') $$;
-- shop_dept(g): department g's name.
CREATE OR REPLACE FUNCTION pg_temp.shop_dept(g bigint) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$ SELECT (ARRAY['books','fashion','garden','grocery','home','outdoor','tech','toys'])[g + 1] $$;
-- shop_cid(seed, c): customer c's key.
CREATE OR REPLACE FUNCTION pg_temp.shop_cid(seed text, c bigint) RETURNS uuid
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$ SELECT md5(seed || ':cid:' || c)::uuid $$;

DROP TABLE IF EXISTS visits, reviews, customers, products, categories;

CREATE TABLE categories AS
SELECT pg_temp.shop_cat(c, :categories) AS id,
	   initcap(pg_temp.shop_dept(c % :groups)) || ' ' || (c / :groups + 1) AS name,
	   pg_temp.shop_dept(c % :groups) AS dept,
	   to_timestamp(1420070400 + floor(pg_temp.shop_u(h, 1) * 1461) * 86400) AS created_at
FROM (SELECT c, md5(:'seed' || ':cat:' || c) AS h
	  FROM generate_series(0, :categories - 1) c OFFSET 0) x
ORDER BY c;

-- Product j is in department j % groups, in one of that department's
-- categories (c = g + groups * k).
CREATE TABLE products AS
SELECT pg_temp.shop_pid(j, :products) AS id,
	   pg_temp.shop_cat(g + :groups * floor(pg_temp.shop_u(h, 1)
			* ((:categories - 1 - g) / :groups + 1))::bigint, :categories) AS category_id,
	   'Product ' || j AS name,
	   'brand-' || chr(65 + CASE WHEN pg_temp.shop_u(h, 2) < :brand_signal
								  THEN 3 * g + floor(pg_temp.shop_u(h, 3) * 3)::int
								  ELSE floor(pg_temp.shop_u(h, 3) * 3 * :groups)::int END) AS brand,
	   round(exp(3.2 + 0.12 * g + 0.8 * pg_temp.shop_z(h2, 1))::numeric, 2) AS price,
	   round((0.05 + 8 * pg_temp.shop_u(h, 4) ^ 2)::numeric, 3) AS weight_kg,
	   to_timestamp(1577836800 + floor(pg_temp.shop_u(h2, 3) * 1096 * 86400)) AS added_at
FROM (SELECT j, md5(:'seed' || ':p:' || j) AS h, md5(:'seed' || ':p2:' || j) AS h2,
			 j % :groups AS g
	  FROM generate_series(0, :products - 1) j OFFSET 0) x
ORDER BY j;

-- Per customer c (hash hc = md5(seed:c:c)): slice 1 = preferred department,
-- slice 2 = when they become active (start).  Reviews recompute both.
-- (OFFSET 0 keeps each step a subquery of its own: pulled up into the next,
-- its columns would be recomputed, md5s included, at every reference.)
CREATE TABLE reviews AS
WITH r AS (
	SELECT i, md5(:'seed' || ':r:' || i) AS h, md5(:'seed' || ':r2:' || i) AS h2,
		   least(3, :reviews / :customers)::bigint * :customers AS nmin
	FROM generate_series(0, :reviews - 1) i OFFSET 0
), rc AS (
	SELECT i, h, h2, nmin,
		   CASE WHEN i < nmin THEN i % :customers
				ELSE least(:customers - 1, floor(:customers * pg_temp.shop_u(h, 1) ^ 1.5))::bigint END AS c
	FROM r OFFSET 0
), rcc AS (
	SELECT i, h, h2, nmin, c, md5(:'seed' || ':c:' || c) AS hc FROM rc OFFSET 0
), rp AS (
	SELECT i, h, h2, nmin, c, hc,
		   floor(pg_temp.shop_u(hc, 1) * :groups)::bigint AS pref,
		   pg_temp.shop_u(h, 2) < :affinity AS on_pref,
		   1672531200 + pg_temp.shop_u(hc, 2) * 548 * 86400 AS start
	FROM rcc OFFSET 0
)
SELECT i + 1 AS id,
	   pg_temp.shop_cid(:'seed', c) AS customer_id,
	   CASE WHEN i >= nmin AND pg_temp.shop_u(h2, 3) < 0.03 THEN NULL
			WHEN on_pref THEN pg_temp.shop_pid(pref + :groups * floor(pg_temp.shop_u(h, 3)
					* ((:products - 1 - pref) / :groups + 1))::bigint, :products)
			ELSE pg_temp.shop_pid(floor(pg_temp.shop_u(h, 3) * :products)::bigint, :products)
	   END AS product_id,
	   CASE WHEN on_pref THEN 4 + (pg_temp.shop_u(h2, 1) < 0.6)::int
			ELSE 1 + floor(pg_temp.shop_u(h2, 1) * 5)::int END AS rating,
	   (20 + floor(pg_temp.shop_u(h2, 4) * 600))::int AS body_len,
	   to_timestamp(floor(start + pg_temp.shop_u(h, 4) * (1735689599 - start))) AS created_at
FROM rp;	-- (generate_series's order; a sort of every review would only cost)

-- The majority department of each customer's reviewed products, then the
-- customers with their labels.
CREATE TABLE customers AS
WITH counts AS (
	SELECT r.customer_id, k.dept, count(*) AS n
	FROM reviews r JOIN products p ON p.id = r.product_id JOIN categories k ON k.id = p.category_id
	GROUP BY 1, 2
), maj AS (
	SELECT DISTINCT ON (customer_id) customer_id, dept
	FROM counts ORDER BY customer_id, n DESC, dept
), cu AS (
	SELECT c, md5(:'seed' || ':c:' || c) AS hc, md5(:'seed' || ':c2:' || c) AS hc2,
		   md5(:'seed' || ':c3:' || c) AS hc3, pg_temp.shop_cid(:'seed', c) AS id
	FROM generate_series(0, :customers - 1) c OFFSET 0
), cm AS (
	-- g: the majority department's number (a customer without reviewed
	-- products falls back to their preference)
	SELECT cu.*, coalesce(array_position(ARRAY['books','fashion','garden','grocery','home',
								'outdoor','tech','toys'], maj.dept) - 1,
						  floor(pg_temp.shop_u(hc, 1) * :groups)::int) AS g,
		   1672531200 + pg_temp.shop_u(hc, 2) * 548 * 86400 AS start
	FROM cu LEFT JOIN maj ON maj.customer_id = cu.id OFFSET 0
)
SELECT id,
	   (18 + floor(pg_temp.shop_u(hc, 4) * 62))::int AS age,
	   CASE WHEN pg_temp.shop_u(hc2, 2) < 0.05 THEN NULL
			ELSE (ARRAY['US','US','US','US','DE','DE','GB','GB','FR','FR','JP','BR','IN','CA'])
					[1 + floor(pg_temp.shop_u(hc2, 1) * 14)::int] END AS country,
	   to_timestamp(floor(start - pg_temp.shop_u(hc, 3) * 365 * 86400)) AS signed_up,
	   pg_temp.shop_dept(CASE WHEN pg_temp.shop_u(hc2, 4) < :noise
							  THEN (g + 1 + floor(pg_temp.shop_u(hc3, 1) * (:groups - 1))::int) % :groups
							  ELSE g END) AS segment,
	   CASE WHEN pg_temp.shop_u(hc2, 3) < 0.70 THEN 'train'
			WHEN pg_temp.shop_u(hc2, 3) < 0.85 THEN 'val' ELSE 'test' END AS split,
	   pg_temp.shop_u(hc3, 2) < 0.15 + 0.7 * g / (:groups - 1) AS churn,
	   round(greatest(0, 50 + 40 * g + 15 * pg_temp.shop_z(hc3, 3))::numeric, 2) AS spend,
	   -- when the segment was taken: between the customer's first activity and
	   -- the end of the data (half of their reviews lie before it, on average)
	   to_timestamp(floor(start + (0.5 + 0.5 * pg_temp.shop_u(hc3, 4)) * (1735689599 - start))) AS snapshot_at
FROM cm
ORDER BY c;

-- Visits: products a customer looked at, uniformly at random (no signal): a
-- second edge type between customers and products that a type-blind model
-- cannot tell from reviews.
CREATE TABLE visits AS
SELECT i + 1 AS id,
	   pg_temp.shop_cid(:'seed', floor(pg_temp.shop_u(h, 1) * :customers)::bigint) AS customer_id,
	   pg_temp.shop_pid(floor(pg_temp.shop_u(h, 2) * :products)::bigint, :products) AS product_id,
	   (1 + floor(pg_temp.shop_u(h, 3) * 300))::int AS seconds_on_page,
	   to_timestamp(floor(1672531200 + pg_temp.shop_u(h, 4) * (1735689599 - 1672531200))) AS visited_at
FROM (SELECT i, md5(:'seed' || ':v:' || i) AS h FROM generate_series(0, :visits - 1) i OFFSET 0) v;

ALTER TABLE categories ADD PRIMARY KEY (id);
ALTER TABLE products ADD PRIMARY KEY (id),
	ADD FOREIGN KEY (category_id) REFERENCES categories;
ALTER TABLE customers ADD PRIMARY KEY (id);
ALTER TABLE reviews ADD PRIMARY KEY (id),
	ADD FOREIGN KEY (customer_id) REFERENCES customers,
	ADD FOREIGN KEY (product_id) REFERENCES products;
ALTER TABLE visits ADD PRIMARY KEY (id),
	ADD FOREIGN KEY (customer_id) REFERENCES customers,
	ADD FOREIGN KEY (product_id) REFERENCES products;
CREATE INDEX ON reviews (customer_id);
CREATE INDEX ON reviews (product_id);
CREATE INDEX ON products (category_id);
RESET client_min_messages;
