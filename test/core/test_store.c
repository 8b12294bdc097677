/*
 * test_store: the graph store's files (src/core/store.c).  CRC-32C against
 * its check value and in pieces; a write reads back exactly (metadata,
 * payload, generation, the payload aligned for O_DIRECT); a rewrite
 * replaces the file whole and leaves no temporary file; every single-byte
 * flip anywhere in a file, every truncation and a few extensions are
 * refused with GNN_ERR_CORRUPT (never a crash, never a wrong payload);
 * a missing file is GNN_ERR_INVALID; a metadata buffer too small is an error;
 * a stale temporary file does not disturb reading.
 */
#include "check.h"
#include "store/store.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[256];

static void
put_file(const char *path, const unsigned char *b, size_t n)
{
	FILE	   *f = fopen(path, "wb");

	if (n)
		fwrite(b, 1, n, f);
	fclose(f);
}

static unsigned char *
get_file(const char *path, size_t *n)
{
	FILE	   *f = fopen(path, "rb");
	unsigned char *b;
	long		len;

	fseek(f, 0, SEEK_END);
	len = ftell(f);
	fseek(f, 0, SEEK_SET);
	b = malloc(len + 1);
	*n = fread(b, 1, len, f);
	fclose(f);
	return b;
}

/* read path fully: OK only if everything checks and equals meta / payload */
static gnn_status
read_back(const char *path, const char *meta, size_t mlen, const unsigned char *pay, size_t plen, bool *same)
{
	gnn_store_header h;
	char		m[256];
	unsigned char *p;
	gnn_error	err;
	gnn_status	st = gnn_store_read_header(path, &h, m, sizeof(m), &err);

	*same = false;
	if (st != GNN_OK)
		return st;
	if (h.payload_len > (1 << 23))
		return GNN_ERR_CORRUPT;
	p = malloc(h.payload_len + 1);
	st = gnn_store_read_payload(path, &h, p, &err);
	if (st == GNN_OK)
		*same = h.meta_len == mlen && memcmp(m, meta, mlen) == 0 && h.payload_len == plen &&
			memcmp(p, pay, plen) == 0;
	free(p);
	return st;
}

