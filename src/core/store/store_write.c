/*
 * store_write.c: writing durable store files (see store.h): write to a
 * temporary name, fsync, rename, sync the directory.  Split out of store.c
 * with checksum.c and store_read.c.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE				/* O_DIRECT */
#endif
#include "store/store.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif
/* ------------------------------------------------------------------ writing */

static void
put32(unsigned char *b, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		b[i] = (unsigned char) (v >> (8 * i));
}

static void
put64(unsigned char *b, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		b[i] = (unsigned char) (v >> (8 * i));
}

static gnn_status
write_all(int fd, const void *buf, size_t n, off_t off, const char *path, gnn_error *err)
{
	const char *p = buf;

	while (n > 0)
	{
		size_t		chunk = n > ((size_t) 1 << 30) ? ((size_t) 1 << 30) : n;
		ssize_t		w = pwrite(fd, p, chunk, off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return gnn_error_set(err, GNN_ERR_LIMIT, "could not write \"%s\": %s", path,
								 w < 0 ? strerror(errno) : "no space written");
		p += w;
		off += w;
		n -= (size_t) w;
	}
	return GNN_OK;
}

bool		gnn_store_fsync = true;

/*
 * Large payloads bypass the page cache (O_DIRECT) where the file system
 * allows it: buffered writes of hundreds of MB ran at a fifth of the direct
 * speed on the machines here (640 MB: 337 MB/s against 1.5 GB/s, dd), and a
 * store file is read back once, after a restart.  write_span writes the
 * aligned bulk of [buf, buf + n) at off through dfd (straight from buf when
 * it is page-aligned, else through a bounce buffer) and the rest, or all of
 * it where direct writes are refused, through the buffered fd.
 */
#define DIRECT_MIN ((size_t) 1 << 20)
#define BOUNCE_BYTES ((size_t) 4 << 20)

static gnn_status
write_span(int fd, int dfd, const void *buf, size_t n, uint64_t off, const char *path, gnn_error *err)
{
	size_t		bulk = n & ~(size_t) (GNN_STORE_ALIGN - 1),
				done = 0;

	if (dfd >= 0 && n >= DIRECT_MIN && off % GNN_STORE_ALIGN == 0)
	{
		bool		aligned = (uintptr_t) buf % GNN_STORE_ALIGN == 0;
		unsigned char *bounce = aligned ? NULL : aligned_alloc(GNN_STORE_ALIGN, BOUNCE_BYTES);

		while ((aligned || bounce) && done < bulk)
		{
			size_t		len = bulk - done;
			const void *src = (const char *) buf + done;
			ssize_t		w;

			if (len > (aligned ? ((size_t) 1 << 30) : BOUNCE_BYTES))
				len = aligned ? ((size_t) 1 << 30) : BOUNCE_BYTES;
			if (!aligned)
			{
				memcpy(bounce, src, len);
				src = bounce;
			}
			w = pwrite(dfd, src, len, (off_t) (off + done));
			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0 || (size_t) w % GNN_STORE_ALIGN != 0)
				break;			/* refused or short: the rest goes buffered */
			done += (size_t) w;
		}
		free(bounce);
	}
	return done < n ? write_all(fd, (const char *) buf + done, n - done, (off_t) (off + done), path, err) : GNN_OK;
}

/*
 * Freeing a large file's blocks takes a while (ext4 here: 0.39 s for a
 * 1.27 GB store file), and rename() over the previous version of a store
 * file frees them inside the call, on the load's time.  Holding the old
 * file open across the rename leaves the rename only the name to drop; the
 * last close, which frees the blocks, runs on a short-lived thread
 * (gnn_thread_start).  Where no thread can start, the close happens here.
 */
static void *
close_main(void *arg)
{
	close((int) (intptr_t) arg);
	return NULL;
}

static void
close_in_background(int fd)
{
	pthread_t	t;

	if (fd >= 0 && !gnn_thread_start(&t, true, close_main, (void *) (intptr_t) fd))
		close(fd);
}

int
gnn_store_unlink(const char *path)
{
	int			fd = open(path, O_RDONLY | O_CLOEXEC),
				rc = unlink(path),
				saved = errno;

	close_in_background(fd);
	errno = saved;
	return rc;
}

gnn_status
gnn_store_sync_dir(const char *dir, gnn_error *err)
{
	int			fd;

	if (!gnn_store_fsync)
		return GNN_OK;
	if ((fd = open(dir, O_RDONLY | O_DIRECTORY)) < 0)
		return gnn_error_set(err, GNN_ERR_INVALID, "could not open directory \"%s\": %s", dir, strerror(errno));
	if (fsync(fd) != 0 && errno != EINVAL)
	{
		int			e = errno;

		close(fd);
		return gnn_error_set(err, GNN_ERR_LIMIT, "could not fsync directory \"%s\": %s", dir, strerror(e));
	}
	close(fd);
	return GNN_OK;
}

/*
 * A payload's CRC on a thread of its own (gnn_thread_start) while the
 * caller writes it: the direct write waits on the disk, and the CRC of
 * 1.27 GB is 0.1 s of one core.  Small payloads, or where no thread
 * starts, are summed in line.
 */
typedef struct crc_job
{
	const void *data;
	size_t		len;
	uint32_t	crc;
} crc_job;

static void *
crc_main(void *arg)
{
	crc_job    *j = arg;

	j->crc = gnn_crc32c(0, j->data, j->len);
	return NULL;
}

