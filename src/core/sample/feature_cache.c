/*
 * feature_cache.c: choosing the rows of a feature cache, and judging a
 * choice against Belady's optimum (feature_cache.h).
 */
#include "sample/feature_cache.h"

#include <stdlib.h>
#include <string.h>

bool
gnn_cache_policy_parse(const char *s, gnn_cache_policy *out)
{
	if (strcmp(s, "degree") == 0)
		*out = GNN_CACHE_DEGREE;
	else if (strcmp(s, "presample") == 0)
		*out = GNN_CACHE_PRESAMPLE;
	else
		return false;
	return true;
}

/* sort keys: score descending, then degree descending, then index ascending */
typedef struct cache_key
{
	int64_t		score;
	int64_t		degree;
	int32_t		v;
} cache_key;

static int
cmp_key(const void *a, const void *b)
{
	const cache_key *x = a,
			   *y = b;

	if (x->score != y->score)
		return x->score > y->score ? -1 : 1;
	if (x->degree != y->degree)
		return x->degree > y->degree ? -1 : 1;
	return (x->v > y->v) - (x->v < y->v);
}

gnn_status
gnn_cache_plan(const gnn_graph *g, const gnn_cache_plan_config *cfg, int32_t **rows_out,
			   int64_t *nrows, gnn_error *err)
{
	int64_t		n = g->num_nodes,
				cap = cfg->capacity < 0 ? 0 : cfg->capacity > n ? n : cfg->capacity,
				m = 0;
	int64_t    *count = NULL;
	cache_key  *keys = NULL;
	int32_t    *rows = NULL,
			   *order = NULL;
	gnn_sampler *s = NULL;
	gnn_status	st = GNN_OK;

	*rows_out = NULL;
	*nrows = 0;
	if (cfg->policy == GNN_CACHE_PRESAMPLE)
	{
		int64_t		per,
					nb;
		gnn_rng		rng;

		if (!cfg->sampler || !cfg->seeds || cfg->nseeds < 1 || cfg->batch_size < 1)
			return gnn_error_set(err, GNN_ERR_INVALID, "pre-sampling needs a sampler, seeds and a batch size");
		per = (cfg->nseeds + cfg->batch_size - 1) / cfg->batch_size;
		nb = cfg->batches > 0 ? cfg->batches : per;
		count = calloc(n + 1, sizeof(int64_t));
		order = malloc(sizeof(int32_t) * (cfg->nseeds + 1));
		if (!count || !order)
		{
			st = gnn_error_set(err, GNN_ERR_NOMEM, "out of memory planning the cache");
			goto done;
		}
		memcpy(order, cfg->seeds, sizeof(int32_t) * cfg->nseeds);
		if ((st = gnn_sampler_create(g, cfg->sampler, &s, err)) != GNN_OK)
			goto done;
		gnn_rng_seed(&rng, cfg->seed ^ 0x70726573616d706cULL);
		for (int64_t b = 0; b < nb; b++)
		{
			int64_t		b0 = (b % per) * cfg->batch_size,
						bs = cfg->nseeds - b0 < cfg->batch_size ? cfg->nseeds - b0 : cfg->batch_size;
			gnn_minibatch mb;

			if (b % per == 0)	/* a fresh shuffle for every pass, as training does */
				gnn_shuffle_i32(&rng, order, cfg->nseeds);
			if ((st = gnn_sampler_sample(s, order + b0, bs, gnn_rng_next(&rng), &mb, err)) != GNN_OK)
				goto done;
			for (int64_t i = 0; i < mb.n_input; i++)
				count[mb.input_nodes[i]]++;
		}
	}
	else if (cfg->policy != GNN_CACHE_DEGREE)
		return gnn_error_set(err, GNN_ERR_INVALID, "unknown cache policy %d", (int) cfg->policy);

	keys = malloc(sizeof(cache_key) * (n + 1));
	rows = malloc(sizeof(int32_t) * (cap + 1));
	if (!keys || !rows)
	{
		st = gnn_error_set(err, GNN_ERR_NOMEM, "out of memory planning the cache");
		goto done;
	}
	for (int64_t v = 0; v < n; v++)
	{
		int64_t		deg = gnn_graph_out_degree(g, v);	/* in this many in-neighbour lists */
		int64_t		score = count ? count[v] : deg;

		if (count && score == 0)
			continue;			/* never drawn: no claim on the cache */
		keys[m].score = score;
		keys[m].degree = deg;
		keys[m].v = (int32_t) v;
		m++;
	}
	qsort(keys, m, sizeof(cache_key), cmp_key);
	if (m > cap)
		m = cap;
	for (int64_t i = 0; i < m; i++)
		rows[i] = keys[i].v;
	*rows_out = rows;
	*nrows = m;
	rows = NULL;
done:
	gnn_sampler_free(s);
	free(count);
	free(order);
	free(keys);
	free(rows);
	return st;
}

double
gnn_cache_hit_rate(const int32_t *trace, int64_t len, const int32_t *rows, int64_t nrows, int64_t num_nodes)
{
	uint8_t    *in = calloc(num_nodes + 1, 1);
	int64_t		hits = 0;

	if (!in || len == 0)
	{
		free(in);
		return 0;
	}
	for (int64_t i = 0; i < nrows; i++)
		in[rows[i]] = 1;
	for (int64_t i = 0; i < len; i++)
		hits += in[trace[i]];
	free(in);
	return (double) hits / len;
}

