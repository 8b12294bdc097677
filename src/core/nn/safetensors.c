/*
 * safetensors.c: models in and out as safetensors (safetensors.h says what
 * and how).
 */
#include "nn/safetensors.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_TENSORS 1024
#define NAME_LEN 128

typedef struct st_tensor
{
	char		name[NAME_LEN];
	int			ndims;
	int64_t		shape[2];
	uint64_t	begin;
	uint64_t	end;
	bool		used;
} st_tensor;

typedef struct st_file
{
	st_tensor  *t;
	int			n;
	gnn_st_meta meta;
	const unsigned char *data;
	uint64_t	data_len;
} st_file;

/* ------------------------------------------------------------------ writing */

static void
wstr(gnn_bytes *b, const char *s)
{
	gnn_bytes_put(b, s, strlen(s));
}

/* a JSON string: quotes, backslashes and control characters escaped */
static void
wjson(gnn_bytes *b, const char *s)
{
	gnn_bytes_put(b, "\"", 1);
	for (; *s; s++)
	{
		unsigned char c = (unsigned char) *s;
		char		esc[8];

		if (c == '"' || c == '\\')
		{
			esc[0] = '\\';
			esc[1] = (char) c;
			gnn_bytes_put(b, esc, 2);
		}
		else if (c < 0x20)
		{
			snprintf(esc, sizeof(esc), "\\u%04x", c);
			gnn_bytes_put(b, esc, 6);
		}
		else
			gnn_bytes_put(b, s, 1);
	}
	gnn_bytes_put(b, "\"", 1);
}

typedef struct out_tensor
{
	char		name[NAME_LEN];
	int			ndims;
	int64_t		shape[2];
	float	   *data;			/* malloc'd, in the written layout */
} out_tensor;

static bool
pyg_layout(const gnn_model_config *c)
{
	return c->kind == GNN_MODEL_GCN || c->kind == GNN_MODEL_NODE2VEC ||
		(c->kind == GNN_MODEL_SAGE && c->aggr == GNN_AGGR_MEAN);
}

/* rows x cols of src, transposed into a new cols x rows array */
static float *
transposed(const float *src, int64_t rows, int64_t cols)
{
	float	   *t = malloc(sizeof(float) * (size_t) (rows * cols + 1));

	if (!t)
		return NULL;
	for (int64_t i = 0; i < rows; i++)
		for (int64_t j = 0; j < cols; j++)
			t[j * rows + i] = src[i * cols + j];
	return t;
}

