/*
 * graph.c: COO -> CSR (+ reverse CSR), laid out in one region with offsets.
 *
 * Steps: map original ids to dense indices (a direct table when the ids fill
 * a small range, as serial keys do; otherwise a sorted id array plus an open
 * addressing hash), count degrees, scatter, sort and merge each row (weights
 * of duplicate edges summed), then the same for the transposed graph.  Hot
 * loops run on OpenMP threads; nothing here allocates per edge.
 */
#include "graph.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

struct gnn_graph_builder
{
	int64_t		n;
	int64_t		m;
	int64_t    *ids;
	int64_t    *indptr;
	int32_t    *indices;
	float	   *weights;
	int64_t    *rindptr;
	int32_t    *rindices;
	float	   *rweights;
	int32_t		feat_kind;
	int32_t		feat_dim;
	int64_t		feat_nnz;
	float	   *feat;
	int64_t    *fptr;
	int32_t    *fidx;
	float	   *fval;
	int32_t    *labels;
	uint8_t    *split;
	int32_t		num_classes;
	int64_t		n_train,
				n_val,
				n_test,
				n_labelled;
};

/* ------------------------------------------------------------------ id map */

typedef struct idmap
{
	int64_t		n;
	const int64_t *sorted;		/* ascending unique ids */
	/* direct table: index = table[id - base], -1 absent */
	int64_t		base;
	int64_t		range;
	int32_t    *table;
	/* hash: open addressing over sorted positions */
	uint64_t	mask;
	int32_t    *slots;			/* position + 1, 0 = empty */
} idmap;

static inline uint64_t
hash64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	x ^= x >> 33;
	return x;
}

static gnn_status
idmap_init(idmap *map, const int64_t *sorted, int64_t n, gnn_error *err)
{
	memset(map, 0, sizeof(*map));
	map->n = n;
	map->sorted = sorted;
	if (n == 0)
		return GNN_OK;
	map->base = sorted[0];
	/* range computed in unsigned arithmetic: ids may span all of int64 */
	uint64_t	span = (uint64_t) sorted[n - 1] - (uint64_t) sorted[0];

	if (span < (uint64_t) 4 * (uint64_t) n + 1024)
	{
		map->range = (int64_t) span + 1;
		map->table = malloc(sizeof(int32_t) * map->range);
		if (!map->table)
			return gnn_error_set(err, GNN_ERR_NOMEM, "out of memory for the id map (%lld entries)",
								 (long long) map->range);
		memset(map->table, 0xff, sizeof(int32_t) * map->range);
		for (int64_t i = 0; i < n; i++)
			map->table[(uint64_t) sorted[i] - (uint64_t) map->base] = (int32_t) i;
		return GNN_OK;
	}
	uint64_t	cap = 16;

	while (cap < (uint64_t) n * 2)
		cap <<= 1;
	map->mask = cap - 1;
	map->slots = calloc(cap, sizeof(int32_t));
	if (!map->slots)
		return gnn_error_set(err, GNN_ERR_NOMEM, "out of memory for the id hash (%llu slots)",
							 (unsigned long long) cap);
	for (int64_t i = 0; i < n; i++)
	{
		uint64_t	h = hash64((uint64_t) sorted[i]) & map->mask;

		while (map->slots[h])
			h = (h + 1) & map->mask;
		map->slots[h] = (int32_t) (i + 1);
	}
	return GNN_OK;
}

static inline int64_t
idmap_find(const idmap *map, int64_t id)
{
	if (map->table)
	{
		uint64_t	off = (uint64_t) id - (uint64_t) map->base;

		if (id < map->base || off >= (uint64_t) map->range)
			return -1;
		return map->table[off];
	}
	if (!map->slots)
		return -1;
	uint64_t	h = hash64((uint64_t) id) & map->mask;

	for (;;)
	{
		int32_t		s = map->slots[h];

		if (s == 0)
			return -1;
		if (map->sorted[s - 1] == id)
			return s - 1;
		h = (h + 1) & map->mask;
	}
}

static void
idmap_free(idmap *map)
{
	free(map->table);
	free(map->slots);
}

/* ------------------------------------------------------------------ sorting */

