/*
 * cache.c: the shared inference result cache.
 *
 * A full-graph inference result (one layer's output for every node: an
 * embedding, or class probabilities) is computed once per model row and
 * graph version into a DSM segment and shared by every session: the training
 * worker publishes the default results when a job ends, and the first caller
 * computes whatever is missing while concurrent callers of the same result
 * wait for it (a condition variable) instead of computing it again.
 *
 * Entries are keyed by (database, owner, model row id and xmin, graph
 * generation, kind, layer, and the as_of moment a time-aware model was asked
 * at, if any): a retrained model (a new row), a reloaded graph (a new
 * generation) or a dropped model never finds an old result.  Their
 * segments are counted against gnn.max_cache_memory; the least recently used
 * ready entries are evicted to make room.  A result larger than the budget
 * is computed for the calling transaction only.
 *
 * Only sessions whose current role owns the model reach its entries (model
 * names are per role), and gnn.cache lists only the caller's own entries
 * (every role's for a superuser).
 *
 * A session keeps the segments it reads mapped across transactions (see
 * CmapSweep); an entry evicted meanwhile lives on for the sessions that map
 * it (DSM reference counting) until each ends a transaction.
 */
#include "common/gnn_pg.h"

#include <math.h>
#include <sys/mman.h>
#include <unistd.h>

#include "access/xact.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "storage/latch.h"
#include "tcop/tcopprot.h"
#include "storage/condition_variable.h"
#include "storage/ipc.h"
#include "utils/builtins.h"
#include "utils/resowner.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"

#include "infer/hnsw.h"
#include "infer/topk.h"

PG_FUNCTION_INFO_V1(gnn_cache_entries);

#define CACHE_MAGIC 0x474e4e43u	/* "GNNC" */

typedef struct CacheHeader
{
	uint32		magic;
	int32		cols;
	int64		rows;
	Size		ids_off;
	Size		out_off;
	Size		norms_off;
	Size		emb16_off;		/* embeddings: a bf16 copy for gnn.similar's scan; 0: none */
} CacheHeader;

/* ------------------------------------------------------------------ this session's mappings
 * A session keeps the shared results it has read mapped across its
 * transactions: mapping a 500 MB result costs tens of milliseconds of page
 * faults, which repeated calls should not pay again.  At the end of every
 * transaction the mappings of entries that are no longer in the cache
 * (evicted, dropped, replaced) are let go, so their memory is freed once the
 * sessions that read them end a transaction.  Results computed for one
 * transaction only (serial 0) go at its end.
 */
#define CMAP_MAX 32
#define CMAP_INDEX (UINT64CONST(1) << 63)	/* a serial with this bit: one of the entry's indexes */
#define CMAP_DOT (UINT64CONST(1) << 62)	/* ... its dot-product one */
#define CMAP_SERIAL(s) ((s) & ~(CMAP_INDEX | CMAP_DOT))
typedef struct CacheMap
{
	uint64		serial;			/* the entry's serial (| CMAP_INDEX, CMAP_DOT: an index); 0: a private result */
	dsm_segment *seg;
} CacheMap;

static CacheMap cmap[CMAP_MAX];
static int	ncmap = 0;
static bool xact_cb = false;
static bool exit_cb = false;

static void
CmapForget(int i)
{
	dsm_detach(cmap[i].seg);
	cmap[i] = cmap[--ncmap];
}

/* at a transaction's end: keep what is still cached, let go of the rest */
static void
CmapSweep(void)
{
	bool		live[CMAP_MAX];

	if (ncmap == 0 || gnn_shared == NULL)
		return;
	LWLockAcquire(gnn_shared->lock, LW_SHARED);
	for (int i = 0; i < ncmap; i++)
	{
		live[i] = false;
		for (int j = 0; j < GNN_CACHE_SLOTS && cmap[i].serial != 0; j++)
		{
			GnnCacheEntry *e = &gnn_shared->cache[j];

			if (e->state == GNN_CACHE_READY && e->serial == CMAP_SERIAL(cmap[i].serial))
			{
				live[i] = !(cmap[i].serial & CMAP_INDEX) ||
					e->index[(cmap[i].serial & CMAP_DOT) ? 1 : 0].state == GNN_INDEX_READY;
				break;
			}
		}
	}
	LWLockRelease(gnn_shared->lock);
	for (int i = ncmap - 1; i >= 0; i--)
		if (!live[i])
		{
			live[i] = live[ncmap - 1];
			CmapForget(i);
		}
}

static void
CacheXactCallback(XactEvent event, void *arg)
{
	if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_ABORT || event == XACT_EVENT_PREPARE ||
		event == XACT_EVENT_PARALLEL_COMMIT || event == XACT_EVENT_PARALLEL_ABORT)
		CmapSweep();
}

/* keep seg mapped (it must have been attached or created without a resource owner) */
static void
CmapAdd(uint64 serial, dsm_segment *seg)
{
	if (!xact_cb)
	{
		RegisterXactCallback(CacheXactCallback, NULL);
		xact_cb = true;
	}
	if (ncmap == CMAP_MAX)
	{
		/*
		 * let go of a shared one (the oldest): this transaction may still
		 * point into a private one, and into shared ones it read; those are
		 * the last CMAP_MAX - 1 it used
		 */
		for (int i = 0; i < ncmap; i++)
			if (cmap[i].serial != 0)
			{
				dsm_detach(cmap[i].seg);
				memmove(&cmap[i], &cmap[i + 1], sizeof(CacheMap) * (ncmap - i - 1));
				ncmap--;
				break;
			}
		if (ncmap == CMAP_MAX)
			ereport(ERROR,
					(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
					 errmsg("too many inference results are in use in this transaction")));
	}
	cmap[ncmap].serial = serial;
	cmap[ncmap].seg = seg;
	ncmap++;
}

static dsm_segment *
CmapFind(uint64 serial)
{
	for (int i = 0; i < ncmap; i++)
		if (serial != 0 && cmap[i].serial == serial)
			return cmap[i].seg;
	return NULL;
}

/* attach for the session (no resource owner: CmapSweep detaches it) */
static dsm_segment *
AttachForSession(dsm_handle h)
{
	ResourceOwner save = CurrentResourceOwner;
	dsm_segment *seg;

	CurrentResourceOwner = NULL;
	seg = GnnDsmAttach(h);
	CurrentResourceOwner = save;
	return seg;
}

