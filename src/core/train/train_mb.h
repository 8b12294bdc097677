/*
 * train_mb.h: minibatch training with sampled blocks (node classification
 * and regression) and unsupervised link prediction.
 *
 * gnn_train_minibatch follows gnn_train_full's conventions (config, progress
 * and should_stop callbacks, result, best-epoch weights restored) but each
 * epoch walks the shuffled training nodes in batches: sample blocks
 * (sample.h), gather the batch's input features once, forward / backward /
 * step on the batch.  should_stop is polled between minibatches.
 * Evaluation uses full neighbourhoods over all nodes, computed layer by layer
 * (the full-graph forward), as DGL and PyG do, so accuracies are comparable
 * with full-batch training.
 *
 * Typed graphs: the sampler's blocks go to the model as they are (relations
 * and destination node types included, sampler.type_fanouts per relation),
 * and the nodes trained and measured on are the labelled ones of
 * cfg->target_type.  Temporal sampling (sampler.temporal): each training seed
 * is sampled at its own time g->time[seed] (no bound when it has none), and
 * evaluation, which must not see the future either, runs sampled batches
 * under the same rule with a fixed seed instead of the full-neighbourhood
 * pass.
 *
 * Regression (cfg->task): as gnn_train_full's, one output, the seeds are the
 * nodes of a split with a finite g->targets (of cfg->target_type), the loss
 * is the batch's mean squared error, and the metrics are filled as
 * full-batch regression fills them (MSE as loss, MAE, RMSE, -MAE as
 * accuracy), on whichever evaluation pass classification would use.
 */
#ifndef GNN_TRAIN_MB_H
#define GNN_TRAIN_MB_H

#include "sample/sample.h"
#include "train/train.h"

