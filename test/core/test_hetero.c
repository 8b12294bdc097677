/*
 * test_hetero: relational models (R-GCN, heterogeneous GraphSAGE) trained
 * full batch on typed graphs, regression, and AUROC.
 *
 * The graphs are built by hand as gnn_graph views (the typed graph build
 * lives elsewhere): node indices grouped by type, the reverse CSR with the
 * relation of every arc (rarc_type) and the type of every node.
 *
 * (1) Relation-selective graph: type 0 "A" nodes (the targets, features
 *     only their type's constant column) each have SIG in-arcs of relation 0
 *     from "B" nodes of their own class and NOISE in-arcs of relation 1 from
 *     random B nodes; B nodes show their class as a one-hot feature.  Only a
 *     model that tells the relations apart can read the class reliably: a
 *     type-blind mean over all in-neighbours sees SIG + NOISE/C votes for the
 *     class against NOISE/C for each other one.
 * (2) Regression: targets a linear function of the in-neighbours' mean
 *     feature (and the node's own), which a one-layer linear model fits.
 * (3) AUROC against a brute-force count over positive / negative pairs, ties
 *     counting one half.
 * (4) Minibatch regression (gnn_train_minibatch, sampled blocks): targets the
 *     mean of the in-neighbours' feature 0 plus noise, on a homogeneous graph,
 *     on a typed graph (target type 1), and on a typed graph with times whose
 *     targets average only the neighbours not later than the node (temporal
 *     sampling).  The test MAE must beat predicting the training mean by a
 *     wide margin, the metrics must be filled as full-batch regression fills
 *     them, the kept epoch must be the best by validation, and two runs with
 *     the same seed must agree bit for bit.
 */
#include "check.h"
#include "typed_graph.h"

typedef tg_arc arc;
#include "train/eval.h"
#include "nn/serialize.h"
#include "train/train.h"
#include "train/train_mb.h"

#include <math.h>
#include <time.h>

/* ------------------------------------------------------------------ typed graph by hand */

typedef struct hgraph
{
	gnn_graph	g;
	int64_t    *rptr;
	int32_t    *ridx;
	int16_t    *rtype;
	int16_t    *ntype;
	float	   *feat;
	int32_t    *labels;
	uint8_t    *split;
	float	   *targets;
	int64_t    *time;
	int64_t		type_ptr[3];
	gnn_edge_type et[2];
} hgraph;

/* reverse CSR of arcs (sorted by destination, source, relation; same-relation duplicates merged) */
static void
hgraph_arcs(hgraph *h, int64_t n, arc *arcs, int64_t m)
{
	int64_t		k = tg_reverse_csr(arcs, m, n, &h->rptr, &h->ridx, &h->rtype);

	h->g.num_nodes = n;
	h->g.num_edges = k;
	h->g.rindptr = h->rptr;
	h->g.rindices = h->ridx;
	h->g.rarc_type = h->rtype;
}

static void
hgraph_free(hgraph *h)
{
	free(h->rptr);
	free(h->ridx);
	free(h->rtype);
	free(h->ntype);
	free(h->feat);
	free(h->labels);
	free(h->split);
	free(h->targets);
	free(h->time);
}

#define NA 600					/* targets */
#define NB 240					/* class carriers */
#define SIG 2					/* relation-0 arcs per target, all from its class */
#define NOISE 16				/* relation-1 arcs per target, from anyone */

/* The relation-selective graph with C classes (see the top). */
static void
make_selective(hgraph *h, int C, uint64_t seed)
{
	int64_t		n = NA + NB;
	int32_t		dim = 1 + 1 + C;	/* [A const | B const, B one-hot class] */
	arc		   *arcs = malloc(sizeof(arc) * NA * (SIG + NOISE));
	int32_t    *cls = malloc(sizeof(int32_t) * n);
	int64_t		m = 0;
	gnn_rng		r;

	memset(h, 0, sizeof(*h));
	gnn_rng_seed(&r, seed);
	h->ntype = malloc(sizeof(int16_t) * n);
	h->feat = calloc(n * dim, sizeof(float));
	h->labels = malloc(sizeof(int32_t) * n);
	h->split = malloc(n);
	for (int64_t v = 0; v < n; v++)
	{
		bool		a = v < NA;

		cls[v] = a ? (int32_t) gnn_rng_below(&r, C) : (int32_t) ((v - NA) % C);
		h->ntype[v] = a ? 0 : 1;
		h->labels[v] = a ? cls[v] : -1;
		h->split[v] = !a ? GNN_SPLIT_NONE : v % 5 < 3 ? GNN_SPLIT_TRAIN : v % 5 == 3 ? GNN_SPLIT_VAL : GNN_SPLIT_TEST;
		if (a)
			h->feat[v * dim] = 1.0f;
		else
		{
			h->feat[v * dim + 1] = 1.0f;
			h->feat[v * dim + 2 + cls[v]] = 1.0f;
		}
	}
	for (int32_t v = 0; v < NA; v++)
	{
		for (int k = 0; k < SIG; k++)
		{
			/* a B node of v's class: B nodes NA + C*q + cls */
			int32_t		q = (int32_t) gnn_rng_below(&r, NB / C);

			arcs[m++] = (arc) {v, NA + C * q + cls[v], 0};
		}
		for (int k = 0; k < NOISE; k++)
			arcs[m++] = (arc) {v, NA + (int32_t) gnn_rng_below(&r, NB), 1};
	}
	hgraph_arcs(h, n, arcs, m);
	h->g.feat_kind = GNN_FEAT_DENSE;
	h->g.feat_dim = dim;
	h->g.feat = h->feat;
	h->g.labels = h->labels;
	h->g.num_classes = C;
	h->g.split = h->split;
	h->g.num_node_types = 2;
	h->type_ptr[0] = 0;
	h->type_ptr[1] = NA;
	h->type_ptr[2] = n;
	h->g.type_ptr = h->type_ptr;
	h->g.node_type = h->ntype;
	h->g.num_edge_types = 2;
	h->et[0] = (gnn_edge_type) {1, 0, 0};
	h->et[1] = (gnn_edge_type) {1, 0, 0};
	for (int64_t e = 0; e < h->g.num_edges; e++)
		h->et[h->rtype[e]].count++;
	h->g.etypes = h->et;
	for (int64_t v = 0; v < n; v++)
	{
		h->g.n_train += h->split[v] == GNN_SPLIT_TRAIN;
		h->g.n_val += h->split[v] == GNN_SPLIT_VAL;
		h->g.n_test += h->split[v] == GNN_SPLIT_TEST;
	}
	free(arcs);
	free(cls);
}

