/*
 * test_sample_typed: neighbour sampling on typed graphs (per-relation
 * fan-outs, relations and node types in the blocks) and time-aware sampling
 * (no sampled node later than its seed, the 'last' strategy, uniform draws
 * among the admissible neighbours), on graphs built by hand: the test fills
 * gnn_graph views over its own arrays, so it depends only on graph.h's
 * layout contract (rows sorted by neighbour index, then relation).
 *
 * Chi-squared thresholds are far in the tail (p < 1e-4) and the seeds are
 * fixed, so the tests are deterministic.
 */
#include "check.h"
#include "sample/sample.h"
#include "train/train_mb.h"

#include <math.h>

/* ------------------------------------------------------------------ graphs */

typedef struct tarc
{
	int32_t		src;
	int32_t		dst;
	int16_t		rel;
} tarc;

/* a graph view and the arrays it points at */
typedef struct tgraph
{
	gnn_graph	g;
	int64_t    *type_ptr;
	int16_t    *node_type;
	gnn_edge_type *etypes;
	int64_t    *rindptr;
	int32_t    *rindices;
	int16_t    *rarc;
	float	   *rw;
	int64_t    *time;
} tgraph;

static int
tarc_cmp(const void *a, const void *b)
{
	const tarc *x = a,
			   *y = b;

	if (x->dst != y->dst)
		return x->dst < y->dst ? -1 : 1;
	if (x->src != y->src)
		return x->src < y->src ? -1 : 1;
	return (x->rel > y->rel) - (x->rel < y->rel);
}

/*
 * Build the reverse CSR of arcs (sorted by destination, then source, then
 * relation; same-relation duplicates merged), as graph.h lays it out.
 * ntypes[t] nodes per type; rel_src / rel_dst per relation (R of them);
 * R == 1 leaves rarc_type NULL, T == 1 node_type NULL.  weighted: weight of
 * an arc = 1 + (src % 3).  time may be NULL.
 */
static void
tgraph_build(tgraph *tg, int T, const int64_t *ntypes, int R, const int32_t *rel_src,
			 const int32_t *rel_dst, tarc *arcs, int64_t m, bool weighted, const int64_t *time)
{
	int64_t		n = 0,
				k = 0;

	memset(tg, 0, sizeof(*tg));
	tg->type_ptr = malloc(sizeof(int64_t) * (T + 1));
	tg->type_ptr[0] = 0;
	for (int t = 0; t < T; t++)
		tg->type_ptr[t + 1] = tg->type_ptr[t] + ntypes[t];
	n = tg->type_ptr[T];
	if (T > 1)
	{
		tg->node_type = malloc(sizeof(int16_t) * n);
		for (int t = 0; t < T; t++)
			for (int64_t v = tg->type_ptr[t]; v < tg->type_ptr[t + 1]; v++)
				tg->node_type[v] = (int16_t) t;
	}
	tg->etypes = calloc(R, sizeof(gnn_edge_type));
	for (int r = 0; r < R; r++)
	{
		tg->etypes[r].src_type = rel_src[r];
		tg->etypes[r].dst_type = rel_dst[r];
	}
	qsort(arcs, m, sizeof(tarc), tarc_cmp);
	tg->rindptr = calloc(n + 1, sizeof(int64_t));
	tg->rindices = malloc(sizeof(int32_t) * (m + 1));
	tg->rarc = R > 1 ? malloc(sizeof(int16_t) * (m + 1)) : NULL;
	tg->rw = weighted ? malloc(sizeof(float) * (m + 1)) : NULL;
	for (int64_t e = 0; e < m; e++)
	{
		if (e > 0 && tarc_cmp(&arcs[e], &arcs[e - 1]) == 0)
			continue;
		tg->rindices[k] = arcs[e].src;
		if (tg->rarc)
			tg->rarc[k] = arcs[e].rel;
		if (tg->rw)
			tg->rw[k] = (float) (1 + arcs[e].src % 3);
		tg->etypes[arcs[e].rel].count++;
		tg->rindptr[arcs[e].dst + 1]++;
		k++;
	}
	for (int64_t v = 0; v < n; v++)
		tg->rindptr[v + 1] += tg->rindptr[v];
	if (time)
		tg->time = memcpy(malloc(sizeof(int64_t) * n), time, sizeof(int64_t) * n);

	tg->g.num_nodes = n;
	tg->g.num_edges = k;
	tg->g.rindptr = tg->rindptr;
	tg->g.rindices = tg->rindices;
	tg->g.rweights = tg->rw;
	tg->g.num_node_types = T;
	tg->g.type_ptr = tg->type_ptr;
	tg->g.node_type = tg->node_type;
	tg->g.num_edge_types = R;
	tg->g.etypes = tg->etypes;
	tg->g.rarc_type = tg->rarc;
	tg->g.time = tg->time;
}

