/*
 * test_graph.c: CSR build, id mapping, merging, symmetrising, node data,
 * error reporting and region validation.
 */
#include "check.h"
#include "graph.h"

#include <math.h>

static int
row_has(const int64_t *ptr, const int32_t *idx, int64_t v, int32_t u)
{
	for (int64_t p = ptr[v]; p < ptr[v + 1]; p++)
		if (idx[p] == u)
			return 1;
	return 0;
}

static void
test_small_directed(void)
{
	/* ids far apart and negative: exercises the hash id map */
	int64_t		src[] = {1000000007, -5, 42, 42, 42, -5};
	int64_t		dst[] = {-5, 42, 1000000007, 1000000007, 42, 42};
	float		w[] = {1, 2, 3, 4, 5, 6};
	gnn_graph_input in = {0};
	gnn_graph	g;
	gnn_error	err;
	void	   *region;
	uint64_t	size;

	in.num_edges = 6;
	in.src = src;
	in.dst = dst;
	in.weight = w;
	CHECK(gnn_graph_build_region(&in, &region, &size, &g, &err) == GNN_OK, "directed build: %s", err.msg);
	CHECK(g.num_nodes == 3, "three nodes from endpoints (got %lld)", (long long) g.num_nodes);
	CHECK(g.ids[0] == -5 && g.ids[1] == 42 && g.ids[2] == 1000000007, "ids sorted ascending");
	/* arcs: 1e9+7->-5, -5->42 (x2 merged, w 2+6), 42->1e9+7 (x2 merged, w 3+4), 42->42 self loop */
	CHECK(g.num_edges == 4, "duplicates merged into 4 arcs (got %lld)", (long long) g.num_edges);
	int64_t		a = gnn_graph_find(&g, -5),
				b = gnn_graph_find(&g, 42),
				c = gnn_graph_find(&g, 1000000007);

	CHECK(a == 0 && b == 1 && c == 2 && gnn_graph_find(&g, 7) == -1, "find maps ids and rejects unknown");
	CHECK(row_has(g.indptr, g.indices, b, (int32_t) b), "self loop kept");
	CHECK(gnn_graph_out_degree(&g, b) == 2 && gnn_graph_in_degree(&g, b) == 2, "degrees of 42");
	float		wab = -1;

	for (int64_t p = g.indptr[a]; p < g.indptr[a + 1]; p++)
		if (g.indices[p] == b)
			wab = g.weights[p];
	CHECK(fabsf(wab - 8.0f) < 1e-6, "merged weights summed (got %g)", (double) wab);
	/* reverse CSR is the transpose */
	int			ok = 1;

	for (int64_t v = 0; v < g.num_nodes; v++)
		for (int64_t p = g.indptr[v]; p < g.indptr[v + 1]; p++)
			ok &= row_has(g.rindptr, g.rindices, g.indices[p], (int32_t) v);
	CHECK(ok, "reverse CSR is the transpose");
	free(region);
}

static void
test_undirected_nodes(void)
{
	int64_t		src[] = {1, 2, 3};
	int64_t		dst[] = {2, 3, 1};
	int64_t		ids[] = {3, 1, 2, 9};	/* node 9 isolated; rows out of order */
	float		feat[] = {3, 3, 1, 1, 2, 2, 9, 9};
	int32_t		labels[] = {0, 1, -1, 2};
	uint8_t		split[] = {GNN_SPLIT_TRAIN, GNN_SPLIT_VAL, GNN_SPLIT_NONE, GNN_SPLIT_TEST};
	gnn_graph_input in = {0};
	gnn_graph	g;
	gnn_error	err;
	void	   *region;
	uint64_t	size;

	in.num_edges = 3;
	in.src = src;
	in.dst = dst;
	in.undirected = true;
	in.num_nodes = 4;
	in.node_ids = ids;
	in.feat_dim = 2;
	in.feat = feat;
	in.labels = labels;
	in.split = split;
	CHECK(gnn_graph_build_region(&in, &region, &size, &g, &err) == GNN_OK, "undirected build: %s", err.msg);
	CHECK(g.num_nodes == 4 && g.num_edges == 6, "4 nodes, 6 arcs (got %lld, %lld)",
		  (long long) g.num_nodes, (long long) g.num_edges);
	CHECK(gnn_graph_out_degree(&g, 3) == 0, "isolated node has degree 0");
	CHECK(g.feat_kind == GNN_FEAT_DENSE && g.feat[0] == 1 && g.feat[2] == 2 && g.feat[4] == 3 && g.feat[6] == 9,
		  "features reordered to id order");
	CHECK(g.labels[0] == 1 && g.labels[1] == -1 && g.labels[2] == 0 && g.labels[3] == 2 && g.num_classes == 3,
		  "labels reordered, classes counted");
	CHECK(g.n_train == 1 && g.n_val == 1 && g.n_test == 1, "split counts");
	free(region);
}

