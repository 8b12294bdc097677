/*
 * test_infer_typed: gnn_model_infer_nodes (inference on the k-hop
 * neighbourhood) on typed graphs against gnn_model_infer (the whole graph),
 * row by row, for every model kind: R-GCN (with bases and without),
 * heterogeneous GraphSAGE, and the type-blind GCN, GraphSAGE (mean, pool)
 * and GAT over the same graphs (their layer 0 reads the features' constant
 * column per node type, a per-type projection).
 *
 * The graphs (a small schema: customers, orders, products) have six
 * relations, reverse ones included, two of them between the same node types
 * (customer -> customer "follows" and "likes") with many pairs joined by
 * both, so a row holds the same neighbour twice with different relations; a
 * hub customer whose in-arcs, once its neighbours are already numbered,
 * take the k-hop builder's radix sort (duplicates and all); a product hub;
 * isolated nodes of every type.  Dense unweighted and sparse weighted
 * features / arcs.  Weights are perturbed away from their initialisation
 * (biases non-zero, per type for HSAGE).  Query nodes: some of each type,
 * repeated and unsorted.  1 and 2 threads.
 *
 * The comparisons mean something only if the outputs depend on the
 * relations and node types: the whole-graph outputs of the relational
 * models on the graph with its relations (rarc_type) or node types
 * (node_type) dropped are checked to differ, so a k-hop path dropping them
 * would fail the row comparisons.
 */
#include "check.h"
#include "infer/infer.h"
#include "train/train.h"

#include <math.h>

enum
{
	NC = 300,					/* customers: type 0, indices [0, NC) */
	NO = 700,					/* orders: type 1 */
	NP = 120,					/* products: type 2 */
	N = NC + NO + NP,
	NT = 3,
	NR = 6,
	FR = 6,						/* random feature columns */
	F = NT + FR,				/* [constant column per type | random] */
	HUB_C = 3,					/* customer followed (and liked) by most customers */
	HUB_P = NC + NO + 5,		/* product in most orders */
	ISO_C = NC - 1,				/* isolated customer, order, product */
	ISO_O = NC + NO - 1,
	ISO_P = N - 1
};

/* relations: src type -> dst type */
enum
{
	R_PLACES = 0,				/* customer -> order */
	R_PLACED_BY = 1,			/* order -> customer (reverse of R_PLACES) */
	R_CONTAINS = 2,				/* order -> product */
	R_IN = 3,					/* product -> order (reverse of R_CONTAINS) */
	R_FOLLOWS = 4,				/* customer -> customer */
	R_LIKES = 5					/* customer -> customer */
};
static const int32_t esrc[NR] = {0, 1, 1, 2, 0, 0};
static const int32_t edst[NR] = {1, 0, 2, 1, 0, 0};

static gnn_rng rng;

typedef struct tgraph
{
	const char *name;
	void	   *region;
	gnn_graph	g;
} tgraph;

static int64_t
node_of(int t, int64_t i)
{
	return t == 0 ? i : t == 1 ? NC + i : NC + NO + i;
}

