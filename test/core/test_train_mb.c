/*
 * test_train_mb: minibatch GraphSAGE on Cora with sampled blocks (accuracy,
 * bit-for-bit repeatable curves, cancellation between minibatches), LADIES
 * training, and unsupervised link prediction (AUC on held-out edges).
 * Skips when ../shared/data is missing.
 */
#include "check.h"
#include "graph/dataset.h"
#include "train/train_mb.h"

#include <math.h>

typedef struct rec
{
	int			n;
	float		loss[1000];
	float		val[1000];
	float		vloss[1000];
	int			polls;
	int			stop_at;
	bool		splits_ok;		/* every epoch had its time split */
} rec;

static void
on_epoch(void *arg, const gnn_epoch_metrics *m)
{
	rec		   *r = arg;

	if (r->n < 1000)
	{
		r->val[r->n] = m->val_acc;
		r->vloss[r->n] = m->val_loss;
		r->loss[r->n++] = m->train_loss;
	}
	if (r->n == 1)
		r->splits_ok = true;
	if (!(m->sample_s > 0 && m->gather_s > 0 && m->compute_s > 0 && m->wait_s >= 0 && m->eval_s > 0 &&
		  m->sample_s + m->gather_s + m->compute_s + m->eval_s <= m->seconds * 1.5 + 0.01))
		r->splits_ok = false;
}

static bool
stop_cb(void *arg)
{
	rec		   *r = arg;

	return ++r->polls > r->stop_at;
}

static void
sage_config(gnn_train_config *cfg, gnn_minibatch_config *mbc)
{
	gnn_train_config_default(GNN_MODEL_SAGE, cfg);
	cfg->epochs = 30;
	cfg->hidden = 64;
	cfg->lr = 0.01f;
	cfg->select = GNN_SELECT_VAL_ACC;
	memset(mbc, 0, sizeof(*mbc));
	mbc->sampler.kind = GNN_SAMPLER_NEIGHBOR;
	mbc->sampler.nhops = 2;
	mbc->sampler.fanouts[0] = 10;
	mbc->sampler.fanouts[1] = 10;
	mbc->batch_size = 64;
}

/* g with its sparse features written out dense (the same nodes, arcs, labels and splits) */
static bool
dense_copy(const gnn_graph *g, void **region, gnn_graph *out)
{
	int64_t		n = g->num_nodes,
				m = g->indptr[n],
				d = g->feat_dim;
	int64_t    *src = malloc(sizeof(int64_t) * (m + 1)),
			   *dst = malloc(sizeof(int64_t) * (m + 1)),
			   *ids = malloc(sizeof(int64_t) * n);
	float	   *feat = calloc((size_t) n * d, sizeof(float));
	gnn_graph_input in = {0};
	uint64_t	size;
	gnn_error	err;
	bool		ok;

	if (!src || !dst || !ids || !feat)
		return false;
	for (int64_t v = 0; v < n; v++)
	{
		ids[v] = v;
		for (int64_t p = g->indptr[v]; p < g->indptr[v + 1]; p++)
		{
			src[p] = g->indices[p];
			dst[p] = v;
		}
		for (int64_t p = g->fptr[v]; p < g->fptr[v + 1]; p++)
			feat[v * d + g->fidx[p]] = g->fval[p];
	}
	in.num_edges = m;
	in.src = src;
	in.dst = dst;
	in.num_nodes = n;
	in.node_ids = ids;
	in.feat_dim = (int32_t) d;
	in.feat = feat;
	in.labels = g->labels;
	in.split = g->split;
	ok = gnn_graph_build_region(&in, region, &size, out, &err) == GNN_OK;
	free(src);
	free(dst);
	free(ids);
	free(feat);
	return ok;
}

