/*
 * test_partition: METIS, streaming and random partitioning on a planted
 * partition graph (stochastic block model, generated here) and on Cora:
 * METIS cuts far fewer edges than random, recovers the planted blocks and
 * keeps its balance constraints; streaming sits between the two; bad input.
 */
#include "check.h"
#include "graph/dataset.h"
#include "graph/partition.h"

#include <math.h>

/* B blocks of S nodes; each node draws din neighbours inside its block and dout outside. */
static int
make_sbm(int B, int S, int din, int dout, uint64_t seed, void **region, gnn_graph *g)
{
	int64_t		n = (int64_t) B * S;
	int64_t		m = n * (din + dout);
	int64_t    *src = malloc(sizeof(int64_t) * m),
			   *dst = malloc(sizeof(int64_t) * m),
			   *ids = malloc(sizeof(int64_t) * n);
	uint8_t    *split = malloc(n);
	int32_t    *labels = malloc(sizeof(int32_t) * n);
	gnn_rng		rng;
	gnn_graph_input in;
	gnn_error	err;
	uint64_t	size;
	int64_t		k = 0;
	int			rc;

	gnn_rng_seed(&rng, seed);
	for (int64_t v = 0; v < n; v++)
	{
		int64_t		b = v / S;

		ids[v] = v;
		labels[v] = (int32_t) b;
		split[v] = gnn_rng_below(&rng, 10) == 0 ? GNN_SPLIT_TRAIN : GNN_SPLIT_TEST;
		for (int j = 0; j < din; j++)
		{
			int64_t		u = b * S + (int64_t) gnn_rng_below(&rng, S);

			if (u == v)
				u = b * S + (v - b * S + 1) % S;
			src[k] = v;
			dst[k++] = u;
		}
		for (int j = 0; j < dout; j++)
		{
			int64_t		u = (int64_t) gnn_rng_below(&rng, n - S);

			if (u >= b * S)
				u += S;
			src[k] = v;
			dst[k++] = u;
		}
	}
	memset(&in, 0, sizeof(in));
	in.num_edges = k;
	in.src = src;
	in.dst = dst;
	in.undirected = true;
	in.num_nodes = n;
	in.node_ids = ids;
	in.labels = labels;
	in.split = split;
	rc = gnn_graph_build_region(&in, region, &size, g, &err) == GNN_OK;
	if (!rc)
		NOTE("sbm build failed: %s", err.msg);
	free(src);
	free(dst);
	free(ids);
	free(split);
	free(labels);
	return rc;
}

/* mean over blocks of the fraction of the block's nodes in its most common part */
static double
recovery(const int32_t *part, int B, int S, int parts)
{
	double		sum = 0;
	int		   *cnt = calloc(parts, sizeof(int));

	for (int b = 0; b < B; b++)
	{
		int			best = 0;

		memset(cnt, 0, sizeof(int) * parts);
		for (int i = 0; i < S; i++)
			cnt[part[b * S + i]]++;
		for (int p = 0; p < parts; p++)
			best = cnt[p] > best ? cnt[p] : best;
		sum += (double) best / S;
	}
	free(cnt);
	return sum / B;
}

static int
run(const gnn_graph *g, gnn_part_method method, int parts, uint32_t balance, int32_t *part,
	gnn_part_stats *st, const char *what)
{
	gnn_partition_config cfg;
	gnn_error	err;
	double		secs;

	gnn_partition_config_default(&cfg);
	cfg.parts = parts;
	cfg.method = method;
	cfg.balance = balance;
	cfg.seed = 7;
	if (gnn_partition_compute(g, &cfg, part, &secs, &err) != GNN_OK)
	{
		NOTE("%s: %s", what, err.msg);
		return 0;
	}
	if (gnn_part_stats_compute(g, part, parts, st, &err) != GNN_OK)
	{
		NOTE("%s stats: %s", what, err.msg);
		return 0;
	}
	NOTE("%-22s %2d parts: cut %.4f, balance nodes %.3f train %.3f edges %.3f, halo %lld, %.3f s",
		 what, parts, st->cut_fraction, st->balance[0], st->balance[1], st->balance[2],
		 (long long) st->halo, secs);
	return 1;
}

