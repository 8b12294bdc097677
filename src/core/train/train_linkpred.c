/*
 * train_linkpred.c: unsupervised link prediction (full batch).
 */
#include "train/train_linkpred.h"
#include "train/train_mb.h"
#include "train/sample_dist.h"
#include "train/train_dist.h"
#include "infer/infer.h"
#include "train/eval.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void
gnn_linkpred_config_default(gnn_linkpred_config *lc)
{
	lc->holdout = 0.1;
	lc->val_fraction = 0.5;
	lc->negatives = 1;
	lc->hits_k = 50;
	lc->edge_type = -1;
	lc->reverse_edge_type = -1;
}

void
gnn_linkpred_train_defaults(gnn_train_config *cfg)
{
	cfg->hidden = 64;
	cfg->lr = 0.01f;
	cfg->weight_decay = 0.0f;
	cfg->dropout = 0.0f;
	cfg->attn_dropout = 0.0f;
	cfg->epochs = 300;
	cfg->patience = 50;
	cfg->row_normalise = true;
}

typedef gnn_linkpred_pair pair;

/* an arc to take out of the training graph: relation (-1: any), source, destination */
typedef struct arc_key
{
	int32_t		rel;
	int32_t		u;
	int32_t		v;
} arc_key;

static int
cmp_arc_key(const void *a, const void *b)
{
	const arc_key *x = a,
			   *y = b;

	if (x->rel != y->rel)
		return x->rel < y->rel ? -1 : 1;
	if (x->u != y->u)
		return x->u < y->u ? -1 : 1;
	return (x->v > y->v) - (x->v < y->v);
}

/*
 * Adjacency that arcs are looked up in: the graph's out-CSR (row = source)
 * or the training block's in-CSR (row = destination), columns sorted within
 * a row, the relation of each entry or NULL (all relation 0).
 */
typedef struct adjacency
{
	const int64_t *ptr;
	const int32_t *idx;
	const int16_t *rel;
	bool		by_dst;
} adjacency;

