/*
 * dataset.h: load a benchmark dataset directory (../shared/data/<name>:
 * nodes.csv, edges.csv, features_coo.csv or features.csv) into a graph.
 *
 * Policy (the usual GCN graph, = PyG's Planetoid edge_index):
 *  - edges are made undirected (each citation also gives its reverse arc);
 *  - self loops in edges.csv are dropped (citeseer has 124): the models add
 *    exactly one self loop per node themselves where they need one;
 *  - duplicate arcs (reciprocal citations) are merged by gnn_graph_build;
 *  - a blank label is -1 (citeseer's 15 content-less nodes); split "train",
 *    "val", "test" or blank;
 *  - features: features_coo.csv as sparse CSR when present (dimension = the
 *    largest index + 1), else features.csv as dense, else none (pubmed).
 */
#ifndef GNN_DATASET_H
#define GNN_DATASET_H

#include "graph/graph.h"

typedef struct gnn_dataset
{
	void	   *region;			/* malloc'd graph region */
	uint64_t	size;
	gnn_graph	g;				/* view of region */
	int64_t		self_loops_dropped;
	int64_t		edge_rows;		/* rows read from edges.csv */
} gnn_dataset;

gnn_status	gnn_dataset_load(const char *dir, int nthreads, gnn_dataset *out, gnn_error *err);
void		gnn_dataset_free(gnn_dataset *ds);

#endif							/* GNN_DATASET_H */
