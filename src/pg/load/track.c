/*
 * track.c: a loaded graph follows its tables.
 *
 * Capture.  gnn.track (or gnn.load_graph(..., track => true)) puts four
 * statement-level AFTER triggers (insert, update, delete with transition
 * tables; truncate) on each table the graph was loaded from, as the calling
 * role (CREATE TRIGGER checks its TRIGGER privilege).  The trigger function
 * packs the statement's removed and added rows (only the loaded columns)
 * into one row of gnn.change_log, in the statement's own transaction: a
 * rollback leaves nothing, and the log is as durable as the tables.  It
 * writes that row directly (heap insert, no SQL), so no role needs INSERT on
 * the log and no role's code runs with anyone else's rights.  A TRUNCATE,
 * or a loaded column that was dropped or changed type, logs kind 't': the
 * next refresh reloads the graph in full.
 *
 * Refresh.  gnn.refresh_graph reads the log rows of the graph that its
 * snapshot sees (every change committed before it), turns them into one
 * gnn_graph_changes (node rows: the last change of each id wins; edge rows:
 * removed and added rows counted, so an insert and delete of one row
 * cancel), and the core merges them into a new region (graph_delta.c)
 * while readers keep using the old one.  It deletes the log rows it
 * applied, and the new version is published when its transaction commits:
 * a refresh that rolls back leaves graph and log as they were, so nothing
 * is applied twice or lost.  A load of a tracked graph does the same: it
 * reads the tables and the log under one snapshot, deletes the log rows its
 * scan already saw, and publishes at commit.
 *
 * Refreshes, tracked loads and gnn.track of one graph are serialised by a
 * transaction lock on the (owner, graph) pair, and each reads under a
 * snapshot taken after it holds the lock.
 *
 * Trust: a refresh applies only rows logged for the graph's own tables
 * under the graph's owner; a trigger planted by another role (its own
 * tables, any arguments) cannot feed another role's graph.
 */
#include "common/gnn_pg.h"
#include "load/load_int.h"

#include <float.h>
#include <math.h>

#include "access/heapam.h"
#include "utils/acl.h"
#include "catalog/indexing.h"
#include "utils/fmgroids.h"
#include "access/genam.h"
#include "parser/parser.h"
#include "catalog/pg_trigger.h"
#include "catalog/dependency.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_type.h"
#include "commands/sequence.h"
#include "commands/event_trigger.h"
#include "tcop/deparse_utility.h"
#include "commands/trigger.h"
#include "common/hashfn.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "portability/instr_time.h"
#include "storage/lmgr.h"
#include "storage/lock.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/resowner.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"

PG_FUNCTION_INFO_V1(gnn_capture);
PG_FUNCTION_INFO_V1(gnn_track);
PG_FUNCTION_INFO_V1(gnn_refresh_graph);
PG_FUNCTION_INFO_V1(gnn_graph_tracking);

#define EDGE_MAGIC 0x31454e47	/* "GNE1" */
#define NODE_MAGIC 0x314e4e47	/* "GNN1" */

/* per-row flags of captured rows */
#define F_NULL_A	1			/* edge: NULL source; node: NULL id */
#define F_NULL_B	2			/* edge: NULL destination; node: NULL features */
#define F_BAD		4			/* edge: NULL, negative or non-finite weight; node: bad features */
#define F_NULL_LABEL 8

/*
 * A compact edge payload (CompactEdges): ids as int32, no flags arrays (every
 * row's are 0), one weight per section (all its rows have it).
 */
#define E_IDS32		4
#define E_NOFLAGS	8
#define E_WCONST	16

/* payload header: counts, then column arrays (PackRows, CaptureEdgesDirect; CompactEdges) */
typedef struct ChangeHdr
{
	uint32		magic;
	uint32		flags;			/* edges: 1 weighted, 2 text keys, then E_* (CompactEdges); nodes: 1
								 * features, 2 label, 4 text label, 8 split, 16 text keys */
	int64		nrm;
	int64		nadd;
} ChangeHdr;

/* a 't' log row's rows when DDL wrote it (gnn._ddl_watch): the reload says so */
#define DDL_ROWS (-1)

/* log columns */
enum
{
	L_SEQ, L_GRAPH, L_OWNER, L_RELID, L_KIND, L_ROWS, L_AT, L_CHANGES, L_NCOLS
};

/* ------------------------------------------------------------------ names and locks */
static Oid
GnnNamespace(void)
{
	return get_namespace_oid("gnn", false);
}

static Oid
LogRelid(void)
{
	Oid			r = get_relname_relid("change_log", GnnNamespace());

	if (!OidIsValid(r))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("table gnn.change_log does not exist"),
				 errhint("Recreate the extension: DROP EXTENSION gnn; CREATE EXTENSION gnn;")));
	return r;
}

/* ------------------------------------------------------------------ triggers */
typedef struct TrigSpec
{
	Oid			relid;
	char		kind;			/* 'e' edge table, 'n' node table, 'f' sparse feature table, 's' a table of a
								 * schema graph */
	char	   *args;			/* kind and loaded columns, NUL-separated ('' for a column not loaded) */
	int			args_len;
	bool		present;		/* SyncTriggers: its triggers exist already */
} TrigSpec;

static const char *
NonEmpty(const char *s)
{
	return s ? s : "";
}

/* What one table's capture triggers read: kind, then four columns. */
static void
SpecArgs(TrigSpec *t, char kind, const char *c1, const char *c2, const char *c3, const char *c4)
{
	StringInfoData b;
	const char *parts[5];

	parts[0] = kind == 'e' ? "e" : kind == 's' ? "s" : kind == 'f' ? "f" : "n";
	parts[1] = NonEmpty(c1);
	parts[2] = NonEmpty(c2);
	parts[3] = NonEmpty(c3);
	parts[4] = NonEmpty(c4);
	initStringInfo(&b);
	for (int i = 0; i < 5; i++)
		appendBinaryStringInfo(&b, parts[i], strlen(parts[i]) + 1);
	t->kind = kind;
	t->args = b.data;
	t->args_len = b.len;
}

static void
CheckTrackable(Oid relid, const char *graph)
{
	char		kind = get_rel_relkind(relid);

	if (kind == RELKIND_RELATION || kind == RELKIND_PARTITIONED_TABLE)
	{
		if (pg_class_aclcheck(relid, GetUserId(), ACL_TRIGGER) != ACLCHECK_OK)
			ereport(ERROR,
					(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
					 errmsg("permission denied to track graph \"%s\": role %s may not create triggers on %s",
							graph, GetUserNameFromId(GetUserId(), false), QualifiedRelName(relid)),
					 errdetail("Change capture puts triggers on every table the graph reads, which needs the TRIGGER privilege."),
					 errhint("Ask the table's owner to run GRANT TRIGGER ON %s TO %s, or load the graph without track.",
							 QualifiedRelName(relid), quote_identifier(GetUserNameFromId(GetUserId(), false)))));
		return;
	}
	ereport(ERROR,
			(errcode(ERRCODE_WRONG_OBJECT_TYPE),
			 errmsg("cannot track graph \"%s\": %s is a %s", graph, QualifiedRelName(relid),
					kind == RELKIND_VIEW ? "view" : kind == RELKIND_MATVIEW ? "materialized view" :
					kind == RELKIND_FOREIGN_TABLE ? "foreign table" : "relation that is not a table"),
			 errdetail("Change capture uses triggers with transition tables, which only tables and partitioned tables have."),
			 errhint("Load the graph from the underlying tables, or keep it fresh by reloading it (gnn.load_graph(..., replace => true), for example from pg_cron).")));
}

/* relid and, for a partitioned table, every partition below it (DML may name them directly) */
static List *
WithPartitions(Oid relid)
{
	if (get_rel_relkind(relid) == RELKIND_PARTITIONED_TABLE)
		return find_all_inheritors(relid, AccessShareLock, NULL);
	return list_make1_oid(relid);
}

/*
 * One capture trigger as gnn.capture binds it: the extension records which
 * graph (and owner) each trigger it made feeds, and gnn._capture acts only
 * for a trigger recorded there, so neither the trigger's definition nor
 * anything a role can write decides whose log it writes.
 */
typedef struct ExistingTrig
{
	Oid			tgoid;
	Oid			relid;
	char	   *relname;		/* as it was named when the trigger was made */
	bytea	   *args;			/* as TrigSpec's */
} ExistingTrig;

/* the capture triggers of (owner, graph) gnn.capture records, four per table */
static List *
ExistingTriggers(const char *graph, Oid owner)
{
	List	   *out = NIL;
	Oid			types[2] = {TEXTOID, OIDOID};
	Datum		values[2];
	MemoryContext cxt = CurrentMemoryContext;

	values[0] = CStringGetTextDatum(graph);
	values[1] = ObjectIdGetDatum(owner);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	GnnCatalogExec("SELECT trigger, relid, args, relname FROM gnn.capture WHERE graph = $1 AND owner = $2::regrole "
				   "ORDER BY trigger", 2, types, values, NULL, 0);
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		bool		n1,
					n2,
					n3,
					n4;
		Datum		o = SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &n1);
		Datum		r = SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 2, &n2);
		Datum		a = SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 3, &n3);
		Datum		rn = SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 4, &n4);
		MemoryContext old = MemoryContextSwitchTo(cxt);
		ExistingTrig *t = palloc0(sizeof(ExistingTrig));

		t->tgoid = DatumGetObjectId(o);
		t->relid = DatumGetObjectId(r);
		t->args = DatumGetByteaPCopy(a);
		t->relname = TextDatumGetCString(rn);
		out = lappend(out, t);
		MemoryContextSwitchTo(old);
	}
	SPI_finish();
	return out;
}

/* the trigger's tgenabled ('O', 'A', 'R', 'D'), or '\0' when pg_trigger has it no more (its table went) */
static char
TriggerState(Oid tgoid)
{
	Relation	tgrel = table_open(TriggerRelationId, AccessShareLock);
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tup;
	char		state = '\0';

	ScanKeyInit(&key, Anum_pg_trigger_oid, BTEqualStrategyNumber, F_OIDEQ, ObjectIdGetDatum(tgoid));
	scan = systable_beginscan(tgrel, TriggerOidIndexId, true, NULL, 1, &key);
	if (HeapTupleIsValid(tup = systable_getnext(scan)))
		state = ((Form_pg_trigger) GETSTRUCT(tup))->tgenabled;
	systable_endscan(scan);
	table_close(tgrel, AccessShareLock);
	return state;
}

static bool
TriggerExists(Oid tgoid)
{
	return TriggerState(tgoid) != '\0';
}

/*
 * Whether capture works for a graph whose triggers are trig
 * (ExistingTriggers): NULL when every one exists and fires; else why not.
 * *gone is set when a trigger's table was dropped (the graph cannot follow
 * its tables any more), else a trigger is disabled (ALTER TABLE ... DISABLE
 * TRIGGER): its table's changes are not logged, and only a reload can
 * catch up.
 */
static const char *
CaptureProblem(List *trig, bool *gone)
{
	ListCell   *lc;

	*gone = false;
	foreach(lc, trig)
	{
		ExistingTrig *x = lfirst(lc);
		char		st = TriggerState(x->tgoid);

		if (st == '\0')
		{
			*gone = true;
			return get_rel_name(x->relid)
				? psprintf("a capture trigger on %s was dropped", QualifiedRelName(x->relid))
				: psprintf("table %s, which it was loaded from, was dropped", x->relname);
		}
		if (st == TRIGGER_DISABLED)
			return psprintf("capture is disabled on %s (ALTER TABLE ... DISABLE TRIGGER)",
							QualifiedRelName(x->relid));
		if (st != TRIGGER_FIRES_ALWAYS)
			return psprintf("the capture triggers on %s were enabled again without ALWAYS, so sessions with "
							"session_replication_role = %s are not captured (gnn.track() sets them up again)",
							QualifiedRelName(x->relid), st == TRIGGER_FIRES_ON_REPLICA ? "origin" : "replica");
	}
	return NULL;
}

/*
 * A capture trigger and its binding go.  The graph's owner may remove what
 * gnn made for its graph without owning the table (CREATE TRIGGER needed
 * only the TRIGGER privilege), so it is deleted as the internal object it
 * is, not through DROP TRIGGER.
 */
static void
DropTrigger(const ExistingTrig *x)
{
	Oid			types[1] = {OIDOID};
	Datum		values[1];

	if (TriggerExists(x->tgoid))
	{
		ObjectAddress a;

		ObjectAddressSet(a, TriggerRelationId, x->tgoid);
		performDeletion(&a, DROP_RESTRICT, PERFORM_DELETION_INTERNAL);
	}
	values[0] = ObjectIdGetDatum(x->tgoid);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	GnnCatalogExec("DELETE FROM gnn.capture WHERE trigger = $1", 1, types, values, NULL, 0);
	SPI_finish();
}

/*
 * The four capture triggers of one table, bound to (owner, graph).  They
 * fire ALWAYS, also in sessions with session_replication_role = replica
 * (logical replication's apply, pg_restore --disable-triggers does not
 * apply: it disables them, which the DDL watch sees).  Made as the calling
 * role: CreateTrigger checks its TRIGGER privilege on the table.  Their
 * names carry a number, nothing of the graph or its owner.
 */
static void
CreateTriggers(Oid relid, const char *graph, Oid owner, const TrigSpec *spec)
{
	static const char *const ev[4] = {"i", "u", "d", "t"};
	static const char *const what[4] = {
		"AFTER INSERT ON %s REFERENCING NEW TABLE AS gnn_new",
		"AFTER UPDATE ON %s REFERENCING OLD TABLE AS gnn_old NEW TABLE AS gnn_new",
		"AFTER DELETE ON %s REFERENCING OLD TABLE AS gnn_old",
		"AFTER TRUNCATE ON %s"};
	const char *rel = QualifiedRelName(relid);
	int64		serial;
	bytea	   *args = palloc(VARHDRSZ + spec->args_len);

	SET_VARSIZE(args, VARHDRSZ + spec->args_len);
	memcpy(VARDATA(args), spec->args, spec->args_len);
	{
		GnnCatalogWrite w;

		GnnCatalogBegin(&w);
		serial = nextval_internal(get_relname_relid("capture_seq", GnnNamespace()), false);
		GnnCatalogEnd(&w);
	}
	for (int i = 0; i < 4; i++)
	{
		char	   *sql = psprintf("CREATE TRIGGER %s %s FOR EACH STATEMENT EXECUTE FUNCTION gnn._capture()",
								   quote_identifier(psprintf("gnn_capture_%lld_%s", (long long) serial, ev[i])),
								   psprintf(what[i], rel));
		RawStmt    *raw = linitial_node(RawStmt, raw_parser(sql, RAW_PARSE_DEFAULT));
		ObjectAddress a;
		Oid			types[6] = {OIDOID, OIDOID, TEXTOID, OIDOID, BYTEAOID, TEXTOID};
		Datum		values[6];

		a = CreateTriggerFiringOn(castNode(CreateTrigStmt, raw->stmt), sql, InvalidOid, InvalidOid,
								  InvalidOid, InvalidOid, InvalidOid, InvalidOid, NULL, false, false,
								  TRIGGER_FIRES_ALWAYS);
		values[0] = ObjectIdGetDatum(a.objectId);
		values[1] = ObjectIdGetDatum(relid);
		values[2] = CStringGetTextDatum(graph);
		values[3] = ObjectIdGetDatum(owner);
		values[4] = PointerGetDatum(args);
		values[5] = CStringGetTextDatum(rel);
		if (SPI_connect() != SPI_OK_CONNECT)
			elog(ERROR, "SPI_connect failed");
		GnnCatalogExec("INSERT INTO gnn.capture (trigger, relid, graph, owner, args, relname) "
					   "VALUES ($1, $2, $3, $4::regrole, $5, $6)", 6, types, values, NULL, 0);
		SPI_finish();
	}
}

