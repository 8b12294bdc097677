/*
 * train_mb.c: minibatch training over sampled blocks (link prediction is in
 * train_linkpred.c).
 */
#include "train/train_mb.h"
#include "train/eval.h"
#include "train/train_dist.h"
#include "train/sample_dist.h"
#include "sample/gpu_batch.h"
#include "infer/infer.h"
#include "base/heap.h"

#include <math.h>
#include <omp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdatomic.h>
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
batch_block(gnn_backend *be, const gnn_block *b, gnn_model_kind kind, bool mean_compensate, float **wbuf,
			size_t *wcap, gnn_dblock *out, gnn_error *err)
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
	return gnn_dblock_create_for(be, &blk, kind, out, err);
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

/* seeds per evaluation batch */
static int64_t
eval_batch_of(const gnn_minibatch_config *mbc)
{
	return mbc->eval_batch_size > 0 ? mbc->eval_batch_size : mbc->batch_size;
}

/* the most seeds a batch has, training or evaluation: the size of per-batch scratch */
static int64_t
batch_room(const gnn_minibatch_config *mbc)
{
	return eval_batch_of(mbc) > mbc->batch_size ? eval_batch_of(mbc) : mbc->batch_size;
}

/* the seeds' time bounds (gnn_temporal_bound: as_of, else each seed's time, else none) */
static void
seed_bounds(const gnn_graph *g, const gnn_minibatch_config *mbc, const int32_t *seeds, int64_t n, int64_t *out)
{
	for (int64_t i = 0; i < n; i++)
		out[i] = gnn_temporal_bound(g, seeds[i], mbc->has_as_of, mbc->as_of);
}

/*
 * Evaluation on sampled neighbourhoods (mbc->sampled_eval; typed graphs and
 * temporal sampling always).  Each measured node is evaluated on a
 * neighbourhood sampled with the training fan-outs under a fixed seed (the
 * same batches every epoch, so epochs compare); under temporal sampling on
 * its own time, from per-node streams under gnn_infer_temporal_seed, as
 * time-aware inference samples (infer.h): each node is measured on the
 * neighbourhood the model will predict it from.  The validation split is
 * measured after every epoch, its batches made by the pipeline (below) like
 * training's; the test split once, on the kept weights, in line.
 */

/*
 * How many nodes may draw v: its in-degree, for its out-degree (equal on an
 * undirected graph, and close on most).  The out-degree would read the
 * forward CSR, which nothing else in a job reads: on the R-MAT job that
 * was 2,000 fresh pages of the graph's mapping in the worker, in epoch 1's
 * validation.  The in-degree is read where v's last hop is sampled anyway.
 */
static inline int64_t
reuse_degree(const gnn_graph *g, int64_t v)
{
	return gnn_graph_in_degree(g, v);
}

/*
 * The degree (reuse_degree) from which a pass over n seeds keeps a node's
 * layer-0 row: the node is drawn again, in expectation, once or more.  A
 * node v is drawn by each w it points to that the pass reaches before the
 * last hop (a fraction phi of the nodes), with probability about f / (the
 * mean in-degree) for the fan-out f of that hop: kept when phi * degree *
 * min(1, f / mean) >= 1.  Most rows of a power-law graph's pass are of
 * nodes no later batch draws (on the R-MAT job's test pass, 58% of the
 * rows, 1.5% of the reuses); keeping them only wrote fresh memory.
 */
/* the neighbours a node draws at hop h of sc, over g's relations (a fan-out of -1 counted as all) */
static double
hop_draws(const gnn_graph *g, const gnn_sampler_config *sc, int h, double all)
{
	int32_t		R = g->num_edge_types > 1 ? g->num_edge_types : 1;
	double		f = 0;

	for (int32_t r = 0; r < R; r++)
	{
		int32_t		k = sc->type_fanouts ? sc->type_fanouts[(int64_t) h * R + r] : sc->fanouts[h];

		f += k < 0 ? all : k;
	}
	return f;
}

/* the nodes of the first L-1 hops of n seeds, at most: a reusing batch's U (its layer 1's input rows) */
static double
reuse_reach(const gnn_graph *g, const gnn_sampler_config *sc, double n)
{
	for (int h = 0; h < sc->nhops - 1; h++)
		n *= 1 + hop_draws(g, sc, h, (double) g->num_nodes);
	return n;
}

/* phi * min(1, f / mean) of a pass over n seeds: the draws, in expectation, of a node per unit of its degree */
static double
reuse_draw_rate(const gnn_graph *g, const gnn_sampler_config *esc, int64_t n)
{
	int			L = esc->nhops;
	double		phi = (double) n,
				f = 0,
				mean = g->num_nodes > 0 ? (double) g->num_edges / (double) g->num_nodes : 0,
				p;

	for (int h = 0; h < L - 1; h++)
	{
		double		fh = hop_draws(g, esc, h, mean);

		if (h < L - 2)
			phi *= 1 + fh;
		else
			f = fh;
	}
	phi = g->num_nodes > 0 ? phi / (double) g->num_nodes : 1;
	if (phi > 1)
		phi = 1;
	p = mean > 0 && f < mean ? f / mean : 1;
	return phi * p;
}

static int64_t
reuse_keep_degree(const gnn_graph *g, const gnn_sampler_config *esc, int64_t n)
{
	double		r = reuse_draw_rate(g, esc, n),
				d = r > 0 ? ceil(1.0 / r) : (double) INT64_MAX;

	return d > 1e15 ? INT64_MAX : (int64_t) d;
}

int64_t
gnn_eval_reuse_rows(const gnn_graph *g, const gnn_train_config *cfg, const gnn_minibatch_config *mbc, bool on_cpu,
					int32_t d0, int64_t nval, int64_t ntest, bool count)
{
	const gnn_sampler_config *sc = &mbc->sampler;
	int64_t		split_nodes = nval > ntest ? nval : ntest,
				kd,
				keepable = 0;
	double		reach,
				budget;

	if (mbc->eval_reuse_rows < 0 || !on_cpu || d0 < 1 || split_nodes < 1 || sc->nhops < 2 ||
		sc->kind != GNN_SAMPLER_NEIGHBOR || sc->temporal || sc->per_node_streams ||
		(cfg->dist && !mbc->feature_slices) || cfg->model == GNN_MODEL_GCN || cfg->model == GNN_MODEL_NODE2VEC)
		return 0;
	reach = reuse_reach(g, sc, (double) split_nodes);
	/* no more than the nodes a pass keeps (reuse_keep_degree: the lower of the two passes') */
	kd = reuse_keep_degree(g, sc, nval);
	if (ntest > 0)
	{
		int64_t		kt = reuse_keep_degree(g, sc, ntest);

		if (nval < 1 || kt < kd)
			kd = kt;
	}
	for (int64_t v = 0; count && v < g->num_nodes; v++)
		keepable += reuse_degree(g, v) >= kd;
	if (count && reach > (double) keepable)
		reach = (double) keepable;
	budget = mbc->eval_reuse_rows > 0 ? (double) mbc->eval_reuse_rows
		: (double) GNN_EVAL_REUSE_BYTES / (sizeof(float) * (double) d0);
	return (int64_t) (reach < budget ? reach : budget);
}

/* evaluation batch e's sampling seed: fixed for the job, whichever split or epoch */
static uint64_t
eval_batch_seed(const gnn_train_config *cfg, const gnn_minibatch_config *mbc, int64_t e)
{
	gnn_rng		r;

	if (mbc->sampler.temporal)
		return gnn_infer_temporal_seed(cfg->seed);
	gnn_rng_seed(&r, (cfg->seed ^ 0x6576616c5f74696dULL) + 0x9e3779b97f4a7c15ULL * (uint64_t) (e + 1));
	return gnn_rng_next(&r);
}

/*
 * A split's measurement, summed over its batches: classification loss and
 * correct rows (with the two-class scores for AUROC, and the confusion of
 * the test split), regression squared and absolute errors.
 */
typedef struct eval_acc
{
	double		loss_sum;
	double		ae_sum;
	int64_t		correct;
	int64_t		counted;
	double	   *score;			/* two classes: l1 - l0 per measured row */
	int32_t    *slab;			/* ... and its label */
	int64_t		nscore;
	int64_t    *confusion;		/* C x C, or NULL */
} eval_acc;

/* What one evaluation needs besides the model: host and backend scratch of a batch. */
typedef struct eval_ctx
{
	const gnn_graph *g;
	const gnn_train_config *cfg;
	gnn_backend *be;
	gnn_model  *model;
	int32_t		c;
	int32_t    *hlab;			/* batch_size */
	float	   *hlog;			/* batch_size x c */
	float	   *hf;				/* regression: batch_regress's scratch */
	double	   *hd;
	const gnn_buf *dlab;
	const gnn_buf *drows;
	gnn_dist   *p3;				/* feature slices: rows normalised by their whole sums (item_features) */
} eval_ctx;

static void
eval_acc_reset(eval_acc *a, int32_t c)
{
	a->loss_sum = a->ae_sum = 0;
	a->correct = a->counted = a->nscore = 0;
	if (a->confusion)
		memset(a->confusion, 0, sizeof(int64_t) * (size_t) c * c);
}

/*
 * One batch of a split: the forward pass over its blocks, added to a.
 * x NULL: the pass from layer 1 on, on layer 0's rows hin (eval_from_pipe's
 * reused rows; blocks[1..L-1]).
 */
static gnn_status
eval_batch(const eval_ctx *E, gnn_dblock **blocks, gnn_dfeat *x, const float *hin, const int32_t *seeds, int64_t bs,
		   eval_acc *a, gnn_error *err)
{
	bool		regress = E->cfg->task == GNN_TASK_REGRESS;
	const float *logits;
	gnn_status	st;

	for (int64_t i = 0; !regress && i < bs; i++)
		E->hlab[i] = E->g->labels[seeds[i]];
	if (!regress &&
		(st = gnn_backend_error(E->be, gnn_backend_copy_h2d(E->be, E->dlab->p, E->hlab, sizeof(int32_t) * bs),
								err)) != GNN_OK)
		return st;
	if ((st = x ? gnn_model_forward(E->model, blocks, x, false, 0, &logits, err)
		 : gnn_model_forward_from(E->model, blocks, 1, hin, &logits, err)) != GNN_OK)
		return st;
	if (regress)
	{
		double		bmse,
					bmae;
		int64_t		bn;

		/* sums of errors in double, so that the split's means weigh every node once */
		if ((st = batch_regress(E->be, E->g, seeds, bs, logits, E->hf, E->hd, NULL, &bmse, &bmae, &bn, err)) != GNN_OK)
			return st;
		if (bn > 0)
		{
			a->loss_sum += bmse * bn;
			a->ae_sum += bmae * bn;
			a->counted += bn;
		}
		return GNN_OK;
	}
	{
		float		bl = 0;
		int64_t		bc = 0,
					bn = 0;

		if ((st = gnn_backend_error(E->be, gnn_backend_xent(E->be, logits, bs, E->c, E->dlab->p, E->drows->p, bs,
															NULL, &bl, &bc, &bn), err)) != GNN_OK)
			return st;
		a->loss_sum += (double) bl * bn;
		a->correct += bc;
		a->counted += bn;
	}
	if ((E->c == 2 && a->score) || a->confusion)
	{
		if ((st = gnn_backend_copy_d2h(E->be, E->hlog, logits, sizeof(float) * bs * E->c)) != GNN_OK)
			return gnn_backend_error(E->be, st, err);
		if (a->confusion)
			gnn_confusion_rows(E->hlog, E->c, E->hlab, bs, a->confusion);
		for (int64_t i = 0; E->c == 2 && a->score && i < bs; i++)
		{
			a->score[a->nscore] = (double) E->hlog[2 * i + 1] - (double) E->hlog[2 * i];
			a->slab[a->nscore++] = E->hlab[i];
		}
	}
	return GNN_OK;
}

/* a's split measurement: val (test false) or test fields of em */
static void
eval_acc_metrics(const eval_acc *a, bool regress, bool test, gnn_epoch_metrics *em)
{
	float		loss = NAN,
				acc = NAN,
				mae = NAN,
				auc = NAN;

	if (a->counted > 0)
	{
		loss = (float) (a->loss_sum / a->counted);
		acc = (float) ((double) a->correct / a->counted);
		if (regress)
		{
			mae = (float) (a->ae_sum / a->counted);
			acc = -mae;
		}
		else if (a->score && a->nscore > 0)
			auc = (float) gnn_auroc(a->score, a->slab, a->nscore);
	}
	if (!test)
	{
		em->val_loss = loss;
		em->val_acc = acc;
		em->val_auc = auc;
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
		em->test_auc = auc;
		if (regress)
		{
			em->test_mae = mae;
			em->test_rmse = sqrtf(loss);
		}
	}
}

