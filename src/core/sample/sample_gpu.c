/*
 * sample_gpu.c: binds the GPU sampling entry points of kernels/gnn_cuda.so
 * (see sample_gpu.h) through the CUDA backend's dlopen handle.
 */
#include "sample/sample_gpu.h"

#include <dlfcn.h>
#include <string.h>

gnn_status
gnn_gpu_sample_bind(gnn_backend *be, gnn_gpu_sample_api *api, gnn_error *err)
{
	memset(api, 0, sizeof(*api));
	if (!be || !be->dl_handle || strncmp(be->name, "cuda", 4) != 0)
		return gnn_error_set(err, GNN_ERR_UNSUPPORTED,
							 "GPU sampling needs the CUDA backend (have \"%s\")",
							 be ? be->name : "none");
#define X(field, sym) \
	*(void **) (&api->field) = dlsym(be->dl_handle, sym); \
	if (!api->field) \
	{ \
		memset(api, 0, sizeof(*api)); \
		return gnn_error_set(err, GNN_ERR_UNSUPPORTED, \
							 "GPU sampling not available: the CUDA backend does not export %s", sym); \
	}
	GNN_CUDA_SAMPLE_SYMBOLS
#undef X
	return GNN_OK;
}
