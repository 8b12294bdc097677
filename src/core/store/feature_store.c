/*
 * feature_store.c: feature rows from a file through a SIEVE row cache (see
 * feature_store.h).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "store/feature_store.h"
#include "store/store.h"
#include "graph/graph.h"

#include <errno.h>
#include <stdio.h>
#include <pthread.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#if defined(__has_include)
#if __has_include(<liburing.h>)
#include <liburing.h>
#define HAVE_URING 1
#endif
#endif

#define RUN_MAX ((size_t) 1 << 20)	/* bytes one read fetches at most */
#define STAGE_BYTES ((size_t) 16 << 20) /* bytes one round of reads fetches at most */
#define QD 64					/* reads in flight in one round */

/*
 * A row cache in one block of memory (gnn_fcache_*): this header, then
 * slot_of[rows], slot_row[cap], newer[cap], older[cap], visited[cap] and
 * cap slots of dim floats, each part 64-byte aligned.  The block holds
 * offsets, never pointers, so processes that map it at different addresses
 * share it; its mutex is process-shared and robust where the block is
 * shared (a holder that died leaves the cache emptied, never half-updated).
 */
#define FCACHE_MAGIC UINT64_C(0x3148434143464e47)	/* "GNFCACH1" */
#define ALIGN64(x) (((x) + 63) & ~(size_t) 63)

typedef struct fcache_hdr
{
	uint64_t	magic;
	pthread_mutex_t mu;
	int64_t		rows;
	int32_t		dim;
	int32_t		pad0;
	int64_t		cap;
	int64_t		used;
	int32_t		head,			/* newest */
				tail,			/* oldest */
				hand;			/* SIEVE's hand (-1: at the tail) */
	int32_t		pad;
	int64_t		hits,			/* every process's, since the block was made */
				misses,
				evictions;
	uint64_t	bytes;
	uint64_t	off_slot_of,
				off_slot_row,
				off_newer,
				off_older,
				off_visited,
				off_slot;
} fcache_hdr;

struct gnn_fstore
{
	pthread_mutex_t mu;			/* one gather or prefetch at a time */
	int			fd;
	/* CRC-32C of each GNN_FSTORE_CSUM bytes of the file from offset (NULL: unchecked) */
	const uint32_t *block_crc;
	uint64_t	nblocks;
	const int32_t *row_of;		/* [rows]: a gather's index -> the file's row (NULL: the same) */
	char		corrupt[192];	/* the first block that failed its checksum ("": none) */
	/* benchmarks: every gathered row (file rows), in order */
	int32_t    *trace;
	int64_t		trace_cap;
	int64_t    *trace_len;
	void	   *owned;			/* a features file's metadata (gnn_fstore_open_file) */
	bool		direct;
	uint64_t	offset;
	int64_t		rows;
	int32_t		dim;
	size_t		row_bytes;
	/*
	 * The row cache: a block this store owns (own_cache, private) or one
	 * shared with other processes (gnn_fstore_use_cache); NULL: none.  The
	 * pointers are this process's view of the block's arrays.
	 */
	fcache_hdr *c;
	void	   *own_cache;
	float	   *slot;
	int32_t    *slot_row;
	int32_t    *slot_of;		/* [rows]: the slot of a row, -1 */
	uint8_t    *visited;
	int32_t    *newer;			/* toward the head */
	int32_t    *older;			/* toward the tail */
	/* scratch */
	int64_t    *miss;			/* (row << 32 | position) of one call's misses */
	int64_t		miss_cap;
	unsigned char *bounce;		/* the staging area of a round: STAGE_BYTES + a run, block-aligned */
	uint32_t	align;			/* read offsets and lengths: 512, or 4096 where O_DIRECT needs it */
	bool		uring;			/* reads of a round go through ring (else pread, one by one) */
#ifdef HAVE_URING
	struct io_uring ring;
#endif
	/* one round's runs: file bytes [lo, hi) into bounce + at, for misses [first, end) */
	uint64_t	run_lo[QD],
				run_hi[QD],
				run_at[QD];
	int64_t		run_first[QD],
				run_end[QD];
	size_t		run_done[QD];
	gnn_fstore_stats st;
};

static void
fs_free(gnn_fstore *fs)
{
	if (!fs)
		return;
#ifdef HAVE_URING
	if (fs->uring)
		io_uring_queue_exit(&fs->ring);
#endif
	if (fs->fd >= 0)
		close(fs->fd);
	pthread_mutex_destroy(&fs->mu);
	free(fs->owned);
	free(fs->own_cache);
	free(fs->miss);
	free(fs->bounce);
	free(fs);
}

void
gnn_fstore_close(gnn_fstore *fs)
{
	fs_free(fs);
}

