/*
 * funcs_sample.c: SQL access to the samplers: gnn.sample_neighbors and
 * gnn.random_walk.  Both return original node ids; the same seed gives the
 * same rows (the core's samples do not depend on the thread count).
 */
#include "common/gnn_pg.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "fmgr.h"
#include "funcapi.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"

#include "sample/sample.h"

PG_FUNCTION_INFO_V1(gnn_sample_neighbors);
PG_FUNCTION_INFO_V1(gnn_random_walk_sql);

#define GNN_MAX_SEEDS 10000000

/* elements of a one-dimensional array without NULLs, as int64 */
static int64 *
ArrayInts(ArrayType *a, const char *what, int *n)
{
	Oid			et = ARR_ELEMTYPE(a);
	int16		len;
	bool		byval;
	char		align;
	Datum	   *d;
	bool	   *nulls;
	int64	   *out;

	if (ARR_NDIM(a) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("%s must be a one-dimensional array", what)));
	get_typlenbyvalalign(et, &len, &byval, &align);
	deconstruct_array(a, et, len, byval, align, &d, &nulls, n);
	if (*n == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must not be empty", what)));
	out = palloc(sizeof(int64) * *n);
	for (int i = 0; i < *n; i++)
	{
		if (nulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("%s must not contain NULLs (element %d is NULL)", what, i + 1)));
		out[i] = et == INT8OID ? DatumGetInt64(d[i]) : (int64) DatumGetInt32(d[i]);
	}
	return out;
}

static uint64
SeedArg(FunctionCallInfo fcinfo, int i)
{
	uint32		s;

	if (!PG_ARGISNULL(i))
		return (uint64) (uint32) PG_GETARG_INT32(i);
	if (!pg_strong_random(&s, sizeof(s)))
		s = (uint32) random();
	return s;
}

/*
 * The nodes a sampling call starts from: ids[] (bigint[]) or, when the
 * keys argument is given, keys (text[]) of one node type: node_type, else
 * the type results are about (a schema graph's target; a homogeneous
 * graph's only type).  A homogeneous graph's ids are its node ids, a schema
 * graph's its tables' keys.
 */
static int32 *
StartNodes(GnnGraphRef *ref, FunctionCallInfo fcinfo, const int64 *ids, int nids, int type_arg, int keys_arg,
		   const char *what, int *n)
{
	const gnn_graph *g = &ref->g;
	char	   *type_name = PG_NARGS() > type_arg && !PG_ARGISNULL(type_arg) ?
		text_to_cstring(PG_GETARG_TEXT_PP(type_arg)) : NULL;
	int32	   *out = NULL;

	PG_TRY();
	{
		int32		t = GnnResultType(g, type_name, ref->entry.name);

		if (PG_NARGS() > keys_arg && !PG_ARGISNULL(keys_arg))
		{
			Datum	   *elems;
			bool	   *nulls;
			int			nk;

			deconstruct_array(PG_GETARG_ARRAYTYPE_P(keys_arg), TEXTOID, -1, false, TYPALIGN_INT,
							  &elems, &nulls, &nk);
			if (nk > GNN_MAX_SEEDS)
				ereport(ERROR,
						(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
						 errmsg("%d %ss given, at most %d are allowed", nk, what, GNN_MAX_SEEDS)));
			out = palloc(sizeof(int32) * Max(nk, 1));
			for (int i = 0; i < nk; i++)
			{
				if (nulls[i])
					ereport(ERROR,
							(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
							 errmsg("%s key %d is NULL", what, i + 1)));
				out[i] = (int32) GnnFindNodeText(g, t, TextDatumGetCString(elems[i]), ref->entry.name);
			}
			*n = nk;
		}
		else
		{
			out = palloc(sizeof(int32) * Max(nids, 1));
			for (int i = 0; i < nids; i++)
			{
				int64		v = gnn_graph_find_typed(g, t, ids[i]);

				if (v < 0)
					ereport(ERROR,
							(errcode(ERRCODE_UNDEFINED_OBJECT),
							 errmsg("%s node %lld is not in graph \"%s\"", what, (long long) ids[i], ref->entry.name),
							 g->num_node_types > 1 ?
							 errhint("These are keys of %s (node_type chooses the table, by default the target); pass text or uuid keys as keys => ARRAY[...].",
									 gnn_graph_node_type_name(g, t)) :
							 errhint("gnn.neighbors() and the graph's node table show which ids exist.")));
				out[i] = (int32) v;
			}
			*n = nids;
		}
	}
	PG_CATCH();
	{
		GnnGraphRelease(ref);
		PG_RE_THROW();
	}
	PG_END_TRY();
	return out;
}

/* A node's type name, for results. */
static Datum
TypeNameDatum(const gnn_graph *g, int64 v)
{
	const char *nm = gnn_graph_node_type_name(g, gnn_graph_type_of(g, v));

	return CStringGetTextDatum(nm ? nm : "node");
}

