/*
 * test_disk_features: a graph whose dense features are in a features file
 * (feature_store.h) behind a cache smaller than them trains and infers
 * exactly as the same graph with its features in memory: full-batch,
 * minibatch (with the pipeline), Cluster-GCN, node inference; the file's
 * checks (a flipped payload byte fails the read that meets it, a flipped
 * metadata byte or another graph version fails the open).  Synthetic data,
 * no ../shared needed.
 */
#include "check.h"
#include "store/feature_store.h"
#include "infer/infer.h"
#include "sample/sample.h"
#include "store/store.h"
#include "train/train.h"
#include "train/train_mb.h"
#include "train/train_subgraph.h"

#include <fcntl.h>
#include <math.h>
#include <sys/stat.h>
#include <unistd.h>

enum
{
	N = 3000,
	F = 40,
	C = 4,
	M = 15000
};

typedef struct rec
{
	int			n;
	float		loss[64];
	float		val[64];
} rec;

static void
on_epoch(void *arg, const gnn_epoch_metrics *m)
{
	rec		   *r = arg;

	if (r->n < 64)
	{
		r->loss[r->n] = m->train_loss;
		r->val[r->n++] = m->val_acc;
	}
}

static uint64_t
lcg(uint64_t *s)
{
	*s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
	return *s >> 33;
}

static bool
same_rec(const rec *a, const rec *b)
{
	return a->n == b->n && a->n > 0 && memcmp(a->loss, b->loss, sizeof(float) * a->n) == 0 &&
		memcmp(a->val, b->val, sizeof(float) * a->n) == 0;
}

/* the model's outputs for every node, or NULL */
static float *
outputs(gnn_model *m, const gnn_graph *g)
{
	float	   *o = malloc(sizeof(float) * N * C);
	gnn_error	err;

	if (o && gnn_model_infer(m, g, false, -1, true, o, &err) != GNN_OK)
	{
		free(o);
		return NULL;
	}
	return o;
}

static void
flip_byte(const char *path, off_t at)
{
	int			fd = open(path, O_RDWR);
	unsigned char b;

	if (fd < 0 || pread(fd, &b, 1, at) != 1)
		return;
	b ^= 0x5a;
	if (pwrite(fd, &b, 1, at) != 1)
		CHECK(0, "flip a byte of %s", path);
	close(fd);
}

/*
 * Rows by part then degree on a graph with communities (60 of 50 nodes,
 * 90% of edges inside, node ids shuffled): a permutation, hottest first,
 * and a node's neighbourhood costs fewer reads and bytes than with rows by
 * degree, with the same rows gathered.
 */
