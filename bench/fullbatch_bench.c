/*
 * fullbatch_bench.c: full-batch GCN on Cora with dense features (the
 * 1433-dim bag of words as a dense real[] row per node, as features from a
 * text model would come), against the floor of the same epoch: its dense
 * products alone, timed on the same shapes in the same run.
 *
 *   fullbatch_bench DATA_DIR [EPOCHS [REPEATS]]
 *
 * For hidden 16 and 64 (the SQL default), 1 and 2 threads: ms per epoch
 * (a training step plus the evaluation pass, best of REPEATS runs of EPOCHS
 * epochs), split by the core's timing into aggregation, dense products and
 * the rest, and the floor: per epoch, the layer-1 products of a training
 * step (X W forward, X^T dZ for the weight gradient; no input gradient) and
 * of the evaluation (X W), and layer 2's (H W2, H^T dZ2, dZ2 W2^T, and
 * H W2 again), each the best of REPEATS x EPOCHS calls of cblas_sgemm split
 * into row blocks as the CPU backend does.
 */
#include "graph/dataset.h"
#include "train/train.h"
#include "nn/backend.h"
#include "bench_util.h"

#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef _OPENMP
#include <omp.h>
#endif

extern void openblas_set_num_threads(int num_threads);

/* C = op(A) op(B) split into nt row blocks of C, one cblas call each */
static void
gemm(int nt, bool ta, bool tb, int m, int n, int k, const float *A, int lda, const float *B, int ldb,
	 float *C, int ldc)
{
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1)
	for (int t = 0; t < nt; t++)
	{
		int			lo = (int) ((int64_t) m * t / nt),
					hi = (int) ((int64_t) m * (t + 1) / nt);

		if (hi > lo)
			cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
						hi - lo, n, k, 1.0f, ta ? A + lo : A + (size_t) lo * lda, lda, B, ldb, 0.0f,
						C + (size_t) lo * ldc, ldc);
	}
}

/* the same, through a backend's own GEMM (its blocking) when be is given */
static gnn_backend *floor_be;

static void
bgemm(int nt, bool ta, bool tb, int m, int n, int k, const float *A, int lda, const float *B, int ldb,
	  float *C, int ldc)
{
	if (floor_be)
		gnn_backend_gemm(floor_be, ta, tb, m, n, k, 1.0f, A, lda, B, ldb, 0.0f, C, ldc);
	else
		gemm(nt, ta, tb, m, n, k, A, lda, B, ldb, C, ldc);
}

static double
floor_ms(int nt, int n, int d, int h, int c, int reps)
{
	float	   *X = malloc(sizeof(float) * n * d),
			   *W = malloc(sizeof(float) * d * h),
			   *Z = malloc(sizeof(float) * n * h),
			   *dW = malloc(sizeof(float) * d * h),
			   *W2 = malloc(sizeof(float) * h * c),
			   *Z2 = malloc(sizeof(float) * n * c),
			   *dW2 = malloc(sizeof(float) * h * c),
			   *dH = malloc(sizeof(float) * n * h);
	double		best = 1e30;

	for (int64_t i = 0; i < (int64_t) n * d; i++)
		X[i] = (i % 97) == 0 ? 1.0f : 0.0f;
	for (int64_t i = 0; i < (int64_t) d * h; i++)
		W[i] = 0.01f * (float) (i % 13);
	for (int64_t i = 0; i < (int64_t) n * h; i++)
		Z[i] = 0.02f * (float) (i % 7);
	for (int64_t i = 0; i < (int64_t) h * c; i++)
		W2[i] = 0.03f * (float) (i % 5);
	for (int64_t i = 0; i < (int64_t) n * c; i++)
		Z2[i] = 0.01f * (float) (i % 3);
	for (int r = 0; r < reps; r++)
	{
		double		t = now_s();

		bgemm(nt, false, false, n, h, d, X, d, W, h, Z, h);	/* train forward */
		bgemm(nt, false, false, n, c, h, Z, h, W2, c, Z2, c);
		bgemm(nt, true, false, h, c, n, Z, h, Z2, c, dW2, c);	/* layer 2 weight gradient */
		bgemm(nt, false, true, n, h, c, Z2, c, W2, c, dH, h);	/* layer 2 input gradient */
		bgemm(nt, true, false, d, h, n, X, d, dH, h, dW, h);	/* layer 1 weight gradient */
		bgemm(nt, false, false, n, h, d, X, d, W, h, Z, h);	/* evaluation */
		bgemm(nt, false, false, n, c, h, Z, h, W2, c, Z2, c);
		t = now_s() - t;
		if (t < best)
			best = t;
	}
	free(X);
	free(W);
	free(Z);
	free(dW);
	free(W2);
	free(Z2);
	free(dW2);
	free(dH);
	return best * 1e3;
}

