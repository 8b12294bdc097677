/*
 * test_sample: sampler statistics (chi-squared over many draws), block
 * well-formedness, determinism across thread counts, LADIES unbiasedness,
 * random-walk and node2vec transition statistics, feature gathers.
 *
 * Chi-squared thresholds are far in the tail (p < 1e-4 for the degrees of
 * freedom used) and the seeds are fixed, so the tests are deterministic.
 */
#include "check.h"
#include "sample/sample.h"

#include <math.h>

/* 99.99% quantile of chi-squared, Wilson-Hilferty approximation */
static double
chi2_limit(int df)
{
	double		z = 3.719;
	double		a = 2.0 / (9.0 * df);

	return df * pow(1 - a + z * sqrt(a), 3);
}

static double
chi2(const double *obs, const double *expct, int n)
{
	double		s = 0;

	for (int i = 0; i < n; i++)
		s += (obs[i] - expct[i]) * (obs[i] - expct[i]) / expct[i];
	return s;
}

static gnn_status
build(int64_t m, const int64_t *src, const int64_t *dst, const float *w, int64_t nnodes,
	  bool undirected, void **region, gnn_graph *g)
{
	gnn_graph_input in = {0};
	int64_t    *ids = malloc(sizeof(int64_t) * nnodes);
	uint64_t	size;
	gnn_error	err;
	gnn_status	st;

	for (int64_t i = 0; i < nnodes; i++)
		ids[i] = i;
	in.num_edges = m;
	in.src = src;
	in.dst = dst;
	in.weight = w;
	in.undirected = undirected;
	in.num_nodes = nnodes;
	in.node_ids = ids;
	st = gnn_graph_build_region(&in, region, &size, g, &err);
	if (st != GNN_OK)
		NOTE("build failed: %s", err.msg);
	free(ids);
	return st;
}

/* a star: nodes 1..d point at node 0 (in-neighbours of 0), weight i */
static void
test_star(void)
{
	enum
	{
		D = 20, T = 20000
	};
	int64_t		src[D],
				dst[D];
	float		w[D];
	void	   *region;
	gnn_graph	g;
	gnn_error	err;
	int32_t		seed0 = 0;
	double		obs[D],
				ex[D],
				wsum = 0;

	for (int i = 0; i < D; i++)
	{
		src[i] = i + 1;
		dst[i] = 0;
		w[i] = (float) (i + 1);
		wsum += i + 1;
	}
	if (build(D, src, dst, w, D + 1, false, &region, &g) != GNN_OK)
	{
		CHECK(0, "star graph");
		return;
	}
	struct
	{
		const char *name;
		int			k;
		bool		replace;
		bool		weighted;
	}			cases[] = {
		{"uniform, without replacement, k=5", 5, false, false},
		{"uniform, with replacement, k=5", 5, true, false},
		{"uniform, without replacement, k=15 (Floyd)", 15, false, false},
		{"weighted, with replacement, k=5", 5, true, true},
		{"weighted, without replacement, k=1", 1, false, true},
	};

	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++)
	{
		gnn_sampler_config cfg = {0};
		gnn_sampler *s;
		bool		norepeat = true,
					sizes = true;

		cfg.nhops = 1;
		cfg.fanouts[0] = cases[c].k;
		cfg.replace = cases[c].replace;
		cfg.weighted = cases[c].weighted;
		cfg.nthreads = 1;
		if (gnn_sampler_create(&g, &cfg, &s, &err) != GNN_OK)
		{
			CHECK(0, "create: %s", err.msg);
			continue;
		}
		memset(obs, 0, sizeof(obs));
		for (int t = 0; t < T; t++)
		{
			gnn_minibatch mb;
			const gnn_block *b;

			gnn_sampler_sample(s, &seed0, 1, 1000 + t, &mb, &err);
			b = &mb.blocks[0];
			sizes &= b->nnz == cases[c].k && b->n_dst == 1;
			for (int64_t e = 0; e < b->nnz; e++)
			{
				int32_t		v = mb.input_nodes[b->indices[e]];

				obs[v - 1] += 1;
				if (e > 0 && b->indices[e] == b->indices[e - 1])
					norepeat = false;
			}
		}
		for (int i = 0; i < D; i++)
			ex[i] = cases[c].weighted ? (double) T * cases[c].k * (i + 1) / wsum : (double) T * cases[c].k / D;
		{
			double		x2 = chi2(obs, ex, D);

			CHECK(x2 < chi2_limit(D - 1) && sizes, "%s: each neighbour drawn with probability %s (chi2 %.1f < %.1f)",
				  cases[c].name, cases[c].weighted ? "w/sum(w)" : "k/d", x2, chi2_limit(D - 1));
		}
		if (!cases[c].replace)
			CHECK(norepeat, "%s: never repeats a neighbour", cases[c].name);
		gnn_sampler_free(s);
	}
	free(region);
}

