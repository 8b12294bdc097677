/*
 * registry.c: named graphs in shared memory.
 *
 * Each graph is one DSM segment holding a gnn_graph region (offsets, no
 * pointers), pinned so it outlives the backend that loaded it.  The registry
 * (in the fixed shared struct) maps (database, name) to the segment's handle.
 * Readers attach under the shared lock, so a concurrent drop or replace cannot
 * destroy the segment between lookup and attach; once attached, a reader
 * keeps its mapping until it releases it, and the segment is freed when the
 * last mapping goes (DSM reference counting), so a replaced graph stays
 * whole for readers that started before the swap.
 *
 * One client statement sees one version of a graph: the first use of a graph
 * in a statement keeps its mapping (owned by the top transaction) until the
 * statement or the transaction ends, and later uses in the same statement get
 * that same version, even if another session replaced the graph meanwhile.
 * Without this, a query calling gnn.degree() or gnn.embedding() once per row
 * could mix rows of two versions, and STABLE functions would not be stable.
 */
#include "common/gnn_pg.h"

#include "access/xact.h"
#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/proc.h"
#include "utils/acl.h"
#include "utils/resowner.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "common/hashfn.h"
#include "storage/lock.h"

/* ------------------------------------------------------------------ statement snapshot */
#define SNAP_MAX 8
typedef struct SnapGraph
{
	dsm_segment *seg;
	dsm_segment *dseg;			/* its delta's, NULL when none */
	GnnGraphEntry entry;
} SnapGraph;

static SnapGraph snap[SNAP_MAX];
static int	nsnap = 0;
static LocalTransactionId snap_lxid = InvalidLocalTransactionId;
static TimestampTz snap_stmt = 0;
static bool snap_callback = false;

static void
SnapForget(int i, bool detach)
{
	if (detach)
	{
		dsm_detach(snap[i].seg);
		if (snap[i].dseg)
			dsm_detach(snap[i].dseg);
	}
	snap[i] = snap[--nsnap];
}

static void
SnapReset(void)
{
	while (nsnap > 0)
		SnapForget(nsnap - 1, true);
	snap_lxid = InvalidLocalTransactionId;
}

/*
 * Merged copies of graphs with a delta (GnnGraphFlattenRef) live in malloc'd
 * memory, each counted against gnn.max_graph_memory while it lives; those a
 * statement made go when its transaction ends, also when an error skipped
 * GnnGraphRelease (a kept mapping's copy is its holder's: freed by its
 * release, and its bytes given back when the process exits at the latest).
 */
#define FLAT_MAX 16
typedef struct FlatCopy
{
	void	   *mem;
	uint64		reserved;
	bool		xact;			/* goes with the transaction */
} FlatCopy;
static FlatCopy flats[FLAT_MAX];
static int	nflat = 0;
static bool flat_exit_callback = false;

/* a copy goes: freed (do_free) with its reservation, or kept by its holder beyond the transaction */
static void
FlatForget(void *mem, bool do_free)
{
	for (int i = 0; i < nflat; i++)
		if (flats[i].mem == mem)
		{
			if (!do_free)
			{
				flats[i].xact = false;
				return;
			}
			GnnGraphUnreserve(flats[i].reserved);
			flats[i] = flats[--nflat];
			break;
		}
	if (do_free)
		free(mem);
}

static void
FlatContext(void *arg)
{
	errcontext("merging the delta of graph \"%s\" into a private copy for work on the whole graph "
			   "(gnn.refresh_graph('%s', merge => true) merges it for good)", (const char *) arg, (const char *) arg);
}

static void
FlatsAtExit(int code, Datum arg)
{
	if (gnn_shared == NULL)
		return;
	while (nflat > 0)
	{
		nflat--;
		GnnGraphUnreserve(flats[nflat].reserved);
	}
}

static void
SnapXactCallback(XactEvent event, void *arg)
{
	/* before the resource owner would complain about the mappings */
	if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_ABORT || event == XACT_EVENT_PREPARE ||
		event == XACT_EVENT_PARALLEL_COMMIT || event == XACT_EVENT_PARALLEL_ABORT)
	{
		SnapReset();
		for (int i = nflat - 1; i >= 0; i--)
			if (flats[i].xact)
				FlatForget(flats[i].mem, true);
	}
}

/* what a transaction's end must let go of: the statement's mappings, merged copies */
static void
SnapCallbackOnce(void)
{
	if (!snap_callback)
	{
		RegisterXactCallback(SnapXactCallback, NULL);
		snap_callback = true;
	}
}

/* keep seg (and its delta's dseg) for the statement: the version entry names */
static void
SnapPush(dsm_segment *seg, dsm_segment *dseg, const GnnGraphEntry *entry)
{
	SnapCallbackOnce();
	snap[nsnap].seg = seg;
	snap[nsnap].dseg = dseg;
	snap[nsnap].entry = *entry;
	nsnap++;
}

/* the snapshot entry of graph name for this statement, or -1 */
static int
SnapFind(const char *name)
{
	if (snap_lxid != MyProc->lxid || snap_stmt != GetCurrentStatementStartTimestamp())
	{
		SnapReset();
		snap_lxid = MyProc->lxid;
		snap_stmt = GetCurrentStatementStartTimestamp();
	}
	for (int i = 0; i < nsnap; i++)
		if (snap[i].entry.dbid == MyDatabaseId && snap[i].entry.owner == GetUserId() &&
			strcmp(snap[i].entry.name, name) == 0)
			return i;
	return -1;
}

/* this backend replaced or dropped name: its next use sees the new state */
static void
SnapInvalidate(const char *name)
{
	for (int i = nsnap - 1; i >= 0; i--)
		if (snap[i].entry.dbid == MyDatabaseId && snap[i].entry.owner == GetUserId() &&
			strcmp(snap[i].entry.name, name) == 0)
			SnapForget(i, true);
}

/* The caller's next use of name takes the version registered now. */
void
GnnGraphForgetStatement(const char *name)
{
	SnapInvalidate(name);
}

/* A generation number no graph version has had (a refresh's, ahead of publishing). */
uint64
GnnGraphNewGeneration(void)
{
	uint64		g;

	LWLockAcquire(gnn_shared->lock, LW_EXCLUSIVE);
	g = gnn_shared->next_generation++;
	LWLockRelease(gnn_shared->lock);
	return g;
}

/* ------------------------------------------------------------------ long-term holders
 * A training worker maps its graph for the whole job.  The graph's entry
 * counts such holders; dropping or replacing a held graph moves its memory to
 * a retired slot that stays counted against gnn.max_graph_memory (and in
 * gnn.memory_used) until the last holder releases it.
 */
static dsm_handle kept_handle = DSM_HANDLE_INVALID;
static bool kept_callback = false;

/* caller holds the lock exclusively */
static void
HolderRelease(dsm_handle h)
{
	for (int i = 0; i < gnn_shared->max_graphs; i++)
	{
		GnnGraphEntry *e = &gnn_shared->graphs[i];

		if (e->in_use && e->handle == h && e->holders > 0)
		{
			e->holders--;
			return;
		}
	}
	for (int i = 0; i < GNN_JOB_SLOTS; i++)
	{
		GnnRetiredGraph *r = &gnn_shared->retired[i];

		if (r->holders > 0 && r->handle == h)
		{
			if (--r->holders == 0)
			{
				gnn_shared->graph_bytes -= Min(r->bytes, gnn_shared->graph_bytes);
				r->handle = DSM_HANDLE_INVALID;
				r->bytes = 0;
			}
			return;
		}
	}
}

