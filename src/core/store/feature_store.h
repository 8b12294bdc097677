/*
 * feature_store.h: feature rows kept in a file and read through a row cache
 * (features larger than memory: GraphBolt's disk feature store, Ginex).
 *
 * The file holds rows x dim float32, row-major, from a byte offset that is a
 * multiple of GNN_FSTORE_BLOCK (a graph store file's payload is: store.h).
 * Rows are read with O_DIRECT where the file system allows it (no second
 * copy in the page cache, which a cgroup-capped server could not keep
 * anyway), buffered otherwise, in units of 512 bytes (4096 where O_DIRECT
 * needs it), so a 1 kB row costs about 1 kB read.  A gather looks every row
 * up in the cache first; the misses of one call are sorted, rows whose
 * units touch or overlap make one read, and up to 64 reads are in flight
 * together through io_uring (pread one by one where the kernel refuses a
 * ring, or GNN_FSTORE_NO_URING is set).
 *
 * The cache holds cache_rows rows and evicts by SIEVE (Zhang et al., NSDI
 * 2024): a FIFO queue with one "visited" bit per row and a hand that walks
 * from the oldest entry, clearing bits, and evicts the first unvisited row.
 * It is scan resistant (a row read once leaves before rows read again) at
 * the cost of one bit per hit, which matters here because a minibatch
 * epoch reads every training node's neighbourhood once per epoch.
 *
 * Gathers and prefetches of one store run one at a time (a mutex): the
 * minibatch pipeline's thread gathers while evaluation may.  The cache has
 * its own lock, held for lookups and inserts but not across reads, so
 * stores in several processes can share one cache (gnn_fcache_*).  Results are the
 * file's bytes whatever the cache: a gather through a store equals one from
 * memory.  With block checksums (gnn_fstore_set_checksums) every block read
 * from the file is checked before a byte of it is used; a block that fails
 * is GNN_ERR_CORRUPT naming it.
 */
#ifndef GNN_FEATURE_STORE_H
#define GNN_FEATURE_STORE_H

#include "base/gnn_core.h"

#define GNN_FSTORE_BLOCK 4096	/* the payload's alignment in the file */
#define GNN_FSTORE_CSUM 512		/* the unit of checksums and of reads */

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

/*
 * A row cache in one block of memory that several processes can share (a
 * DSM segment): gnn_fcache_bytes says how big a block cap rows of a
 * rows x dim store need, gnn_fcache_init lays one out (shared: its mutex is
 * process-shared and robust), and gnn_fstore_use_cache makes a store look
 * rows up in it and put its misses there instead of its own cache.  Stores
 * of the same file in any number of processes may use one block; each
 * keeps its own counters (gnn_fstore_stats), the block counts everyone's.
 */
typedef struct gnn_fcache_info
{
	int64_t		rows;			/* the store's rows */
	int32_t		dim;
	int64_t		capacity;		/* rows it can hold */
	int64_t		used;			/* rows it holds */
	int64_t		hits;			/* every user's, since it was made */
	int64_t		misses;
	int64_t		evictions;
	size_t		bytes;			/* the block */
} gnn_fcache_info;

size_t		gnn_fcache_bytes(int64_t rows, int32_t dim, int64_t cap);
gnn_status	gnn_fcache_init(void *mem, size_t bytes, int64_t rows, int32_t dim, int64_t cap, bool shared,
							gnn_error *err);
void		gnn_fcache_get_info(void *mem, gnn_fcache_info *out);
/* hold a cache's lock (tests: a holder that dies leaves it emptied, not stuck) */
void		gnn_fcache_lock(void *mem);
void		gnn_fcache_unlock(void *mem);
/* fs reads through the cache block mem (bytes long; checked against fs's shape) from now on */
gnn_status	gnn_fstore_use_cache(gnn_fstore *fs, void *mem, size_t bytes, gnn_error *err);

/* out[k * dim ...] = row idx[k], k < n (rows may repeat); misses enter the cache */
gnn_status	gnn_fstore_gather(gnn_fstore *fs, const int32_t *idx, int64_t n, float *out,
							  gnn_error *err);

/*
 * Read the rows of idx that are not cached into the cache, copying nothing
 * out: the rows of batches ahead (a window), so that their gathers hit.
 * Rows cached by it count as neither hits nor misses until gathered.
 */
gnn_status	gnn_fstore_prefetch(gnn_fstore *fs, const int32_t *idx, int64_t n, gnn_error *err);

/*
 * Check every unit read against block_crc[b] = CRC-32C of the file's bytes
 * [offset + b * GNN_FSTORE_CSUM, + GNN_FSTORE_CSUM) (the last one short),
 * b < nblocks.  The array is the caller's and must outlive the store.
 */
