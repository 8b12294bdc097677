/*
 * train_subgraph.c: Cluster-GCN and GraphSAINT (random walk) training loops
 * over induced subgraphs, reusing the model's blocks, forward and backward.
 */
#include "train/train_subgraph.h"
#include "train/eval.h"
#include "graph/partition.h"
#include "sample/sample.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void
gnn_subgraph_config_default(gnn_subgraph_config *sc)
{
	memset(sc, 0, sizeof(*sc));
}

/* ------------------------------------------------------------------ state */

typedef struct sub_ctx
{
	const gnn_graph *g;
	gnn_backend *be;
	int64_t		n;
	int32_t		c;
	bool		saint;
	gnn_rng		rng;

	/* features, row-normalised once on the host */
	float	   *hfeat;			/* dense n x dim */
	float	   *hval;			/* sparse values */

	/* the batch on the host */
	int32_t    *map;			/* global -> local, -1 outside */
	int32_t    *nodes;			/* local -> global, ascending */
	int64_t		k;
	int64_t    *ptr;
	int32_t    *idx;
	float	   *val;
	int64_t    *epos;			/* reverse-CSR position of each block entry */
	int64_t    *lptr;
	int32_t    *lidx;
	float	   *lval;
	int32_t    *lab;
	int32_t    *trows;
	float	   *scale;
	int64_t    *dptr;
	int32_t    *didx;
	float	   *fval;			/* batch sparse feature values / dense rows */
	int64_t    *fptr;
	int32_t    *fidx;

	/* Cluster-GCN */
	int32_t		nparts;
	int32_t		q;
	int64_t    *cstart;			/* [nparts + 1] into cmembers */
	int32_t    *cmembers;		/* nodes grouped by cluster, ascending within */
	int32_t    *corder;			/* a shuffled cluster order */

	/* GraphSAINT */
	int32_t		walk_length;
	int32_t		roots;
	int32_t		npre;
	int32_t    *train_nodes;
	int64_t		n_train;
	uint32_t   *cnode;			/* [n] */
	uint32_t   *cedge;			/* [m], by reverse-CSR position */
} sub_ctx;

static void
ctx_free(sub_ctx *x)
{
	void	   *p[] = {x->hfeat, x->hval, x->map, x->nodes, x->ptr, x->idx, x->val, x->epos,
		x->lptr, x->lidx, x->lval, x->lab, x->trows, x->scale, x->dptr, x->didx, x->fval,
	x->fptr, x->fidx, x->cstart, x->cmembers, x->corder, x->train_nodes, x->cnode, x->cedge};

	for (size_t i = 0; i < sizeof(p) / sizeof(p[0]); i++)
		free(p[i]);
	memset(x, 0, sizeof(*x));
}

