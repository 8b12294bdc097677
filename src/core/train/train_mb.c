/*
 * train_mb.c: minibatch training over sampled blocks (link prediction is in
 * train_linkpred.c).
 */
#include "train/train_mb.h"
#include "train/eval.h"
#include "sample/gpu_batch.h"
#include "infer/infer.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
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

/* the seeds' time bounds (gnn_temporal_bound: as_of, else each seed's time, else none) */
static void
seed_bounds(const gnn_graph *g, const gnn_minibatch_config *mbc, const int32_t *seeds, int64_t n, int64_t *out)
{
	for (int64_t i = 0; i < n; i++)
		out[i] = gnn_temporal_bound(g, seeds[i], mbc->has_as_of, mbc->as_of);
}

/*
 * Evaluation on sampled neighbourhoods (temporal sampling, typed graphs).  The
 * full-neighbourhood pass would show every node its whole neighbourhood, the
 * future included, so each labelled node of a split is evaluated on a
 * neighbourhood sampled under its own time (when sampling is temporal), with
 * the training fan-outs and a fixed seed: the same batches every epoch, so
 * epochs compare.  Under temporal sampling the sampler draws from per-node
 * streams (sample.h) under gnn_infer_temporal_seed, as time-aware inference
 * does (infer.h): each node is measured on the neighbourhood the model will
 * predict it from, so predictions score what the job recorded.  Typed
 * graphs without time keep the per-batch seeds they always had.  Fills the
 * metrics gnn_eval_splits fills: classification
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

	uint64_t	fixed = gnn_infer_temporal_seed(cfg->seed);

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
			if ((st = gnn_sampler_sample_at(sampler, nodes + b0, stimes, bs,
											mbc->sampler.temporal ? fixed : gnn_rng_next(&rng), &mb, err)) != GNN_OK ||
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

/* ------------------------------------------------------------------ the batch pipeline */

/*
 * Training batches come from a producer: it shuffles the training nodes at
 * the start of each epoch, samples each batch's blocks, keeps a copy of
 * them (the sampler's arrays are overwritten by its next call) and gathers
 * the batch's input features into host memory.  With mbc->prefetch > 0 the
 * producer runs on a thread of its own, up to prefetch batches ahead of the
 * one being computed (a ring of prefetch + 1 items: one being computed, the
 * rest filled ahead); with 0 it runs in line.  Both draw every shuffle,
 * sampling seed and dropout seed from one stream in batch order, so their
 * results are the same bit for bit.  The thread never calls back into the
 * caller: cancellation is checked by the computing (calling) thread, which
 * stops the producer; a producer's error reaches the caller with the batch
 * it failed on, in order.  The producer's thread blocks every signal, so
 * that a host process's handlers (PostgreSQL's) run on the calling thread.
 */
typedef struct mb_item
{
	gnn_minibatch_copy mb;
	int64_t		bs;				/* seeds: the first bs of mb's nodes */
	uint64_t	dropout_seed;
	float	   *feat;			/* dense: n_input x dim rows, host memory */
	size_t		feat_cap;		/* floats */
	int64_t    *sptr;			/* sparse: n_input rows, owned */
	int32_t    *sidx;
	float	   *sval;
	double		sample_s;
	double		gather_s;
	gnn_status	st;				/* not GNN_OK: the producer failed here */
	gnn_error	err;
	/* built on the GPU: blocks and features borrow the batcher's buffers */
	bool		gpu;
	gnn_dblock	gblk[GNN_MAX_LAYERS];
	gnn_dfeat	gx;
	int32_t    *seeds;			/* the batch's seeds (a copy: the producer reshuffles ahead) */
	int64_t		seeds_cap;
	gnn_gpu_batch_stats gst;	/* its edges, rows, cache hits */
} mb_item;

