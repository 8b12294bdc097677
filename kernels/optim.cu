/*
 * optim.cu: Adam and SGD (momentum, L2 weight decay) steps, one thread per
 * parameter through ops_math.h's gnn_math_adam / gnn_math_sgd - the CPU's
 * per-element code.  Adam's bias corrections are computed once on the host
 * with powf, as the CPU does, and passed in.
 */
#include "cuda_common.cuh"

__global__ void
adam_kernel(float *w, const float *g, float *m, float *v, int64_t n, float lr, float beta1,
			float beta2, float eps, float wd, float bc1, float bc2)
{
	for (int64_t i = gnn_tid(); i < n; i += gnn_nthreads())
		gnn_math_adam(&w[i], g[i], &m[i], &v[i], lr, beta1, beta2, eps, wd, bc1, bc2);
}

__global__ void
sgd_kernel(float *w, const float *g, float *buf, int64_t n, float lr, float momentum, float wd)
{
	for (int64_t i = gnn_tid(); i < n; i += gnn_nthreads())
		gnn_math_sgd(&w[i], g[i], buf ? &buf[i] : NULL, lr, momentum, wd);
}

gnn_status
cuda_adam_step(gnn_backend *be, float *w, const float *g, float *m, float *v, int64_t n,
			   float lr, float beta1, float beta2, float eps, float weight_decay, int64_t t)
{
	float		bc1 = 1.0f - powf(beta1, (float) t);
	float		bc2 = 1.0f - powf(beta2, (float) t);

	if (t < 1)
		return gnn_cuda_error(&be->err, GNN_ERR_INVALID, "adam_step: step must be >= 1");
	if (n <= 0)
		return GNN_OK;
	CUDA_ENTER(be);
	adam_kernel<<<gnn_cuda_grid_stride_blocks(be, n), GNN_CUDA_BLOCK, 0, CTX(be)->stream>>>(
		w, g, m, v, n, lr, beta1, beta2, eps, weight_decay, bc1, bc2);
	CUDA_CHECK_LAUNCH(be);
	return GNN_OK;
}

gnn_status
cuda_sgd_step(gnn_backend *be, float *w, const float *g, float *buf, int64_t n, float lr,
			  float momentum, float weight_decay)
{
	if (n <= 0)
		return GNN_OK;
	if (momentum > 0.0f && !buf)
		return gnn_cuda_error(&be->err, GNN_ERR_INVALID, "sgd_step: momentum needs a buffer");
	CUDA_ENTER(be);
	sgd_kernel<<<gnn_cuda_grid_stride_blocks(be, n), GNN_CUDA_BLOCK, 0, CTX(be)->stream>>>(
		w, g, buf, n, lr, momentum, weight_decay);
	CUDA_CHECK_LAUNCH(be);
	return GNN_OK;
}
