/*
 * graph_int.h: pieces of the region build shared by graph.c (a build from
 * rows) and graph_delta.c (a build from a region and its changes), so that
 * both lay out and checksum regions the one same way.  Not a public API.
 */
#ifndef GNN_GRAPH_INT_H
#define GNN_GRAPH_INT_H

#include "graph/graph.h"

#define ALIGN64(x) (((x) + 63) & ~(uint64_t) 63)

/* the arrays of a region, in layout order */
enum
{
	L_IDS, L_INDPTR, L_INDICES, L_WEIGHTS, L_RINDPTR, L_RINDICES, L_RWEIGHTS,
	L_FEAT, L_FPTR, L_FIDX, L_FVAL, L_LABELS, L_SPLIT, L_CLASSES,
	L_TYPE_PTR, L_NODE_TYPE, L_ETYPES, L_ARC_TYPE, L_RARC_TYPE, L_TYPE_NAMES, L_KEYS,
	L_KEY_OFF, L_KEY_BYTES, L_TYPE_TEXT_KEY, L_TIME, L_TARGETS, L_META, L_SEED_TIME,
	L_ARC_ROWS, L_PART, L_COUNT
};

typedef struct layout
{
	uint64_t	off[L_COUNT];
	uint64_t	total;
} layout;

/* sizes of each array (0: absent); present[] marks arrays that exist even when empty */
void		gnn_graph_compute_layout(const uint64_t *sz, const bool *present, layout *l);
uint64_t	gnn_graph_header_checksum(const gnn_graph_header *h);
/* a gnn_region_alloc_fn for private regions: 64-byte aligned malloc memory (free() it) */
void	   *gnn_graph_malloc_region(void *arg, uint64_t bytes);
/* FNV-1a of n bytes: the checksum of region and delta headers */
uint64_t	gnn_graph_fnv1a(const void *bytes, size_t n);
/* int64 keys ascending (an LSD radix sort; digits all keys share are skipped) */
gnn_status	gnn_sort_i64(int64_t *a, int64_t n, gnn_error *err);
/*
 * Start a region's header from its layout: magic, version, size, every
 * array's offset (0: absent) and the byte counts of the blobs; the caller
 * fills in the counts (nodes, arcs, splits, classes, types) and the checksum.
 */
void		gnn_graph_header_from_layout(gnn_graph_header *h, const layout *l, const uint64_t *sz);

/*
 * Stable parallel counting sort of m items by key (0..nb-1); see graph.c.
 */
gnn_status	gnn_graph_counting_sort(int64_t m, int64_t nb, const int32_t *key, const int32_t *pay,
									const float *w, const int16_t *rel, int32_t *key_out,
									int32_t *pay_out, float *w_out, int16_t *rel_out, int64_t *starts,
									int T, gnn_error *err);

#endif							/* GNN_GRAPH_INT_H */