static void
planted(void)
{
	const int	B = 8,
				S = 600;
	void	   *region = NULL;
	gnn_graph	g;
	int32_t    *pm,
			   *ps,
			   *pr;
	gnn_part_stats sm,
				ss,
				sr;
	int64_t		sum_nodes = 0,
				sum_edges = 0;

	if (!CHECK(make_sbm(B, S, 8, 1, 42, &region, &g), "planted-partition graph builds"))
		return;
	pm = malloc(sizeof(int32_t) * g.num_nodes);
	ps = malloc(sizeof(int32_t) * g.num_nodes);
	pr = malloc(sizeof(int32_t) * g.num_nodes);
	CHECK(run(&g, GNN_PART_METIS, B, GNN_BAL_NODES | GNN_BAL_TRAIN, pm, &sm, "sbm metis"), "metis on the planted graph");
	CHECK(run(&g, GNN_PART_STREAMING, B, GNN_BAL_NODES | GNN_BAL_TRAIN, ps, &ss, "sbm streaming"), "streaming on the planted graph");
	CHECK(run(&g, GNN_PART_RANDOM, B, 0, pr, &sr, "sbm random"), "random on the planted graph");
	CHECK(sm.cut_fraction < 0.5 * sr.cut_fraction, "metis cut %.3f is far below random %.3f",
		  sm.cut_fraction, sr.cut_fraction);
	CHECK(sm.cut_fraction < 0.25, "metis cut %.3f near the planted 1/9 ~ 0.11", sm.cut_fraction);
	CHECK(recovery(pm, B, S, B) > 0.9, "metis recovers the planted blocks (%.3f of each block in one part)",
		  recovery(pm, B, S, B));
	CHECK(ss.cut_fraction <= sr.cut_fraction && ss.cut_fraction >= sm.cut_fraction,
		  "streaming cut %.3f between metis %.3f and random %.3f", ss.cut_fraction, sm.cut_fraction,
		  sr.cut_fraction);
	CHECK(sm.balance[0] <= 1.031 && sm.balance[1] <= 1.10,
		  "metis balance within tolerance: nodes %.3f, train %.3f", sm.balance[0], sm.balance[1]);
	CHECK(ss.balance[0] <= 1.06 && ss.balance[1] <= 1.10,
		  "streaming capacities hold: nodes %.3f, train %.3f", ss.balance[0], ss.balance[1]);
	for (int p = 0; p < sm.parts; p++)
	{
		sum_nodes += sm.part[p].nodes;
		sum_edges += sm.part[p].edges;
	}
	CHECK(sum_nodes == g.num_nodes && sum_edges == sm.edges && sm.edges == g.num_edges,
		  "per-part nodes and edges add up");
	gnn_part_stats_free(&sm);
	gnn_part_stats_free(&ss);
	gnn_part_stats_free(&sr);

	/* determinism, objective volume, three constraints */
	{
		gnn_partition_config cfg;
		gnn_error	err;
		int32_t    *p2 = malloc(sizeof(int32_t) * g.num_nodes);
		gnn_part_stats s3;

		gnn_partition_config_default(&cfg);
		cfg.parts = B;
		cfg.seed = 7;
		CHECK(gnn_partition_compute(&g, &cfg, p2, NULL, &err) == GNN_OK &&
			  memcmp(p2, pm, sizeof(int32_t) * g.num_nodes) == 0, "metis with a seed is repeatable");
		cfg.objective = GNN_PART_VOLUME;
		cfg.balance = GNN_BAL_NODES | GNN_BAL_TRAIN | GNN_BAL_EDGES;
		memset(&s3, 0, sizeof(s3));
		if (gnn_partition_compute(&g, &cfg, p2, NULL, &err) != GNN_OK ||
			gnn_part_stats_compute(&g, p2, B, &s3, &err) != GNN_OK)
			NOTE("volume: %s", err.msg);
		CHECK(s3.parts == B && s3.balance[2] <= 1.05 && s3.cut_fraction < 0.25,
			  "volume objective with three constraints (edge balance %.3f, cut %.3f)", s3.balance[2],
			  s3.cut_fraction);
		gnn_part_stats_free(&s3);

		/* bad input */
		cfg.parts = 1;
		CHECK(gnn_partition_compute(&g, &cfg, p2, NULL, &err) == GNN_ERR_INVALID, "parts < 2 refused: %s", err.msg);
		cfg.parts = (int32_t) g.num_nodes + 1;
		CHECK(gnn_partition_compute(&g, &cfg, p2, NULL, &err) == GNN_ERR_INVALID, "parts > nodes refused");
		cfg.parts = 4;
		cfg.method = (gnn_part_method) 9;
		CHECK(gnn_partition_compute(&g, &cfg, p2, NULL, &err) == GNN_ERR_INVALID, "unknown method refused");
		cfg.method = GNN_PART_METIS;
		cfg.memory_limit = 1024;
		CHECK(gnn_partition_compute(&g, &cfg, p2, NULL, &err) == GNN_ERR_LIMIT && err.id > 1024,
			  "memory estimate over the limit refused: %s", err.msg);
		free(p2);
	}
	{
		gnn_part_method m;
		uint32_t	bit;

		CHECK(gnn_parse_part_method("streaming", &m) && m == GNN_PART_STREAMING &&
			  !gnn_parse_part_method("kl", &m), "method names parse");
		CHECK(gnn_parse_part_balance("train", &bit) && bit == GNN_BAL_TRAIN &&
			  !gnn_parse_part_balance("weight", &bit), "balance names parse");
	}
	free(pm);
	free(ps);
	free(pr);
	free(region);
}

