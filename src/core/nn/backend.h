/*
 * backend.h: the compute backend interface (ggml style: a table of function
 * pointers).  The CPU backend (backend_cpu.c) is the reference; the CUDA
 * backend (kernels/, its own shared object, dlopen'ed on demand) fills the
 * same table.  tests run every op on both and compare.
 *
 * Conventions, binding for every implementation:
 *  - All matrices are dense row-major float32 unless said otherwise; every
 *    pointer passed to an op lives in the backend's memory space (host memory
 *    for the CPU backend, device memory for CUDA) except arguments documented
 *    as "host".  Pointers are opaque to the caller: only copy_* moves data
 *    between host and backend memory.
 *  - Every op returns GNN_OK or an error status and, on error, fills
 *    be->err (message) - the caller copies it into its own gnn_error.
 *  - Ops may be asynchronous (CUDA stream order); copy_d2h and the ops that
 *    return host scalars (xent, count_correct) synchronise.
 *  - "beta" arguments follow BLAS: out = alpha*result + beta*out, and when
 *    beta == 0 the old contents of out are not read (may be NaN).
 *  - Ops must be deterministic: same inputs -> bit-identical outputs for a
 *    given backend and thread count.  The CPU backend does this with
 *    gather-style (row-parallel, no atomics) sparse kernels; that is why the
 *    CSR carries its transpose: backward products walk the transpose.
 *  - Per-element math lives in ops_math.h (compiles as C and CUDA), so both
 *    backends share it.
 *
 * Callers normally go through the gnn_backend_<op>() dispatch functions at
 * the bottom: they check the fault-injection counter, keep per-category
 * timing counters and then call the table.
 */
#ifndef GNN_BACKEND_H
#define GNN_BACKEND_H

#include "base/gnn_core.h"

