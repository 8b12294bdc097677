/*
 * sample_gpu_bench.c: speed of the GPU samplers (sample_gpu.h) on an
 * in-memory R-MAT graph, against the CPU sampler of sample.c:
 *   - neighbour sampling, batches of 1024 seeds, fan-outs 15,10,5 without
 *     replacement: sampled edges/s.  The GPU hops are chained without
 *     relabelling (hop h+1's destinations are hop h's draws, duplicates
 *     kept), so GPU figures count draws only; the CPU sampler also dedups
 *     and relabels into blocks.  Reported as such.
 *   - graph in device memory and in pinned host memory
 *   - random walks (uniform, node2vec p=0.5 q=2 and p=0.25 q=4): steps/s
 *   - feature gather, 128 floats a row: GB/s written
 * Without a GPU it prints "# SKIP <reason>" and exits 0.
 *
 *   cc -std=gnu11 -O2 -fopenmp -Isrc/core -Itest/core -o bench/bin/sample_gpu_bench \
 *      bench/sample_gpu_bench.c src/core/ *.c -lopenblas -lmetis -lgomp -lpthread -lm -ldl
 *   bench/bin/sample_gpu_bench [SCALE=20] [EDGE_FACTOR=16] [BATCHES=50]
 */
#include "nn/backend.h"
#include "sample/sample.h"
#include "sample/sample_gpu.h"
#include "sample_gpu_emu.h"
#include "bench_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define DIE(...) do { fprintf(stderr, __VA_ARGS__); fprintf(stderr, "\n"); exit(1); } while (0)

static gnn_backend *be;
static gnn_gpu_sample_api api;

static void *
dalloc(size_t bytes)
{
	void	   *p = NULL;

	if (gnn_backend_alloc(be, bytes ? bytes : 4, &p) != GNN_OK)
		DIE("device alloc of %zu bytes: %s", bytes, be->err.msg);
	return p;
}

static void *
dcopy(const void *h, size_t bytes)
{
	void	   *p = dalloc(bytes);

	if (gnn_backend_copy_h2d(be, p, h, bytes) != GNN_OK)
		DIE("copy: %s", be->err.msg);
	return p;
}

/* GPU: nb batches of 1024 seeds through 3 hops; returns draws/s */
static double
gpu_sampling(const int64_t *rindptr, const int32_t *rindices, const int32_t *seeds, int nb,
			 const int *fan, int64_t *draws_out)
{
	int64_t		cap = 1024LL * 15 * 10 * 5 + 1024 * 15 * 10 + 1024 * 15 + 16;
	int32_t    *d_seeds = dcopy(seeds, sizeof(int32_t) * 1024 * nb);
	int32_t    *buf[3];
	int64_t    *d_ptr = dalloc(sizeof(int64_t) * (cap + 1));
	int64_t		draws = 0;
	double		t0;

	for (int h = 0; h < 3; h++)
		buf[h] = dalloc(sizeof(int32_t) * cap);
	gnn_backend_sync(be);
	t0 = now_s();
	for (int b = 0; b < nb; b++)
	{
		const int32_t *dst = d_seeds + 1024 * b;
		int64_t		nd = 1024;

		for (int h = 0; h < 3; h++)
		{
			int64_t		nnz;

			if (api.sample_hop(be, rindptr, rindices, NULL, dst, nd, h, fan[h], false, b, d_ptr, buf[h],
							   NULL, cap, &nnz) != GNN_OK)
				DIE("sample_hop: %s", be->err.msg);
			draws += nnz;
			dst = buf[h];
			nd = nnz;
		}
	}
	gnn_backend_sync(be);
	t0 = now_s() - t0;
	*draws_out = draws;
	gnn_backend_free(be, d_seeds);
	gnn_backend_free(be, d_ptr);
	for (int h = 0; h < 3; h++)
		gnn_backend_free(be, buf[h]);
	return draws / t0;
}

