/*
 * test_relabel_math.c: the GPU minibatch builder's per-element logic
 * (kernels/relabel_math.h) on the CPU, through its emulation
 * (gpu_batch_emu.h):
 *  - the hash table: every distinct key claimed by exactly one insert,
 *    whatever the order; lookups find what is there and only that;
 *  - a batch relabelled in shuffled insert orders (emulated thread races)
 *    is the same every time, and is right: new nodes of a hop are the
 *    hop's unseen draws, unique and sorted, and every draw's column names
 *    its node;
 *  - the transposes and GCN's looped normalised CSR equal block.c's host
 *    construction (the CPU path's blocks) bit for bit, with and without
 *    duplicate draws;
 *  - the cached gather gives the host gather's rows and counts its hits;
 *  - the GPU batch builder itself (gpu_batch.c) over these entry points
 *    emulated on the CPU backend (gpu_api_emu.h): its batches equal the
 *    emulation's, with the graph "on the device" or read from host, with
 *    no, some or every feature row cached; and minibatch GraphSAGE on Cora
 *    through the whole GPU path of gnn_train_minibatch reaches the CPU
 *    path's accuracy (skipped without ../shared/data).
 */
#include "check.h"
#include "nn/backend.h"
#include "nn/model.h"
#include "sample/sample.h"
#include "gpu_batch_emu.h"
#include "gpu_api_emu.h"
#include "sample/gpu_batch.h"
#include "graph/dataset.h"
#include "train/train_mb.h"

static bool
same_i64(const int64_t *a, const int64_t *b, int64_t n)
{
	return n == 0 || memcmp(a, b, sizeof(int64_t) * n) == 0;
}

static bool
same_i32(const int32_t *a, const int32_t *b, int64_t n)
{
	return n == 0 || memcmp(a, b, sizeof(int32_t) * n) == 0;
}

static void
check_table(void)
{
	int64_t		n = 6000,
				cap = gnn_h_capacity(n);
	int32_t    *in = malloc(sizeof(int32_t) * n);
	bool		ok_claims = true,
				ok_find = true,
				ok_absent = true,
				ok_same = true;
	int32_t    *first = NULL;

	CHECK(cap >= 2 * n && (cap & (cap - 1)) == 0 && gnn_h_capacity(0) == 64,
		  "capacity is a power of two >= twice the keys (%lld for %lld)", (long long) cap, (long long) n);
	/* keys with many duplicates and neighbouring ids */
	for (int64_t i = 0; i < n; i++)
		in[i] = (int32_t) (i % 3 == 0 ? gnn_s_below(gnn_s_mix(i), 2000) : gnn_s_below(gnn_s_mix(i), 1 << 30));
	for (uint64_t order = 0; order < 4; order++)
	{
		int32_t    *keys = malloc(sizeof(int32_t) * cap);
		char	   *seen = calloc(1u << 30 >> 3, 1);
		int64_t    *o = emu_order(n, order);
		int64_t		claims = 0,
					distinct = 0;

		for (int64_t s = 0; s < cap; s++)
			keys[s] = GNN_H_EMPTY;
		for (int64_t k = 0; k < n; k++)
		{
			bool		c;
			int32_t		key = in[o[k]];
			int64_t		s = gnn_h_insert(keys, cap, key, &c);

			claims += c;
			if (!(seen[key >> 3] & (1 << (key & 7))))
			{
				seen[key >> 3] |= (char) (1 << (key & 7));
				distinct++;
				ok_claims &= c;	/* the first insert of a key claims it */
			}
			else
				ok_claims &= !c;
			ok_find &= keys[s] == key && gnn_h_find(keys, cap, key) == s;
		}
		ok_claims &= claims == distinct;
		for (int64_t i = 0; i < 2000; i++)
		{
			int32_t		key = (int32_t) ((1u << 30) + i);	/* never inserted */

			ok_absent &= gnn_h_find(keys, cap, key) == -1;
		}
		/* the set of occupied slots' keys is the same whatever the order */
		{
			int32_t    *ks = malloc(sizeof(int32_t) * cap);
			int64_t		m = 0;

			for (int64_t s = 0; s < cap; s++)
				if (keys[s] != GNN_H_EMPTY)
					ks[m++] = keys[s];
			qsort(ks, m, sizeof(int32_t), emu_cmp_i32);
			if (!first)
				first = ks;
			else
			{
				ok_same &= same_i32(first, ks, m);
				free(ks);
			}
		}
		free(keys);
		free(seen);
		free(o);
	}
	CHECK(ok_claims, "every distinct key is claimed by exactly one insert, in 4 orders");
	CHECK(ok_find, "an insert returns the key's slot and a lookup finds it there");
	CHECK(ok_absent, "keys never inserted are not found");
	CHECK(ok_same, "the table holds the same keys whatever the insert order");
	free(first);
	free(in);
}