static void
test_errors(void)
{
	int64_t		src[] = {1, 2};
	int64_t		dst[] = {2, 77};
	int64_t		ids[] = {1, 2, 3};
	int64_t		dup[] = {1, 2, 1};
	float		feat[] = {0, 1, NAN};
	gnn_graph_input in = {0};
	gnn_graph	g;
	void	   *r;
	uint64_t	sz;
	gnn_error	err;

	in.num_edges = 2;
	in.src = src;
	in.dst = dst;
	in.num_nodes = 3;
	in.node_ids = ids;
	CHECK(gnn_graph_build_region(&in, &r, &sz, &g, &err) == GNN_ERR_DANGLING && err.row == 1 && err.id == 77,
		  "dangling edge reported with row and id: %s", err.msg);
	in.skip_dangling = true;
	CHECK(gnn_graph_build_region(&in, &r, &sz, &g, &err) == GNN_OK && g.num_edges == 1,
		  "dangling edge skipped on request");
	free(r);
	in.skip_dangling = false;
	in.num_edges = 1;
	in.node_ids = dup;
	CHECK(gnn_graph_build_region(&in, &r, &sz, &g, &err) == GNN_ERR_DUPLICATE && err.id == 1 && err.row == 2,
		  "duplicate node id reported, rows counted from 1: %s", err.msg);
	in.node_ids = ids;
	in.feat_dim = 1;
	in.feat = feat;
	CHECK(gnn_graph_build_region(&in, &r, &sz, &g, &err) == GNN_ERR_BAD_VALUE && err.id == 3,
		  "NaN feature reported: %s", err.msg);
}

/* a node list without edges: every node isolated, a valid region; no nodes: EMPTY */
static void
test_edgeless(void)
{
	int64_t		ids[] = {30, 10, 20};
	float		feat[] = {3, 3, 1, 1, 2, 2};
	int32_t		labels[] = {1, 0, -1};
	uint8_t		split[] = {GNN_SPLIT_TRAIN, GNN_SPLIT_VAL, GNN_SPLIT_TEST};
	gnn_graph_input in = {0};
	gnn_graph	g,
				g2;
	void	   *r = NULL;
	uint64_t	sz;
	gnn_error	err;
	bool		ok;

	in.num_nodes = 3;
	in.node_ids = ids;
	in.feat_dim = 2;
	in.feat = feat;
	in.labels = labels;
	in.split = split;
	if (!CHECK(gnn_graph_build_region(&in, &r, &sz, &g, &err) == GNN_OK, "nodes without edges build: %s",
			   err.msg))
		return;
	ok = g.num_nodes == 3 && g.num_edges == 0 && g.ids[0] == 10 && g.ids[2] == 30;
	for (int v = 0; v <= 3; v++)
		ok &= g.indptr[v] == 0 && g.rindptr[v] == 0;
	CHECK(ok, "three isolated nodes, empty CSR and reverse CSR");
	CHECK(g.feat[0] == 1 && g.feat[4] == 3 && g.labels[0] == 0 && g.labels[1] == -1 && g.labels[2] == 1 &&
		  g.num_classes == 2 && g.n_train == 1 && g.n_val == 1 && g.n_test == 1,
		  "node data of an edgeless graph in id order");
	CHECK(gnn_graph_attach(r, sz, &g2, &err) == GNN_OK && g2.num_edges == 0 && g2.num_nodes == 3,
		  "the region validator accepts an edgeless graph: %s", err.msg);
	free(r);
	/* weights given for no edges */
	in.weight = feat;
	CHECK(gnn_graph_build_region(&in, &r, &sz, &g, &err) == GNN_OK && g.num_edges == 0, "edgeless, weighted: %s",
		  err.msg);
	free(r);
	r = NULL;

	memset(&in, 0, sizeof(in));
	CHECK(gnn_graph_build_region(&in, &r, &sz, &g, &err) == GNN_ERR_EMPTY && !r && strstr(err.msg, "no nodes"),
		  "no nodes and no edges: EMPTY: %s", err.msg);
	in.node_ids = ids;
	CHECK(gnn_graph_build_region(&in, &r, &sz, &g, &err) == GNN_ERR_EMPTY && !r,
		  "an empty node list and no edges: EMPTY: %s", err.msg);
	free(r);
}

