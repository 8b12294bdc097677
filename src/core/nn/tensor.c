/*
 * tensor.c: dense tensors and scratch buffers on a backend.
 */
#include "nn/tensor.h"

#include <string.h>

gnn_status
gnn_tensor_alloc(gnn_backend *be, int64_t rows, int64_t cols, gnn_tensor *t, gnn_error *err)
{
	gnn_status	st;
	size_t		bytes;

	memset(t, 0, sizeof(*t));
	if (rows < 0 || cols < 0 || (cols > 0 && rows > INT64_MAX / 4 / cols))
		return gnn_error_set(err, GNN_ERR_DIMENSION, "bad tensor shape %lld x %lld",
							 (long long) rows, (long long) cols);
	bytes = (size_t) (rows * cols) * sizeof(float);
	st = gnn_backend_alloc(be, bytes, (void **) &t->data);
	if (st == GNN_OK)
		st = gnn_backend_memset(be, t->data, 0, bytes);
	if (st != GNN_OK)
	{
		gnn_backend_free(be, t->data);
		t->data = NULL;
		return gnn_backend_error(be, st, err);
	}
	t->be = be;
	t->rows = rows;
	t->cols = cols;
	return GNN_OK;
}

void
gnn_tensor_free(gnn_tensor *t)
{
	if (t && t->be)
		gnn_backend_free(t->be, t->data);
	if (t)
		memset(t, 0, sizeof(*t));
}

gnn_status
gnn_tensor_upload(gnn_tensor *t, const float *host, gnn_error *err)
{
	gnn_status	st = gnn_backend_copy_h2d(t->be, t->data, host,
										  sizeof(float) * (size_t) gnn_tensor_numel(t));

	return gnn_backend_error(t->be, st, err);
}

gnn_status
gnn_tensor_download(const gnn_tensor *t, float *host, gnn_error *err)
{
	gnn_status	st = gnn_backend_copy_d2h(t->be, host, t->data,
										  sizeof(float) * (size_t) gnn_tensor_numel(t));

	return gnn_backend_error(t->be, st, err);
}

gnn_status
gnn_buf_ensure(gnn_backend *be, gnn_buf *buf, size_t bytes, gnn_error *err)
{
	gnn_status	st;
	void	   *p = NULL;

	if (buf->p && buf->cap >= bytes)
		return GNN_OK;
	gnn_backend_free(be, buf->p);
	buf->p = NULL;
	buf->cap = 0;
	st = gnn_backend_alloc(be, bytes ? bytes : 1, &p);
	if (st != GNN_OK)
		return gnn_backend_error(be, st, err);
	buf->p = p;
	buf->cap = bytes;
	return GNN_OK;
}

void
gnn_buf_free(gnn_backend *be, gnn_buf *buf)
{
	if (buf)
	{
		gnn_backend_free(be, buf->p);
		buf->p = NULL;
		buf->cap = 0;
	}
}

gnn_status
gnn_dev_upload(gnn_backend *be, const void *host, size_t bytes, void **dev, gnn_error *err)
{
	gnn_status	st;

	*dev = NULL;
	st = gnn_backend_alloc(be, bytes ? bytes : 1, dev);
	if (st == GNN_OK && bytes)
		st = gnn_backend_copy_h2d(be, *dev, host, bytes);
	if (st != GNN_OK)
	{
		gnn_backend_free(be, *dev);
		*dev = NULL;
		return gnn_backend_error(be, st, err);
	}
	return GNN_OK;
}
