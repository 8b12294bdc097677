/*
 * test_cuda_parity: every backend op on the CPU reference backend and on
 * the CUDA backend, same random inputs, outputs compared within float
 * tolerances (argmax, dropout masks and counts exactly).
 *
 * The CUDA backend comes from gnn_backend_cuda_load (path: env GNN_CUDA_SO,
 * else kernels/gnn_cuda.so).  Where it cannot be loaded (no .so, no GPU,
 * no driver) the test prints a TAP skip with the reason and exits 0.
 * GNN_PARITY_SELFTEST=1 runs the whole comparison CPU against a second CPU
 * instance instead, which checks the harness itself on machines without a
 * GPU.
 *
 * Written by the CUDA side alongside core's test_backend_parity: this one
 * aims at the GPU kernels' edge cases - hub rows far longer than a warp,
 * bipartite blocks (n_dst < n_src), rows without entries, float4 and scalar
 * lane paths (d % 4), argmax ties, duplicate scatter targets, zero sizes,
 * error returns, and the dispatch layer (timing, fault injection) on a
 * loaded backend.
 */
#include "check.h"
#include "nn/backend.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static gnn_backend *ref;		/* CPU */
static gnn_backend *tst;		/* CUDA (or CPU in self-test mode) */
static gnn_rng rng;

/* ------------------------------------------------------------------ helpers */

static float
frand(float lo, float hi)
{
	return lo + (hi - lo) * gnn_rng_float(&rng);
}

static float *
hrand(int64_t n, float lo, float hi)
{
	float	   *p = malloc(sizeof(float) * (n > 0 ? n : 1));

	for (int64_t i = 0; i < n; i++)
		p[i] = frand(lo, hi);
	return p;
}

static void *
up(gnn_backend *be, const void *h, size_t bytes)
{
	void	   *d = NULL;

	if (gnn_backend_alloc(be, bytes, &d) != GNN_OK)
	{
		NOTE("alloc failed on %s: %s", be->name, be->err.msg);
		exit(1);
	}
	if (h && bytes && gnn_backend_copy_h2d(be, d, h, bytes) != GNN_OK)
	{
		NOTE("copy_h2d failed on %s: %s", be->name, be->err.msg);
		exit(1);
	}
	return d;
}

static void
down(gnn_backend *be, void *h, const void *d, size_t bytes)
{
	if (bytes && gnn_backend_copy_d2h(be, h, d, bytes) != GNN_OK)
	{
		NOTE("copy_d2h failed on %s: %s", be->name, be->err.msg);
		exit(1);
	}
}

/* a pair of device copies of one host array */
typedef struct dpair
{
	void	   *a;				/* on ref */
	void	   *b;				/* on tst */
	size_t		bytes;
} dpair;

static dpair
pup(const void *h, size_t bytes)
{
	dpair		p = {up(ref, h, bytes), up(tst, h, bytes), bytes};

	return p;
}

static void
pfree(dpair *p)
{
	gnn_backend_free(ref, p->a);
	gnn_backend_free(tst, p->b);
	p->a = p->b = NULL;
}

/*
 * compare a float output of both backends: |a-b| <= atol * scale[i / width]
 * + rtol*|a| (scale NULL: 1)
 */
static void
cmp_fs(const char *name, dpair *p, int64_t n, double rtol, double atol, const double *scale, int64_t width)
{
	float	   *a = malloc(sizeof(float) * (n > 0 ? n : 1));
	float	   *b = malloc(sizeof(float) * (n > 0 ? n : 1));
	double		worst = 0;
	int64_t		bad = -1;

	down(ref, a, p->a, sizeof(float) * n);
	down(tst, b, p->b, sizeof(float) * n);
	for (int64_t i = 0; i < n; i++)
	{
		double		diff = fabs((double) a[i] - (double) b[i]);
		double		lim = atol * (scale ? scale[i / width] : 1) + rtol * fabs((double) a[i]);

		if (!(diff <= lim) && bad < 0)
			bad = i;
		if (diff > worst)
			worst = diff;
	}
	if (bad >= 0)
		CHECK(0, "%s: element %lld cpu %.9g vs %s %.9g (max abs diff %.3g)", name,
			  (long long) bad, a[bad], tst->name, b[bad], worst);
	else
		CHECK(1, "%s (%lld values, max abs diff %.3g)", name, (long long) n, worst);
	free(a);
	free(b);
}

static void
cmp_f(const char *name, dpair *p, int64_t n, double rtol, double atol)
{
	cmp_fs(name, p, n, rtol, atol, NULL, 1);
}

static void
cmp_i32(const char *name, dpair *p, int64_t n)
{
	int32_t    *a = malloc(sizeof(int32_t) * (n > 0 ? n : 1));
	int32_t    *b = malloc(sizeof(int32_t) * (n > 0 ? n : 1));
	int64_t		bad = -1;

	down(ref, a, p->a, sizeof(int32_t) * n);
	down(tst, b, p->b, sizeof(int32_t) * n);
	for (int64_t i = 0; i < n && bad < 0; i++)
		if (a[i] != b[i])
			bad = i;
	if (bad >= 0)
		CHECK(0, "%s: element %lld cpu %d vs %s %d", name, (long long) bad, a[bad], tst->name, b[bad]);
	else
		CHECK(1, "%s (%lld values, exact)", name, (long long) n);
	free(a);
	free(b);
}

static void
ok_both(const char *name, gnn_status sa, gnn_status sb)
{
	if (sa != GNN_OK || sb != GNN_OK)
		CHECK(0, "%s runs: cpu %s (%s), %s %s (%s)", name, gnn_status_name(sa), ref->err.msg,
			  tst->name, gnn_status_name(sb), tst->err.msg);
}

/* ------------------------------------------------------------------ sparse fixtures */

typedef struct hcsr
{
	int64_t		n_rows,
				n_cols,
				nnz;
	int64_t    *indptr;
	int32_t    *indices;
	float	   *values;
	int64_t    *t_indptr;
	int32_t    *t_indices;
	int64_t    *t_perm;
	/*
	 * per row / column: 2 sqrt(1 + degree), the factor on a comparison's
	 * atol for an output that sums over a row's (a column's) entries:
	 * summed in another order, n terms round apart by about sqrt(n) ulps of
	 * their size (a hub row of 2500 terms by some 1e-5 in spmm)
	 */
	double	   *row_tol,
			   *col_tol;
} hcsr;

