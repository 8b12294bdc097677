/*
 * funcs_graph.c: SQL functions for graphs: load, drop, list, inspect.
 */
#include "common/gnn_pg.h"
#include "sample/sample.h"

#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "common/hashfn.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"

PG_FUNCTION_INFO_V1(gnn_load_graph);
PG_FUNCTION_INFO_V1(gnn_drop_graph);
PG_FUNCTION_INFO_V1(gnn_graph_list);
PG_FUNCTION_INFO_V1(gnn_degree);
PG_FUNCTION_INFO_V1(gnn_neighbors);
PG_FUNCTION_INFO_V1(gnn_check_preload);
PG_FUNCTION_INFO_V1(gnn_memory_used);
PG_FUNCTION_INFO_V1(gnn_graph_digest);

static char *
TextArgOrNull(FunctionCallInfo fcinfo, int i)
{
	return PG_ARGISNULL(i) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(i));
}

/*
 * load_graph's features argument (anycompatible): one column's name (a
 * real[] column as it is, an ordinary column encoded), '*' (every column of
 * the node table but its id, label, split and part columns, encoded), or an
 * array of column names (encoded).
 */
static void
FeaturesArg(FunctionCallInfo fcinfo, int i, GnnLoadArgs *a)
{
	Oid			type = get_fn_expr_argtype(fcinfo->flinfo, i);
	Oid			elem = OidIsValid(type) ? get_element_type(type) : InvalidOid;

	if (PG_ARGISNULL(i))
		return;
	if (type == TEXTOID || type == VARCHAROID || type == BPCHAROID || type == UNKNOWNOID)
	{
		char	   *f = TextArgOrNull(fcinfo, i);

		if (strcmp(f, "*") == 0)
			a->features_all = true;
		else
			a->features = f;
		return;
	}
	if (type == NAMEOID)
	{
		a->features = pstrdup(NameStr(*PG_GETARG_NAME(i)));
		return;
	}
	if (elem == TEXTOID || elem == VARCHAROID || elem == BPCHAROID || elem == NAMEOID)
	{
		ArrayType  *arr = PG_GETARG_ARRAYTYPE_P(i);
		Datum	   *vals;
		bool	   *nulls;
		int			n;
		int16		typlen;
		bool		typbyval;
		char		typalign;

		get_typlenbyvalalign(elem, &typlen, &typbyval, &typalign);
		if (ARR_NDIM(arr) > 1)
			ereport(ERROR,
					(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
					 errmsg("features must be a one-dimensional array of column names, not %d-dimensional", ARR_NDIM(arr)),
					 errhint("For example features => ARRAY['age', 'country', 'signup_at'].")));
		deconstruct_array(arr, elem, typlen, typbyval, typalign, &vals, &nulls, &n);
		if (n == 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("features is an empty array"),
					 errhint("Name the feature columns (ARRAY['age', 'country']), pass '*' for every ordinary column, or leave features out.")));
		for (int k = 0; k < n; k++)
		{
			char	   *c;

			if (nulls[k])
				ereport(ERROR,
						(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
						 errmsg("element %d of features is NULL", k + 1),
						 errhint("Every element names a column of the node table.")));
			c = elem == NAMEOID ? pstrdup(NameStr(*DatumGetName(vals[k]))) : TextDatumGetCString(vals[k]);
			if (strcmp(c, "*") == 0)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("'*' stands alone in features, not in an array"),
						 errhint("Pass features => '*' for every ordinary column, or name the columns.")));
			for (ListCell *lc = list_head(a->feature_list); lc; lc = lnext(a->feature_list, lc))
				if (strcmp(lfirst(lc), c) == 0)
					ereport(ERROR,
							(errcode(ERRCODE_DUPLICATE_COLUMN),
							 errmsg("column \"%s\" is named twice in features", c),
							 errhint("Name each feature column once.")));
			a->feature_list = lappend(a->feature_list, c);
		}
		return;
	}
	ereport(ERROR,
			(errcode(ERRCODE_DATATYPE_MISMATCH),
			 errmsg("features must be a column name, an array of column names or '*', not %s", format_type_be(type)),
			 errhint("For example features => 'feat' (a real[] column), features => ARRAY['age', 'country'], or features => '*'.")));
}

