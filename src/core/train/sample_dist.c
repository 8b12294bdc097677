/*
 * sample_dist.c: node-wise sampling across parts (sample_dist.h).
 *
 * A hop, on every rank at once:
 *  1. the batch's nodes so far, grouped by owner: their (id, bound) to the
 *     owners (alltoallv: counts, then requests);
 *  2. each owner draws every requested node's in-neighbours from its part
 *     with a one-hop sampler of its own (per-node streams keyed by id, the
 *     hop's number as first_hop), one call per asking rank;
 *  3. the answers back: a length per request, then the neighbours (id,
 *     owner's part, node type, relation, weight);
 *  4. the asker relabels them by (id, bound) into the batch, in destination
 *     order as a single server's sampler does, and builds the hop's block.
 * Then the input nodes' features: ids to their owners, rows back.
 */
#include "train/sample_dist.h"

#include <stdlib.h>
#include <string.h>

/* a node by name (gnn_graph_name_type / _key), with its time bound */
typedef struct sd_req
{
	int64_t		id;				/* key */
	int64_t		bound;
	int64_t		type;
} sd_req;

typedef struct sd_ans
{
	int64_t		id;
	int32_t		part;			/* the neighbour's owner part */
	float		w;
	int16_t		etype;
	int16_t		ntype;
	int32_t		pad;
} sd_ans;

/* a sparse feature entry */
typedef struct sd_fent
{
	int32_t		idx;
	float		val;
} sd_fent;

typedef struct sd_ent
{
	int32_t		col;
	int16_t		etype;
	float		w;
} sd_ent;

struct gnn_dist_sampler
{
	gnn_dist   *d;
	const gnn_graph *g;
	gnn_sampler_config cfg;
	int			rank;
	int			size;
	int			L;
	int32_t		mine;			/* this rank's part */
	int32_t    *part_of_rank;	/* [size] */
	gnn_sampler *hop[GNN_MAX_LAYERS];	/* the owner's one-hop samplers */
	bool		temporal;
	bool		keep_w;			/* blocks carry the graph's edge weights */
	bool		typed;			/* blocks carry relations */

	/* the batch's nodes, hop prefixes */
	int64_t		n;
	size_t		ncap;
	int64_t    *id;
	int64_t    *bound;
	int32_t    *orank;			/* owner rank */
	int32_t    *local;			/* index in g, or -1 */
	int16_t    *ntype;
	int64_t		start[GNN_MAX_LAYERS + 1];

	/* relabel: open addressing over (id, bound), node index + 1 (0: empty) */
	int32_t    *hslot;
	int64_t		hcap;			/* a power of two */

	/* blocks, in hop order */
	int64_t    *indptr[GNN_MAX_LAYERS];
	size_t		cap_indptr[GNN_MAX_LAYERS];
	int32_t    *indices[GNN_MAX_LAYERS];
	float	   *weights[GNN_MAX_LAYERS];
	int16_t    *etypes[GNN_MAX_LAYERS];
	size_t		cap_nnz[GNN_MAX_LAYERS];
	size_t		cap_w[GNN_MAX_LAYERS];
	size_t		cap_et[GNN_MAX_LAYERS];

	/* exchange scratch */
	int64_t    *scnt,
			   *rcnt,
			   *acnt_s,
			   *acnt_r,
			   *one;
	int64_t    *order;			/* batch nodes grouped by owner */
	size_t		cap_order;
	int64_t    *pos;			/* [node]: its place in order */
	size_t		cap_pos;
	sd_req	   *sreq,
			   *rreq;
	size_t		cap_sreq,
				cap_rreq;
	int64_t    *alen_s,
			   *alen_r,
			   *aoff;
	size_t		cap_alen_s,
				cap_alen_r,
				cap_aoff;
	sd_ans	   *sans,
			   *rans;
	size_t		cap_sans,
				cap_rans;
	int32_t    *lseeds;
	int64_t    *ltimes;
	size_t		cap_lseeds,
				cap_ltimes;
	sd_ent	   *row;
	size_t		cap_row;
	float	   *feat,
			   *fsend,
			   *frecv;
	size_t		cap_feat,
				cap_fsend,
				cap_frecv;
	/* sparse features: the batch's rows as a CSR, and the exchange's entries */
	int64_t    *sptr;
	int32_t    *sidx;
	float	   *sval;
	size_t		cap_sptr,
				cap_sidx,
				cap_sval;
	int64_t    *flen_s,
			   *flen_r,
			   *foff;
	size_t		cap_flen_s,
				cap_flen_r,
				cap_foff;
	sd_fent    *fes,
			   *fer;
	size_t		cap_fes,
				cap_fer;

	gnn_dist_sample_stats st;
	bool		seeds_own;		/* the batch's seeds are every rank's own: hop 1 needs no exchange */
	int64_t		fail_batch;		/* tests (gnn_dist_sampler_fail_at) */
	int32_t		fail_where;
};

