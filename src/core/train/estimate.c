/*
 * estimate.c: gnn_job_estimate (estimate.h).
 *
 * Each item follows the shapes the loops allocate; the per-element
 * factors (how many buffers of a shape a layer keeps) were measured with
 * the heap counts (heap.h) over GCN, GraphSAGE and GAT, 2 and 3 layers,
 * hidden 16 and 128, 32 and 256 features, 10k and 30k nodes, each loop
 * (test/core/test_estimate.c checks several such jobs, and Cora, within 2x).
 */
#include "train/estimate.h"

#include "nn/model.h"
#include "train/train_linkpred.h"
#include "train/train_mb.h"

#include <math.h>
#include <stdlib.h>
#include <stdarg.h>
#include <stdio.h>

void
gnn_job_plan_default(gnn_job_plan *p)
{
	memset(p, 0, sizeof(*p));
	p->prefetch = -1;
	p->gpu_cache_bytes = -1;
}

static void add_item(gnn_estimate *e, bool gpu, bool after, const char *item, double bytes, const char *fmt,
					 va_list ap) __attribute__((format(printf, 6, 0)));

/* an item (of the results pass after the job with after, else of the job), its note from fmt */
static void
add_item(gnn_estimate *e, bool gpu, bool after, const char *item, double bytes, const char *fmt, va_list ap)
{
	gnn_estimate_item *it;

	if (e->n >= GNN_ESTIMATE_ITEMS || bytes < 0)
		return;
	it = &e->items[e->n++];
	snprintf(it->item, sizeof(it->item), "%s", item);
	it->gpu = gpu;
	it->after = after;
	it->bytes = (int64_t) bytes;
	vsnprintf(it->note, sizeof(it->note), fmt, ap);
	if (after)
		e->after_host_bytes += it->bytes;
	else if (gpu)
		e->gpu_bytes += it->bytes;
	else
		e->host_bytes += it->bytes;
}

static void
add(gnn_estimate *e, bool gpu, const char *item, double bytes, const char *fmt,...)
	__attribute__((format(printf, 5, 6)));

static void
add(gnn_estimate *e, bool gpu, const char *item, double bytes, const char *fmt,...)
{
	va_list		ap;

	va_start(ap, fmt);
	add_item(e, gpu, false, item, bytes, fmt, ap);
	va_end(ap);
}

static void
add_after(gnn_estimate *e, const char *item, double bytes, const char *fmt,...)
	__attribute__((format(printf, 4, 5)));

/* a host item of the results pass, after the job is reported */
static void
add_after(gnn_estimate *e, const char *item, double bytes, const char *fmt,...)
{
	va_list		ap;

	va_start(ap, fmt);
	add_item(e, false, true, item, bytes, fmt, ap);
	va_end(ap);
}

/* the widths of the model's layers: in[l] -> out[l] */
typedef struct shape
{
	int			layers;
	double		in[GNN_MAX_LAYERS];
	double		out[GNN_MAX_LAYERS];
	double		hidden_sum;		/* the hidden layers' output widths, summed */
	double		heads;
	bool		gat;
	bool		relational;
	double		relations;
} shape;

static void
shape_of(const gnn_model_config *mc, shape *s)
{
	memset(s, 0, sizeof(*s));
	s->layers = mc->layers;
	s->gat = mc->kind == GNN_MODEL_GAT;
	s->relational = mc->kind == GNN_MODEL_RGCN || mc->kind == GNN_MODEL_HSAGE;
	s->relations = mc->num_relations > 0 ? mc->num_relations : 1;
	s->heads = s->gat ? (mc->heads > 0 ? mc->heads : 1) : 1;
	for (int l = 0; l < mc->layers; l++)
	{
		bool		last = l == mc->layers - 1;

		s->in[l] = l == 0 ? mc->in_dim : mc->hidden * s->heads;
		s->out[l] = last ? mc->out_dim : mc->hidden * s->heads;
		if (!last)
			s->hidden_sum += s->out[l];
	}
}

/*
 * One forward and backward pass over rows nodes (full batch: every node;
 * a batch: the destinations of each hop) and arcs arcs: features, the
 * activations and gradients a layer keeps, attention per arc and head.
 */
