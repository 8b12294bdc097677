/*
 * test_linkpred: link prediction quality and typed link prediction.
 *
 *  - Cora with the settings the SQL path uses for task 'link_prediction'
 *    (gnn_train_config_default, then gnn_linkpred_train_defaults): GraphSAGE
 *    (gnn.train's default model) and GCN reach test AUC >= 0.90 (GAE, Kipf &
 *    Welling 2016, reports 0.91);
 *  - Cora viewed as a typed graph with one node type and one relation:
 *    edge_type 0 (its own reverse) trains exactly as edge_type -1;
 *  - a hand-built typed graph (users, items; buys / bought_by / similar):
 *    positives are the relation's arcs, held-out pairs lose their arc and
 *    its reverse, negatives pair the relation's endpoint types, training
 *    with GCN and GraphSAGE kinds works on it; bad relations are refused.
 * The Cora parts skip when ../shared/data (or GNN_DATA_DIR) is missing.
 */
#include "check.h"
#include "graph/dataset.h"
#include "train/train_mb.h"

#include <math.h>

/* what gnn.train(..., task => 'link_prediction') trains with when no option is given */
static void
sql_link_config(gnn_model_kind kind, gnn_train_config *cfg)
{
	gnn_train_config_default(kind, cfg);
	cfg->layers = 2;
	cfg->heads = 1;
	cfg->out_heads = 1;
	gnn_linkpred_train_defaults(cfg);
	cfg->seed = 1;
	/* one thread: OpenMP barriers crawl on a loaded 2-core machine */
	cfg->threads = 1;
}

static void
cora_quality(const gnn_graph *g)
{
	const char *names[] = {"graphsage", "gcn"};
	gnn_model_kind kinds[] = {GNN_MODEL_SAGE, GNN_MODEL_GCN};

	for (int m = 0; m < 2; m++)
	{
		gnn_train_config cfg;
		gnn_linkpred_config lc;
		gnn_linkpred_result r;
		gnn_error	err;
		gnn_status	st;

		sql_link_config(kinds[m], &cfg);
		gnn_linkpred_config_default(&lc);
		st = gnn_train_linkpred(g, &cfg, &lc, NULL, NULL, NULL, NULL, NULL, NULL, &r, &err);
		NOTE("  %s: val AUC %.4f, test AUC %.4f, Hits@%d %.4f, best epoch %d of %d%s, %.2f s", names[m],
			 r.val_auc, r.test_auc, lc.hits_k, r.test_hits, r.best_epoch, r.epochs_run,
			 r.stopped_early ? " (stopped early)" : "", r.seconds);
		CHECK(st == GNN_OK && r.test_auc >= 0.90,
			  "link prediction defaults, %s on cora: test AUC %.4f >= 0.90 on %lld held-out edges %s",
			  names[m], r.test_auc, (long long) r.test_edges, st == GNN_OK ? "" : err.msg);
	}
}

