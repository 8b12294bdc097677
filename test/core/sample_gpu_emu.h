/*
 * sample_gpu_emu.h: CPU emulations of the GPU samplers' launch layout
 * (kernels/sample.cu, walk.cu, gather.cu) built from the same per-element
 * bodies (kernels/sample_math.h), plus straightforward references.  Used by
 * test_sample_gpu_math.c (emulation against reference and statistics) and
 * test_sample_cuda_parity.c / bench/sample_gpu_bench.c (GPU against
 * emulation).
 */
#ifndef GNN_SAMPLE_GPU_EMU_H
#define GNN_SAMPLE_GPU_EMU_H

#include "graph/graph.h"
#include "../../kernels/sample_math.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define EMU_WARP 32

/* ptr[0..nd] as sample_scan_kernel (cumw: weighted, NULL: uniform); returns nnz */
static int64_t
emu_hop_ptr(const int64_t *rindptr, const float *cumw, const int32_t *dst, int64_t nd,
			int64_t fanout, bool replace, int64_t *ptr)
{
	ptr[0] = 0;
	for (int64_t i = 0; i < nd; i++)
	{
		int64_t		b = rindptr[dst[i]],
					deg = rindptr[dst[i] + 1] - b;

		ptr[i + 1] = ptr[i] + (cumw ? gnn_s_weighted_count(cumw + b, deg, fanout)
							   : gnn_s_count(deg, fanout, replace));
	}
	return ptr[nd];
}

/* sample_hop_kernel, warp per destination, lanes emulated in turn */
static void
emu_sample_hop(const int64_t *rindptr, const int32_t *rindices, const float *cumw,
			   const int32_t *dst, int64_t nd, int32_t hop, int64_t fanout, bool replace,
			   uint64_t seed, const int64_t *ptr, int32_t *src, int32_t *dst_idx)
{
	for (int64_t i = 0; i < nd; i++)
	{
		int32_t		v = dst[i];
		int64_t		b = rindptr[v],
					deg = rindptr[v + 1] - b,
					p = ptr[i],
					c = ptr[i + 1] - p;
		int32_t    *o = src + p;

		for (int lane = 0; lane < EMU_WARP; lane++)
		{
			if (dst_idx)
				for (int64_t j = lane; j < c; j += EMU_WARP)
					dst_idx[p + j] = (int32_t) i;
			if (cumw && fanout < 0)
				continue;		/* the ballot compaction below */
			if (gnn_s_take_all(deg, fanout, replace))
				for (int64_t j = lane; j < c; j += EMU_WARP)
					o[j] = rindices[b + j];
			else if (replace && cumw)
				for (int64_t j = lane; j < c; j += EMU_WARP)
					o[j] = rindices[b + gnn_s_weighted_draw(seed, hop, i, j, cumw + b, deg)];
			else if (replace)
				for (int64_t j = lane; j < c; j += EMU_WARP)
					o[j] = rindices[b + gnn_s_uniform_draw(seed, hop, i, j, deg)];
		}
		if (cumw && fanout < 0)
		{
			/* a ballot per 32 edges: a lane's slot is the takers below it */
			int64_t		k = 0;

			for (int64_t e0 = 0; e0 < deg; e0 += EMU_WARP)
			{
				bool		take[EMU_WARP];
				int			below = 0;

				for (int lane = 0; lane < EMU_WARP; lane++)
					take[lane] = e0 + lane < deg && gnn_s_weight_carried(cumw + b, e0 + lane);
				for (int lane = 0; lane < EMU_WARP; lane++)
					if (take[lane])
						o[k + below++] = rindices[b + e0 + lane];
				k += below;
			}
		}
		else if (!gnn_s_take_all(deg, fanout, replace) && !replace)
			for (int64_t s = 0; s < c; s++)
			{
				int64_t		t = gnn_s_floyd_candidate(seed, hop, i, s, c, deg);
				int32_t		u = rindices[b + t];
				bool		hit = false;

				for (int lane = 0; lane < EMU_WARP; lane++)	/* __any_sync */
					for (int64_t q = lane; q < s; q += EMU_WARP)
						hit |= o[q] == u;
				o[s] = rindices[b + gnn_s_floyd_pick(t, hit, s, c, deg)];
			}
	}
}

/*
 * reference: one destination's draws as row offsets, written plainly; with
 * cum (weighted), edges whose weight adds nothing to the prefix sums are not
 * candidates; returns the number of draws
 */