static gnn_status
ctx_init(sub_ctx *x, const gnn_graph *g, gnn_backend *be, const gnn_train_config *cfg, gnn_error *err)
{
	int64_t		n = g->num_nodes,
				m = g->num_edges;
	int64_t		fn = g->feat_kind == GNN_FEAT_SPARSE ? g->feat_nnz : n * (int64_t) g->feat_dim;

	memset(x, 0, sizeof(*x));
	x->g = g;
	x->be = be;
	x->n = n;
	x->c = g->num_classes;
	x->map = malloc(sizeof(int32_t) * (n + 1));
	x->nodes = malloc(sizeof(int32_t) * (n + 1));
	x->ptr = malloc(sizeof(int64_t) * (n + 1));
	x->lptr = malloc(sizeof(int64_t) * (n + 1));
	x->dptr = malloc(sizeof(int64_t) * (n + 1));
	x->fptr = malloc(sizeof(int64_t) * (n + 1));
	x->idx = malloc(sizeof(int32_t) * (m + 1));
	x->val = malloc(sizeof(float) * (m + 1));
	x->epos = malloc(sizeof(int64_t) * (m + 1));
	x->lidx = malloc(sizeof(int32_t) * (m + n + 1));
	x->lval = malloc(sizeof(float) * (m + n + 1));
	x->lab = malloc(sizeof(int32_t) * (n + 1));
	x->trows = malloc(sizeof(int32_t) * (n + 1));
	x->scale = malloc(sizeof(float) * (n + 1));
	x->didx = malloc(sizeof(int32_t) * (n + 1));
	x->fval = malloc(sizeof(float) * (fn + 1));
	x->fidx = malloc(sizeof(int32_t) * (fn + 1));
	if (g->feat_kind == GNN_FEAT_SPARSE)
		x->hval = malloc(sizeof(float) * (fn + 1));
	else
		x->hfeat = malloc(sizeof(float) * (fn + 1));
	if (!x->map || !x->nodes || !x->ptr || !x->lptr || !x->dptr || !x->fptr || !x->idx || !x->val ||
		!x->epos || !x->lidx || !x->lval || !x->lab || !x->trows || !x->scale || !x->didx ||
		!x->fval || !x->fidx || !(x->hval || x->hfeat))
	{
		ctx_free(x);
		return gnn_error_set(err, GNN_ERR_NOMEM, "out of memory for subgraph buffers");
	}
	memset(x->map, 0xff, sizeof(int32_t) * (n + 1));
	if (g->feat_kind == GNN_FEAT_DENSE)
	{
		gnn_status	st = gnn_graph_feat_range(g, 0, n, x->hfeat, err);	/* memory or the store */

		if (st != GNN_OK)
		{
			ctx_free(x);
			return st;
		}
	}
	/* the same preprocessing as gnn_dfeat_from_graph */
	for (int64_t v = 0; v < n; v++)
	{
		double		s = 0;

		if (g->feat_kind == GNN_FEAT_SPARSE)
		{
			for (int64_t e = g->fptr[v]; e < g->fptr[v + 1]; e++)
				s += (x->hval[e] = g->fval ? g->fval[e] : 1.0f);
			if (cfg->row_normalise && s != 0)
				for (int64_t e = g->fptr[v]; e < g->fptr[v + 1]; e++)
					x->hval[e] = (float) (x->hval[e] / s);
		}
		else
		{
			int64_t		d = g->feat_dim;

			for (int64_t j = 0; j < d; j++)
				s += x->hfeat[v * d + j];
			if (cfg->row_normalise && s != 0)
				for (int64_t j = 0; j < d; j++)
					x->hfeat[v * d + j] = (float) (x->hfeat[v * d + j] / s);
		}
	}
	return GNN_OK;
}

/* Relabel x->nodes[0..k) (ascending) and build the induced block from in-arcs. */
static void
build_block(sub_ctx *x)
{
	const gnn_graph *g = x->g;
	int64_t		k = 0;

	for (int64_t i = 0; i < x->k; i++)
		x->map[x->nodes[i]] = (int32_t) i;
	x->ptr[0] = 0;
	for (int64_t i = 0; i < x->k; i++)
	{
		int32_t		v = x->nodes[i];

		for (int64_t e = g->rindptr[v]; e < g->rindptr[v + 1]; e++)
		{
			int32_t		j = x->map[g->rindices[e]];

			if (j < 0)
				continue;
			x->idx[k] = j;
			x->val[k] = g->rweights ? g->rweights[e] : 1.0f;
			x->epos[k++] = e;
		}
		x->ptr[i + 1] = k;
	}
}

static void
clear_map(sub_ctx *x)
{
	for (int64_t i = 0; i < x->k; i++)
		x->map[x->nodes[i]] = -1;
}

static int64_t
in_degree_noself(const gnn_graph *g, int32_t v)
{
	int64_t		d = 0;

	for (int64_t e = g->rindptr[v]; e < g->rindptr[v + 1]; e++)
		d += g->rindices[e] != v;
	return d;
}

