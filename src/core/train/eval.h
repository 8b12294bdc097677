/*
 * eval.h: what every training loop needs to evaluate on the whole graph: the
 * graph as one block, its input features, labels and the rows of each split,
 * on a backend; and the loss and accuracy of one split from logits.
 */
#ifndef GNN_EVAL_H
#define GNN_EVAL_H

#include "train/train.h"

typedef struct gnn_eval_data
{
	gnn_dblock	blk;			/* in-edges of every node */
	gnn_dfeat	x;				/* input features */
	int32_t    *labels;			/* backend memory; NULL when unlabelled */
	int32_t    *rows[4];		/* backend memory, by GNN_SPLIT_* */
	int64_t		nrows[4];
	/* regression and AUROC are measured on the host */
	gnn_task	task;
	int32_t		classes;		/* the graph's classes (AUROC when 2) */
	const float *targets;		/* host, the graph's (regression) */
	const int32_t *hlabels;		/* host, the graph's */
	int32_t    *hrows[4];		/* host copies of rows */
	float	   *hout;			/* host scratch: n x max(classes, 1) */
	float	   *hgrad;			/* host scratch: n (regression) */
	double	   *hs;				/* host scratch: n scores / predictions of a split */
	double	   *ht;				/* host scratch: n targets of a split */
	int32_t    *hl;				/* host scratch: n labels of a split */
} gnn_eval_data;

/*
 * For classification (task GNN_TASK_CLASSIFY) a split's rows are its
 * labelled nodes; for regression, its nodes with a target (not NAN).
 * gnn_eval_data_create is gnn_eval_data_create_task for classification.
 */
gnn_status	gnn_eval_data_create(gnn_backend *be, const gnn_graph *g, bool row_normalise,
								 gnn_eval_data *d, gnn_error *err);
gnn_status	gnn_eval_data_create_task(gnn_backend *be, const gnn_graph *g, bool row_normalise,
									  gnn_task task, gnn_eval_data *d, gnn_error *err);
/* for forward passes only (evaluation during minibatch training): features on disk are streamed (gnn_dfeat_stream) */
/*
 * As gnn_eval_data_create_task, with GCN's source degrees given (NULL: the
 * graph's): one part of a partitioned graph passes its halo's degrees in the
 * whole graph, which the part's own arcs undercount.
 */
gnn_status	gnn_eval_data_create_normed(gnn_backend *be, const gnn_graph *g, bool row_normalise,
										gnn_task task, const double *deg_src, gnn_eval_data *d,
										gnn_error *err);
gnn_status	gnn_eval_data_create_forward(gnn_backend *be, const gnn_graph *g, bool row_normalise,
										 gnn_task task, gnn_eval_data *d, gnn_error *err);
void		gnn_eval_data_free(gnn_backend *be, gnn_eval_data *d);
/*
 * The nodes a split is measured on are its labelled nodes (split s and
 * label >= 0): rows[s] lists them, and gnn_split_labelled counts them on
 * the host.
 */
int64_t		gnn_split_labelled(const gnn_graph *g, int s);

/*
 * What every node-classification loop needs from the graph: labels, node
 * features and at least one labelled training node.  GNN_ERR_EMPTY with a
 * message naming what is missing.
 */
gnn_status	gnn_train_graph_check(const gnn_graph *g, gnn_error *err);
/* The same for a task: regression needs targets (g->targets) and a
 * training node with one, instead of labels. */
gnn_status	gnn_train_graph_check_task(const gnn_graph *g, gnn_task task, gnn_error *err);

/*
 * Loss and metric arithmetic on host arrays, for every loop (full batch
 * here; a minibatch loop gathers its rows' predictions and targets):
 *
 * gnn_mse_host: over the k < n with target[k] not NAN: *mse = mean
 * (pred-target)^2, *mae = mean |pred-target|; grad (may be NULL) gets
 * d mse / d pred[k] = 2 (pred[k]-target[k]) / counted (0 where the target is
 * NAN).  Returns the number counted (mse, mae NAN when 0).
 *
 * gnn_auroc: area under the ROC curve of scores for labels 1 (positive)
 * against 0 (negative), other labels skipped; tied scores count one half
 * (the Mann-Whitney statistic with mid-ranks).  NAN without both a positive
 * and a negative.
 */
int64_t		gnn_mse_host(const double *pred, const double *target, int64_t n, float *grad,
						 double *mse, double *mae);
double		gnn_auroc(const double *score, const int32_t *label, int64_t n);

