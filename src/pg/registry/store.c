/*
 * store.c: loaded graphs on disk, so that they survive a restart.
 *
 * Layout: $PGDATA/gnn/<database oid>/<owner oid>_<name in hex>/ holds
 * graph.gnn (the graph's region: topology, id map, node data, features,
 * exactly as in shared memory, with the registry entry as metadata) and
 * partition.gnn (the last gnn.partition() assignment, when there is one).
 * Names are hex-encoded so that any graph name is a safe file name.  Each
 * file is a core store file (src/core/store.h): versioned, checksummed,
 * written to a temporary name, fsynced and renamed, so a crash leaves the
 * old version or the new one, never half of one.
 *
 * Startup: the postmaster's shared-memory initialisation (also after a crash
 * restart, which rebuilds shared memory) reads every graph.gnn's header and
 * metadata and registers the graph unmapped: owner and database as before,
 * nothing counted against gnn.max_graph_memory.  The first use maps it: the
 * payload is read into a new DSM segment and checked (checksum, then the
 * region's own validation) before anything trusts it.  A file that fails is
 * reported in gnn.graphs (state 'invalid', the reason in store_error) and
 * refused with an error; gnn.drop_graph removes it.
 *
 * Which graphs: those loaded with persist => true (the default follows
 * gnn.persist_graphs), and every tracked one (gnn.track), whatever persist
 * says (GnnStoreTrackedToo).  A tracked graph's
 * file is its last full version (a load, a refresh that wrote a new region);
 * later refreshes keep deltas in memory only and delete the change-log rows
 * they apply, so after a restart the file cannot be brought up to date from
 * the log: the graph comes back as of that version, still following its
 * tables, and its next refresh reloads it (reload_at_refresh).
 *
 * Features on disk (gnn.load_graph(..., feature_store => 'disk')): the
 * dense feature matrix is not in the region but in features-<version>.gnn
 * next to it (feature_store.h: rows by part then degree, a checksum per 512 bytes),
 * written for persisted and memory-only graphs alike.  Each process that
 * uses the graph opens it with a row cache of gnn.feature_cache_size and
 * sets it as the graph view's feature store (GnnFeaturesAttach), so every
 * feature reader reads through it.  The file is named by the graph version:
 * graph.gnn's rename stays the one commit point of a load, and a replaced
 * version's file is unlinked while readers that opened it keep reading it.
 *
 * The store sits in the data directory, so pg_basebackup and file-level
 * backups copy it, and a restored backup brings the graphs with it.
 */
#include "common/gnn_pg.h"

#include <ctype.h>
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include "access/xact.h"
#include "catalog/objectaccess.h"
#include "catalog/pg_extension.h"
#include "commands/extension.h"
#include "miscadmin.h"
#include "catalog/catalog.h"
#include "storage/buffile.h"
#include "storage/fd.h"
#include "access/htup_details.h"
#include "funcapi.h"
#include "utils/acl.h"
#include "utils/builtins.h"

#include "store/feature_store.h"
#include "graph/partition.h"
#include "store/store.h"

#define STORE_ROOT "gnn"
#define GRAPH_FILE "graph.gnn"
#define PART_FILE "partition.gnn"
#define PENDING_PREFIX "pending-"

bool		gnn_persist_graphs = true;
int			gnn_feature_cache_kb = 262144;

/* the metadata of graph.gnn: the registry entry as this build lays it out */
typedef struct StoredMeta
{
	uint32		entry_size;
	uint32		reserved;
	GnnGraphEntry entry;
} StoredMeta;

/*
 * "gnn/<db>/<owner>_<hex name>", palloc'd; relative to the data directory.
 * Every write to the store starts here, so here it takes the server's fsync
 * setting as it is now (a reload may change it): with fsync = off the
 * store's files are not synced either, as the server's own are not.
 */
char *
GnnStoreDir(Oid dbid, Oid owner, const char *name)
{
	size_t		n = strlen(name);
	char	   *hex = palloc(2 * n + 1);

	gnn_store_fsync = enableFsync;

	hex_encode(name, n, hex);
	hex[2 * n] = '\0';
	return psprintf(STORE_ROOT "/%u/%u_%s", dbid, owner, hex);
}

static void
MakeDir(const char *path)
{
	if (mkdir(path, S_IRWXU) != 0 && errno != EEXIST)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not create directory \"%s\": %m", path),
				 errhint("Load the graph with persist => false to keep it in memory only.")));
}

static void
ReportStoreError(const char *what, const char *name, const gnn_error *err)
{
	ereport(ERROR,
			(errcode(err->status == GNN_ERR_CORRUPT ? ERRCODE_DATA_CORRUPTED : ERRCODE_IO_ERROR),
			 errmsg("could not %s graph \"%s\" in the graph store: %s", what, name, err->msg),
			 errhint("Free disk space in the data directory, or load the graph with persist => false "
					 "(or SET gnn.persist_graphs = off) to keep it in memory only.")));
}

static bool RemoveFile(const char *dir, const char *file);

/*
 * Whether a load of graph name is stored: as persist says (1, 0, -1 =
 * gnn.persist_graphs), and always when the graph follows its tables: its
 * capture triggers outlive a restart, so the graph must too (it comes back
 * as of its last full version and its first refresh reloads it), or its
 * triggers would be left logging for a graph that is gone.
 */
bool
GnnStoreTrackedToo(const char *name, bool tracked, int persist)
{
	bool		stored = persist < 0 ? gnn_persist_graphs : persist > 0;

	if (tracked && !stored)
	{
		if (persist == 0)
			ereport(NOTICE,
					(errmsg("graph \"%s\" follows its tables, so it is stored in the graph store all the same", name),
					 errdetail("Its capture triggers outlive a restart, and so does the graph: it comes back as of its last full version, and its first refresh reloads it."),
					 errhint("Load it without track => true to keep it in memory only.")));
		stored = true;
	}
	return stored;
}

/*
 * Write proto's region as a pending graph.gnn of its graph: under a name of
 * its own ("pending-<pid>-<n>.gnn", returned), renamed over graph.gnn when
 * its transaction commits (GnnStoreCommitStaged), removed when it does not
 * (GnnStoreRemoveStaged; a crash's leftovers by the next scan).  The caller
 * holds the graph's lock, so loads of one name stage and commit in turn.
 * proto->generation must be set.
 */
char *
GnnStoreStage(GnnGraphEntry *proto, const void *region, uint64 size)
{
	static uint32 serial = 0;
	StoredMeta *meta;
	char	   *dir = GnnStoreDir(MyDatabaseId, proto->owner, proto->name);
	char	   *dbdir = psprintf(STORE_ROOT "/%u", MyDatabaseId);
	char	   *file = psprintf(PENDING_PREFIX "%d-%u.gnn", MyProcPid, ++serial);
	gnn_error	err;

	MakeDir(STORE_ROOT);
	MakeDir(dbdir);
	MakeDir(dir);
	meta = palloc0(sizeof(StoredMeta));
	meta->entry_size = sizeof(GnnGraphEntry);
	meta->entry = *proto;
	meta->entry.dbid = MyDatabaseId;
	meta->entry.stored = true;
	meta->entry.part_stored = false;
	if (gnn_store_write(dir, file, GNN_STORE_GRAPH, proto->generation, meta, sizeof(StoredMeta),
						region, size, &err) != GNN_OK)
		ReportStoreError("write", proto->name, &err);
	proto->stored = true;
	proto->part_stored = false;
	pfree(meta);
	return file;
}