/* tests: whether the batch at hand fails at `where` */
static bool
fails_here(const gnn_dist_sampler *s, int32_t where)
{
	return s->fail_batch > 0 && s->st.batches + 1 == s->fail_batch && s->fail_where == where;
}

static bool
grow(void **p, size_t *cap, size_t n, size_t elem)
{
	void	   *q;
	size_t		c;

	if (n <= *cap && *p)
		return true;
	c = n + n / 2 + 16;
	if (!(q = realloc(*p, c * elem)))
		return false;
	*p = q;
	*cap = c;
	return true;
}

#define GROW(field_, capf_, n_) grow((void **) &(field_), &(capf_), (size_t) (n_), sizeof(*(field_)))

/* g's index of the node named (type, key), or -1 */
static int64_t
find_node(const gnn_graph *g, int64_t type, int64_t key)
{
	if (g->num_node_types <= 1)
		return type == 0 ? gnn_graph_find(g, key) : -1;
	return type >= 0 && type < g->num_node_types ? gnn_graph_find_key(g, (int32_t) type, key) : -1;
}

static inline bool
own(const gnn_dist_sampler *s, int64_t v)
{
	return !s->g->node_part || s->g->node_part[v] == s->mine;
}

static int
rank_of_part(const gnn_dist_sampler *s, int32_t part)
{
	for (int r = 0; r < s->size; r++)
		if (s->part_of_rank[r] == part)
			return r;
	return -1;
}

static inline uint64_t
hkey(int64_t id, int16_t type, int64_t bound)
{
	return gnn_mix64((uint64_t) id ^ gnn_mix64((uint64_t) bound + 0x9e3779b97f4a7c15ULL + ((uint64_t) type << 48)));
}

static bool
hash_reset(gnn_dist_sampler *s, int64_t want)
{
	int64_t		c = 64;

	while (c < 2 * want)
		c *= 2;
	if (c > s->hcap)
	{
		int32_t    *h = realloc(s->hslot, sizeof(int32_t) * c);

		if (!h)
			return false;
		s->hslot = h;
		s->hcap = c;
	}
	memset(s->hslot, 0, sizeof(int32_t) * s->hcap);
	return true;
}

static void
hash_put(gnn_dist_sampler *s, int64_t i)
{
	uint64_t	m = (uint64_t) s->hcap - 1,
				k = hkey(s->id[i], s->ntype[i], s->bound[i]) & m;

	while (s->hslot[k])
		k = (k + 1) & m;
	s->hslot[k] = (int32_t) (i + 1);
}

/* the batch's index of (key, type, bound), or -1 */
static int64_t
node_find(const gnn_dist_sampler *s, int64_t id, int16_t type, int64_t bound)
{
	uint64_t	m = (uint64_t) s->hcap - 1,
				k = hkey(id, type, bound) & m;

	while (s->hslot[k])
	{
		int64_t		i = s->hslot[k] - 1;

		if (s->id[i] == id && s->bound[i] == bound && s->ntype[i] == type)
			return i;
		k = (k + 1) & m;
	}
	return -1;
}

/* add (key, type, bound), not yet in the batch, with the rest of its facts: its index, or -1 (out of memory) */
static int64_t
node_add(gnn_dist_sampler *s, int64_t id, int64_t bound, int32_t orank, int32_t local, int16_t ntype)
{
	int64_t		i;

	if (s->n >= INT32_MAX - 1)
		return -1;
	if ((size_t) s->n + 1 > s->ncap)
	{
		size_t		c = (size_t) s->n + (size_t) s->n / 2 + 64;
		int64_t    *a = realloc(s->id, sizeof(int64_t) * c);

		if (a)
			s->id = a;
		if (!a || !(a = realloc(s->bound, sizeof(int64_t) * c)))
			return -1;
		s->bound = a;
		{
			int32_t    *b = realloc(s->orank, sizeof(int32_t) * c);

			if (!b)
				return -1;
			s->orank = b;
			if (!(b = realloc(s->local, sizeof(int32_t) * c)))
				return -1;
			s->local = b;
		}
		{
			int16_t    *t = realloc(s->ntype, sizeof(int16_t) * c);

			if (!t)
				return -1;
			s->ntype = t;
		}
		s->ncap = c;
	}
	if (2 * (s->n + 1) > s->hcap)
	{
		if (!hash_reset(s, 2 * (s->n + 1)))
			return -1;
		for (int64_t j = 0; j < s->n; j++)
			hash_put(s, j);
	}
	i = s->n++;
	s->id[i] = id;
	s->bound[i] = bound;
	s->orank[i] = orank;
	s->local[i] = local;
	s->ntype[i] = ntype;
	hash_put(s, i);
	return i;
}

