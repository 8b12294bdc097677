/*
 * sample.c: neighbour and LADIES samplers into blocks, random walks,
 * feature gathers.  See sample.h for the conventions.
 *
 * Neighbour sampling runs in three passes per hop: row sizes (prefix sum),
 * parallel draws into global ids (each chunk of CHUNK destination rows with
 * its own RNG stream, so results do not depend on the thread count), then a
 * sequential relabel through the generation-stamped marker (first appearance
 * order) and a parallel per-row sort of the local ids.  The relabel is the
 * only sequential part; it touches each sampled edge once with a prefetch.
 */
#include "sample.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#define CHUNK 256
#define PREFETCH 16

struct gnn_sampler
{
	const gnn_graph *g;
	gnn_sampler_config cfg;
	int32_t    *mark;			/* [n] generation stamp */
	int32_t    *local;			/* [n] local index, valid where mark == gen */
	int32_t		gen;
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

static int
threads_of(int32_t n)
{
#ifdef _OPENMP
	return n > 0 ? n : omp_get_max_threads();
#else
	(void) n;
	return 1;
#endif
}

gnn_status
gnn_sampler_config_check(const gnn_sampler_config *c, gnn_error *err)
{
	if (c->kind != GNN_SAMPLER_NEIGHBOR && c->kind != GNN_SAMPLER_LADIES)
		return gnn_error_set(err, GNN_ERR_INVALID, "unknown sampler %d (accepted: neighbor, ladies)", (int) c->kind);
	if (c->nhops < 1 || c->nhops > GNN_MAX_LAYERS)
		return gnn_error_set(err, GNN_ERR_INVALID, "the number of fan-outs must be in [1, %d], got %d",
							 GNN_MAX_LAYERS, c->nhops);
	for (int h = 0; h < c->nhops; h++)
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

gnn_status
gnn_sampler_create(const gnn_graph *g, const gnn_sampler_config *cfg, gnn_sampler **out,
				   gnn_error *err)
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
	s->mark = calloc(g->num_nodes + 1, sizeof(int32_t));
	s->local = malloc(sizeof(int32_t) * (g->num_nodes + 1));
	if (!s->mark || !s->local)
	{
		gnn_sampler_free(s);
		return gnn_error_set(err, GNN_ERR_NOMEM, "out of memory for the sampler's marker arrays (%lld nodes)",
							 (long long) g->num_nodes);
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
	free(s->mark);
	free(s->local);
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
	free(s);
}

/* a new generation of the marker (wraps by clearing) */
static void
next_gen(int32_t *mark, int32_t *gen, int64_t n)
{
	if (*gen == INT32_MAX)
	{
		memset(mark, 0, sizeof(int32_t) * n);
		*gen = 0;
	}
	(*gen)++;
}

/* add v to the batch's node list unless present; returns its local index */
static inline int32_t
relabel(gnn_sampler *s, int32_t v, int64_t *n)
{
	if (s->mark[v] != s->gen)
	{
		s->mark[v] = s->gen;
		s->local[v] = (int32_t) *n;
		s->nodes[(*n)++] = v;
	}
	return s->local[v];
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
 * positive-weight edges.
 */
static bool
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
	int			nt = threads_of(s->cfg.nthreads);

	if (!grow((void **) &s->indptr[h], &s->cap_indptr[h], nd + 1, sizeof(int64_t)))
		return gnn_error_set(err, GNN_ERR_NOMEM, "out of memory sampling");
	ptr = s->indptr[h];
	ptr[0] = 0;
	for (int64_t i = 0; i < nd; i++)
	{
		int32_t		v = dst[i];
		int64_t		b = g->rindptr[v],
					deg = g->rindptr[v + 1] - b;

		ptr[i + 1] = ptr[i] + row_count(weighted ? positive_count(g->rweights + b, deg) : deg, k, replace);
	}
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
				int64_t		b = g->rindptr[v];
				int64_t		deg = g->rindptr[v + 1] - b;

				if (i + PREFETCH < end)
					__builtin_prefetch(&g->rindptr[dst[i + PREFETCH]]);
				if (!draw_row(&r, g->rindices + b, g->rweights ? g->rweights + b : NULL, deg, k,
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
	{
		int32_t    *pk = s->picked;
		int32_t    *ix = s->indices[h];
		int64_t		n = *n_total;

		for (int64_t e = 0; e < nnz; e++)
		{
			if (e + PREFETCH < nnz)
			{
				__builtin_prefetch(&s->mark[pk[e + PREFETCH]]);
				__builtin_prefetch(&s->local[pk[e + PREFETCH]]);
			}
			ix[e] = relabel(s, pk[e], &n);
		}
		*n_total = n;
	}
#pragma omp parallel for num_threads(nt) schedule(dynamic, 64) if (nnz > 4096 && nt > 1)
	for (int64_t i = 0; i < nd; i++)
		sort_row(s->indices[h] + ptr[i], keep_w ? s->weights[h] + ptr[i] : NULL, ptr[i + 1] - ptr[i]);
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

		ncap += g->rindptr[v + 1] - g->rindptr[v];
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
	next_gen(s->cmark, &s->cgen, g->num_nodes);
	for (int64_t i = 0; i < nd; i++)
	{
		int32_t		v = s->nodes[d0 + i];
		int64_t		deg = g->rindptr[v + 1] - g->rindptr[v];
		double		a = deg > 0 ? 1.0 / ((double) deg * (double) deg) : 0;

		for (int64_t e = g->rindptr[v]; e < g->rindptr[v + 1]; e++)
		{
			int32_t		u = g->rindices[e];

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

		for (int64_t e = g->rindptr[v]; e < g->rindptr[v + 1]; e++)
			nnz += cnt[s->cpos[g->rindices[e]]] > 0;
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
		int64_t		deg = g->rindptr[v + 1] - g->rindptr[v];
		int64_t		k = ptr[i];

		for (int64_t e = g->rindptr[v]; e < g->rindptr[v + 1]; e++)
		{
			int32_t		u = g->rindices[e];
			int64_t		c = s->cpos[u];

			if (cnt[c] == 0)
				continue;
			{
				double		p = (acc[c] - (c > 0 ? acc[c - 1] : 0)) / tot;

				s->indices[h][k] = s->local[u];
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
	const gnn_graph *g = s->g;
	int			L = s->cfg.nhops;
	int64_t		n = 0,
				start[GNN_MAX_LAYERS + 1];
	gnn_rng		base;
	gnn_status	st;

	memset(mb, 0, sizeof(*mb));
	if (nseeds < 1)
		return gnn_error_set(err, GNN_ERR_EMPTY, "no seed nodes to sample from");
	if (!grow((void **) &s->nodes, &s->cap_nodes, nseeds + 1, sizeof(int32_t)))
		return gnn_error_set(err, GNN_ERR_NOMEM, "out of memory");
	next_gen(s->mark, &s->gen, g->num_nodes);
	for (int64_t i = 0; i < nseeds; i++)
	{
		if (seeds[i] < 0 || seeds[i] >= g->num_nodes)
			return gnn_error_set(err, GNN_ERR_INVALID, "seed node index %d out of range [0, %lld)",
								 seeds[i], (long long) g->num_nodes);
		(void) relabel(s, seeds[i], &n);
	}
	gnn_rng_seed(&base, seed);
	start[0] = n;
	for (int h = 0; h < L; h++)
	{
		int64_t		nd = n;

		st = s->cfg.kind == GNN_SAMPLER_LADIES ? hop_ladies(s, h, 0, nd, &base, &n, err)
			: hop_neighbor(s, h, 0, nd, &base, &n, err);
		if (st != GNN_OK)
			return st;
		start[h + 1] = n;
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
		mb->sampled_edges += b->nnz;
	}
	mb->input_nodes = s->nodes;
	mb->n_input = start[L];
	return GNN_OK;
}

/* ------------------------------------------------------------------ walks */

static inline bool
has_out_edge(const gnn_graph *g, int32_t a, int32_t b)
{
	const int32_t *nb = g->indices + g->indptr[a];
	int64_t		lo = 0,
				hi = g->indptr[a + 1] - g->indptr[a];

	while (lo < hi)
	{
		int64_t		mid = (lo + hi) / 2;

		if (nb[mid] < b)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < g->indptr[a + 1] - g->indptr[a] && nb[lo] == b;
}

/* One node2vec step drawn exactly: each neighbour in proportion to its bias. */
static int32_t
walk_exact_step(const gnn_graph *g, int64_t b, int64_t deg, int32_t prev, double wp, double wq,
				gnn_rng *r)
{
	double		total = 0,
				x;

	for (int64_t k = 0; k < deg; k++)
	{
		int32_t		u = g->indices[b + k];

		total += u == prev ? wp : has_out_edge(g, prev, u) ? 1.0 : wq;
	}
	x = gnn_rng_double(r) * total;
	for (int64_t k = 0; k < deg; k++)
	{
		int32_t		u = g->indices[b + k];

		x -= u == prev ? wp : has_out_edge(g, prev, u) ? 1.0 : wq;
		if (x < 0)
			return u;
	}
	return g->indices[b + deg - 1];
}

gnn_status
gnn_random_walk(const gnn_graph *g, const int32_t *starts, int64_t n, const gnn_walk_config *cfg,
				uint64_t seed, int32_t *out, gnn_error *err)
{
	int64_t		len = cfg->length;
	bool		biased = cfg->p != 1.0 || cfg->q != 1.0;
	double		wp = 1.0 / cfg->p,
				wq = 1.0 / cfg->q;
	double		wmax = fmax(1.0, fmax(wp, wq));
	int64_t		nchunks = (n + CHUNK - 1) / CHUNK;
	gnn_rng		base;
	int			nt = threads_of(cfg->nthreads);

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
				int64_t		b = g->indptr[cur],
							deg = g->indptr[cur + 1] - b;
				int32_t		nx;

				if (deg == 0)
				{
					for (; t <= len; t++)
						w[t] = -1;
					break;
				}
				if (!biased || prev < 0)
					nx = g->indices[b + (int64_t) gnn_rng_below(&r, deg)];
				else
				{
					int			tries = 0;

					for (;;)
					{
						double		bias;

						/*
						 * Rejection sampling is fast when the biases are
						 * close; with extreme p or q it could loop for
						 * ever, so after a few misses draw exactly from the
						 * biased distribution over all neighbours.
						 */
						if (++tries > 32)
						{
							nx = walk_exact_step(g, b, deg, prev, wp, wq, &r);
							break;
						}
						nx = g->indices[b + (int64_t) gnn_rng_below(&r, deg)];
						bias = nx == prev ? wp : has_out_edge(g, prev, nx) ? 1.0 : wq;
						if (gnn_rng_double(&r) * wmax < bias)
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

/* ------------------------------------------------------------------ gather */

gnn_status
gnn_gather_dense(const gnn_graph *g, const int32_t *nodes, int64_t n, bool row_normalise,
				 int nthreads, float *out, gnn_error *err)
{
	int64_t		d = g->feat_dim;
	int			nt = threads_of(nthreads);

	if (g->feat_kind != GNN_FEAT_DENSE)
		return gnn_error_set(err, GNN_ERR_INVALID, "the graph has no dense features");
#pragma omp parallel for num_threads(nt) schedule(static) if (n * d > 65536 && nt > 1)
	for (int64_t i = 0; i < n; i++)
	{
		const float *src = g->feat + (int64_t) nodes[i] * d;
		float	   *dst = out + i * d;

		if (i + 4 < n)
			__builtin_prefetch(g->feat + (int64_t) nodes[i + 4] * d);
		memcpy(dst, src, sizeof(float) * d);
		if (row_normalise)
		{
			double		s = 0;

			for (int64_t k = 0; k < d; k++)
				s += dst[k];
			if (s != 0)
				for (int64_t k = 0; k < d; k++)
					dst[k] = (float) (dst[k] / s);
		}
	}
	return GNN_OK;
}

gnn_status
gnn_gather_sparse(const gnn_graph *g, const int32_t *nodes, int64_t n, bool row_normalise,
				  int nthreads, int64_t **ptr_out, int32_t **idx_out, float **val_out,
				  gnn_error *err)
{
	int64_t    *ptr;
	int32_t    *idx;
	float	   *val;
	int			nt = threads_of(nthreads);

	*ptr_out = NULL;
	*idx_out = NULL;
	*val_out = NULL;
	if (g->feat_kind != GNN_FEAT_SPARSE)
		return gnn_error_set(err, GNN_ERR_INVALID, "the graph has no sparse features");
	ptr = malloc(sizeof(int64_t) * (n + 1));
	if (!ptr)
		return gnn_error_set(err, GNN_ERR_NOMEM, "out of memory gathering features");
	ptr[0] = 0;
	for (int64_t i = 0; i < n; i++)
		ptr[i + 1] = ptr[i] + g->fptr[nodes[i] + 1] - g->fptr[nodes[i]];
	idx = malloc(sizeof(int32_t) * (ptr[n] + 1));
	val = malloc(sizeof(float) * (ptr[n] + 1));
	if (!idx || !val)
	{
		free(ptr);
		free(idx);
		free(val);
		return gnn_error_set(err, GNN_ERR_NOMEM, "out of memory gathering features");
	}
#pragma omp parallel for num_threads(nt) schedule(static) if (ptr[n] > 65536 && nt > 1)
	for (int64_t i = 0; i < n; i++)
	{
		int64_t		b = g->fptr[nodes[i]],
					m = ptr[i + 1] - ptr[i];
		double		s = 0;

		memcpy(idx + ptr[i], g->fidx + b, sizeof(int32_t) * m);
		for (int64_t e = 0; e < m; e++)
			s += (val[ptr[i] + e] = g->fval ? g->fval[b + e] : 1.0f);
		if (row_normalise && s != 0)
			for (int64_t e = 0; e < m; e++)
				val[ptr[i] + e] = (float) (val[ptr[i] + e] / s);
	}
	*ptr_out = ptr;
	*idx_out = idx;
	*val_out = val;
	return GNN_OK;
}

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
