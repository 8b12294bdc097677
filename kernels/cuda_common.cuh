/*
 * cuda_common.cuh: what every CUDA op file shares: the backend context,
 * error macros that turn CUDA / cuBLAS failures into GNN_ERR_BACKEND with a
 * message in be->err (never abort, never print), launch helpers, warp
 * reductions and the declarations of the ops that backend_cuda.cu puts in
 * the table.
 *
 * The shared object is self-contained: it does not call into the core
 * (gnn_error_set lives in gnn.so or in a test binary, whose symbols need not
 * be visible to dlopen), so it formats errors itself.  Everything but the
 * entry point has hidden visibility (-fvisibility=hidden in the Makefile).
 */
#ifndef GNN_CUDA_COMMON_CUH
#define GNN_CUDA_COMMON_CUH

#include "nn/backend.h"
#include "base/ops_math.h"
#include "kernel_math.h"

#include <cuda_runtime.h>
#include <cublas_v2.h>
#include <stdarg.h>
#include <stdio.h>

/* Per-instance state, be->ctx. */
typedef struct gnn_cuda_ctx
{
	int			device;
	cudaStream_t stream;
	cublasHandle_t cublas;
	int			num_sms;

	/* growable device scratch (stream-ordered reuse between ops) */
	void	   *scratch;
	size_t		scratch_cap;

	/* pinned host block for the scalars xent returns, and a device twin */
	void	   *host_small;
	void	   *dev_small;
} gnn_cuda_ctx;

#define GNN_CUDA_SMALL_BYTES 256

#define CTX(be) ((gnn_cuda_ctx *) (be)->ctx)

/* Record an error in err (the core's gnn_error_set, duplicated: see above). */
static inline gnn_status
gnn_cuda_error(gnn_error *err, gnn_status status, const char *fmt,...)
	__attribute__((format(printf, 3, 4)));

static inline gnn_status
gnn_cuda_error(gnn_error *err, gnn_status status, const char *fmt,...)
{
	if (err)
	{
		va_list		ap;

		err->status = status;
		err->row = -1;
		err->id = 0;
		va_start(ap, fmt);
		vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
		va_end(ap);
	}
	return status;
}

static inline const char *
gnn_cublas_status_str(cublasStatus_t s)
{
	switch (s)
	{
		case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
		case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
		case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
		case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
		case CUBLAS_STATUS_ARCH_MISMATCH: return "CUBLAS_STATUS_ARCH_MISMATCH";
		case CUBLAS_STATUS_MAPPING_ERROR: return "CUBLAS_STATUS_MAPPING_ERROR";
		case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
		case CUBLAS_STATUS_INTERNAL_ERROR: return "CUBLAS_STATUS_INTERNAL_ERROR";
		case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
		default: return "unknown cuBLAS status";
	}
}

