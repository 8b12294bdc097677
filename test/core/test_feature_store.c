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
 * offset are errors.
 */
#include "check.h"
#include "feature_store.h"
#include "feature_cache.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
	unlink(path);
	free(row);
	return check_done();
}
