/*
 * gpu_batch_emu.h: a CPU emulation of a training batch built on the GPU
 * (src/core/gpu_batch.c over kernels/sample.cu and relabel.cu), from the
 * kernels' own per-element bodies (kernels/relabel_math.h,
 * sample_math.h through sample_gpu_emu.h).  Thread races are emulated by
 * running the inserts of a hop in a shuffled order (order_seed): the
 * result must not depend on it.  Used by test_relabel_math.c (no GPU) and
 * test_gpu_batch_parity.c (the GPU against this, bit for bit).
 */
#ifndef GNN_GPU_BATCH_EMU_H
#define GNN_GPU_BATCH_EMU_H

#include "sample_gpu_emu.h"
#include "../../kernels/relabel_math.h"
#include "train/train.h"

#include <stdlib.h>
#include <string.h>

typedef struct emu_hop
{
	int64_t		nnz,
				lnnz;
	int64_t    *ptr;			/* [nd + 1] */
	int32_t    *src;			/* [nnz] draws (graph nodes) */
	int32_t    *local;			/* [nnz] block columns */
	int64_t    *tptr;			/* [ns + 1] */
	int32_t    *tidx;
	int64_t    *tperm;
	int64_t    *lptr;			/* looped CSR, normalised */
	int32_t    *lidx;
	float	   *lval;
	int64_t    *ltptr;
	int32_t    *ltidx;
	int64_t    *ltperm;
} emu_hop;

typedef struct emu_batch
{
	int			L;
	int64_t		n_at[GNN_MAX_LAYERS + 1];
	int32_t    *nodes;			/* [n_at[L]] */
	emu_hop		hop[GNN_MAX_LAYERS];
} emu_batch;

static int
emu_cmp_i32(const void *a, const void *b)
{
	int32_t		x = *(const int32_t *) a,
				y = *(const int32_t *) b;

	return (x > y) - (x < y);
}

/* a permutation of 0..n-1 from seed (the emulated thread order) */
static int64_t *
emu_order(int64_t n, uint64_t seed)
{
	int64_t    *o = malloc(sizeof(int64_t) * (n + 1));

	for (int64_t i = 0; i < n; i++)
		o[i] = i;
	for (int64_t i = n - 1; seed && i > 0; i--)
	{
		int64_t		j = (int64_t) gnn_s_below(gnn_s_rand(seed, 9, i, 0, 0), i + 1),
					t = o[i];

		o[i] = o[j];
		o[j] = t;
	}
	return o;
}

/* h_seed_kernel */
static void
emu_relabel_seeds(int32_t *keys, int32_t *vals, int64_t cap, const int32_t *seeds, int64_t n, uint64_t order_seed)
{
	int64_t    *o = emu_order(n, order_seed);

	for (int64_t s = 0; s < cap; s++)
		keys[s] = GNN_H_EMPTY;
	for (int64_t k = 0; k < n; k++)
	{
		bool		claimed;
		int64_t		s = gnn_h_insert(keys, cap, seeds[o[k]], &claimed);

		if (claimed)
			vals[s] = (int32_t) o[k];
	}
	free(o);
}

/* gnn_cuda_relabel_hop: inserts in a shuffled order, new nodes sorted, assigned, draws mapped */
static int64_t
emu_relabel_hop(int32_t *keys, int32_t *vals, int64_t cap, const int32_t *src, int64_t nnz, int32_t *nodes,
				int64_t n_prev, int32_t *local, uint64_t order_seed)
{
	int64_t    *o = emu_order(nnz, order_seed);
	int64_t		k = 0;

	for (int64_t t = 0; t < nnz; t++)
	{
		bool		claimed;

		(void) gnn_h_insert(keys, cap, src[o[t]], &claimed);
		if (claimed)
			nodes[n_prev + k++] = src[o[t]];
	}
	qsort(nodes + n_prev, k, sizeof(int32_t), emu_cmp_i32);
	for (int64_t j = 0; j < k; j++)
		vals[gnn_h_find(keys, cap, nodes[n_prev + j])] = (int32_t) (n_prev + j);
	for (int64_t e = 0; e < nnz; e++)
		local[e] = vals[gnn_h_find(keys, cap, src[e])];
	free(o);
	return k;
}