typedef struct mb_pipe
{
	const gnn_graph *g;
	const gnn_train_config *cfg;
	const gnn_minibatch_config *mbc;
	gnn_sampler *sampler;		/* the producer's own */
	gnn_gpu_batcher *gpu;		/* batches built on the GPU (not owned) */
	gnn_backend *be;			/* the computing thread's backend */
	gnn_backend *pbe;			/* GPU batches: the producer's (a twin with its own stream when
								 * threaded, else be) */
	int32_t    *train;			/* shuffled in place at every epoch's start */
	int64_t		ntrain;
	int64_t		nbatch;			/* per epoch */
	int64_t    *stimes;			/* temporal: the batch's seed times */
	gnn_rng		rng;			/* shuffles, sampling and dropout seeds */
	int64_t		total;			/* batches to produce in all */
	int64_t		made;			/* batches produced (the stream position) */

	int			nslots;
	mb_item    *slots;
	bool		threaded;
	pthread_t	thread;
	pthread_mutex_t mu;
	pthread_cond_t cv_ready;	/* an item was filled */
	pthread_cond_t cv_free;		/* an item was given back, or stop */
	int64_t		head;			/* items taken by the consumer */
	int64_t		tail;			/* items filled */
	bool		stop;
} mb_pipe;

static void
item_free(mb_item *it)
{
	gnn_minibatch_copy_free(&it->mb);
	free(it->feat);
	free(it->sptr);
	free(it->sidx);
	free(it->sval);
	free(it->seeds);
	memset(it, 0, sizeof(*it));
}

/* Produce the stream's next batch into it (a failure is kept in it). */
static void
produce(mb_pipe *P, mb_item *it)
{
	const gnn_graph *g = P->g;
	const gnn_minibatch_config *mbc = P->mbc;
	int64_t		b = P->made % P->nbatch,
				b0 = b * mbc->batch_size,
				bs = P->ntrain - b0 < mbc->batch_size ? P->ntrain - b0 : mbc->batch_size;
	uint64_t	sseed;
	gnn_minibatch mb;
	double		t = gnn_now_s();

	it->st = GNN_OK;
	it->sample_s = it->gather_s = 0;
	P->made++;
	if (b == 0)
		gnn_shuffle_i32(&P->rng, P->train, P->ntrain);
	sseed = gnn_rng_next(&P->rng);
	it->dropout_seed = gnn_rng_next(&P->rng);
	it->bs = bs;
	if (mbc->fail_batch > 0 && P->made == mbc->fail_batch)
	{
		it->st = gnn_error_set(&it->err, GNN_ERR_BACKEND, "injected failure producing batch %lld",
							   (long long) P->made);
		return;
	}
	if (P->gpu)
	{
		it->gpu = true;
		if (bs > it->seeds_cap)
		{
			int32_t    *p = realloc(it->seeds, sizeof(int32_t) * bs);

			if (!p)
			{
				it->st = gnn_error_set(&it->err, GNN_ERR_NOMEM, "out of memory");
				return;
			}
			it->seeds = p;
			it->seeds_cap = bs;
		}
		memcpy(it->seeds, P->train + b0, sizeof(int32_t) * bs);
		it->st = gnn_gpu_batcher_next(P->gpu, (int) (it - P->slots), P->pbe, it->seeds, bs, sseed, it->gblk,
									  &it->gx, &it->gst, &it->sample_s, &it->gather_s, &it->err);
		return;
	}
	if (mbc->sampler.temporal)
		seed_bounds(g, mbc, P->train + b0, bs, P->stimes);
	if ((it->st = gnn_sampler_sample_at(P->sampler, P->train + b0, mbc->sampler.temporal ? P->stimes : NULL,
										bs, sseed, &mb, &it->err)) != GNN_OK ||
		(it->st = gnn_minibatch_copy_from(&it->mb, &mb, &it->err)) != GNN_OK)
		return;
	it->sample_s = gnn_now_s() - t;
	t = gnn_now_s();
	if (g->feat_kind == GNN_FEAT_SPARSE)
	{
		free(it->sptr);
		free(it->sidx);
		free(it->sval);
		it->sptr = NULL;
		it->sidx = NULL;
		it->sval = NULL;
		it->st = gnn_gather_sparse(g, mb.input_nodes, mb.n_input, P->cfg->row_normalise, P->cfg->threads,
								   &it->sptr, &it->sidx, &it->sval, &it->err);
	}
	else if (g->feat_kind == GNN_FEAT_DENSE)
	{
		size_t		need = (size_t) mb.n_input * g->feat_dim + 1;

		if (need > it->feat_cap)
		{
			/* room for a larger batch than this one: batches vary */
			size_t		cap = need + need / 4;
			float	   *f = malloc(sizeof(float) * cap);

			if (!f)
			{
				it->st = gnn_error_set(&it->err, GNN_ERR_NOMEM, "out of memory gathering %lld feature rows",
									   (long long) mb.n_input);
				return;
			}
			free(it->feat);
			it->feat = f;
			it->feat_cap = cap;
		}
		it->st = gnn_gather_dense(g, mb.input_nodes, mb.n_input, P->cfg->row_normalise, P->cfg->threads,
								  it->feat, &it->err);
	}
	else
		it->st = gnn_error_set(&it->err, GNN_ERR_EMPTY, "the graph has no node features");
	it->gather_s = gnn_now_s() - t;
}

