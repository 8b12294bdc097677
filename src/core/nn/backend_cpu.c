/*
 * backend_cpu.c: the reference backend.  Dense products go to cblas_sgemm
 * (OpenBLAS); sparse kernels are OpenMP row-parallel and gather-style - each
 * output row is written by one thread and summed in a fixed order - so
 * results are bit-for-bit repeatable and independent of the thread count.
 * Backward products walk the transpose carried by gnn_csr instead of
 * scattering with atomics.  Per-element math comes from ops_math.h, which
 * the CUDA backend shares.
 */
#include "nn/backend.h"
#include "base/ops_math.h"

#include <cblas.h>
#include <stdio.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif

/* OpenBLAS extension; declared by its cblas.h, repeated for other cblas.h */
extern void openblas_set_num_threads(int num_threads);

typedef struct gnn_cpu_ctx
{
	int			nthreads;
	float	   *scratch;		/* gemm_dropout's blocks of D, grown as needed */
	size_t		scratch_cap;	/* floats */
} gnn_cpu_ctx;

/* the configured threads, and the team a region uses now (gnn_team_size) */
#define NT_CFG(be) (((gnn_cpu_ctx *) (be)->ctx)->nthreads)
#define NT(be) gnn_team_size(NT_CFG(be))
/*
 * Regions of at least this much work (multiply-adds, or elements) keep the whole
 * configured team however busy the machine: a descheduled member then
 * delays the region by a small fraction of it, and a fuller team gets its
 * fair share of a contended machine (the products-size step under two busy
 * processes: 0.64 s a batch on a full team, 0.90 s on one thread).  Only
 * short regions, where waiting for a descheduled thread costs more than
 * the region, shrink (Cora's aggregation and element-wise kernels).
 */
#define GNN_TEAM_BIG 4e6
#define NT_WORK(be, work) ((double) (work) >= GNN_TEAM_BIG ? gnn_team_capped(NT_CFG(be)) : NT(be))
/* below this much work a parallel region costs more than it saves */
#define GNN_PAR_MIN 8192

static int
gnn_cpu_default_threads(void)
{
	long		n = sysconf(_SC_NPROCESSORS_ONLN);

	return n > 0 ? (int) n : 1;
}

static void
cpu_destroy(gnn_backend *be)
{
	if (!be)
		return;
	if (be->ctx)
		free(((gnn_cpu_ctx *) be->ctx)->scratch);
	free(be->ctx);
	free(be);
}

static gnn_status
cpu_set_threads(gnn_backend *be, int nthreads)
{
	if (nthreads < 0)
		return gnn_error_set(&be->err, GNN_ERR_INVALID, "thread count must be >= 0, got %d", nthreads);
	NT_CFG(be) = nthreads == 0 ? gnn_cpu_default_threads() : nthreads;
	/*
	 * OpenBLAS's own pthreads would busy-wait against our OpenMP threads on
	 * the same cores (2x slower on 2 cores); keep it single-threaded and
	 * split large products into row blocks across OpenMP threads instead.
	 */
	openblas_set_num_threads(1);
	return GNN_OK;
}

static gnn_status
cpu_sync(gnn_backend *be)
{
	(void) be;
	return GNN_OK;
}

static gnn_status
cpu_alloc(gnn_backend *be, size_t bytes, void **ptr)
{
	size_t		sz = (bytes + 255) & ~(size_t) 255;

	/*
	 * A large buffer (8 MB or more: a big batch's activations) on 2 MB
	 * pages where the kernel gives them (gnn_malloc_big): fresh memory
	 * costs a fault per page, and on a VM a 4 kB fault cost 6 us (an
	 * evaluation batch of 131,072 seeds spent most of its time there)
	 */
	*ptr = sz >= GNN_BIG_BYTES ? gnn_malloc_big(sz) : aligned_alloc(256, sz ? sz : 256);
	if (!*ptr)
		return gnn_error_set(&be->err, GNN_ERR_NOMEM, "cpu backend: out of memory allocating %zu bytes", bytes);
	return GNN_OK;
}

static void
cpu_free(gnn_backend *be, void *ptr)
{
	(void) be;
	free(ptr);
}

static gnn_status
cpu_copy(gnn_backend *be, void *dst, const void *src, size_t bytes)
{
	(void) be;
	if (bytes)
		memmove(dst, src, bytes);
	return GNN_OK;
}

static gnn_status
cpu_memset(gnn_backend *be, void *dst, int byte, size_t bytes)
{
	/* a huge fill (fresh pages: the kernel zeroes them as they are touched) in pieces a stop is seen between */
	const size_t piece = (size_t) 256 << 20;

	for (size_t off = 0; off < bytes; off += piece)
	{
		if (off > 0 && gnn_backend_stop_requested(be))
			return gnn_error_set(&be->err, GNN_ERR_CANCELLED, "stopped on request");
		memset((char *) dst + off, byte, bytes - off < piece ? bytes - off : piece);
	}
	return GNN_OK;
}

/* rows (columns) per GEMM block: a multiple of 64, at most 64 blocks */
static inline int64_t
gemm_blk(int64_t len)
{
	return ((len + 63) / 64 + 63) / 64 * 64;
}

/*
 * How cpu_gemm splits C into row (or column) blocks, one cblas call each: no
 * reduction is split.  The blocks depend on the shape alone - the dimension
 * split, and at most 64 blocks of a multiple of 64 rows (columns) - and a
 * team of any size makes the same calls, so the results do not depend on
 * the thread count.  (One call over all rows and two over halves do not give
 * the same bits: OpenBLAS picks its kernels and blocking from the call's
 * sizes.)  gemm_dropout makes the same calls.
 */
typedef struct gemm_plan
{
	bool		by_rows;		/* blocks of C's rows (else of its columns) */
	int64_t		len;			/* rows (columns) split */
	int64_t		blk;			/* per block */
	int64_t		nblk;
	int			parts;			/* threads */
} gemm_plan;

/*
 * A block's work at most (where 64 rows allow it): between blocks a stop is
 * seen (be->stop_fn), so even a GEMM of hours stops within a block's time
 * (under a second on a core).  Only products over 64 such blocks are split
 * finer than the 64 blocks of before (their bits may change; smaller ones'
 * do not).
 */
#define GEMM_BLOCK_FLOPS 4e9

static gemm_plan
plan_gemm(gnn_backend *be, int64_t m, int64_t n, int64_t k)
{
	gemm_plan	g;
	int			nt = NT_WORK(be, (double) m * n * k);
	double		per_row;

	g.by_rows = m >= n;
	g.len = g.by_rows ? m : n;
	g.blk = gemm_blk(g.len);
	per_row = 2.0 * m * n * k / (double) g.len;
	if (per_row * g.blk > GEMM_BLOCK_FLOPS)
	{
		int64_t		b = (int64_t) (GEMM_BLOCK_FLOPS / per_row) / 64 * 64;

		g.blk = b < 64 ? 64 : b;
	}
	g.nblk = (g.len + g.blk - 1) / g.blk;
	g.parts = (double) m * n * k < 2e6 ? 1 : (int) (g.nblk < nt ? g.nblk : nt);
	return g;
}

static gnn_status
cpu_gemm(gnn_backend *be, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
		 float alpha, const float *A, int64_t lda, const float *B, int64_t ldb,
		 float beta, float *C, int64_t ldc)
{
	if (m < 0 || n < 0 || k < 0 || m > INT32_MAX || n > INT32_MAX || k > INT32_MAX)
		return gnn_error_set(&be->err, GNN_ERR_DIMENSION, "gemm: bad sizes %lld x %lld x %lld",
							 (long long) m, (long long) n, (long long) k);
	if (m == 0 || n == 0)
		return GNN_OK;
	if (k == 0)
	{
		for (int64_t i = 0; i < m; i++)
			for (int64_t j = 0; j < n; j++)
				C[i * ldc + j] = beta == 0.0f ? 0.0f : beta * C[i * ldc + j];
		return GNN_OK;
	}
	{
		gemm_plan	g = plan_gemm(be, m, n, k);
		volatile int stopped = 0;
		bool		poll = 2.0 * m * n * k > 1e9;	/* a product that takes time */

#pragma omp parallel for num_threads(g.parts) schedule(dynamic, 1) if (g.parts > 1)
		for (int64_t q = 0; q < g.nblk; q++)
		{
			int64_t		lo = q * g.blk,
						hi = lo + g.blk;
			const float *a = A,
					   *b = B;
			float	   *c = C;

			/* the calling thread asks (it is thread 0 of the team); the others see its answer */
			if (poll && omp_get_thread_num() == 0 && gnn_backend_stop_requested(be))
				stopped = 1;
			if (stopped)
				continue;
			if (hi > g.len)
				hi = g.len;
			if (hi <= lo)
				continue;
			if (g.by_rows)
			{
				a = trans_a ? A + lo : A + lo * lda;
				c = C + lo * ldc;
			}
			else
			{
				b = trans_b ? B + lo * ldb : B + lo;
				c = C + lo;
			}
			cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
						trans_b ? CblasTrans : CblasNoTrans,
						(int) (g.by_rows ? hi - lo : m), (int) (g.by_rows ? n : hi - lo), (int) k,
						alpha, a, (int) lda, b, (int) ldb, beta, c, (int) ldc);
		}
		if (stopped)
			return gnn_error_set(&be->err, GNN_ERR_CANCELLED, "stopped on request");
	}
	return GNN_OK;
}