static void
ReportAndRelease(GnnGraphRef *ref, const char *what, const gnn_error *err)
{
	GnnGraphRelease(ref);
	GnnReportCoreError(what, err);
}

/* sample_neighbors(graph, seeds bigint[], fanouts int[], replace, seed) -> (layer, src, dst) */
Datum
gnn_sample_neighbors(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	GnnGraphRef ref;
	gnn_sampler_config cfg;
	gnn_sampler *s = NULL;
	gnn_minibatch mb;
	gnn_error	err;
	int64	   *ids,
			   *fan;
	int32	   *seeds;
	int64	   *stimes = NULL;
	int			nseeds,
				nfan;
	uint64		seed;

	if (PG_ARGISNULL(0))
		ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("graph must not be NULL")));
	/* args: graph, seeds, fanouts, replace, seed, node_type, keys, seed_times */
	if ((PG_ARGISNULL(1) && (PG_NARGS() < 7 || PG_ARGISNULL(6))) || PG_ARGISNULL(2))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("seeds and fanouts must not be NULL"),
				 errhint("Pass seeds as bigint[] node ids (or keys => text[]) and fanouts as int[], one per hop, e.g. '{10,5}'.")));
	if (!PG_ARGISNULL(1))
		ids = ArrayInts(PG_GETARG_ARRAYTYPE_P(1), "seeds", &nseeds);
	else
	{
		ids = NULL;
		nseeds = 0;
	}
	fan = ArrayInts(PG_GETARG_ARRAYTYPE_P(2), "fanouts", &nfan);
	if (nseeds > GNN_MAX_SEEDS)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("%d seeds given, at most %d are allowed", nseeds, GNN_MAX_SEEDS)));
	if (nfan > GNN_MAX_LAYERS)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%d fan-outs given, at most %d hops are allowed", nfan, GNN_MAX_LAYERS)));
	memset(&cfg, 0, sizeof(cfg));
	cfg.kind = GNN_SAMPLER_NEIGHBOR;
	cfg.nhops = nfan;
	for (int h = 0; h < nfan; h++)
	{
		if (fan[h] != -1 && (fan[h] < 1 || fan[h] > GNN_SAMPLE_MAX_FANOUT))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("fan-out %lld at hop %d is out of range", (long long) fan[h], h + 1),
					 errhint("A fan-out is -1 (all neighbours) or between 1 and %d.", GNN_SAMPLE_MAX_FANOUT)));
		cfg.fanouts[h] = (int32) fan[h];
	}
	cfg.replace = PG_ARGISNULL(3) ? false : PG_GETARG_BOOL(3);
	/* as documented: a weighted graph's draws are proportional to weight (zero: never drawn) */
	cfg.weighted = true;
	cfg.nthreads = gnn_threads;
	seed = SeedArg(fcinfo, 4);

	InitMaterializedSRF(fcinfo, 0);
	GnnCoreThreadsInit();
	/* node-wise sampling reads a refreshed graph's delta in place (typed and temporal: flat) */
	GnnGraphAcquireView(text_to_cstring(PG_GETARG_TEXT_PP(0)), &ref);
	seeds = StartNodes(&ref, fcinfo, ids, nseeds, 5, 6, "seed", &nseeds);
	/* seed_times: one per seed, sampling only what is not later than it */
	if (PG_NARGS() > 7 && !PG_ARGISNULL(7))
	{
		Datum	   *elems;
		bool	   *nulls;
		int			nt;

		deconstruct_array(PG_GETARG_ARRAYTYPE_P(7), TIMESTAMPTZOID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE,
						  &elems, &nulls, &nt);
		if (nt != nseeds)
		{
			GnnGraphRelease(&ref);
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("%d seed times for %d seeds", nt, nseeds),
					 errhint("Give one time per seed (NULL: no bound).")));
		}
		if (!ref.g.time)
		{
			char	   *name = pstrdup(ref.entry.name);

			GnnGraphRelease(&ref);
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("graph \"%s\" has no row times to bound", name),
					 errhint("Load it with options => '{\"time\": {\"table\": \"column\"}}'.")));
		}
		stimes = palloc(sizeof(int64) * Max(nt, 1));
		for (int i = 0; i < nt; i++)
			stimes[i] = nulls[i] ? INT64_MAX : DatumGetTimestampTz(elems[i]);
		cfg.temporal = true;
	}
	if (cfg.temporal || ref.g.num_node_types > 1 || ref.g.num_edge_types > 1)
		GnnGraphFlattenRef(&ref);
	if (gnn_sampler_create(&ref.g, &cfg, &s, &err) != GNN_OK)
		ReportAndRelease(&ref, "could not create the sampler", &err);
	if (gnn_sampler_sample_at(s, seeds, stimes, nseeds, seed, &mb, &err) != GNN_OK)
	{
		gnn_sampler_free(s);
		ReportAndRelease(&ref, "sampling failed", &err);
	}
	PG_TRY();
	{
		for (int h = 0; h < mb.nhops; h++)
		{
			const gnn_block *b = &mb.blocks[mb.nhops - 1 - h];

			for (int64 i = 0; i < b->n_dst; i++)
				for (int64 e = b->indptr[i]; e < b->indptr[i + 1]; e++)
				{
					Datum		v[7];
					bool		nl[7] = {false, false, false, false, false, false, false};
					int64		sv = mb.input_nodes[b->indices[e]],
								dv = mb.input_nodes[i];

					v[0] = Int32GetDatum(h + 1);
					v[1] = Int64GetDatum(ref.g.keys[sv]);
					v[2] = Int64GetDatum(ref.g.keys[dv]);
					v[3] = GnnNodeKeyText(&ref.g, sv);
					v[4] = GnnNodeKeyText(&ref.g, dv);
					v[5] = TypeNameDatum(&ref.g, sv);
					v[6] = TypeNameDatum(&ref.g, dv);
					tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, v, nl);
				}
		}
	}
	PG_FINALLY();
	{
		gnn_sampler_free(s);
	}
	PG_END_TRY();
	GnnGraphRelease(&ref);
	return (Datum) 0;
}