/*
 * Weighted sampling never draws an edge of weight 0: node 0's in-edges from
 * 1..4 weigh {0, 1, 0, 3}, node 5's {-2, 1, 0, 3} (negative counts as 0),
 * node 6's from 1..3 all weigh 0 (no neighbours for weighted sampling).
 */
static void
test_zero_weights(void)
{
	enum
	{
		T = 20000
	};
	int64_t		src[] = {1, 2, 3, 4, 1, 2, 3, 4, 1, 2, 3};
	int64_t		dst[] = {0, 0, 0, 0, 5, 5, 5, 5, 6, 6, 6};
	float		w[] = {0, 1, 0, 3, -2, 1, 0, 3, 0, 0, 0};
	void	   *region;
	gnn_graph	g;
	gnn_error	err;
	struct
	{
		int			k;
		bool		replace;
		int			per;		/* draws per sample */
	}			cases[] = {{3, true, 3}, {1, false, 1}, {2, false, 2}, {3, false, 2}, {-1, false, 2}, {-1, true, 2}};

	if (build(11, src, dst, w, 7, false, &region, &g) != GNN_OK)
	{
		CHECK(0, "zero-weight graph");
		return;
	}
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++)
		for (int32_t node = 0; node <= 6; node += 5)
		{
			gnn_sampler_config cfg = {0};
			gnn_sampler *s;
			double		obs[5] = {0},
						tot = 0;
			bool		never = true,
						sizes = true;
			int32_t		empty = 6;
			gnn_minibatch mb;

			cfg.nhops = 1;
			cfg.fanouts[0] = cases[c].k;
			cfg.replace = cases[c].replace;
			cfg.weighted = true;
			cfg.nthreads = 1;
			if (gnn_sampler_create(&g, &cfg, &s, &err) != GNN_OK)
			{
				CHECK(0, "create: %s", err.msg);
				continue;
			}
			for (int t = 0; t < T; t++)
			{
				const gnn_block *b;

				gnn_sampler_sample(s, &node, 1, 77 + t, &mb, &err);
				b = &mb.blocks[0];
				sizes &= b->nnz == cases[c].per;
				for (int64_t e = 0; e < b->nnz; e++)
				{
					int32_t		u = mb.input_nodes[b->indices[e]];

					never &= u == 2 || u == 4;
					obs[u]++;
					tot++;
				}
			}
			CHECK(never && sizes, "weighted, fanout %d, %s, node %d: %d draws a sample, never a zero-weight edge",
				  cases[c].k, cases[c].replace ? "with replacement" : "without replacement", node, cases[c].per);
			/* the weight-3 edge: 3/4 of the draws, or in every sample when both are taken */
			if (cases[c].per < 2 || (cases[c].replace && cases[c].k > 0))
				CHECK(fabs(obs[4] / tot - 0.75) < 0.015, "  ... the weight-3 edge drawn %.4f of the time (want 0.75)",
					  obs[4] / tot);
			gnn_sampler_sample(s, &empty, 1, 5, &mb, &err);
			CHECK(mb.blocks[0].nnz == 0 && mb.n_input == 1,
				  "  ... a node whose in-edges all weigh 0 has no neighbours (%lld drawn)",
				  (long long) mb.blocks[0].nnz);
			gnn_sampler_free(s);
		}
	free(region);
}