/* y += c * x over d floats */
static inline void
gnn_row_axpy(float *restrict y, const float *restrict x, float c, int64_t d)
{
#pragma omp simd
	for (int64_t k = 0; k < d; k++)
		y[k] += c * x[k];
}

/* y = beta*y, reading y only when beta != 0 */
static inline void
gnn_row_beta(float *y, int64_t d, float beta)
{
	if (beta == 0.0f)
		memset(y, 0, sizeof(float) * d);
	else if (beta != 1.0f)
		for (int64_t k = 0; k < d; k++)
			y[k] *= beta;
}

static inline float
gnn_row_coef(const gnn_csr *A, gnn_agg agg, const float *row_scale, int64_t i)
{
	float		rs = row_scale ? row_scale[i] : 1.0f;

	if (agg == GNN_AGG_MEAN)
	{
		int64_t		deg = A->indptr[i + 1] - A->indptr[i];

		if (deg > 0)
			rs /= (float) deg;
	}
	return rs;
}

/*
 * Sparse row kernels accumulate up to 64 columns per pass over a row's
 * entries in a local array the compiler keeps in vector registers, instead of
 * reading and writing the output row once per entry (the products here are
 * memory bound): a neighbour row is read in a few adjacent cache lines, which
 * pays on long rows (hubs); each output element still sums its entries in
 * order, so the result is the same bit for bit.
 */
#define GNN_CHUNK_WIDE 64

/* rows per dynamic chunk: small enough that a few long rows spread over threads */
static inline int64_t
row_chunk(int64_t rows, int nt)
{
	int64_t		c = rows / (16 * (int64_t) nt);

	return c < 1 ? 1 : c > 64 ? 64 : c;
}

/* acc[0..w) += c * x[0..w), a full 64-wide chunk at a constant width */
static inline void
acc_add(float *restrict acc, float c, const float *restrict x, int64_t w)
{
	if (w == GNN_CHUNK_WIDE)
	{
#pragma omp simd
		for (int64_t k = 0; k < GNN_CHUNK_WIDE; k++)
			acc[k] += c * x[k];
	}
	else
	{
#pragma omp simd
		for (int64_t k = 0; k < w; k++)
			acc[k] += c * x[k];
	}
}

/*
 * entry e's coefficient, A_c[i, j]: its value times row i's coefficient rs
 * (gnn_row_coef) times column j's scale, as spmm and spmm_t sum it
 */
static inline float
entry_coef(const gnn_csr *A, int64_t e, float rs, const float *col_scale, int64_t j)
{
	return (A->values ? A->values[e] : 1.0f) * rs * (col_scale ? col_scale[j] : 1.0f);
}

/*
 * a row with no entries (an edgeless view, a node without neighbours):
 * y = beta * y, 0 when beta is 0.  The test is out of the loop: with it
 * inside, the loop ran one float at a time and a sampled batch's second-layer
 * input gradient (1,888 x 128, a quarter of its rows empty) spent 60% of
 * spmm_t here.
 */
static inline void
row_empty(float *y, int64_t d, float beta)
{
	if (beta == 0.0f)
		memset(y, 0, sizeof(float) * d);
	else if (beta != 1.0f)
	{
#pragma omp simd
		for (int64_t k = 0; k < d; k++)
			y[k] = beta * y[k];
	}
}

/* a row's sums out: y = acc + beta * y (beta 0: y = acc, as acc + 0), vectorised */
static inline void
row_store(float *restrict y, const float *restrict acc, int64_t w, float beta)
{
	if (beta == 0.0f)
	{
#pragma omp simd
		for (int64_t k = 0; k < w; k++)
			y[k] = acc[k] + 0.0f;
	}
	else
	{
#pragma omp simd
		for (int64_t k = 0; k < w; k++)
			y[k] = acc[k] + beta * y[k];
	}
}

/*
 * A 64-column chunk of sparse rows in eight 8-float vectors (GCC's vector
 * extension): the accumulators stay in registers across a row's entries.
 * The plain loop (acc_add) kept its 64-float array in memory and ran 4 lanes
 * wide (the x86-64 baseline): a sampled batch's first-layer aggregation (1,888
 * rows over 7,735 entries, 64 columns) took 140-180 us on one core against
 * 32-45 us here.  The AVX2 clone has no FMA ("avx2" does not enable it; AVX-512F
 * would), so each lane multiplies and adds as the baseline does, in the same
 * entry order: the same bits on every CPU.
 */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_ADDRESS__)
#define GNN_CLONES_AVX2 __attribute__((target_clones("avx2", "default")))
#define GNN_CLONES_AVX512 __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define GNN_CLONES_AVX2
#define GNN_CLONES_AVX512
#endif

typedef float gnn_v8 __attribute__((vector_size(32)));

#define V8_LOAD(v, p) memcpy(&(v), (p), sizeof(gnn_v8))
#define V8_STORE(p, v) memcpy((p), &(v), sizeof(gnn_v8))

/* y[0..64) = a + beta * y (a + 0.0f when beta is 0, as row_store) */
static inline void
v8_store_chunk(float *y, gnn_v8 a[8], float beta)
{
	for (int q = 0; q < 8; q++)
	{
		gnn_v8		v;

		if (beta == 0.0f)
			v = a[q] + 0.0f;
		else
		{
			gnn_v8		yy;

			V8_LOAD(yy, y + 8 * q);
			v = a[q] + beta * yy;
		}
		V8_STORE(y + 8 * q, v);
	}
}

#define V8_ACC8(a, c, x) \
	do { \
		gnn_v8		cv_ = (gnn_v8) {0} + (c), t_; \
		V8_LOAD(t_, (x)); a##0 += cv_ * t_; \
		V8_LOAD(t_, (x) + 8); a##1 += cv_ * t_; \
		V8_LOAD(t_, (x) + 16); a##2 += cv_ * t_; \
		V8_LOAD(t_, (x) + 24); a##3 += cv_ * t_; \
		V8_LOAD(t_, (x) + 32); a##4 += cv_ * t_; \
		V8_LOAD(t_, (x) + 40); a##5 += cv_ * t_; \
		V8_LOAD(t_, (x) + 48); a##6 += cv_ * t_; \
		V8_LOAD(t_, (x) + 56); a##7 += cv_ * t_; \
	} while (0)

#define V8_ZERO8(a) gnn_v8 a##0 = {0}, a##1 = {0}, a##2 = {0}, a##3 = {0}, \
		a##4 = {0}, a##5 = {0}, a##6 = {0}, a##7 = {0}
#define V8_ARR8(a) {a##0, a##1, a##2, a##3, a##4, a##5, a##6, a##7}

/* rows [lo, hi) of cpu_spmm */
GNN_CLONES_AVX2
static void
spmm_rows(const gnn_csr *A, gnn_agg agg, const float *row_scale, const float *col_scale,
		  const float *X, int64_t d, float beta, float *Y, int64_t lo, int64_t hi)
{
	for (int64_t i = lo; i < hi; i++)
	{
		float	   *y = Y + i * d;
		float		rs = gnn_row_coef(A, agg, row_scale, i);
		int64_t		e0 = A->indptr[i],
					e1 = A->indptr[i + 1],
					k0 = 0;

		if (e0 == e1)
		{
			row_empty(y, d, beta);
			continue;
		}
		for (; k0 + GNN_CHUNK_WIDE <= d; k0 += GNN_CHUNK_WIDE)
		{
			V8_ZERO8(a);

			for (int64_t e = e0; e < e1; e++)
			{
				int64_t		j = A->indices[e];
				float		c = entry_coef(A, e, rs, col_scale, j);
				const float *x = X + j * d + k0;

				if (e + 4 < e1)
					__builtin_prefetch(X + A->indices[e + 4] * d + k0);
				V8_ACC8(a, c, x);
			}
			{
				gnn_v8		acc[8] = V8_ARR8(a);

				v8_store_chunk(y + k0, acc, beta);
			}
		}
		if (k0 < d)
		{
			int64_t		w = d - k0;
			float		acc[GNN_CHUNK_WIDE];

			memset(acc, 0, sizeof(float) * w);
			for (int64_t e = e0; e < e1; e++)
			{
				int64_t		j = A->indices[e];
				float		c = entry_coef(A, e, rs, col_scale, j);
				const float *x = X + j * d + k0;

				if (e + 4 < e1)
					__builtin_prefetch(X + A->indices[e + 4] * d + k0);
				acc_add(acc, c, x, w);
			}
			row_store(y + k0, acc, w, beta);
		}
	}
}