/*
 * At commit: the staged file becomes the graph's graph.gnn, and the
 * partition of the version it replaces goes.  Never fails (a commit
 * callback): false, with a WARNING, when the rename did not happen.
 */
bool
GnnStoreCommitStaged(Oid dbid, Oid owner, const char *name, const char *staged)
{
	char	   *dir = GnnStoreDir(dbid, owner, name);
	char	   *from = psprintf("%s/%s", dir, staged);
	char	   *to = psprintf("%s/%s", dir, GRAPH_FILE);
	gnn_error	err;

	if (rename(from, to) != 0)
	{
		ereport(WARNING,
				(errcode_for_file_access(),
				 errmsg("graph \"%s\" was not written to the graph store: could not rename \"%s\" to \"%s\": %m",
						name, from, to),
				 errdetail("It is in memory, and goes with a restart.")));
		(void) gnn_store_unlink(from);
		return false;
	}
	(void) RemoveFile(dir, PART_FILE);
	if (gnn_store_sync_dir(dir, &err) != GNN_OK)
		ereport(WARNING,
				(errcode(ERRCODE_IO_ERROR),
				 errmsg("graph \"%s\": could not sync its store directory: %s", name, err.msg)));
	return true;
}

/* A staged file that will not commit goes (abort callbacks: warnings only). */
void
GnnStoreRemoveStaged(Oid dbid, Oid owner, const char *name, const char *staged)
{
	char	   *dir = GnnStoreDir(dbid, owner, name);

	(void) RemoveFile(dir, staged);
	/* a graph's first load that did not commit leaves no directory (rmdir keeps one that has files) */
	(void) rmdir(dir);
}

/* Write the partition the entry now has as partition.gnn (after publishing it). */
void
GnnStorePersistPartition(const GnnGraphEntry *e, const void *region, uint64 size)
{
	char	   *dir = GnnStoreDir(e->dbid, e->owner, e->name);
	gnn_error	err;

	if (gnn_store_write(dir, PART_FILE, GNN_STORE_PARTITION, e->generation, NULL, 0, region, size, &err) != GNN_OK)
		ereport(WARNING,
				(errcode(ERRCODE_IO_ERROR),
				 errmsg("the partition of graph \"%s\" was not written to the graph store: %s", e->name, err.msg),
				 errdetail("It is in memory, and goes with a restart.")));
}

/* whether dir/file was there and is gone */
static bool
RemoveFile(const char *dir, const char *file)
{
	char	   *path = psprintf("%s/%s", dir, file);
	bool		removed = gnn_store_unlink(path) == 0;

	if (!removed && errno != ENOENT)
		ereport(WARNING,
				(errcode_for_file_access(),
				 errmsg("could not remove \"%s\": %m", path)));
	pfree(path);
	return removed;
}

void
GnnStoreRemovePartition(Oid dbid, Oid owner, const char *name)
{
	char	   *dir = GnnStoreDir(dbid, owner, name);
	gnn_error	err;

	/* every persisting load calls this: the directory is synced only when something went */
	if (RemoveFile(dir, PART_FILE) | RemoveFile(dir, PART_FILE ".tmp"))
		(void) gnn_store_sync_dir(dir, &err);
	pfree(dir);
}

/* The graph's files go (drop, or it now follows its tables); a missing store is fine. */
void
GnnStoreRemove(Oid dbid, Oid owner, const char *name)
{
	char	   *dir = GnnStoreDir(dbid, owner, name);
	char	   *dbdir = psprintf(STORE_ROOT "/%u", dbid);
	struct stat st;
	gnn_error	err;

	if (stat(dir, &st) != 0)
		return;
	/* graph.gnn first: a crash part way leaves no graph rather than one without files */
	RemoveFile(dir, GRAPH_FILE);
	GnnStoreRetire(dbid, owner, name, 0, false);
	if (rmdir(dir) != 0 && errno != ENOENT)
		ereport(WARNING,
				(errcode_for_file_access(),
				 errmsg("could not remove directory \"%s\": %m", dir)));
	(void) gnn_store_sync_dir(dbdir, &err);
}

/* features-<16 hex digits>.gnn: the features file of one graph version, into buf */
#define FEAT_FILE_LEN 32
static char *
FeatFile(char *buf, uint64 generation)
{
	snprintf(buf, FEAT_FILE_LEN, "features-%016llx.gnn", (unsigned long long) generation);
	return buf;
}

/* whether file is a features file (or its temporary), and of which version */
static bool
ParseFeatFile(const char *file, uint64 *generation)
{
	char	   *end;

	if (strncmp(file, "features-", 9) != 0 || strlen(file) < 9 + 16 + 4)
		return false;
	*generation = strtoull(file + 9, &end, 16);
	return end == file + 9 + 16 && (strcmp(end, ".gnn") == 0 || strcmp(end, ".gnn.tmp") == 0);
}

/*
 * Remove the files of graph directory dir that no longer belong to its
 * graph: features files of versions other than keep (0: all of them),
 * temporaries and pending graph.gnn of loads that did not commit (a name's
 * loads hold its lock, so none is in progress when its graph is retired),
 * and with keep_graph false graph.gnn and partition.gnn too.
 * Readers that opened a features file keep reading it: unlinking leaves an
 * open file readable.  Returns whether anything went.  Used by the
 * postmaster's scan too: warnings only, never an error.
 */
static bool
RetireIn(const char *dir, uint64 keep, bool keep_graph)
{
	DIR		   *dd = opendir(dir);
	struct dirent *de;
	bool		removed = false;

	if (dd == NULL)
		return false;
	while ((de = readdir(dd)) != NULL)
	{
		uint64		gen;
		bool		go;

		if (de->d_name[0] == '.')
			continue;
		if (ParseFeatFile(de->d_name, &gen))
			go = gen != keep || strstr(de->d_name, ".tmp") != NULL;
		else if (strcmp(de->d_name, GRAPH_FILE) == 0 || strcmp(de->d_name, PART_FILE) == 0)
			go = !keep_graph;
		else
			go = strcmp(de->d_name, GRAPH_FILE ".tmp") == 0 || strcmp(de->d_name, PART_FILE ".tmp") == 0 ||
				strncmp(de->d_name, PENDING_PREFIX, strlen(PENDING_PREFIX)) == 0;
		if (go)
			removed |= RemoveFile(dir, de->d_name);
	}
	closedir(dd);
	return removed;
}