gnn_status
gnn_fstore_open(const char *path, uint64_t offset, int64_t rows, int32_t dim, int64_t cache_rows,
				bool direct, gnn_fstore **out, gnn_error *err)
{
	gnn_fstore *fs;
	struct stat sb;

	*out = NULL;
	if (rows < 0 || rows > INT32_MAX || dim <= 0 || cache_rows < 0 || offset % GNN_FSTORE_BLOCK != 0)
		return gnn_error_set(err, GNN_ERR_INVALID,
							 "feature store: bad shape (%lld rows of %d, cache %lld, offset %llu)",
							 (long long) rows, dim, (long long) cache_rows, (unsigned long long) offset);
	if (cache_rows > rows)
		cache_rows = rows;
	fs = calloc(1, sizeof(*fs));
	if (!fs)
		return gnn_error_set(err, GNN_ERR_NOMEM, "feature store: out of memory");
	pthread_mutex_init(&fs->mu, NULL);
	fs->fd = -1;
	fs->offset = offset;
	fs->rows = rows;
	fs->dim = dim;
	fs->row_bytes = sizeof(float) * (size_t) dim;
	if (direct)
		fs->fd = open(path, O_RDONLY | O_CLOEXEC | O_DIRECT);
	fs->direct = fs->fd >= 0;
	if (fs->fd < 0)
		fs->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fs->fd < 0)
	{
		gnn_error_set(err, GNN_ERR_INVALID, "feature store: could not open \"%s\": %s", path, strerror(errno));
		fs_free(fs);
		return err->status;
	}
	if (fstat(fs->fd, &sb) != 0 || (uint64_t) sb.st_size < offset + (uint64_t) rows * fs->row_bytes)
	{
		gnn_error_set(err, GNN_ERR_CORRUPT, "feature store: \"%s\" is too short for %lld rows of %d floats at %llu",
					  path, (long long) rows, dim, (unsigned long long) offset);
		fs_free(fs);
		return err->status;
	}
	fs->bounce = aligned_alloc(GNN_FSTORE_BLOCK, (STAGE_BYTES + RUN_MAX + 3 * GNN_FSTORE_BLOCK + fs->row_bytes) /
							   GNN_FSTORE_BLOCK * GNN_FSTORE_BLOCK);
	/*
	 * Reads are aligned to 512 bytes (the checksum unit) unless O_DIRECT on
	 * this file system needs 4096; one where neither works reads buffered.
	 */
	fs->align = GNN_FSTORE_CSUM;
	if (fs->direct && fs->bounce && rows > 0)
	{
		if (pread(fs->fd, fs->bounce, GNN_FSTORE_CSUM, (off_t) offset) < 0)
		{
			fs->align = GNN_FSTORE_BLOCK;
			if (pread(fs->fd, fs->bounce, GNN_FSTORE_BLOCK, (off_t) offset) < 0)
			{
				close(fs->fd);
				fs->fd = open(path, O_RDONLY | O_CLOEXEC);
				fs->direct = false;
				fs->align = GNN_FSTORE_CSUM;
				if (fs->fd < 0)
				{
					gnn_error_set(err, GNN_ERR_INVALID, "feature store: could not open \"%s\": %s", path, strerror(errno));
					fs_free(fs);
					return err->status;
				}
			}
		}
	}
	/* a ring for the reads of a round; without one (kernels that refuse it), pread */
#ifdef HAVE_URING
	fs->uring = getenv("GNN_FSTORE_NO_URING") == NULL && io_uring_queue_init(QD, &fs->ring, 0) == 0;
#endif
	if (!fs->bounce)
	{
		fs_free(fs);
		return gnn_error_set(err, GNN_ERR_NOMEM, "feature store: out of memory");
	}
	if (cache_rows > 0)
	{
		size_t		bytes = gnn_fcache_bytes(rows, dim, cache_rows);

		fs->own_cache = aligned_alloc(64, ALIGN64(bytes));
		if (!fs->own_cache || gnn_fcache_init(fs->own_cache, bytes, rows, dim, cache_rows, false, err) != GNN_OK ||
			gnn_fstore_use_cache(fs, fs->own_cache, bytes, err) != GNN_OK)
		{
			fs_free(fs);
			return gnn_error_set(err, GNN_ERR_NOMEM, "feature store: out of memory for a cache of %lld rows",
								 (long long) cache_rows);
		}
	}
	fs->st.direct = fs->direct;
	*out = fs;
	return GNN_OK;
}

/* ------------------------------------------------------------------ the row cache */

static void
fcache_layout(int64_t rows, int32_t dim, int64_t cap, fcache_hdr *h)
{
	size_t		at = ALIGN64(sizeof(fcache_hdr));

	h->off_slot_of = at;
	at += ALIGN64(sizeof(int32_t) * (size_t) rows);
	h->off_slot_row = at;
	at += ALIGN64(sizeof(int32_t) * (size_t) cap);
	h->off_newer = at;
	at += ALIGN64(sizeof(int32_t) * (size_t) cap);
	h->off_older = at;
	at += ALIGN64(sizeof(int32_t) * (size_t) cap);
	h->off_visited = at;
	at += ALIGN64((size_t) cap);
	h->off_slot = at;
	at += sizeof(float) * (size_t) dim * (size_t) cap;
	h->bytes = at;
}

size_t
gnn_fcache_bytes(int64_t rows, int32_t dim, int64_t cap)
{
	fcache_hdr	h;

	fcache_layout(rows, dim, cap, &h);
	return (size_t) h.bytes;
}

/* every slot empty; the caller holds the mutex (or nobody can yet) */
static void
fcache_clear(fcache_hdr *h)
{
	int32_t    *slot_of = (int32_t *) ((char *) h + h->off_slot_of);

	for (int64_t r = 0; r < h->rows; r++)
		slot_of[r] = -1;
	h->used = 0;
	h->head = h->tail = h->hand = -1;
}

