/*
 * test_graph.c: CSR build, id mapping, merging, symmetrising, node data,
 * error reporting and region validation; node and edge types, keys, times,
 * targets and meta (schema graphs).
 */
#include "check.h"
#include "graph/graph.h"
#include "nn/model.h"

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

/* ------------------------------------------------------------------ typed graphs */

/*
 * Three node types (user: integer keys, item: text keys, tag: integer keys)
 * and four relations: buys and rates both user -> item, follows user -> user
 * (a self relation, with a self loop), tagged item -> tag.
 */
#define TY_N 9
#define TY_M 11
static const int64_t ty_ids[TY_N] = {0, 1, 2, 3, 4, 5, 6, 7, 8};
static const int16_t ty_ntype[TY_N] = {0, 0, 0, 1, 1, 1, 1, 2, 2};
static const int64_t ty_keys[TY_N] = {10, 20, 30, 0, 0, 0, 0, 5, 7};
static const int64_t ty_koff[TY_N + 1] = {0, 0, 0, 0, 5, 11, 17, 21, 21, 21};
static const char ty_kbytes[] = "appleapplesbananakiwi";
static const uint8_t ty_textkey[3] = {0, 1, 0};
static const int32_t ty_esrc[4] = {0, 0, 0, 1};
static const int32_t ty_edst[4] = {1, 1, 0, 2};
static const char ty_names[] = "user\0item\0tag\0buys\0rates\0follows\0tagged";	/* + the literal's NUL */
/* input order scrambled against the relations; 0 -> 3 buys twice (merges, 1 + 4) */
static const int64_t ty_src[TY_M] = {0, 1, 0, 1, 0, 2, 0, 1, 3, 4, 6};
static const int64_t ty_dst[TY_M] = {3, 4, 3, 4, 3, 5, 1, 1, 7, 8, 7};
static const int16_t ty_etype[TY_M] = {1, 1, 0, 0, 0, 0, 2, 2, 3, 3, 3};
static const float ty_w[TY_M] = {2, 1, 1, 3, 4, 1, 1, 1, 1, 1, 1};

static void
typed_input(gnn_graph_input *in, int64_t *src, int64_t *dst, int16_t *etype, int16_t *ntype, int64_t *keys,
			int64_t *ids)
{
	memcpy(src, ty_src, sizeof(ty_src));
	memcpy(dst, ty_dst, sizeof(ty_dst));
	memcpy(etype, ty_etype, sizeof(ty_etype));
	memcpy(ntype, ty_ntype, sizeof(ty_ntype));
	memcpy(keys, ty_keys, sizeof(ty_keys));
	memcpy(ids, ty_ids, sizeof(ty_ids));
	memset(in, 0, sizeof(*in));
	in->num_edges = TY_M;
	in->src = src;
	in->dst = dst;
	in->weight = ty_w;
	in->num_nodes = TY_N;
	in->node_ids = ids;
	in->num_node_types = 3;
	in->node_type = ntype;
	in->num_edge_types = 4;
	in->edge_type = etype;
	in->etype_src = ty_esrc;
	in->etype_dst = ty_edst;
	in->type_names = ty_names;
	in->type_names_bytes = sizeof(ty_names);
	in->keys = keys;
	in->key_off = ty_koff;
	in->key_bytes = ty_kbytes;
	in->type_text_key = ty_textkey;
}

/* arc p of row v (out: CSR, else reverse CSR) is (u, relation r, weight w) */
static bool
arc_is(const gnn_graph *g, bool out, int64_t v, int64_t k, int32_t u, int16_t r, float w)
{
	const int64_t *ptr = out ? g->indptr : g->rindptr;
	int64_t		p = ptr[v] + k;

	if (p >= ptr[v + 1])
		return false;
	return (out ? g->indices : g->rindices)[p] == u && (out ? g->arc_type : g->rarc_type)[p] == r &&
		(out ? g->weights : g->rweights)[p] == w;
}