typedef struct pass_bytes
{
	double		features;
	double		activations;
	double		attention;
	double		operators;
} pass_bytes;

/* bytes of one node's feature row as a batch or a copy holds it (sparse: its nonzeros) */
static double
row_bytes(const gnn_graph *g)
{
	if (g->feat_kind == GNN_FEAT_SPARSE)
		return 8.0 + 8.0 * (double) g->feat_nnz / (double) (g->num_nodes > 0 ? g->num_nodes : 1);
	return 4.0 * g->feat_dim;
}

/*
 * A relational layer (R-GCN, heterogeneous GraphSAGE) keeps a message buffer
 * per relation over that relation's destination type: on top of what a
 * homogeneous layer keeps, half a hidden-wide buffer per destination row of
 * every relation (measured on the shop schema: 10 relations over 5 types,
 * where the per-relation rows sum to twice the nodes).
 */
static double
relational_factor(const gnn_graph *g, const shape *s)
{
	double		rows = 0,
				n = g->num_nodes > 0 ? (double) g->num_nodes : 1;

	if (!s->relational)
		return 1;
	if (g->num_edge_types <= 1 || !g->etypes || !g->type_ptr)
		return 1.5;
	for (int r = 0; r < g->num_edge_types; r++)
	{
		int32_t		t = g->etypes[r].dst_type;

		if (t >= 0 && t < g->num_node_types)
			rows += (double) (g->type_ptr[t + 1] - g->type_ptr[t]);
	}
	return 1 + 0.5 * rows / n;
}

static void
full_pass(const gnn_graph *g, const shape *s, double nodes, double arcs, bool training, pass_bytes *p)
{
	memset(p, 0, sizeof(*p));
	/* the features as the loop holds them (a row-normalised copy; dropout's output on training) */
	p->features = nodes * row_bytes(g) * (training ? 2 : 1);
	/* per hidden layer about eight node x width buffers on training (transform, aggregate,
	 * activation, dropout, and their gradients), three for a forward pass; logits and their gradient */
	p->activations = 4.0 * nodes * s->hidden_sum * (training ? 8 : 3) * relational_factor(g, s) +
		4.0 * nodes * s->out[s->layers - 1] * 4;
	if (s->gat)
		p->attention = 4.0 * (arcs + nodes) * s->heads * s->layers * (training ? 3 : 1);
	/* the normalised operator, both ways, and per-node bookkeeping (labels, splits, degrees) */
	p->operators = 2.0 * (8.0 * (nodes + 1) + 8.0 * (arcs + nodes)) + 64.0 * nodes;
}

/*
 * Expected rows per hop of a neighbour-sampled typed batch, type by type:
 * the seeds are of the target type; a destination of type t draws up to
 * the hop's fan-out from each relation into t (at most that relation's mean
 * in-degree into t), and the sources drawn of each type overlap as below.
 * false when the graph's types are not there to follow.
 */
static bool
batch_rows_typed(const gnn_graph *g, const gnn_job_plan *p, int32_t target, double seeds, double *dst,
				 double *arcs, double *inputs)
{
	int32_t		T = g->num_node_types;
	double	   *lv,
			   *add;

	if (g->num_edge_types <= 1 || T <= 1 || !g->etypes || !g->type_ptr || target < 0 || target >= T ||
		!(lv = calloc((size_t) 2 * T, sizeof(double))))
		return false;
	add = lv + T;
	lv[target] = (double) (g->type_ptr[target + 1] - g->type_ptr[target]);
	if (seeds < lv[target])
		lv[target] = seeds;
	for (int h = 0; h < p->nfanouts; h++)
	{
		double		a = 0;

		dst[h] = 0;
		for (int32_t t = 0; t < T; t++)
		{
			dst[h] += lv[t];
			add[t] = 0;
		}
		for (int32_t r = 0; r < g->num_edge_types; r++)
		{
			int32_t		t = g->etypes[r].dst_type,
						sr = g->etypes[r].src_type;
			double		nt,
						deg,
						fo;

			if (t < 0 || t >= T || sr < 0 || sr >= T)
				continue;
			nt = (double) (g->type_ptr[t + 1] - g->type_ptr[t]);
			deg = nt > 0 ? (double) g->etypes[r].count / nt : 0;
			fo = p->fanouts[h] < 0 || p->fanouts[h] > deg ? deg : p->fanouts[h];
			a += lv[t] * fo;
			add[sr] += lv[t] * fo;
		}
		arcs[h] = a;
		for (int32_t t = 0; t < T; t++)
		{
			double		nt = (double) (g->type_ptr[t + 1] - g->type_ptr[t]),
						next = lv[t] + (nt > 0 ? nt * (1 - exp(-add[t] / nt)) : 0);

			lv[t] = next < nt ? next : nt;
		}
	}
	*inputs = 0;
	for (int32_t t = 0; t < T; t++)
		*inputs += lv[t];
	free(lv);
	return true;
}

