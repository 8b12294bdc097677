/*
 * serialize.c: the model blob (format in serialize.h).  The reader is a
 * cursor with a bounds check on every read; nothing is allocated from a
 * size field until the bytes behind it are known to be in the blob.
 */
#include "nn/serialize.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GNN_BLOB_MAX_TENSORS 256

uint32_t
gnn_crc32(const void *data, size_t len)
{
	uint32_t	table[256];
	const uint8_t *p = data;
	uint32_t	crc = 0xffffffffu;

	for (uint32_t i = 0; i < 256; i++)
	{
		uint32_t	c = i;

		for (int k = 0; k < 8; k++)
			c = (c & 1) ? 0xedb88320u ^ (c >> 1) : c >> 1;
		table[i] = c;
	}
	for (size_t i = 0; i < len; i++)
		crc = table[(crc ^ p[i]) & 0xff] ^ (crc >> 8);
	return crc ^ 0xffffffffu;
}

/* ------------------------------------------------------------------ writer */

/* the format is little-endian; so are all hosts we build for */
#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "serialize.c assumes a little-endian host"
#endif

static void put_u16(gnn_bytes *w, uint16_t v) { gnn_bytes_put(w, &v, 2); }
static void put_u32(gnn_bytes *w, uint32_t v) { gnn_bytes_put(w, &v, 4); }
static void put_i32(gnn_bytes *w, int32_t v) { gnn_bytes_put(w, &v, 4); }
static void put_u64(gnn_bytes *w, uint64_t v) { gnn_bytes_put(w, &v, 8); }
static void put_i64(gnn_bytes *w, int64_t v) { gnn_bytes_put(w, &v, 8); }
static void put_f32(gnn_bytes *w, float v) { gnn_bytes_put(w, &v, 4); }

gnn_status
gnn_model_serialize(gnn_model *m, const gnn_model_meta *meta, void **blob, size_t *size,
					gnn_error *err)
{
	const gnn_model_config *c = gnn_model_config_of(m);
	gnn_model_meta zero;
	gnn_bytes	w = {0};
	size_t		len_at;
	uint64_t	total = 0;
	uint32_t	crc;
	float	   *tmp = NULL;
	gnn_status	st = GNN_OK;

	*blob = NULL;
	*size = 0;
	if (!meta)
	{
		memset(&zero, 0, sizeof(zero));
		meta = &zero;
	}
	gnn_bytes_put(&w, GNN_BLOB_MAGIC, 4);
	put_u32(&w, GNN_BLOB_VERSION);
	len_at = w.n;
	put_u64(&w, 0);				/* total_len, patched below */
	put_u32(&w, (uint32_t) c->kind);
	put_u32(&w, (uint32_t) c->aggr);
	put_i32(&w, c->in_dim);
	put_i32(&w, c->hidden);
	put_i32(&w, c->out_dim);
	put_i32(&w, c->layers);
	put_i32(&w, c->heads);
	put_i32(&w, c->out_heads);
	put_u32(&w, (uint32_t) c->act);
	put_f32(&w, c->dropout);
	put_f32(&w, c->attn_dropout);
	put_f32(&w, c->negative_slope);
	put_f32(&w, c->act_param);
	/* flag 2: the relational fields follow (older readers refuse the blob as
	 * having unknown flags rather than misread it) */
	put_u32(&w, (c->decay_first_only ? 1u : 0u) |
			(c->kind == GNN_MODEL_RGCN || c->kind == GNN_MODEL_HSAGE ? 2u : 0u));
	if (c->kind == GNN_MODEL_RGCN || c->kind == GNN_MODEL_HSAGE)
	{
		put_i32(&w, c->num_relations);
		put_i32(&w, c->num_node_types);
		put_i32(&w, c->num_bases);
	}
	put_f32(&w, meta->lr);
	put_f32(&w, meta->weight_decay);
	put_i32(&w, meta->epochs);
	put_i32(&w, meta->best_epoch);
	put_u32(&w, meta->optimizer);
	put_u64(&w, meta->seed);
	put_f32(&w, meta->val_acc);
	put_f32(&w, meta->test_acc);
	put_u32(&w, (uint32_t) gnn_model_num_params(m));
	for (int i = 0; i < gnn_model_num_params(m) && st == GNN_OK; i++)
	{
		gnn_param  *p = gnn_model_param(m, i);
		int64_t		n = gnn_tensor_numel(&p->w);
		uint16_t	nl = (uint16_t) strlen(p->name);

		put_u16(&w, nl);
		gnn_bytes_put(&w, p->name, nl);
		put_i64(&w, p->w.rows);
		put_i64(&w, p->w.cols);
		tmp = malloc(sizeof(float) * (n + 1));
		if (!tmp)
		{
			w.oom = true;
			break;
		}
		st = gnn_tensor_download(&p->w, tmp, err);
		gnn_bytes_put(&w, tmp, sizeof(float) * n);
		free(tmp);
		tmp = NULL;
	}
	if (st == GNN_OK && w.oom)
		st = gnn_error_set(err, GNN_ERR_NOMEM, "out of memory serialising a model");
	if (st != GNN_OK)
	{
		free(w.p);
		return st;
	}
	total = w.n + 4;
	memcpy(w.p + len_at, &total, 8);
	crc = gnn_crc32(w.p, w.n);
	put_u32(&w, crc);
	if (w.oom)
	{
		free(w.p);
		return gnn_error_set(err, GNN_ERR_NOMEM, "out of memory serialising a model");
	}
	*blob = w.p;
	*size = w.n;
	return GNN_OK;
}

