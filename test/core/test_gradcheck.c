/*
 * test_gradcheck: the hand-written backward passes against finite
 * differences.
 *
 * Method: float32 finite differences are too noisy for a 1e-3 bound (the
 * loss has ~1e-7 relative rounding noise, and kinks of ReLU / LeakyReLU /
 * max make large steps unsafe).  So the test carries an independent
 * double-precision reference forward pass of every layer, written from the
 * formulas in model.h, and differentiates *that* with central differences
 * (h = 1e-6: truncation ~1e-12, rounding ~1e-10, and a kink is crossed only
 * with probability ~1e-6 per value).  The analytic float32 gradient from
 * gnn_model_backward must match it with
 *     rel = ||g_analytic - g_numeric||_2 / max(||g_numeric||_2, 1e-6) < 1e-3
 * per parameter tensor (float32 itself gives ~1e-6).  The reference forward
 * also checks the float forward (logits within 1e-4 relative).
 *
 * Covered: GCN, SAGE mean, SAGE pool, GAT multi-head concat + mean output,
 * dense and sparse (CSR) first-layer inputs, full-batch and bipartite
 * (n_dst < n_src) blocks, with input and attention dropout; the loss and
 * activations op by op; Adam and SGD steps against hand computation.
 */
#include "check.h"
#include "nn/model.h"
#include "nn/optim.h"
#include "base/ops_math.h"

#include <math.h>

/* ------------------------------------------------------------------ fixtures */

typedef struct hblock
{
	int64_t		nd,
				ns,
				nnz;
	int64_t		ptr[64];
	int32_t		idx[1024];
	int16_t		et[1024];		/* relation of each entry (typed blocks) */
	int16_t		nt[64];			/* node type of each destination */
} hblock;

/* typed blocks for the relational models: relations and node types drawn when > 0 */
static int	g_nrel = 0;
static int	g_ntypes = 0;
static int	g_compact_rows = 0,
			g_compact_cols = 0,
			g_whole = 0;

/* a node's type: fixed by its index, so destination i and source i agree */
static int16_t
node_type_of(int64_t v)
{
	return (int16_t) (g_ntypes > 0 ? (v * 7 + 3) % 5 % g_ntypes : 0);
}

static void
make_block(gnn_rng *r, int64_t nd, int64_t ns, double pedge, hblock *b)
{
	b->nd = nd;
	b->ns = ns;
	b->nnz = 0;
	b->ptr[0] = 0;
	for (int64_t i = 0; i < nd; i++)
	{
		for (int64_t j = 0; j < ns; j++)
			if (j != i && gnn_rng_double(r) < pedge)
			{
				double		u = gnn_rng_double(r);

				/* skewed, so that the rare relations touch few rows and columns
				 * (compacted) and the common one most (kept whole) */
				b->et[b->nnz] = (int16_t) (g_nrel <= 0 ? 0 : u < 0.6 ? 0 : (int) ((u - 0.6) / 0.4 * (g_nrel - 1)) + 1);
				b->idx[b->nnz++] = (int32_t) j;
			}
		b->ptr[i + 1] = b->nnz;
		b->nt[i] = node_type_of(i);
	}
}

typedef struct fixture
{
	int64_t		n;				/* input rows */
	int32_t		din;
	bool		sparse;
	double		x[64 * 32];		/* dense view of the input */
	int64_t		fptr[65];
	int32_t		fidx[64 * 32];
	float		fval[64 * 32];
	int32_t		labels[64];
	int32_t		rows[64];
	int64_t		nrows;
} fixture;

static void
make_input(gnn_rng *r, int64_t n, int32_t din, bool sparse, fixture *fx)
{
	memset(fx, 0, sizeof(*fx));
	fx->n = n;
	fx->din = din;
	fx->sparse = sparse;
	fx->fptr[0] = 0;
	for (int64_t i = 0; i < n; i++)
	{
		for (int32_t k = 0; k < din; k++)
		{
			double		v = 0;

			if (!sparse)
				v = 2 * gnn_rng_double(r) - 1;
			else if (gnn_rng_double(r) < 0.3)
				v = 0.5 + gnn_rng_double(r);
			if (sparse && v != 0)
			{
				fx->fidx[fx->fptr[i + 1 - 1] + (fx->fptr[i + 1] - fx->fptr[i])] = k;
			}
			fx->x[i * din + k] = v;
		}
	}
	/* CSR of the non-zeros */
	if (sparse)
	{
		int64_t		e = 0;

		for (int64_t i = 0; i < n; i++)
		{
			for (int32_t k = 0; k < din; k++)
				if (fx->x[i * din + k] != 0)
				{
					fx->fidx[e] = k;
					fx->fval[e] = (float) fx->x[i * din + k];
					fx->x[i * din + k] = fx->fval[e];
					e++;
				}
			fx->fptr[i + 1] = e;
		}
	}
	else
		for (int64_t i = 0; i < n * din; i++)
			fx->x[i] = (float) fx->x[i];	/* exactly representable */
}

