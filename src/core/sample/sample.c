/*
 * sample.c: neighbour and LADIES samplers into blocks, random walks,
 * feature gathers.  See sample.h for the conventions.
 *
 * Neighbour sampling runs in three passes per hop: row sizes (prefix sum),
 * parallel draws into global ids (each chunk of CHUNK destination rows with
 * its own RNG stream, so results do not depend on the thread count; or, with
 * per_node_streams, each destination with its own), then
 * the relabel (first appearance order) and a parallel per-row sort of the
 * local ids.  The relabel's one sequential pass tests a bit per draw (a bit
 * per graph node, set while the node is in the batch: 300 KB for 2.5M
 * nodes, in cache) and lists the new nodes; the generation-stamped slots
 * that hold local indices are then written and read on every thread.
 */
#include "sample/sample.h"
#include "store/feature_store.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#define CHUNK 256
#define PREFETCH 16

typedef struct gnn_mark_slot
{
	int32_t		gen;
	int32_t		local;
} gnn_mark_slot;

struct gnn_sampler
{
	const gnn_graph *g;
	gnn_sampler_config cfg;
	/*
	 * [n] per graph node: its generation stamp and, where the stamp is the
	 * current generation, its local index.  Both in one 8-byte slot, so that
	 * the serial relabel misses the cache once per draw, not twice.
	 */
	gnn_mark_slot *slot;
	int32_t		gen;
	/* the current generation: gen, or a sampler's whose slots these are (gnn_sampler_create_sharing) */
	int32_t    *genp;
	bool		slot_borrowed;
	/*
	 * Node-wise batches: a bit per graph node, set while the node is in the
	 * batch (seen_n: the batch's nodes[] prefix whose bits are set, cleared
	 * before the next batch).  The relabel's serial pass reads only these
	 * bits (an eighth of a byte a node: in cache where the slots are not)
	 * and lists first appearances; the slots are written and read by every
	 * thread after it.
	 */
	uint64_t   *seen;
	int64_t		seen_n;
	/* LADIES: candidate accumulation */
	int32_t    *cmark;
	int32_t    *cpos;
	int32_t		cgen;
	/* owned outputs, grown as needed */
	int64_t    *indptr[GNN_MAX_LAYERS];
	size_t		cap_indptr[GNN_MAX_LAYERS];
	int32_t    *indices[GNN_MAX_LAYERS];
	size_t		cap_indices[GNN_MAX_LAYERS];
	float	   *weights[GNN_MAX_LAYERS];
	size_t		cap_weights[GNN_MAX_LAYERS];
	int32_t    *nodes;			/* all nodes of the batch, hop prefixes */
	size_t		cap_nodes;
	int32_t    *picked;			/* global ids of sampled edges, scratch */
	size_t		cap_picked;

	/* typed graphs (g->num_edge_types > 1) */
	int32_t		nrel;			/* relations, 0 when the graph has one */
	int32_t    *rel_ptr;		/* [T+1]: relations into node type t are */
	int32_t    *rel_list;		/* rel_list[rel_ptr[t] .. rel_ptr[t+1]) */
	bool	   *rel_shared;		/* [R]: another relation joins the same types */
	int32_t    *tfan;			/* [nhops * R]: fan-out per hop and relation */
	int16_t    *etypes[GNN_MAX_LAYERS];
	size_t		cap_etypes[GNN_MAX_LAYERS];
	int16_t    *ntypes;			/* node type of each batch node (T > 1) */
	size_t		cap_ntypes;

	/*
	 * Temporal sampling: each batch node carries a time bound, and nodes are
	 * told apart by (node, bound), so the marker array (one slot per graph
	 * node) cannot relabel; an open-addressing table of local indices,
	 * cleared per batch (its size follows the batch, not the graph), does.
	 */
	int64_t    *bound;			/* parallel to nodes */
	size_t		cap_bound;
	int32_t    *htab;			/* local index or -1 */
	size_t		hcap;			/* power of two */
};

static bool
grow(void **p, size_t *cap, size_t need, size_t elem)
{
	void	   *q;
	size_t		n;

	if (need <= *cap)
		return true;
	n = *cap ? *cap : 1024;
	while (n < need)
		n *= 2;
	q = realloc(*p, n * elem);
	if (!q)
		return false;
	*p = q;
	*cap = n;
	return true;
}

gnn_status
gnn_sampler_config_check(const gnn_sampler_config *c, gnn_error *err)
{
	if (c->kind != GNN_SAMPLER_NEIGHBOR && c->kind != GNN_SAMPLER_LADIES)
		return gnn_error_set(err, GNN_ERR_INVALID, "unknown sampler %d (accepted: neighbor, ladies)", (int) c->kind);
	if (c->nhops < 1 || c->nhops > GNN_MAX_LAYERS)
		return gnn_error_set(err, GNN_ERR_INVALID, "the number of fan-outs must be in [1, %d], got %d",
							 GNN_MAX_LAYERS, c->nhops);
	if (c->kind == GNN_SAMPLER_LADIES && (c->type_fanouts || c->temporal))
		return gnn_error_set(err, GNN_ERR_INVALID, "typed fan-outs and temporal sampling need the neighbor sampler");
	if (c->kind == GNN_SAMPLER_LADIES && c->per_node_streams)
		return gnn_error_set(err, GNN_ERR_INVALID, "per-node streams need the neighbor sampler (ladies draws per layer)");
	if (c->first_hop < 0 || c->first_hop >= GNN_MAX_LAYERS)
		return gnn_error_set(err, GNN_ERR_INVALID, "first hop must be in [0, %d), got %d", GNN_MAX_LAYERS,
							 c->first_hop);
	if (c->temporal && c->temporal_strategy != 0 && c->temporal_strategy != 1)
		return gnn_error_set(err, GNN_ERR_INVALID, "unknown temporal strategy %d (accepted: 0 = uniform, 1 = last)",
							 c->temporal_strategy);
	/* typed fan-outs replace fanouts[]; gnn_sampler_create checks them against the graph's relations */
	for (int h = 0; h < c->nhops && !c->type_fanouts; h++)
	{
		int32_t		k = c->fanouts[h];

		if (k == -1 && c->kind == GNN_SAMPLER_LADIES)
			return gnn_error_set(err, GNN_ERR_INVALID, "the ladies sampler needs a layer size >= 1 at hop %d, got -1", h + 1);
		if (k != -1 && (k < 1 || k > GNN_SAMPLE_MAX_FANOUT))
			return gnn_error_set(err, GNN_ERR_INVALID, "fan-out at hop %d must be -1 (all) or in [1, %d], got %d",
								 h + 1, GNN_SAMPLE_MAX_FANOUT, k);
	}
	if (c->nthreads < 0)
		return gnn_error_set(err, GNN_ERR_INVALID, "threads must be >= 0, got %d", c->nthreads);
	return GNN_OK;
}

/*
 * What the sampler needs of a graph's types: the relations into each node
 * type, which relations interleave with another in the rows (same source and
 * destination types: their arcs must be told apart by rarc_type), and the
 * fan-out of every (hop, relation).  On a graph with one relation, typed
 * fan-outs are plain fan-outs and the homogeneous path runs.
 */
