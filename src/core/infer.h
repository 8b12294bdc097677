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
 */
#ifndef GNN_INFER_H
#define GNN_INFER_H

#include "model.h"

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

#endif							/* GNN_INFER_H */
