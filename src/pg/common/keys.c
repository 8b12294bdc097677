/*
 * keys.c: nodes named by their keys, and keys of nodes, for every SQL
 * function that takes or returns nodes: integer keys (a homogeneous graph's
 * ids, or an integer-keyed table's key), text and uuid keys as text, within
 * one node type.
 */
#include "common/gnn_pg.h"

#include <math.h>

#include "lib/stringinfo.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/builtins.h"

/* ------------------------------------------------------------------ node keys */

/* The names of a graph's node types (or relations), comma-separated, for messages. */
char *
GnnTypeNames(const gnn_graph *g, bool relations)
{
	StringInfoData b;
	int			n = relations ? g->num_edge_types : g->num_node_types;

	initStringInfo(&b);
	for (int i = 0; i < n; i++)
	{
		const char *nm = relations ? gnn_graph_edge_type_name(g, i) : gnn_graph_node_type_name(g, i);

		appendStringInfo(&b, "%s%s", i ? ", " : "", nm ? nm : (relations ? "edge" : "node"));
	}
	return b.data;
}

/*
 * The node type results are about: the one named, else the type that
 * carries the graph's labels or regression targets (a schema graph's
 * target), else type 0 (a homogeneous graph's only type).
 */
int32
GnnResultType(const gnn_graph *g, const char *node_type, const char *graph)
{
	if (node_type)
	{
		int32		t = gnn_graph_node_type_by_name(g, node_type);

		if (t < 0)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_OBJECT),
					 errmsg("graph \"%s\" has no node type \"%s\"", graph, node_type),
					 errdetail("Its node types are: %s.", GnnTypeNames(g, false))));
		return t;
	}
	if (g->num_node_types > 1)
		for (int64 v = 0; v < g->num_nodes; v++)
			if ((g->labels && g->labels[v] >= 0) || (g->targets && !isnan(g->targets[v])))
				return gnn_graph_type_of(g, v);
	return 0;
}

/* Node v's key: the integer column value (or a text key's rank), and as text. */
Datum
GnnNodeKeyText(const gnn_graph *g, int64 v)
{
	int32		t = gnn_graph_type_of(g, v);

	if (g->key_off && g->type_text_key && g->type_text_key[t])
		return PointerGetDatum(cstring_to_text_with_len(g->key_bytes + g->key_off[v],
														(int) (g->key_off[v + 1] - g->key_off[v])));
	return CStringGetTextDatum(psprintf(INT64_FORMAT, g->keys[v]));
}

/* The index of the node of type t with integer key id, or an error. */
int64
GnnFindNodeInt(const gnn_graph *g, int32 t, int64 id, const char *graph)
{
	int64		v = gnn_graph_find_typed(g, t, id);

	if (v < 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("node %lld is not in graph \"%s\"", (long long) id, graph)));
	return v;
}

/* An integer key given as text (a whole base-10 bigint): true, with it in *id. */
bool
GnnIntKey(const char *key, int64 *id)
{
	char	   *end;

	errno = 0;
	*id = strtoll(key, &end, 10);
	return *key && *end == '\0' && errno == 0;
}

/* The index of the node of type t with key text, or an error. */
int64
GnnFindNodeText(const gnn_graph *g, int32 t, const char *key, const char *graph)
{
	int64		v;
	int64		id;

	if (g->key_off && g->type_text_key && g->type_text_key[t])
		v = gnn_graph_find_text(g, t, key, strlen(key));
	else
		v = GnnIntKey(key, &id) ? gnn_graph_find_typed(g, t, id) : -1;
	if (v < 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("node \"%s\" is not in graph \"%s\"", key, graph)));
	return v;
}

/*
 * A graph loaded with feature_slice [index, count] (gnn.load_graph): true,
 * with them, as the loader writes them in the meta's "feature_slice".
 */
bool
GnnGraphFeatureSlice(const gnn_graph *g, int32 *index, int32 *count)
{
	static const char key[] = "\"feature_slice\":{\"index\":";
	const char *at = g->meta ? memmem(g->meta, g->meta_bytes, key, sizeof(key) - 1) : NULL;
	char	   *end;

	*index = *count = 0;
	if (!at)
		return false;
	*index = (int32) strtol(at + sizeof(key) - 1, &end, 10);
	if (strncmp(end, ",\"count\":", 9) == 0)
		*count = (int32) strtol(end + 9, NULL, 10);
	return true;
}

/*
 * The SQL type of a node type's keys as the loader recorded it (text, uuid,
 * ...), or NULL when they are integers and travel as the bigint id.  SPI is
 * connected.
 */
char *
GnnKeySqlType(const char *graph, int32 type)
{
	char	   *key_type = NULL;

	if (SPI_execute_with_args("SELECT gnn._graph_meta($1)->'types'->$2->>'key_type'", 2,
							  (Oid[]) {TEXTOID, INT4OID},
							  (Datum[]) {CStringGetTextDatum(graph), Int32GetDatum(type)},
							  NULL, true, 1) == SPI_OK_SELECT && SPI_processed == 1)
		key_type = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
	if (key_type && (strcmp(key_type, "bigint") == 0 || strcmp(key_type, "integer") == 0 ||
					 strcmp(key_type, "smallint") == 0))
		key_type = NULL;
	return key_type;
}