static void *
producer_main(void *arg)
{
	mb_pipe    *P = arg;

	pthread_mutex_lock(&P->mu);
	while (!P->stop && P->tail < P->total)
	{
		mb_item    *it;

		while (!P->stop && P->tail - P->head >= P->nslots)
			pthread_cond_wait(&P->cv_free, &P->mu);
		if (P->stop)
			break;
		it = &P->slots[P->tail % P->nslots];
		pthread_mutex_unlock(&P->mu);
		produce(P, it);
		pthread_mutex_lock(&P->mu);
		P->tail++;
		pthread_cond_signal(&P->cv_ready);
		if (it->st != GNN_OK)
			break;				/* the consumer reports it */
	}
	pthread_mutex_unlock(&P->mu);
	return NULL;
}

static gnn_status
pipe_start(mb_pipe *P, const gnn_graph *g, const gnn_train_config *cfg, const gnn_minibatch_config *mbc,
		   int32_t *train, int64_t ntrain, uint64_t stream, gnn_backend *be, gnn_gpu_batcher *gpu, gnn_error *err)
{
	gnn_status	st;
	int64_t		per = (ntrain + mbc->batch_size - 1) / mbc->batch_size;

	memset(P, 0, sizeof(*P));
	P->g = g;
	P->cfg = cfg;
	P->mbc = mbc;
	P->train = train;
	P->ntrain = ntrain;
	P->nbatch = mbc->max_batches > 0 && mbc->max_batches < per ? mbc->max_batches : per;
	P->total = P->nbatch * cfg->epochs;
	gnn_rng_seed(&P->rng, stream);
	P->gpu = gpu;
	P->be = P->pbe = be;
	P->nslots = mbc->prefetch > 0 ? mbc->prefetch + 1 : 1;
	if (gpu && P->nslots > gnn_gpu_batcher_slots(gpu))
		P->nslots = gnn_gpu_batcher_slots(gpu);
	P->slots = calloc(P->nslots, sizeof(mb_item));
	P->stimes = malloc(sizeof(int64_t) * (mbc->batch_size + 1));
	if (!P->slots || !P->stimes)
		return gnn_error_set(err, GNN_ERR_NOMEM, "out of memory");
	if (gpu && P->nslots > 1)
	{
		/* GPU batches ahead: the producer gets a stream of its own (a twin backend) */
		gnn_error	terr;

		if (gnn_backend_twin(be, cfg->threads, &P->pbe, &terr) != GNN_OK)
		{
			P->pbe = be;		/* none to be had: build them in line */
			P->nslots = 1;
		}
	}
	if (!gpu && (st = gnn_sampler_create(g, &mbc->sampler, &P->sampler, err)) != GNN_OK)
		return st;
	if (P->nslots > 1)
	{
		pthread_mutex_init(&P->mu, NULL);
		pthread_cond_init(&P->cv_ready, NULL);
		pthread_cond_init(&P->cv_free, NULL);
		P->threaded = gnn_thread_start(&P->thread, false, producer_main, P);
		if (!P->threaded)
		{
			/* no thread to be had: produce in line (same results) */
			pthread_mutex_destroy(&P->mu);
			pthread_cond_destroy(&P->cv_ready);
			pthread_cond_destroy(&P->cv_free);
			if (P->pbe != P->be)
				gnn_backend_destroy(P->pbe);
			P->pbe = P->be;
		}
	}
	return GNN_OK;
}

