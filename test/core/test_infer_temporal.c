/*
 * test_infer_temporal: time-aware inference (gnn_model_infer_temporal) and
 * the per-node streams it samples with (sample.h).
 *
 * The canary is a churn schema built by hand: customers (type 0, the
 * targets, each with a cutoff as its seed time) and their events (type 1,
 * each with a time), joined both ways (relation 0 event -> customer,
 * relation 1 customer -> event).  Features carry no class except on "flag"
 * events, which show their customer's class one-hot.  "Observed" customers
 * (training and validation) have their flag events before their cutoff, so a
 * time-aware model learns to read them; "canary" customers (the test split)
 * have theirs after it, in their future.  Asked as of each customer's
 * cutoff (the training rule), a canary customer shows nothing of its class:
 * accuracy stays at chance.  Asked with the whole graph (gnn_model_infer),
 * the future leaks and accuracy is near 1.
 *
 * Checked:
 *  - per-node streams: a seed's sampled neighbourhood (its arcs, in graph
 *    indices, relations and bounds) is the same alone, in a batch, in
 *    another order, on 1 and 2 threads, under both strategies; and the
 *    option off keeps the old per-chunk streams (the sample differs with
 *    the batch, as before); no sampled node is later than its seed's bound;
 *  - inference: a node's row is the same alone, in a batch, in another
 *    order (to float summation order) and on 1 or 2 threads (bit for bit),
 *    and repeated positions get their node's row; as_of bounds every node;
 *  - the canary, as above, and as_of after every event brings the leak back;
 *  - evaluation and inference agree: the test accuracy the training run
 *    recorded is the accuracy of time-aware inference on the test nodes.
 */
#include "check.h"
#include "typed_graph.h"

typedef tg_arc arc;
#include "infer/infer.h"
#include "train/train.h"
#include "train/train_mb.h"

#include <math.h>

/* ------------------------------------------------------------------ the canary schema */

#define NC 1000				/* customers */
#define PAST_NOISE 4			/* noise events before the cutoff */
#define FUT_NOISE 3				/* noise events after it */
#define FLAGS 3					/* flag events (before the cutoff when observed, after when canary) */
#define DIM 5					/* [customer const, event const, noise, class 0, class 1] */

typedef struct canary
{
	gnn_graph	g;
	int64_t    *rptr;
	int32_t    *ridx;
	int16_t    *rtype;
	int16_t    *ntype;
	float	   *feat;
	int32_t    *labels;
	uint8_t    *split;
	int64_t    *time;
	int64_t    *seed_time;
	int64_t		type_ptr[3];
	gnn_edge_type et[2];
} canary;

static bool
is_canary(int64_t c)
{
	return c % 5 == 4;			/* the test split */
}

