/*
 * test_safetensors: models out and in as safetensors.
 *
 *  - every model kind round-trips (export, import: the same weights, bit
 *    for bit; GCN, mean GraphSAGE and node2vec in PyG's layout, with PyG's
 *    names and transposed shapes; GAT, pooled GraphSAGE, R-GCN and
 *    heterogeneous GraphSAGE in gnn's);
 *  - hand-made files: PyG's names without metadata import; a missing, an
 *    extra or a misshapen tensor, a wrong dtype, overlapping or
 *    out-of-range bytes, a non-finite value, bad JSON and a bad header
 *    length are refused with a message naming what is wrong;
 *  - shapes fuzzed: every truncation of a valid file and random byte
 *    changes never crash or read out of bounds (run under ASan in make
 *    test), and either load or are refused.
 */
#include "check.h"
#include "nn/safetensors.h"

#include <math.h>

static gnn_backend *be;

static gnn_model *
make(gnn_model_kind kind, gnn_aggr aggr, int32_t in, int32_t hidden, int32_t out, int32_t layers)
{
	gnn_model_config c;
	gnn_model  *m = NULL;
	gnn_rng		rng;
	gnn_error	err;

	gnn_model_config_default(kind, &c);
	c.aggr = aggr;
	c.in_dim = in;
	c.hidden = hidden;
	c.out_dim = out;
	c.layers = layers;
	if (kind == GNN_MODEL_RGCN || kind == GNN_MODEL_HSAGE)
	{
		c.num_relations = 3;
		c.num_node_types = 2;
		c.num_bases = kind == GNN_MODEL_RGCN ? 2 : 0;
	}
	gnn_rng_seed(&rng, 11);
	if (gnn_model_create(be, &c, &rng, &m, &err) != GNN_OK)
		NOTE("create failed: %s", err.msg);
	/* random biases too (created zero) */
	if (m)
	{
		size_t		n = gnn_model_weights_count(m);
		float	   *w = malloc(sizeof(float) * n);

		gnn_model_weights_get(m, w, &err);
		for (size_t i = 0; i < n; i++)
			if (w[i] == 0.0f)
				w[i] = (float) (gnn_rng_double(&rng) - 0.5);
		gnn_model_weights_set(m, w, &err);
		free(w);
	}
	return m;
}

static bool
same_weights(gnn_model *a, gnn_model *b)
{
	size_t		n = gnn_model_weights_count(a);
	float	   *x,
			   *y;
	gnn_error	err;
	bool		ok;

	if (n != gnn_model_weights_count(b))
		return false;
	x = malloc(sizeof(float) * n);
	y = malloc(sizeof(float) * n);
	gnn_model_weights_get(a, x, &err);
	gnn_model_weights_get(b, y, &err);
	ok = memcmp(x, y, sizeof(float) * n) == 0;
	free(x);
	free(y);
	return ok;
}

static void
round_trip(const char *what, gnn_model_kind kind, gnn_aggr aggr, int32_t layers, const char *layout,
		   const char *first_name)
{
	gnn_model  *m = kind == GNN_MODEL_NODE2VEC ? make(kind, aggr, 9, 4, 4, 1) : make(kind, aggr, 7, 5, 3, layers),
			   *m2 = NULL;
	void	   *blob = NULL;
	size_t		len = 0;
	gnn_error	err;
	gnn_st_meta meta = {0};
	const char *k[] = {"graph", "note"};
	const char *v[] = {"cora", "a \"quoted\"\nline"};
	gnn_status	st;

	st = gnn_model_to_safetensors(m, k, v, 2, &blob, &len, &err);
	if (st == GNN_OK)
		st = gnn_model_from_safetensors(be, blob, len, &m2, &meta, &err);
	CHECK(st == GNN_OK && same_weights(m, m2) && strcmp(gnn_st_meta_get(&meta, "layout"), layout) == 0 &&
		  strcmp(gnn_st_meta_get(&meta, "note"), v[1]) == 0 && len > 8 && strstr((char *) blob + 8, first_name),
		  "%s: round trip in the %s layout (%s), %zu bytes %s", what, layout, first_name, len, st == GNN_OK ? "" : err.msg);
	gnn_st_meta_free(&meta);
	free(blob);
	gnn_model_free(m);
	gnn_model_free(m2);
}

/* a safetensors file from a header and data */
static void *
file_of(const char *header, const float *data, size_t nfloats, size_t *len)
{
	size_t		h = strlen(header);
	unsigned char *b = malloc(8 + h + 4 * nfloats + 1);

	for (int i = 0; i < 8; i++)
		b[i] = (unsigned char) ((uint64_t) h >> (8 * i));
	memcpy(b + 8, header, h);
	memcpy(b + 8 + h, data, 4 * nfloats);
	*len = 8 + h + 4 * nfloats;
	return b;
}

