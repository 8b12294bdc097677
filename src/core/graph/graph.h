/*
 * graph.h: the one representation of a graph.
 *
 * Loaders collect a COO edge list and optional node data (gnn_graph_input);
 * gnn_graph_build turns it into CSR arrays held by a builder; gnn_graph_write
 * lays those arrays out in one contiguous region (a header plus arrays at
 * offsets, no pointers) that any process can map at any address;
 * gnn_graph_attach validates a region and gives a pointer view (gnn_graph).
 *
 * Node ids are arbitrary int64 values; the internal index of a node is the
 * rank of its id in ascending order, so ids[] is sorted and lookups are a
 * binary search (gnn_graph_find).  Edges are src -> dst.  The CSR (indptr,
 * indices) lists each node's out-neighbours; the reverse CSR (rindptr,
 * rindices) lists its in-neighbours, the nodes it aggregates messages from.
 * Within a row, neighbours are sorted and unique (duplicate edges merged,
 * weights summed); self loops are kept as given.
 */
#ifndef GNN_GRAPH_H
#define GNN_GRAPH_H

#include "base/gnn_core.h"
#include "base/ops_math.h"		/* gnn_math_lower_bound */

#define GNN_GRAPH_MAGIC   0x474e4e47u	/* "GNNG" */
#define GNN_GRAPH_VERSION 3

/*
 * Types.  Every graph has node types and edge types; a homogeneous graph has
 * one of each (its arrays of types are then absent: node_type / arc_type
 * NULL).  Nodes of type t occupy the index range [type_ptr[t], type_ptr[t+1]),
 * so a node's type is a property of its index.  Edge (relation) type r joins
 * source nodes of etypes[r].src_type to destination nodes of
 * etypes[r].dst_type; every arc carries its relation (arc_type parallel to
 * indices, rarc_type parallel to rindices).  Rows stay sorted by neighbour
 * index, then by relation; two arcs between the same nodes with different
 * relations are distinct arcs (only same-relation duplicates merge).  As node
 * indices are grouped by type, the in-neighbours of relation r in a row lie in
 * the sub-range of sources of type etypes[r].src_type (a binary search away);
 * relations that share both endpoint types interleave there.
 */
/* GNN_MAX_NODE_TYPES, GNN_MAX_EDGE_TYPES: base/gnn_core.h (models check them too) */
#define GNN_TIME_NONE INT64_MIN		/* a node without a time: always admissible */

typedef struct gnn_edge_type
{
	int32_t		src_type;
	int32_t		dst_type;
	int64_t		count;			/* arcs of this relation after merging */
} gnn_edge_type;

enum
{
	GNN_SPLIT_NONE = 0,
	GNN_SPLIT_TRAIN = 1,
	GNN_SPLIT_VAL = 2,
	GNN_SPLIT_TEST = 3
};

enum
{
	GNN_FEAT_NONE = 0,
	GNN_FEAT_DENSE = 1,			/* float[n * dim], row-major */
	GNN_FEAT_SPARSE = 2			/* CSR: fptr int64[n+1], fidx int32[nnz], fval float[nnz] */
};

/* What a loader collected.  Arrays are borrowed, not copied or freed. */
/*
 * Edges as references (typed input): for every node of type src_type, in
 * index order, ref[i] is the global index of the node of type dst_type that
 * node i refers to, or -1 for none (a NULL foreign key).  Each reference is
 * an arc i -> ref[i] of relation rel_fwd and an arc ref[i] -> i of relation
 * rel_rev, so a foreign-key column becomes its two relations without any
 * sort: the build lays out the CSR directly (rows in (neighbour, relation)
 * order), and the reverse CSR is the same arrays with each relation swapped
 * for its pair.  The relations of all references are distinct, and
 * etype_src / etype_dst must agree with src_type / dst_type.
 */
typedef struct gnn_graph_ref
{
	int32_t		src_type;
	int32_t		dst_type;
	int32_t		rel_fwd;
	int32_t		rel_rev;
	const int32_t *ref;			/* one per node of src_type */
} gnn_graph_ref;