int
main(int argc, char **argv)
{
	int			scale = argc > 1 ? atoi(argv[1]) : 20;
	int			ef = argc > 2 ? atoi(argv[2]) : 16;
	int			nb = argc > 3 ? atoi(argv[3]) : 50;
	int			fan[3] = {15, 10, 5};
	gnn_error	err;
	void	   *region = NULL;
	uint64_t	size;
	gnn_graph	g;
	int32_t    *seeds;
	double		t0;
	const char *so = getenv("GNN_CUDA_SO");

	if (gnn_backend_cuda_load(so && *so ? so : "kernels/gnn_cuda.so", 0, &be, &err) != GNN_OK)
	{
		printf("# SKIP %s\n", err.msg);
		return 0;
	}
	if (gnn_gpu_sample_bind(be, &api, &err) != GNN_OK)
		DIE("%s", err.msg);
	t0 = now_s();
	if (emu_rmat_graph(scale, (int64_t) ef << scale, false, 0, &region, &size, &g, &err) != GNN_OK)
		DIE("R-MAT: %s", err.msg);
	printf("R-MAT scale %d: %lld nodes, %lld edges (built in %.1f s) on %s\n", scale,
		   (long long) g.num_nodes, (long long) g.num_edges, now_s() - t0, be->name);
	seeds = malloc(sizeof(int32_t) * 1024 * nb);
	for (int i = 0; i < 1024 * nb; i++)
		seeds[i] = (int32_t) gnn_s_below(gnn_s_mix(i), g.num_nodes);

	/* CPU sampler: one thread (issue #13's yardstick: GPU sampling >= 20x it) and every core */
	for (int one = 1; one >= 0; one--)
	{
		gnn_sampler_config sc = {0};
		gnn_sampler *s;
		gnn_minibatch mb;
		int64_t		edges = 0;

		sc.kind = GNN_SAMPLER_NEIGHBOR;
		sc.nhops = 3;
		sc.nthreads = one ? 1 : 0;
		memcpy(sc.fanouts, fan, sizeof(fan));
		if (gnn_sampler_create(&g, &sc, &s, &err) != GNN_OK)
			DIE("sampler: %s", err.msg);
		t0 = now_s();
		for (int b = 0; b < nb; b++)
		{
			if (gnn_sampler_sample(s, seeds + 1024 * b, 1024, b, &mb, &err) != GNN_OK)
				DIE("sample: %s", err.msg);
			edges += mb.sampled_edges;
		}
		t0 = now_s() - t0;
		printf("neighbour sampling 15,10,5 x 1024 seeds, CPU sampler (%s, dedup+relabel): %.3g edges/s (%lld edges, %.1f ms/batch)\n",
			   one ? "1 thread" : "all cores", edges / t0, (long long) edges, 1e3 * t0 / nb);
		gnn_sampler_free(s);
	}
	/* GPU, graph in device memory */
	{
		int64_t		n = g.num_nodes,
					m = g.num_edges,
					draws;
		int64_t    *d_rindptr = dcopy(g.rindptr, sizeof(int64_t) * (n + 1));
		int32_t    *d_rindices = dcopy(g.rindices, sizeof(int32_t) * m);
		double		r;
		void	   *pin;

		(void) gpu_sampling(d_rindptr, d_rindices, seeds, 2 < nb ? 2 : nb, fan, &draws);	/* warm-up */
		r = gpu_sampling(d_rindptr, d_rindices, seeds, nb, fan, &draws);
		printf("neighbour sampling 15,10,5 x 1024 seeds, GPU, graph in device memory (draws, no relabel): %.3g edges/s (%lld draws)\n",
			   r, (long long) draws);
		gnn_backend_free(be, d_rindptr);
		gnn_backend_free(be, d_rindices);
		if (api.host_register(be, region, size, &pin) == GNN_OK)
		{
			const int64_t *p_rindptr = (const int64_t *) ((char *) pin + ((const char *) g.rindptr - (char *) region));
			const int32_t *p_rindices = (const int32_t *) ((char *) pin + ((const char *) g.rindices - (char *) region));

			r = gpu_sampling(p_rindptr, p_rindices, seeds, nb, fan, &draws);
			printf("neighbour sampling 15,10,5 x 1024 seeds, GPU, graph in pinned host memory: %.3g edges/s\n", r);
			api.host_unregister(be, region);
		}
		else
			printf("host_register failed: %s\n", be->err.msg);
	}
	/* walks */
	{
		enum
		{
			W = 200000, LEN = 20
		};
		int64_t		n = g.num_nodes,
					m = g.num_edges;
		int32_t    *starts = malloc(sizeof(int32_t) * W),
				   *out = malloc(sizeof(int32_t) * W * (LEN + 1));
		int64_t    *d_indptr = dcopy(g.indptr, sizeof(int64_t) * (n + 1));
		int32_t    *d_indices = dcopy(g.indices, sizeof(int32_t) * m);
		int32_t    *d_starts,
				   *d_out = dalloc(sizeof(int32_t) * W * (LEN + 1));
		double		pq[3][2] = {{1, 1}, {0.5, 2}, {0.25, 4}};	/* the last: the step back an outlier */

		for (int i = 0; i < W; i++)
			starts[i] = (int32_t) gnn_s_below(gnn_s_mix(i + 9), n);
		d_starts = dcopy(starts, sizeof(int32_t) * W);
		for (int c = 0; c < 3; c++)
		{
			gnn_walk_config wc = {LEN, pq[c][0], pq[c][1], 0};
			double		tc,
						tg;

			t0 = now_s();
			if (gnn_random_walk(&g, starts, W, &wc, 1, out, &err) != GNN_OK)
				DIE("walk: %s", err.msg);
			tc = now_s() - t0;
			api.random_walk(be, d_indptr, d_indices, d_starts, W, LEN, pq[c][0], pq[c][1], 1, d_out);
			gnn_backend_sync(be);
			t0 = now_s();
			if (api.random_walk(be, d_indptr, d_indices, d_starts, W, LEN, pq[c][0], pq[c][1], 1, d_out) != GNN_OK)
				DIE("gpu walk: %s", be->err.msg);
			gnn_backend_sync(be);
			tg = now_s() - t0;
			printf("random walks p=%g q=%g, %d x %d steps: CPU %.3g steps/s, GPU %.3g steps/s\n", pq[c][0],
				   pq[c][1], W, LEN, (double) W * LEN / tc, (double) W * LEN / tg);
		}
		gnn_backend_free(be, d_indptr);
		gnn_backend_free(be, d_indices);
		gnn_backend_free(be, d_starts);
		gnn_backend_free(be, d_out);
		free(starts);
		free(out);
	}
	/* gather */
	{
		enum
		{
			D = 128, R = 1 << 20, N = 200000
		};
		float	   *feat = malloc(sizeof(float) * (size_t) R * D);
		int32_t    *nodes = malloc(sizeof(int32_t) * N);
		float	   *d_feat,
				   *d_out = dalloc(sizeof(float) * (size_t) N * D);
		int32_t    *d_nodes;
		void	   *pin;
		double		t;

		for (size_t k = 0; k < (size_t) R * D; k++)
			feat[k] = (float) (k % 1000);
		for (int i = 0; i < N; i++)
			nodes[i] = (int32_t) gnn_s_below(gnn_s_mix(i + 5), R);
		d_feat = dcopy(feat, sizeof(float) * (size_t) R * D);
		d_nodes = dcopy(nodes, sizeof(int32_t) * N);
		api.gather(be, d_feat, D, d_nodes, N, false, d_out);
		gnn_backend_sync(be);
		t0 = now_s();
		for (int it = 0; it < 10; it++)
			api.gather(be, d_feat, D, d_nodes, N, false, d_out);
		gnn_backend_sync(be);
		t = (now_s() - t0) / 10;
		printf("gather %d rows x %d floats, features in device memory: %.1f GB/s written\n", N, D,
			   4.0 * N * D / t / 1e9);
		gnn_backend_free(be, d_feat);
		if (api.host_register(be, feat, sizeof(float) * (size_t) R * D, &pin) == GNN_OK)
		{
			api.gather(be, pin, D, d_nodes, N, false, d_out);
			gnn_backend_sync(be);
			t0 = now_s();
			for (int it = 0; it < 5; it++)
				api.gather(be, pin, D, d_nodes, N, false, d_out);
			gnn_backend_sync(be);
			t = (now_s() - t0) / 5;
			printf("gather %d rows x %d floats, features in pinned host memory: %.1f GB/s\n", N, D,
				   4.0 * N * D / t / 1e9);
			api.host_unregister(be, feat);
		}
		gnn_backend_free(be, d_nodes);
		gnn_backend_free(be, d_out);
		free(feat);
		free(nodes);
	}
	free(seeds);
	free(region);
	gnn_backend_destroy(be);
	return 0;
}