static gnn_status
train(const gnn_graph *g, gnn_model_kind kind, gnn_task task, int epochs, gnn_train_result *res,
	  gnn_error *err)
{
	gnn_train_config cfg;

	gnn_train_config_default(kind, &cfg);
	cfg.hidden = 16;
	cfg.layers = 2;
	cfg.dropout = 0.1f;
	cfg.lr = 0.01f;
	cfg.weight_decay = 5e-4f;
	cfg.epochs = epochs;
	cfg.threads = 1;
	cfg.seed = 7;
	cfg.task = task;
	cfg.select = GNN_SELECT_VAL_LOSS;
	return gnn_train_full(g, &cfg, NULL, NULL, NULL, NULL, NULL, NULL, res, err);
}

static void
test_selective(void)
{
	hgraph		h;
	gnn_train_result res;
	gnn_error	err;
	gnn_status	st;
	const gnn_model_kind kinds[] = {GNN_MODEL_RGCN, GNN_MODEL_HSAGE, GNN_MODEL_GCN, GNN_MODEL_SAGE};
	float		acc[4];

	make_selective(&h, 4, 1);
	for (int k = 0; k < 4; k++)
	{
		st = train(&h.g, kinds[k], GNN_TASK_CLASSIFY, 120, &res, &err);
		CHECK(st == GNN_OK, "%s trains on the typed graph%s%s", gnn_model_kind_name(kinds[k]),
			  st ? ": " : "", st ? err.msg : "");
		acc[k] = st == GNN_OK ? res.best.test_acc : NAN;
		NOTE("%s: test accuracy %.3f (val %.3f, best epoch %d), test AUROC %g",
			 gnn_model_kind_name(kinds[k]), acc[k], res.best.val_acc, res.best_epoch, res.best.test_auc);
		if (st == GNN_OK)
			CHECK(isnan(res.best.test_auc) && isnan(res.best.test_mae),
				  "%s: four classes give no AUROC and no MAE (NAN)", gnn_model_kind_name(kinds[k]));
	}
	CHECK(acc[0] >= 0.95f, "rgcn reads the signal relation: test accuracy %.3f >= 0.95", acc[0]);
	CHECK(acc[1] >= 0.95f, "hetero_sage reads the signal relation: test accuracy %.3f >= 0.95", acc[1]);
	CHECK(acc[2] <= 0.75f, "type-blind gcn cannot: test accuracy %.3f <= 0.75", acc[2]);
	CHECK(acc[3] <= 0.75f, "type-blind graphsage cannot: test accuracy %.3f <= 0.75", acc[3]);
	hgraph_free(&h);

	/* two classes: AUROC reported, and high for the relational model */
	make_selective(&h, 2, 2);
	st = train(&h.g, GNN_MODEL_RGCN, GNN_TASK_CLASSIFY, 80, &res, &err);
	CHECK(st == GNN_OK && res.best.test_auc >= 0.95f && res.best.val_auc >= 0.95f &&
		  res.best.test_auc <= 1.0f,
		  "rgcn, two classes: val AUROC %.3f, test AUROC %.3f >= 0.95", res.best.val_auc, res.best.test_auc);
	st = train(&h.g, GNN_MODEL_GCN, GNN_TASK_CLASSIFY, 80, &res, &err);
	CHECK(st == GNN_OK && res.best.test_auc >= 0.0f && res.best.test_auc < 0.95f,
		  "gcn, two classes: test AUROC %.3f, lower", res.best.test_auc);
	hgraph_free(&h);
}