/*
 * Caller holds the lock exclusively: a pinned segment an entry owns (its
 * delta, its partition) leaves the registry and the accounting; mappings
 * keep it alive until they go.
 */
static void
SegmentRetire(dsm_handle *h, uint64 *bytes)
{
	if (*h == DSM_HANDLE_INVALID)
		return;
	dsm_unpin_segment(*h);
	gnn_shared->graph_bytes -= Min(*bytes, gnn_shared->graph_bytes);
	*h = DSM_HANDLE_INVALID;
	*bytes = 0;
}

static void
DeltaRetire(GnnGraphEntry *e)
{
	SegmentRetire(&e->delta_handle, &e->delta_bytes);
}

/* caller holds the lock exclusively: e's segment leaves the registry */
static void
EntryRetire(GnnGraphEntry *e)
{
	GnnPartitionFree(e);
	DeltaRetire(e);
	if (e->handle == DSM_HANDLE_INVALID)
	{
		SegmentRetire(&e->cache_handle, &e->cache_bytes);
		return;					/* stored, never mapped since the restart: nothing in memory */
	}
	if (e->holders > 0)
	{
		for (int i = 0; i < GNN_JOB_SLOTS; i++)
		{
			GnnRetiredGraph *r = &gnn_shared->retired[i];

			if (r->holders == 0)
			{
				/* the job reads its features through the version's cache too: both stay counted */
				r->handle = e->handle;
				r->bytes = e->bytes + e->cache_bytes;
				r->holders = e->holders;
				dsm_unpin_segment(e->handle);
				if (e->cache_handle != DSM_HANDLE_INVALID)
					dsm_unpin_segment(e->cache_handle);
				e->cache_handle = DSM_HANDLE_INVALID;
				e->cache_bytes = 0;
				return;
			}
		}
	}
	/* no holder (or, impossibly, no free retired slot): its memory is free now */
	SegmentRetire(&e->cache_handle, &e->cache_bytes);
	gnn_shared->graph_bytes -= Min(e->bytes, gnn_shared->graph_bytes);
	dsm_unpin_segment(e->handle);
}

static void
KeptAtExit(int code, Datum arg)
{
	if (kept_handle != DSM_HANDLE_INVALID && gnn_shared != NULL)
	{
		LWLockAcquire(gnn_shared->lock, LW_EXCLUSIVE);
		HolderRelease(kept_handle);
		LWLockRelease(gnn_shared->lock);
	}
	kept_handle = DSM_HANDLE_INVALID;
}

/* The caller keeps ref's mapping beyond the statement (a training worker; one at a time). */
void
GnnGraphKeepMapping(GnnGraphRef *ref)
{
	for (int i = 0; i < nsnap; i++)
		if (snap[i].seg == ref->seg)
		{
			SnapForget(i, false);
			break;
		}
	dsm_pin_mapping(ref->seg);
	if (ref->dseg)
		dsm_pin_mapping(ref->dseg);
	if (ref->flat)
		FlatForget(ref->flat, false);	/* the holder's now, freed by its release */
	if (ref->entry.feat_disk)
		GnnFeaturesKeep(ref->entry.generation);	/* its features file stays open across transactions */
	if (kept_handle != DSM_HANDLE_INVALID)
		return;					/* already holding one: not counted twice */
	if (!kept_callback)
	{
		before_shmem_exit(KeptAtExit, (Datum) 0);
		kept_callback = true;
	}
	LWLockAcquire(gnn_shared->lock, LW_EXCLUSIVE);
	for (int i = 0; i < gnn_shared->max_graphs; i++)
	{
		GnnGraphEntry *e = &gnn_shared->graphs[i];

		if (e->in_use && e->handle == ref->entry.handle)
		{
			e->holders++;
			kept_handle = e->handle;
			ref->kept = true;
			break;
		}
	}
	LWLockRelease(gnn_shared->lock);
}

bool
GnnIsOwnerOrSuper(Oid owner)
{
	return superuser() || has_privs_of_role(GetUserId(), owner);
}

void
GnnCheckGraphName(const char *name)
{
	if (name == NULL || name[0] == '\0')
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("graph name must not be empty")));
	if (strlen(name) >= GNN_GRAPH_NAME_LEN)
		ereport(ERROR,
				(errcode(ERRCODE_NAME_TOO_LONG),
				 errmsg("graph name \"%s\" is too long", name),
				 errdetail("Graph names are at most %d bytes.", GNN_GRAPH_NAME_LEN - 1)));
}

/*
 * caller holds the lock.  Graph names are per role: a name means the current
 * role's graph of that name (SET ROLE changes whose), so no role can see,
 * take or squat another's names.
 */
GnnGraphEntry *
GnnGraphEntryOf(const char *name, Oid me)
{
	for (int i = 0; i < gnn_shared->max_graphs; i++)
	{
		GnnGraphEntry *e = &gnn_shared->graphs[i];

		if (e->in_use && e->dbid == MyDatabaseId && e->owner == me && strcmp(e->name, name) == 0)
			return e;
	}
	return NULL;
}

static GnnGraphEntry *
FindEntry(const char *name)
{
	return GnnGraphEntryOf(name, GetUserId());
}

static void
ReportNoGraph(const char *name)
{
	ereport(ERROR,
			(errcode(ERRCODE_UNDEFINED_OBJECT),
			 errmsg("graph \"%s\" does not exist", name),
			 errhint("Load it with gnn.load_graph(); gnn.graphs lists the loaded graphs.")));
}

/* Whether the caller has a graph of this name. */
bool
GnnGraphExists(const char *name)
{
	bool		found;

	GnnRequirePreload();
	switch (GnnPendingLookup(name, GetUserId(), NULL, NULL, NULL))
	{
		case GNN_PENDING_VERSION:
			return true;
		case GNN_PENDING_DROPPED:
			return false;
		default:
			break;
	}
	LWLockAcquire(gnn_shared->lock, LW_SHARED);
	found = FindEntry(name) != NULL;
	LWLockRelease(gnn_shared->lock);
	return found;
}

/* The current version of the caller's graph name, or 0 when there is none. */
uint64
GnnGraphGeneration(const char *name)
{
	GnnGraphEntry *e;
	uint64		gen = 0;

	LWLockAcquire(gnn_shared->lock, LW_SHARED);
	e = FindEntry(name);
	if (e)
		gen = e->generation;
	LWLockRelease(gnn_shared->lock);
	return gen;
}

/* ref->g from its mappings: the base region with its delta over it */
static gnn_status
AttachRef(GnnGraphRef *ref, gnn_error *err)
{
	gnn_status	st = gnn_graph_attach_delta(dsm_segment_address(ref->seg), dsm_segment_map_length(ref->seg),
											ref->dseg ? dsm_segment_address(ref->dseg) : NULL,
											ref->dseg ? dsm_segment_map_length(ref->dseg) : 0, &ref->g, err);

	/* features on disk: read through this process's cache of the version's file */
	if (st == GNN_OK && ref->entry.feat_disk)
		GnnFeaturesAttach(&ref->entry, &ref->g);
	return st;
}

