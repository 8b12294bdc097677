/*
 * partition_bench.c: METIS, streaming (Fennel) and random partitioning of a
 * products-size R-MAT graph generated in memory (issue 7, "Speed").
 *
 *   partition_bench [NODES [EDGES [PARTS...]]]   defaults 2500000 60000000 4 16
 *
 * R-MAT with the Graph500 parameters (a=0.57, b=0.19, c=0.19, d=0.05) over
 * the next power of two, ids >= NODES redrawn; self loops dropped,
 * duplicates merged by the graph build; 8% of nodes are training nodes (as
 * in ogbn-products).  Prints one line per (method, parts): seconds, edge-cut
 * fraction, balance (max/mean) of nodes, training nodes and degree (edges),
 * halo nodes, METIS's memory estimate and
 * the peak resident memory of the process so far.
 */
#include "graph/partition.h"
#include "bench_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

int
main(int argc, char **argv)
{
	int64_t		n = argc > 1 ? atoll(argv[1]) : 2500000;
	int64_t		m = argc > 2 ? atoll(argv[2]) : 60000000;
	int			nparts = argc > 3 ? argc - 3 : 2;
	int			parts[16] = {4, 16};
	int			scale = 0;
	int64_t    *src,
			   *dst,
			   *ids,
				k = 0;
	uint8_t    *split;
	gnn_rng		rng;
	gnn_graph_input in;
	gnn_graph	g;
	void	   *region;
	uint64_t	size;
	gnn_error	err;
	int32_t    *part;
	double		t0;

	for (int i = 0; i < nparts && i < 16 && argc > 3; i++)
		parts[i] = atoi(argv[3 + i]);
	while ((1LL << scale) < n)
		scale++;
	src = malloc(sizeof(int64_t) * m);
	dst = malloc(sizeof(int64_t) * m);
	ids = malloc(sizeof(int64_t) * n);
	split = malloc(n);
	part = malloc(sizeof(int32_t) * n);
	gnn_rng_seed(&rng, 42);
	t0 = now_s();
	for (k = 0; k < m; k++)
		rmat_edge(&rng, scale, n, true, &src[k], &dst[k]);
	for (int64_t v = 0; v < n; v++)
	{
		ids[v] = v;
		split[v] = gnn_rng_below(&rng, 100) < 8 ? GNN_SPLIT_TRAIN : GNN_SPLIT_TEST;
	}
	memset(&in, 0, sizeof(in));
	in.num_edges = m;
	in.src = src;
	in.dst = dst;
	in.num_nodes = n;
	in.node_ids = ids;
	in.split = split;
	if (gnn_graph_build_region(&in, &region, &size, &g, &err) != GNN_OK)
	{
		fprintf(stderr, "build: %s\n", err.msg);
		return 1;
	}
	free(src);
	free(dst);
	printf("# R-MAT: %lld nodes, %lld directed edges drawn, %lld arcs after merging duplicates; generated and built in %.1f s; peak RSS %.2f GB\n",
		   (long long) g.num_nodes, (long long) m, (long long) g.num_edges, now_s() - t0, peak_gb());
	printf("%-10s %5s %9s %9s %9s %9s %9s %12s %10s %10s\n", "method", "parts", "seconds", "cut", "bal_nodes",
		   "bal_train", "bal_edges", "halo", "est_GB", "peak_GB");
	for (int i = 0; i < nparts; i++)
		for (int meth = 0; meth < 3; meth++)
		{
			gnn_partition_config cfg;
			gnn_part_stats st;
			double		secs;

			gnn_partition_config_default(&cfg);
			cfg.parts = parts[i];
			cfg.method = (gnn_part_method) meth;
			cfg.balance = GNN_BAL_NODES | GNN_BAL_TRAIN;
			cfg.seed = 1;
			if (gnn_partition_compute(&g, &cfg, part, &secs, &err) != GNN_OK ||
				gnn_part_stats_compute(&g, part, parts[i], &st, &err) != GNN_OK)
			{
				fprintf(stderr, "%s: %s\n", gnn_part_method_name(cfg.method), err.msg);
				return 1;
			}
			printf("%-10s %5d %9.2f %9.4f %9.3f %9.3f %9.3f %12lld %10.2f %10.2f\n", gnn_part_method_name(cfg.method),
				   parts[i], secs, st.cut_fraction, st.balance[0], st.balance[1], st.balance[2], (long long) st.halo,
				   meth == 0 ? gnn_partition_metis_memory(&g, parts[i], cfg.balance) / 1e9 / 1.073741824 : 0.0,
				   peak_gb());
			fflush(stdout);
			gnn_part_stats_free(&st);
		}
	free(region);
	free(part);
	free(ids);
	free(split);
	return 0;
}
