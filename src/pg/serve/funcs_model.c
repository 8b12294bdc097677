/*
 * funcs_model.c: using trained models from SQL: embeddings and predictions,
 * computed in the calling backend on the CPU (GPU work belongs to workers).
 *
 * A model row is read as the caller (its own models only: names are per
 * role), deserialised with full validation (kept for the session, keyed by
 * the row's id and xmin), and run over the graph it names as that graph is
 * loaded now: reload the graph and the inductive models (GraphSAGE, GAT)
 * embed the new nodes too.
 *
 * Full-graph results are shared by every session (cache.c): computed once per
 * model row and graph version, by the training worker when the job ends or
 * by the first caller.  A few nodes (gnn.embedding, gnn.predict with nodes)
 * missing from the cache are computed exactly on their own neighbourhood
 * instead, in milliseconds, unless that neighbourhood is a large part of the
 * graph: then the full pass runs once and is shared.
 *
 * A model trained with time-aware sampling (metrics.temporal) is answered
 * the way it was trained and evaluated, never from its rows' future: every
 * row on a neighbourhood sampled with the training fan-outs as of the row's
 * own time (or the job's seed_time), or as of one moment for every row
 * (as_of =>), through gnn_model_infer_temporal (infer.h); its shared results
 * are computed that way too, keyed by as_of when one is given.  A model
 * trained without time is answered as it always was.
 */
#include "common/gnn_pg.h"
#include "mb/pg_wchar.h"
#include "common/hashfn.h"
#include "catalog/index.h"

#include <math.h>

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/namespace.h"
#include "catalog/indexing.h"
#include "catalog/pg_extension.h"
#include "catalog/pg_type.h"
#include "commands/extension.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/json.h"
#include "utils/fmgroids.h"
#include "utils/jsonb.h"
#include "utils/syscache.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/regproc.h"
#include "utils/tuplestore.h"
#include "nodes/supportnodes.h"
#include "utils/varlena.h"

#include "nn/backend.h"
#include "nn/serialize.h"
#include "infer/infer.h"
#include "infer/hnsw.h"
#include "infer/topk.h"
#include "nn/safetensors.h"
#include "train/train.h"

PG_FUNCTION_INFO_V1(gnn_embedding_rows);
PG_FUNCTION_INFO_V1(gnn_embed);
PG_FUNCTION_INFO_V1(gnn_predict);
PG_FUNCTION_INFO_V1(gnn_embedding);
PG_FUNCTION_INFO_V1(gnn_similar);
PG_FUNCTION_INFO_V1(gnn_cache_drop);
PG_FUNCTION_INFO_V1(gnn_score);
PG_FUNCTION_INFO_V1(gnn_score_pair);
PG_FUNCTION_INFO_V1(gnn_recommend);
PG_FUNCTION_INFO_V1(gnn_export_model);
PG_FUNCTION_INFO_V1(gnn_import_model);

typedef enum
{
	OUT_EMBED = GNN_RESULT_EMBED,
	OUT_PROBS = GNN_RESULT_PROBS
} OutKind;

/* ------------------------------------------------------------------ model rows */

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
	char	   *class_names;	/* C strings back to back (caller's memory), or NULL */
	int32		nclasses;
	bool		mlp;			/* trained and run without the graph's edges */
	/* trained with time-aware sampling (metrics.temporal): how it sampled (params) */
	bool		temporal;
	int32		nfanouts;
	int32		fanouts[GNN_MAX_FANOUTS];
	int32		ntype_fanouts;
	char		tf_names[GNN_MAX_TYPE_FANOUTS][NAMEDATALEN];
	int32		tf_lists[GNN_MAX_TYPE_FANOUTS][GNN_MAX_FANOUTS];
	int32		temporal_strategy;	/* 0 uniform, 1 last */
	bool		streams_by_id;	/* its draws keyed by node id: params.streams node, or trained over servers */
	int32		batch_size;
	bool		trained_as_of;	/* options.seed_time: every seed sampled at one time */
	TimestampTz trained_as_of_time;
	char		edge_type[NAMEDATALEN]; /* link prediction through one relation ('' = none) */
	/* the blob's header (its first bytes only): the architecture and training seed */
	gnn_model_config cfg;
	uint64		seed;
} ModelRow;

/* an int[] column of a model row into out (up to max); returns the count */
static int
IntArrayColumn(HeapTuple tup, TupleDesc desc, int col, int32 *out, int max)
{
	bool		isnull;
	Datum		d = SPI_getbinval(tup, desc, col, &isnull);
	Datum	   *el;
	bool	   *nl;
	int			n;

	if (isnull)
		return 0;
	deconstruct_array(DatumGetArrayTypeP(d), INT4OID, 4, true, TYPALIGN_INT, &el, &nl, &n);
	for (int i = 0; i < n && i < max; i++)
		out[i] = nl[i] ? 0 : DatumGetInt32(el[i]);
	return Min(n, max);
}

/*
 * A time-aware model's sampling, as the job recorded it in params: its
 * fan-outs, typed fan-outs by name (flattened in name order, one list of
 * nfanouts per name), strategy, batch size and seed_time.  Columns from
 * col on, as ReadModel selects them.
 */
static void
ReadTemporal(HeapTuple tup, TupleDesc desc, int col, ModelRow *mr)
{
	bool		isnull;
	Datum		d;
	int32		flat[GNN_MAX_TYPE_FANOUTS * GNN_MAX_FANOUTS];
	int			nflat;

	mr->nfanouts = IntArrayColumn(tup, desc, col, mr->fanouts, GNN_MAX_FANOUTS);
	d = SPI_getbinval(tup, desc, col + 1, &isnull);
	mr->ntype_fanouts = 0;
	if (!isnull)
	{
		Datum	   *el;
		bool	   *nl;
		int			n;

		deconstruct_array(DatumGetArrayTypeP(d), TEXTOID, -1, false, TYPALIGN_INT, &el, &nl, &n);
		for (int i = 0; i < n && i < GNN_MAX_TYPE_FANOUTS; i++)
			strlcpy(mr->tf_names[mr->ntype_fanouts++], nl[i] ? "" : TextDatumGetCString(el[i]), NAMEDATALEN);
	}
	nflat = IntArrayColumn(tup, desc, col + 2, flat, GNN_MAX_TYPE_FANOUTS * GNN_MAX_FANOUTS);
	if (nflat != mr->ntype_fanouts * mr->nfanouts)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("model \"%s\" version %d records typed fan-outs that do not match its %d fan-outs",
						mr->name, mr->version, mr->nfanouts),
				 errhint("Retrain it with gnn.train().")));
	for (int i = 0; i < mr->ntype_fanouts; i++)
		memcpy(mr->tf_lists[i], flat + i * mr->nfanouts, sizeof(int32) * mr->nfanouts);
	d = SPI_getbinval(tup, desc, col + 3, &isnull);
	mr->temporal_strategy = !isnull && strcmp(TextDatumGetCString(d), "last") == 0 ? 1 : 0;
	d = SPI_getbinval(tup, desc, col + 4, &isnull);
	mr->batch_size = isnull ? 512 : DatumGetInt32(d);
	d = SPI_getbinval(tup, desc, col + 5, &isnull);
	mr->trained_as_of = !isnull;
	mr->trained_as_of_time = isnull ? 0 : DatumGetTimestampTz(d);
	if (mr->nfanouts < 1 || mr->batch_size < 1)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("model \"%s\" version %d was trained with time-aware sampling but records no fan-outs",
						mr->name, mr->version),
				 errhint("Retrain it with gnn.train().")));
}

/*
 * The caller's model: latest version unless one is given (version 0: not
 * given).  Model names are per owner: the name is looked up among the
 * calling role's models only (a superuser's too), so no other role can
 * steer which row it finds.
 */
/* params->>key of a model row's jsonb (text, or a boolean or number as text), or NULL */
static char *
JsonbKeyText(Jsonb *jb, const char *key)
{
	JsonbValue	k;
	JsonbValue *v;

	if (jb == NULL || !JB_ROOT_IS_OBJECT(jb))
		return NULL;
	k.type = jbvString;
	k.val.string.val = (char *) key;
	k.val.string.len = (int) strlen(key);
	v = findJsonbValueFromContainer(&jb->root, JB_FOBJECT, &k);
	if (v == NULL)
		return NULL;
	switch (v->type)
	{
		case jbvString:
			return pnstrdup(v->val.string.val, v->val.string.len);
		case jbvBool:
			return pstrdup(v->val.boolean ? "true" : "false");
		case jbvNumeric:
			return DatumGetCString(DirectFunctionCall1(numeric_out, NumericGetDatum(v->val.numeric)));
		default:
			return NULL;
	}
}

/* t::boolean, or dflt when t is NULL; a value that is no boolean is an error, as the cast's */
static bool
TextBool(const char *t, bool dflt)
{
	bool		b;

	if (t == NULL)
		return dflt;
	if (!parse_bool(t, &b))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
				 errmsg("invalid input syntax for type boolean: \"%s\"", t)));
	return b;
}

/*
 * The statement that finds a model row, planned once per session: a plain
 * read of columns (the jsonb fields are taken apart here), so that a new
 * session's first call parses little (the expressions it once had cost a
 * new session most of a cached call's time, in catalog lookups).
 */
static SPIPlanPtr read_model_plan = NULL;

static void
ReadModel(const char *name, int32 version, bool with_weights, ModelRow *mr)
{
	Oid			types[4] = {TEXTOID, INT4OID, OIDOID, BOOLOID};
	Datum		values[4];
	char		nulls[5] = "    ";
	bool		isnull;
	HeapTuple	tup;
	TupleDesc	desc;
	Datum		d;
	Jsonb	   *params;
	MemoryContext callercxt = CurrentMemoryContext;

	if (strlen(name) >= NAMEDATALEN)
		ereport(ERROR, (errcode(ERRCODE_NAME_TOO_LONG), errmsg("model name \"%s\" is too long", name)));
	values[0] = CStringGetTextDatum(name);
	values[1] = Int32GetDatum(version);
	nulls[1] = version > 0 ? ' ' : 'n';
	values[2] = ObjectIdGetDatum(GetUserId());
	values[3] = BoolGetDatum(with_weights);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (read_model_plan == NULL)
	{
		/* the weights (maybe large, TOASTed) are fetched only when asked for; their header always */
		SPIPlanPtr	p = SPI_prepare("SELECT version, graph, params, id, xmin, task, classes, "
									"CASE WHEN $4 THEN weights END, metrics->>'temporal', "
									"substring(weights FROM 1 FOR " CppAsString2(GNN_BLOB_HEADER_MAX) ") "
									"FROM gnn.models WHERE owner = $3::oid::regrole AND name = $1 "
									/* no version given: the deployed one (gnn.deploy), else the latest */
									"AND ($2::int IS NULL OR version = $2::int) "
									"ORDER BY ($2::int IS NULL AND deployed) DESC, version DESC LIMIT 1",
									4, types);

		if (p == NULL || SPI_keepplan(p) != 0)
			elog(ERROR, "could not prepare the read of gnn.models");
		read_model_plan = p;
	}
	if (SPI_execute_plan(read_model_plan, values, nulls, true, 1) != SPI_OK_SELECT)
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
	d = SPI_getbinval(tup, desc, 3, &isnull);
	params = isnull ? NULL : DatumGetJsonbP(d);
	mr->row_normalise = TextBool(JsonbKeyText(params, "row_normalise"), true);
	{
		char	   *sm = JsonbKeyText(params, "streams");

		mr->streams_by_id = (sm && strcmp(sm, "node") == 0) || JsonbKeyText(params, "ranks") != NULL;
	}
	mr->id = DatumGetInt64(SPI_getbinval(tup, desc, 4, &isnull));
	mr->xmin = DatumGetTransactionId(SPI_getbinval(tup, desc, 5, &isnull));
	strlcpy(mr->task, TextDatumGetCString(SPI_getbinval(tup, desc, 6, &isnull)), sizeof(mr->task));
	mr->class_names = NULL;
	mr->nclasses = 0;
	{
		char	   *m = JsonbKeyText(params, "model");
		char	   *et = JsonbKeyText(params, "edge_type");
		Datum		t = SPI_getbinval(tup, desc, 9, &isnull);

		mr->mlp = m != NULL && strcmp(m, "mlp") == 0;
		strlcpy(mr->edge_type, et ? et : "", sizeof(mr->edge_type));
		/* an MLP reads no neighbours: there is no future to keep from it */
		mr->temporal = TextBool(isnull ? NULL : TextDatumGetCString(t), false) && !mr->mlp;
	}
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
		mr->class_names = MemoryContextAlloc(callercxt, Max(buf.len, 1));
		memcpy(mr->class_names, buf.data, buf.len);
		mr->nclasses = n;
	}
	{
		bytea	   *hdr = DatumGetByteaPP(SPI_getbinval(tup, desc, 10, &isnull));
		gnn_model_meta meta;
		gnn_error	err;

		if (isnull || gnn_model_blob_header(VARDATA_ANY(hdr), VARSIZE_ANY_EXHDR(hdr), &mr->cfg, &meta,
											&err) != GNN_OK)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("model \"%s\" version %d cannot be read: %s", name, mr->version,
							isnull ? "no weights" : err.msg),
					 errhint("Retrain it with gnn.train().")));
		mr->seed = meta.seed;
	}
	mr->weights = NULL;
	if (with_weights)
	{
		Datum		w = SPI_getbinval(tup, desc, 8, &isnull);

		mr->weights = (bytea *) SPI_datumTransfer(PointerGetDatum(PG_DETOAST_DATUM_COPY(w)), false, -1);
	}
	if (mr->temporal)
	{
		/* a time-aware model's sampling: read apart (few models are, and they compute every call) */
		Oid			t1[1] = {INT8OID};
		Datum		v1[1] = {Int64GetDatum(mr->id)};

		if (SPI_execute_with_args("SELECT "
								  "ARRAY(SELECT f::int FROM jsonb_array_elements_text("
								  "  CASE WHEN jsonb_typeof(params->'fanouts') = 'array' THEN params->'fanouts' END) "
								  "  WITH ORDINALITY AS a(f, o) ORDER BY o), "
								  "ARRAY(SELECT k FROM jsonb_object_keys("
								  "  CASE WHEN jsonb_typeof(params->'type_fanouts') = 'object' THEN params->'type_fanouts' END) "
								  "  AS t(k) ORDER BY k), "
								  "ARRAY(SELECT f::int FROM jsonb_each("
								  "  CASE WHEN jsonb_typeof(params->'type_fanouts') = 'object' THEN params->'type_fanouts' END) AS t, "
								  "  jsonb_array_elements_text(t.value) WITH ORDINALITY AS a(f, o) ORDER BY t.key, a.o), "
								  "params->>'temporal_strategy', (params->>'batch_size')::int, "
								  "(params->>'seed_time')::timestamptz "
								  "FROM gnn.models WHERE id = $1", 1, t1, v1, NULL, true, 1) != SPI_OK_SELECT ||
			SPI_processed != 1)
			ereport(ERROR,
					(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
					 errmsg("model \"%s\" version %d changed while it was read", name, mr->version)));
		ReadTemporal(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, mr);
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
 * The deserialised model, kept for the session: the last one used (keyed by
 * its row's id and xmin, so a retrained or replaced row is read again).
 * Point lookups then cost no weight reading.
 */
static struct
{
	int64		id;
	TransactionId xmin;
	gnn_backend *be;
	gnn_model  *m;
	uint64		seed;			/* the training seed (its blob's) */
}			session_model;

/* the caller's model, and the seed it was trained with */
static gnn_model *
LoadModel(ModelRow *mr, uint64 *seed)
{
	gnn_error	err;
	gnn_status	st;
	ModelRow	full;
	gnn_model_meta meta;

	if (session_model.m && session_model.id == mr->id && session_model.xmin == mr->xmin)
	{
		*seed = session_model.seed;
		return session_model.m;
	}
	if (session_model.m)
		gnn_model_free(session_model.m);
	session_model.m = NULL;
	GnnCoreThreadsInit();
	if (session_model.be == NULL)
	{
		if (gnn_backend_cpu_create(gnn_threads, &session_model.be, &err) != GNN_OK)
			GnnReportCoreError("could not create the CPU backend", &err);
		/* a cancel or statement_timeout stops a long inference between its pieces */
		gnn_backend_set_stop(session_model.be, GnnInterruptShouldStop, NULL);
	}
	ReadModel(mr->name, mr->version, true, &full);
	if (full.id != mr->id)
		ereport(ERROR,
				(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
				 errmsg("model \"%s\" version %d changed while it was read", mr->name, mr->version)));
	st = gnn_model_deserialize(session_model.be, VARDATA_ANY(full.weights), VARSIZE_ANY_EXHDR(full.weights),
							   &session_model.m, &meta, &err);
	pfree(full.weights);
	if (st != GNN_OK)
	{
		session_model.m = NULL;
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("model \"%s\" version %d cannot be read: %s", mr->name, mr->version, err.msg),
				 errhint("Retrain it with gnn.train().")));
	}
	session_model.id = mr->id;
	session_model.xmin = mr->xmin;
	session_model.seed = meta.seed;
	*seed = meta.seed;
	return session_model.m;
}

