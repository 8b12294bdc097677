/*
 * nccl.c: the collectives of src/core/dist/dist.h on NCCL, for ranks that
 * each train on a GPU of their own (issue #43).
 *
 * Built into gnn_dist_nccl.so where the CUDA toolkit ships nccl.h and
 * libnccl (as gnn_dist.so is where Gloo is), dlopen'ed by dist.c on demand:
 * gnn.so never links CUDA or NCCL.  The one exported symbol
 * (GNN_DIST_ENTRY_NCCL) returns the same table of C functions as Gloo's.
 *
 * Buffers may be device or host memory (cudaPointerGetAttributes says
 * which): host buffers are staged through a device buffer of the engine's,
 * so the core's host-side callers (the CPU backend's gradients, the halo's
 * rows) work unchanged, and device ones (the CUDA backend's gradients) go
 * straight to NCCL.  Each rank takes the GPU rank % devices.
 *
 * Rendezvous: rank 0 makes the NCCL unique id and sets it in the caller's
 * store under "<prefix>/nccl-id"; the others get it, as Gloo's ranks meet.
 * Nothing waits forever: the communicator is non-blocking
 * (config.blocking = 0) and every call is polled (ncclCommGetAsyncError,
 * cudaStreamQuery) up to the timeout, then the communicator is aborted:
 * GNN_ERR_LIMIT for a timeout, GNN_ERR_BACKEND for a failure,
 * GNN_ERR_UNSUPPORTED where there is no GPU.  After an error the handle is
 * only good for close.
 */
#include "dist/dist.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define EXPORT __attribute__((visibility("default")))

typedef struct nccl_handle
{
	ncclComm_t	comm;
	cudaStream_t stream;
	int			rank;
	int			size;
	int			device;
	int			timeout_ms;
	void	   *stage;			/* device staging for host buffers */
	size_t		stage_cap;
} nccl_handle;

static int
fail(char *msg, size_t msglen, int code, const char *fmt, ...)
{
	va_list		ap;

	va_start(ap, fmt);
	vsnprintf(msg, msglen, fmt, ap);
	va_end(ap);
	return code;
}

static double
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/*
 * Wait for the communicator's pending work (the stream's too when wait_stream)
 * until the deadline; abort it on an error or timeout.
 */
static int
settle(nccl_handle *h, bool wait_stream, const char *what, char *msg, size_t msglen)
{
	double		deadline = now_ms() + h->timeout_ms;

	for (;;)
	{
		ncclResult_t state = ncclSuccess;
		cudaError_t ce = cudaSuccess;

		if (ncclCommGetAsyncError(h->comm, &state) != ncclSuccess)
			state = ncclSystemError;
		if (state != ncclSuccess && state != ncclInProgress)
		{
			ncclCommAbort(h->comm);
			h->comm = NULL;
			return fail(msg, msglen, GNN_ERR_BACKEND, "%s: NCCL: %s (a peer gone or failing)", what,
						ncclGetErrorString(state));
		}
		if (state == ncclSuccess)
		{
			if (!wait_stream || (ce = cudaStreamQuery(h->stream)) == cudaSuccess)
				return GNN_OK;
			if (ce != cudaErrorNotReady)
			{
				ncclCommAbort(h->comm);
				h->comm = NULL;
				return fail(msg, msglen, GNN_ERR_BACKEND, "%s: CUDA: %s", what, cudaGetErrorString(ce));
			}
		}
		if (now_ms() > deadline)
		{
			ncclCommAbort(h->comm);
			h->comm = NULL;
			return fail(msg, msglen, GNN_ERR_LIMIT, "%s: timed out after %d ms waiting for the other ranks", what,
						h->timeout_ms);
		}
		{
			struct timespec ts = {0, 100000};	/* 0.1 ms */

			nanosleep(&ts, NULL);
		}
	}
}

static int
check(nccl_handle *h, ncclResult_t r, const char *what, char *msg, size_t msglen)
{
	if (r == ncclSuccess || r == ncclInProgress)
		return GNN_OK;
	if (h->comm)
		ncclCommAbort(h->comm);
	h->comm = NULL;
	return fail(msg, msglen, GNN_ERR_BACKEND, "%s: NCCL: %s", what, ncclGetErrorString(r));
}

static bool
on_device(const void *p)
{
	struct cudaPointerAttributes a;

	if (cudaPointerGetAttributes(&a, p) != cudaSuccess)
	{
		(void) cudaGetLastError();
		return false;
	}
	return a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged;
}

