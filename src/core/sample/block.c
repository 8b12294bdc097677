/*
 * block.c: blocks (bipartite CSRs) and input features on a backend.
 *
 * Every device CSR carries its transpose, built here on the host with a
 * counting sort (stable, so each transposed row lists destinations in
 * ascending order): the backward products walk it gather-style, which keeps
 * them free of atomics and bit-for-bit repeatable.  Inference blocks
 * (gnn_dblock_create_forward) skip the transposes and the CSR their model
 * does not read.
 *
 * Self-loop policy: graph.c keeps self loops as given and the dataset
 * loader drops them; GCN and GAT need exactly one self loop per
 * destination, so gnn_dblock_create adds one to every destination row that
 * lacks one (PyG's add_remaining_self_loops) in the "loop" CSR, and GraphSAGE
 * (root weight separate) uses the raw block.
 *
 * GCN normalisation: by default the degrees are the block's own row and
 * column sums after adding the self loops, which is the whole graph's
 * normalisation when the block is the whole graph.  A block cut out of a
 * graph (a k-hop neighbourhood) passes the graph's degrees instead
 * (gnn_dblock_create_normed, gnn_graph_gcn_degree): a source's column sum
 * in the block misses its edges to nodes outside it.
 */
#include "nn/model.h"
#include "sample/sample.h"
#include "../../../kernels/relabel_math.h"	/* the loop row, shared with the GPU builder */

#include <math.h>
#include <stdlib.h>
#include <string.h>

void
gnn_block_from_graph(const gnn_graph *g, gnn_block *blk)
{
	blk->n_dst = g->num_nodes;
	blk->n_src = g->num_nodes;
	blk->nnz = g->num_edges;
	blk->indptr = g->rindptr;
	blk->indices = g->rindices;
	blk->weights = g->rweights;
	blk->etypes = g->rarc_type;
	blk->dst_ntype = g->node_type;
}

/*
 * Sum a sorted neighbour list's weights with the self loop added where v has
 * none, in list order: the order in which gnn_dblock_create sums the whole
 * graph's block, row by row (in-edges) or down a column (out-edges), so the
 * double comes out bit for bit the same.  In a typed graph a row may hold the
 * same neighbour more than once (one arc per relation): every arc counts,
 * and the search for the first arc to v or beyond finds any self loop, as
 * all arcs to v sit together from there.
 */
double
gnn_graph_gcn_degree(const gnn_graph *g, int64_t v, bool in)
{
	const int32_t *nb;
	const float *w;
	int64_t		deg = in ? gnn_graph_in_row(g, v, &nb, &w) : gnn_graph_out_row(g, v, &nb, &w, NULL),
				lo = gnn_row_lower_bound(nb, deg, v);	/* the first neighbour >= v */
	double		s = 0;
	bool		placed = false;

	if (!w)						/* sums of ones are exact */
		return (double) deg + ((lo < deg && nb[lo] == v) ? 0.0 : 1.0);
	for (int64_t k = 0; k < deg; k++)
	{
		if (!placed && k == lo && nb[k] != v)
		{
			s += 1.0f;
			placed = true;
		}
		s += w[k];
	}
	if (!placed && !(lo < deg && nb[lo] == v))
		s += 1.0f;
	return s;
}

void
gnn_dcsr_free(gnn_dcsr *d)
{
	if (!d)
		return;
	for (int i = 0; i < 6; i++)
		if (d->be)
			gnn_backend_free(d->be, d->mem[i]);
	memset(d, 0, sizeof(*d));
}

/*
 * The CSR on the backend; with_t adds the transpose.  borrow (CPU backend
 * only, where host memory is device memory) points the CSR at the caller's
 * arrays instead of copying them: they must outlive it.
 */
