/*
 * train_mb.c: minibatch training over sampled blocks (link prediction is in
 * train_linkpred.c).
 */
#include "train_mb.h"
#include "eval.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* the full graph on the backend, for evaluation */
typedef gnn_eval_data eval_data;




/*
 * A block prepared for the model.  LADIES weights are the unbiased estimator
 * of the neighbour mean, a weighted SUM; GraphSAGE's mean aggregator divides
 * by the row's entry count, so rows are pre-multiplied by it.
 */
static gnn_status
batch_block(gnn_backend *be, const gnn_block *b, bool mean_compensate, float **wbuf, size_t *wcap,
			gnn_dblock *out, gnn_error *err)
{
	gnn_block	blk = *b;

	if (mean_compensate && b->weights)
	{
		if ((size_t) b->nnz + 1 > *wcap)
		{
			float	   *p = realloc(*wbuf, sizeof(float) * (b->nnz + 1));

			if (!p)
				return gnn_error_set(err, GNN_ERR_NOMEM, "out of memory");
			*wbuf = p;
			*wcap = b->nnz + 1;
		}
		for (int64_t i = 0; i < b->n_dst; i++)
		{
			float		deg = (float) (b->indptr[i + 1] - b->indptr[i]);

			for (int64_t e = b->indptr[i]; e < b->indptr[i + 1]; e++)
				(*wbuf)[e] = b->weights[e] * deg;
		}
		blk.weights = *wbuf;
	}
	return gnn_dblock_create(be, &blk, out, err);
}

/*
 * The nodes a split trains or is measured on: labelled (regression: with a
 * finite target; NAN is none), and on a typed graph of the target type
 * (labels are -1 and targets NAN elsewhere when the loader did its job; the
 * type test makes it so regardless).
 */
static inline bool
node_in_split(const gnn_graph *g, const gnn_train_config *cfg, int64_t v, int s)
{
	if (g->split[v] != s)
		return false;
	if (cfg->task == GNN_TASK_REGRESS ? !isfinite(g->targets[v]) : g->labels[v] < 0)
		return false;
	return g->num_node_types <= 1 || gnn_graph_type_of(g, v) == cfg->target_type;
}

/*
 * Regression on a batch: the model's first n output rows (preds, backend
 * memory, n x 1) are the predictions of seeds[0..n), measured against their
 * g->targets.  *mse / *mae are the batch means over the seeds with a target
 * (*k of them; NAN when none); with dpreds (backend memory, n floats) the
 * gradient of the batch's mean squared error goes there, as the
 * cross-entropy's does for classification.  hf (2n floats) and hd (2n
 * doubles) are host scratch.
 */
static gnn_status
batch_regress(gnn_backend *be, const gnn_graph *g, const int32_t *seeds, int64_t n, const float *preds,
			  float *hf, double *hd, float *dpreds, double *mse, double *mae, int64_t *k, gnn_error *err)
{
	gnn_status	st = gnn_backend_copy_d2h(be, hf, preds, sizeof(float) * n);

	if (st != GNN_OK)
		return gnn_backend_error(be, st, err);
	for (int64_t i = 0; i < n; i++)
	{
		hd[i] = hf[i];
		hd[n + i] = g->targets[seeds[i]];
	}
	*k = gnn_mse_host(hd, hd + n, n, dpreds ? hf + n : NULL, mse, mae);
	if (dpreds)
		st = gnn_backend_error(be, gnn_backend_copy_h2d(be, dpreds, hf + n, sizeof(float) * n), err);
	return st;
}

/*
 * A seed's time bound: the configured time for every seed (as_of), else its
 * seed time or its own time (gnn_graph_seed_time), or no bound when it has
 * none (a node without a time cannot see a future).
 */
static void
seed_bounds(const gnn_graph *g, const gnn_minibatch_config *mbc, const int32_t *seeds, int64_t n, int64_t *out)
{
	for (int64_t i = 0; i < n; i++)
	{
		int64_t		t = mbc->has_as_of ? mbc->as_of : gnn_graph_seed_time(g, seeds[i]);

		out[i] = t == GNN_TIME_NONE ? INT64_MAX : t;
	}
}

/*
 * Evaluation on sampled neighbourhoods (temporal sampling, typed graphs).  The
 * full-neighbourhood pass would show every node its whole neighbourhood, the
 * future included, so each labelled node of a split is evaluated on a
 * neighbourhood sampled under its own time (when sampling is temporal), with
 * the training fan-outs and a fixed seed: the same batches every epoch, so
 * epochs compare.  Fills the metrics gnn_eval_splits fills: classification
 * loss and accuracy (AUROC is the full pass's only), regression MSE as loss,
 * MAE and RMSE, -MAE as accuracy.  hf / hd: batch_regress's scratch.
 */