gnn_status
gnn_fcache_init(void *mem, size_t bytes, int64_t rows, int32_t dim, int64_t cap, bool shared, gnn_error *err)
{
	fcache_hdr *h = mem;
	pthread_mutexattr_t at;

	if (rows < 0 || rows > INT32_MAX || dim <= 0 || cap < 0 || cap > rows || (uintptr_t) mem % 64 != 0 ||
		bytes < gnn_fcache_bytes(rows, dim, cap))
		return gnn_error_set(err, GNN_ERR_INVALID, "feature cache: %zu bytes cannot hold %lld of %lld rows of %d",
							 bytes, (long long) cap, (long long) rows, dim);
	memset(h, 0, sizeof(*h));
	pthread_mutexattr_init(&at);
	if (shared)
	{
		pthread_mutexattr_setpshared(&at, PTHREAD_PROCESS_SHARED);
		pthread_mutexattr_setrobust(&at, PTHREAD_MUTEX_ROBUST);
	}
	if (pthread_mutex_init(&h->mu, &at) != 0)
	{
		pthread_mutexattr_destroy(&at);
		return gnn_error_set(err, GNN_ERR_UNSUPPORTED, "feature cache: could not make its mutex");
	}
	pthread_mutexattr_destroy(&at);
	h->rows = rows;
	h->dim = dim;
	h->cap = cap;
	fcache_layout(rows, dim, cap, h);
	fcache_clear(h);
	h->magic = FCACHE_MAGIC;
	return GNN_OK;
}

static void
cache_lock(fcache_hdr *h)
{
	if (pthread_mutex_lock(&h->mu) == EOWNERDEAD)
	{
		/* its holder died mid-update: start empty, the file has every row */
		fcache_clear(h);
		pthread_mutex_consistent(&h->mu);
	}
}

static void
cache_unlock(fcache_hdr *h)
{
	pthread_mutex_unlock(&h->mu);
}

void
gnn_fcache_lock(void *mem)
{
	cache_lock(mem);
}

void
gnn_fcache_unlock(void *mem)
{
	cache_unlock(mem);
}

void
gnn_fcache_get_info(void *mem, gnn_fcache_info *out)
{
	fcache_hdr *h = mem;

	cache_lock(h);
	out->rows = h->rows;
	out->dim = h->dim;
	out->capacity = h->cap;
	out->used = h->used;
	out->hits = h->hits;
	out->misses = h->misses;
	out->evictions = h->evictions;
	out->bytes = (size_t) h->bytes;
	cache_unlock(h);
}

gnn_status
gnn_fstore_use_cache(gnn_fstore *fs, void *mem, size_t bytes, gnn_error *err)
{
	fcache_hdr *h = mem;
	char	   *b = mem;

	if (h->magic != FCACHE_MAGIC || h->rows != fs->rows || h->dim != fs->dim || h->bytes > bytes ||
		h->cap < 0 || h->cap > h->rows)
		return gnn_error_set(err, GNN_ERR_CORRUPT,
							 "feature cache: the block is not a cache of %lld rows of %d", (long long) fs->rows, fs->dim);
	pthread_mutex_lock(&fs->mu);
	if (fs->own_cache && fs->own_cache != mem)
	{
		free(fs->own_cache);
		fs->own_cache = NULL;
	}
	fs->c = h;
	fs->slot_of = (int32_t *) (b + h->off_slot_of);
	fs->slot_row = (int32_t *) (b + h->off_slot_row);
	fs->newer = (int32_t *) (b + h->off_newer);
	fs->older = (int32_t *) (b + h->off_older);
	fs->visited = (uint8_t *) (b + h->off_visited);
	fs->slot = (float *) (b + h->off_slot);
	pthread_mutex_unlock(&fs->mu);
	return GNN_OK;
}

/* SIEVE over the block: the caller holds its mutex */

static void
list_push_head(gnn_fstore *fs, int32_t s)
{
	fcache_hdr *c = fs->c;

	fs->newer[s] = -1;
	fs->older[s] = c->head;
	if (c->head >= 0)
		fs->newer[c->head] = s;
	c->head = s;
	if (c->tail < 0)
		c->tail = s;
}

static void
list_unlink(gnn_fstore *fs, int32_t s)
{
	fcache_hdr *c = fs->c;

	if (fs->newer[s] >= 0)
		fs->older[fs->newer[s]] = fs->older[s];
	else
		c->head = fs->older[s];
	if (fs->older[s] >= 0)
		fs->newer[fs->older[s]] = fs->newer[s];
	else
		c->tail = fs->newer[s];
}

/* the slot SIEVE frees: the hand walks from the oldest toward the newest */
static int32_t
sieve_evict(gnn_fstore *fs)
{
	fcache_hdr *c = fs->c;
	int32_t		p = c->hand >= 0 ? c->hand : c->tail;

	while (fs->visited[p])
	{
		fs->visited[p] = 0;
		p = fs->newer[p] >= 0 ? fs->newer[p] : c->tail;
	}
	c->hand = fs->newer[p];		/* -1: back to the tail next time */
	list_unlink(fs, p);
	fs->slot_of[fs->slot_row[p]] = -1;
	c->evictions++;
	return p;
}

/* row r (its bytes at src) enters the cache, unvisited */
static void
cache_insert(gnn_fstore *fs, int32_t r, const void *src)
{
	fcache_hdr *c = fs->c;
	int32_t		s;

	if (c->cap == 0 || fs->slot_of[r] >= 0)
		return;
	s = c->used < c->cap ? (int32_t) c->used++ : sieve_evict(fs);
	fs->slot_row[s] = r;
	fs->slot_of[r] = s;
	fs->visited[s] = 0;
	memcpy(fs->slot + (size_t) s * fs->dim, src, fs->row_bytes);
	list_push_head(fs, s);
}

/* ------------------------------------------------------------------ reading */

static int
cmp_i64(const void *a, const void *b)
{
	int64_t		x = *(const int64_t *) a,
				y = *(const int64_t *) b;

	return (x > y) - (x < y);
}

