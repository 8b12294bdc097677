/*
 * gnn_pg.h: declarations shared by the PostgreSQL glue (src/pg).
 */
#ifndef GNN_PG_H
#define GNN_PG_H

#include "postgres.h"

#include "port/atomics.h"
#include "nodes/pg_list.h"
#include "storage/condition_variable.h"
#include "storage/dsm.h"
#include "storage/lwlock.h"
#include "utils/timestamp.h"
#include "utils/jsonb.h"

#include "graph/graph.h"
#include "train/train.h"
#include "train/train_mb.h"

#define GNN_GRAPH_NAME_LEN NAMEDATALEN

/* GUCs */
extern int	gnn_max_graph_memory_mb;
extern int	gnn_max_graphs;
extern int	gnn_threads;
extern int	gnn_max_jobs;
extern int	gnn_eval_nodes;
extern char *gnn_cuda_library;
extern int	gnn_fault_backend_calls;
extern int	gnn_max_classes;
extern int	gnn_max_cache_memory_mb;
extern double gnn_khop_max_fraction;
extern int	gnn_similar_ef;
extern int	gnn_fault_index_delay_ms;
extern int	gnn_fault_compute_delay_ms;
extern int	gnn_similar_index_min_rows;
extern int	gnn_job_nice;
extern void GnnJobPriority(void);
extern int	gnn_gpu_cache_size_mb;
extern int	gnn_gpu_graph_memory_mb;
extern bool gnn_persist_graphs;
extern char *gnn_dist_host;
extern bool gnn_progress;
extern bool gnn_verbose_deprecated;
extern bool GnnProgressOn(void);
/*
 * Progress of a phase of a long call (gnn.progress, load.c): a NOTICE when
 * the phase was large (rows >= 1M) or slow (>= 2 s since since).
 */
extern void GnnPhaseDone(const char *what, int64 rows, TimestampTz since);
extern int	gnn_feature_cache_kb;

#define GNN_JOB_SLOTS 64

/* one named graph in the registry */
typedef struct GnnGraphEntry
{
	bool		in_use;
	Oid			dbid;
	Oid			owner;
	char		name[GNN_GRAPH_NAME_LEN];
	dsm_handle	handle;
	uint64		bytes;
	/* the rows refreshes changed since the base (gnn_graph_attach_delta); INVALID: none */
	dsm_handle	delta_handle;
	uint64		delta_bytes;
	uint64		generation;		/* changes on every load / replace */
	uint64		prior_generation;	/* a refresh's version: the one it followed (0: a load) */
	int64		nodes;
	int64		edges;
	int32		feat_dim;
	int32		feat_kind;
	int32		classes;
	int64		n_train;
	int64		n_val;
	int64		n_test;
	bool		undirected;
	bool		feat_encoded;	/* features are encoded columns of the node table (meta lists them) */
	TimestampTz loaded_at;
	/* the node table and its columns as loaded (InvalidOid / empty: none) */
	Oid			nodes_rel;
	char		id_col[NAMEDATALEN];
	char		feat_col[NAMEDATALEN];
	char		label_col[NAMEDATALEN];
	char		split_col[NAMEDATALEN];
	/* the edge table as loaded: with the node table's, a reload's arguments */
	Oid			edges_rel;
	char		src_col[NAMEDATALEN];
	char		dst_col[NAMEDATALEN];
	char		weight_col[NAMEDATALEN];
	bool		skip_dangling;
	/* the sparse feature table as loaded (InvalidOid: none) */
	Oid			sparse_rel;
	char		sparse_id_col[NAMEDATALEN];
	char		sparse_index_col[NAMEDATALEN];
	char		sparse_value_col[NAMEDATALEN];
	bool		schema_graph;	/* gnn.load_schema_graph: its meta says how to load it again */
	bool		tracked;		/* follows its tables: gnn.track (track.c) */
	TimestampTz refreshed_at;	/* last gnn.refresh_graph (0: never) */
	/* training workers holding the segment beyond a statement (GnnGraphKeepMapping) */
	int32		holders;
	/* the last gnn.partition() assignment (funcs_partition.c), its own DSM segment */
	dsm_handle	part_handle;	/* DSM_HANDLE_INVALID: none */
	uint64		part_bytes;		/* accounted against gnn.max_graph_memory */
	int32		part_parts;
	char		part_method[16];
	/*
	 * The graph store (store.c): the graph has files under
	 * $PGDATA/gnn/<database>/<owner>_<name>/.  After a restart an entry
	 * comes back from them unmapped (handle DSM_HANDLE_INVALID, nothing
	 * counted against gnn.max_graph_memory) and is mapped on first use;
	 * store_error says why its files were refused (then it is never mapped).
	 */
	bool		stored;
	bool		part_stored;	/* partition.gnn holds this generation's partition */
	char		store_error[192];
	/*
	 * The dense features are not in the region but in the graph store's
	 * features file of this generation (feature_dim, feat_kind dense): read
	 * through the version's shared row cache (GnnFeaturesAttach): its own
	 * pinned DSM segment, made on first use, counted against
	 * gnn.max_graph_memory, gone with the version.
	 */
	bool		feat_disk;
	/*
	 * A graph that follows its tables, back from the graph store after a
	 * restart: the store has its last full version (load, merge), not the
	 * deltas of later refreshes, so its next refresh reloads it.
	 */
	bool		reload_at_refresh;
	dsm_handle	cache_handle;	/* DSM_HANDLE_INVALID: not made yet */
	uint64		cache_bytes;
} GnnGraphEntry;