/*
 * Over several ranks: a's sums := their sums over the ranks (each rank
 * measured its own nodes), the confusion too; extra[0 .. nextra) summed in
 * the same allreduce.  Two-class scores stay each rank's: no AUROC.
 */
static gnn_status
eval_acc_combine(gnn_dist *d, eval_acc *a, int32_t c, double *extra, int nextra, gnn_error *err)
{
	double		v[4 + 8];
	gnn_status	st;

	v[0] = a->loss_sum;
	v[1] = a->ae_sum;
	v[2] = (double) a->correct;
	v[3] = (double) a->counted;
	for (int i = 0; i < nextra; i++)
		v[4 + i] = extra[i];
	if ((st = gnn_dist_allreduce(d, v, 4 + nextra, GNN_DIST_F64, err)) != GNN_OK)
		return st;
	a->loss_sum = v[0];
	a->ae_sum = v[1];
	a->correct = (int64_t) llround(v[2]);
	a->counted = (int64_t) llround(v[3]);
	a->nscore = 0;
	for (int i = 0; i < nextra; i++)
		extra[i] = v[4 + i];
	if (a->confusion)
		st = gnn_dist_allreduce(d, a->confusion, (size_t) c * c, GNN_DIST_I64, err);
	return st;
}

/*
 * The training nodes, and the validation and test nodes where val and test
 * are given (node order), in one pass over the nodes: each pass reads every
 * node's split and label (4 ms a million nodes on the 2-core VM; a job made
 * three).  Without a branch on the split: a node goes to its split's list,
 * or to a slot no count advances (out[0]: no split, a split not asked for,
 * no label, another type).  The splits of a hashed or random split
 * are a coin toss per node, and the branch on them cost the pass 4-8 ms a
 * million nodes, against 2-3 ms now (R-MAT job, 2-core VM).
 */
static void
split_nodes(const gnn_graph *g, const gnn_train_config *cfg, int32_t *train, int64_t *ntrain, int32_t *val,
			int64_t *nval, int32_t *test, int64_t *ntest)
{
	int32_t		none;
	int32_t    *out[4] = {&none, train, val ? val : &none, test ? test : &none};
	int64_t		n[4] = {0, 0, 0, 0},
				step[4] = {0, 1, val ? 1 : 0, test ? 1 : 0};

	_Static_assert(GNN_SPLIT_NONE == 0 && GNN_SPLIT_TRAIN == 1 && GNN_SPLIT_VAL == 2 && GNN_SPLIT_TEST == 3,
				   "split_nodes' lists are in split order");
	for (int64_t v = 0; v < g->num_nodes; v++)
	{
		int			s = g->split[v];
		bool		in = s < 4 && node_in_split(g, cfg, v, s);
		int			k = in ? s : 0;

		out[k][n[k]] = (int32_t) v;
		n[k] += step[k];
	}
	*ntrain = n[GNN_SPLIT_TRAIN];
	if (nval)
		*nval = n[GNN_SPLIT_VAL];
	if (ntest)
		*ntest = n[GNN_SPLIT_TEST];
}

/*
 * With keep > 0 and more than keep nodes in out[0..n), a seeded sample of
 * keep of them (fixed for the job), back in node order; the count kept.
 */
static int64_t
eval_nodes_sample(const gnn_train_config *cfg, int64_t keep, int32_t *out, int64_t n)
{
	if (keep > 0 && n > keep)
	{
		gnn_rng		r;

		gnn_rng_seed(&r, cfg->seed ^ 0x65766e6f6465735fULL);
		/* a partial Fisher-Yates: the first keep places get a uniform sample */
		for (int64_t i = 0; i < keep; i++)
		{
			int64_t		j = i + (int64_t) gnn_rng_below(&r, (uint64_t) (n - i));
			int32_t		t = out[i];

			out[i] = out[j];
			out[j] = t;
		}
		n = keep;
		gnn_sort_i32(out, n);	/* back in node order */
	}
	return n;
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
	int64_t		gathered;		/* dense rows the producer gathered (eval_gather_share): the
								 * computing thread gathers the rest; -1: all */
	gnn_status	st;				/* not GNN_OK: the producer failed here */
	gnn_error	err;
	/* built on the GPU: blocks and features borrow the batcher's buffers */
	bool		gpu;
	gnn_dblock	gblk[GNN_MAX_LAYERS];
	gnn_dfeat	gx;
	int32_t    *seeds;			/* the batch's seeds (a copy: the producer reshuffles ahead) */
	int64_t		seeds_cap;
	gnn_gpu_batch_stats gst;	/* its edges, rows, cache hits */
	/*
	 * An evaluation batch that reuses layer-0 rows (produce_reuse): mb holds
	 * the seeds' first L-1 hops, whose inputs U are layer 1's; uslot[i] is
	 * U[i]'s kept row (>= 0) or -1 - k for the k-th of the nnew nodes whose
	 * layer 0 this batch computes, on low (their last hop; its inputs are
	 * the ones gathered); nslot[k] the row it is kept in (-1: none).
	 */
	bool		reuse;
	gnn_minibatch_copy low;
	int32_t    *uslot;
	int32_t    *nslot;
	int64_t		slot_cap;		/* of uslot and nslot */
	int64_t		nnew;
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
	/*
	 * after each epoch's nbatch training batches, neval validation batches
	 * of evn; after the last epoch, ntestb test batches of tn (the same
	 * producer thread: a new one after the last epoch left libgomp's teams
	 * spinning against each other, 3x slower, on 2 cores)
	 */
	int64_t		ebs;			/* seeds per evaluation batch */
	const int32_t *evn;
	int64_t		nev;
	int64_t		neval;
	const int32_t *tn;
	int64_t		nt;
	int64_t		ntestb;
	int64_t		train_total;	/* the epochs' batches, before the test batches */
	gnn_sampler *esampler;		/* the producer's, for them */
	/*
	 * Over several ranks every batch is a window of a list over all ranks,
	 * the same on each (global batches): train holds positions in glocal
	 * (this rank's index of each training node, -1: another rank's), evn
	 * and tn the lists themselves; a rank's batch is its nodes of the
	 * window.  rs: sampling across parts (sample_dist.h), in line.
	 */
	gnn_dist_sampler *rs;
	const int32_t *glocal;
	int32_t    *rseeds;			/* this rank's seeds of the batch at hand */
	bool		exited;			/* the producer thread has returned */
	/*
	 * Evaluation on the CPU with a producer thread: its teams and the
	 * computing thread's, capped so that together they take the threads
	 * once (0: no cap; see pipe_start)
	 */
	int			eval_producer_team;
	int			eval_compute_team;
	/*
	 * Evaluation's gathering shared by the two threads (eval_gather_share):
	 * per input row of a batch, the producer's sampling seconds and its
	 * gathering seconds, the computing thread's forward seconds (running
	 * means; only speed depends on them).  share_on: evaluation batches may
	 * be split.
	 */
	bool		share_on;
	_Atomic double ev_sample_s;
	_Atomic double ev_row_s;
	_Atomic double ev_fwd_s;

	/*
	 * Evaluation reusing layer-0 rows (eval_reuse_rows; reuse_cap rows a
	 * pass, 0: no reuse).  The producer gives each node a row slot the
	 * first time a batch of the pass computes it (slot_of, per graph node,
	 * -1: none; slot_node, per slot, to clear it at the next pass); the
	 * computing thread fills the slots in batch order, so a batch reads
	 * only rows of earlier batches or its own.  rtop samples a batch's
	 * first L-1 hops, rlow the last hop of its new nodes.
	 */
	int64_t		reuse_cap;
	int64_t		keep_deg[2];	/* a row is kept when its node has this degree: [validation, test] */
	gnn_sampler *rtop;
	gnn_sampler *rlow;
	int32_t    *slot_of;
	int32_t    *slot_node;
	int64_t		rused;
	int32_t    *rnew;			/* the producer's scratch: a batch's new nodes */
	int64_t		rnew_cap;
	/* the computing thread's: kept rows in chunks of 2^chunk_bits, and layer 1's input */
	float	  **chunk;
	int64_t		nchunk;
	int			chunk_bits;
	float	   *hin;
	size_t		hin_cap;		/* floats */
	/*
	 * The computing thread's work while it waits for a batch (pipe_idle):
	 * the memory of the rows evaluation will keep, touched ahead of the
	 * pass that first fills it.  On the 2-core VM fresh pages cost half a
	 * millisecond to a millisecond a MB: the R-MAT job's test pass kept 40
	 * MB of rows, 32 MB more than validation, and spent 30 ms of its
	 * 150-200 ms in the kernel clearing pages, while the computing thread
	 * had waited 0.25-0.4 s for epoch 1's batches.  pre_d0: layer 0's
	 * width (0: nothing left to do); pre_node: the nodes counted so far,
	 * pre_expect: the rows a validation / test pass is expected to keep
	 * (pre_rate, pre_seed: reuse_draw_rate's, and the share of the nodes
	 * that are seeds); pre_target: the rows to make ready (-1: not counted
	 * yet), pre_bytes: the bytes of them touched.
	 */
	int32_t		pre_d0;
	int64_t		pre_node;
	double		pre_rate[2];
	double		pre_seed[2];
	double		pre_expect[2];
	int64_t		pre_target;
	int64_t		pre_bytes;
	int64_t		ready_rows;		/* kept rows touched so far (stats->eval_rows_ready) */
	/*
	 * then the graph's pages that epoch 1's validation reads first
	 * (pipe_idle_graph): pre_gnode of the validation seeds done (-1:
	 * nothing to do), pre_fan its first hop's fan-out
	 */
	int64_t		pre_gnode;
	int32_t		pre_fan;

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
	gnn_minibatch_copy_free(&it->low);
	free(it->uslot);
	free(it->nslot);
	memset(it, 0, sizeof(*it));
}

/* the sampled batch whose inputs are the item's gathered features */
static const gnn_minibatch *
item_in(const mb_item *it)
{
	return it->reuse ? &it->low.mb : &it->mb.mb;
}

/* room in it->feat for rows x dim floats, with a quarter more for larger batches (batches vary); false: no memory */
static bool
item_feat_room(mb_item *it, int64_t rows, int32_t dim)
{
	size_t		need = (size_t) rows * dim + 1;

	if (need > it->feat_cap)
	{
		size_t		cap = need + need / 4;
		float	   *f = gnn_malloc_big(sizeof(float) * cap);	/* (2 MB pages when large) */

		if (!f)
			return false;
		free(it->feat);
		it->feat = f;
		it->feat_cap = cap;
	}
	return true;
}

/*
 * The rows of an evaluation batch of n input rows that its producer
 * gathers: all of them, or, when evaluation's gathering is shared, what
 * evens the two threads' times (producer: sampling + its rows; computing
 * thread: the forward pass + the other rows), from their running means per
 * input row (a batch's work grows with its rows).  Near all (0.9 or more)
 * is all: splitting costs the computing thread a pass of its own.
 */
static int64_t
producer_rows(mb_pipe *P, int64_t n)
{
	double		share = P->mbc->eval_gather_share,
				s,
				row,
				fwd;

	if (share > 0)
		return share >= 1 ? n : (int64_t) (share * (double) n);
	s = atomic_load_explicit(&P->ev_sample_s, memory_order_relaxed);
	row = atomic_load_explicit(&P->ev_row_s, memory_order_relaxed);
	fwd = atomic_load_explicit(&P->ev_fwd_s, memory_order_relaxed);
	if (row <= 0 || fwd <= 0)
		return n;				/* nothing measured yet: as training */
	share = (fwd + row - s) / (2 * row);
	if (share >= 0.9)
		return n;
	/* (at least a quarter: the computing thread's gathering is not free) */
	return (int64_t) ((share < 0.25 ? 0.25 : share) * (double) n);
}

/* a running mean's next value (the first measurement taken whole) */
static void
mean_note(_Atomic double *m, double x)
{
	double		o = atomic_load_explicit(m, memory_order_relaxed);

	atomic_store_explicit(m, o > 0 ? 0.8 * o + 0.2 * x : x, memory_order_relaxed);
}

/*
 * A batch built on the CPU: seeds[0..bs) sampled by sampler, their features
 * gathered (share: an evaluation batch's, partly, producer_rows)
 */
static void gather_inputs(mb_pipe *P, mb_item *it, const gnn_minibatch *mb, bool share);
static void pipe_idle(mb_pipe *P);