static gnn_status
dcsr_make(gnn_backend *be, int64_t n_rows, int64_t n_cols, int64_t nnz, const int64_t *indptr,
		  const int32_t *indices, const float *values, bool with_t, bool borrow, gnn_dcsr *out,
		  gnn_error *err)
{
	int64_t    *tptr = NULL,
			   *tperm = NULL,
			   *fill = NULL;
	int32_t    *tidx = NULL;
	gnn_status	st = GNN_OK;

	memset(out, 0, sizeof(*out));
	out->be = be;
	if (n_rows < 0 || n_cols < 0 || nnz < 0 || indptr[0] != 0 || indptr[n_rows] != nnz)
		return gnn_error_set(err, GNN_ERR_INVALID, "inconsistent CSR (%lld x %lld, %lld entries)",
							 (long long) n_rows, (long long) n_cols, (long long) nnz);
	for (int64_t e = 0; e < nnz; e++)
		if (indices[e] < 0 || indices[e] >= n_cols)
			return gnn_error_set(err, GNN_ERR_INVALID, "CSR column %d out of range [0, %lld)",
								 indices[e], (long long) n_cols);
	out->csr.n_rows = n_rows;
	out->csr.n_cols = n_cols;
	out->csr.nnz = nnz;
	if (borrow)
	{
		out->csr.indptr = indptr;
		out->csr.indices = indices;
		out->csr.values = values;
		return GNN_OK;
	}
	if ((st = gnn_dev_upload(be, indptr, sizeof(int64_t) * (n_rows + 1), &out->mem[0], err)) ||
		(st = gnn_dev_upload(be, indices, sizeof(int32_t) * nnz, &out->mem[1], err)) ||
		(values && (st = gnn_dev_upload(be, values, sizeof(float) * nnz, &out->mem[2], err))))
		goto done;
	out->csr.indptr = out->mem[0];
	out->csr.indices = out->mem[1];
	out->csr.values = out->mem[2];
	if (!with_t)
		return GNN_OK;

	tptr = calloc(n_cols + 1, sizeof(int64_t));
	fill = malloc(sizeof(int64_t) * (n_cols + 1));
	tidx = malloc(sizeof(int32_t) * (nnz + 1));
	tperm = malloc(sizeof(int64_t) * (nnz + 1));
	if (!tptr || !fill || !tidx || !tperm)
	{
		st = gnn_error_set(err, GNN_ERR_NOMEM, "out of memory transposing a CSR with %lld entries",
						   (long long) nnz);
		goto done;
	}
	for (int64_t e = 0; e < nnz; e++)
		tptr[indices[e] + 1]++;
	for (int64_t j = 0; j < n_cols; j++)
		tptr[j + 1] += tptr[j];
	memcpy(fill, tptr, sizeof(int64_t) * (n_cols + 1));
	for (int64_t i = 0; i < n_rows; i++)
		for (int64_t e = indptr[i]; e < indptr[i + 1]; e++)
		{
			int64_t		p = fill[indices[e]]++;

			tidx[p] = (int32_t) i;
			tperm[p] = e;
		}
	if ((st = gnn_dev_upload(be, tptr, sizeof(int64_t) * (n_cols + 1), &out->mem[3], err)) ||
		(st = gnn_dev_upload(be, tidx, sizeof(int32_t) * nnz, &out->mem[4], err)) ||
		(st = gnn_dev_upload(be, tperm, sizeof(int64_t) * nnz, &out->mem[5], err)))
		goto done;
	out->csr.t_indptr = out->mem[3];
	out->csr.t_indices = out->mem[4];
	out->csr.t_perm = out->mem[5];
done:
	free(tptr);
	free(fill);
	free(tidx);
	free(tperm);
	if (st != GNN_OK)
		gnn_dcsr_free(out);
	return st;
}

gnn_status
gnn_dcsr_create(gnn_backend *be, int64_t n_rows, int64_t n_cols, int64_t nnz,
				const int64_t *indptr, const int32_t *indices, const float *values,
				gnn_dcsr *out, gnn_error *err)
{
	return dcsr_make(be, n_rows, n_cols, nnz, indptr, indices, values, true, false, out, err);
}