static void
locality(const char *dir)
{
	enum
	{
		LN = 3000, LK = 50, LM = 9000, LF = 40
	};
	static int64_t ids[LN],
				src[LM],
				dst[LM];
	static int32_t perm[LN],
				deg[LN],
				loc[LN],
				idx[256];
	static float feat[LN * LF],
				a[256 * LF],
				b[256 * LF];
	static uint8_t seen[LN];
	uint64_t	seed = 99,
				size;
	gnn_graph_input in = {0};
	gnn_graph	g;
	void	   *region;
	gnn_error	err;
	gnn_fstore *fd = NULL,
			   *fl = NULL;
	gnn_fstore_stats sd,
				sl;
	char		pd[512],
				pl[512];
	bool		perm_ok = true;
	int64_t		wrong = 0;

	for (int i = 0; i < LN; i++)
		perm[i] = i;
	for (int i = LN - 1; i > 0; i--)
	{
		int			j = (int) (lcg(&seed) % (uint64_t) (i + 1)),
					t = perm[i];

		perm[i] = perm[j];
		perm[j] = t;
	}
	for (int i = 0; i < LN; i++)
	{
		ids[i] = i;
		for (int k = 0; k < LF; k++)
			feat[i * LF + k] = (float) (i * 100 + k);
	}
	/* node perm[c * LK + j] is member j of community c */
	for (int e = 0; e < LM; e++)
	{
		int			c = (int) (lcg(&seed) % (LN / LK)),
					c2 = lcg(&seed) % 10 == 0 ? (int) (lcg(&seed) % (LN / LK)) : c;

		src[e] = perm[c * LK + (int) (lcg(&seed) % LK)];
		dst[e] = perm[c2 * LK + (int) (lcg(&seed) % LK)];
	}
	in.num_edges = LM;
	in.src = src;
	in.dst = dst;
	in.undirected = true;
	in.num_nodes = LN;
	in.node_ids = ids;
	in.feat_dim = LF;
	in.feat = feat;
	if (gnn_graph_build_region(&in, &region, &size, &g, &err) != GNN_OK)
	{
		CHECK(0, "build the community graph: %s", err.msg);
		return;
	}
	CHECK(gnn_fstore_degree_order(&g, deg, &err) == GNN_OK && gnn_fstore_locality_order(&g, GNN_FSTORE_PART_NODES, loc, &err) == GNN_OK,
		  "both orders of the community graph");
	for (int r = 0; r < LN; r++)
	{
		if (loc[r] < 0 || loc[r] >= LN || seen[loc[r]])
			perm_ok = false;
		else
			seen[loc[r]] = 1;
	}
	CHECK(perm_ok && loc[0] == deg[0], "the order by part is a permutation and starts at the highest-degree node");
	snprintf(pd, sizeof(pd), "%s/by-degree.gnn", dir);
	snprintf(pl, sizeof(pl), "%s/by-part.gnn", dir);
	CHECK(gnn_fstore_write_file(dir, "by-degree.gnn", 1, g.feat, NULL, LN, LF, deg, &err) == GNN_OK &&
		  gnn_fstore_write_file(dir, "by-part.gnn", 1, g.feat, NULL, LN, LF, loc, &err) == GNN_OK &&
		  gnn_fstore_open_file(pd, 1, 0, true, &fd, &err) == GNN_OK &&
		  gnn_fstore_open_file(pl, 1, 0, true, &fl, &err) == GNN_OK, "write and open both (no cache)");
	if (!fd || !fl)
		return;
	/* 200 neighbourhoods: a node and its neighbours, one gather each */
	for (int s = 0; s < 200; s++)
	{
		int32_t		v = (int32_t) ((s * 7919) % LN);
		int			n = 0;

		idx[n++] = v;
		for (int64_t e = g.indptr[v]; e < g.indptr[v + 1] && n < 256; e++)
			idx[n++] = g.indices[e];
		if (gnn_fstore_gather(fd, idx, n, a, &err) != GNN_OK || gnn_fstore_gather(fl, idx, n, b, &err) != GNN_OK)
		{
			CHECK(0, "gather: %s", err.msg);
			break;
		}
		for (int k = 0; k < n; k++)
			for (int c = 0; c < LF; c++)
				wrong += a[k * LF + c] != g.feat[(int64_t) idx[k] * LF + c] || b[k * LF + c] != a[k * LF + c];
	}
	gnn_fstore_stats_get(fd, &sd);
	gnn_fstore_stats_get(fl, &sl);
	CHECK(wrong == 0 && sl.reads * 4 <= sd.reads * 3 && sl.bytes_read * 10 <= sd.bytes_read * 9,
		  "a node's neighbourhood by part: %lld reads, %lld bytes; by degree %lld reads, %lld bytes (at most 3/4 "
		  "of the reads, 9/10 of the bytes; %lld values wrong)",
		  (long long) sl.reads, (long long) sl.bytes_read, (long long) sd.reads, (long long) sd.bytes_read,
		  (long long) wrong);
	gnn_fstore_close(fd);
	gnn_fstore_close(fl);
	unlink(pd);
	unlink(pl);
	free(region);
}

