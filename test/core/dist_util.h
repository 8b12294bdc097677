/*
 * dist_util.h: what the core tests of distributed work share: the file
 * rendezvous store (dist_store.h), and ranks run as forked processes.
 */
#ifndef GNN_TEST_DIST_UTIL_H
#define GNN_TEST_DIST_UTIL_H

#include "check.h"
#include "dist/dist.h"
#include "dist_store.h"

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char *so_path;

/* ------------------------------------------------------------------ ranks as processes */

typedef int (*rank_body) (int rank, int size, const char *prefix, int timeout_ms);

/* child failure: a message on stderr, exit 1 */
#define REQUIRE(cond, ...) \
	do { if (!(cond)) { fprintf(stderr, "rank %d: ", rank); fprintf(stderr, __VA_ARGS__); \
						fprintf(stderr, " (line %d)\n", __LINE__); return 1; } } while (0)

/*
 * fork `size` ranks (skipping `absent`), each running body; returns how many
 * exited 0, and the worst wall time in *ms.  A rank killed by a signal
 * (abort, segfault) counts as failed, and is reported.
 */
static int
run_ranks(int size, int absent, rank_body body, const char *prefix, int timeout_ms, double *ms)
{
	pid_t		pids[8];
	int			ok = 0;
	double		t0 = now_ms();

	for (int r = 0; r < size; r++)
	{
		pids[r] = -1;
		if (r == absent)
			continue;
		if ((pids[r] = fork()) == 0)
		{
			/* a hung child must not hang the suite */
			alarm(60);
			_exit(body(r, size, prefix, timeout_ms));
		}
	}
	for (int r = 0; r < size; r++)
	{
		int			st;

		if (pids[r] < 0)
			continue;
		waitpid(pids[r], &st, 0);
		if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
			ok++;
		else if (WIFSIGNALED(st))
			NOTE("rank %d died of signal %d", r, WTERMSIG(st));
		else
			NOTE("rank %d exited %d", r, WEXITSTATUS(st));
	}
	if (ms)
		*ms = now_ms() - t0;
	return ok;
}


/* the engine built in this tree (env GNN_DIST_SO first), or NULL with a reason */
static const char *
dist_so_path(void)
{
	static char built[512];
	struct stat st;
	const char *p = getenv("GNN_DIST_SO");
	gnn_error	err;

	if (!p || !*p)
	{
		snprintf(built, sizeof(built), "src/dist/gnn_dist.so");
		if (stat(built, &st) != 0)
			snprintf(built, sizeof(built), "../../src/dist/gnn_dist.so");
		p = built;
	}
	if (stat(p, &st) != 0 || !gnn_dist_available(p, &err))
		return NULL;
	return p;
}

#endif							/* GNN_TEST_DIST_UTIL_H */
