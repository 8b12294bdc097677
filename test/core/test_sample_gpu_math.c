/*
 * test_sample_gpu_math.c: the GPU samplers' per-element bodies
 * (kernels/sample_math.h) run on the CPU: RNG, draw statistics (uniform,
 * without replacement, weighted, node2vec bias), determinism, and the CPU
 * emulation of the kernels' launch layout against plain references
 * (test/core/sample_gpu_emu.h).  No GPU needed.
 */
#include "check.h"
#include "graph/graph.h"
#include "sample/sample.h"
#include "sample_gpu_emu.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static gnn_status
build(int64_t m, const int64_t *src, const int64_t *dst, const float *w, int64_t nnodes,
	  int32_t fdim, const float *feat, void **region, gnn_graph *g)
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
	in.num_nodes = nnodes;
	in.node_ids = ids;
	in.feat_dim = fdim;
	in.feat = feat;
	st = gnn_graph_build_region(&in, region, &size, g, &err);
	if (st != GNN_OK)
		NOTE("build failed: %s", err.msg);
	free(ids);
	return st;
}

/* chi-square statistic; crit values below are ~ the 0.9999 quantile */
static double
chi2(const double *obs, const double *ex, int n)
{
	double		s = 0;

	for (int i = 0; i < n; i++)
		s += (obs[i] - ex[i]) * (obs[i] - ex[i]) / ex[i];
	return s;
}

static void
test_rng(void)
{
	bool		ok = true;
	double		obs[7] = {0},
				ex[7];
	uint64_t	x = 12345;

	for (int i = 0; i < 100000 && ok; i++)
	{
		uint64_t	a = gnn_s_mix(x++),
					b = gnn_s_mix(x++);

		ok = gnn_s_mulhi(a, b) == (uint64_t) (((unsigned __int128) a * b) >> 64);
	}
	CHECK(ok, "portable 64x64 high product matches __int128");
	CHECK(gnn_s_rand(1, 2, 3, 4, 5) == gnn_s_rand(1, 2, 3, 4, 5) &&
		  gnn_s_rand(1, 2, 3, 4, 5) != gnn_s_rand(2, 2, 3, 4, 5) &&
		  gnn_s_rand(1, 2, 3, 4, 5) != gnn_s_rand(1, 2, 3, 5, 4) &&
		  gnn_s_rand(1, 2, 3, 4, 5) != gnn_s_rand(1, 2, 4, 3, 5), "counter hash: deterministic, key-sensitive");
	for (int j = 0; j < 70000; j++)
		obs[gnn_s_below(gnn_s_rand(9, 0, 0, j, 0), 7)]++;
	for (int k = 0; k < 7; k++)
		ex[k] = 10000;
	CHECK(chi2(obs, ex, 7) < 27.9, "below(7) uniform (chi2 %.2f, 6 dof)", chi2(obs, ex, 7));
	{
		double		s = 0;

		for (int j = 0; j < 100000; j++)
		{
			double		u = gnn_s_unit(gnn_s_rand(3, 1, 0, j, 0));

			if (u < 0 || u >= 1)
				s = 1e9;
			s += u;
		}
		CHECK(fabs(s / 100000 - 0.5) < 0.005, "unit() in [0,1) with mean %.4f", s / 100000);
	}
}

/* star: nodes 1..D point at node 0, edge weight i */
enum
{
	D = 20, T = 20000
};