static bool
batch_equal(const emu_batch *a, const emu_batch *b, bool loop)
{
	if (a->L != b->L || memcmp(a->n_at, b->n_at, sizeof(a->n_at)) != 0 ||
		!same_i32(a->nodes, b->nodes, a->n_at[a->L]))
		return false;
	for (int h = 0; h < a->L; h++)
	{
		const emu_hop *x = &a->hop[h],
				   *y = &b->hop[h];
		int64_t		nd = a->n_at[h],
					ns = a->n_at[h + 1];

		if (x->nnz != y->nnz || !same_i64(x->ptr, y->ptr, nd + 1) || !same_i32(x->local, y->local, x->nnz) ||
			!same_i64(x->tptr, y->tptr, ns + 1) || !same_i32(x->tidx, y->tidx, x->nnz) ||
			!same_i64(x->tperm, y->tperm, x->nnz))
			return false;
		if (loop && (x->lnnz != y->lnnz || !same_i64(x->lptr, y->lptr, nd + 1) ||
					 !same_i32(x->lidx, y->lidx, x->lnnz) || memcmp(x->lval, y->lval, sizeof(float) * x->lnnz) != 0 ||
					 !same_i64(x->ltptr, y->ltptr, ns + 1) || !same_i32(x->ltidx, y->ltidx, x->lnnz) ||
					 !same_i64(x->ltperm, y->ltperm, x->lnnz)))
			return false;
	}
	return true;
}

/* the batch is a correct relabelling of its draws */
static bool
batch_right(const gnn_graph *g, const emu_batch *B, const int32_t *seeds, int64_t n, char *why, size_t whylen)
{
	char	   *in = calloc(g->num_nodes, 1);
	bool		ok = true;

	why[0] = '\0';
	ok &= same_i32(B->nodes, seeds, n);
	for (int64_t i = 0; i < n; i++)
		in[seeds[i]] = 1;
	for (int h = 0; ok && h < B->L; h++)
	{
		const emu_hop *H = &B->hop[h];
		int64_t		nd = B->n_at[h],
					ns = B->n_at[h + 1];
		char	   *drawn = calloc(g->num_nodes, 1);
		int64_t		unseen = 0;

		for (int64_t e = 0; e < H->nnz; e++)
		{
			int32_t		v = H->src[e];

			if (H->local[e] < 0 || H->local[e] >= ns || B->nodes[H->local[e]] != v)
			{
				snprintf(why, whylen, "hop %d draw %lld: column %d does not name node %d", h, (long long) e,
						 H->local[e], v);
				ok = false;
				break;
			}
			if (!in[v] && !drawn[v])
			{
				drawn[v] = 1;
				unseen++;
			}
		}
		if (ok && unseen != ns - nd)
		{
			snprintf(why, whylen, "hop %d: %lld new nodes, %lld unseen draws", h, (long long) (ns - nd),
					 (long long) unseen);
			ok = false;
		}
		for (int64_t k = nd; ok && k < ns; k++)
			if (!drawn[B->nodes[k]] || (k > nd && B->nodes[k] <= B->nodes[k - 1]))
			{
				snprintf(why, whylen, "hop %d: new node %lld is not an unseen draw in increasing order", h,
						 (long long) k);
				ok = false;
			}
		for (int64_t k = nd; k < ns; k++)
			in[B->nodes[k]] = 1;
		free(drawn);
	}
	free(in);
	return ok;
}