typedef struct emu_pair
{
	int32_t		key;
	int64_t		pos;
} emu_pair;

static int
emu_cmp_pair(const void *a, const void *b)
{
	const emu_pair *x = a,
			   *y = b;

	if (x->key != y->key)
		return (x->key > y->key) - (x->key < y->key);
	return (x->pos > y->pos) - (x->pos < y->pos);	/* stable */
}

/* gnn_cuda_csr_transpose: a stable sort by column, rows by search, offsets by lower bound */
static void
emu_transpose(int64_t nr, int64_t nc, int64_t nnz, const int64_t *ptr, const int32_t *idx, int64_t *tptr,
			  int32_t *tidx, int64_t *tperm)
{
	emu_pair   *p = malloc(sizeof(emu_pair) * (nnz + 1));
	int32_t    *sorted = malloc(sizeof(int32_t) * (nnz + 1));

	for (int64_t e = 0; e < nnz; e++)
	{
		p[e].key = idx[e];
		p[e].pos = e;
	}
	qsort(p, nnz, sizeof(emu_pair), emu_cmp_pair);
	for (int64_t k = 0; k < nnz; k++)
	{
		sorted[k] = p[k].key;
		tperm[k] = p[k].pos;
		tidx[k] = (int32_t) gnn_b_row_of(ptr, nr, p[k].pos);
	}
	for (int64_t j = 0; j <= nc; j++)
		tptr[j] = j == nc ? nnz : gnn_b_lower_bound(sorted, nnz, j);
	free(p);
	free(sorted);
}

/* gnn_cuda_loop_csr then gnn_cuda_gcn_norm (the looped transpose in between) */
static void
emu_loop(int64_t nd, int64_t ns, const int64_t *ptr, const int32_t *idx, emu_hop *H)
{
	int64_t		nnz = ptr[nd];
	double	   *dd = malloc(sizeof(double) * (nd + 1)),
			   *ds = malloc(sizeof(double) * (ns + 1));

	H->lptr = malloc(sizeof(int64_t) * (nd + 1));
	H->lidx = malloc(sizeof(int32_t) * (nnz + nd + 1));
	H->lval = malloc(sizeof(float) * (nnz + nd + 1));
	H->lptr[0] = 0;
	for (int64_t i = 0; i < nd; i++)
		H->lptr[i + 1] = H->lptr[i] + gnn_b_loop_count(ptr, idx, i);
	for (int64_t i = 0; i < nd; i++)
		gnn_b_loop_row(ptr, idx, NULL, i, H->lidx + H->lptr[i], H->lval + H->lptr[i]);
	H->lnnz = H->lptr[nd];
	H->ltptr = malloc(sizeof(int64_t) * (ns + 1));
	H->ltidx = malloc(sizeof(int32_t) * (H->lnnz + 1));
	H->ltperm = malloc(sizeof(int64_t) * (H->lnnz + 1));
	emu_transpose(nd, ns, H->lnnz, H->lptr, H->lidx, H->ltptr, H->ltidx, H->ltperm);
	for (int64_t i = 0; i < nd; i++)
	{
		double		s = 0;

		for (int64_t e = H->lptr[i]; e < H->lptr[i + 1]; e++)
			s += H->lval[e];
		dd[i] = s;
	}
	for (int64_t j = 0; j < ns; j++)
	{
		double		s = 0;

		for (int64_t k = H->ltptr[j]; k < H->ltptr[j + 1]; k++)
			s += H->lval[H->ltperm[k]];
		ds[j] = s;
	}
	for (int64_t i = 0; i < nd; i++)
		for (int64_t e = H->lptr[i]; e < H->lptr[i + 1]; e++)
			H->lval[e] = gnn_b_norm(H->lval[e], dd[i], ds[H->lidx[e]]);
	free(dd);
	free(ds);
}

/*
 * The batch of seeds[0..n) (unique) over g's reverse CSR, L hops of
 * fanouts, as gnn_gpu_batcher_next builds it; loop: GCN / GAT blocks.
 * cap: the table capacity (gnn_h_capacity of the batch's node bound).
 */
