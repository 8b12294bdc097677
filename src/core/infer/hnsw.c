/*
 * hnsw.c: the HNSW index behind gnn.similar's approximate path.
 *
 * Layout of the block (offsets from its start, 8-byte aligned):
 *   header
 *   levels   uint8[n]            the top level of every row
 *   link0    int32[n * (1+s0)]   level 0: a count, then up to s0 = 2m + 4 rows (2m
 *                                links, 4 spare ones for the repair below)
 *   uoff     int64[n]            where a row's level-1 list starts in ulinks (-1: none)
 *   ulinks   int32[...]          levels 1..top of each row: (1+m) int32 each
 * Rows are indices into the embedding table the index was built over.
 *
 * Building inserts the rows one by one (in parallel, each row's lists
 * guarded by a one-byte spin lock, the entry point by a mutex, as hnswlib
 * does): a greedy descent through the levels above the row's, then at each
 * of its levels a best-first search keeping ef_construction candidates,
 * whose best are linked by the heuristic that keeps a candidate only if it
 * is closer to the row than to every link already kept (links then point
 * in diverse directions; the best of the others fill what room is left);
 * links made back to the row are pruned by the same rule when a list is full.
 *
 * Similarity is gnn_cosine's or gnn_dot's (NaN ranks below every number); ties are
 * broken by the lower index everywhere, so one thread builds the same
 * index every time.
 */
#include "infer/hnsw.h"
#include "infer/topk.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#define HNSW_MAGIC 0x574e5348u	/* "HSNW" */
#define HNSW_MAX_LEVEL 15
#define HNSW_SPARE 4			/* level-0 slots beyond 2m, for links to rows nothing reached */

typedef struct hnsw_header
{
	uint32_t	magic;
	uint32_t	done;			/* 1 once built */
	int64_t		n;
	int32_t		m;
	int32_t		m0;
	int32_t		slots0;			/* m0 + HNSW_SPARE */
	int32_t		ef_construction;
	int32_t		metric;			/* GNN_HNSW_COSINE, GNN_HNSW_DOT */
	int32_t		dim;			/* of the rows it was built over */
	int32_t		max_level;
	int64_t		entry;
	uint64_t	levels_off;
	uint64_t	link0_off;
	uint64_t	uoff_off;
	uint64_t	ulinks_off;
	uint64_t	ulinks_len;		/* int32s */
	uint64_t	bytes;
} hnsw_header;

#define ALIGN8(x) (((x) + 7) & ~(uint64_t) 7)

static void
defaults(const gnn_hnsw_params *p, int32_t *m, int32_t *efc)
{
	*m = p && p->m > 0 ? p->m : 16;
	*efc = p && p->ef_construction > 0 ? p->ef_construction : 64;
}

/* the level of every row (levels[i]), drawn from the seed: floor(-ln(u) / ln(m)), capped */
static int32_t
draw_levels(int64_t n, int32_t m, uint64_t seed, uint8_t *levels, uint64_t *upper)
{
	gnn_rng		rng;
	double		ml = 1.0 / log((double) (m < 2 ? 2 : m));
	int32_t		top = 0;

	gnn_rng_seed(&rng, seed ^ 0x68e5f0c3a1b2d4e6ULL);
	*upper = 0;
	for (int64_t i = 0; i < n; i++)
	{
		double		u = gnn_rng_double(&rng);
		int32_t		l = (int32_t) floor(-log(u > 0 ? u : 1e-300) * ml);

		if (l > HNSW_MAX_LEVEL)
			l = HNSW_MAX_LEVEL;
		if (levels)
			levels[i] = (uint8_t) l;
		*upper += (uint64_t) l;
		if (l > top)
			top = l;
	}
	return top;
}

static gnn_status
layout(int64_t n, int32_t m, uint64_t upper_levels, hnsw_header *h, gnn_error *err)
{
	uint64_t	off;

	if (n < 1 || n > GNN_HNSW_MAX_ROWS)
		return gnn_error_set(err, GNN_ERR_INVALID, "an index holds 1 to %lld rows (asked for %lld)",
							 (long long) GNN_HNSW_MAX_ROWS, (long long) n);
	if (m < 2 || m > GNN_HNSW_MAX_M)
		return gnn_error_set(err, GNN_ERR_INVALID, "m must be between 2 and %d (got %d)", GNN_HNSW_MAX_M, m);
	memset(h, 0, sizeof(*h));
	h->magic = HNSW_MAGIC;
	h->n = n;
	h->m = m;
	h->m0 = 2 * m;
	h->slots0 = h->m0 + HNSW_SPARE;
	off = ALIGN8(sizeof(hnsw_header));
	h->levels_off = off;
	off = ALIGN8(off + (uint64_t) n);
	h->link0_off = off;
	off = ALIGN8(off + sizeof(int32_t) * (uint64_t) n * (uint64_t) (1 + h->slots0));
	h->uoff_off = off;
	off = ALIGN8(off + sizeof(int64_t) * (uint64_t) n);
	h->ulinks_off = off;
	h->ulinks_len = upper_levels * (uint64_t) (1 + m);
	off = ALIGN8(off + sizeof(int32_t) * h->ulinks_len);
	h->bytes = off;
	return GNN_OK;
}

