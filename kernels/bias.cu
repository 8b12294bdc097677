/*
 * bias.cu: add_bias, bias_grad, and the deterministic column sum behind
 * bias_grad and GAT's attention-vector gradient.
 *
 * Column sums accumulate in double (as the CPU does) in two passes with a
 * fixed partition - block (column tile, row chunk) -> partial[chunk][col],
 * then a per-column sum of the partials in chunk order - so the result does
 * not depend on scheduling.  Bodies: gnn_k_colsum_thread / _finish.
 */
#include "cuda_common.cuh"

#define COLSUM_TX GNN_K_COLSUM_TX
#define COLSUM_TY GNN_K_COLSUM_TY

__global__ void
add_bias_kernel(float *Y, const float *bias, int64_t rows, int64_t cols)
{
	for (int64_t t = gnn_tid(); t < rows * cols; t += gnn_nthreads())
		Y[t] += bias[t % cols];
}

gnn_status
cuda_add_bias(gnn_backend *be, float *Y, const float *bias, int64_t rows, int64_t cols)
{
	if (rows <= 0 || cols <= 0)
		return GNN_OK;
	CUDA_ENTER(be);
	add_bias_kernel<<<gnn_cuda_grid_stride_blocks(be, rows * cols), GNN_CUDA_BLOCK, 0,
		CTX(be)->stream>>>(Y, bias, rows, cols);
	CUDA_CHECK_LAUNCH(be);
	return GNN_OK;
}

__global__ void
colsum_partial_kernel(const float *X, int64_t rows, int64_t cols, int64_t heads, int64_t f,
					  const float *ws, int64_t chunk, double *partial)
{
	__shared__ double sh[COLSUM_TY][COLSUM_TX];
	int			tx = threadIdx.x,
				ty = threadIdx.y;
	int64_t		q = (int64_t) blockIdx.x * COLSUM_TX + tx;
	int64_t		r = blockIdx.y;
	int64_t		i0 = r * chunk,
				i1 = i0 + chunk < rows ? i0 + chunk : rows;

	sh[ty][tx] = q < cols ? gnn_k_colsum_thread(X, rows, cols, heads, f, ws, q, i0, i1,
												 ty, COLSUM_TY) : 0.0;
	__syncthreads();
	if (ty == 0 && q < cols)
	{
		double		acc = 0.0;

		for (int y = 0; y < COLSUM_TY; y++)
			acc += sh[y][tx];
		partial[r * cols + q] = acc;
	}
}

__global__ void
colsum_finish_kernel(const double *partial, int64_t nchunks, int64_t cols, float beta, float *out)
{
	for (int64_t q = gnn_tid(); q < cols; q += gnn_nthreads())
		gnn_k_colsum_finish(partial, nchunks, cols, q, beta, out);
}

gnn_status
gnn_cuda_colsum(gnn_backend *be, const float *X, int64_t rows, int64_t cols, int64_t heads,
				int64_t f, const float *ws, float beta, float *out)
{
	int64_t		chunk,
				nchunks;
	double	   *partial;
	gnn_status	st;
	dim3		grid,
				block(COLSUM_TX, COLSUM_TY);

	if (cols <= 0)
		return GNN_OK;
	if (rows <= 0)
		return gnn_cuda_scale(be, out, cols, beta);
	CUDA_ENTER(be);
	gnn_k_colsum_chunks(rows, &chunk, &nchunks);
	st = gnn_cuda_scratch(be, sizeof(double) * (size_t) (nchunks * cols), (void **) &partial);
	if (st != GNN_OK)
		return st;
	grid = dim3((unsigned int) ((cols + COLSUM_TX - 1) / COLSUM_TX), (unsigned int) nchunks);
	if ((cols + COLSUM_TX - 1) / COLSUM_TX > 0x7fffffffLL)
		return gnn_cuda_error(&be->err, GNN_ERR_DIMENSION, "column sum: too many columns");
	colsum_partial_kernel<<<grid, block, 0, CTX(be)->stream>>>(X, rows, cols, heads, f, ws,
															   chunk, partial);
	CUDA_CHECK_LAUNCH(be);
	colsum_finish_kernel<<<gnn_cuda_grid_stride_blocks(be, cols), GNN_CUDA_BLOCK, 0,
		CTX(be)->stream>>>(partial, nchunks, cols, beta, out);
	CUDA_CHECK_LAUNCH(be);
	return GNN_OK;
}

gnn_status
cuda_bias_grad(gnn_backend *be, const float *dY, int64_t rows, int64_t cols, float beta, float *db)
{
	if (rows < 0 || cols < 0)
		return gnn_cuda_error(&be->err, GNN_ERR_DIMENSION, "bias_grad: bad sizes");
	return gnn_cuda_colsum(be, dY, rows, cols, 1, cols, NULL, beta, db);
}
