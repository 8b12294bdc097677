/*
 * model.c: GCN, GraphSAGE (mean / max-pool) and GAT layers with
 * hand-written forward and backward passes over blocks (see model.h for the
 * math).  All tensors live on the model's backend; activations are kept in
 * per-layer growable buffers so minibatch blocks of varying size reuse them.
 *
 * Linear transforms come before aggregation (A (X W) rather than (A X) W):
 * with sparse bag-of-words inputs X W is a sparse-dense product and the
 * aggregation then runs on hidden-width rows.  Inference on a few nodes'
 * neighbourhoods (gnn_model_forward_layers) may reverse that where it is
 * cheaper: see aggregate_first.
 */
#include "nn/model.h"
#include "store/gather.h"		/* gnn_graph_feat_range: the streamed input features */

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GNN_MAX_PARAMS (GNN_MAX_LAYERS * 8)

enum
{
	B_XD, B_Z, B_ZR, B_Q, B_QA, B_M, B_AM, B_AS, B_AD, B_ALPHA, B_ALPHAD, B_O, B_P, B_Y,
	B_DP, B_DZ, B_DZR, B_DQ, B_DM, B_DX, B_DALPHA, B_DAS, B_DAD, B_DO, B_XVAL, B_AX,
	/* relational layers */
	B_H, B_WREL, B_DWREL, B_HR, B_MR, B_TR, B_DT, B_DMR, B_DHR, B_DH, B_BT,
	B_XS,						/* a streamed input read whole */
	B_COUNT
};

typedef struct gnn_layer
{
	int			index;
	int32_t		d_in;
	int32_t		d_out;			/* output width (heads*f when concatenated) */
	int32_t		heads;
	int32_t		f;				/* per-head width (GAT) */
	int32_t		pool;			/* pool width (SAGE pool) */
	bool		concat;
	bool		last;
	gnn_act		act;
	int32_t		d_h;			/* relational: width of H, the convolution's input */
	int			p_w,			/* RGCN with bases: the bases */
				p_b,
				p_proj,			/* relational, layer 0: input projection */
				p_coef,			/* RGCN with bases: coefficients */
				p_root,
				p_pool,
				p_pool_b,
				p_att_src,
				p_att_dst;

	/* state of the last forward */
	gnn_dblock *blk;
	int64_t		n_src;
	int64_t		n_dst;
	bool		train;
	bool		in_sparse;
	bool		in_dropped;
	bool		in_fused;		/* x is the input before dropout, which the products apply */
	bool		in_by_prev;		/* the previous layer's epilogue applied this layer's input dropout */
	bool		y_dropped;		/* y holds the next layer's input dropout (fused, training) */
	bool		agg_first;		/* a GraphSAGE training pass aggregated first (B_AX holds A X) */
	bool		dp_by_next;		/* backward: the next layer's input gradient is this layer's dP and
								 * its bias gradient is done (spmm_t_bias_act_backward) */
	gnn_csr		xsp;			/* sparse input (values possibly dropped) */
	const float *x;				/* dense input after dropout (unless in_fused) */
	const gnn_dfeat *xs;		/* streamed input (x NULL): read in chunks by lin_fwd */
	uint64_t	seed_in;
	uint64_t	seed_attn;
	const float *alpha_used;	/* alpha after attention dropout */
	const float *p_out;			/* pre-activation output */
	const float *y;				/* output */
	const float *h;				/* relational: H (n_src x d_h) */
	const float *wrel;			/* relational: the W_r stacked (R*d_h x d_out) */
	gnn_buf		buf[B_COUNT];
} gnn_layer;

struct gnn_model
{
	gnn_backend *be;
	gnn_model_config cfg;
	int			nparams;
	gnn_param	params[GNN_MAX_PARAMS];
	gnn_layer	layers[GNN_MAX_LAYERS];
	bool		have_train_forward;
	gnn_halo_fn halo;			/* distributed full batch: halo rows of layer inputs */
	void	   *halo_arg;
	gnn_reduce_fn reduce;		/* feature slices: layer 0's partial pre-activations summed */
	void	   *reduce_arg;
	float	   *stage;			/* host rows for the hooks when the backend's memory is a device's */
	size_t		stage_cap;		/* floats */
};

/*
 * A hook (halo, reduce) works on host rows: on a device's backend the rows
 * go through m->stage, down before the call and back up after it.
 */
static gnn_status
hook_rows(gnn_model *m, float *rows, int64_t count, int32_t dim, bool backward, bool halo, gnn_error *err)
{
	gnn_backend *be = m->be;
	float	   *host = rows;
	size_t		bytes = sizeof(float) * (size_t) count;
	gnn_status	st;

	if (be->ops != gnn_backend_cpu())
	{
		if ((size_t) count > m->stage_cap)
		{
			float	   *b = realloc(m->stage, bytes);

			if (!b)
				return gnn_error_set(err, GNN_ERR_NOMEM, "out of memory staging %lld rows' floats for the other ranks",
									 (long long) count);
			m->stage = b;
			m->stage_cap = (size_t) count;
		}
		host = m->stage;
		if ((st = gnn_backend_copy_d2h(be, host, rows, bytes)) != GNN_OK)
			return gnn_backend_error(be, st, err);
	}
	else if ((st = gnn_backend_sync(be)) != GNN_OK)
		return gnn_backend_error(be, st, err);
	st = halo ? m->halo(m->halo_arg, host, dim, backward, err) : m->reduce(m->reduce_arg, host, count, err);
	if (st == GNN_OK && host != rows && (st = gnn_backend_copy_h2d(be, rows, host, bytes)) != GNN_OK)
		return gnn_backend_error(be, st, err);
	return st;
}

void
gnn_model_set_halo(gnn_model *m, gnn_halo_fn fn, void *arg)
{
	m->halo = fn;
	m->halo_arg = arg;
}

void
gnn_model_set_reduce(gnn_model *m, gnn_reduce_fn fn, void *arg)
{
	m->reduce = fn;
	m->reduce_arg = arg;
}

/* ------------------------------------------------------------------ config */

const char *
gnn_model_kind_name(gnn_model_kind kind)
{
	switch (kind)
	{
		case GNN_MODEL_GCN:
			return "gcn";
		case GNN_MODEL_SAGE:
			return "graphsage";
		case GNN_MODEL_GAT:
			return "gat";
		case GNN_MODEL_RGCN:
			return "rgcn";
		case GNN_MODEL_HSAGE:
			return "hetero_sage";
		case GNN_MODEL_NODE2VEC:
			return "node2vec";
	}
	return "unknown";
}

void
gnn_model_config_default(gnn_model_kind kind, gnn_model_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->kind = kind;
	cfg->aggr = GNN_AGGR_MEAN;
	cfg->layers = 2;
	cfg->hidden = kind == GNN_MODEL_GAT ? 8 : 16;
	cfg->heads = kind == GNN_MODEL_GAT ? 8 : 1;
	cfg->out_heads = 1;
	cfg->dropout = kind == GNN_MODEL_GAT ? 0.6f : 0.5f;
	cfg->attn_dropout = kind == GNN_MODEL_GAT ? 0.6f : 0.0f;
	cfg->negative_slope = 0.2f;
	cfg->act = kind == GNN_MODEL_GAT ? GNN_ACT_ELU : GNN_ACT_RELU;
	cfg->act_param = 1.0f;
	cfg->decay_first_only = kind == GNN_MODEL_GCN;
	cfg->num_relations = 1;
	cfg->num_node_types = 1;
	cfg->num_bases = 0;
}

static bool
is_relational(gnn_model_kind kind)
{
	return kind == GNN_MODEL_RGCN || kind == GNN_MODEL_HSAGE;
}

gnn_status
gnn_model_config_check(const gnn_model_config *c, gnn_error *err)
{
	if (c->kind != GNN_MODEL_GCN && c->kind != GNN_MODEL_SAGE && c->kind != GNN_MODEL_GAT &&
		!is_relational(c->kind) && c->kind != GNN_MODEL_NODE2VEC)
		return gnn_error_set(err, GNN_ERR_INVALID,
							 "unknown model kind %d (accepted: gcn, graphsage, gat, rgcn, hetero_sage, node2vec)",
							 (int) c->kind);
	if (c->kind == GNN_MODEL_NODE2VEC && (c->layers != 1 || c->out_dim != c->hidden))
		return gnn_error_set(err, GNN_ERR_INVALID,
							 "a node2vec model has one layer whose width is its output's (got %d layers, %d and %d wide)",
							 c->layers, c->hidden, c->out_dim);
	if (is_relational(c->kind))
	{
		if (c->num_relations < 1 || c->num_relations > GNN_MAX_EDGE_TYPES)
			return gnn_error_set(err, GNN_ERR_INVALID, "num_relations must be in [1, %d], got %d",
								 GNN_MAX_EDGE_TYPES, c->num_relations);
		if (c->num_node_types < 1 || c->num_node_types > GNN_MAX_NODE_TYPES)
			return gnn_error_set(err, GNN_ERR_INVALID, "num_node_types must be in [1, %d], got %d",
								 GNN_MAX_NODE_TYPES, c->num_node_types);
		if (c->num_bases < 0 || c->num_bases > c->num_relations)
			return gnn_error_set(err, GNN_ERR_INVALID,
								 "num_bases must be in [0, num_relations = %d] (0 = a full weight per relation), got %d",
								 c->num_relations, c->num_bases);
		if (c->num_bases > 0 && c->kind != GNN_MODEL_RGCN)
			return gnn_error_set(err, GNN_ERR_INVALID, "num_bases applies to rgcn only (got %d for %s)",
								 c->num_bases, gnn_model_kind_name(c->kind));
	}
	if (c->aggr != GNN_AGGR_MEAN && c->aggr != GNN_AGGR_POOL)
		return gnn_error_set(err, GNN_ERR_INVALID, "unknown aggregator %d (accepted: mean, pool)",
							 (int) c->aggr);
	if (c->in_dim < 1 || c->out_dim < 1 || c->in_dim > (1 << 26) || c->out_dim > (1 << 20))
		return gnn_error_set(err, GNN_ERR_INVALID,
							 "input and output dimensions must be in [1, 2^26] and [1, 2^20] (got %d, %d)",
							 c->in_dim, c->out_dim);
	if (c->hidden < 1 || c->hidden > 65536)
		return gnn_error_set(err, GNN_ERR_INVALID, "hidden must be in [1, 65536], got %d", c->hidden);
	if (c->layers < 1 || c->layers > GNN_MAX_LAYERS)
		return gnn_error_set(err, GNN_ERR_INVALID, "layers must be in [1, %d], got %d",
							 GNN_MAX_LAYERS, c->layers);
	if (c->kind == GNN_MODEL_GAT &&
		(c->heads < 1 || c->heads > GNN_MAX_HEADS || c->out_heads < 1 || c->out_heads > GNN_MAX_HEADS))
		return gnn_error_set(err, GNN_ERR_INVALID, "heads and output heads must be in [1, %d], got %d, %d",
							 GNN_MAX_HEADS, c->heads, c->out_heads);
	if (!(c->dropout >= 0.0f && c->dropout < 1.0f))
		return gnn_error_set(err, GNN_ERR_INVALID, "dropout must be in [0, 1), got %g", c->dropout);
	if (!(c->attn_dropout >= 0.0f && c->attn_dropout < 1.0f))
		return gnn_error_set(err, GNN_ERR_INVALID, "attention dropout must be in [0, 1), got %g",
							 c->attn_dropout);
	if (!(c->negative_slope >= 0.0f && c->negative_slope < 1.0f))
		return gnn_error_set(err, GNN_ERR_INVALID, "negative slope must be in [0, 1), got %g",
							 c->negative_slope);
	if (c->act != GNN_ACT_NONE && c->act != GNN_ACT_RELU && c->act != GNN_ACT_ELU &&
		c->act != GNN_ACT_LEAKY_RELU)
		return gnn_error_set(err, GNN_ERR_INVALID, "unknown activation %d (accepted: none, relu, elu, leaky_relu)",
							 (int) c->act);
	return GNN_OK;
}