static void
tgraph_free(tgraph *tg)
{
	free(tg->type_ptr);
	free(tg->node_type);
	free(tg->etypes);
	free(tg->rindptr);
	free(tg->rindices);
	free(tg->rarc);
	free(tg->rw);
	free(tg->time);
}

/*
 * A schema-like graph: users (type 0), items (1), tags (2).  Relations:
 * 0 item->user (bought), 1 item->user (viewed: the same endpoint types as
 * 0, so the two interleave in rows), 2 tag->user, 3 user->item, 4 tag->item,
 * 5 user->tag.  Degrees vary from 0 to a few dozen per relation, so fan-outs
 * meet both rows shorter and longer than k.
 */
enum
{
	NREL = 6
};
static const int32_t rel_src[NREL] = {1, 1, 2, 0, 2, 0};
static const int32_t rel_dst[NREL] = {0, 0, 0, 1, 1, 2};

static void
schema_graph(tgraph *tg, int64_t nu, int64_t ni, int64_t nt, bool weighted, bool timed, uint64_t seed)
{
	int64_t		ntypes[3] = {nu, ni, nt};
	int64_t		n = nu + ni + nt,
				cap = n * 64,
				m = 0;
	int64_t		base[3] = {0, nu, nu + ni};
	tarc	   *arcs = malloc(sizeof(tarc) * cap);
	int64_t    *time = NULL;
	gnn_rng		r;

	gnn_rng_seed(&r, seed);
	for (int rel = 0; rel < NREL; rel++)
	{
		int			st = rel_src[rel],
					dt = rel_dst[rel];

		for (int64_t v = 0; v < ntypes[dt]; v++)
		{
			/* 0 .. 24 arcs of this relation into v */
			int64_t		d = (int64_t) gnn_rng_below(&r, 25);

			for (int64_t q = 0; q < d && m < cap; q++)
				arcs[m++] = (tarc) {(int32_t) (base[st] + (int64_t) gnn_rng_below(&r, ntypes[st])),
				(int32_t) (base[dt] + v), (int16_t) rel};
		}
	}
	if (timed)
	{
		time = malloc(sizeof(int64_t) * n);
		for (int64_t v = 0; v < n; v++)
			time[v] = gnn_rng_below(&r, 10) == 0 ? GNN_TIME_NONE : (int64_t) gnn_rng_below(&r, 1000);
	}
	tgraph_build(tg, 3, ntypes, NREL, rel_src, rel_dst, arcs, m, weighted, time);
	free(arcs);
	free(time);
}

/* ------------------------------------------------------------------ helpers */

static double
chi2_limit(int df)
{
	double		z = 3.719;
	double		a = 2.0 / (9.0 * df);

	return df * pow(1 - a + z * sqrt(a), 3);
}

static uint64_t
fnv(uint64_t h, const void *p, size_t n)
{
	const unsigned char *c = p;

	for (size_t i = 0; i < n; i++)
		h = (h ^ c[i]) * 0x100000001b3ULL;
	return h;
}

/* a fingerprint of everything a batch holds */
static uint64_t
batch_hash(const gnn_minibatch *mb)
{
	uint64_t	h = 0xcbf29ce484222325ULL;

	h = fnv(h, mb->input_nodes, sizeof(int32_t) * mb->n_input);
	if (mb->bound)
		h = fnv(h, mb->bound, sizeof(int64_t) * mb->n_input);
	for (int l = 0; l < mb->nhops; l++)
	{
		const gnn_block *b = &mb->blocks[l];

		h = fnv(h, &b->nnz, sizeof(b->nnz));
		h = fnv(h, b->indptr, sizeof(int64_t) * (b->n_dst + 1));
		h = fnv(h, b->indices, sizeof(int32_t) * b->nnz);
		if (b->etypes)
			h = fnv(h, b->etypes, sizeof(int16_t) * b->nnz);
		if (b->weights)
			h = fnv(h, b->weights, sizeof(float) * b->nnz);
		if (b->dst_ntype)
			h = fnv(h, b->dst_ntype, sizeof(int16_t) * b->n_dst);
	}
	return h;
}

/* arcs of relation rel from u into v */
static int64_t
arcs_between(const gnn_graph *g, int32_t v, int32_t u, int rel)
{
	int64_t		c = 0;

	for (int64_t e = g->rindptr[v]; e < g->rindptr[v + 1]; e++)
		c += g->rindices[e] == u && (g->rarc_type ? g->rarc_type[e] : 0) == rel;
	return c;
}

/* in-arcs of relation rel into v admissible under bound b (b = INT64_MAX: all) */
static int64_t
avail(const gnn_graph *g, int32_t v, int rel, int64_t b)
{
	int64_t		c = 0;

	for (int64_t e = g->rindptr[v]; e < g->rindptr[v + 1]; e++)
		c += (g->rarc_type ? g->rarc_type[e] : 0) == rel && (!g->time || g->time[g->rindices[e]] <= b);
	return c;
}

