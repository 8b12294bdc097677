/*
 * test_infer_nodes: gnn_model_infer_nodes (inference on the k-hop
 * neighbourhood) against gnn_model_infer (the whole graph), row by row.
 *
 * Random directed graphs with a hub (thousands of in-neighbours), a node
 * with thousands of out-neighbours (its GCN column sum is what a k-hop block
 * alone gets wrong), isolated nodes, nodes with only out-edges, self loops
 * and edge weights; dense and sparse features, row-normalised or not; GCN,
 * GraphSAGE mean and pool, GAT with several heads; 1 to 3 layers, every
 * layer and -1 with and without softmax.  Models are freshly initialised
 * (training changes nothing here).  Also: the GCN degrees bit for bit
 * against the whole-graph block, the node limit, bad arguments.
 */
#include "check.h"
#include "infer/infer.h"
#include "train/train.h"

#include <math.h>

enum
{
	F = 12						/* feature width */
};

static gnn_rng rng;
static gnn_backend *be;

typedef struct tgraph
{
	const char *name;
	void	   *region;
	gnn_graph	g;
	int64_t		hub;			/* most in-neighbours */
	int64_t		spreader;		/* most out-neighbours */
	int64_t		isolated;
	int64_t		loop_only;		/* only a self loop */
	int64_t		source_only;	/* out-edges, no in-edges */
} tgraph;

/*
 * n nodes (ids 1000 + i, not edge endpoints only: the last 10 are isolated),
 * ~4n random skewed edges, node 3 a hub fed by most nodes, node 4 feeding
 * most nodes, a few self loops.
 */
static bool
make_graph(const char *name, int64_t n, bool directed, bool weighted, bool sparse, tgraph *t)
{
	int64_t		cap = 8 * n,
				m = 0;
	int64_t    *ids = malloc(sizeof(int64_t) * n),
			   *src = malloc(sizeof(int64_t) * cap),
			   *dst = malloc(sizeof(int64_t) * cap),
			   *spn = malloc(sizeof(int64_t) * n * F);
	int32_t    *spi = malloc(sizeof(int32_t) * n * F);
	float	   *w = malloc(sizeof(float) * cap),
			   *feat = malloc(sizeof(float) * n * F),
			   *spv = malloc(sizeof(float) * n * F);
	int64_t		nsp = 0,
				live = n - 10;
	gnn_graph_input in = {0};
	uint64_t	size;
	gnn_error	err;
	bool		ok;

#define EDGE(a, b) do { src[m] = 1000 + (a); dst[m] = 1000 + (b); \
		w[m] = 0.1f + 1.9f * gnn_rng_float(&rng); m++; } while (0)
	for (int64_t i = 0; i < n; i++)
		ids[i] = 1000 + i;
	for (int64_t e = 0; e < 3 * live; e++)
	{
		/* skewed: low indices attract edges */
		int64_t		a = (int64_t) (live * pow(gnn_rng_double(&rng), 2.0)),
					b = (int64_t) gnn_rng_below(&rng, live);

		if (a == 5 || b == 5 || a == 6 || b == 6)
			continue;			/* 5: isolated in [0, live) too; 6: only a self loop */
		if (a == 7)
			continue;			/* 7: no in-edges */
		EDGE(b, a);
	}
	for (int64_t i = 8; i < live; i++)
	{
		if (i % 4 != 0)
			EDGE(i, 3);			/* hub */
		if (i % 5 != 0)
			EDGE(4, i);			/* spreader */
		if (i % 97 == 0)
			EDGE(i, i);			/* self loops */
	}
	EDGE(6, 6);
	EDGE(7, 3);
	EDGE(7, 9);
