/*
 * dist.c: the core's side of the collectives (dist.h): loads gnn_dist.so on
 * demand, checks its ABI, and turns its status codes and messages into
 * gnn_error.  A handle that saw an error refuses further collectives (the
 * other ranks have failed or will: a job never goes on with a broken mesh).
 */
#include "dist/dist.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct gnn_dist
{
	void	   *dl;
	const gnn_dist_ops *ops;
	void	   *h;
	int			rank;
	int			size;
	bool		failed;
	gnn_dist_counters c;
};

static const gnn_dist_ops *
load_engine(const char *so_path, void **dl_out, gnn_error *err)
{
	const char *path = so_path;
	void	   *dl;
	gnn_dist_entry_fn entry;
	const gnn_dist_ops *ops;

	*dl_out = NULL;
	if (!path || !*path)
		path = getenv("GNN_DIST_SO");
	if (!path || !*path)
		path = "gnn_dist.so";
	if (!(dl = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE)))
	{
		const char *why = dlerror();

		gnn_error_set(err, GNN_ERR_UNSUPPORTED,
					  "distributed training is not available: cannot load \"%s\": %s", path,
					  why ? why : "unknown reason");
		return NULL;
	}
	*(void **) (&entry) = dlsym(dl, GNN_DIST_ENTRY);
	if (!entry)
		*(void **) (&entry) = dlsym(dl, GNN_DIST_ENTRY_NCCL);
	if (!entry || !(ops = entry(GNN_DIST_ABI_VERSION)) || ops->abi_version != GNN_DIST_ABI_VERSION ||
		ops->ops_size != sizeof(gnn_dist_ops))
	{
		dlclose(dl);
		gnn_error_set(err, GNN_ERR_UNSUPPORTED,
					  "distributed training is not available: \"%s\" is not a gnn_dist engine of ABI version %d",
					  path, GNN_DIST_ABI_VERSION);
		return NULL;
	}
	*dl_out = dl;
	return ops;
}

bool
gnn_dist_available(const char *so_path, gnn_error *err)
{
	void	   *dl;

	if (!load_engine(so_path, &dl, err))
		return false;
	dlclose(dl);
	return true;
}

/* the engine's return code and message as a gnn_error */
static gnn_status
engine_error(gnn_dist *d, int rc, const char *what, const char *msg, gnn_error *err)
{
	if (rc == GNN_OK)
		return GNN_OK;
	if (d)
		d->failed = true;
	if (rc < 0 || rc > GNN_ERR_CANCELLED)
		rc = GNN_ERR_BACKEND;
	return gnn_error_set(err, (gnn_status) rc, "%s%s%s", what, msg[0] ? ": " : "", msg);
}

gnn_status
gnn_dist_open(const char *so_path, const gnn_dist_options *o, const gnn_dist_store *st, gnn_dist **out,
			  gnn_error *err)
{
	gnn_dist   *d;
	char		msg[GNN_DIST_MSG_LEN] = "";
	char		what[96];
	int			rc;

	*out = NULL;
	if (!o || !st || !st->set || !st->get || o->size < 1 || o->rank < 0 || o->rank >= o->size)
		return gnn_error_set(err, GNN_ERR_INVALID, "invalid distributed options (rank %d of %d)",
							 o ? o->rank : -1, o ? o->size : -1);
	if (!(d = calloc(1, sizeof(*d))))
		return gnn_error_set(err, GNN_ERR_NOMEM, "out of memory");
	if (!(d->ops = load_engine(so_path, &d->dl, err)))
	{
		free(d);
		return err ? err->status : GNN_ERR_UNSUPPORTED;
	}
	d->rank = o->rank;
	d->size = o->size;
	rc = d->ops->open(o, st, &d->h, msg, sizeof(msg));
	if (rc != GNN_OK)
	{
		snprintf(what, sizeof(what), "rank %d of %d could not meet the other ranks", o->rank, o->size);
		engine_error(d, rc, what, msg, err);
		dlclose(d->dl);
		free(d);
		return err ? err->status : (gnn_status) rc;
	}
	*out = d;
	return GNN_OK;
}