static int32
ResolveLayer(const ModelRow *mr, int layers, OutKind kind, int32 layer)
{
	int32		dflt,
				want;

	if (kind == OUT_PROBS)
		return -1;
	dflt = GnnDefaultEmbeddingLayer(layers, strcmp(mr->task, "link_prediction") != 0);
	want = layer >= 0 ? layer : dflt;
	if (want >= layers || layer < -1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("model \"%s\" has %d layer%s; layer must be between 0 and %d", mr->name, layers,
						layers == 1 ? "" : "s", layers - 1),
				 errdetail("Layer %d is the output layer (raw scores before softmax); the default is %s.",
						   layers - 1, dflt == layers - 1 ? "the output layer" : "the last hidden layer"),
				 errhint("Omit layer for the default.")));
	return want;
}

/* ------------------------------------------------------------------ inference */

/* What one call works with: the model row, the graph version of the statement, the layer. */
typedef struct InferCtx
{
	ModelRow	mr;
	GnnGraphRef ref;
	gnn_model  *m;				/* loaded when something is computed (InferModel), not for a cached row */
	OutKind		kind;
	int32		want;			/* layer, or -1 for probabilities */
	int32		cols;
	int32		type;			/* the node type results are about */
	bool		regression;		/* predictions are the output layer's value */
	GnnCacheKey key;
	/* a time-aware model: how its rows are sampled (gnn_model_infer_temporal) */
	gnn_infer_temporal_config tc;
} InferCtx;

/*
 * as_of => (argument argno): one moment for every row of a time-aware
 * model, as microseconds since 2000-01-01, the way the loader keeps node
 * times (a timestamptz is that already).  *has: it was given.
 */
static TimestampTz
AsOfArg(FunctionCallInfo fcinfo, int argno, bool *has)
{
	TimestampTz t;

	*has = PG_NARGS() > argno && !PG_ARGISNULL(argno);
	if (!*has)
		return 0;
	t = PG_GETARG_TIMESTAMPTZ(argno);
	if (TIMESTAMP_NOT_FINITE(t))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("as_of must be a finite time"),
				 errhint("Leave as_of out to answer every row as of its own time.")));
	return t;
}


/*
 * A time-aware model's sampling on the graph as loaded now: the training
 * fan-outs (per relation by the names the job was given), strategy and
 * seed, bounded by as_of when given, else by the job's seed_time, else by
 * each row's own time.  The temporal sampler reads a flat graph: a delta is
 * merged in first.
 */
static void
TemporalBegin(InferCtx *x, uint64 train_seed, bool has_as_of, TimestampTz as_of)
{
	const ModelRow *mr = &x->mr;
	gnn_infer_temporal_config *tc = &x->tc;
	const gnn_graph *g;

	GnnGraphFlattenRef(&x->ref);
	g = &x->ref.g;
	memset(tc, 0, sizeof(*tc));
	tc->sampler.kind = GNN_SAMPLER_NEIGHBOR;
	tc->sampler.nhops = mr->nfanouts;
	memcpy(tc->sampler.fanouts, mr->fanouts, sizeof(int32) * mr->nfanouts);
	tc->sampler.weighted = true;	/* as the job sampled */
	tc->sampler.nthreads = gnn_threads;
	tc->sampler.temporal = true;
	tc->sampler.temporal_strategy = mr->temporal_strategy;
	/* each node's draws keyed by its id where training keyed them so (over servers: the whole graph's rows) */
	tc->sampler.stream_by_id = mr->streams_by_id;
	if (g->num_edge_types > 1 || mr->ntype_fanouts > 0)
		tc->sampler.type_fanouts = GnnTypeFanouts(g, mr->nfanouts, mr->fanouts, mr->ntype_fanouts,
												  mr->tf_names, mr->tf_lists);
	tc->seed = gnn_infer_temporal_seed(train_seed);
	tc->batch_size = mr->batch_size;
	tc->row_normalise = mr->row_normalise;
	tc->has_as_of = has_as_of || mr->trained_as_of;
	tc->as_of = has_as_of ? as_of : mr->trained_as_of_time;
	tc->should_stop = GnnInterruptShouldStop;
}

/*
 * The statement's model, deserialised (or the session's, when it is the
 * same row): only a computation needs it, never a row read from the shared
 * result, so a new session answering from the cache reads no weights.
 */
static gnn_model *
InferModel(InferCtx *x)
{
	uint64		seed;

	if (x->m == NULL)
	{
		x->m = LoadModel(&x->mr, &seed);
		/* the header promised what the blob holds (both are checked) */
		if (gnn_model_config_of(x->m)->layers != x->mr.cfg.layers ||
			gnn_model_config_of(x->m)->out_dim != x->mr.cfg.out_dim)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("model \"%s\" version %d cannot be read: its header and weights disagree",
							x->mr.name, x->mr.version),
					 errhint("Retrain it with gnn.train().")));
	}
	return x->m;
}

/* rows of idx[0..n) of a time-aware model into out (n x cols), computed here */
static void
InferTemporal(InferCtx *x, const int64 *idx, int64 n, float *out)
{
	gnn_error	err;
	gnn_status	st;

	GnnCoreThreadsInit();
	st = gnn_model_infer_temporal(InferModel(x), &x->ref.g, &x->tc, x->want, x->kind == OUT_PROBS, idx, n, out, &err);
	if (st == GNN_ERR_CANCELLED)
		CHECK_FOR_INTERRUPTS();
	if (st != GNN_OK)
		GnnReportCoreError(psprintf("inference with model \"%s\" failed", x->mr.name), &err);
}

/* integer ids ascending */
static int
CmpDistRow(const void *a, const void *b, void *arg)
{
	const int64 *ids = arg;
	int64		x = ids[*(const int64 *) a],
				y = ids[*(const int64 *) b];

	return x < y ? -1 : x > y;
}

/* text keys: memcmp order, the shorter first on a tie (the loader's order within a type) */
static int
CmpDistKey(const void *a, const void *b, void *arg)
{
	const GnnDistRows *r = arg;
	int64		x = *(const int64 *) a,
				y = *(const int64 *) b;
	int64		lx = r->key_off[x + 1] - r->key_off[x],
				ly = r->key_off[y + 1] - r->key_off[y];
	int			c = memcmp(r->key_bytes + r->key_off[x], r->key_bytes + r->key_off[y], Min(lx, ly));

	return c != 0 ? c : (lx > ly) - (lx < ly);
}

/*
 * Over the parts: x's target type's rows from every part (GnnDistInferRows
 * at layer, softmax), put in one server's order - by key - with one
 * server's ids: the integer key, or a text key's rank within its type.
 */
static void
DistTypedRows(const GnnTrainRequest *dr, InferCtx *x, int32 layer, bool softmax, GnnDistRows *dist)
{
	const char *tname = x->ref.g.num_node_types > 1 ? gnn_graph_node_type_name(&x->ref.g, x->type) : NULL;
	int64	   *order;
	int64		n;
	float	   *rows;
	int64	   *ids;

	GnnDistInferRows(dr, InferModel(x), &x->ref.g, x->mr.graph, layer, softmax, x->mr.row_normalise, tname, NULL,
					 x->mr.temporal ? &x->tc : NULL, dist);
	n = dist->n;
	order = palloc(sizeof(int64) * Max(n, 1));
	for (int64 i = 0; i < n; i++)
		order[i] = i;
	if (dist->key_off)
		qsort_arg(order, n, sizeof(int64), CmpDistKey, dist);
	else
		qsort_arg(order, n, sizeof(int64), CmpDistRow, dist->ids);
	rows = palloc_extended(sizeof(float) * Max(n, 1) * Max(dist->cols, 1), MCXT_ALLOC_HUGE);
	ids = palloc_extended(sizeof(int64) * Max(n, 1), MCXT_ALLOC_HUGE);
	for (int64 k = 0; k < n; k++)
	{
		memcpy(rows + k * dist->cols, dist->rows + order[k] * dist->cols, sizeof(float) * dist->cols);
		ids[k] = dist->key_off ? k : dist->ids[order[k]];
	}
	if (dist->key_off)
	{
		int64	   *off = palloc_extended(sizeof(int64) * (n + 1), MCXT_ALLOC_HUGE);
		char	   *bytes = palloc_extended(Max(dist->key_off[n], 1), MCXT_ALLOC_HUGE);

		off[0] = 0;
		for (int64 k = 0; k < n; k++)
		{
			int64		len = dist->key_off[order[k] + 1] - dist->key_off[order[k]];

			memcpy(bytes + off[k], dist->key_bytes + dist->key_off[order[k]], len);
			off[k + 1] = off[k] + len;
		}
		dist->key_off = off;
		dist->key_bytes = bytes;
	}
	dist->rows = rows;
	dist->ids = ids;
}

/* row k's key as text (a uuid or text key, or the integer) */
static Datum
DistKeyText(const GnnDistRows *dist, int64 k)
{
	if (dist->key_off)
		return PointerGetDatum(cstring_to_text_with_len(dist->key_bytes + dist->key_off[k],
														(int) (dist->key_off[k + 1] - dist->key_off[k])));
	return CStringGetTextDatum(psprintf(INT64_FORMAT, dist->ids[k]));
}

/*
 * The row of DistTypedRows' dist that node (a bigint id, or a text key when
 * text_key) names, as one server finds it (GnnFindNodeInt, GnnFindNodeText), or
 * an error.
 */
static int64
DistFindRow(const GnnDistRows *dist, Datum node, bool text_key, const char *graph)
{
	int64		lo = 0,
				hi = dist->n;

	if (text_key && dist->key_off)
	{
		const char *key = TextDatumGetCString(node);
		int64		len = strlen(key);

		while (lo < hi)
		{
			int64		mid = (lo + hi) / 2,
						lm = dist->key_off[mid + 1] - dist->key_off[mid];
			int			c = memcmp(dist->key_bytes + dist->key_off[mid], key, Min(lm, len));

			if (c < 0 || (c == 0 && lm < len))
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo < dist->n && dist->key_off[lo + 1] - dist->key_off[lo] == len &&
			memcmp(dist->key_bytes + dist->key_off[lo], key, len) == 0)
			return lo;
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("node \"%s\" is in no part of graph \"%s\"", key, graph)));
	}
	{
		int64		id;

		if (text_key)
		{
			const char *key = TextDatumGetCString(node);

			if (!GnnIntKey(key, &id))
				ereport(ERROR,
						(errcode(ERRCODE_UNDEFINED_OBJECT),
						 errmsg("node \"%s\" is in no part of graph \"%s\"", key, graph)));
		}
		else
		{
			id = DatumGetInt64(node);
			/* a text-keyed type is named by its keys (GnnFindNodeInt finds none either) */
			if (dist->key_off)
				ereport(ERROR,
						(errcode(ERRCODE_UNDEFINED_OBJECT),
						 errmsg("node %lld is in no part of graph \"%s\"", (long long) id, graph),
						 errhint("The nodes of this type have text keys: name them as text.")));
		}
		/* the ids ascend: the integer keys */
		while (lo < hi)
		{
			int64		mid = (lo + hi) / 2;

			if (dist->ids[mid] < id)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo < dist->n && dist->ids[lo] == id)
			return lo;
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("node %lld is in no part of graph \"%s\"", (long long) id, graph)));
	}
	return -1;					/* not reached */
}

/*
 * over_parts: the call answers over every part of a partitioned graph
 * (options.peers), so a part is no cause for the warning below.
 */
static void
InferBegin(const char *model, int32 version, OutKind kind, int32 layer, bool has_as_of, TimestampTz as_of,
		   bool over_parts, InferCtx *x)
{
	const gnn_model_config *mc;
	uint64		train_seed;

	memset(x, 0, sizeof(*x));
	x->kind = kind;
	ReadModel(model, version, false, &x->mr);
	if (has_as_of && !x->mr.temporal)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("model \"%s\" was not trained with time-aware sampling, so as_of does not apply to it", model),
				 errdetail("as_of bounds the neighbourhood a time-aware model samples every row from; model \"%s\" version %d "
						   "reads every neighbour of a row, whatever its time.", model, x->mr.version),
				 errhint("Leave as_of out, or train the model with fan-outs on a graph with times "
						 "(options.fanouts; options.temporal is on by default there).")));
	if (kind == OUT_PROBS && strcmp(x->mr.task, "regression") == 0)
	{
		/* a regression model's prediction is its output layer */
		x->regression = true;
		kind = x->kind = OUT_EMBED;
		layer = INT32_MAX;
	}
	if (kind == OUT_PROBS && strcmp(x->mr.task, "node_classification") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("model \"%s\" was trained for %s and predicts no classes", x->mr.name, x->mr.task),
				 errhint("Use gnn.embedding(), gnn.similar() or gnn.embed() with a %s model: "
						 "its embeddings' dot products score links.",
						 strcmp(x->mr.task, "embedding") == 0 ? "node2vec" : "link-prediction")));
	/* the graph version this statement sees (pinned for the statement by the registry) */
	GnnGraphAcquireView(x->mr.graph, &x->ref);
	if (x->mr.mlp)
	{
		GnnGraphFlattenRef(&x->ref);
		GnnEdgelessView(&x->ref.g, &x->ref.g);
	}
	/* the header names the result; the weights are read only if it must be computed */
	mc = &x->mr.cfg;
	train_seed = x->mr.seed;
	if (x->mr.temporal)
		TemporalBegin(x, train_seed, has_as_of, as_of);

	/*
	 * One part of a partitioned graph: its halo's features and neighbours are
	 * on their owners' servers, so what a model computes here near the halo
	 * is not what it computes on the whole graph (an MLP reads no edges).
	 */
	if (x->ref.g.node_part && x->ref.g.num_nodes > x->ref.g.n_owned && !x->mr.mlp && !over_parts)
		ereport(WARNING,
				(errcode(ERRCODE_WARNING),
				 errmsg("graph \"%s\" is part %d of a partitioned graph: its %lld halo nodes have no features or "
						"neighbours of their own here",
						x->mr.graph, x->ref.g.part, (long long) (x->ref.g.num_nodes - x->ref.g.n_owned)),
				 errdetail("Results of model \"%s\" for halo nodes, and for own nodes within %d hops of the halo, "
						   "differ from the whole graph's.", x->mr.name, mc->layers),
				 errhint("Read the model where the whole graph is loaded under the name \"%s\" "
						 "(gnn.load_graph without part_column), or write its rows over every part: "
						 "gnn.embed(..., options => '{\"peers\": [...]}').", x->mr.graph)));
	if (mc->kind == GNN_MODEL_NODE2VEC)
	{
		/* a row per node: the graph must have the nodes it was trained on */
		if (mc->in_dim != x->ref.g.num_nodes)
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("model \"%s\" has embeddings of %d nodes, but graph \"%s\" now has %lld",
							x->mr.name, mc->in_dim, x->mr.graph, (long long) x->ref.g.num_nodes),
					 errdetail("node2vec learns one row per node: nodes that came or went since it was trained have none."),
					 errhint("Train it again: gnn.train('%s', model => 'node2vec', name => '%s').", x->mr.graph,
							 x->mr.name)));
	}
	else if (mc->in_dim != x->ref.g.feat_dim)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("model \"%s\" takes %d features, but graph \"%s\" has %d",
						x->mr.name, mc->in_dim, x->mr.graph, x->ref.g.feat_dim),
				 errhint("Reload the graph with the features the model was trained on.")));
	x->want = x->regression ? mc->layers - 1 : ResolveLayer(&x->mr, mc->layers, kind, layer);
	x->type = GnnResultType(&x->ref.g, NULL, x->mr.graph);
	x->cols = x->want < 0 ? mc->out_dim : gnn_model_config_layer_dim(mc, x->want);
	x->key.dbid = MyDatabaseId;
	x->key.owner = GetUserId();
	x->key.model_id = x->mr.id;
	x->key.model_xmin = x->mr.xmin;
	x->key.generation = x->ref.entry.generation;
	x->key.kind = kind;
	x->key.layer = x->want;
	x->key.has_as_of = has_as_of;
	x->key.as_of = has_as_of ? as_of : 0;
	if (x->mr.temporal && x->mr.nfanouts != mc->layers)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("model \"%s\" version %d records %d fan-outs for %d layers", x->mr.name, x->mr.version,
						x->mr.nfanouts, mc->layers),
				 errhint("Retrain it with gnn.train().")));
}

