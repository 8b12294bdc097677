/*
 * test_train_small: the training loops on small synthetic graphs, for the
 * cases real datasets do not have: splits without labelled nodes (NAN
 * metrics, the selection rule without validation nodes, no labelled
 * training node), graphs without edges, which layer inference returns, and
 * the per-class report (confusion matrix, precision, recall, F1).
 * Needs no data; runs in seconds, also under the sanitizers.
 */
#include "check.h"
#include "train/eval.h"
#include "train/train.h"
#include "train/train_mb.h"
#include "train/train_subgraph.h"

#include <math.h>

enum
{
	N = 48,						/* nodes */
	F = 4						/* features */
};

typedef struct tgraph
{
	void	   *region;
	gnn_graph	g;
} tgraph;

/* two classes by parity; of every 8 nodes 4 train, 2 val, 2 test (each split has both classes) */
static void
default_data(int32_t *labels, uint8_t *split)
{
	for (int i = 0; i < N; i++)
	{
		labels[i] = i % 2;
		split[i] = i % 8 < 4 ? GNN_SPLIT_TRAIN : i % 8 < 6 ? GNN_SPLIT_VAL : GNN_SPLIT_TEST;
	}
}

/* features that show the class, with some noise; with edges, a ring within each class */
static bool
make_graph(bool edges, const int32_t *labels, const uint8_t *split, tgraph *t)
{
	int64_t		ids[N],
				src[N],
				dst[N];
	float		feat[N * F];
	gnn_graph_input in = {0};
	uint64_t	size;
	gnn_error	err;

	for (int i = 0; i < N; i++)
	{
		ids[i] = 100 + i;
		src[i] = 100 + i;
		dst[i] = 100 + (i + 2) % N;
		feat[i * F + 0] = i % 2 == 0 ? 1.0f : 0.2f;
		feat[i * F + 1] = i % 2 == 1 ? 1.0f : 0.2f;
		feat[i * F + 2] = 0.1f * (float) (i % 5);
		feat[i * F + 3] = 0.5f;
	}
	in.num_edges = edges ? N : 0;
	in.src = edges ? src : NULL;
	in.dst = edges ? dst : NULL;
	in.undirected = true;
	in.num_nodes = N;
	in.node_ids = ids;
	in.feat_dim = F;
	in.feat = feat;
	in.labels = labels;
	in.split = split;
	if (gnn_graph_build_region(&in, &t->region, &size, &t->g, &err) != GNN_OK)
	{
		CHECK(0, "build the test graph: %s", err.msg);
		return false;
	}
	return true;
}

static void
small_config(gnn_model_kind kind, gnn_train_config *cfg)
{
	gnn_train_config_default(kind, cfg);
	cfg->epochs = 10;
	cfg->hidden = 8;
	cfg->heads = 2;
	cfg->threads = 1;
	cfg->patience = 2;
}

/* ------------------------------------------------------------------ the loops */

typedef enum loop_kind
{
	FULL, MINIBATCH, CLUSTER, SAINT, NLOOPS
} loop_kind;

static const char *const loop_name[] = {"full-batch", "minibatch", "cluster-gcn", "graphsaint"};

typedef struct rec
{
	int			epochs;
	int			kept;			/* epochs marked best */
	gnn_epoch_metrics last;
} rec;

static void
on_epoch(void *arg, const gnn_epoch_metrics *m)
{
	rec		   *r = arg;

	r->epochs++;
	r->kept += m->best;
	r->last = *m;
}

