/*
 * kernel_math.h: the per-thread bodies of the CUDA kernels, written as
 * GNN_HD functions (ops_math.h) so that they compile both as device code
 * (nvcc) and as plain C.  Each kernel in kernels/ (.cu files) only maps its thread
 * index to (row, lane) and calls one of these; test/core/test_kernel_math.c
 * runs the very same bodies on the host, emulating the launch geometry
 * (groups of g lanes per row, v floats per lane step, warp reductions as
 * folds over lanes), and compares them with the CPU backend.  That is how
 * the index math of the GPU backend is checked on machines without a GPU.
 *
 * Conventions:
 *  - "row body" functions compute every output element of one row that a
 *    lane owns: columns k = lane*v + s*g*v (s = 0, 1, ...), v in {1, 4};
 *    v = 4 is used only when the row length is a multiple of 4 and the
 *    arrays are 16-byte aligned, so a lane's 4 columns are one float4.
 *  - "partial" functions return a lane's share of a reduction over the
 *    entries e = e0 + lane, e0 + lane + g, ...; the kernel combines lanes
 *    with warp shuffles, the host test with a loop.
 *  - Summation over the entries of a row is in ascending entry order per
 *    output element, as in backend_cpu.c; where the CPU applies beta
 *    (spmm: after the sum, y = acc + beta*y; GAT / max backward: before,
 *    y = beta*y then +=) the bodies do the same, so only FMA contraction
 *    and expf differ between the two backends.
 */
#ifndef GNN_KERNEL_MATH_H
#define GNN_KERNEL_MATH_H

#include "base/ops_math.h"

#include <float.h>
#include <stdint.h>

#ifdef __CUDACC__
#define GNN_K_LOAD4(p, a) \
	do { float4 t_ = *(const float4 *) (p); \
		 (a)[0] = t_.x; (a)[1] = t_.y; (a)[2] = t_.z; (a)[3] = t_.w; } while (0)
#define GNN_K_STORE4(p, a) \
	do { *(float4 *) (p) = make_float4((a)[0], (a)[1], (a)[2], (a)[3]); } while (0)
#else
#define GNN_K_LOAD4(p, a) \
	do { const float *q_ = (p); \
		 (a)[0] = q_[0]; (a)[1] = q_[1]; (a)[2] = q_[2]; (a)[3] = q_[3]; } while (0)
#define GNN_K_STORE4(p, a) \
	do { float *q_ = (p); \
		 q_[0] = (a)[0]; q_[1] = (a)[1]; q_[2] = (a)[2]; q_[3] = (a)[3]; } while (0)
#endif

/* agg codes as backend.h's gnn_agg (kept as int so this header stands alone) */
#define GNN_K_AGG_MEAN 1

/* ------------------------------------------------------------------ helpers */

/* beta*y with y not read when beta == 0 (BLAS semantics) */
GNN_HD float
gnn_k_beta_init(float beta, const float *y)
{
	return beta == 0.0f ? 0.0f : beta * *y;
}

/* y[0..4) = acc + beta*y (spmm's order: sum the entries, then add the old y) */
GNN_HD void
gnn_k_beta_store4(float *y, const float *acc, float beta)
{
	float		o[4];

	if (beta == 0.0f)
		GNN_K_STORE4(y, acc);
	else
	{
		GNN_K_LOAD4(y, o);
		for (int q = 0; q < 4; q++)
			o[q] = acc[q] + beta * o[q];
		GNN_K_STORE4(y, o);
	}
}

/* spmm's row factor: row_scale[i] (1 if NULL), / deg_i for MEAN */
GNN_HD float
gnn_k_row_coef(const int64_t *indptr, int agg, const float *row_scale, int64_t i)
{
	float		rs = row_scale ? row_scale[i] : 1.0f;

	if (agg == GNN_K_AGG_MEAN)
	{
		int64_t		deg = indptr[i + 1] - indptr[i];

		if (deg > 0)
			rs /= (float) deg;
	}
	return rs;
}

