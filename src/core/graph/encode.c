/*
 * encode.c: column encoders (contract in encode.h).
 *
 * Rows are buffered as compactly as the kind allows, because a loader feeds
 * whole tables (tens of millions of rows) before anything can be encoded:
 * the statistics and the kept categories depend on every row.
 *
 *   NUMERIC / BOOL / TIME  a double per row and a null bit (8.125 bytes/row)
 *   CATEGORY               an int32 dictionary code per row (-1: NULL) and a
 *                          hash-interned dictionary of the distinct values
 *                          with their counts
 *   ARRAY                  length floats per row and a null bit
 *
 * Statistics are computed once, serially, at finish: a serial sum does not
 * depend on how many threads ran, so the same rows always give the same
 * encoding bit for bit.  The encoding of a value is one function per kind
 * (enc_num_value, the slot of a category, the array copy) shared by the
 * buffered-row writer and the gnn_enc_encode_* functions, so a rebuilt
 * encoder (gnn_enc_from_json) writes exactly what the original wrote, and so
 * does one rebuilt to take new rows (gnn_enc_from_json_rows: the same
 * buffers, but finish keeps the encoding instead of fitting one).
 */
#include "graph/encode.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#define ENC_INIT_ROWS 1024
#define ENC_MAX_DISTINCT (INT32_MAX - 1)	/* codes are int32 */
#define ENC_JSON_MAX_DEPTH 32

struct gnn_col_encoder
{
	gnn_enc_kind kind;
	int32_t		max_categories;
	bool		finished;
	bool		has_rows;		/* the row buffers are present (not dropped) */
	bool		fixed;			/* the encoding came from JSON: finish keeps it */
	int64_t		rows;
	int64_t		nulls;
	int64_t		cap;			/* rows the buffers hold */

	/* NUMERIC / BOOL / TIME / ARRAY */
	uint64_t   *nullbits;		/* bit r set: row r is NULL */
	double	   *num;			/* [cap] (NULL rows hold 0) */
	float	   *arr;			/* [cap * alen] (NULL rows hold 0) */
	int32_t		alen;			/* ARRAY: -1 until the first non-NULL row */

	/* CATEGORY while buffering: dictionary of distinct values */
	int32_t    *codes;			/* [cap], -1 = NULL */
	struct dict_entry *dict;	/* [ndict] */
	int32_t		ndict;
	int32_t		dict_cap;
	uint64_t   *dict_ht;		/* open addressing (see dict_grow_ht) */
	uint64_t	dict_ht_mask;
	char	   *dict_bytes;
	size_t		dict_nbytes;
	size_t		dict_bytes_cap;
	int32_t    *slot_of_code;	/* after finish: [ndict] kept slot or -1 */

	/* the finished encoding */
	int32_t		width;
	bool		missing;		/* a missing-indicator column (last) */
	double		mean;			/* NUMERIC / TIME / BOOL */
	double		std;			/* NUMERIC / TIME; 1 for BOOL */
	int32_t		nkept;			/* CATEGORY: kept values, by rank */
	bool		other;
	char	  **cat;			/* [nkept] kept values (not NUL-terminated) */
	size_t	   *cat_len;
	int32_t    *cat_ht;			/* lookup of a kept value, -1 = empty */
	uint64_t	cat_ht_mask;
	double	   *amean;			/* ARRAY: [alen] per-element means */
};

typedef struct dict_entry
{
	uint64_t	hash;
	int64_t		count;
	size_t		off;			/* into dict_bytes */
	size_t		len;
} dict_entry;

/* ------------------------------------------------------------------ helpers */

static gnn_status
row_error(gnn_error *err, int64_t row, gnn_status st, const char *fmt,...)
	__attribute__((format(printf, 4, 5)));

static gnn_status
row_error(gnn_error *err, int64_t row, gnn_status st, const char *fmt,...)
{
	if (err)
	{
		va_list		ap;

		err->status = st;
		err->row = row;
		va_start(ap, fmt);
		vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
		va_end(ap);
	}
	return st;
}

/* byte order, a shorter value first when it is a prefix of the other */
static inline int
bytes_cmp(const char *a, size_t la, const char *b, size_t lb)
{
	int			c = memcmp(a, b, la < lb ? la : lb);

	if (c)
		return c;
	return (la > lb) - (la < lb);
}

static inline bool
is_null(const uint64_t *bits, int64_t r)
{
	return (bits[r >> 6] >> (r & 63)) & 1;
}

const char *
gnn_enc_kind_name(gnn_enc_kind kind)
{
	switch (kind)
	{
		case GNN_ENC_NUMERIC:
			return "numeric";
		case GNN_ENC_BOOL:
			return "bool";
		case GNN_ENC_TIME:
			return "time";
		case GNN_ENC_CATEGORY:
			return "category";
		case GNN_ENC_ARRAY:
			return "array";
	}
	return "unknown";
}

static bool
kind_from_name(const char *s, gnn_enc_kind *kind)
{
	for (int k = GNN_ENC_NUMERIC; k <= GNN_ENC_ARRAY; k++)
		if (strcmp(s, gnn_enc_kind_name((gnn_enc_kind) k)) == 0)
		{
			*kind = (gnn_enc_kind) k;
			return true;
		}
	return false;
}

static bool
kind_is_scalar(gnn_enc_kind kind)
{
	return kind == GNN_ENC_NUMERIC || kind == GNN_ENC_BOOL || kind == GNN_ENC_TIME;
}

/* ------------------------------------------------------------------ create / free */

gnn_status
gnn_enc_create(gnn_enc_kind kind, int32_t max_categories, gnn_col_encoder **out, gnn_error *err)
{
	gnn_col_encoder *e;

	if (!out)
		return gnn_error_set(err, GNN_ERR_INVALID, "encoder: no output pointer");
	*out = NULL;
	if (kind < GNN_ENC_NUMERIC || kind > GNN_ENC_ARRAY)
		return gnn_error_set(err, GNN_ERR_INVALID, "encoder: unknown kind %d", (int) kind);
	if (kind == GNN_ENC_CATEGORY && max_categories < 1)
		return gnn_error_set(err, GNN_ERR_INVALID,
							 "encoder: max_categories must be at least 1 (got %d)", max_categories);
	e = calloc(1, sizeof(*e));
	if (!e)
		return gnn_error_set(err, GNN_ERR_NOMEM, "encoder: out of memory");
	e->kind = kind;
	e->max_categories = kind == GNN_ENC_CATEGORY ? max_categories : 0;
	e->alen = -1;
	e->has_rows = true;
	e->std = 1.0;
	*out = e;
	return GNN_OK;
}

static void
free_dict(gnn_col_encoder *e)
{
	free(e->dict);
	free(e->dict_ht);
	free(e->dict_bytes);
	free(e->slot_of_code);
	e->dict = NULL;
	e->dict_ht = NULL;
	e->dict_bytes = NULL;
	e->slot_of_code = NULL;
	e->ndict = e->dict_cap = 0;
	e->dict_nbytes = e->dict_bytes_cap = 0;
}

void
gnn_enc_drop_rows(gnn_col_encoder *e)
{
	if (!e)
		return;
	free(e->nullbits);
	free(e->num);
	free(e->arr);
	free(e->codes);
	e->nullbits = NULL;
	e->num = NULL;
	e->arr = NULL;
	e->codes = NULL;
	e->cap = 0;
	e->has_rows = false;
	/* the dictionary is only needed for the buffered rows and for finish */
	if (e->finished)
		free_dict(e);
}

static void
free_cats(gnn_col_encoder *e)
{
	for (int32_t i = 0; i < e->nkept && e->cat; i++)
		free(e->cat[i]);
	free(e->cat);
	free(e->cat_len);
	free(e->cat_ht);
	e->cat = NULL;
	e->cat_len = NULL;
	e->cat_ht = NULL;
}

