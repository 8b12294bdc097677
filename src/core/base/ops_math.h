/*
 * ops_math.h: per-element math of the backend ops, shared by the CPU
 * backend (C) and the CUDA backend (nvcc): under __CUDACC__ every function
 * is __host__ __device__, otherwise plain static inline.  Keeping the math
 * here is what makes CPU and CUDA results agree (up to float rounding of
 * reductions) and lets the CPU tests exercise the very code the GPU runs.
 */
#ifndef GNN_OPS_MATH_H
#define GNN_OPS_MATH_H

#include <stdint.h>
#include <math.h>

#ifdef __CUDACC__
#define GNN_HD __host__ __device__ __forceinline__
#else
#define GNN_HD static inline
#endif

/* ------------------------------------------------------------------ search */

/*
 * The first position of sorted[0..n) holding a value >= v (n if none): a
 * neighbour row, a sorted column.  The core's gnn_row_lower_bound (graph.h)
 * and the kernels' searches (sample_math.h, relabel_math.h) are this one.
 */
GNN_HD int64_t
gnn_math_lower_bound(const int32_t *sorted, int64_t n, int64_t v)
{
	int64_t		lo = 0,
				hi = n;

	while (lo < hi)
	{
		int64_t		mid = lo + (hi - lo) / 2;

		if (sorted[mid] < v)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* ------------------------------------------------------------------ activations */

GNN_HD float
gnn_math_relu(float x)
{
	return x > 0.0f ? x : 0.0f;
}

GNN_HD float
gnn_math_relu_grad(float x)
{
	return x > 0.0f ? 1.0f : 0.0f;
}

GNN_HD float
gnn_math_elu(float x, float alpha)
{
	return x > 0.0f ? x : alpha * expm1f(x);
}

GNN_HD float
gnn_math_elu_grad(float x, float alpha)
{
	return x > 0.0f ? 1.0f : alpha * expf(x);
}

GNN_HD float
gnn_math_leaky_relu(float x, float slope)
{
	return x > 0.0f ? x : slope * x;
}

GNN_HD float
gnn_math_leaky_relu_grad(float x, float slope)
{
	return x > 0.0f ? 1.0f : slope;
}

/* act codes as in backend.h's gnn_act (kept as int so this header stands alone) */
GNN_HD float
gnn_math_act(int act, float param, float x)
{
	switch (act)
	{
		case 1:
			return gnn_math_relu(x);
		case 2:
			return gnn_math_elu(x, param);
		case 3:
			return gnn_math_leaky_relu(x, param);
		default:
			return x;
	}
}

GNN_HD float
gnn_math_act_grad(int act, float param, float x)
{
	switch (act)
	{
		case 1:
			return gnn_math_relu_grad(x);
		case 2:
			return gnn_math_elu_grad(x, param);
		case 3:
			return gnn_math_leaky_relu_grad(x, param);
		default:
			return 1.0f;
	}
}

/* ------------------------------------------------------------------ dropout
 * A counter-based hash of (seed, index) - seeds are 64-bit splitmix outputs,
 * hashed down to 32 bits per element: element i
 * is kept when its uniform draw u in [0,1) satisfies u >= p.  Stateless, so
 * forward and backward agree without a stored mask and every backend and
 * thread layout draws the same mask.
 */
GNN_HD uint64_t
gnn_math_hash64(uint64_t seed, uint64_t i)
{
	uint64_t	z = seed + (i + 1) * 0x9e3779b97f4a7c15ULL;

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/*
 * gnn_math_hash32 in two parts: the high word of the index enters through
 * one term (gnn_math_hash32_hi), so a loop over indices that share their high
 * word hashes in 32-bit lanes only (gnn_math_hash32_lo).  The same bits.
 */
GNN_HD uint32_t
gnn_math_hash32_hi(uint64_t seed, uint32_t i_hi)
{
	return (uint32_t) (seed >> 32) ^ (i_hi * 0x85ebca6bu);
}

GNN_HD uint32_t
gnn_math_hash32_lo(uint64_t seed, uint32_t hi, uint32_t i_lo)
{
	/* murmur3's 32-bit finaliser over a golden-ratio stride: 32-bit only so
	 * the CPU loop vectorises (AVX2 has no 64-bit multiply) */
	uint32_t	x = i_lo * 0x9e3779b9u + (uint32_t) seed;

	x ^= hi;
	x ^= x >> 16;
	x *= 0x85ebca6bu;
	x ^= x >> 13;
	x *= 0xc2b2ae35u;
	x ^= x >> 16;
	return x;
}

GNN_HD uint32_t
gnn_math_hash32(uint64_t seed, uint64_t i)
{
	return gnn_math_hash32_lo(seed, gnn_math_hash32_hi(seed, (uint32_t) (i >> 32)), (uint32_t) i);
}

/* the keep bit of index i = (hi word's term, i_lo): see gnn_math_hash32_hi */
GNN_HD int
gnn_math_dropout_keep_lo(uint64_t seed, uint32_t hi, uint32_t i_lo, float p)
{
	/* compare in 24-bit integers: exact, and the same on every backend */
	uint32_t	u = gnn_math_hash32_lo(seed, hi, i_lo) >> 8;

	return u >= (uint32_t) (p * 16777216.0f);
}

GNN_HD int
gnn_math_dropout_keep(uint64_t seed, uint64_t i, float p)
{
	return gnn_math_dropout_keep_lo(seed, gnn_math_hash32_hi(seed, (uint32_t) (i >> 32)), (uint32_t) i, p);
}

/*
 * Inverted dropout of one element; scale = 1 / (1 - p) computed once by the
 * caller.  Written as a select, not a branch: the keep bit is a coin flip,
 * which a branch predictor cannot learn.
 */
GNN_HD float
gnn_math_dropout(float x, uint64_t seed, uint64_t i, float p, float scale)
{
	float		s = gnn_math_dropout_keep(seed, i, p) ? scale : 0.0f;

	return x * s;
}

/* gnn_math_dropout of index i = hi word's term (gnn_math_hash32_hi) and low word i_lo */
GNN_HD float
gnn_math_dropout_lo(float x, uint64_t seed, uint32_t hi, uint32_t i_lo, float p, float scale)
{
	float		s = gnn_math_dropout_keep_lo(seed, hi, i_lo, p) ? scale : 0.0f;

	return x * s;
}

/* ------------------------------------------------------------------ optimisers */

/*
 * Adam (Kingma & Ba) with L2 weight decay added to the gradient (PyTorch
 * Adam's weight_decay).  bc1 = 1 - beta1^t, bc2 = 1 - beta2^t computed once
 * per step by the caller.  Updates *w, *m, *v.
 */
GNN_HD void
gnn_math_adam(float *w, float g, float *m, float *v, float lr, float beta1,
			  float beta2, float eps, float wd, float bc1, float bc2)
{
	float		gg = g + wd * *w;
	float		mm = beta1 * *m + (1.0f - beta1) * gg;
	float		vv = beta2 * *v + (1.0f - beta2) * gg * gg;
	float		mhat = mm / bc1;
	float		vhat = vv / bc2;

	*m = mm;
	*v = vv;
	*w -= lr * mhat / (sqrtf(vhat) + eps);
}

/* SGD with optional momentum (PyTorch convention: buf = mu*buf + g'). */
GNN_HD void
gnn_math_sgd(float *w, float g, float *buf, float lr, float momentum, float wd)
{
	float		gg = g + wd * *w;

	if (momentum > 0.0f && buf)
	{
		*buf = momentum * *buf + gg;
		gg = *buf;
	}
	*w -= lr * gg;
}

/* ------------------------------------------------------------------ GAT */

/* raw attention logit of an edge before the softmax */
GNN_HD float
gnn_math_gat_logit(float a_src, float a_dst, float slope)
{
	return gnn_math_leaky_relu(a_src + a_dst, slope);
}

/* ------------------------------------------------------------------ loss */

/* -log softmax(x)[y] for a row with max m and sum of exp(x - m) = s */
GNN_HD float
gnn_math_xent(float x_label, float m, float s)
{
	return -(x_label - m - logf(s));
}

#endif							/* GNN_OPS_MATH_H */