/* ------------------------------------------------------------------ double reference */

typedef struct refw
{
	int			np;
	char		name[32][GNN_PARAM_NAME_LEN];
	int64_t		rows[32],
				cols[32];
	double	   *w[32];
} refw;

static double *
P(refw *R, int layer, const char *what)
{
	char		nm[GNN_PARAM_NAME_LEN];

	snprintf(nm, sizeof(nm), "l%d.%s", layer, what);
	for (int i = 0; i < R->np; i++)
		if (strcmp(R->name[i], nm) == 0)
			return R->w[i];
	fprintf(stderr, "missing param %s\n", nm);
	abort();
}

static double
ref_act(gnn_act a, double x)
{
	switch (a)
	{
		case GNN_ACT_RELU:
			return x > 0 ? x : 0;
		case GNN_ACT_ELU:
			return x > 0 ? x : expm1(x);
		case GNN_ACT_LEAKY_RELU:
			return x > 0 ? x : 0.2 * x;
		default:
			return x;
	}
}

/* out = logits (n_dst of last block x classes); returns mean xent on rows */
static double
ref_forward(const gnn_model_config *c, refw *R, hblock *const *blk, const fixture *fx,
			bool train, uint64_t seed, double *logits_out)
{
	int64_t		ns0 = blk[0]->ns;
	double	   *X = malloc(sizeof(double) * ns0 * fx->din);
	int64_t		din = fx->din;
	double		loss = 0;
	int64_t		counted = 0;

	/* layer-0 input with dropout */
	memcpy(X, fx->x, sizeof(double) * ns0 * din);
	for (int l = 0; l < c->layers; l++)
	{
		hblock	   *b = blk[l];
		bool		last = l == c->layers - 1;
		int64_t		nd = b->nd,
					ns = b->ns;
		double		p = train ? c->dropout : 0;
		uint64_t	sin = gnn_model_dropout_seed(seed, l, false);
		uint64_t	sat = gnn_model_dropout_seed(seed, l, true);
		int64_t		dout,
					H = 1,
					f = 0;
		double	   *Y;
		gnn_act		act = last ? GNN_ACT_NONE : c->act;

		if (p > 0)
		{
			if (l == 0 && fx->sparse)
			{
				for (int64_t i = 0; i < ns; i++)
					for (int64_t e = fx->fptr[i]; e < fx->fptr[i + 1]; e++)
						if (!gnn_math_dropout_keep(sin, (uint64_t) e, (float) p))
							X[i * din + fx->fidx[e]] = 0;
						else
							X[i * din + fx->fidx[e]] *= (double) (1.0f / (1.0f - (float) p));
			}
			else
				for (int64_t i = 0; i < ns * din; i++)
					X[i] = gnn_math_dropout_keep(sin, (uint64_t) i, (float) p) ?
						X[i] * (double) (1.0f / (1.0f - (float) p)) : 0;
		}
		if (c->kind == GNN_MODEL_RGCN || c->kind == GNN_MODEL_HSAGE)
		{
			/* H = X P on layer 0; Y = root + sum_r mean_r(H) W_r + bias (per type for HSAGE) */
			int64_t		dh = l == 0 ? c->hidden : din;
			bool		hs = c->kind == GNN_MODEL_HSAGE;
			double	   *Hm = malloc(sizeof(double) * ns * dh);
			double	   *root = P(R, l, "root"),
					   *bias = P(R, l, "bias");
			int64_t		nb = c->num_bases;

			dout = last ? c->out_dim : c->hidden;
			if (l == 0)
			{
				double	   *Pj = P(R, 0, "proj");

				for (int64_t j = 0; j < ns; j++)
					for (int64_t k = 0; k < dh; k++)
					{
						double		z = 0;

						for (int64_t q = 0; q < din; q++)
							z += X[j * din + q] * Pj[q * dh + k];
						Hm[j * dh + k] = z;
					}
			}
			else
				memcpy(Hm, X, sizeof(double) * ns * dh);
			Y = calloc(nd * dout, sizeof(double));
			for (int64_t i = 0; i < nd; i++)
			{
				int64_t		t = hs ? b->nt[i] : 0;

				for (int64_t k = 0; k < dout; k++)
				{
					double		z = bias[t * dout + k];

					for (int64_t q = 0; q < dh; q++)
						z += Hm[i * dh + q] * root[(t * dh + q) * dout + k];
					Y[i * dout + k] = z;
				}
				for (int rr = 0; rr < c->num_relations; rr++)
				{
					double		mean[64] = {0};
					int			cnt = 0;

					for (int64_t e = b->ptr[i]; e < b->ptr[i + 1]; e++)
						if (b->et[e] == rr)
						{
							cnt++;
							for (int64_t q = 0; q < dh; q++)
								mean[q] += Hm[b->idx[e] * dh + q];
						}
					if (cnt == 0)
						continue;
					for (int64_t q = 0; q < dh; q++)
						for (int64_t k = 0; k < dout; k++)
						{
							double		w = 0;

							if (nb > 0)
							{
								double	   *V = P(R, l, "bases"),
										   *cf = P(R, l, "coef");

								for (int64_t bb = 0; bb < nb; bb++)
									w += cf[rr * nb + bb] * V[(bb * dh + q) * dout + k];
							}
							else
								w = P(R, l, "weight")[(rr * dh + q) * dout + k];
							Y[i * dout + k] += mean[q] / cnt * w;
						}
				}
				for (int64_t k = 0; k < dout; k++)
					Y[i * dout + k] = ref_act(act, Y[i * dout + k]);
			}
			free(Hm);
			free(X);
			X = Y;
			din = dout;
			continue;
		}
		if (c->kind == GNN_MODEL_GAT)
		{
			H = last ? c->out_heads : c->heads;
			f = last ? c->out_dim : c->hidden;
			dout = last ? f : H * f;
		}
		else
			dout = last ? c->out_dim : c->hidden;
		Y = calloc(nd * dout, sizeof(double));

		/* self-looped structure and degrees (GCN / GAT) */
		int64_t		lptr[65],
					lnnz = 0;
		int32_t		lidx[1100];
		double		ddst[64] = {0},
					dsrc[64] = {0};

		lptr[0] = 0;
		for (int64_t i = 0; i < nd; i++)
		{
			bool		placed = false;

			for (int64_t e = b->ptr[i]; e < b->ptr[i + 1]; e++)
			{
				if (!placed && b->idx[e] > i)
				{
					lidx[lnnz++] = (int32_t) i;
					placed = true;
				}
				lidx[lnnz++] = b->idx[e];
			}
			if (!placed)
				lidx[lnnz++] = (int32_t) i;
			lptr[i + 1] = lnnz;
		}
		for (int64_t i = 0; i < nd; i++)
			for (int64_t e = lptr[i]; e < lptr[i + 1]; e++)
			{
				ddst[i] += 1;
				dsrc[lidx[e]] += 1;
			}

		if (c->kind == GNN_MODEL_GCN)
		{
			double	   *Wt = P(R, l, "weight");

			for (int64_t i = 0; i < nd; i++)
				for (int64_t e = lptr[i]; e < lptr[i + 1]; e++)
				{
					int64_t		j = lidx[e];
					double		cf = 1.0 / sqrt(ddst[i] * dsrc[j]);

					for (int64_t k = 0; k < dout; k++)
					{
						double		z = 0;

						for (int64_t q = 0; q < din; q++)
							z += X[j * din + q] * Wt[q * dout + k];
						Y[i * dout + k] += cf * z;
					}
				}
		}
		else if (c->kind == GNN_MODEL_SAGE)
		{
			double	   *Wr = P(R, l, "root"),
					   *Wn = P(R, l, "weight");

			if (c->aggr == GNN_AGGR_MEAN)
			{
				for (int64_t i = 0; i < nd; i++)
				{
					int64_t		deg = b->ptr[i + 1] - b->ptr[i];

					for (int64_t e = b->ptr[i]; e < b->ptr[i + 1]; e++)
						for (int64_t k = 0; k < dout; k++)
						{
							double		z = 0;

							for (int64_t q = 0; q < din; q++)
								z += X[b->idx[e] * din + q] * Wn[q * dout + k];
							Y[i * dout + k] += z / deg;
						}
				}
			}
			else
			{
				double	   *Wp = P(R, l, "pool"),
						   *bp = P(R, l, "pool_bias");
				int64_t		pw = din > 256 ? c->hidden : din;
				double	   *Q = malloc(sizeof(double) * ns * pw);

				for (int64_t j = 0; j < ns; j++)
					for (int64_t k = 0; k < pw; k++)
					{
						double		z = bp[k];

						for (int64_t q = 0; q < din; q++)
							z += X[j * din + q] * Wp[q * pw + k];
						Q[j * pw + k] = z > 0 ? z : 0;
					}
				for (int64_t i = 0; i < nd; i++)
				{
					double		M[64];

					for (int64_t k = 0; k < pw; k++)
					{
						M[k] = 0;
						for (int64_t e = b->ptr[i]; e < b->ptr[i + 1]; e++)
							if (e == b->ptr[i] || Q[b->idx[e] * pw + k] > M[k])
								M[k] = Q[b->idx[e] * pw + k];
					}
					for (int64_t k = 0; k < dout; k++)
						for (int64_t q = 0; q < pw; q++)
							Y[i * dout + k] += M[q] * Wn[q * dout + k];
				}
				free(Q);
			}
			for (int64_t i = 0; i < nd; i++)
				for (int64_t k = 0; k < dout; k++)
					for (int64_t q = 0; q < din; q++)
						Y[i * dout + k] += X[i * din + q] * Wr[q * dout + k];
		}
		else
		{
			double	   *Wt = P(R, l, "weight"),
					   *as_w = P(R, l, "att_src"),
					   *ad_w = P(R, l, "att_dst");
			int64_t		hf = H * f;
			double	   *Hm = calloc(ns * hf, sizeof(double));
			double	   *as = calloc(ns * H, sizeof(double));
			double	   *ad = calloc(ns * H, sizeof(double));
			double		pa = train ? c->attn_dropout : 0;

			for (int64_t j = 0; j < ns; j++)
				for (int64_t k = 0; k < hf; k++)
					for (int64_t q = 0; q < din; q++)
						Hm[j * hf + k] += X[j * din + q] * Wt[q * hf + k];
			for (int64_t j = 0; j < ns; j++)
				for (int64_t h = 0; h < H; h++)
					for (int64_t k = 0; k < f; k++)
					{
						as[j * H + h] += Hm[j * hf + h * f + k] * as_w[h * f + k];
						ad[j * H + h] += Hm[j * hf + h * f + k] * ad_w[h * f + k];
					}
			for (int64_t i = 0; i < nd; i++)
				for (int64_t h = 0; h < H; h++)
				{
					double		mx = -1e300,
								s = 0,
								a[1100];

					for (int64_t e = lptr[i]; e < lptr[i + 1]; e++)
					{
						double		z = as[lidx[e] * H + h] + ad[i * H + h];

						a[e] = z > 0 ? z : c->negative_slope * z;
						mx = a[e] > mx ? a[e] : mx;
					}
					for (int64_t e = lptr[i]; e < lptr[i + 1]; e++)
						s += (a[e] = exp(a[e] - mx));
					for (int64_t e = lptr[i]; e < lptr[i + 1]; e++)
					{
						double		al = a[e] / s;

						if (pa > 0)
							al = gnn_math_dropout_keep(sat, (uint64_t) (e * H + h), (float) pa) ?
								al * (double) (1.0f / (1.0f - (float) pa)) : 0;
						for (int64_t k = 0; k < f; k++)
						{
							double		v = al * Hm[lidx[e] * hf + h * f + k];

							if (last)
								Y[i * dout + k] += v / H;
							else
								Y[i * dout + h * f + k] += v;
						}
					}
				}
			free(Hm);
			free(as);
			free(ad);
		}
		{
			double	   *bb = P(R, l, "bias");

			for (int64_t i = 0; i < nd; i++)
				for (int64_t k = 0; k < dout; k++)
					Y[i * dout + k] = ref_act(act, Y[i * dout + k] + bb[k]);
		}
		free(X);
		X = Y;
		din = dout;
	}
	/* loss */
	{
		int64_t		nd = blk[c->layers - 1]->nd,
					C = c->out_dim;

		if (logits_out)
			memcpy(logits_out, X, sizeof(double) * nd * C);

		for (int64_t r = 0; r < fx->nrows; r++)
		{
			int64_t		i = fx->rows[r];
			double		mx = -1e300,
						s = 0;

			if (i >= nd)
				continue;
			for (int64_t k = 0; k < C; k++)
				mx = X[i * C + k] > mx ? X[i * C + k] : mx;
			for (int64_t k = 0; k < C; k++)
				s += exp(X[i * C + k] - mx);
			loss += -(X[i * C + fx->labels[i]] - mx - log(s));
			counted++;
		}
	}
	free(X);
	return loss / counted;
}