void
gnn_dblock_free(gnn_dblock *b)
{
	if (!b)
		return;
	gnn_dcsr_free(&b->raw);
	gnn_dcsr_free(&b->loop);
	for (int32_t r = 0; b->rel && r < b->num_rel; r++)
	{
		gnn_dcsr_free(&b->rel[r].a);
		gnn_backend_free(b->be, b->rel[r].rows);
		gnn_backend_free(b->be, b->rel[r].cols);
	}
	for (int32_t t = 0; b->trows && t < b->num_ntypes; t++)
		gnn_backend_free(b->be, b->trows[t].rows);
	if (b->be)
		gnn_backend_free(b->be, b->ntype);
	free(b->rel);
	free(b->trows);
	b->rel = NULL;
	b->trows = NULL;
	b->ntype = NULL;
	b->num_rel = b->num_ntypes = 0;
}

/*
 * Relation r's CSR over compacted rows and columns.  ent lists the block
 * entries of relation r in block order (by row, then column); colmap is
 * n_src int32s of -1, left so.  A relation that touches at least half the
 * rows (columns) keeps them all: the empty rows cost less than the scatter.
 */
static gnn_status
rel_make(gnn_backend *be, const gnn_block *blk, const int64_t *ent, int64_t cnt, bool with_t,
		 int32_t *colmap, gnn_drel *out, gnn_error *err)
{
	int64_t		nd = blk->n_dst,
				ns = blk->n_src,
				nrow = 0,
				ncol = 0;
	int32_t    *rows = malloc(sizeof(int32_t) * (cnt + 1));
	int32_t    *cols = malloc(sizeof(int32_t) * (cnt + 1));
	int32_t    *idx = malloc(sizeof(int32_t) * (cnt + 1));
	float	   *val = blk->weights ? malloc(sizeof(float) * (cnt + 1)) : NULL;
	int64_t    *ptr = NULL;
	int32_t    *row_of = NULL;
	bool		all_rows,
				all_cols;
	gnn_status	st = GNN_OK;

	if (!rows || !cols || !idx || (blk->weights && !val))
	{
		st = gnn_error_set(err, GNN_ERR_NOMEM, "out of memory preparing a relation");
		goto done;
	}
	/* distinct rows (entries come by row) and columns */
	for (int64_t k = 0; k < cnt; k++)
	{
		int64_t		e = ent[k];
		int32_t		j = blk->indices[e];

		if (colmap[j] < 0)
		{
			colmap[j] = 0;
			cols[ncol++] = j;
		}
	}
	gnn_sort_i32(cols, ncol);
	all_cols = 2 * ncol >= ns;
	for (int64_t q = 0; q < ncol; q++)
		colmap[cols[q]] = all_cols ? cols[q] : (int32_t) q;
	{
		int64_t		i = 0;

		/* the block row of each entry: walk the row pointers along */
		row_of = malloc(sizeof(int32_t) * (cnt + 1));
		if (!row_of)
		{
			st = gnn_error_set(err, GNN_ERR_NOMEM, "out of memory preparing a relation");
			goto done;
		}
		for (int64_t k = 0; k < cnt; k++)
		{
			while (blk->indptr[i + 1] <= ent[k])
				i++;
			row_of[k] = (int32_t) i;
			if (nrow == 0 || rows[nrow - 1] != i)
				rows[nrow++] = (int32_t) i;
		}
	}
	all_rows = 2 * nrow >= nd;
	out->nd = all_rows ? nd : nrow;
	out->ns = all_cols ? ns : ncol;
	ptr = calloc(out->nd + 1, sizeof(int64_t));
	if (!ptr)
	{
		st = gnn_error_set(err, GNN_ERR_NOMEM, "out of memory preparing a relation");
		goto done;
	}
	for (int64_t k = 0, rk = -1; k < cnt; k++)
	{
		int64_t		e = ent[k];

		if (!all_rows && (k == 0 || row_of[k] != row_of[k - 1]))
			rk++;
		ptr[(all_rows ? row_of[k] : rk) + 1]++;
		idx[k] = colmap[blk->indices[e]];
		if (val)
			val[k] = blk->weights[e];
	}
	for (int64_t i = 0; i < out->nd; i++)
		ptr[i + 1] += ptr[i];
	st = dcsr_make(be, out->nd, out->ns, cnt, ptr, idx, val, with_t, false, &out->a, err);
	if (st == GNN_OK && !all_rows)
		st = gnn_dev_upload(be, rows, sizeof(int32_t) * nrow, (void **) &out->rows, err);
	if (st == GNN_OK && !all_cols)
		st = gnn_dev_upload(be, cols, sizeof(int32_t) * ncol, (void **) &out->cols, err);
done:
	for (int64_t q = 0; q < ncol; q++)
		colmap[cols[q]] = -1;
	free(rows);
	free(cols);
	free(idx);
	free(val);
	free(ptr);
	free(row_of);
	return st;
}