typedef struct gnn_graph_input
{
	/* edges, in original ids */
	int64_t		num_edges;
	const int64_t *src;
	const int64_t *dst;
	/* or 32-bit ids (a loader reading int4 columns: half the memory), src and dst NULL */
	const int32_t *src32;
	const int32_t *dst32;
	const float *weight;		/* NULL: every edge weighs 1 */
	bool		undirected;		/* add each edge's reverse */
	bool		skip_dangling;	/* drop edges whose endpoint is not a node */

	/* nodes; node_ids == NULL means: the nodes are the edge endpoints */
	int64_t		num_nodes;
	const int64_t *node_ids;

	/* per node row (parallel to node_ids), each optional */
	int32_t		feat_dim;		/* dense features */
	const float *feat;			/* num_nodes * feat_dim */
	/*
	 * or dense features the caller writes straight into the region (feat
	 * NULL, feat_dim set): once the region is laid out, feat_fill(arg, dst,
	 * node_of_row, err) writes input row r's feat_dim values at
	 * dst + node_of_row[r] * feat_dim for every row r < num_nodes, checking
	 * them (finite) itself; anything but GNN_OK fails the build.  It runs on
	 * the calling thread, outside any parallel region.  A loader reads its
	 * feature column this way without holding the matrix a second time.
	 */
	gnn_status	(*feat_fill) (void *arg, float *dst, const int64_t *node_of_row, gnn_error *err);
	void	   *feat_fill_arg;
	const int32_t *labels;		/* -1: no label */
	const uint8_t *split;		/* GNN_SPLIT_* */

	/* sparse features as (node id, index, value) triples, optional */
	int64_t		sparse_nnz;
	const int64_t *sp_node;
	const int32_t *sp_index;
	const float *sp_value;
	int32_t		sparse_dim;		/* 0: max index + 1 */
	/*
	 * or sparse features as a CSR over the node rows (typed or keyed input
	 * only, whose node_ids are 0..n-1; sp_node is then unused): row v's entries
	 * are [sp_ptr[v], sp_ptr[v+1]) of sp_index / sp_value, indices strictly
	 * ascending within a row, sp_ptr[n] = sparse_nnz
	 */
	const int64_t *sp_ptr;
	/*
	 * or that CSR written by the caller straight into the region (sp_ptr,
	 * sp_node, sp_index, sp_value NULL; sparse_nnz and sparse_dim > 0 set;
	 * node_ids 0..n-1 as for sp_ptr): once the region is laid out,
	 * sp_fill(arg, ptr, idx, val, sparse_nnz, err) writes ptr[0..n] and the
	 * sparse_nnz entries as sp_ptr describes them, and the build then checks
	 * them as it checks sp_ptr's.  It runs on the calling thread, outside
	 * any parallel region; anything but GNN_OK fails the build.  A loader
	 * that encodes features this way never holds them a second time.
	 */
	gnn_status	(*sp_fill) (void *arg, int64_t *ptr, int32_t *idx, float *val, int64_t nnz, gnn_error *err);
	void	   *sp_fill_arg;

	/* names of classes 0..C-1 for text labels: C NUL-terminated strings back to back */
	const char *class_names;
	uint64_t	class_names_bytes;

	/*
	 * Types (all optional; absent = one node type and one edge type).
	 * A typed input (num_node_types > 1 or num_edge_types > 1) must give
	 * node_ids = 0..num_nodes-1 in order, i.e. the caller has already mapped
	 * (type, key) pairs to global indices, with each type's nodes contiguous
	 * (node_type non-decreasing) and keys ascending within a type; src / dst
	 * are global indices; undirected must be false (the caller adds reverse
	 * relations itself) and skip_dangling is irrelevant.
	 */
	int32_t		num_node_types; /* 0 or 1: homogeneous */
	const int16_t *node_type;	/* per node row */
	int32_t		num_edge_types; /* 0 or 1: one relation */
	const int16_t *edge_type;	/* per input edge, in [0, num_edge_types) */
	const int32_t *etype_src;	/* per relation: source node type */
	const int32_t *etype_dst;	/* per relation: destination node type */
	/* keep per arc how many edge rows it merges (gnn_graph.arc_rows): a
	 * graph that follows its tables (gnn_graph_apply_changes) needs it.
	 * Edges as src / dst only: references (one arc each) ignore it */
	bool		keep_arc_rows;
	/* edges as references instead of src / dst (num_edges must be 0) */
	int32_t		num_refs;
	const gnn_graph_ref *refs;
	/* names: node types then relations, NUL-terminated back to back (optional) */
	const char *type_names;
	uint64_t	type_names_bytes;

	/* original keys (optional): int64 per node row (strictly ascending within
	 * each int-keyed type); NULL means the ids are the keys (for a typed
	 * graph: the node indices) */
	const int64_t *keys;
	/* text keys (optional): the key of row i is key_bytes[key_off[i] ..
	 * key_off[i+1]) (not NUL-terminated, empty for rows of int-keyed types),
	 * ascending (memcmp, shorter first on a tie) within a text-keyed type;
	 * type_text_key[t] says which types are text-keyed (NULL: all of them).
	 * Keys (either kind) need node_ids 0..n-1, as typed input does. */
	const int64_t *key_off;		/* num_nodes + 1 */
	const char *key_bytes;
	const uint8_t *type_text_key;	/* per node type */

	const int64_t *node_time;	/* per node row, GNN_TIME_NONE = none; NULL: no times */
	/*
	 * per node row, the time a seed at that node samples at when it is not
	 * its own time (a prediction made at a snapshot later than the row's
	 * creation); GNN_TIME_NONE = its own time; NULL: none.  Needs node_time.
	 */
	const int64_t *seed_time;
	const float *targets;		/* per node row regression target, NAN = none (infinity is
								 * GNN_ERR_BAD_VALUE); NULL: none */
	/* an opaque blob kept with the graph (the loader's JSON: encodings, sources) */
	const char *meta;
	uint64_t	meta_bytes;

	/*
	 * One part of a partitioned graph (gnn.load_graph's part_column / part):
	 * per node row, the part that owns the node (its features, labels and
	 * split are the owner's), or -1 when the owner is not known here (a halo
	 * node whose row is not in this server's node table).  Rows owned by
	 * `part` are this graph's own nodes; the others are its halo.  NULL: not
	 * partitioned.  Needs node_ids.
	 */
	const int32_t *node_part;
	int32_t		part;

	int			nthreads;		/* 0: all cores */
} gnn_graph_input;

