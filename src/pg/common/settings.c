/*
 * settings.c: the variables behind the gnn.* settings that every SQL area
 * reads (gnn.c's _PG_init defines most of them), the partitioner's two
 * settings, and the hint that says to raise one.  Here, at the bottom of
 * src/pg, so that reading a setting is never an arrow up to the entry point.
 */
#include "common/gnn_pg.h"

#include <sys/resource.h>

#include "miscadmin.h"
#include "utils/guc.h"

#include "graph/partition.h"

int			gnn_max_graph_memory_mb = 4096;
bool		gnn_progress = true;
bool		gnn_verbose_deprecated = true;	/* gnn.verbose: the old name of gnn.progress */
int			gnn_max_graphs = 64;
int			gnn_threads = 0;
int			gnn_max_jobs = 4;
int			gnn_eval_nodes = 20000;
char	   *gnn_cuda_library = NULL;
char	   *gnn_dist_host = NULL;
int			gnn_fault_backend_calls = -1;
int			gnn_max_classes = 10000;
int			gnn_max_cache_memory_mb = 1024;
double		gnn_khop_max_fraction = 0.5;
int			gnn_similar_ef = 100;
int			gnn_fault_index_delay_ms = 0;
int			gnn_fault_compute_delay_ms = 0;
int			gnn_similar_index_min_rows = 50000;
int			gnn_job_nice = 10;
double		gnn_merge_threshold = 0.25;
int			gnn_gpu_cache_size_mb = -1;
int			gnn_gpu_graph_memory_mb = -1;

int			gnn_max_partition_memory_kb = 8 * 1024 * 1024;
int			gnn_partition_objective = GNN_PART_CUT;

static const struct config_enum_entry objective_options[] = {
	{"cut", GNN_PART_CUT, false},
	{"volume", GNN_PART_VOLUME, false},
	{NULL, 0, false}
};

void
GnnPartitionInit(void)
{
	DefineCustomIntVariable("gnn.max_partition_memory",
							"Memory METIS may use for one gnn.partition() call (estimated before it runs).",
							"A partitioning whose estimate exceeds it fails; method 'streaming' needs far less.",
							&gnn_max_partition_memory_kb,
							8 * 1024 * 1024, 64, INT_MAX,
							PGC_SUSET, GUC_UNIT_KB,
							NULL, NULL, NULL);
	DefineCustomEnumVariable("gnn.partition_objective",
							 "What METIS minimises in gnn.partition(): edge cut or communication volume.",
							 NULL,
							 &gnn_partition_objective,
							 GNN_PART_CUT, objective_options,
							 PGC_USERSET, 0,
							 NULL, NULL, NULL);
}

/*
 * The end of a hint that says to raise a superuser-only setting: "raise
 * gnn.x" for a superuser, "ask a superuser to raise gnn.x" for anyone else.
 */
const char *
GnnRaiseSetting(const char *guc)
{
	return superuser() ? psprintf("raise %s", guc) : psprintf("ask a superuser to raise %s", guc);
}

/* whether long calls report their progress (gnn.progress, and its old name gnn.verbose) */
bool
GnnProgressOn(void)
{
	return gnn_progress && gnn_verbose_deprecated;
}

/*
 * A training job's or index build's process (and the threads it starts
 * after this) runs at gnn.job_nice: on a server that also answers, the
 * sessions' calls come first.  Called at a worker's start, before any
 * thread exists.
 */
void
GnnJobPriority(void)
{
	if (gnn_job_nice > 0 && setpriority(PRIO_PROCESS, 0, gnn_job_nice) != 0)
		ereport(DEBUG1, (errmsg("could not lower the worker's priority: %m")));
}
