/*
 * train.h: full-batch node classification over a gnn_graph.
 *
 * Each epoch: a training forward (dropout on), cross-entropy on the train
 * nodes, backward, one optimiser step; then an evaluation forward (dropout
 * off) that gives loss and accuracy on train / val / test.  Early stopping
 * watches the validation loss with a patience; the weights of the best
 * epoch by the selection rule are kept on the host and restored at the end,
 * and the reported test accuracy is the one of that epoch.  A split is
 * measured on its labelled nodes; a split without any has NAN loss and
 * accuracy, and without validation nodes every epoch is kept and patience
 * never stops training (eval.h, gnn_selector).  With the same seed, a CPU
 * run is bit-for-bit repeatable (deterministic kernels, dropout masks from
 * counter hashes).
 */
#ifndef GNN_TRAIN_H
#define GNN_TRAIN_H

#include "nn/optim.h"

/* What makes an epoch "best" (and resets the patience counter). */
typedef enum gnn_select
{
	GNN_SELECT_VAL_LOSS = 0,	/* lowest validation loss */
	GNN_SELECT_VAL_ACC = 1,		/* highest validation accuracy, ties by lower loss */
	GNN_SELECT_GAT = 2			/* GAT paper: patience resets when val acc or loss improves;
								 * weights kept when both do */
} gnn_select;

/* What a node-level loop learns. */
typedef enum gnn_task
{
	GNN_TASK_CLASSIFY = 0,		/* labels, cross-entropy; accuracy (and AUROC when binary) */
	GNN_TASK_REGRESS = 1		/* g->targets, mean squared error; MAE and RMSE */
} gnn_task;

typedef struct gnn_train_config
{
	gnn_model_kind model;
	gnn_aggr	aggr;
	int32_t		hidden;
	int32_t		layers;
	int32_t		heads;
	int32_t		out_heads;
	float		dropout;
	float		attn_dropout;
	float		lr;
	float		weight_decay;
	int32_t		epochs;
	int32_t		patience;		/* 0 = no early stopping */
	gnn_optim_kind optimizer;
	gnn_select	select;
	uint64_t	seed;
	int32_t		threads;		/* 0 = all cores */
	char		backend[16];	/* "cpu" or "cuda" */
	const char *cuda_so;		/* NULL: GNN_CUDA_SO or the loader path */
	bool		row_normalise;	/* divide feature rows by their sum */
	bool		timing;			/* keep the per-op-category time breakdown */
	gnn_task	task;			/* default GNN_TASK_CLASSIFY */
	int32_t		num_bases;		/* RGCN basis count (0 = full weights per relation) */
	int32_t		target_type;	/* node type trained on (typed graphs); 0 for homogeneous */
	/*
	 * Data-parallel full-batch training over the parts of a partitioned
	 * graph (issue #16): every rank calls gnn_train_full on its part with
	 * the same config and the ranks' mesh here; the halo's rows move at
	 * every layer, gradients are summed over ranks, and every rank ends with
	 * the model one server would train on the whole graph (dropout draws its
	 * masks per rank).  NULL: one server.
	 */
	struct gnn_dist *dist;
	/*
	 * Minibatches sampled across parts: a second mesh of the same ranks
	 * for the batches' exchanges, so that the pipeline's producer makes
	 * them ahead, overlapped with the steps (their allreduces are on
	 * dist).  NULL: batches are made in line, on dist.
	 */
	struct gnn_dist *dist_batches;
	/* keep the test split's confusion on the kept weights (res->confusion; the caller frees it) */
	bool		keep_confusion;
} gnn_train_config;

/* Published hyper-parameters for a kind (K&W for GCN/SAGE, GAT paper for GAT). */
void		gnn_train_config_default(gnn_model_kind kind, gnn_train_config *cfg);
/* GNN_ERR_INVALID with a message listing the accepted values. */
gnn_status	gnn_train_config_check(const gnn_train_config *cfg, gnn_error *err);
/* The model configuration the training config implies for given widths
 * (one relation, one node type: a homogeneous graph). */
gnn_status	gnn_train_model_config(const gnn_train_config *cfg, int32_t in_dim, int32_t classes,
								   gnn_model_config *mc, gnn_error *err);
/* ... for graph g: its feature width, classes (1 output for regression),
 * relations and node types, and cfg's num_bases. */
gnn_status	gnn_train_model_config_for(const gnn_train_config *cfg, const gnn_graph *g,
									   gnn_model_config *mc, gnn_error *err);
/* Parse names: "gcn"/"graphsage"/"sage"/"gat"/"rgcn"/"hetero_sage"/"hsage",
 * "mean"/"pool", "adam"/"sgd", "loss"/"acc"/"gat"; return false on an
 * unknown name. */
bool		gnn_parse_model_kind(const char *s, gnn_model_kind *out);
bool		gnn_parse_aggr(const char *s, gnn_aggr *out);
bool		gnn_parse_optim(const char *s, gnn_optim_kind *out);
bool		gnn_parse_select(const char *s, gnn_select *out);