static void
ResultFromSegment(dsm_segment *seg, GnnResult *res)
{
	char	   *base = dsm_segment_address(seg);
	CacheHeader *h = (CacheHeader *) base;

	if (h->magic != CACHE_MAGIC)
		ereport(ERROR, (errcode(ERRCODE_DATA_CORRUPTED), errmsg("a cached inference result is corrupt")));
	res->rows = h->rows;
	res->cols = h->cols;
	res->ids = (int64 *) (base + h->ids_off);
	res->out = (float *) (base + h->out_off);
	res->norms = (float *) (base + h->norms_off);
	res->emb16 = h->emb16_off ? (uint16 *) (base + h->emb16_off) : NULL;
	res->fresh = false;
}

/* ------------------------------------------------------------------ shared entries */

static bool
KeyEqual(const GnnCacheKey *a, const GnnCacheKey *b)
{
	return a->dbid == b->dbid && a->owner == b->owner && a->model_id == b->model_id &&
		a->model_xmin == b->model_xmin && a->generation == b->generation && a->kind == b->kind &&
		a->layer == b->layer && a->has_as_of == b->has_as_of && (!a->has_as_of || a->as_of == b->as_of);
}

/* a and b are results of the same model row, kind and layer (of any graph version) */
static bool
SameButVersion(const GnnCacheKey *a, const GnnCacheKey *b)
{
	return a->dbid == b->dbid && a->owner == b->owner && a->model_id == b->model_id &&
		a->model_xmin == b->model_xmin && a->kind == b->kind && a->layer == b->layer &&
		a->has_as_of == b->has_as_of && a->as_of == b->as_of;
}

/* caller holds the lock */
static GnnCacheEntry *
FindKey(const GnnCacheKey *key)
{
	for (int i = 0; i < GNN_CACHE_SLOTS; i++)
	{
		GnnCacheEntry *e = &gnn_shared->cache[i];

		if (e->state != GNN_CACHE_FREE && KeyEqual(&e->key, key))
			return e;
	}
	return NULL;
}

/* caller holds the lock exclusively: a ready entry goes (its readers keep their mappings) */
static void
EntryFree(GnnCacheEntry *e)
{
	if (e->state == GNN_CACHE_READY)
		dsm_unpin_segment(e->handle);
	for (int m = 0; m < 2; m++)
		if (e->index[m].state == GNN_INDEX_READY)
		{
			dsm_unpin_segment(e->index[m].handle);
			gnn_shared->cache_bytes -= Min(e->index[m].bytes, gnn_shared->cache_bytes);
		}
	gnn_shared->cache_bytes -= Min(e->bytes, gnn_shared->cache_bytes);
	memset(e, 0, sizeof(*e));
}

/* whether ready entry a goes before b when room is needed: a previous version's first, then the least recently used */
static bool
EvictBefore(const GnnCacheEntry *a, const GnnCacheEntry *b)
{
	if (b == NULL)
		return true;
	if (a->stale != b->stale)
		return a->stale;
	return a->last_used < b->last_used;
}

/* caller holds the lock exclusively: the ready entry to evict first, or NULL */
static GnnCacheEntry *
LruVictim(void)
{
	GnnCacheEntry *v = NULL;

	for (int i = 0; i < GNN_CACHE_SLOTS; i++)
	{
		GnnCacheEntry *e = &gnn_shared->cache[i];

		if (e->state == GNN_CACHE_READY && EvictBefore(e, v))
			v = e;
	}
	return v;
}

/* caller holds the lock exclusively: a slot to claim, evicting the LRU entry if all are taken */
static GnnCacheEntry *
ClaimSlot(void)
{
	GnnCacheEntry *v;

	for (int i = 0; i < GNN_CACHE_SLOTS; i++)
		if (gnn_shared->cache[i].state == GNN_CACHE_FREE)
			return &gnn_shared->cache[i];
	v = LruVictim();
	if (v)
		EntryFree(v);
	return v;
}

/*
 * caller holds the lock exclusively: make room for bytes more under
 * gnn.max_cache_memory by evicting least recently used entries; false if
 * the budget cannot hold it even empty.
 */
static bool
MakeRoomBut(uint64 bytes, const GnnCacheEntry *keep)
{
	uint64		limit = (uint64) gnn_max_cache_memory_mb * 1024 * 1024;

	while (gnn_shared->cache_bytes + bytes > limit)
	{
		GnnCacheEntry *v = NULL;

		for (int i = 0; i < GNN_CACHE_SLOTS; i++)
		{
			GnnCacheEntry *e = &gnn_shared->cache[i];

			if (e != keep && e->state == GNN_CACHE_READY && EvictBefore(e, v))
				v = e;
		}
		if (v == NULL)
			return false;
		EntryFree(v);
	}
	return true;
}

static bool
MakeRoom(uint64 bytes)
{
	return MakeRoomBut(bytes, NULL);
}

/* caller holds the lock: e is this process's claim, being computed (or claimed ahead, GnnCacheClaim) */
static inline bool
OwnClaim(const GnnCacheEntry *e)
{
	return e && e->state == GNN_CACHE_COMPUTING && e->computing_pid == MyProcPid;
}

/*
 * The results this process claimed (GnnCacheClaim) or computes, released:
 * their askers compute their own.  At exit too (CacheAtExit).
 */
void
GnnCacheReleaseClaims(void)
{
	bool		any = false;

	if (gnn_shared == NULL)
		return;
	LWLockAcquire(gnn_shared->lock, LW_EXCLUSIVE);
	for (int i = 0; i < GNN_CACHE_SLOTS; i++)
	{
		GnnCacheEntry *e = &gnn_shared->cache[i];

		if (OwnClaim(e))
		{
			EntryFree(e);
			any = true;
		}
	}
	LWLockRelease(gnn_shared->lock);
	if (any)
		ConditionVariableBroadcast(&gnn_shared->cache_cv);
}

/* entries this process is computing are released if it exits mid-way */
static void
CacheAtExit(int code, Datum arg)
{
	GnnCacheReleaseClaims();
}

static Size
SegmentSize(int64 rows, int32 cols, bool with16, CacheHeader *h)
{
	Size		off = MAXALIGN(sizeof(CacheHeader));

	h->ids_off = off;
	off += MAXALIGN(sizeof(int64) * (Size) Max(rows, 1));
	h->out_off = off;
	off += MAXALIGN(sizeof(float) * (Size) Max(rows, 1) * (Size) Max(cols, 1));
	h->norms_off = off;
	off += MAXALIGN(sizeof(float) * (Size) Max(rows, 1));
	h->emb16_off = 0;
	if (with16)
	{
		h->emb16_off = off;
		off += MAXALIGN(sizeof(uint16) * (Size) Max(rows, 1) * (Size) Max(cols, 1));
	}
	return off;
}

/*
 * A new, unpublished result segment of rows x cols mapped by this session
 * (beyond the transaction: the training worker fills it in one transaction
 * and publishes it after committing the model row).  res points into it;
 * ids and out are for the caller to fill, then GnnResultFinish.
 */
