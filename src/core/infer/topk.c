/*
 * topk.c: parallel top-k by cosine similarity.
 *
 * Each thread scores a contiguous range of rows and keeps its k best in a
 * min-heap whose root is the worst kept candidate, so a row that does not
 * beat the root costs one comparison; the threads' heaps (at most
 * threads * k candidates) are merged by one small sort.  The order is
 * total (score, then lower index first), so the result does not depend on
 * how the rows were split.
 */
#include "infer/topk.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

typedef struct cand
{
	float		s;
	int64_t		i;
} cand;

static inline float
cos_score(const float *a, const float *b, int32_t dim, float na, float nb)
{
	float		acc[8] = {0};
	size_t		n8 = (size_t) (dim / 8);
	size_t		k;

	if (na == 0.0f || nb == 0.0f)
		return 0.0f;

	/*
	 * An unsigned count known before the loop: PostgreSQL builds with
	 * -fwrapv, under which "k + 8 <= dim" with a signed k may wrap, and GCC
	 * then kept the sums in memory (4x slower in gnn.so than in a plain build).
	 */
	for (size_t t = 0; t < n8; t++)
		for (int j = 0; j < 8; j++)
			acc[j] += a[8 * t + j] * b[8 * t + j];
	k = 8 * n8;
	for (int j = 0; k < (size_t) dim; k++, j++)
		acc[j] += a[k] * b[k];
	return (((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]))) /
		(na * nb);
}

float
gnn_cosine(const float *a, const float *b, int32_t dim, float na, float nb)
{
	return cos_score(a, b, dim, na, nb);
}

/* a ranks before b: higher score (NaN lowest), then lower index */
static inline bool
better(const cand *a, const cand *b)
{
	float		x = isnan(a->s) ? -INFINITY : a->s,
				y = isnan(b->s) ? -INFINITY : b->s;

	return x > y || (x == y && a->i < b->i);
}

/* restore the heap (worst at the root) below position p */
static void
sift_down(cand *h, int64_t n, int64_t p)
{
	cand		v = h[p];

	for (;;)
	{
		int64_t		c = 2 * p + 1;

		if (c >= n)
			break;
		if (c + 1 < n && better(&h[c], &h[c + 1]))
			c++;				/* the worse child */
		if (!better(&v, &h[c]))
			break;
		h[p] = h[c];
		p = c;
	}
	h[p] = v;
}

static void
sift_up(cand *h, int64_t p)
{
	cand		v = h[p];

	while (p > 0)
	{
		int64_t		up = (p - 1) / 2;

		if (!better(&h[up], &v))
			break;
		h[p] = h[up];
		p = up;
	}
	h[p] = v;
}

static int
cmp_rank(const void *a, const void *b)
{
	return better(a, b) ? -1 : better(b, a) ? 1 : 0;
}

/* bf16: the upper half of a float, rounded to nearest (ties to even); NaN stays NaN */
static inline uint16_t
to_bf16(float x)
{
	uint32_t	u;

	memcpy(&u, &x, sizeof(u));
	if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x007fffffu))
		return (uint16_t) ((u >> 16) | 0x0040u);
	u += 0x7fffu + ((u >> 16) & 1u);
	return (uint16_t) (u >> 16);
}

void
gnn_to_bf16(const float *x, int64_t n, uint16_t *out)
{
#pragma omp parallel for schedule(static) if (n > (1 << 20))
	for (int64_t i = 0; i < n; i++)
		out[i] = to_bf16(x[i]);
}

/*
 * The approximate score of a bf16 row against the float query: bf16 keeps 8
 * significant bits, so each row element is within 2^-8 of its value
 * (relative), the dot product within 2^-8 |r| |q| (Cauchy-Schwarz) and the
 * cosine within 2^-8 of the exact one.
 */