gnn_status
gnn_model_to_safetensors(gnn_model *m, const char *const *keys, const char *const *vals, int nkv,
						 void **blob, size_t *size, gnn_error *err)
{
	const gnn_model_config *c = gnn_model_config_of(m);
	int			np = gnn_model_num_params(m);
	size_t		total = gnn_model_weights_count(m);
	float	   *host = malloc(sizeof(float) * (total + 1));
	out_tensor *ot = calloc((size_t) np + 1, sizeof(out_tensor));
	int			no = 0;
	bool		pyg = pyg_layout(c);
	gnn_bytes	h = {0};
	uint64_t	off = 0,
				hlen;
	char		num[64];
	gnn_status	st = GNN_OK;
	unsigned char *out;

	*blob = NULL;
	*size = 0;
	if (!host || !ot)
	{
		st = gnn_error_set(err, GNN_ERR_NOMEM, "out of memory exporting a model");
		goto done;
	}
	if ((st = gnn_model_weights_get(m, host, err)) != GNN_OK)
		goto done;
	{
		size_t		at = 0;

		for (int i = 0; i < np; i++)
		{
			gnn_param  *p = gnn_model_param(m, i);
			int64_t		r = p->w.rows,
						cc = p->w.cols;
			const float *src = host + at;
			out_tensor *o = &ot[no++];
			int			layer = -1;
			char		what[GNN_PARAM_NAME_LEN] = "";

			at += (size_t) (r * cc);
			(void) sscanf(p->name, "l%d.%31s", &layer, what);
			o->ndims = 2;
			o->shape[0] = r;
			o->shape[1] = cc;
			if (!pyg)
			{
				snprintf(o->name, NAME_LEN, "%s", p->name);
				o->data = malloc(sizeof(float) * (size_t) (r * cc + 1));
				if (o->data)
					memcpy(o->data, src, sizeof(float) * (size_t) (r * cc));
			}
			else if (c->kind == GNN_MODEL_NODE2VEC)
			{
				snprintf(o->name, NAME_LEN, "embedding.weight");
				o->data = malloc(sizeof(float) * (size_t) (r * cc + 1));
				if (o->data)
					memcpy(o->data, src, sizeof(float) * (size_t) (r * cc));
			}
			else if (strcmp(what, "bias") == 0)
			{
				snprintf(o->name, NAME_LEN, c->kind == GNN_MODEL_GCN ? "convs.%d.bias" : "convs.%d.lin_l.bias", layer);
				o->ndims = 1;
				o->shape[0] = r * cc;
				o->shape[1] = 1;
				o->data = malloc(sizeof(float) * (size_t) (r * cc + 1));
				if (o->data)
					memcpy(o->data, src, sizeof(float) * (size_t) (r * cc));
			}
			else
			{
				/* X W with W [in x out] is a Linear of weight W^T [out x in] */
				snprintf(o->name, NAME_LEN, c->kind == GNN_MODEL_GCN ? "convs.%d.lin.weight" :
						 strcmp(what, "root") == 0 ? "convs.%d.lin_r.weight" : "convs.%d.lin_l.weight", layer);
				o->shape[0] = cc;
				o->shape[1] = r;
				o->data = transposed(src, r, cc);
			}
			if (!o->data)
			{
				st = gnn_error_set(err, GNN_ERR_NOMEM, "out of memory exporting a model");
				goto done;
			}
		}
	}

	/* the header: tensors in order, then the metadata */
	wstr(&h, "{");
	for (int i = 0; i < no; i++)
	{
		uint64_t	bytes = sizeof(float) * (uint64_t) (ot[i].shape[0] * (ot[i].ndims == 2 ? ot[i].shape[1] : 1));

		wjson(&h, ot[i].name);
		wstr(&h, ":{\"dtype\":\"F32\",\"shape\":[");
		snprintf(num, sizeof(num), ot[i].ndims == 2 ? "%lld,%lld" : "%lld", (long long) ot[i].shape[0],
				 (long long) ot[i].shape[1]);
		wstr(&h, num);
		snprintf(num, sizeof(num), "],\"data_offsets\":[%llu,%llu]},", (unsigned long long) off,
				 (unsigned long long) (off + bytes));
		wstr(&h, num);
		off += bytes;
	}
	wstr(&h, "\"__metadata__\":{");
	{
		const char *k[16];
		char		v[16][32];
		int			nk = 0;

		k[nk] = "format";
		snprintf(v[nk++], 32, "pt");
		k[nk] = "layout";
		snprintf(v[nk++], 32, "%s", pyg ? "pyg" : "gnn");
		k[nk] = "model";
		snprintf(v[nk++], 32, "%s", gnn_model_kind_name(c->kind));
		k[nk] = "aggr";
		snprintf(v[nk++], 32, "%s", c->aggr == GNN_AGGR_POOL ? "pool" : "mean");
		k[nk] = "in_dim";
		snprintf(v[nk++], 32, "%d", c->in_dim);
		k[nk] = "hidden";
		snprintf(v[nk++], 32, "%d", c->hidden);
		k[nk] = "out_dim";
		snprintf(v[nk++], 32, "%d", c->out_dim);
		k[nk] = "layers";
		snprintf(v[nk++], 32, "%d", c->layers);
		k[nk] = "heads";
		snprintf(v[nk++], 32, "%d", c->heads);
		k[nk] = "out_heads";
		snprintf(v[nk++], 32, "%d", c->out_heads);
		k[nk] = "num_relations";
		snprintf(v[nk++], 32, "%d", c->num_relations);
		k[nk] = "num_node_types";
		snprintf(v[nk++], 32, "%d", c->num_node_types);
		k[nk] = "num_bases";
		snprintf(v[nk++], 32, "%d", c->num_bases);
		for (int i = 0; i < nk; i++)
		{
			wjson(&h, k[i]);
			wstr(&h, ":");
			wjson(&h, v[i]);
			if (i < nk - 1 || nkv > 0)
				wstr(&h, ",");
		}
		for (int i = 0; i < nkv; i++)
		{
			wjson(&h, keys[i]);
			wstr(&h, ":");
			wjson(&h, vals[i]);
			if (i < nkv - 1)
				wstr(&h, ",");
		}
	}
	wstr(&h, "}}");
	/* the data starts 8-byte aligned: pad the header with spaces (the format allows it) */
	while (h.n % 8)
		wstr(&h, " ");
	if (h.oom)
	{
		st = gnn_error_set(err, GNN_ERR_NOMEM, "out of memory exporting a model");
		goto done;
	}
	hlen = h.n;
	if (!(out = malloc(8 + hlen + off + 1)))
	{
		st = gnn_error_set(err, GNN_ERR_NOMEM, "out of memory exporting a model");
		goto done;
	}
	for (int i = 0; i < 8; i++)
		out[i] = (unsigned char) (hlen >> (8 * i));
	memcpy(out + 8, h.p, hlen);
	{
		uint64_t	at = 8 + hlen;

		for (int i = 0; i < no; i++)
		{
			size_t		bytes = sizeof(float) * (size_t) (ot[i].shape[0] * (ot[i].ndims == 2 ? ot[i].shape[1] : 1));

			memcpy(out + at, ot[i].data, bytes);	/* little-endian hosts only (x86, arm64) */
			at += bytes;
		}
	}
	*blob = out;
	*size = 8 + hlen + off;
done:
	for (int i = 0; ot && i < no; i++)
		free(ot[i].data);
	free(ot);
	free(host);
	free(h.p);
	return st;
}