/* ------------------------------------------------------------------ one model check */

static void
check_model(const char *label, gnn_backend *be, gnn_model_config *c, bool sparse, bool bipartite,
			bool train, uint64_t seed)
{
	gnn_rng		r;
	hblock		hb[3];
	hblock	   *hbp[3];
	gnn_dblock	db[3];
	gnn_dblock *dbp[GNN_MAX_LAYERS];
	fixture		fx;
	gnn_dfeat	x;
	gnn_model  *m = NULL;
	gnn_error	err;
	const float *logits;
	refw		R;
	int64_t		nout;
	gnn_status	st;

	gnn_rng_seed(&r, seed);
	if (bipartite)
	{
		make_block(&r, 9, 13, 0.3, &hb[0]);
		make_block(&r, 6, 9, 0.35, &hb[1]);
		make_block(&r, 4, 6, 0.4, &hb[2]);
	}
	else
	{
		make_block(&r, 11, 11, 0.3, &hb[0]);
		hb[1] = hb[0];
		hb[2] = hb[0];
	}
	for (int l = 0; l < 3; l++)
		hbp[l] = &hb[l];
	make_input(&r, hb[0].ns, c->in_dim, sparse, &fx);
	nout = hb[c->layers - 1].nd;
	for (int64_t i = 0; i < nout; i++)
	{
		fx.labels[i] = (int32_t) gnn_rng_below(&r, c->out_dim);
		if (i % 3 != 2)
			fx.rows[fx.nrows++] = (int32_t) i;
	}

	for (int l = 0; l < 3; l++)
	{
		gnn_block	b = {hb[l].nd, hb[l].ns, hb[l].nnz, hb[l].ptr, hb[l].idx, NULL,
			g_nrel > 0 ? hb[l].et : NULL, g_ntypes > 0 ? hb[l].nt : NULL};

		st = gnn_dblock_create(be, &b, &db[l], &err);
		if (st != GNN_OK)
		{
			CHECK(0, "%s: block: %s", label, err.msg);
			return;
		}
	}
	for (int l = 0; l < GNN_MAX_LAYERS; l++)
		dbp[l] = &db[l < 3 ? l : 2];
	for (int l = 0; l < 3; l++)
		for (int32_t q = 0; q < db[l].num_rel; q++)
		{
			g_compact_rows += db[l].rel[q].rows != NULL;
			g_compact_cols += db[l].rel[q].cols != NULL;
			g_whole += db[l].rel[q].a.csr.nnz > 0 && !db[l].rel[q].rows;
		}
	if (sparse)
		st = gnn_dfeat_sparse(be, fx.n, fx.din, fx.fptr, fx.fidx, fx.fval, &x, &err);
	else
	{
		float		xf[64 * 32];

		for (int64_t i = 0; i < fx.n * fx.din; i++)
			xf[i] = (float) fx.x[i];
		st = gnn_dfeat_dense(be, xf, fx.n, fx.din, &x, &err);
	}
	if (st == GNN_OK)
		st = gnn_model_create(be, c, &r, &m, &err);
	/* biases start at 0; with all-zero input rows that puts pre-activations
	 * exactly on the ReLU kink, where finite differences are meaningless */
	for (int i = 0; st == GNN_OK && i < gnn_model_num_params(m); i++)
	{
		gnn_param  *p = gnn_model_param(m, i);
		float		tmp[4096];

		gnn_tensor_download(&p->w, tmp, &err);
		for (int64_t k = 0; k < gnn_tensor_numel(&p->w); k++)
			tmp[k] += (float) (0.2 * gnn_rng_double(&r) - 0.1);
		gnn_tensor_upload(&p->w, tmp, &err);
	}
	if (st == GNN_OK)
		st = gnn_model_forward(m, dbp, &x, train, seed * 7 + 1, &logits, &err);
	{
		int32_t    *dlab = NULL,
				   *drows = NULL;
		float	   *dlog = NULL;
		float		loss = 0;

		if (st == GNN_OK)
			st = gnn_dev_upload(be, fx.labels, sizeof(int32_t) * nout, (void **) &dlab, &err);
		if (st == GNN_OK)
			st = gnn_dev_upload(be, fx.rows, sizeof(int32_t) * fx.nrows, (void **) &drows, &err);
		if (st == GNN_OK)
			st = gnn_backend_error(be, gnn_backend_alloc(be, sizeof(float) * nout * c->out_dim, (void **) &dlog), &err);
		if (st == GNN_OK)
			st = gnn_backend_error(be, gnn_backend_xent(be, logits, nout, c->out_dim, dlab, drows, fx.nrows,
														dlog, &loss, NULL, NULL), &err);
		if (st == GNN_OK)
			st = gnn_model_backward(m, dlog, &err);
		if (st != GNN_OK)
		{
			CHECK(0, "%s: %s", label, err.msg);
			goto out;
		}

		/* reference weights */
		R.np = gnn_model_num_params(m);
		for (int i = 0; i < R.np; i++)
		{
			gnn_param  *p = gnn_model_param(m, i);
			float		tmp[4096];

			strcpy(R.name[i], p->name);
			R.rows[i] = p->w.rows;
			R.cols[i] = p->w.cols;
			R.w[i] = malloc(sizeof(double) * gnn_tensor_numel(&p->w));
			gnn_tensor_download(&p->w, tmp, &err);
			for (int64_t k = 0; k < gnn_tensor_numel(&p->w); k++)
				R.w[i][k] = tmp[k];
		}
		/* forward agreement */
		{
			double		ref_logits[64 * 16],
						maxd = 0,
						maxv = 0;
			float		fl[64 * 16];
			double		rl = ref_forward(c, &R, hbp, &fx, train, seed * 7 + 1, ref_logits);

			gnn_backend_copy_d2h(be, fl, logits, sizeof(float) * nout * c->out_dim);
			for (int64_t i = 0; i < nout * c->out_dim; i++)
			{
				maxd = fmax(maxd, fabs(fl[i] - ref_logits[i]));
				maxv = fmax(maxv, fabs(ref_logits[i]));
			}
			CHECK(maxd <= 1e-4 * fmax(maxv, 1.0) && fabs(rl - loss) <= 1e-4 * fmax(rl, 1.0),
				  "%s: forward matches the double reference (max |diff| %.2e, loss %.6f vs %.6f)",
				  label, maxd, loss, rl);
		}
		/* gradients */
		for (int i = 0; i < R.np; i++)
		{
			gnn_param  *p = gnn_model_param(m, i);
			int64_t		nw = gnn_tensor_numel(&p->w);
			float		ga[4096];
			double		num2 = 0,
						diff2 = 0;

			gnn_tensor_download(&p->g, ga, &err);
			for (int64_t k = 0; k < nw; k++)
			{
				double		w0 = R.w[i][k],
							h = 1e-6 * fmax(1.0, fabs(w0)),
							lp,
							lm,
							gn;

				R.w[i][k] = w0 + h;
				lp = ref_forward(c, &R, hbp, &fx, train, seed * 7 + 1, NULL);
				R.w[i][k] = w0 - h;
				lm = ref_forward(c, &R, hbp, &fx, train, seed * 7 + 1, NULL);
				R.w[i][k] = w0;
				gn = (lp - lm) / (2 * h);
				num2 += gn * gn;
				diff2 += (gn - ga[k]) * (gn - ga[k]);
			}
			{
				double		rel = sqrt(diff2) / fmax(sqrt(num2), 1e-6);

				CHECK(rel < 1e-3, "%s: gradient of %s (%lld x %lld) rel err %.2e (|g| %.3e)", label,
					  p->name, (long long) p->w.rows, (long long) p->w.cols, rel, sqrt(num2));
			}
		}
		for (int i = 0; i < R.np; i++)
			free(R.w[i]);
out:
		gnn_backend_free(be, dlab);
		gnn_backend_free(be, drows);
		gnn_backend_free(be, dlog);
	}
	gnn_model_free(m);
	gnn_dfeat_free(&x);
	for (int l = 0; l < 3; l++)
		gnn_dblock_free(&db[l]);
}