/* coefficient of entry e = (i, j) of spmm given the row factor rs */
GNN_HD float
gnn_k_entry_coef(const float *values, int64_t e, float rs, const float *col_scale, int64_t j)
{
	return (values ? values[e] : 1.0f) * rs * (col_scale ? col_scale[j] : 1.0f);
}

/* smallest power of two >= x, capped at 32 (lanes per row group) */
GNN_HD int
gnn_k_group_lanes(int64_t x)
{
	int			g = 1;

	while (g < 32 && g < x)
		g <<= 1;
	return g;
}

/* ------------------------------------------------------------------ spmm */

/* Y[i, k] for the lane's columns: forward product over the rows of A */
GNN_HD void
gnn_k_spmm_row(const int64_t *indptr, const int32_t *indices, const float *values,
			   int agg, const float *row_scale, const float *col_scale,
			   const float *X, int64_t d, float beta, float *Y,
			   int64_t i, int lane, int g, int v)
{
	float		rs = gnn_k_row_coef(indptr, agg, row_scale, i);
	int64_t		e0 = indptr[i],
				e1 = indptr[i + 1];

	if (v == 4)
	{
		for (int64_t k = (int64_t) lane * 4; k < d; k += (int64_t) g * 4)
		{
			float		acc[4] = {0.0f, 0.0f, 0.0f, 0.0f},
						x[4];

			for (int64_t e = e0; e < e1; e++)
			{
				int64_t		j = indices[e];
				float		c = gnn_k_entry_coef(values, e, rs, col_scale, j);

				GNN_K_LOAD4(X + j * d + k, x);
				for (int q = 0; q < 4; q++)
					acc[q] += c * x[q];
			}
			gnn_k_beta_store4(Y + i * d + k, acc, beta);
		}
		return;
	}
	for (int64_t k = lane; k < d; k += g)
	{
		float		acc = 0.0f;

		for (int64_t e = e0; e < e1; e++)
		{
			int64_t		j = indices[e];

			acc += gnn_k_entry_coef(values, e, rs, col_scale, j) * X[j * d + k];
		}
		Y[i * d + k] = acc + gnn_k_beta_init(beta, Y + i * d + k);
	}
}

/* Y[j, k] of the transpose product, walking column j of A through the transpose */
GNN_HD void
gnn_k_spmm_t_row(const int64_t *indptr, const float *values, const int64_t *t_indptr,
				 const int32_t *t_indices, const int64_t *t_perm, int agg,
				 const float *row_scale, const float *col_scale,
				 const float *G, int64_t d, float beta, float *Y,
				 int64_t j, int lane, int g, int v)
{
	float		cs = col_scale ? col_scale[j] : 1.0f;
	int64_t		t0 = t_indptr[j],
				t1 = t_indptr[j + 1];

	if (v == 4)
	{
		for (int64_t k = (int64_t) lane * 4; k < d; k += (int64_t) g * 4)
		{
			float		acc[4] = {0.0f, 0.0f, 0.0f, 0.0f},
						x[4];

			for (int64_t t = t0; t < t1; t++)
			{
				int64_t		i = t_indices[t];
				int64_t		e = t_perm[t];
				float		c = (values ? values[e] : 1.0f) *
					gnn_k_row_coef(indptr, agg, row_scale, i) * cs;

				GNN_K_LOAD4(G + i * d + k, x);
				for (int q = 0; q < 4; q++)
					acc[q] += c * x[q];
			}
			gnn_k_beta_store4(Y + j * d + k, acc, beta);
		}
		return;
	}
	for (int64_t k = lane; k < d; k += g)
	{
		float		acc = 0.0f;

		for (int64_t t = t0; t < t1; t++)
		{
			int64_t		i = t_indices[t];
			int64_t		e = t_perm[t];
			float		c = (values ? values[e] : 1.0f) *
				gnn_k_row_coef(indptr, agg, row_scale, i) * cs;

			acc += c * G[i * d + k];
		}
		Y[j * d + k] = acc + gnn_k_beta_init(beta, Y + j * d + k);
	}
}

