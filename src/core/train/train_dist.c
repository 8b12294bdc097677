/*
 * train_dist.c: what the training loops share to train over several ranks
 * (cfg->dist): each rank's part made ready (the halo's features from their
 * owners), the gradients summed, the metrics combined.
 */
#include "train/train_dist.h"
#include "store/gather.h"
#include "infer/infer.h"
#include "train/sample_dist.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/*
 * A rank's part ready to compute as the whole graph's share: the halo plan,
 * the features with the halo's rows from their owners (part->feat, xfeat)
 * and GCN's source degrees in the whole graph (deg).  Every rank's graph
 * must have features of one width.  A collective.
 */
gnn_status
gnn_train_dist_part(gnn_dist *d, const gnn_graph *g, gnn_halo_plan *halo, gnn_graph *part, float **xfeat,
					double **deg, gnn_error *err)
{
	int			size = gnn_dist_size(d),
				rank = gnn_dist_rank(d);
	int64_t		n = g->num_nodes;
	int32_t    *all = NULL;
	float	   *tmp = NULL;
	gnn_status	st;

	*xfeat = NULL;
	*deg = NULL;
	if (g->feat_kind == GNN_FEAT_NONE || g->fstore)
		return gnn_error_set(err, GNN_ERR_UNSUPPORTED,
							 "distributed training needs features in memory on every rank");
	if (!(all = malloc(sizeof(int32_t) * size)))
		return gnn_error_set(err, GNN_ERR_NOMEM, "out of memory");
	if ((st = gnn_dist_allgather(d, &g->feat_dim, sizeof(int32_t), all, err)) != GNN_OK)
		goto done;
	for (int q = 0; q < size; q++)
		if (all[q] != g->feat_dim)
		{
			st = gnn_error_set(err, GNN_ERR_DIMENSION, "rank %d's graph has features of width %d, rank %d's of width %d",
							   q, all[q], rank, g->feat_dim);
			goto done;
		}
	if ((st = gnn_halo_plan_build(d, g, halo, err)) != GNN_OK)
		goto done;
	*xfeat = malloc(sizeof(float) * (size_t) (n ? n : 1) * (size_t) g->feat_dim);
	*deg = malloc(sizeof(double) * (n ? n : 1));
	tmp = malloc(sizeof(float) * (n ? n : 1));
	if (!*xfeat || !*deg || !tmp)
	{
		st = gnn_error_set(err, GNN_ERR_NOMEM, "out of memory for rank %d's features", rank);
		goto done;
	}
	/* dense rows (a schema graph's sparse encoded columns too); the halo's from their owners */
	if ((st = gnn_graph_feat_range(g, 0, n, *xfeat, err)) != GNN_OK ||
		(st = gnn_halo_forward(halo, *xfeat, g->feat_dim, err)) != GNN_OK)
		goto done;
	for (int64_t v = 0; v < n; v++)
		tmp[v] = (float) gnn_graph_gcn_degree(g, v, false);
	if ((st = gnn_halo_forward(halo, tmp, 1, err)) != GNN_OK)
		goto done;
	for (int64_t v = 0; v < n; v++)
		(*deg)[v] = tmp[v];
	*part = *g;
	part->feat_kind = GNN_FEAT_DENSE;
	part->feat = *xfeat;
	part->fptr = NULL;
	part->fidx = NULL;
	part->fval = NULL;
	part->feat_nnz = 0;
	part->fstore = NULL;
done:
	free(all);
	free(tmp);
	if (st != GNN_OK)
	{
		gnn_halo_plan_free(halo);
		free(*xfeat);
		free(*deg);
		*xfeat = NULL;
		*deg = NULL;
	}
	return st;
}

/*
 * A rank's part ready to train (gnn_train_dist_part), and the job agreed:
 * one task, the model's outputs the most classes any rank has.
 */