/*
 * Make the capture triggers of (owner, graph) those of want (TrigSpec
 * list): drop those on tables no longer read or with other columns, create
 * the missing ones; then push a snapshot taken after all that, under which
 * the load reads tables and log alike (GnnTrackEnd pops it).  The graph's
 * lock is held.
 */
static void
SyncTriggers(const char *graph, Oid owner, List *existing, List *want)
{
	ListCell   *lc;

	foreach(lc, existing)
	{
		ExistingTrig *x = lfirst(lc);
		bool		keep = false;
		ListCell   *lw;

		foreach(lw, want)
		{
			TrigSpec   *t = lfirst(lw);

			if (t->relid == x->relid && VARSIZE_ANY_EXHDR(x->args) == t->args_len &&
				memcmp(VARDATA_ANY(x->args), t->args, t->args_len) == 0 &&
				TriggerState(x->tgoid) == TRIGGER_FIRES_ALWAYS)
			{
				keep = true;
				t->present = true;
			}
		}
		if (!keep)
			DropTrigger(x);
	}
	foreach(lc, want)
	{
		TrigSpec   *t = lfirst(lc);
		int			have = 0;
		ListCell   *lx;

		/* a table keeps its triggers only when all four are there */
		foreach(lx, existing)
			have += t->present && ((ExistingTrig *) lfirst(lx))->relid == t->relid &&
				TriggerState(((ExistingTrig *) lfirst(lx))->tgoid) == TRIGGER_FIRES_ALWAYS;
		if (have != 4)
		{
			foreach(lx, existing)
			{
				ExistingTrig *x = lfirst(lx);

				if (t->present && x->relid == t->relid)
					DropTrigger(x);
			}
			CreateTriggers(t->relid, graph, owner, t);
		}
	}
	CommandCounterIncrement();
	/*
	 * Read after every writer that started before the triggers existed has
	 * finished (CREATE TRIGGER waited for them): what this snapshot does not
	 * see, the triggers capture.
	 */
	PushActiveSnapshot(GetLatestSnapshot());
}

/*
 * Called by a load before it reads anything.  Returns whether the graph is
 * to be tracked: asked for (args->track), or already tracked (its triggers
 * exist: a reload after a restart keeps following the tables).  If so:
 * checks that it can be, takes the graph's lock, makes the triggers match
 * the tables and columns of this load, and pushes a snapshot taken after
 * all that (SyncTriggers).
 */
bool
GnnTrackBegin(const GnnLoadArgs *args)
{
	Oid			owner = GetUserId();
	List	   *existing = ExistingTriggers(args->name, owner);
	List	   *want = NIL;
	ListCell   *lc;

	if (!args->track && existing == NIL)
		return false;
	CheckTrackable(args->edges, args->name);
	if (OidIsValid(args->nodes))
		CheckTrackable(args->nodes, args->name);
	if (OidIsValid(args->sparse))
		CheckTrackable(args->sparse, args->name);

	GnnLockGraph(args->name, owner);
	/* what this load's tables need */
	foreach(lc, WithPartitions(args->edges))
	{
		TrigSpec   *t = palloc0(sizeof(TrigSpec));

		t->relid = lfirst_oid(lc);
		SpecArgs(t, 'e', args->src, args->dst, args->weight, NULL);
		want = lappend(want, t);
	}
	if (OidIsValid(args->nodes))
		foreach(lc, WithPartitions(args->nodes))
		{
			TrigSpec   *t = palloc0(sizeof(TrigSpec));

			t->relid = lfirst_oid(lc);
			if (t->relid == args->edges)
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("cannot track graph \"%s\": its edges and nodes come from one table", args->name),
						 errhint("Keep nodes and edges in separate tables.")));
			/*
			 * encoded columns: which statements changed the node rows (a
			 * refresh reloads them, with the graph's encodings kept)
			 */
			if (args->feature_list != NIL || args->features_all ||
				(args->features && GnnColumnIsEncoded(args->nodes, args->features)))
				SpecArgs(t, 'f', NULL, NULL, NULL, NULL);
			else
				SpecArgs(t, 'n', args->id, args->features, args->label, args->split);
			want = lappend(want, t);
		}
	/* a sparse feature table: which statements changed it (a refresh reloads) */
	if (OidIsValid(args->sparse))
		foreach(lc, WithPartitions(args->sparse))
		{
			TrigSpec   *t = palloc0(sizeof(TrigSpec));

			t->relid = lfirst_oid(lc);
			if (t->relid == args->edges || (OidIsValid(args->nodes) && t->relid == args->nodes))
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("cannot track graph \"%s\": its sparse features come from its edge or node table",
								args->name),
						 errhint("Keep the sparse features in a table of their own.")));
			SpecArgs(t, 'f', NULL, NULL, NULL, NULL);
			want = lappend(want, t);
		}
	SyncTriggers(args->name, owner, existing, want);
	return true;
}

/*
 * The same for a schema graph (gnn.load_schema_graph): triggers of kind 's'
 * on every table and partition.  Its refresh reloads (GnnRefreshGraph says
 * why), so the triggers log only which table changed and how many rows.
 */
bool
GnnTrackSchemaBegin(const char *name, const Oid *rels, int nrel, bool track)
{
	Oid			owner = GetUserId();
	List	   *existing = ExistingTriggers(name, owner);
	List	   *want = NIL;

	if (!track && existing == NIL)
		return false;
	for (int i = 0; i < nrel; i++)
		CheckTrackable(rels[i], name);
	GnnLockGraph(name, owner);
	for (int i = 0; i < nrel; i++)
	{
		ListCell   *lc;

		foreach(lc, WithPartitions(rels[i]))
		{
			TrigSpec   *t = palloc0(sizeof(TrigSpec));

			t->relid = lfirst_oid(lc);
			SpecArgs(t, 's', NULL, NULL, NULL, NULL);
			want = lappend(want, t);
		}
	}
	SyncTriggers(name, owner, existing, want);
	return true;
}

/* ------------------------------------------------------------------ the log */
typedef struct LogRow
{
	int64		seq;
	ItemPointerData tid;
	Oid			relid;
	char		kind;
	int64		rows;
	bytea	   *changes;		/* NULL unless wanted */
} LogRow;

static int
LogRowCmp(const void *a, const void *b)
{
	int64		x = ((const LogRow *) a)->seq,
				y = ((const LogRow *) b)->seq;

	return x < y ? -1 : x > y;
}

/* The log rows of (owner, graph) that snap sees, in seq order. */
static LogRow *
ReadLog(Relation lr, Snapshot snap, const char *graph, Oid owner, bool with_changes, int64 *n_out)
{
	TableScanDesc scan = table_beginscan(lr, snap, 0, NULL);
	TupleTableSlot *slot = table_slot_create(lr, NULL);
	int64		n = 0,
				cap = 64;
	LogRow	   *rows = palloc(sizeof(LogRow) * cap);
	size_t		glen = strlen(graph);

	while (table_scan_getnextslot(scan, ForwardScanDirection, slot))
	{
		bool		isnull;
		Datum		d;
		text	   *g;

		d = slot_getattr(slot, L_OWNER + 1, &isnull);
		if (isnull || DatumGetObjectId(d) != owner)
			continue;
		d = slot_getattr(slot, L_GRAPH + 1, &isnull);
		if (isnull)
			continue;
		g = DatumGetTextPP(d);
		if (VARSIZE_ANY_EXHDR(g) != glen || memcmp(VARDATA_ANY(g), graph, glen) != 0)
			continue;
		if (n == cap)
		{
			cap *= 2;
			rows = repalloc_huge(rows, sizeof(LogRow) * cap);
		}
		rows[n].seq = DatumGetInt64(slot_getattr(slot, L_SEQ + 1, &isnull));
		rows[n].tid = slot->tts_tid;
		rows[n].relid = DatumGetObjectId(slot_getattr(slot, L_RELID + 1, &isnull));
		rows[n].kind = DatumGetChar(slot_getattr(slot, L_KIND + 1, &isnull));
		rows[n].rows = DatumGetInt64(slot_getattr(slot, L_ROWS + 1, &isnull));
		rows[n].changes = NULL;
		if (with_changes)
		{
			d = slot_getattr(slot, L_CHANGES + 1, &isnull);
			if (!isnull)
				rows[n].changes = DatumGetByteaPCopy(d);
		}
		n++;
	}
	ExecDropSingleTupleTableSlot(slot);
	table_endscan(scan);
	qsort(rows, n, sizeof(LogRow), LogRowCmp);
	*n_out = n;
	return rows;
}

static void
DeleteLogRows(Relation lr, const LogRow *rows, int64 n)
{
	for (int64 i = 0; i < n; i++)
	{
		ItemPointerData tid = rows[i].tid;

		simple_heap_delete(lr, &tid);
	}
	CommandCounterIncrement();
}

/* Forget the log rows of (owner, graph) the active snapshot sees. */
static void
DeleteSeenLog(const char *graph, Oid owner)
{
	Relation	lr = table_open(LogRelid(), RowExclusiveLock);
	int64		n;
	LogRow	   *rows = ReadLog(lr, GetActiveSnapshot(), graph, owner, false, &n);

	DeleteLogRows(lr, rows, n);
	table_close(lr, RowExclusiveLock);
	pfree(rows);
}

/* After a tracked load has built its graph: the log rows it saw are in it. */
void
GnnTrackEnd(const char *name)
{
	DeleteSeenLog(name, GetUserId());
	PopActiveSnapshot();
}

/* Untrack (owner, graph): its triggers and its log rows go (at commit, as everything here). */
void
GnnTrackDropAll(const char *name, Oid owner)
{
	List	   *existing = ExistingTriggers(name, owner);
	ListCell   *lc;

	if (existing == NIL)
		return;
	GnnLockGraph(name, owner);
	foreach(lc, existing)
		DropTrigger(lfirst(lc));
	CommandCounterIncrement();
	PushActiveSnapshot(GetLatestSnapshot());
	DeleteSeenLog(name, owner);
	PopActiveSnapshot();
	/* the background refresher passes it by (a rollback leaves it tracked) */
	GnnUntrackAtCommit(name, owner);
}

static void LogWriteBytea(const char *graph, Oid owner, Oid relid, char kind, int64 rows, bytea *b);

static void
LogWrite(const char *graph, Oid owner, Oid relid, char kind, int64 rows, StringInfo payload)
{
	bytea	   *b = NULL;

	if (payload)
	{
		b = palloc_extended(VARHDRSZ + payload->len, MCXT_ALLOC_HUGE);
		SET_VARSIZE(b, VARHDRSZ + payload->len);
		memcpy(VARDATA(b), payload->data, payload->len);
	}
	LogWriteBytea(graph, owner, relid, kind, rows, b);
}

/* one row of gnn.change_log; b (NULL: none) as it is */
static void
LogWriteBytea(const char *graph, Oid owner, Oid relid, char kind, int64 rows, bytea *b)
{
	Relation	lr = table_open(LogRelid(), RowExclusiveLock);
	Datum		values[L_NCOLS];
	bool		nulls[L_NCOLS];
	HeapTuple	tup;
	Oid			seq = get_relname_relid("change_seq", GnnNamespace());

	memset(nulls, 0, sizeof(nulls));
	values[L_SEQ] = Int64GetDatum(nextval_internal(seq, false));
	values[L_GRAPH] = CStringGetTextDatum(graph);
	values[L_OWNER] = ObjectIdGetDatum(owner);
	values[L_RELID] = ObjectIdGetDatum(relid);
	values[L_KIND] = CharGetDatum(kind);
	values[L_ROWS] = Int64GetDatum(rows);
	values[L_AT] = TimestampTzGetDatum(GetCurrentTransactionStartTimestamp());
	if (b)
		values[L_CHANGES] = PointerGetDatum(b);
	else
		nulls[L_CHANGES] = true;
	tup = heap_form_tuple(RelationGetDescr(lr), values, nulls);
	simple_heap_insert(lr, tup);
	heap_freetuple(tup);
	table_close(lr, RowExclusiveLock);
}

/* ------------------------------------------------------------------ capture */
/*
 * The binding gnn.capture records for trigger tgoid on table relid: the
 * graph, its owner, and what the table's rows hold (kind and columns).
 * False for a trigger gnn did not make (or made for another table).  Read
 * as the catalog's owner: the role whose statement fired the trigger may
 * be any role allowed to write the table, and the binding is the graph
 * owner's row.
 */
typedef struct CaptureBinding
{
	char	   *graph;
	Oid			owner;
	char	   *args[5];		/* kind, four columns ('' for none) */
} CaptureBinding;

static bool
TriggerBinding(Oid tgoid, Oid relid, CaptureBinding *b)
{
	Oid			types[1] = {OIDOID};
	Datum		values[1];
	bool		found = false;
	MemoryContext cxt = CurrentMemoryContext;

	values[0] = ObjectIdGetDatum(tgoid);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	GnnCatalogExec("SELECT relid, graph, owner, args FROM gnn.capture WHERE trigger = $1", 1, types, values,
				   NULL, 0);
	if (SPI_processed == 1)
	{
		bool		nl[4];
		HeapTuple	t = SPI_tuptable->vals[0];
		TupleDesc	d = SPI_tuptable->tupdesc;
		Oid			r = DatumGetObjectId(SPI_getbinval(t, d, 1, &nl[0]));
		Datum		g = SPI_getbinval(t, d, 2, &nl[1]);
		Datum		o = SPI_getbinval(t, d, 3, &nl[2]);
		Datum		a = SPI_getbinval(t, d, 4, &nl[3]);

		if (r == relid && !nl[1] && !nl[2] && !nl[3])
		{
			MemoryContext old = MemoryContextSwitchTo(cxt);
			bytea	   *args = DatumGetByteaPCopy(a);
			char	   *p = VARDATA(args);
			char	   *end = p + VARSIZE(args) - VARHDRSZ;

			b->graph = TextDatumGetCString(g);
			b->owner = DatumGetObjectId(o);
			found = end > p && end[-1] == '\0';
			for (int i = 0; i < 5; i++)
			{
				b->args[i] = found ? p : "";
				if (found)
					p += strlen(p) + 1;
				found &= i == 4 || p < end;
			}
			MemoryContextSwitchTo(old);
		}
	}
	SPI_finish();
	return found;
}