/* The region header; all offsets are from the start of the region, 0 = absent. */
typedef struct gnn_graph_header
{
	uint32_t	magic;
	uint32_t	version;
	uint64_t	total_bytes;
	int64_t		num_nodes;
	int64_t		num_edges;		/* directed arcs after symmetrising and merging */
	int64_t		feat_nnz;
	int64_t		n_train;
	int64_t		n_val;
	int64_t		n_test;
	int64_t		n_labelled;
	int32_t		feat_kind;
	int32_t		feat_dim;
	int32_t		num_classes;
	int32_t		weighted;
	uint64_t	off_ids;		/* int64[n], ascending */
	uint64_t	off_indptr;		/* int64[n+1] */
	uint64_t	off_indices;	/* int32[m] */
	uint64_t	off_weights;	/* float[m] */
	uint64_t	off_rindptr;	/* int64[n+1] */
	uint64_t	off_rindices;	/* int32[m] */
	uint64_t	off_rweights;	/* float[m] */
	uint64_t	off_feat;		/* dense float[n*dim] */
	uint64_t	off_fptr;		/* sparse int64[n+1] */
	uint64_t	off_fidx;		/* int32[nnz] */
	uint64_t	off_fval;		/* float[nnz] */
	uint64_t	off_labels;		/* int32[n], -1 = none */
	uint64_t	off_split;		/* uint8[n] */
	uint64_t	off_class_names;	/* char[class_names_bytes] */
	uint64_t	class_names_bytes;
	/* version 2: types, keys, times, targets, meta */
	int32_t		num_node_types;
	int32_t		num_edge_types;
	uint64_t	off_type_ptr;	/* int64[T+1] (always) */
	uint64_t	off_node_type;	/* int16[n] (T > 1) */
	uint64_t	off_etypes;		/* gnn_edge_type[R] (always) */
	uint64_t	off_arc_type;	/* int16[m] (R > 1) */
	uint64_t	off_rarc_type;	/* int16[m] (R > 1) */
	uint64_t	off_type_names; /* char[type_names_bytes] */
	uint64_t	type_names_bytes;
	uint64_t	off_keys;		/* int64[n] (typed graphs with keys) */
	uint64_t	off_key_off;	/* int64[n+1] (text keys) */
	uint64_t	off_key_bytes;	/* char[key_bytes] */
	uint64_t	key_bytes;
	uint64_t	off_type_text_key;	/* uint8[T] */
	uint64_t	off_time;		/* int64[n] */
	uint64_t	off_targets;	/* float[n] */
	uint64_t	off_meta;		/* char[meta_bytes] */
	uint64_t	meta_bytes;
	uint64_t	off_seed_time;	/* int64[n] */
	uint64_t	off_arc_rows;	/* int32[m] */
	/* version 3: one part of a partitioned graph */
	uint64_t	off_part;		/* int32[n]: owner part, -1 unknown */
	int32_t		part;			/* this graph's own part (with off_part) */
	int32_t		reserved3;
	int64_t		n_owned;		/* nodes of part `part` (with off_part) */
	uint64_t	checksum;		/* of the header fields above (not the arrays) */
} gnn_graph_header;

/*
 * Rows a delta replaces in one direction of the CSR (or node feature rows):
 * bit v of bits says row v is replaced, and it is then row k of ptr / idx /
 * w / rows, k = rank[v / 64] + the set bits below v's in its word.
 */
