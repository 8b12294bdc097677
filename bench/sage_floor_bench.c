/*
 * sage_floor_bench.c: issue #44's goal "the homogeneous SAGE step within 2x
 * of the GEMM floor of its own layer shapes (measured beside it)", in one
 * process on the core library and the CPU backend (no database).
 *
 *   bench/bin/sage_floor_bench                               (the scale)
 *   SCALE=16 EDGES=500000 BATCHES=20 bench/bin/sage_floor_bench   (a quick run)
 *
 * Environment (defaults): SCALE (20: 2^20 nodes), EDGES (10000000 R-MAT
 * edges, a=0.57 b=c=0.19, made undirected: ~20M arcs), DIM (64 dense random
 * features), CLASSES (8, a hash of the node), TRAIN_PCT (10), HIDDEN (128),
 * FANOUTS ("10,5", hop order, one layer each), BATCH (512), BATCHES (200
 * timed batches), THREADS (2), PREFETCH ("2,0": one training run each; 2 is
 * what gnn.train uses), DROPOUT (the model's default, 0.5), SHAPES (20
 * sampled batches for the floor), REPS (5), ROWNORM (0; 1: the gathered rows
 * divided by their sums, as gnn.train does by default: it counts in
 * "gathering", not in the step).
 *
 * 1. The step.  gnn_train_minibatch (GraphSAGE mean, Adam, no evaluation
 *    pass) on a caller-owned CPU backend of THREADS threads with its per-op
 *    timing on, in epochs of BATCHES/4 batches (max_batches; fewer on a
 *    small graph): the first epoch warms up (buffer growth, first touch,
 *    OpenMP's threads), the next ones, at least BATCHES batches, are timed
 *    (the counters at the epochs' ends, read by the progress callback).
 *    The step is gnn_minibatch_stats.compute_s per batch: block upload (the
 *    host CSR and its transpose), forward, loss, backward, optimiser step.
 *    The backend's timing splits it into GEMM, aggregation (spmm), the
 *    other ops (element-wise, dropout, loss, Adam, copies) and the host
 *    work outside any op (mostly block preparation).
 * 2. The layer shapes.  The loop draws its batches inside its pipeline, so
 *    SHAPES batches are sampled here with the same sampler configuration
 *    from shuffled training nodes: the same distribution, not the same
 *    batches (their mean input rows are printed beside the training run's
 *    stats.input_nodes / batches as a check).
 * 3. The floor.  For each of those batches, the dense products of a
 *    SAGE-mean training step as model.c makes them: each layer aggregates
 *    first where model.c's aggregate_first says that is less work (since
 *    2026-12-06; on these shapes both layers do), else transforms first:
 *      aggregate first  forward (A X) W_neigh and X[:n_dst] W_root on n_dst
 *                rows; backward dW_neigh = (A X)^T dP, dW_root = X[:n_dst]^T
 *                dP (k = n_dst), above the first layer also dP W_neigh^T and
 *                dX[:n_dst] += dP W_root^T (n_dst rows)
 *      transform first  Z = X W_neigh on all n_src rows; backward
 *                dW_neigh = X^T dZ (k = n_src) and dX = dZ W_neigh^T
 *                (n_src rows); the root's as above
 *    each the best of REPS calls of gnn_backend_gemm on the same backend
 *    object the step ran on (its row-block split over OpenMP threads,
 *    OpenBLAS single-threaded) - one untimed pass over every product, then
 *    REPS passes, so that one product's tries are spread over the whole
 *    measurement - summed over the step's
 *    products, averaged over the batches.  Beside it a second floor: every
 *    layer transforming first (what model.c did before).  The mean of the REPS passes is
 *    printed beside the best: far above it, other work had the cores (on a
 *    shared 2-core machine a 2-thread region waits for a descheduled
 *    thread), and the step, a mean, is then not comparable with the best.
 * 4. Block preparation per batch, best of REPS: gnn_dblock_create (both
 *    CSRs, as the loop built a SAGE block before 2026-12-06), against the
 *    raw CSR with its transpose alone (all a SAGE layer reads, and all the
 *    loop builds for one now: gnn_dblock_create_for).
 * Lines starting "RESULT" give the ratio per prefetch depth.
 */