static void
make_canary(canary *k, uint64_t seed)
{
	int64_t		ne = NC * (PAST_NOISE + FUT_NOISE + FLAGS),
				n = NC + ne,
				m = 0;
	arc		   *arcs = malloc(sizeof(arc) * 2 * ne);
	gnn_rng		r;

	memset(k, 0, sizeof(*k));
	gnn_rng_seed(&r, seed);
	k->ntype = malloc(sizeof(int16_t) * n);
	k->feat = calloc(n * DIM, sizeof(float));
	k->labels = malloc(sizeof(int32_t) * n);
	k->split = malloc(n);
	k->time = malloc(sizeof(int64_t) * n);
	k->seed_time = malloc(sizeof(int64_t) * n);
	for (int64_t v = 0; v < n; v++)
	{
		k->ntype[v] = v < NC ? 0 : 1;
		k->labels[v] = -1;
		k->split[v] = GNN_SPLIT_NONE;
		k->seed_time[v] = GNN_TIME_NONE;
		k->feat[v * DIM + (v < NC ? 0 : 1)] = 1.0f;
		k->feat[v * DIM + 2] = (float) (2 * gnn_rng_double(&r) - 1);
	}
	for (int64_t c = 0, e = NC; c < NC; c++)
	{
		int64_t		cut = 100 + (int64_t) gnn_rng_below(&r, 100);
		int32_t		y = (int32_t) gnn_rng_below(&r, 2);

		k->labels[c] = y;
		k->split[c] = is_canary(c) ? GNN_SPLIT_TEST : c % 5 == 3 ? GNN_SPLIT_VAL : GNN_SPLIT_TRAIN;
		k->time[c] = GNN_TIME_NONE;	/* a customer is always there; it predicts as of its cutoff */
		k->seed_time[c] = cut;
		for (int j = 0; j < PAST_NOISE + FUT_NOISE + FLAGS; j++, e++)
		{
			bool		flag = j >= PAST_NOISE + FUT_NOISE;
			bool		past = j < PAST_NOISE || (flag && !is_canary(c));

			k->time[e] = past ? (int64_t) gnn_rng_below(&r, (uint64_t) cut + 1)
				: cut + 1 + (int64_t) gnn_rng_below(&r, 100);
			if (flag)
				k->feat[e * DIM + 3 + y] = 1.0f;
			arcs[m++] = (arc) {(int32_t) c, (int32_t) e, 0};
			arcs[m++] = (arc) {(int32_t) e, (int32_t) c, 1};
		}
	}
	m = tg_reverse_csr(arcs, m, n, &k->rptr, &k->ridx, &k->rtype);
	free(arcs);
	k->g.num_nodes = n;
	k->g.num_edges = m;
	k->g.rindptr = k->rptr;
	k->g.rindices = k->ridx;
	k->g.rarc_type = k->rtype;
	k->g.feat_kind = GNN_FEAT_DENSE;
	k->g.feat_dim = DIM;
	k->g.feat = k->feat;
	k->g.labels = k->labels;
	k->g.num_classes = 2;
	k->g.split = k->split;
	k->g.time = k->time;
	k->g.seed_time = k->seed_time;
	k->g.num_node_types = 2;
	k->type_ptr[0] = 0;
	k->type_ptr[1] = NC;
	k->type_ptr[2] = n;
	k->g.type_ptr = k->type_ptr;
	k->g.node_type = k->ntype;
	k->g.num_edge_types = 2;
	k->et[0] = (gnn_edge_type) {1, 0, m / 2};	/* event -> customer */
	k->et[1] = (gnn_edge_type) {0, 1, m / 2};	/* customer -> event */
	k->g.etypes = k->et;
	for (int64_t v = 0; v < NC; v++)
	{
		k->g.n_train += k->split[v] == GNN_SPLIT_TRAIN;
		k->g.n_val += k->split[v] == GNN_SPLIT_VAL;
		k->g.n_test += k->split[v] == GNN_SPLIT_TEST;
	}
}

static void
canary_free(canary *k)
{
	free(k->rptr);
	free(k->ridx);
	free(k->rtype);
	free(k->ntype);
	free(k->feat);
	free(k->labels);
	free(k->split);
	free(k->time);
	free(k->seed_time);
}

/* fan-outs per hop and relation: a customer draws 3 (hop 1) then 2 (hop 2) of its events, an event its customer */
static const int32_t type_fanouts[2 * 2] = {3, 1, 2, 1};

static void
sampler_config(gnn_sampler_config *sc, int strategy, int threads)
{
	memset(sc, 0, sizeof(*sc));
	sc->kind = GNN_SAMPLER_NEIGHBOR;
	sc->nhops = 2;
	sc->fanouts[0] = 3;
	sc->fanouts[1] = 2;
	sc->type_fanouts = type_fanouts;
	sc->temporal = true;
	sc->temporal_strategy = strategy;
	sc->nthreads = threads;
}

/* ------------------------------------------------------------------ a seed's sampled neighbourhood */

/* one arc of a seed's neighbourhood, in graph terms */
typedef struct garc
{
	int32_t		hop;
	int32_t		dst;
	int32_t		src;
	int16_t		rel;
	int64_t		bound;
} garc;

static int
cmp_garc(const void *a, const void *b)
{
	const garc *x = a,
			   *y = b;

	if (x->hop != y->hop)
		return x->hop - y->hop;
	if (x->dst != y->dst)
		return x->dst < y->dst ? -1 : 1;
	if (x->src != y->src)
		return x->src < y->src ? -1 : 1;
	if (x->rel != y->rel)
		return x->rel - y->rel;
	return (x->bound > y->bound) - (x->bound < y->bound);
}