int
gnn_dist_rank(const gnn_dist *d)
{
	return d ? d->rank : 0;
}

int
gnn_dist_size(const gnn_dist *d)
{
	return d ? d->size : 1;
}

#define DIST_CALL(d, err, name, call) \
	do { \
		char		msg_[GNN_DIST_MSG_LEN] = ""; \
		int			rc_; \
		if (!(d)) \
			return gnn_error_set(err, GNN_ERR_INVALID, "no distributed context"); \
		if ((d)->failed) \
			return gnn_error_set(err, GNN_ERR_INVALID, "%s after an earlier distributed error", name); \
		rc_ = (call); \
		return engine_error((d), rc_, name, msg_, err); \
	} while (0)

static gnn_status
dist_allreduce(gnn_dist *d, void *buf, size_t count, gnn_dist_dtype dtype, gnn_error *err)
{
	DIST_CALL(d, err, "allreduce", d->ops->allreduce(d->h, buf, count, (int) dtype, msg_, sizeof(msg_)));
}

gnn_status
gnn_dist_allreduce(gnn_dist *d, void *buf, size_t count, gnn_dist_dtype dtype, gnn_error *err)
{
	double		t0;
	gnn_status	st;

	if (count == 0)
		return GNN_OK;
	t0 = gnn_now_s();
	st = dist_allreduce(d, buf, count, dtype, err);
	if (d)
	{
		d->c.allreduce_calls++;
		d->c.allreduce_bytes += (int64_t) count * (dtype == GNN_DIST_F32 ? 4 : 8);
		d->c.allreduce_s += gnn_now_s() - t0;
	}
	return st;
}

static gnn_status
dist_alltoallv(gnn_dist *d, const void *send, const int64_t *send_counts, void *recv,
			   const int64_t *recv_counts, size_t elem_size, gnn_error *err)
{
	DIST_CALL(d, err, "alltoallv",
			  d->ops->alltoallv(d->h, send, send_counts, recv, recv_counts, elem_size, msg_, sizeof(msg_)));
}

gnn_status
gnn_dist_alltoallv(gnn_dist *d, const void *send, const int64_t *send_counts, void *recv,
				   const int64_t *recv_counts, size_t elem_size, gnn_error *err)
{
	double		t0 = gnn_now_s();
	gnn_status	st = dist_alltoallv(d, send, send_counts, recv, recv_counts, elem_size, err);

	if (d)
	{
		d->c.alltoallv_calls++;
		for (int q = 0; q < d->size; q++)
			if (q != d->rank)
			{
				d->c.alltoallv_sent += send_counts[q] * (int64_t) elem_size;
				d->c.alltoallv_received += recv_counts[q] * (int64_t) elem_size;
			}
		d->c.alltoallv_s += gnn_now_s() - t0;
	}
	return st;
}

gnn_status
gnn_dist_broadcast(gnn_dist *d, void *buf, size_t bytes, int root, gnn_error *err)
{
	DIST_CALL(d, err, "broadcast", d->ops->broadcast(d->h, buf, bytes, root, msg_, sizeof(msg_)));
}

gnn_status
gnn_dist_allgather(gnn_dist *d, const void *in, size_t bytes, void *out, gnn_error *err)
{
	DIST_CALL(d, err, "allgather", d->ops->allgather(d->h, in, bytes, out, msg_, sizeof(msg_)));
}

gnn_status
gnn_dist_barrier(gnn_dist *d, gnn_error *err)
{
	DIST_CALL(d, err, "barrier", d->ops->barrier(d->h, msg_, sizeof(msg_)));
}

void
gnn_dist_counters_get(const gnn_dist *d, gnn_dist_counters *out)
{
	if (d)
		*out = d->c;
	else
		memset(out, 0, sizeof(*out));
}

void
gnn_dist_close(gnn_dist *d)
{
	if (!d)
		return;
	if (d->h)
		d->ops->close(d->h);
	if (d->dl)
		dlclose(d->dl);
	free(d);
}