void
gnn_enc_free(gnn_col_encoder *e)
{
	if (!e)
		return;
	gnn_enc_drop_rows(e);
	free_dict(e);
	free_cats(e);
	free(e->amean);
	free(e);
}

int64_t
gnn_enc_rows(const gnn_col_encoder *e)
{
	return e ? e->rows : 0;
}

/* ------------------------------------------------------------------ feeding */

/*
 * Make room for one more row.  Every buffer grows together, doubling, and
 * the encoder is unchanged when an allocation fails.  Large buffers grow
 * into memory advised for huge pages (gnn_realloc_big).
 */
static gnn_status
grow_rows(gnn_col_encoder *e, gnn_error *err)
{
	int64_t		nc = e->cap ? e->cap * 2 : ENC_INIT_ROWS;
	size_t		words = (size_t) ((nc + 63) / 64),
				oldwords = (size_t) ((e->cap + 63) / 64);

	if (e->kind == GNN_ENC_CATEGORY)
	{
		int32_t    *c = gnn_realloc_big(e->codes, (size_t) e->cap * sizeof(int32_t), (size_t) nc * sizeof(int32_t));

		if (!c)
			goto nomem;
		e->codes = c;
		e->cap = nc;
		return GNN_OK;
	}

	/* null bits first: a larger bitmap than needed is harmless */
	{
		uint64_t   *b = realloc(e->nullbits, words * sizeof(uint64_t));

		if (!b)
			goto nomem;
		memset(b + oldwords, 0, (words - oldwords) * sizeof(uint64_t));
		e->nullbits = b;
	}
	if (kind_is_scalar(e->kind))
	{
		double	   *v = gnn_realloc_big(e->num, (size_t) e->cap * sizeof(double), (size_t) nc * sizeof(double));

		if (!v)
			goto nomem;
		e->num = v;
	}
	else if (e->alen > 0)
	{
		float	   *v = gnn_realloc_big(e->arr, (size_t) e->cap * (size_t) e->alen * sizeof(float),
										(size_t) nc * (size_t) e->alen * sizeof(float));

		if (!v)
			goto nomem;
		e->arr = v;
	}
	e->cap = nc;
	return GNN_OK;

nomem:
	return row_error(err, e->rows, GNN_ERR_NOMEM,
					 "encoder (%s): out of memory buffering row %lld",
					 gnn_enc_kind_name(e->kind), (long long) e->rows);
}

static inline gnn_status
check_feed(gnn_col_encoder *e, gnn_enc_kind want, const char *fn, gnn_error *err)
{
	if (!e)
		return gnn_error_set(err, GNN_ERR_INVALID, "%s: no encoder", fn);
	if (e->finished || !e->has_rows)
		return gnn_error_set(err, GNN_ERR_INVALID, "%s: the encoder is finished", fn);
	if (want == GNN_ENC_NUMERIC ? !kind_is_scalar(e->kind) : e->kind != want)
		return gnn_error_set(err, GNN_ERR_INVALID, "%s: not for a %s column", fn,
							 gnn_enc_kind_name(e->kind));
	return GNN_OK;
}

gnn_status
gnn_enc_add_num(gnn_col_encoder *e, double v, bool isnull, gnn_error *err)
{
	gnn_status	st;
	int64_t		r;

	if ((st = check_feed(e, GNN_ENC_NUMERIC, "gnn_enc_add_num", err)) != GNN_OK)
		return st;
	r = e->rows;
	if (!isnull && !isfinite(v))
		return row_error(err, r, GNN_ERR_INVALID, "row %lld: %s value %g is not finite",
						 (long long) r, gnn_enc_kind_name(e->kind), v);
	if (r == e->cap && (st = grow_rows(e, err)) != GNN_OK)
		return st;
	if (isnull)
	{
		e->nullbits[r >> 6] |= (uint64_t) 1 << (r & 63);
		e->nulls++;
		v = 0;
	}
	else if (e->kind == GNN_ENC_BOOL)
		v = v != 0;
	e->num[r] = v;
	e->rows = r + 1;
	return GNN_OK;
}

/*
 * The dictionary's hash table: a slot holds the value's code + 1 in its low
 * 32 bits (0: empty) and the high half of its hash above, so that probing
 * compares hashes inside the table and touches a dictionary entry (a cache
 * miss once the dictionary is large) only on a likely match.
 */
#define SLOT_CODE(x) ((int32_t) ((x) & 0xffffffffu) - 1)
#define SLOT_TAG(h) ((h) & ~(uint64_t) 0xffffffffu)

static gnn_status
dict_grow_ht(gnn_col_encoder *e)
{
	uint64_t	n = e->dict_ht ? (e->dict_ht_mask + 1) * 2 : 1024;
	uint64_t   *ht = calloc(n, sizeof(uint64_t));

	if (!ht)
		return GNN_ERR_NOMEM;
	for (int32_t c = 0; c < e->ndict; c++)
	{
		uint64_t	h = e->dict[c].hash,
					p = h & (n - 1);

		while (ht[p])
			p = (p + 1) & (n - 1);
		ht[p] = SLOT_TAG(h) | (uint32_t) (c + 1);
	}
	free(e->dict_ht);
	e->dict_ht = ht;
	e->dict_ht_mask = n - 1;
	return GNN_OK;
}

/* The code of a value, adding it to the dictionary when new; -1 on failure. */
static int32_t
dict_intern(gnn_col_encoder *e, const char *s, size_t len, gnn_status *st)
{
	uint64_t	h = gnn_hash_bytes(s, len),
				tag = SLOT_TAG(h);
	uint64_t	p,
				x;
	int32_t		c;

	/* keep the load at most one half, growing before a probe that may insert */
	if ((!e->dict_ht || (uint64_t) (e->ndict + 1) * 2 > e->dict_ht_mask + 1) &&
		dict_grow_ht(e) != GNN_OK)
		goto nomem;
	for (p = h & e->dict_ht_mask; (x = e->dict_ht[p]) != 0; p = (p + 1) & e->dict_ht_mask)
	{
		const dict_entry *d;

		if (SLOT_TAG(x) != tag)
			continue;
		d = &e->dict[SLOT_CODE(x)];
		if (d->hash == h && d->len == len && memcmp(e->dict_bytes + d->off, s, len) == 0)
			return SLOT_CODE(x);
	}

	/* new value */
	if (e->ndict >= ENC_MAX_DISTINCT)
	{
		*st = GNN_ERR_LIMIT;
		return -1;
	}
	if (e->ndict == e->dict_cap)
	{
		int32_t		nc = e->dict_cap ? (e->dict_cap > INT32_MAX / 2 ? INT32_MAX : e->dict_cap * 2) : 256;
		dict_entry *d = realloc(e->dict, (size_t) nc * sizeof(dict_entry));

		if (!d)
			goto nomem;
		e->dict = d;
		e->dict_cap = nc;
	}
	if (e->dict_nbytes + len > e->dict_bytes_cap)
	{
		size_t		nc = e->dict_bytes_cap ? e->dict_bytes_cap : 4096;
		char	   *b;

		while (nc < e->dict_nbytes + len)
			nc *= 2;
		b = realloc(e->dict_bytes, nc);
		if (!b)
			goto nomem;
		e->dict_bytes = b;
		e->dict_bytes_cap = nc;
	}
	c = e->ndict;
	if (len)
		memcpy(e->dict_bytes + e->dict_nbytes, s, len);
	e->dict[c].hash = h;
	e->dict[c].count = 0;
	e->dict[c].off = e->dict_nbytes;
	e->dict[c].len = len;
	e->dict_nbytes += len;
	e->dict_ht[p] = tag | (uint32_t) (c + 1);
	e->ndict++;
	return c;

nomem:
	*st = GNN_ERR_NOMEM;
	return -1;
}

