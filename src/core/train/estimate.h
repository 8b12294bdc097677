/*
 * estimate.h: the memory a training job will need, before it runs
 * (gnn.estimate; gnn.train refuses a job over gnn.max_job_memory with it;
 * device => 'auto' asks whether the GPU holds it).
 *
 * The estimate is itemised the way the job allocates: the model's
 * parameters, their gradients, the optimiser's state and the best epoch's
 * copy; the graph operators and features the loop builds; activations and
 * their gradients (over every node for full-batch training, over one
 * batch's blocks for minibatch training, times the batches in flight);
 * the sampler's buffers; the evaluation pass; and, held after the job is
 * reported (its model row committed), the results pass that computes what
 * serving asks for first: host_bytes is the job's, after_host_bytes that
 * pass's (with the model), and the process peaks at the larger.  Host figures are checked against the heap peak the job
 * reaches (heap.h; test/core/test_estimate.c: within 2x either way); GPU
 * figures follow the same shapes on the device.  Memory the graph already
 * holds (its CSR, in-memory features, the shared feature cache) is not
 * part of a job's.
 */
#ifndef GNN_ESTIMATE_H
#define GNN_ESTIMATE_H

#include "graph/graph.h"
#include "train/train.h"

typedef enum gnn_job_loop
{
	GNN_LOOP_FULL = 0,			/* full batch */
	GNN_LOOP_MINIBATCH,			/* sampled neighbourhoods (fanouts) */
	GNN_LOOP_LINKPRED,			/* full-batch link prediction */
	GNN_LOOP_CLUSTER,			/* Cluster-GCN */
	GNN_LOOP_SAINT				/* GraphSAINT random walks */
} gnn_job_loop;

typedef struct gnn_job_plan
{
	gnn_job_loop loop;
	int32_t		nfanouts;		/* minibatch: hops, fanouts[0] for the seeds' neighbours */
	int32_t		fanouts[GNN_MAX_LAYERS];	/* -1: every neighbour */
	int32_t		batch_size;		/* seeds per batch (0: 512) */
	int32_t		prefetch;		/* batches built ahead (-1: the default, 2) */
	int32_t		threads;		/* sampler threads (0: all cores) */
	bool		sampled_eval;	/* minibatch: evaluation on sampled neighbourhoods */
	bool		no_eval_reuse;	/* ... keeping no layer-0 rows between its batches (eval_reuse_rows -1) */
	/*
	 * ... those rows at their bound (the rows a pass reaches, within the
	 * budget), not the nodes a pass would keep: no pass over every node's
	 * degree (11-14 ms on a million nodes, most of it this process's first
	 * reads of the graph's pages).  An estimate that is at least the job's.
	 */
	bool		kept_rows_bound;
	int32_t		eval_batch_size;	/* its seeds per batch (0: batch_size) */
	bool		temporal;		/* minibatch: time-aware sampling (evaluation and results sampled too) */
	bool		gpu;			/* trained on a GPU: the device items too */
	int64_t		gpu_cache_bytes;	/* GPU feature cache (-1: the default, what is left) */
	int64_t		gpu_free_bytes; /* device memory free (0: unknown) */
	int64_t		host_cache_bytes;	/* features on disk: the process's feature cache */
} gnn_job_plan;

void		gnn_job_plan_default(gnn_job_plan *p);

#define GNN_ESTIMATE_ITEMS 20

/* the item of a minibatch job's evaluation rows kept within a pass (train_mb.h's eval_reuse_rows) */
#define GNN_ESTIMATE_KEPT_ROWS "evaluation's kept rows"

typedef struct gnn_estimate_item
{
	char		item[40];
	bool		gpu;			/* device memory (else host) */
	bool		after;			/* held after the job is reported (its results pass), not during it */
	int64_t		bytes;
	char		note[160];
} gnn_estimate_item;

typedef struct gnn_estimate
{
	int			n;
	gnn_estimate_item items[GNN_ESTIMATE_ITEMS];
	int64_t		host_bytes;		/* the job's host items' sum (what its peak_memory_bytes measures) */
	int64_t		after_host_bytes;	/* after it: the model and the results pass (items with after) */
	int64_t		gpu_bytes;		/* the device items' sum */
	int64_t		batch_bytes;	/* minibatch: one batch's features, blocks and activations */
} gnn_estimate;

/* GNN_ERR_INVALID: a configuration gnn_train_* would refuse (the message says why) */
gnn_status	gnn_job_estimate(const gnn_graph *g, const gnn_train_config *cfg, const gnn_job_plan *plan,
							 gnn_estimate *out, gnn_error *err);

#endif							/* GNN_ESTIMATE_H */
