/*
 * fstore_bench.c: minibatch training with the features on disk behind the
 * feature store's cache (feature_store.h) against the same training with
 * them in memory, on an R-MAT graph (no database).  Issue #14's benchmark;
 * bench/fstore.sh runs the three modes, the disk one in a memory cgroup.
 *
 *   fstore_bench write  DIR SCALE EDGES DIM
 *       builds the graph, writes DIR/features.gnn (rows by degree)
 *   fstore_bench memory DIR SCALE EDGES DIM EPOCHS 0 [TRAIN_PCT]
 *       trains with the features in memory
 *   fstore_bench disk   DIR SCALE EDGES DIM EPOCHS CACHE_MB [TRAIN_PCT]
 *       trains reading them from DIR/features.gnn through a CACHE_MB cache;
 *       records the trace of rows read and replays it through Belady's
 *       optimal policy (MIN with bypass) of the same capacity
 *
 * The graph: 2^SCALE nodes, EDGES R-MAT edges made undirected (a=0.57
 * b=c=0.19), TRAIN_PCT% of the nodes training seeds (default 1: papers100M has 1.1%), 47
 * classes; GraphSAGE, hidden 128, fan-outs [10, 5], batch 1024, the
 * pipeline 2 batches ahead, no evaluation pass.  Features are a hash of
 * (node, column), so every mode has the same bytes without storing them.
 */
#include "train/train_mb.h"
#include "store/feature_store.h"
#include "bench_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static float
feat_of(int64_t v, int k)
{
	uint64_t	x = (uint64_t) v * 0x9e3779b97f4a7c15ULL + (uint64_t) k * 0xbf58476d1ce4e5b9ULL;

	x ^= x >> 31;
	x *= 0x94d049bb133111ebULL;
	x ^= x >> 29;
	return (float) (x >> 40) / (float) (1 << 24);
}

typedef struct epoch_rec
{
	int			n;
	double		seconds[64];
	double		compute[64];
	double		wait[64];
	gnn_fstore_stats st[64];
	int64_t		trace_at[65];	/* trace length at each epoch's end */
	gnn_fstore *fs;
	int64_t    *trace_len;
} epoch_rec;

static void
on_epoch(void *arg, const gnn_epoch_metrics *m)
{
	epoch_rec  *r = arg;

	if (r->n >= 64)
		return;
	r->seconds[r->n] = m->seconds;
	r->compute[r->n] = m->compute_s;
	r->wait[r->n] = m->wait_s;
	if (r->fs)
	{
		gnn_fstore_stats_take(r->fs, &r->st[r->n]);
		r->trace_at[r->n + 1] = *r->trace_len;
	}
	r->n++;
}

/*
 * Belady's MIN with bypass on trace[0..len) with cap rows: hits per epoch
 * (epoch boundaries at[1..ne]).  A max-heap of (next use, row) with lazy
 * deletion: a row's entry is live while nextuse[row] equals it.
 */
static void
belady(const int32_t *trace, int64_t len, int64_t rows, int64_t cap, const int64_t *at, int ne, int64_t *hits)
{
	int64_t    *nxt = malloc(sizeof(int64_t) * (len + 1));
	int64_t    *last = malloc(sizeof(int64_t) * rows);
	int64_t    *cur = malloc(sizeof(int64_t) * rows);	/* the cached row's next use, -1: not cached */
	int64_t    *heap = malloc(sizeof(int64_t) * 2 * (len + 1));	/* (next use, row) pairs */
	int64_t		hn = 0,
				used = 0;
	const int64_t INF = INT64_MAX;
	int			e = 0;

	for (int64_t v = 0; v < rows; v++)
	{
		last[v] = INF;
		cur[v] = -1;
	}
	for (int64_t i = len - 1; i >= 0; i--)
	{
		nxt[i] = last[trace[i]];
		last[trace[i]] = i;
	}
	memset(hits, 0, sizeof(int64_t) * ne);
#define HKEY(k) heap[2 * (k)]
#define HROW(k) heap[2 * (k) + 1]
	for (int64_t i = 0; i < len; i++)
	{
		int32_t		v = trace[i];

		while (e < ne - 1 && i >= at[e + 1])
			e++;
		if (cur[v] >= 0)
		{
			hits[e]++;
			used--;				/* re-inserted below with its new next use */
			cur[v] = -1;
		}
		else if (nxt[i] != INF && used >= cap)
		{
			/* evict the farthest next use, unless this row's is farther still (bypass) */
			for (;;)
			{
				int64_t		k = HKEY(0),
							row = HROW(0);

				if (cur[row] != k)
				{
					/* stale: pop */
					hn--;
					HKEY(0) = HKEY(hn);
					HROW(0) = HROW(hn);
					for (int64_t p = 0;;)
					{
						int64_t		l = 2 * p + 1,
									r = l + 1,
									b = p;

						if (l < hn && HKEY(l) > HKEY(b))
							b = l;
						if (r < hn && HKEY(r) > HKEY(b))
							b = r;
						if (b == p)
							break;
						int64_t		tk = HKEY(p),
									tr = HROW(p);

						HKEY(p) = HKEY(b);
						HROW(p) = HROW(b);
						HKEY(b) = tk;
						HROW(b) = tr;
						p = b;
					}
					continue;
				}
				if (k > nxt[i])
				{
					cur[row] = -1;
					used--;
				}
				break;
			}
		}
		if (nxt[i] != INF && used < cap)
		{
			int64_t		p = hn++;

			cur[v] = nxt[i];
			used++;
			HKEY(p) = nxt[i];
			HROW(p) = v;
			while (p > 0 && HKEY((p - 1) / 2) < HKEY(p))
			{
				int64_t		q = (p - 1) / 2,
							tk = HKEY(p),
							tr = HROW(p);

				HKEY(p) = HKEY(q);
				HROW(p) = HROW(q);
				HKEY(q) = tk;
				HROW(q) = tr;
				p = q;
			}
		}
	}
	free(nxt);
	free(last);
	free(cur);
	free(heap);
}

