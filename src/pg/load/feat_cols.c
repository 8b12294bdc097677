/*
 * feat_cols.c: ordinary columns of a table as features, for both loaders.
 *
 * gnn.load_schema_graph encodes every table's columns this way, and
 * gnn.load_graph its node table's when features => names columns rather than
 * one real[] column (ARRAY['age', 'country'], or '*').  One path: which
 * columns are features and how each type is encoded (planning), the
 * encoders fed row by row as a scan reads them, finished (statistics,
 * categories; identifier-like text skipped), described in the graph's meta
 * (gnn.graph_columns) and, when a load replaces a graph, kept from the
 * replaced one so that a model trained on it reads new rows as it read the
 * old ones.  The encoders themselves are the core's (graph/encode.h).
 */
#include "common/gnn_pg.h"
#include "load/load_int.h"

#include <math.h>

#include "catalog/pg_attribute.h"
#include "catalog/pg_type.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/date.h"
#include "utils/json.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"

#include "graph/encode.h"

static bool
HasString(List *l, const char *s)
{
	ListCell   *lc;

	foreach(lc, l)
		if (strcmp((const char *) lfirst(lc), s) == 0)
			return true;
	return false;
}

/* Column a of a table, or NULL when there is none or it was dropped. */
static char *
LiveAttName(Oid relid, AttrNumber a)
{
	HeapTuple	tup = SearchSysCache2(ATTNUM, ObjectIdGetDatum(relid), Int16GetDatum(a));
	char	   *name = NULL;

	if (!HeapTupleIsValid(tup))
		return NULL;
	if (!((Form_pg_attribute) GETSTRUCT(tup))->attisdropped)
		name = pstrdup(NameStr(((Form_pg_attribute) GETSTRUCT(tup))->attname));
	ReleaseSysCache(tup);
	return name;
}

/* The columns of a table, for messages. */
char *
GnnColumnList(Oid relid)
{
	StringInfoData b;
	HeapTuple	tup;
	int			natts;

	initStringInfo(&b);
	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	natts = HeapTupleIsValid(tup) ? ((Form_pg_class) GETSTRUCT(tup))->relnatts : 0;
	if (HeapTupleIsValid(tup))
		ReleaseSysCache(tup);
	for (int a = 1; a <= natts; a++)
	{
		char	   *n = LiveAttName(relid, (AttrNumber) a);

		if (n)
			appendStringInfo(&b, "%s%s", b.len ? ", " : "", n);
	}
	return b.data;
}

/* Whether load_graph's features => col names an ordinary column (encoded), not an array of floats. */
bool
GnnColumnIsEncoded(Oid relid, const char *col)
{
	AttrNumber	a = get_attnum(relid, col);
	Oid			t = a > 0 ? getBaseType(get_atttype(relid, a)) : InvalidOid;

	return OidIsValid(t) && t != FLOAT4ARRAYOID && t != FLOAT8ARRAYOID;
}

/* The attribute number of column col (an error listing the columns when missing). */
AttrNumber
GnnColumnOf(Oid relid, const char *relname, const char *col, const char *role)
{
	AttrNumber	a = get_attnum(relid, col);

	if (a == InvalidAttrNumber || a < 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_COLUMN),
				 errmsg("column \"%s\" does not exist in %s", col, relname),
				 errdetail("%s has the columns: %s.", relname, GnnColumnList(relid)),
				 errhint("Name an existing column as the %s.", role)));
	return a;
}

/* A time column's value as microseconds (PostgreSQL's epoch, 2000-01-01). */
int64
GnnTimeValue(Datum d, Oid type)
{
	if (type == DATEOID)
		return (int64) DatumGetDateADT(d) * USECS_PER_DAY;
	return DatumGetInt64(d);	/* timestamp, timestamptz */
}

/* 'infinity' or '-infinity' */
static bool
TimeInfinite(Datum d, Oid type)
{
	if (type == DATEOID)
		return DATE_NOT_FINITE(DatumGetDateADT(d));
	return TIMESTAMP_NOT_FINITE(DatumGetInt64(d));
}