/* LSD radix sort of int64 keys (sign-flipped to sort as unsigned), 16-bit digits. */
static gnn_status
radix_sort_i64(int64_t *a, int64_t n, gnn_error *err)
{
	if (n < 2)
		return GNN_OK;
	uint64_t   *x = (uint64_t *) a;
	uint64_t   *tmp = malloc(sizeof(uint64_t) * n);
	size_t	   *cnt = malloc(sizeof(size_t) * 65536);

	if (!tmp || !cnt)
	{
		free(tmp);
		free(cnt);
		return gnn_error_set(err, GNN_ERR_NOMEM, "out of memory sorting %lld ids", (long long) n);
	}
	for (int64_t i = 0; i < n; i++)
		x[i] ^= 0x8000000000000000ULL;
	uint64_t	lo = UINT64_MAX,
				hi = 0;

	for (int64_t i = 0; i < n; i++)
	{
		if (x[i] < lo)
			lo = x[i];
		if (x[i] > hi)
			hi = x[i];
	}
	uint64_t	diff = lo ^ hi;
	uint64_t   *src = x,
			   *dst = tmp;

	for (int shift = 0; shift < 64; shift += 16)
	{
		if ((diff >> shift) == 0)
			break;
		if (((diff >> shift) & 0xffff) == 0)
			continue;			/* digit constant across all keys */
		memset(cnt, 0, sizeof(size_t) * 65536);
		for (int64_t i = 0; i < n; i++)
			cnt[(src[i] >> shift) & 0xffff]++;
		size_t		sum = 0;

		for (int d = 0; d < 65536; d++)
		{
			size_t		c = cnt[d];

			cnt[d] = sum;
			sum += c;
		}
		for (int64_t i = 0; i < n; i++)
			dst[cnt[(src[i] >> shift) & 0xffff]++] = src[i];
		uint64_t   *t = src;

		src = dst;
		dst = t;
	}
	if (src != x)
		memcpy(x, src, sizeof(uint64_t) * n);
	for (int64_t i = 0; i < n; i++)
		x[i] ^= 0x8000000000000000ULL;
	free(tmp);
	free(cnt);
	return GNN_OK;
}

/* Sort one CSR row by neighbour, carrying weights. */
static void
sort_row(int32_t *idx, float *w, int64_t len)
{
	if (len < 2)
		return;
	if (len <= 32)
	{
		for (int64_t i = 1; i < len; i++)
		{
			int32_t		k = idx[i];
			float		kw = w ? w[i] : 0;
			int64_t		j = i - 1;

			while (j >= 0 && idx[j] > k)
			{
				idx[j + 1] = idx[j];
				if (w)
					w[j + 1] = w[j];
				j--;
			}
			idx[j + 1] = k;
			if (w)
				w[j + 1] = kw;
		}
		return;
	}
	/* quicksort, median of three, recursing on the smaller side */
	while (len > 32)
	{
		int64_t		mid = len / 2;
		int32_t		a = idx[0],
					b = idx[mid],
					c = idx[len - 1];
		int32_t		p = (a < b) ? ((b < c) ? b : (a < c ? c : a)) : ((a < c) ? a : (b < c ? c : b));
		int64_t		i = 0,
					j = len - 1;

		while (i <= j)
		{
			while (idx[i] < p)
				i++;
			while (idx[j] > p)
				j--;
			if (i <= j)
			{
				int32_t		t = idx[i];

				idx[i] = idx[j];
				idx[j] = t;
				if (w)
				{
					float		tw = w[i];

					w[i] = w[j];
					w[j] = tw;
				}
				i++;
				j--;
			}
		}
		if (j + 1 < len - i)
		{
			sort_row(idx, w, j + 1);
			idx += i;
			if (w)
				w += i;
			len -= i;
		}
		else
		{
			sort_row(idx + i, w ? w + i : NULL, len - i);
			len = j + 1;
		}
	}
	sort_row(idx, w, len);
}

/*
 * Build a CSR from (row, col, weight) arrays of length m over n rows: count,
 * scatter, sort each row, merge duplicates.  Outputs are malloc'd.
 */
