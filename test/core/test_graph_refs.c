/*
 * test_graph_refs.c: the graph build's two direct input forms and its
 * reverse CSR.
 *
 * (1) Edges as references (in.refs): random typed graphs built from
 *     references and from the same arcs as shuffled (src, dst, edge_type)
 *     triples give identical regions (CSR, reverse CSR, arc types, counts),
 *     also against a CSR sorted here, with 1 and 2 threads and sizes that
 *     take the parallel paths.  The references include a self-reference,
 *     two references between the same types, NULLs (-1), a type without
 *     nodes, hot nodes referred to by many, and rows where one neighbour has
 *     arcs of several relations (a <-> b through one self-reference, two
 *     references to the same node), which the reverse CSR's reordering of
 *     relations must handle.
 * (2) The general reverse CSR (a stable parallel counting sort) against a
 *     naive transpose: rows by source, then by the arc's position in the
 *     source's row.
 * (3) Sparse features as a CSR (sp_ptr) equal the same features as triples,
 *     and malformed CSRs are refused.
 * (4) Malformed references are refused with a message (leaks: ASan build).
 */
#include "check.h"
#include "graph/graph.h"

#include <math.h>
#ifdef _OPENMP
#include <omp.h>
#endif

/* ------------------------------------------------------------------ helpers */