/* ------------------------------------------------------------------ jobs */
typedef enum GnnJobState
{
	GNN_JOB_FREE = 0,
	GNN_JOB_STARTING,			/* slot taken, worker not yet running */
	GNN_JOB_RUNNING,
	GNN_JOB_SUCCEEDED,
	GNN_JOB_FAILED,
	GNN_JOB_CANCELLED
} GnnJobState;

/* a job in one of these states is over (its slot waits to be reused) */
static inline bool
GnnJobFinal(GnnJobState s)
{
	return s == GNN_JOB_SUCCEEDED || s == GNN_JOB_FAILED || s == GNN_JOB_CANCELLED;
}

#define GNN_MAX_FANOUTS 8

/* Everything a worker needs to run a job, validated by gnn.train. */
#define GNN_MAX_TYPE_FANOUTS 16

typedef struct GnnTrainRequest
{
	char		graph[NAMEDATALEN];
	char		model_name[NAMEDATALEN];
	char		model[16];		/* gcn, graphsage, gat, rgcn, hetero_sage, mlp, node2vec */
	char		task[32];		/* node_classification, link_prediction, regression; embedding (node2vec) */
	char		device[16];		/* auto, cpu, cuda */
	char		aggregator[16];
	char		optimizer[16];
	char		select[16];
	int32		hidden;
	int32		layers;
	int32		epochs;
	int32		heads;
	int32		out_heads;
	int32		patience;
	float8		lr;
	float8		weight_decay;
	float8		dropout;
	float8		attn_dropout;
	int64		seed;
	bool		row_normalise;
	int32		nfanouts;
	int32		fanouts[GNN_MAX_FANOUTS];
	int32		batch_size;
	int32		prefetch;		/* batches sampled ahead (options.prefetch; -1: not given) */
	int32		gpu_sampling;	/* options.gpu_sampling: -1 not given (on), 0, 1 */
	char		cache_policy[16];	/* options.cache_policy: presample (default), degree */
	char		evaluation[16]; /* options.evaluation: sampled (default), full ('' not given) */
	int32		eval_nodes;		/* options.eval_nodes: validation nodes measured per epoch (0: not
								 * given; -1: "all"); gnn.eval_nodes fills it in where it applies */
	/*
	 * options.eval_batch_size (0: not given, the training batch size).
	 * Larger batches gather and transform a shared neighbour once (forward
	 * only: no gradients held), but their buffers are new to the job: on
	 * the 2-core machine 2048 seeds saved 10% of the test pass and made the
	 * first validation pass 2.4x slower than the next (bench/train_job.sh).
	 */
	int32		eval_batch_size;
	/*
	 * evaluation keeps no layer-0 rows between batches (train_mb.h's
	 * eval_reuse_rows -1): set by GnnCheckJobMemory where the job fits
	 * gnn.max_job_memory only without them
	 */
	bool		eval_reuse_off;
	char		sampler[16];
	int64		fault_after;	/* fault injection: backend calls after this many fail; < 0 off */
	int32		threads;
	int32		feature_cache_kb;	/* the caller's gnn.feature_cache_size, for the worker */
	int32		max_job_memory_kb;	/* the caller's gnn.max_job_memory (0: none) */
	int64		host_estimate_bytes;	/* gnn.estimate's host total, where gnn.train made one (0: none) */
	/* subgraph samplers 'cluster' and 'saint_rw' (0: the core's default) */
	int32		num_parts;
	int32		clusters_per_batch;
	int32		walk_length;
	int32		roots;
	int32		presample;
	int32		saint_batches;
	/* node2vec (walk_length above; 0 / NAN: the core's default) */
	int32		walks_per_node;
	int32		window;
	int32		negatives;
	float8		p;
	float8		q;
	bool		dim_set;		/* options.dim given */
	/* schema graphs */
	int32		num_bases;		/* rgcn: 0 = full weights per relation */
	char		edge_type[NAMEDATALEN]; /* link prediction on one relation ('' = all arcs) */
	int32		temporal;		/* -1: default (on when the target type has times), 0, 1 */
	char		temporal_strategy[16];	/* uniform, last */
	/*
	 * options.streams: "batch" (default: draws split by batch chunk) or
	 * "node" (each node's draws keyed by the job seed, hop and node id:
	 * the same batches on one server as over several, which always draw
	 * so)
	 */
	char		streams[8];
	/*
	 * options.feature_slices: over several servers that each hold the whole
	 * graph, layer 0 split by feature columns (P3, train_mb.h)
	 */
	bool		feature_slices;
	bool		has_as_of;		/* options.seed_time: every seed samples at as_of */
	int64		as_of;			/* microseconds since 2000-01-01 (a timestamptz) */
	bool		row_normalise_set;
	bool		attn_dropout_set;
	/* fan-outs per edge type or source node type: names and their per-hop fan-outs */
	int32		ntype_fanouts;
	char		type_fanout_names[GNN_MAX_TYPE_FANOUTS][NAMEDATALEN];
	int32		type_fanouts[GNN_MAX_TYPE_FANOUTS][GNN_MAX_FANOUTS];
	char		params_json[2048];	/* the same, as jsonb text for the catalog */
	/*
	 * Several servers (options.peers): the peers' conninfos, one per line
	 * ('' = this server alone), the conninfo they reach this one by, the
	 * collectives' timeout, and the options as the peers get them (without
	 * these three).  Never in params_json: conninfos may hold passwords.
	 */
	char		dist_peers[4096];
	int32		dist_npeers;
	char		dist_coordinator[1024];
	int32		dist_timeout_ms;
	char		dist_options[2048];
	char		deploy[16];		/* '' (none), always, if_better */
} GnnTrainRequest;

