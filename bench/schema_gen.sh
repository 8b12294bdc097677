#!/usr/bin/env bash
# bench/schema_gen.sh: the shop schema (test/shop_schema.sql) at benchmark
# scale in an existing database, then VACUUM ANALYZE; prints row counts and
# the time of each step.
#
# The database is libpq's: PGHOST / PGPORT / PGDATABASE / PGUSER from the
# environment, and any further arguments go to psql as they are, e.g.
#   bash bench/schema_gen.sh -h /tmp -p 5432 -d shop
#   CUSTOMERS=100000 PRODUCTS=10000 REVIEWS=1000000 bash bench/schema_gen.sh -d shop
#   SCHEMA=bench bash bench/schema_gen.sh -d shop      # into schema "bench" (created)
#
# Scale (environment; defaults are the benchmark's): CUSTOMERS 1000000,
# PRODUCTS 100000, CATEGORIES 200, REVIEWS 10000000, SEED 42; NGROUPS (the
# script's groups: bash owns $GROUPS), AFFINITY, BRAND_SIGNAL and NOISE pass
# through when set (see the script's header).  The tables are dropped and rebuilt.  Generation is single-threaded
# (one md5-driven statement per table).  Measured at the default scale on a
# 2-core x86 VM, PostgreSQL 15 (fsync off, shared_buffers 1GB): 150 s in all
# (the reviews table ~2 minutes, customers ~40 s, keys, foreign keys and
# indexes ~35 s, VACUUM ANALYZE ~1 s); 1.2 GB on disk.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
SQL="$HERE/../test/shop_schema.sql"
CUSTOMERS=${CUSTOMERS:-1000000}
PRODUCTS=${PRODUCTS:-100000}
CATEGORIES=${CATEGORIES:-200}
REVIEWS=${REVIEWS:-10000000}
SEED=${SEED:-42}
VISITS=${VISITS:-0}			# the noise relation of the tests; none at benchmark scale
SCHEMA=${SCHEMA:-}

vars=(-v "customers=$CUSTOMERS" -v "products=$PRODUCTS" -v "categories=$CATEGORIES"
      -v "reviews=$REVIEWS" -v "seed=$SEED" -v "visits=$VISITS")
[ -n "${NGROUPS:-}" ] && vars+=(-v "groups=$NGROUPS")
[ -n "${AFFINITY:-}" ] && vars+=(-v "affinity=$AFFINITY")
[ -n "${BRAND_SIGNAL:-}" ] && vars+=(-v "brand_signal=$BRAND_SIGNAL")
[ -n "${NOISE:-}" ] && vars+=(-v "noise=$NOISE")

psql_() { psql -X -q -v ON_ERROR_STOP=1 -P pager=off "$@"; }
# the search_path prefix every step runs under
pre=()
if [ -n "$SCHEMA" ]; then
  psql_ "$@" -c "CREATE SCHEMA IF NOT EXISTS \"$SCHEMA\""
  pre=(-c "SET search_path = \"$SCHEMA\", public")
fi

now() { date +%s.%N; }
echo "schema_gen: customers=$CUSTOMERS products=$PRODUCTS categories=$CATEGORIES reviews=$REVIEWS seed=$SEED${SCHEMA:+ schema=$SCHEMA}"
t0=$(now)
# PGOPTIONS rather than -c so that the setting holds for the -f script too
PGOPTIONS="${PGOPTIONS:-} -c maintenance_work_mem=512MB -c work_mem=256MB${SCHEMA:+ -c search_path=$SCHEMA,public}" \
  psql_ "$@" "${vars[@]}" -f "$SQL"
t1=$(now)
psql_ "$@" "${pre[@]}" -c "VACUUM ANALYZE categories, products, customers, reviews"
t2=$(now)
psql_ "$@" "${pre[@]}" -At -F ' ' -c "
  SELECT 'categories', count(*) FROM categories UNION ALL
  SELECT 'products', count(*) FROM products UNION ALL
  SELECT 'customers', count(*) FROM customers UNION ALL
  SELECT 'reviews', count(*) FROM reviews UNION ALL
  SELECT 'reviews without product', count(*) FROM reviews WHERE product_id IS NULL UNION ALL
  SELECT 'total size (MB)', (pg_total_relation_size('categories') + pg_total_relation_size('products')
     + pg_total_relation_size('customers') + pg_total_relation_size('reviews')) / 1048576" |
  awk '{n=$NF; $NF=""; printf "  %-26s %12s\n", $0, n}'
awk -v a="$t0" -v b="$t1" -v c="$t2" 'BEGIN {
  printf "  generate (tables, keys, indexes) %8.1f s\n  vacuum analyze                   %8.1f s\n  total                            %8.1f s\n", b - a, c - b, c - a }'