int
main(void)
{
	const char *meta = "registry entry: graph g, owner 10";
	size_t		mlen = strlen(meta),
				plen = 10000;
	unsigned char *pay = malloc(plen);
	char		path[300],
				tmp[320];
	gnn_error	err;
	gnn_store_header h;
	bool		same;

	memset(&err, 0, sizeof(err));
	snprintf(dir, sizeof(dir), "/tmp/gnn-test-store-%d", (int) getpid());
	mkdir(dir, 0700);
	snprintf(path, sizeof(path), "%s/graph.gnn", dir);
	snprintf(tmp, sizeof(tmp), "%s/graph.gnn.tmp", dir);
	for (size_t i = 0; i < plen; i++)
		pay[i] = (unsigned char) (i * 131 + 7);

	/* CRC-32C */
	CHECK(gnn_crc32c(0, "123456789", 9) == 0xe3069283u, "CRC-32C of \"123456789\" is its check value e3069283");
	CHECK(gnn_crc32c(gnn_crc32c(0, pay, 1234), pay + 1234, plen - 1234) == gnn_crc32c(0, pay, plen) &&
		  gnn_crc32c(gnn_crc32c(0, pay, 3), pay + 3, plen - 3) == gnn_crc32c(0, pay, plen),
		  "CRC-32C continued over pieces equals it over the whole");
	CHECK(gnn_crc32c(0, NULL, 0) == 0, "CRC-32C of nothing is 0");
	{
		/* against the bit-at-a-time definition, over lengths around the interleaved blocks, at every alignment */
		size_t		lens[] = {0, 1, 7, 8, 9, 4095, 24575, 24576, 24577, 49152 + 13, 5 * 24576 + 1001, 1000003};
		size_t		cap = 1000003 + 8;
		unsigned char *b = malloc(cap);
		bool		ok = b != NULL;
		uint32_t	x = 12345;

		for (size_t i = 0; ok && i < cap; i++)
		{
			x = x * 1103515245u + 12345u;
			b[i] = (unsigned char) (x >> 16);
		}
		for (size_t li = 0; ok && li < sizeof(lens) / sizeof(lens[0]); li++)
			for (int a = 0; a < 8; a++)
			{
				uint32_t	r = 0xffffffffu;

				for (size_t i = 0; i < lens[li]; i++)
				{
					r ^= b[a + i];
					for (int k = 0; k < 8; k++)
						r = r & 1 ? (r >> 1) ^ 0x82f63b78u : r >> 1;
				}
				if (gnn_crc32c(0, b + a, lens[li]) != ~r)
					ok = false;
			}
		CHECK(ok, "CRC-32C equals the bitwise definition for 12 lengths (0 to 1000003 bytes) at 8 alignments");
		free(b);
	}

	/* round trip */
	CHECK(gnn_store_write(dir, "graph.gnn", GNN_STORE_GRAPH, 42, meta, mlen, pay, plen, &err) == GNN_OK,
		  "a store file is written");
	CHECK(gnn_store_read_header(path, &h, NULL, 0, &err) == GNN_OK && h.kind == GNN_STORE_GRAPH &&
		  h.generation == 42 && h.meta_len == mlen && h.payload_len == plen && h.version == GNN_STORE_VERSION,
		  "its header reads back: kind, generation, lengths, version");
	CHECK(h.payload_offset % GNN_STORE_ALIGN == 0 && h.payload_offset >= GNN_STORE_HEADER_SIZE + mlen,
		  "the payload starts on a %d-byte boundary after the metadata (at %llu)", GNN_STORE_ALIGN,
		  (unsigned long long) h.payload_offset);
	CHECK(read_back(path, meta, mlen, pay, plen, &same) == GNN_OK && same, "metadata and payload read back exactly");
	CHECK(access(tmp, F_OK) != 0, "no temporary file is left behind");
	{
		char		small[8];

		CHECK(gnn_store_read_header(path, &h, small, sizeof(small), &err) == GNN_ERR_CORRUPT,
			  "metadata longer than the caller's buffer is refused: %s", err.msg);
	}

	/* every byte flipped, every truncation, extensions */
	{
		size_t		n;
		unsigned char *orig = get_file(path, &n);
		int			flips_caught = 0,
					flips_tried = 0,
					pad_tried = 0,
					cuts_caught = 0,
					wrong = 0;
		/* short (GNN_TEST_SHORT): every byte of the header and metadata, every 7th after */
		size_t		head = GNN_STORE_HEADER_SIZE + mlen;

		for (size_t i = 0; i < n; i += (check_short() && i >= head ? 7 : 1))
		{
			gnn_status	st;

			orig[i] ^= 0x20;
			put_file(path, orig, n);
			flips_tried++;
			if (i >= head && i < h.payload_offset)
				pad_tried++;
			st = read_back(path, meta, mlen, pay, plen, &same);
			/* the padding between metadata and payload is covered by no checksum, and read by no one */
			if (st == GNN_ERR_CORRUPT)
				flips_caught++;
			else if (!(i >= GNN_STORE_HEADER_SIZE + mlen && i < h.payload_offset && st == GNN_OK && same))
				wrong++;
			orig[i] ^= 0x20;
		}
		CHECK(wrong == 0 && flips_caught == flips_tried - pad_tried && flips_tried > 100,
			  "every flipped byte outside the padding is refused as corrupt (%d of %d tried, %zu bytes%s), none gives a wrong payload",
			  flips_caught, flips_tried, n, check_short() ? "; every 7th after the metadata: GNN_TEST_SHORT" : "");
		for (size_t cut = 0; cut < n; cut += (cut < 200 ? 1 : 97))
		{
			put_file(path, orig, cut);
			cuts_caught += read_back(path, meta, mlen, pay, plen, &same) == GNN_ERR_CORRUPT;
		}
		CHECK(cuts_caught == (int) (200 + (n - 200 + 96) / 97), "every truncation is refused as corrupt (%d)", cuts_caught);
		{
			unsigned char *longer = malloc(n + 5000);

			memcpy(longer, orig, n);
			memset(longer + n, 0, 5000);
			put_file(path, longer, n + 5000);
			CHECK(read_back(path, meta, mlen, pay, plen, &same) == GNN_ERR_CORRUPT,
				  "a file with bytes appended is refused");
			free(longer);
		}
		/* another version number (header checksum recomputed, as a future build would write) */
		{
			unsigned char hdr[GNN_STORE_HEADER_SIZE];
			uint32_t	c;

			memcpy(hdr, orig, sizeof(hdr));
			hdr[8] = GNN_STORE_VERSION + 1;
			c = gnn_crc32c(0, hdr, 56);
			for (int k = 0; k < 4; k++)
				hdr[56 + k] = (unsigned char) (c >> (8 * k));
			memcpy(orig, hdr, sizeof(hdr));
			put_file(path, orig, n);
			CHECK(gnn_store_read_header(path, &h, NULL, 0, &err) == GNN_ERR_CORRUPT && strstr(err.msg, "version"),
				  "another format version is refused, saying so: %s", err.msg);
		}
		free(orig);
	}

	/* rewrite replaces whole; a stale temporary file does not matter */
	put_file(tmp, (const unsigned char *) "junk", 4);
	CHECK(gnn_store_write(dir, "graph.gnn", GNN_STORE_GRAPH, 43, "m2", 2, pay, 500, &err) == GNN_OK &&
		  read_back(path, "m2", 2, pay, 500, &same) == GNN_OK && same &&
		  gnn_store_read_header(path, &h, NULL, 0, &err) == GNN_OK && h.generation == 43,
		  "a rewrite replaces the file whole, over a stale temporary one");
	CHECK(gnn_store_write(dir, "empty.gnn", GNN_STORE_PARTITION, 1, NULL, 0, NULL, 0, &err) == GNN_OK,
		  "an empty payload and metadata are allowed");
	/* large payloads go direct where the file system allows: page-aligned or not, with a tail */
	{
		size_t		big = ((size_t) 3 << 20) + 123;
		unsigned char *al = aligned_alloc(4096, (big + 4096 + 1 + 4095) & ~(size_t) 4095),
				   *un = al + 1;

		for (size_t i = 0; i < big + 1; i++)
			al[i] = (unsigned char) (i * 2654435761u >> 13);
		snprintf(path, sizeof(path), "%s/graph.gnn", dir);
		for (int k = 0; k < 2; k++)
		{
			const unsigned char *src = k ? un : al;

			CHECK(gnn_store_write(dir, "graph.gnn", GNN_STORE_GRAPH, 44, "m3", 2, src, big, &err) == GNN_OK &&
				  read_back(path, "m3", 2, src, big, &same) == GNN_OK && same,
				  "a %zu-byte payload from a%s buffer reads back whole", big, k ? "n unaligned" : " page-aligned");
		}
		free(al);
		/* a removal unlinks at once and frees the blocks on a thread */
		{
			char		gone[300];

			snprintf(gone, sizeof(gone), "%s/gone.gnn", dir);
			CHECK(gnn_store_write(dir, "gone.gnn", GNN_STORE_GRAPH, 1, NULL, 0, pay, plen, &err) == GNN_OK &&
				  gnn_store_unlink(gone) == 0 && access(gone, F_OK) != 0 &&
				  gnn_store_unlink(gone) == -1 && errno == ENOENT,
				  "gnn_store_unlink removes a file, and says ENOENT for a missing one");
		}
		/*
		 * each rewrite held the replaced file open across its rename and
		 * closed it on a thread, as the removal did: no descriptor of a
		 * replaced or removed file stays open (within a second)
		 */
		{
			int			left = -1;

			for (int tries = 0; tries < 100 && left != 0; tries++)
			{
				DIR		   *d = opendir("/proc/self/fd");
				struct dirent *de;

				left = 0;
				while (d && (de = readdir(d)) != NULL)
				{
					char		lp[300],
								target[512];
					ssize_t		n;

					snprintf(lp, sizeof(lp), "/proc/self/fd/%s", de->d_name);
					n = readlink(lp, target, sizeof(target) - 1);
					if (n > 0)
					{
						target[n] = 0;
						left += strstr(target, "gnn-test-store") && strstr(target, "(deleted)");
					}
				}
				if (d)
					closedir(d);
				if (left)
					usleep(10000);
			}
			CHECK(left == 0, "the replaced versions' files are closed after their rewrites (%d open)", left);
		}
	}
	snprintf(path, sizeof(path), "%s/missing.gnn", dir);
	CHECK(gnn_store_read_header(path, &h, NULL, 0, &err) == GNN_ERR_INVALID, "a missing file is GNN_ERR_INVALID: %s",
		  err.msg);
	CHECK(gnn_store_write("/nonexistent-dir-gnn", "x.gnn", GNN_STORE_GRAPH, 1, NULL, 0, pay, 10, &err) == GNN_ERR_LIMIT,
		  "a write into a missing directory fails cleanly: %s", err.msg);

	/* clean up */
	snprintf(path, sizeof(path), "%s/graph.gnn", dir);
	unlink(path);
	unlink(tmp);
	snprintf(path, sizeof(path), "%s/empty.gnn", dir);
	unlink(path);
	rmdir(dir);
	free(pay);
	return check_done();
}
