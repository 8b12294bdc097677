/*
 * relabel.cu: building a training minibatch on the GPU (issue #13): the
 * hash-table relabel of sampled nodes into block indices, CSR transposes,
 * GCN's self-looped normalised CSR, the feature gather through a device
 * cache, and the device's free memory.  Per-element logic is in
 * relabel_math.h (shared with test/core/test_relabel_math.c and with
 * block.c's host loop CSR); what is here is launch layout and cub calls.
 * Everything runs on the backend's stream; the only host waits are the
 * counts the caller needs to size what follows (new nodes of a hop, the
 * looped CSR's entries).
 */
#include "cuda_common.cuh"
#include "relabel_math.h"
#include "sample_math.h"
#include "sample/sample_gpu.h"

#include <cub/cub.cuh>

/* ------------------------------------------------------------------ relabel */

__global__ void
h_seed_kernel(int32_t *keys, int32_t *vals, int64_t cap, const int32_t *seeds, int64_t n)
{
	for (int64_t i = gnn_tid(); i < n; i += gnn_nthreads())
	{
		bool		claimed;
		int64_t		s = gnn_h_insert(keys, cap, seeds[i], &claimed);

		if (claimed)
			vals[s] = (int32_t) i;
	}
}

__global__ void
h_insert_kernel(int32_t *keys, int64_t cap, const int32_t *src, int64_t nnz, int32_t *fresh,
				unsigned long long *count)
{
	for (int64_t e = gnn_tid(); e < nnz; e += gnn_nthreads())
	{
		bool		claimed;

		(void) gnn_h_insert(keys, cap, src[e], &claimed);
		if (claimed)
			fresh[atomicAdd(count, 1ULL)] = src[e];
	}
}

__global__ void
h_assign_kernel(const int32_t *keys, int32_t *vals, int64_t cap, const int32_t *nodes, int64_t n_prev,
				int64_t n_new)
{
	for (int64_t k = gnn_tid(); k < n_new; k += gnn_nthreads())
		vals[gnn_h_find(keys, cap, nodes[n_prev + k])] = (int32_t) (n_prev + k);
}

__global__ void
h_map_kernel(const int32_t *keys, const int32_t *vals, int64_t cap, const int32_t *src, int64_t nnz,
			 int32_t *local)
{
	for (int64_t e = gnn_tid(); e < nnz; e += gnn_nthreads())
		local[e] = vals[gnn_h_find(keys, cap, src[e])];
}

extern "C" __attribute__((visibility("default"))) gnn_status
gnn_cuda_relabel_seeds(gnn_backend *be, int32_t *keys, int32_t *vals, int64_t cap, const int32_t *seeds,
					   int64_t n)
{
	cudaStream_t st = CTX(be)->stream;

	CUDA_ENTER(be);
	if (cap < 64 || (cap & (cap - 1)) != 0 || 2 * n > cap)
		return gnn_cuda_error(&be->err, GNN_ERR_INVALID, "gnn_cuda_relabel_seeds: capacity %lld for %lld seeds",
							  (long long) cap, (long long) n);
	CUDA_CHECK(be, cudaMemsetAsync(keys, 0xff, sizeof(int32_t) * cap, st));	/* GNN_H_EMPTY */
	if (n > 0)
	{
		h_seed_kernel<<<gnn_cuda_grid_stride_blocks(be, n), GNN_CUDA_BLOCK, 0, st>>>(keys, vals, cap, seeds, n);
		CUDA_CHECK_LAUNCH(be);
	}
	return GNN_OK;
}

