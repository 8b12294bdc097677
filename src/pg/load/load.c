/*
 * load.c: tables -> COO arrays -> core CSR build -> a DSM segment.
 *
 * Plain tables are read with a heap scan under the caller's snapshot, after
 * checking the caller's SELECT privilege on each column read: as fast as a
 * sequential scan can be.  Views, partitioned and foreign tables, and tables
 * with row-level security for the caller are read through SPI with a query
 * built from quoted identifiers, so the executor applies every rule and
 * policy.  Either way the caller's own rights decide what is read.
 */
#include "common/gnn_pg.h"
#include "load/load_int.h"

#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <float.h>

#include "access/relation.h"
#include "access/table.h"
#include "access/tableam.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "executor/tuptable.h"
#include "miscadmin.h"
#include "portability/instr_time.h"
#include "storage/buffile.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/json.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/resowner.h"
#include "utils/rls.h"
#include "utils/snapmgr.h"

#include "graph/encode.h"



const char *
QualifiedRelName(Oid relid)
{
	char	   *rel = get_rel_name(relid);

	if (rel == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation with OID %u does not exist", relid)));
	return quote_qualified_identifier(get_namespace_name(get_rel_namespace(relid)), rel);
}

/* Resolve a column and check its type against a list of accepted ones. */
void
ResolveColumn(GnnScan *s, int i, const char *col, const char *role, const Oid *accepted,
			  const char *accepted_desc)
{
	AttrNumber	att;
	Oid			type;
	bool		ok = false;

	if (col == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("the %s column name must not be NULL", role)));
	att = get_attnum(s->relid, col);
	if (att == InvalidAttrNumber || att < 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_COLUMN),
				 errmsg("column \"%s\" does not exist in %s", col, s->relname),
				 errhint("Name the %s column of %s with the corresponding argument of gnn.load_graph().",
						 role, s->relname)));
	/* a domain is read as its base type (its values are that type's) */
	type = getBaseType(get_atttype(s->relid, att));
	for (const Oid *a = accepted; *a != InvalidOid; a++)
		ok |= (type == *a);
	if (!ok)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("column \"%s\" of %s has type %s, which cannot be a %s column",
						col, s->relname, format_type_be(get_atttype(s->relid, att)), role),
				 errhint("A %s column must be %s.", role, accepted_desc)));
	s->colnames[i] = col;
	s->attnums[i] = att;
	s->types[i] = type;
}

void
ScanBegin(GnnScan *s)
{
	Relation	rel = relation_open(s->relid, AccessShareLock);
	char		kind = rel->rd_rel->relkind;
	bool		ok = pg_class_aclcheck(s->relid, GetUserId(), ACL_SELECT) == ACLCHECK_OK;

	s->callercxt = CurrentMemoryContext;
	s->rowcxt = AllocSetContextCreate(CurrentMemoryContext, "gnn load row", ALLOCSET_DEFAULT_SIZES);
	s->started = GetCurrentTimestamp();
	s->next_report = TimestampTzPlusMilliseconds(s->started, 10000);

	/* column-level privileges suffice, as for a SELECT of those columns */
	for (int i = 0; i < s->ncols && !ok; i++)
		if (pg_attribute_aclcheck(s->relid, s->attnums[i], GetUserId(), ACL_SELECT) != ACLCHECK_OK)
			aclcheck_error(ACLCHECK_NO_PRIV, get_relkind_objtype(kind), RelationGetRelationName(rel));

	s->use_spi = !(kind == RELKIND_RELATION || kind == RELKIND_MATVIEW) ||
		check_enable_rls(s->relid, InvalidOid, true) == RLS_ENABLED;
	if (!s->use_spi)
	{
		s->rel = rel;
		s->slot = table_slot_create(rel, NULL);
		/*
		 * From the first block, not where another scan of the table is (a
		 * synchronized scan): a table stored in key order then comes in key
		 * order, which the loaders check for and need not sort (10M rows
		 * started mid-table cost a second of sorting and their permutation)
		 */
		s->scan = table_beginscan_strat(rel, GetActiveSnapshot(), 0, NULL, true, false);
		return;
	}
	relation_close(rel, AccessShareLock);

	StringInfoData q;

	initStringInfo(&q);
	appendStringInfoString(&q, "SELECT ");
	for (int i = 0; i < s->ncols; i++)
		appendStringInfo(&q, "%s%s", i ? ", " : "", quote_identifier(s->colnames[i]));
	appendStringInfo(&q, " FROM %s", s->relname);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	s->portal = SPI_cursor_open_with_args(NULL, q.data, 0, NULL, NULL, NULL, true, 0);
	s->batch_pos = s->batch_n = 0;
	MemoryContextSwitchTo(s->callercxt);
}

/* Next row: fills values/nulls; false at the end. */
bool
ScanNext(GnnScan *s, Datum *values, bool *nulls)
{
	if ((s->rowno & 65535) == 0)
	{
		CHECK_FOR_INTERRUPTS();
		if (GnnProgressOn() && s->rowno > 0 && GetCurrentTimestamp() >= s->next_report)
		{
			ereport(NOTICE,
					(errmsg("reading %s: %lld rows so far (%.0f s)", s->relname, (long long) s->rowno,
							(double) (GetCurrentTimestamp() - s->started) / 1e6)));
			s->next_report = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), 10000);
		}
	}
	MemoryContextSwitchTo(s->callercxt);
	MemoryContextReset(s->rowcxt);
	if (!s->use_spi)
	{
		MemoryContextSwitchTo(s->rowcxt);
		if (!table_scan_getnextslot(s->scan, ForwardScanDirection, s->slot))
			return false;
		for (int i = 0; i < s->ncols; i++)
			values[i] = slot_getattr(s->slot, s->attnums[i], &nulls[i]);
		s->rowno++;
		return true;
	}
	if (s->batch_pos >= s->batch_n)
	{
		if (SPI_tuptable)
			SPI_freetuptable(SPI_tuptable);
		SPI_cursor_fetch(s->portal, true, GNN_SPI_BATCH);
		s->batch_n = SPI_processed;
		s->batch_pos = 0;
		if (s->batch_n == 0)
		{
			MemoryContextSwitchTo(s->callercxt);
			return false;
		}
	}
	MemoryContextSwitchTo(s->rowcxt);
	HeapTuple	tup = SPI_tuptable->vals[s->batch_pos++];

	for (int i = 0; i < s->ncols; i++)
		values[i] = SPI_getbinval(tup, SPI_tuptable->tupdesc, i + 1, &nulls[i]);
	s->rowno++;
	return true;
}

/* "row 17 (ctid (0,17))" for the row just returned */
char *
ScanRowDesc(GnnScan *s)
{
	if (!s->use_spi)
		return psprintf("row %lld (ctid (%u,%u))", (long long) s->rowno,
						ItemPointerGetBlockNumber(&s->slot->tts_tid),
						ItemPointerGetOffsetNumber(&s->slot->tts_tid));
	return psprintf("row %lld", (long long) s->rowno);
}

/* the note GnnPhaseDone would give, or NULL */
static char *
PhaseNote(const char *what, int64 rows, TimestampTz since)
{
	double		secs = (double) (GetCurrentTimestamp() - since) / 1e6;

	return GnnProgressOn() && (rows >= 1000000 || secs >= 2.0) ? psprintf("%s (%.1f s)", what, secs) : NULL;
}

void
GnnPhaseDone(const char *what, int64 rows, TimestampTz since)
{
	char	   *note = PhaseNote(what, rows, since);

	if (note)
		ereport(NOTICE, (errmsg("%s", note)));
}

void
ScanEnd(GnnScan *s)
{
	GnnPhaseDone(psprintf("read %lld rows of %s", (long long) s->rowno, s->relname), s->rowno, s->started);
	MemoryContextSwitchTo(s->callercxt);
	if (!s->use_spi)
	{
		table_endscan(s->scan);
		ExecDropSingleTupleTableSlot(s->slot);
		relation_close(s->rel, AccessShareLock);
	}
	else
	{
		SPI_cursor_close(s->portal);
		SPI_finish();
	}
	MemoryContextSwitchTo(s->callercxt);
	MemoryContextDelete(s->rowcxt);
	s->rowcxt = NULL;
}

int64
EstimateRows(Oid relid)
{
	Relation	rel = relation_open(relid, AccessShareLock);
	float4		t = rel->rd_rel->reltuples;

	relation_close(rel, AccessShareLock);
	return (t > 0 && t < 1e10) ? (int64) t + 1024 : 1024;
}

/* ------------------------------------------------------------------ value conversion */

const Oid int_types[] = {INT2OID, INT4OID, INT8OID, InvalidOid};
const Oid id_types[] = {INT2OID, INT4OID, INT8OID, TEXTOID, VARCHAROID, BPCHAROID, UUIDOID, InvalidOid};

static bool
IsIntType(Oid t)
{
	return t == INT2OID || t == INT4OID || t == INT8OID;
}
const Oid num_types[] = {FLOAT4OID, FLOAT8OID, INT2OID, INT4OID, INT8OID, NUMERICOID, InvalidOid};
const Oid feat_types[] = {FLOAT4ARRAYOID, FLOAT8ARRAYOID, InvalidOid};
const Oid label_types[] = {INT2OID, INT4OID, INT8OID, TEXTOID, VARCHAROID, BPCHAROID, InvalidOid};
const Oid text_types[] = {TEXTOID, VARCHAROID, BPCHAROID, InvalidOid};

int64
IntDatum(Datum d, Oid type)
{
	switch (type)
	{
		case INT2OID:
			return DatumGetInt16(d);
		case INT4OID:
			return DatumGetInt32(d);
		default:
			return DatumGetInt64(d);
	}
}

double
NumDatum(Datum d, Oid type)
{
	switch (type)
	{
		case FLOAT4OID:
			return DatumGetFloat4(d);
		case FLOAT8OID:
			return DatumGetFloat8(d);
		case NUMERICOID:
			/* beyond double precision: infinite, which the callers refuse naming the column and row */
			return DatumGetFloat8(DirectFunctionCall1(numeric_float8_no_overflow, d));
		default:
			return (double) IntDatum(d, type);
	}
}

char *
TextDatum(Datum d, Oid type)
{
	Oid			out;
	bool		varlena;

	getTypeOutputInfo(type, &out, &varlena);
	return OidOutputFunctionCall(out, d);
}