/*
 * What refreshes changed (gnn.graph_history): the node ids touched, sorted,
 * and of them those whose own data changed or that came (nd < 0: not told
 * apart, every touched node counts as data).
 */
typedef struct Touched
{
	int64	   *ids;
	int64		n;
	int64	   *data;
	int64		nd;
} Touched;

static bool TouchedChain(const char *graph, uint64 from, uint64 to, Touched *t, const char **why);
static int64 AffectedRows(const gnn_graph *g, const Touched *t, int hops, bool degree_free, bool **in_out,
						  int64 **front_out, Datum *gone, int *ngone);
static bool DegreeFree(gnn_model_kind kind);

/*
 * res from the result of the graph's previous version (a stale entry, the
 * base): its rows where nothing within the model's reach changed, the rest
 * computed on their neighbourhoods.  False, having written nothing that
 * matters, where there is no base, no change history to it, or the rows to
 * recompute or their neighbourhood pass gnn.khop_max_fraction of the nodes
 * (the full pass is then cheaper).  Rows equal the full pass's (1e-5), as
 * incremental gnn.embed's do.
 */
static bool
ComputeChanged(InferCtx *x, GnnResult *res)
{
	const gnn_graph *g = &x->ref.g;
	GnnResult	base;
	uint64		base_gen;
	Touched		touched;
	int64		nf,
				max_nodes = (int64) (g->num_nodes * gnn_khop_max_fraction);
	bool	   *in;
	int64	   *front;
	const char *why;
	bool		chain;
	float	   *out;
	int32		cols = res->cols;

	if (x->mr.temporal || g->num_node_types != 1 || gnn_khop_max_fraction <= 0 || max_nodes < 1 ||
		!GnnCacheBase(&x->key, &base, &base_gen) || base.cols != cols)
		return false;
	for (int64 i = 1; i < base.rows; i++)
		if (base.ids[i - 1] >= base.ids[i])
			return false;		/* not in key order: rows cannot be matched (not expected) */
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	chain = TouchedChain(x->mr.graph, base_gen, x->key.generation, &touched, &why);
	SPI_finish();
	if (!chain)
	{
		ereport(DEBUG1, (errmsg("model \"%s\": every row computed: %s", x->mr.name, why)));
		return false;
	}
	nf = AffectedRows(g, &touched, x->want < 0 ? x->mr.cfg.layers : x->want + 1, DegreeFree(x->mr.cfg.kind), &in,
					  &front, NULL, NULL);
	/* rows of nodes the base has not (not expected: new nodes are touched) are computed too */
	for (int64 v = 0, o = 0; v < g->num_nodes; v++)
	{
		int64		id = g->ids[v];

		if (in[v])
			continue;
		while (o < base.rows && base.ids[o] < id)
			o++;
		if (o < base.rows && base.ids[o] == id)
			memcpy((float *) res->out + v * cols, base.out + o * cols, sizeof(float) * cols);
		else
		{
			in[v] = true;
			front[nf++] = v;
		}
	}
	if (nf > max_nodes)
		return false;
	qsort(front, nf, sizeof(int64), GnnCmpInt64);
	GnnCoreThreadsInit();
	out = palloc_extended(sizeof(float) * (Size) Min(Max(nf, 1), 65536) * cols, MCXT_ALLOC_HUGE);
	for (int64 c0 = 0; c0 < nf; c0 += 65536)
	{
		int			cn = (int) Min(nf - c0, 65536);
		gnn_error	err;
		gnn_status	st = gnn_model_infer_nodes(InferModel(x), g, x->mr.row_normalise, x->want, x->kind == OUT_PROBS,
											   front + c0, cn, max_nodes, out, NULL, &err);

		if (st == GNN_ERR_LIMIT || st == GNN_ERR_UNSUPPORTED)
			return false;		/* a neighbourhood as large as the graph: the full pass */
		if (st == GNN_ERR_CANCELLED)
			CHECK_FOR_INTERRUPTS();
		if (st != GNN_OK)
			GnnReportCoreError(psprintf("inference with model \"%s\" failed", x->mr.name), &err);
		for (int i = 0; i < cn; i++)
			memcpy((float *) res->out + front[c0 + i] * cols, out + (Size) i * cols, sizeof(float) * cols);
		CHECK_FOR_INTERRUPTS();
	}
	res->computed = nf;
	return true;
}

static void
ComputeFull(void *arg, GnnResult *res)
{
	InferCtx   *x = arg;
	gnn_error	err;

	memcpy((int64 *) res->ids, x->ref.g.ids, sizeof(int64) * res->rows);
	if (x->mr.temporal)
	{
		/* every node, as of its own time (or as_of) */
		int64	   *idx = palloc_extended(sizeof(int64) * Max(res->rows, 1), MCXT_ALLOC_HUGE);

		for (int64 v = 0; v < res->rows; v++)
			idx[v] = v;
		InferTemporal(x, idx, res->rows, (float *) res->out);
		pfree(idx);
		return;
	}
	/* after a refresh: only the rows it can have changed, where that is cheaper */
	if (ComputeChanged(x, res))
		return;
	GnnCoreThreadsInit();
	/* the whole graph: a delta merged in first (the few-node path reads it in place) */
	GnnGraphFlattenRef(&x->ref);
	if (gnn_model_infer(InferModel(x), &x->ref.g, x->mr.row_normalise, x->want, x->kind == OUT_PROBS,
						(float *) res->out, &err) != GNN_OK)
		GnnReportCoreError(psprintf("inference with model \"%s\" failed", x->mr.name), &err);
}

/*
 * Every node's row: the shared result of this model row and graph version,
 * computed (once, whoever asks first) if it is not cached.
 */
static void
InferFull(InferCtx *x, GnnResult *res)
{
	bool		hit;

	GnnCacheGet(&x->key, x->mr.name, x->mr.version, x->mr.graph, x->ref.g.num_nodes, x->cols,
				ComputeFull, x, res, &hit);
}

static void
InferEnd(InferCtx *x)
{
	GnnGraphRelease(&x->ref);
}

/*
 * Rows of a few nodes (graph indices nodes[0..n)) into out (n x cols): from the shared
 * result when it is there; else computed exactly on the nodes'
 * neighbourhood (every neighbour, no sampling: the full pass's up to rounding) when
 * that neighbourhood has at most max_fraction of the graph's nodes; else the
 * full pass, shared.
 */
static uint64
InferFew(InferCtx *x, const int64 *nodes, int n, double max_fraction, float *out)
{
	GnnResult	res;
	int64	   *idx = palloc(sizeof(int64) * Max(n, 1));
	gnn_error	err;
	gnn_status	st;
	int64		touched = 0;

	memcpy(idx, nodes, sizeof(int64) * n);
	if (x->mr.temporal && !GnnCacheLookup(&x->key, &res))
	{
		/* sampled with the training fan-outs: as cheap for a few nodes whatever their neighbourhood */
		InferTemporal(x, idx, n, out);
		pfree(idx);
		return 0;
	}
	if (!x->mr.temporal && !GnnCacheLookup(&x->key, &res))
	{
		/*
		 * Past gnn.khop_max_fraction of the graph's nodes (half) the
		 * neighbourhood costs about as much as the full pass, which is then
		 * computed once for everyone.  (On a 1M-node R-MAT graph a 10-node
		 * neighbourhood of 12% of the nodes took 75 ms, the full pass 10 s.)
		 */
		int64		max_nodes = Max((int64) (x->ref.g.num_nodes * max_fraction), 1);

		GnnCoreThreadsInit();
		if (max_fraction <= 0)
			st = GNN_ERR_LIMIT;		/* always the full pass */
		else
			st = gnn_model_infer_nodes(InferModel(x), &x->ref.g, x->mr.row_normalise, x->want, x->kind == OUT_PROBS,
									   idx, n, max_nodes, out, &touched, &err);
		if (st == GNN_OK)
		{
			pfree(idx);
			return 0;
		}
		/* too large a neighbourhood, or a model the few-node path cannot run: the full pass */
		if (st != GNN_ERR_LIMIT && st != GNN_ERR_UNSUPPORTED)
			GnnReportCoreError(psprintf("inference with model \"%s\" failed", x->mr.name), &err);
		InferFull(x, &res);
	}
	for (int i = 0; i < n; i++)
		memcpy(out + (Size) i * x->cols, res.out + idx[i] * x->cols, sizeof(float) * x->cols);
	pfree(idx);
	return res.serial;
}


/* A real[] of one row, built in place (one allocation, one copy). */
static ArrayType *
RowArray(const float *row, int32 cols)
{
	Size		bytes = ARR_OVERHEAD_NONULLS(1) + sizeof(float4) * (Size) cols;
	ArrayType  *a = palloc0(bytes);

	SET_VARSIZE(a, bytes);
	a->ndim = 1;
	a->dataoffset = 0;
	a->elemtype = FLOAT4OID;
	ARR_DIMS(a)[0] = cols;
	ARR_LBOUND(a)[0] = 1;
	memcpy(ARR_DATA_PTR(a), row, sizeof(float4) * (Size) cols);
	return a;
}

/* the name of class k as the model learnt it (text labels), or NULL */
static const char *
ClassName(const ModelRow *mr, int k)
{
	const char *p = mr->class_names;

	if (!p || k < 0 || k >= mr->nclasses)
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

/*
 * gnn._embedding_rows(model, layer, version) -> (id, embedding): what
 * gnn.embed inserts.  Streams rows from the shared result, one per call, so
 * a large graph never spills a tuplestore; the result stays mapped until the
 * transaction ends.
 */
/* What _embedding_rows streams: the shared result and the keys of one node type. */
typedef struct EmbedRows
{
	GnnResult	r;
	int64		first;			/* the type's first node */
	int64		count;
	int64	   *keys;			/* [count] */
	int64	   *key_off;		/* [count + 1] text keys, or NULL */
	char	   *key_bytes;
} EmbedRows;

Datum
gnn_embedding_rows(PG_FUNCTION_ARGS)
{
	FuncCallContext *fctx;
	EmbedRows  *er;

	if (SRF_IS_FIRSTCALL())
	{
		MemoryContext old;
		TupleDesc	desc;
		InferCtx	x;
		const gnn_graph *g;
		int32		t;
		bool		has_as_of;
		TimestampTz as_of;

		GnnRequirePreload();
		fctx = SRF_FIRSTCALL_INIT();
		old = MemoryContextSwitchTo(fctx->multi_call_memory_ctx);
		er = palloc0(sizeof(EmbedRows));
		MemoryContextSwitchTo(old);
		as_of = AsOfArg(fcinfo, 4, &has_as_of);
		InferBegin(ModelArg(fcinfo), VersionArg(fcinfo, 2), OUT_EMBED,
				   PG_ARGISNULL(1) ? -1 : PG_GETARG_INT32(1), has_as_of, as_of, false, &x);
		g = &x.ref.g;
		t = GnnResultType(g, PG_NARGS() > 3 && !PG_ARGISNULL(3) ? text_to_cstring(PG_GETARG_TEXT_PP(3)) : NULL,
					   x.mr.graph);
		InferFull(&x, &er->r);
		old = MemoryContextSwitchTo(fctx->multi_call_memory_ctx);
		er->first = g->type_ptr[t];
		er->count = g->type_ptr[t + 1] - g->type_ptr[t];
		er->keys = palloc_extended(sizeof(int64) * Max(er->count, 1), MCXT_ALLOC_HUGE);
		memcpy(er->keys, g->keys + er->first, sizeof(int64) * er->count);
		if (g->key_off && g->type_text_key && g->type_text_key[t])
		{
			int64		b0 = g->key_off[er->first],
						b1 = g->key_off[er->first + er->count];

			er->key_off = palloc_extended(sizeof(int64) * (er->count + 1), MCXT_ALLOC_HUGE);
			for (int64 i = 0; i <= er->count; i++)
				er->key_off[i] = g->key_off[er->first + i] - b0;
			er->key_bytes = palloc_extended(Max(b1 - b0, 1), MCXT_ALLOC_HUGE);
			memcpy(er->key_bytes, g->key_bytes + b0, b1 - b0);
		}
		MemoryContextSwitchTo(old);
		InferEnd(&x);
		old = MemoryContextSwitchTo(fctx->multi_call_memory_ctx);
		if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
			elog(ERROR, "return type must be a row type");
		fctx->tuple_desc = BlessTupleDesc(desc);
		fctx->user_fctx = er;
		fctx->max_calls = er->count;
		MemoryContextSwitchTo(old);
	}
	fctx = SRF_PERCALL_SETUP();
	er = fctx->user_fctx;
	if (fctx->call_cntr < fctx->max_calls)
	{
		Datum		v[3];
		bool		n[3] = {false, false, false};
		int64		i = (int64) fctx->call_cntr;
		int64		row = er->first + i;

		v[0] = Int64GetDatum(er->keys[i]);
		v[1] = PointerGetDatum(RowArray(er->r.out + row * er->r.cols, er->r.cols));
		if (er->key_off)
			v[2] = PointerGetDatum(cstring_to_text_with_len(er->key_bytes + er->key_off[i],
															(int) (er->key_off[i + 1] - er->key_off[i])));
		else
			v[2] = CStringGetTextDatum(psprintf(INT64_FORMAT, er->keys[i]));
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
CheckEmbedTarget(const ModelRow *c, Oid relid, const char *into, const char *column, const char *idcol, Oid vtype)
{
	GnnGraphRef ref;
	GnnGraphEntry e;

	if (!OidIsValid(relid))
		return;					/* a new table (or the error for a missing one, below) */
	GnnGraphAcquireView(c->graph, &ref);
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
					 errhint("Name a new column, e.g. column_name => '%s_embedding'.", c->name)));
		if (att != InvalidAttrNumber && get_atttype(relid, att) != FLOAT4ARRAYOID &&
			!(OidIsValid(vtype) && get_atttype(relid, att) == vtype))
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("column \"%s\" of %s has type %s; embeddings go into a real[] or vector column",
							column, into, format_type_be(get_atttype(relid, att))),
					 errhint("Name a new column (it is added as real[], or as vector with options => "
							 "'{\"type\": \"vector\"}') or an existing real[] or vector one.")));
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
				 errhint("Write into a new table, or add a column to this one with column_name => 'embedding'.")));
	{
		AttrNumber	idatt = get_attnum(relid, "id");
		AttrNumber	eatt = get_attnum(relid, "embedding");

		if (idatt == InvalidAttrNumber || eatt == InvalidAttrNumber ||
			(get_atttype(relid, eatt) != FLOAT4ARRAYOID && !(OidIsValid(vtype) && get_atttype(relid, eatt) == vtype)))
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("table %s exists but is not an embedding table (id, embedding real[] or vector)", into),
					 errdetail("gnn.embed() replaces the rows of such a table; it leaves other tables alone."),
					 errhint("Name a new table, or use column_name => to add a column to a node table.")));
	}
}

