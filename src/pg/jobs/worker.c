/*
 * worker.c: the background worker that runs one training job.
 *
 * It connects to the job's database as the role that started the job (never
 * as a superuser it was not), maps the graph, runs the core's training loop
 * with progress and should-stop callbacks, and writes the catalog in short
 * transactions: the job row at start, per-epoch log rows about once a second,
 * and the model with the final job row at the end.  Errors, cancellation and
 * termination all end in a final state recorded in the job's slot, and in
 * the catalog wherever a transaction can still run.
 */
#include "common/gnn_pg.h"

#include "commands/extension.h"
#include "base/heap.h"
#include "store/feature_store.h"

#include <malloc.h>
#include <unistd.h>
#include <math.h>

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "storage/ipc.h"
#include "tcop/tcopprot.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/json.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "nn/backend.h"
#include "dist/dist.h"
#include "sample/gpu_batch.h"
#include "infer/infer.h"
#include "nn/serialize.h"
#include "train/train.h"
#include "train/train_mb.h"
#include "train/train_subgraph.h"
#include "train/train_node2vec.h"
#include "train/eval.h"

#define LOG_BATCH 1024

typedef struct WorkerCtx
{
	int			slot_index;
	int64		job;
	Oid			owner;			/* the role that started the job: owner of every row written */
	GnnTrainRequest req;
	gnn_epoch_metrics pending[LOG_BATCH];
	/* features on disk: each pending epoch's reads through the store (rows < 0: none) */
	gnn_fstore_stats store_pending[LOG_BATCH];
	struct gnn_fstore *fs;
	int			npending;
	TimestampTz last_flush;
	bool		failed;			/* a catalog write failed, or the job went over its memory: stop */
	char		failure[512];
	int64		heap_base;		/* the core's heap when training began (heap.h) */
} WorkerCtx;

static WorkerCtx *wctx = NULL;

static GnnJobSlot *
MySlot(void)
{
	return &gnn_shared->jobs[wctx->slot_index];
}

/* Set the final state in the slot (lock held briefly; never errors). */
/*
 * In a PG_CATCH of work that must not fail the job: the error, copied into
 * mcxt (the context before the PG_TRY), its state flushed and the current
 * transaction aborted, so that the caller notes it and goes on.
 */
static ErrorData *
CaughtAndAborted(MemoryContext mcxt)
{
	ErrorData  *ed;

	MemoryContextSwitchTo(mcxt);
	ed = CopyErrorData();
	FlushErrorState();
	AbortCurrentTransaction();
	return ed;
}

static void
SlotFinish(GnnJobState st, const char *error)
{
	GnnJobSlot *s = MySlot();

	LWLockAcquire(gnn_shared->lock, LW_EXCLUSIVE);
	if (s->id == wctx->job)
	{
		s->state = st;
		s->finished = GetCurrentTimestamp();
		if (error)
			strlcpy(s->error, error, sizeof(s->error));
	}
	LWLockRelease(gnn_shared->lock);
	ConditionVariableBroadcast(&gnn_shared->job_cv);
}

/* At exit (also FATAL, e.g. pg_terminate_backend): no job stays running. */
static void
WorkerExit(int code, Datum arg)
{
	GnnJobSlot *s;

	if (wctx == NULL || gnn_shared == NULL)
		return;
	s = MySlot();
	LWLockAcquire(gnn_shared->lock, LW_EXCLUSIVE);
	if (s->id == wctx->job)
	{
		if (s->state == GNN_JOB_STARTING || s->state == GNN_JOB_RUNNING)
		{
			s->state = GNN_JOB_FAILED;
			s->finished = GetCurrentTimestamp();
			strlcpy(s->error, "the training worker was terminated", sizeof(s->error));
		}
		s->pid = 0;
	}
	LWLockRelease(gnn_shared->lock);
	ConditionVariableBroadcast(&gnn_shared->job_cv);
}

/*
 * Every statement of the worker writes the extension's own tables
 * (catalog.c): those of the extension the job started with, never a
 * re-created one's (whose ids would collide with this job's).
 */
static void
Exec(const char *sql, int nargs, Oid *types, Datum *values, const char *nulls)
{
	if (get_extension_oid("gnn", true) != MySlot()->extoid)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the gnn extension was dropped while job %lld ran: nothing of it is written",
						(long long) wctx->job)));
	(void) GnnCatalogExec(sql, nargs, types, values, nulls, 0);
}

/* The class names of g (text labels) as a text[], or NULL when its labels are numbers. */
static Datum
ClassNamesArray(const gnn_graph *g, bool *isnull)
{
	Datum	   *d;
	const char *p = g->class_names;

	*isnull = p == NULL || g->num_classes < 1;
	if (*isnull)
		return (Datum) 0;
	d = palloc(sizeof(Datum) * g->num_classes);
	for (int i = 0; i < g->num_classes; i++)
	{
		d[i] = CStringGetTextDatum(p);
		p += strlen(p) + 1;
	}
	return PointerGetDatum(construct_array(d, g->num_classes, TEXTOID, -1, false, TYPALIGN_INT));
}

static void
BeginXact(void)
{
	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	PushActiveSnapshot(GetTransactionSnapshot());
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
}

static void
EndXact(void)
{
	SPI_finish();
	PopActiveSnapshot();
	CommitTransactionCommand();
}

static Datum
Float4OrNull(float v, char *null)
{
	*null = isfinite(v) ? ' ' : 'n';
	return Float4GetDatum(v);
}

/* Write buffered epoch rows and the job's progress in one short transaction. */
static void
FlushLog(void)
{
	if (wctx->npending == 0)
		return;
	BeginXact();
	for (int i = 0; i < wctx->npending; i++)
	{
		gnn_epoch_metrics *m = &wctx->pending[i];
		Oid			t[19] = {INT8OID, INT4OID, FLOAT4OID, FLOAT4OID, FLOAT4OID, FLOAT4OID, FLOAT4OID, FLOAT8OID, OIDOID,
		FLOAT8OID, FLOAT8OID, FLOAT8OID, FLOAT8OID, FLOAT8OID, FLOAT8OID, INT8OID, FLOAT8OID, INT8OID, FLOAT8OID};
		Datum		v[19];
		char		n[20] = "                   ";
		const gnn_fstore_stats *fd = &wctx->store_pending[i];
		double		split[5] = {m->sample_s, m->gather_s, m->compute_s, m->wait_s, m->eval_s};

		v[0] = Int64GetDatum(wctx->job);
		v[1] = Int32GetDatum(m->epoch);
		v[2] = Float4OrNull(m->train_loss, &n[2]);
		v[3] = Float4OrNull(m->train_acc, &n[3]);
		v[4] = Float4OrNull(m->val_acc, &n[4]);
		v[5] = Float4OrNull(m->val_loss, &n[5]);
		v[6] = Float4OrNull(m->test_acc, &n[6]);
		v[7] = Float8GetDatum(m->seconds);
		v[8] = ObjectIdGetDatum(wctx->owner);
		for (int k = 0; k < 5; k++)
		{
			v[9 + k] = Float8GetDatum(isfinite(split[k]) ? split[k] : 0);
			n[9 + k] = isfinite(split[k]) ? ' ' : 'n';
		}
		v[14] = Float8GetDatum(isfinite(m->cache_hit_rate) ? m->cache_hit_rate : 0);
		n[14] = isfinite(m->cache_hit_rate) ? ' ' : 'n';
		v[15] = Int64GetDatum(m->h2d_bytes);
		n[15] = m->h2d_bytes >= 0 ? ' ' : 'n';
		/* features on disk: hit rate, bytes read, read amplification (NULL when not measured) */
		v[16] = Float8GetDatum(fd->rows_requested > 0 ? (double) fd->hits / (double) fd->rows_requested : 0);
		n[16] = fd->rows_requested > 0 ? ' ' : 'n';
		v[17] = Int64GetDatum(fd->bytes_read);
		n[17] = fd->rows_requested >= 0 ? ' ' : 'n';
		v[18] = Float8GetDatum(fd->bytes_needed > 0 ? (double) fd->bytes_read / (double) fd->bytes_needed : 0);
		n[18] = fd->bytes_needed > 0 ? ' ' : 'n';
		Exec("INSERT INTO gnn.training_log (job, epoch, loss, train_acc, val_acc, val_loss, test_acc, seconds, owner, "
			 "sample_seconds, gather_seconds, compute_seconds, wait_seconds, eval_seconds, cache_hit_rate, h2d_bytes, "
			 "store_hit_rate, store_bytes_read, store_read_amplification) "
			 "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9::oid::regrole, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19) "
			 "ON CONFLICT (job, epoch) DO NOTHING", 19, t, v, n);
	}
	{
		gnn_epoch_metrics *m = &wctx->pending[wctx->npending - 1];
		Oid			t[5] = {INT8OID, INT4OID, FLOAT4OID, FLOAT4OID, FLOAT4OID};
		Datum		v[5];
		char		n[6] = "     ";

		v[0] = Int64GetDatum(wctx->job);
		v[1] = Int32GetDatum(m->epoch);
		v[2] = Float4OrNull(m->train_loss, &n[2]);
		v[3] = Float4OrNull(m->train_acc, &n[3]);
		v[4] = Float4OrNull(m->val_acc, &n[4]);
		Exec("UPDATE gnn.job_history SET epoch = $2, loss = $3, train_acc = $4, val_acc = $5 WHERE id = $1",
			 5, t, v, n);
	}
	EndXact();
	wctx->npending = 0;
	wctx->last_flush = GetCurrentTimestamp();
}