#undef EDGE
	for (int64_t i = 0; i < n; i++)
		for (int k = 0; k < F; k++)
		{
			float		x = (i % 13 == 0) ? 0.0f : gnn_rng_float(&rng);

			feat[i * F + k] = x;
			if (x > 0.6f)
			{
				spn[nsp] = 1000 + i;
				spi[nsp] = k;
				spv[nsp++] = x;
			}
		}
	in.num_edges = m;
	in.src = src;
	in.dst = dst;
	in.weight = weighted ? w : NULL;
	in.undirected = !directed;
	in.num_nodes = n;
	in.node_ids = ids;
	if (sparse)
	{
		in.sparse_nnz = nsp;
		in.sp_node = spn;
		in.sp_index = spi;
		in.sp_value = spv;
		in.sparse_dim = F;
	}
	else
	{
		in.feat_dim = F;
		in.feat = feat;
	}
	memset(t, 0, sizeof(*t));
	t->name = name;
	ok = gnn_graph_build_region(&in, &t->region, &size, &t->g, &err) == GNN_OK;
	CHECK(ok, "build graph %s: %lld nodes, %lld arcs", name, (long long) t->g.num_nodes,
		  (long long) t->g.num_edges);
	t->hub = 3;
	t->spreader = 4;
	t->isolated = n - 1;
	t->loop_only = 6;
	t->source_only = 7;
	free(ids);
	free(src);
	free(dst);
	free(spn);
	free(spi);
	free(w);
	free(feat);
	free(spv);
	return ok;
}

/* distinct nodes within hops in-hops of the seeds (brute force over the reverse CSR) */
static int64_t
neighbourhood_size(const gnn_graph *g, const int64_t *idx, int64_t n, int hops)
{
	char	   *seen = calloc(g->num_nodes, 1);
	int64_t    *q = malloc(sizeof(int64_t) * (g->num_nodes + n));
	int64_t		nq = 0,
				lo = 0;

	for (int64_t i = 0; i < n; i++)
		if (!seen[idx[i]])
		{
			seen[idx[i]] = 1;
			q[nq++] = idx[i];
		}
	for (int h = 0; h < hops; h++)
	{
		int64_t		hi = nq;

		for (; lo < hi; lo++)
			for (int64_t e = g->rindptr[q[lo]]; e < g->rindptr[q[lo] + 1]; e++)
				if (!seen[g->rindices[e]])
				{
					seen[g->rindices[e]] = 1;
					q[nq++] = g->rindices[e];
				}
	}
	free(seen);
	free(q);
	return nq;
}

/* the largest |a - b| relative to max(1, |b|) */
static double
max_rel_diff(const float *a, const float *b, int64_t n)
{
	double		d = 0;

	for (int64_t i = 0; i < n; i++)
	{
		double		e = fabs((double) a[i] - b[i]) / fmax(1.0, fabs((double) b[i]));

		if (isnan(a[i]) || isnan(b[i]))
			e = INFINITY;
		d = fmax(d, e);
	}
	return d;
}

/* ------------------------------------------------------------------ degrees */

/* gnn_graph_gcn_degree against brute force, and normed blocks against the plain whole-graph block */
static void
test_degrees(const tgraph *t)
{
	const gnn_graph *g = &t->g;
	gnn_block	blk;
	gnn_dblock	a,
				b;
	double	   *din = malloc(sizeof(double) * g->num_nodes),
			   *dout = malloc(sizeof(double) * g->num_nodes),
			   *bin = calloc(g->num_nodes, sizeof(double)),
			   *bout = calloc(g->num_nodes, sizeof(double));
	double		worst = 0;
	bool		same;
	gnn_error	err;

	for (int64_t v = 0; v < g->num_nodes; v++)
	{
		bool		self = false;

		din[v] = gnn_graph_gcn_degree(g, v, true);
		dout[v] = gnn_graph_gcn_degree(g, v, false);
		for (int64_t e = g->rindptr[v]; e < g->rindptr[v + 1]; e++)
		{
			double		w = g->rweights ? g->rweights[e] : 1.0;

			bin[v] += w;
			bout[g->rindices[e]] += w;
			self |= g->rindices[e] == v;
		}
		if (!self)
		{
			bin[v] += 1;
			bout[v] += 1;
		}
	}
	for (int64_t v = 0; v < g->num_nodes; v++)
		worst = fmax(worst, fmax(fabs(din[v] - bin[v]), fabs(dout[v] - bout[v])) / fmax(1.0, bin[v] + bout[v]));
	CHECK(worst < 1e-12, "%s: GCN in/out degrees with self loops = brute force (worst %.3g)", t->name, worst);

	gnn_block_from_graph(g, &blk);
	same = gnn_dblock_create(be, &blk, &a, &err) == GNN_OK &&
		gnn_dblock_create_normed(be, &blk, din, dout, &b, &err) == GNN_OK &&
		a.loop.csr.nnz == b.loop.csr.nnz &&
		memcmp(a.loop.csr.values, b.loop.csr.values, sizeof(float) * a.loop.csr.nnz) == 0 &&
		memcmp(a.loop.csr.indices, b.loop.csr.indices, sizeof(int32_t) * a.loop.csr.nnz) == 0;
	CHECK(same, "%s: whole-graph block normalised with the graph's degrees is bit for bit the plain one", t->name);
	gnn_dblock_free(&a);
	gnn_dblock_free(&b);
	free(din);
	free(dout);
	free(bin);
	free(bout);
}