/* the per-relation CSRs and the destinations of each node type */
static gnn_status
typed_make(gnn_backend *be, const gnn_block *blk, bool with_t, gnn_dblock *out, gnn_error *err)
{
	int64_t		nd = blk->n_dst,
				nnz = blk->nnz;
	int64_t    *start = NULL,
			   *ent = NULL;
	int32_t    *colmap = NULL,
			   *host = NULL;
	int32_t		R = 0,
				T = 0;
	gnn_status	st = GNN_OK;

	out->be = be;
	for (int64_t e = 0; blk->etypes && e < nnz; e++)
	{
		if (blk->etypes[e] < 0 || blk->etypes[e] >= GNN_MAX_EDGE_TYPES)
			return gnn_error_set(err, GNN_ERR_INVALID, "block entry %lld has relation %d (accepted: [0, %d))",
								 (long long) e, blk->etypes[e], GNN_MAX_EDGE_TYPES);
		R = blk->etypes[e] + 1 > R ? blk->etypes[e] + 1 : R;
	}
	for (int64_t i = 0; blk->dst_ntype && i < nd; i++)
	{
		if (blk->dst_ntype[i] < 0 || blk->dst_ntype[i] >= GNN_MAX_NODE_TYPES)
			return gnn_error_set(err, GNN_ERR_INVALID, "block destination %lld has node type %d (accepted: [0, %d))",
								 (long long) i, blk->dst_ntype[i], GNN_MAX_NODE_TYPES);
		T = blk->dst_ntype[i] + 1 > T ? blk->dst_ntype[i] + 1 : T;
	}
	if (blk->etypes)
		R = R > 0 ? R : 1;		/* typed but empty: relation 0, no entry */
	if (blk->dst_ntype)
		T = T > 0 ? T : 1;
	if (R > 0)
	{
		/* entries grouped by relation, in block order within one (a counting sort) */
		start = calloc(R + 1, sizeof(int64_t));
		ent = malloc(sizeof(int64_t) * (nnz + 1));
		colmap = malloc(sizeof(int32_t) * (blk->n_src + 1));
		out->rel = calloc(R, sizeof(gnn_drel));
		if (!start || !ent || !colmap || !out->rel)
		{
			st = gnn_error_set(err, GNN_ERR_NOMEM, "out of memory preparing a typed block");
			goto done;
		}
		out->num_rel = R;
		for (int64_t e = 0; e < nnz; e++)
			start[blk->etypes[e] + 1]++;
		for (int32_t r = 0; r < R; r++)
			start[r + 1] += start[r];
		for (int64_t e = 0, *fill = start; e < nnz; e++)
			ent[fill[blk->etypes[e]]++] = e;
		/* fill advanced each start to the next: shift back */
		for (int32_t r = R; r > 0; r--)
			start[r] = start[r - 1];
		start[0] = 0;
		for (int64_t j = 0; j < blk->n_src; j++)
			colmap[j] = -1;
		for (int32_t r = 0; r < R && st == GNN_OK; r++)
			if (start[r + 1] > start[r])
				st = rel_make(be, blk, ent + start[r], start[r + 1] - start[r], with_t, colmap,
							  &out->rel[r], err);
		if (st != GNN_OK)
			goto done;
	}
	if (T > 0)
	{
		host = malloc(sizeof(int32_t) * (nd + 1));
		out->trows = calloc(T, sizeof(gnn_drows));
		if (!host || !out->trows)
		{
			st = gnn_error_set(err, GNN_ERR_NOMEM, "out of memory preparing a typed block");
			goto done;
		}
		out->num_ntypes = T;
		for (int64_t i = 0; i < nd; i++)
			host[i] = blk->dst_ntype[i];
		if ((st = gnn_dev_upload(be, host, sizeof(int32_t) * nd, (void **) &out->ntype, err)) != GNN_OK)
			goto done;
		for (int32_t t = 0; t < T && st == GNN_OK; t++)
		{
			int64_t		k = 0;

			for (int64_t i = 0; i < nd; i++)
				if (blk->dst_ntype[i] == t)
					host[k++] = (int32_t) i;
			out->trows[t].n = k;
			if (k > 0 && k < nd)
				st = gnn_dev_upload(be, host, sizeof(int32_t) * k, (void **) &out->trows[t].rows, err);
		}
	}
done:
	free(start);
	free(ent);
	free(colmap);
	free(host);
	return st;
}