gnn_status
gnn_dist_sampler_create(gnn_dist *d, const gnn_graph *g, const gnn_sampler_config *cfg, gnn_dist_sampler **out,
						gnn_error *err)
{
	gnn_dist_sampler *s;
	gnn_status	st;
	int			size = gnn_dist_size(d);

	*out = NULL;
	if ((st = gnn_sampler_config_check(cfg, err)) != GNN_OK)
		return st;
	if (cfg->kind != GNN_SAMPLER_NEIGHBOR)
		return gnn_error_set(err, GNN_ERR_UNSUPPORTED, "sampling across parts is node-wise");
	if (!g->ids || (g->num_node_types > 1 && !g->keys))
		return gnn_error_set(err, GNN_ERR_INVALID, "sampling across parts needs node ids (or keys)");
	if (g->feat_kind != GNN_FEAT_DENSE && g->feat_kind != GNN_FEAT_SPARSE)
		return gnn_error_set(err, GNN_ERR_EMPTY, "the graph has no node features");
	if (!g->node_part && size > 1)
		return gnn_error_set(err, GNN_ERR_INVALID, "rank %d's graph is not one part of a partitioned graph",
							 gnn_dist_rank(d));
	if (!(s = calloc(1, sizeof(*s))))
		return gnn_error_set(err, GNN_ERR_NOMEM, "out of memory");
	s->d = d;
	s->g = g;
	s->cfg = *cfg;
	s->cfg.per_node_streams = true;
	s->cfg.stream_by_id = true;
	s->cfg.first_hop = cfg->first_hop;	/* 0 but for the last hops of a deeper model (inference of a layer) */
	s->rank = gnn_dist_rank(d);
	s->size = size;
	s->L = cfg->nhops;
	s->mine = g->node_part ? g->part : 0;
	s->temporal = cfg->temporal;
	s->keep_w = g->rweights != NULL && !cfg->weighted;
	s->typed = g->num_edge_types > 1;
	s->part_of_rank = malloc(sizeof(int32_t) * size);
	s->scnt = calloc(size, sizeof(int64_t));
	s->rcnt = calloc(size, sizeof(int64_t));
	s->acnt_s = calloc(size, sizeof(int64_t));
	s->acnt_r = calloc(size, sizeof(int64_t));
	s->one = malloc(sizeof(int64_t) * size);
	if (!s->part_of_rank || !s->scnt || !s->rcnt || !s->acnt_s || !s->acnt_r || !s->one)
	{
		st = gnn_error_set(err, GNN_ERR_NOMEM, "out of memory");
		goto fail;
	}
	for (int r = 0; r < size; r++)
		s->one[r] = 1;
	if ((st = gnn_dist_allgather(d, &s->mine, sizeof(int32_t), s->part_of_rank, err)) != GNN_OK)
		goto fail;
	for (int h = 0; h < s->L; h++)
	{
		gnn_sampler_config hc = s->cfg;

		/* hop h alone, with hop h's fan-outs and the streams' hop number */
		hc.nhops = 1;
		hc.fanouts[0] = cfg->fanouts[h];
		hc.type_fanouts = cfg->type_fanouts ? cfg->type_fanouts + (size_t) h * g->num_edge_types : NULL;
		hc.first_hop = s->cfg.first_hop + h;
		if ((st = gnn_sampler_create(g, &hc, &s->hop[h], err)) != GNN_OK)
			goto fail;
	}
	*out = s;
	return GNN_OK;
fail:
	gnn_dist_sampler_free(s);
	return st;
}

void
gnn_dist_sampler_free(gnn_dist_sampler *s)
{
	if (!s)
		return;
	for (int h = 0; h < GNN_MAX_LAYERS; h++)
	{
		gnn_sampler_free(s->hop[h]);
		free(s->indptr[h]);
		free(s->indices[h]);
		free(s->weights[h]);
		free(s->etypes[h]);
	}
	free(s->part_of_rank);
	free(s->id);
	free(s->bound);
	free(s->orank);
	free(s->local);
	free(s->ntype);
	free(s->hslot);
	free(s->scnt);
	free(s->rcnt);
	free(s->acnt_s);
	free(s->acnt_r);
	free(s->one);
	free(s->order);
	free(s->pos);
	free(s->sreq);
	free(s->rreq);
	free(s->alen_s);
	free(s->alen_r);
	free(s->aoff);
	free(s->sans);
	free(s->rans);
	free(s->lseeds);
	free(s->ltimes);
	free(s->row);
	free(s->feat);
	free(s->fsend);
	free(s->frecv);
	free(s->sptr);
	free(s->sidx);
	free(s->sval);
	free(s->flen_s);
	free(s->flen_r);
	free(s->foff);
	free(s->fes);
	free(s->fer);
	free(s);
}

/* bytes of an exchange that crossed to or from other ranks */
static int64_t
cross_bytes(const gnn_dist_sampler *s, const int64_t *sc, const int64_t *rc, size_t elem)
{
	int64_t		b = 0;

	for (int r = 0; r < s->size; r++)
		if (r != s->rank)
			b += (sc[r] + rc[r]) * (int64_t) elem;
	return b;
}

/*
 * Group the batch's nodes [0, n) by owner rank into s->order (s->scnt: how
 * many each), and exchange the counts (s->rcnt: how many each rank sends
 * here).  *nrecv: their sum.
 */
/*
 * alltoallv, or where every rank's nodes are its own (local: every count
 * but this rank's 0, on every rank alike) a copy of its own segment
 */
