/*
 * test_kernel_math: the CUDA kernels' per-thread bodies (kernels/kernel_math.h)
 * compiled as host C and driven through an emulation of their launch
 * geometry - lane groups of g lanes per row, float4 lanes, warp-shuffle
 * reductions as butterfly folds over the lanes, the column sum's row
 * partition, the sort-then-run scatter - compared with the CPU backend.
 * This checks the GPU backend's index math, bounds and reduction structure
 * on machines without a GPU; test_cuda_parity / test_backend_parity check the real thing
 * where one exists.
 */
#include "check.h"
#include "nn/backend.h"
#include "../../kernels/kernel_math.h"
#include "base/ops_math.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static gnn_backend *cpu;
static gnn_rng rng;

static float *
hrand(int64_t n, float lo, float hi)
{
	float	   *p = malloc(sizeof(float) * (size_t) (n > 0 ? n : 1))	/* exact size: ASan sees over-reads */;

	for (int64_t i = 0; i < n; i++)
		p[i] = lo + (hi - lo) * gnn_rng_float(&rng);
	return p;
}

static float *
hcopy(const float *x, int64_t n)
{
	float	   *p = malloc(sizeof(float) * (size_t) (n > 0 ? n : 1))	/* exact size: ASan sees over-reads */;

	memcpy(p, x, sizeof(float) * (n > 0 ? n : 0));
	return p;
}

static int
close_f(const float *a, const float *b, int64_t n, double rtol, double atol, int64_t *bad)
{
	for (int64_t i = 0; i < n; i++)
		if (!(fabs((double) a[i] - b[i]) <= atol + rtol * fabs((double) a[i])))
		{
			*bad = i;
			return 0;
		}
	return 1;
}

#define CMP(name, a, b, n, rtol, atol) \
	do { int64_t bad_ = -1; \
		 int ok_ = close_f(a, b, n, rtol, atol, &bad_); \
		 if (ok_) CHECK(1, "%s", name); \
		 else CHECK(0, "%s: element %lld cpu %.9g vs kernel body %.9g", name, (long long) bad_, \
					(a)[bad_], (b)[bad_]); } while (0)

/* warp shuffle emulation: butterfly fold of g lane values (sum or max) */
static float
fold(float *v, int g, int is_max)
{
	for (int o = g >> 1; o > 0; o >>= 1)
	{
		float		nv[32];

		for (int l = 0; l < g; l++)
		{
			float		a = v[l],
						b = v[l ^ o];

			nv[l] = is_max ? (b > a ? b : a) : a + b;
		}
		memcpy(v, nv, sizeof(float) * g);
	}
	return v[0];
}

/* ------------------------------------------------------------------ block fixture */

typedef struct blk
{
	int64_t		nr,
				nc,
				nnz;
	int64_t    *ptr,
			   *tptr,
			   *tperm;
	int32_t    *idx,
			   *tidx;
	float	   *val;
	gnn_csr		c;
} blk;

static void
blk_make(blk *b, int64_t nr, int64_t nc, int64_t maxdeg)
{
	int64_t		cap = 16;

	b->nr = nr;
	b->nc = nc;
	b->ptr = malloc(sizeof(int64_t) * (nr + 1));
	b->idx = malloc(sizeof(int32_t) * cap);
	b->ptr[0] = 0;
	for (int64_t i = 0; i < nr; i++)
	{
		double		u = gnn_rng_double(&rng);
		int64_t		deg = u < 0.1 ? 0 : u < 0.95 ? 1 + (int64_t) (6 * gnn_rng_double(&rng))
			: (int64_t) (maxdeg * gnn_rng_double(&rng));
		int64_t		e = b->ptr[i];

		/* distinct sorted columns: walk with random gaps */
		for (int64_t j = (int64_t) gnn_rng_below(&rng, 3); j < nc && e - b->ptr[i] < deg;
			 j += 1 + (int64_t) gnn_rng_below(&rng, 3))
		{
			if (e >= cap)
			{
				cap *= 2;
				b->idx = realloc(b->idx, sizeof(int32_t) * cap);
			}
			b->idx[e++] = (int32_t) j;
		}
		b->ptr[i + 1] = e;
	}
	b->nnz = b->ptr[nr];
	b->val = hrand(b->nnz, 0.1f, 1.0f);
	b->tptr = calloc(nc + 1, sizeof(int64_t));
	b->tidx = malloc(sizeof(int32_t) * (b->nnz + 1));
	b->tperm = malloc(sizeof(int64_t) * (b->nnz + 1));
	for (int64_t e = 0; e < b->nnz; e++)
		b->tptr[b->idx[e] + 1]++;
	for (int64_t j = 0; j < nc; j++)
		b->tptr[j + 1] += b->tptr[j];
	{
		int64_t    *fill = malloc(sizeof(int64_t) * (nc + 1));

		memcpy(fill, b->tptr, sizeof(int64_t) * (nc + 1));
		for (int64_t i = 0; i < nr; i++)
			for (int64_t e = b->ptr[i]; e < b->ptr[i + 1]; e++)
			{
				int64_t		t = fill[b->idx[e]]++;

				b->tidx[t] = (int32_t) i;
				b->tperm[t] = e;
			}
		free(fill);
	}
	b->c = (gnn_csr) {nr, nc, b->nnz, b->ptr, b->idx, b->val, b->tptr, b->tidx, b->tperm};
}