/* inclusion probability k/d with the one-pass path (k > 64) */
static void
test_large_fanout(void)
{
	enum
	{
		D = 100, K = 70, T = 4000
	};
	int64_t		src[D],
				dst[D];
	void	   *region;
	gnn_graph	g;
	gnn_error	err;
	gnn_sampler_config cfg = {0};
	gnn_sampler *s;
	int32_t		seed0 = 0;
	double		obs[D] = {0},
				ex[D];
	bool		ok = true;

	for (int i = 0; i < D; i++)
	{
		src[i] = i + 1;
		dst[i] = 0;
		ex[i] = (double) T * K / D;
	}
	build(D, src, dst, NULL, D + 1, false, &region, &g);
	cfg.nhops = 1;
	cfg.fanouts[0] = K;
	gnn_sampler_create(&g, &cfg, &s, &err);
	for (int t = 0; t < T; t++)
	{
		gnn_minibatch mb;

		gnn_sampler_sample(s, &seed0, 1, t, &mb, &err);
		ok &= mb.blocks[0].nnz == K;
		for (int64_t e = 0; e < mb.blocks[0].nnz; e++)
		{
			obs[mb.input_nodes[mb.blocks[0].indices[e]] - 1] += 1;
			if (e > 0 && mb.blocks[0].indices[e] <= mb.blocks[0].indices[e - 1])
				ok = false;
		}
	}
	/* without replacement the counts are less dispersed than multinomial: the
	 * statistic is scaled by 1/(1 - k/d) (finite population correction) */
	CHECK(ok && chi2(obs, ex, D) * (1.0 - (double) K / D) < chi2_limit(D - 1),
		  "k=70 of 100: uniform inclusion, no repeats (chi2 %.1f)", chi2(obs, ex, D) * (1.0 - (double) K / D));
	gnn_sampler_free(s);
	free(region);
}

/* a random graph for structure checks */
static void
random_graph(int64_t n, int64_t m, uint64_t seed, void **region, gnn_graph *g)
{
	int64_t    *src = malloc(sizeof(int64_t) * m),
			   *dst = malloc(sizeof(int64_t) * m);
	gnn_rng		r;

	gnn_rng_seed(&r, seed);
	for (int64_t e = 0; e < m; e++)
	{
		/* skewed degrees */
		src[e] = (int64_t) (gnn_rng_below(&r, n) * gnn_rng_double(&r));
		dst[e] = (int64_t) gnn_rng_below(&r, n);
	}
	build(m, src, dst, NULL, n, true, region, g);
	free(src);
	free(dst);
}

static bool
has_in_edge(const gnn_graph *g, int32_t v, int32_t u)
{
	for (int64_t e = g->rindptr[v]; e < g->rindptr[v + 1]; e++)
		if (g->rindices[e] == u)
			return true;
	return false;
}

static bool
well_formed(const gnn_graph *g, const gnn_minibatch *mb, const char **why)
{
	int			L = mb->nhops;
	int32_t    *seen = calloc(g->num_nodes, sizeof(int32_t));
	bool		ok = true;

	*why = "";
	for (int64_t i = 0; i < mb->n_input; i++)
	{
		if (mb->input_nodes[i] < 0 || mb->input_nodes[i] >= g->num_nodes || seen[mb->input_nodes[i]]++)
		{
			*why = "input nodes not a set of graph nodes";
			ok = false;
		}
	}
	for (int l = 0; l < L && ok; l++)
	{
		const gnn_block *b = &mb->blocks[l];

		if (l > 0 && b->n_src != mb->blocks[l - 1].n_dst)
		{
			*why = "block sizes do not chain";
			ok = false;
		}
		if (b->n_dst > b->n_src || b->indptr[0] != 0 || b->indptr[b->n_dst] != b->nnz)
		{
			*why = "bad block shape";
			ok = false;
		}
		for (int64_t i = 0; ok && i < b->n_dst; i++)
			for (int64_t e = b->indptr[i]; e < b->indptr[i + 1]; e++)
			{
				int32_t		j = b->indices[e];

				if (j < 0 || j >= b->n_src || (e > b->indptr[i] && j < b->indices[e - 1]))
				{
					*why = "column out of range or row unsorted";
					ok = false;
					break;
				}
				if (!has_in_edge(g, mb->input_nodes[i], mb->input_nodes[j]))
				{
					*why = "a block edge is not a graph edge";
					ok = false;
					break;
				}
			}
	}
	if (ok && mb->blocks[L - 1].n_dst != mb->n_nodes[0])
	{
		*why = "last block's destinations are not the seeds";
		ok = false;
	}
	free(seen);
	return ok;
}

static bool
same_batch(const gnn_minibatch *a, const gnn_minibatch *b)
{
	if (a->n_input != b->n_input || memcmp(a->input_nodes, b->input_nodes, sizeof(int32_t) * a->n_input))
		return false;
	for (int l = 0; l < a->nhops; l++)
	{
		const gnn_block *x = &a->blocks[l],
				   *y = &b->blocks[l];

		if (x->nnz != y->nnz || x->n_dst != y->n_dst ||
			memcmp(x->indptr, y->indptr, sizeof(int64_t) * (x->n_dst + 1)) ||
			memcmp(x->indices, y->indices, sizeof(int32_t) * x->nnz) ||
			(x->weights && memcmp(x->weights, y->weights, sizeof(float) * x->nnz)))
			return false;
	}
	return true;
}