static gnn_status
xchg(gnn_dist_sampler *s, bool local, const void *send, const int64_t *sc, void *recv, const int64_t *rc,
	 size_t elem, gnn_error *err)
{
	if (!local)
		return gnn_dist_alltoallv(s->d, send, sc, recv, rc, elem, err);
	if (sc[s->rank] > 0)
		memcpy(recv, send, elem * (size_t) sc[s->rank]);
	return GNN_OK;
}

static gnn_status
group_by_owner(gnn_dist_sampler *s, int64_t n, bool local, int64_t *nrecv, gnn_error *err)
{
	int64_t		o = 0;
	gnn_status	st;

	if (!GROW(s->order, s->cap_order, n + 1) || !GROW(s->pos, s->cap_pos, n + 1))
		return gnn_error_set(err, GNN_ERR_NOMEM, "out of memory");
	memset(s->scnt, 0, sizeof(int64_t) * s->size);
	for (int64_t i = 0; i < n; i++)
		s->scnt[s->orank[i]]++;
	/* a counting sort: each rank's nodes in batch order */
	{
		int64_t    *at = s->acnt_s;	/* (scratch until the answers) */

		for (int r = 0; r < s->size; r++)
		{
			at[r] = o;
			o += s->scnt[r];
		}
		for (int64_t i = 0; i < n; i++)
		{
			int64_t		k = at[s->orank[i]]++;

			s->order[k] = i;
			s->pos[i] = k;
		}
	}
	if (local)
		for (int r = 0; r < s->size; r++)
			s->rcnt[r] = r == s->rank ? s->scnt[r] : 0;
	else if ((st = gnn_dist_alltoallv(s->d, s->scnt, s->one, s->rcnt, s->one, sizeof(int64_t), err)) != GNN_OK)
		return st;
	*nrecv = 0;
	for (int r = 0; r < s->size; r++)
	{
		if (s->rcnt[r] < 0)
			return gnn_error_set(err, GNN_ERR_INVALID, "rank %d sent a negative count", r);
		*nrecv += s->rcnt[r];
	}
	return GNN_OK;
}

/* the owner's side of a hop: answer the requests in s->rreq[0 .. nrecv) */
static gnn_status
answer_hop(gnn_dist_sampler *s, int h, int64_t nrecv, uint64_t seed, gnn_error *err)
{
	const gnn_graph *g = s->g;
	int64_t		off = 0,
				na = 0;
	gnn_status	st;

	if (!GROW(s->alen_s, s->cap_alen_s, nrecv + 1) || !GROW(s->lseeds, s->cap_lseeds, nrecv + 1) ||
		!GROW(s->ltimes, s->cap_ltimes, nrecv + 1))
		return gnn_error_set(err, GNN_ERR_NOMEM, "out of memory");
	for (int64_t i = 0; i < nrecv; i++)
	{
		int64_t		v = find_node(g, s->rreq[i].type, s->rreq[i].id);

		if (v < 0 || !own(s, v))
			return gnn_error_set(err, GNN_ERR_INVALID, "rank %d was asked for the neighbours of node %lld (type %lld), which it does not own",
								 s->rank, (long long) s->rreq[i].id, (long long) s->rreq[i].type);
		s->lseeds[i] = (int32_t) v;
		s->ltimes[i] = s->rreq[i].bound;
	}
	for (int r = 0; r < s->size; r++)
	{
		int64_t		k = s->rcnt[r];
		gnn_minibatch one;
		const gnn_block *b;

		s->acnt_s[r] = 0;
		if (k == 0)
			continue;
		if ((st = gnn_sampler_sample_at(s->hop[h], s->lseeds + off, s->temporal ? s->ltimes + off : NULL, k, seed,
										&one, err)) != GNN_OK)
			return st;
		if (one.n_nodes[0] != k)
			return gnn_error_set(err, GNN_ERR_INVALID, "rank %d asked rank %d for a node twice in one hop", r,
								 s->rank);
		b = &one.blocks[0];
		if (!GROW(s->sans, s->cap_sans, na + b->nnz + 1))
			return gnn_error_set(err, GNN_ERR_NOMEM, "out of memory answering %lld sampled neighbours",
								 (long long) b->nnz);
		for (int64_t i = 0; i < k; i++)
		{
			s->alen_s[off + i] = b->indptr[i + 1] - b->indptr[i];
			for (int64_t e = b->indptr[i]; e < b->indptr[i + 1]; e++)
			{
				int32_t		u = one.input_nodes[b->indices[e]];
				sd_ans	   *a = &s->sans[na++];

				a->id = gnn_graph_name_key(g, u);
				a->part = g->node_part ? g->node_part[u] : s->mine;
				a->w = b->weights ? b->weights[e] : 1.0f;
				a->etype = b->etypes ? b->etypes[e] : 0;
				a->ntype = (int16_t) gnn_graph_name_type(g, u);
				a->pad = 0;
			}
		}
		s->acnt_s[r] = b->nnz;
		off += k;
	}
	return GNN_OK;
}