/* Called by the core after every epoch, on this (the main) thread. */
static void
OnProgress(void *arg, const gnn_epoch_metrics *m)
{
	GnnJobSlot *s = MySlot();
	MemoryContext mcxt = CurrentMemoryContext;

	LWLockAcquire(gnn_shared->lock, LW_EXCLUSIVE);
	s->epoch = m->epoch;
	s->loss = m->train_loss;
	s->train_acc = m->train_acc;
	s->val_acc = m->val_acc;
	LWLockRelease(gnn_shared->lock);
	GnnDistJobProgress(m);

	if (wctx->failed)
		return;
	wctx->pending[wctx->npending] = *m;
	/* this epoch's reads through the store (the pipeline may have begun the next one's) */
	if (wctx->fs)
		gnn_fstore_stats_take(wctx->fs, &wctx->store_pending[wctx->npending]);
	else
	{
		memset(&wctx->store_pending[wctx->npending], 0, sizeof(gnn_fstore_stats));
		wctx->store_pending[wctx->npending].rows_requested = -1;
	}
	wctx->npending++;
	if (wctx->npending < LOG_BATCH &&
		!TimestampDifferenceExceeds(wctx->last_flush, GetCurrentTimestamp(), 1000))
		return;
	/* never let an error unwind through the core: catch it here and stop */
	PG_TRY();
	{
		FlushLog();
	}
	PG_CATCH();
	{
		ErrorData  *ed = CaughtAndAborted(mcxt);

		wctx->failed = true;
		snprintf(wctx->failure, sizeof(wctx->failure), "could not record progress: %s", ed->message);
	}
	PG_END_TRY();
}

static bool
ShouldStop(void *arg)
{
	int64		used = gnn_heap_current() - wctx->heap_base;

	/* gnn.max_job_memory, measured: an estimate that was low does not let a job run away */
	if (wctx->req.max_job_memory_kb > 0 && gnn_heap_tracked() && used > (int64) wctx->req.max_job_memory_kb * 1024 &&
		!wctx->failed)
	{
		wctx->failed = true;
		snprintf(wctx->failure, sizeof(wctx->failure),
				 "the job holds %lld MB, over gnn.max_job_memory (%d MB)",
				 (long long) (used >> 20), wctx->req.max_job_memory_kb / 1024);
	}
	return MySlot()->cancel_requested || wctx->failed || ProcDiePending || QueryCancelPending;
}

static void
JsonNum(StringInfo b, const char *key, double v, bool last)
{
	if (isfinite(v))
		appendStringInfo(b, "\"%s\": %.6g%s", key, v, last ? "" : ", ");
	else
		appendStringInfo(b, "\"%s\": null%s", key, last ? "" : ", ");
}

static void
RecordFailure(GnnJobState st, const char *msg)
{
	SlotFinish(st, msg);
	PG_TRY();
	{
		Oid			t[3] = {INT8OID, TEXTOID, TEXTOID};
		Datum		v[3];
		char		n[4] = "   ";

		v[0] = Int64GetDatum(wctx->job);
		v[1] = CStringGetTextDatum(GnnJobStateName(st));
		v[2] = CStringGetTextDatum(msg ? msg : "");
		n[2] = msg ? ' ' : 'n';
		SetConfigOption("synchronous_commit", "on", PGC_USERSET, PGC_S_SESSION);
		BeginXact();
		Exec("UPDATE gnn.job_history SET state = $2, error = $3, finished = now() WHERE id = $1", 3, t, v, n);
		EndXact();
	}
	PG_CATCH();
	{
		/* the slot holds the outcome; the table is reconciled later */
		EmitErrorReport();
		FlushErrorState();
		AbortOutOfAnyTransaction();
	}
	PG_END_TRY();
}

/*
 * Fan-outs per relation of g, [nfanouts * R] (palloc'd): a name given is a
 * relation's, or a node type's (the relations whose sources are of that
 * type: "reviews" draws reviews); the rest take the default list.  Jobs
 * sample by it, and serving samples a time-aware model's rows by it again
 * (funcs_model.c), from the names its params recorded.
 */
int32 *
GnnTypeFanouts(const gnn_graph *g, int nfanouts, const int32 *fanouts, int ntf,
			   const char (*names)[NAMEDATALEN], const int32 (*lists)[GNN_MAX_FANOUTS])
{
	int32	   *tf = palloc(sizeof(int32) * nfanouts * g->num_edge_types);

	for (int e = 0; e < g->num_edge_types; e++)
	{
		const int32 *use = fanouts;
		const char *en = gnn_graph_edge_type_name(g, e);
		const char *sn = gnn_graph_node_type_name(g, g->etypes[e].src_type);

		for (int i = 0; i < ntf; i++)
			if (en && strcmp(names[i], en) == 0)
				use = lists[i];
		if (use == fanouts)
			for (int i = 0; i < ntf; i++)
				if (sn && strcmp(names[i], sn) == 0)
					use = lists[i];
		for (int h = 0; h < nfanouts; h++)
			tf[h * g->num_edge_types + e] = use[h];
	}
	return tf;
}

/* minibatch node classification over sampled blocks (options fanouts / batch_size / sampler) */
static bool job_temporal = false;	/* the minibatch job sampled by time */

/*
 * A time-aware job's sampler and bound, for the results shared after it
 * (Precompute answers the model as serving will: infer.h); its typed
 * fan-outs are copied where they outlive the job's transactions.
 */
static gnn_sampler_config job_sampler;
static bool job_has_as_of = false;
static int64 job_as_of = 0;

/*
 * Time-aware sampling for a minibatch job, by default when the nodes it
 * trains on have times (node type target, or any type: -1); and what the
 * job remembers of it for the shared results (PrecomputeTemporal).
 */
static void
JobTemporal(const gnn_graph *g, const GnnTrainRequest *r, int32 target, gnn_minibatch_config *mbc)
{
	if (r->temporal != 0 && g->time)
	{
		bool		have = r->has_as_of;

		for (int64 v = 0; v < g->num_nodes && !have; v++)
			have = (target < 0 || gnn_graph_type_of(g, v) == target) && gnn_graph_seed_time(g, v) != GNN_TIME_NONE;
		mbc->sampler.temporal = have;
	}
	if (r->has_as_of && r->temporal != 0)
		mbc->sampler.temporal = true;	/* the core refuses it on a graph without times */
	mbc->has_as_of = r->has_as_of;
	mbc->as_of = r->as_of;
	mbc->sampler.temporal_strategy = strcmp(r->temporal_strategy, "last") == 0 ? 1 : 0;
	/* streams => node: each node's draws keyed by its id (over several servers always) */
	mbc->sampler.per_node_streams = mbc->sampler.stream_by_id = strcmp(r->streams, "node") == 0;
	/* the first layer split by feature columns over servers holding the whole graph (P3) */
	mbc->feature_slices = mbc->slice_whole_rows = r->feature_slices;
	job_temporal = mbc->sampler.temporal;
	if (job_temporal)
	{
		job_sampler = mbc->sampler;
		if (mbc->sampler.type_fanouts)
		{
			Size		bytes = sizeof(int32) * r->nfanouts * g->num_edge_types;

			job_sampler.type_fanouts = memcpy(MemoryContextAlloc(TopMemoryContext, bytes),
											  mbc->sampler.type_fanouts, bytes);
		}
		job_has_as_of = mbc->has_as_of;
		job_as_of = mbc->as_of;
	}
}

/*
 * The sampled-minibatch settings every minibatch job has (node
 * classification, link prediction): the sampler, fan-outs in hop order (as
 * gnn.sample_neighbors: fanouts[0] for the seeds' own neighbours), per
 * relation on a typed graph, by weight where the graph has weights, and the
 * batch size; then time-aware sampling (JobTemporal) for the nodes of type
 * target (-1: any type).
 */
static void
JobMinibatch(const gnn_graph *g, const GnnTrainRequest *r, int32 target, gnn_minibatch_config *mbc)
{
	memset(mbc, 0, sizeof(*mbc));
	mbc->sampler.kind = strcmp(r->sampler, "ladies") == 0 ? GNN_SAMPLER_LADIES : GNN_SAMPLER_NEIGHBOR;
	mbc->sampler.nhops = r->nfanouts;
	for (int h = 0; h < r->nfanouts; h++)
		mbc->sampler.fanouts[h] = r->fanouts[h];
	mbc->sampler.nthreads = r->threads;
	mbc->sampler.weighted = true;
	mbc->batch_size = r->batch_size;
	if (g->num_edge_types > 1 || r->ntype_fanouts > 0)
		mbc->sampler.type_fanouts = GnnTypeFanouts(g, r->nfanouts, r->fanouts, r->ntype_fanouts,
												   r->type_fanout_names, r->type_fanouts);
	JobTemporal(g, r, target, mbc);
}

/*
 * A part's halo depth (gnn.load_graph's halo_hops, options.halo_hops of
 * gnn.load_schema_graph), as the loaders write it first in the meta's
 * "partition"; 0 for a whole graph.
 */