static gnn_status
train_loop(loop_kind k, const gnn_graph *g, const gnn_train_config *cfg, gnn_backend *be,
		   gnn_model **model, rec *r, gnn_train_result *res, gnn_error *err)
{
	gnn_minibatch_config mbc;
	gnn_subgraph_config sc;

	memset(r, 0, sizeof(*r));
	memset(&mbc, 0, sizeof(mbc));
	gnn_subgraph_config_default(&sc);
	switch (k)
	{
		case FULL:
			return gnn_train_full(g, cfg, be, on_epoch, r, NULL, NULL, model, res, err);
		case MINIBATCH:
			mbc.sampler.kind = GNN_SAMPLER_NEIGHBOR;
			mbc.sampler.nhops = cfg->layers;
			for (int h = 0; h < cfg->layers; h++)
				mbc.sampler.fanouts[h] = 5;
			mbc.sampler.nthreads = 1;
			mbc.batch_size = 8;
			return gnn_train_minibatch(g, cfg, &mbc, be, on_epoch, r, NULL, NULL, model, res, NULL, err);
		case CLUSTER:
			sc.num_parts = 4;
			return gnn_train_cluster(g, cfg, &sc, be, on_epoch, r, NULL, NULL, model, res, err);
		case SAINT:
			return gnn_train_saint(g, cfg, &sc, be, on_epoch, r, NULL, NULL, model, res, err);
		default:
			return GNN_ERR_INVALID;
	}
}

/* ------------------------------------------------------------------ tests */

/* rows[s] lists the labelled nodes of split s; an empty split measures NAN */
static void
test_eval_rows(void)
{
	int32_t		labels[N];
	uint8_t		split[N];
	tgraph		t;
	gnn_backend *be = NULL;
	gnn_eval_data d;
	gnn_error	err;
	float		logits[N * 2],
			   *dlogits = NULL,
				loss,
				acc;
	int32_t		rows[N];
	gnn_epoch_metrics em;
	bool		ok = true;

	default_data(labels, split);
	labels[0] = labels[1] = -1; /* two training nodes without a label */
	labels[4] = -1;				/* and a validation node */
	for (int i = 0; i < N; i++)
		if (split[i] == GNN_SPLIT_TEST)
			split[i] = GNN_SPLIT_NONE;
	if (!make_graph(true, labels, split, &t))
		return;
	if (gnn_backend_create("cpu", 1, NULL, &be, &err) != GNN_OK ||
		gnn_eval_data_create(be, &t.g, true, &d, &err) != GNN_OK)
	{
		CHECK(0, "eval data: %s", err.msg);
		free(t.region);
		return;
	}
	CHECK(d.nrows[GNN_SPLIT_TRAIN] == N / 2 - 2 && d.nrows[GNN_SPLIT_VAL] == N / 4 - 1 &&
		  d.nrows[GNN_SPLIT_TEST] == 0,
		  "eval rows hold the labelled nodes of each split (%lld train, %lld val, %lld test)",
		  (long long) d.nrows[GNN_SPLIT_TRAIN], (long long) d.nrows[GNN_SPLIT_VAL],
		  (long long) d.nrows[GNN_SPLIT_TEST]);
	CHECK(gnn_split_labelled(&t.g, GNN_SPLIT_TRAIN) == N / 2 - 2 && gnn_split_labelled(&t.g, GNN_SPLIT_TEST) == 0,
		  "gnn_split_labelled counts them");
	gnn_backend_copy_d2h(be, rows, d.rows[GNN_SPLIT_TRAIN], sizeof(int32_t) * d.nrows[GNN_SPLIT_TRAIN]);
	for (int64_t r = 0; r < d.nrows[GNN_SPLIT_TRAIN]; r++)
		ok &= t.g.split[rows[r]] == GNN_SPLIT_TRAIN && t.g.labels[rows[r]] >= 0;
	CHECK(ok, "no unlabelled node among the training rows");

	/* logits that predict every node right */
	for (int i = 0; i < N; i++)
	{
		logits[i * 2 + 0] = t.g.labels[i] == 0 ? 2.0f : 0.0f;
		logits[i * 2 + 1] = t.g.labels[i] == 1 ? 2.0f : 0.0f;
	}
	gnn_dev_upload(be, logits, sizeof(logits), (void **) &dlogits, &err);
	ok = gnn_eval_split(be, &d, dlogits, N, 2, GNN_SPLIT_TEST, &loss, &acc, &err) == GNN_OK;
	CHECK(ok && isnan(loss) && isnan(acc), "an empty split gives NAN loss and accuracy (got %g, %g)", loss, acc);
	memset(&em, 0, sizeof(em));
	ok = gnn_eval_splits(be, &d, dlogits, N, 2, &em, &err) == GNN_OK;
	CHECK(ok && em.train_acc == 1.0f && em.val_acc == 1.0f && isfinite(em.val_loss) && isnan(em.test_acc) &&
		  isnan(em.test_loss),
		  "splits: train and val measured on labelled nodes (acc %g, %g), test NAN", em.train_acc, em.val_acc);
	gnn_backend_free(be, dlogits);
	gnn_eval_data_free(be, &d);
	gnn_backend_destroy(be);
	free(t.region);
}