/* ------------------------------------------------------------------ params */

static gnn_status
add_param(gnn_model *m, int layer, const char *what, int64_t rows, int64_t cols, double glorot_a,
		  gnn_rng *rng, bool decay, int *idx, gnn_error *err)
{
	gnn_param  *p;
	gnn_status	st;
	float	   *host;
	bool		state;

	if (m->nparams >= GNN_MAX_PARAMS)
		return gnn_error_set(err, GNN_ERR_LIMIT, "too many parameters");
	p = &m->params[m->nparams];
	snprintf(p->name, sizeof(p->name), "l%d.%s", layer, what);
	p->decay = decay;
	/*
	 * A node2vec table is trained by its own loop, not by the optimiser:
	 * no gradient or moments (they would triple a table of a row per node)
	 */
	state = m->cfg.kind != GNN_MODEL_NODE2VEC;
	if ((st = gnn_tensor_alloc(m->be, rows, cols, &p->w, err)) ||
		(st = gnn_tensor_alloc(m->be, state ? rows : 0, cols, &p->g, err)) ||
		(st = gnn_tensor_alloc(m->be, state ? rows : 0, cols, &p->m, err)) ||
		(st = gnn_tensor_alloc(m->be, state ? rows : 0, cols, &p->v, err)))
	{
		m->nparams++;			/* so gnn_model_free releases what was allocated */
		return st;
	}
	m->nparams++;
	*idx = m->nparams - 1;
	if (glorot_a > 0)
	{
		host = malloc(sizeof(float) * rows * cols + 1);
		if (!host)
			return gnn_error_set(err, GNN_ERR_NOMEM, "out of memory");
		for (int64_t i = 0; i < rows * cols; i++)
		{
			/* a stop is seen every 16M values (tens of milliseconds) */
			if ((i & ((1 << 24) - 1)) == 0 && i > 0 && gnn_backend_stop_requested(m->be))
			{
				free(host);
				return gnn_error_set(err, GNN_ERR_CANCELLED, "stopped on request while initialising the weights");
			}
			host[i] = (float) ((2.0 * gnn_rng_double(rng) - 1.0) * glorot_a);
		}
		st = gnn_tensor_upload(&p->w, host, err);
		free(host);
		if (st != GNN_OK)
			return st;
	}
	return GNN_OK;
}

static double
glorot(int64_t fan_in, int64_t fan_out)
{
	return sqrt(6.0 / (double) (fan_in + fan_out));
}

/*
 * The one place that decides a model's parameters and layer shapes: used by
 * gnn_model_create (m != NULL: allocate and initialise) and by
 * gnn_model_config_params (m == NULL: only report names and shapes).
 */
typedef struct shape_walk
{
	gnn_model  *m;
	gnn_rng    *rng;
	void		(*fn) (void *arg, const char *name, int64_t rows, int64_t cols);
	void	   *arg;
	int64_t		total;
} shape_walk;

static gnn_status
walk_param(shape_walk *w, int layer, const char *what, int64_t rows, int64_t cols, double a,
		   bool decay, int *idx, gnn_error *err)
{
	w->total += rows * cols;
	if (w->fn)
	{
		char		nm[GNN_PARAM_NAME_LEN];

		snprintf(nm, sizeof(nm), "l%d.%s", layer, what);
		w->fn(w->arg, nm, rows, cols);
	}
	if (!w->m)
		return GNN_OK;
	return add_param(w->m, layer, what, rows, cols, a, w->rng, decay, idx, err);
}

static gnn_status
walk_model(const gnn_model_config *cfg, shape_walk *w, gnn_layer *layers, gnn_error *err)
{
	int32_t		d_in = cfg->in_dim;
	gnn_status	st = GNN_OK;

	for (int l = 0; l < cfg->layers; l++)
	{
		gnn_layer  *L = &layers[l];
		bool		last = l == cfg->layers - 1;
		bool		decay = !cfg->decay_first_only || l == 0;

		L->index = l;
		L->last = last;
		L->d_in = d_in;
		L->act = last ? GNN_ACT_NONE : cfg->act;
		L->p_w = L->p_b = L->p_root = L->p_pool = L->p_pool_b = L->p_att_src = L->p_att_dst = -1;
		L->p_proj = L->p_coef = -1;
		L->d_h = d_in;
		if (is_relational(cfg->kind) && l == 0)
		{
			L->d_h = cfg->hidden;
			st = walk_param(w, l, "proj", d_in, L->d_h, glorot(d_in, L->d_h), decay, &L->p_proj, err);
			if (st != GNN_OK)
				return st;
		}
		switch (cfg->kind)
		{
			case GNN_MODEL_NODE2VEC:
				/* a row per node (the input is the node's one-hot), set by training */
				L->d_out = cfg->hidden;
				L->act = GNN_ACT_NONE;
				st = walk_param(w, l, "emb", d_in, L->d_out, 0, false, &L->p_w, err);
				if (st != GNN_OK)
					return st;
				d_in = L->d_out;
				continue;
			case GNN_MODEL_RGCN:
			case GNN_MODEL_HSAGE:
				{
					int64_t		R = cfg->num_relations,
								T = cfg->kind == GNN_MODEL_HSAGE ? cfg->num_node_types : 1,
								dh = L->d_h;

					L->d_out = last ? cfg->out_dim : cfg->hidden;
					if (cfg->kind == GNN_MODEL_RGCN && cfg->num_bases > 0)
					{
						st = walk_param(w, l, "bases", cfg->num_bases * dh, L->d_out, glorot(dh, L->d_out),
										decay, &L->p_w, err);
						if (st == GNN_OK)
							st = walk_param(w, l, "coef", R, cfg->num_bases, glorot(R, cfg->num_bases),
											decay, &L->p_coef, err);
					}
					else
						st = walk_param(w, l, "weight", R * dh, L->d_out, glorot(dh, L->d_out), decay,
										&L->p_w, err);
					if (st == GNN_OK)
						st = walk_param(w, l, "root", T * dh, L->d_out, glorot(dh, L->d_out), decay,
										&L->p_root, err);
					if (st == GNN_OK)
						st = walk_param(w, l, "bias", T, L->d_out, 0, decay, &L->p_b, err);
					if (st != GNN_OK)
						return st;
					d_in = L->d_out;
					continue;
				}
			case GNN_MODEL_GCN:
				L->d_out = last ? cfg->out_dim : cfg->hidden;
				st = walk_param(w, l, "weight", d_in, L->d_out, glorot(d_in, L->d_out), decay, &L->p_w, err);
				break;
			case GNN_MODEL_SAGE:
				L->d_out = last ? cfg->out_dim : cfg->hidden;
				if (cfg->aggr == GNN_AGGR_POOL)
				{
					/* DGL pools in the input width; wide sparse inputs pool in hidden width */
					L->pool = d_in > 256 ? cfg->hidden : d_in;
					st = walk_param(w, l, "pool", d_in, L->pool, glorot(d_in, L->pool), decay, &L->p_pool, err);
					if (st == GNN_OK)
						st = walk_param(w, l, "pool_bias", 1, L->pool, 0, decay, &L->p_pool_b, err);
					if (st == GNN_OK)
						st = walk_param(w, l, "weight", L->pool, L->d_out, glorot(L->pool, L->d_out), decay, &L->p_w, err);
				}
				else
					st = walk_param(w, l, "weight", d_in, L->d_out, glorot(d_in, L->d_out), decay, &L->p_w, err);
				if (st == GNN_OK)
					st = walk_param(w, l, "root", d_in, L->d_out, glorot(d_in, L->d_out), decay, &L->p_root, err);
				break;
			case GNN_MODEL_GAT:
				L->heads = last ? cfg->out_heads : cfg->heads;
				L->f = last ? cfg->out_dim : cfg->hidden;
				L->concat = !last;
				L->d_out = L->concat ? L->heads * L->f : L->f;
				st = walk_param(w, l, "weight", d_in, (int64_t) L->heads * L->f,
								glorot(d_in, (int64_t) L->heads * L->f), decay, &L->p_w, err);
				if (st == GNN_OK)
					st = walk_param(w, l, "att_src", L->heads, L->f, glorot(L->heads, L->f), decay, &L->p_att_src, err);
				if (st == GNN_OK)
					st = walk_param(w, l, "att_dst", L->heads, L->f, glorot(L->heads, L->f), decay, &L->p_att_dst, err);
				break;
		}
		if (st == GNN_OK)
			st = walk_param(w, l, "bias", 1, L->d_out, 0, decay, &L->p_b, err);
		if (st != GNN_OK)
			return st;
		d_in = L->d_out;
	}
	return GNN_OK;
}

