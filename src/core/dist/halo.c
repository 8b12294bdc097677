/*
 * halo.c: the plan of halo.h and its two exchanges.
 */
#include "dist/halo.h"

#include <stdlib.h>
#include <string.h>

#define HALO_MAX_RANKS 1024

void
gnn_halo_plan_free(gnn_halo_plan *p)
{
	if (!p)
		return;
	free(p->send_count);
	free(p->send_idx);
	free(p->recv_count);
	free(p->recv_idx);
	free(p->sbuf);
	free(p->rbuf);
	memset(p, 0, sizeof(*p));
}

static int
find_rank(const int32_t *part_of_rank, int size, int32_t part)
{
	for (int q = 0; q < size; q++)
		if (part_of_rank[q] == part)
			return q;
	return -1;
}

/*
 * A node's name that every rank agrees on: its type and key.  A
 * homogeneous part keys nodes by their ids; a schema graph's part by
 * (type, key), its int keys or, for text and uuid keys, the key's place
 * among all its type's keys (every part is read from the same tables).
 */
static inline int64_t
node_type_of(const gnn_graph *g, int64_t v)
{
	return g->num_node_types > 1 && g->node_type ? g->node_type[v] : 0;
}

static inline int64_t
node_key_of(const gnn_graph *g, int64_t v)
{
	return g->num_node_types > 1 ? g->keys[v] : g->ids[v];
}

/* the node of (type, key), or -1 */
static int64_t
node_find(const gnn_graph *g, int64_t type, int64_t key)
{
	if (g->num_node_types <= 1)
		return type == 0 ? gnn_graph_find(g, key) : -1;
	return type < INT32_MAX ? gnn_graph_find_key(g, (int32_t) type, key) : -1;
}

