/*
 * gat_softmax.cu: GAT edge softmax over each destination row, and its
 * backward.  One lane group per row (g sized to the mean degree), heads in
 * a loop; max and sum combined by warp shuffles, every lane of the launch
 * reaching them.  The backward walks rows for <alpha, dalpha> and da_dst,
 * then the transpose for da_src - gather-style, no atomics.
 * Bodies: gnn_k_esm_* in kernel_math.h.
 */
#include "cuda_common.cuh"

__global__ void
edge_softmax_kernel(const int64_t *indptr, const int32_t *indices, int64_t heads,
					const float *a_src, const float *a_dst, float slope, float *alpha,
					int64_t n_rows, int g)
{
	int64_t		t = gnn_tid();
	int64_t		i = t / g;
	int			lane = (int) (t % g);
	bool		ok = i < n_rows;

	for (int64_t h = 0; h < heads; h++)
	{
		float		m = -FLT_MAX,
					s = 0.0f;

		if (ok)
			m = gnn_k_esm_max_partial(indptr, indices, heads, a_src, a_dst, slope, i, h, lane, g);
		m = gnn_warp_max(m, g);
		if (ok)
			s = gnn_k_esm_exp_partial(indptr, indices, heads, a_src, a_dst, slope, m, alpha,
									  i, h, lane, g);
		s = gnn_warp_sum(s, g);
		if (ok)
			gnn_k_esm_norm_partial(indptr, heads, s, alpha, i, h, lane, g);
	}
}

__global__ void
edge_softmax_bwd_rows_kernel(const int64_t *indptr, const int32_t *indices, int64_t heads,
							 const float *a_src, const float *a_dst, float slope,
							 const float *alpha, const float *dalpha, float *dot,
							 float *da_dst, int64_t n_rows, int g)
{
	int64_t		t = gnn_tid();
	int64_t		i = t / g;
	int			lane = (int) (t % g);
	bool		ok = i < n_rows;

	for (int64_t h = 0; h < heads; h++)
	{
		float		d = 0.0f,
					acc = 0.0f;

		if (ok)
			d = gnn_k_esm_dot_partial(indptr, heads, alpha, dalpha, i, h, lane, g);
		d = gnn_warp_sum(d, g);
		if (ok)
			acc = gnn_k_esm_ddst_partial(indptr, indices, heads, a_src, a_dst, slope, alpha,
										 dalpha, d, i, h, lane, g);
		acc = gnn_warp_sum(acc, g);
		if (ok && lane == 0)
		{
			dot[i * heads + h] = d;
			da_dst[i * heads + h] = acc;
		}
	}
}

__global__ void
edge_softmax_bwd_cols_kernel(const int64_t *t_indptr, const int32_t *t_indices,
							 const int64_t *t_perm, int64_t heads, const float *a_src,
							 const float *a_dst, float slope, const float *alpha,
							 const float *dalpha, const float *dot, float *da_src,
							 int64_t n_cols, int g)
{
	int64_t		t = gnn_tid();
	int64_t		j = t / g;
	int			lane = (int) (t % g);
	bool		ok = j < n_cols;

	for (int64_t h = 0; h < heads; h++)
	{
		float		acc = 0.0f;

		if (ok)
			acc = gnn_k_esm_dsrc_partial(t_indptr, t_indices, t_perm, heads, a_src, a_dst,
										 slope, alpha, dalpha, dot, j, h, lane, g);
		acc = gnn_warp_sum(acc, g);
		if (ok && lane == 0)
			da_src[j * heads + h] = acc;
	}
}

/* lanes per row from the mean number of entries per row */
static int
esm_lanes(int64_t nnz, int64_t nrows)
{
	return gnn_k_group_lanes(nrows > 0 ? (nnz + nrows - 1) / nrows : 1);
}

gnn_status
cuda_gat_edge_softmax(gnn_backend *be, const gnn_csr *A, int64_t heads, const float *a_src,
					  const float *a_dst, float slope, float *alpha)
{
	int			g;

	if (heads < 0 || A->n_rows < 0)
		return gnn_cuda_error(&be->err, GNN_ERR_DIMENSION, "gat_edge_softmax: bad sizes");
	if (A->n_rows == 0 || heads == 0 || A->nnz == 0)
		return GNN_OK;
	CUDA_ENTER(be);
	g = esm_lanes(A->nnz, A->n_rows);
	edge_softmax_kernel<<<gnn_cuda_group_blocks(A->n_rows, g), GNN_CUDA_BLOCK, 0,
		CTX(be)->stream>>>(A->indptr, A->indices, heads, a_src, a_dst, slope, alpha,
						   A->n_rows, g);
	CUDA_CHECK_LAUNCH(be);
	return GNN_OK;
}

gnn_status
cuda_gat_edge_softmax_backward(gnn_backend *be, const gnn_csr *A, int64_t heads,
							   const float *a_src, const float *a_dst, float slope,
							   const float *alpha, const float *dalpha,
							   float *da_src, float *da_dst)
{
	gnn_cuda_ctx *ctx = CTX(be);
	float	   *dot;
	gnn_status	st;
	int			g;

	if (heads < 0 || A->n_rows < 0 || A->n_cols < 0)
		return gnn_cuda_error(&be->err, GNN_ERR_DIMENSION, "gat_edge_softmax_backward: bad sizes");
	if (!gnn_cuda_has_transpose(A))
		return gnn_cuda_error(&be->err, GNN_ERR_INVALID,
							  "gat_edge_softmax_backward: the CSR has no transpose");
	if (heads == 0)
		return GNN_OK;
	CUDA_ENTER(be);
	if (A->nnz == 0)
	{
		/* no entries: both gradients are zero */
		if (A->n_rows > 0)
			CUDA_CHECK(be, cudaMemsetAsync(da_dst, 0, sizeof(float) * (size_t) (A->n_rows * heads),
										   ctx->stream));
		if (A->n_cols > 0)
			CUDA_CHECK(be, cudaMemsetAsync(da_src, 0, sizeof(float) * (size_t) (A->n_cols * heads),
										   ctx->stream));
		return GNN_OK;
	}
	st = gnn_cuda_scratch(be, sizeof(float) * (size_t) (A->n_rows * heads + 1), (void **) &dot);
	if (st != GNN_OK)
		return st;
	if (A->n_rows > 0)
	{
		g = esm_lanes(A->nnz, A->n_rows);
		edge_softmax_bwd_rows_kernel<<<gnn_cuda_group_blocks(A->n_rows, g), GNN_CUDA_BLOCK, 0,
			ctx->stream>>>(A->indptr, A->indices, heads, a_src, a_dst, slope, alpha, dalpha,
						   dot, da_dst, A->n_rows, g);
		CUDA_CHECK_LAUNCH(be);
	}
	if (A->n_cols > 0)
	{
		g = esm_lanes(A->nnz, A->n_cols);
		edge_softmax_bwd_cols_kernel<<<gnn_cuda_group_blocks(A->n_cols, g), GNN_CUDA_BLOCK, 0,
			ctx->stream>>>(A->t_indptr, A->t_indices, A->t_perm, heads, a_src, a_dst, slope,
						   alpha, dalpha, dot, da_src, A->n_cols, g);
		CUDA_CHECK_LAUNCH(be);
	}
	return GNN_OK;
}