/*
 * Whether a statement's changes go to the log of (owner, graph): yes while
 * the graph is loaded (or this transaction loads it), and while a tracked
 * load of it is under way elsewhere (it holds the graph's lock: what its
 * snapshot does not see, it takes from the log).  Otherwise no log row is
 * written, and this transaction holds the graph's lock in share mode until
 * it ends, so that a load starting now waits for it and reads its rows.
 * The first such statement of a process also clears rows an earlier server
 * lifetime left for the graph.
 */
static bool
CaptureWanted(const char *graph, Oid owner)
{
	static List *cleared = NIL;	/* "owner/graph" cleared by this process */
	bool		loaded;
	LOCKTAG		tag;
	char	   *key;
	ListCell   *lc;

	if (GnnPendingLookup(graph, owner, NULL, NULL, NULL) == GNN_PENDING_VERSION)
		return true;
	LWLockAcquire(gnn_shared->lock, LW_SHARED);
	loaded = GnnGraphEntryOf(graph, owner) != NULL;
	LWLockRelease(gnn_shared->lock);
	if (loaded)
		return true;
	GnnGraphLockTag(&tag, graph, owner);
	if (LockAcquire(&tag, ShareLock, false, true) == LOCKACQUIRE_NOT_AVAIL)
		return true;
	key = psprintf("%u/%s", owner, graph);
	foreach(lc, cleared)
		if (strcmp(lfirst(lc), key) == 0)
			return false;
	DeleteSeenLog(graph, owner);
	{
		MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);

		cleared = lappend(cleared, pstrdup(key));
		MemoryContextSwitchTo(old);
	}
	return false;
}


typedef struct Col
{
	AttrNumber	att;			/* 0: not loaded */
	Oid			type;
} Col;

/* find a loaded column; false if it is gone or no longer of a type the load takes */
static bool
FindCol(TupleDesc td, const char *name, const Oid *accepted, Col *c)
{
	c->att = 0;
	c->type = InvalidOid;
	if (name == NULL || name[0] == '\0')
		return true;
	for (int i = 0; i < td->natts; i++)
	{
		Form_pg_attribute a = TupleDescAttr(td, i);

		if (!a->attisdropped && strcmp(NameStr(a->attname), name) == 0)
		{
			Oid			base = getBaseType(a->atttypid);	/* a domain: its base type's values */

			for (int k = 0; OidIsValid(accepted[k]); k++)
				if (accepted[k] == base)
				{
					c->att = a->attnum;
					c->type = base;
					return true;
				}
			return false;
		}
	}
	return false;
}

/* node ids as a load takes them (load.c's id_types): integers, or keys as text (text, varchar, char, uuid) */
static const Oid cap_id_types[] = {INT2OID, INT4OID, INT8OID, TEXTOID, VARCHAROID, BPCHAROID, UUIDOID, InvalidOid};

static bool
TextKeyType(Oid t)
{
	return t != INT2OID && t != INT4OID && t != INT8OID;
}
static const Oid cap_feat_types[] = {FLOAT4ARRAYOID, FLOAT8ARRAYOID, InvalidOid};

/* one captured row, before packing */
typedef struct CapRow
{
	int64		a;				/* edge: source; node: id */
	int64		b;				/* edge: destination; node: integer label */
	char	   *ka;				/* text keys (CapCtx.text_keys): a's and (edges) b's, NULL: NULL */
	char	   *kb;
	float		w;				/* edge weight */
	uint8		flags;
	uint8		split;
	int32		nfeat;
	float	   *feat;
	char	   *label;			/* text label, NULL: none */
} CapRow;

typedef struct CapCtx
{
	char		kind;
	Col			c[4];
	bool		text_label;
	bool		text_keys;		/* ids are text keys (GnnKeyText), packed as bytes */
} CapCtx;

static void
CaptureRow(CapCtx *cx, TupleTableSlot *slot, CapRow *r)
{
	bool		isnull;
	Datum		d;

	memset(r, 0, sizeof(*r));
	d = slot_getattr(slot, cx->c[0].att, &isnull);
	if (isnull)
		r->flags |= F_NULL_A;
	else if (cx->text_keys)
		r->ka = GnnKeyText(d, cx->c[0].type);
	else
		r->a = IntDatum(d, cx->c[0].type);
	if (cx->kind == 'e')
	{
		d = slot_getattr(slot, cx->c[1].att, &isnull);
		if (isnull)
			r->flags |= F_NULL_B;
		else if (cx->text_keys)
			r->kb = GnnKeyText(d, cx->c[1].type);
		else
			r->b = IntDatum(d, cx->c[1].type);
		r->w = 1;
		if (cx->c[2].att)
		{
			d = slot_getattr(slot, cx->c[2].att, &isnull);
			if (isnull)
				r->flags |= F_BAD;
			else
			{
				double		x = NumDatum(d, cx->c[2].type);

				if (!isfinite(x) || x < 0 || fabs(x) > FLT_MAX)
					r->flags |= F_BAD;
				r->w = (float) x;
			}
		}
		return;
	}
	if (cx->c[1].att)
	{
		d = slot_getattr(slot, cx->c[1].att, &isnull);
		if (isnull)
			r->flags |= F_NULL_B;
		else
		{
			ArrayType  *arr = DatumGetArrayTypeP(d);
			int			n = ARR_NDIM(arr) == 0 ? 0 : ARR_DIMS(arr)[0];

			if (ARR_NDIM(arr) > 1 || n == 0 || (ARR_HASNULL(arr) && array_contains_nulls(arr)))
				r->flags |= F_BAD;
			else
			{
				r->nfeat = n;
				r->feat = palloc(sizeof(float) * n);
				for (int j = 0; j < n; j++)
				{
					double		x = cx->c[1].type == FLOAT4ARRAYOID ? ((float *) ARR_DATA_PTR(arr))[j] :
						((double *) ARR_DATA_PTR(arr))[j];

					if (!isfinite(x) || fabs(x) > FLT_MAX)
						r->flags |= F_BAD;
					r->feat[j] = (float) x;
				}
			}
		}
	}
	if (cx->c[2].att)
	{
		d = slot_getattr(slot, cx->c[2].att, &isnull);
		if (isnull)
			r->flags |= F_NULL_LABEL;
		else if (cx->text_label)
			r->label = TextDatum(d, cx->c[2].type);
		else
		{
			int64		x = IntDatum(d, cx->c[2].type);

			r->b = x;
			if (x < 0)
				r->flags |= F_BAD;
		}
	}
	r->split = GNN_SPLIT_NONE;
	if (cx->c[3].att)
	{
		d = slot_getattr(slot, cx->c[3].att, &isnull);
		if (!isnull)
		{
			int			k = GnnParseSplit(TextDatum(d, cx->c[3].type));

			r->split = k >= 0 ? (uint8) k : 255;
		}
	}
}

static bool
CapRowEqual(const CapCtx *cx, const CapRow *x, const CapRow *y)
{
	if (x->a != y->a || x->b != y->b || x->flags != y->flags || x->split != y->split ||
		memcmp(&x->w, &y->w, sizeof(float)) != 0 || x->nfeat != y->nfeat)
		return false;
	if (x->nfeat && memcmp(x->feat, y->feat, sizeof(float) * x->nfeat) != 0)
		return false;
	if ((x->ka == NULL) != (y->ka == NULL) || (x->ka && strcmp(x->ka, y->ka) != 0) ||
		(x->kb == NULL) != (y->kb == NULL) || (x->kb && strcmp(x->kb, y->kb) != 0))
		return false;
	if ((x->label == NULL) != (y->label == NULL))
		return false;
	return x->label == NULL || strcmp(x->label, y->label) == 0;
}

/* read every row of a transition table */
static CapRow *
ReadTransition(CapCtx *cx, Tuplestorestate *ts, TupleDesc td, int64 *n_out)
{
	TupleTableSlot *slot = MakeSingleTupleTableSlot(td, &TTSOpsMinimalTuple);
	int			ptr = tuplestore_alloc_read_pointer(ts, EXEC_FLAG_REWIND);
	int64		n = 0,
				cap = 16;
	CapRow	   *rows = palloc(sizeof(CapRow) * cap);

	tuplestore_select_read_pointer(ts, ptr);
	tuplestore_rescan(ts);
	while (tuplestore_gettupleslot(ts, true, false, slot))
	{
		if (n == cap)
		{
			cap *= 2;
			rows = repalloc_huge(rows, sizeof(CapRow) * cap);
		}
		CaptureRow(cx, slot, &rows[n++]);
		if ((n & 65535) == 0)
			CHECK_FOR_INTERRUPTS();
	}
	ExecDropSingleTupleTableSlot(slot);
	*n_out = n;
	return rows;
}

/* text keys of kept rows (second: edges' destinations): lengths (-1: NULL), then the bytes */
static void
PackKeys(StringInfo b, const CapRow *rows, const bool *skip, int64 n, bool second)
{
	for (int64 i = 0; i < n; i++)
		if (!skip || !skip[i])
		{
			const char *k = second ? rows[i].kb : rows[i].ka;
			int32		len = k ? (int32) strlen(k) : -1;

			appendBinaryStringInfo(b, (const char *) &len, sizeof(int32));
		}
	for (int64 i = 0; i < n; i++)
		if (!skip || !skip[i])
		{
			const char *k = second ? rows[i].kb : rows[i].ka;

			if (k)
				appendBinaryStringInfo(b, k, strlen(k));
		}
}

static void
PackRows(StringInfo b, const CapCtx *cx, const CapRow *rows, const bool *skip, int64 n)
{
	if (cx->text_keys)
		PackKeys(b, rows, skip, n, false);
	else
		for (int64 i = 0; i < n; i++)
			if (!skip || !skip[i])
				appendBinaryStringInfo(b, (const char *) &rows[i].a, sizeof(int64));
	for (int64 i = 0; i < n; i++)
		if (!skip || !skip[i])
			appendBinaryStringInfo(b, (const char *) &rows[i].flags, 1);
	if (cx->kind == 'e')
	{
		if (cx->text_keys)
			PackKeys(b, rows, skip, n, true);
		else
			for (int64 i = 0; i < n; i++)
				if (!skip || !skip[i])
					appendBinaryStringInfo(b, (const char *) &rows[i].b, sizeof(int64));
		if (cx->c[2].att)
			for (int64 i = 0; i < n; i++)
				if (!skip || !skip[i])
					appendBinaryStringInfo(b, (const char *) &rows[i].w, sizeof(float));
		return;
	}
	if (cx->c[1].att)
	{
		for (int64 i = 0; i < n; i++)
			if (!skip || !skip[i])
				appendBinaryStringInfo(b, (const char *) &rows[i].nfeat, sizeof(int32));
		for (int64 i = 0; i < n; i++)
			if ((!skip || !skip[i]) && rows[i].nfeat)
				appendBinaryStringInfo(b, (const char *) rows[i].feat, sizeof(float) * rows[i].nfeat);
	}
	if (cx->c[2].att && !cx->text_label)
		for (int64 i = 0; i < n; i++)
			if (!skip || !skip[i])
				appendBinaryStringInfo(b, (const char *) &rows[i].b, sizeof(int64));
	if (cx->c[2].att && cx->text_label)
	{
		for (int64 i = 0; i < n; i++)
			if (!skip || !skip[i])
			{
				int32		len = rows[i].label ? (int32) strlen(rows[i].label) : -1;

				appendBinaryStringInfo(b, (const char *) &len, sizeof(int32));
			}
		for (int64 i = 0; i < n; i++)
			if ((!skip || !skip[i]) && rows[i].label)
				appendBinaryStringInfo(b, rows[i].label, strlen(rows[i].label));
	}
	if (cx->c[3].att)
		for (int64 i = 0; i < n; i++)
			if (!skip || !skip[i])
				appendBinaryStringInfo(b, (const char *) &rows[i].split, 1);
}

/*
 * Make a full-width edge payload (header, then per section: int64 sources,
 * flags, int64 destinations, float weights) compact where it can be, in
 * place: ids as int32 when every one fits, no flags arrays when every row's
 * are 0, one weight per section when all its rows have the same (a bulk
 * insert of unit weights: 8 bytes a row instead of 21).  Each element moves
 * to an offset at or before its own, in order, so nothing unread is
 * overwritten.  Returns the new length.
 */
static Size
CompactEdges(char *p, Size len)
{
	ChangeHdr  *h = (ChangeHdr *) p;
	bool		weighted = (h->flags & 1) != 0;
	int64		ns[2];
	bool		ids32 = true,
				noflags = true,
				wconst = weighted;
	char	   *src = p + sizeof(ChangeHdr);
	char	   *dst;

	if (h->flags & (2 | E_IDS32 | E_NOFLAGS | E_WCONST))
		return len;				/* text keys, or compact already */
	ns[0] = h->nrm;
	ns[1] = h->nadd;
	for (int s = 0; s < 2; s++)
	{
		int64		n = ns[s];
		const char *a = src,
				   *f = a + 8 * n,
				   *b = f + n,
				   *w = b + 8 * n;

		for (int64 i = 0; i < n; i++)
		{
			int64		x,
						y;

			memcpy(&x, a + 8 * i, 8);
			memcpy(&y, b + 8 * i, 8);
			ids32 &= x == (int64) (int32) x && y == (int64) (int32) y;
			noflags &= f[i] == 0;
			wconst &= !weighted || memcmp(w + 4 * i, w, 4) == 0;
		}
		src = (char *) w + (weighted ? 4 * n : 0);
	}
	if (!ids32 && !noflags && !wconst)
		return len;
	h->flags |= (ids32 ? E_IDS32 : 0) | (noflags ? E_NOFLAGS : 0) | (wconst ? E_WCONST : 0);
	src = dst = p + sizeof(ChangeHdr);
	for (int s = 0; s < 2; s++)
	{
		int64		n = ns[s];
		char	   *a = src,
				   *f = a + 8 * n,
				   *b = f + n,
				   *w = b + 8 * n;

		for (int c = 0; c < 2; c++)
		{
			char	   *col = c ? b : a;

			if (c == 1 && !noflags)
			{
				memmove(dst, f, n);
				dst += n;
			}
			for (int64 i = 0; i < n; i++)
			{
				int64		x;

				memcpy(&x, col + 8 * i, 8);
				if (ids32)
				{
					int32		v = (int32) x;

					memcpy(dst, &v, 4);
					dst += 4;
				}
				else
				{
					memmove(dst, &x, 8);
					dst += 8;
				}
			}
		}
		if (weighted)
		{
			Size		wb = wconst ? (n > 0 ? 4 : 0) : 4 * n;

			memmove(dst, w, wb);
			dst += wb;
		}
		src = w + (weighted ? 4 * n : 0);
	}
	return dst - p;
}