static void
blk_free(blk *b)
{
	free(b->ptr);
	free(b->idx);
	free(b->val);
	free(b->tptr);
	free(b->tidx);
	free(b->tperm);
}

/* ------------------------------------------------------------------ tests */

/*
 * The CPU backend's products against the plain loop they replace: each
 * element summed in entry order, one multiply and one add per entry, then
 * + 0.0f or + beta * y.  Bit for bit (no FMA in either): the vector kernels
 * (eight 8-float accumulators per 64 columns, an AVX2 clone) must not move
 * a result by one ulp.
 */
static void
spmm_plain(const blk *b, int agg, const float *rs, const float *cs, const float *X, int64_t d,
		   float beta, float *Y, bool transposed)
{
	int64_t		nout = transposed ? b->nc : b->nr;

	for (int64_t o = 0; o < nout; o++)
	{
		int64_t		p0 = transposed ? b->tptr[o] : b->ptr[o],
					p1 = transposed ? b->tptr[o + 1] : b->ptr[o + 1];

		for (int64_t k = 0; k < d; k++)
		{
			volatile float acc = 0.0f;

			if (p0 == p1)
			{
				Y[o * d + k] = beta == 0.0f ? 0.0f : beta * Y[o * d + k];
				continue;
			}
			for (int64_t p = p0; p < p1; p++)
			{
				int64_t		i = transposed ? b->tidx[p] : o,
							e = transposed ? b->tperm[p] : p,
							j = transposed ? o : b->idx[p];
				float		c = b->val[e] * gnn_k_row_coef(b->ptr, agg, rs, i) * cs[j];
				volatile float prod;

				prod = c * (transposed ? X[i * d + k] : X[j * d + k]);
				acc = acc + prod;
			}
			Y[o * d + k] = beta == 0.0f ? acc + 0.0f : acc + beta * Y[o * d + k];
		}
	}
}

static void
test_group_lanes(void)
{
	CHECK(gnn_k_group_lanes(0) == 1 && gnn_k_group_lanes(1) == 1 && gnn_k_group_lanes(3) == 4 &&
		  gnn_k_group_lanes(32) == 32 && gnn_k_group_lanes(1000) == 32,
		  "group lanes: power of two >= x, capped at 32 (divides a warp and the block)");
}

static void
test_spmm(blk *b, const char *tag)
{
	int64_t		dims[] = {1, 4, 7, 16, 64, 132};
	float	   *rs = hrand(b->nr, 0.2f, 1.5f),
			   *cs = hrand(b->nc, 0.2f, 1.5f);
	char		name[160];

	for (size_t di = 0; di < sizeof(dims) / sizeof(dims[0]); di++)
		for (int agg = 0; agg < 2; agg++)
			for (int bi = 0; bi < 2; bi++)
			{
				int64_t		d = dims[di];
				float		beta = bi ? 0.5f : 0.0f;
				float	   *X = hrand(b->nc * d, -1, 1),
						   *G = hrand(b->nr * d, -1, 1),
						   *Y0 = hrand(b->nr * d, -1, 1),
						   *YT0 = hrand(b->nc * d, -1, 1);
				float	   *Yc = hcopy(Y0, b->nr * d),
						   *YTc = hcopy(YT0, b->nc * d);

				gnn_backend_spmm(cpu, &b->c, agg, rs, cs, X, d, beta, Yc);
				gnn_backend_spmm_t(cpu, &b->c, agg, rs, cs, G, d, beta, YTc);
				{
					float	   *Yp = hcopy(Y0, b->nr * d),
							   *YTp = hcopy(YT0, b->nc * d);

					spmm_plain(b, agg, rs, cs, X, d, beta, Yp, false);
					spmm_plain(b, agg, rs, cs, G, d, beta, YTp, true);
					CHECK(memcmp(Yp, Yc, sizeof(float) * b->nr * d) == 0 &&
						  memcmp(YTp, YTc, sizeof(float) * b->nc * d) == 0,
						  "%s spmm and spmm_t d %lld agg %d beta %g: bit for bit the plain loop's sums",
						  tag, (long long) d, agg, beta);
					free(Yp);
					free(YTp);
				}
				for (int v = 1; v <= 4; v += 3)
				{
					int			gs[] = {1, 2, 8, 32, gnn_k_group_lanes(d / v)};

					if (v == 4 && d % 4)
						continue;
					for (size_t gi = 0; gi < sizeof(gs) / sizeof(gs[0]); gi++)
					{
						int			g = gs[gi];
						float	   *Y = hcopy(Y0, b->nr * d),
								   *YT = hcopy(YT0, b->nc * d);

						for (int64_t i = 0; i < b->nr; i++)
							for (int l = 0; l < g; l++)
								gnn_k_spmm_row(b->ptr, b->idx, b->val, agg, rs, cs, X, d, beta, Y, i, l, g, v);
						for (int64_t j = 0; j < b->nc; j++)
							for (int l = 0; l < g; l++)
								gnn_k_spmm_t_row(b->ptr, b->val, b->tptr, b->tidx, b->tperm, agg, rs, cs,
												 G, d, beta, YT, j, l, g, v);
						snprintf(name, sizeof(name), "%s spmm body d %lld agg %d beta %g g %d v %d",
								 tag, (long long) d, agg, beta, g, v);
						CMP(name, Yc, Y, b->nr * d, 1e-6, 1e-7);
						snprintf(name, sizeof(name), "%s spmm_t body d %lld agg %d beta %g g %d v %d",
								 tag, (long long) d, agg, beta, g, v);
						CMP(name, YTc, YT, b->nc * d, 1e-6, 1e-7);
						free(Y);
						free(YT);
					}
				}
				free(X);
				free(G);
				free(Y0);
				free(YT0);
				free(Yc);
				free(YTc);
			}
	free(rs);
	free(cs);
}