/* file bytes [lo, hi) of a run into dst by pread: what was read (short at the end of the file) */
static gnn_status
pread_run(gnn_fstore *fs, unsigned char *dst, uint64_t lo, uint64_t hi, size_t done, size_t *got,
		  gnn_error *err)
{
	size_t		want = (size_t) (hi - lo);

	while (done < want)
	{
		ssize_t		r = pread(fs->fd, dst + done, want - done, (off_t) (lo + done));

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return gnn_error_set(err, GNN_ERR_CORRUPT, "feature store: read failed at byte %llu: %s",
								 (unsigned long long) (lo + done), strerror(errno));
		if (r == 0)
			break;				/* the end of the file: the last unit is short */
		done += (size_t) r;
		if (fs->direct && (size_t) r % fs->align != 0)
			break;				/* a short O_DIRECT read ends at the end of the file */
	}
	*got = done;
	return GNN_OK;
}

/*
 * The reads of one round (fs->run_*[0..nr)), in flight together through the
 * ring; a read the ring did not finish is completed by pread.
 */
static gnn_status
read_round(gnn_fstore *fs, int nr, gnn_error *err)
{
	int			queued = 0;

	for (int k = 0; k < nr; k++)
		fs->run_done[k] = 0;
#ifdef HAVE_URING
	if (fs->uring)
	{
		for (int k = 0; k < nr; k++)
		{
			struct io_uring_sqe *sqe = io_uring_get_sqe(&fs->ring);

			if (!sqe)
				break;
			io_uring_prep_read(sqe, fs->fd, fs->bounce + fs->run_at[k], (unsigned) (fs->run_hi[k] - fs->run_lo[k]),
							   fs->run_lo[k]);
			io_uring_sqe_set_data64(sqe, (uint64_t) k);
			queued++;
		}
		if (queued > 0 && io_uring_submit(&fs->ring) != queued)
		{
			/* cannot tell which went: drain what completes, pread the rest */
			queued = 0;
		}
		for (int c = 0; c < queued; c++)
		{
			struct io_uring_cqe *cqe;
			int			rc;

			do
				rc = io_uring_wait_cqe(&fs->ring, &cqe);
			while (rc == -EINTR);
			if (rc < 0)
				break;
			if (cqe->res > 0)
				fs->run_done[io_uring_cqe_get_data64(cqe)] = (size_t) cqe->res;
			io_uring_cqe_seen(&fs->ring, cqe);
		}
	}
#else
	(void) queued;
#endif
	for (int k = 0; k < nr; k++)
	{
		size_t		want = (size_t) (fs->run_hi[k] - fs->run_lo[k]);
		gnn_status	st;

		/* what the ring did not read (or all of it, without one) */
		if (fs->run_done[k] < want &&
			(st = pread_run(fs, fs->bounce + fs->run_at[k], fs->run_lo[k], fs->run_hi[k], fs->run_done[k],
							&fs->run_done[k], err)) != GNN_OK)
			return st;
		fs->st.reads++;
		fs->st.bytes_read += (int64_t) fs->run_done[k];
	}
	return GNN_OK;
}

/* check a run's bytes against the checksums, unit by unit (the payload's last one short) */
static gnn_status
check_run(gnn_fstore *fs, int k, gnn_error *err)
{
	const unsigned char *p = fs->bounce + fs->run_at[k];
	uint64_t	end = fs->offset + (uint64_t) fs->rows * fs->row_bytes;

	if (!fs->block_crc)
		return GNN_OK;
	for (uint64_t at = fs->run_lo[k]; at < fs->run_lo[k] + fs->run_done[k] && at < end; at += GNN_FSTORE_CSUM)
	{
		uint64_t	u = (at - fs->offset) / GNN_FSTORE_CSUM;
		size_t		len = end - at < GNN_FSTORE_CSUM ? (size_t) (end - at) : GNN_FSTORE_CSUM;

		if (u >= fs->nblocks || gnn_crc32c(0, p + (at - fs->run_lo[k]), len) != fs->block_crc[u])
		{
			gnn_error_set(err, GNN_ERR_CORRUPT,
						  "feature store: block %llu (bytes %llu..%llu) fails its checksum",
						  (unsigned long long) u, (unsigned long long) at, (unsigned long long) (at + len));
			if (!fs->corrupt[0])
				snprintf(fs->corrupt, sizeof(fs->corrupt), "%.180s", err->msg);
			return GNN_ERR_CORRUPT;
		}
	}
	return GNN_OK;
}

/* file bytes [*lo, *hi) holding row r, widened to the read alignment */
static inline void
row_span(const gnn_fstore *fs, int32_t r, uint64_t *lo, uint64_t *hi)
{
	const uint64_t A = fs->align;

	*lo = (fs->offset + (uint64_t) r * fs->row_bytes) / A * A;
	*hi = (fs->offset + ((uint64_t) r + 1) * fs->row_bytes + A - 1) / A * A;
}

/* row r's bytes in the staging area of run k */
static inline const unsigned char *
run_row(const gnn_fstore *fs, int k, int32_t r)
{
	return fs->bounce + fs->run_at[k] + (fs->offset + (uint64_t) r * fs->row_bytes - fs->run_lo[k]);
}

/*
 * Read the rows of fs->miss[0..nm) (sorted by row): rows whose aligned
 * ranges touch or overlap make one read (a run, at most RUN_MAX), and the
 * runs of a round (at most QD of them, STAGE_BYTES together) are in flight
 * at once.  Each row goes into the cache and, with out, to every position
 * that asked for it.
 */
