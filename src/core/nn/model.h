/*
 * model.h: GNN layers (GCN, GraphSAGE mean / max-pool, GAT) with
 * hand-written forward and backward passes, over generic "blocks".
 *
 * A block is a bipartite CSR: n_dst destination rows aggregate from n_src
 * source columns, and destination i is source i (DGL convention), so layer
 * l maps an [n_src x d_in] input to an [n_dst x d_out] output.  Full-batch
 * training is the case n_dst = n_src = all nodes with the graph's in-edges
 * (graph.h's reverse CSR) as the block; minibatch training passes one
 * sampled block per layer and reuses the same layers.
 *
 * Layer math (X = layer input after dropout, A = block, Â = A with self loops
 * added where missing and GCN normalisation D_dst^-1/2 (A+I) D_src^-1/2):
 *   GCN:       Y = act(Â (X W) + b)
 *   SAGE mean: Y = act(X_dst W_root + mean_A(X W_neigh) + b)
 *   SAGE pool: Y = act(X_dst W_root + max_A(relu(X W_pool + b_pool)) W_neigh + b)
 *   GAT:       H = X W; alpha = softmax_row(LeakyReLU(H a_src + H a_dst)) over Â,
 *              attention dropout on alpha; Y = act(concat_h or mean_h(alpha H) + b)
 * Dropout is applied to every layer's input (also to sparse input features,
 * on their non-zeros), as in Kipf & Welling and the GAT paper.
 *
 * Relational layers (RGCN, HSAGE) read the block's relation of each entry
 * (etypes) and type of each destination (dst_ntype); mean_r(H) is the mean
 * over a destination's in-neighbours of relation r (0 when it has none).
 * Layer 0 first projects its input, H = X P (P = "l0.proj", in_dim x
 * hidden, no bias: the loader's typed features carry a constant-1 column
 * per node type, so this is a per-type projection with a per-type bias);
 * later layers take the previous output as H.
 *   RGCN:  Y = act(H_dst W_root + sum_r mean_r(H) W_r + b),
 *          W_r = sum_b coef[r,b] V_b with num_bases > 0 ("bases" holds the
 *          V_b stacked: [B*d x d_out]; "coef" [R x B]), else "weight" holds
 *          the W_r stacked ([R*d x d_out])
 *   HSAGE: Y = act(sum_r mean_r(H) W_r + H_dst W_root[t] + b[t]),
 *          t = type of the destination; "root" [T*d x d_out], "bias" [T x d_out]
 * GCN, GraphSAGE and GAT ignore etypes and dst_ntype (type-blind).
 */
#ifndef GNN_MODEL_H
#define GNN_MODEL_H

#include "nn/tensor.h"
#include "graph/graph.h"

typedef enum gnn_model_kind
{
	GNN_MODEL_GCN = 0,
	GNN_MODEL_SAGE = 1,
	GNN_MODEL_GAT = 2,
	GNN_MODEL_RGCN = 3,			/* relational GCN (Schlichtkrull et al. 2018), basis decomposition */
	GNN_MODEL_HSAGE = 4,		/* heterogeneous GraphSAGE: a SAGE conv per relation, summed per
								 * destination type (PyG to_hetero(SAGEConv), RelBench's baseline) */
	GNN_MODEL_NODE2VEC = 5		/* a row per node, learnt from random walks (train_node2vec.h):
								 * one layer, "l0.emb" [in_dim = nodes x hidden], no forward
								 * pass; inference reads its rows (gnn_model_infer*) */
} gnn_model_kind;

typedef enum gnn_aggr
{
	GNN_AGGR_MEAN = 0,
	GNN_AGGR_POOL = 1
} gnn_aggr;

#define GNN_MAX_LAYERS 8
#define GNN_MAX_HEADS 64
#define GNN_PARAM_NAME_LEN 32

