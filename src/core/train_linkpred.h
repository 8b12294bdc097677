/*
 * train_linkpred.h: unsupervised link prediction (included by train_mb.h).
 */
#ifndef GNN_TRAIN_LINKPRED_H
#define GNN_TRAIN_LINKPRED_H

#include "train.h"

typedef struct gnn_linkpred_config
{
	double		holdout;		/* fraction of undirected edges held out for testing (0.1) */
	double		val_fraction;	/* of the held-out ones, used for validation (0.5) */
	int32_t		negatives;		/* negative pairs per positive (1) */
	int32_t		hits_k;			/* Hits@K (50) */
	int32_t		edge_type;		/* typed graphs: the relation whose arcs are the positives
								 * (its reverse relation's arcs of held-out pairs are removed
								 * too); negatives pair its source and destination types.
								 * -1: every arc (homogeneous graphs) */
} gnn_linkpred_config;

typedef struct gnn_linkpred_result
{
	int32_t		epochs_run;
	int32_t		best_epoch;
	double		val_auc;
	double		test_auc;
	double		test_hits;		/* Hits@K on test positives against test negatives */
	int64_t		test_edges;
	double		seconds;
} gnn_linkpred_result;

void		gnn_linkpred_config_default(gnn_linkpred_config *lc);

/*
 * Unsupervised link prediction: the model (out_dim = cfg->hidden, the
 * embedding width) is trained full-batch on the graph with held-out edges
 * removed, with a binary cross-entropy loss on dot products of embeddings:
 * positives are training edges, negatives uniformly drawn node pairs.
 * Selects the epoch with the best validation AUC; reports test AUC and
 * Hits@K.  Labels are not needed.  The returned model's last layer output is
 * the embedding (gnn_model_infer with layer = -1, softmax off).
 */
gnn_status	gnn_train_linkpred(const gnn_graph *g, const gnn_train_config *cfg,
							   const gnn_linkpred_config *lc, gnn_backend *be,
							   gnn_progress_fn progress, void *progress_arg,
							   gnn_should_stop_fn should_stop, void *stop_arg,
							   gnn_model **model_out, gnn_linkpred_result *res, gnn_error *err);

#endif							/* GNN_TRAIN_LINKPRED_H */