gnn_status
gnn_hnsw_size(int64_t n, const gnn_hnsw_params *p, size_t *bytes, gnn_error *err)
{
	int32_t		m,
				efc;
	uint64_t	upper = 0;
	hnsw_header h;
	gnn_status	st;

	defaults(p, &m, &efc);
	if (n >= 1 && n <= GNN_HNSW_MAX_ROWS)
		(void) draw_levels(n, m, p ? p->seed : 0, NULL, &upper);
	if ((st = layout(n, m, upper, &h, err)) != GNN_OK)
		return st;
	*bytes = (size_t) h.bytes;
	return GNN_OK;
}

/* ------------------------------------------------------------------ access */

typedef struct hnsw_view
{
	const hnsw_header *h;
	uint8_t    *levels;
	int32_t    *link0;
	int64_t    *uoff;
	int32_t    *ulinks;
} hnsw_view;

static void
view_of(const void *buf, hnsw_view *v)
{
	char	   *b = (char *) buf;

	v->h = (const hnsw_header *) b;
	v->levels = (uint8_t *) (b + v->h->levels_off);
	v->link0 = (int32_t *) (b + v->h->link0_off);
	v->uoff = (int64_t *) (b + v->h->uoff_off);
	v->ulinks = (int32_t *) (b + v->h->ulinks_off);
}

/* row i's list at level l: [0] the count, then the rows */
static inline int32_t *
list_of(const hnsw_view *v, int64_t i, int32_t l)
{
	if (l == 0)
		return v->link0 + i * (int64_t) (1 + v->h->slots0);
	return v->ulinks + v->uoff[i] + (int64_t) (l - 1) * (1 + v->h->m);
}

/*
 * The rows and how they are compared.  Cosine: gnn_cosine.  Dot product
 * (gnn_dot, maximum inner product search): the graph is built with the dot
 * product itself as the similarity (ip-NSW, Morozov and Babenko 2018).
 * Lifting the rows into one more dimension so that all have one norm
 * (Bachrach et al. 2014) makes it a cosine search in theory, but queries
 * then lie off the rows' distribution: on 50,000 rows of varied norms
 * recall@10 at width 100 was 0.78 that way, 0.97 this way.
 */
typedef struct space
{
	const float *emb;
	const float *norms;
	int32_t		dim;
	int32_t		metric;			/* GNN_HNSW_COSINE, GNN_HNSW_DOT */
} space;

/* similarity to a query: a row of the table (build) or any vector (a search) */
typedef struct query
{
	const space *sp;
	const float *row;
	float		norm;			/* cosine: |row| */
} query;

static inline query
query_of_row(const space *sp, int32_t r)
{
	query		q = {sp, sp->emb + (int64_t) r * sp->dim, sp->norms[r]};

	return q;
}

/* NaN ranks below every number */
static inline float
sim_to(const query *q, int32_t r)
{
	const space *sp = q->sp;
	const float *x = sp->emb + (int64_t) r * sp->dim;
	float		s = sp->metric == GNN_HNSW_DOT ? gnn_dot(q->row, x, sp->dim) :
		gnn_cosine(q->row, x, sp->dim, q->norm, sp->norms[r]);

	return isnan(s) ? -INFINITY : s;
}

/* ------------------------------------------------------------------ candidates */

typedef struct cand
{
	float		s;
	int32_t		i;
} cand;

/* a ranks before b: more similar, then lower index */
static inline bool
before(const cand *a, const cand *b)
{
	return a->s > b->s || (a->s == b->s && a->i < b->i);
}

/* a binary heap of candidates; worst_top: the worst at the root (else the best) */
typedef struct heap
{
	cand	   *a;
	int32_t		n,
				cap;
	bool		worst_top;
} heap;

static inline bool
above(const heap *h, const cand *x, const cand *y)
{
	return h->worst_top ? before(y, x) : before(x, y);
}

