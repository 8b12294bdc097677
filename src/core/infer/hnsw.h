/*
 * hnsw.h: an approximate nearest-neighbour index (HNSW: a hierarchy of
 * small-world graphs, Malkov and Yashunin 2018) over the rows of an
 * embedding table, ranked by cosine similarity as gnn_topk_cosine ranks:
 * gnn.similar's answer in a few hundred row reads instead of a scan of
 * every row.
 *
 * The index is one flat block of bytes without pointers (offsets only), so
 * it can live in a shared memory segment that every session maps at its own
 * address.  It holds the links only: the rows themselves are the caller's
 * (the shared result the index was built over), passed to every search.
 * Its size is known before it is built (gnn_hnsw_size: the levels are drawn
 * from the seed), so the caller allocates the block where it will be shared
 * and gnn_hnsw_build fills it in place.
 */
#ifndef GNN_HNSW_H
#define GNN_HNSW_H

#include "base/gnn_core.h"

/* how rows are compared */
#define GNN_HNSW_COSINE 0		/* gnn_cosine: gnn.similar */
#define GNN_HNSW_DOT 1			/* gnn_dot, largest first: gnn.recommend's link scores */

typedef struct gnn_hnsw_params
{
	int32_t		metric;			/* GNN_HNSW_COSINE (0, the default) or GNN_HNSW_DOT */
	int32_t		m;				/* links per node and level (2m at level 0); <= 0: 16 */
	int32_t		ef_construction;	/* candidates kept while linking a row; <= 0: 64 */
	uint64_t	seed;			/* draws the levels */
	int			nthreads;		/* build threads (OpenMP); <= 0: the OpenMP default */
	bool		(*should_stop) (void *arg);	/* polled while building; NULL: never */
	void	   *stop_arg;
} gnn_hnsw_params;

/* the limits of an index: rows are int32 indices */
#define GNN_HNSW_MAX_ROWS ((int64_t) INT32_MAX - 1)
#define GNN_HNSW_MAX_M 128

/*
 * The bytes an index over n rows takes (*bytes), from n and the
 * parameters alone.  GNN_ERR_INVALID for n < 1, n beyond GNN_HNSW_MAX_ROWS
 * or m beyond GNN_HNSW_MAX_M.
 */
gnn_status	gnn_hnsw_size(int64_t n, const gnn_hnsw_params *p, size_t *bytes, gnn_error *err);

/*
 * Build the index over emb (n x dim, row-major; norms[i] = |emb_i|) into
 * buf (bytes from gnn_hnsw_size with the same n and parameters).  With one
 * thread the index is the same for the same input and seed; with several,
 * links depend on the order the threads meet (the search quality does
 * not).  GNN_ERR_CANCELLED when should_stop said so; GNN_ERR_NOMEM.
 */
gnn_status	gnn_hnsw_build(const float *emb, const float *norms, int64_t n, int32_t dim,
						   const gnn_hnsw_params *p, void *buf, size_t bytes, gnn_error *err);

/* whether buf (bytes long) holds a finished index over n rows */
bool		gnn_hnsw_valid(const void *buf, size_t bytes, int64_t n);

/* the search width gnn.similar_ef defaults to */
#define GNN_HNSW_DEFAULT_EF 100

/* what gnn_hnsw_search returns when only an exact scan can answer */
#define GNN_HNSW_EXACT (-2)

/*
 * A cosine index (GNN_HNSW_COSINE, built over the same dim): the k rows
 * most similar to row q (excluding q), as gnn_topk_cosine
 * orders them (score descending, ties by lower index; scores are
 * gnn_cosine's, the same floats as the exact scan's), found by a search
 * keeping max(ef, k + 1) candidates: the larger ef, the closer to the exact
 * answer (ef >= n visits every row reachable from the entry point).  Cost
 * grows with ef and log n, not with n: visited rows are kept in a hash set.
 * Returns how many were written, -1 for an argument out of range (an index
 * of the other metric or width included) or no memory, GNN_HNSW_EXACT when row q's norm is not finite (every score
 * NaN or 0, which the exact scan ranks).  A zero row scores 0 against every row: its answer is the scan's, the
 * first k rows by index, found without a search.
 */
int64_t		gnn_hnsw_search(const void *index, const float *emb, const float *norms, int32_t dim, int64_t q,
							int32_t k, int32_t ef, int64_t *out_idx, float *out_score);

/*
 * A dot-product index (GNN_HNSW_DOT): the k rows with the largest gnn_dot
 * with query (dim floats, any vector), leaving out exclude[0..nexclude)
 * (ascending row indices), as gnn_topk_dot orders them, keeping
 * max(ef, k + nexclude) candidates.  -1 for an argument out of range (an
 * index of the other metric or width, exclude not ascending),
 * GNN_HNSW_EXACT for a zero or non-finite query, or so many rows to leave
 * out that a scan costs as little.
 */
int64_t		gnn_hnsw_search_dot(const void *index, const float *emb, const float *norms, int32_t dim,
								const float *query, const int64_t *exclude, int64_t nexclude, int32_t k,
								int32_t ef, int64_t *out_idx, float *out_score);

/* the index's shape, for reports: levels above 0 and links held */
typedef struct gnn_hnsw_info
{
	int64_t		rows;
	int32_t		m;
	int32_t		levels;
	int64_t		links;
} gnn_hnsw_info;

void		gnn_hnsw_describe(const void *index, gnn_hnsw_info *info);

#endif							/* GNN_HNSW_H */