/* A relational model on a graph with more relations than the model: refused clearly. */
static void
test_checks(void)
{
	gnn_model_config c;
	gnn_error	err;
	gnn_train_config tc;
	gnn_model_kind k;

	gnn_model_config_default(GNN_MODEL_RGCN, &c);
	c.in_dim = 4; c.out_dim = 2;
	c.num_relations = 3; c.num_bases = 4;
	CHECK(gnn_model_config_check(&c, &err) == GNN_ERR_INVALID && strstr(err.msg, "num_bases"),
		  "more bases than relations refused: %s", err.msg);
	c.num_bases = 2; c.num_relations = 0;
	CHECK(gnn_model_config_check(&c, &err) == GNN_ERR_INVALID && strstr(err.msg, "num_relations"),
		  "zero relations refused: %s", err.msg);
	c.num_relations = 3; c.num_node_types = 65;
	CHECK(gnn_model_config_check(&c, &err) == GNN_ERR_INVALID && strstr(err.msg, "num_node_types"),
		  "too many node types refused: %s", err.msg);
	c.num_node_types = 2;
	CHECK(gnn_model_config_check(&c, &err) == GNN_OK, "a valid rgcn configuration passes");
	/* parameters: proj, then per layer bases, coef, root, bias */
	c.hidden = 8; c.layers = 2;
	CHECK(gnn_model_config_params(&c, NULL, NULL) ==
		  4 * 8 + (2 * 8 * 8 + 3 * 2 + 8 * 8 + 8) + (2 * 8 * 2 + 3 * 2 + 8 * 2 + 2),
		  "rgcn parameter count with bases");
	gnn_model_config_default(GNN_MODEL_HSAGE, &c);
	c.in_dim = 4; c.out_dim = 2; c.hidden = 8; c.layers = 1; c.num_relations = 3; c.num_node_types = 2;
	CHECK(gnn_model_config_params(&c, NULL, NULL) == 4 * 8 + 3 * 8 * 2 + 2 * 8 * 2 + 2 * 2,
		  "hetero_sage parameter count (per-type root and bias)");
	CHECK(strcmp(gnn_model_kind_name(GNN_MODEL_RGCN), "rgcn") == 0 &&
		  strcmp(gnn_model_kind_name(GNN_MODEL_HSAGE), "hetero_sage") == 0, "kind names");
	CHECK(gnn_parse_model_kind("rgcn", &k) && k == GNN_MODEL_RGCN &&
		  gnn_parse_model_kind("hetero_sage", &k) && k == GNN_MODEL_HSAGE &&
		  gnn_parse_model_kind("hsage", &k) && k == GNN_MODEL_HSAGE, "kind names parse");
	gnn_train_config_default(GNN_MODEL_GCN, &tc);
	tc.num_bases = 2;
	CHECK(gnn_train_config_check(&tc, &err) == GNN_ERR_INVALID, "num_bases on gcn refused: %s", err.msg);
	tc.num_bases = 0;
	tc.task = 7;
	CHECK(gnn_train_config_check(&tc, &err) == GNN_ERR_INVALID, "unknown task refused: %s", err.msg);

	/* a block with a relation the model does not have */
	{
		hgraph		h;
		gnn_train_config cfg;
		gnn_train_result res;
		gnn_backend *be;
		gnn_model  *m = NULL;
		gnn_model_config mc;
		gnn_rng		r;
		gnn_eval_data d;
		gnn_dblock *blocks[GNN_MAX_LAYERS];
		const float *lg;

		make_selective(&h, 2, 3);
		gnn_backend_cpu_create(1, &be, &err);
		gnn_train_config_default(GNN_MODEL_RGCN, &cfg);
		gnn_train_model_config_for(&cfg, &h.g, &mc, &err);
		CHECK(mc.num_relations == 2 && mc.num_node_types == 2 && mc.out_dim == 2,
			  "the model configuration takes the graph's relations and node types");
		mc.num_relations = 1;
		gnn_rng_seed(&r, 1);
		gnn_model_create(be, &mc, &r, &m, &err);
		gnn_eval_data_create(be, &h.g, true, &d, &err);
		for (int l = 0; l < GNN_MAX_LAYERS; l++)
			blocks[l] = &d.blk;
		CHECK(gnn_model_forward(m, blocks, &d.x, false, 0, &lg, &err) == GNN_ERR_INVALID &&
			  strstr(err.msg, "relation"), "a block with more relations than the model is refused: %s", err.msg);
		gnn_model_free(m);
		gnn_eval_data_free(be, &d);
		gnn_backend_destroy(be);

		/* regression without targets */
		cfg.task = GNN_TASK_REGRESS;
		CHECK(gnn_train_full(&h.g, &cfg, NULL, NULL, NULL, NULL, NULL, NULL, &res, &err) == GNN_ERR_EMPTY &&
			  strstr(err.msg, "target"), "regression on a graph without targets refused: %s", err.msg);
		hgraph_free(&h);
	}
}

/* ------------------------------------------------------------------ inference forward blocks */

/* gnn_model_infer (forward-only blocks) gives the evaluation forward's logits */
static void
test_infer(void)
{
	hgraph		h;
	gnn_backend *be;
	gnn_error	err;
	gnn_train_config cfg;
	gnn_train_result res;
	gnn_model  *m = NULL;
	gnn_eval_data d;
	gnn_dblock *blocks[GNN_MAX_LAYERS];
	const float *lg;
	int64_t		n;
	float	   *a,
			   *b;
	double		maxd = 0;

	make_selective(&h, 3, 4);
	n = h.g.num_nodes;
	gnn_backend_cpu_create(1, &be, &err);
	for (int k = 0; k < 2; k++)
	{
		gnn_train_config_default(k ? GNN_MODEL_HSAGE : GNN_MODEL_RGCN, &cfg);
		cfg.epochs = 5;
		cfg.num_bases = k ? 0 : 2;
		if (gnn_train_full(&h.g, &cfg, be, NULL, NULL, NULL, NULL, &m, &res, &err) != GNN_OK)
		{
			CHECK(0, "train for inference: %s", err.msg);
			continue;
		}
		a = malloc(sizeof(float) * n * 3);
		b = malloc(sizeof(float) * n * 3);
		gnn_eval_data_create(be, &h.g, true, &d, &err);
		for (int l = 0; l < GNN_MAX_LAYERS; l++)
			blocks[l] = &d.blk;
		gnn_model_forward(m, blocks, &d.x, false, 0, &lg, &err);
		gnn_backend_copy_d2h(be, a, lg, sizeof(float) * n * 3);
		CHECK(gnn_model_infer(m, &h.g, true, -1, false, b, &err) == GNN_OK, "%s: inference runs",
			  gnn_model_kind_name(cfg.model));
		maxd = 0;
		for (int64_t i = 0; i < n * 3; i++)
			maxd = fmax(maxd, fabs(a[i] - b[i]));
		CHECK(maxd == 0, "%s: inference on forward-only blocks equals the evaluation forward (max |diff| %g)",
			  gnn_model_kind_name(cfg.model), maxd);
		{
			/* a blob keeps the relations, node types and bases */
			void	   *blob = NULL;
			size_t		size = 0;
			gnn_model  *m2 = NULL;
			gnn_status	st2 = gnn_model_serialize(m, NULL, &blob, &size, &err);

			if (st2 == GNN_OK)
				st2 = gnn_model_deserialize(be, blob, size, &m2, NULL, &err);
			if (st2 == GNN_OK)
				st2 = gnn_model_infer(m2, &h.g, true, -1, false, b, &err);
			maxd = 0;
			for (int64_t i = 0; st2 == GNN_OK && i < n * 3; i++)
				maxd = fmax(maxd, fabs(a[i] - b[i]));
			CHECK(st2 == GNN_OK && maxd == 0 && gnn_model_config_of(m2)->num_relations == 2 &&
				  gnn_model_config_of(m2)->num_node_types == 2 &&
				  gnn_model_config_of(m2)->num_bases == cfg.num_bases,
				  "%s: a serialised model reloads with its relational fields and the same outputs%s%s",
				  gnn_model_kind_name(cfg.model), st2 ? ": " : "", st2 ? err.msg : "");
			gnn_model_free(m2);
			free(blob);
		}
		gnn_eval_data_free(be, &d);
		gnn_model_free(m);
		m = NULL;
		free(a);
		free(b);
	}
	gnn_backend_destroy(be);
	hgraph_free(&h);
}

