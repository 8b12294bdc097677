/*
 * infer.c: exact inference for a few nodes on their k-hop in-neighbourhood.
 *
 * The neighbourhood is grown breadth-first from the (deduplicated) query
 * nodes: node i's row lists all its in-neighbours, numbered in order of
 * first appearance, so the nodes within h hops are a prefix [0, start[h])
 * and one CSR serves every layer: layer l's block is its prefix of
 * start[K-1-l] rows over start[K-l] sources (DGL's convention, destination i
 * is source i, as the samplers build).  Global ids map to local ones through
 * an open-addressing hash that grows with the neighbourhood, so a call costs
 * what the neighbourhood costs, however large the graph.
 *
 * On a typed graph the blocks carry what the whole-graph block carries
 * (gnn_block_from_graph): the relation of every entry, copied from
 * rarc_type alongside rindices, and the node type of every destination
 * (one array over the local ids serves every layer, as the rows do).  The
 * relational layers read them; the type-blind ones ignore them.  Sources
 * need no type: layer 0's input projection is one matrix, made per-type by
 * the features' constant column per node type, so the gathered rows suffice.
 */
#include "infer/infer.h"
#include "sample/sample.h"

#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ node map */

typedef struct slot
{
	int32_t		key;			/* graph index, -1 = empty */
	int32_t		val;			/* local index */
} slot;

typedef struct nodemap
{
	slot	   *s;
	int			bits;
	int64_t		used;
} nodemap;

static inline uint32_t
map_hash(int32_t key, int bits)
{
	return ((uint32_t) key * 0x9e3779b1u) >> (32 - bits);
}

static bool
map_init(nodemap *m, int bits)
{
	m->bits = bits;
	m->used = 0;
	m->s = malloc(sizeof(slot) << bits);
	if (!m->s)
		return false;
	memset(m->s, 0xff, sizeof(slot) << bits);
	return true;
}

/* double the table (kept at most half full) */
static bool
map_grow(nodemap *m)
{
	nodemap		b;
	uint32_t	mask;

	if (m->bits >= 31 || !map_init(&b, m->bits + 1))
		return false;			/* 2^30 nodes: far past any sensible max_nodes */
	mask = (1u << b.bits) - 1;
	for (int64_t i = 0; i < ((int64_t) 1 << m->bits); i++)
		if (m->s[i].key >= 0)
		{
			uint32_t	h = map_hash(m->s[i].key, b.bits);

			while (b.s[h].key >= 0)
				h = (h + 1) & mask;
			b.s[h] = m->s[i];
		}
	b.used = m->used;
	free(m->s);
	*m = b;
	return true;
}

/* ------------------------------------------------------------------ k-hop */

typedef struct khop
{
	const gnn_graph *g;
	nodemap		map;
	int32_t    *nodes;			/* local -> graph index */
	int64_t		n,
				cap_nodes;
	int64_t    *ptr;			/* rows of nodes [0, start[K-1]) */
	int64_t		cap_ptr;
	int32_t    *idx;			/* local source ids, ascending within a row */
	float	   *w;				/* edge weights when the graph has them */
	int16_t    *et;				/* relation of each entry when the graph has rarc_type */
	int16_t    *nt;				/* [n] node type of each local node when it has node_type */
	int64_t		nnz,
				cap_e,
				cap_w,
				cap_et;
	uint64_t   *scratch;		/* one row packed for sorting, twice */
	int64_t		cap_scratch;
	int64_t		start[GNN_MAX_LAYERS + 1];
} khop;

static bool
grow(void **p, int64_t *cap, int64_t need, size_t elem)
{
	int64_t		c = *cap ? *cap : 256;
	void	   *q;

	if (need <= *cap)
		return true;
	while (c < need)
		c *= 2;
	q = realloc(*p, elem * (size_t) c);
	if (!q)
		return false;
	*p = q;
	*cap = c;
	return true;
}

static void
khop_free(khop *k)
{
	free(k->map.s);
	free(k->nodes);
	free(k->ptr);
	free(k->idx);
	free(k->w);
	free(k->et);
	free(k->nt);
	free(k->scratch);
}