/* map e's base and delta (caller holds the lock); ref->seg NULL when either is gone */
static void
MapEntry(const GnnGraphEntry *e, GnnGraphRef *ref)
{
	ref->seg = GnnDsmAttach(e->handle);
	if (ref->seg && e->delta_handle != DSM_HANDLE_INVALID &&
		(ref->dseg = GnnDsmAttach(e->delta_handle)) == NULL)
	{
		dsm_detach(ref->seg);
		ref->seg = NULL;
	}
}

static void
AcquireImpl(const char *name, GnnGraphRef *ref)
{
	GnnGraphEntry *e;
	gnn_error	err;
	int			i;
	GnnPendingState ps;

	GnnRequirePreload();
	GnnCheckGraphName(name);
	memset(ref, 0, sizeof(*ref));
	/* a graph this transaction loaded, refreshed or dropped is seen as it will be at commit */
	if (IsTransactionState() &&
		(ps = GnnPendingLookup(name, GetUserId(), &ref->entry, &ref->seg, &ref->dseg)) != GNN_PENDING_NONE)
	{
		if (ps == GNN_PENDING_DROPPED)
			ReportNoGraph(name);
		/*
		 * a delta over the registered base: the base as this backend maps it
		 * for this statement (SnapFind first drops an earlier statement's
		 * mappings, which could otherwise go from under this one), or mapped
		 * for the statement now
		 */
		if (ref->seg == NULL)
			(void) SnapFind(name);
		if (ref->seg == NULL && (ref->seg = dsm_find_mapping(ref->entry.handle)) == NULL)
		{
			ResourceOwner save = CurrentResourceOwner;

			if (nsnap >= SNAP_MAX)
				ereport(ERROR,
						(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
						 errmsg("too many graphs in one statement (at most %d)", SNAP_MAX)));
			CurrentResourceOwner = TopTransactionResourceOwner;
			ref->seg = GnnDsmAttach(ref->entry.handle);
			CurrentResourceOwner = save;
			if (ref->seg == NULL)
				ereport(ERROR,
						(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
						 errmsg("could not map graph \"%s\": it was dropped or replaced since this transaction refreshed it", name)));
			SnapPush(ref->seg, NULL, &ref->entry);
		}
		if (AttachRef(ref, &err) != GNN_OK)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("graph \"%s\" is corrupt: %s", name, err.msg)));
		ref->borrowed = true;
		return;
	}
	if (IsTransactionState() && (i = SnapFind(name)) >= 0)
	{
		/* the version this statement already uses (the caller's: SnapFind matches the owner) */
		ref->entry = snap[i].entry;
		ref->seg = snap[i].seg;
		ref->dseg = snap[i].dseg;
		if (AttachRef(ref, &err) != GNN_OK)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("graph \"%s\" is corrupt in shared memory: %s", name, err.msg)));
		return;
	}
	LWLockAcquire(gnn_shared->lock, LW_SHARED);
	e = FindEntry(name);
	if (e == NULL)
	{
		LWLockRelease(gnn_shared->lock);
		ReportNoGraph(name);
	}
	if (e->handle == DSM_HANDLE_INVALID)
	{
		/* back from the graph store after a restart: mapped now, then looked up again */
		LWLockRelease(gnn_shared->lock);
		(void) GnnStoreMap(name, GetUserId());
		LWLockAcquire(gnn_shared->lock, LW_SHARED);
		e = FindEntry(name);
		if (e == NULL || e->handle == DSM_HANDLE_INVALID)
		{
			LWLockRelease(gnn_shared->lock);
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("graph \"%s\" was dropped or replaced while it was being read from the graph store", name),
					 errhint("Run the statement again.")));
		}
	}
	ref->entry = *e;			/* the caller's own graph: FindEntry matches the owner */
	/* the mapping belongs to the transaction's resource owner: an error detaches it */
	if (IsTransactionState() && nsnap < SNAP_MAX)
	{
		ResourceOwner save = CurrentResourceOwner;

		/* kept for the statement: a subtransaction's abort must not unmap it */
		CurrentResourceOwner = TopTransactionResourceOwner;
		MapEntry(e, ref);
		CurrentResourceOwner = save;
		if (ref->seg)
			SnapPush(ref->seg, ref->dseg, e);
	}
	else
		MapEntry(e, ref);
	LWLockRelease(gnn_shared->lock);
	if (ref->seg == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("could not map graph \"%s\"", name)));
	if (AttachRef(ref, &err) != GNN_OK)
	{
		for (i = 0; i < nsnap; i++)
			if (snap[i].seg == ref->seg)
			{
				SnapForget(i, false);
				break;
			}
		dsm_detach(ref->seg);
		if (ref->dseg)
			dsm_detach(ref->dseg);
		ref->seg = ref->dseg = NULL;
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("graph \"%s\" is corrupt in shared memory: %s", name, err.msg)));
	}
}

/*
 * The graph as one flat region: its base and delta merged into private
 * memory when it has a delta (whole-graph work: training, full passes,
 * partitioning, digests), freed by GnnGraphRelease.
 */
void
GnnGraphFlattenRef(GnnGraphRef *ref)
{
	gnn_graph	flat;
	gnn_error	err;
	void	   *mem = NULL;
	uint64		reserved,
				size;

	if (!ref->g.has_delta)
		return;
	if (nflat >= FLAT_MAX)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("too many merged graph copies at once (at most %d)", FLAT_MAX)));
	/* the copy holds at most the base and the delta's rows: counted before it is made */
	{
		ErrorContextCallback cb;

		cb.callback = FlatContext;
		cb.arg = ref->entry.name;
		cb.previous = error_context_stack;
		error_context_stack = &cb;
		reserved = GnnGraphReserve(dsm_segment_map_length(ref->seg) +
								   (ref->dseg ? dsm_segment_map_length(ref->dseg) : 0), ref->entry.name);
		error_context_stack = cb.previous;
	}
	GnnCoreThreadsInit();
	if (gnn_graph_flatten(&ref->g, &flat, &mem, &err) != GNN_OK)
	{
		GnnGraphUnreserve(reserved);
		ereport(ERROR,
				(errcode(err.status == GNN_ERR_NOMEM ? ERRCODE_OUT_OF_MEMORY : ERRCODE_INTERNAL_ERROR),
				 errmsg("graph \"%s\": could not merge its delta: %s", ref->entry.name, err.msg)));
	}
	size = ((const gnn_graph_header *) mem)->total_bytes;
	if (size < reserved)
	{
		GnnGraphUnreserve(reserved - size);
		reserved = size;
	}
	if (ref->flat)
		FlatForget(ref->flat, true);
	ref->flat = mem;
	ref->g = flat;
	if (!flat_exit_callback)
	{
		before_shmem_exit(FlatsAtExit, (Datum) 0);
		flat_exit_callback = true;
	}
	/* freed with the transaction if an error skips the release (outside one: by the release) */
	if (IsTransactionState())
		SnapCallbackOnce();
	flats[nflat].mem = mem;
	flats[nflat].reserved = reserved;
	flats[nflat].xact = IsTransactionState();
	nflat++;
}