/* ------------------------------------------------------------------ (a) typed fan-outs */

static void
test_typed_fanouts(void)
{
	tgraph		tg;
	const gnn_graph *g;
	gnn_error	err;
	enum
	{
		NS = 1500
	};
	int32_t		seeds[NS];
	/* hop 1: all of relation 2, none of 5; hop 2: 2 per relation, 1 of relation 1 */
	int32_t		tf[2 * NREL] = {5, 3, -1, 4, 6, 0,
	2, 1, 2, 2, 2, 2};
	struct
	{
		const char *name;
		bool		replace;
		bool		weighted;
		const int32_t *type_fanouts;
	}			cases[] = {
		{"typed, uniform without replacement", false, false, tf},
		{"typed, uniform with replacement", true, false, tf},
		{"typed, weighted without replacement", false, true, tf},
		{"typed, one fan-out for every relation", false, false, NULL},
	};

	schema_graph(&tg, 3000, 2000, 300, true, false, 11);
	g = &tg.g;
	for (int i = 0; i < NS; i++)
		seeds[i] = (int32_t) ((i * 7919) % (3000 + 2000 + 300));

	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++)
	{
		gnn_sampler_config cfg = {0};
		gnn_sampler *s1,
				   *s2;
		gnn_minibatch mb;
		uint64_t	h1 = 0,
					h2 = 0;
		int64_t		bad_count = 0,
					bad_arc = 0,
					bad_type = 0,
					bad_dup = 0,
					rows = 0,
					short_rows = 0,
					long_rows = 0;

		cfg.nhops = 2;
		cfg.fanouts[0] = 4;
		cfg.fanouts[1] = 3;
		cfg.type_fanouts = cases[c].type_fanouts;
		cfg.replace = cases[c].replace;
		cfg.weighted = cases[c].weighted;
		cfg.nthreads = 1;
		if (gnn_sampler_create(g, &cfg, &s1, &err) != GNN_OK)
		{
			CHECK(0, "%s: create: %s", cases[c].name, err.msg);
			continue;
		}
		cfg.nthreads = 2;
		if (gnn_sampler_create(g, &cfg, &s2, &err) != GNN_OK)
		{
			CHECK(0, "%s: create: %s", cases[c].name, err.msg);
			gnn_sampler_free(s1);
			continue;
		}
		if (gnn_sampler_sample(s1, seeds, NS, 42, &mb, &err) != GNN_OK)
		{
			CHECK(0, "%s: sample: %s", cases[c].name, err.msg);
			gnn_sampler_free(s1);
			gnn_sampler_free(s2);
			continue;
		}
		h1 = batch_hash(&mb);
		for (int hop = 0; hop < 2; hop++)
		{
			const gnn_block *b = &mb.blocks[1 - hop];

			CHECK(b->etypes != NULL && b->dst_ntype != NULL, "%s: hop %d block carries relations and node types",
				  cases[c].name, hop + 1);
			if (!b->etypes || !b->dst_ntype)
				continue;
			for (int64_t i = 0; i < b->n_dst; i++)
			{
				int32_t		v = mb.input_nodes[i];
				int			t = gnn_graph_type_of(g, v);

				bad_type += b->dst_ntype[i] != t;
				for (int rel = 0; rel < NREL; rel++)
				{
					int64_t		k = cases[c].type_fanouts ? cases[c].type_fanouts[hop * NREL + rel] : cfg.fanouts[hop];
					int64_t		av = rel_dst[rel] == t ? avail(g, v, rel, INT64_MAX) : 0;
					int64_t		got = 0,
								want;

					/* weighted: every arc weighs > 0 here, so all are available */
					want = k < 0 ? av : cases[c].replace ? (av > 0 ? k : 0) : (k < av ? k : av);
					for (int64_t e = b->indptr[i]; e < b->indptr[i + 1]; e++)
						if (b->etypes[e] == rel)
						{
							got++;
							/* without replacement: each (source, relation) at most once */
							if (!cases[c].replace)
								for (int64_t f = b->indptr[i]; f < e; f++)
									bad_dup += b->etypes[f] == rel && b->indices[f] == b->indices[e];
						}
					bad_count += got != want;
					rows++;
					short_rows += k > 0 && av > 0 && av < k;
					long_rows += k > 0 && av > k;
				}
				for (int64_t e = b->indptr[i]; e < b->indptr[i + 1]; e++)
					bad_arc += b->etypes[e] < 0 || b->etypes[e] >= NREL ||
						arcs_between(g, v, mb.input_nodes[b->indices[e]], b->etypes[e]) != 1;
			}
		}
		NOTE("%s: %lld (destination, relation) rows, %lld shorter than k, %lld longer; %lld sampled edges",
			 cases[c].name, (long long) rows, (long long) short_rows, (long long) long_rows,
			 (long long) mb.sampled_edges);
		CHECK(short_rows > 100 && long_rows > 100, "%s: the graph has rows shorter and longer than k", cases[c].name);
		CHECK(bad_count == 0, "%s: entries per (destination, relation) = min(k, available) (%lld wrong)",
			  cases[c].name, (long long) bad_count);
		CHECK(bad_arc == 0, "%s: every entry is an arc of its relation (%lld not)", cases[c].name, (long long) bad_arc);
		CHECK(bad_type == 0, "%s: dst_ntype is each destination's type (%lld wrong)", cases[c].name,
			  (long long) bad_type);
		CHECK(bad_dup == 0, "%s: no (source, relation) drawn twice without replacement (%lld)", cases[c].name,
			  (long long) bad_dup);
		if (gnn_sampler_sample(s2, seeds, NS, 42, &mb, &err) != GNN_OK)
			CHECK(0, "%s: sample on 2 threads: %s", cases[c].name, err.msg);
		else
		{
			h2 = batch_hash(&mb);
			CHECK(mb.sampled_edges > 4096, "%s: big enough for the parallel path (%lld edges)", cases[c].name,
				  (long long) mb.sampled_edges);
			CHECK(h1 == h2, "%s: same sample on 1 and 2 threads", cases[c].name);
		}
		if (gnn_sampler_sample(s2, seeds, NS, 43, &mb, &err) == GNN_OK)
			CHECK(batch_hash(&mb) != h1, "%s: another seed, another sample", cases[c].name);
		gnn_sampler_free(s1);
		gnn_sampler_free(s2);
	}

	/* bad typed fan-outs and the ladies sampler on a typed graph are refused */
	{
		gnn_sampler_config cfg = {0};
		gnn_sampler *s = NULL;
		int32_t		bad[2 * NREL] = {1, 1, 1, 1, 1, -2, 1, 1, 1, 1, 1, 1};

		cfg.nhops = 2;
		cfg.type_fanouts = bad;
		CHECK(gnn_sampler_create(g, &cfg, &s, &err) == GNN_ERR_INVALID, "a typed fan-out of -2 is refused");
		gnn_sampler_free(s);
		s = NULL;
		cfg.type_fanouts = NULL;
		cfg.kind = GNN_SAMPLER_LADIES;
		cfg.fanouts[0] = cfg.fanouts[1] = 10;
		CHECK(gnn_sampler_create(g, &cfg, &s, &err) == GNN_ERR_INVALID, "ladies on a typed graph is refused: %s",
			  err.msg);
		gnn_sampler_free(s);
		s = NULL;
		cfg.kind = GNN_SAMPLER_NEIGHBOR;
		cfg.temporal = true;
		CHECK(gnn_sampler_create(g, &cfg, &s, &err) == GNN_ERR_INVALID, "temporal sampling without node times is refused");
		gnn_sampler_free(s);
	}
	tgraph_free(&tg);
}