static int
ent_cmp(const void *a, const void *b)
{
	const sd_ent *x = a,
			   *y = b;

	return (x->col > y->col) - (x->col < y->col);
}

/* hop h from the batch's first nd nodes: its block, new nodes appended */
static gnn_status
sample_hop(gnn_dist_sampler *s, int h, int64_t nd, uint64_t seed, gnn_error *err)
{
	const gnn_graph *g = s->g;
	int64_t		nrecv = 0,
				nans = 0,
				nnz = 0;
	gnn_status	st;
	/* the first hop from own seeds asks only this rank (on every rank: gnn_dist_sampler_sample's contract) */
	bool		local = h == 0 && s->seeds_own;

	if ((st = group_by_owner(s, nd, local, &nrecv, err)) != GNN_OK)
		return st;
	if (!GROW(s->sreq, s->cap_sreq, nd + 1) || !GROW(s->rreq, s->cap_rreq, nrecv + 1) ||
		!GROW(s->alen_r, s->cap_alen_r, nd + 1) || !GROW(s->aoff, s->cap_aoff, nd + 1))
		return gnn_error_set(err, GNN_ERR_NOMEM, "out of memory");
	for (int64_t k = 0; k < nd; k++)
	{
		s->sreq[k].id = s->id[s->order[k]];
		s->sreq[k].bound = s->bound[s->order[k]];
		s->sreq[k].type = s->ntype[s->order[k]];
	}
	if ((st = xchg(s, local, s->sreq, s->scnt, s->rreq, s->rcnt, sizeof(sd_req), err)) != GNN_OK)
		return st;
	if (fails_here(s, h + 1))
		return gnn_error_set(err, GNN_ERR_BACKEND, "injected failure sampling hop %d of batch %lld", h + 1,
							 (long long) s->fail_batch);
	s->st.adj_bytes += cross_bytes(s, s->scnt, s->rcnt, sizeof(sd_req));
	for (int r = 0; r < s->size; r++)
		if (r != s->rank)
			s->st.remote_nodes += s->scnt[r];
	if ((st = answer_hop(s, h, nrecv, seed, err)) != GNN_OK)
		return st;
	/* the answers' lengths, then the answers */
	if ((st = xchg(s, local, s->alen_s, s->rcnt, s->alen_r, s->scnt, sizeof(int64_t), err)) != GNN_OK)
		return st;
	s->st.adj_bytes += cross_bytes(s, s->rcnt, s->scnt, sizeof(int64_t));
	{
		int64_t		k = 0;

		for (int r = 0; r < s->size; r++)
		{
			s->acnt_r[r] = 0;
			for (int64_t i = 0; i < s->scnt[r]; i++, k++)
			{
				if (s->alen_r[k] < 0)
					return gnn_error_set(err, GNN_ERR_INVALID, "rank %d answered a negative count", r);
				s->aoff[k] = nans;
				nans += s->alen_r[k];
				s->acnt_r[r] += s->alen_r[k];
			}
		}
	}
	if (!GROW(s->rans, s->cap_rans, nans + 1))
		return gnn_error_set(err, GNN_ERR_NOMEM, "out of memory receiving %lld sampled neighbours",
							 (long long) nans);
	if ((st = xchg(s, local, s->sans, s->acnt_s, s->rans, s->acnt_r, sizeof(sd_ans), err)) != GNN_OK)
		return st;
	s->st.adj_bytes += cross_bytes(s, s->acnt_s, s->acnt_r, sizeof(sd_ans));

	/* the block: destinations in batch order, their neighbours relabelled */
	if (!GROW(s->indptr[h], s->cap_indptr[h], nd + 1))
		return gnn_error_set(err, GNN_ERR_NOMEM, "out of memory");
	if (!GROW(s->indices[h], s->cap_nnz[h], nans + 1))
		return gnn_error_set(err, GNN_ERR_NOMEM, "out of memory");
	if ((s->keep_w && !GROW(s->weights[h], s->cap_w[h], nans + 1)) ||
		(s->typed && !GROW(s->etypes[h], s->cap_et[h], nans + 1)))
		return gnn_error_set(err, GNN_ERR_NOMEM, "out of memory");
	s->indptr[h][0] = 0;
	for (int64_t v = 0; v < nd; v++)
	{
		int64_t		k = s->pos[v],
					len = s->alen_r[k];
		const sd_ans *a = s->rans + s->aoff[k];
		bool		sorted = true;

		if (!GROW(s->row, s->cap_row, len + 1))
			return gnn_error_set(err, GNN_ERR_NOMEM, "out of memory");
		for (int64_t e = 0; e < len; e++)
		{
			int64_t		u = node_find(s, a[e].id, a[e].ntype, s->bound[v]);

			if (u < 0)
			{
				int			r = rank_of_part(s, a[e].part);

				if (r < 0)
					return gnn_error_set(err, GNN_ERR_DANGLING,
										 "node %lld's owner (part %d) is not one of the job's ranks",
										 (long long) a[e].id, a[e].part);
				u = node_add(s, a[e].id, s->bound[v], r, (int32_t) find_node(g, a[e].ntype, a[e].id), a[e].ntype);
				if (u < 0)
					return gnn_error_set(err, GNN_ERR_NOMEM, "out of memory relabelling a batch of %lld nodes",
										 (long long) s->n);
			}
			s->row[e].col = (int32_t) u;
			s->row[e].etype = a[e].etype;
			s->row[e].w = a[e].w;
			if (e > 0 && s->row[e].col < s->row[e - 1].col)
				sorted = false;
		}
		if (!sorted)
			qsort(s->row, len, sizeof(sd_ent), ent_cmp);
		for (int64_t e = 0; e < len; e++)
		{
			s->indices[h][nnz + e] = s->row[e].col;
			if (s->keep_w)
				s->weights[h][nnz + e] = s->row[e].w;
			if (s->typed)
				s->etypes[h][nnz + e] = s->row[e].etype;
		}
		nnz += len;
		s->indptr[h][v + 1] = nnz;
	}
	return GNN_OK;
}

