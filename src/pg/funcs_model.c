/*
 * funcs_model.c: using trained models from SQL: embeddings and predictions,
 * computed in the calling backend on the CPU (GPU work belongs to workers).
 *
 * A model row is read as the caller (row-level security: only its owner or
 * a superuser sees it), deserialised with full validation, and run over the
 * graph it names as that graph is loaded now: reload the graph and the
 * inductive models (GraphSAGE, GAT) embed the new nodes too.  The result of
 * one full inference is cached per backend, keyed by model version and graph
 * generation, so point lookups (gnn.embedding, gnn.similar) cost O(dim) and
 * O(n dim) after the first call.
 */
#include "gnn_pg.h"

#include <math.h>

#include "access/htup_details.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/regproc.h"
#include "utils/tuplestore.h"
#include "utils/varlena.h"

#include "backend.h"
#include "serialize.h"
#include "train.h"

PG_FUNCTION_INFO_V1(gnn_embedding_rows);
PG_FUNCTION_INFO_V1(gnn_embed);
PG_FUNCTION_INFO_V1(gnn_predict);
PG_FUNCTION_INFO_V1(gnn_embedding);
PG_FUNCTION_INFO_V1(gnn_similar);

/* ------------------------------------------------------------------ the cache */

typedef enum
{
	OUT_EMBED, OUT_PROBS
} OutKind;

typedef struct InferCache
{
	bool		valid;
	char		model[NAMEDATALEN];
	int32		version;
	int64		model_id;		/* gnn.models.id: never reused, unlike (name, version) */
	TransactionId model_xmin;	/* and the row version it was read from */
	OutKind		kind;
	int32		layer;
	char		graph[NAMEDATALEN];
	uint64		generation;
	Oid			user;			/* the role it was computed for */
	int64		rows;
	int32		cols;
	int64	   *ids;			/* node ids, ascending */
	float	   *out;			/* rows x cols */
	float	   *norms;			/* row norms, for cosine similarity */
	char	   *class_names;	/* C strings back to back, or NULL */
	int32		nclasses;
	int			refs;			/* streaming SRFs reading it: not to be evicted */
} InferCache;

#define CACHE_ENTRIES 4
static InferCache cache[CACHE_ENTRIES];
static int	cache_next = 0;

static void
CacheFree(InferCache *c)
{
	if (c->ids)
		pfree(c->ids);
	if (c->out)
		pfree(c->out);
	if (c->norms)
		pfree(c->norms);
	if (c->class_names)
		pfree(c->class_names);
	memset(c, 0, sizeof(*c));
}

typedef struct ModelRow
{
	char		name[NAMEDATALEN];
	int32		version;
	int64		id;
	TransactionId xmin;
	char		graph[NAMEDATALEN];
	char		task[32];
	bool		row_normalise;
	bytea	   *weights;
	char	   *class_names;	/* C strings back to back (TopMemoryContext), or NULL */
	int32		nclasses;
} ModelRow;

/*
 * The caller's model: latest version unless one is given (version 0: not
 * given).  Model names are per owner: the name is looked up among the
 * calling role's models only (a superuser's too), so no other role can
 * steer which row it finds.
 */
