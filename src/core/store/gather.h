/*
 * gather.h: feature rows of a graph into host memory, whichever way the
 * graph keeps them (shared memory, a delta's changed rows, a disk feature
 * store).  Part of the store layer (store/store.h says what it owns); uses
 * graph/ and base/ only.
 */
#ifndef GNN_GATHER_H
#define GNN_GATHER_H

#include "graph/graph.h"

/*
 * Dense: out[i] = features of nodes[i] (rows of g->feat_dim floats), copied
 * once each in parallel with sequential writes.  row_normalise divides each
 * row by its sum (as gnn_dfeat_from_graph does for full-batch training).
 */
gnn_status	gnn_gather_dense(const gnn_graph *g, const int32_t *nodes, int64_t n,
							 bool row_normalise, int nthreads, float *out, gnn_error *err);

/* Divide each of x's n rows of d floats by its sum (rows summing to 0 stay). */
void		gnn_normalise_rows(float *x, int64_t n, int64_t d, int nthreads);

/*
 * Dense rows of nodes [first, first + count) into out, unnormalised, from
 * memory or through the graph's feature store (for whole-graph readers:
 * full-batch training, digests; they read a store in slices of this);
 * sparse features come out as dense rows.
 */
gnn_status	gnn_graph_feat_range(const gnn_graph *g, int64_t first, int64_t count, float *out,
								 gnn_error *err);

/* Sparse: a CSR of the nodes' rows (ptr[n+1], idx, val; malloc'd, free with free()). */
gnn_status	gnn_gather_sparse(const gnn_graph *g, const int32_t *nodes, int64_t n,
							  bool row_normalise, int nthreads, int64_t **ptr, int32_t **idx,
							  float **val, gnn_error *err);

#endif							/* GNN_GATHER_H */
