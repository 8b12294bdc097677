# gnn: graph neural networks inside PostgreSQL.  Single entry point:
#   make          build gnn.so (and gnn_cuda.so when nvcc exists)
#   make install  install the extension
#   make test     deps, build, install, core unit tests, pg_regress, TAP; ends with "N passed, N failed"
#   make demo     deps, build, install, a throwaway cluster that loads a graph and shows it
#   make bench    benchmarks (figures quoted in BENCHMARKS.md)
#   make fuzz     libFuzzer targets, the SQL fuzzer at length, all core tests under ASan/UBSan
EXTENSION   = gnn
MODULE_big  = gnn
DATA        = $(wildcard sql/gnn--*.sql)
PG_CONFIG  ?= pg_config

# one folder per layer (ARCHITECTURE.md; test/layers.sh checks the arrows between them)
CORE_SRCS   = $(sort $(wildcard src/core/*/*.c))
PG_SRCS     = $(sort $(wildcard src/pg/*.c src/pg/*/*.c))
CORE_HDRS   = $(wildcard src/core/*/*.h)
PG_HDRS     = $(wildcard src/pg/*.h src/pg/*/*.h)
OBJS        = $(PG_SRCS:.c=.o) $(CORE_SRCS:.c=.o)

PG_CPPFLAGS = -I$(CURDIR)/src/core -I$(CURDIR)/src/pg -I$(shell $(PG_CONFIG) --includedir)
PG_CFLAGS   = -std=gnu11 -O2 -fopenmp -Wno-declaration-after-statement
# io_uring for the feature store's reads when liburing is installed (pread without it):
# exactly when the compiler finds liburing.h, which feature_store.c includes when it can
# (a header found through CPATH, as from the GPU run's bundle, counts too)
URING_LIB  := $(shell printf '\043include <liburing.h>\n' | $(or $(CC),cc) -E -x c - > /dev/null 2>&1 && echo -luring)
# the core's heap counts (src/core/base/heap.h): its allocation calls go through heap.c
GNN_HEAP_WRAP = -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=aligned_alloc,--wrap=posix_memalign,--wrap=free
# libpq: distributed jobs reach their peers and the coordinator (src/pg/dist.c)
SHLIB_LINK  = -lopenblas -lmetis $(URING_LIB) -lpq -lgomp -lpthread -lm -ldl $(GNN_HEAP_WRAP)

# gnn.so never links CUDA; JIT bitcode is off (clang may not match the server's LLVM).
override with_llvm = no