static void
ReadModel(const char *name, int32 version, bool with_weights, ModelRow *mr)
{
	Oid			types[3] = {TEXTOID, INT4OID, OIDOID};
	Datum		values[3];
	char		nulls[4] = "   ";
	bool		isnull;
	HeapTuple	tup;
	TupleDesc	desc;
	Datum		d;

	if (strlen(name) >= NAMEDATALEN)
		ereport(ERROR, (errcode(ERRCODE_NAME_TOO_LONG), errmsg("model name \"%s\" is too long", name)));
	values[0] = CStringGetTextDatum(name);
	values[1] = Int32GetDatum(version);
	nulls[1] = version > 0 ? ' ' : 'n';
	values[2] = ObjectIdGetDatum(GetUserId());
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (SPI_execute_with_args(with_weights ?
							  "SELECT version, graph, coalesce((params->>'row_normalise')::boolean, true), id, "
							  "xmin::text::bigint, task, classes, weights "
							  "FROM gnn.models WHERE owner = $3::oid::regrole AND name = $1 "
							  "AND ($2::int IS NULL OR version = $2::int) ORDER BY version DESC LIMIT 1" :
							  "SELECT version, graph, coalesce((params->>'row_normalise')::boolean, true), id, "
							  "xmin::text::bigint, task, classes, NULL::bytea "
							  "FROM gnn.models WHERE owner = $3::oid::regrole AND name = $1 "
							  "AND ($2::int IS NULL OR version = $2::int) ORDER BY version DESC LIMIT 1",
							  3, types, values, nulls, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read gnn.models");
	if (SPI_processed == 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 version > 0 ? errmsg("model \"%s\" version %d does not exist", name, version) :
				 errmsg("model \"%s\" does not exist", name),
				 errhint("gnn.models lists the models you own; gnn.train() makes one.")));
	tup = SPI_tuptable->vals[0];
	desc = SPI_tuptable->tupdesc;
	strlcpy(mr->name, name, sizeof(mr->name));
	mr->version = DatumGetInt32(SPI_getbinval(tup, desc, 1, &isnull));
	strlcpy(mr->graph, TextDatumGetCString(SPI_getbinval(tup, desc, 2, &isnull)), sizeof(mr->graph));
	mr->row_normalise = DatumGetBool(SPI_getbinval(tup, desc, 3, &isnull));
	mr->id = DatumGetInt64(SPI_getbinval(tup, desc, 4, &isnull));
	mr->xmin = (TransactionId) DatumGetInt64(SPI_getbinval(tup, desc, 5, &isnull));
	strlcpy(mr->task, TextDatumGetCString(SPI_getbinval(tup, desc, 6, &isnull)), sizeof(mr->task));
	mr->class_names = NULL;
	mr->nclasses = 0;
	d = SPI_getbinval(tup, desc, 7, &isnull);
	if (!isnull)
	{
		ArrayType  *a = DatumGetArrayTypeP(d);
		Datum	   *el;
		bool	   *nl;
		int			n;
		StringInfoData buf;

		deconstruct_array(a, TEXTOID, -1, false, TYPALIGN_INT, &el, &nl, &n);
		initStringInfo(&buf);
		for (int i = 0; i < n; i++)
		{
			char	   *t = nl[i] ? "" : TextDatumGetCString(el[i]);

			appendBinaryStringInfo(&buf, t, strlen(t) + 1);
		}
		mr->class_names = MemoryContextAlloc(TopMemoryContext, Max(buf.len, 1));
		memcpy(mr->class_names, buf.data, buf.len);
		mr->nclasses = n;
	}
	mr->weights = NULL;
	if (with_weights)
	{
		Datum		w = SPI_getbinval(tup, desc, 8, &isnull);

		mr->weights = (bytea *) SPI_datumTransfer(PointerGetDatum(PG_DETOAST_DATUM_COPY(w)), false, -1);
	}
	SPI_finish();
}

/* version => : NULL is the latest; anything else is checked */
static int32
VersionArg(FunctionCallInfo fcinfo, int argno)
{
	if (PG_ARGISNULL(argno))
		return 0;
	GnnCheckVersion(PG_GETARG_INT32(argno));
	return PG_GETARG_INT32(argno);
}

/*
 * Embeddings (layer >= 0, or -1 for the default: the last hidden layer) or
 * class probabilities of every node, from the cache or computed now.
 */
static InferCache *
Infer(const char *model, int32 version, OutKind kind, int32 layer)
{
	ModelRow	mr;
	GnnGraphRef ref;
	InferCache *c;
	gnn_backend *be = NULL;
	gnn_model  *m = NULL;
	gnn_error	err;
	gnn_status	st;
	int			layers;

	uint64		generation;

	/*
	 * The model row is read every time: a new version, or a dropped one,
	 * shows at once.  The graph is acquired even on a cache hit: that pins the
	 * version this statement sees, so every call in one statement answers
	 * from the same version of the graph.
	 */
	ReadModel(model, version, false, &mr);
	if (mr.class_names)
		pfree(mr.class_names);
	if (kind == OUT_PROBS && strcmp(mr.task, "node_classification") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("model \"%s\" was trained for %s and predicts no classes", mr.name, mr.task),
				 errhint("Use gnn.embedding(), gnn.similar() or gnn.embed() with a link-prediction model: "
						 "its embeddings' dot products score links.")));
	GnnGraphAcquire(mr.graph, &ref);
	generation = ref.entry.generation;
	for (int i = 0; i < CACHE_ENTRIES; i++)
	{
		c = &cache[i];
		if (c->valid && c->model_id == mr.id && c->model_xmin == mr.xmin &&
			strcmp(c->model, mr.name) == 0 && c->version == mr.version && c->kind == kind &&
			(kind == OUT_PROBS || c->layer == layer) && strcmp(c->graph, mr.graph) == 0 &&
			c->generation == generation && c->user == GetUserId())
		{
			GnnGraphRelease(&ref);
			return c;
		}
	}

	ReadModel(model, mr.version, true, &mr);
	c = NULL;
	for (int i = 0; i < CACHE_ENTRIES && c == NULL; i++)
	{
		InferCache *cand = &cache[(cache_next + i) % CACHE_ENTRIES];

		if (cand->refs == 0)
			c = cand;
	}
	if (c == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("too many model results are being read at once in this session")));
	cache_next = (int) (c - cache + 1) % CACHE_ENTRIES;
	CacheFree(c);

	GnnCoreThreadsInit();
	PG_TRY();
	{
		int32		cols;
		int			want;

		if (gnn_backend_cpu_create(gnn_threads, &be, &err) != GNN_OK)
			GnnReportCoreError("could not create the CPU backend", &err);
		st = gnn_model_deserialize(be, VARDATA_ANY(mr.weights), VARSIZE_ANY_EXHDR(mr.weights), &m, NULL, &err);
		if (st != GNN_OK)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("model \"%s\" version %d cannot be read: %s", mr.name, mr.version, err.msg),
					 errhint("Retrain it with gnn.train().")));
		layers = gnn_model_config_of(m)->layers;
		if (gnn_model_config_of(m)->in_dim != ref.g.feat_dim)
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("model \"%s\" takes %d features, but graph \"%s\" has %d",
							mr.name, gnn_model_config_of(m)->in_dim, mr.graph, ref.g.feat_dim),
					 errhint("Reload the graph with the features the model was trained on.")));
		if (kind == OUT_PROBS)
			want = -1;
		else
		{
			/*
			 * Layers are numbered 0 to layers-1; the last is the output layer
			 * (its raw scores, before softmax).  The default embedding is the
			 * last hidden layer of a classifier, and the output of a
			 * link-prediction model (what its training scores with dot
			 * products) or of a 1-layer model (which has no hidden layer).
			 */
			bool		out_default = layers == 1 || strcmp(mr.task, "node_classification") != 0;

			want = layer >= 0 ? layer : (out_default ? layers - 1 : layers - 2);
			if (want >= layers || layer < -1)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("model \"%s\" has %d layer%s; layer must be between 0 and %d", mr.name, layers,
								layers == 1 ? "" : "s", layers - 1),
						 errdetail("Layer %d is the output layer (raw scores before softmax); the default is %s.",
								   layers - 1, out_default ? "the output layer" : "the last hidden layer"),
						 errhint("Omit layer for the default.")));
		}
		cols = want < 0 ? gnn_model_config_of(m)->out_dim : gnn_model_layer_dim(m, want);
		c->rows = ref.g.num_nodes;
		c->cols = cols;
		c->out = MemoryContextAllocHuge(TopMemoryContext, sizeof(float) * (Size) c->rows * cols);
		c->ids = MemoryContextAlloc(TopMemoryContext, sizeof(int64) * Max(c->rows, 1));
		memcpy(c->ids, ref.g.ids, sizeof(int64) * c->rows);
		st = gnn_model_infer(m, &ref.g, mr.row_normalise, want, kind == OUT_PROBS, c->out, &err);
		if (st != GNN_OK)
			GnnReportCoreError(psprintf("inference with model \"%s\" failed", mr.name), &err);
		c->norms = MemoryContextAlloc(TopMemoryContext, sizeof(float) * Max(c->rows, 1));
		for (int64 i = 0; i < c->rows; i++)
		{
			double		s = 0;

			for (int j = 0; j < cols; j++)
				s += (double) c->out[i * cols + j] * c->out[i * cols + j];
			c->norms[i] = (float) sqrt(s);
		}
		/* the class names the model was trained with, never the graph's current ones */
		c->class_names = mr.class_names;
		c->nclasses = mr.nclasses;
		mr.class_names = NULL;
		strlcpy(c->model, mr.name, sizeof(c->model));
		c->version = mr.version;
		c->model_id = mr.id;
		c->model_xmin = mr.xmin;
		c->kind = kind;
		c->layer = layer;
		strlcpy(c->graph, mr.graph, sizeof(c->graph));
		c->generation = ref.entry.generation;
		c->user = GetUserId();
		c->valid = true;
	}
	PG_FINALLY();
	{
		if (mr.class_names)
			pfree(mr.class_names);
		if (m)
			gnn_model_free(m);
		gnn_backend_destroy(be);
		GnnGraphRelease(&ref);
		if (!c->valid)
			CacheFree(c);
	}
	PG_END_TRY();
	return c;
}

