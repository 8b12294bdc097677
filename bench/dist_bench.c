/*
 * dist_bench.c: what a training step costs over several ranks (issue #16,
 * "Scale"): full-batch GCN and GraphSAGE through the core's own path
 * (gnn_train_full with cfg.dist, Gloo over loopback), one METIS part per
 * rank, against one process on the whole graph in the same run.
 *
 *   dist_bench GRAPH EPOCHS HIDDEN RANKS...
 *     GRAPH  a dataset folder (../shared/data/cora) or rmat:NODES:EDGES:DIM
 *            (Graph500 R-MAT, undirected, duplicates merged, uniform
 *            features, 47 classes, 8% training nodes as in ogbn-products)
 *     RANKS  rank counts to run (1 is the whole graph in one process,
 *            cfg.dist NULL: what one server does)
 *   env: MODELS (default "gcn graphsage"), CUT_PARTS (extra part counts
 *        whose METIS cut is reported without training, default "8 16"),
 *        GNN_DIST_SO (default src/dist/gnn_dist.so)
 *
 * The whole graph is built once in the parent; for each rank count the
 * parent partitions it with the core's METIS (balance nodes and training
 * nodes: gnn.graph_part's default) and forks one process per rank.  Each
 * builds its part exactly as gnn.load_graph(part_column, part) does: its own
 * rows with features, labels and split, every arc touching them, the other
 * endpoints as halo nodes without features, each node's owner.  Ranks meet
 * through a file store (as the core tests do), train with one thread each
 * (OpenBLAS and the backend), and report per epoch: the training step's wall
 * time (forward, loss, backward, gradient allreduce, optimiser step), its
 * seconds and bytes inside allreduce and alltoallv (gnn_epoch_metrics,
 * counted by dist.c), the evaluation pass, and the process's CPU time.
 * Medians over epochs 2..EPOCHS.  The backend's timing (cfg.timing: clock
 * reads around its ops) splits each rank's loop into aggregation and dense
 * products, the figures a model of larger graphs scales by arcs and rows.  A collective's time includes waiting for
 * the slowest rank; "compute" is the step minus both.
 *
 * Prints markdown: the partitions' cuts and halos, then per model a table
 * of rank counts and per-rank lines.
 *
 * Minibatches (issue #43): with env FANOUTS ("10,5"), each rank trains
 * gnn_train_minibatch on its part built with HALO_HOPS hops of halo
 * (default: as many as the fan-outs), BATCH seeds a global step (default
 * 1024) shared by the ranks, PREFETCH batches ahead (default 1), no
 * evaluation; per step: the producer's sampling and gathering, the
 * computing thread's wait for it, the step (forward, loss, backward,
 * allreduce, optimiser), the allreduce's time and bytes; per rank the halo
 * it holds (nodes, their features), the job's set-up (the halo's features
 * fetched) and peak RSS.
 */
#include "graph/dataset.h"
#include "dist/dist.h"
#include "dist/halo.h"
#include "graph/partition.h"
#include "train/train.h"
#include "train/train_mb.h"
#include "../test/core/dist_store.h"
#include "bench_util.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif

extern void openblas_set_num_threads(int num_threads);

#define MAX_RANKS 8
#define MAX_EPOCHS 64
#define CLASSES 47

/* ------------------------------------------------------------------ the whole graph (the parent's, shared by fork) */

static int64_t n;				/* nodes, ids 0 .. n-1 */
static int64_t *aptr;			/* in-arcs of v: asrc[aptr[v] .. aptr[v+1]) -> v */
static int32_t *asrc;
static int32_t dim;
static float *feat;				/* n x dim */
static int32_t *labels;
static uint8_t *split;
static int32_t *part;			/* the current partition */
static char graph_name[256];
/* minibatches (env FANOUTS): the fan-outs, the parts' halo depth, the global batch */
static int	mb_hops,
			mb_fanouts[4],
			mb_halo_hops = 1,
			mb_batch = 1024,
			mb_prefetch = 1,
			mb_mesh2 = 1,		/* sampling across parts: a second mesh (env MESH2=0: in line) */
			mb_p3 = 0,			/* env P3=1: feature slices, every rank the whole graph and dim / K columns */
			p3_k,
			p3_K;
static uint32_t balance;		/* GNN_BAL_* for METIS */
static char balance_names[64];

static double
cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* keep g's arcs (already symmetric) as the whole graph's */
static void
take_arcs(const gnn_graph *g)
{
	aptr = malloc(sizeof(int64_t) * (n + 1));
	asrc = malloc(sizeof(int32_t) * (g->num_edges ? g->num_edges : 1));
	aptr[0] = 0;
	for (int64_t v = 0; v < n; v++)
	{
		int64_t		k = aptr[v];

		for (int64_t e = g->rindptr[v]; e < g->rindptr[v + 1]; e++)
			asrc[k++] = g->rindices[e];
		aptr[v + 1] = k;
	}
}

static int
load_dataset(const char *dir)
{
	gnn_dataset ds;
	gnn_error	err;

	if (gnn_dataset_load(dir, 1, &ds, &err) != GNN_OK)
	{
		fprintf(stderr, "%s: %s\n", dir, err.msg);
		return 1;
	}
	n = ds.g.num_nodes;
	dim = ds.g.feat_dim;
	feat = calloc((size_t) n * dim, sizeof(float));
	labels = malloc(sizeof(int32_t) * n);
	split = malloc(n);
	/* dense rows: distributed training takes dense features */
	for (int64_t v = 0; v < n; v++)
	{
		if (ds.g.feat_kind == GNN_FEAT_SPARSE)
			for (int64_t e = ds.g.fptr[v]; e < ds.g.fptr[v + 1]; e++)
				feat[v * dim + ds.g.fidx[e]] = ds.g.fval ? ds.g.fval[e] : 1.0f;
		else
			memcpy(feat + v * dim, gnn_graph_feat_row(&ds.g, v), sizeof(float) * dim);
		labels[v] = ds.g.labels[v];
		split[v] = ds.g.split[v];
	}
	take_arcs(&ds.g);
	snprintf(graph_name, sizeof(graph_name), "%s: %lld nodes, %lld arcs, %d-dim features (dense), %d classes",
			 dir, (long long) n, (long long) aptr[n], dim, ds.g.num_classes);
	gnn_dataset_free(&ds);
	return 0;
}