/* ------------------------------------------------------------------ rows */

/*
 * scatter_add_rows after a stable sort of (idx[k], k) by idx: position p of
 * the sorted arrays starts a run when its key differs from the previous one;
 * the run's lane sums its source rows into dst in ascending k (the order of
 * backend_cpu.c, so results are bit-identical).  Non-starting positions do
 * nothing.
 */
GNN_HD void
gnn_k_scatter_run(const uint32_t *keys, const int32_t *vals, int64_t n,
				  const float *src, int64_t d, float *dst, int64_t p, int lane, int g)
{
	uint32_t	key = keys[p];

	if (p > 0 && keys[p - 1] == key)
		return;
	for (int64_t k = lane; k < d; k += g)
	{
		float		acc = dst[(int64_t) key * d + k];

		for (int64_t q = p; q < n && keys[q] == key; q++)
			acc += src[(int64_t) vals[q] * d + k];
		dst[(int64_t) key * d + k] = acc;
	}
}

/* ------------------------------------------------------------------ column sums
 * out[q] = beta*out[q] + sum_i w(i, q) X[i, q], X is rows x cols, with
 * w(i, q) = ws[i*heads + q/f] (ws NULL: 1).  bias_grad is heads = 1, f = cols.
 * Pass 1: block (cx, r) sums rows [r*chunk, min(rows, (r+1)*chunk)) for its
 * columns, thread ty taking rows i0+ty, i0+ty+ny, ...; the ny thread sums
 * are added in ty order into partial[r*cols + q].  Pass 2 adds the partials
 * in r order.  Fixed partitioning: deterministic.
 */
#define GNN_K_COLSUM_TX 32		/* columns per block */
#define GNN_K_COLSUM_TY 8		/* row lanes per block */
#define GNN_K_COLSUM_MIN_CHUNK 256
#define GNN_K_COLSUM_MAX_CHUNKS 1024

/* the row partition: nchunks chunks of chunk rows (the last may be short), rows > 0 */
GNN_HD void
gnn_k_colsum_chunks(int64_t rows, int64_t *chunk, int64_t *nchunks)
{
	int64_t		nc = (rows + GNN_K_COLSUM_MIN_CHUNK - 1) / GNN_K_COLSUM_MIN_CHUNK;

	if (nc > GNN_K_COLSUM_MAX_CHUNKS)
		nc = GNN_K_COLSUM_MAX_CHUNKS;
	*chunk = (rows + nc - 1) / nc;
	*nchunks = (rows + *chunk - 1) / *chunk;
}

GNN_HD double
gnn_k_colsum_thread(const float *X, int64_t rows, int64_t cols, int64_t heads,
					int64_t f, const float *ws, int64_t q, int64_t i0, int64_t i1,
					int ty, int ny)
{
	double		acc = 0.0;

	(void) rows;
	for (int64_t i = i0 + ty; i < i1; i += ny)
	{
		float		x = X[i * cols + q];

		if (ws)
			acc += (double) ws[i * heads + q / f] * x;
		else
			acc += (double) x;
	}
	return acc;
}

GNN_HD void
gnn_k_colsum_finish(const double *partial, int64_t nchunks, int64_t cols, int64_t q,
					float beta, float *out)
{
	double		acc = 0.0;

	for (int64_t r = 0; r < nchunks; r++)
		acc += partial[r * cols + q];
	out[q] = (float) acc + (beta == 0.0f ? 0.0f : beta * out[q]);
}

/* ------------------------------------------------------------------ row softmax / loss */

/* lane's max over x[lane], x[lane+g], ...; starts at -FLT_MAX like the CPU */
GNN_HD float
gnn_k_max_partial(const float *x, int64_t c, int lane, int g)
{
	float		m = -FLT_MAX;

	for (int64_t k = lane; k < c; k += g)
		m = x[k] > m ? x[k] : m;
	return m;
}

