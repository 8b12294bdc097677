/*
 * test_feature_cache: the feature-cache policies replayed on a recorded
 * access trace.  A skewed graph (power-law sources, the shape of product
 * and social graphs), the training sampler's input rows over two epochs of
 * batches as the trace; the pre-sampling policy (planned from batches of
 * its own seed) reaches >= 90% of the clairvoyant optimum for a cache that
 * is filled once (the trace's most read rows), and the degree policy less
 * than pre-sampling; Belady's MIN (a cache that may replace rows) is
 * reported beside them.  Belady's
 * MIN itself is checked on small traces against brute force over every
 * static choice and by hand, and the planner's edges (capacity 0, more than
 * the graph, unknown policy) hold.
 */
#include "check.h"
#include "sample/feature_cache.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* a skewed directed graph: arc sources drawn from a power law */
static bool
skewed_graph(int64_t n, int64_t m, uint64_t seed, void **region, gnn_graph *g, gnn_error *err)
{
	gnn_graph_input in = {0};
	int64_t    *src = malloc(sizeof(int64_t) * m),
			   *dst = malloc(sizeof(int64_t) * m),
			   *ids = malloc(sizeof(int64_t) * n);
	float	   *feat = malloc(sizeof(float) * n * 4);
	uint64_t	size;
	gnn_rng		r;
	bool		ok;

	gnn_rng_seed(&r, seed);
	for (int64_t e = 0; e < m; e++)
	{
		double		u = gnn_rng_double(&r);

		src[e] = (int64_t) (n * pow(u, 3.0));
		if (src[e] >= n)
			src[e] = n - 1;
		dst[e] = (int64_t) gnn_rng_below(&r, (uint64_t) n);
	}
	for (int64_t v = 0; v < n; v++)
		ids[v] = v;
	for (int64_t i = 0; i < n * 4; i++)
		feat[i] = (float) (i % 7);
	in.num_edges = m;
	in.src = src;
	in.dst = dst;
	in.num_nodes = n;
	in.node_ids = ids;
	in.feat_dim = 4;
	in.feat = feat;
	ok = gnn_graph_build_region(&in, region, &size, g, err) == GNN_OK;
	free(src);
	free(dst);
	free(ids);
	free(feat);
	return ok;
}

/* the input rows of `passes` shuffled passes over seeds, batch after batch */
static int32_t *
record_trace(const gnn_graph *g, const gnn_sampler_config *sc, const int32_t *seeds, int64_t ns, int bs,
			 int passes, uint64_t seed, int64_t *len)
{
	gnn_sampler *s;
	gnn_error	err;
	gnn_rng		r;
	int32_t    *order = malloc(sizeof(int32_t) * ns);
	int64_t		cap = 1 << 20,
				n = 0;
	int32_t    *t = malloc(sizeof(int32_t) * cap);

	memcpy(order, seeds, sizeof(int32_t) * ns);
	gnn_rng_seed(&r, seed);
	gnn_sampler_create(g, sc, &s, &err);
	for (int p = 0; p < passes; p++)
	{
		for (int64_t i = ns - 1; i > 0; i--)
		{
			int64_t		j = (int64_t) gnn_rng_below(&r, (uint64_t) i + 1);
			int32_t		x = order[i];

			order[i] = order[j];
			order[j] = x;
		}
		for (int64_t b0 = 0; b0 < ns; b0 += bs)
		{
			gnn_minibatch mb;

			gnn_sampler_sample(s, order + b0, ns - b0 < bs ? ns - b0 : bs, gnn_rng_next(&r), &mb, &err);
			if (n + mb.n_input > cap)
			{
				cap = 2 * (n + mb.n_input);
				t = realloc(t, sizeof(int32_t) * cap);
			}
			memcpy(t + n, mb.input_nodes, sizeof(int32_t) * mb.n_input);
			n += mb.n_input;
		}
	}
	gnn_sampler_free(s);
	free(order);
	*len = n;
	return t;
}

/* the best static cache of c rows over a trace on k rows, by brute force */
static double
best_static(const int32_t *trace, int64_t len, int k, int c)
{
	double		best = 0;

	for (unsigned mask = 0; mask < (1u << k); mask++)
	{
		int64_t		hits = 0;

		if (__builtin_popcount(mask) != c)
			continue;
		for (int64_t i = 0; i < len; i++)
			hits += (mask >> trace[i]) & 1;
		if ((double) hits / len > best)
			best = (double) hits / len;
	}
	return best;
}

