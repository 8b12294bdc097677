/*
 * make_graph_seeds DIR [--store]: write valid small graph regions (dense,
 * sparse, weighted, text labels) into DIR; with --store each as a graph
 * store file around the region (the fuzz_store_file corpus).
 */
#include "graph/graph.h"
#include "store/store.h"
#include "store/feature_store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *
alloc(void *arg, uint64_t bytes)
{
	return calloc(1, bytes);
}

static int	as_store;

static void
write_seed(const char *dir, const char *name, gnn_graph_input *in)
{
	void	   *region = NULL;
	uint64_t	size = 0;
	gnn_error	err;
	char		path[4096];
	FILE	   *f;

	if (gnn_graph_build_into(in, alloc, NULL, &region, &size, &err) != GNN_OK)
	{
		fprintf(stderr, "%s: %s\n", name, err.msg);
		exit(1);
	}
	if (as_store)
	{
		if (gnn_store_write(dir, name, GNN_STORE_GRAPH, 7, "seed metadata", 13, region, size, &err) != GNN_OK)
		{
			fprintf(stderr, "%s: %s\n", name, err.msg);
			exit(1);
		}
		free(region);
		return;
	}
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	if (!f || fwrite(region, 1, size, f) != size)
		exit(1);
	fclose(f);
	free(region);
}

int
main(int argc, char **argv)
{
	as_store = argc > 2 && strcmp(argv[2], "--store") == 0;
	int64_t		src[] = {1, 2, 3, 4, 5, 1};
	int64_t		dst[] = {2, 3, 4, 5, 1, 3};
	float		w[] = {1, 2, 3, 4, 5, 6};
	int64_t		ids[] = {1, 2, 3, 4, 5};
	float		feat[15];
	int32_t		labels[] = {0, 1, -1, 1, 0};
	uint8_t		split[] = {GNN_SPLIT_TRAIN, GNN_SPLIT_VAL, GNN_SPLIT_TEST, GNN_SPLIT_NONE, GNN_SPLIT_TRAIN};
	int64_t		spn[] = {1, 3, 5};
	int32_t		spi[] = {0, 7, 2};
	float		spv[] = {1, 2, 3};
	gnn_graph_input in;

	if (argc < 2)
		return 2;
	for (int i = 0; i < 15; i++)
		feat[i] = (float) i / 7;
	memset(&in, 0, sizeof(in));
	in.num_edges = 6;
	in.src = src;
	in.dst = dst;
	write_seed(argv[1], "edges_only", &in);
	in.weight = w;
	in.undirected = true;
	in.num_nodes = 5;
	in.node_ids = ids;
	in.feat_dim = 3;
	in.feat = feat;
	in.labels = labels;
	in.split = split;
	write_seed(argv[1], "dense", &in);
	if (as_store)
	{
		/* features files: node order, and reordered rows (a row map), for fuzz_store_file */
		static float rows[40 * 6];
		int32_t		order[40];
		gnn_error	err;

		for (int i = 0; i < 40 * 6; i++)
			rows[i] = (float) i / 11;
		for (int i = 0; i < 40; i++)
			order[i] = (i * 7) % 40;
		if (gnn_fstore_write_file(argv[1], "features_plain", 3, rows, NULL, 40, 6, NULL, &err) != GNN_OK ||
			gnn_fstore_write_file(argv[1], "features_ordered", 4, rows, NULL, 40, 6, order, &err) != GNN_OK ||
			gnn_fstore_write_file(argv[1], "features_wide", 5, rows, NULL, 2, 120, NULL, &err) != GNN_OK)
		{
			fprintf(stderr, "features: %s\n", err.msg);
			exit(1);
		}
	}
	in.feat_dim = 0;
	in.feat = NULL;
	in.sparse_nnz = 3;
	in.sp_node = spn;
	in.sp_index = spi;
	in.sp_value = spv;
	in.class_names = "a\0b";
	in.class_names_bytes = 4;
	write_seed(argv[1], "sparse_text_labels", &in);

	/* typed: two node types (int keys, text keys), three relations, times, targets, meta */
	{
		int64_t		tids[] = {0, 1, 2, 3, 4};
		int16_t		ntype[] = {0, 0, 1, 1, 1};
		int64_t		keys[] = {7, 9, 0, 0, 0};
		int64_t		koff[] = {0, 0, 0, 3, 7, 11};	/* fig, kiwi, pear */
		uint8_t		textkey[] = {0, 1};
		int32_t		esrc[] = {0, 0, 1};
		int32_t		edst[] = {1, 1, 0};
		int64_t		tsrc[] = {0, 0, 1, 2, 3};
		int64_t		tdst[] = {2, 2, 4, 0, 1};
		int16_t		etype[] = {0, 1, 0, 2, 2};
		int64_t		times[] = {1, 2, 3, GNN_TIME_NONE, 5};
		float		targets[] = {0.5f, 1, 2, 3, 4};

		memset(&in, 0, sizeof(in));
		in.num_edges = 5;
		in.src = tsrc;
		in.dst = tdst;
		in.num_nodes = 5;
		in.node_ids = tids;
		in.num_node_types = 2;
		in.node_type = ntype;
		in.num_edge_types = 3;
		in.edge_type = etype;
		in.etype_src = esrc;
		in.etype_dst = edst;
		in.type_names = "a\0b\0r\0s\0t";
		in.type_names_bytes = 10;
		in.keys = keys;
		in.key_off = koff;
		in.key_bytes = "figkiwipear";
		in.type_text_key = textkey;
		in.node_time = times;
		in.targets = targets;
		in.meta = "{}";
		in.meta_bytes = 2;
		write_seed(argv[1], "typed", &in);
	}
	return 0;
}