static bool
make_graph(const char *name, bool weighted, bool sparse, tgraph *t)
{
	int64_t		cap = 16 * N,
				m = 0,
				nsp = 0;
	int64_t    *ids = malloc(sizeof(int64_t) * N),
			   *src = malloc(sizeof(int64_t) * cap),
			   *dst = malloc(sizeof(int64_t) * cap),
			   *spn = malloc(sizeof(int64_t) * N * F);
	int16_t    *et = malloc(sizeof(int16_t) * cap),
			   *nt = malloc(sizeof(int16_t) * N);
	int32_t    *spi = malloc(sizeof(int32_t) * N * F);
	float	   *w = malloc(sizeof(float) * cap),
			   *feat = malloc(sizeof(float) * N * F),
			   *spv = malloc(sizeof(float) * N * F);
	gnn_graph_input in = {0};
	uint64_t	size;
	gnn_error	err;
	bool		ok;

#define ARC(a, b, r) do { src[m] = (a); dst[m] = (b); et[m] = (r); \
		w[m] = 0.1f + 1.9f * gnn_rng_float(&rng); m++; } while (0)
	for (int64_t v = 0; v < N; v++)
	{
		ids[v] = v;
		nt[v] = v < NC ? 0 : v < NC + NO ? 1 : 2;
	}
	/* each order (but the isolated one) placed by one customer, with 1-4 products */
	for (int64_t o = 0; o < NO - 1; o++)
	{
		int64_t		ov = node_of(1, o),
					c = (int64_t) gnn_rng_below(&rng, NC - 1),
					k = 1 + (int64_t) gnn_rng_below(&rng, 4);

		ARC(c, ov, R_PLACES);
		ARC(ov, c, R_PLACED_BY);
		for (int64_t j = 0; j < k; j++)
		{
			int64_t		p = o % 3 == 0 ? HUB_P : node_of(2, (int64_t) gnn_rng_below(&rng, NP - 1));

			ARC(ov, p, R_CONTAINS);
			ARC(p, ov, R_IN);
		}
	}
	/* customers follow and like each other; many pairs both (a neighbour twice in a row) */
	for (int64_t c = 0; c < NC - 1; c++)
	{
		for (int j = 0; j < 3; j++)
		{
			int64_t		d = (int64_t) gnn_rng_below(&rng, NC - 1);

			ARC(c, d, R_FOLLOWS);
			if (j != 1)
				ARC(c, d, R_LIKES);
		}
		if (c != HUB_C && c % 5 != 0)
			ARC(c, HUB_C, R_FOLLOWS);
		if (c != HUB_C && c % 2 == 0)
			ARC(c, HUB_C, R_LIKES);
		if (c % 37 == 0)
			ARC(c, c, R_LIKES);	/* self loops */
	}
#undef ARC
	for (int64_t v = 0; v < N; v++)
		for (int k = 0; k < F; k++)
		{
			float		x = k < NT ? (k == nt[v] ? 1.0f : 0.0f) : gnn_rng_float(&rng) * 2.0f - 1.0f;

			if (k >= NT && (v % 11 == 0 || (k - NT) % NT == nt[v]))
				x = 0.0f;		/* some rows only their type, some columns per type */
			feat[v * F + k] = x;
			if (x != 0.0f && (k < NT || fabsf(x) > 0.3f))
			{
				spn[nsp] = v;
				spi[nsp] = k;
				spv[nsp++] = x;
			}
		}
	in.num_edges = m;
	in.src = src;
	in.dst = dst;
	in.weight = weighted ? w : NULL;
	in.num_nodes = N;
	in.node_ids = ids;
	in.num_node_types = NT;
	in.node_type = nt;
	in.num_edge_types = NR;
	in.edge_type = et;
	in.etype_src = esrc;
	in.etype_dst = edst;
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
	CHECK(ok && t->g.rarc_type && t->g.node_type && t->g.num_edge_types == NR && t->g.num_node_types == NT,
		  "build typed graph %s: %lld nodes, %lld arcs%s%s", name, (long long) t->g.num_nodes,
		  (long long) t->g.num_edges, ok ? "" : ": ", ok ? "" : err.msg);
	free(ids);
	free(src);
	free(dst);
	free(spn);
	free(et);
	free(nt);
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

/* ------------------------------------------------------------------ models */

typedef struct mspec
{
	const char *name;
	gnn_model_kind kind;
	gnn_aggr	aggr;
	int32_t		bases;
} mspec;

static const mspec models[] = {
	{"rgcn-bases", GNN_MODEL_RGCN, GNN_AGGR_MEAN, 2},
	{"rgcn-full", GNN_MODEL_RGCN, GNN_AGGR_MEAN, 0},
	{"hsage", GNN_MODEL_HSAGE, GNN_AGGR_MEAN, 0},
	{"gcn", GNN_MODEL_GCN, GNN_AGGR_MEAN, 0},
	{"sage-mean", GNN_MODEL_SAGE, GNN_AGGR_MEAN, 0},
	{"sage-pool", GNN_MODEL_SAGE, GNN_AGGR_POOL, 0},
	{"gat", GNN_MODEL_GAT, GNN_AGGR_MEAN, 0},
};

