/*
 * feature_cache.h: which feature rows a fixed-size cache should hold (the
 * GPU feature cache of minibatch training: rows in device memory, misses
 * read from host memory), and how good a choice is.
 *
 * Policies (PaGraph, GNNLab):
 *  - degree: the rows of the nodes with the most out-arcs (PaGraph): the
 *    sampler draws in-neighbours, and such a node is in the most in-lists;
 *  - presample: run the training sampler over some batches of the training
 *    nodes first and keep the rows drawn most often (GNNLab: 90-99% of the
 *    optimal hit rate), ties by degree then index.
 *
 * A cache is judged on a trace: the input rows of a run of batches, batch
 * after batch (each batch's rows are distinct).  gnn_cache_hit_rate replays
 * it against a static cache; gnn_cache_oracle_static is the best a cache
 * filled once could do knowing the trace (its most read rows), and
 * gnn_cache_belady the best any cache of that many rows could do with
 * replacement (Belady's MIN, with bypass): the bounds a choice is measured
 * against.
 */
#ifndef GNN_FEATURE_CACHE_H
#define GNN_FEATURE_CACHE_H

#include "sample/sample.h"

typedef enum gnn_cache_policy
{
	GNN_CACHE_DEGREE = 0,
	GNN_CACHE_PRESAMPLE = 1
} gnn_cache_policy;

/* parse "degree" / "presample" */
bool		gnn_cache_policy_parse(const char *s, gnn_cache_policy *out);

typedef struct gnn_cache_plan_config
{
	gnn_cache_policy policy;
	int64_t		capacity;		/* rows the cache holds */
	/* presample: the sampler, the seeds to draw batches from, how many */
	const gnn_sampler_config *sampler;
	const int32_t *seeds;
	int64_t		nseeds;
	int32_t		batch_size;
	int32_t		batches;		/* presample batches (0: one pass over the seeds) */
	uint64_t	seed;
} gnn_cache_plan_config;

/*
 * The rows to cache, at most capacity of them (fewer when the graph or the
 * drawn rows run out), in decreasing priority, into *rows (malloc'd, the
 * caller frees).
 */
gnn_status	gnn_cache_plan(const gnn_graph *g, const gnn_cache_plan_config *cfg, int32_t **rows,
						   int64_t *nrows, gnn_error *err);

/* hits / accesses of a trace of len row indices against a static set of rows */
double		gnn_cache_hit_rate(const int32_t *trace, int64_t len, const int32_t *rows, int64_t nrows,
							   int64_t num_nodes);

/*
 * The clairvoyant optimum of a cache filled once (the GPU cache: no
 * replacement during training): the capacity rows the trace reads most.
 * The bound a static policy is judged against (GNNLab's "optimal").
 */
gnn_status	gnn_cache_oracle_static(const int32_t *trace, int64_t len, int64_t num_nodes, int64_t capacity,
									double *hit_rate, gnn_error *err);

/*
 * The optimal hit rate of a cache of capacity rows that may replace rows
 * (Belady's MIN with bypass), starting full with the rows read first: no
 * cold misses, as a cache filled once has none, so it bounds every policy.
 */
gnn_status	gnn_cache_belady(const int32_t *trace, int64_t len, int64_t num_nodes, int64_t capacity,
							 double *hit_rate, gnn_error *err);

#endif							/* GNN_FEATURE_CACHE_H */
