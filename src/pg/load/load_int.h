/*
 * load_int.h: what load.c shares with load_schema.c: table scans (direct heap
 * scans or SPI, with the caller's privileges), value conversion, growing
 * arrays and the region callback.
 */
#ifndef GNN_LOAD_INT_H
#define GNN_LOAD_INT_H

#include "common/gnn_pg.h"

#include "access/tableam.h"
#include "executor/tuptable.h"
#include "utils/portal.h"
#include "utils/rel.h"

#define GNN_SCAN_MAXCOLS 128
#define GNN_SPI_BATCH 20000

typedef struct GnnScan
{
	Oid			relid;
	const char *relname;		/* qualified, for messages */
	int			ncols;
	const char *colnames[GNN_SCAN_MAXCOLS];
	AttrNumber	attnums[GNN_SCAN_MAXCOLS];
	Oid			types[GNN_SCAN_MAXCOLS];
	int64		rowno;			/* rows returned so far */
	bool		use_spi;
	TimestampTz started;		/* progress (gnn.progress): when the scan began */
	TimestampTz next_report;	/* and when it next says how far it is */
	/*
	 * The caller's context, and one reset before every row: per-row work
	 * (detoasted arrays, label text) happens there.  SPI calls leave
	 * CurrentMemoryContext in SPI's procedure context, which SPI_finish
	 * frees: nothing that outlives the scan may be allocated there.
	 */
	MemoryContext callercxt;
	MemoryContext rowcxt;
	/* direct */
	Relation	rel;
	TableScanDesc scan;
	TupleTableSlot *slot;
	/* spi */
	Portal		portal;
	uint64		batch_pos;
	uint64		batch_n;
	Datum		values[GNN_SCAN_MAXCOLS];
	bool		nulls[GNN_SCAN_MAXCOLS];
} GnnScan;

extern const char *QualifiedRelName(Oid relid);
extern void ResolveColumn(GnnScan *s, int i, const char *col, const char *role, const Oid *accepted,
						  const char *accepted_desc);
extern void ScanBegin(GnnScan *s);
extern bool ScanNext(GnnScan *s, Datum *values, bool *nulls);
extern char *ScanRowDesc(GnnScan *s);
extern void ScanEnd(GnnScan *s);
extern int64 EstimateRows(Oid relid);

extern const Oid int_types[];
extern const Oid num_types[];
extern const Oid feat_types[];
extern const Oid label_types[];
extern const Oid text_types[];
extern int64 IntDatum(Datum d, Oid type);
extern double NumDatum(Datum d, Oid type);
extern char *TextDatum(Datum d, Oid type);
extern void NullError(GnnScan *s, int col);
extern int	GnnParseSplit(const char *t);
extern void CheckFloat(GnnScan *s, double v, const char *what, int64 id);

typedef struct GrowArray
{
	MemoryContext mcxt;			/* where the array lives: never a scan's or SPI's */
	char	   *data;
	Size		elem;
	int64		n;
	int64		cap;
} GrowArray;

extern void GrowInit(GrowArray *a, MemoryContext mcxt, Size elem, int64 cap);
extern void *GrowPush(GrowArray *a);

/*
 * palloc_extended for a load's large arrays (MCXT_ALLOC_HUGE implied): the
 * memory is advised for transparent huge pages (gnn_advise_huge) before it
 * is first written, MCXT_ALLOC_ZERO included.
 */
extern void *GnnAllocBig(Size size, int flags);

/* What the core's region callback needs, and what it leaves behind. */
typedef struct RegionRequest
{
	const char *name;
	MemoryContext mcxt;
	uint64		reserved;
	dsm_segment *seg;
	bool		top_owner;		/* map it for the whole transaction (published at commit) */
	ErrorData  *error;			/* an error raised inside the callback */
} RegionRequest;

extern void *RegionAlloc(void *arg, uint64_t bytes);