typedef struct GnnJobSlot
{
	GnnJobState state;
	int64		id;
	Oid			dbid;
	Oid			extoid;			/* the extension instance: ids restart when it is recreated */
	Oid			owner;
	int			pid;
	int			creator_pid;	/* the session that called gnn.train */
	TimestampTz creator_start;	/* and when that process started (pids are reused) */
	bool		pending;		/* starts when the creator's transaction commits */
	bool		cancel_requested;
	int32		epoch;
	int32		epochs;
	float4		loss;
	float4		train_acc;
	float4		val_acc;
	char		device[16];
	char		device_note[256];	/* why the CPU was used under device => auto */
	bool		device_note_expected;	/* the normal CPU case (no GPU here): said only with gnn.progress */
	TimestampTz started;
	TimestampTz finished;
	char		error[512];
	GnnTrainRequest req;
} GnnJobSlot;

/*
 * A dropped or replaced graph whose segment training workers still map: its
 * memory stays counted (gnn.memory_used) until the last of them lets go.
 */
typedef struct GnnRetiredGraph
{
	dsm_handle	handle;			/* DSM_HANDLE_INVALID: free */
	uint64		bytes;
	int32		holders;
} GnnRetiredGraph;

/* ------------------------------------------------------------------ shared inference results (cache.c) */
#define GNN_CACHE_SLOTS 128

typedef enum GnnResultKind
{
	GNN_RESULT_EMBED = 0,
	GNN_RESULT_PROBS = 1
} GnnResultKind;

typedef enum GnnCacheState
{
	GNN_CACHE_FREE = 0,
	GNN_CACHE_COMPUTING,
	GNN_CACHE_READY
} GnnCacheState;

/* an embedding result's approximate index (gnn.similar) */
typedef enum GnnIndexState
{
	GNN_INDEX_NONE = 0,			/* none yet: the first gnn.similar asks for one */
	GNN_INDEX_BUILDING,			/* a background worker builds it */
	GNN_INDEX_READY,
	GNN_INDEX_FAILED			/* could not be built (too large for the budget, an error): exact scans */
} GnnIndexState;

/* the calls' latencies an entry keeps (gnn.cache's mean and p99) */
#define GNN_CACHE_LATENCIES 128

/* one approximate index of an entry, over its rows [first, first + rows) */
typedef struct GnnCacheIndexSlot
{
	int32		state;			/* GnnIndexState */
	dsm_handle	handle;			/* READY: the pinned segment */
	uint64		bytes;
	int64		first;
	int64		rows;
	double		seconds;		/* time to build it */
	int			pid;			/* BUILDING: the worker */
	int64		calls;			/* calls it answered */
} GnnCacheIndexSlot;