gnn_status
gnn_dblock_create(gnn_backend *be, const gnn_block *blk, gnn_dblock *out, gnn_error *err)
{
	return gnn_dblock_create_normed(be, blk, NULL, NULL, out, err);
}

/*
 * The self-looped CSR with symmetric normalisation (degrees from deg_dst /
 * deg_src, or the block's own sums where NULL), as three malloc'd arrays.
 */
static gnn_status
loop_csr(const gnn_block *blk, const double *deg_dst, const double *deg_src, int64_t **lptr_out,
		 int32_t **lidx_out, float **lval_out, gnn_error *err)
{
	int64_t		nd = blk->n_dst,
				ns = blk->n_src;
	int64_t    *lptr = malloc(sizeof(int64_t) * (nd + 1));
	int32_t    *lidx = malloc(sizeof(int32_t) * (blk->nnz + nd + 1));
	float	   *lval = malloc(sizeof(float) * (blk->nnz + nd + 1));
	double	   *ddst = NULL,
			   *dsrc = NULL;

	*lptr_out = lptr;
	*lidx_out = lidx;
	*lval_out = lval;
	if (!deg_dst)
		ddst = calloc(nd + 1, sizeof(double));
	if (!deg_src)
		dsrc = calloc(ns + 1, sizeof(double));
	if (!lptr || !lidx || !lval || (!deg_dst && !ddst) || (!deg_src && !dsrc))
	{
		free(ddst);
		free(dsrc);
		return gnn_error_set(err, GNN_ERR_NOMEM, "out of memory preparing a block");
	}
	lptr[0] = 0;
	for (int64_t i = 0; i < nd; i++)
	{
		gnn_b_loop_row(blk->indptr, blk->indices, blk->weights, i, lidx + lptr[i], lval + lptr[i]);
		lptr[i + 1] = lptr[i] + gnn_b_loop_count(blk->indptr, blk->indices, i);
	}
	if (ddst || dsrc)
		for (int64_t i = 0; i < nd; i++)
			for (int64_t e = lptr[i]; e < lptr[i + 1]; e++)
			{
				if (ddst)
					ddst[i] += lval[e];
				if (dsrc)
					dsrc[lidx[e]] += lval[e];
			}
	for (int64_t i = 0; i < nd; i++)
		for (int64_t e = lptr[i]; e < lptr[i + 1]; e++)
		{
			double		dd = deg_dst ? deg_dst[i] : ddst[i],
						ds = deg_src ? deg_src[lidx[e]] : dsrc[lidx[e]];

			lval[e] = gnn_b_norm(lval[e], dd, ds);
		}
	free(ddst);
	free(dsrc);
	return GNN_OK;
}