/*
 * Random block: row i gets a degree from a skewed draw (a few hubs of
 * degree up to max_deg, some empty rows), distinct sorted columns.
 */
static void
hcsr_make(hcsr *h, int64_t n_rows, int64_t n_cols, int64_t max_deg)
{
	int64_t		cap = 0;
	char	   *seen = calloc(n_cols > 0 ? n_cols : 1, 1);

	h->n_rows = n_rows;
	h->n_cols = n_cols;
	h->indptr = malloc(sizeof(int64_t) * (n_rows + 1));
	h->indptr[0] = 0;
	h->indices = NULL;
	for (int64_t i = 0; i < n_rows; i++)
	{
		double		u = gnn_rng_double(&rng);
		int64_t		deg = u < 0.1 ? 0 : u < 0.97 ? (int64_t) (1 + 8 * gnn_rng_double(&rng))
			: (int64_t) (max_deg * gnn_rng_double(&rng));
		int64_t		k = 0;

		if (deg > n_cols)
			deg = n_cols;
		if (h->indptr[i] + deg > cap)
		{
			cap = 2 * (h->indptr[i] + deg) + 16;
			h->indices = realloc(h->indices, sizeof(int32_t) * cap);
		}
		while (k < deg)
		{
			int32_t		j = (int32_t) gnn_rng_below(&rng, (uint64_t) n_cols);

			if (!seen[j])
			{
				seen[j] = 1;
				h->indices[h->indptr[i] + k++] = j;
			}
		}
		/* sort the row, clear marks */
		for (int64_t a = 1; a < deg; a++)
			for (int64_t b = a; b > 0 && h->indices[h->indptr[i] + b - 1] > h->indices[h->indptr[i] + b]; b--)
			{
				int32_t		t = h->indices[h->indptr[i] + b];

				h->indices[h->indptr[i] + b] = h->indices[h->indptr[i] + b - 1];
				h->indices[h->indptr[i] + b - 1] = t;
			}
		for (int64_t a = 0; a < deg; a++)
			seen[h->indices[h->indptr[i] + a]] = 0;
		h->indptr[i + 1] = h->indptr[i] + deg;
	}
	h->nnz = h->indptr[n_rows];
	if (!h->indices)
		h->indices = malloc(sizeof(int32_t));
	h->values = hrand(h->nnz, 0.1f, 1.0f);
	/* transpose by counting sort (rows ascending within a column) */
	h->t_indptr = calloc(n_cols + 1, sizeof(int64_t));
	h->t_indices = malloc(sizeof(int32_t) * (h->nnz + 1));
	h->t_perm = malloc(sizeof(int64_t) * (h->nnz + 1));
	for (int64_t e = 0; e < h->nnz; e++)
		h->t_indptr[h->indices[e] + 1]++;
	for (int64_t j = 0; j < n_cols; j++)
		h->t_indptr[j + 1] += h->t_indptr[j];
	{
		int64_t    *fill = malloc(sizeof(int64_t) * (n_cols + 1));

		memcpy(fill, h->t_indptr, sizeof(int64_t) * (n_cols + 1));
		for (int64_t i = 0; i < n_rows; i++)
			for (int64_t e = h->indptr[i]; e < h->indptr[i + 1]; e++)
			{
				int64_t		t = fill[h->indices[e]]++;

				h->t_indices[t] = (int32_t) i;
				h->t_perm[t] = e;
			}
		free(fill);
	}
	h->row_tol = malloc(sizeof(double) * (n_rows + 1));
	h->col_tol = malloc(sizeof(double) * (n_cols + 1));
	for (int64_t i = 0; i < n_rows; i++)
		h->row_tol[i] = 2 * sqrt(1.0 + (double) (h->indptr[i + 1] - h->indptr[i]));
	for (int64_t j = 0; j < n_cols; j++)
		h->col_tol[j] = 2 * sqrt(1.0 + (double) (h->t_indptr[j + 1] - h->t_indptr[j]));
	free(seen);
}

static void
hcsr_free(hcsr *h)
{
	free(h->indptr);
	free(h->indices);
	free(h->values);
	free(h->t_indptr);
	free(h->t_indices);
	free(h->t_perm);
	free(h->row_tol);
	free(h->col_tol);
}

/* the block on one backend */
typedef struct dcsr
{
	gnn_csr		c;
	void	   *p[6];
} dcsr;

static void
dcsr_up(gnn_backend *be, const hcsr *h, bool with_values, dcsr *d)
{
	memset(d, 0, sizeof(*d));
	d->c.n_rows = h->n_rows;
	d->c.n_cols = h->n_cols;
	d->c.nnz = h->nnz;
	d->c.indptr = d->p[0] = up(be, h->indptr, sizeof(int64_t) * (h->n_rows + 1));
	d->c.indices = d->p[1] = up(be, h->indices, sizeof(int32_t) * h->nnz);
	d->c.values = with_values ? (d->p[2] = up(be, h->values, sizeof(float) * h->nnz)) : NULL;
	d->c.t_indptr = d->p[3] = up(be, h->t_indptr, sizeof(int64_t) * (h->n_cols + 1));
	d->c.t_indices = d->p[4] = up(be, h->t_indices, sizeof(int32_t) * h->nnz);
	d->c.t_perm = d->p[5] = up(be, h->t_perm, sizeof(int64_t) * h->nnz);
}

static void
dcsr_free(gnn_backend *be, dcsr *d)
{
	for (int i = 0; i < 6; i++)
		gnn_backend_free(be, d->p[i]);
}

/* ------------------------------------------------------------------ op tests */