int
main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	const char *dir = argc > 2 ? argv[2] : "/tmp";
	int			scale = argc > 3 ? atoi(argv[3]) : 20;
	int64_t		m = argc > 4 ? atoll(argv[4]) : 8000000;
	int			dim = argc > 5 ? atoi(argv[5]) : 256;
	int			epochs = argc > 6 ? atoi(argv[6]) : 3;
	int64_t		cache_mb = argc > 7 ? atoll(argv[7]) : 0;
	double		train_frac = (argc > 8 ? atof(argv[8]) : 1.0) / 100.0;
	int64_t		n = (int64_t) 1 << scale;
	bool		disk = strcmp(mode, "disk") == 0,
				mem = strcmp(mode, "memory") == 0,
				wr = strcmp(mode, "write") == 0;
	gnn_rng		r;
	gnn_graph_input in = {0};
	gnn_graph	g;
	gnn_error	err;
	void	   *region;
	uint64_t	size;
	double		t0 = now_s();
	char		path[4096];
	float	   *feat = NULL;

	if (!disk && !mem && !wr)
	{
		fprintf(stderr, "usage: fstore_bench write|memory|disk DIR SCALE EDGES DIM [EPOCHS [CACHE_MB]]\n");
		return 2;
	}
	snprintf(path, sizeof(path), "%s/features.gnn", dir);
	gnn_rng_seed(&r, 1);
	{
		int64_t    *src = malloc(sizeof(int64_t) * m),
				   *dst = malloc(sizeof(int64_t) * m),
				   *ids = malloc(sizeof(int64_t) * n);
		int32_t    *labels = malloc(sizeof(int32_t) * n);
		uint8_t    *split = malloc(n);

		for (int64_t e = 0; e < m; e++)
			rmat_edge(&r, scale, n, false, &src[e], &dst[e]);
		for (int64_t i = 0; i < n; i++)
		{
			ids[i] = i;
			labels[i] = (int32_t) gnn_rng_below(&r, 47);
			split[i] = gnn_rng_double(&r) < train_frac ? GNN_SPLIT_TRAIN : GNN_SPLIT_TEST;
		}
		if (mem || wr)
		{
			feat = malloc(sizeof(float) * (size_t) n * dim);
			if (!feat)
			{
				fprintf(stderr, "out of memory for features\n");
				return 1;
			}
#pragma omp parallel for schedule(static)
			for (int64_t v = 0; v < n; v++)
				for (int k = 0; k < dim; k++)
					feat[v * dim + k] = feat_of(v, k);
		}
		in.num_edges = m;
		in.src = src;
		in.dst = dst;
		in.undirected = true;
		in.num_nodes = n;
		in.node_ids = ids;
		in.feat_dim = mem ? dim : 0;
		in.feat = mem ? feat : NULL;
		in.labels = labels;
		in.split = split;
		if (gnn_graph_build_region(&in, &region, &size, &g, &err) != GNN_OK)
		{
			fprintf(stderr, "build: %s\n", err.msg);
			return 1;
		}
		free(src);
		free(dst);
		free(ids);
		free(labels);
		free(split);
		if (mem)
		{
			free(feat);
			feat = NULL;
		}
		printf("graph: %lld nodes, %lld arcs, %d-dim features (%.2f GB), region %.2f GB, built in %.1f s\n",
			   (long long) g.num_nodes, (long long) g.num_edges, dim, (double) n * dim * 4 / 1e9, size / 1e9,
			   now_s() - t0);
	}
	if (wr)
	{
		int32_t    *order = malloc(sizeof(int32_t) * n);

		t0 = now_s();
		const char *ord = getenv("ORDER");
		int64_t		cl = getenv("CLUSTER") ? atoll(getenv("CLUSTER")) : GNN_FSTORE_PART_NODES;

		/* the load's order (by part, then degree) unless ORDER=degree */
		if (!ord)
			ord = "locality";
		if ((strcmp(ord, "degree") != 0 ? gnn_fstore_locality_order(&g, cl, order, &err)
			 : gnn_fstore_degree_order(&g, order, &err)) != GNN_OK ||
			gnn_fstore_write_file(dir, "features.gnn", 1, feat, NULL, n, dim, order, &err) != GNN_OK)
		{
			fprintf(stderr, "write: %s\n", err.msg);
			return 1;
		}
		printf("wrote %s in %.1f s (rows by %s)\n", path, now_s() - t0,
			   strcmp(ord, "degree") == 0 ? "degree" : "part then degree");
		return 0;
	}

	{
		gnn_train_config cfg;
		gnn_minibatch_config mbc;
		gnn_train_result res;
		epoch_rec	rec = {0};
		gnn_fstore *fs = NULL;
		int32_t    *trace = NULL;
		int64_t		trace_len = 0,
					trace_cap = 0;
		int64_t		cache_rows = cache_mb * 1024 * 1024 / (4 * (int64_t) dim);

		if (disk)
		{
			if (gnn_fstore_open_file(path, 1, cache_rows, true, &fs, &err) != GNN_OK)
			{
				fprintf(stderr, "open: %s\n", err.msg);
				return 1;
			}
			g.feat = NULL;
			g.feat_kind = GNN_FEAT_DENSE;
			g.feat_dim = dim;
			g.fstore = fs;
			trace_cap = (int64_t) 1 << 28;	/* 1 GB of trace at most */
			trace = malloc(sizeof(int32_t) * trace_cap);
			gnn_fstore_set_trace(fs, trace, trace_cap, &trace_len);
			rec.fs = fs;
			rec.trace_len = &trace_len;
		}
		gnn_train_config_default(GNN_MODEL_SAGE, &cfg);
		cfg.epochs = epochs;
		cfg.hidden = 128;
		cfg.threads = 2;
		cfg.seed = 5;
		cfg.patience = 0;
		memset(&mbc, 0, sizeof(mbc));
		mbc.sampler.kind = GNN_SAMPLER_NEIGHBOR;
		mbc.sampler.nhops = 2;
		mbc.sampler.fanouts[0] = 10;
		mbc.sampler.fanouts[1] = 5;
		mbc.sampler.nthreads = 2;
		mbc.batch_size = 1024;
		mbc.prefetch = 2;
		mbc.skip_eval = true;
		if (gnn_train_minibatch(&g, &cfg, &mbc, NULL, on_epoch, &rec, NULL, NULL, NULL, &res, NULL, &err) != GNN_OK)
		{
			fprintf(stderr, "train: %s\n", err.msg);
			return 1;
		}
		printf("mode %s%s, cache %lld MB (%lld rows of %lld, %.0f%%)\n", mode,
			   fs ? (gnn_fstore_stats_get(fs, &rec.st[63]), rec.st[63].direct ? " (O_DIRECT)" : " (buffered reads)") : "",
			   (long long) cache_mb, (long long) cache_rows, (long long) n, 100.0 * cache_rows / n);
		for (int e = 0; e < rec.n; e++)
		{
			printf("epoch %d: %.2f s (compute %.2f s, waiting for batches %.2f s)", e + 1, rec.seconds[e], rec.compute[e],
				   rec.wait[e]);
			if (fs)
			{
				const gnn_fstore_stats *s = &rec.st[e];

				printf("; hit rate %.4f, %lld rows read, %.2f GB read, amplification %.2f, %lld reads",
					   s->rows_requested ? (double) s->hits / s->rows_requested : 0.0, (long long) s->misses,
					   s->bytes_read / 1e9, s->bytes_needed ? (double) s->bytes_read / s->bytes_needed : 0.0,
					   (long long) s->reads);
			}
			printf("\n");
		}
		if (fs)
		{
			int64_t		hits[64];

			if (trace_len >= trace_cap)
				printf("trace: truncated at %lld rows; Belady not computed\n", (long long) trace_cap);
			else
			{
				rec.trace_at[0] = 0;
				belady(trace, trace_len, n, cache_rows, rec.trace_at, rec.n, hits);
				for (int e = 0; e < rec.n; e++)
				{
					int64_t		len = rec.trace_at[e + 1] - rec.trace_at[e];
					double		opt = len ? (double) hits[e] / len : 0,
								got = rec.st[e].rows_requested ? (double) rec.st[e].hits / rec.st[e].rows_requested : 0;

					printf("belady epoch %d: optimum hit rate %.4f over %lld rows; SIEVE %.4f = %.1f%% of it\n", e + 1, opt,
						   (long long) len, got, opt > 0 ? 100.0 * got / opt : 0.0);
				}
			}
			gnn_fstore_close(fs);
		}
	}
	return 0;
}
