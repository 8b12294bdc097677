/*
 * sample_gpu.h: GPU neighbour sampling, random walks and feature gather
 * (part of issue #6), exported by kernels/gnn_cuda.so as extern "C"
 * functions beside the backend entry point, and bound here by dlsym on the
 * CUDA backend's own dlopen handle (so the .so is found exactly as
 * gnn_backend_cuda_load finds it).  Without the .so or a GPU,
 * gnn_backend_cuda_load already fails with GNN_ERR_UNSUPPORTED, and
 * gnn_gpu_sample_bind returns GNN_ERR_UNSUPPORTED for a non-CUDA backend.
 *
 * Every function runs on the backend's stream and reports failures in
 * be->err (status returned).  Array arguments are device pointers, or
 * pointers to host memory registered with host_register (pass the pointer
 * it returns): graphs whose CSR or features do not fit in device memory are
 * read by the GPU straight from pinned host memory.  Node indices are not
 * range-checked on the device: the caller passes valid ones.
 *
 * Per-element logic is in kernels/sample_math.h (shared with the CPU test
 * test/core/test_sample_gpu_math.c); see that header for the RNG (a
 * counter-based hash: the sample is a pure function of seed, hop,
 * destination position and draw number, whatever the launch) and for the
 * draw algorithms.  The GPU sample is NOT the CPU sampler's (different
 * random streams, same distribution).
 *
 * Relabelling / dedup into blocks is not done on the GPU: sample_hop gives
 * per-hop COO (dst position, src graph node); the caller relabels on the
 * CPU (sample.c's marker-array relabel) or, later, with a sort-based unique.
 */
#ifndef GNN_SAMPLE_GPU_H
#define GNN_SAMPLE_GPU_H

#include "backend.h"

/*
 * One hop of node-wise neighbour sampling over the reverse CSR (in-edges),
 * a warp per destination.  dst[0..nd): the hop's destinations (graph
 * indices).  fanout < 0: every in-neighbour.  cumw: NULL for uniform, else
 * the per-row inclusive prefix sums of in-edge weights (row_prefix) for
 * weighted sampling, which needs replace (weighted without replacement:
 * GNN_ERR_UNSUPPORTED); an edge of weight <= 0 is never drawn, a row of
 * total weight 0 gets no draws and fanout < 0 takes the edges with weight,
 * as the CPU sampler does.  Output: ptr[0..nd] (device int64; row i's draws
 * are src[ptr[i] .. ptr[i+1])), src (sampled graph nodes, in draw order),
 * dst_idx (optional, may be NULL: i for each draw, i.e. the COO row),
 * *nnz (host) = ptr[nd].  When *nnz > cap nothing is written to src /
 * dst_idx and GNN_ERR_LIMIT is returned with *nnz set: grow and call again.
 */
typedef gnn_status (*gnn_cuda_sample_hop_fn) (gnn_backend *be, const int64_t *rindptr,
											  const int32_t *rindices, const float *cumw,
											  const int32_t *dst, int64_t nd, int32_t hop,
											  int64_t fanout, bool replace, uint64_t seed,
											  int64_t *ptr, int32_t *src, int32_t *dst_idx,
											  int64_t cap, int64_t *nnz);

/* cum[e] = inclusive prefix sum of max(w, 0) within each row of an n-row CSR (thread per row) */
typedef gnn_status (*gnn_cuda_row_prefix_fn) (gnn_backend *be, const int64_t *indptr,
											  const float *w, int64_t n, float *cum);

/*
 * Random walks along out-edges (CSR indptr / indices), a thread per walk:
 * out[n * (len + 1)], walk-major, -1 after a dead end; p = q = 1 uniform,
 * else node2vec by rejection with an exact fallback (as gnn_random_walk).
 */
typedef gnn_status (*gnn_cuda_random_walk_fn) (gnn_backend *be, const int64_t *indptr,
											   const int32_t *indices, const int32_t *starts,
											   int64_t n, int64_t len, double p, double q,
											   uint64_t seed, int32_t *out);

/* out[i] = feat row nodes[i] (d floats), a warp per row, float4 when aligned; row_normalise as gnn_gather_dense */
typedef gnn_status (*gnn_cuda_gather_fn) (gnn_backend *be, const float *feat, int64_t d,
										  const int32_t *nodes, int64_t n, bool row_normalise,
										  float *out);

/* pin host memory for direct GPU reads (mapped, read-only); *dev = the pointer kernels use */
typedef gnn_status (*gnn_cuda_host_register_fn) (gnn_backend *be, void *p, size_t bytes, void **dev);
typedef gnn_status (*gnn_cuda_host_unregister_fn) (gnn_backend *be, void *p);

typedef struct gnn_gpu_sample_api
{
	gnn_cuda_sample_hop_fn sample_hop;
	gnn_cuda_row_prefix_fn row_prefix;
	gnn_cuda_random_walk_fn random_walk;
	gnn_cuda_gather_fn gather;
	gnn_cuda_host_register_fn host_register;
	gnn_cuda_host_unregister_fn host_unregister;
} gnn_gpu_sample_api;

#define GNN_CUDA_SAMPLE_SYMBOLS \
	X(sample_hop, "gnn_cuda_sample_hop") \
	X(row_prefix, "gnn_cuda_row_prefix") \
	X(random_walk, "gnn_cuda_random_walk") \
	X(gather, "gnn_cuda_gather") \
	X(host_register, "gnn_cuda_host_register") \
	X(host_unregister, "gnn_cuda_host_unregister")

/*
 * Fill api from be's shared object.  GNN_ERR_UNSUPPORTED (api zeroed) when
 * be is not a loaded CUDA backend or the object lacks a symbol (an older
 * gnn_cuda.so).
 */
gnn_status	gnn_gpu_sample_bind(gnn_backend *be, gnn_gpu_sample_api *api, gnn_error *err);

#endif							/* GNN_SAMPLE_GPU_H */