#ifdef __cplusplus
extern "C"
{
#endif

/* Bump when gnn_backend_ops or any op's meaning changes. */
#define GNN_BACKEND_ABI_VERSION 5

/* Symbol a CUDA backend shared object exports (extern "C"), see below. */
#define GNN_BACKEND_CUDA_ENTRY "gnn_backend_cuda_create"

typedef struct gnn_backend gnn_backend;

/*
 * A sparse matrix in CSR form, in backend memory, with its transpose.
 *
 * As a message-passing "block" (DGL style) the rows are the n_dst destination
 * nodes and the columns the n_src source nodes; destination i is also source
 * i (the first n_dst sources are the destinations).  Full-batch training uses
 * the whole graph: rows = in-neighbour lists (graph.h's reverse CSR).
 * As a sparse feature matrix the rows are nodes and the columns features.
 *
 * The transpose (t_*) lists, for each column j, the rows i that have an entry
 * (i, j) in ascending i, and t_perm gives the position of that entry in the
 * forward arrays (so per-edge data - weights, attention - is indexed by the
 * forward position everywhere).  Ops named *_t / *_backward need it; forward
 * ops ignore it (may be NULL).
 */
typedef struct gnn_csr
{
	int64_t		n_rows;
	int64_t		n_cols;
	int64_t		nnz;
	const int64_t *indptr;		/* [n_rows + 1] */
	const int32_t *indices;		/* [nnz] column of each entry */
	const float *values;		/* [nnz] entry value / edge weight; NULL = all 1 */
	const int64_t *t_indptr;	/* [n_cols + 1] */
	const int32_t *t_indices;	/* [nnz] row of each transposed entry */
	const int64_t *t_perm;		/* [nnz] forward position of each transposed entry */
} gnn_csr;

/* Sparse aggregation modes. */
typedef enum gnn_agg
{
	GNN_AGG_SUM = 0,			/* y_i = sum_j w_ij x_j */
	GNN_AGG_MEAN = 1			/* y_i = (1/deg_i) sum_j w_ij x_j, deg_i = entries in row i; 0 if none */
} gnn_agg;

/* Element-wise activations (math in ops_math.h). */
typedef enum gnn_act
{
	GNN_ACT_NONE = 0,
	GNN_ACT_RELU = 1,
	GNN_ACT_ELU = 2,			/* param = alpha (1.0 usual) */
	GNN_ACT_LEAKY_RELU = 3		/* param = negative slope (0.2 for GAT) */
} gnn_act;

/* Timing categories for the per-epoch breakdown. */
typedef enum gnn_op_cat
{
	GNN_CAT_AGG = 0,			/* sparse aggregation: spmm*, gat_*, max_agg* */
	GNN_CAT_DENSE = 1,			/* gemm */
	GNN_CAT_OTHER = 2,			/* element-wise, loss, optimiser, copies */
	GNN_CAT_COUNT = 3
} gnn_op_cat;

/*
 * The op table.  Every entry is mandatory (a backend that cannot do an op
 * returns GNN_ERR_UNSUPPORTED from it).
 */
typedef struct gnn_backend_ops
{
	uint32_t	abi_version;	/* GNN_BACKEND_ABI_VERSION */
	uint32_t	ops_size;		/* sizeof(gnn_backend_ops) */

	/* ---- lifecycle and settings */
	void		(*destroy) (gnn_backend *be);	/* frees be->ctx and be itself */
	/* worker threads for CPU kernels (0 = number of cores); others may ignore */
	gnn_status	(*set_threads) (gnn_backend *be, int nthreads);
	/* wait for all queued work; reports asynchronous errors */
	gnn_status	(*sync) (gnn_backend *be);

	/* ---- memory (bytes); alloc'd memory is at least 256-byte aligned */
	gnn_status	(*mem_alloc) (gnn_backend *be, size_t bytes, void **ptr);
	void		(*mem_free) (gnn_backend *be, void *ptr);	/* NULL is a no-op */
	gnn_status	(*copy_h2d) (gnn_backend *be, void *dst, const void *host_src, size_t bytes);
	gnn_status	(*copy_d2h) (gnn_backend *be, void *host_dst, const void *src, size_t bytes);
	gnn_status	(*copy_d2d) (gnn_backend *be, void *dst, const void *src, size_t bytes);
	gnn_status	(*mem_set) (gnn_backend *be, void *dst, int byte, size_t bytes);

	/*
	 * ---- dense
	 * C[m x n] = alpha * op(A) * op(B) + beta * C, row-major, op(X) = X or X^T;
	 * op(A) is m x k, op(B) is k x n; lda/ldb/ldc are row strides.
	 */
	gnn_status	(*gemm) (gnn_backend *be, bool trans_a, bool trans_b,
						 int64_t m, int64_t n, int64_t k, float alpha,
						 const float *A, int64_t lda, const float *B, int64_t ldb,
						 float beta, float *C, int64_t ldc);

	/*
	 * ---- sparse products
	 * spmm: Y[n_rows x d] = beta*Y + S, S_i = sum_{e in row i} c_e X[col_e]
	 * with c_e = value_e * row_scale[i] * col_scale[col_e] (NULL scale = 1),
	 * and for GNN_AGG_MEAN additionally / deg_i.  Symmetric GCN
	 * normalisation: SUM with row_scale = col_scale = deg^-1/2, or with the
	 * normalisation folded into values.  With a sparse feature matrix as A
	 * and a weight matrix as X this is the sparse-input first-layer product.
	 * X is n_cols x d.
	 *
	 * spmm_t: the transpose product with the same coefficients:
	 * Y[n_cols x d] = beta*Y + A_c^T G, G is n_rows x d.  Uses the transpose.
	 * (Backward of spmm; with a feature matrix, dW = X^T dZ.)
	 */
	gnn_status	(*spmm) (gnn_backend *be, const gnn_csr *A, gnn_agg agg,
						 const float *row_scale, const float *col_scale,
						 const float *X, int64_t d, float beta, float *Y);
	gnn_status	(*spmm_t) (gnn_backend *be, const gnn_csr *A, gnn_agg agg,
						   const float *row_scale, const float *col_scale,
						   const float *G, int64_t d, float beta, float *Y);

	/*
	 * ---- rows
	 * gather_rows: dst[k] = src[idx[k]], k < n, rows of d floats.
	 * scatter_add_rows: dst[idx[k]] += src[k]; duplicates in idx allowed
	 * (summed in ascending k, deterministically).
	 */
	gnn_status	(*gather_rows) (gnn_backend *be, const float *src, int64_t d,
								const int32_t *idx, int64_t n, float *dst);
	gnn_status	(*scatter_add_rows) (gnn_backend *be, const float *src, int64_t d,
									 const int32_t *idx, int64_t n, float *dst);

	/*
	 * ---- element-wise (n elements)
	 * act_forward: y = f(x) (in place allowed).
	 * act_backward: dx = dy * f'(x) given x (pre-activation) and y = f(x)
	 * (y may be NULL: implementations read x; dx may alias dy).
	 * axpby: y = alpha*x + beta*y.
	 */
	gnn_status	(*act_forward) (gnn_backend *be, gnn_act act, float param,
								const float *x, float *y, int64_t n);
	gnn_status	(*act_backward) (gnn_backend *be, gnn_act act, float param,
								 const float *x, const float *y, const float *dy,
								 float *dx, int64_t n);
	gnn_status	(*axpby) (gnn_backend *be, int64_t n, float alpha, const float *x,
						  float beta, float *y);

	/* Y[rows x cols] += bias[cols] broadcast over rows */
	gnn_status	(*add_bias) (gnn_backend *be, float *Y, const float *bias,
							 int64_t rows, int64_t cols);
	/* db[cols] = beta*db + column sums of dY[rows x cols] */
	gnn_status	(*bias_grad) (gnn_backend *be, const float *dY, int64_t rows,
							  int64_t cols, float beta, float *db);

	/*
	 * ---- dropout, mask from (seed, element index) through a counter hash
	 * (gnn_math_dropout_keep in ops_math.h), so forward and backward need no
	 * stored mask and every backend draws the same mask for the same seed.
	 * y = keep ? x / (1 - p) : 0.  backward: dx = keep ? dy / (1 - p) : 0.
	 * In place allowed.  p in [0, 1).
	 */
	gnn_status	(*dropout_forward) (gnn_backend *be, const float *x, float *y,
									int64_t n, float p, uint64_t seed);
	gnn_status	(*dropout_backward) (gnn_backend *be, const float *dy, float *dx,
									 int64_t n, float p, uint64_t seed);

	/*
	 * gemm_dropout: gemm(trans_a, no trans_b) of D = dropout(A) without
	 * writing D: D's element at A + i*lda + j is the dropout_forward element
	 * of index i*lda + j (p, seed), so with a contiguous A (lda = its row
	 * length) D is dropout_forward(A, rows*lda) and its backward pass (the
	 * weight gradient D^T dZ, trans_a) draws the same mask again.  The
	 * result equals dropout_forward then gemm within GEMM tolerance (on the
	 * CPU bit for bit without trans_a: the same BLAS calls, on blocks of D
	 * written into cache-sized scratch), and like gemm does not depend on
	 * the thread count.
	 * Used for a first layer's dense input, where the dropped copy would be
	 * the largest matrix of the step.  p in [0, 1).
	 */
	gnn_status	(*gemm_dropout) (gnn_backend *be, bool trans_a, int64_t m, int64_t n,
								 int64_t k, float alpha, const float *A, int64_t lda,
								 float p, uint64_t seed, const float *B, int64_t ldb,
								 float beta, float *C, int64_t ldc);

	/*
	 * ---- classification
	 * softmax_rows: Y = row softmax of X [n x c] (in place allowed).
	 * xent: over the rows listed in rows[0..nrows) (backend memory, int32),
	 * loss = mean_r -log softmax(logits_r)[labels_r]; if dlogits != NULL it
	 * receives the gradient of that mean (zero on unlisted rows, all n rows
	 * written).  Rows whose label is < 0 or >= c are skipped (counted out of
	 * the mean).  *loss_host (host) gets the loss, *correct_host (host, may
	 * be NULL) the number of listed rows whose argmax (first max) equals the
	 * label, *counted_host (host, may be NULL) the rows counted.
	 */
	gnn_status	(*softmax_rows) (gnn_backend *be, const float *X, float *Y,
								 int64_t n, int64_t c);
	gnn_status	(*xent) (gnn_backend *be, const float *logits, int64_t n, int64_t c,
						 const int32_t *labels, const int32_t *rows, int64_t nrows,
						 float *dlogits, float *loss_host, int64_t *correct_host,
						 int64_t *counted_host);

	/*
	 * ---- GAT.  H is [n x heads*f] (head-major within a row).
	 * gat_node_scores: s[i*heads + h] = sum_k H[i, h*f + k] * att[h*f + k],
	 * for i < n (pass n = n_dst with the destination projection).
	 * gat_node_scores_backward: dH[i, h*f+k] += ds[i,h] * att[h*f+k] (i < n),
	 * datt = beta*datt + sum_i ds[i,h] * H[i, h*f+k].
	 */
	gnn_status	(*gat_node_scores) (gnn_backend *be, const float *H, int64_t n,
									int64_t heads, int64_t f, const float *att, float *s);
	gnn_status	(*gat_node_scores_backward) (gnn_backend *be, const float *H, int64_t n,
											 int64_t heads, int64_t f, const float *att,
											 const float *ds, float *dH,
											 float beta, float *datt);

	/*
	 * gat_edge_softmax: for entry e = (i <- j) of block A and head h,
	 * z = a_src[j,h] + a_dst[i,h]; e = LeakyReLU(z, slope);
	 * alpha[e*heads + h] = softmax over row i of e (max-subtracted).
	 * A->values ignored.  Rows without entries produce nothing.
	 * backward: given dalpha [nnz x heads], writes da_src [n_cols x heads]
	 * and da_dst [n_rows x heads] (overwritten, not accumulated).
	 */
	gnn_status	(*gat_edge_softmax) (gnn_backend *be, const gnn_csr *A, int64_t heads,
									 const float *a_src, const float *a_dst,
									 float slope, float *alpha);
	gnn_status	(*gat_edge_softmax_backward) (gnn_backend *be, const gnn_csr *A,
											  int64_t heads, const float *a_src,
											  const float *a_dst, float slope,
											  const float *alpha, const float *dalpha,
											  float *da_src, float *da_dst);

	/*
	 * gat_aggregate: out[i, h*f+k] = sum_{e in row i} alpha[e,h] H[col_e, h*f+k]
	 * (out is n_rows x heads*f, overwritten).
	 * backward: dH[j] = beta*dH[j] + sum over entries (i <- j) alpha[e,h] dout[i]
	 * (dH is n_cols x heads*f); dalpha[e,h] = <dout[i,h,:], H[j,h,:]> (overwritten).
	 */
	gnn_status	(*gat_aggregate) (gnn_backend *be, const gnn_csr *A, int64_t heads,
								  int64_t f, const float *alpha, const float *H, float *out);
	gnn_status	(*gat_aggregate_backward) (gnn_backend *be, const gnn_csr *A,
										   int64_t heads, int64_t f, const float *alpha,
										   const float *H, const float *dout,
										   float beta, float *dH, float *dalpha);

	/*
	 * head_mean: Y[i, k] = (1/heads) sum_h X[i, h*f + k]  (Y is n x f).
	 * backward: dX[i, h*f + k] = dY[i, k] / heads (overwritten).
	 */
	gnn_status	(*head_mean) (gnn_backend *be, const float *X, int64_t n,
							  int64_t heads, int64_t f, float *Y);
	gnn_status	(*head_mean_backward) (gnn_backend *be, const float *dY, int64_t n,
									   int64_t heads, int64_t f, float *dX);

	/*
	 * ---- max-pool aggregation (GraphSAGE pool)
	 * Y[i,k] = max_{e in row i} X[col_e, k]; argmax[i*d+k] = that column
	 * (first one on ties), or -1 and Y = 0 for a row without entries.
	 * backward: dX[j,k] = beta*dX[j,k] + sum_{i: argmax[i,k] == j} dY[i,k]
	 * (dX is n_cols x d), walks the transpose.
	 */
	gnn_status	(*max_agg) (gnn_backend *be, const gnn_csr *A, const float *X,
							int64_t d, float *Y, int32_t *argmax);
	gnn_status	(*max_agg_backward) (gnn_backend *be, const gnn_csr *A,
									 const float *dY, const int32_t *argmax,
									 int64_t d, float beta, float *dX);

	/*
	 * ---- optimisers (n parameters), L2 weight decay added to the gradient
	 * (g' = g + weight_decay * w), as PyTorch's Adam / SGD do.
	 * adam_step: t is the 1-based step number (bias correction).
	 * sgd_step: with momentum > 0, buf = momentum*buf + g'; w -= lr*buf
	 * (buf may be NULL when momentum == 0).
	 */
	gnn_status	(*adam_step) (gnn_backend *be, float *w, const float *g, float *m,
							  float *v, int64_t n, float lr, float beta1, float beta2,
							  float eps, float weight_decay, int64_t t);
	gnn_status	(*sgd_step) (gnn_backend *be, float *w, const float *g, float *buf,
							 int64_t n, float lr, float momentum, float weight_decay);

	/*
	 * ---- a hidden layer's epilogue in one pass (optional: where NULL, the
	 * dispatch layer composes add_bias, act_forward and dropout_forward, or
	 * dropout_backward, act_backward and bias_grad, with the same bits).
	 * bias_act: P[rows x cols] += bias; Y = f(P), then, when p > 0, the next
	 * layer's input dropout of Y (element (i, k) is index i*cols + k under
	 * seed, as dropout_forward over Y would draw it).  P and Y distinct.
	 * bias_act_backward: dP = f'(P) * g with g = dY, or, when p > 0, dY
	 * through that dropout's backward; db = column sums of dP, each summed
	 * in row order as bias_grad does (beta 0).  P is the biased
	 * pre-activation bias_act left.  dP may alias dY.
	 */
	gnn_status	(*bias_act) (gnn_backend *be, float *P, const float *bias, int64_t rows,
							 int64_t cols, gnn_act act, float param, float p, uint64_t seed,
							 float *Y);
	gnn_status	(*bias_act_backward) (gnn_backend *be, gnn_act act, float param,
									  const float *P, const float *dY, int64_t rows,
									  int64_t cols, float p, uint64_t seed, float *dP,
									  float *db);

	/*
	 * spmm_t_bias_act_backward (optional, composed where NULL): a layer's
	 * input gradient and the previous layer's epilogue backward in one pass
	 * over each row.  Y[n_cols x d] = A_c^T G as spmm_t computes it (no
	 * row or column scales), added to Y's first keep_rows rows (beta 1:
	 * what a root term put there) and written over the others (beta 0);
	 * then, row by row, Y = bias_act_backward(P, Y) (P, act, param, p and
	 * seed as there, P n_cols x d) and db its column sums, as
	 * bias_act_backward computes them.  The same bits as spmm_t into a Y
	 * whose rows from keep_rows on are zero, with beta 1, followed by
	 * bias_act_backward over Y in place.
	 */
	gnn_status	(*spmm_t_bias_act_backward) (gnn_backend *be, const gnn_csr *A, gnn_agg agg,
											 const float *G, int64_t d, int64_t keep_rows,
											 gnn_act act, float param, const float *P, float p,
											 uint64_t seed, float *Y, float *db);
} gnn_backend_ops;

/* One backend instance. */
struct gnn_backend
{
	const gnn_backend_ops *ops;
	void	   *ctx;			/* implementation state */
	char		name[32];		/* "cpu", "cuda:0", ... */
	gnn_error	err;			/* last op error */

	/* -- maintained by the dispatch layer (backend.c), not by implementations */
	void	   *dl_handle;		/* dlopen handle of a loaded backend, closed by destroy */
	int64_t		calls;			/* ops dispatched so far */
	int64_t		fail_after;		/* fault injection: calls beyond this fail; < 0 = never */
	bool		timing;			/* keep per-category times (syncs after each op) */
	double		time_s[GNN_CAT_COUNT];
	int64_t		ncalls[GNN_CAT_COUNT];
	/* per op while timing (gnn_backend_op_times): made on the first timed op, freed with the backend */
	struct gnn_op_time *op_time;
	int			nop_time;
	/*
	 * Stopping (gnn_backend_set_stop): asked before every op, and by long
	 * ops (large GEMMs, large memsets, weight initialisation) between their
	 * pieces, on the calling thread only; once it says stop, ops fail with
	 * GNN_ERR_CANCELLED, so a job stops within a piece's time in any phase.
	 */
	gnn_should_stop_fn stop_fn;
	void	   *stop_arg;
};

/*
 * The CUDA backend's entry point, exported by kernels/gnn_cuda.so as
 * GNN_BACKEND_CUDA_ENTRY (extern "C"):
 *   abi_version  the caller's GNN_BACKEND_ABI_VERSION; refuse (GNN_ERR_UNSUPPORTED) on mismatch
 *   device       CUDA device ordinal
 *   out          receives a malloc'd gnn_backend whose ops->destroy frees it
 *   err          filled on failure (no GPU: GNN_ERR_UNSUPPORTED)
 * It must not print, exit or abort.
 */
typedef gnn_status (*gnn_backend_cuda_create_fn) (uint32_t abi_version, int device,
												  gnn_backend **out, gnn_error *err);

/* ------------------------------------------------------------------ registry */

/* The CPU op table (static, read-only). */
const gnn_backend_ops *gnn_backend_cpu(void);
/* A CPU backend instance; nthreads 0 = number of cores. */
gnn_status	gnn_backend_cpu_create(int nthreads, gnn_backend **out, gnn_error *err);

/*
 * dlopen so_path (NULL: env GNN_CUDA_SO, else "gnn_cuda.so" on the loader
 * path) and call its entry point.  GNN_ERR_UNSUPPORTED with a clear message
 * when the object, the symbol, or a GPU is missing, or the ABI differs.
 */
gnn_status	gnn_backend_cuda_load(const char *so_path, int device,
								  gnn_backend **out, gnn_error *err);

/* Create by name: "cpu" or "cuda" (so_path used for cuda only). */
gnn_status	gnn_backend_create(const char *name, int nthreads, const char *so_path,
							   gnn_backend **out, gnn_error *err);

/* Destroy an instance (any kind, NULL ok); dlcloses a loaded object. */
void		gnn_backend_destroy(gnn_backend *be);

/*
 * Another instance of be's kind on the same device, with its own stream and
 * scratch (CPU: nthreads threads), for a second thread: memory either
 * allocates is usable by both.  Destroy it with gnn_backend_destroy.
 */
gnn_status	gnn_backend_twin(gnn_backend *be, int nthreads, gnn_backend **out, gnn_error *err);

/* Fault injection: the next n calls succeed, every later one fails with
 * GNN_ERR_BACKEND ("injected fault").  n < 0 disables. */
void		gnn_backend_fail_after(gnn_backend *be, int64_t n);
/* ask fn(arg) whether to stop before every op and between a long op's pieces (NULL: never) */
void		gnn_backend_set_stop(gnn_backend *be, gnn_should_stop_fn fn, void *arg);
/* whether the stop function says stop (for long loops beside the ops; calling thread only) */
bool		gnn_backend_stop_requested(gnn_backend *be);
void		gnn_backend_timing_enable(gnn_backend *be, bool on);
void		gnn_backend_timing_reset(gnn_backend *be);

/*
 * Per-op times while timing is on: the op's name (its table entry's, e.g.
 * "spmm"), seconds (synced, as the categories) and calls, since the last
 * reset, in the order the ops were first timed.  Returns how many.
 */
#define GNN_OP_TIME_SLOTS 48
typedef struct gnn_op_time
{
	char		name[24];
	double		s;
	int64_t		n;
	const char *key;			/* the dispatcher's own (its call's text) */
} gnn_op_time;
int			gnn_backend_op_times(const gnn_backend *be, const gnn_op_time **out);

/* Copy be->err into err (when err != NULL) and return the status. */
gnn_status	gnn_backend_error(gnn_backend *be, gnn_status st, gnn_error *err);

/* ------------------------------------------------------------------ dispatch
 * Same arguments as the table entries.  Callers use these. */
gnn_status	gnn_backend_set_threads(gnn_backend *be, int nthreads);
gnn_status	gnn_backend_sync(gnn_backend *be);
gnn_status	gnn_backend_alloc(gnn_backend *be, size_t bytes, void **ptr);
void		gnn_backend_free(gnn_backend *be, void *ptr);
gnn_status	gnn_backend_copy_h2d(gnn_backend *be, void *dst, const void *src, size_t bytes);
gnn_status	gnn_backend_copy_d2h(gnn_backend *be, void *dst, const void *src, size_t bytes);
gnn_status	gnn_backend_copy_d2d(gnn_backend *be, void *dst, const void *src, size_t bytes);
gnn_status	gnn_backend_memset(gnn_backend *be, void *dst, int byte, size_t bytes);
gnn_status	gnn_backend_gemm(gnn_backend *be, bool trans_a, bool trans_b,
							 int64_t m, int64_t n, int64_t k, float alpha,
							 const float *A, int64_t lda, const float *B, int64_t ldb,
							 float beta, float *C, int64_t ldc);
gnn_status	gnn_backend_spmm(gnn_backend *be, const gnn_csr *A, gnn_agg agg,
							 const float *row_scale, const float *col_scale,
							 const float *X, int64_t d, float beta, float *Y);
gnn_status	gnn_backend_spmm_t(gnn_backend *be, const gnn_csr *A, gnn_agg agg,
							   const float *row_scale, const float *col_scale,
							   const float *G, int64_t d, float beta, float *Y);
gnn_status	gnn_backend_gather_rows(gnn_backend *be, const float *src, int64_t d,
									const int32_t *idx, int64_t n, float *dst);
gnn_status	gnn_backend_scatter_add_rows(gnn_backend *be, const float *src, int64_t d,
										 const int32_t *idx, int64_t n, float *dst);
gnn_status	gnn_backend_act_forward(gnn_backend *be, gnn_act act, float param,
									const float *x, float *y, int64_t n);
gnn_status	gnn_backend_act_backward(gnn_backend *be, gnn_act act, float param,
									 const float *x, const float *y, const float *dy,
									 float *dx, int64_t n);
gnn_status	gnn_backend_axpby(gnn_backend *be, int64_t n, float alpha, const float *x,
							  float beta, float *y);
gnn_status	gnn_backend_add_bias(gnn_backend *be, float *Y, const float *bias,
								 int64_t rows, int64_t cols);
gnn_status	gnn_backend_bias_act(gnn_backend *be, float *P, const float *bias, int64_t rows,
									 int64_t cols, gnn_act act, float param, float p, uint64_t seed,
									 float *Y);
gnn_status	gnn_backend_bias_act_backward(gnn_backend *be, gnn_act act, float param,
											  const float *P, const float *dY, int64_t rows,
											  int64_t cols, float p, uint64_t seed, float *dP,
											  float *db);
gnn_status	gnn_backend_spmm_t_bias_act_backward(gnn_backend *be, const gnn_csr *A, gnn_agg agg,
												 const float *G, int64_t d, int64_t keep_rows,
												 gnn_act act, float param, const float *P,
												 float p, uint64_t seed, float *Y, float *db);
gnn_status	gnn_backend_bias_grad(gnn_backend *be, const float *dY, int64_t rows,
								  int64_t cols, float beta, float *db);
gnn_status	gnn_backend_dropout_forward(gnn_backend *be, const float *x, float *y,
										int64_t n, float p, uint64_t seed);
gnn_status	gnn_backend_dropout_backward(gnn_backend *be, const float *dy, float *dx,
										 int64_t n, float p, uint64_t seed);
gnn_status	gnn_backend_gemm_dropout(gnn_backend *be, bool trans_a, int64_t m, int64_t n,
									 int64_t k, float alpha, const float *A, int64_t lda,
									 float p, uint64_t seed, const float *B, int64_t ldb,
									 float beta, float *C, int64_t ldc);
gnn_status	gnn_backend_softmax_rows(gnn_backend *be, const float *X, float *Y,
									 int64_t n, int64_t c);
gnn_status	gnn_backend_xent(gnn_backend *be, const float *logits, int64_t n, int64_t c,
							 const int32_t *labels, const int32_t *rows, int64_t nrows,
							 float *dlogits, float *loss_host, int64_t *correct_host,
							 int64_t *counted_host);
gnn_status	gnn_backend_gat_node_scores(gnn_backend *be, const float *H, int64_t n,
										int64_t heads, int64_t f, const float *att, float *s);
gnn_status	gnn_backend_gat_node_scores_backward(gnn_backend *be, const float *H, int64_t n,
												 int64_t heads, int64_t f, const float *att,
												 const float *ds, float *dH,
												 float beta, float *datt);
gnn_status	gnn_backend_gat_edge_softmax(gnn_backend *be, const gnn_csr *A, int64_t heads,
										 const float *a_src, const float *a_dst,
										 float slope, float *alpha);
gnn_status	gnn_backend_gat_edge_softmax_backward(gnn_backend *be, const gnn_csr *A,
												  int64_t heads, const float *a_src,
												  const float *a_dst, float slope,
												  const float *alpha, const float *dalpha,
												  float *da_src, float *da_dst);
gnn_status	gnn_backend_gat_aggregate(gnn_backend *be, const gnn_csr *A, int64_t heads,
									  int64_t f, const float *alpha, const float *H, float *out);
gnn_status	gnn_backend_gat_aggregate_backward(gnn_backend *be, const gnn_csr *A,
											   int64_t heads, int64_t f, const float *alpha,
											   const float *H, const float *dout,
											   float beta, float *dH, float *dalpha);
gnn_status	gnn_backend_head_mean(gnn_backend *be, const float *X, int64_t n,
								  int64_t heads, int64_t f, float *Y);
gnn_status	gnn_backend_head_mean_backward(gnn_backend *be, const float *dY, int64_t n,
										   int64_t heads, int64_t f, float *dX);
gnn_status	gnn_backend_max_agg(gnn_backend *be, const gnn_csr *A, const float *X,
								int64_t d, float *Y, int32_t *argmax);
gnn_status	gnn_backend_max_agg_backward(gnn_backend *be, const gnn_csr *A,
										 const float *dY, const int32_t *argmax,
										 int64_t d, float beta, float *dX);
gnn_status	gnn_backend_adam_step(gnn_backend *be, float *w, const float *g, float *m,
								  float *v, int64_t n, float lr, float beta1, float beta2,
								  float eps, float weight_decay, int64_t t);
gnn_status	gnn_backend_sgd_step(gnn_backend *be, float *w, const float *g, float *buf,
								 int64_t n, float lr, float momentum, float weight_decay);

#ifdef __cplusplus
}
#endif

#endif							/* GNN_BACKEND_H */
