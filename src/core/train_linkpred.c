/*
 * train_linkpred.c: unsupervised link prediction (full batch).
 */
#include "train_linkpred.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double) ts.tv_sec + (double) ts.tv_nsec * 1e-9;
}

void
gnn_linkpred_config_default(gnn_linkpred_config *lc)
{
	lc->holdout = 0.1;
	lc->val_fraction = 0.5;
	lc->negatives = 1;
	lc->hits_k = 50;
	lc->edge_type = -1;
}

typedef struct pair
{
	int32_t		u;
	int32_t		v;
} pair;

static inline uint64_t
pair_key(int64_t n, int32_t u, int32_t v)
{
	return (uint64_t) u * (uint64_t) n + (uint64_t) v;
}

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t	x = *(const uint64_t *) a,
				y = *(const uint64_t *) b;

	return (x > y) - (x < y);
}

static bool
arc_exists(const gnn_graph *g, int32_t u, int32_t v)
{
	int64_t		lo = g->indptr[u],
				hi = g->indptr[u + 1];

	while (lo < hi)
	{
		int64_t		mid = (lo + hi) / 2;

		if (g->indices[mid] < v)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < g->indptr[u + 1] && g->indices[lo] == v;
}

/* uniformly drawn node pairs that are not edges (either direction), no self pairs */
static void
draw_negatives(const gnn_graph *g, gnn_rng *r, pair *out, int64_t n)
{
	for (int64_t i = 0; i < n; i++)
	{
		for (int tries = 0;; tries++)
		{
			int32_t		u = (int32_t) gnn_rng_below(r, g->num_nodes),
						v = (int32_t) gnn_rng_below(r, g->num_nodes);

			if (tries < 100 && (u == v || arc_exists(g, u, v) || arc_exists(g, v, u)))
				continue;
			out[i].u = u;
			out[i].v = v;
			break;
		}
	}
}

static double
dot(const float *z, int32_t d, int32_t u, int32_t v)
{
	double		s = 0;

	for (int32_t k = 0; k < d; k++)
		s += (double) z[(int64_t) u * d + k] * z[(int64_t) v * d + k];
	return s;
}

typedef struct scored
{
	double		s;
	int			pos;
} scored;

static int
cmp_scored(const void *a, const void *b)
{
	double		x = ((const scored *) a)->s,
				y = ((const scored *) b)->s;

	return (x > y) - (x < y);
}

/* AUC by rank sums (ties averaged); Hits@K as OGB: positives above the K-th best negative */
static void
auc_hits(const float *z, int32_t d, const pair *pos, int64_t np, const pair *neg, int64_t nn, int k,
		 double *auc, double *hits)
{
	scored	   *all = malloc(sizeof(scored) * (np + nn + 1));
	double		rank_sum = 0,
				kth = -INFINITY;
	int64_t		above = 0;

	*auc = 0;
	*hits = 0;
	if (!all || np == 0 || nn == 0)
	{
		free(all);
		return;
	}
	for (int64_t i = 0; i < np; i++)
		all[i] = (scored) {dot(z, d, pos[i].u, pos[i].v), 1};
	for (int64_t i = 0; i < nn; i++)
		all[np + i] = (scored) {dot(z, d, neg[i].u, neg[i].v), 0};
	qsort(all, np + nn, sizeof(scored), cmp_scored);
	for (int64_t i = 0; i < np + nn;)
	{
		int64_t		j = i,
					npos = 0;

		while (j < np + nn && all[j].s == all[i].s)
			npos += all[j++].pos;
		rank_sum += npos * ((double) (i + 1 + j) / 2.0);
		i = j;
	}
	*auc = (rank_sum - (double) np * (np + 1) / 2.0) / ((double) np * nn);
	if (nn < k)
	{
		*hits = 1.0;
		free(all);
		return;
	}
	for (int64_t i = np + nn - 1, seen = 0; i >= 0; i--)
		if (!all[i].pos && ++seen == k)
		{
			kth = all[i].s;
			break;
		}
	for (int64_t i = 0; i < np; i++)
		above += dot(z, d, pos[i].u, pos[i].v) > kth;
	*hits = (double) above / np;
	free(all);
}

gnn_status
gnn_train_linkpred(const gnn_graph *g, const gnn_train_config *cfg, const gnn_linkpred_config *lc,
				   gnn_backend *be_in, gnn_progress_fn progress, void *progress_arg,
				   gnn_should_stop_fn should_stop, void *stop_arg, gnn_model **model_out,
				   gnn_linkpred_result *res, gnn_error *err)
{
	gnn_backend *be = be_in;
	gnn_model  *model = NULL;
	gnn_model_config mc;
	gnn_optim	opt;
	gnn_rng		rng;
	gnn_status	st;
	gnn_dblock	dblk;
	gnn_dfeat	x;
	gnn_block	blk;
	pair	   *pairs = NULL,
			   *neg = NULL;
	uint64_t   *removed = NULL;
	int64_t    *bptr = NULL;
	int32_t    *bidx = NULL;
	float	   *bw = NULL,
			   *z = NULL,
			   *dz = NULL,
			   *best_w = NULL;
	gnn_buf		ddz = {0};
	int64_t		n = g->num_nodes,
				np = 0,
				nval,
				ntest,
				ntrain,
				nrem = 0;
	int32_t		d = cfg->hidden;
	double		best_auc = -1,
				t_start = now_s();
	bool		have_best = false;
	int32_t		wait = 0;
	gnn_dblock *blocks[GNN_MAX_LAYERS];

	memset(res, 0, sizeof(*res));
	memset(&dblk, 0, sizeof(dblk));
	memset(&x, 0, sizeof(x));
	if (model_out)
		*model_out = NULL;
	if ((st = gnn_train_config_check(cfg, err)) != GNN_OK)
		return st;
	if (g->feat_kind == GNN_FEAT_NONE)
		return gnn_error_set(err, GNN_ERR_EMPTY, "the graph has no node features");
	if (!(lc->holdout > 0 && lc->holdout < 1) || !(lc->val_fraction > 0 && lc->val_fraction < 1) ||
		lc->negatives < 1 || lc->negatives > 100 || lc->hits_k < 1)
		return gnn_error_set(err, GNN_ERR_INVALID, "link prediction needs holdout and val_fraction in (0, 1), negatives in [1, 100], hits_k >= 1");
	if (model_out && !be_in)
		return gnn_error_set(err, GNN_ERR_INVALID, "asking for the model needs a caller-owned backend");
	if ((st = gnn_train_model_config(cfg, g->feat_dim, d, &mc, err)) != GNN_OK)
		return st;

	/* unordered pairs: u < v, or u > v without the reverse arc; no self loops */
	pairs = malloc(sizeof(pair) * (g->num_edges + 1));
	if (!pairs)
		return gnn_error_set(err, GNN_ERR_NOMEM, "out of memory");
	for (int32_t u = 0; u < n; u++)
		for (int64_t e = g->indptr[u]; e < g->indptr[u + 1]; e++)
		{
			int32_t		v = g->indices[e];

			if (u < v || (u > v && !arc_exists(g, v, u)))
				pairs[np++] = (pair) {u, v};
		}
	gnn_rng_seed(&rng, cfg->seed ^ 0x6c696e6bULL);
	for (int64_t i = np - 1; i > 0; i--)
	{
		int64_t		j = (int64_t) gnn_rng_below(&rng, (uint64_t) i + 1);
		pair		t = pairs[i];

		pairs[i] = pairs[j];
		pairs[j] = t;
	}
	nval = (int64_t) (np * lc->holdout * lc->val_fraction);
	ntest = (int64_t) (np * lc->holdout) - nval;
	ntrain = np - nval - ntest;
	if (nval < 1 || ntest < 1 || ntrain < 1)
	{
		free(pairs);
		return gnn_error_set(err, GNN_ERR_EMPTY, "too few edges (%lld) to hold some out for link prediction", (long long) np);
	}
	res->test_edges = ntest;

	/* the training graph: in-edges minus held-out pairs (both directions) */
	removed = malloc(sizeof(uint64_t) * 2 * (nval + ntest) + 8);
	bptr = malloc(sizeof(int64_t) * (n + 1));
	bidx = malloc(sizeof(int32_t) * (g->num_edges + 1));
	bw = g->rweights ? malloc(sizeof(float) * (g->num_edges + 1)) : NULL;
	neg = malloc(sizeof(pair) * (nval + ntest + ntrain * lc->negatives + 1));
	z = malloc(sizeof(float) * n * d + 4);
	dz = malloc(sizeof(float) * n * d + 4);
	if (!removed || !bptr || !bidx || (g->rweights && !bw) || !neg || !z || !dz)
	{
		st = gnn_error_set(err, GNN_ERR_NOMEM, "out of memory");
		goto done;
	}
	for (int64_t i = ntrain; i < np; i++)
	{
		removed[nrem++] = pair_key(n, pairs[i].u, pairs[i].v);
		removed[nrem++] = pair_key(n, pairs[i].v, pairs[i].u);
	}
	qsort(removed, nrem, sizeof(uint64_t), cmp_u64);
	bptr[0] = 0;
	for (int32_t v = 0; v < n; v++)
	{
		int64_t		k = bptr[v];

		for (int64_t e = g->rindptr[v]; e < g->rindptr[v + 1]; e++)
		{
			uint64_t	key = pair_key(n, g->rindices[e], v);

			if (bsearch(&key, removed, nrem, sizeof(uint64_t), cmp_u64))
				continue;
			if (bw)
				bw[k] = g->rweights[e];
			bidx[k++] = g->rindices[e];
		}
		bptr[v + 1] = k;
	}
	blk.n_dst = blk.n_src = n;
	blk.nnz = bptr[n];
	blk.indptr = bptr;
	blk.indices = bidx;
	blk.weights = bw;

	if (!be && (st = gnn_backend_create(cfg->backend, cfg->threads, cfg->cuda_so, &be, err)) != GNN_OK)
		goto done;
	if ((st = gnn_model_create(be, &mc, &rng, &model, err)) != GNN_OK ||
		(st = gnn_dblock_create(be, &blk, &dblk, err)) != GNN_OK ||
		(st = gnn_dfeat_from_graph(be, g, cfg->row_normalise, &x, err)) != GNN_OK ||
		(st = gnn_buf_ensure(be, &ddz, sizeof(float) * n * d, err)) != GNN_OK)
		goto done;
	best_w = malloc(sizeof(float) * (gnn_model_weights_count(model) + 1));
	if (!best_w)
	{
		st = gnn_error_set(err, GNN_ERR_NOMEM, "out of memory");
		goto done;
	}
	/* fixed evaluation negatives: as many as val / test positives */
	draw_negatives(g, &rng, neg, nval + ntest);
	for (int l = 0; l < GNN_MAX_LAYERS; l++)
		blocks[l] = &dblk;
	gnn_optim_init(&opt, cfg->optimizer, cfg->lr, cfg->weight_decay);

	for (int32_t epoch = 1; epoch <= cfg->epochs; epoch++)
	{
		gnn_epoch_metrics em;
		const float *out;
		double		t0 = now_s(),
					loss = 0,
					val_auc,
					val_hits,
					test_auc,
					test_hits;
		pair	   *tneg = neg + nval + ntest;
		int64_t		ntneg = ntrain * lc->negatives;
		double		scale = 1.0 / (double) (ntrain + ntneg);

		if (should_stop && should_stop(stop_arg))
		{
			st = gnn_error_set(err, GNN_ERR_CANCELLED, "training cancelled at epoch %d", epoch);
			break;
		}
		memset(&em, 0, sizeof(em));
		em.epoch = epoch;
		if ((st = gnn_model_forward(model, blocks, &x, true, gnn_rng_next(&rng), &out, err)) != GNN_OK ||
			(st = gnn_backend_error(be, gnn_backend_copy_d2h(be, z, out, sizeof(float) * n * d), err)) != GNN_OK)
			break;
		draw_negatives(g, &rng, tneg, ntneg);
		memset(dz, 0, sizeof(float) * n * d);
		for (int64_t i = 0; i < ntrain + ntneg; i++)
		{
			bool		positive = i < ntrain;
			pair		p = positive ? pairs[i] : tneg[i - ntrain];
			double		s = dot(z, d, p.u, p.v);
			double		sig = 1.0 / (1.0 + exp(-s));
			double		gs = (positive ? sig - 1.0 : sig) * scale;

			/* softplus(-s) for positives, softplus(s) for negatives, stably */
			loss += positive ? (s > 0 ? log1p(exp(-s)) : -s + log1p(exp(s)))
				: (s > 0 ? s + log1p(exp(-s)) : log1p(exp(s)));
			for (int32_t k = 0; k < d; k++)
			{
				dz[(int64_t) p.u * d + k] += (float) (gs * z[(int64_t) p.v * d + k]);
				dz[(int64_t) p.v * d + k] += (float) (gs * z[(int64_t) p.u * d + k]);
			}
		}
		em.train_loss = (float) (loss * scale);
		if ((st = gnn_backend_error(be, gnn_backend_copy_h2d(be, ddz.p, dz, sizeof(float) * n * d), err)) != GNN_OK ||
			(st = gnn_model_backward(model, ddz.p, err)) != GNN_OK ||
			(st = gnn_optim_step(&opt, model, err)) != GNN_OK)
			break;

		/* evaluation */
		if ((st = gnn_model_forward(model, blocks, &x, false, 0, &out, err)) != GNN_OK ||
			(st = gnn_backend_error(be, gnn_backend_copy_d2h(be, z, out, sizeof(float) * n * d), err)) != GNN_OK)
			break;
		auc_hits(z, d, pairs + ntrain, nval, neg, nval, lc->hits_k, &val_auc, &val_hits);
		auc_hits(z, d, pairs + ntrain + nval, ntest, neg + nval, ntest, lc->hits_k, &test_auc, &test_hits);
		/* reported through the epoch metrics: *_acc carry AUCs */
		em.train_acc = NAN;
		em.val_acc = (float) val_auc;
		em.test_acc = (float) test_auc;
		em.val_loss = NAN;
		em.test_loss = NAN;
		if (!have_best || val_auc > best_auc)
		{
			if ((st = gnn_model_weights_get(model, best_w, err)) != GNN_OK)
				break;
			have_best = true;
			best_auc = val_auc;
			em.best = true;
			res->best_epoch = epoch;
			res->val_auc = val_auc;
			res->test_auc = test_auc;
			res->test_hits = test_hits;
			wait = 0;
		}
		else
			wait++;
		em.seconds = now_s() - t0;
		res->epochs_run = epoch;
		if (progress)
			progress(progress_arg, &em);
		if (cfg->patience > 0 && wait >= cfg->patience)
			break;
	}
	res->seconds = now_s() - t_start;
	/* the kept weights matter only to a model that is handed back */
	if (have_best)
	{
		gnn_status	st2 = gnn_model_weights_set(model, best_w, st == GNN_OK ? err : NULL);

		if (st == GNN_OK)
			st = st2;
	}
	if (st == GNN_OK && model_out)
	{
		*model_out = model;
		model = NULL;
	}
done:
	free(pairs);
	free(neg);
	free(removed);
	free(bptr);
	free(bidx);
	free(bw);
	free(z);
	free(dz);
	free(best_w);
	if (be)
	{
		gnn_buf_free(be, &ddz);
		gnn_dblock_free(&dblk);
		gnn_dfeat_free(&x);
	}
	gnn_model_free(model);
	if (!be_in && be)
		gnn_backend_destroy(be);
	return st;
}
