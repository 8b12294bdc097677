/*
 * backend_cuda.cu: the CUDA backend's entry point and op table.
 *
 * gnn_backend_cuda_create (GNN_BACKEND_CUDA_ENTRY) is the only exported
 * symbol.  With no GPU, no driver or a broken driver it returns
 * GNN_ERR_UNSUPPORTED with the runtime's reason; that is the normal case on
 * CPU-only machines and must stay quiet (no print, no abort).
 *
 * Settings from the environment, read once per instance:
 *   GNN_CUDA_TF32=1   let cuBLAS use TF32 tensor cores for sgemm (faster,
 *                     ~1e-3 relative error; off by default for CPU parity)
 */
#include "cuda_common.cuh"

#include <stdlib.h>
#include <string.h>
#include <stddef.h>

static void
cuda_destroy(gnn_backend *be)
{
	gnn_cuda_ctx *ctx;

	if (!be)
		return;
	ctx = CTX(be);
	if (ctx)
	{
		(void) cudaSetDevice(ctx->device);
		if (ctx->stream)
			(void) cudaStreamSynchronize(ctx->stream);
		if (ctx->cublas)
			(void) cublasDestroy(ctx->cublas);
		if (ctx->scratch)
			(void) cudaFree(ctx->scratch);
		if (ctx->dev_small)
			(void) cudaFree(ctx->dev_small);
		if (ctx->host_small)
			(void) cudaFreeHost(ctx->host_small);
		if (ctx->stream)
			(void) cudaStreamDestroy(ctx->stream);
		(void) cudaGetLastError();
		free(ctx);
	}
	free(be);
}

static gnn_status
cuda_set_threads(gnn_backend *be, int nthreads)
{
	if (nthreads < 0)
		return gnn_cuda_error(&be->err, GNN_ERR_INVALID, "thread count must be >= 0, got %d", nthreads);
	return GNN_OK;				/* host threads do not matter to the GPU */
}

static gnn_status
cuda_sync(gnn_backend *be)
{
	CUDA_ENTER(be);
	CUDA_CHECK(be, cudaStreamSynchronize(CTX(be)->stream));
	CUDA_CHECK(be, cudaGetLastError());
	return GNN_OK;
}

static const gnn_backend_ops gnn_cuda_ops = {
	GNN_BACKEND_ABI_VERSION,	/* abi_version */
	sizeof(gnn_backend_ops),	/* ops_size */
	cuda_destroy,
	cuda_set_threads,
	cuda_sync,
	cuda_mem_alloc,
	cuda_mem_free,
	cuda_copy_h2d,
	cuda_copy_d2h,
	cuda_copy_d2d,
	cuda_mem_set,
	cuda_gemm,
	cuda_spmm,
	cuda_spmm_t,
	cuda_gather_rows,
	cuda_scatter_add_rows,
	cuda_act_forward,
	cuda_act_backward,
	cuda_axpby,
	cuda_add_bias,
	cuda_bias_grad,
	cuda_dropout_forward,
	cuda_dropout_backward,
	cuda_gemm_dropout,
	cuda_softmax_rows,
	cuda_xent,
	cuda_gat_node_scores,
	cuda_gat_node_scores_backward,
	cuda_gat_edge_softmax,
	cuda_gat_edge_softmax_backward,
	cuda_gat_aggregate,
	cuda_gat_aggregate_backward,
	cuda_head_mean,
	cuda_head_mean_backward,
	cuda_max_agg,
	cuda_max_agg_backward,
	cuda_adam_step,
	cuda_sgd_step,
	NULL,						/* bias_act: composed by the dispatch layer */
	NULL,						/* bias_act_backward: likewise */
	NULL,						/* spmm_t_bias_act_backward: likewise */
};

/* a new op in backend.h must get an entry above: fail the build until it does */
#define GNN_CUDA_NUM_OPS 39
static_assert(sizeof(gnn_backend_ops) ==
			  offsetof(gnn_backend_ops, destroy) + GNN_CUDA_NUM_OPS * sizeof(void (*)(void)),
			  "gnn_backend_ops changed: update the CUDA op table");

/* fail creation: free what was made, report in err with status st */
#define CREATE_FAIL(st, ...) \
	do { gnn_cuda_error(err, st, __VA_ARGS__); cuda_destroy(be); return st; } while (0)