/* local id of graph node u, numbering it next when new; -1 when out of memory */
static int32_t
khop_local(khop *k, int32_t u)
{
	uint32_t	mask = (1u << k->map.bits) - 1,
				h = map_hash(u, k->map.bits);

	for (;; h = (h + 1) & mask)
	{
		if (k->map.s[h].key == u)
			return k->map.s[h].val;
		if (k->map.s[h].key < 0)
			break;
	}
	if (!grow((void **) &k->nodes, &k->cap_nodes, k->n + 1, sizeof(int32_t)))
		return -1;
	k->map.s[h].key = u;
	k->map.s[h].val = (int32_t) k->n;
	k->nodes[k->n] = u;
	if (++k->map.used * 2 > ((int64_t) 1 << k->map.bits) && !map_grow(&k->map))
		return -1;
	return (int32_t) k->n++;
}

/*
 * Sort packed (local id << 32 | position in the row) entries by id:
 * insertion sort for a few, else LSD radix sort on the id's bytes below
 * idbits bits (one to four passes of 256 buckets; tmp has room for n).
 * Both are stable, and the entries come in position order, so entries with
 * the same id (one arc per relation in a typed graph) keep the graph's
 * order.
 */
static void
sort_packed(uint64_t *a, uint64_t *tmp, int64_t n, int idbits)
{
	uint64_t   *src = a,
			   *dst = tmp;

	if (n <= 32)
	{
		for (int64_t i = 1; i < n; i++)
		{
			uint64_t	v = a[i];
			int64_t		j = i;

			for (; j > 0 && a[j - 1] > v; j--)
				a[j] = a[j - 1];
			a[j] = v;
		}
		return;
	}
	for (int shift = 32; shift < 32 + idbits; shift += 8)
	{
		int64_t		cnt[257] = {0};
		uint64_t   *t;

		for (int64_t i = 0; i < n; i++)
			cnt[((src[i] >> shift) & 255) + 1]++;
		for (int b = 0; b < 256; b++)
			cnt[b + 1] += cnt[b];
		for (int64_t i = 0; i < n; i++)
			dst[cnt[(src[i] >> shift) & 255]++] = src[i];
		t = src;
		src = dst;
		dst = t;
	}
	if (src != a)
		memcpy(a, src, sizeof(uint64_t) * n);
}

/*
 * Sort a row by local id, carrying its weights (w) and relations (et), either
 * may be NULL.  The nodes the row discovered (ids >= first_new) got ids
 * above every earlier one, in the order listed, so they already come last
 * and in order; only the others need sorting, which keeps a hub's row
 * (mostly new nodes) cheap.  k->scratch holds 2 * len; len < 2^32.
 */
static void
sort_row(khop *k, int32_t *ix, float *w, int16_t *et, int64_t len, int32_t first_new)
{
	uint64_t   *s = k->scratch;
	int64_t		nold = 0,
				tail = len;
	int			idbits = 1;
	bool		sorted = true;

	for (int64_t e = 1; e < len && sorted; e++)
		sorted = ix[e - 1] < ix[e];
	if (sorted)
		return;
	for (int64_t e = 0; e < len; e++)
		if (ix[e] < first_new)
			s[nold++] = ((uint64_t) ix[e] << 32) | (uint64_t) e;
	for (int64_t e = len - 1; e >= 0; e--)
		if (ix[e] >= first_new)
			s[--tail] = ((uint64_t) ix[e] << 32) | (uint64_t) e;
	while (idbits < 31 && ((int64_t) 1 << idbits) < first_new)
		idbits++;
	sort_packed(s, s + len, nold, idbits);
	for (int64_t e = 0; e < len; e++)
		ix[e] = (int32_t) (s[e] >> 32);
	/* permute the row's values through the second half of the scratch */
	if (w)
	{
		float	   *t = (float *) (s + len);

		for (int64_t e = 0; e < len; e++)
			t[e] = w[(uint32_t) s[e]];
		memcpy(w, t, sizeof(float) * len);
	}
	if (et)
	{
		int16_t    *t = (int16_t *) (s + len);

		for (int64_t e = 0; e < len; e++)
			t[e] = et[(uint32_t) s[e]];
		memcpy(et, t, sizeof(int16_t) * len);
	}
}

static gnn_status
khop_limit(khop *k, int hops, int64_t max_nodes, gnn_error *err)
{
	return gnn_error_set(err, GNN_ERR_LIMIT,
						 "the %d-hop neighbourhood of the %lld given nodes has more than %lld nodes",
						 hops, (long long) k->start[0], (long long) max_nodes);
}