static int
make_rmat(int64_t nodes, int64_t edges, int32_t d)
{
	gnn_rng		rng;
	gnn_graph_input in;
	gnn_graph	g;
	void	   *region;
	uint64_t	size;
	gnn_error	err;
	int64_t    *src = malloc(sizeof(int64_t) * edges),
			   *dst = malloc(sizeof(int64_t) * edges),
			   *ids = malloc(sizeof(int64_t) * nodes),
				k = 0;
	int			scale = 0;

	n = nodes;
	dim = d;
	while ((1LL << scale) < n)
		scale++;
	gnn_rng_seed(&rng, 42);
	for (k = 0; k < edges; k++)
		rmat_edge(&rng, scale, n, true, &src[k], &dst[k]);
	feat = malloc(sizeof(float) * (size_t) n * dim);
	labels = malloc(sizeof(int32_t) * n);
	split = malloc(n);
	for (int64_t v = 0; v < n; v++)
	{
		uint64_t	r = gnn_rng_below(&rng, 100);

		ids[v] = v;
		labels[v] = (int32_t) gnn_rng_below(&rng, CLASSES);
		split[v] = r < 8 ? GNN_SPLIT_TRAIN : r < 10 ? GNN_SPLIT_VAL : GNN_SPLIT_TEST;
	}
	for (int64_t i = 0; i < n * dim; i++)
		feat[i] = (float) (gnn_rng_double(&rng) * 2.0 - 1.0);
	memset(&in, 0, sizeof(in));
	in.num_edges = edges;
	in.src = src;
	in.dst = dst;
	in.undirected = true;
	in.num_nodes = n;
	in.node_ids = ids;
	if (gnn_graph_build_region(&in, &region, &size, &g, &err) != GNN_OK)
	{
		fprintf(stderr, "rmat build: %s\n", err.msg);
		return 1;
	}
	take_arcs(&g);
	snprintf(graph_name, sizeof(graph_name),
			 "R-MAT (a=0.57, b=0.19, c=0.19): %lld nodes, %lld edges drawn, %lld arcs undirected after merging duplicates, "
			 "%d-dim features, %d classes, 8%% training nodes",
			 (long long) n, (long long) edges, (long long) aptr[n], dim, CLASSES);
	free(region);
	free(src);
	free(dst);
	free(ids);
	return 0;
}

/*
 * part k of K as gnn.load_graph(part_column, part) loads it (K = 1: the
 * whole graph, no owners): own rows in id order, then the halo
 */
static gnn_status
build_part(int k, int K, void **region, gnn_graph *g, int64_t *own_out, int64_t *halo_out, gnn_error *err)
{
	gnn_graph_input in;
	int32_t    *local = malloc(sizeof(int32_t) * n);	/* -1: not in the part */
	int64_t		own = 0,
				halo = 0,
				m = 0,
				nn;
	int64_t    *src,
			   *dst,
			   *ids;
	int32_t    *np,
			   *lab;
	uint8_t    *sp;
	float	   *x;
	uint64_t	size;
	gnn_status	st;

	uint8_t    *inner = malloc(n);	/* keeps every arc: own, or within mb_halo_hops - 1 hops */

	for (int64_t v = 0; v < n; v++)
	{
		local[v] = K == 1 || part[v] == k ? (int32_t) own++ : -1;
		inner[v] = K == 1 || part[v] == k;
	}
	for (int h = 1; K > 1 && h < mb_halo_hops; h++)
	{
		/* (2: reached this round) */
		for (int64_t v = 0; v < n; v++)
			for (int64_t e = aptr[v]; e < aptr[v + 1]; e++)
			{
				int32_t		u = asrc[e];

				if ((inner[v] & 1) && !(inner[u] & 1))
					inner[u] |= 2;
				else if ((inner[u] & 1) && !(inner[v] & 1))
					inner[v] |= 2;
			}
		for (int64_t v = 0; v < n; v++)
			inner[v] = inner[v] != 0;
	}
	for (int64_t v = 0; v < n; v++)
		for (int64_t e = aptr[v]; e < aptr[v + 1]; e++)
		{
			int32_t		u = asrc[e];
			bool		vo = K == 1 || part[v] == k,
						uo = K == 1 || part[u] == k;

			if (!inner[v] && !inner[u])
				continue;
			m++;
			if (!vo && local[v] < 0)
				local[v] = (int32_t) (own + halo++);
			if (!uo && local[u] < 0)
				local[u] = (int32_t) (own + halo++);
		}
	nn = own + halo;
	src = malloc(sizeof(int64_t) * (m ? m : 1));
	dst = malloc(sizeof(int64_t) * (m ? m : 1));
	ids = malloc(sizeof(int64_t) * nn);
	np = malloc(sizeof(int32_t) * nn);
	lab = malloc(sizeof(int32_t) * nn);
	sp = malloc(nn);
	{
		/* feature slices: this rank's columns only */
		int			c0 = p3_K > 0 ? p3_k * dim / p3_K : 0,
					sw = p3_K > 0 ? (p3_k + 1) * dim / p3_K - c0 : dim;

		x = calloc((size_t) nn * sw, sizeof(float));
		m = 0;
		for (int64_t v = 0; v < n; v++)
			if (local[v] >= 0 && local[v] < own)
				memcpy(x + (size_t) local[v] * sw, feat + (size_t) v * dim + c0, sizeof(float) * sw);
		in.feat_dim = sw;
	}
	for (int64_t v = 0; v < n; v++)
	{
		int32_t		r = local[v];

		if (r < 0)
			continue;
		ids[r] = v;
		np[r] = K == 1 ? 0 : part[v];
		if (r < own)
		{
			lab[r] = labels[v];
			sp[r] = split[v];
		}
		else
		{
			lab[r] = -1;
			sp[r] = GNN_SPLIT_NONE;
		}
		for (int64_t e = aptr[v]; e < aptr[v + 1]; e++)
			if (inner[v] || inner[asrc[e]])
			{
				src[m] = asrc[e];
				dst[m++] = v;
			}
	}
	{
		int32_t		fd = in.feat_dim;

		memset(&in, 0, sizeof(in));
		in.feat_dim = fd;
	}
	in.num_edges = m;
	in.src = src;
	in.dst = dst;
	in.num_nodes = nn;
	in.node_ids = ids;
	in.feat = x;
	in.labels = lab;
	in.split = sp;
	if (K > 1)
	{
		in.node_part = np;
		in.part = k;
	}
	st = gnn_graph_build_region(&in, region, &size, g, err);
	*own_out = own;
	*halo_out = halo;
	free(local);
	free(inner);
	free(src);
	free(dst);
	free(ids);
	free(np);
	free(lab);
	free(sp);
	free(x);
	return st;
}