static int32
GraphHaloHops(const gnn_graph *g)
{
	static const char key[] = "\"partition\":{\"halo_hops\":";
	const char *at;

	if (!g->node_part || !g->meta)
		return 0;
	at = memmem(g->meta, g->meta_bytes, key, sizeof(key) - 1);
	/* (a part loaded before halo_hops was written has one hop) */
	return at ? (int32) strtol(at + sizeof(key) - 1, NULL, 10) : 1;
}

/*
 * Each server its own slice of the columns (gnn.load_graph's feature_slice):
 * rank r of size holds slice r of size, or the job fails, before the ranks
 * meet (a rank that fails after would leave the others only a broken mesh
 * to report).  Whether g is a slice that the job reads as one.
 */
bool
GnnCheckFeatureSlice(const gnn_graph *g, const GnnTrainRequest *r, int rank, int size)
{
	int32		si,
				sc;

	if (!r->feature_slices || !GnnGraphFeatureSlice(g, &si, &sc))
		return false;
	if (si != rank || sc != size)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("rank %d of %d holds feature slice %d of %d of graph \"%s\"", rank, size, si, sc, r->graph),
				 errhint("Server r of K loads feature_slice => ARRAY[r, K]: the coordinator is 0, the peers "
						 "1, 2, ... in options.peers' order.")));
	return true;
}

/*
 * What rank of size checks of a job over several servers before the ranks
 * meet, so that a refusal is each rank's own error, never a broken mesh: its
 * feature slice, and a schema graph's link prediction without a relation
 * (the core refuses both again, where the ranks have met).
 */
void
GnnDistPreflight(const gnn_graph *g, const GnnTrainRequest *r, int rank, int size)
{
	(void) GnnCheckFeatureSlice(g, r, rank, size);
	if (strcmp(r->task, "link_prediction") != 0)
		return;
	if (g->num_node_types > 1 && !r->edge_type[0])
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("link prediction over several servers on a graph of several node types takes a relation (an edge type)"),
				 errhint("Give options.edge_type, a foreign key such as \"orders.customer_id\".")));
}

/*
 * A minibatch job's training, the coordinator's (progress and stop: the
 * worker's) or a peer rank's of a job over several servers (cfg->dist).
 */
gnn_status
GnnRunMinibatch(const gnn_graph *g, const gnn_train_config *cfg, const GnnTrainRequest *r, gnn_backend *be,
				gnn_progress_fn progress, void *progress_arg, gnn_should_stop_fn should_stop,
				gnn_model **model, gnn_train_result *res, gnn_minibatch_stats *stats, gnn_error *err)
{
	gnn_minibatch_config mbc;
	gnn_gpu_batch_config job_gpu;	/* its GPU batch settings */

	JobMinibatch(g, r, cfg->target_type, &mbc);
	if (GnnCheckFeatureSlice(g, r, cfg->dist ? gnn_dist_rank(cfg->dist) : 0, cfg->dist ? gnn_dist_size(cfg->dist) : 1))
		mbc.slice_whole_rows = false;
	mbc.halo_hops = GraphHaloHops(g);
	mbc.prefetch = r->prefetch;
	/* evaluation on sampled neighbourhoods unless asked for the full pass */
	mbc.sampled_eval = strcmp(r->evaluation, "full") != 0;
	mbc.eval_nodes = r->eval_nodes > 0 ? r->eval_nodes : 0;	/* -1: "all" of the split */
	mbc.eval_batch_size = r->eval_batch_size;
	mbc.eval_reuse_rows = r->eval_reuse_off ? -1 : 0;
	/* on a GPU: batches built there, with a feature cache (gpu_batch.h) */
	mbc.cpu_batches = r->gpu_sampling == 0;
	gnn_gpu_batch_config_default(&job_gpu);
	job_gpu.cache_bytes = gnn_gpu_cache_size_mb < 0 ? -1 : (int64_t) gnn_gpu_cache_size_mb << 20;
	job_gpu.graph_bytes = gnn_gpu_graph_memory_mb < 0 ? -1 : (int64_t) gnn_gpu_graph_memory_mb << 20;
	if (strcmp(r->cache_policy, "degree") == 0)
		job_gpu.policy = GNN_CACHE_DEGREE;
	mbc.gpu = &job_gpu;
	return gnn_train_minibatch(g, cfg, &mbc, be, progress, progress_arg, should_stop, NULL, model, res, stats, err);
}

/*
 * Unsupervised link prediction, the coordinator's (progress and stop: the
 * worker's) or a peer rank's of a job over several servers (cfg->dist); the
 * AUCs travel in the accuracy fields of the log.
 */
gnn_status
GnnRunLinkPrediction(const gnn_graph *g, const gnn_train_config *cfg, const GnnTrainRequest *req, gnn_backend *be,
					 gnn_progress_fn progress, void *progress_arg, gnn_should_stop_fn should_stop,
					 gnn_model **model, gnn_train_result *res, gnn_linkpred_result *lres, gnn_error *err)
{
	gnn_linkpred_config lc;
	gnn_status	st;

	gnn_linkpred_config_default(&lc);
	if (req->negatives > 0)
		lc.negatives = req->negatives;
	if (req->edge_type[0])
	{
		char		rev[NAMEDATALEN * 2];
		const char *et = req->edge_type;

		lc.edge_type = gnn_graph_edge_type_by_name(g, et);
		/* its reverse: "rev_X" for X, X for "rev_X" */
		if (strncmp(et, "rev_", 4) == 0)
			strlcpy(rev, et + 4, sizeof(rev));
		else
			snprintf(rev, sizeof(rev), "rev_%s", et);
		lc.reverse_edge_type = gnn_graph_edge_type_by_name(g, rev);
		/* no reverse relation between a type and itself: the relation is its own (symmetric) */
		if (lc.reverse_edge_type < 0 && lc.edge_type >= 0 &&
			g->etypes[lc.edge_type].src_type == g->etypes[lc.edge_type].dst_type)
			lc.reverse_edge_type = lc.edge_type;
	}
	if (req->nfanouts > 0)
	{
		/* on sampled minibatches: blocks around each batch's pairs (train_linkpred.h) */
		const GnnTrainRequest *r = req;
		gnn_minibatch_config mbc;

		/* sampled batches estimate the negative term worse: 3 negatives per positive (on Cora the
		 * lowest test AUC of seeds 1-4 rose from 0.88 to 0.90) */
		if (r->negatives == 0)
			lc.negatives = 3;
		/* time-aware by default where the pairs' endpoints have times */
		JobMinibatch(g, r, -1, &mbc);
		st = gnn_train_linkpred_mb(g, cfg, &lc, &mbc, be, progress, progress_arg, should_stop, NULL, model, lres, err);
	}
	else
		st = gnn_train_linkpred(g, cfg, &lc, be, progress, progress_arg, should_stop, NULL, model, lres, err);
	memset(res, 0, sizeof(*res));
	res->epochs_run = lres->epochs_run;
	res->best_epoch = lres->best_epoch;
	res->best.val_acc = (float) lres->val_auc;
	res->best.test_acc = (float) lres->test_auc;
	res->best.train_acc = NAN;
	res->best.train_loss = NAN;
	res->best.val_loss = NAN;
	res->seconds = lres->seconds;
	res->stopped_early = lres->stopped_early;
	return st;
}

/*
 * The shared results applications ask for first (the default embedding;
 * class probabilities for a classifier), computed once the model row is
 * committed, through the cache (cache.c): both are claimed there before the
 * job is reported done, so a session that asks for one meanwhile waits for
 * this pass instead of running its own.  [0] is the embedding, [1] the
 * probabilities (n = 2) when the model has them.
 */
typedef struct ResultsJob
{
	gnn_model  *model;
	const gnn_graph *g;
	const gnn_train_config *cfg;
	int			n;
	int32		layer[2];
	GnnCacheKey key[2];
	const char *model_name;
	int32		version;
	const char *graph;
	GnnResult  *probs;			/* the probabilities' segment while the pass runs (NULL: none asked) */
	bool		probs_filled;	/* ... filled by the pass that filled the embedding */
	int			unclaimed;		/* results not yet claimed: the job is reported done when none is */
	bool		reported;		/* the job is reported succeeded */
	bool		preclaimed[2];	/* claimed ahead (GnnCacheClaim) */
} ResultsJob;

/*
 * key i was claimed ahead and the claim is gone (its model or graph
 * dropped, gnn.cache_drop): it is not to be claimed again, for a model
 * no one can ask about any more
 */
static bool
ResultsTaken(ResultsJob *j, int i)
{
	return j->preclaimed[i] && !GnnCacheHolds(&j->key[i]);
}

/*
 * A time-aware model's shared results: every node as of its own time (or
 * the job's seed_time), sampled as serving samples it (infer.h), both
 * results from one pass: the embedding is the layer each prediction was
 * computed from.
 */
/*
 * node2vec: walks and skip-gram (train_node2vec.h) straight into the
 * model's table (the CPU backend's memory is the host's).
 */