static int64
FindRow(InferCache *c, int64 id)
{
	int64		lo = 0,
				hi = c->rows;

	while (lo < hi)
	{
		int64		mid = lo + (hi - lo) / 2;

		if (c->ids[mid] < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return (lo < c->rows && c->ids[lo] == id) ? lo : -1;
}

/* A real[] of one row, built in place (one allocation, one copy). */
static ArrayType *
RowArray(InferCache *c, int64 row)
{
	Size		bytes = ARR_OVERHEAD_NONULLS(1) + sizeof(float4) * (Size) c->cols;
	ArrayType  *a = palloc0(bytes);

	SET_VARSIZE(a, bytes);
	a->ndim = 1;
	a->dataoffset = 0;
	a->elemtype = FLOAT4OID;
	ARR_DIMS(a)[0] = c->cols;
	ARR_LBOUND(a)[0] = 1;
	memcpy(ARR_DATA_PTR(a), c->out + row * c->cols, sizeof(float4) * (Size) c->cols);
	return a;
}

static const char *
ClassName(InferCache *c, int k)
{
	const char *p = c->class_names;

	if (!p || k < 0 || k >= c->nclasses)
		return NULL;
	for (int i = 0; i < k; i++)
		p += strlen(p) + 1;
	return p;
}

static char *
ModelArg(FunctionCallInfo fcinfo)
{
	if (PG_ARGISNULL(0))
		ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("model must not be NULL")));
	return text_to_cstring(PG_GETARG_TEXT_PP(0));
}

