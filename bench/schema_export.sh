#!/usr/bin/env bash
# bench/schema_export.sh: the shop tables (bench/schema_gen.sh) as CSV files
# for a run outside the database (bench/pyg_hetero.py).
#
#   bash bench/schema_export.sh OUTDIR [psql args...]
#   PGDATABASE=shop bash bench/schema_export.sh /tmp/shop-csv
#   SCHEMA=bench bash bench/schema_export.sh /tmp/shop-csv -h /tmp -d shop
#
# Writes OUTDIR/{categories,products,customers,reviews}.csv with a header
# row, ordered by key; timestamps as epoch seconds (integers, so no parser has
# to guess a time zone), NULL as an empty field, booleans as t / f.  \copy
# runs client side: OUTDIR is on this machine, not the server's.
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 OUTDIR [psql args...]" >&2; exit 2; }
OUT=$1; shift
SCHEMA=${SCHEMA:-}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
case "$OUT" in *"'"*) echo "schema_export: OUTDIR may not contain a quote" >&2; exit 2;; esac

pre=()
[ -n "$SCHEMA" ] && pre=(-c "SET search_path = \"$SCHEMA\", public")
ep() { echo "extract(epoch FROM $1)::bigint AS $1"; }

start=$(date +%s.%N)
psql -X -q -v ON_ERROR_STOP=1 "$@" "${pre[@]}" \
  -c "\\copy (SELECT id, name, dept, $(ep created_at) FROM categories ORDER BY id) TO '$OUT/categories.csv' WITH (FORMAT csv, HEADER)" \
  -c "\\copy (SELECT id, category_id, name, brand, price, weight_kg, $(ep added_at) FROM products ORDER BY id) TO '$OUT/products.csv' WITH (FORMAT csv, HEADER)" \
  -c "\\copy (SELECT id, age, country, $(ep signed_up), segment, split, churn, spend FROM customers ORDER BY id) TO '$OUT/customers.csv' WITH (FORMAT csv, HEADER)" \
  -c "\\copy (SELECT id, customer_id, product_id, rating, body_len, $(ep created_at) FROM reviews ORDER BY id) TO '$OUT/reviews.csv' WITH (FORMAT csv, HEADER)"
end=$(date +%s.%N)
for t in categories products customers reviews; do
  printf '  %-11s %12d rows  %8.1f MB\n' "$t" $(($(wc -l < "$OUT/$t.csv") - 1)) \
    "$(awk -v b="$(stat -c %s "$OUT/$t.csv")" 'BEGIN { print b / 1048576 }')"
done
awk -v a="$start" -v b="$end" 'BEGIN { printf "  export %.1f s\n", b - a }'
