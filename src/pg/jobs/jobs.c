/*
 * jobs.c: training jobs.  gnn.train validates a request, takes a job slot in
 * shared memory, starts a dynamic background worker connected to the same
 * database as the calling role, and returns the job id; gnn.wait and
 * wait => true poll the slot; gnn.cancel flags it.  Live progress is read
 * from the slots (gnn._live_jobs, behind the gnn.jobs view).
 */
#include "common/gnn_pg.h"
#include <signal.h>
#include <sys/stat.h>
#include "storage/fd.h"
#include "train/train_mb.h"
#include "train/train_node2vec.h"

#include <math.h>

#include "access/htup_details.h"
#include "access/xact.h"
#include "catalog/pg_authid.h"
#include "commands/extension.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "utils/builtins.h"
#include "utils/json.h"
#include "utils/jsonb.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"

PG_FUNCTION_INFO_V1(gnn_train);
PG_FUNCTION_INFO_V1(gnn_wait);
PG_FUNCTION_INFO_V1(gnn_cancel);
PG_FUNCTION_INFO_V1(gnn_live_jobs);
PG_FUNCTION_INFO_V1(gnn_instance);

/* the job this backend is waiting for: cancelled if the wait is interrupted */
static int64 waiting_for_job = 0;
static bool exit_callback_registered = false;

const char *
GnnJobStateName(GnnJobState s)
{
	switch (s)
	{
		case GNN_JOB_STARTING:
			return "queued";
		case GNN_JOB_RUNNING:
			return "running";
		case GNN_JOB_SUCCEEDED:
			return "succeeded";
		case GNN_JOB_FAILED:
			return "failed";
		case GNN_JOB_CANCELLED:
			return "cancelled";
		default:
			return "free";
	}
}

static bool
JobFinal(GnnJobState s)
{
	return GnnJobFinal(s);
}

static Oid	cached_extoid = InvalidOid;

/* The OID of this database's gnn extension: job slots belong to one instance of it. */
static Oid
ExtOid(void)
{
	cached_extoid = get_extension_oid("gnn", true);
	return cached_extoid;
}

/* caller holds the lock; uses the extension OID looked up last (ExtOid) */
static GnnJobSlot *
FindJob(int64 id)
{
	for (int i = 0; i < GNN_JOB_SLOTS; i++)
	{
		GnnJobSlot *j = &gnn_shared->jobs[i];

		if (j->state != GNN_JOB_FREE && j->id == id && j->dbid == MyDatabaseId &&
			j->extoid == cached_extoid)
			return j;
	}
	return NULL;
}

static void
RequestCancel(int64 id)
{
	GnnJobSlot *j;

	/* no catalog access here: this also runs at process exit */
	LWLockAcquire(gnn_shared->lock, LW_EXCLUSIVE);
	j = FindJob(id);
	if (j && !JobFinal(j->state))
		j->cancel_requested = true;
	LWLockRelease(gnn_shared->lock);
}

/* A session that goes away while waiting for a job takes the job with it. */
static void
CancelWaitedJobAtExit(int code, Datum arg)
{
	if (waiting_for_job != 0 && gnn_shared != NULL)
		RequestCancel(waiting_for_job);
	waiting_for_job = 0;
}

/* ------------------------------------------------------------------ validation */

static void
SetText(char *dst, size_t len, const char *src, const char *what, const char *const *accepted)
{
	bool		ok = accepted == NULL;

	for (const char *const *a = accepted; a && *a; a++)
		ok |= strcmp(src, *a) == 0;
	if (!ok)
	{
		StringInfoData list;

		initStringInfo(&list);
		for (const char *const *a = accepted; *a; a++)
			appendStringInfo(&list, "%s%s", a == accepted ? "" : ", ", *a);
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("unknown %s \"%s\"", what, src),
				 errhint("Accepted values: %s.", list.data)));
	}
	if (dst == NULL)
		return;					/* only validating */
	if (strlen(src) >= len)
		ereport(ERROR,
				(errcode(ERRCODE_NAME_TOO_LONG),
				 errmsg("%s \"%s\" is too long", what, src)));
	strlcpy(dst, src, len);
}

static void
CheckRange(const char *what, double v, double lo, double hi)
{
	if (!(v >= lo && v <= hi))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must be between %g and %g (got %g)", what, lo, hi, v)));
}

static const char *const model_names[] = {"gcn", "graphsage", "gat", "rgcn", "hetero_sage", "mlp", "node2vec", NULL};
static const char *const task_names[] = {"node_classification", "link_prediction", "regression", "embedding", NULL};
static const char *const device_names[] = {"auto", "cpu", "cuda", NULL};
static const char *const deploy_names[] = {"never", "always", "if_better", NULL};
static const char *const aggr_names[] = {"mean", "pool", NULL};
static const char *const optim_names[] = {"adam", "sgd", NULL};
static const char *const select_names[] = {"loss", "acc", "gat", NULL};
static const char *const option_names[] = {"heads", "out_heads", "patience", "aggregator",
	"optimizer", "attn_dropout", "select", "row_normalise", "fanouts", "batch_size", "sampler",
	"num_parts", "clusters_per_batch", "walk_length", "roots", "presample", "batches",
	"num_bases", "edge_type", "temporal", "temporal_strategy", "seed_time", "prefetch",
	"gpu_sampling", "cache_policy", "evaluation", "eval_nodes", "eval_batch_size", "walks_per_node", "window", "p", "q", "negatives", "dim",
	"streams", "feature_slices", NULL};
static const char *const cache_policy_names[] = {"presample", "degree", NULL};
static const char *const evaluation_names[] = {"full", "sampled", NULL};
static const char *const temporal_names[] = {"uniform", "last", NULL};
static const char *const streams_names[] = {"batch", "node", NULL};
static const char *const sampler_names[] = {"full", "neighbor", "ladies", "cluster", "saint_rw", NULL};

static int32
OptInt(const char *key, const char *val, int32 lo, int32 hi)
{
	char	   *end;
	long		v = strtol(val, &end, 10);

	if (*val == '\0' || *end != '\0')
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("option \"%s\" must be an integer (got %s)", key, val)));
	CheckRange(key, v, lo, hi);
	return (int32) v;
}

/*
 * options.peers (a list of conninfos), options.coordinator (the conninfo
 * the peers reach this server by) and options.dist_timeout_ms: into r, and
 * the options without them (what the peers are given) returned.
 */
Jsonb *
GnnTakeDistOptions(Jsonb *opts, GnnTrainRequest *r)
{
	JsonbValue *pv = getKeyJsonValueFromContainer(&opts->root, "peers", 5, NULL);
	JsonbValue *cv = getKeyJsonValueFromContainer(&opts->root, "coordinator", 11, NULL);
	JsonbValue *tv = getKeyJsonValueFromContainer(&opts->root, "dist_timeout_ms", 15, NULL);
	Datum		rest = JsonbPGetDatum(opts);

	r->dist_timeout_ms = 60000;
	if (!pv && (cv || tv))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("options \"coordinator\" and \"dist_timeout_ms\" go with \"peers\""),
				 errhint("Name the other servers: options => '{\"peers\": [\"host=... port=... dbname=...\"]}'.")));
	if (!pv)
		return opts;
	if (pv->type != jbvBinary || !JsonContainerIsArray(pv->val.binary.data))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("option \"peers\" must be a list of conninfos"),
				 errhint("For example {\"peers\": [\"host=10.0.0.2 port=5432 dbname=app\", \"host=10.0.0.3 ...\"]}.")));
	{
		JsonbIterator *it = JsonbIteratorInit(pv->val.binary.data);
		JsonbValue	v;
		JsonbIteratorToken tok;

		while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
		{
			char	   *s;

			if (tok != WJB_ELEM)
				continue;
			if (v.type != jbvString)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("option \"peers\" must hold conninfo strings")));
			s = pnstrdup(v.val.string.val, v.val.string.len);
			if (strchr(s, '\n') || strlen(r->dist_peers) + strlen(s) + 2 > sizeof(r->dist_peers))
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("the conninfos of option \"peers\" are too long together, or hold a line break")));
			if (r->dist_npeers >= 63)
				ereport(ERROR,
						(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
						 errmsg("at most 63 peers take part in one job")));
			GnnDistCheckConninfo(s, psprintf("peer %d", r->dist_npeers + 1));
			strlcat(r->dist_peers, s, sizeof(r->dist_peers));
			strlcat(r->dist_peers, "\n", sizeof(r->dist_peers));
			r->dist_npeers++;
		}
	}
	if (r->dist_npeers == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("option \"peers\" is an empty list"),
				 errhint("Leave it out to train on this server alone.")));
	if (cv)
	{
		if (cv->type != jbvString)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("option \"coordinator\" must be a conninfo string")));
		if (cv->val.string.len >= (int) sizeof(r->dist_coordinator))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("option \"coordinator\" is too long")));
		memcpy(r->dist_coordinator, cv->val.string.val, cv->val.string.len);
		r->dist_coordinator[cv->val.string.len] = '\0';
		GnnDistCheckConninfo(r->dist_coordinator, "the coordinator");
	}
	if (tv)
	{
		char	   *t = tv->type == jbvNumeric ?
			DatumGetCString(DirectFunctionCall1(numeric_out, NumericGetDatum(tv->val.numeric))) : "null";

		r->dist_timeout_ms = OptInt("dist_timeout_ms", t, 100, 3600 * 1000);
	}
	rest = DirectFunctionCall2(jsonb_delete, rest, CStringGetTextDatum("peers"));
	rest = DirectFunctionCall2(jsonb_delete, rest, CStringGetTextDatum("coordinator"));
	rest = DirectFunctionCall2(jsonb_delete, rest, CStringGetTextDatum("dist_timeout_ms"));
	{
		char	   *txt = JsonbToCString(NULL, &DatumGetJsonbP(rest)->root, VARSIZE(DatumGetJsonbP(rest)));

		if (strlen(txt) >= sizeof(r->dist_options))
			ereport(ERROR,
					(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
					 errmsg("the options of a distributed job are too long")));
		strlcpy(r->dist_options, txt, sizeof(r->dist_options));
	}
	return DatumGetJsonbP(rest);
}