/*
 * The neighbourhood of idx[0..n) over hops hops; seed_local[i] = local id of
 * idx[i].  GNN_ERR_LIMIT as soon as it grows past max_nodes (> 0).
 */
static gnn_status
khop_build(khop *k, const int64_t *idx, int64_t n, int hops, int64_t max_nodes,
		   int32_t *seed_local, gnn_error *err)
{
	const gnn_graph *g = k->g;
	int			bits = 10;
	int64_t		row = 0;

	while (bits < 20 && ((int64_t) 1 << bits) < 4 * n)
		bits++;					/* the table grows with the neighbourhood */
	if (!map_init(&k->map, bits))
		return gnn_error_set(err, GNN_ERR_NOMEM, "out of memory");
	for (int64_t i = 0; i < n; i++)
	{
		if (idx[i] < 0 || idx[i] >= g->num_nodes)
			return gnn_error_set(err, GNN_ERR_INVALID, "node index %lld out of range [0, %lld)",
								 (long long) idx[i], (long long) g->num_nodes);
		if ((seed_local[i] = khop_local(k, (int32_t) idx[i])) < 0)
			return gnn_error_set(err, GNN_ERR_NOMEM, "out of memory");
	}
	k->start[0] = k->n;
	if (max_nodes > 0 && k->n > max_nodes)
		return khop_limit(k, hops, max_nodes, err);
	if (!grow((void **) &k->ptr, &k->cap_ptr, 1, sizeof(int64_t)))
		return gnn_error_set(err, GNN_ERR_NOMEM, "out of memory");
	k->ptr[0] = 0;
	for (int h = 0; h < hops; h++)
	{
		int64_t		end = k->n;

		if (!grow((void **) &k->ptr, &k->cap_ptr, end + 1, sizeof(int64_t)))
			return gnn_error_set(err, GNN_ERR_NOMEM, "out of memory");
		for (; row < end; row++)
		{
			int32_t		v = k->nodes[row];
			const int32_t *nb;
			const float *nw;
			/* (a delta graph is homogeneous: no arc types) */
			int64_t		b = g->has_delta ? 0 : g->rindptr[v],
						deg = gnn_graph_in_row(g, v, &nb, &nw);
			int32_t		first_new = (int32_t) k->n;
			int32_t    *ix;
			float	   *w = NULL;
			int16_t    *et = NULL;

			if (deg > UINT32_MAX)	/* positions are packed in 32 bits to sort */
				return gnn_error_set(err, GNN_ERR_LIMIT, "node %d has %lld in-arcs, more than inference on nodes handles",
									 v, (long long) deg);
			/* + 1: the arrays exist even when no row has an entry */
			if (!grow((void **) &k->idx, &k->cap_e, k->nnz + deg + 1, sizeof(int32_t)) ||
				!grow((void **) &k->scratch, &k->cap_scratch, 2 * deg + 1, sizeof(uint64_t)) ||
				(g->rweights && !grow((void **) &k->w, &k->cap_w, k->nnz + deg + 1, sizeof(float))) ||
				(g->rarc_type && !grow((void **) &k->et, &k->cap_et, k->nnz + deg + 1, sizeof(int16_t))))
				return gnn_error_set(err, GNN_ERR_NOMEM, "out of memory");
			ix = k->idx + k->nnz;
			for (int64_t e = 0; e < deg; e++)
			{
				if (e + 8 < deg)
					__builtin_prefetch(&k->map.s[map_hash(nb[e + 8], k->map.bits)]);
				if ((ix[e] = khop_local(k, nb[e])) < 0)
					return gnn_error_set(err, GNN_ERR_NOMEM, "out of memory");
				if (max_nodes > 0 && k->n > max_nodes)
					return khop_limit(k, hops, max_nodes, err);
			}
			if (g->rweights)
			{
				w = k->w + k->nnz;
				memcpy(w, nw, sizeof(float) * deg);
			}
			if (g->rarc_type)
			{
				et = k->et + k->nnz;
				memcpy(et, g->rarc_type + b, sizeof(int16_t) * deg);
			}
			sort_row(k, ix, w, et, deg, first_new);
			k->nnz += deg;
			k->ptr[row + 1] = k->nnz;
		}
		k->start[h + 1] = k->n;
	}
	/* destination i is local node i in every layer's block */
	if (g->node_type)
	{
		if (!(k->nt = malloc(sizeof(int16_t) * (k->n + 1))))
			return gnn_error_set(err, GNN_ERR_NOMEM, "out of memory");
		for (int64_t i = 0; i < k->n; i++)
			k->nt[i] = g->node_type[k->nodes[i]];
	}
	return GNN_OK;
}

