/*
 * gpu_batch.c: training minibatches built on the GPU (see gpu_batch.h).
 *
 * Per batch, on the backend's stream: the seeds go up (one copy), the
 * table is emptied and seeded, then for each hop the GPU sampler draws
 * (sample_hop: one count comes back to size the draws), the draws are
 * relabelled (one count comes back: the hop's new nodes), and after the
 * last hop every block gets its transpose and, for GCN and GAT, the
 * self-looped normalised CSR (one count each); the input features are
 * gathered from the cache and, for misses, from pinned host memory.
 * Every buffer is the batcher's and grows, never shrinks: after the first
 * batches nothing is allocated.
 */
#include "sample/gpu_batch.h"

#include "sample/sample_gpu.h"
#include "../../../kernels/relabel_math.h"	/* gnn_h_capacity */

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* room kept free beyond the estimates when sizing the cache by default */
#define GPU_MARGIN ((int64_t) 512 << 20)

typedef struct hop_bufs
{
	gnn_buf		ptr,			/* block CSR: the hop's per-destination offsets */
				local,			/* block columns */
				t_ptr,
				t_idx,
				t_perm,
				lptr,			/* GCN / GAT: the looped CSR and its transpose */
				lidx,
				lval,
				lt_ptr,
				lt_idx,
				lt_perm;
	int64_t		nnz,
				lnnz;
} hop_bufs;

/* what one batch in flight owns (a pipeline slot) */
typedef struct batch_slot
{
	int32_t    *keys,
			   *vals,
			   *nodes;
	unsigned long long *hits;	/* device counter of the batch's cache hits */
	gnn_buf		src,
				fresh,
				deg,
				x;
	hop_bufs	hop[GNN_MAX_LAYERS];
	int64_t		n_at[GNN_MAX_LAYERS + 1];
} batch_slot;

struct gnn_gpu_batcher
{
	gnn_backend *be;
	gnn_gpu_sample_api api;
	const gnn_graph *g;
	int			layers;
	int64_t		fanout[GNN_MAX_LAYERS];
	bool		replace;
	bool		weighted;
	bool		loop;			/* GCN / GAT read the looped CSR */
	bool		row_normalise;
	int64_t		d;

	/* the reverse CSR as the kernels read it: device copies or UVA pointers */
	const int64_t *rindptr;
	const int32_t *rindices;
	void	   *own_rindptr,
			   *own_rindices;
	float	   *cumw;			/* weighted: per-row prefix sums (device) */
	void	   *reg[3];			/* registered host ranges (their starts) */
	int			nreg;

	/* features: cache rows (slot[v] = row, NULL when every row is cached in
	 * graph order), the host matrix over UVA for misses */
	float	   *cache;
	int32_t    *slot;
	const float *host_feat;
	int64_t		cache_rows;

	/* per batch, one set per pipeline slot */
	int64_t		node_cap;		/* nodes a batch may reach */
	int64_t		table_cap;
	int			nslots;
	batch_slot *slots;

	gnn_gpu_batch_stats info;	/* cache_rows, cache_bytes, graph_on_device */
};

void
gnn_gpu_batch_config_default(gnn_gpu_batch_config *c)
{
	memset(c, 0, sizeof(*c));
	c->cache_bytes = -1;
	c->policy = GNN_CACHE_PRESAMPLE;
	c->graph_bytes = -1;
}

/* draws by weight: asked for and the graph has weights (as the CPU sampler decides) */
static bool
draws_weighted(const gnn_sampler_config *s, const gnn_graph *g)
{
	return s->weighted && g->rweights != NULL;
}