/* minibatch link prediction with gnn.train's defaults and fan-outs [10, 10]: the same bar */
static void
cora_minibatch(const gnn_graph *g)
{
	gnn_train_config cfg;
	gnn_linkpred_config lc;
	gnn_minibatch_config mbc;
	gnn_linkpred_result r;
	gnn_backend *be = NULL;
	gnn_model  *m = NULL;
	gnn_error	err;
	gnn_status	st;

	sql_link_config(GNN_MODEL_SAGE, &cfg);
	gnn_linkpred_config_default(&lc);
	lc.negatives = 3;			/* gnn.train's default on minibatches */
	memset(&mbc, 0, sizeof(mbc));
	mbc.sampler.kind = GNN_SAMPLER_NEIGHBOR;
	mbc.sampler.nhops = 2;
	mbc.sampler.fanouts[0] = mbc.sampler.fanouts[1] = 10;
	mbc.sampler.nthreads = 1;
	mbc.batch_size = 2048;		/* gnn.train's default for link prediction: pairs per batch */
	if (check_short())
		cfg.epochs = 40;		/* the sanitizer run: fewer epochs, a lower bar below */
	gnn_backend_cpu_create(1, &be, &err);
	st = gnn_train_linkpred_mb(g, &cfg, &lc, &mbc, be, NULL, NULL, NULL, NULL, &m, &r, &err);
	NOTE("  minibatch graphsage: val AUC %.4f, test AUC %.4f, best epoch %d of %d%s, %.2f s", r.val_auc, r.test_auc,
		 r.best_epoch, r.epochs_run, r.stopped_early ? " (stopped early)" : "", r.seconds);
	CHECK(st == GNN_OK && m && r.test_auc >= (check_short() ? 0.80 : 0.90),
		  "minibatch link prediction (fan-outs 10, 10; batches of 2048 pairs, 3 negatives each), graphsage on cora: test AUC %.4f %s",
		  r.test_auc, st == GNN_OK ? "" : err.msg);
	gnn_model_free(m);
	{
		gnn_minibatch_config t = mbc;

		t.sampler.temporal = true;
		st = gnn_train_linkpred_mb(g, &cfg, &lc, &t, be, NULL, NULL, NULL, NULL, &m, &r, &err);
		CHECK(st != GNN_OK && !m, "time-aware minibatch link prediction on a graph without times refused: %s", err.msg);
	}
	gnn_backend_destroy(be);
}

/* Cora as a typed graph with one node type and one relation, its own reverse */
static void
cora_typed_view(const gnn_graph *cora)
{
	gnn_graph	g = *cora;
	gnn_edge_type et = {0, 0, cora->num_edges};
	int64_t		type_ptr[2] = {0, cora->num_nodes};
	gnn_train_config cfg;
	gnn_linkpred_config lc;
	gnn_linkpred_result a,
				b;
	gnn_error	err;
	gnn_status	sa,
				sb;
	gnn_linkpred_split sp;
	gnn_rng		rng;

	g.num_node_types = 1;
	g.type_ptr = type_ptr;
	g.num_edge_types = 1;
	g.etypes = &et;
	sql_link_config(GNN_MODEL_SAGE, &cfg);
	cfg.epochs = 15;
	gnn_linkpred_config_default(&lc);
	sa = gnn_train_linkpred(cora, &cfg, &lc, NULL, NULL, NULL, NULL, NULL, NULL, &a, &err);
	lc.edge_type = 0;
	lc.reverse_edge_type = 0;
	sb = gnn_train_linkpred(&g, &cfg, &lc, NULL, NULL, NULL, NULL, NULL, NULL, &b, &err);
	CHECK(sa == GNN_OK && sb == GNN_OK && a.test_auc == b.test_auc && a.val_auc == b.val_auc &&
		  a.best_epoch == b.best_epoch && a.test_edges == b.test_edges,
		  "cora viewed as 1 type / 1 relation: edge_type 0 (own reverse) trains as -1 (test AUC %.6f vs %.6f)",
		  a.test_auc, b.test_auc);

	/* cora's undirected edges are the positives; held-out ones lose both arcs */
	gnn_rng_seed(&rng, 7);
	gnn_linkpred_config_default(&lc);
	sa = gnn_linkpred_split_create(cora, &lc, &rng, &sp, &err);
	CHECK(sa == GNN_OK && sp.n_train + sp.n_val + sp.n_test == 5278 &&
		  sp.graph.nnz == cora->num_edges - 2 * (sp.n_val + sp.n_test),
		  "cora split: %lld + %lld + %lld = 5278 undirected edges; training graph %lld arcs = 10556 - 2 x held out",
		  (long long) sp.n_train, (long long) sp.n_val, (long long) sp.n_test, (long long) sp.graph.nnz);
	gnn_linkpred_split_free(&sp);
}

/* ------------------------------------------------------------------ a typed graph by hand */