gnn_status
gnn_train_dist_setup(gnn_dist *d, const gnn_graph *g, const gnn_train_config *cfg, gnn_model_config *mc,
					 gnn_halo_plan *halo, gnn_graph *part, float **xfeat, double **deg, gnn_error *err)
{
	int			size = gnn_dist_size(d),
				rank = gnn_dist_rank(d);
	int32_t		mine[2] = {mc->out_dim, (int32_t) cfg->task},
			   *all = NULL;
	gnn_status	st;

	*xfeat = NULL;
	*deg = NULL;
	if (!(all = malloc(sizeof(int32_t) * 2 * size)))
		return gnn_error_set(err, GNN_ERR_NOMEM, "out of memory");
	if ((st = gnn_dist_allgather(d, mine, sizeof(mine), all, err)) != GNN_OK)
		goto done;
	for (int q = 0; q < size; q++)
	{
		if (all[2 * q + 1] != (int32_t) cfg->task)
		{
			st = gnn_error_set(err, GNN_ERR_INVALID, "ranks %d and %d train different tasks", q, rank);
			goto done;
		}
		if (cfg->task == GNN_TASK_CLASSIFY && all[2 * q] > mc->out_dim)
			mc->out_dim = all[2 * q];
	}
	st = gnn_train_dist_part(d, g, halo, part, xfeat, deg, err);
done:
	free(all);
	return st;
}

/*
 * The sum over the ranks of every parameter's gradient times scale (0: this
 * rank adds nothing, whatever its gradients hold), with nextra floats of
 * extra summed in the same allreduce.  The gradients go through host
 * memory (buf): on a GPU rank they are copied down and back up, so ranks
 * on GPUs and on CPUs sum alike over the host's collectives.
 */
gnn_status
gnn_train_dist_sum_grads(gnn_dist *d, gnn_model *m, float scale, float *extra, int nextra, float **buf,
						 size_t *cap, gnn_error *err)
{
	size_t		total = (size_t) nextra,
				at = 0;
	gnn_status	st;

	/*
	 * every parameter's gradient in one allreduce: a collective's latency
	 * (milliseconds on a loaded machine, tens of microseconds on a network)
	 * is paid once a step, not once a parameter
	 */
	for (int i = 0; i < gnn_model_num_params(m); i++)
	{
		gnn_param  *p = gnn_model_param(m, i);

		total += (size_t) (p->g.rows * p->g.cols);
	}
	if (total > *cap)
	{
		float	   *b = realloc(*buf, sizeof(float) * total);

		if (!b)
			return gnn_error_set(err, GNN_ERR_NOMEM, "out of memory for the gradients to sum");
		*buf = b;
		*cap = total;
	}
	for (int i = 0; i < gnn_model_num_params(m); i++)
	{
		gnn_param  *p = gnn_model_param(m, i);
		size_t		k = (size_t) (p->g.rows * p->g.cols);

		if (scale == 0.0f)
			memset(*buf + at, 0, sizeof(float) * k);
		else
		{
			if ((st = gnn_tensor_download(&p->g, *buf + at, err)) != GNN_OK)
				return st;
			if (scale != 1.0f)
				for (size_t j = 0; j < k; j++)
					(*buf)[at + j] *= scale;
		}
		at += k;
	}
	if (nextra > 0)
		memcpy(*buf + at, extra, sizeof(float) * nextra);
	if ((st = gnn_dist_allreduce(d, *buf, total, GNN_DIST_F32, err)) != GNN_OK)
		return st;
	at = 0;
	for (int i = 0; i < gnn_model_num_params(m); i++)
	{
		gnn_param  *p = gnn_model_param(m, i);

		if ((st = gnn_tensor_upload(&p->g, *buf + at, err)) != GNN_OK)
			return st;
		at += (size_t) (p->g.rows * p->g.cols);
	}
	if (nextra > 0)
		memcpy(extra, *buf + at, sizeof(float) * nextra);
	return GNN_OK;
}