static void
test_memory(void)
{
	int64_t		n = 1000;
	float	   *h = hrand(n, -1, 1);
	float	   *back = malloc(sizeof(float) * n);
	void	   *d = up(tst, h, sizeof(float) * n),
			   *d2 = up(tst, NULL, sizeof(float) * n);

	CHECK(((uintptr_t) d & 255) == 0, "alloc is 256-byte aligned");
	CHECK(gnn_backend_copy_d2d(tst, d2, d, sizeof(float) * n) == GNN_OK, "copy_d2d");
	down(tst, back, d2, sizeof(float) * n);
	CHECK(memcmp(back, h, sizeof(float) * n) == 0, "h2d -> d2d -> d2h round trip");
	CHECK(gnn_backend_memset(tst, d2, 0, sizeof(float) * n) == GNN_OK, "memset");
	down(tst, back, d2, sizeof(float) * n);
	{
		int			zero = 1;

		for (int64_t i = 0; i < n; i++)
			zero &= back[i] == 0.0f;
		CHECK(zero, "memset zeroes");
	}
	CHECK(gnn_backend_copy_h2d(tst, d, h, 0) == GNN_OK && gnn_backend_memset(tst, d, 0, 0) == GNN_OK,
		  "zero-byte copy and memset");
	gnn_backend_free(tst, d);
	gnn_backend_free(tst, d2);
	gnn_backend_free(tst, NULL);
	free(h);
	free(back);
}

static void
test_gemm(void)
{
	int64_t		sizes[][3] = {{7, 5, 3}, {64, 33, 17}, {1, 1, 1}, {130, 70, 129}, {5, 4, 0}};

	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++)
		for (int ta = 0; ta < 2; ta++)
			for (int tb = 0; tb < 2; tb++)
				for (int bi = 0; bi < 2; bi++)
				{
					int64_t		m = sizes[s][0],
								n = sizes[s][1],
								k = sizes[s][2];
					int64_t		lda = (ta ? m : k) + 2,
								ldb = (tb ? k : n) + 1,
								ldc = n + 3;
					float		beta = bi ? 0.5f : 0.0f;
					float	   *A = hrand((ta ? k : m) * lda, -1, 1);
					float	   *B = hrand((tb ? n : k) * ldb, -1, 1);
					float	   *C = hrand(m * ldc, -1, 1);
					dpair		a = pup(A, sizeof(float) * (ta ? k : m) * lda);
					dpair		b = pup(B, sizeof(float) * (tb ? n : k) * ldb);
					dpair		c = pup(C, sizeof(float) * m * ldc);
					char		name[128];

					ok_both("gemm",
							gnn_backend_gemm(ref, ta, tb, m, n, k, 1.5f, a.a, lda, b.a, ldb, beta, c.a, ldc),
							gnn_backend_gemm(tst, ta, tb, m, n, k, 1.5f, a.b, lda, b.b, ldb, beta, c.b, ldc));
					snprintf(name, sizeof(name), "gemm %lldx%lldx%lld trans %d%d beta %g",
							 (long long) m, (long long) n, (long long) k, ta, tb, beta);
					cmp_f(name, &c, m * ldc, 1e-4, 1e-4 * (1 + k));
					pfree(&a);
					pfree(&b);
					pfree(&c);
					free(A);
					free(B);
					free(C);
				}
}

/* gemm_dropout: the CPU's blocked product and the GPU's copy-then-cuBLAS agree */
static void
test_gemm_dropout(void)
{
	int64_t		sizes[][3] = {{300, 16, 200}, {130, 70, 129}, {9, 40, 5}};

	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++)
		for (int ta = 0; ta < 2; ta++)
		{
			int64_t		m = sizes[s][0],
						n = sizes[s][1],
						k = sizes[s][2];
			int64_t		lda = (ta ? m : k) + 2,
						ldb = n + 1,
						ldc = n + 3;
			float	   *A = hrand((ta ? k : m) * lda, -1, 1);
			float	   *B = hrand(k * ldb, -1, 1);
			float	   *C = hrand(m * ldc, -1, 1);
			dpair		a = pup(A, sizeof(float) * (ta ? k : m) * lda);
			dpair		b = pup(B, sizeof(float) * k * ldb);
			dpair		c = pup(C, sizeof(float) * m * ldc);
			char		name[128];

			ok_both("gemm_dropout",
					gnn_backend_gemm_dropout(ref, ta, m, n, k, 1.5f, a.a, lda, 0.4f, 77 + s, b.a, ldb, 0.5f,
											 c.a, ldc),
					gnn_backend_gemm_dropout(tst, ta, m, n, k, 1.5f, a.b, lda, 0.4f, 77 + s, b.b, ldb, 0.5f,
											 c.b, ldc));
			snprintf(name, sizeof(name), "gemm_dropout %lldx%lldx%lld trans %d (same mask)",
					 (long long) m, (long long) n, (long long) k, ta);
			cmp_f(name, &c, m * ldc, 1e-4, 1e-4 * (1 + k));
			pfree(&a);
			pfree(&b);
			pfree(&c);
			free(A);
			free(B);
			free(C);
		}
}

static void
test_spmm(const hcsr *h, const char *tag)
{
	int64_t		dims[] = {1, 3, 4, 16, 37, 64, 128};
	float	   *rs = hrand(h->n_rows, 0.2f, 1.5f),
			   *cs = hrand(h->n_cols, 0.2f, 1.5f);
	dpair		prs = pup(rs, sizeof(float) * h->n_rows),
				pcs = pup(cs, sizeof(float) * h->n_cols);

	for (int wv = 0; wv < 2; wv++)
	{
		dcsr		da,
					db;

		dcsr_up(ref, h, wv, &da);
		dcsr_up(tst, h, wv, &db);
		for (size_t di = 0; di < sizeof(dims) / sizeof(dims[0]); di++)
			for (int agg = 0; agg < 2; agg++)
				for (int sc = 0; sc < 2; sc++)
					for (int bi = 0; bi < 3; bi++)
					{
						int64_t		d = dims[di];
						float		beta = bi == 0 ? 0.0f : bi == 1 ? 1.0f : 0.5f;
						float	   *X = hrand(h->n_cols * d, -1, 1),
								   *G = hrand(h->n_rows * d, -1, 1),
								   *Y = hrand(h->n_rows * d, -1, 1),
								   *YT = hrand(h->n_cols * d, -1, 1);
						dpair		x = pup(X, sizeof(float) * h->n_cols * d),
									g = pup(G, sizeof(float) * h->n_rows * d),
									y = pup(Y, sizeof(float) * h->n_rows * d),
									yt = pup(YT, sizeof(float) * h->n_cols * d);
						char		name[160];

						ok_both("spmm",
								gnn_backend_spmm(ref, &da.c, agg, sc ? prs.a : NULL, sc ? pcs.a : NULL, x.a, d, beta, y.a),
								gnn_backend_spmm(tst, &db.c, agg, sc ? prs.b : NULL, sc ? pcs.b : NULL, x.b, d, beta, y.b));
						ok_both("spmm_t",
								gnn_backend_spmm_t(ref, &da.c, agg, sc ? prs.a : NULL, sc ? pcs.a : NULL, g.a, d, beta, yt.a),
								gnn_backend_spmm_t(tst, &db.c, agg, sc ? prs.b : NULL, sc ? pcs.b : NULL, g.b, d, beta, yt.b));
						snprintf(name, sizeof(name), "%s spmm d %lld %s values %d scales %d beta %g",
								 tag, (long long) d, agg ? "mean" : "sum", wv, sc, beta);
						cmp_fs(name, &y, h->n_rows * d, 1e-4, 1e-5, h->row_tol, d);
						snprintf(name, sizeof(name), "%s spmm_t d %lld %s values %d scales %d beta %g",
								 tag, (long long) d, agg ? "mean" : "sum", wv, sc, beta);
						cmp_fs(name, &yt, h->n_cols * d, 1e-4, 1e-5, h->col_tol, d);
						pfree(&x);
						pfree(&g);
						pfree(&y);
						pfree(&yt);
						free(X);
						free(G);
						free(Y);
						free(YT);
					}
		dcsr_free(ref, &da);
		dcsr_free(tst, &db);
	}
	pfree(&prs);
	pfree(&pcs);
	free(rs);
	free(cs);
}