/*
 * An INSERT's or a DELETE's edge rows (integer ids) straight into the log
 * row's payload: one pass over the transition table into a buffer of the
 * rows' exact size, then made compact, with no per-row copies (a bulk insert
 * of a million rows would otherwise make three).
 */
static bytea *
CaptureEdgesDirect(CapCtx *cx, Tuplestorestate *ts, TupleDesc td, bool removed, int64 *n_out)
{
	int64		n = tuplestore_tuple_count(ts);
	bool		weighted = cx->c[2].att != 0;
	Size		len = sizeof(ChangeHdr) + (Size) n * (8 + 1 + 8 + (weighted ? 4 : 0));
	bytea	   *out = palloc_extended(VARHDRSZ + len, MCXT_ALLOC_HUGE);
	char	   *p = VARDATA(out);
	char	   *a = p + sizeof(ChangeHdr),
			   *f = a + 8 * n,
			   *b = f + n,
			   *w = b + 8 * n;
	ChangeHdr	h;
	TupleTableSlot *slot = MakeSingleTupleTableSlot(td, &TTSOpsMinimalTuple);
	int			ptr = tuplestore_alloc_read_pointer(ts, EXEC_FLAG_REWIND);
	int64		i = 0;

	tuplestore_select_read_pointer(ts, ptr);
	tuplestore_rescan(ts);
	while (tuplestore_gettupleslot(ts, true, false, slot))
	{
		CapRow		r;

		if (i >= n)
			elog(ERROR, "gnn._capture: the transition table has more rows than it counted");
		CaptureRow(cx, slot, &r);
		memcpy(a + 8 * i, &r.a, 8);
		f[i] = r.flags;
		memcpy(b + 8 * i, &r.b, 8);
		if (weighted)
			memcpy(w + 4 * i, &r.w, 4);
		i++;
		if ((i & 65535) == 0)
			CHECK_FOR_INTERRUPTS();
	}
	ExecDropSingleTupleTableSlot(slot);
	if (i != n)
		elog(ERROR, "gnn._capture: the transition table has fewer rows than it counted");
	memset(&h, 0, sizeof(h));
	h.magic = EDGE_MAGIC;
	h.flags = weighted ? 1 : 0;
	h.nrm = removed ? n : 0;
	h.nadd = removed ? 0 : n;
	memcpy(p, &h, sizeof(h));
	len = CompactEdges(p, len);
	SET_VARSIZE(out, VARHDRSZ + len);
	*n_out = n;
	return out;
}

/*
 * The trigger: arguments graph, owner, kind ('e' edge table: source,
 * destination, weight columns; 'n' node table: id, features, label, split),
 * '' for a column not loaded.
 */
Datum
gnn_capture(PG_FUNCTION_ARGS)
{
	TriggerData *td = (TriggerData *) fcinfo->context;
	Trigger    *tg;
	Relation	rel;
	TupleDesc	desc;
	CapCtx		cx;
	const char *graph;
	Oid			owner;
	bool		ok = true;
	CapRow	   *old = NULL,
			   *new = NULL;
	int64		nold = 0,
				nnew = 0;
	bool	   *skip_old = NULL,
			   *skip_new = NULL;
	int64		kept_old,
				kept_new;
	StringInfoData b;
	ChangeHdr	h;
	MemoryContext cxt,
				prev;
	CaptureBinding bind;
	char	  **argv;

	if (!CALLED_AS_TRIGGER(fcinfo) || !TRIGGER_FIRED_AFTER(td->tg_event) ||
		!TRIGGER_FIRED_FOR_STATEMENT(td->tg_event))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("gnn._capture() must be an AFTER ... FOR EACH STATEMENT trigger"),
				 errhint("Use gnn.track() to set up change capture.")));
	tg = td->tg_trigger;
	rel = td->tg_relation;
	desc = RelationGetDescr(rel);
	/*
	 * Only a trigger gnn.track made acts, for the graph it was made for:
	 * another role's trigger on gnn._capture() (any table, any arguments)
	 * logs nothing.  Nor does a graph that is not loaded (dropped from
	 * memory by a restart, say): its next load reads the tables anyway.
	 */
	if (!TriggerBinding(tg->tgoid, RelationGetRelid(rel), &bind) || !CaptureWanted(bind.graph, bind.owner))
		return PointerGetDatum(NULL);
	graph = bind.graph;
	owner = bind.owner;
	argv = bind.args;
	if (TRIGGER_FIRED_BY_TRUNCATE(td->tg_event))
	{
		LogWrite(graph, owner, RelationGetRelid(rel), 't', 0, NULL);
		return PointerGetDatum(NULL);
	}
	memset(&cx, 0, sizeof(cx));
	cx.kind = argv[0][0];
	if (cx.kind == 's' || cx.kind == 'f')
	{
		/* a schema graph's table, a sparse feature table: which one changed, and how many rows (a reload) */
		int64		rows = (td->tg_oldtable ? tuplestore_tuple_count(td->tg_oldtable) : 0) +
			(td->tg_newtable ? tuplestore_tuple_count(td->tg_newtable) : 0);

		if (rows > 0)
			LogWrite(graph, owner, RelationGetRelid(rel), cx.kind, rows, NULL);
		return PointerGetDatum(NULL);
	}
	if (cx.kind == 'e')
	{
		ok = FindCol(desc, argv[1], cap_id_types, &cx.c[0]) && cx.c[0].att &&
			FindCol(desc, argv[2], cap_id_types, &cx.c[1]) && cx.c[1].att &&
			FindCol(desc, argv[3], num_types, &cx.c[2]) &&
			TextKeyType(cx.c[0].type) == TextKeyType(cx.c[1].type);
		cx.text_keys = ok && TextKeyType(cx.c[0].type);
	}
	else
	{
		ok = FindCol(desc, argv[1], cap_id_types, &cx.c[0]) && cx.c[0].att &&
			FindCol(desc, argv[2], cap_feat_types, &cx.c[1]) &&
			FindCol(desc, argv[3], label_types, &cx.c[2]) &&
			FindCol(desc, argv[4], text_types, &cx.c[3]);
		cx.text_label = cx.c[2].att && cx.c[2].type != INT2OID && cx.c[2].type != INT4OID &&
			cx.c[2].type != INT8OID;
		cx.text_keys = ok && TextKeyType(cx.c[0].type);
	}
	if (!ok)
	{
		/* a loaded column was dropped, renamed or retyped: only a reload can tell */
		LogWrite(graph, owner, RelationGetRelid(rel), 't', 0, NULL);
		return PointerGetDatum(NULL);
	}
	cxt = AllocSetContextCreate(CurrentMemoryContext, "gnn capture", ALLOCSET_DEFAULT_SIZES);
	prev = MemoryContextSwitchTo(cxt);
	/* an INSERT or a DELETE of edge rows: straight into the payload */
	if (cx.kind == 'e' && !cx.text_keys && (td->tg_oldtable != NULL) != (td->tg_newtable != NULL))
	{
		bool		removed = td->tg_oldtable != NULL;
		int64		n;
		bytea	   *payload = CaptureEdgesDirect(&cx, removed ? td->tg_oldtable : td->tg_newtable, desc,
												 removed, &n);

		MemoryContextSwitchTo(prev);
		if (n > 0)
			LogWriteBytea(graph, owner, RelationGetRelid(rel), 'e', n, payload);
		MemoryContextDelete(cxt);
		return PointerGetDatum(NULL);
	}
	if (td->tg_oldtable)
		old = ReadTransition(&cx, td->tg_oldtable, desc, &nold);
	if (td->tg_newtable)
		new = ReadTransition(&cx, td->tg_newtable, desc, &nnew);
	kept_old = nold;
	kept_new = nnew;
	/*
	 * An update that leaves the loaded columns as they were changes nothing
	 * here.  (Old and new rows come in the same order; were they not, a
	 * skipped pair would still be a row removed and the same row added.)
	 */
	if (old && new && nold == nnew)
	{
		skip_old = palloc0(nold);
		skip_new = palloc0(nnew);
		for (int64 i = 0; i < nold; i++)
			if (CapRowEqual(&cx, &old[i], &new[i]))
			{
				skip_old[i] = skip_new[i] = true;
				kept_old--;
				kept_new--;
			}
	}
	if (kept_old + kept_new > 0)
	{
		initStringInfo(&b);
		memset(&h, 0, sizeof(h));
		if (cx.kind == 'e')
		{
			h.magic = EDGE_MAGIC;
			h.flags = (cx.c[2].att ? 1 : 0) | (cx.text_keys ? 2 : 0);
		}
		else
		{
			h.magic = NODE_MAGIC;
			h.flags = (cx.c[1].att ? 1 : 0) | (cx.c[2].att ? 2 : 0) | (cx.text_label ? 4 : 0) |
				(cx.c[3].att ? 8 : 0) | (cx.text_keys ? 16 : 0);
		}
		h.nrm = kept_old;
		h.nadd = kept_new;
		appendBinaryStringInfo(&b, (const char *) &h, sizeof(h));
		PackRows(&b, &cx, old, skip_old, nold);
		PackRows(&b, &cx, new, skip_new, nnew);
		if (cx.kind == 'e')
			b.len = (int) CompactEdges(b.data, b.len);
		MemoryContextSwitchTo(prev);
		LogWrite(graph, owner, RelationGetRelid(rel), cx.kind, kept_old + kept_new, &b);
	}
	MemoryContextSwitchTo(prev);
	MemoryContextDelete(cxt);
	return PointerGetDatum(NULL);
}

/* ------------------------------------------------------------------ refresh */
typedef struct Reader
{
	const char *p;
	const char *end;
} Reader;

static const void *
Take(Reader *r, Size bytes)
{
	const void *p = r->p;

	if (bytes > (Size) (r->end - r->p))
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("a row of gnn.change_log is malformed"),
				 errhint("Reload the graph with gnn.load_graph(..., replace => true); it deletes the log rows it covers.")));
	r->p += bytes;
	return p;
}

/* one section (removed or added rows) of a payload */
typedef struct Section
{
	int64		n;
	const int64 *a;
	const uint8 *flags;
	const int64 *b;				/* edges: destinations; nodes: integer labels */
	const float *w;
	const int32 *nfeat;
	const float *feat;
	const int32 *llen;			/* text labels */
	const char *lbytes;
	const uint8 *split;
	/* text keys (then a, b are NULL until KeySectionIds): lengths (-1: NULL) and bytes */
	const int32 *klen[2];
	const char *kbytes[2];
} Section;

static void
ReadKeys(Reader *r, int64 n, Section *s, int which)
{
	int64		tot = 0;

	s->klen[which] = Take(r, sizeof(int32) * n);
	for (int64 i = 0; i < n; i++)
		tot += Max(s->klen[which][i], 0);
	s->kbytes[which] = Take(r, tot);
}

/* int32 ids (a compact payload) as int64 */
static const int64 *
Widen(const void *p, int64 n)
{
	int64	   *out = palloc_extended(sizeof(int64) * Max(n, 1), MCXT_ALLOC_HUGE);

	for (int64 i = 0; i < n; i++)
	{
		int32		v;

		memcpy(&v, (const char *) p + 4 * i, 4);
		out[i] = v;
	}
	return out;
}

static void
ReadSection(Reader *r, char kind, uint32 flags, int64 n, Section *s)
{
	bool		text_keys = (flags & (kind == 'e' ? 2 : 16)) != 0;
	bool		ids32 = kind == 'e' && (flags & E_IDS32);

	memset(s, 0, sizeof(*s));
	s->n = n;
	if (text_keys)
		ReadKeys(r, n, s, 0);
	else
		s->a = ids32 ? Widen(Take(r, sizeof(int32) * n), n) : Take(r, sizeof(int64) * n);
	s->flags = kind == 'e' && (flags & E_NOFLAGS) ? palloc_extended(Max(n, 1), MCXT_ALLOC_HUGE | MCXT_ALLOC_ZERO) : Take(r, n);
	if (kind == 'e')
	{
		if (text_keys)
			ReadKeys(r, n, s, 1);
		else
			s->b = ids32 ? Widen(Take(r, sizeof(int32) * n), n) : Take(r, sizeof(int64) * n);
		if ((flags & 1) && (flags & E_WCONST))
		{
			float	   *w = palloc_extended(sizeof(float) * Max(n, 1), MCXT_ALLOC_HUGE);
			float		w0 = 0;

			if (n > 0)
				memcpy(&w0, Take(r, sizeof(float)), sizeof(float));
			for (int64 i = 0; i < n; i++)
				w[i] = w0;
			s->w = w;
		}
		else if (flags & 1)
			s->w = Take(r, sizeof(float) * n);
		return;
	}
	if (flags & 1)
	{
		int64		tot = 0;

		s->nfeat = Take(r, sizeof(int32) * n);
		for (int64 i = 0; i < n; i++)
			tot += Max(s->nfeat[i], 0);
		s->feat = Take(r, sizeof(float) * tot);
	}
	if ((flags & 2) && !(flags & 4))
		s->b = Take(r, sizeof(int64) * n);
	if (flags & 4)
	{
		int64		tot = 0;

		s->llen = Take(r, sizeof(int32) * n);
		for (int64 i = 0; i < n; i++)
			tot += Max(s->llen[i], 0);
		s->lbytes = Take(r, tot);
	}
	if (flags & 8)
		s->split = Take(r, n);
}

/* a node row's last change wins */
typedef struct NodeEv
{
	int64		id;
	int64		seq;
	int64		sub;
	bool		upsert;
	uint8		flags;
	uint8		split;
	int32		nfeat;
	const float *feat;
	int64		ilabel;
	const char *tlabel;
	int32		tlen;
	bool		has_label;
} NodeEv;

static int
NodeEvCmp(const void *a, const void *b)
{
	const NodeEv *x = a,
			   *y = b;

	if (x->id != y->id)
		return x->id < y->id ? -1 : 1;
	if (x->seq != y->seq)
		return x->seq < y->seq ? -1 : 1;
	return x->sub < y->sub ? -1 : x->sub > y->sub;
}

int
GnnCmpInt64(const void *a, const void *b)
{
	int64		x = *(const int64 *) a,
				y = *(const int64 *) b;

	return x < y ? -1 : x > y;
}

/*
 * Sort a[0..n) and drop repeats; returns how many stay.  Long arrays (a
 * refresh's touched nodes: two per changed edge row) by a byte-wise radix
 * sort, skipping bytes all keys share; short ones by qsort.
 */