/* (max, first argmax) of a lane; index 0 when nothing beats -FLT_MAX (as the CPU) */
GNN_HD void
gnn_k_argmax_partial(const float *x, int64_t c, int lane, int g, float *m, int64_t *am)
{
	*m = -FLT_MAX;
	*am = 0;
	for (int64_t k = lane; k < c; k += g)
		if (x[k] > *m)
		{
			*m = x[k];
			*am = k;
		}
}

/* combine two (max, argmax) pairs: larger value, smaller index on ties */
GNN_HD void
gnn_k_argmax_combine(float *m, int64_t *am, float m2, int64_t am2)
{
	if (m2 > *m || (m2 == *m && am2 < *am))
	{
		*m = m2;
		*am = am2;
	}
}

/* y[k] = expf(x[k] - m) for the lane's k; returns the lane's sum */
GNN_HD float
gnn_k_exp_partial(const float *x, float *y, int64_t c, float m, int lane, int g)
{
	float		s = 0.0f;

	for (int64_t k = lane; k < c; k += g)
	{
		float		v = expf(x[k] - m);

		if (y)
			y[k] = v;
		s += v;
	}
	return s;
}

GNN_HD void
gnn_k_scale_partial(float *y, int64_t c, float s, int lane, int g)
{
	for (int64_t k = lane; k < c; k += g)
		y[k] /= s;
}

/* d(mean loss)/dlogits of one counted row: (softmax - onehot) * inv */
GNN_HD void
gnn_k_xent_grad_partial(const float *x, float *gr, int64_t c, int32_t y, float m, float s,
						float inv, int lane, int g)
{
	for (int64_t k = lane; k < c; k += g)
		gr[k] = (expf(x[k] - m) / s - (k == y ? 1.0f : 0.0f)) * inv;
}

/* ------------------------------------------------------------------ GAT */

/* s[i*heads + h] = <H[i, h*f : h*f+f], att[h*f : h*f+f]>, sequential like the CPU */
GNN_HD float
gnn_k_gat_score(const float *H, int64_t heads, int64_t f, const float *att, int64_t i, int64_t h)
{
	const float *x = H + i * heads * f + h * f;
	const float *a = att + h * f;
	float		acc = 0.0f;

	for (int64_t k = 0; k < f; k++)
		acc += x[k] * a[k];
	return acc;
}

/* edge softmax, phase 1: lane's max of the logits of row i, head h */
GNN_HD float
gnn_k_esm_max_partial(const int64_t *indptr, const int32_t *indices, int64_t heads,
					  const float *a_src, const float *a_dst, float slope,
					  int64_t i, int64_t h, int lane, int g)
{
	float		m = -FLT_MAX,
				ad = a_dst[i * heads + h];

	for (int64_t e = indptr[i] + lane; e < indptr[i + 1]; e += g)
	{
		float		z = gnn_math_gat_logit(a_src[(int64_t) indices[e] * heads + h], ad, slope);

		m = z > m ? z : m;
	}
	return m;
}

/* phase 2: alpha = exp(logit - m), returns the lane's sum */
GNN_HD float
gnn_k_esm_exp_partial(const int64_t *indptr, const int32_t *indices, int64_t heads,
					  const float *a_src, const float *a_dst, float slope, float m,
					  float *alpha, int64_t i, int64_t h, int lane, int g)
{
	float		s = 0.0f,
				ad = a_dst[i * heads + h];

	for (int64_t e = indptr[i] + lane; e < indptr[i + 1]; e += g)
	{
		float		z = gnn_math_gat_logit(a_src[(int64_t) indices[e] * heads + h], ad, slope);
		float		v = expf(z - m);

		alpha[e * heads + h] = v;
		s += v;
	}
	return s;
}

/* phase 3: alpha /= s */
GNN_HD void
gnn_k_esm_norm_partial(const int64_t *indptr, int64_t heads, float s, float *alpha,
					   int64_t i, int64_t h, int lane, int g)
{
	for (int64_t e = indptr[i] + lane; e < indptr[i + 1]; e += g)
		alpha[e * heads + h] /= s;
}

