/*
 * sample.h: samplers over a gnn_graph: node-wise neighbour sampling and
 * layer-wise importance sampling (LADIES) into blocks, random walks
 * (uniform and node2vec), and the per-batch feature gather.
 *
 * Direction: a node aggregates from its in-neighbours (graph.h's reverse
 * CSR), so samplers draw in-neighbours; random walks follow out-edges.
 *
 * Hops and layers: fanouts[h] is the number of neighbours drawn at hop h+1
 * from the seeds (PyG's num_neighbors order; -1 = all).  The model consumes
 * blocks input-first, so gnn_minibatch.blocks[0] is the LAST hop and
 * blocks[L-1] has the seeds as destinations.
 *
 * Reproducibility: every random draw comes from a stream split off the
 * caller's seed by (hop, chunk of 256 destination rows) or (walk chunk), so
 * the same seed gives the same sample for ANY thread count.  With
 * per_node_streams the node-wise samplers split by (hop, node, time bound)
 * instead, so that a seed's sample does not depend on its batch either.
 *
 * Relabelling: each hop's source list starts with its destination list (DGL
 * convention: destination i is source i), followed by new nodes in order of
 * first appearance; membership uses a generation-stamped marker array of one
 * int32 per graph node (no hash map, no clearing between hops/batches),
 * except under temporal sampling, where a node is identified by (node, time
 * bound) and a hash table sized by the batch does the relabel.
 * Node indices are 32-bit (graphs up to 2^31-1 nodes).
 */
#ifndef GNN_SAMPLE_H
#define GNN_SAMPLE_H

#include "nn/model.h"
#include "store/gather.h"	/* gnn_gather_dense, gnn_graph_feat_range, ... */

typedef enum gnn_sampler_kind
{
	GNN_SAMPLER_NEIGHBOR = 0,	/* node-wise, per-destination fan-out */
	GNN_SAMPLER_LADIES = 1		/* layer-wise importance sampling, fanout = nodes per layer */
} gnn_sampler_kind;

#define GNN_SAMPLE_MAX_FANOUT 100000

