/*
 * test_backend_parity: every backend op on random inputs, on the CPU
 * reference and on the CUDA backend, compared (ggml's test-backend-ops).
 *
 * The CUDA backend is loaded with gnn_backend_cuda_load from $GNN_CUDA_SO,
 * else kernels/gnn_cuda.so; when it cannot be loaded (no object, no GPU)
 * the test prints a TAP "# SKIP" with the reason and passes.
 * GNN_PARITY_SELFTEST=1 compares the CPU backend with a second CPU instance
 * (checks the harness itself on machines without a GPU).
 *
 * Tolerance: element-wise ops and masks must agree to 1e-5 relative (same
 * ops_math.h code); reductions (GEMM, sparse sums, softmax) to 1e-4
 * relative to the largest magnitude, since summation order may differ.
 */
#include "check.h"
#include "nn/model.h"
#include "base/ops_math.h"

#include <math.h>

static gnn_backend *cpu,
		   *gpu;
static gnn_rng rng;

static float *
rnd(int64_t n, float lo, float hi)
{
	float	   *p = malloc(sizeof(float) * (n + 1));

	for (int64_t i = 0; i < n; i++)
		p[i] = lo + (hi - lo) * gnn_rng_float(&rng);
	return p;
}

/* upload host data to the GPU backend (the CPU backend uses host memory) */
static void *
up(const void *host, size_t bytes)
{
	void	   *d = NULL;
	gnn_error	err;

	if (gnn_dev_upload(gpu, host, bytes, &d, &err) != GNN_OK)
	{
		fprintf(stderr, "upload: %s\n", err.msg);
		abort();
	}
	return d;
}

static void *
dalloc(size_t bytes)
{
	void	   *d = NULL;

	gnn_backend_alloc(gpu, bytes ? bytes : 4, &d);
	return d;
}

static float *
down(const void *dev, int64_t n)
{
	float	   *h = malloc(sizeof(float) * (n + 1));

	gnn_backend_copy_d2h(gpu, h, dev, sizeof(float) * n);
	return h;
}

static void
cmp(const char *what, const float *a, const float *b, int64_t n, double tol)
{
	double		maxd = 0,
				maxv = 1e-6;

	for (int64_t i = 0; i < n; i++)
	{
		maxd = fmax(maxd, fabs((double) a[i] - b[i]));
		maxv = fmax(maxv, fabs((double) a[i]));
		if (isnan(a[i]) != isnan(b[i]))
			maxd = INFINITY;
	}
	CHECK(maxd <= tol * maxv, "%s: max |cpu - %s| = %.3g (scale %.3g)", what, gpu->name, maxd, maxv);
}

/* a random block with its transpose on both backends */
typedef struct pcsr
{
	int64_t		nr,
				nc,
				nnz;
	int64_t    *ptr;
	int32_t    *idx;
	float	   *val;
	gnn_dcsr	c,
				g;
} pcsr;

static void
make_csr(pcsr *s, int64_t nr, int64_t nc, double p, bool values)
{
	gnn_error	err;

	s->nr = nr;
	s->nc = nc;
	s->ptr = malloc(sizeof(int64_t) * (nr + 1));
	s->idx = malloc(sizeof(int32_t) * (nr * nc + 1));
	s->val = values ? rnd(nr * nc, 0.1f, 1.0f) : NULL;
	s->nnz = 0;
	s->ptr[0] = 0;
	for (int64_t i = 0; i < nr; i++)
	{
		for (int64_t j = 0; j < nc; j++)
			if (gnn_rng_double(&rng) < p || (j == i && j < nc))
				s->idx[s->nnz++] = (int32_t) j;
		s->ptr[i + 1] = s->nnz;
	}
	gnn_dcsr_create(cpu, nr, nc, s->nnz, s->ptr, s->idx, s->val, &s->c, &err);
	gnn_dcsr_create(gpu, nr, nc, s->nnz, s->ptr, s->idx, s->val, &s->g, &err);
}

static void
free_csr(pcsr *s)
{
	gnn_dcsr_free(&s->c);
	gnn_dcsr_free(&s->g);
	free(s->ptr);
	free(s->idx);
	free(s->val);
}