int64_t
gnn_model_config_params(const gnn_model_config *cfg,
						void (*fn) (void *arg, const char *name, int64_t rows, int64_t cols),
						void *arg)
{
	shape_walk	w = {NULL, NULL, fn, arg, 0};
	gnn_layer  *layers;
	gnn_status	st;

	if (gnn_model_config_check(cfg, NULL) != GNN_OK)
		return -1;
	layers = calloc(GNN_MAX_LAYERS, sizeof(gnn_layer));
	if (!layers)
		return -1;
	st = walk_model(cfg, &w, layers, NULL);
	free(layers);
	return st == GNN_OK ? w.total : -1;
}

gnn_status
gnn_model_create(gnn_backend *be, const gnn_model_config *cfg, gnn_rng *rng,
				 gnn_model **out, gnn_error *err)
{
	gnn_model  *m;
	gnn_status	st;
	shape_walk	w = {NULL, rng, NULL, NULL, 0};

	*out = NULL;
	if ((st = gnn_model_config_check(cfg, err)) != GNN_OK)
		return st;
	m = calloc(1, sizeof(*m));
	if (!m)
		return gnn_error_set(err, GNN_ERR_NOMEM, "out of memory creating a model");
	m->be = be;
	m->cfg = *cfg;
	w.m = m;
	if ((st = walk_model(cfg, &w, m->layers, err)) != GNN_OK)
	{
		gnn_model_free(m);
		return st;
	}
	*out = m;
	return GNN_OK;
}

void
gnn_model_free(gnn_model *m)
{
	if (!m)
		return;
	for (int i = 0; i < m->nparams; i++)
	{
		gnn_tensor_free(&m->params[i].w);
		gnn_tensor_free(&m->params[i].g);
		gnn_tensor_free(&m->params[i].m);
		gnn_tensor_free(&m->params[i].v);
	}
	for (int l = 0; l < GNN_MAX_LAYERS; l++)
		for (int b = 0; b < B_COUNT; b++)
			gnn_buf_free(m->be, &m->layers[l].buf[b]);
	free(m->stage);
	free(m);
}

const gnn_model_config *
gnn_model_config_of(const gnn_model *m)
{
	return &m->cfg;
}

gnn_backend *
gnn_model_backend(const gnn_model *m)
{
	return m->be;
}

int
gnn_model_num_params(const gnn_model *m)
{
	return m->nparams;
}

gnn_param *
gnn_model_param(gnn_model *m, int i)
{
	return i >= 0 && i < m->nparams ? &m->params[i] : NULL;
}

int
gnn_model_find_param(const gnn_model *m, const char *name)
{
	for (int i = 0; i < m->nparams; i++)
		if (strcmp(m->params[i].name, name) == 0)
			return i;
	return -1;
}

/* layer's output width from the architecture alone (as walk_model sets d_out); 0 when out of range */
int32_t
gnn_model_config_layer_dim(const gnn_model_config *cfg, int layer)
{
	bool		last = layer == cfg->layers - 1;

	if (layer < 0 || layer >= cfg->layers)
		return 0;
	switch (cfg->kind)
	{
		case GNN_MODEL_NODE2VEC:
			return cfg->hidden;
		case GNN_MODEL_GAT:
			return last ? cfg->out_dim : cfg->heads * cfg->hidden;
		default:
			return last ? cfg->out_dim : cfg->hidden;
	}
}

int32_t
gnn_model_layer_dim(const gnn_model *m, int layer)
{
	return layer >= 0 && layer < m->cfg.layers ? m->layers[layer].d_out : 0;
}

const float *
gnn_model_layer_output(const gnn_model *m, int layer, int64_t *rows, int32_t *cols)
{
	/* (a training pass's hidden outputs may hold the next layer's dropout: y_dropped) */
	if (layer < 0 || layer >= m->cfg.layers || !m->layers[layer].y || m->layers[layer].y_dropped)
		return NULL;
	if (rows)
		*rows = m->layers[layer].n_dst;
	if (cols)
		*cols = m->layers[layer].d_out;
	return m->layers[layer].y;
}

gnn_status
gnn_model_node_rows(gnn_model *m, const gnn_graph *g, const int64_t *idx, int64_t n, float *host_out,
					gnn_error *err)
{
	const gnn_layer *L = &m->layers[0];
	const float *emb;
	int32_t		d = m->cfg.hidden;

	if (m->cfg.kind != GNN_MODEL_NODE2VEC || L->p_w < 0)
		return gnn_error_set(err, GNN_ERR_INVALID, "a %s model has no row per node", gnn_model_kind_name(m->cfg.kind));
	if (g->num_nodes != m->cfg.in_dim)
		return gnn_error_set(err, GNN_ERR_DIMENSION,
							 "the node2vec model has rows for %d nodes, and the graph now has %lld: "
							 "node2vec learns a row per node, so nodes that came or went need training again",
							 m->cfg.in_dim, (long long) g->num_nodes);
	emb = m->params[L->p_w].w.data;
	if (!idx)
		return gnn_backend_error(m->be, gnn_backend_copy_d2h(m->be, host_out, emb, sizeof(float) * (size_t) n * d), err);
	for (int64_t i = 0; i < n; i++)
	{
		gnn_status	st;

		if (idx[i] < 0 || idx[i] >= g->num_nodes)
			return gnn_error_set(err, GNN_ERR_INVALID, "node index %lld is out of range", (long long) idx[i]);
		st = gnn_backend_copy_d2h(m->be, host_out + i * d, emb + idx[i] * d, sizeof(float) * d);
		if (st != GNN_OK)
			return gnn_backend_error(m->be, st, err);
	}
	return GNN_OK;
}

size_t
gnn_model_weights_count(const gnn_model *m)
{
	size_t		n = 0;

	for (int i = 0; i < m->nparams; i++)
		n += (size_t) gnn_tensor_numel(&m->params[i].w);
	return n;
}

gnn_status
gnn_model_weights_get(gnn_model *m, float *host, gnn_error *err)
{
	gnn_status	st;

	for (int i = 0; i < m->nparams; i++)
	{
		if ((st = gnn_tensor_download(&m->params[i].w, host, err)) != GNN_OK)
			return st;
		host += gnn_tensor_numel(&m->params[i].w);
	}
	return GNN_OK;
}

gnn_status
gnn_model_weights_set(gnn_model *m, const float *host, gnn_error *err)
{
	gnn_status	st;

	for (int i = 0; i < m->nparams; i++)
	{
		if ((st = gnn_tensor_upload(&m->params[i].w, host, err)) != GNN_OK)
			return st;
		host += gnn_tensor_numel(&m->params[i].w);
	}
	return GNN_OK;
}

/* ------------------------------------------------------------------ helpers */

#define TRY(call) do { gnn_status st_ = (call); if (st_ != GNN_OK) return gnn_backend_error(be, st_, err); } while (0)
#define TRYE(call) do { gnn_status st_ = (call); if (st_ != GNN_OK) return st_; } while (0)

static inline float *
lbuf(gnn_layer *L, int which)
{
	return (float *) L->buf[which].p;
}

static gnn_status
ensure(gnn_model *m, gnn_layer *L, int which, int64_t nfloats, gnn_error *err)
{
	return gnn_buf_ensure(m->be, &L->buf[which], sizeof(float) * (size_t) (nfloats > 0 ? nfloats : 1), err);
}

static const float *
W(gnn_model *m, int p)
{
	return m->params[p].w.data;
}

static float *
G(gnn_model *m, int p)
{
	return m->params[p].g.data;
}

static uint64_t
seed_mix(uint64_t seed, uint64_t k)
{
	uint64_t	z = seed ^ (k * 0xd1342543de82ef95ULL + 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 31)) * 0xbf58476d1ce4e5b9ULL;
	return z ^ (z >> 29);
}

uint64_t
gnn_model_dropout_seed(uint64_t seed, int layer, bool attention)
{
	return seed_mix(seed, 2 * (uint64_t) layer + (attention ? 1 : 0));
}

int64_t		gnn_stream_rows = 16384;

/*
 * Rows [r0, r0 + n) of a streamed input into the device buffer dst (n x
 * d_in): gathered through the store into host, normalised as the input
 * would be, copied over.
 */
static gnn_status
stream_rows(gnn_model *m, const gnn_dfeat *xs, int64_t r0, int64_t n, float *host, float *dst, gnn_error *err)
{
	gnn_status	st;

	if ((st = gnn_graph_feat_range(xs->stream, r0, n, host, err)) != GNN_OK)
		return st;
	if (xs->stream_norm)
		gnn_normalise_rows(host, n, xs->dim, 1);
	return gnn_backend_error(m->be, gnn_backend_copy_h2d(m->be, dst, host, sizeof(float) * (size_t) n * xs->dim), err);
}

/* out[rows x dout] = X[:rows] W for a streamed X: one chunk of rows at a time */
static gnn_status
stream_fwd(gnn_model *m, gnn_layer *L, const float *Wt, int64_t dout, int64_t rows, float *out, gnn_error *err)
{
	int64_t		chunk = rows < gnn_stream_rows ? rows : gnn_stream_rows;
	size_t		bytes = sizeof(float) * (size_t) (chunk > 0 ? chunk : 1) * (size_t) L->d_in;
	float	   *host = malloc(bytes);
	void	   *dev = NULL;
	gnn_status	st = GNN_OK;

	if (!host || gnn_backend_alloc(m->be, bytes, &dev) != GNN_OK)
	{
		free(host);
		return gnn_error_set(err, GNN_ERR_NOMEM, "out of memory for %lld streamed feature rows", (long long) chunk);
	}
	for (int64_t r0 = 0; r0 < rows && st == GNN_OK; r0 += chunk)
	{
		int64_t		n = rows - r0 < chunk ? rows - r0 : chunk;

		if ((st = stream_rows(m, L->xs, r0, n, host, dev, err)) == GNN_OK)
			st = gnn_backend_error(m->be, gnn_backend_gemm(m->be, false, false, n, dout, L->d_in, 1.0f, dev, L->d_in,
															Wt, dout, 0.0f, out + (size_t) r0 * dout, dout), err);
	}
	gnn_backend_free(m->be, dev);
	free(host);
	return st;
}

