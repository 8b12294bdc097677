/*
 * test_feature_store: feature rows from a file through the SIEVE row cache
 * (src/core/feature_store.c).  Gathers equal the rows in memory exactly,
 * with O_DIRECT and buffered reads, with no cache, a small one and one of
 * every row, for random batches with repeats; the counters add up (hits +
 * misses = rows asked for; bytes read >= bytes needed, whole blocks); a
 * sorted run of neighbouring rows costs one read; a prefetched batch is all
 * hits; SIEVE keeps a hot set through a scan of rows read once (scan
 * resistance) and, on a skewed trace, reaches a stated share of Belady's
 * optimum for the same capacity; out-of-range rows, a short file and a bad
 * offset are errors.  A cache block shared between processes (as a DSM
 * segment is): rows one process read are hits in another; two processes
 * and four threads gathering at once through one small shared cache read
 * exactly the file's rows; a process that dies holding the cache's lock
 * leaves it emptied, not stuck.
 */
#include "check.h"
#include "store/feature_store.h"
#include "sample/feature_cache.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/wait.h>

static float
val(int64_t r, int64_t c)
{
	return (float) (r * 1000 + c) * 0.5f;
}

static uint64_t rs = 88172645463325252ULL;

static uint64_t
rnd(void)
{
	rs ^= rs << 13;
	rs ^= rs >> 7;
	rs ^= rs << 17;
	return rs;
}

/* gathers of random rows through fs; the number of rows that differ from the file's */
typedef struct Hammer
{
	gnn_fstore *fs;
	int64_t		rows;
	int32_t		dim;
	uint64_t	seed;
	int64_t		bad;
	gnn_status	st;
} Hammer;

static void *
hammer(void *arg)
{
	Hammer	   *h = arg;
	int32_t		idx[300];
	float	   *out = malloc(sizeof(float) * 300 * (size_t) h->dim);
	gnn_error	err;

	h->bad = 0;
	h->st = GNN_OK;
	for (int it = 0; it < 150 && h->st == GNN_OK; it++)
	{
		for (int k = 0; k < 300; k++)
		{
			h->seed ^= h->seed << 13;
			h->seed ^= h->seed >> 7;
			h->seed ^= h->seed << 17;
			/* a skewed mix: half from 400 hot rows */
			idx[k] = (int32_t) (k % 2 ? h->seed % 400 : h->seed % (uint64_t) h->rows);
		}
		if ((h->st = gnn_fstore_gather(h->fs, idx, 300, out, &err)) != GNN_OK)
			break;
		for (int k = 0; k < 300; k++)
			for (int32_t c = 0; c < h->dim; c++)
				h->bad += out[(size_t) k * h->dim + c] != val(idx[k], c);
	}
	free(out);
	return NULL;
}