static void
UnpinCache(void *arg)
{
	((InferCache *) arg)->refs--;
}

/*
 * gnn._embedding_rows(model, layer, version) -> (id, embedding): what
 * gnn.embed inserts.  Streams rows from the pinned cache entry, one per
 * call, so a large graph never spills a tuplestore; the pin is released when
 * the call's memory goes, at the end of the scan or on error.
 */
Datum
gnn_embedding_rows(PG_FUNCTION_ARGS)
{
	FuncCallContext *fctx;
	InferCache *c;

	if (SRF_IS_FIRSTCALL())
	{
		MemoryContext old;
		TupleDesc	desc;
		MemoryContextCallback *cb;

		GnnRequirePreload();
		fctx = SRF_FIRSTCALL_INIT();
		c = Infer(ModelArg(fcinfo), VersionArg(fcinfo, 2), OUT_EMBED,
				  PG_ARGISNULL(1) ? -1 : PG_GETARG_INT32(1));
		old = MemoryContextSwitchTo(fctx->multi_call_memory_ctx);
		if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
			elog(ERROR, "return type must be a row type");
		fctx->tuple_desc = BlessTupleDesc(desc);
		fctx->user_fctx = c;
		fctx->max_calls = c->rows;
		cb = palloc(sizeof(*cb));
		cb->func = UnpinCache;
		cb->arg = c;
		c->refs++;
		MemoryContextRegisterResetCallback(fctx->multi_call_memory_ctx, cb);
		MemoryContextSwitchTo(old);
	}
	fctx = SRF_PERCALL_SETUP();
	c = fctx->user_fctx;
	if (fctx->call_cntr < fctx->max_calls)
	{
		Datum		v[2];
		bool		n[2] = {false, false};
		int64		i = (int64) fctx->call_cntr;

		v[0] = Int64GetDatum(c->ids[i]);
		v[1] = PointerGetDatum(RowArray(c, i));
		SRF_RETURN_NEXT(fctx, HeapTupleGetDatum(heap_form_tuple(fctx->tuple_desc, v, n)));
	}
	SRF_RETURN_DONE(fctx);
}

