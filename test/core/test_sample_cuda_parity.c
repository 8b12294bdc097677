/*
 * test_sample_cuda_parity.c: the GPU samplers (kernels/sample.cu, walk.cu,
 * gather.cu, bound through sample_gpu.h) against their CPU emulation
 * (sample_gpu_emu.h, the same per-element bodies in the kernels' launch
 * layout): neighbour sampling in every mode, weight prefix sums, random
 * walks (uniform and node2vec) and the gather, from device memory and from
 * pinned host memory, on an R-MAT graph with hubs.  Results must match bit
 * for bit.  Without a GPU (or kernels/gnn_cuda.so) it checks that loading
 * fails cleanly and prints "# SKIP" lines.  GNN_CUDA_SO overrides the path.
 */
#include "check.h"
#include "nn/backend.h"
#include "sample/sample.h"
#include "sample/sample_gpu.h"
#include "sample_gpu_emu.h"

#include <stdlib.h>
#include <string.h>

static gnn_backend *be;
static gnn_gpu_sample_api api;

/* a device copy of host data (NULL on failure, noted) */
static void *
dev_copy(const void *h, size_t bytes)
{
	void	   *d = NULL;

	if (gnn_backend_alloc(be, bytes ? bytes : 4, &d) != GNN_OK ||
		(bytes && gnn_backend_copy_h2d(be, d, h, bytes) != GNN_OK))
	{
		NOTE("device copy failed: %s", be->err.msg);
		return NULL;
	}
	return d;
}

static bool
fetch(void *h, const void *d, size_t bytes)
{
	if (gnn_backend_sync(be) != GNN_OK || (bytes && gnn_backend_copy_d2h(be, h, d, bytes) != GNN_OK))
	{
		NOTE("fetch failed: %s", be->err.msg);
		return false;
	}
	return true;
}

typedef struct dgraph
{
	const int64_t *indptr,
			   *rindptr;
	const int32_t *indices,
			   *rindices;
	const float *cum;
	const char *where;
} dgraph;