/* options jsonb: every key must be known */
static void
ParseOptions(Jsonb *opts, GnnTrainRequest *r)
{
	JsonbIterator *it;
	JsonbValue	v;
	JsonbIteratorToken tok;
	char	   *key = NULL;
	int			depth = 0;
	bool		in_fanouts = false;
	bool		in_type_fanouts = false;	/* {"fanouts": {"reviews": [10, 5], "default": [5, 5]}} */
	int32	   *cur = NULL;
	int32	   *cur_n = NULL;
	int32		cur_count = 0;

	if (!JB_ROOT_IS_OBJECT(opts))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("options must be a JSON object")));
	it = JsonbIteratorInit(&opts->root);
	while ((tok = JsonbIteratorNext(&it, &v, false)) != WJB_DONE)
	{
		char	   *val;

		if (in_type_fanouts)
		{
			/* inside the fan-outs object: name -> array of fan-outs */
			if (tok == WJB_KEY && depth == 2)
			{
				char	   *nm = pnstrdup(v.val.string.val, v.val.string.len);

				if (strcmp(nm, "default") == 0)
				{
					cur = r->fanouts;
					cur_n = &r->nfanouts;
				}
				else
				{
					if (r->ntype_fanouts >= GNN_MAX_TYPE_FANOUTS)
						ereport(ERROR,
								(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
								 errmsg("at most %d named fan-outs are allowed", GNN_MAX_TYPE_FANOUTS)));
					SetText(r->type_fanout_names[r->ntype_fanouts], NAMEDATALEN, nm, "fan-out name", NULL);
					cur = r->type_fanouts[r->ntype_fanouts];
					cur_n = &cur_count;
					r->ntype_fanouts++;
				}
				*cur_n = 0;
				continue;
			}
			if (tok == WJB_BEGIN_ARRAY && depth == 2 && cur)
			{
				depth++;
				continue;
			}
			if (tok == WJB_END_ARRAY && depth == 3)
			{
				depth--;
				if (*cur_n == 0)
					ereport(ERROR,
							(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
							 errmsg("option \"fanouts\" must not hold an empty list")));
				for (int h = *cur_n; h < GNN_MAX_FANOUTS; h++)
					cur[h] = cur[*cur_n - 1];
				cur = NULL;
				continue;
			}
			if (tok == WJB_END_OBJECT && depth == 2)
			{
				depth--;
				in_type_fanouts = false;
				if (r->nfanouts == 0)
					ereport(ERROR,
							(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
							 errmsg("option \"fanouts\" given per type needs a \"default\" list"),
							 errhint("For example {\"fanouts\": {\"reviews\": [10, 5], \"default\": [5, 5]}}.")));
				continue;
			}
			if ((tok == WJB_ELEM) && depth == 3 && cur)
			{
				char	   *val = v.type == jbvNumeric ?
					DatumGetCString(DirectFunctionCall1(numeric_out, NumericGetDatum(v.val.numeric))) : "null";
				int32		f = OptInt("fanouts", val, -1, 100000);

				if (*cur_n >= GNN_MAX_FANOUTS)
					ereport(ERROR,
							(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
							 errmsg("at most %d fan-outs are allowed", GNN_MAX_FANOUTS)));
				cur[(*cur_n)++] = f;
				continue;
			}
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("option \"fanouts\" must be a list of integers, or an object of such lists"),
					 errhint("For example {\"fanouts\": [10, 10]} or {\"fanouts\": {\"reviews\": [10, 5], \"default\": [5, 5]}}.")));
		}
		if (tok == WJB_BEGIN_OBJECT && depth == 1 && key && strcmp(key, "fanouts") == 0)
		{
			in_type_fanouts = true;
			r->nfanouts = 0;
			depth++;
			continue;
		}
		if (tok == WJB_BEGIN_ARRAY && depth == 1 && key && strcmp(key, "fanouts") == 0)
		{
			/* the one list-valued option: fan-outs per hop */
			in_fanouts = true;
			r->nfanouts = 0;
			depth++;
			continue;
		}
		if (tok == WJB_BEGIN_OBJECT || tok == WJB_BEGIN_ARRAY)
		{
			depth++;
			if (depth > 1)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("option \"%s\" must be a scalar", key ? key : "?")));
			continue;
		}
		if (tok == WJB_END_OBJECT || tok == WJB_END_ARRAY)
		{
			depth--;
			if (in_fanouts && r->nfanouts == 0)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("option \"fanouts\" must not be empty"),
						 errhint("Give one fan-out per layer, e.g. {\"fanouts\": [10, 10]}; -1 takes all neighbours.")));
			in_fanouts = false;
			continue;
		}
		if (tok == WJB_KEY)
		{
			key = pnstrdup(v.val.string.val, v.val.string.len);
			SetText(NULL, 0, key, "option", option_names);	/* rejects unknown keys */
			continue;
		}
		/* a value */
		switch (v.type)
		{
			case jbvString:
				val = pnstrdup(v.val.string.val, v.val.string.len);
				break;
			case jbvNumeric:
				val = DatumGetCString(DirectFunctionCall1(numeric_out, NumericGetDatum(v.val.numeric)));
				break;
			case jbvBool:
				val = v.val.boolean ? "true" : "false";
				break;
			default:
				val = "null";
		}
		if (strcmp(key, "fanouts") == 0)
		{
			int32		f;

			if (!in_fanouts)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("option \"fanouts\" must be an array of integers"),
						 errhint("For example {\"fanouts\": [10, 10]}, one per layer; -1 takes all neighbours.")));
			if (r->nfanouts >= GNN_MAX_FANOUTS)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("at most %d fan-outs are allowed", GNN_MAX_FANOUTS)));
			f = OptInt(key, val, -1, 100000);
			if (f == 0)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("a fan-out must be -1 (all neighbours) or between 1 and 100000 (got 0)")));
			r->fanouts[r->nfanouts++] = f;
		}
		else if (strcmp(key, "batch_size") == 0)
			r->batch_size = OptInt(key, val, 1, 1000000);
		else if (strcmp(key, "prefetch") == 0)
			r->prefetch = OptInt(key, val, 0, 64);
		else if (strcmp(key, "eval_nodes") == 0)
		{
			if (strcmp(val, "all") == 0)
				r->eval_nodes = -1;
			else if (val[0] == '\0' || strspn(val, "-0123456789") != strlen(val))
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("option \"eval_nodes\" must be an integer or \"all\" (got %s)", val),
						 errhint("Give the number of validation nodes to measure after each epoch, or \"all\" for the whole split.")));
			else
				r->eval_nodes = OptInt(key, val, 1, 1000000000);
		}
		else if (strcmp(key, "eval_batch_size") == 0)
			r->eval_batch_size = OptInt(key, val, 1, 1000000);
		else if (strcmp(key, "gpu_sampling") == 0)
		{
			if (strcmp(val, "true") != 0 && strcmp(val, "false") != 0)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("option \"gpu_sampling\" must be true or false, got %s", val),
						 errhint("false builds minibatches on the CPU even on a GPU.")));
			r->gpu_sampling = strcmp(val, "true") == 0;
		}
		else if (strcmp(key, "cache_policy") == 0)
			SetText(r->cache_policy, sizeof(r->cache_policy), val, "cache_policy", cache_policy_names);
		else if (strcmp(key, "evaluation") == 0)
			SetText(r->evaluation, sizeof(r->evaluation), val, "evaluation", evaluation_names);
		else if (strcmp(key, "sampler") == 0)
			SetText(r->sampler, sizeof(r->sampler), val, "sampler", sampler_names);
		else if (strcmp(key, "heads") == 0)
			r->heads = OptInt(key, val, 1, 64);
		else if (strcmp(key, "out_heads") == 0)
			r->out_heads = OptInt(key, val, 1, 64);
		else if (strcmp(key, "patience") == 0)
			r->patience = OptInt(key, val, 0, 1000000);
		else if (strcmp(key, "aggregator") == 0)
			SetText(r->aggregator, sizeof(r->aggregator), val, "aggregator", aggr_names);
		else if (strcmp(key, "optimizer") == 0)
			SetText(r->optimizer, sizeof(r->optimizer), val, "optimizer", optim_names);
		else if (strcmp(key, "select") == 0)
			SetText(r->select, sizeof(r->select), val, "selection rule", select_names);
		else if (strcmp(key, "attn_dropout") == 0)
		{
			r->attn_dropout_set = true;
			r->attn_dropout = strtod(val, NULL);
			CheckRange("attn_dropout", r->attn_dropout, 0, 0.99);
		}
		else if (strcmp(key, "num_parts") == 0)
			r->num_parts = OptInt(key, val, 2, 100000000);
		else if (strcmp(key, "clusters_per_batch") == 0)
			r->clusters_per_batch = OptInt(key, val, 1, 100000000);
		else if (strcmp(key, "walk_length") == 0)
			r->walk_length = OptInt(key, val, 1, 1000);
		else if (strcmp(key, "walks_per_node") == 0)
			r->walks_per_node = OptInt(key, val, 1, 10000);
		else if (strcmp(key, "window") == 0)
			r->window = OptInt(key, val, 2, 1001);
		else if (strcmp(key, "negatives") == 0)
			r->negatives = OptInt(key, val, 0, 100);
		else if (strcmp(key, "dim") == 0)
		{
			r->hidden = OptInt(key, val, 1, 4096);
			r->dim_set = true;
		}
		else if (strcmp(key, "p") == 0 || strcmp(key, "q") == 0)
		{
			double		x = strtod(val, NULL);

			CheckRange(key, x, 1e-6, 1e6);
			if (key[0] == 'p')
				r->p = x;
			else
				r->q = x;
		}
		else if (strcmp(key, "roots") == 0)
			r->roots = OptInt(key, val, 1, 100000000);
		else if (strcmp(key, "presample") == 0)
			r->presample = OptInt(key, val, 1, 1000000);
		else if (strcmp(key, "batches") == 0)
			r->saint_batches = OptInt(key, val, 1, 1000000);
		else if (strcmp(key, "num_bases") == 0)
			r->num_bases = OptInt(key, val, 0, 1000);
		else if (strcmp(key, "edge_type") == 0)
			SetText(r->edge_type, sizeof(r->edge_type), val, "edge type", NULL);
		else if (strcmp(key, "temporal_strategy") == 0)
			SetText(r->temporal_strategy, sizeof(r->temporal_strategy), val, "temporal strategy", temporal_names);
		else if (strcmp(key, "streams") == 0)
			SetText(r->streams, sizeof(r->streams), val, "streams", streams_names);
		else if (strcmp(key, "seed_time") == 0)
		{
			/* one time for every seed: training "as of" it */
			r->as_of = DatumGetTimestampTz(DirectFunctionCall3(timestamptz_in, CStringGetDatum(val),
															   ObjectIdGetDatum(InvalidOid), Int32GetDatum(-1)));
			if (TIMESTAMP_NOT_FINITE(r->as_of))
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("option \"seed_time\" must be a finite time, got \"%s\"", val),
						 errhint("For example {\"seed_time\": \"2024-06-01\"}; per-row seed times are a load option of gnn.load_schema_graph.")));
			r->has_as_of = true;
		}
		else if (strcmp(key, "temporal") == 0)
		{
			if (strcmp(val, "true") != 0 && strcmp(val, "false") != 0)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("option \"temporal\" must be true or false")));
			r->temporal = strcmp(val, "true") == 0;
		}
		else if (strcmp(key, "feature_slices") == 0)
		{
			if (strcmp(val, "true") != 0 && strcmp(val, "false") != 0)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("option \"feature_slices\" must be true or false")));
			r->feature_slices = strcmp(val, "true") == 0;
		}
		else if (strcmp(key, "row_normalise") == 0)
		{
			r->row_normalise_set = true;
			if (strcmp(val, "true") != 0 && strcmp(val, "false") != 0)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("option \"row_normalise\" must be true or false")));
			r->row_normalise = strcmp(val, "true") == 0;
		}
	}
}

