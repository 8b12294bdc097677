/*
 * gather.cu: GPU feature gather, a warp per output row, float4 copies when
 * the row length is a multiple of 4 and both arrays are 16-byte aligned.
 * feat may be device memory or registered host memory (the pointer
 * gnn_cuda_host_register returns).  Lane bodies: sample_math.h.
 */
#include "cuda_common.cuh"
#include "sample_math.h"
#include "sample/sample_gpu.h"

__global__ void
gather_kernel(const float *feat, int64_t d, const int32_t *nodes, int64_t n, bool norm, int v,
			  float *out)
{
	int			lane = threadIdx.x & 31;
	int64_t		warp = gnn_tid() >> 5,
				nwarps = gnn_nthreads() >> 5;

	for (int64_t i = warp; i < n; i += nwarps)
	{
		float	   *o = out + i * d;
		double		s = gnn_s_gather_lane(feat + (int64_t) nodes[i] * d, o, d, lane, 32, v);

		if (norm)
		{
			s = gnn_warp_sum_d(s, 32);
			__syncwarp();
			if (s != 0)
				gnn_s_normalise_lane(o, d, lane, 32, s);
		}
	}
}

extern "C" __attribute__((visibility("default"))) gnn_status
gnn_cuda_gather(gnn_backend *be, const float *feat, int64_t d, const int32_t *nodes, int64_t n,
				bool row_normalise, float *out)
{
	int			v;
	int64_t		warps = n;
	int64_t		cap = (int64_t) CTX(be)->num_sms * 64;

	CUDA_ENTER(be);
	if (n <= 0 || d <= 0)
		return GNN_OK;
	v = d % 4 == 0 && gnn_cuda_aligned16(feat) && gnn_cuda_aligned16(out) ? 4 : 1;
	if (warps > cap)
		warps = cap;
	gather_kernel<<<gnn_cuda_blocks(warps * 32, GNN_CUDA_BLOCK), GNN_CUDA_BLOCK, 0, CTX(be)->stream>>>(
		feat, d, nodes, n, row_normalise, v, out);
	CUDA_CHECK_LAUNCH(be);
	return GNN_OK;
}
