/*
 * train.c: the full-batch training loop, configuration checks, inference.
 */
#include "train/train.h"
#include "train/eval.h"
#include "train/train_dist.h"
#include "sample/sample.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void
gnn_epoch_metrics_init(gnn_epoch_metrics *em, int32_t epoch)
{
	memset(em, 0, sizeof(*em));
	em->epoch = epoch;
	em->sample_s = em->gather_s = em->compute_s = em->wait_s = em->eval_s = NAN;
	em->cache_hit_rate = NAN;
	em->h2d_bytes = -1;
	em->allreduce_s = em->alltoallv_s = NAN;
	em->allreduce_bytes = em->alltoallv_bytes = -1;
}

void
gnn_train_config_default(gnn_model_kind kind, gnn_train_config *cfg)
{
	gnn_model_config mc;

	gnn_model_config_default(kind, &mc);
	memset(cfg, 0, sizeof(*cfg));
	cfg->model = kind;
	cfg->aggr = GNN_AGGR_MEAN;
	cfg->hidden = mc.hidden;
	cfg->layers = mc.layers;
	cfg->heads = mc.heads;
	cfg->out_heads = mc.out_heads;
	cfg->dropout = mc.dropout;
	cfg->attn_dropout = mc.attn_dropout;
	/* Kipf & Welling: lr 0.01, wd 5e-4; GAT paper (Cora): lr 0.005, wd 5e-4 */
	cfg->lr = kind == GNN_MODEL_GAT ? 0.005f : 0.01f;
	cfg->weight_decay = 5e-4f;
	cfg->epochs = 200;
	/* GAT trains with patience 100 (paper); K&W's window of 10 stops GCN too soon
	 * with dropout noise, so GCN/SAGE run all epochs and keep the best */
	cfg->patience = kind == GNN_MODEL_GAT ? 100 : 0;
	cfg->optimizer = GNN_OPTIM_ADAM;
	cfg->select = GNN_SELECT_VAL_LOSS;
	cfg->seed = 1;
	cfg->threads = 0;
	strcpy(cfg->backend, "cpu");
	cfg->row_normalise = true;
	cfg->timing = false;
}

bool
gnn_parse_model_kind(const char *s, gnn_model_kind *out)
{
	if (!s)
		return false;
	if (strcmp(s, "gcn") == 0)
		*out = GNN_MODEL_GCN;
	else if (strcmp(s, "graphsage") == 0 || strcmp(s, "sage") == 0)
		*out = GNN_MODEL_SAGE;
	else if (strcmp(s, "gat") == 0)
		*out = GNN_MODEL_GAT;
	else if (strcmp(s, "rgcn") == 0)
		*out = GNN_MODEL_RGCN;
	else if (strcmp(s, "hetero_sage") == 0 || strcmp(s, "hsage") == 0)
		*out = GNN_MODEL_HSAGE;
	else if (strcmp(s, "node2vec") == 0)
		*out = GNN_MODEL_NODE2VEC;
	else
		return false;
	return true;
}

bool
gnn_parse_aggr(const char *s, gnn_aggr *out)
{
	if (!s)
		return false;
	if (strcmp(s, "mean") == 0)
		*out = GNN_AGGR_MEAN;
	else if (strcmp(s, "pool") == 0)
		*out = GNN_AGGR_POOL;
	else
		return false;
	return true;
}

bool
gnn_parse_optim(const char *s, gnn_optim_kind *out)
{
	if (!s)
		return false;
	if (strcmp(s, "adam") == 0)
		*out = GNN_OPTIM_ADAM;
	else if (strcmp(s, "sgd") == 0)
		*out = GNN_OPTIM_SGD;
	else
		return false;
	return true;
}

bool
gnn_parse_select(const char *s, gnn_select *out)
{
	if (!s)
		return false;
	if (strcmp(s, "loss") == 0)
		*out = GNN_SELECT_VAL_LOSS;
	else if (strcmp(s, "acc") == 0)
		*out = GNN_SELECT_VAL_ACC;
	else if (strcmp(s, "gat") == 0)
		*out = GNN_SELECT_GAT;
	else
		return false;
	return true;
}

