/*
 * gloo.cc: the collectives of src/core/dist.h on Gloo (TCP transport).
 *
 * Built into gnn_dist.so, dlopen'ed by src/core/dist.c.  This is the only
 * file that sees C++: the one exported symbol returns a table of C
 * functions, and each of them catches every exception (Gloo's IoException
 * and assertions, std::bad_alloc, anything) and returns a status and a
 * message.  No PostgreSQL call is made here; the rendezvous store is the
 * caller's C callbacks (set, get, meshing), invoked only from the thread that opens the
 * context (Gloo's connectFullMesh runs on it).
 */
#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/alltoallv.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/config.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/tcp/device.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

extern "C"
{
#include "dist/dist.h"
}

namespace
{

/*
 * A rank's pairs are not closed within this of their making.  A peer reads
 * this rank's addresses and connects the moment they are set; a close while
 * that connection has completed in the kernel, but not yet in the peer's
 * Gloo loop, resets it there, where Gloo's getpeername check throws on the
 * loop's own thread and aborts the peer's process (test_dist saw it 1 in 30
 * closes of a rank cancelled while connecting, and once in a make test for
 * a rank whose store failed while connecting).  After the pause the peer's
 * loop has taken the connection, and sees the close as a broken pair, an
 * error its rank reports.  Two places close them: a store call failing in
 * Gloo's connectFullMesh, which closes the pairs as the exception leaves it
 * (CStore pauses before it throws), and d_close before any collective.
 */
const std::chrono::milliseconds pairs_settle(100);

/* a store key that did not appear in time: reported as GNN_ERR_LIMIT */
struct StoreTimeout : public std::runtime_error
{
	explicit StoreTimeout(const std::string &m) : std::runtime_error(m) {}
};

/* the caller's store: set / get with a timeout, keys under the job's prefix */
class CStore : public gloo::rendezvous::Store
{
  public:
	CStore(const gnn_dist_store &st, const std::string &prefix, int timeout_ms)
		: st_(st), prefix_(prefix), timeout_ms_(timeout_ms) {}

	void set(const std::string &key, const std::vector<char> &data) override
	{
		char		msg[GNN_DIST_MSG_LEN] = "";
		std::string k = prefix_ + "/" + key;

		set_.push_back(k);
		if (st_.set(st_.arg, k.c_str(), data.data(), data.size(), msg, sizeof(msg)) != GNN_DIST_STORE_OK)
		{
			pause_if_pairs();
			throw std::runtime_error("rendezvous store: cannot set \"" + k + "\": " + msg);
		}
	}

	/*
	 * Gloo's connectFullMesh makes this rank's pairs between its store
	 * calls, and closes them as soon as one throws: while they may exist a
	 * failed call pauses first (pairs_settle)
	 */
	bool		pairs = false;

	/* every key this rank set (ours and Gloo's), removed: its open failed (gnn_dist_store.forget) */
	void forget() noexcept
	{
		if (!st_.forget)
			return;
		for (const auto &k : set_)
			st_.forget(st_.arg, k.c_str());
		set_.clear();
	}

	std::vector<char> get(const std::string &key) override
	{
		return fetch(key, timeout_ms_);
	}

	void wait(const std::vector<std::string> &keys) override
	{
		wait(keys, std::chrono::milliseconds(timeout_ms_));
	}

	/* (never less than the job's timeout: d_open gives Gloo a fifth of it, for its connect waits) */
	void wait(const std::vector<std::string> &keys, const std::chrono::milliseconds &timeout) override
	{
		auto		deadline = std::chrono::steady_clock::now() +
			std::max(timeout, std::chrono::milliseconds(timeout_ms_));

		for (const auto &key : keys)
		{
			auto		left = std::chrono::duration_cast<std::chrono::milliseconds>(
												deadline - std::chrono::steady_clock::now()).count();

			(void) fetch(key, left > 0 ? (int) left : 0);
		}
	}

