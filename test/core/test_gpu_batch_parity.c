/*
 * test_gpu_batch_parity.c: training batches built on the GPU
 * (src/core/gpu_batch.c) against their CPU emulation (gpu_batch_emu.h),
 * bit for bit: nodes, block CSRs and transposes, GCN's normalised looped
 * CSR and the gathered features, with the graph in device memory and in
 * pinned host memory, with a partial and a full feature cache; then
 * minibatch GraphSAGE on Cora with device => cuda (accuracy >= 79%,
 * repeatable curves, batches really built on the GPU).  Without a GPU
 * (or kernels/gnn_cuda.so) it checks the CPU fallback's reasons and prints
 * "# SKIP" lines.  GNN_CUDA_SO overrides the path.
 */
#include <math.h>

#include "check.h"
#include "nn/backend.h"
#include "graph/dataset.h"
#include "sample/gpu_batch.h"
#include "gpu_batch_emu.h"
#include "train/train_mb.h"

static gnn_backend *be;

static bool
fetch(void *h, const void *d, size_t bytes)
{
	return bytes == 0 || (gnn_backend_sync(be) == GNN_OK && gnn_backend_copy_d2h(be, h, d, bytes) == GNN_OK);
}

static bool
dev_eq(const void *dev, const void *host, size_t bytes)
{
	void	   *h = malloc(bytes + 1);
	bool		ok = fetch(h, dev, bytes) && (bytes == 0 || memcmp(h, host, bytes) == 0);

	free(h);
	return ok;
}

static void
mb_config(gnn_model_kind kind, gnn_train_config *cfg, gnn_minibatch_config *mbc, int L, const int64_t *f,
		  bool replace)
{
	gnn_train_config_default(kind, cfg);
	cfg->layers = L;
	cfg->hidden = 16;
	memset(mbc, 0, sizeof(*mbc));
	mbc->sampler.kind = GNN_SAMPLER_NEIGHBOR;
	mbc->sampler.nhops = L;
	mbc->sampler.replace = replace;
	for (int h = 0; h < L; h++)
		mbc->sampler.fanouts[h] = (int32_t) f[h];
	mbc->batch_size = 512;
}