/*
 * The arcs the model reads for the seed at local index i: hop h's rows of
 * the nodes within h hops of it (a destination's row at hop h feeds its
 * representation at that depth), sorted.  *later counts sampled nodes later
 * than their bound, *badb nodes whose bound is not the seed's.  Returns the
 * arc count (out has room for cap).
 */
static int64_t
seed_arcs(const gnn_graph *g, const gnn_minibatch *mb, int64_t i, garc *out, int64_t cap, int64_t *later,
		  int64_t *badb)
{
	int			L = mb->nhops;
	int64_t		n = mb->n_input,
				cnt = 0;
	char	   *in = calloc(n, 1);
	int64_t		sb = mb->bound[i];

	in[i] = 1;
	for (int h = 0; h < L; h++)
	{
		const gnn_block *b = &mb->blocks[L - 1 - h];
		char	   *next = malloc(n);

		memcpy(next, in, n);
		for (int64_t d = 0; d < b->n_dst; d++)
		{
			if (!in[d])
				continue;
			for (int64_t e = b->indptr[d]; e < b->indptr[d + 1]; e++)
			{
				int32_t		s = b->indices[e];
				int32_t		u = mb->input_nodes[s];

				if (cnt < cap)
					out[cnt] = (garc) {h, mb->input_nodes[d], u, b->etypes ? b->etypes[e] : 0, mb->bound[s]};
				cnt++;
				next[s] = 1;
				*later += g->time[u] != GNN_TIME_NONE && g->time[u] > sb;
				*badb += mb->bound[s] != sb;
			}
		}
		free(in);
		in = next;
	}
	free(in);
	if (cnt <= cap)
		qsort(out, cnt, sizeof(garc), cmp_garc);
	return cnt;
}

#define ARC_CAP 4096

/* the seed's sorted arcs when sampled in the batch seeds[0..n) (it is seeds[at]) */
static int64_t
arcs_in_batch(const gnn_graph *g, const gnn_sampler_config *sc, const int32_t *seeds, const int64_t *bounds,
			  int64_t n, int64_t at, uint64_t seed, garc *out, int64_t *later, int64_t *badb)
{
	gnn_sampler *s;
	gnn_minibatch mb;
	gnn_error	err;
	int64_t		cnt = -1;

	if (gnn_sampler_create(g, sc, &s, &err) != GNN_OK)
		return -1;
	if (gnn_sampler_sample_at(s, seeds, bounds, n, seed, &mb, &err) == GNN_OK)
	{
		/* the seeds are distinct here: seeds[at] is local node at */
		cnt = seed_arcs(g, &mb, at, out, ARC_CAP, later, badb);
	}
	gnn_sampler_free(s);
	return cnt;
}