/*
 * spmm_t_bias_act_backward (the CPU backend's fused op) against what it
 * replaces: spmm_t with beta 1 into Y whose rows from keep_rows on were
 * zeroed, then bias_act_backward over Y in place - bit for bit, the bias
 * gradient too, for every activation, with and without dropout, keeping no
 * rows, some and all.  A wrong row index in the epilogue, a beta on the
 * wrong rows or a dropout index off by a row fails it.
 */
static void
test_spmm_t_epilogue(blk *b, const char *tag)
{
	int64_t		dims[] = {1, 7, 64, 132};
	int64_t		keeps[] = {0, b->nc / 3, b->nc};

	for (size_t di = 0; di < sizeof(dims) / sizeof(dims[0]); di++)
		for (int agg = 0; agg < 2; agg++)
			for (size_t ki = 0; ki < sizeof(keeps) / sizeof(keeps[0]); ki++)
				for (int act = 0; act <= 3; act++)
					for (int pi = 0; pi < 2; pi++)
					{
						int64_t		d = dims[di],
									keep = keeps[ki],
									n = b->nc * d;
						float		p = pi ? 0.5f : 0.0f,
									param = act == 3 ? 0.2f : 1.0f;
						uint64_t	seed = 0xfeedbeef12345ULL + (uint64_t) d;
						float	   *G = hrand(b->nr * d, -1, 1),
								   *P = hrand(n, -1, 1),
								   *Y0 = hrand(n, -1, 1),
								   *Yf = hcopy(Y0, n),
								   *Yc = hcopy(Y0, n),
								   *dbf = hrand(d, -1, 1),
								   *dbc = hrand(d, -1, 1);
						bool		ran;

						memset(Yc + keep * d, 0, sizeof(float) * (size_t) (n - keep * d));
						ran = gnn_backend_spmm_t(cpu, &b->c, agg, NULL, NULL, G, d, 1.0f, Yc) == GNN_OK &&
							gnn_backend_bias_act_backward(cpu, (gnn_act) act, param, P, Yc, b->nc, d, p, seed,
														  Yc, dbc) == GNN_OK &&
							gnn_backend_spmm_t_bias_act_backward(cpu, &b->c, agg, G, d, keep, (gnn_act) act,
																 param, P, p, seed, Yf, dbf) == GNN_OK;
						CHECK(ran && memcmp(Yf, Yc, sizeof(float) * n) == 0 &&
							  memcmp(dbf, dbc, sizeof(float) * d) == 0,
							  "%s spmm_t_bias_act_backward d %lld agg %d keep %lld act %d p %g: bit for bit "
							  "spmm_t then bias_act_backward", tag, (long long) d, agg, (long long) keep, act, p);
						free(G);
						free(P);
						free(Y0);
						free(Yf);
						free(Yc);
						free(dbf);
						free(dbc);
					}
}

/* stable sort of (key, k) pairs by key, as CUB's radix sort does */
typedef struct kv
{
	uint32_t	key;
	int32_t		val;
} kv;

static int
kv_cmp(const void *a, const void *b)
{
	const kv   *x = a,
			   *y = b;

	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return x->val < y->val ? -1 : x->val > y->val;
}

static void
test_scatter(void)
{
	int64_t		nd = 50,
				n = 600;

	for (int64_t d = 1; d <= 65; d += 64)
	{
		float	   *src = hrand(n * d, -1, 1),
				   *D0 = hrand(nd * d, -1, 1),
				   *Dc = hcopy(D0, nd * d),
				   *Dk = hcopy(D0, nd * d);
		int32_t    *idx = malloc(sizeof(int32_t) * n);
		kv		   *pairs = malloc(sizeof(kv) * n);
		uint32_t   *keys = malloc(sizeof(uint32_t) * n);
		int32_t    *vals = malloc(sizeof(int32_t) * n);
		int			g = gnn_k_group_lanes(d);
		char		name[96];

		for (int64_t k = 0; k < n; k++)
		{
			idx[k] = k % 5 == 0 ? 3 : (int32_t) gnn_rng_below(&rng, (uint64_t) nd);
			pairs[k].key = (uint32_t) idx[k];
			pairs[k].val = (int32_t) k;
		}
		gnn_backend_scatter_add_rows(cpu, src, d, idx, n, Dc);
		qsort(pairs, n, sizeof(kv), kv_cmp);
		for (int64_t k = 0; k < n; k++)
		{
			keys[k] = pairs[k].key;
			vals[k] = pairs[k].val;
		}
		for (int64_t p = 0; p < n; p++)
			for (int l = 0; l < g; l++)
				gnn_k_scatter_run(keys, vals, n, src, d, Dk, p, l, g);
		snprintf(name, sizeof(name), "scatter runs after a stable sort, d %lld: bit-identical", (long long) d);
		CMP(name, Dc, Dk, nd * d, 0, 0);
		free(src);
		free(D0);
		free(Dc);
		free(Dk);
		free(idx);
		free(pairs);
		free(keys);
		free(vals);
	}
}

