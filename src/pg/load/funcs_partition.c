/*
 * funcs_partition.c: gnn.partition, gnn.partition_stats, their GUCs, and the
 * subgraph-sampler training entry the worker calls (Cluster-GCN uses the
 * graph's stored partition when it has one with the asked number of parts).
 *
 * The assignment is kept in its own DSM segment (a header plus int32 part
 * per node), registered with the graph (registry.c) and accounted against
 * gnn.max_graph_memory; it goes when the graph is dropped or replaced.
 */
#include "common/gnn_pg.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"

#include "graph/partition.h"

PG_FUNCTION_INFO_V1(gnn_partition);
PG_FUNCTION_INFO_V1(gnn_partition_stats);


static uint32
ParseBalance(ArrayType *arr)
{
	Datum	   *elems;
	bool	   *nulls;
	int			n;
	uint32		bits = 0;

	if (ARR_NDIM(arr) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("balance must be a one-dimensional text array")));
	deconstruct_array(arr, TEXTOID, -1, false, TYPALIGN_INT, &elems, &nulls, &n);
	for (int i = 0; i < n; i++)
	{
		char	   *s;
		uint32		bit;

		if (nulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("balance constraints must not be NULL")));
		s = TextDatumGetCString(elems[i]);
		if (!gnn_parse_part_balance(s, &bit))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("unknown balance constraint \"%s\"", s),
					 errhint("Accepted values: nodes, train, edges.")));
		bits |= bit;
	}
	return bits ? bits : GNN_BAL_NODES;
}

Datum
gnn_partition(PG_FUNCTION_ARGS)
{
	GnnGraphRef ref;
	gnn_partition_config cfg;
	gnn_error	err;
	char	   *graph,
			   *method;
	int32	   *part;
	double		seconds;
	uint64		bytes,
				reserved;
	dsm_segment *seg;
	GnnPartitionHeader *h;
	int64		n;

	GnnRequirePreload();
	if (PG_ARGISNULL(0) || PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("graph and parts must not be NULL")));
	graph = text_to_cstring(PG_GETARG_TEXT_PP(0));
	gnn_partition_config_default(&cfg);
	cfg.parts = PG_GETARG_INT32(1);
	method = PG_ARGISNULL(2) ? "metis" : text_to_cstring(PG_GETARG_TEXT_PP(2));
	if (!gnn_parse_part_method(method, &cfg.method))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("unknown partitioning method \"%s\"", method),
				 errhint("Accepted values: metis, streaming, random.")));
	cfg.balance = PG_ARGISNULL(3) ? (GNN_BAL_NODES | GNN_BAL_TRAIN) : ParseBalance(PG_GETARG_ARRAYTYPE_P(3));
	if (PG_ARGISNULL(4))
	{
		uint32		s;

		if (!pg_strong_random(&s, sizeof(s)))
			s = (uint32) random();
		cfg.seed = s & 0x7fffffff;
	}
	else
		cfg.seed = (uint64) (uint32) PG_GETARG_INT32(4);
	cfg.objective = (gnn_part_objective) gnn_partition_objective;
	cfg.memory_limit = (uint64) gnn_max_partition_memory_kb * 1024;

	InitMaterializedSRF(fcinfo, 0);
	GnnGraphAcquire(graph, &ref);
	n = ref.g.num_nodes;
	if (cfg.parts < 2 || cfg.parts > n)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("parts must be between 2 and the number of nodes (%lld), got %d", (long long) n, cfg.parts),
				 errhint("Graph \"%s\" has %lld nodes.", graph, (long long) n)));
	if ((cfg.balance & GNN_BAL_TRAIN) && ref.g.n_train == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("graph \"%s\" has no training nodes to balance on", graph),
				 errhint("Pass balance => '{nodes}', or load the graph with a split column marking 'train' nodes.")));
	if (cfg.method == GNN_PART_METIS)
	{
		uint64		need = gnn_partition_metis_memory(&ref.g, cfg.parts, cfg.balance);

		if (need > cfg.memory_limit)
			ereport(ERROR,
					(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
					 errmsg("METIS would need about %llu kB to partition graph \"%s\", over gnn.max_partition_memory (%d kB)",
							(unsigned long long) ((need + 1023) / 1024), graph, gnn_max_partition_memory_kb),
					 errdetail("The estimate is %llu bytes for %lld nodes and %lld edges.",
							   (unsigned long long) need, (long long) n, (long long) ref.g.num_edges),
					 errhint("Use method => 'streaming', or raise gnn.max_partition_memory.")));
	}

	part = palloc_extended(sizeof(int32) * (n + 1), MCXT_ALLOC_HUGE);
	{
		TimestampTz t0 = GetCurrentTimestamp();

		if (GnnProgressOn() && n + ref.g.num_edges >= 1000000)
			ereport(NOTICE,
					(errmsg("graph \"%s\": partitioning %lld nodes and %lld arcs into %d parts (%s)", graph,
							(long long) n, (long long) ref.g.num_edges, cfg.parts, gnn_part_method_name(cfg.method))));
		if (gnn_partition_compute(&ref.g, &cfg, part, &seconds, &err) != GNN_OK)
			GnnReportCoreError(psprintf("could not partition graph \"%s\"", graph), &err);
		GnnPhaseDone(psprintf("graph \"%s\": partitioned into %d parts", graph, cfg.parts), n + ref.g.num_edges, t0);
	}

	/* keep it with the graph */
	bytes = offsetof(GnnPartitionHeader, part) + sizeof(int32) * (uint64) n;
	reserved = GnnGraphReserve(bytes, graph);
	PG_TRY();
	{
		seg = GnnDsmCreate(bytes, 0);
		h = dsm_segment_address(seg);
		h->magic = GNN_PART_MAGIC;
		h->parts = cfg.parts;
		h->nodes = n;
		h->generation = ref.entry.generation;
		h->seconds = seconds;
		h->balance = cfg.balance;
		h->method = (int32) cfg.method;
		memcpy(h->part, part, sizeof(int32) * n);
		/* the graph's when the transaction commits (the mapping the transaction's until then) */
		GnnPartitionPublish(graph, ref.entry.generation, seg, reserved, cfg.parts,
							gnn_part_method_name(cfg.method));
	}
	PG_CATCH();
	{
		GnnGraphUnreserve(reserved);
		PG_RE_THROW();
	}
	PG_END_TRY();

	{
		ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;

		for (int64 v = 0; v < n; v++)
		{
			Datum		values[3];
			bool		nulls[3] = {false, false, false};

			values[0] = Int64GetDatum(ref.g.keys[v]);
			values[1] = Int32GetDatum(part[v]);
			values[2] = GnnNodeKeyText(&ref.g, v);
			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
		}
	}
	GnnGraphRelease(&ref);
	return (Datum) 0;
}

