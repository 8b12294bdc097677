/*
 * test_estimate: gnn_job_estimate (estimate.h) against the heap peak the
 * same job reaches (heap.h), for full-batch, minibatch, link-prediction and
 * subgraph training of several models and widths on synthetic graphs with
 * dense features, and on Cora (sparse features) when the data is there.
 * The estimate must be within 2x of the measured peak either way.
 */
#include "check.h"
#include "graph/dataset.h"
#include "train/estimate.h"
#include "base/heap.h"
#include "train/train.h"
#include "train/train_mb.h"
#include "train/train_subgraph.h"

#include <stdlib.h>

typedef struct tgraph
{
	void	   *region;
	gnn_graph	g;
} tgraph;

/* n nodes, about deg arcs each (undirected), f dense features, c classes */
static bool
make_graph(int64_t n, int deg, int32_t f, int32_t c, uint64_t seed, tgraph *t)
{
	int64_t		m = n * deg / 2;
	int64_t    *ids = malloc(sizeof(int64_t) * n),
			   *src = malloc(sizeof(int64_t) * m),
			   *dst = malloc(sizeof(int64_t) * m);
	float	   *feat = malloc(sizeof(float) * n * f);
	int32_t    *labels = malloc(sizeof(int32_t) * n);
	uint8_t    *split = malloc(n);
	gnn_graph_input in = {0};
	uint64_t	size;
	gnn_error	err;
	gnn_rng		rng;
	bool		ok;

	gnn_rng_seed(&rng, seed);
	for (int64_t i = 0; i < n; i++)
	{
		ids[i] = i;
		labels[i] = (int32_t) (i % c);
		split[i] = i % 10 < 6 ? GNN_SPLIT_TRAIN : i % 10 < 8 ? GNN_SPLIT_VAL : GNN_SPLIT_TEST;
		for (int32_t j = 0; j < f; j++)
			feat[i * f + j] = (float) (gnn_rng_next(&rng) % 1000) / 1000.0f + (j % c == labels[i] ? 0.5f : 0.0f);
	}
	for (int64_t e = 0; e < m; e++)
	{
		src[e] = (int64_t) (gnn_rng_next(&rng) % (uint64_t) n);
		dst[e] = (int64_t) (gnn_rng_next(&rng) % (uint64_t) n);
	}
	in.num_edges = m;
	in.src = src;
	in.dst = dst;
	in.undirected = true;
	in.num_nodes = n;
	in.node_ids = ids;
	in.feat_dim = f;
	in.feat = feat;
	in.labels = labels;
	in.split = split;
	ok = gnn_graph_build_region(&in, &t->region, &size, &t->g, &err) == GNN_OK;
	CHECK(ok, "build a %lld-node graph: %s", (long long) n, ok ? "ok" : err.msg);
	free(ids);
	free(src);
	free(dst);
	free(feat);
	free(labels);
	free(split);
	return ok;
}

typedef struct job
{
	const char *name;
	gnn_model_kind model;
	gnn_job_loop loop;
	int32_t		hidden;
	int32_t		layers;
	int32_t		fanout;			/* minibatch: per hop */
	int32_t		batch;
} job;

static double worst_low = 1e9,
			worst_high = 0;