typedef struct gnn_graph_patch
{
	const uint64_t *bits;		/* [ceil(n / 64)] */
	const int32_t *rank;		/* [ceil(n / 64)]: replaced rows before each word */
	const int64_t *ptr;			/* [k + 1] */
	const int32_t *idx;			/* neighbours */
	const float *w;				/* weights (weighted graphs) */
	const int32_t *rows;		/* edge rows per arc (forward rows only) */
	const float *feat;			/* feature rows, feat_dim each (node patches only) */
} gnn_graph_patch;

/* A process-local pointer view of a region. */
typedef struct gnn_graph
{
	int64_t		num_nodes;
	int64_t		num_edges;
	const int64_t *ids;
	const int64_t *indptr;
	const int32_t *indices;
	const float *weights;		/* NULL when unweighted (or without arcs) */
	bool		weighted;		/* built with weights (also without arcs) */
	const int64_t *rindptr;
	const int32_t *rindices;
	const float *rweights;
	int32_t		feat_kind;
	int32_t		feat_dim;
	int64_t		feat_nnz;
	const float *feat;
	const int64_t *fptr;
	const int32_t *fidx;
	const float *fval;
	int32_t		num_classes;
	const int32_t *labels;		/* NULL when unlabelled */
	const uint8_t *split;		/* NULL when no split */
	const char *class_names;	/* NULL when labels were integers */
	uint64_t	class_names_bytes;
	int64_t		n_train;
	int64_t		n_val;
	int64_t		n_test;

	/* types (see the comment at GNN_MAX_NODE_TYPES) */
	int32_t		num_node_types; /* >= 1 */
	const int64_t *type_ptr;	/* [T+1] */
	const int16_t *node_type;	/* [n], NULL when T == 1 */
	int32_t		num_edge_types; /* >= 1 */
	const gnn_edge_type *etypes;	/* [R] */
	const int16_t *arc_type;	/* [m] parallel to indices, NULL when R == 1 */
	const int16_t *rarc_type;	/* [m] parallel to rindices, NULL when R == 1 */
	const char *type_names;		/* NULL when none were given */
	uint64_t	type_names_bytes;
	const int64_t *keys;		/* [n] original integer keys (= ids for a homogeneous graph) */
	const int64_t *key_off;		/* [n+1] text keys, NULL when none */
	const char *key_bytes;
	const uint8_t *type_text_key;	/* [T], NULL when no text keys */
	const int64_t *time;		/* [n], NULL when no node has a time */
	const int64_t *seed_time;	/* [n], NULL when no seed has a time of its own */
	const int32_t *arc_rows;	/* [m] edge rows merged into each arc, NULL: one each (keep_arc_rows) */
	const float *targets;		/* [n], NULL when no regression targets */
	const char *meta;			/* NULL when none */
	uint64_t	meta_bytes;
	/*
	 * One part of a partitioned graph: the owner part of every node (-1: not
	 * known here), this graph's own part and how many nodes it owns; the
	 * others are its halo (no features, labels or split of their own).
	 * node_part NULL: not partitioned (every node is the graph's own).
	 */
	const int32_t *node_part;
	int32_t		part;
	int64_t		n_owned;

	/*
	 * A delta over the region (gnn_graph_attach_delta): the rows and feature
	 * rows it replaces.  indptr / indices / weights, their reverse and feat
	 * are then the base's: read rows through gnn_graph_out_row /
	 * gnn_graph_in_row and features through gnn_graph_feat_row, or take a
	 * flat copy (gnn_graph_flatten).  Counts, labels, split and etypes are
	 * the delta's.
	 */
	bool		has_delta;
	gnn_graph_patch dfwd;
	gnn_graph_patch drev;
	gnn_graph_patch dnode;
	const void *region;			/* the base region (gnn_graph_attach) */
	const void *delta;			/* the delta region, NULL when none */
	uint64_t	delta_bytes;

	/*
	 * Dense features kept on disk (feature_store.h), set by the caller after
	 * attaching a region built without them: feat is then NULL, feat_kind
	 * GNN_FEAT_DENSE and feat_dim the store's.  Every reader of dense
	 * features goes through gnn_gather_dense / gnn_graph_feat_range
	 * (sample.h), which read through the store's cache; gnn_graph_feat_row
	 * returns NULL for such a graph.
	 */
	struct gnn_fstore *fstore;
} gnn_graph;