static gnn_status
typed_setup(gnn_sampler *s, gnn_error *err)
{
	const gnn_graph *g = s->g;
	const gnn_sampler_config *c = &s->cfg;
	int32_t		R = g->num_edge_types > 1 ? g->num_edge_types : 1;
	int32_t		T = g->num_node_types > 1 ? g->num_node_types : 1;
	int			L = c->nhops;

	if (c->temporal && !g->time)
		return gnn_error_set(err, GNN_ERR_INVALID, "temporal sampling needs node times; the graph has none");
	for (int h = 0; c->type_fanouts && h < L; h++)
		for (int32_t r = 0; r < R; r++)
		{
			int32_t		k = c->type_fanouts[h * R + r];

			if (k < -1 || k > GNN_SAMPLE_MAX_FANOUT)
				return gnn_error_set(err, GNN_ERR_INVALID,
									 "fan-out at hop %d for relation %d must be -1 (all), 0 (none) or in [1, %d], got %d",
									 h + 1, r, GNN_SAMPLE_MAX_FANOUT, k);
		}
	if (R == 1)
	{
		for (int h = 0; c->type_fanouts && h < L; h++)
			s->cfg.fanouts[h] = c->type_fanouts[h];
		s->cfg.type_fanouts = NULL;
		return GNN_OK;
	}
	if (c->kind == GNN_SAMPLER_LADIES)
		return gnn_error_set(err, GNN_ERR_INVALID,
							 "the ladies sampler does not sample typed graphs (this one has %d relations); use the neighbor sampler",
							 R);
	if (!g->rarc_type || !g->etypes || !g->type_ptr)
		return gnn_error_set(err, GNN_ERR_CORRUPT, "the graph has %d relations but no relation of its arcs", R);
	for (int32_t r = 0; r < R; r++)
		if (g->etypes[r].src_type < 0 || g->etypes[r].src_type >= T ||
			g->etypes[r].dst_type < 0 || g->etypes[r].dst_type >= T)
			return gnn_error_set(err, GNN_ERR_CORRUPT, "relation %d joins node types outside [0, %d)", r, T);
	s->nrel = R;
	s->rel_ptr = calloc(T + 1, sizeof(int32_t));
	s->rel_list = malloc(sizeof(int32_t) * R);
	s->rel_shared = calloc(R, sizeof(bool));
	s->tfan = malloc(sizeof(int32_t) * L * R);
	if (!s->rel_ptr || !s->rel_list || !s->rel_shared || !s->tfan)
		return gnn_error_set(err, GNN_ERR_NOMEM, "out of memory");
	/* relations grouped by destination type, in relation order within a type */
	for (int32_t r = 0; r < R; r++)
		s->rel_ptr[g->etypes[r].dst_type + 1]++;
	for (int32_t t = 0; t < T; t++)
		s->rel_ptr[t + 1] += s->rel_ptr[t];
	for (int32_t t = 0, k = 0; t < T; t++)
		for (int32_t r = 0; r < R; r++)
			if (g->etypes[r].dst_type == t)
				s->rel_list[k++] = r;
	for (int32_t r = 0; r < R; r++)
		for (int32_t q = 0; q < R; q++)
			if (q != r && g->etypes[q].src_type == g->etypes[r].src_type &&
				g->etypes[q].dst_type == g->etypes[r].dst_type)
				s->rel_shared[r] = true;
	for (int h = 0; h < L; h++)
		for (int32_t r = 0; r < R; r++)
			s->tfan[h * R + r] = c->type_fanouts ? c->type_fanouts[h * R + r] : c->fanouts[h];
	s->cfg.type_fanouts = s->tfan;
	return GNN_OK;
}

void
gnn_sampler_config_hops(const gnn_sampler_config *c, const gnn_graph *g, int first, int n, gnn_sampler_config *out)
{
	int32_t		R = g->num_edge_types > 1 ? g->num_edge_types : 1;

	*out = *c;
	out->nhops = n;
	for (int h = 0; h < n; h++)
		out->fanouts[h] = c->fanouts[first + h];
	if (c->type_fanouts)
		out->type_fanouts = c->type_fanouts + (int64_t) first * R;
	out->per_node_streams = true;
	out->first_hop = first;
}

gnn_status
gnn_sampler_create(const gnn_graph *g, const gnn_sampler_config *cfg, gnn_sampler **out,
				   gnn_error *err)
{
	return gnn_sampler_create_sharing(g, cfg, NULL, out, err);
}

gnn_status
gnn_sampler_create_sharing(const gnn_graph *g, const gnn_sampler_config *cfg, gnn_sampler *with,
						   gnn_sampler **out, gnn_error *err)
{
	gnn_sampler *s;
	gnn_status	st;

	*out = NULL;
	if ((st = gnn_sampler_config_check(cfg, err)) != GNN_OK)
		return st;
	if (g->num_nodes > INT32_MAX - 1)
		return gnn_error_set(err, GNN_ERR_LIMIT, "samplers use 32-bit node indices; the graph has %lld nodes",
							 (long long) g->num_nodes);
	s = calloc(1, sizeof(*s));
	if (!s)
		return gnn_error_set(err, GNN_ERR_NOMEM, "out of memory");
	s->g = g;
	s->cfg = *cfg;
	if (with && with->g == g)
	{
		s->slot = with->slot;
		s->genp = with->genp;
		s->slot_borrowed = true;
	}
	else
	{
		s->slot = gnn_calloc_big(g->num_nodes + 1, sizeof(gnn_mark_slot));
		s->genp = &s->gen;
	}
	s->seen = calloc((size_t) g->num_nodes / 64 + 1, sizeof(uint64_t));
	if (!s->slot || !s->seen)
	{
		gnn_sampler_free(s);
		return gnn_error_set(err, GNN_ERR_NOMEM, "out of memory for the sampler's marker arrays (%lld nodes)",
							 (long long) g->num_nodes);
	}
	if ((st = typed_setup(s, err)) != GNN_OK)
	{
		gnn_sampler_free(s);
		return st;
	}
	if (g->has_delta && (cfg->temporal || s->nrel > 0))
	{
		gnn_sampler_free(s);
		return gnn_error_set(err, GNN_ERR_UNSUPPORTED,
							 "typed and temporal sampling read a flat graph: merge its delta first (gnn_graph_flatten)");
	}
	if (cfg->kind == GNN_SAMPLER_LADIES)
	{
		s->cmark = calloc(g->num_nodes + 1, sizeof(int32_t));
		s->cpos = malloc(sizeof(int32_t) * (g->num_nodes + 1));
		if (!s->cmark || !s->cpos)
		{
			gnn_sampler_free(s);
			return gnn_error_set(err, GNN_ERR_NOMEM, "out of memory");
		}
	}
	*out = s;
	return GNN_OK;
}

void
gnn_sampler_free(gnn_sampler *s)
{
	if (!s)
		return;
	if (!s->slot_borrowed)
		free(s->slot);
	free(s->seen);
	free(s->cmark);
	free(s->cpos);
	for (int h = 0; h < GNN_MAX_LAYERS; h++)
	{
		free(s->indptr[h]);
		free(s->indices[h]);
		free(s->weights[h]);
	}
	free(s->nodes);
	free(s->picked);
	free(s->rel_ptr);
	free(s->rel_list);
	free(s->rel_shared);
	free(s->tfan);
	for (int h = 0; h < GNN_MAX_LAYERS; h++)
		free(s->etypes[h]);
	free(s->ntypes);
	free(s->bound);
	free(s->htab);
	free(s);
}

/*
 * A new generation of a marker array of n elements of elem bytes, each
 * starting with its int32 stamp (wraps by clearing).
 */
static void
next_gen(void *mark, size_t elem, int32_t *gen, int64_t n)
{
	if (*gen == INT32_MAX)
	{
		memset(mark, 0, elem * (size_t) n);
		*gen = 0;
	}
	(*gen)++;
}

/* add v to the batch's node list unless present; returns its local index */
static inline int32_t
relabel(gnn_sampler *s, int32_t v, int64_t *n)
{
	gnn_mark_slot *sl = &s->slot[v];

	if (sl->gen != *s->genp)
	{
		sl->gen = *s->genp;
		sl->local = (int32_t) *n;
		s->nodes[(*n)++] = v;
	}
	return sl->local;
}

/* sort a row's (index, weight) pairs by index: rows are short, insertion sort */
static void
sort_row(int32_t *idx, float *w, int64_t n)
{
	for (int64_t i = 1; i < n; i++)
	{
		int32_t		x = idx[i];
		float		y = w ? w[i] : 0;
		int64_t		j = i - 1;

		while (j >= 0 && idx[j] > x)
		{
			idx[j + 1] = idx[j];
			if (w)
				w[j + 1] = w[j];
			j--;
		}
		idx[j + 1] = x;
		if (w)
			w[j + 1] = y;
	}
}

/* thread-local scratch for weighted draws */
typedef struct scratch
{
	double	   *d;
	int32_t    *i;
	size_t		cap;
} scratch;

static bool
scratch_ensure(scratch *sc, size_t n)
{
	size_t		c1 = sc->cap,
				c2 = sc->cap;

	if (n <= sc->cap)
		return true;
	if (!grow((void **) &sc->d, &c1, n, sizeof(double)) || !grow((void **) &sc->i, &c2, n, sizeof(int32_t)))
		return false;
	sc->cap = c1 < c2 ? c1 : c2;
	return true;
}

/*
 * Weighted draws treat an edge of weight 0 (or negative, or NaN: the loader
 * refuses those) as absent: it is never drawn, and a row without a positive
 * weight has nothing to draw.
 */