/* the batch's blocks against block.c's host construction (the CPU path) */
static void
check_against_host(gnn_backend *cpu, const emu_batch *B, bool loop, const char *what)
{
	bool		ok_raw = true,
				ok_loop = true;

	for (int h = 0; h < B->L; h++)
	{
		const emu_hop *H = &B->hop[h];
		gnn_block	blk;
		gnn_dblock	db;
		gnn_error	err;

		memset(&blk, 0, sizeof(blk));
		blk.n_dst = B->n_at[h];
		blk.n_src = B->n_at[h + 1];
		blk.nnz = H->nnz;
		blk.indptr = H->ptr;
		blk.indices = H->local;
		if (gnn_dblock_create(cpu, &blk, &db, &err) != GNN_OK)
		{
			CHECK(0, "%s: host block: %s", what, err.msg);
			return;
		}
		ok_raw &= same_i64(db.raw.csr.t_indptr, H->tptr, blk.n_src + 1) &&
			same_i32(db.raw.csr.t_indices, H->tidx, H->nnz) && same_i64(db.raw.csr.t_perm, H->tperm, H->nnz);
		if (loop)
			ok_loop &= db.loop.csr.nnz == H->lnnz && same_i64(db.loop.csr.indptr, H->lptr, blk.n_dst + 1) &&
				same_i32(db.loop.csr.indices, H->lidx, H->lnnz) &&
				memcmp(db.loop.csr.values, H->lval, sizeof(float) * H->lnnz) == 0 &&
				same_i64(db.loop.csr.t_indptr, H->ltptr, blk.n_src + 1) &&
				same_i32(db.loop.csr.t_indices, H->ltidx, H->lnnz) &&
				same_i64(db.loop.csr.t_perm, H->ltperm, H->lnnz);
		gnn_dblock_free(&db);
	}
	CHECK(ok_raw, "%s: block transposes = the host transpose, bit for bit", what);
	if (loop)
		CHECK(ok_loop, "%s: GCN's looped normalised CSR and its transpose = the host block's, bit for bit", what);
}

static void
check_batches(const gnn_graph *g, gnn_backend *cpu)
{
	struct
	{
		int			L;
		int64_t		f[3];
		bool		replace;
		int64_t		bs;
	}			cases[] = {{2, {10, 5}, false, 256}, {3, {15, 10, 5}, true, 64}, {2, {-1, 3}, false, 16},
	{1, {25}, true, 512}};

	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++)
	{
		int64_t		n = cases[c].bs;
		int32_t    *seeds = malloc(sizeof(int32_t) * n);
		int64_t    *o = emu_order(g->num_nodes, 101 + c);
		int64_t		cap = gnn_h_capacity(g->num_nodes);
		emu_batch	a,
					b,
					z;
		char		what[96],
					why[200];

		for (int64_t i = 0; i < n; i++)
			seeds[i] = (int32_t) o[i];
		snprintf(what, sizeof(what), "%d hops, fan-outs %lld/%lld/%lld, %s, %lld seeds", cases[c].L,
				 (long long) cases[c].f[0], (long long) cases[c].f[1], (long long) cases[c].f[2],
				 cases[c].replace ? "with replacement" : "without", (long long) n);
		emu_batch_build(g, seeds, n, cases[c].L, cases[c].f, cases[c].replace, 7 + c, true, cap, 0, &z);
		emu_batch_build(g, seeds, n, cases[c].L, cases[c].f, cases[c].replace, 7 + c, true, cap, 1000 + c, &a);
		emu_batch_build(g, seeds, n, cases[c].L, cases[c].f, cases[c].replace, 7 + c, true, cap, 2000 + c, &b);
		CHECK(batch_equal(&z, &a, true) && batch_equal(&a, &b, true),
			  "%s: the same batch in three emulated thread orders", what);
		CHECK(batch_right(g, &a, seeds, n, why, sizeof(why)), "%s: a right relabelling (%lld input nodes)%s%s", what,
			  (long long) a.n_at[a.L], why[0] ? ": " : "", why);
		check_against_host(cpu, &a, true, what);
		emu_batch_free(&a);
		emu_batch_free(&b);
		emu_batch_free(&z);
		free(o);
		free(seeds);
	}
}