/* ------------------------------------------------------------------ incremental embed */

/* how many nodes this session's last gnn.embed computed (gnn._embed_recomputed) */
static int64 last_recomputed = -1;

PG_FUNCTION_INFO_V1(gnn_embed_recomputed);
Datum
gnn_embed_recomputed(PG_FUNCTION_ARGS)
{
	if (last_recomputed < 0)
		PG_RETURN_NULL();
	PG_RETURN_INT64(last_recomputed);
}

/* Remember the graph version a table's embeddings were written from (gnn.embed_state). */
static void
SaveEmbedState(Oid relid, const InferCtx *x)
{
	Oid			types[7] = {OIDOID, OIDOID, INT8OID, INT4OID, TEXTOID, INT8OID, INT8OID};
	Datum		values[7];

	values[0] = ObjectIdGetDatum(GetUserId());
	values[1] = ObjectIdGetDatum(relid);
	values[2] = Int64GetDatum(x->mr.id);
	values[3] = Int32GetDatum(x->want);
	values[4] = CStringGetTextDatum(x->mr.graph);
	values[5] = Int64GetDatum((int64) gnn_shared->instance);
	values[6] = Int64GetDatum((int64) x->ref.entry.generation);
	GnnCatalogExec("INSERT INTO gnn.embed_state AS s (owner, relid, model_id, layer, graph, instance, generation) "
				   "VALUES ($1::regrole, $2, $3, $4, $5, $6, $7) ON CONFLICT (owner, relid) DO UPDATE SET "
				   "model_id = excluded.model_id, layer = excluded.layer, graph = excluded.graph, "
				   "instance = excluded.instance, generation = excluded.generation, at = now()",
				   7, types, values, NULL, 0);
}

/*
 * The node ids touched from graph version gen to version cur, following
 * gnn.graph_history (sorted, unique).  False, saying why, when the chain is
 * broken (a reload, history no longer kept).  SPI is connected.
 */
static bool
TouchedChain(const char *graph, uint64 from, uint64 to, Touched *out, const char **why)
{
	bool		isnull;
	int64		gen = (int64) from;
	int64		cur = (int64) to;
	int64		n = 0,
				cap = 256,
				nd = 0,
				dcap = 256;
	int64	   *t = palloc(sizeof(int64) * cap);
	int64	   *dt = palloc(sizeof(int64) * dcap);
	bool		told_apart = true;

	for (int hop = 0; gen != cur; hop++)
	{
		Oid			t4[4] = {OIDOID, TEXTOID, INT8OID, INT8OID};
		Datum		v4[4];
		ArrayType  *a;
		Datum	   *d;
		bool	   *dn;
		int			k;

		CHECK_FOR_INTERRUPTS();
		v4[0] = ObjectIdGetDatum(GetUserId());
		v4[1] = CStringGetTextDatum(graph);
		v4[2] = Int64GetDatum((int64) gnn_shared->instance);
		v4[3] = Int64GetDatum(gen);
		if (SPI_execute_with_args("SELECT generation, touched, data_touched FROM gnn.graph_history WHERE owner = $1::regrole "
								  "AND graph = $2 AND instance = $3 AND base_generation = $4",
								  4, t4, v4, NULL, true, 1) != SPI_OK_SELECT)
			elog(ERROR, "could not read gnn.graph_history");
		if (SPI_processed == 0)
		{
			*why = "the graph was reloaded (not only refreshed) since the table was written";
			return false;
		}
		gen = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
		a = DatumGetArrayTypeP(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull));
		deconstruct_array(a, INT8OID, 8, true, TYPALIGN_DOUBLE, &d, &dn, &k);
		if (n + k > cap)
		{
			cap = Max(cap * 2, n + k);
			t = repalloc_huge(t, sizeof(int64) * cap);
		}
		for (int i = 0; i < k; i++)
			t[n++] = DatumGetInt64(d[i]);
		{
			Datum		dd = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 3, &isnull);

			if (isnull)
				told_apart = false;
			else if (told_apart)
			{
				deconstruct_array(DatumGetArrayTypeP(dd), INT8OID, 8, true, TYPALIGN_DOUBLE, &d, &dn, &k);
				if (nd + k > dcap)
				{
					dcap = Max(dcap * 2, nd + k);
					dt = repalloc_huge(dt, sizeof(int64) * dcap);
				}
				for (int i = 0; i < k; i++)
					dt[nd++] = DatumGetInt64(d[i]);
			}
		}
	}
	out->ids = t;
	out->n = GnnSortUnique64(t, n);
	out->data = dt;
	out->nd = told_apart ? GnnSortUnique64(dt, nd) : -1;
	return true;
}

/*
 * The node ids touched since the version relid was last written from, by
 * following gnn.graph_history to the version x sees.  False when there is
 * no such chain (no earlier write of this model and layer, a reload, a
 * restart): then every row is written.  SPI is connected.
 */
static bool
TouchedSince(Oid relid, const InferCtx *x, Touched *out, const char **why)
{
	Oid			t2[2] = {OIDOID, OIDOID};
	Datum		v2[2];
	bool		isnull;
	int64		gen;
	int64		cur = (int64) x->ref.entry.generation;

	v2[0] = ObjectIdGetDatum(GetUserId());
	v2[1] = ObjectIdGetDatum(relid);
	if (SPI_execute_with_args("SELECT model_id, layer, graph, instance, generation FROM gnn.embed_state "
							  "WHERE owner = $1::regrole AND relid = $2", 2, t2, v2, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read gnn.embed_state");
	if (SPI_processed == 0)
	{
		*why = "no earlier gnn.embed wrote this table";
		return false;
	}
	{
		HeapTuple	tup = SPI_tuptable->vals[0];
		TupleDesc	td = SPI_tuptable->tupdesc;
		int64		model_id = DatumGetInt64(SPI_getbinval(tup, td, 1, &isnull));
		int32		layer = DatumGetInt32(SPI_getbinval(tup, td, 2, &isnull));
		char	   *graph = TextDatumGetCString(SPI_getbinval(tup, td, 3, &isnull));
		int64		instance = DatumGetInt64(SPI_getbinval(tup, td, 4, &isnull));

		gen = DatumGetInt64(SPI_getbinval(tup, td, 5, &isnull));
		if (model_id != x->mr.id || layer != x->want || strcmp(graph, x->mr.graph) != 0)
		{
			*why = "the table was last written by another model, version or layer";
			return false;
		}
		if (instance != (int64) gnn_shared->instance)
		{
			*why = "the server restarted since the table was written";
			return false;
		}
	}
	return TouchedChain(x->mr.graph, (uint64) gen, (uint64) cur, out, why);
}

/*
 * Models whose layer reads, of its in-neighbours, only their values (never
 * their degrees): GraphSAGE (every aggregator divides by the node's own
 * in-degree at most) and GAT (attention normalised over the node's own
 * in-arcs).  GCN's symmetric normalisation reads the neighbours' degrees.
 */
static bool
DegreeFree(gnn_model_kind kind)
{
	return kind == GNN_MODEL_SAGE || kind == GNN_MODEL_GAT;
}

/*
 * The nodes whose rows a change can have changed: a node's output at a
 * layer depends on its in-neighbourhood of that layer's hops, so they are
 * the touched nodes' out-neighbourhood of hops hops in the graph now.  For
 * a degree-free model (DegreeFree) the first hop goes out only from the
 * nodes whose own data changed: a node whose arcs alone changed changes its
 * own first-layer output (its in-arcs), not its neighbours' (their layer
 * reads its features, which did not change); so an edge change recomputes
 * its endpoints, not their neighbourhoods, at the first layer.  *front gets
 * them (graph indices), *in marks them; touched ids no longer in the graph
 * go to gone (when given).  Returns their count.
 */
static int64
AffectedRows(const gnn_graph *g, const Touched *t, int hops, bool degree_free, bool **in_out, int64 **front_out,
			 Datum *gone, int *ngone)
{
	bool	   *in = palloc_extended(Max(g->num_nodes, 1), MCXT_ALLOC_HUGE | MCXT_ALLOC_ZERO);
	int64	   *front = palloc_extended(sizeof(int64) * Max(g->num_nodes, 1), MCXT_ALLOC_HUGE);
	int64		nf = 0,
				done = 0;

	for (int64 i = 0; i < t->n; i++)
	{
		int64		v = gnn_graph_find(g, t->ids[i]);

		if (v < 0)
		{
			if (gone)
				gone[(*ngone)++] = Int64GetDatum(t->ids[i]);
		}
		else if (!in[v])
		{
			in[v] = true;
			front[nf++] = v;
		}
	}
	if (degree_free && t->nd >= 0 && hops > 0)
	{
		/* the first hop: out of the nodes whose data changed only */
		for (int64 i = 0; i < t->nd; i++)
		{
			int64		v = gnn_graph_find(g, t->data[i]);
			const int32 *nb;
			int64		len;

			if (v < 0)
				continue;
			len = gnn_graph_out_row(g, v, &nb, NULL, NULL);
			for (int64 e = 0; e < len; e++)
				if (!in[nb[e]])
				{
					in[nb[e]] = true;
					front[nf++] = nb[e];
				}
		}
		hops--;					/* the next hops go out of every row changed so far */
	}
	for (int h = 0; h < hops && done < nf; h++)
	{
		int64		end = nf;

		CHECK_FOR_INTERRUPTS();
		for (; done < end; done++)
		{
			int64		v = front[done];

			const int32 *nb;
			int64		len = gnn_graph_out_row(g, v, &nb, NULL, NULL);

			for (int64 e = 0; e < len; e++)
			{
				int32		u = nb[e];

				if (!in[u])
				{
					in[u] = true;
					front[nf++] = u;
				}
			}
		}
	}
	*in_out = in;
	*front_out = front;
	return nf;
}

/*
 * Rewrite the rows of relid (id, embedding) that the touched nodes can have
 * changed: a node's output at the layer written depends on its
 * in-neighbourhood of hops hops, so the rows that can change are the
 * touched nodes' out-neighbourhood of that many hops (in the graph now).
 * Touched ids no longer in the graph lose their rows.  Returns the rows
 * written; *recomputed the nodes whose rows were computed.
 */
static int64
EmbedIncremental(InferCtx *x, const char *qname, const char *key_type, const Touched *touched,
				 int64 *recomputed)
{
	const gnn_graph *g = &x->ref.g;
	int			hops = x->want < 0 ? INT_MAX : x->want + 1;
	bool	   *in;
	int64	   *front;
	int64		nf;
	Datum	   *gone = palloc(sizeof(Datum) * Max(touched->n, 1));
	int			ngone = 0;
	float	   *out;
	SPIPlanPtr	ins;
	int64		written = 0;

	nf = AffectedRows(g, touched, hops, DegreeFree(x->mr.cfg.kind), &in, &front, gone, &ngone);
	*recomputed = nf;
	/* text keys: a node that goes renumbers the graph, so a refresh reloads it and no history leads here */
	if (key_type && ngone > 0)
		elog(ERROR, "gnn.embed: %d touched nodes of a text-keyed graph are gone", ngone);
	/* rows of removed nodes and of the nodes recomputed go; the recomputed come back */
	if (key_type)
	{
		Datum	   *d = palloc_extended(sizeof(Datum) * (nf + 1), MCXT_ALLOC_HUGE);

		for (int64 i = 0; i < nf; i++)
			d[i] = GnnNodeKeyText(g, front[i]);
		if (SPI_execute_with_args(psprintf("DELETE FROM %s WHERE id = ANY($1::%s[])", qname, key_type), 1,
								  (Oid[]) {TEXTARRAYOID},
								  (Datum[]) {PointerGetDatum(construct_array(d, (int) nf, TEXTOID, -1, false, TYPALIGN_INT))},
								  NULL, false, 0) < 0)
			elog(ERROR, "could not delete from %s", qname);
	}
	else
	{
		Datum	   *d = palloc_extended(sizeof(Datum) * (nf + ngone + 1), MCXT_ALLOC_HUGE);
		Oid			t1[1] = {INT8ARRAYOID};
		Datum		v1[1];

		for (int64 i = 0; i < nf; i++)
			d[i] = Int64GetDatum(g->ids[front[i]]);
		memcpy(d + nf, gone, sizeof(Datum) * ngone);
		v1[0] = PointerGetDatum(construct_array(d, (int) (nf + ngone), INT8OID, 8, true, TYPALIGN_DOUBLE));
		if (SPI_execute_with_args(psprintf("DELETE FROM %s WHERE id = ANY($1)", qname), 1, t1, v1, NULL,
								  false, 0) < 0)
			elog(ERROR, "could not delete from %s", qname);
	}
	if (nf == 0)
		return 0;
	qsort(front, nf, sizeof(int64), GnnCmpInt64);
	ins = key_type ? SPI_prepare(psprintf("INSERT INTO %s (id, embedding) VALUES ($1::%s, $2)", qname, key_type), 2,
								 (Oid[]) {TEXTOID, FLOAT4ARRAYOID}) :
		SPI_prepare(psprintf("INSERT INTO %s (id, embedding) VALUES ($1, $2)", qname), 2,
					(Oid[]) {INT8OID, FLOAT4ARRAYOID});
	if (ins == NULL)
		elog(ERROR, "could not prepare the insert into %s", qname);
	/*
	 * In chunks: the rows of a chunk computed together (one neighbourhood),
	 * never by the full pass (gnn.khop_max_fraction is for reads of a few
	 * rows, where the full pass is then shared): a small change's rows cost
	 * their neighbourhood, a whole-graph pass costs every row.
	 */
	out = palloc_extended(sizeof(float) * (Size) Min(nf, 65536) * x->cols, MCXT_ALLOC_HUGE);
	for (int64 c0 = 0; c0 < nf; c0 += 65536)
	{
		int			cn = (int) Min(nf - c0, 65536);

		InferFew(x, front + c0, cn, 1.0, out);
		for (int i = 0; i < cn; i++)
		{
			Datum		v[2];

			v[0] = key_type ? GnnNodeKeyText(g, front[c0 + i]) : Int64GetDatum(g->ids[front[c0 + i]]);
			v[1] = PointerGetDatum(RowArray(out + (Size) i * x->cols, x->cols));
			if (SPI_execute_plan(ins, v, NULL, false, 0) != SPI_OK_INSERT)
				elog(ERROR, "could not insert into %s", qname);
			written++;
		}
		CHECK_FOR_INTERRUPTS();
	}
	return written;
}

/* ------------------------------------------------------------------ pgvector */

/*
 * gnn.embed's options: {"type": "vector" | "real[]", "index": "hnsw" |
 * "ivfflat", "distance": "cosine" | "l2" | "ip"}.
 */
typedef struct EmbedOptions
{
	bool		vector;
	char	   *index;			/* NULL: none */
	char	   *distance;
} EmbedOptions;

static void
ParseEmbedOptions(Jsonb *opts, EmbedOptions *o)
{
	JsonbIterator *it;
	JsonbValue	v;
	JsonbIteratorToken tok;
	char	   *key = NULL;

	memset(o, 0, sizeof(*o));
	o->distance = "cosine";
	if (!opts)
		return;
	if (!JB_ROOT_IS_OBJECT(opts))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("gnn.embed: options must be a JSON object"),
				 errhint("For example '{\"type\": \"vector\", \"index\": \"hnsw\", \"distance\": \"cosine\"}'.")));
	it = JsonbIteratorInit(&opts->root);
	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
	{
		char	   *val;

		if (tok == WJB_KEY)
		{
			key = pnstrdup(v.val.string.val, v.val.string.len);
			continue;
		}
		if (tok != WJB_VALUE)
			continue;
		if (strcmp(key, "type") != 0 && strcmp(key, "index") != 0 && strcmp(key, "distance") != 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("gnn.embed: unknown option \"%s\"", key),
					 errhint("The options are type, index and distance; over several servers peers, coordinator, dist_timeout_ms and write.")));
		if (v.type != jbvString)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("gnn.embed: options.%s must be a string", key)));
		val = pnstrdup(v.val.string.val, v.val.string.len);
		if (strcmp(key, "type") == 0)
		{
			if (strcmp(val, "vector") != 0 && strcmp(val, "real[]") != 0)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("gnn.embed: unknown options.type \"%s\"", val),
						 errhint("Accepted: \"vector\" (pgvector), \"real[]\" (the default).")));
			o->vector = strcmp(val, "vector") == 0;
		}
		else if (strcmp(key, "index") == 0)
		{
			if (strcmp(val, "hnsw") != 0 && strcmp(val, "ivfflat") != 0)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("gnn.embed: unknown options.index \"%s\"", val),
						 errhint("Accepted: \"hnsw\", \"ivfflat\" (pgvector's index methods).")));
			o->index = val;
		}
		else
		{
			if (strcmp(val, "cosine") != 0 && strcmp(val, "l2") != 0 && strcmp(val, "ip") != 0)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("gnn.embed: unknown options.distance \"%s\"", val),
						 errhint("Accepted: \"cosine\" (<=>), \"l2\" (<->), \"ip\" (<#>).")));
			o->distance = val;
		}
	}
}