static inline bool
weight_positive(float w)
{
	return w > 0;
}

/* edges a weighted draw can pick in a row */
static int64_t
positive_count(const float *w, int64_t deg)
{
	int64_t		n = 0;

	for (int64_t j = 0; j < deg; j++)
		n += weight_positive(w[j]);
	return n;
}

/* draws for a destination with avail candidate edges (deg, or positive_count when weighted) */
static inline int64_t
row_count(int64_t avail, int64_t k, bool replace)
{
	return k < 0 ? avail : replace ? (avail > 0 ? k : 0) : (k < avail ? k : avail);
}

/*
 * Draw cnt = row_count(positive_count(w, deg), k, replace) neighbours of one
 * row in proportion to w into out (global ids); ow as draw_row.
 */
static bool
draw_row_weighted(gnn_rng *r, const int32_t *nb, const float *w, int64_t deg, int64_t k,
				  int64_t cnt, bool replace, scratch *sc, int32_t *out, float *ow)
{
	int64_t		m = 0;

	if (!scratch_ensure(sc, (size_t) deg))
		return false;
	/* the candidates: positive-weight edges, in row order */
	for (int64_t j = 0; j < deg; j++)
		if (weight_positive(w[j]))
			sc->i[m++] = (int32_t) j;
	if (k < 0 || (!replace && k >= m))
	{
		for (int64_t t = 0; t < cnt; t++)
		{
			out[t] = nb[sc->i[t]];
			if (ow)
				ow[t] = w[sc->i[t]];
		}
		return true;
	}
	if (replace)
	{
		double		tot = 0;

		for (int64_t j = 0; j < m; j++)
			sc->d[j] = (tot += w[sc->i[j]]);
		for (int64_t t = 0; t < cnt; t++)
		{
			int64_t		lo = 0,
						hi = m - 1;
			double		u = gnn_rng_double(r) * tot;

			/* first candidate whose prefix sum exceeds u (the last if u rounded up to tot) */
			while (lo < hi)
			{
				int64_t		mid = (lo + hi) / 2;

				if (sc->d[mid] > u)
					hi = mid;
				else
					lo = mid + 1;
			}
			out[t] = nb[sc->i[lo]];
			if (ow)
				ow[t] = w[sc->i[lo]];
		}
		return true;
	}
	/* Efraimidis-Spirakis: the cnt largest keys log(u)/w among the candidates */
	for (int64_t j = 0; j < m; j++)
	{
		double		u = gnn_rng_double(r);

		sc->d[j] = log(u > 0 ? u : 1e-300) / w[sc->i[j]];
	}
	/* partial selection sort: cnt is small against m */
	for (int64_t t = 0; t < cnt; t++)
	{
		int64_t		best = t;

		for (int64_t j = t + 1; j < m; j++)
			if (sc->d[j] > sc->d[best])
				best = j;
		{
			double		td = sc->d[t];
			int32_t		ti = sc->i[t];

			sc->d[t] = sc->d[best];
			sc->i[t] = sc->i[best];
			sc->d[best] = td;
			sc->i[best] = ti;
		}
		out[t] = nb[sc->i[t]];
		if (ow)
			ow[t] = w[sc->i[t]];
	}
	return true;
}

/*
 * Draw cnt neighbours of one row (in-neighbour list nb[0..deg), weights w or
 * NULL) into out (global ids), ow (edge weights, may be NULL).  cnt is
 * row_count of the row's candidates: deg, or when weighted its
 * positive-weight edges.  Always inlined: the homogeneous loop relies on it
 * (a call costs it some 4% of its instructions), and the general path calls it
 * too, which would otherwise make the compiler keep it out of line.
 */
static inline __attribute__((always_inline)) bool
draw_row(gnn_rng *r, const int32_t *nb, const float *w, int64_t deg, int64_t k, int64_t cnt,
		 bool replace, bool weighted, scratch *sc, int32_t *out, float *ow)
{
	if (cnt == 0)
		return true;
	if (weighted && w)
		return draw_row_weighted(r, nb, w, deg, k, cnt, replace, sc, out, ow);
	if (k < 0 || (!replace && k >= deg))
	{
		memcpy(out, nb, sizeof(int32_t) * deg);
		if (ow)
			memcpy(ow, w, sizeof(float) * deg);
		return true;
	}
	if (replace)
	{
		for (int64_t t = 0; t < cnt; t++)
		{
			int64_t		j = (int64_t) gnn_rng_below(r, deg);

			out[t] = nb[j];
			if (ow)
				ow[t] = w[j];
		}
		return true;
	}
	if (k <= 64)
	{
		/* Floyd's algorithm: a uniform k-subset in k draws */
		int64_t		m = 0;

		for (int64_t j = deg - k; j < deg; j++)
		{
			int64_t		t = (int64_t) gnn_rng_below(r, j + 1);
			bool		seen = false;

			for (int64_t a = 0; a < m; a++)
				if (out[a] == (int32_t) t)
				{
					seen = true;
					break;
				}
			out[m++] = (int32_t) (seen ? j : t);
		}
		for (int64_t a = 0; a < m; a++)
		{
			int32_t		j = out[a];

			out[a] = nb[j];
			if (ow)
				ow[a] = w[j];
		}
		return true;
	}
	/* Knuth's selection sampling: one pass, k of deg */
	{
		int64_t		m = 0;

		for (int64_t j = 0; j < deg && m < k; j++)
			if ((double) (deg - j) * gnn_rng_double(r) < (double) (k - m))
			{
				out[m] = nb[j];
				if (ow)
					ow[m] = w[j];
				m++;
			}
	}
	return true;
}

/*
 * The stream of a destination under per-node streams: (hop, node, bound)
 * mixed into 64 bits (gnn_mix64, murmur3's finaliser, is a bijection, so two
 * nodes of one bound and hop never share a key).
 */

static inline void
node_stream(const gnn_sampler *s, const gnn_rng *base, int h, int32_t v, int64_t b, gnn_rng *r)
{
	uint64_t	node = s->cfg.stream_by_id ? gnn_graph_node_name(s->g, v) : (uint64_t) (uint32_t) v;
	uint64_t	key = gnn_mix64(gnn_mix64((uint64_t) b + 0x9e3779b97f4a7c15ULL) ^
							((node << 8) | (uint64_t) (s->cfg.first_hop + h)));

	gnn_rng_split(base, key, r);
}

/*
 * The draws of a hop (s->picked[0..nnz), global ids) to local indices (ix),
 * nodes new to the batch appended to s->nodes in first-appearance order;
 * the caller has grown s->nodes by nnz.  Node-wise batches only: the
 * batch's nodes have their bits in s->seen (gnn_sampler_sample_at).
 */
static void
relabel_draws(gnn_sampler *s, int64_t nnz, int32_t *ix, int64_t *n_total, int nt)
{
	const int32_t *pk = s->picked;
	int32_t    *nodes = s->nodes;
	uint64_t   *seen = s->seen;
	gnn_mark_slot *slot = s->slot;
	int32_t		gen = *s->genp;
	int64_t		n0 = *n_total,
				n = n0;

	/*
	 * first appearances, in draw order: a bit test per draw, the node
	 * written to the list every time and kept when it is new (no branch)
	 */
	for (int64_t e = 0; e < nnz; e++)
	{
		int32_t		v = pk[e];
		uint64_t	w = seen[v >> 6],
					b = (uint64_t) 1 << (v & 63);

		nodes[n] = v;
		n += (w & b) == 0;
		seen[v >> 6] = w | b;
	}
	*n_total = n;
	/* the new nodes' slots, then every draw's local index, on every thread */
#pragma omp parallel num_threads(nt) if (nnz > 4096 && nt > 1)
	{
#pragma omp for schedule(static)
		for (int64_t i = n0; i < n; i++)
		{
			slot[nodes[i]].gen = gen;
			slot[nodes[i]].local = (int32_t) i;
		}
#pragma omp for schedule(static)
		for (int64_t e = 0; e < nnz; e++)
		{
			if (e + PREFETCH < nnz)
				__builtin_prefetch(&slot[pk[e + PREFETCH]]);
			ix[e] = slot[pk[e]].local;
		}
	}
}

