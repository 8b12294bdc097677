#!/usr/bin/env bash
# sql_checks.sh: the GPU path end to end through SQL, on a throwaway cluster
# (issue #13, "GPU checks, end to end through SQL").  Run by
# run_gpu_checks.sh; alone:  bash test/gpu/sql_checks.sh   (as root or any user)
#
#  1. PostgreSQL: the machine's own pg_config, else (or with GNN_PG_BUNDLE=1)
#     the bundle carried with the run (test/gpu/debs, made here by
#     `bash test/gpu/pg_bundle.sh fetch`, named in the device tool's carry).
#  2. gnn (with gnn_cuda.so when nvcc is there) built and installed into it.
#  3. A cluster in a temporary directory, run by a non-root user.
#  4. Through SQL: Cora GCN and GAT full batch with device => 'cuda' and
#     'cpu' (test accuracy, ms per epoch from gnn.training_log), minibatch
#     GraphSAGE on a generated R-MAT graph (NODES, default 500000, EDGES
#     3000000 made undirected, 100-dim features; seconds per epoch and the
#     sampling / gathering / compute split), the same on a products-size
#     graph (2449029 nodes, 29M edges; cuda only; PRODUCTS=0 skips it),
#     gnn.sample_neighbors, and
#     compute-sanitizer over one short job when it is installed.
# Figures go to $OUT/sql_checks.md.  Exit status 0 when every check passed;
# without a usable GPU the cuda jobs fail with their error and say so.
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-test/gpu/out}
mkdir -p "$OUT"
REPORT=$OUT/sql_checks.md
NODES=${NODES:-500000}
EDGES=${EDGES:-3000000}
# the minibatch runs on it, device:gpu_sampling; PRODUCTS=0 skips the
# products-size graph after it
RMAT_RUNS=${RMAT_RUNS:-cuda:true cuda:false cpu:true}
FAIL=0
note() { echo "$*" | tee -a "$REPORT"; }
: > "$REPORT"

# 1. PostgreSQL
# GNN_PG_BUNDLE=1: the bundle even where the machine has its own (to test the bundle)
if [ -z "${PG_CONFIG:-}" ] && [ "${GNN_PG_BUNDLE:-0}" != 1 ] && command -v pg_config > /dev/null &&
	[ -x "$(pg_config --bindir)/initdb" ]; then
	PG_CONFIG=$(command -v pg_config)
fi
if [ -z "${PG_CONFIG:-}" ]; then
	# shellcheck source=test/gpu/pg_bundle.sh
	source test/gpu/pg_bundle.sh install || { note "no PostgreSQL: neither pg_config nor a bundle"; exit 1; }
fi
BIN=$("$PG_CONFIG" --bindir)
note "# GPU checks through SQL, $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
note "- PostgreSQL: $("$PG_CONFIG" --version), $BIN"

# 2. gnn into it
if ! make -j"$(nproc)" PG_CONFIG="$PG_CONFIG" install > "$OUT/sql_build.log" 2>&1; then
	note "- build failed: $(tail -n 3 "$OUT/sql_build.log" | tr '\n' ' ')"
	exit 1
fi
note "- gnn installed into $("$PG_CONFIG" --pkglibdir) ($(ls "$("$PG_CONFIG" --pkglibdir)"/gnn*.so | xargs -n1 basename | tr '\n' ' '))"

# 3. the cluster, owned by a user initdb accepts
RUNAS=""
if [ "$(id -u)" = 0 ]; then
	id gnnrun > /dev/null 2>&1 || useradd -M -s /bin/bash gnnrun 2> /dev/null || true
	RUNAS=gnnrun
fi
PGD=$(mktemp -d /tmp/gnn_gpu_sql.XXXXXX)
chmod 755 "$PGD"
[ -n "$RUNAS" ] && chown "$RUNAS" "$PGD"
as_run() { if [ -n "$RUNAS" ]; then su "$RUNAS" -s /bin/bash -c "export LD_LIBRARY_PATH='${LD_LIBRARY_PATH:-}'; $*"; else bash -c "$*"; fi; }
PORT=$((20000 + RANDOM % 20000))
as_run "'$BIN/initdb' -D '$PGD/data' -A trust -U postgres > '$PGD/initdb.log' 2>&1" ||
	{ note "- initdb failed: $(tail -n 3 "$PGD/initdb.log" | tr '\n' ' ')"; exit 1; }
cat >> "$PGD/data/postgresql.conf" <<CONF
shared_preload_libraries = 'gnn'
gnn.max_graph_memory = 8GB
port = $PORT
unix_socket_directories = '$PGD'
listen_addresses = ''
fsync = off
timezone = 'UTC'
# the carried bundle has no LLVM: a JIT-compiled query would fail to load llvmjit.so
jit = off
CONF
as_run "'$BIN/pg_ctl' -D '$PGD/data' -l '$PGD/server.log' -w start > /dev/null" ||
	{ note "- the server did not start: $(tail -n 5 "$PGD/server.log" | tr '\n' ' ')"; exit 1; }