/* A split value: train, val (valid, validation), test, '' (none); -1 for anything else. */
int
GnnParseSplit(const char *t)
{
	if (pg_strcasecmp(t, "train") == 0)
		return GNN_SPLIT_TRAIN;
	if (pg_strcasecmp(t, "val") == 0 || pg_strcasecmp(t, "valid") == 0 || pg_strcasecmp(t, "validation") == 0)
		return GNN_SPLIT_VAL;
	if (pg_strcasecmp(t, "test") == 0)
		return GNN_SPLIT_TEST;
	return t[0] == '\0' ? GNN_SPLIT_NONE : -1;
}

void
NullError(GnnScan *s, int col)
{
	ereport(ERROR,
			(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
			 errmsg("column \"%s\" of %s contains a NULL", s->colnames[col], s->relname),
			 errdetail("The NULL is in %s.", ScanRowDesc(s)),
			 errhint("Remove the row or fill in the value; gnn.load_graph() cannot use a NULL there.")));
}

/* ------------------------------------------------------------------ growing arrays */


/* GnnAllocBig in mcxt */
static void *
AllocBigIn(MemoryContext mcxt, Size size, int flags)
{
	void	   *p = MemoryContextAllocExtended(mcxt, size, (flags | MCXT_ALLOC_HUGE) & ~MCXT_ALLOC_ZERO);

	if (p)
	{
		gnn_advise_huge(p, size);
		if (flags & MCXT_ALLOC_ZERO)
			memset(p, 0, size);
	}
	return p;
}

void
GrowInit(GrowArray *a, MemoryContext mcxt, Size elem, int64 cap)
{
	a->mcxt = mcxt;
	a->elem = elem;
	a->n = 0;
	a->cap = Max(cap, 16);
	a->data = AllocBigIn(mcxt, a->elem * a->cap, 0);
}

void *
GnnAllocBig(Size size, int flags)
{
	return AllocBigIn(CurrentMemoryContext, size, flags);
}

void *
GrowPush(GrowArray *a)
{
	if (a->n == a->cap)
	{
		a->cap *= 2;
		if (a->elem * a->cap < GNN_BIG_BYTES)
			a->data = repalloc_huge(a->data, a->elem * a->cap);
		else
		{
			/* into memory advised for huge pages before the copy writes it */
			char	   *d = AllocBigIn(a->mcxt, a->elem * a->cap, 0);

			memcpy(d, a->data, a->elem * a->n);
			pfree(a->data);
			a->data = d;
		}
	}
	return a->data + a->elem * (a->n++);
}

/* ------------------------------------------------------------------ class labels */

typedef struct LabelEntry
{
	char		key[NAMEDATALEN * 4];
	int32		index;
} LabelEntry;

int
CompareStrings(const void *a, const void *b)
{
	return strcmp(*(char *const *) a, *(char *const *) b);
}

/* ------------------------------------------------------------------ the load */

void
CheckFloat(GnnScan *s, double v, const char *what, int64 id)
{
	if (!isfinite(v))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s of node %lld in %s is %s", what, (long long) id, s->relname,
						isnan(v) ? "NaN" : "infinite"),
				 errdetail("The value is in %s.", ScanRowDesc(s)),
				 errhint("Features and weights must be finite numbers.")));
}

static void
ReportCoreError(const GnnLoadArgs *args, const gnn_error *err, const char *edges_name,
				const char *nodes_name)
{
	switch (err->status)
	{
		case GNN_ERR_DANGLING:
			ereport(ERROR,
					(errcode(ERRCODE_FOREIGN_KEY_VIOLATION),
					 errmsg("graph \"%s\": %s", args->name, err->msg),
					 errdetail("Row %lld of %s refers to node %lld, which %s does not contain.",
							   (long long) err->row + 1, edges_name, (long long) err->id,
							   nodes_name ? nodes_name : "the node set"),
					 errhint("Add the node to %s, or pass skip_dangling => true to leave such edges out.",
							 nodes_name ? nodes_name : "the node table")));
			break;
		case GNN_ERR_DUPLICATE:
			ereport(ERROR,
					(errcode(ERRCODE_UNIQUE_VIOLATION),
					 errmsg("graph \"%s\": %s in %s", args->name, err->msg, nodes_name),
					 errhint("Node ids must be unique; a primary key on the id column ensures it.")));
			break;
		case GNN_ERR_BAD_VALUE:
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("graph \"%s\": %s", args->name, err->msg),
					 errhint("Values must be finite numbers and feature indices non-negative.")));
			break;
		case GNN_ERR_NOMEM:
			ereport(ERROR,
					(errcode(ERRCODE_OUT_OF_MEMORY),
					 errmsg("graph \"%s\": %s", args->name, err->msg)));
			break;
		case GNN_ERR_LIMIT:
			ereport(ERROR,
					(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
					 errmsg("graph \"%s\": %s", args->name, err->msg)));
			break;
		default:
			ereport(ERROR,
					(errcode(ERRCODE_INTERNAL_ERROR),
					 errmsg("graph \"%s\": %s", args->name, err->msg)));
	}
}


/*
 * Called by the core with the graph's exact size: reserve it and create the
 * segment.  Never longjmps: an error is caught, kept, and NULL returned.
 */
void *
RegionAlloc(void *arg, uint64_t bytes)
{
	RegionRequest *rq = arg;
	MemoryContext cur = CurrentMemoryContext;
	void	   *addr = NULL;

	PG_TRY();
	{
		rq->reserved = GnnGraphReserve(bytes, rq->name);
		if (rq->top_owner)
		{
			ResourceOwner save = CurrentResourceOwner;

			CurrentResourceOwner = TopTransactionResourceOwner;
			rq->seg = GnnDsmCreate(bytes, 0);
			CurrentResourceOwner = save;
		}
		else
			rq->seg = GnnDsmCreate(bytes, 0);
		addr = dsm_segment_address(rq->seg);
		/* the pages all at once, before the build writes them */
		{
			instr_time	t0,
						t1;

			INSTR_TIME_SET_CURRENT(t0);
			gnn_prefault(addr, bytes, gnn_threads);
			INSTR_TIME_SET_CURRENT(t1);
			INSTR_TIME_SUBTRACT(t1, t0);
			elog(DEBUG1, "gnn: mapping in the %llu MB of graph \"%s\" took %.3f s",
				 (unsigned long long) (bytes >> 20), rq->name, INSTR_TIME_GET_DOUBLE(t1));
		}
	}
	PG_CATCH();
	{
		MemoryContextSwitchTo(rq->mcxt);
		rq->error = CopyErrorData();
		FlushErrorState();
		MemoryContextSwitchTo(cur);
		if (rq->reserved)
			GnnGraphUnreserve(rq->reserved);
		rq->reserved = 0;
		addr = NULL;
	}
	PG_END_TRY();
	return addr;
}

typedef struct LoadReportArg
{
	const GnnLoadArgs *args;
	const char *edges_name;
	const char *nodes_name;
} LoadReportArg;

static void
LoadReport(void *arg, const gnn_error *err)
{
	LoadReportArg *a = arg;

	ReportCoreError(a->args, err, a->edges_name, a->nodes_name);
}

/*
 * For each node of g (built from in without its features) the row of
 * in->feat that holds its features: in->node_ids[row] = g->ids[v].
 */
static int64 *
FeatureRows(const char *name, const gnn_graph_input *in, const gnn_graph *g)
{
	int64	   *row = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(int64) * (Size) (g->num_nodes + 1));

	for (int64 v = 0; v < g->num_nodes; v++)
		row[v] = -1;
	for (int64 i = 0; i < in->num_nodes; i++)
	{
		int64		v = gnn_graph_find(g, in->node_ids[i]);

		if (v >= 0)
			row[v] = i;
	}
	for (int64 v = 0; v < g->num_nodes; v++)
		if (row[v] < 0)
			ereport(ERROR,
					(errcode(ERRCODE_INTERNAL_ERROR),
					 errmsg("graph \"%s\": node %lld has no feature row", name, (long long) g->ids[v])));
	return row;
}

/*
 * Dense features read straight into the graph's region (gnn_graph_input's
 * feat_fill): the node table is read a first time for ids, labels and
 * splits (and the first row's width), the graph is laid out, and this
 * second pass writes each row's features at its node's place in the shared
 * segment, checking them as it goes, so the loader never holds the feature
 * matrix itself (it used to be read into a buffer, then copied).  Only for
 * heap tables with integer ids: both passes read under the statement's
 * snapshot from the first block, so they see the same rows in the same
 * order (checked by id).  An error is kept here and rethrown once the core
 * has freed what it held.
 */
typedef struct FeatureFill
{
	GnnScan		scan;			/* the node table's columns: id first, features at fcol */
	int			fcol;
	int32		dim;
	int64		dim_id;			/* the node whose row set dim */
	int32		lo;				/* the columns kept, [lo, lo + w): a feature slice's, else all */
	int32		w;
	int64		rows;
	const int64 *ids;			/* the first pass's ids, by row */
	const char *nodes_name;
} FeatureFill;

static ErrorData *fill_error = NULL;

static void
FeaturesNullError(FeatureFill *ff, GnnScan *s, int64 id)
{
	ereport(ERROR,
			(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
			 errmsg("node %lld has NULL features in %s", (long long) id, ff->nodes_name),
			 errdetail("The NULL is in column \"%s\", %s.", s->colnames[ff->fcol], ScanRowDesc(s)),
			 errhint("Every node needs a feature array of the same length.")));
}

/* check node id's feature array d and write it to row */
static void
FillRow(FeatureFill *ff, GnnScan *s, Datum d, bool isnull, int64 id, float *row)
{
	ArrayType  *arr;
	int			n;

	if (isnull)
		FeaturesNullError(ff, s, id);
	arr = DatumGetArrayTypeP(d);
	if (ARR_NDIM(arr) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("features of node %lld have %d dimensions; a one-dimensional array is needed",
						(long long) id, ARR_NDIM(arr)),
				 errdetail("In %s of %s.", ScanRowDesc(s), ff->nodes_name)));
	n = ARR_NDIM(arr) == 0 ? 0 : ARR_DIMS(arr)[0];
	if (ARR_HASNULL(arr) && array_contains_nulls(arr))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("features of node %lld contain a NULL element", (long long) id),
				 errdetail("In %s of %s.", ScanRowDesc(s), ff->nodes_name),
				 errhint("Replace NULL elements with numbers (for example 0).")));
	if (n != ff->dim)
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("node %lld has %d features but node %lld has %d", (long long) id, n,
						(long long) ff->dim_id, ff->dim),
				 errdetail("In %s of %s.", ScanRowDesc(s), ff->nodes_name),
				 errhint("All feature arrays must have the same length.")));
	/* every column is checked; the kept ones, [lo, lo + w), are written */
	if (s->types[ff->fcol] == FLOAT4ARRAYOID)
	{
		const float *x = (const float *) ARR_DATA_PTR(arr);
		bool		finite = true;

		for (int j = 0; j < n; j++)
			finite &= isfinite(x[j]);
		if (!finite)
			for (int j = 0; j < n; j++)
				CheckFloat(s, x[j], psprintf("feature %d", j), id);
		memcpy(row, x + ff->lo, sizeof(float) * ff->w);
	}
	else
	{
		const double *x = (const double *) ARR_DATA_PTR(arr);

		for (int j = 0; j < n; j++)
		{
			if (!isfinite(x[j]) || fabs(x[j]) > FLT_MAX)
				CheckFloat(s, isfinite(x[j]) ? INFINITY : x[j], psprintf("feature %d", j), id);
			if (j >= ff->lo && j < ff->lo + ff->w)
				row[j - ff->lo] = (float) x[j];
		}
	}
}