static void
test_rows(void)
{
	int64_t		nsrc = 300,
				n = 1000;

	for (int64_t d = 1; d <= 68; d += 67)
	{
		float	   *S = hrand(nsrc * d, -1, 1),
				   *R = hrand(n * d, -1, 1);
		int32_t    *idx = malloc(sizeof(int32_t) * n);
		dpair		s,
					r,
					pi,
					o;

		for (int64_t k = 0; k < n; k++)	/* many duplicates, one hot row */
			idx[k] = k % 7 == 0 ? 5 : (int32_t) gnn_rng_below(&rng, (uint64_t) nsrc);
		s = pup(S, sizeof(float) * nsrc * d);
		r = pup(R, sizeof(float) * n * d);
		pi = pup(idx, sizeof(int32_t) * n);
		o = pup(NULL, sizeof(float) * n * d);
		ok_both("gather_rows", gnn_backend_gather_rows(ref, s.a, d, pi.a, n, o.a),
				gnn_backend_gather_rows(tst, s.b, d, pi.b, n, o.b));
		cmp_f(d == 1 ? "gather_rows d 1" : "gather_rows d 68", &o, n * d, 0, 0);
		ok_both("scatter_add_rows", gnn_backend_scatter_add_rows(ref, r.a, d, pi.a, n, s.a),
				gnn_backend_scatter_add_rows(tst, r.b, d, pi.b, n, s.b));
		cmp_f(d == 1 ? "scatter_add_rows d 1 (duplicates)" : "scatter_add_rows d 68 (duplicates)",
			  &s, nsrc * d, 1e-6, 1e-6);
		CHECK(gnn_backend_scatter_add_rows(tst, r.b, d, pi.b, 0, s.b) == GNN_OK &&
			  gnn_backend_gather_rows(tst, s.b, d, pi.b, 0, o.b) == GNN_OK, "rows: n = 0 is a no-op");
		pfree(&s);
		pfree(&r);
		pfree(&pi);
		pfree(&o);
		free(S);
		free(R);
		free(idx);
	}
}

static void
test_eltwise(void)
{
	int64_t		n = 100003;
	float	   *X = hrand(n, -3, 3),
			   *Y = hrand(n, -1, 1),
			   *D = hrand(n, -1, 1);
	dpair		x = pup(X, sizeof(float) * n),
				y = pup(Y, sizeof(float) * n),
				dy = pup(D, sizeof(float) * n),
				o = pup(NULL, sizeof(float) * n);
	char		name[96];

	for (int act = 0; act <= 3; act++)
	{
		float		param = act == 2 ? 1.0f : 0.2f;

		ok_both("act_forward", gnn_backend_act_forward(ref, act, param, x.a, o.a, n),
				gnn_backend_act_forward(tst, act, param, x.b, o.b, n));
		snprintf(name, sizeof(name), "act_forward %d", act);
		cmp_f(name, &o, n, 1e-6, 1e-7);
		ok_both("act_backward", gnn_backend_act_backward(ref, act, param, x.a, o.a, dy.a, o.a, n),
				gnn_backend_act_backward(tst, act, param, x.b, o.b, dy.b, o.b, n));
		snprintf(name, sizeof(name), "act_backward %d", act);
		cmp_f(name, &o, n, 1e-6, 1e-7);
	}
	for (int bi = 0; bi < 2; bi++)
	{
		ok_both("axpby", gnn_backend_axpby(ref, n, 0.7f, x.a, bi ? -0.3f : 0.0f, y.a),
				gnn_backend_axpby(tst, n, 0.7f, x.b, bi ? -0.3f : 0.0f, y.b));
		cmp_f(bi ? "axpby beta -0.3" : "axpby beta 0", &y, n, 1e-6, 1e-6);
	}
	for (int pi = 0; pi < 3; pi++)
	{
		float		p = pi == 0 ? 0.0f : pi == 1 ? 0.5f : 0.9f;

		ok_both("dropout_forward", gnn_backend_dropout_forward(ref, x.a, o.a, n, p, 1234 + pi),
				gnn_backend_dropout_forward(tst, x.b, o.b, n, p, 1234 + pi));
		snprintf(name, sizeof(name), "dropout_forward p %g (same mask)", p);
		cmp_f(name, &o, n, 0, 0);
		ok_both("dropout_backward", gnn_backend_dropout_backward(ref, dy.a, o.a, n, p, 99),
				gnn_backend_dropout_backward(tst, dy.b, o.b, n, p, 99));
		snprintf(name, sizeof(name), "dropout_backward p %g (same mask)", p);
		cmp_f(name, &o, n, 0, 0);
	}
	CHECK(gnn_backend_dropout_forward(tst, x.b, o.b, n, 1.0f, 1) == GNN_ERR_INVALID,
		  "dropout p = 1 is GNN_ERR_INVALID: %s", tst->err.msg);
	CHECK(gnn_backend_act_forward(tst, GNN_ACT_RELU, 0, x.b, o.b, 0) == GNN_OK &&
		  gnn_backend_axpby(tst, 0, 1, x.b, 1, y.b) == GNN_OK, "element-wise n = 0 is a no-op");
	pfree(&x);
	pfree(&y);
	pfree(&dy);
	pfree(&o);
	free(X);
	free(Y);
	free(D);
}