gnn_status
gnn_train_config_check(const gnn_train_config *c, gnn_error *err)
{
	if (c->model != GNN_MODEL_GCN && c->model != GNN_MODEL_SAGE && c->model != GNN_MODEL_GAT &&
		c->model != GNN_MODEL_RGCN && c->model != GNN_MODEL_HSAGE && c->model != GNN_MODEL_NODE2VEC)
		return gnn_error_set(err, GNN_ERR_INVALID,
							 "unknown model %d (accepted: gcn, graphsage, gat, rgcn, hetero_sage, node2vec)",
							 (int) c->model);
	if (c->task != GNN_TASK_CLASSIFY && c->task != GNN_TASK_REGRESS)
		return gnn_error_set(err, GNN_ERR_INVALID, "unknown task %d (accepted: classify, regress)", (int) c->task);
	if (c->num_bases < 0 || c->num_bases > GNN_MAX_EDGE_TYPES)
		return gnn_error_set(err, GNN_ERR_INVALID, "num_bases must be in [0, %d] (0 = a full weight per relation), got %d",
							 GNN_MAX_EDGE_TYPES, c->num_bases);
	if (c->num_bases > 0 && c->model != GNN_MODEL_RGCN)
		return gnn_error_set(err, GNN_ERR_INVALID, "num_bases applies to rgcn only");
	if (c->target_type < 0 || c->target_type >= GNN_MAX_NODE_TYPES)
		return gnn_error_set(err, GNN_ERR_INVALID, "target_type must be in [0, %d), got %d",
							 GNN_MAX_NODE_TYPES, c->target_type);
	if (c->aggr != GNN_AGGR_MEAN && c->aggr != GNN_AGGR_POOL)
		return gnn_error_set(err, GNN_ERR_INVALID, "unknown aggregator %d (accepted: mean, pool)", (int) c->aggr);
	if (c->hidden < 1 || c->hidden > 65536)
		return gnn_error_set(err, GNN_ERR_INVALID, "hidden must be in [1, 65536], got %d", c->hidden);
	if (c->layers < 1 || c->layers > GNN_MAX_LAYERS)
		return gnn_error_set(err, GNN_ERR_INVALID, "layers must be in [1, %d], got %d", GNN_MAX_LAYERS, c->layers);
	if (c->model == GNN_MODEL_GAT && (c->heads < 1 || c->heads > GNN_MAX_HEADS ||
									  c->out_heads < 1 || c->out_heads > GNN_MAX_HEADS))
		return gnn_error_set(err, GNN_ERR_INVALID, "heads and output heads must be in [1, %d], got %d, %d",
							 GNN_MAX_HEADS, c->heads, c->out_heads);
	if (!(c->dropout >= 0.0f && c->dropout < 1.0f))
		return gnn_error_set(err, GNN_ERR_INVALID, "dropout must be in [0, 1), got %g", c->dropout);
	if (!(c->attn_dropout >= 0.0f && c->attn_dropout < 1.0f))
		return gnn_error_set(err, GNN_ERR_INVALID, "attention dropout must be in [0, 1), got %g", c->attn_dropout);
	if (!(c->lr > 0.0f && c->lr <= 10.0f))
		return gnn_error_set(err, GNN_ERR_INVALID, "learning rate must be in (0, 10], got %g", c->lr);
	if (!(c->weight_decay >= 0.0f && c->weight_decay <= 1.0f))
		return gnn_error_set(err, GNN_ERR_INVALID, "weight decay must be in [0, 1], got %g", c->weight_decay);
	if (c->epochs < 1 || c->epochs > 1000000)
		return gnn_error_set(err, GNN_ERR_INVALID, "epochs must be in [1, 1000000], got %d", c->epochs);
	if (c->patience < 0)
		return gnn_error_set(err, GNN_ERR_INVALID, "patience must be >= 0 (0 = no early stopping), got %d", c->patience);
	if (c->optimizer != GNN_OPTIM_ADAM && c->optimizer != GNN_OPTIM_SGD)
		return gnn_error_set(err, GNN_ERR_INVALID, "unknown optimizer %d (accepted: adam, sgd)", (int) c->optimizer);
	if (c->select != GNN_SELECT_VAL_LOSS && c->select != GNN_SELECT_VAL_ACC && c->select != GNN_SELECT_GAT)
		return gnn_error_set(err, GNN_ERR_INVALID, "unknown selection rule %d (accepted: loss, acc, gat)", (int) c->select);
	if (c->threads < 0 || c->threads > 4096)
		return gnn_error_set(err, GNN_ERR_INVALID, "threads must be in [0, 4096] (0 = all cores), got %d", c->threads);
	if (strcmp(c->backend, "cpu") != 0 && strcmp(c->backend, "cuda") != 0)
		return gnn_error_set(err, GNN_ERR_INVALID, "unknown backend \"%.16s\" (accepted: cpu, cuda)", c->backend);
	return GNN_OK;
}