#define GFREE(p) gnn_backend_free(gpu, (void *) (p))

static void
test_gemm(void)
{
	for (int ta = 0; ta < 2; ta++)
		for (int tb = 0; tb < 2; tb++)
		{
			int64_t		m = 37,
						n = 19,
						k = 53;
			float	   *A = rnd(m * k, -1, 1),
					   *B = rnd(k * n, -1, 1),
					   *C = rnd(m * n, -1, 1);
			float	   *dA = up(A, 4 * m * k),
					   *dB = up(B, 4 * k * n),
					   *dC = up(C, 4 * m * n);
			float	   *h;
			char		nm[64];

			gnn_backend_gemm(cpu, ta, tb, m, n, k, 0.7f, A, ta ? m : k, B, tb ? k : n, 0.5f, C, n);
			gnn_backend_gemm(gpu, ta, tb, m, n, k, 0.7f, dA, ta ? m : k, dB, tb ? k : n, 0.5f, dC, n);
			h = down(dC, m * n);
			snprintf(nm, sizeof(nm), "gemm trans_a=%d trans_b=%d", ta, tb);
			cmp(nm, C, h, m * n, 1e-4);
			free(A); free(B); free(C); free(h);
			GFREE(dA); GFREE(dB); GFREE(dC);
		}
}