/* training nodes that all lack a label: every loop refuses, none "trains" with loss 0 */
static void
test_no_labelled_train(void)
{
	int32_t		labels[N];
	uint8_t		split[N];
	tgraph		t;

	default_data(labels, split);
	for (int i = 0; i < N; i++)
		if (split[i] == GNN_SPLIT_TRAIN)
			labels[i] = -1;
	if (!make_graph(true, labels, split, &t))
		return;
	CHECK(t.g.n_train == N / 2 && t.g.num_classes == 2, "the graph has %lld training nodes, none labelled",
		  (long long) t.g.n_train);
	for (int k = 0; k < NLOOPS; k++)
	{
		gnn_train_config cfg;
		gnn_train_result res;
		gnn_error	err;
		rec			r;
		gnn_status	st;

		small_config(GNN_MODEL_GCN, &cfg);
		memset(&err, 0, sizeof(err));
		st = train_loop((loop_kind) k, &t.g, &cfg, NULL, NULL, &r, &res, &err);
		CHECK(st == GNN_ERR_EMPTY && strstr(err.msg, "no labelled training nodes") && r.epochs == 0,
			  "%s: no labelled training node is EMPTY: %s", loop_name[k], err.msg);
	}
	free(t.region);
}

/* the selection rule without validation metrics */
static void
test_selector(void)
{
	for (int rule = GNN_SELECT_VAL_LOSS; rule <= GNN_SELECT_GAT; rule++)
	{
		gnn_selector s;
		gnn_epoch_metrics em;
		bool		all = true;

		gnn_selector_init(&s, (gnn_select) rule);
		memset(&em, 0, sizeof(em));
		em.val_loss = em.val_acc = NAN;
		for (int e = 1; e <= 20; e++)
		{
			em.epoch = e;
			em.train_loss = 1.0f / e;
			all &= gnn_selector_step(&s, &em) && s.wait == 0;
		}
		CHECK(all, "rule %d without validation: every epoch kept, patience never runs down", rule);
	}
	{
		gnn_selector s;
		gnn_epoch_metrics em;
		bool		first,
					second;

		/* a diverged model: NAN loss, real accuracy; that is no improvement */
		gnn_selector_init(&s, GNN_SELECT_VAL_LOSS);
		memset(&em, 0, sizeof(em));
		em.val_loss = 0.5f;
		em.val_acc = 0.8f;
		first = gnn_selector_step(&s, &em);
		em.val_loss = NAN;
		em.val_acc = 0.5f;
		second = gnn_selector_step(&s, &em);
		CHECK(first && !second && s.wait == 1 && s.best_loss == 0.5f,
			  "a NAN validation loss with a measured accuracy is not kept and counts against patience");
	}
}

/* cross-entropy over the labelled nodes of split s from host logits */
static double
host_loss(const gnn_graph *g, const float *z, int c, int s)
{
	double		sum = 0;
	int			k = 0;

	for (int64_t v = 0; v < g->num_nodes; v++)
	{
		double		m = -INFINITY,
					e = 0;

		if (g->split[v] != s || g->labels[v] < 0)
			continue;
		for (int j = 0; j < c; j++)
			m = fmax(m, z[v * c + j]);
		for (int j = 0; j < c; j++)
			e += exp(z[v * c + j] - m);
		sum += m + log(e) - z[v * c + g->labels[v]];
		k++;
	}
	return k ? sum / k : NAN;
}