/*
 * What gnn.embed may write: a real[] column (new, or existing of that type)
 * that is none of the columns the graph was loaded from, or a table of
 * (id, embedding real[]) rows that is not the graph's node table (its rows
 * are replaced).  Anything else would destroy data: refused.
 */
static void
CheckEmbedTarget(InferCache *c, Oid relid, const char *into, const char *column, const char *idcol)
{
	GnnGraphRef ref;
	GnnGraphEntry e;

	if (!OidIsValid(relid))
		return;					/* a new table (or the error for a missing one, below) */
	GnnGraphAcquire(c->graph, &ref);
	e = ref.entry;
	GnnGraphRelease(&ref);
	if (column != NULL)
	{
		AttrNumber	att = get_attnum(relid, column);
		AttrNumber	idatt = get_attnum(relid, idcol);

		if (relid == e.nodes_rel &&
			(strcmp(column, e.id_col) == 0 || strcmp(column, e.feat_col) == 0 ||
			 strcmp(column, e.label_col) == 0 || strcmp(column, e.split_col) == 0))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("column \"%s\" of %s is one graph \"%s\" was loaded from", column, into, c->graph),
					 errdetail("gnn.embed() would overwrite the graph's own ids, features, labels or split."),
					 errhint("Name a new column, e.g. \"column\" => '%s_embedding'.", c->model)));
		if (att != InvalidAttrNumber && get_atttype(relid, att) != FLOAT4ARRAYOID)
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("column \"%s\" of %s has type %s; embeddings go into a real[] column",
							column, into, format_type_be(get_atttype(relid, att))),
					 errhint("Name a new column (it is added as real[]) or an existing real[] one.")));
		if (idatt == InvalidAttrNumber || idatt < 0)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_COLUMN),
					 errmsg("column \"%s\" does not exist in %s", idcol, into),
					 errhint("Pass id_column => naming the node id column of %s.", into)));
		return;
	}
	if (relid == e.nodes_rel)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s is the node table of graph \"%s\"; gnn.embed() would replace its rows", into, c->graph),
				 errhint("Write into a new table, or add a column to this one with \"column\" => 'embedding'.")));
	{
		AttrNumber	idatt = get_attnum(relid, "id");
		AttrNumber	eatt = get_attnum(relid, "embedding");

		if (idatt == InvalidAttrNumber || eatt == InvalidAttrNumber ||
			get_atttype(relid, eatt) != FLOAT4ARRAYOID)
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("table %s exists but is not an embedding table (id, embedding real[])", into),
					 errdetail("gnn.embed() replaces the rows of such a table; it leaves other tables alone."),
					 errhint("Name a new table, or use \"column\" => to add a column to a node table.")));
	}
}

/*
 * gnn.embed(model, into, layer, column, id_column, version): write every
 * node's embedding into a table, in the caller's transaction.
 */