static bool
heap_push(heap *h, cand c)
{
	int32_t		p;

	if (h->n == h->cap)
	{
		int32_t		cap = h->cap ? h->cap * 2 : 64;
		cand	   *a = realloc(h->a, sizeof(cand) * (size_t) cap);

		if (a == NULL)
			return false;
		h->a = a;
		h->cap = cap;
	}
	p = h->n++;
	while (p > 0)
	{
		int32_t		up = (p - 1) / 2;

		if (!above(h, &c, &h->a[up]))
			break;
		h->a[p] = h->a[up];
		p = up;
	}
	h->a[p] = c;
	return true;
}

static cand
heap_pop(heap *h)
{
	cand		top = h->a[0],
				v = h->a[--h->n];
	int32_t		p = 0;

	for (;;)
	{
		int32_t		c = 2 * p + 1;

		if (c >= h->n)
			break;
		if (c + 1 < h->n && above(h, &h->a[c + 1], &h->a[c]))
			c++;
		if (!above(h, &h->a[c], &v))
			break;
		h->a[p] = h->a[c];
		p = c;
	}
	if (h->n > 0)
		h->a[p] = v;
	return top;
}

static int
cmp_cand(const void *x, const void *y)
{
	return before(x, y) ? -1 : before(y, x) ? 1 : 0;
}

/* ------------------------------------------------------------------ visited rows
 * While building, a tag per row (a new tag per search: no clearing); while
 * answering, a hash set of the rows seen, so a search costs what it visits
 * whatever the number of rows.
 */
typedef struct visited
{
	uint32_t   *tags;			/* build: n tags */
	uint32_t	tag;
	int32_t    *set;			/* search: open addressing, -1 empty */
	uint32_t	cap,
				used;
} visited;

static bool
visit_reset(visited *v)
{
	if (v->tags)
	{
		if (++v->tag == 0)
		{
			/* wrapped: start over */
			v->tag = 1;
			return false;
		}
		return true;
	}
	memset(v->set, 0xff, sizeof(int32_t) * v->cap);
	v->used = 0;
	return true;
}

static inline uint32_t
hash32(int32_t x)
{
	uint32_t	h = (uint32_t) x * 0x9e3779b1u;

	return h ^ (h >> 15);
}

/* mark row r; false if it was marked already; -1 on no memory */
static int
visit(visited *v, int32_t r)
{
	uint32_t	i;

	if (v->tags)
	{
		if (v->tags[r] == v->tag)
			return 0;
		v->tags[r] = v->tag;
		return 1;
	}
	if (2 * (v->used + 1) > v->cap)
	{
		uint32_t	cap = v->cap * 2;
		int32_t    *s = malloc(sizeof(int32_t) * cap);

		if (s == NULL)
			return -1;
		memset(s, 0xff, sizeof(int32_t) * cap);
		for (uint32_t j = 0; j < v->cap; j++)
			if (v->set[j] >= 0)
			{
				for (i = hash32(v->set[j]) & (cap - 1); s[i] >= 0; i = (i + 1) & (cap - 1))
					;
				s[i] = v->set[j];
			}
		free(v->set);
		v->set = s;
		v->cap = cap;
	}
	for (i = hash32(r) & (v->cap - 1); v->set[i] >= 0; i = (i + 1) & (v->cap - 1))
		if (v->set[i] == r)
			return 0;
	v->set[i] = r;
	v->used++;
	return 1;
}

/* ------------------------------------------------------------------ locks (build only) */

static inline void
spin_lock(uint8_t *l)
{
	while (__atomic_test_and_set(l, __ATOMIC_ACQUIRE))
		while (__atomic_load_n(l, __ATOMIC_RELAXED))
			;
}

static inline void
spin_unlock(uint8_t *l)
{
	__atomic_clear(l, __ATOMIC_RELEASE);
}

/* a copy of row r's list at level l into out (locks: NULL when none are needed) */
static int32_t
read_list(const hnsw_view *v, uint8_t *locks, int32_t r, int32_t l, int32_t *out)
{
	int32_t    *ls,
				c;

	if (locks)
		spin_lock(&locks[r]);
	ls = list_of(v, r, l);
	c = ls[0];
	memcpy(out, ls + 1, sizeof(int32_t) * (size_t) c);
	if (locks)
		spin_unlock(&locks[r]);
	return c;
}

/* ------------------------------------------------------------------ search */

typedef struct scratch
{
	heap		cands;			/* to explore, best first */
	heap		found;			/* the ef best, worst first */
	visited		vis;
	int32_t    *nbr;			/* a list's copy: up to slots0 */
	cand	   *sel;			/* selection's work space: up to max(ef, slots0 + 1) */
	int32_t		sel_cap;
} scratch;

