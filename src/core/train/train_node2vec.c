/*
 * train_node2vec.c: skip-gram with negative sampling over random walks
 * (train_node2vec.h says what and why).
 */
#include "train/train_node2vec.h"
#include "sample/sample.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#define WALK_CHUNK 4096			/* walks generated, then trained on, at a time */

void
gnn_node2vec_config_default(gnn_node2vec_config *c)
{
	memset(c, 0, sizeof(*c));
	c->dim = 128;
	c->walk_length = 20;
	c->walks_per_node = 10;
	c->window = 10;
	c->p = 1.0;
	c->q = 1.0;
	c->negatives = 1;
	c->epochs = 5;
	c->lr = 0.025f;
	c->seed = 42;
}

gnn_status
gnn_node2vec_config_check(const gnn_node2vec_config *c, gnn_error *err)
{
	if (c->dim < 1 || c->dim > 4096)
		return gnn_error_set(err, GNN_ERR_INVALID, "dim must be between 1 and 4096, not %d", c->dim);
	if (c->walk_length < 1 || c->walk_length > 10000)
		return gnn_error_set(err, GNN_ERR_INVALID, "walk_length must be between 1 and 10000, not %d", c->walk_length);
	if (c->walks_per_node < 1 || c->walks_per_node > 10000)
		return gnn_error_set(err, GNN_ERR_INVALID, "walks_per_node must be between 1 and 10000, not %d",
							 c->walks_per_node);
	if (c->window < 2 || c->window > c->walk_length + 1)
		return gnn_error_set(err, GNN_ERR_INVALID, "window must be between 2 and walk_length + 1 (%d), not %d",
							 c->walk_length + 1, c->window);
	if (!(c->p > 0) || !(c->q > 0) || !isfinite(c->p) || !isfinite(c->q))
		return gnn_error_set(err, GNN_ERR_INVALID, "p and q must be positive numbers (1 = uniform walks)");
	if (c->negatives < 0 || c->negatives > 100)
		return gnn_error_set(err, GNN_ERR_INVALID, "negatives must be between 0 and 100, not %d", c->negatives);
	if (c->epochs < 1 || c->epochs > 100000)
		return gnn_error_set(err, GNN_ERR_INVALID, "epochs must be between 1 and 100000, not %d", c->epochs);
	if (!(c->lr > 0) || !isfinite(c->lr) || c->lr > 10)
		return gnn_error_set(err, GNN_ERR_INVALID, "lr must be a positive number up to 10, not %g", (double) c->lr);
	return GNN_OK;
}

static inline float
dot(const float *a, const float *b, int32_t d)
{
	float		s = 0.0f;

#pragma omp simd reduction(+:s)
	for (int32_t k = 0; k < d; k++)
		s += a[k] * b[k];
	return s;
}

/*
 * One (centre, context) step: context row ev moves now, the centre's
 * gradient is added to acc (applied once per centre, as word2vec does).
 * Returns the pair's loss.
 */
static inline double
pair_step(const float *eu, float *ev, float *acc, int32_t d, float label, float lr)
{
	float		f = dot(eu, ev, d);
	float		sg = 1.0f / (1.0f + expf(-f));
	float		g = (label - sg) * lr;

#pragma omp simd
	for (int32_t k = 0; k < d; k++)
	{
		acc[k] += g * ev[k];
		ev[k] += g * eu[k];
	}
	/* -log sigmoid(f) for a positive, -log sigmoid(-f) for a negative, without overflow */
	{
		double		z = label > 0.5f ? -(double) f : (double) f;

		return z > 0 ? z + log1p(exp(-z)) : log1p(exp(z));
	}
}

double
gnn_node2vec_pair_step(float *eu, float *ev, int32_t dim, float label, float lr)
{
	float	   *acc = calloc((size_t) dim, sizeof(float));
	double		l;

	if (!acc)
		return NAN;
	l = pair_step(eu, ev, acc, dim, label, lr);
	for (int32_t k = 0; k < dim; k++)
		eu[k] += acc[k];
	free(acc);
	return l;
}