/* ------------------------------------------------------------------ one rank */

typedef struct rank_res
{
	int			status;
	char		msg[GNN_ERRMSG_LEN];
	int64_t		own,
				halo,
				arcs,
				nsend,
				nrecv;
	int32_t		epochs;
	double		build_s,
				train_s,
				peak_mb,
				agg_s,			/* the backend's sparse aggregation, the whole loop */
				dense_s;		/* its dense products */
	int64_t		weights;
	double		step[MAX_EPOCHS + 1],
				ar[MAX_EPOCHS + 1],
				a2a[MAX_EPOCHS + 1],
				eval[MAX_EPOCHS + 1],
				cpu[MAX_EPOCHS + 1],
				sample[MAX_EPOCHS + 1],	/* minibatches: the producer's, per epoch */
				gather[MAX_EPOCHS + 1],
				wait[MAX_EPOCHS + 1],
				epoch_s[MAX_EPOCHS + 1];
	int64_t		batches;		/* minibatches: this rank's, the whole run */
	int64_t		sampled_edges,	/* ... their arcs and input rows, summed */
				input_nodes;
	int64_t		ar_bytes,
				a2a_bytes;
	/* sampling across parts (a halo shorter than the fan-outs): what crossed, the whole run */
	int64_t		adj_bytes,
				feat_bytes,
				remote_rows;
	float		loss;
} rank_res;

static const char *so_path;
static gnn_model_kind kind_now;
static int	epochs_now,
			hidden_now;

static double cpu_mark;

static void
record(void *arg, const gnn_epoch_metrics *em)
{
	rank_res   *r = arg;
	double		c = cpu_s();

	if (em->epoch <= MAX_EPOCHS)
	{
		int			e = em->epoch;

		r->step[e] = em->compute_s;
		r->sample[e] = isnan(em->sample_s) ? 0 : em->sample_s;
		r->gather[e] = isnan(em->gather_s) ? 0 : em->gather_s;
		r->wait[e] = isnan(em->wait_s) ? 0 : em->wait_s;
		r->epoch_s[e] = em->seconds;
		r->ar[e] = isnan(em->allreduce_s) ? 0 : em->allreduce_s;
		r->a2a[e] = isnan(em->alltoallv_s) ? 0 : em->alltoallv_s;
		r->eval[e] = em->eval_s;
		r->cpu[e] = c - cpu_mark;
		r->ar_bytes = em->allreduce_bytes;
		r->a2a_bytes = em->alltoallv_bytes;
		r->epochs = e;
		r->loss = em->train_loss;
	}
	cpu_mark = c;
}

static void
res_path(int rank, char *p, size_t len)
{
	snprintf(p, len, "%s/res-%d", dir, rank);
}

static int
rank_main(int rank, int K, const char *prefix)
{
	rank_res   *r = calloc(1, sizeof(*r));
	gnn_error	err;
	void	   *region = NULL;
	gnn_graph	g;
	gnn_dist   *d = NULL,
			   *d2 = NULL;
	gnn_backend *be = NULL;
	gnn_model  *model = NULL;
	gnn_train_config cfg;
	gnn_train_result res;
	gnn_dist_options o = {rank, K, "127.0.0.1", prefix, 600000};
	char		prefix2[128];
	double		t0 = now_s();
	char		p[600];
	FILE	   *f;
	struct rusage ru;

	memset(&err, 0, sizeof(err));
	if (mb_p3)
	{
		/* feature slices: the whole graph, this rank's columns */
		p3_k = rank;
		p3_K = K;
	}
	r->status = mb_p3 ? build_part(0, 1, &region, &g, &r->own, &r->halo, &err)
		: build_part(rank, K, &region, &g, &r->own, &r->halo, &err);
	r->build_s = now_s() - t0;
	r->arcs = g.num_edges;
	if (r->status == GNN_OK && K > 1)
	{
		gnn_halo_plan plan;

		r->status = gnn_dist_open(so_path, &o, &store, &d, &err);
		/* the plan train.c builds, built here once more to read its sizes */
		if (r->status == GNN_OK && !mb_p3 && (r->status = gnn_halo_plan_build(d, &g, &plan, &err)) == GNN_OK)
		{
			r->nsend = plan.nsend;
			r->nrecv = plan.nrecv;
			gnn_halo_plan_free(&plan);
		}
		if (r->status == GNN_OK && mb_hops > 0 && mb_halo_hops < mb_hops && mb_mesh2)
		{
			/* the batches' own mesh (cfg.dist_batches): sampled ahead, overlapping the steps */
			gnn_dist_options o2 = o;

			snprintf(prefix2, sizeof(prefix2), "%s-b", prefix);
			o2.prefix = prefix2;
			r->status = gnn_dist_open(so_path, &o2, &store, &d2, &err);
		}
	}
	if (r->status == GNN_OK)
		r->status = gnn_backend_create("cpu", 1, NULL, &be, &err);
	if (r->status == GNN_OK)
	{
		gnn_train_config_default(kind_now, &cfg);
		cfg.hidden = hidden_now;
		cfg.layers = 2;
		cfg.epochs = epochs_now;
		cfg.patience = 0;
		cfg.threads = 1;
		cfg.seed = 1;
		cfg.dist = d;
		cfg.dist_batches = d2;
		cfg.timing = true;
		cpu_mark = cpu_s();
		t0 = now_s();
		if (mb_hops > 0)
		{
			gnn_minibatch_config mbc;
			gnn_minibatch_stats ms;

			memset(&mbc, 0, sizeof(mbc));
			mbc.sampler.kind = GNN_SAMPLER_NEIGHBOR;
			mbc.sampler.nhops = mb_hops;
			memcpy(mbc.sampler.fanouts, mb_fanouts, sizeof(int) * mb_hops);
			mbc.sampler.nthreads = 1;
			mbc.batch_size = mb_batch;
			mbc.skip_eval = true;
			mbc.prefetch = mb_prefetch;
			mbc.cpu_batches = true;
			mbc.halo_hops = mb_halo_hops;
			mbc.feature_slices = mb_p3 && K > 1;
			cfg.layers = mb_hops;
			cfg.dropout = 0.5f;
			r->status = gnn_train_minibatch(&g, &cfg, &mbc, be, record, r, NULL, NULL, &model, &res, &ms, &err);
			r->batches = ms.batches;
			r->sampled_edges = ms.sampled_edges;
			r->input_nodes = ms.input_nodes;
			r->adj_bytes = ms.remote_adj_bytes;
			r->feat_bytes = ms.remote_feat_bytes;
			r->remote_rows = ms.remote_rows;
		}
		else
			r->status = gnn_train_full(&g, &cfg, be, record, r, NULL, NULL, &model, &res, &err);
		r->train_s = now_s() - t0;
		r->agg_s = res.agg_s;
		r->dense_s = res.dense_s;
		if (model)
			r->weights = (int64_t) gnn_model_weights_count(model);
	}
	getrusage(RUSAGE_SELF, &ru);
	r->peak_mb = ru.ru_maxrss / 1024.0;
	snprintf(r->msg, sizeof(r->msg), "%s", r->status == GNN_OK ? "" : err.msg);
	res_path(rank, p, sizeof(p));
	if ((f = fopen(p, "wb")))
	{
		fwrite(r, sizeof(*r), 1, f);
		fclose(f);
	}
	gnn_model_free(model);
	gnn_backend_destroy(be);
	gnn_dist_close(d2);
	gnn_dist_close(d);
	free(region);
	free(r);
	return 0;
}