static gnn_status
dblock_make(gnn_backend *be, const gnn_block *blk, const double *deg_dst, const double *deg_src,
			bool with_t, bool want_raw, bool want_loop, bool want_typed, gnn_dblock *out,
			gnn_error *err)
{
	int64_t		nd = blk->n_dst,
				ns = blk->n_src;
	int64_t    *lptr = NULL;
	int32_t    *lidx = NULL;
	float	   *lval = NULL;
	bool		borrow = !with_t && be->ops == gnn_backend_cpu();	/* host memory */
	gnn_status	st = GNN_OK;

	memset(out, 0, sizeof(*out));
	out->be = be;
	if (nd < 0 || ns < nd || blk->nnz < 0)
		return gnn_error_set(err, GNN_ERR_INVALID,
							 "block needs 0 <= n_dst <= n_src (got %lld destinations, %lld sources)",
							 (long long) nd, (long long) ns);
	out->n_dst = nd;
	out->n_src = ns;
	if (want_raw &&
		(st = dcsr_make(be, nd, ns, blk->nnz, blk->indptr, blk->indices, blk->weights, with_t,
						borrow, &out->raw, err)) != GNN_OK)
		return st;
	if (want_loop &&
		(st = loop_csr(blk, deg_dst, deg_src, &lptr, &lidx, &lval, err)) == GNN_OK)
		st = dcsr_make(be, nd, ns, lptr[nd], lptr, lidx, lval, with_t, false, &out->loop, err);
	if (st == GNN_OK && want_typed && (blk->etypes || blk->dst_ntype))
		st = typed_make(be, blk, with_t, out, err);
	free(lptr);
	free(lidx);
	free(lval);
	if (st != GNN_OK)
		gnn_dblock_free(out);
	return st;
}

gnn_status
gnn_dblock_create_normed(gnn_backend *be, const gnn_block *blk, const double *deg_dst,
						 const double *deg_src, gnn_dblock *out, gnn_error *err)
{
	return dblock_make(be, blk, deg_dst, deg_src, true, true, true, true, out, err);
}

gnn_status
gnn_dblock_create_for(gnn_backend *be, const gnn_block *blk, gnn_model_kind kind, gnn_dblock *out, gnn_error *err)
{
	bool		sage = kind == GNN_MODEL_SAGE;

	return dblock_make(be, blk, NULL, NULL, true, true, !sage, true, out, err);
}

gnn_status
gnn_dblock_create_forward(gnn_backend *be, const gnn_block *blk, gnn_model_kind kind,
						  const double *deg_dst, const double *deg_src, gnn_dblock *out,
						  gnn_error *err)
{
	bool		sage = kind == GNN_MODEL_SAGE;
	bool		rel = kind == GNN_MODEL_RGCN || kind == GNN_MODEL_HSAGE;

	/* a relational model on an untyped block reads raw as relation 0 */
	return dblock_make(be, blk, deg_dst, deg_src, false, sage || (rel && !blk->etypes),
					   !sage && !rel, rel, out, err);
}

/* ------------------------------------------------------------------ features */

void
gnn_dfeat_free(gnn_dfeat *f)
{
	if (!f)
		return;
	gnn_dcsr_free(&f->sp);
	gnn_tensor_free(&f->dense);
	memset(f, 0, sizeof(*f));
}

