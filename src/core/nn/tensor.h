/*
 * tensor.h: dense float matrices and raw buffers in a backend's memory.
 *
 * A gnn_tensor is a row-major rows x cols float matrix owned by one backend.
 * gnn_buf is a growable scratch buffer (capacity in bytes) used for
 * per-batch activations: minibatch blocks change size, so layers "ensure"
 * their buffers instead of reallocating every step.
 */
#ifndef GNN_TENSOR_H
#define GNN_TENSOR_H

#include "nn/backend.h"

typedef struct gnn_tensor
{
	gnn_backend *be;
	float	   *data;			/* backend memory */
	int64_t		rows;
	int64_t		cols;
} gnn_tensor;

/* Zero-filled rows x cols tensor. */
gnn_status	gnn_tensor_alloc(gnn_backend *be, int64_t rows, int64_t cols, gnn_tensor *t,
							 gnn_error *err);
void		gnn_tensor_free(gnn_tensor *t);
gnn_status	gnn_tensor_upload(gnn_tensor *t, const float *host, gnn_error *err);
gnn_status	gnn_tensor_download(const gnn_tensor *t, float *host, gnn_error *err);

static inline int64_t
gnn_tensor_numel(const gnn_tensor *t)
{
	return t->rows * t->cols;
}

typedef struct gnn_buf
{
	void	   *p;				/* backend memory */
	size_t		cap;			/* bytes */
} gnn_buf;

/* Make buf hold at least bytes (contents not kept when it grows). */
gnn_status	gnn_buf_ensure(gnn_backend *be, gnn_buf *buf, size_t bytes, gnn_error *err);
void		gnn_buf_free(gnn_backend *be, gnn_buf *buf);

/* Allocate backend memory and copy bytes from host into it (bytes may be 0). */
gnn_status	gnn_dev_upload(gnn_backend *be, const void *host, size_t bytes, void **dev,
						   gnn_error *err);

#endif							/* GNN_TENSOR_H */
