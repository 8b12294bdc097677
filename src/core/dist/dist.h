/*
 * dist.h: collectives between the ranks of a distributed job (issue #16).
 *
 * The engine is Gloo (Debian's libgloo-dev, TCP transport).  Its C++ lives
 * in src/dist/gloo.cc, built into its own shared object (gnn_dist.so) that
 * is dlopen'ed on demand, exactly as the CUDA backend is: gnn.so never links
 * Gloo and loads on a machine without it.  That object exports one C symbol
 * (GNN_DIST_ENTRY) returning a table of C functions; every one catches every
 * exception at the boundary and reports it as a status and a message.
 *
 * Rendezvous goes through a key-value store the caller provides as C
 * callbacks (set, get that waits up to a timeout, and meshing, told while
 * the ranks connect to each other after every one is present).  The server side
 * implements it over a table on the coordinator; the core tests over files.
 * The callbacks are only ever called on the thread that called
 * gnn_dist_open (Gloo's own threads never call them), so they may use
 * whatever that thread may use.
 *
 * Every collective has a timeout (gnn_dist_options.timeout_ms): a rank that
 * dies, closes its connection or never comes fails the call on the others
 * with GNN_ERR_BACKEND (peer gone) or GNN_ERR_LIMIT (timed out); nothing
 * waits forever.  After an error the handle is only good for gnn_dist_close.
 */
#ifndef GNN_DIST_H
#define GNN_DIST_H

#include "base/gnn_core.h"

#include <stddef.h>
#include <stdint.h>

/* 2: gnn_dist_store has meshing and forget (an engine reads them: one of another version is refused) */
#define GNN_DIST_ABI_VERSION 2
#define GNN_DIST_ENTRY "gnn_dist_gloo_ops"
/* the NCCL engine's (src/dist/nccl.c, gnn_dist_nccl.so): GPU ranks */
#define GNN_DIST_ENTRY_NCCL "gnn_dist_nccl_ops"
#define GNN_DIST_MSG_LEN 1024

/* a store callback's result */
typedef enum gnn_dist_store_status
{
	GNN_DIST_STORE_OK = 0,
	GNN_DIST_STORE_TIMEOUT,		/* get: the key did not appear in time */
	GNN_DIST_STORE_ERROR		/* anything else; msg says what */
} gnn_dist_store_status;

typedef struct gnn_dist_store
{
	void	   *arg;
	/* store bytes under key (replacing any value) */
	gnn_dist_store_status (*set) (void *arg, const char *key, const void *data, size_t len,
								  char *msg, size_t msglen);
	/*
	 * the value of key, waiting up to timeout_ms for it to appear; *data is
	 * malloc'ed (the caller frees it)
	 */
	gnn_dist_store_status (*get) (void *arg, const char *key, int timeout_ms, void **data, size_t *len,
								  char *msg, size_t msglen);
	/*
	 * optional (NULL: none): on = 1 once every rank is present and the
	 * ranks connect to each other, 0 when that is over.  A rank that leaves
	 * then leaves the others waiting in the engine, where neither a cancel
	 * nor a lost connection reaches them (up to the timeout), so a store
	 * does not fail a get or set for a cancel while it is on: the rank
	 * finishes connecting (milliseconds) and stops after.
	 */
	void		(*meshing) (void *arg, int on);
	/*
	 * optional (NULL: none): remove key.  A rank whose open fails removes
	 * every key it set: a store that only its coordinator clears, when its
	 * job ends, would keep those of a rank that failed after it ended, or
	 * that it never met.  The engine names its keys; the store need not.
	 */
	void		(*forget) (void *arg, const char *key);
} gnn_dist_store;

typedef struct gnn_dist_options
{
	int			rank;
	int			size;
	/* the address this rank listens on and advertises ("127.0.0.1", a host name); NULL: loopback */
	const char *host;
	/* keys are "<prefix>/<gloo's key>": one prefix per job and generation, so a retry never meets a stale run */
	const char *prefix;
	int			timeout_ms;		/* rendezvous and every collective; <= 0: 30 s */
} gnn_dist_options;