extern "C" __attribute__((visibility("default"))) gnn_status
gnn_backend_cuda_create(uint32_t abi_version, int device, gnn_backend **out, gnn_error *err)
{
	gnn_backend *be;
	gnn_cuda_ctx *ctx;
	int			count = 0;
	cudaError_t e;
	cublasStatus_t cs;
	cudaDeviceProp prop;
	const char *tf32;

	if (!out)
		return gnn_cuda_error(err, GNN_ERR_INVALID, "CUDA backend: no output pointer");
	*out = NULL;
	if (abi_version != GNN_BACKEND_ABI_VERSION)
		return gnn_cuda_error(err, GNN_ERR_UNSUPPORTED,
							  "CUDA backend built for backend ABI %d, caller has %u",
							  GNN_BACKEND_ABI_VERSION, abi_version);
	e = cudaGetDeviceCount(&count);
	if (e != cudaSuccess)
	{
		(void) cudaGetLastError();
		return gnn_cuda_error(err, GNN_ERR_UNSUPPORTED,
							  "CUDA backend not available: no usable GPU (%s: %s)",
							  cudaGetErrorName(e), cudaGetErrorString(e));
	}
	if (count <= 0)
		return gnn_cuda_error(err, GNN_ERR_UNSUPPORTED, "CUDA backend not available: no GPU found");
	if (device < 0 || device >= count)
		return gnn_cuda_error(err, GNN_ERR_UNSUPPORTED,
							  "CUDA backend: device %d does not exist (%d device%s)",
							  device, count, count == 1 ? "" : "s");

	be = (gnn_backend *) calloc(1, sizeof(*be));
	if (!be)
		return gnn_cuda_error(err, GNN_ERR_NOMEM, "out of memory creating the CUDA backend");
	ctx = (gnn_cuda_ctx *) calloc(1, sizeof(*ctx));
	be->ctx = ctx;
	if (!ctx)
		CREATE_FAIL(GNN_ERR_NOMEM, "out of memory creating the CUDA backend");
	ctx->device = device;
	be->ops = &gnn_cuda_ops;
	be->fail_after = -1;
	be->err.status = GNN_OK;
	be->err.row = -1;
	snprintf(be->name, sizeof(be->name), "cuda:%d", device);

	if ((e = cudaSetDevice(device)) != cudaSuccess ||
		(e = cudaGetDeviceProperties(&prop, device)) != cudaSuccess)
	{
		(void) cudaGetLastError();
		CREATE_FAIL(GNN_ERR_UNSUPPORTED, "CUDA backend not available: device %d: %s",
					device, cudaGetErrorString(e));
	}
	ctx->num_sms = prop.multiProcessorCount > 0 ? prop.multiProcessorCount : 1;
	if ((e = cudaStreamCreateWithFlags(&ctx->stream, cudaStreamNonBlocking)) != cudaSuccess ||
		(e = cudaMalloc(&ctx->dev_small, GNN_CUDA_SMALL_BYTES)) != cudaSuccess ||
		(e = cudaMallocHost(&ctx->host_small, GNN_CUDA_SMALL_BYTES)) != cudaSuccess)
	{
		(void) cudaGetLastError();
		CREATE_FAIL(GNN_ERR_BACKEND, "CUDA backend: device %d (%s): %s",
					device, prop.name, cudaGetErrorString(e));
	}
	if ((cs = cublasCreate(&ctx->cublas)) != CUBLAS_STATUS_SUCCESS)
	{
		ctx->cublas = NULL;
		CREATE_FAIL(GNN_ERR_BACKEND, "CUDA backend: cublasCreate failed: %s",
					gnn_cublas_status_str(cs));
	}
	tf32 = getenv("GNN_CUDA_TF32");
	if ((cs = cublasSetStream(ctx->cublas, ctx->stream)) != CUBLAS_STATUS_SUCCESS ||
		(cs = cublasSetPointerMode(ctx->cublas, CUBLAS_POINTER_MODE_HOST)) != CUBLAS_STATUS_SUCCESS ||
		(cs = cublasSetMathMode(ctx->cublas, tf32 && strcmp(tf32, "1") == 0
								? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH))
		!= CUBLAS_STATUS_SUCCESS)
		CREATE_FAIL(GNN_ERR_BACKEND, "CUDA backend: cuBLAS setup failed: %s",
					gnn_cublas_status_str(cs));
	*out = be;
	return GNN_OK;
}
