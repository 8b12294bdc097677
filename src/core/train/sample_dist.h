/*
 * sample_dist.h: node-wise sampling across the parts of a partitioned graph
 * (issue #43), for parts with fewer hops of halo than the job samples.
 *
 * Each rank holds one part: its own nodes with every in-edge, and a halo.
 * A batch's neighbourhood is drawn hop by hop: the nodes reached so far go
 * to their owners in one alltoallv a hop, each owner draws their
 * neighbours from its part with the same sampler a single server uses
 * (per-node streams keyed by node id and hop, stream_by_id), and answers
 * with the neighbours' ids, owners, node types, relations and weights.
 * Then the batch's input nodes' features come from their owners (ids out,
 * rows back).  Since a node's draws depend only on (job seed, hop, node id,
 * time bound), a seed's sampled neighbourhood is the same on any number of
 * ranks, whichever rank holds it: a distributed run equals a one-rank run
 * of the same global batches.
 *
 * Every call is a collective: every rank calls it for every batch, with its
 * own seeds (possibly none), the same batch seed, in the same order.
 * Dense features move as rows, sparse ones as a length and entries a row.
 */
#ifndef GNN_SAMPLE_DIST_H
#define GNN_SAMPLE_DIST_H

#include "dist/dist.h"
#include "sample/sample.h"

typedef struct gnn_dist_sampler gnn_dist_sampler;

/* a batch's features: dense rows, or (a graph with sparse features) a CSR */
typedef struct gnn_dist_feat
{
	const float *dense;			/* n_input x feat_dim, or NULL */
	const int64_t *ptr;			/* [n_input + 1], or NULL */
	const int32_t *idx;
	const float *val;
} gnn_dist_feat;

/* what a rank's batches moved and cost, summed since the sampler began */
typedef struct gnn_dist_sample_stats
{
	int64_t		batches;
	int64_t		adj_bytes;		/* requests and answers, sent and received */
	int64_t		feat_bytes;		/* feature ids and rows, sent and received */
	int64_t		remote_nodes;	/* requested nodes another rank owns */
	int64_t		remote_rows;	/* feature rows from other ranks */
	double		sample_s;		/* hops: drawing, answering, relabelling, waiting */
	double		fetch_s;		/* features */
} gnn_dist_sample_stats;

/*
 * A sampler over the part g (node_part set; a whole graph on one rank) for
 * cfg (NEIGHBOR only; per-node streams keyed by id are implied).
 */
gnn_status	gnn_dist_sampler_create(gnn_dist *d, const gnn_graph *g, const gnn_sampler_config *cfg,
									gnn_dist_sampler **out, gnn_error *err);
void		gnn_dist_sampler_free(gnn_dist_sampler *s);

/*
 * Sample the neighbourhood of seeds[0..nseeds) (indices of own nodes of g,
 * unique; seed_times as gnn_sampler_sample_at) with batch seed `seed`, and
 * fetch the features of its input nodes.  mb is valid until the next call:
 * its blocks as a single server's; input_nodes[i] is the node's index in g
 * where g holds it, else -1 (the first nseeds are the seeds); *feat: its
 * mb->n_input rows of g->feat_dim (valid as mb), row-normalised when asked.
 * A collective.
 */
gnn_status	gnn_dist_sampler_sample(gnn_dist_sampler *s, const int32_t *seeds, const int64_t *seed_times,
									int64_t nseeds, uint64_t seed, bool row_normalise, int nthreads,
									gnn_minibatch *mb, gnn_dist_feat *feat, gnn_error *err);

/*
 * As gnn_dist_sampler_sample, the seeds given by name (keys[i] and types[i]:
 * gnn_graph_name_key / _type; types NULL: all 0) and owner rank: any rank's
 * nodes (link prediction's endpoints).  input_nodes[i] is -1 for a seed g
 * does not hold.
 */
gnn_status	gnn_dist_sampler_sample_named(gnn_dist_sampler *s, const int64_t *keys, const int16_t *types,
										  const int32_t *owners, const int64_t *seed_times, int64_t nseeds,
										  uint64_t seed, bool row_normalise, int nthreads, gnn_minibatch *mb,
										  gnn_dist_feat *feat, gnn_error *err);

/*
 * Tests: fail the batch-th call (1-based) at `where` (1..nhops: in that
 * hop's exchange, after the requests; nhops + 1: in the feature fetch,
 * after the ids), leaving the other ranks mid-exchange.  0: never.
 */
void		gnn_dist_sampler_fail_at(gnn_dist_sampler *s, int64_t batch, int32_t where);

/* the keys of the last batch's nodes (their ids on a homogeneous graph; mb->n_input of them) */
const int64_t *gnn_dist_sampler_ids(const gnn_dist_sampler *s);
void		gnn_dist_sampler_stats(const gnn_dist_sampler *s, gnn_dist_sample_stats *out);

#endif							/* GNN_SAMPLE_DIST_H */