const char *
gnn_gpu_batch_spec_unsupported(const gnn_backend *be, const gnn_graph *g, const gnn_gpu_batch_spec *spec)
{
	const gnn_sampler_config *s = spec->sampler;
	bool		emulated = spec->emulated;

	if (!be || (strncmp(be->name, "cuda", 4) != 0 && !emulated))
		return "the backend is not CUDA";
	if (spec->cpu_batches)
		return "the job asked for batches built on the CPU (gpu_sampling false)";
	if (g->num_node_types > 1 || g->num_edge_types > 1)
		return "typed graphs are sampled per relation on the CPU";
	if (s->kind != GNN_SAMPLER_NEIGHBOR)
		return "only node-wise neighbour sampling runs on the GPU";
	if (s->temporal)
		return "temporal sampling runs on the CPU";
	if (draws_weighted(s, g) && !s->replace)
		return "weighted sampling without replacement runs on the CPU";
	if (!draws_weighted(s, g) && g->rweights)
		return "uniform sampling of a weighted graph carries edge weights, which the GPU sampler does not give";
	if (g->feat_kind != GNN_FEAT_DENSE && g->feat_kind != GNN_FEAT_SPARSE)
		return "the graph has no node features";
	if (spec->model != GNN_MODEL_GCN && spec->model != GNN_MODEL_SAGE && spec->model != GNN_MODEL_GAT)
		return "relational models train on CPU-built blocks";
	if (spec->fail_batch > 0)
		return "fault injection (fail_batch) tests the CPU producer";
	return NULL;
}

static gnn_status
be_err(gnn_gpu_batcher *B, gnn_status st, gnn_error *err)
{
	return gnn_backend_error(B->be, st, err);
}

/* grow b on the backend the batch runs on (memory is usable by every instance) */
static gnn_status
ensure(gnn_backend *be, gnn_buf *b, size_t bytes, gnn_error *err)
{
	return gnn_buf_ensure(be, b, bytes ? bytes : 8, err);
}

/* upload host into a new device array */
static gnn_status
upload(gnn_gpu_batcher *B, const void *host, size_t bytes, void **dev, gnn_error *err)
{
	gnn_status	st;

	*dev = NULL;
	if ((st = gnn_backend_alloc(B->be, bytes ? bytes : 8, dev)) != GNN_OK)
		return be_err(B, st, err);
	if (bytes && (st = gnn_backend_copy_h2d(B->be, *dev, host, bytes)) != GNN_OK)
		return be_err(B, st, err);
	return GNN_OK;
}

/*
 * Register host ranges for UVA reads: one range covering them all when they
 * lie in one mapping (as a loaded graph's arrays do), else each one.
 */
static gnn_status
register_host(gnn_gpu_batcher *B, const void **p, const size_t *bytes, int n, const void **dev, gnn_error *err)
{
	long		page = sysconf(_SC_PAGESIZE);
	uintptr_t	lo = UINTPTR_MAX,
				hi = 0;
	void	   *d;

	if (page <= 0)
		page = 4096;
	for (int i = 0; i < n; i++)
	{
		uintptr_t	a = (uintptr_t) p[i];

		lo = a < lo ? a : lo;
		hi = a + bytes[i] > hi ? a + bytes[i] : hi;
	}
	lo &= ~(uintptr_t) (page - 1);
	hi = (hi + page - 1) & ~(uintptr_t) (page - 1);
	if (B->api.host_register(B->be, (void *) lo, hi - lo, &d) == GNN_OK)
	{
		B->reg[B->nreg++] = (void *) lo;
		for (int i = 0; i < n; i++)
			dev[i] = (const char *) d + ((uintptr_t) p[i] - lo);
		return GNN_OK;
	}
	if (n == 1)
		return gnn_error_set(err, GNN_ERR_UNSUPPORTED, "host memory cannot be registered for the GPU: %s",
							 B->be->err.msg);
	for (int i = 0; i < n; i++)
		if (register_host(B, &p[i], &bytes[i], 1, &dev[i], err) != GNN_OK)
			return err->status;
	return GNN_OK;
}

/*
 * The most nodes (seeds included) a batch of bs seeds may reach: every
 * node after h hops is a destination of hop h, so n_{h+1} <= n_h (1 + f_h).
 */
static int64_t
node_bound(const gnn_gpu_batcher *B, int64_t bs)
{
	double		n = (double) bs;

	for (int h = 0; h < B->layers; h++)
	{
		if (B->fanout[h] < 0)
			return B->g->num_nodes;
		n *= 1.0 + (double) B->fanout[h];
		if (n >= (double) B->g->num_nodes)
			return B->g->num_nodes;
	}
	return (int64_t) n;
}

