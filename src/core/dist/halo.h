/*
 * halo.h: moving rows between the parts of a partitioned graph (issue #16).
 *
 * Each rank holds one part (gnn_graph.node_part: its own nodes and the halo,
 * the other endpoints of their edges).  A plan, built once with the other
 * ranks, says which of this rank's own rows each other rank needs (its halo
 * there) and which of this rank's halo rows each owns.  With it:
 *  - forward: every halo row of a matrix (features, a layer's input) takes
 *    its owner's row;
 *  - backward: the gradient rows of the halo go to their owners, which add
 *    them to their own rows, and the halo rows become zero.
 * Full-batch training on a part with both at every layer computes the own
 * nodes' outputs and the parameters' gradients (summed over ranks) of the
 * whole graph.  Small activations move, not the features of multi-hop
 * neighbourhoods (P3's point).
 *
 * Plans need every rank: each call is a collective.  Rows are host memory.
 */
#ifndef GNN_HALO_H
#define GNN_HALO_H

#include "dist/dist.h"
#include "graph/graph.h"

typedef struct gnn_halo_plan
{
	gnn_dist   *d;
	int			rank;
	int			size;
	/* own rows to send, grouped by destination rank: send_idx[0 .. sum(send_count)) */
	int64_t    *send_count;		/* [size] */
	int32_t    *send_idx;
	int64_t		nsend;
	/* halo rows to receive, grouped by owner rank */
	int64_t    *recv_count;		/* [size] */
	int32_t    *recv_idx;
	int64_t		nrecv;
	int64_t		n_halo;			/* the graph's halo nodes (all in recv_idx) */
	float	   *sbuf;			/* staging, grown on demand */
	float	   *rbuf;
	int64_t		sbuf_cap;
	int64_t		rbuf_cap;
} gnn_halo_plan;

/*
 * Build the plan for g on every rank of d: halo nodes with a known owner ask
 * that owner; the others ask every rank.  A halo node no rank owns is
 * GNN_ERR_DANGLING, one that two ranks own GNN_ERR_DUPLICATE (on the rank
 * that asked; the others then fail in their next collective).  A graph that
 * is not partitioned is GNN_ERR_INVALID unless d has one rank.
 */
gnn_status	gnn_halo_plan_build(gnn_dist *d, const gnn_graph *g, gnn_halo_plan *p, gnn_error *err);
/* rows[n x dim]: each halo row := its owner's row */
gnn_status	gnn_halo_forward(gnn_halo_plan *p, float *rows, int32_t dim, gnn_error *err);
/* rows[n x dim] of gradients: owners += their halo rows elsewhere; halo rows := 0 */
gnn_status	gnn_halo_backward(gnn_halo_plan *p, float *rows, int32_t dim, gnn_error *err);
void		gnn_halo_plan_free(gnn_halo_plan *p);

#endif							/* GNN_HALO_H */