/* ------------------------------------------------------------------ the parent */


/* median of x[2 .. e] (epoch 1 warms up), or x[1] with one epoch */
static double
median(const double *x, int e)
{
	double		t[MAX_EPOCHS];
	int			k = 0;

	for (int i = e > 1 ? 2 : 1; i <= e; i++)
		t[k++] = x[i];
	qsort(t, k, sizeof(double), cmp_double);
	return k % 2 ? t[k / 2] : 0.5 * (t[k / 2 - 1] + t[k / 2]);
}

typedef struct summary
{
	double		step,
				compute_max,
				compute_sum,
				ar_min,
				ar_max,
				a2a_min,
				a2a_max,
				cpu_max,
				cpu_sum,
				eval;
	int64_t		grad_bytes,
				halo_bytes,		/* all ranks, per step, as counted by dist.c */
				halo_fwd,		/* rows x hidden x 4, all ranks: one layer forward */
				halo_bwd,
				halo_max,
				own_max;
	double		cut;
} summary;

static void
mb(char *b, size_t len, double bytes)
{
	if (bytes >= 1e6)
		snprintf(b, len, "%.2f MB", bytes / 1e6);
	else
		snprintf(b, len, "%.1f kB", bytes / 1e3);
}

/* ------------------------------------------------------------------ the collectives alone */

#define COLL_SIZES 5
#define COLL_REPS 15
static const int64_t coll_bytes[COLL_SIZES] = {4096, 262144, 1 << 20, 4 << 20, 32 << 20};

typedef struct coll_res
{
	int			status;
	double		ar_ms[COLL_SIZES];
	double		a2a_ms[COLL_SIZES];
} coll_res;

static int
coll_main(int rank, int K, const char *prefix)
{
	coll_res	r;
	gnn_error	err;
	gnn_dist   *d = NULL;
	gnn_dist_options o = {rank, K, "127.0.0.1", prefix, 600000};
	float	   *a = malloc(coll_bytes[COLL_SIZES - 1]),
			   *b = malloc(coll_bytes[COLL_SIZES - 1]);
	int64_t		sc[MAX_RANKS],
				rc[MAX_RANKS];
	char		p[600];
	FILE	   *f;

	memset(&r, 0, sizeof(r));
	memset(a, 0, coll_bytes[COLL_SIZES - 1]);
	r.status = gnn_dist_open(so_path, &o, &store, &d, &err);
	for (int i = 0; i < COLL_SIZES && r.status == GNN_OK; i++)
	{
		int64_t		cnt = coll_bytes[i] / 4;
		double		t[COLL_REPS];

		for (int k = 0; k < COLL_REPS && r.status == GNN_OK; k++)
		{
			double		t0;

			r.status = gnn_dist_barrier(d, &err);
			t0 = now_s();
			if (r.status == GNN_OK)
				r.status = gnn_dist_allreduce(d, a, cnt, GNN_DIST_F32, &err);
			t[k] = now_s() - t0;
		}
		qsort(t, COLL_REPS, sizeof(double), cmp_double);
		r.ar_ms[i] = 1e3 * t[COLL_REPS / 2];
		/* alltoallv: the same bytes out of each rank, an equal share to each other rank */
		for (int q = 0; q < K; q++)
			sc[q] = rc[q] = q == rank ? 0 : cnt / (K - 1);
		for (int k = 0; k < COLL_REPS && r.status == GNN_OK; k++)
		{
			double		t0;

			r.status = gnn_dist_barrier(d, &err);
			t0 = now_s();
			if (r.status == GNN_OK)
				r.status = gnn_dist_alltoallv(d, a, sc, b, rc, sizeof(float), &err);
			t[k] = now_s() - t0;
		}
		qsort(t, COLL_REPS, sizeof(double), cmp_double);
		r.a2a_ms[i] = 1e3 * t[COLL_REPS / 2];
	}
	if (r.status != GNN_OK)
		fprintf(stderr, "rank %d: %s\n", rank, err.msg);
	res_path(rank, p, sizeof(p));
	if ((f = fopen(p, "wb")))
	{
		fwrite(&r, sizeof(r), 1, f);
		fclose(f);
	}
	gnn_dist_close(d);
	free(a);
	free(b);
	return 0;
}