/* pipe_idle has work left */
static inline bool
idle_left(const mb_pipe *P)
{
	return P->pre_d0 > 0 || (P->pre_gnode >= 0 && P->pre_gnode < P->nev);
}

static void
produce_cpu(mb_pipe *P, mb_item *it, gnn_sampler *sampler, const int32_t *seeds, int64_t bs, const int64_t *stimes,
			uint64_t sseed, bool share)
{
	gnn_minibatch mb;
	double		t = gnn_now_s();

	it->gpu = false;
	it->reuse = false;
	if ((it->st = gnn_sampler_sample_at(sampler, seeds, stimes, bs, sseed, &mb, &it->err)) != GNN_OK ||
		(it->st = gnn_minibatch_copy_from(&it->mb, &mb, &it->err)) != GNN_OK)
		return;
	it->sample_s = gnn_now_s() - t;
	gather_inputs(P, it, &mb, share);
}

/*
 * An evaluation batch reusing layer-0 rows (P->reuse_cap): the seeds' first
 * L-1 hops; of their nodes U, the ones no earlier batch of the pass has
 * computed get a slot (while the pass has slots left) and their last hop
 * sampled, and only that hop's inputs are gathered.  first: the pass's
 * first batch (the slots of the one before are cleared).  Every draw comes
 * from per-node streams under sseed, the pass's one seed: a node's last
 * hop is the same whichever batch samples it.
 */
static void
produce_reuse(mb_pipe *P, mb_item *it, const int32_t *seeds, int64_t bs, uint64_t sseed, bool first, bool test,
			  bool share)
{
	gnn_minibatch mb,
				low;
	double		t = gnn_now_s();
	const int32_t *u;
	int64_t		nu;

	it->gpu = false;
	it->reuse = true;
	it->nnew = 0;
	if (first)
	{
		for (int64_t i = 0; i < P->rused; i++)
			P->slot_of[P->slot_node[i]] = -1;
		P->rused = 0;
	}
	if ((it->st = gnn_sampler_sample_at(P->rtop, seeds, NULL, bs, sseed, &mb, &it->err)) != GNN_OK ||
		(it->st = gnn_minibatch_copy_from(&it->mb, &mb, &it->err)) != GNN_OK)
		return;
	u = mb.input_nodes;
	nu = mb.n_input;
	if (nu > it->slot_cap || nu > P->rnew_cap)
	{
		int64_t		cap = nu + nu / 4 + 16;

		free(it->uslot);
		free(it->nslot);
		it->uslot = malloc(sizeof(int32_t) * cap);
		it->nslot = malloc(sizeof(int32_t) * cap);
		it->slot_cap = it->uslot && it->nslot ? cap : 0;
		if (nu > P->rnew_cap)
		{
			free(P->rnew);
			P->rnew = malloc(sizeof(int32_t) * cap);
			P->rnew_cap = P->rnew ? cap : 0;
		}
		if (!it->slot_cap || !P->rnew_cap)
		{
			it->st = gnn_error_set(&it->err, GNN_ERR_NOMEM, "out of memory");
			return;
		}
	}
	for (int64_t i = 0; i < nu; i++)
	{
		int32_t		v = u[i],
					sl = P->slot_of[v];

		if (sl >= 0)
		{
			it->uslot[i] = sl;
			continue;
		}
		it->uslot[i] = (int32_t) (-1 - it->nnew);
		if (P->rused < P->reuse_cap && reuse_degree(P->g, v) >= P->keep_deg[test])
		{
			P->slot_of[v] = (int32_t) P->rused;
			P->slot_node[P->rused] = v;
			it->nslot[it->nnew] = (int32_t) P->rused++;
		}
		else
			it->nslot[it->nnew] = -1;
		P->rnew[it->nnew++] = v;
	}
	/* (U has no repeats, so neither has rnew: low's destinations are rnew in order) */
	if (it->nnew > 0)
	{
		if ((it->st = gnn_sampler_sample_at(P->rlow, P->rnew, NULL, it->nnew, sseed, &low, &it->err)) != GNN_OK ||
			(it->st = gnn_minibatch_copy_from(&it->low, &low, &it->err)) != GNN_OK)
			return;
	}
	else
		memset(&it->low.mb, 0, sizeof(it->low.mb));	/* (its buffer kept for the next batch) */
	it->sample_s = gnn_now_s() - t;
	if (it->nnew > 0)
		gather_inputs(P, it, &low, share);
	else
		it->gather_s = 0;
}

/* the batch mb's input features into it (share: an evaluation batch's, partly: producer_rows) */
static void
gather_inputs(mb_pipe *P, mb_item *it, const gnn_minibatch *pmb, bool share)
{
	const gnn_graph *g = P->g;
	gnn_minibatch mb = *pmb;
	double		t = gnn_now_s();

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
		if (!item_feat_room(it, mb.n_input, g->feat_dim))
		{
			it->st = gnn_error_set(&it->err, GNN_ERR_NOMEM, "out of memory gathering %lld feature rows",
								   (long long) mb.n_input);
			return;
		}
		it->gathered = share && !g->fstore ? producer_rows(P, mb.n_input) : mb.n_input;
		it->st = gnn_gather_dense(g, mb.input_nodes, it->gathered, P->cfg->row_normalise, P->cfg->threads,
								  it->feat, &it->err);
	}
	else
		it->st = gnn_error_set(&it->err, GNN_ERR_EMPTY, "the graph has no node features");
	it->gather_s = gnn_now_s() - t;
	if (share && it->st == GNN_OK && g->feat_kind == GNN_FEAT_DENSE && !g->fstore && it->gathered > 0)
	{
		mean_note(&P->ev_sample_s, it->sample_s / (double) mb.n_input);
		mean_note(&P->ev_row_s, it->gather_s / (double) it->gathered);
	}
}

/*
 * This rank's seeds of a global batch, the window win[0..n) (through map,
 * positions into it, when given; entries of -1 are other ranks'), into
 * P->rseeds; their number.
 */
static int64_t
own_seeds(mb_pipe *P, const int32_t *win, int64_t n, const int32_t *map)
{
	int64_t		k = 0;

	for (int64_t i = 0; i < n; i++)
	{
		int32_t		v = map ? map[win[i]] : win[i];

		if (v >= 0)
			P->rseeds[k++] = v;
	}
	return k;
}

/* A batch sampled across parts: seeds[0..bs), their neighbourhood and features from their owners. */
static void
produce_remote(mb_pipe *P, mb_item *it, const int32_t *seeds, int64_t bs, const int64_t *stimes, uint64_t sseed)
{
	gnn_minibatch mb;
	gnn_dist_feat f;
	gnn_dist_sample_stats s0,
				s1;

	it->gpu = false;
	gnn_dist_sampler_stats(P->rs, &s0);
	if ((it->st = gnn_dist_sampler_sample(P->rs, seeds, stimes, bs, sseed, P->cfg->row_normalise, P->cfg->threads,
										  &mb, &f, &it->err)) != GNN_OK ||
		(it->st = gnn_minibatch_copy_from(&it->mb, &mb, &it->err)) != GNN_OK)
		return;
	gnn_dist_sampler_stats(P->rs, &s1);
	it->sample_s = s1.sample_s - s0.sample_s;
	it->gather_s = s1.fetch_s - s0.fetch_s;
	if (f.ptr)
	{
		/* sparse rows: the item keeps a copy (its sptr / sidx / sval, as produce_cpu's) */
		int64_t		nnz = f.ptr[mb.n_input];

		free(it->sptr);
		free(it->sidx);
		free(it->sval);
		it->sptr = malloc(sizeof(int64_t) * (mb.n_input + 1));
		it->sidx = malloc(sizeof(int32_t) * (nnz + 1));
		it->sval = malloc(sizeof(float) * (nnz + 1));
		if (!it->sptr || !it->sidx || !it->sval)
		{
			it->st = gnn_error_set(&it->err, GNN_ERR_NOMEM, "out of memory keeping %lld sparse feature rows",
								   (long long) mb.n_input);
			return;
		}
		memcpy(it->sptr, f.ptr, sizeof(int64_t) * (mb.n_input + 1));
		memcpy(it->sidx, f.idx, sizeof(int32_t) * nnz);
		memcpy(it->sval, f.val, sizeof(float) * nnz);
		return;
	}
	if (!item_feat_room(it, mb.n_input, P->g->feat_dim))
	{
		it->st = gnn_error_set(&it->err, GNN_ERR_NOMEM, "out of memory keeping %lld feature rows",
							   (long long) mb.n_input);
		return;
	}
	memcpy(it->feat, f.dense, sizeof(float) * (size_t) mb.n_input * P->g->feat_dim);
}

/*
 * Produce the stream's next batch into it (a failure is kept in it): an
 * epoch is nbatch training batches, then neval validation batches.  Only
 * training batches draw from the stream (shuffles, sampling and dropout
 * seeds): validation batches have the fixed evaluation seeds, so training
 * is the same with or without them.
 */
