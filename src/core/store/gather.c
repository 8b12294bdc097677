/*
 * gather.c: a graph's feature rows gathered into a host buffer, from the
 * graph's shared memory or through its disk feature store (store/gather.h).
 * Split out of sample.c so that the models' streamed input (nn/model.c)
 * and the samplers read features through one interface below both.
 */
#include "store/gather.h"
#include "store/feature_store.h"

#include <stdlib.h>
#include <string.h>

#include <omp.h>

/*
 * A row divided by its sum (as gnn_dfeat_from_graph does for full-batch
 * training), in double: summed several lanes at once and multiplied by
 * the sum's reciprocal.  One running sum in order (a chain of dependent
 * adds) and a division per element made row normalisation 5/6 of a
 * minibatch's gathering: 0.95 ms against 0.18 ms without it for 7,377
 * 64-dim rows (bench/sage_floor_bench.c, 2026-12-06).  The lanes and the
 * reciprocal change a double's last bit at most, which the rounding to
 * float all but always absorbs (the GPU's warp sum, gnn_s_normalise_lane,
 * adds in another order too).
 */
static inline void
normalise_row(float *dst, int64_t d)
{
	double		s = 0;

#pragma omp simd reduction(+:s)
	for (int64_t k = 0; k < d; k++)
		s += dst[k];
	if (s != 0)
	{
		double		r = 1.0 / s;

#pragma omp simd
		for (int64_t k = 0; k < d; k++)
			dst[k] = (float) (dst[k] * r);
	}
}

void
gnn_normalise_rows(float *x, int64_t n, int64_t d, int nthreads)
{
	int			nt = gnn_team_for(nthreads);

#pragma omp parallel for num_threads(nt) schedule(static) if (n * d > 65536 && nt > 1)
	for (int64_t i = 0; i < n; i++)
		normalise_row(x + i * d, d);
}

gnn_status
gnn_gather_dense(const gnn_graph *g, const int32_t *nodes, int64_t n, bool row_normalise,
				 int nthreads, float *out, gnn_error *err)
{
	int64_t		d = g->feat_dim;
	int			nt = gnn_team_for(nthreads);
	gnn_status	st = GNN_OK;

	if (g->feat_kind != GNN_FEAT_DENSE)
		return gnn_error_set(err, GNN_ERR_INVALID, "the graph has no dense features");
	if (g->fstore)
	{
		/* through the store's cache: its misses are read sorted, in runs */
		st = gnn_fstore_gather(g->fstore, nodes, n, out, err);
	}
	else
	{
#pragma omp parallel for num_threads(nt) schedule(static) if (n * d > 65536 && nt > 1)
		for (int64_t i = 0; i < n; i++)
		{
			const float *src = gnn_graph_feat_row(g, nodes[i]);
			float	   *dst = out + i * d;

			/* every cache line of a row some rows ahead: a row is several
			 * lines, and the rows are random reads (one line ahead left 1
			 * thread at a third of memcpy) */
			if (i + 8 < n)
			{
				const char *p = (const char *) gnn_graph_feat_row(g, nodes[i + 8]);

				for (int64_t off = 0; off < (int64_t) sizeof(float) * d; off += 64)
					__builtin_prefetch(p + off);
			}
			memcpy(dst, src, sizeof(float) * d);
			/* normalised while the row is in cache: a second pass over the batch reread it */
			if (row_normalise)
				normalise_row(dst, d);
		}
		return st;
	}
	if (st == GNN_OK && row_normalise)
		gnn_normalise_rows(out, n, d, nt);
	return st;
}

gnn_status
gnn_graph_feat_range(const gnn_graph *g, int64_t first, int64_t count, float *out, gnn_error *err)
{
	int32_t		idx[4096];

	if (g->feat_kind != GNN_FEAT_DENSE && g->feat_kind != GNN_FEAT_SPARSE)
		return gnn_error_set(err, GNN_ERR_INVALID, "the graph has no features");
	if (first < 0 || count < 0 || first + count > g->num_nodes)
		return gnn_error_set(err, GNN_ERR_INVALID, "feature rows %lld..%lld out of range (%lld nodes)",
							 (long long) first, (long long) (first + count), (long long) g->num_nodes);
	/* sparse rows written out dense (a delta never holds sparse rows: their changes reload) */
	if (g->feat_kind == GNN_FEAT_SPARSE)
	{
		memset(out, 0, sizeof(float) * (size_t) count * (size_t) g->feat_dim);
		for (int64_t v = 0; v < count; v++)
			for (int64_t p = g->fptr[first + v]; p < g->fptr[first + v + 1]; p++)
				out[v * g->feat_dim + g->fidx[p]] = g->fval[p];
		return GNN_OK;
	}
	if (!g->fstore)
	{
		if (!g->has_delta)
		{
			memcpy(out, g->feat + first * (int64_t) g->feat_dim, sizeof(float) * (size_t) count * g->feat_dim);
			return GNN_OK;
		}
		for (int64_t v = 0; v < count; v++)
			memcpy(out + v * g->feat_dim, gnn_graph_feat_row(g, first + v), sizeof(float) * g->feat_dim);
		return GNN_OK;
	}
	for (int64_t k0 = 0; k0 < count; k0 += 4096)
	{
		int64_t		k = count - k0 < 4096 ? count - k0 : 4096;
		gnn_status	st;

		for (int64_t i = 0; i < k; i++)
			idx[i] = (int32_t) (first + k0 + i);
		if ((st = gnn_fstore_gather(g->fstore, idx, k, out + k0 * g->feat_dim, err)) != GNN_OK)
			return st;
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
	int			nt = gnn_team_for(nthreads);

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
