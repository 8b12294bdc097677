/*
 * rows.cu: gather_rows and scatter_add_rows.
 *
 * scatter_add_rows must sum duplicate targets in ascending k, bit for bit
 * like the CPU, so no atomics: a stable radix sort of (idx[k], k) by idx
 * (CUB) groups each target's sources in ascending k, then one lane group
 * per run adds them in order (gnn_k_scatter_run).
 */
#include "cuda_common.cuh"

#include <cub/device/device_radix_sort.cuh>

__global__ void
gather_rows_kernel(const float *src, int64_t d, const int32_t *idx, int64_t n, float *dst, int v)
{
	int64_t		dv = d / v;

	for (int64_t t = gnn_tid(); t < n * dv; t += gnn_nthreads())
	{
		int64_t		r = t / dv,
					k = (t % dv) * v;
		const float *s = src + (int64_t) idx[r] * d + k;
		float	   *o = dst + r * d + k;

		if (v == 4)
		{
			float		a[4];

			GNN_K_LOAD4(s, a);
			GNN_K_STORE4(o, a);
		}
		else
			*o = *s;
	}
}

gnn_status
cuda_gather_rows(gnn_backend *be, const float *src, int64_t d, const int32_t *idx,
				 int64_t n, float *dst)
{
	int			v;

	if (n < 0 || d < 0)
		return gnn_cuda_error(&be->err, GNN_ERR_DIMENSION, "gather_rows: bad sizes");
	if (n == 0 || d == 0)
		return GNN_OK;
	CUDA_ENTER(be);
	v = (d % 4 == 0 && gnn_cuda_aligned16(src) && gnn_cuda_aligned16(dst)) ? 4 : 1;
	gather_rows_kernel<<<gnn_cuda_grid_stride_blocks(be, n * d / v), GNN_CUDA_BLOCK, 0,
		CTX(be)->stream>>>(src, d, idx, n, dst, v);
	CUDA_CHECK_LAUNCH(be);
	return GNN_OK;
}

__global__ void
iota_kernel(int32_t *vals, const int32_t *idx, uint32_t *keys, int64_t n)
{
	for (int64_t t = gnn_tid(); t < n; t += gnn_nthreads())
	{
		vals[t] = (int32_t) t;
		keys[t] = (uint32_t) idx[t];
	}
}

__global__ void
scatter_runs_kernel(const uint32_t *keys, const int32_t *vals, int64_t n, const float *src,
					int64_t d, float *dst, int g)
{
	int64_t		t = gnn_tid();
	int64_t		p = t / g;

	if (p >= n)
		return;
	gnn_k_scatter_run(keys, vals, n, src, d, dst, p, (int) (t % g), g);
}

gnn_status
cuda_scatter_add_rows(gnn_backend *be, const float *src, int64_t d, const int32_t *idx,
					  int64_t n, float *dst)
{
	gnn_cuda_ctx *ctx = CTX(be);
	size_t		sort_bytes = 0,
				arr;
	char	   *s;
	uint32_t   *keys_in,
			   *keys_out;
	int32_t    *vals_in,
			   *vals_out;
	gnn_status	st;
	int			g;

	if (n < 0 || d < 0 || n > INT32_MAX)
		return gnn_cuda_error(&be->err, GNN_ERR_DIMENSION, "scatter_add_rows: bad sizes");
	if (n == 0 || d == 0)
		return GNN_OK;
	CUDA_ENTER(be);
	CUDA_CHECK(be, cub::DeviceRadixSort::SortPairs(NULL, sort_bytes, (uint32_t *) NULL,
												   (uint32_t *) NULL, (int32_t *) NULL,
												   (int32_t *) NULL, (int) n, 0, 32,
												   ctx->stream));
	arr = gnn_cuda_align256(sizeof(uint32_t) * (size_t) n);
	st = gnn_cuda_scratch(be, 4 * arr + sort_bytes, (void **) &s);
	if (st != GNN_OK)
		return st;
	keys_in = (uint32_t *) s;
	keys_out = (uint32_t *) (s + arr);
	vals_in = (int32_t *) (s + 2 * arr);
	vals_out = (int32_t *) (s + 3 * arr);
	iota_kernel<<<gnn_cuda_grid_stride_blocks(be, n), GNN_CUDA_BLOCK, 0, ctx->stream>>>(
		vals_in, idx, keys_in, n);
	CUDA_CHECK_LAUNCH(be);
	CUDA_CHECK(be, cub::DeviceRadixSort::SortPairs(s + 4 * arr, sort_bytes, keys_in, keys_out,
												   vals_in, vals_out, (int) n, 0, 32,
												   ctx->stream));
	g = gnn_k_group_lanes(d);
	scatter_runs_kernel<<<gnn_cuda_group_blocks(n, g), GNN_CUDA_BLOCK, 0, ctx->stream>>>(
		keys_out, vals_out, n, src, d, dst, g);
	CUDA_CHECK_LAUNCH(be);
	return GNN_OK;
}