/* every parameter's gradient times f, in the backend's memory */
gnn_status
gnn_train_dist_scale_grads(gnn_model *m, float f, gnn_error *err)
{
	gnn_backend *be = gnn_model_backend(m);

	for (int i = 0; i < gnn_model_num_params(m); i++)
	{
		gnn_param  *p = gnn_model_param(m, i);
		gnn_status	st = gnn_backend_axpby(be, p->g.rows * p->g.cols, f, p->g.data, 0.0f, p->g.data);

		if (st != GNN_OK)
			return gnn_backend_error(be, st, err);
	}
	return GNN_OK;
}

/* the epoch's metrics over all ranks: each split's means weighted by its nodes on each rank */
gnn_status
gnn_train_dist_metrics(gnn_dist *d, const int64_t *nloc, const int64_t *nall, gnn_epoch_metrics *em,
					   gnn_error *err)
{
	/* train acc, val loss/acc/mae/rmse^2, test loss/acc/mae/rmse^2 */
	float	   *f[9] = {&em->train_acc, &em->val_loss, &em->val_acc, &em->val_mae, &em->val_rmse,
		&em->test_loss, &em->test_acc, &em->test_mae, &em->test_rmse};
	int			split[9] = {1, 2, 2, 2, 2, 3, 3, 3, 3};
	double		v[9];
	gnn_status	st;

	for (int i = 0; i < 9; i++)
	{
		double		x = *f[i];

		if (i == 4 || i == 8)
			x = x * x;
		v[i] = nloc[split[i]] > 0 && !isnan(x) ? x * (double) nloc[split[i]] : 0.0;
	}
	if ((st = gnn_dist_allreduce(d, v, 9, GNN_DIST_F64, err)) != GNN_OK)
		return st;
	for (int i = 0; i < 9; i++)
	{
		bool		had = !isnan(*f[i]) || nloc[split[i]] == 0;	/* NAN everywhere stays NAN */
		double		x = nall[split[i]] > 0 ? v[i] / (double) nall[split[i]] : NAN;

		if (i == 4 || i == 8)
			x = sqrt(x);
		*f[i] = had ? (float) x : NAN;
	}
	/* an AUROC does not add up over ranks */
	em->val_auc = em->test_auc = NAN;
	return GNN_OK;
}


/*
 * Every rank's own rows (n x cols, the part's order) at root: ids_out /
 * rows_out (malloc'd, at root only; NULL elsewhere) get them rank after
 * rank, *n_out how many.  Two alltoallv: the ids, then the rows.
 */
gnn_status
gnn_train_dist_gather_own(gnn_dist *d, const gnn_graph *g, const float *rows, int32_t cols, int root,
						  int64_t **ids_out, float **rows_out, int64_t *n_out, gnn_error *err)
{
	gnn_dist_own o;
	gnn_status	st = gnn_train_dist_gather_own_typed(d, g, rows, cols, root, -1, &o, err);

	*ids_out = o.ids;
	*rows_out = o.rows;
	*n_out = o.n;
	free(o.key_off);
	free(o.key_bytes);
	return st;
}

/* does node v go to the root: its own, of type t (t < 0: any) */
static inline bool
own_of_type(const gnn_graph *g, int64_t v, int32_t t)
{
	return (!g->node_part || g->node_part[v] == g->part) && (t < 0 || gnn_graph_type_of(g, v) == t);
}

/*
 * This rank's own rows of type type (< 0: all) packed in the part's order:
 * ids (a schema graph's keys when typed), rows, and text keys where the
 * type has them (key_off n + 1, key_bytes).  malloc'd.
 */