gnn_status
gnn_enc_add_text(gnn_col_encoder *e, const char *s, size_t len, bool isnull, gnn_error *err)
{
	gnn_status	st;
	int64_t		r;
	int32_t		code = -1;

	if ((st = check_feed(e, GNN_ENC_CATEGORY, "gnn_enc_add_text", err)) != GNN_OK)
		return st;
	r = e->rows;
	if (!isnull && !s && len > 0)
		return row_error(err, r, GNN_ERR_INVALID, "row %lld: no text", (long long) r);
	if (r == e->cap && (st = grow_rows(e, err)) != GNN_OK)
		return st;
	if (isnull)
		e->nulls++;
	else
	{
		code = dict_intern(e, s ? s : "", len, &st);
		if (code < 0)
			return row_error(err, r, st,
							 st == GNN_ERR_LIMIT ? "row %lld: more than %d distinct categories" :
							 "row %lld: out of memory interning a category (%d distinct so far)",
							 (long long) r, st == GNN_ERR_LIMIT ? ENC_MAX_DISTINCT : e->ndict);
		e->dict[code].count++;
	}
	e->codes[r] = code;
	e->rows = r + 1;
	return GNN_OK;
}

gnn_status
gnn_enc_add_array(gnn_col_encoder *e, const float *v, int32_t len, bool isnull, gnn_error *err)
{
	gnn_status	st;
	int64_t		r;

	if ((st = check_feed(e, GNN_ENC_ARRAY, "gnn_enc_add_array", err)) != GNN_OK)
		return st;
	r = e->rows;
	if (!isnull)
	{
		if (len < 0 || (len > 0 && !v))
			return row_error(err, r, GNN_ERR_INVALID, "row %lld: bad array (length %d)",
							 (long long) r, len);
		if (e->alen >= 0 && len != e->alen)
			return row_error(err, r, GNN_ERR_INVALID,
							 "row %lld: array of length %d where the column's arrays have length %d",
							 (long long) r, len, e->alen);
		for (int32_t j = 0; j < len; j++)
			if (!isfinite(v[j]))
				return row_error(err, r, GNN_ERR_INVALID,
								 "row %lld: array element %d (%g) is not finite",
								 (long long) r, j, (double) v[j]);
		if (e->alen < 0)
		{
			/* the first non-NULL row fixes the length; earlier (NULL) rows get zeros */
			if (len > 0 && e->cap > 0)
			{
				float	   *a = calloc((size_t) e->cap * (size_t) len, sizeof(float));

				if (!a)
					return row_error(err, r, GNN_ERR_NOMEM,
									 "row %lld: out of memory buffering arrays", (long long) r);
				e->arr = a;
			}
			e->alen = len;
		}
	}
	if (r == e->cap && (st = grow_rows(e, err)) != GNN_OK)
		return st;
	if (e->alen > 0)
	{
		float	   *dst = e->arr + (size_t) r * (size_t) e->alen;

		if (isnull)
			memset(dst, 0, (size_t) e->alen * sizeof(float));
		else
			memcpy(dst, v, (size_t) e->alen * sizeof(float));
	}
	if (isnull)
	{
		e->nullbits[r >> 6] |= (uint64_t) 1 << (r & 63);
		e->nulls++;
	}
	e->rows = r + 1;
	return GNN_OK;
}

/* ------------------------------------------------------------------ finish */

/*
 * Mean and population standard deviation of the non-NULL rows, two passes
 * with the correction term of the "corrected two-pass" algorithm (Chan,
 * Golub, LeVeque), which removes most of the rounding error of the mean from
 * the sum of squares.
 */
static void
scalar_stats(const gnn_col_encoder *e, double *mean, double *std)
{
	int64_t		n = e->rows - e->nulls;
	double		s = 0,
				m,
				ss = 0,
				c = 0;

	double		scale = 0;

	*mean = 0;
	*std = 1;
	if (n <= 0)
		return;
	/*
	 * In units of the largest magnitude: a column of values near 1e200 (any
	 * finite double) neither overflows the sums nor their squares, and its
	 * standardised values stay finite.
	 */
	for (int64_t r = 0; r < e->rows; r++)
		if (fabs(e->num[r]) > scale)
			scale = fabs(e->num[r]);
	if (!(scale > 0) || !isfinite(scale))
		scale = 1;
	/* NULL rows hold 0, so they add nothing to the sum */
	for (int64_t r = 0; r < e->rows; r++)
		s += e->num[r] / scale;
	m = s / (double) n;
	for (int64_t r = 0; r < e->rows; r++)
	{
		double		d;

		if (e->nulls && is_null(e->nullbits, r))
			continue;
		d = e->num[r] / scale - m;
		ss += d * d;
		c += d;
	}
	*mean = m * scale;
	if (e->kind == GNN_ENC_BOOL)
		return;					/* 0 / 1 as they are */
	ss = (ss - c * c / (double) n) / (double) n;
	*std = ss > 0 ? sqrt(ss) * scale : 0;
	if (!(*std > 0) || !isfinite(*std))
		*std = 1;
}

/* a ranks before b: more frequent, then byte order */
static inline bool
rank_before(const gnn_col_encoder *e, int32_t a, int32_t b)
{
	const dict_entry *x = &e->dict[a],
			   *y = &e->dict[b];

	if (x->count != y->count)
		return x->count > y->count;
	return bytes_cmp(e->dict_bytes + x->off, x->len, e->dict_bytes + y->off, y->len) < 0;
}

/* heap with the worst-ranked code at the root */
static void
heap_down(const gnn_col_encoder *e, int32_t *h, int32_t n, int32_t p)
{
	int32_t		v = h[p];

	for (;;)
	{
		int32_t		c = 2 * p + 1;

		if (c >= n)
			break;
		if (c + 1 < n && rank_before(e, h[c], h[c + 1]))
			c++;				/* the worse child */
		if (!rank_before(e, v, h[c]))
			break;
		h[p] = h[c];
		p = c;
	}
	h[p] = v;
}

static gnn_status
build_cat_lookup(gnn_col_encoder *e)
{
	uint64_t	n = 16;

	while (n < (uint64_t) e->nkept * 2)
		n *= 2;
	e->cat_ht = malloc(n * sizeof(int32_t));
	if (!e->cat_ht)
		return GNN_ERR_NOMEM;
	memset(e->cat_ht, 0xff, n * sizeof(int32_t));
	e->cat_ht_mask = n - 1;
	for (int32_t i = 0; i < e->nkept; i++)
	{
		uint64_t	p = gnn_hash_bytes(e->cat[i], e->cat_len[i]) & (n - 1);

		while (e->cat_ht[p] >= 0)
		{
			int32_t		j = e->cat_ht[p];

			if (e->cat_len[j] == e->cat_len[i] &&
				memcmp(e->cat[j], e->cat[i], e->cat_len[i]) == 0)
				return GNN_ERR_DUPLICATE;
			p = (p + 1) & (n - 1);
		}
		e->cat_ht[p] = i;
	}
	return GNN_OK;
}

/* kept slot of a value, or -1 */
static int32_t
cat_lookup(const gnn_col_encoder *e, const char *s, size_t len)
{
	uint64_t	p = gnn_hash_bytes(s, len) & e->cat_ht_mask;
	int32_t		i;

	while ((i = e->cat_ht[p]) >= 0)
	{
		if (e->cat_len[i] == len && memcmp(e->cat[i], s, len) == 0)
			return i;
		p = (p + 1) & e->cat_ht_mask;
	}
	return -1;
}