static void
test_typed_structure(void)
{
	int64_t		src[TY_M],
				dst[TY_M],
				keys[TY_N],
				ids[TY_N];
	int16_t		etype[TY_M],
				ntype[TY_N];
	int64_t		times[TY_N] = {100, GNN_TIME_NONE, -3, 7, 8, 9, 10, GNN_TIME_NONE, 11};
	float		targets[TY_N] = {1.5f, NAN, 2.5f, NAN, NAN, NAN, NAN, NAN, -4};
	const char	meta[] = "{\"tables\": [\"user\", \"item\", \"tag\"]}";
	gnn_graph_input in;
	gnn_graph	g,
				g2;
	gnn_error	err;
	void	   *r;
	uint64_t	sz;
	bool		ok = true;

	typed_input(&in, src, dst, etype, ntype, keys, ids);
	in.node_time = times;
	in.targets = targets;
	in.meta = meta;
	in.meta_bytes = sizeof(meta) - 1;
	if (!CHECK(gnn_graph_build_region(&in, &r, &sz, &g, &err) == GNN_OK, "typed build: %s", err.msg))
		return;
	CHECK(g.num_nodes == TY_N && g.num_node_types == 3 && g.num_edge_types == 4 && g.node_type && g.arc_type &&
		  g.rarc_type, "typed graph: 3 node types, 4 relations, per-node and per-arc types present");
	CHECK(g.type_ptr[0] == 0 && g.type_ptr[1] == 3 && g.type_ptr[2] == 7 && g.type_ptr[3] == 9,
		  "type_ptr {0, 3, 7, 9}");
	for (int v = 0; v < TY_N; v++)
		ok &= g.node_type[v] == ty_ntype[v] && gnn_graph_type_of(&g, v) == ty_ntype[v];
	CHECK(ok, "node types by index");
	/* 11 edges, one same-relation duplicate merged: 10 arcs */
	CHECK(g.num_edges == 10, "only the same-relation duplicate merges: 10 arcs (got %lld)", (long long) g.num_edges);
	CHECK(g.etypes[0].count == 3 && g.etypes[1].count == 2 && g.etypes[2].count == 2 && g.etypes[3].count == 3,
		  "arcs per relation 3, 2, 2, 3 (got %lld %lld %lld %lld)", (long long) g.etypes[0].count,
		  (long long) g.etypes[1].count, (long long) g.etypes[2].count, (long long) g.etypes[3].count);
	CHECK(g.etypes[1].src_type == 0 && g.etypes[1].dst_type == 1 && g.etypes[3].src_type == 1 &&
		  g.etypes[3].dst_type == 2, "relations' endpoint types kept");
	/* user 0: follows 1, buys 3 (1 + 4 merged), rates 3 (distinct: another relation) */
	CHECK(arc_is(&g, true, 0, 0, 1, 2, 1) && arc_is(&g, true, 0, 1, 3, 0, 5) && arc_is(&g, true, 0, 2, 3, 1, 2) &&
		  gnn_graph_out_degree(&g, 0) == 3,
		  "out row 0: (1 follows), (3 buys, weights 1 + 4), (3 rates, 2): by neighbour, then relation");
	CHECK(arc_is(&g, true, 1, 0, 1, 2, 1) && arc_is(&g, true, 1, 1, 4, 0, 3) && arc_is(&g, true, 1, 2, 4, 1, 1),
		  "out row 1: self loop (follows), then 4 by buys before 4 by rates though given the other way");
	CHECK(arc_is(&g, false, 3, 0, 0, 0, 5) && arc_is(&g, false, 3, 1, 0, 1, 2) && gnn_graph_in_degree(&g, 3) == 2,
		  "in row 3: 0 by buys, 0 by rates");
	CHECK(arc_is(&g, false, 1, 0, 0, 2, 1) && arc_is(&g, false, 1, 1, 1, 2, 1) &&
		  arc_is(&g, false, 7, 0, 3, 3, 1) && arc_is(&g, false, 7, 1, 6, 3, 1),
		  "in rows 1 and 7 carry their relations");
	/* every arc: endpoint types agree with its relation; the reverse CSR is the transpose, relation included */
	ok = true;
	for (int64_t v = 0; v < g.num_nodes; v++)
		for (int64_t p = g.indptr[v]; p < g.indptr[v + 1]; p++)
		{
			int32_t		u = g.indices[p];
			int16_t		rel = g.arc_type[p];
			bool		found = false;

			ok &= g.etypes[rel].src_type == gnn_graph_type_of(&g, v) &&
				g.etypes[rel].dst_type == gnn_graph_type_of(&g, u);
			if (p > g.indptr[v])
				ok &= g.indices[p - 1] < u || (g.indices[p - 1] == u && g.arc_type[p - 1] < rel);
			for (int64_t q = g.rindptr[u]; q < g.rindptr[u + 1]; q++)
				found |= g.rindices[q] == v && g.rarc_type[q] == rel && g.rweights[q] == g.weights[p];
			ok &= found;
		}
	CHECK(ok, "all arcs: types match their relation, rows strictly ordered, reverse arcs keep relation and weight");

	/* lookups */
	CHECK(gnn_graph_find_typed(&g, 0, 20) == 1 && gnn_graph_find_typed(&g, 0, 10) == 0 &&
		  gnn_graph_find_typed(&g, 2, 7) == 8 && gnn_graph_find_typed(&g, 2, 5) == 7,
		  "integer keys found within their type");
	CHECK(gnn_graph_find_typed(&g, 0, 25) == -1 && gnn_graph_find_typed(&g, 2, 10) == -1 &&
		  gnn_graph_find_typed(&g, 0, 5) == -1 && gnn_graph_find_typed(&g, 1, 0) == -1 &&
		  gnn_graph_find_typed(&g, 3, 10) == -1 && gnn_graph_find_typed(&g, -1, 10) == -1,
		  "integer keys: missing, another type's, a text-keyed type, a type out of range: -1");
	CHECK(gnn_graph_find_text(&g, 1, "apple", 5) == 3 && gnn_graph_find_text(&g, 1, "apples", 6) == 4 &&
		  gnn_graph_find_text(&g, 1, "banana", 6) == 5 && gnn_graph_find_text(&g, 1, "kiwi", 4) == 6,
		  "text keys found (a prefix sorts first)");
	CHECK(gnn_graph_find_text(&g, 1, "appl", 4) == -1 && gnn_graph_find_text(&g, 1, "cherry", 6) == -1 &&
		  gnn_graph_find_text(&g, 1, "kiwis", 5) == -1 && gnn_graph_find_text(&g, 0, "apple", 5) == -1 &&
		  gnn_graph_find_text(&g, 9, "apple", 5) == -1,
		  "text keys: missing, a prefix, an int-keyed type, a type out of range: -1");
	CHECK(g.type_text_key && !g.type_text_key[0] && g.type_text_key[1] && !g.type_text_key[2] && g.keys[8] == 7,
		  "per-type text-key flags and integer keys in the view");
	/* names */
	CHECK(strcmp(gnn_graph_node_type_name(&g, 1), "item") == 0 &&
		  strcmp(gnn_graph_edge_type_name(&g, 1), "rates") == 0 &&
		  strcmp(gnn_graph_edge_type_name(&g, 3), "tagged") == 0 && !gnn_graph_node_type_name(&g, 3) &&
		  !gnn_graph_edge_type_name(&g, 4), "type names by index");
	CHECK(gnn_graph_node_type_by_name(&g, "tag") == 2 && gnn_graph_edge_type_by_name(&g, "follows") == 2 &&
		  gnn_graph_node_type_by_name(&g, "buys") == -1 && gnn_graph_edge_type_by_name(&g, "user") == -1 &&
		  gnn_graph_edge_type_by_name(&g, "nope") == -1, "types by name, each among its own kind");
	/* node values round trip */
	ok = g.time && g.targets;
	for (int v = 0; ok && v < TY_N; v++)
		ok &= g.time[v] == times[v] && (isnan(targets[v]) ? isnan(g.targets[v]) : g.targets[v] == targets[v]);
	CHECK(ok, "times (GNN_TIME_NONE included) and targets (NAN included) round trip");
	CHECK(g.meta_bytes == sizeof(meta) - 1 && memcmp(g.meta, meta, g.meta_bytes) == 0, "meta round trips");
	/* the block of the whole graph carries relations and destination types */
	{
		gnn_block	blk;

		gnn_block_from_graph(&g, &blk);
		CHECK(blk.etypes == g.rarc_type && blk.dst_ntype == g.node_type, "block from graph: etypes, dst_ntype");
	}
	/* a re-attach sees the same; a changed type count no longer matches the checksum */
	CHECK(gnn_graph_attach(r, sz, &g2, &err) == GNN_OK && g2.num_edge_types == 4 && g2.etypes[0].count == 3 &&
		  g2.key_off && g2.meta, "re-attach: %s", err.msg);
	((gnn_graph_header *) r)->num_edge_types = 1;
	CHECK(gnn_graph_attach(r, sz, &g2, &err) == GNN_ERR_CORRUPT, "the checksum covers the version 2 fields");
	((gnn_graph_header *) r)->num_edge_types = 4;
	((int64_t *) ((char *) r + ((gnn_graph_header *) r)->off_type_ptr))[3] = 8;
	CHECK(gnn_graph_attach(r, sz, &g2, &err) == GNN_ERR_CORRUPT && strstr(err.msg, "types"),
		  "type pointers that do not end at n are rejected: %s", err.msg);
	free(r);
}