gnn_status
gnn_train_dist_own_rows(const gnn_graph *g, const float *rows, int32_t cols, int32_t type, gnn_dist_own *out,
						gnn_error *err)
{
	bool		keyed = type >= 0 && g->keys,
				text = keyed && g->key_off && g->key_bytes && (!g->type_text_key || g->type_text_key[type]);
	int64_t		n = 0,
				kbytes = 0;

	memset(out, 0, sizeof(*out));
	if (type >= (g->num_node_types > 0 ? g->num_node_types : 1))
		return gnn_error_set(err, GNN_ERR_INVALID, "node type %d of a graph of %d", type,
							 g->num_node_types > 0 ? g->num_node_types : 1);
	for (int64_t v = 0; v < g->num_nodes; v++)
		if (own_of_type(g, v, type))
		{
			n++;
			if (text)
				kbytes += g->key_off[v + 1] - g->key_off[v];
		}
	out->ids = malloc(sizeof(int64_t) * (n + 1));
	out->rows = malloc(sizeof(float) * ((size_t) n * cols + 1));
	out->key_off = text ? malloc(sizeof(int64_t) * (n + 1)) : NULL;
	out->key_bytes = text ? malloc(kbytes + 1) : NULL;
	if (!out->ids || !out->rows || (text && (!out->key_off || !out->key_bytes)))
	{
		free(out->ids);
		free(out->rows);
		free(out->key_off);
		free(out->key_bytes);
		memset(out, 0, sizeof(*out));
		return gnn_error_set(err, GNN_ERR_NOMEM, "out of memory for %lld rows", (long long) n);
	}
	if (text)
		out->key_off[0] = 0;
	for (int64_t v = 0, k = 0; v < g->num_nodes; v++)
		if (own_of_type(g, v, type))
		{
			out->ids[k] = keyed ? g->keys[v] : g->ids ? g->ids[v] : v;
			memcpy(out->rows + (size_t) k * cols, rows + (size_t) v * cols, sizeof(float) * cols);
			if (text)
			{
				int64_t		len = g->key_off[v + 1] - g->key_off[v];

				memcpy(out->key_bytes + out->key_off[k], g->key_bytes + g->key_off[v], len);
				out->key_off[k + 1] = out->key_off[k] + len;
			}
			k++;
		}
	out->n = n;
	return GNN_OK;
}