static gnn_status
build_csr(int64_t n, int64_t m, const int32_t *row, const int32_t *col, const float *w,
		  int64_t **indptr_out, int32_t **indices_out, float **weights_out, int64_t *m_out,
		  gnn_error *err)
{
	int64_t    *indptr = calloc(n + 1, sizeof(int64_t));
	int32_t    *indices = malloc(sizeof(int32_t) * (m ? m : 1));
	float	   *weights = w ? malloc(sizeof(float) * (m ? m : 1)) : NULL;
	int64_t    *pos = malloc(sizeof(int64_t) * (n + 1));

	if (!indptr || !indices || (w && !weights) || !pos)
	{
		free(indptr);
		free(indices);
		free(weights);
		free(pos);
		return gnn_error_set(err, GNN_ERR_NOMEM, "out of memory building a CSR of %lld edges",
							 (long long) m);
	}
	for (int64_t e = 0; e < m; e++)
		indptr[row[e] + 1]++;
	for (int64_t v = 0; v < n; v++)
		indptr[v + 1] += indptr[v];
	memcpy(pos, indptr, sizeof(int64_t) * (n + 1));
	for (int64_t e = 0; e < m; e++)
	{
		int64_t		p = pos[row[e]]++;

		indices[p] = col[e];
		if (w)
			weights[p] = w[e];
	}
	/* sort and merge each row; new row lengths land in pos[] */
#pragma omp parallel for schedule(dynamic, 4096)
	for (int64_t v = 0; v < n; v++)
	{
		int64_t		b = indptr[v],
					len = indptr[v + 1] - b;
		int32_t    *ri = indices + b;
		float	   *rw = weights ? weights + b : NULL;

		sort_row(ri, rw, len);
		int64_t		k = 0;

		for (int64_t i = 0; i < len; i++)
		{
			if (k > 0 && ri[k - 1] == ri[i])
			{
				if (rw)
					rw[k - 1] += rw[i];
				continue;
			}
			ri[k] = ri[i];
			if (rw)
				rw[k] = rw[i];
			k++;
		}
		pos[v] = k;
	}
	/* compact */
	int64_t		out = 0;

	for (int64_t v = 0; v < n; v++)
	{
		int64_t		b = indptr[v];
		int64_t		len = pos[v];

		if (out != b)
		{
			memmove(indices + out, indices + b, sizeof(int32_t) * len);
			if (weights)
				memmove(weights + out, weights + b, sizeof(float) * len);
		}
		indptr[v] = out;
		out += len;
	}
	indptr[n] = out;
	free(pos);
	*indptr_out = indptr;
	*indices_out = indices;
	*weights_out = weights;
	*m_out = out;
	return GNN_OK;
}

/* ------------------------------------------------------------------ build */

void
gnn_graph_builder_free(gnn_graph_builder *b)
{
	if (!b)
		return;
	free(b->ids);
	free(b->indptr);
	free(b->indices);
	free(b->weights);
	free(b->rindptr);
	free(b->rindices);
	free(b->rweights);
	free(b->feat);
	free(b->fptr);
	free(b->fidx);
	free(b->fval);
	free(b->labels);
	free(b->split);
	free(b);
}

#define FAIL(st, ...) do { status = gnn_error_set(err, (st), __VA_ARGS__); goto done; } while (0)

