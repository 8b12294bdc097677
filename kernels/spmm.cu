/*
 * spmm.cu: sparse x dense products over a gnn_csr.
 *
 * Gather-style and deterministic like the CPU backend: a group of g lanes
 * (a power of two <= 32, sized to the feature dimension) owns one output
 * row and sums its entries in ascending order, each lane a strided set of
 * columns - float4 per lane when d % 4 == 0 and the arrays are 16-byte
 * aligned, so a warp reads 512 contiguous bytes of X per entry.  spmm_t
 * walks the transpose instead of scattering with atomics.  The per-thread
 * bodies are gnn_k_spmm_row / gnn_k_spmm_t_row in kernel_math.h (tested on
 * the host).
 */
#include "cuda_common.cuh"

__global__ void
spmm_kernel(const int64_t *indptr, const int32_t *indices, const float *values, int agg,
			const float *row_scale, const float *col_scale, const float *X, int64_t d,
			float beta, float *Y, int64_t n_rows, int g, int v)
{
	int64_t		t = gnn_tid();
	int64_t		i = t / g;

	if (i >= n_rows)
		return;
	gnn_k_spmm_row(indptr, indices, values, agg, row_scale, col_scale, X, d, beta, Y,
				   i, (int) (t % g), g, v);
}

__global__ void
spmm_t_kernel(const int64_t *indptr, const float *values, const int64_t *t_indptr,
			  const int32_t *t_indices, const int64_t *t_perm, int agg,
			  const float *row_scale, const float *col_scale, const float *G, int64_t d,
			  float beta, float *Y, int64_t n_cols, int g, int v)
{
	int64_t		t = gnn_tid();
	int64_t		j = t / g;

	if (j >= n_cols)
		return;
	gnn_k_spmm_t_row(indptr, values, t_indptr, t_indices, t_perm, agg, row_scale, col_scale,
					 G, d, beta, Y, j, (int) (t % g), g, v);
}

/* float4 lanes when rows are whole float4s */
static int
spmm_vec(int64_t d, const float *a, const float *b)
{
	return (d % 4 == 0 && gnn_cuda_aligned16(a) && gnn_cuda_aligned16(b)) ? 4 : 1;
}

gnn_status
cuda_spmm(gnn_backend *be, const gnn_csr *A, gnn_agg agg, const float *row_scale,
		  const float *col_scale, const float *X, int64_t d, float beta, float *Y)
{
	int			v,
				g;

	if (d < 0 || A->n_rows < 0)
		return gnn_cuda_error(&be->err, GNN_ERR_DIMENSION, "spmm: bad sizes");
	if (A->n_rows == 0 || d == 0)
		return GNN_OK;
	CUDA_ENTER(be);
	v = spmm_vec(d, X, Y);
	g = gnn_k_group_lanes(d / v);
	spmm_kernel<<<gnn_cuda_group_blocks(A->n_rows, g), GNN_CUDA_BLOCK, 0, CTX(be)->stream>>>(
		A->indptr, A->indices, A->values, (int) agg, row_scale, col_scale, X, d, beta, Y,
		A->n_rows, g, v);
	CUDA_CHECK_LAUNCH(be);
	return GNN_OK;
}

gnn_status
cuda_spmm_t(gnn_backend *be, const gnn_csr *A, gnn_agg agg, const float *row_scale,
			const float *col_scale, const float *G, int64_t d, float beta, float *Y)
{
	int			v,
				g;

	if (d < 0 || A->n_cols < 0)
		return gnn_cuda_error(&be->err, GNN_ERR_DIMENSION, "spmm_t: bad sizes");
	if (!gnn_cuda_has_transpose(A))
		return gnn_cuda_error(&be->err, GNN_ERR_INVALID, "spmm_t: the CSR has no transpose");
	if (A->n_cols == 0 || d == 0)
		return GNN_OK;
	if (A->nnz == 0 && !A->t_indptr)
		return gnn_cuda_scale(be, Y, A->n_cols * d, beta);
	CUDA_ENTER(be);
	v = spmm_vec(d, G, Y);
	g = gnn_k_group_lanes(d / v);
	spmm_t_kernel<<<gnn_cuda_group_blocks(A->n_cols, g), GNN_CUDA_BLOCK, 0, CTX(be)->stream>>>(
		A->indptr, A->values, A->t_indptr, A->t_indices, A->t_perm, (int) agg, row_scale,
		col_scale, G, d, beta, Y, A->n_cols, g, v);
	CUDA_CHECK_LAUNCH(be);
	return GNN_OK;
}
