/*
 * backend.c: the backend registry (CPU, CUDA loader) and the dispatch layer
 * every caller goes through: it implements fault injection (fail after N
 * calls, so tests can simulate a failing GPU without one) and the
 * per-category timing counters behind the epoch time breakdown.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE			/* dladdr */
#endif
#include "nn/backend.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double
gnn_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double) ts.tv_sec + (double) ts.tv_nsec * 1e-9;
}

gnn_status
gnn_backend_error(gnn_backend *be, gnn_status st, gnn_error *err)
{
	if (st != GNN_OK && err)
	{
		if (be && be->err.status != GNN_OK)
			*err = be->err;
		else
			gnn_error_set(err, st, "backend error: %s", gnn_status_name(st));
		err->status = st;
	}
	return st;
}

void
gnn_backend_fail_after(gnn_backend *be, int64_t n)
{
	if (!be)
		return;
	be->calls = 0;
	be->fail_after = n;
}

void
gnn_backend_set_stop(gnn_backend *be, gnn_should_stop_fn fn, void *arg)
{
	if (!be)
		return;
	be->stop_fn = fn;
	be->stop_arg = arg;
}

bool
gnn_backend_stop_requested(gnn_backend *be)
{
	return be && be->stop_fn && be->stop_fn(be->stop_arg);
}

void
gnn_backend_timing_enable(gnn_backend *be, bool on)
{
	if (be)
		be->timing = on;
}

void
gnn_backend_timing_reset(gnn_backend *be)
{
	if (!be)
		return;
	for (int i = 0; i < GNN_CAT_COUNT; i++)
	{
		be->time_s[i] = 0;
		be->ncalls[i] = 0;
	}
	if (be->op_time)
		memset(be->op_time, 0, sizeof(gnn_op_time) * GNN_OP_TIME_SLOTS);
	be->nop_time = 0;
}

gnn_status
gnn_backend_create(const char *name, int nthreads, const char *so_path,
				   gnn_backend **out, gnn_error *err)
{
	*out = NULL;
	if (!name || strcmp(name, "cpu") == 0)
		return gnn_backend_cpu_create(nthreads, out, err);
	if (strcmp(name, "cuda") == 0)
		return gnn_backend_cuda_load(so_path, 0, out, err);
	return gnn_error_set(err, GNN_ERR_INVALID,
						 "unknown backend \"%s\" (accepted: cpu, cuda)", name);
}

gnn_status
gnn_backend_cuda_load(const char *so_path, int device, gnn_backend **out, gnn_error *err)
{
	void	   *h;
	gnn_backend_cuda_create_fn create;
	gnn_status	st;
	const char *path = so_path;

	*out = NULL;
	if (!path || !*path)
		path = getenv("GNN_CUDA_SO");
	if (!path || !*path)
		path = "gnn_cuda.so";
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h)
	{
		const char *why = dlerror();

		return gnn_error_set(err, GNN_ERR_UNSUPPORTED,
							 "CUDA backend not available: cannot load \"%s\": %s",
							 path, why ? why : "unknown reason");
	}
	*(void **) (&create) = dlsym(h, GNN_BACKEND_CUDA_ENTRY);
	if (!create)
	{
		dlclose(h);
		return gnn_error_set(err, GNN_ERR_UNSUPPORTED,
							 "CUDA backend not available: \"%s\" does not export %s",
							 path, GNN_BACKEND_CUDA_ENTRY);
	}
	st = create(GNN_BACKEND_ABI_VERSION, device, out, err);
	if (st != GNN_OK || !*out)
	{
		*out = NULL;
		dlclose(h);
		if (st == GNN_OK)
			st = gnn_error_set(err, GNN_ERR_BACKEND, "CUDA backend returned no instance");
		return st;
	}
	if (!(*out)->ops || (*out)->ops->abi_version != GNN_BACKEND_ABI_VERSION ||
		(*out)->ops->ops_size != sizeof(gnn_backend_ops))
	{
		if ((*out)->ops && (*out)->ops->destroy)
			(*out)->ops->destroy(*out);
		*out = NULL;
		dlclose(h);
		return gnn_error_set(err, GNN_ERR_UNSUPPORTED,
							 "CUDA backend \"%s\" was built for another backend ABI (want version %d)",
							 path, GNN_BACKEND_ABI_VERSION);
	}
	(*out)->dl_handle = h;
	(*out)->calls = 0;
	(*out)->fail_after = -1;
	(*out)->timing = false;
	(*out)->stop_fn = NULL;
	(*out)->stop_arg = NULL;
	gnn_backend_timing_reset(*out);
	return GNN_OK;
}