gnn_status
gnn_dfeat_dense(gnn_backend *be, const float *host, int64_t rows, int32_t dim,
				gnn_dfeat *out, gnn_error *err)
{
	gnn_status	st;

	memset(out, 0, sizeof(*out));
	out->rows = rows;
	out->dim = dim;
	st = gnn_tensor_alloc(be, rows, dim, &out->dense, err);
	if (st == GNN_OK)
		st = gnn_tensor_upload(&out->dense, host, err);
	if (st != GNN_OK)
		gnn_dfeat_free(out);
	return st;
}

gnn_status
gnn_dfeat_sparse(gnn_backend *be, int64_t rows, int32_t dim, const int64_t *ptr,
				 const int32_t *idx, const float *val, gnn_dfeat *out, gnn_error *err)
{
	float	   *ones = NULL;
	gnn_status	st;

	memset(out, 0, sizeof(*out));
	out->rows = rows;
	out->dim = dim;
	out->sparse = true;
	if (!val)
	{
		/* always carry values: dropout on sparse inputs rewrites them */
		ones = malloc(sizeof(float) * (ptr[rows] + 1));
		if (!ones)
			return gnn_error_set(err, GNN_ERR_NOMEM, "out of memory");
		for (int64_t e = 0; e < ptr[rows]; e++)
			ones[e] = 1.0f;
		val = ones;
	}
	st = gnn_dcsr_create(be, rows, dim, ptr[rows], ptr, idx, val, &out->sp, err);
	free(ones);
	return st;
}

gnn_status
gnn_dfeat_stream(gnn_backend *be, const gnn_graph *g, bool row_normalise, gnn_dfeat *out, gnn_error *err)
{
	if (g->feat_kind != GNN_FEAT_DENSE || !g->fstore)
		return gnn_dfeat_from_graph(be, g, row_normalise, out, err);
	memset(out, 0, sizeof(*out));
	out->rows = g->num_nodes;
	out->dim = g->feat_dim;
	out->stream = g;
	out->stream_norm = row_normalise;
	return GNN_OK;
}

gnn_status
gnn_dfeat_from_graph(gnn_backend *be, const gnn_graph *g, bool row_normalise,
					 gnn_dfeat *out, gnn_error *err)
{
	gnn_status	st;
	int64_t		n = g->num_nodes;

	memset(out, 0, sizeof(*out));
	if (g->feat_kind == GNN_FEAT_DENSE)
	{
		int64_t		d = g->feat_dim;
		float	   *x = malloc(sizeof(float) * (n * d + 1));

		if (!x)
			return gnn_error_set(err, GNN_ERR_NOMEM, "out of memory for features");
		if ((st = gnn_graph_feat_range(g, 0, n, x, err)) != GNN_OK)
		{
			free(x);
			return st;
		}
		if (row_normalise)
			gnn_normalise_rows(x, n, d, 1);
		st = gnn_dfeat_dense(be, x, n, (int32_t) d, out, err);
		free(x);
		return st;
	}
	if (g->feat_kind == GNN_FEAT_SPARSE)
	{
		int64_t		nnz = g->feat_nnz;
		float	   *v = malloc(sizeof(float) * (nnz + 1));

		if (!v)
			return gnn_error_set(err, GNN_ERR_NOMEM, "out of memory for features");
		for (int64_t e = 0; e < nnz; e++)
			v[e] = g->fval ? g->fval[e] : 1.0f;
		if (row_normalise)
			for (int64_t i = 0; i < n; i++)
			{
				double		s = 0;

				for (int64_t e = g->fptr[i]; e < g->fptr[i + 1]; e++)
					s += v[e];
				if (s != 0)
					for (int64_t e = g->fptr[i]; e < g->fptr[i + 1]; e++)
						v[e] = (float) (v[e] / s);
			}
		st = gnn_dfeat_sparse(be, n, g->feat_dim, g->fptr, g->fidx, v, out, err);
		free(v);
		return st;
	}
	return gnn_error_set(err, GNN_ERR_EMPTY, "the graph has no node features");
}
