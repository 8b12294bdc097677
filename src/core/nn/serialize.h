/*
 * serialize.h: model weights as a versioned, self-describing byte blob.
 *
 * Layout (little-endian, no padding), format version 1:
 *   "GNNM"            4 bytes magic
 *   u32 version       GNN_BLOB_VERSION
 *   u64 total_len     bytes of the whole blob, checksum included
 *   architecture      u32 kind, u32 aggr, i32 in_dim, hidden, out_dim, layers,
 *                     heads, out_heads, u32 act, f32 dropout, attn_dropout,
 *                     negative_slope, act_param, u32 flags (bit 0: decay_first_only,
 *                     bit 1: relational: i32 num_relations, num_node_types, num_bases follow)
 *   hyper-parameters  f32 lr, weight_decay, i32 epochs, best_epoch, u32 optimizer,
 *                     u64 seed, f32 val_acc, test_acc (gnn_model_meta)
 *   u32 ntensors
 *   per tensor        u16 name_len, name bytes, i64 rows, i64 cols, f32[rows*cols]
 *   u32 crc32         (IEEE) of every byte before it
 *
 * Loading validates everything before trusting anything: size, magic,
 * version, checksum, every length against the bytes left, the architecture
 * (gnn_model_config_check), that the tensors are exactly the ones the
 * architecture implies (names, shapes, count) and that values are finite.
 * Any failure (a wrong version included) is GNN_ERR_CORRUPT
 * with a message; nothing is read out of bounds.
 */
#ifndef GNN_SERIALIZE_H
#define GNN_SERIALIZE_H

#include "nn/model.h"

#define GNN_BLOB_MAGIC "GNNM"
#define GNN_BLOB_VERSION 1

/* Training facts stored alongside the weights (informational). */
typedef struct gnn_model_meta
{
	float		lr;
	float		weight_decay;
	int32_t		epochs;
	int32_t		best_epoch;
	uint32_t	optimizer;
	uint64_t	seed;
	float		val_acc;
	float		test_acc;
} gnn_model_meta;

uint32_t	gnn_crc32(const void *data, size_t len);

/* malloc'd blob (free with free()); meta may be NULL (zeros). */
gnn_status	gnn_model_serialize(gnn_model *m, const gnn_model_meta *meta, void **blob,
								size_t *size, gnn_error *err);

/* Validate a blob without building a model; cfg / meta may be NULL. */
gnn_status	gnn_model_blob_check(const void *blob, size_t size, gnn_model_config *cfg,
								 gnn_model_meta *meta, gnn_error *err);

/*
 * The architecture and training facts from the blob's first bytes (at least
 * GNN_BLOB_HEADER_MAX of a larger blob, or all of it), without its tensors
 * or checksum: what a reader needs to name a shared result built from this
 * model.  The blob is checked whole when it is loaded.
 */
#define GNN_BLOB_HEADER_MAX 256
gnn_status	gnn_model_blob_header(const void *prefix, size_t len, gnn_model_config *cfg,
								  gnn_model_meta *meta, gnn_error *err);

/* Validate and build a model on be with the blob's weights. */
gnn_status	gnn_model_deserialize(gnn_backend *be, const void *blob, size_t size,
								  gnn_model **out, gnn_model_meta *meta, gnn_error *err);

#endif							/* GNN_SERIALIZE_H */
