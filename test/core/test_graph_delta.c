/*
 * test_graph_delta.c: gnn_graph_apply_changes against a fresh build.
 *
 * Random homogeneous graphs (directed / undirected, weighted / not, with
 * duplicate rows and self-loops, dense / sparse features, labels, splits)
 * and random change sets; the reference is gnn_graph_build_region of the
 * changed row lists, compared array by array.  Then the error cases, and
 * that the base region is never written.
 */
#include "check.h"
#include "graph/graph.h"
#include "graph/graph_int.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>

static uint64_t rs;

static uint64_t
rnd(void)
{
	rs ^= rs << 13;
	rs ^= rs >> 7;
	rs ^= rs << 17;
	return rs;
}

static int64_t
rint_(int64_t k)
{
	return (int64_t) (rnd() % (uint64_t) k);
}

/* weights on a 1/4 grid: sums are exact, yet the check allows 1e-5 */
static float
rweight(void)
{
	return 0.25f * (float) (1 + rint_(12));
}

#define MAXN 256
#define MAXE 2048
#define DIM 3
#define SDIM 8

/* the row lists a build takes */
typedef struct rows
{
	int64_t		n;
	int64_t		id[MAXN];
	float		feat[MAXN][DIM];
	int			snnz[MAXN];
	int32_t		sidx[MAXN][SDIM];
	float		sval[MAXN][SDIM];
	int32_t		label[MAXN];
	uint8_t		split[MAXN];
	int64_t		m;
	int64_t		src[MAXE];
	int64_t		dst[MAXE];
	float		w[MAXE];
} rows;

typedef struct opts
{
	bool		undirected;
	bool		weighted;
	int			feat;			/* GNN_FEAT_* */
	bool		labels;
	bool		split;
	bool		class_names;
	int			nthreads;
} opts;

static const char classes[] = "ant\0bee\0cat\0dog";	/* 4 names */

static int64_t sp_node[MAXN * SDIM];
static int32_t sp_index[MAXN * SDIM];
static float sp_value[MAXN * SDIM];
static float featbuf[MAXN * DIM];

static gnn_status
build(const rows *r, const opts *o, void **region, uint64_t *size, gnn_graph *g, gnn_error *err)
{
	gnn_graph_input in = {0};

	in.num_edges = r->m;
	in.src = r->src;
	in.dst = r->dst;
	in.weight = o->weighted ? r->w : NULL;
	in.undirected = o->undirected;
	in.num_nodes = r->n;
	in.node_ids = r->id;
	in.keep_arc_rows = true;
	in.nthreads = o->nthreads;
	if (o->feat == GNN_FEAT_DENSE)
	{
		for (int64_t i = 0; i < r->n; i++)
			memcpy(featbuf + i * DIM, r->feat[i], sizeof(float) * DIM);
		in.feat_dim = DIM;
		in.feat = featbuf;
	}
	else if (o->feat == GNN_FEAT_SPARSE)
	{
		int64_t		k = 0;

		for (int64_t i = 0; i < r->n; i++)
			for (int j = 0; j < r->snnz[i]; j++)
			{
				sp_node[k] = r->id[i];
				sp_index[k] = r->sidx[i][j];
				sp_value[k] = r->sval[i][j];
				k++;
			}
		in.sparse_nnz = k;
		in.sp_node = sp_node;
		in.sp_index = sp_index;
		in.sp_value = sp_value;
		in.sparse_dim = SDIM;
	}
	if (o->labels)
		in.labels = r->label;
	if (o->split)
		in.split = r->split;
	if (o->class_names)
	{
		in.class_names = classes;
		in.class_names_bytes = sizeof(classes);
	}
	return gnn_graph_build_region(&in, region, size, g, err);
}

static void
rand_node(rows *r, int64_t i, int nclass)
{
	for (int j = 0; j < DIM; j++)
		r->feat[i][j] = (float) rint_(100) / 10.0f;
	r->snnz[i] = 0;
	for (int j = 0; j < SDIM; j++)
		if (rint_(3) == 0)
		{
			r->sidx[i][r->snnz[i]] = j;
			r->sval[i][r->snnz[i]] = (float) (1 + rint_(9));
			r->snnz[i]++;
		}
	r->label[i] = rint_(4) == 0 ? -1 : (int32_t) rint_(nclass);
	r->split[i] = (uint8_t) rint_(4);
}

static bool
has_id(const rows *r, int64_t id)
{
	for (int64_t i = 0; i < r->n; i++)
		if (r->id[i] == id)
			return true;
	return false;
}

static void
add_row(rows *r, int64_t s, int64_t d, float w)
{
	r->src[r->m] = s;
	r->dst[r->m] = d;
	r->w[r->m] = w;
	r->m++;
}

/* compare two graphs array by array; returns a description of the first difference or NULL */
static const char *
graph_diff(const gnn_graph *a, const gnn_graph *b)
{
	static char why[200];

#define D(cond, ...) do { if (cond) { snprintf(why, sizeof(why), __VA_ARGS__); return why; } } while (0)
	D(a->num_nodes != b->num_nodes, "num_nodes %lld vs %lld", (long long) a->num_nodes, (long long) b->num_nodes);
	D(a->num_edges != b->num_edges, "num_edges %lld vs %lld", (long long) a->num_edges, (long long) b->num_edges);
	int64_t		n = a->num_nodes,
				m = a->num_edges;

	D(memcmp(a->ids, b->ids, 8 * n), "ids");
	D(memcmp(a->indptr, b->indptr, 8 * (n + 1)), "indptr");
	D(memcmp(a->indices, b->indices, 4 * m), "indices");
	D(memcmp(a->rindptr, b->rindptr, 8 * (n + 1)), "rindptr");
	D(memcmp(a->rindices, b->rindices, 4 * m), "rindices");
	D(!a->arc_rows || !b->arc_rows, "arc_rows missing");
	D(memcmp(a->arc_rows, b->arc_rows, 4 * m), "arc_rows");
	D(!a->weights != !b->weights || !a->rweights != !b->rweights || a->weighted != b->weighted,
	  "weightedness (%d%d%d vs %d%d%d, %lld arcs)", !!a->weights, !!a->rweights, a->weighted, !!b->weights,
	  !!b->rweights, b->weighted, (long long) m);
	for (int64_t p = 0; a->weights && p < m; p++)
	{
		D(fabsf(a->weights[p] - b->weights[p]) > 1e-5f * fmaxf(1.0f, fabsf(b->weights[p])),
		  "weight %lld: %g vs %g", (long long) p, (double) a->weights[p], (double) b->weights[p]);
		D(fabsf(a->rweights[p] - b->rweights[p]) > 1e-5f * fmaxf(1.0f, fabsf(b->rweights[p])),
		  "rweight %lld", (long long) p);
	}
	D(a->feat_kind != b->feat_kind || a->feat_dim != b->feat_dim || a->feat_nnz != b->feat_nnz,
	  "feature shape (%d %d %lld vs %d %d %lld)", a->feat_kind, a->feat_dim, (long long) a->feat_nnz,
	  b->feat_kind, b->feat_dim, (long long) b->feat_nnz);
	if (a->feat_kind == GNN_FEAT_DENSE)
		D(memcmp(a->feat, b->feat, 4 * n * a->feat_dim), "dense features");
	if (a->feat_kind == GNN_FEAT_SPARSE)
	{
		D(memcmp(a->fptr, b->fptr, 8 * (n + 1)), "fptr");
		D(memcmp(a->fidx, b->fidx, 4 * a->feat_nnz), "fidx");
		D(memcmp(a->fval, b->fval, 4 * a->feat_nnz), "fval");
	}
	D(!a->labels != !b->labels, "labels presence");
	D(a->labels && memcmp(a->labels, b->labels, 4 * n), "labels");
	D(a->num_classes != b->num_classes, "num_classes %d vs %d", a->num_classes, b->num_classes);
	D(!a->split != !b->split, "split presence");
	D(a->split && memcmp(a->split, b->split, n), "split");
	D(a->n_train != b->n_train || a->n_val != b->n_val || a->n_test != b->n_test, "split counts");
	D(a->class_names_bytes != b->class_names_bytes ||
	  (a->class_names && memcmp(a->class_names, b->class_names, a->class_names_bytes)), "class names");
	D(a->num_node_types != 1 || a->num_edge_types != 1 || a->type_ptr[1] != n || a->etypes[0].count != m,
	  "types");
#undef D
	return NULL;
}