static gnn_status
finish_category(gnn_col_encoder *e, gnn_error *err)
{
	int32_t		k = e->ndict < e->max_categories ? e->ndict : e->max_categories;
	int32_t    *heap = NULL;
	int32_t		n = 0;

	/* the k best of ndict by a bounded heap: O(ndict log k) */
	if (k > 0 && !(heap = malloc((size_t) k * sizeof(int32_t))))
		goto nomem;
	for (int32_t c = 0; c < e->ndict; c++)
	{
		if (n < k)
		{
			int32_t		p = n++;

			/* sift up */
			while (p > 0 && rank_before(e, heap[(p - 1) / 2], c))
			{
				heap[p] = heap[(p - 1) / 2];
				p = (p - 1) / 2;
			}
			heap[p] = c;
		}
		else if (rank_before(e, c, heap[0]))
		{
			heap[0] = c;
			heap_down(e, heap, n, 0);
		}
	}
	/* pop the worst to the back: heap[] ends best first */
	for (int32_t m = n; m > 1; m--)
	{
		int32_t		worst = heap[0];

		heap[0] = heap[m - 1];
		heap_down(e, heap, m - 1, 0);
		heap[m - 1] = worst;
	}

	e->slot_of_code = malloc((size_t) (e->ndict > 0 ? e->ndict : 1) * sizeof(int32_t));
	e->cat = calloc((size_t) (k > 0 ? k : 1), sizeof(char *));
	e->cat_len = calloc((size_t) (k > 0 ? k : 1), sizeof(size_t));
	if (!e->slot_of_code || !e->cat || !e->cat_len)
		goto nomem;
	for (int32_t c = 0; c < e->ndict; c++)
		e->slot_of_code[c] = -1;
	for (int32_t i = 0; i < k; i++)
	{
		const dict_entry *d = &e->dict[heap[i]];

		e->cat[i] = malloc(d->len ? d->len : 1);
		if (!e->cat[i])
			goto nomem;
		memcpy(e->cat[i], e->dict_bytes + d->off, d->len);
		e->cat_len[i] = d->len;
		e->nkept = i + 1;
		e->slot_of_code[heap[i]] = i;
	}
	e->nkept = k;
	if (build_cat_lookup(e) != GNN_OK)
		goto nomem;				/* the dictionary has no duplicates */
	e->other = e->ndict > k;
	free(heap);
	return GNN_OK;

nomem:
	free(heap);
	free(e->slot_of_code);
	e->slot_of_code = NULL;
	free_cats(e);
	e->nkept = 0;
	return gnn_error_set(err, GNN_ERR_NOMEM, "encoder (category): out of memory choosing categories");
}

static gnn_status
finish_array(gnn_col_encoder *e, gnn_error *err)
{
	int32_t		L = e->alen > 0 ? e->alen : 0;
	int64_t		n = e->rows - e->nulls;

	e->amean = calloc((size_t) (L > 0 ? L : 1), sizeof(double));
	if (!e->amean)
		return gnn_error_set(err, GNN_ERR_NOMEM, "encoder (array): out of memory");
	if (L == 0 || n == 0)
		return GNN_OK;
	/* NULL rows hold zeros and add nothing */
	for (int64_t r = 0; r < e->rows; r++)
	{
		const float *a = e->arr + (size_t) r * (size_t) L;

		for (int32_t j = 0; j < L; j++)
			e->amean[j] += a[j];
	}
	for (int32_t j = 0; j < L; j++)
		e->amean[j] /= (double) n;
	return GNN_OK;
}

/*
 * An encoder rebuilt by gnn_enc_from_json_rows keeps the encoding it came
 * with; finishing only maps a category's fed values to the kept slots, by
 * value, so a kept value lands in its fitted slot whatever its frequency now
 * and an unseen one is "other".  The dictionary stays, so gnn_enc_distinct
 * and gnn_enc_coverage report on the new rows.
 */
static gnn_status
finish_fixed(gnn_col_encoder *e, gnn_error *err)
{
	if (e->kind != GNN_ENC_CATEGORY)
		return GNN_OK;
	e->slot_of_code = malloc((size_t) (e->ndict > 0 ? e->ndict : 1) * sizeof(int32_t));
	if (!e->slot_of_code)
		return gnn_error_set(err, GNN_ERR_NOMEM, "encoder (category): out of memory");
	for (int32_t c = 0; c < e->ndict; c++)
	{
		const dict_entry *d = &e->dict[c];

		/* dict_bytes is NULL while every value is empty */
		e->slot_of_code[c] = cat_lookup(e, e->dict_bytes ? e->dict_bytes + d->off : "", d->len);
	}
	return GNN_OK;
}

gnn_status
gnn_enc_finish(gnn_col_encoder *e, gnn_error *err)
{
	gnn_status	st = GNN_OK;

	if (!e)
		return gnn_error_set(err, GNN_ERR_INVALID, "gnn_enc_finish: no encoder");
	if (e->finished)
		return gnn_error_set(err, GNN_ERR_INVALID, "gnn_enc_finish: already finished");
	if (!e->has_rows)
		return gnn_error_set(err, GNN_ERR_INVALID, "gnn_enc_finish: the rows were dropped");
	if (e->fixed)
	{
		/* no refit: width, statistics, categories and indicator stay */
		if ((st = finish_fixed(e, err)) != GNN_OK)
			return st;
		e->finished = true;
		return GNN_OK;
	}
	e->missing = e->nulls > 0;
	switch (e->kind)
	{
		case GNN_ENC_NUMERIC:
		case GNN_ENC_BOOL:
		case GNN_ENC_TIME:
			scalar_stats(e, &e->mean, &e->std);
			e->width = 1;
			break;
		case GNN_ENC_CATEGORY:
			st = finish_category(e, err);
			e->width = e->nkept + (e->other ? 1 : 0);
			break;
		case GNN_ENC_ARRAY:
			st = finish_array(e, err);
			e->width = e->alen > 0 ? e->alen : 0;
			break;
	}
	if (st != GNN_OK)
		return st;
	if (e->alen < 0)
		e->alen = 0;			/* no non-NULL array: length 0 */
	e->width += e->missing ? 1 : 0;
	e->finished = true;
	return GNN_OK;
}

int32_t
gnn_enc_width(const gnn_col_encoder *e)
{
	return e && e->finished ? e->width : 0;
}

/* ------------------------------------------------------------------ encoding */

static inline float
enc_num_value(const gnn_col_encoder *e, double v)
{
	double		z;

	if (e->kind == GNN_ENC_BOOL)
		return v != 0 ? 1.0f : 0.0f;
	/*
	 * Fitted values are within sqrt(rows) deviations; a new row's value
	 * (a tracked graph keeps its encoding) far beyond the fit is held at a
	 * billion, finite for training.
	 */
	z = (v - e->mean) / e->std;
	return (float) (z > 1e9 ? 1e9 : z < -1e9 ? -1e9 : z);
}

/*
 * The NULL encoders write the indicator column only when the encoding has
 * one: a NULL where the fit saw none (gnn_enc_encode_*, or rows fed to an
 * encoder rebuilt by gnn_enc_from_json_rows) is the mean alone, within the
 * width.
 */
static inline void
enc_num_null(const gnn_col_encoder *e, float *out)
{
	/* the mean: standardised 0; a BOOL's mean is the share of true */
	out[0] = e->kind == GNN_ENC_BOOL ? (float) e->mean : 0.0f;
	if (e->missing)
		out[1] = 1.0f;
}