static gnn_status
eval_temporal(const gnn_graph *g, const gnn_train_config *cfg, const gnn_minibatch_config *mbc,
			  gnn_backend *be, gnn_model *model, gnn_sampler *sampler, int32_t *hlab, int64_t *stimes,
			  int32_t *nodes, const gnn_buf *dlab, const gnn_buf *drows, float *hf, double *hd,
			  gnn_epoch_metrics *em, gnn_error *err)
{
	bool		regress = cfg->task == GNN_TASK_REGRESS;
	int32_t		c = g->num_classes;
	int			L = cfg->layers;
	gnn_rng		rng;
	gnn_status	st = GNN_OK;

	gnn_rng_seed(&rng, cfg->seed ^ 0x6576616c5f74696dULL);
	for (int s = GNN_SPLIT_TRAIN; s <= GNN_SPLIT_TEST; s++)
	{
		int64_t		n = 0,
					correct = 0,
					counted = 0;
		double		loss_sum = 0,
					ae_sum = 0;
		float		loss = NAN,
					acc = NAN,
					mae = NAN;

		for (int64_t v = 0; v < g->num_nodes; v++)
			if (node_in_split(g, cfg, v, s))
				nodes[n++] = (int32_t) v;
		for (int64_t b0 = 0; b0 < n; b0 += mbc->batch_size)
		{
			int64_t		bs = n - b0 < mbc->batch_size ? n - b0 : mbc->batch_size;
			gnn_minibatch mb;
			gnn_dfeat	x;
			gnn_dblock	dblk[GNN_MAX_LAYERS];
			gnn_dblock *blocks[GNN_MAX_LAYERS];
			const float *logits;
			float		bl = 0;
			int64_t		bc = 0,
						bn = 0;
			int			made;

			seed_bounds(g, mbc, nodes + b0, bs, stimes);
			if ((st = gnn_sampler_sample_at(sampler, nodes + b0, stimes, bs, gnn_rng_next(&rng), &mb, err)) != GNN_OK ||
				(st = gnn_dfeat_gather(be, g, mb.input_nodes, mb.n_input, cfg->row_normalise, cfg->threads,
									   &x, err)) != GNN_OK)
				return st;
			for (int64_t i = 0; !regress && i < bs; i++)
				hlab[i] = g->labels[mb.input_nodes[i]];
			for (made = 0; made < L; made++)
			{
				if ((st = gnn_dblock_create(be, &mb.blocks[made], &dblk[made], err)) != GNN_OK)
					break;
				blocks[made] = &dblk[made];
			}
			if (st == GNN_OK && !regress)
				st = gnn_backend_error(be, gnn_backend_copy_h2d(be, dlab->p, hlab, sizeof(int32_t) * bs), err);
			if (st == GNN_OK)
				st = gnn_model_forward(model, blocks, &x, false, 0, &logits, err);
			if (st == GNN_OK && regress)
			{
				double		bmse,
							bmae;

				st = batch_regress(be, g, mb.input_nodes, bs, logits, hf, hd, NULL, &bmse, &bmae, &bn, err);
				/* sums of errors in double, so that the split's means weigh
				 * every node once (bl stays 0: nothing more to add below) */
				if (st == GNN_OK && bn > 0)
				{
					loss_sum += bmse * bn;
					ae_sum += bmae * bn;
				}
			}
			else if (st == GNN_OK)
				st = gnn_backend_error(be, gnn_backend_xent(be, logits, bs, c, dlab->p, drows->p, bs, NULL,
															&bl, &bc, &bn), err);
			for (int l = 0; l < made; l++)
				gnn_dblock_free(&dblk[l]);
			gnn_dfeat_free(&x);
			if (st != GNN_OK)
				return st;
			loss_sum += (double) bl * bn;
			correct += bc;
			counted += bn;
		}
		if (counted > 0)
		{
			loss = (float) (loss_sum / counted);
			acc = (float) ((double) correct / counted);
			if (regress)
			{
				mae = (float) (ae_sum / counted);
				acc = -mae;
			}
		}
		if (s == GNN_SPLIT_TRAIN)
			em->train_acc = acc;
		else if (s == GNN_SPLIT_VAL)
		{
			em->val_loss = loss;
			em->val_acc = acc;
			if (regress)
			{
				em->val_mae = mae;
				em->val_rmse = sqrtf(loss);
			}
		}
		else
		{
			em->test_loss = loss;
			em->test_acc = acc;
			if (regress)
			{
				em->test_mae = mae;
				em->test_rmse = sqrtf(loss);
			}
		}
	}
	return st;
}