extern int	CompareStrings(const void *a, const void *b);	/* char * by strcmp */
#define GNN_FEATURES_MEMORY 0
#define GNN_FEATURES_DISK 1
#define GNN_FEATURES_AUTO 2
extern int	GnnParseFeatureStore(const char *s);

/* a fill callback's caught error, raised after the build (see load.c) */
extern gnn_status GnnFillCaught(MemoryContext mcxt, gnn_error *err);

extern void GnnBuildAndRegister(const char *name, bool replace, const gnn_graph_input *in,
								GnnGraphEntry *proto, int feature_store, const GnnFeatureSpill *spill,
								void (*report) (void *arg, const gnn_error *err), void *report_arg,
								MemoryContext ctx);

/* load_schema.c: node keys of any type as text, and text keys numbered in byte order */
extern char *GnnKeyText(Datum d, Oid type);
typedef struct GnnTextKeys GnnTextKeys;
extern GnnTextKeys *GnnTextKeysBuild(char **keys, int64 n, const char *column, const char *relname,
									 MemoryContext ctx);
extern int64 GnnTextKeysFind(GnnTextKeys *k, const char *key);
extern int64 GnnTextKeysCode(GnnTextKeys *k, int64 r);
extern int64 GnnTextKeysRow(GnnTextKeys *k, int64 code);

/* feat_cols.c: ordinary columns as features (both loaders) */
struct gnn_col_encoder;
typedef struct GnnFeatCol
{
	char	   *name;
	Oid			type;
	int			scan;			/* its column in the table's scan, -1 when skipped */
	int			kind;			/* gnn_enc_kind */
	struct gnn_col_encoder *enc;
	const char *skipped;		/* why it is not a feature, or NULL */
	bool		chosen;			/* named by the caller */
	char	   *keep;			/* the replaced graph's encoding (JSON) to encode with, or NULL */
	int32		offset;			/* within the table's slice */
	int32		width;
} GnnFeatCol;

typedef struct GnnFeatCols
{
	Oid			relid;
	const char *relname;		/* qualified, for messages */
	const char *leave_out;		/* a hint's start: how to leave a column out ("Exclude the column with ...") */
	const char *leave_out_lower;	/* the same within a sentence */
	const char *choose;			/* a hint: how to choose fewer columns */
	const char *refused_hint;	/* a hint: a key named as a feature */
	GnnFeatCol *cols;
	int			ncols;
	int32		width;			/* after GnnFeatColsFinish */
} GnnFeatCols;

/* a column of a replaced graph: how it was encoded */
typedef struct GnnOldCol
{
	char	   *type;
	char	   *column;
	char	   *encoding;
	char	   *detail;			/* the encoder's JSON, or the reason it was skipped */
} GnnOldCol;

extern char *GnnColumnList(Oid relid);
extern bool GnnColumnIsEncoded(Oid relid, const char *col);
extern AttrNumber GnnColumnOf(Oid relid, const char *relname, const char *col, const char *role);
extern int64 GnnTimeValue(Datum d, Oid type);
extern void GnnFeatColsPlan(GnnFeatCols *fc, List *chosen, bool explicit_list, List *excluded, List *refused,
							List *refused_why, List *quiet);
extern void GnnFeatColsScan(GnnFeatCols *fc, GnnScan *s, int32 max_categories);
extern void GnnFeatColsFeed(GnnFeatCols *fc, GnnScan *s, const Datum *v, const bool *nl);
extern int32 GnnFeatColsFinish(GnnFeatCols *fc, int32 max_categories);
extern struct gnn_col_encoder **GnnFeatColsEncoders(GnnFeatCols *fc, int *n);
extern void GnnFeatColsDescribe(GnnFeatCols *fc, StringInfo meta, int32 base);
extern void GnnJsonKey(StringInfo b, const char *key, const char *val);
extern List *GnnOldColumns(const char *graph);
extern bool GnnKeepEncodings(const char *graph, GnnFeatCols *const *fcs, const char *const *names, int ntypes);

#endif							/* GNN_LOAD_INT_H */