/* fill the cache's rows (host gather in chunks, uploaded) */
static gnn_status
fill_cache(gnn_gpu_batcher *B, const int32_t *rows, int64_t nrows, int threads, gnn_error *err)
{
	int64_t		chunk = 16384;
	float	   *buf = malloc(sizeof(float) * chunk * B->d + 1);
	gnn_status	st = GNN_OK;

	if (!buf)
		return gnn_error_set(err, GNN_ERR_NOMEM, "out of memory filling the GPU feature cache");
	for (int64_t k0 = 0; k0 < nrows && st == GNN_OK; k0 += chunk)
	{
		int64_t		k = nrows - k0 < chunk ? nrows - k0 : chunk;

		if ((st = gnn_gather_dense(B->g, rows + k0, k, false, threads, buf, err)) == GNN_OK &&
			(st = gnn_backend_copy_h2d(B->be, B->cache + k0 * B->d, buf, sizeof(float) * k * B->d)) != GNN_OK)
			st = be_err(B, st, err);
	}
	free(buf);
	return st;
}

/* sparse features, densified in chunks into the cache (every row, graph order) */
static gnn_status
fill_dense_from_sparse(gnn_gpu_batcher *B, gnn_error *err)
{
	const gnn_graph *g = B->g;
	int64_t		chunk = 16384,
				n = g->num_nodes;
	float	   *buf = malloc(sizeof(float) * chunk * B->d + 1);
	gnn_status	st = GNN_OK;

	if (!buf)
		return gnn_error_set(err, GNN_ERR_NOMEM, "out of memory filling the GPU feature cache");
	for (int64_t v0 = 0; v0 < n && st == GNN_OK; v0 += chunk)
	{
		int64_t		k = n - v0 < chunk ? n - v0 : chunk;

		memset(buf, 0, sizeof(float) * k * B->d);
		for (int64_t v = v0; v < v0 + k; v++)
			for (int64_t e = g->fptr[v]; e < g->fptr[v + 1]; e++)
				buf[(v - v0) * B->d + g->fidx[e]] += g->fval ? g->fval[e] : 1.0f;
		if ((st = gnn_backend_copy_h2d(B->be, B->cache + v0 * B->d, buf, sizeof(float) * k * B->d)) != GNN_OK)
			st = be_err(B, st, err);
	}
	free(buf);
	return st;
}