gnn_status
gnn_halo_plan_build(gnn_dist *d, const gnn_graph *g, gnn_halo_plan *p, gnn_error *err)
{
	int			size = gnn_dist_size(d),
				rank = gnn_dist_rank(d);
	int32_t    *part_of_rank = NULL,
			   *owner_rank = NULL,	/* per node: owner rank, -1 own, -2 unknown */
			   *req_node = NULL;
	int64_t    *ask = NULL,			/* requests per rank */
			   *asked = NULL,		/* requests from each rank */
			   *one = NULL,
			   *req = NULL,
			   *inreq = NULL,
			   *found = NULL,
			   *got = NULL,
			   nreq = 0,
			   nin = 0;
	int64_t		n = g->num_nodes;
	uint8_t    *seen = NULL;
	gnn_status	st = GNN_OK;
	int32_t		mine = g->node_part ? g->part : 0;

	memset(p, 0, sizeof(*p));
	p->d = d;
	p->rank = rank;
	p->size = size;
	if (size > HALO_MAX_RANKS)
		return gnn_error_set(err, GNN_ERR_LIMIT, "at most %d ranks", HALO_MAX_RANKS);
	if (!g->node_part && size > 1)
		return gnn_error_set(err, GNN_ERR_INVALID,
							 "rank %d's graph is not one part of a partitioned graph", rank);
	part_of_rank = malloc(sizeof(int32_t) * size);
	p->send_count = calloc(size, sizeof(int64_t));
	p->recv_count = calloc(size, sizeof(int64_t));
	ask = calloc(size, sizeof(int64_t));
	asked = calloc(size, sizeof(int64_t));
	one = malloc(sizeof(int64_t) * size);
	owner_rank = malloc(sizeof(int32_t) * (n ? n : 1));
	if (!part_of_rank || !p->send_count || !p->recv_count || !ask || !asked || !one || !owner_rank)
	{
		st = gnn_error_set(err, GNN_ERR_NOMEM, "out of memory planning the halo");
		goto done;
	}
	if ((st = gnn_dist_allgather(d, &mine, sizeof(mine), part_of_rank, err)) != GNN_OK)
		goto done;
	for (int q = 0; q < size; q++)
		for (int r = 0; r < q; r++)
			if (part_of_rank[r] == part_of_rank[q])
			{
				st = gnn_error_set(err, GNN_ERR_DUPLICATE, "ranks %d and %d both hold part %d", r, q,
								   part_of_rank[q]);
				goto done;
			}
	/* who to ask for each halo node */
	for (int64_t v = 0; v < n; v++)
	{
		int32_t		o = g->node_part ? g->node_part[v] : mine;

		if (o == mine)
		{
			owner_rank[v] = -1;
			continue;
		}
		p->n_halo++;
		owner_rank[v] = o >= 0 ? find_rank(part_of_rank, size, o) : -2;
		if (owner_rank[v] >= 0)
			ask[owner_rank[v]]++;
		else
		{
			owner_rank[v] = -2;
			for (int q = 0; q < size; q++)
				ask[q] += q != rank;
		}
	}
	for (int q = 0; q < size; q++)
		nreq += ask[q];
	req = malloc(2 * sizeof(int64_t) * (nreq ? nreq : 1));
	req_node = malloc(sizeof(int32_t) * (nreq ? nreq : 1));
	if (!req || !req_node)
	{
		st = gnn_error_set(err, GNN_ERR_NOMEM, "out of memory planning the halo");
		goto done;
	}
	{
		int64_t    *at = calloc(size + 1, sizeof(int64_t));

		if (!at)
		{
			st = gnn_error_set(err, GNN_ERR_NOMEM, "out of memory planning the halo");
			goto done;
		}
		for (int q = 0; q < size; q++)
			at[q + 1] = at[q] + ask[q];
		for (int64_t v = 0; v < n; v++)
		{
			if (owner_rank[v] == -1)
				continue;
			for (int q = 0; q < size; q++)
				if (owner_rank[v] == q || (owner_rank[v] == -2 && q != rank))
				{
					req[2 * at[q]] = node_type_of(g, v);
					req[2 * at[q] + 1] = node_key_of(g, v);
					req_node[at[q]] = (int32_t) v;
					at[q]++;
				}
		}
		free(at);
	}
	for (int q = 0; q < size; q++)
		one[q] = 1;
	if ((st = gnn_dist_alltoallv(d, ask, one, asked, one, sizeof(int64_t), err)) != GNN_OK)
		goto done;
	for (int q = 0; q < size; q++)
		nin += asked[q];
	inreq = malloc(2 * sizeof(int64_t) * (nin ? nin : 1));
	found = malloc(sizeof(int64_t) * (nin ? nin : 1));
	got = malloc(sizeof(int64_t) * (nreq ? nreq : 1));
	p->send_idx = malloc(sizeof(int32_t) * (nin ? nin : 1));
	if (!inreq || !found || !got || !p->send_idx)
	{
		st = gnn_error_set(err, GNN_ERR_NOMEM, "out of memory planning the halo");
		goto done;
	}
	if ((st = gnn_dist_alltoallv(d, req, ask, inreq, asked, 2 * sizeof(int64_t), err)) != GNN_OK)
		goto done;
	/* answer: which requested ids are this rank's own nodes */
	{
		int64_t		k = 0;

		for (int q = 0; q < size; q++)
		{
			int64_t		base = k;

			for (int64_t i = 0; i < asked[q]; i++, k++)
			{
				int64_t		v = node_find(g, inreq[2 * k], inreq[2 * k + 1]);
				bool		own = v >= 0 && (!g->node_part || g->node_part[v] == mine);

				found[k] = own;
				if (own)
					p->send_idx[p->nsend++] = (int32_t) v;
			}
			p->send_count[q] = 0;
			for (int64_t i = base; i < k; i++)
				p->send_count[q] += found[i];
		}
	}
	if ((st = gnn_dist_alltoallv(d, found, asked, got, ask, sizeof(int64_t), err)) != GNN_OK)
		goto done;
	/* the halo rows each rank sends, in the order it sends them */
	p->recv_idx = malloc(sizeof(int32_t) * (p->n_halo ? p->n_halo : 1));
	seen = calloc(n ? n : 1, 1);
	if (!p->recv_idx || !seen)
	{
		st = gnn_error_set(err, GNN_ERR_NOMEM, "out of memory planning the halo");
		goto done;
	}
	{
		int64_t		k = 0;

		for (int q = 0; q < size; q++)
			for (int64_t i = 0; i < ask[q]; i++, k++)
			{
				int32_t		v = req_node[k];

				if (!got[k])
					continue;
				if (seen[v])
				{
					if (err)
						err->id = node_key_of(g, v);
					st = gnn_error_set(err, GNN_ERR_DUPLICATE, "node %lld of rank %d's halo is owned by two ranks",
									   (long long) node_key_of(g, v), rank);
					goto done;
				}
				seen[v] = 1;
				p->recv_idx[p->nrecv++] = v;
				p->recv_count[q]++;
			}
		for (int64_t v = 0; v < n; v++)
			if (owner_rank[v] != -1 && !seen[v])
			{
				if (err)
					err->id = node_key_of(g, v);
				st = gnn_error_set(err, GNN_ERR_DANGLING,
								   "node %lld of rank %d's halo is no rank's own node (is every part loaded, on one rank each?)",
								   (long long) node_key_of(g, v), rank);
				goto done;
			}
	}
done:
	free(part_of_rank);
	free(owner_rank);
	free(req_node);
	free(ask);
	free(asked);
	free(one);
	free(req);
	free(inreq);
	free(found);
	free(got);
	free(seen);
	if (st != GNN_OK)
	{
		gnn_halo_plan_free(p);
		p->d = d;
		p->rank = rank;
		p->size = size;
	}
	return st;
}