/*
 * The one writer: the payload from memory, or (payload NULL, fill set)
 * produced chunk by chunk into a buffer of FILL_CHUNK bytes; the metadata is
 * written after the payload, so a fill may compute it (block checksums).
 */
#define FILL_CHUNK ((size_t) 4 << 20)

static gnn_status
store_write(const char *dir, const char *name, gnn_store_kind kind, uint64_t generation,
			const void *meta, size_t meta_len, const void *payload, size_t payload_len,
			gnn_store_fill_fn fill, void *arg, gnn_error *err)
{
	char		path[4096],
				tmp[4096 + 8];
	unsigned char hdr[GNN_STORE_HEADER_SIZE];
	uint64_t	off = (GNN_STORE_HEADER_SIZE + meta_len + GNN_STORE_ALIGN - 1) / GNN_STORE_ALIGN * GNN_STORE_ALIGN;
	uint32_t	pcrc = 0;
	gnn_status	st = GNN_OK;
	int			fd,
				dfd;

	if ((size_t) snprintf(path, sizeof(path), "%s/%s", dir, name) >= sizeof(path))
		return gnn_error_set(err, GNN_ERR_INVALID, "store path too long: %s/%s", dir, name);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return gnn_error_set(err, GNN_ERR_LIMIT, "could not create \"%s\": %s", tmp, strerror(errno));
	/* a second descriptor for direct writes of the payload (-1 where refused: tmpfs) */
	dfd = payload_len >= DIRECT_MIN ? open(tmp, O_WRONLY | O_DIRECT | O_CLOEXEC) : -1;
	if (payload || !fill)
	{
		crc_job		job = {payload, payload_len, 0};
		pthread_t	t;
		bool		beside = payload_len >= DIRECT_MIN && gnn_thread_start(&t, false, crc_main, &job);

		if (payload_len)
			st = write_span(fd, dfd, payload, payload_len, off, tmp, err);
		if (beside)
			pthread_join(t, NULL);
		else
			crc_main(&job);
		pcrc = job.crc;
	}
	else
	{
		unsigned char *buf = aligned_alloc(GNN_STORE_ALIGN, FILL_CHUNK);

		if (!buf)
			st = gnn_error_set(err, GNN_ERR_NOMEM, "out of memory writing \"%s\"", tmp);
		for (uint64_t at = 0; st == GNN_OK && at < payload_len; at += FILL_CHUNK)
		{
			size_t		len = payload_len - at < FILL_CHUNK ? (size_t) (payload_len - at) : FILL_CHUNK;

			if ((st = fill(arg, at, buf, len, err)) == GNN_OK)
			{
				pcrc = gnn_crc32c(pcrc, buf, len);
				st = write_span(fd, dfd, buf, len, off + at, tmp, err);
			}
		}
		free(buf);
	}
	memset(hdr, 0, sizeof(hdr));
	memcpy(hdr, GNN_STORE_MAGIC, 8);
	put32(hdr + 8, GNN_STORE_VERSION);
	put32(hdr + 12, (uint32_t) kind);
	put64(hdr + 16, generation);
	put64(hdr + 24, meta_len);
	put64(hdr + 32, payload_len);
	put64(hdr + 40, off);
	put32(hdr + 48, gnn_crc32c(0, meta, meta_len));
	put32(hdr + 52, pcrc);
	put32(hdr + 56, gnn_crc32c(0, hdr, 56));
	if (st == GNN_OK && meta_len)
		st = write_all(fd, meta, meta_len, GNN_STORE_HEADER_SIZE, tmp, err);
	if (st == GNN_OK)
		st = write_all(fd, hdr, sizeof(hdr), 0, tmp, err);
	if (st == GNN_OK && ftruncate(fd, (off_t) (off + payload_len)) != 0)
		st = gnn_error_set(err, GNN_ERR_LIMIT, "could not size \"%s\": %s", tmp, strerror(errno));
	if (dfd >= 0)
		close(dfd);
	if (st == GNN_OK && gnn_store_fsync && fsync(fd) != 0)
		st = gnn_error_set(err, GNN_ERR_LIMIT, "could not fsync \"%s\": %s", tmp, strerror(errno));
	if (close(fd) != 0 && st == GNN_OK)
		st = gnn_error_set(err, GNN_ERR_LIMIT, "could not close \"%s\": %s", tmp, strerror(errno));
	if (st == GNN_OK)
	{
		int			prev = open(path, O_RDONLY | O_CLOEXEC);	/* the version replaced, if any */

		if (rename(tmp, path) != 0)
			st = gnn_error_set(err, GNN_ERR_LIMIT, "could not rename \"%s\" to \"%s\": %s", tmp, path, strerror(errno));
		close_in_background(prev);
	}
	if (st != GNN_OK)
	{
		unlink(tmp);
		return st;
	}
	return gnn_store_sync_dir(dir, err);
}

gnn_status
gnn_store_write(const char *dir, const char *name, gnn_store_kind kind, uint64_t generation,
				const void *meta, size_t meta_len, const void *payload, size_t payload_len,
				gnn_error *err)
{
	return store_write(dir, name, kind, generation, meta, meta_len, payload, payload_len, NULL, NULL, err);
}

gnn_status
gnn_store_write_fill(const char *dir, const char *name, gnn_store_kind kind, uint64_t generation,
					 const void *meta, size_t meta_len, size_t payload_len, gnn_store_fill_fn fill,
					 void *arg, gnn_error *err)
{
	return store_write(dir, name, kind, generation, meta, meta_len, NULL, payload_len, fill, arg, err);
}