Datum
gnn_check_preload(PG_FUNCTION_ARGS)
{
	GnnRequirePreload();
	PG_RETURN_BOOL(true);
}

Datum
gnn_load_graph(PG_FUNCTION_ARGS)
{
	GnnLoadArgs a;
	GnnGraphEntry result;
	TupleDesc	tupdesc;
	Datum		values[GNN_GRAPH_COLS];
	bool		nulls[GNN_GRAPH_COLS];

	GnnRequirePreload();
	if (PG_ARGISNULL(0))
		ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("graph name must not be NULL")));
	if (PG_ARGISNULL(1))
		ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("edge table must not be NULL"),
						errhint("Pass edges => 'your_edge_table'.")));
	memset(&a, 0, sizeof(a));
	a.name = TextArgOrNull(fcinfo, 0);
	a.edges = PG_GETARG_OID(1);
	a.src = TextArgOrNull(fcinfo, 2);
	a.dst = TextArgOrNull(fcinfo, 3);
	a.nodes = PG_ARGISNULL(4) ? InvalidOid : PG_GETARG_OID(4);
	a.id = TextArgOrNull(fcinfo, 5);
	FeaturesArg(fcinfo, 6, &a);
	a.label = TextArgOrNull(fcinfo, 7);
	a.split = TextArgOrNull(fcinfo, 8);
	a.weight = TextArgOrNull(fcinfo, 9);
	a.undirected = PG_ARGISNULL(10) ? false : PG_GETARG_BOOL(10);
	a.replace = PG_ARGISNULL(11) ? false : PG_GETARG_BOOL(11);
	a.sparse = PG_ARGISNULL(12) ? InvalidOid : PG_GETARG_OID(12);
	a.sparse_id = TextArgOrNull(fcinfo, 13);
	a.sparse_index = TextArgOrNull(fcinfo, 14);
	a.sparse_value = TextArgOrNull(fcinfo, 15);
	a.skip_dangling = PG_ARGISNULL(16) ? false : PG_GETARG_BOOL(16);
	a.track = PG_NARGS() > 17 && !PG_ARGISNULL(17) && PG_GETARG_BOOL(17);
	a.persist = PG_NARGS() > 18 && !PG_ARGISNULL(18) ? (PG_GETARG_BOOL(18) ? 1 : 0) : -1;
	a.feature_store = PG_NARGS() > 19 ? TextArgOrNull(fcinfo, 19) : NULL;
	a.part_column = PG_NARGS() > 20 ? TextArgOrNull(fcinfo, 20) : NULL;
	if ((PG_NARGS() > 21 && !PG_ARGISNULL(21)) != (a.part_column != NULL))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("part_column and part go together"),
				 errhint("Pass both, part_column => 'the node table''s part column' and part => this server's part, or neither.")));
	a.part = a.part_column ? PG_GETARG_INT32(21) : -1;
	a.halo_hops = PG_NARGS() > 22 && !PG_ARGISNULL(22) ? PG_GETARG_INT32(22) : 1;
	if (a.halo_hops < 1 || a.halo_hops > GNN_MAX_LAYERS)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("halo_hops must be in [1, %d], not %d", GNN_MAX_LAYERS, a.halo_hops),
				 errhint("Give the part as many hops of halo as the models trained on it sample.")));
	if (a.halo_hops != 1 && !a.part_column)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("halo_hops is for one part of a partitioned graph"),
				 errhint("Pass part_column and part too, or leave halo_hops out.")));
	if (PG_NARGS() > 23 && !PG_ARGISNULL(23))
	{
		ArrayType  *fs = PG_GETARG_ARRAYTYPE_P(23);
		Datum	   *d;
		bool	   *dn;
		int			n;

		deconstruct_array(fs, INT4OID, 4, true, TYPALIGN_INT, &d, &dn, &n);
		if (ARR_NDIM(fs) != 1 || n != 2 || dn[0] || dn[1] || DatumGetInt32(d[1]) < 2 || DatumGetInt32(d[1]) > 64 ||
			DatumGetInt32(d[0]) < 0 || DatumGetInt32(d[0]) >= DatumGetInt32(d[1]))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("feature_slice must be ARRAY[index, count] with 2 <= count <= 64 and 0 <= index < count"),
					 errhint("Server r of K that train with feature_slices loads ARRAY[r, K] (the coordinator is 0, "
							 "the peers 1, 2, ... in options.peers' order).")));
		a.slice_index = DatumGetInt32(d[0]);
		a.slice_count = DatumGetInt32(d[1]);
	}
	if (a.part_column && a.part < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("part must be 0 or more, not %d", a.part),
				 errhint("Parts are numbered from 0, as gnn.partition numbers them.")));

	GnnLoadGraph(&a, &result);

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	GnnEntryToValues(&result, values, nulls);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(tupdesc), values, nulls)));
}