static void
check_sampling(const gnn_graph *g, const dgraph *dg, const float *cum_host, const int32_t *dsts, int64_t nd)
{
	struct
	{
		int64_t		k;
		bool		rep;
		bool		wt;
	}			modes[] = {{10, true, false}, {10, false, false}, {25, false, false},
	{300, false, false}, {-1, false, false}, {15, true, true}, {-1, true, true}};
	int32_t    *d_dst = dev_copy(dsts, sizeof(int32_t) * nd);
	int64_t    *d_ptr = NULL;

	gnn_backend_alloc(be, sizeof(int64_t) * (nd + 1), (void **) &d_ptr);
	for (size_t m = 0; m < sizeof(modes) / sizeof(modes[0]); m++)
	{
		int64_t    *ptr = malloc(sizeof(int64_t) * (nd + 1)),
				   *gptr = malloc(sizeof(int64_t) * (nd + 1));
		int64_t		nnz = emu_hop_ptr(g->rindptr, modes[m].wt ? cum_host : NULL, dsts, nd, modes[m].k, modes[m].rep, ptr),
					gnnz = -1;
		int32_t    *src = malloc(sizeof(int32_t) * (nnz + 1)),
				   *didx = malloc(sizeof(int32_t) * (nnz + 1)),
				   *gsrc = malloc(sizeof(int32_t) * (nnz + 1)),
				   *gdidx = malloc(sizeof(int32_t) * (nnz + 1));
		int32_t    *d_src = NULL,
				   *d_didx = NULL;
		const float *cw = modes[m].wt ? dg->cum : NULL;
		gnn_status	st;

		emu_sample_hop(g->rindptr, g->rindices, modes[m].wt ? cum_host : NULL, dsts, nd, 1,
					   modes[m].k, modes[m].rep, 2024, ptr, src, didx);
		st = api.sample_hop(be, dg->rindptr, dg->rindices, cw, d_dst, nd, 1, modes[m].k, modes[m].rep,
							2024, d_ptr, NULL, NULL, 0, &gnnz);
		CHECK(st == (nnz > 0 ? GNN_ERR_LIMIT : GNN_OK) && gnnz == nnz,
			  "%s: fanout %lld: output too small reports the size (%lld, want %lld)", dg->where,
			  (long long) modes[m].k, (long long) gnnz, (long long) nnz);
		gnn_backend_alloc(be, sizeof(int32_t) * (nnz + 1), (void **) &d_src);
		gnn_backend_alloc(be, sizeof(int32_t) * (nnz + 1), (void **) &d_didx);
		st = api.sample_hop(be, dg->rindptr, dg->rindices, cw, d_dst, nd, 1, modes[m].k, modes[m].rep,
							2024, d_ptr, d_src, d_didx, nnz, &gnnz);
		if (st != GNN_OK)
			NOTE("sample_hop: %s", be->err.msg);
		CHECK(st == GNN_OK && fetch(gptr, d_ptr, sizeof(int64_t) * (nd + 1)) &&
			  fetch(gsrc, d_src, sizeof(int32_t) * nnz) && fetch(gdidx, d_didx, sizeof(int32_t) * nnz) &&
			  memcmp(ptr, gptr, sizeof(int64_t) * (nd + 1)) == 0 &&
			  memcmp(src, gsrc, sizeof(int32_t) * nnz) == 0 &&
			  memcmp(didx, gdidx, sizeof(int32_t) * nnz) == 0,
			  "%s: sample_hop = emulation: fanout %lld, %s, %s (%lld draws)", dg->where,
			  (long long) modes[m].k, modes[m].rep ? "with replacement" : "without",
			  modes[m].wt ? "weighted" : "uniform", (long long) nnz);
		gnn_backend_free(be, d_src);
		gnn_backend_free(be, d_didx);
		free(ptr);
		free(gptr);
		free(src);
		free(didx);
		free(gsrc);
		free(gdidx);
	}
	{
		int64_t		nnz = 0;

		CHECK(api.sample_hop(be, dg->rindptr, dg->rindices, dg->cum, d_dst, nd, 0, 5, false, 1, d_ptr,
							 NULL, NULL, 0, &nnz) == GNN_ERR_UNSUPPORTED,
			  "%s: weighted without replacement is refused", dg->where);
	}
	gnn_backend_free(be, d_dst);
	gnn_backend_free(be, d_ptr);
}

static void
check_walks(const gnn_graph *g, const dgraph *dg)
{
	enum
	{
		W = 20000, LEN = 20
	};
	int32_t    *starts = malloc(sizeof(int32_t) * W),
			   *ref = malloc(sizeof(int32_t) * W * (LEN + 1)),
			   *got = malloc(sizeof(int32_t) * W * (LEN + 1));
	int32_t    *d_starts,
			   *d_out = NULL;
	double		pq[][2] = {{1, 1}, {0.5, 2}, {2, 0.5}, {1e-3, 1}};

	for (int i = 0; i < W; i++)
		starts[i] = (int32_t) gnn_s_below(gnn_s_mix(i), g->num_nodes);
	d_starts = dev_copy(starts, sizeof(int32_t) * W);
	gnn_backend_alloc(be, sizeof(int32_t) * W * (LEN + 1), (void **) &d_out);
	for (int c = 0; c < 4; c++)
	{
		gnn_status	st;

		emu_random_walk(g->indptr, g->indices, starts, W, LEN, pq[c][0], pq[c][1], 5, ref);
		st = api.random_walk(be, dg->indptr, dg->indices, d_starts, W, LEN, pq[c][0], pq[c][1], 5, d_out);
		if (st != GNN_OK)
			NOTE("random_walk: %s", be->err.msg);
		CHECK(st == GNN_OK && fetch(got, d_out, sizeof(int32_t) * W * (LEN + 1)) &&
			  memcmp(ref, got, sizeof(int32_t) * W * (LEN + 1)) == 0,
			  "%s: random_walk = emulation: p %g, q %g", dg->where, pq[c][0], pq[c][1]);
	}
	CHECK(api.random_walk(be, dg->indptr, dg->indices, d_starts, W, LEN, 0, 1, 5, d_out) == GNN_ERR_INVALID,
		  "random_walk refuses p = 0");
	gnn_backend_free(be, d_starts);
	gnn_backend_free(be, d_out);
	free(starts);
	free(ref);
	free(got);
}