/* ------------------------------------------------------------------ regression */

static void
test_regression(void)
{
	enum { N = 500, D = 4, DEG = 5 };
	hgraph		h;
	arc		   *arcs = malloc(sizeof(arc) * N * DEG);
	gnn_rng		r;
	int64_t		m = 0;
	const double wn[D] = {1.5, -2.0, 0.5, 1.0},
				ws[D] = {0.3, 0.0, -0.7, 0.2};
	gnn_train_config cfg;
	gnn_train_result res;
	gnn_error	err;
	gnn_status	st;
	float		first_loss = NAN,
				last_loss = NAN;
	int			nan_targets = 0;

	memset(&h, 0, sizeof(h));
	gnn_rng_seed(&r, 11);
	h.feat = malloc(sizeof(float) * N * D);
	h.targets = malloc(sizeof(float) * N);
	h.split = malloc(N);
	for (int64_t i = 0; i < N * D; i++)
		h.feat[i] = (float) (2 * gnn_rng_double(&r) - 1);
	for (int32_t v = 0; v < N; v++)
		for (int k = 0; k < DEG; k++)
			arcs[m++] = (arc) {v, (int32_t) gnn_rng_below(&r, N), 0};
	hgraph_arcs(&h, N, arcs, m);
	for (int32_t v = 0; v < N; v++)
	{
		double		t = 0.5;
		int64_t		deg = h.rptr[v + 1] - h.rptr[v];

		for (int64_t e = h.rptr[v]; e < h.rptr[v + 1]; e++)
			for (int q = 0; q < D; q++)
				t += wn[q] * h.feat[h.ridx[e] * D + q] / deg;
		for (int q = 0; q < D; q++)
			t += ws[q] * h.feat[v * D + q];
		h.split[v] = v % 10 < 6 ? GNN_SPLIT_TRAIN : v % 10 < 8 ? GNN_SPLIT_VAL : GNN_SPLIT_TEST;
		/* some nodes without a target: in no split's measure */
		h.targets[v] = v % 17 == 0 ? NAN : (float) t;
		nan_targets += v % 17 == 0;
	}
	free(arcs);
	h.g.rarc_type = NULL;		/* one relation */
	h.g.feat_kind = GNN_FEAT_DENSE;
	h.g.feat_dim = D;
	h.g.feat = h.feat;
	h.g.split = h.split;
	h.g.targets = h.targets;
	h.g.num_node_types = 1;
	h.g.num_edge_types = 1;

	for (int k = 0; k < 2; k++)
	{
		gnn_model_kind kind = k ? GNN_MODEL_SAGE : GNN_MODEL_RGCN;

		gnn_train_config_default(kind, &cfg);
		cfg.task = GNN_TASK_REGRESS;
		cfg.layers = 1;
		cfg.hidden = 8;
		cfg.dropout = 0.0f;
		cfg.weight_decay = 0.0f;
		cfg.lr = 0.02f;
		cfg.epochs = 300;
		cfg.row_normalise = false;
		cfg.threads = 1;
		cfg.select = GNN_SELECT_VAL_ACC;	/* by -MAE */
		st = gnn_train_full(&h.g, &cfg, NULL, NULL, NULL, NULL, NULL, NULL, &res, &err);
		CHECK(st == GNN_OK, "%s regression trains%s%s", gnn_model_kind_name(kind), st ? ": " : "",
			  st ? err.msg : "");
		if (st != GNN_OK)
			continue;
		last_loss = res.best.train_loss;
		NOTE("%s regression: best epoch %d, train MSE %.5f, val MAE %.4f RMSE %.4f, test MAE %.4f RMSE %.4f",
			 gnn_model_kind_name(kind), res.best_epoch, last_loss, res.best.val_mae, res.best.val_rmse,
			 res.best.test_mae, res.best.test_rmse);
		CHECK(isfinite(res.best.val_mae) && isfinite(res.best.val_rmse) && isfinite(res.best.test_mae) &&
			  isfinite(res.best.test_rmse) && res.best.test_rmse >= res.best.test_mae &&
			  res.best.val_rmse >= res.best.val_mae,
			  "%s: MAE and RMSE finite, RMSE >= MAE", gnn_model_kind_name(kind));
		CHECK(res.best.val_acc == -res.best.val_mae && res.best.test_acc == -res.best.test_mae &&
			  fabsf(res.best.val_loss - res.best.val_rmse * res.best.val_rmse) <= 1e-5f * (1 + res.best.val_loss),
			  "%s: accuracy fields hold -MAE, loss the MSE", gnn_model_kind_name(kind));
		CHECK(isnan(res.best.val_auc) && isnan(res.best.test_auc), "%s: no AUROC for regression",
			  gnn_model_kind_name(kind));
		/* the targets' variance is ~1.3: a linear fit drives the error far below */
		CHECK(res.best.test_rmse < 0.05f, "%s: test RMSE %.4f < 0.05", gnn_model_kind_name(kind),
			  res.best.test_rmse);
	}
	/* MSE falls a lot from the first epoch */
	{
		gnn_train_config_default(GNN_MODEL_RGCN, &cfg);
		cfg.task = GNN_TASK_REGRESS;
		cfg.layers = 1;
		cfg.hidden = 8;
		cfg.dropout = 0.0f;
		cfg.weight_decay = 0.0f;
		cfg.lr = 0.02f;
		cfg.epochs = 1;
		cfg.row_normalise = false;
		cfg.threads = 1;
		st = gnn_train_full(&h.g, &cfg, NULL, NULL, NULL, NULL, NULL, NULL, &res, &err);
		first_loss = res.best.train_loss;
		CHECK(st == GNN_OK && last_loss < 0.01f * first_loss,
			  "training MSE falls from %.4f (epoch 1) to %.5f", first_loss, last_loss);
	}
	NOTE("%d nodes without a target", nan_targets);
	hgraph_free(&h);
}

