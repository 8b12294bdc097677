/*
 * bench_util.h: what the C benchmarks share (one copy, not one per
 * program): a monotonic clock, a comparator for sorting timings, the peak
 * resident set, integer settings from the environment, the R-MAT edge
 * generator of the synthetic graphs, and the labelled R-MAT graph the
 * training benchmarks build from it.
 */
#ifndef GNN_BENCH_UTIL_H
#define GNN_BENCH_UTIL_H

#include "base/gnn_core.h"
#include "graph/graph.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

/* seconds on the monotonic clock */
static inline double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* qsort's comparator for doubles, ascending */
static inline int
cmp_double(const void *a, const void *b)
{
	double		x = *(const double *) a,
				y = *(const double *) b;

	return x < y ? -1 : x > y;
}

/* the process's peak resident set, GB */
static inline double
peak_gb(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_maxrss / 1048576.0;
}

/* an integer setting from the environment, def where unset or empty */
static inline long long
env_ll(const char *name, long long def)
{
	const char *s = getenv(name);

	return s && *s ? atoll(s) : def;
}

/* a comma-separated list of numbers ("10,5", "0.3,1") into out[0..max): how many it holds */
static inline int
parse_list(const char *s, double *out, int max)
{
	int			n = 0;

	for (const char *p = s; *p && n < max;)
	{
		char	   *end;

		out[n++] = strtod(p, &end);
		p = *end ? end + 1 : end;
	}
	return n;
}

/*
 * One R-MAT edge with the Graph500 parameters (a=0.57, b=0.19, c=0.19,
 * d=0.05) over 2^scale ids: one draw per bit picks the quadrant, whose high
 * bit goes to the source and low bit to the destination.  Drawn again
 * while an end is >= n, or while it is a self-loop when no_loops.
 */
static inline void
rmat_edge(gnn_rng *r, int scale, int64_t n, bool no_loops, int64_t *src, int64_t *dst)
{
	int64_t		s,
				d;

	do
	{
		s = d = 0;
		for (int b = 0; b < scale; b++)
		{
			double		u = gnn_rng_double(r);
			int			q = u < 0.57 ? 0 : u < 0.76 ? 1 : u < 0.95 ? 2 : 3;

			s = (s << 1) | (q >> 1);
			d = (d << 1) | (q & 1);
		}
	} while (s >= n || d >= n || (no_loops && s == d));
	*src = s;
	*dst = d;
}

/*
 * A labelled R-MAT graph for the training benchmarks: 2^scale nodes (ids
 * 0..n-1), edges R-MAT edges (seed 1) made undirected, dim-dimensional
 * dense features in [offset, offset + 1) and one of classes labels, each a
 * hash of the node; the node's split by another hash u in [0, 1): training
 * below train, validation below train + val, test below train + val + test
 * (fractions), else none.  Into a malloc'd region; false (with err) when
 * it cannot.  (sage_floor_bench: training below train_pct, the rest test,
 * features offset -0.5.)
 */
static inline bool
bench_rmat_graph(int scale, int64_t edges, int dim, int classes, double train, double val, double test,
				 float offset, void **region, uint64_t *size, gnn_graph *g, gnn_error *err)
{
	int64_t		n = (int64_t) 1 << scale;
	int64_t    *src = malloc(sizeof(int64_t) * (size_t) edges),
			   *dst = malloc(sizeof(int64_t) * (size_t) edges),
			   *ids = malloc(sizeof(int64_t) * (size_t) n);
	float	   *feat = malloc(sizeof(float) * (size_t) n * dim);
	int32_t    *labels = malloc(sizeof(int32_t) * (size_t) n);
	uint8_t    *split = malloc((size_t) n);
	gnn_graph_input in = {0};
	gnn_rng		r;
	bool		ok = false;

	if (!src || !dst || !ids || !feat || !labels || !split)
		gnn_error_set(err, GNN_ERR_NOMEM, "out of memory for the graph");
	else
	{
		gnn_rng_seed(&r, 1);
		for (int64_t e = 0; e < edges; e++)
			rmat_edge(&r, scale, n, false, &src[e], &dst[e]);
#pragma omp parallel for schedule(static)
		for (int64_t v = 0; v < n; v++)
		{
			uint64_t	h = gnn_mix64((uint64_t) v + 0x9e3779b97f4a7c15ULL);
			double		u = (double) (gnn_mix64(h + 0x9e3779b97f4a7c15ULL) >> 11) * (1.0 / 9007199254740992.0);

			ids[v] = v;
			labels[v] = (int32_t) (h % (uint64_t) classes);
			split[v] = u < train ? GNN_SPLIT_TRAIN : u < train + val ? GNN_SPLIT_VAL :
				u < train + val + test ? GNN_SPLIT_TEST : GNN_SPLIT_NONE;
			for (int k = 0; k < dim; k++)
				feat[v * dim + k] = (float) (gnn_mix64(h + (uint64_t) k + 0x9e3779b97f4a7c15ULL) >> 40) *
					(1.0f / 16777216.0f) + offset;
		}
		in.num_edges = edges;
		in.src = src;
		in.dst = dst;
		in.undirected = true;
		in.num_nodes = n;
		in.node_ids = ids;
		in.feat_dim = dim;
		in.feat = feat;
		in.labels = labels;
		in.split = split;
		ok = gnn_graph_build_region(&in, region, size, g, err) == GNN_OK;
	}
	free(src);
	free(dst);
	free(ids);
	free(feat);
	free(labels);
	free(split);
	return ok;
}

#endif