static void
test_bias(void)
{
	int64_t		shapes[][2] = {{1, 1}, {5, 7}, {1000, 33}, {3000, 64}, {0, 5}};

	for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++)
	{
		int64_t		rows = shapes[s][0],
					cols = shapes[s][1];
		float	   *Y = hrand(rows * cols, -1, 1),
				   *B = hrand(cols, -1, 1),
				   *DB = hrand(cols, -1, 1);
		dpair		y = pup(Y, sizeof(float) * (rows * cols + 1)),
					b = pup(B, sizeof(float) * cols),
					db = pup(DB, sizeof(float) * cols);
		char		name[96];

		ok_both("add_bias", gnn_backend_add_bias(ref, y.a, b.a, rows, cols),
				gnn_backend_add_bias(tst, y.b, b.b, rows, cols));
		snprintf(name, sizeof(name), "add_bias %lldx%lld", (long long) rows, (long long) cols);
		cmp_f(name, &y, rows * cols, 0, 0);
		for (int bi = 0; bi < 2; bi++)
		{
			ok_both("bias_grad", gnn_backend_bias_grad(ref, y.a, rows, cols, bi ? 0.5f : 0.0f, db.a),
					gnn_backend_bias_grad(tst, y.b, rows, cols, bi ? 0.5f : 0.0f, db.b));
			snprintf(name, sizeof(name), "bias_grad %lldx%lld beta %d", (long long) rows, (long long) cols, bi);
			cmp_f(name, &db, cols, 1e-5, 1e-5);
		}
		pfree(&y);
		pfree(&b);
		pfree(&db);
		free(Y);
		free(B);
		free(DB);
	}
}

static void
test_softmax_xent(void)
{
	int64_t		cs[] = {1, 7, 40, 100};

	for (size_t ci = 0; ci < sizeof(cs) / sizeof(cs[0]); ci++)
	{
		int64_t		n = 777,
					c = cs[ci],
					nrows = 500;
		float	   *X = hrand(n * c, -4, 4);
		int32_t    *lab = malloc(sizeof(int32_t) * n),
				   *rows = malloc(sizeof(int32_t) * nrows);
		dpair		x,
					o,
					pl,
					pr,
					dl;
		float		la = 0,
					lb = 0;
		int64_t		ca = -1,
					cb = -2,
					na = -1,
					nb = -2;
		char		name[96];

		/* ties for the argmax rule: a few rows with duplicated maxima */
		for (int64_t i = 0; i < 20 && c > 1; i++)
			X[i * c + c - 1] = X[i * c] = 9.0f;
		for (int64_t i = 0; i < n; i++)
			lab[i] = i % 13 == 0 ? -1 : i % 17 == 0 ? (int32_t) c : (int32_t) gnn_rng_below(&rng, (uint64_t) c);
		for (int64_t r = 0; r < nrows; r++)
			rows[r] = (int32_t) gnn_rng_below(&rng, (uint64_t) n);
		x = pup(X, sizeof(float) * n * c);
		o = pup(NULL, sizeof(float) * n * c);
		pl = pup(lab, sizeof(int32_t) * n);
		pr = pup(rows, sizeof(int32_t) * nrows);
		dl = pup(X, sizeof(float) * n * c);	/* garbage in: must be overwritten */
		ok_both("softmax_rows", gnn_backend_softmax_rows(ref, x.a, o.a, n, c),
				gnn_backend_softmax_rows(tst, x.b, o.b, n, c));
		snprintf(name, sizeof(name), "softmax_rows c %lld", (long long) c);
		cmp_f(name, &o, n * c, 1e-5, 1e-7);
		ok_both("softmax_rows in place", gnn_backend_softmax_rows(ref, o.a, o.a, n, c),
				gnn_backend_softmax_rows(tst, o.b, o.b, n, c));
		snprintf(name, sizeof(name), "softmax_rows in place c %lld", (long long) c);
		cmp_f(name, &o, n * c, 1e-5, 1e-7);
		ok_both("xent", gnn_backend_xent(ref, x.a, n, c, pl.a, pr.a, nrows, dl.a, &la, &ca, &na),
				gnn_backend_xent(tst, x.b, n, c, pl.b, pr.b, nrows, dl.b, &lb, &cb, &nb));
		CHECK(fabsf(la - lb) <= 1e-5f * (1 + fabsf(la)) && ca == cb && na == nb,
			  "xent c %lld: loss %.7g / %.7g, correct %lld / %lld, counted %lld / %lld",
			  (long long) c, la, lb, (long long) ca, (long long) cb, (long long) na, (long long) nb);
		snprintf(name, sizeof(name), "xent dlogits c %lld", (long long) c);
		cmp_f(name, &dl, n * c, 1e-4, 1e-7);
		ok_both("xent no grad", gnn_backend_xent(ref, x.a, n, c, pl.a, pr.a, nrows, NULL, &la, NULL, NULL),
				gnn_backend_xent(tst, x.b, n, c, pl.b, pr.b, nrows, NULL, &lb, NULL, NULL));
		CHECK(fabsf(la - lb) <= 1e-5f * (1 + fabsf(la)), "xent without outputs c %lld", (long long) c);
		pfree(&x);
		pfree(&o);
		pfree(&pl);
		pfree(&pr);
		pfree(&dl);
		free(X);
		free(lab);
		free(rows);
	}
	/* a bad row index is an error on both */
	{
		float		X[6] = {0};
		int32_t		lab[2] = {0, 1},
					rows[2] = {1, 5};
		dpair		x = pup(X, sizeof(X)),
					pl = pup(lab, sizeof(lab)),
					pr = pup(rows, sizeof(rows));
		float		l;

		CHECK(gnn_backend_xent(tst, x.b, 2, 3, pl.b, pr.b, 2, NULL, &l, NULL, NULL) == GNN_ERR_INVALID,
			  "xent row out of range is GNN_ERR_INVALID: %s", tst->err.msg);
		CHECK(gnn_backend_xent(tst, x.b, 2, 3, pl.b, pr.b, 0, NULL, &l, NULL, NULL) == GNN_OK && l == 0.0f,
			  "xent with no rows: loss 0");
		pfree(&x);
		pfree(&pl);
		pfree(&pr);
	}
}