/* ------------------------------------------------------------------ minibatch regression */

#define MB_DEG 6				/* signal in-arcs per target node */
#define MB_NOISE 0.05			/* target noise: uniform in +-MB_NOISE */

/*
 * A graph for minibatch regression; features uniform in [-1, 1], D = 4.
 * Homogeneous (typed false): N nodes, each with MB_DEG random in-neighbours;
 * target = mean of the in-neighbours' feature 0 + noise.  Typed: type 0 "B"
 * (TB feature carriers, no target, no in-arcs) and type 1 "A" (TA targets);
 * relation 0 B -> A (MB_DEG per A: the signal), relation 1 A -> A (8 per A:
 * noise); target = mean feature 0 of the A node's relation-0 in-neighbours.
 * timed (typed only): every node has a time in [0, 100), a tenth of the B
 * nodes none, and the mean runs only over the relation-0 in-neighbours not
 * later than the A node (none: 0), which is all a temporal sampler shows.
 * Splits on target nodes: 60 / 20 / 20; every 13th target node has none (NAN).
 */
static void
make_mb_regress(hgraph *h, bool typed, bool timed, uint64_t seed)
{
	enum { D = 4, N = 800, TA = 600, TB = 400 };
	int64_t		n = typed ? TA + TB : N,
				first = typed ? TB : 0;	/* the target nodes are [first, n) */
	arc		   *arcs = malloc(sizeof(arc) * n * (MB_DEG + 8));
	int64_t		m = 0;
	gnn_rng		r;

	memset(h, 0, sizeof(*h));
	gnn_rng_seed(&r, seed);
	h->feat = malloc(sizeof(float) * n * D);
	h->targets = malloc(sizeof(float) * n);
	h->split = malloc(n);
	for (int64_t i = 0; i < n * D; i++)
		h->feat[i] = (float) (2 * gnn_rng_double(&r) - 1);
	if (timed)
	{
		h->time = malloc(sizeof(int64_t) * n);
		for (int64_t v = 0; v < n; v++)
			h->time[v] = v < first && gnn_rng_below(&r, 10) == 0 ? GNN_TIME_NONE
				: (int64_t) gnn_rng_below(&r, 100);
	}
	for (int64_t v = first; v < n; v++)
	{
		for (int k = 0; k < MB_DEG; k++)
			arcs[m++] = (arc) {(int32_t) v, (int32_t) gnn_rng_below(&r, typed ? TB : N), 0};
		for (int k = 0; typed && k < 8; k++)
			arcs[m++] = (arc) {(int32_t) v, (int32_t) (TB + gnn_rng_below(&r, TA)), 1};
	}
	hgraph_arcs(h, n, arcs, m);
	for (int64_t v = 0; v < n; v++)
	{
		double		t = 0;
		int64_t		cnt = 0;

		h->targets[v] = NAN;
		h->split[v] = GNN_SPLIT_NONE;
		if (v < first)
			continue;
		for (int64_t e = h->rptr[v]; e < h->rptr[v + 1]; e++)
		{
			int32_t		u = h->ridx[e];

			if (h->rtype[e] != 0 ||
				(timed && h->time[u] != GNN_TIME_NONE && h->time[u] > h->time[v]))
				continue;
			t += h->feat[u * D];
			cnt++;
		}
		t = (cnt ? t / cnt : 0) + MB_NOISE * (2 * gnn_rng_double(&r) - 1);
		h->split[v] = v % 10 < 6 ? GNN_SPLIT_TRAIN : v % 10 < 8 ? GNN_SPLIT_VAL : GNN_SPLIT_TEST;
		if (v % 13 != 0)
			h->targets[v] = (float) t;
	}
	free(arcs);
	h->g.feat_kind = GNN_FEAT_DENSE;
	h->g.feat_dim = D;
	h->g.feat = h->feat;
	h->g.split = h->split;
	h->g.targets = h->targets;
	h->g.time = h->time;
	for (int64_t v = 0; v < n; v++)
	{
		h->g.n_train += h->split[v] == GNN_SPLIT_TRAIN;
		h->g.n_val += h->split[v] == GNN_SPLIT_VAL;
		h->g.n_test += h->split[v] == GNN_SPLIT_TEST;
	}
	if (!typed)
	{
		h->g.rarc_type = NULL;
		h->g.num_node_types = 1;
		h->g.num_edge_types = 1;
		return;
	}
	h->ntype = malloc(sizeof(int16_t) * n);
	for (int64_t v = 0; v < n; v++)
		h->ntype[v] = v < first ? 0 : 1;
	h->g.num_node_types = 2;
	h->type_ptr[0] = 0;
	h->type_ptr[1] = first;
	h->type_ptr[2] = n;
	h->g.type_ptr = h->type_ptr;
	h->g.node_type = h->ntype;
	h->g.num_edge_types = 2;
	h->et[0] = (gnn_edge_type) {0, 1, 0};
	h->et[1] = (gnn_edge_type) {1, 1, 0};
	for (int64_t e = 0; e < h->g.num_edges; e++)
		h->et[h->rtype[e]].count++;
	h->g.etypes = h->et;
}

/* MAE on the test targets of predicting the mean of the training targets */
static double
mean_baseline_mae(const gnn_graph *g)
{
	double		mean = 0,
				mae = 0;
	int64_t		ntr = 0,
				nte = 0;

	for (int64_t v = 0; v < g->num_nodes; v++)
		if (g->split[v] == GNN_SPLIT_TRAIN && !isnan(g->targets[v]))
		{
			mean += g->targets[v];
			ntr++;
		}
	mean /= ntr;
	for (int64_t v = 0; v < g->num_nodes; v++)
		if (g->split[v] == GNN_SPLIT_TEST && !isnan(g->targets[v]))
		{
			mae += fabs(g->targets[v] - mean);
			nte++;
		}
	return mae / nte;
}

#define MB_EPOCHS 40