/* ------------------------------------------------------------------ reading: JSON */

typedef struct jp
{
	const char *start;
	const char *p;
	const char *end;
	gnn_error  *err;
	bool		failed;
} jp;

static gnn_status
jfail(jp *j, const char *what)
{
	j->failed = true;
	return gnn_error_set(j->err, GNN_ERR_CORRUPT, "safetensors header: %s at byte %lld of the header", what,
						 (long long) (j->p - j->start));
}

static void
jws(jp *j)
{
	while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r'))
		j->p++;
}

static bool
jeat(jp *j, char c)
{
	jws(j);
	if (j->p < j->end && *j->p == c)
	{
		j->p++;
		return true;
	}
	return false;
}

/* a string into out (at most cap - 1 bytes; longer is an error) */
static bool
jstring(jp *j, char *out, size_t cap)
{
	size_t		n = 0;

	jws(j);
	if (j->p >= j->end || *j->p != '"')
		return (void) jfail(j, "a string expected"), false;
	j->p++;
	while (j->p < j->end && *j->p != '"')
	{
		unsigned char c = (unsigned char) *j->p++;

		if (c < 0x20)
			return (void) jfail(j, "a control character in a string"), false;
		if (c == '\\')
		{
			if (j->p >= j->end)
				return (void) jfail(j, "an unfinished escape"), false;
			c = (unsigned char) *j->p++;
			switch (c)
			{
				case '"':
				case '\\':
				case '/':
					break;
				case 'b':
					c = '\b';
					break;
				case 'f':
					c = '\f';
					break;
				case 'n':
					c = '\n';
					break;
				case 'r':
					c = '\r';
					break;
				case 't':
					c = '\t';
					break;
				case 'u':
					{
						unsigned	cp = 0;

						for (int k = 0; k < 4; k++)
						{
							char		h = j->p < j->end ? *j->p++ : 0;

							cp <<= 4;
							if (h >= '0' && h <= '9')
								cp |= (unsigned) (h - '0');
							else if (h >= 'a' && h <= 'f')
								cp |= (unsigned) (h - 'a' + 10);
							else if (h >= 'A' && h <= 'F')
								cp |= (unsigned) (h - 'A' + 10);
							else
								return (void) jfail(j, "a bad \\u escape"), false;
						}
						if (cp == 0 || cp > 0x7f)
							return (void) jfail(j, "a \\u escape outside ASCII"), false;
						c = (unsigned char) cp;
						break;
					}
				default:
					return (void) jfail(j, "an unknown escape"), false;
			}
		}
		if (n + 1 >= cap)
			return (void) jfail(j, "a string too long"), false;
		out[n++] = (char) c;
	}
	if (j->p >= j->end)
		return (void) jfail(j, "an unterminated string"), false;
	j->p++;
	out[n] = '\0';
	return true;
}

