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
 */
#include "gnn_pg.h"

#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"

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

/* caller holds the lock */
static GnnGraphEntry *
FindEntry(const char *name)
{
	for (int i = 0; i < gnn_shared->max_graphs; i++)
	{
		GnnGraphEntry *e = &gnn_shared->graphs[i];

		if (e->in_use && e->dbid == MyDatabaseId && strcmp(e->name, name) == 0)
			return e;
	}
	return NULL;
}

static void
ReportNoGraph(const char *name)
{
	ereport(ERROR,
			(errcode(ERRCODE_UNDEFINED_OBJECT),
			 errmsg("graph \"%s\" does not exist", name),
			 errhint("Load it with gnn.load_graph(); gnn.graphs lists the loaded graphs.")));
}

static void
CheckOwner(const GnnGraphEntry *e, const char *name)
{
	if (!GnnIsOwnerOrSuper(e->owner))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied for graph \"%s\"", name),
				 errdetail("Only the role that loaded a graph (or a superuser) may use it.")));
}

bool
GnnGraphExists(const char *name, Oid *owner)
{
	GnnGraphEntry *e;
	bool		found;

	GnnRequirePreload();
	LWLockAcquire(gnn_shared->lock, LW_SHARED);
	e = FindEntry(name);
	found = e != NULL;
	if (found && owner)
		*owner = e->owner;
	LWLockRelease(gnn_shared->lock);
	return found;
}

void
GnnGraphAcquire(const char *name, GnnGraphRef *ref)
{
	GnnGraphEntry *e;
	gnn_error	err;

	GnnRequirePreload();
	GnnCheckGraphName(name);
	memset(ref, 0, sizeof(*ref));
	LWLockAcquire(gnn_shared->lock, LW_SHARED);
	e = FindEntry(name);
	if (e == NULL)
	{
		LWLockRelease(gnn_shared->lock);
		ReportNoGraph(name);
	}
	if (!GnnIsOwnerOrSuper(e->owner))
	{
		LWLockRelease(gnn_shared->lock);
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied for graph \"%s\"", name),
				 errdetail("Only the role that loaded a graph (or a superuser) may use it.")));
	}
	ref->entry = *e;
	/* the mapping belongs to the transaction's resource owner: an error detaches it */
	ref->seg = dsm_attach(e->handle);
	LWLockRelease(gnn_shared->lock);
	if (ref->seg == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("could not map graph \"%s\"", name)));
	if (gnn_graph_attach(dsm_segment_address(ref->seg), dsm_segment_map_length(ref->seg),
						 &ref->g, &err) != GNN_OK)
	{
		dsm_detach(ref->seg);
		ref->seg = NULL;
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("graph \"%s\" is corrupt in shared memory: %s", name, err.msg)));
	}
}

void
GnnGraphRelease(GnnGraphRef *ref)
{
	if (ref->seg)
		dsm_detach(ref->seg);
	ref->seg = NULL;
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
	return bytes;
}

void
GnnGraphUnreserve(uint64 bytes)
{
	LWLockAcquire(gnn_shared->lock, LW_EXCLUSIVE);
	gnn_shared->graph_bytes -= Min(bytes, gnn_shared->graph_bytes);
	LWLockRelease(gnn_shared->lock);
}

/*
 * Publish a fully built graph.  The reservation made for it becomes the
 * graph's accounted memory; a replaced graph's memory is released from the
 * accounting (its segment lives on until its last reader detaches).  On
 * error the caller still owns the reservation and the segment.
 */