static void
refused(const char *what, const char *header, const float *data, size_t nfloats, const char *needle)
{
	size_t		len;
	void	   *b = file_of(header, data, nfloats, &len);
	gnn_model  *m = NULL;
	gnn_error	err;
	gnn_status	st = gnn_model_from_safetensors(be, b, len, &m, NULL, &err);

	CHECK((st == GNN_ERR_CORRUPT || st == GNN_ERR_DIMENSION) && !m && strstr(err.msg, needle),
		  "refused, %s: %s", what, err.msg);
	free(b);
}

static void
hand_made(void)
{
	/* a 1-layer GCN in PyG's names, 2 inputs, 3 outputs: lin.weight [3 x 2], bias [3] */
	float		d[9] = {1, 2, 3, 4, 5, 6, 0.5f, 0.25f, 0.125f};
	float		d10[10] = {1, 2, 3, 4, 5, 6, 0.5f, 0.25f, 0.125f, 2};
	const char *good = "{\"convs.0.lin.weight\":{\"dtype\":\"F32\",\"shape\":[3,2],\"data_offsets\":[0,24]},"
		"\"convs.0.bias\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[24,36]}}";
	size_t		len;
	void	   *b = file_of(good, d, 9, &len);
	gnn_model  *m = NULL;
	gnn_error	err;
	gnn_status	st = gnn_model_from_safetensors(be, b, len, &m, NULL, &err);

	if (st == GNN_OK)
	{
		float		w[9];
		const gnn_model_config *c = gnn_model_config_of(m);

		gnn_model_weights_get(m, w, &err);
		/* ours: weight [2 x 3] = PyG's transposed, then bias */
		CHECK(c->kind == GNN_MODEL_GCN && c->in_dim == 2 && c->out_dim == 3 && c->layers == 1 &&
			  w[0] == 1 && w[1] == 3 && w[2] == 5 && w[3] == 2 && w[4] == 4 && w[5] == 6 && w[6] == 0.5f &&
			  w[8] == 0.125f, "PyG's GCN names without metadata: a 2 -> 3 GCN, weights transposed");
		gnn_model_free(m);
	}
	else
		CHECK(0, "PyG's GCN names without metadata: %s", err.msg);
	free(b);

	refused("a missing bias", "{\"convs.0.lin.weight\":{\"dtype\":\"F32\",\"shape\":[3,2],\"data_offsets\":[0,24]}}",
			d, 6, "convs.0.bias");
	refused("an extra tensor", "{\"convs.0.lin.weight\":{\"dtype\":\"F32\",\"shape\":[3,2],\"data_offsets\":[0,24]},"
			"\"convs.0.bias\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[24,36]},"
			"\"extra\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[36,36]}}", d, 9, "extra");
	refused("a misshapen bias", "{\"convs.0.lin.weight\":{\"dtype\":\"F32\",\"shape\":[3,2],\"data_offsets\":[0,24]},"
			"\"convs.0.bias\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[24,32]}}", d, 9, "convs.0.bias");
	refused("layers that do not chain", "{\"convs.0.lin.weight\":{\"dtype\":\"F32\",\"shape\":[2,2],\"data_offsets\":[0,16]},"
			"\"convs.0.bias\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[16,24]},"
			"\"convs.1.lin.weight\":{\"dtype\":\"F32\",\"shape\":[1,3],\"data_offsets\":[24,36]},"
			"\"convs.1.bias\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[36,40]}}", d10, 10, "inputs");
	refused("a wrong dtype", "{\"convs.0.lin.weight\":{\"dtype\":\"F16\",\"shape\":[3,2],\"data_offsets\":[0,12]}}",
			d, 3, "F16");
	refused("bytes beyond the data", "{\"convs.0.lin.weight\":{\"dtype\":\"F32\",\"shape\":[3,2],\"data_offsets\":[12,36]}}",
			d, 6, "ends at byte");
	refused("a size not the shape's", "{\"convs.0.lin.weight\":{\"dtype\":\"F32\",\"shape\":[3,2],\"data_offsets\":[0,20]}}",
			d, 9, "bytes for a shape");
	refused("overlapping tensors", "{\"convs.0.lin.weight\":{\"dtype\":\"F32\",\"shape\":[3,2],\"data_offsets\":[0,24]},"
			"\"convs.0.bias\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[20,32]}}", d, 9, "overlap");
	refused("a name twice", "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
			"\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", d, 2, "twice");
	refused("three dimensions", "{\"a\":{\"dtype\":\"F32\",\"shape\":[1,1,1],\"data_offsets\":[0,4]}}", d, 1, "dimensions");
	refused("a negative shape", "{\"a\":{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,4]}}", d, 1, "integer");
	refused("a float offset", "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4.0]}}", d, 1, "non-integer");
	refused("bad JSON", "{\"a\":{\"dtype\":\"F32\",", d, 1, "header");
	refused("trailing bytes", "{}x", d, 0, "after");
	refused("an unknown field", "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4],\"x\":1}}", d, 1, "unknown field");
	refused("no known layout", "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", d, 1, "layout");
	refused("gnn layout without a model", "{\"__metadata__\":{\"layout\":\"gnn\"}}", d, 0, "model");
	{
		float		nan_d[9];

		memcpy(nan_d, d, sizeof(d));
		nan_d[4] = NAN;
		refused("a NaN weight", good, nan_d, 9, "non-finite");
	}
	{
		unsigned char small[7] = {0};
		unsigned char hugehdr[16] = {0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, '{', '}'};
		gnn_model  *m2 = NULL;

		CHECK(gnn_model_from_safetensors(be, small, 7, &m2, NULL, &err) == GNN_ERR_CORRUPT && strstr(err.msg, "8"),
			  "7 bytes refused: %s", err.msg);
		CHECK(gnn_model_from_safetensors(be, hugehdr, 16, &m2, NULL, &err) == GNN_ERR_CORRUPT && strstr(err.msg, "header"),
			  "a header longer than the blob refused: %s", err.msg);
		CHECK(gnn_model_from_safetensors(be, NULL, 0, &m2, NULL, &err) == GNN_ERR_CORRUPT, "no blob refused");
	}
}