static uint64_t
rnd(uint64_t *s)
{
	uint64_t	z = (*s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static int64_t
rnd_below(uint64_t *s, int64_t n)
{
	return (int64_t) (rnd(s) % (uint64_t) n);
}

static double
rnd_unit(uint64_t *s)
{
	return (rnd(s) >> 11) * (1.0 / 9007199254740992.0);
}

/* arrays a and b (either may be NULL) hold the same count elements */
static bool
same_array(const void *a, const void *b, size_t elem, int64_t count)
{
	if (!a || !b)
		return !a && !b;
	return memcmp(a, b, elem * (size_t) count) == 0;
}

/* NULL when the two graphs' structure is identical, else the first array that differs */
static const char *
graph_diff(const gnn_graph *a, const gnn_graph *b)
{
	int64_t		n = a->num_nodes,
				m = a->num_edges;

	if (a->num_nodes != b->num_nodes)
		return "num_nodes";
	if (a->num_edges != b->num_edges)
		return "num_edges";
	if (a->num_node_types != b->num_node_types || a->num_edge_types != b->num_edge_types)
		return "type counts";
	if (!same_array(a->type_ptr, b->type_ptr, 8, a->num_node_types + 1))
		return "type_ptr";
	if (!same_array(a->node_type, b->node_type, 2, n))
		return "node_type";
	if (!same_array(a->ids, b->ids, 8, n))
		return "ids";
	if (!same_array(a->indptr, b->indptr, 8, n + 1))
		return "indptr";
	if (!same_array(a->indices, b->indices, 4, m))
		return "indices";
	if (!same_array(a->arc_type, b->arc_type, 2, m))
		return "arc_type";
	if (!same_array(a->weights, b->weights, 4, m))
		return "weights";
	if (!same_array(a->rindptr, b->rindptr, 8, n + 1))
		return "rindptr";
	if (!same_array(a->rindices, b->rindices, 4, m))
		return "rindices";
	if (!same_array(a->rarc_type, b->rarc_type, 2, m))
		return "rarc_type";
	if (!same_array(a->rweights, b->rweights, 4, m))
		return "rweights";
	for (int32_t r = 0; r < a->num_edge_types; r++)
		if (a->etypes[r].src_type != b->etypes[r].src_type || a->etypes[r].dst_type != b->etypes[r].dst_type ||
			a->etypes[r].count != b->etypes[r].count)
			return "edge types";
	return NULL;
}

/*
 * NULL when g's reverse CSR is the naive transpose of its CSR (rows by
 * source, then by the arc's position in the source's row), else what differs
 */
static const char *
transpose_diff(const gnn_graph *g)
{
	int64_t		n = g->num_nodes,
				m = g->num_edges;
	int64_t    *ptr = calloc(n + 1, sizeof(int64_t)),
			   *cur = malloc(sizeof(int64_t) * (n + 1));
	int32_t    *idx = malloc(sizeof(int32_t) * (m + 1));
	int16_t    *rt = malloc(sizeof(int16_t) * (m + 1));
	float	   *rw = malloc(sizeof(float) * (m + 1));
	const char *why = NULL;

	for (int64_t p = 0; p < m; p++)
		ptr[g->indices[p] + 1]++;
	for (int64_t v = 0; v < n; v++)
		ptr[v + 1] += ptr[v];
	memcpy(cur, ptr, sizeof(int64_t) * (n + 1));
	for (int64_t v = 0; v < n; v++)
		for (int64_t p = g->indptr[v]; p < g->indptr[v + 1]; p++)
		{
			int64_t		q = cur[g->indices[p]]++;

			idx[q] = (int32_t) v;
			rt[q] = g->arc_type ? g->arc_type[p] : 0;
			rw[q] = g->weights ? g->weights[p] : 0;
		}
	if (!same_array(ptr, g->rindptr, 8, n + 1))
		why = "rindptr";
	else if (!same_array(idx, g->rindices, 4, m))
		why = "rindices";
	else if (g->arc_type && (!g->rarc_type || !same_array(rt, g->rarc_type, 2, m)))
		why = "rarc_type";
	else if (!g->arc_type && g->rarc_type)
		why = "rarc_type without arc_type";
	else if (g->weights && (!g->rweights || !same_array(rw, g->rweights, 4, m)))
		why = "rweights";
	free(ptr);
	free(cur);
	free(idx);
	free(rt);
	free(rw);
	return why;
}

typedef struct arc
{
	int32_t		src,
				dst;
	int16_t		rel;
} arc;

static int
cmp_arc(const void *x, const void *y)
{
	const arc  *a = x,
			   *b = y;

	if (a->src != b->src)
		return a->src < b->src ? -1 : 1;
	if (a->dst != b->dst)
		return a->dst < b->dst ? -1 : 1;
	return (a->rel > b->rel) - (a->rel < b->rel);
}

/*
 * NULL when g's CSR is the arcs (distinct (src, dst, rel) triples) sorted by
 * source, neighbour, relation, with the right count per relation
 */
static const char *
csr_diff(const gnn_graph *g, int64_t m, const int64_t *src, const int64_t *dst, const int16_t *rel)
{
	arc		   *a = malloc(sizeof(arc) * (m + 1));
	int64_t		cnt[GNN_MAX_EDGE_TYPES] = {0};
	const char *why = NULL;

	for (int64_t e = 0; e < m; e++)
	{
		a[e].src = (int32_t) src[e];
		a[e].dst = (int32_t) dst[e];
		a[e].rel = rel[e];
		cnt[rel[e]]++;
	}
	qsort(a, m, sizeof(arc), cmp_arc);
	if (g->num_edges != m)
		why = "num_edges";
	for (int64_t e = 0; !why && e < m; e++)
		if (g->indices[e] != a[e].dst || g->arc_type[e] != a[e].rel ||
			!(g->indptr[a[e].src] <= e && e < g->indptr[a[e].src + 1]))
			why = "arcs";
	for (int32_t r = 0; !why && r < g->num_edge_types; r++)
		if (g->etypes[r].count != cnt[r])
			why = "relation counts";
	free(a);
	return why;
}

/* ------------------------------------------------------------------ random graphs of references */

#define RG_T 4					/* node types; type 2 has no nodes */
#define RG_K 7					/* references */
#define RG_R (2 * RG_K + 1)		/* relations: two per reference and one unused */

/* (src_type, dst_type) of each reference */
static const int32_t rg_ends[RG_K][2] = {
	{0, 0},						/* a self-reference */
	{1, 0}, {1, 0},				/* two references between the same types */
	{3, 1},
	{2, 0},						/* from the type without nodes */
	{1, 2},						/* to it: every value -1 */
	{0, 3},
};

typedef struct rgraph
{
	int64_t		n;
	int64_t		tptr[RG_T + 1];
	int64_t    *ids;
	int16_t    *ntype;
	int32_t		esrc[RG_R],
				edst[RG_R];
	gnn_graph_ref refs[RG_K];
	int32_t    *val[RG_K];
	/* the same arcs as triples, shuffled */
	int64_t		m;
	int64_t    *src,
			   *dst;
	int16_t    *rel;
} rgraph;

static void
rgraph_free(rgraph *rg)
{
	free(rg->ids);
	free(rg->ntype);
	for (int k = 0; k < RG_K; k++)
		free(rg->val[k]);
	free(rg->src);
	free(rg->dst);
	free(rg->rel);
}

/*
 * A random graph of references with cnt[t] nodes of type t (cnt[2] is 0).
 * Relation numbers are a random permutation, so a reference's reverse
 * relation may sort before or after its forward one.
 */
static void
rgraph_make(rgraph *rg, const int64_t *cnt, uint64_t seed)
{
	uint64_t	s = seed;
	int32_t		perm[RG_R];
	int64_t		e = 0;

	memset(rg, 0, sizeof(*rg));
	for (int t = 0; t < RG_T; t++)
		rg->tptr[t + 1] = rg->tptr[t] + cnt[t];
	rg->n = rg->tptr[RG_T];
	rg->ids = malloc(sizeof(int64_t) * rg->n);
	rg->ntype = malloc(sizeof(int16_t) * rg->n);
	for (int t = 0; t < RG_T; t++)
		for (int64_t v = rg->tptr[t]; v < rg->tptr[t + 1]; v++)
		{
			rg->ids[v] = v;
			rg->ntype[v] = (int16_t) t;
		}
	for (int r = 0; r < RG_R; r++)
		perm[r] = r;
	for (int r = RG_R - 1; r > 0; r--)
	{
		int			j = (int) rnd_below(&s, r + 1),
					x = perm[r];

		perm[r] = perm[j];
		perm[j] = x;
	}
	/* the unused relation: some types, no arcs */
	rg->esrc[perm[2 * RG_K]] = 3;
	rg->edst[perm[2 * RG_K]] = 0;
	for (int k = 0; k < RG_K; k++)
	{
		gnn_graph_ref *r = &rg->refs[k];
		int64_t		ns = cnt[rg_ends[k][0]],
					nd = cnt[rg_ends[k][1]],
					db = rg->tptr[rg_ends[k][1]];
		int64_t		hot[3];

		r->src_type = rg_ends[k][0];
		r->dst_type = rg_ends[k][1];
		r->rel_fwd = perm[2 * k];
		r->rel_rev = perm[2 * k + 1];
		rg->esrc[r->rel_fwd] = rg->edst[r->rel_rev] = r->src_type;
		rg->edst[r->rel_fwd] = rg->esrc[r->rel_rev] = r->dst_type;
		/* a type without nodes: no values at all */
		rg->val[k] = ns > 0 ? malloc(sizeof(int32_t) * ns) : NULL;
		r->ref = rg->val[k];
		for (int h = 0; h < 3; h++)
			hot[h] = nd > 0 ? db + rnd_below(&s, nd) : -1;
		for (int64_t i = 0; i < ns; i++)
		{
			double		u = rnd_unit(&s);

			if (nd == 0 || u < 0.15)
				rg->val[k][i] = -1;
			else if (u < 0.45)
				rg->val[k][i] = (int32_t) hot[rnd_below(&s, 3)];	/* referred to by many */
			else
				rg->val[k][i] = (int32_t) (db + rnd_below(&s, nd));
		}
	}
	/* several relations between one pair of nodes */
	if (cnt[0] >= 2)
	{
		int32_t    *v0 = rg->val[0];

		for (int rep = 0; rep < 4; rep++)
		{
			int64_t		a = rnd_below(&s, cnt[0]),
						b = rnd_below(&s, cnt[0]);

			v0[a] = (int32_t) b;	/* a -> b and b -> a through the same reference */
			v0[b] = (int32_t) a;
		}
		v0[rnd_below(&s, cnt[0])] = -1;
		{
			int64_t		c = rnd_below(&s, cnt[0]);

			v0[c] = (int32_t) c;	/* a self loop: c -> c twice, forward and reverse */
		}
	}
	if (cnt[0] >= 1 && cnt[1] >= 1)
		for (int rep = 0; rep < 4; rep++)
		{
			int64_t		x = rnd_below(&s, cnt[1]),
						y = rnd_below(&s, cnt[0]);

			/* both references 1 -> 0 of x point at y */
			rg->val[1][x] = rg->val[2][x] = (int32_t) y;
		}

	/* the same arcs as triples: i -> ref[i] forward, ref[i] -> i reverse */
	for (int k = 0; k < RG_K; k++)
		for (int64_t i = 0; i < cnt[rg_ends[k][0]]; i++)
			e += rg->val[k][i] >= 0 ? 2 : 0;
	rg->m = e;
	rg->src = malloc(sizeof(int64_t) * (e + 1));
	rg->dst = malloc(sizeof(int64_t) * (e + 1));
	rg->rel = malloc(sizeof(int16_t) * (e + 1));
	e = 0;
	for (int k = 0; k < RG_K; k++)
	{
		int64_t		sb = rg->tptr[rg_ends[k][0]];

		for (int64_t i = 0; i < cnt[rg_ends[k][0]]; i++)
		{
			int32_t		x = rg->val[k][i];

			if (x < 0)
				continue;
			rg->src[e] = sb + i;
			rg->dst[e] = x;
			rg->rel[e++] = (int16_t) rg->refs[k].rel_fwd;
			rg->src[e] = x;
			rg->dst[e] = sb + i;
			rg->rel[e++] = (int16_t) rg->refs[k].rel_rev;
		}
	}
	for (int64_t i = e - 1; i > 0; i--)
	{
		int64_t		j = rnd_below(&s, i + 1),
					ts = rg->src[i],
					td = rg->dst[i];
		int16_t		tr = rg->rel[i];

		rg->src[i] = rg->src[j];
		rg->dst[i] = rg->dst[j];
		rg->rel[i] = rg->rel[j];
		rg->src[j] = ts;
		rg->dst[j] = td;
		rg->rel[j] = tr;
	}
}

/* the typed input of rg: references (as_refs) or triples */
static void
rgraph_input(const rgraph *rg, bool as_refs, int nthreads, gnn_graph_input *in)
{
	memset(in, 0, sizeof(*in));
	in->num_nodes = rg->n;
	in->node_ids = rg->ids;
	in->num_node_types = RG_T;
	in->node_type = rg->ntype;
	in->num_edge_types = RG_R;
	in->etype_src = rg->esrc;
	in->etype_dst = rg->edst;
	in->nthreads = nthreads;
	if (as_refs)
	{
		in->num_refs = RG_K;
		in->refs = rg->refs;
	}
	else
	{
		in->num_edges = rg->m;
		in->src = rg->src;
		in->dst = rg->dst;
		in->edge_type = rg->rel;
	}
}

/* one pair of nodes with arcs of two relations each way, in the built graph */
static bool
has_multi_relation_row(const gnn_graph *g)
{
	for (int64_t v = 0; v < g->num_nodes; v++)
		for (int64_t p = g->indptr[v] + 1; p < g->indptr[v + 1]; p++)
			if (g->indices[p] == g->indices[p - 1])
				return true;
	return false;
}

/*
 * Build rg four ways (references / triples, 1 / 2 threads): all four equal
 * each other, the sorted arcs and, in reverse, the naive transpose.
 */
static void
check_refs_equivalence(const rgraph *rg, const char *what)
{
	gnn_graph	g[4];
	void	   *reg[4] = {NULL};
	uint64_t	sz;
	gnn_error	err;
	bool		built = true;
	const char *d;

	for (int c = 0; c < 4; c++)
	{
		gnn_graph_input in;
		gnn_status	st;

		rgraph_input(rg, c < 2, c % 2 ? 2 : 1, &in);
		st = gnn_graph_build_region(&in, &reg[c], &sz, &g[c], &err);
		if (!CHECK(st == GNN_OK, "%s: build from %s, %d thread(s): %s", what, c < 2 ? "references" : "triples",
				   c % 2 ? 2 : 1, st == GNN_OK ? "ok" : err.msg))
			built = false;
	}
	if (built)
	{
		d = csr_diff(&g[0], rg->m, rg->src, rg->dst, rg->rel);
		CHECK(!d, "%s: the CSR of references is the sorted arcs (%lld arcs)%s%s", what, (long long) rg->m,
			  d ? ": differs in " : "", d ? d : "");
		d = transpose_diff(&g[0]);
		CHECK(!d, "%s: the reverse CSR of references is the transpose%s%s", what, d ? ": differs in " : "",
			  d ? d : "");
		for (int c = 1; c < 4; c++)
		{
			d = graph_diff(&g[0], &g[c]);
			CHECK(!d, "%s: references, 1 thread == %s, %d thread(s)%s%s", what, c < 2 ? "references" : "triples",
				  c % 2 ? 2 : 1, d ? ": differs in " : "", d ? d : "");
		}
		d = transpose_diff(&g[2]);
		CHECK(!d, "%s: the reverse CSR of triples is the transpose%s%s", what, d ? ": differs in " : "",
			  d ? d : "");
	}
	for (int c = 0; c < 4; c++)
		free(reg[c]);
}

static void
test_refs_equivalence(void)
{
	rgraph		rg;
	bool		multi = false;

	for (uint64_t seed = 1; seed <= 12; seed++)
	{
		uint64_t	s = seed * 7919;
		int64_t		cnt[RG_T];
		char		what[64];

		cnt[0] = 1 + rnd_below(&s, 40);
		cnt[1] = 1 + rnd_below(&s, 40);
		cnt[2] = 0;
		cnt[3] = 1 + rnd_below(&s, 10);
		if (seed == 1)
			cnt[0] = 2;			/* tiny: nearly every pair a multi-relation pair */
		rgraph_make(&rg, cnt, seed);
		snprintf(what, sizeof(what), "seed %llu (%lld, %lld, 0, %lld nodes)", (unsigned long long) seed,
				 (long long) cnt[0], (long long) cnt[1], (long long) cnt[3]);
		check_refs_equivalence(&rg, what);
		{
			gnn_graph_input in;
			gnn_graph	g;
			gnn_error	err;
			void	   *r = NULL;
			uint64_t	sz;

			rgraph_input(&rg, true, 1, &in);
			if (gnn_graph_build_region(&in, &r, &sz, &g, &err) == GNN_OK)
				multi |= has_multi_relation_row(&g);
			free(r);
		}
		rgraph_free(&rg);
	}
	CHECK(multi, "the random graphs have rows with one neighbour through several relations");

	/* large enough for the parallel inversion (a type of >= 65536 referring nodes) and sorts */
	{
		int64_t		cnt[RG_T] = {70000, 80000, 0, 900};

		rgraph_make(&rg, cnt, 424242);
		check_refs_equivalence(&rg, "large");
		rgraph_free(&rg);
	}
}

/*
 * The build asked for 2 threads inside a parallel region gets a team of
 * one: the result must not depend on the team it gets.
 */
static void
test_refs_small_team(void)
{
#ifdef _OPENMP
	rgraph		rg;
	int64_t		cnt[RG_T] = {70000, 1000, 0, 100};
	gnn_graph_input in;
	gnn_graph	g1,
				g2;
	gnn_error	err1,
				err2;
	void	   *r1 = NULL,
			   *r2 = NULL;
	uint64_t	sz;
	gnn_status	st1,
				st2 = GNN_ERR_INVALID;
	int			levels = omp_get_max_active_levels();

	rgraph_make(&rg, cnt, 99);
	rgraph_input(&rg, true, 1, &in);
	st1 = gnn_graph_build_region(&in, &r1, &sz, &g1, &err1);
	rgraph_input(&rg, true, 2, &in);
	omp_set_max_active_levels(1);
#pragma omp parallel num_threads(2)
	{
		if (omp_get_thread_num() == 0)
			st2 = gnn_graph_build_region(&in, &r2, &sz, &g2, &err2);
	}
	omp_set_max_active_levels(levels);
	if (CHECK(st1 == GNN_OK && st2 == GNN_OK, "references built inside a parallel region: %s",
			  st1 != GNN_OK ? err1.msg : st2 != GNN_OK ? err2.msg : "ok"))
	{
		const char *d = graph_diff(&g1, &g2);

		CHECK(!d, "2 threads asked for, a team of 1 given: same graph as 1 thread%s%s (%lld vs %lld arcs)",
			  d ? ": differs in " : "", d ? d : "", (long long) g1.num_edges, (long long) g2.num_edges);
	}
	free(r1);
	free(r2);
	rgraph_free(&rg);
#else
	CHECK_SKIP("no OpenMP", "references built inside a parallel region");
#endif
}

/* ------------------------------------------------------------------ general reverse CSR */

static void
check_general_reverse(const gnn_graph_input *base, const char *what)
{
	gnn_graph	g[2];
	void	   *reg[2] = {NULL};
	uint64_t	sz;
	gnn_error	err;
	bool		built = true;

	for (int c = 0; c < 2; c++)
	{
		gnn_graph_input in = *base;

		in.nthreads = c + 1;
		if (!CHECK(gnn_graph_build_region(&in, &reg[c], &sz, &g[c], &err) == GNN_OK, "%s, %d thread(s): build: %s",
				   what, c + 1, err.msg))
			built = false;
	}
	if (built)
	{
		for (int c = 0; c < 2; c++)
		{
			const char *d = transpose_diff(&g[c]);

			CHECK(g[c].num_edges > 65536 && !d, "%s, %d thread(s): the reverse CSR of %lld arcs is the naive transpose%s%s",
				  what, c + 1, (long long) g[c].num_edges, d ? ": differs in " : "", d ? d : "");
		}
		{
			const char *d = graph_diff(&g[0], &g[1]);

			CHECK(!d, "%s: 1 and 2 threads build the same graph%s%s", what, d ? ": differs in " : "", d ? d : "");
		}
	}
	free(reg[0]);
	free(reg[1]);
}

static void
test_general_reverse(void)
{
	uint64_t	s = 12345;

	/* homogeneous, weighted, sparse ids, duplicates and self loops */
	{
		int64_t		n = 30000,
					me = 120000;
		int64_t    *src = malloc(sizeof(int64_t) * me),
				   *dst = malloc(sizeof(int64_t) * me);
		float	   *w = malloc(sizeof(float) * me);
		gnn_graph_input in = {0};

		for (int64_t e = 0; e < me; e++)
		{
			/* a hub in every tenth edge: long rows each way */
			src[e] = 3 * (e % 10 == 0 ? 7 : rnd_below(&s, n));
			dst[e] = 3 * (e % 10 == 1 ? 11 : rnd_below(&s, n));
			w[e] = (float) (1 + rnd_below(&s, 8)) * 0.25f;
		}
		in.num_edges = me;
		in.src = src;
		in.dst = dst;
		in.weight = w;
		check_general_reverse(&in, "homogeneous weighted");
		free(src);
		free(dst);
		free(w);
	}
	/* typed: 3 node types, 5 relations (two share their endpoint types), duplicates across relations */
	{
		int64_t		cnt[3] = {20000, 15000, 5000},
					tp[4] = {0, 20000, 35000, 40000};
		int32_t		esrc[5] = {0, 0, 1, 2, 0},
					edst[5] = {1, 1, 0, 0, 0};
		int64_t		n = tp[3],
					me = 150000;
		int64_t    *ids = malloc(sizeof(int64_t) * n),
				   *src = malloc(sizeof(int64_t) * me),
				   *dst = malloc(sizeof(int64_t) * me);
		int16_t    *nt = malloc(sizeof(int16_t) * n),
				   *et = malloc(sizeof(int16_t) * me);
		gnn_graph_input in = {0};

		for (int t = 0; t < 3; t++)
			for (int64_t v = tp[t]; v < tp[t + 1]; v++)
			{
				ids[v] = v;
				nt[v] = (int16_t) t;
			}
		for (int64_t e = 0; e < me; e++)
		{
			int			r = (int) rnd_below(&s, 5);

			if (e % 7 == 0 && e > 0 && (et[e - 1] == 0 || et[e - 1] == 1))
			{
				/* the previous arc again, through the other relation of its types */
				r = 1 - et[e - 1];
				src[e] = src[e - 1];
				dst[e] = dst[e - 1];
			}
			else
			{
				src[e] = tp[esrc[r]] + rnd_below(&s, e % 5 == 0 ? 3 : cnt[esrc[r]]);
				dst[e] = tp[edst[r]] + rnd_below(&s, cnt[edst[r]]);
			}
			et[e] = (int16_t) r;
		}
		in.num_edges = me;
		in.src = src;
		in.dst = dst;
		in.num_nodes = n;
		in.node_ids = ids;
		in.num_node_types = 3;
		in.node_type = nt;
		in.num_edge_types = 5;
		in.edge_type = et;
		in.etype_src = esrc;
		in.etype_dst = edst;
		check_general_reverse(&in, "typed");
		free(ids);
		free(src);
		free(dst);
		free(nt);
		free(et);
	}
}

/* ------------------------------------------------------------------ sparse features as a CSR */

typedef struct sfeat
{
	int64_t		n;
	int64_t    *ids;
	int16_t    *ntype;
	int32_t		esrc[1],
				edst[1];
	int64_t		nnz;
	int64_t    *ptr;
	int32_t    *idx;
	float	   *val;
	/* the same as shuffled triples */
	int64_t    *tnode;
	int32_t    *tidx;
	float	   *tval;
} sfeat;

static void
sfeat_make(sfeat *f, int64_t n, int32_t dim, uint64_t seed)
{
	uint64_t	s = seed;
	int64_t		k = 0;

	memset(f, 0, sizeof(*f));
	f->n = n;
	f->ids = malloc(sizeof(int64_t) * n);
	f->ntype = malloc(sizeof(int16_t) * n);
	f->ptr = malloc(sizeof(int64_t) * (n + 1));
	f->idx = malloc(sizeof(int32_t) * n * 8 + 4);
	f->val = malloc(sizeof(float) * n * 8 + 4);
	f->esrc[0] = 0;
	f->edst[0] = 1;
	f->ptr[0] = 0;
	for (int64_t v = 0; v < n; v++)
	{
		int64_t		len = v % 5 == 0 ? 0 : rnd_below(&s, 9);	/* some rows empty */
		int32_t		x = -1;

		f->ids[v] = v;
		f->ntype[v] = v < n / 2 ? 0 : 1;
		for (int64_t i = 0; i < len && x < dim - 1; i++)
		{
			x += 1 + (int32_t) rnd_below(&s, dim / 8 > 0 ? dim / 8 : 1);
			if (x >= dim)
				break;
			f->idx[k] = x;
			f->val[k++] = (float) (rnd_below(&s, 2001) - 1000) / 64.0f;
		}
		f->ptr[v + 1] = k;
	}
	f->nnz = k;
	f->tnode = malloc(sizeof(int64_t) * (k + 1));
	f->tidx = malloc(sizeof(int32_t) * (k + 1));
	f->tval = malloc(sizeof(float) * (k + 1));
	for (int64_t v = 0; v < n; v++)
		for (int64_t i = f->ptr[v]; i < f->ptr[v + 1]; i++)
		{
			f->tnode[i] = v;
			f->tidx[i] = f->idx[i];
			f->tval[i] = f->val[i];
		}
	for (int64_t i = k - 1; i > 0; i--)
	{
		int64_t		j = rnd_below(&s, i + 1),
					tn = f->tnode[i];
		int32_t		ti = f->tidx[i];
		float		tv = f->tval[i];

		f->tnode[i] = f->tnode[j];
		f->tidx[i] = f->tidx[j];
		f->tval[i] = f->tval[j];
		f->tnode[j] = tn;
		f->tidx[j] = ti;
		f->tval[j] = tv;
	}
}

static void
sfeat_free(sfeat *f)
{
	free(f->ids);
	free(f->ntype);
	free(f->ptr);
	free(f->idx);
	free(f->val);
	free(f->tnode);
	free(f->tidx);
	free(f->tval);
}

/* a typed (two node types, no edges) input with f's features as a CSR (csr) or as triples */
static void
sfeat_input(const sfeat *f, bool csr, gnn_graph_input *in)
{
	memset(in, 0, sizeof(*in));
	in->num_nodes = f->n;
	in->node_ids = f->ids;
	in->num_node_types = 2;
	in->node_type = f->ntype;
	in->num_edge_types = 1;
	in->etype_src = f->esrc;
	in->etype_dst = f->edst;
	in->sparse_nnz = f->nnz;
	if (csr)
	{
		in->sp_ptr = f->ptr;
		in->sp_index = f->idx;
		in->sp_value = f->val;
	}
	else
	{
		in->sp_node = f->tnode;
		in->sp_index = f->tidx;
		in->sp_value = f->tval;
	}
}

/* sp_fill: f's CSR written into the region, spoiled as mode says */
typedef struct sp_filler
{
	const sfeat *f;
	int			mode;			/* 0 as is, 1 row v's first two indices swapped, 2 fails, 3 ptr[n] off by one */
	int64_t		v;
	int			calls;
} sp_filler;

static gnn_status
sp_fill_copy(void *arg, int64_t *ptr, int32_t *idx, float *val, int64_t nnz, gnn_error *err)
{
	sp_filler  *F = arg;
	const sfeat *f = F->f;

	F->calls++;
	if (F->mode == 2)
		return gnn_error_set(err, GNN_ERR_CANCELLED, "the filler stops");
	memcpy(ptr, f->ptr, sizeof(int64_t) * (f->n + 1));
	memcpy(idx, f->idx, sizeof(int32_t) * nnz);
	memcpy(val, f->val, sizeof(float) * nnz);
	if (F->mode == 1)
	{
		int32_t		t = idx[ptr[F->v]];

		idx[ptr[F->v]] = idx[ptr[F->v] + 1];
		idx[ptr[F->v] + 1] = t;
	}
	if (F->mode == 3)
		ptr[f->n]--;
	return GNN_OK;
}

static void
test_sparse_csr(void)
{
	sfeat		f;

	int32_t		maxidx = -1;

	sfeat_make(&f, 3000, 500, 77);
	for (int64_t i = 0; i < f.nnz; i++)
		if (f.idx[i] > maxidx)
			maxidx = f.idx[i];
	for (int c = 0; c < 4; c++)
	{
		int			nthreads = c % 2 ? 2 : 1;
		int32_t		dim = c < 2 ? 0 : 600;
		gnn_graph_input in;
		gnn_graph	a,
					b;
		gnn_error	err;
		void	   *ra = NULL,
				   *rb = NULL;
		uint64_t	sz;
		bool		ok;

		sfeat_input(&f, true, &in);
		in.nthreads = nthreads;
		in.sparse_dim = dim;
		ok = CHECK(gnn_graph_build_region(&in, &ra, &sz, &a, &err) == GNN_OK,
				   "sparse CSR, dim %d, %d thread(s): build: %s", dim, nthreads, err.msg);
		sfeat_input(&f, false, &in);
		in.nthreads = nthreads;
		in.sparse_dim = dim;
		ok &= CHECK(gnn_graph_build_region(&in, &rb, &sz, &b, &err) == GNN_OK,
					"sparse triples, dim %d, %d thread(s): build: %s", dim, nthreads, err.msg);
		if (ok)
		{
			CHECK(a.feat_kind == GNN_FEAT_SPARSE && b.feat_kind == GNN_FEAT_SPARSE &&
				  a.feat_dim == (dim ? dim : maxidx + 1) && b.feat_dim == a.feat_dim &&
				  a.feat_nnz == f.nnz && b.feat_nnz == f.nnz,
				  "sparse CSR, dim %d, %d thread(s): kind, dim %d / %d, nnz %lld / %lld of %lld", dim, nthreads,
				  a.feat_dim, b.feat_dim, (long long) a.feat_nnz, (long long) b.feat_nnz, (long long) f.nnz);
			CHECK(same_array(a.fptr, b.fptr, 8, f.n + 1) && same_array(a.fptr, f.ptr, 8, f.n + 1),
				  "sparse CSR, dim %d, %d thread(s): fptr as given, as from triples", dim, nthreads);
			CHECK(same_array(a.fidx, b.fidx, 4, f.nnz) && same_array(a.fidx, f.idx, 4, f.nnz),
				  "sparse CSR, dim %d, %d thread(s): fidx as given, as from triples", dim, nthreads);
			CHECK(same_array(a.fval, b.fval, 4, f.nnz) && same_array(a.fval, f.val, 4, f.nnz),
				  "sparse CSR, dim %d, %d thread(s): fval as given, as from triples", dim, nthreads);
		}
		free(ra);
		free(rb);
	}
	/* written into the region by the caller (sp_fill): the same features, checked the same way */
	{
		int64_t		v = 1;

		while (f.ptr[v + 1] - f.ptr[v] < 2)
			v++;
		for (int mode = 0; mode < 4; mode++)
			for (int nthreads = 1; nthreads <= 2; nthreads++)
			{
				sp_filler	F = {&f, mode, v, 0};
				gnn_graph_input in;
				gnn_graph	a;
				gnn_error	err;
				void	   *ra = (void *) 1;
				uint64_t	sz;
				gnn_status	st;

				sfeat_input(&f, true, &in);
				in.sp_ptr = NULL;
				in.sp_index = NULL;
				in.sp_value = NULL;
				in.sparse_dim = 600;
				in.nthreads = nthreads;
				in.sp_fill = sp_fill_copy;
				in.sp_fill_arg = &F;
				st = gnn_graph_build_region(&in, &ra, &sz, &a, &err);
				if (mode == 0)
				{
					if (CHECK(st == GNN_OK && F.calls == 1, "sp_fill, %d thread(s): build (%s), one call (%d)",
							  nthreads, st == GNN_OK ? "ok" : err.msg, F.calls))
						CHECK(a.feat_kind == GNN_FEAT_SPARSE && a.feat_dim == 600 && a.feat_nnz == f.nnz &&
							  same_array(a.fptr, f.ptr, 8, f.n + 1) && same_array(a.fidx, f.idx, 4, f.nnz) &&
							  same_array(a.fval, f.val, 4, f.nnz),
							  "sp_fill, %d thread(s): the region holds the CSR as written", nthreads);
				}
				else
					CHECK(st == (mode == 1 ? GNN_ERR_BAD_VALUE : mode == 2 ? GNN_ERR_CANCELLED : GNN_ERR_INVALID) &&
						  !ra && err.msg[0] && (mode != 1 || err.row == v),
						  "sp_fill %s, %d thread(s): the build fails with it (%s: %s), no region",
						  mode == 1 ? "writing a row out of order" : mode == 2 ? "failing" : "writing a short CSR",
						  nthreads, gnn_status_name(st), err.msg);
				if (st == GNN_OK)
					free(ra);
			}
		/* what sp_fill cannot come with */
		for (int c = 0; c < 2; c++)
		{
			sp_filler	F = {&f, 0, v, 0};
			gnn_graph_input in;
			gnn_graph	a;
			gnn_error	err;
			void	   *ra = (void *) 1;
			uint64_t	sz;
			gnn_status	st;

			sfeat_input(&f, true, &in);	/* c == 0: sp_ptr as well */
			if (c > 0)
				in.sp_ptr = NULL, in.sp_index = NULL, in.sp_value = NULL;
			in.sparse_dim = c == 1 ? 0 : 600;
			in.sp_fill = sp_fill_copy;
			in.sp_fill_arg = &F;
			st = gnn_graph_build_region(&in, &ra, &sz, &a, &err);
			CHECK(st == GNN_ERR_INVALID && !ra && F.calls == 0, "sp_fill %s: refused (%s: %s), never called",
				  c == 0 ? "beside sp_ptr" : "without a dimension",
				  gnn_status_name(st), err.msg);
			if (st == GNN_OK)
				free(ra);
		}
	}

	/* feature dimension inferred as max index + 1 */
	{
		gnn_graph_input in;
		gnn_graph	a;
		gnn_error	err;
		void	   *ra = NULL;
		uint64_t	sz;

		sfeat_input(&f, true, &in);
		CHECK(gnn_graph_build_region(&in, &ra, &sz, &a, &err) == GNN_OK && a.feat_dim == maxidx + 1,
			  "sparse CSR without a dimension: max index + 1 = %d", maxidx + 1);
		free(ra);
	}

	/* malformed CSRs; node 1 has entries (row 0 is empty: v % 5 == 0) */
	{
		int64_t		v = 1;

		while (f.ptr[v + 1] - f.ptr[v] < 2)
			v++;
		int64_t		p = f.ptr[v];

#define SP_BAD(setup, undo, want_row, name) \
		do { \
			gnn_graph_input in_; \
			gnn_graph	g_; \
			gnn_error	err_; \
			void	   *r_ = (void *) 1; \
			uint64_t	sz_; \
			gnn_status	st_; \
			sfeat_input(&f, true, &in_); \
			in_.sparse_dim = 600; \
			setup; \
			st_ = gnn_graph_build_region(&in_, &r_, &sz_, &g_, &err_); \
			undo; \
			CHECK((st_ == GNN_ERR_BAD_VALUE || st_ == GNN_ERR_INVALID) && !r_ && err_.msg[0] && \
				  ((want_row) < 0 || err_.row == (want_row)), \
				  "%s: refused (%s, row %lld): %s", name, gnn_status_name(st_), (long long) err_.row, err_.msg); \
			if (st_ == GNN_OK) \
				free(r_); \
		} while (0)

		int32_t		x0 = f.idx[p],
					x1 = f.idx[p + 1];
		float		v1 = f.val[p + 1];
		int64_t		pv = f.ptr[v + 1];
		int32_t		xl = f.idx[pv - 1];

		SP_BAD((f.idx[p] = x1, f.idx[p + 1] = x0), (f.idx[p] = x0, f.idx[p + 1] = x1), v,
			   "sparse CSR with indices descending in a row");
		SP_BAD(f.idx[p + 1] = x0, f.idx[p + 1] = x1, v, "sparse CSR with an index twice in a row");
		SP_BAD(f.idx[pv - 1] = 600, f.idx[pv - 1] = xl, v, "sparse CSR with an index >= sparse_dim");
		SP_BAD(f.idx[p] = -1, f.idx[p] = x0, v, "sparse CSR with a negative index");
		SP_BAD(f.val[p + 1] = NAN, f.val[p + 1] = v1, v, "sparse CSR with a NaN value");
		SP_BAD(f.val[p + 1] = INFINITY, f.val[p + 1] = v1, v, "sparse CSR with an infinite value");
		SP_BAD(in_.sparse_nnz = f.nnz - 1, (void) 0, -1, "sparse CSR with sp_ptr[n] > sparse_nnz");
		SP_BAD(in_.sparse_nnz = f.nnz + 1, (void) 0, -1, "sparse CSR with sp_ptr[n] < sparse_nnz");
		SP_BAD(f.ptr[v + 1] = f.ptr[v] - 1, f.ptr[v + 1] = pv, v, "sparse CSR with sp_ptr decreasing");
#undef SP_BAD
	}
	sfeat_free(&f);
}

/* ------------------------------------------------------------------ malformed references */

static void
test_refs_errors(void)
{
	/* types: 0 (3 nodes), 1 (2 nodes), 2 (2 nodes); refs 0 -> 1 (rels 0, 1), 2 -> 0 (rels 2, 3) */
	int64_t		ids[7] = {0, 1, 2, 3, 4, 5, 6};
	int16_t		ntype[7] = {0, 0, 0, 1, 1, 2, 2};
	int32_t		esrc[4] = {0, 1, 2, 0},
				edst[4] = {1, 0, 0, 2};
	int32_t		ra[3] = {3, -1, 4},
				rb[2] = {0, 2};
	gnn_graph_ref refs[2] = {{0, 1, 0, 1, ra}, {2, 0, 2, 3, rb}};
	int64_t		src[1] = {0},
				dst[1] = {3};
	int16_t		et[1] = {0};
	gnn_graph_input in;

#define REF_INPUT() \
	do { \
		memset(&in, 0, sizeof(in)); \
		in.num_nodes = 7; in.node_ids = ids; in.num_node_types = 3; in.node_type = ntype; \
		in.num_edge_types = 4; in.etype_src = esrc; in.etype_dst = edst; \
		in.num_refs = 2; in.refs = refs; \
	} while (0)
#define REF_CASE(setup, undo, want, cond, name) \
	do { \
		gnn_graph	g_; \
		gnn_error	err_; \
		void	   *r_ = (void *) 1; \
		uint64_t	sz_; \
		gnn_status	st_; \
		REF_INPUT(); \
		setup; \
		st_ = gnn_graph_build_region(&in, &r_, &sz_, &g_, &err_); \
		undo; \
		CHECK(st_ == (want) && !r_ && err_.msg[0] && (cond), "%s: %s (row %lld): %s", name, \
			  gnn_status_name(st_), (long long) err_.row, err_.msg); \
		if (st_ == GNN_OK) \
			free(r_); \
	} while (0)

	/* the valid input first: the cases below each break one thing */
	{
		gnn_graph	g;
		gnn_error	err;
		void	   *r = NULL;
		uint64_t	sz;

		REF_INPUT();
		if (CHECK(gnn_graph_build_region(&in, &r, &sz, &g, &err) == GNN_OK, "small references: %s", err.msg))
		{
			/* 0->3 r0, 3->0 r1, 2->4 r0, 4->2 r1; 5->0 r2, 0->5 r3, 6->2 r2, 2->6 r3 */
			CHECK(g.num_edges == 8 && g.etypes[0].count == 2 && g.etypes[1].count == 2 &&
				  g.etypes[2].count == 2 && g.etypes[3].count == 2,
				  "small references: 8 arcs, 2 per relation");
			CHECK(g.indptr[1] - g.indptr[0] == 2 && g.indices[g.indptr[0]] == 3 && g.arc_type[g.indptr[0]] == 0 &&
				  g.indices[g.indptr[0] + 1] == 5 && g.arc_type[g.indptr[0] + 1] == 3,
				  "small references: node 0's row is (3, r0), (5, r3)");
			CHECK(g.rindptr[1] - g.rindptr[0] == 2 && g.rindices[g.rindptr[0]] == 3 &&
				  g.rarc_type[g.rindptr[0]] == 1 && g.rindices[g.rindptr[0] + 1] == 5 &&
				  g.rarc_type[g.rindptr[0] + 1] == 2,
				  "small references: node 0's in-arcs are (3, r1), (5, r2)");
		}
		free(r);
	}
	ra[2] = 1;					/* a node of type 0, not 1 */
	REF_CASE((void) 0, (void) 0, GNN_ERR_DANGLING, err_.row == 2, "reference to a node of an earlier type");
	ra[2] = 5;					/* a node of type 2, not 1 */
	REF_CASE((void) 0, (void) 0, GNN_ERR_DANGLING, err_.row == 2, "reference to a node of a later type");
	ra[2] = 7;					/* past the last node */
	REF_CASE((void) 0, (void) 0, GNN_ERR_DANGLING, err_.row == 2, "reference past the last node");
	ra[2] = -2;
	REF_CASE((void) 0, (void) 0, GNN_ERR_DANGLING, err_.row == 2, "reference -2");
	ra[2] = 4;
	rb[1] = 3;					/* node 6 refers to a type 1 node, not type 0 */
	REF_CASE((void) 0, (void) 0, GNN_ERR_DANGLING, err_.row == 6, "second reference dangling: the referring node");
	rb[1] = 2;
	REF_CASE((refs[1].rel_fwd = 1, refs[1].rel_rev = 0), (refs[1].rel_fwd = 2, refs[1].rel_rev = 3),
			 GNN_ERR_INVALID, true, "two references sharing both relations");
	REF_CASE(refs[1].rel_rev = 1, refs[1].rel_rev = 3, GNN_ERR_INVALID, true, "two references sharing one relation");
	REF_CASE(refs[0].rel_rev = 0, refs[0].rel_rev = 1, GNN_ERR_INVALID, true, "one relation both ways");
	REF_CASE(refs[0].rel_rev = 4, refs[0].rel_rev = 1, GNN_ERR_INVALID, true, "a relation out of range");
	REF_CASE(refs[0].dst_type = 3, refs[0].dst_type = 1, GNN_ERR_INVALID, true, "a node type out of range");
	REF_CASE(esrc[1] = 2, esrc[1] = 1, GNN_ERR_INVALID, true, "etype_src of the reverse relation disagrees");
	REF_CASE(edst[0] = 2, edst[0] = 1, GNN_ERR_INVALID, true, "etype_dst of the forward relation disagrees");
	REF_CASE(refs[0].src_type = 1, refs[0].src_type = 0, GNN_ERR_INVALID, true,
			 "the reference's source type disagrees with its relations");
	REF_CASE(refs[0].ref = NULL, refs[0].ref = ra, GNN_ERR_INVALID, true, "a reference without values");
	REF_CASE((in.num_edges = 1, in.src = src, in.dst = dst, in.edge_type = et), (void) 0, GNN_ERR_INVALID, true,
			 "references and edges together");
	REF_CASE(in.refs = NULL, (void) 0, GNN_ERR_INVALID, true, "num_refs without refs");
	REF_CASE(in.num_refs = -1, (void) 0, GNN_ERR_INVALID, true, "negative num_refs");
#undef REF_CASE
#undef REF_INPUT
}

/* Seed times: kept per node beside the node times, read by gnn_graph_seed_time. */
static void
test_seed_time(void)
{
	int64_t		ids[5] = {0, 1, 2, 3, 4};
	int16_t		ntype[5] = {0, 0, 0, 1, 1};
	int32_t		esrc[2] = {0, 1},
				edst[2] = {1, 0};
	int32_t		ra[3] = {3, -1, 4};
	gnn_graph_ref refs[1] = {{0, 1, 0, 1, ra}};
	int64_t		times[5] = {100, GNN_TIME_NONE, 300, 50, GNN_TIME_NONE};
	int64_t		seeds[5] = {500, 700, GNN_TIME_NONE, GNN_TIME_NONE, GNN_TIME_NONE};
	gnn_graph_input in;
	gnn_graph	g;
	gnn_error	err;
	void	   *r = NULL;
	uint64_t	sz;

	memset(&in, 0, sizeof(in));
	in.num_nodes = 5;
	in.node_ids = ids;
	in.num_node_types = 2;
	in.node_type = ntype;
	in.num_edge_types = 2;
	in.etype_src = esrc;
	in.etype_dst = edst;
	in.num_refs = 1;
	in.refs = refs;
	in.node_time = times;
	in.seed_time = seeds;
	if (CHECK(gnn_graph_build_region(&in, &r, &sz, &g, &err) == GNN_OK, "seed times: %s", err.msg))
	{
		CHECK(g.seed_time && g.time, "seed times: kept beside the node times");
		CHECK(gnn_graph_seed_time(&g, 0) == 500 && gnn_graph_seed_time(&g, 1) == 700 &&
			  gnn_graph_seed_time(&g, 2) == 300 && gnn_graph_seed_time(&g, 3) == 50 &&
			  gnn_graph_seed_time(&g, 4) == GNN_TIME_NONE,
			  "seed times: a seed's own when given, else the node's time, else none");
		CHECK(g.time[0] == 100 && g.time[1] == GNN_TIME_NONE, "seed times: the node times are unchanged");
	}
	free(r);
	r = NULL;
	in.seed_time = NULL;
	if (CHECK(gnn_graph_build_region(&in, &r, &sz, &g, &err) == GNN_OK, "no seed times: %s", err.msg))
		CHECK(!g.seed_time && gnn_graph_seed_time(&g, 0) == 100 && gnn_graph_seed_time(&g, 1) == GNN_TIME_NONE,
			  "no seed times: a seed samples at its node's time");
	free(r);
	r = NULL;
	in.seed_time = seeds;
	in.node_time = NULL;
	CHECK(gnn_graph_build_region(&in, &r, &sz, &g, &err) == GNN_ERR_INVALID && !r,
		  "seed times without node times are refused: %s", err.msg);
}

int
main(void)
{
	test_seed_time();
	test_refs_equivalence();
	test_refs_small_team();
	test_general_reverse();
	test_sparse_csr();
	test_refs_errors();
	return check_done();
}