gnn_status
gnn_train_dist_gather_own_typed(gnn_dist *d, const gnn_graph *g, const float *rows, int32_t cols, int root,
								int32_t type, gnn_dist_own *out, gnn_error *err)
{
	int			size = gnn_dist_size(d),
				rank = gnn_dist_rank(d);
	int64_t    *scount = calloc(size, sizeof(int64_t)),
			   *rcount = calloc(size, sizeof(int64_t)),
			   *sbytes = calloc(size, sizeof(int64_t)),
			   *bcount = calloc(size, sizeof(int64_t)),
			   *klen = NULL,
			   *rlen = NULL,
				total = 0;
	gnn_dist_own mine;
	bool		text;
	gnn_status	st;

	memset(out, 0, sizeof(*out));
	memset(&mine, 0, sizeof(mine));
	if (!scount || !rcount || !sbytes || !bcount)
	{
		st = gnn_error_set(err, GNN_ERR_NOMEM, "out of memory");
		goto done;
	}
	/* (a rank that fails here reports it; the others' exchanges then fail or time out, as after any error) */
	if ((st = gnn_train_dist_own_rows(g, rows, cols, type, &mine, err)) != GNN_OK)
		goto done;
	text = mine.key_off != NULL;
	/* how many each rank sends the root */
	if ((st = gnn_dist_allgather(d, &mine.n, sizeof(int64_t), rcount, err)) != GNN_OK)
		goto done;
	if (rank != root)
		for (int q = 0; q < size; q++)
			rcount[q] = 0;
	for (int q = 0; q < size; q++)
		total += rcount[q];
	scount[root] = mine.n;
	klen = text ? malloc(sizeof(int64_t) * (mine.n + 1)) : NULL;
	if (text && !klen)
	{
		st = gnn_error_set(err, GNN_ERR_NOMEM, "out of memory for %lld rows", (long long) mine.n);
		goto done;
	}
	for (int64_t k = 0; text && k < mine.n; k++)
		klen[k] = mine.key_off[k + 1] - mine.key_off[k];
	if (rank == root)
	{
		out->ids = malloc(sizeof(int64_t) * (total + 1));
		out->rows = malloc(sizeof(float) * ((size_t) total * cols + 1));
		rlen = text ? malloc(sizeof(int64_t) * (total + 1)) : NULL;
		if (!out->ids || !out->rows || (text && !rlen))
		{
			st = gnn_error_set(err, GNN_ERR_NOMEM, "out of memory for %lld rows", (long long) total);
			goto done;
		}
	}
	if ((st = gnn_dist_alltoallv(d, mine.ids, scount, out->ids, rcount, sizeof(int64_t), err)) != GNN_OK)
		goto done;
	if (text)
	{
		/* the keys' lengths, then their bytes */
		if ((st = gnn_dist_alltoallv(d, klen, scount, rlen, rcount, sizeof(int64_t), err)) != GNN_OK)
			goto done;
		if (rank == root)
		{
			int64_t		r = 0;

			if (!(out->key_off = malloc(sizeof(int64_t) * (total + 1))))
			{
				st = gnn_error_set(err, GNN_ERR_NOMEM, "out of memory for %lld keys", (long long) total);
				goto done;
			}
			out->key_off[0] = 0;
			for (int64_t i = 0; i < total; i++)
				out->key_off[i + 1] = out->key_off[i] + rlen[i];
			/* each rank's bytes: the sum of its rows' lengths */
			for (int q = 0; q < size; q++)
			{
				bcount[q] = 0;
				for (int64_t i = 0; i < rcount[q]; i++)
					bcount[q] += rlen[r + i];
				r += rcount[q];
			}
			if (!(out->key_bytes = malloc(out->key_off[total] + 1)))
			{
				st = gnn_error_set(err, GNN_ERR_NOMEM, "out of memory for %lld key bytes",
								   (long long) out->key_off[total]);
				goto done;
			}
		}
		sbytes[root] = mine.key_off[mine.n];
		if ((st = gnn_dist_alltoallv(d, mine.key_bytes, sbytes, out->key_bytes, bcount, 1, err)) != GNN_OK)
			goto done;
	}
	for (int q = 0; q < size; q++)
	{
		scount[q] *= cols;
		rcount[q] *= cols;
	}
	if ((st = gnn_dist_alltoallv(d, mine.rows, scount, out->rows, rcount, sizeof(float), err)) != GNN_OK)
		goto done;
	out->n = total;
done:
	if (st != GNN_OK)
	{
		free(out->ids);
		free(out->rows);
		free(out->key_off);
		free(out->key_bytes);
		memset(out, 0, sizeof(*out));
	}
	free(scount);
	free(rcount);
	free(sbytes);
	free(bcount);
	free(mine.ids);
	free(mine.rows);
	free(mine.key_off);
	free(mine.key_bytes);
	free(klen);
	free(rlen);
	return st;
}

/* em's collective figures: d's counters since c0 (the training steps') */
void
gnn_train_dist_epoch_comm(gnn_dist *d, const gnn_dist_counters *c0, gnn_epoch_metrics *em)
{
	gnn_dist_counters c1;

	gnn_dist_counters_get(d, &c1);
	em->allreduce_s = c1.allreduce_s - c0->allreduce_s;
	em->alltoallv_s = c1.alltoallv_s - c0->alltoallv_s;
	em->allreduce_bytes = c1.allreduce_bytes - c0->allreduce_bytes;
	em->alltoallv_bytes = c1.alltoallv_sent - c0->alltoallv_sent;
}

/* a node by name (gnn_graph_name_type / _key) */
typedef struct gorder_ent
{
	int64_t		id;				/* key */
	int32_t		type;
	int32_t		rank;
	int32_t		local;
} gorder_ent;