/* the model configuration for given widths, unchecked */
static void
model_config_fill(const gnn_train_config *c, int32_t in_dim, int32_t classes, gnn_model_config *mc)
{
	gnn_model_config_default(c->model, mc);
	mc->aggr = c->aggr;
	mc->in_dim = in_dim;
	mc->out_dim = classes;
	mc->hidden = c->hidden;
	mc->layers = c->layers;
	mc->heads = c->heads;
	mc->out_heads = c->out_heads;
	mc->dropout = c->dropout;
	mc->attn_dropout = c->attn_dropout;
	mc->num_bases = c->num_bases;
}

gnn_status
gnn_train_model_config(const gnn_train_config *c, int32_t in_dim, int32_t classes,
					   gnn_model_config *mc, gnn_error *err)
{
	model_config_fill(c, in_dim, classes, mc);
	return gnn_model_config_check(mc, err);
}

gnn_status
gnn_train_model_config_for(const gnn_train_config *c, const gnn_graph *g, gnn_model_config *mc,
						   gnn_error *err)
{
	model_config_fill(c, g->feat_dim, c->task == GNN_TASK_REGRESS ? 1 : g->num_classes, mc);
	/* a graph built without types (or by hand, fields left 0) has one of each */
	mc->num_relations = g->num_edge_types > 1 ? g->num_edge_types : 1;
	mc->num_node_types = g->num_node_types > 1 ? g->num_node_types : 1;
	if (c->target_type >= mc->num_node_types)
		return gnn_error_set(err, GNN_ERR_INVALID, "target_type %d is not a node type of the graph (it has %d)",
							 c->target_type, mc->num_node_types);
	return gnn_model_config_check(mc, err);
}

/* ------------------------------------------------------------------ several ranks (train_dist.c) */

static gnn_status
halo_exchange(void *arg, float *rows, int32_t dim, bool backward, gnn_error *err)
{
	return backward ? gnn_halo_backward(arg, rows, dim, err) : gnn_halo_forward(arg, rows, dim, err);
}