extern "C" __attribute__((visibility("default"))) gnn_status
gnn_cuda_relabel_hop(gnn_backend *be, int32_t *keys, int32_t *vals, int64_t cap, const int32_t *src,
					 int64_t nnz, int32_t *nodes, int64_t n_prev, int32_t *fresh, int64_t *n_new,
					 int32_t *local)
{
	gnn_cuda_ctx *ctx = CTX(be);
	cudaStream_t st = ctx->stream;
	unsigned long long *count = (unsigned long long *) ctx->dev_small;
	size_t		tmp_bytes = 0;
	void	   *tmp = NULL;
	int64_t		k;

	*n_new = 0;
	CUDA_ENTER(be);
	if (nnz <= 0)
		return GNN_OK;
	CUDA_CHECK(be, cudaMemsetAsync(count, 0, sizeof(*count), st));
	h_insert_kernel<<<gnn_cuda_grid_stride_blocks(be, nnz), GNN_CUDA_BLOCK, 0, st>>>(keys, cap, src, nnz, fresh,
																					   count);
	CUDA_CHECK_LAUNCH(be);
	CUDA_CHECK(be, cudaMemcpyAsync(ctx->host_small, count, sizeof(*count), cudaMemcpyDeviceToHost, st));
	CUDA_CHECK(be, cudaStreamSynchronize(st));
	k = (int64_t) *(unsigned long long *) ctx->host_small;
	if (2 * (n_prev + k) > cap)
		return gnn_cuda_error(&be->err, GNN_ERR_LIMIT, "gnn_cuda_relabel_hop: %lld nodes overfill a table of %lld",
							  (long long) (n_prev + k), (long long) cap);
	if (k > 0)
	{
		/* the new nodes in graph order: the result does not depend on thread order */
		CUDA_CHECK(be, cub::DeviceRadixSort::SortKeys(NULL, tmp_bytes, fresh, nodes + n_prev, (int) k, 0, 32, st));
		if (gnn_cuda_scratch(be, tmp_bytes, &tmp) != GNN_OK)
			return be->err.status;
		CUDA_CHECK(be, cub::DeviceRadixSort::SortKeys(tmp, tmp_bytes, fresh, nodes + n_prev, (int) k, 0, 32, st));
		h_assign_kernel<<<gnn_cuda_grid_stride_blocks(be, k), GNN_CUDA_BLOCK, 0, st>>>(keys, vals, cap, nodes,
																						 n_prev, k);
		CUDA_CHECK_LAUNCH(be);
	}
	h_map_kernel<<<gnn_cuda_grid_stride_blocks(be, nnz), GNN_CUDA_BLOCK, 0, st>>>(keys, vals, cap, src, nnz,
																				  local);
	CUDA_CHECK_LAUNCH(be);
	*n_new = k;
	return GNN_OK;
}

/* ------------------------------------------------------------------ transpose */

__global__ void
iota64_kernel(int64_t *p, int64_t n)
{
	for (int64_t i = gnn_tid(); i < n; i += gnn_nthreads())
		p[i] = i;
}

__global__ void
t_rows_kernel(const int64_t *indptr, int64_t n_rows, const int64_t *t_perm, int64_t nnz, int32_t *t_indices)
{
	for (int64_t k = gnn_tid(); k < nnz; k += gnn_nthreads())
		t_indices[k] = (int32_t) gnn_b_row_of(indptr, n_rows, t_perm[k]);
}

__global__ void
t_ptr_kernel(const int32_t *sorted, int64_t nnz, int64_t n_cols, int64_t *t_indptr)
{
	for (int64_t j = gnn_tid(); j <= n_cols; j += gnn_nthreads())
		t_indptr[j] = j == n_cols ? nnz : gnn_b_lower_bound(sorted, nnz, j);
}

/* scratch for a transpose of nnz entries: cub's temp, sorted keys, positions in */
extern "C" __attribute__((visibility("default"))) gnn_status
gnn_cuda_csr_transpose(gnn_backend *be, int64_t n_rows, int64_t n_cols, int64_t nnz, const int64_t *indptr,
					   const int32_t *indices, int64_t *t_indptr, int32_t *t_indices, int64_t *t_perm)
{
	cudaStream_t st = CTX(be)->stream;
	size_t		tmp_bytes = 0;
	char	   *w = NULL;
	int32_t    *sorted;
	int64_t    *pos;

	CUDA_ENTER(be);
	if (nnz > 0x7fffffffLL)
		return gnn_cuda_error(&be->err, GNN_ERR_LIMIT, "gnn_cuda_csr_transpose: %lld entries", (long long) nnz);
	if (nnz == 0)
	{
		CUDA_CHECK(be, cudaMemsetAsync(t_indptr, 0, sizeof(int64_t) * (n_cols + 1), st));
		return GNN_OK;
	}
	CUDA_CHECK(be, cub::DeviceRadixSort::SortPairs(NULL, tmp_bytes, indices, (int32_t *) NULL, (const int64_t *) NULL,
												  t_perm, (int) nnz, 0, 32, st));
	if (gnn_cuda_scratch(be, gnn_cuda_align256(tmp_bytes) + gnn_cuda_align256(sizeof(int32_t) * nnz) + sizeof(int64_t) * nnz,
						 (void **) &w) != GNN_OK)
		return be->err.status;
	sorted = (int32_t *) (w + gnn_cuda_align256(tmp_bytes));
	pos = (int64_t *) (w + gnn_cuda_align256(tmp_bytes) + gnn_cuda_align256(sizeof(int32_t) * nnz));
	iota64_kernel<<<gnn_cuda_grid_stride_blocks(be, nnz), GNN_CUDA_BLOCK, 0, st>>>(pos, nnz);
	CUDA_CHECK_LAUNCH(be);
	/* radix sort is stable: a column's entries keep their forward order */
	CUDA_CHECK(be, cub::DeviceRadixSort::SortPairs(w, tmp_bytes, indices, sorted, pos, t_perm, (int) nnz, 0, 32, st));
	t_rows_kernel<<<gnn_cuda_grid_stride_blocks(be, nnz), GNN_CUDA_BLOCK, 0, st>>>(indptr, n_rows, t_perm, nnz,
																				   t_indices);
	CUDA_CHECK_LAUNCH(be);
	t_ptr_kernel<<<gnn_cuda_grid_stride_blocks(be, n_cols + 1), GNN_CUDA_BLOCK, 0, st>>>(sorted, nnz, n_cols,
																						 t_indptr);
	CUDA_CHECK_LAUNCH(be);
	return GNN_OK;
}

