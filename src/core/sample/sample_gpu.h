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
 * Relabelling into blocks (kernels/relabel.cu, per-element logic in
 * kernels/relabel_math.h): a device hash table maps the sampled graph nodes
 * of a batch to block indices; new nodes of a hop are appended sorted by
 * graph index, so the result does not depend on thread order.  The block
 * CSRs (transposes, GCN's looped and normalised CSR) are built on the
 * device too, equal bit for bit to block.c's host construction for the
 * same entries; gpu_batch.c strings them into training batches.
 */
#ifndef GNN_SAMPLE_GPU_H
#define GNN_SAMPLE_GPU_H

#include "nn/backend.h"

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


/*
 * Relabel, step 1: empty the table (keys[cap], vals[cap]; cap a power of
 * two >= 2 * the batch's nodes, gnn_h_capacity) and insert the n seeds
 * (unique graph nodes) as 0..n-1.
 */
typedef gnn_status (*gnn_cuda_relabel_seeds_fn) (gnn_backend *be, int32_t *keys, int32_t *vals, int64_t cap,
												 const int32_t *seeds, int64_t n);

/*
 * Relabel, one hop: src[0..nnz) are the hop's draws (graph nodes).  Nodes
 * not yet in the table are appended to nodes[n_prev ..] in graph order
 * (*n_new of them; fresh[nnz] is scratch), and local[e] = the block index
 * of src[e].  GNN_ERR_LIMIT when the table would be more than half full.
 */
typedef gnn_status (*gnn_cuda_relabel_hop_fn) (gnn_backend *be, int32_t *keys, int32_t *vals, int64_t cap,
											   const int32_t *src, int64_t nnz, int32_t *nodes, int64_t n_prev,
											   int32_t *fresh, int64_t *n_new, int32_t *local);

/* the transpose of a CSR (t_indptr[n_cols + 1], t_indices[nnz] rows, t_perm[nnz] forward positions), stable */
typedef gnn_status (*gnn_cuda_csr_transpose_fn) (gnn_backend *be, int64_t n_rows, int64_t n_cols, int64_t nnz,
												 const int64_t *indptr, const int32_t *indices, int64_t *t_indptr,
												 int32_t *t_indices, int64_t *t_perm);

/*
 * The self-looped CSR of nd rows (lptr[nd + 1], lidx / lval of up to
 * nnz + nd entries; values w or 1, not normalised); *lnnz = its entries.
 */
typedef gnn_status (*gnn_cuda_loop_csr_fn) (gnn_backend *be, int64_t nd, const int64_t *indptr,
											const int32_t *indices, const float *w, int64_t *lptr,
											int32_t *lidx, float *lval, int64_t *lnnz);

/* GCN's symmetric normalisation of a looped CSR in place, given its transpose; deg: nd + ns doubles of scratch */
typedef gnn_status (*gnn_cuda_gcn_norm_fn) (gnn_backend *be, int64_t nd, int64_t ns, const int64_t *lptr,
											const int32_t *lidx, float *lval, const int64_t *t_indptr,
											const int64_t *t_perm, double *deg);

/*
 * out[i] = features of nodes[i] from the device cache (row slot[v]; slot
 * NULL: cache holds every row in graph order) or, for slot[v] < 0, from
 * host (registered host memory, read over UVA); *hits (device counter,
 * may be NULL) += rows served from the cache.  row_normalise as gather.
 */
typedef gnn_status (*gnn_cuda_gather_cached_fn) (gnn_backend *be, const float *cache, const int32_t *slot,
												 const float *host, int64_t d, const int32_t *nodes, int64_t n,
												 bool row_normalise, float *out, unsigned long long *hits);

/* the device's free and total memory */
typedef gnn_status (*gnn_cuda_mem_info_fn) (gnn_backend *be, size_t *free_bytes, size_t *total_bytes);

typedef struct gnn_gpu_sample_api
{
	gnn_cuda_sample_hop_fn sample_hop;
	gnn_cuda_row_prefix_fn row_prefix;
	gnn_cuda_random_walk_fn random_walk;
	gnn_cuda_gather_fn gather;
	gnn_cuda_host_register_fn host_register;
	gnn_cuda_host_unregister_fn host_unregister;
	gnn_cuda_relabel_seeds_fn relabel_seeds;
	gnn_cuda_relabel_hop_fn relabel_hop;
	gnn_cuda_csr_transpose_fn csr_transpose;
	gnn_cuda_loop_csr_fn loop_csr;
	gnn_cuda_gcn_norm_fn gcn_norm;
	gnn_cuda_gather_cached_fn gather_cached;
	gnn_cuda_mem_info_fn mem_info;
} gnn_gpu_sample_api;

#define GNN_CUDA_SAMPLE_SYMBOLS \
	X(sample_hop, "gnn_cuda_sample_hop") \
	X(row_prefix, "gnn_cuda_row_prefix") \
	X(random_walk, "gnn_cuda_random_walk") \
	X(gather, "gnn_cuda_gather") \
	X(host_register, "gnn_cuda_host_register") \
	X(host_unregister, "gnn_cuda_host_unregister") \
	X(relabel_seeds, "gnn_cuda_relabel_seeds") \
	X(relabel_hop, "gnn_cuda_relabel_hop") \
	X(csr_transpose, "gnn_cuda_csr_transpose") \
	X(loop_csr, "gnn_cuda_loop_csr") \
	X(gcn_norm, "gnn_cuda_gcn_norm") \
	X(gather_cached, "gnn_cuda_gather_cached") \
	X(mem_info, "gnn_cuda_mem_info")

/*
 * Fill api from be's shared object.  GNN_ERR_UNSUPPORTED (api zeroed) when
 * be is not a loaded CUDA backend or the object lacks a symbol (an older
 * gnn_cuda.so).
 */
gnn_status	gnn_gpu_sample_bind(gnn_backend *be, gnn_gpu_sample_api *api, gnn_error *err);

#endif							/* GNN_SAMPLE_GPU_H */