# The CUDA backend: built whenever nvcc exists, unless USE_CUDA=0.
NVCC       ?= $(shell command -v nvcc 2>/dev/null || ls /usr/local/cuda/bin/nvcc 2>/dev/null)
USE_CUDA   ?= $(if $(NVCC),1,0)
CUDA_HOME  ?= $(patsubst %/bin/nvcc,%,$(NVCC))
CU_SRCS     = $(sort $(wildcard kernels/*.cu))
CUDA_SO     = kernels/gnn_cuda.so

ifeq ($(USE_CUDA),1)
ifneq ($(CU_SRCS),)
all: $(CUDA_SO)
install: install-cuda
endif
endif

# The collectives of distributed training (src/dist, Gloo's C++ behind a C table):
# their own shared object, built when libgloo-dev is installed, loaded on demand.
GLOO_H     := $(wildcard /usr/include/gloo/allreduce.h)
USE_GLOO   ?= $(if $(GLOO_H),1,0)
DIST_SO     = src/dist/gnn_dist.so
ifeq ($(USE_GLOO),1)
all: $(DIST_SO)
install: install-dist
endif

# GPU ranks' collectives (src/dist/nccl.c): where the CUDA toolkit ships NCCL,
# their own shared object beside Gloo's, loaded on demand.
NCCL_H     := $(if $(CUDA_HOME),$(wildcard $(CUDA_HOME)/include/nccl.h))
USE_NCCL   ?= $(if $(and $(NCCL_H),$(filter 1,$(USE_CUDA))),1,0)
NCCL_SO     = src/dist/gnn_dist_nccl.so
ifeq ($(USE_NCCL),1)
all: $(NCCL_SO)
install: install-nccl
endif

PG_REGRESS_DIR = $(dir $(PGXS))../../src/test/regress
REGRESS     = $(patsubst sql/%.sql,%,$(filter-out sql/gnn--%,$(sort $(wildcard sql/*.sql))))

# before the include: PGXS's clean rule tests it with ifdef when it is read
EXTRA_CLEAN = test/core/bin test/core/bin-san test/core/obj test/core/obj-san test/fuzz/bin kernels/*.cu.o kernels/obj $(CUDA_SO) $(DIST_SO) $(NCCL_SO) results regression.diffs regression.out tmp_check

PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

# The core is PostgreSQL-free and tested (test/core, with UBSan's overflow
# checks) as plain C: build it into gnn.so the same way.  PostgreSQL's
# -fwrapv keeps GCC from vectorising loops with signed counters (the top-k
# scan ran 3.5x slower in gnn.so than in its tests).  The core tests no
# floating-point exception flags, and with trapping math GCC will not if-convert
# a select of floats, so ReLU's gradient and leaky ReLU ran one element at a time
# (values are the same either way: this flag changes no arithmetic).  Nor does
# the core read errno after maths: with it set by sqrtf, Adam's step (a square
# root per weight) ran one weight at a time.
$(CORE_SRCS:.c=.o): override CFLAGS += -fno-wrapv -fno-trapping-math -fno-math-errno

# every object is rebuilt when any header changes (PGXS tracks no header dependencies)
$(OBJS): $(CORE_HDRS) $(PG_HDRS)

# ---------------------------------------------------------------- CUDA backend
# One translation unit for all kernels (each .cu still compiles alone, as
# test/gpu/run_gpu_checks.sh's fallback does): nvcc spends about 3 s per file
# on CUDA's headers, so 18 files took 150 s of CPU and one unit takes 38 s.
CU_UNITY = kernels/obj/gnn_cuda_all.cu
CU_OBJS  = kernels/obj/gnn_cuda_all.o
NVCCFLAGS ?= -O3 -std=c++17 -Xcompiler -fPIC,-fvisibility=hidden -I$(CURDIR)/src/core -I$(CURDIR)/kernels \
             -gencode arch=compute_90,code=sm_90 -gencode arch=compute_80,code=sm_80 \
             -gencode arch=compute_90,code=compute_90

# sources are never made (stops make deriving X.cu from X.cu.o: "Circular ... dropped")
$(CU_SRCS): ;

# rewritten only when the list of files changes (a new .cu may be older than the unit)
$(CU_UNITY): FORCE
	@mkdir -p $(dir $@)
	@printf '#include "%s"\n' $(notdir $(CU_SRCS)) > $@.tmp; cmp -s $@.tmp $@ || mv $@.tmp $@; rm -f $@.tmp
FORCE:

$(CU_OBJS): $(CU_UNITY) $(CU_SRCS) $(wildcard kernels/*.cuh kernels/*.h) $(CORE_HDRS)
	$(NVCC) $(NVCCFLAGS) -c $< -o $@

$(CUDA_SO): $(CU_OBJS)
	$(NVCC) -shared -o $@ $^ -L$(CUDA_HOME)/lib64 -lcudart -lcublas \
	    -Xlinker -rpath -Xlinker $(CUDA_HOME)/lib64

install-cuda: $(CUDA_SO)
	$(INSTALL_SHLIB) $(CUDA_SO) '$(DESTDIR)$(pkglibdir)/gnn_cuda.so'

# ---------------------------------------------------------------- distributed engine (Gloo)
$(DIST_SO): src/dist/gloo.cc src/core/dist/dist.h src/core/base/gnn_core.h
	$(or $(CXX),g++) -std=c++17 -O2 -g -Wall -fPIC -shared -fvisibility=hidden -I$(CURDIR)/src/core -o $@ $< -lgloo -lpthread

install-dist: $(DIST_SO)
	$(INSTALL_SHLIB) $(DIST_SO) '$(DESTDIR)$(pkglibdir)/gnn_dist.so'

$(NCCL_SO): src/dist/nccl.c src/core/dist/dist.h src/core/base/gnn_core.h
	$(or $(CC),cc) -std=gnu11 -O2 -g -Wall -fPIC -shared -fvisibility=hidden -I$(CURDIR)/src/core -I$(CUDA_HOME)/include \
	    -o $@ $< -L$(CUDA_HOME)/lib -L$(CUDA_HOME)/lib64 -lnccl -lcudart \
	    -Wl,-rpath,$(CUDA_HOME)/lib -Wl,-rpath,$(CUDA_HOME)/lib64

install-nccl: $(NCCL_SO)
	$(INSTALL_SHLIB) $(NCCL_SO) '$(DESTDIR)$(pkglibdir)/gnn_dist_nccl.so'

# ---------------------------------------------------------------- core unit tests (no server)
TEST_CFLAGS = -std=gnu11 -O2 -g -fopenmp -fno-trapping-math -fno-math-errno -Wall -Wno-unused-function -Isrc/core -Itest/core $(SANITIZE_FLAGS)
TEST_LIBS   = -lopenblas -lmetis $(URING_LIB) -lgomp -lpthread -lm -ldl $(GNN_HEAP_WRAP)
CORE_TESTS  = $(patsubst test/core/%.c,test/core/bin/%,$(sort $(wildcard test/core/test_*.c)))
ifeq ($(SANITIZE),1)
SANITIZE_FLAGS = -fsanitize=address,undefined -fno-omit-frame-pointer
endif

# the core is compiled once per flavour, then linked into every test program:
# the plain tests link the very objects gnn.so is made of (what ships is what is
# tested, and the core is compiled once less); SANITIZE=1 and the sanitizer
# build compile their own
ifeq ($(SANITIZE),1)
TEST_OBJS   = $(patsubst src/core/%.c,test/core/obj/%.o,$(CORE_SRCS))
else
TEST_OBJS   = $(CORE_SRCS:.c=.o)
endif
SAN_OBJS    = $(patsubst src/core/%.c,test/core/obj-san/%.o,$(CORE_SRCS))

test/core/obj/%.o: src/core/%.c $(CORE_HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(TEST_CFLAGS) -c -o $@ $<

test/core/bin/%: test/core/%.c $(TEST_OBJS) $(wildcard test/core/*.h) $(wildcard kernels/*.h)
	@mkdir -p test/core/bin
	$(CC) $(TEST_CFLAGS) -o $@ $< $(TEST_OBJS) $(TEST_LIBS)

core-tests: $(CORE_TESTS)

# the same tests built with AddressSanitizer + UndefinedBehaviorSanitizer into a
# separate directory (make test runs the quick ones: test/run_all.sh suite "asan")
SAN_FLAGS   = -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
SAN_TESTS   = $(patsubst test/core/%.c,test/core/bin-san/%,$(filter-out %cuda_parity.c,$(sort $(wildcard test/core/test_*.c))))

test/core/obj-san/%.o: src/core/%.c $(CORE_HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(filter-out -O2,$(TEST_CFLAGS)) -O1 $(SAN_FLAGS) -c -o $@ $<

test/core/bin-san/%: test/core/%.c $(SAN_OBJS) $(wildcard test/core/*.h) $(wildcard kernels/*.h)
	@mkdir -p test/core/bin-san
	$(CC) $(filter-out -O2,$(TEST_CFLAGS)) -O1 $(SAN_FLAGS) -o $@ $< $(SAN_OBJS) $(TEST_LIBS)

core-tests-san: $(SAN_TESTS)

# make test runs the sanitizer build without the programs test/run_all.sh
# leaves to make fuzz (its SAN_LONG list, read from there: one list)
SAN_LONG   := $(shell sed -n 's/^SAN_LONG="\(.*\)"$$/\1/p' test/run_all.sh)
core-tests-san-short: $(filter-out $(addprefix test/core/bin-san/,$(SAN_LONG)),$(SAN_TESTS))

# ---------------------------------------------------------------- benchmark programs
# linked from the very core objects gnn.so is made of, as the plain core tests are
# (the other bench/*.sh compile src/core/*/*.c themselves); bench/sage_floor.sh runs it
bench/bin/sage_floor_bench: bench/sage_floor_bench.c bench/bench_util.h $(CORE_SRCS:.c=.o) $(CORE_HDRS)
	@mkdir -p bench/bin
	$(CC) $(filter-out $(SANITIZE_FLAGS),$(TEST_CFLAGS)) -o $@ $< $(CORE_SRCS:.c=.o) $(TEST_LIBS)

bench/bin/eval_cost_bench: bench/eval_cost_bench.c bench/bench_util.h $(CORE_SRCS:.c=.o) $(CORE_HDRS)
	@mkdir -p bench/bin
	$(CC) $(filter-out $(SANITIZE_FLAGS),$(TEST_CFLAGS)) -o $@ $< $(CORE_SRCS:.c=.o) $(TEST_LIBS)

# ---------------------------------------------------------------- top-level targets
.PHONY: FORCE deps test demo bench fuzz core-tests core-tests-san core-tests-san-short install-cuda install-dist install-nccl
deps:
	@bash .ci/deps.sh

# builds use every core (GNN_JOBS); the runner prints each suite's time and the build's.
# One make builds gnn.so, the CUDA unit and the test programs, so that the CUDA
# unit (about 40 s on one core) compiles beside the others rather than last alone.
GNN_JOBS ?= $(shell nproc 2>/dev/null || echo 2)
test: deps
	@t0=$$(date +%s); \
	$(MAKE) -j$(GNN_JOBS) all core-tests $(if $(filter 1,$(SANITIZE)),core-tests-san,core-tests-san-short) && $(MAKE) install || exit 1; \
	GNN_BUILD_SECS=$$(( $$(date +%s) - t0 )) $(if $(filter 1,$(SANITIZE)),GNN_SAN_FULL=1) bash test/run_all.sh

demo: deps
	$(MAKE) -j$(GNN_JOBS) all
	$(MAKE) install
	bash test/demo.sh

# longer fuzzing: libFuzzer targets (GNN_FUZZ_SECS each), the SQL fuzzer
# (GNN_FUZZ_CALLS calls), the model-based random test (GNN_MODEL_STEPS steps),
# every core test under ASan + UBSan, and the TAP tests at their full lengths
GNN_FUZZ_SECS  ?= 300
GNN_FUZZ_CALLS ?= 20000
GNN_MODEL_STEPS ?= 50000
fuzz: deps
	$(MAKE) all
	$(MAKE) install
	$(MAKE) core-tests-san
	bash test/fuzz/run.sh $(GNN_FUZZ_SECS)
	GNN_FUZZ_CALLS=$(GNN_FUZZ_CALLS) GNN_MODEL_STEPS=$(GNN_MODEL_STEPS) GNN_SAN_FULL=1 GNN_TAP_FULL=1 GNN_SUITES="asan fuzzsql model tap" bash test/run_all.sh

bench: deps
	$(MAKE) all
	$(MAKE) install
	bash bench/run.sh


# docs/reference.md from the catalog of the installed extension (run make install first; root)
.PHONY: reference
reference:
	bash test/docs/reference.sh