/*
 * One row per part (part = 0 .. k-1) and an overall row (part NULL).  Per
 * part, balance_* is the part's load over the mean load; overall, the
 * largest of those (max/mean).  cut_fraction: the part's cut arcs over its
 * arcs; overall, all cut arcs over all arcs.  seconds: the partitioning
 * time, on the overall row.
 */
#define STATS_COLS 12
Datum
gnn_partition_stats(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	GnnGraphRef ref;
	dsm_segment *seg;
	const GnnPartitionHeader *h;
	gnn_part_stats st;
	gnn_error	err;
	char	   *graph;
	double		mean[GNN_BAL_COUNT];

	GnnRequirePreload();
	if (PG_ARGISNULL(0))
		ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("graph must not be NULL")));
	graph = text_to_cstring(PG_GETARG_TEXT_PP(0));
	InitMaterializedSRF(fcinfo, 0);
	GnnGraphAcquire(graph, &ref);
	seg = GnnPartitionAttach(graph, ref.entry.generation);
	if (seg == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("graph \"%s\" has not been partitioned", graph),
				 errhint("Run gnn.partition('%s', parts) first.", graph)));
	h = GnnPartitionOf(seg, &ref, graph);
	if (gnn_part_stats_compute(&ref.g, h->part, h->parts, &st, &err) != GNN_OK)
		GnnReportCoreError("could not compute partition statistics", &err);
	for (int i = 0; i < GNN_BAL_COUNT; i++)
	{
		double		s = 0;

		for (int p = 0; p < st.parts; p++)
			s += i == 0 ? st.part[p].nodes : i == 1 ? st.part[p].train : st.part[p].degree;
		mean[i] = s / st.parts;
	}
	for (int p = 0; p <= st.parts; p++)
	{
		Datum		values[STATS_COLS];
		bool		nulls[STATS_COLS];
		bool		all = p == st.parts;

		memset(nulls, 0, sizeof(nulls));
		values[10] = CStringGetTextDatum(gnn_part_method_name((gnn_part_method) h->method));
		if (all)
		{
			int64		train = 0;

			for (int q = 0; q < st.parts; q++)
				train += st.part[q].train;
			nulls[0] = true;
			values[1] = Int64GetDatum(ref.g.num_nodes);
			values[2] = Int64GetDatum(st.edges);
			values[3] = Int64GetDatum(train);
			values[4] = Int64GetDatum(st.cut);
			values[5] = Int64GetDatum(st.halo);
			values[6] = Float8GetDatum(st.cut_fraction);
			for (int i = 0; i < GNN_BAL_COUNT; i++)
				values[7 + i] = Float8GetDatum(st.balance[i]);
			values[11] = Float8GetDatum(h->seconds);
		}
		else
		{
			const gnn_part_info *pi = &st.part[p];

			values[0] = Int32GetDatum(p);
			values[1] = Int64GetDatum(pi->nodes);
			values[2] = Int64GetDatum(pi->edges);
			values[3] = Int64GetDatum(pi->train);
			values[4] = Int64GetDatum(pi->cut);
			values[5] = Int64GetDatum(pi->halo);
			values[6] = Float8GetDatum(pi->edges ? (double) pi->cut / pi->edges : 0.0);
			values[7] = Float8GetDatum(mean[0] > 0 ? pi->nodes / mean[0] : 0.0);
			values[8] = Float8GetDatum(mean[1] > 0 ? pi->train / mean[1] : 0.0);
			values[9] = Float8GetDatum(mean[2] > 0 ? pi->degree / mean[2] : 0.0);
			nulls[11] = true;
		}
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	gnn_part_stats_free(&st);
	dsm_detach(seg);
	GnnGraphRelease(&ref);
	return (Datum) 0;
}