/* ------------------------------------------------------------------ GCN's looped CSR */

__global__ void
loop_count_kernel(const int64_t *indptr, const int32_t *indices, int64_t nd, int64_t *cnt)
{
	for (int64_t i = gnn_tid(); i < nd; i += gnn_nthreads())
		cnt[i] = gnn_b_loop_count(indptr, indices, i);
}

__global__ void
loop_fill_kernel(const int64_t *indptr, const int32_t *indices, const float *w, int64_t nd, const int64_t *lptr,
				 int32_t *lidx, float *lval)
{
	for (int64_t i = gnn_tid(); i < nd; i += gnn_nthreads())
		gnn_b_loop_row(indptr, indices, w, i, lidx + lptr[i], lval + lptr[i]);
}

extern "C" __attribute__((visibility("default"))) gnn_status
gnn_cuda_loop_csr(gnn_backend *be, int64_t nd, const int64_t *indptr, const int32_t *indices, const float *w,
				  int64_t *lptr, int32_t *lidx, float *lval, int64_t *lnnz)
{
	gnn_cuda_ctx *ctx = CTX(be);
	cudaStream_t st = ctx->stream;
	size_t		tmp_bytes = 0;
	char	   *tmp = NULL;
	int64_t    *cnt;

	*lnnz = 0;
	CUDA_ENTER(be);
	CUDA_CHECK(be, cudaMemsetAsync(lptr, 0, sizeof(int64_t), st));
	if (nd <= 0)
		return GNN_OK;
	CUDA_CHECK(be, cub::DeviceScan::InclusiveSum(NULL, tmp_bytes, (const int64_t *) NULL, lptr + 1, (int) nd, st));
	if (gnn_cuda_scratch(be, gnn_cuda_align256(tmp_bytes) + sizeof(int64_t) * nd, (void **) &tmp) != GNN_OK)
		return be->err.status;
	cnt = (int64_t *) (tmp + gnn_cuda_align256(tmp_bytes));
	loop_count_kernel<<<gnn_cuda_grid_stride_blocks(be, nd), GNN_CUDA_BLOCK, 0, st>>>(indptr, indices, nd, cnt);
	CUDA_CHECK_LAUNCH(be);
	CUDA_CHECK(be, cub::DeviceScan::InclusiveSum(tmp, tmp_bytes, cnt, lptr + 1, (int) nd, st));
	loop_fill_kernel<<<gnn_cuda_grid_stride_blocks(be, nd), GNN_CUDA_BLOCK, 0, st>>>(indptr, indices, w, nd, lptr,
																					 lidx, lval);
	CUDA_CHECK_LAUNCH(be);
	CUDA_CHECK(be, cudaMemcpyAsync(ctx->host_small, lptr + nd, sizeof(int64_t), cudaMemcpyDeviceToHost, st));
	CUDA_CHECK(be, cudaStreamSynchronize(st));
	*lnnz = *(int64_t *) ctx->host_small;
	return GNN_OK;
}

__global__ void
row_sum_kernel(const int64_t *ptr, const float *val, const int64_t *perm, int64_t n, double *out)
{
	for (int64_t i = gnn_tid(); i < n; i += gnn_nthreads())
	{
		double		s = 0;

		for (int64_t e = ptr[i]; e < ptr[i + 1]; e++)
			s += val[perm ? perm[e] : e];
		out[i] = s;
	}
}