int
main(int argc, char **argv)
{
	const char *dir = argc > 1 ? argv[1] : "../shared/data/cora";
	int			epochs = argc > 2 ? atoi(argv[2]) : 200;
	int			reps = argc > 3 ? atoi(argv[3]) : 3;
	gnn_dataset ds;
	gnn_error	err;
	gnn_graph	g;
	void	   *region;
	uint64_t	size;
	int64_t		n;
	int			d;

	openblas_set_num_threads(1);
	if (gnn_dataset_load(dir, 1, &ds, &err) != GNN_OK)
	{
		fprintf(stderr, "%s: %s\n", dir, err.msg);
		return 1;
	}
	n = ds.g.num_nodes;
	d = ds.g.feat_dim;
	/* the same graph with its features as dense rows */
	{
		gnn_graph_input in = {0};
		float	   *feat = calloc((size_t) n * d, sizeof(float));
		int64_t    *src = malloc(sizeof(int64_t) * ds.g.num_edges),
				   *dst = malloc(sizeof(int64_t) * ds.g.num_edges),
				   *ids = malloc(sizeof(int64_t) * n);
		int64_t		m = 0;

		for (int64_t v = 0; v < n; v++)
		{
			ids[v] = v;
			if (ds.g.feat_kind == GNN_FEAT_SPARSE)
				for (int64_t e = ds.g.fptr[v]; e < ds.g.fptr[v + 1]; e++)
					feat[v * d + ds.g.fidx[e]] = ds.g.fval ? ds.g.fval[e] : 1.0f;
			else
				memcpy(feat + v * d, gnn_graph_feat_row(&ds.g, v), sizeof(float) * d);
			for (int64_t e = ds.g.rindptr[v]; e < ds.g.rindptr[v + 1]; e++)
			{
				src[m] = ds.g.rindices[e];
				dst[m++] = v;
			}
		}
		in.num_edges = m;
		in.src = src;
		in.dst = dst;
		in.num_nodes = n;
		in.node_ids = ids;
		in.feat_dim = d;
		in.feat = feat;
		in.labels = ds.g.labels;
		in.split = ds.g.split;
		if (gnn_graph_build_region(&in, &region, &size, &g, &err) != GNN_OK)
		{
			fprintf(stderr, "build: %s\n", err.msg);
			return 1;
		}
		free(feat);
		free(src);
		free(dst);
		free(ids);
	}
	printf("# %s: %lld nodes, %lld arcs, %d-dim dense features, %d classes; %d epochs, best of %d\n", dir,
		   (long long) n, (long long) g.num_edges, d, g.num_classes, epochs, reps);
	for (int hi = 0; hi < 2; hi++)
		for (int nt = 1; nt <= 2; nt++)
		{
			int			hidden = hi == 0 ? 16 : 64;
			double		best = 1e30,
						agg = 0,
						dense = 0,
						fl,
						flb;
			gnn_train_result res;

			for (int r = 0; r < reps; r++)
			{
				gnn_train_config cfg;

				gnn_train_config_default(GNN_MODEL_GCN, &cfg);
				cfg.hidden = hidden;
				cfg.epochs = epochs;
				cfg.threads = nt;
				cfg.timing = true;
				cfg.patience = 0;
				cfg.row_normalise = true;
				cfg.seed = 1;
				if (gnn_train_full(&g, &cfg, NULL, NULL, NULL, NULL, NULL, NULL, &res, &err) != GNN_OK)
				{
					fprintf(stderr, "train: %s\n", err.msg);
					return 1;
				}
				if (res.seconds < best)
				{
					best = res.seconds;
					agg = res.agg_s;
					dense = res.dense_s;
				}
			}
			fl = floor_ms(nt, (int) n, d, hidden, g.num_classes, reps * epochs);
			{
				gnn_error	e2;

				gnn_backend_cpu_create(nt, &floor_be, &e2);
				flb = floor_ms(nt, (int) n, d, hidden, g.num_classes, reps * epochs);
				gnn_backend_destroy(floor_be);
				floor_be = NULL;
			}
			printf("GCN hidden %d, %d thread%s: %.2f ms per epoch (aggregation %.2f, dense products %.2f, other %.2f); "
				   "floor (the products alone) %.2f ms: %.2fx the floor (the same products through the backend's "
				   "blocked GEMM %.2f ms: %.2fx); test accuracy %.3f\n",
				   hidden, nt, nt > 1 ? "s" : "", 1e3 * best / epochs, 1e3 * agg / epochs, 1e3 * dense / epochs,
				   1e3 * (best - agg - dense) / epochs, fl, 1e3 * best / epochs / fl, flb,
				   1e3 * best / epochs / flb, res.best.test_acc);
		}
	free(region);
	gnn_dataset_free(&ds);
	return 0;
}