/* ------------------------------------------------------------------ rows */

typedef struct mspec
{
	const char *name;
	gnn_model_kind kind;
	gnn_aggr	aggr;
} mspec;

static const mspec models[] = {
	{"gcn", GNN_MODEL_GCN, GNN_AGGR_MEAN},
	{"sage-mean", GNN_MODEL_SAGE, GNN_AGGR_MEAN},
	{"sage-pool", GNN_MODEL_SAGE, GNN_AGGR_POOL},
	{"gat", GNN_MODEL_GAT, GNN_AGGR_MEAN},
};

static gnn_model *
make_model(const mspec *ms, int layers, int32_t in_dim)
{
	gnn_model_config c;
	gnn_model  *m = NULL;
	gnn_error	err;

	gnn_model_config_default(ms->kind, &c);
	c.aggr = ms->aggr;
	c.in_dim = in_dim;
	c.out_dim = 5;
	c.layers = layers;
	c.hidden = ms->kind == GNN_MODEL_GAT ? 4 : 10;
	c.heads = 3;
	c.out_heads = 2;
	if (gnn_model_create(be, &c, &rng, &m, &err) != GNN_OK)
	{
		CHECK(0, "create %s: %s", ms->name, err.msg);
		return NULL;
	}
	return m;
}

/*
 * Every layer (and -1 with and without softmax) of m on the query nodes:
 * the node rows equal the whole-graph rows.
 */
static void
compare_rows(const tgraph *t, gnn_model *m, const char *mname, bool rn, const int64_t *q, int64_t nq)
{
	const gnn_graph *g = &t->g;
	int			layers = gnn_model_config_of(m)->layers;

	for (int li = -2; li < layers; li++)
	{
		int			layer = li < 0 ? -1 : li;
		bool		softmax = li == -2;
		int32_t		cols = gnn_model_layer_dim(m, layer < 0 ? layers - 1 : layer);
		float	   *full = malloc(sizeof(float) * g->num_nodes * cols),
				   *part = malloc(sizeof(float) * nq * cols),
				   *want = malloc(sizeof(float) * nq * cols);
		int64_t		touched = -1,
					expect = neighbourhood_size(g, q, nq, layer < 0 ? layers : layer + 1);
		gnn_error	err;
		gnn_status	st;
		double		d = INFINITY;

		st = gnn_model_infer(m, g, rn, layer, softmax, full, &err);
		if (st == GNN_OK)
		{
			for (int64_t i = 0; i < nq; i++)
				memcpy(want + i * cols, full + q[i] * cols, sizeof(float) * cols);
			/* a stale forward of the whole graph must not leak into the node pass */
			st = gnn_model_infer_nodes(m, g, rn, layer, softmax, q, nq, 0, part, &touched, &err);
		}
		if (st == GNN_OK)
			d = max_rel_diff(part, want, nq * cols);
		CHECK(st == GNN_OK && d <= 1e-5 && touched == expect,
			  "%s %s %d-layer %s%s layer %d%s, %lld nodes: rows = full graph (max rel diff %.3g, %lld of %lld nodes touched)%s%s",
			  t->name, mname, layers, g->feat_kind == GNN_FEAT_SPARSE ? "sparse" : "dense",
			  rn ? " row-normalised" : "", layer, softmax ? " softmax" : "", (long long) nq, d,
			  (long long) touched, (long long) expect, st == GNN_OK ? "" : ": ", st == GNN_OK ? "" : err.msg);
		free(full);
		free(part);
		free(want);
	}
}

