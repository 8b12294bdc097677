/*
 * eltwise.cu: element-wise ops (activations, axpby, dropout, scaling).
 * Grid-stride loops over 64-bit indices; the per-element math is ops_math.h,
 * the same functions the CPU backend calls, so the dropout mask in
 * particular is identical on both backends for a given seed.
 */
#include "cuda_common.cuh"

__global__ void
act_forward_kernel(int act, float param, const float *x, float *y, int64_t n)
{
	for (int64_t i = gnn_tid(); i < n; i += gnn_nthreads())
		y[i] = gnn_math_act(act, param, x[i]);
}

__global__ void
act_backward_kernel(int act, float param, const float *x, const float *dy, float *dx, int64_t n)
{
	for (int64_t i = gnn_tid(); i < n; i += gnn_nthreads())
		dx[i] = dy[i] * gnn_math_act_grad(act, param, x[i]);
}

__global__ void
axpby_kernel(int64_t n, float alpha, const float *x, float beta, float *y)
{
	for (int64_t i = gnn_tid(); i < n; i += gnn_nthreads())
		y[i] = alpha * x[i] + gnn_k_beta_init(beta, y + i);
}

__global__ void
scale_kernel(float *y, int64_t n, float beta)
{
	for (int64_t i = gnn_tid(); i < n; i += gnn_nthreads())
		y[i] = gnn_k_beta_init(beta, y + i);
}

__global__ void
dropout_kernel(const float *x, float *y, int64_t n, float p, float scale, uint64_t seed)
{
	for (int64_t i = gnn_tid(); i < n; i += gnn_nthreads())
		y[i] = gnn_math_dropout(x[i], seed, (uint64_t) i, p, scale);
}

/* out[r*ac + j] = dropout of A[r*lda + j] with A's element index r*lda + j */
__global__ void
dropout_pack_kernel(const float *A, int64_t lda, int64_t ar, int64_t ac, float *out, float p,
					float scale, uint64_t seed)
{
	for (int64_t t = gnn_tid(); t < ar * ac; t += gnn_nthreads())
	{
		int64_t		r = t / ac,
					j = t % ac,
					i = r * lda + j;

		out[t] = gnn_math_dropout(A[i], seed, (uint64_t) i, p, scale);
	}
}

#define ELT_LAUNCH(be, n) \
	gnn_cuda_grid_stride_blocks(be, n), GNN_CUDA_BLOCK, 0, CTX(be)->stream

gnn_status
cuda_act_forward(gnn_backend *be, gnn_act act, float param, const float *x, float *y, int64_t n)
{
	if (n <= 0)
		return GNN_OK;
	CUDA_ENTER(be);
	act_forward_kernel<<<ELT_LAUNCH(be, n)>>>((int) act, param, x, y, n);
	CUDA_CHECK_LAUNCH(be);
	return GNN_OK;
}

gnn_status
cuda_act_backward(gnn_backend *be, gnn_act act, float param, const float *x, const float *y,
				  const float *dy, float *dx, int64_t n)
{
	(void) y;					/* the gradient is computed from x, as on the CPU */
	if (n <= 0)
		return GNN_OK;
	CUDA_ENTER(be);
	act_backward_kernel<<<ELT_LAUNCH(be, n)>>>((int) act, param, x, dy, dx, n);
	CUDA_CHECK_LAUNCH(be);
	return GNN_OK;
}

gnn_status
cuda_axpby(gnn_backend *be, int64_t n, float alpha, const float *x, float beta, float *y)
{
	if (n <= 0)
		return GNN_OK;
	CUDA_ENTER(be);
	axpby_kernel<<<ELT_LAUNCH(be, n)>>>(n, alpha, x, beta, y);
	CUDA_CHECK_LAUNCH(be);
	return GNN_OK;
}

gnn_status
gnn_cuda_scale(gnn_backend *be, float *y, int64_t n, float beta)
{
	if (n <= 0 || beta == 1.0f)
		return GNN_OK;
	CUDA_ENTER(be);
	scale_kernel<<<ELT_LAUNCH(be, n)>>>(y, n, beta);
	CUDA_CHECK_LAUNCH(be);
	return GNN_OK;
}

gnn_status
cuda_dropout_forward(gnn_backend *be, const float *x, float *y, int64_t n, float p, uint64_t seed)
{
	if (!(p >= 0.0f && p < 1.0f))
		return gnn_cuda_error(&be->err, GNN_ERR_INVALID, "dropout: p must be in [0, 1), got %g", p);
	if (n <= 0)
		return GNN_OK;
	CUDA_ENTER(be);
	/* the scale is computed on the host exactly as the CPU backend does */
	dropout_kernel<<<ELT_LAUNCH(be, n)>>>(x, y, n, p, 1.0f / (1.0f - p), seed);
	CUDA_CHECK_LAUNCH(be);
	return GNN_OK;
}

gnn_status
cuda_dropout_backward(gnn_backend *be, const float *dy, float *dx, int64_t n, float p, uint64_t seed)
{
	return cuda_dropout_forward(be, dy, dx, n, p, seed);
}

/*
 * gemm_dropout: the dropped matrix written into scratch, then cuBLAS.  HBM
 * makes the copy cheap here; what the op saves on the CPU (a pass over a
 * matrix larger than the caches) is not the bottleneck on a GPU.
 */
gnn_status
cuda_gemm_dropout(gnn_backend *be, bool trans_a, int64_t m, int64_t n, int64_t k, float alpha,
				  const float *A, int64_t lda, float p, uint64_t seed, const float *B, int64_t ldb,
				  float beta, float *C, int64_t ldc)
{
	int64_t		ar = trans_a ? k : m,
				ac = trans_a ? m : k;
	float	   *d = NULL;
	gnn_status	st;

	if (!(p >= 0.0f && p < 1.0f))
		return gnn_cuda_error(&be->err, GNN_ERR_INVALID, "gemm_dropout: p must be in [0, 1), got %g", p);
	if (m < 0 || n < 0 || k < 0 || lda < ac)
		return gnn_cuda_error(&be->err, GNN_ERR_DIMENSION, "gemm_dropout: bad sizes %lld x %lld x %lld (lda %lld)",
							  (long long) m, (long long) n, (long long) k, (long long) lda);
	if (m == 0 || n == 0 || k == 0)
		return cuda_gemm(be, trans_a, false, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
	st = gnn_cuda_scratch(be, sizeof(float) * (size_t) (ar * ac), (void **) &d);
	if (st != GNN_OK)
		return st;
	CUDA_ENTER(be);
	dropout_pack_kernel<<<ELT_LAUNCH(be, ar * ac)>>>(A, lda, ar, ac, d, p, 1.0f / (1.0f - p), seed);
	CUDA_CHECK_LAUNCH(be);
	return cuda_gemm(be, trans_a, false, m, n, k, alpha, d, ac, B, ldb, beta, C, ldc);
}