static gnn_status
read_misses(gnn_fstore *fs, int64_t nm, float *out, gnn_error *err)
{
	int64_t		i = 0;

	while (i < nm)
	{
		int			nr = 0;
		size_t		used = 0;
		gnn_status	st;

		/* a round of runs */
		while (i < nm && nr < QD)
		{
			uint64_t	lo,
						hi;
			int64_t		j = i + 1;

			row_span(fs, (int32_t) (fs->miss[i] >> 32), &lo, &hi);
			while (j < nm)
			{
				uint64_t	rlo,
							rhi;

				row_span(fs, (int32_t) (fs->miss[j] >> 32), &rlo, &rhi);
				if (rlo > hi || rhi - lo > RUN_MAX)
					break;
				if (rhi > hi)
					hi = rhi;
				j++;
			}
			if (nr > 0 && used + (hi - lo) > STAGE_BYTES)
				break;
			fs->run_lo[nr] = lo;
			fs->run_hi[nr] = hi;
			fs->run_at[nr] = used;
			fs->run_first[nr] = i;
			fs->run_end[nr] = j;
			used += (size_t) (hi - lo + GNN_FSTORE_BLOCK - 1) / GNN_FSTORE_BLOCK * GNN_FSTORE_BLOCK;
			nr++;
			i = j;
		}
		if ((st = read_round(fs, nr, err)) != GNN_OK)
			return st;
		for (int k = 0; k < nr; k++)
		{
			if ((st = check_run(fs, k, err)) != GNN_OK)
				return st;
			if (fs->offset + ((uint64_t) (fs->miss[fs->run_end[k] - 1] >> 32) + 1) * fs->row_bytes >
				fs->run_lo[k] + fs->run_done[k])
				return gnn_error_set(err, GNN_ERR_CORRUPT, "feature store: row %d is past the end of the file",
									 (int32_t) (fs->miss[fs->run_end[k] - 1] >> 32));
		}
		/* the round's rows enter the cache (its lock held once), then go out */
		if (fs->c)
		{
			cache_lock(fs->c);
			for (int k = 0; k < nr; k++)
				for (int64_t q = fs->run_first[k]; q < fs->run_end[k]; q++)
				{
					int32_t		r = (int32_t) (fs->miss[q] >> 32);

					if (q == fs->run_first[k] || r != (int32_t) (fs->miss[q - 1] >> 32))
						cache_insert(fs, r, run_row(fs, k, r));
				}
			cache_unlock(fs->c);
		}
		for (int k = 0; k < nr; k++)
			for (int64_t q = fs->run_first[k]; q < fs->run_end[k]; q++)
			{
				int32_t		r = (int32_t) (fs->miss[q] >> 32);

				if (q == fs->run_first[k] || r != (int32_t) (fs->miss[q - 1] >> 32))
					fs->st.bytes_needed += (int64_t) fs->row_bytes;
				if (out)
					memcpy(out + (size_t) (fs->miss[q] & 0xffffffff) * fs->dim, run_row(fs, k, r), fs->row_bytes);
			}
	}
	return GNN_OK;
}

static gnn_status
grow_miss(gnn_fstore *fs, int64_t n, gnn_error *err)
{
	if (n > fs->miss_cap)
	{
		int64_t    *m = realloc(fs->miss, sizeof(int64_t) * (size_t) n);

		if (!m)
			return gnn_error_set(err, GNN_ERR_NOMEM, "feature store: out of memory for %lld misses", (long long) n);
		fs->miss = m;
		fs->miss_cap = n;
	}
	return GNN_OK;
}

/* fs->miss[0..n) = (file row << 32 | position) of idx[0..n), checked */
static gnn_status
to_rows(gnn_fstore *fs, const int32_t *idx, int64_t n, gnn_error *err)
{
	for (int64_t k = 0; k < n; k++)
	{
		int32_t		r = idx[k];

		if (r < 0 || r >= fs->rows)
			return gnn_error_set(err, GNN_ERR_INVALID, "feature store: row %d out of range (%lld rows)", r,
								 (long long) fs->rows);
		if (fs->row_of)
			r = fs->row_of[r];
		fs->miss[k] = ((int64_t) r << 32) | (int64_t) k;
	}
	return GNN_OK;
}

static gnn_status
fs_gather(gnn_fstore *fs, const int32_t *idx, int64_t n, float *out, gnn_error *err)
{
	int64_t		nm = n;
	gnn_status	st;

	if (n <= 0)
		return GNN_OK;
	if (n > UINT32_MAX)
		return gnn_error_set(err, GNN_ERR_INVALID, "feature store: %lld rows in one gather", (long long) n);
	if ((st = grow_miss(fs, n, err)) != GNN_OK || (st = to_rows(fs, idx, n, err)) != GNN_OK)
		return st;
	for (int64_t k = 0; fs->trace && k < n && *fs->trace_len < fs->trace_cap; k++)
		fs->trace[(*fs->trace_len)++] = (int32_t) (fs->miss[k] >> 32);
	/* hits are copied out under the cache's lock; the misses stay in fs->miss */
	if (fs->c)
	{
		cache_lock(fs->c);
		nm = 0;
		for (int64_t k = 0; k < n; k++)
		{
			int32_t		s = fs->slot_of[fs->miss[k] >> 32];

			if (s >= 0)
			{
				memcpy(out + (size_t) k * fs->dim, fs->slot + (size_t) s * fs->dim, fs->row_bytes);
				fs->visited[s] = 1;
			}
			else
				fs->miss[nm++] = fs->miss[k];
		}
		fs->c->hits += n - nm;
		fs->c->misses += nm;
		cache_unlock(fs->c);
	}
	fs->st.rows_requested += n;
	fs->st.hits += n - nm;
	fs->st.misses += nm;
	if (nm == 0)
		return GNN_OK;
	qsort(fs->miss, (size_t) nm, sizeof(int64_t), cmp_i64);
	return read_misses(fs, nm, out, err);
}