static void
check_batch(const gnn_graph *g, gnn_model_kind kind, int64_t cache_bytes, int64_t graph_bytes, const char *what)
{
	gnn_train_config cfg;
	gnn_minibatch_config mbc;
	gnn_gpu_batch_config gc;
	gnn_gpu_batcher *B = NULL;
	gnn_error	err;
	int64_t		f[3] = {15, 10, 5};
	int64_t		n = 512,
				inputs;
	double		ts,
				tg;
	int32_t    *seeds = malloc(sizeof(int32_t) * n),
			   *train = malloc(sizeof(int32_t) * g->num_nodes);
	int64_t    *o = emu_order(g->num_nodes, 31);
	gnn_dblock	blocks[GNN_MAX_LAYERS];
	gnn_dfeat	x;
	gnn_gpu_batch_stats gs;
	emu_batch	E;
	bool		loop = kind != GNN_MODEL_SAGE,
				ok = true;
	gnn_status	st;

	for (int64_t v = 0; v < g->num_nodes; v++)
		train[v] = (int32_t) v;
	for (int64_t i = 0; i < n; i++)
		seeds[i] = (int32_t) o[i];
	mb_config(kind, &cfg, &mbc, 3, f, kind == GNN_MODEL_GCN);
	cfg.row_normalise = kind != GNN_MODEL_GAT;	/* both gathers: GAT's rows plain, bit for bit */
	gnn_gpu_batch_config_default(&gc);
	gc.cache_bytes = cache_bytes;
	gc.graph_bytes = graph_bytes;
	gc.policy = GNN_CACHE_DEGREE;
	st = gnn_gpu_batcher_create(be, g, &cfg, &mbc, &gc, train, g->num_nodes, 4096, 2, &B, &err);
	if (!CHECK(st == GNN_OK, "%s: batcher (%s)", what, st == GNN_OK ? "ok" : err.msg))
		goto out;
	st = gnn_gpu_batcher_next(B, 1, be, seeds, n, 99, blocks, &x, &gs, &ts, &tg, &err);
	inputs = gs.rows;
	if (!CHECK(st == GNN_OK, "%s: a batch (%s)", what, st == GNN_OK ? "ok" : err.msg))
		goto out;
	emu_batch_build(g, seeds, n, 3, f, mbc.sampler.replace, 99, loop, gnn_h_capacity(g->num_nodes), 0, &E);
	CHECK(inputs == E.n_at[3] && x.rows == inputs, "%s: %lld input nodes, as emulated (%lld)", what,
		  (long long) inputs, (long long) E.n_at[3]);
	for (int h = 0; h < 3 && ok; h++)
	{
		const gnn_dblock *b = &blocks[2 - h];
		const emu_hop *H = &E.hop[h];
		int64_t		nd = E.n_at[h],
					ns = E.n_at[h + 1];

		ok &= b->n_dst == nd && b->n_src == ns && b->raw.csr.nnz == H->nnz &&
			dev_eq(b->raw.csr.indptr, H->ptr, sizeof(int64_t) * (nd + 1)) &&
			dev_eq(b->raw.csr.indices, H->local, sizeof(int32_t) * H->nnz) &&
			dev_eq(b->raw.csr.t_indptr, H->tptr, sizeof(int64_t) * (ns + 1)) &&
			dev_eq(b->raw.csr.t_indices, H->tidx, sizeof(int32_t) * H->nnz) &&
			dev_eq(b->raw.csr.t_perm, H->tperm, sizeof(int64_t) * H->nnz);
		if (loop)
			ok &= b->loop.csr.nnz == H->lnnz && dev_eq(b->loop.csr.indptr, H->lptr, sizeof(int64_t) * (nd + 1)) &&
				dev_eq(b->loop.csr.indices, H->lidx, sizeof(int32_t) * H->lnnz) &&
				dev_eq(b->loop.csr.values, H->lval, sizeof(float) * H->lnnz) &&
				dev_eq(b->loop.csr.t_indptr, H->ltptr, sizeof(int64_t) * (ns + 1)) &&
				dev_eq(b->loop.csr.t_perm, H->ltperm, sizeof(int64_t) * H->lnnz);
	}
	CHECK(ok, "%s: every block (CSR, transpose%s) = the emulation, bit for bit", what,
		  loop ? ", looped normalised CSR" : "");
	{
		int64_t		nv = inputs * g->feat_dim;
		float	   *want = malloc(sizeof(float) * nv + 1),
				   *got = malloc(sizeof(float) * nv + 1);
		double		worst = 0;

		/*
		 * the rows as training reads them: row-normalised when the config
		 * says so (GCN / GAT / GraphSAGE default).  The kernel sums a row in
		 * double over 32 lanes, the CPU in order: the quotient can differ in
		 * its last bit, so normalised rows are compared to 1e-6 relative,
		 * plain copies bit for bit.
		 */
		gnn_gather_dense(g, E.nodes, inputs, cfg.row_normalise, 1, want, &err);
		if (fetch(got, x.dense.data, sizeof(float) * nv))
			for (int64_t i = 0; i < nv; i++)
			{
				double		dd = fabs((double) got[i] - (double) want[i]) / (fabs((double) want[i]) + 1e-30);

				worst = dd > worst ? dd : worst;
			}
		else
			worst = INFINITY;
		CHECK(cfg.row_normalise ? worst <= 1e-6 : worst == 0,
			  "%s: features = the host rows of the batch's nodes%s (max rel diff %.2g)", what,
			  cfg.row_normalise ? ", row-normalised" : "", worst);
		free(got);
		CHECK(gs.edges == E.hop[0].nnz + E.hop[1].nnz + E.hop[2].nnz && gs.hits >= 0 &&
			  gs.hits <= inputs && (gs.cache_rows < g->num_nodes || gs.hits == inputs) &&
			  gs.host_bytes == (gs.rows - gs.hits) * (int64_t) sizeof(float) * g->feat_dim,
			  "%s: cache %lld rows, %lld of %lld rows hit, %lld bytes from host", what, (long long) gs.cache_rows,
			  (long long) gs.hits, (long long) gs.rows, (long long) gs.host_bytes);
		free(want);
	}
	emu_batch_free(&E);
out:
	gnn_gpu_batcher_free(B);
	free(seeds);
	free(train);
	free(o);
}