dsm_segment *
GnnResultCreate(int64 rows, int32 cols, bool with16, GnnResult *res)
{
	CacheHeader h;
	Size		bytes = SegmentSize(rows, cols, with16, &h);
	dsm_segment *seg;
	ResourceOwner save = CurrentResourceOwner;

	h.magic = CACHE_MAGIC;
	h.rows = rows;
	h.cols = cols;
	/* no resource owner: an error must not unmap it behind the caller's back */
	CurrentResourceOwner = NULL;
	seg = GnnDsmCreate(bytes, 0);
	CurrentResourceOwner = save;
	memcpy(dsm_segment_address(seg), &h, sizeof(h));
	ResultFromSegment(seg, res);
	res->bytes = bytes;
	res->serial = 0;
	return seg;
}

/*
 * Map in every page of a result's rows and norms at once before a full scan
 * (gnn.similar): a session's first scan of a 500 MB result otherwise takes
 * one page fault per 4 kB, which cost more than the scan itself.  Where the
 * kernel cannot (before Linux 5.14), the scan faults them in as before.
 */
void
GnnResultPrefault(const GnnResult *res)
{
#ifdef MADV_POPULATE_READ
	uintptr_t	page = (uintptr_t) sysconf(_SC_PAGESIZE);
	/* what the scan reads: the norms and the bf16 copy, or the rows */
	uintptr_t	start = (uintptr_t) (res->emb16 ? (const void *) res->norms : (const void *) res->out) & ~(page - 1);
	uintptr_t	end = res->emb16 ? (uintptr_t) (res->emb16 + res->rows * (int64) res->cols) :
		(uintptr_t) (res->norms + res->rows);

	if (page > 0 && end > start)
		(void) madvise((void *) start, end - start, MADV_POPULATE_READ);
#endif
}

/* row norms (and the bf16 copy) for cosine similarity; after out is filled */
void
GnnResultFinish(GnnResult *res)
{
	float	   *norms = (float *) res->norms;

	if (res->emb16)
		gnn_to_bf16(res->out, res->rows * (int64) res->cols, (uint16 *) res->emb16);

	for (int64 i = 0; i < res->rows; i++)
	{
		double		s = 0;
		const float *r = res->out + i * res->cols;

		for (int j = 0; j < res->cols; j++)
			s += (double) r[j] * r[j];
		norms[i] = (float) sqrt(s);
	}
}

/*
 * Publish a finished segment under key (the caller no longer needs it
 * mapped: it is detached here).  Nothing happens if the key is already
 * there, or if the budget cannot hold it.  Never errors after the segment
 * is pinned.
 */
void
GnnCachePublish(const GnnCacheKey *key, const char *model, int32 version, const char *graph,
				dsm_segment *seg, GnnResult *res, double seconds)
{
	GnnCacheEntry *e;
	bool		published = false;

	GnnCacheInitProcess();
	LWLockAcquire(gnn_shared->lock, LW_EXCLUSIVE);
	if (FindKey(key) == NULL && MakeRoom(res->bytes) && (e = ClaimSlot()) != NULL)
	{
		dsm_pin_segment(seg);
		memset(e, 0, sizeof(*e));
		e->state = GNN_CACHE_READY;
		e->key = *key;
		strlcpy(e->model, model, sizeof(e->model));
		e->version = version;
		strlcpy(e->graph, graph, sizeof(e->graph));
		e->handle = dsm_segment_handle(seg);
		e->bytes = res->bytes;
		e->rows = res->rows;
		e->computed = res->rows;
		e->cols = res->cols;
		e->created = GetCurrentTimestamp();
		e->last_used = ++gnn_shared->cache_clock;
		e->serial = ++gnn_shared->cache_serial;
		e->seconds = seconds;
		gnn_shared->cache_bytes += res->bytes;
		published = true;
	}
	LWLockRelease(gnn_shared->lock);
	if (published)
		ConditionVariableBroadcast(&gnn_shared->cache_cv);
	dsm_detach(seg);
}

void
GnnCacheInitProcess(void)
{
	if (!exit_cb)
	{
		before_shmem_exit(CacheAtExit, (Datum) 0);
		exit_cb = true;
	}
}

/* caller holds the lock exclusively: count a hit on a ready entry and say where it is */
static void
TakeHit(GnnCacheEntry *e, uint64 *serial, dsm_handle *handle)
{
	/*
	 * Under the lock shared (hits never wait for one another): the counters
	 * move atomically; whoever holds it exclusively sees no hit meanwhile.
	 */
	__atomic_add_fetch(&e->hits, 1, __ATOMIC_RELAXED);
	__atomic_store_n(&e->last_used, __atomic_add_fetch(&gnn_shared->cache_clock, 1, __ATOMIC_RELAXED),
					 __ATOMIC_RELAXED);
	*serial = e->serial;
	*handle = e->handle;
}

/* res from a ready entry's segment, mapped for the session; false if it is gone */
static bool
MapReady(uint64 serial, dsm_handle handle, GnnResult *res)
{
	dsm_segment *seg = CmapFind(serial);
	bool		fresh = false;

	if (seg == NULL)
	{
		seg = AttachForSession(handle);
		if (seg == NULL)
			return false;		/* evicted and unmapped everywhere meanwhile */
		CmapAdd(serial, seg);
		fresh = true;
	}
	ResultFromSegment(seg, res);
	res->fresh = fresh;
	res->serial = serial;
	return true;
}

/*
 * The result for key: from the cache (a hit), else computed by compute()
 * into a new segment (which the caller's rows x cols describe) and shared;
 * callers asking for a result another session is computing wait for it.
 * res stays valid until the transaction ends.  *hit says whether it was
 * found ready.
 */
/*
 * A training worker computing its own job's results (GnnCacheClaimOwn): its
 * claims are not misses of anyone's.  (Any background worker would be too
 * broad: pg_cron and other extensions run callers in them.)
 */
static bool claiming_own = false;

void
GnnCacheClaimOwn(bool on)
{
	claiming_own = on;
}

/*
 * fn(arg), if set, runs as GnnCacheGet is about to compute a result, its
 * claim made and its memory not yet: a training worker reports its job done
 * there (worker.c, ResultsClaimed), before a large segment is made.
 */
static void (*before_compute) (void *) = NULL;
static void *before_compute_arg = NULL;

void
GnnCacheBeforeCompute(void (*fn) (void *), void *arg)
{
	before_compute = fn;
	before_compute_arg = arg;
}

/*
 * Caller holds the lock exclusively, key has no entry: a slot and the
 * memory claimed for key, computed by this process (NULL: beyond
 * gnn.max_cache_memory, or no room).
 */