gnn_status
gnn_gpu_batcher_open(gnn_backend *be, const gnn_graph *g, const gnn_gpu_batch_spec *spec,
					 const gnn_gpu_batch_config *gc, const int32_t *train, int64_t ntrain, size_t model_bytes,
					 int nslots, gnn_gpu_batcher **out, gnn_error *err)
{
	gnn_gpu_batcher *B;
	const char *why;
	gnn_status	st;
	size_t		free_b = 0,
				total_b = 0;
	int64_t		n,
				m,
				graph_bytes,
				row_bytes,
				batch_bytes,
				budget;
	const void *hp[3];
	size_t		hb[3];
	const void *hd[3];
	int			nh = 0;

	*out = NULL;
	if ((why = gnn_gpu_batch_spec_unsupported(be, g, spec)) != NULL)
		return gnn_error_set(err, GNN_ERR_UNSUPPORTED, "%s", why);
	if (spec->batch_size < 1 || spec->sampler->nhops < 1 || spec->sampler->nhops > GNN_MAX_LAYERS)
		return gnn_error_set(err, GNN_ERR_INVALID, "bad minibatch configuration");
	n = g->num_nodes;
	m = g->num_edges;
	graph_bytes = (int64_t) sizeof(int64_t) * (n + 1) + (int64_t) sizeof(int32_t) * m;
	B = calloc(1, sizeof(*B));
	if (!B)
		return gnn_error_set(err, GNN_ERR_NOMEM, "out of memory");
	B->be = be;
	B->g = g;
	B->layers = spec->sampler->nhops;
	for (int h = 0; h < B->layers; h++)
		B->fanout[h] = spec->sampler->fanouts[h];
	B->replace = spec->sampler->replace;
	B->weighted = draws_weighted(spec->sampler, g);
	B->loop = spec->model != GNN_MODEL_SAGE;
	B->row_normalise = spec->row_normalise;
	B->d = g->feat_dim;
	if (gc->api)
		B->api = *gc->api;
	else if ((st = gnn_gpu_sample_bind(be, &B->api, err)) != GNN_OK)
		goto fail;
	if ((st = B->api.mem_info(be, &free_b, &total_b)) != GNN_OK)
	{
		st = be_err(B, st, err);
		goto fail;
	}

	/* the reverse CSR: on the device when it fits its budget, else read from host */
	if (gc->graph_bytes != 0 &&
		graph_bytes <= (gc->graph_bytes > 0 ? gc->graph_bytes : (int64_t) free_b / 2))
	{
		if ((st = upload(B, g->rindptr, sizeof(int64_t) * (n + 1), &B->own_rindptr, err)) != GNN_OK ||
			(st = upload(B, g->rindices, sizeof(int32_t) * m, &B->own_rindices, err)) != GNN_OK)
			goto fail;
		B->rindptr = B->own_rindptr;
		B->rindices = B->own_rindices;
		B->info.graph_on_device = true;
		free_b = free_b > (size_t) graph_bytes ? free_b - graph_bytes : 0;
	}
	else
	{
		hp[nh] = g->rindptr;
		hb[nh++] = sizeof(int64_t) * (n + 1);
		hp[nh] = g->rindices;
		hb[nh++] = sizeof(int32_t) * (m > 0 ? m : 1);
	}
	if (B->weighted)
		free_b = free_b > (size_t) m * 8 ? free_b - (size_t) m * 8 : 0;	/* weights and their prefix sums */

	/* the cache: what is left after the model (weights, gradients, two
	 * Adam moments), two batches' buffers and a margin */
	B->node_cap = node_bound(B, spec->batch_size);
	row_bytes = (int64_t) sizeof(float) * B->d;
	/* one batch's buffers, as gnn.estimate counts them (the job's estimate, passed in) */
	batch_bytes = spec->batch_bytes;
	budget = gc->cache_bytes;
	if (budget < 0)
		budget = (int64_t) free_b - 4 * (int64_t) model_bytes - (int64_t) (nslots > 0 ? nslots + 1 : 2) * batch_bytes -
			GPU_MARGIN;
	if (budget < 0)
		budget = 0;
	B->cache_rows = row_bytes > 0 ? budget / row_bytes : 0;
	if (B->cache_rows > n)
		B->cache_rows = n;
	if (g->feat_kind == GNN_FEAT_SPARSE && B->cache_rows < n)
	{
		st = gnn_error_set(err, GNN_ERR_UNSUPPORTED,
						   "sparse features are gathered on the GPU only when all of them fit its cache densely "
						   "(%lld MB; the cache has room for %lld of %lld rows)",
						   (long long) (row_bytes * n >> 20), (long long) B->cache_rows, (long long) n);
		goto fail;
	}
	if (B->cache_rows == n && g->feat_kind == GNN_FEAT_SPARSE)
	{
		/* every row cached, densified, in graph order */
		if ((st = gnn_backend_alloc(be, (size_t) row_bytes * (n > 0 ? n : 1), (void **) &B->cache)) != GNN_OK)
			st = be_err(B, st, err);
		else
			st = fill_dense_from_sparse(B, err);
		if (st != GNN_OK)
			goto fail;
	}
	else if (B->cache_rows == n)
	{
		/* every row cached, in graph order: the cache is the feature matrix */
		if ((st = upload(B, g->feat, (size_t) row_bytes * n, (void **) &B->cache, err)) != GNN_OK)
			goto fail;
	}
	else
	{
		int32_t    *rows = NULL,
				   *slot = NULL;
		int64_t		nrows = 0;

		hp[nh] = g->feat;
		hb[nh++] = (size_t) row_bytes * (n > 0 ? n : 1);
		if (B->cache_rows > 0)
		{
			gnn_cache_plan_config pc;

			memset(&pc, 0, sizeof(pc));
			pc.policy = gc->policy;
			pc.capacity = B->cache_rows;
			pc.sampler = spec->sampler;
			pc.seeds = train;
			pc.nseeds = ntrain;
			pc.batch_size = spec->batch_size;
			pc.batches = gc->presample_batches;
			pc.seed = spec->seed ^ 0x63616368ULL;	/* "cach" */
			if ((st = gnn_cache_plan(g, &pc, &rows, &nrows, err)) != GNN_OK)
				goto fail;
			slot = malloc(sizeof(int32_t) * (n + 1));
			if (!slot)
			{
				free(rows);
				st = gnn_error_set(err, GNN_ERR_NOMEM, "out of memory planning the GPU feature cache");
				goto fail;
			}
			for (int64_t v = 0; v < n; v++)
				slot[v] = -1;
			for (int64_t k = 0; k < nrows; k++)
				slot[rows[k]] = (int32_t) k;
			B->cache_rows = nrows;
			if ((st = gnn_backend_alloc(be, (size_t) row_bytes * (nrows > 0 ? nrows : 1), (void **) &B->cache)) != GNN_OK)
				st = be_err(B, st, err);
			if (st == GNN_OK)
				st = upload(B, slot, sizeof(int32_t) * n, (void **) &B->slot, err);
			if (st == GNN_OK)
				st = fill_cache(B, rows, nrows, spec->threads, err);
			free(rows);
			free(slot);
			if (st != GNN_OK)
				goto fail;
		}
	}
	if (nh > 0)
	{
		if ((st = register_host(B, hp, hb, nh, hd, err)) != GNN_OK)
			goto fail;
		for (int i = 0; i < nh; i++)
		{
			if (hp[i] == (const void *) g->rindptr)
				B->rindptr = hd[i];
			else if (hp[i] == (const void *) g->rindices)
				B->rindices = hd[i];
			else
				B->host_feat = hd[i];
		}
	}
	if (B->weighted)
	{
		void	   *w = NULL;

		/* weighted draws search per-row prefix sums of the in-edge weights, on the device */
		if ((st = upload(B, g->rweights, sizeof(float) * m, &w, err)) != GNN_OK)
			goto fail;
		if ((st = gnn_backend_alloc(be, sizeof(float) * (m > 0 ? m : 1), (void **) &B->cumw)) != GNN_OK)
			st = be_err(B, st, err);
		else if ((st = B->api.row_prefix(be, B->rindptr, w, n, B->cumw)) != GNN_OK ||
				 (st = gnn_backend_sync(be)) != GNN_OK)
			st = be_err(B, st, err);
		gnn_backend_free(be, w);
		if (st != GNN_OK)
			goto fail;
	}
	B->info.cache_rows = B->cache_rows;
	B->info.cache_bytes = B->cache_rows * row_bytes;

	/* the batches' fixed buffers, one set per slot */
	B->table_cap = gnn_h_capacity(B->node_cap);
	B->nslots = nslots > 0 ? nslots : 1;
	if (!(B->slots = calloc(B->nslots, sizeof(batch_slot))))
	{
		st = gnn_error_set(err, GNN_ERR_NOMEM, "out of memory");
		goto fail;
	}
	for (int k = 0; k < B->nslots; k++)
	{
		batch_slot *S = &B->slots[k];

		if ((st = gnn_backend_alloc(be, sizeof(int32_t) * B->table_cap, (void **) &S->keys)) != GNN_OK ||
			(st = gnn_backend_alloc(be, sizeof(int32_t) * B->table_cap, (void **) &S->vals)) != GNN_OK ||
			(st = gnn_backend_alloc(be, sizeof(int32_t) * (B->node_cap + 1), (void **) &S->nodes)) != GNN_OK ||
			(st = gnn_backend_alloc(be, sizeof(unsigned long long), (void **) &S->hits)) != GNN_OK)
		{
			st = be_err(B, st, err);
			goto fail;
		}
	}
	*out = B;
	return GNN_OK;
fail:
	gnn_gpu_batcher_free(B);
	return st;
}