/* a non-negative integer below 2^62 */
static bool
juint(jp *j, uint64_t *v)
{
	uint64_t	x = 0;
	int			digits = 0;

	jws(j);
	while (j->p < j->end && *j->p >= '0' && *j->p <= '9')
	{
		x = x * 10 + (uint64_t) (*j->p++ - '0');
		if (++digits > 18)
			return (void) jfail(j, "a number too large"), false;
	}
	if (digits == 0)
		return (void) jfail(j, "a non-negative integer expected"), false;
	if (j->p < j->end && (*j->p == '.' || *j->p == 'e' || *j->p == 'E'))
		return (void) jfail(j, "a non-integer number"), false;
	*v = x;
	return true;
}

/* an array of up to max non-negative integers */
static bool
juints(jp *j, uint64_t *v, int max, int *n)
{
	*n = 0;
	if (!jeat(j, '['))
		return (void) jfail(j, "an array expected"), false;
	if (jeat(j, ']'))
		return true;
	do
	{
		if (*n >= max)
			return (void) jfail(j, "an array too long"), false;
		if (!juint(j, &v[(*n)++]))
			return false;
	} while (jeat(j, ','));
	if (!jeat(j, ']'))
		return (void) jfail(j, "',' or ']' expected"), false;
	return true;
}

static bool
parse_tensor(jp *j, st_tensor *t)
{
	char		key[32],
				dtype[16] = "";
	bool		has_shape = false,
				has_off = false;

	if (!jeat(j, '{'))
		return (void) jfail(j, "a tensor must be an object"), false;
	if (jeat(j, '}'))
		return (void) jfail(j, "an empty tensor entry"), false;
	do
	{
		if (!jstring(j, key, sizeof(key)) || !jeat(j, ':'))
			return j->failed ? false : ((void) jfail(j, "':' expected"), false);
		if (strcmp(key, "dtype") == 0)
		{
			if (!jstring(j, dtype, sizeof(dtype)))
				return false;
		}
		else if (strcmp(key, "shape") == 0)
		{
			uint64_t	s[8];
			int			n;

			if (!juints(j, s, 8, &n))
				return false;
			if (n < 1 || n > 2)
				return (void) gnn_error_set(j->err, GNN_ERR_CORRUPT, "tensor \"%s\" has %d dimensions: 1 or 2 are read",
											t->name, n), (j->failed = true), false;
			for (int k = 0; k < n; k++)
				if (s[k] > ((uint64_t) 1 << 31))
					return (void) gnn_error_set(j->err, GNN_ERR_CORRUPT, "tensor \"%s\" is too large", t->name),
						(j->failed = true), false;
			t->ndims = n;
			t->shape[0] = (int64_t) s[0];
			t->shape[1] = n == 2 ? (int64_t) s[1] : 1;
			has_shape = true;
		}
		else if (strcmp(key, "data_offsets") == 0)
		{
			uint64_t	o[2];
			int			n;

			if (!juints(j, o, 2, &n))
				return false;
			if (n != 2 || o[1] < o[0])
				return (void) gnn_error_set(j->err, GNN_ERR_CORRUPT, "tensor \"%s\": data_offsets must be [begin, end]",
											t->name), (j->failed = true), false;
			t->begin = o[0];
			t->end = o[1];
			has_off = true;
		}
		else
			return (void) gnn_error_set(j->err, GNN_ERR_CORRUPT, "tensor \"%s\": unknown field \"%s\"", t->name, key),
				(j->failed = true), false;
	} while (jeat(j, ','));
	if (!jeat(j, '}'))
		return (void) jfail(j, "',' or '}' expected"), false;
	if (strcmp(dtype, "F32") != 0)
		return (void) gnn_error_set(j->err, GNN_ERR_CORRUPT, "tensor \"%s\" has dtype \"%s\": F32 is read",
									t->name, dtype), (j->failed = true), false;
	if (!has_shape || !has_off)
		return (void) gnn_error_set(j->err, GNN_ERR_CORRUPT, "tensor \"%s\" lacks %s", t->name,
									has_shape ? "data_offsets" : "shape"), (j->failed = true), false;
	return true;
}

