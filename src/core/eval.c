/*
 * eval.c: whole-graph evaluation data shared by the training loops
 * (full-batch, minibatch, subgraph).
 */
#include "eval.h"

#include <stdlib.h>
#include <string.h>

void
gnn_eval_data_free(gnn_backend *be, gnn_eval_data *d)
{
	gnn_dblock_free(&d->blk);
	gnn_dfeat_free(&d->x);
	gnn_backend_free(be, d->labels);
	for (int s = 0; s < 4; s++)
		gnn_backend_free(be, d->rows[s]);
	memset(d, 0, sizeof(*d));
}

gnn_status
gnn_eval_data_create(gnn_backend *be, const gnn_graph *g, bool row_normalise, gnn_eval_data *d,
					 gnn_error *err)
{
	gnn_block	blk;
	gnn_status	st;
	int32_t    *host = NULL;
	int64_t		n = g->num_nodes;

	memset(d, 0, sizeof(*d));
	gnn_block_from_graph(g, &blk);
	if ((st = gnn_dblock_create(be, &blk, &d->blk, err)) != GNN_OK)
		return st;
	if ((st = gnn_dfeat_from_graph(be, g, row_normalise, &d->x, err)) != GNN_OK)
		goto fail;
	if (g->labels)
	{
		if ((st = gnn_dev_upload(be, g->labels, sizeof(int32_t) * n, (void **) &d->labels, err)) != GNN_OK)
			goto fail;
	}
	host = malloc(sizeof(int32_t) * (n + 1));
	if (!host)
	{
		st = gnn_error_set(err, GNN_ERR_NOMEM, "out of memory");
		goto fail;
	}
	for (int s = 1; s < 4; s++)
	{
		int64_t		k = 0;

		for (int64_t v = 0; g->split && v < n; v++)
			if (g->split[v] == s)
				host[k++] = (int32_t) v;
		d->nrows[s] = k;
		if ((st = gnn_dev_upload(be, host, sizeof(int32_t) * k, (void **) &d->rows[s], err)) != GNN_OK)
			goto fail;
	}
	free(host);
	return GNN_OK;
fail:
	free(host);
	gnn_eval_data_free(be, d);
	return st;
}

gnn_status
gnn_eval_split(gnn_backend *be, const gnn_eval_data *d, const float *logits, int64_t n, int32_t c, int s,
			   float *loss, float *acc, gnn_error *err)
{
	int64_t		correct = 0,
				counted = 0;
	gnn_status	st;

	*loss = 0;
	*acc = 0;
	if (d->nrows[s] == 0)
		return GNN_OK;
	st = gnn_backend_xent(be, logits, n, c, d->labels, d->rows[s], d->nrows[s], NULL, loss,
						  &correct, &counted);
	if (st != GNN_OK)
		return gnn_backend_error(be, st, err);
	*acc = counted ? (float) correct / (float) counted : 0.0f;
	return GNN_OK;
}