/* a category by kept slot (-1: not kept), or NULL */
static inline void
enc_cat(const gnn_col_encoder *e, int32_t slot, bool isnull, float *out)
{
	memset(out, 0, (size_t) e->width * sizeof(float));
	if (isnull)
	{
		if (e->missing)
			out[e->width - 1] = 1.0f;	/* the missing column (last) */
	}
	else if (slot >= 0)
		out[slot] = 1.0f;
	else if (e->other)
		out[e->nkept] = 1.0f;
}

static inline void
enc_array_null(const gnn_col_encoder *e, float *out)
{
	for (int32_t j = 0; j < e->alen; j++)
		out[j] = (float) e->amean[j];
	if (e->missing)
		out[e->alen] = 1.0f;
}

void
gnn_enc_write(const gnn_col_encoder *e, int64_t row, float *out)
{
	bool		null;

	if (!e || !e->finished || !out)
		return;
	if (!e->has_rows || row < 0 || row >= e->rows)
	{
		/* a caller's bug; write something defined rather than stale memory */
		memset(out, 0, (size_t) e->width * sizeof(float));
		return;
	}
	switch (e->kind)
	{
		case GNN_ENC_NUMERIC:
		case GNN_ENC_BOOL:
		case GNN_ENC_TIME:
			null = e->nulls && is_null(e->nullbits, row);
			if (null)
				enc_num_null(e, out);
			else
			{
				out[0] = enc_num_value(e, e->num[row]);
				if (e->missing)
					out[1] = 0.0f;
			}
			break;
		case GNN_ENC_CATEGORY:
			{
				int32_t		code = e->codes[row];

				enc_cat(e, code >= 0 ? e->slot_of_code[code] : -1, code < 0, out);
				break;
			}
		case GNN_ENC_ARRAY:
			null = e->nulls && is_null(e->nullbits, row);
			if (null)
				enc_array_null(e, out);
			else
			{
				if (e->alen > 0)
					memcpy(out, e->arr + (size_t) row * (size_t) e->alen,
						   (size_t) e->alen * sizeof(float));
				if (e->missing)
					out[e->alen] = 0.0f;
			}
			break;
	}
}

static gnn_status
check_encode(const gnn_col_encoder *e, const float *out, bool ok_kind, const char *fn,
			 gnn_error *err)
{
	if (!e || !out)
		return gnn_error_set(err, GNN_ERR_INVALID, "%s: no encoder or no output", fn);
	if (!e->finished)
		return gnn_error_set(err, GNN_ERR_INVALID, "%s: the encoder is not finished", fn);
	if (!ok_kind)
		return gnn_error_set(err, GNN_ERR_INVALID, "%s: not for a %s column", fn,
							 gnn_enc_kind_name(e->kind));
	return GNN_OK;
}

/*
 * A NULL for a column that saw none at fit time has no indicator column: it
 * is encoded as the mean alone (a category's: all slots 0), the best guess
 * the encoding can hold.
 */
gnn_status
gnn_enc_encode_num(const gnn_col_encoder *e, double v, bool isnull, float *out, gnn_error *err)
{
	gnn_status	st = check_encode(e, out, e && kind_is_scalar(e->kind), "gnn_enc_encode_num", err);

	if (st != GNN_OK)
		return st;
	if (!isnull && !isfinite(v))
		return row_error(err, -1, GNN_ERR_INVALID, "%s value %g is not finite",
						 gnn_enc_kind_name(e->kind), v);
	if (isnull)
		enc_num_null(e, out);
	else
	{
		out[0] = enc_num_value(e, v);
		if (e->missing)
			out[1] = 0.0f;
	}
	return GNN_OK;
}

gnn_status
gnn_enc_encode_text(const gnn_col_encoder *e, const char *s, size_t len, bool isnull, float *out,
					gnn_error *err)
{
	gnn_status	st = check_encode(e, out, e && e->kind == GNN_ENC_CATEGORY,
								  "gnn_enc_encode_text", err);

	if (st != GNN_OK)
		return st;
	if (!isnull && !s && len > 0)
		return gnn_error_set(err, GNN_ERR_INVALID, "gnn_enc_encode_text: no text");
	enc_cat(e, isnull ? -1 : cat_lookup(e, s ? s : "", len), isnull, out);
	return GNN_OK;
}

gnn_status
gnn_enc_encode_array(const gnn_col_encoder *e, const float *v, int32_t len, bool isnull,
					 float *out, gnn_error *err)
{
	gnn_status	st = check_encode(e, out, e && e->kind == GNN_ENC_ARRAY, "gnn_enc_encode_array",
								  err);

	if (st != GNN_OK)
		return st;
	if (isnull)
	{
		enc_array_null(e, out);
		return GNN_OK;
	}
	if (len != e->alen)
		return row_error(err, -1, GNN_ERR_INVALID,
						 "array of length %d where the column's arrays have length %d",
						 len, e->alen);
	if (len > 0 && !v)
		return gnn_error_set(err, GNN_ERR_INVALID, "gnn_enc_encode_array: no values");
	for (int32_t j = 0; j < len; j++)
		if (!isfinite(v[j]))
			return row_error(err, -1, GNN_ERR_INVALID, "array element %d (%g) is not finite",
							 j, (double) v[j]);
	if (len > 0)
		memcpy(out, v, (size_t) len * sizeof(float));
	if (e->missing)
		out[len] = 0.0f;
	return GNN_OK;
}

/* ------------------------------------------------------------------ feature blocks */

gnn_status
gnn_enc_write_rows_perm(gnn_col_encoder *const *encs, int ncols, int64_t rows,
						const int64_t *src_row, float *out, int64_t ld, int32_t col0,
						int nthreads, gnn_error *err)
{
	int64_t		total = 0;
	int32_t    *off;

	if (ncols < 0 || rows < 0 || col0 < 0 || (ncols > 0 && !encs) || (rows > 0 && !out))
		return gnn_error_set(err, GNN_ERR_INVALID, "gnn_enc_write_rows: bad arguments");
	for (int c = 0; c < ncols; c++)
	{
		const gnn_col_encoder *e = encs[c];

		if (!e || !e->finished || !e->has_rows)
			return gnn_error_set(err, GNN_ERR_INVALID,
								 "gnn_enc_write_rows: column %d is %s", c,
								 !e ? "missing" : !e->finished ? "not finished" : "without rows");
		if (!src_row && e->rows < rows)
			return gnn_error_set(err, GNN_ERR_INVALID,
								 "gnn_enc_write_rows: column %d has %lld rows, %lld wanted",
								 c, (long long) e->rows, (long long) rows);
		total += e->width;
	}
	if (col0 + total > ld)
		return gnn_error_set(err, GNN_ERR_INVALID,
							 "gnn_enc_write_rows: %lld columns from column %d do not fit rows of %lld",
							 (long long) total, col0, (long long) ld);
	if (src_row && ncols > 0)
	{
		int64_t		have = encs[0]->rows;

		for (int c = 1; c < ncols; c++)
			have = encs[c]->rows < have ? encs[c]->rows : have;
		for (int64_t r = 0; r < rows; r++)
			if (src_row[r] < 0 || src_row[r] >= have)
				return row_error(err, r, GNN_ERR_INVALID,
								 "gnn_enc_write_rows: row %lld maps to source row %lld of %lld",
								 (long long) r, (long long) src_row[r], (long long) have);
	}
	if (rows == 0 || ncols == 0)
		return GNN_OK;
	off = malloc((size_t) ncols * sizeof(int32_t));
	if (!off)
		return gnn_error_set(err, GNN_ERR_NOMEM, "gnn_enc_write_rows: out of memory");
	off[0] = col0;
	for (int c = 1; c < ncols; c++)
		off[c] = off[c - 1] + encs[c - 1]->width;
	if (nthreads < 1)
		nthreads = 1;

#pragma omp parallel for num_threads(nthreads) schedule(static) if (nthreads > 1 && rows > 4096)
	for (int64_t r = 0; r < rows; r++)
	{
		float	   *o = out + r * ld;
		int64_t		s = src_row ? src_row[r] : r;

		for (int c = 0; c < ncols; c++)
			gnn_enc_write(encs[c], s, o + off[c]);
	}
	free(off);
	return GNN_OK;
}

