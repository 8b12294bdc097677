/*
 * estimate.c: what a training job will need before it runs, and the cap on
 * it: gnn.estimate (gnn._estimate takes gnn.train's arguments, so it
 * estimates exactly the job gnn.train would start), gnn.max_job_memory
 * (gnn.train refuses a job whose estimate is over it; the worker stops a
 * job whose measured heap goes over it), and the GPU figure device =>
 * 'auto' decides with.  The figures come from the core (estimate.h); this
 * file turns a request into the core's configuration, once for all of
 * them and for the worker that trains.
 */
#include "common/gnn_pg.h"

#include <stdio.h>
#include <unistd.h>

#include <limits.h>

#include "access/xact.h"
#include "miscadmin.h"
#include "fmgr.h"
#include "funcapi.h"
#include "lib/stringinfo.h"
#include "utils/builtins.h"
#include "utils/guc.h"

#include "train/estimate.h"
#include "base/heap.h"

PG_FUNCTION_INFO_V1(gnn_estimate_job);

int			gnn_max_job_memory_kb = 0;

/*
 * The default of gnn.max_job_memory: half of the machine's memory (or of
 * the cgroup's limit, in a container that has one), so that a job whose
 * estimate cannot fit is refused before it starts unless a superuser says
 * otherwise.
 */
static int
DefaultJobMemoryKb(void)
{
	double		bytes = (double) sysconf(_SC_PHYS_PAGES) * (double) sysconf(_SC_PAGESIZE);
	FILE	   *f = fopen("/sys/fs/cgroup/memory.max", "r");

	if (f)
	{
		double		limit;

		if (fscanf(f, "%lf", &limit) == 1 && limit > 0 && limit < bytes)
			bytes = limit;
		fclose(f);
	}
	if (!(bytes > 0))
		return 0;
	bytes = bytes / 2 / 1024;
	return bytes > INT_MAX ? INT_MAX : (int) bytes;
}

void
GnnEstimateInit(void)
{
	DefineCustomIntVariable("gnn.max_job_memory",
							"Host memory one training job may use (0: no limit; default half of the machine's).",
							"gnn.train refuses a job whose estimate (gnn.estimate) is over it, and a job "
							"that comes to hold more than it stops with an error.",
							&gnn_max_job_memory_kb,
							DefaultJobMemoryKb(), 0, INT_MAX,
							PGC_SUSET, GUC_UNIT_KB,
							NULL, NULL, NULL);
}

/* The core's training configuration for request r on graph g (cuda: trained on a GPU). */
void
GnnTrainConfigFor(const GnnTrainRequest *r, const gnn_graph *g, bool cuda, gnn_train_config *cfg)
{
	gnn_model_kind kind;
	gnn_error	err;

	if (strcmp(r->model, "mlp") == 0)
		kind = GNN_MODEL_SAGE;	/* GraphSAGE's root weights over the nodes without edges */
	else if (!gnn_parse_model_kind(r->model, &kind))
		elog(ERROR, "unknown model \"%s\"", r->model);
	gnn_train_config_default(kind, cfg);
	cfg->hidden = r->hidden;
	cfg->layers = r->layers;
	cfg->epochs = r->epochs;
	cfg->lr = (float) r->lr;
	cfg->weight_decay = (float) r->weight_decay;
	cfg->dropout = (float) r->dropout;
	cfg->attn_dropout = (float) r->attn_dropout;
	cfg->heads = r->heads;
	cfg->out_heads = r->out_heads;
	if (r->patience >= 0)
		cfg->patience = r->patience;
	cfg->seed = (uint64_t) r->seed;
	cfg->threads = r->threads;
	cfg->row_normalise = r->row_normalise;
	cfg->timing = false;
	cfg->task = strcmp(r->task, "regression") == 0 ? GNN_TASK_REGRESS : GNN_TASK_CLASSIFY;
	cfg->num_bases = r->num_bases;
	/* the type trained on: the one whose nodes carry labels or targets */
	cfg->target_type = GnnResultType(g, NULL, r->graph);
	if (!gnn_parse_aggr(r->aggregator, &cfg->aggr) || !gnn_parse_optim(r->optimizer, &cfg->optimizer) ||
		(r->select[0] && !gnn_parse_select(r->select, &cfg->select)))
		elog(ERROR, "invalid training options");
	strlcpy(cfg->backend, cuda ? "cuda" : "cpu", sizeof(cfg->backend));
	if (gnn_train_config_check(cfg, &err) != GNN_OK)
		GnnReportCoreError("invalid training configuration", &err);
	{
		int32		si,
					sc;

		/* a feature slice holds some columns of every row: it trains only as its share of feature_slices */
		if (GnnGraphFeatureSlice(g, &si, &sc) && !r->feature_slices)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("graph \"%s\" holds feature slice %d of %d, %d of its feature columns", r->graph, si, sc,
							g->feat_dim),
					 errhint("Train it with options.feature_slices over %d servers, each holding its slice, "
							 "or load the whole features.", sc)));
	}
}

/*
 * The estimate of request r's job on graph g, on a GPU (gpu) or the CPU;
 * bound: evaluation's kept rows at their bound (gnn_job_plan's
 * kept_rows_bound), not counted.
 */