static void
test_sparse_and_corruption(void)
{
	int64_t		src[] = {10, 11};
	int64_t		dst[] = {11, 12};
	int64_t		spn[] = {12, 10, 10};
	int32_t		spi[] = {4, 0, 2};
	float		spv[] = {1.5f, 1, 2};
	gnn_graph_input in = {0};
	gnn_graph	g,
				g2;
	gnn_error	err;
	void	   *region;
	uint64_t	size;

	in.num_edges = 2;
	in.src = src;
	in.dst = dst;
	in.sparse_nnz = 3;
	in.sp_node = spn;
	in.sp_index = spi;
	in.sp_value = spv;
	in.sparse_dim = 100000;		/* wide and sparse: dim x nodes far beyond the region's size */
	CHECK(gnn_graph_build_region(&in, &region, &size, &g, &err) == GNN_OK, "sparse build: %s", err.msg);
	CHECK(g.feat_kind == GNN_FEAT_SPARSE && g.feat_dim == 100000 && g.feat_nnz == 3, "sparse dims");
	CHECK(g.fptr[1] - g.fptr[0] == 2 && g.fidx[0] == 0 && g.fidx[1] == 2 && g.fval[1] == 2.0f &&
		  g.fptr[3] - g.fptr[2] == 1 && g.fval[2] == 1.5f, "sparse rows sorted by index");
	CHECK(gnn_graph_attach(region, size - 1, &g2, &err) == GNN_ERR_CORRUPT, "short region rejected");
	((unsigned char *) region)[40] ^= 1;
	CHECK(gnn_graph_attach(region, size, &g2, &err) == GNN_ERR_CORRUPT, "corrupt header rejected");
	free(region);
}

/* Cora from ../shared/data: 2708 nodes, 10556 arcs once symmetrised without self loops */
static void
test_cora(void)
{
	const char *dir = check_data_dir();

	if (!dir)
	{
		CHECK_SKIP("../shared/data not found", "cora loads with 2708 nodes and 10556 arcs");
		return;
	}
	char		path[600];
	FILE	   *f;

	snprintf(path, sizeof(path), "%s/cora/edges.csv", dir);
	f = fopen(path, "r");
	int64_t    *src = malloc(sizeof(int64_t) * 6000),
			   *dst = malloc(sizeof(int64_t) * 6000);
	int64_t		m = 0;
	char		line[256];

	if (!fgets(line, sizeof(line), f))
		return;
	while (fgets(line, sizeof(line), f) && m < 6000)
		if (sscanf(line, "%ld,%ld", &src[m], &dst[m]) == 2)
			m++;
	fclose(f);
	gnn_graph_input in = {0};
	gnn_graph	g;
	gnn_error	err;
	void	   *region;
	uint64_t	size;

	in.num_edges = m;
	in.src = src;
	in.dst = dst;
	in.undirected = true;
	CHECK(gnn_graph_build_region(&in, &region, &size, &g, &err) == GNN_OK, "cora build: %s", err.msg);
	CHECK(m == 5429 && g.num_nodes == 2708 && g.num_edges == 10556,
		  "cora: %lld rows -> %lld nodes, %lld arcs", (long long) m, (long long) g.num_nodes,
		  (long long) g.num_edges);
	free(region);
	free(src);
	free(dst);
}

