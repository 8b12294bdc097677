/*
 * eval.h: what every training loop needs to evaluate on the whole graph: the
 * graph as one block, its input features, labels and the rows of each split,
 * on a backend; and the loss and accuracy of one split from logits.
 */
#ifndef GNN_EVAL_H
#define GNN_EVAL_H

#include "model.h"

typedef struct gnn_eval_data
{
	gnn_dblock	blk;			/* in-edges of every node */
	gnn_dfeat	x;				/* input features */
	int32_t    *labels;			/* backend memory; NULL when unlabelled */
	int32_t    *rows[4];		/* backend memory, by GNN_SPLIT_* */
	int64_t		nrows[4];
} gnn_eval_data;

gnn_status	gnn_eval_data_create(gnn_backend *be, const gnn_graph *g, bool row_normalise,
								 gnn_eval_data *d, gnn_error *err);
void		gnn_eval_data_free(gnn_backend *be, gnn_eval_data *d);
/* Mean cross-entropy and accuracy over split s (GNN_SPLIT_*); zeros when it is empty. */
gnn_status	gnn_eval_split(gnn_backend *be, const gnn_eval_data *d, const float *logits, int64_t n,
						   int32_t c, int s, float *loss, float *acc, gnn_error *err);

#endif							/* GNN_EVAL_H */