/* the colsum kernels' partition and two passes, emulated block by block */
static void
emulate_colsum(const float *X, int64_t rows, int64_t cols, int64_t heads, int64_t f,
			   const float *ws, float beta, float *out)
{
	int64_t		chunk,
				nchunks;
	double	   *partial;

	if (rows <= 0)
	{
		for (int64_t q = 0; q < cols; q++)
			out[q] = gnn_k_beta_init(beta, out + q);
		return;
	}
	gnn_k_colsum_chunks(rows, &chunk, &nchunks);
	partial = malloc(sizeof(double) * nchunks * cols);
	for (int64_t bx = 0; bx < (cols + GNN_K_COLSUM_TX - 1) / GNN_K_COLSUM_TX; bx++)
		for (int64_t r = 0; r < nchunks; r++)
			for (int tx = 0; tx < GNN_K_COLSUM_TX; tx++)
			{
				int64_t		q = bx * GNN_K_COLSUM_TX + tx;
				int64_t		i0 = r * chunk,
							i1 = i0 + chunk < rows ? i0 + chunk : rows;
				double		acc = 0;

				if (q >= cols)
					continue;
				for (int ty = 0; ty < GNN_K_COLSUM_TY; ty++)
					acc += gnn_k_colsum_thread(X, rows, cols, heads, f, ws, q, i0, i1, ty, GNN_K_COLSUM_TY);
				partial[r * cols + q] = acc;
			}
	for (int64_t q = 0; q < cols; q++)
		gnn_k_colsum_finish(partial, nchunks, cols, q, beta, out);
	free(partial);
}

static void
test_colsum(void)
{
	int64_t		shapes[][2] = {{1, 1}, {255, 33}, {257, 40}, {300000, 3}, {0, 4}};
	char		name[128];

	for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++)
	{
		int64_t		rows = shapes[s][0],
					cols = shapes[s][1];
		float	   *X = hrand(rows * cols, -1, 1),
				   *d0 = hrand(cols, -1, 1),
				   *dc = hcopy(d0, cols),
				   *dk = hcopy(d0, cols);

		gnn_backend_bias_grad(cpu, X, rows, cols, 0.5f, dc);
		emulate_colsum(X, rows, cols, 1, cols, NULL, 0.5f, dk);
		snprintf(name, sizeof(name), "column sum body = bias_grad, %lld x %lld", (long long) rows, (long long) cols);
		CMP(name, dc, dk, cols, 1e-6, 1e-6);
		free(X);
		free(d0);
		free(dc);
		free(dk);
	}
	{
		int64_t		n = 1000,
					heads = 3,
					f = 5,
					hf = 15;
		float	   *H = hrand(n * hf, -1, 1),
				   *att = hrand(hf, -1, 1),
				   *ds = hrand(n * heads, -1, 1),
				   *dH = hrand(n * hf, -1, 1),
				   *dac = hrand(hf, -1, 1),
				   *dak = hcopy(dac, hf),
				   *s_c = hrand(n * heads, 0, 0),
				   *s_k = hrand(n * heads, 0, 0);

		gnn_backend_gat_node_scores_backward(cpu, H, n, heads, f, att, ds, dH, 1.0f, dac);
		emulate_colsum(H, n, hf, heads, f, ds, 1.0f, dak);
		CMP("weighted column sum body = gat datt", dac, dak, hf, 1e-6, 1e-6);
		gnn_backend_gat_node_scores(cpu, H, n, heads, f, att, s_c);
		for (int64_t t = 0; t < n * heads; t++)
			s_k[t] = gnn_k_gat_score(H, heads, f, att, t / heads, t % heads);
		CMP("gat score body", s_c, s_k, n * heads, 0, 0);
		free(H);
		free(att);
		free(ds);
		free(dH);
		free(dac);
		free(dak);
		free(s_c);
		free(s_k);
	}
}