static void
run_job(const char *gname, const gnn_graph *g, const job *j)
{
	gnn_train_config cfg;
	gnn_job_plan plan;
	gnn_estimate est;
	gnn_backend *be = NULL;
	gnn_model  *model = NULL;
	gnn_train_result res;
	gnn_error	err;
	gnn_status	st;
	int64_t		base,
				peak;
	double		ratio;

	gnn_train_config_default(j->model, &cfg);
	if (j->loop == GNN_LOOP_LINKPRED)
		gnn_linkpred_train_defaults(&cfg);
	cfg.hidden = j->hidden;
	cfg.layers = j->layers;
	cfg.epochs = 2;
	cfg.patience = 0;
	cfg.threads = 1;
	if (j->model == GNN_MODEL_GAT)
		cfg.heads = 4;
	gnn_job_plan_default(&plan);
	plan.loop = j->loop;
	if (j->loop == GNN_LOOP_MINIBATCH)
	{
		plan.nfanouts = j->layers;
		for (int h = 0; h < j->layers; h++)
			plan.fanouts[h] = j->fanout;
		plan.batch_size = j->batch;
		plan.prefetch = 2;
	}
	st = gnn_job_estimate(g, &cfg, &plan, &est, &err);
	CHECK(st == GNN_OK, "%s %s: estimate (%s)", gname, j->name, st == GNN_OK ? "ok" : err.msg);
	if (st != GNN_OK)
		return;
	/* gnn.train's first estimate: evaluation's kept rows at their bound, never under the counted one */
	if (j->loop == GNN_LOOP_MINIBATCH && j->model != GNN_MODEL_GCN)
	{
		gnn_job_plan sp = plan;
		gnn_estimate counted,
					bound;
		int64_t		kc = 0,
					kb = 0;

		sp.sampled_eval = true;
		st = gnn_job_estimate(g, &cfg, &sp, &counted, &err);
		sp.kept_rows_bound = true;
		if (st == GNN_OK)
			st = gnn_job_estimate(g, &cfg, &sp, &bound, &err);
		for (int i = 0; st == GNN_OK && i < counted.n; i++)
			if (strcmp(counted.items[i].item, GNN_ESTIMATE_KEPT_ROWS) == 0)
				kc = counted.items[i].bytes;
		for (int i = 0; st == GNN_OK && i < bound.n; i++)
			if (strcmp(bound.items[i].item, GNN_ESTIMATE_KEPT_ROWS) == 0)
				kb = bound.items[i].bytes;
		CHECK(st == GNN_OK && kc > 0 && kb >= kc && bound.host_bytes - kb == counted.host_bytes - kc,
			  "%s %s: evaluation's kept rows at their bound, without counting them: %.2f MB, at least the %.2f MB "
			  "counted, the rest alike", gname, j->name, (double) kb / 1048576.0, (double) kc / 1048576.0);
		st = GNN_OK;
	}

	if (gnn_backend_cpu_create(1, &be, &err) != GNN_OK)
	{
		CHECK(0, "backend: %s", err.msg);
		return;
	}
	base = gnn_heap_current();
	gnn_heap_peak_reset();
	switch (j->loop)
	{
		case GNN_LOOP_FULL:
			st = gnn_train_full(g, &cfg, be, NULL, NULL, NULL, NULL, &model, &res, &err);
			break;
		case GNN_LOOP_MINIBATCH:
			{
				gnn_minibatch_config mbc;

				memset(&mbc, 0, sizeof(mbc));
				mbc.sampler.kind = GNN_SAMPLER_NEIGHBOR;
				mbc.sampler.nhops = plan.nfanouts;
				for (int h = 0; h < plan.nfanouts; h++)
					mbc.sampler.fanouts[h] = plan.fanouts[h];
				mbc.sampler.nthreads = 1;
				mbc.batch_size = plan.batch_size;
				mbc.prefetch = plan.prefetch;
				st = gnn_train_minibatch(g, &cfg, &mbc, be, NULL, NULL, NULL, NULL, &model, &res, NULL, &err);
				break;
			}
		case GNN_LOOP_LINKPRED:
			{
				gnn_linkpred_config lc;
				gnn_linkpred_result lres;

				gnn_linkpred_config_default(&lc);
				st = gnn_train_linkpred(g, &cfg, &lc, be, NULL, NULL, NULL, NULL, &model, &lres, &err);
				break;
			}
		case GNN_LOOP_CLUSTER:
			{
				gnn_subgraph_config sc;

				gnn_subgraph_config_default(&sc);
				st = gnn_train_cluster(g, &cfg, &sc, be, NULL, NULL, NULL, NULL, &model, &res, &err);
				break;
			}
		default:
			st = GNN_ERR_INVALID;
	}
	peak = gnn_heap_peak() - base;
	gnn_model_free(model);
	gnn_backend_destroy(be);
	ratio = peak > 0 ? (double) est.host_bytes / (double) peak : 0;
	if (ratio < worst_low)
		worst_low = ratio;
	if (ratio > worst_high)
		worst_high = ratio;
	CHECK(st == GNN_OK && ratio >= 0.5 && ratio <= 2.0,
		  "%s %s: estimate %.2f MB, measured peak %.2f MB (%.2fx)%s%s", gname, j->name,
		  (double) est.host_bytes / 1048576.0, (double) peak / 1048576.0, ratio,
		  st == GNN_OK ? "" : ": ", st == GNN_OK ? "" : err.msg);
	if (getenv("GNN_ESTIMATE_VERBOSE"))
		for (int i = 0; i < est.n; i++)
			printf("#   %-24s %s %12lld  %s\n", est.items[i].item, est.items[i].gpu ? "gpu " : "host",
				   (long long) est.items[i].bytes, est.items[i].note);
}

static const job jobs[] = {
	{"gcn full h16", GNN_MODEL_GCN, GNN_LOOP_FULL, 16, 2, 0, 0},
	{"gcn full h128 3 layers", GNN_MODEL_GCN, GNN_LOOP_FULL, 128, 3, 0, 0},
	{"sage full h64", GNN_MODEL_SAGE, GNN_LOOP_FULL, 64, 2, 0, 0},
	{"gat full h8x4", GNN_MODEL_GAT, GNN_LOOP_FULL, 8, 2, 0, 0},
	{"sage minibatch [10,10] b256", GNN_MODEL_SAGE, GNN_LOOP_MINIBATCH, 64, 2, 10, 256},
	{"sage minibatch [15,10,5] b1024 h128", GNN_MODEL_SAGE, GNN_LOOP_MINIBATCH, 128, 3, 8, 1024},
	{"gcn minibatch [5,5] b512", GNN_MODEL_GCN, GNN_LOOP_MINIBATCH, 32, 2, 5, 512},
	{"sage link prediction h64", GNN_MODEL_SAGE, GNN_LOOP_LINKPRED, 64, 2, 0, 0},
	{"gcn link prediction h32", GNN_MODEL_GCN, GNN_LOOP_LINKPRED, 32, 2, 0, 0},
	{"gcn cluster-gcn h64", GNN_MODEL_GCN, GNN_LOOP_CLUSTER, 64, 2, 0, 0},
};

