#!/usr/bin/env bash
# run_gpu_checks.sh: everything the CUDA backend needs checked on a machine
# with a GPU, in one run of a few minutes:
#   1. build kernels/gnn_cuda.so (through the Makefile, or with nvcc directly
#      when PostgreSQL's pg_config is missing there) and the core test programs
#   2. nvidia-smi, the kernels' register / spill report
#   3. the parity tests (every op, CPU against CUDA) and the kernel-body test
#   4. the training CLI on Cora, GCN and GAT, CPU and CUDA, with timings
#   5. GPU sampling (issue #6): parity of sample / walk / gather kernels with
#      their CPU emulation, and sampled edges/s on an in-memory R-MAT; the
#      GPU-built training batches (issue #13: relabel, block CSRs, cached
#      gather) against theirs, and minibatch GraphSAGE on Cora with them
#   6. end to end through SQL (issue #13, test/gpu/sql_checks.sh): PostgreSQL
#      from the machine or from the carried bundle (test/gpu/debs: make it
#      here with `bash test/gpu/pg_bundle.sh fetch` and name it in carry),
#      Cora GCN / GAT and minibatch GraphSAGE with device => 'cuda' and 'cpu',
#      gnn.sample_neighbors, compute-sanitizer.  SQL_CHECKS=0 skips it.
# Logs go to $OUT (or test/gpu/out): at the end the step logs are packed into
# $OUT/logs.tar.gz beside this run's whole output (run_gpu_checks.txt), the
# SQL report (sql_checks.md) and nvidia-smi.txt, since the device tool brings
# back at most 8 files.  Exit status: 0 when every step passed.
#
# Before a run, here:  bash test/gpu/pg_bundle.sh fetch   (the .debs into
# test/gpu/debs, Cora into test/gpu/data; ../shared does not travel).  On the
# device machine, carrying both:  OUT=$OUT bash test/gpu/run_gpu_checks.sh
# Run from the repository root:  bash test/gpu/run_gpu_checks.sh
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-test/gpu/out}
mkdir -p "$OUT"
exec > >(tee "$OUT/run_gpu_checks.txt") 2>&1
TEE_PID=$!
JOBS=$(nproc 2>/dev/null || echo 4)
NVCC=${NVCC:-$(command -v nvcc || ls /usr/local/cuda/bin/nvcc 2>/dev/null)}
CUDA_HOME=${CUDA_HOME:-$(dirname "$(dirname "$NVCC")")}
FAIL=0
T0=$(date +%s)

step() { echo; echo "=== $* ($(( $(date +%s) - T0 )) s)"; }
run() {	# run NAME CMD...: log to $OUT/NAME.log, show its tail
	local name=$1; shift
	local t=$(date +%s%N)
	"$@" > "$OUT/$name.log" 2>&1
	local rc=$?
	echo "$name: rc $rc, $(( ($(date +%s%N) - t) / 1000000 )) ms"
	tail -n 15 "$OUT/$name.log"
	[ $rc -eq 0 ] || FAIL=1
	return $rc
}

step "machine"
nvidia-smi > "$OUT/nvidia-smi.txt" 2>&1; head -n 15 "$OUT/nvidia-smi.txt"
"$NVCC" --version | tail -n 2