static void
test_softmax_xent(void)
{
	int64_t		cs[] = {1, 3, 7, 40, 77};
	char		name[96];

	for (size_t ci = 0; ci < sizeof(cs) / sizeof(cs[0]); ci++)
	{
		int64_t		n = 300,
					c = cs[ci],
					nrows = 200;
		float	   *X = hrand(n * c, -5, 5),
				   *Yc = hrand(n * c, 0, 0),
				   *Yk = hrand(n * c, 0, 0),
				   *Gc = hrand(n * c, 0, 0),
				   *Gk = hrand(n * c, 0, 0);
		int32_t    *lab = malloc(sizeof(int32_t) * n),
				   *rows = malloc(sizeof(int32_t) * nrows);
		int			g = gnn_k_group_lanes(c);
		float		lc,
					lk;
		int64_t		cc,
					nc,
					ck = 0,
					nk = 0;
		double		loss = 0;

		for (int64_t i = 0; i < 10 && c > 1; i++)
			X[i * c + c - 1] = X[i * c + c / 2] = 9.0f;	/* ties: first max wins */
		for (int64_t i = 0; i < n; i++)
			lab[i] = i % 11 == 0 ? -1 : (int32_t) gnn_rng_below(&rng, (uint64_t) c);
		for (int64_t r = 0; r < nrows; r++)
			rows[r] = (int32_t) (r < 10 ? r : gnn_rng_below(&rng, (uint64_t) n));
		gnn_backend_softmax_rows(cpu, X, Yc, n, c);
		for (int64_t i = 0; i < n; i++)
		{
			float		m[32],
						s[32],
						mm,
						ss;

			for (int l = 0; l < g; l++)
				m[l] = gnn_k_max_partial(X + i * c, c, l, g);
			mm = fold(m, g, 1);
			for (int l = 0; l < g; l++)
				s[l] = gnn_k_exp_partial(X + i * c, Yk + i * c, c, mm, l, g);
			ss = fold(s, g, 0);
			for (int l = 0; l < g; l++)
				gnn_k_scale_partial(Yk + i * c, c, ss, l, g);
		}
		snprintf(name, sizeof(name), "softmax bodies c %lld", (long long) c);
		CMP(name, Yc, Yk, n * c, 1e-6, 1e-8);

		gnn_backend_xent(cpu, X, n, c, lab, rows, nrows, Gc, &lc, &cc, &nc);
		/* statistics pass */
		{
			float	   *row_m = malloc(sizeof(float) * nrows),
					   *row_s = malloc(sizeof(float) * nrows);

			for (int64_t r = 0; r < nrows; r++)
			{
				const float *x = X + (int64_t) rows[r] * c;
				int32_t		y = lab[rows[r]];
				float		m = 0,
							s[32];
				int64_t		am = 0;

				if (y < 0 || y >= c)
					continue;
				for (int l = 0; l < g; l++)
				{
					float		ml;
					int64_t		al;

					gnn_k_argmax_partial(x, c, l, g, &ml, &al);
					if (l == 0)
					{
						m = ml;
						am = al;
					}
					else
						gnn_k_argmax_combine(&m, &am, ml, al);
				}
				for (int l = 0; l < g; l++)
					s[l] = gnn_k_exp_partial(x, NULL, c, m, l, g);
				row_m[r] = m;
				row_s[r] = fold(s, g, 0);
				loss += gnn_math_xent(x[y], m, row_s[r]);
				nk++;
				ck += am == y;
			}
			memset(Gk, 0, sizeof(float) * n * c);
			for (int64_t r = 0; r < nrows; r++)
			{
				int32_t		y = lab[rows[r]];

				if (y < 0 || y >= c)
					continue;
				for (int l = 0; l < g; l++)
					gnn_k_xent_grad_partial(X + (int64_t) rows[r] * c, Gk + (int64_t) rows[r] * c, c, y,
											row_m[r], row_s[r], 1.0f / (float) nk, l, g);
			}
			free(row_m);
			free(row_s);
		}
		lk = nk ? (float) (loss / nk) : 0.0f;
		CHECK(fabsf(lc - lk) <= 1e-6f * (1 + fabsf(lc)) && cc == ck && nc == nk,
			  "xent bodies c %lld: loss %.8g / %.8g correct %lld / %lld counted %lld / %lld",
			  (long long) c, lc, lk, (long long) cc, (long long) ck, (long long) nc, (long long) nk);
		snprintf(name, sizeof(name), "xent gradient body c %lld", (long long) c);
		CMP(name, Gc, Gk, n * c, 1e-5, 1e-8);
		free(X);
		free(Yc);
		free(Yk);
		free(Gc);
		free(Gk);
		free(lab);
		free(rows);
	}
}