static void
test_sparse(void)
{
	pcsr		s;
	int64_t		d = 21;

	make_csr(&s, 40, 55, 0.1, true);
	for (int agg = 0; agg < 2; agg++)
		for (int scaled = 0; scaled < 2; scaled++)
		{
			float	   *rs = rnd(s.nr, 0.5f, 1.5f),
					   *cs = rnd(s.nc, 0.5f, 1.5f);
			float	   *X = rnd(s.nc * d, -1, 1),
					   *Y = rnd(s.nr * d, -1, 1),
					   *G = rnd(s.nr * d, -1, 1),
					   *Z = rnd(s.nc * d, -1, 1);
			float	   *drs = up(rs, 4 * s.nr),
					   *dcs = up(cs, 4 * s.nc),
					   *dX = up(X, 4 * s.nc * d),
					   *dY = up(Y, 4 * s.nr * d),
					   *dG = up(G, 4 * s.nr * d),
					   *dZ = up(Z, 4 * s.nc * d);
			float	   *h;
			char		nm[80];

			gnn_backend_spmm(cpu, &s.c.csr, agg, scaled ? rs : NULL, scaled ? cs : NULL, X, d, 1.0f, Y);
			gnn_backend_spmm(gpu, &s.g.csr, agg, scaled ? drs : NULL, scaled ? dcs : NULL, dX, d, 1.0f, dY);
			h = down(dY, s.nr * d);
			snprintf(nm, sizeof(nm), "spmm agg=%d scales=%d beta=1", agg, scaled);
			cmp(nm, Y, h, s.nr * d, 1e-4);
			free(h);
			gnn_backend_spmm_t(cpu, &s.c.csr, agg, scaled ? rs : NULL, scaled ? cs : NULL, G, d, 0.0f, Z);
			gnn_backend_spmm_t(gpu, &s.g.csr, agg, scaled ? drs : NULL, scaled ? dcs : NULL, dG, d, 0.0f, dZ);
			h = down(dZ, s.nc * d);
			snprintf(nm, sizeof(nm), "spmm_t agg=%d scales=%d beta=0", agg, scaled);
			cmp(nm, Z, h, s.nc * d, 1e-4);
			free(h);
			free(rs); free(cs); free(X); free(Y); free(G); free(Z);
			GFREE(drs); GFREE(dcs); GFREE(dX); GFREE(dY); GFREE(dG); GFREE(dZ);
		}

	/* max-pool aggregation */
	{
		float	   *X = rnd(s.nc * d, -1, 1),
				   *Y = malloc(4 * s.nr * d),
				   *dY = rnd(s.nr * d, -1, 1),
				   *dX = malloc(4 * s.nc * d);
		int32_t    *am = malloc(4 * s.nr * d);
		float	   *gX = up(X, 4 * s.nc * d),
				   *gY = dalloc(4 * s.nr * d),
				   *gdY = up(dY, 4 * s.nr * d),
				   *gdX = dalloc(4 * s.nc * d);
		int32_t    *gam = dalloc(4 * s.nr * d),
				   *ham = malloc(4 * s.nr * d);
		float	   *h;

		gnn_backend_max_agg(cpu, &s.c.csr, X, d, Y, am);
		gnn_backend_max_agg(gpu, &s.g.csr, gX, d, gY, gam);
		h = down(gY, s.nr * d);
		cmp("max_agg", Y, h, s.nr * d, 1e-6);
		gnn_backend_copy_d2h(gpu, ham, gam, 4 * s.nr * d);
		CHECK(memcmp(am, ham, 4 * s.nr * d) == 0, "max_agg argmax identical");
		free(h);
		gnn_backend_max_agg_backward(cpu, &s.c.csr, dY, am, d, 0.0f, dX);
		gnn_backend_max_agg_backward(gpu, &s.g.csr, gdY, gam, d, 0.0f, gdX);
		h = down(gdX, s.nc * d);
		cmp("max_agg_backward", dX, h, s.nc * d, 1e-5);
		free(h); free(X); free(Y); free(dY); free(dX); free(am); free(ham);
		GFREE(gX); GFREE(gY); GFREE(gdY); GFREE(gdX); GFREE(gam);
	}

	/* GAT ops */
	{
		int64_t		H = 3,
					f = 5,
					hf = H * f,
					nnz = s.nnz;
		float	   *Hm = rnd(s.nc * hf, -1, 1),
				   *att = rnd(hf, -1, 1),
				   *as = malloc(4 * s.nc * H),
				   *ad = malloc(4 * s.nr * H),
				   *alpha = malloc(4 * nnz * H),
				   *out = malloc(4 * s.nr * hf),
				   *dout = rnd(s.nr * hf, -1, 1),
				   *dH = rnd(s.nc * hf, -1, 1),
				   *dal = malloc(4 * nnz * H),
				   *das = malloc(4 * s.nc * H),
				   *dad = malloc(4 * s.nr * H),
				   *ds = rnd(s.nc * H, -1, 1),
				   *datt = malloc(4 * hf),
				   *mean = malloc(4 * s.nr * f),
				   *dmean = rnd(s.nr * f, -1, 1),
				   *dX = malloc(4 * s.nr * hf);
		float	   *gH = up(Hm, 4 * s.nc * hf),
				   *gatt = up(att, 4 * hf),
				   *gas = dalloc(4 * s.nc * H),
				   *gad = dalloc(4 * s.nr * H),
				   *galpha = dalloc(4 * nnz * H),
				   *gout = dalloc(4 * s.nr * hf),
				   *gdout = up(dout, 4 * s.nr * hf),
				   *gdH = up(dH, 4 * s.nc * hf),
				   *gdal = dalloc(4 * nnz * H),
				   *gdas = dalloc(4 * s.nc * H),
				   *gdad = dalloc(4 * s.nr * H),
				   *gds = up(ds, 4 * s.nc * H),
				   *gdatt = dalloc(4 * hf),
				   *gmean = dalloc(4 * s.nr * f),
				   *gdmean = up(dmean, 4 * s.nr * f),
				   *gdX = dalloc(4 * s.nr * hf);
		float	   *h;

		gnn_backend_gat_node_scores(cpu, Hm, s.nc, H, f, att, as);
		gnn_backend_gat_node_scores(gpu, gH, s.nc, H, f, gatt, gas);
		h = down(gas, s.nc * H); cmp("gat_node_scores (src)", as, h, s.nc * H, 1e-5); free(h);
		gnn_backend_gat_node_scores(cpu, Hm, s.nr, H, f, att, ad);
		gnn_backend_gat_node_scores(gpu, gH, s.nr, H, f, gatt, gad);
		h = down(gad, s.nr * H); cmp("gat_node_scores (dst)", ad, h, s.nr * H, 1e-5); free(h);
		gnn_backend_gat_edge_softmax(cpu, &s.c.csr, H, as, ad, 0.2f, alpha);
		gnn_backend_gat_edge_softmax(gpu, &s.g.csr, H, gas, gad, 0.2f, galpha);
		h = down(galpha, nnz * H); cmp("gat_edge_softmax", alpha, h, nnz * H, 1e-5); free(h);
		gnn_backend_gat_aggregate(cpu, &s.c.csr, H, f, alpha, Hm, out);
		gnn_backend_gat_aggregate(gpu, &s.g.csr, H, f, galpha, gH, gout);
		h = down(gout, s.nr * hf); cmp("gat_aggregate", out, h, s.nr * hf, 1e-4); free(h);
		gnn_backend_gat_aggregate_backward(cpu, &s.c.csr, H, f, alpha, Hm, dout, 1.0f, dH, dal);
		gnn_backend_gat_aggregate_backward(gpu, &s.g.csr, H, f, galpha, gH, gdout, 1.0f, gdH, gdal);
		h = down(gdH, s.nc * hf); cmp("gat_aggregate_backward dH (beta=1)", dH, h, s.nc * hf, 1e-4); free(h);
		h = down(gdal, nnz * H); cmp("gat_aggregate_backward dalpha", dal, h, nnz * H, 1e-4); free(h);
		gnn_backend_gat_edge_softmax_backward(cpu, &s.c.csr, H, as, ad, 0.2f, alpha, dal, das, dad);
		gnn_backend_gat_edge_softmax_backward(gpu, &s.g.csr, H, gas, gad, 0.2f, galpha, gdal, gdas, gdad);
		h = down(gdas, s.nc * H); cmp("gat_edge_softmax_backward da_src", das, h, s.nc * H, 1e-4); free(h);
		h = down(gdad, s.nr * H); cmp("gat_edge_softmax_backward da_dst", dad, h, s.nr * H, 1e-4); free(h);
		gnn_backend_gat_node_scores_backward(cpu, Hm, s.nc, H, f, att, ds, dH, 0.0f, datt);
		gnn_backend_gat_node_scores_backward(gpu, gH, s.nc, H, f, gatt, gds, gdH, 0.0f, gdatt);
		h = down(gdH, s.nc * hf); cmp("gat_node_scores_backward dH (+=)", dH, h, s.nc * hf, 1e-4); free(h);
		h = down(gdatt, hf); cmp("gat_node_scores_backward datt", datt, h, hf, 1e-4); free(h);
		gnn_backend_head_mean(cpu, out, s.nr, H, f, mean);
		gnn_backend_head_mean(gpu, gout, s.nr, H, f, gmean);
		h = down(gmean, s.nr * f); cmp("head_mean", mean, h, s.nr * f, 1e-4); free(h);
		gnn_backend_head_mean_backward(cpu, dmean, s.nr, H, f, dX);
		gnn_backend_head_mean_backward(gpu, gdmean, s.nr, H, f, gdX);
		h = down(gdX, s.nr * hf); cmp("head_mean_backward", dX, h, s.nr * hf, 1e-6); free(h);
		free(Hm); free(att); free(as); free(ad); free(alpha); free(out); free(dout); free(dH);
		free(dal); free(das); free(dad); free(ds); free(datt); free(mean); free(dmean); free(dX);
		GFREE(gH); GFREE(gatt); GFREE(gas); GFREE(gad); GFREE(galpha); GFREE(gout); GFREE(gdout);
		GFREE(gdH); GFREE(gdal); GFREE(gdas); GFREE(gdad); GFREE(gds); GFREE(gdatt); GFREE(gmean);
		GFREE(gdmean); GFREE(gdX);
	}
	free_csr(&s);
}