/* a model with its weights (biases, basis coefficients included) perturbed off their initialisation */
static gnn_model *
make_model(gnn_backend *be, const mspec *ms, int layers, const gnn_graph *g)
{
	gnn_model_config c;
	gnn_model  *m = NULL;
	gnn_error	err;
	size_t		nw;
	float	   *w;
	bool		ok;

	gnn_model_config_default(ms->kind, &c);
	c.aggr = ms->aggr;
	c.in_dim = g->feat_dim;
	c.out_dim = 5;
	c.layers = layers;
	c.hidden = ms->kind == GNN_MODEL_GAT ? 4 : 10;
	c.heads = 3;
	c.out_heads = 2;
	c.num_relations = g->num_edge_types;
	c.num_node_types = g->num_node_types;
	c.num_bases = ms->bases;
	if (gnn_model_create(be, &c, &rng, &m, &err) != GNN_OK)
	{
		CHECK(0, "create %s: %s", ms->name, err.msg);
		return NULL;
	}
	nw = gnn_model_weights_count(m);
	w = malloc(sizeof(float) * nw);
	ok = gnn_model_weights_get(m, w, &err) == GNN_OK;
	for (size_t i = 0; ok && i < nw; i++)
		w[i] += 0.3f * (2.0f * gnn_rng_float(&rng) - 1.0f);
	ok = ok && gnn_model_weights_set(m, w, &err) == GNN_OK;
	free(w);
	if (!ok)
	{
		CHECK(0, "perturb %s's weights: %s", ms->name, err.msg);
		gnn_model_free(m);
		return NULL;
	}
	return m;
}

/*
 * Every layer (and -1 with and without softmax) of m on the query nodes:
 * the node rows equal the whole-graph rows, and the neighbourhood is what
 * brute force counts.
 */
static void
compare_rows(const tgraph *t, gnn_model *m, const char *mname, int nthreads, bool rn,
			 const int64_t *q, int64_t nq)
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
			st = gnn_model_infer_nodes(m, g, rn, layer, softmax, q, nq, 0, part, &touched, &err);
		}
		if (st == GNN_OK)
			d = max_rel_diff(part, want, nq * cols);
		CHECK(st == GNN_OK && d <= 1e-5 && touched == expect,
			  "%s %d thread(s) %s %d-layer%s layer %d%s, %lld nodes: rows = full graph (max rel diff %.3g, %lld of %lld nodes touched)%s%s",
			  t->name, nthreads, mname, layers, rn ? " row-normalised" : "", layer, softmax ? " softmax" : "",
			  (long long) nq, d, (long long) touched, (long long) expect, st == GNN_OK ? "" : ": ",
			  st == GNN_OK ? "" : err.msg);
		free(full);
		free(part);
		free(want);
	}
}

/*
 * The whole-graph output of m on g differs from its output on g with the
 * relations (drop_rel) or node types dropped: the rows compared above
 * depend on what the k-hop blocks must carry.
 */
static void
check_sensitive(const tgraph *t, gnn_model *m, const char *mname, bool drop_rel)
{
	const gnn_graph *g = &t->g;
	gnn_graph	blind = *g;
	int			layers = gnn_model_config_of(m)->layers;
	int32_t		cols = gnn_model_layer_dim(m, layers - 1);
	float	   *a = malloc(sizeof(float) * g->num_nodes * cols),
			   *b = malloc(sizeof(float) * g->num_nodes * cols);
	double		worst[NT] = {0};
	gnn_error	err;
	bool		ok;

	if (drop_rel)
		blind.rarc_type = NULL;
	else
		blind.node_type = NULL;
	ok = gnn_model_infer(m, g, false, -1, false, a, &err) == GNN_OK &&
		gnn_model_infer(m, &blind, false, -1, false, b, &err) == GNN_OK;
	for (int64_t v = 0; ok && v < g->num_nodes; v++)
	{
		int32_t		ty = gnn_graph_type_of(g, v);

		worst[ty] = fmax(worst[ty], max_rel_diff(a + v * cols, b + v * cols, cols));
	}
	/* without node types every node is type 0: types 1 and 2 change */
	CHECK(ok && (drop_rel ? worst[0] > 1e-2 : true) && worst[1] > 1e-2 && worst[2] > 1e-2,
		  "%s %s %d-layer: dropping the %s changes the whole-graph output (per type %.3g %.3g %.3g)",
		  t->name, mname, layers, drop_rel ? "relations" : "node types", worst[0], worst[1], worst[2]);
	free(a);
	free(b);
}

