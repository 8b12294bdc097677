/*
 * graph_delta.c: a graph that follows its tables (gnn_graph_apply_changes).
 *
 * The new region is what gnn_graph_build_into would make of the changed rows
 * (see the contract in graph.h), made from the base region and the changes
 * alone:
 *
 *   1. the node set: the base's ids less the removed nodes, plus the new
 *      upserted ids, merged in id order; the old -> new index map is
 *      monotone (an index only moves down by the removed nodes before it and
 *      up by the new nodes before it), so a base row mapped through it stays
 *      sorted;
 *   2. the edge changes as entries (source, destination, rows, weight),
 *      removals negative, sorted by (source, destination, removals first,
 *      change index); and the changed arcs again by destination;
 *   3. each row with entries: the base row mapped (arcs to removed nodes
 *      dropped) merged with its entries, once to count (and find a removal
 *      the base does not hold) and once, with the region laid out, to
 *      write; both in parallel over rows.  The merge notes for each changed
 *      arc whether it is there after the changes (and was before) and its
 *      weight.  A row without entries is its base row: its length known
 *      without a look at it unless nodes go, and a run of such rows copied
 *      as one slice when no node comes or goes (else mapped arc by arc);
 *   4. the reverse CSR the same way from the base's reverse CSR: a row
 *      without changed arcs in is its base row, and a row with some is its
 *      base row merged with them as step 3 found them, so its weights are
 *      the forward ones bit for bit (as the build's counting sort gives
 *      them); then node data.
 *
 * So the work is a copy of the base plus work in proportion to the changes
 * (and passes over the node arrays): no pass sorts or scatters every arc.
 *
 * Floating-point sums: an arc's weight is the base's sum less the removed
 * rows' weights plus the added ones, which is the build's sum of the
 * remaining rows up to rounding (not bit for bit: the summation order
 * differs).
 */
#include "graph/graph_int.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#define FAIL(st, ...) do { status = gnn_error_set(err, (st), __VA_ARGS__); goto done; } while (0)
#define FAIL_ROW(r, i, st, ...) do { if (err) { err->row = (r); err->id = (i); } \
		FAIL(st, __VA_ARGS__); } while (0)

/* rows per block of the parallel fill loops */
#define DELTA_BLOCK 4096

/* one edge change on one arc: rows < 0 removes, > 0 adds */
typedef struct dentry
{
	int32_t		src;
	int32_t		dst;
	int32_t		rows;
	float		w;
	int64_t		idx;			/* the change's index (in rm_* or add_*) */
} dentry;

static int
dentry_cmp(const void *a, const void *b)
{
	const dentry *x = a,
			   *y = b;

	if (x->src != y->src)
		return x->src < y->src ? -1 : 1;
	if (x->dst != y->dst)
		return x->dst < y->dst ? -1 : 1;
	/* removals before additions, each in log order */
	if ((x->rows < 0) != (y->rows < 0))
		return x->rows < 0 ? -1 : 1;
	if (x->idx != y->idx)
		return x->idx < y->idx ? -1 : 1;
	return 0;
}

typedef struct idpos
{
	int64_t		id;
	int64_t		pos;			/* upsert index */
} idpos;

static int
idpos_cmp(const void *a, const void *b)
{
	const idpos *x = a,
			   *y = b;

	if (x->id != y->id)
		return x->id < y->id ? -1 : 1;
	return x->pos < y->pos ? -1 : x->pos > y->pos;
}

/*
 * index of id in ascending ids[0..n), or -1.  A few interpolation steps
 * first: node ids are mostly dense (serial keys), where the first guess is
 * the place, and a change set looks up two ids per edge row; then a binary
 * search of what is left.
 */