static void
test_gat(const hcsr *h, const char *tag)
{
	int64_t		cfg[][2] = {{1, 7}, {8, 8}, {4, 5}, {2, 16}, {3, 1}};

	for (size_t ci = 0; ci < sizeof(cfg) / sizeof(cfg[0]); ci++)
	{
		int64_t		heads = cfg[ci][0],
					f = cfg[ci][1],
					hf = heads * f;
		int64_t		nr = h->n_rows,
					nc = h->n_cols,
					nnz = h->nnz;
		float	   *H = hrand(nc * hf, -1, 1),
				   *att = hrand(hf, -1, 1),
				   *dsv = hrand(nc * heads, -1, 1),
				   *dH0 = hrand(nc * hf, -1, 1),
				   *datt0 = hrand(hf, -1, 1),
				   *dal = hrand(nnz * heads, -1, 1),
				   *dout = hrand(nr * hf, -1, 1);
		dcsr		da,
					db;
		dpair		pH = pup(H, sizeof(float) * nc * hf),
					patt = pup(att, sizeof(float) * hf),
					ps = pup(NULL, sizeof(float) * nc * heads),
					pds = pup(dsv, sizeof(float) * nc * heads),
					pdH = pup(dH0, sizeof(float) * nc * hf),
					pdatt = pup(datt0, sizeof(float) * hf),
					pad = pup(NULL, sizeof(float) * (nr * heads + 1)),
					palpha = pup(NULL, sizeof(float) * (nnz * heads + 1)),
					pdal = pup(dal, sizeof(float) * (nnz * heads + 1)),
					pdsrc = pup(NULL, sizeof(float) * nc * heads),
					pddst = pup(NULL, sizeof(float) * (nr * heads + 1)),
					pout = pup(NULL, sizeof(float) * (nr * hf + 1)),
					pdout = pup(dout, sizeof(float) * (nr * hf + 1)),
					pdal2 = pup(NULL, sizeof(float) * (nnz * heads + 1)),
					pmean = pup(NULL, sizeof(float) * (nr * f + 1)),
					pdx = pup(NULL, sizeof(float) * (nr * hf + 1));
		char		name[128];

		dcsr_up(ref, h, false, &da);
		dcsr_up(tst, h, false, &db);
#define NAME(op) (snprintf(name, sizeof(name), "%s %s heads %lld f %lld", tag, op, (long long) heads, (long long) f), name)
		ok_both("gat_node_scores", gnn_backend_gat_node_scores(ref, pH.a, nc, heads, f, patt.a, ps.a),
				gnn_backend_gat_node_scores(tst, pH.b, nc, heads, f, patt.b, ps.b));
		cmp_f(NAME("gat_node_scores"), &ps, nc * heads, 1e-5, 1e-6);
		for (int bi = 0; bi < 2; bi++)
		{
			ok_both("gat_node_scores_backward",
					gnn_backend_gat_node_scores_backward(ref, pH.a, nc, heads, f, patt.a, pds.a, pdH.a, bi ? 1.0f : 0.0f, pdatt.a),
					gnn_backend_gat_node_scores_backward(tst, pH.b, nc, heads, f, patt.b, pds.b, pdH.b, bi ? 1.0f : 0.0f, pdatt.b));
			cmp_f(NAME(bi ? "gat_node_scores_backward dH (beta 1)" : "gat_node_scores_backward dH"), &pdH, nc * hf, 1e-5, 1e-6);
			cmp_f(NAME(bi ? "gat_node_scores_backward datt (beta 1)" : "gat_node_scores_backward datt"), &pdatt, hf, 1e-4, 1e-5);
		}
		/* a_dst: the first n_rows scores (destinations are the first sources) */
		ok_both("gat_node_scores dst", gnn_backend_gat_node_scores(ref, pH.a, nr, heads, f, pdatt.a, pad.a),
				gnn_backend_gat_node_scores(tst, pH.b, nr, heads, f, pdatt.b, pad.b));
		cmp_f(NAME("gat_node_scores dst"), &pad, nr * heads, 1e-4, 1e-5);
		ok_both("gat_edge_softmax", gnn_backend_gat_edge_softmax(ref, &da.c, heads, ps.a, pad.a, 0.2f, palpha.a),
				gnn_backend_gat_edge_softmax(tst, &db.c, heads, ps.b, pad.b, 0.2f, palpha.b));
		cmp_f(NAME("gat_edge_softmax"), &palpha, nnz * heads, 1e-4, 1e-6);
		ok_both("gat_edge_softmax_backward",
				gnn_backend_gat_edge_softmax_backward(ref, &da.c, heads, ps.a, pad.a, 0.2f, palpha.a, pdal.a, pdsrc.a, pddst.a),
				gnn_backend_gat_edge_softmax_backward(tst, &db.c, heads, ps.b, pad.b, 0.2f, palpha.b, pdal.b, pdsrc.b, pddst.b));
		cmp_fs(NAME("gat_edge_softmax_backward da_src"), &pdsrc, nc * heads, 1e-3, 1e-5, h->col_tol, heads);
		cmp_fs(NAME("gat_edge_softmax_backward da_dst"), &pddst, nr * heads, 1e-3, 1e-5, h->row_tol, heads);
		ok_both("gat_aggregate", gnn_backend_gat_aggregate(ref, &da.c, heads, f, palpha.a, pH.a, pout.a),
				gnn_backend_gat_aggregate(tst, &db.c, heads, f, palpha.b, pH.b, pout.b));
		cmp_fs(NAME("gat_aggregate"), &pout, nr * hf, 1e-4, 1e-6, h->row_tol, hf);
		for (int bi = 0; bi < 2; bi++)
		{
			ok_both("gat_aggregate_backward",
					gnn_backend_gat_aggregate_backward(ref, &da.c, heads, f, palpha.a, pH.a, pdout.a, bi ? 0.5f : 0.0f, pdH.a, pdal2.a),
					gnn_backend_gat_aggregate_backward(tst, &db.c, heads, f, palpha.b, pH.b, pdout.b, bi ? 0.5f : 0.0f, pdH.b, pdal2.b));
			cmp_fs(NAME(bi ? "gat_aggregate_backward dH (beta 0.5)" : "gat_aggregate_backward dH"), &pdH, nc * hf, 1e-4, 1e-6,
				   h->col_tol, hf);
			cmp_f(NAME("gat_aggregate_backward dalpha"), &pdal2, nnz * heads, 1e-4, 1e-6);
		}
		ok_both("head_mean", gnn_backend_head_mean(ref, pout.a, nr, heads, f, pmean.a),
				gnn_backend_head_mean(tst, pout.b, nr, heads, f, pmean.b));
		cmp_fs(NAME("head_mean"), &pmean, nr * f, 1e-4, 1e-6, h->row_tol, f);
		ok_both("head_mean_backward", gnn_backend_head_mean_backward(ref, pmean.a, nr, heads, f, pdx.a),
				gnn_backend_head_mean_backward(tst, pmean.b, nr, heads, f, pdx.b));
		cmp_fs(NAME("head_mean_backward"), &pdx, nr * hf, 1e-4, 1e-6, h->row_tol, hf);
#undef NAME
		dcsr_free(ref, &da);
		dcsr_free(tst, &db);
		pfree(&pH);
		pfree(&patt);
		pfree(&ps);
		pfree(&pds);
		pfree(&pdH);
		pfree(&pdatt);
		pfree(&pad);
		pfree(&palpha);
		pfree(&pdal);
		pfree(&pdsrc);
		pfree(&pddst);
		pfree(&pout);
		pfree(&pdout);
		pfree(&pdal2);
		pfree(&pmean);
		pfree(&pdx);
		free(H);
		free(att);
		free(dsv);
		free(dH0);
		free(datt0);
		free(dal);
		free(dout);
	}
}