/*
 * the reverse CSR is the forward one transposed, sources ascending, with
 * the forward weights bit for bit (what the build's counting sort gives;
 * graph_diff allows rounding between a build and a refresh)
 */
static const char *
reverse_diff(const gnn_graph *g)
{
	static char why[200];
	int64_t		n = g->num_nodes;

	if (g->rindptr[0] != 0 || g->rindptr[n] != g->num_edges)
		return "rindptr ends";
	for (int64_t t = 0; t < n; t++)
		for (int64_t q = g->rindptr[t]; q < g->rindptr[t + 1]; q++)
		{
			int32_t		s = g->rindices[q];
			int64_t		p;

			if (q > g->rindptr[t] && g->rindices[q - 1] >= s)
				return "reverse row not ascending";
			for (p = g->indptr[s]; p < g->indptr[s + 1] && g->indices[p] != t; p++)
				;
			if (p == g->indptr[s + 1])
			{
				snprintf(why, sizeof(why), "reverse arc %d <- %d is not a forward arc", (int) t, (int) s);
				return why;
			}
			if (g->weights && memcmp(&g->weights[p], &g->rweights[q], sizeof(float)) != 0)
			{
				snprintf(why, sizeof(why), "reverse weight of %d -> %d: %a vs %a", (int) s, (int) t,
						 (double) g->rweights[q], (double) g->weights[p]);
				return why;
			}
		}
	return NULL;
}

/*
 * a view with a delta against a flat graph, through the readers' interface:
 * every row both ways (neighbours, weights, row counts), feature rows,
 * labels, split, counts; bit for bit (both come from the same row merges)
 */
static const char *
view_diff(const gnn_graph *v, const gnn_graph *f)
{
	static char why[200];

#define D(cond, ...) do { if (cond) { snprintf(why, sizeof(why), __VA_ARGS__); return why; } } while (0)
	D(v->num_nodes != f->num_nodes || v->num_edges != f->num_edges, "counts %lld/%lld vs %lld/%lld",
	  (long long) v->num_nodes, (long long) v->num_edges, (long long) f->num_nodes, (long long) f->num_edges);
	D(v->etypes[0].count != f->num_edges, "etype count");
	D(!v->weights != !f->weights || !v->rweights != !f->rweights, "weightedness");
	for (int64_t u = 0; u < v->num_nodes; u++)
	{
		const int32_t *a,
				   *b,
				   *ar,
				   *br;
		const float *aw,
				   *bw;
		int64_t		la = gnn_graph_out_row(v, u, &a, &aw, &ar),
					lb = gnn_graph_out_row(f, u, &b, &bw, &br);

		D(la != lb || memcmp(a, b, 4 * la), "out row %lld", (long long) u);
		D(la && (!aw) != (!bw), "out weights of %lld", (long long) u);
		D(la && aw && memcmp(aw, bw, 4 * la), "out weights of %lld", (long long) u);
		D(la && (!ar || !br || memcmp(ar, br, 4 * la)), "arc rows of %lld", (long long) u);
		D(gnn_graph_out_degree(v, u) != la, "out degree of %lld", (long long) u);
		la = gnn_graph_in_row(v, u, &a, &aw);
		lb = gnn_graph_in_row(f, u, &b, &bw);
		D(la != lb || memcmp(a, b, 4 * la), "in row %lld", (long long) u);
		D(la && aw && memcmp(aw, bw, 4 * la), "in weights of %lld", (long long) u);
		D(gnn_graph_in_degree(v, u) != la, "in degree of %lld", (long long) u);
		if (f->feat_kind == GNN_FEAT_DENSE)
			D(memcmp(gnn_graph_feat_row(v, u), gnn_graph_feat_row(f, u), 4 * f->feat_dim), "features of %lld",
			  (long long) u);
	}
	D(!v->labels != !f->labels || (v->labels && memcmp(v->labels, f->labels, 4 * f->num_nodes)), "labels");
	D(!v->split != !f->split || (v->split && memcmp(v->split, f->split, f->num_nodes)), "split");
	D(v->num_classes != f->num_classes || v->n_train != f->n_train || v->n_val != f->n_val ||
	  v->n_test != f->n_test, "node counts");
#undef D
	return NULL;
}

static int	alloc_calls;
static int	delta_rounds;	/* rounds whose changes were also checked as deltas, undone too */

static void *
count_alloc(void *arg, uint64_t bytes)
{
	alloc_calls++;
	return aligned_alloc(64, (bytes + 63) & ~(uint64_t) 63);
}

static gnn_status
apply(const gnn_graph *base, const gnn_graph_changes *ch, void **region, uint64_t *size, gnn_graph *g,
	  gnn_graph_change_stats *st, gnn_error *err)
{
	gnn_status	s = gnn_graph_apply_changes(base, ch, count_alloc, NULL, region, size, st, err);

	if (s == GNN_OK)
	{
		gnn_error	e2;

		if (gnn_graph_attach(*region, *size, g, &e2) != GNN_OK)
		{
			snprintf(err->msg, sizeof(err->msg), "attach: %.400s", e2.msg);
			return GNN_ERR_CORRUPT;
		}
	}
	return s;
}

static rows base_r,
			ref_r;

/* upsert arrays */
static int64_t up_ids[MAXN];
static float up_feat[MAXN * DIM];
static int64_t up_fptr[MAXN + 1];
static int32_t up_fidx[MAXN * SDIM];
static float up_fval[MAXN * SDIM];
static int32_t up_labels[MAXN];
static uint8_t up_split[MAXN];
static int64_t rm_nodes[MAXN];
static int64_t rm_src[MAXE],
			rm_dst[MAXE],
			add_src[MAXE],
			add_dst[MAXE];