static void
test_neighbor_stats(void)
{
	int64_t		src[D],
				dst[D];
	float		w[D];
	void	   *region = NULL;
	gnn_graph	g;
	float		cum[D];
	int32_t		dsts[T];
	int64_t    *ptr = malloc(sizeof(int64_t) * (T + 1));
	int32_t    *out = malloc(sizeof(int32_t) * T * D),
			   *didx = malloc(sizeof(int32_t) * T * D);
	double		obs[D],
				ex[D];
	int64_t		nnz;
	bool		ok;

	for (int i = 0; i < D; i++)
	{
		src[i] = i + 1;
		dst[i] = 0;
		w[i] = (float) (i + 1);
	}
	if (build(D, src, dst, w, D + 1, 0, NULL, &region, &g) != GNN_OK)
	{
		CHECK(0, "build the star");
		return;
	}
	gnn_s_row_prefix(g.rweights, D, cum);
	CHECK(cum[D - 1] == (float) (D * (D + 1) / 2), "row prefix total %g", cum[D - 1]);
	for (int i = 0; i < T; i++)
		dsts[i] = 0;

	/* uniform with replacement, k = 5 */
	nnz = emu_hop_ptr(g.rindptr, NULL, dsts, T, 5, true, ptr);
	CHECK(nnz == 5LL * T, "count with replacement = fanout");
	emu_sample_hop(g.rindptr, g.rindices, NULL, dsts, T, 0, 5, true, 42, ptr, out, didx);
	memset(obs, 0, sizeof(obs));
	for (int64_t e = 0; e < nnz; e++)
		obs[out[e] - 1]++;
	for (int k = 0; k < D; k++)
		ex[k] = (double) nnz / D;
	CHECK(chi2(obs, ex, D) < 50, "uniform with replacement: each neighbour ~ k/d (chi2 %.1f, 19 dof)",
		  chi2(obs, ex, D));
	ok = true;
	for (int64_t e = 0; e < nnz; e++)
		ok &= didx[e] == (int32_t) (e / 5);
	CHECK(ok, "COO destination index of every draw");

	/* without replacement, k = 5: no repeats, inclusion probability k/d */
	nnz = emu_hop_ptr(g.rindptr, NULL, dsts, T, 5, false, ptr);
	emu_sample_hop(g.rindptr, g.rindices, NULL, dsts, T, 1, 5, false, 42, ptr, out, NULL);
	memset(obs, 0, sizeof(obs));
	ok = true;
	for (int i = 0; i < T; i++)
		for (int a = 0; a < 5; a++)
		{
			obs[out[i * 5 + a] - 1]++;
			for (int b = 0; b < a; b++)
				ok &= out[i * 5 + a] != out[i * 5 + b];
		}
	CHECK(ok, "without replacement never repeats a neighbour");
	for (int k = 0; k < D; k++)
		ex[k] = (double) T * 5 / D;
	CHECK(chi2(obs, ex, D) < 50, "without replacement: inclusion ~ k/d (chi2 %.1f)", chi2(obs, ex, D));

	/* k = d - 1 and k = d without replacement */
	nnz = emu_hop_ptr(g.rindptr, NULL, dsts, 100, D - 1, false, ptr);
	emu_sample_hop(g.rindptr, g.rindices, NULL, dsts, 100, 0, D - 1, false, 7, ptr, out, NULL);
	ok = nnz == 100 * (D - 1);
	for (int i = 0; i < 100 && ok; i++)
	{
		int			seen[D + 1] = {0};

		for (int a = 0; a < D - 1; a++)
			ok &= out[i * (D - 1) + a] >= 1 && out[i * (D - 1) + a] <= D && !seen[out[i * (D - 1) + a]]++;
	}
	CHECK(ok, "k = d-1 without replacement: d-1 distinct neighbours");
	for (int k = -1; k <= D + 3; k += D + 1)
	{
		nnz = emu_hop_ptr(g.rindptr, NULL, dsts, 3, k, false, ptr);
		emu_sample_hop(g.rindptr, g.rindices, NULL, dsts, 3, 0, k, false, 7, ptr, out, NULL);
		ok = nnz == 3 * D;
		for (int64_t e = 0; e < nnz && ok; e++)
			ok = out[e] == (int32_t) (e % D) + 1;
		CHECK(ok, "fanout %d without replacement takes the row in order", k);
	}

	/* weighted with replacement: p(i) = w_i / sum w */
	nnz = emu_hop_ptr(g.rindptr, cum, dsts, T, 5, true, ptr);
	emu_sample_hop(g.rindptr, g.rindices, cum, dsts, T, 0, 5, true, 99, ptr, out, NULL);
	memset(obs, 0, sizeof(obs));
	for (int64_t e = 0; e < nnz; e++)
		obs[out[e] - 1]++;
	for (int k = 0; k < D; k++)
		ex[k] = (double) nnz * (k + 1) / (D * (D + 1) / 2);
	CHECK(chi2(obs, ex, D) < 50, "weighted with replacement ~ w/sum w (chi2 %.1f)", chi2(obs, ex, D));

	/* determinism: the same seed gives the same draws, another seed others */
	{
		int32_t    *o2 = malloc(sizeof(int32_t) * T * D);

		emu_sample_hop(g.rindptr, g.rindices, NULL, dsts, T, 0, 5, false, 42, ptr, out, NULL);
		emu_sample_hop(g.rindptr, g.rindices, NULL, dsts, T, 0, 5, false, 42, ptr, o2, NULL);
		CHECK(memcmp(out, o2, sizeof(int32_t) * nnz) == 0, "same seed, same sample");
		emu_sample_hop(g.rindptr, g.rindices, NULL, dsts, T, 0, 5, false, 43, ptr, o2, NULL);
		CHECK(memcmp(out, o2, sizeof(int32_t) * nnz) != 0, "another seed, another sample");
		emu_sample_hop(g.rindptr, g.rindices, NULL, dsts, T, 1, 5, false, 42, ptr, o2, NULL);
		CHECK(memcmp(out, o2, sizeof(int32_t) * nnz) != 0, "another hop, another sample");
		free(o2);
	}
	free(ptr);
	free(out);
	free(didx);
	free(region);
}