static void
test_max_agg(const hcsr *h, const char *tag)
{
	int64_t		dims[] = {1, 5, 64};

	for (size_t di = 0; di < sizeof(dims) / sizeof(dims[0]); di++)
	{
		int64_t		d = dims[di];
		float	   *X = hrand(h->n_cols * d, -1, 1),
				   *DY = hrand(h->n_rows * d, -1, 1),
				   *DX = hrand(h->n_cols * d, -1, 1);
		dcsr		da,
					db;
		dpair		x,
					y,
					am,
					dy,
					dx;
		char		name[128];

		/* quantise X so ties happen: the first max must win on both */
		for (int64_t i = 0; i < h->n_cols * d; i++)
			X[i] = floorf(X[i] * 4) / 4;
		x = pup(X, sizeof(float) * h->n_cols * d);
		y = pup(NULL, sizeof(float) * (h->n_rows * d + 1));
		am = pup(NULL, sizeof(int32_t) * (h->n_rows * d + 1));
		dy = pup(DY, sizeof(float) * (h->n_rows * d + 1));
		dx = pup(DX, sizeof(float) * h->n_cols * d);
		dcsr_up(ref, h, false, &da);
		dcsr_up(tst, h, false, &db);
		ok_both("max_agg", gnn_backend_max_agg(ref, &da.c, x.a, d, y.a, am.a),
				gnn_backend_max_agg(tst, &db.c, x.b, d, y.b, am.b));
		snprintf(name, sizeof(name), "%s max_agg d %lld", tag, (long long) d);
		cmp_f(name, &y, h->n_rows * d, 0, 0);
		snprintf(name, sizeof(name), "%s max_agg argmax d %lld", tag, (long long) d);
		cmp_i32(name, &am, h->n_rows * d);
		for (int bi = 0; bi < 2; bi++)
		{
			ok_both("max_agg_backward",
					gnn_backend_max_agg_backward(ref, &da.c, dy.a, am.a, d, bi ? 1.0f : 0.0f, dx.a),
					gnn_backend_max_agg_backward(tst, &db.c, dy.b, am.b, d, bi ? 1.0f : 0.0f, dx.b));
			snprintf(name, sizeof(name), "%s max_agg_backward d %lld beta %d", tag, (long long) d, bi);
			cmp_f(name, &dx, h->n_cols * d, 1e-5, 1e-6);
		}
		dcsr_free(ref, &da);
		dcsr_free(tst, &db);
		pfree(&x);
		pfree(&y);
		pfree(&am);
		pfree(&dy);
		pfree(&dx);
		free(X);
		free(DY);
		free(DX);
	}
}

static void
test_optim(void)
{
	int64_t		n = 50001;
	float	   *W = hrand(n, -1, 1),
			   *G = hrand(n, -1, 1),
			   *Z = calloc(n, sizeof(float));
	dpair		w = pup(W, sizeof(float) * n),
				g = pup(G, sizeof(float) * n),
				m = pup(Z, sizeof(float) * n),
				v = pup(Z, sizeof(float) * n),
				buf = pup(Z, sizeof(float) * n);

	for (int64_t t = 1; t <= 3; t++)
		ok_both("adam_step",
				gnn_backend_adam_step(ref, w.a, g.a, m.a, v.a, n, 0.01f, 0.9f, 0.999f, 1e-8f, 5e-4f, t),
				gnn_backend_adam_step(tst, w.b, g.b, m.b, v.b, n, 0.01f, 0.9f, 0.999f, 1e-8f, 5e-4f, t));
	cmp_f("adam_step w (3 steps)", &w, n, 1e-5, 1e-6);
	cmp_f("adam_step m", &m, n, 1e-5, 1e-7);
	cmp_f("adam_step v", &v, n, 1e-5, 1e-9);
	CHECK(gnn_backend_adam_step(tst, w.b, g.b, m.b, v.b, n, 0.01f, 0.9f, 0.999f, 1e-8f, 0, 0) == GNN_ERR_INVALID,
		  "adam_step t = 0 is GNN_ERR_INVALID");
	for (int k = 0; k < 2; k++)
	{
		ok_both("sgd_step momentum", gnn_backend_sgd_step(ref, w.a, g.a, buf.a, n, 0.1f, 0.9f, 1e-3f),
				gnn_backend_sgd_step(tst, w.b, g.b, buf.b, n, 0.1f, 0.9f, 1e-3f));
		ok_both("sgd_step plain", gnn_backend_sgd_step(ref, w.a, g.a, NULL, n, 0.1f, 0.0f, 0.0f),
				gnn_backend_sgd_step(tst, w.b, g.b, NULL, n, 0.1f, 0.0f, 0.0f));
	}
	cmp_f("sgd_step w", &w, n, 1e-5, 1e-6);
	cmp_f("sgd_step momentum buffer", &buf, n, 1e-5, 1e-6);
	pfree(&w);
	pfree(&g);
	pfree(&m);
	pfree(&v);
	pfree(&buf);
	free(W);
	free(G);
	free(Z);
}