/* Accuracies and evaluation losses are NAN for a split without labelled nodes. */
typedef struct gnn_epoch_metrics
{
	int32_t		epoch;			/* 1-based */
	float		train_loss;		/* of the training (dropout) pass */
	float		train_acc;		/* eval pass */
	float		val_loss;
	float		val_acc;
	float		test_loss;
	float		test_acc;
	/* binary classification: AUROC; regression: MAE and RMSE (NAN otherwise).
	 * For regression the *_acc fields hold -MAE, so "higher is better" rules
	 * (selection by accuracy) still read them the right way. */
	float		val_auc;
	float		test_auc;
	float		val_mae;
	float		test_mae;
	float		val_rmse;
	float		test_rmse;
	bool		best;			/* this epoch became the kept one */
	double		seconds;		/* wall time of the epoch */
	/*
	 * Where the epoch's time went (NAN: not measured by this trainer):
	 * sampling and gathering batches (on the pipeline's thread when it
	 * runs ahead), computing (blocks, forward, loss, backward, step),
	 * waiting for the next batch, and evaluating.
	 */
	double		sample_s;
	double		gather_s;
	double		compute_s;
	double		wait_s;
	double		eval_s;
	/*
	 * Minibatch training on a GPU: the share of feature rows the device
	 * cache served (NAN: no cache) and the bytes batches moved from host
	 * to device (features, blocks; -1: not measured, the CPU backend).
	 */
	double		cache_hit_rate;
	int64_t		h2d_bytes;
	/*
	 * Distributed full batch (cfg.dist; NAN and -1 otherwise): the training
	 * step's seconds inside allreduce (the gradients, the loss, the stop
	 * vote) and inside alltoallv (the halo's rows forward, their gradients
	 * back), waits for slower ranks included, and the bytes this rank put
	 * into them (allreduce: the buffers; alltoallv: rows sent to other
	 * ranks).  compute_s includes them.
	 */
	double		allreduce_s;
	double		alltoallv_s;
	int64_t		allreduce_bytes;
	int64_t		alltoallv_bytes;
} gnn_epoch_metrics;

/* em zeroed for epoch, its time splits NAN (not measured) */
void		gnn_epoch_metrics_init(gnn_epoch_metrics *em, int32_t epoch);

typedef void (*gnn_progress_fn) (void *arg, const gnn_epoch_metrics *m);

typedef struct gnn_train_result
{
	int32_t		epochs_run;
	int32_t		best_epoch;
	gnn_epoch_metrics best;		/* metrics of the kept epoch */
	bool		stopped_early;
	double		seconds;		/* whole training loop */
	double		agg_s;			/* backend time in sparse aggregation */
	double		dense_s;		/* ... in dense products */
	double		other_s;		/* everything else (loop total minus the two) */
	/*
	 * A classifier's test split on the kept weights: confusion[true * C +
	 * predicted] over confusion_classes = C classes (malloc'd, NULL when not
	 * measured: not asked for (cfg->keep_confusion), regression, no test
	 * node, more than 1000 classes, several servers); gnn_train_result_free
	 * releases it.
	 */
	int64_t    *confusion;
	int32_t		confusion_classes;
} gnn_train_result;

void		gnn_train_result_free(gnn_train_result *res);

/*
 * Train on g (classification: g's labels; regression, cfg->task: g's
 * targets, one output, mean squared error).  be: a backend to use, or NULL to create one from cfg (and
 * destroy it at the end).  model_out (optional) receives the trained model
 * with the best weights restored (owned by the caller, uses be, so the
 * caller must keep be alive - pass be non-NULL when asking for the model).
 * Returns GNN_ERR_CANCELLED when should_stop said so (result filled up to
 * then), GNN_ERR_EMPTY when the graph has no labels, no features or no
 * labelled training node.
 */
gnn_status	gnn_train_full(const gnn_graph *g, const gnn_train_config *cfg, gnn_backend *be,
						   gnn_progress_fn progress, void *progress_arg,
						   gnn_should_stop_fn should_stop, void *stop_arg,
						   gnn_model **model_out, gnn_train_result *res, gnn_error *err);

/*
 * Inference on all nodes in eval mode: with layer = -1 the logits
 * (n x classes), or with softmax the class probabilities; with layer >= 0
 * that layer's output (embeddings; layer = layers-2 is the last hidden
 * layer; layer = layers-1 is the output layer's raw scores, the logits, so
 * a 1-layer model's layer 0 equals layer -1 without softmax).  Any other
 * layer is GNN_ERR_INVALID.  host_out gets rows x cols floats (allocated by
 * the caller: rows = g->num_nodes, cols = gnn_model_layer_dim or classes).
 * softmax applies to layer -1 only.
 */
gnn_status	gnn_model_infer(gnn_model *m, const gnn_graph *g, bool row_normalise, int layer,
							bool softmax, float *host_out, gnn_error *err);

/*
 * The same over the parts of a partitioned graph, one rank each (d; a
 * collective): every row of this rank's part (own and halo) as the whole
 * graph's pass gives it, the halo's rows of every layer's input coming from
 * their owners.  The CPU backend; not node2vec.
 */
gnn_status	gnn_model_infer_dist(struct gnn_dist *d, gnn_model *m, const gnn_graph *g, bool row_normalise,
								 int layer, bool softmax, float *host_out, gnn_error *err);

/*
 * A time-aware model's rows over the parts (d; a collective): the rows of
 * this rank's own nodes (host_out: g->num_nodes x cols, own rows written),
 * each sampled as gnn_model_infer_temporal samples it on the whole graph
 * with c->sampler.stream_by_id, hop by hop across the parts (every node's
 * draws keyed by its id, drawn by its owner; the inputs' features from
 * theirs): the whole graph's rows.  c->also_out is not taken.
 */
struct gnn_infer_temporal_config;
gnn_status	gnn_model_infer_temporal_dist(struct gnn_dist *d, gnn_model *m, const gnn_graph *g,
										  const struct gnn_infer_temporal_config *c, int layer, bool softmax,
										  float *host_out, gnn_error *err);

#endif							/* GNN_TRAIN_H */