int
main(void)
{
	const int64_t rows = 5000;
	const int32_t dim = 37;		/* 148-byte rows: rows straddle blocks */
	const uint64_t off = 8192;
	char		path[64];
	FILE	   *f;
	gnn_error	err;
	gnn_fstore *fs;
	gnn_fstore_stats st;
	float	   *row = malloc(sizeof(float) * dim);

	snprintf(path, sizeof(path), "/tmp/gnn-test-fstore-%d", (int) getpid());
	f = fopen(path, "wb");
	for (uint64_t i = 0; i < off; i++)
		fputc(0xee, f);
	for (int64_t r = 0; r < rows; r++)
	{
		for (int32_t c = 0; c < dim; c++)
			row[c] = val(r, c);
		fwrite(row, sizeof(float), dim, f);
	}
	fclose(f);

	for (int direct = 1; direct >= 0; direct--)
		for (int ci = 0; ci < 3; ci++)
		{
			int64_t		cap = ci == 0 ? 0 : ci == 1 ? 300 : rows;
			int64_t		n = 700,
						bad = 0;
			int32_t    *idx = malloc(sizeof(int32_t) * n);
			float	   *out = malloc(sizeof(float) * n * dim);

			if (gnn_fstore_open(path, off, rows, dim, cap, direct, &fs, &err) != GNN_OK)
			{
				CHECK(0, "open: %s", err.msg);
				continue;
			}
			for (int b = 0; b < 20; b++)
			{
				for (int64_t k = 0; k < n; k++)
					idx[k] = (int32_t) (k % 10 == 9 ? idx[k - 1] : (int32_t) (rnd() % (b % 2 ? 600 : rows)));
				if (gnn_fstore_gather(fs, idx, n, out, &err) != GNN_OK)
				{
					bad = -1;
					break;
				}
				for (int64_t k = 0; k < n; k++)
					for (int32_t c = 0; c < dim; c++)
						bad += out[k * dim + c] != val(idx[k], c);
			}
			gnn_fstore_stats_get(fs, &st);
			CHECK(bad == 0, "%s reads, cache of %lld rows: 20 gathers of 700 rows (repeats) equal the rows in memory",
				  st.direct ? "O_DIRECT" : "buffered", (long long) cap);
			CHECK(st.hits + st.misses == st.rows_requested && st.rows_requested == 20 * n &&
				  st.bytes_read >= st.bytes_needed &&
				  (cap == 0 ? st.hits == 0 : cap == rows ? st.misses <= rows : st.hits > 0),
				  "the counters add up: %lld hits, %lld misses, %lld reads, %lld bytes read for %lld needed",
				  (long long) st.hits, (long long) st.misses, (long long) st.reads, (long long) st.bytes_read,
				  (long long) st.bytes_needed);
			gnn_fstore_close(fs);
			free(idx);
			free(out);
		}

	/* neighbouring rows: one read; prefetch; errors */
	CHECK(gnn_fstore_open(path, off, rows, dim, 1000, true, &fs, &err) == GNN_OK, "open with a cache of 1000");
	{
		int32_t		idx[200];
		float	   *out = malloc(sizeof(float) * 200 * dim);

		for (int k = 0; k < 200; k++)
			idx[k] = 1000 + (199 - k);	/* unsorted, contiguous */
		gnn_fstore_gather(fs, idx, 200, out, &err);
		gnn_fstore_stats_get(fs, &st);
		CHECK(st.reads == 1 && st.bytes_read <= 200 * (int64_t) sizeof(float) * dim + 2 * GNN_FSTORE_BLOCK,
			  "200 neighbouring rows asked for out of order: one read of %lld bytes", (long long) st.bytes_read);
		gnn_fstore_stats_reset(fs);
		for (int k = 0; k < 200; k++)
			idx[k] = (int32_t) (3000 + 7 * k);
		CHECK(gnn_fstore_prefetch(fs, idx, 200, &err) == GNN_OK, "a batch ahead prefetched");
		gnn_fstore_gather(fs, idx, 200, out, &err);
		gnn_fstore_stats_get(fs, &st);
		CHECK(st.prefetched == 200 && st.hits == 200 && st.misses == 0 && out[5 * dim + 3] == val(3035, 3),
			  "its gather is all hits (%lld of 200)", (long long) st.hits);
		idx[7] = (int32_t) rows;
		CHECK(gnn_fstore_gather(fs, idx, 200, out, &err) == GNN_ERR_INVALID, "a row out of range is an error: %s",
			  err.msg);
		free(out);
	}
	gnn_fstore_close(fs);
	CHECK(gnn_fstore_open(path, off, rows + 1, dim, 0, false, &fs, &err) == GNN_ERR_CORRUPT,
		  "a file too short for the matrix is refused: %s", err.msg);
	CHECK(gnn_fstore_open(path, 100, rows, dim, 0, false, &fs, &err) == GNN_ERR_INVALID,
		  "an offset off the block size is refused");

	/* SIEVE: scan resistance, and against Belady on a skewed trace */
	{
		int64_t		cap = 500;
		int32_t		one;
		float		o[64];
		int64_t		hot_hits = 0,
					len = 0;
		int32_t    *trace = malloc(sizeof(int32_t) * 200000);

		gnn_fstore_open(path, off, rows, dim, cap, false, &fs, &err);
		for (int rep = 0; rep < 3; rep++)
			for (int32_t r = 0; r < 300; r++)
				gnn_fstore_gather(fs, &r, 1, o, &err);
		for (int32_t r = 1000; r < 5000; r++)	/* a scan of 4000 rows read once */
			gnn_fstore_gather(fs, &r, 1, o, &err);
		gnn_fstore_stats_reset(fs);
		for (int32_t r = 0; r < 300; r++)
			gnn_fstore_gather(fs, &r, 1, o, &err);
		gnn_fstore_stats_get(fs, &st);
		hot_hits = st.hits;
		CHECK(hot_hits >= 270, "SIEVE keeps a hot set of 300 rows through a scan of 4000 rows read once "
			  "(%lld of 300 still hit; a FIFO or LRU cache of 500 keeps none)", (long long) hot_hits);
		gnn_fstore_close(fs);

		/* zipf-like: row = floor(rows * u^3) */
		gnn_fstore_open(path, off, rows, dim, cap, false, &fs, &err);
		for (int64_t i = 0; i < 200000; i++)
		{
			double		u = (double) (rnd() >> 11) / 9007199254740992.0;

			one = (int32_t) (rows * u * u * u);
			trace[len++] = one;
			gnn_fstore_gather(fs, &one, 1, o, &err);
		}
		gnn_fstore_stats_get(fs, &st);
		{
			double		opt = 0,
						sieve = (double) st.hits / (double) st.rows_requested;

			double		fifo;
			int32_t    *ring = malloc(sizeof(int32_t) * cap);
			char	   *in = calloc(rows, 1);
			int64_t		fh = 0,
						used = 0,
						pos = 0;

			/* a FIFO cache of the same size on the same trace */
			for (int64_t i = 0; i < len; i++)
			{
				if (in[trace[i]])
				{
					fh++;
					continue;
				}
				if (used == cap)
					in[ring[pos]] = 0;
				else
					used++;
				ring[pos] = trace[i];
				in[trace[i]] = 1;
				pos = (pos + 1) % cap;
			}
			fifo = (double) fh / (double) len;
			gnn_cache_belady(trace, len, rows, cap, &opt, &err);
			CHECK(sieve > fifo + 0.02 && sieve >= 0.65 * opt,
				  "on a skewed trace SIEVE hits %.3f: above a FIFO cache's %.3f, %.0f%% of Belady's MIN %.3f (>= 65%%)",
				  sieve, fifo, 100 * sieve / opt, opt);
			free(ring);
			free(in);
		}
		gnn_fstore_close(fs);
		free(trace);
	}

	/* a cache block shared between processes */
	{
		int64_t		cap = 400;
		size_t		bytes = gnn_fcache_bytes(rows, dim, cap);
		void	   *mem = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
		int32_t		idx[300];
		float	   *out = malloc(sizeof(float) * 300 * dim);
		gnn_fcache_info info;
		pid_t		pid;
		int			status = -1;
		int64_t		bad = 0;

		CHECK(mem != MAP_FAILED && gnn_fcache_init(mem, bytes, rows, dim, cap, true, &err) == GNN_OK,
			  "a shared cache block of %lld rows: %zu bytes", (long long) cap, bytes);
		CHECK(gnn_fcache_init(mem, bytes - 1, rows, dim, cap, true, &err) == GNN_ERR_INVALID,
			  "a block too small for its rows is refused: %s", err.msg);
		gnn_fcache_init(mem, bytes, rows, dim, cap, true, &err);
		for (int k = 0; k < 300; k++)
			idx[k] = 1000 + 7 * k;
		pid = fork();
		if (pid == 0)
		{
			gnn_fstore *c;
			gnn_error	e2;

			if (gnn_fstore_open(path, off, rows, dim, 0, true, &c, &e2) != GNN_OK ||
				gnn_fstore_use_cache(c, mem, bytes, &e2) != GNN_OK ||
				gnn_fstore_gather(c, idx, 300, out, &e2) != GNN_OK)
				_exit(2);
			_exit(0);
		}
		waitpid(pid, &status, 0);
		CHECK(gnn_fstore_open(path, off, rows, dim, 0, true, &fs, &err) == GNN_OK &&
			  gnn_fstore_use_cache(fs, mem, bytes, &err) == GNN_OK && gnn_fstore_cache_rows(fs) == cap,
			  "a second process's store uses the block (child exit %d)", status);
		gnn_fstore_stats_reset(fs);
		CHECK(gnn_fstore_gather(fs, idx, 300, out, &err) == GNN_OK, "gather through the shared cache");
		for (int k = 0; k < 300; k++)
			for (int32_t c = 0; c < dim; c++)
				bad += out[(size_t) k * dim + c] != val(idx[k], c);
		gnn_fstore_stats_get(fs, &st);
		gnn_fcache_get_info(mem, &info);
		CHECK(bad == 0 && st.hits == 300 && st.misses == 0 && st.reads == 0,
			  "rows another process read are hits here, read from no file (%lld hits, %lld reads, %lld wrong)",
			  (long long) st.hits, (long long) st.reads, (long long) bad);
		CHECK(info.used == 300 && info.hits == 300 && info.misses == 300 && info.capacity == cap &&
			  info.bytes == bytes,
			  "the block counts both processes: %lld rows held, %lld hits, %lld misses",
			  (long long) info.used, (long long) info.hits, (long long) info.misses);
		{
			gnn_fstore *bogus;

			gnn_fstore_open(path, off, rows - 1, dim, 0, true, &bogus, &err);
			CHECK(gnn_fstore_use_cache(bogus, mem, bytes, &err) == GNN_ERR_CORRUPT,
				  "a store of another shape cannot use the block: %s", err.msg);
			gnn_fstore_close(bogus);
		}

		/* two processes, four threads (two per store), one small cache */
		{
			gnn_fstore *fs2;
			Hammer		h[4];
			pthread_t	t[4];
			int64_t		tbad = 0;
			bool		ok = true;

			gnn_fstore_open(path, off, rows, dim, 0, false, &fs2, &err);
			gnn_fstore_use_cache(fs2, mem, bytes, &err);
			pid = fork();
			if (pid == 0)
			{
				Hammer		ch = {NULL, rows, dim, 99, 0, GNN_OK};

				/* its own store (a store's ring and scratch are its process's) */
				if (gnn_fstore_open(path, off, rows, dim, 0, true, &ch.fs, &err) != GNN_OK ||
					gnn_fstore_use_cache(ch.fs, mem, bytes, &err) != GNN_OK)
					_exit(3);
				hammer(&ch);
				_exit(ch.st != GNN_OK ? 2 : ch.bad != 0 ? 1 : 0);
			}
			for (int i = 0; i < 4; i++)
			{
				h[i] = (Hammer) {i % 2 ? fs2 : fs, rows, dim, 1234567 + 77 * (uint64_t) i, 0, GNN_OK};
				pthread_create(&t[i], NULL, hammer, &h[i]);
			}
			for (int i = 0; i < 4; i++)
			{
				pthread_join(t[i], NULL);
				tbad += h[i].bad;
				ok = ok && h[i].st == GNN_OK;
			}
			waitpid(pid, &status, 0);
			gnn_fcache_get_info(mem, &info);
			CHECK(ok && tbad == 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0 && info.used == cap &&
				  info.evictions > 0 && info.hits > 0,
				  "a process and four threads gather through one 400-row cache at once: every row the file's "
				  "(%lld wrong here, child exit %d; %lld hits, %lld evictions)",
				  (long long) tbad, status, (long long) info.hits, (long long) info.evictions);
			gnn_fstore_close(fs2);
		}

		/* a holder dies with the lock */
		pid = fork();
		if (pid == 0)
		{
			gnn_fcache_lock(mem);
			_exit(0);
		}
		waitpid(pid, &status, 0);
		gnn_fstore_stats_reset(fs);
		bad = 0;
		CHECK(gnn_fstore_gather(fs, idx, 300, out, &err) == GNN_OK, "a gather after a holder died with the lock");
		for (int k = 0; k < 300; k++)
			for (int32_t c = 0; c < dim; c++)
				bad += out[(size_t) k * dim + c] != val(idx[k], c);
		gnn_fstore_stats_get(fs, &st);
		gnn_fcache_get_info(mem, &info);
		CHECK(bad == 0 && st.misses == 300 && info.used == 300,
			  "a holder that died leaves the cache emptied and usable (%lld misses, %lld rows held, %lld wrong)",
			  (long long) st.misses, (long long) info.used, (long long) bad);
		gnn_fstore_close(fs);
		munmap(mem, bytes);
		free(out);
	}
	unlink(path);
	free(row);
	return check_done();
}