gnn_status
gnn_enc_write_rows(gnn_col_encoder *const *encs, int ncols, int64_t rows, float *out, int64_t ld,
				   int32_t col0, int nthreads, gnn_error *err)
{
	return gnn_enc_write_rows_perm(encs, ncols, rows, NULL, out, ld, col0, nthreads, err);
}

/* ------------------------------------------------------------------ JSON writer */

static void
sb_printf(gnn_bytes *b, const char *fmt,...) __attribute__((format(printf, 2, 3)));

static void
sb_printf(gnn_bytes *b, const char *fmt,...)
{
	char		tmp[64];
	va_list		ap;
	int			n;

	va_start(ap, fmt);
	n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	if (n < 0 || n >= (int) sizeof(tmp))
		b->oom = true;			/* never: numbers only */
	else
		gnn_bytes_put(b, tmp, (size_t) n);
}

/* 17 significant digits: strtod gives back the same double */
static void
sb_double(gnn_bytes *b, double v)
{
	sb_printf(b, "%.17g", v);
}

/*
 * A JSON string.  Bytes >= 0x80 pass through as they are (the server's text
 * is valid in its encoding); control characters and DEL are escaped.
 */
static void
sb_string(gnn_bytes *b, const char *s, size_t len)
{
	size_t		run = 0;

	gnn_bytes_put(b, "\"", 1);
	for (size_t i = 0; i < len; i++)
	{
		unsigned char ch = (unsigned char) s[i];
		const char *esc = NULL;
		char		u[8];

		if (ch >= 0x20 && ch != '"' && ch != '\\' && ch != 0x7f)
			continue;
		gnn_bytes_put(b, s + run, i - run);
		run = i + 1;
		switch (ch)
		{
			case '"':
				esc = "\\\"";
				break;
			case '\\':
				esc = "\\\\";
				break;
			case '\n':
				esc = "\\n";
				break;
			case '\t':
				esc = "\\t";
				break;
			case '\r':
				esc = "\\r";
				break;
			case '\b':
				esc = "\\b";
				break;
			case '\f':
				esc = "\\f";
				break;
			default:
				snprintf(u, sizeof(u), "\\u%04x", ch);
				esc = u;
		}
		gnn_bytes_put(b, esc, strlen(esc));
	}
	gnn_bytes_put(b, s + run, len - run);
	gnn_bytes_put(b, "\"", 1);
}

char *
gnn_enc_describe(const gnn_col_encoder *e)
{
	gnn_bytes	b = {0};

	if (!e || !e->finished)
		return NULL;
	sb_printf(&b, "{\"kind\":\"%s\",\"width\":%d", gnn_enc_kind_name(e->kind), e->width);
	switch (e->kind)
	{
		case GNN_ENC_NUMERIC:
		case GNN_ENC_TIME:
			gnn_bytes_put(&b, ",\"mean\":", 8);
			sb_double(&b, e->mean);
			gnn_bytes_put(&b, ",\"std\":", 7);
			sb_double(&b, e->std);
			break;
		case GNN_ENC_BOOL:
			gnn_bytes_put(&b, ",\"mean\":", 8);
			sb_double(&b, e->mean);
			break;
		case GNN_ENC_CATEGORY:
			sb_printf(&b, ",\"max_categories\":%d,\"categories\":[", e->max_categories);
			for (int32_t i = 0; i < e->nkept; i++)
			{
				if (i)
					gnn_bytes_put(&b, ",", 1);
				sb_string(&b, e->cat[i], e->cat_len[i]);
			}
			sb_printf(&b, "],\"other\":%s", e->other ? "true" : "false");
			break;
		case GNN_ENC_ARRAY:
			sb_printf(&b, ",\"length\":%d,\"means\":[", e->alen);
			for (int32_t j = 0; j < e->alen; j++)
			{
				if (j)
					gnn_bytes_put(&b, ",", 1);
				sb_double(&b, e->amean[j]);
			}
			gnn_bytes_put(&b, "]", 1);
			break;
	}
	sb_printf(&b, ",\"missing\":%s}", e->missing ? "true" : "false");
	if (b.oom)
	{
		free(b.p);
		return NULL;
	}
	return b.p;
}

/* ------------------------------------------------------------------ JSON reader */

typedef struct jparse
{
	const char *p;
	const char *start;
	gnn_error  *err;
	bool		failed;
	bool		oom;
} jparse;

static bool
jfail(jparse *j, const char *what)
{
	if (!j->failed)
	{
		j->failed = true;
		gnn_error_set(j->err, j->oom ? GNN_ERR_NOMEM : GNN_ERR_INVALID,
					  "encoding JSON: %s at offset %ld", what, (long) (j->p - j->start));
	}
	return false;
}

