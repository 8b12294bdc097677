/*
 * delta_bench.c: the time of gnn_graph_apply_changes on a graph a refresh
 * meets: NODES nodes, EDGES weighted arcs (arc_rows kept), 16 dense
 * features; CHANGES edge rows (half removed, half added), then the same
 * with NODECH node removals and NODECH upserts (half of them new ids).
 * Best of 3 each, and a hash of the result's arrays, so that two versions
 * of the code can be checked to give the same region bit for bit.  Each
 * with the region in a shared mapping mapped in by gnn_prefault as the
 * server's allocator does ("shared"), and in malloc's memory, faulted in a
 * page at a time as it is written ("malloc": here the page faults alone
 * cost about as much as the rest).
 *
 *   bash bench/delta_bench.sh [nodes edges changes nodech threads]
 */
#include "graph/graph.h"
#include "bench_util.h"

#include <sys/mman.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static uint64_t rs = 88172645463325252ULL;

static uint64_t
rnd(void)
{
	rs ^= rs << 13;
	rs ^= rs >> 7;
	rs ^= rs << 17;
	return rs;
}

static int	nthreads;

/* malloc: a fresh mapping, faulted in page by page as it is written */
static void *
alloc_malloc(void *arg, uint64_t bytes)
{
	(void) arg;
	return malloc(bytes);
}

/* as the server allocates a region: a shared mapping, mapped in at once */
static void *
alloc_shared(void *arg, uint64_t bytes)
{
	void	   *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	(void) arg;
	if (p == MAP_FAILED)
		return NULL;
	gnn_prefault(p, bytes, nthreads);
	return p;
}

static uint64_t
fnv(uint64_t h, const void *p, uint64_t n)
{
	const unsigned char *c = p;

	for (uint64_t i = 0; i < n; i++)
		h = (h ^ c[i]) * 1099511628211ULL;
	return h;
}

/* a hash of the arrays (not the region: padding between arrays is not written) */
static uint64_t
graph_hash(const gnn_graph *g)
{
	uint64_t	h = 14695981039346656037ULL;
	int64_t		n = g->num_nodes,
				m = g->num_edges;

	h = fnv(h, g->ids, 8 * n);
	h = fnv(h, g->indptr, 8 * (n + 1));
	h = fnv(h, g->indices, 4 * m);
	h = fnv(h, g->rindptr, 8 * (n + 1));
	h = fnv(h, g->rindices, 4 * m);
	if (g->weights)
	{
		h = fnv(h, g->weights, 4 * m);
		h = fnv(h, g->rweights, 4 * m);
	}
	if (g->arc_rows)
		h = fnv(h, g->arc_rows, 4 * m);
	if (g->feat)
		h = fnv(h, g->feat, 4 * n * (uint64_t) g->feat_dim);
	return h;
}

static void
run(const char *what, const gnn_graph *base, const gnn_graph_changes *ch, bool shared)
{
	double		best = 1e30;
	uint64_t	h = 0;
	int64_t		m = 0;

	for (int rep = 0; rep < 3; rep++)
	{
		void	   *reg;
		uint64_t	sz;
		gnn_error	err;
		gnn_graph	g;
		double		t0 = now_s();

		if (gnn_graph_apply_changes(base, ch, shared ? alloc_shared : alloc_malloc, NULL, &reg, &sz, NULL,
									&err) != GNN_OK)
		{
			fprintf(stderr, "apply: %s\n", err.msg);
			exit(1);
		}
		double		t = now_s() - t0;

		if (t < best)
			best = t;
		if (ch->as_delta ? gnn_graph_attach_delta(base->region, ((const gnn_graph_header *) base->region)->total_bytes,
												  reg, sz, &g, &err) != GNN_OK
			: gnn_graph_attach(reg, sz, &g, &err) != GNN_OK)
		{
			fprintf(stderr, "attach: %s\n", err.msg);
			exit(1);
		}
		/* a delta: its size (the view reads the rows through it) */
		h = ch->as_delta ? sz : graph_hash(&g);
		m = g.num_edges;
		if (shared)
			munmap(reg, sz);
		else
			free(reg);
	}
	printf("%-24s %-8s %8.3f s  (%lld arcs, hash %016llx)\n", what, shared ? "shared" : "malloc", best,
		   (long long) m, (unsigned long long) h);
}