void
GnnGraphRegister(const GnnGraphEntry *proto, dsm_segment *seg, bool replace, uint64 reserved)
{
	GnnGraphEntry *e;
	GnnGraphEntry *slot = NULL;

	LWLockAcquire(gnn_shared->lock, LW_EXCLUSIVE);
	e = FindEntry(proto->name);
	if (e != NULL)
	{
		if (!replace)
		{
			LWLockRelease(gnn_shared->lock);
			ereport(ERROR,
					(errcode(ERRCODE_DUPLICATE_OBJECT),
					 errmsg("graph \"%s\" already exists", proto->name),
					 errhint("Pass replace => true to replace it, or drop it first with gnn.drop_graph().")));
		}
		if (!GnnIsOwnerOrSuper(e->owner))
		{
			LWLockRelease(gnn_shared->lock);
			ereport(ERROR,
					(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
					 errmsg("permission denied to replace graph \"%s\"", proto->name),
					 errdetail("Only the role that loaded a graph (or a superuser) may replace it.")));
		}
		slot = e;
	}
	else
	{
		for (int i = 0; i < gnn_shared->max_graphs; i++)
			if (!gnn_shared->graphs[i].in_use)
			{
				slot = &gnn_shared->graphs[i];
				break;
			}
		if (slot == NULL)
		{
			LWLockRelease(gnn_shared->lock);
			ereport(ERROR,
					(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
					 errmsg("too many graphs are loaded (gnn.max_graphs = %d)", gnn_shared->max_graphs),
					 errhint("Drop graphs you no longer need, or raise gnn.max_graphs and restart the server.")));
		}
	}

	/* nothing below can fail: pin, then swap */
	dsm_pin_segment(seg);
	if (slot->in_use)
	{
		GnnPartitionFree(slot);
		gnn_shared->graph_bytes -= Min(slot->bytes, gnn_shared->graph_bytes);
		dsm_unpin_segment(slot->handle);
	}
	*slot = *proto;
	slot->in_use = true;
	slot->dbid = MyDatabaseId;
	slot->handle = dsm_segment_handle(seg);
	slot->bytes = reserved;
	slot->generation = gnn_shared->next_generation++;
	LWLockRelease(gnn_shared->lock);
}

bool
GnnGraphDrop(const char *name, bool if_exists)
{
	GnnGraphEntry *e;

	GnnRequirePreload();
	GnnCheckGraphName(name);
	LWLockAcquire(gnn_shared->lock, LW_EXCLUSIVE);
	e = FindEntry(name);
	if (e == NULL)
	{
		LWLockRelease(gnn_shared->lock);
		if (if_exists)
		{
			ereport(NOTICE,
					(errmsg("graph \"%s\" does not exist, skipping", name)));
			return false;
		}
		ReportNoGraph(name);
	}
	if (!GnnIsOwnerOrSuper(e->owner))
	{
		LWLockRelease(gnn_shared->lock);
		CheckOwner(e, name);
	}
	GnnPartitionFree(e);
	gnn_shared->graph_bytes -= Min(e->bytes, gnn_shared->graph_bytes);
	dsm_unpin_segment(e->handle);
	memset(e, 0, sizeof(*e));
	LWLockRelease(gnn_shared->lock);
	return true;
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
	dsm_unpin_segment(e->part_handle);
	gnn_shared->graph_bytes -= Min(e->part_bytes, gnn_shared->graph_bytes);
	e->part_handle = DSM_HANDLE_INVALID;
	e->part_bytes = 0;
	e->part_parts = 0;
	e->part_method[0] = '\0';
}

/* Map the partition of graph name (of this generation), or NULL if none. */
dsm_segment *
GnnPartitionAttach(const char *name, uint64 generation)
{
	GnnGraphEntry *e;
	dsm_segment *seg = NULL;

	LWLockAcquire(gnn_shared->lock, LW_SHARED);
	e = FindEntry(name);
	if (e && e->generation == generation && e->part_handle != DSM_HANDLE_INVALID)
		seg = dsm_attach(e->part_handle);
	LWLockRelease(gnn_shared->lock);
	return seg;
}

/*
 * Keep seg as the partition of graph name, replacing any earlier one; bytes
 * were reserved by the caller and become the entry's.  Fails (the caller
 * still owns seg and the reservation) if the graph was dropped or replaced
 * since generation.
 */
void
GnnPartitionPublish(const char *name, uint64 generation, dsm_segment *seg, uint64 bytes,
					int32 parts, const char *method)
{
	GnnGraphEntry *e;

	LWLockAcquire(gnn_shared->lock, LW_EXCLUSIVE);
	e = FindEntry(name);
	if (e == NULL || e->generation != generation)
	{
		LWLockRelease(gnn_shared->lock);
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("graph \"%s\" was dropped or replaced while it was being partitioned", name),
				 errhint("Run gnn.partition() again.")));
	}
	dsm_pin_segment(seg);
	GnnPartitionFree(e);
	e->part_handle = dsm_segment_handle(seg);
	e->part_bytes = bytes;
	e->part_parts = parts;
	strlcpy(e->part_method, method, sizeof(e->part_method));
	LWLockRelease(gnn_shared->lock);
}