/* A row holding the same neighbour twice (two relations), itself included */
static void
test_typed_gcn_degree(void)
{
	int64_t		ids[] = {0, 1, 2};
	int64_t		src[] = {0, 0, 1, 2, 1};
	int64_t		dst[] = {0, 0, 0, 1, 1};
	int16_t		et[] = {1, 0, 1, 0, 1};
	float		w[] = {0.5f, 0.25f, 2, 1, 4};
	gnn_graph_input in = {0};
	gnn_graph	g;
	gnn_error	err;
	void	   *r;
	uint64_t	sz;

	in.num_edges = 5;
	in.src = src;
	in.dst = dst;
	in.num_nodes = 3;
	in.node_ids = ids;
	in.num_edge_types = 2;
	in.edge_type = et;
	if (!CHECK(gnn_graph_build_region(&in, &r, &sz, &g, &err) == GNN_OK, "one node type, two relations: %s",
			   err.msg))
		return;
	CHECK(g.num_node_types == 1 && !g.node_type && g.type_ptr[1] == 3 && g.num_edges == 5 && g.arc_type,
		  "two self loops of 0 stay distinct arcs");
	/* in rows: 0 <- 0 (r0), 0 (r1), 1 (r1); 1 <- 1 (r1), 2 (r0); 2 <- none: one loop added */
	CHECK(gnn_graph_gcn_degree(&g, 0, true) == 3.0 && gnn_graph_gcn_degree(&g, 1, true) == 2.0 &&
		  gnn_graph_gcn_degree(&g, 2, true) == 1.0, "unweighted GCN degrees count every arc, one self loop added "
		  "only where none (got %g %g %g)", gnn_graph_gcn_degree(&g, 0, true),
		  gnn_graph_gcn_degree(&g, 1, true), gnn_graph_gcn_degree(&g, 2, true));
	free(r);
	in.weight = w;
	if (!CHECK(gnn_graph_build_region(&in, &r, &sz, &g, &err) == GNN_OK, "weighted: %s", err.msg))
		return;
	CHECK(gnn_graph_gcn_degree(&g, 0, true) == 2.75 && gnn_graph_gcn_degree(&g, 1, true) == 5.0 &&
		  gnn_graph_gcn_degree(&g, 0, false) == 0.75 && gnn_graph_gcn_degree(&g, 1, false) == 6.0 &&
		  gnn_graph_gcn_degree(&g, 2, false) == 2.0,
		  "weighted GCN degrees: both self arcs summed, 1 added where no self loop (got %g %g %g %g)",
		  gnn_graph_gcn_degree(&g, 0, true), gnn_graph_gcn_degree(&g, 1, true),
		  gnn_graph_gcn_degree(&g, 0, false), gnn_graph_gcn_degree(&g, 1, false));
	free(r);
}