static float rm_w[MAXE],
			add_w[MAXE];

/* one random round: returns true when it passed */
static bool
random_round(uint64_t seed, const opts *o, char *why, size_t whylen)
{
	rows	   *b = &base_r,
			   *r = &ref_r;
	gnn_graph	bg,
				dg,
				rg;
	void	   *breg = NULL,
			   *dreg = NULL,
			   *rreg = NULL;
	uint64_t	bsz,
				dsz,
				rsz;
	gnn_error	err;
	bool		ok = false;
	int			nclass = 4;
	void	   *bcopy = NULL;

	rs = seed * 0x9E3779B97F4A7C15ULL + 1;
	memset(b, 0, sizeof(*b));
	b->n = 10 + rint_(40);
	/* ids ascending with gaps, then shuffled: node rows in any order */
	for (int64_t i = 0, id = -20 + rint_(10); i < b->n; i++, id += 1 + rint_(4))
	{
		b->id[i] = id;
		rand_node(b, i, nclass);
	}
	b->label[rint_(b->n)] = nclass - 1;
	for (int64_t i = b->n - 1; i > 0; i--)
	{
		int64_t		j = rint_(i + 1),
					t = b->id[i];

		b->id[i] = b->id[j];
		b->id[j] = t;
	}
	int64_t		m0 = rint_(4 * b->n);

	for (int64_t e = 0; e < m0; e++)
	{
		int64_t		s = b->id[rint_(b->n)],
					d = rint_(8) == 0 ? s : b->id[rint_(b->n)];

		add_row(b, s, d, rweight());
		if (rint_(6) == 0)		/* a duplicate row */
			add_row(b, s, d, rweight());
	}
	if (build(b, o, &breg, &bsz, &bg, &err) != GNN_OK)
	{
		snprintf(why, whylen, "base build: %.200s", err.msg);
		goto out;
	}
	bcopy = malloc(bsz);

	memcpy(bcopy, breg, bsz);

	/* the changes, applied to a copy of the rows as they go */
	*r = *b;
	gnn_graph_changes ch = {0};

	ch.undirected = o->undirected;
	ch.nthreads = o->nthreads;
	/* node removals (with their rows logged as removed too, as a cascade does) */
	ch.skip_dangling = rint_(2) == 0;
	/*
	 * a third of the rounds change few rows, so that most rows have no
	 * change of their own (copied, not merged), and a third change no node
	 * set (no index moves: runs of such rows are copied as slices)
	 */
	bool		few = rint_(3) == 0,
				same_nodes = rint_(3) == 0;
	int64_t		nrm = same_nodes ? 0 : rint_(4),
				nre = 0;

	for (int64_t k = 0; k < nrm && r->n > 2; k++)
	{
		int64_t		i = rint_(r->n),
					id = r->id[i];

		rm_nodes[ch.num_removed_nodes++] = id;
		r->n--;
		memmove(&r->id[i], &r->id[i + 1], sizeof(int64_t) * (r->n - i));
		memmove(&r->feat[i], &r->feat[i + 1], sizeof(r->feat[0]) * (r->n - i));
		memmove(&r->snnz[i], &r->snnz[i + 1], sizeof(int) * (r->n - i));
		memmove(&r->sidx[i], &r->sidx[i + 1], sizeof(r->sidx[0]) * (r->n - i));
		memmove(&r->sval[i], &r->sval[i + 1], sizeof(r->sval[0]) * (r->n - i));
		memmove(&r->label[i], &r->label[i + 1], sizeof(int32_t) * (r->n - i));
		memmove(&r->split[i], &r->split[i + 1], 1 * (r->n - i));
		int64_t		k2 = 0;

		for (int64_t e = 0; e < r->m; e++)
		{
			if (r->src[e] == id || r->dst[e] == id)
			{
				/*
				 * rows at a removed node: all logged (a cascade), or, where
				 * dangling rows are skipped, some
				 */
				if (!ch.skip_dangling || rint_(2) == 0)
				{
					rm_src[nre] = r->src[e];
					rm_dst[nre] = r->dst[e];
					rm_w[nre++] = r->w[e];
				}
				continue;
			}
			r->src[k2] = r->src[e];
			r->dst[k2] = r->dst[e];
			r->w[k2++] = r->w[e];
		}
		r->m = k2;
	}
	/* upserts: updates of nodes that stay, and new nodes */
	int64_t		nup = rint_(5),
				nnew = same_nodes ? 0 : rint_(4),
				fp = 0;

	up_fptr[0] = 0;
	for (int64_t k = 0; k < nup + nnew; k++)
	{
		int64_t		i;

		if (k < nup)
			i = rint_(r->n);
		else
		{
			int64_t		id;

			do
				id = -30 + rint_(250);
			while (has_id(r, id) || has_id(b, id));
			i = r->n++;
			r->id[i] = id;
		}
		rand_node(r, i, o->labels ? bg.num_classes : 1);
		int64_t		u = ch.num_upserted_nodes++;

		up_ids[u] = r->id[i];
		memcpy(up_feat + u * DIM, r->feat[i], sizeof(float) * DIM);
		for (int j = 0; j < r->snnz[i]; j++)
		{
			up_fidx[fp] = r->sidx[i][j];
			up_fval[fp++] = r->sval[i][j];
		}
		up_fptr[u + 1] = fp;
		up_labels[u] = r->label[i];
		up_split[u] = r->split[i];
	}
	if (o->feat == GNN_FEAT_DENSE)
		ch.up_feat = up_feat;
	if (o->feat == GNN_FEAT_SPARSE)
	{
		ch.up_fptr = up_fptr;
		ch.up_fidx = up_fidx;
		ch.up_fval = up_fval;
	}
	ch.up_labels = o->labels ? up_labels : NULL;
	ch.up_split = o->split ? up_split : NULL;
	if (!o->labels)
		for (int64_t i = 0; i < r->n; i++)
			r->label[i] = -1;
	if (!o->split)
		for (int64_t i = 0; i < r->n; i++)
			r->split[i] = 0;
	ch.rm_nodes = rm_nodes;
	ch.up_ids = up_ids;
	/* edge removals: rows that remain (one of two duplicates, say) */
	int64_t		ner = r->m ? rint_(few ? 3 : r->m / 2 + 1) : 0;

	for (int64_t k = 0; k < ner && r->m > 0; k++)
	{
		int64_t		e = rint_(r->m);

		rm_src[nre] = r->src[e];
		rm_dst[nre] = r->dst[e];
		rm_w[nre++] = r->w[e];
		r->m--;
		r->src[e] = r->src[r->m];
		r->dst[e] = r->dst[r->m];
		r->w[e] = r->w[r->m];
	}
	/* the log's order is not the graph's: shuffle the removals */
	for (int64_t i = nre - 1; i > 0; i--)
	{
		int64_t		j = rint_(i + 1),
					t;
		float		tw;

		t = rm_src[i], rm_src[i] = rm_src[j], rm_src[j] = t;
		t = rm_dst[i], rm_dst[i] = rm_dst[j], rm_dst[j] = t;
		tw = rm_w[i], rm_w[i] = rm_w[j], rm_w[j] = tw;
	}
	ch.num_removed_edges = nre;
	ch.rm_src = rm_src;
	ch.rm_dst = rm_dst;
	ch.rm_weight = rm_w;
	/* edge additions: new rows, duplicates of existing ones, self-loops, new nodes */
	int64_t		nea = rint_(few ? 3 : 3 * r->n);

	for (int64_t k = 0; k < nea; k++)
	{
		int64_t		s,
					d;

		if (r->m > 0 && rint_(4) == 0)
		{
			int64_t		e = rint_(r->m);

			s = r->src[e];
			d = r->dst[e];
		}
		else
		{
			s = r->id[rint_(r->n)];
			d = rint_(8) == 0 ? s : r->id[rint_(r->n)];
		}
		float		w = rweight();

		add_src[ch.num_added_edges] = s;
		add_dst[ch.num_added_edges] = d;
		add_w[ch.num_added_edges++] = w;
		add_row(r, s, d, w);
	}
	ch.add_src = add_src;
	ch.add_dst = add_dst;
	ch.add_weight = rint_(5) == 0 ? NULL : add_w;
	if (!ch.add_weight)
		for (int64_t e = r->m - ch.num_added_edges; e < r->m; e++)
			r->w[e] = 1;

	gnn_graph_change_stats st;

	if (apply(&bg, &ch, &dreg, &dsz, &dg, &st, &err) != GNN_OK)
	{
		snprintf(why, whylen, "apply: %.200s (row %lld)", err.msg, (long long) err.row);
		goto out;
	}
	if (build(r, o, &rreg, &rsz, &rg, &err) != GNN_OK)
	{
		snprintf(why, whylen, "reference build: %.200s", err.msg);
		goto out;
	}
	const char *d = graph_diff(&dg, &rg);

	if (d)
	{
		snprintf(why, whylen, "differs: %s", d);
		goto out;
	}
	if ((d = reverse_diff(&dg)) != NULL)
	{
		snprintf(why, whylen, "reverse: %s", d);
		goto out;
	}
	if (memcmp(bcopy, breg, bsz) != 0)
	{
		snprintf(why, whylen, "the base region changed");
		goto out;
	}
	/*
	 * the same changes as a delta over the base: read through the view it
	 * must be the new region; flattened, the new region again.  Then the
	 * changes undone (added rows removed, removed rows added back, the
	 * upserted nodes' old data) as a delta over that view (the deltas pile
	 * up over one base) and as a new region from it: the two agree, and
	 * both are the base again
	 */
	{
		gnn_graph_changes dc = ch;
		void	   *xreg = NULL,
				   *xreg2 = NULL,
				   *mreg = NULL,
				   *freg = NULL;
		uint64_t	xsz = 0,
					xsz2 = 0,
					msz = 0;
		gnn_graph	xv,
					xv2,
					mg,
					fg;
		gnn_status	s;
		bool		nodes_change = ch.num_removed_nodes > 0 || nnew > 0;

		dc.as_delta = true;
		s = gnn_graph_apply_changes(&bg, &dc, count_alloc, NULL, &xreg, &xsz, NULL, &err);
		if (nodes_change || o->feat == GNN_FEAT_SPARSE)
		{
			if (s != GNN_ERR_UNSUPPORTED || xreg)
			{
				snprintf(why, whylen, "a delta that adds or removes nodes or has sparse features: %d", (int) s);
				goto out;
			}
			goto delta_done;
		}
		if (s != GNN_OK || gnn_graph_attach_delta(breg, bsz, xreg, xsz, &xv, &err) != GNN_OK)
		{
			snprintf(why, whylen, "delta: %.200s", err.msg);
			free(xreg);
			goto out;
		}
		if (gnn_graph_check_delta(&xv, &err) != GNN_OK)
			d = err.msg;
		else
			d = view_diff(&xv, &dg);
		if (d != NULL)
		{
			snprintf(why, whylen, "delta view: %s", d);
			free(xreg);
			goto out;
		}
		if (gnn_graph_flatten(&xv, &fg, &freg, &err) != GNN_OK || (d = graph_diff(&fg, &dg)) != NULL)
		{
			snprintf(why, whylen, "flattened delta: %s", freg ? d : err.msg);
			free(xreg);
			free(freg);
			goto out;
		}
		free(freg);
		if (xv.num_classes < bg.num_classes)
		{
			/* the top class lost its last node: its label is no class now (a caller reloads) */
			free(xreg);
			goto delta_done;
		}
		{
			gnn_graph_changes un = {0};
			static float oldfeat[MAXN * DIM];
			static int32_t oldlab[MAXN];
			static uint8_t oldsplit[MAXN];

			un.undirected = ch.undirected;
			un.nthreads = ch.nthreads;
			un.num_removed_edges = ch.num_added_edges;
			un.rm_src = ch.add_src;
			un.rm_dst = ch.add_dst;
			un.rm_weight = ch.add_weight;
			un.num_added_edges = ch.num_removed_edges;
			un.add_src = ch.rm_src;
			un.add_dst = ch.rm_dst;
			un.add_weight = ch.rm_weight;
			un.num_upserted_nodes = ch.num_upserted_nodes;
			un.up_ids = ch.up_ids;
			for (int64_t u = 0; u < ch.num_upserted_nodes; u++)
				for (int64_t i = 0; i < b->n; i++)
					if (b->id[i] == ch.up_ids[u])
					{
						memcpy(oldfeat + u * DIM, b->feat[i], sizeof(float) * DIM);
						oldlab[u] = o->labels ? b->label[i] : -1;
						oldsplit[u] = o->split ? b->split[i] : 0;
					}
			un.up_feat = ch.up_feat ? oldfeat : NULL;
			un.up_labels = ch.up_labels ? oldlab : NULL;
			un.up_split = ch.up_split ? oldsplit : NULL;
			un.as_delta = true;
			s = gnn_graph_apply_changes(&xv, &un, count_alloc, NULL, &xreg2, &xsz2, NULL, &err);
			if (s != GNN_OK || gnn_graph_attach_delta(breg, bsz, xreg2, xsz2, &xv2, &err) != GNN_OK)
			{
				snprintf(why, whylen, "undo as a delta: %.200s", err.msg);
				free(xreg);
				free(xreg2);
				goto out;
			}
			un.as_delta = false;
			if (apply(&xv, &un, &mreg, &msz, &mg, NULL, &err) != GNN_OK)
			{
				snprintf(why, whylen, "undo as a region from a delta view: %.200s", err.msg);
				free(xreg);
				free(xreg2);
				goto out;
			}
			d = view_diff(&xv2, &mg);
			if (!d)
				d = graph_diff(&mg, &bg);
			if (!d && memcmp(bcopy, breg, bsz) != 0)
				d = "the base region changed";
			free(xreg);
			free(xreg2);
			free(mreg);
			if (d)
			{
				snprintf(why, whylen, "undone: %s", d);
				goto out;
			}
			delta_rounds++;
		}
delta_done:
		;
	}
	if (st.arcs_before != bg.num_edges || st.arcs_after != rg.num_edges || st.inserted_nodes != nnew ||
		st.deleted_nodes != ch.num_removed_nodes || st.inserted_edges != ch.num_added_edges ||
		st.deleted_edges != nre)
	{
		snprintf(why, whylen, "stats");
		goto out;
	}
	ok = true;
out:
	free(breg);
	free(dreg);
	free(rreg);
	free(bcopy);
	return ok;
}