static int
gorder_cmp(const void *a, const void *b)
{
	const gorder_ent *x = a,
			   *y = b;

	if (x->type != y->type)
		return (x->type > y->type) - (x->type < y->type);
	if (x->id != y->id)
		return (x->id > y->id) - (x->id < y->id);
	return (x->rank > y->rank) - (x->rank < y->rank);
}

gnn_status
gnn_train_sort_by_name(const gnn_graph *g, int32_t *nodes, int64_t n, gnn_error *err)
{
	gnn_status	st = GNN_OK;
	gorder_ent *e = malloc(sizeof(gorder_ent) * (n + 1));

	if (!e)
		return gnn_error_set(err, GNN_ERR_NOMEM, "out of memory sorting %lld nodes", (long long) n);
	for (int64_t i = 0; i < n; i++)
	{
		e[i].id = gnn_graph_name_key(g, nodes[i]);
		e[i].type = gnn_graph_name_type(g, nodes[i]);
		e[i].rank = 0;
		e[i].local = nodes[i];
	}
	qsort(e, n, sizeof(gorder_ent), gorder_cmp);
	for (int64_t i = 0; i < n; i++)
		nodes[i] = e[i].local;
	free(e);
	return st;
}

/* every rank's nodes[0..n) as one sorted list of names on every rank (*all_out malloc'd, *nall_out of them) */
static gnn_status
gather_names(gnn_dist *d, const gnn_graph *g, const int32_t *nodes, int64_t n, gorder_ent **all_out,
			 int64_t *nall_out, gnn_error *err);

gnn_status
gnn_train_dist_global_order(gnn_dist *d, const gnn_graph *g, const int32_t *nodes, int64_t n, int32_t **local_out,
							int64_t *nall_out, gnn_error *err)
{
	gorder_ent *all = NULL;
	int32_t    *local;
	int64_t		total = 0;
	int			rank = gnn_dist_rank(d);
	gnn_status	st;

	*local_out = NULL;
	*nall_out = 0;
	if ((st = gather_names(d, g, nodes, n, &all, &total, err)) != GNN_OK)
		return st;
	if (!(local = malloc(sizeof(int32_t) * (total + 1))))
	{
		free(all);
		return gnn_error_set(err, GNN_ERR_NOMEM, "out of memory for %lld nodes", (long long) total);
	}
	for (int64_t k = 0; k < total; k++)
		local[k] = all[k].rank == rank ? all[k].local : -1;
	free(all);
	*local_out = local;
	*nall_out = total;
	return GNN_OK;
}

gnn_status
gnn_train_dist_global_names(gnn_dist *d, const gnn_graph *g, const int32_t *nodes, int64_t n, int64_t **keys_out,
							int16_t **types_out, int32_t **ranks_out, int64_t *nall_out, gnn_error *err)
{
	gorder_ent *all = NULL;
	int64_t		total = 0;
	gnn_status	st;

	*keys_out = NULL;
	*ranks_out = NULL;
	if (types_out)
		*types_out = NULL;
	*nall_out = 0;
	if ((st = gather_names(d, g, nodes, n, &all, &total, err)) != GNN_OK)
		return st;
	*keys_out = malloc(sizeof(int64_t) * (total + 1));
	*ranks_out = malloc(sizeof(int32_t) * (total + 1));
	if (types_out)
		*types_out = malloc(sizeof(int16_t) * (total + 1));
	if (!*keys_out || !*ranks_out || (types_out && !*types_out))
	{
		free(all);
		free(*keys_out);
		free(*ranks_out);
		*keys_out = NULL;
		*ranks_out = NULL;
		if (types_out)
		{
			free(*types_out);
			*types_out = NULL;
		}
		return gnn_error_set(err, GNN_ERR_NOMEM, "out of memory for %lld nodes", (long long) total);
	}
	for (int64_t k = 0; k < total; k++)
	{
		(*keys_out)[k] = all[k].id;
		(*ranks_out)[k] = all[k].rank;
		if (types_out)
			(*types_out)[k] = (int16_t) all[k].type;
	}
	free(all);
	*nall_out = total;
	return GNN_OK;
}