/* grow a hop's buffers for nd destinations, ns sources and nnz entries */
static gnn_status
hop_ensure(gnn_gpu_batcher *B, gnn_backend *be, hop_bufs *H, int64_t nd, int64_t ns, int64_t nnz, gnn_error *err)
{
	gnn_status	st;

	if ((st = ensure(be, &H->t_ptr, sizeof(int64_t) * (ns + 1), err)) != GNN_OK ||
		(st = ensure(be, &H->t_idx, sizeof(int32_t) * nnz, err)) != GNN_OK ||
		(st = ensure(be, &H->t_perm, sizeof(int64_t) * nnz, err)) != GNN_OK)
		return st;
	if (!B->loop)
		return GNN_OK;
	if ((st = ensure(be, &H->lptr, sizeof(int64_t) * (nd + 1), err)) != GNN_OK ||
		(st = ensure(be, &H->lidx, sizeof(int32_t) * (nnz + nd), err)) != GNN_OK ||
		(st = ensure(be, &H->lval, sizeof(float) * (nnz + nd), err)) != GNN_OK ||
		(st = ensure(be, &H->lt_ptr, sizeof(int64_t) * (ns + 1), err)) != GNN_OK ||
		(st = ensure(be, &H->lt_idx, sizeof(int32_t) * (nnz + nd), err)) != GNN_OK ||
		(st = ensure(be, &H->lt_perm, sizeof(int64_t) * (nnz + nd), err)) != GNN_OK)
		return st;
	return GNN_OK;
}