/* the special nodes, repeats, and some random ones */
static int64_t
query_nodes(const tgraph *t, int64_t *q, int64_t nrand)
{
	int64_t		n = 0;

	q[n++] = t->hub;
	q[n++] = t->isolated;
	q[n++] = t->spreader;
	q[n++] = t->loop_only;
	q[n++] = t->source_only;
	q[n++] = t->hub;
	q[n++] = 5;
	for (int64_t i = 0; i < nrand; i++)
		q[n++] = (int64_t) gnn_rng_below(&rng, t->g.num_nodes);
	q[n++] = t->isolated;
	return n;
}

static void
test_rows(const tgraph *t)
{
	int64_t		q[64];

	for (int mi = 0; mi < (int) (sizeof(models) / sizeof(models[0])); mi++)
		for (int layers = 1; layers <= 3; layers++)
		{
			gnn_model  *m = make_model(&models[mi], layers, t->g.feat_dim);

			if (!m)
				continue;
			for (int rn = 0; rn <= 1; rn++)
			{
				/* a single ordinary node, an isolated one twice (no edge at all), the awkward ones */
				q[0] = 17;
				compare_rows(t, m, models[mi].name, rn, q, 1);
				q[0] = q[1] = t->isolated;
				compare_rows(t, m, models[mi].name, rn, q, 2);
				compare_rows(t, m, models[mi].name, rn, q, query_nodes(t, q, 6));
			}
			gnn_model_free(m);
		}
}

/* a few thousand query nodes at once (repeats included) */
static void
test_many(const tgraph *t)
{
	int64_t		nq = 2500,
			   *q = malloc(sizeof(int64_t) * nq);
	gnn_model  *m = make_model(&models[1], 2, t->g.feat_dim);

	for (int64_t i = 0; i < nq; i++)
		q[i] = (int64_t) gnn_rng_below(&rng, t->g.num_nodes);
	q[0] = t->hub;
	q[nq - 1] = t->hub;
	if (m)
		compare_rows(t, m, "sage-mean", true, q, nq);
	gnn_model_free(m);
	free(q);
}

/* ------------------------------------------------------------------ limits, arguments */