/* minibatch options: fan-outs one per layer; batch size and sampler only with fan-outs */
static void
CheckSampling(GnnTrainRequest *r)
{
	size_t		len;

	bool		nodewise = strcmp(r->sampler, "neighbor") == 0 || strcmp(r->sampler, "ladies") == 0;
	/* node minibatch training evaluates on sampled neighbourhoods (its options below) */
	bool		sampled_eval = r->nfanouts > 0 && strcmp(r->evaluation, "full") != 0 &&
		strcmp(r->task, "link_prediction") != 0;

	if (strcmp(r->task, "link_prediction") == 0 && r->sampler[0] && strcmp(r->sampler, "full") != 0 &&
		strcmp(r->sampler, "neighbor") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("link prediction trains full-batch or on neighbour-sampled minibatches; sampler \"%s\" is not supported with it",
						r->sampler),
				 errhint("Drop the sampler option, or give fanouts for minibatches.")));
	if (strcmp(r->streams, "node") == 0 && (r->nfanouts == 0 || strcmp(r->sampler, "ladies") == 0))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("streams => node applies to neighbour-sampled minibatches"),
				 errdetail("It keys each node's draws by its id; %s.",
						   r->nfanouts == 0 ? "this job samples nothing" : "LADIES draws each layer as a whole"),
				 errhint("%s", r->nfanouts == 0 ? "Add fanouts, or drop streams." : "Drop streams, or the ladies sampler.")));
	if ((r->eval_nodes != 0 || r->eval_batch_size > 0) && !sampled_eval)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s applies to node minibatch training with sampled evaluation",
						r->eval_nodes != 0 ? "eval_nodes" : "eval_batch_size"),
				 errdetail("It measures a sample of the validation split after each epoch; %s.",
						   r->nfanouts == 0 ? "this job trains full batch and evaluates every node" :
						   strcmp(r->evaluation, "full") == 0 ? "evaluation => 'full' measures every node" :
						   "link prediction measures its held-out pairs"),
				 errhint("Drop %s%s.", r->eval_nodes != 0 ? "eval_nodes" : "eval_batch_size",
						 r->nfanouts == 0 ? ", or give fanouts" : "")));
	/*
	 * Not given: gnn.eval_nodes of the session that asked (20,000 by
	 * default: model selection needs an accuracy, not every node, and at
	 * 20,000 its standard error is at most 0.35 points; a validation split
	 * as large as the training split, a 1M-node graph cut 10/10/10, cost
	 * half a training pass each epoch).  Recorded in params either way.
	 */
	if (r->eval_nodes == 0 && sampled_eval)
		r->eval_nodes = gnn_eval_nodes > 0 ? gnn_eval_nodes : -1;
	if (r->nfanouts == 0)
	{
		if (r->batch_size > 0 || nodewise)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("batch_size and the %s sampler need fanouts", nodewise ? r->sampler : "neighbor"),
					 errhint("Add {\"fanouts\": [10, 10]} (one per layer) to train on sampled minibatches.")));
		return;
	}
	if (r->sampler[0] && !nodewise)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("fanouts apply to the neighbor and ladies samplers, not to \"%s\"", r->sampler),
				 errhint("Drop fanouts, or use sampler \"neighbor\" or \"ladies\".")));
	if (r->nfanouts != r->layers)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%d fan-outs given for a model with %d layers", r->nfanouts, r->layers),
				 errhint("Give one fan-out per layer.")));
	if (strcmp(r->task, "link_prediction") == 0 && strcmp(r->sampler, "ladies") == 0)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("link prediction samples its minibatches neighbour by neighbour; the ladies sampler is not supported with it"),
				 errhint("Drop the sampler option.")));
	/* link prediction's batches are pairs (their endpoints the seeds): larger batches train it better */
	if (r->batch_size == 0)
		r->batch_size = strcmp(r->task, "link_prediction") == 0 ? 2048 : 512;
	if (r->prefetch < 0)
		r->prefetch = 2;
	if (r->sampler[0] == '\0')
		strlcpy(r->sampler, "neighbor", sizeof(r->sampler));
	for (int h = 0; h < r->nfanouts; h++)
		if (strcmp(r->sampler, "ladies") == 0 && r->fanouts[h] < 1)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("the ladies sampler needs a layer size >= 1 for every layer (got %d)", r->fanouts[h])));
	/* record them with the other parameters */
	len = strlen(r->params_json);
	if (len > 0 && r->params_json[len - 1] == '}')
	{
		char		buf[256];
		int			o;

		o = snprintf(buf, sizeof(buf), ", \"sampler\": \"%s\", \"batch_size\": %d, \"prefetch\": %d, \"fanouts\": [",
					 r->sampler, r->batch_size, r->prefetch);
		for (int h = 0; h < r->nfanouts; h++)
			o += snprintf(buf + o, sizeof(buf) - o, "%s%d", h ? ", " : "", r->fanouts[h]);
		o += snprintf(buf + o, sizeof(buf) - o, "]");
		if (r->gpu_sampling >= 0)
			o += snprintf(buf + o, sizeof(buf) - o, ", \"gpu_sampling\": %s", r->gpu_sampling ? "true" : "false");
		if (r->cache_policy[0])
			o += snprintf(buf + o, sizeof(buf) - o, ", \"cache_policy\": \"%s\"", r->cache_policy);
		if (r->evaluation[0])
			o += snprintf(buf + o, sizeof(buf) - o, ", \"evaluation\": \"%s\"", r->evaluation);
		if (r->eval_nodes > 0)
			o += snprintf(buf + o, sizeof(buf) - o, ", \"eval_nodes\": %d", r->eval_nodes);
		else if (r->eval_nodes < 0)
			o += snprintf(buf + o, sizeof(buf) - o, ", \"eval_nodes\": \"all\"");
		if (r->eval_batch_size > 0)
			o += snprintf(buf + o, sizeof(buf) - o, ", \"eval_batch_size\": %d", r->eval_batch_size);
		if (strcmp(r->task, "link_prediction") == 0)
			o += snprintf(buf + o, sizeof(buf) - o, ", \"negatives\": %d", r->negatives > 0 ? r->negatives : 3);
		snprintf(buf + o, sizeof(buf) - o, "}");
		r->params_json[len - 1] = '\0';
		strlcat(r->params_json, buf, sizeof(r->params_json));
	}
}

static void
CheckCanLogin(void)
{
	HeapTuple	tup = SearchSysCache1(AUTHOID, ObjectIdGetDatum(GetUserId()));
	bool		can;

	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for role %u", GetUserId());
	can = ((Form_pg_authid) GETSTRUCT(tup))->rolcanlogin;
	ReleaseSysCache(tup);
	if (!can)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("role \"%s\" cannot log in, so it cannot run a training job",
						GetUserNameFromId(GetUserId(), false)),
				 errdetail("Training runs in a background worker connected as the calling role."),
				 errhint("Run gnn.train as a role with LOGIN, or ALTER ROLE %s LOGIN.",
						 quote_identifier(GetUserNameFromId(GetUserId(), false)))));
}