/* the schema extension ext was installed in (InvalidOid: none) */
static Oid
ExtensionSchema(Oid ext)
{
	Relation	rel = table_open(ExtensionRelationId, AccessShareLock);
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tup;
	Oid			nsp = InvalidOid;

	ScanKeyInit(&key, Anum_pg_extension_oid, BTEqualStrategyNumber, F_OIDEQ, ObjectIdGetDatum(ext));
	scan = systable_beginscan(rel, ExtensionOidIndexId, true, NULL, 1, &key);
	if (HeapTupleIsValid(tup = systable_getnext(scan)))
		nsp = ((Form_pg_extension) GETSTRUCT(tup))->extnamespace;
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return nsp;
}

/*
 * pgvector's vector type in this database, found at run time (gnn never
 * links to pgvector), and its schema; InvalidOid: not installed.
 */
static Oid
PgvectorType(void)
{
	Oid			ext = get_extension_oid("vector", true);

	if (!OidIsValid(ext))
		return InvalidOid;
	return GetSysCacheOid2(TYPENAMENSP, Anum_pg_type_oid, CStringGetDatum("vector"),
						   ObjectIdGetDatum(ExtensionSchema(ext)));
}

/*
 * After the rows are written: a pgvector index on the embedding column, by
 * the method and distance the options name (one per table, column, method
 * and distance: a rewrite keeps it).  SPI is connected.
 */
static void
EmbedIndex(const char *qname, Oid relid, const char *column, Oid vtype, const EmbedOptions *o, int64 rows)
{
	char	   *nsp = get_namespace_name(ExtensionSchema(get_extension_oid("vector", false)));
	const char *ops = strcmp(o->distance, "l2") == 0 ? "vector_l2_ops" :
		strcmp(o->distance, "ip") == 0 ? "vector_ip_ops" : "vector_cosine_ops";
	char	   *full = psprintf("%s_%s_%s_%s", get_rel_name(relid), column, o->index, o->distance);
	char	   *name = full;
	StringInfoData q;

	/*
	 * Index names are at most NAMEDATALEN - 1 bytes: a longer one keeps what
	 * fits of it (whole characters) and a hash of the whole, so the names of
	 * two distances or methods never come out the same.
	 */
	if (strlen(full) >= NAMEDATALEN)
	{
		int			keep = pg_mbcliplen(full, strlen(full), NAMEDATALEN - 1 - 9);

		name = psprintf("%.*s_%08x", keep, full, (unsigned) hash_bytes((const unsigned char *) full, strlen(full)));
	}
	initStringInfo(&q);
	appendStringInfo(&q, "CREATE INDEX IF NOT EXISTS %s ON %s USING %s (%s %s.%s)", quote_identifier(name), qname,
					 o->index, quote_identifier(column), quote_identifier(nsp), ops);
	/* ivfflat: lists = rows / 1000 up to a million rows, their square root above (pgvector's advice) */
	if (strcmp(o->index, "ivfflat") == 0)
		appendStringInfo(&q, " WITH (lists = %d)",
						 (int) Max(1, rows <= 1000000 ? rows / 1000 : (int64) sqrt((double) rows)));
	if (SPI_execute(q.data, false, 0) != SPI_OK_UTILITY)
		elog(ERROR, "could not create the index on %s", qname);
	/* IF NOT EXISTS skips a name another table's index (or any relation) of the schema already has */
	{
		Oid			idx = get_relname_relid(name, get_rel_namespace(relid));

		if (!OidIsValid(idx) || get_rel_relkind(idx) != RELKIND_INDEX ||
			IndexGetRelation(idx, true) != relid)
			ereport(ERROR,
					(errcode(ERRCODE_DUPLICATE_OBJECT),
					 errmsg("could not create the %s index of %s: the name \"%s\" is taken by another relation",
							o->index, qname, name),
					 errhint("Rename or drop that relation, or write the embeddings into another table.")));
	}
}

/*
 * An argument that has a new name and keeps its old one (a reserved word that
 * needed quotes) as a deprecated trailing argument: either may be given, not
 * two different values.
 */
static char *
RenamedTextArg(FunctionCallInfo fcinfo, int arg, int old_arg, const char *name, const char *old_name)
{
	char	   *v = PG_ARGISNULL(arg) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(arg));
	char	   *o = PG_NARGS() > old_arg && !PG_ARGISNULL(old_arg) ?
		text_to_cstring(PG_GETARG_TEXT_PP(old_arg)) : NULL;

	if (v && o && strcmp(v, o) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s and \"%s\" name the same argument and disagree: \"%s\" and \"%s\"",
						name, old_name, v, o),
				 errhint("Use %s alone (\"%s\" is its deprecated name).", name, old_name)));
	return v ? v : o;
}

/*
 * gnn.embed(model, table_name, layer, column_name, id_column, version, node_type,
 * incremental, options, as_of, "into", "column"): write every node's
 * embedding into a table, in the caller's transaction.
 */
/*
 * The type of the column gnn.embed writes: vector(cols) when asked for, or
 * when the column written is one already; else real[].  A mismatch (a
 * column of another type or dimension, an index without vector) is an error.
 */
static const char *
EmbedColumnType(Oid relid, const char *into, const char *column, const EmbedOptions *eo, Oid vtype,
				const char *model, int32 want, int32 cols)
{
	AttrNumber	att = OidIsValid(relid) ? get_attnum(relid, column ? column : "embedding") : InvalidAttrNumber;
	Oid			have = att != InvalidAttrNumber ? get_atttype(relid, att) : InvalidOid;
	bool		as_vector;

	if (eo->vector && OidIsValid(have) && have != vtype)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("column \"%s\" of %s is %s, not vector", column ? column : "embedding", into,
						format_type_be(have)),
				 errhint("Drop the column or the table first, or write into a new one.")));
	as_vector = eo->vector || (OidIsValid(vtype) && have == vtype);
	if (as_vector && OidIsValid(have))
	{
		Oid			t,
					coll;
		int32		dims;

		get_atttypetypmodcoll(relid, att, &t, &dims, &coll);

		if (dims > 0 && dims != cols)
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("column \"%s\" of %s is vector(%d), but model \"%s\" embeds in %d dimensions",
							column ? column : "embedding", into, dims, model, cols),
					 errdetail("Layer %d of the model has %d outputs.", want, cols),
					 errhint("Write into a new table or column, or pick a layer of %d outputs with layer =>.", dims)));
	}
	if (eo->index && !as_vector)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("options.index \"%s\" needs a vector column", eo->index),
				 errhint("Add \"type\": \"vector\" to the options (pgvector indexes vector columns).")));
	return as_vector ? format_type_with_typemod(vtype, cols) : "real[]";
}

Datum
gnn_embed(PG_FUNCTION_ARGS)
{
	char	   *model = ModelArg(fcinfo);
	char	   *into = RenamedTextArg(fcinfo, 1, 10, "table_name", "into");
	char	   *column = RenamedTextArg(fcinfo, 3, 11, "column_name", "column");
	char	   *idcol = PG_ARGISNULL(4) ? "id" : text_to_cstring(PG_GETARG_TEXT_PP(4));
	int32		layer = PG_ARGISNULL(2) ? -1 : PG_GETARG_INT32(2);
	int32		version = VersionArg(fcinfo, 5);
	List	   *names;
	RangeVar   *rv;
	Oid			relid;
	char	   *qname;
	Oid			types[5] = {TEXTOID, INT4OID, INT4OID, TEXTOID, TIMESTAMPTZOID};
	Datum		values[5];
	char		nulls[6] = "     ";
	int64		written;
	ModelRow	c;
	char	   *node_type = PG_NARGS() > 6 && !PG_ARGISNULL(6) ? text_to_cstring(PG_GETARG_TEXT_PP(6)) : NULL;
	char	   *key_type = NULL;	/* the node key's SQL type; NULL: bigint */
	int32		type;
	bool		incremental = PG_NARGS() > 7 && !PG_ARGISNULL(7) && PG_GETARG_BOOL(7);
	InferCtx	x;
	EmbedOptions eo;
	Oid			vtype;
	const char *coltype;
	bool		has_as_of;
	TimestampTz as_of;
	GnnTrainRequest *dr = NULL; /* options.peers: over the parts */
	bool		write_local = false;

	GnnRequirePreload();
	{
		Jsonb	   *opts = PG_NARGS() > 8 && !PG_ARGISNULL(8) ? PG_GETARG_JSONB_P(8) : NULL;

		/* over the parts of a model trained over several servers: options.peers, coordinator, dist_timeout_ms, write */
		if (opts && JB_ROOT_IS_OBJECT(opts))
		{
			JsonbValue *wv = getKeyJsonValueFromContainer(&opts->root, "write", 5, NULL);

			dr = palloc0(sizeof(GnnTrainRequest));
			opts = GnnTakeDistOptions(opts, dr);
			if (wv)
			{
				if (wv->type != jbvString ||
					!((wv->val.string.len == 5 && strncmp(wv->val.string.val, "local", 5) == 0) ||
					  (wv->val.string.len == 11 && strncmp(wv->val.string.val, "coordinator", 11) == 0)))
					ereport(ERROR,
							(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
							 errmsg("gnn.embed: options.write must be \"coordinator\" or \"local\""),
							 errhint("\"coordinator\" (the default) writes every row here, \"local\" each server its own rows.")));
				if (dr->dist_npeers == 0)
					ereport(ERROR,
							(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
							 errmsg("gnn.embed: options.write goes with options.peers"),
							 errhint("Name the other servers of a model trained over several: options => '{\"peers\": [...]}'.")));
				write_local = wv->val.string.len == 5;
				opts = DatumGetJsonbP(DirectFunctionCall2(jsonb_delete, JsonbPGetDatum(opts),
														  CStringGetTextDatum("write")));
			}
			if (dr->dist_npeers == 0)
				dr = NULL;
		}
		ParseEmbedOptions(opts, &eo);
	}
	as_of = AsOfArg(fcinfo, 9, &has_as_of);
	vtype = PgvectorType();
	if (eo.vector && !OidIsValid(vtype))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("options.type \"vector\" needs pgvector, which is not installed in this database"),
				 errhint("CREATE EXTENSION vector; or leave the type out to write real[].")));
	if (incremental && (eo.vector || eo.index))
	{
		ereport(NOTICE,
				(errmsg("gnn.embed: writing every row of the table (options type and index are for full writes)")));
		incremental = false;
	}
	if (incremental && has_as_of)
	{
		ereport(NOTICE,
				(errmsg("gnn.embed: writing every row of the table (as_of asks for one moment; incremental writes "
						"follow the rows' own times)")));
		incremental = false;
	}
	if (into == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("gnn.embed needs table_name: the table to write the embeddings into"),
				 errhint("gnn.embed('%s', table_name => 'embeddings').", model)));
	names = stringToQualifiedNameList(into);
	rv = makeRangeVarFromNameList(names);
	relid = RangeVarGetRelid(rv, NoLock, true);
	InferBegin(model, version, OUT_EMBED, layer, has_as_of, as_of, dr != NULL, &x);
	if (dr)
	{
		/*
		 * Over the parts: every server computes its part's rows (the halo's
		 * of each layer from their owners), then every row is written here,
		 * or each server writes its own rows into a table of that name.
		 */
		GnnDistRows rows;
		const char *why = write_local && column ? "writes each server's rows into a table (write \"local\"), not a column (column_name)" :
			write_local && (eo.vector || eo.index) ? "writes each server's rows as real[] (write \"local\": no options type or index)" :
			incremental ? "writes every row (incremental => false)" : NULL;
		/* a typed graph's rows are one node type's (the model's target type unless node_type), by their keys */
		const char *tname = node_type || x.ref.g.num_node_types > 1 ?
			gnn_graph_node_type_name(&x.ref.g, node_type ? GnnResultType(&x.ref.g, node_type, x.mr.graph) : x.type) : NULL;

		if (why)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("gnn.embed over several servers (options.peers) %s", why),
					 errhint("Drop the option that asks for it, or embed where the whole graph is loaded.")));
		/* the target checked before anything is computed, as on one server */
		if (!write_local)
		{
			if (column && !OidIsValid(relid))
				GnnEmbedNoColumnTable(into);
			CheckEmbedTarget(&x.mr, relid, into, column, idcol, vtype);
			coltype = EmbedColumnType(relid, into, column, &eo, vtype, model, x.want, x.cols);
		}
		GnnDistInferRows(dr, InferModel(&x), &x.ref.g, x.mr.graph, x.want, false, x.mr.row_normalise, tname,
						 write_local ? into : NULL, x.mr.temporal ? &x.tc : NULL, &rows);
		if (write_local)
			written = rows.written_elsewhere;
		else
		{
			written = GnnDistWriteRows(into, column, idcol, coltype, &rows);
			if (eo.index)
			{
				Oid			made = RangeVarGetRelid(rv, NoLock, false);

				if (SPI_connect() != SPI_OK_CONNECT)
					elog(ERROR, "SPI_connect failed");
				EmbedIndex(quote_qualified_identifier(get_namespace_name(get_rel_namespace(made)), get_rel_name(made)),
						   made, column ? column : "embedding", vtype, &eo, written);
				SPI_finish();
			}
		}
		InferEnd(&x);
		last_recomputed = write_local ? rows.n : written;
		PG_RETURN_INT64(written);
	}
	type = node_type ? GnnResultType(&x.ref.g, node_type, x.mr.graph) : x.type;
	c = x.mr;
	if (incremental && (column != NULL || !OidIsValid(relid) || x.ref.g.num_node_types > 1 || node_type))
	{
		ereport(NOTICE,
				(errmsg("gnn.embed: writing every row of %s", into),
				 errdetail("%s", column ? "Incremental writes go to an embedding table, not a column." :
						   !OidIsValid(relid) ? "The table does not exist yet." :
						   "Incremental writes follow graphs of one node type.")));
		incremental = false;
	}
	if (incremental)
	{
		Touched		touched;
		int64		recomputed;
		const char *why = NULL;

		CheckEmbedTarget(&c, relid, into, column, idcol, PgvectorType());
		qname = quote_qualified_identifier(get_namespace_name(get_rel_namespace(relid)), get_rel_name(relid));
		if (SPI_connect() != SPI_OK_CONNECT)
			elog(ERROR, "SPI_connect failed");
		if (TouchedSince(relid, &x, &touched, &why))
		{
			written = EmbedIncremental(&x, qname, GnnKeySqlType(c.graph, type), &touched, &recomputed);
			SaveEmbedState(relid, &x);
			SPI_finish();
			InferEnd(&x);
			ereport(NOTICE,
					(errmsg("gnn.embed: recomputed %lld of %lld nodes", (long long) recomputed,
							(long long) x.ref.g.num_nodes)));
			last_recomputed = recomputed;
			PG_RETURN_INT64(written);
		}
		SPI_finish();
		ereport(NOTICE,
				(errmsg("gnn.embed: writing every row of %s", into),
				 errdetail("Incremental writes need the graph's change history since the last write: %s.", why)));
	}
	/* compute first (or find it shared): a bad model or layer fails before anything is written */
	{
		GnnResult	r;

		InferFull(&x, &r);
	}
	CheckEmbedTarget(&c, relid, into, column, idcol, vtype);
	coltype = EmbedColumnType(relid, into, column, &eo, vtype, model, x.want, x.cols);
	values[0] = CStringGetTextDatum(model);
	values[1] = Int32GetDatum(layer);
	nulls[1] = layer >= 0 ? ' ' : 'n';
	values[2] = Int32GetDatum(version);
	nulls[2] = version > 0 ? ' ' : 'n';
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	/* the key's own type, as the loader recorded it (text and uuid keys; integer keys travel as the id) */
	key_type = GnnKeySqlType(c.graph, type);
	values[3] = node_type ? CStringGetTextDatum(node_type) : (Datum) 0;
	nulls[3] = node_type ? ' ' : 'n';
	values[4] = TimestampTzGetDatum(as_of);
	nulls[4] = has_as_of ? ' ' : 'n';
	{
		char	   *sql = GnnEmbedTargetPrepare(into, column, idcol, key_type, coltype,
												"gnn._embedding_rows($1, $2, $3, $4, $5)", &qname);

		if (SPI_execute_with_args(sql, 5, types, values, nulls, false, 0) < 0)
			elog(ERROR, "could not write embeddings into %s", qname);
	}
	written = (int64) SPI_processed;
	if (eo.index)
		EmbedIndex(qname, RangeVarGetRelid(rv, NoLock, false), column ? column : "embedding", vtype, &eo, written);
	/*
	 * the version written from: the start of the next incremental write;
	 * rows as of one moment are no start for one (it follows the rows' own
	 * times), so the table then has none
	 */
	if (column == NULL && x.ref.g.num_node_types <= 1 && node_type == NULL && !has_as_of)
		SaveEmbedState(RangeVarGetRelid(rv, NoLock, false), &x);
	else if (column == NULL && has_as_of)
		GnnCatalogExec("DELETE FROM gnn.embed_state WHERE owner = $1::regrole AND relid = $2", 2,
					   (Oid[]) {OIDOID, OIDOID},
					   (Datum[]) {ObjectIdGetDatum(GetUserId()), ObjectIdGetDatum(RangeVarGetRelid(rv, NoLock, false))},
					   NULL, 0);
	SPI_finish();
	InferEnd(&x);
	last_recomputed = x.ref.g.num_nodes;
	PG_RETURN_INT64(written);
}