static gnn_status
cpu_spmm(gnn_backend *be, const gnn_csr *A, gnn_agg agg, const float *row_scale,
		 const float *col_scale, const float *X, int64_t d, float beta, float *Y)
{
	int64_t		nr = A->n_rows,
				ch = row_chunk(nr, NT(be)),
				nch = (nr + ch - 1) / ch;

#pragma omp parallel for num_threads(NT_WORK(be, A->nnz * d)) schedule(dynamic, 1) if (A->nnz * d > GNN_PAR_MIN)
	for (int64_t c = 0; c < nch; c++)
		spmm_rows(A, agg, row_scale, col_scale, X, d, beta, Y, c * ch,
				  c * ch + ch < nr ? c * ch + ch : nr);
	return GNN_OK;
}

/*
 * What spmm_t_rows does to an output row once its sums are in (the previous
 * layer's epilogue backward: cpu_spmm_t_bias_act_backward), while the row is
 * in cache.
 */
typedef struct spmm_epi
{
	void		(*row) (const struct spmm_epi *e, float *Y, int64_t j);
	const float *P;
	int64_t		cols;
	int			act;
	float		param;
	float		p;
	float		scale;
	uint64_t	seed;
} spmm_epi;

/*
 * output rows (columns of A) [lo, hi) of cpu_spmm_t: Y = beta*Y + A_c^T G,
 * beta 1 on the rows below keep; then epi's row function on each (NULL: none)
 */
GNN_CLONES_AVX2
static void
spmm_t_rows(const gnn_csr *A, gnn_agg agg, const float *row_scale, const float *col_scale,
			const float *G, int64_t d, float beta_rest, int64_t keep, const spmm_epi *epi,
			float *Y, int64_t lo, int64_t hi)
{
	for (int64_t j = lo; j < hi; j++)
	{
		float	   *y = Y + j * d;
		float		beta = j < keep ? 1.0f : beta_rest;
		int64_t		t0 = A->t_indptr[j],
					t1 = A->t_indptr[j + 1],
					k0 = 0;

		if (t0 == t1)
		{
			row_empty(y, d, beta);
			if (epi)
				epi->row(epi, Y, j);
			continue;
		}
		for (; k0 + GNN_CHUNK_WIDE <= d; k0 += GNN_CHUNK_WIDE)
		{
			V8_ZERO8(a);

			for (int64_t t = t0; t < t1; t++)
			{
				int64_t		i = A->t_indices[t];
				int64_t		e = A->t_perm[t];
				float		c = entry_coef(A, e, gnn_row_coef(A, agg, row_scale, i), col_scale, j);
				const float *g = G + i * d + k0;

				V8_ACC8(a, c, g);
			}
			{
				gnn_v8		acc[8] = V8_ARR8(a);

				v8_store_chunk(y + k0, acc, beta);
			}
		}
		if (k0 < d)
		{
			int64_t		w = d - k0;
			float		acc[GNN_CHUNK_WIDE];

			memset(acc, 0, sizeof(float) * w);
			for (int64_t t = t0; t < t1; t++)
			{
				int64_t		i = A->t_indices[t];
				int64_t		e = A->t_perm[t];
				float		c = entry_coef(A, e, gnn_row_coef(A, agg, row_scale, i), col_scale, j);

				acc_add(acc, c, G + i * d + k0, w);
			}
			row_store(y + k0, acc, w, beta);
		}
		if (epi)
			epi->row(epi, Y, j);
	}
}

/*
 * The transposed product, by output row (a column of A): 64 columns per pass
 * like the forward one, and chunks sized to the number of rows, which is small
 * for a sparse feature matrix (54 columns went to one thread in chunks of 64).
 */
static gnn_status
cpu_spmm_t(gnn_backend *be, const gnn_csr *A, gnn_agg agg, const float *row_scale,
		   const float *col_scale, const float *G, int64_t d, float beta, float *Y)
{
	int64_t		nc = A->n_cols,
				ch = row_chunk(nc, NT(be)),
				nch = (nc + ch - 1) / ch;

	if (A->nnz > 0 && (!A->t_indptr || !A->t_indices || !A->t_perm))
		return gnn_error_set(&be->err, GNN_ERR_INVALID, "spmm_t: the CSR has no transpose");
#pragma omp parallel for num_threads(NT_WORK(be, A->nnz * d)) schedule(dynamic, 1) if (A->nnz * d > GNN_PAR_MIN)
	for (int64_t c = 0; c < nch; c++)
		spmm_t_rows(A, agg, row_scale, col_scale, G, d, beta, 0, NULL, Y, c * ch,
					c * ch + ch < nc ? c * ch + ch : nc);
	return GNN_OK;
}

static gnn_status
cpu_gather_rows(gnn_backend *be, const float *src, int64_t d, const int32_t *idx,
				int64_t n, float *dst)
{
#pragma omp parallel for num_threads(NT_WORK(be, n * d)) schedule(static) if (n * d > GNN_PAR_MIN)
	for (int64_t r = 0; r < n; r++)
		memcpy(dst + r * d, src + (int64_t) idx[r] * d, sizeof(float) * d);
	return GNN_OK;
}

static gnn_status
cpu_scatter_add_rows(gnn_backend *be, const float *src, int64_t d, const int32_t *idx,
					 int64_t n, float *dst)
{
	/* parallel over column chunks: each element still sums in ascending k */
	int64_t		chunk = 64;
	int64_t		nchunks = (d + chunk - 1) / chunk;

#pragma omp parallel for num_threads(NT_WORK(be, n * d)) schedule(static) if (nchunks > 1 && n * d > GNN_PAR_MIN)
	for (int64_t c = 0; c < nchunks; c++)
	{
		int64_t		k0 = c * chunk,
					k1 = k0 + chunk < d ? k0 + chunk : d;

		for (int64_t r = 0; r < n; r++)
		{
			float	   *y = dst + (int64_t) idx[r] * d;
			const float *x = src + r * d;

			for (int64_t k = k0; k < k1; k++)
				y[k] += x[k];
		}
	}
	return GNN_OK;
}

/*
 * Activations, one loop per kind: with the switch inside, GCC (-O2, no loop
 * unswitching) tested it per element and vectorised nothing, and ReLU over a
 * 31k x 64 layer took 30% of a full-batch GCN epoch (the selects vectorise
 * with -fno-trapping-math, set for the core in the Makefile).  Each element's
 * value is gnn_math_act's, as the kernels compute it.
 */
#define GNN_ACT_LOOP(n, body) \
	do { \
		_Pragma("omp parallel for simd num_threads(NT_WORK(be, n)) schedule(static) if (n > 4 * GNN_PAR_MIN)") \
		for (int64_t i = 0; i < (n); i++) \
			body; \
	} while (0)

static gnn_status
cpu_act_forward(gnn_backend *be, gnn_act act, float param, const float *x, float *y, int64_t n)
{
	switch ((int) act)
	{
		case 1:
			GNN_ACT_LOOP(n, y[i] = gnn_math_act(1, param, x[i]));
			break;
		case 2:
			GNN_ACT_LOOP(n, y[i] = gnn_math_act(2, param, x[i]));
			break;
		case 3:
			GNN_ACT_LOOP(n, y[i] = gnn_math_act(3, param, x[i]));
			break;
		default:
			GNN_ACT_LOOP(n, y[i] = gnn_math_act((int) act, param, x[i]));
			break;
	}
	return GNN_OK;
}