static GnnCacheEntry *
ClaimEntry(const GnnCacheKey *key, const char *model, int32 version, const char *graph, int64 rows, int32 cols,
		   Size bytes)
{
	GnnCacheEntry *e;

	if (bytes > (uint64) gnn_max_cache_memory_mb * 1024 * 1024 || !MakeRoom(bytes) || (e = ClaimSlot()) == NULL)
		return NULL;
	memset(e, 0, sizeof(*e));
	e->state = GNN_CACHE_COMPUTING;
	e->key = *key;
	strlcpy(e->model, model, sizeof(e->model));
	e->version = version;
	strlcpy(e->graph, graph, sizeof(e->graph));
	e->bytes = bytes;
	e->rows = rows;
	e->cols = cols;
	e->computing_pid = MyProcPid;
	/* a call that found it missing; a training worker claiming its job's results is none */
	e->misses = claiming_own ? 0 : 1;
	e->last_used = ++gnn_shared->cache_clock;
	e->serial = ++gnn_shared->cache_serial;
	gnn_shared->cache_bytes += bytes;
	return e;
}

/*
 * Claim key's result ahead of computing it: true when this process now
 * holds the claim, which its GnnCacheGet of key then computes (sessions
 * asking meanwhile wait for it, as for any result being computed); false
 * when key is cached or being computed already, or beyond the cache's
 * memory (GnnCacheGet decides then as always).  A training worker claims
 * every result of its job this way before it reports the job done, so
 * that the report waits for no segment being made (worker.c).  Claims
 * not computed go with GnnCacheReleaseClaims, or at exit.
 */
bool
GnnCacheClaim(const GnnCacheKey *key, const char *model, int32 version, const char *graph, int64 rows, int32 cols)
{
	CacheHeader h;
	Size		bytes = SegmentSize(rows, cols, key->kind == GNN_RESULT_EMBED, &h);
	bool		claimed = false;

	GnnCacheInitProcess();
	LWLockAcquire(gnn_shared->lock, LW_EXCLUSIVE);
	if (FindKey(key) == NULL)
		claimed = ClaimEntry(key, model, version, graph, rows, cols, bytes) != NULL;
	LWLockRelease(gnn_shared->lock);
	return claimed;
}

/*
 * Whether this process still holds its claim of key (GnnCacheClaim): one
 * taken away meanwhile (its model or graph dropped, gnn.cache_drop) is not
 * to be claimed again.
 */
bool
GnnCacheHolds(const GnnCacheKey *key)
{
	GnnCacheEntry *e;
	bool		held;

	LWLockAcquire(gnn_shared->lock, LW_SHARED);
	e = FindKey(key);
	held = OwnClaim(e);
	LWLockRelease(gnn_shared->lock);
	return held;
}

void
GnnCacheGet(const GnnCacheKey *key, const char *model, int32 version, const char *graph, int64 rows,
			int32 cols, GnnComputeFn compute, void *arg, GnnResult *res, bool *hit)
{
	GnnCacheEntry *e;
	uint64		serial = 0;
	dsm_handle	handle = DSM_HANDLE_INVALID;
	bool		claimed = false;
	bool		shared = true;
	bool		missed = false;
	dsm_segment *volatile seg = NULL;
	CacheHeader h;
	Size		bytes = SegmentSize(rows, cols, key->kind == GNN_RESULT_EMBED, &h);	/* to make room for */
	TimestampTz t0;

	GnnCacheInitProcess();
	*hit = false;
	/* a hit takes the lock shared: it never waits behind another hit */
	LWLockAcquire(gnn_shared->lock, LW_SHARED);
	e = FindKey(key);
	if (e && e->state == GNN_CACHE_READY)
		TakeHit(e, &serial, &handle);
	LWLockRelease(gnn_shared->lock);
	if (handle != DSM_HANDLE_INVALID && MapReady(serial, handle, res))
	{
		*hit = true;
		return;
	}
	handle = DSM_HANDLE_INVALID;
	ConditionVariablePrepareToSleep(&gnn_shared->cache_cv);
	for (;;)
	{
		LWLockAcquire(gnn_shared->lock, LW_EXCLUSIVE);
		e = FindKey(key);
		if (e && e->state == GNN_CACHE_READY)
		{
			TakeHit(e, &serial, &handle);
			LWLockRelease(gnn_shared->lock);
			break;
		}
		if (e == NULL)
		{
			/* ours to compute: claim a slot and the memory (or compute it for us alone) */
			if ((e = ClaimEntry(key, model, version, graph, rows, cols, bytes)) == NULL)
				shared = false;
			else
			{
				serial = e->serial;
				claimed = true;
			}
			LWLockRelease(gnn_shared->lock);
			break;
		}
		if (OwnClaim(e))
		{
			/* claimed ahead by this process (GnnCacheClaim): computed here, now */
			serial = e->serial;
			claimed = true;
			LWLockRelease(gnn_shared->lock);
			break;
		}
		/* another session computes it: wait for it (or for its failure) */
		if (!missed)
			e->misses++;
		missed = true;
		LWLockRelease(gnn_shared->lock);
		ConditionVariableTimedSleep(&gnn_shared->cache_cv, 100, PG_WAIT_EXTENSION);
		CHECK_FOR_INTERRUPTS();
	}
	ConditionVariableCancelSleep();

	if (handle != DSM_HANDLE_INVALID)
	{
		*hit = true;
		if (!MapReady(serial, handle, res))
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("could not map the cached result of model \"%s\"", model),
					 errhint("It was evicted as it was found; run the statement again.")));
		return;
	}

	/* compute: into a segment this session maps (kept once shared, see CmapSweep; else freed) */
	t0 = GetCurrentTimestamp();
	PG_TRY();
	{
		if (before_compute)
			before_compute(before_compute_arg);
		seg = GnnResultCreate(rows, cols, key->kind == GNN_RESULT_EMBED, res);
		res->computed = rows;
		/* the test hook: a computation held, holding no lock (a cancel ends it) */
		for (TimestampTz until = t0 + (TimestampTz) gnn_fault_compute_delay_ms * 1000; GetCurrentTimestamp() < until;)
		{
			(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, 50, PG_WAIT_EXTENSION);
			ResetLatch(MyLatch);
			CHECK_FOR_INTERRUPTS();
		}
		compute(arg, res);
		GnnResultFinish(res);
	}
	PG_CATCH();
	{
		if (seg)
			dsm_detach(seg);	/* unpinned: it goes */
		if (claimed)
		{
			LWLockAcquire(gnn_shared->lock, LW_EXCLUSIVE);
			e = FindKey(key);
			if (OwnClaim(e))
				EntryFree(e);
			LWLockRelease(gnn_shared->lock);
			ConditionVariableBroadcast(&gnn_shared->cache_cv);
		}
		PG_RE_THROW();
	}
	PG_END_TRY();

	if (claimed)
	{
		LWLockAcquire(gnn_shared->lock, LW_EXCLUSIVE);
		e = FindKey(key);
		if (OwnClaim(e))
		{
			dsm_pin_segment(seg);
			e->state = GNN_CACHE_READY;
			e->handle = dsm_segment_handle(seg);
			e->created = GetCurrentTimestamp();
			e->computing_pid = 0;
			e->seconds = (double) (e->created - t0) / 1e6;
			e->computed = res->computed;
			/* the previous version's result (the base, if one was used) is superseded */
			for (int i = 0; i < GNN_CACHE_SLOTS; i++)
			{
				GnnCacheEntry *o = &gnn_shared->cache[i];

				if (o != e && o->state == GNN_CACHE_READY && o->stale && SameButVersion(&o->key, key))
					EntryFree(o);
			}
		}
		LWLockRelease(gnn_shared->lock);
		ConditionVariableBroadcast(&gnn_shared->cache_cv);
	}
	else if (!shared)
		ereport(DEBUG1,
				(errmsg("the result of model \"%s\" (%zu bytes) is beyond gnn.max_cache_memory: computed for this transaction only",
						model, bytes)));
	CmapAdd(claimed ? serial : 0, seg);
	res->serial = claimed ? serial : 0;
}