typedef struct GnnCacheKey
{
	Oid			dbid;
	Oid			owner;			/* the model's owner: only sessions of that role reach it */
	int64		model_id;		/* gnn.models.id */
	uint32		model_xmin;		/* the model row's version */
	uint64		generation;		/* the graph's version */
	int32		kind;			/* GnnResultKind */
	int32		layer;			/* resolved layer (embeddings) */
	bool		has_as_of;		/* a time-aware model asked as of one moment (as_of =>) */
	int64		as_of;			/* that moment (a timestamptz); 0 without */
} GnnCacheKey;

typedef struct GnnCacheEntry
{
	GnnCacheState state;
	GnnCacheKey key;
	char		model[NAMEDATALEN];
	int32		version;
	char		graph[NAMEDATALEN];
	dsm_handle	handle;			/* READY: the pinned segment */
	uint64		bytes;
	int64		rows;
	int32		cols;
	int64		hits;
	uint64		last_used;		/* cache_clock at the last use, for LRU */
	uint64		serial;			/* unique per entry ever made */
	TimestampTz created;
	double		seconds;		/* time to compute it */
	int			computing_pid;
	int64		misses;			/* calls that found it missing or being computed */
	int64		computed;		/* rows computed to make it (all, or those a refresh could change) */
	bool		stale;			/* of the graph's previous version: answers only statements that
								 * still see it, and is the base the next version's result is
								 * recomputed from where a refresh changed little (evicted first) */
	/* approximate indexes, by metric (GNN_HNSW_COSINE: gnn.similar, GNN_HNSW_DOT: gnn.recommend) */
	GnnCacheIndexSlot index[2];
	/* the last calls' latencies in ms (a ring: the next goes at lat_count % GNN_CACHE_LATENCIES) */
	uint64		lat_count;
	float		lat_ms[GNN_CACHE_LATENCIES];
} GnnCacheEntry;

/* A result (every node's row of one layer), mapped: valid until the transaction ends. */
typedef struct GnnResult
{
	int64		rows;
	int32		cols;
	const int64 *ids;			/* node ids, ascending (the graph's order) */
	const float *out;			/* rows x cols */
	const float *norms;			/* row norms */
	const uint16 *emb16;		/* embeddings: the rows in bf16 (gnn.similar's scan), or NULL */
	Size		bytes;			/* the segment's size */
	bool		fresh;			/* mapped by this call (its pages not yet touched here) */
	uint64		serial;			/* the cache entry it is (0: this transaction's own) */
	int64		computed;		/* rows the compute function computed (set to rows before it runs) */
} GnnResult;

typedef void (*GnnComputeFn) (void *arg, GnnResult *res);	/* fills res->ids and res->out */

/* funcs_model.c: the layer gnn.embedding answers by default (the worker shares the same one) */
extern int32 GnnDefaultEmbeddingLayer(int layers, bool classifier);
/* worker.c: fan-outs per relation from names (jobs sample by it, serving samples time-aware models by it) */
extern int32 *GnnTypeFanouts(const gnn_graph *g, int nfanouts, const int32 *fanouts, int ntf,
							 const char (*names)[NAMEDATALEN], const int32 (*lists)[GNN_MAX_FANOUTS]);

extern void GnnCacheInitProcess(void);
extern void GnnCacheClaimOwn(bool on);
extern void GnnCacheBeforeCompute(void (*fn) (void *), void *arg);
extern bool GnnCacheClaim(const GnnCacheKey *key, const char *model, int32 version, const char *graph,
						  int64 rows, int32 cols);
extern bool GnnCacheHolds(const GnnCacheKey *key);
extern void GnnCacheReleaseClaims(void);
extern void GnnCacheGet(const GnnCacheKey *key, const char *model, int32 version, const char *graph,
						int64 rows, int32 cols, GnnComputeFn compute, void *arg, GnnResult *res, bool *hit);
extern dsm_segment *GnnResultCreate(int64 rows, int32 cols, bool with16, GnnResult *res);
extern void GnnResultFinish(GnnResult *res);
extern void GnnResultPrefault(const GnnResult *res);
extern void GnnCachePublish(const GnnCacheKey *key, const char *model, int32 version, const char *graph,
							dsm_segment *seg, GnnResult *res, double seconds);
extern bool GnnCacheLookup(const GnnCacheKey *key, GnnResult *res);
extern bool GnnCacheBase(const GnnCacheKey *key, GnnResult *res, uint64 *generation);
extern const void *GnnCacheIndex(const GnnResult *res, int metric, int64 first, int64 rows, bool build, Size *bytes);
extern void GnnCacheNoteLatency(uint64 serial, TimestampTz start, int by_index);
extern PGDLLEXPORT void GnnIndexWorkerMain(Datum arg);
extern int	GnnCacheDrop(const char *model, int32 version);
extern void GnnCachePurgeGraph(const char *graph, Oid owner, uint64 live_generation, uint64 keep_generation);
extern void GnnCachePurgeGeneration(const char *graph, Oid owner, uint64 generation);