static gnn_status
cpu_act_backward(gnn_backend *be, gnn_act act, float param, const float *x, const float *y,
				 const float *dy, float *dx, int64_t n)
{
	(void) y;
	switch ((int) act)
	{
		case 1:
			GNN_ACT_LOOP(n, dx[i] = dy[i] * gnn_math_act_grad(1, param, x[i]));
			break;
		case 2:
			GNN_ACT_LOOP(n, dx[i] = dy[i] * gnn_math_act_grad(2, param, x[i]));
			break;
		case 3:
			GNN_ACT_LOOP(n, dx[i] = dy[i] * gnn_math_act_grad(3, param, x[i]));
			break;
		default:
			GNN_ACT_LOOP(n, dx[i] = dy[i] * gnn_math_act_grad((int) act, param, x[i]));
			break;
	}
	return GNN_OK;
}

/* *scale = 1 / (1 - p) for a dropout of p; false (be->err set, naming op) unless p is in [0, 1) */
static bool
dropout_scale(gnn_backend *be, const char *op, float p, float *scale)
{
	if (!(p >= 0.0f && p < 1.0f))
	{
		gnn_error_set(&be->err, GNN_ERR_INVALID, "%s: p must be in [0, 1), got %g", op, p);
		return false;
	}
	*scale = 1.0f / (1.0f - p);
	return true;
}

/*
 * Elements [k0, k1) of a row whose element k has dropout index i0 + k, in
 * pieces that share the index's high word: each piece's hash is 32-bit lane
 * math (gnn_math_hash32_lo), which vectorises; the 64-bit index did not
 * (a fused epilogue ran slower than the three ops it replaced), nor does a
 * 64-bit loop counter.  BODY sees k, and hi_ and li_ to pass to
 * gnn_math_dropout_lo.
 */
#define DROPOUT_PIECES(i0, k0, k1, seed, BODY) \
	for (int64_t kp_ = (k0); kp_ < (k1);) \
	{ \
		uint64_t	ii_ = (uint64_t) (i0) + (uint64_t) kp_; \
		uint32_t	lo_ = (uint32_t) ii_, \
					hi_ = gnn_math_hash32_hi((seed), (uint32_t) (ii_ >> 32)); \
		int64_t		len_ = (k1) - kp_; \
		if ((uint64_t) len_ > 0x100000000ULL - lo_) \
			len_ = (int64_t) (0x100000000ULL - lo_); \
		_Pragma("omp simd") \
		for (uint32_t j_ = 0; j_ < (uint32_t) len_; j_++) \
		{ \
			int64_t		k = kp_ + (int64_t) j_; \
			uint32_t	li_ = lo_ + j_; \
			BODY; \
		} \
		kp_ += len_; \
	}

/*
 * A hidden layer's epilogue in one pass over its output (bias_act and its
 * backward in backend.h).  Split from the parts it replaces, a sampled
 * GraphSAGE step's first layer (1,888 x 128) read and wrote its output
 * three times forward (bias, activation, the next layer's dropout) and three
 * times backward (dropout, activation, bias gradient, the last on one
 * thread).  Each element computes what those ops compute, in the same
 * order: the same bits.  The AVX2 clone (no FMA) runs the dropout's 32-bit
 * hash 8 lanes wide.  ELU (expf) stays scalar.
 */
#define BIAS_ACT_ROWS(ACT) \
	for (int64_t i = lo; i < hi; i++) \
	{ \
		float	   *pr = P + i * cols, \
				   *yr = Y + i * cols; \
		uint64_t	i0 = (uint64_t) (i * cols); \
		if (p > 0.0f) \
		{ \
			DROPOUT_PIECES(i0, 0, cols, seed, \
			{ \
				float		v = pr[k] + bias[k]; \
				pr[k] = v; \
				yr[k] = gnn_math_dropout_lo(gnn_math_act(ACT, param, v), seed, hi_, \
											li_, p, scale); \
			}); \
		} \
		else \
		{ \
			_Pragma("omp simd") \
			for (int64_t k = 0; k < cols; k++) \
			{ \
				float		v = pr[k] + bias[k]; \
				pr[k] = v; \
				yr[k] = gnn_math_act(ACT, param, v); \
			} \
		} \
	}

GNN_CLONES_AVX512
static void
bias_act_rows(float *P, const float *bias, int64_t cols, int act, float param, float p, float scale,
			  uint64_t seed, float *Y, int64_t lo, int64_t hi)
{
	switch (act)
	{
		case 1:
			BIAS_ACT_ROWS(1);
			break;
		case 2:
			BIAS_ACT_ROWS(2);
			break;
		case 3:
			BIAS_ACT_ROWS(3);
			break;
		default:
			BIAS_ACT_ROWS(0);
			break;
	}
}

static gnn_status
cpu_bias_act(gnn_backend *be, float *P, const float *bias, int64_t rows, int64_t cols, gnn_act act,
			 float param, float p, uint64_t seed, float *Y)
{
	float		scale;
	int64_t		n = rows * cols;
	int			parts = n > 4 * GNN_PAR_MIN ? NT_WORK(be, n) : 1;

	if (!dropout_scale(be, "bias_act", p, &scale))
		return GNN_ERR_INVALID;
#pragma omp parallel for num_threads(parts) schedule(static) if (parts > 1)
	for (int t = 0; t < parts; t++)
		bias_act_rows(P, bias, cols, (int) act, param, p, scale, seed, Y, rows * t / parts,
					  rows * (t + 1) / parts);
	return GNN_OK;
}

/* rows [lo, hi): dP (bias_act's backward, element by element) */
#define BIAS_ACT_BWD_ROWS(ACT) \
	for (int64_t i = lo; i < hi; i++) \
	{ \
		const float *pr = P + i * cols, \
				   *gr = dY + i * cols; \
		float	   *dr = dP + i * cols; \
		uint64_t	i0 = (uint64_t) (i * cols); \
		if (p > 0.0f) \
		{ \
			DROPOUT_PIECES(i0, 0, cols, seed, \
						   dr[k] = gnn_math_dropout_lo(gr[k], seed, hi_, li_, p, scale) * \
						   gnn_math_act_grad(ACT, param, pr[k])); \
		} \
		else \
		{ \
			_Pragma("omp simd") \
			for (int64_t k = 0; k < cols; k++) \
				dr[k] = gr[k] * gnn_math_act_grad(ACT, param, pr[k]); \
		} \
	}

GNN_CLONES_AVX512
static void
bias_act_bwd_rows(const float *P, const float *dY, int64_t cols, int act, float param, float p,
				  float scale, uint64_t seed, float *dP, int64_t lo, int64_t hi)
{
	switch (act)
	{
		case 1:
			BIAS_ACT_BWD_ROWS(1);
			break;
		case 2:
			BIAS_ACT_BWD_ROWS(2);
			break;
		case 3:
			BIAS_ACT_BWD_ROWS(3);
			break;
		default:
			BIAS_ACT_BWD_ROWS(0);
			break;
	}
}

static gnn_status cpu_bias_grad(gnn_backend *be, const float *dY, int64_t rows, int64_t cols,
								float beta, float *db);

/*
 * dP by rows on the team, then the bias gradient over dP, still in cache,
 * in bias_grad's order.  (Threads splitting the columns instead, each
 * summing its own in the same pass, ran at half the speed of one thread on
 * the 2-core VM.)
 */
static gnn_status
cpu_bias_act_backward(gnn_backend *be, gnn_act act, float param, const float *P, const float *dY,
					  int64_t rows, int64_t cols, float p, uint64_t seed, float *dP, float *db)
{
	int64_t		n = rows * cols;
	int			parts = n > 4 * GNN_PAR_MIN ? NT_WORK(be, n) : 1;
	float		scale;

	if (!dropout_scale(be, "bias_act_backward", p, &scale))
		return GNN_ERR_INVALID;
#pragma omp parallel for num_threads(parts) schedule(static) if (parts > 1)
	for (int t = 0; t < parts; t++)
		bias_act_bwd_rows(P, dY, cols, (int) act, param, p, scale, seed, dP, rows * t / parts,
						  rows * (t + 1) / parts);
	return cpu_bias_grad(be, dP, rows, cols, 0.0f, db);
}

/* row j of Y in place: bias_act_backward's, in its order (spmm_t_rows' epilogue) */
static void
bias_act_bwd_row(const spmm_epi *e, float *Y, int64_t j)
{
	bias_act_bwd_rows(e->P, Y, e->cols, e->act, e->param, e->p, e->scale, e->seed, Y, j, j + 1);
}