__global__ void
norm_kernel(const int64_t *lptr, const int32_t *lidx, float *lval, int64_t nd, const double *dd, const double *ds)
{
	for (int64_t i = gnn_tid(); i < nd; i += gnn_nthreads())
		for (int64_t e = lptr[i]; e < lptr[i + 1]; e++)
			lval[e] = gnn_b_norm(lval[e], dd[i], ds[lidx[e]]);
}

/*
 * Normalise the looped CSR in place (degrees: its row sums and, along its
 * transpose t_indptr / t_perm, its column sums, both in forward order as
 * block.c sums them); deg: device scratch of nd + ns doubles.
 */
extern "C" __attribute__((visibility("default"))) gnn_status
gnn_cuda_gcn_norm(gnn_backend *be, int64_t nd, int64_t ns, const int64_t *lptr, const int32_t *lidx, float *lval,
				  const int64_t *t_indptr, const int64_t *t_perm, double *deg)
{
	cudaStream_t st = CTX(be)->stream;

	CUDA_ENTER(be);
	if (nd <= 0)
		return GNN_OK;
	row_sum_kernel<<<gnn_cuda_grid_stride_blocks(be, nd), GNN_CUDA_BLOCK, 0, st>>>(lptr, lval, NULL, nd, deg);
	CUDA_CHECK_LAUNCH(be);
	if (ns > 0)
	{
		row_sum_kernel<<<gnn_cuda_grid_stride_blocks(be, ns), GNN_CUDA_BLOCK, 0, st>>>(t_indptr, lval, t_perm, ns,
																					   deg + nd);
		CUDA_CHECK_LAUNCH(be);
	}
	norm_kernel<<<gnn_cuda_grid_stride_blocks(be, nd), GNN_CUDA_BLOCK, 0, st>>>(lptr, lidx, lval, nd, deg, deg + nd);
	CUDA_CHECK_LAUNCH(be);
	return GNN_OK;
}

/* ------------------------------------------------------------------ cached gather */

__global__ void
gather_cached_kernel(const float *cache, const int32_t *slot, const float *host, int64_t d, const int32_t *nodes,
					 int64_t n, bool norm, int v, float *out, unsigned long long *hits)
{
	int			lane = threadIdx.x & 31;
	int64_t		warp = gnn_tid() >> 5,
				nwarps = gnn_nthreads() >> 5;
	unsigned long long h = 0;

	for (int64_t i = warp; i < n; i += nwarps)
	{
		bool		hit;
		const float *row = gnn_c_row(cache, slot, host, d, nodes[i], &hit);
		float	   *o = out + i * d;
		double		s = gnn_s_gather_lane(row, o, d, lane, 32, v);

		h += hit;
		if (norm)
		{
			s = gnn_warp_sum_d(s, 32);
			__syncwarp();
			if (s != 0)
				gnn_s_normalise_lane(o, d, lane, 32, s);
		}
	}
	if (lane == 0 && h > 0 && hits)
		atomicAdd(hits, h);
}

extern "C" __attribute__((visibility("default"))) gnn_status
gnn_cuda_gather_cached(gnn_backend *be, const float *cache, const int32_t *slot, const float *host, int64_t d,
					   const int32_t *nodes, int64_t n, bool row_normalise, float *out, unsigned long long *hits)
{
	int			v;
	int64_t		warps = n;
	int64_t		cap = (int64_t) CTX(be)->num_sms * 64;

	CUDA_ENTER(be);
	if (n <= 0 || d <= 0)
		return GNN_OK;
	v = d % 4 == 0 && gnn_cuda_aligned16(cache) && gnn_cuda_aligned16(host) && gnn_cuda_aligned16(out) ? 4 : 1;
	if (warps > cap)
		warps = cap;
	gather_cached_kernel<<<gnn_cuda_blocks(warps * 32, GNN_CUDA_BLOCK), GNN_CUDA_BLOCK, 0, CTX(be)->stream>>>(
		cache, slot, host, d, nodes, n, row_normalise, v, out, hits);
	CUDA_CHECK_LAUNCH(be);
	return GNN_OK;
}

/* ------------------------------------------------------------------ memory */

extern "C" __attribute__((visibility("default"))) gnn_status
gnn_cuda_mem_info(gnn_backend *be, size_t *free_bytes, size_t *total_bytes)
{
	*free_bytes = *total_bytes = 0;
	CUDA_ENTER(be);
	CUDA_CHECK(be, cudaMemGetInfo(free_bytes, total_bytes));
	return GNN_OK;
}