static void
test_random(void)
{
	int			rounds = 0,
				failed = 0;
	char		why[800] = "";

	for (int mask = 0; mask < 32; mask++)
	{
		opts		o = {0};

		o.undirected = mask & 1;
		o.weighted = mask & 2;
		o.feat = (mask & 4) ? GNN_FEAT_SPARSE : (mask & 8) ? GNN_FEAT_DENSE : GNN_FEAT_NONE;
		o.labels = mask & 16;
		o.split = (mask & 20) != 0;
		o.class_names = (mask & 24) == 24;
		for (int threads = 1; threads <= 2; threads++)
		{
			int			f = 0;

			o.nthreads = threads;
			for (uint64_t seed = 1; seed <= (uint64_t) check_len(24, 8); seed++)
			{
				char		w[600];

				rounds++;
				if (!random_round(seed * 100 + mask, &o, w, sizeof(w)))
				{
					if (!failed)
						snprintf(why, sizeof(why), "mask %d threads %d seed %llu: %.500s", mask, threads,
								 (unsigned long long) seed, w);
					f++;
					failed++;
				}
			}
			CHECK(f == 0, "random changes = a fresh build (%s, %s, feat %d, labels %d, split %d, %d thread%s)",
				  o.undirected ? "undirected" : "directed", o.weighted ? "weighted" : "unweighted", o.feat,
				  o.labels, o.split, threads, threads > 1 ? "s" : "");
		}
	}
	if (failed)
		NOTE("first failure: %s", why);
	NOTE("%d random rounds, %d failed", rounds, failed);
	CHECK(delta_rounds > rounds / 8, "deltas checked in %d of the rounds (made, read, flattened, piled up, undone)",
		  delta_rounds);
}