/* Each typed-input error: INVALID (or the status said), row or edge named, no region */
static void
test_typed_errors(void)
{
	int64_t		src[TY_M],
				dst[TY_M],
				keys[TY_N],
				ids[TY_N];
	int16_t		etype[TY_M],
				ntype[TY_N];
	int64_t		koff[TY_N + 1];
	gnn_graph_input in;
	gnn_graph	g;
	gnn_error	err;
	void	   *r = NULL;
	uint64_t	sz;

#define TYPED_FAILS(st, what, ...) \
	do { \
		r = NULL; \
		gnn_status	got_ = gnn_graph_build_region(&in, &r, &sz, &g, &err); \
		CHECK(got_ == (st) && !r && (__VA_ARGS__), what ": %s", err.msg); \
		free(r); \
		typed_input(&in, src, dst, etype, ntype, keys, ids); \
	} while (0)

	typed_input(&in, src, dst, etype, ntype, keys, ids);
	ntype[4] = 3;
	TYPED_FAILS(GNN_ERR_INVALID, "node type out of range", err.row == 4 && strstr(err.msg, "node row 4"));
	ntype[5] = 2;				/* types 1, 1, 2, 1 */
	TYPED_FAILS(GNN_ERR_INVALID, "node types not in order", err.row == 6 && strstr(err.msg, "contiguous"));
	etype[5] = 4;
	TYPED_FAILS(GNN_ERR_INVALID, "edge type out of range", err.row == 5 && strstr(err.msg, "edge 5"));
	etype[8] = -1;
	TYPED_FAILS(GNN_ERR_INVALID, "negative edge type", err.row == 8);
	src[9] = 1;					/* tagged is item -> tag; 1 is a user */
	TYPED_FAILS(GNN_ERR_INVALID, "source of the wrong type", err.row == 9 && err.id == 1 &&
				strstr(err.msg, "source") && strstr(err.msg, "\"tagged\"") && strstr(err.msg, "\"user\""));
	dst[0] = 0;					/* rates is user -> item; 0 is a user */
	TYPED_FAILS(GNN_ERR_INVALID, "destination of the wrong type", err.row == 0 && strstr(err.msg, "destination"));
	dst[2] = 9;
	TYPED_FAILS(GNN_ERR_DANGLING, "an index out of range is dangling", err.row == 2 && err.id == 9);
	in.num_node_types = GNN_MAX_NODE_TYPES + 1;
	TYPED_FAILS(GNN_ERR_INVALID, "too many node types", strstr(err.msg, "at most 64"));
	in.num_edge_types = GNN_MAX_EDGE_TYPES + 1;
	TYPED_FAILS(GNN_ERR_INVALID, "too many edge types", strstr(err.msg, "at most 256"));
	keys[2] = 15;				/* users 10, 20, 15 */
	TYPED_FAILS(GNN_ERR_INVALID, "integer keys not ascending", err.row == 2 && strstr(err.msg, "\"user\""));
	keys[8] = 5;				/* tags 5, 5 */
	TYPED_FAILS(GNN_ERR_INVALID, "integer key twice", err.row == 8 && strstr(err.msg, "twice"));
	{
		static const char swapped[] = "applesapplebananakiwi";	/* "apples" before "apple" */

		memcpy(koff, ty_koff, sizeof(koff));
		koff[4] = 6;
		in.key_off = koff;
		in.key_bytes = swapped;
		TYPED_FAILS(GNN_ERR_INVALID, "text keys not ascending (longer before its prefix)",
					err.row == 4 && strstr(err.msg, "\"item\""));
	}
	ids[3] = 30;
	TYPED_FAILS(GNN_ERR_INVALID, "typed node ids not 0..n-1", err.row == 3 && strstr(err.msg, "0..n-1"));
	in.node_ids = NULL;
	TYPED_FAILS(GNN_ERR_INVALID, "typed input without node rows", true);
	in.undirected = true;
	TYPED_FAILS(GNN_ERR_INVALID, "typed input cannot be undirected", strstr(err.msg, "undirected"));
	in.edge_type = NULL;
	TYPED_FAILS(GNN_ERR_INVALID, "four relations but no edge types", true);
	in.etype_dst = NULL;
	TYPED_FAILS(GNN_ERR_INVALID, "relations without endpoint types", true);
	{
		int32_t		bad_src[4] = {0, 0, 3, 1};

		in.etype_src = bad_src;
		TYPED_FAILS(GNN_ERR_INVALID, "a relation's type out of range", strstr(err.msg, "relation 2"));
	}
	in.type_names_bytes = 20;	/* "user item tag buys r" */
	TYPED_FAILS(GNN_ERR_INVALID, "too few type names", strstr(err.msg, "names"));
	{
		float		inf_t[TY_N] = {0, 0, 0, 0, INFINITY, 0, 0, 0, 0};

		in.targets = inf_t;
		TYPED_FAILS(GNN_ERR_BAD_VALUE, "an infinite target", err.row == 4);
	}
#undef TYPED_FAILS
}