/* the engine's staging buffer, at least bytes long */
static int
ensure_stage(nccl_handle *h, size_t bytes, char *msg, size_t msglen)
{
	cudaError_t ce;

	if (bytes > h->stage_cap)
	{
		void	   *b = NULL;

		if (h->stage)
			cudaFree(h->stage);
		h->stage = NULL;
		h->stage_cap = 0;
		if ((ce = cudaMalloc(&b, bytes)) != cudaSuccess)
			return fail(msg, msglen, GNN_ERR_NOMEM, "NCCL staging: cudaMalloc(%zu): %s", bytes, cudaGetErrorString(ce));
		h->stage = b;
		h->stage_cap = bytes;
	}
	return GNN_OK;
}

/* a device buffer of bytes for a host buffer (the engine's staging, filled when copy_in), or p itself */
static int
staged(nccl_handle *h, void *p, size_t bytes, bool copy_in, void **dev, char *msg, size_t msglen)
{
	cudaError_t ce;
	int			rc;

	if (on_device(p))
	{
		*dev = p;
		return GNN_OK;
	}
	if ((rc = ensure_stage(h, bytes, msg, msglen)) != GNN_OK)
		return rc;
	*dev = h->stage;
	if (copy_in && bytes > 0 &&
		(ce = cudaMemcpyAsync(h->stage, p, bytes, cudaMemcpyHostToDevice, h->stream)) != cudaSuccess)
		return fail(msg, msglen, GNN_ERR_BACKEND, "NCCL staging: %s", cudaGetErrorString(ce));
	return GNN_OK;
}

static int
staged_out(nccl_handle *h, void *p, const void *dev, size_t bytes, char *msg, size_t msglen)
{
	cudaError_t ce;

	if (p == dev || bytes == 0)
		return GNN_OK;
	if ((ce = cudaMemcpyAsync(p, dev, bytes, cudaMemcpyDeviceToHost, h->stream)) != cudaSuccess)
		return fail(msg, msglen, GNN_ERR_BACKEND, "NCCL staging: %s", cudaGetErrorString(ce));
	return GNN_OK;
}

static int
nccl_open(const gnn_dist_options *o, const gnn_dist_store *st, void **handle, char *msg, size_t msglen)
{
	nccl_handle *h;
	ncclUniqueId id;
	ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
	char		key[600];
	int			devices = 0,
				rc;
	cudaError_t ce;

	*handle = NULL;
	if ((ce = cudaGetDeviceCount(&devices)) != cudaSuccess || devices < 1)
		return fail(msg, msglen, GNN_ERR_UNSUPPORTED, "NCCL needs a GPU on every rank; rank %d has none (%s)", o->rank,
					ce != cudaSuccess ? cudaGetErrorString(ce) : "no device");
	if (!(h = calloc(1, sizeof(*h))))
		return fail(msg, msglen, GNN_ERR_NOMEM, "out of memory");
	h->rank = o->rank;
	h->size = o->size;
	h->device = o->rank % devices;
	h->timeout_ms = o->timeout_ms > 0 ? o->timeout_ms : 30000;
	snprintf(key, sizeof(key), "%s/nccl-id", o->prefix ? o->prefix : "gnn");
	if ((ce = cudaSetDevice(h->device)) != cudaSuccess ||
		(ce = cudaStreamCreateWithFlags(&h->stream, cudaStreamNonBlocking)) != cudaSuccess)
	{
		int			dev = h->device;

		free(h);
		return fail(msg, msglen, GNN_ERR_BACKEND, "rank %d: GPU %d: %s", o->rank, dev, cudaGetErrorString(ce));
	}
	/* rank 0's unique id, through the caller's store */
	if (o->rank == 0)
	{
		ncclResult_t r = ncclGetUniqueId(&id);

		if (r != ncclSuccess)
			rc = fail(msg, msglen, GNN_ERR_BACKEND, "ncclGetUniqueId: %s", ncclGetErrorString(r));
		else
			rc = st->set(st->arg, key, &id, sizeof(id), msg, msglen) == GNN_DIST_STORE_OK ? GNN_OK : GNN_ERR_BACKEND;
	}
	else
	{
		void	   *data = NULL;
		size_t		len = 0;
		gnn_dist_store_status s = st->get(st->arg, key, h->timeout_ms, &data, &len, msg, msglen);

		rc = s == GNN_DIST_STORE_OK && len == sizeof(id) ? GNN_OK :
			s == GNN_DIST_STORE_TIMEOUT ? GNN_ERR_LIMIT : GNN_ERR_BACKEND;
		if (rc == GNN_OK)
			memcpy(&id, data, sizeof(id));
		else if (s == GNN_DIST_STORE_OK)
			fail(msg, msglen, GNN_ERR_BACKEND, "rendezvous: \"%s\" holds %zu bytes, not an NCCL id", key, len);
		else if (s == GNN_DIST_STORE_TIMEOUT && !msg[0])
			fail(msg, msglen, GNN_ERR_LIMIT, "rendezvous: rank 0's NCCL id did not come within %d ms", h->timeout_ms);
		free(data);
	}
	if (rc == GNN_OK)
	{
		cfg.blocking = 0;
		rc = check(h, ncclCommInitRankConfig(&h->comm, o->size, id, o->rank, &cfg), "ncclCommInitRankConfig", msg,
				   msglen);
		if (rc == GNN_OK)
			rc = settle(h, false, "meeting the other ranks", msg, msglen);
	}
	if (rc != GNN_OK)
	{
		cudaStreamDestroy(h->stream);
		free(h);
		return rc;
	}
	*handle = h;
	return GNN_OK;
}