static void
test_elementwise(void)
{
	int64_t		n = 10007,
				rows = 97,
				cols = 13;
	float	   *x = rnd(n, -2, 2),
			   *dy = rnd(n, -1, 1),
			   *y = malloc(4 * n),
			   *dx = malloc(4 * n);
	float	   *gx = up(x, 4 * n),
			   *gdy = up(dy, 4 * n),
			   *gy = dalloc(4 * n),
			   *gdx = dalloc(4 * n);
	float	   *h;
	const char *an[] = {"none", "relu", "elu", "leaky_relu"};

	for (int a = 0; a < 4; a++)
	{
		char		nm[64];

		gnn_backend_act_forward(cpu, a, a == 3 ? 0.2f : 1.0f, x, y, n);
		gnn_backend_act_forward(gpu, a, a == 3 ? 0.2f : 1.0f, gx, gy, n);
		h = down(gy, n);
		snprintf(nm, sizeof(nm), "act_forward %s", an[a]);
		cmp(nm, y, h, n, 1e-5);
		free(h);
		gnn_backend_act_backward(cpu, a, a == 3 ? 0.2f : 1.0f, x, y, dy, dx, n);
		gnn_backend_act_backward(gpu, a, a == 3 ? 0.2f : 1.0f, gx, gy, gdy, gdx, n);
		h = down(gdx, n);
		snprintf(nm, sizeof(nm), "act_backward %s", an[a]);
		cmp(nm, dx, h, n, 1e-5);
		free(h);
	}
	memcpy(y, dy, 4 * n);
	gnn_backend_copy_h2d(gpu, gy, dy, 4 * n);
	gnn_backend_axpby(cpu, n, 0.3f, x, -1.5f, y);
	gnn_backend_axpby(gpu, n, 0.3f, gx, -1.5f, gy);
	h = down(gy, n); cmp("axpby", y, h, n, 1e-6); free(h);
	{
		float	   *b = rnd(cols, -1, 1),
				   *gb = up(b, 4 * cols),
				   *db = rnd(cols, -1, 1),
				   *gdb = up(db, 4 * cols);

		gnn_backend_add_bias(cpu, y, b, rows, cols);
		gnn_backend_add_bias(gpu, gy, gb, rows, cols);
		h = down(gy, rows * cols); cmp("add_bias", y, h, rows * cols, 1e-6); free(h);
		gnn_backend_bias_grad(cpu, x, rows, cols, 1.0f, db);
		gnn_backend_bias_grad(gpu, gx, rows, cols, 1.0f, gdb);
		h = down(gdb, cols); cmp("bias_grad (beta=1)", db, h, cols, 1e-4); free(h);
		free(b); free(db); GFREE(gb); GFREE(gdb);
	}
	gnn_backend_dropout_forward(cpu, x, y, n, 0.37f, 0x1234567890abcdefULL);
	gnn_backend_dropout_forward(gpu, gx, gy, n, 0.37f, 0x1234567890abcdefULL);
	h = down(gy, n); cmp("dropout_forward (identical mask)", y, h, n, 1e-6); free(h);
	gnn_backend_dropout_backward(cpu, dy, dx, n, 0.37f, 99);
	gnn_backend_dropout_backward(gpu, gdy, gdx, n, 0.37f, 99);
	h = down(gdx, n); cmp("dropout_backward", dx, h, n, 1e-6); free(h);
	gnn_backend_softmax_rows(cpu, x, y, rows, cols);
	gnn_backend_softmax_rows(gpu, gx, gy, rows, cols);
	h = down(gy, rows * cols); cmp("softmax_rows", y, h, rows * cols, 1e-5); free(h);

	/* xent */
	{
		int32_t		lab[97],
					rws[60];
		int32_t    *glab,
				   *grws;
		float		l1,
					l2;
		int64_t		c1,
					c2,
					k1,
					k2;

		for (int i = 0; i < rows; i++)
			lab[i] = i % 11 == 0 ? -1 : (int32_t) gnn_rng_below(&rng, cols);
		for (int i = 0; i < 60; i++)
			rws[i] = i + 30;
		glab = up(lab, sizeof(lab));
		grws = up(rws, sizeof(rws));
		gnn_backend_xent(cpu, x, rows, cols, lab, rws, 60, dx, &l1, &c1, &k1);
		gnn_backend_xent(gpu, gx, rows, cols, glab, grws, 60, gdx, &l2, &c2, &k2);
		h = down(gdx, rows * cols);
		cmp("xent dlogits", dx, h, rows * cols, 1e-5);
		CHECK(fabsf(l1 - l2) <= 1e-5f * fabsf(l1) && c1 == c2 && k1 == k2,
			  "xent loss %.7f vs %.7f, correct %lld vs %lld, counted %lld vs %lld", l1, l2,
			  (long long) c1, (long long) c2, (long long) k1, (long long) k2);
		free(h); GFREE(glab); GFREE(grws);
	}
	/* gather / scatter */
	{
		int32_t		idx[50];
		int32_t    *gidx;
		int64_t		d = 13;

		for (int i = 0; i < 50; i++)
			idx[i] = (int32_t) gnn_rng_below(&rng, 200);	/* duplicates on purpose */
		gidx = up(idx, sizeof(idx));
		gnn_backend_gather_rows(cpu, x, d, idx, 50, y);
		gnn_backend_gather_rows(gpu, gx, d, gidx, 50, gy);
		h = down(gy, 50 * d); cmp("gather_rows", y, h, 50 * d, 0); free(h);
		memcpy(y, x, 4 * 200 * d);
		gnn_backend_copy_d2d(gpu, gy, gx, 4 * 200 * d);
		gnn_backend_scatter_add_rows(cpu, dy, d, idx, 50, y);
		gnn_backend_scatter_add_rows(gpu, gdy, d, gidx, 50, gy);
		h = down(gy, 200 * d); cmp("scatter_add_rows (duplicate indices)", y, h, 200 * d, 1e-6); free(h);
		GFREE(gidx);
	}
	/* optimisers */
	{
		float	   *w = rnd(n, -1, 1),
				   *m = calloc(n, 4),
				   *v = calloc(n, 4);
		float	   *gw = up(w, 4 * n),
				   *gm = up(m, 4 * n),
				   *gv = up(v, 4 * n);

		for (int t = 1; t <= 3; t++)
		{
			gnn_backend_adam_step(cpu, w, dy, m, v, n, 0.01f, 0.9f, 0.999f, 1e-8f, 5e-4f, t);
			gnn_backend_adam_step(gpu, gw, gdy, gm, gv, n, 0.01f, 0.9f, 0.999f, 1e-8f, 5e-4f, t);
		}
		h = down(gw, n); cmp("adam_step x3", w, h, n, 1e-5); free(h);
		gnn_backend_sgd_step(cpu, w, dy, m, n, 0.1f, 0.9f, 1e-3f);
		gnn_backend_sgd_step(gpu, gw, gdy, gm, n, 0.1f, 0.9f, 1e-3f);
		h = down(gw, n); cmp("sgd_step (momentum)", w, h, n, 1e-5); free(h);
		gnn_backend_memset(gpu, gm, 0, 4 * n);
		h = down(gm, n);
		memset(m, 0, 4 * n);
		cmp("memset", m, h, n, 0); free(h);
		free(w); free(m); free(v); GFREE(gw); GFREE(gm); GFREE(gv);
	}
	free(x); free(dy); free(y); free(dx);
	GFREE(gx); GFREE(gdy); GFREE(gy); GFREE(gdx);
}

