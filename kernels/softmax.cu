/*
 * softmax.cu: row softmax.  One lane group per row (g sized to c): max,
 * exp and sum, scale - the three loops of the CPU, with the max and the sum
 * combined across lanes by warp shuffles.  Every lane of the launch reaches
 * the shuffles (rows past the end just carry neutral values).
 */
#include "cuda_common.cuh"

__global__ void
softmax_rows_kernel(const float *X, float *Y, int64_t n, int64_t c, int g)
{
	int64_t		t = gnn_tid();
	int64_t		i = t / g;
	int			lane = (int) (t % g);
	bool		ok = i < n;
	const float *x = X + (ok ? i : 0) * c;
	float	   *y = Y + (ok ? i : 0) * c;
	float		m,
				s;

	m = ok ? gnn_k_max_partial(x, c, lane, g) : -FLT_MAX;
	m = gnn_warp_max(m, g);
	s = ok ? gnn_k_exp_partial(x, y, c, m, lane, g) : 0.0f;
	s = gnn_warp_sum(s, g);
	if (ok)
		gnn_k_scale_partial(y, c, s, lane, g);
}

gnn_status
cuda_softmax_rows(gnn_backend *be, const float *X, float *Y, int64_t n, int64_t c)
{
	int			g;

	if (n <= 0 || c <= 0)
		return GNN_OK;
	CUDA_ENTER(be);
	g = gnn_k_group_lanes(c);
	softmax_rows_kernel<<<gnn_cuda_group_blocks(n, g), GNN_CUDA_BLOCK, 0, CTX(be)->stream>>>(
		X, Y, n, c, g);
	CUDA_CHECK_LAUNCH(be);
	return GNN_OK;
}