static ncclDataType_t
nccl_type(int dtype, size_t *elem)
{
	switch (dtype)
	{
		case GNN_DIST_F64:
			*elem = 8;
			return ncclFloat64;
		case GNN_DIST_I64:
			*elem = 8;
			return ncclInt64;
		default:
			*elem = 4;
			return ncclFloat32;
	}
}

static int
nccl_allreduce(void *hp, void *buf, size_t count, int dtype, char *msg, size_t msglen)
{
	nccl_handle *h = hp;
	size_t		elem;
	ncclDataType_t t = nccl_type(dtype, &elem);
	void	   *dev;
	int			rc;

	if (!h->comm)
		return fail(msg, msglen, GNN_ERR_BACKEND, "the NCCL communicator failed before");
	if ((rc = staged(h, buf, count * elem, true, &dev, msg, msglen)) != GNN_OK ||
		(rc = check(h, ncclAllReduce(dev, dev, count, t, ncclSum, h->comm, h->stream), "allreduce", msg, msglen)) != GNN_OK ||
		(rc = staged_out(h, buf, dev, count * elem, msg, msglen)) != GNN_OK)
		return rc;
	return settle(h, true, "allreduce", msg, msglen);
}

static int
nccl_alltoallv(void *hp, const void *send, const int64_t *send_counts, void *recv, const int64_t *recv_counts,
			   size_t elem_size, char *msg, size_t msglen)
{
	nccl_handle *h = hp;
	size_t		sbytes = 0,
				rbytes = 0,
				so = 0,
				ro = 0;
	void	   *dsend,
			   *drecv;
	int			rc;
	bool		host_send = !on_device(send),
				host_recv = !on_device(recv);

	if (!h->comm)
		return fail(msg, msglen, GNN_ERR_BACKEND, "the NCCL communicator failed before");
	for (int r = 0; r < h->size; r++)
	{
		sbytes += (size_t) send_counts[r] * elem_size;
		rbytes += (size_t) recv_counts[r] * elem_size;
	}
	/* host buffers: both halves in one staging buffer, sent from its front, received at its back */
	if (host_send || host_recv)
	{
		if ((rc = ensure_stage(h, sbytes + rbytes, msg, msglen)) != GNN_OK)
			return rc;
		dsend = h->stage;
		drecv = (char *) dsend + sbytes;
		if (!host_send)
			dsend = (void *) send;
		else if (sbytes > 0 && cudaMemcpyAsync(dsend, send, sbytes, cudaMemcpyHostToDevice, h->stream) != cudaSuccess)
			return fail(msg, msglen, GNN_ERR_BACKEND, "alltoallv: staging the rows out failed");
		if (!host_recv)
			drecv = recv;
	}
	else
	{
		dsend = (void *) send;
		drecv = recv;
	}
	if ((rc = check(h, ncclGroupStart(), "alltoallv", msg, msglen)) != GNN_OK)
		return rc;
	for (int r = 0; r < h->size; r++)
	{
		size_t		sb = (size_t) send_counts[r] * elem_size,
					rb = (size_t) recv_counts[r] * elem_size;

		if (r == h->rank)
		{
			if (sb > 0 && cudaMemcpyAsync((char *) drecv + ro, (char *) dsend + so, sb < rb ? sb : rb,
										  cudaMemcpyDeviceToDevice, h->stream) != cudaSuccess)
				rc = fail(msg, msglen, GNN_ERR_BACKEND, "alltoallv: the rank's own rows");
		}
		else
		{
			if (sb > 0 && rc == GNN_OK)
				rc = check(h, ncclSend((char *) dsend + so, sb, ncclChar, r, h->comm, h->stream), "alltoallv", msg, msglen);
			if (rb > 0 && rc == GNN_OK)
				rc = check(h, ncclRecv((char *) drecv + ro, rb, ncclChar, r, h->comm, h->stream), "alltoallv", msg, msglen);
		}
		so += sb;
		ro += rb;
	}
	if (h->comm && check(h, ncclGroupEnd(), "alltoallv", msg, msglen) != GNN_OK && rc == GNN_OK)
		rc = GNN_ERR_BACKEND;
	if (rc != GNN_OK)
		return rc;
	if (host_recv && rbytes > 0 && cudaMemcpyAsync(recv, drecv, rbytes, cudaMemcpyDeviceToHost, h->stream) != cudaSuccess)
		return fail(msg, msglen, GNN_ERR_BACKEND, "alltoallv: staging the rows in failed");
	return settle(h, true, "alltoallv", msg, msglen);
}