/* A homogeneous graph's version 2 fields; text keys and times on a homogeneous graph */
static void
test_homogeneous_types(void)
{
	int64_t		src[] = {30, 10, 20};
	int64_t		dst[] = {10, 20, 30};
	int64_t		ids[] = {30, 10, 20};
	int64_t		times[] = {300, 100, GNN_TIME_NONE};
	float		targets[] = {3, NAN, 2};
	int64_t		codes[] = {0, 1, 2};
	int64_t		koff[] = {0, 1, 3, 4};
	gnn_graph_input in = {0};
	gnn_graph	g;
	gnn_error	err;
	void	   *r;
	uint64_t	sz;

	in.num_edges = 3;
	in.src = src;
	in.dst = dst;
	in.num_nodes = 3;
	in.node_ids = ids;
	in.node_time = times;
	in.targets = targets;
	if (!CHECK(gnn_graph_build_region(&in, &r, &sz, &g, &err) == GNN_OK, "homogeneous build: %s", err.msg))
		return;
	CHECK(g.num_node_types == 1 && g.type_ptr[0] == 0 && g.type_ptr[1] == 3 && !g.node_type &&
		  gnn_graph_type_of(&g, 2) == 0, "homogeneous: one node type, type_ptr {0, n}, no node types");
	CHECK(g.num_edge_types == 1 && g.etypes[0].src_type == 0 && g.etypes[0].dst_type == 0 &&
		  g.etypes[0].count == g.num_edges && g.num_edges == 3 && !g.arc_type && !g.rarc_type,
		  "homogeneous: one relation {0, 0, m}, no arc types");
	CHECK(g.keys == g.ids && !g.key_off && !g.type_text_key && !g.type_names && !g.meta,
		  "homogeneous: keys are the ids; no text keys, names or meta");
	CHECK(gnn_graph_find_typed(&g, 0, 20) == gnn_graph_find(&g, 20) && gnn_graph_find_typed(&g, 0, 20) == 1 &&
		  gnn_graph_find_typed(&g, 1, 20) == -1 && !gnn_graph_node_type_name(&g, 0) &&
		  gnn_graph_node_type_by_name(&g, "x") == -1, "homogeneous lookups");
	CHECK(g.time && g.time[0] == 100 && g.time[1] == GNN_TIME_NONE && g.time[2] == 300 && g.targets &&
		  isnan(g.targets[0]) && g.targets[1] == 2 && g.targets[2] == 3,
		  "times and targets follow rows given out of id order");
	free(r);
	/* all-absent times and targets are left out */
	times[0] = times[1] = GNN_TIME_NONE;
	targets[0] = targets[2] = NAN;
	CHECK(gnn_graph_build_region(&in, &r, &sz, &g, &err) == GNN_OK && !g.time && !g.targets,
		  "no node with a time or a target: no arrays");
	free(r);
	in.node_time = NULL;
	in.targets = NULL;
	/* text keys on a homogeneous graph: the ids are codes 0..n-1 */
	in.key_off = koff;
	in.key_bytes = "abbc";		/* "a", "bb", "c" */
	CHECK(gnn_graph_build_region(&in, &r, &sz, &g, &err) == GNN_ERR_INVALID && err.row == 0,
		  "text keys need ids 0..n-1: %s", err.msg);
	in.node_ids = codes;
	src[0] = 2, dst[0] = 0, src[1] = 0, dst[1] = 1, src[2] = 1, dst[2] = 2;
	if (CHECK(gnn_graph_build_region(&in, &r, &sz, &g, &err) == GNN_OK, "homogeneous text keys: %s", err.msg))
	{
		CHECK(gnn_graph_find_text(&g, 0, "bb", 2) == 1 && gnn_graph_find_text(&g, 0, "c", 1) == 2 &&
			  gnn_graph_find_text(&g, 0, "b", 1) == -1 && gnn_graph_find_typed(&g, 0, 1) == -1 &&
			  gnn_graph_find(&g, 1) == 1 && g.type_text_key[0] == 1,
			  "homogeneous text keys found; integer lookups of a text-keyed type miss");
		free(r);
	}
}