static void
EncCheck(gnn_status st, const gnn_error *err, GnnFeatCols *fc, GnnFeatCol *c)
{
	if (st != GNN_OK)
		ereport(ERROR,
				(errcode(st == GNN_ERR_NOMEM ? ERRCODE_OUT_OF_MEMORY : ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("column \"%s\" of %s: %s", c->name, fc->relname, err->msg),
				 errhint("%s, or fix its values.", fc->leave_out)));
}

/*
 * Which columns of fc->relid are features, and how each is encoded.  With
 * explicit_list, the columns in chosen (each must exist and be of a type the
 * encoders take; one in refused is an error saying refused_why); else every
 * column but those in excluded (checked to exist), those in refused and
 * those in quiet (and, where chosen is given, not in chosen: the columns
 * of a graph loaded before), a column of a type gnn cannot encode being
 * kept as skipped.  A column in refused (keys) named in the list is an error saying
 * why (refused_why, the same order), with fc->refused_hint; columns in quiet
 * are never features and never an error.
 */
void
GnnFeatColsPlan(GnnFeatCols *fc, List *chosen, bool explicit_list, List *excluded, List *refused,
				List *refused_why, List *quiet)
{
	HeapTuple	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(fc->relid));
	int			natts;
	ListCell   *lc;

	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for relation %u", fc->relid);
	natts = ((Form_pg_class) GETSTRUCT(tup))->relnatts;
	ReleaseSysCache(tup);
	/* named by the caller: they must exist (a graph's columns read again: those gone are left out) */
	if (explicit_list)
		foreach(lc, chosen)
			(void) GnnColumnOf(fc->relid, fc->relname, lfirst(lc), "feature column");
	foreach(lc, excluded)
		(void) GnnColumnOf(fc->relid, fc->relname, lfirst(lc), "excluded column");
	fc->cols = palloc0(sizeof(GnnFeatCol) * (natts + 1));
	fc->ncols = 0;
	for (int a = 1; a <= natts; a++)
	{
		char	   *col = LiveAttName(fc->relid, (AttrNumber) a);
		Oid			type;
		GnnFeatCol *c;

		if (col == NULL)
			continue;			/* dropped */
		if (explicit_list ? !HasString(chosen, col) :
			HasString(excluded, col) || (chosen != NIL && !HasString(chosen, col)))
			continue;
		if (HasString(refused, col))
		{
			if (explicit_list)
			{
				ListCell   *rc,
						   *wc;
				const char *why = "is not a feature";

				forboth(rc, refused, wc, refused_why)
					if (strcmp((const char *) lfirst(rc), col) == 0)
					why = lfirst(wc);
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("column \"%s\" of %s %s", col, fc->relname, why),
						 errhint("%s.", fc->refused_hint)));
			}
			continue;
		}
		if (HasString(quiet, col))
			continue;
		type = getBaseType(get_atttype(fc->relid, a));	/* a domain: its base type's values */
		c = &fc->cols[fc->ncols++];
		c->name = col;
		c->type = type;
		c->scan = -1;
		c->chosen = explicit_list;
		switch (type)
		{
			case INT2OID:
			case INT4OID:
			case INT8OID:
			case FLOAT4OID:
			case FLOAT8OID:
			case NUMERICOID:
				c->kind = GNN_ENC_NUMERIC;
				break;
			case BOOLOID:
				c->kind = GNN_ENC_BOOL;
				break;
			case TEXTOID:
			case VARCHAROID:
			case BPCHAROID:
				c->kind = GNN_ENC_CATEGORY;
				break;
			case TIMESTAMPOID:
			case TIMESTAMPTZOID:
			case DATEOID:
				c->kind = GNN_ENC_TIME;
				break;
			case FLOAT4ARRAYOID:
			case FLOAT8ARRAYOID:
				c->kind = GNN_ENC_ARRAY;
				break;
			default:
				if (type_is_enum(type))
					c->kind = GNN_ENC_CATEGORY;
				else if (explicit_list)
					ereport(ERROR,
							(errcode(ERRCODE_DATATYPE_MISMATCH),
							 errmsg("column \"%s\" of %s has type %s, which gnn cannot encode as a feature",
									col, fc->relname, format_type_be(type)),
							 errhint("Features can be numbers, booleans, text or enum categories, times and dates, and real[] or float8[] arrays.")));
				else
					c->skipped = psprintf("type %s is not encoded", format_type_be(type));
		}
	}
}

/* The encoders' memory (the core's malloc) goes with the load's context, on error too. */
static void
FreeEncoders(void *arg)
{
	GnnFeatCols *fc = arg;

	for (int c = 0; c < fc->ncols; c++)
		if (fc->cols[c].enc)
		{
			gnn_enc_free(fc->cols[c].enc);
			fc->cols[c].enc = NULL;
		}
}

/*
 * The feature columns into the scan, and their encoders (fresh, or as
 * kept), freed when the current memory context (the load's, which must hold
 * fc) goes.
 */