int
main(void)
{
	gnn_error	err;
	double		h;

	/* Belady by hand: capacity 2 over a b c a b d a b */
	{
		int32_t		t[] = {0, 1, 2, 0, 1, 3, 0, 1};

		gnn_cache_belady(t, 8, 4, 2, &h, &err);
		/* warm with a b: a b hit; c bypassed; a b hit; d bypassed; a b hit */
		CHECK(fabs(h - 6.0 / 8) < 1e-12, "Belady, 2 rows over a b c a b d a b: 6 hits of 8 (got %.3f)", h);
		gnn_cache_belady(t, 8, 4, 0, &h, &err);
		CHECK(h == 0, "Belady with no room: no hit");
		gnn_cache_belady(t, 8, 4, 4, &h, &err);
		CHECK(h == 1.0, "Belady with room for all: every access hits");
	}
	/* Belady is never below the best static choice (random traces over 8 rows) */
	{
		gnn_rng		r;
		bool		ok = true;

		gnn_rng_seed(&r, 3);
		for (int trial = 0; trial < 50 && ok; trial++)
		{
			int32_t		t[60];
			int			c = 1 + (int) gnn_rng_below(&r, 6);

			for (int i = 0; i < 60; i++)
				t[i] = (int32_t) (gnn_rng_double(&r) < 0.5 ? gnn_rng_below(&r, 3) : gnn_rng_below(&r, 8));
			gnn_cache_belady(t, 60, 8, c, &h, &err);
			if (h + 1e-12 < best_static(t, 60, 8, c))
				ok = false;
		}
		CHECK(ok, "Belady's hit rate is at least the best static cache's on 50 random traces (brute force)");
	}

	/* the policies on a skewed graph */
	{
		void	   *region;
		gnn_graph	g;
		int64_t		n = 20000;
		gnn_sampler_config sc = {0};
		int32_t    *seeds = malloc(sizeof(int32_t) * n);
		int64_t		ns = 0,
					len;
		int32_t    *trace,
				   *rows;
		int64_t		nrows;
		gnn_cache_plan_config pc = {0};
		double		opt,
					ora,
					pre,
					deg;
		gnn_rng		r;

		if (!skewed_graph(n, 200000, 11, &region, &g, &err))
		{
			CHECK(0, "graph: %s", err.msg);
			return check_done();
		}
		gnn_rng_seed(&r, 5);
		for (int64_t v = 0; v < n; v++)
			if (gnn_rng_double(&r) < 0.1)
				seeds[ns++] = (int32_t) v;
		sc.kind = GNN_SAMPLER_NEIGHBOR;
		sc.nhops = 2;
		sc.fanouts[0] = 10;
		sc.fanouts[1] = 5;
		sc.nthreads = 1;
		trace = record_trace(&g, &sc, seeds, ns, 128, 2, 99, &len);
		pc.capacity = n / 10;
		pc.sampler = &sc;
		pc.seeds = seeds;
		pc.nseeds = ns;
		pc.batch_size = 128;
		pc.seed = 1234;			/* not the trace's */
		pc.policy = GNN_CACHE_PRESAMPLE;
		CHECK(gnn_cache_plan(&g, &pc, &rows, &nrows, &err) == GNN_OK && nrows == pc.capacity,
			  "pre-sampling plans %lld rows", (long long) pc.capacity);
		pre = gnn_cache_hit_rate(trace, len, rows, nrows, n);
		free(rows);
		pc.policy = GNN_CACHE_DEGREE;
		gnn_cache_plan(&g, &pc, &rows, &nrows, &err);
		deg = gnn_cache_hit_rate(trace, len, rows, nrows, n);
		free(rows);
		gnn_cache_belady(trace, len, n, pc.capacity, &opt, &err);
		gnn_cache_oracle_static(trace, len, n, pc.capacity, &ora, &err);
		NOTE("cache of %lld of %lld rows over %lld accesses: clairvoyant static %.4f, Belady (with replacement) %.4f; "
			 "presample %.4f (%.1f%% of static, %.1f%% of Belady), degree %.4f (%.1f%%, %.1f%%)",
			 (long long) pc.capacity, (long long) n, (long long) len, ora, opt, pre, 100 * pre / ora, 100 * pre / opt,
			 deg, 100 * deg / ora, 100 * deg / opt);
		CHECK(pre >= 0.9 * ora, "pre-sampling's hit rate %.4f is >= 90%% of the clairvoyant optimum for a cache filled once (%.4f)",
			  pre, ora);
		CHECK(deg < pre, "the degree policy (%.4f) hits less than pre-sampling (%.4f) on a skewed graph", deg, pre);
		CHECK(ora > 0 && pre <= ora + 1e-9 && deg <= ora + 1e-9 && ora <= opt + 1e-9,
			  "no policy beats the clairvoyant static cache, and Belady's MIN (replacing) bounds it");

		/* edges */
		pc.policy = GNN_CACHE_PRESAMPLE;
		pc.capacity = 0;
		CHECK(gnn_cache_plan(&g, &pc, &rows, &nrows, &err) == GNN_OK && nrows == 0, "capacity 0: no rows");
		free(rows);
		pc.capacity = 10 * n;
		pc.policy = GNN_CACHE_DEGREE;
		CHECK(gnn_cache_plan(&g, &pc, &rows, &nrows, &err) == GNN_OK && nrows == n,
			  "a degree cache larger than the graph holds every row once");
		free(rows);
		pc.policy = (gnn_cache_policy) 7;
		CHECK(gnn_cache_plan(&g, &pc, &rows, &nrows, &err) == GNN_ERR_INVALID, "an unknown policy: %s", err.msg);
		{
			gnn_cache_policy p;

			CHECK(gnn_cache_policy_parse("presample", &p) && p == GNN_CACHE_PRESAMPLE &&
				  gnn_cache_policy_parse("degree", &p) && p == GNN_CACHE_DEGREE &&
				  !gnn_cache_policy_parse("lru", &p), "policy names parse");
		}
		free(trace);
		free(seeds);
		free(region);
	}
	return check_done();
}