/* a small fixed graph for the error cases */
static void
test_errors(void)
{
	int64_t		ids[] = {1, 2, 3, 4};
	int32_t		labels[] = {0, 1, 2, -1};
	int64_t		src[] = {1, 1, 2, 3, 4};
	int64_t		dst[] = {2, 2, 3, 3, 1};
	gnn_graph_input in = {0};
	gnn_graph	g,
				d;
	gnn_error	err;
	void	   *region,
			   *dreg;
	uint64_t	size,
				dsz;

	in.num_nodes = 4;
	in.node_ids = ids;
	in.labels = labels;
	in.num_edges = 5;
	in.src = src;
	in.dst = dst;
	in.keep_arc_rows = true;
	CHECK(gnn_graph_build_region(&in, &region, &size, &g, &err) == GNN_OK, "error base builds");
	CHECK(g.arc_rows && g.num_edges == 4, "arcs 1->2 (2 rows), 2->3, 3->3, 4->1");
	CHECK(g.arc_rows[0] == 2 && g.arc_rows[1] == 1 && g.arc_rows[2] == 1 && g.arc_rows[3] == 1,
		  "arc_rows counts the duplicate");
	void	   *copy = malloc(size);

	memcpy(copy, region, size);

	struct
	{
		const char *name;
		int64_t		rs[3], rd[3];
		int			nr;
		int64_t		as[2], ad[2];
		int			na;
		int64_t		rn;
		int			nrn;
		int64_t		up;
		int32_t		lab;
		bool		skip;
		gnn_status	want;
		int64_t		row;
	}			cases[] = {
		{"removing an arc the graph lacks", {1, 2}, {2, 1}, 2, {0}, {0}, 0, 0, 0, 0, 0, false, GNN_ERR_INVALID, 1},
		{"removing a row three times of two", {1, 1, 1}, {2, 2, 2}, 3, {0}, {0}, 0, 0, 0, 0, 0, false, GNN_ERR_INVALID, 2},
		{"removing a row whose endpoint is new", {1}, {9}, 1, {0}, {0}, 0, 0, 0, 9, -1, false, GNN_ERR_INVALID, 0},
		{"removing a row at an unknown node", {1}, {77}, 1, {0}, {0}, 0, 0, 0, 0, 0, false, GNN_ERR_DANGLING, 0},
		{"adding a row to an unknown node", {0}, {0}, 0, {1, 5}, {2, 1}, 2, 0, 0, 0, 0, false, GNN_ERR_DANGLING, 1},
		{"adding a row to a removed node", {0}, {0}, 0, {1}, {3}, 1, 3, 1, 0, 0, false, GNN_ERR_DANGLING, 0},
		{"removing a node that is not there", {0}, {0}, 0, {0}, {0}, 0, 8, 1, 0, 0, false, GNN_ERR_INVALID, 0},
		{"a label past the classes", {0}, {0}, 0, {0}, {0}, 0, 0, 0, 2, 3, false, GNN_ERR_INVALID, 0},
	};

	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++)
	{
		gnn_graph_changes ch = {0};

		ch.num_removed_edges = cases[c].nr;
		ch.rm_src = cases[c].rs;
		ch.rm_dst = cases[c].rd;
		ch.num_added_edges = cases[c].na;
		ch.add_src = cases[c].as;
		ch.add_dst = cases[c].ad;
		ch.num_removed_nodes = cases[c].nrn;
		ch.rm_nodes = &cases[c].rn;
		ch.num_upserted_nodes = cases[c].up ? 1 : 0;
		ch.up_ids = &cases[c].up;
		ch.up_labels = &cases[c].lab;
		ch.skip_dangling = cases[c].skip;
		alloc_calls = 0;
		dreg = (void *) 1;
		gnn_status	s = apply(&g, &ch, &dreg, &dsz, &d, NULL, &err);

		CHECK(s == cases[c].want && err.row == cases[c].row && dreg == NULL && alloc_calls == 0,
			  "%s: %s, row %lld, no region (%s)", cases[c].name, gnn_status_name(s), (long long) err.row, err.msg);
	}
	/* skip_dangling: the rows at unknown nodes are no arcs (and still counted) */
	{
		int64_t		as[] = {1, 5, 4},
					ad[] = {3, 1, 77};
		gnn_graph_changes ch = {0};
		gnn_graph_change_stats st;

		ch.num_added_edges = 3;
		ch.add_src = as;
		ch.add_dst = ad;
		ch.skip_dangling = true;
		CHECK(apply(&g, &ch, &dreg, &dsz, &d, &st, &err) == GNN_OK, "skip_dangling: %s", err.msg);
		CHECK(d.num_edges == 5 && st.inserted_edges == 3 && st.arcs_after == 5, "one arc added of three rows");
		free(dreg);
	}
	/*
	 * removing both rows of 1->2 takes the arc; removing a row at a removed
	 * node is quiet; a row left at a removed node dangles, as in a build,
	 * unless dangling rows are skipped
	 */
	{
		int64_t		rs[] = {1, 3, 1, 2},
					rd[] = {2, 3, 2, 3},
					rn = 3;
		gnn_graph_changes ch = {0};

		ch.num_removed_edges = 3;
		ch.rm_src = rs;
		ch.rm_dst = rd;
		ch.num_removed_nodes = 1;
		ch.rm_nodes = &rn;
		CHECK(apply(&g, &ch, &dreg, &dsz, &d, NULL, &err) == GNN_ERR_DANGLING && err.row == 0 && err.id == 3 &&
			  !dreg && strstr(err.msg, "1 edge row still refers"),
			  "a removed node that an edge row (2->3) still refers to: dangling (%s)", err.msg);
		ch.skip_dangling = true;
		CHECK(apply(&g, &ch, &dreg, &dsz, &d, NULL, &err) == GNN_OK, "skipped, as a build skips it: %s", err.msg);
		free(dreg);
		ch.skip_dangling = false;
		ch.num_removed_edges = 4;
		CHECK(apply(&g, &ch, &dreg, &dsz, &d, NULL, &err) == GNN_OK, "remove rows and a node: %s", err.msg);
		CHECK(d.num_nodes == 3 && d.num_edges == 1 && d.ids[2] == 4 && d.indices[d.indptr[2]] == 0,
			  "only 4->1 is left");
		CHECK(d.num_classes == 2 && d.labels[2] == -1, "classes recounted as a build does (%d)", d.num_classes);
		free(dreg);
	}
	/* a typed graph is not supported (yet) */
	{
		gnn_graph	t = g;
		gnn_graph_changes ch = {0};

		t.num_edge_types = 2;
		dreg = (void *) 1;
		CHECK(apply(&t, &ch, &dreg, &dsz, &d, NULL, &err) == GNN_ERR_UNSUPPORTED && dreg == NULL,
			  "typed graphs: unsupported");
	}
	/* the changes leave no node */
	{
		int64_t		rn[] = {1, 2, 3, 4};
		gnn_graph_changes ch = {0};

		ch.num_removed_nodes = 4;
		ch.rm_nodes = rn;
		CHECK(apply(&g, &ch, &dreg, &dsz, &d, NULL, &err) == GNN_ERR_EMPTY, "no node left: empty");
	}
	CHECK(memcmp(copy, region, size) == 0, "the base region is untouched by any of these");
	free(copy);
	free(region);
}