/*
 * Sparse rows: the owner's side for the requests s->lseeds[0..nrecv) (the
 * exchange of counts and ids done), then a length per row and the rows'
 * entries back; the batch's rows into s->sptr / sidx / sval.
 */
static gnn_status
fetch_sparse(gnn_dist_sampler *s, int64_t nrecv, bool row_normalise, int nthreads, gnn_error *err)
{
	int64_t    *ptr = NULL;
	int32_t    *idx = NULL;
	float	   *val = NULL;
	int64_t		n = s->n,
				k = 0,
				tot = 0;
	gnn_status	st;

	if (nrecv > 0 &&
		(st = gnn_gather_sparse(s->g, s->lseeds, nrecv, row_normalise, nthreads, &ptr, &idx, &val, err)) != GNN_OK)
		return st;
	if (!GROW(s->flen_s, s->cap_flen_s, nrecv + 1) || !GROW(s->flen_r, s->cap_flen_r, n + 1) ||
		!GROW(s->foff, s->cap_foff, n + 1) || !GROW(s->fes, s->cap_fes, (nrecv ? ptr[nrecv] : 0) + 1))
	{
		st = gnn_error_set(err, GNN_ERR_NOMEM, "out of memory fetching %lld sparse feature rows", (long long) n);
		goto done;
	}
	for (int r = 0; r < s->size; r++)
	{
		s->acnt_s[r] = 0;
		for (int64_t i = 0; i < s->rcnt[r]; i++, k++)
		{
			s->flen_s[k] = ptr[k + 1] - ptr[k];
			s->acnt_s[r] += s->flen_s[k];
		}
	}
	for (int64_t e = 0; nrecv > 0 && e < ptr[nrecv]; e++)
	{
		s->fes[e].idx = idx[e];
		s->fes[e].val = val[e];
	}
	if ((st = gnn_dist_alltoallv(s->d, s->flen_s, s->rcnt, s->flen_r, s->scnt, sizeof(int64_t), err)) != GNN_OK)
		goto done;
	s->st.feat_bytes += cross_bytes(s, s->rcnt, s->scnt, sizeof(int64_t));
	k = 0;
	for (int r = 0; r < s->size; r++)
	{
		s->acnt_r[r] = 0;
		for (int64_t i = 0; i < s->scnt[r]; i++, k++)
		{
			if (s->flen_r[k] < 0 || s->flen_r[k] > s->g->feat_dim)
			{
				st = gnn_error_set(err, GNN_ERR_INVALID, "rank %d answered a feature row of %lld entries", r,
								   (long long) s->flen_r[k]);
				goto done;
			}
			s->foff[k] = tot;
			tot += s->flen_r[k];
			s->acnt_r[r] += s->flen_r[k];
		}
	}
	if (!GROW(s->fer, s->cap_fer, tot + 1) || !GROW(s->sptr, s->cap_sptr, n + 1) ||
		!GROW(s->sidx, s->cap_sidx, tot + 1) || !GROW(s->sval, s->cap_sval, tot + 1))
	{
		st = gnn_error_set(err, GNN_ERR_NOMEM, "out of memory fetching %lld sparse feature rows", (long long) n);
		goto done;
	}
	if ((st = gnn_dist_alltoallv(s->d, s->fes, s->acnt_s, s->fer, s->acnt_r, sizeof(sd_fent), err)) != GNN_OK)
		goto done;
	s->st.feat_bytes += cross_bytes(s, s->acnt_s, s->acnt_r, sizeof(sd_fent));
	for (int r = 0; r < s->size; r++)
		if (r != s->rank)
			s->st.remote_rows += s->scnt[r];
	s->sptr[0] = 0;
	for (int64_t v = 0; v < n; v++)
	{
		int64_t		q = s->pos[v],
					len = s->flen_r[q];
		const sd_fent *f = s->fer + s->foff[q];

		for (int64_t e = 0; e < len; e++)
		{
			s->sidx[s->sptr[v] + e] = f[e].idx;
			s->sval[s->sptr[v] + e] = f[e].val;
		}
		s->sptr[v + 1] = s->sptr[v] + len;
	}
done:
	free(ptr);
	free(idx);
	free(val);
	return st;
}