/* ------------------------------------------------------------------ (b) no future leaks */

/*
 * Walk the blocks from the seeds outwards: each node inherits the time of the
 * seed it was reached from (its first destination), and every entry's source
 * must be no later than its destination's seed time.  Returns the entries
 * that break it; *mixed counts nodes reached under two different seed times
 * (they must be separate nodes when sampling is temporal), *bad_bound nodes
 * whose mb->bound is not their seed's time.
 */
static int64_t
violations(const gnn_graph *g, const gnn_minibatch *mb, const int64_t *seed_times, int64_t *mixed,
		   int64_t *bad_bound, int64_t *checked)
{
	int64_t		n = mb->n_input,
				v = 0;
	int64_t    *st = malloc(sizeof(int64_t) * (n + 1));
	bool	   *set = calloc(n + 1, sizeof(bool));
	int			L = mb->nhops;

	*mixed = *bad_bound = 0;
	for (int64_t i = 0; i < mb->n_nodes[0]; i++)
	{
		st[i] = seed_times[i];
		set[i] = true;
	}
	for (int hop = 0; hop < L; hop++)
	{
		const gnn_block *b = &mb->blocks[L - 1 - hop];

		for (int64_t i = 0; i < b->n_dst; i++)
			for (int64_t e = b->indptr[i]; e < b->indptr[i + 1]; e++)
			{
				int32_t		j = b->indices[e];

				(*checked)++;
				v += g->time[mb->input_nodes[j]] > st[i];
				if (!set[j])
				{
					st[j] = st[i];
					set[j] = true;
				}
				else if (st[j] != st[i])
					(*mixed)++;
			}
	}
	for (int64_t j = 0; mb->bound && j < n; j++)
		*bad_bound += !set[j] || mb->bound[j] != st[j];
	free(st);
	free(set);
	return v;
}