static int64_t
out_degree_noself(const gnn_graph *g, int32_t v)
{
	int64_t		d = 0;

	for (int64_t e = g->indptr[v]; e < g->indptr[v + 1]; e++)
		d += g->indices[e] != v;
	return d;
}

/*
 * GraphSAINT block values.  raw (SAGE mean, which divides by the row's
 * entry count r): r / (deg_v alpha_uv), so the row mean estimates the
 * full-graph mean.  loop (GCN/GAT): the full graph's D^-1/2 (A+I) D^-1/2
 * coefficient / alpha_uv, with the self loop's alpha = 1.
 */
static gnn_status
saint_block(sub_ctx *x, gnn_dblock *db, gnn_error *err)
{
	const gnn_graph *g = x->g;
	int64_t		k = 0;
	gnn_status	st;

	x->lptr[0] = 0;
	for (int64_t i = 0; i < x->k; i++)
	{
		int32_t		v = x->nodes[i];
		double		cv = x->cnode[v] ? x->cnode[v] : 1;
		double		dv = (double) in_degree_noself(g, v);
		int64_t		r = x->ptr[i + 1] - x->ptr[i];
		bool		placed = false;

		for (int64_t e = x->ptr[i]; e < x->ptr[i + 1]; e++)
		{
			int32_t		j = x->idx[e];
			int32_t		u = x->nodes[j];
			double		cuv = x->cedge[x->epos[e]] ? x->cedge[x->epos[e]] : 1;
			double		inv_alpha = cv / cuv;

			x->val[e] = (float) ((double) r / (dv > 0 ? dv : 1) * inv_alpha);
			if (u == v)
				continue;
			if (!placed && j > i)
			{
				x->lidx[k] = (int32_t) i;
				x->lval[k++] = (float) (1.0 / (dv + 1));
				placed = true;
			}
			x->lidx[k] = j;
			x->lval[k++] = (float) ((g->rweights ? g->rweights[x->epos[e]] : 1.0) /
									sqrt((dv + 1) * ((double) out_degree_noself(g, u) + 1)) * inv_alpha);
		}
		if (!placed)
		{
			x->lidx[k] = (int32_t) i;
			x->lval[k++] = (float) (1.0 / (dv + 1));
		}
		x->lptr[i + 1] = k;
	}
	memset(db, 0, sizeof(*db));
	db->n_dst = db->n_src = x->k;
	if ((st = gnn_dcsr_create(x->be, x->k, x->k, x->ptr[x->k], x->ptr, x->idx, x->val, &db->raw, err)) != GNN_OK)
		return st;
	if ((st = gnn_dcsr_create(x->be, x->k, x->k, k, x->lptr, x->lidx, x->lval, &db->loop, err)) != GNN_OK)
		gnn_dblock_free(db);
	return st;
}

static gnn_status
batch_features(sub_ctx *x, gnn_dfeat *f, gnn_error *err)
{
	const gnn_graph *g = x->g;

	if (g->feat_kind == GNN_FEAT_SPARSE)
	{
		int64_t		k = 0;

		x->fptr[0] = 0;
		for (int64_t i = 0; i < x->k; i++)
		{
			int32_t		v = x->nodes[i];

			for (int64_t e = g->fptr[v]; e < g->fptr[v + 1]; e++)
			{
				x->fidx[k] = g->fidx[e];
				x->fval[k++] = x->hval[e];
			}
			x->fptr[i + 1] = k;
		}
		return gnn_dfeat_sparse(x->be, x->k, g->feat_dim, x->fptr, x->fidx, x->fval, f, err);
	}
	for (int64_t i = 0; i < x->k; i++)
		memcpy(x->fval + i * g->feat_dim, x->hfeat + (int64_t) x->nodes[i] * g->feat_dim,
			   sizeof(float) * g->feat_dim);
	return gnn_dfeat_dense(x->be, x->fval, x->k, g->feat_dim, f, err);
}

