/*
 * partition.h: splitting a graph's nodes into parts.
 *
 * Methods:
 *  - METIS k-way (METIS_PartGraphKway) on the symmetrised graph (out- and
 *    in-neighbours merged, self loops dropped: METIS wants an undirected
 *    graph without loops), with one vertex-weight constraint per balance
 *    criterion so every part gets its share of nodes, training nodes and
 *    edges (degree as the proxy).  Objective: edge cut or communication
 *    volume.  A memory estimate is checked against a limit before METIS runs.
 *  - streaming: one pass over the nodes in storage order, Fennel's objective
 *    (neighbours already in a part minus a size penalty) with hard capacities
 *    per balance criterion; O(n k + m) time, O(n + k) extra memory.
 *  - random: uniform, the baseline.
 *
 * Statistics count directed arcs as stored (graph.h): a part's edges are the
 * arcs leaving its nodes, its cut the ones of those ending in another part,
 * its halo the distinct nodes of other parts adjacent (either direction) to
 * its nodes.
 */
#ifndef GNN_PARTITION_H
#define GNN_PARTITION_H

#include "graph/graph.h"

typedef enum gnn_part_method
{
	GNN_PART_METIS = 0,
	GNN_PART_STREAMING = 1,
	GNN_PART_RANDOM = 2
} gnn_part_method;

typedef enum gnn_part_objective
{
	GNN_PART_CUT = 0,			/* minimise edges cut */
	GNN_PART_VOLUME = 1			/* minimise total communication volume */
} gnn_part_objective;

/* balance constraints, a bit set */
#define GNN_BAL_NODES 0x1u
#define GNN_BAL_TRAIN 0x2u
#define GNN_BAL_EDGES 0x4u		/* degree as a proxy for edges */
#define GNN_BAL_COUNT 3

typedef struct gnn_partition_config
{
	int32_t		parts;			/* >= 2, <= nodes */
	gnn_part_method method;
	gnn_part_objective objective;
	uint32_t	balance;		/* GNN_BAL_* bits; 0 = nodes */
	float		imbalance;		/* allowed max/mean - 1 per constraint, 0.03 default */
	uint64_t	seed;
	uint64_t	memory_limit;	/* bytes METIS may use (estimate); 0 = no limit */
} gnn_partition_config;

void		gnn_partition_config_default(gnn_partition_config *cfg);
/* "metis", "streaming", "random"; "cut", "volume"; "nodes", "train", "edges" */
bool		gnn_parse_part_method(const char *s, gnn_part_method *out);
bool		gnn_parse_part_objective(const char *s, gnn_part_objective *out);
bool		gnn_parse_part_balance(const char *s, uint32_t *bit);
const char *gnn_part_method_name(gnn_part_method m);
const char *gnn_part_balance_name(int i);	/* bit index i */

/* Bytes METIS is estimated to need for g with these constraints. */
uint64_t	gnn_partition_metis_memory(const gnn_graph *g, int32_t parts, uint32_t balance);

/*
 * Assign part[v] in [0, parts) for every node.  Errors: GNN_ERR_INVALID
 * (parts out of range, unknown method), GNN_ERR_EMPTY (balancing on training
 * nodes of a graph without any), GNN_ERR_LIMIT (the METIS memory estimate
 * exceeds cfg->memory_limit; err->id holds the estimate in bytes).
 * seconds (optional) gets the wall time.
 */
gnn_status	gnn_partition_compute(const gnn_graph *g, const gnn_partition_config *cfg,
								  int32_t *part, double *seconds, gnn_error *err);

typedef struct gnn_part_info
{
	int64_t		nodes;
	int64_t		edges;			/* arcs leaving the part's nodes */
	int64_t		train;
	int64_t		cut;			/* of those, arcs into another part */
	int64_t		halo;			/* distinct remote neighbours */
	int64_t		degree;			/* sum of symmetric degrees (edge constraint) */
} gnn_part_info;

typedef struct gnn_part_stats
{
	int32_t		parts;
	gnn_part_info *part;		/* [parts], malloc'd */
	int64_t		edges;			/* all arcs (self loops excluded) */
	int64_t		cut;
	double		cut_fraction;	/* cut / edges */
	double		balance[GNN_BAL_COUNT]; /* max/mean of nodes, train, degree */
	int64_t		halo;			/* sum over parts */
} gnn_part_stats;

gnn_status	gnn_part_stats_compute(const gnn_graph *g, const int32_t *part, int32_t parts,
								gnn_part_stats *st, gnn_error *err);
void		gnn_part_stats_free(gnn_part_stats *st);

/* Symmetric adjacency without self loops (out ∪ in), int64 offsets. */
gnn_status	gnn_graph_symmetrise(const gnn_graph *g, int64_t **xadj, int32_t **adj, gnn_error *err);

#endif							/* GNN_PARTITION_H */