/* the slot of row v in patch p, or -1 when p leaves it to the base */
static inline int64_t
gnn_graph_patch_slot(const gnn_graph_patch *p, int64_t v)
{
	uint64_t	w,
				bit;

	if (!p->bits)
		return -1;
	w = p->bits[v >> 6];
	bit = (uint64_t) 1 << (v & 63);
	if (!(w & bit))
		return -1;
	return p->rank[v >> 6] + __builtin_popcountll(w & (bit - 1));
}

/*
 * Node v's out-neighbours (sorted): *nb, with weights *w (NULL when
 * unweighted; w may be NULL) and edge rows per arc *rows (NULL: one each, or
 * two for an undirected self loop; rows may be NULL); returns their number.
 */
static inline int64_t
gnn_graph_out_row(const gnn_graph *g, int64_t v, const int32_t **nb, const float **w, const int32_t **rows)
{
	int64_t		b,
				k;

	if (g->has_delta && (k = gnn_graph_patch_slot(&g->dfwd, v)) >= 0)
	{
		b = g->dfwd.ptr[k];
		*nb = g->dfwd.idx + b;
		if (w)
			*w = g->dfwd.w ? g->dfwd.w + b : NULL;
		if (rows)
			*rows = g->dfwd.rows + b;
		return g->dfwd.ptr[k + 1] - b;
	}
	b = g->indptr[v];
	*nb = g->indices + b;
	if (w)
		*w = g->weights ? g->weights + b : NULL;
	if (rows)
		*rows = g->arc_rows ? g->arc_rows + b : NULL;
	return g->indptr[v + 1] - b;
}

/* Node v's in-neighbours (the nodes it aggregates from), as gnn_graph_out_row. */
static inline int64_t
gnn_graph_in_row(const gnn_graph *g, int64_t v, const int32_t **nb, const float **w)
{
	int64_t		b,
				k;

	if (g->has_delta && (k = gnn_graph_patch_slot(&g->drev, v)) >= 0)
	{
		b = g->drev.ptr[k];
		*nb = g->drev.idx + b;
		if (w)
			*w = g->drev.w ? g->drev.w + b : NULL;
		return g->drev.ptr[k + 1] - b;
	}
	b = g->rindptr[v];
	*nb = g->rindices + b;
	if (w)
		*w = g->rweights ? g->rweights + b : NULL;
	return g->rindptr[v + 1] - b;
}

/* The first position in a sorted neighbour row nb[0..len) holding v or more (len: none). */
static inline int64_t
gnn_row_lower_bound(const int32_t *nb, int64_t len, int64_t v)
{
	return gnn_math_lower_bound(nb, len, v);
}

/* Node v's dense feature row (feat_dim floats); NULL without dense features. */
static inline const float *
gnn_graph_feat_row(const gnn_graph *g, int64_t v)
{
	int64_t		k;

	if (!g->feat)
		return NULL;			/* none, or on disk (g->fstore) */
	if (g->has_delta && (k = gnn_graph_patch_slot(&g->dnode, v)) >= 0)
		return g->dnode.feat + k * (int64_t) g->feat_dim;
	return g->feat + v * (int64_t) g->feat_dim;
}

/*
 * The time a seed at node v samples at: its seed time when it has one, else
 * its own time; GNN_TIME_NONE when neither (no bound).
 */
static inline int64_t
gnn_graph_seed_time(const gnn_graph *g, int64_t v)
{
	if (g->seed_time && g->seed_time[v] != GNN_TIME_NONE)
		return g->seed_time[v];
	return g->time ? g->time[v] : GNN_TIME_NONE;
}

/*
 * Region allocation callback: return bytes of writable memory (shared memory,
 * say), or NULL to refuse (a limit, a failed allocation).  The callback must
 * not longjmp; on NULL the build stops with GNN_ERR_LIMIT and the caller
 * reports its own reason.
 */
typedef void *(*gnn_region_alloc_fn) (void *arg, uint64_t bytes);

/*
 * Build the graph described by in and lay it out in a region obtained from
 * alloc, once the exact size is known (after ids are mapped and duplicate
 * edges merged, before anything is written).  Every temporary is freed before
 * returning, also on error.  On success *region / *size describe the region;
 * on an error after alloc returned one (a failing feat_fill), that region is
 * the caller's to release, as it would release any.
 * A graph needs nodes, not edges: a node list without edges gives a graph of
 * isolated nodes; no node at all is GNN_ERR_EMPTY.
 */
gnn_status	gnn_graph_build_into(const gnn_graph_input *in, gnn_region_alloc_fn alloc, void *alloc_arg,
								 void **region, uint64_t *size, gnn_error *err);