/*
 * The next batch, in stream order; *wait_s: how long it took to come.  The
 * item stays the caller's until pipe_done.
 */
static mb_item *
pipe_next(mb_pipe *P, double *wait_s)
{
	mb_item    *it;
	double		t = gnn_now_s();

	if (!P->threaded)
	{
		it = &P->slots[P->head % P->nslots];
		produce(P, it);
		*wait_s = 0;
		return it;
	}
	pthread_mutex_lock(&P->mu);
	while (P->tail <= P->head)
		pthread_cond_wait(&P->cv_ready, &P->mu);
	it = &P->slots[P->head % P->nslots];
	pthread_mutex_unlock(&P->mu);
	*wait_s = gnn_now_s() - t;
	return it;
}

static void
pipe_done(mb_pipe *P)
{
	if (!P->threaded)
	{
		P->head++;
		return;
	}
	pthread_mutex_lock(&P->mu);
	P->head++;
	pthread_cond_signal(&P->cv_free);
	pthread_mutex_unlock(&P->mu);
}

/* Stop the producer (it finishes the batch at hand) and free everything. */
static void
pipe_stop(mb_pipe *P)
{
	if (P->threaded)
	{
		pthread_mutex_lock(&P->mu);
		P->stop = true;
		pthread_cond_broadcast(&P->cv_free);
		pthread_mutex_unlock(&P->mu);
		pthread_join(P->thread, NULL);
		pthread_mutex_destroy(&P->mu);
		pthread_cond_destroy(&P->cv_ready);
		pthread_cond_destroy(&P->cv_free);
		P->threaded = false;
	}
	if (P->pbe && P->pbe != P->be)
		gnn_backend_destroy(P->pbe);
	for (int i = 0; P->slots && i < P->nslots; i++)
		item_free(&P->slots[i]);
	free(P->slots);
	free(P->stimes);
	gnn_sampler_free(P->sampler);
	memset(P, 0, sizeof(*P));
}

/*
 * Bytes a batch moves from host to a device backend: the seeds and labels
 * of a GPU-built batch (its feature misses are counted by the batcher), or
 * the features and the block CSRs (with their transposes) of a CPU-built
 * one.
 */
static int64_t
batch_bytes_moved(const gnn_graph *g, const mb_item *it, bool regress)
{
	int64_t		b = (int64_t) sizeof(int32_t) * it->bs * (regress ? 1 : 2);
	const gnn_minibatch *mb = &it->mb.mb;

	if (it->gpu)
		return b + it->gst.host_bytes;
	if (g->feat_kind == GNN_FEAT_SPARSE && it->sptr)
		b += (int64_t) sizeof(int64_t) * (mb->n_input + 1) + (int64_t) 8 * it->sptr[mb->n_input];
	else
		b += (int64_t) sizeof(float) * mb->n_input * g->feat_dim;
	for (int l = 0; l < mb->nhops; l++)
	{
		const gnn_block *k = &mb->blocks[l];

		/* raw and looped CSR, each with its transpose: offsets, indices, values, positions */
		b += 2 * ((int64_t) sizeof(int64_t) * (k->n_dst + k->n_src + 2) + (int64_t) 20 * k->nnz) +
			(int64_t) 20 * k->n_dst;
	}
	return b;
}