/*
 * For a fill callback that caught a PostgreSQL error, from its PG_CATCH
 * block: keep the error, to be raised once the build has returned and freed
 * its memory (GnnBuildAndRegister), and hand the build its message as a
 * status.
 */
gnn_status
GnnFillCaught(MemoryContext mcxt, gnn_error *err)
{
	MemoryContextSwitchTo(mcxt);
	fill_error = CopyErrorData();
	FlushErrorState();
	return gnn_error_set(err, GNN_ERR_INVALID, "%s", fill_error->message);
}

static gnn_status
FillFeatures(void *arg, float *dst, const int64_t *node_of_row, gnn_error *err)
{
	FeatureFill *ff = arg;
	MemoryContext mcxt = CurrentMemoryContext;
	bool		verbose = gnn_progress;

	PG_TRY();
	{
		GnnScan		s = ff->scan;
		Datum		v[GNN_SCAN_MAXCOLS];
		bool		nl[GNN_SCAN_MAXCOLS];

		/* no notes from inside the build: they go out once the graph is registered */
		gnn_progress = false;
		s.rowno = 0;
		ScanBegin(&s);
		while (ScanNext(&s, v, nl))
		{
			int64		r = s.rowno - 1;
			int64		id = IntDatum(v[0], s.types[0]);

			if (r >= ff->rows || id != ff->ids[r])
				ereport(ERROR,
						(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
						 errmsg("%s changed while it was read: %s holds node %lld", ff->nodes_name,
								ScanRowDesc(&s), (long long) id),
						 errhint("Load the graph again.")));
			FillRow(ff, &s, v[ff->fcol], nl[ff->fcol], id, dst + (size_t) node_of_row[r] * ff->w);
		}
		if (s.rowno != ff->rows)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("%s changed while it was read: %lld rows, then %lld", ff->nodes_name,
							(long long) ff->rows, (long long) s.rowno),
					 errhint("Load the graph again.")));
		ScanEnd(&s);
		gnn_progress = verbose;
	}
	PG_CATCH();
	{
		gnn_progress = verbose;
		return GnnFillCaught(mcxt, err);
	}
	PG_END_TRY();
	return GNN_OK;
}

/* feature_store => 'memory' | 'disk' | 'auto' (NULL: memory) */
int
GnnParseFeatureStore(const char *s)
{
	if (s == NULL || strcmp(s, "memory") == 0)
		return GNN_FEATURES_MEMORY;
	if (strcmp(s, "disk") == 0)
		return GNN_FEATURES_DISK;
	if (strcmp(s, "auto") == 0)
		return GNN_FEATURES_AUTO;
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("unknown feature store \"%s\"", s),
			 errhint("Accepted: 'memory' (in shared memory), 'disk' (in the graph store, read through "
					 "gnn.feature_cache_size of cache), 'auto' (disk when they would not fit in "
					 "gnn.max_graph_memory).")));
	return GNN_FEATURES_MEMORY;
}

/*
 * Where in's dense features go: memory, or the graph store's features file
 * ('disk'; 'auto' when they exceed the room gnn.max_graph_memory has left).
 */
static bool
FeaturesOnDisk(const char *name, const gnn_graph_input *in, bool spilled, int feature_store, bool tracked)
{
	bool		dense = (in->feat != NULL || spilled) && in->feat_dim > 0 && in->node_ids != NULL;
	uint64		bytes = dense ? (uint64) in->num_nodes * sizeof(float) * (uint64) in->feat_dim : 0;

	if (feature_store == GNN_FEATURES_MEMORY)
		return false;
	if (feature_store == GNN_FEATURES_AUTO)
	{
		/* the rest of the region, roughly: ids, both CSRs' offsets and arcs, node data */
		uint64		rest = 40 * (uint64) in->num_nodes + 16 * (uint64) in->num_edges;

		return dense && !tracked && bytes + rest > GnnGraphMemoryFree();
	}
	if (!dense)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("graph \"%s\": feature_store => 'disk' keeps dense features on disk, and it has none", name),
				 errdetail("%s", in->sparse_nnz > 0 || in->sp_ptr ?
						   "Its features are sparse (a sparse feature table, or a schema graph's encoded columns), "
						   "which the disk store does not hold; they stay in memory." :
						   "It has no feature column."),
				 errhint("Leave feature_store at 'memory', or load a real[] features column.")));
	if (tracked)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("graph \"%s\": a graph that follows its tables keeps its features in memory", name),
				 errhint("Load it with feature_store => 'memory', or without track => true.")));
	return true;
}

/* A spill's rows in input order, in memory (one pass over the file). */
static float *
SpillLoad(const GnnFeatureSpill *sp, int64 n)
{
	size_t		rb = sizeof(float) * (size_t) sp->dim;
	float	   *feat = GnnAllocBig(rb * (Size) Max(n, 1), 0);
	int64	   *at = NULL;

	if (sp->rows != n)
		elog(ERROR, "%lld spilled feature rows for %lld nodes", (long long) sp->rows, (long long) n);
	if (sp->input_row)
	{
		/* spill row j is input row at[j] */
		at = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(int64) * (Size) Max(n, 1));
		for (int64 i = 0; i < n; i++)
			at[sp->input_row[i]] = i;
	}
	if (BufFileSeek(sp->file, 0, 0, SEEK_SET) != 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not rewind the load's temporary file of features: %m")));
	for (int64 j = 0; j < n; j++)
	{
		if (BufFileRead(sp->file, feat + (size_t) (at ? at[j] : j) * sp->dim, rb) != rb)
			ereport(ERROR,
					(errcode_for_file_access(),
					 errmsg("could not read row %lld of the load's temporary file of features", (long long) j)));
		if ((j & 4095) == 0)
			CHECK_FOR_INTERRUPTS();
	}
	if (at)
		pfree(at);
	elog(DEBUG1, "gnn: %lld spilled feature rows read back into memory", (long long) n);
	return feat;
}

/*
 * Build: the core maps ids, sorts and merges edges, and asks for the region
 * only once the exact size is known; RegionAlloc reserves it against
 * gnn.max_graph_memory and creates the DSM segment.  Errors there are kept
 * and rethrown after the core has returned (nothing longjmps through it).
 * proto comes with the loader's source fields (nodes_rel, columns,
 * undirected) and leaves with the registered entry.  report raises the
 * loader's own error for a core failure.  feature_store (GNN_FEATURES_*)
 * says where dense features go (FeaturesOnDisk): with 'disk' the region is
 * built without them and they are written to the graph store's features
 * file of the new version before it is registered.
 */
void
GnnBuildAndRegister(const char *name, bool replace, const gnn_graph_input *in_arg, GnnGraphEntry *proto,
					int feature_store, const GnnFeatureSpill *spill,
					void (*report) (void *arg, const gnn_error *err), void *report_arg,
					MemoryContext ctx)
{
	RegionRequest rq;
	void	   *region = NULL;
	uint64		size = 0;
	gnn_graph	g;
	gnn_error	err;
	gnn_status	st;
	gnn_graph_input in_copy = *in_arg;
	const gnn_graph_input *in = &in_copy;
	bool		disk = FeaturesOnDisk(name, in_arg, spill != NULL, feature_store, proto->tracked);
	TimestampTz build_start;
	/*
	 * Progress notes go out once the graph is registered: a NOTICE reaches
	 * the client, and a backend terminated while it holds a reservation
	 * would leave the reservation counted.
	 */
	char	   *volatile notes[3] = {NULL, NULL, NULL};
	volatile int nnotes = 0;

	memset(&rq, 0, sizeof(rq));
	rq.name = name;
	rq.mcxt = ctx;
	rq.top_owner = true;		/* the version is staged until the transaction commits */
	GnnCoreThreadsInit();
	if (disk)
	{
		/* the region without them: they go to the features file below */
		in_copy.feat = NULL;
		in_copy.feat_dim = 0;
	}
	else if (spill)
		in_copy.feat = SpillLoad(spill, in_arg->num_nodes);	/* 'auto' found room after all */
	build_start = GetCurrentTimestamp();
	fill_error = NULL;
	st = gnn_graph_build_into(in, RegionAlloc, &rq, &region, &size, &err);
	PG_TRY();
	{
		if (rq.error)
			ReThrowError(rq.error);
		if (fill_error)
		{
			ErrorData  *e = fill_error;

			fill_error = NULL;
			ReThrowError(e);
		}
		if (st != GNN_OK)
			report(report_arg, &err);
		if (gnn_graph_attach(region, size, &g, &err) != GNN_OK)
			report(report_arg, &err);
		notes[nnotes++] = PhaseNote(psprintf("graph \"%s\": built, %lld nodes and %lld arcs", name,
											 (long long) g.num_nodes, (long long) g.num_edges),
									g.num_nodes + g.num_edges, build_start);
		strlcpy(proto->name, name, sizeof(proto->name));
		proto->owner = GetUserId();
		proto->nodes = g.num_nodes;
		proto->edges = g.num_edges;
		proto->feat_dim = disk ? in_arg->feat_dim : g.feat_dim;
		proto->feat_kind = disk ? GNN_FEAT_DENSE : g.feat_kind;
		proto->feat_disk = disk;
		proto->classes = g.num_classes;
		proto->n_train = g.n_train;
		proto->n_val = g.n_val;
		proto->n_test = g.n_test;
		proto->loaded_at = GetCurrentTimestamp();
		if (!replace && GnnGraphExists(name))
			ereport(ERROR,
					(errcode(ERRCODE_DUPLICATE_OBJECT),
					 errmsg("graph \"%s\" already exists", name),
					 errhint("Pass replace => true to replace it, or drop it first with gnn.drop_graph().")));
		/*
		 * The graph becomes the name's when the transaction commits
		 * (registry.c); persisted, its graph.gnn is staged now and renamed
		 * into place then.  A tracked load's log rows go in the same
		 * transaction (track.c).
		 */
		GnnLockGraph(name, GetUserId());
		{
			uint64		feat_gen = 0;
			char	   *staged = NULL;

			if (proto->stored || disk)
				proto->generation = GnnGraphNewGeneration();
			if (disk)
			{
				int64	   *src_row = FeatureRows(name, in_arg, &g);

				if (spill && spill->input_row)
					for (int64 v = 0; v < g.num_nodes; v++)
						src_row[v] = spill->input_row[src_row[v]];
				build_start = GetCurrentTimestamp();
				feat_gen = proto->generation;
				PG_TRY();
				{
					GnnStoreWriteFeatures(proto, &g, in_arg->feat, spill, src_row, in_arg->feat_dim);
				}
				PG_CATCH();
				{
					GnnStoreRemoveFeatures(MyDatabaseId, GetUserId(), name, feat_gen);
					PG_RE_THROW();
				}
				PG_END_TRY();
				pfree(src_row);
				notes[nnotes++] = PhaseNote(psprintf("graph \"%s\": features written to the graph store", name),
											g.num_nodes, build_start);
			}
			if (proto->stored)
			{
				build_start = GetCurrentTimestamp();
				PG_TRY();
				{
					staged = GnnStoreStage(proto, region, size);
				}
				PG_CATCH();
				{
					if (disk)
						GnnStoreRemoveFeatures(MyDatabaseId, GetUserId(), name, feat_gen);
					PG_RE_THROW();
				}
				PG_END_TRY();
				notes[nnotes++] = PhaseNote(psprintf("graph \"%s\": written to the graph store", name),
											g.num_nodes + g.num_edges, build_start);
			}
			proto->bytes = rq.reserved;
			GnnPublishAtCommit(proto, rq.seg, rq.reserved, staged, feat_gen);
			rq.reserved = 0;	/* the staged version's now */
		}
	}
	PG_CATCH();
	{
		/* an unpinned segment goes with its mapping at abort */
		if (rq.reserved)
			GnnGraphUnreserve(rq.reserved);
		PG_RE_THROW();
	}
	PG_END_TRY();
	proto->bytes = size;
	for (int i = 0; i < nnotes; i++)
		if (notes[i])
			ereport(NOTICE, (errmsg("%s", notes[i])));
}