static void
check_gather(const float *feat, int64_t nrows, int64_t d, bool pinned)
{
	enum
	{
		N = 5000
	};
	int32_t    *nodes = malloc(sizeof(int32_t) * N);
	float	   *ref = malloc(sizeof(float) * N * d),
			   *got = malloc(sizeof(float) * N * d);
	const float *d_feat = NULL;
	int32_t    *d_nodes;
	float	   *d_out = NULL;
	void	   *pin = NULL;
	int			v;

	for (int i = 0; i < N; i++)
		nodes[i] = (int32_t) gnn_s_below(gnn_s_mix(i + 3), nrows);
	if (pinned)
	{
		if (api.host_register(be, (void *) feat, sizeof(float) * nrows * d, &pin) != GNN_OK)
		{
			CHECK(0, "host_register features: %s", be->err.msg);
			return;
		}
		d_feat = pin;
	}
	else
		d_feat = dev_copy(feat, sizeof(float) * nrows * d);
	d_nodes = dev_copy(nodes, sizeof(int32_t) * N);
	gnn_backend_alloc(be, sizeof(float) * N * d, (void **) &d_out);
	v = d % 4 == 0 && ((uintptr_t) d_feat & 15) == 0 && ((uintptr_t) d_out & 15) == 0 ? 4 : 1;
	for (int norm = 0; norm < 2; norm++)
	{
		gnn_status	st;

		emu_gather(feat, d, nodes, N, norm, v, ref);
		st = api.gather(be, d_feat, d, d_nodes, N, norm, d_out);
		if (st != GNN_OK)
			NOTE("gather: %s", be->err.msg);
		CHECK(st == GNN_OK && fetch(got, d_out, sizeof(float) * N * d) &&
			  memcmp(ref, got, sizeof(float) * N * d) == 0,
			  "gather = emulation: d %lld (v %d), %s, features in %s", (long long) d, v,
			  norm ? "row-normalised" : "copy", pinned ? "pinned host memory" : "device memory");
	}
	if (pinned)
		CHECK(api.host_unregister(be, (void *) feat) == GNN_OK, "host_unregister");
	else
		gnn_backend_free(be, (void *) d_feat);
	gnn_backend_free(be, d_nodes);
	gnn_backend_free(be, d_out);
	free(nodes);
	free(ref);
	free(got);
}