Datum
gnn_drop_graph(PG_FUNCTION_ARGS)
{
	Oid			owner = PG_NARGS() > 2 && !PG_ARGISNULL(2) ? PG_GETARG_OID(2) : InvalidOid;
	bool		dropped;

	if (PG_ARGISNULL(0))
		ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("graph name must not be NULL")));
	dropped = GnnGraphDrop(TextArgOrNull(fcinfo, 0), PG_ARGISNULL(1) ? false : PG_GETARG_BOOL(1), owner);
	/* a dropped graph follows its tables no more (GnnGraphDrop checked the rights) */
	GnnTrackDropAll(TextArgOrNull(fcinfo, 0), OidIsValid(owner) ? owner : GetUserId());
	PG_RETURN_BOOL(dropped);
}

/* The graphs of this database the caller may see: its own, or all for a superuser. */
Datum
gnn_graph_list(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	GnnGraphEntry *copy;
	int			n = 0;

	GnnRequirePreload();
	InitMaterializedSRF(fcinfo, 0);
	copy = palloc(sizeof(GnnGraphEntry) * gnn_shared->max_graphs * 2);
	LWLockAcquire(gnn_shared->lock, LW_SHARED);
	for (int i = 0; i < gnn_shared->max_graphs; i++)
	{
		GnnGraphEntry *e = &gnn_shared->graphs[i];

		if (e->in_use && e->dbid == MyDatabaseId)
			copy[n++] = *e;
	}
	LWLockRelease(gnn_shared->lock);
	/* this transaction's loads and drops, as they will be at commit */
	for (int i = 0; i < n; i++)
		if (GnnPendingLookup(copy[i].name, copy[i].owner, NULL, NULL, NULL) != GNN_PENDING_NONE)
			copy[i--] = copy[--n];
	n += GnnPendingVersions(copy + n, gnn_shared->max_graphs * 2 - n);
	for (int i = 0; i < n; i++)
	{
		Datum		values[GNN_GRAPH_COLS];
		bool		nulls[GNN_GRAPH_COLS];

		/* names are per role: a role lists its own graphs; a superuser every role's */
		if (copy[i].owner != GetUserId() && !superuser())
			continue;
		GnnEntryToValues(&copy[i], values, nulls);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

/* Total bytes of graph memory in use (registered and reserved), for tests and monitoring. */
Datum
gnn_memory_used(PG_FUNCTION_ARGS)
{
	uint64		used;

	GnnRequirePreload();
	LWLockAcquire(gnn_shared->lock, LW_SHARED);
	used = gnn_shared->graph_bytes;
	LWLockRelease(gnn_shared->lock);
	PG_RETURN_INT64((int64) used);
}

typedef enum
{
	DIR_OUT, DIR_IN, DIR_BOTH
} Direction;

static Direction
ParseDirection(FunctionCallInfo fcinfo, int i)
{
	char	   *d = PG_ARGISNULL(i) ? "out" : text_to_cstring(PG_GETARG_TEXT_PP(i));

	if (strcmp(d, "out") == 0)
		return DIR_OUT;
	if (strcmp(d, "in") == 0)
		return DIR_IN;
	if (strcmp(d, "both") == 0)
		return DIR_BOTH;
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("unknown direction \"%s\"", d),
			 errhint("The direction is one of: out, in, both.")));
	return DIR_OUT;
}