int
main(void)
{
	static int64_t ids[N],
				src[M],
				dst[M];
	static float feat[N * F];
	static int32_t labels[N],
				order[N],
				idx[5000];
	static uint8_t split[N];
	static float a_rows[5000 * F],
				b_rows[5000 * F];
	char		dir[256],
				path[512];
	uint64_t	seed = 7,
				size;
	gnn_graph_input in = {0};
	void	   *region;
	gnn_graph	mem,
				disk;
	gnn_fstore *fs = NULL;
	gnn_fstore_stats st;
	gnn_error	err;
	gnn_store_header h;

	/* streamed inference in chunks of 700 rows: the chunk boundaries fall inside the graph */
	gnn_stream_rows = 700;
	/* a power-law-ish graph: endpoints drawn toward low ids; classes in the features */
	for (int i = 0; i < N; i++)
	{
		ids[i] = i;
		labels[i] = i % C;
		split[i] = i % 10 < 6 ? GNN_SPLIT_TRAIN : i % 10 < 8 ? GNN_SPLIT_VAL : GNN_SPLIT_TEST;
		for (int k = 0; k < F; k++)
			feat[i * F + k] = (float) (lcg(&seed) % 1000) / 1000.0f + (k % C == labels[i] ? 0.6f : 0.0f);
	}
	for (int e = 0; e < M; e++)
	{
		uint64_t	a = lcg(&seed) % N,
					b = lcg(&seed) % N;

		src[e] = (int64_t) (a * a / N);
		dst[e] = (int64_t) b;
	}
	in.num_edges = M;
	in.src = src;
	in.dst = dst;
	in.undirected = true;
	in.num_nodes = N;
	in.node_ids = ids;
	in.feat_dim = F;
	in.feat = feat;
	in.labels = labels;
	in.split = split;
	if (gnn_graph_build_region(&in, &region, &size, &mem, &err) != GNN_OK)
	{
		CHECK(0, "build: %s", err.msg);
		return check_done();
	}

	snprintf(dir, sizeof(dir), "/tmp/gnn-test-diskfeat-%d", (int) getpid());
	mkdir(dir, 0700);
	snprintf(path, sizeof(path), "%s/features.gnn", dir);
	CHECK(gnn_fstore_degree_order(&mem, order, &err) == GNN_OK, "degree order");
	{
		bool		ok = true;

		for (int r = 1; r < N; r++)
		{
			int			u = order[r - 1],
						v = order[r];
			int64_t		du = mem.indptr[u + 1] - mem.indptr[u] + mem.rindptr[u + 1] - mem.rindptr[u],
						dv = mem.indptr[v + 1] - mem.indptr[v] + mem.rindptr[v + 1] - mem.rindptr[v];

			ok &= du > dv || (du == dv && u < v);
		}
		CHECK(ok, "the order is by degree descending, then node");
	}
	CHECK(gnn_fstore_write_file(dir, "features.gnn", 42, mem.feat, NULL, N, F, order, &err) == GNN_OK,
		  "write the features file");
	{
		char		tmp[600];

		snprintf(tmp, sizeof(tmp), "%s.tmp", path);
		CHECK(access(path, F_OK) == 0 && access(tmp, F_OK) != 0, "the file is in place, no temporary left");
	}
	CHECK(gnn_fstore_open_file(path, 43, 100, true, &fs, &err) == GNN_ERR_CORRUPT && strstr(err.msg, "version"),
		  "another graph version's file is refused: %s", err.msg);
	/* a cache of a quarter of the rows */
	CHECK(gnn_fstore_open_file(path, 42, N / 4, true, &fs, &err) == GNN_OK, "open it with a cache of a quarter of the rows");
	if (!fs)
		return check_done();
	disk = mem;
	disk.feat = NULL;
	disk.fstore = fs;

	/* gathers: the same rows, normalised or not, repeats included */
	for (int k = 0; k < 5000; k++)
		idx[k] = (int32_t) (k % 7 == 0 ? idx[k / 2] : (int32_t) (lcg(&seed) % N));
	CHECK(gnn_gather_dense(&mem, idx, 5000, false, 2, a_rows, &err) == GNN_OK &&
		  gnn_gather_dense(&disk, idx, 5000, false, 2, b_rows, &err) == GNN_OK &&
		  memcmp(a_rows, b_rows, sizeof(float) * 5000 * F) == 0, "a gather through the store equals one from memory");
	CHECK(gnn_gather_dense(&mem, idx, 5000, true, 2, a_rows, &err) == GNN_OK &&
		  gnn_gather_dense(&disk, idx, 5000, true, 2, b_rows, &err) == GNN_OK &&
		  memcmp(a_rows, b_rows, sizeof(float) * 5000 * F) == 0, "... row-normalised too");
	CHECK(gnn_graph_feat_range(&disk, 100, 2000, b_rows, &err) == GNN_OK &&
		  memcmp(mem.feat + 100 * F, b_rows, sizeof(float) * 2000 * F) == 0, "a range of rows equals memory's");
	gnn_fstore_stats_get(fs, &st);
	CHECK(st.hits > 0 && st.misses > 0 && st.reads > 0 && st.bytes_read >= st.bytes_needed &&
		  st.rows_requested == st.hits + st.misses, "stats: %lld hits, %lld misses, %lld reads, %lld of %lld bytes",
		  (long long) st.hits, (long long) st.misses, (long long) st.reads, (long long) st.bytes_read,
		  (long long) st.bytes_needed);

	/* the training loops: the same curves and the same model */
	for (int loop = 0; loop < 4; loop++)
	{
		static const char *const name[] = {"full-batch GCN", "minibatch GraphSAGE (pipelined)", "Cluster-GCN",
		"minibatch GraphSAGE, sampled evaluation"};
		gnn_train_config cfg;
		gnn_minibatch_config mbc;
		gnn_subgraph_config sc;
		gnn_train_result res;
		gnn_backend *be[2] = {NULL, NULL};
		gnn_model  *model[2] = {NULL, NULL};
		rec			r[2];
		gnn_status	s[2];

		gnn_train_config_default(loop == 1 || loop == 3 ? GNN_MODEL_SAGE : GNN_MODEL_GCN, &cfg);
		cfg.epochs = 6;
		cfg.hidden = 16;
		cfg.threads = 2;
		cfg.seed = 11;
		memset(&mbc, 0, sizeof(mbc));
		mbc.sampler.kind = GNN_SAMPLER_NEIGHBOR;
		mbc.sampler.nhops = 2;
		mbc.sampler.fanouts[0] = 10;
		mbc.sampler.fanouts[1] = 5;
		mbc.sampler.nthreads = 2;
		mbc.batch_size = 128;
		mbc.prefetch = 2;
		mbc.sampled_eval = loop == 3;
		gnn_subgraph_config_default(&sc);
		sc.num_parts = 8;
		for (int w = 0; w < 2; w++)
		{
			const gnn_graph *g = w ? &disk : &mem;

			memset(&r[w], 0, sizeof(r[w]));
			if (gnn_backend_cpu_create(2, &be[w], &err) != GNN_OK)
			{
				CHECK(0, "backend: %s", err.msg);
				return check_done();
			}
			gnn_fstore_stats_reset(fs);
			s[w] = loop == 0 ? gnn_train_full(g, &cfg, be[w], on_epoch, &r[w], NULL, NULL, &model[w], &res, &err)
				: loop == 1 || loop == 3 ? gnn_train_minibatch(g, &cfg, &mbc, be[w], on_epoch, &r[w], NULL, NULL, &model[w], &res,
												  NULL, &err)
				: gnn_train_cluster(g, &cfg, &sc, be[w], on_epoch, &r[w], NULL, NULL, &model[w], &res, &err);
			if (s[w] != GNN_OK)
				CHECK(0, "%s on %s: %s", name[loop], w ? "disk" : "memory", err.msg);
		}
		gnn_fstore_stats_get(fs, &st);
		if (loop == 3)
		{
			bool		evaluated = r[1].n > 0;

			for (int e = 0; e < r[1].n; e++)
				evaluated &= isfinite(r[1].val[e]) && r[1].val[e] > 0.3f;
			CHECK(evaluated, "%s: every epoch has a validation accuracy (%.3f at the last)", name[loop],
				  r[1].n ? r[1].val[r[1].n - 1] : 0.0f);
		}
		CHECK(s[0] == GNN_OK && s[1] == GNN_OK && same_rec(&r[0], &r[1]),
			  "%s: every epoch's loss and validation accuracy are the same from disk (%d epochs)", name[loop], r[0].n);
		CHECK(st.rows_requested > 0 && st.misses > 0, "%s read through the store (%lld rows, %.1f%% hits)", name[loop],
			  (long long) st.rows_requested, 100.0 * (double) st.hits / (double) (st.rows_requested ? st.rows_requested : 1));
		if (model[0] && model[1])
		{
			float	   *o0 = outputs(model[0], &mem),
					   *o1;
			int64_t		nodes[64];
			float		p0[64 * C],
						p1[64 * C];

			gnn_fstore_stats_reset(fs);
			o1 = outputs(model[1], &disk);
			gnn_fstore_stats_get(fs, &st);
			CHECK(o0 && o1 && memcmp(o0, o1, sizeof(float) * N * C) == 0,
				  "%s: whole-graph inference from disk equals memory's", name[loop]);
			/* GraphSAGE reads X through two products (neighbours, root): streamed, each reads it all */
			if (loop == 1)
				CHECK(st.rows_requested == 2 * N,
					  "%s: whole-graph inference streams its input in chunks, never all of it at once "
					  "(%lld rows read through the store for %d nodes: twice)", name[loop],
					  (long long) st.rows_requested, N);
			for (int k = 0; k < 64; k++)
				nodes[k] = (int64_t) (lcg(&seed) % N);
			CHECK(gnn_model_infer_nodes(model[0], &mem, false, -1, true, nodes, 64, 0, p0, NULL, &err) == GNN_OK &&
				  gnn_model_infer_nodes(model[1], &disk, false, -1, true, nodes, 64, 0, p1, NULL, &err) == GNN_OK &&
				  memcmp(p0, p1, sizeof(p0)) == 0, "%s: inference on 64 nodes from disk equals memory's", name[loop]);
			free(o0);
			free(o1);
		}
		for (int w = 0; w < 2; w++)
		{
			if (model[w])
				gnn_model_free(model[w]);
			if (be[w])
				gnn_backend_destroy(be[w]);
		}
	}
	gnn_fstore_close(fs);

	/* checks of the file */
	CHECK(gnn_store_read_header(path, &h, NULL, 0, &err) == GNN_OK && h.kind == GNN_STORE_FEATURES &&
		  h.generation == 42 && h.payload_len == (uint64_t) N * F * 4, "its header: kind, version, payload length");
	flip_byte(path, (off_t) (h.payload_offset + h.payload_len - 100));
	CHECK(gnn_fstore_open_file(path, 42, 0, true, &fs, &err) == GNN_OK, "a flipped payload byte: the open still works");
	if (fs)
	{
		bool		hit = false;

		/* the row holding that byte: its node through the order */
		idx[0] = order[(h.payload_len - 100) / (F * 4)];
		CHECK(gnn_fstore_gather(fs, idx, 1, b_rows, &err) == GNN_ERR_CORRUPT && (hit = strstr(err.msg, "checksum") != NULL),
			  "... the read meeting it fails its checksum: %s", err.msg);
		CHECK(gnn_fstore_corrupt(fs) && strstr(gnn_fstore_corrupt(fs), "checksum"), "... and the store remembers it");
		idx[0] = order[0];
		CHECK(gnn_fstore_gather(fs, idx, 1, b_rows, &err) == GNN_OK && memcmp(b_rows, mem.feat + (int64_t) order[0] * F, F * 4) == 0,
			  "... rows elsewhere still read");
		(void) hit;
		gnn_fstore_close(fs);
		fs = NULL;
	}
	flip_byte(path, GNN_STORE_HEADER_SIZE + 30);
	CHECK(gnn_fstore_open_file(path, 42, 0, true, &fs, &err) == GNN_ERR_CORRUPT && strstr(err.msg, "checksum"),
		  "a flipped metadata byte fails the open: %s", err.msg);
	if (fs)
		gnn_fstore_close(fs);
	unlink(path);
	locality(dir);
	rmdir(dir);
	free(region);
	return check_done();
}
