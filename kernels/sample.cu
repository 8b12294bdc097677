/*
 * sample.cu: GPU node-wise neighbour sampling (one hop), a warp per
 * destination, and the per-row weight prefix sums for weighted draws.
 * Per-element logic: sample_math.h (shared with the CPU test).
 *
 *   1. one block computes ptr (exclusive scan of the per-destination draw
 *      counts; a single block is plenty for a hop's destination list)
 *   2. *nnz is read back (the caller needs it to size the output)
 *   3. a warp per destination writes its draws: lanes copy / draw
 *      independently, except Floyd (without replacement), whose membership
 *      test is a warp ballot over the picks so far.
 */
#include "cuda_common.cuh"
#include "sample_math.h"
#include "sample/sample_gpu.h"

#define SCAN_THREADS 1024

/* weighted (cumw): only edges that carry weight are drawn (sample_math.h) */
__device__ __forceinline__ int64_t
hop_count(const int64_t *rindptr, const float *cumw, const int32_t *dst, int64_t i, int64_t fanout,
		  bool replace)
{
	int32_t		v = dst[i];
	int64_t		b = rindptr[v],
				deg = rindptr[v + 1] - b;

	return cumw ? gnn_s_weighted_count(cumw + b, deg, fanout) : gnn_s_count(deg, fanout, replace);
}

/* ptr[0..nd] = exclusive scan of counts; one block of SCAN_THREADS */
__global__ void
__launch_bounds__(SCAN_THREADS)
sample_scan_kernel(const int64_t *rindptr, const float *cumw, const int32_t *dst, int64_t nd,
				   int64_t fanout, bool replace, int64_t *ptr)
{
	__shared__ int64_t part[SCAN_THREADS];
	int			t = threadIdx.x;
	int64_t		per = (nd + SCAN_THREADS - 1) / SCAN_THREADS,
				lo = t * per,
				hi = lo + per < nd ? lo + per : nd,
				s = 0;

	for (int64_t i = lo; i < hi; i++)
		s += hop_count(rindptr, cumw, dst, i, fanout, replace);
	part[t] = s;
	__syncthreads();
	for (int o = 1; o < SCAN_THREADS; o <<= 1)
	{
		int64_t		x = t >= o ? part[t - o] : 0;

		__syncthreads();
		part[t] += x;
		__syncthreads();
	}
	s = part[t] - s;			/* exclusive */
	if (t == 0)
		ptr[0] = 0;
	for (int64_t i = lo; i < hi; i++)
	{
		s += hop_count(rindptr, cumw, dst, i, fanout, replace);
		ptr[i + 1] = s;
	}
}

__global__ void
sample_hop_kernel(const int64_t *rindptr, const int32_t *rindices, const float *cumw,
				  const int32_t *dst, int64_t nd, int32_t hop, int64_t fanout, bool replace,
				  uint64_t seed, const int64_t *ptr, int32_t *src, int32_t *dst_idx)
{
	int			lane = threadIdx.x & 31;
	int64_t		warp = gnn_tid() >> 5,
				nwarps = gnn_nthreads() >> 5;

	for (int64_t i = warp; i < nd; i += nwarps)
	{
		int32_t		v = dst[i];
		int64_t		b = rindptr[v],
					deg = rindptr[v + 1] - b,
					p = ptr[i],
					c = ptr[i + 1] - p;
		int32_t    *o = src + p;

		if (dst_idx)
			for (int64_t j = lane; j < c; j += 32)
				dst_idx[p + j] = (int32_t) i;
		if (cumw && fanout < 0)
		{
			/* the edges that carry weight, in order: a ballot compacts each 32 */
			int64_t		k = 0;

			for (int64_t e0 = 0; e0 < deg; e0 += 32)
			{
				int64_t		e = e0 + lane;
				bool		take = e < deg && gnn_s_weight_carried(cumw + b, e);
				unsigned	m = __ballot_sync(0xffffffffu, take);

				if (take)
					o[k + __popc(m & ((1u << lane) - 1))] = rindices[b + e];
				k += __popc(m);
			}
		}
		else if (gnn_s_take_all(deg, fanout, replace))
			for (int64_t j = lane; j < c; j += 32)
				o[j] = rindices[b + j];
		else if (replace && cumw)
			for (int64_t j = lane; j < c; j += 32)
				o[j] = rindices[b + gnn_s_weighted_draw(seed, hop, i, j, cumw + b, deg)];
		else if (replace)
			for (int64_t j = lane; j < c; j += 32)
				o[j] = rindices[b + gnn_s_uniform_draw(seed, hop, i, j, deg)];
		else
		{
			/* Floyd: picks so far are o[0..s); rows hold unique nodes, so compare nodes */
			for (int64_t s = 0; s < c; s++)
			{
				int64_t		t = gnn_s_floyd_candidate(seed, hop, i, s, c, deg);
				int32_t		u = rindices[b + t];
				bool		hit = false;

				for (int64_t q = lane; q < s; q += 32)
					hit |= o[q] == u;
				hit = __any_sync(0xffffffffu, hit);
				if (lane == 0)
					o[s] = rindices[b + gnn_s_floyd_pick(t, hit, s, c, deg)];
				__syncwarp();
			}
		}
	}
}