static int
cmp_desc64(const void *a, const void *b)
{
	int64_t		x = *(const int64_t *) a,
				y = *(const int64_t *) b;

	return (x < y) - (x > y);
}

gnn_status
gnn_cache_oracle_static(const int32_t *trace, int64_t len, int64_t num_nodes, int64_t capacity,
						double *hit_rate, gnn_error *err)
{
	int64_t    *cnt = calloc(num_nodes + 1, sizeof(int64_t)),
				hits = 0;

	*hit_rate = 0;
	if (!cnt)
		return gnn_error_set(err, GNN_ERR_NOMEM, "out of memory counting accesses");
	for (int64_t i = 0; i < len; i++)
		cnt[trace[i]]++;
	qsort(cnt, num_nodes, sizeof(int64_t), cmp_desc64);
	for (int64_t i = 0; i < capacity && i < num_nodes; i++)
		hits += cnt[i];
	free(cnt);
	*hit_rate = len > 0 ? (double) hits / len : 0;
	return GNN_OK;
}

/* a max-heap of (next use, row); stale entries are skipped when popped */
typedef struct heap_ent
{
	int64_t		next;
	int32_t		v;
} heap_ent;

static void
heap_push(heap_ent *h, int64_t *n, int64_t next, int32_t v)
{
	int64_t		i = (*n)++;

	while (i > 0)
	{
		int64_t		p = (i - 1) / 2;

		if (h[p].next >= next)
			break;
		h[i] = h[p];
		i = p;
	}
	h[i].next = next;
	h[i].v = v;
}

static heap_ent
heap_pop(heap_ent *h, int64_t *n)
{
	heap_ent	top = h[0],
				last = h[--(*n)];
	int64_t		i = 0;

	for (;;)
	{
		int64_t		c = 2 * i + 1;

		if (c >= *n)
			break;
		if (c + 1 < *n && h[c + 1].next > h[c].next)
			c++;
		if (h[c].next <= last.next)
			break;
		h[i] = h[c];
		i = c;
	}
	if (*n > 0)
		h[i] = last;
	return top;
}

gnn_status
gnn_cache_belady(const int32_t *trace, int64_t len, int64_t num_nodes, int64_t capacity,
				 double *hit_rate, gnn_error *err)
{
	int64_t    *next = malloc(sizeof(int64_t) * (len + 1)),
			   *last = malloc(sizeof(int64_t) * (num_nodes + 1)),
			   *cur = malloc(sizeof(int64_t) * (num_nodes + 1));	/* a cached row's next use, -1: not cached */
	/* pushes: one per hit or insert, and the warm start's */
	heap_ent   *h = malloc(sizeof(heap_ent) * (len + (capacity < num_nodes ? capacity : num_nodes) + 1));
	int64_t		nh = 0,
				size = 0,
				hits = 0;

	*hit_rate = 0;
	if (!next || !last || !cur || !h)
	{
		free(next);
		free(last);
		free(cur);
		free(h);
		return gnn_error_set(err, GNN_ERR_NOMEM, "out of memory replaying %lld accesses", (long long) len);
	}
	for (int64_t v = 0; v < num_nodes; v++)
	{
		last[v] = INT64_MAX;	/* never used again */
		cur[v] = -1;
	}
	for (int64_t i = len - 1; i >= 0; i--)
	{
		next[i] = last[trace[i]];
		last[trace[i]] = i;
	}
	/*
	 * Warm: the cache starts with the rows it would want, the capacity rows
	 * read first (a cache filled once has no cold misses either, so this is
	 * the bound to hold it to; cold, MIN over a short trace is mostly first
	 * reads).
	 */
	for (int64_t i = 0; i < len && size < capacity; i++)
		if (cur[trace[i]] < 0)
		{
			cur[trace[i]] = i;
			heap_push(h, &nh, i, trace[i]);
			size++;
		}
	for (int64_t i = 0; i < len && capacity > 0; i++)
	{
		int32_t		v = trace[i];

		if (cur[v] >= 0)
		{
			hits++;
			cur[v] = next[i];
			heap_push(h, &nh, next[i], v);
			continue;
		}
		if (next[i] == INT64_MAX)
			continue;			/* never used again: bypass */
		if (size == capacity)
		{
			heap_ent	e;

			/* the cached row used farthest ahead (skipping stale entries) */
			for (;;)
			{
				e = h[0];
				if (cur[e.v] == e.next)
					break;
				(void) heap_pop(h, &nh);
			}
			if (e.next <= next[i])
				continue;		/* everything cached is needed sooner: bypass */
			(void) heap_pop(h, &nh);
			cur[e.v] = -1;
			size--;
		}
		cur[v] = next[i];
		heap_push(h, &nh, next[i], v);
		size++;
	}
	*hit_rate = len > 0 ? (double) hits / len : 0;
	free(next);
	free(last);
	free(cur);
	free(h);
	return GNN_OK;
}