enum
{
	USERS = 240,
	ITEMS = 160,
	GROUPS = 4,
	DIM = 12,
	REL_BUYS = 0,				/* user -> item */
	REL_BOUGHT_BY = 1,			/* item -> user, the reverse of buys */
	REL_SIMILAR = 2				/* item -> item, symmetric */
};

typedef struct arc
{
	int32_t		s;
	int32_t		d;
	int16_t		r;
} arc;

typedef struct typed_graph
{
	gnn_graph	g;
	int64_t		type_ptr[3];
	gnn_edge_type et[3];
	int16_t		node_type[USERS + ITEMS];
	float		feat[(USERS + ITEMS) * DIM];
	arc		   *arcs;
	int64_t		m;
	int64_t		indptr[USERS + ITEMS + 1],
				rindptr[USERS + ITEMS + 1];
	int32_t    *indices,
			   *rindices;
	int16_t    *arc_type,
			   *rarc_type;
} typed_graph;

static int
cmp_out(const void *a, const void *b)
{
	const arc  *x = a,
			   *y = b;

	if (x->s != y->s)
		return x->s - y->s;
	if (x->d != y->d)
		return x->d - y->d;
	return x->r - y->r;
}

static int
cmp_in(const void *a, const void *b)
{
	const arc  *x = a,
			   *y = b;

	if (x->d != y->d)
		return x->d - y->d;
	if (x->s != y->s)
		return x->s - y->s;
	return x->r - y->r;
}

static int
group_of(int32_t v)
{
	return v < USERS ? v % GROUPS : (v - USERS) % GROUPS;
}

/*
 * Users and items in GROUPS communities: a user buys 6 items, mostly of its
 * own group; similar items pair within a group.  Features: a noisy group
 * indicator, so the structure is learnable but not given away.
 */
static void
typed_graph_build(typed_graph *t)
{
	int64_t		n = USERS + ITEMS,
				cap = (int64_t) USERS * 6 * 2 + ITEMS * 4 * 2;
	gnn_rng		rng;

	memset(t, 0, sizeof(*t));
	gnn_rng_seed(&rng, 42);
	t->arcs = malloc(sizeof(arc) * cap);
	for (int32_t u = 0; u < USERS; u++)
		for (int k = 0; k < 6; k++)
		{
			int			grp = gnn_rng_double(&rng) < 0.9 ? group_of(u) : (int) gnn_rng_below(&rng, GROUPS);
			int32_t		i = USERS + grp + GROUPS * (int32_t) gnn_rng_below(&rng, ITEMS / GROUPS);
			bool		dup = false;

			for (int64_t e = 0; e < t->m; e++)
				dup |= t->arcs[e].s == u && t->arcs[e].d == i && t->arcs[e].r == REL_BUYS;
			if (dup)
				continue;
			t->arcs[t->m++] = (arc) {u, i, REL_BUYS};
			t->arcs[t->m++] = (arc) {i, u, REL_BOUGHT_BY};
		}
	for (int32_t i = USERS; i < n; i++)
		for (int k = 0; k < 2; k++)
		{
			int32_t		j = USERS + group_of(i) + GROUPS * (int32_t) gnn_rng_below(&rng, ITEMS / GROUPS);
			bool		dup = false;

			for (int64_t e = 0; e < t->m; e++)
				dup |= t->arcs[e].s == i && t->arcs[e].d == j && t->arcs[e].r == REL_SIMILAR;
			if (j == i || dup)
				continue;
			t->arcs[t->m++] = (arc) {i, j, REL_SIMILAR};
			t->arcs[t->m++] = (arc) {j, i, REL_SIMILAR};
		}
	t->indices = malloc(sizeof(int32_t) * t->m);
	t->rindices = malloc(sizeof(int32_t) * t->m);
	t->arc_type = malloc(sizeof(int16_t) * t->m);
	t->rarc_type = malloc(sizeof(int16_t) * t->m);
	qsort(t->arcs, t->m, sizeof(arc), cmp_out);
	for (int64_t e = 0; e < t->m; e++)
	{
		t->indices[e] = t->arcs[e].d;
		t->arc_type[e] = t->arcs[e].r;
		t->indptr[t->arcs[e].s + 1]++;
		t->et[t->arcs[e].r].count++;
	}
	qsort(t->arcs, t->m, sizeof(arc), cmp_in);
	for (int64_t e = 0; e < t->m; e++)
	{
		t->rindices[e] = t->arcs[e].s;
		t->rarc_type[e] = t->arcs[e].r;
		t->rindptr[t->arcs[e].d + 1]++;
	}
	for (int64_t v = 0; v < n; v++)
	{
		t->indptr[v + 1] += t->indptr[v];
		t->rindptr[v + 1] += t->rindptr[v];
		t->node_type[v] = v < USERS ? 0 : 1;
		for (int k = 0; k < DIM; k++)
			t->feat[v * DIM + k] = (float) (gnn_rng_double(&rng) * 0.5 +
											(k == group_of((int32_t) v) + (v < USERS ? 0 : GROUPS) ? 1.0 : 0.0));
	}
	t->type_ptr[0] = 0;
	t->type_ptr[1] = USERS;
	t->type_ptr[2] = n;
	t->et[REL_BUYS].src_type = 0;
	t->et[REL_BUYS].dst_type = 1;
	t->et[REL_BOUGHT_BY].src_type = 1;
	t->et[REL_BOUGHT_BY].dst_type = 0;
	t->et[REL_SIMILAR].src_type = 1;
	t->et[REL_SIMILAR].dst_type = 1;

	t->g.num_nodes = n;
	t->g.num_edges = t->m;
	t->g.indptr = t->indptr;
	t->g.indices = t->indices;
	t->g.rindptr = t->rindptr;
	t->g.rindices = t->rindices;
	t->g.feat_kind = GNN_FEAT_DENSE;
	t->g.feat_dim = DIM;
	t->g.feat = t->feat;
	t->g.num_node_types = 2;
	t->g.type_ptr = t->type_ptr;
	t->g.node_type = t->node_type;
	t->g.num_edge_types = 3;
	t->g.etypes = t->et;
	t->g.arc_type = t->arc_type;
	t->g.rarc_type = t->rarc_type;
}

