/*
 * test_dist: the collectives of distributed training (src/core/dist.c over
 * src/dist/gloo.cc, Gloo's TCP transport on loopback).  Each case forks one
 * process per rank; they meet through a store over files in a temporary
 * folder (the server uses a table; the engine only sees the two callbacks).
 *
 * - allreduce (float, double, int64; 1 element to 1M, several segments),
 *   alltoallv (uneven and empty counts, every byte where it belongs),
 *   broadcast from a non-zero root, allgather, barrier, with 1, 2 and 3 ranks;
 * - a rank that never starts: the others fail to meet within the timeout
 *   with GNN_ERR_LIMIT naming the key, they do not hang;
 * - a rank that dies after meeting: the next collective on the others
 *   returns an error within the timeout (no abort, no hang), and the handle
 *   refuses further collectives; a rank that stays connected but stops
 *   taking part: the others' collective times out (GNN_ERR_LIMIT);
 * - a rank cancelled while the ranks connect (after every one was present)
 *   finishes connecting first (the store's meshing callback), so the other
 *   is not left in Gloo's connect wait; a rank gone then fails the other
 *   about the timeout, not five times it (Gloo's wait for a first connect);
 * - keys of an earlier generation (a dead run's addresses) do not disturb
 *   a new one under its own prefix;
 * - a missing engine is GNN_ERR_UNSUPPORTED; bad ranks are GNN_ERR_INVALID.
 *
 * Skips (with a message) when gnn_dist.so was not built (no libgloo-dev).
 */
#include "dist_util.h"

static gnn_dist *
open_rank(int rank, int size, const char *prefix, int timeout_ms, gnn_error *err)
{
	gnn_dist_options o = {rank, size, "127.0.0.1", prefix, timeout_ms};
	gnn_dist   *d = NULL;

	if (gnn_dist_open(so_path, &o, &store, &d, err) != GNN_OK)
		return NULL;
	return d;
}

/* ------------------------------------------------------------------ cases */