/* The graph version this statement sees, flat (see GnnGraphFlattenRef). */
void
GnnGraphAcquire(const char *name, GnnGraphRef *ref)
{
	AcquireImpl(name, ref);
	PG_TRY();
	{
		GnnGraphFlattenRef(ref);
	}
	PG_CATCH();
	{
		GnnGraphRelease(ref);
		PG_RE_THROW();
	}
	PG_END_TRY();
}

/*
 * The graph version this statement sees, with its delta read in place: for
 * callers that read it through gnn_graph_out_row / in_row / feat_row only.
 */
void
GnnGraphAcquireView(const char *name, GnnGraphRef *ref)
{
	AcquireImpl(name, ref);
}

void
GnnGraphRelease(GnnGraphRef *ref)
{
	bool		kept = false;

	if (ref->kept && kept_handle == ref->entry.handle)
	{
		LWLockAcquire(gnn_shared->lock, LW_EXCLUSIVE);
		HolderRelease(kept_handle);
		LWLockRelease(gnn_shared->lock);
		kept_handle = DSM_HANDLE_INVALID;
	}
	ref->kept = false;
	if (ref->flat)
		FlatForget(ref->flat, true);
	ref->flat = NULL;
	if (ref->borrowed)
	{
		ref->seg = ref->dseg = NULL;
		return;
	}

	for (int i = 0; i < nsnap && ref->seg; i++)
		kept |= snap[i].seg == ref->seg;
	/* a mapping kept for the statement goes at its end */
	if (ref->seg && !kept)
	{
		dsm_detach(ref->seg);
		if (ref->dseg)
			dsm_detach(ref->dseg);
	}
	ref->seg = ref->dseg = NULL;
}

/*
 * This process's reservations that no registry entry owns yet.  A backend
 * that exits (a FATAL: pg_terminate_backend) between reserving and handing
 * a reservation to an entry skips the error handlers that would give it
 * back; the exit callback gives back what is left.  Unreserving gives back
 * at most what is pending, so a handler that runs after it (a transaction
 * aborted at exit) cannot give the same bytes back twice.
 */
static uint64 reserved_pending = 0;
static bool reserved_callback = false;

static void
ReservedAtExit(int code, Datum arg)
{
	if (reserved_pending > 0 && gnn_shared != NULL)
	{
		LWLockAcquire(gnn_shared->lock, LW_EXCLUSIVE);
		gnn_shared->graph_bytes -= Min(reserved_pending, gnn_shared->graph_bytes);
		LWLockRelease(gnn_shared->lock);
	}
	reserved_pending = 0;
}

/* bytes of this process's reservations now belong to an entry (the caller holds the lock) */
static void
ReservationOwned(uint64 bytes)
{
	reserved_pending -= Min(bytes, reserved_pending);
}

void
GnnGraphReservationOwned(uint64 bytes)
{
	ReservationOwned(bytes);
}

/*
 * Reserve bytes of graph memory against gnn.max_graph_memory before
 * allocating; fails saying how much is needed.  Returns the reservation.
 */
uint64
GnnGraphReserve(uint64 bytes, const char *name)
{
	uint64		limit = (uint64) gnn_max_graph_memory_mb * 1024 * 1024;
	uint64		used;

	LWLockAcquire(gnn_shared->lock, LW_EXCLUSIVE);
	used = gnn_shared->graph_bytes;
	if (used + bytes > limit)
	{
		LWLockRelease(gnn_shared->lock);
		ereport(ERROR,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("graph \"%s\" needs %llu MB of shared memory, but only %llu MB of gnn.max_graph_memory (%d MB) is free",
						name,
						(unsigned long long) ((bytes + 1048575) / 1048576),
						(unsigned long long) ((limit > used ? limit - used : 0) / 1048576),
						gnn_max_graph_memory_mb),
				 errdetail("The graph needs %llu bytes; loaded graphs use %llu bytes.",
						   (unsigned long long) bytes, (unsigned long long) used),
				 errhint("Drop graphs you no longer need with gnn.drop_graph(), or raise gnn.max_graph_memory.")));
	}
	gnn_shared->graph_bytes += bytes;
	LWLockRelease(gnn_shared->lock);
	if (!reserved_callback)
	{
		before_shmem_exit(ReservedAtExit, (Datum) 0);
		reserved_callback = true;
	}
	reserved_pending += bytes;
	return bytes;
}

/* Bytes gnn.max_graph_memory has left now. */
uint64
GnnGraphMemoryFree(void)
{
	uint64		limit = (uint64) gnn_max_graph_memory_mb * 1024 * 1024;
	uint64		used;

	LWLockAcquire(gnn_shared->lock, LW_SHARED);
	used = gnn_shared->graph_bytes;
	LWLockRelease(gnn_shared->lock);
	return limit > used ? limit - used : 0;
}

void
GnnGraphUnreserve(uint64 bytes)
{
	bytes = Min(bytes, reserved_pending);
	reserved_pending -= bytes;
	LWLockAcquire(gnn_shared->lock, LW_EXCLUSIVE);
	gnn_shared->graph_bytes -= Min(bytes, gnn_shared->graph_bytes);
	LWLockRelease(gnn_shared->lock);
}

/* Does the caller's graph name have a delta over its loaded graph (registered, not pending)? */
bool
GnnGraphHasDelta(const char *name)
{
	GnnGraphEntry *e;
	bool		has;

	LWLockAcquire(gnn_shared->lock, LW_SHARED);
	e = FindEntry(name);
	has = e != NULL && e->delta_handle != DSM_HANDLE_INVALID;
	LWLockRelease(gnn_shared->lock);
	return has;
}

/* ------------------------------------------------------------------ changes at commit
 *
 * What a statement does to the registry follows its transaction, as CREATE
 * TABLE and DROP TABLE do: loads, replaces, refreshes and drops are staged
 * here and take effect when the transaction commits, not at all when it (or
 * the savepoint they ran under) rolls back.  Until then the session sees its
 * own staged state (the staged version when it reads the graph, a staged
 * drop as "does not exist"); other sessions see the committed one.
 *
 * A staged version's region (or a refresh's delta over the registered base)
 * is built and mapped at once, owned by the top transaction, and counted
 * against gnn.max_graph_memory from then on.  A persisted version's
 * graph.gnn is written under a pending name in the graph's store directory
 * (a features file is named by its version already) and renamed over
 * graph.gnn at commit; whatever does not commit is removed.
 *
 * Commit takes two steps.  Before the commit record (PRE_COMMIT), what can
 * fail: a new name claims a registry slot (gnn.max_graphs), a delta checks
 * that its base is still the registered version.  After it (COMMIT), what
 * cannot fail: slots are filled, versions swapped, dropped entries retired,
 * and the store's files renamed or removed (a failure there is a WARNING;
 * the version is then in memory only).  Loads, refreshes and drops of one
 * name hold the name's transaction lock (GnnLockGraph) until they end, so
 * they commit in the order they staged.
 *
 * A staged entry shadows older ones of its name.  An older one staged in the
 * same subtransaction can never come back and is freed at once (a loop that
 * replaces a graph 200 times in one transaction holds one version); one from
 * an enclosing subtransaction is kept while this one may still roll back.
 * PREPARE TRANSACTION with staged changes is refused: they live in this
 * process.
 */
