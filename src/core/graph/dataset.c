/*
 * dataset.c: CSV loader for the benchmark datasets (policy in dataset.h).
 * The parser is strict: a malformed line is an error naming file and line.
 */
#include "graph/dataset.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct vec
{
	void	   *p;
	int64_t		n;
	int64_t		cap;
	size_t		elem;
} vec;

static bool
vec_push(vec *v, const void *x)
{
	if (v->n == v->cap)
	{
		int64_t		nc = v->cap ? 2 * v->cap : 1024;
		void	   *np = realloc(v->p, nc * v->elem);

		if (!np)
			return false;
		v->p = np;
		v->cap = nc;
	}
	memcpy((char *) v->p + v->n * v->elem, x, v->elem);
	v->n++;
	return true;
}

/* split a line at commas in place; returns the field count (up to max) */
static int
split_fields(char *line, char **f, int max)
{
	int			k = 0;
	char	   *s = line;

	for (;;)
	{
		char	   *c = strchr(s, ',');

		if (k < max)
			f[k] = s;
		k++;
		if (!c)
			break;
		*c = '\0';
		s = c + 1;
	}
	return k;
}

static void
chomp(char *s)
{
	size_t		n = strlen(s);

	while (n > 0 && (s[n - 1] == '\n' || s[n - 1] == '\r'))
		s[--n] = '\0';
}

static bool
parse_i64(const char *s, int64_t *out)
{
	char	   *end;

	if (!*s)
		return false;
	errno = 0;
	*out = strtoll(s, &end, 10);
	return errno == 0 && *end == '\0';
}

static bool
parse_f32(const char *s, float *out)
{
	char	   *end;

	if (!*s)
		return false;
	errno = 0;
	*out = strtof(s, &end);
	return errno == 0 && *end == '\0';
}

static FILE *
open_in(const char *dir, const char *name, char *path, size_t pathlen)
{
	snprintf(path, pathlen, "%s/%s", dir, name);
	return fopen(path, "r");
}

#define BAD_LINE() \
	do { st = gnn_error_set(err, GNN_ERR_BAD_VALUE, "%s:%lld: malformed line", path, (long long) lineno); \
		 goto done; } while (0)
#define OOM() do { st = gnn_error_set(err, GNN_ERR_NOMEM, "out of memory reading %s", path); goto done; } while (0)