/* greedy: from cur, move to a more similar neighbour at level l until none is */
static cand
greedy(const hnsw_view *v, uint8_t *locks, const query *q, cand cur, int32_t l, int32_t *nbr)
{
	for (bool moved = true; moved;)
	{
		int32_t		c = read_list(v, locks, cur.i, l, nbr);

		moved = false;
		for (int32_t j = 0; j < c; j++)
		{
			cand		x = {sim_to(q, nbr[j]), nbr[j]};

			if (before(&x, &cur))
			{
				cur = x;
				moved = true;
			}
		}
	}
	return cur;
}

/*
 * Best-first search at level l from ep keeping the ef best in s->found
 * (worst at the root).  false on no memory.
 */
static bool
search_layer(const hnsw_view *v, uint8_t *locks, const query *q, cand ep, int32_t ef, int32_t l, scratch *s)
{
	s->cands.n = 0;
	s->found.n = 0;
	if (!visit_reset(&s->vis))
	{
		memset(s->vis.tags, 0, sizeof(uint32_t) * (size_t) v->h->n);
		s->vis.tag = 1;
	}
	if (visit(&s->vis, ep.i) < 0 || !heap_push(&s->cands, ep) || !heap_push(&s->found, ep))
		return false;

	/*
	 * Answering at level 0, the entry is a start as well: the repair made
	 * every row reachable from it, so a search as wide as the table finds
	 * them all wherever the descent led.
	 */
	if (locks == NULL && l == 0 && ep.i != (int32_t) v->h->entry)
	{
		cand		e = {sim_to(q, (int32_t) v->h->entry), (int32_t) v->h->entry};

		if (visit(&s->vis, e.i) < 0 || !heap_push(&s->cands, e) || !heap_push(&s->found, e))
			return false;
	}
	while (s->cands.n > 0)
	{
		cand		c = heap_pop(&s->cands);
		int32_t		cnt;

		/* the best left to explore is worse than the worst kept: done */
		if (s->found.n >= ef && before(&s->found.a[0], &c))
			break;
		cnt = read_list(v, locks, c.i, l, s->nbr);
		for (int32_t j = 0; j < cnt; j++)
		{
			int32_t		r = s->nbr[j];
			int			seen = visit(&s->vis, r);
			cand		x;

			if (seen < 0)
				return false;
			if (seen == 0)
				continue;
			x.s = sim_to(q, r);
			x.i = r;
			if (s->found.n < ef || before(&x, &s->found.a[0]))
			{
				if (!heap_push(&s->cands, x) || !heap_push(&s->found, x))
					return false;
				if (s->found.n > ef)
					(void) heap_pop(&s->found);
			}
		}
	}
	return true;
}

static bool
scratch_init(scratch *s, int32_t slots, int32_t ef, int64_t n_tags)
{
	memset(s, 0, sizeof(*s));
	s->cands.worst_top = false;
	s->found.worst_top = true;
	s->nbr = malloc(sizeof(int32_t) * (size_t) (slots + 1));
	s->sel_cap = (ef > slots + 1 ? ef : slots + 1) + 1;
	s->sel = malloc(sizeof(cand) * (size_t) s->sel_cap);
	if (n_tags > 0)
	{
		s->vis.tags = calloc((size_t) n_tags, sizeof(uint32_t));
		s->vis.tag = 0;
	}
	else
	{
		s->vis.cap = 4096;
		s->vis.set = malloc(sizeof(int32_t) * s->vis.cap);
	}
	return s->nbr && s->sel && (s->vis.tags || s->vis.set);
}

static void
scratch_free(scratch *s)
{
	free(s->cands.a);
	free(s->found.a);
	free(s->vis.tags);
	free(s->vis.set);
	free(s->nbr);
	free(s->sel);
}

/* ------------------------------------------------------------------ build */

/*
 * The heuristic: of c[0..n) (sorted best first, similarity to the base
 * row), keep each in turn that is more similar to the base than to every
 * one kept already, up to max; returns how many were kept (moved to the
 * front of c).
 */
static int32_t
select_links(const space *sp, cand *c, int32_t n, int32_t max)
{
	int32_t		kept = 0;

	for (int32_t j = 0; j < n && kept < max; j++)
	{
		bool		good = true;
		query		qj = query_of_row(sp, c[j].i);

		for (int32_t t = 0; t < kept && good; t++)
			if (sim_to(&qj, c[t].i) > c[j].s)
				good = false;
		if (good)
		{
			cand		t = c[kept];

			c[kept++] = c[j];
			c[j] = t;
		}
	}

	/*
	 * Room left: the best of those pruned fill it, in order (rows much alike,
	 * say many equal embeddings, would otherwise keep one link each and cut
	 * the graph apart).
	 */
	if (kept < max && kept < n)
	{
		qsort(c + kept, (size_t) (n - kept), sizeof(cand), cmp_cand);
		kept = n < max ? n : max;
	}
	return kept;
}

