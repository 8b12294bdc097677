/*
 * fuzz_store_file: libFuzzer target for graph store files, read as a restart
 * reads them (src/pg/store.c): the header and metadata, then the payload,
 * then the payload as a graph region.  Every input must give GNN_OK or
 * GNN_ERR_CORRUPT at each step, never a crash or an over-read (ASan).
 * Random bytes rarely pass three checksums, so inputs with an odd first
 * byte get the header's, the metadata's and the payload's re-stamped (over
 * whatever lengths the header claims, clamped to the input) to reach the
 * length checks and the region validator.
 * The same file is also opened as a features file (feature_store.h: its
 * metadata's shape, row map and block checksums) and a few rows gathered
 * through a 4-row cache: again only GNN_OK or GNN_ERR_CORRUPT.
 * Build and run: test/fuzz/run.sh [seconds] fuzz_store_file
 */
#include "graph/graph.h"
#include "store/feature_store.h"
#include "store/store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void
put32(uint8_t *b, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		b[i] = (uint8_t) (v >> (8 * i));
}

static uint64_t
get64(const uint8_t *b)
{
	uint64_t	v = 0;

	for (int i = 7; i >= 0; i--)
		v = (v << 8) | b[i];
	return v;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char path[64];
	gnn_store_header h;
	gnn_error	err;
	gnn_status	st;
	uint8_t    *cp = malloc(size ? size : 1);
	char		meta[256];
	FILE	   *f;

	if (!path[0])
		snprintf(path, sizeof(path), "/tmp/fuzz-store-%d.gnn", (int) getpid());
	memcpy(cp, data, size);
	if (size >= GNN_STORE_HEADER_SIZE && (data[0] & 1))
	{
		uint64_t	mlen = get64(cp + 24),
					plen = get64(cp + 32),
					off = get64(cp + 40);

		memcpy(cp, GNN_STORE_MAGIC, 8);
		put32(cp + 8, GNN_STORE_VERSION);
		memset(cp + 60, 0, 4);
		if (mlen <= size - GNN_STORE_HEADER_SIZE)
			put32(cp + 48, gnn_crc32c(0, cp + GNN_STORE_HEADER_SIZE, mlen));
		if (off <= size && plen <= size - off)
			put32(cp + 52, gnn_crc32c(0, cp + off, plen));
		put32(cp + 56, gnn_crc32c(0, cp, 56));
	}
	f = fopen(path, "wb");
	if (!f)
		abort();
	if (size)
		fwrite(cp, 1, size, f);
	fclose(f);
	st = gnn_store_read_header(path, &h, meta, sizeof(meta), &err);
	if (st != GNN_OK && st != GNN_ERR_CORRUPT)
		abort();
	if (st == GNN_OK)
	{
		uint8_t    *pay;

		/* the header's lengths were checked against the file */
		if (h.payload_offset + h.payload_len != size || h.meta_len > sizeof(meta))
			abort();
		pay = aligned_alloc(8, (h.payload_len + 8) & ~(uint64_t) 7);
		st = gnn_store_read_payload(path, &h, pay, &err);
		if (st != GNN_OK && st != GNN_ERR_CORRUPT)
			abort();
		if (st == GNN_OK)
		{
			gnn_graph	g;

			st = gnn_graph_attach(pay, h.payload_len, &g, &err);
			if (st != GNN_OK && st != GNN_ERR_CORRUPT)
				abort();
		}
		free(pay);
	}
	{
		gnn_fstore *fs = NULL;

		st = gnn_fstore_open_file(path, 0, 4, false, &fs, &err);
		if (st != GNN_OK && st != GNN_ERR_CORRUPT && st != GNN_ERR_NOMEM)
			abort();
		if (st == GNN_OK)
		{
			int64_t		rows = gnn_fstore_rows(fs);
			int32_t		idx[6] = {0, (int32_t) (rows - 1), (int32_t) (rows / 2), 0, (int32_t) (rows / 3), (int32_t) (rows - 1)};
			float	   *out = malloc(sizeof(float) * 6 * (size_t) gnn_fstore_dim(fs));

			if (rows > 0 && out)
			{
				st = gnn_fstore_gather(fs, idx, 6, out, &err);
				if (st != GNN_OK && st != GNN_ERR_CORRUPT)
					abort();
			}
			free(out);
			gnn_fstore_close(fs);
		}
	}
	free(cp);
	return 0;
}