static void
check_gather(const gnn_graph *g)
{
	int64_t		n = g->num_nodes,
				d = g->feat_dim,
				cached = n / 5,
				k = 3000;
	int32_t    *slot = malloc(sizeof(int32_t) * n),
			   *rows = malloc(sizeof(int32_t) * cached),
			   *nodes = malloc(sizeof(int32_t) * k);
	float	   *cache = malloc(sizeof(float) * cached * d),
			   *want = malloc(sizeof(float) * k * d),
			   *got = malloc(sizeof(float) * k * d);
	int64_t    *o = emu_order(n, 55);
	int64_t		hits = 0,
				got_hits;
	gnn_error	err;

	for (int64_t v = 0; v < n; v++)
		slot[v] = -1;
	for (int64_t r = 0; r < cached; r++)
	{
		rows[r] = (int32_t) o[r];
		slot[rows[r]] = (int32_t) r;
	}
	gnn_gather_dense(g, rows, cached, false, 1, cache, &err);
	for (int64_t i = 0; i < k; i++)
	{
		nodes[i] = (int32_t) gnn_s_below(gnn_s_mix(i * 3 + 1), n);
		hits += slot[nodes[i]] >= 0;
	}
	gnn_gather_dense(g, nodes, k, false, 1, want, &err);
	for (int v = 1; v <= 4; v *= 4)
	{
		memset(got, 0, sizeof(float) * k * d);
		got_hits = emu_gather_cached(cache, slot, g->feat, d, nodes, k, v, got);
		CHECK(memcmp(got, want, sizeof(float) * k * d) == 0 && got_hits == hits,
			  "cached gather (vector width %d) = the host gather, %lld of %lld rows from the cache", v,
			  (long long) got_hits, (long long) k);
	}
	got_hits = emu_gather_cached(g->feat, NULL, NULL, d, nodes, k, 1, got);
	CHECK(memcmp(got, want, sizeof(float) * k * d) == 0 && got_hits == k,
		  "everything cached in graph order (no slot map): the host rows, all hits");
	free(slot);
	free(rows);
	free(nodes);
	free(cache);
	free(want);
	free(got);
	free(o);
}