/*
 * The negatives' table: node v fills a share of it proportional to its
 * in-degree^0.75 (every node alike when no node has an in-edge).
 */
static int32_t *
negative_table(const gnn_graph *g, int64_t *size)
{
	int64_t		n = g->num_nodes;
	int64_t		T = n * 16;
	double		total = 0;
	int32_t    *t;
	int64_t		at = 0;
	double		cum = 0;

	if (T < (1 << 16))
		T = 1 << 16;
	if (T > (1 << 26))
		T = 1 << 26;
	if (!(t = malloc(sizeof(int32_t) * (size_t) T)))
		return NULL;
	for (int64_t v = 0; v < n; v++)
		total += pow((double) gnn_graph_in_degree(g, v), 0.75);
	for (int64_t v = 0; v < n; v++)
	{
		double		w = total > 0 ? pow((double) gnn_graph_in_degree(g, v), 0.75) / total : 1.0 / (double) n;
		int64_t		end;

		cum += w;
		end = v == n - 1 ? T : (int64_t) (cum * (double) T);
		if (end > T)
			end = T;
		for (; at < end; at++)
			t[at] = (int32_t) v;
	}
	*size = T;
	return t;
}

gnn_status
gnn_node2vec_train(const gnn_graph *g, const gnn_node2vec_config *c,
				   gnn_progress_fn progress, void *progress_arg,
				   gnn_should_stop_fn should_stop, void *stop_arg,
				   float *emb, gnn_node2vec_result *res, gnn_error *err)
{
	int64_t		n = g->num_nodes;
	int32_t		d = c->dim;
	int32_t		L = c->walk_length + 1;
	int			nthreads = c->threads;
	int32_t    *order = NULL,
			   *walks = NULL,
			   *negtab = NULL;
	float	   *acc = NULL;
	int64_t		ntab = 0;
	double		t0 = gnn_now_s();
	int64_t		total_walks,
				done_walks = 0;
	gnn_walk_config wc;
	gnn_status	st;

	memset(res, 0, sizeof(*res));
	if ((st = gnn_node2vec_config_check(c, err)) != GNN_OK)
		return st;
	if (n < 1)
		return gnn_error_set(err, GNN_ERR_INVALID, "the graph has no nodes");
	if (n > INT32_MAX)
		return gnn_error_set(err, GNN_ERR_LIMIT, "node2vec takes at most %d nodes", INT32_MAX);
#ifdef _OPENMP
	if (nthreads <= 0)
		nthreads = omp_get_max_threads();
#else
	nthreads = 1;
#endif
	if (nthreads < 1)
		nthreads = 1;
	total_walks = (int64_t) c->epochs * c->walks_per_node * n;
	order = malloc(sizeof(int32_t) * (size_t) n);
	walks = malloc(sizeof(int32_t) * (size_t) WALK_CHUNK * (size_t) L);
	acc = malloc(sizeof(float) * (size_t) nthreads * (size_t) d);
	negtab = c->negatives > 0 ? negative_table(g, &ntab) : NULL;
	if (!order || !walks || !acc || (c->negatives > 0 && !negtab))
	{
		st = gnn_error_set(err, GNN_ERR_NOMEM, "out of memory for node2vec's walks and tables");
		goto done;
	}
	/* small random starting rows, each from its own stream (any thread count, the same table) */
#pragma omp parallel for schedule(static) num_threads(nthreads)
	for (int64_t v = 0; v < n; v++)
	{
		gnn_rng		r;

		gnn_rng_seed(&r, gnn_mix64(c->seed ^ 0x6e32766563ULL) ^ gnn_mix64((uint64_t) v + 1));
		for (int32_t k = 0; k < d; k++)
			emb[v * d + k] = (gnn_rng_float(&r) - 0.5f) / (float) d;
	}
	memset(&wc, 0, sizeof(wc));
	wc.length = c->walk_length;
	wc.p = c->p;
	wc.q = c->q;
	wc.nthreads = nthreads;

	for (int32_t ep = 0; ep < c->epochs; ep++)
	{
		double		te = gnn_now_s();
		double		loss = 0;
		int64_t		pairs = 0;

		for (int32_t round = 0; round < c->walks_per_node; round++)
		{
			gnn_rng		r;
			uint64_t	rseed = gnn_mix64(c->seed + 0x9e3779b97f4a7c15ULL * (uint64_t) (ep * c->walks_per_node + round + 1));

			/* each round visits every node once, in its own seeded order */
			for (int64_t v = 0; v < n; v++)
				order[v] = (int32_t) v;
			gnn_rng_seed(&r, rseed);
			gnn_shuffle_i32(&r, order, n);
			for (int64_t w0 = 0; w0 < n; w0 += WALK_CHUNK)
			{
				int64_t		nw = n - w0 < WALK_CHUNK ? n - w0 : WALK_CHUNK;
				double		closs = 0;
				int64_t		cpairs = 0;

				if (should_stop && should_stop(stop_arg))
				{
					st = gnn_error_set(err, GNN_ERR_CANCELLED, "node2vec training was stopped");
					goto done;
				}
				if ((st = gnn_random_walk(g, order + w0, nw, &wc, rseed ^ gnn_mix64((uint64_t) w0 + 7), walks,
										  err)) != GNN_OK)
					goto done;
#pragma omp parallel for schedule(dynamic, 64) num_threads(nthreads) reduction(+:closs, cpairs)
				for (int64_t w = 0; w < nw; w++)
				{
#ifdef _OPENMP
					float	   *a = acc + (size_t) omp_get_thread_num() * (size_t) d;
#else
					float	   *a = acc;
#endif
					const int32_t *walk = walks + w * L;
					float		lr = c->lr * (float) (1.0 - (double) (done_walks + w0 + w) / (double) total_walks);
					gnn_rng		wr;

					if (lr < c->lr * 1e-4f)
						lr = c->lr * 1e-4f;
					gnn_rng_seed(&wr, rseed ^ gnn_mix64(((uint64_t) (w0 + w) << 1) | 1));
					int32_t		len = 0;

					while (len < L && walk[len] >= 0)
						len++;
					/* every window of `window` nodes inside the walk: its first node with the others */
					for (int32_t i = 0; i + c->window <= len; i++)
					{
						float	   *eu = emb + (size_t) walk[i] * (size_t) d;

						for (int32_t j = i + 1; j < i + c->window; j++)
						{
							memset(a, 0, sizeof(float) * (size_t) d);
							closs += pair_step(eu, emb + (size_t) walk[j] * (size_t) d, a, d, 1.0f, lr);
							for (int32_t k = 0; k < c->negatives; k++)
							{
								int32_t		ng = negtab[gnn_rng_below(&wr, (uint64_t) ntab)];

								if (ng == walk[j] || ng == walk[i])
									continue;
								closs += pair_step(eu, emb + (size_t) ng * (size_t) d, a, d, 0.0f, lr);
							}
#pragma omp simd
							for (int32_t k = 0; k < d; k++)
								eu[k] += a[k];
							cpairs++;
						}
					}
				}
				loss += closs;
				pairs += cpairs;
			}
			done_walks += n;
			res->walks += n;
		}
		res->pairs += pairs;
		res->epochs_run = ep + 1;
		res->loss = pairs > 0 ? loss / (double) pairs : NAN;
		if (!isfinite(res->loss) && pairs > 0)
		{
			st = gnn_error_set(err, GNN_ERR_BAD_VALUE, "node2vec's loss is not finite at epoch %d: lower lr", ep + 1);
			goto done;
		}
		if (progress)
		{
			gnn_epoch_metrics m;

			gnn_epoch_metrics_init(&m, ep + 1);
			m.train_loss = (float) res->loss;
			m.train_acc = m.val_loss = m.val_acc = m.test_loss = m.test_acc = NAN;
			m.val_auc = m.test_auc = m.val_mae = m.test_mae = m.val_rmse = m.test_rmse = NAN;
			m.seconds = gnn_now_s() - te;
			m.best = true;
			progress(progress_arg, &m);
		}
	}
	st = GNN_OK;
done:
	res->seconds = gnn_now_s() - t0;
	free(order);
	free(walks);
	free(acc);
	free(negtab);
	return st;
}