int
main(int argc, char **argv)
{
	int64_t		n = argc > 1 ? atoll(argv[1]) : 1000000,
				e = argc > 2 ? atoll(argv[2]) : 10000000,
				nc = argc > 3 ? atoll(argv[3]) : 100000,
				nn = argc > 4 ? atoll(argv[4]) : 1000;
	int			T = nthreads = argc > 5 ? atoi(argv[5]) : 2;
	int			dim = 16;
	int64_t    *ids = malloc(8 * n),
			   *src = malloc(8 * e),
			   *dst = malloc(8 * e);
	float	   *w = malloc(4 * e),
			   *feat = malloc(4 * n * dim);

	for (int64_t i = 0; i < n; i++)
		ids[i] = 2 * i;			/* gaps: new ids fit between */
	for (int64_t i = 0; i < n * dim; i++)
		feat[i] = (float) (rnd() % 1000) / 100.0f;
	for (int64_t i = 0; i < e; i++)
	{
		src[i] = ids[rnd() % n];
		dst[i] = ids[rnd() % n];
		w[i] = (float) (1 + rnd() % 1000000) / 7919.0f;	/* not on a grid: sums round */
	}

	gnn_graph_input in = {0};
	gnn_graph	g;
	gnn_error	err;
	void	   *region;
	uint64_t	size;
	double		t0 = now_s();

	in.num_nodes = n;
	in.node_ids = ids;
	in.num_edges = e;
	in.src = src;
	in.dst = dst;
	in.weight = w;
	in.feat_dim = dim;
	in.feat = feat;
	in.keep_arc_rows = true;
	in.nthreads = T;
	if (gnn_graph_build_region(&in, &region, &size, &g, &err) != GNN_OK)
	{
		fprintf(stderr, "build: %s\n", err.msg);
		return 1;
	}
	printf("graph: %lld nodes, %lld arcs, region %.0f MB, built in %.2f s; %d threads\n",
		   (long long) g.num_nodes, (long long) g.num_edges, size / 1e6, now_s() - t0, T);

	/* edge changes: half removals of existing rows (distinct), half additions */
	int64_t		nrm = nc / 2,
				nadd = nc - nrm;
	int64_t    *rm_src = malloc(8 * (nrm + 1)),
			   *rm_dst = malloc(8 * (nrm + 1)),
			   *add_src = malloc(8 * (nadd + 1)),
			   *add_dst = malloc(8 * (nadd + 1));
	float	   *rm_w = malloc(4 * (nrm + 1)),
			   *add_w = malloc(4 * (nadd + 1));

	for (int64_t k = 0; k < nrm; k++)
	{
		/* a partial Fisher-Yates over the rows: each removed once */
		int64_t		j = k + (int64_t) (rnd() % (uint64_t) (e - k)),
					t;
		float		tw;

		t = src[k], src[k] = src[j], src[j] = t;
		t = dst[k], dst[k] = dst[j], dst[j] = t;
		tw = w[k], w[k] = w[j], w[j] = tw;
		rm_src[k] = src[k];
		rm_dst[k] = dst[k];
		rm_w[k] = w[k];
	}
	for (int64_t k = 0; k < nadd; k++)
	{
		add_src[k] = ids[rnd() % n];
		add_dst[k] = ids[rnd() % n];
		add_w[k] = (float) (1 + rnd() % 1000000) / 7919.0f;
	}

	gnn_graph_changes ch = {0};

	ch.num_removed_edges = nrm;
	ch.rm_src = rm_src;
	ch.rm_dst = rm_dst;
	ch.rm_weight = rm_w;
	ch.num_added_edges = nadd;
	ch.add_src = add_src;
	ch.add_dst = add_dst;
	ch.add_weight = add_w;
	ch.nthreads = T;
	run("edge changes", &g, &ch, true);
	run("edge changes", &g, &ch, false);
	/* the same as a delta over the graph (a refresh under gnn.merge_threshold); "hash": its bytes */
	ch.as_delta = true;
	run("edge changes, delta", &g, &ch, true);
	ch.as_delta = false;

	/* and node changes: removals, updates and new ids (odd: between the old ones) */
	int64_t    *rm_nodes = malloc(8 * (nn + 1)),
			   *up_ids = malloc(8 * (nn + 1));
	float	   *up_feat = malloc(4 * (nn + 1) * dim);

	for (int64_t k = 0; k < nn; k++)
	{
		rm_nodes[k] = ids[rnd() % n];
		up_ids[k] = k % 2 ? ids[rnd() % n] : ids[rnd() % n] + 1;
		for (int j = 0; j < dim; j++)
			up_feat[k * dim + j] = (float) (rnd() % 1000) / 100.0f;
	}
	/* edges added at new nodes too */
	for (int64_t k = 0; k < nadd && k < nn; k++)
		add_src[k] = up_ids[k];
	ch.num_removed_nodes = nn;
	ch.rm_nodes = rm_nodes;
	ch.num_upserted_nodes = nn;
	ch.up_ids = up_ids;
	ch.up_feat = up_feat;
	ch.skip_dangling = true;	/* added rows at removed nodes */
	run("edge and node changes", &g, &ch, true);
	run("edge and node changes", &g, &ch, false);

	/* no changes at all: the floor (a copy of the region) */
	gnn_graph_changes none = {0};

	none.nthreads = T;
	run("no changes", &g, &none, true);
	run("no changes", &g, &none, false);
	return 0;
}