/* The ready result for key, if cached (a hit); nothing is computed. */
bool
GnnCacheLookup(const GnnCacheKey *key, GnnResult *res)
{
	GnnCacheEntry *e;
	uint64		serial = 0;
	dsm_handle	handle = DSM_HANDLE_INVALID;

	LWLockAcquire(gnn_shared->lock, LW_SHARED);
	e = FindKey(key);
	if (e && e->state == GNN_CACHE_READY)
		TakeHit(e, &serial, &handle);
	LWLockRelease(gnn_shared->lock);
	return handle != DSM_HANDLE_INVALID && MapReady(serial, handle, res);
}

/*
 * Drop owner's entries of model name (a version, or all); count_only: just
 * count them.  Returns how many there were.
 */
static int
CacheDropNow(const char *model, int32 version, Oid owner, bool count_only)
{
	int			n = 0;
	bool		claims = false;

	LWLockAcquire(gnn_shared->lock, LW_EXCLUSIVE);
	for (int i = 0; i < GNN_CACHE_SLOTS; i++)
	{
		GnnCacheEntry *e = &gnn_shared->cache[i];

		if (e->state == GNN_CACHE_FREE || e->key.dbid != MyDatabaseId || e->key.owner != owner ||
			strcmp(e->model, model) != 0 || (version > 0 && e->version != version))
			continue;
		if (e->state == GNN_CACHE_READY)
		{
			if (!count_only)
				EntryFree(e);
			n++;
		}
		else if (!count_only)
		{
			/*
			 * being computed (a training worker's results after its job, a
			 * session's miss): its claim goes, so the computation ends
			 * unshared instead of publishing a result nobody can ask for
			 */
			EntryFree(e);
			claims = true;
		}
	}
	LWLockRelease(gnn_shared->lock);
	if (claims)
		ConditionVariableBroadcast(&gnn_shared->cache_cv);
	return n;
}

/*
 * Dropping a model's results follows the transaction, as dropping the
 * model does: they go when it commits (with those made meanwhile), and
 * stay when it rolls back.
 */
typedef struct CacheDrop
{
	char		model[NAMEDATALEN];
	int32		version;
	Oid			owner;
	SubTransactionId subid;
} CacheDrop;

static List *cache_drops = NIL;
static bool cache_drop_callbacks = false;

static void
CacheDropXact(XactEvent event, void *arg)
{
	ListCell   *lc;

	if (cache_drops == NIL)
		return;
	if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_PARALLEL_COMMIT)
		foreach(lc, cache_drops)
		{
			CacheDrop  *d = lfirst(lc);

			(void) CacheDropNow(d->model, d->version, d->owner, false);
		}
	if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_PARALLEL_COMMIT ||
		event == XACT_EVENT_ABORT || event == XACT_EVENT_PARALLEL_ABORT || event == XACT_EVENT_PREPARE)
	{
		list_free_deep(cache_drops);
		cache_drops = NIL;
	}
}

static void
CacheDropSubXact(SubXactEvent event, SubTransactionId mySubid, SubTransactionId parentSubid, void *arg)
{
	ListCell   *lc;

	foreach(lc, cache_drops)
	{
		CacheDrop  *d = lfirst(lc);

		if (d->subid != mySubid)
			continue;
		if (event == SUBXACT_EVENT_ABORT_SUB)
			cache_drops = foreach_delete_current(cache_drops, lc);
		else if (event == SUBXACT_EVENT_COMMIT_SUB)
			d->subid = parentSubid;
	}
}

/* The calling role's results of model (a version, or all) go at commit; returns how many there are now. */
int
GnnCacheDrop(const char *model, int32 version)
{
	MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);
	CacheDrop  *d = palloc0(sizeof(CacheDrop));

	if (!cache_drop_callbacks)
	{
		RegisterXactCallback(CacheDropXact, NULL);
		RegisterSubXactCallback(CacheDropSubXact, NULL);
		cache_drop_callbacks = true;
	}
	strlcpy(d->model, model, sizeof(d->model));
	d->version = version;
	d->owner = GetUserId();
	d->subid = GetCurrentSubTransactionId();
	cache_drops = lappend(cache_drops, d);
	MemoryContextSwitchTo(old);
	return CacheDropNow(model, version, GetUserId(), true);
}

/* A version staged by a transaction that did not commit: results computed on it go. */
void
GnnCachePurgeGeneration(const char *graph, Oid owner, uint64 generation)
{
	LWLockAcquire(gnn_shared->lock, LW_EXCLUSIVE);
	for (int i = 0; i < GNN_CACHE_SLOTS; i++)
	{
		GnnCacheEntry *e = &gnn_shared->cache[i];

		if (e->state == GNN_CACHE_READY && e->key.dbid == MyDatabaseId && e->key.owner == owner &&
			strcmp(e->graph, graph) == 0 && e->key.generation == generation)
			EntryFree(e);
	}
	LWLockRelease(gnn_shared->lock);
}

/*
 * A graph of the calling role was replaced or dropped: results computed on
 * it can never be asked for again by a new statement.  Those of
 * keep_generation (the version a refresh followed: its change history leads
 * to the live one) stay, stale, as bases for recomputing only the rows the
 * refresh could change (GnnCacheBase); their indexes go.  Results of older
 * versions go.
 */