int64
GnnSortUnique64(int64 *a, int64 n)
{
	int64		u = 0;

	if (n > 4096)
	{
		uint64	   *x = (uint64 *) a,
				   *tmp = palloc_extended(sizeof(uint64) * n, MCXT_ALLOC_HUGE),
				   *src = x,
				   *dst = tmp;
		int64		cnt[256];

		for (int64 i = 0; i < n; i++)
			x[i] ^= UINT64CONST(1) << 63;	/* signed order as unsigned */
		for (int shift = 0; shift < 64; shift += 8)
		{
			int64		sum = 0;
			bool		one = false;

			memset(cnt, 0, sizeof(cnt));
			for (int64 i = 0; i < n; i++)
				cnt[(src[i] >> shift) & 255]++;
			for (int b = 0; b < 256; b++)
			{
				int64		c = cnt[b];

				one |= c == n;
				cnt[b] = sum;
				sum += c;
			}
			if (one)
				continue;		/* every key has this byte: already in order by it */
			for (int64 i = 0; i < n; i++)
				dst[cnt[(src[i] >> shift) & 255]++] = src[i];
			{
				uint64	   *t = src;

				src = dst;
				dst = t;
			}
		}
		if (src != x)
			memcpy(x, src, sizeof(uint64) * n);
		pfree(tmp);
		for (int64 i = 0; i < n; i++)
			x[i] ^= UINT64CONST(1) << 63;
	}
	else
		qsort(a, n, sizeof(int64), GnnCmpInt64);
	for (int64 i = 0; i < n; i++)
		if (u == 0 || a[u - 1] != a[i])
			a[u++] = a[i];
	return u;
}

typedef struct Refresh
{
	const char *name;
	GnnGraphEntry entry;
	const gnn_graph *base;
	gnn_graph_changes ch;
	GrowArray	rm_src,
				rm_dst,
				rm_w,
				add_src,
				add_dst,
				add_w,
				rm_nodes,
				up_ids,
				up_feat,
				up_labels,
				up_split;
	int64		cand_n;			/* edge-only graphs: endpoints of removed rows */
	int64	   *cand;
	const char *reload;			/* why the changes cannot be merged: reload instead */
	List	   *sparse_rels;	/* the sparse feature table and its partitions (NIL: none) */
	/* text keys the base lacks, by provisional id -1, -2, ... (KeySectionIds) */
	HTAB	   *new_keys;
	GrowArray	new_key_list;
} Refresh;

/* a text key in a log row's payload */
typedef struct KeyRef
{
	const char *p;
	int32		len;
} KeyRef;

typedef struct NewKey
{
	KeyRef		k;				/* hash key */
	int64		id;
} NewKey;

static uint32
KeyRefHash(const void *key, Size keysize)
{
	const KeyRef *k = key;

	return hash_bytes((const unsigned char *) k->p, k->len);
}

static int
KeyRefMatch(const void *a, const void *b, Size keysize)
{
	const KeyRef *x = a,
			   *y = b;

	return x->len == y->len && memcmp(x->p, y->p, x->len) == 0 ? 0 : 1;
}

/*
 * A key the base does not have: one provisional id per distinct key, below
 * every real one (a text-keyed graph's ids are 0..n-1).  Rows at such keys
 * may still cancel (inserted and deleted since the base); what is left
 * means nodes come, which a text-keyed graph takes as a reload.
 */
static int64
NewKeyId(Refresh *R, const char *p, int32 len)
{
	KeyRef		k = {p, len};
	NewKey	   *e;
	bool		found;

	if (R->new_keys == NULL)
	{
		HASHCTL		ctl;

		memset(&ctl, 0, sizeof(ctl));
		ctl.keysize = sizeof(KeyRef);
		ctl.entrysize = sizeof(NewKey);
		ctl.hash = KeyRefHash;
		ctl.match = KeyRefMatch;
		ctl.hcxt = CurrentMemoryContext;
		R->new_keys = hash_create("gnn refresh keys", 256, &ctl,
								  HASH_ELEM | HASH_FUNCTION | HASH_COMPARE | HASH_CONTEXT);
		GrowInit(&R->new_key_list, CurrentMemoryContext, sizeof(KeyRef), 64);
	}
	e = hash_search(R->new_keys, &k, HASH_ENTER, &found);
	if (!found)
	{
		*(KeyRef *) GrowPush(&R->new_key_list) = k;
		e->id = -R->new_key_list.n;
	}
	return e->id;
}

/* A section's text keys as the base's node ids (ReadSection left a, and for edges b, NULL). */
static void
KeySectionIds(Refresh *R, Section *s, char kind)
{
	for (int w = 0; w < (kind == 'e' ? 2 : 1); w++)
	{
		const char *p = s->kbytes[w];
		int64	   *ids;

		if (s->klen[w] == NULL)
			continue;
		ids = palloc_extended(sizeof(int64) * Max(s->n, 1), MCXT_ALLOC_HUGE);
		for (int64 i = 0; i < s->n; i++)
		{
			int32		len = s->klen[w][i];
			int64		v;

			if (len < 0)
			{
				ids[i] = 0;		/* NULL: the row's flags say so */
				continue;
			}
			v = gnn_graph_find_text(R->base, 0, p, len);
			ids[i] = v >= 0 ? R->base->ids[v] : NewKeyId(R, p, len);
			p += len;
		}
		if (w == 0)
			s->a = ids;
		else
			s->b = ids;
	}
}

/* The key of a provisional id, for messages. */
static char *
NewKeyText(const Refresh *R, int64 id)
{
	const KeyRef *k = &((const KeyRef *) R->new_key_list.data)[-id - 1];

	return pnstrdup(k->p, k->len);
}

/* edge rows by (source, destination, weight bits) */
typedef struct EdgeKey
{
	int64		s;
	int64		d;
	uint32		w;
	int64		i;
} EdgeKey;

static int
EdgeKeyCmp(const void *a, const void *b)
{
	const EdgeKey *x = a,
			   *y = b;

	if (x->s != y->s)
		return x->s < y->s ? -1 : 1;
	if (x->d != y->d)
		return x->d < y->d ? -1 : 1;
	if (x->w != y->w)
		return x->w < y->w ? -1 : 1;
	return x->i < y->i ? -1 : x->i > y->i;
}

static EdgeKey *
EdgeKeys(GrowArray *s, GrowArray *d, GrowArray *w)
{
	EdgeKey    *k = palloc_extended(sizeof(EdgeKey) * Max(s->n, 1), MCXT_ALLOC_HUGE);

	for (int64 i = 0; i < s->n; i++)
	{
		k[i].s = ((int64 *) s->data)[i];
		k[i].d = ((int64 *) d->data)[i];
		memcpy(&k[i].w, &((float *) w->data)[i], sizeof(uint32));
		k[i].i = i;
	}
	qsort(k, s->n, sizeof(EdgeKey), EdgeKeyCmp);
	return k;
}

static void
Compact(GrowArray *s, GrowArray *d, GrowArray *w, const bool *gone)
{
	int64		m = 0;

	for (int64 i = 0; i < s->n; i++)
		if (!gone[i])
		{
			((int64 *) s->data)[m] = ((int64 *) s->data)[i];
			((int64 *) d->data)[m] = ((int64 *) d->data)[i];
			((float *) w->data)[m] = ((float *) w->data)[i];
			m++;
		}
	s->n = d->n = w->n = m;
}

/*
 * A row added and removed again since the base (an insert then a delete,
 * an update undone) is no change: the core applies removals before
 * additions and would find no such row in the base.
 */
static void
CancelPairs(Refresh *R)
{
	EdgeKey    *a,
			   *r;
	bool	   *ga,
			   *gr;
	int64		i = 0,
				j = 0,
				na = R->add_src.n,
				nr = R->rm_src.n;

	if (na == 0 || nr == 0)
		return;
	a = EdgeKeys(&R->add_src, &R->add_dst, &R->add_w);
	r = EdgeKeys(&R->rm_src, &R->rm_dst, &R->rm_w);
	ga = palloc0(na);
	gr = palloc0(nr);
	while (i < na && j < nr)
	{
		EdgeKey		x = a[i],
					y = r[j];
		int			c;

		x.i = y.i = 0;
		c = EdgeKeyCmp(&x, &y);
		if (c < 0)
			i++;
		else if (c > 0)
			j++;
		else
		{
			ga[a[i++].i] = true;
			gr[r[j++].i] = true;
		}
	}
	Compact(&R->add_src, &R->add_dst, &R->add_w, ga);
	Compact(&R->rm_src, &R->rm_dst, &R->rm_w, gr);
}

/* class id of a text label in the base, or -1 */
static int32
ClassOf(const gnn_graph *g, const char *t, int32 len)
{
	const char *p = g->class_names;
	int32		c = 0;

	if (p == NULL)
		return -1;
	while (p < g->class_names + g->class_names_bytes)
	{
		size_t		l = strlen(p);

		if ((int32) l == len && memcmp(p, t, len) == 0)
			return c;
		p += l + 1;
		c++;
	}
	return -1;
}

static void
CollectChanges(Refresh *R, LogRow *rows, int64 nrows, List *edge_rels, List *node_rels)
{
	MemoryContext cxt = CurrentMemoryContext;
	const gnn_graph *g = R->base;
	bool		weighted = R->entry.weight_col[0] != '\0';
	NodeEv	   *ev = NULL;
	int64		nev = 0,
				evcap = 0;
	GrowArray	cand;

	GrowInit(&R->rm_src, cxt, sizeof(int64), 64);
	GrowInit(&R->rm_dst, cxt, sizeof(int64), 64);
	GrowInit(&R->rm_w, cxt, sizeof(float), 64);
	GrowInit(&R->add_src, cxt, sizeof(int64), 64);
	GrowInit(&R->add_dst, cxt, sizeof(int64), 64);
	GrowInit(&R->add_w, cxt, sizeof(float), 64);
	GrowInit(&cand, cxt, sizeof(int64), 64);

	for (int64 k = 0; k < nrows && !R->reload; k++)
	{
		LogRow	   *lr = &rows[k];
		Reader		r;
		const ChangeHdr *h;
		Section		sec[2];

		if (lr->kind == 't')
		{
			if (list_member_oid(edge_rels, lr->relid) || list_member_oid(node_rels, lr->relid) ||
				list_member_oid(R->sparse_rels, lr->relid))
				R->reload = lr->rows == DDL_ROWS
					? psprintf("%s was altered (DDL) since the last refresh", QualifiedRelName(lr->relid))
					: psprintf("%s was truncated, or a loaded column of it changed", QualifiedRelName(lr->relid));
			continue;
		}
		if (lr->kind == 'f')
		{
			/* a node's sparse row is all its (index, value) rows: the load builds them */
			if (list_member_oid(R->sparse_rels, lr->relid))
				R->reload = psprintf("the sparse features in %s changed", QualifiedRelName(lr->relid));
			else if (R->entry.feat_encoded && list_member_oid(node_rels, lr->relid))
				R->reload = psprintf("rows of %s changed, and its columns are encoded features (kept as they were encoded)",
									 QualifiedRelName(lr->relid));
			continue;
		}
		if (lr->changes == NULL ||
			!(lr->kind == 'e' ? list_member_oid(edge_rels, lr->relid) : list_member_oid(node_rels, lr->relid)))
			continue;			/* not this graph's tables: never applied */
		r.p = VARDATA_ANY(lr->changes);
		r.end = r.p + VARSIZE_ANY_EXHDR(lr->changes);
		h = Take(&r, sizeof(ChangeHdr));
		if (h->magic != (lr->kind == 'e' ? EDGE_MAGIC : NODE_MAGIC) || h->nrm < 0 || h->nadd < 0)
			(void) Take(&r, (Size) (r.end - r.p) + 1);	/* malformed */
		ReadSection(&r, lr->kind, h->flags, h->nrm, &sec[0]);
		ReadSection(&r, lr->kind, h->flags, h->nadd, &sec[1]);
		if (((h->flags & (lr->kind == 'e' ? 2 : 16)) != 0) != (g->key_off != NULL))
		{
			R->reload = psprintf("the id columns of %s changed type", QualifiedRelName(lr->relid));
			break;
		}
		KeySectionIds(R, &sec[0], lr->kind);
		KeySectionIds(R, &sec[1], lr->kind);
		if (lr->kind == 'e')
		{
			if (((h->flags & 1) != 0) != weighted)
			{
				R->reload = "the edge weight column changed";
				break;
			}
			for (int s = 0; s < 2; s++)
				for (int64 i = 0; i < sec[s].n; i++)
				{
					if (sec[s].flags[i])
					{
						R->reload = psprintf("a row of %s has a NULL endpoint or an invalid weight",
											 QualifiedRelName(lr->relid));
						break;
					}
					*(int64 *) GrowPush(s ? &R->add_src : &R->rm_src) = sec[s].a[i];
					*(int64 *) GrowPush(s ? &R->add_dst : &R->rm_dst) = sec[s].b[i];
					*(float *) GrowPush(s ? &R->add_w : &R->rm_w) = weighted ? sec[s].w[i] : 1.0f;
					if (s == 0 && !OidIsValid(R->entry.nodes_rel))
					{
						*(int64 *) GrowPush(&cand) = sec[s].a[i];
						*(int64 *) GrowPush(&cand) = sec[s].b[i];
					}
				}
			continue;
		}
		/* node rows */
		{
			const float *fp[2] = {sec[0].feat, sec[1].feat};
			const char *lp[2] = {sec[0].lbytes, sec[1].lbytes};

			for (int s = 0; s < 2; s++)
				for (int64 i = 0; i < sec[s].n; i++)
				{
					NodeEv	   *e;

					if (nev == evcap)
					{
						evcap = evcap ? evcap * 2 : 256;
						ev = ev ? repalloc_huge(ev, sizeof(NodeEv) * evcap) : palloc_extended(sizeof(NodeEv) * evcap, MCXT_ALLOC_HUGE);
					}
					e = &ev[nev++];
					memset(e, 0, sizeof(*e));
					e->id = sec[s].a[i];
					e->seq = lr->seq;
					e->sub = s * h->nrm + i;
					e->upsert = s == 1;
					e->flags = sec[s].flags[i];
					e->split = sec[s].split ? sec[s].split[i] : GNN_SPLIT_NONE;
					if (sec[s].nfeat)
					{
						e->nfeat = sec[s].nfeat[i];
						e->feat = fp[s];
						fp[s] += Max(e->nfeat, 0);
					}
					if (sec[s].b)
					{
						e->has_label = true;
						e->ilabel = sec[s].b[i];
					}
					if (sec[s].llen)
					{
						e->has_label = true;
						e->tlen = sec[s].llen[i];
						e->tlabel = lp[s];
						lp[s] += Max(e->tlen, 0);
					}
					if (!e->upsert && (e->flags & F_NULL_A))
						nev--;	/* a row without id was never a node */
				}
		}
	}
	if (R->reload)
		return;
	CancelPairs(R);

	/* nodes: the last change of each id */
	if (nev > 0)
	{
		bool		dense = g->feat_kind == GNN_FEAT_DENSE;
		bool		has_labels = R->entry.label_col[0] != '\0';
		bool		has_split = R->entry.split_col[0] != '\0';

		qsort(ev, nev, sizeof(NodeEv), NodeEvCmp);
		GrowInit(&R->rm_nodes, cxt, sizeof(int64), 64);
		GrowInit(&R->up_ids, cxt, sizeof(int64), 64);
		if (dense)
			GrowInit(&R->up_feat, cxt, sizeof(float) * g->feat_dim, 64);
		if (has_labels)
			GrowInit(&R->up_labels, cxt, sizeof(int32), 64);
		if (has_split)
			GrowInit(&R->up_split, cxt, 1, 64);
		for (int64 i = 0; i < nev; i++)
		{
			NodeEv	   *e = &ev[i];

			if (i + 1 < nev && ev[i + 1].id == e->id)
				continue;
			if (!e->upsert)
			{
				if (gnn_graph_find(g, e->id) >= 0)
					*(int64 *) GrowPush(&R->rm_nodes) = e->id;
				continue;
			}
			if (e->flags & (F_NULL_A | F_NULL_B | F_BAD))
			{
				R->reload = "a node row has a NULL id, NULL or invalid features, or a negative label";
				return;
			}
			if (R->entry.skip_dangling && gnn_graph_find(g, e->id) < 0)
			{
				R->reload = "a new node may complete edges that were left out as dangling";
				return;
			}
			*(int64 *) GrowPush(&R->up_ids) = e->id;
			if (dense)
			{
				if (e->nfeat != g->feat_dim)
				{
					R->reload = psprintf("node %lld now has %d features, the graph %d",
										 (long long) e->id, e->nfeat, g->feat_dim);
					return;
				}
				memcpy(GrowPush(&R->up_feat), e->feat, sizeof(float) * g->feat_dim);
			}
			if (has_labels)
			{
				int32		l = -1;

				if (!(e->flags & F_NULL_LABEL) && e->tlabel)
				{
					l = ClassOf(g, e->tlabel, e->tlen);
					if (l < 0)
					{
						R->reload = psprintf("node %lld has a new class \"%s\"", (long long) e->id,
											 pnstrdup(e->tlabel, e->tlen));
						return;
					}
				}
				else if (!(e->flags & F_NULL_LABEL) && e->has_label)
				{
					if (e->ilabel >= g->num_classes)
					{
						R->reload = psprintf("node %lld has label %lld, beyond the graph's %d classes",
											 (long long) e->id, (long long) e->ilabel, g->num_classes);
						return;
					}
					l = (int32) e->ilabel;
				}
				*(int32 *) GrowPush(&R->up_labels) = l;
			}
			if (has_split)
			{
				if (e->split == 255)
				{
					R->reload = psprintf("node %lld has a split that is not train, val, test or NULL", (long long) e->id);
					return;
				}
				*(uint8 *) GrowPush(&R->up_split) = e->split;
			}
		}
		R->ch.num_removed_nodes = R->rm_nodes.n;
		R->ch.rm_nodes = (int64_t *) R->rm_nodes.data;
		R->ch.num_upserted_nodes = R->up_ids.n;
		R->ch.up_ids = (int64_t *) R->up_ids.data;
		R->ch.up_feat = dense ? (float *) R->up_feat.data : NULL;
		R->ch.up_labels = has_labels ? (int32_t *) R->up_labels.data : NULL;
		R->ch.up_split = has_split ? (uint8_t *) R->up_split.data : NULL;
	}
	else if (!OidIsValid(R->entry.nodes_rel) && R->add_src.n > 0)
	{
		/* endpoints only: an endpoint the graph lacks is a new node */
		int64		n = 0;
		int64	   *ids = palloc_extended(sizeof(int64) * 2 * R->add_src.n, MCXT_ALLOC_HUGE);

		for (int64 i = 0; i < R->add_src.n; i++)
		{
			int64		s = ((int64 *) R->add_src.data)[i],
						d = ((int64 *) R->add_dst.data)[i];

			if (gnn_graph_find(g, s) < 0)
				ids[n++] = s;
			if (gnn_graph_find(g, d) < 0)
				ids[n++] = d;
		}
		n = GnnSortUnique64(ids, n);
		R->ch.num_upserted_nodes = n;
		R->ch.up_ids = ids;
	}
	/* text keys: what is still at a key the base lacks makes a node (or a dangling row) */
	if (R->new_keys)
	{
		int64		id = 0;

		for (int64 i = 0; i < R->add_src.n && id >= 0; i++)
			id = Min(((int64 *) R->add_src.data)[i], ((int64 *) R->add_dst.data)[i]);
		for (int64 i = 0; i < R->ch.num_upserted_nodes && id >= 0; i++)
			id = R->ch.up_ids[i];
		if (id < 0)
		{
			R->reload = psprintf("node \"%s\" is new, and a reload numbers the nodes of a text-keyed graph",
								 NewKeyText(R, id));
			return;
		}
	}
	R->ch.num_removed_edges = R->rm_src.n;
	R->ch.rm_src = (int64_t *) R->rm_src.data;
	R->ch.rm_dst = (int64_t *) R->rm_dst.data;
	R->ch.rm_weight = weighted ? (float *) R->rm_w.data : NULL;
	R->ch.num_added_edges = R->add_src.n;
	R->ch.add_src = (int64_t *) R->add_src.data;
	R->ch.add_dst = (int64_t *) R->add_dst.data;
	R->ch.add_weight = weighted ? (float *) R->add_w.data : NULL;
	R->ch.skip_dangling = R->entry.skip_dangling;
	R->ch.undirected = R->entry.undirected;
	R->ch.nthreads = gnn_threads;
	R->cand = (int64 *) cand.data;
	R->cand_n = cand.n;
}