/*
 * spmm_t's rows, each finished by the previous layer's epilogue backward
 * while it is in cache, then the bias gradient over Y in bias_grad's order:
 * a sampled GraphSAGE step's second-layer input gradient (1,888 x 128) was
 * written by spmm_t, then read and written again by bias_act_backward.
 */
static gnn_status
cpu_spmm_t_bias_act_backward(gnn_backend *be, const gnn_csr *A, gnn_agg agg, const float *G, int64_t d,
							 int64_t keep_rows, gnn_act act, float param, const float *P, float p,
							 uint64_t seed, float *Y, float *db)
{
	int64_t		nc = A->n_cols,
				ch = row_chunk(nc, NT(be)),
				nch = (nc + ch - 1) / ch;
	spmm_epi	e = {bias_act_bwd_row, P, d, (int) act, param, p, 0.0f, seed};

	if (A->nnz > 0 && (!A->t_indptr || !A->t_indices || !A->t_perm))
		return gnn_error_set(&be->err, GNN_ERR_INVALID, "spmm_t: the CSR has no transpose");
	if (!dropout_scale(be, "spmm_t_bias_act_backward", p, &e.scale))
		return GNN_ERR_INVALID;
#pragma omp parallel for num_threads(NT_WORK(be, A->nnz * d + nc * d)) schedule(dynamic, 1) if (A->nnz * d + nc * d > GNN_PAR_MIN)
	for (int64_t c = 0; c < nch; c++)
		spmm_t_rows(A, agg, NULL, NULL, G, d, 0.0f, keep_rows, &e, Y, c * ch,
					c * ch + ch < nc ? c * ch + ch : nc);
	return cpu_bias_grad(be, Y, nc, d, 0.0f, db);
}

static gnn_status
cpu_axpby(gnn_backend *be, int64_t n, float alpha, const float *x, float beta, float *y)
{
#pragma omp parallel for num_threads(NT_WORK(be, n)) schedule(static) if (n > 4 * GNN_PAR_MIN)
	for (int64_t i = 0; i < n; i++)
		y[i] = alpha * x[i] + (beta == 0.0f ? 0.0f : beta * y[i]);
	return GNN_OK;
}

static gnn_status
cpu_add_bias(gnn_backend *be, float *Y, const float *bias, int64_t rows, int64_t cols)
{
#pragma omp parallel for num_threads(NT_WORK(be, rows * cols)) schedule(static) if (rows * cols > 4 * GNN_PAR_MIN)
	for (int64_t i = 0; i < rows; i++)
		for (int64_t k = 0; k < cols; k++)
			Y[i * cols + k] += bias[k];
	return GNN_OK;
}

/*
 * Column sums in double, each in row order.  The clones widen the
 * float-to-double conversions (the x86-64 baseline converts two floats at a
 * time): a 1,888 x 128 gradient took 40 us on one core, a quarter of the
 * fused second-layer backward.  Only additions: the same bits on every CPU.
 */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_ADDRESS__)
__attribute__((target_clones("avx512f", "avx2", "default")))
#endif
static gnn_status
cpu_bias_grad(gnn_backend *be, const float *dY, int64_t rows, int64_t cols, float beta, float *db)
{
	double	   *acc = calloc(cols > 0 ? cols : 1, sizeof(double));

	if (!acc)
		return gnn_error_set(&be->err, GNN_ERR_NOMEM, "bias_grad: out of memory");
	/* row by row, the columns in lanes: each column still summed in row order */
	for (int64_t i = 0; i < rows; i++)
	{
		const float *row = dY + i * cols;

#pragma omp simd
		for (int64_t k = 0; k < cols; k++)
			acc[k] += row[k];
	}
	for (int64_t k = 0; k < cols; k++)
		db[k] = (float) acc[k] + (beta == 0.0f ? 0.0f : beta * db[k]);
	free(acc);
	return GNN_OK;
}

/*
 * A dropout of rows x n elements of x (row stride ldx) into y (stride n),
 * element (r, i) with index index0 + r*ldx + i: the hash is 32-bit integer arithmetic,
 * which the x86-64 baseline (SSE2: no 32-bit vector multiply) barely
 * vectorises; clones for AVX2 and AVX-512 run it 8 and 16 lanes wide, with
 * the same bits (integer math), picked once at load time by the CPU.
 */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_ADDRESS__)
__attribute__((target_clones("avx512f", "avx2", "default")))
#endif
static void
dropout_rect(const float *x, int64_t ldx, float *y, int64_t rows, int64_t n, uint64_t index0,
			 float p, float scale, uint64_t seed)
{
	for (int64_t r = 0; r < rows; r++)
	{
		const float *xr = x + r * ldx;
		float	   *yr = y + r * n;
		uint64_t	i0 = index0 + (uint64_t) (r * ldx);

		DROPOUT_PIECES(i0, 0, n, seed,
					   yr[k] = gnn_math_dropout_lo(xr[k], seed, hi_, li_, p, scale));
	}
}

/* y[0..n) = dropout of x[0..n), whose first element has index index0 */
static inline void
dropout_span(const float *x, float *y, int64_t n, uint64_t index0, float p, float scale, uint64_t seed)
{
	dropout_rect(x, n, y, 1, n, index0, p, scale, seed);
}

static gnn_status
cpu_dropout_forward(gnn_backend *be, const float *x, float *y, int64_t n, float p, uint64_t seed)
{
	float		scale;
	int			parts = n > 4 * GNN_PAR_MIN ? NT_WORK(be, n) : 1;

	if (!dropout_scale(be, "dropout", p, &scale))
		return GNN_ERR_INVALID;
#pragma omp parallel for num_threads(parts) schedule(static) if (parts > 1)
	for (int t = 0; t < parts; t++)
		{
			int64_t		lo = n * t / parts;

			dropout_span(x + lo, y + lo, n * (t + 1) / parts - lo, (uint64_t) lo, p, scale, seed);
		}
	return GNN_OK;
}

static gnn_status
cpu_dropout_backward(gnn_backend *be, const float *dy, float *dx, int64_t n, float p, uint64_t seed)
{
	return cpu_dropout_forward(be, dy, dx, n, p, seed);
}

/* the context's scratch, at least n floats (its old contents are lost) */
static float *
cpu_scratch(gnn_backend *be, size_t n)
{
	gnn_cpu_ctx *ctx = be->ctx;

	if (n > ctx->scratch_cap)
	{
		size_t		cap = n + n / 4 + 1024;

		free(ctx->scratch);
		ctx->scratch = aligned_alloc(256, (sizeof(float) * cap + 255) & ~(size_t) 255);
		ctx->scratch_cap = ctx->scratch ? cap : 0;
	}
	return ctx->scratch;
}

#ifdef _OPENMP
#define THREAD_NUM() omp_get_thread_num()
#else
#define THREAD_NUM() 0
#endif

/*
 * gemm_dropout without the dropped copy of A, which on a first layer's dense
 * input is the largest matrix of a step (Cora: 15.5 MB, outside the caches
 * next to A itself).  Each thread writes blocks of D = dropout(A) into its
 * scratch, a few hundred KB that stay in cache, and multiplies them there.
 * D B makes cpu_gemm's calls (64 rows of D each; they differ only in lda,
 * which OpenBLAS's packing does not see), so its bits are cpu_gemm's on
 * dropout_forward(A).  D^T B sums over blocks of A's rows (see below): the
 * same products in another order.  Blocks of C's columns (n > m) all need
 * the whole of D: it is written once and cpu_gemm runs on it.
 */