/* no validation nodes: the last epoch's weights, no early stop, NAN val metrics */
static void
test_no_val(void)
{
	int32_t		labels[N];
	uint8_t		split[N];
	tgraph		t;

	default_data(labels, split);
	for (int i = 0; i < N; i++)
		if (split[i] == GNN_SPLIT_VAL)
			split[i] = GNN_SPLIT_NONE;
	if (!make_graph(true, labels, split, &t))
		return;
	for (int k = 0; k < NLOOPS; k++)
		for (int rule = GNN_SELECT_VAL_LOSS; rule <= GNN_SELECT_GAT; rule++)
		{
			gnn_train_config cfg;
			gnn_train_result res;
			gnn_error	err;
			gnn_backend *be = NULL;
			gnn_model  *m = NULL;
			rec			r;
			gnn_status	st;

			if (k != FULL && rule != GNN_SELECT_VAL_LOSS)
				continue;		/* one rule is enough for the other loops */
			small_config(rule == GNN_SELECT_GAT ? GNN_MODEL_GAT : GNN_MODEL_GCN, &cfg);
			cfg.select = (gnn_select) rule;
			cfg.patience = 2;
			cfg.epochs = 8;
			gnn_backend_create("cpu", 1, NULL, &be, &err);
			st = train_loop((loop_kind) k, &t.g, &cfg, be, &m, &r, &res, &err);
			CHECK(st == GNN_OK && res.epochs_run == 8 && !res.stopped_early && r.epochs == 8,
				  "%s, rule %d, no validation nodes: patience 2 does not stop training (%d of 8 epochs): %s",
				  loop_name[k], rule, res.epochs_run, st == GNN_OK ? "" : err.msg);
			CHECK(st == GNN_OK && res.best_epoch == 8 && r.kept == 8 && isnan(res.best.val_acc) &&
				  isnan(res.best.val_loss) && isfinite(res.best.test_acc) && isfinite(res.best.test_loss),
				  "%s, rule %d: every epoch kept (%d), the last is the result (best epoch %d), val metrics NAN",
				  loop_name[k], rule, r.kept, res.best_epoch);
			if (st == GNN_OK && m)
			{
				float		z[N * 2];
				double		l;

				/* the returned weights are the last epoch's: same test loss */
				st = gnn_model_infer(m, &t.g, cfg.row_normalise, -1, false, z, &err);
				l = host_loss(&t.g, z, 2, GNN_SPLIT_TEST);
				CHECK(st == GNN_OK && fabs(l - r.last.test_loss) < 1e-4 * fmax(1.0, fabs(l)),
					  "%s, rule %d: the returned model is the last epoch's (test loss %.6f, epoch 8 %.6f)",
					  loop_name[k], rule, l, r.last.test_loss);
			}
			gnn_model_free(m);
			gnn_backend_destroy(be);
		}
	free(t.region);
}

/* no test nodes: NAN test metrics, selection by validation as usual */
static void
test_no_test(void)
{
	int32_t		labels[N];
	uint8_t		split[N];
	tgraph		t;

	default_data(labels, split);
	for (int i = 0; i < N; i++)
		if (split[i] == GNN_SPLIT_TEST)
			labels[i] = -1;		/* test nodes without a label are no test nodes */
	if (!make_graph(true, labels, split, &t))
		return;
	for (int k = 0; k < NLOOPS; k++)
	{
		gnn_train_config cfg;
		gnn_train_result res;
		gnn_error	err;
		rec			r;
		gnn_status	st;

		small_config(GNN_MODEL_GCN, &cfg);
		st = train_loop((loop_kind) k, &t.g, &cfg, NULL, NULL, &r, &res, &err);
		CHECK(st == GNN_OK && isnan(res.best.test_acc) && isnan(res.best.test_loss) &&
			  isfinite(res.best.val_acc) && isfinite(res.best.val_loss) && isfinite(res.best.train_acc),
			  "%s, no labelled test node: test metrics NAN (%g, %g), val and train measured: %s", loop_name[k],
			  res.best.test_acc, res.best.test_loss, st == GNN_OK ? "" : err.msg);
	}
	free(t.region);
}

static void
on_epoch_loss(void *arg, const gnn_epoch_metrics *m)
{
	if (m->epoch == 1)
		*(float *) arg = m->train_loss;
}