static void
test_no_future(void)
{
	enum
	{
		NSEEDS = 10000, BATCH = 1000
	};
	tgraph		typed,
				plain;
	int32_t    *seeds = malloc(sizeof(int32_t) * NSEEDS);
	int64_t    *times = malloc(sizeof(int64_t) * NSEEDS);
	gnn_rng		r;
	gnn_error	err;

	schema_graph(&typed, 6000, 5000, 500, false, true, 5);
	/* the same arcs as one relation on one node type */
	{
		int64_t		nn = typed.g.num_nodes;
		int64_t		m = typed.g.num_edges,
					k = 0;
		tarc	   *arcs = malloc(sizeof(tarc) * (m + 1));
		int32_t		z = 0;

		for (int32_t v = 0; v < nn; v++)
			for (int64_t e = typed.rindptr[v]; e < typed.rindptr[v + 1]; e++)
				arcs[k++] = (tarc) {typed.rindices[e], v, 0};
		tgraph_build(&plain, 1, &nn, 1, &z, &z, arcs, k, false, typed.time);
		free(arcs);
	}
	/* distinct seed nodes, so seed i is batch node i */
	gnn_rng_seed(&r, 77);
	for (int64_t i = 0; i < NSEEDS; i++)
	{
		seeds[i] = (int32_t) i;
		times[i] = (int64_t) gnn_rng_below(&r, 1000);
	}
	for (int64_t i = NSEEDS - 1; i > 0; i--)
	{
		int64_t		j = (int64_t) gnn_rng_below(&r, i + 1);
		int32_t		t = seeds[i];

		seeds[i] = seeds[j];
		seeds[j] = t;
	}

	for (int gi = 0; gi < 2; gi++)
	{
		const gnn_graph *g = gi == 0 ? &typed.g : &plain.g;
		const char *gname = gi == 0 ? "typed" : "one relation";

		for (int mode = 0; mode < 3; mode++)
		{
			/* mode 0: uniform, 1: last, 2: not temporal */
			gnn_sampler_config cfg = {0};
			gnn_sampler *s;
			int64_t		bad = 0,
						mixed = 0,
						bad_bound = 0,
						checked = 0,
						extra = 0;
			bool		ok = true;

			cfg.nhops = 3;
			cfg.fanouts[0] = 3;
			cfg.fanouts[1] = 2;
			cfg.fanouts[2] = gi == 0 ? 1 : 3;
			cfg.temporal = mode < 2;
			cfg.temporal_strategy = mode == 1;
			cfg.nthreads = 1;
			if (gnn_sampler_create(g, &cfg, &s, &err) != GNN_OK)
			{
				CHECK(0, "create: %s", err.msg);
				continue;
			}
			for (int64_t b0 = 0; b0 < NSEEDS && ok; b0 += BATCH)
			{
				gnn_minibatch mb;
				int64_t		x,
							y;

				if (gnn_sampler_sample_at(s, seeds + b0, times + b0, BATCH, 1000 + b0, &mb, &err) != GNN_OK)
				{
					CHECK(0, "sample: %s", err.msg);
					ok = false;
					break;
				}
				ok = mb.n_nodes[0] == BATCH && memcmp(mb.input_nodes, seeds + b0, sizeof(int32_t) * BATCH) == 0;
				bad += violations(g, &mb, times + b0, &x, &y, &checked);
				mixed += x;
				bad_bound += y;
				/* the bound of every non-seed node also holds on its own */
				for (int64_t j = BATCH; mb.bound && j < mb.n_input; j++)
					extra += g->time[mb.input_nodes[j]] > mb.bound[j];
				if (mode < 2)
					ok = ok && mb.bound != NULL;
				if (b0 == 0 && mode < 2)
				{
					/* the same batch on two threads */
					uint64_t	h1 = batch_hash(&mb);
					gnn_sampler *s2;

					cfg.nthreads = 2;
					if (gnn_sampler_create(g, &cfg, &s2, &err) == GNN_OK &&
						gnn_sampler_sample_at(s2, seeds, times, BATCH, 1000, &mb, &err) == GNN_OK)
						CHECK(batch_hash(&mb) == h1 && mb.sampled_edges > 4096,
							  "%s, temporal %s: same sample on 1 and 2 threads", gname, mode == 0 ? "uniform" : "last");
					else
						CHECK(0, "two threads: %s", err.msg);
					gnn_sampler_free(s2);
				}
			}
			NOTE("%s, %s: %lld sampled entries over %d seeds, %lld later than their seed",
				 gname, mode == 0 ? "temporal uniform" : mode == 1 ? "temporal last" : "not temporal",
				 (long long) checked, NSEEDS, (long long) bad);
			if (mode < 2)
			{
				CHECK(ok && checked > 200000 && bad == 0 && extra == 0,
					  "%s, temporal %s: no sampled node later than its seed over %d seeds",
					  gname, mode == 0 ? "uniform" : "last", NSEEDS);
				CHECK(ok && mixed == 0 && bad_bound == 0,
					  "%s, temporal %s: nodes kept apart by seed time; mb->bound is the seed's time (%lld, %lld)",
					  gname, mode == 0 ? "uniform" : "last", (long long) mixed, (long long) bad_bound);
			}
			else
				CHECK(ok && bad > 1000, "%s, not temporal: the same check finds later nodes (%lld)", gname,
					  (long long) bad);
			gnn_sampler_free(s);
		}
	}

	/* (node, time) pairs: duplicates dropped, one node at two times kept twice */
	{
		gnn_sampler_config cfg = {0};
		gnn_sampler *s;
		gnn_minibatch mb;
		int32_t		sd[4] = {7, 7, 7, 9};
		int64_t		tm[4] = {500, 500, 100, 500};

		cfg.nhops = 1;
		cfg.fanouts[0] = 2;
		cfg.temporal = true;
		if (gnn_sampler_create(&typed.g, &cfg, &s, &err) == GNN_OK)
		{
			CHECK(gnn_sampler_sample_at(s, sd, tm, 4, 1, &mb, &err) == GNN_OK && mb.n_nodes[0] == 3 &&
				  mb.input_nodes[0] == 7 && mb.bound[0] == 500 && mb.input_nodes[1] == 7 && mb.bound[1] == 100 &&
				  mb.input_nodes[2] == 9, "seeds: (node, time) duplicates dropped, a node at two times kept twice");
			CHECK(gnn_sampler_sample(s, sd, 4, 1, &mb, &err) == GNN_ERR_INVALID,
				  "temporal sampling without seed times is refused");
			gnn_sampler_free(s);
		}
		else
			CHECK(0, "create: %s", err.msg);
	}
	free(seeds);
	free(times);
	tgraph_free(&typed);
	tgraph_free(&plain);
}

