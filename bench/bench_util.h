/*
 * bench_util.h: what the C benchmarks share (one copy, not one per
 * program): a monotonic clock, a comparator for sorting timings, the peak
 * resident set, and the R-MAT edge generator of the synthetic graphs.
 */
#ifndef GNN_BENCH_UTIL_H
#define GNN_BENCH_UTIL_H

#include "base/gnn_core.h"

#include <stdbool.h>
#include <stdint.h>
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

#endif