static void
test_gat(blk *b, const char *tag)
{
	int64_t		cfg[][2] = {{1, 7}, {8, 8}, {3, 4}, {2, 1}};
	char		name[128];

	for (size_t ci = 0; ci < sizeof(cfg) / sizeof(cfg[0]); ci++)
	{
		int64_t		heads = cfg[ci][0],
					f = cfg[ci][1],
					hf = heads * f,
					nr = b->nr,
					nc = b->nc,
					nnz = b->nnz;
		float	   *as = hrand(nc * heads, -2, 2),
				   *ad = hrand(nr * heads, -2, 2),
				   *H = hrand(nc * hf, -1, 1),
				   *dal = hrand(nnz * heads, -1, 1),
				   *dout = hrand(nr * hf, -1, 1),
				   *dH0 = hrand(nc * hf, -1, 1),
				   *al_c = hrand(nnz * heads, 0, 0),
				   *al_k = hrand(nnz * heads, 0, 0),
				   *dsrc_c = hrand(nc * heads, 0, 0),
				   *dsrc_k = hrand(nc * heads, 0, 0),
				   *ddst_c = hrand(nr * heads, 0, 0),
				   *ddst_k = hrand(nr * heads, 0, 0),
				   *dot = hrand(nr * heads, 0, 0),
				   *out_c = hrand(nr * hf, 0, 0),
				   *out_k = hrand(nr * hf, 0, 0),
				   *dH_c = hcopy(dH0, nc * hf),
				   *dH_k = hcopy(dH0, nc * hf),
				   *da_c = hrand(nnz * heads, 0, 0),
				   *da_k = hrand(nnz * heads, 0, 0),
				   *hm_c = hrand(nr * f, 0, 0),
				   *hm_k = hrand(nr * f, 0, 0);
		int			g = gnn_k_group_lanes(nr > 0 ? (nnz + nr - 1) / nr : 1);

		/* edge softmax: the three phases with shuffles between them */
		gnn_backend_gat_edge_softmax(cpu, &b->c, heads, as, ad, 0.2f, al_c);
		for (int64_t i = 0; i < nr; i++)
			for (int64_t h = 0; h < heads; h++)
			{
				float		v[32],
							m,
							s;

				for (int l = 0; l < g; l++)
					v[l] = gnn_k_esm_max_partial(b->ptr, b->idx, heads, as, ad, 0.2f, i, h, l, g);
				m = fold(v, g, 1);
				for (int l = 0; l < g; l++)
					v[l] = gnn_k_esm_exp_partial(b->ptr, b->idx, heads, as, ad, 0.2f, m, al_k, i, h, l, g);
				s = fold(v, g, 0);
				for (int l = 0; l < g; l++)
					gnn_k_esm_norm_partial(b->ptr, heads, s, al_k, i, h, l, g);
			}
		snprintf(name, sizeof(name), "%s edge softmax bodies heads %lld (g %d)", tag, (long long) heads, g);
		CMP(name, al_c, al_k, nnz * heads, 1e-5, 1e-7);

		gnn_backend_gat_edge_softmax_backward(cpu, &b->c, heads, as, ad, 0.2f, al_c, dal, dsrc_c, ddst_c);
		for (int64_t i = 0; i < nr; i++)
			for (int64_t h = 0; h < heads; h++)
			{
				float		v[32],
							d;

				for (int l = 0; l < g; l++)
					v[l] = gnn_k_esm_dot_partial(b->ptr, heads, al_c, dal, i, h, l, g);
				d = fold(v, g, 0);
				for (int l = 0; l < g; l++)
					v[l] = gnn_k_esm_ddst_partial(b->ptr, b->idx, heads, as, ad, 0.2f, al_c, dal, d, i, h, l, g);
				dot[i * heads + h] = d;
				ddst_k[i * heads + h] = fold(v, g, 0);
			}
		for (int64_t j = 0; j < nc; j++)
			for (int64_t h = 0; h < heads; h++)
			{
				float		v[32];

				for (int l = 0; l < g; l++)
					v[l] = gnn_k_esm_dsrc_partial(b->tptr, b->tidx, b->tperm, heads, as, ad, 0.2f, al_c,
												  dal, dot, j, h, l, g);
				dsrc_k[j * heads + h] = fold(v, g, 0);
			}
		snprintf(name, sizeof(name), "%s edge softmax backward bodies da_dst heads %lld", tag, (long long) heads);
		CMP(name, ddst_c, ddst_k, nr * heads, 1e-4, 1e-6);
		snprintf(name, sizeof(name), "%s edge softmax backward bodies da_src heads %lld", tag, (long long) heads);
		CMP(name, dsrc_c, dsrc_k, nc * heads, 1e-4, 1e-6);

		/* aggregation forward, float4 lanes when f % 4 == 0 */
		gnn_backend_gat_aggregate(cpu, &b->c, heads, f, al_c, H, out_c);
		for (int v = 1; v <= 4; v += 3)
		{
			int			ga = gnn_k_group_lanes(hf / v);

			if (v == 4 && f % 4)
				continue;
			for (int64_t i = 0; i < nr; i++)
				for (int l = 0; l < ga; l++)
					gnn_k_gat_agg_row(b->ptr, b->idx, heads, f, al_c, H, out_k, i, l, ga, v);
			snprintf(name, sizeof(name), "%s gat aggregate body heads %lld f %lld v %d", tag,
					 (long long) heads, (long long) f, v);
			CMP(name, out_c, out_k, nr * hf, 1e-6, 1e-7);
		}
		gnn_backend_gat_aggregate_backward(cpu, &b->c, heads, f, al_c, H, dout, 0.5f, dH_c, da_c);
		{
			int			gp = gnn_k_group_lanes(nr > 0 ? (nnz + nr - 1) / nr * heads : 1),
						gh = gnn_k_group_lanes(hf);

			for (int64_t i = 0; i < nr; i++)
				for (int l = 0; l < gp; l++)
					gnn_k_gat_dalpha_row(b->ptr, b->idx, heads, f, H, dout, da_k, i, l, gp);
			for (int64_t j = 0; j < nc; j++)
				for (int l = 0; l < gh; l++)
					gnn_k_gat_agg_bwd_row(b->tptr, b->tidx, b->tperm, heads, f, al_c, dout, 0.5f, dH_k, j, l, gh);
		}
		snprintf(name, sizeof(name), "%s gat aggregate backward dalpha body heads %lld f %lld", tag,
				 (long long) heads, (long long) f);
		CMP(name, da_c, da_k, nnz * heads, 1e-6, 1e-7);
		snprintf(name, sizeof(name), "%s gat aggregate backward dH body heads %lld f %lld", tag,
				 (long long) heads, (long long) f);
		CMP(name, dH_c, dH_k, nc * hf, 1e-6, 1e-7);
		gnn_backend_head_mean(cpu, out_c, nr, heads, f, hm_c);
		for (int64_t t = 0; t < nr * f; t++)
			hm_k[t] = gnn_k_head_mean(out_c, heads, f, t / f, t % f);
		snprintf(name, sizeof(name), "%s head mean body heads %lld", tag, (long long) heads);
		CMP(name, hm_c, hm_k, nr * f, 0, 0);
		free(as);
		free(ad);
		free(H);
		free(dal);
		free(dout);
		free(dH0);
		free(al_c);
		free(al_k);
		free(dsrc_c);
		free(dsrc_k);
		free(ddst_c);
		free(ddst_k);
		free(dot);
		free(out_c);
		free(out_k);
		free(dH_c);
		free(dH_k);
		free(da_c);
		free(da_k);
		free(hm_c);
		free(hm_k);
	}
}