typedef struct build_ctx
{
	hnsw_view	v;
	space		sp;
	int32_t		efc;
	uint8_t    *locks;
	pthread_mutex_t top;		/* guards entry and max_level */
	int64_t		entry;
	int32_t		max_level;
} build_ctx;

/* link row b back to row a at level l (b's lock taken here) */
static void
link_back(build_ctx *b, int32_t base, int32_t a, int32_t l, cand *work)
{
	const hnsw_view *v = &b->v;
	int32_t		cap = l == 0 ? v->h->m0 : v->h->m;
	int32_t    *ls;
	int32_t		c;

	spin_lock(&b->locks[base]);
	ls = list_of(v, base, l);
	c = ls[0];
	for (int32_t j = 0; j < c; j++)
		if (ls[1 + j] == a)
		{
			spin_unlock(&b->locks[base]);
			return;
		}
	if (c < cap)
	{
		ls[1 + c] = a;
		ls[0] = c + 1;
	}
	else
	{
		/* full: choose again among the links and the newcomer */
		query		qb = query_of_row(&b->sp, base);
		int32_t		kept;

		for (int32_t j = 0; j < c; j++)
		{
			work[j].i = ls[1 + j];
			work[j].s = sim_to(&qb, work[j].i);
		}
		work[c].i = a;
		work[c].s = sim_to(&qb, a);
		qsort(work, (size_t) c + 1, sizeof(cand), cmp_cand);
		kept = select_links(&b->sp, work, c + 1, cap);
		for (int32_t j = 0; j < kept; j++)
			ls[1 + j] = work[j].i;
		ls[0] = kept;
	}
	spin_unlock(&b->locks[base]);
}

static bool
insert(build_ctx *b, int32_t i, scratch *s)
{
	const hnsw_view *v = &b->v;
	int32_t		lvl = v->levels[i];
	int32_t		top;
	int64_t		ep;
	bool		raise;
	query		q = query_of_row(&b->sp, i);
	cand		cur;

	pthread_mutex_lock(&b->top);
	top = b->max_level;
	ep = b->entry;
	raise = lvl > top;
	if (!raise)
		pthread_mutex_unlock(&b->top);	/* else held until the row is the new entry */
	cur.i = (int32_t) ep;
	cur.s = sim_to(&q, cur.i);
	for (int32_t l = top; l > lvl; l--)
		cur = greedy(v, b->locks, &q, cur, l, s->nbr);
	for (int32_t l = (lvl < top ? lvl : top); l >= 0; l--)
	{
		int32_t		n,
					kept,
					cap = l == 0 ? v->h->m0 : v->h->m;
		int32_t    *ls;

		if (!search_layer(v, b->locks, &q, cur, b->efc, l, s))
		{
			if (raise)
				pthread_mutex_unlock(&b->top);
			return false;
		}
		n = s->found.n;
		memcpy(s->sel, s->found.a, sizeof(cand) * (size_t) n);
		qsort(s->sel, (size_t) n, sizeof(cand), cmp_cand);
		cur = s->sel[0];
		kept = select_links(&b->sp, s->sel, n, v->h->m);
		if (kept > cap)
			kept = cap;
		/* the links, kept aside (others may link to row i once it is unlocked; sel is link_back's work space) */
		for (int32_t j = 0; j < kept; j++)
			s->nbr[j] = s->sel[j].i;
		spin_lock(&b->locks[i]);
		ls = list_of(v, i, l);
		memcpy(ls + 1, s->nbr, sizeof(int32_t) * (size_t) kept);
		ls[0] = kept;
		spin_unlock(&b->locks[i]);
		for (int32_t j = 0; j < kept; j++)
			link_back(b, s->nbr[j], i, l, s->sel);
	}
	if (raise)
	{
		b->entry = i;
		b->max_level = lvl;
		pthread_mutex_unlock(&b->top);
	}
	return true;
}

/*
 * mark what row r reaches at level 0 (seen), r included; queue: n slots of
 * work space, where the rows newly marked are left (returns their count)
 */
static int64_t
reach_from(const hnsw_view *v, int32_t r, uint8_t *seen, int32_t *queue)
{
	int64_t		head = 0,
				tail = 0;

	if (seen[r])
		return 0;
	seen[r] = 1;
	queue[tail++] = r;
	while (head < tail)
	{
		const int32_t *ls = list_of(v, queue[head++], 0);

		for (int32_t j = 0; j < ls[0]; j++)
			if (!seen[ls[1 + j]])
			{
				seen[ls[1 + j]] = 1;
				queue[tail++] = ls[1 + j];
			}
	}
	return tail;
}

