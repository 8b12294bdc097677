/*
 * infer.h: exact inference for a few nodes on their k-hop neighbourhood.
 *
 * gnn_model_infer runs the model over the whole graph; asking for a handful
 * of nodes that way costs O(num_nodes * dim).  A node's output at layer l
 * depends only on its in-neighbourhood of l+1 hops, so gnn_model_infer_nodes
 * builds that neighbourhood with every neighbour (no sampling) as per-layer
 * blocks, as minibatch training does, and runs the model's first l+1 layers
 * on them.  Aggregations see each destination's whole in-neighbourhood
 * (GraphSAGE's mean and max, GAT's attention softmax) and GCN's blocks take
 * the graph's degrees (as gnn_dblock_create_normed), so every row equals the
 * full-graph row up to float summation order.  On a typed graph the blocks
 * carry each arc's relation and each destination's node type, as the
 * whole-graph block does, so every model kind (R-GCN and heterogeneous
 * GraphSAGE included) runs on the neighbourhood.
 *
 * A model trained with time-aware sampling must not be asked about a node
 * with the node's whole neighbourhood: that shows it the future its training
 * never saw (labels carried by later rows leak into its predictions).
 * gnn_model_infer_temporal answers it the way it was trained and evaluated:
 * on a neighbourhood sampled with the training fan-outs under each node's
 * time bound, with per-node streams (sample.h) so that a node's row does not
 * depend on which other nodes are asked with it.
 */
#ifndef GNN_INFER_H
#define GNN_INFER_H

#include "nn/model.h"
#include "sample/sample.h"

/*
 * Exact inference for a few nodes: the output of `layer` (as gnn_model_infer:
 * 0..layers-1, or -1 = the output layer; softmax applies only to the output
 * layer) for the nodes idx[0..n) (internal indices, may repeat), computed on
 * their in-neighbourhood of layer+1 hops only, with every neighbour (no
 * sampling), so that each row equals gnn_model_infer's row for that node
 * (to 1e-5).  host_out: n x cols, row i for idx[i].
 * max_nodes: when the neighbourhood (distinct nodes over all hops) exceeds it,
 * return GNN_ERR_LIMIT before computing anything heavy (the caller then runs
 * the full-graph pass); max_nodes <= 0 means no limit.  *touched (may be
 * NULL) gets that node count either way (as far as it was counted before
 * stopping).  An idx out of [0, num_nodes) or n < 0 is GNN_ERR_INVALID;
 * n = 0 writes nothing.  Cost: the neighbourhood's nodes and edges (for a
 * weighted graph under GCN, also the out-edges of its nodes, for their
 * degrees), never O(num_nodes).
 */
gnn_status	gnn_model_infer_nodes(gnn_model *m, const gnn_graph *g, bool row_normalise, int layer,
								  bool softmax, const int64_t *idx, int64_t n, int64_t max_nodes,
								  float *host_out, int64_t *touched, gnn_error *err);

/*
 * Time-aware inference.  sampler: the training sampler (nhops = the model's
 * layers; fan-outs, typed fan-outs, temporal strategy, weighted, replace,
 * threads); per_node_streams and first_hop are set here.  With
 * sampler.temporal every node idx[i] is bounded by as_of (has_as_of) or by
 * its own seed time (gnn_graph_seed_time; none: no bound, INT64_MAX), the
 * rule minibatch training samples and evaluates by (train_mb.h); without it
 * the neighbourhoods are sampled with no bound.  seed: the streams' seed,
 * gnn_infer_temporal_seed of the training seed, which evaluation uses too,
 * so that each node's neighbourhood is the one its evaluation saw.
 */
typedef struct gnn_infer_temporal_config
{
	gnn_sampler_config sampler;
	uint64_t	seed;
	int32_t		batch_size;		/* nodes per sampled batch, >= 1 */
	bool		row_normalise;	/* as the model was trained */
	bool		has_as_of;		/* one bound for every node (temporal only) */
	int64_t		as_of;
	gnn_should_stop_fn should_stop; /* polled between batches; NULL: never */
	void	   *stop_arg;
	/*
	 * Optional, with layer -1: the output of layer also_layer (0..layers-1,
	 * before any softmax) of the same forward passes into also_out, n x its
	 * width, row i for idx[i] (the embedding that went into each prediction)
	 */
	int32_t		also_layer;
	float	   *also_out;
} gnn_infer_temporal_config;

/* The streams' seed of time-aware inference and evaluation for a model trained with seed train_seed. */
uint64_t	gnn_infer_temporal_seed(uint64_t train_seed);

/*
 * The time bound of node v under time-aware sampling: as_of for every node
 * (has_as_of), else its seed time or its own time (gnn_graph_seed_time), and
 * no bound (INT64_MAX) when that is none: a node without a time cannot see
 * a future.  Training, evaluation and inference all bound by it.
 */
static inline int64_t
gnn_temporal_bound(const gnn_graph *g, int64_t v, bool has_as_of, int64_t as_of)
{
	int64_t		t = has_as_of ? as_of : gnn_graph_seed_time(g, v);

	return t == GNN_TIME_NONE ? INT64_MAX : t;
}

/*
 * The output of `layer` (as gnn_model_infer_nodes: 0..layers-1, or -1 = the
 * output layer, softmax only there) for the nodes idx[0..n) (internal
 * indices, may repeat; rows in idx order), each computed on its own sampled
 * neighbourhood.  Layer l runs the model's first l+1 layers on the last l+1
 * hops of the training fan-outs (first_hop = layers-1-l), so an inner
 * layer's row is, neighbourhood for neighbourhood, the one the output was
 * computed from.  Nodes go in batches of batch_size (distinct nodes, in
 * index order); c->should_stop is polled between them (GNN_ERR_CANCELLED).
 * A node's sampled neighbourhood is the same in any batch, order or thread
 * count; its row is too, up to float summation order (BLAS kernels and
 * block-local numbering follow the batch's shape), except that GCN's
 * normalisation reads the batch's column sums, as it does in training.
 * GNN_ERR_INVALID: a bad layer, n < 0, an idx out of range, a sampler that
 * does not match the model, as_of without temporal sampling.
 */
gnn_status	gnn_model_infer_temporal(gnn_model *m, const gnn_graph *g, const gnn_infer_temporal_config *c,
									 int layer, bool softmax, const int64_t *idx, int64_t n,
									 float *host_out, gnn_error *err);

/*
 * The rows of one sampled batch of nb seeds, its features x on m's backend:
 * nl layers of evaluation's forward pass over mb's blocks, the seeds' rows
 * (the first nb destinations) into rows (nb x cols, softmaxed when asked)
 * and, with arows, layer also_layer's into arows (nb x acols).  One
 * server's time-aware batches and the parts' (gnn_model_infer_temporal_dist).
 */
gnn_status	gnn_infer_batch_rows(gnn_model *m, const gnn_minibatch *mb, const gnn_dfeat *x, int nl, bool softmax,
								 int64_t nb, int32_t cols, float *rows, int32_t also_layer, float *arows,
								 int32_t acols, gnn_error *err);

/*
 * Layer's sampling of model m under c on g (the last layer+1 hops of the
 * training fan-outs, per-node streams, first_hop set), with c checked
 * against m and g as gnn_model_infer_temporal checks it; the sampling over
 * the parts (gnn_model_infer_temporal_dist) is the same.
 */
gnn_status	gnn_infer_temporal_sampling(const gnn_model *m, const gnn_graph *g, const gnn_infer_temporal_config *c,
										int layer, gnn_sampler_config *sc, gnn_error *err);

#endif							/* GNN_INFER_H */