static gnn_status
RunNode2vec(const gnn_graph *g, const gnn_train_config *cfg, const GnnTrainRequest *r, gnn_backend *be,
			gnn_model **model, gnn_train_result *res, gnn_node2vec_result *nres, gnn_error *err)
{
	gnn_node2vec_config nc;
	gnn_model_config mc;
	gnn_rng		rng;
	gnn_status	st;

	gnn_node2vec_config_default(&nc);
	nc.dim = r->hidden;
	nc.walk_length = r->walk_length;
	nc.walks_per_node = r->walks_per_node;
	nc.window = r->window;
	nc.p = r->p;
	nc.q = r->q;
	nc.negatives = r->negatives;
	nc.epochs = r->epochs;
	nc.lr = (float) r->lr;
	nc.seed = cfg->seed;
	nc.threads = cfg->threads;
	memset(res, 0, sizeof(*res));
	if (g->num_nodes > (1 << 26))
		return gnn_error_set(err, GNN_ERR_LIMIT, "node2vec takes graphs of at most %d nodes, this one has %lld",
							 1 << 26, (long long) g->num_nodes);
	if (strcmp(be->name, "cpu") != 0)
		return gnn_error_set(err, GNN_ERR_UNSUPPORTED, "node2vec trains on the CPU");
	gnn_model_config_default(GNN_MODEL_NODE2VEC, &mc);
	mc.in_dim = (int32) g->num_nodes;
	mc.hidden = mc.out_dim = nc.dim;
	mc.layers = 1;
	gnn_rng_seed(&rng, cfg->seed);
	if ((st = gnn_model_create(be, &mc, &rng, model, err)) != GNN_OK)
		return st;
	st = gnn_node2vec_train(g, &nc, OnProgress, NULL, ShouldStop, NULL, gnn_model_param(*model, 0)->w.data,
							nres, err);
	res->epochs_run = res->best_epoch = nres->epochs_run;
	gnn_epoch_metrics_init(&res->best, nres->epochs_run);
	res->best.train_loss = (float) nres->loss;
	res->best.train_acc = res->best.val_loss = res->best.val_acc = res->best.test_loss = res->best.test_acc = NAN;
	res->best.val_auc = res->best.test_auc = res->best.val_mae = res->best.test_mae = NAN;
	res->best.val_rmse = res->best.test_rmse = NAN;
	res->seconds = nres->seconds;
	return st;
}

/* The job is done (its model row committed): waiting sessions return. */
static void
ResultsReport(ResultsJob *j)
{
	if (!j->reported)
	{
		SlotFinish(GNN_JOB_SUCCEEDED, NULL);
		j->reported = true;
	}
}

/*
 * A time-aware model's results: every node as of its own time (or the
 * job's seed_time), sampled as serving samples it (infer.h); with also, the
 * embedding layer into also as the same pass goes.
 */
static void
ResultsTemporal(ResultsJob *j, int32 layer, bool probs, float *out, float *also)
{
	gnn_infer_temporal_config tc;
	int64	   *idx = palloc_extended(sizeof(int64) * Max(j->g->num_nodes, 1), MCXT_ALLOC_HUGE);
	gnn_error	err;

	for (int64 v = 0; v < j->g->num_nodes; v++)
		idx[v] = v;
	memset(&tc, 0, sizeof(tc));
	tc.sampler = job_sampler;
	tc.seed = gnn_infer_temporal_seed(j->cfg->seed);
	tc.batch_size = wctx->req.batch_size;
	tc.row_normalise = j->cfg->row_normalise;
	tc.has_as_of = job_has_as_of;
	tc.as_of = job_as_of;
	tc.should_stop = ShouldStop;
	if (also)
	{
		tc.also_layer = j->layer[0];
		tc.also_out = also;
	}
	if (gnn_model_infer_temporal(j->model, j->g, &tc, layer, probs, idx, j->g->num_nodes, out, &err) != GNN_OK)
		GnnReportCoreError("inference after training failed", &err);
	pfree(idx);
}

/*
 * GnnCacheBeforeCompute's hook: one of the job's results is claimed and its
 * memory not yet made.  When the last is, the job is reported done: making
 * a result's segment (the embedding of every node, hundreds of MB on a
 * large graph, each page written once) is not on the job's critical path,
 * and a session asking for a result as the job returns finds it claimed
 * and waits for this pass instead of making its own.
 */
static void
ResultsClaimed(void *arg)
{
	ResultsJob *j = arg;

	if (--j->unclaimed <= 0)
		ResultsReport(j);
}

/*
 * One pass over every node into out: layer's rows (-1: the output layer),
 * as probabilities or not; time-aware where the job was, with also filled
 * with the embedding's layer as the same pass goes.  Without time, the
 * caller copies that layer (gnn_model_layer_output).
 */
static void
ResultsPass(ResultsJob *j, int32 layer, bool probs, float *out, float *also)
{
	gnn_error	err;

	if (job_temporal)
		ResultsTemporal(j, layer, probs, out, also);
	else if (gnn_model_infer(j->model, j->g, j->cfg->row_normalise, layer, probs, out, &err) != GNN_OK)
		GnnReportCoreError("inference after training failed", &err);
}

/*
 * GnnComputeFn of the embedding: with the probabilities' segment claimed
 * (j->probs), one pass fills both (the embedding is a layer of the pass
 * that ends in the probabilities); alone, the embedding's own pass.
 */
static void
ResultsEmbed(void *arg, GnnResult *res)
{
	ResultsJob *j = arg;
	const gnn_model_config *mc = gnn_model_config_of(j->model);

	memcpy((int64 *) res->ids, j->g->ids, sizeof(int64) * j->g->num_nodes);
	if (j->probs)
	{
		ResultsPass(j, -1, true, (float *) j->probs->out, job_temporal ? (float *) res->out : NULL);
		j->probs_filled = true;
		if (job_temporal)
			return;
		/* the output layer's own buffer was softmaxed in place: a 1-layer model's embedding needs its own pass */
		if (j->layer[0] != mc->layers - 1)
		{
			int64		rows;
			int32		c;
			const float *dev = gnn_model_layer_output(j->model, j->layer[0], &rows, &c);
			gnn_status	st;
			gnn_error	err;

			if (dev == NULL || rows != j->g->num_nodes || c != res->cols)
				elog(ERROR, "the forward pass kept no output of layer %d", j->layer[0]);
			st = gnn_backend_copy_d2h(gnn_model_backend(j->model), (float *) res->out, dev,
									  sizeof(float) * (size_t) rows * c);
			if (st != GNN_OK)
			{
				(void) gnn_backend_error(gnn_model_backend(j->model), st, &err);
				GnnReportCoreError("copying the embeddings failed", &err);
			}
			return;
		}
	}
	ResultsPass(j, j->layer[0], false, (float *) res->out, NULL);
}

/*
 * GnnComputeFn of the probabilities: claimed first, so that the embedding
 * (the larger) is claimed last, and filled by the embedding's pass; alone
 * (the embedding found cached, or computed elsewhere) by a pass of its own.
 */
static void
ResultsProbs(void *arg, GnnResult *res)
{
	ResultsJob *j = arg;
	GnnResult	eres;
	bool		hit;

	/* this claim taken away meanwhile: nothing of it is published, nothing to fill */
	if (ResultsTaken(j, 1))
	{
		ResultsReport(j);
		return;
	}
	j->probs = res;
	if (!ResultsTaken(j, 0))
		GnnCacheGet(&j->key[0], j->model_name, j->version, j->graph, j->g->num_nodes,
					gnn_model_layer_dim(j->model, j->layer[0]), ResultsEmbed, j, &eres, &hit);
	j->probs = NULL;
	ResultsReport(j);
	/*
	 * the ids after the embedding's claim: writing them touches every page
	 * of a segment just made (about 40 ms for a million nodes here), which
	 * the job's report need not wait for
	 */
	memcpy((int64 *) res->ids, j->g->ids, sizeof(int64) * j->g->num_nodes);
	if (!j->probs_filled)
		ResultsPass(j, -1, true, (float *) res->out, NULL);
}

/*
 * After the model row is committed: report the job done and share its
 * results (ResultsJob).  Nothing fails the job from here: a result that
 * could not be computed is computed by its first caller instead.  Returns
 * the seconds it took (NAN: none computed here).
 */