static void
test_limits(const tgraph *t)
{
	const gnn_graph *g = &t->g;
	gnn_model  *m = make_model(&models[0], 2, g->feat_dim);
	int64_t		q[3] = {17, t->isolated, 17};
	int64_t		size = neighbourhood_size(g, q, 3, 2),
				hubq = t->hub,
				touched;
	float	   *out = malloc(sizeof(float) * 3 * 5);
	gnn_error	err;
	gnn_status	st;

	if (!m)
		return;
	touched = -1;
	st = gnn_model_infer_nodes(m, g, false, -1, false, q, 3, size, out, &touched, &err);
	CHECK(st == GNN_OK && touched == size, "max_nodes = the neighbourhood (%lld nodes) is enough (touched %lld)",
		  (long long) size, (long long) touched);
	touched = -1;
	st = gnn_model_infer_nodes(m, g, false, -1, false, q, 3, size - 1, out, &touched, &err);
	CHECK(st == GNN_ERR_LIMIT && touched > size - 1 && touched <= size,
		  "max_nodes one below the neighbourhood: LIMIT, touched %lld (%s)", (long long) touched, err.msg);
	touched = -1;
	st = gnn_model_infer_nodes(m, g, false, -1, false, &hubq, 1, 50, out, &touched, &err);
	CHECK(st == GNN_ERR_LIMIT && touched == 51,
		  "the hub's neighbourhood stops as soon as it passes 50 nodes (touched %lld)", (long long) touched);
	st = gnn_model_infer_nodes(m, g, false, -1, false, q, 3, 1, out, &touched, &err);
	CHECK(st == GNN_ERR_LIMIT && touched == 2, "more distinct query nodes than max_nodes: LIMIT (touched %lld)",
		  (long long) touched);
	st = gnn_model_infer_nodes(m, g, false, -1, false, q, 3, 0, out, NULL, &err);
	CHECK(st == GNN_OK, "max_nodes 0 is no limit; touched may be NULL");

	q[1] = g->num_nodes;
	touched = -1;
	st = gnn_model_infer_nodes(m, g, false, -1, false, q, 3, 0, out, &touched, &err);
	CHECK(st == GNN_ERR_INVALID && touched == 1, "node index num_nodes is INVALID (%s)", err.msg);
	q[1] = -1;
	CHECK(gnn_model_infer_nodes(m, g, false, -1, false, q, 3, 0, out, NULL, &err) == GNN_ERR_INVALID,
		  "node index -1 is INVALID");
	CHECK(gnn_model_infer_nodes(m, g, false, 2, false, q, 1, 0, out, NULL, &err) == GNN_ERR_INVALID &&
		  gnn_model_infer_nodes(m, g, false, -2, false, q, 1, 0, out, NULL, &err) == GNN_ERR_INVALID,
		  "layer 2 of a 2-layer model and layer -2 are INVALID");
	CHECK(gnn_model_infer_nodes(m, g, false, -1, false, q, -1, 0, out, NULL, &err) == GNN_ERR_INVALID,
		  "n < 0 is INVALID");
	touched = -1;
	CHECK(gnn_model_infer_nodes(m, g, false, -1, false, NULL, 0, 0, NULL, &touched, &err) == GNN_OK &&
		  touched == 0, "n = 0 is OK and touches nothing");
	gnn_model_free(m);
	free(out);
}

int
main(void)
{
	tgraph		gs[4];
	gnn_error	err;

	gnn_rng_seed(&rng, 20261201);
	if (gnn_backend_cpu_create(2, &be, &err) != GNN_OK)
	{
		CHECK(0, "cpu backend: %s", err.msg);
		return check_done();
	}
	if (!make_graph("directed-weighted-dense", 3000, true, true, false, &gs[0]) ||
		!make_graph("undirected-unweighted-sparse", 2000, false, false, true, &gs[1]) ||
		!make_graph("directed-unweighted-dense", 1500, true, false, false, &gs[2]) ||
		!make_graph("undirected-weighted-sparse", 1500, false, true, true, &gs[3]))
		return check_done();
	NOTE("hub in-degree %lld, spreader out-degree %lld",
		 (long long) gnn_graph_in_degree(&gs[0].g, gs[0].hub),
		 (long long) gnn_graph_out_degree(&gs[0].g, gs[0].spreader));
	CHECK(gnn_graph_in_degree(&gs[0].g, gs[0].hub) >= 2000 &&
		  gnn_graph_in_degree(&gs[0].g, gs[0].isolated) == 0 &&
		  gnn_graph_out_degree(&gs[0].g, gs[0].isolated) == 0 &&
		  gnn_graph_in_degree(&gs[0].g, gs[0].source_only) == 0 &&
		  gnn_graph_in_degree(&gs[0].g, gs[0].loop_only) == 1,
		  "the test graph has its hub, isolated, source-only and loop-only nodes");
	for (int i = 0; i < 4; i++)
		test_degrees(&gs[i]);
	for (int i = 0; i < 4; i++)
		test_rows(&gs[i]);
	test_many(&gs[0]);
	test_limits(&gs[0]);
	for (int i = 0; i < 4; i++)
		free(gs[i].region);
	gnn_backend_destroy(be);
	return check_done();
}