static gnn_status
gather_names(gnn_dist *d, const gnn_graph *g, const int32_t *nodes, int64_t n, gorder_ent **all_out,
			 int64_t *nall_out, gnn_error *err)
{
	int			size = gnn_dist_size(d),
				rank = gnn_dist_rank(d);
	int64_t    *scount = malloc(sizeof(int64_t) * size),
			   *rcount = malloc(sizeof(int64_t) * size),
				total = 0;
	/* (alltoallv's send buffer is packed by destination: the list once for each rank) */
	gorder_ent *mine = malloc(sizeof(gorder_ent) * ((size_t) n * size + 1)),
			   *all = NULL;
	gnn_status	st;

	*all_out = NULL;
	*nall_out = 0;
	if (!scount || !rcount || !mine)
	{
		st = gnn_error_set(err, GNN_ERR_NOMEM, "out of memory");
		goto done;
	}
	for (int64_t i = 0; i < n; i++)
	{
		mine[i].id = gnn_graph_name_key(g, nodes[i]);
		mine[i].type = gnn_graph_name_type(g, nodes[i]);
		mine[i].rank = rank;
		mine[i].local = nodes[i];
	}
	for (int q = 1; q < size; q++)
		memcpy(mine + (size_t) q * n, mine, sizeof(gorder_ent) * n);
	if ((st = gnn_dist_allgather(d, &n, sizeof(int64_t), rcount, err)) != GNN_OK)
		goto done;
	for (int q = 0; q < size; q++)
	{
		scount[q] = n;			/* every rank gets the whole list */
		total += rcount[q];
	}
	if (total > INT32_MAX)
	{
		st = gnn_error_set(err, GNN_ERR_LIMIT, "%lld nodes over all ranks: at most %d", (long long) total, INT32_MAX);
		goto done;
	}
	all = malloc(sizeof(gorder_ent) * (total + 1));
	if (!all)
	{
		st = gnn_error_set(err, GNN_ERR_NOMEM, "out of memory for %lld nodes", (long long) total);
		goto done;
	}
	if ((st = gnn_dist_alltoallv(d, mine, scount, all, rcount, sizeof(gorder_ent), err)) != GNN_OK)
		goto done;
	qsort(all, total, sizeof(gorder_ent), gorder_cmp);
	for (int64_t k = 0; k < total; k++)
	{
		if (k > 0 && all[k].id == all[k - 1].id && all[k].type == all[k - 1].type)
		{
			st = gnn_error_set(err, GNN_ERR_DUPLICATE, "node %lld (type %d) is listed by ranks %d and %d",
							   (long long) all[k].id, all[k].type, all[k - 1].rank, all[k].rank);
			goto done;
		}
	}
	*all_out = all;
	all = NULL;
	*nall_out = total;
done:
	free(scount);
	free(rcount);
	free(mine);
	free(all);
	return st;
}

/* ------------------------------------------------------------------ time-aware rows over the parts */