/* the gradient of one edge's pre-softmax logit w.r.t. z's inputs */
GNN_HD float
gnn_k_esm_grad_term(float alpha, float dalpha, float dot, float z, float slope)
{
	return alpha * (dalpha - dot) * gnn_math_leaky_relu_grad(z, slope);
}

/* backward pass 1 over row i, head h: lane's <alpha, dalpha> */
GNN_HD float
gnn_k_esm_dot_partial(const int64_t *indptr, int64_t heads, const float *alpha,
					  const float *dalpha, int64_t i, int64_t h, int lane, int g)
{
	float		d = 0.0f;

	for (int64_t e = indptr[i] + lane; e < indptr[i + 1]; e += g)
		d += alpha[e * heads + h] * dalpha[e * heads + h];
	return d;
}

/* backward pass 1 (cont.): lane's share of da_dst[i, h] given the row's dot */
GNN_HD float
gnn_k_esm_ddst_partial(const int64_t *indptr, const int32_t *indices, int64_t heads,
					   const float *a_src, const float *a_dst, float slope,
					   const float *alpha, const float *dalpha, float dot,
					   int64_t i, int64_t h, int lane, int g)
{
	float		acc = 0.0f,
				ad = a_dst[i * heads + h];

	for (int64_t e = indptr[i] + lane; e < indptr[i + 1]; e += g)
	{
		float		z = a_src[(int64_t) indices[e] * heads + h] + ad;

		acc += gnn_k_esm_grad_term(alpha[e * heads + h], dalpha[e * heads + h], dot, z, slope);
	}
	return acc;
}

/* backward pass 2 over column j (transpose): lane's share of da_src[j, h] */
GNN_HD float
gnn_k_esm_dsrc_partial(const int64_t *t_indptr, const int32_t *t_indices,
					   const int64_t *t_perm, int64_t heads, const float *a_src,
					   const float *a_dst, float slope, const float *alpha,
					   const float *dalpha, const float *dot,
					   int64_t j, int64_t h, int lane, int g)
{
	float		acc = 0.0f,
				as = a_src[j * heads + h];

	for (int64_t t = t_indptr[j] + lane; t < t_indptr[j + 1]; t += g)
	{
		int64_t		i = t_indices[t];
		int64_t		e = t_perm[t];
		float		z = as + a_dst[i * heads + h];

		acc += gnn_k_esm_grad_term(alpha[e * heads + h], dalpha[e * heads + h],
								   dot[i * heads + h], z, slope);
	}
	return acc;
}

/* out[i, q] = sum_e alpha[e, q/f] H[col_e, q], q over the lane's columns of heads*f */
GNN_HD void
gnn_k_gat_agg_row(const int64_t *indptr, const int32_t *indices, int64_t heads, int64_t f,
				  const float *alpha, const float *H, float *out,
				  int64_t i, int lane, int g, int v)
{
	int64_t		hf = heads * f;
	int64_t		e0 = indptr[i],
				e1 = indptr[i + 1];

	if (v == 4)
	{
		/* f % 4 == 0: the 4 columns share a head */
		for (int64_t q = (int64_t) lane * 4; q < hf; q += (int64_t) g * 4)
		{
			int64_t		h = q / f;
			float		acc[4] = {0.0f, 0.0f, 0.0f, 0.0f},
						x[4];

			for (int64_t e = e0; e < e1; e++)
			{
				float		a = alpha[e * heads + h];

				GNN_K_LOAD4(H + (int64_t) indices[e] * hf + q, x);
				for (int r = 0; r < 4; r++)
					acc[r] += a * x[r];
			}
			GNN_K_STORE4(out + i * hf + q, acc);
		}
		return;
	}
	for (int64_t q = lane; q < hf; q += g)
	{
		int64_t		h = q / f;
		float		acc = 0.0f;

		for (int64_t e = e0; e < e1; e++)
			acc += alpha[e * heads + h] * H[(int64_t) indices[e] * hf + q];
		out[i * hf + q] = acc;
	}
}

