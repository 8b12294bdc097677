/*
 * walk.cu: GPU random walks (uniform and node2vec), a thread per walk.
 * The walk itself is sample_math.h's gnn_s_walk (shared with the CPU test).
 */
#include "cuda_common.cuh"
#include "sample_math.h"
#include "sample/sample_gpu.h"

#include <math.h>

__global__ void
walk_kernel(const int64_t *indptr, const int32_t *indices, const int32_t *starts, int64_t n,
			int64_t len, bool biased, double wp, double wq, double wout, uint64_t seed,
			int32_t *out)
{
	for (int64_t w = gnn_tid(); w < n; w += gnn_nthreads())
		gnn_s_walk(indptr, indices, starts[w], len, biased, wp, wq, wout, seed, w,
				   out + w * (len + 1));
}

extern "C" __attribute__((visibility("default"))) gnn_status
gnn_cuda_random_walk(gnn_backend *be, const int64_t *indptr, const int32_t *indices,
					 const int32_t *starts, int64_t n, int64_t len, double p, double q,
					 uint64_t seed, int32_t *out)
{
	double		wp,
				wq;

	if (len < 1)
		return gnn_cuda_error(&be->err, GNN_ERR_INVALID, "walk length must be >= 1, got %lld",
							  (long long) len);
	if (!(p > 0) || !(q > 0) || !isfinite(p) || !isfinite(q))
		return gnn_cuda_error(&be->err, GNN_ERR_INVALID,
							  "node2vec p and q must be finite and > 0 (got p = %g, q = %g)", p, q);
	CUDA_ENTER(be);
	if (n <= 0)
		return GNN_OK;
	wp = 1.0 / p;
	wq = 1.0 / q;
	walk_kernel<<<gnn_cuda_blocks(n, 128), 128, 0, CTX(be)->stream>>>(
		indptr, indices, starts, n, len, p != 1.0 || q != 1.0, wp, wq, fmax(1.0, wq),
		seed, out);
	CUDA_CHECK_LAUNCH(be);
	return GNN_OK;
}