/* medians of COLL_REPS calls per size; the slowest rank's */
static int
coll_bench(const int *ranks, int nranks)
{
	printf("The collectives alone (no training running; median of %d calls after a barrier, the slowest rank's; "
		   "alltoallv: the bytes leave each rank in equal shares to the others):\n\n", COLL_REPS);
	printf("| ranks | bytes per rank | allreduce ms | allreduce GB/s (buffer / time) | alltoallv ms | alltoallv GB/s out of each rank |\n");
	printf("|---:|---:|---:|---:|---:|---:|\n");
	for (int i = 0; i < nranks; i++)
	{
		int			K = ranks[i];
		pid_t		pids[MAX_RANKS];
		coll_res	r[MAX_RANKS];
		char		prefix[64];

		if (K < 2)
			continue;
		snprintf(prefix, sizeof(prefix), "coll-%d-%d", K, (int) getpid());
		fflush(stdout);
		for (int k = 0; k < K; k++)
			if ((pids[k] = fork()) == 0)
				_exit(coll_main(k, K, prefix));
		for (int k = 0; k < K; k++)
		{
			char		p[600];
			FILE	   *f;
			int			st;

			waitpid(pids[k], &st, 0);
			res_path(k, p, sizeof(p));
			if (!(f = fopen(p, "rb")) || fread(&r[k], sizeof(coll_res), 1, f) != 1 || r[k].status != GNN_OK)
			{
				fprintf(stderr, "collectives, %d ranks: rank %d failed\n", K, k);
				return 1;
			}
			fclose(f);
			unlink(p);
		}
		for (int j = 0; j < COLL_SIZES; j++)
		{
			double		ar = 0,
						a2a = 0;
			char		b[32];

			for (int k = 0; k < K; k++)
			{
				ar = fmax(ar, r[k].ar_ms[j]);
				a2a = fmax(a2a, r[k].a2a_ms[j]);
			}
			mb(b, sizeof(b), (double) coll_bytes[j]);
			printf("| %d | %s | %.2f | %.2f | %.2f | %.2f |\n", K, b, ar, coll_bytes[j] / ar / 1e6, a2a,
				   coll_bytes[j] / a2a / 1e6);
		}
	}
	printf("\n");
	fflush(stdout);
	return 0;
}

static int
run_one(int K, int procs, const char *model_name, double cut, summary *s)
{
	pid_t		pids[MAX_RANKS];
	rank_res   *r = calloc(procs, sizeof(rank_res));
	char		prefix[64];
	int			ok = 1;

	snprintf(prefix, sizeof(prefix), "%s-%d-%d", model_name, K, (int) getpid());
	fflush(stdout);
	for (int k = 0; k < procs; k++)
		if ((pids[k] = fork()) == 0)
			_exit(rank_main(k, K, prefix));
	for (int k = 0; k < procs; k++)
	{
		int			st;
		char		p[600];
		FILE	   *f;

		waitpid(pids[k], &st, 0);
		res_path(k, p, sizeof(p));
		if (!(f = fopen(p, "rb")) || fread(&r[k], sizeof(rank_res), 1, f) != 1)
		{
			fprintf(stderr, "%s, %d ranks: rank %d left no result (exit status %d)\n", model_name, K, k, st);
			ok = 0;
		}
		else if (r[k].status != GNN_OK)
		{
			fprintf(stderr, "%s, %d ranks: rank %d: %s\n", model_name, K, k, r[k].msg);
			ok = 0;
		}
		if (f)
			fclose(f);
		unlink(p);
	}
	if (!ok)
	{
		free(r);
		return 1;
	}
	memset(s, 0, sizeof(*s));
	s->ar_min = s->a2a_min = 1e30;
	s->cut = cut;
	for (int k = 0; k < procs; k++)
	{
		int			e = r[k].epochs;
		double		step = median(r[k].step, e),
					ar = median(r[k].ar, e),
					a2a = median(r[k].a2a, e),
					cpu = median(r[k].cpu, e),
					comp;
		double		c[MAX_EPOCHS + 1];

		for (int i = 1; i <= e; i++)
			c[i] = r[k].step[i] - r[k].ar[i] - r[k].a2a[i];
		comp = median(c, e);
		s->step = fmax(s->step, step);
		s->compute_max = fmax(s->compute_max, comp);
		s->compute_sum += comp;
		s->ar_min = fmin(s->ar_min, ar);
		s->ar_max = fmax(s->ar_max, ar);
		s->a2a_min = fmin(s->a2a_min, a2a);
		s->a2a_max = fmax(s->a2a_max, a2a);
		s->cpu_max = fmax(s->cpu_max, cpu);
		s->cpu_sum += cpu;
		s->eval = fmax(s->eval, median(r[k].eval, e));
		/* the allreduce also carries the stop vote and the loss: 8 bytes each */
		s->grad_bytes = K > 1 ? r[k].ar_bytes - 16 : 4 * r[k].weights;
		s->halo_bytes += K > 1 ? r[k].a2a_bytes : 0;
		s->halo_fwd += r[k].nsend * hidden_now * 4;
		s->halo_bwd += r[k].nrecv * hidden_now * 4;
		s->halo_max = r[k].halo > s->halo_max ? r[k].halo : s->halo_max;
		s->own_max = r[k].own > s->own_max ? r[k].own : s->own_max;
		if (procs > K)
			printf("    copy %d (of %d at once), ", k + 1, procs);
		else
			printf("    rank %d/%d: ", k, K);
		printf("%lld own nodes, %lld halo, %lld arcs; sends %lld halo rows, receives %lld; step %.1f ms "
			   "(allreduce %.1f, alltoallv %.1f, compute %.1f), evaluation %.1f ms, CPU %.1f ms per epoch; "
			   "per epoch (step and evaluation) %.1f ms aggregating, %.1f ms in dense products; "
			   "built in %.2f s, peak RSS %.0f MB; last loss %.4f\n",
			   (long long) r[k].own, (long long) r[k].halo, (long long) r[k].arcs, (long long) r[k].nsend,
			   (long long) r[k].nrecv, 1e3 * step, 1e3 * ar, 1e3 * a2a, 1e3 * comp, 1e3 * median(r[k].eval, e),
			   1e3 * cpu, 1e3 * r[k].agg_s / r[k].epochs, 1e3 * r[k].dense_s / r[k].epochs, r[k].build_s, r[k].peak_mb, r[k].loss);
	}
	if (K == 1)
		s->ar_min = s->a2a_min = 0;
	free(r);
	return 0;
}

/* Minibatches over K ranks (env FANOUTS): per global step, the slowest rank's medians over epochs 2.. */
typedef struct mb_summary
{
	int64_t		steps;			/* global steps an epoch */
	double		step,			/* epoch / steps */
				prod,			/* the producer's sampling and gathering, per batch */
				wait,			/* the computing thread's wait for a batch, per step */
				ar,				/* allreduce, per step */
				cpu,			/* CPU per step, all ranks */
				setup,			/* the job's set-up (the halo's features fetched) */
				rss,			/* peak RSS, the largest rank */
				halo_mb;		/* the largest halo's features */
	int64_t		halo,			/* the largest halo, and its part's own nodes */
				own,
				ar_bytes;		/* per step and rank */
	/* sampling across parts, per step: the slowest rank's seconds, the largest rank's bytes */
	double		r_sample,
				r_fetch,
				r_a2a,
				r_compute,
				r_adj,
				r_feat,
				r_rows;
} mb_summary;