gnn_status
gnn_graph_build(const gnn_graph_input *in, gnn_graph_builder **out, gnn_error *err)
{
	gnn_status	status = GNN_OK;
	gnn_graph_builder *b = NULL;
	idmap		map;
	int64_t    *rowpos = NULL;	/* node-table row of each internal index */
	int32_t    *esrc = NULL,
			   *edst = NULL;
	float	   *ew = NULL;
	int64_t		m2 = 0;

	memset(&map, 0, sizeof(map));
	*out = NULL;
	if (err)
		gnn_error_clear(err);
#ifdef _OPENMP
	if (in->nthreads > 0)
		omp_set_num_threads(in->nthreads);
#endif
	if (in->num_edges < 0 || in->num_nodes < 0 || (in->num_edges > 0 && (!in->src || !in->dst)))
		FAIL(GNN_ERR_INVALID, "invalid graph input");
	if (in->feat_dim < 0 || (in->feat_dim > 0 && !in->feat))
		FAIL(GNN_ERR_INVALID, "invalid feature input");
	if (in->feat_dim > 0 && in->sparse_nnz > 0)
		FAIL(GNN_ERR_INVALID, "both dense and sparse features were given");
	if ((in->feat_dim > 0 || in->labels || in->split) && !in->node_ids)
		FAIL(GNN_ERR_INVALID, "node data was given without node ids");

	b = calloc(1, sizeof(*b));
	if (!b)
		FAIL(GNN_ERR_NOMEM, "out of memory");

	/* 1. the node set, sorted and unique */
	if (in->node_ids)
	{
		int64_t		n = in->num_nodes;

		b->ids = malloc(sizeof(int64_t) * (n ? n : 1));
		if (!b->ids)
			FAIL(GNN_ERR_NOMEM, "out of memory for %lld node ids", (long long) n);
		memcpy(b->ids, in->node_ids, sizeof(int64_t) * n);
		if ((status = radix_sort_i64(b->ids, n, err)) != GNN_OK)
			goto done;
		for (int64_t i = 1; i < n; i++)
			if (b->ids[i] == b->ids[i - 1])
			{
				if (err)
					err->id = b->ids[i];
				/* find the second row holding it, for the message */
				int64_t		first = -1,
							second = -1;

				for (int64_t r = 0; r < n; r++)
					if (in->node_ids[r] == b->ids[i])
					{
						if (first < 0)
							first = r;
						else
						{
							second = r;
							break;
						}
					}
				if (err)
					err->row = second;
				FAIL(GNN_ERR_DUPLICATE, "node id %lld appears more than once (rows %lld and %lld)",
					 (long long) b->ids[i], (long long) first, (long long) second);
			}
		b->n = n;
	}
	else
	{
		int64_t		m = in->num_edges;
		int64_t    *all = malloc(sizeof(int64_t) * (2 * m + 1));

		if (!all)
			FAIL(GNN_ERR_NOMEM, "out of memory for %lld endpoints", (long long) (2 * m));
		memcpy(all, in->src, sizeof(int64_t) * m);
		memcpy(all + m, in->dst, sizeof(int64_t) * m);
		if ((status = radix_sort_i64(all, 2 * m, err)) != GNN_OK)
		{
			free(all);
			goto done;
		}
		int64_t		k = 0;

		for (int64_t i = 0; i < 2 * m; i++)
			if (k == 0 || all[k - 1] != all[i])
				all[k++] = all[i];
		b->ids = realloc(all, sizeof(int64_t) * (k ? k : 1));
		if (!b->ids)
		{
			free(all);
			FAIL(GNN_ERR_NOMEM, "out of memory");
		}
		b->n = k;
	}
	if (b->n > INT32_MAX)
		FAIL(GNN_ERR_LIMIT, "graph has %lld nodes; at most %d are supported", (long long) b->n, INT32_MAX);
	if ((status = idmap_init(&map, b->ids, b->n, err)) != GNN_OK)
		goto done;

	/* 2. map edge endpoints; symmetrise */
	{
		int64_t		m = in->num_edges;
		int64_t		cap = in->undirected ? 2 * m : m;
		int64_t		bad = -1;

		esrc = malloc(sizeof(int32_t) * (cap ? cap : 1));
		edst = malloc(sizeof(int32_t) * (cap ? cap : 1));
		if (in->weight)
			ew = malloc(sizeof(float) * (cap ? cap : 1));
		if (!esrc || !edst || (in->weight && !ew))
			FAIL(GNN_ERR_NOMEM, "out of memory for %lld edges", (long long) cap);

#pragma omp parallel for schedule(static)
		for (int64_t e = 0; e < m; e++)
		{
			int64_t		s = idmap_find(&map, in->src[e]);
			int64_t		d = idmap_find(&map, in->dst[e]);

			esrc[e] = (int32_t) s;
			edst[e] = (int32_t) d;
		}
		/* compact away dangling edges (or report the first one) */
		int64_t		k = 0;

		for (int64_t e = 0; e < m; e++)
		{
			if (esrc[e] < 0 || edst[e] < 0)
			{
				if (!in->skip_dangling)
				{
					bad = e;
					break;
				}
				continue;
			}
			if (in->weight)
			{
				float		wv = in->weight[e];

				if (!isfinite(wv))
				{
					if (err)
					{
						err->row = e;
						err->id = in->src[e];
					}
					FAIL(GNN_ERR_BAD_VALUE, "edge %lld -> %lld has weight %g",
						 (long long) in->src[e], (long long) in->dst[e], (double) wv);
				}
				ew[k] = wv;
			}
			esrc[k] = esrc[e];
			edst[k] = edst[e];
			k++;
		}
		if (bad >= 0)
		{
			int64_t		which = esrc[bad] < 0 ? in->src[bad] : in->dst[bad];

			if (err)
			{
				err->row = bad;
				err->id = which;
			}
			FAIL(GNN_ERR_DANGLING, "edge %lld -> %lld refers to node %lld, which is not in the node set",
				 (long long) in->src[bad], (long long) in->dst[bad], (long long) which);
		}
		if (in->undirected)
		{
			memcpy(esrc + k, edst, sizeof(int32_t) * k);
			memcpy(edst + k, esrc, sizeof(int32_t) * k);
			if (ew)
				memcpy(ew + k, ew, sizeof(float) * k);
			m2 = 2 * k;
		}
		else
			m2 = k;
	}

	/* 3. CSR and reverse CSR */
	{
		int64_t		mout = 0,
					rmout = 0;

		if ((status = build_csr(b->n, m2, esrc, edst, ew, &b->indptr, &b->indices, &b->weights,
								&mout, err)) != GNN_OK)
			goto done;
		if ((status = build_csr(b->n, m2, edst, esrc, ew, &b->rindptr, &b->rindices, &b->rweights,
								&rmout, err)) != GNN_OK)
			goto done;
		b->m = mout;
		if (rmout != mout)
			FAIL(GNN_ERR_INVALID, "internal error: CSR has %lld arcs, reverse CSR %lld",
				 (long long) mout, (long long) rmout);
	}
	free(esrc);
	free(edst);
	free(ew);
	esrc = edst = NULL;
	ew = NULL;

	/* 4. node data, reordered from node-table rows to internal order */
	if (in->node_ids && (in->feat_dim > 0 || in->labels || in->split))
	{
		rowpos = malloc(sizeof(int64_t) * (b->n ? b->n : 1));
		if (!rowpos)
			FAIL(GNN_ERR_NOMEM, "out of memory");
		for (int64_t r = 0; r < in->num_nodes; r++)
			rowpos[idmap_find(&map, in->node_ids[r])] = r;
	}
	if (in->feat_dim > 0)
	{
		int64_t		d = in->feat_dim;

		b->feat_kind = GNN_FEAT_DENSE;
		b->feat_dim = (int32_t) d;
		b->feat = malloc(sizeof(float) * b->n * d + 1);
		if (!b->feat)
			FAIL(GNN_ERR_NOMEM, "out of memory for %lld x %lld features", (long long) b->n, (long long) d);
		for (int64_t v = 0; v < b->n; v++)
		{
			const float *srcrow = in->feat + rowpos[v] * d;

			for (int64_t j = 0; j < d; j++)
				if (!isfinite(srcrow[j]))
				{
					if (err)
					{
						err->row = rowpos[v];
						err->id = b->ids[v];
					}
					FAIL(GNN_ERR_BAD_VALUE, "feature %lld of node %lld is %g",
						 (long long) j, (long long) b->ids[v], (double) srcrow[j]);
				}
			memcpy(b->feat + v * d, srcrow, sizeof(float) * d);
		}
	}
	else if (in->sparse_nnz > 0)
	{
		int64_t		nnz = in->sparse_nnz;
		int32_t		dim = in->sparse_dim;
		int32_t    *rowof = malloc(sizeof(int32_t) * nnz);

		if (!rowof)
			FAIL(GNN_ERR_NOMEM, "out of memory for %lld sparse features", (long long) nnz);
		int32_t		maxidx = -1;

		for (int64_t i = 0; i < nnz; i++)
		{
			int64_t		v = idmap_find(&map, in->sp_node[i]);
			const char *why = NULL;

			if (v < 0)
				why = "is not a node of the graph";
			else if (in->sp_index[i] < 0 || (dim > 0 && in->sp_index[i] >= dim))
				why = "has a feature index out of range";
			else if (!isfinite(in->sp_value[i]))
				why = "has a NaN or infinite value";
			if (why)
			{
				if (err)
				{
					err->row = i;
					err->id = in->sp_node[i];
				}
				free(rowof);
				FAIL(v < 0 ? GNN_ERR_DANGLING : GNN_ERR_BAD_VALUE,
					 "sparse feature (%lld, %d, %g) %s",
					 (long long) in->sp_node[i], in->sp_index[i], (double) in->sp_value[i], why);
			}
			rowof[i] = (int32_t) v;
			if (in->sp_index[i] > maxidx)
				maxidx = in->sp_index[i];
		}
		if (dim <= 0)
			dim = maxidx + 1;
		b->feat_kind = GNN_FEAT_SPARSE;
		b->feat_dim = dim;
		status = build_csr(b->n, nnz, rowof, in->sp_index, in->sp_value,
						   &b->fptr, &b->fidx, &b->fval, &b->feat_nnz, err);
		free(rowof);
		if (status != GNN_OK)
			goto done;
	}
	if (in->labels)
	{
		b->labels = malloc(sizeof(int32_t) * (b->n ? b->n : 1));
		if (!b->labels)
			FAIL(GNN_ERR_NOMEM, "out of memory");
		int32_t		maxl = -1;

		for (int64_t v = 0; v < b->n; v++)
		{
			int32_t		l = in->labels[rowpos[v]];

			b->labels[v] = l < 0 ? -1 : l;
			if (l >= 0)
				b->n_labelled++;
			if (l > maxl)
				maxl = l;
		}
		b->num_classes = maxl + 1;
	}
	if (in->split)
	{
		b->split = malloc(b->n ? b->n : 1);
		if (!b->split)
			FAIL(GNN_ERR_NOMEM, "out of memory");
		for (int64_t v = 0; v < b->n; v++)
		{
			uint8_t		s = in->split[rowpos[v]];

			b->split[v] = s <= GNN_SPLIT_TEST ? s : GNN_SPLIT_NONE;
			b->n_train += b->split[v] == GNN_SPLIT_TRAIN;
			b->n_val += b->split[v] == GNN_SPLIT_VAL;
			b->n_test += b->split[v] == GNN_SPLIT_TEST;
		}
	}

done:
	free(rowpos);
	free(esrc);
	free(edst);
	free(ew);
	idmap_free(&map);
	if (status != GNN_OK)
	{
		gnn_graph_builder_free(b);
		return status;
	}
	*out = b;
	return GNN_OK;
}