/* Validate a region and fill a pointer view of it. */
gnn_status	gnn_graph_attach(const void *region, uint64_t size, gnn_graph *g, gnn_error *err);
/* Header of a region (after attach succeeded). */
static inline const gnn_graph_header *
gnn_graph_header_of(const void *region)
{
	return (const gnn_graph_header *) region;
}

/*
 * A node's name, which every part of a partitioned graph and the whole
 * graph agree on (halo.c): its id, or on a graph with several node types
 * its (type, key).  gnn_graph_node_name mixes the name into 64 bits (the
 * sampler's per-node streams keyed by name).
 */
static inline int32_t
gnn_graph_name_type(const gnn_graph *g, int64_t v)
{
	return g->num_node_types > 1 && g->node_type ? g->node_type[v] : 0;
}

static inline int64_t
gnn_graph_name_key(const gnn_graph *g, int64_t v)
{
	return g->num_node_types > 1 && g->keys ? g->keys[v] : g->ids ? g->ids[v] : v;
}

/* a typed name (type, key) mixed into 64 bits */
static inline uint64_t
gnn_graph_name_mix(int32_t type, int64_t key)
{
	return gnn_mix64((uint64_t) key ^ gnn_mix64((uint64_t) type + 1));
}

static inline uint64_t
gnn_graph_node_name(const gnn_graph *g, int64_t v)
{
	if (g->num_node_types > 1 && g->keys)
		return gnn_graph_name_mix(gnn_graph_name_type(g, v), g->keys[v]);
	return g->ids ? (uint64_t) g->ids[v] : (uint64_t) v;
}

/* Internal index of an original id, or -1 (homogeneous graphs: node type 0's ids). */
int64_t		gnn_graph_find(const gnn_graph *g, int64_t id);
/* Index of the node of type t with integer key `key`, or -1 (also for a text-keyed type). */
int64_t		gnn_graph_find_typed(const gnn_graph *g, int32_t t, int64_t key);
/*
 * Index of the node of type t whose keys[] entry is key, or -1: for a
 * text-keyed type that entry is the key's place among the type's keys as
 * loaded (a schema graph's part keeps the whole type's places).
 */
int64_t		gnn_graph_find_key(const gnn_graph *g, int32_t t, int64_t key);
/* Index of the node of text-keyed type t with key bytes key[0..len), or -1 (also for an int-keyed type). */
int64_t		gnn_graph_find_text(const gnn_graph *g, int32_t t, const char *key, size_t len);
/* Node v's type (0 for a homogeneous graph). */
static inline int32_t
gnn_graph_type_of(const gnn_graph *g, int64_t v)
{
	return g->node_type ? g->node_type[v] : 0;
}
/* Names: node type t / relation r, or NULL when the graph has no names. */
const char *gnn_graph_node_type_name(const gnn_graph *g, int32_t t);
const char *gnn_graph_edge_type_name(const gnn_graph *g, int32_t r);
/* Type index by name (node types / relations), or -1. */
int32_t		gnn_graph_node_type_by_name(const gnn_graph *g, const char *name);
int32_t		gnn_graph_edge_type_by_name(const gnn_graph *g, const char *name);

static inline int64_t
gnn_graph_out_degree(const gnn_graph *g, int64_t v)
{
	const int32_t *nb;

	return gnn_graph_out_row(g, v, &nb, NULL, NULL);
}

static inline int64_t
gnn_graph_in_degree(const gnn_graph *g, int64_t v)
{
	const int32_t *nb;

	return gnn_graph_in_row(g, v, &nb, NULL);
}

