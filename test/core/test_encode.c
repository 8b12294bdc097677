/*
 * test_encode.c: column encoders - every kind with and without NULLs
 * (widths, values written, statistics against references computed here),
 * category ranking with ties and "other", unseen values, the JSON round
 * trip (bit-identical encodings), malformed JSON, errors, feature blocks,
 * new rows fed to a kept encoding (gnn_enc_from_json_rows), and a 1M-row
 * smoke test that prints its times.
 */
#include "check.h"
#include "graph/encode.h"

#include <math.h>
#include <time.h>

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double) ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* the number after "key": in a JSON text (NAN when absent) */
static double
json_num(const char *js, const char *key)
{
	char		pat[64];
	const char *p;

	snprintf(pat, sizeof(pat), "\"%s\":", key);
	p = js ? strstr(js, pat) : NULL;
	return p ? strtod(p + strlen(pat), NULL) : NAN;
}

/* reference mean and population std in long double, two passes */
static void
ref_stats(const double *v, const bool *nul, int n, double *mean, double *std)
{
	long double s = 0,
				ss = 0;
	int			k = 0;

	for (int i = 0; i < n; i++)
		if (!nul || !nul[i])
		{
			s += v[i];
			k++;
		}
	*mean = k ? (double) (s / k) : 0;
	for (int i = 0; i < n; i++)
		if (!nul || !nul[i])
		{
			long double d = v[i] - s / k;

			ss += d * d;
		}
	*std = k ? (double) sqrtl(ss / k) : 1;
	if (*std == 0)
		*std = 1;
}

static bool
close_rel(double a, double b, double tol)
{
	return fabs(a - b) <= tol * fmax(1.0, fmax(fabs(a), fabs(b)));
}

/* finish, then check describe -> from_json -> describe and identical writes */
static gnn_col_encoder *
round_trip(gnn_col_encoder *e, const char *what)
{
	gnn_error	err;
	char	   *js = gnn_enc_describe(e),
			   *js2;
	gnn_col_encoder *r = NULL;
	gnn_status	st;

	CHECK(js != NULL, "%s: describe", what);
	st = gnn_enc_from_json(js, &r, &err);
	CHECK(st == GNN_OK, "%s: from_json: %s", what, st == GNN_OK ? "ok" : err.msg);
	js2 = r ? gnn_enc_describe(r) : NULL;
	CHECK(js2 && js && strcmp(js, js2) == 0, "%s: describe of the rebuilt encoder is the same (%s)",
		  what, js ? js : "null");
	CHECK(r && gnn_enc_width(r) == gnn_enc_width(e), "%s: same width", what);
	free(js);
	free(js2);
	return r;
}

/* ------------------------------------------------------------------ numeric */

static void
test_numeric_exact(void)
{
	double		v[] = {1, 2, 3, 4};
	gnn_col_encoder *e;
	gnn_error	err;
	char	   *js;
	float		o[2];
	bool		ok = true;

	CHECK(gnn_enc_create(GNN_ENC_NUMERIC, 0, &e, &err) == GNN_OK, "numeric: create");
	for (int i = 0; i < 4; i++)
		gnn_enc_add_num(e, v[i], false, &err);
	CHECK(gnn_enc_rows(e) == 4, "numeric: 4 rows");
	CHECK(gnn_enc_finish(e, &err) == GNN_OK, "numeric: finish");
	CHECK(gnn_enc_width(e) == 1, "numeric without NULLs: width 1 (got %d)", gnn_enc_width(e));
	js = gnn_enc_describe(e);
	CHECK(json_num(js, "mean") == 2.5, "numeric: mean exactly 2.5 (%s)", js);
	CHECK(json_num(js, "std") == sqrt(1.25), "numeric: population std exactly sqrt(1.25)");
	CHECK(js && strstr(js, "\"missing\":false"), "numeric: no missing column");
	for (int i = 0; i < 4; i++)
	{
		o[0] = o[1] = 99;
		gnn_enc_write(e, i, o);
		ok = ok && o[0] == (float) ((v[i] - 2.5) / sqrt(1.25)) && o[1] == 99;
	}
	CHECK(ok, "numeric: rows written standardised, nothing past the width");
	free(js);
	gnn_enc_free(e);
}

static void
test_numeric_nulls(void)
{
	enum
	{
	N = 1000};
	double		v[N];
	bool		nul[N];
	double		m,
				s;
	gnn_col_encoder *e,
			   *r;
	gnn_error	err;
	gnn_rng		rng;
	char	   *js;
	bool		ok = true,
				same = true;

	gnn_rng_seed(&rng, 11);
	gnn_enc_create(GNN_ENC_NUMERIC, 0, &e, &err);
	for (int i = 0; i < N; i++)
	{
		nul[i] = i % 7 == 3;
		v[i] = nul[i] ? 0 : 1e6 + 1000 * gnn_rng_double(&rng);	/* a large offset: stability */
		/* a NULL may carry any value, NaN included */
		ok = ok && gnn_enc_add_num(e, nul[i] ? NAN : v[i], nul[i], &err) == GNN_OK;
	}
	CHECK(ok && gnn_enc_rows(e) == N, "numeric NULLs: %d rows added", N);
	ref_stats(v, nul, N, &m, &s);
	CHECK(gnn_enc_finish(e, &err) == GNN_OK, "numeric NULLs: finish");
	CHECK(gnn_enc_width(e) == 2, "numeric with NULLs: width 2");
	js = gnn_enc_describe(e);
	CHECK(close_rel(json_num(js, "mean"), m, 1e-15), "numeric NULLs: mean %.17g vs reference %.17g",
		  json_num(js, "mean"), m);
	CHECK(close_rel(json_num(js, "std"), s, 1e-9), "numeric NULLs: std %.17g vs reference %.17g",
		  json_num(js, "std"), s);
	for (int i = 0; i < N; i++)
	{
		float		o[2];

		gnn_enc_write(e, i, o);
		if (nul[i])
			ok = ok && o[0] == 0 && o[1] == 1;
		else
			ok = ok && o[1] == 0 &&
				o[0] == (float) ((v[i] - json_num(js, "mean")) / json_num(js, "std"));
	}
	CHECK(ok, "numeric NULLs: NULL -> [0, 1], value -> [(v - mean) / std, 0]");

	r = round_trip(e, "numeric");
	for (int i = 0; i < N && r; i++)
	{
		float		a[2],
					b[2],
					c[2];

		gnn_enc_write(e, i, a);
		gnn_enc_encode_num(e, v[i], nul[i], b, &err);
		gnn_enc_encode_num(r, v[i], nul[i], c, &err);
		same = same && memcmp(a, b, sizeof(a)) == 0 && memcmp(a, c, sizeof(a)) == 0;
	}
	CHECK(same, "numeric: write, encode and the rebuilt encoder's encode are bit-identical");
	free(js);
	gnn_enc_free(e);
	gnn_enc_free(r);
}

static void
test_numeric_constant_and_empty(void)
{
	gnn_col_encoder *e;
	gnn_error	err;
	float		o[2];
	char	   *js;

	gnn_enc_create(GNN_ENC_NUMERIC, 0, &e, &err);
	for (int i = 0; i < 5; i++)
		gnn_enc_add_num(e, 7.25, false, &err);
	gnn_enc_finish(e, &err);
	js = gnn_enc_describe(e);
	CHECK(json_num(js, "std") == 1 && json_num(js, "mean") == 7.25, "constant column: std 0 -> 1 (%s)", js);
	gnn_enc_write(e, 2, o);
	CHECK(o[0] == 0, "constant column: written as 0");
	free(js);
	gnn_enc_free(e);

	/* only NULLs: mean 0, std 1, width 2 */
	gnn_enc_create(GNN_ENC_NUMERIC, 0, &e, &err);
	gnn_enc_add_num(e, 0, true, &err);
	gnn_enc_add_num(e, 0, true, &err);
	gnn_enc_finish(e, &err);
	js = gnn_enc_describe(e);
	CHECK(gnn_enc_width(e) == 2 && json_num(js, "mean") == 0 && json_num(js, "std") == 1,
		  "all-NULL numeric: width 2, mean 0, std 1");
	free(js);
	gnn_enc_free(e);

	/* no rows at all */
	gnn_enc_create(GNN_ENC_NUMERIC, 0, &e, &err);
	CHECK(gnn_enc_finish(e, &err) == GNN_OK && gnn_enc_width(e) == 1, "empty numeric: width 1");
	gnn_enc_free(e);
}