static void
test_max_agg(blk *b, const char *tag)
{
	for (int64_t d = 1; d <= 33; d += 32)
	{
		float	   *X = hrand(b->nc * d, -1, 1),
				   *Yc = hrand(b->nr * d, 0, 0),
				   *Yk = hrand(b->nr * d, 0, 0),
				   *dY = hrand(b->nr * d, -1, 1),
				   *dX0 = hrand(b->nc * d, -1, 1),
				   *dXc = hcopy(dX0, b->nc * d),
				   *dXk = hcopy(dX0, b->nc * d);
		int32_t    *amc = malloc(sizeof(int32_t) * (b->nr * d + 1)),
				   *amk = malloc(sizeof(int32_t) * (b->nr * d + 1));
		int			g = gnn_k_group_lanes(d);
		char		name[96];

		for (int64_t i = 0; i < b->nc * d; i++)
			X[i] = floorf(X[i] * 3) / 3;	/* ties */
		gnn_backend_max_agg(cpu, &b->c, X, d, Yc, amc);
		for (int64_t i = 0; i < b->nr; i++)
			for (int l = 0; l < g; l++)
				gnn_k_max_agg_row(b->ptr, b->idx, X, d, Yk, amk, i, l, g);
		snprintf(name, sizeof(name), "%s max_agg body d %lld", tag, (long long) d);
		CMP(name, Yc, Yk, b->nr * d, 0, 0);
		CHECK(memcmp(amc, amk, sizeof(int32_t) * b->nr * d) == 0, "%s max_agg argmax body d %lld (first max)",
			  tag, (long long) d);
		gnn_backend_max_agg_backward(cpu, &b->c, dY, amc, d, 1.0f, dXc);
		for (int64_t j = 0; j < b->nc; j++)
			for (int l = 0; l < g; l++)
				gnn_k_max_agg_bwd_row(b->tptr, b->tidx, dY, amc, d, 1.0f, dXk, j, l, g);
		snprintf(name, sizeof(name), "%s max_agg backward body d %lld", tag, (long long) d);
		CMP(name, dXc, dXk, b->nc * d, 0, 0);
		free(X);
		free(Yc);
		free(Yk);
		free(dY);
		free(dX0);
		free(dXc);
		free(dXk);
		free(amc);
		free(amk);
	}
}

/*
 * bias_act and its backward (a hidden layer's epilogue in one pass) against
 * the per-element math they fuse: P + bias, the activation, the next
 * layer's dropout with the element's 64-bit index, and the bias gradient
 * summed in double in row order - bit for bit, on 1 and 2 threads, for
 * every activation, with and without dropout.
 */
static void
test_bias_act(void)
{
	int64_t		shapes[][2] = {{1, 1}, {37, 5}, {300, 64}, {1888, 128}, {513, 200}};

	for (int nt = 1; nt <= 2; nt++)
	{
		gnn_backend *be;
		gnn_error	err;

		if (gnn_backend_cpu_create(nt, &be, &err) != GNN_OK)
		{
			CHECK(0, "cpu backend: %s", err.msg);
			return;
		}
		for (size_t si = 0; si < sizeof(shapes) / sizeof(shapes[0]); si++)
			for (int act = 0; act <= 3; act++)
				for (int pi = 0; pi < 2; pi++)
				{
					int64_t		r = shapes[si][0],
								c = shapes[si][1],
								n = r * c;
					float		p = pi ? 0.5f : 0.0f,
								scale = 1.0f / (1.0f - p),
								param = act == 3 ? 0.2f : 1.0f;
					uint64_t	seed = 0x1234567890abcdefULL + (uint64_t) si;
					float	   *P0 = hrand(n, -1, 1),
							   *b = hrand(c, -0.5f, 0.5f),
							   *dY = hrand(n, -1, 1),
							   *P = hcopy(P0, n),
							   *Y = hrand(n, -1, 1),
							   *dP = hrand(n, -1, 1),
							   *db = hrand(c, -1, 1),
							   *Pr = malloc(sizeof(float) * n),
							   *Yr = malloc(sizeof(float) * n),
							   *dPr = malloc(sizeof(float) * n),
							   *dbr = malloc(sizeof(float) * c);
					bool		ran;

					ran = gnn_backend_bias_act(be, P, b, r, c, (gnn_act) act, param, p, seed, Y) == GNN_OK &&
						gnn_backend_bias_act_backward(be, (gnn_act) act, param, P, dY, r, c, p, seed, dP, db) == GNN_OK;
					for (int64_t i = 0; i < r; i++)
						for (int64_t k = 0; k < c; k++)
						{
							int64_t		e = i * c + k;
							float		a,
										g;

							Pr[e] = P0[e] + b[k];
							a = gnn_math_act(act, param, Pr[e]);
							Yr[e] = p > 0.0f ? gnn_math_dropout(a, seed, (uint64_t) e, p, scale) : a;
							g = p > 0.0f ? gnn_math_dropout(dY[e], seed, (uint64_t) e, p, scale) : dY[e];
							dPr[e] = g * gnn_math_act_grad(act, param, Pr[e]);
						}
					for (int64_t k = 0; k < c; k++)
					{
						double		sum = 0.0;

						for (int64_t i = 0; i < r; i++)
							sum += dPr[i * c + k];
						dbr[k] = (float) sum + 0.0f;
					}
					CHECK(ran && memcmp(P, Pr, sizeof(float) * n) == 0 && memcmp(Y, Yr, sizeof(float) * n) == 0,
						  "bias_act %lld x %lld, activation %d, p %g, %d thread(s): P + bias and the dropped "
						  "activation bit for bit the per-element math", (long long) r, (long long) c, act, p, nt);
					CHECK(ran && memcmp(dP, dPr, sizeof(float) * n) == 0 && memcmp(db, dbr, sizeof(float) * c) == 0,
						  "bias_act_backward %lld x %lld, activation %d, p %g, %d thread(s): dP and the bias "
						  "gradient bit for bit", (long long) r, (long long) c, act, p, nt);
					free(P0);
					free(b);
					free(dY);
					free(P);
					free(Y);
					free(dP);
					free(db);
					free(Pr);
					free(Yr);
					free(dPr);
					free(dbr);
				}
		gnn_backend_destroy(be);
	}
}