/* out[rows x dout] = X[:rows] W */
static gnn_status
lin_fwd(gnn_model *m, gnn_layer *L, const float *Wt, int64_t dout, int64_t rows, float *out,
		gnn_error *err)
{
	gnn_backend *be = m->be;

	if (L->xs)
		return stream_fwd(m, L, Wt, dout, rows, out, err);
	if (L->in_sparse)
	{
		gnn_csr		c = L->xsp;

		c.n_rows = rows;		/* a row prefix of a CSR is a CSR */
		TRY(gnn_backend_spmm(be, &c, GNN_AGG_SUM, NULL, NULL, Wt, dout, 0.0f, out));
	}
	else if (L->in_fused)
		TRY(gnn_backend_gemm_dropout(be, false, rows, dout, L->d_in, 1.0f, L->x, L->d_in,
									 m->cfg.dropout, L->seed_in, Wt, dout, 0.0f, out, dout));
	else if (!L->train && rows > gnn_stream_rows)
	{
		/*
		 * Forward passes in the chunks a streamed input uses (BLAS rounds
		 * a row differently by where it falls in a call): a graph in
		 * memory and the same graph with its features on disk give the
		 * same bits.
		 */
		for (int64_t r0 = 0; r0 < rows; r0 += gnn_stream_rows)
			TRY(gnn_backend_gemm(be, false, false, rows - r0 < gnn_stream_rows ? rows - r0 : gnn_stream_rows, dout,
								 L->d_in, 1.0f, L->x + (size_t) r0 * L->d_in, L->d_in, Wt, dout, 0.0f,
								 out + (size_t) r0 * dout, dout));
	}
	else
		TRY(gnn_backend_gemm(be, false, false, rows, dout, L->d_in, 1.0f, L->x, L->d_in,
							 Wt, dout, 0.0f, out, dout));
	return GNN_OK;
}

/* dW[d_in x dout] = X[:rows]^T dOut; sparse inputs need rows == n_src */
static gnn_status
lin_bwd_w(gnn_model *m, gnn_layer *L, const float *dOut, int64_t dout, int64_t rows, float *dW,
		  gnn_error *err)
{
	gnn_backend *be = m->be;

	if (L->in_sparse)
		TRY(gnn_backend_spmm_t(be, &L->xsp, GNN_AGG_SUM, NULL, NULL, dOut, dout, 0.0f, dW));
	else if (L->in_fused)
		TRY(gnn_backend_gemm_dropout(be, true, L->d_in, dout, rows, 1.0f, L->x, L->d_in,
									 m->cfg.dropout, L->seed_in, dOut, dout, 0.0f, dW, dout));
	else
		TRY(gnn_backend_gemm(be, true, false, L->d_in, dout, rows, 1.0f, L->x, L->d_in,
							 dOut, dout, 0.0f, dW, dout));
	return GNN_OK;
}

/* dX[:rows] = beta*dX[:rows] + dOut W^T (dense inputs) */
static gnn_status
lin_bwd_x(gnn_model *m, gnn_layer *L, const float *dOut, int64_t dout, int64_t rows,
		  const float *Wt, float beta, float *dX, gnn_error *err)
{
	gnn_backend *be = m->be;

	TRY(gnn_backend_gemm(be, false, true, rows, L->d_in, dout, 1.0f, dOut, dout, Wt, dout,
						 beta, dX, L->d_in));
	return GNN_OK;
}

/* ------------------------------------------------------------------ forward */

/*
 * Aggregate-first for a GCN or GraphSAGE-mean layer on dense inputs:
 * (A X) W on A's n_dst rows, instead of A (X W) on all n_src, which is the
 * same up to float summation order and cheaper when a few destinations
 * have many sources (a hub's neighbours feeding one row) or when the layer
 * widens.  GraphSAGE-mean does it in training and evaluation too
 * (L->agg_first), its backward reading A X.
 */
static bool
aggregate_first(const gnn_model *m, const gnn_layer *L, const gnn_dblock *blk)
{
	const gnn_csr *A = m->cfg.kind == GNN_MODEL_GCN ? &blk->loop.csr : &blk->raw.csr;
	double		din = L->d_in,
				dout = L->d_out,
				nnz = (double) A->nnz;

	if (is_relational(m->cfg.kind))
		return false;			/* aggregates first always (rel_forward) */
	if (L->in_sparse || m->cfg.kind == GNN_MODEL_GAT ||
		(m->cfg.kind == GNN_MODEL_SAGE && m->cfg.aggr != GNN_AGGR_MEAN))
		return false;
	return nnz * din + blk->n_dst * din * dout < nnz * dout + blk->n_src * din * dout;
}

/* P = aggregate(X) W (+ X[:n_dst] W_root for GraphSAGE): see aggregate_first */
static gnn_status
layer_forward_aggregate_first(gnn_model *m, gnn_layer *L, gnn_dblock *blk, float *P, gnn_error *err)
{
	gnn_backend *be = m->be;
	bool		gcn = m->cfg.kind == GNN_MODEL_GCN;
	int64_t		nd = blk->n_dst,
				din = L->d_in,
				dout = L->d_out;

	TRYE(ensure(m, L, B_AX, nd * din, err));
	TRY(gnn_backend_spmm(be, gcn ? &blk->loop.csr : &blk->raw.csr, gcn ? GNN_AGG_SUM : GNN_AGG_MEAN,
						 NULL, NULL, L->x, din, 0.0f, lbuf(L, B_AX)));
	TRY(gnn_backend_gemm(be, false, false, nd, dout, din, 1.0f, lbuf(L, B_AX), din,
						 W(m, L->p_w), dout, 0.0f, P, dout));
	if (!gcn)
		TRY(gnn_backend_gemm(be, false, false, nd, dout, din, 1.0f, L->x, din,
							 W(m, L->p_root), dout, 1.0f, P, dout));
	return GNN_OK;
}

/* ------------------------------------------------------------------ relational layers */

/*
 * Relation r of a block as the relational layers see it: a block without
 * etypes is all relation 0, read from its raw CSR.  NULL when the block
 * has no entry of relation r.
 */
static const gnn_drel *
block_rel(const gnn_dblock *blk, int32_t r, gnn_drel *tmp)
{
	if (blk->num_rel == 0)
	{
		if (r != 0 || blk->raw.csr.nnz == 0)
			return NULL;
		memset(tmp, 0, sizeof(*tmp));
		tmp->nd = blk->n_dst;
		tmp->ns = blk->n_src;
		tmp->a = blk->raw;
		return tmp;
	}
	if (r >= blk->num_rel || blk->rel[r].a.csr.nnz == 0)
		return NULL;
	return &blk->rel[r];
}

/* destinations of node type t (HSAGE): n 0 when none; rows NULL for all */
static gnn_drows
block_type_rows(const gnn_dblock *blk, int32_t t)
{
	gnn_drows	none = {0, NULL};

	if (blk->num_ntypes == 0)
	{
		gnn_drows	all = {blk->n_dst, NULL};

		return t == 0 ? all : none;
	}
	return t < blk->num_ntypes ? blk->trows[t] : none;
}

/* the block's relations and types fit the model */
static gnn_status
rel_check(gnn_model *m, const gnn_dblock *blk, gnn_error *err)
{
	const gnn_model_config *cfg = &m->cfg;

	if (blk->num_rel > cfg->num_relations)
		return gnn_error_set(err, GNN_ERR_INVALID, "the block has relations 0..%d but the model only %d",
							 blk->num_rel - 1, cfg->num_relations);
	if (cfg->kind == GNN_MODEL_HSAGE && blk->num_ntypes > cfg->num_node_types)
		return gnn_error_set(err, GNN_ERR_INVALID, "the block has node types 0..%d but the model only %d",
							 blk->num_ntypes - 1, cfg->num_node_types);
	if (blk->num_rel == 0 && blk->raw.csr.nnz > 0 && !blk->raw.csr.indptr)
		return gnn_error_set(err, GNN_ERR_INVALID, "a relational layer needs a block with its relations");
	return GNN_OK;
}

/* Hr = H's rows of relation r's columns (H itself when they are all) */
static gnn_status
rel_gather_src(gnn_model *m, gnn_layer *L, const gnn_drel *rel, const float **Hr, gnn_error *err)
{
	gnn_backend *be = m->be;

	*Hr = L->h;
	if (rel->cols)
	{
		TRYE(ensure(m, L, B_HR, rel->ns * L->d_h, err));
		TRY(gnn_backend_gather_rows(be, L->h, L->d_h, rel->cols, rel->ns, lbuf(L, B_HR)));
		*Hr = lbuf(L, B_HR);
	}
	return GNN_OK;
}

/*
 * P = H_dst W_root[type] + sum_r mean_r(H) W_r + b[type]: aggregate first
 * (the mean runs on d_h-wide rows of the relation's sources only), then one
 * product per relation, scattered to the relation's destinations.
 */