/* random_walk(graph, starts bigint[], length, p, q, seed) -> (walk, step, node) */
Datum
gnn_random_walk_sql(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	GnnGraphRef ref;
	gnn_walk_config wc;
	gnn_error	err;
	int64	   *ids;
	int32	   *starts,
			   *out;
	int			n;
	uint64		seed;
	int64		cells;

	if (PG_ARGISNULL(0))
		ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("graph must not be NULL")));
	/* args: graph, starts, length, p, q, seed, node_type, keys */
	if ((PG_ARGISNULL(1) && (PG_NARGS() < 8 || PG_ARGISNULL(7))) || PG_ARGISNULL(2))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("starts and length must not be NULL"),
				 errhint("Pass starts as bigint[] node ids, or keys => text[].")));
	if (!PG_ARGISNULL(1))
		ids = ArrayInts(PG_GETARG_ARRAYTYPE_P(1), "starts", &n);
	else
	{
		ids = NULL;
		n = 0;
	}
	memset(&wc, 0, sizeof(wc));
	wc.length = PG_GETARG_INT32(2);
	wc.p = PG_ARGISNULL(3) ? 1.0 : PG_GETARG_FLOAT8(3);
	wc.q = PG_ARGISNULL(4) ? 1.0 : PG_GETARG_FLOAT8(4);
	wc.nthreads = gnn_threads;
	seed = SeedArg(fcinfo, 5);
	if (wc.length < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("walk length must be at least 1 (got %d)", wc.length)));
	if (!(wc.p > 0) || !(wc.q > 0) || isinf(wc.p) || isinf(wc.q))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("p and q must be finite and greater than 0 (got p = %g, q = %g)", wc.p, wc.q),
				 errhint("p = q = 1 gives uniform walks; node2vec uses e.g. p = 1, q = 0.5.")));
	InitMaterializedSRF(fcinfo, 0);
	GnnCoreThreadsInit();
	GnnGraphAcquireView(text_to_cstring(PG_GETARG_TEXT_PP(0)), &ref);		/* walks read a delta in place */
	starts = StartNodes(&ref, fcinfo, ids, n, 6, 7, "start", &n);
	cells = (int64) n * ((int64) wc.length + 1);
	if (cells > 100000000)
	{
		GnnGraphRelease(&ref);
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("%d walks of length %d would return %lld rows, more than 100000000", n, wc.length,
						(long long) cells)));
	}
	out = palloc_extended(sizeof(int32) * cells, MCXT_ALLOC_HUGE | MCXT_ALLOC_NO_OOM);
	if (!out)
	{
		GnnGraphRelease(&ref);
		ereport(ERROR, (errcode(ERRCODE_OUT_OF_MEMORY), errmsg("out of memory for %lld walk steps", (long long) cells)));
	}
	if (gnn_random_walk(&ref.g, starts, n, &wc, seed, out, &err) != GNN_OK)
		ReportAndRelease(&ref, "random walk failed", &err);
	for (int64 i = 0; i < n; i++)
		for (int64 t = 0; t <= wc.length; t++)
		{
			int32		v = out[i * (wc.length + 1) + t];
			Datum		vals[5];
			bool		nl[5] = {false, false, false, false, false};

			if (v < 0)
				break;
			vals[0] = Int32GetDatum((int32) i + 1);
			vals[1] = Int32GetDatum((int32) t);
			vals[2] = Int64GetDatum(ref.g.keys[v]);
			vals[3] = GnnNodeKeyText(&ref.g, v);
			vals[4] = TypeNameDatum(&ref.g, v);
			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, vals, nl);
		}
	GnnGraphRelease(&ref);
	return (Datum) 0;
}
