/*
 * gemm.cu: C = alpha op(A) op(B) + beta C, row-major, through cuBLAS.
 *
 * A row-major matrix is its transpose in column-major, so the row-major
 * product C = op(A) op(B) is the column-major product C^T = op(B)^T op(A)^T:
 * call cublasSgemm with the operands swapped (B first) and m, n swapped;
 * the transpose flags and leading dimensions carry over unchanged.
 */
#include "cuda_common.cuh"

#include <limits.h>

/* k == 0: C = beta*C (0 when beta == 0, C not read) */
__global__ void
gemm_scale_kernel(float *C, int64_t m, int64_t n, int64_t ldc, float beta)
{
	for (int64_t t = gnn_tid(); t < m * n; t += gnn_nthreads())
	{
		int64_t		i = t / n,
					j = t % n;
		float	   *c = C + i * ldc + j;

		*c = gnn_k_beta_init(beta, c);
	}
}

gnn_status
cuda_gemm(gnn_backend *be, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
		  float alpha, const float *A, int64_t lda, const float *B, int64_t ldb,
		  float beta, float *C, int64_t ldc)
{
	if (m < 0 || n < 0 || k < 0 || m > INT_MAX || n > INT_MAX || k > INT_MAX ||
		lda > INT_MAX || ldb > INT_MAX || ldc > INT_MAX)
		return gnn_cuda_error(&be->err, GNN_ERR_DIMENSION, "gemm: bad sizes %lld x %lld x %lld",
							  (long long) m, (long long) n, (long long) k);
	if (m == 0 || n == 0)
		return GNN_OK;
	CUDA_ENTER(be);
	if (k == 0)
	{
		gemm_scale_kernel<<<gnn_cuda_grid_stride_blocks(be, m * n), GNN_CUDA_BLOCK, 0,
			CTX(be)->stream>>>(C, m, n, ldc, beta);
		CUDA_CHECK_LAUNCH(be);
		return GNN_OK;
	}
	CUBLAS_CHECK(be, cublasSgemm(CTX(be)->cublas,
								 trans_b ? CUBLAS_OP_T : CUBLAS_OP_N,
								 trans_a ? CUBLAS_OP_T : CUBLAS_OP_N,
								 (int) n, (int) m, (int) k, &alpha,
								 B, (int) ldb, A, (int) lda, &beta, C, (int) ldc));
	return GNN_OK;
}