static double
ShareResults(gnn_model *model, const gnn_graph *g, const gnn_train_config *cfg, bool linkpred, int64 model_id,
			 uint32 model_xmin, uint64 generation, int32 version)
{
	const gnn_model_config *mc = gnn_model_config_of(model);
	ResultsJob	j;
	TimestampTz t0 = GetCurrentTimestamp();
	MemoryContext mcxt = CurrentMemoryContext;
	bool		computed = false;

	memset(&j, 0, sizeof(j));
	/*
	 * A full pass holds several hidden-wide rows per node (input, aggregate,
	 * output per layer); where even the one result would not fit in
	 * gnn.max_cache_memory, none is shared and the worker does not risk the
	 * memory (sessions ask for what they need: few nodes go the k-hop way).
	 */
	{
		/* (a node2vec model's input is the node's one-hot: its result is its table) */
		int32		widest = Max(Max(mc->hidden, mc->out_dim), mc->kind == GNN_MODEL_NODE2VEC ? 1 : mc->in_dim);

		if ((double) g->num_nodes * widest * sizeof(float) > (double) gnn_max_cache_memory_mb * 1048576.0)
		{
			elog(LOG, "gnn: training job: no shared results for %lld nodes of width %d (over gnn.max_cache_memory)",
				 (long long) g->num_nodes, widest);
			ResultsReport(&j);
			return NAN;
		}
	}
	j.model = model;
	j.g = g;
	j.cfg = cfg;
	j.model_name = wctx->req.model_name;
	j.version = version;
	j.graph = wctx->req.graph;
	j.layer[0] = GnnDefaultEmbeddingLayer(mc->layers, !linkpred);
	j.n = 1;
	/* (a regression model's prediction is its output layer, read by the k-hop or full path) */
	if (!linkpred && cfg->task != GNN_TASK_REGRESS)
	{
		j.layer[1] = -1;
		j.n = 2;
	}
	for (int i = 0; i < j.n; i++)
	{
		GnnCacheKey *key = &j.key[i];

		key->dbid = MyDatabaseId;
		key->owner = wctx->owner;
		key->model_id = model_id;
		key->model_xmin = model_xmin;
		key->generation = generation;
		key->kind = i == 0 ? GNN_RESULT_EMBED : GNN_RESULT_PROBS;
		key->layer = j.layer[i];
	}
	pgstat_report_activity(STATE_RUNNING,
						   psprintf("gnn: training job %lld: model \"%s\" version %d: its results for serving",
									(long long) wctx->job, j.model_name, version));
	j.unclaimed = j.n;
	StartTransactionCommand();
	PG_TRY();
	{
		GnnResult	res;
		bool		hit = false;

		GnnCacheClaimOwn(true);
		/*
		 * every result claimed before any segment is made, and the job
		 * reported done: else the report waited for the first result's
		 * segment (the probabilities of a million nodes, 32 MB: 9-14 ms of
		 * the R-MAT job's 1.1 s).  Where one is cached or computed
		 * elsewhere, the report comes as its claims are made (below).
		 */
		{
			bool		all = true;

			for (int i = 0; i < j.n; i++)
			{
				j.preclaimed[i] = GnnCacheClaim(&j.key[i], j.model_name, version, j.graph, g->num_nodes,
												j.key[i].kind == GNN_RESULT_EMBED ?
												gnn_model_layer_dim(model, j.layer[i]) : mc->out_dim);
				all = all && j.preclaimed[i];
			}
			if (all)
				ResultsReport(&j);
		}
		GnnCacheBeforeCompute(ResultsClaimed, &j);
		if (j.n == 2 && !ResultsTaken(&j, 1))
		{
			/* the probabilities first: ResultsProbs claims the embedding, the larger, last */
			GnnCacheGet(&j.key[1], j.model_name, version, j.graph, g->num_nodes, mc->out_dim, ResultsProbs, &j,
						&res, &hit);
			computed = !hit;
			if (hit)
				j.unclaimed--;
		}
		if ((j.n == 1 || hit) && !ResultsTaken(&j, 0))
		{
			GnnCacheGet(&j.key[0], j.model_name, version, j.graph, g->num_nodes,
						gnn_model_layer_dim(model, j.layer[0]), ResultsEmbed, &j, &res, &hit);
			computed = computed || !hit;
		}
		GnnCacheBeforeCompute(NULL, NULL);
		GnnCacheClaimOwn(false);
		/* (a claim left uncomputed, beside one taken away: its askers compute it, not wait for this exit) */
		GnnCacheReleaseClaims();
		ResultsReport(&j);
		CommitTransactionCommand();
	}
	PG_CATCH();
	{
		ErrorData  *ed;

		/* the job succeeded; its results will be computed by their first caller instead */
		GnnCacheBeforeCompute(NULL, NULL);
		GnnCacheClaimOwn(false);
		ResultsReport(&j);
		ed = CaughtAndAborted(mcxt);
		/* claimed, not computed: whoever asks computes them */
		GnnCacheReleaseClaims();
		ereport(WARNING,
				(errmsg("gnn training job %lld: results not shared: %s", (long long) wctx->job, ed->message)));
		computed = false;
	}
	PG_END_TRY();
	return computed ? (double) (GetCurrentTimestamp() - t0) / 1e6 : NAN;
}

/*
 * A classifier's per-class report on the test split, from the confusion the
 * training loop kept for the selected weights (train.h): each class's
 * precision, recall, F1 and support, the macro F1, and (up to 50 classes)
 * the confusion matrix, rows the true class, columns the predicted one.
 * Nothing when the loop kept none (no labelled test node).
 */
static void
ClassReport(StringInfo b, const gnn_graph *g, const gnn_train_result *res)
{
	int32		C = res->confusion_classes;
	const int64 *conf = res->confusion;
	int64		counted = 0;
	const char *name = g->class_names;
	double		macro = 0;
	int			nmacro = 0;

	if (!conf || C < 1)
		return;
	for (int64 i = 0; i < (int64) C * C; i++)
		counted += conf[i];
	if (counted == 0)
		return;
	appendStringInfoString(b, "\"test_classes\": [");
	for (int k = 0; k < C; k++)
	{
		double		p,
					r,
					f;
		int64		support = 0;

		for (int j = 0; j < C; j++)
			support += conf[(int64) k * C + j];
		gnn_class_prf(conf, C, k, &p, &r, &f);
		appendStringInfoString(b, k ? ", {\"class\": " : "{\"class\": ");
		if (name)
		{
			escape_json(b, name);
			name += strlen(name) + 1;
		}
		else
			appendStringInfo(b, "%d", k);
		appendStringInfoString(b, ", ");
		JsonNum(b, "precision", p, false);
		JsonNum(b, "recall", r, false);
		JsonNum(b, "f1", f, false);
		JsonNum(b, "support", (double) support, true);
		appendStringInfoChar(b, '}');
		if (support > 0)
		{
			macro += isnan(f) ? 0 : f;
			nmacro++;
		}
	}
	appendStringInfoString(b, "], ");
	JsonNum(b, "test_macro_f1", nmacro > 0 ? macro / nmacro : NAN, false);
	if (C <= 50)
	{
		appendStringInfoString(b, "\"test_confusion\": [");
		for (int k = 0; k < C; k++)
		{
			appendStringInfoString(b, k ? ", [" : "[");
			for (int j = 0; j < C; j++)
				appendStringInfo(b, "%s" INT64_FORMAT, j ? ", " : "", conf[(int64) k * C + j]);
			appendStringInfoChar(b, ']');
		}
		appendStringInfoString(b, "], ");
	}
}

/*
 * The backend of request r's job (or of its rank > 0 of several servers):
 * its GPU where r->device asks for one and this server has one (for
 * 'auto', where the job fits it), else the CPU, with note saying why not
 * (note_expected: the normal case of a machine without a GPU).  CUDA is
 * initialised here, in the job's own process (the worker, or a peer's
 * session running its rank), and nowhere else.
 */
gnn_backend *
GnnJobBackend(const GnnTrainRequest *r, int rank, char *note, size_t notelen, bool *note_expected)
{
	gnn_backend *be = NULL;
	gnn_error	err;
	gnn_status	st;

	note[0] = '\0';
	*note_expected = false;
	if (strcmp(r->model, "node2vec") == 0 && strcmp(r->device, "cpu") != 0)
	{
		snprintf(note, notelen, "node2vec trains on the CPU");
		*note_expected = true;
	}
	else if (strcmp(r->device, "cpu") != 0)
	{
		const char *so = (gnn_cuda_library && gnn_cuda_library[0]) ? gnn_cuda_library :
			psprintf("%s/gnn_cuda.so", pkglib_path);
		bool		known_absent;

		/* device 'auto' where an earlier job found no GPU behind this library: the CPU, without the probe */
		LWLockAcquire(gnn_shared->lock, LW_SHARED);
		known_absent = strcmp(r->device, "auto") == 0 && strcmp(gnn_shared->no_gpu_library, so) == 0;
		LWLockRelease(gnn_shared->lock);
		if (known_absent)
			st = gnn_error_set(&err, GNN_ERR_UNSUPPORTED, "no GPU found (an earlier job's probe of %s)", so);
		else
			st = gnn_backend_cuda_load(so, 0, &be, &err);	/* a server's first GPU, whatever its rank */
		if (st == GNN_OK)
		{
			/* a GPU after all (device 'cuda' probes every time): 'auto' looks again too */
			LWLockAcquire(gnn_shared->lock, LW_EXCLUSIVE);
			if (strcmp(gnn_shared->no_gpu_library, so) == 0)
				gnn_shared->no_gpu_library[0] = '\0';
			LWLockRelease(gnn_shared->lock);
		}
		if (st != GNN_OK)
		{
			be = NULL;
			if (strcmp(r->device, "cuda") == 0)
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("%sdevice => 'cuda' was asked for, but no GPU can be used: %s", rank > 0 ? psprintf("rank %d: ", rank) : "", err.msg),
						 errhint("Use device => 'auto' or 'cpu'.")));
			/*
			 * No GPU here (no driver, no device) or a build without CUDA is
			 * the normal CPU case, said only with gnn.progress; anything else
			 * is a broken installation, said always.
			 */
			if (strstr(err.msg, "cudaErrorInsufficientDriver") || strstr(err.msg, "cudaErrorNoDevice") ||
				strstr(err.msg, "no GPU found"))
			{
				snprintf(note, notelen, "this machine has no GPU (no NVIDIA driver or device)");
				*note_expected = true;
				if (!known_absent && strlen(so) < MAXPGPATH)
				{
					LWLockAcquire(gnn_shared->lock, LW_EXCLUSIVE);
					strlcpy(gnn_shared->no_gpu_library, so, MAXPGPATH);
					LWLockRelease(gnn_shared->lock);
				}
			}
			else if (strstr(err.msg, "cannot load") && strstr(err.msg, "gnn_cuda.so"))
			{
				snprintf(note, notelen, "gnn was built without CUDA (no gnn_cuda.so)");
				*note_expected = true;
			}
			else
				snprintf(note, notelen, "no usable GPU (%s)", err.msg);
		}
		else if (strcmp(r->device, "auto") == 0)
		{
			/* auto: the GPU when the job fits it, else the CPU, saying which limit */
			size_t		fr,
						tot;
			gnn_error	merr;

			if (gnn_gpu_mem_info(be, &fr, &tot, &merr) == GNN_OK)
			{
				int64		need = GnnJobGpuBytes(r);

				if ((double) need > 0.9 * (double) fr)
				{
					gnn_backend_destroy(be);
					be = NULL;
					snprintf(note, notelen,
							 "the job needs about %lld MB of GPU memory (gnn.estimate) and %lld MB are free%s",
							 (long long) (need >> 20), (long long) (fr >> 20),
							 r->nfanouts > 0 ? "" : " (minibatch training, options.fanouts, needs far less)");
				}
			}
		}
	}
	if (be == NULL)
	{
		st = gnn_backend_cpu_create(r->threads, &be, &err);
		if (st != GNN_OK)
			GnnReportCoreError("could not create the CPU backend", &err);
	}
	return be;
}

