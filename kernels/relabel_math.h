/*
 * relabel_math.h: the per-element bodies of the GPU minibatch builder
 * (kernels/relabel.cu): the device hash table that relabels sampled graph
 * nodes into block-local indices, the self-looped CSR row of GCN / GAT
 * blocks and its symmetric normalisation, and the cached feature gather's
 * row source.  GNN_HD functions, so the same code is device code under
 * nvcc and plain C in test/core/test_relabel_math.c (which runs it
 * sequentially, in shuffled orders, against the CPU path) and in
 * src/core/block.c (whose host loop CSR is built by the same row function,
 * so CPU and GPU blocks agree bit for bit).
 *
 * Relabelling one batch (all hops share one table; nodes[h] is a prefix of
 * nodes[h+1], as on the CPU):
 *   1. the seeds are inserted with values 0..n0-1 (seeds are unique);
 *   2. for each hop, every draw inserts its graph node; the one insert that
 *      claims an empty slot appends the node to a list of new nodes (in
 *      whatever order threads run);
 *   3. the new nodes are sorted by graph index (a radix sort), which makes
 *      the result independent of the order threads ran in, and get the
 *      values n_h, n_h + 1, ... in that order;
 *   4. every draw looks its node up: the block's column.
 * The CPU sampler appends new nodes in first-occurrence order instead:
 * the same sets, another order.
 *
 * The table is open addressing with linear probing over a power-of-two
 * capacity of at least twice the batch's nodes, key -1 = empty.
 */
#ifndef GNN_RELABEL_MATH_H
#define GNN_RELABEL_MATH_H

#include "kernel_math.h"		/* GNN_HD */

#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#define GNN_H_EMPTY (-1)

/* the table's capacity for up to n keys: a power of two >= 2n, >= 64 */
GNN_HD int64_t
gnn_h_capacity(int64_t n)
{
	int64_t		c = 64;

	while (c < 2 * n)
		c <<= 1;
	return c;
}

/* a 32-bit finaliser (lowbias32): neighbouring ids land far apart */
GNN_HD uint32_t
gnn_h_hash(int32_t key)
{
	uint32_t	x = (uint32_t) key;

	x ^= x >> 16;
	x *= 0x7feb352dU;
	x ^= x >> 15;
	x *= 0x846ca68bU;
	x ^= x >> 16;
	return x;
}

#ifdef __CUDA_ARCH__
#define GNN_H_CAS(p, e, d) atomicCAS((int *) (p), (int) (e), (int) (d))
#else
/* the host emulation runs one insert at a time: a plain compare-and-set */
GNN_HD int32_t
gnn_h_cas_host(int32_t *p, int32_t e, int32_t d)
{
	int32_t		o = *p;

	if (o == e)
		*p = d;
	return o;
}
#define GNN_H_CAS(p, e, d) gnn_h_cas_host((p), (e), (d))
#endif

/*
 * Insert key (>= 0); the slot holding it.  *claimed: this call put it there
 * (exactly one insert of a key claims it, however many race).  The table
 * must have a free slot (capacity >= 2 * keys ever inserted).
 */
GNN_HD int64_t
gnn_h_insert(int32_t *keys, int64_t cap, int32_t key, bool *claimed)
{
	int64_t		mask = cap - 1,
				s = (int64_t) (gnn_h_hash(key) & (uint32_t) mask);

	for (;;)
	{
		int32_t		prev = GNN_H_CAS(&keys[s], GNN_H_EMPTY, key);

		if (prev == GNN_H_EMPTY || prev == key)
		{
			*claimed = prev == GNN_H_EMPTY;
			return s;
		}
		s = (s + 1) & mask;
	}
}

/* the slot holding key, -1 when absent */
GNN_HD int64_t
gnn_h_find(const int32_t *keys, int64_t cap, int32_t key)
{
	int64_t		mask = cap - 1,
				s = (int64_t) (gnn_h_hash(key) & (uint32_t) mask);

	for (int64_t n = 0; n < cap; n++)
	{
		int32_t		k = keys[s];

		if (k == key)
			return s;
		if (k == GNN_H_EMPTY)
			return -1;
		s = (s + 1) & mask;
	}
	return -1;
}