static int64
NextJobId(void)
{
	int64		id;
	bool		isnull;
	bool		taken;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	(void) ExtOid();
	do
	{
		/* an id no live job and no recorded job has (whatever the sequence was set to) */
		GnnCatalogExec("SELECT nextval('gnn.job_id_seq'), EXISTS (SELECT 1 FROM gnn.job_history "
					   "WHERE id = currval('gnn.job_id_seq'))", 0, NULL, NULL, NULL, 1);
		if (SPI_processed != 1)
			elog(ERROR, "could not allocate a job id");
		id = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
		taken = DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull));
		LWLockAcquire(gnn_shared->lock, LW_SHARED);
		taken |= FindJob(id) != NULL;
		LWLockRelease(gnn_shared->lock);
	} while (taken);
	GnnJobIdRaiseFloor(id);
	/* a job recorded as running that no live worker holds died with its worker */
	GnnCatalogExec("UPDATE gnn.job_history SET state = 'failed', finished = coalesce(finished, now()), "
				   "error = 'the job''s worker died or the server restarted while the job ran' "
				   "WHERE state IN ('queued', 'running') AND instance IS DISTINCT FROM $1",
				   1, (Oid[]) {INT8OID}, (Datum[]) {Int64GetDatum((int64) gnn_shared->instance)},
				   NULL, 0);
	SPI_finish();
	return id;
}

/* ------------------------------------------------------------------ starting at commit
 * A job started with wait => false starts when the calling transaction
 * commits, as NOTIFY is delivered: a transaction (or savepoint) that rolls
 * back starts nothing, and a statement that fails half-way (one gnn.train
 * per row, refused at gnn.max_jobs) leaves no job behind.  Until then the
 * job holds a slot (it counts against gnn.max_jobs) in state 'queued',
 * visible to this session only.
 */
typedef struct PendingJob
{
	int64		id;
	int			slot;
	SubTransactionId subxid;
} PendingJob;

static PendingJob pending[GNN_JOB_SLOTS];
static int	npending = 0;
static bool xact_callbacks_registered = false;

/* Register and launch slot's worker; never errors (runs after commit). Returns success. */
static bool
LaunchWorker(GnnJobSlot *slot, int64 id, BackgroundWorkerHandle **handle)
{
	BackgroundWorker w;

	memset(&w, 0, sizeof(w));
	w.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	w.bgw_start_time = BgWorkerStart_RecoveryFinished;
	w.bgw_restart_time = BGW_NEVER_RESTART;
	strlcpy(w.bgw_library_name, "gnn", BGW_MAXLEN);
	strlcpy(w.bgw_function_name, "GnnWorkerMain", BGW_MAXLEN);
	snprintf(w.bgw_name, BGW_MAXLEN, "gnn training job %lld", (long long) id);
	strlcpy(w.bgw_type, "gnn training", BGW_MAXLEN);
	w.bgw_main_arg = Int32GetDatum((int32) (slot - gnn_shared->jobs));
	w.bgw_notify_pid = handle ? MyProcPid : 0;
	return RegisterDynamicBackgroundWorker(&w, handle);
}

/* the slot of a job that could not start: failed, with the reason */
static void
FailSlot(GnnJobSlot *slot, int64 id, const char *why)
{
	LWLockAcquire(gnn_shared->lock, LW_EXCLUSIVE);
	if (slot->id == id)
	{
		slot->pending = false;
		slot->state = GNN_JOB_FAILED;
		slot->finished = GetCurrentTimestamp();
		strlcpy(slot->error, why, sizeof(slot->error));
	}
	LWLockRelease(gnn_shared->lock);
	ConditionVariableBroadcast(&gnn_shared->job_cv);
}

static void
FreePending(int i)
{
	GnnJobSlot *slot = &gnn_shared->jobs[pending[i].slot];

	LWLockAcquire(gnn_shared->lock, LW_EXCLUSIVE);
	if (slot->id == pending[i].id && slot->pending)
		memset(slot, 0, sizeof(*slot));
	LWLockRelease(gnn_shared->lock);
	pending[i] = pending[--npending];
}

static void
JobsXactCallback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_PRE_PREPARE:
			if (npending > 0)
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("cannot PREPARE a transaction that started training jobs")));
			break;
		case XACT_EVENT_COMMIT:
			for (int i = 0; i < npending; i++)
			{
				GnnJobSlot *slot = &gnn_shared->jobs[pending[i].slot];

				LWLockAcquire(gnn_shared->lock, LW_EXCLUSIVE);
				if (slot->id == pending[i].id)
					slot->pending = false;
				LWLockRelease(gnn_shared->lock);
				if (!LaunchWorker(slot, pending[i].id, NULL))
					FailSlot(slot, pending[i].id,
							 "could not start a background worker: raise max_worker_processes (each training job uses one)");
			}
			npending = 0;
			break;
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
			while (npending > 0)
				FreePending(npending - 1);
			break;
		default:
			break;
	}
}

static void
JobsSubXactCallback(SubXactEvent event, SubTransactionId mySubid, SubTransactionId parentSubid, void *arg)
{
	if (event == SUBXACT_EVENT_ABORT_SUB)
	{
		for (int i = npending - 1; i >= 0; i--)
			if (pending[i].subxid == mySubid)
				FreePending(i);
	}
	else if (event == SUBXACT_EVENT_COMMIT_SUB)
	{
		for (int i = 0; i < npending; i++)
			if (pending[i].subxid == mySubid)
				pending[i].subxid = parentSubid;
	}
}

static bool
IsPending(int64 id)
{
	for (int i = 0; i < npending; i++)
		if (pending[i].id == id)
			return true;
	return false;
}

/* Did this session start job id (its creator: this process, this session)? */
static bool
StartedHere(int64 id)
{
	GnnJobSlot *j;
	bool		mine;

	(void) ExtOid();
	LWLockAcquire(gnn_shared->lock, LW_SHARED);
	j = FindJob(id);
	mine = j && j->creator_pid == MyProcPid && j->creator_start == MyStartTimestamp;
	LWLockRelease(gnn_shared->lock);
	return mine;
}

/* ------------------------------------------------------------------ waiting */

/*
 * Progress of a job being waited for, as NOTICEs (gnn.progress): when it
 * passes each tenth of its epochs and at least every 10 seconds: epoch,
 * loss, the validation metric, time so far and an estimate of the rest.
 */
typedef struct WaitProgress
{
	int			next_tenth;		/* 1..10: the next tenth of the epochs to report */
	TimestampTz last;			/* the last report (or the wait's start) */
	int32		last_epoch;
} WaitProgress;

static void
ReportProgress(int64 id, const GnnJobSlot *j, WaitProgress *p, bool final)
{
	TimestampTz now = GetCurrentTimestamp();
	bool		tenth = false;
	double		elapsed,
				left;
	char	   *rest;
	const char *task = j->req.task;
	bool		reg = strcmp(task, "regression") == 0;
	const char *metric = reg ? "validation MAE" : strcmp(task, "link_prediction") == 0 ? "validation AUC" :
		"validation accuracy";
	float		val = reg ? -j->val_acc : j->val_acc;

	while (p->next_tenth <= 10 && j->epochs > 0 &&
		   j->epoch >= (int32) ((int64) j->epochs * p->next_tenth + 9) / 10)
	{
		tenth = true;
		p->next_tenth++;
	}
	if (!final && !tenth && !TimestampDifferenceExceeds(p->last, now, 10000))
		return;
	if (final && j->epoch == p->last_epoch)
		return;					/* said already */
	p->last = now;
	p->last_epoch = j->epoch;
	elapsed = j->started ? (double) (now - j->started) / 1e6 : 0;
	if (j->epoch <= 0 || j->state == GNN_JOB_STARTING)
	{
		ereport(NOTICE,
				(errmsg("training job %lld: starting (%.1f s)", (long long) id, elapsed)));
		return;
	}
	left = j->epochs > j->epoch ? elapsed / j->epoch * (j->epochs - j->epoch) : 0;
	rest = final || j->epoch >= j->epochs ? pstrdup("done") : psprintf("about %.1f s left", left);
	if (isfinite(val))
		ereport(NOTICE,
				(errmsg("training job %lld: epoch %d of %d, loss %.4f, %s %.4f, %.1f s, %s",
						(long long) id, j->epoch, j->epochs, j->loss, metric, val, elapsed, rest)));
	else
		ereport(NOTICE,
				(errmsg("training job %lld: epoch %d of %d, loss %.4f, %.1f s, %s",
						(long long) id, j->epoch, j->epochs, j->loss, elapsed, rest)));
	pfree(rest);
}

/*
 * Wait until job id leaves the running states (or timeout_ms passes; < 0:
 * forever); with progress, report it as it goes (ReportProgress).  own: the
 * wait => true of the gnn.train that started the job, which says its last
 * line even when the job is over at the first look.
 */
