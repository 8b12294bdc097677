/*
 * fuzz_model_blob: libFuzzer target for model blob deserialisation.
 * Every input must give GNN_OK or GNN_ERR_CORRUPT, never a crash, an
 * over-read (ASan) or another status.  Inputs that pass the checksum are
 * rare for random bytes, so half of the runs re-stamp a valid CRC (first
 * input byte odd) to reach the structural checks.
 * Build and run: test/fuzz/run.sh [seconds]
 */
#include "nn/serialize.h"

#include <stdlib.h>
#include <string.h>

static gnn_backend *be;

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	gnn_error	err;
	gnn_model  *m = NULL;
	gnn_status	st;
	uint8_t    *cp;

	if (!be && gnn_backend_cpu_create(1, &be, &err) != GNN_OK)
		abort();
	cp = malloc(size ? size : 1);
	memcpy(cp, data, size);
	if (size >= 20 && (data[0] & 1))
	{
		uint64_t	total = size;
		uint32_t	crc;

		memcpy(cp, GNN_BLOB_MAGIC, 4);
		memcpy(cp + 8, &total, 8);
		crc = gnn_crc32(cp, size - 4);
		memcpy(cp + size - 4, &crc, 4);
	}
	st = gnn_model_deserialize(be, cp, size, &m, NULL, &err);
	if (st == GNN_OK)
		gnn_model_free(m);
	else if (st != GNN_ERR_CORRUPT && st != GNN_ERR_NOMEM)
		abort();
	free(cp);
	return 0;
}