#define GD_ROWS 128				/* rows of A per block of D^T B */
#define GD_GROUPS 8				/* partial sums of D^T B */
static gnn_status
cpu_gemm_dropout(gnn_backend *be, bool trans_a, int64_t m, int64_t n, int64_t k, float alpha,
				 const float *A, int64_t lda, float p, uint64_t seed, const float *B, int64_t ldb,
				 float beta, float *C, int64_t ldc)
{
	int64_t		ar = trans_a ? k : m,	/* A's rows and columns as stored */
				ac = trans_a ? m : k;
	float		scale;
	gemm_plan	g;
	float	   *scr;

	if (!dropout_scale(be, "gemm_dropout", p, &scale))
		return GNN_ERR_INVALID;
	if (m < 0 || n < 0 || k < 0 || m > INT32_MAX || n > INT32_MAX || k > INT32_MAX || lda < ac)
		return gnn_error_set(&be->err, GNN_ERR_DIMENSION, "gemm_dropout: bad sizes %lld x %lld x %lld (lda %lld)",
							 (long long) m, (long long) n, (long long) k, (long long) lda);
	if (m == 0 || n == 0 || k == 0)
		return cpu_gemm(be, trans_a, false, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
	g = plan_gemm(be, m, n, k);
	if (!g.by_rows)
	{
		if (!(scr = cpu_scratch(be, (size_t) ar * ac)))
			return gnn_error_set(&be->err, GNN_ERR_NOMEM, "gemm_dropout: out of memory for %lld x %lld",
								 (long long) ar, (long long) ac);
		dropout_rect(A, lda, scr, ar, ac, 0, p, scale, seed);
		return cpu_gemm(be, trans_a, false, m, n, k, alpha, scr, ac, B, ldb, beta, C, ldc);
	}
	if (trans_a)
	{
		/*
		 * D^T B, D = dropout(A) with A k x m: a sum over A's rows, in
		 * GD_GROUPS groups of consecutive blocks of GD_ROWS rows, each
		 * group's blocks added up in order into its own m x n partial, the
		 * partials summed in group order.  The groups follow from the shape
		 * alone, so any team gives the same bits; A is read once, row by
		 * row, and each block of D is used while it is in cache.
		 */
		int64_t		nrb = (k + GD_ROWS - 1) / GD_ROWS,
					ng = nrb < GD_GROUPS ? nrb : GD_GROUPS;
		int			parts = g.parts < ng ? g.parts : (int) ng;
		float	   *part;

		if (!(scr = cpu_scratch(be, (size_t) ng * m * n + (size_t) parts * GD_ROWS * m)))
			return gnn_error_set(&be->err, GNN_ERR_NOMEM, "gemm_dropout: out of memory for %lld partial sums of %lld x %lld",
								 (long long) ng, (long long) m, (long long) n);
		part = scr + (size_t) parts * GD_ROWS * m;

#pragma omp parallel for num_threads(parts) schedule(dynamic, 1) if (parts > 1)
		for (int64_t q = 0; q < ng; q++)
		{
			float	   *d = scr + (size_t) (parts > 1 ? THREAD_NUM() : 0) * GD_ROWS * m,
					   *P = part + (size_t) q * m * n;
			int64_t		b0 = q * nrb / ng,
						b1 = (q + 1) * nrb / ng;

			for (int64_t b = b0; b < b1; b++)
			{
				int64_t		r0 = b * GD_ROWS,
							w = r0 + GD_ROWS > k ? k - r0 : GD_ROWS;

				dropout_rect(A + r0 * lda, lda, d, w, m, (uint64_t) (r0 * lda), p, scale, seed);
				cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int) m, (int) n, (int) w, 1.0f,
							d, (int) m, B + r0 * ldb, (int) ldb, b == b0 ? 0.0f : 1.0f, P, (int) n);
			}
		}
#pragma omp parallel for num_threads(parts) schedule(static) if (parts > 1)
		for (int64_t i = 0; i < m; i++)
			for (int64_t j = 0; j < n; j++)
			{
				float		acc = 0.0f;

				for (int64_t q = 0; q < ng; q++)
					acc += part[(size_t) q * m * n + i * n + j];
				C[i * ldc + j] = alpha * acc + (beta == 0.0f ? 0.0f : beta * C[i * ldc + j]);
			}
		return GNN_OK;
	}
	/* D B: cpu_gemm's blocks of 64 rows of D */
	if (!(scr = cpu_scratch(be, (size_t) g.parts * g.blk * k)))
		return gnn_error_set(&be->err, GNN_ERR_NOMEM, "gemm_dropout: out of memory for %d blocks of %lld x %lld",
							 g.parts, (long long) g.blk, (long long) k);

#pragma omp parallel for num_threads(g.parts) schedule(dynamic, 1) if (g.parts > 1)
	for (int64_t q = 0; q < g.nblk; q++)
	{
		int64_t		lo = q * g.blk,
					hi = lo + g.blk,
					w;
		float	   *d = scr + (size_t) (g.parts > 1 ? THREAD_NUM() : 0) * g.blk * k;

		if (hi > g.len)
			hi = g.len;
		if (hi <= lo)
			continue;
		w = hi - lo;
		dropout_rect(A + lo * lda, lda, d, w, k, (uint64_t) (lo * lda), p, scale, seed);
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int) w, (int) n, (int) k, alpha, d, (int) k,
					B, (int) ldb, beta, C + lo * ldc, (int) ldc);
	}
	return GNN_OK;
}

static gnn_status
cpu_softmax_rows(gnn_backend *be, const float *X, float *Y, int64_t n, int64_t c)
{
#pragma omp parallel for num_threads(NT_WORK(be, n * c)) schedule(static) if (n * c > GNN_PAR_MIN)
	for (int64_t i = 0; i < n; i++)
	{
		const float *x = X + i * c;
		float	   *y = Y + i * c;
		float		m = -FLT_MAX,
					s = 0.0f;

		for (int64_t k = 0; k < c; k++)
			m = x[k] > m ? x[k] : m;
		for (int64_t k = 0; k < c; k++)
		{
			y[k] = expf(x[k] - m);
			s += y[k];
		}
		for (int64_t k = 0; k < c; k++)
			y[k] /= s;
	}
	return GNN_OK;
}

#define XENT_KEEP 256

static gnn_status
cpu_xent(gnn_backend *be, const float *logits, int64_t n, int64_t c, const int32_t *labels,
		 const int32_t *rows, int64_t nrows, float *dlogits, float *loss_host,
		 int64_t *correct_host, int64_t *counted_host)
{
	int64_t		counted = 0,
				correct = 0;
	double		loss = 0.0;
	float		ex[XENT_KEEP];

	if (dlogits)
		memset(dlogits, 0, sizeof(float) * n * c);
	for (int64_t r = 0; r < nrows; r++)
	{
		int32_t		i = rows[r];

		if (i < 0 || i >= n)
			return gnn_error_set(&be->err, GNN_ERR_INVALID, "xent: row %d out of range [0, %lld)",
								 i, (long long) n);
		if (labels[i] >= 0 && labels[i] < c)
			counted++;
	}
	/* sequential in row-list order: deterministic; nrows is small (a split) */
	for (int64_t r = 0; r < nrows; r++)
	{
		int32_t		i = rows[r];
		int32_t		y = labels[i];
		const float *x = logits + (int64_t) i * c;
		float		m = -FLT_MAX,
					s = 0.0f;
		int64_t		am = 0;

		if (y < 0 || y >= c)
			continue;
		for (int64_t k = 0; k < c; k++)
			if (x[k] > m)
			{
				m = x[k];
				am = k;
			}
		/* each exponential once: kept for the gradient where the row is narrow */
		for (int64_t k = 0; k < c; k++)
		{
			float		e = expf(x[k] - m);

			if (k < XENT_KEEP)
				ex[k] = e;
			s += e;
		}
		loss += gnn_math_xent(x[y], m, s);
		correct += (am == y);
		if (dlogits)
		{
			float	   *g = dlogits + (int64_t) i * c;
			float		inv = 1.0f / (float) counted;

			for (int64_t k = 0; k < c; k++)
				g[k] = ((k < XENT_KEEP ? ex[k] : expf(x[k] - m)) / s - (k == y ? 1.0f : 0.0f)) * inv;
		}
	}
	*loss_host = counted ? (float) (loss / (double) counted) : 0.0f;
	if (correct_host)
		*correct_host = correct;
	if (counted_host)
		*counted_host = counted;
	return GNN_OK;
}

static gnn_status
cpu_gat_node_scores(gnn_backend *be, const float *H, int64_t n, int64_t heads, int64_t f,
					const float *att, float *s)
{
#pragma omp parallel for num_threads(NT_WORK(be, n * heads * f)) schedule(static) if (n * heads * f > GNN_PAR_MIN)
	for (int64_t i = 0; i < n; i++)
		for (int64_t h = 0; h < heads; h++)
		{
			const float *x = H + i * heads * f + h * f;
			const float *a = att + h * f;
			float		acc = 0.0f;

			for (int64_t k = 0; k < f; k++)
				acc += x[k] * a[k];
			s[i * heads + h] = acc;
		}
	return GNN_OK;
}