typedef struct GnnShared
{
	LWLock	   *lock;			/* protects everything below */
	uint64		instance;		/* random per shared-memory lifetime */
	uint64		graph_bytes;	/* registered + reserved graph memory */
	uint64		next_generation;
	int			max_graphs;
	GnnJobSlot	jobs[GNN_JOB_SLOTS];
	GnnRetiredGraph retired[GNN_JOB_SLOTS];
	/* shared inference results */
	uint64		cache_bytes;
	uint64		cache_clock;
	uint64		cache_serial;
	pg_atomic_uint32 active_scans;	/* gnn.similar scans running now (their thread count) */
	/*
	 * a job's worker found no GPU here (no NVIDIA driver or device) behind
	 * this CUDA library (the path loaded; empty: none found yet): later
	 * jobs with device 'auto' skip the probe (370 ms of CUDA's start-up
	 * failing), until the server restarts
	 */
	char		no_gpu_library[MAXPGPATH];
	ConditionVariable cache_cv;
	ConditionVariable job_cv;	/* a job's state became final (its waiters wake at once) */
	GnnCacheEntry cache[GNN_CACHE_SLOTS];
	GnnGraphEntry graphs[FLEXIBLE_ARRAY_MEMBER];
} GnnShared;

extern GnnShared *gnn_shared;

/* shmem.c */
/* on_create: run once when the shared struct is first made (the graph store's scan) */
extern void GnnShmemInit(void (*on_create) (void));
extern void GnnRequirePreload(void);
extern dsm_segment *GnnDsmCreate(Size bytes, int flags);
extern dsm_segment *GnnDsmAttach(dsm_handle h);

/* registry.c */
typedef struct GnnGraphRef
{
	dsm_segment *seg;
	dsm_segment *dseg;			/* the delta's, NULL when none */
	void	   *flat;			/* base and delta merged (GnnGraphAcquire): malloc'd, freed on release */
	gnn_graph	g;
	GnnGraphEntry entry;		/* a copy taken when attached */
	bool		kept;			/* GnnGraphKeepMapping: counted in the entry's holders */
	bool		borrowed;		/* this transaction's unpublished version (track.c): not ours to unmap */
} GnnGraphRef;

extern void GnnGraphAcquire(const char *name, GnnGraphRef *ref);
extern void GnnGraphAcquireView(const char *name, GnnGraphRef *ref);
extern void GnnGraphFlattenRef(GnnGraphRef *ref);
extern void GnnGraphRelease(GnnGraphRef *ref);
extern void GnnGraphForgetStatement(const char *name);
extern uint64 GnnGraphNewGeneration(void);
extern void GnnGraphKeepMapping(GnnGraphRef *ref);
extern void GnnEdgelessView(const gnn_graph *g, gnn_graph *out);
extern void GnnCheckGraphName(const char *name);
extern uint64 GnnGraphReserve(uint64 bytes, const char *name);
extern void GnnGraphReservationOwned(uint64 bytes);
extern void GnnGraphUnreserve(uint64 bytes);
extern bool GnnGraphDrop(const char *name, bool if_exists, Oid owner);
/* registry.c: registry changes take effect at commit */
typedef enum GnnPendingState
{
	GNN_PENDING_NONE,			/* nothing staged: the registered graph (or none) */
	GNN_PENDING_VERSION,		/* a version staged by this transaction */
	GNN_PENDING_DROPPED			/* dropped by this transaction */
} GnnPendingState;
extern void GnnPublishAtCommit(const GnnGraphEntry *proto, dsm_segment *seg, uint64 reserved,
							   const char *staged, uint64 feat_gen);
extern void GnnPublishDeltaAtCommit(const GnnGraphEntry *proto, dsm_segment *dseg, uint64 reserved);
extern void GnnDropAtCommit(const char *name, Oid owner);
extern void GnnUntrackAtCommit(const char *name, Oid owner);
extern GnnPendingState GnnPendingLookup(const char *name, Oid owner, GnnGraphEntry *entry,
										dsm_segment **seg, dsm_segment **dseg);