void
GnnCachePurgeGraph(const char *graph, Oid owner, uint64 live_generation, uint64 keep_generation)
{
	bool		claims = false;

	LWLockAcquire(gnn_shared->lock, LW_EXCLUSIVE);
	for (int i = 0; i < GNN_CACHE_SLOTS; i++)
	{
		GnnCacheEntry *e = &gnn_shared->cache[i];

		if (e->state == GNN_CACHE_FREE || e->key.dbid != MyDatabaseId || e->key.owner != owner ||
			strcmp(e->graph, graph) != 0 || e->key.generation == live_generation)
			continue;
		if (e->state != GNN_CACHE_READY)
		{
			/*
			 * being computed (a training worker's results after its job):
			 * its claim goes, as CacheDropNow's does, so the computation
			 * ends unshared instead of publishing, after the graph is gone,
			 * a result nobody can ask for (sql/serve.sql then found a
			 * dropped graph's model in gnn.cache)
			 */
			EntryFree(e);
			claims = true;
		}
		else if (keep_generation != 0 && e->key.generation == keep_generation && !e->key.has_as_of)
		{
			e->stale = true;
			for (int m = 0; m < 2; m++)
				if (e->index[m].state == GNN_INDEX_READY)
				{
					dsm_unpin_segment(e->index[m].handle);
					gnn_shared->cache_bytes -= Min(e->index[m].bytes, gnn_shared->cache_bytes);
					memset(&e->index[m], 0, sizeof(e->index[m]));
					e->index[m].state = GNN_INDEX_FAILED;	/* not built again for a past version */
				}
		}
		else
			EntryFree(e);
	}
	LWLockRelease(gnn_shared->lock);
	if (claims)
		ConditionVariableBroadcast(&gnn_shared->cache_cv);
}


/*
 * A stale result of key's model, kind and layer on an earlier version of
 * its graph, mapped for the transaction, and that version: the base a miss
 * may recompute only the changed rows of.  False when there is none.
 */
bool
GnnCacheBase(const GnnCacheKey *key, GnnResult *res, uint64 *generation)
{
	uint64		serial = 0;
	dsm_handle	handle = DSM_HANDLE_INVALID;

	LWLockAcquire(gnn_shared->lock, LW_SHARED);
	for (int i = 0; i < GNN_CACHE_SLOTS; i++)
	{
		GnnCacheEntry *e = &gnn_shared->cache[i];

		if (e->state == GNN_CACHE_READY && e->stale && e->key.generation != key->generation &&
			SameButVersion(&e->key, key))
		{
			serial = e->serial;
			handle = e->handle;
			*generation = e->key.generation;
			break;
		}
	}
	LWLockRelease(gnn_shared->lock);
	return handle != DSM_HANDLE_INVALID && MapReady(serial, handle, res);
}

/* ------------------------------------------------------------------ approximate indexes
 * An embedding result gets an HNSW index (infer/hnsw.h) over the rows of
 * the node type gnn.similar ranks, built once by a background worker when
 * the first gnn.similar finds none (calls meanwhile scan exactly) and kept
 * in its own pinned segment beside the result: it belongs to that entry
 * (that model row, graph version and layer), is counted against
 * gnn.max_cache_memory with it, and goes when it goes.  A session maps it
 * as it maps results (CmapAdd, under the entry's serial | CMAP_INDEX).
 */

/* what the worker is told (bgw_extra) */
typedef struct IndexJob
{
	Oid			dbid;			/* the entry's database and owner: the worker runs as them */
	Oid			owner;
	uint64		serial;
	int32		metric;
	int64		first;
	int64		rows;
} IndexJob;

/* caller holds the lock: the ready entry of serial, or NULL */
static GnnCacheEntry *
FindSerial(uint64 serial)
{
	for (int i = 0; i < GNN_CACHE_SLOTS && serial != 0; i++)
	{
		GnnCacheEntry *e = &gnn_shared->cache[i];

		if (e->state == GNN_CACHE_READY && e->serial == serial)
			return e;
	}
	return NULL;
}

static void
IndexRequest(uint64 serial, int metric, int64 first, int64 rows)
{
	BackgroundWorker w;
	BackgroundWorkerHandle *h;
	GnnCacheEntry *e;
	IndexJob	job = {InvalidOid, InvalidOid, serial, metric, first, rows};
	bool		mine = false;

	LWLockAcquire(gnn_shared->lock, LW_EXCLUSIVE);
	e = FindSerial(serial);
	if (e && e->index[metric].state == GNN_INDEX_NONE)
	{
		e->index[metric].state = GNN_INDEX_BUILDING;
		e->index[metric].first = first;
		e->index[metric].rows = rows;
		e->index[metric].pid = 0;
		job.dbid = e->key.dbid;
		job.owner = e->key.owner;
		mine = true;
	}
	LWLockRelease(gnn_shared->lock);
	if (!mine)
		return;
	memset(&w, 0, sizeof(w));
	/* connected as the owner: listed in pg_stat_activity, and the owner may end it */
	w.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	w.bgw_start_time = BgWorkerStart_RecoveryFinished;
	w.bgw_restart_time = BGW_NEVER_RESTART;
	strlcpy(w.bgw_library_name, "gnn", BGW_MAXLEN);
	strlcpy(w.bgw_function_name, "GnnIndexWorkerMain", BGW_MAXLEN);
	snprintf(w.bgw_name, BGW_MAXLEN, "gnn index (result %llu, %s)", (unsigned long long) serial,
			 metric == GNN_HNSW_DOT ? "dot product" : "cosine");
	strlcpy(w.bgw_type, "gnn index", BGW_MAXLEN);
	memcpy(w.bgw_extra, &job, sizeof(job));
	w.bgw_notify_pid = 0;
	if (!RegisterDynamicBackgroundWorker(&w, &h))
	{
		/* no slot free: a later call asks again */
		LWLockAcquire(gnn_shared->lock, LW_EXCLUSIVE);
		e = FindSerial(serial);
		if (e && e->index[metric].state == GNN_INDEX_BUILDING && e->index[metric].pid == 0)
			e->index[metric].state = GNN_INDEX_NONE;
		LWLockRelease(gnn_shared->lock);
		ereport(DEBUG1, (errmsg("no background worker slot free to build an index; calls scan meanwhile")));
	}
}

/*
 * The approximate index of res by metric (GNN_HNSW_COSINE, GNN_HNSW_DOT)
 * over its rows [first, first + rows), mapped for the session, or NULL
 * when there is none ready (build: ask for one if none is being built).
 * Results of this transaction only have none.
 */