/* random graphs against a naive reference: sorted unique rows, merged weights, transpose */
static void
test_random_reference(void)
{
	gnn_rng		rng;
	int			ok = 1;

	gnn_rng_seed(&rng, 99);
	for (int trial = 0; trial < 20 && ok; trial++)
	{
		int64_t		n = 1 + gnn_rng_below(&rng, 300);
		int64_t		m = gnn_rng_below(&rng, 3000) + (trial == 0 ? 200000 : 0);
		bool		sparse_ids = trial % 2;
		int64_t    *src = malloc(8 * (m + 1)),
				   *dst = malloc(8 * (m + 1));
		float	   *w = malloc(4 * (m + 1));
		double	   *ref = calloc(n * n, sizeof(double));
		char	   *has = calloc(n * n, 1);
		gnn_graph_input in = {0};
		gnn_graph	g;
		gnn_error	err;
		void	   *region;
		uint64_t	size;

		for (int64_t e = 0; e < m; e++)
		{
			int64_t		a = gnn_rng_below(&rng, n),
						b = gnn_rng_below(&rng, n);

			src[e] = sparse_ids ? a * 1000003 - 7 : a;
			dst[e] = sparse_ids ? b * 1000003 - 7 : b;
			w[e] = (float) (1 + gnn_rng_below(&rng, 4));
			ref[a * n + b] += w[e];
			has[a * n + b] = 1;
			if (trial % 4 == 3)
			{
				ref[b * n + a] += w[e];
				has[b * n + a] = 1;
			}
		}
		in.num_edges = m;
		in.src = src;
		in.dst = dst;
		in.weight = w;
		in.undirected = trial % 4 == 3;
		if (gnn_graph_build_region(&in, &region, &size, &g, &err) != GNN_OK)
		{
			ok = 0;
			NOTE("trial %d: %s", trial, err.msg);
			break;
		}
		for (int64_t v = 0; v < g.num_nodes && ok; v++)
		{
			int64_t		a = sparse_ids ? (g.ids[v] + 7) / 1000003 : g.ids[v];
			int64_t		cnt = 0;

			for (int64_t u = 0; u < n; u++)
				cnt += has[a * n + u];
			ok &= gnn_graph_out_degree(&g, v) == cnt;
			for (int64_t p = g.indptr[v]; p < g.indptr[v + 1] && ok; p++)
			{
				int64_t		b = sparse_ids ? (g.ids[g.indices[p]] + 7) / 1000003 : g.ids[g.indices[p]];

				ok &= has[a * n + b] && fabs(g.weights[p] - ref[a * n + b]) < 1e-3;
				ok &= p == g.indptr[v] || g.indices[p - 1] < g.indices[p];
			}
			cnt = 0;
			for (int64_t u = 0; u < n; u++)
				cnt += has[u * n + a];
			ok &= gnn_graph_in_degree(&g, v) == cnt;
			for (int64_t p = g.rindptr[v]; p < g.rindptr[v + 1] && ok; p++)
				ok &= p == g.rindptr[v] || g.rindices[p - 1] < g.rindices[p];
		}
		if (!ok)
			NOTE("trial %d (n=%lld, m=%lld) differs from the reference", trial, (long long) n, (long long) m);
		free(region);
		free(src);
		free(dst);
		free(w);
		free(ref);
		free(has);
	}
	CHECK(ok, "20 random graphs (dense and sparse ids, directed and undirected) match a naive reference");
}

int
main(void)
{
	test_random_reference();
	test_small_directed();
	test_undirected_nodes();
	test_errors();
	test_edgeless();
	test_sparse_and_corruption();
	test_cora();
	return check_done();
}