int
main(void)
{
	const char *dir = check_data_dir();
	char		path[600];
	gnn_dataset cora;
	gnn_error	err;
	gnn_train_config cfg;
	gnn_minibatch_config mbc;
	gnn_train_result res;
	gnn_minibatch_stats stats;
	int			seeds = getenv("GNN_TEST_SEEDS") ? atoi(getenv("GNN_TEST_SEEDS")) : 3;

	if (!dir)
	{
		CHECK_SKIP("../shared/data not found (set GNN_DATA_DIR)", "minibatch and link prediction on cora");
		return check_done();
	}
	snprintf(path, sizeof(path), "%s/cora", dir);
	if (gnn_dataset_load(path, 0, &cora, &err) != GNN_OK)
	{
		CHECK(0, "load cora: %s", err.msg);
		return check_done();
	}

	/* accuracy: mean over seeds */
	{
		double		s = 0;

		sage_config(&cfg, &mbc);
		for (int i = 0; i < seeds; i++)
		{
			cfg.seed = (uint64_t) i + 1;
			if (gnn_train_minibatch(&cora.g, &cfg, &mbc, NULL, NULL, NULL, NULL, NULL, NULL, &res, &stats, &err) != GNN_OK)
			{
				CHECK(0, "minibatch training: %s", err.msg);
				break;
			}
			NOTE("  seed %d: test %.4f (best epoch %d, %.2f s; %lld batches, sample %.2f s, gather %.2f s, compute %.2f s, eval %.2f s)",
				 i + 1, res.best.test_acc, res.best_epoch, res.seconds, (long long) stats.batches,
				 stats.sample_s, stats.gather_s, stats.compute_s, stats.eval_s);
			s += res.best.test_acc;
		}
		CHECK(s / seeds >= 0.79, "minibatch GraphSAGE on cora, fan-outs {10,10}, batch 64: mean test accuracy %.4f >= 0.79 (%d seeds)",
			  s / seeds, seeds);
	}

	/*
	 * Sampled evaluation (issue #44): after each epoch the validation split
	 * only, its batches made by the pipeline (the same ahead or in line);
	 * the test split once, on the kept weights, its confusion matching its
	 * accuracy; a sample of eval_nodes validation nodes; accuracy close to
	 * the full-neighbourhood evaluation's.
	 */
	{
		rec		   *a = calloc(1, sizeof(rec)),
				   *b = calloc(1, sizeof(rec));
		int64_t		ntest = 0,
					sum = 0,
					diag = 0;
		float		sampled_acc,
					full_acc;
		gnn_status	st;
		bool		tenths = true;

		for (int64_t v = 0; v < cora.g.num_nodes; v++)
			ntest += cora.g.split[v] == GNN_SPLIT_TEST && cora.g.labels[v] >= 0;
		sage_config(&cfg, &mbc);
		cfg.epochs = 8;
		cfg.seed = 1;
		mbc.sampled_eval = true;
		mbc.prefetch = 2;
		cfg.keep_confusion = true;
		st = gnn_train_minibatch(&cora.g, &cfg, &mbc, NULL, on_epoch, a, NULL, NULL, NULL, &res, &stats, &err);
		CHECK(st == GNN_OK, "sampled evaluation trains: %s", st == GNN_OK ? "ok" : err.msg);
		for (int i = 0; res.confusion && i < res.confusion_classes * res.confusion_classes; i++)
		{
			sum += res.confusion[i];
			diag += i % (res.confusion_classes + 1) == 0 ? res.confusion[i] : 0;
		}
		CHECK(res.confusion && res.confusion_classes == cora.g.num_classes && sum == ntest &&
			  fabs((double) diag / (double) sum - res.best.test_acc) < 1e-6,
			  "the test split once, on the kept weights: its confusion counts the %lld test nodes (%lld), "
			  "its diagonal is test_acc %.4f", (long long) ntest, (long long) sum, res.best.test_acc);
		sampled_acc = res.best.test_acc;
		gnn_train_result_free(&res);
		mbc.prefetch = 0;
		gnn_train_minibatch(&cora.g, &cfg, &mbc, NULL, on_epoch, b, NULL, NULL, NULL, &res, NULL, &err);
		gnn_train_result_free(&res);
		CHECK(a->n == 8 && b->n == 8 && memcmp(a->val, b->val, sizeof(float) * 8) == 0 &&
			  memcmp(a->loss, b->loss, sizeof(float) * 8) == 0,
			  "validation batches made ahead by the pipeline equal those made in line (8 epochs)");
		memset(b, 0, sizeof(*b));
		mbc.eval_nodes = 100;
		gnn_train_minibatch(&cora.g, &cfg, &mbc, NULL, on_epoch, b, NULL, NULL, NULL, &res, NULL, &err);
		gnn_train_result_free(&res);
		for (int i = 0; i < b->n; i++)
			tenths &= fabsf(b->val[i] * 100 - roundf(b->val[i] * 100)) < 1e-3f;
		CHECK(b->n == 8 && tenths && memcmp(a->loss, b->loss, sizeof(float) * 8) == 0,
			  "eval_nodes 100: validation accuracies in hundredths, training unchanged");
		/*
		 * evaluation batches larger than training's (eval_batch_size): the
		 * same training, every validation and test node measured once (the
		 * confusion counts the test split), ahead as in line
		 */
		{
			rec		   *e1 = calloc(1, sizeof(rec)),
					   *e2 = calloc(1, sizeof(rec));
			gnn_minibatch_stats es;
			int64_t		esum = 0;

			mbc.eval_nodes = 0;
			mbc.eval_batch_size = 300;
			mbc.prefetch = 2;
			st = gnn_train_minibatch(&cora.g, &cfg, &mbc, NULL, on_epoch, e1, NULL, NULL, NULL, &res, &es, &err);
			for (int i = 0; res.confusion && i < res.confusion_classes * res.confusion_classes; i++)
				esum += res.confusion[i];
			CHECK(st == GNN_OK && e1->n == 8 && memcmp(a->loss, e1->loss, sizeof(float) * 8) == 0 && esum == ntest &&
				  es.test_nodes == ntest && es.val_nodes > 0 && es.val_nodes < cora.g.num_nodes,
				  "eval_batch_size 300 (batch 64): training unchanged, %lld test nodes measured once (%lld), %lld validation nodes",
				  (long long) ntest, (long long) esum, (long long) es.val_nodes);
			gnn_train_result_free(&res);
			mbc.prefetch = 0;
			gnn_train_minibatch(&cora.g, &cfg, &mbc, NULL, on_epoch, e2, NULL, NULL, NULL, &res, NULL, &err);
			gnn_train_result_free(&res);
			CHECK(e2->n == 8 && memcmp(e1->val, e2->val, sizeof(float) * 8) == 0,
				  "eval_batch_size 300: validation batches made ahead equal those made in line");
			mbc.eval_batch_size = -1;
			CHECK(gnn_train_minibatch(&cora.g, &cfg, &mbc, NULL, NULL, NULL, NULL, NULL, NULL, &res, NULL, &err) ==
				  GNN_ERR_INVALID, "a negative eval_batch_size is refused: %s", err.msg);
			mbc.eval_batch_size = 0;
			mbc.prefetch = 2;
			free(e1);
			free(e2);
		}
		/*
		 * evaluation's feature rows gathered partly by the computing thread
		 * (eval_gather_share): the producer all of them (1), 30% (the
		 * computing thread the rest), or the share its timings choose (0);
		 * the same validation curve and test accuracy bit for bit
		 */
		{
			rec		   *s1 = calloc(1, sizeof(rec)),
					   *s2 = calloc(1, sizeof(rec)),
					   *s3 = calloc(1, sizeof(rec));
			gnn_minibatch_stats q1,
						q2,
						q3;
			float		acc[3];
			gnn_status	st3[3];
			int32_t		threads = cfg.threads;

			void	   *dregion = NULL;
			gnn_graph	dg;
			bool		dense = dense_copy(&cora.g, &dregion, &dg) && dg.feat_kind == GNN_FEAT_DENSE;

			cfg.threads = 2;	/* (the computing thread and the producer each a team of one) */
			mbc.eval_nodes = 0;
			mbc.prefetch = 2;
			mbc.eval_gather_share = 1;
			st3[0] = !dense ? GNN_ERR_INVALID : gnn_train_minibatch(&dg, &cfg, &mbc, NULL, on_epoch, s1, NULL, NULL, NULL, &res, &q1, &err);
			acc[0] = res.best.test_acc;
			gnn_train_result_free(&res);
			mbc.eval_gather_share = 0.3;
			st3[1] = !dense ? GNN_ERR_INVALID : gnn_train_minibatch(&dg, &cfg, &mbc, NULL, on_epoch, s2, NULL, NULL, NULL, &res, &q2, &err);
			acc[1] = res.best.test_acc;
			gnn_train_result_free(&res);
			mbc.eval_gather_share = 0;
			st3[2] = !dense ? GNN_ERR_INVALID : gnn_train_minibatch(&dg, &cfg, &mbc, NULL, on_epoch, s3, NULL, NULL, NULL, &res, &q3, &err);
			acc[2] = res.best.test_acc;
			gnn_train_result_free(&res);
			CHECK(st3[0] == GNN_OK && st3[1] == GNN_OK && st3[2] == GNN_OK && s1->n == 8 && s2->n == 8 && s3->n == 8 &&
				  memcmp(s1->val, s2->val, sizeof(float) * 8) == 0 && memcmp(s1->val, s3->val, sizeof(float) * 8) == 0 &&
				  acc[0] == acc[1] && acc[0] == acc[2] && q1.eval_rows_shared == 0 && q2.eval_rows_shared > 0,
				  "Cora's features dense: evaluation's gathering shared with the computing thread (%lld rows at share "
				  "0.3, %lld chosen by timing, 0 at share 1): the same validation curve and test accuracy %.4f / %.4f / %.4f",
				  (long long) q2.eval_rows_shared, (long long) q3.eval_rows_shared, acc[0], acc[1], acc[2]);
			cfg.threads = threads;
			mbc.eval_gather_share = 0;
			free(dregion);
			free(s1);
			free(s2);
			free(s3);
		}
		/*
		 * evaluation's layer-0 rows reused within a pass (eval_reuse_rows):
		 * as many as the pass reaches (0), at most 40, or 1 - GraphSAGE and
		 * GAT.  Every node's neighbourhood comes from per-node streams, so
		 * which rows are reused changes only float summation order: the
		 * same validation curve and test accuracy (a row may flip on a
		 * near tie: one node), training untouched; rows reused at 0, fewer
		 * at 40.  -1 (none): per-batch streams as before, no row reused.
		 */
		for (int kind = 0; kind < 2; kind++)
		{
			rec		   *r[3];
			gnn_minibatch_stats q[3];
			float		acc[3];
			gnn_status	rs[3];
			int64_t		caps[3] = {0, 40, 1};
			bool		same = true;
			gnn_train_config rc = cfg;

			if (kind == 1)
			{
				gnn_train_config_default(GNN_MODEL_GAT, &rc);
				rc.epochs = cfg.epochs;
				rc.hidden = 16;
				rc.heads = 4;
				rc.lr = 0.01f;
				rc.seed = cfg.seed;
				rc.select = GNN_SELECT_VAL_ACC;
			}
			mbc.eval_nodes = 0;
			for (int i = 0; i < 3; i++)
			{
				r[i] = calloc(1, sizeof(rec));
				mbc.eval_reuse_rows = caps[i];
				rs[i] = gnn_train_minibatch(&cora.g, &rc, &mbc, NULL, on_epoch, r[i], NULL, NULL, NULL, &res, &q[i],
											&err);
				acc[i] = res.best.test_acc;
				gnn_train_result_free(&res);
			}
			for (int i = 1; i < 3; i++)
				for (int e = 0; e < 8; e++)
					same &= fabsf(r[i]->val[e] - r[0]->val[e]) < 1.5f / (float) q[0].val_nodes &&
						fabsf(r[i]->vloss[e] - r[0]->vloss[e]) < 1e-4f && r[i]->loss[e] == r[0]->loss[e];
			CHECK(rs[0] == GNN_OK && rs[1] == GNN_OK && rs[2] == GNN_OK && r[0]->n == 8 && r[1]->n == 8 &&
				  r[2]->n == 8 && same && fabsf(acc[1] - acc[0]) < 1.5f / (float) ntest &&
				  fabsf(acc[2] - acc[0]) < 1.5f / (float) ntest && q[0].eval_rows_reused > q[1].eval_rows_reused &&
				  q[1].eval_rows_reused > q[2].eval_rows_reused && q[0].eval_rows_computed < q[2].eval_rows_computed,
				  "%s, evaluation's layer-0 rows reused within a pass (%lld / %lld / %lld reused, %lld / %lld / %lld "
				  "computed, keeping all / 40 / 1): the same validation curve and test accuracy %.4f / %.4f / %.4f",
				  kind ? "GAT" : "GraphSAGE", (long long) q[0].eval_rows_reused, (long long) q[1].eval_rows_reused,
				  (long long) q[2].eval_rows_reused, (long long) q[0].eval_rows_computed,
				  (long long) q[1].eval_rows_computed, (long long) q[2].eval_rows_computed, acc[0], acc[1], acc[2]);
			mbc.eval_reuse_rows = -1;
			rs[0] = gnn_train_minibatch(&cora.g, &rc, &mbc, NULL, NULL, NULL, NULL, NULL, NULL, &res, &q[0], &err);
			CHECK(rs[0] == GNN_OK && q[0].eval_rows_reused == 0 && q[0].eval_rows_computed == 0 &&
				  fabsf(res.best.test_acc - acc[0]) < 0.05f,
				  "%s, eval_reuse_rows -1: no row reused, per-batch streams (test accuracy %.4f, %.4f with reuse)",
				  kind ? "GAT" : "GraphSAGE", res.best.test_acc, acc[0]);
			gnn_train_result_free(&res);
			mbc.eval_reuse_rows = 0;
			for (int i = 0; i < 3; i++)
				free(r[i]);
		}
		/* stopped early (patience): the test batches come from a pipeline of their own */
		mbc.eval_nodes = 0;
		cfg.epochs = 60;
		cfg.patience = 2;
		st = gnn_train_minibatch(&cora.g, &cfg, &mbc, NULL, NULL, NULL, NULL, NULL, NULL, &res, NULL, &err);
		sum = 0;
		for (int i = 0; res.confusion && i < res.confusion_classes * res.confusion_classes; i++)
			sum += res.confusion[i];
		CHECK(st == GNN_OK && res.stopped_early && res.epochs_run < 60 && sum == ntest && res.best.test_acc > 0.6f,
			  "stopped early at epoch %d: the test split still measured once (%lld nodes, test acc %.4f)",
			  res.epochs_run, (long long) sum, res.best.test_acc);
		gnn_train_result_free(&res);
		cfg.epochs = 8;
		cfg.patience = 0;
		mbc.sampled_eval = false;
		gnn_train_minibatch(&cora.g, &cfg, &mbc, NULL, NULL, NULL, NULL, NULL, NULL, &res, NULL, &err);
		full_acc = res.best.test_acc;
		gnn_train_result_free(&res);
		CHECK(fabsf(sampled_acc - full_acc) < 0.05f,
			  "sampled test accuracy %.4f within 0.05 of the full-neighbourhood evaluation's %.4f", sampled_acc, full_acc);
		free(a);
		free(b);
	}

	/* identical curves with the same seed, also across thread counts */
	{
		rec		   *a = calloc(1, sizeof(rec)),
				   *b = calloc(1, sizeof(rec));

		sage_config(&cfg, &mbc);
		cfg.epochs = 5;
		cfg.threads = 1;
		mbc.sampler.nthreads = 1;
		gnn_train_minibatch(&cora.g, &cfg, &mbc, NULL, on_epoch, a, NULL, NULL, NULL, &res, NULL, &err);
		cfg.threads = 1;
		mbc.sampler.nthreads = 2;
		gnn_train_minibatch(&cora.g, &cfg, &mbc, NULL, on_epoch, b, NULL, NULL, NULL, &res, NULL, &err);
		CHECK(a->n == 5 && b->n == 5 && memcmp(a->loss, b->loss, sizeof(float) * 5) == 0,
			  "same seed => identical CPU training curve (sampler on 1 vs 2 threads)");
		/* the whole backend on 2 threads too (GEMM blocks are the shape's, not the team's) */
		memset(b, 0, sizeof(*b));
		cfg.threads = 2;
		gnn_train_minibatch(&cora.g, &cfg, &mbc, NULL, on_epoch, b, NULL, NULL, NULL, &res, NULL, &err);
		CHECK(b->n == 5 && memcmp(a->loss, b->loss, sizeof(float) * 5) == 0 &&
			  memcmp(a->val, b->val, sizeof(float) * 5) == 0,
			  "same seed => identical training curve on 1 and 2 backend threads");
		cfg.threads = 1;
		memset(b, 0, sizeof(*b));
		b->stop_at = 7;
		CHECK(gnn_train_minibatch(&cora.g, &cfg, &mbc, NULL, on_epoch, b, stop_cb, b, NULL, &res, NULL, &err) == GNN_ERR_CANCELLED &&
			  b->n == 2, "should_stop is polled between minibatches (3 per epoch: stopped in epoch 3)");
		mbc.sampler.nhops = 3;
		mbc.sampler.fanouts[2] = 5;
		CHECK(gnn_train_minibatch(&cora.g, &cfg, &mbc, NULL, NULL, NULL, NULL, NULL, NULL, &res, NULL, &err) == GNN_ERR_INVALID,
			  "fan-out count must match layers: %s", err.msg);
		free(a);
		free(b);
	}

	/*
	 * The pipeline: batches sampled and gathered ahead on a thread of their
	 * own train exactly as in line; a producer that fails stops the job
	 * with its error, and cancelling while it runs ahead stops it too.
	 */
	{
		rec		   *a = calloc(1, sizeof(rec)),
				   *b = calloc(1, sizeof(rec));
		gnn_status	st;
		int			depths[] = {1, 2, 5};

		sage_config(&cfg, &mbc);
		cfg.epochs = 4;
		cfg.seed = 7;
		mbc.prefetch = 0;
		st = gnn_train_minibatch(&cora.g, &cfg, &mbc, NULL, on_epoch, a, NULL, NULL, NULL, &res, &stats, &err);
		CHECK(st == GNN_OK && a->n == 4 && a->splits_ok && stats.wait_s == 0,
			  "in line: every epoch reports sampling, gathering, computing and evaluating seconds, no waiting %s",
			  st == GNN_OK ? "" : err.msg);
		for (int k = 0; k < 3; k++)
		{
			memset(b, 0, sizeof(*b));
			mbc.prefetch = depths[k];
			st = gnn_train_minibatch(&cora.g, &cfg, &mbc, NULL, on_epoch, b, NULL, NULL, NULL, &res, &stats, &err);
			CHECK(st == GNN_OK && b->n == 4 && memcmp(a->loss, b->loss, sizeof(float) * 4) == 0 &&
				  memcmp(a->val, b->val, sizeof(float) * 4) == 0 && b->splits_ok,
				  "prefetch %d: the same losses and validation accuracies bit for bit as in line, and the time split %s",
				  depths[k], st == GNN_OK ? "" : err.msg);
		}
		/*
		 * Sampled evaluation keeping layer-0 rows: the memory of the rows
		 * the passes will keep is touched by the computing thread while it
		 * waits for batches (here all of it before the first), which
		 * changes no result: in line (no waits, nothing touched ahead)
		 * against the pipeline, every figure bit for bit.
		 */
		{
			gnn_minibatch_stats q[2];
			float		test_acc[2];
			int64_t		nval = 0;

			for (int64_t v = 0; v < cora.g.num_nodes; v++)
				nval += cora.g.split[v] == GNN_SPLIT_VAL;
			mbc.sampled_eval = true;
			for (int k = 0; k < 2; k++)
			{
				memset(k ? b : a, 0, sizeof(*a));
				mbc.prefetch = k ? 2 : 0;
				mbc.idle_first = k == 1;
				st = gnn_train_minibatch(&cora.g, &cfg, &mbc, NULL, on_epoch, k ? b : a, NULL, NULL, NULL, &res, &q[k],
										 &err);
				test_acc[k] = st == GNN_OK ? res.best.test_acc : -1;
				if (st == GNN_OK)
					gnn_train_result_free(&res);
			}
			CHECK(st == GNN_OK && a->n == 4 && b->n == 4 && memcmp(a->loss, b->loss, sizeof(float) * 4) == 0 &&
				  memcmp(a->val, b->val, sizeof(float) * 4) == 0 && test_acc[0] == test_acc[1] && test_acc[0] > 0 &&
				  q[0].eval_rows_reused > 0 && q[0].eval_rows_ready == 0 && q[1].eval_rows_ready > 0 &&
				  q[1].eval_rows_reused == q[0].eval_rows_reused && q[0].eval_seeds_read == 0 &&
				  q[1].eval_seeds_read == nval,
				  "sampled evaluation keeping rows, %lld of them made ready and the graph's pages of %lld of %lld "
				  "validation seeds read ahead while waiting for batches: the same losses, validation curve and test "
				  "accuracy (%.4f / %.4f) bit for bit as in line (%lld rows reused)",
				  (long long) q[1].eval_rows_ready, (long long) q[1].eval_seeds_read, (long long) nval, test_acc[0],
				  test_acc[1], (long long) q[1].eval_rows_reused);
			mbc.sampled_eval = false;
			mbc.idle_first = false;
		}
		for (int k = 0; k < 2; k++)
		{
			mbc.prefetch = k == 0 ? 0 : 2;
			mbc.fail_batch = 8;	/* Cora's 140 training nodes: 3 batches an epoch; the 2nd of epoch 3 */
			memset(b, 0, sizeof(*b));
			st = gnn_train_minibatch(&cora.g, &cfg, &mbc, NULL, on_epoch, b, NULL, NULL, NULL, &res, &stats, &err);
			CHECK(st == GNN_ERR_BACKEND && strstr(err.msg, "injected failure producing batch 8") != NULL &&
				  stats.batches == 7 && b->n == 2,
				  "prefetch %d: a producer failing at batch 8 stops training there with its error (%lld batches computed): %s",
				  mbc.prefetch, (long long) stats.batches, err.msg);
			mbc.fail_batch = 0;
		}
		mbc.prefetch = 3;
		memset(b, 0, sizeof(*b));
		b->stop_at = 4;
		st = gnn_train_minibatch(&cora.g, &cfg, &mbc, NULL, on_epoch, b, stop_cb, b, NULL, &res, &stats, &err);
		CHECK(st == GNN_ERR_CANCELLED && stats.batches == 4 && b->n == 1,
			  "prefetch 3: cancelled after 4 batches while the producer runs ahead: stops cleanly (%lld batches)",
			  (long long) stats.batches);
		mbc.prefetch = 65;
		st = gnn_train_minibatch(&cora.g, &cfg, &mbc, NULL, NULL, NULL, NULL, NULL, NULL, &res, NULL, &err);
		CHECK(st == GNN_ERR_INVALID, "prefetch 65 is refused: %s", err.msg);
		free(a);
		free(b);
	}

	/* LADIES trains too */
	{
		sage_config(&cfg, &mbc);
		mbc.sampler.kind = GNN_SAMPLER_LADIES;
		mbc.sampler.fanouts[0] = 512;
		mbc.sampler.fanouts[1] = 512;
		cfg.seed = 1;
		gnn_status	st = gnn_train_minibatch(&cora.g, &cfg, &mbc, NULL, NULL, NULL, NULL, NULL, NULL, &res, NULL, &err);

		CHECK(st == GNN_OK && res.best.test_acc >= 0.70, "LADIES (512 nodes per layer) GraphSAGE on cora: test accuracy %.4f >= 0.70 %s",
			  res.best.test_acc, st == GNN_OK ? "" : err.msg);
	}

	/* link prediction: no labels used */
	{
		gnn_linkpred_config lc;
		gnn_linkpred_result lr;
		const char *names[] = {"gcn", "graphsage"};
		gnn_model_kind kinds[] = {GNN_MODEL_GCN, GNN_MODEL_SAGE};

		gnn_linkpred_config_default(&lc);
		for (int m = 0; m < 2; m++)
		{
			gnn_status	st;

			gnn_train_config_default(kinds[m], &cfg);
			cfg.epochs = 100;
			cfg.hidden = 64;
			cfg.dropout = 0.0f;
			cfg.weight_decay = 0.0f;
			cfg.seed = 1;
			st = gnn_train_linkpred(&cora.g, &cfg, &lc, NULL, NULL, NULL, NULL, NULL, NULL, &lr, &err);
			NOTE("  %s: val AUC %.4f, test AUC %.4f, Hits@%d %.4f, best epoch %d, %.2f s", names[m], lr.val_auc,
				 lr.test_auc, lc.hits_k, lr.test_hits, lr.best_epoch, lr.seconds);
			CHECK(st == GNN_OK && lr.test_auc >= 0.85, "link prediction (%s) on cora: test AUC %.4f >= 0.85 on %lld held-out edges %s",
				  names[m], lr.test_auc, (long long) lr.test_edges, st == GNN_OK ? "" : err.msg);
		}
	}

	gnn_dataset_free(&cora);
	return check_done();
}
