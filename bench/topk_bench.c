/*
 * topk_bench.c: gnn_topk_cosine (gnn.similar's scan) on an in-memory table.
 *
 *   topk_bench [ROWS [DIM [K [QUERIES]]]]
 *   defaults: 1000000 rows of 128 floats (512 MB), k = 10, 20 queries
 *
 * Reports, for 1 and 2 threads, the median and best time of one query and
 * the table bandwidth it reaches, next to a single-threaded memcpy of the
 * table (the bound for one pass) and, once, the naive way: score every row
 * and sort all scores.
 */
#include "infer/topk.h"
#include "bench_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct sc
{
	float		s;
	int64_t		i;
} sc;

static int
cmp_sc(const void *a, const void *b)
{
	const sc   *x = a,
			   *y = b;

	if (x->s != y->s)
		return x->s > y->s ? -1 : 1;
	return x->i < y->i ? -1 : x->i > y->i;
}

int
main(int argc, char **argv)
{
	int64_t		n = argc > 1 ? atoll(argv[1]) : 1000000;
	int32_t		dim = argc > 2 ? atoi(argv[2]) : 128;
	int32_t		k = argc > 3 ? atoi(argv[3]) : 10;
	int			nq = argc > 4 ? atoi(argv[4]) : 20;
	size_t		bytes = sizeof(float) * (size_t) n * dim;
	float	   *emb = malloc(bytes),
			   *norms = malloc(sizeof(float) * n),
			   *score = malloc(sizeof(float) * k);
	int64_t    *idx = malloc(sizeof(int64_t) * k);
	double	   *t = malloc(sizeof(double) * nq);
	gnn_rng		r;
	double		t0;

	gnn_rng_seed(&r, 1);
	for (size_t i = 0; i < (size_t) n * dim; i++)
		emb[i] = gnn_rng_float(&r) - 0.5f;
	for (int64_t i = 0; i < n; i++)
	{
		double		s = 0;

		for (int32_t j = 0; j < dim; j++)
			s += (double) emb[i * dim + j] * emb[i * dim + j];
		norms[i] = (float) sqrt(s);
	}
	printf("table: %lld x %d floats (%.0f MB), k = %d, %d queries per setting\n",
		   (long long) n, dim, bytes / 1e6, k, nq);
	{
		float	   *copy = malloc(bytes);
		double		best = 1e9;

		memset(copy, 0, bytes);
		for (int i = 0; i < 3; i++)
		{
			t0 = now_s();
			memcpy(copy, emb, bytes);
			best = fmin(best, now_s() - t0);
		}
		printf("memcpy of the table (1 thread, best of 3): %.1f ms, %.2f GB/s\n", best * 1e3, bytes / best / 1e9);
		free(copy);
	}
	for (int nt = 1; nt <= 2; nt++)
	{
		(void) gnn_topk_cosine(emb, norms, n, dim, 0, k, nt, idx, score);	/* warm */
		for (int i = 0; i < nq; i++)
		{
			int64_t		q = (int64_t) gnn_rng_below(&r, n);

			t0 = now_s();
			if (gnn_topk_cosine(emb, norms, n, dim, q, k, nt, idx, score) != k)
			{
				fprintf(stderr, "topk failed\n");
				return 1;
			}
			t[i] = now_s() - t0;
		}
		qsort(t, nq, sizeof(double), cmp_double);
		printf("threads %d: median %.1f ms, best %.1f ms per query (%.2f GB/s of table); last top-1 %lld at %.4f\n",
			   nt, t[nq / 2] * 1e3, t[0] * 1e3, bytes / t[nq / 2] / 1e9, (long long) idx[0], score[0]);
	}
	{
		sc		   *all = malloc(sizeof(sc) * n);

		t0 = now_s();
		for (int64_t i = 0; i < n; i++)
		{
			all[i].s = gnn_cosine(emb, emb + i * dim, dim, norms[0], norms[i]);
			all[i].i = i;
		}
		qsort(all, n, sizeof(sc), cmp_sc);
		printf("naive (1 thread, score all + qsort all, once): %.1f ms\n", (now_s() - t0) * 1e3);
		free(all);
	}
	free(emb);
	free(norms);
	free(score);
	free(idx);
	free(t);
	return 0;
}