/* ------------------------------------------------------------------ reader */

typedef struct rbuf
{
	const uint8_t *p;
	size_t		n;
	size_t		pos;
} rbuf;

static bool
get(rbuf *r, void *dst, size_t len)
{
	if (len > r->n - r->pos)
		return false;
	memcpy(dst, r->p + r->pos, len);
	r->pos += len;
	return true;
}

typedef struct tview
{
	char		name[GNN_PARAM_NAME_LEN];
	int64_t		rows;
	int64_t		cols;
	size_t		data_at;		/* offset of the floats in the blob */
} tview;

/* what the architecture implies, for comparison */
typedef struct expect
{
	int			n;
	tview		t[GNN_BLOB_MAX_TENSORS];
} expect;

static void
expect_cb(void *arg, const char *name, int64_t rows, int64_t cols)
{
	expect	   *e = arg;

	if (e->n < GNN_BLOB_MAX_TENSORS)
	{
		snprintf(e->t[e->n].name, GNN_PARAM_NAME_LEN, "%s", name);
		e->t[e->n].rows = rows;
		e->t[e->n].cols = cols;
	}
	e->n++;
}

#define CORRUPT(...) do { st = gnn_error_set(err, GNN_ERR_CORRUPT, __VA_ARGS__); goto done; } while (0)

/* The blob's first 16 bytes: magic, format version, and *total (the length it says it has). */
static gnn_status
prefix_parse(rbuf *r, uint64_t *total, gnn_error *err)
{
	char		magic[4];
	uint32_t	version = 0;

	if (!get(r, magic, 4) || !get(r, &version, 4) || !get(r, total, 8))
		return gnn_error_set(err, GNN_ERR_CORRUPT, "model blob too short (%zu bytes)", r->n);
	if (memcmp(magic, GNN_BLOB_MAGIC, 4) != 0)
		return gnn_error_set(err, GNN_ERR_CORRUPT, "not a gnn model blob (bad magic)");
	if (version != GNN_BLOB_VERSION)
		return gnn_error_set(err, GNN_ERR_CORRUPT,
							 "model blob format version %u is not supported (this build reads version %d)",
							 version, GNN_BLOB_VERSION);
	return GNN_OK;
}

/*
 * The architecture and hyper-parameters that follow the blob's first 16
 * bytes, validated as far as they go (gnn_model_config_check).
 */