static void
jws(jparse *j)
{
	while (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r')
		j->p++;
}

static bool
jexpect(jparse *j, char c)
{
	jws(j);
	if (*j->p != c)
	{
		char		what[32];

		snprintf(what, sizeof(what), "expected '%c'", c);
		return jfail(j, what);
	}
	j->p++;
	return true;
}

static int
hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static bool
jhex4(jparse *j, uint32_t *cp)
{
	uint32_t	v = 0;

	for (int i = 0; i < 4; i++)
	{
		int			h = hexval(j->p[i]);

		if (h < 0)
			return jfail(j, "bad \\u escape");
		v = v * 16 + (uint32_t) h;
	}
	j->p += 4;
	*cp = v;
	return true;
}

/* append code point cp as UTF-8 */
static void
put_utf8(gnn_bytes *b, uint32_t cp)
{
	char		u[4];
	size_t		n;

	if (cp < 0x80)
	{
		u[0] = (char) cp;
		n = 1;
	}
	else if (cp < 0x800)
	{
		u[0] = (char) (0xc0 | (cp >> 6));
		u[1] = (char) (0x80 | (cp & 0x3f));
		n = 2;
	}
	else if (cp < 0x10000)
	{
		u[0] = (char) (0xe0 | (cp >> 12));
		u[1] = (char) (0x80 | ((cp >> 6) & 0x3f));
		u[2] = (char) (0x80 | (cp & 0x3f));
		n = 3;
	}
	else
	{
		u[0] = (char) (0xf0 | (cp >> 18));
		u[1] = (char) (0x80 | ((cp >> 12) & 0x3f));
		u[2] = (char) (0x80 | ((cp >> 6) & 0x3f));
		u[3] = (char) (0x80 | (cp & 0x3f));
		n = 4;
	}
	gnn_bytes_put(b, u, n);
}

/* A string into a malloc'd buffer (*len bytes, NUL-terminated too). */
static bool
jstring(jparse *j, char **out, size_t *len)
{
	gnn_bytes	b = {0};

	*out = NULL;
	if (!jexpect(j, '"'))
		return false;
	gnn_bytes_put(&b, "", 0);			/* an empty string is a buffer too */
	for (;;)
	{
		const char *run = j->p;

		while (*j->p && *j->p != '"' && *j->p != '\\' && (unsigned char) *j->p >= 0x20)
			j->p++;
		gnn_bytes_put(&b, run, (size_t) (j->p - run));
		if (*j->p == '"')
		{
			j->p++;
			break;
		}
		if (*j->p != '\\')
		{
			free(b.p);
			return jfail(j, *j->p ? "control character in a string" : "unterminated string");
		}
		j->p++;
		switch (*j->p++)
		{
			case '"':
				gnn_bytes_put(&b, "\"", 1);
				break;
			case '\\':
				gnn_bytes_put(&b, "\\", 1);
				break;
			case '/':
				gnn_bytes_put(&b, "/", 1);
				break;
			case 'n':
				gnn_bytes_put(&b, "\n", 1);
				break;
			case 't':
				gnn_bytes_put(&b, "\t", 1);
				break;
			case 'r':
				gnn_bytes_put(&b, "\r", 1);
				break;
			case 'b':
				gnn_bytes_put(&b, "\b", 1);
				break;
			case 'f':
				gnn_bytes_put(&b, "\f", 1);
				break;
			case 'u':
				{
					uint32_t	cp,
								lo;

					if (!jhex4(j, &cp))
					{
						free(b.p);
						return false;
					}
					/* a surrogate pair: the writer never makes one, other writers do */
					if (cp >= 0xd800 && cp < 0xdc00 && j->p[0] == '\\' && j->p[1] == 'u')
					{
						j->p += 2;
						if (!jhex4(j, &lo) || lo < 0xdc00 || lo >= 0xe000)
						{
							free(b.p);
							return jfail(j, "bad surrogate pair");
						}
						cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
					}
					else if (cp >= 0xd800 && cp < 0xe000)
					{
						free(b.p);
						return jfail(j, "lone surrogate");
					}
					put_utf8(&b, cp);
					break;
				}
			default:
				j->p--;
				free(b.p);
				return jfail(j, "bad escape");
		}
	}
	if (b.oom)
	{
		free(b.p);
		j->oom = true;
		return jfail(j, "out of memory");
	}
	*out = b.p;
	*len = b.n;
	return true;
}

/* a number by the JSON grammar, converted by strtod */
static bool
jnumber(jparse *j, double *v)
{
	const char *s;
	char		tmp[64];
	char	   *end;

	jws(j);
	s = j->p;
	if (*j->p == '-')
		j->p++;
	if (*j->p == '0')
		j->p++;
	else if (*j->p >= '1' && *j->p <= '9')
		while (*j->p >= '0' && *j->p <= '9')
			j->p++;
	else
		return jfail(j, "expected a number");
	if (*j->p == '.')
	{
		j->p++;
		if (!(*j->p >= '0' && *j->p <= '9'))
			return jfail(j, "bad number");
		while (*j->p >= '0' && *j->p <= '9')
			j->p++;
	}
	if (*j->p == 'e' || *j->p == 'E')
	{
		j->p++;
		if (*j->p == '+' || *j->p == '-')
			j->p++;
		if (!(*j->p >= '0' && *j->p <= '9'))
			return jfail(j, "bad number");
		while (*j->p >= '0' && *j->p <= '9')
			j->p++;
	}
	if ((size_t) (j->p - s) >= sizeof(tmp))
		return jfail(j, "number too long");
	memcpy(tmp, s, (size_t) (j->p - s));
	tmp[j->p - s] = '\0';
	*v = strtod(tmp, &end);
	if (*end != '\0' || !isfinite(*v))
		return jfail(j, "bad number");
	return true;
}

static bool
jint(jparse *j, int32_t *v)
{
	double		d;

	if (!jnumber(j, &d))
		return false;
	if (d != floor(d) || d < 0 || d > INT32_MAX)
		return jfail(j, "expected a non-negative integer");
	*v = (int32_t) d;
	return true;
}

static bool
jbool(jparse *j, bool *v)
{
	jws(j);
	if (strncmp(j->p, "true", 4) == 0)
	{
		j->p += 4;
		*v = true;
		return true;
	}
	if (strncmp(j->p, "false", 5) == 0)
	{
		j->p += 5;
		*v = false;
		return true;
	}
	return jfail(j, "expected true or false");
}

/* Skip any value (for keys this version does not know). */
static bool
jskip(jparse *j, int depth)
{
	jws(j);
	if (depth > ENC_JSON_MAX_DEPTH)
		return jfail(j, "nested too deeply");
	switch (*j->p)
	{
		case '"':
			{
				char	   *s;
				size_t		len;

				if (!jstring(j, &s, &len))
					return false;
				free(s);
				return true;
			}
		case '{':
		case '[':
			{
				char		close = *j->p == '{' ? '}' : ']';
				bool		obj = close == '}';

				j->p++;
				jws(j);
				if (*j->p == close)
				{
					j->p++;
					return true;
				}
				for (;;)
				{
					if (obj && (!jskip(j, depth + 1) || !jexpect(j, ':')))
						return false;
					if (!jskip(j, depth + 1))
						return false;
					jws(j);
					if (*j->p == close)
					{
						j->p++;
						return true;
					}
					if (!jexpect(j, ','))
						return false;
				}
			}
		case 't':
		case 'f':
			{
				bool		b;

				return jbool(j, &b);
			}
		case 'n':
			if (strncmp(j->p, "null", 4) == 0)
			{
				j->p += 4;
				return true;
			}
			return jfail(j, "bad literal");
		default:
			{
				double		d;

				return jnumber(j, &d);
			}
	}
}

/* fields of the object, as read */
typedef struct jfields
{
	char	   *kind;
	bool		has_width,
				has_mean,
				has_std,
				has_missing,
				has_other,
				has_length,
				has_max,
				has_cats,
				has_means;
	int32_t		width,
				length,
				max_categories;
	double		mean,
				std;
	bool		missing,
				other;
	char	  **cats;
	size_t	   *cat_len;
	int32_t		ncats;
	double	   *means;
	int32_t		nmeans;
} jfields;

static void
jfields_free(jfields *f)
{
	free(f->kind);
	for (int32_t i = 0; i < f->ncats; i++)
		free(f->cats[i]);
	free(f->cats);
	free(f->cat_len);
	free(f->means);
}

/* "[" item ("," item)* "]" where an item is a string (strs) or a number */
static bool
jarray(jparse *j, bool strs, jfields *f)
{
	int32_t		n = 0,
				cap = 0;

	if (!jexpect(j, '['))
		return false;
	jws(j);
	if (*j->p == ']')
	{
		j->p++;
		return true;
	}
	for (;;)
	{
		if (n == cap)
		{
			int32_t		nc = cap ? cap * 2 : 16;

			if (nc < cap)
				return jfail(j, "array too long");
			if (strs)
			{
				char	  **c = realloc(f->cats, (size_t) nc * sizeof(char *));
				size_t	   *l;

				if (c)
					f->cats = c;
				l = c ? realloc(f->cat_len, (size_t) nc * sizeof(size_t)) : NULL;
				if (!l)
				{
					j->oom = true;
					return jfail(j, "out of memory");
				}
				f->cat_len = l;
			}
			else
			{
				double	   *m = realloc(f->means, (size_t) nc * sizeof(double));

				if (!m)
				{
					j->oom = true;
					return jfail(j, "out of memory");
				}
				f->means = m;
			}
			cap = nc;
		}
		if (strs)
		{
			if (!jstring(j, &f->cats[n], &f->cat_len[n]))
				return false;
			f->ncats = ++n;
		}
		else
		{
			if (!jnumber(j, &f->means[n]))
				return false;
			f->nmeans = ++n;
		}
		jws(j);
		if (*j->p == ']')
		{
			j->p++;
			return true;
		}
		if (!jexpect(j, ','))
			return false;
	}
}

static bool
jfield(jparse *j, const char *key, jfields *f)
{
#define ONCE(flag) do { if (f->flag) return jfail(j, "duplicate key"); f->flag = true; } while (0)
	if (strcmp(key, "kind") == 0)
	{
		size_t		len;

		if (f->kind)
			return jfail(j, "duplicate key");
		return jstring(j, &f->kind, &len);
	}
	if (strcmp(key, "width") == 0)
	{
		ONCE(has_width);
		return jint(j, &f->width);
	}
	if (strcmp(key, "length") == 0)
	{
		ONCE(has_length);
		return jint(j, &f->length);
	}
	if (strcmp(key, "max_categories") == 0)
	{
		ONCE(has_max);
		return jint(j, &f->max_categories);
	}
	if (strcmp(key, "mean") == 0)
	{
		ONCE(has_mean);
		return jnumber(j, &f->mean);
	}
	if (strcmp(key, "std") == 0)
	{
		ONCE(has_std);
		return jnumber(j, &f->std);
	}
	if (strcmp(key, "missing") == 0)
	{
		ONCE(has_missing);
		return jbool(j, &f->missing);
	}
	if (strcmp(key, "other") == 0)
	{
		ONCE(has_other);
		return jbool(j, &f->other);
	}
	if (strcmp(key, "categories") == 0)
	{
		ONCE(has_cats);
		return jarray(j, true, f);
	}
	if (strcmp(key, "means") == 0)
	{
		ONCE(has_means);
		return jarray(j, false, f);
	}
#undef ONCE
	return jskip(j, 1);
}

/* check the fields against the kind and move them into a finished encoder */
static gnn_status
jbuild(jfields *f, gnn_col_encoder **out, gnn_error *err)
{
	gnn_enc_kind kind;
	gnn_col_encoder *e;
	int32_t		width;
	gnn_status	st;

#define BAD(...) return gnn_error_set(err, GNN_ERR_INVALID, "encoding JSON: " __VA_ARGS__)
	if (!f->kind || !kind_from_name(f->kind, &kind))
		BAD("no known \"kind\"");
	if (!f->has_width || !f->has_missing)
		BAD("\"width\" and \"missing\" are required");
	switch (kind)
	{
		case GNN_ENC_NUMERIC:
		case GNN_ENC_TIME:
			if (!f->has_mean || !f->has_std || !(f->std > 0))
				BAD("a %s encoding needs \"mean\" and a positive \"std\"", f->kind);
			width = 1;
			break;
		case GNN_ENC_BOOL:
			if (!f->has_mean || f->mean < 0 || f->mean > 1)
				BAD("a bool encoding needs \"mean\" in [0, 1]");
			width = 1;
			break;
		case GNN_ENC_CATEGORY:
			if (!f->has_cats || !f->has_other)
				BAD("a category encoding needs \"categories\" and \"other\"");
			if (!f->has_max)
				f->max_categories = f->ncats > 0 ? f->ncats : 1;
			if (f->max_categories < 1 || f->ncats > f->max_categories)
				BAD("%d categories for max_categories %d", f->ncats, f->max_categories);
			width = f->ncats + (f->other ? 1 : 0);
			break;
		case GNN_ENC_ARRAY:
			if (!f->has_length)
				f->length = f->nmeans;
			if (!f->has_means || f->nmeans != f->length)
				BAD("an array encoding needs \"means\" for its %d elements", f->length);
			width = f->length;
			break;
		default:
			BAD("no known \"kind\"");
	}
	width += f->missing ? 1 : 0;
	if (width != f->width)
		BAD("\"width\" %d where the encoding has %d columns", f->width, width);
#undef BAD

	if ((st = gnn_enc_create(kind, kind == GNN_ENC_CATEGORY ? f->max_categories : 0, &e, err))
		!= GNN_OK)
		return st;
	gnn_enc_drop_rows(e);
	e->finished = true;
	e->width = width;
	e->missing = f->missing;
	e->mean = kind_is_scalar(kind) ? f->mean : 0;
	e->std = kind == GNN_ENC_BOOL || !kind_is_scalar(kind) ? 1 : f->std;
	if (kind == GNN_ENC_CATEGORY)
	{
		/* take the strings over */
		e->cat = f->cats ? f->cats : calloc(1, sizeof(char *));
		e->cat_len = f->cat_len ? f->cat_len : calloc(1, sizeof(size_t));
		e->nkept = f->ncats;
		e->other = f->other;
		f->cats = NULL;
		f->cat_len = NULL;
		f->ncats = 0;
		if (!e->cat || !e->cat_len)
			st = gnn_error_set(err, GNN_ERR_NOMEM, "encoding JSON: out of memory");
		else if ((st = build_cat_lookup(e)) != GNN_OK)
			st = gnn_error_set(err, st == GNN_ERR_NOMEM ? GNN_ERR_NOMEM : GNN_ERR_INVALID,
							   st == GNN_ERR_NOMEM ? "encoding JSON: out of memory" :
							   "encoding JSON: a category is listed twice");
	}
	else if (kind == GNN_ENC_ARRAY)
	{
		e->alen = f->length;
		e->amean = f->means ? f->means : calloc(1, sizeof(double));
		f->means = NULL;
		f->nmeans = 0;
		if (!e->amean)
			st = gnn_error_set(err, GNN_ERR_NOMEM, "encoding JSON: out of memory");
	}
	if (st != GNN_OK)
	{
		gnn_enc_free(e);
		return st;
	}
	*out = e;
	return GNN_OK;
}

gnn_status
gnn_enc_from_json(const char *json, gnn_col_encoder **out, gnn_error *err)
{
	jparse		j = {0};
	jfields		f = {0};
	gnn_status	st;

	if (out)
		*out = NULL;			/* whatever fails, the caller holds no encoder */
	if (!out || !json)
		return gnn_error_set(err, GNN_ERR_INVALID, "gnn_enc_from_json: no JSON or no output");
	j.p = j.start = json;
	j.err = err;
	if (!jexpect(&j, '{'))
		goto fail;
	jws(&j);
	if (*j.p != '}')
		for (;;)
		{
			char	   *key;
			size_t		len;
			bool		ok;

			if (!jstring(&j, &key, &len))
				goto fail;
			ok = strlen(key) == len && jexpect(&j, ':') && jfield(&j, key, &f);
			free(key);
			if (!ok)
				goto fail;
			jws(&j);
			if (*j.p == '}')
				break;
			if (!jexpect(&j, ','))
				goto fail;
		}
	j.p++;
	jws(&j);
	if (*j.p != '\0')
	{
		jfail(&j, "text after the object");
		goto fail;
	}
	st = jbuild(&f, out, err);
	jfields_free(&f);
	return st;

fail:
	if (!j.failed)
		jfail(&j, "bad key");
	jfields_free(&f);
	return j.oom ? GNN_ERR_NOMEM : GNN_ERR_INVALID;
}

gnn_status
gnn_enc_from_json_rows(const char *json, gnn_col_encoder **out, gnn_error *err)
{
	gnn_status	st = gnn_enc_from_json(json, out, err);
	gnn_col_encoder *e;

	if (st != GNN_OK)
		return st;
	/* reopen for feeding: empty buffers, the encoding fixed */
	e = *out;
	e->finished = false;
	e->has_rows = true;
	e->fixed = true;
	return GNN_OK;
}

int64_t
gnn_enc_distinct(const gnn_col_encoder *e)
{
	return (e && e->kind == GNN_ENC_CATEGORY) ? e->ndict : -1;
}

double
gnn_enc_coverage(const gnn_col_encoder *e)
{
	int64_t		kept = 0,
				nonnull;

	if (!e || e->kind != GNN_ENC_CATEGORY || !e->finished || !e->dict || !e->slot_of_code)
		return 1.0;
	nonnull = e->rows - e->nulls;
	if (nonnull <= 0)
		return 1.0;
	for (int32_t c = 0; c < e->ndict; c++)
		if (e->slot_of_code[c] >= 0)
			kept += e->dict[c].count;
	return (double) kept / (double) nonnull;
}