static int
run_mb(int K, const char *model_name, mb_summary *s)
{
	pid_t		pids[MAX_RANKS];
	rank_res   *r = calloc(K, sizeof(rank_res));
	char		prefix[64];
	int			ok = 1;
	int64_t		ntrain = 0;

	memset(s, 0, sizeof(*s));
	for (int64_t v = 0; v < n; v++)
		ntrain += split[v] == GNN_SPLIT_TRAIN;
	s->steps = (ntrain + mb_batch - 1) / mb_batch;
	snprintf(prefix, sizeof(prefix), "mb-%s-%d-%d", model_name, K, (int) getpid());
	fflush(stdout);
	for (int k = 0; k < K; k++)
		if ((pids[k] = fork()) == 0)
			_exit(rank_main(k, K, prefix));
	for (int k = 0; k < K; k++)
	{
		int			st;
		char		p[600];
		FILE	   *f;

		waitpid(pids[k], &st, 0);
		res_path(k, p, sizeof(p));
		if (!(f = fopen(p, "rb")) || fread(&r[k], sizeof(rank_res), 1, f) != 1 || r[k].status != GNN_OK)
		{
			fprintf(stderr, "%s minibatches, %d ranks: rank %d: %s\n", model_name, K, k, f ? r[k].msg : "no result");
			ok = 0;
		}
		if (f)
			fclose(f);
		unlink(p);
	}
	for (int k = 0; ok && k < K; k++)
	{
		int			e = r[k].epochs;
		double		es = 0,
					x[MAX_EPOCHS + 1];

		for (int i = 1; i <= e; i++)
		{
			x[i] = r[k].sample[i] + r[k].gather[i];
			es += r[k].epoch_s[i];
		}
		s->step = fmax(s->step, median(r[k].epoch_s, e) / s->steps);
		s->prod = fmax(s->prod, median(x, e) / fmax(1.0, (double) r[k].batches / e));
		s->wait = fmax(s->wait, median(r[k].wait, e) / s->steps);
		s->ar = fmax(s->ar, median(r[k].ar, e) / s->steps);
		s->cpu += median(r[k].cpu, e) / s->steps;
		s->setup = fmax(s->setup, r[k].train_s - es);
		s->rss = fmax(s->rss, r[k].peak_mb);
		s->ar_bytes = K > 1 ? r[k].ar_bytes / s->steps : 0;
		if (r[k].halo >= s->halo)
		{
			s->halo = r[k].halo;
			s->own = r[k].own;
		}
		s->halo_mb = fmax(s->halo_mb, (double) r[k].halo * dim * 4 / 1048576.0);
		{
			/* whole-run counts over all steps; seconds as medians over epochs a step */
			double		all_steps = (double) s->steps * e,
						comp[MAX_EPOCHS + 1];

			for (int i = 1; i <= e; i++)
				comp[i] = r[k].step[i] - r[k].ar[i];
			s->r_sample = fmax(s->r_sample, median(r[k].sample, e) / s->steps);
			s->r_fetch = fmax(s->r_fetch, median(r[k].gather, e) / s->steps);
			s->r_a2a = fmax(s->r_a2a, median(r[k].a2a, e) / s->steps);
			s->r_compute = fmax(s->r_compute, median(comp, e) / s->steps);
			s->r_adj = fmax(s->r_adj, r[k].adj_bytes / all_steps);
			s->r_feat = fmax(s->r_feat, r[k].feat_bytes / all_steps);
			s->r_rows = fmax(s->r_rows, r[k].remote_rows / all_steps);
		}
		printf("    rank %d/%d: %lld own nodes, %lld halo, %lld arcs; %lld batches over %d epochs "
			   "(a batch: %.0f sampled arcs, %.0f input rows); per epoch: %.0f ms (sampling %.0f, gathering %.0f, waiting %.0f, allreduce %.0f), CPU %.0f ms; "
			   "set-up %.2f s; peak RSS %.0f MB; last loss %.4f\n",
			   k, K, (long long) r[k].own, (long long) r[k].halo, (long long) r[k].arcs, (long long) r[k].batches,
			   e, r[k].batches ? (double) r[k].sampled_edges / r[k].batches : 0.0,
			   r[k].batches ? (double) r[k].input_nodes / r[k].batches : 0.0, 1e3 * median(r[k].epoch_s, e), 1e3 * median(r[k].sample, e), 1e3 * median(r[k].gather, e),
			   1e3 * median(r[k].wait, e), 1e3 * median(r[k].ar, e), 1e3 * median(r[k].cpu, e),
			   r[k].train_s - es, r[k].peak_mb, r[k].loss);
	}
	free(r);
	return ok ? 0 : 1;
}