/*
 * options.peers (with coordinator, dist_timeout_ms) of a model's reader:
 * the request they make, NULL without peers; anything else is an error.
 */
static GnnTrainRequest *
ReaderDistOptions(Jsonb *opts, const char *fn)
{
	GnnTrainRequest *dr;

	if (!opts)
		return NULL;
	if (!JB_ROOT_IS_OBJECT(opts))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s: options must be a JSON object", fn),
				 errhint("For example '{\"peers\": [\"host=... dbname=...\"]}'.")));
	dr = palloc0(sizeof(GnnTrainRequest));
	opts = GnnTakeDistOptions(opts, dr);
	{
		JsonbIterator *it = JsonbIteratorInit(&opts->root);
		JsonbValue	v;
		JsonbIteratorToken tok;

		while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
			if (tok == WJB_KEY)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("%s: unknown option \"%.*s\"", fn, v.val.string.len, v.val.string.val),
						 errhint("The options are peers, coordinator and dist_timeout_ms (a model trained over several servers).")));
	}
	return dr->dist_npeers > 0 ? dr : NULL;
}


/* the most probable class of a row of probabilities */
static int
ArgMax(const float *p, int32 cols)
{
	int			best = 0;

	for (int j = 1; j < cols; j++)
		if (p[j] > p[best])
			best = j;
	return best;
}

/*
 * gnn.predict(model, nodes, version) -> (id, label, score, class, key):
 * nodes as bigint[] (integer keys) or text[] (keys of any type, as text);
 * NULL: every node of the model's type.  A regression model's score is its
 * predicted value (label and class NULL).
 */
Datum
gnn_predict(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	InferCtx	x;
	int64	   *want = NULL;
	int			nwant = -1;
	GnnResult	r;
	float	   *few = NULL;
	Datum	   *d = NULL;
	bool	   *dn = NULL;
	bool		text_keys = get_fn_expr_argtype(fcinfo->flinfo, 1) == TEXTARRAYOID;
	int64		first = 0;
	bool		has_as_of;
	TimestampTz as_of;
	bool		all_probs = PG_NARGS() > 4 && !PG_ARGISNULL(4) && PG_GETARG_BOOL(4);
	TimestampTz start = GetCurrentTimestamp();
	uint64		serial = 0;
	GnnTrainRequest *dr;		/* options.peers: over the parts */
	GnnDistRows dist;

	GnnRequirePreload();
	dr = ReaderDistOptions(PG_NARGS() > 5 && !PG_ARGISNULL(5) ? PG_GETARG_JSONB_P(5) : NULL, "gnn.predict");
	if (!PG_ARGISNULL(1))
	{
		ArrayType  *a = PG_GETARG_ARRAYTYPE_P(1);

		if (text_keys)
			deconstruct_array(a, TEXTOID, -1, false, TYPALIGN_INT, &d, &dn, &nwant);
		else
			deconstruct_array(a, INT8OID, 8, true, TYPALIGN_DOUBLE, &d, &dn, &nwant);
		for (int i = 0; i < nwant; i++)
			if (dn[i])
				ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("node ids must not be NULL")));
	}
	as_of = AsOfArg(fcinfo, 3, &has_as_of);
	InferBegin(ModelArg(fcinfo), VersionArg(fcinfo, 2), OUT_PROBS, -1, has_as_of, as_of, dr != NULL, &x);
	if (dr)
	{
		/* every row of the model's type over the parts at this server, then the ones asked for (all: by key) */
		DistTypedRows(dr, &x, x.regression ? x.want : -1, !x.regression, &dist);
		if (nwant >= 0)
		{
			want = palloc(sizeof(int64) * Max(nwant, 1));
			for (int i = 0; i < nwant; i++)
				want[i] = DistFindRow(&dist, d[i], text_keys, x.mr.graph);
		}
		InitMaterializedSRF(fcinfo, 0);
		for (int64 k = 0; k < (nwant >= 0 ? nwant : dist.n); k++)
		{
			int64		row = nwant >= 0 ? want[k] : k;
			const float *p = dist.rows + row * dist.cols;
			Datum		vals[6];
			bool		n[6] = {false, false, false, false, true, true};

			vals[0] = Int64GetDatum(dist.ids[row]);
			if (all_probs && !x.regression)
			{
				vals[5] = PointerGetDatum(RowArray(p, dist.cols));
				n[5] = false;
			}
			if (x.regression)
			{
				n[1] = n[3] = true;
				vals[2] = Float4GetDatum(p[0]);
			}
			else
			{
				int			best = ArgMax(p, dist.cols);
				const char *cls = ClassName(&x.mr, best);

				vals[1] = Int32GetDatum(best);
				vals[2] = Float4GetDatum(p[best]);
				vals[3] = cls ? CStringGetTextDatum(cls) : (Datum) 0;
				n[3] = cls == NULL;
			}
			vals[4] = DistKeyText(&dist, row);
			n[4] = false;
			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, vals, n);
		}
		InferEnd(&x);
		return (Datum) 0;
	}
	if (nwant >= 0)
	{
		/* the nodes of the model's type with these keys */
		want = palloc(sizeof(int64) * Max(nwant, 1));
		for (int i = 0; i < nwant; i++)
			want[i] = text_keys ?
				GnnFindNodeText(&x.ref.g, x.type, TextDatumGetCString(d[i]), x.mr.graph) :
				GnnFindNodeInt(&x.ref.g, x.type, DatumGetInt64(d[i]), x.mr.graph);
		few = palloc(sizeof(float) * (Size) Max(nwant, 1) * x.cols);
		if (nwant > 0)
			serial = InferFew(&x, want, nwant, gnn_khop_max_fraction, few);
	}
	else
	{
		InferFull(&x, &r);
		serial = r.serial;
		first = x.ref.g.type_ptr[x.type];
	}
	InitMaterializedSRF(fcinfo, 0);
	for (int64 k = 0; k < (nwant >= 0 ? nwant : x.ref.g.type_ptr[x.type + 1] - first); k++)
	{
		const float *p = nwant >= 0 ? few + k * x.cols : r.out + (first + k) * x.cols;
		int64		v = nwant >= 0 ? want[k] : first + k;
		Datum		vals[6];
		bool		n[6] = {false, false, false, false, false, true};

		vals[0] = Int64GetDatum(x.ref.g.keys[v]);
		/* every class's probability, by class number (probabilities => true) */
		if (all_probs && !x.regression)
		{
			vals[5] = PointerGetDatum(RowArray(p, x.cols));
			n[5] = false;
		}
		if (x.regression)
		{
			n[1] = n[3] = true;
			vals[2] = Float4GetDatum(p[0]);
		}
		else
		{
			int			best = ArgMax(p, x.cols);
			const char *cls = ClassName(&x.mr, best);

			vals[1] = Int32GetDatum(best);
			vals[2] = Float4GetDatum(p[best]);
			vals[3] = cls ? CStringGetTextDatum(cls) : (Datum) 0;
			n[3] = cls == NULL;
		}
		vals[4] = GnnNodeKeyText(&x.ref.g, v);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, vals, n);
	}
	InferEnd(&x);
	GnnCacheNoteLatency(serial, start, -1);
	return (Datum) 0;
}

/* gnn.embedding(model, node, version) -> real[] */
Datum
gnn_embedding(PG_FUNCTION_ARGS)
{
	InferCtx	x;
	int64		node;
	float	   *row;
	bool		has_as_of;
	TimestampTz as_of;
	TimestampTz start = GetCurrentTimestamp();
	uint64		serial;
	GnnTrainRequest *dr;		/* options.peers: over the parts */

	GnnRequirePreload();
	if (PG_ARGISNULL(1))
		PG_RETURN_NULL();
	dr = ReaderDistOptions(PG_NARGS() > 4 && !PG_ARGISNULL(4) ? PG_GETARG_JSONB_P(4) : NULL, "gnn.embedding");
	as_of = AsOfArg(fcinfo, 3, &has_as_of);
	InferBegin(ModelArg(fcinfo), VersionArg(fcinfo, 2), OUT_EMBED, -1, has_as_of, as_of, dr != NULL, &x);
	if (dr)
	{
		/* every row of the model's type over the parts (as gnn.embed computes them), this node's returned */
		GnnDistRows dist;
		int64		k;

		DistTypedRows(dr, &x, x.want, false, &dist);
		k = DistFindRow(&dist, PG_GETARG_DATUM(1), get_fn_expr_argtype(fcinfo->flinfo, 1) == TEXTOID, x.mr.graph);
		InferEnd(&x);
		PG_RETURN_ARRAYTYPE_P(RowArray(dist.rows + k * dist.cols, dist.cols));
	}
	if (get_fn_expr_argtype(fcinfo->flinfo, 1) == TEXTOID)
		node = GnnFindNodeText(&x.ref.g, x.type, TextDatumGetCString(PG_GETARG_DATUM(1)), x.mr.graph);
	else
		node = GnnFindNodeInt(&x.ref.g, x.type, PG_GETARG_INT64(1), x.mr.graph);
	row = palloc(sizeof(float) * x.cols);
	serial = InferFew(&x, &node, 1, gnn_khop_max_fraction, row);
	InferEnd(&x);
	GnnCacheNoteLatency(serial, start, -1);
	PG_RETURN_ARRAYTYPE_P(RowArray(row, x.cols));
}

/*
 * The threads a scan of a shared result runs on, counted among the scans
 * running now (ScanEnd when done).  A scan is bound by memory bandwidth:
 * when other sessions scan at the same time, extra threads only
 * oversubscribe the cores (and OpenMP's waiting burns what is left), so a
 * scan runs on one thread then, on gnn.threads when it is alone.
 */
static int
ScanBegin(void)
{
	GnnCoreThreadsInit();
	return pg_atomic_fetch_add_u32(&gnn_shared->active_scans, 1) > 0 ? 1 : gnn_threads;
}

static void
ScanEnd(void)
{
	pg_atomic_fetch_sub_u32(&gnn_shared->active_scans, 1);
}

/* Ranked rows (id, score, key): the nodes first + idx[i] of g, best first. */
static void
PutRanked(FunctionCallInfo fcinfo, const gnn_graph *g, int64 first, const int64 *idx, const float *score, int64 n)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;

	InitMaterializedSRF(fcinfo, 0);
	for (int64 i = 0; i < n; i++)
	{
		Datum		v[3];
		bool		nl[3] = {false, false, false};

		v[0] = Int64GetDatum(g->keys[first + idx[i]]);
		v[1] = Float4GetDatum(score[i]);
		v[2] = GnnNodeKeyText(g, first + idx[i]);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, v, nl);
	}
}