  private:
	std::vector<char> fetch(const std::string &key, int timeout_ms)
	{
		char		msg[GNN_DIST_MSG_LEN] = "";
		std::string k = prefix_ + "/" + key;
		void	   *data = nullptr;
		size_t		len = 0;
		gnn_dist_store_status rc = st_.get(st_.arg, k.c_str(), timeout_ms, &data, &len, msg, sizeof(msg));

		if (rc != GNN_DIST_STORE_OK)
			pause_if_pairs();
		if (rc == GNN_DIST_STORE_TIMEOUT)
			throw StoreTimeout("rendezvous: \"" + k + "\" did not appear within " +
							   std::to_string(timeout_ms_) + " ms (a rank that never started, or started late)");
		if (rc != GNN_DIST_STORE_OK)
			throw std::runtime_error("rendezvous store: cannot get \"" + k + "\": " + msg);
		std::vector<char> out(static_cast<char *>(data), static_cast<char *>(data) + len);

		free(data);
		return out;
	}

	void pause_if_pairs()
	{
		if (pairs)
			std::this_thread::sleep_for(pairs_settle);
	}

	gnn_dist_store st_;
	std::string prefix_;
	int			timeout_ms_;
	std::vector<std::string> set_;
};

/* the store's keys of this rank forgotten on leaving scope, unless the open succeeded (kept) */
struct ForgetUnlessKept
{
	explicit ForgetUnlessKept(CStore &s) : s_(s) {}
	~ForgetUnlessKept()
	{
		if (!kept)
			s_.forget();
	}
	ForgetUnlessKept(const ForgetUnlessKept &) = delete;
	ForgetUnlessKept &operator=(const ForgetUnlessKept &) = delete;

	bool		kept = false;

  private:
	CStore	   &s_;
};

/* the store's meshing callback on while in scope (an exception included) */
struct Meshing
{
	explicit Meshing(const gnn_dist_store &st) : st_(st)
	{
		if (st_.meshing)
			st_.meshing(st_.arg, 1);
	}
	~Meshing()
	{
		if (st_.meshing)
			st_.meshing(st_.arg, 0);
	}
	Meshing(const Meshing &) = delete;
	Meshing &operator=(const Meshing &) = delete;

