#!/usr/bin/env bash
# make bench: every benchmark, each writing its report under bench/results/.
# BENCHMARKS.md quotes these reports with their commands and dates.
#   BENCH="load train sql" bash bench/run.sh   # a subset
set -euo pipefail
cd "$(dirname "$0")/.."
WHAT=${BENCH:-"load train sql sample partition topk infer serve schema dist"}
for b in $WHAT; do
  case $b in
    load)  bash bench/load_graph.sh ;;
    train) bash bench/train_cli.sh | tee "bench/results/train_cli-$(date -u +%Y%m%dT%H%M%SZ).txt" ;;
    sql)   bash bench/sql_path.sh ;;
    sample) bash bench/sample_bench.sh ;;
    partition) bash bench/partition_bench.sh ;;
    topk) bash bench/topk_bench.sh ;;
    infer) bash bench/infer_nodes_bench.sh ;;
    serve) bash bench/serve.sh ;;
    schema) bash bench/schema.sh ;;
    dist) bash bench/dist.sh ;;
    *) echo "unknown benchmark $b (load, train, sql, sample, partition, topk, infer, serve, schema, dist)" >&2; exit 2 ;;
  esac
done