static gnn_status
cpu_gat_node_scores_backward(gnn_backend *be, const float *H, int64_t n, int64_t heads,
							 int64_t f, const float *att, const float *ds, float *dH,
							 float beta, float *datt)
{
	int64_t		hf = heads * f;
	double	   *acc = calloc(hf > 0 ? hf : 1, sizeof(double));

	if (!acc)
		return gnn_error_set(&be->err, GNN_ERR_NOMEM, "gat_node_scores_backward: out of memory");
#pragma omp parallel for num_threads(NT_WORK(be, n * hf)) schedule(static) if (n * hf > GNN_PAR_MIN)
	for (int64_t i = 0; i < n; i++)
		for (int64_t h = 0; h < heads; h++)
		{
			float		g = ds[i * heads + h];

			for (int64_t k = 0; k < f; k++)
				dH[i * hf + h * f + k] += g * att[h * f + k];
		}
	for (int64_t i = 0; i < n; i++)
		for (int64_t h = 0; h < heads; h++)
		{
			float		g = ds[i * heads + h];

			for (int64_t k = 0; k < f; k++)
				acc[h * f + k] += (double) g * H[i * hf + h * f + k];
		}
	for (int64_t q = 0; q < hf; q++)
		datt[q] = (float) acc[q] + (beta == 0.0f ? 0.0f : beta * datt[q]);
	free(acc);
	return GNN_OK;
}

static gnn_status
cpu_gat_edge_softmax(gnn_backend *be, const gnn_csr *A, int64_t heads, const float *a_src,
					 const float *a_dst, float slope, float *alpha)
{
#pragma omp parallel for num_threads(NT(be)) schedule(dynamic, 64) if (A->nnz * heads > GNN_PAR_MIN)
	for (int64_t i = 0; i < A->n_rows; i++)
	{
		int64_t		e0 = A->indptr[i],
					e1 = A->indptr[i + 1];

		for (int64_t h = 0; h < heads; h++)
		{
			float		m = -FLT_MAX,
						s = 0.0f,
						ad = a_dst[i * heads + h];

			for (int64_t e = e0; e < e1; e++)
			{
				float		z = gnn_math_gat_logit(a_src[(int64_t) A->indices[e] * heads + h], ad, slope);

				alpha[e * heads + h] = z;
				m = z > m ? z : m;
			}
			for (int64_t e = e0; e < e1; e++)
			{
				float		v = expf(alpha[e * heads + h] - m);

				alpha[e * heads + h] = v;
				s += v;
			}
			for (int64_t e = e0; e < e1; e++)
				alpha[e * heads + h] /= s;
		}
	}
	return GNN_OK;
}

static gnn_status
cpu_gat_edge_softmax_backward(gnn_backend *be, const gnn_csr *A, int64_t heads,
							  const float *a_src, const float *a_dst, float slope,
							  const float *alpha, const float *dalpha,
							  float *da_src, float *da_dst)
{
	float	   *dot;

	if (A->nnz > 0 && (!A->t_indptr || !A->t_indices || !A->t_perm))
		return gnn_error_set(&be->err, GNN_ERR_INVALID, "gat_edge_softmax_backward: the CSR has no transpose");
	dot = malloc(sizeof(float) * (A->n_rows * heads + 1));
	if (!dot)
		return gnn_error_set(&be->err, GNN_ERR_NOMEM, "gat_edge_softmax_backward: out of memory");

	/* pass 1, rows: <alpha, dalpha> per (row, head) and da_dst */
#pragma omp parallel for num_threads(NT(be)) schedule(dynamic, 64) if (A->nnz * heads > GNN_PAR_MIN)
	for (int64_t i = 0; i < A->n_rows; i++)
	{
		for (int64_t h = 0; h < heads; h++)
		{
			float		d = 0.0f,
						acc = 0.0f,
						ad = a_dst[i * heads + h];

			for (int64_t e = A->indptr[i]; e < A->indptr[i + 1]; e++)
				d += alpha[e * heads + h] * dalpha[e * heads + h];
			dot[i * heads + h] = d;
			for (int64_t e = A->indptr[i]; e < A->indptr[i + 1]; e++)
			{
				float		z = a_src[(int64_t) A->indices[e] * heads + h] + ad;

				acc += alpha[e * heads + h] * (dalpha[e * heads + h] - d) *
					gnn_math_leaky_relu_grad(z, slope);
			}
			da_dst[i * heads + h] = acc;
		}
	}
	/* pass 2, columns: da_src by walking the transpose */
#pragma omp parallel for num_threads(NT(be)) schedule(dynamic, 64) if (A->nnz * heads > GNN_PAR_MIN)
	for (int64_t j = 0; j < A->n_cols; j++)
	{
		for (int64_t h = 0; h < heads; h++)
		{
			float		acc = 0.0f,
						as = a_src[j * heads + h];

			for (int64_t t = A->t_indptr[j]; t < A->t_indptr[j + 1]; t++)
			{
				int64_t		i = A->t_indices[t];
				int64_t		e = A->t_perm[t];
				float		z = as + a_dst[i * heads + h];

				acc += alpha[e * heads + h] * (dalpha[e * heads + h] - dot[i * heads + h]) *
					gnn_math_leaky_relu_grad(z, slope);
			}
			da_src[j * heads + h] = acc;
		}
	}
	free(dot);
	return GNN_OK;
}

static gnn_status
cpu_gat_aggregate(gnn_backend *be, const gnn_csr *A, int64_t heads, int64_t f,
				  const float *alpha, const float *H, float *out)
{
	int64_t		hf = heads * f;

#pragma omp parallel for num_threads(NT(be)) schedule(dynamic, 64) if (A->nnz * hf > GNN_PAR_MIN)
	for (int64_t i = 0; i < A->n_rows; i++)
	{
		float	   *y = out + i * hf;

		memset(y, 0, sizeof(float) * hf);
		for (int64_t e = A->indptr[i]; e < A->indptr[i + 1]; e++)
		{
			const float *x = H + (int64_t) A->indices[e] * hf;

			for (int64_t h = 0; h < heads; h++)
			{
				gnn_row_axpy(y + h * f, x + h * f, alpha[e * heads + h], f);
			}
		}
	}
	return GNN_OK;
}

static gnn_status
cpu_gat_aggregate_backward(gnn_backend *be, const gnn_csr *A, int64_t heads, int64_t f,
						   const float *alpha, const float *H, const float *dout,
						   float beta, float *dH, float *dalpha)
{
	int64_t		hf = heads * f;

	if (A->nnz > 0 && (!A->t_indptr || !A->t_indices || !A->t_perm))
		return gnn_error_set(&be->err, GNN_ERR_INVALID, "gat_aggregate_backward: the CSR has no transpose");
#pragma omp parallel for num_threads(NT(be)) schedule(dynamic, 64) if (A->nnz * hf > GNN_PAR_MIN)
	for (int64_t i = 0; i < A->n_rows; i++)
	{
		const float *g = dout + i * hf;

		for (int64_t e = A->indptr[i]; e < A->indptr[i + 1]; e++)
		{
			const float *x = H + (int64_t) A->indices[e] * hf;

			for (int64_t h = 0; h < heads; h++)
			{
				float		acc = 0.0f;

				for (int64_t k = 0; k < f; k++)
					acc += g[h * f + k] * x[h * f + k];
				dalpha[e * heads + h] = acc;
			}
		}
	}
#pragma omp parallel for num_threads(NT(be)) schedule(dynamic, 64) if (A->nnz * hf > GNN_PAR_MIN)
	for (int64_t j = 0; j < A->n_cols; j++)
	{
		float	   *y = dH + j * hf;

		gnn_row_beta(y, hf, beta);
		for (int64_t t = A->t_indptr[j]; t < A->t_indptr[j + 1]; t++)
		{
			const float *g = dout + (int64_t) A->t_indices[t] * hf;
			int64_t		e = A->t_perm[t];

			for (int64_t h = 0; h < heads; h++)
			{
				gnn_row_axpy(y + h * f, g + h * f, alpha[e * heads + h], f);
			}
		}
	}
	return GNN_OK;
}

static gnn_status
cpu_head_mean(gnn_backend *be, const float *X, int64_t n, int64_t heads, int64_t f, float *Y)
{
	float		inv = 1.0f / (float) heads;

	(void) be;
	for (int64_t i = 0; i < n; i++)
		for (int64_t k = 0; k < f; k++)
		{
			float		acc = 0.0f;

			for (int64_t h = 0; h < heads; h++)
				acc += X[i * heads * f + h * f + k];
			Y[i * f + k] = acc * inv;
		}
	return GNN_OK;
}

static gnn_status
cpu_head_mean_backward(gnn_backend *be, const float *dY, int64_t n, int64_t heads, int64_t f,
					   float *dX)
{
	float		inv = 1.0f / (float) heads;

	(void) be;
	for (int64_t i = 0; i < n; i++)
		for (int64_t h = 0; h < heads; h++)
			for (int64_t k = 0; k < f; k++)
				dX[i * heads * f + h * f + k] = dY[i * f + k] * inv;
	return GNN_OK;
}