static gnn_status
hop_neighbor(gnn_sampler *s, int h, int64_t d0, int64_t nd, const gnn_rng *base,
			 int64_t *n_total, gnn_error *err)
{
	const gnn_graph *g = s->g;
	int64_t		k = s->cfg.fanouts[h];
	bool		replace = s->cfg.replace;
	bool		weighted = s->cfg.weighted && g->rweights != NULL;
	bool		keep_w = g->rweights != NULL && !weighted;
	const int32_t *dst = s->nodes + d0;
	int64_t    *ptr;
	int64_t		nnz;
	int64_t		nchunks = (nd + CHUNK - 1) / CHUNK;
	bool		ok = true;
	bool		per_node = s->cfg.per_node_streams;
	int			nt = gnn_team_for(s->cfg.nthreads);

	if (!grow((void **) &s->indptr[h], &s->cap_indptr[h], nd + 1, sizeof(int64_t)))
		return gnn_error_set(err, GNN_ERR_NOMEM, "out of memory sampling");
	ptr = s->indptr[h];
	ptr[0] = 0;

	/*
	 * Each row's count (a random read of the row's bounds, in parallel: on
	 * a large graph a serial pass here is a cache miss per row that the
	 * other threads would wait for), then their prefix sum.
	 */
#pragma omp parallel for num_threads(nt) schedule(static, CHUNK) if (nd > 4 * CHUNK && nt > 1)
	for (int64_t i = 0; i < nd; i++)
	{
		int32_t		v = dst[i];
		const int32_t *nb;
		const float *nw;
		int64_t		deg;

		if (i + PREFETCH < nd && !g->has_delta)
			__builtin_prefetch(&g->rindptr[dst[i + PREFETCH]]);
		deg = gnn_graph_in_row(g, v, &nb, &nw);
		ptr[i + 1] = row_count(weighted ? positive_count(nw, deg) : deg, k, replace);
	}
	for (int64_t i = 0; i < nd; i++)
		ptr[i + 1] += ptr[i];
	nnz = ptr[nd];
	if (nnz > INT32_MAX)
		return gnn_error_set(err, GNN_ERR_LIMIT, "hop %d samples %lld edges, more than 2^31", h + 1, (long long) nnz);
	if (!grow((void **) &s->picked, &s->cap_picked, nnz + 1, sizeof(int32_t)) ||
		!grow((void **) &s->indices[h], &s->cap_indices[h], nnz + 1, sizeof(int32_t)) ||
		(keep_w && !grow((void **) &s->weights[h], &s->cap_weights[h], nnz + 1, sizeof(float))))
		return gnn_error_set(err, GNN_ERR_NOMEM, "out of memory for %lld sampled edges", (long long) nnz);

#pragma omp parallel num_threads(nt) if (nnz > 4096 && nt > 1)
	{
		scratch		sc = {NULL, NULL, 0};

#pragma omp for schedule(dynamic, 1)
		for (int64_t c = 0; c < nchunks; c++)
		{
			gnn_rng		r;
			int64_t		end = (c + 1) * CHUNK < nd ? (c + 1) * CHUNK : nd;

			gnn_rng_split(base, ((uint64_t) h << 40) | (uint64_t) c, &r);
			for (int64_t i = c * CHUNK; i < end; i++)
			{
				int32_t		v = dst[i];
				const int32_t *nb;
				const float *nw;
				int64_t		deg = gnn_graph_in_row(g, v, &nb, &nw);

				/*
				 * two steps ahead: a row's bounds 2 x PREFETCH rows on, its
				 * first neighbours PREFETCH rows on (their bounds are in
				 * cache by then): the draws find the row where they read it
				 */
				if (!g->has_delta)
				{
					if (i + 2 * PREFETCH < end)
						__builtin_prefetch(&g->rindptr[dst[i + 2 * PREFETCH]]);
					if (i + PREFETCH < end)
						__builtin_prefetch(&g->rindices[g->rindptr[dst[i + PREFETCH]]]);
				}
				if (per_node)
					node_stream(s, base, h, v, INT64_MAX, &r);
				if (!draw_row(&r, nb, nw, deg, k,
							  ptr[i + 1] - ptr[i], replace, weighted, &sc, s->picked + ptr[i],
							  keep_w ? s->weights[h] + ptr[i] : NULL))
					ok = false;
			}
		}
		free(sc.d);
		free(sc.i);
	}
	if (!ok)
		return gnn_error_set(err, GNN_ERR_NOMEM, "out of memory sampling");

	/* relabel in first-appearance order */
	if (!grow((void **) &s->nodes, &s->cap_nodes, *n_total + nnz + 1, sizeof(int32_t)))
		return gnn_error_set(err, GNN_ERR_NOMEM, "out of memory");
	dst = s->nodes + d0;
	relabel_draws(s, nnz, s->indices[h], n_total, nt);
#pragma omp parallel for num_threads(nt) schedule(dynamic, 64) if (nnz > 4096 && nt > 1)
	for (int64_t i = 0; i < nd; i++)
		sort_row(s->indices[h] + ptr[i], keep_w ? s->weights[h] + ptr[i] : NULL, ptr[i + 1] - ptr[i]);
	return GNN_OK;
}

/* ------------------------------------------------------------------ typed and temporal hops */

/*
 * Relabelling by (node, bound) for temporal batches: linear probing over
 * local indices, the keys read back from nodes[] and bound[].  The table is
 * kept at most half full and cleared once per batch.
 */
static inline size_t
hash_of(int32_t v, int64_t b, size_t mask)
{
	uint64_t	x = (uint64_t) b * 0x9e3779b97f4a7c15ULL + (uint32_t) v;

	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	x ^= x >> 31;
	return (size_t) x & mask;
}

/* room for n_max keys; the n_now present are rehashed when the table grows */
static bool
hash_reserve(gnn_sampler *s, int64_t n_now, int64_t n_max)
{
	size_t		need = 1024;
	int32_t    *t;

	while (need < 2 * (size_t) n_max)
		need *= 2;
	if (need <= s->hcap)
		return true;
	t = malloc(sizeof(int32_t) * need);
	if (!t)
		return false;
	memset(t, 0xff, sizeof(int32_t) * need);
	for (int64_t j = 0; j < n_now; j++)
	{
		size_t		i = hash_of(s->nodes[j], s->bound[j], need - 1);

		while (t[i] >= 0)
			i = (i + 1) & (need - 1);
		t[i] = (int32_t) j;
	}
	free(s->htab);
	s->htab = t;
	s->hcap = need;
	return true;
}

/* add (v, b) to the batch's node list unless present; returns its local index */
static inline int32_t
relabel_at(gnn_sampler *s, int32_t v, int64_t b, int64_t *n)
{
	size_t		mask = s->hcap - 1;

	for (size_t i = hash_of(v, b, mask);; i = (i + 1) & mask)
	{
		int32_t		j = s->htab[i];

		if (j < 0)
		{
			s->htab[i] = (int32_t) *n;
			s->nodes[*n] = v;
			s->bound[*n] = b;
			return (int32_t) (*n)++;
		}
		if (s->nodes[j] == v && s->bound[j] == b)
			return j;
	}
}

/*
 * The arcs of v's row that relation rel can use: the sources of its source
 * type, a sub-range of the sorted row (rel < 0: the whole row).
 */
static inline void
rel_range(const gnn_graph *g, int32_t v, int32_t rel, int64_t *lo, int64_t *hi)
{
	int64_t		b = g->rindptr[v],
				e = g->rindptr[v + 1];
	int32_t		st;

	if (rel < 0)
	{
		*lo = b;
		*hi = e;
		return;
	}
	st = g->etypes[rel].src_type;
	*lo = b + gnn_row_lower_bound(g->rindices + b, e - b, g->type_ptr[st]);
	*hi = *lo + gnn_row_lower_bound(g->rindices + *lo, e - *lo, g->type_ptr[st + 1]);
}

/* a candidate of the 'last' strategy */
typedef struct tcand
{
	int64_t		t;
	int32_t		u;
	float		w;
} tcand;

/* most recent first; ties by lower index (nodes without a time are INT64_MIN: oldest) */
static int
tcand_cmp(const void *a, const void *b)
{
	const tcand *x = a,
			   *y = b;

	if (x->t != y->t)
		return x->t > y->t ? -1 : 1;
	return (x->u > y->u) - (x->u < y->u);
}

static inline bool
tcand_before(const tcand *x, const tcand *y)
{
	return x->t > y->t || (x->t == y->t && x->u < y->u);
}

