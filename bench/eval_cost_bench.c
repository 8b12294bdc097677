/*
 * eval_cost_bench.c: issue #44's R-MAT job (bench/train_job.sh's homo job)
 * in one process on the core library, no database: what evaluation costs
 * beside the training passes when nothing else does (no worker to start,
 * no shared memory to map, no model row to commit).
 *
 *   bench/bin/eval_cost_bench                          (the scale)
 *   SCALE=16 EDGES=500000 bench/bin/eval_cost_bench    (a quick run)
 *
 * Environment (defaults): SCALE (20), EDGES (10000000 R-MAT edges, made
 * undirected), THREADS (2), EBS ("512": evaluation batch sizes to run, comma
 * separated; 512 is the job's batch size, what gnn.train uses), RUNS (3 each,
 * alternating), EVAL_NODES (20000: validation sampled as gnn.train does),
 * SHARES ("0": the evaluation gather shares to run, comma separated, each
 * with every batch size: 0 the pipeline's timed choice, 1 the producer
 * gathering every row, as before 2026-12-07; gnn_minibatch_config's
 * eval_gather_share), REUSE ("0": evaluation's kept layer-0 rows a pass
 * to run, comma separated, with every batch size and share: 0 the default,
 * -1 none, as before 2026-12-07's eleventh session; eval_reuse_rows).
 *
 * The graph: 2^SCALE nodes, 64-dim dense random features, 8 classes, 10% of
 * the nodes in each of the training, validation and test splits (by a hash,
 * as bench/train_job.sh splits them): bench_util.h's bench_rmat_graph.  The job: GraphSAGE mean, 2 layers,
 * hidden 128, fan-outs [10, 5], batch 512, 2 epochs, rows normalised, the
 * pipeline's prefetch 2, sampled evaluation (validation every epoch, the
 * test split once on the kept weights) - gnn.train's defaults.
 *
 * Per run: the wall time of gnn_train_minibatch, the training passes (each
 * epoch's seconds less its evaluation), the validation per epoch, the test
 * pass (the stats' evaluation less the epochs'), and the rest (setup and
 * teardown); then wall / passes, the figure bench/train_job.sh holds against
 * #44's goal of 1.25.
 */
#include "bench_util.h"
#include "train/train_mb.h"

#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct ep_log
{
	double		s[8];
	double		ev[8];
	int			n;
} ep_log;

static void
on_epoch(void *arg, const gnn_epoch_metrics *m)
{
	ep_log	   *l = arg;

	if (l->n < 8)
	{
		l->s[l->n] = m->seconds;
		l->ev[l->n] = m->eval_s;
		l->n++;
	}
}