/* every truncation, and random byte changes: loaded or refused, never a crash */
static void
fuzz(void)
{
	gnn_model  *m = make(GNN_MODEL_SAGE, GNN_AGGR_MEAN, 6, 4, 3, 2);
	void	   *blob = NULL;
	size_t		len = 0;
	gnn_error	err;
	gnn_rng		rng;
	int			loaded = 0,
				refused_n = 0,
				other = 0;
	int			rounds = (int) check_len(4000, 500);

	gnn_model_to_safetensors(m, NULL, NULL, 0, &blob, &len, &err);
	for (size_t cut = 0; cut < len; cut++)
	{
		gnn_model  *m2 = NULL;
		unsigned char *copy = malloc(cut + 1);	/* exactly cut bytes: ASan sees any overread */
		gnn_status	st;

		memcpy(copy, blob, cut);
		st = gnn_model_from_safetensors(be, copy, cut, &m2, NULL, &err);
		if (st == GNN_OK)
			loaded++;
		else if (st == GNN_ERR_CORRUPT || st == GNN_ERR_DIMENSION)
			refused_n++;
		else
			other++;
		gnn_model_free(m2);
		free(copy);
	}
	CHECK(loaded == 0 && other == 0 && refused_n == (int) len, "every truncation of a %zu-byte file refused", len);
	loaded = refused_n = other = 0;
	gnn_rng_seed(&rng, 5);
	for (int r = 0; r < rounds; r++)
	{
		unsigned char *copy = malloc(len);
		gnn_model  *m2 = NULL;
		gnn_status	st;
		int			flips = 1 + (int) gnn_rng_below(&rng, 4);

		memcpy(copy, blob, len);
		for (int f = 0; f < flips; f++)
		{
			/* mostly the header (where shapes live), sometimes the data */
			size_t		at = gnn_rng_below(&rng, 4) ? gnn_rng_below(&rng, len < 400 ? len : 400) : gnn_rng_below(&rng, len);

			copy[at] = (unsigned char) gnn_rng_below(&rng, 256);
		}
		st = gnn_model_from_safetensors(be, copy, len, &m2, NULL, &err);
		if (st == GNN_OK)
			loaded++;
		else if (st == GNN_ERR_CORRUPT || st == GNN_ERR_DIMENSION)
			refused_n++;
		else
			other++;
		gnn_model_free(m2);
		free(copy);
	}
	CHECK(other == 0 && loaded + refused_n == rounds,
		  "%d files with random bytes changed: %d loaded, %d refused, none crashed", rounds, loaded, refused_n);
	free(blob);
	gnn_model_free(m);
}

int
main(void)
{
	gnn_error	err;

	if (gnn_backend_cpu_create(1, &be, &err) != GNN_OK)
	{
		CHECK(0, "cpu backend: %s", err.msg);
		return check_done();
	}
	round_trip("GCN, 2 layers", GNN_MODEL_GCN, GNN_AGGR_MEAN, 2, "pyg", "convs.0.lin.weight");
	round_trip("GCN, 3 layers", GNN_MODEL_GCN, GNN_AGGR_MEAN, 3, "pyg", "convs.2.bias");
	round_trip("GraphSAGE mean", GNN_MODEL_SAGE, GNN_AGGR_MEAN, 2, "pyg", "convs.1.lin_r.weight");
	round_trip("node2vec", GNN_MODEL_NODE2VEC, GNN_AGGR_MEAN, 1, "pyg", "embedding.weight");
	round_trip("GraphSAGE pool", GNN_MODEL_SAGE, GNN_AGGR_POOL, 2, "gnn", "l0.pool");
	round_trip("GAT", GNN_MODEL_GAT, GNN_AGGR_MEAN, 2, "gnn", "l0.att_src");
	round_trip("R-GCN", GNN_MODEL_RGCN, GNN_AGGR_MEAN, 2, "gnn", "l0.coef");
	round_trip("heterogeneous GraphSAGE", GNN_MODEL_HSAGE, GNN_AGGR_MEAN, 2, "gnn", "l0.proj");
	hand_made();
	fuzz();
	gnn_backend_destroy(be);
	return check_done();
}