static bool
parse_meta(jp *j, gnn_st_meta *m)
{
	if (!jeat(j, '{'))
		return (void) jfail(j, "__metadata__ must be an object"), false;
	if (jeat(j, '}'))
		return true;
	do
	{
		char		k[256],
					v[1024];

		if (!jstring(j, k, sizeof(k)) || !jeat(j, ':'))
			return j->failed ? false : ((void) jfail(j, "':' expected"), false);
		if (!jstring(j, v, sizeof(v)))
			return false;
		if (m->n >= GNN_ST_MAX_META)
			return (void) jfail(j, "too many metadata entries"), false;
		m->key[m->n] = strdup(k);
		m->val[m->n] = strdup(v);
		if (!m->key[m->n] || !m->val[m->n])
		{
			free(m->key[m->n]);
			free(m->val[m->n]);
			return (void) gnn_error_set(j->err, GNN_ERR_NOMEM, "out of memory"), (j->failed = true), false;
		}
		m->n++;
	} while (jeat(j, ','));
	if (!jeat(j, '}'))
		return (void) jfail(j, "',' or '}' expected"), false;
	return true;
}

void
gnn_st_meta_free(gnn_st_meta *meta)
{
	for (int i = 0; meta && i < meta->n; i++)
	{
		free(meta->key[i]);
		free(meta->val[i]);
	}
	if (meta)
		meta->n = 0;
}

const char *
gnn_st_meta_get(const gnn_st_meta *meta, const char *key)
{
	for (int i = 0; meta && i < meta->n; i++)
		if (strcmp(meta->key[i], key) == 0)
			return meta->val[i];
	return NULL;
}

static int
cmp_begin(const void *a, const void *b)
{
	const st_tensor *x = *(st_tensor *const *) a,
			   *y = *(st_tensor *const *) b;

	return x->begin < y->begin ? -1 : x->begin > y->begin;
}

static gnn_status
parse_file(const void *blob, size_t size, st_file *f, gnn_error *err)
{
	const unsigned char *b = blob;
	uint64_t	hlen = 0;
	jp			j;

	memset(f, 0, sizeof(*f));
	if (!blob || size < 8)
		return gnn_error_set(err, GNN_ERR_CORRUPT, "not safetensors: %zu bytes, fewer than the 8 of its header length",
							 size);
	for (int i = 0; i < 8; i++)
		hlen |= (uint64_t) b[i] << (8 * i);
	if (hlen < 2 || hlen > GNN_ST_MAX_HEADER || hlen > size - 8)
		return gnn_error_set(err, GNN_ERR_CORRUPT,
							 "not safetensors: a header of %llu bytes in a blob of %zu (at most %d are read)",
							 (unsigned long long) hlen, size, GNN_ST_MAX_HEADER);
	f->t = calloc(MAX_TENSORS, sizeof(st_tensor));
	if (!f->t)
		return gnn_error_set(err, GNN_ERR_NOMEM, "out of memory");
	f->data = b + 8 + hlen;
	f->data_len = size - 8 - hlen;
	j.start = j.p = (const char *) b + 8;
	j.end = j.p + hlen;
	j.err = err;
	j.failed = false;
	if (!jeat(&j, '{'))
		return jfail(&j, "the header must be a JSON object");
	if (!jeat(&j, '}'))
	{
		do
		{
			char		name[NAME_LEN];

			if (!jstring(&j, name, sizeof(name)))
				return err->status;
			if (!jeat(&j, ':'))
				return jfail(&j, "':' expected");
			if (strcmp(name, "__metadata__") == 0)
			{
				if (!parse_meta(&j, &f->meta))
					return err->status;
				continue;
			}
			if (f->n >= MAX_TENSORS)
				return gnn_error_set(err, GNN_ERR_CORRUPT, "more than %d tensors", MAX_TENSORS);
			for (int i = 0; i < f->n; i++)
				if (strcmp(f->t[i].name, name) == 0)
					return gnn_error_set(err, GNN_ERR_CORRUPT, "tensor \"%s\" appears twice", name);
			snprintf(f->t[f->n].name, NAME_LEN, "%s", name);
			if (!parse_tensor(&j, &f->t[f->n]))
				return err->status;
			f->n++;
		} while (jeat(&j, ','));
		if (!jeat(&j, '}'))
			return jfail(&j, "',' or '}' expected");
	}
	jws(&j);
	if (j.p != j.end)
		return jfail(&j, "bytes after the header's object");
	/* every byte range: the tensor's size exactly, inside the data, none overlapping */
	{
		st_tensor **ord = malloc(sizeof(st_tensor *) * (size_t) (f->n + 1));

		if (!ord)
			return gnn_error_set(err, GNN_ERR_NOMEM, "out of memory");
		for (int i = 0; i < f->n; i++)
		{
			st_tensor  *t = &f->t[i];
			uint64_t	want = 4 * (uint64_t) t->shape[0] * (uint64_t) t->shape[1];

			if (t->end - t->begin != want)
			{
				free(ord);
				return gnn_error_set(err, GNN_ERR_CORRUPT, "tensor \"%s\": %llu bytes for a shape of %llu floats",
									 t->name, (unsigned long long) (t->end - t->begin), (unsigned long long) (want / 4));
			}
			if (t->end > f->data_len)
			{
				free(ord);
				return gnn_error_set(err, GNN_ERR_CORRUPT, "tensor \"%s\" ends at byte %llu of %llu bytes of data",
									 t->name, (unsigned long long) t->end, (unsigned long long) f->data_len);
			}
			ord[i] = t;
		}
		qsort(ord, f->n, sizeof(st_tensor *), cmp_begin);
		for (int i = 1; i < f->n; i++)
			if (ord[i]->begin < ord[i - 1]->end)
			{
				gnn_status	st = gnn_error_set(err, GNN_ERR_CORRUPT, "tensors \"%s\" and \"%s\" overlap",
											   ord[i - 1]->name, ord[i]->name);

				free(ord);
				return st;
			}
		free(ord);
	}
	return GNN_OK;
}