/* Cluster-GCN: the union of clusters corder[first .. first+q). */
static void
cluster_nodes(sub_ctx *x, int32_t first)
{
	int64_t		k = 0;

	for (int32_t b = first; b < first + x->q && b < x->nparts; b++)
	{
		int32_t		p = x->corder[b];

		memcpy(x->nodes + k, x->cmembers + x->cstart[p], sizeof(int32_t) * (x->cstart[p + 1] - x->cstart[p]));
		k += x->cstart[p + 1] - x->cstart[p];
	}
	gnn_sort_i32(x->nodes, k);
	x->k = k;
}

/* GraphSAINT: nodes visited by roots walks of walk_length steps from training nodes. */
static void
saint_nodes(sub_ctx *x, gnn_rng *rng)
{
	const gnn_graph *g = x->g;
	int64_t		k = 0;

	for (int32_t r = 0; r < x->roots; r++)
	{
		int32_t		v = x->train_nodes[gnn_rng_below(rng, (uint64_t) x->n_train)];

		for (int32_t s = 0;; s++)
		{
			int64_t		d;

			if (x->map[v] < 0)
			{
				x->map[v] = 0;
				x->nodes[k++] = v;
			}
			d = g->indptr[v + 1] - g->indptr[v];
			if (s == x->walk_length || d == 0)
				break;
			v = g->indices[g->indptr[v] + (int64_t) gnn_rng_below(rng, (uint64_t) d)];
		}
	}
	for (int64_t i = 0; i < k; i++)
		x->map[x->nodes[i]] = -1;
	gnn_sort_i32(x->nodes, k);
	x->k = k;
}

static gnn_status
saint_presample(sub_ctx *x, gnn_error *err)
{
	const gnn_graph *g = x->g;
	gnn_rng		rng;

	x->cnode = calloc(x->n + 1, sizeof(uint32_t));
	x->cedge = calloc(g->num_edges + 1, sizeof(uint32_t));
	if (!x->cnode || !x->cedge)
		return gnn_error_set(err, GNN_ERR_NOMEM, "out of memory for GraphSAINT counts");
	gnn_rng_split(&x->rng, 0x5a1e7, &rng);
	for (int32_t s = 0; s < x->npre; s++)
	{
		saint_nodes(x, &rng);
		build_block(x);
		for (int64_t i = 0; i < x->k; i++)
			x->cnode[x->nodes[i]]++;
		for (int64_t e = 0; e < x->ptr[x->k]; e++)
			x->cedge[x->epos[e]]++;
		clear_map(x);
	}
	return GNN_OK;
}

/* ------------------------------------------------------------------ one step */