/* the features of the batch's nodes, from their owners, into s->feat (dense) or s->sptr / sidx / sval */
static gnn_status
fetch_features(gnn_dist_sampler *s, bool row_normalise, int nthreads, gnn_error *err)
{
	const gnn_graph *g = s->g;
	int64_t		n = s->n,
				nrecv = 0;
	int32_t		dim = g->feat_dim;
	gnn_status	st;

	if ((st = group_by_owner(s, n, false, &nrecv, err)) != GNN_OK)
		return st;
	if (!GROW(s->sreq, s->cap_sreq, n + 1) || !GROW(s->rreq, s->cap_rreq, nrecv + 1) ||
		!GROW(s->lseeds, s->cap_lseeds, nrecv + 1) ||
		(g->feat_kind == GNN_FEAT_DENSE &&
		 (!GROW(s->fsend, s->cap_fsend, (size_t) nrecv * dim + 1) ||
		  !GROW(s->frecv, s->cap_frecv, (size_t) n * dim + 1) ||
		  !GROW(s->feat, s->cap_feat, (size_t) n * dim + 1))))
		return gnn_error_set(err, GNN_ERR_NOMEM, "out of memory fetching %lld feature rows", (long long) n);
	for (int64_t k = 0; k < n; k++)
	{
		s->sreq[k].id = s->id[s->order[k]];
		s->sreq[k].bound = 0;
		s->sreq[k].type = s->ntype[s->order[k]];
	}
	if ((st = gnn_dist_alltoallv(s->d, s->sreq, s->scnt, s->rreq, s->rcnt, sizeof(sd_req), err)) != GNN_OK)
		return st;
	if (fails_here(s, s->L + 1))
		return gnn_error_set(err, GNN_ERR_BACKEND, "injected failure fetching the features of batch %lld",
							 (long long) s->fail_batch);
	s->st.feat_bytes += cross_bytes(s, s->scnt, s->rcnt, sizeof(sd_req));
	for (int64_t i = 0; i < nrecv; i++)
	{
		int64_t		v = find_node(g, s->rreq[i].type, s->rreq[i].id);

		if (v < 0 || !own(s, v))
			return gnn_error_set(err, GNN_ERR_INVALID, "rank %d was asked for the features of node %lld (type %lld), which it does not own",
								 s->rank, (long long) s->rreq[i].id, (long long) s->rreq[i].type);
		s->lseeds[i] = (int32_t) v;
	}
	if (g->feat_kind == GNN_FEAT_SPARSE)
		return fetch_sparse(s, nrecv, row_normalise, nthreads, err);
	if (nrecv > 0 &&
		(st = gnn_gather_dense(g, s->lseeds, nrecv, row_normalise, nthreads, s->fsend, err)) != GNN_OK)
		return st;
	if ((st = gnn_dist_alltoallv(s->d, s->fsend, s->rcnt, s->frecv, s->scnt, sizeof(float) * dim, err)) != GNN_OK)
		return st;
	s->st.feat_bytes += cross_bytes(s, s->rcnt, s->scnt, sizeof(float) * dim);
	for (int r = 0; r < s->size; r++)
		if (r != s->rank)
			s->st.remote_rows += s->scnt[r];
	for (int64_t v = 0; v < n; v++)
		memcpy(s->feat + (size_t) v * dim, s->frecv + (size_t) s->pos[v] * dim, sizeof(float) * dim);
	return GNN_OK;
}

static gnn_status sample_from_seeds(gnn_dist_sampler *s, uint64_t seed, bool row_normalise, int nthreads,
									gnn_minibatch *mb, gnn_dist_feat *feat, double t, gnn_error *err);

/* a new batch of nseeds seeds (own: every rank's are its own) */
static gnn_status
batch_begin(gnn_dist_sampler *s, int64_t nseeds, const int64_t *seed_times, bool own_seeds, gnn_minibatch *mb,
			gnn_dist_feat *feat, gnn_error *err)
{
	memset(mb, 0, sizeof(*mb));
	memset(feat, 0, sizeof(*feat));
	if (s->temporal && nseeds > 0 && !seed_times)
		return gnn_error_set(err, GNN_ERR_INVALID, "temporal sampling needs seed times");
	s->n = 0;
	s->seeds_own = own_seeds;
	if (!hash_reset(s, nseeds + 64))
		return gnn_error_set(err, GNN_ERR_NOMEM, "out of memory");
	return GNN_OK;
}