static void
test_per_node_streams(const canary *k)
{
	const gnn_graph *g = &k->g;
	int32_t    *seeds = malloc(sizeof(int32_t) * NC);
	int32_t    *rev = malloc(sizeof(int32_t) * NC);
	int64_t    *bounds = malloc(sizeof(int64_t) * NC);
	int64_t    *rbounds = malloc(sizeof(int64_t) * NC);
	garc	   *a = malloc(sizeof(garc) * ARC_CAP),
			   *b = malloc(sizeof(garc) * ARC_CAP);

	for (int64_t i = 0; i < NC; i++)
	{
		seeds[i] = (int32_t) i;
		bounds[i] = gnn_temporal_bound(g, i, false, 0);
		rev[NC - 1 - i] = (int32_t) i;
		rbounds[NC - 1 - i] = bounds[i];
	}
	for (int strategy = 0; strategy <= 1; strategy++)
	{
		const char *sn = strategy ? "last" : "uniform";
		int64_t		differ = 0,
					checked = 0,
					later = 0,
					badb = 0,
					total = 0,
					old_differ = 0;

		for (int64_t c = 0; c < NC; c += 37)
		{
			gnn_sampler_config sc;
			int64_t		na,
						nb;

			sampler_config(&sc, strategy, 1);
			sc.per_node_streams = true;
			na = arcs_in_batch(g, &sc, seeds + c, bounds + c, 1, 0, 99, a, &later, &badb);
			/* in the batch of every customer, on 2 threads */
			sc.nthreads = 2;
			nb = arcs_in_batch(g, &sc, seeds, bounds, NC, c, 99, b, &later, &badb);
			differ += na < 0 || na != nb || memcmp(a, b, sizeof(garc) * na) != 0;
			/* in reverse order, on 1 thread */
			sc.nthreads = 1;
			nb = arcs_in_batch(g, &sc, rev, rbounds, NC, NC - 1 - c, 99, b, &later, &badb);
			differ += na != nb || memcmp(a, b, sizeof(garc) * na) != 0;
			/* in a batch of about half the customers, [c/2, c/2 + NC/2] */
			nb = arcs_in_batch(g, &sc, seeds + c / 2, bounds + c / 2, NC / 2 + 1, c - c / 2, 99, b, &later, &badb);
			differ += na != nb || memcmp(a, b, sizeof(garc) * na) != 0;
			total += na;
			checked++;
			/* the option off: the old per-chunk streams, which follow the batch */
			sc.per_node_streams = false;
			na = arcs_in_batch(g, &sc, seeds + c, bounds + c, 1, 0, 99, a, &later, &badb);
			nb = arcs_in_batch(g, &sc, rev, rbounds, NC, NC - 1 - c, 99, b, &later, &badb);
			old_differ += na != nb || memcmp(a, b, sizeof(garc) * na) != 0;
		}
		NOTE("%s: %lld seeds, %lld arcs read for them alone; %lld differ with per-chunk streams",
			 sn, (long long) checked, (long long) total, (long long) old_differ);
		CHECK(differ == 0 && total >= 8 * checked,
			  "per-node streams, %s: a seed's neighbourhood is the same alone, among all (2 threads), reversed, "
			  "and in half the batch (%lld of %lld differ)", sn, (long long) differ, (long long) (3 * checked));
		CHECK(later == 0 && badb == 0,
			  "per-node streams, %s: no sampled node later than its seed's bound, every node under its seed's bound "
			  "(%lld later, %lld bounds wrong)", sn, (long long) later, (long long) badb);
		if (strategy == 0)
			CHECK(old_differ > 0, "per-chunk streams (the default) still follow the batch: %lld of %lld differ",
				  (long long) old_differ, (long long) checked);
	}
	/* refused where it means nothing */
	{
		gnn_sampler_config sc;
		gnn_error	err;

		sampler_config(&sc, 0, 1);
		sc.kind = GNN_SAMPLER_LADIES;
		sc.type_fanouts = NULL;
		sc.temporal = false;
		sc.per_node_streams = true;
		CHECK(gnn_sampler_config_check(&sc, &err) == GNN_ERR_INVALID && strstr(err.msg, "per-node"),
			  "per-node streams with the ladies sampler refused: %s", err.msg);
		sampler_config(&sc, 0, 1);
		sc.first_hop = GNN_MAX_LAYERS;
		CHECK(gnn_sampler_config_check(&sc, &err) == GNN_ERR_INVALID, "first hop out of range refused: %s", err.msg);
	}
	free(seeds);
	free(rev);
	free(bounds);
	free(rbounds);
	free(a);
	free(b);
}

/* ------------------------------------------------------------------ a trained time-aware model */

#define EPOCHS 40
#define BATCH 64

static gnn_status
train_temporal(const gnn_graph *g, gnn_model_kind kind, gnn_backend *be, gnn_model **m, gnn_train_result *res,
			   gnn_error *err)
{
	gnn_train_config cfg;
	gnn_minibatch_config mbc;

	gnn_train_config_default(kind, &cfg);
	cfg.layers = 2;
	cfg.hidden = 16;
	cfg.dropout = 0.0f;
	cfg.weight_decay = 0.0f;
	cfg.lr = 0.02f;
	cfg.epochs = EPOCHS;
	cfg.row_normalise = false;
	cfg.threads = 1;
	cfg.seed = 11;
	cfg.select = GNN_SELECT_VAL_ACC;
	cfg.target_type = 0;
	memset(&mbc, 0, sizeof(mbc));
	sampler_config(&mbc.sampler, 0, 1);
	mbc.batch_size = BATCH;
	return gnn_train_minibatch(g, &cfg, &mbc, be, NULL, NULL, NULL, NULL, m, res, NULL, err);
}

static void
infer_config(gnn_infer_temporal_config *c, int threads, int batch)
{
	memset(c, 0, sizeof(*c));
	sampler_config(&c->sampler, 0, threads);
	c->seed = gnn_infer_temporal_seed(11);
	c->batch_size = batch;
	c->row_normalise = false;
}

