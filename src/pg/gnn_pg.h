/*
 * gnn_pg.h: declarations shared by the PostgreSQL glue (src/pg).
 */
#ifndef GNN_PG_H
#define GNN_PG_H

#include "postgres.h"

#include "storage/dsm.h"
#include "storage/lwlock.h"
#include "utils/timestamp.h"

#include "graph.h"

#define GNN_GRAPH_NAME_LEN NAMEDATALEN

/* GUCs */
extern int	gnn_max_graph_memory_mb;
extern int	gnn_max_graphs;
extern int	gnn_threads;

/* one named graph in the registry */
typedef struct GnnGraphEntry
{
	bool		in_use;
	Oid			dbid;
	Oid			owner;
	char		name[GNN_GRAPH_NAME_LEN];
	dsm_handle	handle;
	uint64		bytes;
	uint64		generation;		/* changes on every load / replace */
	int64		nodes;
	int64		edges;
	int32		feat_dim;
	int32		feat_kind;
	int32		classes;
	int64		n_train;
	int64		n_val;
	int64		n_test;
	bool		undirected;
	TimestampTz loaded_at;
} GnnGraphEntry;

typedef struct GnnShared
{
	LWLock	   *lock;			/* protects everything below */
	uint64		graph_bytes;	/* registered + reserved graph memory */
	uint64		next_generation;
	int			max_graphs;
	GnnGraphEntry graphs[FLEXIBLE_ARRAY_MEMBER];
} GnnShared;

extern GnnShared *gnn_shared;

/* shmem.c */
extern void GnnShmemInit(void);
extern void GnnRequirePreload(void);

/* registry.c */
typedef struct GnnGraphRef
{
	dsm_segment *seg;
	gnn_graph	g;
	GnnGraphEntry entry;		/* a copy taken when attached */
} GnnGraphRef;

extern void GnnGraphAcquire(const char *name, GnnGraphRef *ref);
extern void GnnGraphRelease(GnnGraphRef *ref);
extern void GnnCheckGraphName(const char *name);
extern uint64 GnnGraphReserve(uint64 bytes, const char *name);
extern void GnnGraphUnreserve(uint64 bytes);
extern void GnnGraphRegister(const GnnGraphEntry *proto, dsm_segment *seg, bool replace,
							 uint64 reserved);
extern bool GnnGraphDrop(const char *name, bool if_exists);
extern bool GnnGraphExists(const char *name, Oid *owner);

/* load.c */
typedef struct GnnLoadArgs
{
	const char *name;
	Oid			edges;
	const char *src;
	const char *dst;
	Oid			nodes;			/* InvalidOid: none */
	const char *id;
	const char *features;
	const char *label;
	const char *split;
	const char *weight;
	bool		undirected;
	bool		replace;
	Oid			sparse;			/* InvalidOid: none */
	const char *sparse_id;
	const char *sparse_index;
	const char *sparse_value;
	bool		skip_dangling;
} GnnLoadArgs;

extern void GnnLoadGraph(const GnnLoadArgs *args, GnnGraphEntry *result);

/* helpers */
extern bool GnnIsOwnerOrSuper(Oid owner);

#endif							/* GNN_PG_H */
