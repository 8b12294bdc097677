/*
 * test_topk: gnn_topk_cosine against a brute-force full sort of every score
 * (gnn_cosine), indices and scores identical: many sizes, k (0, 1, n-1, n
 * and beyond), widths, thread counts; duplicate rows (ties broken by the
 * lower index), zero rows (score 0), a NaN row (ranks last).
 */
#include "check.h"
#include "infer/topk.h"

#include <math.h>

static gnn_rng rng;

typedef struct ref
{
	float		s;
	int64_t		i;
} ref;

/* descending score with NaN last, then ascending index (written apart from topk.c's) */
static int
cmp_ref(const void *pa, const void *pb)
{
	const ref  *a = pa,
			   *b = pb;
	bool		na = isnan(a->s),
				nb = isnan(b->s);

	if (na != nb)
		return na ? 1 : -1;
	if (!na && a->s != b->s)
		return a->s > b->s ? -1 : 1;
	return a->i < b->i ? -1 : a->i > b->i;
}

static bool
same_float(float a, float b)
{
	return memcmp(&a, &b, sizeof(float)) == 0;
}

/* emb with about `dups` of its rows copies of earlier ones, `zeros` zero rows, optionally a NaN row */
static float *
make_emb(int64_t n, int32_t dim, double dups, double zeros, bool nan_row, float **norms_out)
{
	float	   *e = malloc(sizeof(float) * n * dim + 4),
			   *norms = malloc(sizeof(float) * n + 4);

	for (int64_t i = 0; i < n; i++)
	{
		double		u = gnn_rng_double(&rng);

		for (int32_t k = 0; k < dim; k++)
			e[i * dim + k] = 2.0f * gnn_rng_float(&rng) - 1.0f;
		if (i > 0 && u < dups)
			memcpy(e + i * dim, e + gnn_rng_below(&rng, i) * dim, sizeof(float) * dim);
		else if (u < dups + zeros)
			memset(e + i * dim, 0, sizeof(float) * dim);
	}
	if (nan_row && n > 2)
		e[(n / 2) * dim] = NAN;
	for (int64_t i = 0; i < n; i++)
	{
		double		s = 0;

		for (int32_t k = 0; k < dim; k++)
			s += (double) e[i * dim + k] * e[i * dim + k];
		norms[i] = (float) sqrt(s);
	}
	*norms_out = norms;
	return e;
}

static bool
one_case(const float *e, const float *norms, int64_t n, int32_t dim, int64_t q, int32_t k, int nt)
{
	int64_t		want = k < n - 1 ? k : n - 1,
				got;
	int64_t    *idx = malloc(sizeof(int64_t) * (want + 1));
	float	   *sc = malloc(sizeof(float) * (want + 1));
	ref		   *all = malloc(sizeof(ref) * n);
	int64_t		m = 0;
	bool		ok;

	for (int64_t i = 0; i < n; i++)
		if (i != q)
		{
			all[m].s = gnn_cosine(e + q * dim, e + i * dim, dim, norms[q], norms[i]);
			all[m++].i = i;
		}
	qsort(all, m, sizeof(ref), cmp_ref);
	got = gnn_topk_cosine(e, norms, n, dim, q, k, nt, idx, sc);
	ok = got == want;
	for (int64_t j = 0; ok && j < want; j++)
		ok = idx[j] == all[j].i && same_float(sc[j], all[j].s);
	if (!ok)
		NOTE("n %lld dim %d q %lld k %d threads %d: got %lld (want %lld)%s", (long long) n, dim,
			 (long long) q, k, nt, (long long) got, (long long) want, got == want ? ", rows differ" : "");
	/* the bf16 scan with exact re-scoring gives the very same answer */
	{
		uint16_t   *e16 = malloc(sizeof(uint16_t) * n * dim + 2);
		int64_t    *idx2 = malloc(sizeof(int64_t) * (want + 1));
		float	   *sc2 = malloc(sizeof(float) * (want + 1));
		int64_t		got2;
		bool		ok2;

		gnn_to_bf16(e, n * dim, e16);
		got2 = gnn_topk_cosine_bf16(e, e16, norms, n, dim, q, k, nt, idx2, sc2);
		ok2 = got2 == want;
		for (int64_t j = 0; ok2 && j < want; j++)
			ok2 = idx2[j] == all[j].i && same_float(sc2[j], all[j].s);
		if (!ok2)
			NOTE("bf16: n %lld dim %d q %lld k %d threads %d: got %lld (want %lld): first row %lld %.9g, want %lld %.9g",
				 (long long) n, dim, (long long) q, k, nt, (long long) got2, (long long) want,
				 (long long) (got2 > 0 ? idx2[0] : -1), got2 > 0 ? sc2[0] : 0.0,
				 (long long) (want > 0 ? all[0].i : -1), want > 0 ? all[0].s : 0.0);
		ok &= ok2;
		free(e16);
		free(idx2);
		free(sc2);
	}
	free(idx);
	free(sc);
	free(all);
	return ok;
}