/* some nodes of each type, repeated, unsorted, hubs and isolated ones included */
static int64_t
query_nodes(int64_t *q)
{
	int64_t		n = 0;

	/* customers first: the hub's row, built after them, finds them numbered already */
	for (int64_t i = 0; i < 40; i++)
		q[n++] = node_of(0, (int64_t) gnn_rng_below(&rng, NC - 1));
	q[n++] = HUB_C;
	q[n++] = node_of(1, 17);
	q[n++] = HUB_P;
	q[n++] = ISO_P;
	q[n++] = node_of(2, 3);
	q[n++] = ISO_C;
	q[n++] = node_of(1, 400);
	q[n++] = HUB_C;
	q[n++] = ISO_O;
	q[n++] = node_of(0, 10);
	for (int64_t i = 0; i < 4; i++)
	{
		q[n++] = node_of(1, (int64_t) gnn_rng_below(&rng, NO));
		q[n++] = node_of(2, (int64_t) gnn_rng_below(&rng, NP));
	}
	q[n++] = node_of(1, 17);
	q[n++] = HUB_P;
	return n;
}

static void
test_rows(const tgraph *t, gnn_backend *be, int nthreads)
{
	int64_t		q[80];
	int64_t		nq = query_nodes(q);

	for (int mi = 0; mi < (int) (sizeof(models) / sizeof(models[0])); mi++)
		for (int layers = 1; layers <= 2; layers++)
		{
			gnn_model  *m = make_model(be, &models[mi], layers, &t->g);
			int64_t		one[2];

			if (!m)
				continue;
			if (nthreads == 1 && models[mi].kind == GNN_MODEL_RGCN)
				check_sensitive(t, m, models[mi].name, true);
			if (nthreads == 1 && models[mi].kind == GNN_MODEL_HSAGE)
			{
				check_sensitive(t, m, models[mi].name, true);
				check_sensitive(t, m, models[mi].name, false);
			}
			compare_rows(t, m, models[mi].name, nthreads, t->g.feat_kind == GNN_FEAT_SPARSE, q, nq);
			/* a single order; a product twice */
			one[0] = node_of(1, 123);
			compare_rows(t, m, models[mi].name, nthreads, false, one, 1);
			one[0] = one[1] = node_of(2, 7);
			compare_rows(t, m, models[mi].name, nthreads, false, one, 2);
			gnn_model_free(m);
		}
}

int
main(void)
{
	tgraph		gs[2];
	gnn_error	err;

	gnn_rng_seed(&rng, 20261207);
	if (!make_graph("dense-unweighted", false, false, &gs[0]) ||
		!make_graph("sparse-weighted", true, true, &gs[1]))
		return check_done();
	{
		const gnn_graph *g = &gs[0].g;
		int64_t		dup = 0;

		for (int64_t e = g->rindptr[HUB_C] + 1; e < g->rindptr[HUB_C + 1]; e++)
			dup += g->rindices[e] == g->rindices[e - 1];
		CHECK(gnn_graph_in_degree(g, HUB_C) > 200 && dup > 50 && gnn_graph_in_degree(g, HUB_P) > 200 &&
			  gnn_graph_in_degree(g, ISO_C) == 0 && gnn_graph_out_degree(g, ISO_O) == 0 &&
			  gnn_graph_in_degree(g, ISO_P) == 0,
			  "the test graph has its hubs (customer in-degree %lld, %lld neighbours twice; product %lld) and isolated nodes",
			  (long long) gnn_graph_in_degree(g, HUB_C), (long long) dup,
			  (long long) gnn_graph_in_degree(g, HUB_P));
	}
	for (int nthreads = 1; nthreads <= 2; nthreads++)
	{
		gnn_backend *be;

		if (gnn_backend_cpu_create(nthreads, &be, &err) != GNN_OK)
		{
			CHECK(0, "cpu backend: %s", err.msg);
			break;
		}
		for (int i = 0; i < 2; i++)
			test_rows(&gs[i], be, nthreads);
		gnn_backend_destroy(be);
	}
	for (int i = 0; i < 2; i++)
		free(gs[i].region);
	return check_done();
}