static void
produce(mb_pipe *P, mb_item *it)
{
	const gnn_minibatch_config *mbc = P->mbc;
	bool		test = P->made >= P->train_total;
	int64_t		pos = test ? 0 : P->made % (P->nbatch + P->neval);
	bool		eval = test || pos >= P->nbatch;	/* a validation or test batch (on the CPU, not trained on) */
	int64_t		b,
				b0,
				bs;
	uint64_t	sseed;

	it->st = GNN_OK;
	it->sample_s = it->gather_s = 0;
	it->gathered = -1;			/* (all of them, wherever they come from) */
	P->made++;
	if (mbc->fail_batch > 0 && P->made == mbc->fail_batch && (!P->rs || mbc->fail_where == 0))
	{
		it->st = gnn_error_set(&it->err, GNN_ERR_BACKEND, "injected failure producing batch %lld",
							   (long long) P->made);
		return;
	}
	if (eval)
	{
		/* validation batch e of the epoch, or test batch e after the last one */
		int64_t		e = test ? P->made - 1 - P->train_total : pos - P->nbatch;
		const int32_t *nodes = test ? P->tn : P->evn;
		int64_t		n = test ? P->nt : P->nev;

		b0 = e * P->ebs;
		bs = n - b0 < P->ebs ? n - b0 : P->ebs;
		it->dropout_seed = 0;
		if (P->glocal)
		{
			/* a global batch: this rank's nodes of it */
			bs = own_seeds(P, nodes + b0, bs, NULL);
			nodes = P->rseeds;
			b0 = 0;
		}
		it->bs = bs;
		seed_bounds(P->g, mbc, nodes + b0, bs, P->stimes);
		if (P->rs)
		{
			produce_remote(P, it, nodes + b0, bs, P->stimes, eval_batch_seed(P->cfg, mbc, e));
			return;
		}
		{
			int			cap = gnn_team_cap_set(P->eval_producer_team);

			if (P->reuse_cap > 0)
				produce_reuse(P, it, nodes + b0, bs, eval_batch_seed(P->cfg, mbc, 0), e == 0, test, P->share_on);
			else
				produce_cpu(P, it, P->esampler, nodes + b0, bs, P->stimes, eval_batch_seed(P->cfg, mbc, e),
							P->share_on);
			gnn_team_cap_set(cap);
		}
		return;
	}
	b = pos;
	b0 = b * mbc->batch_size;
	bs = P->ntrain - b0 < mbc->batch_size ? P->ntrain - b0 : mbc->batch_size;
	if (b == 0)
		gnn_shuffle_i32(&P->rng, P->train, P->ntrain);
	sseed = gnn_rng_next(&P->rng);
	it->dropout_seed = gnn_rng_next(&P->rng);
	it->bs = bs;
	if (P->glocal)
	{
		/* a global batch: this rank's nodes of it, sampled here or across parts */
		it->bs = own_seeds(P, P->train + b0, bs, P->glocal);
		if (mbc->sampler.temporal)
			seed_bounds(P->g, mbc, P->rseeds, it->bs, P->stimes);
		if (P->rs)
			produce_remote(P, it, P->rseeds, it->bs, mbc->sampler.temporal ? P->stimes : NULL, sseed);
		else
			produce_cpu(P, it, P->sampler, P->rseeds, it->bs, mbc->sampler.temporal ? P->stimes : NULL, sseed, false);
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
		seed_bounds(P->g, mbc, P->train + b0, bs, P->stimes);
	produce_cpu(P, it, P->sampler, P->train + b0, bs, mbc->sampler.temporal ? P->stimes : NULL, sseed, false);
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
	P->exited = true;
	pthread_cond_broadcast(&P->cv_ready);
	pthread_mutex_unlock(&P->mu);
	return NULL;
}

static gnn_status
pipe_start(mb_pipe *P, const gnn_graph *g, const gnn_train_config *cfg, const gnn_minibatch_config *mbc,
		   int32_t *train, int64_t ntrain, uint64_t stream, int32_t epochs, gnn_backend *be, gnn_gpu_batcher *gpu,
		   const int32_t *evn, int64_t nev, const int32_t *tn, int64_t nt, const gnn_sampler_config *esc,
		   gnn_dist_sampler *rs, const int32_t *glocal, int64_t reuse_cap, gnn_error *err)
{
	gnn_status	st;
	int64_t		per = (ntrain + mbc->batch_size - 1) / mbc->batch_size;

	memset(P, 0, sizeof(*P));
	P->pre_gnode = -1;
	P->g = g;
	P->cfg = cfg;
	P->mbc = mbc;
	P->train = train;
	P->ntrain = ntrain;
	P->nbatch = mbc->max_batches > 0 && mbc->max_batches < per ? mbc->max_batches : per;
	P->ebs = eval_batch_of(mbc);
	P->evn = evn;
	P->nev = nev;
	P->neval = (nev + P->ebs - 1) / P->ebs;
	P->tn = tn;
	P->nt = nt;
	P->ntestb = (nt + P->ebs - 1) / P->ebs;
	P->train_total = (P->nbatch + P->neval) * epochs;
	P->total = P->train_total + P->ntestb;
	gnn_rng_seed(&P->rng, stream);
	P->gpu = gpu;
	P->be = P->pbe = be;
	P->nslots = mbc->prefetch > 0 ? mbc->prefetch + 1 : 1;
	P->rs = rs;
	P->glocal = glocal;
	if (glocal && !(P->rseeds = malloc(sizeof(int32_t) * (batch_room(mbc) + 1))))
		return gnn_error_set(err, GNN_ERR_NOMEM, "out of memory");
	if (rs && !cfg->dist_batches)
	{
		/* in line: a batch's exchanges and the steps' allreduces share one connection, in one order on every rank */
		P->nslots = 1;
		P->slots = calloc(1, sizeof(mb_item));
		P->stimes = malloc(sizeof(int64_t) * (batch_room(mbc) + 1));
		if (!P->slots || !P->stimes)
			return gnn_error_set(err, GNN_ERR_NOMEM, "out of memory");
		return GNN_OK;
	}
	if (gpu && P->nslots > gnn_gpu_batcher_slots(gpu))
		P->nslots = gnn_gpu_batcher_slots(gpu);
	P->slots = calloc(P->nslots, sizeof(mb_item));
	P->stimes = malloc(sizeof(int64_t) * (batch_room(mbc) + 1));
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
	if (!gpu && !rs && ntrain > 0 && (st = gnn_sampler_create(g, &mbc->sampler, &P->sampler, err)) != GNN_OK)
		return st;
	/*
	 * Evaluation samples with the training sampler where their settings
	 * agree (esc is the training sampler's settings with these two
	 * changed; a sampler's draws depend on each call's seed alone): one
	 * set of marks (8 MB a million nodes) and scratch instead of two, warm
	 * when epoch 1's evaluation starts.  Where they differ, evaluation's
	 * samplers still mark in the training sampler's array.
	 */
	if (P->neval + P->ntestb > 0 && P->sampler && esc->per_node_streams == mbc->sampler.per_node_streams &&
		esc->first_hop == mbc->sampler.first_hop)
		P->esampler = P->sampler;
	else if (!rs && P->neval + P->ntestb > 0 &&
			 (st = gnn_sampler_create_sharing(g, esc, P->sampler, &P->esampler, err)) != GNN_OK)
		return st;
	if (reuse_cap > 0 && !rs && !glocal && P->neval + P->ntestb > 0 && esc->nhops >= 2)
	{
		/* reusing layer-0 rows: the first L-1 hops and the last one apart, each as in the whole */
		gnn_sampler_config top,
					low;

		gnn_sampler_config_hops(esc, g, 0, esc->nhops - 1, &top);
		gnn_sampler_config_hops(esc, g, esc->nhops - 1, 1, &low);
		/* (the producer's samplers share one marker array: they take turns on its thread) */
		if ((st = gnn_sampler_create_sharing(g, &top, P->esampler, &P->rtop, err)) != GNN_OK ||
			(st = gnn_sampler_create_sharing(g, &low, P->esampler, &P->rlow, err)) != GNN_OK)
			return st;
		P->slot_of = malloc(sizeof(int32_t) * (g->num_nodes + 1));
		P->slot_node = malloc(sizeof(int32_t) * (reuse_cap + 1));
		if (!P->slot_of || !P->slot_node)
			return gnn_error_set(err, GNN_ERR_NOMEM, "out of memory");
		memset(P->slot_of, 0xff, sizeof(int32_t) * g->num_nodes);
		P->reuse_cap = reuse_cap;
		for (int k = 0; k < 2; k++)
			P->keep_deg[k] = reuse_keep_degree(g, esc, k ? nt : nev);
	}
	if (P->nslots > 1)
	{
		pthread_mutex_init(&P->mu, NULL);
		pthread_cond_init(&P->cv_ready, NULL);
		pthread_cond_init(&P->cv_free, NULL);
		if (be->ops == gnn_backend_cpu() && P->neval + P->ntestb > 0)
		{
			/*
			 * Evaluation's forward pass is about as much work as making
			 * its batch, so the producer's teams and the computing
			 * thread's run at once all through an evaluation: each with
			 * all the threads, twice as many as cores, spinning and
			 * switching.  Each gets half (the computing thread the odd
			 * one).  The R-MAT job (bench/train_job.sh, 2 threads), 10
			 * runs of each build alternating: test pass 0.283 -> 0.260 s,
			 * wall / passes 1.33 -> 1.30.  Training keeps both whole: its steps are
			 * 3x the producer's work, and a 1-thread producer slowed
			 * them.  Results do not depend on team sizes.
			 */
			int			all = cfg->threads > 0 ? cfg->threads : omp_get_max_threads();

			if (all >= 2)
			{
				P->eval_producer_team = all / 2;
				P->eval_compute_team = all - all / 2;
				P->share_on = true;
			}
		}
		P->threaded = gnn_thread_start(&P->thread, false, producer_main, P);
		if (!P->threaded)
		{
			/* no thread to be had: produce in line (same results), with every thread */
			P->eval_producer_team = P->eval_compute_team = 0;
			P->share_on = false;
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
	/* (tests: all of it before the first batch, so that it is done whatever the timing) */
	while (P->mbc->idle_first && idle_left(P))
		pipe_idle(P);
	pthread_mutex_lock(&P->mu);
	while (P->tail <= P->head)
	{
		if (idle_left(P))
		{
			/* a slice of idle work (a millisecond or so), then look again */
			pthread_mutex_unlock(&P->mu);
			pipe_idle(P);
			pthread_mutex_lock(&P->mu);
			continue;
		}
		pthread_cond_wait(&P->cv_ready, &P->mu);
	}
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

/*
 * Stop the producer (it finishes the batch at hand) and free everything.
 * Sampling across parts, the producer's batches are collectives on its own
 * mesh: every rank's producer must make the same ones.  Each makes batches
 * until its slots are full, head + nslots of them, where head (the batches
 * the computing thread is done with) is the same on every rank whenever
 * they stop together (an early stop, a cancel, the end): so each is let
 * finish those first, then stopped, and none waits mid-exchange for a
 * producer that has gone.  (After an error the exchanges fail or time out.)
 */
static void
pipe_stop(mb_pipe *P)
{
	if (P->threaded)
	{
		pthread_mutex_lock(&P->mu);
		if (P->rs)
		{
			int64_t		target = P->head + P->nslots < P->total ? P->head + P->nslots : P->total;

			while (!P->exited && P->tail < target)
				pthread_cond_wait(&P->cv_ready, &P->mu);
		}
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
	free(P->rseeds);
	/* (those sharing a marker array before its owner) */
	gnn_sampler_free(P->rtop);
	gnn_sampler_free(P->rlow);
	if (P->esampler != P->sampler)
		gnn_sampler_free(P->esampler);
	gnn_sampler_free(P->sampler);
	free(P->slot_of);
	free(P->slot_node);
	free(P->rnew);
	for (int64_t i = 0; i < P->nchunk; i++)
		free(P->chunk[i]);
	free(P->chunk);
	free(P->hin);
	memset(P, 0, sizeof(*P));
}

/* the bytes an item taken from the pipeline holds (host features and sampled blocks) */
static int64_t
item_bytes(const mb_item *it)
{
	int64_t		b = (int64_t) sizeof(float) * it->feat_cap + (int64_t) it->mb.cap + (int64_t) it->low.cap +
		(int64_t) 8 * it->slot_cap;
	const gnn_minibatch *in = item_in(it);

	if (it->sptr)
		b += (int64_t) sizeof(int64_t) * (in->n_input + 1) + (int64_t) 8 * it->sptr[in->n_input];
	return b;
}

/* the heap above base at the current phase's peak, into *at (the largest seen) */
static void
phase_note(int64_t base, int64_t *at)
{
	int64_t		b = gnn_heap_phase_peak() - base;

	if (gnn_heap_tracked() && b > *at)
		*at = b;
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
			  bool *owned, gnn_dist *p3, gnn_error *err)
{
	int64_t		n = item_in(it)->n_input;
	gnn_status	st;

	if (p3 && g->feat_kind == GNN_FEAT_DENSE && n > 0)
	{
		/*
		 * Feature slices, row-normalised: each row divided by the sum of
		 * its whole row, the slices' sums added over the ranks (the
		 * producer gathered them as they are)
		 */
		double	   *sum = malloc(sizeof(double) * n);
		int32_t		d = g->feat_dim;

		if (!sum)
			return gnn_error_set(err, GNN_ERR_NOMEM, "out of memory");
		for (int64_t i = 0; i < n; i++)
		{
			double		t = 0;

			for (int32_t k = 0; k < d; k++)
				t += it->feat[i * d + k];
			sum[i] = t;
		}
		if ((st = gnn_dist_allreduce(p3, sum, (size_t) n, GNN_DIST_F64, err)) != GNN_OK)
		{
			free(sum);
			return st;
		}
		for (int64_t i = 0; i < n; i++)
			if (sum[i] != 0)
			{
				double		r = 1.0 / sum[i];

				for (int32_t k = 0; k < d; k++)
					it->feat[i * d + k] = (float) (it->feat[i * d + k] * r);
			}
		free(sum);
	}
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

/* the kept rows' chunks: of 8 MB (2 MB pages), a power of two rows, or one for all a pass keeps */
static void
reuse_chunk_bits(mb_pipe *P, int32_t d0)
{
	if (P->chunk_bits)
		return;
	P->chunk_bits = 6;
	while (((size_t) d0 << P->chunk_bits) * sizeof(float) < (size_t) GNN_BIG_BYTES &&
		   ((int64_t) 1 << P->chunk_bits) < P->reuse_cap)
		P->chunk_bits++;
}

/* kept row slot of a pass's reused layer-0 rows (the computing thread's chunks), NULL: no memory */
static float *
reuse_row(mb_pipe *P, int64_t slot, int32_t d0)
{
	int64_t		c = slot >> P->chunk_bits;

	if (c >= P->nchunk)
	{
		int64_t		want = (P->reuse_cap + ((int64_t) 1 << P->chunk_bits) - 1) >> P->chunk_bits;
		float	  **p = P->chunk ? P->chunk : calloc(want, sizeof(float *));

		if (!p)
			return NULL;
		P->chunk = p;
		while (P->nchunk <= c)
		{
			/* (2 MB pages: a fresh 4 kB page costs more than the row written to it) */
			if (!(P->chunk[P->nchunk] = gnn_malloc_big(sizeof(float) * ((size_t) d0 << P->chunk_bits))))
				return NULL;
			P->nchunk++;
		}
	}
	return P->chunk[c] + (size_t) (slot & (((int64_t) 1 << P->chunk_bits) - 1)) * d0;
}

/* one access of every 4 kB page of [p, p + n), each byte left as it was (only this thread writes it) */
static void
touch_pages(char *p, int64_t n)
{
	for (int64_t o = 0; o < n; o += 4096)
	{
		volatile char *q = p + o;

		*q = *q;
	}
}

/* node v's feature row where this graph holds one (not a part's halo node) */
static inline const float *
idle_feat_row(const gnn_graph *g, int64_t v)
{
	if (v < 0 || v >= g->num_nodes || (g->node_part && g->node_part[v] != g->part))
		return NULL;
	return gnn_graph_feat_row(g, v);
}

/*
 * A slice of the graph's pages that epoch 1's validation reads first: each
 * validation seed's in-list and feature row, and the feature rows of its
 * in-neighbours where it draws them all (degree within the first hop's
 * fan-out).  This VM pays 6-7 us for a process's first read of each shared
 * page; training's batches have read most of them by then, not those of
 * validation's low-degree seeds.
 */
static void
pipe_idle_graph(mb_pipe *P)
{
	const gnn_graph *g = P->g;
	int64_t		end = P->pre_gnode + 16;	/* (at most 16 x 12 pages: about a millisecond) */
	volatile float sink = 0;

	if (P->pre_gnode < 0 || P->pre_gnode >= P->nev)
		return;
	if (end > P->nev)
		end = P->nev;
	for (int64_t i = P->pre_gnode; i < end; i++)
	{
		int64_t		v = P->evn[i];
		const int32_t *nb;
		int64_t		d;
		const float *f;

		if (v < 0 || v >= g->num_nodes)
			continue;			/* (global batches over parts: another rank's node) */
		d = gnn_graph_in_row(g, v, &nb, NULL);
		f = idle_feat_row(g, v);
		if (f)
			sink += f[0];
		for (int64_t o = 0; o < d; o += 1024)
			sink += (float) nb[o];
		if (d > 0 && d <= P->pre_fan)
			for (int64_t j = 0; j < d; j++)
				if ((f = idle_feat_row(g, nb[j])))
					sink += f[0];
	}
	(void) sink;
	P->pre_gnode = end;
}

/*
 * What pipe_idle makes ready, for layer-0 rows of width d0 (esc: evaluation's
 * sampler): layer 1's input, as large as a batch's can be, at once (nothing
 * touched yet); the kept rows once pipe_idle has counted them.
 */
static void
pipe_idle_plan(mb_pipe *P, int32_t d0, const gnn_sampler_config *esc)
{
	const gnn_graph *g = P->g;
	double		rows = reuse_reach(g, esc, (double) P->ebs),
				n = (double) g->num_nodes;

	if (P->threaded && P->nev > 0 && P->evn)
	{
		P->pre_gnode = 0;
		P->pre_fan = esc->nhops > 0 ? (esc->fanouts[0] < 0 ? INT32_MAX : esc->fanouts[0]) : 0;
	}
	if (P->reuse_cap < 1 || !P->threaded || d0 < 1 || g->num_nodes < 1)
		return;
	if (rows > n)
		rows = n;
	if (rows * d0 * sizeof(float) <= (double) (64 << 20) && P->hin_cap < (size_t) rows * d0 + 1)
	{
		free(P->hin);
		P->hin_cap = (size_t) rows * d0 + 1;
		if (!(P->hin = gnn_malloc_big(sizeof(float) * P->hin_cap)))
			P->hin_cap = 0;		/* (reuse_assemble tries again, and fails the job if it must) */
	}
	for (int k = 0; k < 2; k++)
	{
		int64_t		seeds = k ? P->nt : P->nev;

		P->pre_rate[k] = seeds > 0 ? reuse_draw_rate(g, esc, seeds) : 0;
		P->pre_seed[k] = (double) seeds / n;
		P->pre_expect[k] = 0;
	}
	reuse_chunk_bits(P, d0);
	P->pre_node = 0;
	P->pre_target = -1;
	P->pre_bytes = -(int64_t) (sizeof(float) * P->hin_cap);	/* layer 1's input first */
	P->pre_d0 = d0;
}

/*
 * A slice of what pipe_idle_plan asked for, about a millisecond's work: a
 * share of the nodes counted, else a MB touched.  A node of degree d at or
 * above a pass's keep_deg is kept by the pass when it is one of its seeds
 * or drawn (Poisson, at rate pre_rate * d) before the last hop.  On the
 * R-MAT job that expects 22,000 and 117,000 rows, and the passes keep
 * 14,500 and 77,000 (of 24,000 and 133,000 nodes at or above keep_deg):
 * a hub's neighbours are hubs, which draw each of theirs less often than
 * the mean degree says.  What is touched for nothing stays within
 * gnn.estimate's count, the nodes at or above keep_deg.  Counting took 24
 * ms of epoch 1's waits there, touching 60 MB 33 ms.
 */
static void
pipe_idle(mb_pipe *P)
{
	const gnn_graph *g = P->g;
	int32_t		d0 = P->pre_d0;
	int64_t		row = (int64_t) sizeof(float) * d0,
				chunk = row << P->chunk_bits;

	if (d0 <= 0)
	{
		pipe_idle_graph(P);
		return;
	}
	if (P->pre_target < 0)
	{
		int64_t		end = P->pre_node + ((int64_t) 1 << 16);

		if (end > g->num_nodes)
			end = g->num_nodes;
		for (int64_t v = P->pre_node; v < end; v++)
		{
			int64_t		d = reuse_degree(g, v);

			for (int k = 0; k < 2; k++)
				if (P->pre_rate[k] > 0 && d >= P->keep_deg[k])
					P->pre_expect[k] += 1 - (1 - P->pre_seed[k]) * exp(-P->pre_rate[k] * (double) d);
		}
		P->pre_node = end;
		if (end == g->num_nodes)
		{
			double		e = P->pre_expect[0] > P->pre_expect[1] ? P->pre_expect[0] : P->pre_expect[1];

			P->pre_target = e < (double) P->reuse_cap ? (int64_t) ceil(e) : P->reuse_cap;
		}
		return;
	}
	if (P->pre_bytes < 0)
	{
		/* layer 1's input, from its end (pre_bytes counts up to 0) */
		int64_t		n = -P->pre_bytes < ((int64_t) 1 << 20) ? -P->pre_bytes : ((int64_t) 1 << 20);

		if (P->hin)
			touch_pages((char *) P->hin + (sizeof(float) * P->hin_cap + P->pre_bytes), n);
		P->pre_bytes += n;
		return;
	}
	if (P->pre_bytes >= P->pre_target * row)
	{
		P->pre_d0 = 0;			/* done */
		return;
	}
	{
		int64_t		c = P->pre_bytes / chunk,
					off = P->pre_bytes - c * chunk,
					end = off + ((int64_t) 1 << 20);
		float	   *base = reuse_row(P, c << P->chunk_bits, d0);

		if (!base)
		{
			P->pre_d0 = 0;		/* no memory: the passes will say so, or keep fewer rows */
			return;
		}
		if (end > chunk)
			end = chunk;
		if (end > P->pre_target * row - c * chunk)
			end = P->pre_target * row - c * chunk;
		touch_pages((char *) base + off, end - off);
		P->pre_bytes = c * chunk + end;
		P->ready_rows = P->pre_bytes / row;
	}
}

/*
 * A reusing batch (produce_reuse) after layer 0 ran on its new nodes' last
 * hop (h0: nnew x d0, NULL when there are none): those with a slot kept,
 * and layer 1's input, every node of U's row, into P->hin
 */
static gnn_status
reuse_assemble(mb_pipe *P, const mb_item *it, const float *h0, int32_t d0, gnn_error *err)
{
	int64_t		nu = it->mb.mb.n_input;
	size_t		need = (size_t) nu * d0 + 1;

	reuse_chunk_bits(P, d0);
	for (int64_t k = 0; k < it->nnew; k++)
		if (it->nslot[k] >= 0)
		{
			float	   *r = reuse_row(P, it->nslot[k], d0);

			if (!r)
				return gnn_error_set(err, GNN_ERR_NOMEM, "out of memory keeping evaluation rows");
			memcpy(r, h0 + (size_t) k * d0, sizeof(float) * d0);
		}
	if (need > P->hin_cap)
	{
		size_t		cap = need + need / 4;

		free(P->hin);
		if (!(P->hin = gnn_malloc_big(sizeof(float) * cap)))
		{
			P->hin_cap = 0;
			return gnn_error_set(err, GNN_ERR_NOMEM, "out of memory");
		}
		P->hin_cap = cap;
	}
	for (int64_t i = 0; i < nu; i++)
	{
		int32_t		sl = it->uslot[i];
		const float *r = sl >= 0 ? reuse_row(P, sl, d0) : h0 + (size_t) (-1 - (int64_t) sl) * d0;

		/*
		 * every line of a kept row some rows ahead: they are random reads
		 * over up to 128 MB (as gnn_gather_dense's feature rows)
		 */
		if (i + 8 < nu && it->uslot[i + 8] >= 0)
		{
			const char *q = (const char *) reuse_row(P, it->uslot[i + 8], d0);

			for (size_t off = 0; off < sizeof(float) * (size_t) d0; off += 64)
				__builtin_prefetch(q + off);
		}
		memcpy(P->hin + (size_t) i * d0, r, sizeof(float) * d0);
	}
	return GNN_OK;
}

/*
 * The next count items of the pipeline, the evaluation batches of a split,
 * measured into a; dfeat: the device buffer of a batch's features; stats:
 * the feature rows gathered here (eval_gather_share), the layer-0 rows
 * reused and computed (eval_reuse_rows).
 */
static gnn_status
eval_from_pipe(const eval_ctx *E, mb_pipe *P, int64_t count, gnn_buf *dfeat, gnn_should_stop_fn should_stop,
			   void *stop_arg, eval_acc *a, gnn_minibatch_stats *stats, gnn_error *err)
{
	gnn_status	st = GNN_OK;
	int			cap = gnn_team_cap_set(P->eval_compute_team);

	for (int64_t e = 0; st == GNN_OK && e < count; e++)
	{
		mb_item    *it;
		const gnn_minibatch *in;
		gnn_dfeat	x;
		bool		x_owned = false;
		gnn_dblock	dblk[GNN_MAX_LAYERS];
		gnn_dblock *blocks[GNN_MAX_LAYERS];
		double		waited,
					t1;
		int			made = 0,
					L = E->cfg->layers,
					first;

		if (should_stop && should_stop(stop_arg))
		{
			st = gnn_error_set(err, GNN_ERR_CANCELLED, "training cancelled during evaluation");
			break;
		}
		it = pipe_next(P, &waited);
		if ((st = it->st) != GNN_OK)
		{
			*err = it->err;
			break;
		}
		in = item_in(it);
		first = it->reuse ? 1 : 0;
		/* the rows the producer left (eval_gather_share: a dense batch's), as it gathers them */
		if (it->gathered >= 0 && it->gathered < in->n_input)
		{
			st = gnn_gather_dense(P->g, in->input_nodes + it->gathered, in->n_input - it->gathered,
								  P->cfg->row_normalise, P->cfg->threads, it->feat + it->gathered * P->g->feat_dim, err);
			stats->eval_rows_shared += in->n_input - it->gathered;
		}
		t1 = gnn_now_s();
		if (st == GNN_OK && (!it->reuse || it->nnew > 0))
			st = item_features(E->be, E->g, it, dfeat, &x, &x_owned, E->p3, err);
		/* a reusing batch: layer 0 on its new nodes' last hop, then every node's row assembled */
		if (it->reuse)
		{
			const float *h0 = NULL;

			if (st == GNN_OK && it->nnew > 0 &&
				(st = gnn_dblock_create_forward(E->be, &it->low.mb.blocks[0], E->cfg->model, NULL, NULL, &dblk[0],
												err)) == GNN_OK)
			{
				blocks[0] = &dblk[0];
				st = gnn_model_forward_layers(E->model, blocks, 1, &x, &h0, err);
				gnn_dblock_free(&dblk[0]);
			}
			if (st == GNN_OK)
				st = reuse_assemble(P, it, h0, gnn_model_layer_dim(E->model, 0), err);
			stats->eval_rows_computed += it->nnew;
			stats->eval_rows_reused += it->mb.mb.n_input - it->nnew;
		}
		/*
		 * mb's blocks from layer first on (a reusing batch's start at layer
		 * 1); forward only: no transposes, and on the CPU the batch's own
		 * arrays (block.c)
		 */
		for (int l = first; st == GNN_OK && l < L; l++)
			if ((st = gnn_dblock_create_forward(E->be, &it->mb.mb.blocks[l - first], E->cfg->model, NULL, NULL,
												 &dblk[l], err)) == GNN_OK)
				blocks[l] = &dblk[l], made = l + 1;
		/* (across parts a rank may have no seed in a batch) */
		if (st == GNN_OK && it->bs > 0)
			st = eval_batch(E, blocks, it->reuse ? NULL : &x, it->reuse ? P->hin : NULL, it->mb.mb.input_nodes,
							it->bs, a, err);
		/* the computing thread's own work on the batch, its gathering aside */
		if (P->share_on && st == GNN_OK && in->n_input > 0)
			mean_note(&P->ev_fwd_s, (gnn_now_s() - t1) / (double) in->n_input);
		for (int l = first; l < made; l++)
			gnn_dblock_free(&dblk[l]);
		if (x_owned)
			gnn_dfeat_free(&x);
		pipe_done(P);
	}
	gnn_team_cap_set(cap);
	return st;
}

/* ------------------------------------------------------------------ feature slices (P3) */

/* an early return of feature slices: the slice taken freed */
static gnn_status
p3_fail(float *xslice, gnn_status st)
{
	free(xslice);
	return st;
}

/* the reduce hook (gnn_model_set_reduce): layer 0's partial products summed over the ranks */
static gnn_status
p3_reduce(void *arg, float *rows, int64_t count, gnn_error *err)
{
	return gnn_dist_allreduce((gnn_dist *) arg, rows, (size_t) count, GNN_DIST_F32, err);
}

/*
 * part's weights from whole's (host memory, the CPU backend): a parameter of
 * whole rows there (layer 0's, in_dim rows) gives part the rows of its slice,
 * from row `first`; the others are copied.
 */
static gnn_status
p3_copy(gnn_model *whole, gnn_model *part, int32_t first, bool to_part, gnn_error *err)
{
	if (gnn_model_num_params(whole) != gnn_model_num_params(part))
		return gnn_error_set(err, GNN_ERR_INVALID, "the models on whole rows and on a slice differ");
	for (int i = 0; i < gnn_model_num_params(part); i++)
	{
		gnn_tensor *w = &gnn_model_param(whole, i)->w,
				   *p = &gnn_model_param(part, i)->w;

		if (w->cols != p->cols || (w->rows != p->rows && (p->rows + first > w->rows || !to_part)))
			return gnn_error_set(err, GNN_ERR_INVALID, "parameter %d: %lld x %lld against %lld x %lld", i,
								 (long long) w->rows, (long long) w->cols, (long long) p->rows, (long long) p->cols);
		if (w->rows == p->rows)
			memcpy(to_part ? p->data : w->data, to_part ? w->data : p->data, sizeof(float) * w->rows * w->cols);
		else
			memcpy(p->data, w->data + (size_t) first * w->cols, sizeof(float) * p->rows * p->cols);
	}
	return GNN_OK;
}

/*
 * whole's weights from every rank's part (a collective): layer 0's rows
 * gathered in rank order (width[r] rows from rank r), the others this
 * rank's (the same on every rank).
 */
static gnn_status
p3_gather(gnn_dist *d, gnn_model *part, gnn_model *whole, const int32_t *width, gnn_error *err)
{
	int			size = gnn_dist_size(d);
	int32_t		maxw = 0;
	gnn_status	st = GNN_OK;

	for (int r = 0; r < size; r++)
		maxw = width[r] > maxw ? width[r] : maxw;
	for (int i = 0; st == GNN_OK && i < gnn_model_num_params(part); i++)
	{
		gnn_tensor *w = &gnn_model_param(whole, i)->w,
				   *p = &gnn_model_param(part, i)->w;
		float	   *in,
				   *out;
		int64_t		at = 0;

		if (w->rows == p->rows)
		{
			memcpy(w->data, p->data, sizeof(float) * w->rows * w->cols);
			continue;
		}
		in = calloc((size_t) maxw * p->cols + 1, sizeof(float));
		out = malloc(sizeof(float) * ((size_t) maxw * p->cols * size + 1));
		if (!in || !out)
			st = gnn_error_set(err, GNN_ERR_NOMEM, "out of memory");
		else
		{
			memcpy(in, p->data, sizeof(float) * p->rows * p->cols);
			st = gnn_dist_allgather(d, in, sizeof(float) * maxw * p->cols, out, err);
		}
		for (int r = 0; st == GNN_OK && r < size; r++)
		{
			memcpy(w->data + at * w->cols, out + (size_t) r * maxw * p->cols, sizeof(float) * width[r] * w->cols);
			at += width[r];
		}
		free(in);
		free(out);
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
	float	   *hf = NULL;		/* regression: batch_regress's scratch */
	double	   *hd = NULL;
	float	   *hlog = NULL;	/* an evaluation batch's logits on the host */
	int64_t		nev = 0;		/* validation nodes measured after each epoch */
	int64_t		ntest = 0;		/* test nodes, measured once */
	int32_t    *tnodes = NULL;
	eval_acc	va,
				ta;
	eval_ctx	E;
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
	bool		sampled_eval = temporal || g->num_edge_types > 1 || mbc->sampled_eval;	/* (and across parts, below) */
	int64_t		reuse_cap = 0;	/* evaluation's kept layer-0 rows a pass (eval_reuse_rows) */
	gnn_buf		dlab = {0},
				drows = {0},
				dlogits = {0};
	int64_t		ntrain = 0;
	int64_t		room;			/* seeds of the largest batch, training or evaluation */
	int32_t		c;
	int			L = cfg->layers;
	gnn_selector sel;
	bool		eval_ready = false;
	bool		compensate;
	double		t_start;
	mb_pipe		pipe;
	gnn_buf		dfeat = {0};	/* a batch's features on a device backend */
	int64_t		heap_base = gnn_heap_current();
	gnn_gpu_batcher *gpu = NULL;	/* batches built on the GPU */
	bool		on_device;		/* a device backend: count what batches move */
	/* over several ranks (train_mb.h, halo_hops) */
	gnn_dist   *dist = mbc->feature_slices ? NULL : cfg->dist;
	/* feature slices (train_mb.h): the ranks, the slices' widths and this rank's first column */
	gnn_dist   *p3d = mbc->feature_slices ? cfg->dist : NULL;
	int32_t		p3_width[64],
				p3_first = 0,
				p3_all = 0;
	gnn_model  *p3_whole = NULL;	/* the model on whole rows: the initial weights, then the gathered ones */
	gnn_train_config pcfg;		/* the pipeline's (feature slices: rows gathered unnormalised) */
	gnn_graph	gslice;			/* feature slices of whole rows: the graph with this rank's columns */
	float	   *xslice = NULL;
	gnn_minibatch_config mloc;	/* this rank's share of the batch */
	gnn_halo_plan halo;
	gnn_graph	part;
	float	   *xfeat = NULL,
			   *gbuf = NULL;
	double	   *deg = NULL;
	size_t		gcap = 0;
	int64_t		steps = 0,		/* steps an epoch, every rank's */
				ntrain_all = 0,	/* training nodes on every rank */
				nall[4] = {0, 0, 0, 0},	/* each split's nodes on every rank (full evaluation) */
				nall_test = 0;
	bool		nall_ready = false;
	/* sampling across parts (sample_dist.h): the part has fewer hops of halo than the job samples */
	bool		remote = false;
	gnn_dist_sampler *rs = NULL;
	int32_t    *gtrain = NULL,	/* the lists over all ranks (this rank's index, or -1) */
			   *gval = NULL,
			   *gtest = NULL,
			   *gperm = NULL;	/* positions into gtrain, shuffled every epoch */
	int64_t		gntrain = 0,
				gnval = 0,
				gntest = 0;

	memset(&d, 0, sizeof(d));
	memset(&pipe, 0, sizeof(pipe));
	memset(&halo, 0, sizeof(halo));
	memset(&va, 0, sizeof(va));
	memset(&ta, 0, sizeof(ta));
	memset(res, 0, sizeof(*res));
	gnn_selector_init(&sel, cfg->select);
	memset(&stl, 0, sizeof(stl));
	if (!stats)
		stats = &stl;
	memset(stats, 0, sizeof(*stats));
	gnn_heap_phase_reset();
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
	if (mbc->eval_batch_size < 0)
		return gnn_error_set(err, GNN_ERR_INVALID, "evaluation batch size must be >= 0 (0: the batch size), got %d",
							 mbc->eval_batch_size);
	room = batch_room(mbc);
	if ((st = gnn_train_graph_check_task(g, cfg->task, err)) != GNN_OK)
		return st;
	if (g->num_node_types > 1 && (cfg->target_type < 0 || cfg->target_type >= g->num_node_types))
		return gnn_error_set(err, GNN_ERR_INVALID, "target node type %d out of range [0, %d)",
							 cfg->target_type, g->num_node_types);
	if (temporal && !g->time)
		return gnn_error_set(err, GNN_ERR_INVALID, "temporal sampling needs node times; the graph has none");
	if (model_out && !be_in)
		return gnn_error_set(err, GNN_ERR_INVALID, "asking for the model needs a caller-owned backend");
	if (mbc->feature_slices && mbc->slice_whole_rows && cfg->dist)
	{
		/*
		 * Every rank holds whole rows: its columns [r F / K, (r + 1) F / K)
		 * copied out, the graph seen through them (the topology as it is,
		 * a delta's included; its feature rows are read whole, then cut)
		 */
		int			K = gnn_dist_size(cfg->dist),
					r = gnn_dist_rank(cfg->dist);
		int64_t		F = g->feat_dim,
					lo = r * F / K,
					w = (r + 1) * F / K - lo,
					chunk = 4096;
		float	   *rows;

		if (g->feat_kind != GNN_FEAT_DENSE)
			return gnn_error_set(err, GNN_ERR_UNSUPPORTED, "feature slices cut dense features; this graph's are %s",
								 g->feat_kind == GNN_FEAT_SPARSE ? "sparse" : "missing");
		if (w < 1)
			return gnn_error_set(err, GNN_ERR_INVALID, "%lld feature columns over %d ranks: rank %d gets none",
								 (long long) F, K, r);
		xslice = malloc(sizeof(float) * ((size_t) g->num_nodes * w + 1));
		rows = malloc(sizeof(float) * ((size_t) chunk * F + 1));
		if (!xslice || !rows)
		{
			free(xslice);
			free(rows);
			return gnn_error_set(err, GNN_ERR_NOMEM, "out of memory for %lld nodes' %lld columns",
								 (long long) g->num_nodes, (long long) w);
		}
		for (int64_t v0 = 0; v0 < g->num_nodes; v0 += chunk)
		{
			int64_t		nc = g->num_nodes - v0 < chunk ? g->num_nodes - v0 : chunk;

			if ((st = gnn_graph_feat_range(g, v0, nc, rows, err)) != GNN_OK)
			{
				free(xslice);
				free(rows);
				return st;
			}
			for (int64_t i = 0; i < nc; i++)
				memcpy(xslice + (size_t) (v0 + i) * w, rows + (size_t) i * F + lo, sizeof(float) * w);
		}
		free(rows);
		gslice = *g;
		gslice.feat = xslice;
		gslice.feat_dim = (int32_t) w;
		gslice.fstore = NULL;
		gslice.dnode.bits = NULL;	/* (feature rows from the slice, not a delta's whole ones) */
		g = &gslice;
	}
	if ((st = gnn_train_model_config_for(cfg, g, &mc, err)) != GNN_OK)
	{
		free(xslice);
		return st;
	}
	if (mbc->feature_slices)
	{
		int64_t		shape[64][3];
		int64_t		mine[3] = {g->num_nodes, g->num_edges, g->feat_dim};

		if (!p3d)
			return p3_fail(xslice, gnn_error_set(err, GNN_ERR_INVALID, "feature slices need the ranks (cfg->dist)"));
		if (!(cfg->model == GNN_MODEL_GCN || (cfg->model == GNN_MODEL_SAGE && cfg->aggr == GNN_AGGR_MEAN)))
			return p3_fail(xslice, gnn_error_set(err, GNN_ERR_UNSUPPORTED,
								 "feature slices split a linear first layer: GCN or GraphSAGE with the mean aggregator"));
		if (g->num_edge_types > 1 || g->num_node_types > 1 || g->feat_kind != GNN_FEAT_DENSE || g->node_part)
			return p3_fail(xslice, gnn_error_set(err, GNN_ERR_UNSUPPORTED,
								 "feature slices need a whole homogeneous graph with dense features on every rank"));
		if (gnn_dist_size(p3d) > 64)
			return p3_fail(xslice, gnn_error_set(err, GNN_ERR_LIMIT, "at most 64 ranks"));
		if ((st = gnn_dist_allgather(p3d, mine, sizeof(mine), shape, err)) != GNN_OK)
			return p3_fail(xslice, st);
		for (int r = 0; r < gnn_dist_size(p3d); r++)
		{
			if (shape[r][0] != g->num_nodes || shape[r][1] != g->num_edges)
				return p3_fail(xslice, gnn_error_set(err, GNN_ERR_INVALID,
									 "rank %d's graph has %lld nodes and %lld arcs, rank %d's %lld and %lld: feature slices need one graph",
									 r, (long long) shape[r][0], (long long) shape[r][1], gnn_dist_rank(p3d),
									 (long long) g->num_nodes, (long long) g->num_edges));
			p3_width[r] = (int32_t) shape[r][2];
			if (r < gnn_dist_rank(p3d))
				p3_first += p3_width[r];
			p3_all += p3_width[r];
		}
	}
	if (dist)
	{
		int			hh = mbc->halo_hops > 0 ? mbc->halo_hops : 1,
					hall[64];

		if (mbc->sampler.kind != GNN_SAMPLER_NEIGHBOR)
			return gnn_error_set(err, GNN_ERR_UNSUPPORTED,
								 "a minibatch job over several servers samples node-wise (LADIES draws each layer from the whole graph)");
		/* hops the halo does not hold are drawn by their owners: the shortest halo of any rank decides for all */
		if (gnn_dist_size(dist) > 64)
			return gnn_error_set(err, GNN_ERR_LIMIT, "at most 64 ranks train minibatches together");
		if ((st = gnn_dist_allgather(dist, &hh, sizeof(int), hall, err)) != GNN_OK)
			return st;
		for (int r = 0; r < gnn_dist_size(dist); r++)
			hh = hall[r] < hh ? hall[r] : hh;
		remote = mbc->sampler.nhops > hh;
		sampled_eval |= remote;	/* (the full pass needs every hop's edges on the part) */
		if ((st = gnn_train_dist_setup(dist, g, cfg, &mc, &halo, &part, &xfeat, &deg, err)) != GNN_OK)
			return st;
		g = &part;
		/*
		 * The batch sizes are the job's, its batches global (a rank's
		 * share is its nodes of each), and every node's draws keyed by its
		 * id: the part draws what the whole graph would (per-node streams),
		 * so a run equals a single server's with streams => node.
		 */
		mloc = *mbc;
		mloc.eval_batch_size = (int32_t) eval_batch_of(mbc);
		mloc.sampler.per_node_streams = mloc.sampler.stream_by_id = true;
		mbc = &mloc;
	}
	c = mc.out_dim;				/* 1 for regression */
	if (!be && (st = gnn_backend_create(cfg->backend, cfg->threads, cfg->cuda_so, &be, err)) != GNN_OK)
		goto done;
	compensate = mbc->sampler.kind == GNN_SAMPLER_LADIES && cfg->model == GNN_MODEL_SAGE;

	gnn_rng_seed(&rng, cfg->seed);
	/* evaluation's samplers (the pipelines'): time-aware inference's streams under temporal sampling */
	esc = mbc->sampler;
	esc.per_node_streams = temporal || mbc->sampler.per_node_streams;
	esc.first_hop = 0;
	if (p3d)
	{
		/*
		 * The weights of one model on whole rows, from the job's stream as
		 * one process draws them; this rank's layer 0 their rows of its
		 * slice
		 */
		gnn_model_config mw = mc;
		gnn_rng		other;

		mw.in_dim = p3_all;
		gnn_rng_seed(&other, cfg->seed ^ 0x7033ULL);
		if ((st = be->ops != gnn_backend_cpu() ? gnn_error_set(err, GNN_ERR_UNSUPPORTED, "feature slices run on the CPU backend")
			 : GNN_OK) != GNN_OK ||
			(st = gnn_model_create(be, &mw, &rng, &p3_whole, err)) != GNN_OK ||
			(st = gnn_model_create(be, &mc, &other, &model, err)) != GNN_OK ||
			(st = p3_copy(p3_whole, model, p3_first, true, err)) != GNN_OK)
			goto done;
		gnn_model_set_reduce(model, p3_reduce, p3d);
	}
	else if ((st = gnn_model_create(be, &mc, &rng, &model, err)) != GNN_OK)
		goto done;
	train = malloc(sizeof(int32_t) * (g->n_train + 1));
	best_w = malloc(sizeof(float) * (gnn_model_weights_count(model) + 1));
	if (dist && best_w)
	{
		/* every rank starts from rank 0's weights, whatever seed it was given */
		if ((st = gnn_model_weights_get(model, best_w, err)) != GNN_OK ||
			(st = gnn_dist_broadcast(dist, best_w, sizeof(float) * gnn_model_weights_count(model), 0, err)) != GNN_OK ||
			(st = gnn_model_weights_set(model, best_w, err)) != GNN_OK)
			goto done;
	}
	hlab = malloc(sizeof(int32_t) * (room + 1));
	hrows = malloc(sizeof(int32_t) * (room + 1));
	if (sampled_eval)
	{
		evnodes = malloc(sizeof(int32_t) * (g->num_nodes + 1));
		tnodes = malloc(sizeof(int32_t) * (g->num_nodes + 1));
	}
	hf = malloc(sizeof(float) * 2 * room);
	hd = malloc(sizeof(double) * 2 * room);
	hlog = malloc(sizeof(float) * ((size_t) room * c + 1));
	if (!train || !hlab || !hrows || !best_w || (sampled_eval && (!evnodes || !tnodes)) || !hf || !hd || !hlog)
	{
		st = gnn_error_set(err, GNN_ERR_NOMEM, "out of memory");
		goto done;
	}
	/* the splits' nodes: the evaluated ones too where evaluation is sampled */
	if (!sampled_eval || mbc->skip_eval)
		split_nodes(g, cfg, train, &ntrain, NULL, NULL, NULL, NULL);
	else
	{
		/* room for either split's two-class scores, and the test split's confusion */
		int64_t		nscores;

		split_nodes(g, cfg, train, &ntrain, evnodes, &nev, tnodes, &ntest);
		nev = eval_nodes_sample(cfg, mbc->eval_nodes, evnodes, nev);
		nscores = nev > ntest ? nev : ntest;
		stats->val_nodes = nev;
		stats->test_nodes = ntest;
		if (!regress && c == 2 && !dist)
		{
			va.score = ta.score = malloc(sizeof(double) * (nscores + 1));
			va.slab = ta.slab = malloc(sizeof(int32_t) * (nscores + 1));
			if (!va.score || !va.slab)
			{
				st = gnn_error_set(err, GNN_ERR_NOMEM, "out of memory");
				goto done;
			}
		}
		/* (over several ranks on every rank, whoever keeps it: its sum is a collective) */
		if (!regress && (cfg->keep_confusion || dist) && c <= GNN_CONFUSION_MAX_CLASSES &&
			!(ta.confusion = calloc((size_t) c * c, sizeof(int64_t))))
		{
			st = gnn_error_set(err, GNN_ERR_NOMEM, "out of memory");
			goto done;
		}
	}
	if (!dist && mbc->sampler.stream_by_id)
	{
		/*
		 * Per-node streams keyed by name: the batches are windows of the
		 * nodes in name order, as over several ranks (gnn_train_dist_global_order),
		 * so that this run is theirs
		 */
		if ((st = gnn_train_sort_by_name(g, train, ntrain, err)) != GNN_OK ||
			(evnodes && (st = gnn_train_sort_by_name(g, evnodes, nev, err)) != GNN_OK) ||
			(tnodes && (st = gnn_train_sort_by_name(g, tnodes, ntest, err)) != GNN_OK))
			goto done;
	}
	E.g = g;
	E.cfg = cfg;
	E.be = be;
	E.model = model;
	E.c = c;
	E.hlab = hlab;
	E.hlog = hlog;
	E.hf = hf;
	E.hd = hd;
	E.dlab = &dlab;
	E.drows = &drows;
	E.p3 = p3d && cfg->row_normalise ? p3d : NULL;
	if (dist)
	{
		/* the steps every rank takes: the job's batches over all ranks' training nodes */
		int64_t		n3[3] = {ntrain, nev, ntest};

		if ((st = gnn_dist_allreduce(dist, n3, 3, GNN_DIST_I64, err)) != GNN_OK)
			goto done;
		nall_test = n3[2];
		steps = (n3[0] + mbc->batch_size - 1) / mbc->batch_size;
		if (mbc->max_batches > 0 && mbc->max_batches < steps)
			steps = mbc->max_batches;
		/* (a rank without training nodes steps with the others, adding nothing) */
		ntrain_all = n3[0];
	}
	if (dist && ntrain_all > 0)
	{
		/* the global batches: windows of lists over all ranks */
		if ((st = gnn_train_dist_global_order(dist, g, train, ntrain, &gtrain, &gntrain, err)) != GNN_OK)
			goto done;
		if (sampled_eval && !mbc->skip_eval &&
			((st = gnn_train_dist_global_order(dist, g, evnodes, nev, &gval, &gnval, err)) != GNN_OK ||
			 (st = gnn_train_dist_global_order(dist, g, tnodes, ntest, &gtest, &gntest, err)) != GNN_OK))
			goto done;
		if (!(gperm = malloc(sizeof(int32_t) * (gntrain + 1))))
		{
			st = gnn_error_set(err, GNN_ERR_NOMEM, "out of memory");
			goto done;
		}
		for (int64_t i = 0; i < gntrain; i++)
			gperm[i] = (int32_t) i;
		if (remote && (st = gnn_dist_sampler_create(cfg->dist_batches ? cfg->dist_batches : dist, g, &mbc->sampler,
													 &rs, err)) != GNN_OK)
			goto done;
		if (rs && mbc->fail_batch > 0 && mbc->fail_where > 0)
			gnn_dist_sampler_fail_at(rs, mbc->fail_batch, mbc->fail_where);
	}
	if ((dist ? ntrain_all : ntrain) == 0)
	{
		st = gnn_error_set(err, GNN_ERR_EMPTY, "no %s training node of the target type %d",
						   regress ? "targeted" : "labelled", cfg->target_type);
		goto done;
	}
	for (int64_t i = 0; i < room; i++)
		hrows[i] = (int32_t) i;
	if ((st = gnn_buf_ensure(be, &dlab, sizeof(int32_t) * room, err)) != GNN_OK ||
		(st = gnn_buf_ensure(be, &drows, sizeof(int32_t) * room, err)) != GNN_OK ||
		(st = gnn_buf_ensure(be, &dlogits, sizeof(float) * room * c, err)) != GNN_OK)
		goto done;
	if ((st = gnn_backend_error(be, gnn_backend_copy_h2d(be, drows.p, hrows, sizeof(int32_t) * room), err)) != GNN_OK)
		goto done;
	gnn_optim_init(&opt, cfg->optimizer, cfg->lr, cfg->weight_decay);
	if (mbc->prefetch < 0 || mbc->prefetch > 64)
	{
		st = gnn_error_set(err, GNN_ERR_INVALID, "prefetch must be in [0, 64] batches, got %d", mbc->prefetch);
		goto done;
	}
	on_device = be->ops != gnn_backend_cpu();
	if (dist)
		snprintf(stats->cpu_batches_why, sizeof(stats->cpu_batches_why),
				 "batches over several ranks are built on the CPU");
	else if (strncmp(be->name, "cuda", 4) == 0 || (mbc->gpu && mbc->gpu->api))
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
	/* the batches' stream, drawn after the weights (over several ranks the same on each: the batches are global) */
	/* (across parts one stream on every rank: the batches are global) */
	pcfg = *cfg;
	if (p3d)
		pcfg.row_normalise = false;	/* (normalised by whole rows when computed: item_features) */
	/*
	 * (feature slices too: every rank draws every batch alike and keeps the
	 * same rows, layer 0's reduced over the ranks; across parts, no)
	 */
	if (sampled_eval && !mbc->skip_eval && !dist)
		reuse_cap = gnn_eval_reuse_rows(g, cfg, mbc, be->ops == gnn_backend_cpu(), gnn_model_config_layer_dim(&mc, 0),
										nev, ntest, false);
	if ((st = pipe_start(&pipe, g, &pcfg, mbc, dist ? gperm : train, dist ? gntrain : ntrain, gnn_rng_next(&rng),
						 cfg->epochs, be, gpu, dist ? gval : evnodes, dist ? gnval : nev,
						 dist ? gtest : tnodes, dist ? gntest : ntest, &esc, rs, gtrain, reuse_cap, err)) != GNN_OK)
		goto done;
	pipe_idle_plan(&pipe, gnn_model_config_layer_dim(&mc, 0), &esc);

	stats->prefetch = pipe.threaded ? pipe.nslots - 1 : 0;
	phase_note(heap_base, &stats->mem_setup);
	t_start = gnn_now_s();
	for (int32_t epoch = 1; epoch <= cfg->epochs; epoch++)
	{
		gnn_epoch_metrics em;
		double		t0 = gnn_now_s(),
					loss_sum = 0;
		int64_t		nb = 0,
					moved = 0,
					ep_rows = 0,
					ep_hits = 0,
					tr_correct = 0,
					tr_counted = 0;
		double		tr_ae = 0;
		const float *full_logits = NULL;	/* the full evaluation pass's */

		gnn_dist_counters c0;

		gnn_epoch_metrics_init(&em, epoch);
		em.sample_s = em.gather_s = em.compute_s = em.wait_s = 0;
		gnn_heap_phase_reset();
		gnn_dist_counters_get(dist ? dist : p3d, &c0);
		for (int64_t b0 = 0; dist ? nb < steps : b0 < ntrain; b0 += mbc->batch_size, nb++)
		{
			mb_item    *it = NULL;
			const gnn_minibatch *mb = NULL;
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
			/* over several ranks: this rank's batches may end before the others' */
			bool		have = nb < pipe.nbatch;

			if (!dist && !have)
				break;			/* max_batches */
			if (p3d)
			{
				/* every rank's vote to stop, before the step's collectives (feature slices) */
				float		vote = should_stop && should_stop(stop_arg) ? 1.0f : 0.0f;

				if ((st = gnn_dist_allreduce(p3d, &vote, 1, GNN_DIST_F32, err)) != GNN_OK)
					goto out;
				if (vote > 0)
				{
					st = gnn_error_set(err, GNN_ERR_CANCELLED, "training cancelled at epoch %d", epoch);
					goto out;
				}
			}
			else if (!dist && should_stop && should_stop(stop_arg))
			{
				st = gnn_error_set(err, GNN_ERR_CANCELLED, "training cancelled at epoch %d", epoch);
				goto out;
			}
			loss = 0;
			t1 = gnn_now_s();
			if (!have)
				goto step;		/* only the others' gradients */
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
			if (it->bs == 0)
				goto step;		/* across parts: none of this global batch's seeds is this rank's */
			/* the batches in flight: every slot about this one's size */
			{
				int64_t		inflight = item_bytes(it) * pipe.nslots;

				if (inflight > stats->mem_batches)
					stats->mem_batches = inflight;
			}
			t1 = gnn_now_s();
			if (it->gpu)
				x = it->gx;		/* the batcher's: not owned */
			else
				st = item_features(be, g, it, &dfeat, &x, &x_owned, p3d && cfg->row_normalise ? p3d : NULL, err);
			em.gather_s += gnn_now_s() - t1;
			t1 = gnn_now_s();
			for (int64_t i = 0; st == GNN_OK && !regress && i < it->bs; i++)
				hlab[i] = g->labels[seeds[i]];
			/* made: the blocks uploaded here, freed after the step (GPU-built ones are the batcher's) */
			for (int l = 0; st == GNN_OK && l < L; l++)
				if (it->gpu)
					blocks[l] = &it->gblk[l];
				else if ((st = batch_block(be, &mb->blocks[l], cfg->model, compensate, &wbuf, &wcap, &dblk[l], err)) == GNN_OK)
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
				if (k > 0)
				{
					tr_ae += bmae * k;
					tr_counted += k;
				}
			}
			else if (st == GNN_OK)
			{
				int64_t		bc = 0,
							bn = 0;

				st = gnn_backend_error(be, gnn_backend_xent(be, logits, it->bs, c, dlab.p, drows.p, it->bs, dlogits.p,
															&loss, &bc, &bn), err);
				tr_correct += bc;
				tr_counted += bn;
			}
			if (st == GNN_OK)
				st = gnn_model_backward(model, dlogits.p, err);
	step:
			if (dist && st == GNN_OK)
			{
				/*
				 * the global batch's mean gradient: each rank's mean over its
				 * seeds weighed by them; with them, the loss and the vote
				 * to stop (any rank's stop is every rank's)
				 */
				float		w = have ? (float) it->bs : 0.0f;
				float		extra[3] = {w, loss * w, should_stop && should_stop(stop_arg) ? 1.0f : 0.0f};

				st = gnn_train_dist_sum_grads(dist, model, w, extra, 3, &gbuf, &gcap, err);
				if (st == GNN_OK && extra[2] > 0)
					st = gnn_error_set(err, GNN_ERR_CANCELLED, "training cancelled at epoch %d", epoch);
				if (st == GNN_OK && extra[0] > 0)
				{
					st = gnn_train_dist_scale_grads(model, 1.0f / extra[0], err);
					loss = extra[1] / extra[0];
				}
			}
			if (st == GNN_OK)
				st = gnn_optim_step(&opt, model, err);
			for (int l = 0; l < made; l++)
				gnn_dblock_free(&dblk[l]);
			if (x_owned)
				gnn_dfeat_free(&x);
			if (st == GNN_OK && have)
			{
				stats->sampled_edges += it->gpu ? it->gst.edges : mb->sampled_edges;
				stats->input_nodes += it->gpu ? it->gst.rows : mb->n_input;
			}
			/* a slot the producer refills on its own stream: this one must be done reading it */
			if (have && it->gpu && pipe.threaded && st == GNN_OK)
				st = gnn_backend_error(be, gnn_backend_sync(be), err);
			if (have)
				pipe_done(&pipe);
			if (st != GNN_OK)
				goto out;
			em.compute_s += gnn_now_s() - t1;
			stats->batches += have;
			loss_sum += loss;
		}
		phase_note(heap_base, &stats->mem_training);
		gnn_heap_phase_reset();
		if (dist || p3d)
		{
			/* the training steps' collectives (evaluation's sums are a few bytes an epoch) */
			gnn_train_dist_epoch_comm(dist ? dist : p3d, &c0, &em);
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

		/*
		 * Evaluation (skipped: the metrics are unknown).  Sampled: the
		 * training accuracy is the epoch's batches' (as the weights moved,
		 * with dropout), the validation split's batches follow in the
		 * stream, the test split waits for the kept weights.  Full: one
		 * pass over the whole graph measures every split.
		 */
		em.train_acc = em.val_loss = em.val_acc = em.test_loss = em.test_acc = NAN;
		em.val_auc = em.test_auc = em.val_mae = em.test_mae = em.val_rmse = em.test_rmse = NAN;
		if (!mbc->skip_eval && sampled_eval)
		{
			double		t1 = gnn_now_s();

			eval_acc_reset(&va, c);
			/* (over several ranks the vote to stop comes after, with the sums) */
			if ((st = eval_from_pipe(&E, &pipe, pipe.neval, &dfeat, dist || p3d ? NULL : should_stop, stop_arg, &va,
									 stats, err)) != GNN_OK)
			{
				if (st == GNN_ERR_CANCELLED)
					st = gnn_error_set(err, GNN_ERR_CANCELLED, "training cancelled at epoch %d", epoch);
				goto out;
			}
			if (dist)
			{
				double		extra[4] = {(double) tr_correct, (double) tr_counted, tr_ae,
					should_stop && should_stop(stop_arg) ? 1.0 : 0.0};

				if ((st = eval_acc_combine(dist, &va, c, extra, 4, err)) != GNN_OK)
					goto out;
				if (extra[3] > 0)
				{
					st = gnn_error_set(err, GNN_ERR_CANCELLED, "training cancelled at epoch %d", epoch);
					goto out;
				}
				tr_correct = (int64_t) llround(extra[0]);
				tr_counted = (int64_t) llround(extra[1]);
				tr_ae = extra[2];
			}
			if (tr_counted > 0)
				em.train_acc = regress ? (float) -(tr_ae / tr_counted) : (float) ((double) tr_correct / tr_counted);
			eval_acc_metrics(&va, regress, false, &em);
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
			if (dist)
			{
				/* the part holds its own nodes' whole neighbourhoods (halo_hops >= layers): measured here, summed */
				if (!nall_ready)
				{
					for (int sp = 1; sp < 4; sp++)
						nall[sp] = d.nrows[sp];
					if ((st = gnn_dist_allreduce(dist, nall, 4, GNN_DIST_I64, err)) != GNN_OK)
						goto out;
					nall_ready = true;
				}
				if ((st = gnn_train_dist_metrics(dist, d.nrows, nall, &em, err)) != GNN_OK)
					goto out;
			}
			em.eval_s = gnn_now_s() - t1;
			stats->eval_s += em.eval_s;
			full_logits = logits;
		}

		phase_note(heap_base, &stats->mem_eval);
		if (gnn_selector_step(&sel, &em))
		{
			if ((st = gnn_model_weights_get(model, best_w, err)) != GNN_OK ||
				(full_logits && cfg->keep_confusion && !dist &&
				 (st = gnn_eval_keep_confusion(be, &d, full_logits, g->num_nodes, c, res, err)) != GNN_OK))
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

	/*
	 * Sampled evaluation: the test split, once, on the kept weights.  Its
	 * batches follow the last epoch's in the stream; a run stopped early
	 * (patience) is elsewhere in the stream, and gets a pipeline of its own.
	 */
	gnn_heap_phase_reset();
	if (sampled_eval && !mbc->skip_eval && sel.have_best && (dist ? nall_test : ntest) > 0)
	{
		double		t1 = gnn_now_s();

		if ((st = gnn_model_weights_set(model, best_w, err)) != GNN_OK)
			goto out;
		eval_acc_reset(&ta, c);
		if (pipe.head != pipe.train_total)
		{
			stats->eval_rows_ready += pipe.ready_rows;
			stats->eval_seeds_read += pipe.pre_gnode > 0 ? pipe.pre_gnode : 0;
			pipe_stop(&pipe);
			if ((st = pipe_start(&pipe, g, &pcfg, mbc, NULL, 0, 0, 1, be, NULL, NULL, 0, dist ? gtest : tnodes,
								 dist ? gntest : ntest, &esc, rs, gtrain, reuse_cap, err)) != GNN_OK)
				goto out;
		}
		if ((st = eval_from_pipe(&E, &pipe, pipe.ntestb, &dfeat, dist || p3d ? NULL : should_stop, stop_arg, &ta,
								 stats, err)) != GNN_OK)
			goto out;
		if (dist)
		{
			double		stop = should_stop && should_stop(stop_arg) ? 1.0 : 0.0;

			if ((st = eval_acc_combine(dist, &ta, c, &stop, 1, err)) != GNN_OK)
				goto out;
			if (stop > 0)
			{
				st = gnn_error_set(err, GNN_ERR_CANCELLED, "training cancelled while testing");
				goto out;
			}
		}
		eval_acc_metrics(&ta, regress, true, &res->best);
		stats->eval_s += gnn_now_s() - t1;
		phase_note(heap_base, &stats->mem_eval);
		if (ta.confusion && ta.counted > 0 && cfg->keep_confusion)
		{
			res->confusion = ta.confusion;
			res->confusion_classes = c;
			ta.confusion = NULL;
		}
	}
out:
	stats->eval_rows_ready += pipe.ready_rows;
	stats->eval_seeds_read += pipe.pre_gnode > 0 ? pipe.pre_gnode : 0;
	pipe_stop(&pipe);
	res->seconds = gnn_now_s() - t_start;
	res->other_s = res->seconds;
	/* the kept weights matter only to a model that is handed back */
	if (st == GNN_OK && sel.have_best)
		st = gnn_model_weights_set(model, best_w, err);
	/* feature slices: the whole model, layer 0's rows from every rank (on every rank: a collective) */
	if (st == GNN_OK && p3d)
		st = p3_gather(p3d, model, p3_whole, p3_width, err);
	if (st == GNN_OK && model_out)
	{
		if (p3d)
		{
			gnn_model_free(model);
			model = p3_whole;
			p3_whole = NULL;
		}
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
	free(evnodes);
	free(tnodes);
	free(hf);
	free(hd);
	free(hlog);
	free(va.score);
	free(va.slab);
	free(ta.confusion);
	gnn_buf_free(be, &dlab);
	gnn_buf_free(be, &drows);
	gnn_buf_free(be, &dlogits);
	gnn_eval_data_free(be, &d);
	gnn_model_free(model);
	gnn_model_free(p3_whole);
	if (!be_in)
		gnn_backend_destroy(be);
	free(xslice);
	if (rs)
	{
		gnn_dist_sample_stats ds;

		gnn_dist_sampler_stats(rs, &ds);
		stats->remote_sampling = true;
		stats->remote_adj_bytes = ds.adj_bytes;
		stats->remote_feat_bytes = ds.feat_bytes;
		stats->remote_nodes = ds.remote_nodes;
		stats->remote_rows = ds.remote_rows;
	}
	gnn_halo_plan_free(&halo);
	gnn_dist_sampler_free(rs);
	free(gtrain);
	free(gval);
	free(gtest);
	free(gperm);
	free(xfeat);
	free(deg);
	free(gbuf);
	return st;
}