typedef struct gnn_model_config
{
	gnn_model_kind kind;
	gnn_aggr	aggr;			/* GraphSAGE only */
	int32_t		in_dim;
	int32_t		hidden;			/* per head for GAT */
	int32_t		out_dim;		/* classes */
	int32_t		layers;			/* >= 1 */
	int32_t		heads;			/* GAT hidden layers (concatenated) */
	int32_t		out_heads;		/* GAT output layer (averaged) */
	float		dropout;		/* on every layer's input */
	float		attn_dropout;	/* GAT, on attention coefficients */
	float		negative_slope; /* GAT LeakyReLU, 0.2 */
	gnn_act		act;			/* hidden activation: RELU (GCN/SAGE) or ELU (GAT) */
	float		act_param;		/* ELU alpha / leaky slope */
	bool		decay_first_only;	/* weight decay only on layer 0 (Kipf & Welling GCN) */
	/* relational models (RGCN, HSAGE); ignored by the others */
	int32_t		num_relations;	/* >= 1 */
	int32_t		num_node_types; /* >= 1 */
	int32_t		num_bases;		/* RGCN: 0 = a full weight per relation */
} gnn_model_config;

/* Defaults for a kind (K&W / GAT-paper hyper-parameters); in/out dims left 0. */
void		gnn_model_config_default(gnn_model_kind kind, gnn_model_config *cfg);
/* Validate; GNN_ERR_INVALID with a message naming the field and accepted values. */
gnn_status	gnn_model_config_check(const gnn_model_config *cfg, gnn_error *err);
const char *gnn_model_kind_name(gnn_model_kind kind);

/* One trainable tensor with its gradient and optimiser state. */
typedef struct gnn_param
{
	char		name[GNN_PARAM_NAME_LEN];	/* "l0.weight", ... */
	gnn_tensor	w;
	gnn_tensor	g;
	gnn_tensor	m;				/* Adam first moment / SGD momentum */
	gnn_tensor	v;				/* Adam second moment */
	bool		decay;			/* weight decay applies */
} gnn_param;

/* ------------------------------------------------------------------ blocks */

/* A block on the host (arrays borrowed). */
typedef struct gnn_block
{
	int64_t		n_dst;
	int64_t		n_src;			/* >= n_dst */
	int64_t		nnz;
	const int64_t *indptr;		/* [n_dst + 1] */
	const int32_t *indices;		/* [nnz] source column, sorted within a row */
	const float *weights;		/* [nnz] or NULL */
	const int16_t *etypes;		/* [nnz] relation of each entry, or NULL (all relation 0) */
	const int16_t *dst_ntype;	/* [n_dst] node type of each destination, or NULL (all type 0) */
} gnn_block;

/* The whole graph as one block: in-edges (reverse CSR). */
void		gnn_block_from_graph(const gnn_graph *g, gnn_block *blk);

/* A device CSR owning its arrays (with transpose). */
typedef struct gnn_dcsr
{
	gnn_csr		csr;
	gnn_backend *be;
	void	   *mem[6];
} gnn_dcsr;

/* Build the transpose on the host and upload both. values may be NULL. */
gnn_status	gnn_dcsr_create(gnn_backend *be, int64_t n_rows, int64_t n_cols, int64_t nnz,
							const int64_t *indptr, const int32_t *indices,
							const float *values, gnn_dcsr *out, gnn_error *err);
void		gnn_dcsr_free(gnn_dcsr *d);

/*
 * One relation of a typed block, for the relational layers (RGCN, HSAGE):
 * its entries as a CSR `a` over compacted rows and columns (only the
 * destinations and sources the relation touches, so R relations cost
 * O(nnz) in all rather than R times the block's size), the block's weights
 * kept, aggregated as a mean.  rows[k] is the block row of a's row k and
 * cols[q] the block column of a's column q; NULL means the identity (a
 * relation touching most rows or columns keeps them all, with empty rows,
 * and saves the gather / scatter).
 */
typedef struct gnn_drel
{
	int64_t		nd;				/* rows of a */
	int64_t		ns;				/* columns of a */
	int32_t    *rows;			/* backend [nd], or NULL: row k is block row k */
	int32_t    *cols;			/* backend [ns], or NULL: column q is block column q */
	gnn_dcsr	a;				/* nnz 0: the relation has no entry in the block */
} gnn_drel;

/* The destinations of one node type: rows NULL with n == n_dst: all of them. */
typedef struct gnn_drows
{
	int64_t		n;
	int32_t    *rows;			/* backend [n] */
} gnn_drows;