/* ------------------------------------------------------------------ (c) 'last' */

static void
test_last(void)
{
	enum
	{
		D = 40
	};
	tgraph		tg;
	tarc		arcs[2 * D];
	int64_t		n = D + 1,
				time[D + 1];
	int32_t		z[2] = {0, 0};
	gnn_error	err;
	int64_t		wrong = 0,
				cases = 0;
	int64_t		bounds[] = {GNN_TIME_NONE, 0, 3, 7, 10, 1000};
	int			ks[] = {1, 3, 5, 8, 40, -1};

	/* node 0 has in-neighbours 1..D in two relations (0: odd, 1: all), times with ties and gaps */
	time[0] = 5;
	for (int i = 1; i <= D; i++)
		time[i] = i % 7 == 0 ? GNN_TIME_NONE : (i * 37) % 11;
	for (int i = 1; i <= D; i++)
	{
		arcs[i - 1] = (tarc) {i, 0, 1};
		arcs[D + i - 1] = (tarc) {i, 0, (int16_t) (i % 2 ? 0 : 1)};
	}
	/* one node type, two relations that share it: rows interleave them */
	tgraph_build(&tg, 1, &n, 2, z, z, arcs, 2 * D, false, time);

	for (size_t bi = 0; bi < sizeof(bounds) / sizeof(bounds[0]); bi++)
		for (size_t ki = 0; ki < sizeof(ks) / sizeof(ks[0]); ki++)
		{
			gnn_sampler_config cfg = {0};
			gnn_sampler *s;
			gnn_minibatch mb;
			int32_t		seed0 = 0;
			int32_t		tf[2] = {ks[ki], ks[ki]};

			cfg.nhops = 1;
			cfg.type_fanouts = tf;
			cfg.temporal = true;
			cfg.temporal_strategy = 1;
			cfg.nthreads = 1;
			if (gnn_sampler_create(&tg.g, &cfg, &s, &err) != GNN_OK ||
				gnn_sampler_sample_at(s, &seed0, &bounds[bi], 1, 3, &mb, &err) != GNN_OK)
			{
				CHECK(0, "last: %s", err.msg);
				gnn_sampler_free(s);
				continue;
			}
			for (int rel = 0; rel < 2; rel++)
			{
				/* the expected pick: admissible arcs of rel by (time desc, index asc), the first k */
				int32_t		cand[D];
				int			m = 0,
							want;
				bool		in_want[D + 1] = {0},
							in_got[D + 1] = {0};
				int			got = 0;

				for (int64_t e = tg.rindptr[0]; e < tg.rindptr[1]; e++)
					if (tg.rarc[e] == rel && time[tg.rindices[e]] <= bounds[bi])
						cand[m++] = tg.rindices[e];
				for (int a = 1; a < m; a++)
					for (int b = a; b > 0; b--)
					{
						int32_t		x = cand[b - 1],
									y = cand[b];

						if (time[y] > time[x] || (time[y] == time[x] && y < x))
						{
							cand[b - 1] = y;
							cand[b] = x;
						}
					}
				want = ks[ki] < 0 || ks[ki] > m ? m : ks[ki];
				for (int a = 0; a < want; a++)
					in_want[cand[a]] = true;
				for (int64_t e = mb.blocks[0].indptr[0]; e < mb.blocks[0].indptr[1]; e++)
					if (mb.blocks[0].etypes[e] == rel)
					{
						int32_t		u = mb.input_nodes[mb.blocks[0].indices[e]];

						got++;
						if (in_got[u])
							wrong++;
						in_got[u] = true;
					}
				wrong += got != want;
				for (int u = 0; u <= D; u++)
					wrong += in_want[u] != in_got[u];
				cases++;
			}
			gnn_sampler_free(s);
		}
	CHECK(wrong == 0, "last: exactly the k most recent admissible per relation (ties by index, no time oldest) over %lld cases",
		  (long long) cases);
	tgraph_free(&tg);
}