static GnnJobState
WaitForJob(int64 id, long timeout_ms, bool cancel_on_interrupt, bool progress, bool own)
{
	TimestampTz start = GetCurrentTimestamp();
	GnnJobState st = GNN_JOB_FREE;
	WaitProgress wp = {1, start, -1};
	bool		first = true;

	(void) ExtOid();
	if (!exit_callback_registered)
	{
		before_shmem_exit(CancelWaitedJobAtExit, (Datum) 0);
		exit_callback_registered = true;
	}
	if (cancel_on_interrupt)
		waiting_for_job = id;
	PG_TRY();
	{
		for (;;)
		{
			GnnJobSlot *j;

			GnnJobSlot	snap;

			LWLockAcquire(gnn_shared->lock, LW_SHARED);
			j = FindJob(id);
			st = j ? j->state : GNN_JOB_FREE;
			if (j && progress)
				snap = *j;
			LWLockRelease(gnn_shared->lock);
			/*
			 * a job over before the wait began was reported by whoever
			 * waited for it (or needs no report); the wait of the
			 * gnn.train that started it is that one, even where the job
			 * ended while it waited for the worker to choose its device
			 */
			if (j && progress && st != GNN_JOB_FREE && !(first && JobFinal(st) && !own))
				ReportProgress(id, &snap, &wp, JobFinal(st) && st == GNN_JOB_SUCCEEDED);
			first = false;
			if (st == GNN_JOB_FREE || JobFinal(st))
				break;
			if (timeout_ms >= 0 &&
				TimestampDifferenceExceeds(start, GetCurrentTimestamp(), (int) Min(timeout_ms, INT_MAX)))
				break;
			/*
			 * woken when a job ends (job_cv), else after 10 ms (progress;
			 * a job ended by a crash): a job's report used to wait up to a
			 * whole poll here
			 */
			(void) ConditionVariableTimedSleep(&gnn_shared->job_cv, 10, PG_WAIT_EXTENSION);
			CHECK_FOR_INTERRUPTS();
		}
		ConditionVariableCancelSleep();
	}
	PG_CATCH();
	{
		ConditionVariableCancelSleep();
		/* cancelling the waiting statement cancels the job */
		if (cancel_on_interrupt)
			RequestCancel(id);
		waiting_for_job = 0;
		PG_RE_THROW();
	}
	PG_END_TRY();
	waiting_for_job = 0;
	return st;
}

/* The job's row of gnn.jobs, as a datum of the view's row type; raises the job's error. */
static Datum
JobRow(int64 id, bool raise_error, FunctionCallInfo fcinfo)
{
	Datum		result;
	bool		isnull;
	char	   *state;
	char	   *error;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (SPI_execute_with_args("SELECT j, j.state, j.error FROM gnn.jobs j WHERE j.id = $1", 1,
							  (Oid[]) {INT8OID}, (Datum[]) {Int64GetDatum(id)}, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read job %lld", (long long) id);
	if (SPI_processed == 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("job %lld does not exist", (long long) id),
				 errhint("gnn.jobs lists the jobs you own.")));
	state = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2);
	error = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 3);
	if (raise_error && state && strcmp(state, "failed") == 0)
		ereport(ERROR,
				(errcode(ERRCODE_EXTERNAL_ROUTINE_EXCEPTION),
				 errmsg("training job %lld failed: %s", (long long) id, error ? error : "unknown error")));
	if (raise_error && state && strcmp(state, "cancelled") == 0)
		ereport(ERROR,
				(errcode(ERRCODE_QUERY_CANCELED),
				 errmsg("training job %lld was cancelled", (long long) id)));
	result = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	result = SPI_datumTransfer(result, false, -1);	/* out of SPI memory */
	SPI_finish();
	return result;
}

/*
 * What the job will find in its graph, checked now so that gnn.train fails
 * (or warns) instead of the job: the graph exists, node classification has
 * labelled training nodes, what a missing split means, and subgraph
 * options that the graph cannot satisfy.
 */
static void
CheckGraph(GnnTrainRequest *r)
{
	GnnGraphRef ref;
	int64		labelled[4] = {0, 0, 0, 0};
	const gnn_graph *g;

	GnnGraphAcquireView(r->graph, &ref);	/* counts, labels and split only */
	g = &ref.g;
	PG_TRY();
	{
		if ((r->temporal == 1 || r->has_as_of) && r->nfanouts > 0 && !g->time)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("graph \"%s\" has no times: time-aware sampling needs them", r->graph),
					 errhint("Load a schema graph with options.time naming a time column per table, or drop options temporal and seed_time.")));
		if (strcmp(r->model, "node2vec") == 0 && g->num_edges == 0)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("graph \"%s\" has no edges: node2vec learns from walks along them", r->graph),
					 errhint("Load the graph with its edge table.")));
		if (g->feat_kind == GNN_FEAT_NONE && strcmp(r->model, "node2vec") != 0)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("graph \"%s\" has no node features to train on", r->graph),
					 errhint("Reload it with features => (columns of the node table, or '*'), or train model => 'node2vec', which needs none.")));
		if (r->num_parts > 0 && r->num_parts > g->num_nodes)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("option \"num_parts\" is %d, but graph \"%s\" has only %lld nodes",
							r->num_parts, r->graph, (long long) g->num_nodes),
					 errhint("Use at most one part per node.")));
		if (strcmp(r->task, "regression") == 0 && !g->targets)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("graph \"%s\" has no numeric targets: regression needs them", r->graph),
					 errhint("Load a schema graph with label => a float or numeric column of the target table.")));
		if (strcmp(r->task, "node_classification") == 0 && !g->labels && g->targets)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("graph \"%s\" has numeric targets, not classes", r->graph),
					 errhint("Train with task => 'regression'.")));
		if (r->edge_type[0] && gnn_graph_edge_type_by_name(g, r->edge_type) < 0)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_OBJECT),
					 errmsg("graph \"%s\" has no edge type \"%s\"", r->graph, r->edge_type),
					 errdetail("Its edge types are: %s.", GnnTypeNames(g, true))));
		if ((strcmp(r->model, "rgcn") == 0 || strcmp(r->model, "hetero_sage") == 0) &&
			strcmp(r->sampler, "cluster") == 0)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("model \"%s\" trains full-batch or on neighbour-sampled minibatches", r->model),
					 errhint("Drop the sampler option, or give fanouts.")));
		if (strcmp(r->task, "node_classification") == 0)
		{
			if (!g->labels || g->num_classes < 1)
				ereport(ERROR,
						(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
						 errmsg("graph \"%s\" has no labels: node classification needs them", r->graph),
						 errhint("Reload it with label => (and split =>), or learn without labels: model => 'node2vec' "
								 "(walks; no features needed), or task => 'link_prediction' (a GNN over the features).")));
			/*
			 * Whether each split has a labelled node: the scan stops once
			 * train, validation and test all have one (within the first
			 * few nodes, usually), instead of reading every node's label
			 * and split in this session on every gnn.train (9 ms a million
			 * nodes on the 2-core VM, most of it first touches).  Where it
			 * runs to the end, the counts are whole for the error's detail.
			 */
			for (int64 v = 0; v < g->num_nodes; v++)
			{
				if (g->labels[v] >= 0)
					labelled[g->split ? g->split[v] : GNN_SPLIT_NONE]++;
				if ((v & 1023) == 1023 && labelled[GNN_SPLIT_TRAIN] > 0 && labelled[GNN_SPLIT_VAL] > 0 &&
					labelled[GNN_SPLIT_TEST] > 0)
					break;
			}
			if (labelled[GNN_SPLIT_TRAIN] == 0)
				ereport(ERROR,
						(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
						 errmsg("graph \"%s\" has no labelled training nodes", r->graph),
						 errdetail("%lld nodes have split train, %lld nodes have a label; training needs nodes with both.",
								   (long long) g->n_train,
								   (long long) (labelled[0] + labelled[1] + labelled[2] + labelled[3])),
						 errhint("Reload it with split => naming a column that is 'train' for labelled nodes.")));
			if (labelled[GNN_SPLIT_VAL] == 0)
				ereport(NOTICE,
						(errmsg("graph \"%s\" has no labelled validation nodes: val_acc will be NULL, "
								"the last epoch's weights are kept and training does not stop early", r->graph)));
			if (labelled[GNN_SPLIT_TEST] == 0)
				ereport(NOTICE,
						(errmsg("graph \"%s\" has no labelled test nodes: test_acc will be NULL", r->graph)));
		}
		GnnCheckJobMemory(r, g);
	}
	PG_FINALLY();
	{
		GnnGraphRelease(&ref);
	}
	PG_END_TRY();
}

/* Whether a graph came from gnn.load_schema_graph (several types, or its encoded columns). */
static bool
GraphIsTyped(const char *name)
{
	GnnGraphRef ref;
	bool		typed;

	if (!GnnGraphExists(name))
		return false;			/* CheckGraph reports it */
	GnnGraphAcquireView(name, &ref);
	typed = ref.g.num_node_types > 1 || ref.g.num_edge_types > 1 ||
		(ref.g.meta && ref.g.meta_bytes > 17 && strncmp(ref.g.meta, "{\"kind\":\"schema\"", 17) == 0);
	GnnGraphRelease(&ref);
	return typed;
}

/* ------------------------------------------------------------------ gnn.train */

static char *
ArgText(FunctionCallInfo fcinfo, int i, const char *dflt)
{
	return PG_ARGISNULL(i) ? (char *) dflt : text_to_cstring(PG_GETARG_TEXT_PP(i));
}

/*
 * node2vec: embeddings from random walks, without labels or features.  Its
 * task is 'embedding' (the default node_classification reads as that); the
 * embedding width is hidden or options.dim (128 unless given), and epochs
 * and lr default to the core's (5, 0.025).  Its options apply to it alone.
 */
