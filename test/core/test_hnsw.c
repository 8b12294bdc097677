/*
 * test_hnsw: the approximate index behind gnn.similar against the exact scan
 * (gnn_topk_cosine).
 *  - at full search width (ef >= n) the answer is the exact one, rows and
 *    scores, on small tables of many shapes (duplicate rows, zero rows, a
 *    NaN row), built on 1 and 2 threads;
 *  - recall@10 at the default width on 100,000 rows of 64 dimensions
 *    shaped like embeddings (clusters around directions) is at least 0.95;
 *  - the dot-product index (gnn.recommend) equals gnn_topk_dot at full
 *    width, rows left out, on rows of many norms; recall@10 at least 0.95
 *    on 50,000 rows;
 *  - one thread builds the same bytes twice; the size is known in advance;
 *  - a query row without direction (zero norm) asks for the exact scan;
 *  - bad arguments, a block too small, a stop request are refused.
 */
#include "check.h"
#include "infer/hnsw.h"
#include "infer/topk.h"

#include <math.h>
#include <time.h>

static gnn_rng rng;

static bool
stop_now(void *arg)
{
	(void) arg;
	return true;
}

static float *
norms_of(const float *e, int64_t n, int32_t dim)
{
	float	   *nr = malloc(sizeof(float) * (size_t) n);

	for (int64_t i = 0; i < n; i++)
	{
		double		s = 0;

		for (int32_t k = 0; k < dim; k++)
			s += (double) e[i * dim + k] * e[i * dim + k];
		nr[i] = (float) sqrt(s);
	}
	return nr;
}

/* n rows around `clusters` random directions (noise sigma), some rows duplicated or zero */
static float *
make_rows(int64_t n, int32_t dim, int clusters, float sigma, double dups, double zeros)
{
	float	   *c = malloc(sizeof(float) * (size_t) clusters * dim);
	float	   *e = malloc(sizeof(float) * (size_t) n * dim);

	for (int64_t i = 0; i < (int64_t) clusters * dim; i++)
		c[i] = 2.0f * gnn_rng_float(&rng) - 1.0f;
	for (int64_t i = 0; i < n; i++)
	{
		double		u = gnn_rng_double(&rng);
		int64_t		at = (int64_t) gnn_rng_below(&rng, (uint64_t) clusters);

		for (int32_t k = 0; k < dim; k++)
		{
			/* a normal by Box-Muller */
			double		u1 = gnn_rng_double(&rng) + 1e-12,
						u2 = gnn_rng_double(&rng);

			e[i * dim + k] = c[at * dim + k] + sigma * (float) (sqrt(-2 * log(u1)) * cos(2 * M_PI * u2));
		}
		if (i > 0 && u < dups)
			memcpy(e + i * dim, e + gnn_rng_below(&rng, (uint64_t) i) * dim, sizeof(float) * dim);
		else if (u < dups + zeros)
			memset(e + i * dim, 0, sizeof(float) * dim);
	}
	free(c);
	return e;
}

static void *
build(const float *e, const float *nr, int64_t n, int32_t dim, int threads, int32_t m, size_t *bytes)
{
	gnn_hnsw_params p = {.m = m, .seed = 42, .nthreads = threads};
	gnn_error	err;
	void	   *buf;

	if (gnn_hnsw_size(n, &p, bytes, &err) != GNN_OK)
		return NULL;
	buf = malloc(*bytes);
	if (gnn_hnsw_build(e, nr, n, dim, &p, buf, *bytes, &err) != GNN_OK)
	{
		NOTE("build: %s", err.msg);
		free(buf);
		return NULL;
	}
	return buf;
}

static bool
same_answer(const int64_t *ia, const float *sa, int64_t na, const int64_t *ib, const float *sb, int64_t nb)
{
	if (na != nb)
		return false;
	for (int64_t j = 0; j < na; j++)
		if (ia[j] != ib[j] || memcmp(&sa[j], &sb[j], sizeof(float)) != 0)
			return false;
	return true;
}