/* every epoch's metrics, for repeatability and the selection check */
typedef struct mb_curve
{
	int			n;
	gnn_epoch_metrics em[MB_EPOCHS];
} mb_curve;

static void
mb_on_epoch(void *arg, const gnn_epoch_metrics *m)
{
	mb_curve   *c = arg;

	if (c->n < MB_EPOCHS)
	{
		c->em[c->n] = *m;
		/* wall times are not repeatable */
		c->em[c->n].seconds = c->em[c->n].sample_s = c->em[c->n].gather_s = 0;
		c->em[c->n].compute_s = c->em[c->n].wait_s = c->em[c->n].eval_s = 0;
		c->n++;
	}
}

/* mb_regress's evaluation reuse (train_mb.h's eval_reuse_rows) and the last run's stats */
static int64_t mb_reuse_rows;
static gnn_minibatch_stats mb_stats;

static gnn_status
mb_regress(const gnn_graph *g, gnn_model_kind kind, const int32_t *type_fanouts, bool temporal,
		   gnn_select select, int threads, int epochs, mb_curve *curve, gnn_train_result *res,
		   gnn_error *err)
{
	gnn_train_config cfg;
	gnn_minibatch_config mbc;

	gnn_train_config_default(kind, &cfg);
	cfg.task = GNN_TASK_REGRESS;
	cfg.layers = 2;
	cfg.hidden = 16;
	cfg.dropout = 0.0f;
	cfg.weight_decay = 0.0f;
	cfg.lr = 0.01f;
	cfg.epochs = epochs;
	cfg.row_normalise = false;
	cfg.threads = threads;
	cfg.seed = 5;
	cfg.select = select;
	cfg.target_type = g->num_node_types > 1 ? 1 : 0;
	memset(&mbc, 0, sizeof(mbc));
	mbc.sampler.kind = GNN_SAMPLER_NEIGHBOR;
	mbc.sampler.nhops = 2;
	mbc.sampler.fanouts[0] = 4;	/* of MB_DEG: sampled, not all */
	mbc.sampler.fanouts[1] = 3;
	mbc.sampler.type_fanouts = type_fanouts;
	mbc.sampler.temporal = temporal;
	mbc.sampler.nthreads = threads;
	mbc.batch_size = 64;
	mbc.eval_reuse_rows = mb_reuse_rows;
	memset(curve, 0, sizeof(*curve));
	return gnn_train_minibatch(g, &cfg, &mbc, NULL, mb_on_epoch, curve, NULL, NULL, NULL, res, &mb_stats, err);
}

/* the checks every minibatch regression run passes; returns the test MAE (NAN on failure) */
static float
mb_regress_check(const char *what, const gnn_graph *g, gnn_model_kind kind, const int32_t *type_fanouts,
				 bool temporal, gnn_select select, double margin)
{
	mb_curve   *c1 = calloc(1, sizeof(mb_curve)),
			   *c2 = calloc(1, sizeof(mb_curve));
	gnn_train_result r1,
				r2;
	gnn_error	err;
	gnn_status	st;
	double		base = mean_baseline_mae(g);
	float		best_sel = INFINITY,
				out = NAN;

	st = mb_regress(g, kind, type_fanouts, temporal, select, 1, MB_EPOCHS, c1, &r1, &err);
	CHECK(st == GNN_OK, "%s: minibatch regression (%s) trains%s%s", what, gnn_model_kind_name(kind),
		  st ? ": " : "", st ? err.msg : "");
	if (st != GNN_OK)
		goto done;
	NOTE("%s (%s): best epoch %d/%d, train MSE %.5f, val MAE %.4f RMSE %.4f, test MAE %.4f RMSE %.4f; "
		 "training-mean baseline test MAE %.4f", what, gnn_model_kind_name(kind), r1.best_epoch, r1.epochs_run,
		 r1.best.train_loss, r1.best.val_mae, r1.best.val_rmse, r1.best.test_mae, r1.best.test_rmse, base);
	out = r1.best.test_mae;
	CHECK(r1.best.test_mae < margin * base, "%s: test MAE %.4f < %.2f x the training-mean baseline's %.4f",
		  what, r1.best.test_mae, margin, base);
	CHECK(isfinite(r1.best.val_mae) && isfinite(r1.best.val_rmse) && isfinite(r1.best.test_rmse) &&
		  r1.best.test_rmse >= r1.best.test_mae && r1.best.val_rmse >= r1.best.val_mae &&
		  r1.best.val_acc == -r1.best.val_mae && r1.best.test_acc == -r1.best.test_mae &&
		  isfinite(r1.best.train_acc) && r1.best.train_acc < 0 &&
		  fabsf(r1.best.val_loss - r1.best.val_rmse * r1.best.val_rmse) <= 1e-5f * (1 + r1.best.val_loss) &&
		  fabsf(r1.best.test_loss - r1.best.test_rmse * r1.best.test_rmse) <= 1e-5f * (1 + r1.best.test_loss) &&
		  isnan(r1.best.val_auc) && isnan(r1.best.test_auc),
		  "%s: metrics as full-batch regression fills them (loss MSE, acc -MAE, RMSE >= MAE, no AUROC)", what);
	/* the kept epoch is the best by validation under the rule */
	for (int e = 0; e < c1->n; e++)
		best_sel = fminf(best_sel, select == GNN_SELECT_VAL_ACC ? c1->em[e].val_mae : c1->em[e].val_loss);
	CHECK(c1->n == MB_EPOCHS && r1.best_epoch >= 1 &&
		  (select == GNN_SELECT_VAL_ACC ? r1.best.val_mae : r1.best.val_loss) == best_sel &&
		  c1->em[r1.best_epoch - 1].best,
		  "%s: the kept epoch %d has the lowest validation %s (%.5f)", what, r1.best_epoch,
		  select == GNN_SELECT_VAL_ACC ? "MAE" : "MSE", best_sel);
	CHECK(c1->em[c1->n - 1].train_loss < 0.5f * c1->em[0].train_loss,
		  "%s: training MSE falls (%.5f at epoch 1, %.5f at epoch %d)", what, c1->em[0].train_loss,
		  c1->em[c1->n - 1].train_loss, c1->n);

	st = mb_regress(g, kind, type_fanouts, temporal, select, 1, MB_EPOCHS, c2, &r2, &err);
	r1.seconds = r2.seconds = r1.other_s = r2.other_s = 0;
	r1.best.seconds = r2.best.seconds = 0;
	r1.best.sample_s = r1.best.gather_s = r1.best.compute_s = r1.best.wait_s = r1.best.eval_s = 0;
	r2.best.sample_s = r2.best.gather_s = r2.best.compute_s = r2.best.wait_s = r2.best.eval_s = 0;
	CHECK(st == GNN_OK && c1->n == c2->n && memcmp(c1->em, c2->em, sizeof(gnn_epoch_metrics) * c1->n) == 0 &&
		  r1.best_epoch == r2.best_epoch && memcmp(&r1.best, &r2.best, sizeof(r1.best)) == 0,
		  "%s: the same seed repeats bit for bit (1 thread)", what);
done:
	free(c1);
	free(c2);
	return out;
}