static int
Cmp64(const void *a, const void *b)
{
	int64		x = *(const int64 *) a,
				y = *(const int64 *) b;

	return x < y ? -1 : x > y;
}

static bool
Has64(const int64 *sorted, int64 n, int64 key)
{
	int64		lo = 0,
				hi = n;

	while (lo < hi)
	{
		int64		mid = lo + (hi - lo) / 2;

		if (sorted[mid] < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && sorted[lo] == key;
}

typedef struct IdPart
{
	int64		id;
	int32		part;
} IdPart;

static int
CmpIdPart(const void *a, const void *b)
{
	return Cmp64(&((const IdPart *) a)->id, &((const IdPart *) b)->id);
}

/*
 * One part of a partitioned graph (part_column / part): the node rows read
 * are the part's own (ids, features, labels, splits of rows whose part
 * column is args->part; the other rows' ids and parts are in `others`).
 * Keeps the edges with an own endpoint, compacting src / dst / w in place,
 * and appends the halo, the other endpoints of those edges, as node rows
 * without features (zero rows), label or split.  Returns the owner part of
 * every node row (-1: a halo node without a row here), for the core.
 */
static int32 *
KeepPart(const GnnLoadArgs *args, const char *nodes_name, const char *edges_name, GrowArray *src, GrowArray *dst,
		 GrowArray *w, bool narrow, GrowArray *ids, GrowArray *feat, int32 dim, GrowArray *labels,
		 GrowArray *split, GrowArray *others, int64 *n_unknown)
{
	int64		n_own = ids->n;
	int64	   *own = palloc_extended(sizeof(int64) * Max(n_own, 1), MCXT_ALLOC_HUGE);
	IdPart	   *oth = (IdPart *) others->data;
	int64		n_oth = others->n,
				k = 0,
				m = src->n;
	int64	   *halo;
	int64		nh = 0;
	int32	   *node_part;
	int64	   *inner;
	int64		n_inner;

	memcpy(own, ids->data, sizeof(int64) * n_own);
	qsort(own, n_own, sizeof(int64), Cmp64);
	qsort(oth, n_oth, sizeof(IdPart), CmpIdPart);
	/* an id in two parts, or twice in other parts, is a duplicate node */
	for (int64 i = 0, j = 0; i < n_oth; i++)
	{
		while (j < n_own && own[j] < oth[i].id)
			j++;
		if ((j < n_own && own[j] == oth[i].id) || (i > 0 && oth[i - 1].id == oth[i].id))
			ereport(ERROR,
					(errcode(ERRCODE_UNIQUE_VIOLATION),
					 errmsg("node %lld appears more than once in %s (parts %d and %d)", (long long) oth[i].id,
							nodes_name, j < n_own && own[j] == oth[i].id ? args->part : oth[i - 1].part, oth[i].part),
					 errhint("Node ids must be unique, and each node in one part.")));
	}
	/*
	 * the nodes that keep all their edges: the own ones, and with halo_hops
	 * = L those within L - 1 hops of them (either direction), so that L
	 * hops drawn from own seeds find every neighbour the whole graph has
	 */
	inner = own;
	n_inner = n_own;
	for (int hop = 1; hop < args->halo_hops; hop++)
	{
		int64	   *next = palloc_extended(sizeof(int64) * Max(2 * m + n_inner, 1), MCXT_ALLOC_HUGE);
		int64		nn = n_inner,
					u = 0;

		memcpy(next, inner, sizeof(int64) * n_inner);
		for (int64 e = 0; e < m; e++)
		{
			int64		s = narrow ? ((int32 *) src->data)[e] : ((int64 *) src->data)[e];
			int64		d = narrow ? ((int32 *) dst->data)[e] : ((int64 *) dst->data)[e];
			bool		si = Has64(inner, n_inner, s),
						di = Has64(inner, n_inner, d);

			if (si && !di)
				next[nn++] = d;
			else if (di && !si)
				next[nn++] = s;
		}
		qsort(next, nn, sizeof(int64), Cmp64);
		for (int64 i = 0; i < nn; i++)
			if (u == 0 || next[u - 1] != next[i])
				next[u++] = next[i];
		if (inner != own)
			pfree(inner);
		inner = next;
		if (u == n_inner)
		{
			n_inner = u;
			break;				/* nothing more within reach */
		}
		n_inner = u;
		CHECK_FOR_INTERRUPTS();
	}
	/* the edges with an endpoint there; their endpoints not own are the halo */
	halo = palloc_extended(sizeof(int64) * Max(2 * m, 1), MCXT_ALLOC_HUGE);
	for (int64 e = 0; e < m; e++)
	{
		int64		s = narrow ? ((int32 *) src->data)[e] : ((int64 *) src->data)[e];
		int64		d = narrow ? ((int32 *) dst->data)[e] : ((int64 *) dst->data)[e];
		bool		so = Has64(own, n_own, s),
					dn = Has64(own, n_own, d);

		if (!so && !dn && (inner == own || (!Has64(inner, n_inner, s) && !Has64(inner, n_inner, d))))
			continue;
		if (!so)
			halo[nh++] = s;
		if (!dn)
			halo[nh++] = d;
		if (narrow)
		{
			((int32 *) src->data)[k] = (int32) s;
			((int32 *) dst->data)[k] = (int32) d;
		}
		else
		{
			((int64 *) src->data)[k] = s;
			((int64 *) dst->data)[k] = d;
		}
		if (w && w->n)
			((float *) w->data)[k] = ((float *) w->data)[e];
		k++;
	}
	src->n = dst->n = k;
	if (w && w->n)
		w->n = k;
	qsort(halo, nh, sizeof(int64), Cmp64);
	{
		int64		u = 0;

		for (int64 i = 0; i < nh; i++)
			if (u == 0 || halo[u - 1] != halo[i])
				halo[u++] = halo[i];
		nh = u;
	}
	node_part = palloc_extended(sizeof(int32) * Max(n_own + nh, 1), MCXT_ALLOC_HUGE);
	for (int64 r = 0; r < n_own; r++)
		node_part[r] = args->part;
	*n_unknown = 0;
	for (int64 i = 0; i < nh; i++)
	{
		IdPart		key = {halo[i], 0};
		IdPart	   *hit = bsearch(&key, oth, n_oth, sizeof(IdPart), CmpIdPart);

		node_part[n_own + i] = hit ? hit->part : -1;
		*n_unknown += hit == NULL;
		*(int64 *) GrowPush(ids) = halo[i];
		if (dim > 0 && feat->elem)
			memset(GrowPush(feat), 0, sizeof(float) * dim);
		if (labels->elem)
			*(int32 *) GrowPush(labels) = -1;
		if (split->elem)
			*(uint8 *) GrowPush(split) = GNN_SPLIT_NONE;
	}
	elog(DEBUG1, "gnn: part %d of %s / %s (%d hops of halo): %lld own nodes, %lld halo nodes (%lld without a row here), %lld of %lld edges",
		 args->part, nodes_name, edges_name, args->halo_hops, (long long) n_own, (long long) nh, (long long) *n_unknown,
		 (long long) k, (long long) m);
	if (inner != own)
		pfree(inner);
	pfree(own);
	pfree(halo);
	return node_part;
}

/* a category column's one-hot slots, as gnn.load_schema_graph's default */
#define GNN_LOAD_MAX_CATEGORIES 32

/*
 * Ordinary columns of the node table as features (features => '*', an array
 * of names, or one column that is not an array of floats): which, and how,
 * as a schema graph's; a replaced graph's encodings are kept when it had the
 * same columns encoded the same ways (feat_cols.c).
 */
static void
PlanEncoded(const GnnLoadArgs *args, const char *nodes_name, GnnFeatCols *fc)
{
	List	   *chosen = args->feature_list;
	List	   *refused = list_make1((char *) args->id);
	List	   *why = list_make1("is the node id, not a feature");
	List	   *quiet = NIL;
	const char *type = get_rel_name(args->nodes);

	if (!args->features_all && !chosen)
		chosen = list_make1((char *) args->features);
	if (args->label)
	{
		refused = lappend(refused, (char *) args->label);
		why = lappend(why, "is the label: a model that reads it as a feature reads the answer");
	}
	if (args->split)
	{
		refused = lappend(refused, (char *) args->split);
		why = lappend(why, "is the split, not a feature");
	}
	if (args->part_column)
		quiet = lappend(quiet, (char *) args->part_column);
	memset(fc, 0, sizeof(*fc));
	fc->relid = args->nodes;
	fc->relname = nodes_name;
	fc->leave_out = "Leave the column out of features";
	fc->leave_out_lower = "leave it out of features";
	fc->choose = "Name fewer feature columns (features => ARRAY['...', ...])";
	fc->refused_hint = "Leave it out of features";
	GnnFeatColsPlan(fc, chosen, !args->features_all, NIL, refused, why, quiet);
	if (args->replace && GnnGraphExists(args->name))
	{
		GnnFeatCols *fcs[1] = {fc};
		const char *names[1] = {type};

		(void) GnnKeepEncodings(args->name, fcs, names, 1);
	}
}

/*
 * The encoded features as a dense matrix, a row per node read (row r from
 * the rows fed, src_row[r], or r itself), into *feat; returns the width.
 * The encoders' buffered rows go once written.
 */
static int32
EncodeRows(const char *name, GnnFeatCols *fc, GrowArray *feat, int64 n, const int64 *src_row, MemoryContext ctx)
{
	int32		W = GnnFeatColsFinish(fc, GNN_LOAD_MAX_CATEGORIES);
	int			nenc;
	gnn_col_encoder **encs;
	gnn_error	err;

	if (W == 0)
	{
		StringInfoData b;

		initStringInfo(&b);
		for (int c = 0; c < fc->ncols; c++)
			appendStringInfo(&b, "%s\"%s\": %s", c ? "; " : "", fc->cols[c].name,
							 fc->cols[c].skipped ? fc->cols[c].skipped : "no width");
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("graph \"%s\": no column of %s is a feature", name, fc->relname),
				 b.len ? errdetail("Skipped: %s.", b.data) : errdetail("%s has no column besides its id, label and split.", fc->relname),
				 errhint("Name columns of numbers, booleans, categories, times or arrays in features => ARRAY[...].")));
	}
	if ((uint64) n * (uint64) W > (uint64) (MaxAllocHugeSize / sizeof(float)))
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("graph \"%s\": %lld nodes of %d encoded features do not fit one allocation",
						name, (long long) n, W),
				 errhint("Name fewer feature columns, or lower max categories by choosing columns.")));
	encs = GnnFeatColsEncoders(fc, &nenc);
	memset(feat, 0, sizeof(*feat));
	feat->mcxt = ctx;
	feat->elem = sizeof(float) * (Size) W;
	feat->data = GnnAllocBig(sizeof(float) * (Size) Max(n, 1) * (Size) W, MCXT_ALLOC_HUGE);
	feat->n = feat->cap = n;
	if (gnn_enc_write_rows_perm(encs, nenc, n, src_row, (float *) feat->data, W, 0, gnn_threads, &err) != GNN_OK)
		ereport(ERROR,
				(errcode(err.status == GNN_ERR_NOMEM ? ERRCODE_OUT_OF_MEMORY : ERRCODE_INTERNAL_ERROR),
				 errmsg("encoding the features of %s failed: %s", fc->relname, err.msg)));
	for (int k = 0; k < nenc; k++)
		gnn_enc_drop_rows(encs[k]);
	pfree(encs);
	return W;
}