/* ------------------------------------------------------------------ op-level checks */

static void
check_loss(gnn_backend *be)
{
	/* xent gradient vs double central differences of the double loss */
	enum { N = 6, C = 5 };
	float		lg[N * C],
				g[N * C];
	int32_t		lab[N] = {0, 3, 4, 1, -1, 2};
	int32_t		rows[4] = {0, 1, 3, 4};
	gnn_rng		r;
	float		loss;
	int64_t		correct,
				counted;
	double		num2 = 0,
				diff2 = 0;

	gnn_rng_seed(&r, 99);
	for (int i = 0; i < N * C; i++)
		lg[i] = (float) (4 * gnn_rng_double(&r) - 2);
	gnn_backend_xent(be, lg, N, C, lab, rows, 4, g, &loss, &correct, &counted);
	CHECK(counted == 3, "xent skips rows with label -1 (counted %lld)", (long long) counted);
	for (int q = 0; q < N * C; q++)
	{
		double		h = 1e-6,
					f[2];

		for (int sgn = 0; sgn < 2; sgn++)
		{
			double		tot = 0;

			for (int r2 = 0; r2 < 4; r2++)
			{
				int			i = rows[r2];
				double		mx = -1e300,
							s = 0,
							x[C];

				if (lab[i] < 0)
					continue;
				for (int k = 0; k < C; k++)
				{
					x[k] = lg[i * C + k] + ((i * C + k) == q ? (sgn ? -h : h) : 0);
					mx = fmax(mx, x[k]);
				}
				for (int k = 0; k < C; k++)
					s += exp(x[k] - mx);
				tot += -(x[lab[i]] - mx - log(s));
			}
			f[sgn] = tot / 3;
		}
		{
			double		gn = (f[0] - f[1]) / (2 * h);

			num2 += gn * gn;
			diff2 += (gn - g[q]) * (gn - g[q]);
		}
	}
	CHECK(sqrt(diff2) / sqrt(num2) < 1e-3, "softmax cross-entropy gradient rel err %.2e",
		  sqrt(diff2) / sqrt(num2));
}