int
main(void)
{
	gnn_error	err;
	const char *so = getenv("GNN_CUDA_SO");
	gnn_status	st;
	gnn_backend *cpu = NULL;
	void	   *region = NULL;
	uint64_t	size;
	gnn_graph	g;

	if (gnn_backend_cpu_create(1, &cpu, &err) == GNN_OK)
	{
		CHECK(gnn_gpu_sample_bind(cpu, &api, &err) == GNN_ERR_UNSUPPORTED && api.sample_hop == NULL,
			  "binding GPU sampling to the CPU backend is refused cleanly");
		gnn_backend_destroy(cpu);
	}
	st = gnn_backend_cuda_load(so && *so ? so : "kernels/gnn_cuda.so", 0, &be, &err);
	if (st != GNN_OK)
	{
		CHECK(st == GNN_ERR_UNSUPPORTED && err.msg[0] != '\0',
			  "loading the CUDA backend without a usable GPU fails cleanly (%s)", gnn_status_name(st));
		CHECK_SKIP(err.msg, "GPU neighbour sampling, walks and gather against the CPU emulation");
		return check_done();
	}
	st = gnn_gpu_sample_bind(be, &api, &err);
	if (!CHECK(st == GNN_OK, "bind the GPU sampling entry points (%s)", st == GNN_OK ? "ok" : err.msg))
	{
		gnn_backend_destroy(be);
		return check_done();
	}
	NOTE("GPU sampling on %s", be->name);
	if (emu_rmat_graph(15, 400000, true, 64, &region, &size, &g, &err) != GNN_OK)
	{
		CHECK(0, "build the R-MAT graph: %s", err.msg);
		return check_done();
	}
	{
		int64_t		m = g.num_edges,
					n = g.num_nodes,
					hub = 0;
		float	   *cum = malloc(sizeof(float) * (m + 1)),
				   *gcum = malloc(sizeof(float) * (m + 1));
		int32_t    *dsts = malloc(sizeof(int32_t) * 8192);
		dgraph		dg;
		void	   *pin = NULL;

		for (int64_t v = 0; v < n; v++)
		{
			gnn_s_row_prefix(g.rweights + g.rindptr[v], g.rindptr[v + 1] - g.rindptr[v], cum + g.rindptr[v]);
			if (g.rindptr[v + 1] - g.rindptr[v] > g.rindptr[hub + 1] - g.rindptr[hub])
				hub = v;
		}
		NOTE("R-MAT: %lld nodes, %lld edges, max in-degree %lld", (long long) n, (long long) m,
			 (long long) (g.rindptr[hub + 1] - g.rindptr[hub]));
		for (int i = 0; i < 8192; i++)
			dsts[i] = (int32_t) gnn_s_below(gnn_s_mix(i + 17), n);
		dsts[0] = (int32_t) hub;
		dsts[4000] = (int32_t) hub;

		dg.where = "device memory";
		dg.indptr = dev_copy(g.indptr, sizeof(int64_t) * (n + 1));
		dg.indices = dev_copy(g.indices, sizeof(int32_t) * m);
		dg.rindptr = dev_copy(g.rindptr, sizeof(int64_t) * (n + 1));
		dg.rindices = dev_copy(g.rindices, sizeof(int32_t) * m);
		{
			float	   *d_w = dev_copy(g.rweights, sizeof(float) * m),
					   *d_cum = NULL;

			gnn_backend_alloc(be, sizeof(float) * (m + 1), (void **) &d_cum);
			st = api.row_prefix(be, dg.rindptr, d_w, n, d_cum);
			CHECK(st == GNN_OK && fetch(gcum, d_cum, sizeof(float) * m) &&
				  memcmp(cum, gcum, sizeof(float) * m) == 0, "row_prefix = CPU prefix sums, bit for bit");
			dg.cum = d_cum;
			gnn_backend_free(be, d_w);
		}
		check_sampling(&g, &dg, cum, dsts, 8192);
		check_walks(&g, &dg);
		gnn_backend_free(be, (void *) dg.indptr);
		gnn_backend_free(be, (void *) dg.indices);
		gnn_backend_free(be, (void *) dg.rindptr);
		gnn_backend_free(be, (void *) dg.rindices);

		/* the whole graph region in pinned host memory, read by the GPU directly */
		st = api.host_register(be, region, size, &pin);
		if (CHECK(st == GNN_OK, "host_register the graph region (%s)", st == GNN_OK ? "ok" : be->err.msg))
		{
#define PIN(p) ((const void *) ((char *) pin + ((const char *) (p) - (const char *) region)))
			dg.where = "pinned host memory";
			dg.indptr = PIN(g.indptr);
			dg.indices = PIN(g.indices);
			dg.rindptr = PIN(g.rindptr);
			dg.rindices = PIN(g.rindices);
			check_sampling(&g, &dg, cum, dsts, 8192);
			check_walks(&g, &dg);
			CHECK(api.host_unregister(be, region) == GNN_OK, "host_unregister the graph region");
		}
		gnn_backend_free(be, (void *) dg.cum);
		check_gather(g.feat, n, 64, false);
		{
			float	   *f30 = malloc(sizeof(float) * 1000 * 30);

			for (int k = 0; k < 1000 * 30; k++)
				f30[k] = (float) gnn_s_below(gnn_s_mix(k), 977) / 7.0f;
			check_gather(f30, 1000, 30, false);
			check_gather(f30, 1000, 30, true);
			free(f30);
		}
		{
			float	   *f64 = malloc(sizeof(float) * n * 64);

			memcpy(f64, g.feat, sizeof(float) * n * 64);
			check_gather(f64, n, 64, true);
			free(f64);
		}
		free(cum);
		free(gcum);
		free(dsts);
	}
	free(region);
	gnn_backend_destroy(be);
	return check_done();
}