/* copy a batch's arrays (the sampler reuses its buffers) */
static void
copy_batch(const gnn_minibatch *src, gnn_minibatch *dst, void **mem, int *nmem)
{
	*dst = *src;
	*nmem = 0;
	mem[(*nmem)++] = memcpy(malloc(4 * src->n_input + 4), src->input_nodes, 4 * src->n_input);
	dst->input_nodes = mem[0];
	for (int l = 0; l < src->nhops; l++)
	{
		const gnn_block *b = &src->blocks[l];

		dst->blocks[l].indptr = mem[(*nmem)++] = memcpy(malloc(8 * (b->n_dst + 1)), b->indptr, 8 * (b->n_dst + 1));
		dst->blocks[l].indices = mem[(*nmem)++] = memcpy(malloc(4 * b->nnz + 4), b->indices, 4 * b->nnz);
		if (b->weights)
			dst->blocks[l].weights = mem[(*nmem)++] = memcpy(malloc(4 * b->nnz + 4), b->weights, 4 * b->nnz);
	}
}

static void
test_blocks(void)
{
	void	   *region;
	gnn_graph	g;
	gnn_error	err;
	int32_t		seeds[300];
	int64_t		nuniq = 0;
	gnn_rng		r;

	random_graph(5000, 40000, 7, &region, &g);
	gnn_rng_seed(&r, 3);
	for (int i = 0; i < 300; i++)
		seeds[i] = (int32_t) gnn_rng_below(&r, g.num_nodes);
	seeds[17] = seeds[3];		/* a duplicate seed is dropped */
	for (int i = 0; i < 300; i++)
	{
		bool		dup = false;

		for (int j = 0; j < i; j++)
			dup |= seeds[j] == seeds[i];
		nuniq += !dup;
	}
	for (int kind = 0; kind < 2; kind++)
		for (int replace = 0; replace < 2; replace++)
		{
			gnn_sampler_config cfg = {0};
			gnn_sampler *s1,
					   *s2;
			gnn_minibatch a,
						b,
						c;
			const char *why = "";
			void	   *mem[32];
			int			nmem;

			if (kind == GNN_SAMPLER_LADIES && replace)
				continue;
			cfg.kind = kind;
			cfg.nhops = 3;
			cfg.fanouts[0] = kind ? 400 : 10;
			cfg.fanouts[1] = kind ? 800 : -1;
			cfg.fanouts[2] = kind ? 1600 : 5;
			cfg.replace = replace;
			cfg.nthreads = 1;
			gnn_sampler_create(&g, &cfg, &s1, &err);
			cfg.nthreads = 2;
			gnn_sampler_create(&g, &cfg, &s2, &err);
			CHECK(gnn_sampler_sample(s1, seeds, 300, 42, &a, &err) == GNN_OK, "sample: %s", err.msg);
			CHECK(a.n_nodes[0] == nuniq, "%s: duplicate seeds dropped (%lld of 300 unique)", kind ? "ladies" : "neighbor",
				  (long long) a.n_nodes[0]);
			CHECK(well_formed(&g, &a, &why), "%s%s: blocks well formed (endpoints present, relabelling a bijection, edges real) %s",
				  kind ? "ladies" : "neighbor", replace ? " with replacement" : "", why);
			copy_batch(&a, &c, mem, &nmem);
			gnn_sampler_sample(s2, seeds, 300, 42, &b, &err);
			CHECK(same_batch(&c, &b), "%s: same seed, 1 vs 2 threads => identical sample", kind ? "ladies" : "neighbor");
			gnn_sampler_sample(s1, seeds, 300, 43, &b, &err);
			CHECK(!same_batch(&c, &b), "%s: another seed => another sample", kind ? "ladies" : "neighbor");
			gnn_sampler_sample(s1, seeds, 300, 42, &b, &err);
			CHECK(same_batch(&c, &b), "%s: same seed again (reused buffers) => identical sample", kind ? "ladies" : "neighbor");
			if (kind == GNN_SAMPLER_NEIGHBOR && !replace)
			{
				/* fanout -1 at hop 2: every in-neighbour of hop-1 nodes */
				const gnn_block *blk = &a.blocks[1];
				bool		all = true;

				for (int64_t i = 0; i < blk->n_dst; i++)
					all &= blk->indptr[i + 1] - blk->indptr[i] == gnn_graph_in_degree(&g, a.input_nodes[i]);
				CHECK(all, "fan-out -1 takes every in-neighbour");
			}
			{
				/*
				 * a sampler marking in s1's array (gnn_sampler_create_sharing),
				 * the two taking turns: each draws what a sampler of its own draws
				 */
				gnn_sampler *s3 = NULL;
				gnn_minibatch d;
				bool		ok;

				cfg.nthreads = 1;
				ok = gnn_sampler_create_sharing(&g, &cfg, s1, &s3, &err) == GNN_OK &&
					gnn_sampler_sample(s3, seeds, 300, 42, &d, &err) == GNN_OK && same_batch(&c, &d) &&
					gnn_sampler_sample(s1, seeds, 300, 43, &b, &err) == GNN_OK &&
					gnn_sampler_sample(s3, seeds, 300, 42, &d, &err) == GNN_OK && same_batch(&c, &d) &&
					gnn_sampler_sample(s3, seeds + 100, 200, 44, &d, &err) == GNN_OK &&
					gnn_sampler_sample(s1, seeds, 300, 42, &b, &err) == GNN_OK && same_batch(&c, &b);
				CHECK(ok, "%s%s: a sampler sharing another's marks, the two taking turns, draws as its own",
					  kind ? "ladies" : "neighbor", replace ? " with replacement" : "");
				gnn_sampler_free(s3);
			}
			for (int i = 0; i < nmem; i++)
				free(mem[i]);
			gnn_sampler_free(s1);
			gnn_sampler_free(s2);
		}
	{
		gnn_sampler_config cfg = {0};
		gnn_sampler *s;

		cfg.nhops = 1;
		cfg.fanouts[0] = -2;
		CHECK(gnn_sampler_create(&g, &cfg, &s, &err) == GNN_ERR_INVALID, "fan-out -2 rejected: %s", err.msg);
		cfg.fanouts[0] = GNN_SAMPLE_MAX_FANOUT + 1;
		CHECK(gnn_sampler_create(&g, &cfg, &s, &err) == GNN_ERR_INVALID, "huge fan-out rejected: %s", err.msg);
	}
	free(region);
}

