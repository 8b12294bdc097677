/*
 * train_node2vec.h: node embeddings without labels or features, from random
 * walks (DeepWalk at p = q = 1, node2vec otherwise; Perozzi et al. 2014,
 * Grover & Leskovec 2016).
 *
 * Each epoch walks walks_per_node times from every node (gnn_random_walk,
 * along out-edges: load the graph undirected for the papers' setting), in
 * rounds over a seeded permutation of the nodes, and trains skip-gram with
 * negative sampling on the walks: every node of a walk is paired with the
 * `window` nodes that follow it, and each positive pair (u, v) with
 * `negatives` nodes drawn in proportion to their in-degree to the power
 * 0.75 (word2vec's unigram^0.75, the walk corpus's node frequencies being
 * the in-degrees'), the loss being
 *     -log sigmoid(e_u . e_v) - sum_n log sigmoid(-e_u . e_n).
 * One embedding table serves centres and contexts (as PyG's Node2Vec), so a
 * pair moves both of its rows.  Plain SGD, the learning rate falling
 * linearly from lr to lr * 1e-4 over the whole run (word2vec), walks spread
 * over the threads lock-free (Hogwild: rows shared by two threads may lose an
 * update, as word2vec's do).  With one thread a run is repeatable bit for
 * bit; with several the order of updates varies.
 */
#ifndef GNN_TRAIN_NODE2VEC_H
#define GNN_TRAIN_NODE2VEC_H

#include "train/train.h"

typedef struct gnn_node2vec_config
{
	int32_t		dim;			/* embedding width (128) */
	int32_t		walk_length;	/* steps per walk (20): walk_length + 1 nodes */
	int32_t		walks_per_node; /* per epoch (10) */
	int32_t		window;			/* nodes per context window, its first node the centre (10) */
	double		p;				/* return parameter (1) */
	double		q;				/* in-out parameter (1) */
	int32_t		negatives;		/* negatives per positive pair (1) */
	int32_t		epochs;			/* (5) */
	float		lr;				/* starting learning rate (0.025) */
	uint64_t	seed;
	int32_t		threads;		/* 0: all cores */
} gnn_node2vec_config;

typedef struct gnn_node2vec_result
{
	int32_t		epochs_run;
	double		loss;			/* mean loss per positive pair of the last epoch */
	int64_t		pairs;			/* positive pairs trained on, all epochs */
	int64_t		walks;
	double		seconds;
} gnn_node2vec_result;

void		gnn_node2vec_config_default(gnn_node2vec_config *c);
/* GNN_ERR_INVALID naming the field and its range. */
gnn_status	gnn_node2vec_config_check(const gnn_node2vec_config *c, gnn_error *err);

/*
 * Train on g into emb (num_nodes x dim, row v for node v; its contents are
 * replaced).  progress gets each epoch's mean loss (train_loss) and time;
 * should_stop is polled between chunks of walks (GNN_ERR_CANCELLED).  A node
 * that no walk reaches or leaves keeps its random starting row.
 */
gnn_status	gnn_node2vec_train(const gnn_graph *g, const gnn_node2vec_config *c,
							   gnn_progress_fn progress, void *progress_arg,
							   gnn_should_stop_fn should_stop, void *stop_arg,
							   float *emb, gnn_node2vec_result *res, gnn_error *err);

/* The positive and negative pairs' loss and gradient step of one pair, for tests. */
double		gnn_node2vec_pair_step(float *eu, float *ev, int32_t dim, float label, float lr);

#endif							/* GNN_TRAIN_NODE2VEC_H */