static void
Node2vecRequest(FunctionCallInfo fcinfo, GnnTrainRequest *r)
{
	gnn_node2vec_config nc;

	gnn_node2vec_config_default(&nc);
	if (strcmp(r->model, "node2vec") != 0)
	{
		/* negatives also sets link prediction's negatives per positive */
		const char *which = r->walks_per_node ? "walks_per_node" : r->window ? "window" :
			r->negatives && strcmp(r->task, "link_prediction") != 0 ? "negatives" :
			r->p > 0 ? "p" : r->q > 0 ? "q" : r->dim_set ? "dim" : NULL;

		if (which)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("option \"%s\" applies to model => 'node2vec', not to %s", which, r->model),
					 errhint("Drop the option, or train model => 'node2vec'.")));
		if (strcmp(r->task, "embedding") == 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("task \"embedding\" is node2vec's: %s trains node_classification, regression or link_prediction",
							r->model),
					 errhint("Train model => 'node2vec' for embeddings without labels or features, or %s with task => 'link_prediction'.",
							 r->model)));
		return;
	}
	if (strcmp(r->task, "node_classification") != 0 && strcmp(r->task, "embedding") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("model node2vec learns embeddings without labels: task \"%s\" does not apply", r->task),
				 errhint("Leave task out: gnn.similar, gnn.embedding and gnn.embed read node2vec's embeddings as they are.")));
	strlcpy(r->task, "embedding", sizeof(r->task));
	if (r->nfanouts > 0 || r->sampler[0] || r->dist_npeers > 0)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("model node2vec trains on random walks over the whole graph on one server"),
				 errhint("Drop fanouts, sampler and peers.")));
	if (PG_ARGISNULL(4) && !r->dim_set)
		r->hidden = nc.dim;		/* options.dim, else node2vec's own default */
	CheckRange("dim", r->hidden, 1, 4096);
	if (PG_ARGISNULL(6))
		r->epochs = nc.epochs;
	if (PG_ARGISNULL(7))
		r->lr = nc.lr;
	r->layers = 1;
	r->dropout = 0;
	r->weight_decay = 0;
	if (r->walk_length == 0)
		r->walk_length = nc.walk_length;
	if (r->walks_per_node == 0)
		r->walks_per_node = nc.walks_per_node;
	if (r->window == 0)
		r->window = Min(nc.window, r->walk_length + 1);
	if (r->negatives == 0)
		r->negatives = nc.negatives;
	if (!(r->p > 0))
		r->p = nc.p;
	if (!(r->q > 0))
		r->q = nc.q;
	if (r->window > r->walk_length + 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("window is %d, longer than a walk of walk_length %d (%d nodes)", r->window, r->walk_length,
						r->walk_length + 1),
				 errhint("A window is a node and the nodes after it on the walk: at most walk_length + 1.")));
	if (strcmp(r->device, "cuda") == 0)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("model node2vec trains on the CPU"),
				 errhint("Use device => 'auto' or 'cpu'.")));
}

/*
 * The request gnn.train's arguments describe, checked and with every
 * default filled in (gnn._estimate takes the same arguments, so an
 * estimate is of exactly the job gnn.train would start).
 */
void
GnnTrainRequestFromArgs(FunctionCallInfo fcinfo, GnnTrainRequest *r)
{
	memset(r, 0, sizeof(*r));
	if (PG_ARGISNULL(0))
		ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("graph must not be NULL")));
	SetText(r->graph, sizeof(r->graph), ArgText(fcinfo, 0, NULL), "graph name", NULL);
	SetText(r->model, sizeof(r->model), ArgText(fcinfo, 1, "graphsage"), "model", model_names);
	SetText(r->task, sizeof(r->task), ArgText(fcinfo, 2, "node_classification"), "task", task_names);
	if (PG_ARGISNULL(3))
		snprintf(r->model_name, sizeof(r->model_name), "%s_%s", r->graph, r->model);
	else
		SetText(r->model_name, sizeof(r->model_name), ArgText(fcinfo, 3, NULL), "model name", NULL);
	if (r->model_name[0] == '\0')
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("model name must not be empty")));
	r->hidden = PG_ARGISNULL(4) ? 64 : PG_GETARG_INT32(4);
	r->layers = PG_ARGISNULL(5) ? 2 : PG_GETARG_INT32(5);
	r->epochs = PG_ARGISNULL(6) ? 100 : PG_GETARG_INT32(6);
	r->lr = PG_ARGISNULL(7) ? 0.01 : PG_GETARG_FLOAT8(7);
	r->weight_decay = PG_ARGISNULL(8) ? 5e-4 : PG_GETARG_FLOAT8(8);
	r->dropout = PG_ARGISNULL(9) ? 0.5 : PG_GETARG_FLOAT8(9);
	SetText(r->device, sizeof(r->device), ArgText(fcinfo, 10, "auto"), "device", device_names);
	if (PG_ARGISNULL(11))
	{
		uint32		s;

		if (!pg_strong_random(&s, sizeof(s)))
			s = (uint32) random();
		r->seed = s & 0x7fffffff;
	}
	else
		r->seed = PG_GETARG_INT32(11);
	CheckRange("hidden", r->hidden, 1, 65536);
	CheckRange("layers", r->layers, 1, 8);
	CheckRange("epochs", r->epochs, 1, 1000000);
	CheckRange("lr", r->lr, 1e-9, 10);
	CheckRange("weight_decay", r->weight_decay, 0, 1);
	CheckRange("dropout", r->dropout, 0, 0.99);
	/* per-model defaults, then options */
	strlcpy(r->aggregator, "mean", sizeof(r->aggregator));
	strlcpy(r->optimizer, "adam", sizeof(r->optimizer));
	/* empty / -1: the model's published default (the core knows it) */
	r->select[0] = '\0';
	r->heads = strcmp(r->model, "gat") == 0 ? 8 : 1;
	r->out_heads = 1;
	r->attn_dropout = r->dropout;
	r->patience = -1;
	r->row_normalise = true;
	r->temporal = -1;
	r->prefetch = -1;
	r->gpu_sampling = -1;
	strlcpy(r->temporal_strategy, "uniform", sizeof(r->temporal_strategy));
	strlcpy(r->streams, "batch", sizeof(r->streams));
	r->fault_after = gnn_fault_backend_calls;
	r->threads = gnn_threads;
	r->feature_cache_kb = gnn_feature_cache_kb;
	r->max_job_memory_kb = gnn_max_job_memory_kb;
	if (!PG_ARGISNULL(13))
	{
		Jsonb	   *opts = PG_GETARG_JSONB_P(13);

		if (JB_ROOT_IS_OBJECT(opts))
			opts = GnnTakeDistOptions(opts, r);
		ParseOptions(opts, r);
	}
	Node2vecRequest(fcinfo, r);

	/*
	 * Link prediction has its own defaults (gnn_linkpred_train_defaults:
	 * GAE-like, no dropout or weight decay, longer with patience), taken
	 * where the caller gave no value.
	 */
	if (strcmp(r->task, "link_prediction") == 0)
	{
		gnn_train_config lp;
		gnn_model_kind k;

		if (!gnn_parse_model_kind(strcmp(r->model, "mlp") == 0 ? "graphsage" : r->model, &k))
			k = GNN_MODEL_SAGE;
		gnn_train_config_default(k, &lp);
		gnn_linkpred_train_defaults(&lp);
		if (PG_ARGISNULL(4))
			r->hidden = lp.hidden;
		if (PG_ARGISNULL(6))
			r->epochs = lp.epochs;
		if (PG_ARGISNULL(7))
			r->lr = lp.lr;
		if (PG_ARGISNULL(8))
			r->weight_decay = lp.weight_decay;
		if (PG_ARGISNULL(9))
			r->dropout = lp.dropout;
		if (!r->attn_dropout_set)
			r->attn_dropout = lp.attn_dropout;
		if (r->patience < 0)
			r->patience = lp.patience;
	}
	/* schema graphs' features are standardised (negative values): row sums mean nothing there */
	if (!r->row_normalise_set && GraphIsTyped(r->graph))
		r->row_normalise = false;
	snprintf(r->params_json, sizeof(r->params_json),
			 "{\"model\": \"%s\", \"task\": \"%s\", \"hidden\": %d, \"layers\": %d, \"epochs\": %d, "
			 "\"lr\": %g, \"weight_decay\": %g, \"dropout\": %g, \"device\": \"%s\", \"seed\": %lld, "
			 "\"heads\": %d, \"out_heads\": %d, \"patience\": %d, \"aggregator\": \"%s\", "
			 "\"optimizer\": \"%s\", \"attn_dropout\": %g, \"select\": \"%s\", \"row_normalise\": %s}",
			 r->model, r->task, r->hidden, r->layers, r->epochs, r->lr, r->weight_decay, r->dropout, r->device,
			 (long long) r->seed, r->heads, r->out_heads, r->patience, r->aggregator, r->optimizer,
			 r->attn_dropout, r->select[0] ? r->select : "default", r->row_normalise ? "true" : "false");
	CheckSampling(r);
	if (r->has_as_of && r->nfanouts == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("option \"seed_time\" bounds sampled neighbourhoods, and this job samples none"),
				 errhint("Give fan-outs, e.g. options => '{\"fanouts\": [10, 10], \"seed_time\": \"2024-06-01\"}'.")));
	if (r->num_bases > 0 || r->edge_type[0] || r->temporal >= 0 || r->ntype_fanouts > 0 || r->has_as_of ||
		strcmp(r->streams, "node") == 0 || r->feature_slices)
	{
		size_t		len = strlen(r->params_json);
		StringInfoData b;

		initStringInfo(&b);
		appendStringInfo(&b, ", \"num_bases\": %d, \"temporal\": %s, \"temporal_strategy\": \"%s\"",
						 r->num_bases, r->temporal < 0 ? "null" : r->temporal ? "true" : "false",
						 r->temporal_strategy);
		if (r->has_as_of)
		{
			appendStringInfoString(&b, ", \"seed_time\": ");
			escape_json(&b, timestamptz_to_str(r->as_of));
		}
		if (strcmp(r->streams, "node") == 0)
			appendStringInfoString(&b, ", \"streams\": \"node\"");
		if (r->feature_slices)
			appendStringInfoString(&b, ", \"feature_slices\": true");
		if (r->edge_type[0])
		{
			appendStringInfoString(&b, ", \"edge_type\": ");
			escape_json(&b, r->edge_type);
		}
		for (int i = 0; i < r->ntype_fanouts; i++)
		{
			appendStringInfoString(&b, i == 0 ? ", \"type_fanouts\": {" : ", ");
			escape_json(&b, r->type_fanout_names[i]);
			appendStringInfoString(&b, ": [");
			for (int h = 0; h < r->nfanouts; h++)
				appendStringInfo(&b, "%s%d", h ? ", " : "", r->type_fanouts[i][h]);
			appendStringInfoString(&b, i == r->ntype_fanouts - 1 ? "]}" : "]");
		}
		appendStringInfoChar(&b, '}');
		if (len > 0 && r->params_json[len - 1] == '}' && len - 1 + b.len < sizeof(r->params_json))
		{
			r->params_json[len - 1] = '\0';
			strlcat(r->params_json, b.data, sizeof(r->params_json));
		}
	}
	if (strcmp(r->model, "node2vec") == 0)
		snprintf(r->params_json + strlen(r->params_json) - 1, sizeof(r->params_json) - strlen(r->params_json) + 1,
				 ", \"walk_length\": %d, \"walks_per_node\": %d, \"window\": %d, \"p\": %g, \"q\": %g, "
				 "\"negatives\": %d}", r->walk_length, r->walks_per_node, r->window, r->p, r->q, r->negatives);
	if (strcmp(r->sampler, "cluster") == 0 || strcmp(r->sampler, "saint_rw") == 0)
		snprintf(r->params_json + strlen(r->params_json) - 1, sizeof(r->params_json) - strlen(r->params_json) + 1,
				 ", \"sampler\": \"%s\", \"num_parts\": %d, \"clusters_per_batch\": %d, \"walk_length\": %d, "
				 "\"roots\": %d, \"presample\": %d, \"batches\": %d}",
				 r->sampler, r->num_parts, r->clusters_per_batch, r->walk_length, r->roots, r->presample,
				 r->saint_batches);
	/* (a peer's request has no peers: only the model and the task are checked there) */
	if (r->feature_slices && (r->nfanouts == 0 || strcmp(r->task, "link_prediction") == 0 ||
							  !(strcmp(r->model, "gcn") == 0 ||
								(strcmp(r->model, "graphsage") == 0 && strcmp(r->aggregator, "mean") == 0))))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("feature_slices splits the first layer of a minibatch job over several servers"),
				 errdetail("It needs peers, fanouts, node classification or regression, and gcn or graphsage with the mean aggregator: a linear first layer."),
				 errhint("Give every server the whole graph and options.peers, or drop feature_slices.")));
	if (r->dist_npeers > 0)
	{
		const char *why = r->sampler[0] && strcmp(r->sampler, "neighbor") != 0 ?
			"trains full batch or on neighbour-sampled minibatches (fan-outs, sampler neighbor)" :
			strcmp(r->task, "link_prediction") == 0 && r->nfanouts == 0 ?
			"trains link prediction on minibatches (give fanouts)" :
			!(strcmp(r->model, "gcn") == 0 || strcmp(r->model, "graphsage") == 0 || strcmp(r->model, "gat") == 0 ||
			  strcmp(r->model, "rgcn") == 0 || strcmp(r->model, "hetero_sage") == 0) ?
			"trains gcn, graphsage, gat, rgcn or hetero_sage" :
			r->feature_slices && strcmp(r->device, "cuda") == 0 ? "splits feature slices on the CPU (device => 'cuda')" :
			NULL;

		if (why)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("a job over several servers (options.peers) %s", why),
					 errhint("Drop the option that asks for it, or train on one server.")));
		/* each rank on its own server's GPU (device auto or cuda), feature slices on the CPU */
		if (r->feature_slices)
			strlcpy(r->device, "cpu", sizeof(r->device));
		/* how many, never where: conninfos may hold passwords */
		snprintf(r->params_json + strlen(r->params_json) - 1, sizeof(r->params_json) - strlen(r->params_json) + 1,
				 ", \"ranks\": %d, \"dist_timeout_ms\": %d}", r->dist_npeers + 1, r->dist_timeout_ms);
	}
}

