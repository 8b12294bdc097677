/*
 * memory.cu: device allocations, copies and memset, all on the instance's
 * stream.  copy_d2h synchronises (the caller reads the host buffer next);
 * host buffers are pageable, so copy_h2d returns once the source has been
 * staged and may be reused by the caller.
 */
#include "cuda_common.cuh"

gnn_status
cuda_mem_alloc(gnn_backend *be, size_t bytes, void **ptr)
{
	cudaError_t e;

	*ptr = NULL;
	CUDA_ENTER(be);
	/* cudaMalloc returns 256-byte aligned memory; never ask for 0 bytes */
	e = cudaMalloc(ptr, bytes ? bytes : 256);
	if (e == cudaErrorMemoryAllocation)
	{
		(void) cudaGetLastError();
		*ptr = NULL;
		return gnn_cuda_error(&be->err, GNN_ERR_NOMEM,
							  "%s: out of device memory allocating %zu bytes", be->name, bytes);
	}
	CUDA_CHECK(be, e);
	return GNN_OK;
}

void
cuda_mem_free(gnn_backend *be, void *ptr)
{
	if (!ptr)
		return;
	/* cleanup must not fail; cudaFree waits for the work that used ptr */
	(void) cudaSetDevice(CTX(be)->device);
	(void) cudaFree(ptr);
}

gnn_status
cuda_copy_h2d(gnn_backend *be, void *dst, const void *src, size_t bytes)
{
	if (!bytes)
		return GNN_OK;
	CUDA_ENTER(be);
	CUDA_CHECK(be, cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, CTX(be)->stream));
	return GNN_OK;
}

gnn_status
cuda_copy_d2h(gnn_backend *be, void *dst, const void *src, size_t bytes)
{
	if (!bytes)
		return GNN_OK;
	CUDA_ENTER(be);
	CUDA_CHECK(be, cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, CTX(be)->stream));
	CUDA_CHECK(be, cudaStreamSynchronize(CTX(be)->stream));
	return GNN_OK;
}

gnn_status
cuda_copy_d2d(gnn_backend *be, void *dst, const void *src, size_t bytes)
{
	if (!bytes || dst == src)
		return GNN_OK;
	CUDA_ENTER(be);
	CUDA_CHECK(be, cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, CTX(be)->stream));
	return GNN_OK;
}

gnn_status
cuda_mem_set(gnn_backend *be, void *dst, int byte, size_t bytes)
{
	if (!bytes)
		return GNN_OK;
	CUDA_ENTER(be);
	CUDA_CHECK(be, cudaMemsetAsync(dst, byte, bytes, CTX(be)->stream));
	return GNN_OK;
}

/*
 * Scratch grows by replacing the block; the old one may still be read by
 * queued kernels, so wait for the stream before freeing it.  Growth is rare
 * (sizes settle after the first batch).
 */
gnn_status
gnn_cuda_scratch(gnn_backend *be, size_t bytes, void **p)
{
	gnn_cuda_ctx *ctx = CTX(be);

	if (bytes > ctx->scratch_cap)
	{
		size_t		cap = bytes + bytes / 4 + 4096;
		void	   *np = NULL;

		CUDA_CHECK(be, cudaStreamSynchronize(ctx->stream));
		if (ctx->scratch)
			CUDA_CHECK(be, cudaFree(ctx->scratch));
		ctx->scratch = NULL;
		ctx->scratch_cap = 0;
		if (cudaMalloc(&np, cap) != cudaSuccess)
		{
			(void) cudaGetLastError();
			return gnn_cuda_error(&be->err, GNN_ERR_NOMEM,
								  "%s: out of device memory for %zu bytes of scratch", be->name, cap);
		}
		ctx->scratch = np;
		ctx->scratch_cap = cap;
	}
	*p = ctx->scratch;
	return GNN_OK;
}