/* thread-local candidate lists of the general path */
typedef struct cands
{
	int32_t    *nb;
	float	   *w;
	tcand	   *tc;
	size_t		cap;
} cands;

static bool
cands_ensure(cands *cs, size_t n)
{
	size_t		c1 = cs->cap,
				c2 = cs->cap,
				c3 = cs->cap;

	if (n <= cs->cap)
		return true;
	if (!grow((void **) &cs->nb, &c1, n, sizeof(int32_t)) || !grow((void **) &cs->w, &c2, n, sizeof(float)) ||
		!grow((void **) &cs->tc, &c3, n, sizeof(tcand)))
		return false;
	cs->cap = c1 < c2 ? (c1 < c3 ? c1 : c3) : (c2 < c3 ? c2 : c3);
	return true;
}

/*
 * The candidates of one (destination, relation) among the arcs [lo, hi):
 * arcs of relation rel when the range holds others too (filter), of
 * neighbours no later than bnd (temporal), of positive weight (weighted).
 * Returns their count; copies them into nb / w (w when not NULL) or tc when
 * those are given.  This scans the range: O(degree) per sampled node on the
 * temporal path, where admissibility depends on the seed's time and no index
 * can serve every bound.
 */
static int64_t
gather(const gnn_graph *g, int64_t lo, int64_t hi, int32_t rel, bool filter, bool temporal, int64_t bnd,
	   bool weighted, int32_t *nb, float *w, tcand *tc)
{
	int64_t		m = 0;

	for (int64_t e = lo; e < hi; e++)
	{
		int32_t		u = g->rindices[e];

		if ((filter && g->rarc_type[e] != rel) ||
			(temporal && g->time[u] > bnd) ||
			(weighted && !weight_positive(g->rweights[e])))
			continue;
		if (nb)
		{
			nb[m] = u;
			if (w)
				w[m] = g->rweights[e];
		}
		if (tc)
		{
			tc[m].t = g->time[u];
			tc[m].u = u;
			tc[m].w = g->rweights ? g->rweights[e] : 0;
		}
		m++;
	}
	return m;
}

/* the cnt most recent of m candidates into out / ow (in no particular order) */
static void
pick_last(tcand *tc, int64_t m, int64_t cnt, int32_t *out, float *ow)
{
	if (cnt < m && cnt <= 32)
	{
		/* partial selection: cnt is small against m */
		for (int64_t t = 0; t < cnt; t++)
		{
			int64_t		best = t;
			tcand		x;

			for (int64_t j = t + 1; j < m; j++)
				if (tcand_before(&tc[j], &tc[best]))
					best = j;
			x = tc[t];
			tc[t] = tc[best];
			tc[best] = x;
		}
	}
	else if (cnt < m)
		qsort(tc, m, sizeof(tcand), tcand_cmp);
	for (int64_t t = 0; t < cnt; t++)
	{
		out[t] = tc[t].u;
		if (ow)
			ow[t] = tc[t].w;
	}
}

/*
 * One destination row of the general path (typed graph or temporal
 * sampling): per relation into v's type (untyped: the whole row as one), the
 * number of entries (out == NULL) or the draws into out, ow (edge weights,
 * may be NULL) and oet (relations, may be NULL).  Returns the row's entry
 * count, or -1 when out of memory.  The count and the draw passes see the
 * same candidates, so the draws fill exactly the counted space.
 */
static int64_t
general_row(const gnn_sampler *s, int h, int32_t v, int64_t bnd, gnn_rng *r, scratch *sc, cands *cs,
			int32_t *out, float *ow, int16_t *oet)
{
	const gnn_graph *g = s->g;
	bool		typed = s->nrel > 0;
	bool		temporal = s->cfg.temporal;
	bool		last = temporal && s->cfg.temporal_strategy == 1;
	bool		weighted = s->cfg.weighted && g->rweights != NULL;
	bool		replace = s->cfg.replace;
	int32_t		t = typed ? gnn_graph_type_of(g, v) : 0;
	int32_t		j0 = typed ? s->rel_ptr[t] : 0,
				j1 = typed ? s->rel_ptr[t + 1] : 1;
	int64_t		tot = 0;

	for (int32_t j = j0; j < j1; j++)
	{
		int32_t		rel = typed ? s->rel_list[j] : -1;
		int64_t		k = typed ? s->tfan[h * s->nrel + rel] : s->cfg.fanouts[h];
		bool		filter = typed && s->rel_shared[rel];
		int64_t		lo,
					hi,
					m,
					cnt;

		if (k == 0)
			continue;
		rel_range(g, v, rel, &lo, &hi);
		if (!filter && !temporal)
		{
			/* the range holds exactly the relation's arcs: draw in place */
			m = weighted ? positive_count(g->rweights + lo, hi - lo) : hi - lo;
			cnt = row_count(m, k, replace);
			if (out && !draw_row(r, g->rindices + lo, g->rweights ? g->rweights + lo : NULL, hi - lo, k,
								 cnt, replace, weighted, sc, out + tot, ow ? ow + tot : NULL))
				return -1;
		}
		else if (!out)
		{
			m = gather(g, lo, hi, rel, filter, temporal, bnd, weighted, NULL, NULL, NULL);
			cnt = last ? (k < 0 || k > m ? m : k) : row_count(m, k, replace);
		}
		else
		{
			if (!cands_ensure(cs, (size_t) (hi - lo) + 1))
				return -1;
			if (last)
			{
				m = gather(g, lo, hi, rel, filter, temporal, bnd, weighted, NULL, NULL, cs->tc);
				cnt = k < 0 || k > m ? m : k;
				pick_last(cs->tc, m, cnt, out + tot, ow ? ow + tot : NULL);
			}
			else
			{
				m = gather(g, lo, hi, rel, filter, temporal, bnd, weighted, cs->nb,
						   g->rweights ? cs->w : NULL, NULL);
				cnt = row_count(m, k, replace);
				if (!draw_row(r, cs->nb, g->rweights ? cs->w : NULL, m, k, cnt, replace, weighted, sc,
							  out + tot, ow ? ow + tot : NULL))
					return -1;
			}
		}
		if (oet)
			for (int64_t q = 0; q < cnt; q++)
				oet[tot + q] = (int16_t) rel;
		tot += cnt;
	}
	return tot;
}

/* sort a row's (index, weight, relation) entries by index; stable, so ties keep their draw order */
static void
sort_row_typed(int32_t *idx, float *w, int16_t *et, int64_t n)
{
	for (int64_t i = 1; i < n; i++)
	{
		int32_t		x = idx[i];
		float		y = w ? w[i] : 0;
		int16_t		z = et ? et[i] : 0;
		int64_t		j = i - 1;

		while (j >= 0 && idx[j] > x)
		{
			idx[j + 1] = idx[j];
			if (w)
				w[j + 1] = w[j];
			if (et)
				et[j + 1] = et[j];
			j--;
		}
		idx[j + 1] = x;
		if (w)
			w[j + 1] = y;
		if (et)
			et[j + 1] = z;
	}
}

/*
 * A hop on a typed graph or under a time bound: the passes of hop_neighbor
 * (row sizes, parallel draws with the same per-chunk or per-node streams,
 * sequential relabel, parallel row sort), each row split by relation and
 * filtered by time.  Kept apart from hop_neighbor so that the homogeneous
 * path does no per-arc work for features it does not use.
 */