typedef enum PendKind
{
	PEND_VERSION,				/* a new region (seg) or a delta over the registered base (dseg) */
	PEND_DROP,
	PEND_UNTRACK,				/* the graph stops following its tables (tracked = false) */
	PEND_PARTITION				/* gnn.partition's assignment (seg) for version proto.generation */
} PendKind;

typedef struct Pending
{
	PendKind	kind;
	GnnGraphEntry proto;		/* the version; a drop's or untrack's name and owner */
	dsm_segment *seg;
	dsm_segment *dseg;
	uint64		reserved;
	char		staged[32];		/* graph.gnn written under this name in the store ("": none) */
	uint64		feat_gen;		/* a features file written for this version (0: none) */
	int			slot;			/* a registry slot claimed at PRE_COMMIT for a new name (-1: none) */
	int32		part_parts;		/* a partition's parts and method */
	char		part_method[16];
	SubTransactionId subid;
} Pending;

static Pending *pending = NULL;
static int	npending = 0;
static int	pending_cap = 0;
static bool pending_callbacks = false;

static bool
PendSame(const Pending *p, const char *name, Oid owner)
{
	return p->proto.owner == owner && strcmp(p->proto.name, name) == 0;
}

/* p is not what the name will be: its memory, reservation, staged files and claimed slot go */
static void
PendRelease(Pending *p, bool detach)
{
	/* a version that never took effect: results computed on it can never be asked for */
	if (p->kind == PEND_VERSION && (p->seg || p->dseg) && p->proto.generation)
		GnnCachePurgeGeneration(p->proto.name, p->proto.owner, p->proto.generation);
	if (p->reserved)
		GnnGraphUnreserve(p->reserved);
	p->reserved = 0;
	if (detach && p->seg)
		dsm_detach(p->seg);
	if (detach && p->dseg)
		dsm_detach(p->dseg);
	p->seg = p->dseg = NULL;
	if (p->feat_gen)
		GnnStoreRemoveFeatures(MyDatabaseId, p->proto.owner, p->proto.name, p->feat_gen);
	p->feat_gen = 0;
	if (p->staged[0])
		GnnStoreRemoveStaged(MyDatabaseId, p->proto.owner, p->proto.name, p->staged);
	p->staged[0] = '\0';
	if (p->slot >= 0)
	{
		LWLockAcquire(gnn_shared->lock, LW_EXCLUSIVE);
		memset(&gnn_shared->graphs[p->slot], 0, sizeof(GnnGraphEntry));
		LWLockRelease(gnn_shared->lock);
	}
	p->slot = -1;
}

/* entry i goes from the list, order kept (commit applies entries in staging order) */
static void
PendRemove(int i, bool detach)
{
	PendRelease(&pending[i], detach);
	memmove(&pending[i], &pending[i + 1], sizeof(Pending) * (npending - i - 1));
	npending--;
}

/* whether entry k, staged after i, makes i never take effect: a version or drop, or a newer partition */
static bool
PendShadows(const Pending *k, const Pending *i)
{
	if (k->kind == PEND_UNTRACK || i->kind == PEND_UNTRACK || !PendSame(k, i->proto.name, i->proto.owner))
		return false;
	return k->kind != PEND_PARTITION || i->kind == PEND_PARTITION;
}

/* Entries shadowed by entry `upto` and staged at its level subid go for good. */
static void
PendCollapse(int upto, SubTransactionId subid)
{
	for (int i = upto - 1; i >= 0; i--)
		if (pending[i].subid == subid && PendShadows(&pending[upto], &pending[i]))
		{
			PendRemove(i, true);
			upto--;
		}
}

/* whether entry i takes effect at commit: nothing staged later shadows it */
static bool
PendWins(int i)
{
	if (pending[i].kind == PEND_UNTRACK)
		return false;
	for (int k = i + 1; k < npending; k++)
		if (PendShadows(&pending[k], &pending[i]))
			return false;
	return true;
}

static void PendXactCallback(XactEvent event, void *arg);
static void PendInstallPartition(Pending *p);
static void PendSubXactCallback(SubXactEvent event, SubTransactionId mySubid,
								SubTransactionId parentSubid, void *arg);

static Pending *
PendNew(PendKind kind, const char *name, Oid owner)
{
	Pending    *p;

	if (!pending_callbacks)
	{
		RegisterXactCallback(PendXactCallback, NULL);
		RegisterSubXactCallback(PendSubXactCallback, NULL);
		pending_callbacks = true;
	}
	if (npending == pending_cap)
	{
		int			cap = pending_cap ? pending_cap * 2 : 8;

		pending = pending ? repalloc(pending, sizeof(Pending) * cap)
			: MemoryContextAlloc(TopMemoryContext, sizeof(Pending) * cap);
		pending_cap = cap;
	}
	p = &pending[npending++];
	memset(p, 0, sizeof(*p));
	p->kind = kind;
	strlcpy(p->proto.name, name, sizeof(p->proto.name));
	p->proto.owner = owner;
	p->proto.dbid = MyDatabaseId;
	p->slot = -1;
	p->subid = GetCurrentSubTransactionId();
	return p;
}

/*
 * Stage seg, a version of graph proto->name built by this transaction, to
 * become the graph at commit; reserved becomes the graph's.  staged: the
 * pending name its graph.gnn was written under ("" or NULL: not persisted);
 * feat_gen: its features file's version (0: none).  seg must be owned by the
 * top transaction's resource owner.
 */
void
GnnPublishAtCommit(const GnnGraphEntry *proto, dsm_segment *seg, uint64 reserved, const char *staged,
				   uint64 feat_gen)
{
	Pending    *p = PendNew(PEND_VERSION, proto->name, proto->owner);

	p->proto = *proto;
	p->proto.dbid = MyDatabaseId;
	/* numbered now: what the transaction makes of it (a partition, results) names this version */
	if (p->proto.generation == 0)
		p->proto.generation = GnnGraphNewGeneration();
	p->seg = seg;
	p->reserved = reserved;
	if (staged)
		strlcpy(p->staged, staged, sizeof(p->staged));
	p->feat_gen = feat_gen;
	PendCollapse(npending - 1, p->subid);
}

/* Stage dseg, a delta over the base registered now (proto->handle), as graph proto->name's next version. */
void
GnnPublishDeltaAtCommit(const GnnGraphEntry *proto, dsm_segment *dseg, uint64 reserved)
{
	Pending    *p = PendNew(PEND_VERSION, proto->name, proto->owner);

	p->proto = *proto;
	p->proto.dbid = MyDatabaseId;
	p->dseg = dseg;
	p->reserved = reserved;
	PendCollapse(npending - 1, p->subid);
}

/* Stage the drop of owner's graph name. */
void
GnnDropAtCommit(const char *name, Oid owner)
{
	Pending    *p = PendNew(PEND_DROP, name, owner);

	PendCollapse(npending - 1, p->subid);
}