__global__ void
row_prefix_kernel(const int64_t *indptr, const float *w, int64_t n, float *cum)
{
	for (int64_t r = gnn_tid(); r < n; r += gnn_nthreads())
		gnn_s_row_prefix(w + indptr[r], indptr[r + 1] - indptr[r], cum + indptr[r]);
}

extern "C" __attribute__((visibility("default"))) gnn_status
gnn_cuda_sample_hop(gnn_backend *be, const int64_t *rindptr, const int32_t *rindices,
					const float *cumw, const int32_t *dst, int64_t nd, int32_t hop,
					int64_t fanout, bool replace, uint64_t seed, int64_t *ptr, int32_t *src,
					int32_t *dst_idx, int64_t cap, int64_t *nnz)
{
	gnn_cuda_ctx *ctx = CTX(be);
	cudaStream_t st = ctx->stream;

	*nnz = 0;
	if (nd < 0 || !ptr || (nd > 0 && (!rindptr || !dst)))
		return gnn_cuda_error(&be->err, GNN_ERR_INVALID, "gnn_cuda_sample_hop: bad arguments");
	if (cumw && !replace)
		return gnn_cuda_error(&be->err, GNN_ERR_UNSUPPORTED,
							  "gnn_cuda_sample_hop: weighted sampling without replacement is not done on the GPU");
	CUDA_ENTER(be);
	if (nd == 0)
	{
		CUDA_CHECK(be, cudaMemsetAsync(ptr, 0, sizeof(int64_t), st));
		return GNN_OK;
	}
	sample_scan_kernel<<<1, SCAN_THREADS, 0, st>>>(rindptr, cumw, dst, nd, fanout, replace, ptr);
	CUDA_CHECK_LAUNCH(be);
	CUDA_CHECK(be, cudaMemcpyAsync(ctx->host_small, ptr + nd, sizeof(int64_t), cudaMemcpyDeviceToHost, st));
	CUDA_CHECK(be, cudaStreamSynchronize(st));
	*nnz = *(int64_t *) ctx->host_small;
	if (*nnz > cap)
		return gnn_cuda_error(&be->err, GNN_ERR_LIMIT,
							  "gnn_cuda_sample_hop: %lld draws, output holds %lld",
							  (long long) *nnz, (long long) cap);
	if (*nnz > 0 && !src)
		return gnn_cuda_error(&be->err, GNN_ERR_INVALID, "gnn_cuda_sample_hop: no output array");
	if (*nnz > 0)
	{
		int64_t		warps = nd;
		int64_t		cap_warps = (int64_t) ctx->num_sms * 64;

		if (warps > cap_warps)
			warps = cap_warps;
		sample_hop_kernel<<<gnn_cuda_blocks(warps * 32, GNN_CUDA_BLOCK), GNN_CUDA_BLOCK, 0, st>>>(
			rindptr, rindices, cumw, dst, nd, hop, fanout, replace, seed, ptr, src, dst_idx);
		CUDA_CHECK_LAUNCH(be);
	}
	return GNN_OK;
}

extern "C" __attribute__((visibility("default"))) gnn_status
gnn_cuda_row_prefix(gnn_backend *be, const int64_t *indptr, const float *w, int64_t n, float *cum)
{
	CUDA_ENTER(be);
	if (n <= 0)
		return GNN_OK;
	row_prefix_kernel<<<gnn_cuda_grid_stride_blocks(be, n), GNN_CUDA_BLOCK, 0, CTX(be)->stream>>>(
		indptr, w, n, cum);
	CUDA_CHECK_LAUNCH(be);
	return GNN_OK;
}

extern "C" __attribute__((visibility("default"))) gnn_status
gnn_cuda_host_register(gnn_backend *be, void *p, size_t bytes, void **dev)
{
	cudaError_t e;

	*dev = NULL;
	CUDA_ENTER(be);
	e = cudaHostRegister(p, bytes, cudaHostRegisterMapped | cudaHostRegisterReadOnly);
	if (e != cudaSuccess)
	{
		/* read-only registration is not supported everywhere: retry without */
		(void) cudaGetLastError();
		CUDA_CHECK(be, cudaHostRegister(p, bytes, cudaHostRegisterMapped));
	}
	CUDA_CHECK(be, cudaHostGetDevicePointer(dev, p, 0));
	return GNN_OK;
}

extern "C" __attribute__((visibility("default"))) gnn_status
gnn_cuda_host_unregister(gnn_backend *be, void *p)
{
	CUDA_ENTER(be);
	CUDA_CHECK(be, cudaHostUnregister(p));
	return GNN_OK;
}