/* The graph's files that no longer belong to it go (RetireIn), the directory synced. */
void
GnnStoreRetire(Oid dbid, Oid owner, const char *name, uint64 keep, bool keep_graph)
{
	char	   *dir = GnnStoreDir(dbid, owner, name);
	gnn_error	err;

	if (RetireIn(dir, keep, keep_graph))
		(void) gnn_store_sync_dir(dir, &err);
	pfree(dir);
}

/*
 * A spilled load's rows for gnn_fstore_write_source, in passes: each pass
 * reads the spill file through once and keeps the file rows [lo, hi) of
 * the next chunks (maintenance_work_mem of them), so the writer holds that
 * much of the matrix, never all of it.  PostgreSQL errors here (a read, a
 * cancel) are kept and rethrown after the core has returned.
 */
typedef struct SpillSource
{
	const GnnFeatureSpill *spill;
	const int64 *file_row;		/* spill row -> file row */
	float	   *buf;			/* file rows [lo, hi) */
	float	   *skip;			/* one row read past */
	int64		lo,
				hi,
				cap;
	int			passes;
	MemoryContext mcxt;
	ErrorData  *error;
} SpillSource;

static gnn_status
SpillRows(void *arg, int64_t r0, int64_t n, const int64_t *src, float *out, gnn_error *err)
{
	SpillSource *ss = arg;
	const GnnFeatureSpill *sp = ss->spill;
	size_t		rb = sizeof(float) * (size_t) sp->dim;
	MemoryContext cur = CurrentMemoryContext;
	bool		failed = false;

	(void) src;
	if (r0 < ss->lo || r0 + n > ss->hi)
	{
		PG_TRY();
		{
			if (n > ss->cap || !ss->buf)
			{
				ss->cap = Max(ss->cap, n);
				if (ss->buf)
					pfree(ss->buf);
				ss->buf = MemoryContextAllocHuge(ss->mcxt, rb * (Size) ss->cap);
			}
			if (!ss->skip)
				ss->skip = MemoryContextAlloc(ss->mcxt, rb);
			ss->lo = r0;
			ss->hi = Min(sp->rows, r0 + ss->cap);
			if (BufFileSeek(sp->file, 0, 0, SEEK_SET) != 0)
				ereport(ERROR,
						(errcode_for_file_access(),
						 errmsg("could not rewind the load's temporary file of features: %m")));
			for (int64 j = 0; j < sp->rows; j++)
			{
				int64		f = ss->file_row[j];
				float	   *to = f >= ss->lo && f < ss->hi ? ss->buf + (size_t) (f - ss->lo) * sp->dim : ss->skip;

				if (BufFileRead(sp->file, to, rb) != rb)
					ereport(ERROR,
							(errcode_for_file_access(),
							 errmsg("could not read row %lld of the load's temporary file of features", (long long) j)));
				/*
				 * A cancel stops the write (an ERROR, caught here); a
				 * terminate waits for the end of the load: the caller
				 * holds a reservation of graph memory that only an ERROR
				 * gives back.
				 */
				if ((j & 4095) == 0 && QueryCancelPending && !ProcDiePending)
					CHECK_FOR_INTERRUPTS();
			}
			ss->passes++;
		}
		PG_CATCH();
		{
			MemoryContextSwitchTo(ss->mcxt);
			ss->error = CopyErrorData();
			FlushErrorState();
			MemoryContextSwitchTo(cur);
			failed = true;
		}
		PG_END_TRY();
		if (failed)
			return gnn_error_set(err, GNN_ERR_CANCELLED, "reading the load's temporary file of features failed");
	}
	memcpy(out, ss->buf + (size_t) (r0 - ss->lo) * sp->dim, rb * (size_t) n);
	return GNN_OK;
}

/*
 * Write the features file of proto's version (proto->generation set; the
 * caller holds the graph's lock): node v's row is row src_row[v] of feat,
 * or of the spill file when the load spilled them; rows ordered by part then
 * degree (gnn_fstore_locality_order; g: the region built without them).
 */
void
GnnStoreWriteFeatures(const GnnGraphEntry *proto, const gnn_graph *g, const float *feat,
					  const GnnFeatureSpill *spill, const int64 *src_row, int32 dim)
{
	char	   *dir = GnnStoreDir(MyDatabaseId, proto->owner, proto->name);
	char	   *dbdir = psprintf(STORE_ROOT "/%u", MyDatabaseId);
	char		file[FEAT_FILE_LEN];
	int32	   *order;
	gnn_error	err;
	gnn_status	st;
	SpillSource ss = {0};

	MakeDir(STORE_ROOT);
	MakeDir(dbdir);
	MakeDir(dir);
	order = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(int32) * (Size) (g->num_nodes + 1));
	st = gnn_fstore_locality_order(g, GNN_FSTORE_PART_NODES, order, &err);
	if (st == GNN_OK && spill)
	{
		int64	   *file_row = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(int64) * (Size) (spill->rows + 1));

		if (spill->rows != g->num_nodes)
			elog(ERROR, "graph \"%s\": %lld spilled feature rows for %lld nodes", proto->name,
				 (long long) spill->rows, (long long) g->num_nodes);
		for (int64 r = 0; r < g->num_nodes; r++)
			file_row[src_row[order[r]]] = r;
		ss.spill = spill;
		ss.file_row = file_row;
		ss.cap = Max((int64) 1, Min(g->num_nodes,
									(int64) ((uint64) maintenance_work_mem * 1024 / (sizeof(float) * (uint64) dim))));
		ss.mcxt = CurrentMemoryContext;
		st = gnn_fstore_write_source(dir, FeatFile(file, proto->generation), proto->generation,
									 (const int64_t *) src_row, g->num_nodes, dim, order, SpillRows, &ss, &err);
		if (ss.error)
			ReThrowError(ss.error);
		if (ss.buf)
			pfree(ss.buf);
		pfree(file_row);
		elog(DEBUG1, "graph \"%s\": features written from the load's temporary file in %d passes",
			 proto->name, ss.passes);
	}
	else if (st == GNN_OK)
		st = gnn_fstore_write_file(dir, FeatFile(file, proto->generation), proto->generation, feat,
								   (const int64_t *) src_row, g->num_nodes, dim, order, &err);
	if (st != GNN_OK)
		ereport(ERROR,
				(errcode(err.status == GNN_ERR_NOMEM ? ERRCODE_OUT_OF_MEMORY : ERRCODE_IO_ERROR),
				 errmsg("could not write the features of graph \"%s\" to the graph store: %s", proto->name, err.msg),
				 errhint("Free disk space in the data directory, or load the graph with feature_store => 'memory'.")));
	pfree(order);
	pfree(dir);
}

/* Remove the features file of one version (a load that failed after writing it). */
void
GnnStoreRemoveFeatures(Oid dbid, Oid owner, const char *name, uint64 generation)
{
	char	   *dir = GnnStoreDir(dbid, owner, name);
	char		file[FEAT_FILE_LEN];

	(void) RemoveFile(dir, FeatFile(file, generation));
	(void) rmdir(dir);			/* when it was the only file */
	pfree(dir);
}