/*
 * GraphSAINT walks from the labelled training nodes: with 2 labelled among
 * 48 training nodes and one root per step, every step has a loss (about
 * ln 2 for an untrained 2-class model); rooted at any training node, most
 * steps would have none and the epoch's mean loss would be near 0.
 */
static void
test_saint_roots(void)
{
	int32_t		labels[N];
	uint8_t		split[N];
	tgraph		t;
	gnn_train_config cfg;
	gnn_subgraph_config sc;
	gnn_train_result res;
	gnn_error	err;
	float		loss = -1;
	gnn_status	st;

	default_data(labels, split);
	for (int i = 0; i < N; i++)
	{
		split[i] = i < 4 ? GNN_SPLIT_VAL : GNN_SPLIT_TRAIN;
		labels[i] = i < 4 || i == 10 || i == 21 ? i % 2 : -1;
	}
	if (!make_graph(true, labels, split, &t))
		return;
	small_config(GNN_MODEL_GCN, &cfg);
	cfg.epochs = 1;
	gnn_subgraph_config_default(&sc);
	sc.roots = 1;
	sc.walk_length = 1;
	sc.batches = 40;
	st = gnn_train_saint(&t.g, &cfg, &sc, NULL, on_epoch_loss, &loss, NULL, NULL, NULL, &res, &err);
	CHECK(st == GNN_OK && loss > 0.3f,
		  "graphsaint roots are labelled training nodes: every step has a loss (epoch mean %.3f): %s", loss,
		  st == GNN_OK ? "" : err.msg);
	free(t.region);
}

/* host reference of a 1-layer model on isolated nodes: x W (mean over heads) + b */
static bool
isolated_output_matches(gnn_model *m, const gnn_graph *g, const float *out)
{
	const gnn_model_config *mc = gnn_model_config_of(m);
	int			iw = gnn_model_find_param(m, mc->kind == GNN_MODEL_SAGE ? "l0.root" : "l0.weight"),
				ib = gnn_model_find_param(m, "l0.bias");
	int			heads = mc->kind == GNN_MODEL_GAT ? mc->out_heads : 1;
	int			c = mc->out_dim;
	float		W[F * 2 * GNN_MAX_HEADS],
				b[2];
	gnn_error	err;
	double		worst = 0;

	if (iw < 0 || ib < 0 || c != 2 ||
		gnn_tensor_download(&gnn_model_param(m, iw)->w, W, &err) != GNN_OK ||
		gnn_tensor_download(&gnn_model_param(m, ib)->w, b, &err) != GNN_OK)
		return false;
	for (int64_t v = 0; v < g->num_nodes; v++)
		for (int j = 0; j < c; j++)
		{
			double		y = 0;

			for (int h = 0; h < heads; h++)
				for (int k = 0; k < F; k++)
					y += (double) g->feat[v * F + k] * W[k * heads * c + h * c + j];
			y = y / heads + b[j];
			worst = fmax(worst, fabs(y - out[v * c + j]));
		}
	return worst < 1e-5;
}