/*
 * Pruning links back can leave a row that no list points to (rows much
 * alike make it likely), and a search never finds such a row.  Every row
 * the entry does not reach at level 0 gets a link from the most similar
 * row that is reached and has a spare slot found by a search from the row,
 * else from the reached row with a spare slot marked last (a stack of
 * them: lists only grow, so a full row leaves it for good), so a search as
 * wide as the table visits every row.  Each row costs one search at most:
 * many equal rows (zero embeddings of nodes no walk visited) once made this
 * a scan of the table per row, hours on 262k rows.  Returns the rows
 * linked, or -1 (no memory) or -2 (stopped).
 */
static int64_t
repair(build_ctx *b, const gnn_hnsw_params *p)
{
	const hnsw_view *v = &b->v;
	int64_t		n = v->h->n,
				linked = 0;
	uint8_t    *seen = calloc((size_t) n, 1);
	int32_t    *queue = malloc(sizeof(int32_t) * (size_t) n);
	int32_t    *room = malloc(sizeof(int32_t) * (size_t) n);
	int64_t		nroom = 0,
				got;
	scratch		s;
	bool		ok = scratch_init(&s, v->h->slots0, b->efc, n);

	if (!seen || !queue || !room || !ok)
	{
		linked = -1;
		goto done;
	}
	got = reach_from(v, (int32_t) b->entry, seen, queue);
	for (int64_t j = 0; j < got; j++)
		if (list_of(v, queue[j], 0)[0] < v->h->slots0)
			room[nroom++] = queue[j];
	for (int64_t u = 0; u < n; u++)
	{
		query		q = query_of_row(&b->sp, (int32_t) u);
		cand		cur = {0, (int32_t) b->entry};
		int32_t		best = -1;
		int32_t    *ls;

		if (seen[u])
			continue;
		if ((linked & 255) == 0 && p && p->should_stop && p->should_stop(p->stop_arg))
		{
			linked = -2;
			goto done;
		}
		cur.s = sim_to(&q, cur.i);
		for (int32_t l = b->max_level; l > 0; l--)
			cur = greedy(v, NULL, &q, cur, l, s.nbr);
		if (!search_layer(v, NULL, &q, cur, b->efc, 0, &s))
		{
			linked = -1;
			goto done;
		}
		qsort(s.found.a, (size_t) s.found.n, sizeof(cand), cmp_cand);
		for (int32_t j = 0; j < s.found.n && best < 0; j++)
			if (seen[s.found.a[j].i] && list_of(v, s.found.a[j].i, 0)[0] < v->h->slots0)
				best = s.found.a[j].i;
		if (best < 0)
		{
			/* none found with room: the reached row with room marked last */
			while (nroom > 0 && list_of(v, room[nroom - 1], 0)[0] >= v->h->slots0)
				nroom--;
			if (nroom > 0)
				best = room[nroom - 1];
		}
		if (best < 0)
			continue;			/* every reached row is full: cannot happen while n > 1 rows reach few */
		ls = list_of(v, best, 0);
		ls[1 + ls[0]] = (int32_t) u;
		ls[0]++;
		linked++;
		got = reach_from(v, (int32_t) u, seen, queue);
		for (int64_t j = 0; j < got; j++)
			if (list_of(v, queue[j], 0)[0] < v->h->slots0)
				room[nroom++] = queue[j];
	}
done:
	scratch_free(&s);
	free(seen);
	free(queue);
	free(room);
	return linked;
}