#include "train/train_mb.h"
#include "nn/backend.h"
#include "bench_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_OPS (GNN_MAX_LAYERS * 6)


/* the core's mixer, stepped off its fixed point at 0 (node 0's hash) */
static inline uint64_t
mix64(uint64_t x)
{
	return gnn_mix64(x + 0x9e3779b97f4a7c15ULL);
}

typedef struct opts
{
	int			scale;
	int64_t		edges;
	int			dim;
	int			classes;
	double		train_pct;
	int			hidden;
	int			layers;
	int32_t		fanouts[GNN_MAX_LAYERS];	/* hop order */
	int			batch;
	int			batches;
	int			threads;
	int			nprefetch;
	int			prefetch[8];
	double		dropout;		/* < 0: the model's default */
	bool		rownorm;		/* row-normalised features (gnn.train's default) */
	int			shapes;
	int			reps;
} opts;

/* one dense product C[m x n] = op(A) op(B) (+ beta C) */
typedef struct gemm_op
{
	int			layer;
	const char *what;
	bool		ta,
				tb;
	int64_t		m,
				n,
				k;
	float		beta;
} gemm_op;

static double
op_flops(const gemm_op *g)
{
	return 2.0 * (double) g->m * (double) g->n * (double) g->k;
}

/*
 * The dense products of one SAGE-mean layer's training step, in model.c's
 * order (layer_forward, layer_backward); agg_first: the neighbour products
 * on the n_dst aggregated rows instead of the n_src input rows.
 */
static int
layer_gemms(int l, int64_t nd, int64_t ns, int64_t din, int64_t dout, bool want_dx, bool agg_first, gemm_op *out)
{
	int64_t		nr = agg_first ? nd : ns;
	int			c = 0;

	out[c++] = (gemm_op) {l, agg_first ? "mean(X) W_neigh" : "X W_neigh", false, false, nr, dout, din, 0.0f};
	out[c++] = (gemm_op) {l, "X_dst W_root", false, false, nd, dout, din, 0.0f};
	out[c++] = (gemm_op) {l, "dW_neigh = X^T dZ", true, false, din, dout, nr, 0.0f};
	if (want_dx)
		out[c++] = (gemm_op) {l, "dX = dZ W_neigh^T", false, true, nr, din, dout, 0.0f};
	out[c++] = (gemm_op) {l, "dW_root = X_dst^T dP", true, false, din, dout, nd, 0.0f};
	if (want_dx)
		out[c++] = (gemm_op) {l, "dX_dst += dP W_root^T", false, true, nd, din, dout, 1.0f};
	return c;
}

/* one batch's layer shapes (blocks input-first, as the model reads them) */
typedef struct batch_shape
{
	int64_t		nd[GNN_MAX_LAYERS],
				ns[GNN_MAX_LAYERS],
				nnz[GNN_MAX_LAYERS];
	int64_t		n_input;
	double		prep_s;			/* gnn_dblock_create of every layer (raw and self-looped CSRs) */
	double		raw_s;			/* only the raw CSR with its transpose (what SAGE reads) */
} batch_shape;

/* the step's products: as model.c chooses per layer (transform_first false), or all transforming first */
static int
step_gemms(const opts *o, const batch_shape *b, bool transform_first, gemm_op *ops)
{
	int			c = 0;

	for (int l = 0; l < o->layers; l++)
	{
		int64_t		din = l == 0 ? o->dim : o->hidden,
					dout = l == o->layers - 1 ? o->classes : o->hidden;
		/* model.c's aggregate_first */
		bool		agg = !transform_first &&
			(double) b->nnz[l] * din + (double) b->nd[l] * din * dout <
			(double) b->nnz[l] * dout + (double) b->ns[l] * din * dout;

		c += layer_gemms(l, b->nd[l], b->ns[l], din, dout, l > 0, agg, ops + c);
	}
	return c;
}

