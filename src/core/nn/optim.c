/*
 * optim.c: Adam and SGD steps over all parameters of a model; the
 * per-element update is gnn_math_adam / gnn_math_sgd (ops_math.h).
 */
#include "nn/optim.h"

#include <string.h>

void
gnn_optim_init(gnn_optim *o, gnn_optim_kind kind, float lr, float weight_decay)
{
	memset(o, 0, sizeof(*o));
	o->kind = kind;
	o->lr = lr;
	o->weight_decay = weight_decay;
	o->beta1 = 0.9f;
	o->beta2 = 0.999f;
	o->eps = 1e-8f;
	o->momentum = 0.0f;
}

const char *
gnn_optim_kind_name(gnn_optim_kind kind)
{
	return kind == GNN_OPTIM_SGD ? "sgd" : kind == GNN_OPTIM_ADAM ? "adam" : "unknown";
}

gnn_status
gnn_optim_step(gnn_optim *o, gnn_model *m, gnn_error *err)
{
	gnn_backend *be = gnn_model_backend(m);

	if (o->kind != GNN_OPTIM_ADAM && o->kind != GNN_OPTIM_SGD)
		return gnn_error_set(err, GNN_ERR_INVALID, "unknown optimizer %d (accepted: adam, sgd)", (int) o->kind);
	o->step++;
	for (int i = 0; i < gnn_model_num_params(m); i++)
	{
		gnn_param  *p = gnn_model_param(m, i);
		float		wd = p->decay ? o->weight_decay : 0.0f;
		int64_t		n = gnn_tensor_numel(&p->w);
		gnn_status	st;

		if (o->kind == GNN_OPTIM_ADAM)
			st = gnn_backend_adam_step(be, p->w.data, p->g.data, p->m.data, p->v.data, n, o->lr,
									   o->beta1, o->beta2, o->eps, wd, o->step);
		else
			st = gnn_backend_sgd_step(be, p->w.data, p->g.data, p->m.data, n, o->lr,
									  o->momentum, wd);
		if (st != GNN_OK)
			return gnn_backend_error(be, st, err);
	}
	return GNN_OK;
}

gnn_status
gnn_optim_reset(gnn_optim *o, gnn_model *m, gnn_error *err)
{
	gnn_backend *be = gnn_model_backend(m);

	o->step = 0;
	for (int i = 0; i < gnn_model_num_params(m); i++)
	{
		gnn_param  *p = gnn_model_param(m, i);
		size_t		bytes = sizeof(float) * (size_t) gnn_tensor_numel(&p->w);
		gnn_status	st;

		if ((st = gnn_backend_memset(be, p->m.data, 0, bytes)) != GNN_OK ||
			(st = gnn_backend_memset(be, p->v.data, 0, bytes)) != GNN_OK)
			return gnn_backend_error(be, st, err);
	}
	return GNN_OK;
}