int
main(void)
{
	static const int64_t ns[] = {1, 2, 3, 9, 64, 257, 1000, 20000, 70001};
	static const int32_t dims[] = {1, 3, 8, 17, 64};
	static const int threads[] = {1, 2, 3, 7};

	gnn_rng_seed(&rng, 7);
	for (size_t a = 0; a < sizeof(ns) / sizeof(ns[0]); a++)
		for (size_t b = 0; b < sizeof(dims) / sizeof(dims[0]); b++)
		{
			int64_t		n = ns[a];
			int32_t		dim = dims[b];
			float	   *norms;
			float	   *e = make_emb(n, dim, 0.2, 0.05, b == 2, &norms);
			int32_t		ks[] = {0, 1, 2, 10, 100, (int32_t) (n - 1), (int32_t) n, (int32_t) n + 7};
			int			cases = 0,
						bad = 0;

			if (n > 20000 && dim > 17)
			{
				free(e);
				free(norms);
				continue;		/* brute force on the big ones is slow under the sanitizers */
			}
			for (size_t c = 0; c < sizeof(ks) / sizeof(ks[0]); c++)
				for (size_t d = 0; d < sizeof(threads) / sizeof(threads[0]); d++)
					for (int r = 0; r < 2; r++)
					{
						/* the first query is a row with duplicates, the next random */
						int64_t		q = r == 0 ? 0 : (int64_t) gnn_rng_below(&rng, n);

						cases++;
						bad += !one_case(e, norms, n, dim, q, ks[c], threads[d]);
					}
			CHECK(bad == 0, "n %lld dim %d (duplicates, zero rows%s): %d cases of k and threads = full sort",
				  (long long) n, dim, b == 2 ? ", a NaN row" : "", cases);
			free(e);
			free(norms);
		}

	/* ties everywhere: all rows equal, so the order is by index */
	{
		int64_t		n = 5000,
					idx[50];
		float	   *e = malloc(sizeof(float) * n * 4),
				   *norms = malloc(sizeof(float) * n),
					sc[50];
		bool		ok = true;

		for (int64_t i = 0; i < n * 4; i++)
			e[i] = 0.5f;
		for (int64_t i = 0; i < n; i++)
			norms[i] = 1.0f;
		for (int nt = 1; nt <= 4; nt++)
		{
			ok &= gnn_topk_cosine(e, norms, n, 4, 3, 50, nt, idx, sc) == 50;
			for (int j = 0; j < 50; j++)
				ok &= idx[j] == (j < 3 ? j : j + 1) && sc[j] == sc[0];
		}
		CHECK(ok, "all rows equal: the lowest indices, q skipped, for 1-4 threads");
		free(e);
		free(norms);
	}

	/* zero norms score 0 and are still candidates */
	{
		float		e[3 * 2] = {1, 0, 0, 0, -1, 0},
					norms[3] = {1, 0, 1},
					sc[2];
		int64_t		idx[2];

		CHECK(gnn_topk_cosine(e, norms, 3, 2, 0, 5, 1, idx, sc) == 2 &&
			  idx[0] == 1 && sc[0] == 0.0f && idx[1] == 2 && sc[1] == -1.0f,
			  "a zero row scores 0, above an opposite row at -1");
		CHECK(gnn_topk_cosine(e, norms, 3, 2, 1, 5, 1, idx, sc) == 2 && sc[0] == 0.0f && sc[1] == 0.0f &&
			  idx[0] == 0 && idx[1] == 2, "a zero query scores 0 with everyone");
		CHECK(gnn_topk_cosine(e, norms, 3, 2, 3, 1, 1, idx, sc) == -1 &&
			  gnn_topk_cosine(e, norms, 3, 2, -1, 1, 1, idx, sc) == -1 &&
			  gnn_topk_cosine(e, norms, 3, 2, 0, -1, 1, idx, sc) == -1 &&
			  gnn_topk_cosine(e, norms, 3, 0, 0, 1, 1, idx, sc) == -1 &&
			  gnn_topk_cosine(e, norms, 0, 2, 0, 1, 1, idx, sc) == -1,
			  "q out of range, k < 0, dim < 1, n < 1: -1");
		CHECK(gnn_topk_cosine(e, norms, 1, 2, 0, 3, 1, idx, sc) == 0, "a single row has no neighbours");
	}

	/* dot-product ranking with exclusions (gnn.recommend): against a full sort by gnn_dot */
	{
		int64_t		n = 3001;
		int32_t		dim = 12;
		float	   *norms;
		float	   *e = make_emb(n, dim, 0.2, 0.05, false, &norms);
		float		q[12];
		int64_t    *ex = malloc(sizeof(int64_t) * n),
				   *idx = malloc(sizeof(int64_t) * n),
				   *ref = malloc(sizeof(int64_t) * n);
		float	   *sc = malloc(sizeof(float) * n),
				   *rs = malloc(sizeof(float) * n);
		int64_t		nex = 0;
		int			bad = 0;

		for (int j = 0; j < dim; j++)
			q[j] = (float) gnn_rng_double(&rng) - 0.5f;
		for (int64_t i = 0; i < n; i += 1 + (int64_t) gnn_rng_below(&rng, 9))
			ex[nex++] = i;
		for (int k = 0; k <= 40; k += 7)
			for (int nt = 1; nt <= 3; nt++)
			{
				int64_t		got = gnn_topk_dot(q, e, n, dim, ex, nex, k, nt, idx, sc);
				int64_t		m = 0;

				/* brute force: every row not excluded, by score then index */
				for (int64_t i = 0, x = 0; i < n; i++)
				{
					if (x < nex && ex[x] == i)
					{
						x++;
						continue;
					}
					ref[m] = i;
					rs[m++] = gnn_dot(q, e + i * dim, dim);
				}
				for (int64_t a = 1; a < m; a++)
					for (int64_t b = a; b > 0 && (rs[b] > rs[b - 1] || (rs[b] == rs[b - 1] && ref[b] < ref[b - 1])); b--)
					{
						float		ts = rs[b];
						int64_t		ti = ref[b];

						rs[b] = rs[b - 1];
						ref[b] = ref[b - 1];
						rs[b - 1] = ts;
						ref[b - 1] = ti;
					}
				if (got != (k < m ? k : m))
					bad++;
				for (int64_t j = 0; j < got; j++)
					bad += idx[j] != ref[j] || sc[j] != rs[j];
			}
		CHECK(bad == 0, "top-k by dot product, %lld of %lld rows excluded: = a full sort, 1-3 threads",
			  (long long) nex, (long long) n);
		CHECK(gnn_topk_dot(q, e, n, dim, ex, nex, 5, 1, idx, sc) == 5 &&
			  gnn_topk_dot(q, e, 2, dim, (int64_t[]) {0, 1}, 2, 5, 1, idx, sc) == 0 &&
			  gnn_topk_dot(q, e, 3, dim, (int64_t[]) {1, 1}, 2, 5, 1, idx, sc) == -1 &&
			  gnn_topk_dot(q, e, 3, 0, NULL, 0, 5, 1, idx, sc) == -1,
			  "every row excluded: none; exclusions not ascending, dim 0: -1");
		free(e);
		free(norms);
		free(ex);
		free(idx);
		free(ref);
		free(sc);
		free(rs);
	}
	return check_done();
}