static void
typed_graph_free(typed_graph *t)
{
	free(t->arcs);
	free(t->indices);
	free(t->rindices);
	free(t->arc_type);
	free(t->rarc_type);
}

/* arc u -> v of relation r in an out-CSR (by_dst false) or in-CSR */
static bool
has(const int64_t *ptr, const int32_t *idx, const int16_t *rel, bool by_dst, int32_t u, int32_t v, int r)
{
	int32_t		row = by_dst ? v : u,
				col = by_dst ? u : v;

	for (int64_t e = ptr[row]; e < ptr[row + 1]; e++)
		if (idx[e] == col && (rel ? rel[e] : 0) == r)
			return true;
	return false;
}

static bool
in_graph(const gnn_graph *g, int32_t u, int32_t v, int r)
{
	return has(g->indptr, g->indices, g->arc_type, false, u, v, r);
}

static bool
in_train(const gnn_linkpred_split *s, int32_t u, int32_t v, int r)
{
	return has(s->graph.indptr, s->graph.indices, s->graph.etypes, true, u, v, r);
}

static void
typed_split(const typed_graph *t)
{
	const gnn_graph *g = &t->g;
	gnn_linkpred_config lc;
	gnn_linkpred_split sp;
	gnn_linkpred_pair neg[2000];
	gnn_rng		rng;
	gnn_error	err;
	gnn_status	st;
	bool		ok = true;
	int64_t		npos,
				held,
				hits_held = 0;

	gnn_linkpred_config_default(&lc);
	lc.holdout = 0.2;
	lc.edge_type = REL_BUYS;
	lc.reverse_edge_type = REL_BOUGHT_BY;
	gnn_rng_seed(&rng, 3);
	st = gnn_linkpred_split_create(g, &lc, &rng, &sp, &err);
	CHECK(st == GNN_OK, "typed split (buys, reverse bought_by): %s", st == GNN_OK ? "ok" : err.msg);
	if (st != GNN_OK)
		return;
	npos = sp.n_train + sp.n_val + sp.n_test;
	held = sp.n_val + sp.n_test;
	CHECK(npos == t->et[REL_BUYS].count && sp.src_lo == 0 && sp.src_hi == USERS && sp.dst_lo == USERS &&
		  sp.dst_hi == USERS + ITEMS, "positives: the %lld arcs of buys, users -> items", (long long) npos);
	for (int64_t i = 0; i < npos; i++)
		ok &= sp.pos[i].u < USERS && sp.pos[i].v >= USERS && in_graph(g, sp.pos[i].u, sp.pos[i].v, REL_BUYS);
	CHECK(ok, "every positive is an arc of buys");
	ok = sp.graph.nnz == t->m - 2 * held && sp.graph.etypes != NULL && sp.graph.dst_ntype == g->node_type;
	for (int64_t i = 0; i < npos; i++)
	{
		bool		kept = i < sp.n_train;
		int32_t		u = sp.pos[i].u,
					v = sp.pos[i].v;

		ok &= in_train(&sp, u, v, REL_BUYS) == kept && in_train(&sp, v, u, REL_BOUGHT_BY) == kept;
	}
	for (int64_t v = 0; v < g->num_nodes; v++)
		for (int64_t e = g->indptr[v]; e < g->indptr[v + 1]; e++)
			if (g->arc_type[e] == REL_SIMILAR)
				ok &= in_train(&sp, (int32_t) v, g->indices[e], REL_SIMILAR);
	CHECK(ok, "training graph: %lld arcs = %lld - 2 x %lld held out; a held-out pair loses buys and bought_by, training pairs and similar arcs stay, typed entries and destination types",
		  (long long) sp.graph.nnz, (long long) t->m, (long long) held);
	ok = true;
	for (int64_t i = 0; i < held; i++)
		ok &= sp.neg[i].u < USERS && sp.neg[i].v >= USERS && !in_graph(g, sp.neg[i].u, sp.neg[i].v, REL_BUYS);
	CHECK(ok, "evaluation negatives pair a user with an item it did not buy");
	ok = true;
	gnn_linkpred_negatives(&sp, &rng, neg, 2000);
	for (int i = 0; i < 2000; i++)
	{
		ok &= neg[i].u < USERS && neg[i].v >= USERS && !in_train(&sp, neg[i].u, neg[i].v, REL_BUYS);
		hits_held += in_graph(g, neg[i].u, neg[i].v, REL_BUYS);
	}
	CHECK(ok, "training negatives pair a user with an item not bought in the training graph (%lld of 2000 are held-out pairs)",
		  (long long) hits_held);
	gnn_linkpred_split_free(&sp);

	/* a symmetric relation: each unordered pair once, both arcs held out */
	lc.edge_type = REL_SIMILAR;
	lc.reverse_edge_type = REL_SIMILAR;
	st = gnn_linkpred_split_create(g, &lc, &rng, &sp, &err);
	ok = st == GNN_OK && sp.n_train + sp.n_val + sp.n_test == t->et[REL_SIMILAR].count / 2;
	for (int64_t i = 0; ok && i < sp.n_train + sp.n_val + sp.n_test; i++)
	{
		bool		kept = i < sp.n_train;

		ok &= sp.pos[i].u < sp.pos[i].v && sp.pos[i].u >= USERS &&
			in_train(&sp, sp.pos[i].u, sp.pos[i].v, REL_SIMILAR) == kept &&
			in_train(&sp, sp.pos[i].v, sp.pos[i].u, REL_SIMILAR) == kept;
	}
	CHECK(ok, "similar (its own reverse): %lld unordered pairs, held-out ones lose both arcs",
		  (long long) (sp.n_train + sp.n_val + sp.n_test));
	gnn_linkpred_split_free(&sp);

	/* every arc, the graph taken as undirected: each linked pair once */
	lc.edge_type = -1;
	lc.reverse_edge_type = -1;
	st = gnn_linkpred_split_create(g, &lc, &rng, &sp, &err);
	CHECK(st == GNN_OK && sp.n_train + sp.n_val + sp.n_test == t->et[REL_BUYS].count + t->et[REL_SIMILAR].count / 2 &&
		  sp.graph.nnz == t->m - 2 * (sp.n_val + sp.n_test),
		  "edge type -1 on a typed graph: %lld linked pairs, held-out ones lose both arcs",
		  (long long) (sp.n_train + sp.n_val + sp.n_test));
	gnn_linkpred_split_free(&sp);

	/* bad relations */
	lc.edge_type = 3;
	lc.reverse_edge_type = -1;
	CHECK(gnn_linkpred_split_create(g, &lc, &rng, &sp, &err) == GNN_ERR_INVALID, "edge type 3 of 3 refused: %s", err.msg);
	lc.edge_type = REL_BUYS;
	lc.reverse_edge_type = REL_SIMILAR;
	CHECK(gnn_linkpred_split_create(g, &lc, &rng, &sp, &err) == GNN_ERR_INVALID,
		  "a reverse relation without swapped endpoint types refused: %s", err.msg);
	lc.edge_type = -1;
	lc.reverse_edge_type = REL_BOUGHT_BY;
	CHECK(gnn_linkpred_split_create(g, &lc, &rng, &sp, &err) == GNN_ERR_INVALID,
		  "a reverse relation without a relation refused: %s", err.msg);
}