static gnn_status
hop_general(gnn_sampler *s, int h, int64_t nd, const gnn_rng *base, int64_t *n_total, gnn_error *err)
{
	const gnn_graph *g = s->g;
	bool		typed = s->nrel > 0;
	bool		temporal = s->cfg.temporal;
	bool		keep_w = g->rweights != NULL && !(s->cfg.weighted);
	int64_t    *ptr;
	int64_t		nnz;
	int64_t		nchunks = (nd + CHUNK - 1) / CHUNK;
	bool		ok = true;
	int			nt = gnn_team_for(s->cfg.nthreads);

	if (!grow((void **) &s->indptr[h], &s->cap_indptr[h], nd + 1, sizeof(int64_t)))
		return gnn_error_set(err, GNN_ERR_NOMEM, "out of memory sampling");
	ptr = s->indptr[h];
	ptr[0] = 0;
#pragma omp parallel for num_threads(nt) schedule(dynamic, 1) if (nd > 2 * CHUNK && nt > 1)
	for (int64_t c = 0; c < nchunks; c++)
	{
		int64_t		end = (c + 1) * CHUNK < nd ? (c + 1) * CHUNK : nd;

		for (int64_t i = c * CHUNK; i < end; i++)
		{
			/* rows are visited in batch order, far apart in memory: fetch ahead */
			if (i + PREFETCH < end)
				__builtin_prefetch(&g->rindptr[s->nodes[i + PREFETCH]]);
			if (i + PREFETCH / 4 < end)
				__builtin_prefetch(&g->rindices[g->rindptr[s->nodes[i + PREFETCH / 4]]]);
			ptr[i + 1] = general_row(s, h, s->nodes[i], temporal ? s->bound[i] : 0, NULL, NULL, NULL,
									 NULL, NULL, NULL);
		}
	}
	for (int64_t i = 0; i < nd; i++)
		ptr[i + 1] += ptr[i];
	nnz = ptr[nd];
	if (nnz > INT32_MAX)
		return gnn_error_set(err, GNN_ERR_LIMIT, "hop %d samples %lld edges, more than 2^31", h + 1, (long long) nnz);
	if (!grow((void **) &s->picked, &s->cap_picked, nnz + 1, sizeof(int32_t)) ||
		!grow((void **) &s->indices[h], &s->cap_indices[h], nnz + 1, sizeof(int32_t)) ||
		(keep_w && !grow((void **) &s->weights[h], &s->cap_weights[h], nnz + 1, sizeof(float))) ||
		(typed && !grow((void **) &s->etypes[h], &s->cap_etypes[h], nnz + 1, sizeof(int16_t))))
		return gnn_error_set(err, GNN_ERR_NOMEM, "out of memory for %lld sampled edges", (long long) nnz);

#pragma omp parallel num_threads(nt) if (nnz > 4096 && nt > 1)
	{
		scratch		sc = {NULL, NULL, 0};
		cands		cs = {NULL, NULL, NULL, 0};

#pragma omp for schedule(dynamic, 1)
		for (int64_t c = 0; c < nchunks; c++)
		{
			gnn_rng		r;
			int64_t		end = (c + 1) * CHUNK < nd ? (c + 1) * CHUNK : nd;

			gnn_rng_split(base, ((uint64_t) h << 40) | (uint64_t) c, &r);
			for (int64_t i = c * CHUNK; i < end; i++)
			{
				if (i + PREFETCH < end)
					__builtin_prefetch(&g->rindptr[s->nodes[i + PREFETCH]]);
				if (i + PREFETCH / 4 < end)
					__builtin_prefetch(&g->rindices[g->rindptr[s->nodes[i + PREFETCH / 4]]]);
				if (s->cfg.per_node_streams)
					node_stream(s, base, h, s->nodes[i], temporal ? s->bound[i] : INT64_MAX, &r);
				if (general_row(s, h, s->nodes[i], temporal ? s->bound[i] : 0, &r, &sc, &cs,
								s->picked + ptr[i], keep_w ? s->weights[h] + ptr[i] : NULL,
								typed ? s->etypes[h] + ptr[i] : NULL) < 0)
					ok = false;
			}
		}
		free(sc.d);
		free(sc.i);
		free(cs.nb);
		free(cs.w);
		free(cs.tc);
	}
	if (!ok)
		return gnn_error_set(err, GNN_ERR_NOMEM, "out of memory sampling");

	/* relabel in first-appearance order, by (node, bound) when temporal */
	if (!grow((void **) &s->nodes, &s->cap_nodes, *n_total + nnz + 1, sizeof(int32_t)) ||
		(temporal && (!grow((void **) &s->bound, &s->cap_bound, *n_total + nnz + 1, sizeof(int64_t)) ||
					  !hash_reserve(s, *n_total, *n_total + nnz))))
		return gnn_error_set(err, GNN_ERR_NOMEM, "out of memory");
	if (temporal)
	{
		int32_t    *pk = s->picked;
		int32_t    *ix = s->indices[h];
		int64_t		n = *n_total;

		for (int64_t i = 0; i < nd; i++)
		{
			int64_t		b = s->bound[i];

			for (int64_t e = ptr[i]; e < ptr[i + 1]; e++)
				ix[e] = relabel_at(s, pk[e], b, &n);
		}
		*n_total = n;
	}
	else
		relabel_draws(s, nnz, s->indices[h], n_total, nt);
#pragma omp parallel for num_threads(nt) schedule(dynamic, 64) if (nnz > 4096 && nt > 1)
	for (int64_t i = 0; i < nd; i++)
		sort_row_typed(s->indices[h] + ptr[i], keep_w ? s->weights[h] + ptr[i] : NULL,
					   typed ? s->etypes[h] + ptr[i] : NULL, ptr[i + 1] - ptr[i]);
	return GNN_OK;
}

/* LADIES: s draws from p_u ~ sum_{v in D} Ahat(v,u)^2 over the candidates */
static gnn_status
hop_ladies(gnn_sampler *s, int h, int64_t d0, int64_t nd, const gnn_rng *base,
		   int64_t *n_total, gnn_error *err)
{
	const gnn_graph *g = s->g;
	int64_t		sz = s->cfg.fanouts[h];
	int32_t    *cand = NULL;
	double	   *acc = NULL;
	int32_t    *cnt = NULL;
	int64_t		nc = 0,
				ncap = 0,
				nnz = 0;
	double		tot = 0;
	gnn_rng		r;
	gnn_status	st = GNN_OK;
	int64_t    *ptr;

	for (int64_t i = 0; i < nd; i++)
	{
		int32_t		v = s->nodes[d0 + i];

		ncap += gnn_graph_in_degree(g, v);
	}
	cand = malloc(sizeof(int32_t) * (ncap + 1));
	acc = malloc(sizeof(double) * (ncap + 1));
	cnt = calloc(ncap + 1, sizeof(int32_t));
	if (!cand || !acc || !cnt ||
		!grow((void **) &s->indptr[h], &s->cap_indptr[h], nd + 1, sizeof(int64_t)))
	{
		st = gnn_error_set(err, GNN_ERR_NOMEM, "out of memory sampling");
		goto done;
	}
	next_gen(s->cmark, sizeof(int32_t), &s->cgen, g->num_nodes);
	for (int64_t i = 0; i < nd; i++)
	{
		int32_t		v = s->nodes[d0 + i];
		const int32_t *nb;
		int64_t		deg = gnn_graph_in_row(g, v, &nb, NULL);
		double		a = deg > 0 ? 1.0 / ((double) deg * (double) deg) : 0;

		for (int64_t e = 0; e < deg; e++)
		{
			int32_t		u = nb[e];

			if (s->cmark[u] != s->cgen)
			{
				s->cmark[u] = s->cgen;
				s->cpos[u] = (int32_t) nc;
				cand[nc] = u;
				acc[nc++] = 0;
			}
			acc[s->cpos[u]] += a;
		}
	}
	for (int64_t c = 0; c < nc; c++)
		acc[c] = (tot += acc[c]);	/* cumulative */
	gnn_rng_split(base, ((uint64_t) h << 40) | 0xffffffffULL, &r);
	for (int64_t t = 0; nc > 0 && t < sz; t++)
	{
		double		u = gnn_rng_double(&r) * tot;
		int64_t		lo = 0,
					hi = nc - 1;

		while (lo < hi)
		{
			int64_t		mid = (lo + hi) / 2;

			if (acc[mid] > u)
				hi = mid;
			else
				lo = mid + 1;
		}
		cnt[lo]++;
	}
	/* edges to drawn candidates, with the importance correction */
	ptr = s->indptr[h];
	ptr[0] = 0;
	for (int64_t i = 0; i < nd; i++)
	{
		int32_t		v = s->nodes[d0 + i];
		const int32_t *nb;
		int64_t		deg = gnn_graph_in_row(g, v, &nb, NULL);

		for (int64_t e = 0; e < deg; e++)
			nnz += cnt[s->cpos[nb[e]]] > 0;
		ptr[i + 1] = nnz;
	}
	if (!grow((void **) &s->indices[h], &s->cap_indices[h], nnz + 1, sizeof(int32_t)) ||
		!grow((void **) &s->weights[h], &s->cap_weights[h], nnz + 1, sizeof(float)) ||
		!grow((void **) &s->nodes, &s->cap_nodes, *n_total + nc + 1, sizeof(int32_t)))
	{
		st = gnn_error_set(err, GNN_ERR_NOMEM, "out of memory sampling");
		goto done;
	}
	for (int64_t c = 0; c < nc; c++)
		if (cnt[c] > 0)
			(void) relabel(s, cand[c], n_total);
	for (int64_t i = 0; i < nd; i++)
	{
		int32_t		v = s->nodes[d0 + i];
		const int32_t *nb;
		int64_t		deg = gnn_graph_in_row(g, v, &nb, NULL);
		int64_t		k = ptr[i];

		for (int64_t e = 0; e < deg; e++)
		{
			int32_t		u = nb[e];
			int64_t		c = s->cpos[u];

			if (cnt[c] == 0)
				continue;
			{
				double		p = (acc[c] - (c > 0 ? acc[c - 1] : 0)) / tot;

				s->indices[h][k] = s->slot[u].local;
				s->weights[h][k++] = (float) ((double) cnt[c] / (double) deg / ((double) sz * p));
			}
		}
		sort_row(s->indices[h] + ptr[i], s->weights[h] + ptr[i], ptr[i + 1] - ptr[i]);
	}
done:
	free(cand);
	free(acc);
	free(cnt);
	return st;
}