static gnn_status
cpu_max_agg(gnn_backend *be, const gnn_csr *A, const float *X, int64_t d, float *Y,
			int32_t *argmax)
{
#pragma omp parallel for num_threads(NT_WORK(be, A->nnz * d)) schedule(dynamic, 64) if (A->nnz * d > GNN_PAR_MIN)
	for (int64_t i = 0; i < A->n_rows; i++)
	{
		float	   *y = Y + i * d;
		int32_t    *am = argmax + i * d;
		int64_t		e0 = A->indptr[i],
					e1 = A->indptr[i + 1];

		if (e0 == e1)
		{
			for (int64_t k = 0; k < d; k++)
			{
				y[k] = 0.0f;
				am[k] = -1;
			}
			continue;
		}
		{
			int32_t		j0 = A->indices[e0];

			for (int64_t k = 0; k < d; k++)
			{
				y[k] = X[(int64_t) j0 * d + k];
				am[k] = j0;
			}
		}
		for (int64_t e = e0 + 1; e < e1; e++)
		{
			int32_t		j = A->indices[e];
			const float *x = X + (int64_t) j * d;

			for (int64_t k = 0; k < d; k++)
				if (x[k] > y[k])
				{
					y[k] = x[k];
					am[k] = j;
				}
		}
	}
	return GNN_OK;
}

static gnn_status
cpu_max_agg_backward(gnn_backend *be, const gnn_csr *A, const float *dY, const int32_t *argmax,
					 int64_t d, float beta, float *dX)
{
	if (A->nnz > 0 && (!A->t_indptr || !A->t_indices))
		return gnn_error_set(&be->err, GNN_ERR_INVALID, "max_agg_backward: the CSR has no transpose");
#pragma omp parallel for num_threads(NT_WORK(be, A->nnz * d)) schedule(dynamic, 64) if (A->nnz * d > GNN_PAR_MIN)
	for (int64_t j = 0; j < A->n_cols; j++)
	{
		float	   *y = dX + j * d;

		gnn_row_beta(y, d, beta);
		for (int64_t t = A->t_indptr[j]; t < A->t_indptr[j + 1]; t++)
		{
			int64_t		i = A->t_indices[t];

			for (int64_t k = 0; k < d; k++)
				if (argmax[i * d + k] == j)
					y[k] += dY[i * d + k];
		}
	}
	return GNN_OK;
}

/*
 * Adam over w[0..n).  The x86-64 baseline (SSE2) runs it 4 lanes wide; the
 * AVX2 clone 8 (without FMA, which "avx2" does not enable, so each lane
 * computes exactly what the baseline's does: its square root and divisions
 * are exact).  A job's parameters are small (a 2-layer GraphSAGE's six hold
 * 17,700 floats), so the step runs in line: through an OpenMP region that
 * the size kept to one thread, six calls took 67 us against 7 here (AVX2).
 */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_ADDRESS__)
__attribute__((target_clones("avx2", "default")))
#endif
static void
adam_span(float *restrict w, const float *restrict g, float *restrict m, float *restrict v, int64_t n, float lr,
		  float beta1, float beta2, float eps, float weight_decay, float bc1, float bc2)
{
#pragma omp simd
	for (int64_t i = 0; i < n; i++)
		gnn_math_adam(&w[i], g[i], &m[i], &v[i], lr, beta1, beta2, eps, weight_decay, bc1, bc2);
}

static gnn_status
cpu_adam_step(gnn_backend *be, float *w, const float *g, float *m, float *v, int64_t n,
			  float lr, float beta1, float beta2, float eps, float weight_decay, int64_t t)
{
	float		bc1 = 1.0f - powf(beta1, (float) t);
	float		bc2 = 1.0f - powf(beta2, (float) t);
	int			nt = n > 4 * GNN_PAR_MIN ? NT_WORK(be, n) : 1;

	if (t < 1)
		return gnn_error_set(&be->err, GNN_ERR_INVALID, "adam_step: step must be >= 1");
	if (nt <= 1)
	{
		adam_span(w, g, m, v, n, lr, beta1, beta2, eps, weight_decay, bc1, bc2);
		return GNN_OK;
	}
#pragma omp parallel num_threads(nt)
	{
		int64_t		k = omp_get_thread_num(),
					K = omp_get_num_threads(),
					lo = n * k / K,
					hi = n * (k + 1) / K;

		adam_span(w + lo, g + lo, m + lo, v + lo, hi - lo, lr, beta1, beta2, eps, weight_decay, bc1, bc2);
	}
	return GNN_OK;
}

static gnn_status
cpu_sgd_step(gnn_backend *be, float *w, const float *g, float *buf, int64_t n, float lr,
			 float momentum, float weight_decay)
{
#pragma omp parallel for num_threads(NT_WORK(be, n)) schedule(static) if (n > 4 * GNN_PAR_MIN)
	for (int64_t i = 0; i < n; i++)
		gnn_math_sgd(&w[i], g[i], buf ? &buf[i] : NULL, lr, momentum, weight_decay);
	return GNN_OK;
}

static const gnn_backend_ops gnn_cpu_ops = {
	.abi_version = GNN_BACKEND_ABI_VERSION,
	.ops_size = sizeof(gnn_backend_ops),
	.destroy = cpu_destroy,
	.set_threads = cpu_set_threads,
	.sync = cpu_sync,
	.mem_alloc = cpu_alloc,
	.mem_free = cpu_free,
	.copy_h2d = cpu_copy,
	.copy_d2h = cpu_copy,
	.copy_d2d = cpu_copy,
	.mem_set = cpu_memset,
	.gemm = cpu_gemm,
	.spmm = cpu_spmm,
	.spmm_t = cpu_spmm_t,
	.gather_rows = cpu_gather_rows,
	.scatter_add_rows = cpu_scatter_add_rows,
	.act_forward = cpu_act_forward,
	.act_backward = cpu_act_backward,
	.axpby = cpu_axpby,
	.add_bias = cpu_add_bias,
	.bias_grad = cpu_bias_grad,
	.dropout_forward = cpu_dropout_forward,
	.dropout_backward = cpu_dropout_backward,
	.gemm_dropout = cpu_gemm_dropout,
	.softmax_rows = cpu_softmax_rows,
	.xent = cpu_xent,
	.gat_node_scores = cpu_gat_node_scores,
	.gat_node_scores_backward = cpu_gat_node_scores_backward,
	.gat_edge_softmax = cpu_gat_edge_softmax,
	.gat_edge_softmax_backward = cpu_gat_edge_softmax_backward,
	.gat_aggregate = cpu_gat_aggregate,
	.gat_aggregate_backward = cpu_gat_aggregate_backward,
	.head_mean = cpu_head_mean,
	.head_mean_backward = cpu_head_mean_backward,
	.max_agg = cpu_max_agg,
	.max_agg_backward = cpu_max_agg_backward,
	.adam_step = cpu_adam_step,
	.sgd_step = cpu_sgd_step,
	.bias_act = cpu_bias_act,
	.bias_act_backward = cpu_bias_act_backward,
	.spmm_t_bias_act_backward = cpu_spmm_t_bias_act_backward,
};

const gnn_backend_ops *
gnn_backend_cpu(void)
{
	return &gnn_cpu_ops;
}

gnn_status
gnn_backend_cpu_create(int nthreads, gnn_backend **out, gnn_error *err)
{
	gnn_backend *be;
	gnn_status	st;

	*out = NULL;
	if (nthreads < 0)
		return gnn_error_set(err, GNN_ERR_INVALID, "thread count must be >= 0 (0 = all cores), got %d", nthreads);
	be = calloc(1, sizeof(*be));
	if (!be)
		return gnn_error_set(err, GNN_ERR_NOMEM, "out of memory creating the cpu backend");
	be->ctx = calloc(1, sizeof(gnn_cpu_ctx));
	if (!be->ctx)
	{
		free(be);
		return gnn_error_set(err, GNN_ERR_NOMEM, "out of memory creating the cpu backend");
	}
	be->ops = &gnn_cpu_ops;
	snprintf(be->name, sizeof(be->name), "cpu");
	be->fail_after = -1;
	gnn_error_clear(&be->err);
	st = cpu_set_threads(be, nthreads);
	if (st != GNN_OK)
	{
		gnn_backend_error(be, st, err);
		cpu_destroy(be);
		return st;
	}
	*out = be;
	return GNN_OK;
}