static inline float
cos_score_bf16(const float *a, const uint16_t *b16, int32_t dim, float na, float nb)
{
	float		acc[8] = {0};
	size_t		n8 = (size_t) (dim / 8);
	size_t		k;

	if (na == 0.0f || nb == 0.0f)
		return 0.0f;
	for (size_t t = 0; t < n8; t++)
		for (int j = 0; j < 8; j++)
		{
			uint32_t	u = (uint32_t) b16[8 * t + j] << 16;
			float		f;

			memcpy(&f, &u, sizeof(f));
			acc[j] += a[8 * t + j] * f;
		}
	k = 8 * n8;
	for (int j = 0; k < (size_t) dim; k++, j++)
	{
		uint32_t	u = (uint32_t) b16[k] << 16;
		float		f;

		memcpy(&f, &u, sizeof(f));
		acc[j] += a[k] * f;
	}
	return (((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]))) /
		(na * nb);
}

/* lower_bound over an ascending list: the first position at or above i */
static int64_t
lower_bound(const int64_t *exclude, int64_t n, int64_t i)
{
	int64_t		lo = 0,
				hi = n;

	while (lo < hi)
	{
		int64_t		mid = lo + (hi - lo) / 2;

		if (exclude[mid] < i)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/*
 * The kk best rows of emb against the query eq, in one pass split among the
 * threads, each keeping a heap, merged by one small sort, into out (kk
 * entries, fewer when fewer rows are left: *got).  Scores: the cosine
 * (norms given: nq the query's norm; the bf16 approximation when emb16 is
 * given), else the dot product.  Rows in exclude[0..nexcl) (ascending) are
 * left out.  0, or -1 when out of memory.
 */
static int
topk_scan_rows(const float *eq, float nq, const float *emb, const uint16_t *emb16, const float *norms,
			   int64_t n, int32_t dim, const int64_t *exclude, int64_t nexcl, int64_t kk, int nthreads,
			   cand *out, int64_t *got)
{
	int64_t		total = 0;
	int			nt = 1;
	cand	   *heaps;
	int64_t    *counts;

#ifdef _OPENMP
	nt = nthreads > 0 ? nthreads : omp_get_max_threads();
#endif
	if (n * (int64_t) dim < (1 << 14))
		nt = 1;					/* not worth a team */
	heaps = malloc(sizeof(cand) * kk * nt + 1);
	counts = calloc(nt, sizeof(int64_t));
	if (!heaps || !counts)
	{
		free(heaps);
		free(counts);
		return -1;
	}

#pragma omp parallel num_threads(nt) if (nt > 1)
	{
		int			t = 0,
					T = 1;
		cand	   *h;
		int64_t		m = 0,
					lo,
					hi,
					e;

#ifdef _OPENMP
		t = omp_get_thread_num();
		T = omp_get_num_threads();
#endif
		h = heaps + t * kk;
		lo = n * t / T;
		hi = n * (t + 1) / T;
		e = lower_bound(exclude, nexcl, lo);
		for (int64_t i = lo; i < hi; i++)
		{
			cand		c;

			if (e < nexcl && exclude[e] == i)
			{
				e++;
				continue;
			}
			c.s = !norms ? cos_score(eq, emb + i * dim, dim, 1.0f, 1.0f) :
				emb16 ? cos_score_bf16(eq, emb16 + i * dim, dim, nq, norms[i]) :
				cos_score(eq, emb + i * dim, dim, nq, norms[i]);
			c.i = i;
			if (m < kk)
			{
				h[m] = c;
				sift_up(h, m++);
			}
			else if (better(&c, &h[0]))
			{
				h[0] = c;
				sift_down(h, kk, 0);
			}
		}
		counts[t] = m;
	}

	/* merge: compact the heaps and sort the few candidates */
	for (int t = 0; t < nt; t++)
		for (int64_t j = 0; j < counts[t]; j++)
			heaps[total++] = heaps[t * kk + j];
	qsort(heaps, total, sizeof(cand), cmp_rank);
	if (total > kk)
		total = kk;
	memcpy(out, heaps, sizeof(cand) * total);
	*got = total;
	free(heaps);
	free(counts);
	return 0;
}

/*
 * The kk best rows against row q by cosine (exact, or bf16 when emb16 is
 * given), q itself left out, sorted, into out (kk <= n - 1).  0, or -1 when
 * out of memory.
 */
static int
topk_scan(const float *emb, const uint16_t *emb16, const float *norms, int64_t n, int32_t dim,
		  int64_t q, int64_t kk, int nthreads, cand *out)
{
	int64_t		got;

	return topk_scan_rows(emb + q * dim, norms[q], emb, emb16, norms, n, dim, &q, 1, kk, nthreads, out, &got);
}

int64_t
gnn_topk_cosine(const float *emb, const float *norms, int64_t n, int32_t dim, int64_t q,
				int32_t k, int nthreads, int64_t *out_idx, float *out_score)
{
	int64_t		kk;
	cand	   *best;

	if (n < 1 || dim < 1 || q < 0 || q >= n || k < 0)
		return -1;
	kk = k < n - 1 ? k : n - 1;
	if (kk == 0)
		return 0;
	best = malloc(sizeof(cand) * kk);
	if (!best || topk_scan(emb, NULL, norms, n, dim, q, kk, nthreads, best) != 0)
	{
		free(best);
		return -1;
	}
	for (int64_t j = 0; j < kk; j++)
	{
		out_idx[j] = best[j].i;
		out_score[j] = best[j].s;
	}
	free(best);
	return kk;
}

/* the approximate cosine is within this of the exact one (2^-8, and float summation) */
#define BF16_EPS (1.0f / 256.0f + 1e-5f)

int64_t
gnn_topk_cosine_bf16(const float *emb, const uint16_t *emb16, const float *norms, int64_t n, int32_t dim,
					 int64_t q, int32_t k, int nthreads, int64_t *out_idx, float *out_score)
{
	int64_t		kk,
				kc;
	cand	   *c;

	if (n < 1 || dim < 1 || q < 0 || q >= n || k < 0)
		return -1;
	kk = k < n - 1 ? k : n - 1;
	if (kk == 0)
		return 0;
	kc = 2 * kk + 64;			/* candidates by the approximate score */
	if (kc >= n - 1)
		return gnn_topk_cosine(emb, norms, n, dim, q, k, nthreads, out_idx, out_score);
	c = malloc(sizeof(cand) * kc);
	if (!c || topk_scan(emb, emb16, norms, n, dim, q, kc, nthreads, c) != 0)
	{
		free(c);
		return -1;
	}

	/*
	 * A row left out scores at most c[kc-1] + eps exactly; the kk best
	 * candidates score at least c[kk-1] - eps.  When the first is strictly
	 * below the second, no row left out can be among the exact kk best, and
	 * re-scoring the candidates exactly gives the exact answer.  Otherwise
	 * (near-equal scores around the cut), scan exactly.
	 */
	if (!(isfinite(c[kk - 1].s) && c[kc - 1].s < c[kk - 1].s - 2 * BF16_EPS))
	{
		free(c);
		return gnn_topk_cosine(emb, norms, n, dim, q, k, nthreads, out_idx, out_score);
	}
	for (int64_t j = 0; j < kc; j++)
		c[j].s = cos_score(emb + q * dim, emb + c[j].i * dim, dim, norms[q], norms[c[j].i]);
	qsort(c, kc, sizeof(cand), cmp_rank);
	for (int64_t j = 0; j < kk; j++)
	{
		out_idx[j] = c[j].i;
		out_score[j] = c[j].s;
	}
	free(c);
	return kk;
}

int64_t
gnn_topk_dot(const float *query, const float *emb, int64_t n, int32_t dim, const int64_t *exclude,
			 int64_t nexclude, int32_t k, int nthreads, int64_t *out_idx, float *out_score)
{
	cand	   *best;
	int64_t		got = 0;

	if (n < 0 || dim < 1 || k < 0 || nexclude < 0 || (nexclude > 0 && !exclude))
		return -1;
	for (int64_t j = 1; j < nexclude; j++)
		if (exclude[j] <= exclude[j - 1])
			return -1;
	if (k == 0 || n == 0)
		return 0;
	best = malloc(sizeof(cand) * k);
	if (!best || topk_scan_rows(query, 1.0f, emb, NULL, NULL, n, dim, exclude, nexclude, k, nthreads, best, &got) != 0)
	{
		free(best);
		return -1;
	}
	for (int64_t j = 0; j < got; j++)
	{
		out_idx[j] = best[j].i;
		out_score[j] = best[j].s;
	}
	free(best);
	return got;
}

float
gnn_dot(const float *a, const float *b, int32_t dim)
{
	return cos_score(a, b, dim, 1.0f, 1.0f);
}