int
main(void)
{
	gnn_error	err;
	const char *so = getenv("GNN_CUDA_SO");
	const char *self = getenv("GNN_PARITY_SELFTEST");

	if (gnn_backend_cpu_create(0, &cpu, &err) != GNN_OK)
	{
		CHECK(0, "cpu backend: %s", err.msg);
		return check_done();
	}
	if (self && *self == '1')
	{
		gnn_backend_cpu_create(1, &gpu, &err);
		snprintf(gpu->name, sizeof(gpu->name), "cpu#2");
	}
	else if (gnn_backend_cuda_load(so && *so ? so : "kernels/gnn_cuda.so", 0, &gpu, &err) != GNN_OK)
	{
		char		reason[GNN_ERRMSG_LEN + 32];

		snprintf(reason, sizeof(reason), "CUDA backend unavailable: %s", err.msg);
		CHECK_SKIP(reason, "CPU vs CUDA parity of every backend op");
		gnn_backend_destroy(cpu);
		return check_done();
	}
	NOTE("comparing cpu with %s", gpu->name);
	gnn_rng_seed(&rng, 2024);
	test_gemm();
	test_sparse();
	test_elementwise();
	gnn_backend_destroy(gpu);
	gnn_backend_destroy(cpu);
	return check_done();
}