static void
test_time(void)
{
	/* epoch seconds around 2024: standardising must not lose them */
	double		v[] = {1.7e9, 1.7e9 + 86400, 1.7e9 + 2 * 86400, 1.7e9 + 0.5};
	double		m,
				s;
	gnn_col_encoder *e;
	gnn_error	err;
	char	   *js;
	float		o[2];

	gnn_enc_create(GNN_ENC_TIME, 0, &e, &err);
	for (int i = 0; i < 4; i++)
		gnn_enc_add_num(e, v[i], false, &err);
	gnn_enc_add_num(e, 0, true, &err);
	CHECK(gnn_enc_finish(e, &err) == GNN_OK && gnn_enc_width(e) == 2, "time with a NULL: width 2");
	ref_stats(v, NULL, 4, &m, &s);
	js = gnn_enc_describe(e);
	CHECK(js && strncmp(js, "{\"kind\":\"time\"", 14) == 0, "time: kind in JSON");
	CHECK(close_rel(json_num(js, "mean"), m, 1e-15) && close_rel(json_num(js, "std"), s, 1e-9),
		  "time: mean %.17g std %.17g vs reference %.17g %.17g", json_num(js, "mean"),
		  json_num(js, "std"), m, s);
	gnn_enc_write(e, 1, o);
	CHECK(fabsf(o[0] - (float) ((v[1] - m) / s)) < 1e-6 && o[1] == 0, "time: row 1 standardised");
	gnn_enc_write(e, 4, o);
	CHECK(o[0] == 0 && o[1] == 1, "time: NULL -> [0, 1]");
	gnn_enc_free(round_trip(e, "time"));
	free(js);
	gnn_enc_free(e);
}

static void
test_bool(void)
{
	double		v[] = {1, 0, 1, -1, 5};	/* nonzero is true */
	gnn_col_encoder *e,
			   *r;
	gnn_error	err;
	char	   *js;
	float		o[2];
	bool		ok = true;

	gnn_enc_create(GNN_ENC_BOOL, 0, &e, &err);
	for (int i = 0; i < 5; i++)
		gnn_enc_add_num(e, v[i], false, &err);
	gnn_enc_finish(e, &err);
	CHECK(gnn_enc_width(e) == 1, "bool without NULLs: width 1");
	js = gnn_enc_describe(e);
	CHECK(json_num(js, "mean") == 0.8, "bool: mean is the share of true (%s)", js);
	for (int i = 0; i < 5; i++)
	{
		gnn_enc_write(e, i, o);
		ok = ok && o[0] == (v[i] != 0 ? 1.0f : 0.0f);
	}
	CHECK(ok, "bool: rows written 0 / 1");
	free(js);
	gnn_enc_free(e);

	gnn_enc_create(GNN_ENC_BOOL, 0, &e, &err);
	gnn_enc_add_num(e, 1, false, &err);
	gnn_enc_add_num(e, 0, true, &err);
	gnn_enc_add_num(e, 0, false, &err);
	gnn_enc_add_num(e, 1, false, &err);
	gnn_enc_add_num(e, 1, false, &err);
	gnn_enc_finish(e, &err);
	CHECK(gnn_enc_width(e) == 2, "bool with NULLs: width 2");
	gnn_enc_write(e, 1, o);
	CHECK(o[0] == 0.75f && o[1] == 1, "bool: NULL -> [mean 0.75, 1] (got %g %g)", o[0], o[1]);
	gnn_enc_write(e, 2, o);
	CHECK(o[0] == 0 && o[1] == 0, "bool: false -> [0, 0]");
	r = round_trip(e, "bool");
	if (r)
	{
		float		a[2],
					b[2];

		gnn_enc_encode_num(r, 0, true, a, &err);
		gnn_enc_write(e, 1, b);
		CHECK(memcmp(a, b, sizeof(a)) == 0, "bool: rebuilt encoder encodes NULL identically");
	}
	gnn_enc_free(r);
	gnn_enc_free(e);
}

/* ------------------------------------------------------------------ category */

static void
add_str(gnn_col_encoder *e, const char *s)
{
	gnn_error	err;

	gnn_enc_add_text(e, s, s ? strlen(s) : 0, s == NULL, &err);
}

static int
hot(const float *o, int w)
{
	int			at = -1,
				n = 0;

	for (int i = 0; i < w; i++)
		if (o[i] != 0)
		{
			n++;
			at = o[i] == 1 ? i : -2;
		}
	return n == 1 ? at : n == 0 ? -1 : -3;
}

static void
test_category_topk(void)
{
	/* a x5, c x3, b x3 (tie: b first), e x1, d x1 */
	const char *vals[] = {"c", "a", "b", "e", "a", "c", "a", "b", "d", "a", "c", "b", "a"};
	int			n = 13;
	gnn_col_encoder *e,
			   *r;
	gnn_error	err;
	char	   *js;
	float		o[8],
				o2[8];
	bool		ok = true;

	gnn_enc_create(GNN_ENC_CATEGORY, 3, &e, &err);
	for (int i = 0; i < n; i++)
		add_str(e, vals[i]);
	CHECK(gnn_enc_finish(e, &err) == GNN_OK, "category: finish");
	CHECK(gnn_enc_width(e) == 4, "category top 3 of 5 + other: width 4 (got %d)", gnn_enc_width(e));
	js = gnn_enc_describe(e);
	CHECK(js && strstr(js, "\"categories\":[\"a\",\"b\",\"c\"],\"other\":true,\"missing\":false"),
		  "category: kept a, b, c by frequency, b before c on the tie (%s)", js);
	for (int i = 0; i < n; i++)
	{
		int			want = vals[i][0] == 'a' ? 0 : vals[i][0] == 'b' ? 1 : vals[i][0] == 'c' ? 2 : 3;

		gnn_enc_write(e, i, o);
		ok = ok && hot(o, 4) == want;
	}
	CHECK(ok, "category: rows one-hot on their slot, d and e on other");

	/* unseen at fit time -> other */
	CHECK(gnn_enc_encode_text(e, "zzz", 3, false, o, &err) == GNN_OK && hot(o, 4) == 3,
		  "category: unseen value -> other slot");
	gnn_enc_encode_text(e, "b", 1, false, o, &err);
	CHECK(hot(o, 4) == 1, "category: encode_text of a kept value");
	gnn_enc_encode_text(e, NULL, 0, true, o, &err);
	CHECK(hot(o, 4) == -1, "category without NULLs at fit: a NULL encodes as all zeros");

	r = round_trip(e, "category");
	if (r)
	{
		const char *probe[] = {"a", "b", "c", "d", "e", "zzz", ""};

		for (int i = 0; i < 7; i++)
		{
			gnn_enc_encode_text(e, probe[i], strlen(probe[i]), false, o, &err);
			gnn_enc_encode_text(r, probe[i], strlen(probe[i]), false, o2, &err);
			ok = ok && memcmp(o, o2, 4 * sizeof(float)) == 0;
		}
		CHECK(ok, "category: rebuilt encoder encodes identically");
	}
	gnn_enc_free(r);
	free(js);
	gnn_enc_free(e);

	/* the cut inside a tie: max 2 keeps a and b (b < c in byte order) */
	gnn_enc_create(GNN_ENC_CATEGORY, 2, &e, &err);
	for (int i = 0; i < n; i++)
		add_str(e, vals[i]);
	gnn_enc_finish(e, &err);
	js = gnn_enc_describe(e);
	CHECK(js && strstr(js, "\"categories\":[\"a\",\"b\"],\"other\":true"),
		  "category: a tie at the cut is broken by byte order (%s)", js);
	free(js);
	gnn_enc_free(e);

	/* byte order: a prefix first, bytes unsigned ("\xc3\xa9" after "z") */
	gnn_enc_create(GNN_ENC_CATEGORY, 4, &e, &err);
	add_str(e, "\xc3\xa9");
	add_str(e, "z");
	add_str(e, "ab");
	add_str(e, "a");
	gnn_enc_finish(e, &err);
	js = gnn_enc_describe(e);
	CHECK(js && strstr(js, "\"categories\":[\"a\",\"ab\",\"z\",\"\xc3\xa9\"],\"other\":false"),
		  "category: ties in unsigned byte order, a prefix first (%s)", js);
	CHECK(gnn_enc_width(e) == 4, "category: no other slot when every value is kept");
	gnn_enc_encode_text(e, "nope", 4, false, o, &err);
	CHECK(hot(o, 4) == -1, "category without other: unseen value -> all zeros");
	free(js);
	gnn_enc_free(e);
}