gnn_status
gnn_backend_twin(gnn_backend *be, int nthreads, gnn_backend **out, gnn_error *err)
{
	gnn_backend_cuda_create_fn create;
	Dl_info		info;
	int			device = 0;
	void	   *h;
	gnn_status	st;

	*out = NULL;
	if (be->ops == gnn_backend_cpu())
		return gnn_backend_cpu_create(nthreads, out, err);
	if (!be->dl_handle || !(*(void **) (&create) = dlsym(be->dl_handle, GNN_BACKEND_CUDA_ENTRY)) ||
		!dladdr(*(void **) (&create), &info) || !info.dli_fname)
		return gnn_error_set(err, GNN_ERR_UNSUPPORTED, "backend \"%s\" cannot make a second instance", be->name);
	/* the same object again: dlopen counts references, so destroying either keeps the other's code */
	if (!(h = dlopen(info.dli_fname, RTLD_NOW | RTLD_LOCAL)))
		return gnn_error_set(err, GNN_ERR_UNSUPPORTED, "cannot reopen \"%s\"", info.dli_fname);
	(void) sscanf(be->name, "cuda:%d", &device);
	if ((st = create(GNN_BACKEND_ABI_VERSION, device, out, err)) != GNN_OK || !*out)
	{
		*out = NULL;
		dlclose(h);
		return st != GNN_OK ? st : gnn_error_set(err, GNN_ERR_BACKEND, "CUDA backend returned no instance");
	}
	(*out)->dl_handle = h;
	(*out)->calls = 0;
	(*out)->fail_after = -1;
	(*out)->timing = false;
	(*out)->stop_fn = NULL;
	(*out)->stop_arg = NULL;
	gnn_backend_timing_reset(*out);
	return GNN_OK;
}

void
gnn_backend_destroy(gnn_backend *be)
{
	void	   *h;

	if (!be)
		return;
	h = be->dl_handle;
	free(be->op_time);
	be->op_time = NULL;
	be->ops->destroy(be);
	if (h)
		dlclose(h);
}

/* ------------------------------------------------------------------ dispatch */

static inline gnn_status
gnn_dispatch_enter(gnn_backend *be, double *t0)
{
	if (be->fail_after >= 0 && be->calls++ >= be->fail_after)
		return gnn_error_set(&be->err, GNN_ERR_BACKEND,
							 "backend %s: injected fault after %lld calls",
							 be->name, (long long) be->fail_after);
	if (be->stop_fn && be->stop_fn(be->stop_arg))
		return gnn_error_set(&be->err, GNN_ERR_CANCELLED, "stopped on request");
	if (be->timing)
		*t0 = gnn_now();
	return GNN_OK;
}

/* op's slot in be->op_time, by the table entry's name (the text before '(' of the dispatched call) */
static gnn_op_time *
op_slot(gnn_backend *be, const char *call)
{
	size_t		len = strcspn(call, "(");
	gnn_op_time *o;

	if (!be->op_time && !(be->op_time = calloc(GNN_OP_TIME_SLOTS, sizeof(gnn_op_time))))
		return NULL;
	/* each wrapper dispatches one call, so its text is one pointer */
	for (int i = 0; i < be->nop_time; i++)
		if (be->op_time[i].key == call)
			return &be->op_time[i];
	if (be->nop_time == GNN_OP_TIME_SLOTS)
		return NULL;
	if (len >= sizeof(o->name))
		len = sizeof(o->name) - 1;
	o = &be->op_time[be->nop_time++];
	memcpy(o->name, call, len);
	o->name[len] = '\0';
	o->key = call;
	return o;
}

static inline gnn_status
gnn_dispatch_leave(gnn_backend *be, gnn_op_cat cat, const char *call, double t0, gnn_status st)
{
	if (be->timing)
	{
		double		dt;
		gnn_op_time *o;

		if (st == GNN_OK)
			st = be->ops->sync(be);
		dt = gnn_now() - t0;
		be->time_s[cat] += dt;
		be->ncalls[cat]++;
		if ((o = op_slot(be, call)) != NULL)
		{
			o->s += dt;
			o->n++;
		}
	}
	return st;
}

int
gnn_backend_op_times(const gnn_backend *be, const gnn_op_time **out)
{
	*out = be ? be->op_time : NULL;
	return be && be->op_time ? be->nop_time : 0;
}