gnn_status
gnn_dataset_load(const char *dir, int nthreads, gnn_dataset *out, gnn_error *err)
{
	vec			ids = {0, 0, 0, sizeof(int64_t)},
				labels = {0, 0, 0, sizeof(int32_t)},
				splits = {0, 0, 0, sizeof(uint8_t)},
				esrc = {0, 0, 0, sizeof(int64_t)},
				edst = {0, 0, 0, sizeof(int64_t)},
				spn = {0, 0, 0, sizeof(int64_t)},
				spi = {0, 0, 0, sizeof(int32_t)},
				spv = {0, 0, 0, sizeof(float)};
	float	   *dense = NULL;
	int32_t		dense_dim = 0;
	char		path[1024];
	char	   *line = NULL;
	size_t		linecap = 0;
	FILE	   *fp = NULL;
	int64_t		lineno;
	gnn_status	st = GNN_OK;
	gnn_graph_input in;
	char	   *f[8];

	memset(out, 0, sizeof(*out));

	/* nodes.csv: id,label,split */
	if (!(fp = open_in(dir, "nodes.csv", path, sizeof(path))))
		return gnn_error_set(err, GNN_ERR_INVALID, "cannot open %s: %s", path, strerror(errno));
	for (lineno = 1; getline(&line, &linecap, fp) > 0; lineno++)
	{
		int64_t		id,
					lab = -1;
		uint8_t		sp = GNN_SPLIT_NONE;
		int32_t		l32;

		chomp(line);
		if (lineno == 1 || !*line)
			continue;
		if (split_fields(line, f, 8) != 3 || !parse_i64(f[0], &id))
			BAD_LINE();
		if (*f[1] && (!parse_i64(f[1], &lab) || lab < 0 || lab > INT32_MAX))
			BAD_LINE();
		if (strcmp(f[2], "train") == 0)
			sp = GNN_SPLIT_TRAIN;
		else if (strcmp(f[2], "val") == 0)
			sp = GNN_SPLIT_VAL;
		else if (strcmp(f[2], "test") == 0)
			sp = GNN_SPLIT_TEST;
		else if (*f[2])
			BAD_LINE();
		l32 = (int32_t) lab;
		if (!vec_push(&ids, &id) || !vec_push(&labels, &l32) || !vec_push(&splits, &sp))
			OOM();
	}
	fclose(fp);
	fp = NULL;

	/* edges.csv: src,dst; self loops dropped */
	if (!(fp = open_in(dir, "edges.csv", path, sizeof(path))))
	{
		st = gnn_error_set(err, GNN_ERR_INVALID, "cannot open %s: %s", path, strerror(errno));
		goto done;
	}
	for (lineno = 1; getline(&line, &linecap, fp) > 0; lineno++)
	{
		int64_t		s,
					d;

		chomp(line);
		if (lineno == 1 || !*line)
			continue;
		if (split_fields(line, f, 8) != 2 || !parse_i64(f[0], &s) || !parse_i64(f[1], &d))
			BAD_LINE();
		out->edge_rows++;
		if (s == d)
		{
			out->self_loops_dropped++;
			continue;
		}
		if (!vec_push(&esrc, &s) || !vec_push(&edst, &d))
			OOM();
	}
	fclose(fp);
	fp = NULL;

	/* features: sparse COO preferred, else dense, else none */
	if ((fp = open_in(dir, "features_coo.csv", path, sizeof(path))))
	{
		for (lineno = 1; getline(&line, &linecap, fp) > 0; lineno++)
		{
			int64_t		id,
						fi;
			float		v;
			int32_t		f32;

			chomp(line);
			if (lineno == 1 || !*line)
				continue;
			if (split_fields(line, f, 8) != 3 || !parse_i64(f[0], &id) || !parse_i64(f[1], &fi) ||
				fi < 0 || fi > INT32_MAX || !parse_f32(f[2], &v))
				BAD_LINE();
			f32 = (int32_t) fi;
			if (!vec_push(&spn, &id) || !vec_push(&spi, &f32) || !vec_push(&spv, &v))
				OOM();
		}
		fclose(fp);
		fp = NULL;
	}
	else if ((fp = open_in(dir, "features.csv", path, sizeof(path))))
	{
		int64_t		row = 0;

		for (lineno = 1; getline(&line, &linecap, fp) > 0; lineno++)
		{
			char	   *s,
					   *end;
			int64_t		id;

			chomp(line);
			if (!*line)
				continue;
			if (lineno == 1)
			{
				/* header: id,f0,...: count the columns */
				for (s = line; *s; s++)
					dense_dim += *s == ',';
				if (dense_dim < 1)
					BAD_LINE();
				dense = malloc(sizeof(float) * ids.n * dense_dim + 1);
				if (!dense)
					OOM();
				continue;
			}
			if (row >= ids.n)
				BAD_LINE();
			errno = 0;
			id = strtoll(line, &end, 10);
			/* rows must come in nodes.csv order (as the shipped files do) */
			if (errno || *end != ',' || id != ((int64_t *) ids.p)[row])
				BAD_LINE();
			s = end + 1;
			for (int32_t k = 0; k < dense_dim; k++)
			{
				dense[row * dense_dim + k] = strtof(s, &end);
				if (end == s || (k < dense_dim - 1 ? *end != ',' : *end != '\0'))
					BAD_LINE();
				s = end + 1;
			}
			row++;
		}
		if (row != ids.n)
		{
			st = gnn_error_set(err, GNN_ERR_BAD_VALUE, "%s has %lld rows, nodes.csv %lld", path,
							   (long long) row, (long long) ids.n);
			goto done;
		}
		fclose(fp);
		fp = NULL;
	}

	memset(&in, 0, sizeof(in));
	in.num_edges = esrc.n;
	in.src = esrc.p;
	in.dst = edst.p;
	in.undirected = true;
	in.skip_dangling = false;
	in.num_nodes = ids.n;
	in.node_ids = ids.p;
	in.labels = labels.p;
	in.split = splits.p;
	in.nthreads = nthreads;
	if (dense)
	{
		in.feat_dim = dense_dim;
		in.feat = dense;
	}
	else if (spn.n > 0)
	{
		in.sparse_nnz = spn.n;
		in.sp_node = spn.p;
		in.sp_index = spi.p;
		in.sp_value = spv.p;
	}
	st = gnn_graph_build_region(&in, &out->region, &out->size, &out->g, err);

done:
	if (fp)
		fclose(fp);
	free(line);
	free(ids.p);
	free(labels.p);
	free(splits.p);
	free(esrc.p);
	free(edst.p);
	free(spn.p);
	free(spi.p);
	free(spv.p);
	free(dense);
	if (st != GNN_OK)
		gnn_dataset_free(out);
	return st;
}

void
gnn_dataset_free(gnn_dataset *ds)
{
	if (!ds)
		return;
	free(ds->region);
	memset(ds, 0, sizeof(*ds));
}