static void
free_file(st_file *f)
{
	free(f->t);
	gnn_st_meta_free(&f->meta);
}

/* ------------------------------------------------------------------ reading: the model */

static st_tensor *
find(st_file *f, const char *name)
{
	for (int i = 0; i < f->n; i++)
		if (strcmp(f->t[i].name, name) == 0)
			return &f->t[i];
	return NULL;
}

static int32_t
meta_int(const gnn_st_meta *m, const char *key, int32_t dflt)
{
	const char *v = gnn_st_meta_get(m, key);
	char	   *e;
	long		x;

	if (!v)
		return dflt;
	x = strtol(v, &e, 10);
	return *e == '\0' && e != v && x >= -1 && x <= (1 << 30) ? (int32_t) x : -2;
}

/* the number of layers L named convs.0 .. convs.L-1 by pattern ("convs.%d.lin.weight") */
static int
count_layers(st_file *f, const char *pattern)
{
	int			L = 0;
	char		nm[NAME_LEN];

	for (;;)
	{
		snprintf(nm, sizeof(nm), pattern, L);
		if (!find(f, nm) || L >= GNN_MAX_LAYERS + 1)
			return L;
		L++;
	}
}

/*
 * A PyG-layout file's architecture: the kind by its names, the widths by its
 * shapes, every layer's input the previous layer's output.
 */