void
GnnFeatColsScan(GnnFeatCols *fc, GnnScan *s, int32 max_categories)
{
	MemoryContextCallback *cb = palloc0(sizeof(MemoryContextCallback));

	cb->func = FreeEncoders;
	cb->arg = fc;
	MemoryContextRegisterResetCallback(CurrentMemoryContext, cb);
	for (int c = 0; c < fc->ncols; c++)
	{
		GnnFeatCol *col = &fc->cols[c];
		gnn_error	err;

		if (col->skipped)
			continue;
		if (s->ncols >= GNN_SCAN_MAXCOLS)
			ereport(ERROR,
					(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
					 errmsg("%s has more than %d columns to read", fc->relname, GNN_SCAN_MAXCOLS),
					 errhint("%s.", fc->choose)));
		ResolveColumn(s, col->scan = s->ncols++, col->name, "feature", (Oid[]) {col->type, InvalidOid}, "");
		if (col->keep)
			EncCheck(gnn_enc_from_json_rows(col->keep, &col->enc, &err), &err, fc, col);
		else
			EncCheck(gnn_enc_create(col->kind, max_categories, &col->enc, &err), &err, fc, col);
	}
}

/* One scanned row's feature values into the encoders. */
void
GnnFeatColsFeed(GnnFeatCols *fc, GnnScan *s, const Datum *v, const bool *nl)
{
	for (int c = 0; c < fc->ncols; c++)
	{
		GnnFeatCol *col = &fc->cols[c];
		gnn_error	err;
		gnn_status	st = GNN_OK;
		bool		isnull;
		Datum		d;

		if (col->skipped)
			continue;
		isnull = nl[col->scan];
		d = v[col->scan];
		switch (col->kind)
		{
			case GNN_ENC_NUMERIC:
				{
					double		x = isnull ? 0 : NumDatum(d, col->type);

					/* a numeric beyond double precision (or a float infinity), named with its column */
					if (!isnull && !isfinite(x))
					{
						char	   *txt = TextDatum(d, col->type);

						if (strlen(txt) > 40)
							txt = psprintf("%.20s... (%d characters)", txt, (int) strlen(txt));
						ereport(ERROR,
								(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
								 errmsg("column \"%s\" of %s has a value out of the range of double precision",
										col->name, fc->relname),
								 errdetail("In %s: %s.", ScanRowDesc(s), txt),
								 errhint("Scale the column (a view can divide it), %s, or fix the value.",
										 fc->leave_out_lower)));
					}
					st = gnn_enc_add_num(col->enc, x, isnull, &err);
					break;
				}
			case GNN_ENC_BOOL:
				st = gnn_enc_add_num(col->enc, isnull ? 0 : (DatumGetBool(d) ? 1 : 0), isnull, &err);
				break;
			case GNN_ENC_TIME:
				/* +-infinity is no point in time to standardise: missing, as a NULL is */
				if (!isnull && TimeInfinite(d, col->type))
					isnull = true;
				st = gnn_enc_add_num(col->enc, isnull ? 0 : (double) GnnTimeValue(d, col->type) / 1e6, isnull, &err);
				break;
			case GNN_ENC_CATEGORY:
				{
					char	   *x = isnull ? NULL : TextDatum(d, col->type);

					st = gnn_enc_add_text(col->enc, x, x ? strlen(x) : 0, isnull, &err);
					break;
				}
			case GNN_ENC_ARRAY:
				if (isnull)
					st = gnn_enc_add_array(col->enc, NULL, 0, true, &err);
				else
				{
					ArrayType  *arr = DatumGetArrayTypeP(d);
					int			nel = ArrayGetNItems(ARR_NDIM(arr), ARR_DIMS(arr));
					float	   *f = palloc(sizeof(float) * Max(nel, 1));

					if (ARR_HASNULL(arr))
						ereport(ERROR,
								(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
								 errmsg("array column \"%s\" of %s has a NULL element", col->name, fc->relname),
								 errdetail("In %s.", ScanRowDesc(s)),
								 errhint("Use a NULL array for a missing value, not NULL elements.")));
					for (int i = 0; i < nel; i++)
						f[i] = ARR_ELEMTYPE(arr) == FLOAT4OID ?
							((float *) ARR_DATA_PTR(arr))[i] : (float) ((double *) ARR_DATA_PTR(arr))[i];
					st = gnn_enc_add_array(col->enc, f, nel, false, &err);
				}
				break;
		}
		if (st != GNN_OK)
			ereport(ERROR,
					(errcode(st == GNN_ERR_NOMEM ? ERRCODE_OUT_OF_MEMORY : ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("column \"%s\" of %s: %s", col->name, fc->relname, err.msg),
					 errdetail("In %s.", ScanRowDesc(s)),
					 errhint("%s, or fix the value.", fc->leave_out)));
	}
}

/*
 * The encoders finished (statistics, categories), each column's slice of
 * the row laid out; returns the width of all of them.  Text whose most
 * frequent values cover under half of the rows is a name or an identifier,
 * not a category: one-hot slots would say little.  Skipped, unless chosen
 * by name or kept from the replaced graph.
 */
int32
GnnFeatColsFinish(GnnFeatCols *fc, int32 max_categories)
{
	int32		w = 0;

	for (int c = 0; c < fc->ncols; c++)
	{
		GnnFeatCol *col = &fc->cols[c];
		gnn_error	err;

		if (col->skipped)
			continue;
		EncCheck(gnn_enc_finish(col->enc, &err), &err, fc, col);
		if (col->kind == GNN_ENC_CATEGORY && !col->chosen && !col->keep &&
			gnn_enc_distinct(col->enc) > max_categories && gnn_enc_coverage(col->enc) < 0.5)
		{
			col->skipped = psprintf("%lld distinct values; the %d most frequent cover %.0f%% of the rows",
									(long long) gnn_enc_distinct(col->enc), max_categories,
									100.0 * gnn_enc_coverage(col->enc));
			col->width = 0;
			continue;
		}
		if ((int64) w + gnn_enc_width(col->enc) >= INT32_MAX)
			ereport(ERROR,
					(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
					 errmsg("the features of %s would have more than %d columns", fc->relname, INT32_MAX - 1)));
		col->offset = w;
		col->width = gnn_enc_width(col->enc);
		w += col->width;
	}
	fc->width = w;
	return w;
}

/* The encoders of the columns that are features, in slice order (palloc'd; *n of them). */
gnn_col_encoder **
GnnFeatColsEncoders(GnnFeatCols *fc, int *n)
{
	gnn_col_encoder **encs = palloc(sizeof(gnn_col_encoder *) * (fc->ncols + 1));

	*n = 0;
	for (int c = 0; c < fc->ncols; c++)
		if (!fc->cols[c].skipped)
			encs[(*n)++] = fc->cols[c].enc;
	return encs;
}

/* "key":"val" (val NULL: null), for the graph's meta */
void
GnnJsonKey(StringInfo b, const char *key, const char *val)
{
	escape_json(b, key);
	appendStringInfoChar(b, ':');
	if (val)
		escape_json(b, val);
	else
		appendStringInfoString(b, "null");
}

/* Each column as gnn.graph_columns shows it, comma-separated JSON objects, offsets from base. */
void
GnnFeatColsDescribe(GnnFeatCols *fc, StringInfo meta, int32 base)
{
	for (int c = 0; c < fc->ncols; c++)
	{
		GnnFeatCol *col = &fc->cols[c];

		appendStringInfo(meta, "%s{", c ? "," : "");
		GnnJsonKey(meta, "column", col->name);
		appendStringInfoChar(meta, ',');
		GnnJsonKey(meta, "type", format_type_be(col->type));
		if (col->skipped)
		{
			appendStringInfoString(meta, ",\"encoding\":\"skipped\",\"detail\":{");
			GnnJsonKey(meta, "reason", col->skipped);
			appendStringInfoString(meta, "},\"offset\":null,\"width\":0}");
		}
		else
		{
			char	   *d = gnn_enc_describe(col->enc);

			appendStringInfo(meta, ",\"encoding\":\"%s\",\"offset\":%d,\"width\":%d,\"detail\":%s}",
							 gnn_enc_kind_name(col->kind), base + col->offset, col->width, d ? d : "null");
			free(d);
		}
	}
}

/* ------------------------------------------------------------------ kept encodings */

static JsonbValue *
JField(JsonbContainer *c, const char *key)
{
	return getKeyJsonValueFromContainer(c, key, strlen(key), NULL);
}

/* The encoded columns of a graph, from its meta (NIL: none, or no such graph). */
List *
GnnOldColumns(const char *graph)
{
	GnnGraphRef ref;
	char	   *meta = NULL;
	Jsonb	   *jb;
	JsonbValue *types;
	JsonbIterator *it;
	JsonbValue	e;
	JsonbIteratorToken tok;
	List	   *out = NIL;

	if (!GnnGraphExists(graph))
		return NIL;
	GnnGraphAcquireView(graph, &ref);
	if (ref.g.meta && ref.g.meta_bytes > 0)
		meta = pnstrdup(ref.g.meta, ref.g.meta_bytes);
	GnnGraphRelease(&ref);
	if (!meta)
		return NIL;
	jb = DatumGetJsonbP(DirectFunctionCall1(jsonb_in, CStringGetDatum(meta)));
	if (!(types = JField(&jb->root, "types")) || types->type != jbvBinary || !JsonContainerIsArray(types->val.binary.data))
		return NIL;
	it = JsonbIteratorInit(types->val.binary.data);
	while ((tok = JsonbIteratorNext(&it, &e, true)) != WJB_DONE)
	{
		JsonbValue *nm,
				   *cols;
		JsonbIterator *ci;
		JsonbValue	c;
		JsonbIteratorToken ct;

		if (tok != WJB_ELEM || e.type != jbvBinary)
			continue;
		nm = JField(e.val.binary.data, "name");
		cols = JField(e.val.binary.data, "columns");
		if (!nm || nm->type != jbvString || !cols || cols->type != jbvBinary)
			continue;
		ci = JsonbIteratorInit(cols->val.binary.data);
		while ((ct = JsonbIteratorNext(&ci, &c, true)) != WJB_DONE)
		{
			JsonbValue *cn,
					   *enc,
					   *det;
			GnnOldCol  *o;

			if (ct != WJB_ELEM || c.type != jbvBinary)
				continue;
			cn = JField(c.val.binary.data, "column");
			enc = JField(c.val.binary.data, "encoding");
			det = JField(c.val.binary.data, "detail");
			if (!cn || cn->type != jbvString || !enc || enc->type != jbvString)
				continue;		/* the constant or embedding column */
			o = palloc0(sizeof(GnnOldCol));
			o->type = pnstrdup(nm->val.string.val, nm->val.string.len);
			o->column = pnstrdup(cn->val.string.val, cn->val.string.len);
			o->encoding = pnstrdup(enc->val.string.val, enc->val.string.len);
			if (det && det->type == jbvBinary)
			{
				JsonbValue *why = JField(det->val.binary.data, "reason");

				o->detail = strcmp(o->encoding, "skipped") == 0 ?
					(why && why->type == jbvString ? pnstrdup(why->val.string.val, why->val.string.len) : "skipped before") :
					JsonbToCString(NULL, det->val.binary.data, det->val.binary.len);
			}
			out = lappend(out, o);
		}
	}
	return out;
}

/*
 * Replacing a graph keeps its encodings: every feature column is encoded
 * with the statistics and categories of the load it replaces, and the
 * columns skipped then are skipped now, so a model trained on the old graph
 * reads the new one's rows as it read the old ones.  That needs the same
 * columns of every type (names[t] the type of fcs[t]) with the same
 * encodings; when they differ the features are encoded afresh, with a
 * notice.  Returns whether they were kept.
 */
bool
GnnKeepEncodings(const char *graph, GnnFeatCols *const *fcs, const char *const *names, int ntypes)
{
	List	   *old = GnnOldColumns(graph);
	bool		same = old != NIL;
	ListCell   *lc;
	int			nold = 0,
				nnew = 0;

	for (int t = 0; t < ntypes && same; t++)
		for (int c = 0; c < fcs[t]->ncols && same; c++)
		{
			GnnFeatCol *col = &fcs[t]->cols[c];
			GnnOldCol  *hit = NULL;

			foreach(lc, old)
			{
				GnnOldCol  *o = lfirst(lc);

				if (strcmp(o->type, names[t]) == 0 && strcmp(o->column, col->name) == 0)
					hit = o;
			}
			nnew++;
			if (!hit || (col->skipped && strcmp(hit->encoding, "skipped") != 0) ||
				(!col->skipped && strcmp(hit->encoding, "skipped") != 0 &&
				 (strcmp(hit->encoding, gnn_enc_kind_name(col->kind)) != 0 || !hit->detail)))
				same = false;
		}
	foreach(lc, old)
	{
		GnnOldCol  *o = lfirst(lc);

		for (int t = 0; t < ntypes; t++)
			if (strcmp(o->type, names[t]) == 0)
				nold++;
	}
	if (same && nold == nnew)
	{
		for (int t = 0; t < ntypes; t++)
			for (int c = 0; c < fcs[t]->ncols; c++)
			{
				GnnFeatCol *col = &fcs[t]->cols[c];

				foreach(lc, old)
				{
					GnnOldCol  *o = lfirst(lc);

					if (strcmp(o->type, names[t]) != 0 || strcmp(o->column, col->name) != 0 || col->skipped)
						continue;
					if (strcmp(o->encoding, "skipped") == 0)
						col->skipped = o->detail;
					else
						col->keep = o->detail;
				}
			}
		return true;
	}
	if (old != NIL)
		ereport(NOTICE,
				(errmsg("the feature columns of graph \"%s\" changed since its last load: they are encoded afresh", graph),
				 errhint("Models trained on the previous graph read features by position: train them again.")));
	return false;
}