gnn_status
gnn_train_minibatch(const gnn_graph *g, const gnn_train_config *cfg, const gnn_minibatch_config *mbc,
					gnn_backend *be_in, gnn_progress_fn progress, void *progress_arg,
					gnn_should_stop_fn should_stop, void *stop_arg, gnn_model **model_out,
					gnn_train_result *res, gnn_minibatch_stats *stats, gnn_error *err)
{
	gnn_backend *be = be_in;
	gnn_model  *model = NULL;
	gnn_model_config mc;
	gnn_optim	opt;
	gnn_rng		rng;
	gnn_sampler *sampler = NULL;
	eval_data	d;
	gnn_status	st;
	gnn_minibatch_stats stl;
	float	   *best_w = NULL,
			   *wbuf = NULL;
	size_t		wcap = 0;
	int32_t    *train = NULL,
			   *hlab = NULL,
			   *hrows = NULL,
			   *evnodes = NULL;
	int64_t    *stimes = NULL;
	float	   *hf = NULL;		/* regression: batch_regress's scratch */
	double	   *hd = NULL;
	bool		temporal = mbc->sampler.temporal;
	bool		regress = cfg->task == GNN_TASK_REGRESS;

	/*
	 * Typed graphs evaluate on sampled neighbourhoods of the splits' nodes
	 * too (as RelBench does): the full-graph pass over every node of every
	 * table holds a hidden-wide row per node and layer (11M nodes x 128
	 * floats x several buffers ran a 24 GB machine out of memory), and under
	 * temporal sampling it would show the future.
	 */
	bool		sampled_eval = temporal || g->num_edge_types > 1;
	gnn_buf		dlab = {0},
				drows = {0},
				dlogits = {0};
	int64_t		ntrain = 0;
	int32_t		c;
	int			L = cfg->layers;
	gnn_selector sel;
	bool		eval_ready = false;
	bool		compensate;
	double		t_start;

	memset(&d, 0, sizeof(d));
	memset(res, 0, sizeof(*res));
	gnn_selector_init(&sel, cfg->select);
	memset(&stl, 0, sizeof(stl));
	if (!stats)
		stats = &stl;
	memset(stats, 0, sizeof(*stats));
	if (model_out)
		*model_out = NULL;
	if ((st = gnn_train_config_check(cfg, err)) != GNN_OK ||
		(st = gnn_sampler_config_check(&mbc->sampler, err)) != GNN_OK)
		return st;
	if (mbc->sampler.nhops != L)
		return gnn_error_set(err, GNN_ERR_INVALID, "%d fan-outs given for a model with %d layers (give one per layer)",
							 mbc->sampler.nhops, L);
	if (mbc->batch_size < 1)
		return gnn_error_set(err, GNN_ERR_INVALID, "batch size must be >= 1, got %d", mbc->batch_size);
	if ((st = gnn_train_graph_check_task(g, cfg->task, err)) != GNN_OK)
		return st;
	if (g->num_node_types > 1 && (cfg->target_type < 0 || cfg->target_type >= g->num_node_types))
		return gnn_error_set(err, GNN_ERR_INVALID, "target node type %d out of range [0, %d)",
							 cfg->target_type, g->num_node_types);
	if (temporal && !g->time)
		return gnn_error_set(err, GNN_ERR_INVALID, "temporal sampling needs node times; the graph has none");
	if (model_out && !be_in)
		return gnn_error_set(err, GNN_ERR_INVALID, "asking for the model needs a caller-owned backend");
	if ((st = gnn_train_model_config_for(cfg, g, &mc, err)) != GNN_OK)
		return st;
	c = mc.out_dim;				/* 1 for regression */
	if (!be && (st = gnn_backend_create(cfg->backend, cfg->threads, cfg->cuda_so, &be, err)) != GNN_OK)
		return st;
	compensate = mbc->sampler.kind == GNN_SAMPLER_LADIES && cfg->model == GNN_MODEL_SAGE;

	gnn_rng_seed(&rng, cfg->seed);
	if ((st = gnn_model_create(be, &mc, &rng, &model, err)) != GNN_OK ||
		(st = gnn_sampler_create(g, &mbc->sampler, &sampler, err)) != GNN_OK)
		goto done;
	train = malloc(sizeof(int32_t) * (g->n_train + 1));
	hlab = malloc(sizeof(int32_t) * (mbc->batch_size + 1));
	hrows = malloc(sizeof(int32_t) * (mbc->batch_size + 1));
	best_w = malloc(sizeof(float) * (gnn_model_weights_count(model) + 1));
	if (temporal || sampled_eval)
	{
		stimes = malloc(sizeof(int64_t) * (mbc->batch_size + 1));
		evnodes = malloc(sizeof(int32_t) * (g->num_nodes + 1));
	}
	if (regress)
	{
		hf = malloc(sizeof(float) * 2 * mbc->batch_size);
		hd = malloc(sizeof(double) * 2 * mbc->batch_size);
	}
	if (!train || !hlab || !hrows || !best_w || (sampled_eval && (!stimes || !evnodes)) ||
		(regress && (!hf || !hd)))
	{
		st = gnn_error_set(err, GNN_ERR_NOMEM, "out of memory");
		goto done;
	}
	for (int64_t v = 0; v < g->num_nodes; v++)
		if (node_in_split(g, cfg, v, GNN_SPLIT_TRAIN))
			train[ntrain++] = (int32_t) v;
	if (ntrain == 0)
	{
		st = gnn_error_set(err, GNN_ERR_EMPTY, "no %s training node of the target type %d",
						   regress ? "targeted" : "labelled", cfg->target_type);
		goto done;
	}
	for (int i = 0; i < mbc->batch_size; i++)
		hrows[i] = i;
	if ((st = gnn_buf_ensure(be, &dlab, sizeof(int32_t) * mbc->batch_size, err)) != GNN_OK ||
		(st = gnn_buf_ensure(be, &drows, sizeof(int32_t) * mbc->batch_size, err)) != GNN_OK ||
		(st = gnn_buf_ensure(be, &dlogits, sizeof(float) * mbc->batch_size * c, err)) != GNN_OK)
		goto done;
	if ((st = gnn_backend_error(be, gnn_backend_copy_h2d(be, drows.p, hrows, sizeof(int32_t) * mbc->batch_size), err)) != GNN_OK)
		goto done;
	gnn_optim_init(&opt, cfg->optimizer, cfg->lr, cfg->weight_decay);

	t_start = gnn_now_s();
	for (int32_t epoch = 1; epoch <= cfg->epochs; epoch++)
	{
		gnn_epoch_metrics em;
		double		t0 = gnn_now_s(),
					loss_sum = 0;
		int64_t		nb = 0;

		memset(&em, 0, sizeof(em));
		em.epoch = epoch;
		/* shuffle the training nodes */
		for (int64_t i = ntrain - 1; i > 0; i--)
		{
			int64_t		j = (int64_t) gnn_rng_below(&rng, (uint64_t) i + 1);
			int32_t		t = train[i];

			train[i] = train[j];
			train[j] = t;
		}
		for (int64_t b0 = 0; b0 < ntrain; b0 += mbc->batch_size, nb++)
		{
			int64_t		bs = ntrain - b0 < mbc->batch_size ? ntrain - b0 : mbc->batch_size;
			gnn_minibatch mb;
			gnn_dfeat	x;
			gnn_dblock	dblk[GNN_MAX_LAYERS];
			gnn_dblock *blocks[GNN_MAX_LAYERS];
			const float *logits;
			float		loss;
			double		t1;
			int			made = 0;

			if (mbc->max_batches > 0 && nb >= mbc->max_batches)
				break;
			if (should_stop && should_stop(stop_arg))
			{
				st = gnn_error_set(err, GNN_ERR_CANCELLED, "training cancelled at epoch %d", epoch);
				goto out;
			}
			t1 = gnn_now_s();
			/* temporal: each training seed at its own time */
			if (temporal)
				seed_bounds(g, mbc, train + b0, bs, stimes);
			if ((st = gnn_sampler_sample_at(sampler, train + b0, temporal ? stimes : NULL, bs, gnn_rng_next(&rng),
											&mb, err)) != GNN_OK)
				goto out;
			stats->sample_s += gnn_now_s() - t1;
			t1 = gnn_now_s();
			if ((st = gnn_dfeat_gather(be, g, mb.input_nodes, mb.n_input, cfg->row_normalise, cfg->threads,
									   &x, err)) != GNN_OK)
				goto out;
			stats->gather_s += gnn_now_s() - t1;
			t1 = gnn_now_s();
			for (int64_t i = 0; !regress && i < bs; i++)
				hlab[i] = g->labels[mb.input_nodes[i]];
			for (made = 0; made < L; made++)
			{
				if ((st = batch_block(be, &mb.blocks[made], compensate, &wbuf, &wcap, &dblk[made], err)) != GNN_OK)
					break;
				blocks[made] = &dblk[made];
			}
			if (st == GNN_OK && !regress)
				st = gnn_backend_error(be, gnn_backend_copy_h2d(be, dlab.p, hlab, sizeof(int32_t) * bs), err);
			if (st == GNN_OK)
				st = gnn_model_forward(model, blocks, &x, true, gnn_rng_next(&rng), &logits, err);
			if (st == GNN_OK && regress)
			{
				double		bmse,
							bmae;
				int64_t		k;

				/* the seeds are the batch's first rows (input_nodes starts with them) */
				st = batch_regress(be, g, mb.input_nodes, bs, logits, hf, hd, dlogits.p, &bmse, &bmae, &k, err);
				loss = (float) bmse;
			}
			else if (st == GNN_OK)
				st = gnn_backend_error(be, gnn_backend_xent(be, logits, bs, c, dlab.p, drows.p, bs, dlogits.p,
															&loss, NULL, NULL), err);
			if (st == GNN_OK)
				st = gnn_model_backward(model, dlogits.p, err);
			if (st == GNN_OK)
				st = gnn_optim_step(&opt, model, err);
			for (int l = 0; l < made; l++)
				gnn_dblock_free(&dblk[l]);
			gnn_dfeat_free(&x);
			if (st != GNN_OK)
				goto out;
			stats->compute_s += gnn_now_s() - t1;
			stats->batches++;
			stats->sampled_edges += mb.sampled_edges;
			stats->input_nodes += mb.n_input;
			loss_sum += loss;
		}
		em.train_loss = nb ? (float) (loss_sum / nb) : 0;

		/* evaluation with full neighbourhoods; skipped, the metrics are unknown */
		em.train_acc = em.val_loss = em.val_acc = em.test_loss = em.test_acc = NAN;
		em.val_auc = em.test_auc = em.val_mae = em.test_mae = em.val_rmse = em.test_rmse = NAN;
		if (!mbc->skip_eval && sampled_eval)
		{
			double		t1 = gnn_now_s();

			if ((st = eval_temporal(g, cfg, mbc, be, model, sampler, hlab, stimes, evnodes, &dlab, &drows,
									hf, hd, &em, err)) != GNN_OK)
				goto out;
			stats->eval_s += gnn_now_s() - t1;
		}
		else if (!mbc->skip_eval)
		{
			const float *logits;
			gnn_dblock *blocks[GNN_MAX_LAYERS];
			double		t1 = gnn_now_s();

			if (!eval_ready)
			{
				if ((st = gnn_eval_data_create_task(be, g, cfg->row_normalise, cfg->task, &d, err)) != GNN_OK)
					goto out;
				eval_ready = true;
			}
			for (int l = 0; l < GNN_MAX_LAYERS; l++)
				blocks[l] = &d.blk;
			if ((st = gnn_model_forward(model, blocks, &d.x, false, 0, &logits, err)) != GNN_OK ||
				(st = gnn_eval_splits(be, &d, logits, g->num_nodes, c, &em, err)) != GNN_OK)
				goto out;
			stats->eval_s += gnn_now_s() - t1;
		}

		if (gnn_selector_step(&sel, &em))
		{
			if ((st = gnn_model_weights_get(model, best_w, err)) != GNN_OK)
				goto out;
			em.best = true;
			res->best = em;
			res->best_epoch = epoch;
		}
		em.seconds = gnn_now_s() - t0;
		if (em.best)
			res->best.seconds = em.seconds;
		res->epochs_run = epoch;
		if (progress)
			progress(progress_arg, &em);
		if (cfg->patience > 0 && sel.wait >= cfg->patience)
		{
			res->stopped_early = true;
			break;
		}
	}
out:
	res->seconds = gnn_now_s() - t_start;
	res->other_s = res->seconds;
	/* the kept weights matter only to a model that is handed back */
	if (st == GNN_OK && sel.have_best)
		st = gnn_model_weights_set(model, best_w, err);
	if (st == GNN_OK && model_out)
	{
		*model_out = model;
		model = NULL;
	}
done:
	free(best_w);
	free(wbuf);
	free(train);
	free(hlab);
	free(hrows);
	free(stimes);
	free(evnodes);
	free(hf);
	free(hd);
	gnn_buf_free(be, &dlab);
	gnn_buf_free(be, &drows);
	gnn_buf_free(be, &dlogits);
	gnn_eval_data_free(be, &d);
	gnn_sampler_free(sampler);
	gnn_model_free(model);
	if (!be_in)
		gnn_backend_destroy(be);
	return st;
}