static void
check_activations(gnn_backend *be)
{
	const gnn_act acts[] = {GNN_ACT_RELU, GNN_ACT_ELU, GNN_ACT_LEAKY_RELU, GNN_ACT_NONE};
	const char *names[] = {"relu", "elu", "leaky_relu", "identity"};
	float		x[64],
				y[64],
				dy[64],
				dx[64];
	gnn_rng		r;

	gnn_rng_seed(&r, 5);
	for (int i = 0; i < 64; i++)
	{
		/* keep away from the kink at 0 */
		double		v = 0.05 + 2.0 * gnn_rng_double(&r);

		x[i] = (float) (i % 2 ? v : -v);
		dy[i] = (float) (gnn_rng_double(&r) - 0.5);
	}
	for (int a = 0; a < 4; a++)
	{
		double		num2 = 0,
					diff2 = 0;
		float		param = acts[a] == GNN_ACT_LEAKY_RELU ? 0.2f : 1.0f;

		gnn_backend_act_forward(be, acts[a], param, x, y, 64);
		gnn_backend_act_backward(be, acts[a], param, x, y, dy, dx, 64);
		for (int i = 0; i < 64; i++)
		{
			double		h = 1e-6,
						xp = x[i] + h,
						xm = x[i] - h;
			double		fp = acts[a] == GNN_ACT_RELU ? fmax(xp, 0) : acts[a] == GNN_ACT_ELU ? (xp > 0 ? xp : expm1(xp)) :
				acts[a] == GNN_ACT_LEAKY_RELU ? (xp > 0 ? xp : 0.2 * xp) : xp;
			double		fm = acts[a] == GNN_ACT_RELU ? fmax(xm, 0) : acts[a] == GNN_ACT_ELU ? (xm > 0 ? xm : expm1(xm)) :
				acts[a] == GNN_ACT_LEAKY_RELU ? (xm > 0 ? xm : 0.2 * xm) : xm;
			double		gn = dy[i] * (fp - fm) / (2 * h);

			num2 += gn * gn;
			diff2 += (gn - dx[i]) * (gn - dx[i]);
		}
		CHECK(sqrt(diff2) / sqrt(num2) < 1e-3, "%s backward rel err %.2e", names[a], sqrt(diff2) / sqrt(num2));
	}
}