static void
RunJob(void)
{
	GnnTrainRequest *r = &wctx->req;
	gnn_backend *be = NULL;
	gnn_error	err;
	gnn_status	st;
	char		note[256] = "";
	bool		note_expected = false;
	char		devname[16];
	GnnGraphRef ref;
	gnn_train_config cfg;
	gnn_model  *model = NULL;
	gnn_train_result res;
	void	   *blob = NULL;
	size_t		bloblen = 0;
	gnn_linkpred_result lres;
	gnn_minibatch_stats mstats;
	gnn_node2vec_result nres;
	bool		linkpred = strcmp(r->task, "link_prediction") == 0;
	bool		node2vec = strcmp(r->model, "node2vec") == 0;
	int64		row_id = 0;
	uint32		row_xmin = 0;
	int32		row_version = 0;
	GnnDistJob *volatile dj = NULL;	/* several servers: the peers and the mesh */
	char	   *ranks_json = NULL;
	volatile bool report_after = false;	/* done, no results pass: reported once the graph is released */

	memset(&ref, 0, sizeof(ref));
	gnn_error_clear(&err);

	/* the job's row */
	{
		Oid			t[10] = {INT8OID, TEXTOID, TEXTOID, TEXTOID, TEXTOID, INT4OID, TEXTOID, INT8OID, TEXTOID, OIDOID};
		Datum		v[10];

		v[0] = Int64GetDatum(wctx->job);
		v[1] = CStringGetTextDatum(r->graph);
		v[2] = CStringGetTextDatum(r->model_name);
		v[3] = CStringGetTextDatum(r->model);
		v[4] = CStringGetTextDatum(r->task);
		v[5] = Int32GetDatum(r->epochs);
		v[6] = CStringGetTextDatum(r->params_json);
		v[7] = Int64GetDatum((int64) gnn_shared->instance);
		v[8] = CStringGetTextDatum(r->device);
		v[9] = ObjectIdGetDatum(wctx->owner);
		/* durable, unlike progress rows: a crash must not lose the job's existence */
		SetConfigOption("synchronous_commit", "on", PGC_USERSET, PGC_S_SESSION);
		BeginXact();
		Exec("INSERT INTO gnn.job_history (id, graph, model_name, model, task, state, epoch, epochs, params, "
			 "instance, device, started, owner) VALUES ($1, $2, $3, $4, $5, 'running', 0, $6, $7::jsonb, $8, $9, now(), "
			 "$10::oid::regrole)", 10, t, v, NULL);
		EndXact();
		SetConfigOption("synchronous_commit", "off", PGC_USERSET, PGC_S_SESSION);
	}

	GnnCoreThreadsInit();
	be = GnnJobBackend(r, 0, note, sizeof(note), &note_expected);
	if (r->fault_after >= 0)
		gnn_backend_fail_after(be, r->fault_after);
	/* a cancel, a terminate or the memory cap stops any op, and long ones between their pieces */
	gnn_backend_set_stop(be, ShouldStop, NULL);
	strlcpy(devname, be->name, sizeof(devname));
	{
		GnnJobSlot *s = MySlot();

		LWLockAcquire(gnn_shared->lock, LW_EXCLUSIVE);
		s->state = GNN_JOB_RUNNING;
		s->started = GetCurrentTimestamp();
		strlcpy(s->device, devname, sizeof(s->device));
		strlcpy(s->device_note, note, sizeof(s->device_note));
		s->device_note_expected = note_expected;
		LWLockRelease(gnn_shared->lock);
	}

	memset(&res, 0, sizeof(res));
	PG_TRY();
	{
		/* the job's memory, from here (a feature cache included): capped by gnn.max_job_memory */
		wctx->heap_base = gnn_heap_current();
		gnn_heap_peak_reset();
		/* the graph, mapped for the whole job */
		StartTransactionCommand();
		gnn_feature_cache_kb = r->feature_cache_kb;	/* the caller's, for a graph with features on disk */
		GnnGraphAcquire(r->graph, &ref);
		GnnGraphKeepMapping(&ref);
		/* training reads through this process's cache: counted from here */
		if ((wctx->fs = ref.g.fstore) != NULL)
			gnn_fstore_stats_reset(wctx->fs);
		CommitTransactionCommand();

		/* a features-only baseline: GraphSAGE's root weights over the nodes without edges */
		if (strcmp(r->model, "mlp") == 0)
			GnnEdgelessView(&ref.g, &ref.g);
		GnnTrainConfigFor(r, &ref.g, strncmp(devname, "cuda", 4) == 0, &cfg);
		cfg.keep_confusion = true;	/* the per-class report (ClassReport) */
		if (r->dist_npeers > 0)
		{
			GnnDistPreflight(&ref.g, r, 0, r->dist_npeers + 1);
			/* rank 0 of several servers: the peers' ranks start, the mesh meets */
			dj = GnnDistJobAlloc();
			GnnDistJobStart(r, wctx->job, dj);
			cfg.dist = GnnDistJobMesh(dj);
			cfg.dist_batches = GnnDistJobBatchesMesh(dj);
		}

		wctx->last_flush = GetCurrentTimestamp();
		memset(&lres, 0, sizeof(lres));
		memset(&mstats, 0, sizeof(mstats));
		memset(&nres, 0, sizeof(nres));
		if (node2vec)
			st = RunNode2vec(&ref.g, &cfg, r, be, &model, &res, &nres, &err);
		else if (linkpred)
			st = GnnRunLinkPrediction(&ref.g, &cfg, r, be, OnProgress, NULL, ShouldStop, &model, &res, &lres, &err);
		else if (r->nfanouts > 0)
			st = GnnRunMinibatch(&ref.g, &cfg, r, be, OnProgress, NULL, ShouldStop, &model, &res, &mstats, &err);
		else if (strcmp(r->sampler, "cluster") == 0 || strcmp(r->sampler, "saint_rw") == 0)
			st = GnnTrainSubgraph(r, &ref, &cfg, be, OnProgress, ShouldStop, &model, &res, &err);
		else
			st = gnn_train_full(&ref.g, &cfg, be, OnProgress, NULL, ShouldStop, NULL, &model, &res, &err);
		if (dj)
		{
			/* every peer's answer: a failed rank is the job's error, named */
			StringInfoData rj;

			initStringInfo(&rj);
			GnnDistJobFinish(dj, st, &rj);
			ranks_json = rj.data;
		}

		if (ProcDiePending)
			CHECK_FOR_INTERRUPTS();		/* terminated: WorkerExit records it */
		if (wctx->failed)
			ereport(ERROR, (errcode(ERRCODE_INTERNAL_ERROR), errmsg("%s", wctx->failure)));
		if (st == GNN_ERR_CANCELLED)
		{
			gnn_model_free(model);
			model = NULL;
			FlushLog();
			RecordFailure(GNN_JOB_CANCELLED, NULL);
		}
		else
		{
			StringInfoData metrics;

			if (st != GNN_OK)
				GnnReportCoreError(psprintf("training failed on %s", devname), &err);
			FlushLog();
			{
				gnn_model_meta meta;

				memset(&meta, 0, sizeof(meta));
				meta.lr = cfg.lr;
				meta.weight_decay = cfg.weight_decay;
				meta.epochs = cfg.epochs;
				meta.best_epoch = res.best_epoch;
				meta.optimizer = (uint32_t) cfg.optimizer;
				meta.seed = cfg.seed;
				meta.val_acc = res.best.val_acc;
				meta.test_acc = res.best.test_acc;
				st = gnn_model_serialize(model, &meta, &blob, &bloblen, &err);
			}
			if (st != GNN_OK)
				GnnReportCoreError("could not serialise the model", &err);

			/* stopped as training ended: nothing is written (the error path records it) */
			if (ProcDiePending)
				CHECK_FOR_INTERRUPTS();
			if (MySlot()->cancel_requested || wctx->failed)
				ereport(ERROR,
						(errcode(ERRCODE_QUERY_CANCELED),
						 errmsg("%s", wctx->failed ? wctx->failure : "the job was cancelled")));

			initStringInfo(&metrics);
			appendStringInfoChar(&metrics, '{');
			JsonNum(&metrics, "best_epoch", res.best_epoch, false);
			JsonNum(&metrics, "epochs_run", res.epochs_run, false);
			JsonNum(&metrics, "train_acc", res.best.train_acc, false);
			JsonNum(&metrics, "val_acc", res.best.val_acc, false);
			JsonNum(&metrics, "val_loss", res.best.val_loss, false);
			JsonNum(&metrics, "test_acc", res.best.test_acc, false);
			JsonNum(&metrics, "seconds", res.seconds, false);
			if (gnn_heap_tracked())
				JsonNum(&metrics, "peak_memory_bytes", (double) (gnn_heap_peak() - wctx->heap_base), false);
			if (!linkpred && cfg.task == GNN_TASK_REGRESS)
			{
				JsonNum(&metrics, "val_mae", res.best.val_mae, false);
				JsonNum(&metrics, "test_mae", res.best.test_mae, false);
				JsonNum(&metrics, "val_rmse", res.best.val_rmse, false);
				JsonNum(&metrics, "test_rmse", res.best.test_rmse, false);
			}
			else if (!linkpred && ref.g.num_classes == 2)
			{
				JsonNum(&metrics, "val_auc", res.best.val_auc, false);
				JsonNum(&metrics, "test_auc", res.best.test_auc, false);
			}
			if (linkpred)
			{
				JsonNum(&metrics, "val_auc", lres.val_auc, false);
				JsonNum(&metrics, "test_auc", lres.test_auc, false);
				JsonNum(&metrics, "test_hits_at_50", lres.test_hits, false);
				JsonNum(&metrics, "test_edges", (double) lres.test_edges, false);
			}
			if (node2vec)
			{
				JsonNum(&metrics, "loss", nres.loss, false);
				JsonNum(&metrics, "walks", (double) nres.walks, false);
				JsonNum(&metrics, "pairs", (double) nres.pairs, false);
			}
			if (r->nfanouts > 0)
			{
				appendStringInfo(&metrics, "\"temporal\": %s, ", job_temporal ? "true" : "false");
				JsonNum(&metrics, "batches", (double) mstats.batches, false);
				JsonNum(&metrics, "sampled_edges", (double) mstats.sampled_edges, false);
				JsonNum(&metrics, "sample_seconds", mstats.sample_s, false);
				JsonNum(&metrics, "gather_seconds", mstats.gather_s, false);
				JsonNum(&metrics, "compute_seconds", mstats.compute_s, false);
				JsonNum(&metrics, "eval_seconds", mstats.eval_s, false);
				JsonNum(&metrics, "prefetch", (double) mstats.prefetch, false);
				if (mstats.val_nodes + mstats.test_nodes > 0)
				{
					JsonNum(&metrics, "val_nodes", (double) mstats.val_nodes, false);
					JsonNum(&metrics, "test_nodes", (double) mstats.test_nodes, false);
				}
				if (mstats.eval_rows_computed > 0)
				{
					/* evaluation's layer-0 rows, reused from earlier batches of their pass or computed */
					JsonNum(&metrics, "eval_rows_reused", (double) mstats.eval_rows_reused, false);
					JsonNum(&metrics, "eval_rows_computed", (double) mstats.eval_rows_computed, false);
					/* of the rows kept, those whose memory was made ready while batches were awaited */
					JsonNum(&metrics, "eval_rows_ready", (double) mstats.eval_rows_ready, false);
					/* validation seeds whose graph pages were read while batches were awaited */
					JsonNum(&metrics, "eval_seeds_read", (double) mstats.eval_seeds_read, false);
				}
				if (gnn_heap_tracked())
					appendStringInfo(&metrics, "\"peak_memory\": {\"setup\": " INT64_FORMAT ", \"training\": " INT64_FORMAT
									 ", \"batches\": " INT64_FORMAT ", \"evaluation\": " INT64_FORMAT "}, ",
									 mstats.mem_setup, mstats.mem_training, mstats.mem_batches, mstats.mem_eval);
				if (strncmp(devname, "cuda", 4) == 0)
				{
					appendStringInfo(&metrics, "\"gpu_batches\": %s, ", mstats.gpu_batches ? "true" : "false");
					if (mstats.gpu_batches)
					{
						JsonNum(&metrics, "cache_rows", (double) mstats.cache_rows, false);
						JsonNum(&metrics, "cache_hit_rate", mstats.feature_rows > 0 ?
								(double) mstats.cache_hits / (double) mstats.feature_rows : NAN, false);
					}
					else
					{
						appendStringInfoString(&metrics, "\"cpu_batches_why\": ");
						escape_json(&metrics, mstats.cpu_batches_why);
						appendStringInfoString(&metrics, ", ");
					}
				}
			}
			if (!linkpred && !node2vec && cfg.task == GNN_TASK_CLASSIFY)
				ClassReport(&metrics, &ref.g, &res);
			if (ranks_json)
				appendStringInfo(&metrics, "\"ranks\": %d, \"peers\": %s, ", r->dist_npeers + 1, ranks_json);
			appendStringInfo(&metrics, "\"stopped_early\": %s, \"device\": \"%s\"}",
							 res.stopped_early ? "true" : "false", devname);

			/* durable: the model is the point of the job */
			SetConfigOption("synchronous_commit", "on", PGC_USERSET, PGC_S_SESSION);
			BeginXact();
			{
				Oid			t[10] = {TEXTOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID, INT8OID, BYTEAOID, OIDOID,
				TEXTARRAYOID};
				Datum		v[10];
				char		n[11] = "          ";
				bool		nonames;
				bytea	   *b = palloc(VARHDRSZ + bloblen);

				SET_VARSIZE(b, VARHDRSZ + bloblen);
				memcpy(VARDATA(b), blob, bloblen);
				v[0] = CStringGetTextDatum(r->model_name);
				v[1] = CStringGetTextDatum(r->graph);
				v[2] = CStringGetTextDatum(r->model);
				v[3] = CStringGetTextDatum(r->task);
				v[4] = CStringGetTextDatum(r->params_json);
				v[5] = CStringGetTextDatum(metrics.data);
				v[6] = Int64GetDatum(wctx->job);
				v[7] = PointerGetDatum(b);
				v[8] = ObjectIdGetDatum(wctx->owner);
				/* the names of the classes the model was trained on: predictions are read with them */
				v[9] = ClassNamesArray(&ref.g, &nonames);
				n[9] = nonames ? 'n' : ' ';
				/*
				 * versions of one name are numbered one after another, per
				 * owner (over all of the owner's rows, whoever can see them),
				 * also under concurrent jobs
				 */
				Exec("SELECT pg_advisory_xact_lock(hashtext('gnn.models:' || $9::oid::text || ':' || $1))",
					 10, t, v, n);
				Exec("INSERT INTO gnn.models (name, version, graph, model, task, params, metrics, job, weights, owner, classes) "
					 "SELECT $1, coalesce(max(version), 0) + 1, $2, $3, $4, $5::jsonb, $6::jsonb, $7, $8, $9::oid::regrole, $10 "
					 "FROM gnn.models WHERE name = $1 AND owner = $9::oid::regrole "
					 "RETURNING id, xmin::text::bigint, version", 10, t, v, n);
				if (SPI_processed == 1)
				{
					bool		isnull;

					row_id = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
					row_xmin = (uint32) DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull));
					row_version = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 3, &isnull));
				}
				/* deploy => 'always' / 'if_better': in the same transaction as the version */
				if (r->deploy[0] && row_version > 0)
				{
					const char *why;

					if (!GnnDeployAfterTraining(r->model_name, row_version, r->deploy, &why))
						elog(LOG, "gnn: training job %lld: model \"%s\" version %d is not deployed: %s",
							 (long long) wctx->job, r->model_name, row_version, why);
				}
			}
			{
				Oid			t[6] = {INT8OID, INT4OID, FLOAT4OID, FLOAT4OID, FLOAT4OID, TEXTOID};
				Datum		v[6];
				char		n[7] = "      ";

				v[0] = Int64GetDatum(wctx->job);
				v[1] = Int32GetDatum(res.epochs_run);
				v[2] = Float4OrNull(res.best.train_loss, &n[2]);
				v[3] = Float4OrNull(res.best.train_acc, &n[3]);
				v[4] = Float4OrNull(res.best.val_acc, &n[4]);
				v[5] = CStringGetTextDatum(devname);
				Exec("UPDATE gnn.job_history SET state = 'succeeded', finished = now(), epoch = $2, "
					 "loss = $3, train_acc = $4, val_acc = $5, device = $6 WHERE id = $1", 6, t, v, n);
			}
			EndXact();
			/*
			 * Committed: the job is done, and reported so as its results are
			 * claimed (ShareResults); not from one part of a graph (its halo
			 * has no features here), nor where the graph was replaced or
			 * dropped meanwhile (these could never be asked for).
			 */
			if (!dj && GnnGraphGeneration(r->graph) == ref.entry.generation)
			{
				double		rs = ShareResults(model, &ref.g, &cfg, linkpred || node2vec, row_id, row_xmin,
											  ref.entry.generation, row_version);

				if (!isnan(rs))
				{
					/*
					 * how long they took, beside the job (the model row stays
					 * as committed); the job succeeded whatever happens here
					 * (the extension dropped meanwhile, say)
					 */
					Oid			t[2] = {INT8OID, FLOAT8OID};
					Datum		v[2] = {Int64GetDatum(wctx->job), Float8GetDatum(rs)};
					MemoryContext mcxt = CurrentMemoryContext;

					PG_TRY();
					{
						BeginXact();
						Exec("UPDATE gnn.job_history SET results_seconds = $2 WHERE id = $1", 2, t, v, NULL);
						EndXact();
					}
					PG_CATCH();
					{
						ErrorData  *ed = CaughtAndAborted(mcxt);

						elog(LOG, "gnn training job %lld: results_seconds not recorded: %s", (long long) wctx->job,
							 ed->message);
					}
					PG_END_TRY();
				}
			}
			else
				report_after = true;
		}
	}
	PG_FINALLY();
	{
		GnnDistJobEnd(dj);
		gnn_train_result_free(&res);
		free(blob);
		if (model)
			gnn_model_free(model);
		gnn_backend_destroy(be);
		GnnGraphRelease(&ref);
	}
	PG_END_TRY();
	/*
	 * Without a results pass, a session that sees the job done also sees its
	 * graph released: a graph dropped while the job ran is out of
	 * gnn.memory_used() by then.  (A results pass holds the graph after the
	 * report until it ends.)
	 */
	if (report_after)
		SlotFinish(GNN_JOB_SUCCEEDED, NULL);
}

