/*
 * gnn_core.h: what every part of the PostgreSQL-free compute core shares:
 * status codes with a message buffer, a seeded RNG, callbacks.
 *
 * The core never includes postgres.h, never calls palloc or ereport and
 * never longjmps: it returns a gnn_status and fills a gnn_error, and the
 * glue turns that into ereport after the core has freed what it held.
 */
#ifndef GNN_CORE_H
#define GNN_CORE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <stdbool.h>
#include <pthread.h>

typedef enum gnn_status
{
	GNN_OK = 0,
	GNN_ERR_NOMEM,				/* allocation failed */
	GNN_ERR_INVALID,			/* invalid argument or state */
	GNN_ERR_DANGLING,			/* an edge endpoint is not a known node */
	GNN_ERR_DUPLICATE,			/* duplicate node id */
	GNN_ERR_BAD_VALUE,			/* NaN / Inf / out-of-range value */
	GNN_ERR_DIMENSION,			/* sizes that do not agree */
	GNN_ERR_EMPTY,				/* nothing to work on */
	GNN_ERR_LIMIT,				/* would exceed a configured limit */
	GNN_ERR_CORRUPT,			/* a serialised blob failed validation */
	GNN_ERR_BACKEND,			/* a compute backend (CUDA...) failed */
	GNN_ERR_UNSUPPORTED,		/* not available on this build / machine */
	GNN_ERR_CANCELLED			/* should_stop() said stop */
} gnn_status;

#define GNN_ERRMSG_LEN 512

/* Error details: a message, and where known the offending row and value. */
typedef struct gnn_error
{
	gnn_status	status;
	int64_t		row;			/* offending input row (0-based), or -1 */
	int64_t		id;				/* offending id, when there is one */
	char		msg[GNN_ERRMSG_LEN];
} gnn_error;

/* Record an error; returns status so callers can `return gnn_error_set(...)`. */
gnn_status	gnn_error_set(gnn_error *err, gnn_status status, const char *fmt,...)
			__attribute__((format(printf, 3, 4)));
void		gnn_error_clear(gnn_error *err);
const char *gnn_status_name(gnn_status status);

/* ------------------------------------------------------------------ RNG
 * xoshiro256**: small, fast, good statistics; explicit state, no globals.
 * gnn_rng_seed expands a 64-bit seed with splitmix64; gnn_rng_split gives an
 * independent stream (for a thread or a batch) from a parent state.
 */
typedef struct gnn_rng
{
	uint64_t	s[4];
} gnn_rng;

void		gnn_rng_seed(gnn_rng *rng, uint64_t seed);
void		gnn_rng_split(const gnn_rng *parent, uint64_t stream, gnn_rng *child);

static inline uint64_t
gnn_rng_rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

static inline uint64_t
gnn_rng_next(gnn_rng *r)
{
	uint64_t	result = gnn_rng_rotl(r->s[1] * 5, 7) * 9;
	uint64_t	t = r->s[1] << 17;

	r->s[2] ^= r->s[0];
	r->s[3] ^= r->s[1];
	r->s[1] ^= r->s[2];
	r->s[0] ^= r->s[3];
	r->s[2] ^= t;
	r->s[3] = gnn_rng_rotl(r->s[3], 45);
	return result;
}

/* uniform in [0, 1) with 24 bits (float) or 53 bits (double) */
static inline float
gnn_rng_float(gnn_rng *r)
{
	return (float) (gnn_rng_next(r) >> 40) * (1.0f / 16777216.0f);
}

static inline double
gnn_rng_double(gnn_rng *r)
{
	return (double) (gnn_rng_next(r) >> 11) * (1.0 / 9007199254740992.0);
}

/* uniform integer in [0, n), n > 0, without modulo bias (Lemire) */
static inline uint64_t
gnn_rng_below(gnn_rng *r, uint64_t n)
{
	unsigned __int128 m = (unsigned __int128) gnn_rng_next(r) * n;
	uint64_t	l = (uint64_t) m;

	if (l < n)
	{
		uint64_t	t = (0 - n) % n;

		while (l < t)
		{
			m = (unsigned __int128) gnn_rng_next(r) * n;
			l = (uint64_t) m;
		}
	}
	return (uint64_t) (m >> 64);
}

