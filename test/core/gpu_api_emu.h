/*
 * gpu_api_emu.h: the GPU entry points of sample_gpu.h emulated over host
 * memory (the CPU backend's "device" memory), from the kernels' own
 * per-element bodies (gpu_batch_emu.h, sample_gpu_emu.h).  Plugged into
 * gnn_gpu_batch_config.api, they let the GPU minibatch path
 * (gpu_batch.c and its use by gnn_train_minibatch) run and be checked on a
 * machine without a GPU: buffer growth, the draw-count retry, block order,
 * cache planning and filling, statistics.  Inserts are emulated in a
 * shuffled thread order (emu_api_order).
 */
#ifndef GNN_GPU_API_EMU_H
#define GNN_GPU_API_EMU_H

#include "gpu_batch_emu.h"
#include "sample/sample_gpu.h"

#include <stdio.h>

static uint64_t emu_api_order = 4242;
static size_t emu_api_free = (size_t) 1 << 30;	/* what mem_info reports free */
static int64_t emu_api_limit_retries;	/* sample_hop calls that asked for more room */

static gnn_status
emu_api_fail(gnn_backend *be, gnn_status st, const char *msg)
{
	be->err.status = st;
	snprintf(be->err.msg, sizeof(be->err.msg), "%s", msg);
	return st;
}

static gnn_status
emu_api_sample_hop(gnn_backend *be, const int64_t *rindptr, const int32_t *rindices, const float *cumw,
				   const int32_t *dst, int64_t nd, int32_t hop, int64_t fanout, bool replace, uint64_t seed,
				   int64_t *ptr, int32_t *src, int32_t *dst_idx, int64_t cap, int64_t *nnz)
{
	*nnz = emu_hop_ptr(rindptr, cumw, dst, nd, fanout, replace, ptr);
	if (*nnz > cap)
	{
		emu_api_limit_retries++;
		return emu_api_fail(be, GNN_ERR_LIMIT, "emulated sample_hop: output too small");
	}
	emu_sample_hop(rindptr, rindices, cumw, dst, nd, hop, fanout, replace, seed, ptr, src, dst_idx);
	return GNN_OK;
}

static gnn_status
emu_api_row_prefix(gnn_backend *be, const int64_t *indptr, const float *w, int64_t n, float *cum)
{
	(void) be;
	for (int64_t r = 0; r < n; r++)
		gnn_s_row_prefix(w + indptr[r], indptr[r + 1] - indptr[r], cum + indptr[r]);
	return GNN_OK;
}

static gnn_status
emu_api_gather(gnn_backend *be, const float *feat, int64_t d, const int32_t *nodes, int64_t n, bool norm,
			   float *out)
{
	(void) be;
	emu_gather(feat, d, nodes, n, norm, 1, out);
	return GNN_OK;
}

static gnn_status
emu_api_register(gnn_backend *be, void *p, size_t bytes, void **dev)
{
	(void) be;
	(void) bytes;
	*dev = p;
	return GNN_OK;
}

static gnn_status
emu_api_unregister(gnn_backend *be, void *p)
{
	(void) be;
	(void) p;
	return GNN_OK;
}

static gnn_status
emu_api_relabel_seeds(gnn_backend *be, int32_t *keys, int32_t *vals, int64_t cap, const int32_t *seeds, int64_t n)
{
	if (cap < 64 || (cap & (cap - 1)) != 0 || 2 * n > cap)
		return emu_api_fail(be, GNN_ERR_INVALID, "emulated relabel_seeds: bad capacity");
	emu_relabel_seeds(keys, vals, cap, seeds, n, emu_api_order);
	return GNN_OK;
}

static gnn_status
emu_api_relabel_hop(gnn_backend *be, int32_t *keys, int32_t *vals, int64_t cap, const int32_t *src, int64_t nnz,
					int32_t *nodes, int64_t n_prev, int32_t *fresh, int64_t *n_new, int32_t *local)
{
	(void) fresh;
	*n_new = emu_relabel_hop(keys, vals, cap, src, nnz, nodes, n_prev, local, emu_api_order + (uint64_t) n_prev);
	if (2 * (n_prev + *n_new) > cap)
		return emu_api_fail(be, GNN_ERR_LIMIT, "emulated relabel_hop: table overfull");
	return GNN_OK;
}