static void
test_mb_regression(void)
{
	hgraph		h;
	gnn_train_result res;
	gnn_error	err;
	gnn_status	st;

	/*
	 * typed fan-outs per hop and relation: the seeds' signal relation in full
	 * (its mean is the target; a sample of it would only estimate it at
	 * evaluation, which samples too), everything else sampled
	 */
	const int32_t tf[2 * 2] = {-1, 3, 2, 2};
	float		tmae,
				nmae;

	/* homogeneous: evaluated on full neighbourhoods */
	make_mb_regress(&h, false, false, 21);
	mb_regress_check("homogeneous", &h.g, GNN_MODEL_SAGE, NULL, false, GNN_SELECT_VAL_ACC, 0.4);
	/* regression without targets, or on a graph of classes, refused */
	{
		gnn_train_config cfg;
		gnn_minibatch_config mbc;

		h.g.targets = NULL;
		gnn_train_config_default(GNN_MODEL_SAGE, &cfg);
		cfg.task = GNN_TASK_REGRESS;
		memset(&mbc, 0, sizeof(mbc));
		mbc.sampler.nhops = cfg.layers;
		for (int l = 0; l < cfg.layers; l++)
			mbc.sampler.fanouts[l] = 3;
		mbc.batch_size = 32;
		st = gnn_train_minibatch(&h.g, &cfg, &mbc, NULL, NULL, NULL, NULL, NULL, NULL, &res, NULL, &err);
		CHECK(st == GNN_ERR_EMPTY && strstr(err.msg, "target"),
			  "minibatch regression on a graph without targets refused: %s", err.msg);
		h.g.targets = h.targets;
	}
	hgraph_free(&h);

	/* typed, target type 1: evaluated on sampled neighbourhoods */
	make_mb_regress(&h, true, false, 22);
	mb_regress_check("typed", &h.g, GNN_MODEL_HSAGE, tf, false, GNN_SELECT_VAL_LOSS, 0.4);
	/*
	 * evaluation's layer-0 rows reused within a pass (train_mb.h), typed
	 * blocks: keeping as many as the pass keeps or 1 row, the same
	 * validation curve and test error (per-node streams: only summation
	 * order differs), training untouched
	 */
	for (int k = 0; k < 2; k++)
	{
		gnn_model_kind kind = k ? GNN_MODEL_RGCN : GNN_MODEL_HSAGE;
		mb_curve   *c[2] = {calloc(1, sizeof(mb_curve)), calloc(1, sizeof(mb_curve))};
		gnn_train_result r2[2];
		gnn_minibatch_stats q[2];
		gnn_status	s2[2];
		bool		same = true;

		for (int i = 0; i < 2; i++)
		{
			mb_reuse_rows = i ? 1 : 0;
			s2[i] = mb_regress(&h.g, kind, tf, false, GNN_SELECT_VAL_LOSS, 2, MB_EPOCHS, c[i], &r2[i], &err);
			q[i] = mb_stats;
		}
		mb_reuse_rows = 0;
		for (int e = 0; s2[0] == GNN_OK && s2[1] == GNN_OK && e < MB_EPOCHS; e++)
			same &= fabsf(c[0]->em[e].val_loss - c[1]->em[e].val_loss) <= 1e-4f * (1 + fabsf(c[0]->em[e].val_loss)) &&
				c[0]->em[e].train_loss == c[1]->em[e].train_loss;
		CHECK(s2[0] == GNN_OK && s2[1] == GNN_OK && c[0]->n == MB_EPOCHS && same &&
			  fabsf(r2[0].best.test_loss - r2[1].best.test_loss) <= 1e-4f * (1 + fabsf(r2[0].best.test_loss)) &&
			  q[0].eval_rows_reused > q[1].eval_rows_reused && q[0].eval_rows_computed < q[1].eval_rows_computed,
			  "typed %s, evaluation's layer-0 rows reused (%lld / %lld reused, %lld / %lld computed): the same "
			  "validation curve and test MSE %.5f / %.5f", gnn_model_kind_name(kind),
			  (long long) q[0].eval_rows_reused, (long long) q[1].eval_rows_reused,
			  (long long) q[0].eval_rows_computed, (long long) q[1].eval_rows_computed,
			  (double) r2[0].best.test_loss, (double) r2[1].best.test_loss);
		for (int i = 0; i < 2; i++)
		{
			if (s2[i] == GNN_OK)
				gnn_train_result_free(&r2[i]);
			free(c[i]);
		}
	}
	/* no training node of the target type has a target: refused */
	{
		float	   *keep = h.targets;
		float	   *only_b = malloc(sizeof(float) * h.g.num_nodes);
		mb_curve   *c = calloc(1, sizeof(mb_curve));

		for (int64_t v = 0; v < h.g.num_nodes; v++)
			only_b[v] = v < h.type_ptr[1] ? 1.0f : NAN;
		for (int64_t v = 0; v < h.type_ptr[1]; v++)
			h.split[v] = GNN_SPLIT_TRAIN;
		h.g.targets = only_b;
		st = mb_regress(&h.g, GNN_MODEL_HSAGE, tf, false, GNN_SELECT_VAL_LOSS, 1, 1, c, &res, &err);
		CHECK(st == GNN_ERR_EMPTY && strstr(err.msg, "target type 1"),
			  "targets only on nodes of another type: no training node of the target type (%s)", err.msg);
		h.g.targets = keep;
		free(only_b);
		free(c);
	}
	hgraph_free(&h);

	/* typed with times: the targets are means over the past, which temporal sampling shows */
	make_mb_regress(&h, true, true, 23);
	tmae = mb_regress_check("typed, temporal", &h.g, GNN_MODEL_RGCN, tf, true, GNN_SELECT_VAL_ACC, 0.5);
	{
		mb_curve   *c = calloc(1, sizeof(mb_curve));

		mb_curve   *c2 = calloc(1, sizeof(mb_curve));
		gnn_train_result res2;

		st = mb_regress(&h.g, GNN_MODEL_RGCN, tf, false, GNN_SELECT_VAL_ACC, 1, MB_EPOCHS, c, &res, &err);
		nmae = st == GNN_OK ? res.best.test_mae : NAN;
		NOTE("typed with times, not temporal: test MAE %.4f", nmae);
		CHECK(st == GNN_OK && tmae < 0.7f * nmae,
			  "temporal sampling reads the past-only targets better: test MAE %.4f < 0.7 x %.4f without it",
			  tmae, nmae);
		/* repeatable on two threads too (backend and sampler), over a few epochs */
		st = mb_regress(&h.g, GNN_MODEL_RGCN, tf, true, GNN_SELECT_VAL_ACC, 2, 4, c, &res, &err);
		if (st == GNN_OK)
			st = mb_regress(&h.g, GNN_MODEL_RGCN, tf, true, GNN_SELECT_VAL_ACC, 2, 4, c2, &res2, &err);
		CHECK(st == GNN_OK && c->n == 4 && c2->n == 4 &&
			  memcmp(c->em, c2->em, sizeof(gnn_epoch_metrics) * 4) == 0 && isfinite(c->em[3].val_mae) &&
			  isfinite(res.best.test_mae) && res.best.test_mae == res2.best.test_mae,
			  "typed, temporal: the same seed repeats bit for bit on 2 threads%s%s", st ? ": " : "",
			  st ? err.msg : "");
		free(c);
		free(c2);
	}
	hgraph_free(&h);
}