static gnn_status
header_parse(rbuf *r, gnn_model_config *cfg_out, gnn_model_meta *meta_out, gnn_error *err)
{
	uint32_t	u;
	gnn_model_config c;
	gnn_model_meta meta;
	gnn_status	st = GNN_OK;

	memset(&c, 0, sizeof(c));
	if (!get(r, &u, 4))
		CORRUPT("model blob truncated in the architecture");
	c.kind = (gnn_model_kind) u;
	if (!get(r, &u, 4))
		CORRUPT("model blob truncated in the architecture");
	c.aggr = (gnn_aggr) u;
	if (!get(r, &c.in_dim, 4) || !get(r, &c.hidden, 4) || !get(r, &c.out_dim, 4) ||
		!get(r, &c.layers, 4) || !get(r, &c.heads, 4) || !get(r, &c.out_heads, 4) ||
		!get(r, &u, 4))
		CORRUPT("model blob truncated in the architecture");
	c.act = (gnn_act) u;
	if (!get(r, &c.dropout, 4) || !get(r, &c.attn_dropout, 4) || !get(r, &c.negative_slope, 4) ||
		!get(r, &c.act_param, 4) || !get(r, &u, 4))
		CORRUPT("model blob truncated in the architecture");
	if (u > 3)
		CORRUPT("model blob has unknown flags %#x", u);
	c.decay_first_only = u & 1;
	c.num_relations = c.num_node_types = 1;
	if ((u & 2) && (!get(r, &c.num_relations, 4) || !get(r, &c.num_node_types, 4) ||
					!get(r, &c.num_bases, 4)))
		CORRUPT("model blob truncated in the architecture");
	if (!isfinite(c.act_param))
		CORRUPT("model blob has a non-finite activation parameter");
	if (gnn_model_config_check(&c, err) != GNN_OK)
	{
		st = GNN_ERR_CORRUPT;
		if (err)
		{
			char		why[GNN_ERRMSG_LEN];

			snprintf(why, sizeof(why), "%s", err->msg);
			gnn_error_set(err, GNN_ERR_CORRUPT, "model blob has an invalid architecture: %s", why);
		}
		goto done;
	}
	memset(&meta, 0, sizeof(meta));
	if (!get(r, &meta.lr, 4) || !get(r, &meta.weight_decay, 4) || !get(r, &meta.epochs, 4) ||
		!get(r, &meta.best_epoch, 4) || !get(r, &meta.optimizer, 4) || !get(r, &meta.seed, 8) ||
		!get(r, &meta.val_acc, 4) || !get(r, &meta.test_acc, 4))
		CORRUPT("model blob truncated in the hyper-parameters");
	*cfg_out = c;
	*meta_out = meta;
done:
	return st;
}

static gnn_status
blob_parse(const void *blob, size_t size, gnn_model_config *cfg_out, gnn_model_meta *meta_out,
		   tview **views_out, int *nviews_out, gnn_error *err)
{
	rbuf		r = {blob, size, 0};
	uint32_t	ntens,
				crc_stored,
				crc;
	uint64_t	total = 0;
	gnn_model_config c;
	gnn_model_meta meta;
	tview	   *tv = NULL;
	expect	   *ex = NULL;
	gnn_status	st = GNN_OK;

	*views_out = NULL;
	*nviews_out = 0;
	memset(&c, 0, sizeof(c));
	if (!blob || size < 4 + 4 + 8 + 4)
		return gnn_error_set(err, GNN_ERR_CORRUPT, "model blob too short (%zu bytes)", size);
	if ((st = prefix_parse(&r, &total, err)) != GNN_OK)
		return st;
	if (total != size)
		return gnn_error_set(err, GNN_ERR_CORRUPT, "model blob is %zu bytes but says %llu (truncated or padded)",
							 size, (unsigned long long) total);
	memcpy(&crc_stored, (const uint8_t *) blob + size - 4, 4);
	crc = gnn_crc32(blob, size - 4);
	if (crc != crc_stored)
		return gnn_error_set(err, GNN_ERR_CORRUPT, "model blob checksum mismatch (stored %08x, computed %08x)",
							 crc_stored, crc);
	r.n = size - 4;				/* the checksum is not payload */

	if ((st = header_parse(&r, &c, &meta, err)) != GNN_OK)
		goto done;
	if (!get(&r, &ntens, 4))
		CORRUPT("model blob truncated before the tensor count");
	if (ntens > GNN_BLOB_MAX_TENSORS)
		CORRUPT("model blob claims %u tensors (at most %d)", ntens, GNN_BLOB_MAX_TENSORS);

	/* what the architecture implies (no allocation proportional to it) */
	ex = calloc(1, sizeof(*ex));
	tv = calloc(ntens + 1, sizeof(tview));
	if (!ex || !tv)
	{
		st = gnn_error_set(err, GNN_ERR_NOMEM, "out of memory reading a model blob");
		goto done;
	}
	if (gnn_model_config_params(&c, expect_cb, ex) < 0)
		CORRUPT("model blob architecture is inconsistent");
	if ((uint32_t) ex->n != ntens)
		CORRUPT("model blob has %u tensors; its architecture needs %d", ntens, ex->n);

	for (uint32_t i = 0; i < ntens; i++)
	{
		uint16_t	nl;
		uint64_t	bytes;

		if (!get(&r, &nl, 2))
			CORRUPT("model blob truncated in tensor %u", i);
		if (nl == 0 || nl >= GNN_PARAM_NAME_LEN)
			CORRUPT("model blob tensor %u has a bad name length %u", i, nl);
		if (!get(&r, tv[i].name, nl))
			CORRUPT("model blob truncated in tensor %u", i);
		tv[i].name[nl] = '\0';
		if (memchr(tv[i].name, '\0', nl))
			CORRUPT("model blob tensor %u has a NUL in its name", i);
		if (!get(&r, &tv[i].rows, 8) || !get(&r, &tv[i].cols, 8))
			CORRUPT("model blob truncated in tensor %s", tv[i].name);
		if (strcmp(tv[i].name, ex->t[i].name) != 0 || tv[i].rows != ex->t[i].rows ||
			tv[i].cols != ex->t[i].cols)
			CORRUPT("model blob tensor %u is %s [%lld x %lld]; the architecture needs %s [%lld x %lld]",
					i, tv[i].name, (long long) tv[i].rows, (long long) tv[i].cols, ex->t[i].name,
					(long long) ex->t[i].rows, (long long) ex->t[i].cols);
		/* shapes match the (validated, bounded) architecture, so this cannot overflow */
		bytes = (uint64_t) tv[i].rows * (uint64_t) tv[i].cols * 4u;
		if (bytes > r.n - r.pos)
			CORRUPT("model blob truncated in the data of %s", tv[i].name);
		tv[i].data_at = r.pos;
		for (uint64_t k = 0; k < bytes / 4; k++)
		{
			float		v;

			memcpy(&v, r.p + r.pos + 4 * k, 4);
			if (!isfinite(v))
				CORRUPT("model blob tensor %s has a non-finite value at %llu", tv[i].name,
						(unsigned long long) k);
		}
		r.pos += bytes;
	}
	if (r.pos != r.n)
		CORRUPT("model blob has %zu trailing bytes", r.n - r.pos);
	if (cfg_out)
		*cfg_out = c;
	if (meta_out)
		*meta_out = meta;
	*views_out = tv;
	*nviews_out = (int) ntens;
	tv = NULL;
done:
	free(tv);
	free(ex);
	return st;
}