typedef struct gnn_minibatch_config
{
	gnn_sampler_config sampler; /* nhops must equal the model's layers */
	int32_t		batch_size;		/* seed nodes per batch */
	int32_t		max_batches;	/* per epoch, 0 = all (benchmarks extrapolate) */
	bool		skip_eval;		/* no evaluation pass (benchmarks) */
	/*
	 * Evaluation on sampled neighbourhoods (the training fan-outs, fixed
	 * sampling seeds: the same batches every epoch): after each epoch the
	 * validation split only (eval_nodes of it when > 0 and fewer, a seeded
	 * sample fixed for the job), its batches made by the pipeline like
	 * training's; the test split once, on the kept weights.  Typed and
	 * temporal training always do.  Without it, each epoch runs the
	 * full-graph pass over every node (all splits, full neighbourhoods): it
	 * holds every node's features and activations in the process.
	 */
	bool		sampled_eval;
	int64_t		eval_nodes;
	/*
	 * seeds per evaluation batch (0: batch_size).  A forward pass holds no
	 * gradients, and neighbourhoods overlap: a larger batch gathers and
	 * transforms each shared neighbour once (on a 1M-node R-MAT graph, 4096
	 * seeds a batch gathered 0.61x the feature rows of 512, 16384 0.37x)
	 */
	int32_t		eval_batch_size;
	/*
	 * An evaluation batch's dense feature rows on the CPU are gathered
	 * partly by the producer, the rest by the computing thread before its
	 * forward pass: a forward pass is a third of a training step, and with
	 * the CPU's AVX-512 GEMM the producer's sampling and gathering became
	 * evaluation's bottleneck.  0: the share follows the two threads'
	 * measured times; (0, 1]: this share to the producer (tests; 1: all of
	 * it, as training).  Results do not depend on it.
	 */
	double		eval_gather_share;
	/*
	 * Evaluation keeps the layer-0 rows it computed during a pass and reuses
	 * them in its later batches: on a power-law graph a test split's
	 * neighbourhoods share their hubs across batches, not only within one.
	 * Every evaluated node's neighbourhood is then drawn from per-node
	 * streams (sample.h) under one seed for the pass, so a row is the same
	 * in whichever batch it is computed: reusing it changes no result,
	 * only what is computed (the first L-1 hops of a batch are sampled,
	 * and the last hop, its features and layer 0 only for the nodes
	 * without a kept row).  eval_reuse_rows: the most rows a pass keeps (0:
	 * gnn_eval_reuse_rows's default, -1: none, as before: per-batch
	 * streams).  Sampled evaluation on the CPU backend, node-wise
	 * sampling, models of 2 layers or more whose rows do not depend on
	 * their batch (not GCN, whose normalisation reads the batch's
	 * column sums), not time-aware, not over parts (feature slices
	 * are: every rank draws every batch alike and keeps the same rows),
	 * and not with per-node streams asked for training (whose evaluation
	 * streams follow its batches).
	 */
	int64_t		eval_reuse_rows;
	/*
	 * temporal sampling: with has_as_of, every seed samples at time as_of
	 * (training "as of" a date); else at its own (gnn_graph_seed_time)
	 */
	bool		has_as_of;
	int64_t		as_of;

	/*
	 * The pipeline: prefetch batches are sampled and gathered ahead of the
	 * one being computed, on a thread of their own (0: in line, one after
	 * the other).  Results do not depend on it: every batch's sampling
	 * and dropout seeds come from one stream drawn in batch order.
	 */
	int32_t		prefetch;
	/* tests: the batch producer fails at its fail_batch-th batch (1-based,
	 * counted over the whole run; 0: never) */
	int64_t		fail_batch;
	/* tests: the computing thread finishes what it does while it waits
	 * (evaluation's kept rows made ready) before it takes its first batch */
	bool		idle_first;
	/*
	 * tests, sampling across parts: where in that batch the failure is -
	 * 0 before it, h + 1 in hop h's exchanges (the requests sent, before
	 * the answers), nhops + 1 in the feature fetch (the ids sent, before
	 * the rows): the other ranks are then waiting mid-exchange
	 */
	int32_t		fail_where;

	/*
	 * The CUDA backend builds batches on the GPU (gpu_batch.h) unless
	 * cpu_batches is set or the job needs what only the CPU sampler does
	 * (gnn_gpu_batch_unsupported); gpu: its cache and graph budgets.
	 */
	bool		cpu_batches;
	struct gnn_gpu_batch_config *gpu;	/* NULL: defaults */

	/*
	 * Over several ranks (cfg->dist), the graph is one part of a partitioned
	 * graph whose nodes within halo_hops - 1 hops of its own keep all their
	 * edges (gnn.load_graph's halo_hops): the sampler draws at most that
	 * many hops, each rank from its own training nodes, exactly as on the
	 * whole graph.  The halo's features come from their owners once, at the
	 * start.  batch_size is the global batch: every rank takes its share of
	 * it (its training nodes over all ranks'), all ranks step together
	 * (ceil(all training nodes / batch_size) steps an epoch, a rank out of
	 * batches adding nothing), and each step's gradient is the mean over
	 * the global batch (one allreduce, which also carries the loss and any
	 * rank's stop).  Evaluation sums each rank's measurement of its own
	 * nodes.  Time-aware sampling too: the halo's rows carry their times
	 * (a schema part keeps them), so the admissible neighbours are the
	 * whole graph's.
	 */
	int32_t		halo_hops;

	/*
	 * Feature slices (P3, OSDI'21; with cfg->dist): every rank holds the
	 * whole graph's topology and a slice of its feature columns (its graph's
	 * feat_dim; the slices in rank order make the whole row).  Every rank
	 * draws every batch (the same draws: the same graph and streams) and
	 * computes layer 0 on its slice; the partial products are summed over
	 * the ranks (one allreduce of the batch's layer-0 rows a step,
	 * gnn_model_set_reduce), and the layers above run on every rank alike,
	 * so no gradient is summed: each rank's slice of layer 0's weights
	 * takes its share of the one gradient.  Features never move.  GCN and
	 * GraphSAGE (mean); the CPU backend.  With dropout 0 a run equals one
	 * process on the whole features (input dropout draws each slice's
	 * masks by its own positions).  The model handed back is whole: layer
	 * 0's slices gathered from every rank.
	 */
	bool		feature_slices;
	/*
	 * With feature_slices: every rank's graph holds whole rows (the same
	 * graph on every server, as gnn.train's options.feature_slices wants),
	 * and rank r computes on columns [r F / K, (r + 1) F / K) of them, a
	 * copy of its slice taken at the start: the bytes P3 saves, not the
	 * memory.
	 */
	bool		slice_whole_rows;
} gnn_minibatch_config;