/* A block prepared on a backend: the raw CSR (SAGE) and the self-looped,
 * GCN-normalised CSR (GCN values; GAT uses its structure); for a block with
 * etypes / dst_ntype also the per-relation CSRs and the destinations of
 * each node type (relational layers; the others ignore them). */
typedef struct gnn_dblock
{
	int64_t		n_dst;
	int64_t		n_src;
	gnn_dcsr	raw;
	gnn_dcsr	loop;
	gnn_backend *be;
	int32_t		num_rel;		/* 1 + the largest relation in etypes; 0: no etypes (all relation 0 = raw) */
	gnn_drel   *rel;			/* [num_rel], host array */
	int32_t		num_ntypes;		/* 1 + the largest destination type; 0: no dst_ntype (all type 0) */
	int32_t    *ntype;			/* backend [n_dst] destination types (int32), NULL when num_ntypes == 0 */
	gnn_drows  *trows;			/* [num_ntypes], host array */
} gnn_dblock;

gnn_status	gnn_dblock_create(gnn_backend *be, const gnn_block *blk, gnn_dblock *out,
							  gnn_error *err);

/*
 * As gnn_dblock_create, for training a model of kind: GraphSAGE reads the
 * raw CSR only, so the self-looped, normalised one (and its transpose, six
 * times the work of the raw pair on a sampled batch) is left out.
 */
gnn_status	gnn_dblock_create_for(gnn_backend *be, const gnn_block *blk, gnn_model_kind kind,
								  gnn_dblock *out, gnn_error *err);

/*
 * As gnn_dblock_create, but GCN's normalisation D_dst^-1/2 (A+I) D_src^-1/2
 * takes its degrees from deg_dst[n_dst] and deg_src[n_src] (either may be
 * NULL: the block's own row / column sums).  A block cut out of a graph
 * passes the graph's degrees (gnn_graph_gcn_degree) so that its values are
 * the whole graph's: in the block, a source's column sum misses its edges to
 * nodes outside it.
 */
gnn_status	gnn_dblock_create_normed(gnn_backend *be, const gnn_block *blk,
									 const double *deg_dst, const double *deg_src,
									 gnn_dblock *out, gnn_error *err);

/*
 * A block for forward passes only (inference): no transposes, so backward
 * products on it fail, and only the CSR that `kind` reads (raw for
 * GraphSAGE, self-looped and normalised as gnn_dblock_create_normed for GCN
 * and GAT, the per-relation CSRs for RGCN and HSAGE, with raw when the
 * block has no etypes), with the same values.  On the CPU backend the raw CSR borrows
 * blk's arrays, which must then outlive the block.
 */
gnn_status	gnn_dblock_create_forward(gnn_backend *be, const gnn_block *blk, gnn_model_kind kind,
									  const double *deg_dst, const double *deg_src,
									  gnn_dblock *out, gnn_error *err);

/*
 * Node v's degree in g's adjacency with self loops added where missing
 * (weight 1): in = true the sum of its in-edge weights (its row in the
 * whole-graph block), false of its out-edge weights (its column).  Summed in
 * the order gnn_dblock_create sums the whole graph, so a block normalised
 * with these degrees has bit for bit the whole graph's values.  O(log degree)
 * unweighted, O(degree) weighted.
 */
double		gnn_graph_gcn_degree(const gnn_graph *g, int64_t v, bool in);
void		gnn_dblock_free(gnn_dblock *b);

/* Input features on a backend: dense [rows x dim] or sparse CSR. */
typedef struct gnn_dfeat
{
	int64_t		rows;
	int32_t		dim;
	bool		sparse;
	gnn_dcsr	sp;				/* sparse */
	gnn_tensor	dense;			/* dense */
	/*
	 * Streamed (gnn_dfeat_stream): neither of the above; the rows are read
	 * from the graph's feature store in chunks as a forward pass needs them.
	 */
	const struct gnn_graph *stream;
	bool		stream_norm;	/* each row divided by its sum */
} gnn_dfeat;