/* qsort's comparator for int32_t, ascending */
static inline int
gnn_cmp_i32(const void *a, const void *b)
{
	int32_t		x = *(const int32_t *) a,
				y = *(const int32_t *) b;

	return (x > y) - (x < y);
}

/*
 * a[0..n) ascending, as qsort with gnn_cmp_i32 sorts it: an LSD radix sort
 * (11-bit digits, a pass skipped where every value shares its digit) from
 * 512 values on, qsort below that or without memory for its scratch
 */
void		gnn_sort_i32(int32_t *a, int64_t n);

/* Fisher-Yates over a[0..n), drawing from r (the training loops' shuffles) */
static inline void
gnn_shuffle_i32(gnn_rng *r, int32_t *a, int64_t n)
{
	for (int64_t i = n - 1; i > 0; i--)
	{
		int64_t		j = (int64_t) gnn_rng_below(r, (uint64_t) i + 1);
		int32_t		x = a[i];

		a[i] = a[j];
		a[j] = x;
	}
}

/* ------------------------------------------------------------------ hashing, time
 * One 64-bit mixer (murmur3's finaliser) and one byte hash (64-bit chunks,
 * multiply-xorshift mixing) for every hash table of the core and the glue.
 * Not keyed: the values are the user's own tables, not an adversary's.
 */
static inline uint64_t
gnn_mix64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	x ^= x >> 33;
	return x;
}

static inline uint64_t
gnn_hash_bytes(const char *s, size_t len)
{
	uint64_t	h = 0x9e3779b97f4a7c15ULL ^ ((uint64_t) len * 0x100000001b3ULL);
	uint64_t	w;

	while (len >= 8)
	{
		memcpy(&w, s, 8);
		h = (h ^ gnn_mix64(w)) * 0x9e3779b97f4a7c15ULL;
		s += 8;
		len -= 8;
	}
	w = 0;
	if (len)
		memcpy(&w, s, len);
	return gnn_mix64(h ^ w ^ ((uint64_t) len << 59));
}

/* A monotonic clock in seconds (common.c): the training loops' timings. */
double		gnn_now_s(void);

/*
 * How many of want threads a parallel region should use now (common.c).
 * A fork-join region waits for its slowest thread, so on a server whose
 * cores are busy with other processes a team of all cores waits for
 * descheduled members (Cora GCN: 30x slower on 2 threads than on 1 with
 * two busy processes).  The team is the cores that the other runnable
 * tasks leave idle, at least 1 and at most want: the system's runnable
 * count (/proc/loadavg), read at most every 20 ms, less the caller's own
 * last team (its spinning workers count as runnable), the least of the
 * last three readings (load that stays, not a task runnable for an
 * instant).  Callers keep the whole team for regions of much work (the
 * CPU backend's large GEMMs and aggregations), where a descheduled member
 * costs little and a fuller team gets a fairer share of a busy machine.
 * Results never depend on it (every kernel is thread-count independent).  The
 * environment variable GNN_ADAPTIVE_THREADS=0 turns it off (want as is).
 */
int			gnn_team_size(int want);

/* gnn_team_size of a configured thread count (0 or less: OpenMP's maximum; 1 without OpenMP) */
int			gnn_team_for(int32_t nthreads);

/*
 * The most threads a team started from the calling thread may have, whether
 * or not the machine is busy (gnn_team_size, gnn_team_capped); 0: no cap.
 * Returns the previous cap, for the caller to put back.  Two threads of one
 * job that run their teams at the same time (a minibatch pipeline's
 * producer and its computing thread, while evaluating) share the cores
 * this way instead of each taking all of them.
 */
int			gnn_team_cap_set(int cap);

/* n, or the calling thread's cap where that is less */
int			gnn_team_capped(int n);

