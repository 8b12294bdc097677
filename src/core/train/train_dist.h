/*
 * train_dist.h: the training loops' share of distributed training (inside
 * train/ only): full batch (train.c) and minibatches (train_mb.c) over the
 * parts of a partitioned graph, one rank per part.
 */
#ifndef GNN_TRAIN_DIST_H
#define GNN_TRAIN_DIST_H

#include "dist/halo.h"
#include "train/train.h"

/*
 * A rank's part ready to compute as the whole graph's share: the halo plan,
 * the features with the halo's rows from their owners (part->feat, xfeat),
 * GCN's source degrees in the whole graph (deg).  A collective; on error
 * nothing is left to free.
 */
gnn_status	gnn_train_dist_part(gnn_dist *d, const gnn_graph *g, gnn_halo_plan *halo, gnn_graph *part,
								float **xfeat, double **deg, gnn_error *err);

/*
 * A rank's part ready to train as the whole graph's share: the halo plan,
 * the features with the halo's rows from their owners (part->feat, xfeat),
 * GCN's source degrees in the whole graph (deg), and the model's outputs
 * agreed (the most classes any rank has).  A collective.
 */
gnn_status	gnn_train_dist_setup(gnn_dist *d, const gnn_graph *g, const gnn_train_config *cfg,
								 gnn_model_config *mc, gnn_halo_plan *halo, gnn_graph *part, float **xfeat,
								 double **deg, gnn_error *err);

/*
 * Every parameter's gradient := the sum over the ranks of gradient x scale
 * (scale 0: none from this rank), and extra[0 .. nextra) := its sum over
 * the ranks, in one allreduce; buf / cap: packing scratch kept between calls.
 */
gnn_status	gnn_train_dist_sum_grads(gnn_dist *d, gnn_model *m, float scale, float *extra, int nextra,
									 float **buf, size_t *cap, gnn_error *err);
/* every parameter's gradient times f */
gnn_status	gnn_train_dist_scale_grads(gnn_model *m, float f, gnn_error *err);

/* em's allreduce / alltoallv seconds and bytes: d's counters since c0 */
void		gnn_train_dist_epoch_comm(gnn_dist *d, const gnn_dist_counters *c0, gnn_epoch_metrics *em);

/* the epoch's metrics over all ranks: each split's means weighted by its nodes on each rank (nloc, nall: [4]) */
gnn_status	gnn_train_dist_metrics(gnn_dist *d, const int64_t *nloc, const int64_t *nall, gnn_epoch_metrics *em,
								   gnn_error *err);

/*
 * Every rank's own rows (rows: the part's n x cols) at rank root, rank after
 * rank, with their ids (malloc'd at root; NULL elsewhere).  A collective.
 */
gnn_status	gnn_train_dist_gather_own(gnn_dist *d, const gnn_graph *g, const float *rows, int32_t cols, int root,
									  int64_t **ids_out, float **rows_out, int64_t *n_out, gnn_error *err);

/*
 * gnn_train_dist_gather_own's rows of one node type of a typed graph, with
 * their keys: ids[i] is the row's integer key (g->keys), and where the type
 * is text-keyed (uuid, text) its key is key_bytes[key_off[i] .. key_off[i+1]).
 * type < 0: every own row, ids as gnn_train_dist_gather_own gives them, no
 * text keys.  At root, malloc'd; zeros elsewhere.  A collective.
 */
typedef struct gnn_dist_own
{
	int64_t		n;
	int64_t    *ids;
	float	   *rows;
	int64_t    *key_off;		/* n + 1, or NULL */
	char	   *key_bytes;
} gnn_dist_own;

gnn_status	gnn_train_dist_gather_own_typed(gnn_dist *d, const gnn_graph *g, const float *rows, int32_t cols,
											int root, int32_t type, gnn_dist_own *out, gnn_error *err);

/* this rank's own rows alone, packed as gnn_train_dist_gather_own_typed sends them (malloc'd; not a collective) */
gnn_status	gnn_train_dist_own_rows(const gnn_graph *g, const float *rows, int32_t cols, int32_t type,
									gnn_dist_own *out, gnn_error *err);

/* nodes[0..n) (indices of g) in the order of their names (type, then key or id) */
gnn_status	gnn_train_sort_by_name(const gnn_graph *g, int32_t *nodes, int64_t n, gnn_error *err);

/*
 * Every rank's nodes[0..n) (indices of its own nodes) as one list over all
 * ranks, in the order of their names (gnn_train_sort_by_name), the same on
 * every rank: *local_out[k] is the k-th
 * node's index on this rank when this rank listed it, else -1 (malloc'd;
 * *nall_out entries).  Global batches over parts are windows of it
 * (sampling across parts).  A collective.
 */
gnn_status	gnn_train_dist_global_order(gnn_dist *d, const gnn_graph *g, const int32_t *nodes, int64_t n,
										int32_t **local_out, int64_t *nall_out, gnn_error *err);

/*
 * The same list by name: *keys_out[k] (gnn_graph_name_key; a homogeneous
 * graph's ids), its type *types_out[k] (gnn_graph_name_type; types_out may
 * be NULL) and the rank that listed it, *ranks_out[k] (malloc'd).  A
 * collective.
 */
gnn_status	gnn_train_dist_global_names(gnn_dist *d, const gnn_graph *g, const int32_t *nodes, int64_t n,
										int64_t **keys_out, int16_t **types_out, int32_t **ranks_out,
										int64_t *nall_out, gnn_error *err);

#endif							/* GNN_TRAIN_DIST_H */