gnn_status
gnn_model_blob_check(const void *blob, size_t size, gnn_model_config *cfg, gnn_model_meta *meta,
					 gnn_error *err)
{
	tview	   *tv;
	int			n;
	gnn_status	st = blob_parse(blob, size, cfg, meta, &tv, &n, err);

	free(tv);
	return st;
}

gnn_status
gnn_model_blob_header(const void *prefix, size_t len, gnn_model_config *cfg, gnn_model_meta *meta,
					  gnn_error *err)
{
	rbuf		r = {prefix, prefix ? len : 0, 0};
	uint64_t	total = 0;
	gnn_model_config c;
	gnn_model_meta m;
	gnn_status	st;

	if ((st = prefix_parse(&r, &total, err)) != GNN_OK)
		return st;
	if (total < len)
		return gnn_error_set(err, GNN_ERR_CORRUPT, "model blob says %llu bytes but has at least %zu",
							 (unsigned long long) total, len);
	if ((st = header_parse(&r, &c, &m, err)) != GNN_OK)
		return st;
	if (cfg)
		*cfg = c;
	if (meta)
		*meta = m;
	return GNN_OK;
}

gnn_status
gnn_model_deserialize(gnn_backend *be, const void *blob, size_t size, gnn_model **out,
					  gnn_model_meta *meta, gnn_error *err)
{
	gnn_model_config c;
	tview	   *tv;
	int			n;
	gnn_rng		rng;
	gnn_model  *m = NULL;
	gnn_status	st;

	*out = NULL;
	if ((st = blob_parse(blob, size, &c, meta, &tv, &n, err)) != GNN_OK)
		return st;
	gnn_rng_seed(&rng, 0);
	st = gnn_model_create(be, &c, &rng, &m, err);
	for (int i = 0; st == GNN_OK && i < n; i++)
	{
		gnn_param  *p = gnn_model_param(m, i);
		float	   *tmp;

		if (!p || strcmp(p->name, tv[i].name) != 0)
		{
			st = gnn_error_set(err, GNN_ERR_CORRUPT, "model blob tensor %s does not match the model", tv[i].name);
			break;
		}
		tmp = malloc(sizeof(float) * (gnn_tensor_numel(&p->w) + 1));
		if (!tmp)
		{
			st = gnn_error_set(err, GNN_ERR_NOMEM, "out of memory");
			break;
		}
		memcpy(tmp, (const uint8_t *) blob + tv[i].data_at, sizeof(float) * gnn_tensor_numel(&p->w));
		st = gnn_tensor_upload(&p->w, tmp, err);
		free(tmp);
	}
	free(tv);
	if (st != GNN_OK)
	{
		gnn_model_free(m);
		return st;
	}
	*out = m;
	return GNN_OK;
}