gnn_status
gnn_sampler_sample(gnn_sampler *s, const int32_t *seeds, int64_t nseeds, uint64_t seed,
				   gnn_minibatch *mb, gnn_error *err)
{
	return gnn_sampler_sample_at(s, seeds, NULL, nseeds, seed, mb, err);
}

gnn_status
gnn_sampler_sample_at(gnn_sampler *s, const int32_t *seeds, const int64_t *seed_times, int64_t nseeds,
					  uint64_t seed, gnn_minibatch *mb, gnn_error *err)
{
	const gnn_graph *g = s->g;
	int			L = s->cfg.nhops;
	bool		temporal = s->cfg.temporal;
	bool		general = temporal || s->nrel > 0;
	int64_t		n = 0,
				start[GNN_MAX_LAYERS + 1];
	gnn_rng		base;
	gnn_status	st;

	memset(mb, 0, sizeof(*mb));
	if (nseeds < 1)
		return gnn_error_set(err, GNN_ERR_EMPTY, "no seed nodes to sample from");
	if (temporal && !seed_times)
		return gnn_error_set(err, GNN_ERR_INVALID, "temporal sampling needs a time for every seed");
	if (!grow((void **) &s->nodes, &s->cap_nodes, nseeds + 1, sizeof(int32_t)))
		return gnn_error_set(err, GNN_ERR_NOMEM, "out of memory");
	if (temporal)
	{
		if (!grow((void **) &s->bound, &s->cap_bound, nseeds + 1, sizeof(int64_t)) ||
			!hash_reserve(s, 0, nseeds))
			return gnn_error_set(err, GNN_ERR_NOMEM, "out of memory");
		memset(s->htab, 0xff, sizeof(int32_t) * s->hcap);
	}
	else
		next_gen(s->slot, sizeof(gnn_mark_slot), s->genp, g->num_nodes);
	/* the last batch's bits cleared (its nodes are still in nodes[]) */
	for (int64_t i = 0; i < s->seen_n; i++)
		s->seen[s->nodes[i] >> 6] = 0;
	s->seen_n = 0;
	for (int64_t i = 0; i < nseeds; i++)
		if (seeds[i] < 0 || seeds[i] >= g->num_nodes)
			return gnn_error_set(err, GNN_ERR_INVALID, "seed node index %d out of range [0, %lld)",
								 seeds[i], (long long) g->num_nodes);
	if (temporal)
		for (int64_t i = 0; i < nseeds; i++)
			(void) relabel_at(s, seeds[i], seed_times[i], &n);
	else
		for (int64_t i = 0; i < nseeds; i++)
			(void) relabel(s, seeds[i], &n);
	if (!temporal && s->cfg.kind != GNN_SAMPLER_LADIES)
	{
		/* node-wise hops relabel through the bits: the seeds' first */
		for (int64_t i = 0; i < n; i++)
			s->seen[s->nodes[i] >> 6] |= (uint64_t) 1 << (s->nodes[i] & 63);
		s->seen_n = n;
	}
	gnn_rng_seed(&base, seed);
	start[0] = n;
	for (int h = 0; h < L; h++)
	{
		int64_t		nd = n;

		st = s->cfg.kind == GNN_SAMPLER_LADIES ? hop_ladies(s, h, 0, nd, &base, &n, err)
			: general ? hop_general(s, h, nd, &base, &n, err)
			: hop_neighbor(s, h, 0, nd, &base, &n, err);
		if (s->seen_n)
			s->seen_n = n;		/* bits set for every node listed, also on an error */
		if (st != GNN_OK)
			return st;
		start[h + 1] = n;
	}
	/* node types of the batch's nodes: one array, every block's destinations are a prefix */
	if (g->node_type)
	{
		if (!grow((void **) &s->ntypes, &s->cap_ntypes, n + 1, sizeof(int16_t)))
			return gnn_error_set(err, GNN_ERR_NOMEM, "out of memory");
		for (int64_t i = 0; i < n; i++)
			s->ntypes[i] = g->node_type[s->nodes[i]];
	}
	mb->nhops = L;
	for (int h = 0; h <= L; h++)
	{
		mb->nodes[h] = s->nodes;
		mb->n_nodes[h] = start[h];
	}
	for (int h = 0; h < L; h++)
	{
		gnn_block  *b = &mb->blocks[L - 1 - h];
		bool		w = s->cfg.kind == GNN_SAMPLER_LADIES ||
			(g->rweights != NULL && !(s->cfg.weighted));

		b->n_dst = start[h];
		b->n_src = start[h + 1];
		b->nnz = s->indptr[h][start[h]];
		b->indptr = s->indptr[h];
		b->indices = s->indices[h];
		b->weights = w ? s->weights[h] : NULL;
		b->etypes = s->nrel > 0 ? s->etypes[h] : NULL;
		b->dst_ntype = g->node_type ? s->ntypes : NULL;
		mb->sampled_edges += b->nnz;
	}
	mb->input_nodes = s->nodes;
	mb->n_input = start[L];
	mb->bound = temporal ? s->bound : NULL;
	return GNN_OK;
}

/* ------------------------------------------------------------------ owned copies */

static inline size_t
al8(size_t n)
{
	return (n + 7) & ~(size_t) 7;
}

gnn_status
gnn_minibatch_copy_from(gnn_minibatch_copy *dst, const gnn_minibatch *src, gnn_error *err)
{
	int64_t		n = src->n_input;
	int			L = src->nhops;
	const int16_t *ntypes = NULL;
	size_t		need = al8(sizeof(int32_t) * n) + (src->bound ? al8(sizeof(int64_t) * n) : 0);
	char	   *p;
	gnn_minibatch *m = &dst->mb;

	for (int l = 0; l < L; l++)
	{
		const gnn_block *b = &src->blocks[l];

		need += al8(sizeof(int64_t) * (b->n_dst + 1)) + al8(sizeof(int32_t) * b->nnz) +
			(b->weights ? al8(sizeof(float) * b->nnz) : 0) +
			(b->etypes ? al8(sizeof(int16_t) * b->nnz) : 0);
		if (b->dst_ntype)
			ntypes = b->dst_ntype;	/* one array: every block's destinations are a prefix */
	}
	if (ntypes)
		need += al8(sizeof(int16_t) * n);
	if (need > dst->cap)
	{
		void	   *nb = malloc(need);

		if (!nb)
			return gnn_error_set(err, GNN_ERR_NOMEM, "out of memory keeping a batch (%zu bytes)", need);
		free(dst->buf);
		dst->buf = nb;
		dst->cap = need;
	}
	p = dst->buf;
	*m = *src;
#define TAKE(ptr_, type_, count_) do { \
		memcpy(p, (ptr_), sizeof(type_) * (size_t) (count_)); \
		(ptr_) = (const type_ *) p; \
		p += al8(sizeof(type_) * (size_t) (count_)); \
	} while (0)
	TAKE(m->input_nodes, int32_t, n);
	for (int h = 0; h <= L; h++)
		m->nodes[h] = src->nodes[h] ? m->input_nodes : NULL;
	if (src->bound)
		TAKE(m->bound, int64_t, n);
	if (ntypes)
	{
		const int16_t *t = ntypes;

		TAKE(t, int16_t, n);
		ntypes = t;
	}
	for (int l = 0; l < L; l++)
	{
		gnn_block  *b = &m->blocks[l];

		TAKE(b->indptr, int64_t, b->n_dst + 1);
		TAKE(b->indices, int32_t, b->nnz);
		if (b->weights)
			TAKE(b->weights, float, b->nnz);
		if (b->etypes)
			TAKE(b->etypes, int16_t, b->nnz);
		if (b->dst_ntype)
			b->dst_ntype = ntypes;
	}