/* undirected self-loops: a row is both arcs; a self-loop row is 2 rows on one arc */
static void
test_undirected_rows(void)
{
	int64_t		src[] = {1, 2, 2},
				dst[] = {2, 2, 1};
	float		w[] = {1, 3, 2};
	gnn_graph_input in = {0};
	gnn_graph	g,
				d;
	gnn_error	err;
	void	   *region,
			   *dreg;
	uint64_t	size,
				dsz;

	in.num_edges = 3;
	in.src = src;
	in.dst = dst;
	in.weight = w;
	in.undirected = true;
	in.keep_arc_rows = true;
	CHECK(gnn_graph_build_region(&in, &region, &size, &g, &err) == GNN_OK, "undirected base");
	/* arcs: 1->2 (rows 1-2 and 2-1: 2 rows, w 3), 2->1 (2 rows, w 3), 2->2 (2 rows, w 6) */
	CHECK(g.num_edges == 3 && g.arc_rows[0] == 2 && g.arc_rows[1] == 2 && g.arc_rows[2] == 2 &&
		  g.weights[2] == 6.0f, "undirected arc rows: %d %d %d", g.arc_rows[0], g.arc_rows[1], g.arc_rows[2]);
	int64_t		rs[] = {2},
				rd[] = {2};
	float		rw[] = {3};
	gnn_graph_changes ch = {0};

	ch.undirected = true;
	ch.num_removed_edges = 1;
	ch.rm_src = rs;
	ch.rm_dst = rd;
	ch.rm_weight = rw;
	CHECK(apply(&g, &ch, &dreg, &dsz, &d, NULL, &err) == GNN_OK && d.num_edges == 2,
		  "removing the self-loop row takes its arc");
	free(dreg);
	ch.num_removed_edges = 0;
	ch.num_added_edges = 1;
	ch.add_src = rd;
	ch.add_dst = rs;
	ch.add_weight = rw;
	CHECK(apply(&g, &ch, &dreg, &dsz, &d, NULL, &err) == GNN_OK && d.num_edges == 3 &&
		  d.arc_rows[2] == 4 && d.weights[2] == 12.0f, "adding a self-loop row adds 2 rows, twice its weight");
	free(dreg);
	free(region);
}


/*
 * A base built without arc_rows (one row per arc; an undirected self-loop
 * two), times and targets carried over, a node removed and re-added in one
 * change set (new: its old arcs gone, its data fresh), features kept when
 * the upserts give none, and the last of two upserts of a node winning.
 */