/* Stage: owner's graph name follows its tables no more (the refresher passes it by). */
void
GnnUntrackAtCommit(const char *name, Oid owner)
{
	(void) PendNew(PEND_UNTRACK, name, owner);
}

/*
 * What this transaction staged for owner's graph name: GNN_PENDING_NONE,
 * GNN_PENDING_DROPPED, or GNN_PENDING_VERSION with *entry its entry and
 * *seg its region (*dseg NULL), or *seg NULL and *dseg a delta over the
 * registered base entry->handle.  Any of the outputs may be NULL.
 */
GnnPendingState
GnnPendingLookup(const char *name, Oid owner, GnnGraphEntry *entry, dsm_segment **seg, dsm_segment **dseg)
{
	if (seg)
		*seg = NULL;
	if (dseg)
		*dseg = NULL;
	for (int i = npending - 1; i >= 0; i--)
	{
		Pending    *p = &pending[i];

		if (p->kind == PEND_UNTRACK || p->kind == PEND_PARTITION || !PendSame(p, name, owner) ||
			p->proto.dbid != MyDatabaseId)
			continue;
		if (p->kind == PEND_DROP)
			return GNN_PENDING_DROPPED;
		if (entry)
		{
			*entry = p->proto;
			/* the base's size and handle as registered now, for a delta */
			entry->in_use = true;
		}
		if (seg)
			*seg = p->seg;
		if (dseg)
			*dseg = p->dseg;
		return GNN_PENDING_VERSION;
	}
	return GNN_PENDING_NONE;
}

/* The versions this transaction staged, for listing (gnn.graphs): up to max into out, as entries. */
int
GnnPendingVersions(GnnGraphEntry *out, int max)
{
	int			n = 0;

	for (int i = 0; i < npending && n < max; i++)
		if (pending[i].kind == PEND_VERSION && pending[i].proto.dbid == MyDatabaseId && PendWins(i))
			out[n++] = pending[i].proto;
	return n;
}

/* caller holds the lock exclusively (or is the postmaster at startup): a free slot, or NULL */
GnnGraphEntry *
GnnRegistryFreeSlot(void)
{
	for (int i = 0; i < gnn_shared->max_graphs; i++)
		if (!gnn_shared->graphs[i].in_use)
			return &gnn_shared->graphs[i];
	return NULL;
}

/*
 * Before the commit record: what can fail.  A new name claims a slot (in
 * use, but no database's: no lookup finds it); a delta's base must still be
 * registered.
 */
static void
PendPreCommit(void)
{
	for (int i = 0; i < npending; i++)
	{
		Pending    *p = &pending[i];
		GnnGraphEntry *e;

		if (p->kind != PEND_VERSION || !PendWins(i))
			continue;
		LWLockAcquire(gnn_shared->lock, LW_EXCLUSIVE);
		e = GnnGraphEntryOf(p->proto.name, p->proto.owner);
		if (p->dseg && (e == NULL || e->handle != p->proto.handle))
		{
			LWLockRelease(gnn_shared->lock);
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("graph \"%s\" was dropped or replaced while it was being refreshed", p->proto.name),
					 errhint("Refresh it again, or reload it.")));
		}
		if (p->seg && e == NULL && p->slot < 0)
		{
			GnnGraphEntry *slot = GnnRegistryFreeSlot();

			if (slot == NULL)
			{
				LWLockRelease(gnn_shared->lock);
				ereport(ERROR,
						(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
						 errmsg("too many graphs are loaded (gnn.max_graphs = %d)", gnn_shared->max_graphs),
						 errdetail("Graph \"%s\" was not loaded: its transaction rolled back.", p->proto.name),
						 errhint("Drop graphs you no longer need, or raise gnn.max_graphs and restart the server.")));
			}
			memset(slot, 0, sizeof(*slot));
			slot->in_use = true;	/* claimed: dbid InvalidOid, so no lookup finds it */
			p->slot = slot - gnn_shared->graphs;
		}
		LWLockRelease(gnn_shared->lock);
	}
}

/* after the commit record: p (a winning version) becomes the graph; cannot fail */
static void
PendInstallVersion(Pending *p)
{
	GnnGraphEntry *e;
	bool		old_files = false;
	uint64		live;

	LWLockAcquire(gnn_shared->lock, LW_EXCLUSIVE);
	e = GnnGraphEntryOf(p->proto.name, p->proto.owner);
	if (p->dseg)
	{
		GnnGraphEntry keep;

		if (e == NULL || e->handle != p->proto.handle)
		{
			/* checked at PRE_COMMIT under the name's lock: cannot happen */
			LWLockRelease(gnn_shared->lock);
			ereport(WARNING,
					(errmsg("graph \"%s\": its refresh was not published: the graph was replaced meanwhile",
							p->proto.name)));
			return;
		}
		dsm_pin_segment(p->dseg);
		GnnPartitionFree(e);
		DeltaRetire(e);
		SegmentRetire(&e->cache_handle, &e->cache_bytes);	/* (graphs that follow their tables have none) */
		keep = *e;
		*e = p->proto;
		e->in_use = true;
		e->dbid = keep.dbid;
		e->handle = keep.handle;
		e->bytes = keep.bytes;
		e->holders = keep.holders;
		e->stored = keep.stored;
		e->part_handle = DSM_HANDLE_INVALID;
		e->part_bytes = 0;
		e->part_stored = false;
		e->cache_handle = DSM_HANDLE_INVALID;
		e->cache_bytes = 0;
		e->delta_handle = dsm_segment_handle(p->dseg);
		e->delta_bytes = p->reserved;
		ReservationOwned(p->reserved);
		p->reserved = 0;
		e->generation = p->proto.generation ? p->proto.generation : gnn_shared->next_generation++;
		live = e->generation;
		LWLockRelease(gnn_shared->lock);
		dsm_detach(p->dseg);
		p->dseg = NULL;
		GnnCachePurgeGraph(p->proto.name, p->proto.owner, live, p->proto.prior_generation);
		return;
	}
	if (e == NULL)
	{
		Assert(p->slot >= 0);
		e = &gnn_shared->graphs[p->slot];
	}
	else
	{
		old_files = e->stored || e->feat_disk;
		EntryRetire(e);
		/* a slot claimed meanwhile is not needed after all (another session's drop... cannot: the lock) */
		if (p->slot >= 0)
			memset(&gnn_shared->graphs[p->slot], 0, sizeof(GnnGraphEntry));
	}
	p->slot = -1;
	dsm_pin_segment(p->seg);
	*e = p->proto;
	e->in_use = true;
	e->dbid = MyDatabaseId;
	e->handle = dsm_segment_handle(p->seg);
	e->bytes = p->reserved;
	ReservationOwned(p->reserved);
	p->reserved = 0;
	e->delta_handle = DSM_HANDLE_INVALID;
	e->delta_bytes = 0;
	e->cache_handle = DSM_HANDLE_INVALID;
	e->cache_bytes = 0;
	e->holders = 0;
	e->part_handle = DSM_HANDLE_INVALID;
	e->part_bytes = 0;
	e->part_stored = false;
	e->stored = p->staged[0] != '\0';
	/* a refresh numbers its version ahead (its change history names it) */
	e->generation = p->proto.generation ? p->proto.generation : gnn_shared->next_generation++;
	live = e->generation;
	LWLockRelease(gnn_shared->lock);
	dsm_detach(p->seg);
	p->seg = NULL;

	/*
	 * The store: the version's graph.gnn takes its place, and the files of
	 * the version it replaced go (readers that opened them keep them open);
	 * a version kept in memory only must not leave an older one to come back
	 * after a restart.
	 */
	if (p->staged[0])
	{
		if (!GnnStoreCommitStaged(MyDatabaseId, p->proto.owner, p->proto.name, p->staged))
		{
			LWLockAcquire(gnn_shared->lock, LW_EXCLUSIVE);
			if ((e = GnnGraphEntryOf(p->proto.name, p->proto.owner)) != NULL && e->generation == live)
				e->stored = false;
			LWLockRelease(gnn_shared->lock);
		}
		p->staged[0] = '\0';
		GnnStoreRetire(MyDatabaseId, p->proto.owner, p->proto.name, p->proto.feat_disk ? live : 0, true);
	}
	else if (p->proto.feat_disk)
		GnnStoreRetire(MyDatabaseId, p->proto.owner, p->proto.name, live, false);
	else if (old_files)
		GnnStoreRemove(MyDatabaseId, p->proto.owner, p->proto.name);
	p->feat_gen = 0;			/* the graph's now */
	/* results computed on the graph it replaced can never be asked for again */
	GnnCachePurgeGraph(p->proto.name, p->proto.owner, live, p->proto.prior_generation);
}