void
GnnLoadGraph(const GnnLoadArgs *args, GnnGraphEntry *result)
{
	MemoryContext ctx = AllocSetContextCreate(CurrentMemoryContext, "gnn load", ALLOCSET_DEFAULT_SIZES);
	MemoryContext old = MemoryContextSwitchTo(ctx);
	gnn_graph_input in;
	FeatureFill fill = {0};			/* the second pass over the node table, when it reads features */
	GnnScan		s;
	Datum		v[GNN_SCAN_MAXCOLS];
	bool		nl[GNN_SCAN_MAXCOLS];
	GrowArray	src = {0},
				dst = {0},
				w = {0},
				tsrc = {0},
				tdst = {0},
				tids = {0};
	bool		text_ids,
				narrow;
	Oid			key_type;		/* the node ids' type, as the results' keys have it */
	const char *edges_name = QualifiedRelName(args->edges);
	const char *nodes_name = OidIsValid(args->nodes) ? QualifiedRelName(args->nodes) : NULL;
	bool		tracked;
	int			feature_store = GnnParseFeatureStore(args->feature_store);
	GnnFeatureSpill spill = {0};	/* file NULL: features in memory as read */
	float	   *spill_row = NULL;
	bool		encoded = false;	/* features are encoded columns (fc) */
	GnnFeatCols fc;

	GnnCheckGraphName(args->name);
	/* loads, refreshes and drops of the name in turn: what exists now stays so until this ends */
	GnnLockGraph(args->name, GetUserId());
	if (!args->replace && GnnGraphExists(args->name))
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_OBJECT),
				 errmsg("graph \"%s\" already exists", args->name),
				 errhint("Pass replace => true to replace it, or drop it first with gnn.drop_graph().")));
	if (!OidIsValid(args->nodes) && (args->features || args->feature_list || args->features_all ||
									  args->label || args->split))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("features, label and split need a node table"),
				 errhint("Pass nodes => 'your_node_table'.")));
	/* column names before anything reads them (tracking looks them up first) */
	if (!args->src || !args->dst || (OidIsValid(args->nodes) && !args->id))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("the %s column name must not be NULL",
						!args->src ? "source" : !args->dst ? "destination" : "node id"),
				 errhint("Name it with %s => 'column', or leave the argument out for its default.",
						 !args->src ? "src" : !args->dst ? "dst" : "id")));
	if (args->part_column)
	{
		const char *why = !OidIsValid(args->nodes) ? "needs the node table (nodes => ...), whose part column says which nodes are this part's" :
			args->track ? "cannot follow its tables (track => true) yet" :
			OidIsValid(args->sparse) ? "cannot take sparse features yet" :
			feature_store != GNN_FEATURES_MEMORY ? "keeps its features in memory only (feature_store 'memory')" : NULL;

		if (why)
			ereport(ERROR,
					(errcode(OidIsValid(args->nodes) ? ERRCODE_FEATURE_NOT_SUPPORTED : ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("one part of a partitioned graph %s", why),
					 errhint("Load the part with part_column and part from a node table, in memory, without tracking; or load the whole graph.")));
	}
	if (args->slice_count > 0)
	{
		const char *why = args->part_column ? "is for servers that each hold the whole graph, not a part" :
			args->track ? "cannot follow its tables (track => true) yet" :
			OidIsValid(args->sparse) ? "cuts a feature array column, not sparse features" :
			!args->features || args->feature_list || args->features_all ?
			"cuts a feature array column (features => 'column')" : NULL;

		if (why)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("feature_slice %s", why),
					 errhint("Load the whole graph on every server, with its features as a real[] column, untracked.")));
	}
	/* a tracked graph: its triggers, and the snapshot it and the log are read under */
	tracked = GnnTrackBegin(args);
	memset(&in, 0, sizeof(in));
	in.undirected = args->undirected;
	in.skip_dangling = args->skip_dangling;
	in.keep_arc_rows = tracked;
	in.nthreads = gnn_threads;

	/* edges */
	memset(&s, 0, sizeof(s));
	s.relid = args->edges;
	s.relname = edges_name;
	s.ncols = args->weight ? 3 : 2;
	ResolveColumn(&s, 0, args->src, "source", id_types, "smallint, integer, bigint, text, varchar or uuid");
	ResolveColumn(&s, 1, args->dst, "destination", id_types, "smallint, integer, bigint, text, varchar or uuid");
	text_ids = !IsIntType(s.types[0]);
	key_type = s.types[0];
	if (text_ids && args->part_column)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("one part of a partitioned graph needs integer node ids; \"%s\" has type %s",
						args->src, format_type_be(s.types[0])),
				 errhint("Key the nodes by smallint, integer or bigint for a partitioned load, or load the whole graph.")));
	if (text_ids != !IsIntType(s.types[1]))
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("the source column \"%s\" has type %s but the destination column \"%s\" has type %s",
						args->src, format_type_be(s.types[0]), args->dst, format_type_be(s.types[1])),
				 errhint("Node ids are integers, or text / uuid keys, on both ends of an edge.")));
	if (args->weight)
		ResolveColumn(&s, 2, args->weight, "weight", num_types, "real, double precision, numeric or an integer type");
	/* int2 / int4 ids are read into 32-bit arrays: half the memory of 64-bit ones */
	narrow = !text_ids && (s.types[0] == INT2OID || s.types[0] == INT4OID) &&
		(s.types[1] == INT2OID || s.types[1] == INT4OID);
	{
		int64		est = EstimateRows(args->edges);

		GrowInit(&src, ctx, narrow ? sizeof(int32) : sizeof(int64), est);
		GrowInit(&dst, ctx, narrow ? sizeof(int32) : sizeof(int64), est);
		if (args->weight)
			GrowInit(&w, ctx, sizeof(float), est);
		if (text_ids)
		{
			GrowInit(&tsrc, ctx, sizeof(char *), est);
			GrowInit(&tdst, ctx, sizeof(char *), est);
		}
	}
	ScanBegin(&s);
	while (ScanNext(&s, v, nl))
	{
		if (nl[0])
			NullError(&s, 0);
		if (nl[1])
			NullError(&s, 1);
		if (text_ids)
		{
			/* keys as text, numbered once every key is known */
			MemoryContext rc = MemoryContextSwitchTo(ctx);

			*(char **) GrowPush(&tsrc) = GnnKeyText(v[0], s.types[0]);
			*(char **) GrowPush(&tdst) = GnnKeyText(v[1], s.types[1]);
			MemoryContextSwitchTo(rc);
			*(int64 *) GrowPush(&src) = s.rowno;
			*(int64 *) GrowPush(&dst) = s.rowno;
		}
		else if (narrow)
		{
			*(int32 *) GrowPush(&src) = (int32) IntDatum(v[0], s.types[0]);
			*(int32 *) GrowPush(&dst) = (int32) IntDatum(v[1], s.types[1]);
		}
		else
		{
			*(int64 *) GrowPush(&src) = IntDatum(v[0], s.types[0]);
			*(int64 *) GrowPush(&dst) = IntDatum(v[1], s.types[1]);
		}
		if (args->weight)
		{
			double		x;

			if (nl[2])
				NullError(&s, 2);
			x = NumDatum(v[2], s.types[2]);
			CheckFloat(&s, x, "edge weight", text_ids ? s.rowno : IntDatum(v[0], s.types[0]));
			if (x < 0)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("edge %s -> %s in %s has a negative weight (%g)",
								text_ids ? GnnKeyText(v[0], s.types[0]) : psprintf(INT64_FORMAT, IntDatum(v[0], s.types[0])),
								text_ids ? GnnKeyText(v[1], s.types[1]) : psprintf(INT64_FORMAT, IntDatum(v[1], s.types[1])),
								edges_name, x),
						 errdetail("The weight is in %s, column \"%s\".", ScanRowDesc(&s), s.colnames[2]),
						 errhint("Edge weights must be zero or positive; a zero-weight edge is kept but never drawn by weighted sampling.")));
			*(float *) GrowPush(&w) = (float) x;
		}
	}
	ScanEnd(&s);
	/* a node table may hold nodes without any edge; without one, no edge means no graph */
	if (src.n == 0 && !OidIsValid(args->nodes))
		ereport(ERROR,
				(errcode(ERRCODE_NO_DATA_FOUND),
				 errmsg("edge table %s is empty", edges_name),
				 errhint("A graph needs at least one edge, or a node table (nodes => ...) for a graph of isolated nodes.")));
	in.num_edges = src.n;
	if (narrow)
	{
		in.src32 = (int32_t *) src.data;
		in.dst32 = (int32_t *) dst.data;
	}
	else
	{
		in.src = (int64_t *) src.data;
		in.dst = (int64_t *) dst.data;
	}
	in.weight = args->weight ? (float *) w.data : NULL;

	/* nodes */
	if (OidIsValid(args->nodes))
	{
		GrowArray	ids = {0},
					feat = {0},
					labels = {0},
					split = {0};
		int			fcol = -1,
					lcol = -1,
					scol = -1,
					pcol = -1;
		GrowArray	others = {0};	/* (id, part) of rows of other parts */
		int32		dim = -1;
		bool		direct = false;
		HTAB	   *label_map = NULL;
		bool		text_labels = false;
		int32		max_label = -1;
		int64		est = EstimateRows(args->nodes);
		GrowArray	enc_rows = {0};	/* encoded: each kept node's row among the rows fed */
		int64		fed = 0;

		memset(&s, 0, sizeof(s));
		s.relid = args->nodes;
		s.relname = nodes_name;
		s.ncols = 1;
		ResolveColumn(&s, 0, args->id, "node id", text_ids ? id_types : int_types,
					  text_ids ? "smallint, integer, bigint, text, varchar or uuid" : "smallint, integer or bigint");
		if (text_ids && IsIntType(s.types[0]))
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("the edges' ids are text or uuid, but the node id column \"%s\" has type %s",
							args->id, format_type_be(s.types[0])),
					 errhint("Node ids and edge endpoints must have the same kind of type.")));
		if (text_ids)
			GrowInit(&tids, ctx, sizeof(char *), est);
		key_type = s.types[0];
		/* ordinary columns, encoded: '*', a list, or one column that is not an array of floats */
		if (args->features && !args->feature_list && !args->features_all)
		{
			encoded = GnnColumnIsEncoded(args->nodes, args->features);
		}
		else
			encoded = args->feature_list != NIL || args->features_all;
		if (encoded && args->slice_count > 0)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("feature_slice cuts a feature array column; \"%s\" is encoded from ordinary columns",
							args->features),
					 errhint("Load the whole graph on every server, with its features as a real[] column.")));
		if (encoded)
			PlanEncoded(args, nodes_name, &fc);
		else if (args->features)
			ResolveColumn(&s, fcol = s.ncols++, args->features, "feature", feat_types, "real[] or double precision[]");
		if (args->label)
			ResolveColumn(&s, lcol = s.ncols++, args->label, "label", label_types, "an integer or text type");
		if (args->split)
			ResolveColumn(&s, scol = s.ncols++, args->split, "split", text_types, "text");
		if (args->part_column)
		{
			ResolveColumn(&s, pcol = s.ncols++, args->part_column, "part", int_types, "smallint, integer or bigint");
			GrowInit(&others, ctx, sizeof(IdPart), 16);
		}
		if (encoded)
		{
			GnnFeatColsScan(&fc, &s, GNN_LOAD_MAX_CATEGORIES);
			if (pcol >= 0)
				GrowInit(&enc_rows, ctx, sizeof(int64), est);
		}
		text_labels = lcol >= 0 && s.types[lcol] != INT2OID && s.types[lcol] != INT4OID && s.types[lcol] != INT8OID;
		if (text_labels)
		{
			HASHCTL		hc;

			memset(&hc, 0, sizeof(hc));
			hc.keysize = sizeof(((LabelEntry *) 0)->key);
			hc.entrysize = sizeof(LabelEntry);
			hc.hcxt = ctx;
			label_map = hash_create("gnn labels", 64, &hc, HASH_ELEM | HASH_STRINGS | HASH_CONTEXT);
		}
		GrowInit(&ids, ctx, sizeof(int64), est);
		if (lcol >= 0)
			GrowInit(&labels, ctx, sizeof(int32), est);
		if (scol >= 0)
			GrowInit(&split, ctx, 1, est);
		ScanBegin(&s);
		/*
		 * features straight into the segment (FillFeatures) where two passes
		 * see the same rows and the features stay in memory ('auto' decides
		 * at registration and may need the matrix for the features file)
		 */
		direct = fcol >= 0 && !text_ids && !s.use_spi && feature_store == GNN_FEATURES_MEMORY && pcol < 0;
		fill.scan = s;
		fill.fcol = fcol;
		fill.nodes_name = nodes_name;
		while (ScanNext(&s, v, nl))
		{
			int64		id;

			if (nl[0])
				NullError(&s, 0);
			if (text_ids)
			{
				MemoryContext rc = MemoryContextSwitchTo(ctx);

				*(char **) GrowPush(&tids) = GnnKeyText(v[0], s.types[0]);
				MemoryContextSwitchTo(rc);
				id = s.rowno;	/* messages name the row */
			}
			else
				id = IntDatum(v[0], s.types[0]);
			/* every row's values fit the encoders, so every part encodes alike */
			if (encoded)
			{
				GnnFeatColsFeed(&fc, &s, v, nl);
				fed++;
			}
			if (pcol >= 0)
			{
				int64		p;

				if (nl[pcol])
					ereport(ERROR,
							(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
							 errmsg("node %lld has no part", (long long) id),
							 errdetail("In %s of %s, column \"%s\" is NULL.", ScanRowDesc(&s), nodes_name, args->part_column),
							 errhint("Give every node its part (gnn.partition's output), or leave such rows out with a view.")));
				p = IntDatum(v[pcol], s.types[pcol]);
				if (p < 0 || p > PG_INT32_MAX)
					ereport(ERROR,
							(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
							 errmsg("node %lld has part %lld", (long long) id, (long long) p),
							 errdetail("In %s of %s, column \"%s\".", ScanRowDesc(&s), nodes_name, args->part_column),
							 errhint("Parts are numbered from 0, as gnn.partition numbers them.")));
				if (p != args->part)
				{
					IdPart	   *o = GrowPush(&others);

					o->id = id;
					o->part = (int32) p;
					continue;
				}
			}
			*(int64 *) GrowPush(&ids) = id;
			if (encoded && pcol >= 0)
				*(int64 *) GrowPush(&enc_rows) = fed - 1;
			if (fcol >= 0)
			{
				if (nl[fcol])
					FeaturesNullError(&fill, &s, id);
				if (dim < 0)
				{
					/* the first row sets the width, and where the features go */
					ArrayType  *arr = DatumGetArrayTypeP(v[fcol]);
					int			n = ARR_NDIM(arr) == 0 ? 0 : ARR_DIMS(arr)[0];

					if (n == 0)
						ereport(ERROR,
								(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
								 errmsg("features of node %lld are an empty array", (long long) id),
								 errdetail("In %s of %s.", ScanRowDesc(&s), nodes_name)));
					dim = n;
					fill.dim = dim;
					fill.dim_id = id;
					fill.lo = 0;
					fill.w = dim;
					if (args->slice_count > 0)
					{
						/* a feature slice: the rows keep their columns [lo, lo + w) */
						fill.lo = (int32) ((int64) args->slice_index * dim / args->slice_count);
						fill.w = (int32) ((int64) (args->slice_index + 1) * dim / args->slice_count) - fill.lo;
						if (fill.w < 1)
							ereport(ERROR,
									(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
									 errmsg("%d feature columns over %d slices leave slice %d none", dim,
											args->slice_count, args->slice_index),
									 errhint("Split the features over at most %d servers.", dim)));
						dim = fill.w;	/* (the rows as kept) */
					}
					/*
					 * Features bound for disk go to a temporary file as they
					 * are read ('auto': when the table's estimate says they
					 * will not fit), so the loader never holds the matrix.
					 */
					if (feature_store == GNN_FEATURES_DISK ||
						(feature_store == GNN_FEATURES_AUTO &&
						 (uint64) Max(est, 1) * sizeof(float) * (uint64) dim > GnnGraphMemoryFree()))
					{
						direct = false;
						/* the load's context: rows are read in one that is reset for each */
						MemoryContext rowcxt = MemoryContextSwitchTo(ctx);

						spill.file = BufFileCreateTemp(false);
						spill.dim = dim;
						spill_row = palloc(sizeof(float) * dim);
						MemoryContextSwitchTo(rowcxt);
					}
					else if (!direct)
						GrowInit(&feat, ctx, sizeof(float) * dim, est);
				}
				if (!direct)
				{
					/* checked and copied as the second pass would (FillRow) */
					float	   *row = spill.file ? spill_row : GrowPush(&feat);

					FillRow(&fill, &s, v[fcol], false, id, row);
					if (spill.file)
					{
						BufFileWrite(spill.file, row, sizeof(float) * dim);
						spill.rows++;
					}
				}
			}
			if (lcol >= 0)
			{
				int32		l = -1;

				if (!nl[lcol] && !text_labels)
				{
					int64		x = IntDatum(v[lcol], s.types[lcol]);

					if (x < 0)
						ereport(ERROR,
								(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
								 errmsg("label %lld of node %lld is negative", (long long) x, (long long) id),
								 errdetail("In %s of %s.", ScanRowDesc(&s), nodes_name),
								 errhint("Integer labels are class numbers 0, 1, 2, ...; use NULL for an unlabelled node.")));
					if (x >= gnn_max_classes)
						ereport(ERROR,
								(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
								 errmsg("label %lld of node %lld would make a model of %lld classes, more than gnn.max_classes (%d)",
										(long long) x, (long long) id, (long long) x + 1, gnn_max_classes),
								 errdetail("In %s of %s.  Integer labels are class numbers: a model has one output per number from 0 to the largest label.",
										   ScanRowDesc(&s), nodes_name),
								 errhint("Number the classes 0, 1, 2, ... (dense_rank() OVER (ORDER BY label) - 1), use a text label column, or %s.", GnnRaiseSetting("gnn.max_classes"))));
					l = (int32) x;
					if (l > max_label)
						max_label = l;
				}
				else if (!nl[lcol])
				{
					char	   *t = TextDatum(v[lcol], s.types[lcol]);
					bool		found;
					LabelEntry *le;

					if (strlen(t) >= sizeof(le->key))
						ereport(ERROR,
								(errcode(ERRCODE_STRING_DATA_RIGHT_TRUNCATION),
								 errmsg("label of node %lld is longer than %d bytes", (long long) id,
										(int) sizeof(le->key) - 1)));
					le = hash_search(label_map, t, HASH_ENTER, &found);
					if (!found)
					{
						le->index = (int32) hash_get_num_entries(label_map) - 1;
						if (le->index >= gnn_max_classes)
							ereport(ERROR,
									(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
									 errmsg("the label column of %s has more than gnn.max_classes (%d) distinct values",
											nodes_name, gnn_max_classes),
									 errdetail("\"%s\" (node %lld, %s) is class number %d.", t, (long long) id,
											   ScanRowDesc(&s), le->index + 1),
									 errhint("Use a column with fewer classes, or %s.", GnnRaiseSetting("gnn.max_classes"))));
					}
					l = le->index;	/* provisional; remapped to sorted order below */
				}
				*(int32 *) GrowPush(&labels) = l;
			}
			if (scol >= 0)
			{
				uint8		sp = GNN_SPLIT_NONE;

				if (!nl[scol])
				{
					char	   *t = TextDatum(v[scol], s.types[scol]);

					int			k = GnnParseSplit(t);

					if (k >= 0)
						sp = (uint8) k;
					else
						ereport(ERROR,
								(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
								 errmsg("split of node %lld is \"%s\"", (long long) id, t),
								 errdetail("In %s of %s.", ScanRowDesc(&s), nodes_name),
								 errhint("A split is train, val, test, or NULL for none.")));
				}
				*(uint8 *) GrowPush(&split) = sp;
			}
		}
		ScanEnd(&s);
		if (ids.n == 0 && pcol >= 0)
			ereport(ERROR,
					(errcode(ERRCODE_NO_DATA_FOUND),
					 errmsg("no node of %s is in part %d", nodes_name, args->part),
					 errdetail("%lld rows have another part in column \"%s\".", (long long) others.n, args->part_column),
					 errhint("Pass the part this server holds, numbered from 0.")));
		if (ids.n == 0)
			ereport(ERROR,
					(errcode(ERRCODE_NO_DATA_FOUND),
					 errmsg("node table %s is empty", nodes_name),
					 errhint("Omit nodes => to take the nodes from the edge endpoints.")));
		if (encoded)
		{
			dim = EncodeRows(args->name, &fc, &feat, ids.n, pcol >= 0 ? (const int64 *) enc_rows.data : NULL, ctx);
			fcol = -1;
		}
		if (pcol >= 0)
		{
			int64		unknown;

			in.node_part = KeepPart(args, nodes_name, edges_name, &src, &dst, args->weight ? &w : NULL, narrow,
									&ids, &feat, direct ? 0 : dim, &labels, &split, &others, &unknown);
			in.part = args->part;
			in.num_edges = src.n;
		}
		in.num_nodes = ids.n;
		in.node_ids = (int64_t *) ids.data;
		if (fcol >= 0 || encoded)
		{
			in.feat_dim = dim;
			in.feat = spill.file || direct ? NULL : (float *) feat.data;
			if (direct)
			{
				fill.rows = ids.n;
				fill.ids = (const int64 *) ids.data;
				in.feat_fill = FillFeatures;
				in.feat_fill_arg = &fill;
			}
		}
		if (lcol >= 0)
			in.labels = (int32_t *) labels.data;
		if (lcol >= 0 && !text_labels && max_label >= 16)
		{
			/* sparse class numbers cost a model output each: say so */
			bool	   *seen = palloc0(max_label + 1);
			int64		used = 0;

			for (int64 i = 0; i < labels.n; i++)
			{
				int32		l = ((int32 *) labels.data)[i];

				if (l >= 0 && !seen[l])
				{
					seen[l] = true;
					used++;
				}
			}
			if (used * 2 < (int64) max_label + 1)
				ereport(NOTICE,
						(errmsg("graph \"%s\": labels use %lld of the %d class numbers 0 to %d; models will have %d outputs",
								args->name, (long long) used, max_label + 1, max_label, max_label + 1),
						 errhint("Number the classes 0, 1, 2, ... (dense_rank() OVER (ORDER BY label) - 1) or use a text label column.")));
			pfree(seen);
		}
		if (scol >= 0)
			in.split = (uint8_t *) split.data;
		if (text_labels)
		{
			/* classes numbered in sorted order of their names, for determinism */
			int64		nc = hash_get_num_entries(label_map);
			char	  **names = palloc(sizeof(char *) * Max(nc, 1));
			int32	   *remap = palloc(sizeof(int32) * Max(nc, 1));
			HASH_SEQ_STATUS hs;
			LabelEntry *le;
			StringInfoData buf;

			hash_seq_init(&hs, label_map);
			while ((le = hash_seq_search(&hs)) != NULL)
				names[le->index] = le->key;
			{
				char	  **sorted = palloc(sizeof(char *) * Max(nc, 1));

				memcpy(sorted, names, sizeof(char *) * nc);
				qsort(sorted, nc, sizeof(char *), CompareStrings);
				initStringInfo(&buf);
				for (int64 i = 0; i < nc; i++)
				{
					le = hash_search(label_map, sorted[i], HASH_FIND, NULL);
					remap[le->index] = (int32) i;
					appendBinaryStringInfo(&buf, sorted[i], strlen(sorted[i]) + 1);
				}
			}
			for (int64 i = 0; i < labels.n; i++)
			{
				int32	   *l = &((int32 *) labels.data)[i];

				if (*l >= 0)
					*l = remap[*l];
			}
			in.class_names = buf.data;
			in.class_names_bytes = buf.len;
		}
	}

	/*
	 * Text and uuid ids: the nodes are numbered in byte order of their keys
	 * (the node table's, else the edge endpoints'), node rows put in that
	 * order, edges mapped through a hash of the keys, the keys kept as text.
	 */
	if (text_ids)
	{
		char	  **keys;
		int64		nk;
		GnnTextKeys *dict;
		StringInfoData kb;
		int64	   *koff;

		if (OidIsValid(args->sparse))
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("sparse features need integer node ids"),
					 errhint("Use features => (a real[] column of the node table) with text or uuid ids.")));
		if (OidIsValid(args->nodes))
		{
			keys = (char **) tids.data;
			nk = tids.n;
		}
		else
		{
			/* the distinct endpoints */
			keys = palloc_extended(sizeof(char *) * Max(2 * src.n, 1), MCXT_ALLOC_HUGE);
			nk = 0;
			for (int64 e = 0; e < src.n; e++)
			{
				keys[nk++] = ((char **) tsrc.data)[e];
				keys[nk++] = ((char **) tdst.data)[e];
			}
			qsort(keys, nk, sizeof(char *), CompareStrings);
			{
				int64		u = 0;

				for (int64 i = 0; i < nk; i++)
					if (u == 0 || strcmp(keys[u - 1], keys[i]) != 0)
						keys[u++] = keys[i];
				nk = u;
			}
		}
		dict = GnnTextKeysBuild(keys, nk, OidIsValid(args->nodes) ? args->id : args->src,
								nodes_name ? nodes_name : edges_name, ctx);
		/* node rows in key order: ids 0..n-1, features, labels, splits follow */
		{
			int64_t    *nid = palloc_extended(sizeof(int64) * nk, MCXT_ALLOC_HUGE);

			for (int64 c = 0; c < nk; c++)
				nid[c] = c;
			if (OidIsValid(args->nodes))
			{
				if (spill.file)
				{
					/* the spilled rows stay where they are: node c's is the row of its key */
					spill.input_row = palloc_extended(sizeof(int64) * Max(nk, 1), MCXT_ALLOC_HUGE);
					for (int64 c = 0; c < nk; c++)
						spill.input_row[c] = GnnTextKeysRow(dict, c);
				}
				if (in.feat)
				{
					float	   *f = palloc_extended(sizeof(float) * nk * Max(in.feat_dim, 1), MCXT_ALLOC_HUGE);

					for (int64 c = 0; c < nk; c++)
						memcpy(f + c * in.feat_dim, in.feat + GnnTextKeysRow(dict, c) * in.feat_dim,
							   sizeof(float) * in.feat_dim);
					in.feat = f;
				}
				if (in.labels)
				{
					int32_t    *l = palloc_extended(sizeof(int32) * nk, MCXT_ALLOC_HUGE);

					for (int64 c = 0; c < nk; c++)
						l[c] = in.labels[GnnTextKeysRow(dict, c)];
					in.labels = l;
				}
				if (in.split)
				{
					uint8_t    *sp = palloc_extended(nk, MCXT_ALLOC_HUGE);

					for (int64 c = 0; c < nk; c++)
						sp[c] = in.split[GnnTextKeysRow(dict, c)];
					in.split = sp;
				}
			}
			in.num_nodes = nk;
			in.node_ids = nid;
		}
		initStringInfo(&kb);
		koff = palloc_extended(sizeof(int64) * (nk + 1), MCXT_ALLOC_HUGE);
		for (int64 c = 0; c < nk; c++)
		{
			koff[c] = kb.len;
			appendStringInfoString(&kb, keys[GnnTextKeysRow(dict, c)]);
		}
		koff[nk] = kb.len;
		in.key_off = koff;
		in.key_bytes = kb.data;
		in.type_text_key = (const uint8_t *) "\1";
		/* edges */
		{
			int64		m = 0;

			for (int64 e = 0; e < src.n; e++)
			{
				int64		a = GnnTextKeysFind(dict, ((char **) tsrc.data)[e]),
							b = GnnTextKeysFind(dict, ((char **) tdst.data)[e]);

				if (a < 0 || b < 0)
				{
					if (args->skip_dangling)
						continue;
					ereport(ERROR,
							(errcode(ERRCODE_FOREIGN_KEY_VIOLATION),
							 errmsg("graph \"%s\": edge %s -> %s refers to node %s, which %s does not contain",
									args->name, ((char **) tsrc.data)[e], ((char **) tdst.data)[e],
									a < 0 ? ((char **) tsrc.data)[e] : ((char **) tdst.data)[e], nodes_name),
							 errdetail("Edge row %lld of %s.", (long long) e + 1, edges_name),
							 errhint("Add the node to %s, or pass skip_dangling => true to leave such edges out.",
									 nodes_name)));
				}
				((int64 *) src.data)[m] = a;
				((int64 *) dst.data)[m] = b;
				if (args->weight)
					((float *) w.data)[m] = ((float *) w.data)[e];
				m++;
			}
			in.num_edges = m;
		}
	}

	/* sparse features (node, index, value) */
	if (OidIsValid(args->sparse))
	{
		GrowArray	sn = {0},
					si = {0},
					sv = {0};
		int64		est = EstimateRows(args->sparse);

		if (args->features)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("features and sparse_features cannot both be given"),
					 errhint("Pick one representation of the node features.")));
		memset(&s, 0, sizeof(s));
		s.relid = args->sparse;
		s.relname = QualifiedRelName(args->sparse);
		s.ncols = 3;
		ResolveColumn(&s, 0, args->sparse_id, "sparse feature node id", int_types, "smallint, integer or bigint");
		ResolveColumn(&s, 1, args->sparse_index, "sparse feature index", int_types, "smallint, integer or bigint");
		ResolveColumn(&s, 2, args->sparse_value, "sparse feature value", num_types, "a numeric type");
		GrowInit(&sn, ctx, sizeof(int64), est);
		GrowInit(&si, ctx, sizeof(int32), est);
		GrowInit(&sv, ctx, sizeof(float), est);
		ScanBegin(&s);
		while (ScanNext(&s, v, nl))
		{
			int64		id,
						idx;
			double		x;

			for (int c = 0; c < 3; c++)
				if (nl[c])
					NullError(&s, c);
			id = IntDatum(v[0], s.types[0]);
			idx = IntDatum(v[1], s.types[1]);
			x = NumDatum(v[2], s.types[2]);
			if (idx < 0 || idx >= INT32_MAX)
				ereport(ERROR,
						(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
						 errmsg("feature index %lld of node %lld is out of range", (long long) idx, (long long) id),
						 errdetail("In %s of %s.", ScanRowDesc(&s), s.relname),
						 errhint("Feature indices count from 0.")));
			CheckFloat(&s, x, psprintf("feature %lld", (long long) idx), id);
			*(int64 *) GrowPush(&sn) = id;
			*(int32 *) GrowPush(&si) = (int32) idx;
			*(float *) GrowPush(&sv) = (float) x;
		}
		ScanEnd(&s);
		in.sparse_nnz = sn.n;
		in.sp_node = (int64_t *) sn.data;
		in.sp_index = (int32_t *) si.data;
		in.sp_value = (float *) sv.data;
	}

	/*
	 * One node type and one edge type, named after their tables, with a
	 * description in the form schema graphs keep (gnn.graph_types,
	 * gnn.graph_columns read it).
	 */
	{
		StringInfoData nm,
					meta;
		const char *ntype = OidIsValid(args->nodes) ? get_rel_name(args->nodes) : "node";
		const char *etype = get_rel_name(args->edges);

		initStringInfo(&nm);
		appendBinaryStringInfo(&nm, ntype, strlen(ntype) + 1);
		appendBinaryStringInfo(&nm, etype, strlen(etype) + 1);
		in.type_names = nm.data;
		in.type_names_bytes = nm.len;
		initStringInfo(&meta);
		appendStringInfoString(&meta, "{\"kind\":\"tables\",\"types\":[{\"name\":");
		escape_json(&meta, ntype);
		appendStringInfoString(&meta, ",\"table\":");
		if (nodes_name)
			escape_json(&meta, nodes_name);
		else
			appendStringInfoString(&meta, "null");
		appendStringInfoString(&meta, ",\"key\":");
		escape_json(&meta, OidIsValid(args->nodes) ? args->id : args->src);
		appendStringInfoString(&meta, ",\"key_type\":");
		escape_json(&meta, format_type_be(key_type));
		appendStringInfo(&meta, ",\"offset\":0,\"feature_offset\":0,\"feature_width\":%d,\"columns\":[",
						 in.feat_dim > 0 ? in.feat_dim : (int) in.sparse_dim);
		if (encoded)
			GnnFeatColsDescribe(&fc, &meta, 0);
		else if (args->features || OidIsValid(args->sparse))
		{
			appendStringInfoString(&meta, "{\"column\":");
			escape_json(&meta, args->features ? args->features : args->sparse_value);
			appendStringInfo(&meta, ",\"type\":null,\"encoding\":\"%s\",\"offset\":0,\"width\":%d}",
							 args->features ? "array" : "sparse", in.feat_dim > 0 ? in.feat_dim : (int) in.sparse_dim);
		}
		appendStringInfoString(&meta, "]}],\"edges\":[{\"id\":0,\"name\":");
		escape_json(&meta, etype);
		appendStringInfoString(&meta, ",\"source\":");
		escape_json(&meta, psprintf("%s(%s -> %s)", edges_name, args->src, args->dst));
		appendStringInfoString(&meta, ",\"constraint\":null,\"reverse\":false}]");
		if (args->part_column)
		{
			/* (halo_hops first: GnnGraphHaloHops reads it there) */
			appendStringInfo(&meta, ",\"partition\":{\"halo_hops\":%d,\"column\":", args->halo_hops);
			escape_json(&meta, args->part_column);
			appendStringInfo(&meta, ",\"part\":%d}", args->part);
		}
		if (args->slice_count > 0)
			/* (GnnGraphFeatureSlice reads it) */
			appendStringInfo(&meta, ",\"feature_slice\":{\"index\":%d,\"count\":%d,\"columns\":%d,\"first\":%d}",
							 args->slice_index, args->slice_count, fill.dim, fill.lo);
		appendStringInfoChar(&meta, '}');
		in.meta = meta.data;
		in.meta_bytes = meta.len;
	}

	/* where the nodes came from: gnn.embed refuses to overwrite these columns */
	{
		GnnGraphEntry proto;
		LoadReportArg ra = {args, edges_name, nodes_name};

		memset(&proto, 0, sizeof(proto));
		proto.undirected = args->undirected;
		proto.nodes_rel = args->nodes;
		proto.edges_rel = args->edges;
		strlcpy(proto.src_col, args->src, sizeof(proto.src_col));
		strlcpy(proto.dst_col, args->dst, sizeof(proto.dst_col));
		if (args->weight)
			strlcpy(proto.weight_col, args->weight, sizeof(proto.weight_col));
		proto.skip_dangling = args->skip_dangling;
		proto.sparse_rel = args->sparse;
		if (args->sparse_id)
			strlcpy(proto.sparse_id_col, args->sparse_id, sizeof(proto.sparse_id_col));
		if (args->sparse_index)
			strlcpy(proto.sparse_index_col, args->sparse_index, sizeof(proto.sparse_index_col));
		if (args->sparse_value)
			strlcpy(proto.sparse_value_col, args->sparse_value, sizeof(proto.sparse_value_col));
		proto.tracked = tracked;
		proto.stored = GnnStoreTrackedToo(args->name, tracked, args->persist);
		if (OidIsValid(args->nodes))
		{
			strlcpy(proto.id_col, args->id, sizeof(proto.id_col));
			if (args->features && !encoded)
				strlcpy(proto.feat_col, args->features, sizeof(proto.feat_col));
			proto.feat_encoded = encoded;
			if (args->label)
				strlcpy(proto.label_col, args->label, sizeof(proto.label_col));
			if (args->split)
				strlcpy(proto.split_col, args->split, sizeof(proto.split_col));
		}
		GnnBuildAndRegister(args->name, args->replace, &in, &proto, feature_store, spill.file ? &spill : NULL,
							LoadReport, &ra, ctx);
		if (spill.file)
			BufFileClose(spill.file);
		if (tracked)
			GnnTrackEnd(args->name);
		MemoryContextSwitchTo(old);
		*result = proto;
	}
	MemoryContextDelete(ctx);
}