/* one call of one product on be, seconds */
static double
time_gemm(gnn_backend *be, const gemm_op *g, const float *A, const float *B, float *C)
{
	int64_t		lda = g->ta ? g->m : g->k,
				ldb = g->tb ? g->k : g->n;
	double		t = now_s();

	if (gnn_backend_gemm(be, g->ta, g->tb, g->m, g->n, g->k, 1.0f, A, lda, B, ldb, g->beta, C, g->n) != GNN_OK)
	{
		fprintf(stderr, "gemm: %s\n", be->err.msg);
		exit(1);
	}
	return now_s() - t;
}

/* counters at an epoch's end (the progress callback) */
typedef struct snap
{
	gnn_minibatch_stats st;
	double		t;
	double		cat[GNN_CAT_COUNT];
	int64_t		ncalls[GNN_CAT_COUNT];
	gnn_op_time ops[GNN_OP_TIME_SLOTS];	/* per op (gnn_backend_op_times) */
	int			nops;
} snap;

typedef struct run_out
{
	gnn_backend *be;
	gnn_minibatch_stats st;		/* the loop's, filled as it goes */
	snap		warm;			/* after the warm-up epoch */
	snap		last;			/* after the last epoch */
	int32_t		epochs;
	int64_t		per_epoch;		/* batches */
} run_out;

static void
on_epoch(void *arg, const gnn_epoch_metrics *m)
{
	run_out    *r = arg;
	snap	   *s = m->epoch == 1 ? &r->warm : &r->last;

	s->st = r->st;
	s->t = now_s();
	for (int c = 0; c < GNN_CAT_COUNT; c++)
	{
		s->cat[c] = r->be->time_s[c];
		s->ncalls[c] = r->be->ncalls[c];
	}
	{
		const gnn_op_time *ot;

		s->nops = gnn_backend_op_times(r->be, &ot);
		memcpy(s->ops, ot, sizeof(gnn_op_time) * (size_t) s->nops);
	}
}

/*
 * One training run: a warm-up epoch, then epochs of the same number of
 * batches until at least o->batches are timed.  An epoch is
 * min(o->batches / 4 rounded up, the training nodes' full batches)
 * batches (max_batches: no epoch's short last batch, as the floor's
 * batches are all full), so the warm-up costs a quarter of the timed part.
 */
static void
train_run(const gnn_graph *g, gnn_backend *be, const opts *o, int prefetch, run_out *out)
{
	gnn_train_config cfg;
	gnn_minibatch_config mbc;
	gnn_train_result res;
	gnn_error	err;
	int64_t		all = g->n_train / o->batch > 0 ? g->n_train / o->batch : 1,	/* full batches only */
				k = (o->batches + 3) / 4;

	memset(out, 0, sizeof(*out));
	out->be = be;
	out->per_epoch = k < all ? k : all;
	out->epochs = (int32_t) (1 + (o->batches + out->per_epoch - 1) / out->per_epoch);
	gnn_train_config_default(GNN_MODEL_SAGE, &cfg);
	cfg.aggr = GNN_AGGR_MEAN;
	cfg.layers = o->layers;
	cfg.hidden = o->hidden;
	cfg.threads = o->threads;
	cfg.row_normalise = o->rownorm;
	cfg.seed = 1;
	cfg.epochs = out->epochs;
	if (o->dropout >= 0)
		cfg.dropout = (float) o->dropout;
	memset(&mbc, 0, sizeof(mbc));
	mbc.sampler.kind = GNN_SAMPLER_NEIGHBOR;
	mbc.sampler.nhops = o->layers;
	memcpy(mbc.sampler.fanouts, o->fanouts, sizeof(o->fanouts));
	mbc.sampler.nthreads = o->threads;
	mbc.batch_size = o->batch;
	mbc.max_batches = (int32_t) out->per_epoch;
	mbc.skip_eval = true;
	mbc.prefetch = prefetch;
	gnn_backend_timing_reset(be);
	gnn_backend_timing_enable(be, true);
	if (gnn_train_minibatch(g, &cfg, &mbc, be, on_epoch, out, NULL, NULL, NULL, &res, &out->st, &err) != GNN_OK)
	{
		fprintf(stderr, "train: %s\n", err.msg);
		exit(1);
	}
	gnn_backend_timing_enable(be, false);
}