static gnn_status
rel_forward(gnn_model *m, gnn_layer *L, gnn_dblock *blk, float *P, gnn_error *err)
{
	gnn_backend *be = m->be;
	const gnn_model_config *cfg = &m->cfg;
	int64_t		nd = blk->n_dst,
				dh = L->d_h,
				dout = L->d_out,
				R = cfg->num_relations;
	bool		hsage = cfg->kind == GNN_MODEL_HSAGE;

	TRYE(rel_check(m, blk, err));
	/* W_r = sum_b coef[r,b] V_b: [R x dh*dout] = coef [R x B] . V [B x dh*dout] */
	if (L->p_coef >= 0)
	{
		TRYE(ensure(m, L, B_WREL, R * dh * dout, err));
		TRY(gnn_backend_gemm(be, false, false, R, dh * dout, cfg->num_bases, 1.0f, W(m, L->p_coef),
							 cfg->num_bases, W(m, L->p_w), dh * dout, 0.0f, lbuf(L, B_WREL), dh * dout));
		L->wrel = lbuf(L, B_WREL);
	}
	else
		L->wrel = W(m, L->p_w);

	/* root term */
	if (!hsage)
		TRY(gnn_backend_gemm(be, false, false, nd, dout, dh, 1.0f, L->h, dh, W(m, L->p_root), dout,
							 0.0f, P, dout));
	else
	{
		TRY(gnn_backend_memset(be, P, 0, sizeof(float) * nd * dout));
		for (int32_t t = 0; t < cfg->num_node_types; t++)
		{
			gnn_drows	tr = block_type_rows(blk, t);
			const float *Wt = W(m, L->p_root) + (int64_t) t * dh * dout;

			if (tr.n == 0)
				continue;
			if (!tr.rows)
				TRY(gnn_backend_gemm(be, false, false, nd, dout, dh, 1.0f, L->h, dh, Wt, dout, 1.0f, P, dout));
			else
			{
				TRYE(ensure(m, L, B_HR, tr.n * dh, err));
				TRYE(ensure(m, L, B_TR, tr.n * dout, err));
				TRY(gnn_backend_gather_rows(be, L->h, dh, tr.rows, tr.n, lbuf(L, B_HR)));
				TRY(gnn_backend_gemm(be, false, false, tr.n, dout, dh, 1.0f, lbuf(L, B_HR), dh, Wt, dout,
									 0.0f, lbuf(L, B_TR), dout));
				TRY(gnn_backend_scatter_add_rows(be, lbuf(L, B_TR), dout, tr.rows, tr.n, P));
			}
		}
	}

	/* relations */
	for (int32_t r = 0; r < R; r++)
	{
		gnn_drel	tmp;
		const gnn_drel *rel = block_rel(blk, r, &tmp);
		const float *Hr;
		const float *Wr = L->wrel + (int64_t) r * dh * dout;

		if (!rel)
			continue;
		TRYE(rel_gather_src(m, L, rel, &Hr, err));
		TRYE(ensure(m, L, B_MR, rel->nd * dh, err));
		TRY(gnn_backend_spmm(be, &rel->a.csr, GNN_AGG_MEAN, NULL, NULL, Hr, dh, 0.0f, lbuf(L, B_MR)));
		if (!rel->rows)
			TRY(gnn_backend_gemm(be, false, false, nd, dout, dh, 1.0f, lbuf(L, B_MR), dh, Wr, dout,
								 1.0f, P, dout));
		else
		{
			TRYE(ensure(m, L, B_TR, rel->nd * dout, err));
			TRY(gnn_backend_gemm(be, false, false, rel->nd, dout, dh, 1.0f, lbuf(L, B_MR), dh, Wr, dout,
								 0.0f, lbuf(L, B_TR), dout));
			TRY(gnn_backend_scatter_add_rows(be, lbuf(L, B_TR), dout, rel->rows, rel->nd, P));
		}
	}

	/* bias, per destination type for HSAGE */
	if (hsage && blk->ntype)
	{
		TRYE(ensure(m, L, B_BT, nd * dout, err));
		TRY(gnn_backend_gather_rows(be, W(m, L->p_b), dout, blk->ntype, nd, lbuf(L, B_BT)));
		TRY(gnn_backend_axpby(be, nd * dout, 1.0f, lbuf(L, B_BT), 1.0f, P));
	}
	else
		TRY(gnn_backend_add_bias(be, P, W(m, L->p_b), nd, dout));
	return GNN_OK;
}

/*
 * Backward of rel_forward from dP: the parameters' gradients and dH (n_src
 * x d_h, overwritten).  mean_r(H) is recomputed per relation rather than
 * kept from the forward: keeping it would cost the sum over relations of
 * their destinations times d_h.
 */
static gnn_status
rel_backward(gnn_model *m, gnn_layer *L, const float *dP, float *dH, gnn_error *err)
{
	gnn_backend *be = m->be;
	const gnn_model_config *cfg = &m->cfg;
	gnn_dblock *blk = L->blk;
	int64_t		nd = L->n_dst,
				ns = L->n_src,
				dh = L->d_h,
				dout = L->d_out,
				R = cfg->num_relations,
				T = cfg->kind == GNN_MODEL_HSAGE ? cfg->num_node_types : 1;
	bool		hsage = cfg->kind == GNN_MODEL_HSAGE;
	float	   *dW;

	/* bias */
	if (hsage && blk->ntype)
	{
		TRY(gnn_backend_memset(be, G(m, L->p_b), 0, sizeof(float) * T * dout));
		TRY(gnn_backend_scatter_add_rows(be, dP, dout, blk->ntype, nd, G(m, L->p_b)));
	}
	else
	{
		if (T > 1)
			TRY(gnn_backend_memset(be, G(m, L->p_b), 0, sizeof(float) * T * dout));
		TRY(gnn_backend_bias_grad(be, dP, nd, dout, 0.0f, G(m, L->p_b)));
	}

	/* root term */
	TRY(gnn_backend_memset(be, dH, 0, sizeof(float) * ns * dh));
	TRY(gnn_backend_memset(be, G(m, L->p_root), 0, sizeof(float) * T * dh * dout));
	for (int32_t t = 0; t < T; t++)
	{
		gnn_drows	tr = hsage ? block_type_rows(blk, t) : (gnn_drows) {nd, NULL};
		const float *Wt = W(m, L->p_root) + (int64_t) t * dh * dout;
		float	   *dWt = G(m, L->p_root) + (int64_t) t * dh * dout;

		if (tr.n == 0)
			continue;
		if (!tr.rows)
		{
			TRY(gnn_backend_gemm(be, true, false, dh, dout, nd, 1.0f, L->h, dh, dP, dout, 0.0f, dWt, dout));
			TRY(gnn_backend_gemm(be, false, true, nd, dh, dout, 1.0f, dP, dout, Wt, dout, 1.0f, dH, dh));
		}
		else
		{
			TRYE(ensure(m, L, B_HR, tr.n * dh, err));
			TRYE(ensure(m, L, B_DT, tr.n * dout, err));
			TRYE(ensure(m, L, B_DHR, tr.n * dh, err));
			TRY(gnn_backend_gather_rows(be, L->h, dh, tr.rows, tr.n, lbuf(L, B_HR)));
			TRY(gnn_backend_gather_rows(be, dP, dout, tr.rows, tr.n, lbuf(L, B_DT)));
			TRY(gnn_backend_gemm(be, true, false, dh, dout, tr.n, 1.0f, lbuf(L, B_HR), dh, lbuf(L, B_DT), dout,
								 0.0f, dWt, dout));
			TRY(gnn_backend_gemm(be, false, true, tr.n, dh, dout, 1.0f, lbuf(L, B_DT), dout, Wt, dout,
								 0.0f, lbuf(L, B_DHR), dh));
			TRY(gnn_backend_scatter_add_rows(be, lbuf(L, B_DHR), dh, tr.rows, tr.n, dH));
		}
	}

	/* relations: dW_r = mean_r(H)^T dP_r, dH += A_r^T (dP_r W_r^T) */
	if (L->p_coef >= 0)
	{
		TRYE(ensure(m, L, B_DWREL, R * dh * dout, err));
		dW = lbuf(L, B_DWREL);
	}
	else
		dW = G(m, L->p_w);
	TRY(gnn_backend_memset(be, dW, 0, sizeof(float) * R * dh * dout));
	for (int32_t r = 0; r < R; r++)
	{
		gnn_drel	tmp;
		const gnn_drel *rel = block_rel(blk, r, &tmp);
		const float *Hr,
				   *dT = dP;
		const float *Wr = L->wrel + (int64_t) r * dh * dout;

		if (!rel)
			continue;
		TRYE(rel_gather_src(m, L, rel, &Hr, err));
		TRYE(ensure(m, L, B_MR, rel->nd * dh, err));
		TRY(gnn_backend_spmm(be, &rel->a.csr, GNN_AGG_MEAN, NULL, NULL, Hr, dh, 0.0f, lbuf(L, B_MR)));
		if (rel->rows)
		{
			TRYE(ensure(m, L, B_DT, rel->nd * dout, err));
			TRY(gnn_backend_gather_rows(be, dP, dout, rel->rows, rel->nd, lbuf(L, B_DT)));
			dT = lbuf(L, B_DT);
		}
		TRY(gnn_backend_gemm(be, true, false, dh, dout, rel->nd, 1.0f, lbuf(L, B_MR), dh, dT, dout,
							 1.0f, dW + (int64_t) r * dh * dout, dout));
		TRYE(ensure(m, L, B_DMR, rel->nd * dh, err));
		TRY(gnn_backend_gemm(be, false, true, rel->nd, dh, dout, 1.0f, dT, dout, Wr, dout, 0.0f,
							 lbuf(L, B_DMR), dh));
		if (!rel->cols)
			TRY(gnn_backend_spmm_t(be, &rel->a.csr, GNN_AGG_MEAN, NULL, NULL, lbuf(L, B_DMR), dh, 1.0f, dH));
		else
		{
			TRYE(ensure(m, L, B_DHR, rel->ns * dh, err));
			TRY(gnn_backend_spmm_t(be, &rel->a.csr, GNN_AGG_MEAN, NULL, NULL, lbuf(L, B_DMR), dh, 0.0f,
								   lbuf(L, B_DHR)));
			TRY(gnn_backend_scatter_add_rows(be, lbuf(L, B_DHR), dh, rel->cols, rel->ns, dH));
		}
	}
	/* bases: dcoef = dW [R x dh*dout] V^T, dV = coef^T dW */
	if (L->p_coef >= 0)
	{
		int64_t		B = cfg->num_bases;

		TRY(gnn_backend_gemm(be, false, true, R, B, dh * dout, 1.0f, dW, dh * dout, W(m, L->p_w), dh * dout,
							 0.0f, G(m, L->p_coef), B));
		TRY(gnn_backend_gemm(be, true, false, B, dh * dout, R, 1.0f, W(m, L->p_coef), B, dW, dh * dout,
							 0.0f, G(m, L->p_w), dh * dout));
	}
	return GNN_OK;
}