/*
 * gnn.similar(model, node, k, version, as_of, exact) -> (id, score): the k
 * nearest by cosine similarity over the shared embeddings: from the
 * result's approximate index when it has one (gnn.similar_ef candidates;
 * the first call on a result of at least gnn.similar_index_min_rows rows
 * asks a background worker to build it), else (or exact => true) by one
 * multi-threaded pass over every row.
 */
Datum
gnn_similar(PG_FUNCTION_ARGS)
{
	InferCtx	x;
	GnnResult	r;
	int64		row;
	int32		k = PG_ARGISNULL(2) ? 10 : PG_GETARG_INT32(2);
	int64	   *idx;
	float	   *score;
	int64		got;
	int64		first,
				count;
	bool		has_as_of;
	TimestampTz as_of;
	TimestampTz start = GetCurrentTimestamp();
	bool		exact = PG_NARGS() > 5 && !PG_ARGISNULL(5) && PG_GETARG_BOOL(5);
	bool		exact_scan;
	const void *ix = NULL;
	Size		ixbytes;
	GnnTrainRequest *dr;		/* options.peers: over the parts */

	GnnRequirePreload();
	if (PG_ARGISNULL(1))
		ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("node must not be NULL")));
	if (k < 1 || k > 100000)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("k must be between 1 and 100000 (got %d)", k)));
	dr = ReaderDistOptions(PG_NARGS() > 6 && !PG_ARGISNULL(6) ? PG_GETARG_JSONB_P(6) : NULL, "gnn.similar");
	as_of = AsOfArg(fcinfo, 4, &has_as_of);
	InferBegin(ModelArg(fcinfo), VersionArg(fcinfo, 3), OUT_EMBED, -1, has_as_of, as_of, dr != NULL, &x);
	if (dr)
	{
		/* every node's embedding over the parts here, then one exact scan of them */
		GnnDistRows dist;
		int64		q;
		float	   *norms;
		ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;

		DistTypedRows(dr, &x, x.want, false, &dist);
		q = DistFindRow(&dist, PG_GETARG_DATUM(1), get_fn_expr_argtype(fcinfo->flinfo, 1) == TEXTOID, x.mr.graph);
		norms = palloc(sizeof(float) * Max(dist.n, 1));
		for (int64 i = 0; i < dist.n; i++)
		{
			double		s2 = 0;

			for (int32 j = 0; j < dist.cols; j++)
				s2 += (double) dist.rows[i * dist.cols + j] * dist.rows[i * dist.cols + j];
			norms[i] = (float) sqrt(s2);
		}
		idx = palloc(sizeof(int64) * k);
		score = palloc(sizeof(float) * k);
		got = gnn_topk_cosine(dist.rows, norms, dist.n, dist.cols, q, k, 1, idx, score);
		InitMaterializedSRF(fcinfo, 0);
		for (int64 i = 0; i < got; i++)
		{
			Datum		v[3];
			bool		nl[3] = {false, false, false};

			v[0] = Int64GetDatum(dist.ids[idx[i]]);
			v[1] = Float4GetDatum(score[i]);
			v[2] = DistKeyText(&dist, idx[i]);
			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, v, nl);
		}
		InferEnd(&x);
		return (Datum) 0;
	}
	InferFull(&x, &r);
	/* the node's row, and the rows of its type: the candidates */
	if (get_fn_expr_argtype(fcinfo->flinfo, 1) == TEXTOID)
		row = GnnFindNodeText(&x.ref.g, x.type, TextDatumGetCString(PG_GETARG_DATUM(1)), x.mr.graph);
	else
		row = GnnFindNodeInt(&x.ref.g, x.type, PG_GETARG_INT64(1), x.mr.graph);
	first = x.ref.g.type_ptr[x.type];
	count = x.ref.g.type_ptr[x.type + 1] - first;
	idx = palloc(sizeof(int64) * k);
	score = palloc(sizeof(float) * k);
	got = GNN_HNSW_EXACT;
	if (!exact && count >= Max(gnn_similar_index_min_rows, 2))
		ix = GnnCacheIndex(&r, GNN_HNSW_COSINE, first, count, true, &ixbytes);
	if (ix)
	{
		/* a few hundred rows read: no prefault, whatever the result's size */
		got = gnn_hnsw_search(ix, r.out + first * r.cols, r.norms + first, r.cols, row - first, k,
							  gnn_similar_ef, idx, score);
		if (got == -1)
			ereport(ERROR, (errcode(ERRCODE_OUT_OF_MEMORY), errmsg("out of memory searching the index of model \"%s\"", x.mr.name)));
	}
	exact_scan = got == GNN_HNSW_EXACT;
	if (exact_scan)
	{
		int			nt;

		if (r.fresh)
			GnnResultPrefault(&r);	/* a first scan in this session: map its pages in one go */
		nt = ScanBegin();

		PG_TRY();
		{
			const float *out = r.out + first * r.cols;
			const uint16 *e16 = r.emb16 ? r.emb16 + first * r.cols : NULL;
			const float *norms = r.norms + first;

			got = e16 ? gnn_topk_cosine_bf16(out, e16, norms, count, r.cols, row - first, k, nt, idx, score) :
				gnn_topk_cosine(out, norms, count, r.cols, row - first, k, nt, idx, score);
		}
		PG_FINALLY();
		{
			ScanEnd();
		}
		PG_END_TRY();
	}
	PutRanked(fcinfo, &x.ref.g, first, idx, score, got);
	InferEnd(&x);
	GnnCacheNoteLatency(r.serial, start, ix != NULL && !exact_scan ? GNN_HNSW_COSINE : -1);
	return (Datum) 0;
}

/* ------------------------------------------------------------------ links */

/*
 * Which nodes a link model scores: the relation given (edge_type =>), else
 * the one the model was trained on, from its source type to its destination
 * type (*rel >= 0); without one, nodes of the results' type on both ends
 * (*rel = -1).  Link-prediction and node2vec models only.
 */
static void
LinkTypes(InferCtx *x, const char *edge_type, int32 *rel, int32 *src_type, int32 *dst_type)
{
	const gnn_graph *g = &x->ref.g;
	const char *name = edge_type ? edge_type : x->mr.edge_type[0] ? x->mr.edge_type : NULL;

	if (strcmp(x->mr.task, "link_prediction") != 0 && strcmp(x->mr.task, "embedding") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("model \"%s\" was trained for %s: it scores no links", x->mr.name, x->mr.task),
				 errhint("Score links with a model trained with task => 'link_prediction', or model => 'node2vec'.")));
	*rel = -1;
	*src_type = *dst_type = x->type;
	if (!name)
		return;
	*rel = gnn_graph_edge_type_by_name(g, name);
	if (*rel < 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("graph \"%s\" has no edge type \"%s\"", x->mr.graph, name),
				 errdetail("Its edge types are: %s.", GnnTypeNames(g, true))));
	*src_type = g->etypes[*rel].src_type;
	*dst_type = g->etypes[*rel].dst_type;
}

/* A node of type t by its id (bigint) or key (text), from an array element or an argument. */
static int64
LinkNode(InferCtx *x, int32 t, Oid type, Datum d)
{
	if (type == TEXTOID)
		return GnnFindNodeText(&x->ref.g, t, TextDatumGetCString(d), x->mr.graph);
	return GnnFindNodeInt(&x->ref.g, t, DatumGetInt64(d), x->mr.graph);
}

/* The elements of a bigint[] or text[] argument (no NULLs). */
static int
LinkArray(FunctionCallInfo fcinfo, int argno, const char *what, Oid *elem, Datum **vals)
{
	ArrayType  *a;
	bool	   *nulls;
	int			n;

	if (PG_ARGISNULL(argno))
		ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("%s must not be NULL", what)));
	a = PG_GETARG_ARRAYTYPE_P(argno);
	*elem = ARR_ELEMTYPE(a);
	if (ARR_NDIM(a) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("%s must be a one-dimensional array", what)));
	if (*elem == INT8OID)
		deconstruct_array(a, INT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE, vals, &nulls, &n);
	else
		deconstruct_array(a, TEXTOID, -1, false, TYPALIGN_INT, vals, &nulls, &n);
	for (int i = 0; i < n; i++)
		if (nulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("element %d of %s is NULL", i + 1, what),
					 errhint("Every element names a node.")));
	return n;
}

/*
 * gnn.score(model, src[], dst[], edge_type, version) -> (src, dst, score,
 * src_key, dst_key): the model's link score of each pair, the dot product
 * of the two embeddings (the logit its training used; sigmoid(score) is the
 * link's probability under the model), one row per pair in order.  The
 * rows of the distinct nodes are computed on their neighbourhoods (or read
 * from the shared result).
 */
Datum
gnn_score(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	InferCtx	x;
	Datum	   *sv,
			   *dv;
	Oid			st,
				dt;
	int			n,
				nd;
	int32		rel,
				ts,
				td;
	int64	   *nodes;
	float	   *rows;

	GnnRequirePreload();
	n = LinkArray(fcinfo, 1, "src", &st, &sv);
	nd = LinkArray(fcinfo, 2, "dst", &dt, &dv);
	if (n != nd)
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("src has %d nodes and dst %d: a pair is one of each", n, nd),
				 errhint("Pass arrays of the same length, src[i] -> dst[i].")));
	if (n > 1000000)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("gnn.score takes at most 1000000 pairs per call (got %d)", n)));
	InferBegin(ModelArg(fcinfo), VersionArg(fcinfo, 4), OUT_EMBED, -1, false, 0, false, &x);
	LinkTypes(&x, PG_ARGISNULL(3) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(3)), &rel, &ts, &td);
	nodes = palloc(sizeof(int64) * Max(2 * n, 1));
	for (int i = 0; i < n; i++)
	{
		nodes[2 * i] = LinkNode(&x, ts, st, sv[i]);
		nodes[2 * i + 1] = LinkNode(&x, td, dt, dv[i]);
	}
	rows = palloc(sizeof(float) * (Size) Max(2 * n, 1) * x.cols);
	if (n > 0)
		InferFew(&x, nodes, 2 * n, gnn_khop_max_fraction, rows);
	InitMaterializedSRF(fcinfo, 0);
	for (int i = 0; i < n; i++)
	{
		Datum		v[5];
		bool		nl[5] = {false, false, false, false, false};

		v[0] = Int64GetDatum(x.ref.g.keys[nodes[2 * i]]);
		v[1] = Int64GetDatum(x.ref.g.keys[nodes[2 * i + 1]]);
		v[2] = Float4GetDatum(gnn_dot(rows + (Size) 2 * i * x.cols, rows + (Size) (2 * i + 1) * x.cols, x.cols));
		v[3] = GnnNodeKeyText(&x.ref.g, nodes[2 * i]);
		v[4] = GnnNodeKeyText(&x.ref.g, nodes[2 * i + 1]);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, v, nl);
	}
	InferEnd(&x);
	return (Datum) 0;
}

/* gnn.score(model, src, dst, edge_type, version) -> real: one pair, by ids or keys */
Datum
gnn_score_pair(PG_FUNCTION_ARGS)
{
	InferCtx	x;
	int64		nodes[2];
	float	   *rows;
	int32		rel,
				ts,
				td;
	float		s;

	GnnRequirePreload();
	if (PG_ARGISNULL(1) || PG_ARGISNULL(2))
		ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("src and dst must not be NULL")));
	InferBegin(ModelArg(fcinfo), VersionArg(fcinfo, 4), OUT_EMBED, -1, false, 0, false, &x);
	LinkTypes(&x, PG_ARGISNULL(3) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(3)), &rel, &ts, &td);
	nodes[0] = LinkNode(&x, ts, get_fn_expr_argtype(fcinfo->flinfo, 1), PG_GETARG_DATUM(1));
	nodes[1] = LinkNode(&x, td, get_fn_expr_argtype(fcinfo->flinfo, 2), PG_GETARG_DATUM(2));
	rows = palloc(sizeof(float) * 2 * x.cols);
	InferFew(&x, nodes, 2, gnn_khop_max_fraction, rows);
	s = gnn_dot(rows, rows + x.cols, x.cols);
	InferEnd(&x);
	PG_RETURN_FLOAT4(s);
}

static int
CmpInt64(const void *a, const void *b)
{
	int64		x = *(const int64 *) a,
				y = *(const int64 *) b;

	return x < y ? -1 : x > y;
}

/*
 * gnn.recommend(model, node, k, exclude_existing, edge_type, version) ->
 * (id, score, key): the k nodes the model scores highest as the node's new
 * partners (the relation's destination type, or the node's own), by the
 * dot product of embeddings over the shared result, one parallel pass;
 * exclude_existing leaves out the node itself and the partners it has (its
 * out-neighbours through the relation, or through any edge without one).
 */
Datum
gnn_recommend(PG_FUNCTION_ARGS)
{
	InferCtx	x;
	GnnResult	r;
	int32		k = PG_ARGISNULL(2) ? 10 : PG_GETARG_INT32(2);
	bool		exclude = PG_ARGISNULL(3) ? true : PG_GETARG_BOOL(3);
	int32		rel,
				ts,
				td;
	int64		v,
				first,
				count,
				nex = 0,
				got;
	int64	   *ex = NULL,
			   *idx;
	float	   *score;
	const gnn_graph *g;
	TimestampTz start = GetCurrentTimestamp();
	bool		exact = PG_NARGS() > 6 && !PG_ARGISNULL(6) && PG_GETARG_BOOL(6);
	const void *ix = NULL;
	Size		ixbytes;

	GnnRequirePreload();
	if (PG_ARGISNULL(1))
		ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("node must not be NULL")));
	if (k < 1 || k > 100000)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("k must be between 1 and 100000 (got %d)", k)));
	InferBegin(ModelArg(fcinfo), VersionArg(fcinfo, 5), OUT_EMBED, -1, false, 0, false, &x);
	LinkTypes(&x, PG_ARGISNULL(4) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(4)), &rel, &ts, &td);
	g = &x.ref.g;
	v = LinkNode(&x, ts, get_fn_expr_argtype(fcinfo->flinfo, 1), PG_GETARG_DATUM(1));
	first = g->type_ptr[td];
	count = g->type_ptr[td + 1] - first;
	if (exclude)
	{
		const int32 *nb;
		const int32 *rows_unused;
		int64		deg = gnn_graph_out_row(g, v, &nb, NULL, &rows_unused);
		/* a graph of several relations is a schema graph, which refreshes by reloading: no delta */
		int64		base = g->has_delta ? 0 : nb - g->indices;
		bool		in_base = !g->has_delta;

		ex = palloc(sizeof(int64) * (deg + 1));
		for (int64 p = 0; p < deg; p++)
		{
			/* the relation's arcs only (arc types are kept for graphs of several relations) */
			if (rel >= 0 && g->arc_type && in_base && g->arc_type[base + p] != rel)
				continue;
			if (nb[p] >= first && nb[p] < first + count)
				ex[nex++] = nb[p] - first;
		}
		if (v >= first && v < first + count)
			ex[nex++] = v - first;
		qsort(ex, nex, sizeof(int64), CmpInt64);
		{
			int64		u = 0;

			for (int64 i = 0; i < nex; i++)
				if (u == 0 || ex[u - 1] != ex[i])
					ex[u++] = ex[i];
			nex = u;
		}
	}
	InferFull(&x, &r);
	idx = palloc(sizeof(int64) * k);
	score = palloc(sizeof(float) * k);
	got = GNN_HNSW_EXACT;
	if (!exact && count >= Max(gnn_similar_index_min_rows, 2))
		ix = GnnCacheIndex(&r, GNN_HNSW_DOT, first, count, true, &ixbytes);
	if (ix)
		got = gnn_hnsw_search_dot(ix, r.out + first * r.cols, r.norms + first, r.cols, r.out + v * r.cols, ex, nex, k,
								  gnn_similar_ef, idx, score);
	if (got == GNN_HNSW_EXACT)
	{
		int			nt;

		ix = NULL;
		if (r.fresh)
			GnnResultPrefault(&r);
		nt = ScanBegin();

		PG_TRY();
		{
			got = gnn_topk_dot(r.out + v * r.cols, r.out + first * r.cols, count, r.cols, ex, nex, k, nt, idx, score);
		}
		PG_FINALLY();
		{
			ScanEnd();
		}
		PG_END_TRY();
	}
	if (got < 0)
		ereport(ERROR, (errcode(ERRCODE_OUT_OF_MEMORY), errmsg("out of memory ranking %lld candidates", (long long) count)));
	PutRanked(fcinfo, g, first, idx, score, got);
	InferEnd(&x);
	GnnCacheNoteLatency(r.serial, start, ix ? GNN_HNSW_DOT : -1);
	return (Datum) 0;
}