static int
body_collectives(int rank, int size, const char *prefix, int timeout_ms)
{
	gnn_error	err;
	gnn_dist   *d = open_rank(rank, size, prefix, timeout_ms, &err);

	REQUIRE(d, "open: %s", err.msg);
	REQUIRE(gnn_dist_rank(d) == rank && gnn_dist_size(d) == size, "rank / size");

	/* allreduce, float: exact sums (small halves) */
	{
		size_t		n = 1000;
		float	   *a = malloc(sizeof(float) * n);

		for (size_t i = 0; i < n; i++)
			a[i] = (float) (rank + 1) + 0.5f * (float) (i % 7);
		REQUIRE(gnn_dist_allreduce(d, a, n, GNN_DIST_F32, &err) == GNN_OK, "allreduce f32: %s", err.msg);
		for (size_t i = 0; i < n; i++)
			REQUIRE(a[i] == (float) (size * (size + 1) / 2) + 0.5f * (float) (size * (i % 7)),
					"allreduce f32 [%zu] = %g", i, (double) a[i]);
		free(a);
	}
	/* double, 1M elements (8 MB: many of Gloo's 1 MB segments) */
	{
		size_t		n = 1 << 20;
		double	   *a = malloc(sizeof(double) * n);

		for (size_t i = 0; i < n; i++)
			a[i] = (double) (i % 1000) * (rank + 1);
		REQUIRE(gnn_dist_allreduce(d, a, n, GNN_DIST_F64, &err) == GNN_OK, "allreduce f64: %s", err.msg);
		for (size_t i = 0; i < n; i++)
			REQUIRE(a[i] == (double) (i % 1000) * (size * (size + 1) / 2), "allreduce f64 [%zu] = %g", i, a[i]);
		free(a);
	}
	/* int64, one element */
	{
		int64_t		v = (int64_t) 1 << (40 + rank);
		int64_t		want = 0;

		for (int r = 0; r < size; r++)
			want += (int64_t) 1 << (40 + r);
		REQUIRE(gnn_dist_allreduce(d, &v, 1, GNN_DIST_I64, &err) == GNN_OK && v == want, "allreduce i64");
	}
	/* alltoallv: rank r sends (r + q) % 3 * 5 rows of 3 int64 to q, row k = (r, q, k) */
	{
		int64_t		sc[8],
					rc[8],
					stot = 0,
					rtot = 0;

		for (int q = 0; q < size; q++)
		{
			sc[q] = (rank + q) % 3 * 5;
			rc[q] = (q + rank) % 3 * 5;
			stot += sc[q];
			rtot += rc[q];
		}
		int64_t    *s = malloc(sizeof(int64_t) * 3 * (stot + 1)),
				   *rv = malloc(sizeof(int64_t) * 3 * (rtot + 1)),
					p = 0;

		for (int q = 0; q < size; q++)
			for (int64_t k = 0; k < sc[q]; k++, p++)
			{
				s[3 * p] = rank;
				s[3 * p + 1] = q;
				s[3 * p + 2] = k;
			}
		memset(rv, 0xff, sizeof(int64_t) * 3 * (rtot + 1));
		REQUIRE(gnn_dist_alltoallv(d, s, sc, rv, rc, 3 * sizeof(int64_t), &err) == GNN_OK,
				"alltoallv: %s", err.msg);
		p = 0;
		for (int q = 0; q < size; q++)
			for (int64_t k = 0; k < rc[q]; k++, p++)
				REQUIRE(rv[3 * p] == q && rv[3 * p + 1] == rank && rv[3 * p + 2] == k,
						"alltoallv row %lld from %d: (%lld, %lld, %lld)", (long long) k, q,
						(long long) rv[3 * p], (long long) rv[3 * p + 1], (long long) rv[3 * p + 2]);
		REQUIRE(rv[3 * rtot] == -1, "alltoallv wrote past its output");
		free(s);
		free(rv);
	}
	/* broadcast from the last rank */
	{
		unsigned char b[10000];
		int			root = size - 1;

		for (int i = 0; i < (int) sizeof(b); i++)
			b[i] = rank == root ? (unsigned char) (i * 7 + 3) : 0;
		REQUIRE(gnn_dist_broadcast(d, b, sizeof(b), root, &err) == GNN_OK, "broadcast: %s", err.msg);
		for (int i = 0; i < (int) sizeof(b); i++)
			REQUIRE(b[i] == (unsigned char) (i * 7 + 3), "broadcast byte %d", i);
		REQUIRE(gnn_dist_broadcast(d, b, sizeof(b), size, &err) != GNN_OK, "broadcast from a rank out of range");
	}
	gnn_dist_close(d);
	/* a second context in the same process, after the first is gone: allgather and barrier */
	{
		char		pre[128];
		int64_t		mine[2] = {rank, rank * rank},
					all[16];

		snprintf(pre, sizeof(pre), "%s-second", prefix);
		d = open_rank(rank, size, pre, timeout_ms, &err);
		REQUIRE(d, "second open: %s", err.msg);
		REQUIRE(gnn_dist_allgather(d, mine, sizeof(mine), all, &err) == GNN_OK, "allgather: %s", err.msg);
		for (int r = 0; r < size; r++)
			REQUIRE(all[2 * r] == r && all[2 * r + 1] == r * r, "allgather slot %d", r);
		REQUIRE(gnn_dist_barrier(d, &err) == GNN_OK, "barrier: %s", err.msg);
		gnn_dist_close(d);
	}
	return 0;
}

/* every present rank expects to fail the rendezvous with a timeout */
static int
body_expect_no_meeting(int rank, int size, const char *prefix, int timeout_ms)
{
	gnn_error	err;
	gnn_dist   *d = open_rank(rank, size, prefix, timeout_ms, &err);

	REQUIRE(!d, "met although a rank is missing");
	REQUIRE(err.status == GNN_ERR_LIMIT, "status %s: %s", gnn_status_name(err.status), err.msg);
	REQUIRE(strstr(err.msg, "did not appear") && strstr(err.msg, "rank"), "message: %s", err.msg);
	fprintf(stderr, "# rank %d saw: %s\n", rank, err.msg);
	return 0;
}

/* rank 1 leaves after a first collective; the others' next one fails */
static int
body_peer_dies(int rank, int size, const char *prefix, int timeout_ms)
{
	gnn_error	err;
	gnn_dist   *d = open_rank(rank, size, prefix, timeout_ms, &err);
	float		a[4096];

	REQUIRE(d, "open: %s", err.msg);
	REQUIRE(gnn_dist_barrier(d, &err) == GNN_OK, "barrier: %s", err.msg);
	if (rank == 1)
		_exit(0);				/* no goodbye: sockets close with the process */
	usleep(200 * 1000);
	for (int i = 0; i < 4096; i++)
		a[i] = 1;
	REQUIRE(gnn_dist_allreduce(d, a, 4096, GNN_DIST_F32, &err) != GNN_OK, "allreduce with a dead peer succeeded");
	REQUIRE(err.status == GNN_ERR_BACKEND || err.status == GNN_ERR_LIMIT, "status %s: %s",
			gnn_status_name(err.status), err.msg);
	fprintf(stderr, "# rank %d saw: %s\n", rank, err.msg);
	REQUIRE(gnn_dist_barrier(d, &err) == GNN_ERR_INVALID && strstr(err.msg, "earlier"),
			"a collective after the failure: %s", err.msg);
	gnn_dist_close(d);
	return 0;
}