/* Wrap every CUDA runtime call: on failure fill be->err and return. */
#define CUDA_CHECK(be, call) \
	do { \
		cudaError_t e_ = (call); \
		if (e_ != cudaSuccess) \
			return gnn_cuda_error(&(be)->err, GNN_ERR_BACKEND, "%s: CUDA error %s (%s) in %s at %s:%d", \
								  (be)->name, cudaGetErrorName(e_), cudaGetErrorString(e_), \
								  #call, __FILE__, __LINE__); \
	} while (0)

#define CUBLAS_CHECK(be, call) \
	do { \
		cublasStatus_t s_ = (call); \
		if (s_ != CUBLAS_STATUS_SUCCESS) \
			return gnn_cuda_error(&(be)->err, GNN_ERR_BACKEND, "%s: cuBLAS error %s in %s at %s:%d", \
								  (be)->name, gnn_cublas_status_str(s_), #call, __FILE__, __LINE__); \
	} while (0)

/* After a kernel launch: configuration errors show up here. */
#define CUDA_CHECK_LAUNCH(be) CUDA_CHECK(be, cudaGetLastError())

/* Make the instance's device current (cheap; several instances may coexist). */
#define CUDA_ENTER(be) CUDA_CHECK(be, cudaSetDevice(CTX(be)->device))

#define GNN_CUDA_BLOCK 256

/* a scratch size rounded up to 256 bytes (the alignment cub and cuBLAS want of a carved-out part) */
static inline size_t
gnn_cuda_align256(size_t b)
{
	return (b + 255) & ~(size_t) 255;
}

/* blocks for total threads, total > 0 */
static inline unsigned int
gnn_cuda_blocks(int64_t total, int block)
{
	int64_t		b = (total + block - 1) / block;

	return (unsigned int) (b > 0x7fffffffLL ? 0x7fffffffLL : b);
}

/* blocks for nrows groups of g lanes (g divides the block, so groups never straddle a warp) */
static inline unsigned int
gnn_cuda_group_blocks(int64_t nrows, int g)
{
	return gnn_cuda_blocks(nrows * g, GNN_CUDA_BLOCK);
}

/* grid for a grid-stride element-wise kernel over n elements */
static inline unsigned int
gnn_cuda_grid_stride_blocks(const gnn_backend *be, int64_t n)
{
	int64_t		b = (n + GNN_CUDA_BLOCK - 1) / GNN_CUDA_BLOCK;
	int64_t		cap = (int64_t) CTX(be)->num_sms * 16;

	if (cap < 1)
		cap = 1;
	return (unsigned int) (b < cap ? (b > 0 ? b : 1) : cap);
}

/* 16-byte aligned pointer (NULL counts as aligned) */
static inline bool
gnn_cuda_aligned16(const void *p)
{
	return ((uintptr_t) p & 15) == 0;
}

/* the transpose is needed by *_t / *_backward ops */
static inline bool
gnn_cuda_has_transpose(const gnn_csr *A)
{
	return A->nnz == 0 || (A->t_indptr && A->t_indices && A->t_perm);
}

/* Scratch of at least bytes, valid until the next call that asks for scratch. */
gnn_status	gnn_cuda_scratch(gnn_backend *be, size_t bytes, void **p);

#ifdef __CUDACC__
/* warp reductions over the g lanes of a group (g a power of two <= 32) */
__device__ __forceinline__ float
gnn_warp_sum(float v, int g)
{
	for (int o = g >> 1; o > 0; o >>= 1)
		v += __shfl_xor_sync(0xffffffffu, v, o, g);
	return v;
}

__device__ __forceinline__ float
gnn_warp_max(float v, int g)
{
	for (int o = g >> 1; o > 0; o >>= 1)
	{
		float		w = __shfl_xor_sync(0xffffffffu, v, o, g);

		v = w > v ? w : v;
	}
	return v;
}

__device__ __forceinline__ double
gnn_warp_sum_d(double v, int g)
{
	for (int o = g >> 1; o > 0; o >>= 1)
		v += __shfl_xor_sync(0xffffffffu, v, o, g);
	return v;
}

/* global thread index, 64-bit */
__device__ __forceinline__ int64_t
gnn_tid(void)
{
	return (int64_t) blockIdx.x * blockDim.x + threadIdx.x;
}

__device__ __forceinline__ int64_t
gnn_nthreads(void)
{
	return (int64_t) gridDim.x * blockDim.x;
}
#endif

/* ------------------------------------------------------------------ the ops
 * (one family per .cu file; backend_cuda.cu puts them in the table) */

/* memory.cu */
gnn_status	cuda_mem_alloc(gnn_backend *be, size_t bytes, void **ptr);
void		cuda_mem_free(gnn_backend *be, void *ptr);
gnn_status	cuda_copy_h2d(gnn_backend *be, void *dst, const void *src, size_t bytes);
gnn_status	cuda_copy_d2h(gnn_backend *be, void *dst, const void *src, size_t bytes);
gnn_status	cuda_copy_d2d(gnn_backend *be, void *dst, const void *src, size_t bytes);
gnn_status	cuda_mem_set(gnn_backend *be, void *dst, int byte, size_t bytes);

/* gemm.cu */
gnn_status	cuda_gemm(gnn_backend *be, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
					  float alpha, const float *A, int64_t lda, const float *B, int64_t ldb,
					  float beta, float *C, int64_t ldc);

/* spmm.cu */
gnn_status	cuda_spmm(gnn_backend *be, const gnn_csr *A, gnn_agg agg, const float *row_scale,
					  const float *col_scale, const float *X, int64_t d, float beta, float *Y);
gnn_status	cuda_spmm_t(gnn_backend *be, const gnn_csr *A, gnn_agg agg, const float *row_scale,
						const float *col_scale, const float *G, int64_t d, float beta, float *Y);

/* rows.cu */
gnn_status	cuda_gather_rows(gnn_backend *be, const float *src, int64_t d, const int32_t *idx,
							 int64_t n, float *dst);
gnn_status	cuda_scatter_add_rows(gnn_backend *be, const float *src, int64_t d,
								  const int32_t *idx, int64_t n, float *dst);

/* eltwise.cu */
gnn_status	cuda_act_forward(gnn_backend *be, gnn_act act, float param, const float *x,
							 float *y, int64_t n);
gnn_status	cuda_act_backward(gnn_backend *be, gnn_act act, float param, const float *x,
							  const float *y, const float *dy, float *dx, int64_t n);
gnn_status	cuda_axpby(gnn_backend *be, int64_t n, float alpha, const float *x, float beta, float *y);
/* y[0..n) = beta*y, y not read when beta == 0 */
gnn_status	gnn_cuda_scale(gnn_backend *be, float *y, int64_t n, float beta);
gnn_status	cuda_dropout_forward(gnn_backend *be, const float *x, float *y, int64_t n, float p,
								 uint64_t seed);
gnn_status	cuda_dropout_backward(gnn_backend *be, const float *dy, float *dx, int64_t n, float p,
								  uint64_t seed);
gnn_status	cuda_gemm_dropout(gnn_backend *be, bool trans_a, int64_t m, int64_t n, int64_t k,
							  float alpha, const float *A, int64_t lda, float p, uint64_t seed,
							  const float *B, int64_t ldb, float beta, float *C, int64_t ldc);

/* bias.cu (and the column-sum kernel GAT reuses) */
gnn_status	cuda_add_bias(gnn_backend *be, float *Y, const float *bias, int64_t rows, int64_t cols);
gnn_status	cuda_bias_grad(gnn_backend *be, const float *dY, int64_t rows, int64_t cols,
						   float beta, float *db);
gnn_status	gnn_cuda_colsum(gnn_backend *be, const float *X, int64_t rows, int64_t cols,
							int64_t heads, int64_t f, const float *ws, float beta, float *out);

/* softmax.cu, xent.cu */
gnn_status	cuda_softmax_rows(gnn_backend *be, const float *X, float *Y, int64_t n, int64_t c);
gnn_status	cuda_xent(gnn_backend *be, const float *logits, int64_t n, int64_t c,
					  const int32_t *labels, const int32_t *rows, int64_t nrows, float *dlogits,
					  float *loss_host, int64_t *correct_host, int64_t *counted_host);

/* gat_scores.cu, gat_softmax.cu, gat_aggregate.cu */
gnn_status	cuda_gat_node_scores(gnn_backend *be, const float *H, int64_t n, int64_t heads,
								 int64_t f, const float *att, float *s);
gnn_status	cuda_gat_node_scores_backward(gnn_backend *be, const float *H, int64_t n,
										  int64_t heads, int64_t f, const float *att,
										  const float *ds, float *dH, float beta, float *datt);
gnn_status	cuda_gat_edge_softmax(gnn_backend *be, const gnn_csr *A, int64_t heads,
								  const float *a_src, const float *a_dst, float slope,
								  float *alpha);
gnn_status	cuda_gat_edge_softmax_backward(gnn_backend *be, const gnn_csr *A, int64_t heads,
										   const float *a_src, const float *a_dst, float slope,
										   const float *alpha, const float *dalpha,
										   float *da_src, float *da_dst);
gnn_status	cuda_gat_aggregate(gnn_backend *be, const gnn_csr *A, int64_t heads, int64_t f,
							   const float *alpha, const float *H, float *out);
gnn_status	cuda_gat_aggregate_backward(gnn_backend *be, const gnn_csr *A, int64_t heads,
										int64_t f, const float *alpha, const float *H,
										const float *dout, float beta, float *dH,
										float *dalpha);
gnn_status	cuda_head_mean(gnn_backend *be, const float *X, int64_t n, int64_t heads, int64_t f,
						   float *Y);
gnn_status	cuda_head_mean_backward(gnn_backend *be, const float *dY, int64_t n, int64_t heads,
									int64_t f, float *dX);

/* max_agg.cu */
gnn_status	cuda_max_agg(gnn_backend *be, const gnn_csr *A, const float *X, int64_t d, float *Y,
						 int32_t *argmax);
gnn_status	cuda_max_agg_backward(gnn_backend *be, const gnn_csr *A, const float *dY,
								  const int32_t *argmax, int64_t d, float beta, float *dX);

/* optim.cu */
gnn_status	cuda_adam_step(gnn_backend *be, float *w, const float *g, float *m, float *v,
						   int64_t n, float lr, float beta1, float beta2, float eps,
						   float weight_decay, int64_t t);
gnn_status	cuda_sgd_step(gnn_backend *be, float *w, const float *g, float *buf, int64_t n,
						  float lr, float momentum, float weight_decay);

#endif							/* GNN_CUDA_COMMON_CUH */