/* ------------------------------------------------------------------ features: per process */

/*
 * The features files this process has open, each with its cache: one per
 * graph version in use.  A version stays open while the registry still has
 * it, or while this process keeps its mapping (a training job); others close
 * at the end of a transaction.
 */
#define MAX_OPEN_FEATURES 16

typedef struct OpenFeatures
{
	bool		used;
	Oid			dbid;
	Oid			owner;
	char		name[GNN_GRAPH_NAME_LEN];
	uint64		generation;
	gnn_fstore *fs;
	dsm_segment *cache;			/* the version's shared cache, mapped here (NULL: none) */
} OpenFeatures;

static OpenFeatures open_feats[MAX_OPEN_FEATURES];
static void Refuse(const char *name, Oid owner, uint64 generation, bool mark, const char *why) pg_attribute_noreturn();
static bool feats_callback = false;
static uint64 kept_feat_generation = 0;	/* the version a kept mapping reads */

/* A version whose features cannot be read is invalid for every session, mapped or not (the first reason stays). */
static void
MarkFeaturesInvalid(const char *name, Oid owner, uint64 generation, const char *why)
{
	GnnGraphEntry *e;

	LWLockAcquire(gnn_shared->lock, LW_EXCLUSIVE);
	e = GnnGraphEntryOf(name, owner);
	if (e && e->generation == generation && !e->store_error[0])
		strlcpy(e->store_error, why, sizeof(e->store_error));
	LWLockRelease(gnn_shared->lock);
}

static void
FeaturesXactCallback(XactEvent event, void *arg)
{
	if (event != XACT_EVENT_COMMIT && event != XACT_EVENT_ABORT &&
		event != XACT_EVENT_PARALLEL_COMMIT && event != XACT_EVENT_PARALLEL_ABORT)
		return;
	for (int i = 0; i < MAX_OPEN_FEATURES; i++)
	{
		OpenFeatures *o = &open_feats[i];
		GnnGraphEntry *e;
		const char *bad;
		bool		live;

		if (!o->used)
			continue;
		/* a block that failed its checksum */
		if ((bad = gnn_fstore_corrupt(o->fs)) != NULL)
			MarkFeaturesInvalid(o->name, o->owner, o->generation, bad);
		if (o->generation == kept_feat_generation)
			continue;			/* a training job still reads it */
		LWLockAcquire(gnn_shared->lock, LW_SHARED);
		e = GnnGraphEntryOf(o->name, o->owner);
		live = e && e->generation == o->generation && !e->store_error[0];
		LWLockRelease(gnn_shared->lock);
		if (!live)
		{
			gnn_fstore_close(o->fs);
			if (o->cache)
				dsm_detach(o->cache);
			memset(o, 0, sizeof(*o));
		}
	}
}

/* A kept mapping (a training job) reads this version beyond its transaction. */
void
GnnFeaturesKeep(uint64 generation)
{
	kept_feat_generation = generation;
}

/* the most rows of dim floats a cache block of at most bytes holds, up to want */
static int64
CacheRowsFitting(int64 nodes, int32 dim, int64 want, uint64 bytes)
{
	uint64		fixed = gnn_fcache_bytes(nodes, dim, 0) + 5 * 64;
	uint64		per = sizeof(float) * (uint64) dim + 3 * sizeof(int32) + 1;
	int64		cap = bytes > fixed ? (int64) Min((uint64) want, (bytes - fixed) / per) : 0;

	while (cap > 0 && gnn_fcache_bytes(nodes, dim, cap) > bytes)
		cap--;
	return cap;
}

/*
 * Version ve's shared row cache, mapped in this process for as long as it
 * keeps the store open: made by the first process that uses the version
 * (under the registry lock, so there is one), of gnn.feature_cache_size of
 * rows or what gnn.max_graph_memory has room for, counted there and pinned
 * until the version goes (EntryRetire).  NULL: none, and every row comes
 * from the file (this session's gnn.feature_cache_size is 0, there is no
 * room, or the version was just replaced).
 */
static dsm_segment *
SharedCache(const GnnGraphEntry *ve, gnn_fstore *fs)
{
	int64		want = (int64) Min((uint64) ve->nodes,
								   (uint64) gnn_feature_cache_kb * 1024 / (sizeof(float) * (uint64) Max(ve->feat_dim, 1)));
	int64		cap = 0;
	bool		made = false,
				tried = false,
				current;
	uint64		room = 0;
	GnnGraphEntry *e;
	dsm_segment *seg = NULL;
	gnn_error	err;

	if (want <= 0)
		return NULL;
	LWLockAcquire(gnn_shared->lock, LW_EXCLUSIVE);
	e = GnnGraphEntryOf(ve->name, ve->owner);
	current = e && e->generation == ve->generation && !e->store_error[0];
	if (current)
	{
		if (e->cache_handle != DSM_HANDLE_INVALID)
			seg = GnnDsmAttach(e->cache_handle);
		else
		{
			uint64		limit = (uint64) gnn_max_graph_memory_mb * 1024 * 1024;

			tried = true;
			room = limit > gnn_shared->graph_bytes ? limit - gnn_shared->graph_bytes : 0;
			cap = CacheRowsFitting(e->nodes, e->feat_dim, want, room);
			if (cap > 0)
			{
				size_t		bytes = gnn_fcache_bytes(e->nodes, e->feat_dim, cap);

				seg = GnnDsmCreate(bytes, DSM_CREATE_NULL_IF_MAXSEGMENTS);
				if (seg && gnn_fcache_init(dsm_segment_address(seg), bytes, e->nodes, e->feat_dim, cap, true,
										   &err) != GNN_OK)
				{
					dsm_detach(seg);
					seg = NULL;
				}
				if (seg)
				{
					dsm_pin_segment(seg);
					e->cache_handle = dsm_segment_handle(seg);
					e->cache_bytes = bytes;
					gnn_shared->graph_bytes += bytes;
					made = true;
				}
			}
		}
	}
	LWLockRelease(gnn_shared->lock);
	if (seg)
	{
		dsm_pin_mapping(seg);	/* the store stays open across transactions */
		if (gnn_fstore_use_cache(fs, dsm_segment_address(seg), dsm_segment_map_length(seg), &err) != GNN_OK)
		{
			dsm_detach(seg);
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("graph \"%s\": its shared feature cache does not fit its features: %s", ve->name, err.msg)));
		}
	}
	if (made && cap < want)
		ereport(NOTICE,
				(errmsg("graph \"%s\": its feature cache holds %lld rows, not the %lld gnn.feature_cache_size asks for",
						ve->name, (long long) cap, (long long) want),
				 errdetail("gnn.max_graph_memory has %llu bytes left.", (unsigned long long) room),
				 errhint("Drop graphs you no longer need, or raise gnn.max_graph_memory.")));
	else if (!seg && tried && cap == 0)
		ereport(NOTICE,
				(errmsg("graph \"%s\": no room for a feature cache; every feature row is read from disk", ve->name),
				 errdetail("gnn.max_graph_memory has %llu bytes left.", (unsigned long long) room),
				 errhint("Drop graphs you no longer need, or raise gnn.max_graph_memory.")));
	return seg;
}