static void
check_optim(gnn_backend *be)
{
	float		w[3] = {0.5f, -1.0f, 2.0f},
				g[3] = {0.1f, -0.2f, 0.3f},
				m[3] = {0},
				v[3] = {0};
	float		w2[3] = {0.5f, -1.0f, 2.0f},
				buf[3] = {0};
	double		maxd = 0;

	/* two Adam steps, lr 0.01, wd 0.1, by hand in double */
	gnn_backend_adam_step(be, w, g, m, v, 3, 0.01f, 0.9f, 0.999f, 1e-8f, 0.1f, 1);
	gnn_backend_adam_step(be, w, g, m, v, 3, 0.01f, 0.9f, 0.999f, 1e-8f, 0.1f, 2);
	{
		double		W[3] = {0.5, -1.0, 2.0},
					M[3] = {0},
					V[3] = {0};

		for (int t = 1; t <= 2; t++)
			for (int i = 0; i < 3; i++)
			{
				double		gg = (double) g[i] + 0.1 * W[i];

				M[i] = 0.9 * M[i] + 0.1 * gg;
				V[i] = 0.999 * V[i] + 0.001 * gg * gg;
				W[i] -= 0.01 * (M[i] / (1 - pow(0.9, t))) / (sqrt(V[i] / (1 - pow(0.999, t))) + 1e-8);
			}
		for (int i = 0; i < 3; i++)
			maxd = fmax(maxd, fabs(W[i] - w[i]) / fabs(W[i]));
		CHECK(maxd < 1e-5, "adam step matches hand computation (rel %.2e)", maxd);
	}
	/* SGD with momentum 0.9, wd 0.01, two steps */
	gnn_backend_sgd_step(be, w2, g, buf, 3, 0.1f, 0.9f, 0.01f);
	gnn_backend_sgd_step(be, w2, g, buf, 3, 0.1f, 0.9f, 0.01f);
	{
		double		W[3] = {0.5, -1.0, 2.0},
					B[3] = {0};

		maxd = 0;
		for (int t = 0; t < 2; t++)
			for (int i = 0; i < 3; i++)
			{
				double		gg = (double) g[i] + 0.01 * W[i];

				B[i] = 0.9 * B[i] + gg;
				W[i] -= 0.1 * B[i];
			}
		for (int i = 0; i < 3; i++)
			maxd = fmax(maxd, fabs(W[i] - w2[i]) / fabs(W[i]));
		CHECK(maxd < 1e-5, "sgd (momentum, weight decay) step matches hand computation (rel %.2e)", maxd);
	}
}