/*
 * Upload a graph's features; row_normalise divides each row by its sum
 * (Kipf & Welling's preprocessing of bag-of-words features; rows summing to
 * 0 stay 0).  Sparse features stay sparse.
 */
gnn_status	gnn_dfeat_from_graph(gnn_backend *be, const gnn_graph *g, bool row_normalise,
								 gnn_dfeat *out, gnn_error *err);

/*
 * For forward passes only (inference, evaluation): a graph whose features
 * are on disk is streamed, never held whole: a GCN, GraphSAGE or GAT layer
 * reads its input only through X W, which is computed chunk by chunk of
 * gnn_stream_rows rows gathered through the store (the small activations
 * are kept, not the large features: P3's point).  Any other graph, or a
 * layer that needs all of X (training, relational layers), is as
 * gnn_dfeat_from_graph.
 */
extern int64_t gnn_stream_rows;	/* rows per chunk: 16384 (tests lower it to cross chunk boundaries) */
gnn_status	gnn_dfeat_stream(gnn_backend *be, const gnn_graph *g, bool row_normalise, gnn_dfeat *out,
							 gnn_error *err);
gnn_status	gnn_dfeat_dense(gnn_backend *be, const float *host, int64_t rows, int32_t dim,
							gnn_dfeat *out, gnn_error *err);
gnn_status	gnn_dfeat_sparse(gnn_backend *be, int64_t rows, int32_t dim, const int64_t *ptr,
							 const int32_t *idx, const float *val, gnn_dfeat *out,
							 gnn_error *err);
void		gnn_dfeat_free(gnn_dfeat *f);

/* ------------------------------------------------------------------ model */

typedef struct gnn_model gnn_model;

/* Create with Glorot-uniform weights drawn from rng, zero biases. */
gnn_status	gnn_model_create(gnn_backend *be, const gnn_model_config *cfg, gnn_rng *rng,
							 gnn_model **out, gnn_error *err);
void		gnn_model_free(gnn_model *m);

/*
 * The parameters a configuration implies, without allocating: calls fn for
 * each (name, rows, cols) in creation order and returns the total number of
 * floats (or -1 if the configuration is invalid).  fn may be NULL.
 */
int64_t		gnn_model_config_params(const gnn_model_config *cfg,
									void (*fn) (void *arg, const char *name, int64_t rows, int64_t cols),
									void *arg);

const gnn_model_config *gnn_model_config_of(const gnn_model *m);
gnn_backend *gnn_model_backend(const gnn_model *m);
int			gnn_model_num_params(const gnn_model *m);
gnn_param  *gnn_model_param(gnn_model *m, int i);
/* Index of a parameter by name, or -1. */
int			gnn_model_find_param(const gnn_model *m, const char *name);

/*
 * Forward pass.  blocks[l] for layer l (for full batch, the same block
 * repeated); x has blocks[0]->n_src rows.  train: apply dropout, with masks
 * derived from seed (so the backward pass reproduces them), and keep what
 * backward needs.  *logits (backend memory, blocks[L-1]->n_dst x out_dim)
 * stays valid until the next forward.
 */
gnn_status	gnn_model_forward(gnn_model *m, gnn_dblock *const *blocks, const gnn_dfeat *x,
							  bool train, uint64_t seed, const float **logits,
							  gnn_error *err);
/*
 * An evaluation forward (no dropout) of layers 0..nlayers-1 only, for a
 * caller that wants an inner layer's output without running the layers
 * above it: blocks[l] for l < nlayers.  *out (backend memory,
 * blocks[nlayers-1]->n_dst x gnn_model_layer_dim(nlayers-1)) stays valid
 * until the next forward.  Backward is refused after it.  GCN and
 * GraphSAGE-mean layers may aggregate their inputs before transforming them
 * where that is cheaper (few destinations, many sources), so the values
 * equal gnn_model_forward's up to float summation order.
 */
gnn_status	gnn_model_forward_layers(gnn_model *m, gnn_dblock *const *blocks, int nlayers,
									 const gnn_dfeat *x, const float **out, gnn_error *err);