static void
no_train(void)
{
	/* a graph without a split cannot balance on training nodes */
	int64_t		src[] = {1, 2, 3, 4},
				dst[] = {2, 3, 4, 1};
	gnn_graph_input in;
	gnn_graph	g;
	void	   *region;
	uint64_t	size;
	gnn_error	err;
	gnn_partition_config cfg;
	int32_t		part[4];

	memset(&in, 0, sizeof(in));
	in.num_edges = 4;
	in.src = src;
	in.dst = dst;
	if (!CHECK(gnn_graph_build_region(&in, &region, &size, &g, &err) == GNN_OK, "ring builds"))
		return;
	gnn_partition_config_default(&cfg);
	cfg.parts = 2;
	CHECK(gnn_partition_compute(&g, &cfg, part, NULL, &err) == GNN_ERR_EMPTY,
		  "balancing on train without training nodes refused: %s", err.msg);
	cfg.balance = GNN_BAL_NODES;
	CHECK(gnn_partition_compute(&g, &cfg, part, NULL, &err) == GNN_OK, "balancing on nodes only works");
	free(region);
}

static void
cora(void)
{
	const char *dir = check_data_dir();
	char		path[600];
	gnn_dataset ds;
	gnn_error	err;

	if (!dir)
	{
		CHECK_SKIP("no ../shared/data", "cora: metis far below random");
		return;
	}
	snprintf(path, sizeof(path), "%s/cora", dir);
	if (gnn_dataset_load(path, 0, &ds, &err) != GNN_OK)
	{
		CHECK_SKIP(err.msg, "cora: metis far below random");
		return;
	}
	{
		int64_t		n = ds.g.num_nodes;
		int32_t    *part = malloc(sizeof(int32_t) * n);
		gnn_part_stats sm,
					ss,
					sr;

		for (int i = 0; i < 2; i++)
		{
			int			k = i ? 16 : 4;

			CHECK(run(&ds.g, GNN_PART_METIS, k, GNN_BAL_NODES | GNN_BAL_TRAIN, part, &sm, "cora metis") &&
				  run(&ds.g, GNN_PART_STREAMING, k, GNN_BAL_NODES | GNN_BAL_TRAIN, part, &ss, "cora streaming") &&
				  run(&ds.g, GNN_PART_RANDOM, k, 0, part, &sr, "cora random"), "cora partitions into %d", k);
			CHECK(sm.cut_fraction < 0.3 * sr.cut_fraction, "cora %d parts: metis cut %.3f far below random %.3f",
				  k, sm.cut_fraction, sr.cut_fraction);
			CHECK(ss.cut_fraction < sr.cut_fraction && ss.cut_fraction > sm.cut_fraction,
				  "cora %d parts: streaming %.3f between metis and random", k, ss.cut_fraction);
			CHECK(sm.balance[0] <= 1.031 && sm.balance[1] <= 1.2,
				  "cora %d parts: metis balance nodes %.3f, train %.3f", k, sm.balance[0], sm.balance[1]);
			gnn_part_stats_free(&sm);
			gnn_part_stats_free(&ss);
			gnn_part_stats_free(&sr);
		}
		free(part);
	}
	gnn_dataset_free(&ds);
}

int
main(void)
{
	planted();
	no_train();
	cora();
	return check_done();
}