static gnn_status
fs_prefetch(gnn_fstore *fs, const int32_t *idx, int64_t n, gnn_error *err)
{
	int64_t		nm = 0;
	gnn_status	st;

	if (n <= 0 || !fs->c || fs->c->cap == 0)
		return GNN_OK;
	if ((st = grow_miss(fs, n, err)) != GNN_OK || (st = to_rows(fs, idx, n, err)) != GNN_OK)
		return st;
	cache_lock(fs->c);
	for (int64_t k = 0; k < n; k++)
		if (fs->slot_of[fs->miss[k] >> 32] < 0)
			fs->miss[nm++] = fs->miss[k];
	cache_unlock(fs->c);
	if (nm == 0)
		return GNN_OK;
	qsort(fs->miss, (size_t) nm, sizeof(int64_t), cmp_i64);
	for (int64_t k = 0; k < nm; k++)
		fs->st.prefetched += k == 0 || (fs->miss[k] >> 32) != (fs->miss[k - 1] >> 32);
	return read_misses(fs, nm, NULL, err);
}

gnn_status
gnn_fstore_gather(gnn_fstore *fs, const int32_t *idx, int64_t n, float *out, gnn_error *err)
{
	gnn_status	st;

	pthread_mutex_lock(&fs->mu);
	st = fs_gather(fs, idx, n, out, err);
	pthread_mutex_unlock(&fs->mu);
	return st;
}

gnn_status
gnn_fstore_prefetch(gnn_fstore *fs, const int32_t *idx, int64_t n, gnn_error *err)
{
	gnn_status	st;

	pthread_mutex_lock(&fs->mu);
	st = fs_prefetch(fs, idx, n, err);
	pthread_mutex_unlock(&fs->mu);
	return st;
}

void
gnn_fstore_set_checksums(gnn_fstore *fs, const uint32_t *block_crc, uint64_t nblocks)
{
	fs->block_crc = block_crc;
	fs->nblocks = nblocks;
}

void
gnn_fstore_set_trace(gnn_fstore *fs, int32_t *buf, int64_t cap, int64_t *len)
{
	pthread_mutex_lock(&fs->mu);
	fs->trace = buf;
	fs->trace_cap = cap;
	fs->trace_len = len;
	pthread_mutex_unlock(&fs->mu);
}

const char *
gnn_fstore_corrupt(gnn_fstore *fs)
{
	const char *c;

	pthread_mutex_lock(&fs->mu);
	c = fs->corrupt[0] ? fs->corrupt : NULL;
	pthread_mutex_unlock(&fs->mu);
	return c;
}

int64_t
gnn_fstore_rows(const gnn_fstore *fs)
{
	return fs->rows;
}

int32_t
gnn_fstore_dim(const gnn_fstore *fs)
{
	return fs->dim;
}

int64_t
gnn_fstore_cache_rows(const gnn_fstore *fs)
{
	return fs->c ? fs->c->cap : 0;
}

void
gnn_fstore_stats_get(gnn_fstore *fs, gnn_fstore_stats *st)
{
	pthread_mutex_lock(&fs->mu);
	*st = fs->st;
	pthread_mutex_unlock(&fs->mu);
}

static void
stats_clear(gnn_fstore *fs)
{
	bool		d = fs->st.direct;

	memset(&fs->st, 0, sizeof(fs->st));
	fs->st.direct = d;
}

void
gnn_fstore_stats_reset(gnn_fstore *fs)
{
	pthread_mutex_lock(&fs->mu);
	stats_clear(fs);
	pthread_mutex_unlock(&fs->mu);
}

void
gnn_fstore_stats_take(gnn_fstore *fs, gnn_fstore_stats *st)
{
	pthread_mutex_lock(&fs->mu);
	*st = fs->st;
	stats_clear(fs);
	pthread_mutex_unlock(&fs->mu);
}

/* ------------------------------------------------------------------ features files */

#define FMETA_FIXED 24			/* "GNNFEAT1", i64 rows, i32 dim, i32 ordered */

static uint64_t
payload_blocks(int64_t rows, int32_t dim)
{
	return ((uint64_t) rows * sizeof(float) * (uint64_t) dim + GNN_FSTORE_CSUM - 1) / GNN_FSTORE_CSUM;
}

size_t
gnn_fstore_file_meta_len(int64_t rows, int32_t dim, bool ordered)
{
	return FMETA_FIXED + (ordered ? sizeof(int32_t) * (size_t) rows : 0) +
		sizeof(uint32_t) * (size_t) payload_blocks(rows, dim);
}

typedef struct fill_arg
{
	const int32_t *order;
	const int64_t *src_row;
	int32_t		dim;
	size_t		row_bytes;
	uint32_t   *crc;
	gnn_fstore_source_fn source;
	void	   *source_arg;
	/* one chunk's rows, and their source rows */
	float	   *rows;
	int64_t    *src;
	int64_t		cap;
} fill_arg;