stop() { as_run "'$BIN/pg_ctl' -D '$PGD/data' -m fast stop > /dev/null 2>&1"; cp "$PGD/server.log" "$OUT/sql_server.log" 2>/dev/null; rm -rf "$PGD"; }
trap stop EXIT
psql_q() { as_run "'$BIN/psql' -X -q -At -h '$PGD' -p $PORT -U postgres -d postgres -v ON_ERROR_STOP=1 $*"; }
psql_q -c "'CREATE EXTENSION gnn'" || { note "- CREATE EXTENSION failed"; exit 1; }
note "- cluster up on port $PORT"
# "state|FIGURES|error" of job $1 (a job id, or the error gnn.train raised), FIGURES an SQL text expression over j and m
job_row() {
	local id
	id=$(echo "$1" | grep -E '^[0-9]+$' | tail -n 1)
	if [ -n "$id" ]; then
		psql_q -c "\"SELECT j.state || '|' || $2 || '|' || coalesce(j.error, '') FROM gnn.jobs j
		              LEFT JOIN gnn.models m ON m.job = j.id WHERE j.id = $id\"" 2>&1 | tail -n 1
	else
		echo "failed|-|-|-|-|-|$(echo "$1" | tail -n 1)"
	fi
}

# 4a. Cora, full batch
DATA=${GNN_DATA_DIR:-}
for d in test/gpu/data shared/data ../shared/data ../../shared/data; do [ -z "$DATA" ] && [ -f "$d/cora/edges.csv" ] && DATA=$(cd "$d" && pwd); done
if [ -n "$DATA" ]; then
	chmod -R a+rX "$DATA" 2> /dev/null
	psql_q > /dev/null <<SQL
CREATE TABLE cora_nodes (id int PRIMARY KEY, label int, split text);
CREATE TABLE cora_edges (src int, dst int);
CREATE TABLE cora_coo (id int, feature int, value real);
COPY cora_nodes FROM '$DATA/cora/nodes.csv' WITH (FORMAT csv, HEADER true);
COPY cora_edges FROM '$DATA/cora/edges.csv' WITH (FORMAT csv, HEADER true);
COPY cora_coo FROM '$DATA/cora/features_coo.csv' WITH (FORMAT csv, HEADER true);
SELECT gnn.load_graph('cora', 'cora_edges', nodes => 'cora_nodes', label => 'label', split => 'split',
                      sparse_features => 'cora_coo', undirected => true);
SQL
	note ""
	note "| Cora, 200 epochs | device | state | test accuracy | ms per epoch |"
	note "|---|---|---|---:|---:|"
	for model in gcn gat; do
		for dev in cuda cpu; do
			# the job in one statement, its rows in the next (a statement's snapshot predates its job's commits)
			job=$(psql_q -c "\"SELECT gnn.train('cora', model => '$model', name => 'c_${model}_$dev', epochs => 200,
			                  device => '$dev', seed => 1, wait => true)\"" 2>&1)
			row=$(job_row "$job" "coalesce(round((m.metrics->>'test_acc')::numeric, 3)::text, '-') || '|' ||
			  coalesce((SELECT round(1000 * avg(seconds)::numeric, 2)::text FROM gnn.training_log l WHERE l.job = j.id), '-')")
			note "| $model | $dev | $(echo "$row" | cut -d'|' -f1-3) |"
			case "$row" in succeeded*) ;; *) FAIL=1; note "  error: ${row##*|}";; esac
		done
	done
else
	note "- no Cora data (GNN_DATA_DIR, test/gpu/data, shared/data or ../shared/data): Cora skipped"
	FAIL=1
fi

