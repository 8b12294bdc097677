/*
 * typed_graph.h: the reverse CSR of a typed test graph from its arcs, for the
 * core tests that build typed graphs by hand (test_hetero, test_infer_temporal).
 */
#ifndef GNN_TEST_TYPED_GRAPH_H
#define GNN_TEST_TYPED_GRAPH_H

#include <stdint.h>
#include <stdlib.h>

typedef struct tg_arc
{
	int32_t		dst,
				src;
	int16_t		rel;
} tg_arc;

static int
tg_cmp_arc(const void *a, const void *b)
{
	const tg_arc *x = a,
			   *y = b;

	if (x->dst != y->dst)
		return x->dst < y->dst ? -1 : 1;
	if (x->src != y->src)
		return x->src < y->src ? -1 : 1;
	return (x->rel > y->rel) - (x->rel < y->rel);
}

/*
 * Sort arcs by (destination, source, relation), merge repeats, and make the
 * reverse CSR of n nodes: rptr[n+1], ridx and rtype (malloc'd).  Returns
 * the arcs kept.
 */
static int64_t
tg_reverse_csr(tg_arc *arcs, int64_t m, int64_t n, int64_t **rptr, int32_t **ridx, int16_t **rtype)
{
	int64_t		k = 0;

	qsort(arcs, m, sizeof(tg_arc), tg_cmp_arc);
	*rptr = calloc(n + 1, sizeof(int64_t));
	*ridx = malloc(sizeof(int32_t) * (m + 1));
	*rtype = malloc(sizeof(int16_t) * (m + 1));
	for (int64_t e = 0; e < m; e++)
	{
		if (e > 0 && tg_cmp_arc(&arcs[e], &arcs[e - 1]) == 0)
			continue;
		(*ridx)[k] = arcs[e].src;
		(*rtype)[k] = arcs[e].rel;
		(*rptr)[arcs[e].dst + 1]++;
		k++;
	}
	for (int64_t i = 0; i < n; i++)
		(*rptr)[i + 1] += (*rptr)[i];
	return k;
}

#endif							/* GNN_TEST_TYPED_GRAPH_H */