static void
test_category_nulls(void)
{
	gnn_col_encoder *e;
	gnn_error	err;
	float		o[8];
	char	   *js;

	gnn_enc_create(GNN_ENC_CATEGORY, 2, &e, &err);
	add_str(e, "x");
	add_str(e, NULL);
	add_str(e, "y");
	add_str(e, "x");
	add_str(e, "w");
	add_str(e, NULL);
	gnn_enc_finish(e, &err);
	CHECK(gnn_enc_width(e) == 4, "category with NULLs: 2 kept + other + missing (got %d)",
		  gnn_enc_width(e));
	js = gnn_enc_describe(e);
	CHECK(js && strstr(js, "[\"x\",\"w\"],\"other\":true,\"missing\":true"),
		  "category NULLs: NULL is not a category (%s)", js);
	gnn_enc_write(e, 1, o);
	CHECK(hot(o, 4) == 3, "category: NULL row -> missing column only");
	gnn_enc_write(e, 2, o);
	CHECK(hot(o, 4) == 2, "category: y (dropped) -> other");
	gnn_enc_write(e, 4, o);
	CHECK(hot(o, 4) == 1, "category: w kept");
	gnn_enc_encode_text(e, NULL, 0, true, o, &err);
	CHECK(hot(o, 4) == 3, "category: encode_text NULL -> missing column");
	free(js);
	gnn_enc_free(e);

	/* only NULLs: width 1 */
	gnn_enc_create(GNN_ENC_CATEGORY, 5, &e, &err);
	add_str(e, NULL);
	gnn_enc_finish(e, &err);
	gnn_enc_write(e, 0, o);
	CHECK(gnn_enc_width(e) == 1 && o[0] == 1, "all-NULL category: the missing column alone");
	gnn_enc_free(e);
}

static void
test_category_escapes(void)
{
	/* strings the JSON writer must escape, an empty string, and a NUL byte */
	static const char nulbyte[] = {'n', 0, 'b'};
	const char *vals[] = {"q\"uote", "back\\slash", "new\nline", "ctl\x01\x1f", "del\x7f",
	"", "tab\there", "\xe2\x82\xac", "/slash"};
	int			nv = 9;
	gnn_col_encoder *e,
			   *r;
	gnn_error	err;
	float		a[16],
				b[16];
	bool		ok = true;
	char	   *js;

	gnn_enc_create(GNN_ENC_CATEGORY, 32, &e, &err);
	for (int i = 0; i < nv; i++)
		add_str(e, vals[i]);
	gnn_enc_add_text(e, nulbyte, 3, false, &err);
	gnn_enc_finish(e, &err);
	CHECK(gnn_enc_width(e) == nv + 1, "escapes: every value kept");
	js = gnn_enc_describe(e);
	CHECK(js && strstr(js, "\"ctl\\u0001\\u001f\"") && strstr(js, "\"n\\u0000b\"") &&
		  strstr(js, "\"new\\nline\"") && strstr(js, "\"q\\\"uote\"") && strstr(js, "\"del\\u007f\""),
		  "escapes: control characters as \\uXXXX (%s)", js);
	r = round_trip(e, "category escapes");
	for (int i = 0; i <= nv && r; i++)
	{
		const char *s = i < nv ? vals[i] : nulbyte;
		size_t		len = i < nv ? strlen(vals[i]) : 3;

		gnn_enc_encode_text(e, s, len, false, a, &err);
		gnn_enc_encode_text(r, s, len, false, b, &err);
		ok = ok && memcmp(a, b, (size_t) (nv + 1) * sizeof(float)) == 0 && hot(a, nv + 1) >= 0;
	}
	CHECK(ok, "escapes: the rebuilt encoder finds every value in the same slot");
	/* "n" alone is not "n\0b" */
	if (r)
	{
		gnn_enc_encode_text(r, "n", 1, false, a, &err);
		CHECK(hot(a, nv + 1) == -1, "escapes: a NUL byte is part of the value");
	}
	free(js);
	gnn_enc_free(r);
	gnn_enc_free(e);
}

/* ------------------------------------------------------------------ array */

static void
test_array(void)
{
	float		rows[4][3] = {{1, 2, 3}, {0, 0, 0}, {4, 5, 6.5f}, {-1, 0.25f, 7}};
	bool		nul[4] = {false, true, false, false};
	gnn_col_encoder *e,
			   *r;
	gnn_error	err;
	float		o[4],
				o2[4];
	bool		ok = true;
	char	   *js;

	/* a leading NULL before the first array fixes the length */
	gnn_enc_create(GNN_ENC_ARRAY, 0, &e, &err);
	CHECK(gnn_enc_add_array(e, NULL, 0, true, &err) == GNN_OK, "array: leading NULL");
	for (int i = 0; i < 4; i++)
		CHECK(gnn_enc_add_array(e, rows[i], 3, nul[i], &err) == GNN_OK, "array: add row %d", i + 1);
	CHECK(gnn_enc_finish(e, &err) == GNN_OK, "array: finish");
	CHECK(gnn_enc_width(e) == 4, "array of 3 with NULLs: width 4 (got %d)", gnn_enc_width(e));
	for (int i = 0; i < 4; i++)
	{
		gnn_enc_write(e, i + 1, o);
		if (!nul[i])
			ok = ok && memcmp(o, rows[i], sizeof(rows[i])) == 0 && o[3] == 0;
	}
	CHECK(ok, "array: values written as they are, indicator 0");
	for (int k = 0; k < 2; k++)
	{
		gnn_enc_write(e, k == 0 ? 0 : 2, o);
		CHECK(o[0] == (float) ((1.0 + 4 - 1) / 3) && o[1] == (float) ((2.0 + 5 + 0.25) / 3) &&
			  o[2] == (float) ((3.0 + 6.5 + 7) / 3) && o[3] == 1,
			  "array: NULL row %d -> per-element means of the non-NULL rows, indicator 1 "
			  "(%g %g %g %g)", k == 0 ? 0 : 2, o[0], o[1], o[2], o[3]);
	}
	js = gnn_enc_describe(e);
	CHECK(js && strstr(js, "\"length\":3,\"means\":["), "array: means in the JSON (%s)", js);
	r = round_trip(e, "array");
	if (r)
	{
		gnn_enc_encode_array(r, NULL, 0, true, o2, &err);
		gnn_enc_write(e, 0, o);
		CHECK(memcmp(o, o2, sizeof(o)) == 0, "array: rebuilt encoder encodes NULL bit-identically");
		gnn_enc_encode_array(r, rows[2], 3, false, o2, &err);
		gnn_enc_write(e, 3, o);
		CHECK(memcmp(o, o2, sizeof(o)) == 0, "array: rebuilt encoder encodes a value identically");
	}
	free(js);
	gnn_enc_free(r);
	gnn_enc_free(e);

	/* without NULLs: width = length */
	gnn_enc_create(GNN_ENC_ARRAY, 0, &e, &err);
	gnn_enc_add_array(e, rows[0], 3, false, &err);
	gnn_enc_add_array(e, rows[2], 3, false, &err);
	gnn_enc_finish(e, &err);
	gnn_enc_write(e, 1, o);
	CHECK(gnn_enc_width(e) == 3 && memcmp(o, rows[2], sizeof(rows[2])) == 0,
		  "array without NULLs: width 3, values as they are");
	gnn_enc_free(e);

	/* only NULLs: the indicator alone */
	gnn_enc_create(GNN_ENC_ARRAY, 0, &e, &err);
	gnn_enc_add_array(e, NULL, 0, true, &err);
	gnn_enc_finish(e, &err);
	CHECK(gnn_enc_width(e) == 1, "all-NULL array: width 1");
	r = round_trip(e, "all-NULL array");
	gnn_enc_free(r);
	gnn_enc_free(e);
}

/* ------------------------------------------------------------------ JSON */