/* ------------------------------------------------------------------ layout */

#define ALIGN64(x) (((x) + 63) & ~(uint64_t) 63)

typedef struct layout
{
	uint64_t	off[13];
	uint64_t	total;
} layout;

/* order of arrays in the region */
enum
{
	L_IDS, L_INDPTR, L_INDICES, L_WEIGHTS, L_RINDPTR, L_RINDICES, L_RWEIGHTS,
	L_FEAT, L_FPTR, L_FIDX, L_FVAL, L_LABELS, L_SPLIT, L_COUNT
};

static void
compute_layout(const gnn_graph_builder *b, layout *l)
{
	uint64_t	sz[L_COUNT] = {0};
	uint64_t	n = b->n,
				m = b->m;

	sz[L_IDS] = 8 * n;
	sz[L_INDPTR] = 8 * (n + 1);
	sz[L_INDICES] = 4 * m;
	sz[L_WEIGHTS] = b->weights ? 4 * m : 0;
	sz[L_RINDPTR] = 8 * (n + 1);
	sz[L_RINDICES] = 4 * m;
	sz[L_RWEIGHTS] = b->rweights ? 4 * m : 0;
	sz[L_FEAT] = b->feat_kind == GNN_FEAT_DENSE ? 4 * n * (uint64_t) b->feat_dim : 0;
	sz[L_FPTR] = b->feat_kind == GNN_FEAT_SPARSE ? 8 * (n + 1) : 0;
	sz[L_FIDX] = b->feat_kind == GNN_FEAT_SPARSE ? 4 * (uint64_t) b->feat_nnz : 0;
	sz[L_FVAL] = b->feat_kind == GNN_FEAT_SPARSE ? 4 * (uint64_t) b->feat_nnz : 0;
	sz[L_LABELS] = b->labels ? 4 * n : 0;
	sz[L_SPLIT] = b->split ? n : 0;

	uint64_t	pos = ALIGN64(sizeof(gnn_graph_header));

	for (int i = 0; i < L_COUNT; i++)
	{
		/* arrays that exist get an offset even when empty, so "absent" stays 0 */
		bool		present = sz[i] > 0 ||
			i == L_IDS || i == L_INDPTR || i == L_INDICES || i == L_RINDPTR || i == L_RINDICES ||
			(i == L_FPTR && b->feat_kind == GNN_FEAT_SPARSE) ||
			((i == L_FIDX || i == L_FVAL) && b->feat_kind == GNN_FEAT_SPARSE);

		l->off[i] = present ? pos : 0;
		pos = ALIGN64(pos + sz[i]);
	}
	l->total = pos;
}

