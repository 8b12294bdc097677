/*
 * max_agg.cu: max-pool aggregation (GraphSAGE pool) and its backward.
 * Forward: one lane group per row, each lane a strided set of columns,
 * strict > over entries in ascending order (first max wins, as the CPU).
 * Backward walks the transpose: dX[j,k] gathers dY[i,k] from the rows i
 * whose argmax for column k is j - no atomics.
 * Bodies: gnn_k_max_agg_row, gnn_k_max_agg_bwd_row.
 */
#include "cuda_common.cuh"

__global__ void
max_agg_kernel(const int64_t *indptr, const int32_t *indices, const float *X, int64_t d,
			   float *Y, int32_t *argmax, int64_t n_rows, int g)
{
	int64_t		t = gnn_tid();
	int64_t		i = t / g;

	if (i >= n_rows)
		return;
	gnn_k_max_agg_row(indptr, indices, X, d, Y, argmax, i, (int) (t % g), g);
}

__global__ void
max_agg_bwd_kernel(const int64_t *t_indptr, const int32_t *t_indices, const float *dY,
				   const int32_t *argmax, int64_t d, float beta, float *dX, int64_t n_cols, int g)
{
	int64_t		t = gnn_tid();
	int64_t		j = t / g;

	if (j >= n_cols)
		return;
	gnn_k_max_agg_bwd_row(t_indptr, t_indices, dY, argmax, d, beta, dX, j, (int) (t % g), g);
}

gnn_status
cuda_max_agg(gnn_backend *be, const gnn_csr *A, const float *X, int64_t d, float *Y,
			 int32_t *argmax)
{
	int			g;

	if (d < 0 || A->n_rows < 0)
		return gnn_cuda_error(&be->err, GNN_ERR_DIMENSION, "max_agg: bad sizes");
	if (A->n_rows == 0 || d == 0)
		return GNN_OK;
	CUDA_ENTER(be);
	g = gnn_k_group_lanes(d);
	max_agg_kernel<<<gnn_cuda_group_blocks(A->n_rows, g), GNN_CUDA_BLOCK, 0, CTX(be)->stream>>>(
		A->indptr, A->indices, X, d, Y, argmax, A->n_rows, g);
	CUDA_CHECK_LAUNCH(be);
	return GNN_OK;
}

gnn_status
cuda_max_agg_backward(gnn_backend *be, const gnn_csr *A, const float *dY, const int32_t *argmax,
					  int64_t d, float beta, float *dX)
{
	int			g;

	if (d < 0 || A->n_cols < 0)
		return gnn_cuda_error(&be->err, GNN_ERR_DIMENSION, "max_agg_backward: bad sizes");
	if (A->nnz > 0 && (!A->t_indptr || !A->t_indices))
		return gnn_cuda_error(&be->err, GNN_ERR_INVALID, "max_agg_backward: the CSR has no transpose");
	if (A->n_cols == 0 || d == 0)
		return GNN_OK;
	if (A->nnz == 0 && !A->t_indptr)
		return gnn_cuda_scale(be, dX, A->n_cols * d, beta);
	CUDA_ENTER(be);
	g = gnn_k_group_lanes(d);
	max_agg_bwd_kernel<<<gnn_cuda_group_blocks(A->n_cols, g), GNN_CUDA_BLOCK, 0,
		CTX(be)->stream>>>(A->t_indptr, A->t_indices, dY, argmax, d, beta, dX, A->n_cols, g);
	CUDA_CHECK_LAUNCH(be);
	return GNN_OK;
}