/*
 * Regression loss over split s: preds (backend memory, n x 1) against the
 * targets; dpreds (backend memory, n floats, may be NULL) receives the
 * gradient of the mean squared error (zero outside the split).  A split
 * without targets gives NAN.
 */
gnn_status	gnn_regress_loss(gnn_backend *be, const gnn_eval_data *d, const float *preds, int64_t n, int s,
							 float *dpreds, float *mse, float *mae, gnn_error *err);

/*
 * Mean cross-entropy and accuracy over split s (GNN_SPLIT_*).  A split with
 * no labelled node gives NAN for both: there is nothing to measure, and 0
 * would read as a result.  A non-empty split's accuracy is never NAN (its
 * loss can be, when the model diverged).
 */
gnn_status	gnn_eval_split(gnn_backend *be, const gnn_eval_data *d, const float *logits, int64_t n,
						   int32_t c, int s, float *loss, float *acc, gnn_error *err);

/*
 * The three splits' loss and accuracy into em (train loss is left alone);
 * NAN for empty splits.  Also val / test AUROC for a two-class
 * classification (from the probability of class 1; NAN otherwise), and for
 * regression (d->task) the MSE as loss, MAE and RMSE, and -MAE as accuracy.
 */
gnn_status	gnn_eval_splits(gnn_backend *be, const gnn_eval_data *d, const float *logits, int64_t n,
							int32_t c, gnn_epoch_metrics *em, gnn_error *err);

/*
 * Which epoch's weights to keep, and the patience counter, by a selection
 * rule (gnn_select): one implementation for every training loop.
 *
 * Without validation nodes (val_acc NAN: the split is empty, or the loop did
 * not evaluate) there is nothing to select by: every epoch is kept, so the
 * final weights are the last epoch's, and every epoch counts as an
 * improvement, so patience never stops training.  The kept metrics then
 * carry NAN validation loss and accuracy.  A NAN validation loss with a
 * real accuracy (a diverged model) is no improvement under any rule.
 */
typedef struct gnn_selector
{
	gnn_select	rule;
	bool		have_best;
	float		best_loss;
	float		best_acc;
	float		acc_max;		/* GAT rule: best val accuracy seen */
	float		loss_min;		/* GAT rule: lowest val loss seen */
	int32_t		wait;			/* epochs since the last improvement */
} gnn_selector;

void		gnn_selector_init(gnn_selector *s, gnn_select rule);
/*
 * Judge an epoch: returns whether its weights are to be kept (always the
 * first epoch); updates the best metrics and the patience counter (wait).
 */
bool		gnn_selector_step(gnn_selector *s, const gnn_epoch_metrics *em);

/*
 * A classifier's per-class report on one split: for every node v in
 * [0, n) with split[v] == which and labels[v] in [0, C), its predicted
 * class (the highest of scores[v * C .. v * C + C), ties to the lower
 * class, a NaN score never chosen) counts once in confusion[true * C +
 * predicted] (C x C, zeroed here).  Returns the nodes counted.
 */
int64_t		gnn_confusion(const float *scores, int32_t C, const int32_t *labels, const uint8_t *split,
						  uint8_t which, int64_t n, int64_t *confusion);

/*
 * The same count over n rows, each with its own label (rows whose label is
 * outside [0, C) are skipped), added to confusion (not zeroed).
 */
int64_t		gnn_confusion_rows(const float *scores, int32_t C, const int32_t *labels, int64_t n,
							   int64_t *confusion);

/*
 * Keep the test split's confusion of an epoch whose weights are kept, from
 * that epoch's logits over every node (backend memory, n x c): into
 * res->confusion (allocated on first use).  Nothing for regression, or
 * without labels, test nodes or with more than GNN_CONFUSION_MAX_CLASSES.
 */
#define GNN_CONFUSION_MAX_CLASSES 1000
gnn_status	gnn_eval_keep_confusion(gnn_backend *be, const gnn_eval_data *d, const float *logits, int64_t n,
									int32_t c, gnn_train_result *res, gnn_error *err);

/*
 * Class k's precision (of the nodes predicted k, the share that are k),
 * recall (of the nodes that are k, the share predicted k) and F1 (their
 * harmonic mean) from a C x C confusion matrix; NAN where undefined (no
 * node predicted k, no node of class k).
 */
void		gnn_class_prf(const int64_t *confusion, int32_t C, int32_t k, double *precision, double *recall,
						  double *f1);

#endif							/* GNN_EVAL_H */