/* dH[j, q] = beta*dH[j, q] + sum over entries (i <- j) alpha[e, q/f] dout[i, q] */
GNN_HD void
gnn_k_gat_agg_bwd_row(const int64_t *t_indptr, const int32_t *t_indices, const int64_t *t_perm,
					  int64_t heads, int64_t f, const float *alpha, const float *dout,
					  float beta, float *dH, int64_t j, int lane, int g)
{
	int64_t		hf = heads * f;

	for (int64_t q = lane; q < hf; q += g)
	{
		int64_t		h = q / f;
		float		acc = gnn_k_beta_init(beta, dH + j * hf + q);

		for (int64_t t = t_indptr[j]; t < t_indptr[j + 1]; t++)
			acc += alpha[t_perm[t] * heads + h] * dout[(int64_t) t_indices[t] * hf + q];
		dH[j * hf + q] = acc;
	}
}

/* dalpha[e, h] = <dout[i, h, :], H[col_e, h, :]> for the lane's (entry, head) pairs of row i */
GNN_HD void
gnn_k_gat_dalpha_row(const int64_t *indptr, const int32_t *indices, int64_t heads, int64_t f,
					 const float *H, const float *dout, float *dalpha,
					 int64_t i, int lane, int g)
{
	int64_t		hf = heads * f;
	int64_t		e0 = indptr[i];
	int64_t		npairs = (indptr[i + 1] - e0) * heads;

	for (int64_t p = lane; p < npairs; p += g)
	{
		int64_t		e = e0 + p / heads;
		int64_t		h = p % heads;
		const float *gr = dout + i * hf + h * f;
		const float *x = H + (int64_t) indices[e] * hf + h * f;
		float		acc = 0.0f;

		for (int64_t k = 0; k < f; k++)
			acc += gr[k] * x[k];
		dalpha[e * heads + h] = acc;
	}
}

/* Y[i, k] = (1/heads) sum_h X[i, h*f + k], sequential over h like the CPU */
GNN_HD float
gnn_k_head_mean(const float *X, int64_t heads, int64_t f, int64_t i, int64_t k)
{
	float		acc = 0.0f;

	for (int64_t h = 0; h < heads; h++)
		acc += X[i * heads * f + h * f + k];
	return acc * (1.0f / (float) heads);
}

/* ------------------------------------------------------------------ max aggregation */

GNN_HD void
gnn_k_max_agg_row(const int64_t *indptr, const int32_t *indices, const float *X, int64_t d,
				  float *Y, int32_t *argmax, int64_t i, int lane, int g)
{
	int64_t		e0 = indptr[i],
				e1 = indptr[i + 1];

	for (int64_t k = lane; k < d; k += g)
	{
		float		y = 0.0f;
		int32_t		am = -1;

		if (e0 < e1)
		{
			am = indices[e0];
			y = X[(int64_t) am * d + k];
			for (int64_t e = e0 + 1; e < e1; e++)
			{
				int32_t		j = indices[e];
				float		x = X[(int64_t) j * d + k];

				if (x > y)
				{
					y = x;
					am = j;
				}
			}
		}
		Y[i * d + k] = y;
		argmax[i * d + k] = am;
	}
}

GNN_HD void
gnn_k_max_agg_bwd_row(const int64_t *t_indptr, const int32_t *t_indices, const float *dY,
					  const int32_t *argmax, int64_t d, float beta, float *dX,
					  int64_t j, int lane, int g)
{
	for (int64_t k = lane; k < d; k += g)
	{
		float		acc = gnn_k_beta_init(beta, dX + j * d + k);

		for (int64_t t = t_indptr[j]; t < t_indptr[j + 1]; t++)
		{
			int64_t		i = t_indices[t];

			if (argmax[i * d + k] == j)
				acc += dY[i * d + k];
		}
		dX[j * d + k] = acc;
	}
}

#endif							/* GNN_KERNEL_MATH_H */