typedef struct gnn_sampler_config
{
	gnn_sampler_kind kind;
	int32_t		nhops;
	int32_t		fanouts[GNN_MAX_LAYERS];	/* hop order; -1 = all (NEIGHBOR only) */
	bool		replace;		/* NEIGHBOR: draw with replacement */
	bool		weighted;		/* NEIGHBOR: draw proportionally to edge weight;
								 * edges of weight <= 0 are never drawn (a node
								 * whose in-edges all weigh 0 has no neighbours),
								 * also not by fanout -1 */
	int32_t		nthreads;		/* 0 = OpenMP default */

	/*
	 * Typed graphs (NEIGHBOR only).  On a graph with several relations the
	 * fan-out applies per relation, as PyG's heterogeneous NeighborLoader
	 * does: at hop h a destination draws up to k of its in-neighbours of each
	 * relation r, k = type_fanouts[h * num_edge_types + r] when type_fanouts
	 * is given (-1 = all, 0 = none), else fanouts[h] (fanouts[] are then
	 * not read).  Blocks of a typed graph carry each entry's relation
	 * (gnn_block.etypes) and each destination's node type
	 * (gnn_block.dst_ntype, also on a graph with several node types and one
	 * relation).  On a graph with one relation type_fanouts[h] is simply
	 * fanouts[h].  LADIES refuses graphs with several relations.
	 */
	const int32_t *type_fanouts;	/* NULL or [nhops * num_edge_types] */

	/*
	 * Time-aware sampling (NEIGHBOR only; needs g->time and per-seed times
	 * passed to gnn_sampler_sample_at): at every hop a neighbour u of a node
	 * reached from seed s is admissible only when time[u] <= time of s
	 * (nodes without a time, GNN_TIME_NONE, always are).  'uniform' draws
	 * among the admissible ones; 'last' takes the k most recent admissible
	 * ones (largest time, ties by lower index; nodes without a time count as
	 * oldest).  Nodes are deduplicated by (node, seed time), so one node
	 * reached under two seed times appears twice, once per bound: no sampled
	 * node is ever later than the seed it was sampled for.  'last' is
	 * deterministic: replace is ignored, and weighted only removes edges of
	 * weight <= 0 from the candidates.  Finding the admissible neighbours
	 * scans the row of each sampled destination (O(degree)), and the relabel
	 * uses a hash table keyed by (node, bound) instead of the marker array.
	 * gnn_sampler_create refuses temporal sampling on a graph without times.
	 */
	bool		temporal;
	int32_t		temporal_strategy;	/* 0 = uniform, 1 = last */

	/*
	 * Per-node streams (NEIGHBOR only; off: the per-chunk streams above, bit
	 * for bit as before).  The draws of a destination v with time bound b
	 * (INT64_MAX when sampling is not temporal) at hop h come from a stream
	 * split off the caller's seed by (first_hop + h, v, b) alone.  Nodes are
	 * deduplicated by (node, bound), so every seed's sampled neighbourhood
	 * (its nodes, arcs and their relations, in graph indices) is then a
	 * function of (seed node, its bound, caller's seed): the same whichever
	 * other seeds share its batch, in whatever order, on any thread count.
	 * Block-local numbering (and so the order of a row's entries) still
	 * follows the batch.  'last' draws nothing: it is batch-independent
	 * either way.  first_hop (0 <= first_hop < GNN_MAX_LAYERS) numbers the
	 * first hop in the streams' keys: a caller that samples only the last
	 * hops of a deeper neighbourhood (an inner layer of a model, infer.h)
	 * gets the draws those hops have in the whole one.  Time-aware inference
	 * and evaluation use it (infer.h, train_mb.c).
	 */
	bool		per_node_streams;
	int32_t		first_hop;

	/*
	 * Per-node streams keyed by the node's name (gnn_graph_node_name: its
	 * id, or its type and key) instead of its index: the draws of a node
	 * are then the same in every graph that holds it with the same
	 * in-neighbours (a part and the whole graph, whose indices differ):
	 * distributed sampling (train/sample_dist.h).  A homogeneous graph
	 * whose ids are its indices draws as without.
	 */
	bool		stream_by_id;
} gnn_sampler_config;

/*
 * A sampler keeps reusable scratch (marker array, buffers) across batches.
 * Not thread-safe: one sampler per thread that calls gnn_sampler_sample.
 */
typedef struct gnn_sampler gnn_sampler;

/* One sampled batch: owned by the sampler, valid until the next sample call. */
typedef struct gnn_minibatch
{
	int32_t		nhops;
	gnn_block	blocks[GNN_MAX_LAYERS];	/* input-first: blocks[0] = last hop */
	/* nodes[h]: graph indices of the nodes after h hops (nodes[0] = seeds,
	 * deduplicated); nodes[h-1] is a prefix of nodes[h]. */
	const int32_t *nodes[GNN_MAX_LAYERS + 1];
	int64_t		n_nodes[GNN_MAX_LAYERS + 1];
	/* the unique input nodes whose features the batch needs (= nodes[nhops]) */
	const int32_t *input_nodes;
	int64_t		n_input;
	int64_t		sampled_edges;	/* sum of block nnz */
	/* temporal sampling: the time bound of each node of nodes[nhops]
	 * (= its seed's time; nodes[h] are prefixes), else NULL */
	const int64_t *bound;
} gnn_minibatch;

/*
 * A minibatch that owns its arrays: a copy of a sampled batch that stays
 * valid after the sampler's next call (the training pipeline queues them).
 * mb points into buf; gnn_minibatch_copy_from reuses buf when it fits.
 */
typedef struct gnn_minibatch_copy
{
	gnn_minibatch mb;
	void	   *buf;
	size_t		cap;
} gnn_minibatch_copy;

gnn_status	gnn_minibatch_copy_from(gnn_minibatch_copy *dst, const gnn_minibatch *src, gnn_error *err);
void		gnn_minibatch_copy_free(gnn_minibatch_copy *c);