/*
 * Weighted draws never take an edge of weight 0 (or negative), wherever it
 * sits in the row: node 0's in-edges from 1..4 weigh {0, 1, 0, 3}, node 5's
 * from 1..4 weigh {-2, 1, 0, 3} (negative counts as 0), node 6's all weigh 0.
 */
static void
test_zero_weights(void)
{
	enum
	{
		T = 40000, K = 3
	};
	int64_t		src[] = {1, 2, 3, 4, 1, 2, 3, 4, 1, 2, 3};
	int64_t		dst[] = {0, 0, 0, 0, 5, 5, 5, 5, 6, 6, 6};
	float		w[] = {0, 1, 0, 3, -2, 1, 0, 3, 0, 0, 0};
	void	   *region = NULL;
	gnn_graph	g;
	float		cum[11];
	int32_t    *dsts = malloc(sizeof(int32_t) * T);
	int64_t    *ptr = malloc(sizeof(int64_t) * (T + 1));
	int32_t    *out = malloc(sizeof(int32_t) * T * K);
	int64_t		nnz;

	if (build(11, src, dst, w, 7, 0, NULL, &region, &g) != GNN_OK)
	{
		CHECK(0, "build the zero-weight graph");
		return;
	}
	for (int64_t v = 0; v < g.num_nodes; v++)
		gnn_s_row_prefix(g.rweights + g.rindptr[v], g.rindptr[v + 1] - g.rindptr[v], cum + g.rindptr[v]);
	for (int r = 0; r < 2; r++)
	{
		int32_t		node = r == 0 ? 0 : 5;
		double		obs[5] = {0};
		bool		never = true;

		for (int i = 0; i < T; i++)
			dsts[i] = node;
		nnz = emu_hop_ptr(g.rindptr, cum, dsts, T, K, true, ptr);
		emu_sample_hop(g.rindptr, g.rindices, cum, dsts, T, 0, K, true, 11, ptr, out, NULL);
		for (int64_t e = 0; e < nnz; e++)
		{
			obs[out[e]]++;
			never &= out[e] == 2 || out[e] == 4;
		}
		CHECK(nnz == (int64_t) T * K && never, "node %d, weights {%g, 1, 0, 3}: %lld draws, none of a zero-weight edge",
			  node, r == 0 ? 0.0 : -2.0, (long long) nnz);
		CHECK(fabs(obs[4] / nnz - 0.75) < 0.01, "node %d: the weight-3 edge drawn %.4f of the time (want 0.75)",
			  node, obs[4] / nnz);
	}
	/* fanout -1: the edges that carry weight, in order */
	dsts[0] = 0;
	dsts[1] = 5;
	dsts[2] = 6;
	nnz = emu_hop_ptr(g.rindptr, cum, dsts, 3, -1, true, ptr);
	emu_sample_hop(g.rindptr, g.rindices, cum, dsts, 3, 0, -1, true, 11, ptr, out, NULL);
	CHECK(nnz == 4 && ptr[1] == 2 && ptr[2] == 4 && out[0] == 2 && out[1] == 4 && out[2] == 2 && out[3] == 4,
		  "weighted fanout -1 takes only the edges with weight (%lld taken)", (long long) nnz);
	/* all weights 0: no neighbours */
	dsts[0] = 6;
	CHECK(gnn_s_weighted_count(cum + g.rindptr[6], 3, 5) == 0 && gnn_s_weighted_count(cum + g.rindptr[6], 3, -1) == 0 &&
		  emu_hop_ptr(g.rindptr, cum, dsts, 1, 5, true, ptr) == 0,
		  "a node whose in-edges all weigh 0 gets no weighted draws");
	free(dsts);
	free(ptr);
	free(out);
	free(region);
}