Datum
gnn_embed(PG_FUNCTION_ARGS)
{
	char	   *model = ModelArg(fcinfo);
	char	   *into;
	char	   *column = PG_ARGISNULL(3) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(3));
	char	   *idcol = PG_ARGISNULL(4) ? "id" : text_to_cstring(PG_GETARG_TEXT_PP(4));
	int32		layer = PG_ARGISNULL(2) ? -1 : PG_GETARG_INT32(2);
	int32		version = VersionArg(fcinfo, 5);
	List	   *names;
	RangeVar   *rv;
	Oid			relid;
	char	   *qname;
	StringInfoData q;
	Oid			types[3] = {TEXTOID, INT4OID, INT4OID};
	Datum		values[3];
	char		nulls[4] = "   ";
	int64		written;
	InferCache *c;

	GnnRequirePreload();
	if (PG_ARGISNULL(1))
		ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("into must name a table")));
	into = text_to_cstring(PG_GETARG_TEXT_PP(1));
	/* compute first: a bad model or layer fails before anything is written */
	c = Infer(model, version, OUT_EMBED, layer);

	names = stringToQualifiedNameList(into);
	rv = makeRangeVarFromNameList(names);
	relid = RangeVarGetRelid(rv, NoLock, true);
	CheckEmbedTarget(c, relid, into, column, idcol);
	values[0] = CStringGetTextDatum(model);
	values[1] = Int32GetDatum(layer);
	nulls[1] = layer >= 0 ? ' ' : 'n';
	values[2] = Int32GetDatum(version);
	nulls[2] = version > 0 ? ' ' : 'n';
	initStringInfo(&q);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (column == NULL)
	{
		if (!OidIsValid(relid))
		{
			qname = rv->schemaname ? quote_qualified_identifier(rv->schemaname, rv->relname) :
				(char *) quote_identifier(rv->relname);
			appendStringInfo(&q, "CREATE TABLE %s (id bigint PRIMARY KEY, embedding real[])", qname);
			if (SPI_execute(q.data, false, 0) != SPI_OK_UTILITY)
				elog(ERROR, "could not create %s", qname);
		}
		else
		{
			/* replace the rows: readers see the old ones until this transaction commits */
			qname = quote_qualified_identifier(get_namespace_name(get_rel_namespace(relid)), get_rel_name(relid));
			appendStringInfo(&q, "DELETE FROM %s", qname);
			if (SPI_execute(q.data, false, 0) < 0)
				elog(ERROR, "could not empty %s", qname);
		}
		resetStringInfo(&q);
		appendStringInfo(&q, "INSERT INTO %s (id, embedding) SELECT id, embedding FROM gnn._embedding_rows($1, $2, $3)",
						 qname);
	}
	else
	{
		if (!OidIsValid(relid))
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_TABLE),
					 errmsg("table \"%s\" does not exist", into),
					 errhint("With column => , into names the node table that gets the column.")));
		qname = quote_qualified_identifier(get_namespace_name(get_rel_namespace(relid)), get_rel_name(relid));
		appendStringInfo(&q, "ALTER TABLE %s ADD COLUMN IF NOT EXISTS %s real[]", qname, quote_identifier(column));
		if (SPI_execute(q.data, false, 0) != SPI_OK_UTILITY)
			elog(ERROR, "could not add column %s", column);
		resetStringInfo(&q);
		appendStringInfo(&q, "UPDATE %s t SET %s = e.embedding FROM gnn._embedding_rows($1, $2, $3) e "
						 "WHERE t.%s = e.id", qname, quote_identifier(column), quote_identifier(idcol));
	}
	if (SPI_execute_with_args(q.data, 3, types, values, nulls, false, 0) < 0)
		elog(ERROR, "could not write embeddings into %s", qname);
	written = (int64) SPI_processed;
	SPI_finish();
	PG_RETURN_INT64(written);
}

/* gnn.predict(model, nodes, version) -> (id, label, score, class) */
Datum
gnn_predict(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	InferCache *c;
	int64	   *want = NULL;
	int			nwant = -1;

	GnnRequirePreload();
	c = Infer(ModelArg(fcinfo), VersionArg(fcinfo, 2), OUT_PROBS, -1);
	if (!PG_ARGISNULL(1))
	{
		ArrayType  *a = PG_GETARG_ARRAYTYPE_P(1);
		Datum	   *d;
		bool	   *n;

		deconstruct_array(a, INT8OID, 8, true, TYPALIGN_DOUBLE, &d, &n, &nwant);
		want = palloc(sizeof(int64) * Max(nwant, 1));
		for (int i = 0; i < nwant; i++)
		{
			if (n[i])
				ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("node ids must not be NULL")));
			want[i] = DatumGetInt64(d[i]);
		}
	}
	InitMaterializedSRF(fcinfo, 0);
	for (int64 k = 0; k < (nwant >= 0 ? nwant : c->rows); k++)
	{
		int64		row = nwant >= 0 ? FindRow(c, want[k]) : k;
		Datum		v[4];
		bool		n[4] = {false, false, false, false};
		int			best = 0;
		const char *cls;

		if (row < 0)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_OBJECT),
					 errmsg("node %lld is not in graph \"%s\"", (long long) want[k], c->graph)));
		for (int j = 1; j < c->cols; j++)
			if (c->out[row * c->cols + j] > c->out[row * c->cols + best])
				best = j;
		cls = ClassName(c, best);
		v[0] = Int64GetDatum(c->ids[row]);
		v[1] = Int32GetDatum(best);
		v[2] = Float4GetDatum(c->out[row * c->cols + best]);
		v[3] = cls ? CStringGetTextDatum(cls) : (Datum) 0;
		n[3] = cls == NULL;
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, v, n);
	}
	return (Datum) 0;
}

