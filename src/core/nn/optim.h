/*
 * optim.h: optimisers over a model's parameters (Adam, SGD), with L2
 * weight decay added to the gradient for parameters marked decay (the
 * model marks them; GCN decays only layer 0, as Kipf & Welling do).
 */
#ifndef GNN_OPTIM_H
#define GNN_OPTIM_H

#include "nn/model.h"

typedef enum gnn_optim_kind
{
	GNN_OPTIM_ADAM = 0,
	GNN_OPTIM_SGD = 1
} gnn_optim_kind;

typedef struct gnn_optim
{
	gnn_optim_kind kind;
	float		lr;
	float		weight_decay;
	float		beta1;			/* Adam */
	float		beta2;
	float		eps;
	float		momentum;		/* SGD */
	int64_t		step;			/* steps taken */
} gnn_optim;

/* Adam: beta1 0.9, beta2 0.999, eps 1e-8; SGD: no momentum. */
void		gnn_optim_init(gnn_optim *o, gnn_optim_kind kind, float lr, float weight_decay);
const char *gnn_optim_kind_name(gnn_optim_kind kind);
/* One update of every parameter from its gradient g. */
gnn_status	gnn_optim_step(gnn_optim *o, gnn_model *m, gnn_error *err);
/* Zero the optimiser state (moments) and the step counter. */
gnn_status	gnn_optim_reset(gnn_optim *o, gnn_model *m, gnn_error *err);

#endif							/* GNN_OPTIM_H */