/* ------------------------------------------------------------------ (d) uniform among admissible */

static void
test_uniform_unbiased(void)
{
	enum
	{
		D = 24, T = 20000, K = 3
	};
	tgraph		tg;
	tarc		arcs[D];
	int64_t		n = D + 1,
				time[D + 1],
				bound = 15;
	int32_t		z = 0;
	gnn_error	err;

	/* node 0's in-neighbours 1..D: times 0..D-1, every fifth without a time */
	time[0] = 0;
	for (int i = 1; i <= D; i++)
	{
		time[i] = i % 5 == 0 ? GNN_TIME_NONE : i - 1;
		arcs[i - 1] = (tarc) {i, 0, 0};
	}
	tgraph_build(&tg, 1, &n, 1, &z, &z, arcs, D, false, time);

	for (int rep = 0; rep < 2; rep++)
	{
		gnn_sampler_config cfg = {0};
		gnn_sampler *s;
		double		obs[D + 1] = {0};
		int			m = 0;
		int64_t		outside = 0,
					short_rows = 0;
		double		x2 = 0;

		cfg.nhops = 1;
		cfg.fanouts[0] = K;
		cfg.replace = rep == 1;
		cfg.temporal = true;
		cfg.nthreads = 1;
		if (gnn_sampler_create(&tg.g, &cfg, &s, &err) != GNN_OK)
		{
			CHECK(0, "create: %s", err.msg);
			continue;
		}
		for (int t = 0; t < T; t++)
		{
			gnn_minibatch mb;
			int32_t		seed0 = 0;

			if (gnn_sampler_sample_at(s, &seed0, &bound, 1, 100 + t, &mb, &err) != GNN_OK)
				break;
			short_rows += mb.blocks[0].nnz != K;
			for (int64_t e = 0; e < mb.blocks[0].nnz; e++)
			{
				int32_t		u = mb.input_nodes[mb.blocks[0].indices[e]];

				obs[u]++;
				outside += time[u] > bound;
			}
		}
		for (int u = 1; u <= D; u++)
			m += time[u] <= bound;
		for (int u = 1; u <= D; u++)
			if (time[u] <= bound)
			{
				double		ex = (double) T * K / m;

				x2 += (obs[u] - ex) * (obs[u] - ex) / ex;
			}
		NOTE("temporal uniform %s: %d admissible of %d, chi2 = %.1f (limit %.1f)",
			 rep ? "with replacement" : "without replacement", m, D, x2, chi2_limit(m - 1));
		CHECK(outside == 0 && short_rows == 0, "temporal uniform %s: k draws, none later than the bound",
			  rep ? "with replacement" : "without replacement");
		CHECK(x2 < chi2_limit(m - 1), "temporal uniform %s: uniform over the admissible (chi2 %.1f < %.1f)",
			  rep ? "with replacement" : "without replacement", x2, chi2_limit(m - 1));
		gnn_sampler_free(s);
	}
	tgraph_free(&tg);
}

/* ------------------------------------------------------------------ (e) minibatch training */

/*
 * A leak detector for gnn_train_minibatch.  Targets (type 0) have random
 * binary labels and noise features; each has one "oracle" in-neighbour
 * (type 1, relation 0) whose features are its label, and three noise
 * in-neighbours (type 1, relation 1, interleaved with relation 0 in the
 * rows).  Training targets' oracles are older than the target; validation and
 * test targets' oracles are newer.  With temporal sampling the model learns
 * the oracle from training targets but can never see it for validation: if
 * evaluation leaked the future (the full-neighbourhood pass), validation
 * accuracy would be as high as training accuracy.  Without temporal sampling
 * it is.
 */
/* the last epoch's training accuracy (its batches', as the weights moved) */
static void
last_train_acc(void *arg, const gnn_epoch_metrics *m)
{
	*(float *) arg = m->train_acc;
}

