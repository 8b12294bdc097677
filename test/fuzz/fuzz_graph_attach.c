/*
 * fuzz_graph_attach: libFuzzer target for the graph region validator.
 * gnn_graph_attach must return GNN_OK or GNN_ERR_CORRUPT for any bytes; on
 * GNN_OK every array it hands out must lie inside the region, which this
 * target checks by reading each one end to end (ASan reports an over-read).
 * Random bytes rarely pass the magic and the header checksum, so inputs with
 * an odd first byte get both re-stamped to reach the span checks.
 * Build and run: test/fuzz/run.sh [seconds]
 */
#include "graph/graph.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* the same FNV-1a as graph.c's header_checksum */
static uint64_t
checksum(const gnn_graph_header *h)
{
	const unsigned char *p = (const unsigned char *) h;
	uint64_t	x = 0xcbf29ce484222325ULL;

	for (size_t i = 0; i < offsetof(gnn_graph_header, checksum); i++)
	{
		x ^= p[i];
		x *= 0x100000001b3ULL;
	}
	return x;
}

static volatile uint64_t sink;

static void
touch(const void *p, uint64_t bytes)
{
	const unsigned char *c = p;
	uint64_t	s = 0;

	if (!p)
		return;
	for (uint64_t i = 0; i < bytes; i++)
		s += c[i];
	sink += s;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	gnn_error	err;
	gnn_graph	g;
	gnn_status	st;
	uint8_t    *cp;

	/* a copy of exactly size bytes, 8-aligned as a DSM segment is */
	cp = aligned_alloc(8, ((size ? size : 1) + 7) & ~(size_t) 7);
	memcpy(cp, data, size);
	if (size >= sizeof(gnn_graph_header) && (data[0] & 1))
	{
		gnn_graph_header *h = (gnn_graph_header *) cp;

		h->magic = GNN_GRAPH_MAGIC;
		h->version = GNN_GRAPH_VERSION;
		if (h->total_bytes > size)
			h->total_bytes = size;
		h->checksum = checksum(h);
	}
	st = gnn_graph_attach(cp, size, &g, &err);
	if (st == GNN_OK)
	{
		uint64_t	n = (uint64_t) g.num_nodes,
					m = (uint64_t) g.num_edges;

		/* counts whose arrays could not fit: the byte sizes below overflowed */
		if (n > size / 8 || m > size / 4 || (g.fidx && (uint64_t) g.feat_nnz > size / 4) ||
			(g.feat && g.feat_dim > 0 && n > size / 4 / (uint64_t) g.feat_dim))
			abort();
		/* what readers do first: the node range of the last node */
		if (n > 0)
			sink += (uint64_t) g.indptr[n] + (uint64_t) g.rindptr[n] + (uint64_t) g.ids[n - 1];

		touch(g.ids, 8 * n);
		touch(g.indptr, 8 * (n + 1));
		touch(g.indices, 4 * m);
		touch(g.weights, 4 * m);
		touch(g.rindptr, 8 * (n + 1));
		touch(g.rindices, 4 * m);
		touch(g.rweights, 4 * m);
		touch(g.feat, 4 * n * (uint64_t) g.feat_dim);
		touch(g.fptr, 8 * (n + 1));
		touch(g.fidx, 4 * (uint64_t) g.feat_nnz);
		touch(g.fval, 4 * (uint64_t) g.feat_nnz);
		touch(g.labels, 4 * n);
		touch(g.split, n);
		touch(g.class_names, g.class_names_bytes);
		/* version 2: types, keys, times, targets, meta, and the lookups over them */
		touch(g.type_ptr, 8 * ((uint64_t) g.num_node_types + 1));
		touch(g.node_type, 2 * n);
		touch(g.etypes, sizeof(gnn_edge_type) * (uint64_t) g.num_edge_types);
		touch(g.arc_type, 2 * m);
		touch(g.rarc_type, 2 * m);
		touch(g.type_names, g.type_names_bytes);
		touch(g.keys, 8 * n);
		touch(g.key_off, g.key_off ? 8 * (n + 1) : 0);
		touch(g.key_bytes, g.key_off ? (uint64_t) g.key_off[n] : 0);
		touch(g.type_text_key, g.type_text_key ? (uint64_t) g.num_node_types : 0);
		touch(g.time, 8 * n);
		touch(g.targets, 4 * n);
		touch(g.meta, g.meta_bytes);
		for (int32_t t = 0; t <= g.num_node_types; t++)
		{
			const char *name = gnn_graph_node_type_name(&g, t);

			sink += (uint64_t) gnn_graph_find_typed(&g, t, 7) + (uint64_t) gnn_graph_find_text(&g, t, "kiwi", 4);
			if (name)
				sink += (uint64_t) gnn_graph_node_type_by_name(&g, name);
		}
		for (int32_t r = 0; r <= g.num_edge_types && r < 8; r++)
		{
			const char *name = gnn_graph_edge_type_name(&g, r);

			if (name)
				sink += (uint64_t) gnn_graph_edge_type_by_name(&g, name);
		}
	}
	else if (st != GNN_ERR_CORRUPT)
		abort();
	free(cp);
	return 0;
}
