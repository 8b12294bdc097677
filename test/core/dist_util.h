/*
 * dist_util.h: what the core tests of distributed work share: a rendezvous
 * store over files in a folder (dir), and ranks run as forked processes.
 */
#ifndef GNN_TEST_DIST_UTIL_H
#define GNN_TEST_DIST_UTIL_H

#include "check.h"
#include "dist.h"

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char dir[256];
static const char *so_path;

/* ------------------------------------------------------------------ the file store */

static void
key_path(const char *key, char *p, size_t n)
{
	char		k[200];
	size_t		i;

	for (i = 0; key[i] && i < sizeof(k) - 1; i++)
		k[i] = key[i] == '/' ? '_' : key[i];
	k[i] = 0;
	snprintf(p, n, "%s/%s", dir, k);
}

static gnn_dist_store_status
fs_set(void *arg, const char *key, const void *data, size_t len, char *msg, size_t msglen)
{
	char		p[512],
				tmp[560];
	FILE	   *f;

	(void) arg;
	key_path(key, p, sizeof(p));
	snprintf(tmp, sizeof(tmp), "%s.tmp.%d", p, (int) getpid());
	if (!(f = fopen(tmp, "wb")) || (len && fwrite(data, 1, len, f) != len) || fclose(f) != 0 ||
		rename(tmp, p) != 0)
	{
		snprintf(msg, msglen, "%s: %s", p, strerror(errno));
		return GNN_DIST_STORE_ERROR;
	}
	return GNN_DIST_STORE_OK;
}

static double
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static gnn_dist_store_status
fs_get(void *arg, const char *key, int timeout_ms, void **data, size_t *len, char *msg, size_t msglen)
{
	char		p[512];
	double		until = now_ms() + timeout_ms;

	(void) arg;
	key_path(key, p, sizeof(p));
	for (;;)
	{
		FILE	   *f = fopen(p, "rb");

		if (f)
		{
			long		n;

			fseek(f, 0, SEEK_END);
			n = ftell(f);
			fseek(f, 0, SEEK_SET);
			*data = malloc(n ? n : 1);
			*len = fread(*data, 1, n, f);
			fclose(f);
			return GNN_DIST_STORE_OK;
		}
		if (now_ms() >= until)
			return GNN_DIST_STORE_TIMEOUT;
		usleep(2000);
	}
	(void) msg;
	(void) msglen;
}

static const gnn_dist_store store = {NULL, fs_set, fs_get};

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
