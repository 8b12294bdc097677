/*
 * sample_math.h: the per-element bodies of the GPU samplers (kernels/
 * sample.cu, walk.cu, gather.cu), written as GNN_HD functions so that the
 * very same code runs as device code (nvcc) and as plain C in
 * test/core/test_sample_gpu_math.c, which emulates the launch layout on the
 * CPU and checks statistics, determinism and equivalence with references.
 *
 * Randomness: no per-thread generator state.  Every draw is a counter-based
 * hash gnn_s_rand(seed, tag, a, b, c) (splitmix64 finaliser chained over
 * the key words), so a draw is a pure function of (seed, what it is for,
 * which destination / walk, which hop / step, which draw), independent of
 * the launch geometry, the thread count and the order threads run in.  No
 * unsigned __int128 (nvcc device code lacks it): the 64x64 high product is
 * __umul64hi on the device and a portable 32-bit split on the host, which
 * give the same bits.
 *
 * The GPU streams are NOT the CPU sampler's xoshiro streams (sample.c): the
 * same seed gives a different (equally distributed) sample on the CPU
 * sampler and on the GPU.  The GPU result equals this header's CPU
 * emulation bit for bit.
 *
 * Neighbour sampling of one destination (count = gnn_s_count):
 *  - all (fanout < 0, or without replacement and fanout >= degree): the
 *    row in order;
 *  - uniform with replacement: draw j is below(rand(.., j), deg);
 *  - uniform without replacement: Floyd's algorithm, step s draws
 *    t = below(rand(.., s), deg-k+s+1) and takes t unless already taken,
 *    else deg-k+s; the membership test is the only sequential part (a warp
 *    does it with a ballot over the k picks so far);
 *  - weighted with replacement: binary search of u * total in the row's
 *    inclusive prefix sums of weights (gnn_s_row_prefix, built once).
 *    An edge of weight 0 (or negative: counted as 0) is never drawn: its
 *    prefix sum equals the one before it, so the search never stops on it,
 *    and a row of total weight 0 gets no draws (gnn_s_weighted_count), as
 *    if the node had no in-neighbours.  Weighted with fanout < 0 takes the
 *    row's edges that carry weight, in order (gnn_s_weight_carried).
 *  Weighted without replacement is not done on the GPU.
 */
#ifndef GNN_SAMPLE_MATH_H
#define GNN_SAMPLE_MATH_H

#include "kernel_math.h"	/* GNN_HD, GNN_K_LOAD4 / GNN_K_STORE4 */

#include <stdbool.h>
#include <stdint.h>

/* stream tags (domain separation of the hash) */
#define GNN_S_TAG_NEIGHBOR 0x6e65696768ULL	/* "neigh" */
#define GNN_S_TAG_WALK     0x77616c6bULL	/* "walk" */

/* node2vec: rejection attempts before the exact draw (as sample.c) */
#define GNN_S_WALK_TRIES 32

/* ------------------------------------------------------------------ RNG */