/* a random graph: emulation (warp layout) against the plain reference, every mode */
static void
test_emulation_vs_reference(void)
{
	enum
	{
		N = 3000, M = 60000, ND = 2000
	};
	int64_t    *src = malloc(sizeof(int64_t) * M),
			   *dst = malloc(sizeof(int64_t) * M);
	float	   *w = malloc(sizeof(float) * M);
	void	   *region = NULL;
	gnn_graph	g;
	float	   *cum;
	int32_t		dsts[ND];
	int64_t    *ptr = malloc(sizeof(int64_t) * (ND + 1));

	for (int64_t e = 0; e < M; e++)
	{
		/* skewed: low ids get many in-edges, so some rows exceed a warp */
		uint64_t	r = gnn_s_mix((uint64_t) e * 3 + 1);

		dst[e] = (int64_t) (gnn_s_unit(r) * gnn_s_unit(r) * gnn_s_unit(r) * N);
		src[e] = (int64_t) gnn_s_below(gnn_s_mix(r), N);
		w[e] = (float) (gnn_s_below(gnn_s_mix(r + 7), 5));	/* some zero weights */
	}
	if (build(M, src, dst, w, N, 0, NULL, &region, &g) != GNN_OK)
	{
		CHECK(0, "build the random graph");
		return;
	}
	cum = malloc(sizeof(float) * (g.num_edges + 1));
	for (int64_t v = 0; v < N; v++)
		gnn_s_row_prefix(g.rweights + g.rindptr[v], g.rindptr[v + 1] - g.rindptr[v], cum + g.rindptr[v]);
	for (int i = 0; i < ND; i++)
		dsts[i] = (int32_t) gnn_s_below(gnn_s_mix(i + 100), N);
	dsts[0] = 0;				/* the hub */
	NOTE("max in-degree %lld", (long long) (g.rindptr[1] - g.rindptr[0]));
	{
		struct
		{
			int64_t		k;
			bool		rep;
			bool		wt;
		}			modes[] = {{10, true, false}, {10, false, false}, {40, false, false},
		{500, false, false}, {-1, false, false}, {7, true, true}, {33, true, true}, {-1, true, true}};

		for (size_t m = 0; m < sizeof(modes) / sizeof(modes[0]); m++)
		{
			int64_t		nnz = emu_hop_ptr(g.rindptr, modes[m].wt ? cum : NULL, dsts, ND, modes[m].k, modes[m].rep, ptr);
			int32_t    *out = malloc(sizeof(int32_t) * (nnz + 1));
			int64_t    *off = malloc(sizeof(int64_t) * (g.num_edges + 1));
			bool		ok = true;

			emu_sample_hop(g.rindptr, g.rindices, modes[m].wt ? cum : NULL, dsts, ND, 2, modes[m].k,
						   modes[m].rep, 5, ptr, out, NULL);
			for (int i = 0; i < ND && ok; i++)
			{
				int64_t		b = g.rindptr[dsts[i]];
				int64_t		deg = g.rindptr[dsts[i] + 1] - b;

				ok = ref_draw_row(deg, modes[m].k, modes[m].rep, modes[m].wt ? cum + b : NULL, 5, 2, i, off) ==
					ptr[i + 1] - ptr[i];
				/* weighted: never an edge of weight 0, even in a row of total 0 */
				for (int64_t j = 0; j < ptr[i + 1] - ptr[i] && ok; j++)
					ok = out[ptr[i] + j] == g.rindices[b + off[j]] &&
						(!modes[m].wt || g.rweights[b + off[j]] > 0);
			}
			CHECK(ok, "warp-layout emulation = reference: fanout %lld, %s, %s (%lld draws)",
				  (long long) modes[m].k, modes[m].rep ? "with replacement" : "without",
				  modes[m].wt ? "weighted" : "uniform", (long long) nnz);
			free(out);
			free(off);
		}
	}
	free(cum);
	free(ptr);
	free(src);
	free(dst);
	free(w);
	free(region);
}