gnn_status
gnn_hnsw_build(const float *emb, const float *norms, int64_t n, int32_t dim, const gnn_hnsw_params *p,
			   void *buf, size_t bytes, gnn_error *err)
{
	int32_t		m,
				efc;
	uint64_t	upper = 0;
	hnsw_header h;
	gnn_status	st;
	build_ctx	b;
	int			nthreads = p && p->nthreads > 0 ? p->nthreads : 0;
	volatile int failed = 0;	/* 1: no memory, 2: stopped */
	uint64_t	u = 0;

	defaults(p, &m, &efc);
	if (emb == NULL || norms == NULL || buf == NULL || dim < 1)
		return gnn_error_set(err, GNN_ERR_INVALID, "an index needs rows, their norms and a block to fill");
	if (n >= 1 && n <= GNN_HNSW_MAX_ROWS)
		(void) draw_levels(n, m, p ? p->seed : 0, NULL, &upper);
	if ((st = layout(n, m, upper, &h, err)) != GNN_OK)
		return st;
	if (bytes < h.bytes)
		return gnn_error_set(err, GNN_ERR_DIMENSION, "the index needs %llu bytes, the block has %zu",
							 (unsigned long long) h.bytes, bytes);
	h.ef_construction = efc;
	h.metric = p && p->metric == GNN_HNSW_DOT ? GNN_HNSW_DOT : GNN_HNSW_COSINE;
	h.dim = dim;
	memset(buf, 0, h.bytes);	/* slots not filled are zeros: one thread builds the same bytes */
	memcpy(buf, &h, sizeof(h));
	view_of(buf, &b.v);
	h.max_level = draw_levels(n, m, p ? p->seed : 0, b.v.levels, &upper);
	for (int64_t i = 0; i < n; i++)
	{
		b.v.link0[i * (int64_t) (1 + h.slots0)] = 0;
		b.v.uoff[i] = -1;
		if (b.v.levels[i] > 0)
		{
			b.v.uoff[i] = (int64_t) u;
			for (int32_t l = 0; l < b.v.levels[i]; l++)
				b.v.ulinks[u + (uint64_t) l * (uint64_t) (1 + m)] = 0;
			u += (uint64_t) b.v.levels[i] * (uint64_t) (1 + m);
		}
	}
	b.sp.emb = emb;
	b.sp.norms = norms;
	b.sp.dim = dim;
	b.sp.metric = h.metric;
	b.efc = efc;
	b.entry = 0;
	b.max_level = b.v.levels[0];
	b.locks = calloc((size_t) n, 1);
	if (b.locks == NULL)
		return gnn_error_set(err, GNN_ERR_NOMEM, "out of memory building an index over %lld rows", (long long) n);
	pthread_mutex_init(&b.top, NULL);

#ifndef _OPENMP
	(void) nthreads;
#endif
#pragma omp parallel num_threads(nthreads > 0 ? nthreads : omp_get_max_threads()) if (n > 1000)
	{
		scratch		s;
		bool		ok = scratch_init(&s, h.slots0, efc, n);

		if (!ok)
			failed = 1;
#pragma omp for schedule(dynamic, 256)
		for (int64_t i = 1; i < n; i++)
		{
			if (failed)
				continue;
			if ((i & 1023) == 0 && p && p->should_stop && p->should_stop(p->stop_arg))
			{
				failed = 2;
				continue;
			}
			if (!insert(&b, (int32_t) i, &s))
				failed = 1;
		}
		scratch_free(&s);
	}
	pthread_mutex_destroy(&b.top);
	free(b.locks);
	b.locks = NULL;
	((hnsw_header *) buf)->entry = b.entry;
	((hnsw_header *) buf)->max_level = b.max_level;
	if (!failed)
	{
		int64_t		r = repair(&b, p);

		failed = r == -1 ? 1 : r == -2 ? 2 : 0;
	}
	if (failed == 2)
		return gnn_error_set(err, GNN_ERR_CANCELLED, "building the index was stopped");
	if (failed)
		return gnn_error_set(err, GNN_ERR_NOMEM, "out of memory building an index over %lld rows", (long long) n);
	__atomic_store_n(&((hnsw_header *) buf)->done, 1, __ATOMIC_RELEASE);
	return GNN_OK;
}

bool
gnn_hnsw_valid(const void *buf, size_t bytes, int64_t n)
{
	const hnsw_header *h = buf;

	return buf != NULL && bytes >= sizeof(hnsw_header) && h->magic == HNSW_MAGIC && h->done == 1 &&
		h->n == n && h->bytes <= bytes && h->entry >= 0 && h->entry < n && h->m0 == 2 * h->m && h->slots0 == h->m0 + HNSW_SPARE &&
		h->max_level >= 0 && h->max_level <= HNSW_MAX_LEVEL;
}

/*
 * The k best rows for query q (skip: a row to leave out, or -1; exclude:
 * ascending rows to leave out), scored as the exact scans score; width
 * candidates are kept.
 */