const void *
GnnCacheIndex(const GnnResult *res, int metric, int64 first, int64 rows, bool build, Size *bytes)
{
	GnnCacheEntry *e;
	int32		state = GNN_INDEX_FAILED;
	dsm_handle	handle = DSM_HANDLE_INVALID;
	dsm_segment *seg;
	const void *ix;
	uint64		key = res->serial | CMAP_INDEX | (metric == GNN_HNSW_DOT ? CMAP_DOT : 0);

	if (res->serial == 0 || rows < 2 || rows > GNN_HNSW_MAX_ROWS || (metric != GNN_HNSW_COSINE && metric != GNN_HNSW_DOT))
		return NULL;
	if ((seg = CmapFind(key)) == NULL)
	{
		LWLockAcquire(gnn_shared->lock, LW_SHARED);
		e = FindSerial(res->serial);
		if (e)
		{
			state = e->index[metric].state;
			if (state == GNN_INDEX_READY && (e->index[metric].first != first || e->index[metric].rows != rows))
				state = GNN_INDEX_FAILED;	/* built over other rows: cannot answer these */
			handle = e->index[metric].handle;
		}
		LWLockRelease(gnn_shared->lock);
		if (state == GNN_INDEX_NONE && build)
			IndexRequest(res->serial, metric, first, rows);
		if (state != GNN_INDEX_READY || (seg = AttachForSession(handle)) == NULL)
			return NULL;
		CmapAdd(key, seg);
	}
	ix = dsm_segment_address(seg);
	*bytes = dsm_segment_map_length(seg);
	return gnn_hnsw_valid(ix, *bytes, rows) ? ix : NULL;
}

/*
 * A call answered from entry serial took from start until now (by_index:
 * the metric of the index that answered it, or -1): kept for gnn.cache.
 */
void
GnnCacheNoteLatency(uint64 serial, TimestampTz start, int by_index)
{
	float		ms = (float) (GetCurrentTimestamp() - start) / 1000.0f;
	GnnCacheEntry *e;

	if (serial == 0)
		return;
	/* shared, like a hit: a slot of the ring each, taken atomically */
	LWLockAcquire(gnn_shared->lock, LW_SHARED);
	if ((e = FindSerial(serial)) != NULL)
	{
		uint64		at = __atomic_fetch_add(&e->lat_count, 1, __ATOMIC_RELAXED);

		e->lat_ms[at % GNN_CACHE_LATENCIES] = ms;	/* an aligned float: written whole */
		if (by_index == GNN_HNSW_COSINE || by_index == GNN_HNSW_DOT)
			__atomic_add_fetch(&e->index[by_index].calls, 1, __ATOMIC_RELAXED);
	}
	LWLockRelease(gnn_shared->lock);
}

/* the build stops when the entry goes or the worker is told to */
static uint64 index_serial;
static int	index_metric;
static volatile sig_atomic_t index_terminated = false;

/* SIGTERM: as die(), remembering it for IndexWorkerExit (die's flag is reset as it is acted on) */
static void
IndexDie(SIGNAL_ARGS)
{
	index_terminated = true;
	die(postgres_signal_arg);
}

static bool
IndexShouldStop(void *arg)
{
	/* from any build thread: reads only (no locks, no PostgreSQL calls) */
	volatile GnnCacheEntry *cache = gnn_shared->cache;
	bool		there = false;

	if (ProcDiePending)
		return true;
	for (int i = 0; i < GNN_CACHE_SLOTS && !there; i++)
		there = cache[i].serial == index_serial && cache[i].state == GNN_CACHE_READY;
	return !there;
}

/* caller holds the lock exclusively: the slot this worker builds, or NULL */
static GnnCacheIndexSlot *
MySlot(void)
{
	GnnCacheEntry *e = FindSerial(index_serial);

	if (e && e->index[index_metric].state == GNN_INDEX_BUILDING && e->index[index_metric].pid == MyProcPid)
		return &e->index[index_metric];
	return NULL;
}

/* the worker ends: an index it was building is not */
static void
IndexWorkerExit(int code, Datum arg)
{
	GnnCacheIndexSlot *x;

	LWLockAcquire(gnn_shared->lock, LW_EXCLUSIVE);
	if ((x = MySlot()) != NULL)
	{
		/* terminated (a shutdown, pg_terminate_backend): a later call asks again; an error: no more tries */
		x->state = index_terminated ? GNN_INDEX_NONE : GNN_INDEX_FAILED;
		x->pid = 0;
	}
	LWLockRelease(gnn_shared->lock);
}

static void
IndexFail(const char *why)
{
	GnnCacheIndexSlot *x;

	LWLockAcquire(gnn_shared->lock, LW_EXCLUSIVE);
	if ((x = MySlot()) != NULL)
	{
		x->state = GNN_INDEX_FAILED;
		x->pid = 0;
	}
	LWLockRelease(gnn_shared->lock);
	ereport(LOG, (errmsg("gnn index: no index for result %llu: %s", (unsigned long long) index_serial, why)));
}