uint64_t
gnn_graph_size(const gnn_graph_builder *b)
{
	layout		l;

	compute_layout(b, &l);
	return l.total;
}

static uint64_t
header_checksum(const gnn_graph_header *h)
{
	/* FNV-1a over the header bytes before the checksum field */
	const unsigned char *p = (const unsigned char *) h;
	uint64_t	x = 0xcbf29ce484222325ULL;

	for (size_t i = 0; i < offsetof(gnn_graph_header, checksum); i++)
	{
		x ^= p[i];
		x *= 0x100000001b3ULL;
	}
	return x;
}

gnn_status
gnn_graph_write(const gnn_graph_builder *b, void *region, uint64_t size, gnn_error *err)
{
	layout		l;
	char	   *base = region;

	compute_layout(b, &l);
	if (size < l.total)
		return gnn_error_set(err, GNN_ERR_INVALID, "region of %llu bytes is smaller than the %llu the graph needs",
							 (unsigned long long) size, (unsigned long long) l.total);
	gnn_graph_header *h = region;

	memset(h, 0, sizeof(*h));
	h->magic = GNN_GRAPH_MAGIC;
	h->version = GNN_GRAPH_VERSION;
	h->total_bytes = l.total;
	h->num_nodes = b->n;
	h->num_edges = b->m;
	h->feat_nnz = b->feat_nnz;
	h->n_train = b->n_train;
	h->n_val = b->n_val;
	h->n_test = b->n_test;
	h->n_labelled = b->n_labelled;
	h->feat_kind = b->feat_kind;
	h->feat_dim = b->feat_dim;
	h->num_classes = b->num_classes;
	h->weighted = b->weights != NULL;
	h->off_ids = l.off[L_IDS];
	h->off_indptr = l.off[L_INDPTR];
	h->off_indices = l.off[L_INDICES];
	h->off_weights = l.off[L_WEIGHTS];
	h->off_rindptr = l.off[L_RINDPTR];
	h->off_rindices = l.off[L_RINDICES];
	h->off_rweights = l.off[L_RWEIGHTS];
	h->off_feat = l.off[L_FEAT];
	h->off_fptr = l.off[L_FPTR];
	h->off_fidx = l.off[L_FIDX];
	h->off_fval = l.off[L_FVAL];
	h->off_labels = l.off[L_LABELS];
	h->off_split = l.off[L_SPLIT];

	uint64_t	n = b->n,
				m = b->m;

#define PUT(off, ptr, bytes) do { if ((off) && (bytes) > 0) memcpy(base + (off), (ptr), (bytes)); } while (0)
	PUT(h->off_ids, b->ids, 8 * n);
	PUT(h->off_indptr, b->indptr, 8 * (n + 1));
	PUT(h->off_indices, b->indices, 4 * m);
	PUT(h->off_weights, b->weights, 4 * m);
	PUT(h->off_rindptr, b->rindptr, 8 * (n + 1));
	PUT(h->off_rindices, b->rindices, 4 * m);
	PUT(h->off_rweights, b->rweights, 4 * m);
	PUT(h->off_feat, b->feat, 4 * n * (uint64_t) b->feat_dim);
	PUT(h->off_fptr, b->fptr, 8 * (n + 1));
	PUT(h->off_fidx, b->fidx, 4 * (uint64_t) b->feat_nnz);
	PUT(h->off_fval, b->fval, 4 * (uint64_t) b->feat_nnz);
	PUT(h->off_labels, b->labels, 4 * n);
	PUT(h->off_split, b->split, n);
#undef PUT
	h->checksum = header_checksum(h);
	return GNN_OK;
}