/* rank 1 stays connected but never joins the next collective: the others time out */
static int
body_peer_stalls(int rank, int size, const char *prefix, int timeout_ms)
{
	gnn_error	err;
	gnn_dist   *d = open_rank(rank, size, prefix, timeout_ms, &err);
	double		t0;
	float		a[256] = {0};

	REQUIRE(d, "open: %s", err.msg);
	REQUIRE(gnn_dist_barrier(d, &err) == GNN_OK, "barrier: %s", err.msg);
	if (rank == 1)
	{
		usleep(3 * timeout_ms * 1000);
		gnn_dist_close(d);
		return 0;
	}
	t0 = now_ms();
	REQUIRE(gnn_dist_allreduce(d, a, 256, GNN_DIST_F32, &err) == GNN_ERR_LIMIT, "status %s: %s",
			gnn_status_name(err.status), err.msg);
	REQUIRE(now_ms() - t0 < 2.5 * timeout_ms, "timed out after %.0f ms", now_ms() - t0);
	fprintf(stderr, "# rank %d saw after %.0f ms: %s\n", rank, now_ms() - t0, err.msg);
	gnn_dist_close(d);
	return 0;
}

/* a rank alone, whose store can forget: it fails to meet, and takes its keys out */
static int
body_forgets(int rank, int size, const char *prefix, int timeout_ms)
{
	gnn_error	err;
	gnn_dist_options o = {rank, size, "127.0.0.1", prefix, timeout_ms};
	gnn_dist   *d = NULL;

	REQUIRE(gnn_dist_open(so_path, &o, &store_forgetting, &d, &err) != GNN_OK && !d, "met alone");
	return 0;
}

/* how many of the store's files are keys under prefix (its '/' written '_') */
static int
keys_under(const char *prefix)
{
	char		cmd[700];
	FILE	   *f;
	int			n = -1;

	snprintf(cmd, sizeof(cmd), "ls %s | grep -c '^%s_'", dir, prefix);
	if ((f = popen(cmd, "r")))
	{
		if (fscanf(f, "%d", &n) != 1)
			n = -1;
		pclose(f);
	}
	return n;
}

/* a dead run's rank 0 leaves its address under gen0 and dies */
static int
body_stale(int rank, int size, const char *prefix, int timeout_ms)
{
	gnn_error	err;
	gnn_dist   *d = open_rank(rank, size, prefix, timeout_ms, &err);

	(void) d;
	return 0;
}

static int
body_barrier(int rank, int size, const char *prefix, int timeout_ms)
{
	gnn_error	err;
	gnn_dist   *d = open_rank(rank, size, prefix, timeout_ms, &err);

	REQUIRE(d, "open: %s", err.msg);
	REQUIRE(gnn_dist_barrier(d, &err) == GNN_OK, "barrier: %s", err.msg);
	gnn_dist_close(d);
	return 0;
}

/*
 * Rank 0's store "is cancelled" the moment the ranks start connecting (its
 * first get of a key other than a ready/ one: rank 1's address, its own
 * published): it fails
 * every get and set from then on, except while the engine says meshing.
 * honour_meshing = 0: a rank that is gone then, whatever the engine says.
 */
typedef struct cancel_store
{
	int			honour_meshing;
	int			meshing;
	int			cancelled;
	int			cancelled_meshing;	/* a get or set let through for meshing */
} cancel_store;

static int
cancel_now(cancel_store *cs, const char *key, int get, char *msg, size_t msglen)
{
	if (!cs->cancelled && get && !strstr(key, "/ready/"))
		cs->cancelled = 1;
	if (!cs->cancelled)
		return 0;
	if (cs->honour_meshing && cs->meshing)
	{
		cs->cancelled_meshing++;
		return 0;
	}
	snprintf(msg, msglen, "cancelled");
	return 1;
}

static gnn_dist_store_status
cancel_set(void *arg, const char *key, const void *data, size_t len, char *msg, size_t msglen)
{
	if (cancel_now(arg, key, 0, msg, msglen))
		return GNN_DIST_STORE_ERROR;
	return fs_set(NULL, key, data, len, msg, msglen);
}

static gnn_dist_store_status
cancel_get(void *arg, const char *key, int timeout_ms, void **data, size_t *len, char *msg, size_t msglen)
{
	if (cancel_now(arg, key, 1, msg, msglen))
		return GNN_DIST_STORE_ERROR;
	return fs_get(NULL, key, timeout_ms, data, len, msg, msglen);
}

