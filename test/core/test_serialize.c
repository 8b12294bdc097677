/*
 * test_serialize: model blobs round-trip; truncated (every prefix length),
 * bit-flipped, wrong-version and internally inconsistent blobs are refused
 * with GNN_ERR_CORRUPT and never crash (run under SANITIZE=1 for ASan).
 */
#include "check.h"
#include "nn/serialize.h"

#include <math.h>

static void
fix_crc(uint8_t *b, size_t n)
{
	uint32_t	crc = gnn_crc32(b, n - 4);

	memcpy(b + n - 4, &crc, 4);
}

static void
one_kind(gnn_backend *be, gnn_model_kind kind, gnn_aggr aggr)
{
	gnn_model_config c;
	gnn_model  *m = NULL,
			   *m2 = NULL;
	gnn_rng		rng;
	gnn_error	err;
	gnn_model_meta meta = {0.01f, 5e-4f, 200, 123, 0, 42, 0.8f, 0.81f},
				meta2;
	void	   *blob = NULL;
	size_t		size = 0;
	const char *name = gnn_model_kind_name(kind);
	int64_t		fails = 0,
				wrong = 0;

	gnn_model_config_default(kind, &c);
	c.in_dim = 10;
	c.out_dim = 3;
	c.aggr = aggr;
	c.hidden = 4;
	c.heads = 2;
	if (kind == GNN_MODEL_NODE2VEC)
	{
		/* one layer: a row per input node */
		c.layers = 1;
		c.out_dim = c.hidden;
	}
	gnn_rng_seed(&rng, 7);
	if (gnn_model_create(be, &c, &rng, &m, &err) != GNN_OK ||
		gnn_model_serialize(m, &meta, &blob, &size, &err) != GNN_OK)
	{
		CHECK(0, "%s: serialise: %s", name, err.msg);
		gnn_model_free(m);
		return;
	}
	CHECK(gnn_model_deserialize(be, blob, size, &m2, &meta2, &err) == GNN_OK,
		  "%s: round trip (%zu bytes)", name, size);
	if (m2)
	{
		size_t		nw = gnn_model_weights_count(m);
		float	   *a = malloc(sizeof(float) * nw),
				   *b = malloc(sizeof(float) * nw);

		gnn_model_weights_get(m, a, &err);
		gnn_model_weights_get(m2, b, &err);
		CHECK(nw == gnn_model_weights_count(m2) && memcmp(a, b, sizeof(float) * nw) == 0 &&
			  meta2.best_epoch == 123 && meta2.seed == 42 &&
			  gnn_model_config_of(m2)->kind == kind && gnn_model_config_of(m2)->aggr == aggr,
			  "%s: weights, architecture and hyper-parameters survive", name);
		free(a);
		free(b);
		gnn_model_free(m2);
	}

	/* the header alone (what a reader names a shared result by): from any prefix that holds it */
	{
		gnn_model_config hc;
		gnn_model_meta hm;
		size_t		hlen = size < GNN_BLOB_HEADER_MAX ? size : GNN_BLOB_HEADER_MAX;
		int			dims_ok = 1;
		int64_t		refused = 0,
					short_ok = 0;

		CHECK(gnn_model_blob_header(blob, hlen, &hc, &hm, &err) == GNN_OK && hc.kind == c.kind &&
			  hc.in_dim == c.in_dim && hc.hidden == c.hidden && hc.out_dim == c.out_dim &&
			  hc.layers == c.layers && hc.heads == c.heads && hm.seed == 42 && hm.best_epoch == 123,
			  "%s: the header of the first %zu bytes names the architecture and seed", name, hlen);
		for (int l = -1; l <= c.layers; l++)
			dims_ok &= gnn_model_config_layer_dim(&hc, l) == gnn_model_layer_dim(m, l);
		CHECK(dims_ok, "%s: layer widths from the architecture equal the built model's", name);
		/* prefixes too short for the header are refused as corrupt, never read past */
		for (size_t n = 0; n < hlen; n++)
		{
			uint8_t    *cp = malloc(n ? n : 1);
			gnn_status	st;

			memcpy(cp, blob, n);
			st = gnn_model_blob_header(cp, n, &hc, NULL, &err);
			refused += st == GNN_ERR_CORRUPT;
			short_ok += st == GNN_OK;
			free(cp);
		}
		CHECK(refused + short_ok == (int64_t) hlen && refused >= 16,
			  "%s: %zu short prefixes give OK (header complete) or CORRUPT (%lld refused)", name, hlen,
			  (long long) refused);
	}

	/* every truncation */
	for (size_t n = 0; n < size; n++)
	{
		uint8_t    *cp = malloc(n ? n : 1);	/* exact size: ASan catches over-reads */
		gnn_status	st;

		memcpy(cp, blob, n);
		st = gnn_model_deserialize(be, cp, n, &m2, NULL, &err);
		if (st == GNN_OK)
			gnn_model_free(m2);
		fails += st == GNN_ERR_CORRUPT;
		free(cp);
	}
	CHECK(fails == (int64_t) size, "%s: all %zu truncated prefixes refused as corrupt", name, size);

	/* every single-bit flip (CRC catches them) */
	fails = 0;
	for (size_t bit = 0; bit < size * 8; bit++)
	{
		uint8_t    *cp = malloc(size);
		gnn_status	st;

		memcpy(cp, blob, size);
		cp[bit / 8] ^= (uint8_t) (1u << (bit % 8));
		st = gnn_model_blob_check(cp, size, NULL, NULL, &err);
		fails += st == GNN_ERR_CORRUPT;
		free(cp);
	}
	CHECK(fails == (int64_t) size * 8, "%s: all %zu single-bit flips refused", name, size * 8);

	/* flips with a recomputed checksum: the structural checks must hold alone */
	{
		gnn_rng		r;

		gnn_rng_seed(&r, 3);
		wrong = 0;
		for (int t = 0; t < 3000; t++)
		{
			uint8_t    *cp = malloc(size);
			gnn_status	st;
			size_t		pos = 16 + gnn_rng_below(&r, size - 20);	/* past magic/version/len */

			memcpy(cp, blob, size);
			cp[pos] ^= (uint8_t) (1 + gnn_rng_below(&r, 255));
			fix_crc(cp, size);
			st = gnn_model_deserialize(be, cp, size, &m2, NULL, &err);
			if (st == GNN_OK)
				gnn_model_free(m2);	/* a changed weight value is still a valid blob */
			else if (st != GNN_ERR_CORRUPT)
				wrong++;
			free(cp);
		}
		CHECK(wrong == 0, "%s: 3000 corruptions with a valid checksum give OK or CORRUPT, never another error",
			  name);
	}

	/* wrong version */
	{
		uint8_t    *cp = malloc(size);
		uint32_t	v = 99;

		memcpy(cp, blob, size);
		memcpy(cp + 4, &v, 4);
		fix_crc(cp, size);
		CHECK(gnn_model_deserialize(be, cp, size, &m2, NULL, &err) == GNN_ERR_CORRUPT &&
			  strstr(err.msg, "version") != NULL, "%s: wrong version refused: %s", name, err.msg);
		free(cp);
	}
	/* inconsistent: architecture says 5 hidden but tensors have 4 */
	{
		uint8_t    *cp = malloc(size);
		int32_t		h = 5;

		memcpy(cp, blob, size);
		memcpy(cp + 16 + 12, &h, 4);	/* hidden follows kind, aggr, in_dim */
		fix_crc(cp, size);
		CHECK(gnn_model_deserialize(be, cp, size, &m2, NULL, &err) == GNN_ERR_CORRUPT,
			  "%s: inconsistent architecture refused: %s", name, err.msg);
		free(cp);
	}
	/* a NaN weight */
	{
		uint8_t    *cp = malloc(size);
		float		nan = NAN;

		memcpy(cp, blob, size);
		memcpy(cp + size - 8, &nan, 4);	/* last float of the last tensor */
		fix_crc(cp, size);
		CHECK(gnn_model_deserialize(be, cp, size, &m2, NULL, &err) == GNN_ERR_CORRUPT,
			  "%s: non-finite weight refused: %s", name, err.msg);
		free(cp);
	}
	free(blob);
	gnn_model_free(m);
}

int
main(void)
{
	gnn_backend *be;
	gnn_error	err;

	if (gnn_backend_cpu_create(1, &be, &err) != GNN_OK)
	{
		CHECK(0, "cpu backend: %s", err.msg);
		return check_done();
	}
	CHECK(gnn_crc32("123456789", 9) == 0xcbf43926u, "crc32 check value");
	CHECK(gnn_model_blob_check(NULL, 0, NULL, NULL, &err) == GNN_ERR_CORRUPT, "NULL blob refused");
	one_kind(be, GNN_MODEL_GCN, GNN_AGGR_MEAN);
	one_kind(be, GNN_MODEL_SAGE, GNN_AGGR_MEAN);
	one_kind(be, GNN_MODEL_SAGE, GNN_AGGR_POOL);
	one_kind(be, GNN_MODEL_GAT, GNN_AGGR_MEAN);
	one_kind(be, GNN_MODEL_NODE2VEC, GNN_AGGR_MEAN);
	gnn_backend_destroy(be);
	return check_done();
}