/* ------------------------------------------------------------------ attach */

static bool
span_ok(uint64_t off, uint64_t bytes, uint64_t size)
{
	return off >= sizeof(gnn_graph_header) && off <= size && bytes <= size - off;
}

gnn_status
gnn_graph_attach(const void *region, uint64_t size, gnn_graph *g, gnn_error *err)
{
	const gnn_graph_header *h = region;
	const char *base = region;

	memset(g, 0, sizeof(*g));
	if (!region || size < sizeof(gnn_graph_header))
		return gnn_error_set(err, GNN_ERR_CORRUPT, "graph region is missing or too small");
	if (h->magic != GNN_GRAPH_MAGIC || h->version != GNN_GRAPH_VERSION)
		return gnn_error_set(err, GNN_ERR_CORRUPT, "graph region has a bad magic number or version");
	if (h->checksum != header_checksum(h) || h->total_bytes > size)
		return gnn_error_set(err, GNN_ERR_CORRUPT, "graph region header is corrupt");

	uint64_t	n = h->num_nodes,
				m = h->num_edges;

	if (h->num_nodes < 0 || h->num_edges < 0 || h->feat_nnz < 0 || h->feat_dim < 0 ||
		!span_ok(h->off_ids, 8 * n, size) ||
		!span_ok(h->off_indptr, 8 * (n + 1), size) ||
		!span_ok(h->off_indices, 4 * m, size) ||
		!span_ok(h->off_rindptr, 8 * (n + 1), size) ||
		!span_ok(h->off_rindices, 4 * m, size) ||
		(h->off_weights && !span_ok(h->off_weights, 4 * m, size)) ||
		(h->off_rweights && !span_ok(h->off_rweights, 4 * m, size)) ||
		(h->off_feat && !span_ok(h->off_feat, 4 * n * (uint64_t) h->feat_dim, size)) ||
		(h->off_fptr && !span_ok(h->off_fptr, 8 * (n + 1), size)) ||
		(h->off_fidx && !span_ok(h->off_fidx, 4 * (uint64_t) h->feat_nnz, size)) ||
		(h->off_fval && !span_ok(h->off_fval, 4 * (uint64_t) h->feat_nnz, size)) ||
		(h->off_labels && !span_ok(h->off_labels, 4 * n, size)) ||
		(h->off_split && !span_ok(h->off_split, n, size)))
		return gnn_error_set(err, GNN_ERR_CORRUPT, "graph region arrays fall outside the region");

	g->num_nodes = h->num_nodes;
	g->num_edges = h->num_edges;
	g->ids = (const int64_t *) (base + h->off_ids);
	g->indptr = (const int64_t *) (base + h->off_indptr);
	g->indices = (const int32_t *) (base + h->off_indices);
	g->weights = h->off_weights ? (const float *) (base + h->off_weights) : NULL;
	g->rindptr = (const int64_t *) (base + h->off_rindptr);
	g->rindices = (const int32_t *) (base + h->off_rindices);
	g->rweights = h->off_rweights ? (const float *) (base + h->off_rweights) : NULL;
	g->feat_kind = h->feat_kind;
	g->feat_dim = h->feat_dim;
	g->feat_nnz = h->feat_nnz;
	g->feat = h->off_feat ? (const float *) (base + h->off_feat) : NULL;
	g->fptr = h->off_fptr ? (const int64_t *) (base + h->off_fptr) : NULL;
	g->fidx = h->off_fidx ? (const int32_t *) (base + h->off_fidx) : NULL;
	g->fval = h->off_fval ? (const float *) (base + h->off_fval) : NULL;
	g->num_classes = h->num_classes;
	g->labels = h->off_labels ? (const int32_t *) (base + h->off_labels) : NULL;
	g->split = h->off_split ? (const uint8_t *) (base + h->off_split) : NULL;
	g->n_train = h->n_train;
	g->n_val = h->n_val;
	g->n_test = h->n_test;
	return GNN_OK;
}

