/*
 * encode.h: ordinary table columns as feature columns.
 *
 * A loader feeds each source column's values, row by row, to a column
 * encoder; the encoder buffers them compactly, and once every row is in,
 * gnn_enc_finish fixes the encoding (statistics, categories) and
 * gnn_enc_write writes each buffered row's slice of the feature vector.
 *
 *   NUMERIC  standardised: (v - mean) / std (std 0 -> 1); 1 column.
 *   BOOL     0 / 1; 1 column.
 *   TIME     seconds since the epoch, standardised like NUMERIC; 1 column.
 *   CATEGORY one-hot over the most frequent max_categories values (ties by
 *            byte order of the value), plus an "other" slot when there were
 *            more distinct values; width = kept + (other ? 1 : 0).
 *   ARRAY    the values as they are (a fixed length, the first non-NULL
 *            row's; a row of another length is GNN_ERR_INVALID naming the row).
 * Every kind except CATEGORY that saw a NULL gets one more column, a missing
 * indicator (1 when NULL), and a NULL is encoded as the column mean
 * (standardised: 0; ARRAY: the per-element mean).  A NULL category is its own
 * indicator column as well (all one-hot slots 0).
 *
 * The finished encoding is described as JSON (gnn_enc_describe) so that it is
 * kept with the graph, and an encoder rebuilt from that JSON
 * (gnn_enc_from_json) encodes new values exactly as the original did
 * (gnn_enc_encode_*).
 */
#ifndef GNN_ENCODE_H
#define GNN_ENCODE_H

#include "gnn_core.h"

typedef enum gnn_enc_kind
{
	GNN_ENC_NUMERIC = 0,
	GNN_ENC_BOOL = 1,
	GNN_ENC_TIME = 2,
	GNN_ENC_CATEGORY = 3,
	GNN_ENC_ARRAY = 4
} gnn_enc_kind;

typedef struct gnn_col_encoder gnn_col_encoder;

/* max_categories: CATEGORY only (>= 1; 32 is the loader's default). */
gnn_status	gnn_enc_create(gnn_enc_kind kind, int32_t max_categories, gnn_col_encoder **out,
						   gnn_error *err);
void		gnn_enc_free(gnn_col_encoder *e);
const char *gnn_enc_kind_name(gnn_enc_kind kind);	/* "numeric", "bool", ... */

/* Feeding, one call per row in row order (row numbers are implicit: 0, 1, ...).
 * NUMERIC / BOOL / TIME take add_num (TIME: seconds since the epoch); CATEGORY
 * takes add_text (bytes, not NUL-terminated); ARRAY takes add_array.  A
 * non-finite number is GNN_ERR_INVALID (the message names the row). */
gnn_status	gnn_enc_add_num(gnn_col_encoder *e, double v, bool isnull, gnn_error *err);
gnn_status	gnn_enc_add_text(gnn_col_encoder *e, const char *s, size_t len, bool isnull,
							 gnn_error *err);
gnn_status	gnn_enc_add_array(gnn_col_encoder *e, const float *v, int32_t len, bool isnull,
							  gnn_error *err);
int64_t		gnn_enc_rows(const gnn_col_encoder *e);

/* Fix statistics and categories; no more rows may be added. */
gnn_status	gnn_enc_finish(gnn_col_encoder *e, gnn_error *err);
/* Output columns (after finish). */
int32_t		gnn_enc_width(const gnn_col_encoder *e);
/* Write buffered row `row`'s slice: out[0 .. width). */
void		gnn_enc_write(const gnn_col_encoder *e, int64_t row, float *out);
/* Free the buffered rows (the encoding stays usable for gnn_enc_encode_*). */
void		gnn_enc_drop_rows(gnn_col_encoder *e);

/*
 * The encoding as a JSON object (malloc'd, free with free()), e.g.
 *   {"kind":"numeric","width":2,"mean":3.5,"std":1.2,"missing":true}
 *   {"kind":"category","width":4,"categories":["a","b","c"],"other":true,"missing":false}
 *   {"kind":"array","width":8,"missing":false}
 * Strings are JSON-escaped; numbers printed with 17 significant digits so a
 * round trip is exact.
 */
char	   *gnn_enc_describe(const gnn_col_encoder *e);
/* Rebuild a finished encoder (without rows) from gnn_enc_describe's JSON. */
gnn_status	gnn_enc_from_json(const char *json, gnn_col_encoder **out, gnn_error *err);
/* Encode one new value with a finished encoder into out[0 .. width). */
gnn_status	gnn_enc_encode_num(const gnn_col_encoder *e, double v, bool isnull, float *out,
							   gnn_error *err);
gnn_status	gnn_enc_encode_text(const gnn_col_encoder *e, const char *s, size_t len, bool isnull,
								float *out, gnn_error *err);
gnn_status	gnn_enc_encode_array(const gnn_col_encoder *e, const float *v, int32_t len,
								 bool isnull, float *out, gnn_error *err);

#endif							/* GNN_ENCODE_H */