static gnn_status
layer_forward(gnn_model *m, gnn_layer *L, gnn_dblock *blk, const gnn_dfeat *xin,
			  const float *xprev, bool train, bool reorder, uint64_t seed, bool next_drops,
			  gnn_error *err)
{
	gnn_backend *be = m->be;
	const gnn_model_config *cfg = &m->cfg;
	int64_t		ns = blk->n_src,
				nd = blk->n_dst,
				dout = L->d_out;
	float		p = train ? cfg->dropout : 0.0f;
	float	   *P;
	const float *xs_whole = NULL;
	bool		sage_mean = cfg->kind == GNN_MODEL_SAGE && cfg->aggr == GNN_AGGR_MEAN;

	L->blk = blk;
	L->n_src = ns;
	L->n_dst = nd;
	L->train = train;
	L->seed_in = gnn_model_dropout_seed(seed, L->index, false);
	L->seed_attn = gnn_model_dropout_seed(seed, L->index, true);
	L->in_sparse = xin && xin->sparse;
	L->in_dropped = p > 0.0f;
	L->in_fused = false;
	L->in_by_prev = false;
	L->y_dropped = false;
	L->xs = NULL;
	if (xin && xin->stream)
	{
		/*
		 * A layer that aggregates first (the narrower side) would read X
		 * whole; streaming it transform-first would round differently
		 * from the same graph in memory, so it is read whole too.
		 */
		if (!train && (cfg->kind == GNN_MODEL_GCN || cfg->kind == GNN_MODEL_SAGE || cfg->kind == GNN_MODEL_GAT) &&
			!(reorder && aggregate_first(m, L, blk)))
		{
			/* read only through lin_fwd: chunk by chunk */
			L->xs = xin;
			L->x = NULL;
			goto input_done;
		}
		/* a layer that needs all of X: read it whole, once */
		TRYE(ensure(m, L, B_XS, ns * L->d_in, err));
		{
			int64_t		chunk = gnn_stream_rows;
			float	   *host = malloc(sizeof(float) * (size_t) chunk * (size_t) L->d_in);
			gnn_status	st = host ? GNN_OK : gnn_error_set(err, GNN_ERR_NOMEM, "out of memory");

			for (int64_t r0 = 0; r0 < ns && st == GNN_OK; r0 += chunk)
				st = stream_rows(m, xin, r0, ns - r0 < chunk ? ns - r0 : chunk, host,
								 lbuf(L, B_XS) + (size_t) r0 * L->d_in, err);
			free(host);
			if (st != GNN_OK)
				return st;
		}
		xs_whole = lbuf(L, B_XS);
	}

	/* input (with dropout) */
	if (L->in_sparse)
	{
		L->xsp = xin->sp.csr;
		if (p > 0.0f)
		{
			TRYE(ensure(m, L, B_XVAL, L->xsp.nnz, err));
			TRY(gnn_backend_dropout_forward(be, xin->sp.csr.values, lbuf(L, B_XVAL), L->xsp.nnz,
											p, L->seed_in));
			L->xsp.values = lbuf(L, B_XVAL);
		}
	}
	else
	{
		const float *x = xs_whole ? xs_whole : xin ? xin->dense.data : xprev;

		/*
		 * A GCN or GAT layer reads its input only through lin_fwd and
		 * lin_bwd_w: on the input features (the largest matrix of a step,
		 * which needs no gradient) those apply the dropout block by block
		 * instead of reading a dropped copy of all of it.  Same bits.
		 * (GraphSAGE reads it four times, its neighbours' and its roots'
		 * products both ways: the fused path redrew the mask each time and
		 * its step was 5% slower than with the one copy.)
		 */
		L->in_fused = p > 0.0f && xin && (cfg->kind == GNN_MODEL_GCN || cfg->kind == GNN_MODEL_GAT);
		/* a hidden input the previous layer's epilogue already dropped (bias_act) */
		L->in_by_prev = p > 0.0f && !xin && L->index > 0 && m->layers[L->index - 1].y_dropped;
		if (p > 0.0f && !L->in_fused && !L->in_by_prev)
		{
			TRYE(ensure(m, L, B_XD, ns * L->d_in, err));
			TRY(gnn_backend_dropout_forward(be, x, lbuf(L, B_XD), ns * L->d_in, p, L->seed_in));
			x = lbuf(L, B_XD);
		}
		L->x = x;
	}
input_done:

	TRYE(ensure(m, L, B_P, nd * dout, err));
	P = lbuf(L, B_P);
	/*
	 * Inference aggregates first where that is less work (reorder), and so
	 * does GraphSAGE-mean in every pass, training or evaluating: a layer
	 * that widens, or few destinations of many sources (the first layer of
	 * a sampled batch, 64 -> 128 over 4x as many sources as destinations,
	 * did 2.5x the products transforming first in training, and backward
	 * wrote an n_src-wide gradient it then reduced; a sampled evaluation's
	 * batches spent 2/3 of their time in that product: R-MAT job, perf,
	 * 2026-12-06).  Its backward reads A X from B_AX (L->agg_first).
	 */
	L->agg_first = false;
	if (!L->xs && ((reorder && !train) || sage_mean) && aggregate_first(m, L, blk))
	{
		TRYE(layer_forward_aggregate_first(m, L, blk, P, err));
		L->agg_first = sage_mean;
	}
	else
		switch (cfg->kind)
		{
			case GNN_MODEL_NODE2VEC:
				return gnn_error_set(err, GNN_ERR_UNSUPPORTED, "a node2vec model has no forward pass");
			case GNN_MODEL_RGCN:
			case GNN_MODEL_HSAGE:
				L->h = L->x;
				if (L->p_proj >= 0)
				{
					/* layer 0: H = X P, on every source row */
					TRYE(ensure(m, L, B_H, ns * L->d_h, err));
					TRYE(lin_fwd(m, L, W(m, L->p_proj), L->d_h, ns, lbuf(L, B_H), err));
					L->h = lbuf(L, B_H);
				}
				TRYE(rel_forward(m, L, blk, P, err));
				break;
			case GNN_MODEL_GCN:
				TRYE(ensure(m, L, B_Z, ns * dout, err));
				TRYE(lin_fwd(m, L, W(m, L->p_w), dout, ns, lbuf(L, B_Z), err));
				TRY(gnn_backend_spmm(be, &blk->loop.csr, GNN_AGG_SUM, NULL, NULL, lbuf(L, B_Z), dout, 0.0f, P));
				break;
			case GNN_MODEL_SAGE:
				{
					int64_t		rr = L->in_sparse ? ns : nd;

					if (cfg->aggr == GNN_AGGR_POOL)
					{
						int64_t		pw = L->pool;

						TRYE(ensure(m, L, B_Q, ns * pw, err));
						TRYE(ensure(m, L, B_QA, ns * pw, err));
						TRYE(ensure(m, L, B_M, nd * pw, err));
						TRYE(ensure(m, L, B_AM, nd * pw, err));
						TRYE(lin_fwd(m, L, W(m, L->p_pool), pw, ns, lbuf(L, B_Q), err));
						TRY(gnn_backend_add_bias(be, lbuf(L, B_Q), W(m, L->p_pool_b), ns, pw));
						TRY(gnn_backend_act_forward(be, GNN_ACT_RELU, 0.0f, lbuf(L, B_Q), lbuf(L, B_QA), ns * pw));
						TRY(gnn_backend_max_agg(be, &blk->raw.csr, lbuf(L, B_QA), pw, lbuf(L, B_M),
												(int32_t *) L->buf[B_AM].p));
						TRY(gnn_backend_gemm(be, false, false, nd, dout, pw, 1.0f, lbuf(L, B_M), pw,
											 W(m, L->p_w), dout, 0.0f, P, dout));
					}
					else
					{
						TRYE(ensure(m, L, B_Z, ns * dout, err));
						TRYE(lin_fwd(m, L, W(m, L->p_w), dout, ns, lbuf(L, B_Z), err));
						TRY(gnn_backend_spmm(be, &blk->raw.csr, GNN_AGG_MEAN, NULL, NULL, lbuf(L, B_Z),
											 dout, 0.0f, P));
					}
					TRYE(ensure(m, L, B_ZR, rr * dout, err));
					TRYE(lin_fwd(m, L, W(m, L->p_root), dout, rr, lbuf(L, B_ZR), err));
					TRY(gnn_backend_axpby(be, nd * dout, 1.0f, lbuf(L, B_ZR), 1.0f, P));
					break;
				}
			case GNN_MODEL_GAT:
				{
					int64_t		H = L->heads,
								f = L->f,
								nnz = blk->loop.csr.nnz;
					float	   *alpha;

					TRYE(ensure(m, L, B_Z, ns * H * f, err));
					TRYE(ensure(m, L, B_AS, ns * H, err));
					TRYE(ensure(m, L, B_AD, nd * H, err));
					TRYE(ensure(m, L, B_ALPHA, nnz * H, err));
					TRYE(ensure(m, L, B_O, nd * H * f, err));
					TRYE(lin_fwd(m, L, W(m, L->p_w), H * f, ns, lbuf(L, B_Z), err));
					TRY(gnn_backend_gat_node_scores(be, lbuf(L, B_Z), ns, H, f, W(m, L->p_att_src), lbuf(L, B_AS)));
					TRY(gnn_backend_gat_node_scores(be, lbuf(L, B_Z), nd, H, f, W(m, L->p_att_dst), lbuf(L, B_AD)));
					TRY(gnn_backend_gat_edge_softmax(be, &blk->loop.csr, H, lbuf(L, B_AS), lbuf(L, B_AD),
													 cfg->negative_slope, lbuf(L, B_ALPHA)));
					alpha = lbuf(L, B_ALPHA);
					if (train && cfg->attn_dropout > 0.0f)
					{
						TRYE(ensure(m, L, B_ALPHAD, nnz * H, err));
						TRY(gnn_backend_dropout_forward(be, alpha, lbuf(L, B_ALPHAD), nnz * H,
														cfg->attn_dropout, L->seed_attn));
						alpha = lbuf(L, B_ALPHAD);
					}
					L->alpha_used = alpha;
					if (L->concat)
						TRY(gnn_backend_gat_aggregate(be, &blk->loop.csr, H, f, alpha, lbuf(L, B_Z), P));
					else
					{
						TRY(gnn_backend_gat_aggregate(be, &blk->loop.csr, H, f, alpha, lbuf(L, B_Z), lbuf(L, B_O)));
						TRY(gnn_backend_head_mean(be, lbuf(L, B_O), nd, H, f, P));
					}
					break;
				}
		}
	/* feature slices: every rank's partial products of layer 0 summed, before the bias (added once) */
	if (L->index == 0 && m->reduce)
	{
		gnn_status	st;

		if ((st = hook_rows(m, P, nd * dout, dout, false, false, err)) != GNN_OK)
			return st;
	}
	L->p_out = P;
	if (!is_relational(cfg->kind) && L->act != GNN_ACT_NONE)
	{
		/*
		 * bias, activation and, in a training pass, the next layer's input
		 * dropout in one pass over P (that layer then reads y as dropped:
		 * in_by_prev); the same bits as the three ops
		 */
		TRYE(ensure(m, L, B_Y, nd * dout, err));
		TRY(gnn_backend_bias_act(be, P, W(m, L->p_b), nd, dout, L->act, cfg->act_param,
								 next_drops ? cfg->dropout : 0.0f,
								 gnn_model_dropout_seed(seed, L->index + 1, false), lbuf(L, B_Y)));
		L->y = lbuf(L, B_Y);
		L->y_dropped = next_drops;
		return GNN_OK;
	}
	if (!is_relational(cfg->kind))	/* rel_forward adds its own (per type) */
		TRY(gnn_backend_add_bias(be, P, W(m, L->p_b), nd, dout));
	if (L->act != GNN_ACT_NONE)
	{
		TRYE(ensure(m, L, B_Y, nd * dout, err));
		TRY(gnn_backend_act_forward(be, L->act, cfg->act_param, P, lbuf(L, B_Y), nd * dout));
		L->y = lbuf(L, B_Y);
	}
	else
		L->y = P;
	return GNN_OK;
}