/*
 * The node an argument names: an integer key (bigint argument) or a key as
 * text, of the node type named by argument type_arg (default: the graph's
 * target type, a homogeneous graph's only one).
 */
static int64
NodeArg(FunctionCallInfo fcinfo, GnnGraphRef *ref, int node_arg, int type_arg)
{
	const char *nt = PG_NARGS() > type_arg && !PG_ARGISNULL(type_arg) ?
		text_to_cstring(PG_GETARG_TEXT_PP(type_arg)) : NULL;
	int32		t = GnnResultType(&ref->g, nt, ref->entry.name);

	if (get_fn_expr_argtype(fcinfo->flinfo, node_arg) == TEXTOID)
		return GnnFindNodeText(&ref->g, t, TextDatumGetCString(PG_GETARG_DATUM(node_arg)), ref->entry.name);
	return GnnFindNodeInt(&ref->g, t, PG_GETARG_INT64(node_arg), ref->entry.name);
}

Datum
gnn_degree(PG_FUNCTION_ARGS)
{
	GnnGraphRef ref;
	int64		v,
				deg;
	Direction	dir;

	if (PG_ARGISNULL(0) || PG_ARGISNULL(1))
		PG_RETURN_NULL();
	dir = ParseDirection(fcinfo, 2);
	GnnGraphAcquireView(text_to_cstring(PG_GETARG_TEXT_PP(0)), &ref);
	v = NodeArg(fcinfo, &ref, 1, 3);
	deg = dir == DIR_IN ? gnn_graph_in_degree(&ref.g, v) :
		dir == DIR_OUT ? gnn_graph_out_degree(&ref.g, v) :
		gnn_graph_in_degree(&ref.g, v) + gnn_graph_out_degree(&ref.g, v);
	GnnGraphRelease(&ref);
	PG_RETURN_INT64(deg);
}

/* neighbors(graph, node, direction) -> (neighbor bigint, weight real) */
Datum
gnn_neighbors(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	GnnGraphRef ref;
	int64		v;
	Direction	dir;

	if (PG_ARGISNULL(0) || PG_ARGISNULL(1))
		ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("graph and node must not be NULL")));
	dir = ParseDirection(fcinfo, 2);
	InitMaterializedSRF(fcinfo, 0);
	GnnGraphAcquireView(text_to_cstring(PG_GETARG_TEXT_PP(0)), &ref);
	v = NodeArg(fcinfo, &ref, 1, 3);
	for (int pass = 0; pass < 2; pass++)
	{
		const int32 *idx;
		const float *w;
		int64		len;

		if ((pass == 0 && dir == DIR_IN) || (pass == 1 && dir != DIR_IN))
		{
			if (pass == 1 && dir != DIR_BOTH)
				break;
			if (pass == 0)
				continue;
		}
		if (pass == 0)
			len = gnn_graph_out_row(&ref.g, v, &idx, &w, NULL);
		else
			len = gnn_graph_in_row(&ref.g, v, &idx, &w);
		for (int64 p = 0; p < len; p++)
		{
			Datum		values[4];
			bool		nulls[4] = {false, false, false, false};
			const char *tn = gnn_graph_node_type_name(&ref.g, gnn_graph_type_of(&ref.g, idx[p]));

			values[0] = Int64GetDatum(ref.g.keys[idx[p]]);
			values[1] = Float4GetDatum(w ? w[p] : 1.0f);
			values[2] = GnnNodeKeyText(&ref.g, idx[p]);
			values[3] = CStringGetTextDatum(tn ? tn : "node");
			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
		}
	}
	GnnGraphRelease(&ref);
	return (Datum) 0;
}