Datum
gnn_train(PG_FUNCTION_ARGS)
{
	GnnTrainRequest r;
	int64		id;
	GnnJobSlot *slot = NULL;
	int			running = 0;
	BackgroundWorkerHandle *handle;
	pid_t		pid;
	bool		wait;
	char		device[16];
	char		note[256];
	bool		quiet = false;
	GnnJobState st;

	GnnRequirePreload();
	GnnTrainRequestFromArgs(fcinfo, &r);
	if (r.feature_slices && r.dist_npeers == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("feature_slices splits the first layer of a job over several servers: it needs peers"),
				 errhint("Load the whole graph on every server and give options.peers, or drop feature_slices.")));
	/*
	 * gnn.train's own argument after the shared ones (gnn._estimate has none;
	 * a peer rank's function has its job's arguments there)
	 */
	if (PG_NARGS() > 14 && !PG_ARGISNULL(14))
	{
		SetText(r.deploy, sizeof(r.deploy), ArgText(fcinfo, 14, NULL), "deploy", deploy_names);
		if (strcmp(r.deploy, "never") == 0)
			r.deploy[0] = '\0';
	}
	wait = PG_ARGISNULL(12) ? false : PG_GETARG_BOOL(12);

	/* the graph must exist (the caller's: names are per role); the role must be able to log in */
	CheckCanLogin();
	CheckGraph(&r);
	/* a job started now runs in its own transaction, which cannot see this one's graph changes */
	if (wait && GnnPendingLookup(r.graph, GetUserId(), NULL, NULL, NULL) != GNN_PENDING_NONE)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("graph \"%s\" was loaded or replaced by this transaction, which has not committed", r.graph),
				 errdetail("A job with wait => true starts at once, in a worker that sees only committed graphs."),
				 errhint("Commit the load first, or start the job with wait => false: it then starts when this transaction commits.")));

	id = NextJobId();

	/* take a slot */
	LWLockAcquire(gnn_shared->lock, LW_EXCLUSIVE);
	for (int i = 0; i < GNN_JOB_SLOTS; i++)
	{
		GnnJobSlot *j = &gnn_shared->jobs[i];

		if (j->state == GNN_JOB_STARTING || j->state == GNN_JOB_RUNNING)
			running++;
	}
	if (running >= gnn_max_jobs)
	{
		LWLockRelease(gnn_shared->lock);
		ereport(ERROR,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("%d training jobs are running or queued, the most gnn.max_jobs allows", running),
				 errdetail("Jobs started in this transaction and not yet committed count too; this transaction starts none of them now."),
				 errhint("Wait for a job to finish (gnn.jobs shows them), cancel one with gnn.cancel(), or raise gnn.max_jobs.")));
	}
	/*
	 * a free slot, else the longest-finished one whose worker is gone (ids
	 * of live slots are never reused: see NextJobId)
	 */
	for (int i = 0; i < GNN_JOB_SLOTS; i++)
	{
		GnnJobSlot *j = &gnn_shared->jobs[i];

		if (j->state == GNN_JOB_FREE)
		{
			slot = j;
			break;
		}
		if (JobFinal(j->state) && j->pid == 0 && (slot == NULL || j->finished < slot->finished))
			slot = j;
	}
	if (slot == NULL)
	{
		LWLockRelease(gnn_shared->lock);
		ereport(ERROR,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("no free job slot"),
				 errhint("Wait for running jobs to finish.")));
	}
	memset(slot, 0, sizeof(*slot));
	slot->state = GNN_JOB_STARTING;
	slot->id = id;
	slot->dbid = MyDatabaseId;
	slot->extoid = cached_extoid;
	slot->owner = GetUserId();
	slot->creator_pid = MyProcPid;
	slot->creator_start = MyStartTimestamp;
	slot->pending = !wait;
	slot->epochs = r.epochs;
	slot->req = r;
	LWLockRelease(gnn_shared->lock);

	if (!wait)
	{
		/* started by the commit of this transaction (JobsXactCallback) */
		if (!xact_callbacks_registered)
		{
			RegisterXactCallback(JobsXactCallback, NULL);
			RegisterSubXactCallback(JobsSubXactCallback, NULL);
			xact_callbacks_registered = true;
		}
		pending[npending].id = id;
		pending[npending].slot = (int) (slot - gnn_shared->jobs);
		pending[npending].subxid = GetCurrentSubTransactionId();
		npending++;
		PG_RETURN_INT64(id);
	}

	/* wait => true: the job starts now and is waited for; its outcome stays whatever this transaction does */
	if (!LaunchWorker(slot, id, &handle))
	{
		LWLockAcquire(gnn_shared->lock, LW_EXCLUSIVE);
		memset(slot, 0, sizeof(*slot));
		LWLockRelease(gnn_shared->lock);
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_RESOURCES),
				 errmsg("could not start a background worker for training job %lld", (long long) id),
				 errhint("Raise max_worker_processes (each training job uses one worker).")));
	}
	/*
	 * Interrupted before the wait below (statement_timeout, a cancel: the
	 * worker's start and device choice take seconds on a loaded machine),
	 * the job is cancelled as it is from the wait: it would otherwise run
	 * on for nobody (017_promises' statement_timeout check).
	 */
	PG_TRY();
	{
		if (WaitForBackgroundWorkerStartup(handle, &pid) != BGWH_STARTED)
		{
			LWLockAcquire(gnn_shared->lock, LW_EXCLUSIVE);
			memset(slot, 0, sizeof(*slot));
			LWLockRelease(gnn_shared->lock);
			ereport(ERROR,
					(errcode(ERRCODE_INSUFFICIENT_RESOURCES),
					 errmsg("the background worker for training job %lld did not start", (long long) id),
					 errhint("Check the server log.")));
		}

		/* wait until the worker has chosen its device (or failed) */
		for (;;)
		{
			LWLockAcquire(gnn_shared->lock, LW_SHARED);
			st = slot->id == id ? slot->state : GNN_JOB_FAILED;
			strlcpy(device, slot->device, sizeof(device));
			strlcpy(note, slot->device_note, sizeof(note));
			quiet = slot->device_note_expected && !GnnProgressOn();
			LWLockRelease(gnn_shared->lock);
			if (st != GNN_JOB_STARTING)
				break;
			if (GetBackgroundWorkerPid(handle, &pid) == BGWH_STOPPED)
				break;
			(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, 10, PG_WAIT_EXTENSION);
			ResetLatch(MyLatch);
			CHECK_FOR_INTERRUPTS();
		}
	}
	PG_CATCH();
	{
		RequestCancel(id);
		PG_RE_THROW();
	}
	PG_END_TRY();
	if (note[0] != '\0' && !quiet)
		ereport(NOTICE,
				(errmsg("training job %lld runs on the CPU: %s", (long long) id, note)));

	WaitForJob(id, -1, true, GnnProgressOn(), true);
	{
		/*
		 * A job that succeeded has no error to raise: its slot says so.
		 * Otherwise gnn.jobs' row raises it (JobRow, whose query of the
		 * view took 5-8 ms in a new session).
		 */
		GnnJobSlot *j;
		bool		ok;

		LWLockAcquire(gnn_shared->lock, LW_SHARED);
		j = FindJob(id);
		ok = j && j->state == GNN_JOB_SUCCEEDED;
		LWLockRelease(gnn_shared->lock);
		if (!ok)
			(void) JobRow(id, true, fcinfo);
	}
	PG_RETURN_INT64(id);
}