/* ------------------------------------------------------------------ inference */

/*
 * GCN degrees of the graph for the block's nodes: in-degrees of the nodes
 * that have rows, out-degrees of all (gnn_dblock_create_normed's convention).
 */
static gnn_status
khop_degrees(const khop *k, int hops, double **dd, double **ds, gnn_error *err)
{
	int64_t		nr = k->start[hops - 1],
				nn = k->start[hops];

	*dd = malloc(sizeof(double) * (nr + 1));
	*ds = malloc(sizeof(double) * (nn + 1));
	if (!*dd || !*ds)
		return gnn_error_set(err, GNN_ERR_NOMEM, "out of memory");
	for (int64_t i = 0; i < nr; i++)
		(*dd)[i] = gnn_graph_gcn_degree(k->g, k->nodes[i], true);
	for (int64_t i = 0; i < nn; i++)
		(*ds)[i] = gnn_graph_gcn_degree(k->g, k->nodes[i], false);
	return GNN_OK;
}

gnn_status
gnn_model_infer_nodes(gnn_model *m, const gnn_graph *g, bool row_normalise, int layer,
					  bool softmax, const int64_t *idx, int64_t n, int64_t max_nodes,
					  float *host_out, int64_t *touched, gnn_error *err)
{
	gnn_backend *be = gnn_model_backend(m);
	const gnn_model_config *mc = gnn_model_config_of(m);
	int			hops = layer < 0 ? mc->layers : layer + 1;
	khop		k;
	gnn_dblock	db[GNN_MAX_LAYERS];
	gnn_dblock *blocks[GNN_MAX_LAYERS];
	gnn_dfeat	x;
	int			made = 0;
	int32_t    *seed_local = NULL;
	double	   *dd = NULL,
			   *ds = NULL;
	float	   *rows = NULL;
	const float *out;
	int32_t		cols;
	gnn_status	st;

	memset(&k, 0, sizeof(k));
	memset(&x, 0, sizeof(x));
	if (touched)
		*touched = 0;
	if (layer < -1 || layer >= mc->layers)
		return gnn_error_set(err, GNN_ERR_INVALID, "layer %d does not exist (the model has %d layers; -1 is the output)",
							 layer, mc->layers);
	if (n < 0)
		return gnn_error_set(err, GNN_ERR_INVALID, "node count must be >= 0, got %lld", (long long) n);
	if (mc->kind == GNN_MODEL_NODE2VEC)
	{
		if (touched)
			*touched = n;
		if (softmax)
			return gnn_error_set(err, GNN_ERR_INVALID, "a node2vec model has no classes to predict");
		return gnn_model_node_rows(m, g, idx, n, host_out, err);
	}
	if (n == 0)
		return GNN_OK;
	if (g->num_nodes > INT32_MAX - 1)
		return gnn_error_set(err, GNN_ERR_LIMIT, "inference on nodes uses 32-bit node indices; the graph has %lld nodes",
							 (long long) g->num_nodes);
	k.g = g;
	seed_local = malloc(sizeof(int32_t) * n);
	if (!seed_local)
		return gnn_error_set(err, GNN_ERR_NOMEM, "out of memory");
	st = khop_build(&k, idx, n, hops, max_nodes, seed_local, err);
	if (touched)
		*touched = k.n;
	if (st != GNN_OK)
		goto done;

	if (mc->kind == GNN_MODEL_GCN && (st = khop_degrees(&k, hops, &dd, &ds, err)) != GNN_OK)
		goto done;
	for (made = 0; made < hops; made++)
	{
		int			h = hops - 1 - made;
		gnn_block	blk = {0};

		blk.n_dst = k.start[h];
		blk.n_src = k.start[h + 1];
		blk.nnz = k.ptr[k.start[h]];
		blk.indptr = k.ptr;
		blk.indices = k.idx;
		blk.weights = g->rweights ? k.w : NULL;
		/* typed as gnn_block_from_graph types the whole graph */
		blk.etypes = g->rarc_type ? k.et : NULL;
		blk.dst_ntype = g->node_type ? k.nt : NULL;
		if ((st = gnn_dblock_create_forward(be, &blk, mc->kind, dd, ds, &db[made], err)) != GNN_OK)
			goto done;
		blocks[made] = &db[made];
	}
	if ((st = gnn_dfeat_gather(be, g, k.nodes, k.start[hops], row_normalise, 0, &x, err)) != GNN_OK ||
		(st = gnn_model_forward_layers(m, blocks, hops, &x, &out, err)) != GNN_OK)
		goto done;
	cols = gnn_model_layer_dim(m, hops - 1);
	if (layer < 0 && softmax &&
		(st = gnn_backend_error(be, gnn_backend_softmax_rows(be, out, (float *) out, k.start[0], cols), err)) != GNN_OK)
		goto done;				/* the model's own buffer, rewritten next forward */
	rows = malloc(sizeof(float) * k.start[0] * cols);
	if (!rows)
	{
		st = gnn_error_set(err, GNN_ERR_NOMEM, "out of memory");
		goto done;
	}
	if ((st = gnn_backend_error(be, gnn_backend_copy_d2h(be, rows, out, sizeof(float) * k.start[0] * cols),
								err)) != GNN_OK)
		goto done;
	for (int64_t i = 0; i < n; i++)
		memcpy(host_out + i * cols, rows + (int64_t) seed_local[i] * cols, sizeof(float) * cols);
done:
	while (made > 0)
		gnn_dblock_free(&db[--made]);
	gnn_dfeat_free(&x);
	khop_free(&k);
	free(seed_local);
	free(dd);
	free(ds);
	free(rows);
	return st;
}