static int64_t
ref_draw_row(int64_t deg, int64_t fanout, bool replace, const float *cum, uint64_t seed,
			 int32_t hop, int64_t i, int64_t *off)
{
	int64_t		c = gnn_s_count(deg, fanout, replace);

	if (cum)
	{
		int64_t		n = 0;

		for (int64_t e = 0; e < deg; e++)
			if (cum[e] > (e > 0 ? cum[e - 1] : 0.0f))
				off[n++] = e;
		c = n == 0 ? 0 : fanout < 0 ? n : fanout;
		if (fanout < 0 || c == 0)
			return c;
	}
	if (fanout < 0 || (!replace && fanout >= deg))
		for (int64_t j = 0; j < c; j++)
			off[j] = j;
	else if (replace)
		for (int64_t j = 0; j < c; j++)
		{
			uint64_t	r = gnn_s_rand(seed, GNN_S_TAG_NEIGHBOR, gnn_s_row_key(hop, i), j, cum ? 2 : 0);

			if (!cum)
				off[j] = (int64_t) gnn_s_mulhi(r, (uint64_t) deg);
			else
			{
				/* linear search for the first prefix sum above x */
				float		x = (float) (gnn_s_unit(r) * (double) cum[deg - 1]);
				int64_t		e = 0;

				if (x >= cum[deg - 1])
					x = nextafterf(cum[deg - 1], 0.0f);

				while (e < deg - 1 && !(cum[e] > x))
					e++;
				off[j] = e;
			}
		}
	else
	{
		/* Floyd with a membership array */
		bool	   *in = calloc(deg, 1);

		for (int64_t s = 0; s < c; s++)
		{
			int64_t		jj = deg - c + s;
			int64_t		t = (int64_t) gnn_s_mulhi(gnn_s_rand(seed, GNN_S_TAG_NEIGHBOR, gnn_s_row_key(hop, i), s, 1),
												  (uint64_t) (jj + 1));

			off[s] = in[t] ? jj : t;
			in[off[s]] = true;
		}
		free(in);
	}
	return c;
}

/* gather_kernel, warp per row: v as the launch picks; the xor-butterfly sum emulated exactly */
static void
emu_gather(const float *feat, int64_t d, const int32_t *nodes, int64_t n, bool norm, int v,
		   float *out)
{
	for (int64_t i = 0; i < n; i++)
	{
		double		part[EMU_WARP];
		float	   *o = out + i * d;

		for (int lane = 0; lane < EMU_WARP; lane++)
			part[lane] = gnn_s_gather_lane(feat + (int64_t) nodes[i] * d, o, d, lane, EMU_WARP, v);
		if (norm)
		{
			for (int off = EMU_WARP / 2; off > 0; off >>= 1)
			{
				double		nx[EMU_WARP];

				for (int lane = 0; lane < EMU_WARP; lane++)
					nx[lane] = part[lane] + part[lane ^ off];
				memcpy(part, nx, sizeof(part));
			}
			if (part[0] != 0)
				for (int lane = 0; lane < EMU_WARP; lane++)
					gnn_s_normalise_lane(o, d, lane, EMU_WARP, part[lane]);
		}
	}
}

/* walk_kernel: a thread per walk */
static void
emu_random_walk(const int64_t *indptr, const int32_t *indices, const int32_t *starts, int64_t n,
				int64_t len, double p, double q, uint64_t seed, int32_t *out)
{
	double		wp = 1.0 / p,
				wq = 1.0 / q,
				wout = wq > 1.0 ? wq : 1.0;	/* as gnn_cuda_random_walk passes it */

	for (int64_t w = 0; w < n; w++)
		gnn_s_walk(indptr, indices, starts[w], len, p != 1.0 || q != 1.0, wp, wq, wout, seed, w,
				   out + w * (len + 1));
}

/*
 * An in-memory R-MAT graph (a=0.57, b=c=0.19: skewed in-degrees, hubs far
 * longer than a warp) of 2^scale nodes and about m edges, weights in
 * {0..4} when weighted, dense features of fdim (0: none).  *region
 * (*size bytes) is malloc'd; free() it.
 */
static gnn_status
emu_rmat_graph(int scale, int64_t m, bool weighted, int32_t fdim, void **region, uint64_t *size,
			   gnn_graph *g, gnn_error *err)
{
	int64_t		n = (int64_t) 1 << scale;
	int64_t    *src = malloc(sizeof(int64_t) * m),
			   *dst = malloc(sizeof(int64_t) * m),
			   *ids = malloc(sizeof(int64_t) * n);
	float	   *w = weighted ? malloc(sizeof(float) * m) : NULL;
	float	   *feat = fdim > 0 ? malloc(sizeof(float) * n * fdim) : NULL;
	gnn_graph_input in = {0};
	gnn_status	st;

	for (int64_t e = 0; e < m; e++)
	{
		int64_t		u = 0,
					v = 0;

		for (int b = 0; b < scale; b++)
		{
			double		x = gnn_s_unit(gnn_s_rand(77, 0, e, b, 0));
			int			qu = x >= 0.76,	/* c + d */
						qv = (x >= 0.57 && x < 0.76) || x >= 0.95;

			u = (u << 1) | qu;
			v = (v << 1) | qv;
		}
		src[e] = u;
		dst[e] = v;
		if (w)
			w[e] = (float) gnn_s_below(gnn_s_rand(77, 1, e, 0, 0), 5);
	}
	for (int64_t i = 0; i < n; i++)
		ids[i] = i;
	for (int64_t k = 0; k < n * fdim; k++)
		feat[k] = (float) gnn_s_below(gnn_s_rand(77, 2, k, 0, 0), 1000) / 100.0f;
	in.num_edges = m;
	in.src = src;
	in.dst = dst;
	in.weight = w;
	in.num_nodes = n;
	in.node_ids = ids;
	in.feat_dim = fdim;
	in.feat = feat;
	st = gnn_graph_build_region(&in, region, size, g, err);
	free(src);
	free(dst);
	free(ids);
	free(w);
	free(feat);
	return st;
}

#endif							/* GNN_SAMPLE_GPU_EMU_H */