/* The arguments that load e again (strings point into e). */
void
GnnLoadArgsFromEntry(const GnnGraphEntry *e, GnnLoadArgs *a)
{
	memset(a, 0, sizeof(*a));
	a->name = e->name;
	a->edges = e->edges_rel;
	a->src = e->src_col;
	a->dst = e->dst_col;
	a->weight = e->weight_col[0] ? e->weight_col : NULL;
	a->nodes = e->nodes_rel;
	a->id = e->id_col;
	a->features = e->feat_col[0] ? e->feat_col : NULL;
	if (e->feat_encoded)
	{
		/* the columns it encoded (and skipped), as '*' takes them: its encodings are kept */
		ListCell   *lc;

		a->features_all = true;
		foreach(lc, GnnOldColumns(e->name))
			a->feature_list = lappend(a->feature_list, ((GnnOldCol *) lfirst(lc))->column);
	}
	a->label = e->label_col[0] ? e->label_col : NULL;
	a->split = e->split_col[0] ? e->split_col : NULL;
	a->undirected = e->undirected;
	a->skip_dangling = e->skip_dangling;
	a->sparse = e->sparse_rel;
	a->sparse_id = e->sparse_id_col[0] ? e->sparse_id_col : NULL;
	a->sparse_index = e->sparse_index_col[0] ? e->sparse_index_col : NULL;
	a->sparse_value = e->sparse_value_col[0] ? e->sparse_value_col : NULL;
	a->feature_store = e->feat_disk ? "disk" : NULL;
	/* a reload (gnn.track, a refresh's) keeps the graph stored if it was */
	a->persist = e->stored ? 1 : 0;
}