/* ------------------------------------------------------------------ time-aware inference */

uint64_t
gnn_infer_temporal_seed(uint64_t train_seed)
{
	gnn_rng		r;

	/* "eval_tim": what time-aware evaluation mixed into its seed before */
	gnn_rng_seed(&r, train_seed ^ 0x6576616c5f74696dULL);
	return gnn_rng_next(&r);
}

/* a query position, sorted by node so that each node is computed once */
typedef struct qpos
{
	int64_t		node;
	int64_t		pos;
} qpos;

static int
qpos_cmp(const void *a, const void *b)
{
	const qpos *x = a,
			   *y = b;

	if (x->node != y->node)
		return x->node < y->node ? -1 : 1;
	return (x->pos > y->pos) - (x->pos < y->pos);
}

gnn_status
gnn_infer_batch_rows(gnn_model *m, const gnn_minibatch *mb, const gnn_dfeat *x, int nl, bool softmax, int64_t nb,
					 int32_t cols, float *rows, int32_t also_layer, float *arows, int32_t acols, gnn_error *err)
{
	gnn_backend *be = gnn_model_backend(m);
	const gnn_model_config *mc = gnn_model_config_of(m);
	gnn_dblock	db[GNN_MAX_LAYERS];
	gnn_dblock *blocks[GNN_MAX_LAYERS];
	int			made = 0;
	const float *out = NULL;
	gnn_status	st = GNN_OK;

	for (made = 0; made < nl; made++)
	{
		if ((st = gnn_dblock_create_forward(be, &mb->blocks[made], mc->kind, NULL, NULL, &db[made], err)) != GNN_OK)
			goto done;
		blocks[made] = &db[made];
	}
	st = nl == mc->layers ? gnn_model_forward(m, blocks, x, false, 0, &out, err)
		: gnn_model_forward_layers(m, blocks, nl, x, &out, err);
	if (st != GNN_OK)
		goto done;
	if (arows)
	{
		int64_t		ar;
		int32_t		ac;
		const float *a = gnn_model_layer_output(m, also_layer, &ar, &ac);

		if (!a || ar < nb || ac != acols)
		{
			st = gnn_error_set(err, GNN_ERR_CORRUPT, "the forward pass kept no output of layer %d", also_layer);
			goto done;
		}
		if ((st = gnn_backend_error(be, gnn_backend_copy_d2h(be, arows, a, sizeof(float) * nb * acols), err)) != GNN_OK)
			goto done;
	}
	if (softmax &&
		(st = gnn_backend_error(be, gnn_backend_softmax_rows(be, out, (float *) out, nb, cols), err)) != GNN_OK)
		goto done;				/* the model's own buffer, rewritten next forward */
	st = gnn_backend_error(be, gnn_backend_copy_d2h(be, rows, out, sizeof(float) * nb * cols), err);
done:
	while (made > 0)
		gnn_dblock_free(&db[--made]);
	return st;
}