/*
 * Apply ch to base into a new segment (mapped until commit): a delta over
 * base's region when max_delta > 0 and the changes fit one (*is_delta),
 * else a new region; false with *why for a reload
 */
static bool
ApplyChanges(Refresh *R, const gnn_graph *base, const gnn_graph_changes *ch, uint64 max_delta,
			 RegionRequest *rq, void **region, uint64 *size, gnn_graph_change_stats *st, bool *is_delta,
			 const char **why)
{
	gnn_error	err;
	gnn_status	s = GNN_ERR_UNSUPPORTED;

	memset(rq, 0, sizeof(*rq));
	rq->name = R->name;
	rq->mcxt = CurrentMemoryContext;
	rq->top_owner = true;
	*is_delta = false;
	GnnCoreThreadsInit();
	if (max_delta > 0)
	{
		gnn_graph_changes dc = *ch;

		dc.as_delta = true;
		dc.max_delta_bytes = max_delta;
		s = gnn_graph_apply_changes(base, &dc, RegionAlloc, rq, region, size, st, &err);
		if (rq->error)
			ReThrowError(rq->error);
		if (s == GNN_OK)
		{
			*is_delta = true;
			return true;
		}
		if (s == GNN_ERR_UNSUPPORTED)
			elog(DEBUG1, "gnn.refresh_graph: \"%s\" merges: %s", R->name, err.msg);
	}
	if (s == GNN_ERR_UNSUPPORTED)
	{
		s = gnn_graph_apply_changes(base, ch, RegionAlloc, rq, region, size, st, &err);
		if (rq->error)
			ReThrowError(rq->error);
	}
	if (s == GNN_OK)
		return true;
	if (rq->seg)
	{
		dsm_detach(rq->seg);
		rq->seg = NULL;
	}
	if (rq->reserved)
		GnnGraphUnreserve(rq->reserved);
	rq->reserved = 0;
	if (s == GNN_ERR_NOMEM)
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("graph \"%s\": out of memory while refreshing", R->name),
				 errdetail("%s", err.msg)));
	/* the log and the graph disagree, a row dangles or has a bad value: a reload says exactly what */
	*why = pstrdup(err.msg);
	return false;
}

/*
 * Text classes are numbered in name order of the labels present: when one
 * loses its last node, a load numbers the rest anew, so the merged graph
 * (which keeps the names) is not what a load makes.
 */
static const char *
VanishedClass(const gnn_graph *gp)
{
	gnn_graph	g = *gp;
	bool	   *seen;
	const char *p;

	if (g.class_names == NULL || g.labels == NULL)
		return NULL;
	seen = palloc0(Max(g.num_classes, 1) + 1);
	for (int64 v = 0; v < g.num_nodes; v++)
		if (g.labels[v] >= 0 && g.labels[v] < g.num_classes)
			seen[g.labels[v]] = true;
	p = g.class_names;
	for (int32 c = 0; p < g.class_names + g.class_names_bytes; c++)
	{
		if (c >= g.num_classes || !seen[c])
			return psprintf("no node is left in class \"%s\"", p);
		p += strlen(p) + 1;
	}
	return NULL;
}

/*
 * The nodes whose own data or in- or out-arcs the changes alter: endpoints
 * of edge rows in and out, new nodes and those whose features changed, and
 * removed nodes with every neighbour they had.  A model's output can change
 * only within its receptive field's reach of these (gnn.embed's
 * incremental mode).
 */
static int64 *
TouchedNodes(const Refresh *R, const gnn_graph *base, int64 *n_out, int64 **data_out, int64 *nd_out)
{
	const gnn_graph_changes *ch = &R->ch;
	int64		cap = 2 * (ch->num_removed_edges + ch->num_added_edges) + ch->num_upserted_nodes +
		ch->num_removed_nodes + 16;
	int64	   *t;
	int64		n = 0;

	for (int64 i = 0; i < ch->num_removed_nodes; i++)
	{
		int64		o = gnn_graph_find(base, ch->rm_nodes[i]);

		if (o >= 0)
			cap += gnn_graph_out_degree(base, o) + gnn_graph_in_degree(base, o);
	}
	t = palloc_extended(sizeof(int64) * cap, MCXT_ALLOC_HUGE);
	for (int64 i = 0; i < ch->num_removed_edges; i++)
	{
		t[n++] = ch->rm_src[i];
		t[n++] = ch->rm_dst[i];
	}
	for (int64 i = 0; i < ch->num_added_edges; i++)
	{
		t[n++] = ch->add_src[i];
		t[n++] = ch->add_dst[i];
	}
	/* nodes whose own data (features) changed, or that came: the rest changed only arcs */
	*data_out = palloc(sizeof(int64) * (ch->num_upserted_nodes + 1));
	*nd_out = 0;
	for (int64 i = 0; i < ch->num_upserted_nodes; i++)
	{
		int64		o = gnn_graph_find(base, ch->up_ids[i]);

		if (o < 0 || (ch->up_feat && base->feat &&
					  memcmp(ch->up_feat + i * base->feat_dim, gnn_graph_feat_row(base, o),
							 sizeof(float) * base->feat_dim) != 0))
		{
			t[n++] = ch->up_ids[i];
			(*data_out)[(*nd_out)++] = ch->up_ids[i];
		}
	}
	*nd_out = GnnSortUnique64(*data_out, *nd_out);
	for (int64 i = 0; i < ch->num_removed_nodes; i++)
	{
		int64		o = gnn_graph_find(base, ch->rm_nodes[i]);

		t[n++] = ch->rm_nodes[i];
		if (o < 0)
			continue;
		{
			const int32 *nb;
			int64		len = gnn_graph_out_row(base, o, &nb, NULL, NULL);

			for (int64 e = 0; e < len; e++)
				t[n++] = base->ids[nb[e]];
			len = gnn_graph_in_row(base, o, &nb, NULL);
			for (int64 e = 0; e < len; e++)
				t[n++] = base->ids[nb[e]];
		}
	}
	*n_out = GnnSortUnique64(t, n);
	return t;
}

/*
 * Keep what the refresh from base_gen to gen touched (gnn.graph_history),
 * in the refresh's transaction, and forget history no incremental embed can
 * need any more (older than every gnn.embed_state of the graph, or of an
 * earlier server lifetime).
 */
static void
RecordHistory(const char *name, uint64 base_gen, uint64 gen, const int64 *touched, int64 n, const int64 *data,
			  int64 nd)
{
	Datum	   *d = palloc(sizeof(Datum) * Max(n, 1));
	Datum	   *dd = palloc(sizeof(Datum) * Max(nd, 1));
	Oid			types[5] = {OIDOID, TEXTOID, INT8OID, INT8OID, INT8OID};
	Datum		values[5];
	Oid			htypes[7] = {OIDOID, TEXTOID, INT8OID, INT8OID, INT8OID, INT8ARRAYOID, INT8ARRAYOID};
	Datum		hvalues[7];

	for (int64 i = 0; i < n; i++)
		d[i] = Int64GetDatum(touched[i]);
	for (int64 i = 0; i < nd; i++)
		dd[i] = Int64GetDatum(data[i]);
	values[0] = ObjectIdGetDatum(GetUserId());
	values[1] = CStringGetTextDatum(name);
	values[2] = Int64GetDatum((int64) gnn_shared->instance);
	values[3] = Int64GetDatum((int64) base_gen);
	values[4] = Int64GetDatum((int64) gen);
	memcpy(hvalues, values, sizeof(values));
	hvalues[5] = PointerGetDatum(construct_array(d, (int) n, INT8OID, 8, true, TYPALIGN_DOUBLE));
	hvalues[6] = PointerGetDatum(construct_array(dd, (int) nd, INT8OID, 8, true, TYPALIGN_DOUBLE));
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	GnnCatalogExec("DELETE FROM gnn.graph_history h WHERE h.owner = $1::regrole AND h.graph = $2 "
				   "AND (h.instance <> $3 OR h.base_generation < coalesce("
				   "(SELECT min(s.generation) FROM gnn.embed_state s WHERE s.owner = $1::regrole "
				   "AND s.graph = $2 AND s.instance = $3), $4))",
				   5, types, values, NULL, 0);
	GnnCatalogExec("INSERT INTO gnn.graph_history (owner, graph, instance, base_generation, generation, touched, "
				   "data_touched) VALUES ($1::regrole, $2, $3, $4, $5, $6, $7)", 7, htypes, hvalues, NULL, 0);
	SPI_finish();
}

/*
 * A table the graph reads that has no capture trigger: a partition attached
 * (or created) after tracking began.  Its rows, and every change to it made
 * directly, were never logged, so the log cannot bring the graph up to date:
 * the refresh reloads, and the reload puts triggers on it.  NULL when every
 * table is captured.
 */
static const char *
UncapturedTable(List *trig, List *edge_rels, List *node_rels)
{
	List	   *rels = list_concat_copy(edge_rels, node_rels);
	ListCell   *lc;

	foreach(lc, rels)
	{
		Oid			relid = lfirst_oid(lc);
		bool		found = false;
		ListCell   *lt;

		foreach(lt, trig)
			found |= ((ExistingTrig *) lfirst(lt))->relid == relid;
		if (!found)
			return psprintf("%s is not captured (a partition attached after tracking began)",
							QualifiedRelName(relid));
	}
	return NULL;
}