/*
 * Map in the pages of a fresh, all-zero shared mapping before it is written
 * (common.c), on nthreads threads (0: all): one madvise(MADV_POPULATE_WRITE)
 * per thread instead of a page fault per 4 kB page, which on a virtual
 * machine costs several times more (a 1.5 GB graph region: 0.4 s instead of
 * about 2 s).  Where the kernel lacks it, each page is touched by writing
 * the zero it holds.
 */
void		gnn_prefault(void *addr, uint64_t bytes, int nthreads);

/*
 * Map in the pages of memory this process will read all over but has not
 * touched (another process's shared segment): one call instead of a page
 * fault per page (MADV_POPULATE_READ; a no-op where the kernel lacks it).
 */
void		gnn_premap(const void *addr, uint64_t bytes);

/*
 * Ask for transparent huge pages on the 2 MB-aligned interior of a fresh
 * private array of at least 8 MB that is about to be written
 * (madvise(MADV_HUGEPAGE); Linux's default THP mode, "madvise", gives huge
 * pages only to memory that asks).  The first write then maps 2 MB at a
 * time instead of 4 kB: on the 2-core dev VM (a PVM guest, where every 4 kB
 * page fault traps to the hypervisor) fresh memory is written at 0.6-12
 * GB/s this way against 0.4 GB/s, and on any machine a large load takes
 * 512 times fewer faults.  A hint only: nothing changes where the kernel
 * has no THP or says no.  GNN_HUGE_PAGES=0 in the environment turns it off
 * (for measuring).  Memory that may stay partly unwritten costs at most
 * the 2 MB page around its written end.
 */
void		gnn_advise_huge(void *addr, uint64_t bytes);

/*
 * Start fn(arg) on a thread with every signal blocked: the caller may be a
 * PostgreSQL backend, whose signal handlers must run on its own thread.
 * Detached, or joinable through *t.  False when no thread could start
 * (callers then do the work in line).
 */
bool		gnn_thread_start(pthread_t *t, bool detached, void *(*fn) (void *), void *arg);

/* the smallest array gnn_advise_huge advises */
#define GNN_BIG_BYTES ((uint64_t) 8 << 20)

/* malloc, then gnn_advise_huge: for a large array about to be written */
void	   *gnn_malloc_big(size_t bytes);

/*
 * calloc for a large array (8 MB or more), advised for huge pages before it
 * is zeroed.  (A job's worker keeps its heap, so calloc zeroes memory the
 * heap already has: 4 kB faults, 20 ms for a sampler's 8 MB of marks over 1M
 * nodes on a VM.)  NULL when out of memory or n * size overflows.
 */
void	   *gnn_calloc_big(size_t n, size_t size);

/*
 * realloc for a growing array: a large new block (8 MB or more) is malloc'd,
 * advised for huge pages, and the old contents copied in, rather than
 * realloc'd (which would copy into memory not yet advised, a 4 kB fault per
 * page).  Returns NULL, with p untouched, when out of memory.
 */
void	   *gnn_realloc_big(void *p, size_t old_bytes, size_t new_bytes);

/*
 * A growable byte buffer: malloc'd p holding n bytes, NUL-terminated after
 * each write (so text can be read as a string).  When an allocation fails
 * oom is set and later writes are dropped; the owner checks oom once at the
 * end and frees p.  Start from {0}.
 */
typedef struct gnn_bytes
{
	char	   *p;
	size_t		n;
	size_t		cap;
	bool		oom;
} gnn_bytes;

void		gnn_bytes_put(gnn_bytes *b, const void *s, size_t len);

/* ------------------------------------------------------------------ callbacks
 * Long-running core work reports progress and asks whether to stop.  Both may
 * be NULL.  They are called from the thread that called the core, never from
 * worker threads.
 */
typedef bool (*gnn_should_stop_fn) (void *arg);

/*
 * Type limits of a typed graph (graph/graph.h) and of the relational models
 * built for one (nn/model.c): here so that both layers see them without the
 * models including the graph.
 */
#define GNN_MAX_NODE_TYPES 64
#define GNN_MAX_EDGE_TYPES 256

#endif							/* GNN_CORE_H */