/*
 * An evaluation forward of layers first..layers-1 (1 <= first < layers) on
 * given inputs to layer first: in (backend memory, blocks[first]->n_src x
 * gnn_model_layer_dim(first-1)), as if the layers below had produced it;
 * blocks[l] for first <= l < layers.  For a caller that has the lower
 * layers' rows of some nodes already (evaluation's reused rows, train_mb.c).
 * *out: the output layer's rows (blocks[layers-1]->n_dst), valid until the
 * next forward; backward is refused after it.  A model over parts (halo)
 * is GNN_ERR_UNSUPPORTED; feature slices (gnn_model_set_reduce) reduce
 * layer 0 only, which this does not run.
 */
gnn_status	gnn_model_forward_from(gnn_model *m, gnn_dblock *const *blocks, int first, const float *in,
								   const float **out, gnn_error *err);
/* The dropout seed layer l uses for its input (attention = false) or its
 * attention coefficients, given the forward seed: element i of the input
 * (non-zero i for sparse input; e*heads + h for attention) is kept when
 * gnn_math_dropout_keep(that seed, i, p).  For reference implementations. */
uint64_t	gnn_model_dropout_seed(uint64_t seed, int layer, bool attention);

/* Backward from dlogits (backend memory); fills every param's g. Needs a
 * preceding forward (normally with train = true; an eval pass gives the
 * gradient without dropout). */
gnn_status	gnn_model_backward(gnn_model *m, const float *dlogits, gnn_error *err);

/*
 * Distributed full-batch training on one part of a graph (halo.h): before
 * every layer but the first, fn(arg, input, dim, false) makes the halo rows
 * of its input (the previous layer's output, host memory) their owners';
 * after every layer's backward but the first's, fn(arg, dinput, dim, true)
 * sends the halo rows of the input gradient to their owners.  NULL: none.
 */
typedef gnn_status (*gnn_halo_fn) (void *arg, float *rows, int32_t dim, bool backward, gnn_error *err);
void		gnn_model_set_halo(gnn_model *m, gnn_halo_fn fn, void *arg);

/*
 * Layer 0 split by feature dimension over ranks (P3, train_mb.h's
 * feature_slices): each rank's model reads its slice of the input columns,
 * so layer 0's products (before the bias) are partial sums of the whole
 * input's; fn(arg, P, count) makes them the sum over the ranks (host
 * memory: the CPU backend), after which the layer adds its bias and goes on
 * as one model.  Its backward needs nothing: the gradient of the summed
 * products is every rank's, and each rank's slice of the weights takes its
 * own part of it.  Linear layers 0 only: GCN and GraphSAGE (mean).
 */
typedef gnn_status (*gnn_reduce_fn) (void *arg, float *rows, int64_t count, gnn_error *err);
void		gnn_model_set_reduce(gnn_model *m, gnn_reduce_fn fn, void *arg);

/* Output of layer l of the last forward (l = layers-1: logits; l = layers-2:
 * the last hidden layer, i.e. node embeddings), in backend memory. */
const float *gnn_model_layer_output(const gnn_model *m, int layer, int64_t *rows,
									int32_t *cols);
/* Width of layer l's output. */
int32_t		gnn_model_layer_dim(const gnn_model *m, int layer);
/* The same from the architecture alone (no model built): equal to it for every layer. */
int32_t		gnn_model_config_layer_dim(const gnn_model_config *cfg, int layer);

/*
 * A node2vec model's rows (its embeddings) for the nodes idx[0..n) of g
 * (NULL: every node, in order) into host_out, n x hidden.  The model's
 * table must have g's node count (a graph whose nodes changed since
 * training is GNN_ERR_DIMENSION: train again); an idx out of range, or a
 * model of another kind, is GNN_ERR_INVALID.
 */
gnn_status	gnn_model_node_rows(gnn_model *m, const gnn_graph *g, const int64_t *idx, int64_t n,
								float *host_out, gnn_error *err);

/* Copy all weights to / from host snapshots (for best-on-validation). */
size_t		gnn_model_weights_count(const gnn_model *m);	/* floats */
gnn_status	gnn_model_weights_get(gnn_model *m, float *host, gnn_error *err);
gnn_status	gnn_model_weights_set(gnn_model *m, const float *host, gnn_error *err);

#endif							/* GNN_MODEL_H */
