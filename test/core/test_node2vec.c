/*
 * test_node2vec: skip-gram with negative sampling over random walks.
 *
 *  - the configuration's ranges are checked, each refusal naming its field;
 *  - one pair's step: the loss is -log sigmoid(u.v) (positive) or
 *    -log sigmoid(-u.v) (negative), and the step moves u.v the right way;
 *  - two communities joined by one edge: rows of one community are far more
 *    alike (cosine) than rows of the other, without labels or features;
 *  - one thread repeats bit for bit; two threads train as well;
 *  - a node without edges keeps its small random row; a stop request ends
 *    training with GNN_ERR_CANCELLED;
 *  - as a model (GNN_MODEL_NODE2VEC): trained rows survive serialisation,
 *    full and few-node inference read them, a graph of another node count
 *    is refused, and there is no forward pass;
 *  - Cora (skipped without ../shared/data): a nearest-centroid classifier on
 *    the embeddings (centroids of the 140 training nodes) beats 0.60 test
 *    accuracy, with no feature or label used in training.
 */
#include "check.h"
#include "graph/dataset.h"
#include "train/train_node2vec.h"
#include "infer/infer.h"
#include "nn/serialize.h"

#include <math.h>

static gnn_status
build(int64_t m, const int64_t *src, const int64_t *dst, int64_t nnodes, void **region, gnn_graph *g)
{
	gnn_graph_input in = {0};
	int64_t    *ids = malloc(sizeof(int64_t) * nnodes);
	uint64_t	size;
	gnn_error	err;
	gnn_status	st;

	for (int64_t i = 0; i < nnodes; i++)
		ids[i] = i;
	in.num_edges = m;
	in.src = src;
	in.dst = dst;
	in.undirected = true;
	in.num_nodes = nnodes;
	in.node_ids = ids;
	st = gnn_graph_build_region(&in, region, &size, g, &err);
	if (st != GNN_OK)
		NOTE("build failed: %s", err.msg);
	free(ids);
	return st;
}

static double
cosine(const float *a, const float *b, int d)
{
	double		ab = 0,
				aa = 0,
				bb = 0;

	for (int k = 0; k < d; k++)
	{
		ab += (double) a[k] * b[k];
		aa += (double) a[k] * a[k];
		bb += (double) b[k] * b[k];
	}
	return aa > 0 && bb > 0 ? ab / sqrt(aa * bb) : 0;
}

static bool
stop_now(void *arg)
{
	(void) arg;
	return true;
}