int
main(void)
{
	opts		o;
	gnn_rng		r;				/* the floor's matrices */
	gnn_graph	g;
	gnn_error	err;
	gnn_backend *be;
	void	   *region;
	uint64_t	size;
	double		t0 = now_s();
	const char *fo = getenv("FANOUTS"),
			   *pf = getenv("PREFETCH");
	batch_shape *shapes;
	double		step_ms[8] = {0},
				step_gemm_ms = 0,	/* the first depth's in-step GEMM time */
				list[GNN_MAX_LAYERS > 8 ? GNN_MAX_LAYERS : 8];	/* FANOUTS, PREFETCH */

	memset(&o, 0, sizeof(o));
	o.scale = (int) env_ll("SCALE", 20);
	o.edges = env_ll("EDGES", 10000000);
	o.dim = (int) env_ll("DIM", 64);
	o.classes = (int) env_ll("CLASSES", 8);
	o.train_pct = getenv("TRAIN_PCT") ? atof(getenv("TRAIN_PCT")) : 10.0;
	o.hidden = (int) env_ll("HIDDEN", 128);
	o.batch = (int) env_ll("BATCH", 512);
	o.batches = (int) env_ll("BATCHES", 200);
	o.threads = (int) env_ll("THREADS", 2);
	o.dropout = getenv("DROPOUT") ? atof(getenv("DROPOUT")) : -1.0;
	o.rownorm = env_ll("ROWNORM", 0) != 0;
	o.shapes = (int) env_ll("SHAPES", 20);
	o.reps = (int) env_ll("REPS", 5);
	o.layers = parse_list(fo ? fo : "10,5", list, GNN_MAX_LAYERS);
	for (int i = 0; i < o.layers; i++)
		o.fanouts[i] = (int32_t) list[i];
	o.nprefetch = parse_list(pf ? pf : "2,0", list, 8);
	for (int i = 0; i < o.nprefetch; i++)
		o.prefetch[i] = (int) list[i];
	if (o.scale < 1 || o.scale > 30 || o.edges < 1 || o.dim < 1 || o.classes < 2 || o.layers < 1 || o.batch < 1 ||
		o.batches < 1 || o.threads < 1 || o.shapes < 1 || o.reps < 1 || o.nprefetch < 1)
	{
		fprintf(stderr, "sage_floor_bench: bad settings (see the comment at the top of bench/sage_floor_bench.c)\n");
		return 2;
	}
	printf("# sage_floor_bench: SCALE=%d EDGES=%lld DIM=%d CLASSES=%d TRAIN_PCT=%g HIDDEN=%d FANOUTS=",
		   o.scale, (long long) o.edges, o.dim, o.classes, o.train_pct, o.hidden);
	for (int l = 0; l < o.layers; l++)
		printf("%s%d", l ? "," : "", o.fanouts[l]);
	printf(" BATCH=%d BATCHES=%d THREADS=%d PREFETCH=", o.batch, o.batches, o.threads);
	for (int i = 0; i < o.nprefetch; i++)
		printf("%s%d", i ? "," : "", o.prefetch[i]);
	printf(" DROPOUT=%s ROWNORM=%d SHAPES=%d REPS=%d\n", getenv("DROPOUT") ? getenv("DROPOUT") : "default(0.5)",
		   o.rownorm ? 1 : 0, o.shapes, o.reps);

	gnn_rng_seed(&r, 1);
	/* the graph */
	if (!bench_rmat_graph(o.scale, o.edges, o.dim, o.classes, o.train_pct / 100.0, 0.0, 1.0 - o.train_pct / 100.0,
						  -0.5f, &region, &size, &g, &err))
	{
		fprintf(stderr, "graph: %s\n", err.msg);
		return 1;
	}
	printf("graph: %lld nodes, %lld arcs, %d-dim dense features, %d classes, %lld training nodes; "
		   "region %.2f GB, generated and built in %.1f s\n",
		   (long long) g.num_nodes, (long long) g.num_edges, o.dim, g.num_classes, (long long) g.n_train,
		   size / 1e9, now_s() - t0);
	o.classes = g.num_classes;	/* the model's output width */
	if (gnn_backend_cpu_create(o.threads, &be, &err) != GNN_OK)
	{
		fprintf(stderr, "backend: %s\n", err.msg);
		return 1;
	}

	/* 1. the step, per prefetch depth */
	for (int i = 0; i < o.nprefetch; i++)
	{
		run_out		R;
		const snap *a,
				   *b;
		double		nb,
					step,
					ops = 0;

		train_run(&g, be, &o, o.prefetch[i], &R);
		a = &R.warm;
		b = &R.last;
		nb = (double) (b->st.batches - a->st.batches);
		if (nb < 1)
		{
			fprintf(stderr, "no batches timed\n");
			return 1;
		}
		step = (b->st.compute_s - a->st.compute_s) / nb;
		step_ms[i] = 1e3 * step;
		for (int c = 0; c < GNN_CAT_COUNT; c++)
			ops += b->cat[c] - a->cat[c];
		printf("step (prefetch %d, %d thread%s, %.0f batches in %d epochs of %lld after one such warm-up epoch): "
			   "%.2f ms per batch compute [GEMM %.2f (%.1f calls; the floor below has %d), aggregation %.2f, "
			   "other ops %.2f, outside the ops %.2f]; wall %.2f ms per batch (sampling %.2f, gathering %.2f, "
			   "waiting %.2f); %.0f input rows per batch\n",
			   o.prefetch[i], o.threads, o.threads > 1 ? "s" : "", nb, R.epochs - 1, (long long) R.per_epoch,
			   step_ms[i],
			   1e3 * (b->cat[GNN_CAT_DENSE] - a->cat[GNN_CAT_DENSE]) / nb,
			   (double) (b->ncalls[GNN_CAT_DENSE] - a->ncalls[GNN_CAT_DENSE]) / nb, 6 * o.layers - 2,
			   1e3 * (b->cat[GNN_CAT_AGG] - a->cat[GNN_CAT_AGG]) / nb,
			   1e3 * (b->cat[GNN_CAT_OTHER] - a->cat[GNN_CAT_OTHER]) / nb,
			   1e3 * (step - ops / nb),
			   1e3 * (b->t - a->t) / nb, 1e3 * (b->st.sample_s - a->st.sample_s) / nb,
			   1e3 * (b->st.gather_s - a->st.gather_s) / nb, 1e3 * (b->st.wait_s - a->st.wait_s) / nb,
			   (double) (b->st.input_nodes - a->st.input_nodes) / nb);
		/* the step's ops, most time first (the warm-up's first-timed order is the last snap's too) */
		{
			int			idx[GNN_OP_TIME_SLOTS],
						n = 0;

			for (int q = 0; q < b->nops; q++)
				if (b->ops[q].n > (q < a->nops ? a->ops[q].n : 0))
					idx[n++] = q;
			for (int x = 1; x < n; x++)
				for (int y = x; y > 0; y--)
				{
					double		ty = b->ops[idx[y]].s - (idx[y] < a->nops ? a->ops[idx[y]].s : 0),
								tz = b->ops[idx[y - 1]].s - (idx[y - 1] < a->nops ? a->ops[idx[y - 1]].s : 0);

					if (ty <= tz)
						break;
					int			t = idx[y];

					idx[y] = idx[y - 1];
					idx[y - 1] = t;
				}
			printf("  ops per batch (backend timing):");
			for (int x = 0; x < n; x++)
			{
				const gnn_op_time *ob = &b->ops[idx[x]];
				double		s0 = idx[x] < a->nops ? a->ops[idx[x]].s : 0;
				int64_t		n0 = idx[x] < a->nops ? a->ops[idx[x]].n : 0;

				printf("%s %s %.1f x %.1f us", x ? ";" : "", ob->name, (double) (ob->n - n0) / nb,
					   1e6 * (ob->s - s0) / (double) (ob->n - n0));
			}
			printf("\n");
		}
		if (i == 0)
			step_gemm_ms = 1e3 * (b->cat[GNN_CAT_DENSE] - a->cat[GNN_CAT_DENSE]) / nb;
	}

	/* 2. the layer shapes of SHAPES batches sampled as the loop samples them */
	shapes = calloc(o.shapes, sizeof(batch_shape));
	{
		gnn_sampler_config sc = {0};
		gnn_sampler *s;
		int32_t    *train = malloc(sizeof(int32_t) * (g.n_train + 1));
		int64_t		nt = 0;
		gnn_rng		rr;

		sc.kind = GNN_SAMPLER_NEIGHBOR;
		sc.nhops = o.layers;
		memcpy(sc.fanouts, o.fanouts, sizeof(o.fanouts));
		sc.nthreads = o.threads;
		for (int64_t v = 0; v < g.num_nodes; v++)
			if (g.split[v] == GNN_SPLIT_TRAIN && g.labels[v] >= 0)
				train[nt++] = (int32_t) v;
		gnn_rng_seed(&rr, 4242);
		gnn_shuffle_i32(&rr, train, nt);
		if (gnn_sampler_create(&g, &sc, &s, &err) != GNN_OK)
		{
			fprintf(stderr, "sampler: %s\n", err.msg);
			return 1;
		}
		for (int b = 0; b < o.shapes; b++)
		{
			gnn_minibatch mb;
			int64_t		off = ((int64_t) b * o.batch) % (nt > o.batch ? nt - o.batch + 1 : 1),
						bs = nt < o.batch ? nt : o.batch;
			batch_shape *sh = &shapes[b];

			if (gnn_sampler_sample(s, train + off, bs, gnn_rng_next(&rr), &mb, &err) != GNN_OK)
			{
				fprintf(stderr, "sample: %s\n", err.msg);
				return 1;
			}
			sh->n_input = mb.n_input;
			for (int l = 0; l < o.layers; l++)
			{
				sh->nd[l] = mb.blocks[l].n_dst;
				sh->ns[l] = mb.blocks[l].n_src;
				sh->nnz[l] = mb.blocks[l].nnz;
			}
			/* block preparation, best of REPS: as the loop does it, and only what SAGE reads */
			for (int rep = 0; rep < o.reps; rep++)
			{
				double		tp = 0,
							tr = 0;

				for (int l = 0; l < o.layers; l++)
				{
					gnn_dblock	db;
					gnn_dcsr	dc;
					double		t = now_s();

					if (gnn_dblock_create(be, &mb.blocks[l], &db, &err) != GNN_OK)
					{
						fprintf(stderr, "block: %s\n", err.msg);
						return 1;
					}
					gnn_dblock_free(&db);
					tp += now_s() - t;
					t = now_s();
					if (gnn_dcsr_create(be, mb.blocks[l].n_dst, mb.blocks[l].n_src, mb.blocks[l].nnz,
										mb.blocks[l].indptr, mb.blocks[l].indices, mb.blocks[l].weights, &dc,
										&err) != GNN_OK)
					{
						fprintf(stderr, "csr: %s\n", err.msg);
						return 1;
					}
					gnn_dcsr_free(&dc);
					tr += now_s() - t;
				}
				if (rep == 0 || tp < sh->prep_s)
					sh->prep_s = tp;
				if (rep == 0 || tr < sh->raw_s)
					sh->raw_s = tr;
			}
		}
		gnn_sampler_free(s);
		free(train);
	}

	/* 3. the floor: each product of the step, best of REPS, on the same backend */
	{
		gemm_op		ops[MAX_OPS];
		int			nops = 0;
		size_t		amax = 1,
					bmax = 1,
					cmax = 1;
		float	   *A,
				   *B,
				   *C;
		double		sum_t[2][MAX_OPS] = {{0}},
					sum_f[2][MAX_OPS] = {{0}},
					sum_m[2][MAX_OPS] = {{0}},
					sum_n[2][MAX_OPS] = {{0}},
					sum_k[2][MAX_OPS] = {{0}};
		int			nops_v[2] = {0};
		gemm_op		first[2][MAX_OPS];
		double		floor_s[2] = {0},
					floor_mean[2] = {0},	/* the mean of the REPS passes instead of the best */
					floor_f[2] = {0},
					prep = 0,
					raw = 0,
					mean_in = 0;
		double	   *best;

		for (int v = 0; v < 2; v++)
			for (int b = 0; b < o.shapes; b++)
			{
				nops = step_gemms(&o, &shapes[b], v == 1, ops);
				for (int q = 0; q < nops; q++)
				{
					size_t		a = (size_t) ops[q].m * ops[q].k,
								bb = (size_t) ops[q].k * ops[q].n,
								c = (size_t) ops[q].m * ops[q].n;

					amax = a > amax ? a : amax;
					bmax = bb > bmax ? bb : bmax;
					cmax = c > cmax ? c : cmax;
				}
			}
		if (gnn_backend_alloc(be, sizeof(float) * amax, (void **) &A) != GNN_OK ||
			gnn_backend_alloc(be, sizeof(float) * bmax, (void **) &B) != GNN_OK ||
			gnn_backend_alloc(be, sizeof(float) * cmax, (void **) &C) != GNN_OK)
		{
			fprintf(stderr, "out of memory for the floor's matrices\n");
			return 1;
		}
		for (size_t i = 0; i < amax; i++)
			A[i] = gnn_rng_float(&r) - 0.5f;
		for (size_t i = 0; i < bmax; i++)
			B[i] = 0.1f * (gnn_rng_float(&r) - 0.5f);
		for (size_t i = 0; i < cmax; i++)
			C[i] = gnn_rng_float(&r) - 0.5f;
		/*
		 * Every product once untimed, then REPS passes over all of them,
		 * keeping each one's best: its tries are spread over the whole
		 * measurement, so that a burst of other work on a shared machine
		 * does not spoil all of one product's tries.
		 */
		best = malloc(sizeof(double) * 2 * o.shapes * MAX_OPS);
		for (int rep = 0; rep <= o.reps; rep++)
			for (int b = 0; b < o.shapes; b++)
				for (int v = 0; v < 2; v++)
				{
					nops = step_gemms(&o, &shapes[b], v == 1, ops);
					for (int q = 0; q < nops; q++)
					{
						double	   *bt = &best[((size_t) b * 2 + v) * MAX_OPS + q],
									t = time_gemm(be, &ops[q], A, B, C);

						if (rep == 1 || (rep > 1 && t < *bt))
							*bt = t;
						if (rep > 0)
							floor_mean[v] += t;
					}
				}
		for (int b = 0; b < o.shapes; b++)
			for (int v = 0; v < 2; v++)
			{
				nops = step_gemms(&o, &shapes[b], v == 1, ops);
				nops_v[v] = nops;
				if (b == 0)
					memcpy(first[v], ops, sizeof(gemm_op) * nops);
				for (int q = 0; q < nops; q++)
				{
					double		t = best[((size_t) b * 2 + v) * MAX_OPS + q];

					sum_t[v][q] += t;
					sum_f[v][q] += op_flops(&ops[q]);
					sum_m[v][q] += ops[q].m;
					sum_n[v][q] += ops[q].n;
					sum_k[v][q] += ops[q].k;
					floor_s[v] += t;
					floor_f[v] += op_flops(&ops[q]);
				}
			}
		free(best);
		gnn_backend_free(be, A);
		gnn_backend_free(be, B);
		gnn_backend_free(be, C);
		for (int v = 0; v < 2; v++)
		{
			floor_s[v] /= o.shapes;
			floor_mean[v] /= (double) o.shapes * o.reps;
			floor_f[v] /= o.shapes;
		}
		for (int b = 0; b < o.shapes; b++)
		{
			prep += shapes[b].prep_s / o.shapes;
			raw += shapes[b].raw_s / o.shapes;
			mean_in += (double) shapes[b].n_input / o.shapes;
		}

		printf("layer shapes (mean of %d sampled batches of %d seeds; blocks input-first, layer 0 reads the features; "
			   "%.0f input rows per batch):\n", o.shapes, o.batch, mean_in);
		for (int l = 0; l < o.layers; l++)
		{
			double		nd = 0,
						ns = 0,
						nz = 0;
			int64_t		ns_lo = INT64_MAX,
						ns_hi = 0;

			for (int b = 0; b < o.shapes; b++)
			{
				nd += (double) shapes[b].nd[l] / o.shapes;
				ns += (double) shapes[b].ns[l] / o.shapes;
				nz += (double) shapes[b].nnz[l] / o.shapes;
				ns_lo = shapes[b].ns[l] < ns_lo ? shapes[b].ns[l] : ns_lo;
				ns_hi = shapes[b].ns[l] > ns_hi ? shapes[b].ns[l] : ns_hi;
			}
			printf("  layer %d: n_dst %.0f, n_src %.0f (%lld-%lld), nnz %.0f, d_in %d -> d_out %d\n", l, nd, ns,
				   (long long) ns_lo, (long long) ns_hi, nz, l == 0 ? o.dim : o.hidden,
				   l == o.layers - 1 ? o.classes : o.hidden);
		}
		for (int v = 0; v < 2; v++)
		{
			printf("%s:\n", v == 0 ? "GEMM floor, the model's products (model.c: each layer aggregates first where that is less work), mean per batch"
				   : "GEMM floor, every layer transforming first (model.c before 2026-12-06), mean per batch");
			for (int q = 0; q < nops_v[v]; q++)
				printf("  layer %d %-22s %s%s m %6.0f n %4.0f k %6.0f: %8.3f ms, %6.2f GFLOP/s\n", first[v][q].layer,
					   first[v][q].what, first[v][q].ta ? "T" : "N", first[v][q].tb ? "T" : "N",
					   sum_m[v][q] / o.shapes, sum_n[v][q] / o.shapes, sum_k[v][q] / o.shapes,
					   1e3 * sum_t[v][q] / o.shapes, sum_f[v][q] / sum_t[v][q] / 1e9);
			printf("  total: %.3f ms per batch, %.3f GFLOP, %.2f GFLOP/s (the mean of the %d passes instead of the "
				   "best: %.3f ms%s)\n", 1e3 * floor_s[v], floor_f[v] / 1e9, floor_f[v] / floor_s[v] / 1e9, o.reps,
				   1e3 * floor_mean[v], floor_mean[v] > 1.5 * floor_s[v] ? ", far above it: the machine was busy" : "");
		}
		printf("block preparation per batch (best of %d, all layers): gnn_dblock_create "
			   "(raw + self-looped GCN CSR, both with transposes) %.3f ms; the raw CSR and its transpose alone "
			   "(what a SAGE layer reads, and since 2026-12-06 all the loop builds for one) %.3f ms\n", o.reps,
			   1e3 * prep, 1e3 * raw);
		for (int i = 0; i < o.nprefetch; i++)
			printf("RESULT prefetch %d: step %.2f ms per batch (%.2f GFLOP/s of the model's products); "
				   "floor %.2f ms (%.2f GFLOP/s): %.2fx the floor (goal <= 2: %s); "
				   "%.2fx the transform-first floor (%.2f ms)\n",
				   o.prefetch[i], step_ms[i], floor_f[0] / (step_ms[i] / 1e3) / 1e9, 1e3 * floor_s[0],
				   floor_f[0] / floor_s[0] / 1e9, step_ms[i] / (1e3 * floor_s[0]),
				   step_ms[i] / (1e3 * floor_s[0]) <= 2.0 ? "met" : "not met",
				   step_ms[i] / (1e3 * floor_s[1]), 1e3 * floor_s[1]);
		printf("in-step GEMM time (prefetch %d) %.2f ms per batch = %.2fx the floor's products\n", o.prefetch[0],
			   step_gemm_ms, step_gemm_ms / (1e3 * floor_s[0]));
	}
	free(shapes);
	gnn_backend_destroy(be);
	free(region);
	return 0;
}