static gnn_status
pyg_config(st_file *f, gnn_model_config *c, gnn_error *err)
{
	int			Lg = count_layers(f, "convs.%d.lin.weight"),
				Ls = count_layers(f, "convs.%d.lin_l.weight");
	st_tensor  *e = find(f, "embedding.weight");
	int			L;
	const char *wname;

	if (e && !Lg && !Ls)
	{
		if (e->ndims != 2 || e->shape[0] < 1 || e->shape[1] < 1 || e->shape[0] > (1 << 26))
			return gnn_error_set(err, GNN_ERR_DIMENSION, "embedding.weight must be [nodes x dim]");
		gnn_model_config_default(GNN_MODEL_NODE2VEC, c);
		c->in_dim = (int32_t) e->shape[0];
		c->hidden = c->out_dim = (int32_t) e->shape[1];
		c->layers = 1;
		return GNN_OK;
	}
	if ((Lg > 0) == (Ls > 0))
		return gnn_error_set(err, GNN_ERR_DIMENSION,
							 "no model layout recognised: PyG's GCN (convs.0.lin.weight), GraphSAGE "
							 "(convs.0.lin_l.weight) or Node2Vec (embedding.weight), or gnn's own (metadata layout \"gnn\")");
	L = Lg ? Lg : Ls;
	if (L > GNN_MAX_LAYERS)
		return gnn_error_set(err, GNN_ERR_DIMENSION, "more than %d layers", GNN_MAX_LAYERS);
	gnn_model_config_default(Lg ? GNN_MODEL_GCN : GNN_MODEL_SAGE, c);
	c->aggr = GNN_AGGR_MEAN;
	c->layers = L;
	wname = Lg ? "convs.%d.lin.weight" : "convs.%d.lin_l.weight";
	for (int l = 0; l < L; l++)
	{
		char		nm[NAME_LEN];
		st_tensor  *w;

		snprintf(nm, sizeof(nm), wname, l);
		w = find(f, nm);
		if (w->ndims != 2 || w->shape[0] < 1 || w->shape[1] < 1)
			return gnn_error_set(err, GNN_ERR_DIMENSION, "%s must be [out x in]", nm);
		if (l == 0)
			c->in_dim = (int32_t) w->shape[1];
		else if (w->shape[1] != c->hidden)
			return gnn_error_set(err, GNN_ERR_DIMENSION, "%s takes %lld inputs, but layer %d gives %d", nm,
								 (long long) w->shape[1], l - 1, c->hidden);
		if (l < L - 1)
		{
			if (l > 0 && w->shape[0] != c->hidden)
				return gnn_error_set(err, GNN_ERR_DIMENSION, "%s is %lld wide, the layers before %d: one hidden width is read",
									 nm, (long long) w->shape[0], c->hidden);
			c->hidden = (int32_t) w->shape[0];
		}
		else
		{
			c->out_dim = (int32_t) w->shape[0];
			if (L == 1)
				c->hidden = c->out_dim;
		}
	}
	return GNN_OK;
}

/* the tensor a gnn parameter is read from, and whether it is stored transposed */
static st_tensor *
source_of(st_file *f, bool pyg, const gnn_model_config *c, const char *pname, bool *transpose, bool *bias,
		  char *want, size_t wantlen)
{
	int			layer = -1;
	char		what[GNN_PARAM_NAME_LEN] = "";

	*transpose = false;
	*bias = false;
	if (!pyg)
	{
		snprintf(want, wantlen, "%s", pname);
		return find(f, pname);
	}
	(void) sscanf(pname, "l%d.%31s", &layer, what);
	if (c->kind == GNN_MODEL_NODE2VEC)
		snprintf(want, wantlen, "embedding.weight");
	else if (strcmp(what, "bias") == 0)
	{
		*bias = true;
		snprintf(want, wantlen, c->kind == GNN_MODEL_GCN ? "convs.%d.bias" : "convs.%d.lin_l.bias", layer);
	}
	else
	{
		*transpose = true;
		snprintf(want, wantlen, c->kind == GNN_MODEL_GCN ? "convs.%d.lin.weight" :
				 strcmp(what, "root") == 0 ? "convs.%d.lin_r.weight" : "convs.%d.lin_l.weight", layer);
	}
	return find(f, want);
}