static gnn_status
emu_api_transpose(gnn_backend *be, int64_t nr, int64_t nc, int64_t nnz, const int64_t *ptr, const int32_t *idx,
				  int64_t *tptr, int32_t *tidx, int64_t *tperm)
{
	(void) be;
	emu_transpose(nr, nc, nnz, ptr, idx, tptr, tidx, tperm);
	return GNN_OK;
}

static gnn_status
emu_api_loop_csr(gnn_backend *be, int64_t nd, const int64_t *indptr, const int32_t *indices, const float *w,
				 int64_t *lptr, int32_t *lidx, float *lval, int64_t *lnnz)
{
	(void) be;
	lptr[0] = 0;
	for (int64_t i = 0; i < nd; i++)
		lptr[i + 1] = lptr[i] + gnn_b_loop_count(indptr, indices, i);
	for (int64_t i = 0; i < nd; i++)
		gnn_b_loop_row(indptr, indices, w, i, lidx + lptr[i], lval + lptr[i]);
	*lnnz = lptr[nd];
	return GNN_OK;
}

static gnn_status
emu_api_gcn_norm(gnn_backend *be, int64_t nd, int64_t ns, const int64_t *lptr, const int32_t *lidx, float *lval,
				 const int64_t *tptr, const int64_t *tperm, double *deg)
{
	(void) be;
	for (int64_t i = 0; i < nd; i++)
	{
		double		s = 0;

		for (int64_t e = lptr[i]; e < lptr[i + 1]; e++)
			s += lval[e];
		deg[i] = s;
	}
	for (int64_t j = 0; j < ns; j++)
	{
		double		s = 0;

		for (int64_t k = tptr[j]; k < tptr[j + 1]; k++)
			s += lval[tperm[k]];
		deg[nd + j] = s;
	}
	for (int64_t i = 0; i < nd; i++)
		for (int64_t e = lptr[i]; e < lptr[i + 1]; e++)
			lval[e] = gnn_b_norm(lval[e], deg[i], deg[nd + lidx[e]]);
	return GNN_OK;
}

static gnn_status
emu_api_gather_cached(gnn_backend *be, const float *cache, const int32_t *slot, const float *host, int64_t d,
					  const int32_t *nodes, int64_t n, bool norm, float *out, unsigned long long *hits)
{
	int32_t		zero = 0;
	int64_t		h = 0;

	(void) be;
	for (int64_t i = 0; i < n; i++)
	{
		bool		hit;
		const float *row = gnn_c_row(cache, slot, host, d, nodes[i], &hit);

		h += hit;
		emu_gather(row, d, &zero, 1, norm, 1, out + i * d);
	}
	if (hits)
		*hits += (unsigned long long) h;
	return GNN_OK;
}

static gnn_status
emu_api_mem_info(gnn_backend *be, size_t *free_bytes, size_t *total_bytes)
{
	(void) be;
	*free_bytes = emu_api_free;
	*total_bytes = 2 * emu_api_free;
	return GNN_OK;
}

static const gnn_gpu_sample_api emu_api = {
	.sample_hop = emu_api_sample_hop,
	.row_prefix = emu_api_row_prefix,
	.random_walk = NULL,
	.gather = emu_api_gather,
	.host_register = emu_api_register,
	.host_unregister = emu_api_unregister,
	.relabel_seeds = emu_api_relabel_seeds,
	.relabel_hop = emu_api_relabel_hop,
	.csr_transpose = emu_api_transpose,
	.loop_csr = emu_api_loop_csr,
	.gcn_norm = emu_api_gcn_norm,
	.gather_cached = emu_api_gather_cached,
	.mem_info = emu_api_mem_info,
};

#endif							/* GNN_GPU_API_EMU_H */
