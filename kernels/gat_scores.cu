/*
 * gat_scores.cu: GAT node attention scores s = <H_i,h, att_h> and their
 * backward (dH += ds att, datt = beta datt + sum_i ds H), plus the
 * head-mean of the output layer and its backward.  Per-element bodies are
 * sequential over f (or heads) exactly as on the CPU; datt goes through the
 * deterministic column sum of bias.cu with ds as per-(row, head) weights.
 */
#include "cuda_common.cuh"

__global__ void
gat_scores_kernel(const float *H, int64_t n, int64_t heads, int64_t f, const float *att, float *s)
{
	for (int64_t t = gnn_tid(); t < n * heads; t += gnn_nthreads())
		s[t] = gnn_k_gat_score(H, heads, f, att, t / heads, t % heads);
}

__global__ void
gat_scores_dh_kernel(int64_t n, int64_t heads, int64_t f, const float *att, const float *ds,
					 float *dH)
{
	int64_t		hf = heads * f;

	for (int64_t t = gnn_tid(); t < n * hf; t += gnn_nthreads())
	{
		int64_t		i = t / hf,
					q = t % hf;

		dH[t] += ds[i * heads + q / f] * att[q];
	}
}

__global__ void
head_mean_kernel(const float *X, int64_t n, int64_t heads, int64_t f, float *Y)
{
	for (int64_t t = gnn_tid(); t < n * f; t += gnn_nthreads())
		Y[t] = gnn_k_head_mean(X, heads, f, t / f, t % f);
}

__global__ void
head_mean_bwd_kernel(const float *dY, int64_t n, int64_t heads, int64_t f, float *dX)
{
	int64_t		hf = heads * f;
	float		inv = 1.0f / (float) heads;

	for (int64_t t = gnn_tid(); t < n * hf; t += gnn_nthreads())
	{
		int64_t		i = t / hf,
					k = (t % hf) % f;

		dX[t] = dY[i * f + k] * inv;
	}
}

#define GAT_LAUNCH(be, n) gnn_cuda_grid_stride_blocks(be, n), GNN_CUDA_BLOCK, 0, CTX(be)->stream

gnn_status
cuda_gat_node_scores(gnn_backend *be, const float *H, int64_t n, int64_t heads, int64_t f,
					 const float *att, float *s)
{
	if (n < 0 || heads < 0 || f < 0)
		return gnn_cuda_error(&be->err, GNN_ERR_DIMENSION, "gat_node_scores: bad sizes");
	if (n == 0 || heads == 0)
		return GNN_OK;
	CUDA_ENTER(be);
	gat_scores_kernel<<<GAT_LAUNCH(be, n * heads)>>>(H, n, heads, f, att, s);
	CUDA_CHECK_LAUNCH(be);
	return GNN_OK;
}

gnn_status
cuda_gat_node_scores_backward(gnn_backend *be, const float *H, int64_t n, int64_t heads,
							  int64_t f, const float *att, const float *ds, float *dH,
							  float beta, float *datt)
{
	if (n < 0 || heads < 0 || f < 0)
		return gnn_cuda_error(&be->err, GNN_ERR_DIMENSION, "gat_node_scores_backward: bad sizes");
	if (heads == 0 || f == 0)
		return GNN_OK;
	CUDA_ENTER(be);
	if (n > 0)
	{
		gat_scores_dh_kernel<<<GAT_LAUNCH(be, n * heads * f)>>>(n, heads, f, att, ds, dH);
		CUDA_CHECK_LAUNCH(be);
	}
	return gnn_cuda_colsum(be, H, n, heads * f, heads, f, ds, beta, datt);
}

gnn_status
cuda_head_mean(gnn_backend *be, const float *X, int64_t n, int64_t heads, int64_t f, float *Y)
{
	if (n < 0 || heads <= 0 || f < 0)
		return gnn_cuda_error(&be->err, GNN_ERR_DIMENSION, "head_mean: bad sizes");
	if (n == 0 || f == 0)
		return GNN_OK;
	CUDA_ENTER(be);
	head_mean_kernel<<<GAT_LAUNCH(be, n * f)>>>(X, n, heads, f, Y);
	CUDA_CHECK_LAUNCH(be);
	return GNN_OK;
}

gnn_status
cuda_head_mean_backward(gnn_backend *be, const float *dY, int64_t n, int64_t heads, int64_t f,
						float *dX)
{
	if (n < 0 || heads <= 0 || f < 0)
		return gnn_cuda_error(&be->err, GNN_ERR_DIMENSION, "head_mean_backward: bad sizes");
	if (n == 0 || f == 0)
		return GNN_OK;
	CUDA_ENTER(be);
	head_mean_bwd_kernel<<<GAT_LAUNCH(be, n * heads * f)>>>(dY, n, heads, f, dX);
	CUDA_CHECK_LAUNCH(be);
	return GNN_OK;
}
