/*
 * train_subgraph.h: subgraph-wise minibatch training.
 *
 *  - Cluster-GCN (Chiang et al., KDD 2019): METIS splits the graph into
 *    num_parts clusters once; each step trains on the subgraph induced by a
 *    random union of clusters_per_batch clusters (the edges between the
 *    chosen clusters restored), loss on its training nodes.  An epoch visits
 *    every cluster once.
 *  - GraphSAINT random-walk sampler (Zeng et al., ICLR 2020): roots are drawn
 *    from the labelled training nodes (the ones with a loss), each walks
 *    walk_length steps over out-arcs, and the step trains on the subgraph
 *    induced by the visited nodes.  A
 *    pre-sampling pass of presample subgraphs counts how often each node (C_v)
 *    and arc (C_uv) is drawn; the loss of node v is weighted by 1/lambda_v
 *    (lambda_v = C_v / presample) and each arc u -> v carries the full-graph
 *    aggregation coefficient divided by alpha_uv = C_uv / C_v, so that the
 *    minibatch aggregation and loss are unbiased estimates of the full-graph
 *    ones.
 *
 * Both follow gnn_train_full's conventions (train.h): the same config,
 * callbacks, result and best-epoch selection; should_stop is polled between
 * minibatches; evaluation after each epoch is full-graph inference, so
 * accuracies compare with full-batch training.  train_loss is the mean
 * minibatch loss of the epoch.
 */
#ifndef GNN_TRAIN_SUBGRAPH_H
#define GNN_TRAIN_SUBGRAPH_H

#include "train/train.h"

typedef struct gnn_subgraph_config
{
	/* Cluster-GCN */
	int32_t		num_parts;		/* clusters; 0: max(2, nodes / 50) */
	int32_t		clusters_per_batch; /* q; 0: max(1, min(20, num_parts / 4)) */
	const int32_t *part;		/* a precomputed clustering to use (part[v] < num_parts), or NULL */
	/* GraphSAINT random walk */
	int32_t		walk_length;	/* 0: 2 */
	int32_t		roots;			/* walks per subgraph; 0: max(1, training nodes / 2) */
	int32_t		presample;		/* subgraphs counted for the normalisation; 0: 50 * nodes / expected size, at most 2000 */
	int32_t		batches;		/* steps per epoch; 0: max(1, training nodes / roots) */
} gnn_subgraph_config;

void		gnn_subgraph_config_default(gnn_subgraph_config *sc);

gnn_status	gnn_train_cluster(const gnn_graph *g, const gnn_train_config *cfg,
							  const gnn_subgraph_config *sc, gnn_backend *be,
							  gnn_progress_fn progress, void *progress_arg,
							  gnn_should_stop_fn should_stop, void *stop_arg,
							  gnn_model **model_out, gnn_train_result *res, gnn_error *err);

gnn_status	gnn_train_saint(const gnn_graph *g, const gnn_train_config *cfg,
							const gnn_subgraph_config *sc, gnn_backend *be,
							gnn_progress_fn progress, void *progress_arg,
							gnn_should_stop_fn should_stop, void *stop_arg,
							gnn_model **model_out, gnn_train_result *res, gnn_error *err);

#endif							/* GNN_TRAIN_SUBGRAPH_H */
