/*
 * test_gemm_dropout: the backend's gemm_dropout (a product with dropout
 * applied to A on the fly, used for a first layer's dense input) against
 * dropout_forward followed by gemm: the same bits for D B, the same within
 * 1e-5 of the largest magnitude for the weight gradient D^T B (summed in
 * another order), and the same bits on 1 and 2 threads; shapes split by
 * rows and by columns, rows beyond one block, a stride wider than the row
 * (the mask follows the storage index), beta != 0; p = 0 is a plain product;
 * bad p and a stride narrower than the row are errors.
 */
#include "check.h"
#include "nn/backend.h"

#include <stdlib.h>
#include <string.h>

static float
val(int64_t i, int mod)
{
	return (float) ((i * 37 + 11) % mod) / (float) mod - 0.5f;
}

#include <math.h>

/* one case: op(D)[m x k] * B[k x n], A stored ar x lda; the fused result in out */
static void
one_case(gnn_backend *be, bool trans_a, int64_t m, int64_t n, int64_t k, int64_t pad, float p, float beta,
		 float *out)
{
	int64_t		ar = trans_a ? k : m,
				ac = trans_a ? m : k,
				lda = ac + pad;
	float	   *A = malloc(sizeof(float) * ar * lda),
			   *D = malloc(sizeof(float) * ar * lda),
			   *B = malloc(sizeof(float) * k * n),
			   *C1 = malloc(sizeof(float) * m * n),
			   *C2 = malloc(sizeof(float) * m * n);
	uint64_t	seed = 0x9e3779b97f4a7c15ULL ^ (uint64_t) (m * 131 + n * 7 + k);
	gnn_status	s1,
				s2;

	for (int64_t i = 0; i < ar * lda; i++)
		A[i] = val(i, 101);
	for (int64_t i = 0; i < k * n; i++)
		B[i] = val(i, 89);
	for (int64_t i = 0; i < m * n; i++)
		C1[i] = C2[i] = val(i, 53);
	/* the reference: the dropped copy of the whole stored matrix, then gemm */
	s1 = gnn_backend_dropout_forward(be, A, D, ar * lda, p, seed);
	if (s1 == GNN_OK)
		s1 = gnn_backend_gemm(be, trans_a, false, m, n, k, 1.0f, D, lda, B, n, beta, C1, n);
	s2 = gnn_backend_gemm_dropout(be, trans_a, m, n, k, 1.0f, A, lda, p, seed, B, n, beta, C2, n);
	if (!trans_a)
		CHECK(s1 == GNN_OK && s2 == GNN_OK && memcmp(C1, C2, sizeof(float) * m * n) == 0,
			  "%s, D B: %lld x %lld x %lld, lda pad %lld, p %.2f, beta %.1f: the bits of dropout then gemm",
			  be->name, (long long) m, (long long) n, (long long) k, (long long) pad, p, beta);
	else
	{
		double		big = 0,
					diff = 0;

		for (int64_t i = 0; i < m * n; i++)
		{
			big = fmax(big, fabs(C1[i]));
			diff = fmax(diff, fabs(C1[i] - C2[i]));
		}
		CHECK(s1 == GNN_OK && s2 == GNN_OK && diff <= 1e-5 * big && big > 0,
			  "%s, D^T B: %lld x %lld x %lld, lda pad %lld, p %.2f, beta %.1f: dropout then gemm "
			  "within %.1g of %.3g", be->name, (long long) m, (long long) n, (long long) k,
			  (long long) pad, p, beta, diff, big);
	}
	memcpy(out, C2, sizeof(float) * m * n);
	free(A);
	free(D);
	free(B);
	free(C1);
	free(C2);
}

int
main(void)
{
	gnn_backend *be[2];
	gnn_error	err;
	int			nt[2] = {1, 2};

	for (int t = 0; t < 2; t++)
	{
		if (gnn_backend_create("cpu", nt[t], NULL, &be[t], &err) != GNN_OK)
		{
			CHECK(0, "backend: %s", err.msg);
			return check_done();
		}
		snprintf(be[t]->name, sizeof(be[t]->name), "cpu, %d thread%s", nt[t], nt[t] > 1 ? "s" : "");
	}
	{
		/* m, n, k, trans_a, stride pad, p, beta */
		static const struct
		{
			int			m,
						n,
						k;
			bool		ta;
			int			pad;
			float		p,
						beta;
		}			cs[] = {
			/* the first layer of dense Cora: 2708 x 1433 features, hidden 16 */
			{2708, 16, 1433, false, 0, 0.5f, 0.0f}, {1433, 16, 2708, true, 0, 0.5f, 0.0f},
			/* ragged last blocks, a wider stride, beta */
			{1000, 40, 300, false, 5, 0.3f, 0.5f}, {300, 40, 1000, true, 3, 0.6f, 1.0f},
			/* fewer rows than one block of D^T B; small (one serial call) */
			{64, 8, 100, true, 1, 0.5f, 0.0f}, {17, 9, 13, false, 0, 0.5f, 0.0f},
			/* wide: split by columns, D written whole */
			{100, 700, 120, false, 2, 0.5f, 0.0f}, {100, 700, 120, true, 2, 0.5f, 0.0f},
			/* p = 0 is the plain product */
			{500, 32, 200, false, 0, 0.0f, 0.0f}, {200, 32, 500, true, 0, 0.0f, 0.0f},
		};

		for (size_t c = 0; c < sizeof(cs) / sizeof(cs[0]); c++)
		{
			float	   *o[2];

			for (int t = 0; t < 2; t++)
			{
				o[t] = malloc(sizeof(float) * cs[c].m * cs[c].n);
				one_case(be[t], cs[c].ta, cs[c].m, cs[c].n, cs[c].k, cs[c].pad, cs[c].p, cs[c].beta, o[t]);
			}
			CHECK(memcmp(o[0], o[1], sizeof(float) * cs[c].m * cs[c].n) == 0,
				  "%s %d x %d x %d: the same bits on 1 and 2 threads", cs[c].ta ? "D^T B" : "D B",
				  cs[c].m, cs[c].n, cs[c].k);
			free(o[0]);
			free(o[1]);
		}
	}
	{
		float		a[4] = {1, 2, 3, 4},
					b[4] = {1, 0, 0, 1},
					c[4];

		CHECK(gnn_backend_gemm_dropout(be[0], false, 2, 2, 2, 1.0f, a, 2, 1.0f, 1, b, 2, 0.0f, c, 2) ==
			  GNN_ERR_INVALID, "p = 1 is GNN_ERR_INVALID: %s", be[0]->err.msg);
		CHECK(gnn_backend_gemm_dropout(be[0], false, 2, 2, 2, 1.0f, a, 1, 0.5f, 1, b, 2, 0.0f, c, 2) ==
			  GNN_ERR_DIMENSION, "a stride narrower than a row is GNN_ERR_DIMENSION: %s", be[0]->err.msg);
		CHECK(gnn_backend_gemm_dropout(be[0], false, 2, 2, 0, 1.0f, a, 2, 0.5f, 1, b, 2, 0.0f, c, 2) == GNN_OK &&
			  c[0] == 0.0f && c[3] == 0.0f, "k = 0 gives zeros");
	}
	gnn_backend_destroy(be[0]);
	gnn_backend_destroy(be[1]);
	return check_done();
}