/* expected rows per hop of a neighbour-sampled batch: dst[h] rows receive arc[h] arcs */
static void
batch_rows(const gnn_graph *g, const gnn_job_plan *p, int32_t target, double seeds, double *dst, double *arcs,
		   double *inputs)
{
	double		n = (double) g->num_nodes,
				avg = n > 0 ? (double) g->num_edges / n : 0,
				level = seeds < n ? seeds : n;

	if (batch_rows_typed(g, p, target, seeds, dst, arcs, inputs))
		return;
	for (int h = 0; h < p->nfanouts; h++)
	{
		double		fo = p->fanouts[h] < 0 || p->fanouts[h] > avg ? avg : p->fanouts[h];
		double		next;

		dst[h] = level;
		arcs[h] = level * fo;
		/* sampled sources overlap: distinct nodes grow as n (1 - exp(-draws / n)) */
		next = level + (n > 0 ? n * (1 - exp(-arcs[h] / n)) : 0);
		level = next < n ? next : n;
	}
	*inputs = level;
}

/* one neighbour-sampled batch of seeds: its input rows, block bytes, activation bytes and sampled arcs */
typedef struct batch_cost
{
	double		inputs;
	double		blocks;
	double		act;
	double		sampled;
} batch_cost;

static void
batch_cost_of(const gnn_graph *g, const gnn_job_plan *plan, const shape *s, int32_t target, double seeds,
			  batch_cost *c)
{
	double		dst[GNN_MAX_LAYERS],
				harcs[GNN_MAX_LAYERS];

	memset(c, 0, sizeof(*c));
	batch_rows(g, plan, target, seeds, dst, harcs, &c->inputs);
	for (int h = 0; h < plan->nfanouts; h++)
	{
		/* the model's layer l reads hop nfanouts - 1 - l */
		int			l = plan->nfanouts - 1 - h;

		c->sampled += harcs[h];
		c->blocks += 2.0 * (8.0 * (dst[h] + 1) + 8.0 * (harcs[h] + dst[h])) + 16.0 * dst[h];
		c->act += (4.0 * dst[h] * (l == 0 || s->out[l] > s->in[l] ? s->out[l] : s->in[l]) * 5 +
				   4.0 * dst[h] * s->out[l] * 4) * relational_factor(g, s) +
			(s->gat ? 4.0 * (harcs[h] + dst[h]) * s->heads * 3 : 0);
	}
}