/*
 * One batch of distinct nodes seeds[0..nb) with their bounds: sample, run
 * nl layers, and copy the seeds' rows (they are the first nb destinations
 * of every block) into rows (nb x cols) and, when asked, the rows of layer
 * c->also_layer into arows (nb x acols).  The whole model runs the forward
 * pass evaluation runs (gnn_model_forward), so its rows are evaluation's.
 */
static gnn_status
temporal_batch(gnn_model *m, const gnn_graph *g, gnn_sampler *s, const gnn_infer_temporal_config *c, int nl,
			   bool softmax, const int32_t *seeds, const int64_t *bounds, int64_t nb, int32_t cols,
			   float *rows, float *arows, int32_t acols, gnn_error *err)
{
	gnn_backend *be = gnn_model_backend(m);
	gnn_minibatch mb;
	gnn_dfeat	x;
	gnn_status	st;

	memset(&x, 0, sizeof(x));
	if ((st = gnn_sampler_sample_at(s, seeds, c->sampler.temporal ? bounds : NULL, nb, c->seed, &mb, err)) != GNN_OK)
		return st;
	if (mb.n_nodes[0] != nb)
		return gnn_error_set(err, GNN_ERR_CORRUPT, "a batch of %lld distinct nodes sampled %lld seeds",
							 (long long) nb, (long long) mb.n_nodes[0]);
	if ((st = gnn_dfeat_gather(be, g, mb.input_nodes, mb.n_input, c->row_normalise, c->sampler.nthreads, &x,
							   err)) == GNN_OK)
		st = gnn_infer_batch_rows(m, &mb, &x, nl, nl == gnn_model_config_of(m)->layers && softmax, nb, cols, rows,
								  c->also_layer, arows, acols, err);
	gnn_dfeat_free(&x);
	return st;
}

gnn_status
gnn_infer_temporal_sampling(const gnn_model *m, const gnn_graph *g, const gnn_infer_temporal_config *c, int layer,
							gnn_sampler_config *sc, gnn_error *err)
{
	const gnn_model_config *mc = gnn_model_config_of(m);
	int			L = mc->layers;
	int			nl = layer < 0 ? L : layer + 1;
	int			first = L - nl;

	if (layer < -1 || layer >= L)
		return gnn_error_set(err, GNN_ERR_INVALID, "layer %d does not exist (the model has %d layers; -1 is the output)",
							 layer, L);
	if (mc->kind == GNN_MODEL_NODE2VEC)
		return gnn_error_set(err, GNN_ERR_INVALID, "a node2vec model is not time-aware: it has a row per node");
	if (c->sampler.nhops != L)
		return gnn_error_set(err, GNN_ERR_INVALID, "the sampler has %d hops for a model with %d layers (give the training fan-outs)",
							 c->sampler.nhops, L);
	if (c->batch_size < 1)
		return gnn_error_set(err, GNN_ERR_INVALID, "batch size must be >= 1, got %lld", (long long) c->batch_size);
	if (c->has_as_of && !c->sampler.temporal)
		return gnn_error_set(err, GNN_ERR_INVALID, "as_of bounds time-aware sampling, and the sampler is not temporal");
	if (c->also_out && (layer != -1 || c->also_layer < 0 || c->also_layer >= L))
		return gnn_error_set(err, GNN_ERR_INVALID, "a second layer (%d) goes only with the output layer, and must be in [0, %d)",
							 c->also_layer, L);
	if (g->num_nodes > INT32_MAX - 1)
		return gnn_error_set(err, GNN_ERR_LIMIT, "time-aware inference uses 32-bit node indices; the graph has %lld nodes",
							 (long long) g->num_nodes);
	/* the last nl hops of the training sampler, drawing as they do there */
	gnn_sampler_config_hops(&c->sampler, g, first, nl, sc);
	return GNN_OK;
}