/* split rows and labels on the backend */
gnn_status
gnn_train_full(const gnn_graph *g, const gnn_train_config *cfg, gnn_backend *be_in,
			   gnn_progress_fn progress, void *progress_arg,
			   gnn_should_stop_fn should_stop, void *stop_arg,
			   gnn_model **model_out, gnn_train_result *res, gnn_error *err)
{
	gnn_backend *be = be_in;
	gnn_model  *model = NULL;
	gnn_model_config mc;
	gnn_optim	opt;
	gnn_rng		rng;
	gnn_eval_data d;
	float	   *dlogits = NULL;
	gnn_status	st;
	float	   *best_w = NULL;
	int64_t		n = g->num_nodes;
	int32_t		c = g->num_classes;
	gnn_selector sel;
	gnn_dblock *blocks[GNN_MAX_LAYERS];
	double		t_start;
	gnn_dist   *dist = cfg->dist;
	gnn_halo_plan halo;
	float	   *gbuf = NULL;	/* the gradients summed over ranks, packed */
	size_t		gcap = 0;
	gnn_graph	part;
	float	   *xfeat = NULL;
	double	   *deg = NULL;
	int64_t		nall[4] = {0, 0, 0, 0};

	memset(&d, 0, sizeof(d));
	memset(&halo, 0, sizeof(halo));
	memset(res, 0, sizeof(*res));
	gnn_selector_init(&sel, cfg->select);
	if (model_out)
		*model_out = NULL;
	if ((st = gnn_train_config_check(cfg, err)) != GNN_OK)
		return st;
	if ((st = gnn_train_graph_check_task(g, cfg->task, err)) != GNN_OK)
		return st;
	if (model_out && !be_in)
		return gnn_error_set(err, GNN_ERR_INVALID, "asking for the model needs a caller-owned backend");
	if ((st = gnn_train_model_config_for(cfg, g, &mc, err)) != GNN_OK)
		return st;
	if (dist)
	{
		if ((st = gnn_train_dist_setup(dist, g, cfg, &mc, &halo, &part, &xfeat, &deg, err)) != GNN_OK)
			return st;
		g = &part;
	}
	c = mc.out_dim;
	if (!be && (st = gnn_backend_create(cfg->backend, cfg->threads, cfg->cuda_so, &be, err)) != GNN_OK)
	{
		gnn_halo_plan_free(&halo);
		free(xfeat);
		free(deg);
		return st;
	}

	gnn_rng_seed(&rng, cfg->seed);
	if ((st = gnn_model_create(be, &mc, &rng, &model, err)) != GNN_OK)
		goto done;
	if ((st = gnn_eval_data_create_normed(be, g, cfg->row_normalise, cfg->task,
										  dist && cfg->model == GNN_MODEL_GCN ? deg : NULL, &d, err)) != GNN_OK)
		goto done;
	if (dist)
	{
		gnn_model_set_halo(model, halo_exchange, &halo);
		for (int s = 1; s < 4; s++)
			nall[s] = d.nrows[s];
		if ((st = gnn_dist_allreduce(dist, nall, 4, GNN_DIST_I64, err)) != GNN_OK)
			goto done;
	}
	if ((st = gnn_backend_alloc(be, sizeof(float) * n * c, (void **) &dlogits)) != GNN_OK)
	{
		st = gnn_backend_error(be, st, err);
		goto done;
	}
	best_w = malloc(sizeof(float) * (gnn_model_weights_count(model) + 1));
	if (!best_w)
	{
		st = gnn_error_set(err, GNN_ERR_NOMEM, "out of memory");
		goto done;
	}
	for (int l = 0; l < GNN_MAX_LAYERS; l++)
		blocks[l] = &d.blk;
	gnn_optim_init(&opt, cfg->optimizer, cfg->lr, cfg->weight_decay);
	gnn_backend_timing_reset(be);
	gnn_backend_timing_enable(be, cfg->timing);

	t_start = gnn_now_s();
	for (int32_t epoch = 1; epoch <= cfg->epochs; epoch++)
	{
		gnn_epoch_metrics em;
		const float *logits;
		gnn_dist_counters c0;
		double		t0 = gnn_now_s();

		gnn_dist_counters_get(dist, &c0);

		{
			/* every rank stops at the same epoch: any one's stop is everyone's */
			int64_t		stop = should_stop && should_stop(stop_arg);

			if (dist && (st = gnn_dist_allreduce(dist, &stop, 1, GNN_DIST_I64, err)) != GNN_OK)
				break;
			if (stop)
			{
				st = gnn_error_set(err, GNN_ERR_CANCELLED, "training cancelled at epoch %d", epoch);
				break;
			}
		}
		gnn_epoch_metrics_init(&em, epoch);

		/* train step */
		if ((st = gnn_model_forward(model, blocks, &d.x, true, gnn_rng_next(&rng), &logits, err)) != GNN_OK)
			break;
		if (dist && d.nrows[GNN_SPLIT_TRAIN] == 0)
		{
			/* a part without training nodes: no loss of its own, but its share of the layers */
			em.train_loss = 0;
			if ((st = gnn_backend_memset(be, dlogits, 0, sizeof(float) * n * c)) != GNN_OK)
			{
				st = gnn_backend_error(be, st, err);
				break;
			}
		}
		else if (cfg->task == GNN_TASK_REGRESS)
		{
			float		mae;

			if ((st = gnn_regress_loss(be, &d, logits, n, GNN_SPLIT_TRAIN, dlogits, &em.train_loss,
									   &mae, err)) != GNN_OK)
				break;
		}
		else
		{
			st = gnn_backend_xent(be, logits, n, c, d.labels, d.rows[GNN_SPLIT_TRAIN], d.nrows[GNN_SPLIT_TRAIN],
								  dlogits, &em.train_loss, NULL, NULL);
			if (st != GNN_OK)
			{
				st = gnn_backend_error(be, st, err);
				break;
			}
		}
		if (dist)
		{
			/* the whole graph's mean: this rank's share of its training nodes */
			double		loss = (double) em.train_loss * (double) d.nrows[GNN_SPLIT_TRAIN];
			float		share = nall[GNN_SPLIT_TRAIN] > 0 ?
				(float) ((double) d.nrows[GNN_SPLIT_TRAIN] / (double) nall[GNN_SPLIT_TRAIN]) : 0.0f;

			if ((st = gnn_backend_axpby(be, n * c, 0.0f, dlogits, share, dlogits)) != GNN_OK)
			{
				st = gnn_backend_error(be, st, err);
				break;
			}
			if ((st = gnn_dist_allreduce(dist, &loss, 1, GNN_DIST_F64, err)) != GNN_OK)
				break;
			em.train_loss = nall[GNN_SPLIT_TRAIN] > 0 ? (float) (loss / (double) nall[GNN_SPLIT_TRAIN]) : NAN;
		}
		if ((st = gnn_model_backward(model, dlogits, err)) != GNN_OK)
			break;
		if (dist && (st = gnn_train_dist_sum_grads(dist, model, 1.0f, NULL, 0, &gbuf, &gcap, err)) != GNN_OK)
			break;
		if ((st = gnn_optim_step(&opt, model, err)) != GNN_OK)
			break;

		em.compute_s = gnn_now_s() - t0;
		if (dist)
			gnn_train_dist_epoch_comm(dist, &c0, &em);

		/* evaluation */
		if ((st = gnn_model_forward(model, blocks, &d.x, false, 0, &logits, err)) != GNN_OK)
			break;
		if ((st = gnn_eval_splits(be, &d, logits, n, c, &em, err)) != GNN_OK)
			break;
		if (dist && (st = gnn_train_dist_metrics(dist, d.nrows, nall, &em, err)) != GNN_OK)
			break;
		em.eval_s = gnn_now_s() - t0 - em.compute_s;

		if (gnn_selector_step(&sel, &em))
		{
			if ((st = gnn_model_weights_get(model, best_w, err)) != GNN_OK ||
				(!dist && cfg->keep_confusion &&
				 (st = gnn_eval_keep_confusion(be, &d, logits, n, c, res, err)) != GNN_OK))
				break;
			em.best = true;
			res->best = em;
			res->best_epoch = epoch;
		}
		em.seconds = gnn_now_s() - t0;
		if (em.best)
			res->best.seconds = em.seconds;
		res->epochs_run = epoch;
		if (progress)
			progress(progress_arg, &em);
		if (cfg->patience > 0 && sel.wait >= cfg->patience)
		{
			res->stopped_early = true;
			break;
		}
	}
	res->seconds = gnn_now_s() - t_start;
	res->agg_s = be->time_s[GNN_CAT_AGG];
	res->dense_s = be->time_s[GNN_CAT_DENSE];
	res->other_s = res->seconds - res->agg_s - res->dense_s;
	gnn_backend_timing_enable(be, false);
	/* the kept weights matter only to a model that is handed back */
	if (st == GNN_OK && sel.have_best)
		st = gnn_model_weights_set(model, best_w, err);
	/* the plan goes with this call: a model handed back computes alone */
	if (model)
		gnn_model_set_halo(model, NULL, NULL);
	if (st == GNN_OK && model_out)
	{
		*model_out = model;
		model = NULL;
	}
done:
	free(best_w);
	gnn_backend_free(be, dlogits);
	gnn_eval_data_free(be, &d);
	gnn_model_free(model);
	if (!be_in)
		gnn_backend_destroy(be);
	gnn_halo_plan_free(&halo);
	free(gbuf);
	free(xfeat);
	free(deg);
	return st;
}

