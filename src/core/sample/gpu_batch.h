/*
 * gpu_batch.h: training minibatches built on the GPU (issue #13).  With
 * the CUDA backend, gnn_train_minibatch samples, relabels, builds its
 * blocks and gathers its features on the device: the graph's reverse CSR
 * sits in device memory (or in pinned host memory read over UVA when it
 * does not fit the budget), the GPU samplers draw each hop
 * (kernels/sample.cu), a device hash table relabels the draws
 * (kernels/relabel.cu), the blocks' transposes and GCN normalisation are
 * computed there, and features come from a device cache filled by degree
 * or by a pre-sampling pass (feature_cache.c), misses read from pinned host
 * memory.  Per batch only the seeds go up and a few counts come back.
 *
 * The sample is the GPU samplers' (sample_gpu.h: another random stream
 * than the CPU sampler's, the same distribution), and new nodes of a hop
 * are ordered by graph index rather than by first occurrence: a GPU run
 * is repeatable for a seed, but is not the CPU run.
 */
#ifndef GNN_GPU_BATCH_H
#define GNN_GPU_BATCH_H

#include "sample/feature_cache.h"
#include "sample/sample.h"
#include "nn/model.h"

typedef struct gnn_gpu_batch_config
{
	/* device feature cache, bytes: < 0 what is left after the graph, the
	 * model and a batch (with a margin); 0 none (every row read from host) */
	int64_t		cache_bytes;
	gnn_cache_policy policy;
	int32_t		presample_batches;	/* 0: one pass over the training nodes */
	/* device memory the reverse CSR may take: < 0 half of what is free;
	 * 0: keep it in pinned host memory */
	int64_t		graph_bytes;
	/* tests: device entry points to use instead of the CUDA backend's (an
	 * emulation over host memory with the CPU backend), NULL normally */
	const struct gnn_gpu_sample_api *api;
} gnn_gpu_batch_config;

void		gnn_gpu_batch_config_default(gnn_gpu_batch_config *c);

/* A batch's (or a run's) figures: where its feature rows came from. */
typedef struct gnn_gpu_batch_stats
{
	int64_t		edges;			/* sampled block entries */
	int64_t		rows;			/* feature rows gathered */
	int64_t		hits;			/* of them from the device cache */
	int64_t		host_bytes;		/* bytes read from host memory (the misses) */
	int64_t		cache_rows;		/* rows the cache holds */
	int64_t		cache_bytes;
	bool		graph_on_device;	/* else read from pinned host memory */
} gnn_gpu_batch_stats;

typedef struct gnn_gpu_batcher gnn_gpu_batcher;

/*
 * What the batcher needs of a job, as plain values: the training layer
 * fills it from its configuration and its job estimate
 * (gnn_gpu_batcher_create in train/train_mb.h), so that batch building
 * never reaches up into training.
 */
typedef struct gnn_gpu_batch_spec
{
	const gnn_sampler_config *sampler;	/* hops, fanouts, replacement, weights */
	int32_t		batch_size;		/* seed nodes per batch */
	gnn_model_kind model;		/* GCN, SAGE, GAT build on the GPU (SAGE: no loops) */
	bool		row_normalise;	/* divide feature rows by their sum */
	uint64_t	seed;			/* the job's seed (the cache's pre-sampling derives its own) */
	int32_t		threads;		/* host threads filling the cache (0: all cores) */
	bool		cpu_batches;	/* the job asked for batches built on the CPU */
	int64_t		fail_batch;		/* fault injection (tests the CPU producer) */
	bool		emulated;		/* device entry points emulated (gnn_gpu_batch_config.api) */
	int64_t		batch_bytes;	/* device bytes of one batch's buffers (gnn.estimate's), 0 unknown */
} gnn_gpu_batch_spec;

/*
 * NULL when the GPU can build this job's batches, else why not (a static
 * string): the CPU sampler then builds them, as before.
 */
const char *gnn_gpu_batch_spec_unsupported(const gnn_backend *be, const gnn_graph *g, const gnn_gpu_batch_spec *spec);

/*
 * Put the graph and the cache on the device.  train[0..ntrain): the
 * training nodes (the pre-sampling pass draws batches of them);
 * model_bytes: the model's weights (room is kept for them, their
 * gradients and optimiser state); nslots: batches in flight at once (the
 * pipeline's depth + 1), each with buffers of its own.
 * GNN_ERR_UNSUPPORTED (the CPU path then runs) when the CUDA backend
 * lacks the entry points or host memory cannot be registered.
 */
gnn_status	gnn_gpu_batcher_open(gnn_backend *be, const gnn_graph *g, const gnn_gpu_batch_spec *spec,
								 const gnn_gpu_batch_config *gc, const int32_t *train, int64_t ntrain,
								 size_t model_bytes, int nslots, gnn_gpu_batcher **out, gnn_error *err);

int			gnn_gpu_batcher_slots(const gnn_gpu_batcher *B);

/*
 * One batch of seeds (host, unique graph nodes) into slot, on backend be
 * (the batcher's, or a twin of it on another thread: gnn_backend_twin):
 * blocks[0..layers) input first, as gnn_model_forward takes them, and x,
 * the input features (n_src of blocks[0] rows, the seeds first); both
 * borrow the slot's device buffers, valid until the slot's next batch
 * (gnn_dblock_free on them is a no-op but allowed).  The batch is complete
 * on the device when this returns (be was synchronised), so another
 * stream may read it.  bst: the batch's figures; sample_s / gather_s:
 * wall time of the two phases.
 */
gnn_status	gnn_gpu_batcher_next(gnn_gpu_batcher *B, int slot, gnn_backend *be, const int32_t *seeds, int64_t n,
								 uint64_t seed, gnn_dblock *blocks, gnn_dfeat *x, gnn_gpu_batch_stats *bst,
								 double *sample_s, double *gather_s, gnn_error *err);

void		gnn_gpu_batcher_free(gnn_gpu_batcher *B);

/* the CUDA backend's free and total device memory (GNN_ERR_UNSUPPORTED: not CUDA) */
gnn_status	gnn_gpu_mem_info(gnn_backend *be, size_t *free_bytes, size_t *total_bytes, gnn_error *err);

#endif							/* GNN_GPU_BATCH_H */