static void
test_no_arc_rows_and_node_data(void)
{
	int64_t		ids[] = {10, 20, 30};
	float		feat[] = {1, 2, 3, 4, 5, 6};
	int64_t		tm[] = {100, GNN_TIME_NONE, 300};
	float		tg[] = {1.5f, NAN, 2.5f};
	int32_t		lab[] = {0, 1, 1};
	int64_t		src[] = {10, 20, 30},
				dst[] = {20, 30, 10};
	gnn_graph_input in = {0};
	gnn_graph	g,
				d,
				r;
	gnn_error	err;
	void	   *region,
			   *dreg,
			   *rreg;
	uint64_t	size,
				dsz,
				rsz;

	in.num_nodes = 3;
	in.node_ids = ids;
	in.feat_dim = 2;
	in.feat = feat;
	in.node_time = tm;
	in.targets = tg;
	in.labels = lab;
	in.num_edges = 3;
	in.src = src;
	in.dst = dst;
	CHECK(gnn_graph_build_region(&in, &region, &size, &g, &err) == GNN_OK && !g.arc_rows,
		  "a base without arc_rows: %s", err.msg);

	int64_t		rn[] = {30},
				up[] = {30, 40, 20, 20},
				rs[] = {10, 30},
				rd[] = {20, 10},
				as[] = {30},
				ad[] = {40};
	int32_t		ul[] = {-1, 0, 0, 1};
	gnn_graph_changes ch = {0};
	gnn_graph_change_stats st;

	ch.num_removed_nodes = 1;
	ch.rm_nodes = rn;
	ch.num_upserted_nodes = 4;
	ch.up_ids = up;
	ch.up_labels = ul;
	ch.num_removed_edges = 2;
	ch.rm_src = rs;
	ch.rm_dst = rd;
	ch.num_added_edges = 1;
	ch.add_src = as;
	ch.add_dst = ad;
	ch.skip_dangling = true;	/* 30's other rows go with it */
	CHECK(apply(&g, &ch, &dreg, &dsz, &d, &st, &err) == GNN_OK, "remove, re-add, upsert: %s", err.msg);

	int64_t		rids[] = {10, 20, 30, 40};
	float		rfeat[] = {1, 2, 3, 4, 0, 0, 0, 0};
	int64_t		rtm[] = {100, GNN_TIME_NONE, GNN_TIME_NONE, GNN_TIME_NONE};
	float		rtg[] = {1.5f, NAN, NAN, NAN};
	int32_t		rlab[] = {0, 1, -1, 0};
	gnn_graph_input ri = in;

	ri.num_nodes = 4;
	ri.node_ids = rids;
	ri.feat = rfeat;
	ri.node_time = rtm;
	ri.targets = rtg;
	ri.labels = rlab;
	ri.num_edges = 1;
	ri.src = as;
	ri.dst = ad;
	ri.keep_arc_rows = true;
	CHECK(gnn_graph_build_region(&ri, &rreg, &rsz, &r, &err) == GNN_OK, "reference: %s", err.msg);
	const char *why = graph_diff(&d, &r);

	CHECK(!why, "equals the build of the changed rows (%s)", why ? why : "");
	CHECK(d.time && r.time && memcmp(d.time, r.time, 8 * 4) == 0, "times kept, none for new nodes");
	CHECK(d.targets && d.targets[0] == 1.5f && isnan(d.targets[1]) && isnan(d.targets[2]) && isnan(d.targets[3]),
		  "targets kept, none for new nodes");
	CHECK(st.inserted_nodes == 2 && st.deleted_nodes == 1 && st.updated_nodes == 1 && st.arcs_before == 3 &&
		  st.arcs_after == 1, "stats: %lld new, %lld removed, %lld updated", (long long) st.inserted_nodes,
		  (long long) st.deleted_nodes, (long long) st.updated_nodes);
	free(dreg);
	free(rreg);
	free(region);

	/* undirected, no arc_rows: a self-loop arc holds its row twice */
	int64_t		us[] = {1, 1},
				ud[] = {1, 2};
	gnn_graph_input ui = {0};

	ui.num_edges = 2;
	ui.src = us;
	ui.dst = ud;
	ui.undirected = true;
	CHECK(gnn_graph_build_region(&ui, &region, &size, &g, &err) == GNN_OK && g.num_edges == 3, "undirected base");
	gnn_graph_changes uc = {0};

	uc.undirected = true;
	uc.num_removed_edges = 1;
	uc.rm_src = us;
	uc.rm_dst = ud;
	CHECK(apply(&g, &uc, &dreg, &dsz, &d, NULL, &err) == GNN_OK && d.num_edges == 2 && d.arc_rows[0] == 1 &&
		  d.arc_rows[1] == 1 && !d.weights, "removing the self-loop row of a base without arc_rows");
	free(dreg);
	uc.num_removed_edges = 2;
	uc.rm_src = (int64_t[]) {1, 1};
	uc.rm_dst = (int64_t[]) {1, 1};
	CHECK(apply(&g, &uc, &dreg, &dsz, &d, NULL, &err) == GNN_ERR_INVALID && err.row == 1 && !dreg,
		  "but not twice");
	free(region);
}

/* a delta belongs to its base, says when it cannot be one, and a corrupt one is refused */
static void
test_delta_errors(void)
{
	int64_t		ids[] = {1, 2, 3, 4};
	int64_t		src[] = {1, 2, 3, 4};
	int64_t		dst[] = {2, 3, 4, 1};
	gnn_graph_input in = {0};
	gnn_graph	g,
				g2,
				v,
				f;
	gnn_error	err;
	void	   *region,
			   *region2,
			   *dreg = NULL,
			   *mem = NULL;
	uint64_t	size,
				size2,
				dsz = 0;
	gnn_graph_changes ch = {0};

	in.num_nodes = 4;
	in.node_ids = ids;
	in.num_edges = 4;
	in.src = src;
	in.dst = dst;
	in.keep_arc_rows = true;
	CHECK(gnn_graph_build_region(&in, &region, &size, &g, &err) == GNN_OK, "delta base builds");
	in.num_edges = 3;
	CHECK(gnn_graph_build_region(&in, &region2, &size2, &g2, &err) == GNN_OK, "another graph of the same nodes");
	CHECK(gnn_graph_flatten(&g, &f, &mem, &err) == GNN_OK && mem == NULL && f.indptr == g.indptr,
		  "a graph without a delta flattens to itself");

	ch.num_added_edges = 1;
	ch.add_src = (int64_t[]) {1};
	ch.add_dst = (int64_t[]) {3};
	ch.as_delta = true;
	ch.max_delta_bytes = 64;
	alloc_calls = 0;
	CHECK(gnn_graph_apply_changes(&g, &ch, count_alloc, NULL, &dreg, &dsz, NULL, &err) == GNN_ERR_UNSUPPORTED &&
		  !dreg && alloc_calls == 0 && strstr(err.msg, "allowed"),
		  "a delta over max_delta_bytes: unsupported, nothing allocated (%s)", err.msg);
	ch.max_delta_bytes = 0;
	ch.num_upserted_nodes = 1;
	ch.up_ids = (int64_t[]) {9};
	CHECK(gnn_graph_apply_changes(&g, &ch, count_alloc, NULL, &dreg, &dsz, NULL, &err) == GNN_ERR_UNSUPPORTED &&
		  !dreg && alloc_calls == 0, "a new node cannot be a delta (%s)", err.msg);
	ch.num_upserted_nodes = 0;
	CHECK(gnn_graph_apply_changes(&g, &ch, count_alloc, NULL, &dreg, &dsz, NULL, &err) == GNN_OK && dreg,
		  "an added arc is a delta: %s", err.msg);
	CHECK(gnn_graph_attach_delta(region, size, dreg, dsz, &v, &err) == GNN_OK && v.has_delta && v.num_edges == 5 &&
		  gnn_graph_out_degree(&v, 0) == 2 && gnn_graph_in_degree(&v, 2) == 2 && gnn_graph_out_degree(&g, 0) == 1,
		  "read through the delta: node 1 has two out-arcs, node 3 two in-arcs; the base is as it was");
	CHECK(gnn_graph_check_delta(&v, &err) == GNN_OK, "the delta checks out");
	CHECK(gnn_graph_attach_delta(region2, size2, dreg, dsz, &v, &err) == GNN_ERR_CORRUPT &&
		  strstr(err.msg, "belong"), "a delta over another graph is refused (%s)", err.msg);
	CHECK(gnn_graph_attach_delta(region, size, dreg, sizeof(gnn_delta_header) - 1, &v, &err) == GNN_ERR_CORRUPT,
		  "a short delta is refused");
	{
		gnn_delta_header *h = dreg;
		int32_t		keep;

		h->num_edges++;
		CHECK(gnn_graph_attach_delta(region, size, dreg, dsz, &v, &err) == GNN_ERR_CORRUPT,
			  "a delta whose header was changed is refused (checksum)");
		h->num_edges--;
		CHECK(gnn_graph_attach_delta(region, size, dreg, dsz, &v, &err) == GNN_OK, "and taken again");
		keep = ((int32_t *) ((char *) dreg + h->off_fidx))[0];
		((int32_t *) ((char *) dreg + h->off_fidx))[0] = 1000;
		CHECK(gnn_graph_check_delta(&v, &err) == GNN_ERR_CORRUPT, "an arc outside the graph: the full check finds it");
		((int32_t *) ((char *) dreg + h->off_fidx))[0] = keep;
		((int64_t *) ((char *) dreg + h->off_fptr))[h->fwd_rows] += 1;
		CHECK(gnn_graph_attach_delta(region, size, dreg, dsz, &v, &err) == GNN_ERR_CORRUPT,
			  "row pointers that do not end at the arc count are refused");
	}
	free(dreg);
	free(region);
	free(region2);
}