/* ------------------------------------------------------------------ export, import */

/*
 * gnn.export_model(name, version) -> bytea: the model's weights as
 * safetensors (nn/safetensors.h: PyG's module layout for GCN, mean
 * GraphSAGE and node2vec, gnn's for the others), with what it is in the
 * header's metadata: name, version, graph, task, row_normalise and the
 * class names of text labels.
 */
Datum
gnn_export_model(PG_FUNCTION_ARGS)
{
	ModelRow	mr;
	gnn_model  *m;
	uint64		seed;
	void	   *blob = NULL;
	size_t		len = 0;
	gnn_error	err;
	bytea	   *out;
	const char *k[8];
	const char *v[8];
	int			n = 0;
	StringInfoData cls;

	GnnRequirePreload();
	ReadModel(ModelArg(fcinfo), VersionArg(fcinfo, 1), false, &mr);
	m = LoadModel(&mr, &seed);
	k[n] = "name";
	v[n++] = mr.name;
	k[n] = "version";
	v[n++] = psprintf("%d", mr.version);
	k[n] = "graph";
	v[n++] = mr.graph;
	k[n] = "task";
	v[n++] = mr.task;
	k[n] = "row_normalise";
	v[n++] = mr.row_normalise ? "true" : "false";
	k[n] = "exporter";
	v[n++] = "gnn (PostgreSQL extension)";
	if (mr.nclasses > 0)
	{
		const char *c = mr.class_names;

		initStringInfo(&cls);
		appendStringInfoChar(&cls, '[');
		for (int i = 0; i < mr.nclasses; i++)
		{
			if (i)
				appendStringInfoChar(&cls, ',');
			escape_json(&cls, c);
			c += strlen(c) + 1;
		}
		appendStringInfoChar(&cls, ']');
		k[n] = "classes";
		v[n++] = cls.data;
	}
	if (gnn_model_to_safetensors(m, k, v, n, &blob, &len, &err) != GNN_OK)
		GnnReportCoreError(psprintf("exporting model \"%s\" failed", mr.name), &err);
	if (len > MaxAllocSize - VARHDRSZ)
	{
		free(blob);
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("model \"%s\" exports to %zu bytes, more than a bytea holds", mr.name, len)));
	}
	out = palloc(VARHDRSZ + len);
	SET_VARSIZE(out, VARHDRSZ + len);
	memcpy(VARDATA(out), blob, len);
	free(blob);
	PG_RETURN_BYTEA_P(out);
}

/*
 * gnn.import_model(name, blob, graph, task, options) -> version: weights
 * trained elsewhere (safetensors, either layout) registered as the next
 * version of the calling role's model name, for graph: checked against its
 * feature width (node2vec: its node count) and, for a classifier, its
 * classes.  options.row_normalise says whether the model reads feature rows
 * divided by their sums (the blob's metadata, else gnn.train's default).
 */
Datum
gnn_import_model(PG_FUNCTION_ARGS)
{
	char	   *name,
			   *graph,
			   *task;
	bytea	   *b;
	/* what the cleanup frees, in memory the error path still sees (not locals a longjmp may lose) */
	struct
	{
		gnn_backend *be;
		gnn_model  *m;
		gnn_st_meta meta;
		void	   *blob;
	}		   *h = palloc0(sizeof(*h));
	gnn_error	err;
	gnn_status	st;
	const gnn_model_config *mc;
	GnnGraphRef ref;
	int64		nodes;
	int32		feat_dim,
				classes;
	bool		typed,
				row_normalise;
	const char *rn;
	size_t		len = 0;
	int32		version = 0;
	Datum		class_arr = (Datum) 0;
	Jsonb	   *opts = PG_NARGS() > 4 && !PG_ARGISNULL(4) ? PG_GETARG_JSONB_P(4) : NULL;

	GnnRequirePreload();
	if (PG_ARGISNULL(0) || PG_ARGISNULL(1) || PG_ARGISNULL(2))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("%s must not be NULL", PG_ARGISNULL(0) ? "name" : PG_ARGISNULL(1) ? "blob" : "graph")));
	name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	b = PG_GETARG_BYTEA_PP(1);
	graph = text_to_cstring(PG_GETARG_TEXT_PP(2));
	task = PG_ARGISNULL(3) ? "node_classification" : text_to_cstring(PG_GETARG_TEXT_PP(3));
	if (name[0] == '\0' || strlen(name) >= NAMEDATALEN)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("model name must be 1 to %d bytes", NAMEDATALEN - 1)));
	if (strcmp(task, "node_classification") != 0 && strcmp(task, "link_prediction") != 0 &&
		strcmp(task, "regression") != 0 && strcmp(task, "embedding") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("unknown task \"%s\"", task),
				 errhint("Accepted values: node_classification, link_prediction, regression, embedding.")));
	/* the graph the model is for: the caller's */
	GnnGraphAcquireView(graph, &ref);
	nodes = ref.g.num_nodes;
	feat_dim = ref.g.feat_dim;
	classes = ref.g.num_classes;
	typed = ref.g.num_node_types > 1 || ref.g.num_edge_types > 1;
	/* a classifier keeps the class names of the graph's text labels, as a trained one does */
	if (ref.g.class_names && classes > 0)
	{
		Datum	   *cd = palloc(sizeof(Datum) * classes);
		const char *c = ref.g.class_names;

		for (int i = 0; i < classes; i++)
		{
			cd[i] = CStringGetTextDatum(c);
			c += strlen(c) + 1;
		}
		class_arr = PointerGetDatum(construct_array(cd, classes, TEXTOID, -1, false, TYPALIGN_INT));
	}
	GnnGraphRelease(&ref);

	GnnCoreThreadsInit();
	if (gnn_backend_cpu_create(1, &h->be, &err) != GNN_OK)
		GnnReportCoreError("could not create the CPU backend", &err);
	PG_TRY();
	{
		st = gnn_model_from_safetensors(h->be, VARDATA_ANY(b), VARSIZE_ANY_EXHDR(b), &h->m, &h->meta, &err);
		if (st != GNN_OK)
			ereport(ERROR,
					(errcode(st == GNN_ERR_NOMEM ? ERRCODE_OUT_OF_MEMORY : ERRCODE_INVALID_BINARY_REPRESENTATION),
					 errmsg("blob is not a model gnn can import: %s", err.msg),
					 errhint("Pass a safetensors file: PyG's GCN, GraphSAGE or Node2Vec state_dict, or one gnn.export_model wrote.")));
		mc = gnn_model_config_of(h->m);
		if (mc->kind == GNN_MODEL_NODE2VEC)
		{
			task = "embedding";
			if (mc->in_dim != nodes)
				ereport(ERROR,
						(errcode(ERRCODE_DATATYPE_MISMATCH),
						 errmsg("the node2vec model has embeddings of %d nodes, but graph \"%s\" has %lld",
								mc->in_dim, graph, (long long) nodes),
						 errhint("Import it for the graph it was trained on (nodes in the same order).")));
		}
		else
		{
			if (strcmp(task, "embedding") == 0)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("task \"embedding\" is node2vec's; this blob holds a %s model", gnn_model_kind_name(mc->kind))));
			if (mc->in_dim != feat_dim)
				ereport(ERROR,
						(errcode(ERRCODE_DATATYPE_MISMATCH),
						 errmsg("the model takes %d features, but graph \"%s\" has %d", mc->in_dim, graph, feat_dim),
						 errhint("Load the graph with the features the model was trained on.")));
			if (strcmp(task, "node_classification") == 0 && mc->out_dim != classes)
				ereport(ERROR,
						(errcode(ERRCODE_DATATYPE_MISMATCH),
						 errmsg("the model has %d outputs, but graph \"%s\" has %d classes", mc->out_dim, graph, classes),
						 errhint(classes == 0 ? "Load the graph with its label column, or import with task => 'link_prediction'." :
								 "A classifier has one output per class of the graph.")));
			if (strcmp(task, "regression") == 0 && mc->out_dim != 1)
				ereport(ERROR,
						(errcode(ERRCODE_DATATYPE_MISMATCH),
						 errmsg("a regression model has one output; this one has %d", mc->out_dim)));
		}
		rn = gnn_st_meta_get(&h->meta, "row_normalise");
		row_normalise = !typed;
		if (rn)
			row_normalise = strcmp(rn, "true") == 0;
		if (opts)
		{
			JsonbValue *jv = getKeyJsonValueFromContainer(&opts->root, "row_normalise", 13, NULL);

			if (jv && jv->type == jbvBool)
				row_normalise = jv->val.boolean;
			else if (jv)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("option \"row_normalise\" must be true or false")));
		}
		{
			gnn_model_meta mm;

			memset(&mm, 0, sizeof(mm));
			mm.val_acc = mm.test_acc = NAN;
			if (gnn_model_serialize(h->m, &mm, &h->blob, &len, &err) != GNN_OK)
				GnnReportCoreError("could not serialise the imported model", &err);
		}
		/* the next version of the name, as a training job numbers it */
		{
			Oid			t[9] = {TEXTOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID, BYTEAOID, OIDOID, TEXTARRAYOID};
			Datum		v[9];
			char		nl[10] = "         ";
			bytea	   *wb = palloc(VARHDRSZ + len);
			StringInfoData params,
						metrics;
			const char *src = gnn_st_meta_get(&h->meta, "exporter");

			SET_VARSIZE(wb, VARHDRSZ + len);
			memcpy(VARDATA(wb), h->blob, len);
			initStringInfo(&params);
			appendStringInfo(&params, "{\"model\": \"%s\", \"task\": \"%s\", \"hidden\": %d, \"layers\": %d, "
							 "\"aggregator\": \"%s\", \"row_normalise\": %s, \"imported\": true}",
							 gnn_model_kind_name(mc->kind), task, mc->hidden, mc->layers,
							 mc->aggr == GNN_AGGR_POOL ? "pool" : "mean", row_normalise ? "true" : "false");
			initStringInfo(&metrics);
			appendStringInfoString(&metrics, "{\"imported\": true, \"source\": ");
			escape_json(&metrics, src ? src : "unknown");
			appendStringInfoString(&metrics, ", \"layout\": ");
			escape_json(&metrics, gnn_st_meta_get(&h->meta, "layout") ? gnn_st_meta_get(&h->meta, "layout") : "pyg");
			appendStringInfoChar(&metrics, '}');
			v[0] = CStringGetTextDatum(name);
			v[1] = CStringGetTextDatum(graph);
			v[2] = CStringGetTextDatum(gnn_model_kind_name(mc->kind));
			v[3] = CStringGetTextDatum(task);
			v[4] = CStringGetTextDatum(params.data);
			v[5] = CStringGetTextDatum(metrics.data);
			v[6] = PointerGetDatum(wb);
			v[7] = ObjectIdGetDatum(GetUserId());
			v[8] = class_arr;
			nl[8] = class_arr && strcmp(task, "node_classification") == 0 ? ' ' : 'n';
			if (SPI_connect() != SPI_OK_CONNECT)
				elog(ERROR, "SPI_connect failed");
			if (SPI_execute_with_args("SELECT pg_advisory_xact_lock(hashtext('gnn.models:' || $8::oid::text || ':' || $1))",
									  8, t, v, NULL, false, 0) != SPI_OK_SELECT)
				elog(ERROR, "could not lock model \"%s\"", name);
			GnnCatalogExec("INSERT INTO gnn.models (name, version, graph, model, task, params, metrics, weights, owner, classes) "
						   "SELECT $1, coalesce(max(version), 0) + 1, $2, $3, $4, $5::jsonb, $6::jsonb, $7, "
						   "$8::oid::regrole, $9 FROM gnn.models WHERE name = $1 AND owner = $8::oid::regrole "
						   "RETURNING version", 9, t, v, nl, 0);
			if (SPI_processed == 1)
			{
				bool		isnull;

				version = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
			}
			SPI_finish();
		}
	}
	PG_FINALLY();
	{
		free(h->blob);
		gnn_st_meta_free(&h->meta);
		gnn_model_free(h->m);
		gnn_backend_destroy(h->be);
	}
	PG_END_TRY();
	PG_RETURN_INT32(version);
}

/* gnn.cache_drop(model, version): empties the shared results of the caller's model */
Datum
gnn_cache_drop(PG_FUNCTION_ARGS)
{
	GnnRequirePreload();
	PG_RETURN_BOOL(GnnCacheDrop(ModelArg(fcinfo), VersionArg(fcinfo, 1)) > 0);
}

/* ------------------------------------------------------------------ planner support */

/*
 * How many rows a call returns, for the planner (SupportRequestRows):
 * gnn.similar and gnn.recommend return k (a constant), gnn.predict and
 * gnn.score a row per node or pair asked for (a constant array); otherwise
 * the functions' ROWS stand.  So a join on gnn.similar(..., 50) plans for 50.
 */
PG_FUNCTION_INFO_V1(gnn_rows_support);
Datum
gnn_rows_support(PG_FUNCTION_ARGS)
{
	Node	   *rawreq = (Node *) PG_GETARG_POINTER(0);
	SupportRequestRows *req;
	FuncExpr   *fe;
	char	   *fn;
	Node	   *arg;

	if (!IsA(rawreq, SupportRequestRows))
		PG_RETURN_POINTER(NULL);
	req = (SupportRequestRows *) rawreq;
	if (req->node == NULL || !IsA(req->node, FuncExpr))
		PG_RETURN_POINTER(NULL);
	fe = (FuncExpr *) req->node;
	fn = get_func_name(fe->funcid);
	if (fn == NULL)
		PG_RETURN_POINTER(NULL);
	if ((strcmp(fn, "similar") == 0 || strcmp(fn, "recommend") == 0) && list_length(fe->args) >= 3)
	{
		arg = (Node *) lthird(fe->args);
		if (IsA(arg, Const) && !((Const *) arg)->constisnull && ((Const *) arg)->consttype == INT4OID)
		{
			req->rows = Max(DatumGetInt32(((Const *) arg)->constvalue), 0);
			PG_RETURN_POINTER(req);
		}
	}
	else if ((strcmp(fn, "predict") == 0 || strcmp(fn, "score") == 0) && list_length(fe->args) >= 2)
	{
		arg = (Node *) lsecond(fe->args);
		if (IsA(arg, Const) && !((Const *) arg)->constisnull && type_is_array(((Const *) arg)->consttype))
		{
			ArrayType  *a = DatumGetArrayTypeP(((Const *) arg)->constvalue);

			req->rows = ArrayGetNItems(ARR_NDIM(a), ARR_DIMS(a));
			PG_RETURN_POINTER(req);
		}
	}
	PG_RETURN_POINTER(NULL);
}