/*
 * The job's process keeps the heap it grew.  A training loop allocates and
 * frees the same buffers batch after batch, and glibc by default hands
 * freed memory at the heap's top back to the kernel (and serves blocks
 * above a moving threshold from fresh mappings): every batch of a new shape
 * then faults its pages in again, which on a virtual machine cost 10-20%
 * of a minibatch epoch and made the first evaluation pass slower than the
 * next ones (#44).  This process exists for one job: what it keeps is freed
 * when it exits, and gnn.jobs' peak memory counts what the job allocated,
 * not what the process holds.
 *
 * The heap is also grown at once to the job's estimate (expect_bytes, 64 MB
 * to 512 MB; nothing is touched, so nothing is used yet) and advised for
 * transparent huge pages, with one arena for every thread.  Its first
 * touches then fault in a page per 2 MB instead of per 4 kB: on the 2-core
 * VM a fresh 4 kB page cost 11 us (2.8 ms a MB), and the buffers that
 * evaluation first fills in epoch 1 (the producer thread's, which had an
 * arena of its own) made that epoch's validation 1.4-1.6x a later one's.
 * (Where huge pages are off, or GNN_HUGE_PAGES=0, the advice changes
 * nothing.)
 */
#define WORKER_HEAP_MIN ((int64) 64 << 20)
#define WORKER_HEAP_MAX ((int64) 512 << 20)
#define WORKER_HEAP_STEP ((size_t) 30 << 20)	/* under M_MMAP_THRESHOLD: from the heap */

