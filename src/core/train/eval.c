/*
 * eval.c: whole-graph evaluation data shared by the training loops
 * (full-batch, minibatch, subgraph).
 */
#include "train/eval.h"

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
	{
		gnn_backend_free(be, d->rows[s]);
		free(d->hrows[s]);
	}
	free(d->hout);
	free(d->hgrad);
	free(d->hs);
	free(d->ht);
	free(d->hl);
	memset(d, 0, sizeof(*d));
}

/* v is measured in split s under the task */
static bool
in_split(const gnn_graph *g, gnn_task task, int64_t v, int s)
{
	if (!g->split || g->split[v] != s)
		return false;
	if (task == GNN_TASK_REGRESS)
		return g->targets && !isnan(g->targets[v]);
	return g->labels && g->labels[v] >= 0;
}

/* whether split s has a node measured under the task: stops at the first (a check, not a count) */
static bool
split_any(const gnn_graph *g, gnn_task task, int s)
{
	for (int64_t v = 0; g->split && v < g->num_nodes; v++)
		if (in_split(g, task, v, s))
			return true;
	return false;
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
gnn_train_graph_check_task(const gnn_graph *g, gnn_task task, gnn_error *err)
{
	if (task == GNN_TASK_CLASSIFY)
		return gnn_train_graph_check(g, err);
	if (task != GNN_TASK_REGRESS)
		return gnn_error_set(err, GNN_ERR_INVALID, "unknown task %d (accepted: classify, regress)", (int) task);
	if (!g->targets)
		return gnn_error_set(err, GNN_ERR_EMPTY, "the graph has no regression targets to train on");
	if (g->feat_kind == GNN_FEAT_NONE)
		return gnn_error_set(err, GNN_ERR_EMPTY, "the graph has no node features");
	if (!split_any(g, GNN_TASK_REGRESS, GNN_SPLIT_TRAIN))
		return gnn_error_set(err, GNN_ERR_EMPTY,
							 "the graph has no training nodes with a target (split = train, target not NULL)");
	return GNN_OK;
}

gnn_status
gnn_train_graph_check(const gnn_graph *g, gnn_error *err)
{
	if (!g->labels)
		return gnn_error_set(err, GNN_ERR_EMPTY, "the graph has no labels to train on");
	if (g->feat_kind == GNN_FEAT_NONE)
		return gnn_error_set(err, GNN_ERR_EMPTY, "the graph has no node features");
	/* n_train counts unlabelled training nodes too, which give no loss */
	if (g->num_classes < 1 || !split_any(g, GNN_TASK_CLASSIFY, GNN_SPLIT_TRAIN))
		return gnn_error_set(err, GNN_ERR_EMPTY,
							 "the graph has no labelled training nodes (split = train with a label)");
	return GNN_OK;
}

gnn_status
gnn_eval_data_create(gnn_backend *be, const gnn_graph *g, bool row_normalise, gnn_eval_data *d,
					 gnn_error *err)
{
	return gnn_eval_data_create_task(be, g, row_normalise, GNN_TASK_CLASSIFY, d, err);
}

static gnn_status
eval_data_create(gnn_backend *be, const gnn_graph *g, bool row_normalise, gnn_task task, bool forward_only,
				 const double *deg_src, gnn_eval_data *d, gnn_error *err);

gnn_status
gnn_eval_data_create_task(gnn_backend *be, const gnn_graph *g, bool row_normalise, gnn_task task,
						  gnn_eval_data *d, gnn_error *err)
{
	return eval_data_create(be, g, row_normalise, task, false, NULL, d, err);
}

gnn_status
gnn_eval_data_create_normed(gnn_backend *be, const gnn_graph *g, bool row_normalise, gnn_task task,
							const double *deg_src, gnn_eval_data *d, gnn_error *err)
{
	return eval_data_create(be, g, row_normalise, task, false, deg_src, d, err);
}

gnn_status
gnn_eval_data_create_forward(gnn_backend *be, const gnn_graph *g, bool row_normalise, gnn_task task,
							 gnn_eval_data *d, gnn_error *err)
{
	return eval_data_create(be, g, row_normalise, task, true, NULL, d, err);
}

static gnn_status
eval_data_create(gnn_backend *be, const gnn_graph *g, bool row_normalise, gnn_task task, bool forward_only,
				 const double *deg_src, gnn_eval_data *d, gnn_error *err)
{
	gnn_block	blk = {0};
	gnn_status	st;
	int32_t    *host = NULL;
	int64_t		n = g->num_nodes;

	memset(d, 0, sizeof(*d));
	d->task = task;
	d->classes = g->num_classes;
	d->targets = g->targets;
	d->hlabels = g->labels;
	gnn_block_from_graph(g, &blk);
	if ((st = gnn_dblock_create_normed(be, &blk, NULL, deg_src, &d->blk, err)) != GNN_OK)
		return st;
	if ((st = (forward_only ? gnn_dfeat_stream : gnn_dfeat_from_graph) (be, g, row_normalise, &d->x, err)) != GNN_OK)
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

		/* an unlabelled node of a split (without a target) is in no split for evaluation */
		for (int64_t v = 0; v < n; v++)
			if (in_split(g, task, v, s))
				host[k++] = (int32_t) v;
		d->nrows[s] = k;
		if ((st = gnn_dev_upload(be, host, sizeof(int32_t) * k, (void **) &d->rows[s], err)) != GNN_OK)
			goto fail;
		d->hrows[s] = malloc(sizeof(int32_t) * (k + 1));
		if (!d->hrows[s])
			goto nomem;
		memcpy(d->hrows[s], host, sizeof(int32_t) * k);
	}
	free(host);
	host = NULL;
	if (task == GNN_TASK_REGRESS || g->num_classes == 2)
	{
		int64_t		c = task == GNN_TASK_REGRESS ? 1 : 2;

		d->hout = malloc(sizeof(float) * (n * c + 1));
		d->hgrad = malloc(sizeof(float) * (n + 1));
		d->hs = malloc(sizeof(double) * (n + 1));
		d->ht = malloc(sizeof(double) * (n + 1));
		d->hl = malloc(sizeof(int32_t) * (n + 1));
		if (!d->hout || !d->hgrad || !d->hs || !d->ht || !d->hl)
			goto nomem;
	}
	return GNN_OK;
nomem:
	st = gnn_error_set(err, GNN_ERR_NOMEM, "out of memory");
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

int64_t
gnn_mse_host(const double *pred, const double *target, int64_t n, float *grad, double *mse,
			 double *mae)
{
	double		se = 0,
				ae = 0;
	int64_t		k = 0;

	for (int64_t i = 0; i < n; i++)
		if (!isnan(target[i]))
		{
			double		e = pred[i] - target[i];

			se += e * e;
			ae += fabs(e);
			k++;
		}
	*mse = k ? se / k : NAN;
	*mae = k ? ae / k : NAN;
	for (int64_t i = 0; grad && i < n; i++)
		grad[i] = isnan(target[i]) ? 0.0f : (float) (2.0 * (pred[i] - target[i]) / k);
	return k;
}

typedef struct scored
{
	double		s;
	int32_t		pos;
} scored;

static int
cmp_scored(const void *a, const void *b)
{
	double		x = ((const scored *) a)->s,
				y = ((const scored *) b)->s;

	return (x > y) - (x < y);
}

double
gnn_auroc(const double *score, const int32_t *label, int64_t n)
{
	scored	   *v = malloc(sizeof(scored) * (n + 1));
	int64_t		m = 0,
				npos = 0;
	double		rank_sum = 0,
				auc;

	if (!v)
		return NAN;
	for (int64_t i = 0; i < n; i++)
		if (label[i] == 0 || label[i] == 1)
		{
			v[m].s = score[i];
			v[m++].pos = label[i];
			npos += label[i];
		}
	if (npos == 0 || npos == m)
	{
		free(v);
		return NAN;
	}
	qsort(v, m, sizeof(scored), cmp_scored);
	/* mid-ranks (1-based) over runs of equal scores */
	for (int64_t i = 0; i < m;)
	{
		int64_t		j = i;
		int64_t		p = 0;

		while (j < m && v[j].s == v[i].s)
			p += v[j++].pos;
		rank_sum += p * ((double) (i + 1) + (double) j) / 2.0;
		i = j;
	}
	auc = (rank_sum - (double) npos * (npos + 1) / 2.0) / ((double) npos * (double) (m - npos));
	free(v);
	return auc;
}

/* predictions and targets of split s into d->hs / d->ht, from d->hout (n x 1) */
static int64_t
gather_regress(const gnn_eval_data *d, int s)
{
	for (int64_t k = 0; k < d->nrows[s]; k++)
	{
		int32_t		v = d->hrows[s][k];

		d->hs[k] = d->hout[v];
		d->ht[k] = d->targets[v];
	}
	return d->nrows[s];
}

gnn_status
gnn_regress_loss(gnn_backend *be, const gnn_eval_data *d, const float *preds, int64_t n, int s,
				 float *dpreds, float *mse, float *mae, gnn_error *err)
{
	double		se,
				ae;
	int64_t		k;
	gnn_status	st;

	*mse = *mae = NAN;
	if (d->task != GNN_TASK_REGRESS || !d->targets || !d->hout)
		return gnn_error_set(err, GNN_ERR_INVALID, "regression loss on data prepared without targets");
	st = gnn_backend_copy_d2h(be, d->hout, preds, sizeof(float) * n);
	if (st != GNN_OK)
		return gnn_backend_error(be, st, err);
	k = gather_regress(d, s);
	/* the split's gradients go to hout (its predictions are in hs now), then to their rows */
	if (gnn_mse_host(d->hs, d->ht, k, dpreds ? d->hout : NULL, &se, &ae) > 0)
	{
		*mse = (float) se;
		*mae = (float) ae;
	}
	if (dpreds)
	{
		memset(d->hgrad, 0, sizeof(float) * n);
		for (int64_t q = 0; q < k; q++)
			d->hgrad[d->hrows[s][q]] = d->hout[q];
		st = gnn_backend_copy_h2d(be, dpreds, d->hgrad, sizeof(float) * n);
		if (st != GNN_OK)
			return gnn_backend_error(be, st, err);
	}
	return GNN_OK;
}

/* regression metrics of the three splits (predictions already in d->hout) */
static void
regress_splits(const gnn_eval_data *d, gnn_epoch_metrics *em)
{
	for (int s = GNN_SPLIT_TRAIN; s <= GNN_SPLIT_TEST; s++)
	{
		double		mse,
					mae;
		int64_t		k = gather_regress(d, s);
		float		fmse = NAN,
					fmae = NAN;

		if (gnn_mse_host(d->hs, d->ht, k, NULL, &mse, &mae) > 0)
		{
			fmse = (float) mse;
			fmae = (float) mae;
		}
		if (s == GNN_SPLIT_TRAIN)
			em->train_acc = -fmae;
		else if (s == GNN_SPLIT_VAL)
		{
			em->val_loss = fmse;
			em->val_acc = -fmae;
			em->val_mae = fmae;
			em->val_rmse = sqrtf(fmse);
		}
		else
		{
			em->test_loss = fmse;
			em->test_acc = -fmae;
			em->test_mae = fmae;
			em->test_rmse = sqrtf(fmse);
		}
	}
}

/* AUROC of split s from d->hout (n x 2 logits): the score is l1 - l0, which
 * orders nodes as the softmax probability of class 1 does (without its
 * rounding to 1.0 for confident predictions) */
static float
split_auc(const gnn_eval_data *d, int s)
{
	for (int64_t k = 0; k < d->nrows[s]; k++)
	{
		int32_t		v = d->hrows[s][k];

		d->hs[k] = (double) d->hout[2 * v + 1] - (double) d->hout[2 * v];
		d->hl[k] = d->hlabels[v];
	}
	return (float) gnn_auroc(d->hs, d->hl, d->nrows[s]);
}

gnn_status
gnn_eval_splits(gnn_backend *be, const gnn_eval_data *d, const float *logits, int64_t n, int32_t c,
				gnn_epoch_metrics *em, gnn_error *err)
{
	float		dummy;
	gnn_status	st;

	em->val_auc = em->test_auc = NAN;
	em->val_mae = em->test_mae = NAN;
	em->val_rmse = em->test_rmse = NAN;
	if (d->task == GNN_TASK_REGRESS)
	{
		if (!d->hout || c != 1)
			return gnn_error_set(err, GNN_ERR_INVALID, "regression evaluation needs one output per node (got %d)", c);
		st = gnn_backend_copy_d2h(be, d->hout, logits, sizeof(float) * n);
		if (st != GNN_OK)
			return gnn_backend_error(be, st, err);
		regress_splits(d, em);
		return GNN_OK;
	}
	if ((st = gnn_eval_split(be, d, logits, n, c, GNN_SPLIT_TRAIN, &dummy, &em->train_acc, err)) != GNN_OK ||
		(st = gnn_eval_split(be, d, logits, n, c, GNN_SPLIT_VAL, &em->val_loss, &em->val_acc, err)) != GNN_OK ||
		(st = gnn_eval_split(be, d, logits, n, c, GNN_SPLIT_TEST, &em->test_loss, &em->test_acc, err)) != GNN_OK)
		return st;
	if (c == 2 && d->hout && d->hlabels)
	{
		st = gnn_backend_copy_d2h(be, d->hout, logits, sizeof(float) * n * 2);
		if (st != GNN_OK)
			return gnn_backend_error(be, st, err);
		em->val_auc = split_auc(d, GNN_SPLIT_VAL);
		em->test_auc = split_auc(d, GNN_SPLIT_TEST);
	}
	return GNN_OK;
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

/* a row's predicted class: the highest score, ties to the lower class, a NaN never chosen */
static inline int32_t
predicted_class(const float *row, int32_t C)
{
	int32_t		best = -1;

	for (int32_t k = 0; k < C; k++)
		if (!isnan(row[k]) && (best < 0 || row[k] > row[best]))
			best = k;
	return best < 0 ? 0 : best;
}

int64_t
gnn_confusion(const float *scores, int32_t C, const int32_t *labels, const uint8_t *split, uint8_t which,
			  int64_t n, int64_t *confusion)
{
	int64_t		counted = 0;

	if (C < 1 || n < 0)
		return 0;
	memset(confusion, 0, sizeof(int64_t) * (size_t) C * (size_t) C);
	for (int64_t v = 0; v < n; v++)
	{
		if (!labels || labels[v] < 0 || labels[v] >= C || (split && split[v] != which) || (!split && which != 0))
			continue;
		confusion[(int64_t) labels[v] * C + predicted_class(scores + v * C, C)]++;
		counted++;
	}
	return counted;
}

int64_t
gnn_confusion_rows(const float *scores, int32_t C, const int32_t *labels, int64_t n, int64_t *confusion)
{
	int64_t		counted = 0;

	for (int64_t i = 0; C >= 1 && i < n; i++)
	{
		if (labels[i] < 0 || labels[i] >= C)
			continue;
		confusion[(int64_t) labels[i] * C + predicted_class(scores + i * C, C)]++;
		counted++;
	}
	return counted;
}

gnn_status
gnn_eval_keep_confusion(gnn_backend *be, const gnn_eval_data *d, const float *logits, int64_t n, int32_t c,
						gnn_train_result *res, gnn_error *err)
{
	int64_t		nt = d->nrows[GNN_SPLIT_TEST];
	const float *host = logits;
	float	   *copy = NULL;
	gnn_status	st;

	if (d->task != GNN_TASK_CLASSIFY || !d->hlabels || nt == 0 || c < 1 || c > GNN_CONFUSION_MAX_CLASSES)
		return GNN_OK;
	if (!res->confusion)
	{
		res->confusion = malloc(sizeof(int64_t) * (size_t) c * c);
		if (!res->confusion)
			return gnn_error_set(err, GNN_ERR_NOMEM, "out of memory");
		res->confusion_classes = c;
	}
	if (be->ops != gnn_backend_cpu())
	{
		/* a device's logits: the whole matrix to the host (once per kept epoch) */
		copy = malloc(sizeof(float) * ((size_t) n * c + 1));
		if (!copy)
			return gnn_error_set(err, GNN_ERR_NOMEM, "out of memory");
		if ((st = gnn_backend_copy_d2h(be, copy, logits, sizeof(float) * (size_t) n * c)) != GNN_OK)
		{
			free(copy);
			return gnn_backend_error(be, st, err);
		}
		host = copy;
	}
	memset(res->confusion, 0, sizeof(int64_t) * (size_t) c * c);
	for (int64_t k = 0; k < nt; k++)
	{
		int32_t		v = d->hrows[GNN_SPLIT_TEST][k];

		gnn_confusion_rows(host + (int64_t) v * c, c, d->hlabels + v, 1, res->confusion);
	}
	free(copy);
	return GNN_OK;
}

void
gnn_train_result_free(gnn_train_result *res)
{
	free(res->confusion);
	res->confusion = NULL;
	res->confusion_classes = 0;
}

void
gnn_class_prf(const int64_t *confusion, int32_t C, int32_t k, double *precision, double *recall, double *f1)
{
	int64_t		tp = confusion[(int64_t) k * C + k],
				predicted = 0,
				actual = 0;

	for (int32_t j = 0; j < C; j++)
	{
		predicted += confusion[(int64_t) j * C + k];
		actual += confusion[(int64_t) k * C + j];
	}
	*precision = predicted > 0 ? (double) tp / (double) predicted : NAN;
	*recall = actual > 0 ? (double) tp / (double) actual : NAN;
	*f1 = isnan(*precision) || isnan(*recall) ? NAN :
		(*precision + *recall > 0 ? 2 * *precision * *recall / (*precision + *recall) : 0);
}