/* gnn.embedding(model, node, version) -> real[] */
Datum
gnn_embedding(PG_FUNCTION_ARGS)
{
	InferCache *c;
	int64		row;

	GnnRequirePreload();
	if (PG_ARGISNULL(1))
		PG_RETURN_NULL();
	c = Infer(ModelArg(fcinfo), VersionArg(fcinfo, 2), OUT_EMBED, -1);
	row = FindRow(c, PG_GETARG_INT64(1));
	if (row < 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("node %lld is not in graph \"%s\"", (long long) PG_GETARG_INT64(1), c->graph)));
	PG_RETURN_ARRAYTYPE_P(RowArray(c, row));
}

typedef struct Scored
{
	int64		row;
	float		score;
} Scored;

static int
CompareScored(const void *a, const void *b)
{
	const Scored *x = a,
			   *y = b;

	if (x->score != y->score)
		return x->score > y->score ? -1 : 1;
	return x->row < y->row ? -1 : x->row > y->row;
}

/* gnn.similar(model, node, k, version) -> (id, score): k nearest by cosine similarity */
Datum
gnn_similar(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	InferCache *c;
	int64		row;
	int32		k = PG_ARGISNULL(2) ? 10 : PG_GETARG_INT32(2);
	Scored	   *heap;
	int			nheap = 0;

	GnnRequirePreload();
	if (PG_ARGISNULL(1))
		ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("node must not be NULL")));
	if (k < 1 || k > 100000)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("k must be between 1 and 100000 (got %d)", k)));
	c = Infer(ModelArg(fcinfo), VersionArg(fcinfo, 3), OUT_EMBED, -1);
	row = FindRow(c, PG_GETARG_INT64(1));
	if (row < 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("node %lld is not in graph \"%s\"", (long long) PG_GETARG_INT64(1), c->graph)));
	k = (int32) Min((int64) k, c->rows - 1);
	heap = palloc(sizeof(Scored) * (Max(k, 1) + 1));
	/* keep the k best in a small sorted buffer: k is small beside n */
	for (int64 i = 0; i < c->rows; i++)
	{
		double		dot = 0;
		float		s;
		const float *a = c->out + row * c->cols,
				   *b = c->out + i * c->cols;

		if (i == row)
			continue;
		for (int j = 0; j < c->cols; j++)
			dot += (double) a[j] * b[j];
		s = (c->norms[row] > 0 && c->norms[i] > 0) ? (float) (dot / ((double) c->norms[row] * c->norms[i])) : 0;
		if (nheap < k || s > heap[nheap - 1].score)
		{
			int			p = nheap < k ? nheap++ : nheap - 1;

			while (p > 0 && heap[p - 1].score < s)
			{
				heap[p] = heap[p - 1];
				p--;
			}
			heap[p].row = i;
			heap[p].score = s;
		}
	}
	qsort(heap, nheap, sizeof(Scored), CompareScored);
	InitMaterializedSRF(fcinfo, 0);
	for (int i = 0; i < nheap; i++)
	{
		Datum		v[2];
		bool		n[2] = {false, false};

		v[0] = Int64GetDatum(c->ids[heap[i].row]);
		v[1] = Float4GetDatum(heap[i].score);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, v, n);
	}
	return (Datum) 0;
}