/* gpu_batch.c over the emulated entry points, against emu_batch_build */
static void
check_batcher(const gnn_graph *g, gnn_backend *cpu, gnn_model_kind kind, int64_t cache_rows, int64_t graph_bytes,
			  const char *what)
{
	gnn_train_config cfg;
	gnn_minibatch_config mbc;
	gnn_gpu_batch_config gc;
	gnn_gpu_batcher *B = NULL;
	gnn_error	err;
	int64_t		f[3] = {-1, 10, 5},
				n = 300;
	int32_t    *train = malloc(sizeof(int32_t) * g->num_nodes),
			   *seeds = malloc(sizeof(int32_t) * n);
	int64_t    *o = emu_order(g->num_nodes, 77);
	bool		loop = kind != GNN_MODEL_SAGE;
	bool		ok = true;
	gnn_status	st;

	for (int64_t v = 0; v < g->num_nodes; v++)
		train[v] = (int32_t) v;
	gnn_train_config_default(kind, &cfg);
	cfg.layers = 3;
	cfg.row_normalise = false;
	memset(&mbc, 0, sizeof(mbc));
	mbc.sampler.kind = GNN_SAMPLER_NEIGHBOR;
	mbc.sampler.nhops = 3;
	mbc.sampler.replace = kind == GNN_MODEL_GCN;
	for (int h = 0; h < 3; h++)
		mbc.sampler.fanouts[h] = (int32_t) f[h];
	mbc.batch_size = (int32_t) n;
	gnn_gpu_batch_config_default(&gc);
	gc.api = &emu_api;
	gc.cache_bytes = cache_rows * g->feat_dim * (int64_t) sizeof(float);
	gc.graph_bytes = graph_bytes;
	mbc.gpu = &gc;
	st = gnn_gpu_batcher_create(cpu, g, &cfg, &mbc, &gc, train, g->num_nodes, 4096, 2, &B, &err);
	if (!CHECK(st == GNN_OK, "%s: batcher (%s)", what, st == GNN_OK ? "ok" : err.msg))
		goto out;
	for (int round = 0; round < 3 && ok; round++)
	{
		gnn_dblock	blocks[GNN_MAX_LAYERS];
		gnn_dfeat	x;
		emu_batch	E;
		int64_t		edges,
					inputs,
					bs = round == 1 ? n / 3 : n;	/* a short batch between two long ones */
		double		ts,
					tg;
		float	   *want;
		gnn_gpu_batch_stats gs;

		for (int64_t i = 0; i < bs; i++)
			seeds[i] = (int32_t) o[(i + round * n) % g->num_nodes];
		st = gnn_gpu_batcher_next(B, round % 2, cpu, seeds, bs, 50 + round, blocks, &x, &gs, &ts, &tg, &err);
		edges = gs.edges;
		inputs = gs.rows;
		if (!CHECK(st == GNN_OK, "%s: batch %d (%s)", what, round, st == GNN_OK ? "ok" : err.msg))
			break;
		emu_batch_build(g, seeds, bs, 3, f, mbc.sampler.replace, 50 + round, loop, gnn_h_capacity(g->num_nodes), 0, &E);
		ok &= inputs == E.n_at[3] && x.rows == inputs && same_i32(B ? E.nodes : NULL, E.nodes, 0);
		for (int h = 0; h < 3 && ok; h++)
		{
			const gnn_dblock *b = &blocks[2 - h];
			const emu_hop *H = &E.hop[h];
			int64_t		nd = E.n_at[h],
						ns = E.n_at[h + 1];

			ok &= b->n_dst == nd && b->n_src == ns && b->raw.csr.nnz == H->nnz &&
				same_i64(b->raw.csr.indptr, H->ptr, nd + 1) && same_i32(b->raw.csr.indices, H->local, H->nnz) &&
				same_i64(b->raw.csr.t_indptr, H->tptr, ns + 1) && same_i32(b->raw.csr.t_indices, H->tidx, H->nnz) &&
				same_i64(b->raw.csr.t_perm, H->tperm, H->nnz);
			if (loop)
				ok &= b->loop.csr.nnz == H->lnnz && same_i64(b->loop.csr.indptr, H->lptr, nd + 1) &&
					same_i32(b->loop.csr.indices, H->lidx, H->lnnz) &&
					memcmp(b->loop.csr.values, H->lval, sizeof(float) * H->lnnz) == 0 &&
					same_i64(b->loop.csr.t_perm, H->ltperm, H->lnnz);
		}
		want = malloc(sizeof(float) * inputs * g->feat_dim + 1);
		gnn_gather_dense(g, E.nodes, inputs, false, 1, want, &err);
		ok &= memcmp(x.dense.data, want, sizeof(float) * inputs * g->feat_dim) == 0;
		ok &= edges == E.hop[0].nnz + E.hop[1].nnz + E.hop[2].nnz &&
			gs.cache_rows == (cache_rows < g->num_nodes ? cache_rows : g->num_nodes) &&
			(cache_rows > 0 || gs.hits == 0) && (cache_rows < g->num_nodes || gs.hits == inputs) &&
			gs.host_bytes == (gs.rows - gs.hits) * (int64_t) sizeof(float) * g->feat_dim &&
			gs.graph_on_device == (graph_bytes != 0);
		if (round == 2)
			NOTE("  %s: %lld of %lld rows from the cache", what, (long long) gs.hits, (long long) gs.rows);
		free(want);
		emu_batch_free(&E);
	}
	CHECK(ok, "%s: three batches (blocks, features, counts) = the emulation's, bit for bit", what);
out:
	gnn_gpu_batcher_free(B);
	free(train);
	free(seeds);
	free(o);
}