/* ------------------------------------------------------------------ changes (graph_delta.c)
 *
 * A loaded graph follows its tables: change capture logs the rows removed
 * from and added to its edge and node tables, and a refresh applies them.
 * gnn_graph_apply_changes makes the graph that a fresh build of the changed
 * rows would make (the same nodes in id order, arcs, merged weights,
 * features, labels, splits, reverse CSR) from the base graph and the
 * changes alone, without the rows that did not change: each row of the
 * base's CSR is copied with its changes merged in (parallel over rows; the
 * node indices shift where nodes come or go), so a refresh costs about a
 * copy of the graph, not a load.
 *
 * Homogeneous graphs (one node and one edge type) for now; a typed graph is
 * GNN_ERR_UNSUPPORTED.
 *
 * Edge rows.  A build merges the rows of one (src, dst) into one arc whose
 * weight is their sum, so each arc remembers how many rows it holds
 * (gnn_graph.arc_rows, kept when gnn_graph_input.keep_arc_rows is set; a
 * base without it counts one row per arc): removing a row subtracts its
 * weight (1 unweighted) and one row, and the arc goes with its last row.
 * Removing a row the base does not hold is GNN_ERR_INVALID (err->row: the
 * change's index): the log and the graph disagree, and the caller reloads.
 * On an undirected graph each row is both arcs, as at build.  An endpoint
 * that is not a node: as at build, GNN_ERR_DANGLING unless skip_dangling
 * (then the row is no arc, but still counted in the stats).
 *
 * Node rows (graphs built with node rows, node_ids given).  Removed nodes
 * go with every arc at them: the changes must remove the edge rows at them
 * too (as a cascade logs them), else those rows dangle, GNN_ERR_DANGLING
 * (err->row: the node's index in rm_nodes) unless skip_dangling;
 * upserted nodes are new (added, with no arcs until edge rows add some) or
 * existing (their features, label and split replaced).  Features: dense
 * rows of feat_dim, or NULL to keep (existing) / zeros (new); a sparse-
 * featured graph takes sparse rows (up_fptr / up_fidx / up_fval, or NULL).
 * Labels are class ids of the base's classes (-1 none); a label the base has
 * no class for must be handled by the caller (a reload: classes are
 * numbered in name order).  Changes apply in this order: node removals,
 * node upserts, edge removals, edge additions.
 *
 * As implemented:
 *  - err->row is the index in the list the failing change came from
 *    (rm_src / add_src / rm_nodes / up_ids); every error is found before
 *    the region is asked for, so a failed refresh leaves nothing behind.
 *  - An edge row removed at a node removed in the same changes is quiet
 *    (its arc went with the node); an id removed and upserted at once is a
 *    new node (old arcs and data gone).  Of several upserts of one id the
 *    last wins; removing a node twice is removing it once.
 *  - The base's classes are its class names when it has them, else its
 *    num_classes; the result's num_classes is recounted as a build counts
 *    it (max label + 1), so it shrinks when the top class loses its last
 *    node.  up_labels / up_split / up_feat / up_fptr on a base without
 *    labels / a split / dense / sparse features: GNN_ERR_INVALID (a label
 *    of -1 and GNN_SPLIT_NONE excepted).  Sparse rows: indices strictly
 *    ascending in [0, feat_dim), values finite (else GNN_ERR_BAD_VALUE);
 *    dense values finite.
 *  - Times, seed times and targets are kept for nodes that stay (updated
 *    ones too: upserts do not carry them) and none for new nodes; an array
 *    left without any value is dropped, as a build drops it.
 *  - The result always keeps arc_rows (the next refresh needs them).
 *  - A weight is the base's sum less the removed rows' plus the added
 *    ones: a build's sum of the same rows up to float rounding.  On an
 *    unweighted base rm_weight / add_weight are ignored.
 *  - The base must be an attached view (gnn_graph.weighted); graphs with
 *    keys of their own (key arrays) are GNN_ERR_UNSUPPORTED, and the node
 *    set is taken as given rows even for a graph built from edge endpoints
 *    (a node whose last row goes stays; a row to an unknown id dangles).
 *  - A sparse-featured graph left with no entry stays sparse (nnz 0) where
 *    a build would give no features.
 */
typedef struct gnn_graph_changes
{
	int64_t		num_removed_edges;
	const int64_t *rm_src;
	const int64_t *rm_dst;
	const float *rm_weight;		/* NULL: 1 each */
	int64_t		num_added_edges;
	const int64_t *add_src;
	const int64_t *add_dst;
	const float *add_weight;	/* NULL: 1 each (a weighted base: 1) */
	bool		skip_dangling;
	bool		undirected;		/* the base was built undirected (the region does not say) */

	int64_t		num_removed_nodes;
	const int64_t *rm_nodes;
	int64_t		num_upserted_nodes;
	const int64_t *up_ids;
	const float *up_feat;		/* [num_upserted_nodes * feat_dim] dense, or NULL */
	const int64_t *up_fptr;		/* sparse rows [num_upserted_nodes + 1], or NULL */
	const int32_t *up_fidx;
	const float *up_fval;
	const int32_t *up_labels;	/* class ids, -1 none; NULL: keep / none */
	const uint8_t *up_split;	/* GNN_SPLIT_*; NULL: keep / none */

	int			nthreads;		/* 0: all cores */

	/*
	 * Make a delta over base instead of a new region (gnn_graph_attach_delta
	 * reads it): the rows and feature rows that differ from base's region,
	 * all of them, those of a delta base is read through included, so a
	 * reader always needs one region and one delta.  Changes that add or
	 * remove nodes, sparse features, and a delta over max_delta_bytes (0: no
	 * bound) are GNN_ERR_UNSUPPORTED, found before the region is asked for:
	 * the caller then makes a new region (as_delta false) instead.
	 */
	bool		as_delta;
	uint64_t	max_delta_bytes;
} gnn_graph_changes;