/* after the commit record: the graph goes; cannot fail */
static void
PendInstallDrop(Pending *p)
{
	GnnGraphEntry *e;
	bool		stored = false;

	LWLockAcquire(gnn_shared->lock, LW_EXCLUSIVE);
	e = GnnGraphEntryOf(p->proto.name, p->proto.owner);
	if (e != NULL)
	{
		stored = e->stored || e->feat_disk;
		EntryRetire(e);
		memset(e, 0, sizeof(*e));
	}
	LWLockRelease(gnn_shared->lock);
	if (stored)
		GnnStoreRemove(MyDatabaseId, p->proto.owner, p->proto.name);
	GnnCachePurgeGraph(p->proto.name, p->proto.owner, 0, 0);
}

static void
PendInstallUntrack(Pending *p)
{
	GnnGraphEntry *e;

	LWLockAcquire(gnn_shared->lock, LW_EXCLUSIVE);
	if ((e = GnnGraphEntryOf(p->proto.name, p->proto.owner)) != NULL)
		e->tracked = false;
	LWLockRelease(gnn_shared->lock);
}

static void
PendXactCallback(XactEvent event, void *arg)
{
	if (npending == 0)
		return;
	switch (event)
	{
		case XACT_EVENT_PRE_COMMIT:
			PendPreCommit();
			break;
		case XACT_EVENT_PRE_PREPARE:
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("cannot PREPARE a transaction that loaded, replaced, refreshed, dropped or untracked a graph"),
					 errdetail("Those changes are held by this session until the transaction ends."),
					 errhint("Commit the transaction instead, or make the graph changes in a transaction of their own.")));
			break;
		case XACT_EVENT_COMMIT:
			for (int i = 0; i < npending; i++)
			{
				Pending    *p = &pending[i];

				if (p->kind == PEND_UNTRACK)
				{
					/* a later version of the name decides whether it is tracked */
					bool		later = false;

					for (int k = i + 1; k < npending && !later; k++)
						later = pending[k].kind == PEND_VERSION && PendSame(&pending[k], p->proto.name, p->proto.owner);
					if (!later)
						PendInstallUntrack(p);
				}
				else if (!PendWins(i))
					continue;
				else if (p->kind == PEND_DROP)
					PendInstallDrop(p);
				else if (p->kind == PEND_PARTITION)
					PendInstallPartition(p);
				else
					PendInstallVersion(p);
			}
			while (npending > 0)
				PendRemove(npending - 1, true);
			break;
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
			/* the mappings go with the transaction's resource owner; unpinned, the segments too */
			while (npending > 0)
				PendRemove(npending - 1, false);
			break;
		default:
			break;
	}
}

static void
PendSubXactCallback(SubXactEvent event, SubTransactionId mySubid, SubTransactionId parentSubid, void *arg)
{
	if (event == SUBXACT_EVENT_ABORT_SUB)
	{
		for (int i = npending - 1; i >= 0; i--)
			if (pending[i].subid == mySubid)
				PendRemove(i, true);
	}
	else if (event == SUBXACT_EVENT_COMMIT_SUB)
	{
		for (int i = 0; i < npending; i++)
			if (pending[i].subid == mySubid)
				pending[i].subid = parentSubid;
		/* what the savepoint's entries shadow at the parent's level can never come back */
		for (int i = npending - 1; i >= 0; i--)
			if (i < npending && pending[i].subid == parentSubid && pending[i].kind != PEND_UNTRACK)
				PendCollapse(i, parentSubid);
	}
}

/*
 * Drop the current role's graph name, or with owner another role's (a
 * superuser's, or a member of owner's, way to free the graphs of a role,
 * also of one that was dropped: owner => its OID), when the transaction
 * commits.  The session sees it gone at once.
 */
bool
GnnGraphDrop(const char *name, bool if_exists, Oid owner)
{
	GnnPendingState ps;
	bool		found;

	GnnRequirePreload();
	GnnCheckGraphName(name);
	if (!OidIsValid(owner))
		owner = GetUserId();
	if (owner != GetUserId() && !superuser() && !has_privs_of_role(GetUserId(), owner))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied to drop another role's graphs"),
				 errhint("Only a superuser or a member of the owning role may pass owner =>.")));
	GnnLockGraph(name, owner);	/* loads, refreshes and drops of the name in turn */
	ps = GnnPendingLookup(name, owner, NULL, NULL, NULL);
	if (ps == GNN_PENDING_NONE)
	{
		LWLockAcquire(gnn_shared->lock, LW_SHARED);
		found = GnnGraphEntryOf(name, owner) != NULL;
		LWLockRelease(gnn_shared->lock);
	}
	else
		found = ps == GNN_PENDING_VERSION;
	if (!found)
	{
		if (if_exists)
		{
			ereport(NOTICE,
					(errmsg("graph \"%s\" does not exist, skipping", name)));
			return false;
		}
		ReportNoGraph(name);
	}
	GnnDropAtCommit(name, owner);
	return true;
}

/*
 * Every graph of database dbid leaves the registry (DROP EXTENSION gnn
 * committed there): mappings keep their segments until they go.  Runs in a
 * commit callback, so it must not fail.
 */
void
GnnGraphDropDatabase(Oid dbid)
{
	LWLockAcquire(gnn_shared->lock, LW_EXCLUSIVE);
	for (int i = 0; i < gnn_shared->max_graphs; i++)
	{
		GnnGraphEntry *e = &gnn_shared->graphs[i];

		if (e->in_use && e->dbid == dbid)
		{
			EntryRetire(e);
			memset(e, 0, sizeof(*e));
		}
	}
	LWLockRelease(gnn_shared->lock);
}

