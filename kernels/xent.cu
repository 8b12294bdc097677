/*
 * xent.cu: masked softmax cross-entropy with its gradient, loss, correct
 * and counted returned to the host.
 *
 * 1. one lane group per listed row: (max, first argmax) and sum of exps by
 *    warp shuffles; per-row loss (double), correct and counted flags into
 *    scratch; an out-of-range row sets a flag (reported as GNN_ERR_INVALID).
 * 2. one block sums the per-row values in a fixed tree order (deterministic).
 * 3. with dlogits: zeroed first, then each counted row's gradient, scaled by
 *    1/counted read from the device (no host round trip before it).
 * Then the small result block is copied to pinned host memory and the
 * stream synchronised.
 */
#include "cuda_common.cuh"

typedef struct xent_result
{
	double		loss;
	long long	correct;
	long long	counted;
	int			bad;
	int			bad_row;
} xent_result;

#define XENT_REDUCE_THREADS 256

/* per listed row; grad == 0: statistics pass, grad == 1: gradient pass */
__global__ void
xent_rows_kernel(const float *logits, int64_t n, int64_t c, const int32_t *labels,
				 const int32_t *rows, int64_t nrows, double *row_loss, int *row_flags,
				 xent_result *res, float *dlogits, int grad, int g)
{
	int64_t		t = gnn_tid();
	int64_t		r = t / g;
	int			lane = (int) (t % g);
	bool		valid = false;
	int32_t		i = 0,
				y = -1;
	const float *x;
	float		m,
				s;
	long long	am;
	int64_t		am_lane;

	if (r < nrows)
	{
		i = rows[r];
		if (i < 0 || i >= n)
		{
			if (lane == 0 && !grad)
			{
				res->bad_row = i;
				atomicExch(&res->bad, 1);
			}
		}
		else
		{
			y = labels[i];
			valid = y >= 0 && y < c;
		}
	}
	x = logits + (valid ? (int64_t) i : 0) * c;

	/* (max, first argmax) across the group */
	if (valid)
		gnn_k_argmax_partial(x, c, lane, g, &m, &am_lane);
	else
	{
		m = -FLT_MAX;
		am_lane = 0;
	}
	am = am_lane;
	for (int o = g >> 1; o > 0; o >>= 1)
	{
		float		m2 = __shfl_xor_sync(0xffffffffu, m, o, g);
		long long	a2 = __shfl_xor_sync(0xffffffffu, am, o, g);
		int64_t		a = am;

		gnn_k_argmax_combine(&m, &a, m2, a2);
		am = a;
	}
	s = valid ? gnn_k_exp_partial(x, NULL, c, m, lane, g) : 0.0f;
	s = gnn_warp_sum(s, g);

	if (!valid)
	{
		if (!grad && r < nrows && lane == 0)
		{
			row_loss[r] = 0.0;
			row_flags[r] = 0;
		}
		return;					/* after the last shuffle: safe */
	}
	if (!grad)
	{
		if (lane == 0)
		{
			row_loss[r] = (double) gnn_math_xent(x[y], m, s);
			row_flags[r] = 1 | (am == y ? 2 : 0);
		}
		return;
	}
	gnn_k_xent_grad_partial(x, dlogits + (int64_t) i * c, c, y, m, s,
							1.0f / (float) res->counted, lane, g);
}