/* a node table without edges: build, train full-batch, infer */
static void
test_edgeless(void)
{
	int32_t		labels[N];
	uint8_t		split[N];
	tgraph		t;

	default_data(labels, split);
	if (!make_graph(false, labels, split, &t))
		return;
	CHECK(t.g.num_edges == 0 && t.g.num_nodes == N, "edgeless graph: %lld nodes, %lld edges",
		  (long long) t.g.num_nodes, (long long) t.g.num_edges);
	for (int kind = GNN_MODEL_GCN; kind <= GNN_MODEL_GAT; kind++)
		for (int layers = 1; layers <= 2; layers++)
		{
			gnn_train_config cfg;
			gnn_train_result res;
			gnn_error	err;
			gnn_backend *be = NULL;
			gnn_model  *m = NULL;
			rec			r;
			gnn_status	st;
			float		p[N * 2];
			bool		ok = true;

			small_config((gnn_model_kind) kind, &cfg);
			cfg.layers = layers;
			cfg.epochs = 60;
			cfg.lr = 0.05f;
			cfg.patience = 0;
			cfg.weight_decay = 0;
			gnn_backend_create("cpu", 1, NULL, &be, &err);
			st = train_loop(FULL, &t.g, &cfg, be, &m, &r, &res, &err);
			CHECK(st == GNN_OK && res.epochs_run == 60 && isfinite(res.best.train_loss) &&
				  res.best.test_acc >= 0.9f,
				  "edgeless %s, %d layer(s): trains on its own features (test acc %.3f): %s",
				  gnn_model_kind_name((gnn_model_kind) kind), layers, res.best.test_acc,
				  st == GNN_OK ? "" : err.msg);
			if (st != GNN_OK)
			{
				gnn_backend_destroy(be);
				continue;
			}
			st = gnn_model_infer(m, &t.g, true, -1, true, p, &err);
			for (int v = 0; v < N && st == GNN_OK; v++)
				ok &= isfinite(p[v * 2]) && fabsf(p[v * 2] + p[v * 2 + 1] - 1.0f) < 1e-5f;
			CHECK(st == GNN_OK && ok, "edgeless %s, %d layer(s): inference gives probabilities: %s",
				  gnn_model_kind_name((gnn_model_kind) kind), layers, st == GNN_OK ? "" : err.msg);
			if (layers == 1)
			{
				st = gnn_model_infer(m, &t.g, false, 0, false, p, &err);
				CHECK(st == GNN_OK && isolated_output_matches(m, &t.g, p),
					  "edgeless %s: an isolated node's output is x W + b (its self loop only)",
					  gnn_model_kind_name((gnn_model_kind) kind));
			}
			gnn_model_free(m);
			gnn_backend_destroy(be);
		}
	free(t.region);
}

/* layer = layers-1 is the output layer's raw scores; a 1-layer model's layer 0 is its output */
static void
test_infer_layers(void)
{
	int32_t		labels[N];
	uint8_t		split[N];
	tgraph		t;

	default_data(labels, split);
	if (!make_graph(true, labels, split, &t))
		return;
	for (int layers = 1; layers <= 2; layers++)
	{
		gnn_train_config cfg;
		gnn_train_result res;
		gnn_error	err;
		gnn_backend *be = NULL;
		gnn_model  *m = NULL;
		rec			r;
		float		raw[N * 2],
					last[N * 2],
					prob[N * 2];
		double		worst = 0;
		gnn_status	st;

		small_config(GNN_MODEL_GCN, &cfg);
		cfg.layers = layers;
		cfg.epochs = 5;
		gnn_backend_create("cpu", 1, NULL, &be, &err);
		if (train_loop(FULL, &t.g, &cfg, be, &m, &r, &res, &err) != GNN_OK)
		{
			CHECK(0, "train a %d-layer gcn: %s", layers, err.msg);
			gnn_backend_destroy(be);
			continue;
		}
		CHECK(gnn_model_layer_dim(m, layers - 1) == 2, "%d-layer gcn: the last layer is %d wide (the classes)",
			  layers, gnn_model_layer_dim(m, layers - 1));
		memset(last, 0xff, sizeof(last));
		st = gnn_model_infer(m, &t.g, true, -1, false, raw, &err);
		if (st == GNN_OK)
			st = gnn_model_infer(m, &t.g, true, layers - 1, false, last, &err);
		CHECK(st == GNN_OK && memcmp(raw, last, sizeof(raw)) == 0,
			  "%d-layer gcn: layer %d = layer -1 without softmax (the logits): %s", layers, layers - 1,
			  st == GNN_OK ? "" : err.msg);
		st = gnn_model_infer(m, &t.g, true, layers - 1, true, last, &err);
		CHECK(st == GNN_OK && memcmp(raw, last, sizeof(raw)) == 0,
			  "%d-layer gcn: softmax does not apply to a layer output", layers);
		st = gnn_model_infer(m, &t.g, true, -1, true, prob, &err);
		for (int v = 0; v < N; v++)
		{
			double		mx = fmax(raw[v * 2], raw[v * 2 + 1]),
						e0 = exp(raw[v * 2] - mx),
						e1 = exp(raw[v * 2 + 1] - mx);

			worst = fmax(worst, fabs(prob[v * 2] - e0 / (e0 + e1)));
		}
		CHECK(st == GNN_OK && worst < 1e-6, "%d-layer gcn: layer -1 with softmax = softmax of the logits (%.2g)",
			  layers, worst);
		CHECK(gnn_model_infer(m, &t.g, true, layers, false, raw, &err) == GNN_ERR_INVALID &&
			  gnn_model_infer(m, &t.g, true, -2, false, raw, &err) == GNN_ERR_INVALID,
			  "%d-layer gcn: layers %d and -2 do not exist: %s", layers, layers, err.msg);
		gnn_model_free(m);
		gnn_backend_destroy(be);
	}
	free(t.region);
}