static gnn_status
train_step(sub_ctx *x, gnn_model *model, gnn_optim *opt, uint64_t seed, float *loss, gnn_error *err)
{
	gnn_backend *be = x->be;
	gnn_dblock	db;
	gnn_dfeat	f;
	gnn_dcsr	diag;
	gnn_dblock *blocks[GNN_MAX_LAYERS];
	int32_t    *dlab = NULL,
			   *drows = NULL;
	float	   *dlogits = NULL,
			   *dscaled = NULL;
	const float *logits;
	int64_t		nt = 0;
	gnn_status	st;
	gnn_block	blk = {0};	/* untyped: etypes, dst_ntype NULL */

	memset(&db, 0, sizeof(db));
	memset(&f, 0, sizeof(f));
	memset(&diag, 0, sizeof(diag));
	*loss = 0;
	build_block(x);
	for (int64_t i = 0; i < x->k; i++)
	{
		int32_t		v = x->nodes[i];

		x->lab[i] = x->g->labels[v];
		x->scale[i] = 0;
		if (x->g->split[v] == GNN_SPLIT_TRAIN && x->g->labels[v] >= 0)
			x->trows[nt++] = (int32_t) i;
	}
	if (nt == 0)
	{
		clear_map(x);
		return GNN_OK;			/* nothing to learn from in this batch */
	}
	if (x->saint)
		st = saint_block(x, &db, err);
	else
	{
		blk.n_dst = blk.n_src = x->k;
		blk.nnz = x->ptr[x->k];
		blk.indptr = x->ptr;
		blk.indices = x->idx;
		blk.weights = x->g->rweights ? x->val : NULL;
		st = gnn_dblock_create(be, &blk, &db, err);
	}
	clear_map(x);
	if (st != GNN_OK)
		return st;
	if ((st = batch_features(x, &f, err)) != GNN_OK ||
		(st = gnn_dev_upload(be, x->lab, sizeof(int32_t) * x->k, (void **) &dlab, err)) != GNN_OK ||
		(st = gnn_dev_upload(be, x->trows, sizeof(int32_t) * nt, (void **) &drows, err)) != GNN_OK)
		goto done;
	if ((st = gnn_backend_alloc(be, sizeof(float) * x->k * x->c, (void **) &dlogits)) != GNN_OK)
	{
		st = gnn_backend_error(be, st, err);
		goto done;
	}
	for (int l = 0; l < GNN_MAX_LAYERS; l++)
		blocks[l] = &db;
	if ((st = gnn_model_forward(model, blocks, &f, true, seed, &logits, err)) != GNN_OK)
		goto done;
	st = gnn_backend_xent(be, logits, x->k, x->c, dlab, drows, nt, dlogits, loss, NULL, NULL);
	if (st != GNN_OK)
	{
		st = gnn_backend_error(be, st, err);
		goto done;
	}
	if (x->saint)
	{
		/* loss normalisation: row v of the gradient times nt / (lambda_v * n_train) */
		for (int64_t t = 0; t < nt; t++)
		{
			int32_t		v = x->nodes[x->trows[t]];
			double		lambda = (double) (x->cnode[v] ? x->cnode[v] : 1) / x->npre;

			x->scale[x->trows[t]] = (float) ((double) nt / (lambda * (double) x->n_train));
		}
		for (int64_t i = 0; i <= x->k; i++)
			x->dptr[i] = i;
		for (int64_t i = 0; i < x->k; i++)
			x->didx[i] = (int32_t) i;
		if ((st = gnn_dcsr_create(be, x->k, x->k, x->k, x->dptr, x->didx, x->scale, &diag, err)) != GNN_OK)
			goto done;
		if ((st = gnn_backend_alloc(be, sizeof(float) * x->k * x->c, (void **) &dscaled)) != GNN_OK ||
			(st = gnn_backend_spmm(be, &diag.csr, GNN_AGG_SUM, NULL, NULL, dlogits, x->c, 0.0f, dscaled)) != GNN_OK)
		{
			st = gnn_backend_error(be, st, err);
			goto done;
		}
	}
	if ((st = gnn_model_backward(model, dscaled ? dscaled : dlogits, err)) != GNN_OK)
		goto done;
	st = gnn_optim_step(opt, model, err);
done:
	gnn_backend_free(be, dlab);
	gnn_backend_free(be, drows);
	gnn_backend_free(be, dlogits);
	gnn_backend_free(be, dscaled);
	gnn_dcsr_free(&diag);
	gnn_dfeat_free(&f);
	gnn_dblock_free(&db);
	return st;
}

/* ------------------------------------------------------------------ full-graph evaluation */

typedef gnn_eval_data eval_data;




/* *logits: the pass's (backend memory, valid until the model's next pass) */
static gnn_status
evaluate(gnn_model *model, eval_data *d, const gnn_graph *g, gnn_epoch_metrics *em, const float **logits,
		 gnn_error *err)
{
	gnn_backend *be = gnn_model_backend(model);
	gnn_dblock *blocks[GNN_MAX_LAYERS];
	gnn_status	st;

	for (int l = 0; l < GNN_MAX_LAYERS; l++)
		blocks[l] = &d->blk;
	if ((st = gnn_model_forward(model, blocks, &d->x, false, 0, logits, err)) != GNN_OK)
		return st;
	return gnn_eval_splits(be, d, *logits, g->num_nodes, g->num_classes, em, err);
}

