/*
 * feature_store.h: feature rows kept in a file and read through a row cache
 * (features larger than memory: GraphBolt's disk feature store, Ginex).
 *
 * The file holds rows x dim float32, row-major, from a byte offset that is a
 * multiple of GNN_FSTORE_BLOCK (a graph store file's payload is: store.h).
 * Rows are read with O_DIRECT where the file system allows it (no second
 * copy in the page cache, which a cgroup-capped server could not keep
 * anyway), with pread otherwise.  A gather looks every row up in the cache
 * first; the misses of one call are sorted and read together, rows whose
 * blocks touch or overlap in one read, so neighbouring rows (the store
 * writes rows by partition, then degree) cost one read.
 *
 * The cache holds cache_rows rows and evicts by SIEVE (Zhang et al., NSDI
 * 2024): a FIFO queue with one "visited" bit per row and a hand that walks
 * from the oldest entry, clearing bits, and evicts the first unvisited row.
 * It is scan resistant (a row read once leaves before rows read again) at
 * the cost of one bit per hit, which matters here because a minibatch
 * epoch reads every training node's neighbourhood once per epoch.
 *
 * One store is used by one thread at a time.  Results are the file's bytes
 * whatever the cache: a gather through a store equals one from memory.
 */
#ifndef GNN_FEATURE_STORE_H
#define GNN_FEATURE_STORE_H

#include "gnn_core.h"

#define GNN_FSTORE_BLOCK 4096

typedef struct gnn_fstore gnn_fstore;

typedef struct gnn_fstore_stats
{
	int64_t		rows_requested;	/* rows asked for by gathers */
	int64_t		hits;			/* of those, found in the cache */
	int64_t		misses;			/* of those, read from the file */
	int64_t		prefetched;		/* rows read ahead by gnn_fstore_prefetch */
	int64_t		reads;			/* read calls issued */
	int64_t		bytes_read;		/* bytes those reads fetched (whole blocks) */
	int64_t		bytes_needed;	/* bytes of the rows they were for */
	bool		direct;			/* O_DIRECT in use */
} gnn_fstore_stats;

/*
 * Open path's rows x dim matrix at offset (a multiple of GNN_FSTORE_BLOCK)
 * with a cache of cache_rows rows (0: none); direct asks for O_DIRECT
 * (falls back to buffered reads where the file system refuses it).  The
 * file must hold the whole matrix.
 */
gnn_status	gnn_fstore_open(const char *path, uint64_t offset, int64_t rows, int32_t dim,
							int64_t cache_rows, bool direct, gnn_fstore **out, gnn_error *err);
void		gnn_fstore_close(gnn_fstore *fs);

/* out[k * dim ...] = row idx[k], k < n (rows may repeat); misses enter the cache */
gnn_status	gnn_fstore_gather(gnn_fstore *fs, const int32_t *idx, int64_t n, float *out,
							  gnn_error *err);

/*
 * Read the rows of idx that are not cached into the cache, copying nothing
 * out: the rows of batches ahead (a window), so that their gathers hit.
 * Rows cached by it count as neither hits nor misses until gathered.
 */
gnn_status	gnn_fstore_prefetch(gnn_fstore *fs, const int32_t *idx, int64_t n, gnn_error *err);

void		gnn_fstore_stats_get(const gnn_fstore *fs, gnn_fstore_stats *st);
void		gnn_fstore_stats_reset(gnn_fstore *fs);

#endif							/* GNN_FEATURE_STORE_H */