/* ------------------------------------------------------------------ partitions
 * A graph's last partition assignment lives in its own pinned DSM segment
 * whose handle is kept in the graph's entry; it goes with the graph (drop,
 * replace).  generation ties it to the graph version it was computed on.
 */

/* caller holds the lock exclusively; unpins and unaccounts e's partition */
void
GnnPartitionFree(GnnGraphEntry *e)
{
	if (e->part_handle == DSM_HANDLE_INVALID)
		return;
	SegmentRetire(&e->part_handle, &e->part_bytes);
	e->part_parts = 0;
	e->part_method[0] = '\0';
}

/*
 * Map the partition of graph name (of this generation), or NULL if none.
 * Callers hold the graph (GnnGraphAcquire), which mapped a stored graph and
 * its stored partition together.
 */
dsm_segment *
GnnPartitionAttach(const char *name, uint64 generation)
{
	GnnGraphEntry *e;
	dsm_segment *seg = NULL;

	/* one this transaction staged, of the version it partitioned (the transaction's mapping) */
	for (int i = npending - 1; i >= 0; i--)
		if (pending[i].kind == PEND_PARTITION && PendWins(i) && PendSame(&pending[i], name, GetUserId()) &&
			pending[i].proto.generation == generation)
			return pending[i].seg;
	LWLockAcquire(gnn_shared->lock, LW_SHARED);
	e = FindEntry(name);
	if (e && e->generation == generation && e->part_handle != DSM_HANDLE_INVALID)
		seg = GnnDsmAttach(e->part_handle);
	LWLockRelease(gnn_shared->lock);
	return seg;
}

/* Whether seg is a partition this transaction staged (its mapping is the transaction's: not to detach). */
bool
GnnPartitionIsStaged(dsm_segment *seg)
{
	for (int i = 0; i < npending; i++)
		if (pending[i].kind == PEND_PARTITION && pending[i].seg == seg)
			return true;
	return false;
}

/*
 * Keep seg as the partition of graph name (version generation), replacing
 * any earlier one, when the transaction commits; bytes were reserved by the
 * caller and become the partition's.  The mapping moves to the top
 * transaction.  Fails (the caller still owns seg and the reservation) if
 * the graph as this transaction sees it is no longer that version.
 */
void
GnnPartitionPublish(const char *name, uint64 generation, dsm_segment *seg, uint64 bytes,
					int32 parts, const char *method)
{
	GnnGraphEntry e;
	Pending    *p;
	ResourceOwner save = CurrentResourceOwner;

	if (GnnPendingLookup(name, GetUserId(), &e, NULL, NULL) == GNN_PENDING_NONE)
	{
		GnnGraphEntry *r;

		LWLockAcquire(gnn_shared->lock, LW_SHARED);
		r = FindEntry(name);
		e.generation = r ? r->generation : 0;
		LWLockRelease(gnn_shared->lock);
	}
	if (e.generation != generation)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("graph \"%s\" was dropped or replaced while it was being partitioned", name),
				 errhint("Run gnn.partition() again.")));
	dsm_pin_mapping(seg);
	CurrentResourceOwner = TopTransactionResourceOwner;
	dsm_unpin_mapping(seg);
	CurrentResourceOwner = save;
	p = PendNew(PEND_PARTITION, name, GetUserId());
	p->proto.generation = generation;
	p->seg = seg;
	p->reserved = bytes;
	p->part_parts = parts;
	strlcpy(p->part_method, method, sizeof(p->part_method));
	PendCollapse(npending - 1, p->subid);
}

/* after the commit record: the partition becomes the graph's (and is stored with it); cannot fail */
static void
PendInstallPartition(Pending *p)
{
	GnnGraphEntry *e;
	GnnGraphEntry copy;

	LWLockAcquire(gnn_shared->lock, LW_EXCLUSIVE);
	e = GnnGraphEntryOf(p->proto.name, p->proto.owner);
	if (e == NULL || e->generation != p->proto.generation)
	{
		/* replaced by a version this transaction staged after it: PendWins says so; cannot happen */
		LWLockRelease(gnn_shared->lock);
		return;
	}
	dsm_pin_segment(p->seg);
	GnnPartitionFree(e);
	e->part_handle = dsm_segment_handle(p->seg);
	e->part_bytes = p->reserved;
	ReservationOwned(p->reserved);
	p->reserved = 0;
	e->part_parts = p->part_parts;
	strlcpy(e->part_method, p->part_method, sizeof(e->part_method));
	e->part_stored = false;
	copy = *e;
	LWLockRelease(gnn_shared->lock);
	if (copy.stored)
	{
		/* written after publishing: a restart in between finds no partition, never a wrong one */
		GnnStorePersistPartition(&copy, dsm_segment_address(p->seg), dsm_segment_map_length(p->seg));
		LWLockAcquire(gnn_shared->lock, LW_EXCLUSIVE);
		e = GnnGraphEntryOf(p->proto.name, p->proto.owner);
		if (e && e->generation == copy.generation && e->part_handle == copy.part_handle)
			e->part_stored = true;
		LWLockRelease(gnn_shared->lock);
	}
	dsm_detach(p->seg);
	p->seg = NULL;
}

/*
 * The graph's nodes and their data without any edge: what a features-only
 * model ("mlp") trains and predicts on.  The arrays of the view's empty
 * adjacency are allocated in the current memory context.
 */
void
GnnEdgelessView(const gnn_graph *g, gnn_graph *out)
{
	int64	   *zero = palloc_extended(sizeof(int64) * (g->num_nodes + 1), MCXT_ALLOC_HUGE | MCXT_ALLOC_ZERO);
	gnn_graph	v = *g;

	v.num_edges = 0;
	v.indptr = v.rindptr = zero;
	v.indices = v.rindices = NULL;
	v.weights = v.rweights = NULL;
	v.arc_type = v.rarc_type = NULL;
	*out = v;
}

/* ------------------------------------------------------------------ graph locks */
/* the lock of (owner, graph): field4 3, not one of pg_advisory_lock's key spaces (1, 2) */
void
GnnGraphLockTag(LOCKTAG *tag, const char *graph, Oid owner)
{
	SET_LOCKTAG_ADVISORY(*tag, MyDatabaseId, hash_bytes((const unsigned char *) graph, strlen(graph)),
						 owner, 3);
}

void
GnnLockGraph(const char *graph, Oid owner)
{
	LOCKTAG		tag;

	GnnGraphLockTag(&tag, graph, owner);
	(void) LockAcquire(&tag, ExclusiveLock, false, false);
}

/* Validate a partition segment against the graph it belongs to. */
const GnnPartitionHeader *
GnnPartitionOf(dsm_segment *seg, const GnnGraphRef *ref, const char *graph)
{
	const GnnPartitionHeader *h = dsm_segment_address(seg);

	if (dsm_segment_map_length(seg) < offsetof(GnnPartitionHeader, part) ||
		h->magic != GNN_PART_MAGIC || h->nodes != ref->g.num_nodes ||
		dsm_segment_map_length(seg) < offsetof(GnnPartitionHeader, part) + sizeof(int32) * (uint64) h->nodes)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("the partition of graph \"%s\" is corrupt in shared memory", graph)));
	return h;
}