gnn_status
gnn_model_infer_temporal_dist(gnn_dist *d, gnn_model *m, const gnn_graph *g, const gnn_infer_temporal_config *c,
							  int layer, bool softmax, float *host_out, gnn_error *err)
{
	gnn_backend *be = gnn_model_backend(m);
	const gnn_model_config *mc = gnn_model_config_of(m);
	int			nl = layer < 0 ? mc->layers : layer + 1;
	bool		temporal = c->sampler.temporal;
	gnn_sampler_config sc;
	gnn_dist_sampler *s = NULL;
	int32_t    *own = NULL,
				cols;
	int64_t    *bounds = NULL,
				nown = 0,
				bs = c->batch_size,
				nbatch;
	float	   *rows = NULL;
	gnn_status	st = GNN_OK;

	/* the whole graph's sampling (the dist sampler keys every draw by id: stream_by_id) */
	if ((st = gnn_infer_temporal_sampling(m, g, c, layer, &sc, err)) != GNN_OK)
		return st;
	if (c->also_out)
		return gnn_error_set(err, GNN_ERR_UNSUPPORTED, "a second layer's rows are not computed over the parts");
	if ((st = gnn_dist_sampler_create(d, g, &sc, &s, err)) != GNN_OK)
		return st;
	cols = gnn_model_layer_dim(m, nl - 1);
	own = malloc(sizeof(int32_t) * (g->num_nodes + 1));
	bounds = malloc(sizeof(int64_t) * (bs + 1));
	rows = malloc(sizeof(float) * (size_t) bs * cols + 1);
	if (!own || !bounds || !rows)
	{
		st = gnn_error_set(err, GNN_ERR_NOMEM, "out of memory for time-aware inference over the part's %lld nodes",
						   (long long) g->num_nodes);
		goto done;
	}
	for (int64_t v = 0; v < g->num_nodes; v++)
		if (own_of_type(g, v, -1))
			own[nown++] = (int32_t) v;
	/* every rank calls the sampler for as many batches as the rank with the most own nodes */
	{
		int			size = gnn_dist_size(d);
		int64_t		mine = (nown + bs - 1) / bs,
				   *all = malloc(sizeof(int64_t) * size);

		if (!all)
		{
			st = gnn_error_set(err, GNN_ERR_NOMEM, "out of memory");
			goto done;
		}
		st = gnn_dist_allgather(d, &mine, sizeof(mine), all, err);
		nbatch = 0;
		for (int r = 0; st == GNN_OK && r < size; r++)
			nbatch = all[r] > nbatch ? all[r] : nbatch;
		free(all);
		if (st != GNN_OK)
			goto done;
	}
	for (int64_t b = 0; b < nbatch; b++)
	{
		int64_t		a = b * bs < nown ? b * bs : nown,
					n = nown - a < bs ? nown - a : bs;
		int64_t		stop = c->should_stop && c->should_stop(c->stop_arg);
		gnn_minibatch mb;
		gnn_dist_feat f;
		gnn_dfeat	x;

		/* a stop on any rank stops every rank, between batches */
		if ((st = gnn_dist_allreduce(d, &stop, 1, GNN_DIST_I64, err)) != GNN_OK)
			goto done;
		if (stop)
		{
			st = gnn_error_set(err, GNN_ERR_CANCELLED, "time-aware inference cancelled");
			goto done;
		}
		for (int64_t i = 0; i < n; i++)
			bounds[i] = temporal ? gnn_temporal_bound(g, own[a + i], c->has_as_of, c->as_of) : INT64_MAX;
		if ((st = gnn_dist_sampler_sample(s, own + a, temporal ? bounds : NULL, n, c->seed, c->row_normalise,
										  c->sampler.nthreads, &mb, &f, err)) != GNN_OK)
			goto done;
		if (n == 0)
			continue;
		memset(&x, 0, sizeof(x));
		st = f.ptr ? gnn_dfeat_sparse(be, mb.n_input, g->feat_dim, f.ptr, f.idx, f.val, &x, err)
			: gnn_dfeat_dense(be, f.dense, mb.n_input, g->feat_dim, &x, err);
		if (st == GNN_OK)
			st = gnn_infer_batch_rows(m, &mb, &x, nl, layer < 0 && softmax, n, cols, rows, -1, NULL, 0, err);
		for (int64_t i = 0; st == GNN_OK && i < n; i++)
			memcpy(host_out + (int64_t) own[a + i] * cols, rows + i * cols, sizeof(float) * cols);
		gnn_dfeat_free(&x);
		if (st != GNN_OK)
			goto done;
	}
done:
	gnn_dist_sampler_free(s);
	free(own);
	free(bounds);
	free(rows);
	return st;
}