static void
typed_train(const typed_graph *t)
{
	const char *names[] = {"gcn", "graphsage"};
	gnn_model_kind kinds[] = {GNN_MODEL_GCN, GNN_MODEL_SAGE};

	for (int m = 0; m < 2; m++)
	{
		gnn_train_config cfg;
		gnn_linkpred_config lc;
		gnn_linkpred_result r;
		gnn_error	err;
		gnn_status	st;

		sql_link_config(kinds[m], &cfg);
		cfg.hidden = 32;
		cfg.epochs = 100;
		gnn_linkpred_config_default(&lc);
		lc.holdout = 0.2;
		lc.edge_type = REL_BUYS;
		lc.reverse_edge_type = REL_BOUGHT_BY;
		st = gnn_train_linkpred(&t->g, &cfg, &lc, NULL, NULL, NULL, NULL, NULL, NULL, &r, &err);
		NOTE("  typed %s: val AUC %.4f, test AUC %.4f, best epoch %d of %d, %.2f s", names[m], r.val_auc,
			 r.test_auc, r.best_epoch, r.epochs_run, r.seconds);
		/* a scorer that knows the groups gets about 0.83 (in-group items among the
		 * negatives tie with the positives); chance is 0.5 */
		CHECK(st == GNN_OK && r.test_auc >= 0.75, "typed link prediction (buys) with %s: test AUC %.4f >= 0.75 %s",
			  names[m], r.test_auc, st == GNN_OK ? "" : err.msg);
	}
}

int
main(void)
{
	const char *dir = check_data_dir();
	typed_graph t;

	typed_graph_build(&t);
	typed_split(&t);
	typed_train(&t);
	typed_graph_free(&t);

	if (!dir)
		CHECK_SKIP("no ../shared/data (set GNN_DATA_DIR)", "link prediction on cora");
	else
	{
		char		path[600];
		gnn_dataset cora;
		gnn_error	err;

		snprintf(path, sizeof(path), "%s/cora", dir);
		if (gnn_dataset_load(path, 0, &cora, &err) != GNN_OK)
			CHECK_SKIP(err.msg, "link prediction on cora");
		else
		{
			cora_typed_view(&cora.g);
			cora_quality(&cora.g);
			cora_minibatch(&cora.g);
			gnn_dataset_free(&cora);
		}
	}
	return check_done();
}
