/*
 * build_bench: the core graph build (gnn_graph_build_region) alone, on the
 * edges a load of R-MAT `edges(src int, dst int)` hands it (32-bit ids, no
 * node table), with 1 and with all threads.  Prints the median of REPS
 * builds per thread count and the region's FNV-1a digest, which must not
 * change when the build is made faster.
 *
 *   bench/bin/build_bench SCALE EDGES REPS
 */
#include "bench_util.h"
#include "graph/graph.h"
#include "graph/graph_int.h"

#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

int
main(int argc, char **argv)
{
	int			scale = argc > 1 ? atoi(argv[1]) : 20;
	int64_t		m = argc > 2 ? atoll(argv[2]) : 10000000;
	int			reps = argc > 3 ? atoi(argv[3]) : 5;
	int32_t    *src = malloc(sizeof(int32_t) * m),
			   *dst = malloc(sizeof(int32_t) * m);
	gnn_rng		r;
	int			maxt = omp_get_max_threads();

	gnn_rng_seed(&r, 42);
	for (int64_t e = 0; e < m; e++)
	{
		int64_t		s,
					d;

		rmat_edge(&r, scale, (int64_t) 1 << scale, false, &s, &d);
		src[e] = (int32_t) s;
		dst[e] = (int32_t) d;
	}
	printf("# build_bench: R-MAT scale %d, %lld edges, 32-bit ids, %d reps\n", scale, (long long) m, reps);
	for (int T = 1; T <= maxt; T = T == maxt ? maxt + 1 : (T * 2 > maxt ? maxt : T * 2))
	{
		double	   *t = malloc(sizeof(double) * reps);
		uint64_t	digest = 0;
		int64_t		n = 0,
					arcs = 0;

		for (int k = 0; k < reps; k++)
		{
			gnn_graph_input in = {0};
			gnn_graph	g;
			gnn_error	err;
			void	   *region = NULL;
			uint64_t	size = 0;

			in.num_edges = m;
			in.src32 = src;
			in.dst32 = dst;
			in.nthreads = T;
			double		t0 = now_s();

			if (gnn_graph_build_region(&in, &region, &size, &g, &err) != GNN_OK)
			{
				fprintf(stderr, "build failed: %s\n", err.msg);
				return 1;
			}
			t[k] = now_s() - t0;
			digest = gnn_graph_fnv1a(region, size);
			n = g.num_nodes;
			arcs = g.num_edges;
			free(region);
		}
		qsort(t, reps, sizeof(double), cmp_double);
		printf("threads %d: median %.3f s (min %.3f, max %.3f); %lld nodes, %lld arcs, digest %016llx\n",
			   T, t[reps / 2], t[0], t[reps - 1], (long long) n, (long long) arcs, (unsigned long long) digest);
		free(t);
	}
	return 0;
}