__global__ void
xent_reduce_kernel(const double *row_loss, const int *row_flags, int64_t nrows, xent_result *res)
{
	__shared__ double sl[XENT_REDUCE_THREADS];
	__shared__ long long sc[XENT_REDUCE_THREADS];
	__shared__ long long sn[XENT_REDUCE_THREADS];
	int			tx = threadIdx.x;
	double		l = 0.0;
	long long	cor = 0,
				cnt = 0;

	for (int64_t r = tx; r < nrows; r += XENT_REDUCE_THREADS)
	{
		l += row_loss[r];
		cnt += row_flags[r] & 1;
		cor += (row_flags[r] >> 1) & 1;
	}
	sl[tx] = l;
	sc[tx] = cor;
	sn[tx] = cnt;
	__syncthreads();
	for (int o = XENT_REDUCE_THREADS / 2; o > 0; o >>= 1)
	{
		if (tx < o)
		{
			sl[tx] += sl[tx + o];
			sc[tx] += sc[tx + o];
			sn[tx] += sn[tx + o];
		}
		__syncthreads();
	}
	if (tx == 0)
	{
		res->loss = sl[0];
		res->correct = sc[0];
		res->counted = sn[0];
	}
}

gnn_status
cuda_xent(gnn_backend *be, const float *logits, int64_t n, int64_t c, const int32_t *labels,
		  const int32_t *rows, int64_t nrows, float *dlogits, float *loss_host,
		  int64_t *correct_host, int64_t *counted_host)
{
	gnn_cuda_ctx *ctx = CTX(be);
	xent_result *res = (xent_result *) ctx->dev_small;
	xent_result *hres = (xent_result *) ctx->host_small;
	char	   *s;
	double	   *row_loss;
	int		   *row_flags;
	size_t		lbytes;
	gnn_status	st;
	int			g;
	unsigned int blocks;

	if (n < 0 || c <= 0 || nrows < 0)
		return gnn_cuda_error(&be->err, GNN_ERR_DIMENSION, "xent: bad sizes");
	CUDA_ENTER(be);
	if (dlogits && n > 0)
		CUDA_CHECK(be, cudaMemsetAsync(dlogits, 0, sizeof(float) * (size_t) (n * c), ctx->stream));
	if (nrows == 0)
	{
		*loss_host = 0.0f;
		if (correct_host)
			*correct_host = 0;
		if (counted_host)
			*counted_host = 0;
		return GNN_OK;
	}
	lbytes = ((sizeof(double) * (size_t) nrows) + 255) & ~(size_t) 255;
	st = gnn_cuda_scratch(be, lbytes + sizeof(int) * (size_t) nrows, (void **) &s);
	if (st != GNN_OK)
		return st;
	row_loss = (double *) s;
	row_flags = (int *) (s + lbytes);
	CUDA_CHECK(be, cudaMemsetAsync(res, 0, sizeof(xent_result), ctx->stream));

	g = gnn_k_group_lanes(c);
	blocks = gnn_cuda_group_blocks(nrows, g);
	xent_rows_kernel<<<blocks, GNN_CUDA_BLOCK, 0, ctx->stream>>>(
		logits, n, c, labels, rows, nrows, row_loss, row_flags, res, NULL, 0, g);
	CUDA_CHECK_LAUNCH(be);
	xent_reduce_kernel<<<1, XENT_REDUCE_THREADS, 0, ctx->stream>>>(row_loss, row_flags, nrows, res);
	CUDA_CHECK_LAUNCH(be);
	if (dlogits)
	{
		xent_rows_kernel<<<blocks, GNN_CUDA_BLOCK, 0, ctx->stream>>>(
			logits, n, c, labels, rows, nrows, NULL, NULL, res, dlogits, 1, g);
		CUDA_CHECK_LAUNCH(be);
	}
	CUDA_CHECK(be, cudaMemcpyAsync(hres, res, sizeof(xent_result), cudaMemcpyDeviceToHost,
								   ctx->stream));
	CUDA_CHECK(be, cudaStreamSynchronize(ctx->stream));
	if (hres->bad)
		return gnn_cuda_error(&be->err, GNN_ERR_INVALID, "xent: row %d out of range [0, %lld)",
							  hres->bad_row, (long long) n);
	*loss_host = hres->counted ? (float) (hres->loss / (double) hres->counted) : 0.0f;
	if (correct_host)
		*correct_host = hres->correct;
	if (counted_host)
		*counted_host = hres->counted;
	return GNN_OK;
}