/* arc u -> v of relation rel (-1: of any relation) */
static bool
has_arc(const adjacency *a, int32_t u, int32_t v, int32_t rel)
{
	int32_t		row = a->by_dst ? v : u,
				col = a->by_dst ? u : v;
	int64_t		lo = a->ptr[row],
				hi = a->ptr[row + 1];

	while (lo < hi)
	{
		int64_t		mid = (lo + hi) / 2;

		if (a->idx[mid] < col)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* rows are sorted by column, then relation: the arcs to col are adjacent */
	for (; lo < a->ptr[row + 1] && a->idx[lo] == col; lo++)
		if (rel < 0 || (a->rel ? a->rel[lo] : 0) == rel)
			return true;
	return false;
}

/* whether the pair (u, v) is linked in a: an arc of the relation, or a reverse arc of its reverse */
static bool
linked(const adjacency *a, const gnn_linkpred_split *s, int32_t u, int32_t v)
{
	if (s->edge_type < 0)
		return has_arc(a, u, v, -1) || has_arc(a, v, u, -1);
	return has_arc(a, u, v, s->edge_type) ||
		(s->reverse_edge_type >= 0 && has_arc(a, v, u, s->reverse_edge_type));
}

/* uniformly drawn pairs of the relation's endpoint types not linked in a, no self pairs */
static void
draw_negatives(const adjacency *a, const gnn_linkpred_split *s, gnn_rng *r, pair *out, int64_t n)
{
	uint64_t	ns = (uint64_t) (s->src_hi - s->src_lo),
				nd = (uint64_t) (s->dst_hi - s->dst_lo);

	for (int64_t i = 0; i < n; i++)
	{
		for (int tries = 0;; tries++)
		{
			int32_t		u = (int32_t) (s->src_lo + (int64_t) gnn_rng_below(r, ns)),
						v = (int32_t) (s->dst_lo + (int64_t) gnn_rng_below(r, nd));

			/* a dense graph may have no unlinked pair to find: give up after a while */
			if (tries < 100 && (u == v || linked(a, s, u, v)))
				continue;
			out[i].u = u;
			out[i].v = v;
			break;
		}
	}
}

void
gnn_linkpred_negatives(const gnn_linkpred_split *s, gnn_rng *rng, gnn_linkpred_pair *out, int64_t n)
{
	adjacency	a = {s->graph.indptr, s->graph.indices, s->graph.etypes, true};

	draw_negatives(&a, s, rng, out, n);
}

/* The relation lc asks for on g (and its reverse), checked against g's edge types. */
static gnn_status
check_relation(const gnn_graph *g, const gnn_linkpred_config *lc, gnn_error *err)
{
	int32_t		R = g->etypes && g->num_edge_types > 0 ? g->num_edge_types : 1;
	int32_t		rel = lc->edge_type,
				rev = lc->reverse_edge_type;

	if (rel < -1 || rel >= R)
		return gnn_error_set(err, GNN_ERR_INVALID, "edge type %d does not exist: the graph has %d (give 0 to %d, or -1 for every edge)",
							 rel, R, R - 1);
	if (rel < 0)
		return rev != -1 ? gnn_error_set(err, GNN_ERR_INVALID, "a reverse edge type needs an edge type") : GNN_OK;
	if (rev < -1 || rev >= R)
		return gnn_error_set(err, GNN_ERR_INVALID, "reverse edge type %d does not exist: the graph has %d (give 0 to %d, or -1 for none)",
							 rev, R, R - 1);
	if (g->etypes && rev >= 0 &&
		(g->etypes[rev].src_type != g->etypes[rel].dst_type || g->etypes[rev].dst_type != g->etypes[rel].src_type))
		return gnn_error_set(err, GNN_ERR_INVALID, "edge type %d cannot be the reverse of edge type %d: its endpoint types are not swapped",
							 rev, rel);
	return GNN_OK;
}

/* The relation lc asks for on g, checked, and where its endpoints lie. */
static gnn_status
split_task(const gnn_graph *g, const gnn_linkpred_config *lc, gnn_linkpred_split *s, gnn_error *err)
{
	int32_t		rel = lc->edge_type;
	gnn_status	st;

	s->edge_type = rel;
	s->reverse_edge_type = lc->reverse_edge_type;
	s->src_lo = s->dst_lo = 0;
	s->src_hi = s->dst_hi = g->num_nodes;
	if ((st = check_relation(g, lc, err)) != GNN_OK || rel < 0)
		return st;
	if (g->etypes && g->type_ptr)
	{
		const gnn_edge_type *e = &g->etypes[rel];

		s->src_lo = g->type_ptr[e->src_type];
		s->src_hi = g->type_ptr[e->src_type + 1];
		s->dst_lo = g->type_ptr[e->dst_type];
		s->dst_hi = g->type_ptr[e->dst_type + 1];
		if (s->src_hi <= s->src_lo || s->dst_hi <= s->dst_lo)
			return gnn_error_set(err, GNN_ERR_EMPTY, "edge type %d joins a node type without nodes", rel);
	}
	return GNN_OK;
}

/*
 * The positives: arcs of the relation between distinct nodes, each
 * unordered pair once where the relation is its own reverse (or the graph
 * is taken as undirected).
 */
static int64_t
collect_pairs(const gnn_graph *g, const gnn_linkpred_split *s, pair *out)
{
	adjacency	a = {g->indptr, g->indices, g->arc_type, false};
	int32_t		rel = s->edge_type;
	bool		symmetric = rel < 0 || s->reverse_edge_type == rel;
	int64_t		np = 0;

	for (int64_t u = s->src_lo; u < s->src_hi; u++)
		for (int64_t e = g->indptr[u]; e < g->indptr[u + 1]; e++)
		{
			int32_t		v = g->indices[e];

			if (rel >= 0 && (g->arc_type ? g->arc_type[e] : 0) != rel)
				continue;
			/* arcs of other relations between the same nodes: one pair */
			if (rel < 0 && e > g->indptr[u] && g->indices[e - 1] == v)
				continue;
			if (u == v || (symmetric && u > v && has_arc(&a, v, (int32_t) u, rel)))
				continue;
			out[np++] = (pair) {(int32_t) u, v};
		}
	return np;
}

void
gnn_linkpred_split_free(gnn_linkpred_split *s)
{
	free(s->pos);
	free(s->neg);
	free((void *) s->graph.indptr);
	free((void *) s->graph.indices);
	free((void *) s->graph.weights);
	free((void *) s->graph.etypes);
	memset(s, 0, sizeof(*s));
}

/* The training graph: g's in-edges less the held-out pairs' arcs, typed as g is. */
static gnn_status
split_graph(const gnn_graph *g, gnn_linkpred_split *s, gnn_error *err)
{
	int64_t		n = g->num_nodes,
				nheld = s->n_val + s->n_test,
				nrem = 0;
	const pair *held = s->pos + s->n_train;
	arc_key    *removed = malloc(sizeof(arc_key) * (2 * nheld + 1));
	int64_t    *ptr = malloc(sizeof(int64_t) * (n + 1));
	int32_t    *idx = malloc(sizeof(int32_t) * (g->num_edges + 1));
	float	   *w = g->rweights ? malloc(sizeof(float) * (g->num_edges + 1)) : NULL;
	int16_t    *rel = g->rarc_type ? malloc(sizeof(int16_t) * (g->num_edges + 1)) : NULL;

	/* the split owns them from here, also on failure */
	s->graph.indptr = ptr;
	s->graph.indices = idx;
	s->graph.weights = w;
	s->graph.etypes = rel;
	if (!removed || !ptr || !idx || (g->rweights && !w) || (g->rarc_type && !rel))
	{
		free(removed);
		return gnn_error_set(err, GNN_ERR_NOMEM, "out of memory");
	}
	/* a held-out pair loses both its arcs: messages along either would show it */
	for (int64_t i = 0; i < nheld; i++)
	{
		if (s->edge_type < 0)
		{
			removed[nrem++] = (arc_key) {-1, held[i].u, held[i].v};
			removed[nrem++] = (arc_key) {-1, held[i].v, held[i].u};
			continue;
		}
		removed[nrem++] = (arc_key) {s->edge_type, held[i].u, held[i].v};
		if (s->reverse_edge_type >= 0)
			removed[nrem++] = (arc_key) {s->reverse_edge_type, held[i].v, held[i].u};
	}
	qsort(removed, nrem, sizeof(arc_key), cmp_arc_key);
	ptr[0] = 0;
	for (int64_t v = 0; v < n; v++)
	{
		int64_t		k = ptr[v];

		for (int64_t e = g->rindptr[v]; e < g->rindptr[v + 1]; e++)
		{
			int16_t		r = g->rarc_type ? g->rarc_type[e] : 0;
			arc_key		key = {s->edge_type < 0 ? -1 : r, g->rindices[e], (int32_t) v};

			if (bsearch(&key, removed, nrem, sizeof(arc_key), cmp_arc_key))
				continue;
			if (w)
				w[k] = g->rweights[e];
			if (rel)
				rel[k] = r;
			idx[k++] = g->rindices[e];
		}
		ptr[v + 1] = k;
	}
	free(removed);
	s->graph.n_dst = s->graph.n_src = n;
	s->graph.nnz = ptr[n];
	/* relational layers read the types; the others ignore them */
	s->graph.dst_ntype = g->node_type;
	return GNN_OK;
}

gnn_status
gnn_linkpred_split_create(const gnn_graph *g, const gnn_linkpred_config *lc, gnn_rng *rng,
						  gnn_linkpred_split *s, gnn_error *err)
{
	adjacency	full = {g->indptr, g->indices, g->arc_type, false};
	int64_t		np;
	gnn_status	st;

	memset(s, 0, sizeof(*s));
	if (!(lc->holdout > 0 && lc->holdout < 1) || !(lc->val_fraction > 0 && lc->val_fraction < 1) ||
		lc->negatives < 1 || lc->negatives > 100 || lc->hits_k < 1)
		return gnn_error_set(err, GNN_ERR_INVALID, "link prediction needs holdout and val_fraction in (0, 1), negatives in [1, 100], hits_k >= 1");
	if ((st = split_task(g, lc, s, err)) != GNN_OK)
		return st;
	s->pos = malloc(sizeof(pair) * (g->num_edges + 1));
	if (!s->pos)
		return gnn_error_set(err, GNN_ERR_NOMEM, "out of memory");
	np = collect_pairs(g, s, s->pos);
	for (int64_t i = np - 1; i > 0; i--)
	{
		int64_t		j = (int64_t) gnn_rng_below(rng, (uint64_t) i + 1);
		pair		t = s->pos[i];

		s->pos[i] = s->pos[j];
		s->pos[j] = t;
	}
	s->n_val = (int64_t) (np * lc->holdout * lc->val_fraction);
	s->n_test = (int64_t) (np * lc->holdout) - s->n_val;
	s->n_train = np - s->n_val - s->n_test;
	if (s->n_val < 1 || s->n_test < 1 || s->n_train < 1)
	{
		gnn_linkpred_split_free(s);
		return gnn_error_set(err, GNN_ERR_EMPTY, "too few edges (%lld) to hold some out for link prediction", (long long) np);
	}
	s->neg = malloc(sizeof(pair) * (s->n_val + s->n_test));
	if (!s->neg)
		st = gnn_error_set(err, GNN_ERR_NOMEM, "out of memory");
	else
		st = split_graph(g, s, err);
	if (st != GNN_OK)
	{
		gnn_linkpred_split_free(s);
		return st;
	}
	draw_negatives(&full, s, rng, s->neg, s->n_val + s->n_test);
	return GNN_OK;
}

static double
dot(const float *z, int32_t d, int32_t u, int32_t v)
{
	double		s = 0;

	for (int32_t k = 0; k < d; k++)
		s += (double) z[(int64_t) u * d + k] * z[(int64_t) v * d + k];
	return s;
}

static int
cmp_desc(const void *a, const void *b)
{
	double		x = *(const double *) a,
				y = *(const double *) b;

	return (x < y) - (x > y);
}

/*
 * AUC by rank sums, ties averaged (gnn_auroc, as node classification
 * scores it); Hits@K as OGB: positives above the K-th best negative.
 */
static void
auc_hits_scores(double *score, int64_t np, int64_t nn, int k, double *auc, double *hits);

static void
auc_hits(const float *z, int32_t d, const gnn_linkpred_pair *pos, int64_t np, const gnn_linkpred_pair *neg, int64_t nn, int k,
		 double *auc, double *hits)
{
	double	   *score = malloc(sizeof(double) * (np + nn + 1));

	*auc = 0;
	*hits = 0;
	if (!score)
		return;
	for (int64_t i = 0; i < np; i++)
		score[i] = dot(z, d, pos[i].u, pos[i].v);
	for (int64_t i = 0; i < nn; i++)
		score[np + i] = dot(z, d, neg[i].u, neg[i].v);
	auc_hits_scores(score, np, nn, k, auc, hits);
	free(score);
}

/* the same of scores: np positives' then nn negatives' (reordered) */
static void
auc_hits_scores(double *score, int64_t np, int64_t nn, int k, double *auc, double *hits)
{
	int32_t    *label = malloc(sizeof(int32_t) * (np + nn + 1));
	int64_t		above = 0;

	*auc = 0;
	*hits = 0;
	if (!label || np == 0 || nn == 0)
	{
		free(label);
		return;
	}
	for (int64_t i = 0; i < np + nn; i++)
		label[i] = i < np;
	*auc = gnn_auroc(score, label, np + nn);
	if (nn < k)
		*hits = 1.0;
	else
	{
		/* the negatives' scores, best first: the K-th is the bar */
		qsort(score + np, nn, sizeof(double), cmp_desc);
		for (int64_t i = 0; i < np; i++)
			above += score[i] > score[np + k - 1];
		*hits = (double) above / np;
	}
	free(label);
}

/*
 * Binary cross-entropy on inner products: the mean of the positives' mean
 * and the negatives' mean (GAE's reconstruction loss, halved), so that more
 * negatives per positive sharpen the estimate of the negative term rather
 * than outweigh the positives.  Adds its gradient with respect to the
 * embeddings z to dz.
 */
static double
bce_step(const float *z, int32_t d, const gnn_linkpred_pair *pos, int64_t np, const gnn_linkpred_pair *neg, int64_t nn, float *dz)
{
	double		loss = 0;

	for (int64_t i = 0; i < np + nn; i++)
	{
		bool		positive = i < np;
		double		scale = 0.5 / (double) (positive ? np : nn);
		gnn_linkpred_pair p = positive ? pos[i] : neg[i - np];
		double		s = dot(z, d, p.u, p.v);
		double		sig = 1.0 / (1.0 + exp(-s));
		double		gs = (positive ? sig - 1.0 : sig) * scale;

		/* softplus(-s) for positives, softplus(s) for negatives, stably */
		loss += scale * (positive ? (s > 0 ? log1p(exp(-s)) : -s + log1p(exp(s)))
						 : (s > 0 ? s + log1p(exp(-s)) : log1p(exp(s))));
		for (int32_t k = 0; k < d; k++)
		{
			dz[(int64_t) p.u * d + k] += (float) (gs * z[(int64_t) p.v * d + k]);
			dz[(int64_t) p.v * d + k] += (float) (gs * z[(int64_t) p.u * d + k]);
		}
	}
	return loss;
}

/* The model configuration: the embedding is the output; relational kinds get the graph's types. */
gnn_status
gnn_linkpred_model_config(const gnn_graph *g, const gnn_train_config *cfg, gnn_model_config *mc, gnn_error *err)
{
	gnn_status	st;

	if ((st = gnn_train_model_config(cfg, g->feat_dim, cfg->hidden, mc, err)) != GNN_OK)
		return st;
	mc->num_relations = g->etypes && g->num_edge_types > 1 ? g->num_edge_types : 1;
	mc->num_node_types = g->type_ptr && g->num_node_types > 1 ? g->num_node_types : 1;
	mc->num_bases = cfg->num_bases;
	return gnn_model_config_check(mc, err);
}

/*
 * One epoch's training on sampled minibatches: the training positives in a
 * shuffled order, a batch of them with fresh negatives, the distinct
 * endpoints as the seeds of blocks sampled from the training graph (tg),
 * their embeddings from one forward pass, the loss of the batch's pairs
 * on them, backward, a step.  *loss gets the epoch's mean batch loss.
 */
typedef struct mb_state
{
	gnn_sampler *sampler;
	gnn_graph	tg;				/* the training graph, as the sampler reads it */
	int64_t    *order;			/* [ntrain] */
	int32_t    *mark;			/* [n]: a node's seed position in the batch, -1 */
	int32_t    *seeds;
	pair	   *lpos;			/* the batch's pairs in seed positions */
	pair	   *lneg;
	pair	   *bneg;			/* the batch's negatives, graph indices */
	float	   *z;
	float	   *dz;
	gnn_buf		ddz;
	/* time-aware sampling: each seed's bound, and evaluation on sampled neighbourhoods */
	bool		temporal;
	int64_t    *stimes;
	gnn_sampler *esampler;		/* per-node streams: a node's neighbourhood whatever its batch */
	int32_t    *eval_nodes;		/* the endpoints of the validation and test pairs */
	int64_t		n_eval;
} mb_state;

/*
 * The forward pass of a sampled batch whose features are in xb: its blocks
 * made into db (*made of them, kept for a backward pass), the first count
 * floats of the output copied to host_out.
 */
static gnn_status
blocks_forward(gnn_backend *be, gnn_model *model, const gnn_minibatch *mb, const gnn_dfeat *xb, bool train,
			   uint64_t dropout_seed, int64_t count, float *host_out, gnn_dblock *db, int *made, gnn_error *err)
{
	int32_t		L = gnn_model_config_of(model)->layers;
	gnn_dblock *blocks[GNN_MAX_LAYERS];
	const float *out;
	gnn_status	st = GNN_OK;

	for (int l = 0; st == GNN_OK && l < L; l++)
		if ((st = gnn_dblock_create(be, &mb->blocks[l], &db[l], err)) == GNN_OK)
			blocks[(*made)++] = &db[l];
	if (st == GNN_OK)
		st = gnn_model_forward(model, blocks, xb, train, dropout_seed, &out, err);
	if (st == GNN_OK)
		st = gnn_backend_error(be, gnn_backend_copy_d2h(be, host_out, out, sizeof(float) * count), err);
	return st;
}

/*
 * Embeddings of n distinct seeds from blocks sampled around them (bounds:
 * each seed's time bound, or NULL), copied to host_out (n x d); the blocks
 * and features stay in db / xb (made of them) for a backward pass, until
 * sampled_free.
 */
static gnn_status
sampled_forward(const gnn_graph *g, const gnn_train_config *cfg, gnn_backend *be, gnn_model *model,
				gnn_sampler *sampler, const int32_t *seeds, const int64_t *bounds, int64_t n, uint64_t seed,
				bool train, uint64_t dropout_seed, float *host_out, gnn_dblock *db, int *made, gnn_dfeat *xb,
				gnn_error *err)
{
	gnn_minibatch mb;
	gnn_status	st;

	*made = 0;
	memset(xb, 0, sizeof(*xb));
	st = gnn_sampler_sample_at(sampler, seeds, bounds, n, seed, &mb, err);
	if (st == GNN_OK)
		st = gnn_dfeat_gather(be, g, mb.input_nodes, mb.n_input, cfg->row_normalise, cfg->threads, xb, err);
	if (st == GNN_OK)
		st = blocks_forward(be, model, &mb, xb, train, dropout_seed, n * cfg->hidden, host_out, db, made, err);
	return st;
}

static void
sampled_free(gnn_dblock *db, int made, gnn_dfeat *xb)
{
	for (int l = 0; l < made; l++)
		gnn_dblock_free(&db[l]);
	gnn_dfeat_free(xb);
}

static gnn_status
mb_epoch(const gnn_graph *g, const gnn_train_config *cfg, const gnn_linkpred_config *lc,
		 const gnn_minibatch_config *mbc, const gnn_linkpred_split *sp, gnn_backend *be, gnn_model *model,
		 gnn_optim *opt, gnn_rng *rng, mb_state *M, gnn_should_stop_fn should_stop, void *stop_arg,
		 double *loss, gnn_error *err)
{
	int64_t		ntrain = sp->n_train,
				B = mbc->batch_size,
				batches = 0;
	int32_t		d = cfg->hidden;
	double		total = 0;
	gnn_status	st = GNN_OK;

	for (int64_t i = 0; i < ntrain; i++)
		M->order[i] = i;
	for (int64_t i = ntrain - 1; i > 0; i--)
	{
		int64_t		j = (int64_t) gnn_rng_below(rng, (uint64_t) i + 1),
					t = M->order[i];

		M->order[i] = M->order[j];
		M->order[j] = t;
	}
	for (int64_t b0 = 0; b0 < ntrain && st == GNN_OK; b0 += B)
	{
		int64_t		nb = ntrain - b0 < B ? ntrain - b0 : B,
					nneg = nb * lc->negatives,
					ns = 0;
		gnn_dfeat	xb;
		gnn_dblock	db[GNN_MAX_LAYERS];
		int			made = 0;

		if (mbc->max_batches > 0 && batches >= mbc->max_batches)
			break;
		if (should_stop && should_stop(stop_arg))
			return gnn_error_set(err, GNN_ERR_CANCELLED, "training cancelled");
		gnn_linkpred_negatives(sp, rng, M->bneg, nneg);
		for (int64_t i = 0; i < nb + nneg; i++)
		{
			pair		p = i < nb ? sp->pos[M->order[b0 + i]] : M->bneg[i - nb];
			int32_t		e[2] = {p.u, p.v};

			for (int k = 0; k < 2; k++)
				if (M->mark[e[k]] < 0)
				{
					M->mark[e[k]] = (int32_t) ns;
					M->seeds[ns++] = e[k];
				}
			if (i < nb)
				M->lpos[i] = (pair) {M->mark[p.u], M->mark[p.v]};
			else
				M->lneg[i - nb] = (pair) {M->mark[p.u], M->mark[p.v]};
		}
		/* time-aware: each endpoint sees nothing later than its own time (or the job's as_of) */
		for (int64_t i = 0; M->temporal && i < ns; i++)
			M->stimes[i] = gnn_temporal_bound(g, M->seeds[i], mbc->has_as_of, mbc->as_of);
		{
			uint64_t	sseed = gnn_rng_next(rng),
						dseed = gnn_rng_next(rng);

			st = sampled_forward(g, cfg, be, model, M->sampler, M->seeds, M->temporal ? M->stimes : NULL, ns, sseed,
								 true, dseed, M->z, db, &made, &xb, err);
		}
		if (st == GNN_OK)
		{
			memset(M->dz, 0, sizeof(float) * ns * d);
			total += bce_step(M->z, d, M->lpos, nb, M->lneg, nneg, M->dz);
			batches++;
			if ((st = gnn_buf_ensure(be, &M->ddz, sizeof(float) * ns * d, err)) == GNN_OK &&
				(st = gnn_backend_error(be, gnn_backend_copy_h2d(be, M->ddz.p, M->dz, sizeof(float) * ns * d), err)) == GNN_OK &&
				(st = gnn_model_backward(model, M->ddz.p, err)) == GNN_OK)
				st = gnn_optim_step(opt, model, err);
		}
		sampled_free(db, made, &xb);
		for (int64_t i = 0; i < ns; i++)
			M->mark[M->seeds[i]] = -1;
	}
	*loss = batches > 0 ? total / batches : NAN;
	return st;
}

/*
 * Time-aware evaluation: the embedding of every endpoint of a validation or
 * test pair from a neighbourhood sampled under its own time bound, with the
 * training fan-outs and per-node streams under gnn_infer_temporal_seed (as
 * time-aware inference samples it, so what serving computes is what was
 * measured), into z (rows of the other nodes are left as they are).  The
 * full-graph pass would show every node its future.
 */
static gnn_status
mb_eval_temporal(const gnn_graph *g, const gnn_train_config *cfg, const gnn_minibatch_config *mbc,
				 gnn_backend *be, gnn_model *model, mb_state *M, float *z, gnn_error *err)
{
	int32_t		d = cfg->hidden;
	int64_t		chunk = 1024;
	gnn_status	st = GNN_OK;

	for (int64_t c0 = 0; c0 < M->n_eval && st == GNN_OK; c0 += chunk)
	{
		int64_t		nc = M->n_eval - c0 < chunk ? M->n_eval - c0 : chunk;
		gnn_dfeat	xb;
		gnn_dblock	db[GNN_MAX_LAYERS];
		int			made = 0;

		for (int64_t i = 0; i < nc; i++)
			M->stimes[i] = gnn_temporal_bound(g, M->eval_nodes[c0 + i], mbc->has_as_of, mbc->as_of);
		st = sampled_forward(g, cfg, be, model, M->esampler, M->eval_nodes + c0, M->stimes, nc,
							 gnn_infer_temporal_seed(cfg->seed), false, 0, M->z, db, &made, &xb, err);
		for (int64_t i = 0; st == GNN_OK && i < nc; i++)
			memcpy(z + (int64_t) M->eval_nodes[c0 + i] * d, M->z + i * d, sizeof(float) * d);
		sampled_free(db, made, &xb);
	}
	return st;
}

/*
 * An epoch's end, over servers or not: the AUCs into em (also as the
 * accuracies, which logs of any task read), the weights kept when the
 * validation AUC improved, progress; *stop when patience ran out.
 */
static gnn_status
epoch_end(gnn_model *model, const gnn_train_config *cfg, int32_t epoch, double t0, double val_auc, double test_auc,
		  double test_hits, float *best_w, bool *have_best, double *best_auc, int32_t *wait, gnn_epoch_metrics *em,
		  gnn_linkpred_result *res, gnn_progress_fn progress, void *progress_arg, bool *stop, gnn_error *err)
{
	gnn_status	st;

	em->train_acc = em->val_loss = em->test_loss = NAN;
	em->val_mae = em->test_mae = em->val_rmse = em->test_rmse = NAN;
	em->val_acc = em->val_auc = (float) val_auc;
	em->test_acc = em->test_auc = (float) test_auc;
	if (!*have_best || val_auc > *best_auc)
	{
		if ((st = gnn_model_weights_get(model, best_w, err)) != GNN_OK)
			return st;
		*have_best = true;
		*best_auc = val_auc;
		em->best = true;
		res->best_epoch = epoch;
		res->val_auc = val_auc;
		res->test_auc = test_auc;
		res->test_hits = test_hits;
		*wait = 0;
	}
	else
		(*wait)++;
	em->seconds = gnn_now_s() - t0;
	res->epochs_run = epoch;
	if (progress)
		progress(progress_arg, em);
	if (cfg->patience > 0 && *wait >= cfg->patience)
	{
		res->stopped_early = epoch < cfg->epochs;
		*stop = true;
	}
	return GNN_OK;
}

/*
 * A run's end: its time, the kept weights set (they matter to a model that
 * is handed back), and the model handed back when all went well.
 */
static gnn_status
run_end(gnn_status st, gnn_model **model, bool have_best, const float *best_w, gnn_model **model_out,
		gnn_linkpred_result *res, double t_start, gnn_error *err)
{
	res->seconds = gnn_now_s() - t_start;
	if (have_best)
	{
		gnn_status	st2 = gnn_model_weights_set(*model, best_w, st == GNN_OK ? err : NULL);

		if (st == GNN_OK)
			st = st2;
	}
	if (st == GNN_OK && model_out)
	{
		*model_out = *model;
		*model = NULL;
	}
	return st;
}

/* ------------------------------------------------------------------ over several ranks */

/*
 * Link prediction over the parts of a partitioned graph (cfg->dist, on
 * minibatches): every node is named by its place in the list of all ranks'
 * nodes in name order ((type, key); a homogeneous graph's ids), the same on
 * every rank, and every pair is its two places.
 *  - The positives: on a homogeneous graph each unordered pair of linked
 *    nodes once, on the rank that owns its endpoint of lower id (a part
 *    holds every arc of its own nodes); of a relation (edge type, a schema
 *    graph's foreign key) each of its arcs once, on the rank that owns its
 *    destination (a part holds every in-arc of its own nodes), or for a
 *    relation that is its own reverse on the owner of the lower place.  Cut
 *    into training, validation and test by a hash of the pair's names and
 *    the job's seed, so that every rank agrees without a word.
 *  - The training graph: each part without the arcs of held-out pairs, of
 *    the relation and of its reverse (the owners answer sampling requests
 *    from it), typed as the part is.
 *  - A step: each rank's share of the global batch of positive pairs, each
 *    with `negatives` pairs of its own endpoint and a node drawn from the
 *    whole graph, or from the relation's source type (any rank's: unlinked
 *    to it, as its owner here knows);
 *    the pairs' endpoints sampled across parts (sample_dist.h), embedded,
 *    the loss's gradient summed over the ranks, weighed by their positives.
 *  - Evaluation: the validation and test pairs (each with a negative drawn
 *    as above, once) scored on embeddings of every neighbour (fan-outs -1:
 *    the full pass's rows), the scores gathered on every rank, AUC and
 *    Hits@K of them all.
 * Parity, not equality, with one server: the split and the negatives are
 * drawn otherwise.  Not time-aware yet.
 */
typedef struct gpair
{
	int64_t		u;				/* places; u's node is this rank's own */
	int64_t		v;
	int32_t		ul;				/* u's index in the part */
} gpair;

/* a pair's place in [0, 1), the same on every rank (a < b: the endpoints' ids) */
static double
pair_draw(uint64_t seed, int64_t a, int64_t b)
{
	uint64_t	h = gnn_mix64(seed ^ gnn_mix64((uint64_t) a * 0x9e3779b97f4a7c15ULL) ^ gnn_mix64((uint64_t) b + 1));

	return (double) (h >> 11) * (1.0 / 9007199254740992.0);
}

/* held out (validation or test): 1, 2; training: 0 */
static int
pair_split(const gnn_linkpred_config *lc, uint64_t seed, int64_t a, int64_t b)
{
	double		x;

	if (a > b)
	{
		int64_t		t = a;

		a = b;
		b = t;
	}
	x = pair_draw(seed, a, b);
	return x < lc->holdout * lc->val_fraction ? 1 : x < lc->holdout ? 2 : 0;
}

/* whether own node u (an index of g) has an arc either way with the node of id w */
static bool
own_linked(const gnn_graph *g, int32_t u, int64_t w)
{
	const int32_t *nb;
	int64_t		k = gnn_graph_out_row(g, u, &nb, NULL, NULL);

	for (int64_t i = 0; i < k; i++)
		if (g->ids[nb[i]] == w)
			return true;
	k = gnn_graph_in_row(g, u, &nb, NULL);
	for (int64_t i = 0; i < k; i++)
		if (g->ids[nb[i]] == w)
			return true;
	return false;
}

static int
gpair_cmp(const void *a, const void *b)
{
	const gpair *x = a,
			   *y = b;

	if (x->u != y->u)
		return (x->u > y->u) - (x->u < y->u);
	return (x->v > y->v) - (x->v < y->v);
}

typedef struct lpd
{
	gnn_dist   *d;
	int			rank;
	int			size;
	const gnn_graph *g;
	int64_t		N;				/* every rank's nodes */
	int64_t    *akey;			/* [N] their names' keys (ids), ascending by (type, key) */
	int16_t    *atype;			/* [N] their types (NULL: a homogeneous graph) */
	int32_t    *arank;			/* [N] their owners */
	int32_t		rel;			/* the relation (edge type; -1: every arc, a homogeneous graph) */
	int32_t		rev;			/* its reverse (-1: none; rel: its own) */
	int64_t		tlo;			/* the places a negative's other endpoint is drawn from */
	int64_t		thi;
	int64_t    *gi;				/* [g->num_nodes] each node's place, -1 */
	int32_t    *own;			/* own nodes (indices of g) */
	int64_t		nown;
	/* a batch's distinct endpoints */
	int32_t    *mark;			/* [N] the endpoint's seed position, -1 */
	int64_t    *skey;
	int16_t    *stype;			/* (typed graphs) */
	int32_t    *sown;
	int64_t    *stimes;			/* (time-aware) the seeds' bounds */
	int64_t		ns;
	int64_t    *abound;			/* (time-aware) [N] every place's bound, from its owner */
} lpd;

/*
 * A job's initial weights, from a stream of their own under its seed: one
 * server's (whatever its split drew from the job's stream) and rank 0's over
 * several servers alike, so that the same job starts from the same weights
 * either way.
 */
static gnn_status
linkpred_model_create(gnn_backend *be, const gnn_model_config *mc, uint64_t seed, gnn_model **model, gnn_error *err)
{
	gnn_rng		r;

	gnn_rng_seed(&r, seed ^ 0x6c696e6bULL);
	return gnn_model_create(be, mc, &r, model, err);
}

/* a place's name in 64 bits, gnn_graph_node_name's of its node: what the split hashes */
static uint64_t
place_name(const lpd *P, int64_t x)
{
	return P->atype ? gnn_graph_name_mix(P->atype[x], P->akey[x]) : (uint64_t) P->akey[x];
}

/* the place of name (type, key), or -1 */
static int64_t
place_of(const lpd *P, int32_t type, int64_t key)
{
	int64_t		lo = 0,
				hi = P->N - 1;

	while (lo <= hi)
	{
		int64_t		mid = lo + (hi - lo) / 2;
		int32_t		t = P->atype ? P->atype[mid] : 0;

		if (t == type && P->akey[mid] == key)
			return mid;
		if (t < type || (t == type && P->akey[mid] < key))
			lo = mid + 1;
		else
			hi = mid - 1;
	}
	return -1;
}

/* the seed position of place x in the batch being listed */
static int32_t
seed_of(lpd *P, int64_t x)
{
	if (P->mark[x] < 0)
	{
		P->mark[x] = (int32_t) P->ns;
		P->skey[P->ns] = P->akey[x];
		if (P->stype)
			P->stype[P->ns] = P->atype[x];
		P->sown[P->ns] = P->arank[x];
		if (P->stimes)
			P->stimes[P->ns] = P->abound[x];
		P->ns++;
	}
	return P->mark[x];
}

static void
seeds_clear(lpd *P, const gpair *pairs, int64_t n)
{
	for (int64_t i = 0; i < n; i++)
		P->mark[pairs[i].u] = P->mark[pairs[i].v] = -1;
	P->ns = 0;
}

/*
 * Whether own node u has a positive's arc with place w: of a homogeneous
 * graph any arc either way; else an in-arc of the relation or its reverse
 * (u is the endpoint that lists the relation's pairs, so these are all).
 */
static bool
own_linked_place(const lpd *P, int32_t u, int64_t w)
{
	const gnn_graph *g = P->g;

	if (P->rel < 0)
		return own_linked(g, u, P->akey[w]);
	for (int64_t e = g->rindptr[u]; e < g->rindptr[u + 1]; e++)
	{
		int32_t		r = g->rarc_type ? g->rarc_type[e] : 0;

		if ((r == P->rel || r == P->rev) && P->gi[g->rindices[e]] == w)
			return true;
	}
	return false;
}

/* a negative for own node u (its place x): a place drawn from the other endpoint's (any rank's), unlinked to u */
static int64_t
draw_tail(const lpd *P, int32_t u, int64_t x, gnn_rng *r)
{
	int64_t		w = P->tlo;

	for (int tries = 0; tries < 100; tries++)
	{
		w = P->tlo + (int64_t) gnn_rng_below(r, (uint64_t) (P->thi - P->tlo));
		if (w != x && !own_linked_place(P, u, w))
			break;
	}
	return w;
}

/*
 * Embeddings of the batch's ns seeds (P->skey / sown) into host_out,
 * sampled across parts by ds; the blocks and features stay in db / xb
 * for a backward pass until sampled_free.  A collective (ns may be 0).
 */
static gnn_status
dist_embed(lpd *P, gnn_dist_sampler *ds, const gnn_train_config *cfg, gnn_backend *be, gnn_model *model,
		   uint64_t seed, bool train, uint64_t dropout_seed, float *host_out, gnn_dblock *db, int *made,
		   gnn_dfeat *xb, gnn_error *err)
{
	gnn_minibatch mb;
	gnn_dist_feat f;
	gnn_status	st;

	*made = 0;
	memset(xb, 0, sizeof(*xb));
	if ((st = gnn_dist_sampler_sample_named(ds, P->skey, P->stype, P->sown, P->stimes, P->ns, seed, cfg->row_normalise,
											cfg->threads, &mb, &f, err)) != GNN_OK || P->ns == 0)
		return st;
	st = f.ptr ? gnn_dfeat_sparse(be, mb.n_input, P->g->feat_dim, f.ptr, f.idx, f.val, xb, err)
		: gnn_dfeat_dense(be, f.dense, mb.n_input, P->g->feat_dim, xb, err);
	if (st == GNN_OK)
		st = blocks_forward(be, model, &mb, xb, train, dropout_seed, P->ns * cfg->hidden, host_out, db, made, err);
	return st;
}

static void sampled_free(gnn_dblock *db, int made, gnn_dfeat *xb);

static gnn_status
linkpred_dist(const gnn_graph *g, const gnn_train_config *cfg, const gnn_linkpred_config *lc,
			  const gnn_minibatch_config *mbc, gnn_backend *be_in, gnn_progress_fn progress, void *progress_arg,
			  gnn_should_stop_fn should_stop, void *stop_arg, gnn_model **model_out, gnn_linkpred_result *res,
			  gnn_error *err)
{
	lpd			P;
	gnn_backend *be = be_in;
	gnn_model  *model = NULL;
	gnn_model_config mc;
	gnn_optim	opt;
	gnn_rng		rng;
	gnn_status	st = GNN_OK;
	gnn_graph	tg;
	gnn_dist_sampler *ds = NULL,
			   *de = NULL;
	gnn_sampler_config sc,
				ec;
	gpair	   *pos = NULL,		/* training, then validation, then test */
			   *neg = NULL,		/* validation's, then test's */
			   *bpairs = NULL;
	int64_t		npos = 0,
				ntr = 0,
				nva = 0,
				nte = 0,
				cnt[3],
				steps,
				share,
				B = mbc->batch_size,
				m = 0,
				nneg_b;
	int64_t    *rptr = NULL;
	int32_t    *ridx = NULL,
			   *order = NULL;
	float	   *rw = NULL,
			   *z = NULL,
			   *dz = NULL,
			   *best_w = NULL,
			   *gbuf = NULL;
	double	   *score = NULL,
			   *allsc = NULL;
	size_t		gcap = 0;
	gnn_buf		ddz = {0};
	pair	   *lpos = NULL,
			   *lneg = NULL;
	int32_t		d = cfg->hidden;
	uint64_t	split_seed = gnn_mix64(cfg->seed ^ 0x6c696e6b73706c74ULL);
	double		best_auc = -1,
				t_start = gnn_now_s();
	bool		have_best = false;
	int32_t		wait = 0,
				fdim[2 * 64];
	int64_t		echunk = 1024;
	int16_t    *rr = NULL;		/* the training graph's arc types */
	int32_t    *lown = NULL;	/* own nodes that list pairs (the relation's destination type) */
	int64_t		nlown = 0;
	bool		typed = g->num_node_types > 1;

	memset(&P, 0, sizeof(P));
	P.d = cfg->dist;
	P.rank = gnn_dist_rank(P.d);
	P.size = gnn_dist_size(P.d);
	P.g = g;
	P.rel = lc->edge_type;
	P.rev = lc->reverse_edge_type;
	if (typed && (P.rel < 0 || !g->etypes || !g->keys))
		return gnn_error_set(err, GNN_ERR_INVALID,
							 "link prediction over several servers on a graph of several node types takes a relation (an edge type)");
	if ((st = check_relation(g, lc, err)) != GNN_OK)
		return st;
	if (g->has_delta)
		return gnn_error_set(err, GNN_ERR_UNSUPPORTED,
							 "rank %d's part has changes not merged yet: link prediction over several servers reads a merged part (gnn.refresh)",
							 P.rank);
	if (P.size > 64)
		return gnn_error_set(err, GNN_ERR_LIMIT, "at most 64 ranks");
	/* every rank's feature width and whether it samples time-aware (its part's times): all alike */
	{
		int32_t		mine[2] = {g->feat_dim, mbc->sampler.temporal ? 1 : 0};

		if ((st = gnn_dist_allgather(P.d, mine, sizeof(mine), fdim, err)) != GNN_OK)
			return st;
		for (int r = 0; r < P.size; r++)
			if (fdim[2 * r + 1] != mine[1])
				return gnn_error_set(err, GNN_ERR_INVALID,
									 "rank %d samples time-aware and rank %d does not: every part needs the same times "
									 "(options.time of gnn.load_schema_graph), or train with options.temporal false",
									 mine[1] ? P.rank : r, mine[1] ? r : P.rank);
		for (int r = 0; r < P.size; r++)
			fdim[r] = fdim[2 * r];
	}
	for (int r = 0; r < P.size; r++)
		if (fdim[r] != g->feat_dim)
			return gnn_error_set(err, GNN_ERR_INVALID, "rank %d's graph has features of width %d, rank %d's of width %d",
								 r, fdim[r], P.rank, g->feat_dim);
	if ((st = gnn_linkpred_model_config(g, cfg, &mc, err)) != GNN_OK)
		return st;
	if (mbc->sampler.nhops != mc.layers)
		return gnn_error_set(err, GNN_ERR_INVALID, "%d fan-outs given for a model with %d layers (give one per layer)",
							 mbc->sampler.nhops, mc.layers);
	memset(&tg, 0, sizeof(tg));

	/* every node's place */
	P.own = malloc(sizeof(int32_t) * (g->num_nodes + 1));
	P.gi = malloc(sizeof(int64_t) * (g->num_nodes + 1));
	if (!P.own || !P.gi)
	{
		st = gnn_error_set(err, GNN_ERR_NOMEM, "out of memory");
		goto done;
	}
	for (int64_t v = 0; v < g->num_nodes; v++)
		if (!g->node_part || g->node_part[v] == g->part)
			P.own[P.nown++] = (int32_t) v;
	if ((st = gnn_train_dist_global_names(P.d, g, P.own, P.nown, &P.akey, typed ? &P.atype : NULL, &P.arank, &P.N,
										  err)) != GNN_OK)
		goto done;
	for (int64_t v = 0; v < g->num_nodes; v++)
		if ((P.gi[v] = place_of(&P, gnn_graph_name_type(g, v), gnn_graph_name_key(g, v))) < 0)
		{
			st = gnn_error_set(err, GNN_ERR_DANGLING, "node %lld (type %d) of rank %d's halo is no rank's own node",
							   (long long) gnn_graph_name_key(g, v), gnn_graph_name_type(g, v), P.rank);
			goto done;
		}
	/*
	 * time-aware: every place's bound (its node's time, or the job's as_of),
	 * which its owner knows, on every rank: a pair's endpoints are sampled
	 * under their own bounds wherever they are listed
	 */
	if (mbc->sampler.temporal)
	{
		if (!(P.abound = calloc(P.N + 1, sizeof(int64_t))))
		{
			st = gnn_error_set(err, GNN_ERR_NOMEM, "out of memory for %lld nodes' time bounds", (long long) P.N);
			goto done;
		}
		for (int64_t i = 0; i < P.nown; i++)
			P.abound[P.gi[P.own[i]]] = gnn_temporal_bound(g, P.own[i], mbc->has_as_of, mbc->as_of);
		if ((st = gnn_dist_allreduce(P.d, P.abound, (size_t) P.N, GNN_DIST_I64, err)) != GNN_OK)
			goto done;
	}
	/* a negative's other endpoint: any node, or one of the relation's source type (the same on every rank) */
	P.tlo = 0;
	P.thi = P.N;
	lown = P.own;
	nlown = P.nown;
	if (typed)
	{
		int32_t		src = g->etypes[P.rel].src_type,
					dst = g->etypes[P.rel].dst_type;

		while (P.tlo < P.N && P.atype[P.tlo] < src)
			P.tlo++;
		P.thi = P.tlo;
		while (P.thi < P.N && P.atype[P.thi] == src)
			P.thi++;
		if (P.thi == P.tlo)
		{
			st = gnn_error_set(err, GNN_ERR_EMPTY, "edge type %d's source type has no node on any rank", P.rel);
			goto done;
		}
		if (!(lown = malloc(sizeof(int32_t) * (P.nown + 1))))
		{
			st = gnn_error_set(err, GNN_ERR_NOMEM, "out of memory");
			goto done;
		}
		nlown = 0;
		for (int64_t i = 0; i < P.nown; i++)
			if (gnn_graph_name_type(g, P.own[i]) == dst)
				lown[nlown++] = P.own[i];
	}

	/* the positives (above): cut by their names' hash */
	{
		int64_t		cap = 0;

		for (int64_t i = 0; i < P.nown; i++)
		{
			const int32_t *nb;

			cap += gnn_graph_out_row(g, P.own[i], &nb, NULL, NULL) + gnn_graph_in_row(g, P.own[i], &nb, NULL);
		}
		pos = malloc(sizeof(gpair) * (cap + 1));
		if (!pos)
		{
			st = gnn_error_set(err, GNN_ERR_NOMEM, "out of memory for %lld pairs", (long long) cap);
			goto done;
		}
		for (int64_t i = 0; i < P.nown && P.rel < 0; i++)
		{
			int32_t		u = P.own[i];

			for (int way = 0; way < 2; way++)
			{
				const int32_t *nb;
				int64_t		k = way ? gnn_graph_in_row(g, u, &nb, NULL) : gnn_graph_out_row(g, u, &nb, NULL, NULL);

				for (int64_t e = 0; e < k; e++)
					if (g->ids[nb[e]] > g->ids[u])
					{
						pos[npos].u = P.gi[u];
						pos[npos].v = P.gi[nb[e]];
						pos[npos].ul = u;
						npos++;
					}
			}
		}
		/*
		 * A relation: each arc x -> v at the owner of v, whose in-arcs its
		 * part holds whole; a relation that is its own reverse at the
		 * endpoint of the lower place.  The pair's own endpoint is v.
		 */
		for (int64_t i = 0; i < nlown && P.rel >= 0; i++)
		{
			int32_t		v = lown[i];

			for (int64_t e = g->rindptr[v]; e < g->rindptr[v + 1]; e++)
			{
				int32_t		x = g->rindices[e];

				if ((g->rarc_type ? g->rarc_type[e] : 0) != P.rel || x == v ||
					(P.rev == P.rel && P.gi[x] < P.gi[v]))
					continue;
				pos[npos].u = P.gi[v];
				pos[npos].v = P.gi[x];
				pos[npos].ul = v;
				npos++;
			}
		}
		qsort(pos, npos, sizeof(gpair), gpair_cmp);
		{
			int64_t		w = 0;

			for (int64_t i = 0; i < npos; i++)
				if (w == 0 || pos[i].u != pos[w - 1].u || pos[i].v != pos[w - 1].v)
					pos[w++] = pos[i];
			npos = w;
		}
		/* training first, then validation, then test (a stable partition in three) */
		{
			gpair	   *tmp = malloc(sizeof(gpair) * (npos + 1));
			int64_t		at = 0;

			if (!tmp)
			{
				st = gnn_error_set(err, GNN_ERR_NOMEM, "out of memory");
				goto done;
			}
			for (int part = 0; part < 3; part++)
				for (int64_t i = 0; i < npos; i++)
					if (pair_split(lc, split_seed, (int64_t) place_name(&P, pos[i].u), (int64_t) place_name(&P, pos[i].v)) == part)
					{
						tmp[at++] = pos[i];
						if (part == 0)
							ntr++;
						else if (part == 1)
							nva++;
						else
							nte++;
					}
			free(pos);
			pos = tmp;
		}
	}

	/* the training graph: the part without the arcs of held-out pairs */
	{
		/* (every in-arc: a schema graph's edges count once, their arcs twice, one of each direction's type) */
		int64_t		arcs = g->rindptr[g->num_nodes] > g->num_edges ? g->rindptr[g->num_nodes] : g->num_edges;

		rptr = malloc(sizeof(int64_t) * (g->num_nodes + 1));
		ridx = malloc(sizeof(int32_t) * (arcs + 1));
		rw = g->rweights ? malloc(sizeof(float) * (arcs + 1)) : NULL;
		rr = g->rarc_type ? malloc(sizeof(int16_t) * (arcs + 1)) : NULL;
	}
	if (!rptr || !ridx || (g->rweights && !rw) || (g->rarc_type && !rr))
	{
		st = gnn_error_set(err, GNN_ERR_NOMEM, "out of memory for the training graph");
		goto done;
	}
	rptr[0] = 0;
	for (int64_t v = 0; v < g->num_nodes; v++)
	{
		const int32_t *nb;
		const float *w;
		int64_t		k = gnn_graph_in_row(g, v, &nb, &w);

		for (int64_t e = 0; e < k; e++)
		{
			/* (no delta here: the in-row is the base's, its types at rindptr) */
			int16_t		r = g->rarc_type ? g->rarc_type[g->rindptr[v] + e] : 0;

			/* a held-out pair's arcs of the relation and of its reverse: messages along either would show it */
			if (nb[e] != v && (P.rel < 0 || r == P.rel || r == P.rev) &&
				pair_split(lc, split_seed, (int64_t) gnn_graph_node_name(g, nb[e]), (int64_t) gnn_graph_node_name(g, v)) != 0)
				continue;
			ridx[m] = nb[e];
			if (rw)
				rw[m] = w ? w[e] : 1.0f;
			if (rr)
				rr[m] = r;
			m++;
		}
		rptr[v + 1] = m;
	}
	tg = *g;
	tg.num_edges = m;
	tg.rindptr = tg.indptr = rptr;
	tg.rindices = tg.indices = ridx;
	tg.rweights = tg.weights = rw;
	/* (relational layers and per-relation fan-outs read the types) */
	tg.rarc_type = tg.arc_type = rr;
	tg.arc_rows = NULL;

	/*
	 * the samplers: training's fan-outs, and every neighbour for evaluation;
	 * time-aware, evaluation samples as training does, under each endpoint's
	 * bound (every neighbour would show the future), as one server's does
	 */
	sc = mbc->sampler;
	sc.nhops = mc.layers;
	ec = sc;
	if (!sc.temporal)
	{
		for (int h = 0; h < ec.nhops; h++)
			ec.fanouts[h] = -1;
		ec.type_fanouts = NULL;
	}
	if ((st = gnn_dist_sampler_create(P.d, &tg, &sc, &ds, err)) != GNN_OK ||
		(st = gnn_dist_sampler_create(P.d, &tg, &ec, &de, err)) != GNN_OK)
		goto done;

	cnt[0] = ntr;
	cnt[1] = nva;
	cnt[2] = nte;
	if ((st = gnn_dist_allreduce(P.d, cnt, 3, GNN_DIST_I64, err)) != GNN_OK)
		goto done;
	if (cnt[0] == 0 || cnt[1] == 0 || cnt[2] == 0)
	{
		st = gnn_error_set(err, GNN_ERR_EMPTY, "%lld training, %lld validation and %lld test pairs over all ranks: too few links",
						   (long long) cnt[0], (long long) cnt[1], (long long) cnt[2]);
		goto done;
	}
	res->test_edges = cnt[2];
	steps = (cnt[0] + B - 1) / B;
	if (mbc->max_batches > 0 && mbc->max_batches < steps)
		steps = mbc->max_batches;
	share = ntr > 0 ? (ntr + steps - 1) / steps : 0;
	nneg_b = share * lc->negatives;

	if (!be && (st = gnn_backend_create(cfg->backend, cfg->threads, cfg->cuda_so, &be, err)) != GNN_OK)
		goto done;
	/* (rank 0's weights are every rank's) */
	if ((st = linkpred_model_create(be, &mc, cfg->seed, &model, err)) != GNN_OK)
		goto done;
	best_w = malloc(sizeof(float) * (gnn_model_weights_count(model) + 1));
	if (!best_w)
	{
		st = gnn_error_set(err, GNN_ERR_NOMEM, "out of memory");
		goto done;
	}
	if ((st = gnn_model_weights_get(model, best_w, err)) != GNN_OK ||
		(st = gnn_dist_broadcast(P.d, best_w, sizeof(float) * gnn_model_weights_count(model), 0, err)) != GNN_OK ||
		(st = gnn_model_weights_set(model, best_w, err)) != GNN_OK)
		goto done;
	/* this rank's stream: its shuffles and negatives */
	gnn_rng_seed(&rng, gnn_mix64(cfg->seed ^ 0x6c696e6bULL) + (uint64_t) P.rank);
	gnn_optim_init(&opt, cfg->optimizer, cfg->lr, cfg->weight_decay);

	/* the evaluation negatives: one per held-out positive, drawn once */
	neg = malloc(sizeof(gpair) * (nva + nte + 1));
	order = malloc(sizeof(int32_t) * (ntr + 1));
	P.mark = malloc(sizeof(int32_t) * (P.N + 1));
	{
		int64_t		room = share + nneg_b > 2 * (nva + nte) ? share + nneg_b : 2 * (nva + nte);

		room = 2 * room + echunk;
		P.skey = malloc(sizeof(int64_t) * (room + 1));
		P.stype = typed ? malloc(sizeof(int16_t) * (room + 1)) : NULL;
		P.sown = malloc(sizeof(int32_t) * (room + 1));
		P.stimes = P.abound ? malloc(sizeof(int64_t) * (room + 1)) : NULL;
		z = malloc(sizeof(float) * ((size_t) room * d + 1));
		dz = malloc(sizeof(float) * ((size_t) room * d + 1));
	}
	bpairs = malloc(sizeof(gpair) * (share + nneg_b + 1));
	lpos = malloc(sizeof(pair) * (share + 1));
	lneg = malloc(sizeof(pair) * (nneg_b + 1));
	score = malloc(sizeof(double) * (2 * (nva + nte) + 1));
	if (!neg || !order || !P.mark || !P.skey || (typed && !P.stype) || !P.sown || (P.abound && !P.stimes) || !z || !dz ||
		!bpairs || !lpos || !lneg || !score)
	{
		st = gnn_error_set(err, GNN_ERR_NOMEM, "out of memory");
		goto done;
	}
	for (int64_t x = 0; x < P.N; x++)
		P.mark[x] = -1;
	for (int64_t i = 0; i < nva + nte; i++)
	{
		int32_t		u = lown[(int64_t) gnn_rng_below(&rng, (uint64_t) (nlown > 0 ? nlown : 1))];

		neg[i].u = P.gi[u];
		neg[i].v = draw_tail(&P, u, P.gi[u], &rng);
		neg[i].ul = u;
	}
	for (int64_t i = 0; i < ntr; i++)
		order[i] = (int32_t) i;

	for (int32_t epoch = 1; epoch <= cfg->epochs && st == GNN_OK; epoch++)
	{
		gnn_epoch_metrics em;
		double		t0 = gnn_now_s(),
					total = 0,
					val_auc = 0,
					val_hits = 0,
					test_auc = 0,
					test_hits = 0;
		int64_t		nchunks,
					mine_chunks;
		bool		stop = false;

		gnn_epoch_metrics_init(&em, epoch);
		gnn_shuffle_i32(&rng, order, ntr);
		for (int64_t s = 0; s < steps && st == GNN_OK; s++)
		{
			int64_t		lo = s * share,
						nb = ntr - lo < share ? (ntr - lo > 0 ? ntr - lo : 0) : share,
						nn = nb * lc->negatives;
			gnn_dfeat	xb;
			gnn_dblock	db[GNN_MAX_LAYERS];
			int			made = 0;
			float		loss = 0,
						extra[3];
			uint64_t	sseed = gnn_rng_next(&rng),
						dseed = gnn_rng_next(&rng);

			for (int64_t i = 0; i < nb; i++)
			{
				gpair		p = pos[order[lo + i]];

				bpairs[i] = p;
				lpos[i].u = seed_of(&P, p.u);
				lpos[i].v = seed_of(&P, p.v);
				/* its negatives: its own endpoint and a node from anywhere */
				for (int k = 0; k < lc->negatives; k++)
				{
					gpair		q = {p.u, draw_tail(&P, p.ul, p.u, &rng), p.ul};

					bpairs[nb + i * lc->negatives + k] = q;
					lneg[i * lc->negatives + k].u = seed_of(&P, q.u);
					lneg[i * lc->negatives + k].v = seed_of(&P, q.v);
				}
			}
			st = dist_embed(&P, ds, cfg, be, model, sseed, true, dseed, z, db, &made, &xb, err);
			if (st == GNN_OK && nb > 0)
			{
				memset(dz, 0, sizeof(float) * P.ns * d);
				loss = (float) bce_step(z, d, lpos, nb, lneg, nn, dz);
				if ((st = gnn_buf_ensure(be, &ddz, sizeof(float) * P.ns * d, err)) == GNN_OK &&
					(st = gnn_backend_error(be, gnn_backend_copy_h2d(be, ddz.p, dz, sizeof(float) * P.ns * d), err)) == GNN_OK)
					st = gnn_model_backward(model, ddz.p, err);
			}
			sampled_free(db, made, &xb);
			seeds_clear(&P, bpairs, nb + nn);
			if (st != GNN_OK)
				break;
			/* the global batch's mean gradient, the loss and any rank's vote to stop */
			extra[0] = (float) nb;
			extra[1] = loss * (float) nb;
			extra[2] = should_stop && should_stop(stop_arg) ? 1.0f : 0.0f;
			if ((st = gnn_train_dist_sum_grads(P.d, model, nb > 0 ? (float) nb : 0.0f, extra, 3, &gbuf, &gcap, err)) != GNN_OK)
				break;
			if (extra[2] > 0)
			{
				st = gnn_error_set(err, GNN_ERR_CANCELLED, "training cancelled at epoch %d", epoch);
				break;
			}
			if (extra[0] > 0)
			{
				total += extra[1] / extra[0];
				if ((st = gnn_train_dist_scale_grads(model, 1.0f / extra[0], err)) == GNN_OK)
					st = gnn_optim_step(&opt, model, err);
			}
		}
		if (st != GNN_OK)
			break;
		em.train_loss = (float) (total / (double) steps);
		em.compute_s = gnn_now_s() - t0;

		/* evaluation: the held-out pairs' endpoints in chunks (as many on every rank), every neighbour */
		{
			int64_t		np = nva + nte,
						ne = 0;

			for (int64_t i = 0; i < 2 * np; i++)
			{
				gpair		p = i < np ? pos[ntr + i] : neg[i - np];

				(void) seed_of(&P, p.u);
				(void) seed_of(&P, p.v);
			}
			ne = P.ns;
			mine_chunks = (ne + echunk - 1) / echunk;
			nchunks = mine_chunks;
			if ((st = gnn_dist_allreduce(P.d, &nchunks, 1, GNN_DIST_I64, err)) != GNN_OK)
				break;
			/* (a sum bounds the most: every rank loops that many times, most with nothing) */
			{
				int64_t    *keys_all = P.skey;
				int16_t    *types_all = P.stype;
				int32_t    *own_all = P.sown;
				int64_t    *times_all = P.stimes;
				float	   *zall = malloc(sizeof(float) * ((size_t) ne * d + 1));

				if (!zall)
				{
					st = gnn_error_set(err, GNN_ERR_NOMEM, "out of memory");
					break;
				}
				for (int64_t c = 0; c < nchunks && st == GNN_OK; c++)
				{
					int64_t		c0 = c * echunk,
								nc = c0 < ne ? (ne - c0 < echunk ? ne - c0 : echunk) : 0;
					gnn_dfeat	xb;
					gnn_dblock	db[GNN_MAX_LAYERS];
					int			made = 0;
					int64_t		save = P.ns;

					P.skey = keys_all + (c0 < ne ? c0 : 0);
					P.stype = types_all ? types_all + (c0 < ne ? c0 : 0) : NULL;
					P.sown = own_all + (c0 < ne ? c0 : 0);
					P.stimes = times_all ? times_all + (c0 < ne ? c0 : 0) : NULL;
					P.ns = nc;
					st = dist_embed(&P, de, cfg, be, model,
									P.abound ? gnn_infer_temporal_seed(cfg->seed) : 0x65766c ^ cfg->seed, false, 0,
									zall + (size_t) (c0 < ne ? c0 : 0) * d, db, &made, &xb, err);
					sampled_free(db, made, &xb);
					P.skey = keys_all;
					P.stype = types_all;
					P.sown = own_all;
					P.stimes = times_all;
					P.ns = save;
				}
				for (int64_t i = 0; st == GNN_OK && i < 2 * np; i++)
				{
					gpair		p = i < np ? pos[ntr + i] : neg[i - np];

					score[i] = dot(zall, d, P.mark[p.u], P.mark[p.v]);
				}
				free(zall);
				for (int64_t i = 0; i < 2 * np; i++)
				{
					gpair		p = i < np ? pos[ntr + i] : neg[i - np];

					P.mark[p.u] = P.mark[p.v] = -1;
				}
				P.ns = 0;
			}
			if (st != GNN_OK)
				break;
			/* every rank's scores on every rank: validation's positives, negatives, then test's */
			{
				int64_t		mine[4] = {nva, nva, nte, nte},
						   *each = malloc(sizeof(int64_t) * 4 * P.size),
						   *sc = malloc(sizeof(int64_t) * P.size),
						   *rc = malloc(sizeof(int64_t) * P.size),
							tot[4] = {0, 0, 0, 0},
							all = 0;
				double	   *send = malloc(sizeof(double) * ((size_t) 2 * np * P.size + 1));

				if (!each || !sc || !rc || !send)
					st = gnn_error_set(err, GNN_ERR_NOMEM, "out of memory");
				if (st == GNN_OK)
					st = gnn_dist_allgather(P.d, mine, sizeof(mine), each, err);
				for (int r = 0; st == GNN_OK && r < P.size; r++)
				{
					sc[r] = 2 * np;
					rc[r] = 0;
					for (int q = 0; q < 4; q++)
					{
						rc[r] += each[4 * r + q];
						tot[q] += each[4 * r + q];
					}
					all += rc[r];
					/* mine in order: validation's positives, negatives, test's positives, negatives */
					memcpy(send + (size_t) r * 2 * np, score, sizeof(double) * nva);
					memcpy(send + (size_t) r * 2 * np + nva, score + np, sizeof(double) * nva);
					memcpy(send + (size_t) r * 2 * np + 2 * nva, score + nva, sizeof(double) * nte);
					memcpy(send + (size_t) r * 2 * np + 2 * nva + nte, score + np + nva, sizeof(double) * nte);
				}
				if (st == GNN_OK && !(allsc = realloc(allsc, sizeof(double) * (all + 1))))
					st = gnn_error_set(err, GNN_ERR_NOMEM, "out of memory");
				if (st == GNN_OK)
					st = gnn_dist_alltoallv(P.d, send, sc, allsc, rc, sizeof(double), err);
				if (st == GNN_OK)
				{
					/* into [validation +, validation -, test +, test -] over the ranks */
					double	   *sorted = malloc(sizeof(double) * (all + 1));
					int64_t		at[4] = {0, tot[0], tot[0] + tot[1], tot[0] + tot[1] + tot[2]},
								k = 0;

					if (!sorted)
						st = gnn_error_set(err, GNN_ERR_NOMEM, "out of memory");
					for (int r = 0; st == GNN_OK && r < P.size; r++)
						for (int q = 0; q < 4; q++)
							for (int64_t i = 0; i < each[4 * r + q]; i++)
								sorted[at[q]++] = allsc[k++];
					if (st == GNN_OK)
					{
						auc_hits_scores(sorted, tot[0], tot[1], lc->hits_k, &val_auc, &val_hits);
						auc_hits_scores(sorted + tot[0] + tot[1], tot[2], tot[3], lc->hits_k, &test_auc, &test_hits);
					}
					free(sorted);
				}
				free(each);
				free(sc);
				free(rc);
				free(send);
			}
			if (st != GNN_OK)
				break;
		}
		if ((st = epoch_end(model, cfg, epoch, t0, val_auc, test_auc, test_hits, best_w, &have_best, &best_auc, &wait,
							&em, res, progress, progress_arg, &stop, err)) != GNN_OK || stop)
			break;
	}
	st = run_end(st, &model, have_best, best_w, model_out, res, t_start, err);
done:
	gnn_dist_sampler_free(ds);
	gnn_dist_sampler_free(de);
	if (be)
		gnn_buf_free(be, &ddz);
	gnn_model_free(model);
	if (!be_in && be)
		gnn_backend_destroy(be);
	if (lown != P.own)
		free(lown);
	free(P.own);
	free(P.gi);
	free(P.akey);
	free(P.atype);
	free(P.stype);
	free(rr);
	free(P.arank);
	free(P.mark);
	free(P.skey);
	free(P.sown);
	free(P.stimes);
	free(P.abound);
	free(pos);
	free(neg);
	free(bpairs);
	free(rptr);
	free(ridx);
	free(rw);
	free(order);
	free(z);
	free(dz);
	free(best_w);
	free(gbuf);
	free(score);
	free(allsc);
	free(lpos);
	free(lneg);
	return st;
}

static gnn_status linkpred_run(const gnn_graph *g, const gnn_train_config *cfg, const gnn_linkpred_config *lc,
							   const gnn_minibatch_config *mbc, gnn_backend *be_in, gnn_progress_fn progress,
							   void *progress_arg, gnn_should_stop_fn should_stop, void *stop_arg,
							   gnn_model **model_out, gnn_linkpred_result *res, gnn_error *err);

gnn_status
gnn_train_linkpred(const gnn_graph *g, const gnn_train_config *cfg, const gnn_linkpred_config *lc,
				   gnn_backend *be_in, gnn_progress_fn progress, void *progress_arg,
				   gnn_should_stop_fn should_stop, void *stop_arg, gnn_model **model_out,
				   gnn_linkpred_result *res, gnn_error *err)
{
	return linkpred_run(g, cfg, lc, NULL, be_in, progress, progress_arg, should_stop, stop_arg, model_out, res, err);
}

gnn_status
gnn_train_linkpred_mb(const gnn_graph *g, const gnn_train_config *cfg, const gnn_linkpred_config *lc,
					  const gnn_minibatch_config *mbc, gnn_backend *be_in, gnn_progress_fn progress,
					  void *progress_arg, gnn_should_stop_fn should_stop, void *stop_arg, gnn_model **model_out,
					  gnn_linkpred_result *res, gnn_error *err)
{
	return linkpred_run(g, cfg, lc, mbc, be_in, progress, progress_arg, should_stop, stop_arg, model_out, res, err);
}

static gnn_status
linkpred_run(const gnn_graph *g, const gnn_train_config *cfg, const gnn_linkpred_config *lc,
			 const gnn_minibatch_config *mbc, gnn_backend *be_in, gnn_progress_fn progress, void *progress_arg,
			 gnn_should_stop_fn should_stop, void *stop_arg, gnn_model **model_out, gnn_linkpred_result *res,
			 gnn_error *err)
{
	mb_state	M;
	gnn_backend *be = be_in;
	gnn_model  *model = NULL;
	gnn_model_config mc;
	gnn_optim	opt;
	gnn_rng		rng;
	gnn_status	st;
	gnn_dblock	dblk;
	gnn_dfeat	x;
	gnn_linkpred_split sp;
	pair	   *tneg = NULL;
	float	   *z = NULL,
			   *dz = NULL,
			   *best_w = NULL;
	gnn_buf		ddz = {0};
	int64_t		n = g->num_nodes,
				nval,
				ntest,
				ntrain;
	int32_t		d = cfg->hidden;
	double		best_auc = -1,
				t_start = gnn_now_s();
	bool		have_best = false;
	int32_t		wait = 0;
	gnn_dblock *blocks[GNN_MAX_LAYERS];

	memset(res, 0, sizeof(*res));
	if (cfg->dist && mbc)
	{
		if (model_out)
			*model_out = NULL;
		if ((st = gnn_train_config_check(cfg, err)) != GNN_OK)
			return st;
		if (model_out && !be_in)
			return gnn_error_set(err, GNN_ERR_INVALID, "asking for the model needs a caller-owned backend");
		return linkpred_dist(g, cfg, lc, mbc, be_in, progress, progress_arg, should_stop, stop_arg, model_out, res,
							 err);
	}
	if (cfg->dist)
		return gnn_error_set(err, GNN_ERR_UNSUPPORTED,
							 "link prediction over several servers trains on minibatches: give fanouts");
	memset(&M, 0, sizeof(M));
	memset(&dblk, 0, sizeof(dblk));
	memset(&x, 0, sizeof(x));
	memset(&sp, 0, sizeof(sp));
	if (model_out)
		*model_out = NULL;
	if ((st = gnn_train_config_check(cfg, err)) != GNN_OK)
		return st;
	if (g->feat_kind == GNN_FEAT_NONE)
		return gnn_error_set(err, GNN_ERR_EMPTY, "the graph has no node features");
	if (model_out && !be_in)
		return gnn_error_set(err, GNN_ERR_INVALID, "asking for the model needs a caller-owned backend");
	if ((st = gnn_linkpred_model_config(g, cfg, &mc, err)) != GNN_OK)
		return st;
	gnn_rng_seed(&rng, cfg->seed ^ 0x6c696e6bULL);
	if ((st = gnn_linkpred_split_create(g, lc, &rng, &sp, err)) != GNN_OK)
		return st;
	nval = sp.n_val;
	ntest = sp.n_test;
	ntrain = sp.n_train;
	res->test_edges = ntest;
	tneg = malloc(sizeof(pair) * (ntrain * lc->negatives + 1));
	z = malloc(sizeof(float) * n * d + 4);
	dz = malloc(sizeof(float) * n * d + 4);
	if (!tneg || !z || !dz)
	{
		st = gnn_error_set(err, GNN_ERR_NOMEM, "out of memory");
		goto done;
	}

	if (!be && (st = gnn_backend_create(cfg->backend, cfg->threads, cfg->cuda_so, &be, err)) != GNN_OK)
		goto done;
	if ((st = linkpred_model_create(be, &mc, cfg->seed, &model, err)) != GNN_OK ||
		(st = gnn_dblock_create(be, &sp.graph, &dblk, err)) != GNN_OK ||
		(st = gnn_dfeat_from_graph(be, g, cfg->row_normalise, &x, err)) != GNN_OK ||
		(st = gnn_buf_ensure(be, &ddz, sizeof(float) * n * d, err)) != GNN_OK)
		goto done;
	best_w = malloc(sizeof(float) * (gnn_model_weights_count(model) + 1));
	if (!best_w)
	{
		st = gnn_error_set(err, GNN_ERR_NOMEM, "out of memory");
		goto done;
	}
	for (int l = 0; l < GNN_MAX_LAYERS; l++)
		blocks[l] = &dblk;
	gnn_optim_init(&opt, cfg->optimizer, cfg->lr, cfg->weight_decay);
	if (mbc)
	{
		/*
		 * The sampler reads in-neighbours: the training graph's (held-out
		 * arcs taken out), both ways as the split takes the graph, so that
		 * no sampled neighbourhood shows a held-out link
		 */
		int64_t		B = mbc->batch_size,
					cap = B * (2 + 2 * (int64_t) lc->negatives);
		gnn_sampler_config sc = mbc->sampler;

		if (B < 1)
		{
			st = gnn_error_set(err, GNN_ERR_INVALID, "batch_size must be at least 1");
			goto done;
		}
		M.tg = *g;
		M.tg.has_delta = false;
		M.tg.num_edges = sp.graph.nnz;
		M.tg.rindptr = M.tg.indptr = sp.graph.indptr;
		M.tg.rindices = M.tg.indices = sp.graph.indices;
		M.tg.rweights = M.tg.weights = sp.graph.weights;
		M.tg.rarc_type = M.tg.arc_type = sp.graph.etypes;
		M.tg.arc_rows = NULL;
		sc.nhops = mc.layers;
		if ((st = gnn_sampler_create(&M.tg, &sc, &M.sampler, err)) != GNN_OK)
			goto done;
		M.order = malloc(sizeof(int64_t) * (ntrain + 1));
		M.mark = malloc(sizeof(int32_t) * (n + 1));
		M.seeds = malloc(sizeof(int32_t) * (cap + 1));
		M.lpos = malloc(sizeof(pair) * (B + 1));
		M.lneg = malloc(sizeof(pair) * (B * lc->negatives + 1));
		M.bneg = malloc(sizeof(pair) * (B * lc->negatives + 1));
		M.z = malloc(sizeof(float) * (cap * d + 1));
		M.dz = malloc(sizeof(float) * (cap * d + 1));
		if (!M.order || !M.mark || !M.seeds || !M.lpos || !M.lneg || !M.bneg || !M.z || !M.dz)
		{
			st = gnn_error_set(err, GNN_ERR_NOMEM, "out of memory");
			goto done;
		}
		for (int64_t v = 0; v < n; v++)
			M.mark[v] = -1;
		M.temporal = sc.temporal;
		if (M.temporal)
		{
			/* the distinct endpoints of the validation and test pairs, measured on sampled neighbourhoods */
			gnn_sampler_config esc = sc;
			int64_t		np = nval + ntest;

			esc.per_node_streams = true;
			esc.first_hop = 0;
			M.stimes = malloc(sizeof(int64_t) * ((cap > 1024 ? cap : 1024) + 1));
			M.eval_nodes = malloc(sizeof(int32_t) * (4 * np + 1));
			if (!M.stimes || !M.eval_nodes)
			{
				st = gnn_error_set(err, GNN_ERR_NOMEM, "out of memory");
				goto done;
			}
			if ((st = gnn_sampler_create(&M.tg, &esc, &M.esampler, err)) != GNN_OK)
				goto done;
			for (int64_t i = 0; i < 2 * np; i++)
			{
				pair		p = i < np ? sp.pos[ntrain + i] : sp.neg[i - np];
				int32_t		e[2] = {p.u, p.v};

				for (int k = 0; k < 2; k++)
					if (M.mark[e[k]] < 0)
					{
						M.mark[e[k]] = 1;
						M.eval_nodes[M.n_eval++] = e[k];
					}
			}
			for (int64_t i = 0; i < M.n_eval; i++)
				M.mark[M.eval_nodes[i]] = -1;
			/* the scratch rows of a chunk of them */
			if (M.n_eval > 0 && cap < 1024)
			{
				float	   *zz = realloc(M.z, sizeof(float) * (1024 * (size_t) d + 1));

				if (!zz)
				{
					st = gnn_error_set(err, GNN_ERR_NOMEM, "out of memory");
					goto done;
				}
				M.z = zz;
			}
		}
	}

	for (int32_t epoch = 1; epoch <= cfg->epochs; epoch++)
	{
		gnn_epoch_metrics em;
		const float *out;
		double		t0 = gnn_now_s(),
					val_auc,
					val_hits,
					test_auc,
					test_hits;
		int64_t		ntneg = ntrain * lc->negatives;

		if (should_stop && should_stop(stop_arg))
		{
			st = gnn_error_set(err, GNN_ERR_CANCELLED, "training cancelled at epoch %d", epoch);
			break;
		}
		gnn_epoch_metrics_init(&em, epoch);
		if (mbc)
		{
			double		l = NAN;

			if ((st = mb_epoch(g, cfg, lc, mbc, &sp, be, model, &opt, &rng, &M, should_stop, stop_arg, &l, err)) != GNN_OK)
				break;
			em.train_loss = (float) l;
			em.compute_s = gnn_now_s() - t0;
		}
		else
		{
			if ((st = gnn_model_forward(model, blocks, &x, true, gnn_rng_next(&rng), &out, err)) != GNN_OK ||
				(st = gnn_backend_error(be, gnn_backend_copy_d2h(be, z, out, sizeof(float) * n * d), err)) != GNN_OK)
				break;
			/* fresh negatives each epoch */
			gnn_linkpred_negatives(&sp, &rng, tneg, ntneg);
			memset(dz, 0, sizeof(float) * n * d);
			em.train_loss = (float) bce_step(z, d, sp.pos, ntrain, tneg, ntneg, dz);
			if ((st = gnn_backend_error(be, gnn_backend_copy_h2d(be, ddz.p, dz, sizeof(float) * n * d), err)) != GNN_OK ||
				(st = gnn_model_backward(model, ddz.p, err)) != GNN_OK ||
				(st = gnn_optim_step(&opt, model, err)) != GNN_OK)
				break;
		}

		/* evaluation: the full-graph pass, or time-aware on sampled neighbourhoods */
		if (mbc && M.temporal)
		{
			if ((st = mb_eval_temporal(g, cfg, mbc, be, model, &M, z, err)) != GNN_OK)
				break;
		}
		else if ((st = gnn_model_forward(model, blocks, &x, false, 0, &out, err)) != GNN_OK ||
				 (st = gnn_backend_error(be, gnn_backend_copy_d2h(be, z, out, sizeof(float) * n * d), err)) != GNN_OK)
			break;
		auc_hits(z, d, sp.pos + ntrain, nval, sp.neg, nval, lc->hits_k, &val_auc, &val_hits);
		auc_hits(z, d, sp.pos + ntrain + nval, ntest, sp.neg + nval, ntest, lc->hits_k, &test_auc, &test_hits);
		/* the AUCs, also in *_acc, which logs of any task read */
		{
			bool		stop = false;

			if ((st = epoch_end(model, cfg, epoch, t0, val_auc, test_auc, test_hits, best_w, &have_best, &best_auc,
								&wait, &em, res, progress, progress_arg, &stop, err)) != GNN_OK || stop)
				break;
		}
	}
	st = run_end(st, &model, have_best, best_w, model_out, res, t_start, err);
done:
	if (mbc)
	{
		gnn_sampler_free(M.sampler);
		gnn_sampler_free(M.esampler);
		free(M.stimes);
		free(M.eval_nodes);
		free(M.order);
		free(M.mark);
		free(M.seeds);
		free(M.lpos);
		free(M.lneg);
		free(M.bneg);
		free(M.z);
		free(M.dz);
		if (be)
			gnn_buf_free(be, &M.ddz);
	}
	gnn_linkpred_split_free(&sp);
	free(tneg);
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
