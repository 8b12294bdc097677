/*
 * store.h: durable files of the graph store (PostgreSQL-free).
 *
 * A store file holds one opaque metadata block (the caller's: the glue keeps
 * its registry entry there) and one payload (a graph region, a partition
 * assignment), each with its own CRC-32C, behind a fixed header:
 *
 *   "GNNSTORE"        8 bytes magic
 *   u32 version       GNN_STORE_VERSION
 *   u32 kind          gnn_store_kind
 *   u64 generation    the graph version the file belongs to
 *   u64 meta_len      bytes of metadata, right after the header
 *   u64 payload_len   bytes of payload, at payload_offset
 *   u64 payload_offset  a multiple of GNN_STORE_ALIGN (4096: O_DIRECT reads)
 *   u32 meta_crc, payload_crc   CRC-32C of each
 *   u32 header_crc    CRC-32C of the 56 bytes before it
 *   u32 reserved      0
 *
 * Writing goes to "<file>.tmp", is fsynced, renamed over "<file>" and the
 * directory fsynced: a crash leaves the old file or the new one, whole.
 * Reading checks everything before trusting anything: magic, version, the
 * header's checksum, lengths against the file's size, the metadata's and
 * the payload's checksums.  Any failure is GNN_ERR_CORRUPT (GNN_ERR_INVALID
 * for a missing file) with a message naming the file; nothing is read out
 * of bounds.
 */
#ifndef GNN_STORE_H
#define GNN_STORE_H

#include "base/gnn_core.h"

#define GNN_STORE_MAGIC "GNNSTORE"
#define GNN_STORE_VERSION 1
#define GNN_STORE_ALIGN 4096
#define GNN_STORE_HEADER_SIZE 64

typedef enum gnn_store_kind
{
	GNN_STORE_GRAPH = 1,		/* a graph region (graph.h) */
	GNN_STORE_PARTITION = 2,	/* a partition assignment */
	GNN_STORE_FEATURES = 3		/* feature rows (feature_store.h) */
} gnn_store_kind;

typedef struct gnn_store_header
{
	uint32_t	version;
	uint32_t	kind;
	uint64_t	generation;
	uint64_t	meta_len;
	uint64_t	payload_len;
	uint64_t	payload_offset;
	uint32_t	meta_crc;
	uint32_t	payload_crc;
} gnn_store_header;

/*
 * Whether writes are fsynced (files, then their directory): the server's
 * own setting, which the glue copies here before each write (PostgreSQL's
 * fsync = off, on a throwaway or test server, skips them for its own files
 * too).  Default true.
 */
extern bool gnn_store_fsync;

/* CRC-32C (Castagnoli) of n bytes continuing crc (start with 0) */
uint32_t	gnn_crc32c(uint32_t crc, const void *data, size_t n);

/*
 * Write dir/name durably (see above); the directory must exist.  meta and
 * payload may be NULL when their length is 0.
 */
gnn_status	gnn_store_write(const char *dir, const char *name, gnn_store_kind kind,
							uint64_t generation, const void *meta, size_t meta_len,
							const void *payload, size_t payload_len, gnn_error *err);

/*
 * As gnn_store_write, the payload produced by fill(arg, at, buf, len): bytes
 * [at, at + len) of it into buf, for consecutive chunks of a few MB.  meta
 * is written after the last chunk (fill may still be writing it).
 */
typedef gnn_status (*gnn_store_fill_fn) (void *arg, uint64_t at, void *buf, size_t len, gnn_error *err);
gnn_status	gnn_store_write_fill(const char *dir, const char *name, gnn_store_kind kind,
								 uint64_t generation, const void *meta, size_t meta_len,
								 size_t payload_len, gnn_store_fill_fn fill, void *arg,
								 gnn_error *err);

/*
 * Read and check path's header and metadata: *h filled, the metadata copied
 * into meta (meta_cap bytes; a longer one is GNN_ERR_CORRUPT) unless meta is
 * NULL.  The payload is not read.
 */
gnn_status	gnn_store_read_header(const char *path, gnn_store_header *h, void *meta,
								  size_t meta_cap, gnn_error *err);

/* Read path's payload (h from gnn_store_read_header) into dst, checking its CRC. */
gnn_status	gnn_store_read_payload(const char *path, const gnn_store_header *h, void *dst,
								   gnn_error *err);

/* fsync a directory (after creating or removing entries in it) */
gnn_status	gnn_store_sync_dir(const char *dir, gnn_error *err);

/*
 * unlink(path), with the file's blocks freed by a thread afterwards (a
 * large file's take a while); 0 or -1 with errno, as unlink.
 */
int			gnn_store_unlink(const char *path);

#endif							/* GNN_STORE_H */