static void
emu_batch_build(const gnn_graph *g, const int32_t *seeds, int64_t n, int L, const int64_t *fanouts, bool replace,
				uint64_t seed, bool loop, int64_t cap, uint64_t order_seed, emu_batch *B)
{
	int32_t    *keys = malloc(sizeof(int32_t) * cap),
			   *vals = malloc(sizeof(int32_t) * cap);

	memset(B, 0, sizeof(*B));
	B->L = L;
	B->nodes = malloc(sizeof(int32_t) * (g->num_nodes + 1));
	memcpy(B->nodes, seeds, sizeof(int32_t) * n);
	emu_relabel_seeds(keys, vals, cap, seeds, n, order_seed);
	B->n_at[0] = n;
	for (int h = 0; h < L; h++)
	{
		emu_hop    *H = &B->hop[h];
		int64_t		nd = B->n_at[h];

		H->ptr = malloc(sizeof(int64_t) * (nd + 1));
		H->nnz = emu_hop_ptr(g->rindptr, NULL, B->nodes, nd, fanouts[h], replace, H->ptr);
		H->src = malloc(sizeof(int32_t) * (H->nnz + 1));
		H->local = malloc(sizeof(int32_t) * (H->nnz + 1));
		emu_sample_hop(g->rindptr, g->rindices, NULL, B->nodes, nd, h, fanouts[h], replace, seed, H->ptr, H->src, NULL);
		B->n_at[h + 1] = nd + emu_relabel_hop(keys, vals, cap, H->src, H->nnz, B->nodes, nd, H->local,
											  order_seed ? order_seed + h + 1 : 0);
	}
	for (int h = 0; h < L; h++)
	{
		emu_hop    *H = &B->hop[h];
		int64_t		nd = B->n_at[h],
					ns = B->n_at[h + 1];

		H->tptr = malloc(sizeof(int64_t) * (ns + 1));
		H->tidx = malloc(sizeof(int32_t) * (H->nnz + 1));
		H->tperm = malloc(sizeof(int64_t) * (H->nnz + 1));
		emu_transpose(nd, ns, H->nnz, H->ptr, H->local, H->tptr, H->tidx, H->tperm);
		if (loop)
			emu_loop(nd, ns, H->ptr, H->local, H);
	}
	free(keys);
	free(vals);
}

static void
emu_batch_free(emu_batch *B)
{
	for (int h = 0; h < B->L; h++)
	{
		emu_hop    *H = &B->hop[h];

		free(H->ptr);
		free(H->src);
		free(H->local);
		free(H->tptr);
		free(H->tidx);
		free(H->tperm);
		free(H->lptr);
		free(H->lidx);
		free(H->lval);
		free(H->ltptr);
		free(H->ltidx);
		free(H->ltperm);
	}
	free(B->nodes);
	memset(B, 0, sizeof(*B));
}

/* gather_cached_kernel (no normalisation): rows from the cache or the host matrix; returns the hits */
static int64_t
emu_gather_cached(const float *cache, const int32_t *slot, const float *host, int64_t d, const int32_t *nodes,
				  int64_t n, int v, float *out)
{
	int64_t		hits = 0;

	for (int64_t i = 0; i < n; i++)
	{
		bool		hit;
		const float *row = gnn_c_row(cache, slot, host, d, nodes[i], &hit);

		hits += hit;
		for (int lane = 0; lane < EMU_WARP; lane++)
			(void) gnn_s_gather_lane(row, out + i * d, d, lane, EMU_WARP, v);
	}
	return hits;
}

/* a training run's per-epoch figures (a gnn_progress_fn recorder, up to 64 epochs) */
typedef struct curve
{
	int			n;
	float		loss[64];
	double		hit[64];		/* cache_hit_rate */
	int64_t		moved[64];		/* h2d_bytes */
} curve;

static void
on_epoch(void *arg, const gnn_epoch_metrics *m)
{
	curve	   *c = arg;

	if (c->n < 64)
	{
		c->hit[c->n] = m->cache_hit_rate;
		c->moved[c->n] = m->h2d_bytes;
		c->loss[c->n++] = m->train_loss;
	}
}

#endif							/* GNN_GPU_BATCH_EMU_H */
