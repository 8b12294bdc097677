/*
 * gat_aggregate.cu: attention-weighted aggregation out_i = sum_e alpha_e H_j
 * per head, and its backward: dalpha per (entry, head) as a dot product of
 * length f, dH by walking the transpose.  Gather-style and deterministic;
 * float4 lanes in the forward when f % 4 == 0.
 * Bodies: gnn_k_gat_agg_row, gnn_k_gat_dalpha_row, gnn_k_gat_agg_bwd_row.
 */
#include "cuda_common.cuh"

__global__ void
gat_agg_kernel(const int64_t *indptr, const int32_t *indices, int64_t heads, int64_t f,
			   const float *alpha, const float *H, float *out, int64_t n_rows, int g, int v)
{
	int64_t		t = gnn_tid();
	int64_t		i = t / g;

	if (i >= n_rows)
		return;
	gnn_k_gat_agg_row(indptr, indices, heads, f, alpha, H, out, i, (int) (t % g), g, v);
}

__global__ void
gat_dalpha_kernel(const int64_t *indptr, const int32_t *indices, int64_t heads, int64_t f,
				  const float *H, const float *dout, float *dalpha, int64_t n_rows, int g)
{
	int64_t		t = gnn_tid();
	int64_t		i = t / g;

	if (i >= n_rows)
		return;
	gnn_k_gat_dalpha_row(indptr, indices, heads, f, H, dout, dalpha, i, (int) (t % g), g);
}

__global__ void
gat_agg_bwd_kernel(const int64_t *t_indptr, const int32_t *t_indices, const int64_t *t_perm,
				   int64_t heads, int64_t f, const float *alpha, const float *dout, float beta,
				   float *dH, int64_t n_cols, int g)
{
	int64_t		t = gnn_tid();
	int64_t		j = t / g;

	if (j >= n_cols)
		return;
	gnn_k_gat_agg_bwd_row(t_indptr, t_indices, t_perm, heads, f, alpha, dout, beta, dH, j,
						  (int) (t % g), g);
}

gnn_status
cuda_gat_aggregate(gnn_backend *be, const gnn_csr *A, int64_t heads, int64_t f,
				   const float *alpha, const float *H, float *out)
{
	int64_t		hf = heads * f;
	int			v,
				g;

	if (heads < 0 || f < 0 || A->n_rows < 0)
		return gnn_cuda_error(&be->err, GNN_ERR_DIMENSION, "gat_aggregate: bad sizes");
	if (A->n_rows == 0 || hf == 0)
		return GNN_OK;
	CUDA_ENTER(be);
	v = (f % 4 == 0 && gnn_cuda_aligned16(H) && gnn_cuda_aligned16(out)) ? 4 : 1;
	g = gnn_k_group_lanes(hf / v);
	gat_agg_kernel<<<gnn_cuda_group_blocks(A->n_rows, g), GNN_CUDA_BLOCK, 0, CTX(be)->stream>>>(
		A->indptr, A->indices, heads, f, alpha, H, out, A->n_rows, g, v);
	CUDA_CHECK_LAUNCH(be);
	return GNN_OK;
}

gnn_status
cuda_gat_aggregate_backward(gnn_backend *be, const gnn_csr *A, int64_t heads, int64_t f,
							const float *alpha, const float *H, const float *dout,
							float beta, float *dH, float *dalpha)
{
	int64_t		hf = heads * f;
	int			g;

	if (heads < 0 || f < 0 || A->n_rows < 0 || A->n_cols < 0)
		return gnn_cuda_error(&be->err, GNN_ERR_DIMENSION, "gat_aggregate_backward: bad sizes");
	if (!gnn_cuda_has_transpose(A))
		return gnn_cuda_error(&be->err, GNN_ERR_INVALID,
							  "gat_aggregate_backward: the CSR has no transpose");
	if (hf == 0)
		return GNN_OK;
	CUDA_ENTER(be);
	if (A->n_rows > 0 && A->nnz > 0)
	{
		g = gnn_k_group_lanes((A->nnz + A->n_rows - 1) / A->n_rows * heads);
		gat_dalpha_kernel<<<gnn_cuda_group_blocks(A->n_rows, g), GNN_CUDA_BLOCK, 0,
			CTX(be)->stream>>>(A->indptr, A->indices, heads, f, H, dout, dalpha, A->n_rows, g);
		CUDA_CHECK_LAUNCH(be);
	}
	if (A->n_cols == 0)
		return GNN_OK;
	if (A->nnz == 0 && !A->t_indptr)
		return gnn_cuda_scale(be, dH, A->n_cols * hf, beta);
	g = gnn_k_group_lanes(hf);
	gat_agg_bwd_kernel<<<gnn_cuda_group_blocks(A->n_cols, g), GNN_CUDA_BLOCK, 0,
		CTX(be)->stream>>>(A->t_indptr, A->t_indices, A->t_perm, heads, f, alpha, dout, beta,
						   dH, A->n_cols, g);
	CUDA_CHECK_LAUNCH(be);
	return GNN_OK;
}