typedef struct gnn_graph_change_stats
{
	int64_t		inserted_edges; /* rows added (arcs may merge) */
	int64_t		deleted_edges;	/* rows removed */
	int64_t		inserted_nodes;
	int64_t		deleted_nodes;
	int64_t		updated_nodes;
	int64_t		arcs_before;
	int64_t		arcs_after;
} gnn_graph_change_stats;

/*
 * Apply changes to base into a new region from alloc (as gnn_graph_build_into
 * does; base is not modified and stays valid).  stats may be NULL.
 */
gnn_status	gnn_graph_apply_changes(const gnn_graph *base, const gnn_graph_changes *ch,
									gnn_region_alloc_fn alloc, void *alloc_arg, void **region_out,
									uint64_t *size_out, gnn_graph_change_stats *stats, gnn_error *err);

/*
 * A delta region: the rows of one base region that changed (see
 * gnn_graph_patch), in its own memory; the header ties it to its base by
 * the base header's checksum and counts.
 */
#define GNN_DELTA_MAGIC   0x474e4e44u	/* "GNND" */
#define GNN_DELTA_VERSION 1

typedef struct gnn_delta_header
{
	uint32_t	magic;
	uint32_t	version;
	uint64_t	total_bytes;
	uint64_t	base_checksum;	/* the base header's checksum */
	int64_t		num_nodes;		/* = the base's */
	int64_t		base_edges;
	int64_t		num_edges;		/* arcs with the delta */
	int64_t		n_train;
	int64_t		n_val;
	int64_t		n_test;
	int64_t		n_labelled;
	int32_t		num_classes;
	int32_t		feat_dim;
	int64_t		fwd_rows;
	int64_t		fwd_arcs;
	int64_t		rev_rows;
	int64_t		rev_arcs;
	int64_t		feat_rows;
	uint64_t	off_fbits;
	uint64_t	off_frank;
	uint64_t	off_fptr;
	uint64_t	off_fidx;
	uint64_t	off_fw;
	uint64_t	off_frows;
	uint64_t	off_rbits;
	uint64_t	off_rrank;
	uint64_t	off_rptr;
	uint64_t	off_ridx;
	uint64_t	off_rw;
	uint64_t	off_nbits;
	uint64_t	off_nrank;
	uint64_t	off_nfeat;
	uint64_t	off_labels;		/* int32[n]: all labels (0: the base's) */
	uint64_t	off_split;		/* uint8[n]: the whole split (0: the base's) */
	gnn_edge_type etype;
	uint64_t	checksum;		/* of the fields above */
} gnn_delta_header;

/*
 * A view of base with delta over it (delta NULL: gnn_graph_attach).  The
 * delta must have been made over this base (checked: checksum and counts).
 */
gnn_status	gnn_graph_attach_delta(const void *region, uint64_t size, const void *delta, uint64_t delta_size,
								   gnn_graph *g, gnn_error *err);

/*
 * Attaching checks a delta's header and the ends of its arrays only; this
 * checks every row pointer, rank and arc (tests, tools; GNN_ERR_CORRUPT).
 */
gnn_status	gnn_graph_check_delta(const gnn_graph *g, gnn_error *err);

/*
 * A graph without a delta: *out = *g and *mem NULL when g has none, else
 * base and delta merged into a new region in private memory (*mem; free() it
 * when done with *out), the region a build of the same rows makes.
 */
gnn_status	gnn_graph_flatten(const gnn_graph *g, gnn_graph *out, void **mem, gnn_error *err);

/*
 * Map in the page tables of what gnn_graph_apply_changes reads of g
 * (GNN_PREMAP_TOPOLOGY: both CSRs with their weights and arc rows, labels,
 * split, the delta whole; GNN_PREMAP_FEATURES: the dense features), in a
 * thread of its own, so that the caller can do other work meanwhile (a
 * refresh decoding its log): one call into the kernel per array instead of
 * a fault per page.  Returns a handle for gnn_graph_premap_join, or NULL
 * when it mapped in at once (no thread could start).  g's memory must stay
 * mapped until the join.
 */
#define GNN_PREMAP_TOPOLOGY 1
#define GNN_PREMAP_FEATURES 2
void	   *gnn_graph_premap_start(const gnn_graph *g, int what);
void		gnn_graph_premap_join(void *handle);

/* Convenience for tools and tests: build straight into a malloc'd region. */
gnn_status	gnn_graph_build_region(const gnn_graph_input *in, void **region, uint64_t *size,
								   gnn_graph *g, gnn_error *err);

#endif							/* GNN_GRAPH_H */