/* ------------------------------------------------------------------ AUROC */

static double
auroc_brute(const double *s, const int32_t *l, int64_t n)
{
	double		num = 0;
	int64_t		np = 0,
				nn = 0;

	for (int64_t i = 0; i < n; i++)
	{
		np += l[i] == 1;
		nn += l[i] == 0;
	}
	for (int64_t i = 0; i < n; i++)
		for (int64_t j = 0; j < n; j++)
			if (l[i] == 1 && l[j] == 0)
				num += s[i] > s[j] ? 1.0 : s[i] == s[j] ? 0.5 : 0.0;
	return np && nn ? num / ((double) np * nn) : NAN;
}

static void
test_auroc(void)
{
	gnn_rng		r;
	double		s[200];
	int32_t		l[200];
	double		maxd = 0;

	gnn_rng_seed(&r, 3);
	for (int trial = 0; trial < 50; trial++)
	{
		int64_t		n = 5 + gnn_rng_below(&r, 190);

		for (int64_t i = 0; i < n; i++)
		{
			/* few distinct scores: many ties, across and within classes */
			l[i] = gnn_rng_double(&r) < 0.1 ? -1 : (int32_t) gnn_rng_below(&r, 2);
			s[i] = (double) gnn_rng_below(&r, trial % 2 ? 4 : 50) + (l[i] == 1 ? 0.3 * (trial % 3) : 0);
		}
		{
			double		a = gnn_auroc(s, l, n),
						b = auroc_brute(s, l, n);

			if (isnan(a) != isnan(b))
				maxd = INFINITY;
			else if (!isnan(a))
				maxd = fmax(maxd, fabs(a - b));
		}
	}
	CHECK(maxd < 1e-12, "AUROC equals the brute-force pair count, ties half (max |diff| %.2e)", maxd);
	{
		double		s2[4] = {0.1, 0.4, 0.35, 0.8};
		int32_t		l2[4] = {0, 0, 1, 1};
		int32_t		l3[4] = {1, 1, -1, 1};
		double		s4[4] = {0.5, 0.5, 0.5, 0.5};

		CHECK(fabs(gnn_auroc(s2, l2, 4) - 0.75) < 1e-15, "AUROC of the textbook case is 0.75");
		CHECK(isnan(gnn_auroc(s2, l3, 4)), "AUROC without negatives is NAN");
		CHECK(gnn_auroc(s4, l2, 4) == 0.5, "AUROC with every score tied is 0.5");
	}
	{
		double		p[4] = {1, 2, 3, 4},
					t[4] = {1, NAN, 5, 2},
					mse,
					mae;
		float		g[4];
		int64_t		k = gnn_mse_host(p, t, 4, g, &mse, &mae);

		CHECK(k == 3 && fabs(mse - (0 + 4 + 4) / 3.0) < 1e-12 && fabs(mae - 4 / 3.0) < 1e-12 &&
			  g[0] == 0 && g[1] == 0 && fabsf(g[2] - 2 * -2 / 3.0f) < 1e-6f && fabsf(g[3] - 2 * 2 / 3.0f) < 1e-6f,
			  "MSE, MAE and the MSE gradient skip NAN targets");
	}
}

int
main(void)
{
	void		(*tests[]) (void) = {test_auroc, test_checks, test_infer, test_regression, test_selective,
	test_mb_regression};
	const char *names[] = {"auroc", "checks", "infer", "regression", "selective", "minibatch regression"};

	for (int t = 0; t < 6; t++)
	{
		clock_t		c0 = clock();

		tests[t]();
		NOTE("%s: %.2f s cpu", names[t], (double) (clock() - c0) / CLOCKS_PER_SEC);
	}
	return check_done();
}