/* Where the time went (optional output). */
typedef struct gnn_minibatch_stats
{
	int64_t		batches;
	int64_t		sampled_edges;
	int64_t		input_nodes;	/* summed over batches */
	double		sample_s;
	double		gather_s;		/* feature gather + upload */
	double		compute_s;		/* block upload, forward, loss, backward, step */
	double		wait_s;			/* computing waited for the next batch (pipeline) */
	double		eval_s;
	/* sampled evaluation: the validation nodes measured after each epoch
	 * (eval_nodes of the split, or all of it) and the test nodes measured
	 * once; 0 with the full pass */
	int64_t		val_nodes;
	int64_t		test_nodes;
	/* evaluation's feature rows that the computing thread gathered, not
	 * the producer (eval_gather_share) */
	int64_t		eval_rows_shared;
	/* evaluation's layer-0 rows taken from earlier batches of their pass,
	 * and computed (eval_reuse_rows; both 0 without reuse) */
	int64_t		eval_rows_reused;
	int64_t		eval_rows_computed;
	/* of the rows evaluation keeps, those whose memory the computing
	 * thread touched while it waited for batches, ahead of the passes */
	int64_t		eval_rows_ready;
	/* validation seeds whose graph pages (in-list, features, those of
	 * neighbours all drawn) the computing thread read while it waited */
	int64_t		eval_seeds_read;
	int32_t		prefetch;		/* batches made ahead on the producer's thread (0: in line) */
	/* where batches were built: on the GPU, or (the CUDA backend only) why
	 * not there */
	char		cpu_batches_why[200];
	bool		gpu_batches;
	int64_t		cache_rows;		/* GPU feature cache: rows held */
	int64_t		feature_rows;	/* feature rows gathered, all batches */
	int64_t		cache_hits;		/* of them served by the GPU cache */
	int64_t		h2d_bytes;		/* bytes moved host -> device for batches */
	/*
	 * Where the loop's memory went (heap.h; 0 when the heap is not
	 * tracked): the most it held above what the process held when it began,
	 * in each phase - setup (model, optimiser, node lists, samplers),
	 * training (the batches in flight and a batch's activations and
	 * gradients), evaluation (validation and test batches, or the full
	 * pass) - and the batches in flight at their largest (the pipeline's
	 * sampled blocks and gathered features).
	 */
	int64_t		mem_setup;
	int64_t		mem_training;
	int64_t		mem_eval;
	int64_t		mem_batches;
	/*
	 * Sampling across parts (a part with fewer hops of halo than the job
	 * samples): what this rank's batches moved to and from other ranks -
	 * sampling requests and answers, feature ids and rows - the nodes whose
	 * neighbours another rank drew and the feature rows another rank sent.
	 */
	bool		remote_sampling;
	int64_t		remote_adj_bytes;
	int64_t		remote_feat_bytes;
	int64_t		remote_nodes;
	int64_t		remote_rows;
} gnn_minibatch_stats;

/*
 * The layer-0 rows evaluation keeps per pass (eval_reuse_rows): none (0)
 * where reuse does not apply (above; on_cpu: the CPU backend), else
 * eval_reuse_rows when > 0, or within a budget of 128 MB
 * (GNN_EVAL_REUSE_BYTES), and never more than a pass can keep: a pass over
 * n seeds keeps only the rows of nodes it is likely to draw again (an
 * in-degree of 1 / (phi * min(1, f / mean in-degree)) or more, phi the
 * fraction of the nodes it reaches before the last hop, f that hop's
 * fan-out), nor more than its seeds times (1 + fan-out) over the first L-1
 * hops.  nval, ntest: the validation and test nodes measured.  d0: layer
 * 0's width.  count: also no more than the nodes of such a degree (a
 * pass over every node; gnn.estimate's count, where training's slots fill
 * only as rows are kept).  Training and gnn.estimate both size it here.
 */
#define GNN_EVAL_REUSE_BYTES ((int64_t) 128 << 20)
int64_t		gnn_eval_reuse_rows(const gnn_graph *g, const gnn_train_config *cfg, const gnn_minibatch_config *mbc,
								bool on_cpu, int32_t d0, int64_t nval, int64_t ntest, bool count);

gnn_status	gnn_train_minibatch(const gnn_graph *g, const gnn_train_config *cfg,
								const gnn_minibatch_config *mbc, gnn_backend *be,
								gnn_progress_fn progress, void *progress_arg,
								gnn_should_stop_fn should_stop, void *stop_arg,
								gnn_model **model_out, gnn_train_result *res,
								gnn_minibatch_stats *stats, gnn_error *err);

/*
 * The GPU batch builder (sample/gpu_batch.h) for this job: its plain spec
 * filled from cfg, mbc and the job's estimate (train/gpu_batch_spec.c).
 * gnn_gpu_batch_unsupported: NULL when the GPU can build the batches, else
 * why not; gnn_gpu_batcher_create: gnn_gpu_batcher_open with that spec.
 */
struct gnn_gpu_batcher;
struct gnn_gpu_batch_config;
struct gnn_gpu_batch_spec;
void		gnn_gpu_batch_spec_of(const gnn_graph *g, const gnn_train_config *cfg, const gnn_minibatch_config *mbc,
								  bool estimate, struct gnn_gpu_batch_spec *spec);
const char *gnn_gpu_batch_unsupported(const gnn_backend *be, const gnn_graph *g, const gnn_train_config *cfg,
									  const gnn_minibatch_config *mbc);
gnn_status	gnn_gpu_batcher_create(gnn_backend *be, const gnn_graph *g, const gnn_train_config *cfg,
								   const gnn_minibatch_config *mbc, const struct gnn_gpu_batch_config *gc,
								   const int32_t *train, int64_t ntrain, size_t model_bytes, int nslots,
								   struct gnn_gpu_batcher **out, gnn_error *err);

/* link prediction: train_linkpred.h */
#include "train/train_linkpred.h"

#endif							/* GNN_TRAIN_MB_H */