GNN_HD uint64_t
gnn_s_mix(uint64_t z)
{
	z += 0x9e3779b97f4a7c15ULL;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* one 64-bit draw keyed by (seed, tag, a, b, c) */
GNN_HD uint64_t
gnn_s_rand(uint64_t seed, uint64_t tag, uint64_t a, uint64_t b, uint64_t c)
{
	uint64_t	x = gnn_s_mix(seed ^ gnn_s_mix(tag));

	x = gnn_s_mix(x ^ a);
	x = gnn_s_mix(x ^ (b * 0xd6e8feb86659fd93ULL));
	return gnn_s_mix(x ^ (c * 0xa0761d6478bd642fULL));
}

GNN_HD uint64_t
gnn_s_mulhi(uint64_t a, uint64_t b)
{
#ifdef __CUDA_ARCH__
	return __umul64hi(a, b);
#else
	uint64_t	al = a & 0xffffffffu,
				ah = a >> 32,
				bl = b & 0xffffffffu,
				bh = b >> 32;
	uint64_t	ll = al * bl,
				lh = al * bh,
				hl = ah * bl,
				hh = ah * bh;
	uint64_t	mid = (ll >> 32) + (lh & 0xffffffffu) + (hl & 0xffffffffu);

	return hh + (lh >> 32) + (hl >> 32) + (mid >> 32);
#endif
}

/* uniform in [0, n), n >= 1 (multiply-high; bias below n / 2^64) */
GNN_HD int64_t
gnn_s_below(uint64_t r, int64_t n)
{
	return (int64_t) gnn_s_mulhi(r, (uint64_t) n);
}

/*
 * a*b rounded once, never contracted into a following add (nvcc fuses
 * a*b - c into an FMA by default, which would make the GPU's draw differ
 * from the CPU's in the last bit)
 */
GNN_HD double
gnn_s_dmul(double a, double b)
{
#ifdef __CUDA_ARCH__
	return __dmul_rn(a, b);
#else
	return a * b;
#endif
}

/* uniform double in [0, 1) */
GNN_HD double
gnn_s_unit(uint64_t r)
{
	return (double) (r >> 11) * (1.0 / 9007199254740992.0);
}

/* ------------------------------------------------------------------ neighbour sampling */

/* edges drawn for a destination of in-degree deg (as sample.c's hop_neighbor) */
GNN_HD int64_t
gnn_s_count(int64_t deg, int64_t fanout, bool replace)
{
	return fanout < 0 ? deg : replace ? (deg > 0 ? fanout : 0) : (fanout < deg ? fanout : deg);
}

/* does the draw take the whole row in order? */
GNN_HD bool
gnn_s_take_all(int64_t deg, int64_t fanout, bool replace)
{
	return fanout < 0 || (!replace && fanout >= deg);
}

/* key of destination i (position in the hop's destination list) at hop h */
GNN_HD uint64_t
gnn_s_row_key(int32_t hop, int64_t i)
{
	return ((uint64_t) (uint32_t) hop << 40) ^ (uint64_t) i;
}

/* uniform with replacement: row offset of draw j */
GNN_HD int64_t
gnn_s_uniform_draw(uint64_t seed, int32_t hop, int64_t i, int64_t j, int64_t deg)
{
	return gnn_s_below(gnn_s_rand(seed, GNN_S_TAG_NEIGHBOR, gnn_s_row_key(hop, i), (uint64_t) j, 0), deg);
}

/* Floyd step s (0 <= s < k, k < deg): the candidate offset t in [0, deg-k+s] */
GNN_HD int64_t
gnn_s_floyd_candidate(uint64_t seed, int32_t hop, int64_t i, int64_t s, int64_t k, int64_t deg)
{
	return gnn_s_below(gnn_s_rand(seed, GNN_S_TAG_NEIGHBOR, gnn_s_row_key(hop, i), (uint64_t) s, 1),
					   deg - k + s + 1);
}

/* Floyd step s: the offset taken, given whether the candidate was taken already */
GNN_HD int64_t
gnn_s_floyd_pick(int64_t t, bool taken, int64_t s, int64_t k, int64_t deg)
{
	return taken ? deg - k + s : t;
}

/* first index in cum[0..deg) with cum[idx] > x (cum inclusive prefix sums); deg-1 if none */
GNN_HD int64_t
gnn_s_upper_bound(const float *cum, int64_t deg, float x)
{
	int64_t		lo = 0,
				hi = deg - 1;

	while (lo < hi)
	{
		int64_t		mid = lo + (hi - lo) / 2;

		if (cum[mid] > x)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

/* does edge e of a row carry weight (its inclusive prefix sum rises)? */
GNN_HD bool
gnn_s_weight_carried(const float *cum, int64_t e)
{
	return cum[e] > (e > 0 ? cum[e - 1] : 0.0f);
}

/*
 * edges drawn for a destination of in-degree deg with weighted draws (cum =
 * the row's inclusive prefix sums): only edges that carry weight count, so a
 * row of total weight 0 has none
 */
GNN_HD int64_t
gnn_s_weighted_count(const float *cum, int64_t deg, int64_t fanout)
{
	int64_t		n = 0;

	if (deg == 0 || !(cum[deg - 1] > 0.0f))
		return 0;
	if (fanout >= 0)
		return fanout;
	for (int64_t e = 0; e < deg; e++)
		n += gnn_s_weight_carried(cum, e);
	return n;
}

/*
 * weighted with replacement: row offset of draw j, cum = the row's
 * inclusive prefix sums of weights; the row's total must be > 0
 * (gnn_s_weighted_count gives no draws otherwise).  The offset is always of
 * an edge that carries weight.
 */
GNN_HD int64_t
gnn_s_weighted_draw(uint64_t seed, int32_t hop, int64_t i, int64_t j, const float *cum, int64_t deg)
{
	uint64_t	r = gnn_s_rand(seed, GNN_S_TAG_NEIGHBOR, gnn_s_row_key(hop, i), (uint64_t) j, 2);
	float		total = cum[deg - 1];

	float		x;

	if (!(total > 0.0f))
		return 0;				/* not reached: such a row has no draws */
	x = (float) gnn_s_dmul(gnn_s_unit(r), (double) total);
	if (x >= total)				/* rounded up to the total: stay below it (never a zero-weight tail edge) */
		x = nextafterf(total, 0.0f);
	return gnn_s_upper_bound(cum, deg, x);
}

/* inclusive prefix sums of one row's weights, sequential (same bits everywhere) */
GNN_HD void
gnn_s_row_prefix(const float *w, int64_t deg, float *cum)
{
	float		s = 0.0f;

	for (int64_t e = 0; e < deg; e++)
	{
		float		x = w[e];

		s += x > 0.0f ? x : 0.0f;	/* negative weights count as 0 */
		cum[e] = s;
	}
}

/* ------------------------------------------------------------------ random walks */

GNN_HD bool
gnn_s_has_edge(const int64_t *indptr, const int32_t *indices, int32_t a, int32_t b)
{
	const int32_t *nb = indices + indptr[a];
	int64_t		n = indptr[a + 1] - indptr[a],
				lo = gnn_math_lower_bound(nb, n, b);

	return lo < n && nb[lo] == b;
}

/* node2vec's unnormalised bias of stepping to u from a node reached from prev */
GNN_HD double
gnn_s_n2v_bias(const int64_t *indptr, const int32_t *indices, int32_t prev, int32_t u,
			   double wp, double wq)
{
	return u == prev ? wp : gnn_s_has_edge(indptr, indices, prev, u) ? 1.0 : wq;
}

/*
 * One step of walk w at step t (1-based) from cur (reached from prev, -1 at
 * the start) along out-edges: the next node, or -1 when cur has none.
 * Uniform when !biased; node2vec by rejection (attempt a uses draws 2a,
 * 2a+1 and, for the step back, (2a, 3)) and, after GNN_S_WALK_TRIES misses,
 * an exact draw over the row.  wout = max(1, wq) bounds the bias of a step
 * other than back.  When the step back weighs more (wp > wout: p < 1, p < q)
 * it is an outlier (KnightKing), as in sample.c: prev's c entries of the row
 * are drawn as their own share c * wp of the envelope and every other entry
 * against wout, instead of every entry against wp (at p = 0.25, q = 4 an
 * outward step was kept one time in 16).
 */
GNN_HD int32_t
gnn_s_walk_step(const int64_t *indptr, const int32_t *indices, int32_t cur, int32_t prev,
				bool biased, double wp, double wq, double wout, uint64_t seed, int64_t w, int64_t t)
{
	int64_t		b = indptr[cur],
				deg = indptr[cur + 1] - b;
	uint64_t	key = ((uint64_t) t << 40) ^ (uint64_t) w;
	const int32_t *nb = indices + b;
	int64_t		lo = 0,
				c = 0;
	double		env = wout,	/* the largest bias too, unless the step back is an outlier */
				back = 0,
				total;

	if (deg == 0)
		return -1;
	if (!biased || prev < 0)
		return indices[b + gnn_s_below(gnn_s_rand(seed, GNN_S_TAG_WALK, key, 0, 0), deg)];
	if (wp > wout)
	{
		lo = gnn_math_lower_bound(nb, deg, prev);
		while (lo + c < deg && nb[lo + c] == prev)
			c++;
		back = gnn_s_dmul((double) c, wp);
	}
	total = back + gnn_s_dmul((double) (deg - c), env);
	for (int a = 0; a < GNN_S_WALK_TRIES; a++)
	{
		int64_t		k;
		int32_t		nx;
		double		bias;

		if (c > 0 && gnn_s_dmul(gnn_s_unit(gnn_s_rand(seed, GNN_S_TAG_WALK, key, 2 * a, 3)), total) < back)
			return prev;
		k = (int64_t) gnn_s_below(gnn_s_rand(seed, GNN_S_TAG_WALK, key, 2 * a, 1), deg - c);
		nx = nb[c > 0 && k >= lo ? k + c : k];	/* prev's run skipped */
		bias = gnn_s_n2v_bias(indptr, indices, prev, nx, wp, wq);
		if (gnn_s_dmul(gnn_s_unit(gnn_s_rand(seed, GNN_S_TAG_WALK, key, 2 * a + 1, 1)), env) < bias)
			return nx;
	}
	{
		double		sum = 0,
					x;

		for (int64_t k = 0; k < deg; k++)
			sum += gnn_s_n2v_bias(indptr, indices, prev, nb[k], wp, wq);
		x = gnn_s_dmul(gnn_s_unit(gnn_s_rand(seed, GNN_S_TAG_WALK, key, 0, 2)), sum);
		for (int64_t k = 0; k < deg; k++)
		{
			x -= gnn_s_n2v_bias(indptr, indices, prev, nb[k], wp, wq);
			if (x < 0)
				return nb[k];
		}
		return nb[deg - 1];
	}
}

/* walk w from start into row[0..len] (-1 after a dead end): one thread's work */
GNN_HD void
gnn_s_walk(const int64_t *indptr, const int32_t *indices, int32_t start, int64_t len,
		   bool biased, double wp, double wq, double wout, uint64_t seed, int64_t w, int32_t *row)
{
	int32_t		prev = -1,
				cur = start;

	row[0] = cur;
	for (int64_t t = 1; t <= len; t++)
	{
		int32_t		nx = cur < 0 ? -1 : gnn_s_walk_step(indptr, indices, cur, prev, biased, wp, wq, wout,
														 seed, w, t);

		row[t] = nx;
		prev = cur;
		cur = nx;
	}
}

/* ------------------------------------------------------------------ gather */

/*
 * Lane `lane` of g copies its columns of one row (k = lane*v + s*g*v,
 * v in {1, 4}; v = 4 only when d % 4 == 0 and both rows 16-byte aligned)
 * and returns its partial sum of the row (double), for row normalisation.
 */
GNN_HD double
gnn_s_gather_lane(const float *src, float *dst, int64_t d, int lane, int g, int v)
{
	double		s = 0;

	for (int64_t k = (int64_t) lane * v; k < d; k += (int64_t) g * v)
	{
		if (v == 4)
		{
			float		a[4];

			GNN_K_LOAD4(src + k, a);
			GNN_K_STORE4(dst + k, a);
			s += (double) a[0] + (double) a[1] + (double) a[2] + (double) a[3];
		}
		else
		{
			dst[k] = src[k];
			s += src[k];
		}
	}
	return s;
}

/* lane's columns of a gathered row divided by the row sum s (s != 0) */
GNN_HD void
gnn_s_normalise_lane(float *dst, int64_t d, int lane, int g, double s)
{
	for (int64_t k = lane; k < d; k += g)
		dst[k] = (float) (dst[k] / s);
}

#endif							/* GNN_SAMPLE_MATH_H */