/* ------------------------------------------------------------------ types */

PG_FUNCTION_INFO_V1(gnn_graph_meta);
PG_FUNCTION_INFO_V1(gnn_graph_type_counts);

/* What the loader kept with the graph (JSON), or NULL when it kept nothing. */
Datum
gnn_graph_meta(PG_FUNCTION_ARGS)
{
	GnnGraphRef ref;
	char	   *m = NULL;

	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	GnnGraphAcquireView(text_to_cstring(PG_GETARG_TEXT_PP(0)), &ref);
	if (ref.g.meta && ref.g.meta_bytes > 0)
		m = pnstrdup(ref.g.meta, ref.g.meta_bytes);
	GnnGraphRelease(&ref);
	if (m == NULL)
		PG_RETURN_NULL();
	PG_RETURN_DATUM(DirectFunctionCall1(jsonb_in, CStringGetDatum(m)));
}

/* A row per node type and per relation: kind, id, type, count, src_type, dst_type. */
Datum
gnn_graph_type_counts(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	GnnGraphRef ref;
	const gnn_graph *g;

	if (PG_ARGISNULL(0))
		ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("graph must not be NULL")));
	InitMaterializedSRF(fcinfo, 0);
	GnnGraphAcquireView(text_to_cstring(PG_GETARG_TEXT_PP(0)), &ref);
	g = &ref.g;
	for (int t = 0; t < g->num_node_types; t++)
	{
		Datum		values[6];
		bool		nulls[6] = {false, false, false, false, true, true};
		const char *nm = gnn_graph_node_type_name(g, t);

		values[0] = CStringGetTextDatum("node");
		values[1] = Int32GetDatum(t);
		values[2] = CStringGetTextDatum(nm ? nm : "node");
		values[3] = Int64GetDatum(g->type_ptr[t + 1] - g->type_ptr[t]);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	for (int r = 0; r < g->num_edge_types; r++)
	{
		Datum		values[6];
		bool		nulls[6] = {false, false, false, false, false, false};
		const char *nm = gnn_graph_edge_type_name(g, r);
		const char *s = gnn_graph_node_type_name(g, g->etypes[r].src_type);
		const char *d = gnn_graph_node_type_name(g, g->etypes[r].dst_type);

		values[0] = CStringGetTextDatum("edge");
		values[1] = Int32GetDatum(r);
		values[2] = CStringGetTextDatum(nm ? nm : "edge");
		values[3] = Int64GetDatum(g->etypes[r].count);
		values[4] = CStringGetTextDatum(s ? s : "node");
		values[5] = CStringGetTextDatum(d ? d : "node");
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	GnnGraphRelease(&ref);
	return (Datum) 0;
}

/*
 * gnn.graph_digest(graph): a hash of everything the graph holds.  An array
 * is hashed as its length, then its bytes in 1 MB pieces; a Digest takes
 * the bytes in slices of any size (features read through a store) and
 * hashes the same pieces.
 */
#define DIGEST_PIECE ((Size) 1 << 20)

typedef struct Digest
{
	uint64		h;
	char	   *buf;			/* a piece being filled (DIGEST_PIECE), NULL until needed */
	Size		fill;
} Digest;

static void
DigestBegin(Digest *d, uint64 h, Size bytes)
{
	d->h = hash_combine64(h, bytes);
	d->buf = NULL;
	d->fill = 0;
}

static void
DigestFeed(Digest *d, const void *p, Size bytes)
{
	const char *c = p;

	while (bytes > 0)
	{
		Size		k;

		if (d->fill == 0 && bytes >= DIGEST_PIECE)
		{
			/* a whole piece in place */
			d->h = hash_combine64(d->h, hash_bytes_extended((const unsigned char *) c, DIGEST_PIECE, d->h));
			c += DIGEST_PIECE;
			bytes -= DIGEST_PIECE;
			continue;
		}
		if (!d->buf)
			d->buf = palloc(DIGEST_PIECE);
		k = Min(bytes, DIGEST_PIECE - d->fill);
		memcpy(d->buf + d->fill, c, k);
		d->fill += k;
		c += k;
		bytes -= k;
		if (d->fill == DIGEST_PIECE)
		{
			d->h = hash_combine64(d->h, hash_bytes_extended((const unsigned char *) d->buf, DIGEST_PIECE, d->h));
			d->fill = 0;
		}
	}
}

static uint64
DigestEnd(Digest *d)
{
	if (d->fill > 0)
		d->h = hash_combine64(d->h, hash_bytes_extended((const unsigned char *) d->buf, d->fill, d->h));
	if (d->buf)
		pfree(d->buf);
	return d->h;
}

static uint64
DigestAdd(uint64 h, const void *p, Size bytes)
{
	Digest		d;

	if (p == NULL)
		return hash_combine64(h, 0x9e3779b97f4a7c15ULL);
	DigestBegin(&d, h, bytes);
	DigestFeed(&d, p, bytes);
	return DigestEnd(&d);
}

Datum
gnn_graph_digest(PG_FUNCTION_ARGS)
{
	GnnGraphRef ref;
	const gnn_graph *g;
	uint64		h = 0;
	int64		n,
				m;

	bool		features = PG_NARGS() < 2 || PG_ARGISNULL(1) || PG_GETARG_BOOL(1);

	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	GnnGraphAcquire(TextArgOrNull(fcinfo, 0), &ref);
	g = &ref.g;
	n = g->num_nodes;
	m = g->num_edges;
	h = DigestAdd(h, &n, sizeof(n));
	h = DigestAdd(h, &m, sizeof(m));
	h = DigestAdd(h, g->ids, sizeof(int64) * n);
	h = DigestAdd(h, g->indptr, sizeof(int64) * (n + 1));
	h = DigestAdd(h, g->indices, sizeof(int32) * m);
	h = DigestAdd(h, g->weights, g->weights ? sizeof(float) * m : 0);
	h = DigestAdd(h, g->rindptr, sizeof(int64) * (n + 1));
	h = DigestAdd(h, g->rindices, sizeof(int32) * m);
	h = DigestAdd(h, g->rweights, g->rweights ? sizeof(float) * m : 0);
	h = DigestAdd(h, &g->feat_kind, sizeof(g->feat_kind));
	h = DigestAdd(h, &g->feat_dim, sizeof(g->feat_dim));
	if (g->feat_kind == GNN_FEAT_DENSE && features)
	{
		/* in slices: the same value from memory or through a features file */
		Size		row = sizeof(float) * (Size) g->feat_dim;
		float	   *rows = palloc(row * 1024);
		Digest		d;
		gnn_error	err;

		DigestBegin(&d, h, (Size) n * row);
		for (int64 v0 = 0; v0 < n; v0 += 1024)
		{
			int64		k = Min(1024, n - v0);

			if (gnn_graph_feat_range(g, v0, k, rows, &err) != GNN_OK)
				GnnReportCoreError("read the graph's features", &err);
			DigestFeed(&d, rows, (Size) k * row);
		}
		h = DigestEnd(&d);
		pfree(rows);
	}
	else if (g->feat_kind == GNN_FEAT_SPARSE && features)
	{
		/* sparse features (a feature table, a schema graph's encoded columns) */
		h = DigestAdd(h, g->fptr, sizeof(int64) * (n + 1));
		h = DigestAdd(h, g->fidx, sizeof(int32) * g->feat_nnz);
		h = DigestAdd(h, g->fval, sizeof(float) * g->feat_nnz);
	}
	h = DigestAdd(h, g->labels, g->labels ? sizeof(int32) * n : 0);
	h = DigestAdd(h, &g->num_classes, sizeof(g->num_classes));
	h = DigestAdd(h, g->class_names, g->class_names ? g->class_names_bytes : 0);
	h = DigestAdd(h, g->split, g->split ? n : 0);
	/* types, relations, keys, times and targets (a schema graph's) */
	h = DigestAdd(h, &g->num_node_types, sizeof(g->num_node_types));
	h = DigestAdd(h, g->type_ptr, g->type_ptr ? sizeof(int64) * (g->num_node_types + 1) : 0);
	h = DigestAdd(h, &g->num_edge_types, sizeof(g->num_edge_types));
	h = DigestAdd(h, g->etypes, g->etypes ? sizeof(gnn_edge_type) * g->num_edge_types : 0);
	h = DigestAdd(h, g->arc_type, g->arc_type ? sizeof(int16) * m : 0);
	h = DigestAdd(h, g->rarc_type, g->rarc_type ? sizeof(int16) * m : 0);
	h = DigestAdd(h, g->type_names, g->type_names ? g->type_names_bytes : 0);
	h = DigestAdd(h, g->keys, g->keys ? sizeof(int64) * n : 0);
	h = DigestAdd(h, g->key_off, g->key_off ? sizeof(int64) * (n + 1) : 0);
	h = DigestAdd(h, g->key_bytes, g->key_off ? g->key_off[n] : 0);
	h = DigestAdd(h, g->time, g->time ? sizeof(int64) * n : 0);
	h = DigestAdd(h, g->seed_time, g->seed_time ? sizeof(int64) * n : 0);
	h = DigestAdd(h, g->targets, g->targets ? sizeof(float) * n : 0);
	GnnGraphRelease(&ref);
	PG_RETURN_TEXT_P(cstring_to_text(psprintf("%016llx", (unsigned long long) h)));
}

/* ------------------------------------------------------------------ one part of a partitioned graph */

PG_FUNCTION_INFO_V1(gnn_graph_part_counts);
PG_FUNCTION_INFO_V1(gnn_halo);

/*
 * _graph_part_counts(graph) -> (part, nodes, own, halo, halo_unknown, edges,
 * own_edges): one row for one part of a partitioned graph, none for a whole
 * graph.  own_edges: arcs between two own nodes; the others touch the halo.
 */
Datum
gnn_graph_part_counts(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	GnnGraphRef ref;
	const gnn_graph *g;

	if (PG_ARGISNULL(0))
		ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("graph must not be NULL")));
	InitMaterializedSRF(fcinfo, 0);
	GnnGraphAcquireView(text_to_cstring(PG_GETARG_TEXT_PP(0)), &ref);
	g = &ref.g;
	if (g->node_part)
	{
		Datum		values[7];
		bool		nulls[7] = {false, false, false, false, false, false, false};
		int64		unknown = 0,
					own_arcs = 0;

		for (int64 v = 0; v < g->num_nodes; v++)
		{
			const int32 *idx;
			int64		len;

			unknown += g->node_part[v] < 0;
			if (g->node_part[v] != g->part)
				continue;
			len = gnn_graph_out_row(g, v, &idx, NULL, NULL);
			for (int64 p = 0; p < len; p++)
				own_arcs += g->node_part[idx[p]] == g->part;
		}
		values[0] = Int32GetDatum(g->part);
		values[1] = Int64GetDatum(g->num_nodes);
		values[2] = Int64GetDatum(g->n_owned);
		values[3] = Int64GetDatum(g->num_nodes - g->n_owned);
		values[4] = Int64GetDatum(unknown);
		values[5] = Int64GetDatum(g->num_edges);
		values[6] = Int64GetDatum(own_arcs);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	GnnGraphRelease(&ref);
	return (Datum) 0;
}