static void
test_json_tolerance(void)
{
	gnn_col_encoder *e = NULL;
	gnn_error	err;
	gnn_status	st;
	float		o[3];

	st = gnn_enc_from_json(" {\n \"missing\" : true , \"std\":2, \"future\":{\"x\":[1,null,\"y\"]},"
						   "\"mean\":1.5e0,\"width\":2,\"kind\":\"numeric\"} \n", &e, &err);
	CHECK(st == GNN_OK, "json: key order, whitespace and unknown keys are tolerated: %s",
		  st == GNN_OK ? "ok" : err.msg);
	if (e)
	{
		gnn_enc_encode_num(e, 5.5, false, o, &err);
		CHECK(o[0] == 2 && o[1] == 0, "json: the parsed encoding is used");
	}
	gnn_enc_free(e);
	e = NULL;
	st = gnn_enc_from_json("{\"kind\":\"category\",\"width\":2,\"categories\":[\"\\u00e9\\ud83d\\ude00\",\"\\/\"],"
						   "\"other\":false,\"missing\":false}", &e, &err);
	CHECK(st == GNN_OK, "json: \\u escapes beyond ASCII and \\/: %s", st == GNN_OK ? "ok" : err.msg);
	if (e)
	{
		gnn_enc_encode_text(e, "\xc3\xa9\xf0\x9f\x98\x80", 6, false, o, &err);
		CHECK(o[0] == 1 && o[1] == 0, "json: \\u00e9 and a surrogate pair decode to UTF-8");
	}
	gnn_enc_free(e);
}

static void
test_json_malformed(void)
{
	const char *bad[] = {
		"",
		"{",
		"[]",
		"{\"kind\":\"numeric\"}",
		"{\"kind\":\"numeric\",\"width\":1,\"mean\":0,\"std\":1,\"missing\":false} x",
		"{\"kind\":\"numeric\",\"width\":2,\"mean\":0,\"std\":1,\"missing\":false}",
		"{\"kind\":\"numeric\",\"width\":1,\"mean\":0,\"std\":0,\"missing\":false}",
		"{\"kind\":\"numeric\",\"width\":1,\"mean\":0,\"std\":-1,\"missing\":false}",
		"{\"kind\":\"numeric\",\"width\":1,\"mean\":01,\"std\":1,\"missing\":false}",
		"{\"kind\":\"numeric\",\"width\":1,\"mean\":1e999,\"std\":1,\"missing\":false}",
		"{\"kind\":\"numeric\",\"width\":1,\"mean\":NaN,\"std\":1,\"missing\":false}",
		"{\"kind\":\"numeric\",\"width\":1.5,\"mean\":0,\"std\":1,\"missing\":false}",
		"{\"kind\":\"numeric\",\"width\":1,\"width\":1,\"mean\":0,\"std\":1,\"missing\":false}",
		"{\"kind\":\"numeric\",\"width\":1,\"mean\":0,\"std\":1,\"missing\":maybe}",
		"{\"kind\":\"numeric\",\"width\":1,\"mean\":0,\"std\":1,\"missing\":false,}",
		"{\"kind\":\"numeric\" \"width\":1,\"mean\":0,\"std\":1,\"missing\":false}",
		"{\"kind\":\"vector\",\"width\":1,\"missing\":false}",
		"{\"kind\":\"bool\",\"width\":1,\"mean\":2,\"missing\":false}",
		"{\"kind\":\"category\",\"width\":2,\"categories\":[\"a\",\"a\"],\"other\":false,\"missing\":false}",
		"{\"kind\":\"category\",\"width\":2,\"categories\":[\"a\",\"b\"],\"missing\":false}",
		"{\"kind\":\"category\",\"width\":3,\"max_categories\":1,\"categories\":[\"a\",\"b\"],\"other\":true,\"missing\":false}",
		"{\"kind\":\"category\",\"width\":1,\"categories\":[\"a\\q\"],\"other\":false,\"missing\":false}",
		"{\"kind\":\"category\",\"width\":1,\"categories\":[\"a\\u12\"],\"other\":false,\"missing\":false}",
		"{\"kind\":\"category\",\"width\":1,\"categories\":[\"\\ud800\"],\"other\":false,\"missing\":false}",
		"{\"kind\":\"category\",\"width\":1,\"categories\":[\"a\n\"],\"other\":false,\"missing\":false}",
		"{\"kind\":\"category\",\"width\":1,\"categories\":[\"abc",
		"{\"kind\":\"category\",\"width\":1,\"categories\":[1],\"other\":false,\"missing\":false}",
		"{\"kind\":\"array\",\"width\":2,\"length\":2,\"means\":[1],\"missing\":false}",
		"{\"kind\":\"array\",\"width\":2,\"length\":2,\"means\":[1,\"x\"],\"missing\":false}",
		"{\"kind\":\"array\",\"width\":3,\"length\":2,\"means\":[1,2],\"missing\":false}",
		"{\"ki\\u0000nd\":\"numeric\",\"width\":1,\"mean\":0,\"std\":1,\"missing\":false}",
		"{\"x\":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}",
	};
	int			nbad = (int) (sizeof(bad) / sizeof(bad[0]));
	int			rejected = 0,
				rejected_rows = 0;

	for (int i = 0; i < nbad; i++)
	{
		gnn_col_encoder *e = NULL;
		gnn_error	err;
		gnn_status	st = gnn_enc_from_json(bad[i], &e, &err);

		if (st == GNN_ERR_INVALID && e == NULL)
			rejected++;
		else
			NOTE("accepted or wrong status %d: %s", (int) st, bad[i]);
		gnn_enc_free(e);
		e = NULL;
		st = gnn_enc_from_json_rows(bad[i], &e, &err);
		if (st == GNN_ERR_INVALID && e == NULL)
			rejected_rows++;
		else
			NOTE("from_json_rows: accepted or wrong status %d: %s", (int) st, bad[i]);
		gnn_enc_free(e);
	}
	CHECK(rejected == nbad, "json: %d of %d malformed encodings rejected with GNN_ERR_INVALID",
		  rejected, nbad);
	CHECK(rejected_rows == nbad,
		  "json: from_json_rows rejects %d of %d malformed encodings with GNN_ERR_INVALID",
		  rejected_rows, nbad);
}

/* ------------------------------------------------------------------ errors */