static void
check_cora(void)
{
	const char *dir = check_data_dir();
	char		path[600];
	gnn_dataset cora;
	gnn_error	err;
	gnn_train_config cfg;
	gnn_minibatch_config mbc;
	gnn_train_result res;
	gnn_minibatch_stats stats;
	int64_t		f[2] = {10, 10};
	double		s = 0;
	curve		a = {0},
				b = {0};
	int			seeds = getenv("GNN_TEST_SEEDS") ? atoi(getenv("GNN_TEST_SEEDS")) : 3;

	if (!dir)
	{
		CHECK_SKIP("../shared/data not found (set GNN_DATA_DIR)", "minibatch GraphSAGE on cora with GPU batches");
		return;
	}
	snprintf(path, sizeof(path), "%s/cora", dir);
	if (!CHECK(gnn_dataset_load(path, 0, &cora, &err) == GNN_OK, "load cora"))
		return;
	seeds = seeds > 0 ? seeds : 1;
	for (int i = 0; i < seeds; i++)
	{
		mb_config(GNN_MODEL_SAGE, &cfg, &mbc, 2, f, false);
		cfg.hidden = 64;
		cfg.epochs = 30;
		cfg.lr = 0.01f;
		cfg.select = GNN_SELECT_VAL_ACC;
		cfg.seed = (uint64_t) i + 1;
		mbc.batch_size = 64;
		if (!CHECK(gnn_train_minibatch(&cora.g, &cfg, &mbc, be, NULL, NULL, NULL, NULL, NULL, &res, &stats, &err) ==
				   GNN_OK && stats.gpu_batches, "cora on the GPU, seed %d (%s)", i + 1,
				   stats.gpu_batches ? "GPU batches" : stats.cpu_batches_why))
			return;
		NOTE("  seed %d: test %.4f, %.2f s, sample %.2f s, gather %.2f s, compute %.2f s, %lld bytes up", i + 1,
			 res.best.test_acc, res.seconds, stats.sample_s, stats.gather_s, stats.compute_s,
			 (long long) stats.h2d_bytes);
		s += res.best.test_acc;
	}
	CHECK(s / seeds >= 0.79, "minibatch GraphSAGE on cora, GPU batches: mean test accuracy %.4f >= 0.79 (%d seeds)",
		  s / seeds, seeds);
	cfg.epochs = 4;
	cfg.seed = 5;
	gnn_train_minibatch(&cora.g, &cfg, &mbc, be, on_epoch, &a, NULL, NULL, NULL, &res, &stats, &err);
	gnn_train_minibatch(&cora.g, &cfg, &mbc, be, on_epoch, &b, NULL, NULL, NULL, &res, &stats, &err);
	CHECK(a.n == 4 && b.n == 4 && memcmp(a.loss, b.loss, sizeof(float) * 4) == 0,
		  "GPU batches: the same seed gives the same curve");
	CHECK(a.n == 4 && a.hit[0] == 1.0, "cora's features fit: every row from the device cache (hit rate %.3f)",
		  a.n ? a.hit[0] : -1.0);
	gnn_dataset_free(&cora);
}

int
main(void)
{
	gnn_error	err;
	const char *so = getenv("GNN_CUDA_SO");
	gnn_status	st;
	gnn_backend *cpu = NULL;
	void	   *region = NULL;
	uint64_t	size;
	gnn_graph	g;
	gnn_train_config cfg;
	gnn_minibatch_config mbc;
	int64_t		f[2] = {10, 10};

	if (gnn_backend_cpu_create(1, &cpu, &err) == GNN_OK)
	{
		gnn_gpu_batcher *B = NULL;
		gnn_gpu_batch_config gc;

		mb_config(GNN_MODEL_SAGE, &cfg, &mbc, 2, f, false);
		gnn_gpu_batch_config_default(&gc);
		CHECK(gnn_gpu_batch_unsupported(cpu, NULL, &cfg, &mbc) != NULL &&
			  strstr(gnn_gpu_batch_unsupported(cpu, NULL, &cfg, &mbc), "not CUDA") != NULL,
			  "the CPU backend: batches are built on the CPU (%s)", gnn_gpu_batch_unsupported(cpu, NULL, &cfg, &mbc));
		CHECK(gnn_gpu_batcher_create(cpu, NULL, &cfg, &mbc, &gc, NULL, 0, 0, 1, &B, &err) == GNN_ERR_UNSUPPORTED && !B,
			  "a GPU batcher on the CPU backend is refused cleanly");
		gnn_backend_destroy(cpu);
	}
	st = gnn_backend_cuda_load(so && *so ? so : "kernels/gnn_cuda.so", 0, &be, &err);
	if (st != GNN_OK)
	{
		CHECK(st == GNN_ERR_UNSUPPORTED && err.msg[0] != '\0',
			  "loading the CUDA backend without a usable GPU fails cleanly (%s)", gnn_status_name(st));
		CHECK_SKIP(err.msg, "GPU-built batches against the CPU emulation; minibatch GraphSAGE on cora with GPU batches");
		return check_done();
	}
	NOTE("GPU batches on %s", be->name);
	if (!CHECK(emu_rmat_graph(14, 200000, false, 32, &region, &size, &g, &err) == GNN_OK, "R-MAT graph"))
		return check_done();
	check_batch(&g, GNN_MODEL_SAGE, -1, -1, "GraphSAGE, graph on the device, default cache");
	check_batch(&g, GNN_MODEL_GCN, (int64_t) g.num_nodes * 32 * 4 / 4, -1, "GCN, a quarter of the features cached");
	check_batch(&g, GNN_MODEL_GAT, 0, 0, "GAT, graph and features in pinned host memory");
	free(region);
	check_cora();
	gnn_backend_destroy(be);
	return check_done();
}