/*
 * halo(graph) -> (node, owner, own_neighbors, key): the halo of one part of
 * a partitioned graph, each node with its owner part (NULL: its row is not
 * in this server's node table) and how many of this part's nodes it is
 * adjacent to (in either direction).  Empty for a whole graph.
 */
Datum
gnn_halo(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	GnnGraphRef ref;
	const gnn_graph *g;

	if (PG_ARGISNULL(0))
		ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("graph must not be NULL")));
	InitMaterializedSRF(fcinfo, 0);
	GnnGraphAcquireView(text_to_cstring(PG_GETARG_TEXT_PP(0)), &ref);
	g = &ref.g;
	for (int64 v = 0; g->node_part && v < g->num_nodes; v++)
	{
		Datum		values[4];
		bool		nulls[4] = {false, false, false, false};
		const int32 *idx;
		int64		len,
					own = 0;

		if (g->node_part[v] == g->part)
			continue;
		len = gnn_graph_out_row(g, v, &idx, NULL, NULL);
		for (int64 p = 0; p < len; p++)
			own += g->node_part[idx[p]] == g->part;
		len = gnn_graph_in_row(g, v, &idx, NULL);
		for (int64 p = 0; p < len; p++)
			own += g->node_part[idx[p]] == g->part;
		values[0] = Int64GetDatum(g->keys[v]);
		values[1] = Int32GetDatum(g->node_part[v]);
		nulls[1] = g->node_part[v] < 0;
		values[2] = Int32GetDatum((int32) own);
		values[3] = GnnNodeKeyText(g, v);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	GnnGraphRelease(&ref);
	return (Datum) 0;
}