/* layers 0..nlayers-1; the model's own checks on the block chain */
static gnn_status
forward_layers(gnn_model *m, gnn_dblock *const *blocks, int nlayers, const gnn_dfeat *x,
			   bool train, bool reorder, uint64_t seed, gnn_error *err)
{
	gnn_status	st;

	if (x->dim != m->cfg.in_dim || x->rows != blocks[0]->n_src)
		return gnn_error_set(err, GNN_ERR_DIMENSION,
							 "features are %lld x %d, the model wants %lld x %d",
							 (long long) x->rows, x->dim, (long long) blocks[0]->n_src, m->cfg.in_dim);
	for (int l = 0; l < nlayers; l++)
	{
		if (l > 0 && blocks[l]->n_src != blocks[l - 1]->n_dst)
			return gnn_error_set(err, GNN_ERR_DIMENSION,
								 "block %d has %lld sources but block %d has %lld destinations",
								 l, (long long) blocks[l]->n_src, l - 1, (long long) blocks[l - 1]->n_dst);
		/* the halo's rows of this layer's input are their owners' (the previous layer's own outputs there) */
		if (l > 0 && m->halo &&
			(st = hook_rows(m, (float *) m->layers[l - 1].y, m->layers[l - 1].n_dst * m->layers[l - 1].d_out,
							(int32_t) m->layers[l - 1].d_out, false, true, err)) != GNN_OK)
			return st;
		/*
		 * a training pass with dropout fuses the next layer's input dropout
		 * into this layer's epilogue, unless a halo exchange comes between
		 * (its rows' owners must send them undropped)
		 */
		st = layer_forward(m, &m->layers[l], blocks[l], l == 0 ? x : NULL,
						   l == 0 ? NULL : m->layers[l - 1].y, train, reorder, seed,
						   train && m->cfg.dropout > 0.0f && l + 1 < nlayers && !m->halo, err);
		if (st != GNN_OK)
			return st;
	}
	return GNN_OK;
}

gnn_status
gnn_model_forward(gnn_model *m, gnn_dblock *const *blocks, const gnn_dfeat *x, bool train,
				  uint64_t seed, const float **logits, gnn_error *err)
{
	gnn_status	st;

	m->have_train_forward = false;
	if (m->cfg.kind == GNN_MODEL_NODE2VEC)
		return gnn_error_set(err, GNN_ERR_UNSUPPORTED,
							 "a node2vec model has no forward pass: its rows are the embeddings (gnn_model_infer)");
	if ((st = forward_layers(m, blocks, m->cfg.layers, x, train, false, seed, err)) != GNN_OK)
		return st;
	*logits = m->layers[m->cfg.layers - 1].y;
	m->have_train_forward = true;	/* backward works after either kind of pass */
	return GNN_OK;
}

gnn_status
gnn_model_forward_layers(gnn_model *m, gnn_dblock *const *blocks, int nlayers, const gnn_dfeat *x,
						 const float **out, gnn_error *err)
{
	gnn_status	st;

	m->have_train_forward = false;
	if (m->cfg.kind == GNN_MODEL_NODE2VEC)
		return gnn_error_set(err, GNN_ERR_UNSUPPORTED,
							 "a node2vec model has no forward pass: its rows are the embeddings (gnn_model_infer)");
	if (nlayers < 1 || nlayers > m->cfg.layers)
		return gnn_error_set(err, GNN_ERR_INVALID, "cannot run %d layers of a model with %d",
							 nlayers, m->cfg.layers);
	if ((st = forward_layers(m, blocks, nlayers, x, false, true, 0, err)) != GNN_OK)
		return st;
	*out = m->layers[nlayers - 1].y;
	return GNN_OK;
}

gnn_status
gnn_model_forward_from(gnn_model *m, gnn_dblock *const *blocks, int first, const float *in, const float **out,
					   gnn_error *err)
{
	gnn_status	st;
	int			L = m->cfg.layers;

	m->have_train_forward = false;
	if (m->cfg.kind == GNN_MODEL_NODE2VEC)
		return gnn_error_set(err, GNN_ERR_UNSUPPORTED,
							 "a node2vec model has no forward pass: its rows are the embeddings (gnn_model_infer)");
	if (first < 1 || first >= L)
		return gnn_error_set(err, GNN_ERR_INVALID, "cannot start at layer %d of a model with %d", first, L);
	/* (feature slices reduce layer 0 only: the layers from 1 on run alike on every rank) */
	if (m->halo)
		return gnn_error_set(err, GNN_ERR_UNSUPPORTED, "a model over parts runs all its layers");
	for (int l = first; l < L; l++)
	{
		if (l > first && blocks[l]->n_src != blocks[l - 1]->n_dst)
			return gnn_error_set(err, GNN_ERR_DIMENSION,
								 "block %d has %lld sources but block %d has %lld destinations",
								 l, (long long) blocks[l]->n_src, l - 1, (long long) blocks[l - 1]->n_dst);
		if ((st = layer_forward(m, &m->layers[l], blocks[l], NULL, l == first ? in : m->layers[l - 1].y, false, true,
								0, false, err)) != GNN_OK)
			return st;
	}
	*out = m->layers[L - 1].y;
	return GNN_OK;
}

/* ------------------------------------------------------------------ backward */

/*
 * The layer below L when L's input gradient can finish that layer's epilogue
 * backward in the same pass (spmm_t_bias_act_backward): a GraphSAGE-mean
 * layer that aggregated first, whose input is the previous layer's output
 * (dropped by that layer's epilogue, or not dropped), without a halo
 * exchange between the two backward passes.  NULL otherwise.
 */
static gnn_layer *
fuse_prev_epilogue(gnn_model *m, gnn_layer *L)
{
	gnn_layer  *prev = L->index > 0 ? &m->layers[L->index - 1] : NULL;

	if (!prev || m->halo || !L->agg_first || L->in_sparse || is_relational(m->cfg.kind) ||
		prev->act == GNN_ACT_NONE || prev->p_b < 0 || prev->n_dst != L->n_src ||
		(L->in_dropped && !L->in_by_prev) || (L->in_by_prev && !prev->y_dropped))
		return NULL;
	return prev;
}