void		gnn_fstore_set_checksums(gnn_fstore *fs, const uint32_t *block_crc, uint64_t nblocks);

/*
 * Benchmarks: record the file row of every row gathered from now on into
 * buf (at most cap; *len counts them); NULL stops.  The trace a cache
 * policy is compared with Belady's optimum on.
 */
void		gnn_fstore_set_trace(gnn_fstore *fs, int32_t *buf, int64_t cap, int64_t *len);

/* the first checksum failure a read met (its message), or NULL */
const char *gnn_fstore_corrupt(gnn_fstore *fs);

int64_t		gnn_fstore_rows(const gnn_fstore *fs);
int32_t		gnn_fstore_dim(const gnn_fstore *fs);
int64_t		gnn_fstore_cache_rows(const gnn_fstore *fs);

void		gnn_fstore_stats_get(gnn_fstore *fs, gnn_fstore_stats *st);
void		gnn_fstore_stats_reset(gnn_fstore *fs);
/* the counters since the last take or reset, and zero them (atomically: a gather may run meanwhile) */
void		gnn_fstore_stats_take(gnn_fstore *fs, gnn_fstore_stats *st);

/*
 * Features files: a graph store file (store.h) of kind GNN_STORE_FEATURES.
 * Its payload is rows x dim float32 in the file's row order; its metadata
 * is "GNNFEAT1", the shape, the map from a node to its file row (when the
 * rows were reordered) and the CRC-32C of every GNN_FSTORE_CSUM bytes of the
 * payload, which reads check.  A store opened from one takes node indices:
 * gathers translate them through the map.
 *
 * Write dir/name so that file row r holds node order[r] (order a
 * permutation; NULL: node order), durably (gnn_store_write_fill: a
 * temporary name, fsync, rename).  Node v's row is feat's row src_row[v]
 * (NULL: row v), dim floats each: the loader's rows come in table order.
 */
gnn_status	gnn_fstore_write_file(const char *dir, const char *name, uint64_t generation,
								  const float *feat, const int64_t *src_row, int64_t rows, int32_t dim,
								  const int32_t *order, gnn_error *err);
size_t		gnn_fstore_file_meta_len(int64_t rows, int32_t dim, bool ordered);

/*
 * As gnn_fstore_write_file, the rows from a source that need not be in
 * memory (a loader's spill file): source(arg, r0, n, src, out) puts the
 * file's rows [r0, r0 + n) into out (n x dim floats), src[k] being the
 * source row of file row r0 + k (src_row[order[r0 + k]]).  It is called
 * for consecutive, ascending ranges of a few MB.
 */
typedef gnn_status (*gnn_fstore_source_fn) (void *arg, int64_t r0, int64_t n, const int64_t *src, float *out,
											gnn_error *err);
gnn_status	gnn_fstore_write_source(const char *dir, const char *name, uint64_t generation,
									const int64_t *src_row, int64_t rows, int32_t dim, const int32_t *order,
									gnn_fstore_source_fn source, void *source_arg, gnn_error *err);

/*
 * Open a features file (its header, metadata and row map checked; the
 * payload's blocks are checked as they are read), of graph version
 * generation (0: any), with a cache of cache_rows rows.
 */
gnn_status	gnn_fstore_open_file(const char *path, uint64_t generation, int64_t cache_rows,
								 bool direct, gnn_fstore **out, gnn_error *err);

/*
 * A row order for a features file that keeps hot rows together: nodes by
 * degree (in + out arcs) descending, ties by index (order[r] = the node of
 * file row r, r < g->num_nodes).  The rows every epoch reads most are then
 * a contiguous head of the file that the cache soon holds; the misses fall
 * in the tail.
 */
struct gnn_graph;
gnn_status	gnn_fstore_degree_order(const struct gnn_graph *g, int32_t *order, gnn_error *err);

/*
 * A row order that keeps neighbourhoods together, by part then degree:
 * parts of at most cluster nodes, each grown breadth-first (over out- and
 * in-arcs) from the highest-degree node not yet placed, so the parts come
 * hottest first and a node's neighbours lie next to it, where one read
 * fetches several of a batch's misses.  Linear in nodes + arcs.
 */
#define GNN_FSTORE_PART_NODES 64	/* the parts a features file's rows are ordered by */
gnn_status	gnn_fstore_locality_order(const struct gnn_graph *g, int64_t cluster, int32_t *order,
									  gnn_error *err);

#endif							/* GNN_FEATURE_STORE_H */