int
main(void)
{
	gnn_rng_seed(&rng, 11);

	/* full width: the exact answer */
	{
		/* 4000: most rows equal or zero (node2vec's unvisited nodes), which once made the repair a scan per row */
		static const int64_t ns[] = {1, 2, 3, 17, 200, 1500, 4000};
		static const int32_t dims[] = {1, 4, 16};

		for (size_t a = 0; a < sizeof(ns) / sizeof(ns[0]); a++)
			for (size_t b = 0; b < sizeof(dims) / sizeof(dims[0]); b++)
				for (int threads = 1; threads <= 2; threads++)
				{
					int64_t		n = ns[a];
					int32_t		dim = dims[b];
					float	   *e = make_rows(n, dim, 5, 0.3f, n == 4000 ? 0.3 : 0.1, n == 4000 ? 0.5 : 0.03);
					float	   *nr;
					size_t		bytes;
					void	   *ix;
					int			bad = 0,
								cases = 0,
								exact_asked = 0;
					int32_t		k = n > 10 ? 10 : (int32_t) n;
					int64_t    *ia = malloc(sizeof(int64_t) * (size_t) (n + 1)),
							   *ib = malloc(sizeof(int64_t) * (size_t) (n + 1));
					float	   *sa = malloc(sizeof(float) * (size_t) (n + 1)),
							   *sb = malloc(sizeof(float) * (size_t) (n + 1));

					if (b == 1 && n > 3)
						for (int32_t t = 0; t < dim; t++)
							e[(n / 2) * dim + t] = NAN;
					nr = norms_of(e, n, dim);
					ix = build(e, nr, n, dim, threads, 4, &bytes);
					if (!CHECK(ix != NULL && gnn_hnsw_valid(ix, bytes, n), "n %lld dim %d, %d thread(s): built",
							   (long long) n, dim, threads))
						continue;
					for (int64_t q = 0; q < n; q += (n > 200 ? 7 : 1))
					{
						int64_t		ga = gnn_hnsw_search(ix, e, nr, dim, q, k, (int32_t) n, ia, sa);
						int64_t		gb = gnn_topk_cosine(e, nr, n, dim, q, k, 1, ib, sb);

						cases++;
						if (ga == GNN_HNSW_EXACT)
						{
							exact_asked++;
							bad += !(nr[q] == 0.0f || !isfinite(nr[q]));
							continue;
						}
						if (!same_answer(ia, sa, ga, ib, sb, gb) && bad++ < 3)
							for (int64_t j = 0; j < (ga > gb ? ga : gb); j++)
								NOTE("q %lld: %lld %.9g | %lld %.9g", (long long) q, (long long) (j < ga ? ia[j] : -1),
									 j < ga ? sa[j] : 0, (long long) (j < gb ? ib[j] : -1), j < gb ? sb[j] : 0);
					}
					CHECK(bad == 0, "n %lld dim %d (duplicate and zero rows%s), %d thread(s), ef = n: %d queries = the exact scan "
						  "(%d without direction asked for it)",
						  (long long) n, dim, b == 1 && n > 3 ? ", a NaN row" : "", threads, cases, exact_asked);
					free(ix);
					free(e);
					free(nr);
					free(ia);
					free(ib);
					free(sa);
					free(sb);
				}
	}

	/* recall at the default width on 100k rows like embeddings (8,000 under the sanitizers: their build took 10 s at 20,000) */
	{
		int64_t		n = check_len(100000, 8000);
		int32_t		dim = 64,
					k = 10,
					ef = GNN_HNSW_DEFAULT_EF;
		float	   *e = make_rows(n, dim, 200, 0.8f, 0.0, 0.0);
		float	   *nr = norms_of(e, n, dim);
		size_t		bytes;
		struct timespec t0,
					t1;
		void	   *ix;
		int64_t		hit = 0,
					want = 0;
		int			queries = 300;
		double		build_s,
					search_s = 0;

		clock_gettime(CLOCK_MONOTONIC, &t0);
		ix = build(e, nr, n, dim, 2, 16, &bytes);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		build_s = (double) (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
		if (CHECK(ix != NULL, "%lld rows x %d: built in %.2f s on 2 threads (%zu bytes)", (long long) n, dim,
				  build_s, bytes))
		{
			for (int t = 0; t < queries; t++)
			{
				int64_t		q = (int64_t) gnn_rng_below(&rng, (uint64_t) n),
							ia[10],
							ib[10],
							ga,
							gb;
				float		sa[10],
							sb[10];

				clock_gettime(CLOCK_MONOTONIC, &t0);
				ga = gnn_hnsw_search(ix, e, nr, dim, q, k, ef, ia, sa);
				clock_gettime(CLOCK_MONOTONIC, &t1);
				search_s += (double) (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
				gb = gnn_topk_cosine(e, nr, n, dim, q, k, 2, ib, sb);
				want += gb;
				for (int64_t a = 0; a < ga; a++)
					for (int64_t b = 0; b < gb; b++)
						if (ia[a] == ib[b])
						{
							hit++;
							break;
						}
			}
			CHECK((double) hit / want >= 0.95, "recall@10 at ef %d over %d queries: %.4f (at least 0.95); %.3f ms a search",
				  ef, queries, (double) hit / want, 1000 * search_s / queries);
		}
		free(ix);
		free(e);
		free(nr);
	}

	/* dot products (gnn.recommend): full width = gnn_topk_dot, rows left out; recall on rows of many norms */
	{
		static const int64_t ns[] = {2, 17, 300, 2000};

		for (size_t a = 0; a < sizeof(ns) / sizeof(ns[0]); a++)
		{
			int64_t		n = ns[a];
			int32_t		dim = 8;
			float	   *e = make_rows(n, dim, 6, 0.4f, 0.1, 0.02);
			float	   *nr;
			gnn_hnsw_params p = {.metric = GNN_HNSW_DOT, .m = 6, .seed = 3, .nthreads = 2};
			gnn_error	err;
			size_t		bytes;
			void	   *ix;
			int			bad = 0,
						cases = 0;
			int64_t		ia[12],
						ib[12],
						ex[6];
			float		sa[12],
						sb[12],
						qv[8];

			for (int64_t i = 0; i < n; i++)
			{
				float		f = 0.25f + 2.0f * gnn_rng_float(&rng);	/* norms that differ */

				for (int32_t t = 0; t < dim; t++)
					e[i * dim + t] *= f;
			}
			nr = norms_of(e, n, dim);
			(void) gnn_hnsw_size(n, &p, &bytes, &err);
			ix = malloc(bytes);
			if (!CHECK(gnn_hnsw_build(e, nr, n, dim, &p, ix, bytes, &err) == GNN_OK, "dot: %lld rows built", (long long) n))
				continue;
			for (int t = 0; t < 60; t++)
			{
				int64_t		nex = 0,
							ga,
							gb;
				int32_t		k = n > 10 ? 10 : (int32_t) n;

				/* a row of the table (itself and a few more left out) or a random vector */
				if (t % 2 == 0)
				{
					int64_t		q = (int64_t) gnn_rng_below(&rng, (uint64_t) n);

					memcpy(qv, e + q * dim, sizeof(qv));
					for (int64_t r = q; r < n && nex < 6; r += 1 + (int64_t) gnn_rng_below(&rng, 5))
						ex[nex++] = r;
				}
				else
					for (int32_t j = 0; j < dim; j++)
						qv[j] = 2.0f * gnn_rng_float(&rng) - 1.0f;
				ga = gnn_hnsw_search_dot(ix, e, nr, dim, qv, ex, nex, k, (int32_t) n, ia, sa);
				gb = gnn_topk_dot(qv, e, n, dim, ex, nex, k, 1, ib, sb);
				cases++;
				if (ga == GNN_HNSW_EXACT)
					continue;	/* a zero row as the query */
				bad += !same_answer(ia, sa, ga, ib, sb, gb);
			}
			CHECK(bad == 0, "dot, %lld rows of many norms, ef = n: %d queries (rows with some left out, random vectors) = gnn_topk_dot",
				  (long long) n, cases);
			CHECK(gnn_hnsw_search(ix, e, nr, dim, 0, 3, 10, ia, sa) == -1, "a dot index does not answer a cosine search");
			free(ix);
			free(e);
			free(nr);
		}
	}
	{
		int64_t		n = check_len(50000, 4000);
		int32_t		dim = 64,
					k = 10;
		float	   *e = make_rows(n, dim, 200, 0.8f, 0.0, 0.0);
		float	   *nr;
		gnn_hnsw_params p = {.metric = GNN_HNSW_DOT, .seed = 5, .nthreads = 2};
		gnn_error	err;
		size_t		bytes;
		void	   *ix;
		int64_t		hit = 0,
					want = 0,
					ex[1];
		int			queries = 300;
		int64_t		ia[10],
					ib[10];
		float		sa[10],
					sb[10];

		for (int64_t i = 0; i < n; i++)
		{
			float		f = 0.5f + gnn_rng_float(&rng);

			for (int32_t t = 0; t < dim; t++)
				e[i * dim + t] *= f;
		}
		nr = norms_of(e, n, dim);
		(void) gnn_hnsw_size(n, &p, &bytes, &err);
		ix = malloc(bytes);
		if (CHECK(gnn_hnsw_build(e, nr, n, dim, &p, ix, bytes, &err) == GNN_OK, "dot: %lld rows x %d built", (long long) n, dim))
		{
			for (int t = 0; t < queries; t++)
			{
				int64_t		q = (int64_t) gnn_rng_below(&rng, (uint64_t) n),
							ga,
							gb;

				ex[0] = q;
				ga = gnn_hnsw_search_dot(ix, e, nr, dim, e + q * dim, ex, 1, k, GNN_HNSW_DEFAULT_EF, ia, sa);
				gb = gnn_topk_dot(e + q * dim, e, n, dim, ex, 1, k, 2, ib, sb);
				want += gb;
				for (int64_t a = 0; a < ga; a++)
					for (int64_t b = 0; b < gb; b++)
						if (ia[a] == ib[b])
						{
							hit++;
							break;
						}
			}
			CHECK((double) hit / want >= 0.95, "dot: recall@10 at ef %d over %d queries: %.4f (at least 0.95)",
				  GNN_HNSW_DEFAULT_EF, queries, (double) hit / want);
		}
		{
			int64_t		bad_ex[2] = {5, 5};
			float		zero[64] = {0};

			CHECK(gnn_hnsw_search_dot(ix, e, nr, dim, e, bad_ex, 2, 3, 10, ia, sa) == -1 &&
				  gnn_hnsw_search_dot(ix, e, nr, dim - 1, e, NULL, 0, 3, 10, ia, sa) == -1,
				  "dot: rows to leave out not ascending, or another width: refused");
			CHECK(gnn_hnsw_search_dot(ix, e, nr, dim, zero, NULL, 0, 3, 10, ia, sa) == GNN_HNSW_EXACT,
				  "dot: a zero query asks for the exact scan");
		}
		free(ix);
		free(e);
		free(nr);
	}

	/* one thread: the same bytes every time; the size comes first */
	{
		int64_t		n = 3000;
		int32_t		dim = 8;
		float	   *e = make_rows(n, dim, 10, 0.2f, 0.05, 0.01);
		float	   *nr = norms_of(e, n, dim);
		size_t		b1,
					b2;
		void	   *x1 = build(e, nr, n, dim, 1, 8, &b1),
				   *x2 = build(e, nr, n, dim, 1, 8, &b2);
		gnn_hnsw_info info;

		CHECK(x1 && x2 && b1 == b2 && memcmp(x1, x2, b1) == 0, "one thread builds the same %zu bytes twice", b1);
		gnn_hnsw_describe(x1, &info);
		CHECK(info.rows == n && info.m == 8 && info.links >= n && info.links <= n * 3 * 16,
			  "describe: %lld rows, m %d, %d levels above 0, %lld links", (long long) info.rows, info.m,
			  info.levels, (long long) info.links);
		CHECK(!gnn_hnsw_valid(x1, b1, n + 1) && !gnn_hnsw_valid(x1, 16, n) && gnn_hnsw_valid(x1, b1, n),
			  "valid: only for its own row count and a block that holds it");
		free(x1);
		free(x2);
		free(e);
		free(nr);
	}

	/* a query without direction, bad arguments */
	{
		float		e[4 * 2] = {0, 0, 1, 0, 0, 1, 1, 1};
		float	   *nr = norms_of(e, 4, 2);
		size_t		bytes;
		void	   *ix = build(e, nr, 4, 2, 1, 4, &bytes);
		int64_t		idx[4];
		float		sc[4];
		gnn_hnsw_params p = {.m = 500};
		gnn_error	err;

		CHECK(gnn_hnsw_search(ix, e, nr, 2, 0, 3, 10, idx, sc) == 3 && idx[0] == 1 && idx[1] == 2 && idx[2] == 3 &&
			  sc[0] == 0.0f && sc[2] == 0.0f,
			  "a zero row as the query: every row scores 0, the first by index, as the exact scan ranks them");
		nr[0] = NAN;
		CHECK(gnn_hnsw_search(ix, e, nr, 2, 0, 3, 10, idx, sc) == GNN_HNSW_EXACT,
			  "a row of no finite norm as the query: the exact scan is asked for");
		nr[0] = 0.0f;
		CHECK(gnn_hnsw_search(ix, e, nr, 2, 3, 3, 10, idx, sc) == 3 && idx[0] == 1 && idx[1] == 2 && idx[2] == 0,
			  "the zero row is a candidate with score 0 (ranked last)");
		CHECK(gnn_hnsw_search(ix, e, nr, 2, 4, 3, 10, idx, sc) == -1 &&
			  gnn_hnsw_search(ix, e, nr, 2, -1, 3, 10, idx, sc) == -1 &&
			  gnn_hnsw_search(ix, e, nr, 2, 1, -1, 10, idx, sc) == -1 &&
			  gnn_hnsw_search(ix, e, nr, 2, 1, 0, 10, idx, sc) == 0,
			  "query rows outside the table and k < 0 are refused; k = 0 answers nothing");
		CHECK(gnn_hnsw_size(0, NULL, &bytes, &err) == GNN_ERR_INVALID &&
			  gnn_hnsw_size(GNN_HNSW_MAX_ROWS + 1, NULL, &bytes, &err) == GNN_ERR_INVALID &&
			  gnn_hnsw_size(10, &p, &bytes, &err) == GNN_ERR_INVALID,
			  "no rows, too many rows, m too large: refused (%s)", err.msg);
		CHECK(gnn_hnsw_build(e, nr, 4, 2, NULL, ix, 8, &err) == GNN_ERR_DIMENSION, "a block too small: refused");
		free(ix);
		free(nr);
	}

	/* a stop request ends the build */
	{
		int64_t		n = 20000;
		float	   *e = make_rows(n, 8, 10, 0.3f, 0, 0);
		float	   *nr = norms_of(e, n, 8);
		gnn_hnsw_params p = {.m = 8, .nthreads = 2};
		gnn_error	err;
		size_t		bytes;
		void	   *buf;

		(void) gnn_hnsw_size(n, &p, &bytes, &err);
		buf = malloc(bytes);
		p.should_stop = stop_now;
		CHECK(gnn_hnsw_build(e, nr, n, 8, &p, buf, bytes, &err) == GNN_ERR_CANCELLED &&
			  !gnn_hnsw_valid(buf, bytes, n), "should_stop stops the build; the block is not an index (%s)", err.msg);
		free(buf);
		free(e);
		free(nr);
	}
	return check_done();
}

