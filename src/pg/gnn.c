/*
 * gnn.c: module entry point, the top of src/pg (ARCHITECTURE.md).  _PG_init
 * defines the GUCs (their variables: common/settings.c) and delegates
 * shared-memory setup to common/shmem.c; it does nothing else.  Nothing
 * calls into this file.
 */
#include "common/gnn_pg.h"

#include "fmgr.h"
#include "miscadmin.h"
#include "utils/guc.h"

PG_MODULE_MAGIC;

void		_PG_init(void);

void
_PG_init(void)
{
	DefineCustomIntVariable("gnn.max_graph_memory",
							"Shared memory all loaded graphs may use together.",
							"A load that would exceed it fails before allocating.",
							&gnn_max_graph_memory_mb,
							4096, 1, INT_MAX / 2,
							PGC_SUSET, GUC_UNIT_MB,
							NULL, NULL, NULL);
	DefineCustomIntVariable("gnn.gpu_cache_size",
							"GPU memory for the feature cache of minibatch training (-1: what is left after the graph, "
							"the model and a batch; 0: none).",
							"Rows are chosen by options.cache_policy (presample or degree); the rest are read from "
							"pinned host memory.",
							&gnn_gpu_cache_size_mb,
							-1, -1, INT_MAX / 2,
							PGC_SIGHUP, GUC_UNIT_MB,
							NULL, NULL, NULL);
	DefineCustomIntVariable("gnn.gpu_graph_memory",
							"GPU memory a graph's topology may take in minibatch training (-1: half of what is free; "
							"0: always read it from pinned host memory).",
							"A graph over it stays in host memory and the GPU samples it over the bus.",
							&gnn_gpu_graph_memory_mb,
							-1, -1, INT_MAX / 2,
							PGC_SIGHUP, GUC_UNIT_MB,
							NULL, NULL, NULL);
	DefineCustomIntVariable("gnn.threads",
							"Threads the compute core may use in one process (0: all cores).",
							NULL,
							&gnn_threads,
							0, 0, 1024,
							PGC_USERSET, 0,
							NULL, NULL, NULL);

	DefineCustomIntVariable("gnn.eval_nodes",
							"Validation nodes a minibatch job measures after each epoch, unless options.eval_nodes says (0: all).",
							"Where the validation split is larger, a seeded sample of this many, the same every "
							"epoch; the test split is measured whole, once, on the selected weights.",
							&gnn_eval_nodes,
							20000, 0, 1000000000,
							PGC_USERSET, 0,
							NULL, NULL, NULL);

	DefineCustomIntVariable("gnn.max_jobs",
							"Training jobs that may run at once.",
							"More are refused with an error; each job uses one background worker.",
							&gnn_max_jobs,
							4, 1, GNN_JOB_SLOTS,
							PGC_SIGHUP, 0,
							NULL, NULL, NULL);
	DefineCustomIntVariable("gnn.max_cache_memory",
							"Shared memory that cached inference results may use together.",
							"Full-graph results (embeddings, class probabilities) are shared by every session; "
							"the least recently used are evicted to stay under this.",
							&gnn_max_cache_memory_mb,
							1024, 0, INT_MAX / 2,
							PGC_SIGHUP, GUC_UNIT_MB,
							NULL, NULL, NULL);
	DefineCustomRealVariable("gnn.khop_max_fraction",
							 "Largest neighbourhood, as a fraction of the graph's nodes, that a few-node inference computes on its own.",
							 "gnn.embedding and gnn.predict of a few nodes missing from the shared results compute exactly "
							 "on their neighbourhood when it has at most this fraction of the nodes; beyond it the full "
							 "pass runs once and is shared.  0: always the full pass.",
							 &gnn_khop_max_fraction,
							 0.5, 0.0, 1.0,
							 PGC_USERSET, 0,
							 NULL, NULL, NULL);
	DefineCustomIntVariable("gnn.similar_ef",
							"Candidates gnn.similar keeps while searching an approximate index.",
							"More finds the exact answer more often and costs more; a value at least the "
							"number of rows searches every row.  exact => true scans every row instead.",
							&gnn_similar_ef,
							100, 1, 1000000,
							PGC_USERSET, 0,
							NULL, NULL, NULL);
	DefineCustomIntVariable("gnn.similar_index_min_rows",
							"Fewest rows of a shared embedding result that gnn.similar builds an approximate index for.",
							"Below it every gnn.similar scans the rows exactly (fast on small results).  "
							"The first call on a larger result asks a background worker to build the index; "
							"calls scan exactly until it is ready.",
							&gnn_similar_index_min_rows,
							50000, 0, INT_MAX,
							PGC_USERSET, 0,
							NULL, NULL, NULL);
	DefineCustomIntVariable("gnn.job_nice",
							"CPU priority (nice) of training jobs and index builds, below the sessions that answer.",
							"Background work yields the CPU to sessions calling gnn.similar, gnn.embedding and "
							"the rest, so that a training job does not lengthen their answers; 0 runs it at "
							"their priority.",
							&gnn_job_nice,
							10, 0, 19,
							PGC_SIGHUP, 0,
							NULL, NULL, NULL);
	DefineCustomIntVariable("gnn.max_classes",
							"The most classes a label column may define.",
							"Integer labels are class numbers: a label of n makes n + 1 classes.  "
							"A load over it fails and names the row.",
							&gnn_max_classes,
							10000, 2, 1000000,
							PGC_SUSET, 0,
							NULL, NULL, NULL);
	DefineCustomStringVariable("gnn.dist_host",
							   "The address this server's ranks of a distributed job listen on and give the others.",
							   "Gloo opens one TCP port per rank there (the kernel picks it); the other servers must "
							   "reach that address.  Loopback by default: set it to this server's address on the "
							   "network the servers share.",
							   &gnn_dist_host,
							   "127.0.0.1",
							   PGC_SUSET, 0,
							   NULL, NULL, NULL);
	DefineCustomStringVariable("gnn.cuda_library",
							   "Path of the CUDA backend (gnn_cuda.so); empty: $libdir/gnn_cuda.so.",
							   NULL,
							   &gnn_cuda_library,
							   "",
							   PGC_SUSET, 0,
							   NULL, NULL, NULL);
	/* a test hook: the server's setting, out of pg_settings and SHOW ALL */
	DefineCustomIntVariable("gnn.fault_index_delay",
							"Fault injection for tests: an index build waits this long before it starts.",
							"So a test can catch a build half-way (terminate it, drop its result).",
							&gnn_fault_index_delay_ms,
							0, 0, 600000,
							PGC_SIGHUP, GUC_UNIT_MS | GUC_NO_SHOW_ALL | GUC_NOT_IN_SAMPLE,
							NULL, NULL, NULL);
	/* a test hook: settable by a superuser, out of pg_settings and SHOW ALL */
	DefineCustomIntVariable("gnn.fault_compute_delay",
							"Fault injection for tests: a shared result's computation waits this long before it starts.",
							"So a test can watch other sessions while one computes (hits must not wait).",
							&gnn_fault_compute_delay_ms,
							0, 0, 600000,
							PGC_SUSET, GUC_UNIT_MS | GUC_NO_SHOW_ALL | GUC_NOT_IN_SAMPLE,
							NULL, NULL, NULL);
	/* a test hook: settable by a superuser, out of pg_settings and SHOW ALL */
	DefineCustomIntVariable("gnn.fault_backend_calls",
							"Fault injection for tests: compute-backend calls after this many fail (-1: off).",
							"Applies to training jobs started while it is set, on the CPU or the GPU alike, "
							"so a failing GPU can be simulated on a machine without one.",
							&gnn_fault_backend_calls,
							-1, -1, INT_MAX,
							PGC_SUSET, GUC_NO_SHOW_ALL | GUC_NOT_IN_SAMPLE,
							NULL, NULL, NULL);

	DefineCustomIntVariable("gnn.refresh_naptime",
							"Seconds between background refreshes of tracked graphs (0: off).",
							"A background worker applies the captured changes of every tracked graph "
							"(gnn.track) that has any, as its owner, so a graph lags its tables by about this much.",
							&gnn_refresh_naptime,
							0, 0, 86400,
							PGC_SIGHUP, GUC_UNIT_S,
							NULL, NULL, NULL);

	DefineCustomRealVariable("gnn.merge_threshold",
							 "Largest delta, as a fraction of its graph's size, that a refresh keeps over the loaded graph.",
							 "gnn.refresh_graph writes the rows its changes touch (with those of earlier refreshes) as a "
							 "delta that readers consult in place of the graph's own rows; once the delta would pass this "
							 "fraction of the graph's bytes, or the changes add or remove nodes, the refresh merges "
							 "everything into a new graph instead.  0: always merge.",
							 &gnn_merge_threshold,
							 0.25, 0.0, 1.0,
							 PGC_USERSET, 0,
							 NULL, NULL, NULL);

	DefineCustomBoolVariable("gnn.progress",
							 "Report the progress of long calls as NOTICEs.",
							 "gnn.train(..., wait => true) and gnn.wait report each tenth of a job's epochs and "
							 "at least every 10 seconds (epoch, loss, validation metric, time so far and left); "
							 "gnn.load_graph and gnn.partition report their phases on large inputs; a job says "
							 "which device it runs on.",
							 &gnn_progress,
							 true,
							 PGC_USERSET, 0,
							 NULL, NULL, NULL);
	/* the old name, which needed quotes (VERBOSE is a keyword): off silences too */
	DefineCustomBoolVariable("gnn.verbose",
							 "Deprecated name of gnn.progress (off silences progress too).",
							 NULL,
							 &gnn_verbose_deprecated,
							 true,
							 PGC_USERSET, GUC_NO_SHOW_ALL | GUC_NOT_IN_SAMPLE,
							 NULL, NULL, NULL);

	DefineCustomBoolVariable("gnn.persist_graphs",
							 "Write loaded graphs to the graph store in the data directory, so that they survive a restart.",
							 "gnn.load_graph(..., persist => ...) overrides it per load. Graphs that follow their "
							 "tables (gnn.track) are always stored.",
							 &gnn_persist_graphs,
							 true,
							 PGC_USERSET, 0,
							 NULL, NULL, NULL);

	DefineCustomIntVariable("gnn.feature_cache_size",
							"Feature rows the shared cache of a graph whose features are on disk holds.",
							"Graphs loaded with feature_store => 'disk' read their feature rows through one "
							"cache per graph version (SIEVE eviction) that every session and training job "
							"shares.  It is made with this size by the first use of the version (counted "
							"against gnn.max_graph_memory, smaller when that has less room); 0 makes this "
							"session read every row from disk, past the cache.",
							&gnn_feature_cache_kb,
							262144, 0, INT_MAX / 2,
							PGC_USERSET, GUC_UNIT_KB,
							NULL, NULL, NULL);

	GnnPartitionInit();
	GnnEstimateInit();

	/* everything below needs shared memory reserved at server start */
	if (!process_shared_preload_libraries_in_progress)
		return;

	DefineCustomIntVariable("gnn.max_graphs",
							"How many graphs can be loaded at once.",
							NULL,
							&gnn_max_graphs,
							64, 1, 100000,
							PGC_POSTMASTER, 0,
							NULL, NULL, NULL);
	MarkGUCPrefixReserved("gnn");
	GnnShmemInit(GnnStoreScan);	/* stored graphs come back when shared memory is made */
	GnnStoreInit();
	GnnRefresherInit();
}