int
main(void)
{
	int			scale = (int) env_ll("SCALE", 20),
				threads = (int) env_ll("THREADS", 2),
				runs = (int) env_ll("RUNS", 3),
				eval_nodes = (int) env_ll("EVAL_NODES", 20000);
	int64_t		edges = env_ll("EDGES", 10000000);
	const char *ebs_list = getenv("EBS") ? getenv("EBS") : "512";
	const char *shares_list = getenv("SHARES") ? getenv("SHARES") : "0";
	const char *reuse_list = getenv("REUSE") ? getenv("REUSE") : "0";
	double		ebs[8],
				shares[8],
				reuse[8];
	int			nebs = parse_list(ebs_list, ebs, 8),
				nshares = parse_list(shares_list, shares, 8),
				nreuse = parse_list(reuse_list, reuse, 8);
	const int	dim = 64,
				classes = 8;
	gnn_graph	g;
	gnn_error	err;
	gnn_backend *be;
	void	   *region;
	uint64_t	size;
	double		t0 = now_s();

	/* the worker's heap settings (worker.c): big buffers kept between batches */
	mallopt(M_MMAP_THRESHOLD, 32 * 1024 * 1024);
	mallopt(M_TRIM_THRESHOLD, 512 * 1024 * 1024);
	mallopt(M_TOP_PAD, 16 * 1024 * 1024);
	if (scale < 1 || scale > 30 || edges < 1 || threads < 1 || runs < 1 || nebs < 1 || nshares < 1 || nreuse < 1)
	{
		fprintf(stderr, "eval_cost_bench: bad settings (see the comment at the top of bench/eval_cost_bench.c)\n");
		return 2;
	}
	printf("# eval_cost_bench: SCALE=%d EDGES=%lld THREADS=%d EBS=%s SHARES=%s REUSE=%s RUNS=%d EVAL_NODES=%d\n", scale,
		   (long long) edges, threads, ebs_list, shares_list, reuse_list, runs, eval_nodes);
	/* 10% of the nodes in each split, as bench/train_job.sh splits them */
	if (!bench_rmat_graph(scale, edges, dim, classes, 0.1, 0.1, 0.1, 0.0f, &region, &size, &g, &err))
	{
		fprintf(stderr, "graph: %s\n", err.msg);
		return 1;
	}
	printf("graph: %lld nodes, %lld arcs, %d-dim features; %lld training nodes; built in %.1f s\n",
		   (long long) g.num_nodes, (long long) g.num_edges, dim, (long long) g.n_train, now_s() - t0);
	if (gnn_backend_cpu_create(threads, &be, &err) != GNN_OK)
	{
		fprintf(stderr, "backend: %s\n", err.msg);
		return 1;
	}
	printf("\n| evaluation batch | gather share | kept rows (reused / computed) | run | wall s | training passes s | validation s (epoch 1 / 2) | test pass s | rest s | wall / passes | test nodes | test acc |\n");
	printf("|---|---|---|---|---|---|---|---|---|---|---|---|\n");
	for (int run = 0; run < runs; run++)
		for (int k = 0; k < nebs * nshares * nreuse; k++)
		{
			gnn_train_config cfg;
			gnn_minibatch_config mbc;
			gnn_train_result res;
			gnn_minibatch_stats st;
			ep_log		l;
			double		t,
						wall,
						passes = 0,
						val = 0;

			gnn_train_config_default(GNN_MODEL_SAGE, &cfg);
			cfg.aggr = GNN_AGGR_MEAN;
			cfg.layers = 2;
			cfg.hidden = 128;
			cfg.threads = threads;
			cfg.row_normalise = true;
			cfg.seed = 1;
			cfg.epochs = 2;
			memset(&mbc, 0, sizeof(mbc));
			mbc.sampler.kind = GNN_SAMPLER_NEIGHBOR;
			mbc.sampler.nhops = 2;
			mbc.sampler.fanouts[0] = 10;
			mbc.sampler.fanouts[1] = 5;
			mbc.sampler.nthreads = threads;
			mbc.batch_size = 512;
			mbc.prefetch = 2;
			mbc.sampled_eval = true;
			mbc.eval_nodes = eval_nodes;
			mbc.eval_batch_size = (int32_t) ebs[k / (nshares * nreuse)];
			mbc.eval_gather_share = shares[k / nreuse % nshares];
			mbc.eval_reuse_rows = (int64_t) reuse[k % nreuse];
			memset(&st, 0, sizeof(st));
			memset(&l, 0, sizeof(l));
			t = now_s();
			if (gnn_train_minibatch(&g, &cfg, &mbc, be, on_epoch, &l, NULL, NULL, NULL, &res, &st, &err) != GNN_OK)
			{
				fprintf(stderr, "train: %s\n", err.msg);
				return 1;
			}
			wall = now_s() - t;
			for (int e = 0; e < l.n; e++)
			{
				passes += l.s[e] - l.ev[e];
				val += l.ev[e];
			}
			printf("| %d | %g (%lld rows) | %lld (%lld / %lld) | %d | %.3f | %.3f | %.3f / %.3f | %.3f | %.3f | **%.2f** | %lld | %.4f |\n",
				   mbc.eval_batch_size, mbc.eval_gather_share, (long long) st.eval_rows_shared,
				   (long long) mbc.eval_reuse_rows, (long long) st.eval_rows_reused, (long long) st.eval_rows_computed,
				   run + 1, wall,
				   passes, l.ev[0], l.n > 1 ? l.ev[1] : 0.0, st.eval_s - val, wall - passes - st.eval_s,
				   wall / passes, (long long) st.test_nodes, res.best.test_acc);
			fflush(stdout);
		}
	gnn_backend_destroy(be);
	free(region);
	return 0;
}