static void
GnnWorkerHeap(int64 expect_bytes)
{
	int64		want = Min(Max(expect_bytes, WORKER_HEAP_MIN), WORKER_HEAP_MAX);
	void	   *step[WORKER_HEAP_MAX / WORKER_HEAP_STEP + 1];
	int			n = 0;
	char	   *lo,
			   *hi;

	mallopt(M_MMAP_THRESHOLD, 32 * 1024 * 1024);
	mallopt(M_TRIM_THRESHOLD, (int) WORKER_HEAP_MAX + 64 * 1024 * 1024);
	mallopt(M_TOP_PAD, 16 * 1024 * 1024);
	/* before any thread exists: the pipeline's threads allocate from the advised heap too */
	mallopt(M_ARENA_MAX, 1);
	lo = sbrk(0);
	while ((int64) n * (int64) WORKER_HEAP_STEP < want && (step[n] = malloc(WORKER_HEAP_STEP)) != NULL)
		n++;
	hi = sbrk(0);
	if (lo != (char *) -1 && hi != (char *) -1 && hi > lo)
		gnn_advise_huge(lo, (uint64) (hi - lo));
	/* back to the heap's top, which stays (M_TRIM_THRESHOLD) */
	while (n > 0)
		free(step[--n]);
}

void
GnnWorkerMain(Datum arg)
{
	int			idx = DatumGetInt32(arg);
	GnnJobSlot *s;
	Oid			dbid,
				owner;
	MemoryContext mcxt;

	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();
	GnnJobPriority();

	mcxt = AllocSetContextCreate(TopMemoryContext, "gnn worker", ALLOCSET_DEFAULT_SIZES);
	MemoryContextSwitchTo(mcxt);
	wctx = palloc0(sizeof(WorkerCtx));
	wctx->slot_index = idx;
	s = &gnn_shared->jobs[idx];
	LWLockAcquire(gnn_shared->lock, LW_EXCLUSIVE);
	wctx->job = s->id;
	wctx->req = s->req;
	dbid = s->dbid;
	owner = s->owner;
	wctx->owner = owner;
	s->pid = MyProcPid;
	LWLockRelease(gnn_shared->lock);
	GnnWorkerHeap(wctx->req.host_estimate_bytes);
	before_shmem_exit(WorkerExit, (Datum) 0);

	/* as the role that started the job, in its database */
	BackgroundWorkerInitializeConnectionByOid(dbid, owner, 0);
	pgstat_report_appname(psprintf("gnn training job %lld", (long long) wctx->job));
	pgstat_report_activity(STATE_RUNNING,
						   psprintf("gnn: training job %lld: %s \"%s\" on graph \"%s\", %d epochs",
									(long long) wctx->job, wctx->req.model, wctx->req.model_name,
									wctx->req.graph, wctx->req.epochs));
	/* progress rows need not wait for the disk; the final commit does */
	SetConfigOption("synchronous_commit", "off", PGC_USERSET, PGC_S_SESSION);

	PG_TRY();
	{
		RunJob();
	}
	PG_CATCH();
	{
		ErrorData  *ed;

		MemoryContextSwitchTo(mcxt);
		ed = CopyErrorData();
		FlushErrorState();
		AbortOutOfAnyTransaction();
		/* stopped in whatever phase by gnn.cancel (or an interrupted gnn.wait): cancelled, not failed */
		if (MySlot()->cancel_requested && !wctx->failed)
			RecordFailure(GNN_JOB_CANCELLED, NULL);
		else
		{
			ereport(LOG,
					(errmsg("gnn training job %lld failed: %s", (long long) wctx->job, ed->message)));
			RecordFailure(GNN_JOB_FAILED, ed->message);
		}
	}
	PG_END_TRY();

	pgstat_report_activity(STATE_IDLE, NULL);
	proc_exit(0);
}

/*
 * Which layer an embedding is.  Layers are numbered 0 to layers-1; the last
 * is the output layer (its raw scores, before softmax).  The default is the
 * last hidden layer of a classifier, and the output of a link-prediction
 * model (what its training scores with dot products) or of a 1-layer model
 * (which has no hidden layer).  Probabilities: -1 (the output, softmaxed).
 */
int32
GnnDefaultEmbeddingLayer(int layers, bool classifier)
{
	return (layers == 1 || !classifier) ? layers - 1 : layers - 2;
}

/*
 * The worker's entry for sampler 'cluster' / 'saint_rw'.  Cluster-GCN uses
 * the graph's stored partition (gnn.partition) when its number of parts is
 * the one asked for (or none was asked for); otherwise it clusters itself.
 */
gnn_status
GnnTrainSubgraph(const GnnTrainRequest *r, const GnnGraphRef *ref, const gnn_train_config *cfg,
				 gnn_backend *be, gnn_progress_fn progress, gnn_should_stop_fn should_stop,
				 gnn_model **model, gnn_train_result *res, gnn_error *err)
{
	gnn_subgraph_config sc;
	int32	   *stored = NULL;
	gnn_status	st;

	gnn_subgraph_config_default(&sc);
	sc.num_parts = r->num_parts;
	sc.clusters_per_batch = r->clusters_per_batch;
	sc.walk_length = r->walk_length;
	sc.roots = r->roots;
	sc.presample = r->presample;
	sc.batches = r->saint_batches;
	if (strcmp(r->sampler, "cluster") == 0)
	{
		dsm_segment *seg;

		StartTransactionCommand();
		seg = GnnPartitionAttach(ref->entry.name, ref->entry.generation);
		if (seg)
		{
			const GnnPartitionHeader *h = GnnPartitionOf(seg, ref, ref->entry.name);

			if (r->num_parts == 0 || r->num_parts == h->parts)
			{
				stored = MemoryContextAllocHuge(TopMemoryContext, sizeof(int32) * (h->nodes + 1));
				memcpy(stored, h->part, sizeof(int32) * h->nodes);
				sc.num_parts = h->parts;
				sc.part = stored;
			}
			if (!GnnPartitionIsStaged(seg))
				dsm_detach(seg);
		}
		CommitTransactionCommand();
		st = gnn_train_cluster(&ref->g, cfg, &sc, be, progress, NULL, should_stop, NULL, model, res, err);
	}
	else
		st = gnn_train_saint(&ref->g, cfg, &sc, be, progress, NULL, should_stop, NULL, model, res, err);
	if (stored)
		pfree(stored);
	return st;
}
