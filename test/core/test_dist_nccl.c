/*
 * test_dist_nccl: the NCCL engine of the collectives (src/dist/nccl.c,
 * gnn_dist_nccl.so; issue #43), through the core's own loader (dist.c).
 *
 * Skipped where the toolkit has no NCCL (the engine is not built).  Built,
 * it loads as an engine of this ABI and names itself; without a GPU,
 * meeting the other ranks fails at once with GNN_ERR_UNSUPPORTED and says
 * why (no crash, no wait).  With a GPU, one rank (NCCL puts one rank on a
 * GPU, and a machine with one GPU can show no more): every collective on
 * host buffers (staged through the engine's device buffer) returns what one
 * rank's collective must, and the counters count them.
 */
#include "dist_util.h"

static const char *
nccl_so_path(void)
{
	static char built[512];
	struct stat st;
	const char *p = getenv("GNN_DIST_NCCL_SO");

	if (!p || !*p)
	{
		snprintf(built, sizeof(built), "src/dist/gnn_dist_nccl.so");
		if (stat(built, &st) != 0)
			snprintf(built, sizeof(built), "../../src/dist/gnn_dist_nccl.so");
		p = built;
	}
	return stat(p, &st) == 0 ? p : NULL;
}

int
main(void)
{
	const char *so = nccl_so_path();
	gnn_error	err;
	gnn_dist   *d = NULL;
	gnn_dist_options o = {0, 1, "127.0.0.1", "nccl-test", 5000};
	gnn_status	st;
	double		t0;

	(void) so_path;				/* (dist_util.h's: the Gloo engine) */
	if (!so)
	{
		CHECK_SKIP("gnn_dist_nccl.so is not built (no nccl.h in the CUDA toolkit)", "the NCCL engine");
		return check_done();
	}
	memset(&err, 0, sizeof(err));
	CHECK(gnn_dist_available(so, &err), "the NCCL engine loads as a gnn_dist engine (%s)", err.msg);
	snprintf(dir, sizeof(dir), "/tmp/gnn-test-dist-nccl-%d", (int) getpid());
	mkdir(dir, 0700);
	t0 = now_ms();
	st = gnn_dist_open(so, &o, &store, &d, &err);
	if (st == GNN_ERR_UNSUPPORTED)
	{
		CHECK(d == NULL && strstr(err.msg, "GPU") != NULL && now_ms() - t0 < 5000,
			  "without a GPU, opening fails at once and says why: %s", err.msg);
		/* a second try is as clean */
		CHECK(gnn_dist_open(so, &o, &store, &d, &err) == GNN_ERR_UNSUPPORTED && d == NULL,
			  "and again, the same");
	}
	else
	{
		float		f[4] = {1, 2, 3, 4},
					g[4];
		double		x[2] = {0.5, -2};
		int64_t		i[3] = {7, -1, 1LL << 40},
					cnt[1] = {4};
		gnn_dist_counters c;

		CHECK(st == GNN_OK, "one rank on a GPU meets itself: %s", err.msg);
		if (st == GNN_OK)
		{
			CHECK(gnn_dist_allreduce(d, f, 4, GNN_DIST_F32, &err) == GNN_OK && f[0] == 1 && f[3] == 4,
				  "allreduce of host floats over one rank: the same floats (%s)", err.msg);
			CHECK(gnn_dist_allreduce(d, x, 2, GNN_DIST_F64, &err) == GNN_OK && x[0] == 0.5 && x[1] == -2,
				  "doubles (%s)", err.msg);
			CHECK(gnn_dist_allreduce(d, i, 3, GNN_DIST_I64, &err) == GNN_OK && i[0] == 7 && i[2] == 1LL << 40,
				  "int64 (%s)", err.msg);
			CHECK(gnn_dist_alltoallv(d, f, cnt, g, cnt, sizeof(float), &err) == GNN_OK &&
				  memcmp(f, g, sizeof(f)) == 0, "alltoallv to itself (%s)", err.msg);
			CHECK(gnn_dist_broadcast(d, f, sizeof(f), 0, &err) == GNN_OK && f[1] == 2, "broadcast (%s)", err.msg);
			memset(g, 0, sizeof(g));
			CHECK(gnn_dist_allgather(d, f, sizeof(f), g, &err) == GNN_OK && memcmp(f, g, sizeof(f)) == 0,
				  "allgather (%s)", err.msg);
			CHECK(gnn_dist_barrier(d, &err) == GNN_OK, "barrier (%s)", err.msg);
			gnn_dist_counters_get(d, &c);
			CHECK(c.allreduce_calls >= 3 && c.alltoallv_calls == 1, "counted: %lld allreduce, %lld alltoallv",
				  (long long) c.allreduce_calls, (long long) c.alltoallv_calls);
		}
		gnn_dist_close(d);
	}
	{
		char		cmd[600];

		snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
		if (system(cmd) != 0)
			NOTE("could not remove %s", dir);
	}
	return check_done();
}
