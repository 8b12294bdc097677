/*
 * gpu_batch_spec.c: a training job's GPU batch spec.  The batch builder
 * (sample/gpu_batch.c) sits below training and takes plain values; here the
 * training layer fills them from its configuration (train.h, train_mb.h)
 * and from the job estimate (estimate.h: one batch's device buffers, so the
 * feature cache leaves room for the batches in flight).
 */
#include "train/train_mb.h"
#include "train/estimate.h"
#include "sample/gpu_batch.h"

void
gnn_gpu_batch_spec_of(const gnn_graph *g, const gnn_train_config *cfg, const gnn_minibatch_config *mbc,
					  bool estimate, gnn_gpu_batch_spec *spec)
{
	memset(spec, 0, sizeof(*spec));
	spec->sampler = &mbc->sampler;
	spec->batch_size = mbc->batch_size;
	spec->model = cfg->model;
	spec->row_normalise = cfg->row_normalise;
	spec->seed = cfg->seed;
	spec->threads = cfg->threads;
	spec->cpu_batches = mbc->cpu_batches;
	spec->fail_batch = mbc->fail_batch;
	spec->emulated = mbc->gpu && mbc->gpu->api;
	if (estimate)
	{
		/* one batch's buffers, as gnn.estimate counts them */
		gnn_job_plan jp;
		gnn_estimate je;
		gnn_error	jerr;

		gnn_job_plan_default(&jp);
		jp.loop = GNN_LOOP_MINIBATCH;
		jp.nfanouts = mbc->sampler.nhops;
		for (int h = 0; h < mbc->sampler.nhops; h++)
			jp.fanouts[h] = mbc->sampler.fanouts[h];
		jp.batch_size = mbc->batch_size;
		jp.gpu = true;
		jp.sampled_eval = true;
		spec->batch_bytes = gnn_job_estimate(g, cfg, &jp, &je, &jerr) == GNN_OK ? je.batch_bytes : 0;
	}
}

const char *
gnn_gpu_batch_unsupported(const gnn_backend *be, const gnn_graph *g, const gnn_train_config *cfg,
						  const gnn_minibatch_config *mbc)
{
	gnn_gpu_batch_spec spec;

	gnn_gpu_batch_spec_of(g, cfg, mbc, false, &spec);
	return gnn_gpu_batch_spec_unsupported(be, g, &spec);
}

gnn_status
gnn_gpu_batcher_create(gnn_backend *be, const gnn_graph *g, const gnn_train_config *cfg,
					   const gnn_minibatch_config *mbc, const gnn_gpu_batch_config *gc, const int32_t *train,
					   int64_t ntrain, size_t model_bytes, int nslots, gnn_gpu_batcher **out, gnn_error *err)
{
	gnn_gpu_batch_spec spec;

	/* the estimate only for a job the batcher takes (it checks the rest again) */
	gnn_gpu_batch_spec_of(g, cfg, mbc, false, &spec);
	if (gnn_gpu_batch_spec_unsupported(be, g, &spec) == NULL && mbc->batch_size >= 1 &&
		mbc->sampler.nhops >= 1 && mbc->sampler.nhops <= GNN_MAX_LAYERS)
		gnn_gpu_batch_spec_of(g, cfg, mbc, true, &spec);
	return gnn_gpu_batcher_open(be, g, &spec, gc, train, ntrain, model_bytes, nslots, out, err);
}