/* device => 'auto' sizes a job from its estimate before choosing the GPU (no arrays needed: counts only) */
static void
check_sizes(void)
{
	gnn_graph	products,
				cora;
	gnn_train_config cfg;
	gnn_job_plan full,
				mb;
	gnn_estimate ef,
				em,
				ec;
	gnn_error	err;

	memset(&products, 0, sizeof(products));
	products.num_nodes = 2449029;
	products.num_edges = 123718280;
	products.feat_kind = GNN_FEAT_DENSE;
	products.feat_dim = 100;
	products.num_classes = 47;
	products.num_node_types = products.num_edge_types = 1;
	cora = products;
	cora.num_nodes = 2708;
	cora.num_edges = 10556;
	cora.feat_dim = 1433;
	cora.num_classes = 7;
	gnn_train_config_default(GNN_MODEL_SAGE, &cfg);
	cfg.hidden = 256;
	cfg.layers = 3;
	gnn_job_plan_default(&full);
	full.gpu = true;
	mb = full;
	mb.loop = GNN_LOOP_MINIBATCH;
	mb.nfanouts = 3;
	mb.fanouts[0] = 15;
	mb.fanouts[1] = 10;
	mb.fanouts[2] = 5;
	mb.batch_size = 1024;
	mb.sampled_eval = true;
	CHECK(gnn_job_estimate(&products, &cfg, &full, &ef, &err) == GNN_OK &&
		  gnn_job_estimate(&products, &cfg, &mb, &em, &err) == GNN_OK, "products-size estimates");
	cfg.hidden = 16;
	cfg.layers = 2;
	CHECK(gnn_job_estimate(&cora, &cfg, &full, &ec, &err) == GNN_OK, "Cora-size estimate");
	CHECK(ef.gpu_bytes > 2 * em.gpu_bytes && em.gpu_bytes > ((int64_t) 64 << 20) &&
		  ef.gpu_bytes > ((int64_t) 4 << 30) && ec.gpu_bytes < ((int64_t) 256 << 20) &&
		  ec.gpu_bytes > 2708LL * 1433 * 4 && em.batch_bytes > 0 && em.batch_bytes < em.gpu_bytes,
		  "GPU sizes: products full batch %lld MB > minibatch %lld MB (a batch %lld MB); Cora full batch %lld MB",
		  (long long) (ef.gpu_bytes >> 20), (long long) (em.gpu_bytes >> 20), (long long) (em.batch_bytes >> 20),
		  (long long) (ec.gpu_bytes >> 20));
	/* a CPU plan keeps everything on the host; an invalid one is refused */
	full.gpu = false;
	CHECK(gnn_job_estimate(&cora, &cfg, &full, &ec, &err) == GNN_OK && ec.gpu_bytes == 0 && ec.host_bytes > 0,
		  "a CPU job has no device items");
	mb.gpu = false;
	mb.nfanouts = 2;
	cfg.layers = 3;
	CHECK(gnn_job_estimate(&cora, &cfg, &mb, &ec, &err) == GNN_ERR_INVALID, "fan-outs that do not match the layers: %s",
		  err.msg);
}

int
main(void)
{
	tgraph		small,
				wide;
	const char *dir = getenv("GNN_DATA_DIR");

	check_sizes();
	if (!gnn_heap_tracked())
	{
		CHECK_SKIP("not linked with the heap wrapper (GNN_HEAP_WRAP)", "heap counts");
		return check_done();
	}
	if (make_graph(20000, 10, 64, 5, 1, &small))
	{
		for (size_t i = 0; i < sizeof(jobs) / sizeof(jobs[0]); i++)
			run_job("random 20k x 64", &small.g, &jobs[i]);
		free(small.region);
	}
	if (make_graph(4000, 20, 500, 8, 2, &wide))
	{
		for (size_t i = 0; i < sizeof(jobs) / sizeof(jobs[0]); i++)
			run_job("random 4k x 500", &wide.g, &jobs[i]);
		free(wide.region);
	}
	if (dir && dir[0])
	{
		char		path[4096];
		gnn_dataset cora;
		gnn_error	err;

		snprintf(path, sizeof(path), "%s/cora", dir);
		if (gnn_dataset_load(path, 0, &cora, &err) == GNN_OK)
		{
			for (size_t i = 0; i < sizeof(jobs) / sizeof(jobs[0]); i++)
				run_job("cora", &cora.g, &jobs[i]);
			gnn_dataset_free(&cora);
		}
		else
			CHECK_SKIP(err.msg, "cora");
	}
	else
		CHECK_SKIP("GNN_DATA_DIR is not set (../shared/data missing)", "cora");
	printf("# estimate / measured: %.2f .. %.2f\n", worst_low, worst_high);
	return check_done();
}