static gnn_status
staging(gnn_halo_plan *p, int64_t srows, int64_t rrows, int32_t dim, gnn_error *err)
{
	int64_t		sn = srows * dim,
				rn = rrows * dim;

	if (sn > p->sbuf_cap)
	{
		float	   *b = realloc(p->sbuf, sizeof(float) * sn);

		if (!b)
			return gnn_error_set(err, GNN_ERR_NOMEM, "out of memory exchanging the halo");
		p->sbuf = b;
		p->sbuf_cap = sn;
	}
	if (rn > p->rbuf_cap)
	{
		float	   *b = realloc(p->rbuf, sizeof(float) * rn);

		if (!b)
			return gnn_error_set(err, GNN_ERR_NOMEM, "out of memory exchanging the halo");
		p->rbuf = b;
		p->rbuf_cap = rn;
	}
	return GNN_OK;
}

gnn_status
gnn_halo_forward(gnn_halo_plan *p, float *rows, int32_t dim, gnn_error *err)
{
	gnn_status	st;

	if (p->size <= 1)
		return GNN_OK;
	if ((st = staging(p, p->nsend, p->nrecv, dim, err)) != GNN_OK)
		return st;
	for (int64_t k = 0; k < p->nsend; k++)
		memcpy(p->sbuf + k * dim, rows + (int64_t) p->send_idx[k] * dim, sizeof(float) * dim);
	if ((st = gnn_dist_alltoallv(p->d, p->sbuf, p->send_count, p->rbuf, p->recv_count, sizeof(float) * dim,
								 err)) != GNN_OK)
		return st;
	for (int64_t k = 0; k < p->nrecv; k++)
		memcpy(rows + (int64_t) p->recv_idx[k] * dim, p->rbuf + k * dim, sizeof(float) * dim);
	return GNN_OK;
}

gnn_status
gnn_halo_backward(gnn_halo_plan *p, float *rows, int32_t dim, gnn_error *err)
{
	gnn_status	st;

	if (p->size <= 1)
		return GNN_OK;
	/* the reverse direction: halo rows out to their owners, own rows' shares back in */
	if ((st = staging(p, p->nrecv, p->nsend, dim, err)) != GNN_OK)
		return st;
	for (int64_t k = 0; k < p->nrecv; k++)
	{
		float	   *r = rows + (int64_t) p->recv_idx[k] * dim;

		memcpy(p->sbuf + k * dim, r, sizeof(float) * dim);
		memset(r, 0, sizeof(float) * dim);
	}
	if ((st = gnn_dist_alltoallv(p->d, p->sbuf, p->recv_count, p->rbuf, p->send_count, sizeof(float) * dim,
								 err)) != GNN_OK)
		return st;
	for (int64_t k = 0; k < p->nsend; k++)
	{
		float	   *r = rows + (int64_t) p->send_idx[k] * dim;
		const float *s = p->rbuf + k * dim;

		for (int32_t j = 0; j < dim; j++)
			r[j] += s[j];
	}
	return GNN_OK;
}
