/*
 * infer_nodes_bench.c: gnn_model_infer_nodes (exact inference on a few
 * nodes' k-hop neighbourhood) on an in-memory R-MAT graph, no database.
 *
 *   infer_nodes_bench [NODES [UNDIRECTED_EDGES [DIM [QUERIES]]]]
 *   defaults: 1000000 nodes, 10000000 edges made undirected (~20M arcs),
 *   64-dim dense features, 50 queries per setting
 *
 * A 2-layer GraphSAGE (mean, hidden 128, 16 classes, untrained: the cost
 * does not depend on the weights).  For queries of 1 and 10 random nodes
 * with at least one edge, on 1 and 2 threads: the time of the output layer
 * (2 hops) and of layer 0 (1 hop), as median / p90 / max, with the
 * neighbourhood sizes; the same with max_nodes = 20000 (the calls that
 * would touch more return GNN_ERR_LIMIT, and what that costs); and one
 * full-graph gnn_model_infer for scale.  R-MAT's hubs make many 2-hop
 * neighbourhoods large, so the spread matters more than the median.
 */
#include "infer/infer.h"
#include "train/train.h"
#include "bench_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void
build(int64_t n, int64_t m, int dim, gnn_rng *r, void **region, gnn_graph *g)
{
	int64_t    *src = malloc(sizeof(int64_t) * m),
			   *dst = malloc(sizeof(int64_t) * m),
			   *ids = malloc(sizeof(int64_t) * n);
	float	   *feat = malloc(sizeof(float) * n * dim);
	gnn_graph_input in = {0};
	uint64_t	size;
	gnn_error	err;
	int			scale = 0;
	double		t0 = now_s();

	while ((1LL << scale) < n)
		scale++;
	for (int64_t e = 0; e < m; e++)
		rmat_edge(r, scale, n, false, &src[e], &dst[e]);
	for (int64_t i = 0; i < n; i++)
		ids[i] = i;
	for (int64_t i = 0; i < n * dim; i++)
		feat[i] = gnn_rng_float(r);
	in.num_edges = m;
	in.src = src;
	in.dst = dst;
	in.undirected = true;
	in.num_nodes = n;
	in.node_ids = ids;
	in.feat_dim = dim;
	in.feat = feat;
	if (gnn_graph_build_region(&in, region, &size, g, &err) != GNN_OK)
	{
		fprintf(stderr, "build: %s\n", err.msg);
		exit(1);
	}
	free(src);
	free(dst);
	free(ids);
	free(feat);
	printf("graph: %lld nodes, %lld arcs, %d-dim dense features, generated+built in %.1f s\n",
		   (long long) g->num_nodes, (long long) g->num_edges, dim, now_s() - t0);
}

/* nq queries of `size` random nodes with an in-edge: time and touched, summarised */
static void
run(gnn_model *m, const gnn_graph *g, int layer, int size, int nq, int64_t max_nodes, gnn_rng *r,
	int nt)
{
	double	   *t = malloc(sizeof(double) * nq),
			   *tn = malloc(sizeof(double) * nq);
	float	   *out = malloc(sizeof(float) * size * 128);
	int			refused = 0;
	double		trefused = 0;

	for (int i = 0; i < nq; i++)
	{
		int64_t		idx[64],
					touched = 0;
		gnn_error	err;
		gnn_status	st;
		double		t0;

		for (int j = 0; j < size; j++)
			do
				idx[j] = (int64_t) gnn_rng_below(r, g->num_nodes);
			while (gnn_graph_in_degree(g, idx[j]) == 0);
		t0 = now_s();
		st = gnn_model_infer_nodes(m, g, false, layer, false, idx, size, max_nodes, out, &touched, &err);
		t[i] = now_s() - t0;
		tn[i] = (double) touched;
		if (st == GNN_ERR_LIMIT)
		{
			refused++;
			trefused += t[i];
			t[i] = -1;
		}
		else if (st != GNN_OK)
		{
			fprintf(stderr, "infer_nodes: %s\n", err.msg);
			exit(1);
		}
	}
	{
		int			k = 0;

		for (int i = 0; i < nq; i++)
			if (t[i] >= 0)
				t[k++] = t[i];
		qsort(t, k, sizeof(double), cmp_double);
		qsort(tn, nq, sizeof(double), cmp_double);
		printf("threads %d, layer %2d, %2d nodes%s: ", nt, layer, size,
			   max_nodes > 0 ? ", max_nodes 20000" : "");
		if (k > 0)
			printf("%.2f / %.2f / %.2f ms (median / p90 / max of %d)", t[k / 2] * 1e3, t[k * 9 / 10] * 1e3,
				   t[k - 1] * 1e3, k);
		if (refused)
			printf("; %d refused (LIMIT) in %.3f ms each", refused, trefused / refused * 1e3);
		printf("; touched %.0f / %.0f / %.0f nodes\n", tn[nq / 2], tn[nq * 9 / 10], tn[nq - 1]);
	}
	free(t);
	free(tn);
	free(out);
}

int
main(int argc, char **argv)
{
	int64_t		n = argc > 1 ? atoll(argv[1]) : 1000000;
	int64_t		m = argc > 2 ? atoll(argv[2]) : 10000000;
	int			dim = argc > 3 ? atoi(argv[3]) : 64;
	int			nq = argc > 4 ? atoi(argv[4]) : 50;
	gnn_rng		r;
	void	   *region;
	gnn_graph	g;
	gnn_backend *be;
	gnn_model  *model;
	gnn_model_config mc;
	gnn_error	err;

	gnn_rng_seed(&r, 1);
	build(n, m, dim, &r, &region, &g);
	gnn_model_config_default(GNN_MODEL_SAGE, &mc);
	mc.in_dim = dim;
	mc.out_dim = 16;
	mc.hidden = 128;
	mc.layers = 2;
	for (int nt = 1; nt <= 2; nt++)
	{
		if (gnn_backend_cpu_create(nt, &be, &err) != GNN_OK ||
			gnn_model_create(be, &mc, &r, &model, &err) != GNN_OK)
		{
			fprintf(stderr, "setup: %s\n", err.msg);
			return 1;
		}
		for (int layer = -1; layer <= 0; layer++)
		{
			run(model, &g, layer, 1, nq, 0, &r, nt);
			run(model, &g, layer, 10, nq, 0, &r, nt);
		}
		run(model, &g, -1, 1, nq, 20000, &r, nt);
		run(model, &g, -1, 10, nq, 20000, &r, nt);
		if (nt == 2)
		{
			float	   *out = malloc(sizeof(float) * g.num_nodes * mc.out_dim);
			double		t0 = now_s();

			if (gnn_model_infer(model, &g, false, -1, false, out, &err) != GNN_OK)
			{
				fprintf(stderr, "infer: %s\n", err.msg);
				return 1;
			}
			printf("threads 2, full-graph gnn_model_infer (all %lld nodes): %.0f ms\n",
				   (long long) g.num_nodes, (now_s() - t0) * 1e3);
			free(out);
		}
		gnn_model_free(model);
		gnn_backend_destroy(be);
	}
	free(region);
	return 0;
}