int
main(void)
{
	gnn_backend *be;
	gnn_error	err;
	gnn_model_config c;

	if (gnn_backend_cpu_create(2, &be, &err) != GNN_OK)
	{
		CHECK(0, "cpu backend: %s", err.msg);
		return check_done();
	}
	check_loss(be);
	check_activations(be);
	check_optim(be);

	/* GCN: dense input, ELU hidden so no kink in the hidden activation */
	gnn_model_config_default(GNN_MODEL_GCN, &c);
	c.in_dim = 6; c.hidden = 5; c.out_dim = 4; c.dropout = 0.0f; c.act = GNN_ACT_RELU;
	check_model("gcn dense", be, &c, false, false, false, 11);
	c.dropout = 0.3f;
	check_model("gcn sparse input + dropout", be, &c, true, false, true, 12);
	c.layers = 3;
	check_model("gcn 3 layers bipartite blocks", be, &c, false, true, true, 13);

	gnn_model_config_default(GNN_MODEL_SAGE, &c);
	c.in_dim = 6; c.hidden = 5; c.out_dim = 3; c.dropout = 0.2f;
	check_model("sage mean dense + dropout", be, &c, false, false, true, 21);
	check_model("sage mean sparse bipartite", be, &c, true, true, true, 22);
	/* layers that widen: training aggregates first (A X) W, its input gradient A^T (dP W^T) */
	c.in_dim = 3; c.hidden = 7; c.out_dim = 9;
	check_model("sage mean dense bipartite, widening: aggregates first", be, &c, false, true, true, 25);
	c.dropout = 0.0f;
	check_model("sage mean dense, widening, no dropout: aggregates first", be, &c, false, false, true, 26);
	/* so does a sampled evaluation's forward pass (train false: no dropout), and it stays differentiable */
	c.dropout = 0.2f;
	check_model("sage mean dense bipartite, widening, evaluation: aggregates first", be, &c, false, true, false, 27);
	c.in_dim = 6; c.hidden = 5; c.out_dim = 3; c.dropout = 0.2f;
	c.aggr = GNN_AGGR_POOL;
	check_model("sage pool dense", be, &c, false, false, true, 23);
	check_model("sage pool sparse bipartite", be, &c, true, true, true, 24);

	gnn_model_config_default(GNN_MODEL_GAT, &c);
	c.in_dim = 6; c.hidden = 3; c.heads = 3; c.out_heads = 2; c.out_dim = 3;
	c.dropout = 0.0f; c.attn_dropout = 0.0f;
	check_model("gat concat+mean heads dense", be, &c, false, false, false, 31);
	c.dropout = 0.3f; c.attn_dropout = 0.3f;
	check_model("gat sparse + input/attention dropout", be, &c, true, false, true, 32);
	check_model("gat bipartite + dropout", be, &c, false, true, true, 33);

	/* relational models on typed blocks: 3 relations, 2 node types, 2 layers */
	g_nrel = 3;
	g_ntypes = 2;
	gnn_model_config_default(GNN_MODEL_RGCN, &c);
	c.in_dim = 6; c.hidden = 5; c.out_dim = 3; c.dropout = 0.0f;
	c.num_relations = 3; c.num_node_types = 2;
	check_model("rgcn dense", be, &c, false, false, false, 41);
	c.dropout = 0.3f;
	check_model("rgcn sparse + dropout", be, &c, true, false, true, 42);
	check_model("rgcn bipartite + dropout", be, &c, false, true, true, 43);
	c.num_bases = 2;
	check_model("rgcn 2 bases dense + dropout", be, &c, false, false, true, 44);
	check_model("rgcn 2 bases sparse bipartite", be, &c, true, true, true, 45);

	gnn_model_config_default(GNN_MODEL_HSAGE, &c);
	c.in_dim = 6; c.hidden = 5; c.out_dim = 3; c.dropout = 0.0f;
	c.num_relations = 3; c.num_node_types = 2;
	check_model("hetero_sage dense", be, &c, false, false, false, 51);
	c.dropout = 0.3f;
	check_model("hetero_sage sparse + dropout", be, &c, true, false, true, 52);
	check_model("hetero_sage bipartite + dropout", be, &c, false, true, true, 53);
	c.layers = 3;
	check_model("hetero_sage 3 layers sparse bipartite", be, &c, true, true, true, 54);

	CHECK(g_compact_rows > 0 && g_compact_cols > 0 && g_whole > 0,
		  "typed blocks had compacted relations (%d with row lists, %d with column lists) and whole ones (%d)",
		  g_compact_rows, g_compact_cols, g_whole);

	/* untyped blocks: relation 0 and node type 0 everywhere */
	g_nrel = 0;
	g_ntypes = 0;
	gnn_model_config_default(GNN_MODEL_RGCN, &c);
	c.in_dim = 6; c.hidden = 5; c.out_dim = 3; c.dropout = 0.2f;
	check_model("rgcn on an untyped block", be, &c, false, false, true, 61);
	gnn_model_config_default(GNN_MODEL_HSAGE, &c);
	c.in_dim = 6; c.hidden = 5; c.out_dim = 3; c.dropout = 0.2f; c.num_relations = 2; c.num_node_types = 2;
	check_model("hetero_sage (2 relations, 2 types) on an untyped block", be, &c, true, true, true, 62);

	/* the type-blind kinds on typed blocks: etypes and dst_ntype ignored */
	g_nrel = 3;
	g_ntypes = 2;
	gnn_model_config_default(GNN_MODEL_SAGE, &c);
	c.in_dim = 6; c.hidden = 5; c.out_dim = 3; c.dropout = 0.2f;
	check_model("sage mean on a typed block", be, &c, false, true, true, 71);
	gnn_model_config_default(GNN_MODEL_GCN, &c);
	c.in_dim = 6; c.hidden = 5; c.out_dim = 3; c.dropout = 0.2f;
	check_model("gcn on a typed block", be, &c, true, false, true, 72);
	gnn_model_config_default(GNN_MODEL_GAT, &c);
	c.in_dim = 6; c.hidden = 3; c.heads = 2; c.out_heads = 1; c.out_dim = 3;
	check_model("gat on a typed block", be, &c, false, true, true, 73);

	gnn_backend_destroy(be);
	return check_done();
}
