/*
 * dist_store.h: a rendezvous store for gnn_dist_open over files in a folder
 * (dir, set by the program), shared by the core tests of distributed work
 * (through dist_util.h) and bench/dist_bench.c.  A key is a file; a set
 * writes a temporary file and renames it; a get polls until the file is
 * there or the timeout passes.
 */
#ifndef GNN_TEST_DIST_STORE_H
#define GNN_TEST_DIST_STORE_H

#include "dist/dist.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static char dir[256];

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

static void
fs_forget(void *arg, const char *key)
{
	char		p[512];

	(void) arg;
	key_path(key, p, sizeof(p));
	(void) unlink(p);
}

/* (store keeps what a failed rank set, as a killed process would leave it; store_forgetting does not) */
static const gnn_dist_store store = {NULL, fs_set, fs_get};
static const gnn_dist_store store_forgetting = {NULL, fs_set, fs_get, NULL, fs_forget};

#endif							/* GNN_TEST_DIST_STORE_H */