static void
EstimateOf(const GnnTrainRequest *r, const gnn_graph *g, bool gpu, bool bound, gnn_estimate *est)
{
	gnn_train_config cfg;
	gnn_job_plan plan;
	gnn_error	err;

	GnnTrainConfigFor(r, g, gpu, &cfg);
	gnn_job_plan_default(&plan);
	if (strcmp(r->task, "link_prediction") == 0)
		plan.loop = GNN_LOOP_LINKPRED;
	else if (r->nfanouts > 0)
		plan.loop = GNN_LOOP_MINIBATCH;
	else if (strcmp(r->sampler, "cluster") == 0)
		plan.loop = GNN_LOOP_CLUSTER;
	else if (strcmp(r->sampler, "saint_rw") == 0)
		plan.loop = GNN_LOOP_SAINT;
	plan.nfanouts = r->nfanouts;
	for (int h = 0; h < r->nfanouts && h < GNN_MAX_LAYERS; h++)
		plan.fanouts[h] = r->fanouts[h];
	plan.batch_size = r->batch_size;
	plan.prefetch = r->prefetch;
	plan.threads = r->threads;
	plan.sampled_eval = strcmp(r->evaluation, "full") != 0;
	plan.no_eval_reuse = r->eval_reuse_off;
	plan.kept_rows_bound = bound;
	plan.eval_batch_size = r->eval_batch_size;
	/* as the worker decides (RunMinibatch): time-aware on a graph with times unless turned off */
	plan.temporal = r->nfanouts > 0 && ((r->temporal != 0 && g->time) || r->has_as_of);
	plan.gpu = gpu;
	plan.gpu_cache_bytes = gnn_gpu_cache_size_mb < 0 ? -1 : (int64) gnn_gpu_cache_size_mb << 20;
	plan.host_cache_bytes = g->fstore ? (int64) r->feature_cache_kb * 1024 : 0;
	if (gnn_job_estimate(g, &cfg, &plan, est, &err) != GNN_OK)
		GnnReportCoreError("could not estimate the job", &err);
}

/* the graph the request trains on, as the job sees it (features-only models: no arcs) */
static void
AcquireFor(const GnnTrainRequest *r, GnnGraphRef *ref)
{
	GnnGraphAcquireView(r->graph, ref);
	if (strcmp(r->model, "mlp") == 0)
		GnnEdgelessView(&ref->g, &ref->g);
}

/* The device memory request r's job needs (device => 'auto': does the GPU hold it?). */
int64
GnnJobGpuBytes(const GnnTrainRequest *r)
{
	GnnGraphRef ref;
	gnn_estimate est;
	bool		xact = !IsTransactionState();

	if (xact)
		StartTransactionCommand();
	AcquireFor(r, &ref);
	EstimateOf(r, &ref.g, true, false, &est);
	GnnGraphRelease(&ref);
	if (xact)
		CommitTransactionCommand();
	return est.gpu_bytes;
}

static char *
LargestItems(const gnn_estimate *est)
{
	StringInfoData b;
	bool		used[GNN_ESTIMATE_ITEMS] = {false};

	initStringInfo(&b);
	for (int k = 0; k < 3; k++)
	{
		int			best = -1;

		for (int i = 0; i < est->n; i++)
			if (!est->items[i].gpu && !est->items[i].after && !used[i] && (best < 0 || est->items[i].bytes > est->items[best].bytes))
				best = i;
		if (best < 0)
			break;
		used[best] = true;
		appendStringInfo(&b, "%s%s %lld MB", k ? ", " : "", est->items[best].item,
						 (long long) (est->items[best].bytes >> 20));
	}
	return b.data;
}

/*
 * gnn.train's check: the job's host estimate against the caller's
 * gnn.max_job_memory (on the CPU's plan, which holds the most on the host:
 * device => 'auto' may end there).
 */