static int64_t
search(const hnsw_view *v, const query *q, int32_t k, int32_t width, int64_t skip, const int64_t *exclude,
	   int64_t nexclude, int64_t *out_idx, float *out_score)
{
	scratch		s;
	cand		cur;
	int64_t		got = 0;

	if (!scratch_init(&s, v->h->slots0, width, 0))
	{
		scratch_free(&s);
		return -1;
	}
	cur.i = (int32_t) v->h->entry;
	cur.s = sim_to(q, cur.i);
	for (int32_t l = v->h->max_level; l > 0; l--)
		cur = greedy(v, NULL, q, cur, l, s.nbr);
	if (!search_layer(v, NULL, q, cur, width, 0, &s))
	{
		scratch_free(&s);
		return -1;
	}
	qsort(s.found.a, (size_t) s.found.n, sizeof(cand), cmp_cand);
	for (int32_t j = 0; j < s.found.n && got < k; j++)
	{
		int32_t		r = s.found.a[j].i;
		const float *x = q->sp->emb + (int64_t) r * q->sp->dim;
		int64_t		lo = 0,
					hi = nexclude;

		if (r == skip)
			continue;
		while (lo < hi)
		{
			int64_t		mid = (lo + hi) / 2;

			if (exclude[mid] < r)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo < nexclude && exclude[lo] == r)
			continue;
		out_idx[got] = r;
		/* the exact scans' floats (NaN as NaN; the search ranked it last) */
		out_score[got] = q->sp->metric == GNN_HNSW_DOT ? gnn_dot(q->row, x, q->sp->dim) :
			gnn_cosine(q->row, x, q->sp->dim, q->norm, q->sp->norms[r]);
		got++;
	}
	scratch_free(&s);
	return got;
}

static int32_t
width_of(int32_t ef, int64_t want)
{
	int64_t		w = ef > want ? ef : want;

	return (int32_t) (w < INT32_MAX - 1 ? w : INT32_MAX - 1);
}

int64_t
gnn_hnsw_search(const void *index, const float *emb, const float *norms, int32_t dim, int64_t q, int32_t k,
				int32_t ef, int64_t *out_idx, float *out_score)
{
	hnsw_view	v;
	space		sp;
	query		qq;

	if (index == NULL || emb == NULL || norms == NULL || dim < 1 || k < 0)
		return -1;
	view_of(index, &v);
	if (q < 0 || q >= v.h->n || v.h->metric != GNN_HNSW_COSINE || v.h->dim != dim)
		return -1;
	if (isnan(norms[q]) || norms[q] < 0.0f || !isfinite(norms[q]))
		return GNN_HNSW_EXACT;
	if (norms[q] == 0.0f)
	{
		/* a row without direction scores 0 against every row: the scan's ties, by lower index */
		int64_t		got = 0;

		for (int64_t i = 0; i < v.h->n && got < k; i++)
			if (i != q)
			{
				out_idx[got] = i;
				out_score[got++] = 0.0f;
			}
		return got;
	}
	if (k == 0)
		return 0;
	sp.emb = emb;
	sp.norms = norms;
	sp.dim = dim;
	sp.metric = GNN_HNSW_COSINE;
	qq.sp = &sp;
	qq.row = emb + q * dim;
	qq.norm = norms[q];
	/* q itself is among what it finds */
	return search(&v, &qq, k, width_of(ef, (int64_t) k + 1), q, NULL, 0, out_idx, out_score);
}

int64_t
gnn_hnsw_search_dot(const void *index, const float *emb, const float *norms, int32_t dim, const float *vec,
					const int64_t *exclude, int64_t nexclude, int32_t k, int32_t ef, int64_t *out_idx,
					float *out_score)
{
	hnsw_view	v;
	space		sp;
	query		qq;
	double		qn = 0;

	if (index == NULL || emb == NULL || norms == NULL || vec == NULL || dim < 1 || k < 0 || nexclude < 0)
		return -1;
	view_of(index, &v);
	if (v.h->metric != GNN_HNSW_DOT || v.h->dim != dim)
		return -1;
	for (int64_t i = 1; i < nexclude; i++)
		if (exclude[i] <= exclude[i - 1])
			return -1;
	for (int32_t j = 0; j < dim; j++)
		qn += (double) vec[j] * vec[j];
	if (!(qn > 0) || !isfinite(qn))
		return GNN_HNSW_EXACT;
	/* more to leave out than a search keeps beside the table's size: a scan is as cheap */
	if ((int64_t) k + nexclude > v.h->n / 4 && (int64_t) k + nexclude > ef)
		return GNN_HNSW_EXACT;
	if (k == 0)
		return 0;
	sp.emb = emb;
	sp.norms = norms;
	sp.dim = dim;
	sp.metric = GNN_HNSW_DOT;
	qq.sp = &sp;
	qq.row = vec;
	qq.norm = (float) sqrt(qn);
	return search(&v, &qq, k, width_of(ef, (int64_t) k + nexclude), -1, exclude, nexclude, out_idx, out_score);
}

void
gnn_hnsw_describe(const void *index, gnn_hnsw_info *info)
{
	hnsw_view	v;
	int64_t		links = 0;

	view_of(index, &v);
	info->rows = v.h->n;
	info->m = v.h->m;
	info->levels = v.h->max_level;
	for (int64_t i = 0; i < v.h->n; i++)
		for (int32_t l = 0; l <= v.levels[i]; l++)
			links += list_of(&v, i, l)[0];
	info->links = links;
}