/*
 * A graph with text keys of its own: edge rows and node data change in
 * place (a merge and a delta), and the keys stay with the nodes; a node that
 * comes or goes would renumber them (unsupported: the caller reloads).
 */
static void
test_text_keys(void)
{
	int64_t		ids[] = {0, 1, 2, 3};
	const char	kb[] = "alicebobcarolda";
	int64_t		koff[] = {0, 5, 8, 13, 15};
	float		feat[] = {1, 2, 3, 4, 5, 6, 7, 8};
	int64_t		src[] = {0, 1, 2, 3},
				dst[] = {1, 2, 3, 0};
	gnn_graph_input in = {0};
	gnn_graph	g,
				d,
				v,
				r;
	gnn_error	err;
	void	   *region,
			   *dreg,
			   *vreg,
			   *rreg;
	uint64_t	size,
				dsz,
				vsz,
				rsz;

	in.num_nodes = 4;
	in.node_ids = ids;
	in.key_off = koff;
	in.key_bytes = kb;
	in.type_text_key = (const uint8_t *) "\1";
	in.keep_arc_rows = true;
	in.feat_dim = 2;
	in.feat = feat;
	in.num_edges = 4;
	in.src = src;
	in.dst = dst;
	CHECK(gnn_graph_build_region(&in, &region, &size, &g, &err) == GNN_OK && g.key_off,
		  "a text-keyed base: %s", err.msg);

	int64_t		rs[] = {0},
				rd[] = {1},
				as[] = {0, 3},
				ad[] = {2, 3},
				up[] = {2};
	float		uf[] = {-1, -1};
	gnn_graph_changes ch = {0};

	ch.num_removed_edges = 1;
	ch.rm_src = rs;
	ch.rm_dst = rd;
	ch.num_added_edges = 2;
	ch.add_src = as;
	ch.add_dst = ad;
	ch.num_upserted_nodes = 1;
	ch.up_ids = up;
	ch.up_feat = uf;
	CHECK(apply(&g, &ch, &dreg, &dsz, &d, NULL, &err) == GNN_OK, "edge rows and features of a text-keyed graph: %s",
		  err.msg);

	/* the reference: a build of the changed rows with the same keys */
	int64_t		s2[] = {0, 1, 2, 3, 3},
				d2[] = {2, 2, 3, 0, 3};
	float		f2[] = {1, 2, 3, 4, -1, -1, 7, 8};
	gnn_graph_input ri = in;

	ri.feat = f2;
	ri.num_edges = 5;
	ri.src = s2;
	ri.dst = d2;
	CHECK(gnn_graph_build_region(&ri, &rreg, &rsz, &r, &err) == GNN_OK, "reference: %s", err.msg);
	{
		const char *why = graph_diff(&d, &r);

		CHECK(!why, "equals the build of the changed rows (%s)", why ? why : "");
	}
	CHECK(d.key_off && memcmp(d.key_off, koff, sizeof(koff)) == 0 && memcmp(d.key_bytes, kb, 15) == 0 &&
		  d.type_text_key && d.type_text_key[0] == 1, "the keys are kept");
	CHECK(gnn_graph_find_text(&d, 0, "carol", 5) == 2 && gnn_graph_find_text(&d, 0, "zed", 3) == -1,
		  "and found by key");

	/* the same as a delta: read through the view, keys from the base */
	ch.as_delta = true;
	{
		gnn_status	s = gnn_graph_apply_changes(&g, &ch, count_alloc, NULL, &vreg, &vsz, NULL, &err);

		CHECK(s == GNN_OK && gnn_graph_attach_delta(region, size, vreg, vsz, &v, &err) == GNN_OK,
			  "as a delta: %s", err.msg);
		if (s == GNN_OK)
		{
			const char *why = view_diff(&v, &d);

			CHECK(!why, "the delta view equals the merge (%s)", why ? why : "");
			CHECK(gnn_graph_find_text(&v, 0, "dan", 3) == -1 && gnn_graph_find_text(&v, 0, "da", 2) == 3,
				  "keys through the view");
			free(vreg);
		}
	}
	ch.as_delta = false;
	free(dreg);

	/* nodes that come or go: unsupported, nothing asked for */
	{
		int64_t		rn[] = {1},
					nu[] = {7};
		gnn_graph_changes c2 = {0};

		c2.num_removed_nodes = 1;
		c2.rm_nodes = rn;
		alloc_calls = 0;
		dreg = (void *) 1;
		CHECK(apply(&g, &c2, &dreg, &dsz, &d, NULL, &err) == GNN_ERR_UNSUPPORTED && dreg == NULL && alloc_calls == 0,
			  "a node removed from a text-keyed graph: unsupported (%s)", err.msg);
		memset(&c2, 0, sizeof(c2));
		c2.num_upserted_nodes = 1;
		c2.up_ids = nu;
		c2.up_feat = uf;
		CHECK(apply(&g, &c2, &dreg, &dsz, &d, NULL, &err) == GNN_ERR_UNSUPPORTED && dreg == NULL && alloc_calls == 0,
			  "a new node: unsupported (%s)", err.msg);
	}
	/* mapping in ahead of a merge, in a thread: a hint, the graph as it was */
	{
		uint64_t	before = gnn_graph_fnv1a(region, size);
		void	   *h = gnn_graph_premap_start(&g, GNN_PREMAP_TOPOLOGY | GNN_PREMAP_FEATURES);

		gnn_graph_premap_join(h);
		gnn_graph_premap_join(NULL);
		CHECK(gnn_graph_fnv1a(region, size) == before, "premap reads, changes nothing");
	}
	free(rreg);
	free(region);
}

int
main(void)
{
	test_text_keys();
	test_delta_errors();
	test_no_arc_rows_and_node_data();
	test_errors();
	test_undirected_rows();
	test_random();
	return check_done();
}