/* this process's open features file of e's version, or NULL */
static OpenFeatures *
OpenFeaturesOf(const GnnGraphEntry *e)
{
	for (int i = 0; i < MAX_OPEN_FEATURES; i++)
		if (open_feats[i].used && open_feats[i].dbid == e->dbid && open_feats[i].owner == e->owner &&
			open_feats[i].generation == e->generation && strcmp(open_feats[i].name, e->name) == 0)
			return &open_feats[i];
	return NULL;
}

/* The graph view g of entry e reads its features from disk, through the version's shared cache. */
void
GnnFeaturesAttach(const GnnGraphEntry *e, gnn_graph *g)
{
	OpenFeatures *o;
	gnn_error	err;

	if (e->store_error[0])
		Refuse(e->name, e->owner, e->generation, false, e->store_error);
	o = OpenFeaturesOf(e);
	if (!o)
	{
		char	   *dir = GnnStoreDir(e->dbid, e->owner, e->name);
		char		file[FEAT_FILE_LEN];
		char	   *path = psprintf("%s/%s", dir, FeatFile(file, e->generation));
		gnn_fstore *fs;
		gnn_status	st;

		for (int i = 0; i < MAX_OPEN_FEATURES && !o; i++)
			if (!open_feats[i].used)
				o = &open_feats[i];
		if (!o)
			ereport(ERROR,
					(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
					 errmsg("too many graphs with features on disk in use in one session (at most %d)", MAX_OPEN_FEATURES),
					 errhint("Use fewer such graphs in one transaction.")));
		if (!feats_callback)
		{
			RegisterXactCallback(FeaturesXactCallback, NULL);
			feats_callback = true;
		}
		st = gnn_fstore_open_file(path, e->generation, 0, true, &fs, &err);
		if (st == GNN_ERR_NOMEM)
			ereport(ERROR,
					(errcode(ERRCODE_OUT_OF_MEMORY),
					 errmsg("graph \"%s\": out of memory opening its features: %s", e->name, err.msg)));
		if (st != GNN_OK)
		{
			MarkFeaturesInvalid(e->name, e->owner, e->generation, err.msg);
			Refuse(e->name, e->owner, e->generation, false, err.msg);
		}
		if (gnn_fstore_rows(fs) != e->nodes || gnn_fstore_dim(fs) != e->feat_dim)
		{
			char	   *why = psprintf("%s holds %lld rows of %d features, the graph has %lld of %d", path,
									   (long long) gnn_fstore_rows(fs), gnn_fstore_dim(fs),
									   (long long) e->nodes, e->feat_dim);

			gnn_fstore_close(fs);	/* after the message reads its shape */
			MarkFeaturesInvalid(e->name, e->owner, e->generation, why);
			Refuse(e->name, e->owner, e->generation, false, why);
		}
		PG_TRY();
		{
			o->cache = SharedCache(e, fs);
		}
		PG_CATCH();
		{
			gnn_fstore_close(fs);
			PG_RE_THROW();
		}
		PG_END_TRY();
		o->used = true;
		o->dbid = e->dbid;
		o->owner = e->owner;
		strlcpy(o->name, e->name, sizeof(o->name));
		o->generation = e->generation;
		o->fs = fs;
		pfree(path);
		pfree(dir);
	}
	g->feat = NULL;
	g->feat_kind = GNN_FEAT_DENSE;
	g->feat_dim = e->feat_dim;
	g->fstore = o->fs;
}

/* ------------------------------------------------------------------ startup */

/* a free registry slot, or NULL */
/* "<owner>_<hex>" into owner and name; false if it is not one of ours */
static bool
ParseGraphDir(const char *d, Oid *owner, char *name)
{
	char	   *end;
	unsigned long o = strtoul(d, &end, 10);
	size_t		hl;

	if (end == d || *end != '_' || o == 0 || o > PG_UINT32_MAX)
		return false;
	end++;
	hl = strlen(end);
	if (hl == 0 || hl % 2 != 0 || hl / 2 >= GNN_GRAPH_NAME_LEN)
		return false;
	for (size_t i = 0; i < hl; i++)
		if (!isxdigit((unsigned char) end[i]))
			return false;
	for (size_t i = 0; i < hl / 2; i++)
	{
		int			hi = end[2 * i],
					lo = end[2 * i + 1];

		hi = isdigit(hi) ? hi - '0' : tolower(hi) - 'a' + 10;
		lo = isdigit(lo) ? lo - '0' : tolower(lo) - 'a' + 10;
		name[i] = (char) (hi * 16 + lo);
	}
	name[hl / 2] = '\0';
	if (strlen(name) != hl / 2)
		return false;			/* an embedded NUL */
	*owner = (Oid) o;
	return true;
}