/* LADIES: the corrected weights estimate each row of the row-normalised adjacency */
static void
test_ladies_unbiased(void)
{
	void	   *region;
	gnn_graph	g;
	gnn_error	err;
	gnn_sampler_config cfg = {0};
	gnn_sampler *s;
	int32_t		seeds[8] = {0, 1, 2, 3, 4, 5, 6, 7};
	enum
	{
		T = 4000
	};
	double		sum[8] = {0},
				sum2[8] = {0};
	bool		ok = true;

	random_graph(200, 1500, 11, &region, &g);
	cfg.kind = GNN_SAMPLER_LADIES;
	cfg.nhops = 1;
	cfg.fanouts[0] = 16;
	gnn_sampler_create(&g, &cfg, &s, &err);
	for (int t = 0; t < T; t++)
	{
		gnn_minibatch mb;
		const gnn_block *b;

		gnn_sampler_sample(s, seeds, 8, t, &mb, &err);
		b = &mb.blocks[0];
		for (int i = 0; i < 8; i++)
		{
			double		rs = 0;

			for (int64_t e = b->indptr[i]; e < b->indptr[i + 1]; e++)
				rs += b->weights[e];
			sum[i] += rs;
			sum2[i] += rs * rs;
		}
	}
	for (int i = 0; i < 8; i++)
	{
		double		m = sum[i] / T,
					se = sqrt((sum2[i] / T - m * m) / T);

		if (gnn_graph_in_degree(&g, i) > 0 && fabs(m - 1.0) > 5 * se + 1e-9)
		{
			NOTE("row %d: mean %.4f, se %.4f", i, m, se);
			ok = false;
		}
	}
	CHECK(ok, "ladies: E[sum of corrected weights] = 1 per row (unbiased estimator of the mean)");
	gnn_sampler_free(s);
	free(region);
}