/* ------------------------------------------------------------------ GCN / GAT self loops */

/* entries of row i of the self-looped CSR: the row's, plus one unless it has a self entry */
GNN_HD int64_t
gnn_b_loop_count(const int64_t *indptr, const int32_t *indices, int64_t i)
{
	int64_t		n = indptr[i + 1] - indptr[i];

	for (int64_t e = indptr[i]; e < indptr[i + 1]; e++)
		if (indices[e] == i)
			return n;
	return n + 1;
}

/*
 * Row i of the self-looped CSR into lidx / lval (gnn_b_loop_count entries):
 * the row's entries in order, with (i, 1) placed before the first column
 * greater than i (at the end if none) unless the row has its own self
 * entry.  Values: the weights (NULL: 1).  Not yet normalised.
 */
GNN_HD void
gnn_b_loop_row(const int64_t *indptr, const int32_t *indices, const float *w, int64_t i, int32_t *lidx,
			   float *lval)
{
	bool		has_self = false,
				placed = false;
	int64_t		k = 0;

	for (int64_t e = indptr[i]; e < indptr[i + 1]; e++)
		if (indices[e] == i)
			has_self = true;
	for (int64_t e = indptr[i]; e < indptr[i + 1]; e++)
	{
		int32_t		j = indices[e];

		if (!has_self && !placed && j > i)
		{
			lidx[k] = (int32_t) i;
			lval[k++] = 1.0f;
			placed = true;
		}
		lidx[k] = j;
		lval[k++] = w ? w[e] : 1.0f;
	}
	if (!has_self && !placed)
	{
		lidx[k] = (int32_t) i;
		lval[k] = 1.0f;
	}
}

/*
 * Symmetric normalisation of one entry: v / sqrt(d_dst * d_src), 0 when
 * either degree is not positive.  The degrees are double sums of the
 * looped values in forward order (a row's entries in order; a column's in
 * increasing row, i.e. along the transpose).
 */
GNN_HD float
gnn_b_norm(float v, double dd, double ds)
{
	return (dd > 0 && ds > 0) ? (float) (v / sqrt(dd * ds)) : 0.0f;
}

/* ------------------------------------------------------------------ transpose */

/*
 * The transpose of a CSR without atomics: a stable sort of the entries by
 * column (cub radix sort of (column, position) pairs) gives t_perm; then
 * entry k of the transpose is in row gnn_b_row_of(t_perm[k]) of the
 * original, and column j's entries start at the first sorted key >= j.
 * Within a column the entries stay in forward order, as the host transpose
 * (block.c) has them.
 */

/* the row of entry e of a CSR with n rows: the last i with indptr[i] <= e (empty rows skipped) */
GNN_HD int64_t
gnn_b_row_of(const int64_t *indptr, int64_t n, int64_t e)
{
	int64_t		lo = 0,
				hi = n;			/* answer in [lo, hi) */

	while (hi - lo > 1)
	{
		int64_t		mid = lo + (hi - lo) / 2;

		if (indptr[mid] <= e)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

/* the first position of sorted[0..n) holding a value >= j (n if none) */
GNN_HD int64_t
gnn_b_lower_bound(const int32_t *sorted, int64_t n, int64_t j)
{
	return gnn_math_lower_bound(sorted, n, j);
}

/* ------------------------------------------------------------------ cached gather */

/*
 * Where the features of node v come from: its cache row (slot[v] >= 0) or
 * the host matrix (-1); slot NULL means everything is cached in graph
 * order.  Returns the row's address; *hit says which.
 */
GNN_HD const float *
gnn_c_row(const float *cache, const int32_t *slot, const float *host, int64_t d, int32_t v, bool *hit)
{
	if (!slot)
	{
		*hit = true;
		return cache + (int64_t) v * d;
	}
	if (slot[v] >= 0)
	{
		*hit = true;
		return cache + (int64_t) slot[v] * d;
	}
	*hit = false;
	return host + (int64_t) v * d;
}

#endif							/* GNN_RELABEL_MATH_H */