typedef enum gnn_dist_dtype
{
	GNN_DIST_F32 = 0,
	GNN_DIST_F64,
	GNN_DIST_I64
} gnn_dist_dtype;

/* the table gnn_dist.so exports; every function returns a gnn_status and fills msg on error */
typedef struct gnn_dist_ops
{
	int			abi_version;
	size_t		ops_size;
	const char *engine;			/* "gloo <version>" */
	int			(*open) (const gnn_dist_options *o, const gnn_dist_store *st, void **handle,
						 char *msg, size_t msglen);
	/* sum over ranks, in place */
	int			(*allreduce) (void *h, void *buf, size_t count, int dtype, char *msg, size_t msglen);
	/* send_counts[r] / recv_counts[r]: elements of elem_size bytes to / from rank r, packed by rank */
	int			(*alltoallv) (void *h, const void *send, const int64_t *send_counts, void *recv,
							  const int64_t *recv_counts, size_t elem_size, char *msg, size_t msglen);
	int			(*broadcast) (void *h, void *buf, size_t bytes, int root, char *msg, size_t msglen);
	/* every rank's `bytes` bytes, in rank order, into out (size * bytes) */
	int			(*allgather) (void *h, const void *in, size_t bytes, void *out, char *msg, size_t msglen);
	int			(*barrier) (void *h, char *msg, size_t msglen);
	void		(*close) (void *h);
} gnn_dist_ops;

typedef const gnn_dist_ops *(*gnn_dist_entry_fn) (int abi_version);

typedef struct gnn_dist gnn_dist;

/*
 * Load the engine (so_path; NULL: env GNN_DIST_SO, else "gnn_dist.so" on the
 * loader's path) and meet the other ranks through the store.
 * GNN_ERR_UNSUPPORTED when the engine is not built or not installed.
 */
gnn_status	gnn_dist_open(const char *so_path, const gnn_dist_options *o, const gnn_dist_store *st,
						  gnn_dist **out, gnn_error *err);
/* whether the engine can be loaded (a message in err when not) */
bool		gnn_dist_available(const char *so_path, gnn_error *err);
int			gnn_dist_rank(const gnn_dist *d);
int			gnn_dist_size(const gnn_dist *d);
gnn_status	gnn_dist_allreduce(gnn_dist *d, void *buf, size_t count, gnn_dist_dtype dtype, gnn_error *err);
gnn_status	gnn_dist_alltoallv(gnn_dist *d, const void *send, const int64_t *send_counts, void *recv,
							   const int64_t *recv_counts, size_t elem_size, gnn_error *err);
gnn_status	gnn_dist_broadcast(gnn_dist *d, void *buf, size_t bytes, int root, gnn_error *err);
gnn_status	gnn_dist_allgather(gnn_dist *d, const void *in, size_t bytes, void *out, gnn_error *err);
gnn_status	gnn_dist_barrier(gnn_dist *d, gnn_error *err);

/*
 * What a handle's allreduce and alltoallv calls have cost so far, for
 * benchmarks and per-epoch metrics (issue #16, "Scale"): calls, wall seconds
 * inside them (waits for slower ranks included: a collective ends when the
 * last rank arrives) and bytes: an allreduce's buffer (a ring moves about
 * 2 (size - 1) / size of it each way per rank), an alltoallv's elements sent
 * to and received from other ranks.  Two clock reads a call.
 */
typedef struct gnn_dist_counters
{
	int64_t		allreduce_calls;
	int64_t		allreduce_bytes;
	double		allreduce_s;
	int64_t		alltoallv_calls;
	int64_t		alltoallv_sent;
	int64_t		alltoallv_received;
	double		alltoallv_s;
} gnn_dist_counters;

/* d's counters since it opened (zeros for NULL) */
void		gnn_dist_counters_get(const gnn_dist *d, gnn_dist_counters *out);
/* tear down (connections, Gloo's threads, the engine's handle); NULL is fine */
void		gnn_dist_close(gnn_dist *d);

#endif							/* GNN_DIST_H */