gnn_status
gnn_model_from_safetensors(gnn_backend *be, const void *blob, size_t size, gnn_model **out, gnn_st_meta *meta,
						   gnn_error *err)
{
	st_file		f;
	gnn_model_config c;
	gnn_model  *m = NULL;
	gnn_rng		rng;
	float	   *host = NULL;
	gnn_status	st;
	const char *layout;
	bool		pyg;

	*out = NULL;
	if (meta)
		meta->n = 0;
	if ((st = parse_file(blob, size, &f, err)) != GNN_OK)
		goto done;
	layout = gnn_st_meta_get(&f.meta, "layout");
	pyg = !(layout && strcmp(layout, "gnn") == 0);
	if (pyg)
	{
		if ((st = pyg_config(&f, &c, err)) != GNN_OK)
			goto done;
	}
	else
	{
		const char *kind = gnn_st_meta_get(&f.meta, "model");
		const char *aggr = gnn_st_meta_get(&f.meta, "aggr");
		gnn_model_kind k = GNN_MODEL_GCN;
		bool		known = false;

		for (int i = GNN_MODEL_GCN; kind && i <= GNN_MODEL_NODE2VEC && !known; i++)
			if (strcmp(kind, gnn_model_kind_name((gnn_model_kind) i)) == 0)
			{
				k = (gnn_model_kind) i;
				known = true;
			}
		if (!known)
		{
			st = gnn_error_set(err, GNN_ERR_CORRUPT, "layout \"gnn\" needs metadata \"model\" naming a model kind (got %s)",
							   kind ? kind : "none");
			goto done;
		}
		gnn_model_config_default(k, &c);
		c.aggr = aggr && strcmp(aggr, "pool") == 0 ? GNN_AGGR_POOL : GNN_AGGR_MEAN;
		c.in_dim = meta_int(&f.meta, "in_dim", -2);
		c.hidden = meta_int(&f.meta, "hidden", -2);
		c.out_dim = meta_int(&f.meta, "out_dim", -2);
		c.layers = meta_int(&f.meta, "layers", -2);
		c.heads = meta_int(&f.meta, "heads", c.heads);
		c.out_heads = meta_int(&f.meta, "out_heads", c.out_heads);
		c.num_relations = meta_int(&f.meta, "num_relations", c.num_relations);
		c.num_node_types = meta_int(&f.meta, "num_node_types", c.num_node_types);
		c.num_bases = meta_int(&f.meta, "num_bases", c.num_bases);
	}
	if ((st = gnn_model_config_check(&c, err)) != GNN_OK)
	{
		st = GNN_ERR_DIMENSION;
		err->status = st;
		goto done;
	}
	gnn_rng_seed(&rng, 1);
	if ((st = gnn_model_create(be, &c, &rng, &m, err)) != GNN_OK)
		goto done;
	host = malloc(sizeof(float) * (gnn_model_weights_count(m) + 1));
	if (!host)
	{
		st = gnn_error_set(err, GNN_ERR_NOMEM, "out of memory importing a model");
		goto done;
	}
	{
		size_t		at = 0;

		for (int i = 0; i < gnn_model_num_params(m); i++)
		{
			gnn_param  *p = gnn_model_param(m, i);
			int64_t		r = p->w.rows,
						cc = p->w.cols;
			bool		tr,
						bias;
			char		want[NAME_LEN];
			st_tensor  *t = source_of(&f, pyg, &c, p->name, &tr, &bias, want, sizeof(want));
			const unsigned char *src;
			bool		shape_ok;

			if (!t)
			{
				st = gnn_error_set(err, GNN_ERR_DIMENSION, "tensor \"%s\" is missing (a %s model of %d layers needs it)",
								   want, gnn_model_kind_name(c.kind), c.layers);
				goto done;
			}
			shape_ok = bias ? (t->ndims == 1 && t->shape[0] == r * cc) || (t->shape[0] == r && t->shape[1] == cc) :
				tr ? (t->ndims == 2 && t->shape[0] == cc && t->shape[1] == r) :
				(t->shape[0] * t->shape[1] == r * cc && (t->ndims == 2 ? t->shape[0] == r : r == 1 || cc == 1));
			if (!shape_ok)
			{
				st = gnn_error_set(err, GNN_ERR_DIMENSION, "tensor \"%s\" has shape [%lld x %lld]; the model needs %s[%lld x %lld]",
								   want, (long long) t->shape[0], (long long) t->shape[1], tr ? "the transpose of " : "",
								   (long long) r, (long long) cc);
				goto done;
			}
			t->used = true;
			src = f.data + t->begin;
			for (int64_t a = 0; a < r; a++)
				for (int64_t b2 = 0; b2 < cc; b2++)
				{
					float		v;

					memcpy(&v, src + 4 * (tr ? b2 * r + a : a * cc + b2), 4);
					if (!isfinite(v))
					{
						st = gnn_error_set(err, GNN_ERR_CORRUPT, "tensor \"%s\" holds a non-finite value", want);
						goto done;
					}
					host[at + (size_t) (a * cc + b2)] = v;
				}
			at += (size_t) (r * cc);
		}
	}
	for (int i = 0; i < f.n; i++)
		if (!f.t[i].used)
		{
			st = gnn_error_set(err, GNN_ERR_DIMENSION, "tensor \"%s\" is not part of a %s model of %d layers",
							   f.t[i].name, gnn_model_kind_name(c.kind), c.layers);
			goto done;
		}
	if ((st = gnn_model_weights_set(m, host, err)) != GNN_OK)
		goto done;
	*out = m;
	m = NULL;
	if (meta)
	{
		*meta = f.meta;
		f.meta.n = 0;
	}
done:
	free(host);
	gnn_model_free(m);
	free_file(&f);
	return st;
}