/* DEBUG1 lines with the time of each phase of a refresh */
static instr_time phase_start;

/* ------------------------------------------------------------------ schema graphs */

/* g's meta as a string of its own (it outlives the mapping); "{}" when it has none */
static char *
MetaCopy(const gnn_graph *g)
{
	return g->meta ? pnstrdup(g->meta, g->meta_bytes) : pstrdup("{}");
}

/* A schema graph's tables (its node types' relations, in type order), from its meta. */
static Oid *
SchemaTables(const gnn_graph *g, const char *name, int *n_out)
{
	Oid		   *rels;
	int			n;
	MemoryContext caller = CurrentMemoryContext;

	if (g->meta == NULL)
		elog(ERROR, "schema graph \"%s\" has no metadata", name);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (SPI_execute_with_args("SELECT (t->>'oid')::oid FROM jsonb_array_elements($1::jsonb->'types') "
							  "WITH ORDINALITY a(t, i) ORDER BY i", 1, (Oid[]) {TEXTOID},
							  (Datum[]) {PointerGetDatum(cstring_to_text_with_len(g->meta, (int) g->meta_bytes))},
							  NULL, true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read the metadata of graph \"%s\"", name);
	n = (int) SPI_processed;
	rels = MemoryContextAlloc(caller, sizeof(Oid) * Max(n, 1));
	for (int i = 0; i < n; i++)
	{
		bool		isnull;

		rels[i] = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &isnull));
	}
	SPI_finish();
	*n_out = n;
	return rels;
}

/*
 * Load a schema graph again from its tables, as it was loaded (its meta
 * keeps the tables and options; the entry the target, label and split),
 * tracked: what gnn.track and a schema graph's refresh do.
 */
static void
ReloadSchema(const GnnGraphEntry *e, const char *meta, int64 *nodes, int64 *edges)
{
	Oid			types[6] = {TEXTOID, TEXTOID, OIDOID, TEXTOID, TEXTOID, BOOLOID};
	Datum		values[6];
	char		nulls[7] = "      ";
	bool		isnull;

	values[5] = BoolGetDatum(e->stored);	/* it stays stored if it was, and in memory only if it was */
	values[0] = CStringGetTextDatum(e->name);
	values[1] = CStringGetTextDatum(meta);
	values[2] = ObjectIdGetDatum(e->nodes_rel);
	nulls[2] = OidIsValid(e->nodes_rel) ? ' ' : 'n';
	values[3] = CStringGetTextDatum(e->label_col);
	nulls[3] = e->label_col[0] ? ' ' : 'n';
	values[4] = CStringGetTextDatum(e->split_col);
	nulls[4] = e->split_col[0] ? ' ' : 'n';
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	/* a table dropped since: say so, rather than what a missing OID makes of the load */
	if (SPI_execute_with_args("SELECT (t->>'table') FROM jsonb_array_elements($2::jsonb->'types') t "
							  "WHERE NOT EXISTS (SELECT 1 FROM pg_catalog.pg_class c WHERE c.oid = (t->>'oid')::oid) "
							  "LIMIT 1", 5, types, values, nulls, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read the metadata of graph \"%s\"", e->name);
	if (SPI_processed > 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("table %s of schema graph \"%s\" was dropped", 
						SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1), e->name),
				 errhint("Load the graph again from the tables there are: gnn.load_schema_graph('%s', ..., replace => true).",
						 e->name)));
	if (SPI_execute_with_args("SELECT nodes, edges FROM gnn.load_schema_graph($1, "
							  "ARRAY(SELECT (t->>'oid')::oid::regclass FROM jsonb_array_elements($2::jsonb->'types') "
							  "WITH ORDINALITY a(t, i) ORDER BY i), $3::regclass, $4, $5, "
							  "coalesce($2::jsonb->'load'->'options', '{}') || jsonb_build_object('persist', $6), "
							  "replace => true, track => true)",
							  6, types, values, nulls, false, 1) != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "could not reload graph \"%s\"", e->name);
	*nodes = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	*edges = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull));
	SPI_finish();
}

/*
 * A schema graph's refresh: its features are encoded over whole columns
 * (normalised, categories counted), so a changed row can move every node's
 * features; its edges are foreign-key columns of node rows.  It follows its
 * tables by a reload, when a statement changed one of them since the last.
 */
static void
RefreshSchema(const char *name, GnnGraphRef *ref, List *trig, const char *capture_off, GnnRefreshResult *out)
{
	Oid			owner = GetUserId();
	GnnGraphEntry entry = ref->entry;
	int			nrel;
	Oid		   *rels = SchemaTables(&ref->g, name, &nrel);
	List	   *all = NIL;
	Relation	lr;
	LogRow	   *rows;
	int64		nrows;
	const char *why = capture_off;
	char	   *meta;

	for (int i = 0; i < nrel; i++)
		if (get_rel_name(rels[i]) != NULL)
			all = list_concat(all, WithPartitions(rels[i]));
		else
			why = "one of its tables was dropped";	/* the reload says which */
	PushActiveSnapshot(GetLatestSnapshot());
	lr = table_open(LogRelid(), RowExclusiveLock);
	rows = ReadLog(lr, GetActiveSnapshot(), name, owner, false, &nrows);
	for (int64 k = 0; k < nrows && !why; k++)
		if (list_member_oid(all, rows[k].relid) || rows[k].kind == 't')
			why = psprintf("%s changed, and a schema graph follows its tables by a reload",
						   QualifiedRelName(rows[k].relid));
	if (!why)
		why = UncapturedTable(trig, NIL, all);
	if (!why)
	{
		/* nothing of its tables: rows of tables it no longer reads go */
		DeleteLogRows(lr, rows, nrows);
		table_close(lr, RowExclusiveLock);
		PopActiveSnapshot();
		GnnGraphRelease(ref);
		return;
	}
	table_close(lr, RowExclusiveLock);
	PopActiveSnapshot();
	meta = MetaCopy(&ref->g);
	GnnGraphRelease(ref);
	ereport(NOTICE, (errmsg("graph \"%s\" is reloaded in full: %s", name, why)));
	ReloadSchema(&entry, meta, &out->ins_n, &out->ins_e);
	out->reloaded = true;
	out->del_e = entry.edges;
	out->del_n = entry.nodes;
}

static void
RefreshPhase(const char *done)
{
	instr_time	now;

	INSTR_TIME_SET_CURRENT(now);
	if (done)
	{
		instr_time	d = now;

		INSTR_TIME_SUBTRACT(d, phase_start);
		elog(DEBUG1, "gnn.refresh_graph: %s took %.3f s", done, INSTR_TIME_GET_DOUBLE(d));
	}
	phase_start = now;
}

void
GnnRefreshGraph(const char *name, bool merge, GnnRefreshResult *out)
{
	Oid			owner = GetUserId();
	GnnGraphEntry entry;
	GnnGraphRef ref;
	gnn_graph	base;
	gnn_error	err;
	Relation	lr;
	LogRow	   *rows;
	int64		nrows;
	Refresh		R;
	List	   *edge_rels,
			   *node_rels = NIL;
	RegionRequest rq;
	void	   *region = NULL;
	uint64		size = 0;
	gnn_graph_change_stats st;
	const char *why = NULL;
	uint64		max_delta = 0;
	bool		is_delta = false;
	gnn_graph	result;
	List	   *trig;
	void	   *premap;
	const char *capture_off;
	bool		gone;

	memset(out, 0, sizeof(*out));
	memset(&ref, 0, sizeof(ref));
	RefreshPhase(NULL);
	GnnRequirePreload();
	GnnCheckGraphName(name);
	GnnLockGraph(name, owner);
	GnnGraphForgetStatement(name);
	/* this transaction's own unpublished version, if any, else the registered one; its delta in place */
	GnnGraphAcquireView(name, &ref);
	entry = ref.entry;
	base = ref.g;
	/*
	 * the changes become a delta over the registered base (one this
	 * transaction loaded or merged is not registered yet: a new region then)
	 */
	if (gnn_merge_threshold > 0 && !merge && !(ref.borrowed && ref.dseg == NULL))
		max_delta = Max((uint64) (gnn_merge_threshold * (double) dsm_segment_map_length(ref.seg)), 1);
	trig = ExistingTriggers(name, owner);
	if (!entry.tracked || trig == NIL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("graph \"%s\" is not tracked", name),
				 errhint("Capture its tables' changes with gnn.track('%s'), or reload it with gnn.load_graph(..., replace => true).", name)));
	capture_off = CaptureProblem(trig, &gone);
	if (!capture_off && entry.reload_at_refresh && !gone)
		capture_off = "the server restarted since its last full version was stored (later refreshes are not in the graph store)";
	if (gone)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("graph \"%s\" no longer follows its tables: %s", name, capture_off),
				 errdetail("Its loaded version stays as it is; changes are no longer captured."),
				 errhint("Load it again from the tables it should read (%s(..., replace => true, track => true)), "
						 "or stop tracking it with gnn.track('%s', false).",
						 entry.schema_graph ? "gnn.load_schema_graph" : "gnn.load_graph", name)));
	if (entry.schema_graph)
	{
		RefreshSchema(name, &ref, trig, capture_off, out);
		return;
	}
	edge_rels = WithPartitions(entry.edges_rel);
	if (OidIsValid(entry.nodes_rel))
		node_rels = WithPartitions(entry.nodes_rel);

	PushActiveSnapshot(GetLatestSnapshot());
	lr = table_open(LogRelid(), RowExclusiveLock);
	rows = ReadLog(lr, GetActiveSnapshot(), name, owner, true, &nrows);
	RefreshPhase("locking and reading the log");

	memset(&R, 0, sizeof(R));
	R.name = name;
	R.entry = entry;
	R.base = &base;
	if (OidIsValid(entry.sparse_rel))
		R.sparse_rels = WithPartitions(entry.sparse_rel);
	/*
	 * the merge reads rows all over the base: its page tables in one go (not
	 * a fault per page), in a thread while the log is decoded
	 */
	premap = nrows > 0 || merge ? gnn_graph_premap_start(&base, GNN_PREMAP_TOPOLOGY) : NULL;
	PG_TRY();
	{
		CollectChanges(&R, rows, nrows, edge_rels, node_rels);
	}
	PG_CATCH();
	{
		gnn_graph_premap_join(premap);
		PG_RE_THROW();
	}
	PG_END_TRY();
	RefreshPhase("decoding the changes");
	gnn_graph_premap_join(premap);
	RefreshPhase("mapping in the graph (what decoding left)");
	why = R.reload;
	if (!why)
		why = capture_off;
	if (!why)
		why = UncapturedTable(trig, edge_rels, list_concat_copy(node_rels, R.sparse_rels));
	/* a node's sparse rows left without their node: what a load says of them, a reload says */
	if (!why && R.sparse_rels && R.ch.num_removed_nodes > 0)
		why = "nodes were removed from a graph with a sparse feature table";
	memset(&st, 0, sizeof(st));
	/* changes to apply, or merge => true: a delta is merged even without changes */
	if (!why && (nrows > 0 || (merge && base.has_delta)))
	{
		/* and the features, when it writes feature rows or a whole new graph */
		if (base.feat_kind == GNN_FEAT_DENSE && (R.ch.up_feat || max_delta == 0))
		{
			gnn_graph_premap_join(gnn_graph_premap_start(&base, GNN_PREMAP_FEATURES));
			RefreshPhase("mapping in the features");
		}
		if (ApplyChanges(&R, &base, &R.ch, max_delta, &rq, &region, &size, &st, &is_delta, &why) &&
			gnn_graph_attach_delta(is_delta ? base.region : region,
								   is_delta ? dsm_segment_map_length(ref.seg) : size,
								   is_delta ? region : NULL, is_delta ? size : 0, &result, &err) != GNN_OK)
			elog(ERROR, "graph \"%s\": %s", name, err.msg);
	}
	if (!why && region != NULL && R.cand_n > 0)
	{
		/* endpoints only: a node whose last edge row went is no node */
		gnn_graph	g1 = result;
		GrowArray	gone;

		R.cand_n = GnnSortUnique64(R.cand, R.cand_n);
		GrowInit(&gone, CurrentMemoryContext, sizeof(int64), 64);
		for (int64 i = 0; i < R.cand_n; i++)
		{
			int64		v = gnn_graph_find(&g1, R.cand[i]);

			if (v >= 0 && gnn_graph_out_degree(&g1, v) == 0 && gnn_graph_in_degree(&g1, v) == 0)
				*(int64 *) GrowPush(&gone) = R.cand[i];
		}
		if (gone.n > 0 && R.sparse_rels)
		{
			why = "nodes were removed from a graph with a sparse feature table";
			goto merged;
		}
		if (gone.n > 0)
		{
			gnn_graph_changes c2;
			gnn_graph_change_stats st2;
			RegionRequest rq2;
			void	   *region2 = NULL;
			uint64		size2 = 0;

			memset(&c2, 0, sizeof(c2));
			c2.num_removed_nodes = gone.n;
			c2.rm_nodes = (int64_t *) gone.data;
			c2.undirected = R.ch.undirected;
			c2.nthreads = gnn_threads;
			/* nodes go: a new region, from the view of the first step's result (text keys: a reload) */
			if (!ApplyChanges(&R, &g1, &c2, 0, &rq2, &region2, &size2, &st2, &is_delta, &why))
				goto merged;
			dsm_detach(rq.seg);
			GnnGraphUnreserve(rq.reserved);
			rq = rq2;
			region = region2;
			size = size2;
			st.deleted_nodes += st2.deleted_nodes;
			if (gnn_graph_attach(region, size, &result, &err) != GNN_OK)
				elog(ERROR, "graph \"%s\": %s", name, err.msg);
		}
	}