int64_t
gnn_graph_find(const gnn_graph *g, int64_t id)
{
	int64_t		lo = 0,
				hi = g->num_nodes;

	while (lo < hi)
	{
		int64_t		mid = lo + (hi - lo) / 2;

		if (g->ids[mid] < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return (lo < g->num_nodes && g->ids[lo] == id) ? lo : -1;
}

gnn_status
gnn_graph_build_region(const gnn_graph_input *in, void **region, uint64_t *size,
					   gnn_graph *g, gnn_error *err)
{
	gnn_graph_builder *b = NULL;
	gnn_status	st = gnn_graph_build(in, &b, err);

	*region = NULL;
	*size = 0;
	if (st != GNN_OK)
		return st;
	uint64_t	sz = gnn_graph_size(b);
	void	   *r = aligned_alloc(64, ALIGN64(sz));

	if (!r)
	{
		gnn_graph_builder_free(b);
		return gnn_error_set(err, GNN_ERR_NOMEM, "out of memory for a %llu-byte graph",
							 (unsigned long long) sz);
	}
	st = gnn_graph_write(b, r, sz, err);
	gnn_graph_builder_free(b);
	if (st == GNN_OK)
		st = gnn_graph_attach(r, sz, g, err);
	if (st != GNN_OK)
	{
		free(r);
		return st;
	}
	*region = r;
	*size = sz;
	return GNN_OK;
}