static void
test_errors(void)
{
	gnn_col_encoder *num,
			   *cat,
			   *arr,
			   *e;
	gnn_error	err;
	float		v3[3] = {1, 2, 3},
				vnan[2] = {1, NAN},
				o[4];

	gnn_error_clear(&err);
	CHECK(gnn_enc_create(GNN_ENC_CATEGORY, 0, &e, &err) == GNN_ERR_INVALID,
		  "error: max_categories 0 -> invalid");
	CHECK(gnn_enc_create((gnn_enc_kind) 9, 1, &e, &err) == GNN_ERR_INVALID, "error: unknown kind");
	CHECK(gnn_enc_add_num(NULL, 1, false, &err) == GNN_ERR_INVALID, "error: add_num on NULL");
	CHECK(gnn_enc_finish(NULL, &err) == GNN_ERR_INVALID, "error: finish NULL");
	gnn_enc_create(GNN_ENC_NUMERIC, 0, &num, &err);
	gnn_enc_create(GNN_ENC_CATEGORY, 4, &cat, &err);
	gnn_enc_create(GNN_ENC_ARRAY, 0, &arr, &err);
	CHECK(gnn_enc_add_text(num, "a", 1, false, &err) == GNN_ERR_INVALID, "error: add_text on numeric");
	CHECK(gnn_enc_add_array(num, v3, 3, false, &err) == GNN_ERR_INVALID, "error: add_array on numeric");
	CHECK(gnn_enc_add_num(cat, 1, false, &err) == GNN_ERR_INVALID, "error: add_num on category");
	CHECK(gnn_enc_add_num(arr, 1, false, &err) == GNN_ERR_INVALID, "error: add_num on array");
	CHECK(gnn_enc_add_text(arr, "a", 1, false, &err) == GNN_ERR_INVALID, "error: add_text on array");

	gnn_enc_add_num(num, 1, false, &err);
	gnn_enc_add_num(num, 2, false, &err);
	CHECK(gnn_enc_add_num(num, NAN, false, &err) == GNN_ERR_INVALID && err.row == 2 &&
		  strstr(err.msg, "row 2"), "error: NaN names row 2 (%s)", err.msg);
	CHECK(gnn_enc_add_num(num, -INFINITY, false, &err) == GNN_ERR_INVALID && err.row == 2,
		  "error: -Inf is invalid");
	CHECK(gnn_enc_rows(num) == 2, "error: a rejected row is not added");
	CHECK(gnn_enc_add_num(num, NAN, true, &err) == GNN_OK, "a NULL may carry NaN");

	gnn_enc_add_array(arr, v3, 3, false, &err);
	CHECK(gnn_enc_add_array(arr, v3, 2, false, &err) == GNN_ERR_INVALID && err.row == 1 &&
		  strstr(err.msg, "row 1") && strstr(err.msg, "length 2") && strstr(err.msg, "length 3"),
		  "error: array length mismatch names the row and both lengths (%s)", err.msg);
	CHECK(gnn_enc_add_array(arr, vnan, 2, false, &err) == GNN_ERR_INVALID,
		  "error: array mismatch before a NaN is still invalid");
	gnn_enc_free(arr);
	gnn_enc_create(GNN_ENC_ARRAY, 0, &arr, &err);
	CHECK(gnn_enc_add_array(arr, vnan, 2, false, &err) == GNN_ERR_INVALID && err.row == 0 &&
		  strstr(err.msg, "row 0"), "error: NaN in an array names the row (%s)", err.msg);
	CHECK(gnn_enc_add_array(arr, NULL, -1, false, &err) == GNN_ERR_INVALID, "error: negative length");

	CHECK(gnn_enc_encode_num(num, 1, false, o, &err) == GNN_ERR_INVALID, "error: encode before finish");
	CHECK(gnn_enc_describe(num) == NULL, "error: describe before finish is NULL");
	CHECK(gnn_enc_width(num) == 0, "width before finish is 0");
	gnn_enc_finish(num, &err);
	CHECK(gnn_enc_finish(num, &err) == GNN_ERR_INVALID, "error: finish twice");
	CHECK(gnn_enc_add_num(num, 1, false, &err) == GNN_ERR_INVALID, "error: add after finish");
	CHECK(gnn_enc_encode_num(num, INFINITY, false, o, &err) == GNN_ERR_INVALID,
		  "error: encode_num of Inf");
	CHECK(gnn_enc_encode_text(num, "a", 1, false, o, &err) == GNN_ERR_INVALID,
		  "error: encode_text on numeric");
	CHECK(gnn_enc_encode_num(num, 1, false, NULL, &err) == GNN_ERR_INVALID, "error: no output");

	gnn_enc_free(arr);
	gnn_enc_create(GNN_ENC_ARRAY, 0, &arr, &err);
	gnn_enc_add_array(arr, v3, 3, false, &err);
	gnn_enc_finish(arr, &err);
	CHECK(gnn_enc_encode_array(arr, v3, 2, false, o, &err) == GNN_ERR_INVALID &&
		  strstr(err.msg, "length 2") && strstr(err.msg, "length 3"),
		  "error: encode_array of another length (%s)", err.msg);
	CHECK(gnn_enc_encode_array(arr, vnan, 3, false, o, &err) == GNN_ERR_INVALID,
		  "error: encode_array reads past nothing and rejects NaN");
	CHECK(gnn_enc_from_json(NULL, &e, &err) == GNN_ERR_INVALID, "error: from_json NULL");

	/* dropped rows: encoding still works, writing rows does not */
	gnn_enc_drop_rows(num);
	CHECK(gnn_enc_encode_num(num, 2, false, o, &err) == GNN_OK, "drop_rows: encode still works");
	CHECK(gnn_enc_write_rows(&num, 1, 1, o, 4, 0, 1, &err) == GNN_ERR_INVALID,
		  "drop_rows: write_rows refuses");
	gnn_enc_free(num);
	gnn_enc_free(cat);
	gnn_enc_free(arr);
	gnn_enc_free(NULL);
}

/* ------------------------------------------------------------------ feature blocks */

static void
test_write_rows(void)
{
	enum
	{
	N = 10000, LD = 12, COL0 = 2};
	gnn_col_encoder *enc[3];
	gnn_error	err;
	float	   *blk = malloc(sizeof(float) * N * LD);
	int64_t    *perm = malloc(sizeof(int64_t) * N);
	bool		ok = true;
	char		s[16];
	float		av[2];

	gnn_enc_create(GNN_ENC_NUMERIC, 0, &enc[0], &err);
	gnn_enc_create(GNN_ENC_CATEGORY, 3, &enc[1], &err);
	gnn_enc_create(GNN_ENC_ARRAY, 0, &enc[2], &err);
	for (int i = 0; i < N; i++)
	{
		gnn_enc_add_num(enc[0], i * 0.5, i % 10 == 0, &err);
		snprintf(s, sizeof(s), "v%d", i % 5);
		gnn_enc_add_text(enc[1], s, strlen(s), false, &err);
		av[0] = (float) i;
		av[1] = (float) -i;
		gnn_enc_add_array(enc[2], av, 2, i % 3 == 1, &err);
	}
	for (int c = 0; c < 3; c++)
		gnn_enc_finish(enc[c], &err);
	/* 2 + (3 + 1) + (2 + 1) = 9 columns from column 2 */
	CHECK(gnn_enc_width(enc[0]) + gnn_enc_width(enc[1]) + gnn_enc_width(enc[2]) == 9,
		  "write_rows: widths 2 + 4 + 3");
	for (int i = 0; i < N * LD; i++)
		blk[i] = -7;
	CHECK(gnn_enc_write_rows(enc, 3, N, blk, LD, COL0, 2, &err) == GNN_OK, "write_rows: ok");
	for (int r = 0; r < N && ok; r++)
	{
		float		want[9];
		const float *row = blk + (size_t) r * LD;

		gnn_enc_write(enc[0], r, want);
		gnn_enc_write(enc[1], r, want + 2);
		gnn_enc_write(enc[2], r, want + 6);
		ok = row[0] == -7 && row[1] == -7 && memcmp(row + COL0, want, sizeof(want)) == 0 &&
			row[11] == -7;
	}
	CHECK(ok, "write_rows: each row is the concatenation of the slices at col0, nothing else written");

	for (int r = 0; r < N; r++)
		perm[r] = N - 1 - r;
	CHECK(gnn_enc_write_rows_perm(enc, 3, N, perm, blk, LD, COL0, 2, &err) == GNN_OK, "write_rows_perm: ok");
	ok = true;
	for (int r = 0; r < N && ok; r++)
	{
		float		want[9];

		gnn_enc_write(enc[0], N - 1 - r, want);
		gnn_enc_write(enc[1], N - 1 - r, want + 2);
		gnn_enc_write(enc[2], N - 1 - r, want + 6);
		ok = memcmp(blk + (size_t) r * LD + COL0, want, sizeof(want)) == 0;
	}
	CHECK(ok, "write_rows_perm: row r from source row perm[r]");
	perm[5] = N;
	CHECK(gnn_enc_write_rows_perm(enc, 3, N, perm, blk, LD, COL0, 2, &err) == GNN_ERR_INVALID &&
		  err.row == 5, "write_rows_perm: a source row out of range is invalid");
	CHECK(gnn_enc_write_rows(enc, 3, N, blk, 10, COL0, 2, &err) == GNN_ERR_INVALID,
		  "write_rows: ld too small -> invalid");
	CHECK(gnn_enc_write_rows(enc, 3, N + 1, blk, LD, COL0, 2, &err) == GNN_ERR_INVALID,
		  "write_rows: more rows than buffered -> invalid");
	CHECK(gnn_enc_write_rows(NULL, 3, N, blk, LD, COL0, 2, &err) == GNN_ERR_INVALID,
		  "write_rows: no encoders -> invalid");
	for (int c = 0; c < 3; c++)
		gnn_enc_free(enc[c]);
	gnn_enc_create(GNN_ENC_NUMERIC, 0, &enc[0], &err);
	CHECK(gnn_enc_write_rows(enc, 1, 0, blk, LD, 0, 1, &err) == GNN_ERR_INVALID,
		  "write_rows: unfinished encoder -> invalid");
	gnn_enc_free(enc[0]);
	free(blk);
	free(perm);
}

/* ------------------------------------------------------------------ speed */

