/*
 * topk.h: the k nearest rows of an embedding table by cosine similarity
 * (gnn.similar over shared embeddings), in one parallel pass.
 */
#ifndef GNN_TOPK_H
#define GNN_TOPK_H

#include "base/gnn_core.h"

/*
 * The score gnn_topk_cosine ranks by: dot(a, b) / (na * nb), 0 when either
 * norm is 0.  The dot product sums in a fixed order (eight running sums),
 * so a score is the same float on every call and thread count.
 */
float		gnn_cosine(const float *a, const float *b, int32_t dim, float na, float nb);

/*
 * The k rows of emb (n x dim, row-major) most similar to row q by cosine
 * similarity (norms[i] = |emb_i|, precomputed; a zero norm scores 0),
 * excluding q itself, in one pass over emb split among nthreads threads
 * (OpenMP; <= 0: the OpenMP default), each keeping its own k best (a
 * bounded heap), merged at the end: no sort of all scores.  Results sorted
 * by score descending, ties by lower index; a NaN score (NaN in the
 * embeddings) ranks below every number.  Returns how many were written
 * (min(k, n - 1)), or -1 when an argument is out of range (n < 1, dim < 1,
 * q outside [0, n), k < 0) or memory ran out.
 */
int64_t		gnn_topk_cosine(const float *emb, const float *norms, int64_t n, int32_t dim, int64_t q,
							int32_t k, int nthreads, int64_t *out_idx, float *out_score);

/* bf16 copies of n floats (round to nearest): half the bytes for gnn_topk_cosine_bf16 to scan */
void		gnn_to_bf16(const float *x, int64_t n, uint16_t *out);

/*
 * gnn_topk_cosine's exact answer (same rows, same scores, same order), found
 * by scanning emb16 (emb as bf16) and re-scoring the few best candidates in
 * float: half the memory traffic.  The bf16 cosine is within 2^-8 of the
 * exact one; where that margin cannot separate the k-th best from the rows
 * left out, it scans emb exactly instead.
 */
int64_t		gnn_topk_cosine_bf16(const float *emb, const uint16_t *emb16, const float *norms, int64_t n,
								 int32_t dim, int64_t q, int32_t k, int nthreads, int64_t *out_idx,
								 float *out_score);

/*
 * Link scores: the dot product of two rows, summed as gnn_cosine sums (the
 * same float on every call), the score link prediction and node2vec train.
 */
float		gnn_dot(const float *a, const float *b, int32_t dim);

/*
 * The k rows of emb (n x dim) with the highest dot product with query (a
 * row of dim floats, anywhere), leaving out the rows in exclude[0..nexclude)
 * (ascending, distinct; indices into emb): gnn.recommend's ranking, in one
 * parallel pass, ordered as gnn_topk_cosine orders (score descending, ties
 * by lower index).  Returns how many were written (at most k), or -1 for an
 * argument out of range (exclude not ascending included) or no memory.
 */
int64_t		gnn_topk_dot(const float *query, const float *emb, int64_t n, int32_t dim, const int64_t *exclude,
						 int64_t nexclude, int32_t k, int nthreads, int64_t *out_idx, float *out_score);

#endif							/* GNN_TOPK_H */