/* ------------------------------------------------------------------ the loop */

static gnn_status
prepare_cluster(sub_ctx *x, const gnn_subgraph_config *sc, gnn_error *err)
{
	gnn_partition_config pc;
	int32_t    *part = malloc(sizeof(int32_t) * (x->n + 1));
	gnn_status	st;

	if (!part)
		return gnn_error_set(err, GNN_ERR_NOMEM, "out of memory");
	x->nparts = sc->num_parts > 0 ? sc->num_parts : (int32_t) (x->n / 50 > 2 ? x->n / 50 : 2);
	if (x->nparts > x->n)
		x->nparts = (int32_t) x->n;
	x->q = sc->clusters_per_batch > 0 ? sc->clusters_per_batch :
		(x->nparts / 4 < 1 ? 1 : x->nparts / 4 > 20 ? 20 : x->nparts / 4);
	if (x->q > x->nparts)
		x->q = x->nparts;
	if (sc->part)
	{
		for (int64_t v = 0; v < x->n; v++)
			if (sc->part[v] < 0 || sc->part[v] >= x->nparts)
			{
				free(part);
				return gnn_error_set(err, GNN_ERR_INVALID, "the given clustering puts node %lld in part %d, outside [0, %d)",
									 (long long) v, sc->part[v], x->nparts);
			}
		memcpy(part, sc->part, sizeof(int32_t) * x->n);
	}
	else
	{
		gnn_partition_config_default(&pc);
		pc.parts = x->nparts;
		pc.balance = GNN_BAL_NODES;
		pc.seed = x->rng.s[0];
		if ((st = gnn_partition_compute(x->g, &pc, part, NULL, err)) != GNN_OK)
		{
			free(part);
			return st;
		}
	}
	x->cstart = calloc(x->nparts + 1, sizeof(int64_t));
	x->cmembers = malloc(sizeof(int32_t) * (x->n + 1));
	x->corder = malloc(sizeof(int32_t) * (x->nparts + 1));
	if (!x->cstart || !x->cmembers || !x->corder)
	{
		free(part);
		return gnn_error_set(err, GNN_ERR_NOMEM, "out of memory");
	}
	for (int64_t v = 0; v < x->n; v++)
		x->cstart[part[v] + 1]++;
	for (int32_t p = 0; p < x->nparts; p++)
		x->cstart[p + 1] += x->cstart[p];
	for (int64_t v = 0; v < x->n; v++)
		x->cmembers[x->cstart[part[v]]++] = (int32_t) v;
	for (int32_t p = x->nparts; p > 0; p--)
		x->cstart[p] = x->cstart[p - 1];
	x->cstart[0] = 0;
	for (int32_t p = 0; p < x->nparts; p++)
		x->corder[p] = p;
	free(part);
	return GNN_OK;
}

static gnn_status
prepare_saint(sub_ctx *x, const gnn_subgraph_config *sc, gnn_error *err)
{
	int64_t		expect;

	x->saint = true;
	x->train_nodes = malloc(sizeof(int32_t) * (x->n + 1));
	if (!x->train_nodes)
		return gnn_error_set(err, GNN_ERR_NOMEM, "out of memory");
	/* roots, and the loss normalisation's count: the nodes with a loss */
	for (int64_t v = 0; v < x->n; v++)
		if (x->g->split[v] == GNN_SPLIT_TRAIN && x->g->labels[v] >= 0)
			x->train_nodes[x->n_train++] = (int32_t) v;
	x->walk_length = sc->walk_length > 0 ? sc->walk_length : 2;
	x->roots = sc->roots > 0 ? sc->roots : (int32_t) (x->n_train / 2 > 1 ? x->n_train / 2 : 1);
	expect = (int64_t) x->roots * (x->walk_length + 1);
	if (expect > x->n)
		expect = x->n;
	x->npre = sc->presample > 0 ? sc->presample : (int32_t) fmin(2000.0, ceil(50.0 * (double) x->n / (double) expect));
	return saint_presample(x, err);
}