static void
test_smoke_1m(void)
{
	const int64_t N = 1000000;
	gnn_col_encoder *enc[2];
	gnn_error	err;
	gnn_rng		rng;
	double		t0,
				t_num,
				t_cat,
				t_fin,
				t_write;
	float	   *blk;
	bool		ok = true;
	char		s[32];
	int			w;

	gnn_rng_seed(&rng, 5);
	gnn_enc_create(GNN_ENC_NUMERIC, 0, &enc[0], &err);
	gnn_enc_create(GNN_ENC_CATEGORY, 32, &enc[1], &err);
	t0 = now_s();
	for (int64_t i = 0; i < N; i++)
		ok = ok && gnn_enc_add_num(enc[0], gnn_rng_double(&rng) * 100, (i & 1023) == 7, &err) == GNN_OK;
	t_num = now_s() - t0;
	t0 = now_s();
	for (int64_t i = 0; i < N; i++)
	{
		int			len = snprintf(s, sizeof(s), "cat-%d", (int) gnn_rng_below(&rng, 5000));

		ok = ok && gnn_enc_add_text(enc[1], s, (size_t) len, false, &err) == GNN_OK;
	}
	t_cat = now_s() - t0;
	CHECK(ok, "1M smoke: every row accepted");
	t0 = now_s();
	gnn_enc_finish(enc[0], &err);
	gnn_enc_finish(enc[1], &err);
	t_fin = now_s() - t0;
	w = gnn_enc_width(enc[0]) + gnn_enc_width(enc[1]);
	CHECK(w == 2 + 33, "1M smoke: widths 2 + 33 (got %d)", w);
	blk = malloc(sizeof(float) * (size_t) N * (size_t) w);
	t0 = now_s();
	CHECK(blk && gnn_enc_write_rows(enc, 2, N, blk, w, 0, 2, &err) == GNN_OK, "1M smoke: write_rows");
	t_write = now_s() - t0;
	NOTE("1M rows: numeric feed %.3f s, category feed (5000 distinct) %.3f s, finish %.3f s, "
		 "write_rows (35 columns, 2 threads) %.3f s", t_num, t_cat, t_fin, t_write);
	free(blk);
	gnn_enc_free(enc[0]);
	gnn_enc_free(enc[1]);
}

/* distinct values and the share of rows the kept categories cover */
static void
test_category_coverage(void)
{
	gnn_col_encoder *e;
	gnn_error	err;
	char		buf[32];

	/* 100 rows: "a" 40 times, then 60 distinct names; 2 categories kept */
	CHECK(gnn_enc_create(GNN_ENC_CATEGORY, 2, &e, &err) == GNN_OK, "create");
	for (int i = 0; i < 40; i++)
		gnn_enc_add_text(e, "a", 1, false, &err);
	for (int i = 0; i < 60; i++)
	{
		snprintf(buf, sizeof(buf), "name-%02d", i);
		gnn_enc_add_text(e, buf, strlen(buf), false, &err);
	}
	gnn_enc_add_text(e, NULL, 0, true, &err);
	CHECK(gnn_enc_finish(e, &err) == GNN_OK, "finish");
	CHECK(gnn_enc_distinct(e) == 61, "distinct: %lld", (long long) gnn_enc_distinct(e));
	/* kept: "a" (40) and the first name by byte order (1): 41 of 100 non-NULL rows */
	CHECK(fabs(gnn_enc_coverage(e) - 0.41) < 1e-12, "coverage: %g", gnn_enc_coverage(e));
	gnn_enc_free(e);
	CHECK(gnn_enc_create(GNN_ENC_NUMERIC, 2, &e, &err) == GNN_OK, "create numeric");
	gnn_enc_add_num(e, 1, false, &err);
	gnn_enc_finish(e, &err);
	CHECK(gnn_enc_distinct(e) == -1 && gnn_enc_coverage(e) == 1.0, "numeric: no categories");
	gnn_enc_free(e);
}

/* ------------------------------------------------------------------ refeeding a kept encoding */

/*
 * gnn_enc_from_json_rows: fit on rows A, describe, rebuild from the JSON, feed
 * rows B and finish; every row written must be bit for bit what the fitted
 * encoder's gnn_enc_encode_* gives for its value (and what the fitted encoder
 * wrote for the same value among rows A), within the described width.
 */
typedef struct tval
{
	bool		null;
	double		num;
	const char *s;
	const float *a;
	int32_t		len;
} tval;

#define TV_NUM(x) {false, (x), NULL, NULL, 0}
#define TV_STR(x) {false, 0, (x), NULL, 0}
#define TV_ARR(p, n) {false, 0, NULL, (p), (n)}
#define TV_NULL {true, 0, NULL, NULL, 0}

#define RF_MAXW 16

static gnn_status
tv_feed(gnn_col_encoder *e, gnn_enc_kind k, const tval *v, gnn_error *err)
{
	if (k == GNN_ENC_CATEGORY)
		return gnn_enc_add_text(e, v->s, v->s ? strlen(v->s) : 0, v->null, err);
	if (k == GNN_ENC_ARRAY)
		return gnn_enc_add_array(e, v->a, v->len, v->null, err);
	return gnn_enc_add_num(e, v->num, v->null, err);
}

static gnn_status
tv_encode(const gnn_col_encoder *e, gnn_enc_kind k, const tval *v, float *out, gnn_error *err)
{
	if (k == GNN_ENC_CATEGORY)
		return gnn_enc_encode_text(e, v->s, v->s ? strlen(v->s) : 0, v->null, out, err);
	if (k == GNN_ENC_ARRAY)
		return gnn_enc_encode_array(e, v->a, v->len, v->null, out, err);
	return gnn_enc_encode_num(e, v->num, v->null, out, err);
}

static bool
tv_same(gnn_enc_kind k, const tval *x, const tval *y)
{
	if (x->null || y->null)
		return x->null == y->null;
	if (k == GNN_ENC_CATEGORY)
		return strcmp(x->s, y->s) == 0;
	if (k == GNN_ENC_ARRAY)
		return x->len == y->len && memcmp(x->a, y->a, (size_t) x->len * sizeof(float)) == 0;
	return x->num == y->num;
}

static gnn_col_encoder *
tv_fit(gnn_enc_kind k, int32_t maxcat, const tval *v, int n)
{
	gnn_col_encoder *e = NULL;
	gnn_error	err;
	bool		ok = gnn_enc_create(k, maxcat, &e, &err) == GNN_OK;

	for (int i = 0; ok && i < n; i++)
		ok = tv_feed(e, k, &v[i], &err) == GNN_OK;
	ok = ok && gnn_enc_finish(e, &err) == GNN_OK;
	if (!ok)
	{
		NOTE("fit failed: %s", err.msg);
		gnn_enc_free(e);
		return NULL;
	}
	return e;
}

/*
 * Runs the comparisons; returns the fitted encoder (*fit) and the refed one
 * (the return value, finished) for the caller's own checks on the values.
 */
