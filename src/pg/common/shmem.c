/*
 * shmem.c: the fixed shared struct (lock, graph registry) reserved at server
 * start through shmem_request_hook / shmem_startup_hook (PostgreSQL 15).
 */
#include "common/gnn_pg.h"

#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/shmem.h"
#include "utils/timestamp.h"

GnnShared  *gnn_shared = NULL;

static shmem_request_hook_type prev_shmem_request_hook = NULL;
static void (*shmem_on_create) (void) = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

static Size
GnnShmemSize(void)
{
	return add_size(offsetof(GnnShared, graphs),
					mul_size(sizeof(GnnGraphEntry), gnn_max_graphs));
}

static void
GnnShmemRequest(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(GnnShmemSize());
	RequestNamedLWLockTranche("gnn", 1);
}

static void
GnnShmemStartup(void)
{
	bool		found;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	gnn_shared = ShmemInitStruct("gnn", GnnShmemSize(), &found);
	if (!found)
	{
		/* graphs lived in DSM segments, which a restart destroyed: start empty */
		memset(gnn_shared, 0, GnnShmemSize());
		gnn_shared->lock = &(GetNamedLWLockTranche("gnn"))->lock;
		gnn_shared->max_graphs = gnn_max_graphs;
		gnn_shared->next_generation = 1;
		ConditionVariableInit(&gnn_shared->cache_cv);
		ConditionVariableInit(&gnn_shared->job_cv);
		pg_atomic_init_u32(&gnn_shared->active_scans, 0);
		/* a new id for each shared-memory lifetime: jobs of an earlier one are over */
		gnn_shared->instance = (uint64) GetCurrentTimestamp() ^ ((uint64) MyProcPid << 32);
		if (!pg_strong_random(&gnn_shared->instance, sizeof(gnn_shared->instance)))
			gnn_shared->instance ^= (uint64) random();
		gnn_shared->instance &= INT64_MAX;
		/* but graphs in the graph store come back: registered now, mapped on first use */
		if (shmem_on_create)
			shmem_on_create();
	}
	LWLockRelease(AddinShmemInitLock);
}

void
GnnShmemInit(void (*on_create) (void))
{
	shmem_on_create = on_create;
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = GnnShmemRequest;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = GnnShmemStartup;
}

/*
 * The graph's segments (a graph, its feature cache, a restored graph) go
 * through these: a segment of 8 MB or more is advised into 2 MB pages.
 * The advice gives huge pages to sysv segments where shmem_enabled is
 * "advise"; PostgreSQL's posix segments are fallocate'd before gnn sees
 * them, so they get huge pages only where /dev/shm is mounted with
 * huge=within_size (huge=advise is not enough).  Then the build writes the
 * graph and every backend maps it with a page-table entry per 2 MB instead
 * of per 4 kB, which on a virtual machine with shadow page tables was
 * about 40x faster to touch the first time (each 4 kB page costs a trap in
 * every process that maps it: BENCHMARKS.md, #15).  Elsewhere the advice
 * changes nothing.  GNN_HUGE_PAGES=0 in the server's environment turns it
 * off.
 */
dsm_segment *
GnnDsmCreate(Size bytes, int flags)
{
	dsm_segment *seg = dsm_create(bytes, flags);

	if (seg)
		gnn_advise_huge(dsm_segment_address(seg), dsm_segment_map_length(seg));
	return seg;
}

dsm_segment *
GnnDsmAttach(dsm_handle h)
{
	dsm_segment *seg = dsm_attach(h);

	if (seg)
		gnn_advise_huge(dsm_segment_address(seg), dsm_segment_map_length(seg));
	return seg;
}

/* Every SQL entry point calls this first. */
void
GnnRequirePreload(void)
{
	if (gnn_shared == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("gnn must be loaded via shared_preload_libraries"),
				 errhint("Add 'gnn' to shared_preload_libraries in postgresql.conf and restart the server.")));
}

/*
 * DROP EXTENSION gnn committed in this database: its jobs stop (cancelled,
 * and their workers told to exit; a worker writes nothing once the
 * extension it started with is gone).  Runs in a commit callback: no
 * errors.
 */
void
GnnJobsStopExtension(Oid extoid)
{
	LWLockAcquire(gnn_shared->lock, LW_EXCLUSIVE);
	for (int i = 0; i < GNN_JOB_SLOTS; i++)
	{
		GnnJobSlot *j = &gnn_shared->jobs[i];

		if (j->state == GNN_JOB_FREE || j->dbid != MyDatabaseId || j->extoid != extoid || GnnJobFinal(j->state))
			continue;
		j->cancel_requested = true;
		if (j->pid > 0)
			(void) kill(j->pid, SIGTERM);
	}
	LWLockRelease(gnn_shared->lock);
}
