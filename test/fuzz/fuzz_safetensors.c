/*
 * fuzz_safetensors: libFuzzer target for gnn.import_model's reader
 * (gnn_model_from_safetensors).  Every input must give GNN_OK,
 * GNN_ERR_CORRUPT or GNN_ERR_DIMENSION (or GNN_ERR_NOMEM), never a crash,
 * an over-read (ASan) or another status.  Seeds: make_seeds --safetensors.
 * Build and run: test/fuzz/run.sh [seconds] fuzz_safetensors
 */
#include "nn/safetensors.h"

#include <stdlib.h>
#include <string.h>

static gnn_backend *be;

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	gnn_error	err;
	gnn_model  *m = NULL;
	gnn_st_meta meta = {0};
	gnn_status	st;
	uint8_t    *cp;

	if (!be && gnn_backend_cpu_create(1, &be, &err) != GNN_OK)
		abort();
	cp = malloc(size ? size : 1);
	memcpy(cp, data, size);
	st = gnn_model_from_safetensors(be, cp, size, &m, &meta, &err);
	if (st == GNN_OK)
		gnn_model_free(m);
	else if (st != GNN_ERR_CORRUPT && st != GNN_ERR_DIMENSION && st != GNN_ERR_NOMEM)
		abort();
	gnn_st_meta_free(&meta);
	free(cp);
	return 0;
}