static gnn_col_encoder *
refit_case(const char *what, gnn_enc_kind k, int32_t maxcat, const tval *A, int nA,
		   const tval *B, int nB, gnn_col_encoder **fit)
{
	gnn_col_encoder *e = tv_fit(k, maxcat, A, nA),
			   *r = NULL,
			   *eb = tv_fit(k, maxcat, B, nB);
	gnn_error	err;
	char	   *js,
			   *js2,
			   *jsb;
	int32_t		W;
	bool		fed = true,
				enc_ok = true,
				same_a = true,
				canary = true;
	int			matched = 0;
	const float CANARY = -12345.0f;

	*fit = e;
	CHECK(e != NULL, "%s: fit on rows A", what);
	if (!e)
		return NULL;
	W = gnn_enc_width(e);
	js = gnn_enc_describe(e);
	CHECK(gnn_enc_from_json_rows(js, &r, &err) == GNN_OK && r != NULL,
		  "%s: from_json_rows (%s)", what, js);
	if (!r)
	{
		free(js);
		gnn_enc_free(eb);
		return NULL;
	}
	CHECK(gnn_enc_width(r) == 0 && gnn_enc_describe(r) == NULL,
		  "%s: not finished before gnn_enc_finish", what);
	for (int i = 0; i < nB; i++)
		if (tv_feed(r, k, &B[i], &err) != GNN_OK)
		{
			NOTE("%s: row %d: %s", what, i, err.msg);
			fed = false;
		}
	CHECK(fed && gnn_enc_rows(r) == nB, "%s: %d rows B fed", what, nB);
	CHECK(gnn_enc_finish(r, &err) == GNN_OK, "%s: finish keeps the encoding", what);
	CHECK(gnn_enc_width(r) == W && W < RF_MAXW, "%s: width %d unchanged (got %d)", what, W,
		  gnn_enc_width(r));
	js2 = gnn_enc_describe(r);
	CHECK(js2 && strcmp(js, js2) == 0, "%s: the refed encoder describes the same encoding (%s)",
		  what, js2 ? js2 : "null");
	/* a plain fit on B would differ: the comparisons below can tell a refit */
	jsb = eb ? gnn_enc_describe(eb) : NULL;
	CHECK(jsb && strcmp(jsb, js) != 0, "%s: a fit on rows B differs (%s)", what,
		  jsb ? jsb : "null");

	for (int i = 0; i < nB; i++)
	{
		float		o1[RF_MAXW + 1],
					o2[RF_MAXW + 1],
					o3[RF_MAXW + 1];

		for (int c = 0; c <= RF_MAXW; c++)
			o1[c] = o2[c] = o3[c] = CANARY;
		gnn_enc_write(r, i, o1);
		if (tv_encode(e, k, &B[i], o2, &err) != GNN_OK)
		{
			NOTE("%s: encode row %d: %s", what, i, err.msg);
			enc_ok = false;
			continue;
		}
		if (memcmp(o1, o2, (size_t) W * sizeof(float)) != 0)
		{
			NOTE("%s: row %d written differs from encode_* (first col %g vs %g)", what, i,
				 (double) o1[0], (double) o2[0]);
			enc_ok = false;
		}
		if (o1[W] != CANARY)
			canary = false;
		for (int j = 0; j < nA; j++)
			if (tv_same(k, &A[j], &B[i]))
			{
				gnn_enc_write(e, j, o3);
				matched++;
				if (memcmp(o1, o3, (size_t) W * sizeof(float)) != 0)
				{
					NOTE("%s: row B %d differs from row A %d as written at fit", what, i, j);
					same_a = false;
				}
				break;
			}
	}
	CHECK(enc_ok, "%s: every row B written bit for bit as the fitted encode_* of its value", what);
	CHECK(canary, "%s: nothing written past the width", what);
	CHECK(same_a && matched > 0, "%s: rows B seen among rows A written as at fit (%d compared)",
		  what, matched);

	/* feature block: reversed permutation, at column 2 of rows of W + 3 */
	{
		int64_t		ld = W + 3;
		float	   *blk = malloc((size_t) nB * (size_t) ld * sizeof(float));
		int64_t    *perm = malloc((size_t) nB * sizeof(int64_t));
		bool		ok = blk && perm;

		for (int i = 0; ok && i < nB; i++)
			perm[i] = nB - 1 - i;
		for (int64_t i = 0; ok && i < nB * ld; i++)
			blk[i] = CANARY;
		ok = ok && gnn_enc_write_rows_perm(&r, 1, nB, perm, blk, ld, 2, 1, &err) == GNN_OK;
		for (int i = 0; ok && i < nB; i++)
		{
			float		o[RF_MAXW + 1];
			const float *row = blk + (int64_t) i * ld;

			gnn_enc_write(r, perm[i], o);
			ok = row[0] == CANARY && row[1] == CANARY && row[ld - 1] == CANARY &&
				memcmp(row + 2, o, (size_t) W * sizeof(float)) == 0;
		}
		CHECK(ok, "%s: write_rows_perm writes the refed rows in their columns", what);
		free(blk);
		free(perm);
	}
	CHECK(gnn_enc_add_num(r, 1, false, &err) == GNN_ERR_INVALID &&
		  gnn_enc_finish(r, &err) == GNN_ERR_INVALID, "%s: no rows or finish after finish", what);
	free(js);
	free(js2);
	free(jsb);
	gnn_enc_free(eb);
	return r;
}

static void
test_refit_numeric(void)
{
	/* NULLs at fit: an indicator column, kept */
	tval		A1[] = {TV_NUM(1), TV_NUM(2), TV_NULL, TV_NUM(4), TV_NUM(10)};
	tval		B1[] = {TV_NUM(100), TV_NUM(-5), TV_NUM(4), TV_NUM(1e6), TV_NUM(2), TV_NUM(0.125)};
	/* no NULLs at fit: a NULL now is the mean alone, width 1 */
	tval		A2[] = {TV_NUM(1), TV_NUM(2), TV_NUM(3), TV_NUM(4)};
	tval		B2[] = {TV_NULL, TV_NUM(7), TV_NUM(2), TV_NULL, TV_NUM(-300.5)};
	gnn_col_encoder *e,
			   *r;
	float		o[RF_MAXW];

	r = refit_case("refit numeric, NULLs at fit", GNN_ENC_NUMERIC, 0, A1, 5, B1, 6, &e);
	if (r)
	{
		/* mean 17/4, std of {1,2,4,10} = sqrt(12.1875) */
		double		m = 4.25,
					sd = sqrt(12.1875);

		gnn_enc_write(r, 0, o);
		CHECK(o[0] == (float) ((100 - m) / sd) && o[1] == 0.0f,
			  "refit numeric: 100 standardised by the fit's mean and std, indicator 0 (%g)",
			  (double) o[0]);
	}
	gnn_enc_free(e);
	gnn_enc_free(r);

	r = refit_case("refit numeric, no NULLs at fit", GNN_ENC_NUMERIC, 0, A2, 4, B2, 5, &e);
	if (r)
	{
		gnn_enc_write(r, 0, o);
		CHECK(gnn_enc_width(r) == 1 && o[0] == 0.0f,
			  "refit numeric: a NULL without an indicator column is the mean (0), width 1");
		gnn_enc_write(r, 1, o);
		CHECK(o[0] == (float) ((7 - 2.5) / sqrt(1.25)), "refit numeric: 7 by the fit's scaling");
	}
	gnn_enc_free(e);
	gnn_enc_free(r);
}

static void
test_refit_bool_time(void)
{
	tval		A1[] = {TV_NUM(1), TV_NUM(0), TV_NUM(0), TV_NUM(1), TV_NUM(1)};
	tval		B1[] = {TV_NUM(0), TV_NUM(0), TV_NULL, TV_NUM(5), TV_NUM(0)};
	tval		A2[] = {TV_NUM(1), TV_NULL, TV_NUM(0), TV_NUM(0)};
	tval		B2[] = {TV_NUM(1), TV_NUM(1), TV_NUM(0)};
	/* seconds since the epoch; B later and wider */
	tval		A3[] = {TV_NUM(1.7e9), TV_NUM(1.7e9 + 3600), TV_NULL, TV_NUM(1.7e9 + 7200)};
	tval		B3[] = {TV_NUM(1.8e9), TV_NULL, TV_NUM(1.7e9), TV_NUM(1.9e9), TV_NUM(1.7e9 + 3600)};
	gnn_col_encoder *e,
			   *r;
	float		o[RF_MAXW];

	r = refit_case("refit bool, no NULLs at fit", GNN_ENC_BOOL, 0, A1, 5, B1, 5, &e);
	if (r)
	{
		gnn_enc_write(r, 2, o);
		CHECK(gnn_enc_width(r) == 1 && o[0] == 0.6f,
			  "refit bool: a NULL is the fit's share of true alone (%g)", (double) o[0]);
		gnn_enc_write(r, 3, o);
		CHECK(o[0] == 1.0f, "refit bool: nonzero is 1");
	}
	gnn_enc_free(e);
	gnn_enc_free(r);

	r = refit_case("refit bool, NULLs at fit", GNN_ENC_BOOL, 0, A2, 4, B2, 3, &e);
	if (r)
	{
		gnn_enc_write(r, 0, o);
		CHECK(gnn_enc_width(r) == 2 && o[0] == 1.0f && o[1] == 0.0f,
			  "refit bool: indicator column kept with no NULL among the new rows");
	}
	gnn_enc_free(e);
	gnn_enc_free(r);

	r = refit_case("refit time", GNN_ENC_TIME, 0, A3, 4, B3, 5, &e);
	if (r)
	{
		gnn_enc_write(r, 1, o);
		CHECK(o[0] == 0.0f && o[1] == 1.0f, "refit time: NULL is the mean and the indicator");
		gnn_enc_write(r, 0, o);
		CHECK(o[0] == (float) ((1.8e9 - (1.7e9 + 3600)) / sqrt(2.0 / 3.0 * 3600 * 3600)),
			  "refit time: scaled by the fit's mean and std (%g)", (double) o[0]);
	}
	gnn_enc_free(e);
	gnn_enc_free(r);
}