#define GNN_DISPATCH(cat, call) \
	do { \
		double		t0_ = 0; \
		gnn_status	st_ = gnn_dispatch_enter(be, &t0_); \
		if (st_ != GNN_OK) \
			return st_; \
		st_ = be->ops->call; \
		return gnn_dispatch_leave(be, cat, #call, t0_, st_); \
	} while (0)

gnn_status
gnn_backend_set_threads(gnn_backend *be, int nthreads)
{
	return be->ops->set_threads(be, nthreads);
}

gnn_status
gnn_backend_sync(gnn_backend *be)
{
	GNN_DISPATCH(GNN_CAT_OTHER, sync(be));
}

gnn_status
gnn_backend_alloc(gnn_backend *be, size_t bytes, void **ptr)
{
	*ptr = NULL;
	GNN_DISPATCH(GNN_CAT_OTHER, mem_alloc(be, bytes, ptr));
}

void
gnn_backend_free(gnn_backend *be, void *ptr)
{
	/* never fails, never injected: cleanup must always work */
	if (be && ptr)
		be->ops->mem_free(be, ptr);
}

gnn_status
gnn_backend_copy_h2d(gnn_backend *be, void *dst, const void *src, size_t bytes)
{
	GNN_DISPATCH(GNN_CAT_OTHER, copy_h2d(be, dst, src, bytes));
}

gnn_status
gnn_backend_copy_d2h(gnn_backend *be, void *dst, const void *src, size_t bytes)
{
	GNN_DISPATCH(GNN_CAT_OTHER, copy_d2h(be, dst, src, bytes));
}

gnn_status
gnn_backend_copy_d2d(gnn_backend *be, void *dst, const void *src, size_t bytes)
{
	GNN_DISPATCH(GNN_CAT_OTHER, copy_d2d(be, dst, src, bytes));
}

gnn_status
gnn_backend_memset(gnn_backend *be, void *dst, int byte, size_t bytes)
{
	GNN_DISPATCH(GNN_CAT_OTHER, mem_set(be, dst, byte, bytes));
}

gnn_status
gnn_backend_gemm(gnn_backend *be, bool trans_a, bool trans_b,
				 int64_t m, int64_t n, int64_t k, float alpha,
				 const float *A, int64_t lda, const float *B, int64_t ldb,
				 float beta, float *C, int64_t ldc)
{
	GNN_DISPATCH(GNN_CAT_DENSE, gemm(be, trans_a, trans_b, m, n, k, alpha, A, lda, B, ldb,
									 beta, C, ldc));
}

gnn_status
gnn_backend_spmm(gnn_backend *be, const gnn_csr *A, gnn_agg agg,
				 const float *row_scale, const float *col_scale,
				 const float *X, int64_t d, float beta, float *Y)
{
	GNN_DISPATCH(GNN_CAT_AGG, spmm(be, A, agg, row_scale, col_scale, X, d, beta, Y));
}

gnn_status
gnn_backend_spmm_t(gnn_backend *be, const gnn_csr *A, gnn_agg agg,
				   const float *row_scale, const float *col_scale,
				   const float *G, int64_t d, float beta, float *Y)
{
	GNN_DISPATCH(GNN_CAT_AGG, spmm_t(be, A, agg, row_scale, col_scale, G, d, beta, Y));
}

gnn_status
gnn_backend_gather_rows(gnn_backend *be, const float *src, int64_t d,
						const int32_t *idx, int64_t n, float *dst)
{
	GNN_DISPATCH(GNN_CAT_OTHER, gather_rows(be, src, d, idx, n, dst));
}

gnn_status
gnn_backend_scatter_add_rows(gnn_backend *be, const float *src, int64_t d,
							 const int32_t *idx, int64_t n, float *dst)
{
	GNN_DISPATCH(GNN_CAT_OTHER, scatter_add_rows(be, src, d, idx, n, dst));
}

gnn_status
gnn_backend_act_forward(gnn_backend *be, gnn_act act, float param,
						const float *x, float *y, int64_t n)
{
	GNN_DISPATCH(GNN_CAT_OTHER, act_forward(be, act, param, x, y, n));
}

gnn_status
gnn_backend_act_backward(gnn_backend *be, gnn_act act, float param,
						 const float *x, const float *y, const float *dy,
						 float *dx, int64_t n)
{
	GNN_DISPATCH(GNN_CAT_OTHER, act_backward(be, act, param, x, y, dy, dx, n));
}

gnn_status
gnn_backend_axpby(gnn_backend *be, int64_t n, float alpha, const float *x,
				  float beta, float *y)
{
	GNN_DISPATCH(GNN_CAT_OTHER, axpby(be, n, alpha, x, beta, y));
}

gnn_status
gnn_backend_add_bias(gnn_backend *be, float *Y, const float *bias,
					 int64_t rows, int64_t cols)
{
	GNN_DISPATCH(GNN_CAT_OTHER, add_bias(be, Y, bias, rows, cols));
}

gnn_status
gnn_backend_bias_act(gnn_backend *be, float *P, const float *bias, int64_t rows, int64_t cols,
					 gnn_act act, float param, float p, uint64_t seed, float *Y)
{
	gnn_status	st;

	if (be->ops->bias_act)
		GNN_DISPATCH(GNN_CAT_OTHER, bias_act(be, P, bias, rows, cols, act, param, p, seed, Y));
	if ((st = gnn_backend_add_bias(be, P, bias, rows, cols)) != GNN_OK ||
		(st = gnn_backend_act_forward(be, act, param, P, Y, rows * cols)) != GNN_OK)
		return st;
	return p > 0.0f ? gnn_backend_dropout_forward(be, Y, Y, rows * cols, p, seed) : GNN_OK;
}

gnn_status
gnn_backend_bias_act_backward(gnn_backend *be, gnn_act act, float param, const float *P,
							  const float *dY, int64_t rows, int64_t cols, float p, uint64_t seed,
							  float *dP, float *db)
{
	gnn_status	st;

	if (be->ops->bias_act_backward)
		GNN_DISPATCH(GNN_CAT_OTHER, bias_act_backward(be, act, param, P, dY, rows, cols, p, seed, dP, db));
	if (p > 0.0f && (st = gnn_backend_dropout_backward(be, dY, dP, rows * cols, p, seed)) != GNN_OK)
		return st;
	if ((st = gnn_backend_act_backward(be, act, param, P, NULL, p > 0.0f ? dP : dY, dP, rows * cols)) != GNN_OK)
		return st;
	return gnn_backend_bias_grad(be, dP, rows, cols, 0.0f, db);
}

gnn_status
gnn_backend_spmm_t_bias_act_backward(gnn_backend *be, const gnn_csr *A, gnn_agg agg, const float *G,
									 int64_t d, int64_t keep_rows, gnn_act act, float param,
									 const float *P, float p, uint64_t seed, float *Y, float *db)
{
	gnn_status	st;
	int64_t		n = A->n_cols,
				keep = keep_rows < 0 ? 0 : keep_rows > n ? n : keep_rows;

	if (be->ops->spmm_t_bias_act_backward)
		GNN_DISPATCH(GNN_CAT_AGG, spmm_t_bias_act_backward(be, A, agg, G, d, keep, act, param, P, p,
														   seed, Y, db));
	if (keep < n && (st = gnn_backend_memset(be, Y + keep * d, 0, sizeof(float) * (size_t) ((n - keep) * d))) != GNN_OK)
		return st;
	if ((st = gnn_backend_spmm_t(be, A, agg, NULL, NULL, G, d, 1.0f, Y)) != GNN_OK)
		return st;
	return gnn_backend_bias_act_backward(be, act, param, P, Y, n, d, p, seed, Y, db);
}

gnn_status
gnn_backend_bias_grad(gnn_backend *be, const float *dY, int64_t rows,
					  int64_t cols, float beta, float *db)
{
	GNN_DISPATCH(GNN_CAT_OTHER, bias_grad(be, dY, rows, cols, beta, db));
}

gnn_status
gnn_backend_dropout_forward(gnn_backend *be, const float *x, float *y,
							int64_t n, float p, uint64_t seed)
{
	GNN_DISPATCH(GNN_CAT_OTHER, dropout_forward(be, x, y, n, p, seed));
}

gnn_status
gnn_backend_dropout_backward(gnn_backend *be, const float *dy, float *dx,
							 int64_t n, float p, uint64_t seed)
{
	GNN_DISPATCH(GNN_CAT_OTHER, dropout_backward(be, dy, dx, n, p, seed));
}

gnn_status
gnn_backend_gemm_dropout(gnn_backend *be, bool trans_a, int64_t m, int64_t n, int64_t k, float alpha,
						 const float *A, int64_t lda, float p, uint64_t seed, const float *B,
						 int64_t ldb, float beta, float *C, int64_t ldc)
{
	GNN_DISPATCH(GNN_CAT_DENSE, gemm_dropout(be, trans_a, m, n, k, alpha, A, lda, p, seed, B, ldb,
											 beta, C, ldc));
}

gnn_status
gnn_backend_softmax_rows(gnn_backend *be, const float *X, float *Y, int64_t n, int64_t c)
{
	GNN_DISPATCH(GNN_CAT_OTHER, softmax_rows(be, X, Y, n, c));
}

gnn_status
gnn_backend_xent(gnn_backend *be, const float *logits, int64_t n, int64_t c,
				 const int32_t *labels, const int32_t *rows, int64_t nrows,
				 float *dlogits, float *loss_host, int64_t *correct_host,
				 int64_t *counted_host)
{
	GNN_DISPATCH(GNN_CAT_OTHER, xent(be, logits, n, c, labels, rows, nrows, dlogits,
									 loss_host, correct_host, counted_host));
}

gnn_status
gnn_backend_gat_node_scores(gnn_backend *be, const float *H, int64_t n,
							int64_t heads, int64_t f, const float *att, float *s)
{
	GNN_DISPATCH(GNN_CAT_AGG, gat_node_scores(be, H, n, heads, f, att, s));
}

gnn_status
gnn_backend_gat_node_scores_backward(gnn_backend *be, const float *H, int64_t n,
									 int64_t heads, int64_t f, const float *att,
									 const float *ds, float *dH, float beta, float *datt)
{
	GNN_DISPATCH(GNN_CAT_AGG, gat_node_scores_backward(be, H, n, heads, f, att, ds, dH,
													   beta, datt));
}

gnn_status
gnn_backend_gat_edge_softmax(gnn_backend *be, const gnn_csr *A, int64_t heads,
							 const float *a_src, const float *a_dst,
							 float slope, float *alpha)
{
	GNN_DISPATCH(GNN_CAT_AGG, gat_edge_softmax(be, A, heads, a_src, a_dst, slope, alpha));
}

gnn_status
gnn_backend_gat_edge_softmax_backward(gnn_backend *be, const gnn_csr *A,
									  int64_t heads, const float *a_src,
									  const float *a_dst, float slope,
									  const float *alpha, const float *dalpha,
									  float *da_src, float *da_dst)
{
	GNN_DISPATCH(GNN_CAT_AGG, gat_edge_softmax_backward(be, A, heads, a_src, a_dst, slope,
														alpha, dalpha, da_src, da_dst));
}

gnn_status
gnn_backend_gat_aggregate(gnn_backend *be, const gnn_csr *A, int64_t heads,
						  int64_t f, const float *alpha, const float *H, float *out)
{
	GNN_DISPATCH(GNN_CAT_AGG, gat_aggregate(be, A, heads, f, alpha, H, out));
}

gnn_status
gnn_backend_gat_aggregate_backward(gnn_backend *be, const gnn_csr *A,
								   int64_t heads, int64_t f, const float *alpha,
								   const float *H, const float *dout,
								   float beta, float *dH, float *dalpha)
{
	GNN_DISPATCH(GNN_CAT_AGG, gat_aggregate_backward(be, A, heads, f, alpha, H, dout,
													 beta, dH, dalpha));
}

gnn_status
gnn_backend_head_mean(gnn_backend *be, const float *X, int64_t n,
					  int64_t heads, int64_t f, float *Y)
{
	GNN_DISPATCH(GNN_CAT_OTHER, head_mean(be, X, n, heads, f, Y));
}

gnn_status
gnn_backend_head_mean_backward(gnn_backend *be, const float *dY, int64_t n,
							   int64_t heads, int64_t f, float *dX)
{
	GNN_DISPATCH(GNN_CAT_OTHER, head_mean_backward(be, dY, n, heads, f, dX));
}

gnn_status
gnn_backend_max_agg(gnn_backend *be, const gnn_csr *A, const float *X,
					int64_t d, float *Y, int32_t *argmax)
{
	GNN_DISPATCH(GNN_CAT_AGG, max_agg(be, A, X, d, Y, argmax));
}

gnn_status
gnn_backend_max_agg_backward(gnn_backend *be, const gnn_csr *A,
							 const float *dY, const int32_t *argmax,
							 int64_t d, float beta, float *dX)
{
	GNN_DISPATCH(GNN_CAT_AGG, max_agg_backward(be, A, dY, argmax, d, beta, dX));
}

gnn_status
gnn_backend_adam_step(gnn_backend *be, float *w, const float *g, float *m,
					  float *v, int64_t n, float lr, float beta1, float beta2,
					  float eps, float weight_decay, int64_t t)
{
	GNN_DISPATCH(GNN_CAT_OTHER, adam_step(be, w, g, m, v, n, lr, beta1, beta2, eps,
										  weight_decay, t));
}

gnn_status
gnn_backend_sgd_step(gnn_backend *be, float *w, const float *g, float *buf,
					 int64_t n, float lr, float momentum, float weight_decay)
{
	GNN_DISPATCH(GNN_CAT_OTHER, sgd_step(be, w, g, buf, n, lr, momentum, weight_decay));
}