#undef TAKE
	return GNN_OK;
}

void
gnn_minibatch_copy_free(gnn_minibatch_copy *c)
{
	if (!c)
		return;
	free(c->buf);
	memset(c, 0, sizeof(*c));
}

/* ------------------------------------------------------------------ walks */

static inline bool
has_out_edge(const gnn_graph *g, int32_t a, int32_t b)
{
	const int32_t *nb;
	int64_t		deg = gnn_graph_out_row(g, a, &nb, NULL, NULL),
				lo = gnn_row_lower_bound(nb, deg, b);

	return lo < deg && nb[lo] == b;
}

/* One node2vec step drawn exactly: each neighbour in proportion to its bias. */
static int32_t
walk_exact_step(const gnn_graph *g, const int32_t *nb, int64_t deg, int32_t prev, double wp, double wq,
				gnn_rng *r)
{
	double		total = 0,
				x;

	for (int64_t k = 0; k < deg; k++)
	{
		int32_t		u = nb[k];

		total += u == prev ? wp : has_out_edge(g, prev, u) ? 1.0 : wq;
	}
	x = gnn_rng_double(r) * total;
	for (int64_t k = 0; k < deg; k++)
	{
		int32_t		u = nb[k];

		x -= u == prev ? wp : has_out_edge(g, prev, u) ? 1.0 : wq;
		if (x < 0)
			return u;
	}
	return nb[deg - 1];
}

gnn_status
gnn_random_walk(const gnn_graph *g, const int32_t *starts, int64_t n, const gnn_walk_config *cfg,
				uint64_t seed, int32_t *out, gnn_error *err)
{
	int64_t		len = cfg->length;
	bool		biased = cfg->p != 1.0 || cfg->q != 1.0;
	double		wp = 1.0 / cfg->p,
				wq = 1.0 / cfg->q;
	double		wout = fmax(1.0, wq);	/* the envelope of a step other than back */
	bool		outlier = wp > wout;	/* the step back drawn on its own */
	int64_t		nchunks = (n + CHUNK - 1) / CHUNK;
	gnn_rng		base;
	int			nt = gnn_team_for(cfg->nthreads);

	if (len < 1)
		return gnn_error_set(err, GNN_ERR_INVALID, "walk length must be >= 1, got %lld", (long long) len);
	if (!(cfg->p > 0) || !(cfg->q > 0) || !isfinite(cfg->p) || !isfinite(cfg->q))
		return gnn_error_set(err, GNN_ERR_INVALID, "node2vec p and q must be finite and > 0 (got p = %g, q = %g)",
							 cfg->p, cfg->q);
	for (int64_t i = 0; i < n; i++)
		if (starts[i] < 0 || starts[i] >= g->num_nodes)
			return gnn_error_set(err, GNN_ERR_INVALID, "start node index %d out of range", starts[i]);
	gnn_rng_seed(&base, seed);

#pragma omp parallel for num_threads(nt) schedule(dynamic, 1) if (n * len > 8192 && nt > 1)
	for (int64_t c = 0; c < nchunks; c++)
	{
		gnn_rng		r;
		int64_t		end = (c + 1) * CHUNK < n ? (c + 1) * CHUNK : n;

		gnn_rng_split(&base, (uint64_t) c, &r);
		for (int64_t i = c * CHUNK; i < end; i++)
		{
			int32_t    *w = out + i * (len + 1);
			int32_t		prev = -1,
						cur = starts[i];

			w[0] = cur;
			for (int64_t t = 1; t <= len; t++)
			{
				const int32_t *nb;
				int64_t		deg = gnn_graph_out_row(g, cur, &nb, NULL, NULL);
				int32_t		nx;

				if (deg == 0)
				{
					for (; t <= len; t++)
						w[t] = -1;
					break;
				}
				if (!biased || prev < 0)
					nx = nb[gnn_rng_below(&r, deg)];
				else
				{
					/*
					 * By rejection.  When the step back weighs most (p <
					 * 1, p < q), it is an outlier (KnightKing): prev's
					 * entries in the row (c of them, from lo) are drawn as
					 * their own share c * wp of the envelope, and every
					 * other entry against max(1, wq) instead of wp.  That
					 * costs a search of the row for prev and saves misses,
					 * each a search of prev's row: p = 0.5, q = 2 keeps an
					 * outward step half the time instead of a quarter.
					 * Otherwise (c = 0) every entry is drawn against the
					 * largest bias, as it always was.
					 */
					int64_t		lo = 0,
								c = 0;
					double		back = 0,
								total;
					int			tries = 0;

					if (outlier)
					{
						lo = gnn_row_lower_bound(nb, deg, prev);
						while (lo + c < deg && nb[lo + c] == prev)
							c++;
						back = (double) c * wp;
					}
					total = back + (double) (deg - c) * wout;
					for (;;)
					{
						int64_t		k;

						/*
						 * Rejection sampling is fast when the biases are
						 * close; with extreme p or q it could loop for
						 * ever, so after a few misses draw exactly from the
						 * biased distribution over all neighbours.
						 */
						if (++tries > 32)
						{
							nx = walk_exact_step(g, nb, deg, prev, wp, wq, &r);
							break;
						}
						if (c > 0 && gnn_rng_double(&r) * total < back)
						{
							nx = prev;
							break;
						}
						k = (int64_t) gnn_rng_below(&r, (uint64_t) (deg - c));
						nx = nb[c > 0 && k >= lo ? k + c : k];	/* prev's run skipped */
						if (gnn_rng_double(&r) * wout < (nx == prev ? wp : has_out_edge(g, prev, nx) ? 1.0 : wq))
							break;
					}
				}
				w[t] = nx;
				prev = cur;
				cur = nx;
			}
		}
	}
	return GNN_OK;
}

/* ------------------------------------------------------------------ gather
 * (the rows themselves: store/gather.c; here, onto a backend) */

gnn_status
gnn_dfeat_gather(gnn_backend *be, const gnn_graph *g, const int32_t *nodes, int64_t n,
				 bool row_normalise, int nthreads, gnn_dfeat *out, gnn_error *err)
{
	gnn_status	st;

	memset(out, 0, sizeof(*out));
	if (g->feat_kind == GNN_FEAT_SPARSE)
	{
		int64_t    *ptr;
		int32_t    *idx;
		float	   *val;

		if ((st = gnn_gather_sparse(g, nodes, n, row_normalise, nthreads, &ptr, &idx, &val, err)) != GNN_OK)
			return st;
		st = gnn_dfeat_sparse(be, n, g->feat_dim, ptr, idx, val, out, err);
		free(ptr);
		free(idx);
		free(val);
		return st;
	}
	if (g->feat_kind == GNN_FEAT_DENSE)
	{
		size_t		bytes = sizeof(float) * (size_t) n * g->feat_dim;
		float	   *dev = NULL;

		if ((st = gnn_backend_alloc(be, bytes + 4, (void **) &dev)) != GNN_OK)
			return gnn_backend_error(be, st, err);
		if (be->ops == gnn_backend_cpu())
			st = gnn_gather_dense(g, nodes, n, row_normalise, nthreads, dev, err);	/* host memory: in place */
		else
		{
			float	   *host = malloc(bytes + 4);

			st = host ? gnn_gather_dense(g, nodes, n, row_normalise, nthreads, host, err)
				: gnn_error_set(err, GNN_ERR_NOMEM, "out of memory gathering features");
			if (st == GNN_OK)
				st = gnn_backend_error(be, gnn_backend_copy_h2d(be, dev, host, bytes), err);
			free(host);
		}
		if (st != GNN_OK)
		{
			gnn_backend_free(be, dev);
			return st;
		}
		out->rows = n;
		out->dim = g->feat_dim;
		out->dense.be = be;
		out->dense.data = dev;
		out->dense.rows = n;
		out->dense.cols = g->feat_dim;
		return GNN_OK;
	}
	return gnn_error_set(err, GNN_ERR_EMPTY, "the graph has no node features");
}