extern int	GnnPendingVersions(GnnGraphEntry *out, int max);
extern GnnGraphEntry *GnnRegistryFreeSlot(void);
extern void GnnGraphDropDatabase(Oid dbid);
extern bool GnnGraphExists(const char *name);
/* owner's graph name in this database; the caller holds gnn_shared->lock */
extern GnnGraphEntry *GnnGraphEntryOf(const char *name, Oid owner);
extern uint64 GnnGraphGeneration(const char *name);
/* a partition segment (funcs_partition.c), also as stored in partition.gnn */
#define GNN_PART_MAGIC 0x47505254u	/* "GPRT" */

typedef struct GnnPartitionHeader
{
	uint32		magic;
	int32		parts;
	int64		nodes;
	uint64		generation;		/* of the graph it was computed on */
	double		seconds;
	uint32		balance;
	int32		method;
	int32		part[FLEXIBLE_ARRAY_MEMBER];
} GnnPartitionHeader;

/* a partition segment validated against its graph (ERROR when corrupt): registry.c */
extern const GnnPartitionHeader *GnnPartitionOf(dsm_segment *seg, const GnnGraphRef *ref, const char *graph);

/* registry.c, partitions: attach / publish / free a graph's partition segment */
extern dsm_segment *GnnPartitionAttach(const char *name, uint64 generation);
extern void GnnPartitionPublish(const char *name, uint64 generation, dsm_segment *seg,
								uint64 bytes, int32 parts, const char *method);
extern void GnnPartitionFree(GnnGraphEntry *e);
extern bool GnnPartitionIsStaged(dsm_segment *seg);

/* store.c: loaded graphs on disk, back after a restart */
extern void GnnStoreInit(void);
extern void GnnStoreScan(void);
struct TupleDescData;
extern bool GnnGraphRowArgs(FunctionCallInfo fcinfo, char **name, Oid *owner, struct TupleDescData **tupdesc);
extern bool GnnStoreTrackedToo(const char *name, bool tracked, int persist);
extern char *GnnStoreStage(GnnGraphEntry *proto, const void *region, uint64 size);
extern bool GnnStoreCommitStaged(Oid dbid, Oid owner, const char *name, const char *staged);
extern void GnnStoreRemoveStaged(Oid dbid, Oid owner, const char *name, const char *staged);
extern void GnnStorePersistPartition(const GnnGraphEntry *e, const void *region, uint64 size);
extern void GnnStoreRemove(Oid dbid, Oid owner, const char *name);
extern uint64 GnnGraphMemoryFree(void);
extern void GnnStoreRetire(Oid dbid, Oid owner, const char *name, uint64 keep, bool keep_graph);
/*
 * Dense features a load wrote to a temporary file as it read them
 * (feature_store => 'disk': the loader never holds the matrix): its row j
 * is input row j's, or input row i is its row input_row[i] (rows reordered
 * after the scan: text keys).
 */
struct BufFile;
typedef struct GnnFeatureSpill
{
	struct BufFile *file;
	int64		rows;
	int32		dim;
	int64	   *input_row;		/* NULL: the same */
} GnnFeatureSpill;
extern void GnnStoreWriteFeatures(const GnnGraphEntry *proto, const gnn_graph *g, const float *feat,
								  const GnnFeatureSpill *spill, const int64 *src_row, int32 dim);
extern void GnnStoreRemoveFeatures(Oid dbid, Oid owner, const char *name, uint64 generation);
extern void GnnFeaturesAttach(const GnnGraphEntry *e, gnn_graph *g);
extern void GnnFeaturesKeep(uint64 generation);
extern void GnnStoreRemovePartition(Oid dbid, Oid owner, const char *name);
extern bool GnnStoreMap(const char *name, Oid owner);
extern char *GnnStoreDir(Oid dbid, Oid owner, const char *name);

/* load.c */
typedef struct GnnLoadArgs
{
	const char *name;
	Oid			edges;
	const char *src;
	const char *dst;
	Oid			nodes;			/* InvalidOid: none */
	const char *id;
	const char *features;		/* one real[] column, or one ordinary column (encoded) */
	/* encoded columns: these (NIL with features_all: every column but id, label, split, part) */
	List	   *feature_list;
	bool		features_all;	/* '*', or the columns of feature_list as '*' would take them */
	const char *label;
	const char *split;
	const char *weight;
	bool		undirected;
	bool		replace;
	Oid			sparse;			/* InvalidOid: none */
	const char *sparse_id;
	const char *sparse_index;
	const char *sparse_value;
	bool		skip_dangling;
	bool		track;			/* capture changes of the tables from now on */
	int			persist;		/* write it to the graph store: 1, 0, -1 = gnn.persist_graphs */
	const char *feature_store;	/* 'memory' (NULL), 'disk', 'auto' */
	/* one part of a partitioned graph: the node table's rows whose part_column is part */
	const char *part_column;	/* NULL: the whole graph */
	int32		part;
	/*
	 * the part's halo depth: the nodes within halo_hops - 1 hops of its own
	 * keep all their edges (1: the own nodes' edges, their other endpoints
	 * the halo), so a sampler draws halo_hops hops from own seeds as on the
	 * whole graph
	 */
	int32		halo_hops;
	/*
	 * feature_slice [index, count]: the graph keeps only columns
	 * [index F / count, (index + 1) F / count) of its F-wide feature arrays
	 * (a server's share of a first layer split by columns over count
	 * servers, gnn.train's feature_slices); count 0: every column
	 */
	int32		slice_index;
	int32		slice_count;
} GnnLoadArgs;