gnn_status	gnn_sampler_config_check(const gnn_sampler_config *cfg, gnn_error *err);
/*
 * The hops [first, first + n) of c (first >= 0, n >= 1, first + n <= nhops),
 * drawn as they are in the whole: their fan-outs (typed ones over g's
 * relations too), per-node streams, first_hop = first.  A caller that
 * samples an inner layer's hops (infer.h) or a batch's hops apart
 * (train_mb.c's reused evaluation rows) gets the whole's draws.
 */
void		gnn_sampler_config_hops(const gnn_sampler_config *c, const gnn_graph *g, int first, int n,
									gnn_sampler_config *out);
gnn_status	gnn_sampler_create(const gnn_graph *g, const gnn_sampler_config *cfg,
							   gnn_sampler **out, gnn_error *err);
void		gnn_sampler_free(gnn_sampler *s);
/*
 * A sampler that marks its batches' nodes in with's marker array (with: NULL
 * or on another graph, its own), instead of allocating one of its own: 8
 * bytes a graph node, written whole when allocated.  The two must be called
 * from one thread, one call at a time (a call's marks live only during it),
 * and with freed after this one.
 */
gnn_status	gnn_sampler_create_sharing(const gnn_graph *g, const gnn_sampler_config *cfg, gnn_sampler *with,
									   gnn_sampler **out, gnn_error *err);

/*
 * Sample the message-flow graph of seeds (graph indices; duplicates are
 * dropped, the first occurrence kept).  Deterministic in (seed, seeds).
 * NEIGHBOR blocks carry the graph's edge weights when the graph is weighted
 * and sampling is uniform (NULL otherwise).  LADIES blocks carry the
 * importance correction w(v,u) = c_u * Ahat(v,u) / (s * p_u), where Ahat is
 * the row-normalised adjacency (1/in-degree), p_u the layer distribution and
 * c_u the times u was drawn in s draws: sum_u w(v,u) x_u is an unbiased
 * estimate of the mean of v's in-neighbours' x.
 */
gnn_status	gnn_sampler_sample(gnn_sampler *s, const int32_t *seeds, int64_t nseeds,
							   uint64_t seed, gnn_minibatch *mb, gnn_error *err);

/*
 * As gnn_sampler_sample, with a time per seed (seed_times[i] for seeds[i];
 * NULL = no restriction).  With cfg->temporal, seed_times is required
 * (GNN_ERR_INVALID without); without it, seed_times are ignored.  Duplicate
 * (seed, time) pairs are dropped, first occurrence kept.  A seed time is a
 * bound as given: GNN_TIME_NONE admits only neighbours without a time, and
 * INT64_MAX admits all (a caller with a seed that has no time of its own
 * passes INT64_MAX for no restriction).
 */
gnn_status	gnn_sampler_sample_at(gnn_sampler *s, const int32_t *seeds, const int64_t *seed_times,
								  int64_t nseeds, uint64_t seed, gnn_minibatch *mb, gnn_error *err);

/* ------------------------------------------------------------------ walks */

typedef struct gnn_walk_config
{
	int32_t		length;			/* steps after the start (walk has length+1 nodes) */
	double		p;				/* node2vec return parameter (1 = uniform) */
	double		q;				/* node2vec in-out parameter (1 = uniform) */
	int32_t		nthreads;
} gnn_walk_config;

/*
 * Random walks from starts[0..n) along out-edges.  out receives
 * n * (length + 1) graph indices, walk-major; a walk that reaches a node
 * without out-edges ends there and the rest of its row is -1.  With
 * p = q = 1 every step is uniform over out-neighbours; otherwise node2vec's
 * second-order bias (1/p back to the previous node, 1 to a neighbour of it,
 * 1/q further away), drawn by rejection against the largest bias.
 */
gnn_status	gnn_random_walk(const gnn_graph *g, const int32_t *starts, int64_t n,
							const gnn_walk_config *cfg, uint64_t seed, int32_t *out,
							gnn_error *err);

/* ------------------------------------------------------------------ gather */

/* Features of nodes as a gnn_dfeat on be (dense or sparse as the graph keeps them). */
gnn_status	gnn_dfeat_gather(gnn_backend *be, const gnn_graph *g, const int32_t *nodes, int64_t n,
							 bool row_normalise, int nthreads, gnn_dfeat *out, gnn_error *err);

#endif							/* GNN_SAMPLE_H */