gnn_status
gnn_dist_sampler_sample(gnn_dist_sampler *s, const int32_t *seeds, const int64_t *seed_times, int64_t nseeds,
						uint64_t seed, bool row_normalise, int nthreads, gnn_minibatch *mb, gnn_dist_feat *feat,
						gnn_error *err)
{
	const gnn_graph *g = s->g;
	double		t = gnn_now_s();
	gnn_status	st;

	if ((st = batch_begin(s, nseeds, seed_times, true, mb, feat, err)) != GNN_OK)
		return st;
	for (int64_t i = 0; i < nseeds; i++)
	{
		int32_t		v = seeds[i];
		int64_t		b;

		if (v < 0 || v >= g->num_nodes || !own(s, v))
			return gnn_error_set(err, GNN_ERR_INVALID, "seed %d is not one of rank %d's own nodes", v, s->rank);
		b = s->temporal ? seed_times[i] : INT64_MAX;
		/* (a duplicate seed is dropped, the first kept, as a single server's sampler does) */
		if (node_find(s, gnn_graph_name_key(g, v), (int16_t) gnn_graph_name_type(g, v), b) < 0 &&
			node_add(s, gnn_graph_name_key(g, v), b, s->rank, v, (int16_t) gnn_graph_name_type(g, v)) < 0)
			return gnn_error_set(err, GNN_ERR_NOMEM, "out of memory");
	}
	return sample_from_seeds(s, seed, row_normalise, nthreads, mb, feat, t, err);
}

gnn_status
gnn_dist_sampler_sample_named(gnn_dist_sampler *s, const int64_t *keys, const int16_t *types, const int32_t *owners,
							  const int64_t *seed_times, int64_t nseeds, uint64_t seed, bool row_normalise,
							  int nthreads, gnn_minibatch *mb, gnn_dist_feat *feat, gnn_error *err)
{
	double		t = gnn_now_s();
	gnn_status	st;

	if ((st = batch_begin(s, nseeds, seed_times, false, mb, feat, err)) != GNN_OK)
		return st;
	for (int64_t i = 0; i < nseeds; i++)
	{
		int16_t		ty = types ? types[i] : 0;
		int64_t		b = s->temporal ? seed_times[i] : INT64_MAX;

		if (owners[i] < 0 || owners[i] >= s->size)
			return gnn_error_set(err, GNN_ERR_INVALID, "seed %lld's owner %d is not a rank of %d",
								 (long long) keys[i], owners[i], s->size);
		if (node_find(s, keys[i], ty, b) < 0 &&
			node_add(s, keys[i], b, owners[i], (int32_t) find_node(s->g, ty, keys[i]), ty) < 0)
			return gnn_error_set(err, GNN_ERR_NOMEM, "out of memory");
	}
	return sample_from_seeds(s, seed, row_normalise, nthreads, mb, feat, t, err);
}

/* the batch's seeds are listed: their hops, then the features */
static gnn_status
sample_from_seeds(gnn_dist_sampler *s, uint64_t seed, bool row_normalise, int nthreads, gnn_minibatch *mb,
				  gnn_dist_feat *feat, double t, gnn_error *err)
{
	const gnn_graph *g = s->g;
	gnn_status	st = GNN_OK;

	s->start[0] = s->n;
	for (int h = 0; h < s->L; h++)
	{
		if ((st = sample_hop(s, h, s->n, seed, err)) != GNN_OK)
			return st;
		s->start[h + 1] = s->n;
	}
	s->st.sample_s += gnn_now_s() - t;
	t = gnn_now_s();
	if ((st = fetch_features(s, row_normalise, nthreads, err)) != GNN_OK)
		return st;
	s->st.fetch_s += gnn_now_s() - t;
	s->st.batches++;

	mb->nhops = s->L;
	for (int h = 0; h <= s->L; h++)
	{
		mb->nodes[h] = s->local;
		mb->n_nodes[h] = s->start[h];
	}
	for (int h = 0; h < s->L; h++)
	{
		gnn_block  *b = &mb->blocks[s->L - 1 - h];

		b->n_dst = s->start[h];
		b->n_src = s->start[h + 1];
		b->nnz = s->indptr[h][s->start[h]];
		b->indptr = s->indptr[h];
		b->indices = s->indices[h];
		b->weights = s->keep_w ? s->weights[h] : NULL;
		b->etypes = s->typed ? s->etypes[h] : NULL;
		b->dst_ntype = g->node_type ? s->ntype : NULL;
		mb->sampled_edges += b->nnz;
	}
	mb->input_nodes = s->local;
	mb->n_input = s->n;
	mb->bound = s->temporal ? s->bound : NULL;
	if (g->feat_kind == GNN_FEAT_SPARSE)
	{
		feat->ptr = s->sptr;
		feat->idx = s->sidx;
		feat->val = s->sval;
	}
	else
		feat->dense = s->feat;
	return GNN_OK;
}

void
gnn_dist_sampler_fail_at(gnn_dist_sampler *s, int64_t batch, int32_t where)
{
	s->fail_batch = batch;
	s->fail_where = where;
}

const int64_t *
gnn_dist_sampler_ids(const gnn_dist_sampler *s)
{
	return s->id;
}

void
gnn_dist_sampler_stats(const gnn_dist_sampler *s, gnn_dist_sample_stats *out)
{
	if (s)
		*out = s->st;
	else
		memset(out, 0, sizeof(*out));
}