/* dY -> gradients of L's parameters and, when want_dx, dX (n_src x d_in) in buf B_DX */
static gnn_status
layer_backward(gnn_model *m, gnn_layer *L, const float *dY, bool want_dx, gnn_error *err)
{
	gnn_backend *be = m->be;
	const gnn_model_config *cfg = &m->cfg;
	gnn_dblock *blk = L->blk;
	int64_t		ns = L->n_src,
				nd = L->n_dst,
				dout = L->d_out,
				din = L->d_in;
	const float *dP = dY;
	float	   *dX = NULL;
	bool		root_dx_done = false;

	if (want_dx)
	{
		TRYE(ensure(m, L, B_DX, ns * din, err));
		dX = lbuf(L, B_DX);
	}
	if (L->dp_by_next)
		L->dp_by_next = false;	/* dY is dP already, and the bias gradient is in */
	else if (L->act != GNN_ACT_NONE && !is_relational(cfg->kind))
	{
		/*
		 * bias_act's backward: the next layer's input dropout when it was
		 * fused (y_dropped).  Over dY itself where dY is the next layer's
		 * input gradient, which nothing reads after: its lines are in
		 * cache, a separate dP's were not (a write-allocate of n_dst rows).
		 */
		float	   *out = L->index + 1 < cfg->layers && dY == lbuf(&m->layers[L->index + 1], B_DX) ?
			lbuf(&m->layers[L->index + 1], B_DX) : NULL;

		if (!out)
		{
			TRYE(ensure(m, L, B_DP, nd * dout, err));
			out = lbuf(L, B_DP);
		}
		TRY(gnn_backend_bias_act_backward(be, L->act, cfg->act_param, L->p_out, dY, nd, dout,
										  L->y_dropped ? cfg->dropout : 0.0f,
										  L->y_dropped ? m->layers[L->index + 1].seed_in : 0,
										  out, G(m, L->p_b)));
		dP = out;
	}
	else
	{
		if (L->act != GNN_ACT_NONE)
		{
			TRYE(ensure(m, L, B_DP, nd * dout, err));
			TRY(gnn_backend_act_backward(be, L->act, cfg->act_param, L->p_out, L->y, dY, lbuf(L, B_DP), nd * dout));
			dP = lbuf(L, B_DP);
		}
		if (!is_relational(cfg->kind))
			TRY(gnn_backend_bias_grad(be, dP, nd, dout, 0.0f, G(m, L->p_b)));
	}

	switch (cfg->kind)
	{
		case GNN_MODEL_NODE2VEC:
			return gnn_error_set(err, GNN_ERR_UNSUPPORTED, "a node2vec model has no backward pass");
		case GNN_MODEL_RGCN:
		case GNN_MODEL_HSAGE:
			if (L->p_proj >= 0)
			{
				/* layer 0: dH, then dP = X^T dH; the input needs no gradient */
				TRYE(ensure(m, L, B_DH, ns * L->d_h, err));
				TRYE(rel_backward(m, L, dP, lbuf(L, B_DH), err));
				TRYE(lin_bwd_w(m, L, lbuf(L, B_DH), L->d_h, ns, G(m, L->p_proj), err));
				if (dX)
					TRYE(lin_bwd_x(m, L, lbuf(L, B_DH), L->d_h, ns, W(m, L->p_proj), 0.0f, dX, err));
			}
			else
			{
				TRYE(ensure(m, L, B_DH, ns * L->d_h, err));
				TRYE(rel_backward(m, L, dP, dX ? dX : lbuf(L, B_DH), err));
			}
			break;
		case GNN_MODEL_GCN:
			TRYE(ensure(m, L, B_DZ, ns * dout, err));
			TRY(gnn_backend_spmm_t(be, &blk->loop.csr, GNN_AGG_SUM, NULL, NULL, dP, dout, 0.0f, lbuf(L, B_DZ)));
			TRYE(lin_bwd_w(m, L, lbuf(L, B_DZ), dout, ns, G(m, L->p_w), err));
			if (dX)
				TRYE(lin_bwd_x(m, L, lbuf(L, B_DZ), dout, ns, W(m, L->p_w), 0.0f, dX, err));
			break;
		case GNN_MODEL_SAGE:
			if (cfg->aggr == GNN_AGGR_POOL)
			{
				int64_t		pw = L->pool;

				TRYE(ensure(m, L, B_DM, nd * pw, err));
				TRYE(ensure(m, L, B_DQ, ns * pw, err));
				TRY(gnn_backend_gemm(be, false, true, nd, pw, dout, 1.0f, dP, dout, W(m, L->p_w), dout,
									 0.0f, lbuf(L, B_DM), pw));
				TRY(gnn_backend_gemm(be, true, false, pw, dout, nd, 1.0f, lbuf(L, B_M), pw, dP, dout,
									 0.0f, G(m, L->p_w), dout));
				TRY(gnn_backend_max_agg_backward(be, &blk->raw.csr, lbuf(L, B_DM),
												 (const int32_t *) L->buf[B_AM].p, pw, 0.0f, lbuf(L, B_DQ)));
				TRY(gnn_backend_act_backward(be, GNN_ACT_RELU, 0.0f, lbuf(L, B_Q), lbuf(L, B_QA),
											 lbuf(L, B_DQ), lbuf(L, B_DQ), ns * pw));
				TRY(gnn_backend_bias_grad(be, lbuf(L, B_DQ), ns, pw, 0.0f, G(m, L->p_pool_b)));
				TRYE(lin_bwd_w(m, L, lbuf(L, B_DQ), pw, ns, G(m, L->p_pool), err));
				if (dX)
					TRYE(lin_bwd_x(m, L, lbuf(L, B_DQ), pw, ns, W(m, L->p_pool), 0.0f, dX, err));
			}
			else if (L->agg_first)
			{
				/* P = (A X) W + X[:n_dst] W_root: dW = (A X)^T dP; dX = A^T (dP W^T), the root's added below */
				TRY(gnn_backend_gemm(be, true, false, din, dout, nd, 1.0f, lbuf(L, B_AX), din, dP, dout,
									 0.0f, G(m, L->p_w), dout));
				if (dX)
				{
					gnn_layer  *prev = fuse_prev_epilogue(m, L);

					TRYE(ensure(m, L, B_DZ, nd * din, err));
					TRY(gnn_backend_gemm(be, false, true, nd, din, dout, 1.0f, dP, dout, W(m, L->p_w), dout,
										 0.0f, lbuf(L, B_DZ), din));
					if (prev)
					{
						/*
						 * the root's rows first, then A^T dZ added to them and
						 * the previous layer's epilogue backward, row by row
						 */
						TRYE(lin_bwd_x(m, L, dP, dout, nd, W(m, L->p_root), 0.0f, dX, err));
						TRY(gnn_backend_spmm_t_bias_act_backward(be, &blk->raw.csr, GNN_AGG_MEAN, lbuf(L, B_DZ),
																 din, nd, prev->act, cfg->act_param, prev->p_out,
																 prev->y_dropped ? cfg->dropout : 0.0f,
																 prev->y_dropped ? L->seed_in : 0, dX,
																 G(m, prev->p_b)));
						prev->dp_by_next = true;
						root_dx_done = true;
					}
					else
						TRY(gnn_backend_spmm_t(be, &blk->raw.csr, GNN_AGG_MEAN, NULL, NULL, lbuf(L, B_DZ), din,
											   0.0f, dX));
				}
			}
			else
			{
				TRYE(ensure(m, L, B_DZ, ns * dout, err));
				TRY(gnn_backend_spmm_t(be, &blk->raw.csr, GNN_AGG_MEAN, NULL, NULL, dP, dout, 0.0f,
									   lbuf(L, B_DZ)));
				TRYE(lin_bwd_w(m, L, lbuf(L, B_DZ), dout, ns, G(m, L->p_w), err));
				if (dX)
					TRYE(lin_bwd_x(m, L, lbuf(L, B_DZ), dout, ns, W(m, L->p_w), 0.0f, dX, err));
			}
			/* root term: only the first n_dst rows of X contribute */
			if (L->in_sparse && nd < ns)
			{
				TRYE(ensure(m, L, B_DZR, ns * dout, err));
				TRY(gnn_backend_memset(be, lbuf(L, B_DZR), 0, sizeof(float) * ns * dout));
				TRY(gnn_backend_copy_d2d(be, lbuf(L, B_DZR), dP, sizeof(float) * nd * dout));
				TRYE(lin_bwd_w(m, L, lbuf(L, B_DZR), dout, ns, G(m, L->p_root), err));
			}
			else
				TRYE(lin_bwd_w(m, L, dP, dout, nd, G(m, L->p_root), err));
			if (dX && !root_dx_done)
				TRYE(lin_bwd_x(m, L, dP, dout, nd, W(m, L->p_root), 1.0f, dX, err));
			break;
		case GNN_MODEL_GAT:
			{
				int64_t		H = L->heads,
							f = L->f,
							nnz = blk->loop.csr.nnz;
				const float *dO = dP;
				float	   *dalpha;

				if (!L->concat)
				{
					TRYE(ensure(m, L, B_DO, nd * H * f, err));
					TRY(gnn_backend_head_mean_backward(be, dP, nd, H, f, lbuf(L, B_DO)));
					dO = lbuf(L, B_DO);
				}
				TRYE(ensure(m, L, B_DZ, ns * H * f, err));
				TRYE(ensure(m, L, B_DALPHA, nnz * H, err));
				TRYE(ensure(m, L, B_DAS, ns * H, err));
				TRYE(ensure(m, L, B_DAD, nd * H, err));
				dalpha = lbuf(L, B_DALPHA);
				TRY(gnn_backend_gat_aggregate_backward(be, &blk->loop.csr, H, f, L->alpha_used, lbuf(L, B_Z),
													   dO, 0.0f, lbuf(L, B_DZ), dalpha));
				if (L->train && cfg->attn_dropout > 0.0f)
					TRY(gnn_backend_dropout_backward(be, dalpha, dalpha, nnz * H, cfg->attn_dropout,
													 L->seed_attn));
				TRY(gnn_backend_gat_edge_softmax_backward(be, &blk->loop.csr, H, lbuf(L, B_AS), lbuf(L, B_AD),
														  cfg->negative_slope, lbuf(L, B_ALPHA), dalpha,
														  lbuf(L, B_DAS), lbuf(L, B_DAD)));
				TRY(gnn_backend_gat_node_scores_backward(be, lbuf(L, B_Z), ns, H, f, W(m, L->p_att_src),
														 lbuf(L, B_DAS), lbuf(L, B_DZ), 0.0f,
														 G(m, L->p_att_src)));
				TRY(gnn_backend_gat_node_scores_backward(be, lbuf(L, B_Z), nd, H, f, W(m, L->p_att_dst),
														 lbuf(L, B_DAD), lbuf(L, B_DZ), 0.0f,
														 G(m, L->p_att_dst)));
				TRYE(lin_bwd_w(m, L, lbuf(L, B_DZ), H * f, ns, G(m, L->p_w), err));
				if (dX)
					TRYE(lin_bwd_x(m, L, lbuf(L, B_DZ), H * f, ns, W(m, L->p_w), 0.0f, dX, err));
				break;
			}
	}
	if (dX && L->in_dropped && !L->in_by_prev)	/* else the previous layer's bias_act backward */
		TRY(gnn_backend_dropout_backward(be, dX, dX, ns * din, cfg->dropout, L->seed_in));
	return GNN_OK;
}

gnn_status
gnn_model_backward(gnn_model *m, const float *dlogits, gnn_error *err)
{
	const float *dY = dlogits;

	if (!m->have_train_forward)
		return gnn_error_set(err, GNN_ERR_INVALID, "backward needs a preceding forward pass");
	for (int l = 0; l < m->cfg.layers; l++)
		m->layers[l].dp_by_next = false;
	for (int l = m->cfg.layers - 1; l >= 0; l--)
	{
		gnn_layer  *L = &m->layers[l];
		gnn_status	st = layer_backward(m, L, dY, l > 0, err);

		if (st != GNN_OK)
			return st;
		/* the halo's input gradients belong to their owners' outputs */
		if (l > 0 && m->halo &&
			(st = hook_rows(m, lbuf(L, B_DX), L->n_src * L->d_in, (int32_t) L->d_in, true, true, err)) != GNN_OK)
			return st;
		dY = lbuf(L, B_DX);
	}
	return GNN_OK;
}