static int
nccl_broadcast(void *hp, void *buf, size_t bytes, int root, char *msg, size_t msglen)
{
	nccl_handle *h = hp;
	void	   *dev;
	int			rc;

	if (!h->comm)
		return fail(msg, msglen, GNN_ERR_BACKEND, "the NCCL communicator failed before");
	if ((rc = staged(h, buf, bytes, h->rank == root, &dev, msg, msglen)) != GNN_OK ||
		(rc = check(h, ncclBroadcast(dev, dev, bytes, ncclChar, root, h->comm, h->stream), "broadcast", msg, msglen)) != GNN_OK ||
		(rc = staged_out(h, buf, dev, bytes, msg, msglen)) != GNN_OK)
		return rc;
	return settle(h, true, "broadcast", msg, msglen);
}

static int
nccl_allgather(void *hp, const void *in, size_t bytes, void *out, char *msg, size_t msglen)
{
	nccl_handle *h = hp;
	size_t		total = bytes * (size_t) h->size;
	void	   *dev;
	int			rc;

	if (!h->comm)
		return fail(msg, msglen, GNN_ERR_BACKEND, "the NCCL communicator failed before");
	/* the rank's share in place in the output, as NCCL allows */
	if (on_device(out))
		dev = out;
	else if ((rc = staged(h, out, total, false, &dev, msg, msglen)) != GNN_OK)
		return rc;
	if (bytes > 0 && cudaMemcpyAsync((char *) dev + bytes * h->rank, in, bytes, cudaMemcpyDefault, h->stream) != cudaSuccess)
		return fail(msg, msglen, GNN_ERR_BACKEND, "allgather: the rank's share");
	if ((rc = check(h, ncclAllGather((char *) dev + bytes * h->rank, dev, bytes, ncclChar, h->comm, h->stream),
					"allgather", msg, msglen)) != GNN_OK ||
		(rc = staged_out(h, out, dev, total, msg, msglen)) != GNN_OK)
		return rc;
	return settle(h, true, "allgather", msg, msglen);
}

static int
nccl_barrier(void *hp, char *msg, size_t msglen)
{
	float		one = 1.0f;

	return nccl_allreduce(hp, &one, 1, GNN_DIST_F32, msg, msglen);
}

static void
nccl_close(void *hp)
{
	nccl_handle *h = hp;

	if (!h)
		return;
	if (h->comm)
		ncclCommAbort(h->comm);	/* (destroy would wait for peers that may be gone) */
	if (h->stage)
		cudaFree(h->stage);
	if (h->stream)
		cudaStreamDestroy(h->stream);
	free(h);
}

static char engine_name[64];

static const gnn_dist_ops nccl_ops = {
	GNN_DIST_ABI_VERSION,
	sizeof(gnn_dist_ops),
	engine_name,
	nccl_open,
	nccl_allreduce,
	nccl_alltoallv,
	nccl_broadcast,
	nccl_allgather,
	nccl_barrier,
	nccl_close
};

EXPORT const gnn_dist_ops *
gnn_dist_nccl_ops(int abi_version)
{
	int			v = 0;

	if (abi_version != GNN_DIST_ABI_VERSION)
		return NULL;
	if (ncclGetVersion(&v) != ncclSuccess)
		v = NCCL_VERSION_CODE;
	snprintf(engine_name, sizeof(engine_name), "nccl %d.%d.%d", v / 10000, (v / 100) % 100, v % 100);
	return &nccl_ops;
}