void
GnnIndexWorkerMain(Datum arg)
{
	IndexJob	job;
	GnnCacheEntry *e;
	GnnCacheIndexSlot *x;
	dsm_handle	handle = DSM_HANDLE_INVALID;
	dsm_segment *rseg,
			   *iseg;
	GnnResult	res;
	gnn_hnsw_params p;
	gnn_error	err;
	gnn_status	st;
	size_t		bytes;
	TimestampTz t0 = GetCurrentTimestamp();
	bool		published = false;

	pqsignal(SIGTERM, IndexDie);
	BackgroundWorkerUnblockSignals();
	GnnJobPriority();
	memcpy(&job, MyBgworkerEntry->bgw_extra, sizeof(job));
	index_serial = job.serial;
	index_metric = job.metric == GNN_HNSW_DOT ? GNN_HNSW_DOT : GNN_HNSW_COSINE;
	before_shmem_exit(IndexWorkerExit, (Datum) 0);
	BackgroundWorkerInitializeConnectionByOid(job.dbid, job.owner, 0);
	CurrentResourceOwner = ResourceOwnerCreate(NULL, "gnn index");
	LWLockAcquire(gnn_shared->lock, LW_EXCLUSIVE);
	e = FindSerial(job.serial);
	if (e && e->index[index_metric].state == GNN_INDEX_BUILDING && e->index[index_metric].pid == 0)
	{
		e->index[index_metric].pid = MyProcPid;
		handle = e->handle;
	}
	LWLockRelease(gnn_shared->lock);
	if (handle == DSM_HANDLE_INVALID || (rseg = GnnDsmAttach(handle)) == NULL)
		proc_exit(0);			/* gone meanwhile */
	ResultFromSegment(rseg, &res);
	if (job.first < 0 || job.rows < 2 || job.first + job.rows > res.rows)
	{
		IndexFail("rows out of range");
		proc_exit(0);
	}
	GnnCoreThreadsInit();
	memset(&p, 0, sizeof(p));
	p.metric = index_metric;
	p.seed = job.serial;
	p.nthreads = gnn_threads;
	p.should_stop = IndexShouldStop;
	if (gnn_hnsw_size(job.rows, &p, &bytes, &err) != GNN_OK)
	{
		IndexFail(err.msg);
		proc_exit(0);
	}
	iseg = GnnDsmCreate(bytes, DSM_CREATE_NULL_IF_MAXSEGMENTS);
	if (iseg == NULL)
	{
		IndexFail("no shared memory segment free");
		proc_exit(0);
	}
	pgstat_report_activity(STATE_RUNNING, "building an index");
	/* the test hook: a pause to be caught in (a termination ends it) */
	for (TimestampTz until = t0 + (TimestampTz) gnn_fault_index_delay_ms * 1000;
		 GetCurrentTimestamp() < until && !IndexShouldStop(NULL);)
	{
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, 50, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
	st = gnn_hnsw_build(res.out + job.first * res.cols, res.norms + job.first, job.rows, res.cols, &p,
						dsm_segment_address(iseg), bytes, &err);
	if (st == GNN_ERR_CANCELLED)
	{
		CHECK_FOR_INTERRUPTS();
		proc_exit(1);			/* the entry went: nothing to keep */
	}
	if (st != GNN_OK)
	{
		IndexFail(err.msg);
		proc_exit(0);
	}
	LWLockAcquire(gnn_shared->lock, LW_EXCLUSIVE);
	e = FindSerial(job.serial);
	if ((x = MySlot()) != NULL && MakeRoomBut(bytes, e) && (x = MySlot()) != NULL)
	{
		dsm_pin_segment(iseg);
		x->handle = dsm_segment_handle(iseg);
		x->bytes = bytes;
		x->seconds = (double) (GetCurrentTimestamp() - t0) / 1e6;
		x->state = GNN_INDEX_READY;
		x->pid = 0;
		gnn_shared->cache_bytes += bytes;
		published = true;
	}
	LWLockRelease(gnn_shared->lock);
	if (!published)
		IndexFail("the entry went, or gnn.max_cache_memory cannot hold the index beside it");
	proc_exit(0);
}

static int
CmpFloat(const void *a, const void *b)
{
	float		x = *(const float *) a,
				y = *(const float *) b;

	return x < y ? -1 : x > y;
}

/* gnn._cache_entries(): the caller's entries (every role's for a superuser) */
Datum
gnn_cache_entries(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	GnnCacheEntry *copy = palloc(sizeof(GnnCacheEntry) * GNN_CACHE_SLOTS);
	int			n = 0;
	bool		super = superuser();

	GnnRequirePreload();
	InitMaterializedSRF(fcinfo, 0);
	LWLockAcquire(gnn_shared->lock, LW_SHARED);
	for (int i = 0; i < GNN_CACHE_SLOTS; i++)
	{
		GnnCacheEntry *e = &gnn_shared->cache[i];

		if (e->state != GNN_CACHE_FREE && e->key.dbid == MyDatabaseId && (super || e->key.owner == GetUserId()))
			copy[n++] = *e;
	}
	LWLockRelease(gnn_shared->lock);
	for (int i = 0; i < n; i++)
	{
		GnnCacheEntry *e = &copy[i];
		Datum		v[24];
		bool		nl[24];
		int			nlat = (int) Min(e->lat_count, GNN_CACHE_LATENCIES);
		float		lat[GNN_CACHE_LATENCIES];
		double		sum = 0;
		static const char *const index_states[] = {"none", "building", "ready", "failed"};

		memset(nl, 0, sizeof(nl));
		v[0] = CStringGetTextDatum(e->model);
		v[1] = Int32GetDatum(e->version);
		v[2] = ObjectIdGetDatum(e->key.owner);
		v[3] = CStringGetTextDatum(e->graph);
		v[4] = Int64GetDatum((int64) e->key.generation);
		v[5] = CStringGetTextDatum(e->key.kind == GNN_RESULT_PROBS ? "probabilities" : "embedding");
		v[6] = Int32GetDatum(e->key.layer);
		nl[6] = e->key.kind == GNN_RESULT_PROBS;
		v[7] = Int64GetDatum(e->rows);
		v[8] = Int32GetDatum(e->cols);
		v[9] = Int64GetDatum((int64) e->bytes);
		v[10] = Int64GetDatum(e->hits);
		v[11] = CStringGetTextDatum(e->state != GNN_CACHE_READY ? "computing" : e->stale ? "stale" : "ready");
		v[12] = TimestampTzGetDatum(e->created);
		nl[12] = e->created == 0;
		v[13] = Float8GetDatum(e->seconds);
		nl[13] = e->state != GNN_CACHE_READY;
		v[14] = Int64GetDatum(e->misses);
		/* the index: embeddings only */
		v[15] = CStringGetTextDatum(index_states[e->index[GNN_HNSW_COSINE].state & 3]);
		nl[15] = e->key.kind != GNN_RESULT_EMBED;
		v[16] = Int64GetDatum((int64) (e->index[0].bytes + e->index[1].bytes));
		nl[16] = e->index[0].state != GNN_INDEX_READY && e->index[1].state != GNN_INDEX_READY;
		v[17] = Float8GetDatum(e->index[0].seconds + e->index[1].seconds);
		nl[17] = nl[16];
		/* the last calls' latencies */
		memcpy(lat, e->lat_ms, sizeof(float) * nlat);
		for (int j = 0; j < nlat; j++)
			sum += lat[j];
		qsort(lat, nlat, sizeof(float), CmpFloat);
		v[18] = Int64GetDatum((int64) e->lat_count);
		v[19] = Float8GetDatum(nlat ? sum / nlat : 0);
		nl[19] = nlat == 0;
		/* nearest rank: the smallest latency at or above 99% of them */
		v[20] = Float8GetDatum(nlat ? lat[(int) ceil(0.99 * nlat) - 1] : 0);
		nl[20] = nlat == 0;
		v[21] = Int64GetDatum(e->index[0].calls + e->index[1].calls);
		nl[21] = e->key.kind != GNN_RESULT_EMBED;
		v[22] = CStringGetTextDatum(index_states[e->index[GNN_HNSW_DOT].state & 3]);
		nl[22] = e->key.kind != GNN_RESULT_EMBED;
		v[23] = Int64GetDatum(e->computed);
		nl[23] = e->state != GNN_CACHE_READY;
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, v, nl);
	}
	return (Datum) 0;
}