gnn_status
gnn_model_infer(gnn_model *m, const gnn_graph *g, bool row_normalise, int layer, bool softmax,
				float *host_out, gnn_error *err)
{
	gnn_backend *be = gnn_model_backend(m);
	const gnn_model_config *mc = gnn_model_config_of(m);
	gnn_block	blk = {0};
	gnn_dblock	db;
	gnn_dfeat	x;
	gnn_dblock *blocks[GNN_MAX_LAYERS];
	const float *logits,
			   *out;
	int64_t		rows;
	int32_t		cols;
	gnn_status	st;

	if (layer < -1 || layer >= mc->layers)
		return gnn_error_set(err, GNN_ERR_INVALID, "layer %d does not exist (the model has %d layers; -1 is the output)",
							 layer, mc->layers);
	if (mc->kind == GNN_MODEL_NODE2VEC)
	{
		if (softmax)
			return gnn_error_set(err, GNN_ERR_INVALID, "a node2vec model has no classes to predict");
		return gnn_model_node_rows(m, g, NULL, g->num_nodes, host_out, err);
	}
	gnn_block_from_graph(g, &blk);
	/* forward only: no transposes (a third of the pass on a large graph) */
	if ((st = gnn_dblock_create_forward(be, &blk, mc->kind, NULL, NULL, &db, err)) != GNN_OK)
		return st;
	if ((st = gnn_dfeat_stream(be, g, row_normalise, &x, err)) != GNN_OK)
	{
		gnn_dblock_free(&db);
		return st;
	}
	for (int l = 0; l < GNN_MAX_LAYERS; l++)
		blocks[l] = &db;
	st = gnn_model_forward(m, blocks, &x, false, 0, &logits, err);
	if (st == GNN_OK)
	{
		out = gnn_model_layer_output(m, layer < 0 ? mc->layers - 1 : layer, &rows, &cols);
		if (layer < 0 && softmax)
		{
			float	   *lg = (float *) logits;	/* the model's own buffer, rewritten next forward */

			st = gnn_backend_softmax_rows(be, lg, lg, rows, cols);
			if (st != GNN_OK)
				st = gnn_backend_error(be, st, err);
		}
		if (st == GNN_OK)
			st = gnn_backend_error(be, gnn_backend_copy_d2h(be, host_out, out, sizeof(float) * rows * cols), err);
	}
	gnn_dfeat_free(&x);
	gnn_dblock_free(&db);
	return st;
}