gnn_status
gnn_model_infer_temporal(gnn_model *m, const gnn_graph *g, const gnn_infer_temporal_config *c, int layer,
						 bool softmax, const int64_t *idx, int64_t n, float *host_out, gnn_error *err)
{
	const gnn_model_config *mc = gnn_model_config_of(m);
	int			L = mc->layers;
	int			nl = layer < 0 ? L : layer + 1;
	bool		temporal = c->sampler.temporal;
	gnn_sampler_config sc;
	gnn_sampler *s = NULL;
	qpos	   *ord = NULL;
	int32_t    *seeds = NULL;
	int64_t    *bounds = NULL;
	float	   *rows = NULL,
			   *arows = NULL;
	int32_t		cols,
				acols = 0;
	int64_t		bs = c->batch_size;
	bool		sorted = true;
	gnn_status	st = GNN_OK;

	if ((st = gnn_infer_temporal_sampling(m, g, c, layer, &sc, err)) != GNN_OK)
		return st;
	if (n < 0)
		return gnn_error_set(err, GNN_ERR_INVALID, "node count must be >= 0, got %lld", (long long) n);
	for (int64_t i = 0; i < n; i++)
		if (idx[i] < 0 || idx[i] >= g->num_nodes)
			return gnn_error_set(err, GNN_ERR_INVALID, "node index %lld out of range [0, %lld)",
								 (long long) idx[i], (long long) g->num_nodes);
	if (n == 0)
		return GNN_OK;
	if ((st = gnn_sampler_create(g, &sc, &s, err)) != GNN_OK)
		return st;

	cols = gnn_model_layer_dim(m, nl - 1);
	if (c->also_out)
		acols = gnn_model_layer_dim(m, c->also_layer);
	if (bs > n)
		bs = n;
	ord = malloc(sizeof(qpos) * n);
	seeds = malloc(sizeof(int32_t) * bs);
	bounds = malloc(sizeof(int64_t) * bs);
	rows = malloc(sizeof(float) * bs * cols);
	arows = c->also_out ? malloc(sizeof(float) * bs * acols + 1) : NULL;
	if (!ord || !seeds || !bounds || !rows || (c->also_out && !arows))
	{
		st = gnn_error_set(err, GNN_ERR_NOMEM, "out of memory for time-aware inference on %lld nodes", (long long) n);
		goto done;
	}
	for (int64_t i = 0; i < n; i++)
	{
		ord[i].node = idx[i];
		ord[i].pos = i;
		sorted &= i == 0 || idx[i - 1] <= idx[i];
	}
	if (!sorted)
		qsort(ord, n, sizeof(qpos), qpos_cmp);

	for (int64_t a = 0, b; a < n; a = b)
	{
		int64_t		nb = 0;

		if (c->should_stop && c->should_stop(c->stop_arg))
		{
			st = gnn_error_set(err, GNN_ERR_CANCELLED, "time-aware inference cancelled");
			goto done;
		}
		/* up to bs distinct nodes, with every position that asks for one of them */
		for (b = a; b < n; b++)
		{
			int32_t		v = (int32_t) ord[b].node;

			if (nb > 0 && v == seeds[nb - 1])
				continue;
			if (nb == bs)
				break;
			seeds[nb] = v;
			bounds[nb] = temporal ? gnn_temporal_bound(g, v, c->has_as_of, c->as_of) : INT64_MAX;
			nb++;
		}
		if ((st = temporal_batch(m, g, s, c, nl, softmax, seeds, bounds, nb, cols, rows, arows, acols, err)) != GNN_OK)
			goto done;
		for (int64_t k = a, j = -1; k < b; k++)
		{
			if (k == a || ord[k].node != ord[k - 1].node)
				j++;
			memcpy(host_out + ord[k].pos * cols, rows + j * cols, sizeof(float) * cols);
			if (arows)
				memcpy(c->also_out + ord[k].pos * acols, arows + j * acols, sizeof(float) * acols);
		}
	}
done:
	gnn_sampler_free(s);
	free(ord);
	free(seeds);
	free(bounds);
	free(rows);
	free(arows);
	return st;
}