/*
 * The CPU backend's Adam (a vector clone picked by the CPU, in line or on
 * threads by size) against gnn_math_adam element by element: the same bits,
 * below and above the size that takes threads, with weight decay.
 */
static void
test_adam(void)
{
	int64_t		sizes[] = {1, 100, 8195, 40001};

	for (int nt = 1; nt <= 2; nt++)
	{
		gnn_backend *be;
		gnn_error	err;

		if (gnn_backend_cpu_create(nt, &be, &err) != GNN_OK)
		{
			CHECK(0, "cpu backend: %s", err.msg);
			return;
		}
		for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++)
		{
			int64_t		n = sizes[si];
			float	   *w = malloc(sizeof(float) * n),
					   *g = malloc(sizeof(float) * n),
					   *m = calloc(n, sizeof(float)),
					   *v = calloc(n, sizeof(float)),
					   *rw = malloc(sizeof(float) * n),
					   *rm = calloc(n, sizeof(float)),
					   *rv = calloc(n, sizeof(float));
			bool		same,
						ran = true;

			for (int64_t i = 0; i < n; i++)
			{
				w[i] = rw[i] = (float) (gnn_rng_double(&rng) - 0.5);
				g[i] = (float) ((gnn_rng_double(&rng) - 0.5) * 1e-2);
			}
			for (int t = 1; t <= 3; t++)
			{
				float		bc1 = 1.0f - powf(0.9f, (float) t),
							bc2 = 1.0f - powf(0.999f, (float) t);

				ran = ran && gnn_backend_adam_step(be, w, g, m, v, n, 0.01f, 0.9f, 0.999f, 1e-8f, 5e-4f, t) == GNN_OK;
				for (int64_t i = 0; i < n; i++)
					gnn_math_adam(&rw[i], g[i], &rm[i], &rv[i], 0.01f, 0.9f, 0.999f, 1e-8f, 5e-4f, bc1, bc2);
			}
			same = ran && memcmp(w, rw, sizeof(float) * n) == 0 && memcmp(m, rm, sizeof(float) * n) == 0 &&
				memcmp(v, rv, sizeof(float) * n) == 0;
			CHECK(same, "adam_step, %lld weights, %d thread(s): weights and moments bit for bit gnn_math_adam's "
				  "over 3 steps", (long long) n, nt);
			free(w);
			free(g);
			free(m);
			free(v);
			free(rw);
			free(rm);
			free(rv);
		}
		gnn_backend_destroy(be);
	}
}

int
main(void)
{
	gnn_error	err;
	blk			small,
				bip,
				hub;

	gnn_rng_seed(&rng, 7);
	if (gnn_backend_cpu_create(1, &cpu, &err) != GNN_OK)
	{
		CHECK(0, "cpu backend: %s", err.msg);
		return check_done();
	}
	blk_make(&small, 40, 40, 20);
	blk_make(&bip, 120, 400, 150);
	blk_make(&hub, 200, 2000, 1500);

	test_group_lanes();
	test_spmm(&small, "small");
	test_spmm(&bip, "bipartite");
	test_spmm(&hub, "hubs");
	test_spmm_t_epilogue(&small, "small");
	test_spmm_t_epilogue(&bip, "bipartite");
	test_spmm_t_epilogue(&hub, "hubs");
	test_scatter();
	test_colsum();
	test_softmax_xent();
	test_gat(&small, "small");
	test_gat(&bip, "bipartite");
	test_gat(&hub, "hubs");
	test_max_agg(&small, "small");
	test_max_agg(&hub, "hubs");
	test_adam();
	test_bias_act();

	blk_free(&small);
	blk_free(&bip);
	blk_free(&hub);
	gnn_backend_destroy(cpu);
	return check_done();
}