static gnn_status
fill_rows(void *arg, uint64_t at, void *buf, size_t len, gnn_error *err)
{
	fill_arg   *a = arg;
	unsigned char *p = buf;
	int64_t		r0 = (int64_t) (at / a->row_bytes),
				n = (int64_t) ((at + len - 1) / a->row_bytes) - r0 + 1;
	gnn_status	st;

	if (len == 0)
		return GNN_OK;
	if (n > a->cap)
	{
		float	   *rows = realloc(a->rows, a->row_bytes * (size_t) n);
		int64_t    *src = rows ? realloc(a->src, sizeof(int64_t) * (size_t) n) : NULL;

		if (rows)
			a->rows = rows;
		if (src)
			a->src = src;
		if (!rows || !src)
			return gnn_error_set(err, GNN_ERR_NOMEM, "feature store: out of memory for %lld rows", (long long) n);
		a->cap = n;
	}
	/* file row r holds node order[r], whose row in the source is src_row[node] */
	for (int64_t k = 0; k < n; k++)
	{
		int64_t		node = a->order ? a->order[r0 + k] : r0 + k;

		a->src[k] = a->src_row ? a->src_row[node] : node;
	}
	if ((st = a->source(a->source_arg, r0, n, a->src, a->rows, err)) != GNN_OK)
		return st;
	memcpy(p, (const unsigned char *) a->rows + (at - (uint64_t) r0 * a->row_bytes), len);
	/* chunks are whole blocks but the last */
	for (size_t k = 0; k < len; k += GNN_FSTORE_CSUM)
		a->crc[(at + k) / GNN_FSTORE_CSUM] = gnn_crc32c(0, p + k, len - k < GNN_FSTORE_CSUM ? len - k : GNN_FSTORE_CSUM);
	return GNN_OK;
}

typedef struct memory_source
{
	const float *feat;
	int32_t		dim;
} memory_source;

static gnn_status
memory_rows(void *arg, int64_t r0, int64_t n, const int64_t *src, float *out, gnn_error *err)
{
	memory_source *m = arg;

	(void) r0;
	(void) err;
	for (int64_t k = 0; k < n; k++)
		memcpy(out + (size_t) k * m->dim, m->feat + (size_t) src[k] * m->dim, sizeof(float) * (size_t) m->dim);
	return GNN_OK;
}

gnn_status
gnn_fstore_write_file(const char *dir, const char *name, uint64_t generation, const float *feat,
					  const int64_t *src_row, int64_t rows, int32_t dim, const int32_t *order, gnn_error *err)
{
	memory_source m = {feat, dim};

	return gnn_fstore_write_source(dir, name, generation, src_row, rows, dim, order, memory_rows, &m, err);
}

gnn_status
gnn_fstore_write_source(const char *dir, const char *name, uint64_t generation, const int64_t *src_row,
						int64_t rows, int32_t dim, const int32_t *order, gnn_fstore_source_fn source,
						void *source_arg, gnn_error *err)
{
	size_t		mlen;
	unsigned char *meta;
	int32_t    *row_of;
	int32_t		ordered = order != NULL;
	fill_arg	a = {0};
	gnn_status	st;

	if (rows < 0 || rows > INT32_MAX || dim <= 0)
		return gnn_error_set(err, GNN_ERR_INVALID, "feature store: bad shape (%lld rows of %d)", (long long) rows, dim);
	mlen = gnn_fstore_file_meta_len(rows, dim, order != NULL);
	meta = calloc(1, mlen);
	if (!meta)
		return gnn_error_set(err, GNN_ERR_NOMEM, "feature store: out of memory for %zu bytes of metadata", mlen);
	memcpy(meta, "GNNFEAT1", 8);
	memcpy(meta + 8, &rows, 8);
	memcpy(meta + 16, &dim, 4);
	memcpy(meta + 20, &ordered, 4);
	row_of = (int32_t *) (meta + FMETA_FIXED);
	if (order)
	{
		for (int64_t r = 0; r < rows; r++)
			row_of[r] = -1;
		for (int64_t r = 0; r < rows; r++)
		{
			if (order[r] < 0 || order[r] >= rows || row_of[order[r]] >= 0)
			{
				free(meta);
				return gnn_error_set(err, GNN_ERR_INVALID, "feature store: the row order is not a permutation (row %lld)",
									 (long long) r);
			}
			row_of[order[r]] = (int32_t) r;
		}
	}
	a.src_row = src_row;
	a.order = order;
	a.dim = dim;
	a.row_bytes = sizeof(float) * (size_t) dim;
	a.crc = (uint32_t *) (meta + FMETA_FIXED + (order ? sizeof(int32_t) * (size_t) rows : 0));
	a.source = source;
	a.source_arg = source_arg;
	st = gnn_store_write_fill(dir, name, GNN_STORE_FEATURES, generation, meta, mlen,
							  (size_t) rows * a.row_bytes, fill_rows, &a, err);
	free(a.rows);
	free(a.src);
	free(meta);
	return st;
}