extern void GnnLoadGraph(const GnnLoadArgs *args, GnnGraphEntry *result);
extern void GnnLoadArgsFromEntry(const GnnGraphEntry *e, GnnLoadArgs *a);

/* track.c: change capture and refresh */
/* the (owner, graph) transaction lock: loads, refreshes, gnn.track and drops of one name in turn */
extern void GnnLockGraph(const char *graph, Oid owner);
struct LOCKTAG;
extern void GnnGraphLockTag(struct LOCKTAG *tag, const char *graph, Oid owner);
extern bool GnnTrackBegin(const GnnLoadArgs *args);
extern bool GnnTrackSchemaBegin(const char *name, const Oid *rels, int nrel, bool track);
extern void GnnTrackEnd(const char *name);
extern void GnnTrackDropAll(const char *name, Oid owner);
typedef struct GnnRefreshResult
{
	int64		ins_e,
				del_e,
				ins_n,
				del_n,
				upd_n;
	int64		touched;		/* nodes whose data or arcs changed */
	bool		reloaded;
	bool		delta;			/* kept as a delta over the loaded graph (gnn.merge_threshold) */
} GnnRefreshResult;
extern void GnnRefreshGraph(const char *name, bool merge, GnnRefreshResult *out);
extern bool GnnGraphHasDelta(const char *name);
extern int	GnnCmpInt64(const void *a, const void *b);
extern int64 GnnSortUnique64(int64 *a, int64 n);

/* refresher.c: gnn.refresh_naptime's background refresher */
extern int	gnn_refresh_naptime;
extern double gnn_merge_threshold;
extern void GnnRefresherInit(void);
/* keys.c: nodes by key, keys of nodes (see there) */
extern char *GnnTypeNames(const gnn_graph *g, bool relations);
extern int32 GnnResultType(const gnn_graph *g, const char *node_type, const char *graph);
extern Datum GnnNodeKeyText(const gnn_graph *g, int64 v);
extern char *GnnKeySqlType(const char *graph, int32 type);
extern bool GnnGraphFeatureSlice(const gnn_graph *g, int32 *index, int32 *count);
extern int64 GnnFindNodeInt(const gnn_graph *g, int32 t, int64 id, const char *graph);
extern bool GnnIntKey(const char *key, int64 *id);
extern int64 GnnFindNodeText(const gnn_graph *g, int32 t, const char *key, const char *graph);

/* funcs_graph.c: one row of gnn.graph_info (13 columns) */
/* columns of one row of gnn.graphs (GnnEntryToValues, load/load.c) */
#define GNN_GRAPH_COLS 13
extern void GnnEntryToValues(const GnnGraphEntry *e, Datum *values, bool *nulls);

/* funcs_partition.c */
extern int	gnn_max_partition_memory_kb;
extern int	gnn_partition_objective;
extern void GnnPartitionInit(void);
extern gnn_status GnnTrainSubgraph(const GnnTrainRequest *r, const GnnGraphRef *ref,
								   const gnn_train_config *cfg, gnn_backend *be,
								   gnn_progress_fn progress, gnn_should_stop_fn should_stop,
								   gnn_model **model, gnn_train_result *res, gnn_error *err);

/* helpers */
extern bool GnnIsOwnerOrSuper(Oid owner);

/* catalog.c: writing gnn.job_history, gnn.training_log, gnn.models */
typedef struct GnnCatalogWrite
{
	Oid			save_user;
	int			save_sec;
	int			nestlevel;
} GnnCatalogWrite;

extern void GnnCatalogBegin(GnnCatalogWrite *w);
extern void GnnCatalogEnd(GnnCatalogWrite *w);
extern int	GnnCatalogExec(const char *sql, int nargs, Oid *types, Datum *values, const char *nulls,
						   long tcount);
extern void GnnCheckVersion(int32 version);
extern bool GnnDeployAfterTraining(const char *name, int32 new_version, const char *mode, const char **why);

/* jobs.c / worker.c */
extern const char *GnnJobStateName(GnnJobState s);
extern void GnnTrainRequestFromArgs(FunctionCallInfo fcinfo, GnnTrainRequest *r);