static void
test_walks(void)
{
	enum
	{
		T = 30000
	};
	void	   *region;
	gnn_graph	g;
	gnn_error	err;

	/*
	 * undirected: 0-1, 1-2, 1-3, 1-4, 0-2: from 0 -> 1, node 1's neighbours
	 * are 0 (return: 1/p), 2 (neighbour of 0: 1), 3 and 4 (1/q)
	 */
	int64_t		src[] = {0, 1, 1, 1, 0};
	int64_t		dst[] = {1, 2, 3, 4, 2};

	build(5, src, dst, NULL, 5, true, &region, &g);
	{
		gnn_walk_config wc = {.length = 1, .p = 1, .q = 1};
		int32_t    *starts = malloc(sizeof(int32_t) * T),
				   *out = malloc(sizeof(int32_t) * T * 3);
		double		obs[5] = {0},
					ex[4];

		for (int i = 0; i < T; i++)
			starts[i] = 1;
		gnn_random_walk(&g, starts, T, &wc, 5, out, &err);
		for (int i = 0; i < T; i++)
			obs[out[i * 2 + 1]] += 1;
		obs[1] = obs[4];		/* neighbours of 1: 0, 2, 3, 4 */
		for (int i = 0; i < 4; i++)
			ex[i] = T / 4.0;
		CHECK(chi2(obs, ex, 4) < chi2_limit(3), "uniform walk: each out-neighbour with probability 1/d (chi2 %.2f)",
			  chi2(obs, ex, 4));

		/* node2vec from 0 -> 1 -> ? */
		double		ps[] = {0.5, 4, 1};
		double		qs[] = {2, 0.25, 1};

		for (int c = 0; c < 3; c++)
		{
			double		w[4],
						tot = 0;
			int			n01 = 0;

			wc.length = 2;
			wc.p = ps[c];
			wc.q = qs[c];
			for (int i = 0; i < T; i++)
				starts[i] = 0;
			gnn_random_walk(&g, starts, T, &wc, 9 + c, out, &err);
			memset(obs, 0, sizeof(obs));
			for (int i = 0; i < T; i++)
				if (out[i * 3 + 1] == 1)
				{
					obs[out[i * 3 + 2]] += 1;
					n01++;
				}
			w[0] = 1 / ps[c];
			w[1] = 0;
			w[2] = 1;
			w[3] = 1 / qs[c];
			/* node 3 and 4 both at distance 2: fold 4 into 3 */
			{
				double		o[3] = {obs[0], obs[2], obs[3]};
				double		e[3];
				int			cnt4 = 0;

				for (int i = 0; i < T; i++)
					cnt4 += out[i * 3 + 1] == 1 && out[i * 3 + 2] == 4;
				o[2] += cnt4;
				tot = w[0] + w[2] + 2 * w[3];
				e[0] = n01 * w[0] / tot;
				e[1] = n01 * w[2] / tot;
				e[2] = n01 * 2 * w[3] / tot;
				CHECK(chi2(o, e, 3) < chi2_limit(2), "node2vec p=%g q=%g: return / neighbour / outward in ratio 1/p : 1 : 1/q (chi2 %.2f)",
					  ps[c], qs[c], chi2(o, e, 3));
			}
		}
		{
			int32_t    *out2 = malloc(sizeof(int32_t) * T * 3);

			wc.nthreads = 1;
			gnn_random_walk(&g, starts, T, &wc, 77, out, &err);
			wc.nthreads = 2;
			gnn_random_walk(&g, starts, T, &wc, 77, out2, &err);
			CHECK(memcmp(out, out2, sizeof(int32_t) * T * 3) == 0, "walks: same seed, 1 vs 2 threads => identical");
			wc.p = 0;
			CHECK(gnn_random_walk(&g, starts, 1, &wc, 1, out2, &err) == GNN_ERR_INVALID, "p = 0 rejected: %s", err.msg);
			wc.p = 1;
			wc.length = 0;
			CHECK(gnn_random_walk(&g, starts, 1, &wc, 1, out2, &err) == GNN_ERR_INVALID, "length 0 rejected");
			free(out2);
		}
		free(starts);
		free(out);
	}
	free(region);

	/* a dead end pads with -1 */
	{
		int64_t		s2[] = {0},
					d2[] = {1};
		int32_t		st = 0,
					out[4];
		gnn_walk_config wc = {.length = 3, .p = 1, .q = 1};

		build(1, s2, d2, NULL, 2, false, &region, &g);
		gnn_random_walk(&g, &st, 1, &wc, 1, out, &err);
		CHECK(out[0] == 0 && out[1] == 1 && out[2] == -1 && out[3] == -1, "a walk ends at a node without out-edges");
		free(region);
	}
}