gnn_status
gnn_fstore_open_file(const char *path, uint64_t generation, int64_t cache_rows, bool direct,
					 gnn_fstore **out, gnn_error *err)
{
	gnn_store_header h;
	unsigned char *meta;
	int64_t		rows;
	int32_t		dim,
				ordered;
	gnn_status	st;

	*out = NULL;
	/* the header first (its lengths are checked against the file), then the metadata */
	if ((st = gnn_store_read_header(path, &h, NULL, 0, err)) != GNN_OK)
		return st;
	if (h.meta_len < FMETA_FIXED)
		return gnn_error_set(err, GNN_ERR_CORRUPT, "\"%s\": bad features metadata length %llu",
							 path, (unsigned long long) h.meta_len);
	meta = malloc(h.meta_len);
	if (!meta)
		return gnn_error_set(err, GNN_ERR_NOMEM, "feature store: out of memory for %llu bytes of metadata",
							 (unsigned long long) h.meta_len);
	if ((st = gnn_store_read_header(path, &h, meta, h.meta_len, err)) != GNN_OK)
	{
		free(meta);
		return st;
	}
	memcpy(&rows, meta + 8, 8);
	memcpy(&dim, meta + 16, 4);
	memcpy(&ordered, meta + 20, 4);
	if (h.kind != GNN_STORE_FEATURES || memcmp(meta, "GNNFEAT1", 8) != 0)
		st = gnn_error_set(err, GNN_ERR_CORRUPT, "\"%s\" is not a features file", path);
	else if (generation && h.generation != generation)
		st = gnn_error_set(err, GNN_ERR_CORRUPT, "\"%s\" belongs to graph version %llu, not %llu", path,
						   (unsigned long long) h.generation, (unsigned long long) generation);
	else if (rows < 0 || rows > INT32_MAX || dim <= 0 || (ordered != 0 && ordered != 1) ||
			 h.meta_len != gnn_fstore_file_meta_len(rows, dim, ordered) ||
			 h.payload_len != (uint64_t) rows * sizeof(float) * (uint64_t) dim ||
			 h.payload_offset % GNN_FSTORE_BLOCK != 0)
		st = gnn_error_set(err, GNN_ERR_CORRUPT, "\"%s\": features metadata does not match its payload", path);
	else if (ordered)
	{
		/* a permutation, or a gather could read another node's row */
		const int32_t *row_of = (const int32_t *) (meta + FMETA_FIXED);
		uint8_t    *seen = calloc((size_t) rows + 1, 1);

		if (!seen)
			st = gnn_error_set(err, GNN_ERR_NOMEM, "feature store: out of memory");
		for (int64_t r = 0; seen && r < rows && st == GNN_OK; r++)
		{
			if (row_of[r] < 0 || row_of[r] >= rows || seen[row_of[r]])
				st = gnn_error_set(err, GNN_ERR_CORRUPT, "\"%s\": its row map is not a permutation (node %lld)",
								   path, (long long) r);
			else
				seen[row_of[r]] = 1;
		}
		free(seen);
	}
	if (st == GNN_OK)
		st = gnn_fstore_open(path, h.payload_offset, rows, dim, cache_rows, direct, out, err);
	if (st != GNN_OK)
	{
		free(meta);
		return st;
	}
	(*out)->owned = meta;
	(*out)->row_of = ordered ? (const int32_t *) (meta + FMETA_FIXED) : NULL;
	gnn_fstore_set_checksums(*out, (const uint32_t *) (meta + FMETA_FIXED + (ordered ? sizeof(int32_t) * (size_t) rows : 0)),
							 payload_blocks(rows, dim));
	return GNN_OK;
}

gnn_status
gnn_fstore_degree_order(const gnn_graph *g, int32_t *order, gnn_error *err)
{
	int64_t		n = g->num_nodes;
	int64_t    *key;

	if (n > INT32_MAX)
		return gnn_error_set(err, GNN_ERR_LIMIT, "feature store: %lld nodes (at most %d)", (long long) n, INT32_MAX);
	key = malloc(sizeof(int64_t) * (size_t) (n + 1));
	if (!key)
		return gnn_error_set(err, GNN_ERR_NOMEM, "feature store: out of memory ordering %lld rows", (long long) n);
	/* (in + out degree) descending, then node ascending: one sort of packed keys */
	for (int64_t v = 0; v < n; v++)
	{
		int64_t		d = (g->indptr[v + 1] - g->indptr[v]) + (g->rindptr ? g->rindptr[v + 1] - g->rindptr[v] : 0);

		if (d > INT32_MAX)
			d = INT32_MAX;
		key[v] = ((int64_t) (INT32_MAX - d) << 32) | v;
	}
	qsort(key, (size_t) n, sizeof(int64_t), cmp_i64);
	for (int64_t r = 0; r < n; r++)
		order[r] = (int32_t) (key[r] & 0xffffffff);
	free(key);
	return GNN_OK;
}

gnn_status
gnn_fstore_locality_order(const gnn_graph *g, int64_t cluster, int32_t *order, gnn_error *err)
{
	int64_t		n = g->num_nodes,
				out = 0;
	int32_t    *roots;
	uint8_t    *seen;
	gnn_status	st;

	if (n > INT32_MAX)
		return gnn_error_set(err, GNN_ERR_LIMIT, "feature store: %lld nodes (at most %d)", (long long) n, INT32_MAX);
	if (cluster < 1)
		cluster = 1;
	roots = malloc(sizeof(int32_t) * (size_t) (n + 1));
	seen = calloc((size_t) n + 1, 1);
	if (!roots || !seen)
	{
		free(roots);
		free(seen);
		return gnn_error_set(err, GNN_ERR_NOMEM, "feature store: out of memory ordering %lld rows", (long long) n);
	}
	if ((st = gnn_fstore_degree_order(g, roots, err)) != GNN_OK)
	{
		free(roots);
		free(seen);
		return st;
	}
	/*
	 * Each part grows breadth-first from the hottest node not yet placed, over
	 * out- and in-arcs, until it has cluster nodes; order[] is its queue.
	 * Every node is expanded at most once: O(nodes + arcs).
	 */
	for (int64_t i = 0; i < n; i++)
	{
		int64_t		start = out,
					head = out;

		if (seen[roots[i]])
			continue;
		seen[roots[i]] = 1;
		order[out++] = roots[i];
		while (head < out && out - start < cluster)
		{
			int32_t		v = order[head++];

			for (int pass = 0; pass < 2 && out - start < cluster; pass++)
			{
				const int64_t *ptr = pass ? g->rindptr : g->indptr;
				const int32_t *idx = pass ? g->rindices : g->indices;

				if (!ptr)
					continue;
				for (int64_t e = ptr[v]; e < ptr[v + 1] && out - start < cluster; e++)
					if (!seen[idx[e]])
					{
						seen[idx[e]] = 1;
						order[out++] = idx[e];
					}
			}
		}
	}
	free(roots);
	free(seen);
	return GNN_OK;
}