/* register one graph directory's graph, unmapped (or invalid with the reason) */
static void
ScanGraph(Oid dbid, const char *dbpath, const char *d)
{
	char		path[MAXPGPATH],
				name[GNN_GRAPH_NAME_LEN];
	Oid			owner;
	StoredMeta	meta;
	gnn_store_header h;
	gnn_error	err;
	GnnGraphEntry *e;

	if (!ParseGraphDir(d, &owner, name))
		return;
	/* a write a crash interrupted */
	snprintf(path, sizeof(path), "%s/%s/%s.tmp", dbpath, d, GRAPH_FILE);
	(void) unlink(path);
	snprintf(path, sizeof(path), "%s/%s/%s.tmp", dbpath, d, PART_FILE);
	(void) unlink(path);
	snprintf(path, sizeof(path), "%s/%s/%s", dbpath, d, GRAPH_FILE);
	if (access(path, F_OK) != 0)
	{
		/* a drop that did not finish, or the features of a graph kept in memory only */
		snprintf(path, sizeof(path), "%s/%s", dbpath, d);
		(void) RetireIn(path, 0, false);
		(void) rmdir(path);
		return;
	}
	if ((e = GnnRegistryFreeSlot()) == NULL)
	{
		elog(LOG, "gnn: graph store: no registry slot for graph \"%s\" (gnn.max_graphs = %d); it stays on disk",
			 name, gnn_shared->max_graphs);
		return;
	}
	memset(e, 0, sizeof(*e));
	memset(&meta, 0, sizeof(meta));
	if (gnn_store_read_header(path, &h, &meta, sizeof(meta), &err) == GNN_OK)
	{
		if (h.kind != GNN_STORE_GRAPH || h.meta_len != sizeof(StoredMeta) ||
			meta.entry_size != sizeof(GnnGraphEntry))
			gnn_error_set(&err, GNN_ERR_CORRUPT,
						  "\"%s\" was written by another build of gnn (metadata of %llu bytes, this build's %zu)",
						  path, (unsigned long long) h.meta_len, sizeof(StoredMeta));
		else if (meta.entry.dbid != dbid || meta.entry.owner != owner ||
				 strncmp(meta.entry.name, name, GNN_GRAPH_NAME_LEN) != 0 ||
				 meta.entry.generation != h.generation)
			gnn_error_set(&err, GNN_ERR_CORRUPT, "\"%s\" describes another graph than its directory names", path);
		else
			err.status = GNN_OK;
	}
	if (err.status == GNN_OK)
	{
		char		gpath[MAXPGPATH];

		*e = meta.entry;
		snprintf(gpath, sizeof(gpath), "%s/%s", dbpath, d);
		(void) RetireIn(gpath, e->feat_disk ? e->generation : 0, true);
		if (e->feat_disk)
		{
			gnn_store_header fh;
			char		fpath[MAXPGPATH],
						file[FEAT_FILE_LEN];

			snprintf(fpath, sizeof(fpath), "%s/%s", gpath, FeatFile(file, e->generation));
			if (gnn_store_read_header(fpath, &fh, NULL, 0, &err) == GNN_OK &&
				(fh.kind != GNN_STORE_FEATURES || fh.generation != e->generation ||
				 fh.payload_len != (uint64) e->nodes * sizeof(float) * (uint64) e->feat_dim))
				gnn_error_set(&err, GNN_ERR_CORRUPT, "\"%s\" does not hold this graph's features", fpath);
			if (err.status != GNN_OK)
			{
				strlcpy(e->store_error, err.msg, sizeof(e->store_error));
				elog(WARNING, "gnn: graph store: graph \"%s\" is refused: %s", name, err.msg);
			}
			err.status = GNN_OK;
		}
	}
	else
	{
		snprintf(path, sizeof(path), "%s/%s", dbpath, d);
		(void) RetireIn(path, 0, true);
		strlcpy(e->name, name, sizeof(e->name));
		strlcpy(e->store_error, err.msg, sizeof(e->store_error));
		elog(WARNING, "gnn: graph store: graph \"%s\" is refused: %s", name, err.msg);
	}
	e->in_use = true;
	e->dbid = dbid;
	e->owner = owner;
	e->stored = true;
	e->handle = DSM_HANDLE_INVALID;
	e->delta_handle = DSM_HANDLE_INVALID;
	e->delta_bytes = 0;
	e->cache_handle = DSM_HANDLE_INVALID;
	e->cache_bytes = 0;
	e->part_handle = DSM_HANDLE_INVALID;
	e->part_bytes = 0;
	e->holders = 0;
	/* it follows its tables still (its triggers are there); its refreshes since the file are not */
	e->reload_at_refresh = e->tracked;
	if (err.status == GNN_OK)
	{
		gnn_store_header ph;

		e->bytes = h.payload_len;
		snprintf(path, sizeof(path), "%s/%s/%s", dbpath, d, PART_FILE);
		e->part_stored = access(path, F_OK) == 0 &&
			gnn_store_read_header(path, &ph, NULL, 0, &err) == GNN_OK &&
			ph.kind == GNN_STORE_PARTITION && ph.generation == e->generation;
		if (!e->part_stored)
		{
			e->part_parts = 0;
			e->part_method[0] = '\0';
		}
		if (e->generation >= gnn_shared->next_generation)
			gnn_shared->next_generation = e->generation + 1;
	}
	else
		e->bytes = 0;
}

/* the database's directory is there (its default tablespace: base/, or pg_tblspc/) */
static bool
DatabaseExists(Oid db)
{
	char		path[MAXPGPATH];
	DIR		   *ts;
	struct dirent *te;
	bool		found = false;

	snprintf(path, sizeof(path), "base/%u", db);
	if (access(path, F_OK) == 0)
		return true;
	if ((ts = opendir("pg_tblspc")) == NULL)
		return false;
	while (!found && (te = readdir(ts)) != NULL)
	{
		if (te->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "pg_tblspc/%s/%s/%u", te->d_name, TABLESPACE_VERSION_DIRECTORY, db);
		found = access(path, F_OK) == 0;
	}
	closedir(ts);
	return found;
}

/* remove a database's store directory: its graph directories' files, then them */
static void
RemoveTree(const char *dbpath)
{
	DIR		   *dd = opendir(dbpath);
	struct dirent *ge;

	if (dd == NULL)
		return;
	while ((ge = readdir(dd)) != NULL)
	{
		char		gpath[MAXPGPATH];
		DIR		   *gd;
		struct dirent *fe;

		if (ge->d_name[0] == '.')
			continue;
		snprintf(gpath, sizeof(gpath), "%s/%s", dbpath, ge->d_name);
		if ((gd = opendir(gpath)) != NULL)
		{
			while ((fe = readdir(gd)) != NULL)
				if (fe->d_name[0] != '.')
				{
					char		fpath[MAXPGPATH];

					snprintf(fpath, sizeof(fpath), "%s/%s", gpath, fe->d_name);
					(void) unlink(fpath);
				}
			closedir(gd);
		}
		(void) rmdir(gpath);
	}
	closedir(dd);
	(void) rmdir(dbpath);
}

/*
 * At shared-memory initialisation (postmaster start, crash restart): register
 * every stored graph, unmapped.  Never raises an error: a server must start
 * whatever the store holds; what cannot be used is logged and shown invalid.
 */
void
GnnStoreScan(void)
{
	DIR		   *root = opendir(STORE_ROOT);
	struct dirent *de;
	int			ngraphs = 0;

	if (root == NULL)
		return;
	while ((de = readdir(root)) != NULL)
	{
		char	   *end;
		unsigned long db = strtoul(de->d_name, &end, 10);
		char		dbpath[MAXPGPATH];
		DIR		   *dd;
		struct dirent *ge;

		if (end == de->d_name || *end != '\0' || db == 0 || db > PG_UINT32_MAX)
			continue;
		snprintf(dbpath, sizeof(dbpath), STORE_ROOT "/%s", de->d_name);
		if (!DatabaseExists((Oid) db))
		{
			RemoveTree(dbpath);
			elog(LOG, "gnn: graph store: removed the graphs of database %lu, which no longer exists", db);
			continue;
		}
		if ((dd = opendir(dbpath)) == NULL)
			continue;
		while ((ge = readdir(dd)) != NULL)
			if (ge->d_name[0] != '.')
			{
				ScanGraph((Oid) db, dbpath, ge->d_name);
				ngraphs++;
			}
		closedir(dd);
	}
	closedir(root);
	if (ngraphs > 0)
		elog(LOG, "gnn: graph store: %d stored graph%s registered, mapped on first use", ngraphs,
			 ngraphs == 1 ? "" : "s");
}

/* ------------------------------------------------------------------ mapping on first use */

/* mark the entry of this generation invalid with the reason (caller holds no lock) */
static void
MarkInvalid(const char *name, Oid owner, uint64 generation, const char *why)
{
	GnnGraphEntry *e;

	LWLockAcquire(gnn_shared->lock, LW_EXCLUSIVE);
	e = GnnGraphEntryOf(name, owner);
	if (e && e->generation == generation && e->handle == DSM_HANDLE_INVALID)
		strlcpy(e->store_error, why, sizeof(e->store_error));
	LWLockRelease(gnn_shared->lock);
}