static gnn_status
train_subgraphs(const gnn_graph *g, const gnn_train_config *cfg, const gnn_subgraph_config *sc,
				bool saint, gnn_backend *be_in, gnn_progress_fn progress, void *progress_arg,
				gnn_should_stop_fn should_stop, void *stop_arg, gnn_model **model_out,
				gnn_train_result *res, gnn_error *err)
{
	gnn_backend *be = be_in;
	gnn_model  *model = NULL;
	gnn_model_config mc;
	gnn_optim	opt;
	sub_ctx		x;
	eval_data	ed;
	gnn_status	st;
	float	   *best_w = NULL;
	gnn_selector sel;
	int32_t		steps;
	double		t_start;

	gnn_selector_init(&sel, cfg->select);
	memset(&x, 0, sizeof(x));
	memset(&ed, 0, sizeof(ed));
	memset(res, 0, sizeof(*res));
	if (model_out)
		*model_out = NULL;
	if ((st = gnn_train_config_check(cfg, err)) != GNN_OK)
		return st;
	if (sc->num_parts < 0 || sc->clusters_per_batch < 0 || sc->walk_length < 0 || sc->roots < 0 ||
		sc->presample < 0 || sc->batches < 0)
		return gnn_error_set(err, GNN_ERR_INVALID, "subgraph sampler settings must be >= 0 (0 = default)");
	if (sc->walk_length > 100)
		return gnn_error_set(err, GNN_ERR_INVALID, "walk_length must be at most 100, got %d", sc->walk_length);
	if ((st = gnn_train_graph_check(g, err)) != GNN_OK)
		return st;
	if (!saint && sc->part && sc->num_parts < 1)
		return gnn_error_set(err, GNN_ERR_INVALID, "a given clustering needs num_parts");
	if (!saint && sc->num_parts > g->num_nodes)
		return gnn_error_set(err, GNN_ERR_INVALID, "num_parts must be at most the number of nodes (%lld), got %d",
							 (long long) g->num_nodes, sc->num_parts);
	if (model_out && !be_in)
		return gnn_error_set(err, GNN_ERR_INVALID, "asking for the model needs a caller-owned backend");
	if ((st = gnn_train_model_config(cfg, g->feat_dim, g->num_classes, &mc, err)) != GNN_OK)
		return st;
	if (!be && (st = gnn_backend_create(cfg->backend, cfg->threads, cfg->cuda_so, &be, err)) != GNN_OK)
		return st;

	if ((st = ctx_init(&x, g, be, cfg, err)) != GNN_OK)
		goto done;
	gnn_rng_seed(&x.rng, cfg->seed);
	if ((st = gnn_model_create(be, &mc, &x.rng, &model, err)) != GNN_OK)
		goto done;
	st = saint ? prepare_saint(&x, sc, err) : prepare_cluster(&x, sc, err);
	if (st != GNN_OK || (st = gnn_eval_data_create_forward(be, g, cfg->row_normalise, GNN_TASK_CLASSIFY, &ed, err)) != GNN_OK)
		goto done;
	best_w = malloc(sizeof(float) * (gnn_model_weights_count(model) + 1));
	if (!best_w)
	{
		st = gnn_error_set(err, GNN_ERR_NOMEM, "out of memory");
		goto done;
	}
	steps = saint ? (sc->batches > 0 ? sc->batches : (int32_t) (x.n_train / x.roots > 1 ? x.n_train / x.roots : 1))
		: (x.nparts + x.q - 1) / x.q;
	gnn_optim_init(&opt, cfg->optimizer, cfg->lr, cfg->weight_decay);
	gnn_backend_timing_reset(be);
	gnn_backend_timing_enable(be, cfg->timing);

	t_start = gnn_now_s();
	for (int32_t epoch = 1; epoch <= cfg->epochs && st == GNN_OK; epoch++)
	{
		gnn_epoch_metrics em;
		const float *logits;
		double		t0 = gnn_now_s(),
					loss_sum = 0;

		gnn_epoch_metrics_init(&em, epoch);
		if (!saint)
			for (int32_t i = x.nparts - 1; i > 0; i--)
			{
				int32_t		j = (int32_t) gnn_rng_below(&x.rng, (uint64_t) i + 1),
							t = x.corder[i];

				x.corder[i] = x.corder[j];
				x.corder[j] = t;
			}
		for (int32_t b = 0; b < steps; b++)
		{
			float		loss;

			if (should_stop && should_stop(stop_arg))
			{
				st = gnn_error_set(err, GNN_ERR_CANCELLED, "training cancelled at epoch %d", epoch);
				break;
			}
			if (saint)
				saint_nodes(&x, &x.rng);
			else
				cluster_nodes(&x, b * x.q);
			if ((st = train_step(&x, model, &opt, gnn_rng_next(&x.rng), &loss, err)) != GNN_OK)
				break;
			loss_sum += loss;
		}
		if (st != GNN_OK)
			break;
		em.train_loss = (float) (loss_sum / steps);
		if ((st = evaluate(model, &ed, g, &em, &logits, err)) != GNN_OK)
			break;

		if (gnn_selector_step(&sel, &em))
		{
			if ((st = gnn_model_weights_get(model, best_w, err)) != GNN_OK ||
				(cfg->keep_confusion &&
				 (st = gnn_eval_keep_confusion(be, &ed, logits, g->num_nodes, g->num_classes, res, err)) != GNN_OK))
				break;
			em.best = true;
		}
		em.seconds = gnn_now_s() - t0;
		if (em.best)
		{
			res->best = em;
			res->best_epoch = epoch;
		}
		res->epochs_run = epoch;
		if (progress)
			progress(progress_arg, &em);
		if (cfg->patience > 0 && sel.wait >= cfg->patience)
		{
			res->stopped_early = true;
			break;
		}
	}
	res->seconds = gnn_now_s() - t_start;
	res->agg_s = be->time_s[GNN_CAT_AGG];
	res->dense_s = be->time_s[GNN_CAT_DENSE];
	res->other_s = res->seconds - res->agg_s - res->dense_s;
	gnn_backend_timing_enable(be, false);
	/* the kept weights matter only to a model that is handed back */
	if (st == GNN_OK && sel.have_best)
		st = gnn_model_weights_set(model, best_w, err);
	if (st == GNN_OK && model_out)
	{
		*model_out = model;
		model = NULL;
	}
done:
	free(best_w);
	gnn_eval_data_free(be, &ed);
	ctx_free(&x);
	gnn_model_free(model);
	if (!be_in)
		gnn_backend_destroy(be);
	return st;
}

gnn_status
gnn_train_cluster(const gnn_graph *g, const gnn_train_config *cfg, const gnn_subgraph_config *sc,
				  gnn_backend *be, gnn_progress_fn progress, void *progress_arg,
				  gnn_should_stop_fn should_stop, void *stop_arg, gnn_model **model_out,
				  gnn_train_result *res, gnn_error *err)
{
	return train_subgraphs(g, cfg, sc, false, be, progress, progress_arg, should_stop, stop_arg,
						   model_out, res, err);
}

gnn_status
gnn_train_saint(const gnn_graph *g, const gnn_train_config *cfg, const gnn_subgraph_config *sc,
				gnn_backend *be, gnn_progress_fn progress, void *progress_arg,
				gnn_should_stop_fn should_stop, void *stop_arg, gnn_model **model_out,
				gnn_train_result *res, gnn_error *err)
{
	return train_subgraphs(g, cfg, sc, true, be, progress, progress_arg, should_stop, stop_arg,
						   model_out, res, err);
}