static void
test_empty(void)
{
	hcsr		h;
	dcsr		d;
	void	   *buf = up(tst, NULL, 4096);

	/* an empty block: zero rows, and rows without entries */
	hcsr_make(&h, 0, 5, 4);
	dcsr_up(tst, &h, true, &d);
	CHECK(gnn_backend_spmm(tst, &d.c, GNN_AGG_SUM, NULL, NULL, buf, 4, 0, buf) == GNN_OK &&
		  gnn_backend_gat_edge_softmax(tst, &d.c, 2, buf, buf, 0.2f, buf) == GNN_OK &&
		  gnn_backend_gat_aggregate(tst, &d.c, 2, 2, buf, buf, buf) == GNN_OK &&
		  gnn_backend_max_agg(tst, &d.c, buf, 3, buf, buf) == GNN_OK &&
		  gnn_backend_sync(tst) == GNN_OK,
		  "zero-row block: forward ops are no-ops: %s", tst->err.msg);
	dcsr_free(tst, &d);
	hcsr_free(&h);
	CHECK(gnn_backend_gemm(tst, false, false, 0, 3, 3, 1, buf, 3, buf, 3, 0, buf, 3) == GNN_OK &&
		  gnn_backend_softmax_rows(tst, buf, buf, 0, 3) == GNN_OK &&
		  gnn_backend_bias_grad(tst, buf, 0, 0, 0, buf) == GNN_OK &&
		  gnn_backend_head_mean(tst, buf, 0, 2, 3, buf) == GNN_OK &&
		  gnn_backend_sync(tst) == GNN_OK, "zero-size dense ops are no-ops");
	{
		gnn_csr		nt = {3, 3, 2, NULL, NULL, NULL, NULL, NULL, NULL};
		int64_t		ptr[4] = {0, 1, 2, 2};
		int32_t		idx[2] = {1, 2};

		nt.indptr = up(tst, ptr, sizeof(ptr));
		nt.indices = up(tst, idx, sizeof(idx));
		CHECK(gnn_backend_spmm_t(tst, &nt, GNN_AGG_SUM, NULL, NULL, buf, 2, 0, buf) == GNN_ERR_INVALID,
			  "spmm_t without a transpose is GNN_ERR_INVALID: %s", tst->err.msg);
		gnn_backend_free(tst, (void *) nt.indptr);
		gnn_backend_free(tst, (void *) nt.indices);
	}
	gnn_backend_free(tst, buf);
}

static void
test_timing_and_faults(void)
{
	gnn_backend_timing_enable(tst, true);
	gnn_backend_timing_reset(tst);
	{
		void	   *p = up(tst, NULL, 64);

		CHECK(gnn_backend_memset(tst, p, 0, 64) == GNN_OK && tst->ncalls[GNN_CAT_OTHER] >= 1,
			  "timing counts calls through the dispatch layer");
		gnn_backend_fail_after(tst, 0);
		CHECK(gnn_backend_memset(tst, p, 0, 64) == GNN_ERR_BACKEND, "fault injection reaches the backend");
		gnn_backend_fail_after(tst, -1);
		gnn_backend_free(tst, p);
	}
	gnn_backend_timing_enable(tst, false);
}

int
main(void)
{
	gnn_error	err;
	const char *self = getenv("GNN_PARITY_SELFTEST");
	hcsr		small,
				big,
				bip;

	gnn_rng_seed(&rng, 20240601);
	if (gnn_backend_cpu_create(2, &ref, &err) != GNN_OK)
	{
		CHECK(0, "cpu backend: %s", err.msg);
		return check_done();
	}
	if (self && strcmp(self, "1") == 0)
	{
		if (gnn_backend_cpu_create(1, &tst, &err) != GNN_OK)
		{
			CHECK(0, "second cpu backend: %s", err.msg);
			return check_done();
		}
		NOTE("self-test mode: cpu against cpu");
	}
	else
	{
		const char *so = getenv("GNN_CUDA_SO");
		gnn_status	st;

		st = gnn_backend_cuda_load(so && *so ? so : "kernels/gnn_cuda.so", 0, &tst, &err);
		if (st != GNN_OK)
		{
			CHECK(st == GNN_ERR_UNSUPPORTED && err.msg[0] != '\0',
				  "loading the CUDA backend without a usable GPU fails cleanly (%s)", gnn_status_name(st));
			CHECK_SKIP(err.msg, "cpu / cuda parity of every backend op");
			gnn_backend_destroy(ref);
			return check_done();
		}
		NOTE("comparing cpu with %s", tst->name);
	}

	hcsr_make(&small, 50, 50, 30);
	hcsr_make(&big, 3000, 3000, 2500);	/* hub rows longer than a warp's worth */
	hcsr_make(&bip, 400, 1500, 200);	/* minibatch block: n_dst < n_src */

	test_memory();
	test_gemm();
	test_gemm_dropout();
	test_spmm(&small, "small");
	test_spmm(&bip, "bipartite");
	test_spmm(&big, "large");
	test_rows();
	test_eltwise();
	test_bias();
	test_softmax_xent();
	test_gat(&small, "small");
	test_gat(&bip, "bipartite");
	test_gat(&big, "large");
	test_max_agg(&small, "small");
	test_max_agg(&big, "large");
	test_optim();
	test_empty();
	test_timing_and_faults();

	hcsr_free(&small);
	hcsr_free(&big);
	hcsr_free(&bip);
	gnn_backend_destroy(tst);
	gnn_backend_destroy(ref);
	return check_done();
}