/* the graph's files failed a check: marked invalid (mark) with why, and an error */
static void
pg_attribute_noreturn()
Refuse(const char *name, Oid owner, uint64 generation, bool mark, const char *why)
{
	if (mark)
		MarkInvalid(name, owner, generation, why);
	ereport(ERROR,
			(errcode(ERRCODE_DATA_CORRUPTED),
			 errmsg("graph \"%s\" cannot be used: its stored files failed their checks", name),
			 errdetail("%s", why),
			 errhint("Drop it with gnn.drop_graph('%s') and load it again.", name)));
}

/* read a checked store file's payload into a new DSM segment (reserved against the limit) */
static dsm_segment *
ReadSegment(const char *path, const char *name, Oid owner, uint64 generation, gnn_store_kind kind,
			uint64 *reserved)
{
	gnn_store_header h;
	gnn_error	err;
	dsm_segment *seg;

	*reserved = 0;
	if (gnn_store_read_header(path, &h, NULL, 0, &err) != GNN_OK ||
		(h.kind != (uint32) kind &&
		 gnn_error_set(&err, GNN_ERR_CORRUPT, "\"%s\" holds the wrong kind of data", path)) ||
		(h.generation != generation &&
		 gnn_error_set(&err, GNN_ERR_CORRUPT, "\"%s\" is of another version of the graph", path)) ||
		(h.payload_len == 0 && gnn_error_set(&err, GNN_ERR_CORRUPT, "\"%s\" is empty", path)))
	{
		Refuse(name, owner, generation, kind == GNN_STORE_GRAPH, err.msg);
	}
	*reserved = GnnGraphReserve(h.payload_len, name);
	seg = GnnDsmCreate(h.payload_len, DSM_CREATE_NULL_IF_MAXSEGMENTS);
	if (seg == NULL)
	{
		GnnGraphUnreserve(*reserved);
		*reserved = 0;
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("could not map graph \"%s\": too many dynamic shared memory segments", name)));
	}
	if (gnn_store_read_payload(path, &h, dsm_segment_address(seg), &err) != GNN_OK)
	{
		GnnGraphUnreserve(*reserved);
		*reserved = 0;
		dsm_detach(seg);
		Refuse(name, owner, generation, kind == GNN_STORE_GRAPH, err.msg);
	}
	return seg;
}

/*
 * Map the stored, unmapped graph name of owner into shared memory: its
 * region read and checked, its partition too when it has one, then published
 * in the entry unless another backend mapped it (or it was dropped or
 * replaced) meanwhile.  false: nothing to do (not stored, or mapped already).
 * An invalid store is an error.
 */
bool
GnnStoreMap(const char *name, Oid owner)
{
	GnnGraphEntry copy;
	GnnGraphEntry *e;
	char	   *dir,
			   *path;
	dsm_segment *seg,
			   *pseg = NULL;
	uint64		reserved,
				preserved = 0;
	gnn_graph	g;
	gnn_error	err;
	MemoryContext cxt = CurrentMemoryContext;

	LWLockAcquire(gnn_shared->lock, LW_SHARED);
	e = GnnGraphEntryOf(name, owner);
	if (e == NULL || e->handle != DSM_HANDLE_INVALID || !e->stored)
	{
		LWLockRelease(gnn_shared->lock);
		return false;
	}
	copy = *e;
	LWLockRelease(gnn_shared->lock);
	if (copy.store_error[0])
		Refuse(name, owner, copy.generation, false, copy.store_error);
	dir = GnnStoreDir(MyDatabaseId, owner, name);
	path = psprintf("%s/%s", dir, GRAPH_FILE);
	seg = ReadSegment(path, name, owner, copy.generation, GNN_STORE_GRAPH, &reserved);
	/* the checksum says the bytes are the ones written; the region's own checks say they make a graph */
	if (gnn_graph_attach(dsm_segment_address(seg), dsm_segment_map_length(seg), &g, &err) != GNN_OK)
	{
		GnnGraphUnreserve(reserved);
		dsm_detach(seg);
		MarkInvalid(name, owner, copy.generation, err.msg);
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("graph \"%s\" cannot be used: its stored region is not a valid graph", name),
				 errdetail("%s", err.msg),
				 errhint("Drop it with gnn.drop_graph('%s') and load it again.", name)));
	}
	if (copy.part_stored)
	{
		char	   *ppath = psprintf("%s/%s", dir, PART_FILE);
		volatile uint64 pres = 0;
		dsm_segment *volatile ps = NULL;
		const GnnPartitionHeader *ph;

		PG_TRY();
		{
			uint64		r;

			ps = ReadSegment(ppath, name, owner, copy.generation, GNN_STORE_PARTITION, &r);
			pres = r;
			ph = dsm_segment_address(ps);
			if (dsm_segment_map_length(ps) < offsetof(GnnPartitionHeader, part) || ph->magic != GNN_PART_MAGIC ||
				ph->nodes != g.num_nodes || ph->parts < 1 || ph->generation != copy.generation ||
				dsm_segment_map_length(ps) < offsetof(GnnPartitionHeader, part) + sizeof(int32) * (uint64) ph->nodes)
				ereport(ERROR,
						(errcode(ERRCODE_DATA_CORRUPTED),
						 errmsg("graph \"%s\": its stored partition does not match the graph", name),
						 errhint("Run gnn.partition('%s', parts) again.", name)));
		}
		PG_CATCH();
		{
			/* the graph is fine without it: used, with a warning, unpartitioned */
			ErrorData  *ed;

			MemoryContextSwitchTo(cxt);
			ed = CopyErrorData();
			FlushErrorState();
			if (pres)
				GnnGraphUnreserve(pres);
			if (ps)
				dsm_detach(ps);
			pres = 0;
			ps = NULL;
			ereport(WARNING,
					(errcode(ed->sqlerrcode),
					 errmsg("graph \"%s\": its stored partition is not used: %s", name, ed->message),
					 ed->detail ? errdetail("%s", ed->detail) : 0,
					 errhint("Run gnn.partition('%s', parts) again.", name)));
			FreeErrorData(ed);
		}
		PG_END_TRY();
		pseg = ps;
		preserved = pres;
	}
	LWLockAcquire(gnn_shared->lock, LW_EXCLUSIVE);
	e = GnnGraphEntryOf(name, owner);
	if (e && e->handle == DSM_HANDLE_INVALID && e->generation == copy.generation && !e->store_error[0])
	{
		dsm_pin_segment(seg);
		e->handle = dsm_segment_handle(seg);
		e->bytes = reserved;
		GnnGraphReservationOwned(reserved);
		reserved = 0;
		if (pseg)
		{
			const GnnPartitionHeader *ph = dsm_segment_address(pseg);

			dsm_pin_segment(pseg);
			e->part_handle = dsm_segment_handle(pseg);
			e->part_bytes = preserved;
			GnnGraphReservationOwned(preserved);
			e->part_parts = ph->parts;
			strlcpy(e->part_method, gnn_part_method_name((gnn_part_method) ph->method), sizeof(e->part_method));
			preserved = 0;
		}
	}
	LWLockRelease(gnn_shared->lock);
	/* what was not published (another backend was first) goes with its mapping */
	if (reserved)
		GnnGraphUnreserve(reserved);
	if (preserved)
		GnnGraphUnreserve(preserved);
	dsm_detach(seg);
	if (pseg)
		dsm_detach(pseg);
	return true;
}