/* dist.c: a training job over several servers (options.peers), from the coordinator's worker */
extern void GnnDistCheckConninfo(const char *conninfo, const char *who);
/* gnn.c: a hint's "raise gnn.x" (or "ask a superuser to raise gnn.x") */
extern const char *GnnRaiseSetting(const char *guc);
/* jobs.c: the extension's lifetime */
extern void GnnJobIdRaiseFloor(int64 id);
extern void GnnJobsStopExtension(Oid extoid);
typedef struct GnnDistJob GnnDistJob;
extern GnnDistJob *GnnDistJobAlloc(void);
/* results over the parts (gnn.embed with options.peers): rank 0's rows, or its own (local) */
typedef struct GnnDistRows
{
	int64		n;
	int32		cols;
	int64	   *ids;			/* the rows' integer keys (a typed graph's) or ids */
	float	   *rows;
	int64	   *key_off;		/* text keys (uuid, text): row i's is key_bytes[key_off[i] .. key_off[i+1]) */
	char	   *key_bytes;
	const char *key_type;		/* their SQL type; NULL: integer keys */
	int64		written_elsewhere;	/* options.write local: the rows every server wrote, this one's too */
} GnnDistRows;
struct gnn_infer_temporal_config;
extern void GnnDistInferRows(const GnnTrainRequest *dr, gnn_model *model, const gnn_graph *g, const char *graph,
							 int32 layer, bool softmax, bool row_normalise, const char *node_type,
							 const char *local_table, const struct gnn_infer_temporal_config *tc,
							 GnnDistRows *out);
extern void GnnEmbedNoColumnTable(const char *table);
extern char *GnnEmbedTargetPrepare(const char *table, const char *column, const char *idcol,
								  const char *key_type, const char *coltype, const char *source,
								  char **qname);
extern int64 GnnDistWriteRows(const char *table, const char *column, const char *idcol, const char *coltype,
							   const GnnDistRows *rows);
extern Jsonb *GnnTakeDistOptions(Jsonb *opts, GnnTrainRequest *r);
extern void GnnDistJobStart(const GnnTrainRequest *r, int64 job_id, GnnDistJob *dj);
extern struct gnn_dist *GnnDistJobMesh(GnnDistJob *dj);
extern struct gnn_dist *GnnDistJobBatchesMesh(GnnDistJob *dj);
extern void GnnDistJobProgress(const gnn_epoch_metrics *m);
extern void GnnDistJobFinish(GnnDistJob *dj, gnn_status st, struct StringInfoData *ranks_json);
extern void GnnDistJobEnd(GnnDistJob *dj);

/* estimate.c: a job's memory before it runs, and gnn.max_job_memory */
extern int	gnn_max_job_memory_kb;
extern void GnnEstimateInit(void);
extern void GnnTrainConfigFor(const GnnTrainRequest *r, const gnn_graph *g, bool cuda, gnn_train_config *cfg);
extern bool GnnCheckFeatureSlice(const gnn_graph *g, const GnnTrainRequest *r, int rank, int size);
extern void GnnDistPreflight(const gnn_graph *g, const GnnTrainRequest *r, int rank, int size);
extern gnn_status GnnRunMinibatch(const gnn_graph *g, const gnn_train_config *cfg, const GnnTrainRequest *r,
								  gnn_backend *be, gnn_progress_fn progress, void *progress_arg,
								  gnn_should_stop_fn should_stop, gnn_model **model, gnn_train_result *res,
								  gnn_minibatch_stats *stats, gnn_error *err);
extern gnn_status GnnRunLinkPrediction(const gnn_graph *g, const gnn_train_config *cfg, const GnnTrainRequest *req,
									   gnn_backend *be, gnn_progress_fn progress, void *progress_arg,
									   gnn_should_stop_fn should_stop, gnn_model **model, gnn_train_result *res,
									   gnn_linkpred_result *lres, gnn_error *err);
extern int64 GnnJobGpuBytes(const GnnTrainRequest *r);
extern struct gnn_backend *GnnJobBackend(const GnnTrainRequest *r, int rank, char *note, size_t notelen,
										 bool *note_expected);
extern void GnnCheckJobMemory(GnnTrainRequest *r, const gnn_graph *g);
PGDLLEXPORT void GnnWorkerMain(Datum arg);

/* core.c: running the core safely inside a PostgreSQL process */
extern void GnnCoreThreadsInit(void);
extern void GnnReportCoreError(const char *what, const gnn_error *err);
extern bool GnnInterruptShouldStop(void *arg);

#endif							/* GNN_PG_H */