static void
cancel_meshing(void *arg, int on)
{
	((cancel_store *) arg)->meshing = on;
}

static int
body_cancel_meshing(int rank, int size, const char *prefix, int timeout_ms, int honour)
{
	gnn_error	err;
	gnn_dist_options o = {rank, size, "127.0.0.1", prefix, timeout_ms};
	cancel_store cs = {honour, 0, 0, 0};
	gnn_dist_store st = {&cs, cancel_set, cancel_get, cancel_meshing};
	gnn_dist   *d = NULL;
	double		t0 = now_ms();
	gnn_status	rc = gnn_dist_open(so_path, &o, rank == 0 ? &st : &store, &d, &err);

	if (rank == 0 && honour)
	{
		/* it finishes connecting, then stops (the caller's part): the other sees it go */
		REQUIRE(rc == GNN_OK, "open under a cancel while connecting: %s", err.msg);
		REQUIRE(cs.cancelled && cs.cancelled_meshing > 0 && !cs.meshing, "cancelled %d, let through %d, meshing %d",
				cs.cancelled, cs.cancelled_meshing, cs.meshing);
		/*
		 * closed at once: the engine waits a moment first (gloo.cc's
		 * pairs_settle), else a close while the other's connect completes
		 * only in the kernel resets it under Gloo's loop, whose getpeername
		 * check then aborts that process
		 */
		{
			double		tc = now_ms();

			gnn_dist_close(d);
			REQUIRE(now_ms() - tc >= 80, "a close before any collective waited %.0f ms, not the engine's 100",
					now_ms() - tc);
		}
		return 0;
	}
	if (rank == 0)
	{
		REQUIRE(rc != GNN_OK, "a store that fails while connecting: open succeeded");
		return 0;
	}
	if (honour)
	{
		/*
		 * it sees rank 0 go: at its first collective, or already in its
		 * open where rank 0's close resets a connection this side was
		 * still completing; either way well within the timeout
		 */
		if (rc == GNN_OK)
		{
			float		a[16] = {0};

			REQUIRE(gnn_dist_allreduce(d, a, 16, GNN_DIST_F32, &err) != GNN_OK,
					"allreduce with a closed peer succeeded");
			gnn_dist_close(d);
		}
		REQUIRE(now_ms() - t0 < 0.5 * timeout_ms, "saw rank 0 go after %.0f ms (timeout %d ms): %s", now_ms() - t0,
				timeout_ms, err.msg);
		return 0;
	}
	/*
	 * rank 0 gone between the barrier and its connect: Gloo's own wait is
	 * five times its timeout.  (Where rank 1 is the side that connects, the
	 * kernel may complete the connection to rank 0's listening socket before
	 * rank 0 goes: the open succeeds, and the first collective fails.)
	 */
	if (rc == GNN_OK)
	{
		float		a[16] = {0};

		rc = gnn_dist_allreduce(d, a, 16, GNN_DIST_F32, &err);
		gnn_dist_close(d);
		REQUIRE(rc != GNN_OK, "open and allreduce beside a rank gone while connecting succeeded");
	}
	/* (2.5x: the time also holds the barrier's wait for rank 0 to start, on a loaded machine) */
	REQUIRE(now_ms() - t0 < 2.5 * timeout_ms, "failed after %.0f ms (timeout %d ms): %s", now_ms() - t0, timeout_ms,
			err.msg);
	fprintf(stderr, "# rank %d saw after %.0f ms: %s\n", rank, now_ms() - t0, err.msg);
	return 0;
}

static int
body_cancelled_meshing(int rank, int size, const char *prefix, int timeout_ms)
{
	return body_cancel_meshing(rank, size, prefix, timeout_ms, 1);
}

static int
body_gone_meshing(int rank, int size, const char *prefix, int timeout_ms)
{
	return body_cancel_meshing(rank, size, prefix, timeout_ms, 0);
}