PG_FUNCTION_INFO_V1(gnn_features);

/*
 * features(graph, node, node_type) -> real[]: the feature vector the graph
 * holds for a node (dense or sparse, in memory or on disk, as training reads
 * it); NULL for a graph without features.  A halo node of a part reads as
 * zeros: its features are its owner's.
 */
Datum
gnn_features(PG_FUNCTION_ARGS)
{
	GnnGraphRef ref;
	int64		v;
	int32		node;
	int32		dim;
	float	   *row;
	Datum	   *elems;
	gnn_error	err;
	gnn_status	st = GNN_OK;
	ArrayType  *arr;

	if (PG_ARGISNULL(0) || PG_ARGISNULL(1))
		PG_RETURN_NULL();
	GnnGraphAcquireView(text_to_cstring(PG_GETARG_TEXT_PP(0)), &ref);
	v = NodeArg(fcinfo, &ref, 1, 2);
	dim = ref.g.feat_dim;
	if (ref.g.feat_kind == GNN_FEAT_NONE || dim <= 0)
	{
		GnnGraphRelease(&ref);
		PG_RETURN_NULL();
	}
	node = (int32) v;
	row = palloc0(sizeof(float) * dim);
	if (ref.g.feat_kind == GNN_FEAT_DENSE)
		st = gnn_gather_dense(&ref.g, &node, 1, false, 1, row, &err);
	else
	{
		int64_t    *ptr = NULL;
		int32_t    *idx = NULL;
		float	   *val = NULL;

		st = gnn_gather_sparse(&ref.g, &node, 1, false, 1, &ptr, &idx, &val, &err);
		for (int64 i = 0; st == GNN_OK && i < ptr[1]; i++)
			if (idx[i] >= 0 && idx[i] < dim)
				row[idx[i]] = val[i];
		free(ptr);
		free(idx);
		free(val);
	}
	GnnGraphRelease(&ref);
	if (st != GNN_OK)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("cannot read the features of node %lld: %s", (long long) v, err.msg)));
	elems = palloc(sizeof(Datum) * dim);
	for (int32 i = 0; i < dim; i++)
		elems[i] = Float4GetDatum(row[i]);
	arr = construct_array(elems, dim, FLOAT4OID, sizeof(float4), true, TYPALIGN_INT);
	PG_RETURN_ARRAYTYPE_P(arr);
}