/*
 * The batch's input features on the backend: host rows as they are on the
 * CPU backend (borrowed from the item: not freed by the caller), uploaded
 * into *dev (kept between batches) elsewhere; sparse rows uploaded into a
 * feature the caller frees (*owned).
 */
static gnn_status
item_features(gnn_backend *be, const gnn_graph *g, const mb_item *it, gnn_buf *dev, gnn_dfeat *x,
			  bool *owned, gnn_error *err)
{
	int64_t		n = it->mb.mb.n_input;
	gnn_status	st;

	memset(x, 0, sizeof(*x));
	*owned = false;
	if (g->feat_kind == GNN_FEAT_SPARSE)
	{
		*owned = true;
		return gnn_dfeat_sparse(be, n, g->feat_dim, it->sptr, it->sidx, it->sval, x, err);
	}
	x->rows = n;
	x->dim = g->feat_dim;
	x->dense.rows = n;
	x->dense.cols = g->feat_dim;
	x->dense.be = NULL;			/* not owned */
	if (be->ops == gnn_backend_cpu())
	{
		x->dense.data = it->feat;
		return GNN_OK;
	}
	if ((st = gnn_buf_ensure(be, dev, sizeof(float) * ((size_t) n * g->feat_dim + 1), err)) != GNN_OK)
		return st;
	x->dense.data = dev->p;
	return gnn_backend_error(be, gnn_backend_copy_h2d(be, dev->p, it->feat, sizeof(float) * (size_t) n * g->feat_dim),
							 err);
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
	gnn_sampler_config esc;

	/*
	 * Typed graphs evaluate on sampled neighbourhoods of the splits' nodes
	 * too (as RelBench does): the full-graph pass over every node of every
	 * table holds a hidden-wide row per node and layer (11M nodes x 128
	 * floats x several buffers ran a 24 GB machine out of memory), and under
	 * temporal sampling it would show the future.
	 */
	bool		sampled_eval = temporal || g->num_edge_types > 1 || mbc->sampled_eval;
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
	mb_pipe		pipe;
	gnn_buf		dfeat = {0};	/* a batch's features on a device backend */
	gnn_gpu_batcher *gpu = NULL;	/* batches built on the GPU */
	bool		on_device;		/* a device backend: count what batches move */

	memset(&d, 0, sizeof(d));
	memset(&pipe, 0, sizeof(pipe));
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
	/* evaluation's sampler: time-aware inference's streams under temporal sampling (eval_temporal) */
	esc = mbc->sampler;
	esc.per_node_streams = temporal;
	esc.first_hop = 0;
	if ((st = gnn_model_create(be, &mc, &rng, &model, err)) != GNN_OK ||
		(sampled_eval && (st = gnn_sampler_create(g, &esc, &sampler, err)) != GNN_OK))
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
	if (mbc->prefetch < 0 || mbc->prefetch > 64)
	{
		st = gnn_error_set(err, GNN_ERR_INVALID, "prefetch must be in [0, 64] batches, got %d", mbc->prefetch);
		goto done;
	}
	on_device = be->ops != gnn_backend_cpu();
	if (strncmp(be->name, "cuda", 4) == 0 || (mbc->gpu && mbc->gpu->api))
	{
		/* the GPU builds the batches where it can; else say why not */
		const char *why = gnn_gpu_batch_unsupported(be, g, cfg, mbc);
		gnn_error	gerr;

		if (!why)
		{
			gnn_gpu_batch_config gdef;

			gnn_gpu_batch_config_default(&gdef);
			memset(&gerr, 0, sizeof(gerr));
			st = gnn_gpu_batcher_create(be, g, cfg, mbc, mbc->gpu ? mbc->gpu : &gdef, train, ntrain,
										sizeof(float) * gnn_model_weights_count(model),
										mbc->prefetch > 0 ? mbc->prefetch + 1 : 1, &gpu, &gerr);
			if (st == GNN_ERR_UNSUPPORTED)
				why = gerr.msg[0] ? gerr.msg : "the CUDA backend cannot build batches";
			else if (st != GNN_OK)
			{
				*err = gerr;
				goto done;
			}
			st = GNN_OK;
		}
		if (why)
			snprintf(stats->cpu_batches_why, sizeof(stats->cpu_batches_why), "%.190s", why);
		stats->gpu_batches = gpu != NULL;
	}
	on_device |= gpu != NULL;	/* (an emulated device in tests) */
	/* the batches' stream, drawn after the weights */
	if ((st = pipe_start(&pipe, g, cfg, mbc, train, ntrain, gnn_rng_next(&rng), be, gpu, err)) != GNN_OK)
		goto done;

	t_start = gnn_now_s();
	for (int32_t epoch = 1; epoch <= cfg->epochs; epoch++)
	{
		gnn_epoch_metrics em;
		double		t0 = gnn_now_s(),
					loss_sum = 0;
		int64_t		nb = 0,
					moved = 0,
					ep_rows = 0,
					ep_hits = 0;

		gnn_epoch_metrics_init(&em, epoch);
		em.sample_s = em.gather_s = em.compute_s = em.wait_s = 0;
		for (int64_t b0 = 0; b0 < ntrain; b0 += mbc->batch_size, nb++)
		{
			mb_item    *it;
			const gnn_minibatch *mb;
			const int32_t *seeds;
			gnn_dfeat	x;
			bool		x_owned = false;
			gnn_dblock	dblk[GNN_MAX_LAYERS];
			gnn_dblock *blocks[GNN_MAX_LAYERS];
			const float *logits;
			float		loss;
			double		t1,
						waited;
			int			made = 0;

			if (nb >= pipe.nbatch)
				break;			/* max_batches */
			if (should_stop && should_stop(stop_arg))
			{
				st = gnn_error_set(err, GNN_ERR_CANCELLED, "training cancelled at epoch %d", epoch);
				goto out;
			}
			it = pipe_next(&pipe, &waited);
			em.wait_s += waited;
			em.sample_s += it->sample_s;
			em.gather_s += it->gather_s;
			if (it->st != GNN_OK)
			{
				*err = it->err;
				st = it->st;
				goto out;
			}
			mb = &it->mb.mb;
			seeds = it->gpu ? it->seeds : mb->input_nodes;
			t1 = gnn_now_s();
			if (it->gpu)
				x = it->gx;		/* the batcher's: not owned */
			else
				st = item_features(be, g, it, &dfeat, &x, &x_owned, err);
			em.gather_s += gnn_now_s() - t1;
			t1 = gnn_now_s();
			for (int64_t i = 0; st == GNN_OK && !regress && i < it->bs; i++)
				hlab[i] = g->labels[seeds[i]];
			/* made: the blocks uploaded here, freed after the step (GPU-built ones are the batcher's) */
			for (int l = 0; st == GNN_OK && l < L; l++)
				if (it->gpu)
					blocks[l] = &it->gblk[l];
				else if ((st = batch_block(be, &mb->blocks[l], compensate, &wbuf, &wcap, &dblk[l], err)) == GNN_OK)
					blocks[made++] = &dblk[l];
			if (on_device)
				moved += batch_bytes_moved(g, it, regress);
			if (it->gpu)
			{
				ep_rows += it->gst.rows;
				ep_hits += it->gst.hits;
				stats->cache_rows = it->gst.cache_rows;
			}
			if (st == GNN_OK && !regress)
				st = gnn_backend_error(be, gnn_backend_copy_h2d(be, dlab.p, hlab, sizeof(int32_t) * it->bs), err);
			if (st == GNN_OK)
				st = gnn_model_forward(model, blocks, &x, true, it->dropout_seed, &logits, err);
			if (st == GNN_OK && regress)
			{
				double		bmse,
							bmae;
				int64_t		k;

				/* the seeds are the batch's first rows (input_nodes starts with them) */
				st = batch_regress(be, g, seeds, it->bs, logits, hf, hd, dlogits.p, &bmse, &bmae, &k, err);
				loss = (float) bmse;
			}
			else if (st == GNN_OK)
				st = gnn_backend_error(be, gnn_backend_xent(be, logits, it->bs, c, dlab.p, drows.p, it->bs, dlogits.p,
															&loss, NULL, NULL), err);
			if (st == GNN_OK)
				st = gnn_model_backward(model, dlogits.p, err);
			if (st == GNN_OK)
				st = gnn_optim_step(&opt, model, err);
			for (int l = 0; l < made; l++)
				gnn_dblock_free(&dblk[l]);
			if (x_owned)
				gnn_dfeat_free(&x);
			if (st == GNN_OK)
			{
				stats->sampled_edges += it->gpu ? it->gst.edges : mb->sampled_edges;
				stats->input_nodes += it->gpu ? it->gst.rows : mb->n_input;
			}
			/* a slot the producer refills on its own stream: this one must be done reading it */
			if (it->gpu && pipe.threaded && st == GNN_OK)
				st = gnn_backend_error(be, gnn_backend_sync(be), err);
			pipe_done(&pipe);
			if (st != GNN_OK)
				goto out;
			em.compute_s += gnn_now_s() - t1;
			stats->batches++;
			loss_sum += loss;
		}
		stats->sample_s += em.sample_s;
		stats->gather_s += em.gather_s;
		stats->compute_s += em.compute_s;
		stats->wait_s += em.wait_s;
		em.train_loss = nb ? (float) (loss_sum / nb) : 0;
		if (gpu)
		{
			em.cache_hit_rate = ep_rows > 0 ? (double) ep_hits / (double) ep_rows : NAN;
			stats->feature_rows += ep_rows;
			stats->cache_hits += ep_hits;
		}
		if (on_device)
		{
			em.h2d_bytes = moved;
			stats->h2d_bytes += moved;
		}

		/* evaluation with full neighbourhoods; skipped, the metrics are unknown */
		em.train_acc = em.val_loss = em.val_acc = em.test_loss = em.test_acc = NAN;
		em.val_auc = em.test_auc = em.val_mae = em.test_mae = em.val_rmse = em.test_rmse = NAN;
		if (!mbc->skip_eval && sampled_eval)
		{
			double		t1 = gnn_now_s();

			if ((st = eval_temporal(g, cfg, mbc, be, model, sampler, hlab, stimes, evnodes, &dlab, &drows,
									hf, hd, &em, err)) != GNN_OK)
				goto out;
			em.eval_s = gnn_now_s() - t1;
			stats->eval_s += em.eval_s;
		}
		else if (!mbc->skip_eval)
		{
			const float *logits;
			gnn_dblock *blocks[GNN_MAX_LAYERS];
			double		t1 = gnn_now_s();

			if (!eval_ready)
			{
				if ((st = gnn_eval_data_create_forward(be, g, cfg->row_normalise, cfg->task, &d, err)) != GNN_OK)
					goto out;
				eval_ready = true;
			}
			for (int l = 0; l < GNN_MAX_LAYERS; l++)
				blocks[l] = &d.blk;
			if ((st = gnn_model_forward(model, blocks, &d.x, false, 0, &logits, err)) != GNN_OK ||
				(st = gnn_eval_splits(be, &d, logits, g->num_nodes, c, &em, err)) != GNN_OK)
				goto out;
			em.eval_s = gnn_now_s() - t1;
			stats->eval_s += em.eval_s;
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
	pipe_stop(&pipe);
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
	pipe_stop(&pipe);
	gnn_gpu_batcher_free(gpu);
	gnn_buf_free(be, &dfeat);
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