static int64_t
find_sorted(const int64_t *ids, int64_t n, int64_t id)
{
	int64_t		lo = 0,
				hi = n;

	for (int step = 0; step < 3 && hi - lo > 16; step++)
	{
		int64_t		a = ids[lo],
					b = ids[hi - 1],
					g;

		if (id < a || id > b)
			return -1;
		if (a == b)
			break;
		/* in double: b - a may not fit an int64 */
		g = lo + (int64_t) (((double) id - (double) a) / ((double) b - (double) a) * (double) (hi - 1 - lo));
		if (g < lo)
			g = lo;
		if (g > hi - 1)
			g = hi - 1;
		if (ids[g] == id)
			return g;
		if (ids[g] < id)
			lo = g + 1;
		else
			hi = g;
	}
	while (lo < hi)
	{
		int64_t		mid = lo + (hi - lo) / 2;

		if (ids[mid] < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && ids[lo] == id ? lo : -1;
}

typedef struct delta_ctx
{
	const gnn_graph *base;
	bool		undirected;
	/* both NULL (the identity) exactly when no node comes or goes */
	const int32_t *old2new;		/* per base node, -1 removed */
	const int64_t *src_old;		/* per new node: base index or -1 */
	const dentry *ent;
	const int64_t *eptr;		/* per new node: its entries [eptr[v], eptr[v+1]) */
	/* the changed arcs (src, dst) by destination: rsrc[reptr[t] .. reptr[t+1]) */
	const int64_t *reptr;
	const int32_t *rsrc;
	/*
	 * per changed arc (by an entry's index, rpos[], into the order of rsrc):
	 * what the forward rows found, for the reverse rows to take: whether
	 * the arc is there after the changes, that less whether it was before,
	 * and its weight after (written with the forward rows)
	 */
	const int64_t *rpos;
	uint8_t    *rpresent;
	int8_t	   *rdelta;
	float	   *rwt;
	/*
	 * a delta's (eptr and reptr NULL): only the rows with entries, crow[k]
	 * ascending with entries [cspan[k], cspan[k+1]) and merged length
	 * clen[k]; the rows with changed arcs in, trow[k] with rsrc[tspan[k] ..
	 * tspan[k+1]) and length tlen[k] (write_delta reads the lengths)
	 */
	const int32_t *crow;
	const int64_t *cspan;
	const int64_t *clen;
	int64_t		ncrow;
	const int32_t *trow;
	const int64_t *tspan;
	const int64_t *tlen;
	int64_t		ntrow;
} delta_ctx;

/* base row o, forward or reverse, read through the base's delta if it has one */
static inline int64_t
base_row(const gnn_graph *b, bool rev, int64_t o, const int32_t **nb, const float **w, const int32_t **rows)
{
	if (rev)
	{
		if (rows)
			*rows = NULL;
		return gnn_graph_in_row(b, o, nb, w);
	}
	return gnn_graph_out_row(b, o, nb, w, rows);
}

/* the number of arcs base row o keeps (those not at removed nodes) */
static int64_t
kept_len(const delta_ctx *c, bool rev, int64_t o)
{
	const int32_t *nb;
	int64_t		len,
				k = 0;

	if (o < 0)
		return 0;
	len = base_row(c->base, rev, o, &nb, NULL, NULL);
	if (!c->old2new)
		return len;
	for (int64_t p = 0; p < len; p++)
		k += c->old2new[nb[p]] >= 0;
	return k;
}

/* the position of v in rows[0..n) (ascending), or -1 */
static inline int64_t
row_pos(const int32_t *rows, int64_t n, int64_t v)
{
	int64_t		lo = gnn_row_lower_bound(rows, n, v);

	return lo < n && rows[lo] == v ? lo : -1;
}

/*
 * Row v's span [*b, *e): from the per-row offsets ptr when there are (a new
 * region's), else from the rows listed with their spans (a delta's); empty
 * when v is not listed.
 */
static inline void
row_span(const int64_t *ptr, const int32_t *rows, const int64_t *span, int64_t nrows, int64_t v,
		 int64_t *b, int64_t *e)
{
	int64_t		k;

	if (ptr)
	{
		*b = ptr[v];
		*e = ptr[v + 1];
		return;
	}
	k = row_pos(rows, nrows, v);
	*b = k >= 0 ? span[k] : 0;
	*e = k >= 0 ? span[k + 1] : 0;
}

/*
 * Rows [v, w) that have no changes of their own (no entries, for the
 * forward CSR; no changed arcs in, for the reverse): the base rows mapped.
 * Without node changes or a delta under the base a run of such rows is one
 * slice of the base, copied as it is; else each row is copied (mapped arc
 * by arc, dropping arcs at removed nodes, when nodes come or go).  rows
 * (forward only) gets the arcs' row counts, as merge_row counts them.
 */
static void
copy_rows(const delta_ctx *c, int64_t v, int64_t w, bool rev, int32_t *out_idx, float *out_w,
		  int32_t *out_rows)
{
	const gnn_graph *b = c->base;

	if (!c->old2new && !b->has_delta)
	{
		const int64_t *bptr = rev ? b->rindptr : b->indptr;
		const int32_t *bidx = rev ? b->rindices : b->indices;
		const float *bw = rev ? b->rweights : b->weights;
		int64_t		p0 = bptr[v],
					len = bptr[w] - p0;

		if (len <= 0)
			return;
		memcpy(out_idx, bidx + p0, sizeof(int32_t) * len);
		if (out_w)
			memcpy(out_w, bw + p0, sizeof(float) * len);
		if (out_rows && b->arc_rows)
			memcpy(out_rows, b->arc_rows + p0, sizeof(int32_t) * len);
		else if (out_rows)
			for (int64_t u = v; u < w; u++)
				for (int64_t p = bptr[u]; p < bptr[u + 1]; p++)
					out_rows[p - p0] = c->undirected && bidx[p] == u ? 2 : 1;
		return;
	}
	for (int64_t u = v, k = 0; u < w; u++)
	{
		int64_t		o = c->src_old ? c->src_old[u] : u;
		const int32_t *nb,
				   *nr;
		const float *nw;
		int64_t		len;

		if (o < 0)
			continue;
		len = base_row(b, rev, o, &nb, &nw, out_rows ? &nr : NULL);
		for (int64_t p = 0; p < len; p++)
		{
			int32_t		t = c->old2new ? c->old2new[nb[p]] : nb[p];

			if (t < 0)
				continue;
			out_idx[k] = t;
			if (out_w)
				out_w[k] = nw[p];
			if (out_rows)
				out_rows[k] = nr ? nr[p] : (c->undirected && nb[p] == o ? 2 : 1);
			k++;
		}
	}
}

/*
 * Reverse row t of the new CSR: the base's reverse row mapped, merged with
 * the sources of t's changed arcs, each there or not, and weighed, as the
 * forward rows found it (so that the reverse weights are the forward ones
 * exactly); an arc without changes is as the base has it, forward and
 * reverse alike.
 */
static void
merge_rrow(const delta_ctx *c, int64_t t, int32_t *out_src, float *out_w)
{
	int64_t		o = c->src_old ? c->src_old[t] : t;
	int64_t		p = 0,
				pe = 0;
	int64_t		q,
				qe;
	int64_t		k = 0;
	const int32_t *bi = NULL;
	const float *bw = NULL;

	row_span(c->reptr, c->trow, c->tspan, c->ntrow, t, &q, &qe);	/* its changed arcs rsrc[q .. qe) */
	if (o >= 0)
		pe = base_row(c->base, true, o, &bi, &bw, NULL);
	for (;;)
	{
		int32_t		bs = -1;	/* next mapped base source */

		while (p < pe && (bs = c->old2new ? c->old2new[bi[p]] : bi[p]) < 0)
			p++;
		if (p >= pe)
			bs = -1;
		if (bs < 0 && q >= qe)
			break;
		if (bs >= 0 && (q >= qe || bs < c->rsrc[q]))
		{
			out_src[k] = bs;
			if (out_w)
				out_w[k] = bw[p];
			k++;
			p++;
			continue;
		}
		if (bs == c->rsrc[q])
			p++;
		if (c->rpresent[q])
		{
			out_src[k] = c->rsrc[q];
			if (out_w)
				out_w[k] = c->rwt[q];
			k++;
		}
		q++;
	}
}

/*
 * Row v of the new CSR: the base row mapped, merged with v's entries.  With
 * out_idx NULL only counts.  *bad gets the smallest index of a removal that
 * takes a row the base does not hold (unchanged when none).
 */
static int64_t
merge_span(const delta_ctx *c, int64_t v, int64_t e, int64_t ee, int32_t *out_idx, float *out_w,
		   int32_t *out_rows, int64_t *bad)
{
	int64_t		o = c->src_old ? c->src_old[v] : v;
	int64_t		p = 0,
				pe = 0;
	int64_t		k = 0;
	const int32_t *bi = NULL,
			   *br = NULL;
	const float *bw = NULL;

	if (o >= 0)
		pe = base_row(c->base, false, o, &bi, &bw, &br);
	for (;;)
	{
		int32_t		bt = -1;	/* next mapped base target */

		while (p < pe && (bt = c->old2new ? c->old2new[bi[p]] : bi[p]) < 0)
			p++;
		if (p >= pe)
			bt = -1;
		if (bt < 0 && e >= ee)
			break;

		int32_t		t;
		int64_t		rows = 0;
		double		w = 0;
		int64_t		e0 = e;
		bool		had = false;	/* the base has the arc */

		if (bt >= 0 && (e >= ee || bt <= c->ent[e].dst))
		{
			had = true;
			t = bt;
			rows = br ? br[p] : (c->undirected && bi[p] == o ? 2 : 1);
			w = bw ? bw[p] : 0;
			p++;
		}
		else
			t = c->ent[e].dst;
		for (; e < ee && c->ent[e].dst == t; e++)
		{
			rows += c->ent[e].rows;
			w += c->ent[e].w;
			/* removals come first: a negative count is a row the base lacks */
			if (rows < 0 && c->ent[e].idx < *bad)
				*bad = c->ent[e].idx;
		}
		if (e > e0)
		{
			int64_t		q = c->rpos[e0];

			if (!out_idx)
			{
				c->rpresent[q] = rows > 0;
				c->rdelta[q] = (int8_t) ((rows > 0) - had);
			}
			else if (rows > 0 && c->rwt)
				c->rwt[q] = (float) w;
		}
		if (rows <= 0)
			continue;
		if (out_idx)
		{
			out_idx[k] = t;
			if (out_w)
				out_w[k] = (float) w;
			out_rows[k] = rows > INT32_MAX ? INT32_MAX : (int32_t) rows;
		}
		k++;
	}
	return k;
}

/* the same, v's entries looked up */
static int64_t
merge_row(const delta_ctx *c, int64_t v, int32_t *out_idx, float *out_w, int32_t *out_rows, int64_t *bad)
{
	int64_t		e,
				ee;

	row_span(c->eptr, c->crow, c->cspan, c->ncrow, v, &e, &ee);
	return merge_span(c, v, e, ee, out_idx, out_w, out_rows, bad);
}

/*
 * A delta's rows (no node comes or goes: every index is the base's), with
 * nothing sized by the node count: the entries sorted by source (a radix
 * sort of (source, position) keys keeps removals before additions, each in
 * log order, as dentry_cmp has them), each row's run then by the rest of
 * the key; the rows with entries (crow, cspan) and their merged lengths
 * (clen); the changed arcs (src, dst) by destination (rsrc, rpos) and the
 * reverse rows with changed arcs (trow, tspan) and their lengths (tlen);
 * *m_out the arcs after.  Sets c's lists; the caller frees the arrays.
 */
static gnn_status
sparse_rows(delta_ctx *c, dentry *ent, int64_t nent, int T, bool weighted, int64_t *m_out, int64_t *bad,
			int32_t **crow, int64_t **cspan, int64_t **clen, int32_t **trow, int64_t **tspan, int64_t **tlen,
			int32_t **rsrc, int64_t **rpos, uint8_t **rpresent, int8_t **rdelta, float **rwt, gnn_error *err)
{
	gnn_status	status = GNN_OK;
	int64_t    *key = malloc(sizeof(int64_t) * (nent ? nent : 1));
	dentry	   *sorted = malloc(sizeof(dentry) * (nent ? nent : 1));
	int64_t    *pidx = NULL;	/* per entry: its distinct (src, dst) pair */
	int32_t    *pdst = NULL,
			   *psrc = NULL;
	int64_t    *posof = NULL;
	int64_t		nc = 0,
				np = 0,
				nt = 0,
				dm = 0,
				drm = 0;

	if (!key || !sorted)
		FAIL(GNN_ERR_NOMEM, "out of memory for %lld edge changes", (long long) nent);
	for (int64_t i = 0; i < nent; i++)
		key[i] = ((int64_t) ent[i].src << 32) | i;
	if ((status = gnn_sort_i64(key, nent, err)) != GNN_OK)
		goto done;
	for (int64_t i = 0; i < nent; i++)
		sorted[i] = ent[key[i] & 0xffffffff];
	memcpy(ent, sorted, sizeof(dentry) * nent);
	for (int64_t i = 0; i < nent; i++)
		nc += i == 0 || ent[i].src != ent[i - 1].src;
	*crow = malloc(sizeof(int32_t) * (nc + 1));
	*cspan = malloc(sizeof(int64_t) * (nc + 1));
	*clen = malloc(sizeof(int64_t) * (nc + 1));
	if (!*crow || !*cspan || !*clen)
		FAIL(GNN_ERR_NOMEM, "out of memory for %lld changed rows", (long long) nc);
	for (int64_t i = 0, k = 0; i < nent; i++)
		if (i == 0 || ent[i].src != ent[i - 1].src)
		{
			(*crow)[k] = ent[i].src;
			(*cspan)[k++] = i;
		}
	(*cspan)[nc] = nent;
#pragma omp parallel for schedule(dynamic, 4096) num_threads(T)
	for (int64_t k = 0; k < nc; k++)
	{
		int64_t		b = (*cspan)[k],
					e = (*cspan)[k + 1];

		if (e - b > 16)
			qsort(ent + b, e - b, sizeof(dentry), dentry_cmp);
		else
			for (int64_t i = b + 1; i < e; i++)
			{
				dentry		x = ent[i];
				int64_t		j = i;

				for (; j > b && dentry_cmp(&ent[j - 1], &x) > 0; j--)
					ent[j] = ent[j - 1];
				ent[j] = x;
			}
	}

	/* the distinct (src, dst) pairs in source order, then by destination (source order kept) */
	pidx = malloc(sizeof(int64_t) * (nent ? nent : 1));
	pdst = malloc(sizeof(int32_t) * (nent ? nent : 1));
	psrc = malloc(sizeof(int32_t) * (nent ? nent : 1));
	if (!pidx || !pdst || !psrc)
		FAIL(GNN_ERR_NOMEM, "out of memory for %lld edge changes", (long long) nent);
	for (int64_t i = 0; i < nent; i++)
	{
		if (i == 0 || ent[i].src != ent[i - 1].src || ent[i].dst != ent[i - 1].dst)
		{
			pdst[np] = ent[i].dst;
			psrc[np++] = ent[i].src;
		}
		pidx[i] = np - 1;
	}
	for (int64_t q = 0; q < np; q++)
		key[q] = ((int64_t) pdst[q] << 32) | q;
	if ((status = gnn_sort_i64(key, np, err)) != GNN_OK)
		goto done;
	*rsrc = malloc(sizeof(int32_t) * (np ? np : 1));
	*rpos = malloc(sizeof(int64_t) * (nent ? nent : 1));
	*rpresent = malloc(np ? np : 1);
	*rdelta = malloc(np ? np : 1);
	*rwt = malloc(sizeof(float) * (np ? np : 1));
	posof = malloc(sizeof(int64_t) * (np ? np : 1));
	if (!*rsrc || !*rpos || !*rpresent || !*rdelta || !*rwt || !posof)
		FAIL(GNN_ERR_NOMEM, "out of memory for %lld changed arcs", (long long) np);
	for (int64_t q = 0; q < np; q++)
	{
		int64_t		pq = key[q] & 0xffffffff;

		(*rsrc)[q] = psrc[pq];
		posof[pq] = q;
		nt += q == 0 || pdst[pq] != pdst[key[q - 1] & 0xffffffff];
	}
	for (int64_t i = 0; i < nent; i++)
		(*rpos)[i] = posof[pidx[i]];
	*trow = malloc(sizeof(int32_t) * (nt + 1));
	*tspan = malloc(sizeof(int64_t) * (nt + 1));
	*tlen = malloc(sizeof(int64_t) * (nt + 1));
	if (!*trow || !*tspan || !*tlen)
		FAIL(GNN_ERR_NOMEM, "out of memory for %lld changed rows", (long long) nt);
	for (int64_t q = 0, k = 0; q < np; q++)
	{
		int32_t		t = pdst[key[q] & 0xffffffff];

		if (q == 0 || t != pdst[key[q - 1] & 0xffffffff])
		{
			(*trow)[k] = t;
			(*tspan)[k++] = q;
		}
	}
	(*tspan)[nt] = np;

	c->ent = ent;
	c->eptr = NULL;
	c->reptr = NULL;
	c->rsrc = *rsrc;
	c->rpos = *rpos;
	c->rpresent = *rpresent;
	c->rdelta = *rdelta;
	c->rwt = weighted ? *rwt : NULL;
	c->crow = *crow;
	c->cspan = *cspan;
	c->clen = *clen;
	c->ncrow = nc;
	c->trow = *trow;
	c->tspan = *tspan;
	c->tlen = *tlen;
	c->ntrow = nt;

	/* the changed rows' lengths (which note each changed arc for the reverse rows), then the reverse's */
	{
		int64_t		b = *bad;

#pragma omp parallel for schedule(dynamic, 1024) num_threads(T) reduction(min:b) reduction(+:dm)
		for (int64_t k = 0; k < nc; k++)
		{
			int64_t		v = (*crow)[k];

			(*clen)[k] = merge_span(c, v, (*cspan)[k], (*cspan)[k + 1], NULL, NULL, NULL, &b);
			dm += (*clen)[k] - kept_len(c, false, v);
		}
		*bad = b;
	}
#pragma omp parallel for schedule(dynamic, 1024) num_threads(T) reduction(+:drm)
	for (int64_t k = 0; k < nt; k++)
	{
		int64_t		t = (*trow)[k],
					d = 0;

		for (int64_t q = (*tspan)[k]; q < (*tspan)[k + 1]; q++)
			d += (*rdelta)[q];
		(*tlen)[k] = kept_len(c, true, t) + d;
		drm += d;
	}
	*m_out = c->base->num_edges + dm;
	if (*bad == INT64_MAX && drm != dm)
		FAIL(GNN_ERR_CORRUPT, "the base graph's reverse arcs (%lld more after the changes) do not match its arcs (%lld more)",
			 (long long) drm, (long long) dm);
done:
	free(key);
	free(sorted);
	free(pidx);
	free(pdst);
	free(psrc);
	free(posof);
	return status;
}

/* ------------------------------------------------------------------ deltas */

static uint64_t
delta_checksum(const gnn_delta_header *h)
{
	/* the header bytes before the checksum field, as a region's */
	return gnn_graph_fnv1a(h, offsetof(gnn_delta_header, checksum));
}

/* does p point into g's delta region? */
static bool
in_delta(const gnn_graph *g, const void *p)
{
	const char *d = g->delta;

	return g->has_delta && p && (const char *) p >= d && (const char *) p < d + g->delta_bytes;
}

/* ranks of a bit set of n bits: rank[w] = bits set in words before w; returns the total */
static int64_t
rank_bits(const uint64_t *bits, int64_t W, int32_t *rank)
{
	int64_t		k = 0;

	for (int64_t w = 0; w < W; w++)
	{
		rank[w] = (int32_t) k;
		k += __builtin_popcountll(bits[w]);
	}
	return k;
}

/* the rows of a bit set, ascending */
static void
list_bits(const uint64_t *bits, int64_t W, int32_t *out)
{
	int64_t		k = 0;

	for (int64_t w = 0; w < W; w++)
		for (uint64_t x = bits[w]; x; x &= x - 1)
			out[k++] = (int32_t) (w * 64 + __builtin_ctzll(x));
}

/*
 * The delta of base with the changes (as_delta; no node comes or goes, so
 * every index is the base's): the forward rows that have entries or that
 * base's own delta replaced, the reverse rows with changed arcs in or
 * replaced, the feature rows upserted or replaced, and labels and split
 * whole when an upsert gives them or base's delta has them.  Rows are
 * written by merge_row / merge_rrow / copy_rows, as a new region's are.
 */
static gnn_status
write_delta(delta_ctx *c, const gnn_graph_changes *ch, int64_t n, int64_t m,
			const dentry *ent, int64_t nent, const int64_t *src_up, int64_t n_train,
			int64_t n_val, int64_t n_test, int64_t n_labelled, int32_t num_classes,
			gnn_region_alloc_fn alloc, void *alloc_arg, void **region_out, uint64_t *size_out, int T,
			gnn_error *err)
{
	const gnn_graph *base = c->base;
	gnn_status	status = GNN_OK;
	int64_t		W = (n + 63) / 64;
	uint64_t   *fb = calloc(W + 1, 8),
			   *rb = calloc(W + 1, 8),
			   *nb = calloc(W + 1, 8);
	int32_t    *fl = NULL,
			   *rl = NULL,
			   *nl = NULL;
	int64_t    *flen = NULL,	/* per delta row: its length, and its place in crow / trow (-1: none) */
			   *rlen = NULL,
			   *fj = NULL,
			   *rj = NULL;
	int64_t		kf,
				kr,
				kn,
				af = 0,
				ar = 0;
	int32_t		dim = base->feat_dim;
	bool		weighted = base->weighted;
	bool		labels = base->labels && ((ch->up_labels && ch->num_upserted_nodes > 0) || in_delta(base, base->labels));
	bool		split = base->split && ((ch->up_split && ch->num_upserted_nodes > 0) || in_delta(base, base->split));
	bool		feats = base->feat_kind == GNN_FEAT_DENSE;
	char	   *region = NULL;
	int32_t    *frank = malloc(sizeof(int32_t) * (W + 1)),
			   *rrank = malloc(sizeof(int32_t) * (W + 1)),
			   *nrank = malloc(sizeof(int32_t) * (W + 1));

	if (!fb || !rb || !nb || !frank || !rrank || !nrank)
		FAIL(GNN_ERR_NOMEM, "out of memory for a delta of %lld nodes", (long long) n);
	if (base->has_delta)
	{
		if (base->dfwd.bits)
			memcpy(fb, base->dfwd.bits, 8 * W);
		if (base->drev.bits)
			memcpy(rb, base->drev.bits, 8 * W);
		if (base->dnode.bits)
			memcpy(nb, base->dnode.bits, 8 * W);
	}
	for (int64_t i = 0; i < nent; i++)
	{
		fb[ent[i].src >> 6] |= (uint64_t) 1 << (ent[i].src & 63);
		rb[ent[i].dst >> 6] |= (uint64_t) 1 << (ent[i].dst & 63);
	}
	if (feats && ch->up_feat)
		for (int64_t v = 0; v < n; v++)
			if (src_up[v] >= 0)
				nb[v >> 6] |= (uint64_t) 1 << (v & 63);
	kf = rank_bits(fb, W, frank);
	kr = rank_bits(rb, W, rrank);
	kn = feats ? rank_bits(nb, W, nrank) : 0;
	fl = malloc(sizeof(int32_t) * (kf + 1));
	rl = malloc(sizeof(int32_t) * (kr + 1));
	nl = malloc(sizeof(int32_t) * (kn + 1));
	if (!fl || !rl || !nl)
		FAIL(GNN_ERR_NOMEM, "out of memory for a delta of %lld rows", (long long) (kf + kr));
	list_bits(fb, W, fl);
	list_bits(rb, W, rl);
	if (feats)
		list_bits(nb, W, nl);
	flen = malloc(sizeof(int64_t) * (kf + 1));
	fj = malloc(sizeof(int64_t) * (kf + 1));
	rlen = malloc(sizeof(int64_t) * (kr + 1));
	rj = malloc(sizeof(int64_t) * (kr + 1));
	if (!flen || !fj || !rlen || !rj)
		FAIL(GNN_ERR_NOMEM, "out of memory for a delta of %lld rows", (long long) (kf + kr));
	/* rows with entries merge (lengths counted already); rows an earlier delta held are copied */
	for (int64_t k = 0, j = 0; k < kf; k++)
	{
		while (j < c->ncrow && c->crow[j] < fl[k])
			j++;
		fj[k] = j < c->ncrow && c->crow[j] == fl[k] ? j : -1;
		flen[k] = fj[k] >= 0 ? c->clen[j] : kept_len(c, false, fl[k]);
		af += flen[k];
	}
	for (int64_t k = 0, j = 0; k < kr; k++)
	{
		while (j < c->ntrow && c->trow[j] < rl[k])
			j++;
		rj[k] = j < c->ntrow && c->trow[j] == rl[k] ? j : -1;
		rlen[k] = rj[k] >= 0 ? c->tlen[j] : kept_len(c, true, rl[k]);
		ar += rlen[k];
	}

	{
		uint64_t	off = ALIGN64(sizeof(gnn_delta_header));
		gnn_delta_header hd;
		int64_t	   *fptr,
				   *rptr;

		memset(&hd, 0, sizeof(hd));
#define PLACE(field, bytes, cond) do { if (cond) { hd.field = off; off = ALIGN64(off + (uint64_t) (bytes)); } } while (0)
		PLACE(off_fbits, 8 * W, true);
		PLACE(off_frank, 4 * W, true);
		PLACE(off_fptr, 8 * (kf + 1), true);
		PLACE(off_fidx, 4 * af, true);
		PLACE(off_fw, 4 * af, weighted);
		PLACE(off_frows, 4 * af, true);
		PLACE(off_rbits, 8 * W, true);
		PLACE(off_rrank, 4 * W, true);
		PLACE(off_rptr, 8 * (kr + 1), true);
		PLACE(off_ridx, 4 * ar, true);
		PLACE(off_rw, 4 * ar, weighted);
		PLACE(off_nbits, 8 * W, feats);
		PLACE(off_nrank, 4 * W, feats);
		PLACE(off_nfeat, 4 * kn * (int64_t) dim, feats);
		PLACE(off_labels, 4 * n, labels);
		PLACE(off_split, n, split);
#undef PLACE
		if (ch->max_delta_bytes > 0 && off > ch->max_delta_bytes)
			FAIL(GNN_ERR_UNSUPPORTED, "the delta would take %llu bytes, more than the %llu allowed",
				 (unsigned long long) off, (unsigned long long) ch->max_delta_bytes);
		region = alloc(alloc_arg, off);
		if (!region)
			FAIL(GNN_ERR_LIMIT, "a region of %llu bytes was refused", (unsigned long long) off);
		hd.magic = GNN_DELTA_MAGIC;
		hd.version = GNN_DELTA_VERSION;
		hd.total_bytes = off;
		hd.base_checksum = ((const gnn_graph_header *) base->region)->checksum;
		hd.num_nodes = n;
		hd.base_edges = ((const gnn_graph_header *) base->region)->num_edges;
		hd.num_edges = m;
		hd.n_train = n_train;
		hd.n_val = n_val;
		hd.n_test = n_test;
		hd.n_labelled = n_labelled;
		hd.num_classes = num_classes;
		hd.feat_dim = dim;
		hd.fwd_rows = kf;
		hd.fwd_arcs = af;
		hd.rev_rows = kr;
		hd.rev_arcs = ar;
		hd.feat_rows = kn;
		hd.etype.src_type = hd.etype.dst_type = 0;
		hd.etype.count = m;
		hd.checksum = delta_checksum(&hd);
		memcpy(region, &hd, sizeof(hd));

		memcpy(region + hd.off_fbits, fb, 8 * W);
		memcpy(region + hd.off_frank, frank, 4 * W);
		memcpy(region + hd.off_rbits, rb, 8 * W);
		memcpy(region + hd.off_rrank, rrank, 4 * W);
		fptr = (int64_t *) (region + hd.off_fptr);
		rptr = (int64_t *) (region + hd.off_rptr);
		fptr[0] = rptr[0] = 0;
		for (int64_t k = 0; k < kf; k++)
			fptr[k + 1] = fptr[k] + flen[k];
		for (int64_t k = 0; k < kr; k++)
			rptr[k + 1] = rptr[k] + rlen[k];
		{
			int32_t    *fi = (int32_t *) (region + hd.off_fidx),
					   *fr = (int32_t *) (region + hd.off_frows),
					   *ri = (int32_t *) (region + hd.off_ridx);
			float	   *fw = weighted ? (float *) (region + hd.off_fw) : NULL,
					   *rw = weighted ? (float *) (region + hd.off_rw) : NULL;

			/* forward rows first: they note the changed arcs' weights for the reverse ones */
#pragma omp parallel for schedule(dynamic, 1024) num_threads(T)
			for (int64_t k = 0; k < kf; k++)
			{
				int64_t		v = fl[k],
							unused = INT64_MAX;

				if (fj[k] >= 0)
					merge_span(c, v, c->cspan[fj[k]], c->cspan[fj[k] + 1], fi + fptr[k], fw ? fw + fptr[k] : NULL,
							   fr + fptr[k], &unused);
				else
					copy_rows(c, v, v + 1, false, fi + fptr[k], fw ? fw + fptr[k] : NULL, fr + fptr[k]);
			}
#pragma omp parallel for schedule(dynamic, 1024) num_threads(T)
			for (int64_t k = 0; k < kr; k++)
			{
				int64_t		t = rl[k];

				if (rj[k] >= 0)
					merge_rrow(c, t, ri + rptr[k], rw ? rw + rptr[k] : NULL);
				else
					copy_rows(c, t, t + 1, true, ri + rptr[k], rw ? rw + rptr[k] : NULL, NULL);
			}
		}
		if (feats)
		{
			float	   *f = (float *) (region + hd.off_nfeat);
			size_t		row = sizeof(float) * (size_t) dim;

			memcpy(region + hd.off_nbits, nb, 8 * W);
			memcpy(region + hd.off_nrank, nrank, 4 * W);
			for (int64_t k = 0; k < kn; k++)
			{
				int64_t		v = nl[k],
							u = src_up[v];

				memcpy(f + k * dim, u >= 0 && ch->up_feat ? ch->up_feat + u * dim : gnn_graph_feat_row(base, v), row);
			}
		}
		if (labels)
		{
			int32_t    *lab = (int32_t *) (region + hd.off_labels);

			for (int64_t v = 0; v < n; v++)
			{
				int64_t		u = src_up[v];
				int32_t		x = u >= 0 && ch->up_labels ? ch->up_labels[u] : base->labels[v];

				lab[v] = x < 0 ? -1 : x;
			}
		}
		if (split)
		{
			uint8_t    *sp = (uint8_t *) (region + hd.off_split);

			for (int64_t v = 0; v < n; v++)
			{
				int64_t		u = src_up[v];
				uint8_t		x = u >= 0 && ch->up_split ? ch->up_split[u] : base->split[v];

				sp[v] = x <= GNN_SPLIT_TEST ? x : GNN_SPLIT_NONE;
			}
		}
		*region_out = region;
		*size_out = off;
	}
done:
	free(fb);
	free(rb);
	free(nb);
	free(fl);
	free(rl);
	free(nl);
	free(flen);
	free(fj);
	free(rlen);
	free(rj);
	free(frank);
	free(rrank);
	free(nrank);
	return status;
}

gnn_status
gnn_graph_apply_changes(const gnn_graph *base, const gnn_graph_changes *ch,
						gnn_region_alloc_fn alloc, void *alloc_arg, void **region_out,
						uint64_t *size_out, gnn_graph_change_stats *stats, gnn_error *err)
{
	gnn_status	status = GNN_OK;
	int64_t		n0 = base->num_nodes;
	uint8_t    *removed = NULL;
	int64_t    *upd_of = NULL;	/* per base node: upsert index, -1 */
	idpos	   *fresh = NULL;	/* new nodes */
	int64_t		nfresh = 0;
	int64_t    *nid = NULL,
			   *src_old = NULL,
			   *src_up = NULL,
			   *eptr = NULL,
			   *indptr = NULL,
			   *fptr = NULL,
			   *reptr = NULL,
			   *rcnt = NULL,
			   *rpos = NULL;
	uint8_t    *rpresent = NULL;
	int8_t	   *rdelta = NULL;
	float	   *rwt = NULL;
	int32_t    *crow = NULL,	/* a delta's changed rows (sparse_rows) */
			   *trow = NULL;
	int64_t    *cspan = NULL,
			   *clen = NULL,
			   *tspan = NULL,
			   *tlen = NULL;
	int32_t    *old2new = NULL,
			   *rsrc = NULL,
			   *eidx = NULL;
	dentry	   *ent = NULL;
	int64_t		nent = 0,
				n = 0,
				m = 0,
				n_removed = 0,
				n_updated = 0;
	int			T;
	char	   *region = NULL;
	int32_t		class_count = 0;
	bool		weighted = base->weighted;	/* (a weighted graph without arcs has no weights array) */
	bool		sparse = base->feat_kind == GNN_FEAT_SPARSE;
	bool		dense = base->feat_kind == GNN_FEAT_DENSE;
	int32_t		dim = base->feat_dim;

	*region_out = NULL;
	*size_out = 0;
	if (err)
		gnn_error_clear(err);
	if (base->node_part)
		return gnn_error_set(err, GNN_ERR_UNSUPPORTED,
							 "one part of a partitioned graph cannot follow its tables (yet): reload it");
#ifdef _OPENMP
	T = ch->nthreads > 0 ? ch->nthreads : omp_get_max_threads();
#else
	T = 1;
#endif
	if (ch->as_delta && !base->region)
		FAIL(GNN_ERR_INVALID, "a delta needs an attached base (gnn_graph_attach)");
	/* a delta keeps every row its base's delta has: it cannot come out smaller */
	if (ch->as_delta && ch->max_delta_bytes > 0 && base->has_delta && base->delta_bytes > ch->max_delta_bytes)
		FAIL(GNN_ERR_UNSUPPORTED, "the delta already takes %llu bytes, more than the %llu allowed",
			 (unsigned long long) base->delta_bytes, (unsigned long long) ch->max_delta_bytes);
	if (base->num_node_types > 1 || base->num_edge_types > 1)
		FAIL(GNN_ERR_UNSUPPORTED, "changes apply to homogeneous graphs only (this one has %d node types and %d relations)",
			 base->num_node_types, base->num_edge_types);
	if (ch->num_removed_edges < 0 || ch->num_added_edges < 0 || ch->num_removed_nodes < 0 ||
		ch->num_upserted_nodes < 0 ||
		(ch->num_removed_edges > 0 && (!ch->rm_src || !ch->rm_dst)) ||
		(ch->num_added_edges > 0 && (!ch->add_src || !ch->add_dst)) ||
		(ch->num_removed_nodes > 0 && !ch->rm_nodes) ||
		(ch->num_upserted_nodes > 0 && !ch->up_ids) ||
		(ch->up_fptr && (!ch->up_fidx || !ch->up_fval) && ch->up_fptr[ch->num_upserted_nodes] > 0))
		FAIL(GNN_ERR_INVALID, "invalid graph changes");
	if (ch->up_feat && ch->num_upserted_nodes > 0 && !dense)
		FAIL(GNN_ERR_INVALID, "dense features were given for a graph without dense features");
	if (ch->up_fptr && ch->num_upserted_nodes > 0 && !sparse)
		FAIL(GNN_ERR_INVALID, "sparse features were given for a graph without sparse features");

	/* the base's classes: its class names, else its label range */
	if (base->labels)
	{
		class_count = base->num_classes;
		if (base->class_names)
		{
			int32_t		c = 0;

			for (uint64_t i = 0; i < base->class_names_bytes; i++)
				c += base->class_names[i] == '\0';
			if (c > class_count)
				class_count = c;
		}
	}

	/* 1. node removals, then upserts */
	removed = calloc(n0, 1);
	upd_of = malloc(sizeof(int64_t) * n0);
	fresh = malloc(sizeof(idpos) * (ch->num_upserted_nodes ? ch->num_upserted_nodes : 1));
	if (!removed || !upd_of || !fresh)
		FAIL(GNN_ERR_NOMEM, "out of memory for %lld nodes", (long long) n0);
	memset(upd_of, 0xff, sizeof(int64_t) * n0);
	for (int64_t i = 0; i < ch->num_removed_nodes; i++)
	{
		int64_t		o = gnn_graph_find(base, ch->rm_nodes[i]);

		if (o < 0)
			FAIL_ROW(i, ch->rm_nodes[i], GNN_ERR_INVALID,
					 "node %lld is removed but is not in the graph", (long long) ch->rm_nodes[i]);
		n_removed += !removed[o];
		removed[o] = 1;
	}
	for (int64_t i = 0; i < ch->num_upserted_nodes; i++)
	{
		int64_t		id = ch->up_ids[i];
		int64_t		o = gnn_graph_find(base, id);

		if (ch->up_labels && ch->up_labels[i] >= class_count)
			FAIL_ROW(i, id, GNN_ERR_INVALID, "node %lld has label %d; the graph has %d classes",
					 (long long) id, ch->up_labels[i], class_count);
		if (ch->up_split && ch->up_split[i] != GNN_SPLIT_NONE && !base->split)
			FAIL_ROW(i, id, GNN_ERR_INVALID, "node %lld has a split; the graph has none", (long long) id);
		if (dense && ch->up_feat)
			for (int32_t j = 0; j < dim; j++)
				if (!isfinite(ch->up_feat[i * dim + j]))
					FAIL_ROW(i, id, GNN_ERR_BAD_VALUE, "feature %d of node %lld is %g", j, (long long) id,
							 (double) ch->up_feat[i * dim + j]);
		if (sparse && ch->up_fptr)
		{
			int64_t		b = ch->up_fptr[i],
						e = ch->up_fptr[i + 1];

			if (b < 0 || e < b || e > ch->up_fptr[ch->num_upserted_nodes])
				FAIL_ROW(i, id, GNN_ERR_INVALID, "the sparse feature rows of the changes are out of order");
			for (int64_t q = b; q < e; q++)
				if (ch->up_fidx[q] < 0 || ch->up_fidx[q] >= dim || (q > b && ch->up_fidx[q] <= ch->up_fidx[q - 1]) ||
					!isfinite(ch->up_fval[q]))
					FAIL_ROW(i, id, GNN_ERR_BAD_VALUE,
							 "the sparse features of node %lld are out of order, out of range or not finite",
							 (long long) id);
		}
		if (o >= 0 && !removed[o])
		{
			n_updated += upd_of[o] < 0;
			upd_of[o] = i;		/* the last upsert of a node wins */
		}
		else
			fresh[nfresh++] = (idpos) {id, i};
	}
	/* new ids sorted; of several upserts of one new id the last wins */
	qsort(fresh, nfresh, sizeof(idpos), idpos_cmp);
	{
		int64_t		k = 0;

		for (int64_t i = 0; i < nfresh; i++)
		{
			if (k > 0 && fresh[k - 1].id == fresh[i].id)
				k--;
			fresh[k++] = fresh[i];
		}
		nfresh = k;
	}
	n = n0 - n_removed + nfresh;
	/* keys of its own (text keys) number the nodes: a node that comes or goes renumbers them */
	if ((base->keys != base->ids || base->key_off) && (n_removed > 0 || nfresh > 0))
		FAIL(GNN_ERR_UNSUPPORTED, "nodes cannot come or go (%lld new, %lld removed) in a graph with keys of its own",
			 (long long) nfresh, (long long) n_removed);
	if (ch->as_delta && (n_removed > 0 || nfresh > 0))
		FAIL(GNN_ERR_UNSUPPORTED, "a delta cannot add or remove nodes (%lld new, %lld removed)",
			 (long long) nfresh, (long long) n_removed);
	if (ch->as_delta && !dense && base->feat_kind != GNN_FEAT_NONE)
		FAIL(GNN_ERR_UNSUPPORTED, "a delta cannot hold sparse features");
	if (!ch->as_delta && base->has_delta && sparse)
		FAIL(GNN_ERR_CORRUPT, "a sparse-featured graph has a delta");
	if (n == 0)
		FAIL(GNN_ERR_EMPTY, "the changes leave the graph without nodes");
	if (n > INT32_MAX)
		FAIL(GNN_ERR_LIMIT, "graph has %lld nodes; at most %d are supported", (long long) n, INT32_MAX);
	/* without node changes every index stays: the maps are the identity (NULL), the ids the base's */
	if (n_removed > 0 || nfresh > 0)
	{
		nid = malloc(sizeof(int64_t) * n);
		src_old = malloc(sizeof(int64_t) * n);
		src_up = malloc(sizeof(int64_t) * n);
		old2new = malloc(sizeof(int32_t) * n0);
	}
	if ((n_removed > 0 || nfresh > 0) && (!nid || !src_old || !src_up || !old2new))
		FAIL(GNN_ERR_NOMEM, "out of memory for %lld nodes", (long long) n);
	if (nid)
	{
		int64_t		o = 0,
					f = 0,
					k = 0;

		while (o < n0 || f < nfresh)
		{
			if (o < n0 && removed[o])
			{
				old2new[o++] = -1;
				continue;
			}
			if (f >= nfresh || (o < n0 && base->ids[o] < fresh[f].id))
			{
				nid[k] = base->ids[o];
				src_old[k] = o;
				src_up[k] = upd_of[o];
				old2new[o++] = (int32_t) k++;
			}
			else
			{
				nid[k] = fresh[f].id;
				src_old[k] = -1;
				src_up[k] = fresh[f++].pos;
				k++;
			}
		}
	}

	const int64_t *ids_new = nid ? nid : base->ids;	/* per new node */
	const int64_t *up_of = src_up ? src_up : upd_of;	/* per new node: its upsert, -1 */

#define SRC_OLD(v) (src_old ? src_old[v] : (int64_t) (v))
	/* 2. edge changes as entries */
	{
		int64_t		cap = 2 * (ch->num_removed_edges + ch->num_added_edges);

		ent = malloc(sizeof(dentry) * (cap ? cap : 1));
		eptr = ch->as_delta ? NULL : calloc(n + 1, sizeof(int64_t));	/* a delta's rows: sparse_rows */
		if (!ent || (!eptr && !ch->as_delta))
			FAIL(GNN_ERR_NOMEM, "out of memory for %lld edge changes", (long long) cap);
	}
	{
		int64_t		cap = ch->num_removed_edges > ch->num_added_edges ? ch->num_removed_edges : ch->num_added_edges;

		eidx = malloc(sizeof(int32_t) * 2 * (cap ? cap : 1));
		if (!eidx)
			FAIL(GNN_ERR_NOMEM, "out of memory for %lld edge changes", (long long) cap);
	}
	for (int pass = 0; pass < 2; pass++)
	{
		bool		rm = pass == 0;
		int64_t		ne = rm ? ch->num_removed_edges : ch->num_added_edges;
		const int64_t *es = rm ? ch->rm_src : ch->add_src;
		const int64_t *ed = rm ? ch->rm_dst : ch->add_dst;
		const float *ew = rm ? ch->rm_weight : ch->add_weight;

		/*
		 * the endpoints' new indices (-1: none), in parallel: two binary
		 * searches over the nodes per change add up; -2: a removed row at
		 * a node removed now (its arcs went with the node)
		 */
#pragma omp parallel for schedule(static) num_threads(T)
		for (int64_t i = 0; i < ne; i++)
		{
			int64_t		s = find_sorted(ids_new, n, es[i]),
						d = find_sorted(ids_new, n, ed[i]);

			if (rm && n_removed > 0)
			{
				int64_t		os = find_sorted(base->ids, n0, es[i]),
							od = find_sorted(base->ids, n0, ed[i]);

				if ((os >= 0 && removed[os]) || (od >= 0 && removed[od]))
					s = -2;
			}
			eidx[2 * i] = (int32_t) s;
			eidx[2 * i + 1] = (int32_t) d;
		}
		/*
		 * a removed node that edge rows still refer to (rows at it that these
		 * changes do not remove): a build of the rows would find them dangling
		 */
		if (rm && n_removed > 0 && !ch->skip_dangling)
		{
			int64_t    *left = calloc(n0, sizeof(int64_t));

			if (!left)
				FAIL(GNN_ERR_NOMEM, "out of memory for %lld nodes", (long long) n0);
			for (int64_t o = 0; o < n0; o++)
			{
				const int32_t *nb,
						   *nr,
						   *ib;
				int64_t		len,
							ilen;

				if (!removed[o])
					continue;
				len = gnn_graph_out_row(base, o, &nb, NULL, &nr);
				for (int64_t p = 0; p < len; p++)
				{
					int64_t		rows = nr ? nr[p] : (ch->undirected && nb[p] == o ? 2 : 1);

					/* undirected: a row is both arcs, so o's out-arcs count each row once (a self loop twice) */
					left[o] += ch->undirected && nb[p] == o ? (rows + 1) / 2 : rows;
				}
				if (ch->undirected)
					continue;
				ilen = gnn_graph_in_row(base, o, &ib, NULL);
				for (int64_t q = 0; q < ilen; q++)
				{
					int32_t		u = ib[q];
					int64_t		ul,
								lo;

					if (u == o)
						continue;	/* the self loop: counted with the out-arcs */
					ul = gnn_graph_out_row(base, u, &nb, NULL, &nr);
					lo = gnn_row_lower_bound(nb, ul, o);
					left[o] += lo < ul && nr ? nr[lo] : 1;
				}
			}
			for (int64_t i = 0; i < ch->num_removed_edges; i++)
			{
				int64_t		os,
							od;

				if (eidx[2 * i] != -2)
					continue;
				os = find_sorted(base->ids, n0, ch->rm_src[i]);
				od = find_sorted(base->ids, n0, ch->rm_dst[i]);
				if (os >= 0 && removed[os])
					left[os]--;
				if (od >= 0 && removed[od] && od != os)
					left[od]--;
			}
			for (int64_t i = 0; i < ch->num_removed_nodes; i++)
			{
				int64_t		o = find_sorted(base->ids, n0, ch->rm_nodes[i]);

				if (o >= 0 && left[o] > 0)
				{
					int64_t		k = left[o];

					free(left);
					FAIL_ROW(i, ch->rm_nodes[i], GNN_ERR_DANGLING,
							 "node %lld is removed, but %lld edge row%s still refer%s to it", (long long) ch->rm_nodes[i],
							 (long long) k, k == 1 ? "" : "s", k == 1 ? "s" : "");
				}
			}
			free(left);
		}
		for (int64_t i = 0; i < ne; i++)
		{
			int64_t		s = eidx[2 * i],
						d = eidx[2 * i + 1];
			float		w = weighted && ew ? ew[i] : 1;

			if (s == -2)
				continue;
			if (s < 0 || d < 0)
			{
				int64_t		which = s < 0 ? es[i] : ed[i];

				if (ch->skip_dangling)
					continue;
				FAIL_ROW(i, which, GNN_ERR_DANGLING,
						 "%s edge %lld -> %lld refers to node %lld, which is not in the node set",
						 rm ? "removed" : "added", (long long) es[i], (long long) ed[i], (long long) which);
			}
			if (weighted && !isfinite(w))
				FAIL_ROW(i, es[i], GNN_ERR_BAD_VALUE, "%s edge %lld -> %lld has weight %g",
						 rm ? "removed" : "added", (long long) es[i], (long long) ed[i], (double) w);
			if (!weighted)
				w = 0;
			int32_t		sign = rm ? -1 : 1;

			if (ch->undirected && s == d)
				ent[nent++] = (dentry) {(int32_t) s, (int32_t) d, 2 * sign, 2 * sign * w, i};
			else
			{
				ent[nent++] = (dentry) {(int32_t) s, (int32_t) d, sign, sign * w, i};
				if (ch->undirected)
					ent[nent++] = (dentry) {(int32_t) d, (int32_t) s, sign, sign * w, i};
			}
		}
	}

	delta_ctx	ctx = {base, ch->undirected, old2new, src_old};
	int64_t		bad = INT64_MAX;

	if (ch->as_delta)
	{
		/* a delta (no node comes or goes): only the rows with changes, no pass over all rows */
		status = sparse_rows(&ctx, ent, nent, T, weighted, &m, &bad, &crow, &cspan, &clen, &trow, &tspan, &tlen,
							 &rsrc, &rpos, &rpresent, &rdelta, &rwt, err);
		if (status != GNN_OK)
			goto done;
		if (bad != INT64_MAX)
			FAIL_ROW(bad, ch->rm_src[bad], GNN_ERR_INVALID,
					 "removed edge %lld -> %lld (change %lld) is not in the graph (or not that many times)",
					 (long long) ch->rm_src[bad], (long long) ch->rm_dst[bad], (long long) bad);
	}
	else
	{
		/*
		 * sorted by source with a counting sort into eptr's buckets (a qsort of
		 * every entry costs more than the rest before the copy), then each
		 * bucket, mostly of one or two entries, by the rest of the key
		 */
		for (int64_t i = 0; i < nent; i++)
			eptr[ent[i].src + 1]++;
		for (int64_t v = 0; v < n; v++)
			eptr[v + 1] += eptr[v];
		{
			int64_t    *next = malloc(sizeof(int64_t) * (n ? n : 1));
			dentry	   *sorted = malloc(sizeof(dentry) * (nent ? nent : 1));

			if (!next || !sorted)
			{
				free(next);
				free(sorted);
				FAIL(GNN_ERR_NOMEM, "out of memory for %lld edge changes", (long long) nent);
			}
			memcpy(next, eptr, sizeof(int64_t) * n);
			for (int64_t i = 0; i < nent; i++)
				sorted[next[ent[i].src]++] = ent[i];
			free(next);
			free(ent);
			ent = sorted;
		}
	#pragma omp parallel for schedule(dynamic, 4096) num_threads(T)
		for (int64_t v = 0; v < n; v++)
		{
			int64_t		b = eptr[v],
						e = eptr[v + 1];

			if (e - b > 16)
				qsort(ent + b, e - b, sizeof(dentry), dentry_cmp);
			else
				for (int64_t i = b + 1; i < e; i++)
				{
					dentry		x = ent[i];
					int64_t		j = i;

					for (; j > b && dentry_cmp(&ent[j - 1], &x) > 0; j--)
						ent[j] = ent[j - 1];
					ent[j] = x;
				}
		}

		/*
		 * the changed arcs by destination, for the reverse CSR: the distinct
		 * (source, destination) pairs of the entries, which are in source order,
		 * counted into destination buckets (so each bucket is in source order)
		 */
		reptr = calloc(n + 1, sizeof(int64_t));
		rsrc = malloc(sizeof(int32_t) * (nent ? nent : 1));
		rpos = malloc(sizeof(int64_t) * (nent ? nent : 1));
		rpresent = malloc(nent ? nent : 1);
		rdelta = malloc(nent ? nent : 1);
		rwt = malloc(sizeof(float) * (nent ? nent : 1));
		rcnt = malloc(sizeof(int64_t) * (n + 1));
		if (!reptr || !rsrc || !rpos || !rpresent || !rdelta || !rwt || !rcnt)
			FAIL(GNN_ERR_NOMEM, "out of memory for %lld edge changes", (long long) nent);
		for (int64_t i = 0; i < nent; i++)
			if (i == 0 || ent[i].src != ent[i - 1].src || ent[i].dst != ent[i - 1].dst)
				reptr[ent[i].dst + 1]++;
		for (int64_t v = 0; v < n; v++)
			reptr[v + 1] += reptr[v];
		{
			int64_t    *next = indptr = malloc(sizeof(int64_t) * (n + 1));	/* (scratch here) */

			if (!next)
				FAIL(GNN_ERR_NOMEM, "out of memory");
			memcpy(next, reptr, sizeof(int64_t) * n);
			for (int64_t i = 0; i < nent; i++)
				if (i == 0 || ent[i].src != ent[i - 1].src || ent[i].dst != ent[i - 1].dst)
				{
					rpos[i] = next[ent[i].dst]++;
					rsrc[rpos[i]] = ent[i].src;
				}
				else
					rpos[i] = rpos[i - 1];
		}

		/*
		 * 3. count each row (and check the removals); a row without entries
		 * keeps its base arcs less those at removed nodes
		 */
		ctx.ent = ent;
		ctx.eptr = eptr;
		ctx.reptr = reptr;
		ctx.rsrc = rsrc;
		ctx.rpos = rpos;
		ctx.rpresent = rpresent;
		ctx.rdelta = rdelta;
		ctx.rwt = weighted ? rwt : NULL;

	#pragma omp parallel for schedule(dynamic, 4096) num_threads(T) reduction(min:bad)
		for (int64_t v = 0; v < n; v++)
			indptr[v + 1] = eptr[v] == eptr[v + 1] ? kept_len(&ctx, false, SRC_OLD(v)) :
				merge_row(&ctx, v, NULL, NULL, NULL, &bad);
		if (bad != INT64_MAX)
			FAIL_ROW(bad, ch->rm_src[bad], GNN_ERR_INVALID,
					 "removed edge %lld -> %lld (change %lld) is not in the graph (or not that many times)",
					 (long long) ch->rm_src[bad], (long long) ch->rm_dst[bad], (long long) bad);
		indptr[0] = 0;
		for (int64_t v = 0; v < n; v++)
			indptr[v + 1] += indptr[v];
		m = indptr[n];

		/* the reverse rows' lengths: the base's, less and plus the changed arcs */
	#pragma omp parallel for schedule(dynamic, 4096) num_threads(T)
		for (int64_t t = 0; t < n; t++)
		{
			int64_t		k = kept_len(&ctx, true, SRC_OLD(t));

			for (int64_t q = reptr[t]; q < reptr[t + 1]; q++)
				k += rdelta[q];
			rcnt[t + 1] = k;
		}
		rcnt[0] = 0;
		for (int64_t t = 0; t < n; t++)
			rcnt[t + 1] += rcnt[t];
		if (rcnt[n] != m)
			FAIL(GNN_ERR_CORRUPT, "the base graph's reverse arcs (%lld after the changes) do not match its arcs (%lld)",
				 (long long) rcnt[n], (long long) m);
	}

	/* node data: sizes and counts */
	int64_t		feat_nnz = 0,
				n_train = 0,
				n_val = 0,
				n_test = 0,
				n_labelled = 0;
	int32_t		maxl = -1;
	bool		has_time = false,
				has_seed_time = false,
				has_targets = false;

	if (sparse)
	{
		fptr = malloc(sizeof(int64_t) * (n + 1));
		if (!fptr)
			FAIL(GNN_ERR_NOMEM, "out of memory");
		fptr[0] = 0;
		for (int64_t v = 0; v < n; v++)
		{
			int64_t		u = up_of[v],
						o = SRC_OLD(v),
						len = 0;

			if (u >= 0 && ch->up_fptr)
				len = ch->up_fptr[u + 1] - ch->up_fptr[u];
			else if (o >= 0)
				len = base->fptr[o + 1] - base->fptr[o];
			fptr[v + 1] = fptr[v] + len;
		}
		feat_nnz = fptr[n];
	}
	for (int64_t v = 0; v < n; v++)
	{
		int64_t		u = up_of[v],
					o = SRC_OLD(v);

		if (base->labels)
		{
			int32_t		l = u >= 0 && ch->up_labels ? ch->up_labels[u] : o >= 0 ? base->labels[o] : -1;

			n_labelled += l >= 0;
			if (l > maxl)
				maxl = l;
		}
		if (base->split)
		{
			uint8_t		s = u >= 0 && ch->up_split ? ch->up_split[u] : o >= 0 ? base->split[o] : GNN_SPLIT_NONE;

			n_train += s == GNN_SPLIT_TRAIN;
			n_val += s == GNN_SPLIT_VAL;
			n_test += s == GNN_SPLIT_TEST;
		}
		if (o >= 0)
		{
			has_time |= base->time && base->time[o] != GNN_TIME_NONE;
			has_seed_time |= base->seed_time && base->seed_time[o] != GNN_TIME_NONE;
			has_targets |= base->targets && !isnan(base->targets[o]);
		}
	}

	if (ch->as_delta)
	{
		status = write_delta(&ctx, ch, n, m, ent, nent, up_of, n_train, n_val, n_test,
							 n_labelled, base->labels ? maxl + 1 : 0, alloc, alloc_arg, region_out, size_out, T,
							 err);
		if (status != GNN_OK)
			goto done;
		goto finish;
	}

	/* 4. the region, laid out as a build lays it out */
	{
		uint64_t	sz[L_COUNT] = {0};
		bool		present[L_COUNT] = {false};
		layout		l;
		uint64_t	un = (uint64_t) n,
					um = (uint64_t) m;

		sz[L_IDS] = 8 * un;
		sz[L_INDPTR] = 8 * (un + 1);
		sz[L_INDICES] = 4 * um;
		sz[L_WEIGHTS] = weighted ? 4 * um : 0;
		sz[L_RINDPTR] = 8 * (un + 1);
		sz[L_RINDICES] = 4 * um;
		sz[L_RWEIGHTS] = weighted ? 4 * um : 0;
		sz[L_FEAT] = dense ? 4 * un * (uint64_t) dim : 0;
		sz[L_FPTR] = sparse ? 8 * (un + 1) : 0;
		sz[L_FIDX] = 4 * (uint64_t) feat_nnz;
		sz[L_FVAL] = 4 * (uint64_t) feat_nnz;
		sz[L_LABELS] = base->labels ? 4 * un : 0;
		sz[L_SPLIT] = base->split ? un : 0;
		sz[L_CLASSES] = base->class_names ? base->class_names_bytes : 0;
		sz[L_TYPE_PTR] = 8 * 2;
		sz[L_ETYPES] = sizeof(gnn_edge_type);
		sz[L_TYPE_NAMES] = base->type_names ? base->type_names_bytes : 0;
		sz[L_TIME] = has_time || has_seed_time ? 8 * un : 0;
		sz[L_SEED_TIME] = has_seed_time ? 8 * un : 0;
		sz[L_TARGETS] = has_targets ? 4 * un : 0;
		sz[L_META] = base->meta ? base->meta_bytes : 0;
		sz[L_ARC_ROWS] = 4 * um;
		/* keys of its own: the node set is the base's (checked above), so are they */
		sz[L_KEYS] = base->keys != base->ids ? 8 * un : 0;
		sz[L_KEY_OFF] = base->key_off ? 8 * (un + 1) : 0;
		sz[L_KEY_BYTES] = base->key_off ? (uint64_t) base->key_off[n] : 0;
		sz[L_TYPE_TEXT_KEY] = base->key_off && base->type_text_key ? 1 : 0;
		present[L_KEY_OFF] = present[L_KEY_BYTES] = base->key_off != NULL;
		present[L_TYPE_TEXT_KEY] = base->key_off && base->type_text_key;
		present[L_IDS] = present[L_INDPTR] = present[L_INDICES] = true;
		present[L_TYPE_PTR] = present[L_ETYPES] = true;
		present[L_RINDPTR] = present[L_RINDICES] = true;
		present[L_FPTR] = present[L_FIDX] = present[L_FVAL] = sparse;
		present[L_ARC_ROWS] = true;
		gnn_graph_compute_layout(sz, present, &l);

		region = alloc(alloc_arg, l.total);
		if (!region)
			FAIL(GNN_ERR_LIMIT, "a region of %llu bytes was refused", (unsigned long long) l.total);

		gnn_graph_header *h = (gnn_graph_header *) region;

		gnn_graph_header_from_layout(h, &l, sz);
		h->num_nodes = n;
		h->num_edges = m;
		h->feat_nnz = feat_nnz;
		h->n_train = n_train;
		h->n_val = n_val;
		h->n_test = n_test;
		h->n_labelled = n_labelled;
		h->feat_kind = base->feat_kind;
		h->feat_dim = dim;
		h->num_classes = base->labels ? maxl + 1 : 0;
		h->weighted = weighted;
		h->num_node_types = 1;
		h->num_edge_types = 1;

		int64_t    *rp = (int64_t *) (region + h->off_indptr);
		int32_t    *ri = (int32_t *) (region + h->off_indices);
		float	   *rw = weighted ? (float *) (region + h->off_weights) : NULL;
		int32_t    *ra = (int32_t *) (region + h->off_arc_rows);

		int64_t    *rrp = (int64_t *) (region + h->off_rindptr);
		int32_t    *rri = (int32_t *) (region + h->off_rindices);
		float	   *rrw = weighted ? (float *) (region + h->off_rweights) : NULL;
		int64_t		nblk = (n + DELTA_BLOCK - 1) / DELTA_BLOCK;

		memcpy(region + h->off_ids, ids_new, 8 * un);
		memcpy(rp, indptr, 8 * (un + 1));

		/*
		 * the forward CSR: rows with entries merged, runs of rows without
		 * copied (a run is one memcpy when no node comes or goes)
		 */
#pragma omp parallel for schedule(dynamic, 1) num_threads(T)
		for (int64_t bk = 0; bk < nblk; bk++)
		{
			int64_t		v = bk * DELTA_BLOCK,
						ve = v + DELTA_BLOCK < n ? v + DELTA_BLOCK : n;

			while (v < ve)
			{
				int64_t		w = v;

				while (w < ve && eptr[w] == eptr[w + 1])
					w++;
				if (w > v)
					copy_rows(&ctx, v, w, false, ri + indptr[v], rw ? rw + indptr[v] : NULL, ra + indptr[v]);
				if (w < ve)
				{
					int64_t		unused = INT64_MAX;

					merge_row(&ctx, w, ri + indptr[w], rw ? rw + indptr[w] : NULL, ra + indptr[w], &unused);
					w++;
				}
				v = w;
			}
		}

		/*
		 * the reverse CSR likewise from the base's: each row the base's
		 * sources mapped, merged with the sources of its changed arcs (what
		 * the build's stable counting sort of the forward arcs gives)
		 */
		memcpy(rrp, rcnt, 8 * (un + 1));
#pragma omp parallel for schedule(dynamic, 1) num_threads(T)
		for (int64_t bk = 0; bk < nblk; bk++)
		{
			int64_t		t = bk * DELTA_BLOCK,
						te = t + DELTA_BLOCK < n ? t + DELTA_BLOCK : n;

			while (t < te)
			{
				int64_t		w = t;

				while (w < te && reptr[w] == reptr[w + 1])
					w++;
				if (w > t)
					copy_rows(&ctx, t, w, true, rri + rcnt[t], rrw ? rrw + rcnt[t] : NULL, NULL);
				if (w < te)
				{
					merge_rrow(&ctx, w, rri + rcnt[w], rrw ? rrw + rcnt[w] : NULL);
					w++;
				}
				t = w;
			}
		}

		if (dense)
		{
			float	   *f = (float *) (region + h->off_feat);
			size_t		row = sizeof(float) * (size_t) dim;

#pragma omp parallel for schedule(static) num_threads(T)
			for (int64_t v = 0; v < n; v++)
			{
				int64_t		u = up_of[v],
							o = SRC_OLD(v);

				if (u >= 0 && ch->up_feat)
					memcpy(f + v * dim, ch->up_feat + u * dim, row);
				else if (o >= 0)
					memcpy(f + v * dim, gnn_graph_feat_row(base, o), row);
				else
					memset(f + v * dim, 0, row);
			}
		}
		else if (sparse)
		{
			int32_t    *fi = (int32_t *) (region + h->off_fidx);
			float	   *fv = (float *) (region + h->off_fval);

			memcpy(region + h->off_fptr, fptr, 8 * (un + 1));
#pragma omp parallel for schedule(static) num_threads(T)
			for (int64_t v = 0; v < n; v++)
			{
				int64_t		u = up_of[v],
							o = SRC_OLD(v),
							len = fptr[v + 1] - fptr[v];

				if (u >= 0 && ch->up_fptr)
				{
					memcpy(fi + fptr[v], ch->up_fidx + ch->up_fptr[u], 4 * len);
					memcpy(fv + fptr[v], ch->up_fval + ch->up_fptr[u], 4 * len);
				}
				else if (o >= 0)
				{
					memcpy(fi + fptr[v], base->fidx + base->fptr[o], 4 * len);
					memcpy(fv + fptr[v], base->fval + base->fptr[o], 4 * len);
				}
			}
		}
		if (base->labels)
		{
			int32_t    *lab = (int32_t *) (region + h->off_labels);

			for (int64_t v = 0; v < n; v++)
			{
				int64_t		u = up_of[v],
							o = SRC_OLD(v);
				int32_t		x = u >= 0 && ch->up_labels ? ch->up_labels[u] : o >= 0 ? base->labels[o] : -1;

				lab[v] = x < 0 ? -1 : x;
			}
		}
		if (base->split)
		{
			uint8_t    *sp = (uint8_t *) (region + h->off_split);

			for (int64_t v = 0; v < n; v++)
			{
				int64_t		u = up_of[v],
							o = SRC_OLD(v);
				uint8_t		x = u >= 0 && ch->up_split ? ch->up_split[u] : o >= 0 ? base->split[o] : GNN_SPLIT_NONE;

				sp[v] = x <= GNN_SPLIT_TEST ? x : GNN_SPLIT_NONE;
			}
		}
		if (sz[L_CLASSES])
			memcpy(region + h->off_class_names, base->class_names, sz[L_CLASSES]);
		{
			int64_t    *tp = (int64_t *) (region + h->off_type_ptr);
			gnn_edge_type *et = (gnn_edge_type *) (region + h->off_etypes);

			tp[0] = 0;
			tp[1] = n;
			et[0].src_type = et[0].dst_type = 0;
			et[0].count = m;
		}
		if (sz[L_TYPE_NAMES])
			memcpy(region + h->off_type_names, base->type_names, sz[L_TYPE_NAMES]);
		/* times and targets: kept for nodes that stay, none for new ones */
		for (int64_t v = 0; v < n; v++)
		{
			int64_t		o = SRC_OLD(v);

			if (h->off_time)
				((int64_t *) (region + h->off_time))[v] = o >= 0 && base->time ? base->time[o] : GNN_TIME_NONE;
			if (h->off_seed_time)
				((int64_t *) (region + h->off_seed_time))[v] = o >= 0 ? base->seed_time[o] : GNN_TIME_NONE;
			if (h->off_targets)
				((float *) (region + h->off_targets))[v] = o >= 0 ? base->targets[o] : NAN;
		}
		if (sz[L_META])
			memcpy(region + h->off_meta, base->meta, sz[L_META]);
		if (sz[L_KEYS])
			memcpy(region + h->off_keys, base->keys, sz[L_KEYS]);
		if (base->key_off)
		{
			memcpy(region + h->off_key_off, base->key_off, sz[L_KEY_OFF]);
			memcpy(region + h->off_key_bytes, base->key_bytes, sz[L_KEY_BYTES]);
		}
		if (sz[L_TYPE_TEXT_KEY])
			memcpy(region + h->off_type_text_key, base->type_text_key, 1);
		h->checksum = gnn_graph_header_checksum(h);
		*region_out = region;
		*size_out = l.total;
	}
finish:
	if (stats)
	{
		stats->inserted_edges = ch->num_added_edges;
		stats->deleted_edges = ch->num_removed_edges;
		stats->inserted_nodes = nfresh;
		stats->deleted_nodes = n_removed;
		stats->updated_nodes = n_updated;
		stats->arcs_before = base->num_edges;
		stats->arcs_after = m;
	}

done:
	free(removed);
	free(upd_of);
	free(fresh);
	free(nid);
	free(src_old);
	free(src_up);
	free(old2new);
	free(ent);
	free(eptr);
	free(indptr);
	free(fptr);
	free(reptr);
	free(rcnt);
	free(rsrc);
	free(eidx);
	free(rpos);
	free(rpresent);
	free(rdelta);
	free(rwt);
	free(crow);
	free(cspan);
	free(clen);
	free(trow);
	free(tspan);
	free(tlen);
	return status;
}

/* ------------------------------------------------------------------ reading a delta */

static bool
dspan_ok(uint64_t off, uint64_t count, uint64_t elem, uint64_t size)
{
	return off >= sizeof(gnn_delta_header) && off <= size && count <= (size - off) / elem;
}

/* one direction's patch: bits and ranks agree, row pointers ascend to the arc count */
static bool
patch_ok(const gnn_graph_patch *p, int64_t W, int64_t rows, int64_t arcs)
{
	int64_t		k = 0;

	for (int64_t w = 0; w < W; w++)
	{
		if (p->rank[w] != k)
			return false;
		k += __builtin_popcountll(p->bits[w]);
	}
	if (k != rows)
		return false;
	if (!p->ptr)
		return true;
	if (p->ptr[0] != 0 || p->ptr[rows] != arcs)
		return false;
	for (int64_t i = 0; i < rows; i++)
		if (p->ptr[i + 1] < p->ptr[i])
			return false;
	return true;
}

/* the ends of a patch: the last word's rank and bits give the row count, the pointers the arc count */
static bool
patch_ends_ok(const gnn_graph_patch *p, int64_t W, int64_t rows, int64_t arcs)
{
	if (W > 0 && (p->rank[0] != 0 || p->rank[W - 1] + __builtin_popcountll(p->bits[W - 1]) != rows))
		return false;
	return !p->ptr || (p->ptr[0] == 0 && p->ptr[rows] == arcs);
}

gnn_status
gnn_graph_check_delta(const gnn_graph *g, gnn_error *err)
{
	int64_t		n = g->num_nodes,
				W = (n + 63) / 64;
	const gnn_delta_header *h = g->delta;

	if (!g->has_delta)
		return GNN_OK;
	if (!patch_ok(&g->dfwd, W, h->fwd_rows, h->fwd_arcs) || !patch_ok(&g->drev, W, h->rev_rows, h->rev_arcs) ||
		(g->dnode.bits && !patch_ok(&g->dnode, W, h->feat_rows, 0)))
		return gnn_error_set(err, GNN_ERR_CORRUPT, "graph delta rows are inconsistent");
	for (int64_t k = 0; k < h->fwd_arcs; k++)
		if ((uint32_t) g->dfwd.idx[k] >= (uint64_t) n)
			return gnn_error_set(err, GNN_ERR_CORRUPT, "graph delta arcs point outside the graph");
	for (int64_t k = 0; k < h->rev_arcs; k++)
		if ((uint32_t) g->drev.idx[k] >= (uint64_t) n)
			return gnn_error_set(err, GNN_ERR_CORRUPT, "graph delta arcs point outside the graph");
	return GNN_OK;
}

gnn_status
gnn_graph_attach_delta(const void *region, uint64_t size, const void *delta, uint64_t delta_size,
					   gnn_graph *g, gnn_error *err)
{
	gnn_status	st = gnn_graph_attach(region, size, g, err);
	const gnn_delta_header *h = delta;
	const char *d = delta;
	const gnn_graph_header *bh = region;
	int64_t		n,
				W;
	uint64_t	sz = delta_size;

	if (st != GNN_OK || delta == NULL)
		return st;
	if (delta_size < sizeof(gnn_delta_header) || h->magic != GNN_DELTA_MAGIC || h->version != GNN_DELTA_VERSION)
		return gnn_error_set(err, GNN_ERR_CORRUPT, "graph delta has a bad magic number or version");
	if (h->checksum != delta_checksum(h) || h->total_bytes > delta_size)
		return gnn_error_set(err, GNN_ERR_CORRUPT, "graph delta header is corrupt");
	if (h->base_checksum != bh->checksum || h->num_nodes != bh->num_nodes || h->base_edges != bh->num_edges ||
		h->feat_dim != bh->feat_dim || g->num_node_types != 1 || g->num_edge_types != 1)
		return gnn_error_set(err, GNN_ERR_CORRUPT, "graph delta does not belong to this graph");
	n = h->num_nodes;
	W = (n + 63) / 64;
	if (h->num_edges < 0 || h->fwd_rows < 0 || h->rev_rows < 0 || h->feat_rows < 0 || h->fwd_arcs < 0 ||
		h->rev_arcs < 0 || h->fwd_rows > n || h->rev_rows > n || h->feat_rows > n ||
		!dspan_ok(h->off_fbits, W, 8, sz) || !dspan_ok(h->off_frank, W, 4, sz) ||
		!dspan_ok(h->off_fptr, h->fwd_rows + 1, 8, sz) || !dspan_ok(h->off_fidx, h->fwd_arcs, 4, sz) ||
		!dspan_ok(h->off_frows, h->fwd_arcs, 4, sz) ||
		(h->off_fw && !dspan_ok(h->off_fw, h->fwd_arcs, 4, sz)) ||
		!dspan_ok(h->off_rbits, W, 8, sz) || !dspan_ok(h->off_rrank, W, 4, sz) ||
		!dspan_ok(h->off_rptr, h->rev_rows + 1, 8, sz) || !dspan_ok(h->off_ridx, h->rev_arcs, 4, sz) ||
		(h->off_rw && !dspan_ok(h->off_rw, h->rev_arcs, 4, sz)) ||
		(!h->off_fw) != (!h->off_rw) || (h->off_fw != 0) != g->weighted ||
		(h->off_nbits && (!dspan_ok(h->off_nbits, W, 8, sz) || !dspan_ok(h->off_nrank, W, 4, sz) ||
						  !dspan_ok(h->off_nfeat, (uint64_t) h->feat_rows * (uint64_t) h->feat_dim, 4, sz))) ||
		(h->off_nbits && g->feat_kind != GNN_FEAT_DENSE) ||
		(h->off_labels && (!g->labels || !dspan_ok(h->off_labels, n, 4, sz))) ||
		(h->off_split && (!g->split || !dspan_ok(h->off_split, n, 1, sz))))
		return gnn_error_set(err, GNN_ERR_CORRUPT, "graph delta arrays fall outside the delta");

	g->dfwd.bits = (const uint64_t *) (d + h->off_fbits);
	g->dfwd.rank = (const int32_t *) (d + h->off_frank);
	g->dfwd.ptr = (const int64_t *) (d + h->off_fptr);
	g->dfwd.idx = (const int32_t *) (d + h->off_fidx);
	g->dfwd.w = h->off_fw ? (const float *) (d + h->off_fw) : NULL;
	g->dfwd.rows = (const int32_t *) (d + h->off_frows);
	g->drev.bits = (const uint64_t *) (d + h->off_rbits);
	g->drev.rank = (const int32_t *) (d + h->off_rrank);
	g->drev.ptr = (const int64_t *) (d + h->off_rptr);
	g->drev.idx = (const int32_t *) (d + h->off_ridx);
	g->drev.w = h->off_rw ? (const float *) (d + h->off_rw) : NULL;
	if (h->off_nbits)
	{
		g->dnode.bits = (const uint64_t *) (d + h->off_nbits);
		g->dnode.rank = (const int32_t *) (d + h->off_nrank);
		g->dnode.feat = (const float *) (d + h->off_nfeat);
	}
	/*
	 * constant-time checks only: every statement that reads the graph
	 * attaches it (as the base region's arcs, the delta's are trusted once
	 * its header and spans are sound; gnn_graph_check_delta looks at all)
	 */
	if (!patch_ends_ok(&g->dfwd, W, h->fwd_rows, h->fwd_arcs) || !patch_ends_ok(&g->drev, W, h->rev_rows, h->rev_arcs) ||
		(g->dnode.bits && !patch_ends_ok(&g->dnode, W, h->feat_rows, 0)))
	{
		memset(g, 0, sizeof(*g));
		return gnn_error_set(err, GNN_ERR_CORRUPT, "graph delta rows are inconsistent");
	}
	g->has_delta = true;
	g->delta = delta;
	g->delta_bytes = delta_size;
	g->num_edges = h->num_edges;
	g->n_train = h->n_train;
	g->n_val = h->n_val;
	g->n_test = h->n_test;
	g->num_classes = h->num_classes;
	g->etypes = &h->etype;
	if (h->off_labels)
		g->labels = (const int32_t *) (d + h->off_labels);
	if (h->off_split)
		g->split = (const uint8_t *) (d + h->off_split);
	/*
	 * a weighted graph whose base has no arcs has no weights arrays: readers
	 * that ask "weighted?" of them must still say yes once the delta has arcs
	 * (and no, as a region of no arcs says, when it has none)
	 */
	if (g->weighted && !g->weights && g->num_edges > 0)
		g->weights = g->dfwd.w;
	if (g->weighted && !g->rweights && g->num_edges > 0)
		g->rweights = g->drev.w;
	if (g->num_edges == 0)		/* every row is the delta's, and empty */
		g->weights = g->rweights = NULL;
	return GNN_OK;
}

gnn_status
gnn_graph_flatten(const gnn_graph *g, gnn_graph *out, void **mem, gnn_error *err)
{
	gnn_graph_changes none;
	void	   *region = NULL;
	uint64_t	size = 0;
	gnn_status	st;

	*mem = NULL;
	if (!g->has_delta)
	{
		*out = *g;
		return GNN_OK;
	}
	memset(&none, 0, sizeof(none));
	st = gnn_graph_apply_changes(g, &none, gnn_graph_malloc_region, NULL, &region, &size, NULL, err);
	if (st == GNN_OK)
		st = gnn_graph_attach(region, size, out, err);
	if (st != GNN_OK)
	{
		free(region);
		return st;
	}
	*mem = region;
	return GNN_OK;
}

/* ------------------------------------------------------------------ mapping in before a merge */

typedef struct premap_job
{
	pthread_t	thread;
	int			n;
	const void *addr[12];
	uint64_t	bytes[12];
} premap_job;

static void *
premap_run(void *arg)
{
	premap_job *j = arg;

	for (int i = 0; i < j->n; i++)
		gnn_premap(j->addr[i], j->bytes[i]);
	return NULL;
}

void *
gnn_graph_premap_start(const gnn_graph *g, int what)
{
	premap_job *j = calloc(1, sizeof(premap_job));
	const gnn_graph_header *h = g->region;
	int64_t		n = g->num_nodes,
				m = h ? h->num_edges : g->num_edges;	/* the base's arcs: its arrays' lengths */

	if (!j)
		return NULL;
#define ADD(p, b) do { if ((p) && j->n < 12) { j->addr[j->n] = (p); j->bytes[j->n++] = (b); } } while (0)
	if (what & GNN_PREMAP_TOPOLOGY)
	{
		ADD(g->indptr, 8 * (uint64_t) (n + 1));
		ADD(g->indices, 4 * (uint64_t) m);
		ADD(g->weights, 4 * (uint64_t) m);
		ADD(g->arc_rows, 4 * (uint64_t) m);
		ADD(g->rindptr, 8 * (uint64_t) (n + 1));
		ADD(g->rindices, 4 * (uint64_t) m);
		ADD(g->rweights, 4 * (uint64_t) m);
		ADD(g->labels, 4 * (uint64_t) n);
		ADD(g->split, (uint64_t) n);
		ADD(g->delta, g->delta_bytes);
	}
	if ((what & GNN_PREMAP_FEATURES) && g->feat_kind == GNN_FEAT_DENSE)
		ADD(g->feat, 4 * (uint64_t) n * (uint64_t) g->feat_dim);
#undef ADD
	/* every signal blocked in it: the server's handlers run on the backend's thread */
	if (!gnn_thread_start(&j->thread, false, premap_run, j))
	{
		premap_run(j);
		free(j);
		return NULL;
	}
	return j;
}

void
gnn_graph_premap_join(void *handle)
{
	premap_job *j = handle;

	if (!j)
		return;
	pthread_join(j->thread, NULL);
	free(j);
}