static int64
JobArg(FunctionCallInfo fcinfo)
{
	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("job must not be NULL"),
				 errhint("Pass the id gnn.train() returned; gnn.jobs lists them.")));
	return PG_GETARG_INT64(0);
}

/*
 * gnn.wait(job, timeout, cancel_on_interrupt): wait for a job to end.  When
 * the wait is interrupted (statement_timeout, pg_cancel_backend, the session
 * terminated), the job is cancelled if cancel_on_interrupt says so; by
 * default (NULL) when this session started the job, and not for a job
 * started elsewhere (a scheduled job watched from another session).  The
 * timeout argument ending the wait never cancels anything.
 */
Datum
gnn_wait(PG_FUNCTION_ARGS)
{
	int64		id = JobArg(fcinfo);
	long		timeout_ms = -1;
	bool		cancel;

	GnnRequirePreload();
	if (!PG_ARGISNULL(1))
	{
		Interval   *iv = PG_GETARG_INTERVAL_P(1);
		double		secs = iv->time / 1e6 + iv->day * 86400.0 + iv->month * 30.0 * 86400.0;

		timeout_ms = secs <= 0 ? 0 : (long) Min(secs * 1000.0, (double) LONG_MAX);
	}
	/* the job must be visible to the caller before we wait for it */
	(void) JobRow(id, false, fcinfo);
	if (IsPending(id))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("training job %lld starts when this transaction commits", (long long) id),
				 errhint("COMMIT first, then wait for it; or start it with wait => true.")));
	cancel = PG_NARGS() > 2 && !PG_ARGISNULL(2) ? PG_GETARG_BOOL(2) : StartedHere(id);
	WaitForJob(id, timeout_ms, cancel, GnnProgressOn(), false);
	PG_RETURN_DATUM(JobRow(id, true, fcinfo));
}

Datum
gnn_cancel(PG_FUNCTION_ARGS)
{
	int64		id = JobArg(fcinfo);
	GnnJobSlot *j;
	bool		found = false,
				allowed = false,
				running = false,
				queued = false;

	GnnRequirePreload();
	(void) ExtOid();
	LWLockAcquire(gnn_shared->lock, LW_EXCLUSIVE);
	j = FindJob(id);
	if (j)
	{
		found = true;
		allowed = GnnIsOwnerOrSuper(j->owner) && (!j->pending || j->creator_pid == MyProcPid);
		running = !JobFinal(j->state);
		queued = j->pending;
		if (allowed && running)
			j->cancel_requested = true;
	}
	LWLockRelease(gnn_shared->lock);
	if (!found || !allowed)
	{
		/* finished jobs of earlier server lifetimes are in the table */
		(void) JobRow(id, false, fcinfo);
		ereport(NOTICE, (errmsg("training job %lld is not running", (long long) id)));
		PG_RETURN_BOOL(false);
	}
	if (!running)
	{
		ereport(NOTICE, (errmsg("training job %lld is not running", (long long) id)));
		PG_RETURN_BOOL(false);
	}
	/* a job waiting for this transaction's commit stops as soon as it starts */
	if (queued)
		PG_RETURN_BOOL(true);
	/* the worker stops between epochs: wait for it, up to a few seconds */
	WaitForJob(id, 5000, false, false, false);
	PG_RETURN_BOOL(true);
}

/* ------------------------------------------------------------------ gnn._live_jobs */

Datum
gnn_live_jobs(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	GnnJobSlot *copy = palloc(sizeof(GnnJobSlot) * GNN_JOB_SLOTS);
	int			n = 0;

	GnnRequirePreload();
	InitMaterializedSRF(fcinfo, 0);
	(void) ExtOid();
	LWLockAcquire(gnn_shared->lock, LW_SHARED);
	for (int i = 0; i < GNN_JOB_SLOTS; i++)
	{
		GnnJobSlot *j = &gnn_shared->jobs[i];

		if (j->state != GNN_JOB_FREE && j->dbid == MyDatabaseId && j->extoid == cached_extoid &&
			(!j->pending || j->creator_pid == MyProcPid))
			copy[n++] = *j;
	}
	LWLockRelease(gnn_shared->lock);
	for (int i = 0; i < n; i++)
	{
		GnnJobSlot *j = &copy[i];
		Datum		v[16];
		bool		nl[16];

		if (!GnnIsOwnerOrSuper(j->owner))
			continue;
		memset(nl, 0, sizeof(nl));
		v[0] = Int64GetDatum(j->id);
		v[1] = CStringGetTextDatum(j->req.graph);
		v[2] = CStringGetTextDatum(j->req.model_name);
		v[3] = CStringGetTextDatum(j->req.model);
		v[4] = ObjectIdGetDatum(j->owner);
		v[5] = CStringGetTextDatum(GnnJobStateName(j->state));
		v[6] = Int32GetDatum(j->epoch);
		v[7] = Int32GetDatum(j->epochs);
		/* NaN: not measured (no labelled nodes in that split), shown as NULL as in the tables */
		v[8] = Float4GetDatum(j->loss);
		nl[8] = j->epoch == 0 || isnan(j->loss);
		v[9] = Float4GetDatum(j->train_acc);
		nl[9] = j->epoch == 0 || isnan(j->train_acc);
		v[10] = Float4GetDatum(j->val_acc);
		nl[10] = j->epoch == 0 || isnan(j->val_acc);
		v[11] = CStringGetTextDatum(j->device);
		nl[11] = j->device[0] == '\0';
		v[12] = TimestampTzGetDatum(j->started);
		nl[12] = j->started == 0;
		v[13] = TimestampTzGetDatum(j->finished);
		nl[13] = j->finished == 0;
		v[14] = CStringGetTextDatum(j->error);
		nl[14] = j->error[0] == '\0';
		v[15] = Int32GetDatum(j->pid);
		nl[15] = j->pid == 0;
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, v, nl);
	}
	return (Datum) 0;
}

Datum
gnn_instance(PG_FUNCTION_ARGS)
{
	GnnRequirePreload();
	PG_RETURN_INT64((int64) gnn_shared->instance);
}

/* ------------------------------------------------------------------ the extension's lifetime
 * Job ids never repeat in a database, also across DROP EXTENSION and
 * CREATE EXTENSION: the highest id given out is kept in the data directory
 * ($PGDATA/gnn/jobs-<database oid>, outside the graph store's per-database
 * folder that DROP EXTENSION removes), and a new extension's sequence
 * starts above it and above every job still in a slot.  (A dump restores
 * the sequence itself: pg_extension_config_dump.)
 */
static char *
JobIdFile(void)
{
	return psprintf("gnn/jobs-%u", MyDatabaseId);
}

static int64
ReadJobIdFloor(void)
{
	FILE	   *f = AllocateFile(JobIdFile(), "r");
	long long	v = 0;

	if (f == NULL)
		return 0;
	if (fscanf(f, "%lld", &v) != 1)
		v = 0;
	FreeFile(f);
	return v;
}

/* id was given out: the floor is at least id (written to a temporary, fsynced, renamed) */
void
GnnJobIdRaiseFloor(int64 id)
{
	char	   *path = JobIdFile();
	char	   *tmp = psprintf("%s.tmp", path);
	FILE	   *f;

	if (ReadJobIdFloor() >= id)
		return;
	(void) mkdir("gnn", S_IRWXU);
	if ((f = AllocateFile(tmp, "w")) == NULL ||
		fprintf(f, "%lld\n", (long long) id) < 0 || fflush(f) != 0 ||
		(enableFsync && pg_fsync(fileno(f)) != 0) || FreeFile(f) != 0 ||
		durable_rename(tmp, path, WARNING) != 0)
		ereport(WARNING,
				(errcode_for_file_access(),
				 errmsg("could not record job id %lld in \"%s\": %m", (long long) id, path),
				 errdetail("Job ids could repeat if the extension is dropped and created again.")));
}

/* gnn._job_id_floor(): the id a new extension's first job may not go below */
PG_FUNCTION_INFO_V1(gnn_job_id_floor);
Datum
gnn_job_id_floor(PG_FUNCTION_ARGS)
{
	int64		floor = ReadJobIdFloor();

	GnnRequirePreload();
	LWLockAcquire(gnn_shared->lock, LW_SHARED);
	for (int i = 0; i < GNN_JOB_SLOTS; i++)
	{
		GnnJobSlot *j = &gnn_shared->jobs[i];

		if (j->state != GNN_JOB_FREE && j->dbid == MyDatabaseId && j->id > floor)
			floor = j->id;
	}
	LWLockRelease(gnn_shared->lock);
	PG_RETURN_INT64(floor);
}