/* accuracy of probability rows (n x 2) against the nodes' labels */
static double
accuracy(const canary *k, const int64_t *idx, int64_t n, const float *p)
{
	int64_t		right = 0;

	for (int64_t i = 0; i < n; i++)
		right += (p[2 * i + 1] > p[2 * i] ? 1 : 0) == k->labels[idx[i]];
	return n ? (double) right / n : NAN;
}

static bool
stop_now(void *arg)
{
	return ++*(int *) arg > 1;
}

static float
max_diff(const float *a, const float *b, int64_t n)
{
	float		d = 0;

	for (int64_t i = 0; i < n; i++)
		d = fmaxf(d, fabsf(a[i] - b[i]));
	return d;
}

static void
test_model(const canary *k, gnn_model_kind kind)
{
	const gnn_graph *g = &k->g;
	const char *kn = gnn_model_kind_name(kind);
	gnn_backend *be = NULL,
			   *be2 = NULL;
	gnn_model  *m = NULL,
			   *m2 = NULL;
	gnn_train_result res;
	gnn_error	err;
	gnn_status	st;
	gnn_infer_temporal_config c;
	int64_t		ntest = 0,
				ncust = NC;
	int64_t    *test = malloc(sizeof(int64_t) * NC),
			   *all = malloc(sizeof(int64_t) * NC),
			   *some = malloc(sizeof(int64_t) * 8);
	float	   *p = malloc(sizeof(float) * NC * 2),
			   *q = malloc(sizeof(float) * NC * 2),
			   *full = malloc(sizeof(float) * g->num_nodes * 2),
			   *emb = malloc(sizeof(float) * NC * 16),
			   *emb2 = malloc(sizeof(float) * NC * 16);
	double		acc_t,
				acc_full,
				acc_eval;

	gnn_backend_cpu_create(1, &be, &err);
	gnn_backend_cpu_create(2, &be2, &err);
	st = train_temporal(g, kind, be, &m, &res, &err);
	CHECK(st == GNN_OK, "%s: a time-aware model trains on the canary%s%s", kn, st ? ": " : "", st ? err.msg : "");
	if (st != GNN_OK)
		goto done;
	NOTE("%s: best epoch %d, train acc %.3f, val acc %.3f, test acc %.3f", kn, res.best_epoch, res.best.train_acc,
		 res.best.val_acc, res.best.test_acc);
	CHECK(res.best.val_acc >= 0.9f, "%s: it reads the flags it sees in the past: val acc %.3f >= 0.9", kn,
		  res.best.val_acc);
	for (int64_t v = 0; v < NC; v++)
	{
		all[v] = v;
		if (k->split[v] == GNN_SPLIT_TEST)
			test[ntest++] = v;
	}

	/* evaluation and inference agree: the batches evaluation used (test nodes ascending, BATCH each) */
	infer_config(&c, 1, BATCH);
	st = gnn_model_infer_temporal(m, g, &c, -1, true, test, ntest, p, &err);
	acc_eval = st == GNN_OK ? accuracy(k, test, ntest, p) : NAN;
	CHECK(st == GNN_OK && (float) acc_eval == res.best.test_acc,
		  "%s: time-aware inference scores the test accuracy the run recorded (%.6f, recorded %.6f)%s%s", kn,
		  acc_eval, res.best.test_acc, st ? ": " : "", st ? err.msg : "");
	/* and in other batches (every customer at once, 2 threads) */
	infer_config(&c, 2, 4096);
	st = gnn_model_infer_temporal(m, g, &c, -1, true, all, ncust, q, &err);
	{
		int64_t		right = 0;

		for (int64_t i = 0; st == GNN_OK && i < ntest; i++)
			right += (q[2 * test[i] + 1] > q[2 * test[i]]) == k->labels[test[i]];
		CHECK(st == GNN_OK && (float) ((double) right / ntest) == res.best.test_acc,
			  "%s: the same from one batch of every customer on 2 threads (%.6f)", kn, (double) right / ntest);
	}

	/* the canary: as of the cutoffs, chance; with the whole graph, the future leaks */
	acc_t = acc_eval;
	st = gnn_model_infer(m, g, false, -1, true, full, &err);
	acc_full = 0;
	for (int64_t i = 0; st == GNN_OK && i < ntest; i++)
		acc_full += (full[2 * test[i] + 1] > full[2 * test[i]]) == k->labels[test[i]];
	acc_full /= ntest;
	NOTE("%s canary: %lld test customers, accuracy %.3f as of their cutoffs, %.3f on the whole graph", kn,
		 (long long) ntest, acc_t, acc_full);
	CHECK(fabs(acc_t - 0.5) <= 0.12, "%s canary: labels carried by future events do not lift time-aware "
		  "predictions above chance (accuracy %.3f)", kn, acc_t);
	CHECK(st == GNN_OK && acc_full >= 0.9, "%s canary: the whole-graph pass does read the future (accuracy %.3f)", kn,
		  acc_full);

	/* as_of: after every event, the flags are there again; before every event, nothing is */
	infer_config(&c, 1, 128);
	c.has_as_of = true;
	c.as_of = 1000;
	st = gnn_model_infer_temporal(m, g, &c, -1, true, test, ntest, p, &err);
	CHECK(st == GNN_OK && accuracy(k, test, ntest, p) >= 0.9,
		  "%s: as_of after every event reads the future flags (accuracy %.3f)", kn, accuracy(k, test, ntest, p));
	c.as_of = -1;
	st = gnn_model_infer_temporal(m, g, &c, -1, true, test, ntest, p, &err);
	CHECK(st == GNN_OK && fabs(accuracy(k, test, ntest, p) - 0.5) <= 0.12,
		  "%s: as_of before every event shows no flag (accuracy %.3f)", kn, accuracy(k, test, ntest, p));
	/* as_of is every node's bound: the same as every customer's seed time moved there */
	{
		canary		moved = *k;
		int64_t    *st2 = malloc(sizeof(int64_t) * g->num_nodes);

		memcpy(st2, k->seed_time, sizeof(int64_t) * g->num_nodes);
		for (int64_t v = 0; v < NC; v++)
			st2[v] = 150;
		moved.g.seed_time = st2;
		infer_config(&c, 1, 100);
		c.has_as_of = true;
		c.as_of = 150;
		st = gnn_model_infer_temporal(m, g, &c, -1, true, all, ncust, p, &err);
		infer_config(&c, 1, 100);
		if (st == GNN_OK)
			st = gnn_model_infer_temporal(m, &moved.g, &c, -1, true, all, ncust, q, &err);
		CHECK(st == GNN_OK && memcmp(p, q, sizeof(float) * 2 * ncust) == 0,
			  "%s: as_of bounds every node as a seed time there would (bit for bit)", kn);
		free(st2);
	}

	/* a node alone, among others, reordered, repeated; 1 and 2 threads */
	{
		int64_t		pick[4] = {test[0], test[ntest / 2], 3, NC - 1};
		float		alone[4 * 2] = {0},
					inall[4 * 2] = {0};
		float		d = 0;

		infer_config(&c, 1, 7);
		st = gnn_model_infer_temporal(m, g, &c, -1, true, all, ncust, q, &err);	/* in batches of 7 */
		for (int j = 0; st == GNN_OK && j < 4; j++)
		{
			infer_config(&c, 1, 1);
			st = gnn_model_infer_temporal(m, g, &c, -1, true, &pick[j], 1, alone + 2 * j, &err);
			memcpy(inall + 2 * j, q + 2 * pick[j], sizeof(float) * 2);
		}
		d = max_diff(alone, inall, 8);
		CHECK(st == GNN_OK && d <= 1e-5f, "%s: a node's probabilities alone equal its row in batches of 7 (max diff %g)",
			  kn, d);
		/* reversed, with repeats */
		for (int j = 0; j < 8; j++)
			some[j] = pick[3 - (j % 4)];
		infer_config(&c, 1, 2);
		st = gnn_model_infer_temporal(m, g, &c, -1, true, some, 8, p, &err);
		for (int j = 0; st == GNN_OK && j < 8; j++)
			d = fmaxf(d, max_diff(p + 2 * j, q + 2 * some[j], 2));
		CHECK(st == GNN_OK && d <= 1e-5f && memcmp(p, p + 8, sizeof(float) * 8) == 0,
			  "%s: reversed and repeated positions get their node's row (max diff %g)", kn, d);
		/* one batch, 1 against 2 threads (sampler and backend): bit for bit */
		{
			gnn_rng		r;

			gnn_rng_seed(&r, 1);
			st = gnn_model_create(be2, gnn_model_config_of(m), &r, &m2, &err);
			if (st == GNN_OK)
			{
				float	   *w = malloc(sizeof(float) * (gnn_model_weights_count(m) + 1));

				st = gnn_model_weights_get(m, w, &err);
				if (st == GNN_OK)
					st = gnn_model_weights_set(m2, w, &err);
				free(w);
			}
			infer_config(&c, 1, 4096);
			if (st == GNN_OK)
				st = gnn_model_infer_temporal(m, g, &c, -1, true, all, ncust, p, &err);
			infer_config(&c, 2, 4096);
			if (st == GNN_OK)
				st = gnn_model_infer_temporal(m2, g, &c, -1, true, all, ncust, q, &err);
			CHECK(st == GNN_OK && memcmp(p, q, sizeof(float) * 2 * ncust) == 0,
				  "%s: the same batch on 1 and 2 threads gives the same bits%s%s", kn, st ? ": " : "",
				  st ? err.msg : "");
		}
	}

	/* the embedding: layer 0 alone, and as the output's pass left it */
	{
		int32_t		hd = gnn_model_layer_dim(m, 0);
		float		d;

		infer_config(&c, 1, 50);
		c.also_layer = 0;
		c.also_out = emb2;
		st = gnn_model_infer_temporal(m, g, &c, -1, true, all, ncust, p, &err);
		infer_config(&c, 1, 33);
		if (st == GNN_OK)
			st = gnn_model_infer_temporal(m, g, &c, 0, false, all, ncust, emb, &err);
		d = st == GNN_OK ? max_diff(emb, emb2, ncust * hd) : INFINITY;
		CHECK(st == GNN_OK && hd == 16 && d <= 1e-4f,
			  "%s: layer 0 sampled on its own (the last hop) is the embedding the prediction was computed from "
			  "(max diff %g)", kn, d);
	}

	/* cancellation and refusals */
	{
		int			calls = 0;

		infer_config(&c, 1, 16);
		c.should_stop = stop_now;
		c.stop_arg = &calls;
		st = gnn_model_infer_temporal(m, g, &c, -1, true, all, ncust, p, &err);
		CHECK(st == GNN_ERR_CANCELLED && calls == 2, "%s: should_stop is polled between batches (%d calls)", kn, calls);
		infer_config(&c, 1, 16);
		c.sampler.nhops = 1;
		CHECK(gnn_model_infer_temporal(m, g, &c, -1, true, all, ncust, p, &err) == GNN_ERR_INVALID,
			  "%s: a sampler that does not match the model refused: %s", kn, err.msg);
		infer_config(&c, 1, 16);
		c.sampler.temporal = false;
		c.has_as_of = true;
		CHECK(gnn_model_infer_temporal(m, g, &c, -1, true, all, ncust, p, &err) == GNN_ERR_INVALID,
			  "%s: as_of without time-aware sampling refused: %s", kn, err.msg);
		infer_config(&c, 1, 16);
		some[0] = g->num_nodes;
		CHECK(gnn_model_infer_temporal(m, g, &c, -1, true, some, 1, p, &err) == GNN_ERR_INVALID,
			  "%s: a node out of range refused: %s", kn, err.msg);
		CHECK(gnn_model_infer_temporal(m, g, &c, 2, true, some, 0, p, &err) == GNN_ERR_INVALID,
			  "%s: a layer the model does not have refused: %s", kn, err.msg);
	}
done:
	gnn_model_free(m);
	gnn_model_free(m2);
	gnn_backend_destroy(be);
	gnn_backend_destroy(be2);
	free(test);
	free(all);
	free(some);
	free(p);
	free(q);
	free(full);
	free(emb);
	free(emb2);
}

int
main(void)
{
	canary		k;

	make_canary(&k, 42);
	test_per_node_streams(&k);
	test_model(&k, GNN_MODEL_RGCN);
	test_model(&k, GNN_MODEL_HSAGE);
	canary_free(&k);
	return check_done();
}
