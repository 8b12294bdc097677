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
 * (gnn_enc_encode_*); gnn_enc_from_json_rows rebuilds one that takes a new
 * set of rows and encodes them with the kept encoding (no refit).
 */
#ifndef GNN_ENCODE_H
#define GNN_ENCODE_H

#include "base/gnn_core.h"

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
/* CATEGORY, after finish and before gnn_enc_drop_rows: the distinct non-NULL
 * values seen, and the share of non-NULL rows whose value was kept (the rest
 * fall in "other"); -1 / 1.0 for other kinds (0 / 1.0 once rows are dropped,
 * or for gnn_enc_from_json's encoder).  A loader skips a column whose
 * kept values cover little of it: a name or an identifier, not a category. */
int64_t		gnn_enc_distinct(const gnn_col_encoder *e);
double		gnn_enc_coverage(const gnn_col_encoder *e);
/* Write buffered row `row`'s slice: out[0 .. width). */
void		gnn_enc_write(const gnn_col_encoder *e, int64_t row, float *out);
/* Free the buffered rows (the encoding stays usable for gnn_enc_encode_*). */
void		gnn_enc_drop_rows(gnn_col_encoder *e);

/*
 * Write rows 0 .. rows-1 of several finished encoders side by side: row r's
 * slices, concatenated in column order, go to out + r * ld + col0 (the
 * columns of one node type's feature block; OpenMP over rows, nthreads < 1:
 * one thread).  Every encoder must still hold its rows (>= rows of them) and
 * col0 + the sum of the widths must fit in ld.
 */
gnn_status	gnn_enc_write_rows(gnn_col_encoder *const *encs, int ncols, int64_t rows, float *out,
							   int64_t ld, int32_t col0, int nthreads, gnn_error *err);
/* The same with output row r taken from buffered row src_row[r] (rows fed in
 * scan order, nodes in key order); src_row NULL: the identity. */
gnn_status	gnn_enc_write_rows_perm(gnn_col_encoder *const *encs, int ncols, int64_t rows,
									const int64_t *src_row, float *out, int64_t ld,
									int32_t col0, int nthreads, gnn_error *err);

/*
 * The encoding as a JSON object (malloc'd, free with free(); NULL when not
 * finished or out of memory), e.g.
 *   {"kind":"numeric","width":2,"mean":3.5,"std":1.2,"missing":true}
 *   {"kind":"bool","width":1,"mean":0.25,"missing":false}
 *   {"kind":"category","width":4,"max_categories":3,"categories":["a","b","c"],"other":true,"missing":false}
 *   {"kind":"array","width":3,"length":3,"means":[0.5,1,-2],"missing":false}
 * (TIME as NUMERIC.)  Kept categories are listed by rank (most frequent
 * first, ties in byte order): slot i of the one-hot is categories[i], then
 * "other", then the missing indicator.  Strings are JSON-escaped (control
 * characters as \uXXXX, bytes >= 0x80 as they are); numbers printed with
 * 17 significant digits so a round trip is exact.
 */
char	   *gnn_enc_describe(const gnn_col_encoder *e);
/* Rebuild a finished encoder (without rows) from gnn_enc_describe's JSON. */
gnn_status	gnn_enc_from_json(const char *json, gnn_col_encoder **out, gnn_error *err);
/*
 * Rebuild an encoder from gnn_enc_describe's JSON that takes rows: feed it
 * with gnn_enc_add_* as a new encoder, then gnn_enc_finish keeps the
 * described encoding instead of fitting one (a reload that must encode new
 * rows as the previous load did).  Finish does not refit: the mean / std, the
 * kept categories in their slots, the "other" slot, the missing indicator
 * (kept even when no new row is NULL) and the array length stay, so
 * gnn_enc_width and gnn_enc_describe are those of the JSON.  Each row is then
 * written (gnn_enc_write, gnn_enc_write_rows*) exactly as gnn_enc_encode_*
 * of the fitted encoder encodes its value: an unseen category goes to
 * "other" (all zeros without one), a NULL where the fit had no indicator is
 * the mean alone (a category's: all zeros).  Feeding an array of another
 * length than the described one is GNN_ERR_INVALID naming the row.  After
 * finish, gnn_enc_distinct / gnn_enc_coverage report on the fed rows
 * (distinct values fed; the share of fed non-NULL rows whose value is a kept
 * category).  Errors as gnn_enc_from_json for bad JSON.
 */
gnn_status	gnn_enc_from_json_rows(const char *json, gnn_col_encoder **out, gnn_error *err);
/*
 * Encode one new value with a finished encoder into out[0 .. width).  A
 * category unseen at fit time goes to the "other" slot (all zeros without
 * one); a NULL where the column had none at fit time (no indicator column) is
 * encoded as the mean alone (a category: all zeros).  Errors as for feeding
 * (row -1): wrong kind, not finished, non-finite numbers, an array of another
 * length.
 */
gnn_status	gnn_enc_encode_num(const gnn_col_encoder *e, double v, bool isnull, float *out,
							   gnn_error *err);
gnn_status	gnn_enc_encode_text(const gnn_col_encoder *e, const char *s, size_t len, bool isnull,
								float *out, gnn_error *err);
gnn_status	gnn_enc_encode_array(const gnn_col_encoder *e, const float *v, int32_t len,
								 bool isnull, float *out, gnn_error *err);

#endif							/* GNN_ENCODE_H */