/* ------------------------------------------------------------------ gnn.graphs */

/*
 * The (graph text, owner regrole) arguments of the per-graph functions the
 * views join laterally (gnn._graph_store, _graph_tracking, _feature_cache):
 * false (the caller returns NULL) for a NULL argument or an owner whose
 * graphs the current role may not see (its own, a superuser's every role's,
 * a member's the role's).
 */
bool
GnnGraphRowArgs(FunctionCallInfo fcinfo, char **name, Oid *owner, TupleDesc *tupdesc)
{
	if (PG_ARGISNULL(0) || PG_ARGISNULL(1))
		return false;
	*name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	*owner = PG_GETARG_OID(1);
	if (get_call_result_type(fcinfo, NULL, tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	GnnRequirePreload();
	return *owner == GetUserId() || superuser() || has_privs_of_role(GetUserId(), *owner);
}

PG_FUNCTION_INFO_V1(gnn_graph_store);

/* persisted, state, store_error of one graph (gnn._graph_store) */
Datum
gnn_graph_store(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	Datum		values[4];
	bool		nulls[4] = {0};
	char	   *name;
	Oid			owner;
	GnnGraphEntry *x;
	GnnGraphEntry e;
	bool		found;

	if (!GnnGraphRowArgs(fcinfo, &name, &owner, &tupdesc))
		PG_RETURN_NULL();
	LWLockAcquire(gnn_shared->lock, LW_SHARED);
	x = GnnGraphEntryOf(name, owner);
	found = x != NULL;
	if (found)
		e = *x;
	LWLockRelease(gnn_shared->lock);
	if (!found)
		PG_RETURN_NULL();
	values[0] = BoolGetDatum(e.stored);
	values[1] = CStringGetTextDatum(e.store_error[0] ? "invalid" : e.handle == DSM_HANDLE_INVALID ? "disk" : "memory");
	if (e.store_error[0])
		values[2] = CStringGetTextDatum(e.store_error);
	else
		nulls[2] = true;
	if (e.feat_kind != GNN_FEAT_NONE)
		values[3] = CStringGetTextDatum(e.feat_disk ? "disk" : "memory");
	else
		nulls[3] = true;
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(tupdesc), values, nulls)));
}

PG_FUNCTION_INFO_V1(gnn_feature_cache);

/*
 * One graph's shared feature cache (gnn._feature_cache, the view
 * gnn.feature_caches): its size, what it holds and every process's hits and
 * misses since it was made; NULL when the graph has none (features in
 * memory, or not used since it was loaded or the server started).
 */
Datum
gnn_feature_cache(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	Datum		values[7];
	bool		nulls[7] = {0};
	char	   *name;
	Oid			owner;
	GnnGraphEntry *e;
	dsm_segment *seg = NULL;
	gnn_fcache_info info;
	bool		have = false;

	if (!GnnGraphRowArgs(fcinfo, &name, &owner, &tupdesc))
		PG_RETURN_NULL();
	LWLockAcquire(gnn_shared->lock, LW_SHARED);
	e = GnnGraphEntryOf(name, owner);
	if (e && e->cache_handle != DSM_HANDLE_INVALID)
	{
		/* this process's mapping, or a look through a new one (pinned: it exists while the entry has it) */
		OpenFeatures *o = OpenFeaturesOf(e);

		if (o && o->cache)
		{
			gnn_fcache_get_info(dsm_segment_address(o->cache), &info);
			have = true;
		}
		else if ((seg = GnnDsmAttach(e->cache_handle)) != NULL)
		{
			gnn_fcache_get_info(dsm_segment_address(seg), &info);
			have = true;
		}
	}
	LWLockRelease(gnn_shared->lock);
	if (seg)
		dsm_detach(seg);
	if (!have)
		PG_RETURN_NULL();
	values[0] = Int64GetDatum(info.capacity);
	values[1] = Int64GetDatum(info.used);
	values[2] = Int64GetDatum((int64) info.bytes);
	values[3] = Int64GetDatum(info.hits);
	values[4] = Int64GetDatum(info.misses);
	values[5] = Int64GetDatum(info.evictions);
	if (info.hits + info.misses > 0)
		values[6] = Float8GetDatum((double) info.hits / (double) (info.hits + info.misses));
	else
		nulls[6] = true;
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(tupdesc), values, nulls)));
}

/* ------------------------------------------------------------------ DROP EXTENSION */

/*
 * Dropping the extension in a database drops that database's graphs, from
 * shared memory and from the store, and stops its jobs, when the dropping
 * transaction commits (a rolled-back DROP EXTENSION changes nothing).
 */
static object_access_hook_type prev_object_access = NULL;
static bool drop_pending = false;
static Oid	drop_extoid = InvalidOid;
static bool drop_callback = false;

static void
StoreXactCallback(XactEvent event, void *arg)
{
	if (!drop_pending)
		return;
	if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_PARALLEL_COMMIT)
	{
		char	   *dbdir = psprintf(STORE_ROOT "/%u", MyDatabaseId);
		DIR		   *dd;
		struct dirent *de;

		drop_pending = false;
		GnnJobsStopExtension(drop_extoid);
		GnnGraphDropDatabase(MyDatabaseId);
		if ((dd = opendir(dbdir)) != NULL)
		{
			while ((de = readdir(dd)) != NULL)
			{
				char		name[GNN_GRAPH_NAME_LEN];
				Oid			owner;

				if (ParseGraphDir(de->d_name, &owner, name))
					GnnStoreRemove(MyDatabaseId, owner, name);
			}
			closedir(dd);
		}
		(void) rmdir(dbdir);
	}
	else if (event == XACT_EVENT_ABORT || event == XACT_EVENT_PARALLEL_ABORT)
		drop_pending = false;
}

static void
StoreObjectAccess(ObjectAccessType access, Oid classId, Oid objectId, int subId, void *arg)
{
	if (prev_object_access)
		prev_object_access(access, classId, objectId, subId, arg);
	if (access == OAT_DROP && classId == ExtensionRelationId && objectId == get_extension_oid("gnn", true))
	{
		drop_pending = true;
		drop_extoid = objectId;
		if (!drop_callback)
		{
			RegisterXactCallback(StoreXactCallback, NULL);
			drop_callback = true;
		}
	}
}

void
GnnStoreInit(void)
{
	prev_object_access = object_access_hook;
	object_access_hook = StoreObjectAccess;
}