/*
 * gnn_model_infer over the parts of a partitioned graph, one rank each (a
 * collective): the forward pass over this rank's part with the halo's rows
 * of every layer's input from their owners (the full-batch hook), so the
 * own nodes' rows are the whole graph's; then the halo's rows of the result
 * from their owners too, so every row of the part is.
 */
gnn_status
gnn_model_infer_dist(gnn_dist *d, gnn_model *m, const gnn_graph *g, bool row_normalise, int layer, bool softmax,
					 float *host_out, gnn_error *err)
{
	gnn_backend *be = gnn_model_backend(m);
	const gnn_model_config *mc = gnn_model_config_of(m);
	gnn_halo_plan halo;
	gnn_graph	part;
	float	   *xfeat = NULL;
	double	   *deg = NULL;
	gnn_block	blk = {0};
	gnn_dblock	db;
	gnn_dfeat	x;
	bool		have_db = false,
				have_x = false;
	gnn_dblock *blocks[GNN_MAX_LAYERS];
	const float *logits,
			   *out;
	int64_t		rows;
	int32_t		cols;
	gnn_status	st;

	memset(&halo, 0, sizeof(halo));
	if (layer < -1 || layer >= mc->layers)
		return gnn_error_set(err, GNN_ERR_INVALID, "layer %d does not exist (the model has %d layers; -1 is the output)",
							 layer, mc->layers);
	if (mc->kind == GNN_MODEL_NODE2VEC)
		return gnn_error_set(err, GNN_ERR_UNSUPPORTED, "a node2vec model's rows are its own table: read them on one server");
	if (be->ops != gnn_backend_cpu())
		return gnn_error_set(err, GNN_ERR_UNSUPPORTED, "inference over parts runs on the CPU backend");
	if ((st = gnn_train_dist_part(d, g, &halo, &part, &xfeat, &deg, err)) != GNN_OK)
		return st;
	gnn_block_from_graph(&part, &blk);
	if ((st = gnn_dblock_create_forward(be, &blk, mc->kind, NULL, mc->kind == GNN_MODEL_GCN ? deg : NULL, &db,
										err)) == GNN_OK)
		have_db = true;
	if (st == GNN_OK && (st = gnn_dfeat_from_graph(be, &part, row_normalise, &x, err)) == GNN_OK)
		have_x = true;
	for (int l = 0; l < GNN_MAX_LAYERS; l++)
		blocks[l] = &db;
	if (st == GNN_OK)
	{
		gnn_model_set_halo(m, halo_exchange, &halo);
		st = gnn_model_forward(m, blocks, &x, false, 0, &logits, err);
		gnn_model_set_halo(m, NULL, NULL);
	}
	if (st == GNN_OK)
	{
		out = gnn_model_layer_output(m, layer < 0 ? mc->layers - 1 : layer, &rows, &cols);
		if (layer < 0 && softmax)
			st = gnn_backend_error(be, gnn_backend_softmax_rows(be, (float *) logits, (float *) logits, rows, cols),
								   err);
		if (st == GNN_OK)
			st = gnn_backend_error(be, gnn_backend_copy_d2h(be, host_out, out, sizeof(float) * rows * cols), err);
		/* the halo's rows: their owners' */
		if (st == GNN_OK)
			st = gnn_halo_forward(&halo, host_out, cols, err);
	}
	if (have_x)
		gnn_dfeat_free(&x);
	if (have_db)
		gnn_dblock_free(&db);
	gnn_halo_plan_free(&halo);
	free(xfeat);
	free(deg);
	return st;
}