/* minibatch GraphSAGE on Cora through the GPU path, its device emulated */
static void
check_cora(gnn_backend *cpu)
{
	const char *dir = check_data_dir();
	char		path[600];
	gnn_dataset cora;
	gnn_error	err;
	gnn_train_config cfg;
	gnn_minibatch_config mbc;
	gnn_gpu_batch_config gc;
	gnn_train_result res;
	gnn_minibatch_stats stats;
	double		s = 0;
	curve		a = {0},
				b = {0};
	int			seeds = getenv("GNN_TEST_SEEDS") ? atoi(getenv("GNN_TEST_SEEDS")) : 3;
	gnn_graph	gd;
	float	   *dense = NULL;
	gnn_status	st;

	if (!dir)
	{
		CHECK_SKIP("../shared/data not found (set GNN_DATA_DIR)", "cora through the emulated GPU batch path");
		return;
	}
	snprintf(path, sizeof(path), "%s/cora", dir);
	if (!CHECK(gnn_dataset_load(path, 0, &cora, &err) == GNN_OK, "load cora"))
		return;
	/* sparse features go to the GPU only when all of them fit densely: one epoch so */
	gnn_train_config_default(GNN_MODEL_SAGE, &cfg);
	cfg.epochs = 1;
	memset(&mbc, 0, sizeof(mbc));
	mbc.sampler.kind = GNN_SAMPLER_NEIGHBOR;
	mbc.sampler.nhops = 2;
	mbc.sampler.fanouts[0] = mbc.sampler.fanouts[1] = 10;
	mbc.batch_size = 64;
	gnn_gpu_batch_config_default(&gc);
	gc.api = &emu_api;
	mbc.gpu = &gc;
	st = gnn_train_minibatch(&cora.g, &cfg, &mbc, cpu, on_epoch, &a, NULL, NULL, NULL, &res, &stats, &err);
	CHECK(st == GNN_OK &&
		  stats.gpu_batches && stats.cache_hits == stats.feature_rows && a.n == 1 && a.hit[0] == 1.0,
		  "sparse features that fit: densified into the cache, every row a hit (%s)",
		  stats.gpu_batches ? "GPU batches" : stats.cpu_batches_why);
	gc.cache_bytes = 1 << 20;
	CHECK(gnn_train_minibatch(&cora.g, &cfg, &mbc, cpu, NULL, NULL, NULL, NULL, NULL, &res, &stats, &err) == GNN_OK &&
		  !stats.gpu_batches && strstr(stats.cpu_batches_why, "densely") != NULL,
		  "sparse features that do not fit: CPU batches, saying why (%s)", stats.cpu_batches_why);
	memset(&a, 0, sizeof(a));
	/* dense features from here on (the common case: text-model embeddings) */
	{
		int64_t		n = cora.g.num_nodes,
					d = cora.g.feat_dim;

		dense = calloc(n * d, sizeof(float));
		for (int64_t v = 0; v < n; v++)
			for (int64_t e = cora.g.fptr[v]; e < cora.g.fptr[v + 1]; e++)
				dense[v * d + cora.g.fidx[e]] += cora.g.fval ? cora.g.fval[e] : 1.0f;
		gd = cora.g;
		gd.feat_kind = GNN_FEAT_DENSE;
		gd.feat = dense;
		gd.fptr = NULL;
		gd.fidx = NULL;
		gd.fval = NULL;
		gd.feat_nnz = 0;
	}
	gnn_train_config_default(GNN_MODEL_SAGE, &cfg);
	cfg.epochs = 30;
	cfg.hidden = 64;
	cfg.lr = 0.01f;
	cfg.select = GNN_SELECT_VAL_ACC;
	memset(&mbc, 0, sizeof(mbc));
	mbc.sampler.kind = GNN_SAMPLER_NEIGHBOR;
	mbc.sampler.nhops = 2;
	mbc.sampler.fanouts[0] = 10;
	mbc.sampler.fanouts[1] = 10;
	/* as gnn.train asks: by weight where the graph has weights (Cora has none: uniform, on the GPU) */
	mbc.sampler.weighted = true;
	mbc.batch_size = 64;
	gnn_gpu_batch_config_default(&gc);
	gc.api = &emu_api;
	/* a third of the rows cached, by pre-sampling */
	gc.cache_bytes = gd.num_nodes / 3 * gd.feat_dim * (int64_t) sizeof(float);
	mbc.gpu = &gc;
	for (int i = 0; i < seeds; i++)
	{
		cfg.seed = (uint64_t) i + 1;
		st = gnn_train_minibatch(&gd, &cfg, &mbc, cpu, NULL, NULL, NULL, NULL, NULL, &res, &stats, &err);
		if (!CHECK(st == GNN_OK && stats.gpu_batches, "cora, emulated GPU batches, seed %d (%s)", i + 1,
				   stats.gpu_batches ? "built by the GPU path" : stats.cpu_batches_why))
			goto out;
		NOTE("  seed %d: test %.4f; cache %lld rows, %.1f%% of %lld rows hit", i + 1, res.best.test_acc,
			 (long long) stats.cache_rows, 100.0 * stats.cache_hits / (stats.feature_rows ? stats.feature_rows : 1),
			 (long long) stats.feature_rows);
		s += res.best.test_acc;
	}
	CHECK(s / seeds >= 0.79, "minibatch GraphSAGE on cora through the GPU batch path: mean test accuracy %.4f >= 0.79",
		  s / seeds);
	CHECK(stats.cache_hits > stats.feature_rows / 3 && stats.cache_hits < stats.feature_rows,
		  "pre-sampling a third of the rows serves more than a third of the reads (%.1f%%)",
		  100.0 * stats.cache_hits / (stats.feature_rows ? stats.feature_rows : 1));
	cfg.epochs = 3;
	cfg.seed = 9;
	gnn_train_minibatch(&gd, &cfg, &mbc, cpu, on_epoch, &a, NULL, NULL, NULL, &res, &stats, &err);
	emu_api_order = 777;		/* other emulated thread orders */
	gnn_train_minibatch(&gd, &cfg, &mbc, cpu, on_epoch, &b, NULL, NULL, NULL, &res, &stats, &err);
	emu_api_order = 4242;
	CHECK(a.n == 3 && b.n == 3 && memcmp(a.loss, b.loss, sizeof(a.loss[0]) * 3) == 0,
		  "the same seed gives the same curve, whatever the thread order of the relabel");
	/* batches built ahead on a thread (and stream) of their own: the same curve */
	memset(&b, 0, sizeof(b));
	mbc.prefetch = 2;
	st = gnn_train_minibatch(&gd, &cfg, &mbc, cpu, on_epoch, &b, NULL, NULL, NULL, &res, &stats, &err);
	CHECK(st == GNN_OK && stats.gpu_batches && b.n == 3 && memcmp(a.loss, b.loss, sizeof(a.loss[0]) * 3) == 0 &&
		  memcmp(a.hit, b.hit, sizeof(a.hit[0]) * 3) == 0,
		  "GPU batches built 2 ahead on a twin backend train the same curve as in line (waited %.3f s of %.3f)",
		  stats.wait_s, res.seconds);
	mbc.prefetch = 0;
	CHECK(a.n == 3 && a.hit[0] > 0 && a.hit[0] < 1 && isnan(b.hit[2]) == 0 && a.moved[0] > 0,
		  "training_log figures: hit rate %.3f, %lld bytes up in epoch 1", a.n ? a.hit[0] : -1.0,
		  (long long) (a.n ? a.moved[0] : -1));
	/* what only the CPU sampler does falls back, saying why */
	mbc.sampler.kind = GNN_SAMPLER_LADIES;
	mbc.sampler.fanouts[0] = mbc.sampler.fanouts[1] = 256;
	cfg.epochs = 1;
	CHECK(gnn_train_minibatch(&gd, &cfg, &mbc, cpu, NULL, NULL, NULL, NULL, NULL, &res, &stats, &err) == GNN_OK &&
		  !stats.gpu_batches && strstr(stats.cpu_batches_why, "node-wise") != NULL,
		  "LADIES batches are built on the CPU, and the stats say why (%s)", stats.cpu_batches_why);
out:
	free(dense);
	gnn_dataset_free(&cora);
}