static void
csr_set(gnn_dcsr *c, gnn_backend *be, int64_t nr, int64_t nc, int64_t nnz, const gnn_buf *ptr, const gnn_buf *idx,
		const gnn_buf *val, const gnn_buf *tp, const gnn_buf *ti, const gnn_buf *tperm)
{
	memset(c, 0, sizeof(*c));
	c->be = be;					/* mem[] stays NULL: the batcher owns the arrays */
	c->csr.n_rows = nr;
	c->csr.n_cols = nc;
	c->csr.nnz = nnz;
	c->csr.indptr = ptr->p;
	c->csr.indices = idx->p;
	c->csr.values = val ? val->p : NULL;
	c->csr.t_indptr = tp->p;
	c->csr.t_indices = ti->p;
	c->csr.t_perm = tperm->p;
}

int
gnn_gpu_batcher_slots(const gnn_gpu_batcher *B)
{
	return B->nslots;
}

gnn_status
gnn_gpu_batcher_next(gnn_gpu_batcher *B, int slot, gnn_backend *be, const int32_t *seeds, int64_t n, uint64_t seed,
					 gnn_dblock *blocks, gnn_dfeat *x, gnn_gpu_batch_stats *bst, double *sample_s,
					 double *gather_s, gnn_error *err)
{
	gnn_status	st;
	double		t = gnn_now_s();
	int			L = B->layers;
	int64_t		nin;
	batch_slot *S;
	unsigned long long hits = 0;

	*bst = B->info;
	bst->rows = bst->hits = bst->host_bytes = bst->edges = 0;
	*sample_s = *gather_s = 0;
	if (slot < 0 || slot >= B->nslots)
		return gnn_error_set(err, GNN_ERR_INVALID, "GPU batch slot %d of %d", slot, B->nslots);
	S = &B->slots[slot];
	if (n < 1 || n > B->node_cap)
		return gnn_error_set(err, GNN_ERR_INVALID, "a GPU batch of %lld seeds (room for %lld)", (long long) n,
							 (long long) B->node_cap);
	if ((st = gnn_backend_copy_h2d(be, S->nodes, seeds, sizeof(int32_t) * n)) != GNN_OK ||
		(st = B->api.relabel_seeds(be, S->keys, S->vals, B->table_cap, S->nodes, n)) != GNN_OK)
		return gnn_backend_error(be, st, err);
	S->n_at[0] = n;
	for (int h = 0; h < L; h++)
	{
		hop_bufs   *H = &S->hop[h];
		int64_t		nd = S->n_at[h],
					nnz = 0,
					fresh = 0;

		if ((st = ensure(be, &H->ptr, sizeof(int64_t) * (nd + 1), err)) != GNN_OK)
			return st;
		if (B->fanout[h] >= 0 && (st = ensure(be, &S->src, sizeof(int32_t) * (nd * B->fanout[h] + 1), err)) != GNN_OK)
			return st;
		st = B->api.sample_hop(be, B->rindptr, B->rindices, B->cumw, S->nodes, nd, h, B->fanout[h], B->replace, seed,
							   H->ptr.p, S->src.p, NULL, (int64_t) (S->src.cap / sizeof(int32_t)), &nnz);
		if (st == GNN_ERR_LIMIT)
		{
			/* more draws than room: grow and draw again (the same draws) */
			if ((st = ensure(be, &S->src, sizeof(int32_t) * (nnz + nnz / 4 + 1), err)) != GNN_OK)
				return st;
			st = B->api.sample_hop(be, B->rindptr, B->rindices, B->cumw, S->nodes, nd, h, B->fanout[h], B->replace,
								   seed, H->ptr.p, S->src.p, NULL, (int64_t) (S->src.cap / sizeof(int32_t)), &nnz);
		}
		if (st != GNN_OK)
			return gnn_backend_error(be, st, err);
		if ((st = ensure(be, &H->local, sizeof(int32_t) * nnz, err)) != GNN_OK ||
			(st = ensure(be, &S->fresh, sizeof(int32_t) * nnz, err)) != GNN_OK)
			return st;
		if ((st = B->api.relabel_hop(be, S->keys, S->vals, B->table_cap, S->src.p, nnz, S->nodes, nd, S->fresh.p,
									 &fresh, H->local.p)) != GNN_OK)
			return gnn_backend_error(be, st, err);
		H->nnz = nnz;
		S->n_at[h + 1] = nd + fresh;
		bst->edges += nnz;
	}
	/* the blocks, input first: blocks[L - 1 - h] is hop h */
	for (int h = 0; h < L; h++)
	{
		hop_bufs   *H = &S->hop[h];
		int64_t		nd = S->n_at[h],
					ns = S->n_at[h + 1];
		gnn_dblock *b = &blocks[L - 1 - h];

		if ((st = hop_ensure(B, be, H, nd, ns, H->nnz, err)) != GNN_OK)
			return st;
		if ((st = B->api.csr_transpose(be, nd, ns, H->nnz, H->ptr.p, H->local.p, H->t_ptr.p, H->t_idx.p,
									   H->t_perm.p)) != GNN_OK)
			return gnn_backend_error(be, st, err);
		memset(b, 0, sizeof(*b));
		b->be = be;
		b->n_dst = nd;
		b->n_src = ns;
		csr_set(&b->raw, be, nd, ns, H->nnz, &H->ptr, &H->local, NULL, &H->t_ptr, &H->t_idx, &H->t_perm);
		if (!B->loop)
			continue;
		if ((st = ensure(be, &S->deg, sizeof(double) * (nd + ns), err)) != GNN_OK)
			return st;
		if ((st = B->api.loop_csr(be, nd, H->ptr.p, H->local.p, NULL, H->lptr.p, H->lidx.p, H->lval.p,
								  &H->lnnz)) != GNN_OK ||
			(st = B->api.csr_transpose(be, nd, ns, H->lnnz, H->lptr.p, H->lidx.p, H->lt_ptr.p, H->lt_idx.p,
									   H->lt_perm.p)) != GNN_OK ||
			(st = B->api.gcn_norm(be, nd, ns, H->lptr.p, H->lidx.p, H->lval.p, H->lt_ptr.p, H->lt_perm.p,
								  S->deg.p)) != GNN_OK)
			return gnn_backend_error(be, st, err);
		csr_set(&b->loop, be, nd, ns, H->lnnz, &H->lptr, &H->lidx, &H->lval, &H->lt_ptr, &H->lt_idx, &H->lt_perm);
	}
	if ((st = gnn_backend_sync(be)) != GNN_OK)
		return gnn_backend_error(be, st, err);
	*sample_s = gnn_now_s() - t;

	/* the input features */
	t = gnn_now_s();
	nin = S->n_at[L];
	if ((st = ensure(be, &S->x, sizeof(float) * (nin * B->d + 1), err)) != GNN_OK)
		return st;
	if (B->slot)
	{
		if ((st = gnn_backend_memset(be, S->hits, 0, sizeof(unsigned long long))) == GNN_OK)
			st = B->api.gather_cached(be, B->cache, B->slot, B->host_feat, B->d, S->nodes, nin, B->row_normalise,
									  S->x.p, S->hits);
		/* the copy waits for the gather: the batch is ready when this returns */
		if (st == GNN_OK)
			st = gnn_backend_copy_d2h(be, &hits, S->hits, sizeof(hits));
	}
	else
	{
		st = B->api.gather(be, B->cache ? B->cache : B->host_feat, B->d, S->nodes, nin, B->row_normalise, S->x.p);
		if (st == GNN_OK)
			st = gnn_backend_sync(be);
		hits = B->cache ? (unsigned long long) nin : 0;
	}
	if (st != GNN_OK)
		return gnn_backend_error(be, st, err);
	*gather_s = gnn_now_s() - t;
	bst->rows = nin;
	bst->hits = (int64_t) hits;
	bst->host_bytes = (nin - (int64_t) hits) * (int64_t) sizeof(float) * B->d;
	memset(x, 0, sizeof(*x));
	x->rows = nin;
	x->dim = (int32_t) B->d;
	x->dense.rows = nin;
	x->dense.cols = B->d;
	x->dense.be = NULL;			/* not owned */
	x->dense.data = S->x.p;
	return GNN_OK;
}