static void
test_train_temporal(void)
{
	enum
	{
		N = 600, P = 300, D = 6
	};
	int64_t		n = 2 * N + P;
	int64_t		ntypes[2] = {N, N + P};
	int32_t		rs[2] = {1, 1},
				rd[2] = {0, 0};
	tarc	   *arcs = malloc(sizeof(tarc) * 4 * N);
	int64_t    *time = malloc(sizeof(int64_t) * n);
	float	   *feat = calloc(n * D, sizeof(float));
	int32_t    *labels = malloc(sizeof(int32_t) * n);
	uint8_t    *split = calloc(n, 1);
	int64_t		m = 0;
	tgraph		tg;
	gnn_rng		r;

	gnn_rng_seed(&r, 2024);
	for (int64_t v = 0; v < n; v++)
	{
		labels[v] = -1;
		time[v] = 0;
	}
	for (int64_t v = 0; v < N; v++)
	{
		int64_t		o = N + v;

		labels[v] = (int32_t) gnn_rng_below(&r, 2);
		split[v] = v % 5 < 3 ? GNN_SPLIT_TRAIN : v % 5 == 3 ? GNN_SPLIT_VAL : GNN_SPLIT_TEST;
		time[v] = 100 + v % 50;
		time[o] = split[v] == GNN_SPLIT_TRAIN ? time[v] - 1 : time[v] + 1;
		feat[o * D + labels[v]] = 1;
		for (int k = 2; k < D; k++)
			feat[v * D + k] = gnn_rng_float(&r);
		arcs[m++] = (tarc) {(int32_t) o, (int32_t) v, 0};
		for (int q = 0; q < 3; q++)
			arcs[m++] = (tarc) {(int32_t) (2 * N + gnn_rng_below(&r, P)), (int32_t) v, 1};
	}
	for (int64_t u = 2 * N; u < n; u++)
		for (int k = 2; k < D; k++)
			feat[u * D + k] = gnn_rng_float(&r);
	tgraph_build(&tg, 2, ntypes, 2, rs, rd, arcs, m, false, time);
	tg.g.feat_kind = GNN_FEAT_DENSE;
	tg.g.feat_dim = D;
	tg.g.feat = feat;
	tg.g.labels = labels;
	tg.g.split = split;
	tg.g.num_classes = 2;
	for (int64_t v = 0; v < N; v++)
	{
		tg.g.n_train += split[v] == GNN_SPLIT_TRAIN;
		tg.g.n_val += split[v] == GNN_SPLIT_VAL;
		tg.g.n_test += split[v] == GNN_SPLIT_TEST;
	}

	for (int temporal = 0; temporal < 2; temporal++)
	{
		gnn_train_config cfg;
		gnn_minibatch_config mbc;
		gnn_train_result res;
		gnn_error	err;
		int32_t		tf[2 * 2] = {-1, 3, 2, 2};
		float		last_acc = NAN;

		gnn_train_config_default(GNN_MODEL_SAGE, &cfg);
		cfg.epochs = 40;
		cfg.hidden = 16;
		cfg.dropout = 0;
		cfg.weight_decay = 0;
		cfg.row_normalise = false;
		cfg.threads = 1;
		cfg.target_type = 0;
		cfg.select = GNN_SELECT_VAL_ACC;
		memset(&mbc, 0, sizeof(mbc));
		mbc.sampler.kind = GNN_SAMPLER_NEIGHBOR;
		mbc.sampler.nhops = 2;
		mbc.sampler.type_fanouts = tf;
		mbc.sampler.temporal = temporal;
		mbc.sampler.nthreads = 1;
		mbc.batch_size = 32;
		if (gnn_train_minibatch(&tg.g, &cfg, &mbc, NULL, last_train_acc, &last_acc, NULL, NULL, NULL, &res, NULL,
								&err) != GNN_OK)
		{
			CHECK(0, "train (temporal %d): %s", temporal, err.msg);
			continue;
		}
		NOTE("minibatch training, %s: train acc %.3f, val acc %.3f, test acc %.3f",
			 temporal ? "temporal" : "not temporal", res.best.train_acc, res.best.val_acc, res.best.test_acc);
		if (temporal)
		{
			CHECK(last_acc > 0.9, "temporal training learns from the past (the last epoch's batches: train acc %.3f)",
				  last_acc);
			CHECK(res.best.val_acc < 0.7 && res.best.test_acc < 0.7,
				  "temporal evaluation does not see the future (val %.3f, test %.3f)",
				  res.best.val_acc, res.best.test_acc);
		}
		else
			CHECK(res.best.val_acc > 0.9, "without temporal sampling evaluation sees the future (val %.3f)",
				  res.best.val_acc);
	}
	tgraph_free(&tg);
	free(arcs);
	free(time);
	free(feat);
	free(labels);
	free(split);
}

int
main(void)
{
	test_typed_fanouts();
	test_no_future();
	test_last();
	test_uniform_unbiased();
	test_train_temporal();
	return check_done();
}