step "build the CUDA backend"
build_so_direct() {
	local flags="-O3 -std=c++17 -Xcompiler -fPIC,-fvisibility=hidden -Isrc/core -Ikernels -gencode arch=compute_90,code=sm_90"
	ls kernels/*.cu | xargs -P "$JOBS" -I{} "$NVCC" $flags -Xptxas -v -c {} -o {}.o || return 1
	"$NVCC" -shared -o kernels/gnn_cuda.so kernels/*.cu.o -L"$CUDA_HOME/lib64" -lcudart -lcublas \
		-Xlinker -rpath -Xlinker "$CUDA_HOME/lib64"
}
if command -v pg_config > /dev/null; then
	# the Makefile's rule (all gencode targets), as CI builds it
	run build_so make -j"$JOBS" USE_CUDA=1 kernels/gnn_cuda.so NVCC="$NVCC" ||
		{ echo "make failed, trying nvcc directly"; FAIL=0; run build_so_direct build_so_direct; }
else
	run build_so_direct build_so_direct
fi
nm -D --defined-only kernels/gnn_cuda.so | grep gnn_backend_cuda_create || FAIL=1
nm -D --defined-only kernels/gnn_cuda.so | grep -c -E "gnn_cuda_(sample_hop|row_prefix|random_walk|gather|host_register|host_unregister)$" | grep -q 6 \
	|| { echo "GPU sampling symbols missing from gnn_cuda.so"; FAIL=1; }
# registers / spills per kernel (sm_90), one compile of the heaviest files
for f in spmm gat_softmax xent sample walk; do
	"$NVCC" -O3 -std=c++17 -Isrc/core -Ikernels -gencode arch=compute_90,code=sm_90 -Xptxas -v \
		-c kernels/$f.cu -o /tmp/gnn_ptxas_$f.o 2>&1 | grep -E "Function properties|registers|spill" \
		> "$OUT/ptxas_$f.txt"
done
grep -h "spill" "$OUT"/ptxas_*.txt | sort | uniq -c | head -n 5

step "build the test programs and the CLI"
# the libraries the core is compiled against (OpenBLAS, METIS): from the
# carried bundle when this machine lacks their headers or .so links
probe_libs() {
	printf '#include <cblas.h>\n#include <metis.h>\nint main(void) { return 0; }\n' |
		cc -x c - -o /dev/null -lopenblas -lmetis > /dev/null 2>&1
}
if ! probe_libs; then
	if [ -z "${PG_CONFIG:-}" ] && ls test/gpu/debs/*.deb > /dev/null 2>&1; then
		echo "this machine cannot compile against OpenBLAS / METIS: using the carried bundle"
		# shellcheck source=test/gpu/pg_bundle.sh
		source test/gpu/pg_bundle.sh install && PGB_INSTALLED=1
	fi
	probe_libs || { echo "no OpenBLAS / METIS headers and libraries here, nor in a bundle (test/gpu/debs)"; FAIL=1; }
fi
CORE_SRCS=$(ls src/core/*/*.c)
CFLAGS="-std=gnu11 -O2 -g -fopenmp -Wall -Wno-unused-function -Isrc/core -Itest/core"
# -luring exactly when the compiler finds liburing.h (feature_store.c includes it when it can)
LIBS="-lopenblas -lmetis $(printf '#include <liburing.h>\n' | cc -E -x c - > /dev/null 2>&1 && echo -luring) -lgomp -lpthread -lm -ldl"
mkdir -p test/core/bin
# the core compiled once, on every core, and linked into each program (compiling
# it into each of nine programs in turn took two minutes of the run)
CORE_OBJ_DIR=$(mktemp -d /tmp/gnn_core_obj.XXXXXX)
ls src/core/*/*.c | xargs -P "$JOBS" -I{} sh -c 'cc '"$CFLAGS"' -c {} -o '"$CORE_OBJ_DIR"'/$(basename {} .c).o' \
	> "$OUT/cc_core.log" 2>&1 || { echo "cc src/core failed"; tail -n 5 "$OUT/cc_core.log"; FAIL=1; }
CORE_SRCS=$(ls "$CORE_OBJ_DIR"/*.o)
for t in test_backend_parity test_cuda_parity test_kernel_math test_sample_gpu_math test_sample_cuda_parity \
	test_relabel_math test_gpu_batch_parity test_dist_train; do
	[ -f test/core/$t.c ] && echo "$t"
done | xargs -P "$JOBS" -I{} sh -c 'cc '"$CFLAGS"' -o test/core/bin/{} test/core/{}.c '"$(echo $CORE_SRCS)"' '"$LIBS"' > "'"$OUT"'/cc_{}.log" 2>&1 || { echo "cc {} failed"; tail -n 5 "'"$OUT"'/cc_{}.log"; exit 1; }' || FAIL=1
cc $CFLAGS -Isrc/core -o test/core/bin/gnn_train_cli bench/gnn_train_cli.c $CORE_SRCS $LIBS > "$OUT/cc_cli.log" 2>&1 \
	|| { echo "cc gnn_train_cli failed"; tail -n 5 "$OUT/cc_cli.log"; FAIL=1; }

step "parity: every op, CPU against CUDA"
export GNN_CUDA_SO=$PWD/kernels/gnn_cuda.so
for t in test_kernel_math test_cuda_parity test_backend_parity; do
	[ -x test/core/bin/$t ] || continue
	run $t timeout 240 test/core/bin/$t
	grep -E "^not ok|SKIP" "$OUT/$t.log" | head -n 20
done
# the same under compute-sanitizer when it works on this machine (memcheck: bounds, misaligned float4)
if command -v compute-sanitizer > /dev/null && [ -x test/core/bin/test_cuda_parity ]; then
	run sanitizer_memcheck timeout 240 compute-sanitizer --tool memcheck --error-exitcode 9 \
		test/core/bin/test_cuda_parity || true
	grep -E "ERROR SUMMARY|Invalid|misaligned" "$OUT/sanitizer_memcheck.log" | head -n 5
fi

step "training on Cora: CPU against CUDA"
DATA=${GNN_DATA_DIR:-}
for d in test/gpu/data shared/data ../shared/data ../../shared/data; do
	[ -z "$DATA" ] && [ -f "$d/cora/edges.csv" ] && DATA=$d
done
# the test programs' Cora checks look for ../shared/data unless told
case $DATA in "" | /*) ;; *) DATA=$PWD/$DATA ;; esac
[ -n "$DATA" ] && export GNN_DATA_DIR=$DATA
if [ -z "$DATA" ] || [ ! -x test/core/bin/gnn_train_cli ]; then
	echo "no Cora data (set GNN_DATA_DIR) or no CLI: training skipped"; FAIL=1
else
	for model in gcn gat; do
		run train_${model}_cuda timeout 150 test/core/bin/gnn_train_cli --data "$DATA/cora" --model $model \
			--epochs 200 --seeds 3 --backend cuda --cuda-so "$GNN_CUDA_SO"
		run train_${model}_cpu timeout 150 test/core/bin/gnn_train_cli --data "$DATA/cora" --model $model \
			--epochs 200 --seeds 1 --threads "$JOBS" --backend cpu
	done
	GNN_CUDA_TF32=1 run train_gcn_cuda_tf32 timeout 60 test/core/bin/gnn_train_cli --data "$DATA/cora" \
		--model gcn --epochs 200 --seeds 1 --backend cuda --cuda-so "$GNN_CUDA_SO"
	grep -h -E "mean test accuracy|time per epoch" "$OUT"/train_*.log
fi

step "GPU sampling and GPU-built batches: parity with the CPU emulation, then speed"
for t in test_sample_gpu_math test_sample_cuda_parity test_relabel_math test_gpu_batch_parity; do
	[ -x test/core/bin/$t ] || { echo "$t not built"; FAIL=1; continue; }
	run $t timeout 240 test/core/bin/$t
	grep -E "^not ok|SKIP" "$OUT/$t.log" | head -n 20
	# a SKIP here means the GPU was not usable: on this machine that is a failure
	! grep -q "# SKIP" "$OUT/$t.log" || FAIL=1
done
if command -v compute-sanitizer > /dev/null && [ -x test/core/bin/test_sample_cuda_parity ]; then
	run sanitizer_sample timeout 300 compute-sanitizer --tool memcheck --error-exitcode 9 \
		test/core/bin/test_sample_cuda_parity || true
	grep -E "ERROR SUMMARY|Invalid|misaligned" "$OUT/sanitizer_sample.log" | head -n 5
	GNN_TEST_SEEDS=1 run sanitizer_batch timeout 200 compute-sanitizer --tool memcheck --error-exitcode 9 \
		test/core/bin/test_gpu_batch_parity || true
	grep -E "ERROR SUMMARY|Invalid|misaligned" "$OUT/sanitizer_batch.log" | head -n 5
fi
mkdir -p bench/bin
cc -std=gnu11 -O2 -fopenmp -Wall -Wno-unused-function -Isrc/core -Itest/core -o bench/bin/sample_gpu_bench \
	bench/sample_gpu_bench.c $CORE_SRCS $LIBS > "$OUT/cc_sample_gpu_bench.log" 2>&1 \
	|| { echo "cc sample_gpu_bench failed"; tail -n 5 "$OUT/cc_sample_gpu_bench.log"; FAIL=1; }
[ -x bench/bin/sample_gpu_bench ] && run sample_gpu_bench timeout 300 bench/bin/sample_gpu_bench 20 16 50

step "GPU ranks over Gloo (issue #43): two ranks on this GPU against two on the CPU"
# needs src/dist/gnn_dist.so, built where libgloo-dev is and carried (with the bundle's libgloo0)
if [ -f src/dist/gnn_dist.so ] && ldd src/dist/gnn_dist.so | grep -q "not found" && [ -z "${PGB_INSTALLED:-}" ] &&
	ls test/gpu/debs/*.deb > /dev/null 2>&1; then
	echo "gnn_dist.so's libraries (libgloo) are missing here: using the carried bundle"
	# shellcheck source=test/gpu/pg_bundle.sh
	source test/gpu/pg_bundle.sh install && PGB_INSTALLED=1
fi
if [ -x test/core/bin/test_dist_train ] && [ -f src/dist/gnn_dist.so ]; then
	GNN_DIST_SO=$PWD/src/dist/gnn_dist.so GNN_TEST_CUDA_RANKS=$GNN_CUDA_SO run dist_train_cuda timeout 300 \
		test/core/bin/test_dist_train
	grep -E "^not ok|CUDA backend|SKIP" "$OUT/dist_train_cuda.log" | head -n 20
	grep -q "on the CUDA backend" "$OUT/dist_train_cuda.log" || { echo "the CUDA ranks did not run"; FAIL=1; }
else
	echo "test_dist_train or src/dist/gnn_dist.so missing (carry src/dist/gnn_dist.so): GPU ranks not checked"; FAIL=1
fi

if [ "${SQL_CHECKS:-1}" != 0 ]; then
	step "end to end through SQL"
	run sql_checks timeout 330 bash test/gpu/sql_checks.sh
	cat "$OUT/sql_checks.md" 2>/dev/null
fi

rm -rf "$CORE_OBJ_DIR"
step "done: $([ $FAIL -eq 0 ] && echo ALL PASSED || echo SOME STEPS FAILED)"
# every other file into one archive: the device tool brings back 8 files at most
(cd "$OUT" && ls | grep -v -x -E 'run_gpu_checks.txt|sql_checks.md|nvidia-smi.txt|logs.tar.gz' > .pack &&
	[ -s .pack ] && tar czf logs.tar.gz -T .pack && xargs rm -rf < .pack; rm -f .pack)
exec > /dev/null 2>&1
wait "$TEE_PID" 2> /dev/null	# run_gpu_checks.txt complete before the command returns
exit $FAIL