/* the per-class report: a hand-counted confusion matrix, ties, NaN scores, other splits and unlabelled rows left out */
static void
test_confusion(void)
{
	/* 3 classes; rows: scores of classes 0, 1, 2 */
	const float scores[] = {
		0.9f, 0.05f, 0.05f,		/* true 0 -> 0 */
		0.2f, 0.7f, 0.1f,		/* true 0 -> 1 */
		0.1f, 0.8f, 0.1f,		/* true 1 -> 1 */
		0.4f, 0.4f, 0.2f,		/* true 2 -> 0 (a tie goes to the lower class) */
		NAN, 0.1f, 0.3f,		/* true 2 -> 2 (a NaN score is never chosen) */
		0.1f, 0.1f, 0.8f,		/* another split: left out */
		0.1f, 0.1f, 0.8f		/* unlabelled: left out */
	};
	const int32_t labels[] = {0, 0, 1, 2, 2, 1, -1};
	const uint8_t split[] = {GNN_SPLIT_TEST, GNN_SPLIT_TEST, GNN_SPLIT_TEST, GNN_SPLIT_TEST, GNN_SPLIT_TEST,
	GNN_SPLIT_VAL, GNN_SPLIT_TEST};
	const int64_t want[9] = {1, 1, 0, 0, 1, 0, 1, 0, 1};
	int64_t		conf[9];
	double		p,
				r,
				f;
	int64_t		n = gnn_confusion(scores, 3, labels, split, GNN_SPLIT_TEST, 7, conf);

	CHECK(n == 5 && memcmp(conf, want, sizeof(want)) == 0,
		  "confusion matrix of 5 test rows: [[%lld %lld %lld] [%lld %lld %lld] [%lld %lld %lld]]", (long long) conf[0],
		  (long long) conf[1], (long long) conf[2], (long long) conf[3], (long long) conf[4], (long long) conf[5],
		  (long long) conf[6], (long long) conf[7], (long long) conf[8]);
	gnn_class_prf(conf, 3, 0, &p, &r, &f);
	CHECK(fabs(p - 0.5) < 1e-12 && fabs(r - 0.5) < 1e-12 && fabs(f - 0.5) < 1e-12, "class 0: precision 1/2, recall 1/2, F1 1/2");
	gnn_class_prf(conf, 3, 1, &p, &r, &f);
	CHECK(fabs(p - 0.5) < 1e-12 && fabs(r - 1.0) < 1e-12 && fabs(f - 2.0 / 3) < 1e-12, "class 1: precision 1/2, recall 1, F1 2/3");
	gnn_class_prf(conf, 3, 2, &p, &r, &f);
	CHECK(fabs(p - 1.0) < 1e-12 && fabs(r - 0.5) < 1e-12 && fabs(f - 2.0 / 3) < 1e-12, "class 2: precision 1, recall 1/2, F1 2/3");
	{
		const int64_t none[4] = {0, 0, 0, 3};

		gnn_class_prf(none, 2, 0, &p, &r, &f);
		CHECK(isnan(p) && isnan(r) && isnan(f), "a class never predicted and never true: NAN");
	}
}

int
main(void)
{
	test_confusion();
	test_eval_rows();
	test_no_labelled_train();
	test_selector();
	test_no_val();
	test_no_test();
	test_saint_roots();
	test_edgeless();
	test_infer_layers();
	return check_done();
}