void
gnn_gpu_batcher_free(gnn_gpu_batcher *B)
{
	gnn_backend *be;

	if (!B)
		return;
	be = B->be;
	if (be)
		(void) gnn_backend_sync(be);	/* nothing queued reads what goes */
	for (int i = 0; i < B->nreg; i++)
		(void) B->api.host_unregister(be, B->reg[i]);
	gnn_backend_free(be, B->own_rindptr);
	gnn_backend_free(be, B->own_rindices);
	gnn_backend_free(be, B->cumw);
	gnn_backend_free(be, B->cache);
	gnn_backend_free(be, B->slot);
	for (int k = 0; B->slots && k < B->nslots; k++)
	{
		batch_slot *S = &B->slots[k];

		gnn_backend_free(be, S->hits);
		gnn_backend_free(be, S->keys);
		gnn_backend_free(be, S->vals);
		gnn_backend_free(be, S->nodes);
		gnn_buf_free(be, &S->src);
		gnn_buf_free(be, &S->fresh);
		gnn_buf_free(be, &S->deg);
		gnn_buf_free(be, &S->x);
		for (int h = 0; h < GNN_MAX_LAYERS; h++)
		{
			hop_bufs   *H = &S->hop[h];
			gnn_buf    *bs[] = {&H->ptr, &H->local, &H->t_ptr, &H->t_idx, &H->t_perm, &H->lptr, &H->lidx, &H->lval,
			&H->lt_ptr, &H->lt_idx, &H->lt_perm};

			for (size_t i = 0; i < sizeof(bs) / sizeof(bs[0]); i++)
				gnn_buf_free(be, bs[i]);
		}
	}
	free(B->slots);
	free(B);
}

gnn_status
gnn_gpu_mem_info(gnn_backend *be, size_t *free_bytes, size_t *total_bytes, gnn_error *err)
{
	gnn_gpu_sample_api api;
	gnn_status	st;

	*free_bytes = *total_bytes = 0;
	if ((st = gnn_gpu_sample_bind(be, &api, err)) != GNN_OK)
		return st;
	if ((st = api.mem_info(be, free_bytes, total_bytes)) != GNN_OK)
		return gnn_backend_error(be, st, err);
	return GNN_OK;
}