int
main(void)
{
	gnn_error	err;
	char		built[512];
	double		ms;
	int			ok;
	struct stat st;

	so_path = getenv("GNN_DIST_SO");
	if (!so_path || !*so_path)
	{
		snprintf(built, sizeof(built), "src/dist/gnn_dist.so");
		if (stat(built, &st) != 0)
			snprintf(built, sizeof(built), "../../src/dist/gnn_dist.so");
		so_path = built;
	}
	/* the missing engine first: it needs no Gloo */
	{
		gnn_dist_options o = {0, 1, NULL, "x", 1000};
		gnn_dist   *d = NULL;

		CHECK(gnn_dist_open("/nonexistent/gnn_dist.so", &o, &store, &d, &err) == GNN_ERR_UNSUPPORTED &&
			  !d && strstr(err.msg, "cannot load"), "a missing engine is GNN_ERR_UNSUPPORTED (%s)", err.msg);
		CHECK(!gnn_dist_available("/nonexistent/gnn_dist.so", &err), "gnn_dist_available says no");
	}
	if (stat(so_path, &st) != 0 || !gnn_dist_available(so_path, &err))
	{
		CHECK_SKIP("gnn_dist.so is not built (libgloo-dev missing; make deps installs it)",
				   "collectives over Gloo");
		return check_done();
	}
	snprintf(dir, sizeof(dir), "/tmp/gnn-test-dist-%d", (int) getpid());
	mkdir(dir, 0700);
	{
		gnn_dist_options o = {2, 2, NULL, "x", 1000};
		gnn_dist   *d = NULL;

		CHECK(gnn_dist_open(so_path, &o, &store, &d, &err) == GNN_ERR_INVALID && !d,
			  "rank 2 of 2 is GNN_ERR_INVALID");
		o.rank = -1;
		CHECK(gnn_dist_open(so_path, &o, &store, &d, &err) == GNN_ERR_INVALID && !d,
			  "rank -1 is GNN_ERR_INVALID");
	}
	for (int size = 1; size <= 3; size++)
	{
		char		pre[64];

		snprintf(pre, sizeof(pre), "coll%d", size);
		ok = run_ranks(size, -1, body_collectives, pre, 20000, &ms);
		CHECK(ok == size,
			  "%d rank(s): allreduce f32/f64/i64, alltoallv, broadcast, allgather, barrier exact (%.0f ms)",
			  size, ms);
	}
	ok = run_ranks(3, 2, body_expect_no_meeting, "absent", 1500, &ms);
	CHECK(ok == 2 && ms >= 1400 && ms < 8000,
		  "3 ranks, one never starts: the other two fail to meet with GNN_ERR_LIMIT in %.0f ms "
		  "(timeout 1500 ms)", ms);
	ok = run_ranks(2, -1, body_peer_dies, "dies", 3000, &ms);
	CHECK(ok == 2 && ms < 12000,
		  "a rank that dies after meeting: the other's allreduce fails (no abort, no hang) in %.0f ms, "
		  "and the handle refuses more", ms);
	ok = run_ranks(2, -1, body_peer_stalls, "stalls", 1000, &ms);
	CHECK(ok == 2, "a rank that stays connected but stops taking part: the other's allreduce times out "
		  "with GNN_ERR_LIMIT within the 1000 ms timeout (%.0f ms in all)", ms);
	for (int t = 0; t < 3; t++)
	{
		char		pre[64];

		snprintf(pre, sizeof(pre), "cancelmesh%d", t);
		ok = run_ranks(2, -1, body_cancelled_meshing, pre, 5000, &ms);
		CHECK(ok == 2, "try %d: a rank cancelled while the ranks connect finishes connecting, then closes; "
			  "the other meets it and sees it go (%.0f ms)", t + 1, ms);
		snprintf(pre, sizeof(pre), "gonemesh%d", t);
		ok = run_ranks(2, -1, body_gone_meshing, pre, 1000, &ms);
		CHECK(ok == 2, "try %d: a rank gone while the ranks connect: the other fails about its 1000 ms timeout "
			  "(under 2.5 s), not Gloo's five times it (%.0f ms)", t + 1, ms);
	}
	(void) run_ranks(2, 1, body_stale, "job7/gen0", 300, NULL);
	ok = run_ranks(2, -1, body_barrier, "job7/gen1", 5000, &ms);
	CHECK(ok == 2,
		  "a new generation meets although a dead one left its keys (%.0f ms)", ms);
	/* the store's own keys of a rank that failed: left where the store cannot forget, gone where it can */
	ok = run_ranks(3, 2, body_forgets, "forget", 300, &ms);
	CHECK(ok == 2 && keys_under("forget") == 0 && keys_under("job7_gen0") > 0,
		  "ranks that fail to meet take their keys out of a store that can forget them (%d left; "
		  "%d of a rank whose store cannot)", keys_under("forget"), keys_under("job7_gen0"));
	/* the folder: every key under its prefix, no temporary file left */
	{
		char		cmd[600];

		snprintf(cmd, sizeof(cmd), "ls %s | grep -c tmp > /dev/null", dir);
		CHECK(system(cmd) != 0, "the store left no temporary file");
		snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
		if (system(cmd) != 0)
			NOTE("could not remove %s", dir);
	}
	return check_done();
}