gnn_status
gnn_job_estimate(const gnn_graph *g, const gnn_train_config *cfg, const gnn_job_plan *plan,
				 gnn_estimate *out, gnn_error *err)
{
	gnn_model_config mc;
	gnn_status	st;
	shape		s;
	double		params,
				n = (double) g->num_nodes,
				arcs = (double) g->num_edges;
	pass_bytes	fp;
	bool		gpu = plan->gpu;

	memset(out, 0, sizeof(*out));
	if (cfg->model == GNN_MODEL_NODE2VEC)
	{
		/* a row per node, trained in place; walks a chunk at a time; the negatives' table */
		double		table = n * 16 < 65536 ? 65536 : n * 16 > 67108864 ? 67108864 : n * 16;

		add(out, false, "embeddings", 4 * n * cfg->hidden, "%.0f nodes x %d", n, cfg->hidden);
		add(out, false, "walks", 4 * 4096.0 * 101 + 4 * n, "4096 walks at a time, and the order of the nodes");
		add(out, false, "negative table", 4 * table, "nodes in proportion to in-degree^0.75");
		add(out, false, "per-thread rows", 4.0 * cfg->hidden * (cfg->threads > 0 ? cfg->threads : 64),
			"a gradient row per thread");
		return GNN_OK;
	}
	/* link prediction trains an encoder: the last layer is the embedding, whatever the labels */
	if ((st = plan->loop == GNN_LOOP_LINKPRED ? gnn_linkpred_model_config(g, cfg, &mc, err)
		 : gnn_train_model_config_for(cfg, g, &mc, err)) != GNN_OK)
		return st;
	params = (double) gnn_model_config_params(&mc, NULL, NULL);
	if (params < 0)
		return gnn_error_set(err, GNN_ERR_INVALID, "the model configuration is invalid");
	shape_of(&mc, &s);

	/* the model: on the device that trains it, with a host copy of the best epoch */
	add(out, gpu, "parameters", 4 * params, "%.0f weights", params);
	out->after_host_bytes += 4 * params;	/* the model stays for the results pass */
	add(out, gpu, "gradients", 4 * params, "one per weight");
	add(out, gpu, "optimiser state", cfg->optimizer == GNN_OPTIM_ADAM ? 8 * params : 0,
		cfg->optimizer == GNN_OPTIM_ADAM ? "Adam: two moments per weight" : "SGD: none");
	add(out, false, "best-epoch weights", 4 * params, "a host copy of the selected epoch's weights");

	switch (plan->loop)
	{
		case GNN_LOOP_FULL:
		case GNN_LOOP_LINKPRED:
			full_pass(g, &s, n, arcs, true, &fp);
			add(out, gpu, "features", fp.features, "%s features of %.0f nodes, with dropout's copy",
				g->feat_kind == GNN_FEAT_SPARSE ? "sparse" : "dense", n);
			add(out, gpu, "graph operators", fp.operators, "the normalised adjacency of %.0f arcs, both ways", arcs);
			add(out, gpu, "activations", fp.activations + fp.attention,
				"every layer's outputs and gradients over all %.0f nodes%s", n,
				s.gat ? ", attention per arc and head" : "");
			if (plan->loop == GNN_LOOP_LINKPRED)
				add(out, gpu, "link pairs", 40.0 * arcs,
					"positive and negative pairs, their scores and the decoder's gradients");
			break;
		case GNN_LOOP_MINIBATCH:
			{
				double		seeds = plan->batch_size > 0 ? plan->batch_size : 512,
							slots = (plan->prefetch < 0 ? 2 : plan->prefetch) + 1;
				batch_cost	bc;

				if (plan->nfanouts != mc.layers)
					return gnn_error_set(err, GNN_ERR_INVALID, "%d fan-outs for %d layers", plan->nfanouts,
										 mc.layers);
				batch_cost_of(g, plan, &s, cfg->target_type, seeds, &bc);
				out->batch_bytes = (int64_t) (bc.inputs * row_bytes(g) * 2 + bc.blocks + bc.act);
				add(out, gpu, "batch features", bc.inputs * row_bytes(g) * (slots + 1),
					"%.0f input nodes per batch x %d features, %.0f batches in flight and dropout's copy",
					bc.inputs, g->feat_dim, slots);
				add(out, false, "sampler buffers", bc.blocks * slots + 24.0 * bc.inputs * slots + 8.0 * n,
					"%.0f sampled arcs per batch, %.0f batches in flight, a node map", bc.sampled, slots);
				add(out, gpu, "activations", bc.act, "one batch's outputs and gradients, layer by layer");
				/*
				 * Evaluation: sampled (the default; typed graphs and time-aware
				 * sampling always: train_mb.c), validation batches made by the
				 * same pipeline as training's, forward only, with the
				 * splits' node list and two-class scores; else a forward
				 * pass over all nodes each epoch.  Then, after the job, the
				 * results: one such pass, or for a time-aware job sampled
				 * batches over every node into host rows.
				 */
				full_pass(g, &s, n, arcs, false, &fp);
				if (!plan->sampled_eval && !plan->temporal && g->num_edge_types <= 1)
					add(out, false, "evaluation", fp.features + fp.operators + fp.activations + fp.attention,
						"a forward pass over all %.0f nodes each epoch (options.evaluation 'sampled' needs less)", n);
				else
				{
					/*
					 * the splits' node lists, and where evaluation batches are
					 * larger than training's (eval_batch_size), what a larger
					 * batch holds beyond a training one: its features in every
					 * slot of the pipeline (a slot keeps the largest buffer it
					 * had), its blocks and its forward pass
					 */
					double		eseeds = plan->eval_batch_size > seeds ? plan->eval_batch_size : seeds,
								more = 0;

					if (eseeds > seeds)
					{
						batch_cost	ec;

						batch_cost_of(g, plan, &s, cfg->target_type, eseeds, &ec);
						more = (ec.inputs - bc.inputs) * (row_bytes(g) * (slots + 1) + 24.0 * slots) +
							(ec.blocks - bc.blocks) * slots + (ec.act > bc.act ? ec.act - bc.act : 0);
						if (more < 0)
							more = 0;
					}
					add(out, false, "evaluation", 8.0 * n + (g->num_classes == 2 ? 12.0 * n : 0) + more,
						"sampled validation and test batches of %.0f seeds from the training pipeline; the two splits' node lists",
						eseeds < n ? eseeds : n);
					/*
					 * layer-0 rows kept within a pass (train_mb.h's
					 * eval_reuse_rows): the rows in chunks of 8 MB, a slot
					 * per node and per row, the two samplers' bits (their
					 * marks are the training sampler's)
					 */
					if (!gpu && !plan->temporal && !plan->no_eval_reuse && plan->nfanouts >= 2)
					{
						gnn_minibatch_config rm;
						int64_t		rows;
						int32_t		d0 = gnn_model_config_layer_dim(&mc, 0);

						memset(&rm, 0, sizeof(rm));
						rm.sampler.kind = GNN_SAMPLER_NEIGHBOR;
						rm.sampler.nhops = plan->nfanouts;
						for (int h = 0; h < plan->nfanouts; h++)
							rm.sampler.fanouts[h] = plan->fanouts[h];
						rows = gnn_eval_reuse_rows(g, cfg, &rm, true, d0, g->n_val, g->n_test, !plan->kept_rows_bound);
						if (rows > 0)
							add(out, false, GNN_ESTIMATE_KEPT_ROWS,
								4.0 * d0 * (double) (rows + fmin((double) rows, (double) GNN_BIG_BYTES / (4.0 * d0))) +
								4.0 * rows + 4.25 * n,
								"up to %lld layer-0 rows of %d kept within an evaluation pass, for nodes drawn again",
								(long long) rows, d0);
					}
				}
				if (!plan->temporal)
					add_after(out, "final inference", fp.features + fp.operators + fp.activations + fp.attention,
							  "after the job: one forward pass over all %.0f nodes for the results", n);
				else
					add_after(out, "final inference", (double) out->batch_bytes,
							  "after the job: every node's rows as of its time, sampled batch by batch");
				break;
			}
		case GNN_LOOP_CLUSTER:
		case GNN_LOOP_SAINT:
			/* the partition or the walk sampler over the whole graph, then subgraphs of a part's size */
			full_pass(g, &s, n, arcs, true, &fp);
			add(out, false, "partition", 16.0 * (n + arcs) + 8.0 * n,
				"clusters (METIS) or walk normalisation over all %.0f nodes", n);
			add(out, gpu, "features", 4.0 * n * row_bytes(g), "the features, row-normalised, and the subgraphs' copies");
			add(out, gpu, "graph operators", fp.operators, "the subgraphs' operators and the full graph's");
			add(out, gpu, "activations", fp.activations / 2 + fp.attention / 2 + 600.0 * n,
				"a subgraph's outputs and gradients, the evaluation pass");
			break;
	}
	/* after training: the default embedding and class probabilities, computed once */
	add_after(out, "results", 4.0 * n * (s.hidden_sum / (s.layers > 1 ? s.layers - 1 : 1) + s.out[s.layers - 1]),
			  "after the job: the full-graph outputs published for gnn.embed and gnn.predict");
	if (g->fstore && plan->host_cache_bytes > 0)
		add(out, false, "feature cache", (double) plan->host_cache_bytes, "this process's cache of on-disk features");
	return GNN_OK;
}
