/*
 * eval.c: whole-graph evaluation data shared by the training loops
 * (full-batch, minibatch, subgraph).
 */
#include "eval.h"

#include <math.h>
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

int64_t
gnn_split_labelled(const gnn_graph *g, int s)
{
	int64_t		k = 0;

	for (int64_t v = 0; g->split && g->labels && v < g->num_nodes; v++)
		k += g->split[v] == s && g->labels[v] >= 0;
	return k;
}

gnn_status
gnn_train_graph_check(const gnn_graph *g, gnn_error *err)
{
	if (!g->labels)
		return gnn_error_set(err, GNN_ERR_EMPTY, "the graph has no labels to train on");
	if (g->feat_kind == GNN_FEAT_NONE)
		return gnn_error_set(err, GNN_ERR_EMPTY, "the graph has no node features");
	/* n_train counts unlabelled training nodes too, which give no loss */
	if (g->num_classes < 1 || gnn_split_labelled(g, GNN_SPLIT_TRAIN) == 0)
		return gnn_error_set(err, GNN_ERR_EMPTY,
							 "the graph has no labelled training nodes (split = train with a label)");
	return GNN_OK;
}

gnn_status
gnn_eval_data_create(gnn_backend *be, const gnn_graph *g, bool row_normalise, gnn_eval_data *d,
					 gnn_error *err)
{
	gnn_block	blk = {0};
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

		/* an unlabelled node of a split is in no split for evaluation */
		for (int64_t v = 0; g->split && g->labels && v < n; v++)
			if (g->split[v] == s && g->labels[v] >= 0)
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

	/* no node to measure on: unknown, not 0 (which reads as a real result) */
	*loss = NAN;
	*acc = NAN;
	if (d->nrows[s] == 0)
		return GNN_OK;
	st = gnn_backend_xent(be, logits, n, c, d->labels, d->rows[s], d->nrows[s], NULL, loss,
						  &correct, &counted);
	if (st != GNN_OK)
		return gnn_backend_error(be, st, err);
	if (counted == 0)
		*loss = NAN;
	else
		*acc = (float) correct / (float) counted;
	return GNN_OK;
}

gnn_status
gnn_eval_splits(gnn_backend *be, const gnn_eval_data *d, const float *logits, int64_t n, int32_t c,
				gnn_epoch_metrics *em, gnn_error *err)
{
	float		dummy;
	gnn_status	st;

	if ((st = gnn_eval_split(be, d, logits, n, c, GNN_SPLIT_TRAIN, &dummy, &em->train_acc, err)) != GNN_OK ||
		(st = gnn_eval_split(be, d, logits, n, c, GNN_SPLIT_VAL, &em->val_loss, &em->val_acc, err)) != GNN_OK)
		return st;
	return gnn_eval_split(be, d, logits, n, c, GNN_SPLIT_TEST, &em->test_loss, &em->test_acc, err);
}

void
gnn_selector_init(gnn_selector *s, gnn_select rule)
{
	memset(s, 0, sizeof(*s));
	s->rule = rule;
	s->best_loss = INFINITY;
	s->best_acc = -1.0f;
	s->acc_max = -1.0f;
	s->loss_min = INFINITY;
}

bool
gnn_selector_step(gnn_selector *s, const gnn_epoch_metrics *em)
{
	bool		improved = false,
				keep = false;

	/* accuracy is NAN only for an empty split: no validation to select by */
	if (isnan(em->val_acc))
		improved = keep = true;
	else
		switch (s->rule)
		{
			case GNN_SELECT_VAL_LOSS:
				improved = keep = em->val_loss < s->best_loss;
				break;
			case GNN_SELECT_VAL_ACC:
				improved = keep = em->val_acc > s->best_acc ||
					(em->val_acc == s->best_acc && em->val_loss < s->best_loss);
				break;
			case GNN_SELECT_GAT:
				/* GAT paper: patience resets when val acc or loss improves; weights kept when both do */
				improved = em->val_acc >= s->acc_max || em->val_loss <= s->loss_min;
				keep = em->val_acc >= s->acc_max && em->val_loss <= s->loss_min;
				if (improved)
				{
					s->acc_max = em->val_acc > s->acc_max ? em->val_acc : s->acc_max;
					s->loss_min = em->val_loss < s->loss_min ? em->val_loss : s->loss_min;
				}
				break;
		}
	if (!s->have_best)
		keep = true;
	if (keep)
	{
		s->have_best = true;
		s->best_loss = em->val_loss;
		s->best_acc = em->val_acc;
	}
	s->wait = improved ? 0 : s->wait + 1;
	return keep;
}