/* node2vec: 0->1, 0->2, 1->0, 1->2, 1->3; walks 0,1,x: x=0 bias 1/p, 2 bias 1, 3 bias 1/q */
static void
test_walk(void)
{
	int64_t		src[] = {0, 0, 1, 1, 1},
				dst[] = {1, 2, 0, 2, 3};
	void	   *region = NULL;
	gnn_graph	g;
	enum
	{
		W = 60000
	};
	int32_t    *starts = malloc(sizeof(int32_t) * W),
			   *out = malloc(sizeof(int32_t) * W * 4);

	if (build(5, src, dst, NULL, 4, 0, NULL, &region, &g) != GNN_OK)
	{
		CHECK(0, "build the walk graph");
		return;
	}
	for (int i = 0; i < W; i++)
		starts[i] = 0;
	{
		double		pq[][2] = {{0.5, 2.0}, {4.0, 0.25}, {1e-4, 1.0}};

		for (int c = 0; c < 3; c++)
		{
			double		wp = 1 / pq[c][0],
						wq = 1 / pq[c][1],
						tot = wp + 1 + wq;
			double		obs[3] = {0},
						ex[3];
			double		n1 = 0;
			bool		valid = true;

			emu_random_walk(g.indptr, g.indices, starts, W, 3, pq[c][0], pq[c][1], 11, out);
			for (int i = 0; i < W; i++)
			{
				int32_t    *r = out + i * 4;

				for (int t = 1; t < 4; t++)
					valid &= r[t] == -1 ? (r[t - 1] == -1 || g.indptr[r[t - 1] + 1] == g.indptr[r[t - 1]])
						: r[t - 1] >= 0 && gnn_s_has_edge(g.indptr, g.indices, r[t - 1], r[t]);
				if (r[1] == 1)
				{
					n1++;
					obs[r[2] == 0 ? 0 : r[2] == 2 ? 1 : 2]++;
				}
			}
			ex[0] = n1 * wp / tot;
			ex[1] = n1 * 1 / tot;
			ex[2] = n1 * wq / tot;
			CHECK(valid, "node2vec p=%g q=%g: every step follows an out-edge, -1 only after a dead end",
				  pq[c][0], pq[c][1]);
			if (c < 2)
				CHECK(chi2(obs, ex, 3) < 19, "node2vec p=%g q=%g: step bias ratios (chi2 %.2f; %.0f/%.0f/%.0f)",
					  pq[c][0], pq[c][1], chi2(obs, ex, 3), obs[0], obs[1], obs[2]);
			else
				CHECK(obs[1] + obs[2] < 10, "node2vec p=1e-4 (the step back an outlier): returns almost always (%.0f of %.0f left)",
					  obs[1] + obs[2], n1);
			CHECK(fabs(n1 / W - 0.5) < 0.01, "node2vec p=%g q=%g: first step uniform (%.3f)", pq[c][0],
				  pq[c][1], n1 / W);
		}
	}
	{
		int32_t    *o2 = malloc(sizeof(int32_t) * W * 4);

		emu_random_walk(g.indptr, g.indices, starts, W, 3, 1, 1, 11, out);
		emu_random_walk(g.indptr, g.indices, starts, W, 3, 1, 1, 11, o2);
		CHECK(memcmp(out, o2, sizeof(int32_t) * W * 4) == 0, "walks: same seed, same walks");
		free(o2);
	}
	free(starts);
	free(out);
	free(region);
}

static void
test_gather(void)
{
	enum
	{
		N = 50, M = 10
	};
	int64_t		src[M],
				dst[M];
	int32_t		nodes[77];
	int			dims[] = {1, 3, 4, 36, 130};

	for (int e = 0; e < M; e++)
	{
		src[e] = e;
		dst[e] = e + 1;
	}
	for (int i = 0; i < 77; i++)
		nodes[i] = (int32_t) gnn_s_below(gnn_s_mix(i), N);
	for (size_t di = 0; di < sizeof(dims) / sizeof(dims[0]); di++)
	{
		int			d = dims[di];
		float	   *feat = malloc(sizeof(float) * N * d);
		float	   *a = malloc(sizeof(float) * 77 * d),
				   *b = malloc(sizeof(float) * 77 * d);
		void	   *region = NULL;
		gnn_graph	g;
		gnn_error	err;

		for (int64_t k = 0; k < (int64_t) N * d; k++)
			feat[k] = (float) gnn_s_below(gnn_s_mix(k), 1000) / 100.0f;
		if (build(M, src, dst, NULL, N, d, feat, &region, &g) != GNN_OK)
		{
			CHECK(0, "build gather graph");
			continue;
		}
		for (int norm = 0; norm < 2; norm++)
			for (int v = 1; v <= 4; v += 3)
			{
				double		maxrel = 0;

				if (v == 4 && d % 4)
					continue;
				gnn_gather_dense(&g, nodes, 77, norm, 1, a, &err);
				emu_gather(g.feat, d, nodes, 77, norm, v, b);
				for (int64_t k = 0; k < 77LL * d; k++)
				{
					double		r = fabs((double) a[k] - b[k]) / fmax(1e-30, fabs(a[k]));

					if (r > maxrel)
						maxrel = r;
				}
				CHECK(norm ? maxrel < 1e-6 : maxrel == 0,
					  "gather warp-per-row emulation = gnn_gather_dense: d %d, v %d, %s (max rel %.1e)",
					  d, v, norm ? "row-normalised" : "copy", maxrel);
			}
		free(feat);
		free(a);
		free(b);
		free(region);
	}
}

int
main(void)
{
	test_rng();
	test_neighbor_stats();
	test_zero_weights();
	test_emulation_vs_reference();
	test_walk();
	test_gather();
	return check_done();
}