/* feat_fill: features written into the region by the caller give the same region as feat */
typedef struct fill_arg
{
	const float *rows;			/* by input row */
	int32_t		dim;
	int64_t		n;
	bool		fail;
	int			calls;
} fill_arg;

static gnn_status
fill_rows(void *arg, float *dst, const int64_t *node_of_row, gnn_error *err)
{
	fill_arg   *a = arg;

	a->calls++;
	if (a->fail)
		return gnn_error_set(err, GNN_ERR_BAD_VALUE, "feature 1 of row 2 is NaN");
	for (int64_t r = 0; r < a->n; r++)
		memcpy(dst + node_of_row[r] * a->dim, a->rows + r * a->dim, sizeof(float) * a->dim);
	return GNN_OK;
}

static void
test_feat_fill(void)
{
	/* node rows out of id order, so the region's order is a permutation of the rows */
	int64_t		ids[] = {30, 10, 20, 50, 40},
				src[] = {10, 20, 30, 40},
				dst[] = {20, 30, 40, 50};
	float		feat[5 * 3];
	gnn_graph_input in = {0};
	void	   *r1 = NULL,
			   *r2 = NULL;
	uint64_t	s1 = 0,
				s2 = 0;
	gnn_graph	g1,
				g2;
	gnn_error	err;
	fill_arg	a = {feat, 3, 5, false, 0};

	for (int i = 0; i < 15; i++)
		feat[i] = (float) (i * 7 % 11) - 3.0f;
	in.num_edges = 4;
	in.src = src;
	in.dst = dst;
	in.num_nodes = 5;
	in.node_ids = ids;
	in.feat_dim = 3;
	in.feat = feat;
	CHECK(gnn_graph_build_region(&in, &r1, &s1, &g1, &err) == GNN_OK, "build with feat: %s", err.msg);
	in.feat = NULL;
	in.feat_fill = fill_rows;
	in.feat_fill_arg = &a;
	CHECK(gnn_graph_build_region(&in, &r2, &s2, &g2, &err) == GNN_OK && a.calls == 1,
		  "build with feat_fill: %s", err.msg);
	CHECK(r1 && r2 && s1 == s2 && g1.num_nodes == 5 && g2.num_nodes == 5 &&
		  memcmp(g1.feat, g2.feat, sizeof(float) * 15) == 0 && memcmp(g1.ids, g2.ids, sizeof(int64_t) * 5) == 0 &&
		  memcmp(g1.indices, g2.indices, sizeof(int32_t) * g1.num_edges) == 0,
		  "feat_fill gives the graph feat does (%llu bytes)", (unsigned long long) s1);
	/* byte for byte: the padding between arrays is zeroed, whatever malloc left there */
	CHECK(r1 && r2 && s1 == s2 && memcmp(r1, r2, s1) == 0, "the two regions are equal byte for byte");
	CHECK(r2 && g2.feat[0 * 3 + 1] == feat[1 * 3 + 1] && g2.feat[2 * 3 + 2] == feat[0 * 3 + 2],
		  "node 10 holds row 1's features, node 30 row 0's");
	free(r2);
	r2 = NULL;
	a.fail = true;
	CHECK(gnn_graph_build_region(&in, &r2, &s2, &g2, &err) == GNN_ERR_BAD_VALUE && r2 == NULL &&
		  strstr(err.msg, "NaN") != NULL, "a failing feat_fill fails the build with its error: %s", err.msg);
	in.feat = feat;
	CHECK(gnn_graph_build_region(&in, &r2, &s2, &g2, &err) == GNN_ERR_INVALID, "feat and feat_fill together are refused");
	free(r2);
	r2 = NULL;
	/* 32-bit endpoints give the same graph as 64-bit ones */
	{
		int32_t		s32[] = {10, 20, 30, 40},
					d32[] = {20, 30, 40, 50};

		in.feat_fill = NULL;
		in.src = NULL;
		in.dst = NULL;
		in.src32 = s32;
		in.dst32 = d32;
		CHECK(gnn_graph_build_region(&in, &r2, &s2, &g2, &err) == GNN_OK && s2 == s1 &&
			  g2.num_edges == g1.num_edges && memcmp(g1.indptr, g2.indptr, sizeof(int64_t) * 6) == 0 &&
			  memcmp(g1.indices, g2.indices, sizeof(int32_t) * g1.num_edges) == 0 &&
			  memcmp(g1.ids, g2.ids, sizeof(int64_t) * 5) == 0, "32-bit endpoints: the same graph (%s)",
			  err.msg);
		free(r2);
		r2 = NULL;
		in.src = src;
		CHECK(gnn_graph_build_region(&in, &r2, &s2, &g2, &err) == GNN_ERR_INVALID, "src and src32 together are refused");
	}
	free(r1);
	free(r2);
}

int
main(void)
{
	test_feat_fill();
	test_random_reference();
	test_small_directed();
	test_undirected_nodes();
	test_errors();
	test_edgeless();
	test_sparse_and_corruption();
	test_cora();
	test_homogeneous_types();
	test_typed_structure();
	test_typed_gcn_degree();
	test_typed_errors();
	return check_done();
}