static void
test_refit_category(void)
{
	/* kept "a" (3), "b" (2) of 4 distinct, so an "other" slot; a NULL at fit */
	tval		A1[] = {TV_STR("a"), TV_STR("b"), TV_STR("a"), TV_STR("c"), TV_NULL,
	TV_STR("b"), TV_STR("a"), TV_STR("d")};
	/* "b" now outranks "a", "z" and "" were never seen, no NULL */
	tval		B1[] = {TV_STR("b"), TV_STR("b"), TV_STR("z"), TV_STR("b"), TV_STR("a"),
	TV_STR("c"), TV_STR(""), TV_STR("b")};
	/* everything kept: no "other" slot, no NULL at fit */
	tval		A2[] = {TV_STR("x"), TV_STR("y"), TV_STR("y")};
	tval		B2[] = {TV_STR("x"), TV_STR("w"), TV_NULL, TV_STR("y"), TV_STR("w"), TV_STR("x")};
	gnn_col_encoder *e,
			   *r;
	float		o[RF_MAXW];

	r = refit_case("refit category with other", GNN_ENC_CATEGORY, 2, A1, 8, B1, 8, &e);
	if (r)
	{
		/* slots: a 0, b 1, other 2, missing 3 */
		gnn_enc_write(r, 0, o);
		CHECK(gnn_enc_width(r) == 4 && hot(o, 4) == 1, "refit category: b keeps slot 1");
		gnn_enc_write(r, 4, o);
		CHECK(hot(o, 4) == 0, "refit category: a keeps slot 0");
		gnn_enc_write(r, 2, o);
		CHECK(hot(o, 4) == 2, "refit category: unseen z is other");
		gnn_enc_write(r, 6, o);
		CHECK(hot(o, 4) == 2, "refit category: unseen empty string is other");
		gnn_enc_write(r, 5, o);
		CHECK(hot(o, 4) == 2, "refit category: c, not kept at fit, is other");
		CHECK(gnn_enc_distinct(r) == 5, "refit category: distinct counts the new rows (%lld)",
			  (long long) gnn_enc_distinct(r));
		/* kept among the 8 new rows: b x4, a x1 */
		CHECK(fabs(gnn_enc_coverage(r) - 5.0 / 8.0) < 1e-12,
			  "refit category: coverage of the new rows (%g)", gnn_enc_coverage(r));
	}
	gnn_enc_free(e);
	gnn_enc_free(r);

	r = refit_case("refit category without other", GNN_ENC_CATEGORY, 5, A2, 3, B2, 6, &e);
	if (r)
	{
		/* slots: y 0, x 1 */
		gnn_enc_write(r, 0, o);
		CHECK(gnn_enc_width(r) == 2 && hot(o, 2) == 1, "refit category: x keeps slot 1");
		gnn_enc_write(r, 1, o);
		CHECK(hot(o, 2) == -1, "refit category: unseen w without other is all zeros");
		gnn_enc_write(r, 2, o);
		CHECK(hot(o, 2) == -1, "refit category: NULL without an indicator is all zeros");
		CHECK(gnn_enc_distinct(r) == 3 && fabs(gnn_enc_coverage(r) - 0.6) < 1e-12,
			  "refit category: distinct 3, coverage 3 of 5 (%lld, %g)",
			  (long long) gnn_enc_distinct(r), gnn_enc_coverage(r));
		gnn_enc_drop_rows(r);
		gnn_enc_encode_text(r, "y", 1, false, o, NULL);
		CHECK(hot(o, 2) == 0, "refit category: encode_* after drop_rows");
	}
	gnn_enc_free(e);
	gnn_enc_free(r);
}

static void
test_refit_array(void)
{
	static const float a1[] = {1, 2, 3},
				a2[] = {3, 4, 5},
				b1[] = {10, 20, 30},
				b2[] = {-1, 0.5f, 1e6f},
				s1[] = {1, 2},
				s2[] = {3, 4},
				s3[] = {5, 6},
				s4[] = {-7, 8};
	tval		A1[] = {TV_ARR(a1, 3), TV_NULL, TV_ARR(a2, 3)};
	tval		B1[] = {TV_ARR(b1, 3), TV_ARR(b2, 3), TV_ARR(a1, 3)};
	tval		A2[] = {TV_ARR(s1, 2), TV_ARR(s2, 2)};
	tval		B2[] = {TV_NULL, TV_ARR(s3, 2), TV_ARR(s4, 2), TV_ARR(s1, 2), TV_NULL};
	gnn_col_encoder *e,
			   *r;
	gnn_error	err;
	float		o[RF_MAXW];
	char	   *js;

	r = refit_case("refit array, NULLs at fit", GNN_ENC_ARRAY, 0, A1, 3, B1, 3, &e);
	if (r)
	{
		gnn_enc_write(r, 0, o);
		CHECK(gnn_enc_width(r) == 4 && o[0] == 10 && o[2] == 30 && o[3] == 0.0f,
			  "refit array: values as they are, indicator kept at 0");
	}
	gnn_enc_free(e);
	gnn_enc_free(r);

	r = refit_case("refit array, no NULLs at fit", GNN_ENC_ARRAY, 0, A2, 2, B2, 5, &e);
	if (r)
	{
		gnn_enc_write(r, 0, o);
		CHECK(gnn_enc_width(r) == 2 && o[0] == 2.0f && o[1] == 3.0f,
			  "refit array: NULL without an indicator is the fit's means alone");
	}

	/* another length: an error naming the row; the row is not taken */
	js = e ? gnn_enc_describe(e) : NULL;
	gnn_enc_free(r);
	r = NULL;
	CHECK(js && gnn_enc_from_json_rows(js, &r, &err) == GNN_OK, "refit array: rebuild");
	if (r)
	{
		gnn_enc_add_array(r, s1, 2, false, &err);
		gnn_enc_add_array(r, NULL, 0, true, &err);
		CHECK(gnn_enc_add_array(r, a1, 3, false, &err) == GNN_ERR_INVALID && err.row == 2 &&
			  strstr(err.msg, "row 2") && strstr(err.msg, "length 3") &&
			  strstr(err.msg, "length 2"),
			  "refit array: an array of another length names the row (%s)", err.msg);
		CHECK(gnn_enc_rows(r) == 2, "refit array: the bad row is not taken");
		gnn_enc_free(r);
		r = NULL;
		/* the first row fixes nothing: the described length holds from row 0 */
		gnn_enc_from_json_rows(js, &r, &err);
		CHECK(r && gnn_enc_add_array(r, a1, 3, false, &err) == GNN_ERR_INVALID && err.row == 0,
			  "refit array: the first row of another length is an error too");
	}
	free(js);
	gnn_enc_free(e);
	gnn_enc_free(r);
}

/* a refed encoder with no rows at all still has the described width */
static void
test_refit_empty(void)
{
	const char *js = "{\"kind\":\"category\",\"width\":3,\"max_categories\":2,"
		"\"categories\":[\"p\",\"q\"],\"other\":false,\"missing\":true}";
	gnn_col_encoder *r = NULL;
	gnn_error	err;
	char	   *d;

	CHECK(gnn_enc_from_json_rows(js, &r, &err) == GNN_OK, "refit empty: rebuild");
	CHECK(r && gnn_enc_finish(r, &err) == GNN_OK && gnn_enc_width(r) == 3 &&
		  gnn_enc_rows(r) == 0, "refit empty: no rows, width 3");
	d = gnn_enc_describe(r);
	CHECK(d && strcmp(d, js) == 0, "refit empty: the same description");
	free(d);
	gnn_enc_free(r);
	r = (gnn_col_encoder *) 1;
	CHECK(gnn_enc_from_json_rows(NULL, &r, &err) == GNN_ERR_INVALID && r == NULL,
		  "refit: no JSON is invalid");
}

int
main(void)
{
	test_numeric_exact();
	test_numeric_nulls();
	test_numeric_constant_and_empty();
	test_time();
	test_bool();
	test_category_topk();
	test_category_nulls();
	test_category_escapes();
	test_category_coverage();
	test_array();
	test_json_tolerance();
	test_json_malformed();
	test_errors();
	test_write_rows();
	test_refit_numeric();
	test_refit_bool_time();
	test_refit_category();
	test_refit_array();
	test_refit_empty();
	test_smoke_1m();
	return check_done();
}