static void
test_gather(void)
{
	int64_t		src[] = {0, 1, 2},
				dst[] = {1, 2, 3};
	float		feat[4 * 3] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
	gnn_graph_input in = {0};
	int64_t		ids[] = {0, 1, 2, 3};
	void	   *region;
	uint64_t	size;
	gnn_graph	g;
	gnn_error	err;
	int32_t		nodes[] = {3, 0, 2};
	float		out[9];

	in.num_edges = 3;
	in.src = src;
	in.dst = dst;
	in.num_nodes = 4;
	in.node_ids = ids;
	in.feat_dim = 3;
	in.feat = feat;
	gnn_graph_build_region(&in, &region, &size, &g, &err);
	gnn_gather_dense(&g, nodes, 3, false, 2, out, &err);
	CHECK(out[0] == 10 && out[2] == 12 && out[3] == 1 && out[8] == 9, "dense gather copies the rows in order");
	gnn_gather_dense(&g, nodes, 3, true, 2, out, &err);
	CHECK(fabsf(out[0] + out[1] + out[2] - 1) < 1e-6, "dense gather row-normalises on request");
	free(region);

	/*
	 * Row normalisation against each row divided by its sum in order, in
	 * double: widths that fill no vector exactly, rows that sum to zero
	 * (kept as they are), negative entries, repeated and out-of-order
	 * nodes, one thread and two.  The gather sums in lanes and multiplies
	 * by the reciprocal, so a float may differ in its last bit, rarely.
	 */
	{
		const int	widths[] = {1, 3, 7, 64, 130};

		for (int wi = 0; wi < 5; wi++)
			for (int nt = 1; nt <= 2; nt++)
			{
				int			d = widths[wi];
				int64_t		n = 300,
							m = 1000;
				float	   *f = malloc(sizeof(float) * n * d),
						   *got = malloc(sizeof(float) * m * d);
				int64_t    *vid = malloc(sizeof(int64_t) * n);
				int32_t    *rows = malloc(sizeof(int32_t) * m);
				int64_t		e_s[] = {0},
							e_d[] = {1};
				gnn_graph	g2;
				void	   *reg;
				uint64_t	sz;
				int64_t		far = 0,
							diff = 0;
				bool		zero_kept = true;

				for (int64_t v = 0; v < n; v++)
				{
					vid[v] = v;
					for (int k = 0; k < d; k++)
						f[v * d + k] = v % 17 == 0 ? (k % 2 ? 1.0f : -1.0f) * (d % 2 == 0) :
							(float) ((v * 31 + k * 7) % 97) / 13.0f - (k % 5 == 0 ? 2.0f : 0.0f);
				}
				for (int64_t i = 0; i < m; i++)
					rows[i] = (int32_t) ((i * 7919) % n);
				memset(&in, 0, sizeof(in));
				in.num_edges = 1;
				in.src = e_s;
				in.dst = e_d;
				in.num_nodes = n;
				in.node_ids = vid;
				in.feat_dim = d;
				in.feat = f;
				gnn_graph_build_region(&in, &reg, &sz, &g2, &err);
				gnn_gather_dense(&g2, rows, m, true, nt, got, &err);
				for (int64_t i = 0; i < m; i++)
				{
					const float *x = f + (int64_t) rows[i] * d;
					double		sum = 0;

					for (int k = 0; k < d; k++)
						sum += x[k];
					for (int k = 0; k < d; k++)
					{
						float		want = sum != 0 ? (float) (x[k] / sum) : x[k],
									g1 = got[i * d + k];

						if (g1 != want)
						{
							diff++;
							if (fabsf(g1 - want) > 2e-7f * fabsf(want))
								far++;
						}
						if (sum == 0 && g1 != x[k])
							zero_kept = false;
					}
				}
				CHECK(far == 0 && diff * 1000 <= m * d && zero_kept,
					  "row normalisation, %d wide, %d thread(s): every row its sum's share (%lld of %lld floats "
					  "a last bit off, %lld further; rows summing to 0 kept: %s)", d, nt, (long long) diff,
					  (long long) (m * d), (long long) far, zero_kept ? "yes" : "no");
				free(reg);
				free(f);
				free(got);
				free(vid);
				free(rows);
			}
	}
	{
		int64_t		spn[] = {0, 0, 2, 3};
		int32_t		spi[] = {1, 4, 2, 0};
		float		spv[] = {2, 2, 5, 1};
		int64_t    *p;
		int32_t    *ix;
		float	   *v;

		memset(&in, 0, sizeof(in));
		in.num_edges = 3;
		in.src = src;
		in.dst = dst;
		in.num_nodes = 4;
		in.node_ids = ids;
		in.sparse_nnz = 4;
		in.sp_node = spn;
		in.sp_index = spi;
		in.sp_value = spv;
		gnn_graph_build_region(&in, &region, &size, &g, &err);
		gnn_gather_sparse(&g, nodes, 3, true, 2, &p, &ix, &v, &err);
		CHECK(p[0] == 0 && p[1] == 1 && p[2] == 3 && p[3] == 4 && ix[0] == 0 && fabsf(v[1] - 0.5f) < 1e-6,
			  "sparse gather: CSR of the rows, normalised");
		free(p);
		free(ix);
		free(v);
		free(region);
	}
}