void
GnnCheckJobMemory(GnnTrainRequest *r, const gnn_graph *g)
{
	gnn_estimate est;
	gnn_graph	view = *g;

	if (r->max_job_memory_kb <= 0)
		return;
	if (strcmp(r->model, "mlp") == 0)
		GnnEdgelessView(g, &view);
	/*
	 * First with evaluation's kept rows at their bound, which costs no
	 * pass over the graph: most jobs fit with room to spare.  One that does
	 * not is estimated as gnn.estimate does.  (The worker's heap is grown
	 * to either: address space, nothing touched.)
	 */
	EstimateOf(r, &view, strcmp(r->device, "cuda") == 0, true, &est);
	if (est.host_bytes > (int64) r->max_job_memory_kb * 1024)
		EstimateOf(r, &view, strcmp(r->device, "cuda") == 0, false, &est);
	r->host_estimate_bytes = est.host_bytes;	/* the worker's heap (worker.c) */
	if (est.host_bytes > (int64) r->max_job_memory_kb * 1024 && !r->eval_reuse_off)
	{
		/* the rows evaluation keeps are a saving, not a need: a job that fits without them runs without them */
		for (int i = 0; i < est.n; i++)
			if (strcmp(est.items[i].item, GNN_ESTIMATE_KEPT_ROWS) == 0 &&
				est.host_bytes - est.items[i].bytes <= (int64) r->max_job_memory_kb * 1024)
			{
				r->eval_reuse_off = true;
				r->host_estimate_bytes = est.host_bytes - est.items[i].bytes;
				ereport(DEBUG1,
						(errmsg("training job on graph \"%s\" keeps no evaluation rows between batches: with them "
								"it would need about %lld MB, over gnn.max_job_memory (%d MB)", r->graph,
								(long long) (est.host_bytes >> 20), r->max_job_memory_kb / 1024)));
				return;
			}
	}
	if (est.host_bytes > (int64) r->max_job_memory_kb * 1024)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("training job on graph \"%s\" needs about %lld MB of host memory, over gnn.max_job_memory (%d MB)",
						r->graph, (long long) (est.host_bytes >> 20), r->max_job_memory_kb / 1024),
				 errdetail("The estimate's largest items: %s (gnn.estimate lists them all).", LargestItems(&est)),
				 superuser()
				 ? errhint("Train on minibatches (options => '{\"fanouts\": [10, 10]}'), a smaller hidden or "
						   "batch_size, or raise gnn.max_job_memory.")
				 : errhint("Train on minibatches (options => '{\"fanouts\": [10, 10]}'), or a smaller hidden or "
						   "batch_size; gnn.max_job_memory is set by a superuser.")));
}

static void
EmitRows(Tuplestorestate *ts, TupleDesc td, const gnn_estimate *est, bool host, bool gpu)
{
	for (int i = 0; i < est->n; i++)
	{
		const gnn_estimate_item *it = &est->items[i];
		Datum		v[3];
		bool		nulls[3] = {false, false, false};

		if ((it->gpu && !gpu) || (!it->gpu && !host))
			continue;
		v[0] = CStringGetTextDatum(it->gpu ? psprintf("gpu: %s", it->item) : it->item);
		v[1] = Int64GetDatum(it->bytes);
		v[2] = CStringGetTextDatum(it->note);
		tuplestore_putvalues(ts, td, v, nulls);
	}
}

#define AFTER_NOTE "host memory after the job is reported: the model and its results pass (not the job's)"

static void
EmitTotal(Tuplestorestate *ts, TupleDesc td, const char *item, int64 bytes, const char *note)
{
	Datum		v[3];
	bool		nulls[3] = {false, false, false};

	v[0] = CStringGetTextDatum(item);
	v[1] = Int64GetDatum(bytes);
	v[2] = CStringGetTextDatum(note);
	tuplestore_putvalues(ts, td, v, nulls);
}

/*
 * gnn._estimate(gnn.train's arguments): a row per item of host (and GPU)
 * memory, then the totals.  device 'cpu': the CPU's plan; 'cuda': the
 * GPU's, host and device items; 'auto': the CPU's items (what runs when no
 * GPU takes the job) and the GPU's total, which decides whether one does.
 */
Datum
gnn_estimate_job(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	GnnTrainRequest r;
	GnnGraphRef ref;
	gnn_estimate cpu,
				gpu;
	bool		cuda;
	char	   *cap;

	GnnRequirePreload();
	GnnTrainRequestFromArgs(fcinfo, &r);
	InitMaterializedSRF(fcinfo, 0);
	cuda = strcmp(r.device, "cuda") == 0;
	AcquireFor(&r, &ref);
	PG_TRY();
	{
		EstimateOf(&r, &ref.g, false, false, &cpu);
		EstimateOf(&r, &ref.g, true, false, &gpu);
	}
	PG_FINALLY();
	{
		GnnGraphRelease(&ref);
	}
	PG_END_TRY();

	cap = r.max_job_memory_kb > 0 ? psprintf("gnn.max_job_memory is %d MB", r.max_job_memory_kb / 1024) :
		pstrdup("no cap (gnn.max_job_memory = 0)");
	if (cuda)
	{
		EmitRows(rsinfo->setResult, rsinfo->setDesc, &gpu, true, true);
		EmitTotal(rsinfo->setResult, rsinfo->setDesc, "total host", gpu.host_bytes, cap);
		EmitTotal(rsinfo->setResult, rsinfo->setDesc, "total gpu", gpu.gpu_bytes, "device memory on the GPU");
		EmitTotal(rsinfo->setResult, rsinfo->setDesc, "total after", gpu.after_host_bytes, AFTER_NOTE);
	}
	else
	{
		EmitRows(rsinfo->setResult, rsinfo->setDesc, &cpu, true, false);
		EmitTotal(rsinfo->setResult, rsinfo->setDesc, "total host", cpu.host_bytes, cap);
		EmitTotal(rsinfo->setResult, rsinfo->setDesc, "total after", cpu.after_host_bytes, AFTER_NOTE);
		if (strcmp(r.device, "auto") == 0)
			EmitTotal(rsinfo->setResult, rsinfo->setDesc, "total gpu", gpu.gpu_bytes,
					  "if a GPU trains it: device => 'auto' takes one when this fits in 90% of its free memory");
	}
	return (Datum) 0;
}