static void
test_config(void)
{
	gnn_node2vec_config c;
	gnn_error	err;
	struct
	{
		const char *field;
		void		(*set) (gnn_node2vec_config *);
	}			bad[7];
	int			nb = 0;

	gnn_node2vec_config_default(&c);
	CHECK(gnn_node2vec_config_check(&c, &err) == GNN_OK && c.dim == 128 && c.walk_length == 20 &&
		  c.walks_per_node == 10 && c.window == 10 && c.p == 1 && c.q == 1,
		  "defaults: dim 128, walks of 20 steps, 10 per node, window 10, p = q = 1");
#define BAD(f, stmt) do { gnn_node2vec_config_default(&c); stmt; \
	CHECK(gnn_node2vec_config_check(&c, &err) == GNN_ERR_INVALID && strstr(err.msg, f), \
		  "refused: %s (%s)", #stmt, err.msg); } while (0)
	BAD("dim", c.dim = 0);
	BAD("walk_length", c.walk_length = 0);
	BAD("walks_per_node", c.walks_per_node = -1);
	BAD("window", c.window = c.walk_length + 2);
	BAD("window", c.window = 1);
	BAD("p and q", c.q = 0);
	BAD("p and q", c.p = NAN);
	BAD("negatives", c.negatives = 101);
	BAD("epochs", c.epochs = 0);
	BAD("lr", c.lr = -1);
#undef BAD
	(void) bad;
	(void) nb;
}

static void
test_pair_step(void)
{
	float		u[4] = {0.1f, -0.2f, 0.3f, 0.05f},
				v[4] = {0.2f, 0.1f, -0.1f, 0.4f},
				u0[4],
				v0[4];
	double		f = 0,
				f2 = 0,
				l;

	memcpy(u0, u, sizeof(u));
	memcpy(v0, v, sizeof(v));
	for (int k = 0; k < 4; k++)
		f += (double) u[k] * v[k];
	l = gnn_node2vec_pair_step(u, v, 4, 1.0f, 0.5f);
	for (int k = 0; k < 4; k++)
		f2 += (double) u[k] * v[k];
	CHECK(fabs(l - log1p(exp(-f))) < 1e-6 && f2 > f,
		  "positive pair: loss -log sigmoid(u.v) = %.6f, u.v rises %.4f -> %.4f", l, f, f2);
	memcpy(u, u0, sizeof(u));
	memcpy(v, v0, sizeof(v));
	l = gnn_node2vec_pair_step(u, v, 4, 0.0f, 0.5f);
	f2 = 0;
	for (int k = 0; k < 4; k++)
		f2 += (double) u[k] * v[k];
	CHECK(fabs(l - log1p(exp(f))) < 1e-6 && f2 < f,
		  "negative pair: loss -log sigmoid(-u.v) = %.6f, u.v falls %.4f -> %.4f", l, f, f2);
}

/* two cliques of K nodes joined by one edge, and one isolated node (the last) */
static void
test_communities(void)
{
	enum
	{
		K = 24
	};
	int64_t		src[K * K + 1],
				dst[K * K + 1],
				m = 0,
				n = 2 * K + 1;
	void	   *region = NULL;
	gnn_graph	g;
	gnn_node2vec_config c;
	gnn_node2vec_result r,
				r2;
	gnn_error	err;
	float	   *e1,
			   *e2,
			   *e3;
	double		intra = 0,
				inter = 0;
	int64_t		ni = 0,
				nx = 0;
	gnn_status	st;

	for (int side = 0; side < 2; side++)
		for (int i = 0; i < K; i++)
			for (int j = i + 1; j < K; j++)
			{
				src[m] = side * K + i;
				dst[m++] = side * K + j;
			}
	src[m] = 0;
	dst[m++] = K;
	if (build(m, src, dst, n, &region, &g) != GNN_OK)
	{
		CHECK(0, "build two communities");
		return;
	}
	gnn_node2vec_config_default(&c);
	c.dim = 16;
	c.walk_length = 10;
	c.window = 5;
	c.walks_per_node = 5;
	c.epochs = 3;
	c.threads = 1;
	c.seed = 7;
	e1 = malloc(sizeof(float) * n * c.dim);
	e2 = malloc(sizeof(float) * n * c.dim);
	e3 = malloc(sizeof(float) * n * c.dim);
	st = gnn_node2vec_train(&g, &c, NULL, NULL, NULL, NULL, e1, &r, &err);
	CHECK(st == GNN_OK && r.epochs_run == 3 && r.walks == 3 * 5 * n && r.pairs > 0 && isfinite(r.loss),
		  "trains: %d epochs, %lld walks, %lld pairs, loss %.4f %s", r.epochs_run, (long long) r.walks,
		  (long long) r.pairs, r.loss, st == GNN_OK ? "" : err.msg);
	for (int64_t a = 0; a < 2 * K; a++)
		for (int64_t b = a + 1; b < 2 * K; b++)
		{
			double		cs = cosine(e1 + a * c.dim, e1 + b * c.dim, c.dim);

			if ((a < K) == (b < K))
			{
				intra += cs;
				ni++;
			}
			else
			{
				inter += cs;
				nx++;
			}
		}
	intra /= ni;
	inter /= nx;
	CHECK(intra > 0.5 && intra - inter > 0.5,
		  "two communities without labels: mean cosine %.3f within, %.3f across", intra, inter);
	{
		bool		small = true;

		for (int k = 0; k < c.dim; k++)
			small = small && fabsf(e1[(n - 1) * c.dim + k]) <= 0.5f / c.dim;
		CHECK(small, "the isolated node keeps its small random starting row");
	}
	st = gnn_node2vec_train(&g, &c, NULL, NULL, NULL, NULL, e2, &r2, &err);
	CHECK(st == GNN_OK && memcmp(e1, e2, sizeof(float) * n * c.dim) == 0 && r2.loss == r.loss,
		  "one thread: the same seed gives the same rows, bit for bit");
	c.seed = 8;
	st = gnn_node2vec_train(&g, &c, NULL, NULL, NULL, NULL, e2, &r2, &err);
	CHECK(st == GNN_OK && memcmp(e1, e2, sizeof(float) * n * c.dim) != 0, "another seed, other rows");
	c.threads = 2;
	st = gnn_node2vec_train(&g, &c, NULL, NULL, NULL, NULL, e3, &r2, &err);
	intra = inter = 0;
	for (int64_t a = 0; a < 2 * K; a++)
		for (int64_t b = a + 1; b < 2 * K; b++)
		{
			double		cs = cosine(e3 + a * c.dim, e3 + b * c.dim, c.dim);

			if ((a < K) == (b < K))
				intra += cs / ni;
			else
				inter += cs / nx;
		}
	CHECK(st == GNN_OK && intra - inter > 0.5, "two threads: %.3f within, %.3f across", intra, inter);
	st = gnn_node2vec_train(&g, &c, NULL, NULL, stop_now, NULL, e3, &r2, &err);
	CHECK(st == GNN_ERR_CANCELLED, "a stop request cancels: %s", err.msg);
	free(e1);
	free(e2);
	free(e3);
	free(region);
}

/* the rows as a model: serialise, read back, infer (all and few), refusals */
static void
test_model(void)
{
	int64_t		src[] = {0, 1, 2, 3},
				dst[] = {1, 2, 3, 0},
				n = 5,
				idx[] = {3, 0, 3};
	void	   *region = NULL,
			   *region2 = NULL;
	gnn_graph	g,
				g2;
	gnn_backend *be = NULL;
	gnn_model_config mc;
	gnn_model  *m = NULL,
			   *m2 = NULL;
	gnn_model_meta meta;
	gnn_node2vec_config c;
	gnn_node2vec_result r;
	gnn_rng		rng;
	gnn_error	err;
	void	   *blob = NULL;
	size_t		len = 0;
	float		all[5 * 8],
				few[3 * 8],
				rows[5 * 8];
	const float *logits;
	gnn_status	st;

	if (build(4, src, dst, n, &region, &g) != GNN_OK || build(3, src, dst, n - 1, &region2, &g2) != GNN_OK ||
		gnn_backend_cpu_create(1, &be, &err) != GNN_OK)
	{
		CHECK(0, "set up the model test");
		return;
	}
	gnn_model_config_default(GNN_MODEL_NODE2VEC, &mc);
	mc.in_dim = (int32_t) n;
	mc.hidden = mc.out_dim = 8;
	mc.layers = 1;
	gnn_rng_seed(&rng, 1);
	st = gnn_model_create(be, &mc, &rng, &m, &err);
	CHECK(st == GNN_OK && gnn_model_num_params(m) == 1 && gnn_model_layer_dim(m, 0) == 8 &&
		  gnn_model_param(m, 0)->g.rows == 0,
		  "a node2vec model: one table of 5 x 8, no gradient or moments %s", st == GNN_OK ? "" : err.msg);
	gnn_node2vec_config_default(&c);
	c.dim = 8;
	c.walk_length = 4;
	c.window = 3;
	c.epochs = 1;
	c.threads = 1;
	st = gnn_node2vec_train(&g, &c, NULL, NULL, NULL, NULL, gnn_model_param(m, 0)->w.data, &r, &err);
	memcpy(rows, gnn_model_param(m, 0)->w.data, sizeof(rows));
	memset(&meta, 0, sizeof(meta));
	meta.seed = 1;
	if (st == GNN_OK)
		st = gnn_model_serialize(m, &meta, &blob, &len, &err);
	if (st == GNN_OK)
		st = gnn_model_deserialize(be, blob, len, &m2, &meta, &err);
	CHECK(st == GNN_OK && gnn_model_config_of(m2)->kind == GNN_MODEL_NODE2VEC &&
		  gnn_model_config_of(m2)->in_dim == n, "trained, serialised and read back %s", st == GNN_OK ? "" : err.msg);
	st = gnn_model_infer(m2, &g, false, -1, false, all, &err);
	CHECK(st == GNN_OK && memcmp(all, rows, sizeof(rows)) == 0, "full inference: the trained rows, bit for bit");
	st = gnn_model_infer_nodes(m2, &g, false, 0, false, idx, 3, 0, few, NULL, &err);
	CHECK(st == GNN_OK && memcmp(few, rows + 3 * 8, 8 * sizeof(float)) == 0 &&
		  memcmp(few + 8, rows, 8 * sizeof(float)) == 0 && memcmp(few + 16, rows + 3 * 8, 8 * sizeof(float)) == 0,
		  "few-node inference: rows 3, 0, 3");
	st = gnn_model_infer(m2, &g, false, -1, true, all, &err);
	CHECK(st == GNN_ERR_INVALID, "probabilities refused: %s", err.msg);
	st = gnn_model_infer(m2, &g2, false, -1, false, all, &err);
	CHECK(st == GNN_ERR_DIMENSION && strstr(err.msg, "training again"), "a graph of 4 nodes refused: %s", err.msg);
	idx[0] = 7;
	st = gnn_model_infer_nodes(m2, &g, false, 0, false, idx, 1, 0, few, NULL, &err);
	CHECK(st == GNN_ERR_INVALID, "a node out of range refused: %s", err.msg);
	st = gnn_model_forward(m2, NULL, NULL, false, 0, &logits, &err);
	CHECK(st == GNN_ERR_UNSUPPORTED, "no forward pass: %s", err.msg);
	free(blob);
	gnn_model_free(m);
	gnn_model_free(m2);
	gnn_backend_destroy(be);
	free(region);
	free(region2);
}

static void
test_cora(void)
{
	const char *dir = check_data_dir();
	char		path[1024];
	gnn_dataset cora;
	gnn_error	err;
	gnn_node2vec_config c;
	gnn_node2vec_result r;
	float	   *e;
	int32_t		C;
	double	   *cent;
	int64_t		right = 0,
				total = 0;
	int64_t		n;
	gnn_status	st;

	if (!dir)
	{
		CHECK_SKIP("../shared/data not found (set GNN_DATA_DIR)", "node2vec on cora");
		return;
	}
	snprintf(path, sizeof(path), "%s/cora", dir);
	if (gnn_dataset_load(path, 0, &cora, &err) != GNN_OK)
	{
		CHECK(0, "load cora: %s", err.msg);
		return;
	}
	n = cora.g.num_nodes;
	C = cora.g.num_classes;
	gnn_node2vec_config_default(&c);
	c.seed = 1;
	c.threads = 2;
	if (check_short())
	{
		/* the sanitizer run: a fifth of the walks (the plain run trains in full) */
		c.epochs = 2;
		c.walks_per_node = 5;
	}
	e = malloc(sizeof(float) * n * c.dim);
	st = gnn_node2vec_train(&cora.g, &c, NULL, NULL, NULL, NULL, e, &r, &err);
	NOTE("  cora: %d epochs, loss %.4f, %lld pairs, %.2f s", r.epochs_run, r.loss, (long long) r.pairs, r.seconds);
	cent = calloc((size_t) C * c.dim + C, sizeof(double));
	for (int64_t v = 0; v < n; v++)
		if (cora.g.split[v] == GNN_SPLIT_TRAIN)
		{
			double		nn = 0;

			for (int k = 0; k < c.dim; k++)
				nn += (double) e[v * c.dim + k] * e[v * c.dim + k];
			nn = sqrt(nn) + 1e-12;
			for (int k = 0; k < c.dim; k++)
				cent[cora.g.labels[v] * c.dim + k] += e[v * c.dim + k] / nn;
		}
	for (int64_t v = 0; v < n; v++)
		if (cora.g.split[v] == GNN_SPLIT_TEST)
		{
			int			best = -1;
			double		bs = -2;

			for (int k = 0; k < C; k++)
			{
				float		row[512];
				double		cs;

				for (int j = 0; j < c.dim; j++)
					row[j] = (float) cent[k * c.dim + j];
				cs = cosine(e + v * c.dim, row, c.dim);
				if (cs > bs)
				{
					bs = cs;
					best = k;
				}
			}
			right += best == cora.g.labels[v];
			total++;
		}
	CHECK(st == GNN_OK && total == 1000 && (double) right / total >= 0.60,
		  "cora without features or labels: nearest-centroid test accuracy %.3f >= 0.60 %s",
		  (double) right / total, st == GNN_OK ? "" : err.msg);
	free(cent);
	free(e);
	gnn_dataset_free(&cora);
}

int
main(void)
{
	test_config();
	test_pair_step();
	test_communities();
	test_model();
	test_cora();
	return check_done();
}