/*
 * Big hops (400-470k draws) on 1, 2 and 4 threads: the same batch, node
 * order included (guards any parallel relabel; two were measured slower
 * than the serial one on 2 cores, see BENCHMARKS.md).
 */
static void
test_parallel_relabel(void)
{
	int64_t		n = 40000,
				m = 600000;
	int64_t    *src = malloc(sizeof(int64_t) * m),
			   *dst = malloc(sizeof(int64_t) * m);
	int32_t    *seeds = malloc(sizeof(int32_t) * 3000);
	void	   *region = NULL;
	gnn_graph	g;
	gnn_error	err;
	gnn_rng		r;

	gnn_rng_seed(&r, 99);
	for (int64_t e = 0; e < m; e++)
	{
		/* skewed: a quarter of the edges point at 1% of the nodes */
		src[e] = (int64_t) (gnn_rng_next(&r) % (uint64_t) n);
		dst[e] = (int64_t) (gnn_rng_next(&r) % (uint64_t) (e % 4 == 0 ? n / 100 : n));
	}
	for (int i = 0; i < 3000; i++)
		seeds[i] = (int32_t) (gnn_rng_next(&r) % (uint64_t) n);
	if (build(m, src, dst, NULL, n, true, &region, &g) == GNN_OK)
	{
		for (int replace = 0; replace < 2; replace++)
		{
			gnn_sampler_config cfg = {0};
			gnn_sampler *s[3];
			gnn_minibatch a0,
						a,
						b;
			void	   *mem[32];
			int			nmem = 0;
			const char *why = "";
			bool		same = true;

			cfg.kind = GNN_SAMPLER_NEIGHBOR;
			cfg.nhops = 2;
			cfg.fanouts[0] = 25;
			cfg.fanouts[1] = 15;
			cfg.replace = replace;
			for (int k = 0; k < 3; k++)
			{
				cfg.nthreads = 1 << k;
				gnn_sampler_create(&g, &cfg, &s[k], &err);
			}
			gnn_sampler_sample(s[0], seeds, 3000, 5, &a0, &err);
			copy_batch(&a0, &a, mem, &nmem);
			for (int k = 1; k < 3; k++)
				for (int rep = 0; rep < 2; rep++)
				{
					gnn_sampler_sample(s[k], seeds, 3000, 5, &b, &err);
					same &= same_batch(&a, &b);
				}
			CHECK(a.blocks[0].nnz >= 65536 && well_formed(&g, &a, &why) && same,
				  "big hop (%lld draws%s): 2 and 4 threads give the 1-thread batch %s",
				  (long long) a.blocks[0].nnz, replace ? ", with replacement" : "", why);
			/*
			 * a sampler's state between batches (the marker slots and the
			 * bits of the batch's nodes) leaves nothing behind: a reused
			 * sampler on other seeds gives what a fresh one gives
			 */
			{
				bool		fresh_same = true;

				for (int k = 0; k < 3; k++)
					for (int part = 1; part < 3; part++)
					{
						gnn_sampler *f;
						gnn_minibatch x,
									y,
									xc;
						void	   *xmem[32];
						int			nx = 0;

						cfg.nthreads = 1 << k;
						gnn_sampler_sample(s[k], seeds + part * 1000, 1000 - part * 100, 7 + part, &x, &err);
						copy_batch(&x, &xc, xmem, &nx);
						gnn_sampler_create(&g, &cfg, &f, &err);
						gnn_sampler_sample(f, seeds + part * 1000, 1000 - part * 100, 7 + part, &y, &err);
						fresh_same &= same_batch(&xc, &y);
						gnn_sampler_free(f);
						for (int i = 0; i < nx; i++)
							free(xmem[i]);
					}
				CHECK(fresh_same, "a reused sampler gives a fresh sampler's batch (1, 2 and 4 threads%s)",
					  replace ? ", with replacement" : "");
			}
			for (int i = 0; i < nmem; i++)
				free(mem[i]);
			for (int k = 0; k < 3; k++)
				gnn_sampler_free(s[k]);
		}
		free(region);
	}
	free(src);
	free(dst);
	free(seeds);
}

int
main(void)
{
	/* thread-count tests must get the threads they ask for, however busy the machine */
	setenv("GNN_ADAPTIVE_THREADS", "0", 1);
	test_parallel_relabel();
	test_star();
	test_zero_weights();
	test_large_fanout();
	test_blocks();
	test_ladies_unbiased();
	test_walks();
	test_gather();
	return check_done();
}