int
main(void)
{
	gnn_error	err;
	gnn_backend *cpu = NULL;
	void	   *region = NULL;
	uint64_t	size;
	gnn_graph	g;

	check_table();
	if (!CHECK(gnn_backend_cpu_create(1, &cpu, &err) == GNN_OK, "CPU backend") ||
		!CHECK(emu_rmat_graph(12, 40000, false, 16, &region, &size, &g, &err) == GNN_OK, "R-MAT graph: %s",
			   err.msg))
		return check_done();
	check_batches(&g, cpu);
	check_gather(&g);
	check_batcher(&g, cpu, GNN_MODEL_SAGE, g.num_nodes, -1, "batcher, GraphSAGE, graph on the device, every row cached");
	check_batcher(&g, cpu, GNN_MODEL_GCN, g.num_nodes / 4, -1, "batcher, GCN, a quarter of the rows cached");
	check_batcher(&g, cpu, GNN_MODEL_GAT, 0, 0, "batcher, GAT, graph and features read from host");
	{
		int64_t		before = emu_api_limit_retries;

		check_batcher(&g, cpu, GNN_MODEL_SAGE, 0, -1, "batcher, GraphSAGE, no cache");
		CHECK(emu_api_limit_retries > before, "fan-out -1 draws more than the first guess: the batcher grew and drew again");
	}
	check_cora(cpu);
	{
		gnn_backend *twin = NULL;

		CHECK(gnn_backend_twin(cpu, 2, &twin, &err) == GNN_OK && twin && twin != cpu && strcmp(twin->name, cpu->name) == 0,
			  "a twin of the CPU backend");
		gnn_backend_destroy(twin);
	}
	gnn_backend_destroy(cpu);
	free(region);
	return check_done();
}