static const char *
FeatKindName(int kind)
{
	return kind == GNN_FEAT_DENSE ? "dense" : kind == GNN_FEAT_SPARSE ? "sparse" : "none";
}

/* one row of gnn.graphs: name, owner, nodes, edges, feature_dim, features, classes,
 * train, val, test, undirected, bytes, loaded_at */
void
GnnEntryToValues(const GnnGraphEntry *e, Datum *values, bool *nulls)
{
	memset(nulls, 0, sizeof(bool) * GNN_GRAPH_COLS);
	values[0] = CStringGetTextDatum(e->name);
	values[1] = ObjectIdGetDatum(e->owner);
	values[2] = Int64GetDatum(e->nodes);
	values[3] = Int64GetDatum(e->edges);
	values[4] = Int32GetDatum(e->feat_dim);
	values[5] = CStringGetTextDatum(FeatKindName(e->feat_kind));
	values[6] = Int32GetDatum(e->classes);
	values[7] = Int64GetDatum(e->n_train);
	values[8] = Int64GetDatum(e->n_val);
	values[9] = Int64GetDatum(e->n_test);
	values[10] = BoolGetDatum(e->undirected);
	/* its share of gnn.memory_used(): the graph, its delta, its partition and its feature cache */
	values[11] = Int64GetDatum((int64) (e->bytes + e->delta_bytes + e->part_bytes + e->cache_bytes));
	values[12] = TimestampTzGetDatum(e->loaded_at);
}