merged:
	RefreshPhase("merging (gnn_graph_apply_changes)");
	if (!why && region != NULL)
		why = VanishedClass(&result);
	if (why && region != NULL)
	{
		dsm_detach(rq.seg);
		GnnGraphUnreserve(rq.reserved);
		region = NULL;
	}
	if (why)
	{
		/* what the log cannot say as a merge, a reload of the tables does */
		GnnLoadArgs a;
		GnnGraphEntry res;
		int64		nodes0 = entry.nodes,
					edges0 = entry.edges;

		table_close(lr, RowExclusiveLock);
		PopActiveSnapshot();
		GnnGraphRelease(&ref);
		ereport(NOTICE,
				(errmsg("graph \"%s\" is reloaded in full: %s", name, why)));
		GnnLoadArgsFromEntry(&entry, &a);
		a.replace = true;
		a.track = true;
		GnnLoadGraph(&a, &res);
		out->reloaded = true;
		out->ins_e = res.edges;
		out->del_e = edges0;
		out->ins_n = res.nodes;
		out->del_n = nodes0;
		return;
	}
	DeleteLogRows(lr, rows, nrows);
	table_close(lr, RowExclusiveLock);
	PopActiveSnapshot();
	RefreshPhase("deleting the log rows");
	if (region != NULL)
	{
		gnn_graph	g = result;
		GnnGraphEntry proto = entry;

		proto.nodes = g.num_nodes;
		proto.edges = g.num_edges;
		proto.classes = g.num_classes;
		proto.n_train = g.n_train;
		proto.n_val = g.n_val;
		proto.n_test = g.n_test;
		proto.feat_dim = g.feat_dim;
		proto.feat_kind = g.feat_kind;
		proto.refreshed_at = GetCurrentTimestamp();
		proto.part_handle = DSM_HANDLE_INVALID;
		proto.part_bytes = 0;
		proto.holders = 0;
		proto.generation = GnnGraphNewGeneration();
		/* its results stay as bases: what changed is recorded just below */
		proto.prior_generation = entry.generation;
		{
			int64		nt;
			int64		nd;
			int64	   *dt;
			int64	   *t = TouchedNodes(&R, &base, &nt, &dt, &nd);

			RefreshPhase("attaching the result");
			RecordHistory(name, entry.generation, proto.generation, t, nt, dt, nd);
			out->touched = nt;
			RefreshPhase("recording the touched nodes");
		}
		if (is_delta)
		{
			elog(DEBUG1, "gnn.refresh_graph: \"%s\" keeps a delta of %llu bytes over its %llu", name,
				 (unsigned long long) size, (unsigned long long) dsm_segment_map_length(ref.seg));
			GnnPublishDeltaAtCommit(&proto, rq.seg, rq.reserved);
		}
		else
		{
			char	   *staged = NULL;

			proto.delta_handle = DSM_HANDLE_INVALID;
			proto.delta_bytes = 0;
			/* a stored graph's new full version goes to the store too (at commit) */
			if (entry.stored)
				staged = GnnStoreStage(&proto, region, size);
			GnnPublishAtCommit(&proto, rq.seg, rq.reserved, staged, 0);
		}
		out->delta = is_delta;
	}
	GnnGraphRelease(&ref);
	out->ins_e = st.inserted_edges;
	out->del_e = st.deleted_edges;
	out->ins_n = st.inserted_nodes;
	out->del_n = st.deleted_nodes;
	out->upd_n = st.updated_nodes;
}

Datum
gnn_refresh_graph(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	GnnRefreshResult r;
	Datum		values[6];
	bool		nulls[6] = {0};
	instr_time	t0,
				t1;

	if (PG_ARGISNULL(0))
		ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("graph name must not be NULL")));
	INSTR_TIME_SET_CURRENT(t0);
	GnnRefreshGraph(text_to_cstring(PG_GETARG_TEXT_PP(0)), PG_NARGS() > 1 && !PG_ARGISNULL(1) && PG_GETARG_BOOL(1), &r);
	INSTR_TIME_SET_CURRENT(t1);
	INSTR_TIME_SUBTRACT(t1, t0);
	InitMaterializedSRF(fcinfo, 0);
	values[0] = Int64GetDatum(r.ins_e);
	values[1] = Int64GetDatum(r.del_e);
	values[2] = Int64GetDatum(r.ins_n);
	values[3] = Int64GetDatum(r.del_n);
	values[4] = Int64GetDatum(r.upd_n);
	values[5] = Float8GetDatum(INSTR_TIME_GET_DOUBLE(t1));
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	return (Datum) 0;
}

/* gnn.track(graph, enabled) */
Datum
gnn_track(PG_FUNCTION_ARGS)
{
	char	   *name;
	bool		enabled = PG_ARGISNULL(1) ? true : PG_GETARG_BOOL(1);
	GnnGraphRef ref;
	GnnGraphEntry entry;
	GnnLoadArgs a;
	GnnGraphEntry res;
	List	   *trig;
	char	   *meta;

	if (PG_ARGISNULL(0))
		ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("graph name must not be NULL")));
	name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	GnnRequirePreload();
	if (!enabled)
	{
		GnnTrackDropAll(name, GetUserId());
		PG_RETURN_INT32(0);
	}
	/* the caller's own graph: names are per role */
	GnnGraphAcquireView(name, &ref);
	entry = ref.entry;
	meta = entry.schema_graph ? MetaCopy(&ref.g) : NULL;
	GnnGraphRelease(&ref);
	if (entry.feat_disk)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("graph \"%s\" keeps its features on disk, and a graph that follows its tables keeps them in memory", name),
				 errhint("Load it again with feature_store => 'memory', then track it.")));
	/* triggers first, then a reload under a snapshot after them: graph and log agree */
	if (entry.schema_graph)
	{
		int64		nodes,
					edges;

		ReloadSchema(&entry, meta, &nodes, &edges);
	}
	else
	{
		GnnLoadArgsFromEntry(&entry, &a);
		a.replace = true;
		a.track = true;
		GnnLoadGraph(&a, &res);
	}
	trig = ExistingTriggers(name, GetUserId());
	{
		List	   *tables = NIL;
		ListCell   *lc;

		foreach(lc, trig)
			tables = list_append_unique_oid(tables, ((ExistingTrig *) lfirst(lc))->relid);
		PG_RETURN_INT32(list_length(tables));
	}
}

/* gnn._graph_tracking(graph, owner): tracked, pending_changes, refreshed_at */
Datum
gnn_graph_tracking(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	Datum		values[4];
	bool		nulls[4] = {0};
	char	   *name;
	Oid			owner;
	bool		found = false;
	GnnGraphEntry e = {0};
	bool		tracked;

	if (!GnnGraphRowArgs(fcinfo, &name, &owner, &tupdesc))
		PG_RETURN_NULL();
	LWLockAcquire(gnn_shared->lock, LW_SHARED);
	for (int i = 0; i < gnn_shared->max_graphs; i++)
	{
		GnnGraphEntry *x = &gnn_shared->graphs[i];

		if (x->in_use && x->dbid == MyDatabaseId && x->owner == owner && strcmp(x->name, name) == 0)
		{
			e = *x;
			found = true;
			break;
		}
	}
	LWLockRelease(gnn_shared->lock);
	{
		List	   *trig = ExistingTriggers(name, owner);
		bool		gone;

		/* capture works: every trigger there and enabled */
		tracked = trig != NIL && CaptureProblem(trig, &gone) == NULL;
	}
	values[0] = BoolGetDatum(tracked && found && e.tracked);
	/* only the owner (or a member, a superuser) reads the log */
	if (tracked && (owner == GetUserId() || GnnIsOwnerOrSuper(owner)))
	{
		Relation	lr = table_open(LogRelid(), AccessShareLock);
		int64		n;
		int64		total = 0;
		LogRow	   *rows = ReadLog(lr, GetActiveSnapshot(), name, owner, false, &n);

		for (int64 i = 0; i < n; i++)
			total += rows[i].kind == 't' ? 1 : rows[i].rows;
		table_close(lr, AccessShareLock);
		values[1] = Int64GetDatum(total);
	}
	else
		nulls[1] = true;
	if (found && e.refreshed_at != 0)
		values[2] = TimestampTzGetDatum(e.refreshed_at);
	else
		nulls[2] = true;
	values[3] = Int64GetDatum(found ? (int64) e.delta_bytes : 0);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(tupdesc), values, nulls)));
}

/*
 * Whether a command on a table can change what a graph loaded from it
 * reads.  ALTER TABLE subcommands that leave every row's values (and the
 * capture) as they were do not: defaults, NOT NULL, constraints and
 * indexes, storage and statistics, options, owner, tablespace, logged,
 * identity, adding a column.  Everything else does, conservatively: a
 * retyped or dropped column, renames, triggers enabled or disabled,
 * partitions attached or detached, inheritance, row-level security (a load
 * reads as its role), and any other command on the table.
 */
static bool
DdlChangesRows(const CollectedCommand *cmd)
{
	ListCell   *lc;

	if (cmd == NULL)
		return true;
	if (cmd->parsetree && IsA(cmd->parsetree, CommentStmt))
		return false;
	if (cmd->type != SCT_AlterTable)
		return true;
	foreach(lc, cmd->d.alterTable.subcmds)
	{
		CollectedATSubcmd *sub = lfirst(lc);
		AlterTableCmd *at = (AlterTableCmd *) sub->parsetree;

		if (at == NULL || !IsA(at, AlterTableCmd))
			return true;
		switch (at->subtype)
		{
			case AT_AddColumn:
			case AT_AddColumnRecurse:
			case AT_ColumnDefault:
			case AT_CookedColumnDefault:
			case AT_DropNotNull:
			case AT_SetNotNull:
			case AT_CheckNotNull:
			case AT_DropExpression:
			case AT_SetStatistics:
			case AT_SetOptions:
			case AT_ResetOptions:
			case AT_SetStorage:
			case AT_SetCompression:
			case AT_AddIndex:
			case AT_ReAddIndex:
			case AT_AddConstraint:
			case AT_AddConstraintRecurse:
			case AT_ReAddConstraint:
			case AT_ReAddDomainConstraint:
			case AT_AlterConstraint:
			case AT_ValidateConstraint:
			case AT_ValidateConstraintRecurse:
			case AT_AddIndexConstraint:
			case AT_DropConstraint:
			case AT_DropConstraintRecurse:
			case AT_ReAddComment:
			case AT_ChangeOwner:
			case AT_ClusterOn:
			case AT_DropCluster:
			case AT_SetLogged:
			case AT_SetUnLogged:
			case AT_DropOids:
			case AT_SetAccessMethod:
			case AT_SetTableSpace:
			case AT_SetRelOptions:
			case AT_ResetRelOptions:
			case AT_ReplaceRelOptions:
			case AT_EnableRule:
			case AT_EnableAlwaysRule:
			case AT_EnableReplicaRule:
			case AT_DisableRule:
			case AT_AddOf:
			case AT_DropOf:
			case AT_ReplicaIdentity:
			case AT_GenericOptions:
			case AT_AddIdentity:
			case AT_SetIdentity:
			case AT_DropIdentity:
			case AT_ReAddStatistics:
				continue;
			default:
				return true;
		}
	}
	return false;
}

/* ------------------------------------------------------------------ DDL on tracked tables */

/*
 * gnn._ddl_watch(): the event trigger on ddl_command_end and sql_drop
 * (enabled ALWAYS: also in replica-role sessions).  DDL can change what a
 * tracked graph would read without any row trigger firing: a rewrite
 * (ALTER COLUMN ... TYPE ... USING), a rename, a dropped or added column,
 * disabled triggers.  Every ALTER of a table some graph's capture triggers
 * sit on logs a 't' row for that graph, in the DDL's transaction: its next
 * refresh reloads it in full, from the tables as they are then (as a fresh
 * load would).  A dropped table leaves the graph's bindings without their
 * trigger: the graph no longer follows its tables (gnn.graphs.tracked
 * false; its refresh says so).  Members of the graph's owner get a NOTICE;
 * other roles learn nothing of the graph.
 */
PG_FUNCTION_INFO_V1(gnn_ddl_watch);

Datum
gnn_ddl_watch(PG_FUNCTION_ARGS)
{
	EventTriggerData *trig;
	bool		drop;
	Oid			capture_rel;
	List	   *rels = NIL;
	MemoryContext cxt = CurrentMemoryContext;

	if (!CALLED_AS_EVENT_TRIGGER(fcinfo))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("gnn._ddl_watch() is called by the extension's event triggers only")));
	trig = (EventTriggerData *) fcinfo->context;
	drop = strcmp(trig->event, "sql_drop") == 0;
	/* the extension itself being dropped (its tables go with it), or not there yet */
	capture_rel = get_relname_relid("capture", get_namespace_oid("gnn", true));
	if (!OidIsValid(capture_rel))
		PG_RETURN_VOID();
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (SPI_execute(drop
					? "SELECT objid, NULL::pg_catalog.pg_ddl_command FROM pg_catalog.pg_event_trigger_dropped_objects() "
					"WHERE classid = 'pg_catalog.pg_class'::pg_catalog.regclass AND objsubid = 0"
					: "SELECT objid, command FROM pg_catalog.pg_event_trigger_ddl_commands() "
					"WHERE classid = 'pg_catalog.pg_class'::pg_catalog.regclass",
					true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read the event's objects");
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		bool		isnull,
					cnull;
		Datum		d = SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &isnull);
		Datum		c = SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 2, &cnull);
		MemoryContext old = MemoryContextSwitchTo(cxt);

		/* (the command lives in the event trigger's memory until the event ends) */
		if (!isnull && !list_member_oid(rels, DatumGetObjectId(d)) &&
			(drop || DdlChangesRows(cnull ? NULL : (const CollectedCommand *) DatumGetPointer(c))))
			rels = lappend_oid(rels, DatumGetObjectId(d));
		MemoryContextSwitchTo(old);
	}
	SPI_finish();
	if (rels == NIL)
		PG_RETURN_VOID();
	{
		ListCell   *lc;

		foreach(lc, rels)
		{
			Oid			relid = lfirst_oid(lc);
			Oid			types[1] = {OIDOID};
			Datum		values[1];
			List	   *graphs = NIL,
					   *owners = NIL;
			ListCell   *lg,
					   *lo;

			values[0] = ObjectIdGetDatum(relid);
			if (SPI_connect() != SPI_OK_CONNECT)
				elog(ERROR, "SPI_connect failed");
			GnnCatalogExec("SELECT DISTINCT graph, owner FROM gnn.capture WHERE relid = $1", 1, types, values,
						   NULL, 0);
			for (uint64 i = 0; i < SPI_processed; i++)
			{
				bool		n1,
							n2;
				Datum		g = SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &n1);
				Datum		o = SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 2, &n2);
				MemoryContext old = MemoryContextSwitchTo(cxt);

				graphs = lappend(graphs, TextDatumGetCString(g));
				owners = lappend_oid(owners, DatumGetObjectId(o));
				MemoryContextSwitchTo(old);
			}
			SPI_finish();
			forboth(lg, graphs, lo, owners)
			{
				const char *graph = lfirst(lg);
				Oid			owner = lfirst_oid(lo);
				bool		tell = GnnIsOwnerOrSuper(owner);

				if (drop)
				{
					if (tell)
						ereport(NOTICE,
								(errmsg("graph \"%s\" no longer follows its tables: a table it was loaded from was dropped",
										graph),
								 errhint("Load it again from the tables it should read (with replace => true, track => true), "
										 "or stop tracking it with gnn.track('%s', false).", graph)));
					continue;
				}
				if (!CaptureWanted(graph, owner))
					continue;
				LogWrite(graph, owner, relid, 't', DDL_ROWS, NULL);
				if (tell)
					ereport(NOTICE,
							(errmsg("graph \"%s\" will be reloaded in full at its next refresh", graph),
							 errdetail("%s changed %s, which it follows.", trig->tag == CMDTAG_ALTER_TABLE
									   ? "ALTER TABLE" : GetCommandTagName(trig->tag), QualifiedRelName(relid))));
			}
		}
	}
	PG_RETURN_VOID();
}