int
main(int argc, char **argv)
{
	const char *models_env = getenv("MODELS"),
			   *cut_env = getenv("CUT_PARTS");
	char		models[128],
				cuts[128];
	int32_t    *part_of[MAX_RANKS] = {NULL},
			   *zero_part;
	double		cut_of[MAX_RANKS] = {0};
	int			ranks[MAX_RANKS],
				procs[MAX_RANKS],
				nranks = 0;
	gnn_error	err;
	double		t0 = now_s();

	if (argc < 5)
	{
		fprintf(stderr, "usage: dist_bench GRAPH EPOCHS HIDDEN RANKS...   (GRAPH: a dataset folder or rmat:NODES:EDGES:DIM)\n");
		return 2;
	}
	/* one thread everywhere: ranks are forked, and OpenMP's threads do not survive a fork */
	openblas_set_num_threads(1);
#ifdef _OPENMP
	omp_set_num_threads(1);
#endif
	epochs_now = atoi(argv[2]);
	hidden_now = atoi(argv[3]);
	if (epochs_now < 1 || epochs_now > MAX_EPOCHS)
	{
		fprintf(stderr, "EPOCHS must be in [1, %d]\n", MAX_EPOCHS);
		return 2;
	}
	for (int i = 4; i < argc && nranks < MAX_RANKS; i++)
	{
		/* "1+1": one process on the whole graph with a second copy running alongside (the control for sharing cores) */
		ranks[nranks] = atoi(argv[i]);
		procs[nranks] = strcmp(argv[i], "1+1") == 0 ? 2 : ranks[nranks];
		if (ranks[nranks] < 1 || ranks[nranks] > MAX_RANKS)
		{
			fprintf(stderr, "ranks must be in [1, %d] (or 1+1)\n", MAX_RANKS);
			return 2;
		}
		nranks++;
	}
	snprintf(models, sizeof(models), "%s", models_env ? models_env : "gcn graphsage");
	snprintf(cuts, sizeof(cuts), "%s", cut_env ? cut_env : "8 16");
	{
		char		b[64],
				   *tok,
				   *save;

		snprintf(b, sizeof(b), "%s", getenv("BALANCE") ? getenv("BALANCE") : "nodes,train,edges");
		snprintf(balance_names, sizeof(balance_names), "%s", b);
		for (tok = strtok_r(b, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
		{
			uint32_t	bit;

			if (!gnn_parse_part_balance(tok, &bit))
			{
				fprintf(stderr, "unknown balance %s (nodes, train, edges)\n", tok);
				return 2;
			}
			balance |= bit;
		}
	}
	if (getenv("FANOUTS") && *getenv("FANOUTS"))
	{
		char		b[64],
				   *tok,
				   *save;

		snprintf(b, sizeof(b), "%s", getenv("FANOUTS"));
		for (tok = strtok_r(b, ",", &save); tok && mb_hops < 4; tok = strtok_r(NULL, ",", &save))
			mb_fanouts[mb_hops++] = atoi(tok);
		mb_halo_hops = getenv("HALO_HOPS") ? atoi(getenv("HALO_HOPS")) : mb_hops;
		mb_batch = getenv("BATCH") ? atoi(getenv("BATCH")) : 1024;
		mb_prefetch = getenv("PREFETCH") ? atoi(getenv("PREFETCH")) : 1;
		mb_mesh2 = getenv("MESH2") ? atoi(getenv("MESH2")) : 1;
		mb_p3 = getenv("P3") ? atoi(getenv("P3")) : 0;
	}
	so_path = getenv("GNN_DIST_SO") ? getenv("GNN_DIST_SO") : "src/dist/gnn_dist.so";
	if (!gnn_dist_available(so_path, &err))
	{
		fprintf(stderr, "%s\n", err.msg);
		return 1;
	}
	if (strncmp(argv[1], "rmat:", 5) == 0)
	{
		long long	nodes = 0,
					edges = 0;
		int			d = 0;

		if (sscanf(argv[1] + 5, "%lld:%lld:%d", &nodes, &edges, &d) != 3 || nodes < 2 || edges < 1 || d < 1)
		{
			fprintf(stderr, "rmat:NODES:EDGES:DIM\n");
			return 2;
		}
		if (make_rmat(nodes, edges, d))
			return 1;
	}
	else if (load_dataset(argv[1]))
		return 1;
	zero_part = calloc(n, sizeof(int32_t));
	snprintf(dir, sizeof(dir), "/tmp/gnn-dist-bench-%d", (int) getpid());
	mkdir(dir, 0700);

	printf("### %s\n\n", graph_name);
	printf("Built in %.1f s. %d epochs (medians of epochs 2..%d), hidden %d, 2 layers, one thread per rank, "
		   "Gloo over loopback.\n\n", now_s() - t0, epochs_now, epochs_now, hidden_now);

	if (getenv("SKIP_COLL") == NULL && coll_bench(ranks, nranks))
		return 1;

	/* the partitions: the trained rank counts (kept) and the cut-only ones */
	{
		int			all[2 * MAX_RANKS + 8],
					nall = 0;
		char	   *tok,
				   *save;
		gnn_graph	g;
		void	   *region;
		int64_t		own,
					halo;

		for (int i = 0; i < nranks; i++)
			if (ranks[i] > 1)
				all[nall++] = ranks[i];
		for (tok = strtok_r(cuts, " ", &save); tok && nall < 2 * MAX_RANKS + 8; tok = strtok_r(NULL, " ", &save))
			all[nall++] = atoi(tok);
		/* the whole graph as a gnn_graph for the partitioner */
		if (build_part(0, 1, &region, &g, &own, &halo, &err) != GNN_OK)
		{
			fprintf(stderr, "build: %s\n", err.msg);
			return 1;
		}
		printf("METIS (k-way, edge cut, balance on %s), the core's partitioner; the largest part's arcs over the mean:\n\n",
			   balance_names);
		printf("| parts | METIS s | arcs cut | cut fraction | halo nodes (sum) | halo / nodes | largest halo / its part's nodes | arcs max / mean |\n");
		printf("|---:|---:|---:|---:|---:|---:|---:|---:|\n");
		for (int i = 0; i < nall; i++)
		{
			gnn_partition_config pc;
			gnn_part_stats st;
			double		secs,
						worst = 0,
						emax = 0;
			int32_t    *pv = malloc(sizeof(int32_t) * n);

			gnn_partition_config_default(&pc);
			pc.parts = all[i];
			pc.balance = balance;
			pc.seed = 1;
			if (gnn_partition_compute(&g, &pc, pv, &secs, &err) != GNN_OK ||
				gnn_part_stats_compute(&g, pv, all[i], &st, &err) != GNN_OK)
			{
				fprintf(stderr, "partition %d: %s\n", all[i], err.msg);
				return 1;
			}
			for (int q = 0; q < all[i]; q++)
			{
				worst = fmax(worst, (double) st.part[q].halo / (double) st.part[q].nodes);
				emax = fmax(emax, (double) st.part[q].edges);
			}
			printf("| %d | %.1f | %lld | %.4f | %lld | %.3f | %.3f | %.2f |\n", all[i], secs, (long long) st.cut,
				   st.cut_fraction, (long long) st.halo, (double) st.halo / (double) n, worst,
				   emax * all[i] / (double) st.edges);
			fflush(stdout);
			for (int j = 0; j < nranks; j++)
				if (ranks[j] == all[i] && !part_of[j])
				{
					part_of[j] = pv;
					cut_of[j] = st.cut_fraction;
					pv = NULL;
				}
			free(pv);
			gnn_part_stats_free(&st);
		}
		free(region);
		printf("\n");
	}

	{
		char	   *tok,
				   *save;

		for (tok = strtok_r(models, " ", &save); tok; tok = strtok_r(NULL, " ", &save))
		{
			summary		s[MAX_RANKS],
						base;
			int			have_base = 0;

			if (!gnn_parse_model_kind(tok, &kind_now))
			{
				fprintf(stderr, "unknown model %s\n", tok);
				return 2;
			}
			printf("#### %s\n\n```\n", tok);
			if (mb_hops > 0)
			{
				mb_summary	ms[MAX_RANKS];
				double		base_step = 0;

				for (int i = 0; i < nranks; i++)
				{
					part = part_of[i] ? part_of[i] : zero_part;
					if (procs[i] != ranks[i] || run_mb(ranks[i], tok, &ms[i]))
						return 1;
					if (ranks[i] == 1)
						base_step = ms[i].step;
				}
				printf("```\n\n");
				printf("Minibatches: fan-outs");
				for (int h = 0; h < mb_hops; h++)
					printf("%s%d", h ? ", " : " [", mb_fanouts[h]);
				if (mb_p3)
					printf("], %d seeds a global step, feature slices (P3: every rank the whole graph and %d / ranks "
						   "of the %d columns; layer 0's products summed, one allreduce a step; 1 rank: the whole "
						   "columns), prefetch %d, dropout 0.5, no evaluation; per step, the slowest rank's medians "
						   "over epochs 2..%d.\n\n", mb_batch, dim, dim, mb_prefetch, epochs_now);
				else
					printf("], %d seeds a global step, %d hops of halo, prefetch %d, dropout 0.5, no evaluation; "
						   "per step, the slowest rank's medians over epochs 2..%d.\n\n", mb_batch, mb_halo_hops,
						   mb_prefetch, epochs_now);
				printf("| ranks | steps an epoch | step ms | x 1 rank | sampling + gathering ms a batch (producer) "
					   "| waiting for a batch ms | allreduce ms | allreduce bytes a step and rank | own / halo nodes (largest halo) "
					   "| halo features MB | set-up s | peak RSS MB (largest rank) | CPU ms a step (all ranks) |\n");
				printf("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
				for (int i = 0; i < nranks; i++)
				{
					char		ratio[16] = "-";

					if (base_step > 0)
						snprintf(ratio, sizeof(ratio), "%.2f", ms[i].step / base_step);
					printf("| %d | %lld | %.1f | %s | %.1f | %.1f | %.1f | %lld | %lld / %lld | %.0f | %.2f | %.0f | %.1f |\n",
						   ranks[i], (long long) ms[i].steps, 1e3 * ms[i].step, ratio, 1e3 * ms[i].prod,
						   1e3 * ms[i].wait, 1e3 * ms[i].ar, (long long) ms[i].ar_bytes, (long long) ms[i].own,
						   (long long) ms[i].halo, ms[i].halo_mb, ms[i].setup, ms[i].rss, 1e3 * ms[i].cpu);
				}
				printf("\n");
				if (mb_halo_hops < mb_hops)
				{
					printf("Sampling across parts (%d hop%s of halo, %d drawn: the owners draw the rest and send the "
						   "features; %s): per step, the slowest rank's seconds and the largest "
						   "rank's bytes (sent and received, to and from other ranks); compute = forward, loss, "
						   "backward and step; 1 rank: one process, local sampling.\n\n",
						   mb_halo_hops, mb_halo_hops == 1 ? "" : "s", mb_hops,
						   mb_mesh2 && mb_prefetch > 0 ? "made ahead on a second mesh, overlapping the steps" : "in line with the steps");
					printf("| ranks | sampling ms | feature fetch ms | of which alltoallv ms | compute ms | allreduce ms "
						   "| adjacency kB | features kB | feature rows from others | gradients kB |\n");
					printf("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
					for (int i = 0; i < nranks; i++)
						printf("| %d | %.1f | %.1f | %.1f | %.1f | %.1f | %.0f | %.0f | %.0f | %.0f |\n", ranks[i],
							   1e3 * ms[i].r_sample, 1e3 * ms[i].r_fetch, 1e3 * ms[i].r_a2a, 1e3 * ms[i].r_compute,
							   1e3 * ms[i].ar, ms[i].r_adj / 1e3, ms[i].r_feat / 1e3, ms[i].r_rows,
							   ms[i].ar_bytes / 1e3);
					printf("\n");
				}
				fflush(stdout);
				continue;
			}
			for (int i = 0; i < nranks; i++)
			{
				part = part_of[i] ? part_of[i] : zero_part;
				if (run_one(ranks[i], procs[i], tok, cut_of[i], &s[i]))
					return 1;
				if (ranks[i] == 1 && procs[i] == 1)
				{
					base = s[i];
					have_base = 1;
				}
				fflush(stdout);
			}
			printf("```\n\n");
			printf("| ranks | step ms | x 1 rank | compute ms (slowest rank) | compute ms (sum of ranks) | allreduce ms (min-max over ranks) "
				   "| alltoallv ms (min-max) | gradients allreduced per rank | halo per layer, forward / backward (all ranks) "
				   "| alltoallv bytes per step (counted, all ranks) | edge cut | largest halo | CPU ms per epoch (slowest rank; sum) |\n");
			printf("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
			for (int i = 0; i < nranks; i++)
			{
				char		g1[32],
							h1[32],
							h2[32],
							h3[32],
							ratio[16] = "-";

				mb(g1, sizeof(g1), (double) s[i].grad_bytes);
				mb(h1, sizeof(h1), (double) s[i].halo_fwd);
				mb(h2, sizeof(h2), (double) s[i].halo_bwd);
				mb(h3, sizeof(h3), (double) s[i].halo_bytes);
				if (have_base)
					snprintf(ratio, sizeof(ratio), "%.2f", s[i].step / base.step);
				if (procs[i] > ranks[i])
					printf("| 1, a second copy alongside");
				else
					printf("| %d", ranks[i]);
				printf(" | %.1f | %s | %.1f | %.1f | %.1f-%.1f | %.1f-%.1f | %s | %s / %s | %s | %.4f | %lld | %.0f; %.0f |\n",
					   1e3 * s[i].step, ratio, 1e3 * s[i].compute_max, 1e3 * s[i].compute_sum,
					   1e3 * s[i].ar_min, 1e3 * s[i].ar_max, 1e3 * s[i].a2a_min, 1e3 * s[i].a2a_max, g1,
					   ranks[i] > 1 ? h1 : "-", ranks[i] > 1 ? h2 : "-", ranks[i] > 1 ? h3 : "-", s[i].cut,
					   (long long) s[i].halo_max, 1e3 * s[i].cpu_max, 1e3 * s[i].cpu_sum);
			}
			printf("\n");
			fflush(stdout);
		}
	}
	{
		char		cmd[300];

		snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
		if (system(cmd) != 0)
			fprintf(stderr, "could not remove %s\n", dir);
	}
	return 0;
}