# 4b. generated R-MAT graphs, minibatch GraphSAGE and sampling.
# rmat_stage GRAPH NODES EDGES RUNS: generate GRAPH_edges / GRAPH_nodes (100
# features a row, drawn from a pool of 1000 random rows: fast to make, and
# the gather still reads every node's own row), load it undirected, one epoch
# per device:gpu_sampling in RUNS, then gnn.sample_neighbors
rmat_stage() {
	local gname=$1 nodes=$2 edges=$3 runs=$4 t0 job row built n
	note ""
	t0=$(date +%s)
	psql_q > /dev/null <<SQL || { note "- generating or loading $gname failed (sql_server.log has why): its runs skipped"; FAIL=1; runs=; }
SET statement_timeout = '${GEN_TIMEOUT_S:-240}s';
SELECT setseed(0.42);
CREATE UNLOGGED TABLE ${gname}_edges AS
  SELECT (floor($nodes * power(random(), 2.5)))::int AS src, (random() * ($nodes - 1))::int AS dst
  FROM generate_series(1, $edges);
CREATE TEMP TABLE ${gname}_pool AS
  SELECT j, (SELECT array_agg(random()::real) FROM generate_series(1, 100) WHERE j >= 0) AS feat
  FROM generate_series(0, 999) j;
CREATE UNLOGGED TABLE ${gname}_nodes AS
  SELECT i AS id, (i % 47) AS label, CASE WHEN random() < 0.08 THEN 'train' WHEN random() < 0.1 THEN 'val' ELSE 'test' END AS split,
         p.feat
  FROM generate_series(0, $nodes - 1) i JOIN ${gname}_pool p ON p.j = i % 1000;
SELECT gnn.load_graph('$gname', '${gname}_edges', nodes => '${gname}_nodes', features => 'feat', label => 'label',
                      split => 'split', undirected => true);
SQL
	note "- $gname, R-MAT-like: $nodes nodes, $edges edges made undirected, 100-dim features, generated and loaded in $(( $(date +%s) - t0 )) s"
	note ""
	note "| minibatch GraphSAGE, fan-outs [15, 10, 5], batch 1024, hidden 256, 1 epoch | device | batches built | state | s per epoch | sampling | gathering | compute | waiting | cache hit rate | MB host to device |"
	note "|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|"
	# cuda with batches built on the GPU (feature cache by pre-sampling), cuda with
	# CPU-built batches (gpu_sampling false), cpu
	for v in $runs; do
		dev=${v%%:*}
		gs=${v##*:}
		job=$(psql_q -c "\"SELECT gnn.train('$gname', model => 'graphsage', name => '${gname}_${dev}_$gs', layers => 3, hidden => 256, epochs => 1,
		                  device => '$dev', seed => 1, wait => true,
		                  options => '{\\\"fanouts\\\": [15, 10, 5], \\\"batch_size\\\": 1024, \\\"gpu_sampling\\\": $gs}')\"" 2>&1)
		row=$(job_row "$job" "coalesce((SELECT round(sum(seconds)::numeric, 2) || '|' || round(sum(sample_seconds)::numeric, 2)
		  || '|' || round(sum(gather_seconds)::numeric, 2) || '|' || round(sum(compute_seconds)::numeric, 2) || '|' ||
		  round(sum(wait_seconds)::numeric, 2) || '|' || coalesce(round(avg(cache_hit_rate)::numeric, 3)::text, '-') || '|' ||
		  coalesce(round(sum(h2d_bytes) / 1e6)::text, '-') FROM gnn.training_log l WHERE l.job = j.id), '-|-|-|-|-|-|-')")
		built=$(psql_q -c "\"SELECT CASE WHEN '$dev' = 'cpu' THEN 'CPU' WHEN (metrics->>'gpu_batches')::bool THEN 'GPU' ELSE 'CPU: ' || coalesce(metrics->>'cpu_batches_why', '?') END FROM gnn.models WHERE name = '${gname}_${dev}_$gs'\"" 2>&1 | tail -n 1)
		note "| $gname | $dev | $built | $(echo "$row" | cut -d'|' -f1-8) |"
		case "$row" in succeeded*) ;; *) FAIL=1; note "  error: ${row##*|}";; esac
		if [ "$v" = cuda:true ] && [ "$built" != GPU ]; then FAIL=1; note "  the GPU did not build the batches: $built"; fi
	done
	[ -n "$runs" ] || return 0
	t0=$(date +%s%N)
	n=$(psql_q -c "\"SELECT count(*) FROM gnn.sample_neighbors('$gname', (SELECT array_agg(i::bigint) FROM generate_series(0, 1023) i), ARRAY[15, 10, 5], seed => 1)\"" 2>&1 | tail -n 1)
	note "- $gname: gnn.sample_neighbors, 1024 seeds, fan-outs [15, 10, 5]: $n rows in $(( ($(date +%s%N) - t0) / 1000000 )) ms"
}
rmat_stage rmat "$NODES" "$EDGES" "$RMAT_RUNS"
# issue #13's goal, an epoch <= 1 s on a products-size graph (2.45M nodes, 58M
# arcs): the GPU paths only, since a CPU epoch there takes minutes
[ "${PRODUCTS:-1}" = 1 ] && rmat_stage products 2449029 29000000 "cuda:true cuda:false"

# 4c. compute-sanitizer over one short job: the worker is a server process,
# so the sanitizer runs the core CLI on the same kind of job instead
if command -v compute-sanitizer > /dev/null && [ -x test/core/bin/gnn_train_cli ] && [ -n "$DATA" ]; then
	compute-sanitizer --tool memcheck --error-exitcode 9 test/core/bin/gnn_train_cli --data "$DATA/cora" --model gcn \
		--epochs 5 --seeds 1 --backend cuda --cuda-so "$PWD/kernels/gnn_cuda.so" > "$OUT/sql_sanitizer.log" 2>&1
	rc=$?
	note "- compute-sanitizer (memcheck) over a 5-epoch GCN job: rc $rc, $(grep -m1 'ERROR SUMMARY' "$OUT/sql_sanitizer.log")"
	[ $rc -eq 0 ] || FAIL=1
fi
note ""
note "sql_checks: $([ $FAIL -eq 0 ] && echo ALL PASSED || echo SOME CHECKS FAILED)"
exit $FAIL