	const gnn_dist_store &st_;
};

struct Handle
{
	std::shared_ptr<gloo::transport::Device> dev;
	std::shared_ptr<gloo::rendezvous::Context> ctx;
	std::chrono::milliseconds timeout;
	uint32_t	tag = 1;		/* the next collective's (1: none yet) */
	std::chrono::steady_clock::time_point meshed;	/* when connectFullMesh returned (pairs_settle) */
};

void
put_msg(char *msg, size_t msglen, const char *what)
{
	if (msg && msglen)
		snprintf(msg, msglen, "%s", what);
}

/* a Gloo message without its "[file:line] " prefix */
const char *
strip_location(const char *m)
{
	if (m[0] == '[')
	{
		const char *e = strstr(m, "] ");

		if (e)
			return e + 2;
	}
	return m;
}

int
timeout_like(const char *m)
{
	return strstr(m, "Timed out") || strstr(m, "timed out") || strstr(m, "Timeout") || strstr(m, "timeout");
}

/* run f, turning every exception into a status and a message */
template <typename F>
int
guarded(char *msg, size_t msglen, F f)
{
	try
	{
		f();
		return GNN_OK;
	}
	catch (const StoreTimeout &e)
	{
		put_msg(msg, msglen, e.what());
		return GNN_ERR_LIMIT;
	}
	catch (const gloo::IoException &e)
	{
		const char *m = strip_location(e.what());

		put_msg(msg, msglen, m);
		return timeout_like(m) ? GNN_ERR_LIMIT : GNN_ERR_BACKEND;
	}
	catch (const std::bad_alloc &)
	{
		put_msg(msg, msglen, "out of memory");
		return GNN_ERR_NOMEM;
	}
	catch (const std::exception &e)
	{
		const char *m = strip_location(e.what());

		put_msg(msg, msglen, m);
		return timeout_like(m) ? GNN_ERR_LIMIT : GNN_ERR_BACKEND;
	}
	catch (...)
	{
		put_msg(msg, msglen, "unknown exception in the collective engine");
		return GNN_ERR_BACKEND;
	}
}

int
d_open(const gnn_dist_options *o, const gnn_dist_store *st, void **handle, char *msg, size_t msglen)
{
	*handle = nullptr;
	return guarded(msg, msglen, [&]() {
		int			ms = o->timeout_ms > 0 ? o->timeout_ms : 30000;
		gloo::transport::tcp::attr attr;
		std::unique_ptr<Handle> h(new Handle());

		attr.hostname = o->host && *o->host ? o->host : "127.0.0.1";
		h->timeout = std::chrono::milliseconds(ms);
		h->dev = gloo::transport::tcp::CreateDevice(attr);
		h->ctx = std::make_shared<gloo::rendezvous::Context>(o->rank, o->size);
		h->ctx->setTimeout(h->timeout);
		CStore		store(*st, o->prefix ? o->prefix : "gnn", ms);
		ForgetUnlessKept forget(store);
		std::vector<std::string> ready;

		/*
		 * Every rank present before any pair connects: a pair whose other
		 * side is gone waits in Gloo for a connection that never comes,
		 * where neither our timeout nor a cancel reaches it; waiting here,
		 * in the store, both do (and a rank that ends early is seen).
		 */
		store.set("ready/" + std::to_string(o->rank), std::vector<char>(1, 1));
		for (int q = 0; q < o->size; q++)
			ready.push_back("ready/" + std::to_string(q));
		store.wait(ready, std::chrono::milliseconds(ms));

		/*
		 * Connecting.  The caller's store ignores cancels meanwhile
		 * (st->meshing): a rank that gave up here would leave the others in
		 * that wait.  Gloo waits five times the context's timeout for a
		 * pair's first connection: a fifth of ours bounds it by ours (a
		 * rank that died between the barrier and its connect).
		 */
		Meshing		meshing(*st);

		h->ctx->setTimeout(std::max(std::chrono::milliseconds(1), h->timeout / 5));
		store.pairs = true;
		h->ctx->connectFullMesh(store, h->dev);
		store.pairs = false;
		h->meshed = std::chrono::steady_clock::now();
		h->ctx->setTimeout(h->timeout);
		forget.kept = true;
		*handle = h.release();
	});
}

int
d_allreduce(void *hp, void *buf, size_t count, int dtype, char *msg, size_t msglen)
{
	Handle	   *h = static_cast<Handle *>(hp);

	return guarded(msg, msglen, [&]() {
		gloo::AllreduceOptions opts(h->ctx);

		switch (dtype)
		{
			case GNN_DIST_F32:
				opts.setOutput(static_cast<float *>(buf), count);
				opts.setReduceFunction(
					static_cast<void (*)(void *, const void *, const void *, size_t)>(&gloo::sum<float>));
				break;
			case GNN_DIST_F64:
				opts.setOutput(static_cast<double *>(buf), count);
				opts.setReduceFunction(
					static_cast<void (*)(void *, const void *, const void *, size_t)>(&gloo::sum<double>));
				break;
			case GNN_DIST_I64:
				opts.setOutput(static_cast<int64_t *>(buf), count);
				opts.setReduceFunction(
					static_cast<void (*)(void *, const void *, const void *, size_t)>(&gloo::sum<int64_t>));
				break;
			default:
				throw std::invalid_argument("allreduce: unknown element type");
		}
		opts.setTag(h->tag++);
		opts.setTimeout(h->timeout);
		gloo::allreduce(opts);
	});
}

int
d_alltoallv(void *hp, const void *send, const int64_t *send_counts, void *recv, const int64_t *recv_counts,
			size_t elem_size, char *msg, size_t msglen)
{
	Handle	   *h = static_cast<Handle *>(hp);

	return guarded(msg, msglen, [&]() {
		int			n = h->ctx->size;
		std::vector<int64_t> sc(n), rc(n);
		char		dummy_in = 0,
					dummy_out = 0;
		int64_t		stot = 0,
					rtot = 0;

		for (int r = 0; r < n; r++)
		{
			if (send_counts[r] < 0 || recv_counts[r] < 0)
				throw std::invalid_argument("alltoallv: a negative count");
			sc[r] = send_counts[r] * (int64_t) elem_size;
			rc[r] = recv_counts[r] * (int64_t) elem_size;
			stot += sc[r];
			rtot += rc[r];
		}
		gloo::AlltoallvOptions opts(h->ctx);

		/* Gloo wants a buffer even when a side moves nothing */
		opts.setInput(stot ? const_cast<char *>(static_cast<const char *>(send)) : &dummy_in, sc);
		opts.setOutput(rtot ? static_cast<char *>(recv) : &dummy_out, rc);
		opts.setTag(h->tag++);
		opts.setTimeout(h->timeout);
		gloo::alltoallv(opts);
	});
}

int
d_broadcast(void *hp, void *buf, size_t bytes, int root, char *msg, size_t msglen)
{
	Handle	   *h = static_cast<Handle *>(hp);

	return guarded(msg, msglen, [&]() {
		if (root < 0 || root >= h->ctx->size)
			throw std::invalid_argument("broadcast: root out of range");
		if (bytes == 0)
			return;
		gloo::BroadcastOptions opts(h->ctx);

		opts.setOutput(static_cast<char *>(buf), bytes);
		opts.setRoot(root);
		opts.setTag(h->tag++);
		opts.setTimeout(h->timeout);
		gloo::broadcast(opts);
	});
}

int
d_allgather(void *hp, const void *in, size_t bytes, void *out, char *msg, size_t msglen)
{
	Handle	   *h = static_cast<Handle *>(hp);

	return guarded(msg, msglen, [&]() {
		if (bytes == 0)
			return;
		gloo::AllgatherOptions opts(h->ctx);

		opts.setInput(const_cast<char *>(static_cast<const char *>(in)), bytes);
		opts.setOutput(static_cast<char *>(out), bytes * (size_t) h->ctx->size);
		opts.setTag(h->tag++);
		opts.setTimeout(h->timeout);
		gloo::allgather(opts);
	});
}

int
d_barrier(void *hp, char *msg, size_t msglen)
{
	Handle	   *h = static_cast<Handle *>(hp);

	return guarded(msg, msglen, [&]() {
		gloo::BarrierOptions opts(h->ctx);

		opts.setTag(h->tag++);
		opts.setTimeout(h->timeout);
		gloo::barrier(opts);
	});
}

void
d_close(void *hp)
{
	Handle	   *h = static_cast<Handle *>(hp);
	char		msg[GNN_DIST_MSG_LEN];

	/*
	 * closed before any collective (a rank cancelled while it connected):
	 * the peers' loops take their connections first (pairs_settle); a
	 * collective done has shown every peer connected
	 */
	if (h->tag == 1)
		std::this_thread::sleep_until(h->meshed + pairs_settle);
	(void) guarded(msg, sizeof(msg), [&]() {
		if (h->ctx)
			h->ctx->closeConnections();
	});
	(void) guarded(msg, sizeof(msg), [&]() { delete h; });
}

#define STR2(x) #x
#define STR(x) STR2(x)

const gnn_dist_ops ops = {
	GNN_DIST_ABI_VERSION,
	sizeof(gnn_dist_ops),
	"gloo " STR(GLOO_VERSION_MAJOR) "." STR(GLOO_VERSION_MINOR) "." STR(GLOO_VERSION_PATCH) " (tcp)",
	d_open,
	d_allreduce,
	d_alltoallv,
	d_broadcast,
	d_allgather,
	d_barrier,
	d_close,
};

}								/* namespace */

extern "C" __attribute__((visibility("default"))) const gnn_dist_ops *
gnn_dist_gloo_ops(int abi_version)
{
	return abi_version == GNN_DIST_ABI_VERSION ? &ops : nullptr;
}
