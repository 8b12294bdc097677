/*
 * load_schema.c: a relational schema as one typed graph.
 *
 * Every listed table is a node type (its rows the nodes, its single-column
 * primary key, or a unique column named in options.keys, the node key);
 * every single-column foreign key between two listed tables (or an edge
 * declared in options.edges) is a relation from the referencing table to the
 * referenced one, and its reverse is another, so every type receives
 * messages.  Ordinary columns become features through the core's column
 * encoders (encode.h), laid out block-diagonally: node type t owns the
 * feature columns [feature_offset_t, feature_offset_t + width_t), with a
 * constant-1 column per type, so one input weight matrix is a per-type
 * projection with a per-type bias.  A type without a feature column gets a
 * one-hot column per node instead: a learned embedding per node.
 *
 * Keys of any supported type map to dense indices: within a type, nodes are
 * numbered in ascending key order (integers numerically, text and uuid by
 * bytes), types one after another in the order listed.  Text and uuid keys
 * are kept with the graph as text; integer keys as int64.  What was loaded
 * and how it was encoded is kept with the graph as JSON (gnn._graph_meta,
 * gnn.graph_types, gnn.graph_columns).
 *
 * Each table is read once, as the calling role (load.c's scans), under the
 * statement's snapshot.
 */
#include "common/gnn_pg.h"
#include "load/load_int.h"

#include <math.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/date.h"
#include "utils/json.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"
#include "utils/uuid.h"
#include "portability/instr_time.h"

#include "graph/encode.h"

PG_FUNCTION_INFO_V1(gnn_load_schema_graph);

/* Phases of a load at DEBUG1: where the time goes. */
static instr_time phase_start;

static void
Phase(const char *what)
{
	instr_time	now;

	INSTR_TIME_SET_CURRENT(now);
	if (!INSTR_TIME_IS_ZERO(phase_start))
	{
		instr_time	d = now;

		INSTR_TIME_SUBTRACT(d, phase_start);
		elog(DEBUG1, "gnn.load_schema_graph: %s took %.3f s", what, INSTR_TIME_GET_DOUBLE(d));
	}
	phase_start = now;
}

typedef enum KeyKind
{
	KEY_INT,
	KEY_TEXT,
	KEY_UUID					/* 16 bytes, compared as two big-endian words */
} KeyKind;

/* a uuid as two words whose numeric order is the uuid's byte (and text) order */
typedef struct U128
{
	uint64		hi;
	uint64		lo;
} U128;

static inline U128
UuidWords(Datum d)
{
	const unsigned char *b = DatumGetUUIDP(d)->data;
	U128		u = {0, 0};

	for (int i = 0; i < 8; i++)
	{
		u.hi = (u.hi << 8) | b[i];
		u.lo = (u.lo << 8) | b[i + 8];
	}
	return u;
}

static inline int
U128Cmp(U128 a, U128 b)
{
	if (a.hi != b.hi)
		return a.hi < b.hi ? -1 : 1;
	return a.lo < b.lo ? -1 : a.lo > b.lo;
}

/* the uuid's text form (36 characters and a NUL) into out */
static void
UuidFormat(U128 u, char *out)
{
	static const char hex[] = "0123456789abcdef";
	char	   *p = out;

	for (int i = 0; i < 16; i++)
	{
		unsigned	byte = (unsigned) ((i < 8 ? u.hi >> (56 - 8 * i) : u.lo >> (56 - 8 * (i - 8))) & 0xff);

		if (i == 4 || i == 6 || i == 8 || i == 10)
			*p++ = '-';
		*p++ = hex[byte >> 4];
		*p++ = hex[byte & 15];
	}
	*p = '\0';
}

static char *
UuidText(U128 u)
{
	char	   *s = palloc(37);

	UuidFormat(u, s);
	return s;
}


/* an outgoing edge: a foreign key (or a declared one) of this table */
typedef struct SchemaFk
{
	char	   *column;
	char	   *conname;		/* NULL when declared in options.edges */
	int			to;				/* referenced type */
	int			scan;
	Oid			type;
	int32		rel_fwd;		/* relation ids */
	int32		rel_rev;
	/* per scanned row: the referenced key (NULL: no edge) */
	GrowArray	ivals;			/* int64 */
	GrowArray	tvals;			/* char * */
	GrowArray	uvals;			/* U128 */
	GrowArray	nulls;			/* bool */
} SchemaFk;

/* a slot of a type's key hash: the integer key (or a text key's hash) and its sorted position, -1 = empty */
typedef struct KeySlot
{
	int64		key;
	int64		pos;
} KeySlot;

typedef struct SchemaType
{
	Oid			relid;
	char	   *relname;		/* qualified, for messages */
	char	   *name;			/* the type's name */
	char	   *key;
	Oid			key_type;
	KeyKind		kk;
	char	   *time_col;
	Oid			time_type;
	int			time_scan;
	GnnFeatCols fc;				/* its feature columns (feat_cols.c) */
	SchemaFk   *fks;
	int			nfks;
	bool		is_target;
	int			label_scan;
	int			split_scan;
	/* read */
	int64		n;
	GrowArray	ikeys;			/* int64, scan order */
	GrowArray	tkeys;			/* char *, scan order */
	GrowArray	ukeys;			/* U128, scan order */
	GrowArray	times;			/* int64 */
	GrowArray	seed_times;		/* int64 (target type, options.seed_time) */
	int			seed_time_scan;
	GrowArray	labels;			/* char * (target type) */
	GrowArray	splits;			/* uint8 (target type) */
	int			part_scan;		/* options.part_column, or -1 */
	GrowArray	parts;			/* int32, scan order (options.part_column) */
	/* ordered */
	int64	   *perm;			/* sorted position -> scan row (NULL: the identity) */
	int64	   *rank;			/* scan row -> sorted position (NULL: the identity) */
	int64		offset;			/* first global index */
	/* key -> sorted position: open addressing (KeyIndex) */
	struct KeySlot *kh;
	struct UuidSlot *uh;		/* uuid keys */
	uint64		kh_mask;
	int32		feat_offset;
	int32		feat_width;
	bool		embedding;		/* one-hot per node: no feature column */
} SchemaType;

/* a table stored in key order needs no permutation (a serial key): NULL */
#define PERM(t, i) ((t)->perm ? (t)->perm[i] : (int64) (i))
#define RANK(t, r) ((t)->rank ? (t)->rank[r] : (int64) (r))

typedef struct SchemaLoad
{
	const char *name;
	SchemaType *types;
	int			ntypes;
	int			nrels;
	Oid			target_rel;
	int			target;			/* type index or -1 */
	const char *label;
	const char *split;
	Oid			label_type;
	bool		regression;
	bool		bool_label;
	int32		max_categories;
	bool		skip_dangling;
	/* one part of a partitioned graph (options.part_column / part); NULL: the whole graph */
	const char *part_column;
	int32		halo_hops;		/* options.halo_hops: its halo's depth (KeepSchemaPart) */
	int32		part;
	int			persist;		/* options.persist: 1, 0, -1 = gnn.persist_graphs */
	int			feature_store;	/* options.feature_store: GNN_FEATURES_* */
	const char *seed_time;		/* options.seed_time: a time column of the target */
	bool		refit;			/* options.encodings = 'refit' */
	bool		kept;			/* the encodings are the replaced graph's */
	Jsonb	   *options;
} SchemaLoad;

/* ------------------------------------------------------------------ jsonb options */

static JsonbValue *
JGet(JsonbContainer *c, const char *key)
{
	JsonbValue	tmp;

	if (c == NULL || !JsonContainerIsObject(c))
		return NULL;
	return getKeyJsonValueFromContainer(c, key, strlen(key), &tmp) ? memcpy(palloc(sizeof(JsonbValue)),
																			  getKeyJsonValueFromContainer(c, key, strlen(key), &tmp),
																			  sizeof(JsonbValue)) : NULL;
}

static JsonbContainer *
JObject(JsonbValue *v, const char *what)
{
	if (v == NULL)
		return NULL;
	if (v->type != jbvBinary || !JsonContainerIsObject(v->val.binary.data))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("option \"%s\" must be a JSON object", what)));
	return v->val.binary.data;
}

static char *
JString(JsonbValue *v, const char *what)
{
	if (v == NULL)
		return NULL;
	if (v->type != jbvString)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("option \"%s\" must be a string", what)));
	return pnstrdup(v->val.string.val, v->val.string.len);
}

/* Elements of an array option (or of a single string given instead). */
static List *
JStrings(JsonbValue *v, const char *what)
{
	List	   *out = NIL;
	JsonbIterator *it;
	JsonbValue	e;
	JsonbIteratorToken tok;

	if (v == NULL)
		return NIL;
	if (v->type == jbvString)
		return list_make1(JString(v, what));
	if (v->type != jbvBinary || !JsonContainerIsArray(v->val.binary.data))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("option \"%s\" must be an array of column names", what)));
	it = JsonbIteratorInit(v->val.binary.data);
	while ((tok = JsonbIteratorNext(&it, &e, true)) != WJB_DONE)
		if (tok == WJB_ELEM)
			out = lappend(out, JString(&e, what));
	return out;
}

/* The keys of an object option. */
static List *
JKeys(JsonbContainer *c)
{
	List	   *out = NIL;
	JsonbIterator *it;
	JsonbValue	e;
	JsonbIteratorToken tok;

	if (c == NULL)
		return NIL;
	it = JsonbIteratorInit(c);
	while ((tok = JsonbIteratorNext(&it, &e, true)) != WJB_DONE)
		if (tok == WJB_KEY)
			out = lappend(out, pnstrdup(e.val.string.val, e.val.string.len));
	return out;
}

/* ------------------------------------------------------------------ names */

static int
TypeByName(SchemaLoad *L, const char *name)
{
	for (int t = 0; t < L->ntypes; t++)
		if (strcmp(L->types[t].name, name) == 0 || strcmp(L->types[t].relname, name) == 0)
			return t;
	return -1;
}

static char *
TypeList(SchemaLoad *L)
{
	StringInfoData b;

	initStringInfo(&b);
	for (int t = 0; t < L->ntypes; t++)
		appendStringInfo(&b, "%s%s", t ? ", " : "", L->types[t].name);
	return b.data;
}

/* The attribute number of column col of t (an error listing the columns when missing). */
static AttrNumber
ColumnOf(SchemaType *t, const char *col, const char *role)
{
	return GnnColumnOf(t->relid, t->relname, col, role);
}

static bool
IsKeyType(Oid type, KeyKind *kk)
{
	switch (type)
	{
		case INT2OID:
		case INT4OID:
		case INT8OID:
			*kk = KEY_INT;
			return true;
		case TEXTOID:
		case VARCHAROID:
		case BPCHAROID:
			*kk = KEY_TEXT;
			return true;
		case UUIDOID:
			*kk = KEY_UUID;
			return true;
		default:
			return false;
	}
}

static bool
IsEnum(Oid type)
{
	return type_is_enum(type);
}

/* ------------------------------------------------------------------ catalog */

typedef struct ConInfo
{
	char	   *conname;
	char		contype;
	Oid			conrelid;
	Oid			confrelid;
	int			nkeys;
	char	   *col;
	char	   *refcol;
} ConInfo;

/* Primary keys, unique constraints and foreign keys of the listed tables. */
static List *
ReadConstraints(Oid *rels, int n, MemoryContext ctx)
{
	List	   *out = NIL;
	Datum	   *d = palloc(sizeof(Datum) * n);
	ArrayType  *arr;

	for (int i = 0; i < n; i++)
		d[i] = ObjectIdGetDatum(rels[i]);
	arr = construct_array(d, n, OIDOID, sizeof(Oid), true, TYPALIGN_INT);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (SPI_execute_with_args(
							  "SELECT c.conname::text, c.contype::text, c.conrelid, c.confrelid, "
							  "       cardinality(c.conkey), "
							  "       (SELECT a.attname::text FROM pg_catalog.pg_attribute a "
							  "         WHERE a.attrelid = c.conrelid AND a.attnum = c.conkey[1]), "
							  "       (SELECT a.attname::text FROM pg_catalog.pg_attribute a "
							  "         WHERE a.attrelid = c.confrelid AND a.attnum = c.confkey[1]) "
							  "  FROM pg_catalog.pg_constraint c "
							  " WHERE c.conrelid = ANY ($1) AND c.contype IN ('p', 'u', 'f') "
							  " ORDER BY c.conrelid, c.contype, c.conname",
							  1, (Oid[]) {OIDARRAYOID}, (Datum[]) {PointerGetDatum(arr)}, NULL, true, 0) != SPI_OK_SELECT)
		elog(ERROR, "reading pg_constraint failed");
	for (uint64 r = 0; r < SPI_processed; r++)
	{
		HeapTuple	tup = SPI_tuptable->vals[r];
		TupleDesc	td = SPI_tuptable->tupdesc;
		MemoryContext old = MemoryContextSwitchTo(ctx);
		ConInfo    *ci = palloc0(sizeof(ConInfo));
		bool		isnull;
		char	   *s;

		ci->conname = SPI_getvalue(tup, td, 1);
		s = SPI_getvalue(tup, td, 2);
		ci->contype = s[0];
		ci->conrelid = DatumGetObjectId(SPI_getbinval(tup, td, 3, &isnull));
		ci->confrelid = DatumGetObjectId(SPI_getbinval(tup, td, 4, &isnull));
		ci->nkeys = DatumGetInt32(SPI_getbinval(tup, td, 5, &isnull));
		ci->col = SPI_getvalue(tup, td, 6);
		ci->refcol = SPI_getvalue(tup, td, 7);
		out = lappend(out, ci);
		MemoryContextSwitchTo(old);
	}
	SPI_finish();
	return out;
}

/* ------------------------------------------------------------------ key ordering */

static SchemaType *sort_type;

static int
CmpIntRows(const void *a, const void *b)
{
	int64		x = ((int64 *) sort_type->ikeys.data)[*(const int64 *) a];
	int64		y = ((int64 *) sort_type->ikeys.data)[*(const int64 *) b];

	return x < y ? -1 : x > y;
}

static int
CmpTextRows(const void *a, const void *b)
{
	return strcmp(((char **) sort_type->tkeys.data)[*(const int64 *) a],
				  ((char **) sort_type->tkeys.data)[*(const int64 *) b]);
}

typedef struct UuidRow
{
	U128		key;
	int64		row;
} UuidRow;

static int
CmpUuidRows(const void *a, const void *b)
{
	return U128Cmp(((const UuidRow *) a)->key, ((const UuidRow *) b)->key);
}

/* The key of scan row `row` of t as text, for messages. */
static char *
RowKeyText(SchemaType *t, int64 row)
{
	switch (t->kk)
	{
		case KEY_INT:
			return psprintf(INT64_FORMAT, ((int64 *) t->ikeys.data)[row]);
		case KEY_UUID:
			return UuidText(((U128 *) t->ukeys.data)[row]);
		default:
			return ((char **) t->tkeys.data)[row];
	}
}

/*
 * Number a uuid-keyed type's nodes: the keys sorted as 16-byte values
 * (their text order too), next to their rows for locality.
 */
static void
OrderUuidKeys(SchemaType *t)
{
	const U128 *k = (const U128 *) t->ukeys.data;
	bool		sorted = true;

	for (int64 i = 1; i < t->n && sorted; i++)
		sorted = U128Cmp(k[i - 1], k[i]) < 0;
	if (sorted)
		return;					/* perm and rank: the identity */
	t->perm = GnnAllocBig(sizeof(int64) * Max(t->n, 1), MCXT_ALLOC_HUGE);
	t->rank = GnnAllocBig(sizeof(int64) * Max(t->n, 1), MCXT_ALLOC_HUGE);
	{
		UuidRow    *r = GnnAllocBig(sizeof(UuidRow) * t->n, MCXT_ALLOC_HUGE);

		for (int64 i = 0; i < t->n; i++)
		{
			r[i].key = k[i];
			r[i].row = i;
		}
		qsort(r, t->n, sizeof(UuidRow), CmpUuidRows);
		for (int64 i = 0; i < t->n; i++)
		{
			if (i > 0 && U128Cmp(r[i - 1].key, r[i].key) == 0)
				ereport(ERROR,
						(errcode(ERRCODE_UNIQUE_VIOLATION),
						 errmsg("key %s appears twice in column \"%s\" of %s", UuidText(r[i].key), t->key, t->relname),
						 errhint("A node key must be unique: use the primary key, or name a unique column in options.keys.")));
			t->perm[i] = r[i].row;
			t->rank[r[i].row] = i;
		}
		pfree(r);
	}
}

/* Number t's nodes in key order; a repeated key is an error naming it. */
static void
OrderKeys(SchemaType *t)
{
	bool		sorted = true;

	t->perm = t->rank = NULL;
	if (t->kk == KEY_UUID)
	{
		OrderUuidKeys(t);
		return;
	}

	sort_type = t;
	/* tables are often stored in key order (serial keys): then no sort */
	if (t->kk == KEY_INT)
		for (int64 i = 1; i < t->n && sorted; i++)
			sorted = ((int64 *) t->ikeys.data)[i - 1] < ((int64 *) t->ikeys.data)[i];
	else
		for (int64 i = 1; i < t->n && sorted; i++)
			sorted = strcmp(((char **) t->tkeys.data)[i - 1], ((char **) t->tkeys.data)[i]) < 0;
	if (sorted)
		return;					/* strictly ascending: no repeats, perm and rank the identity */
	t->perm = GnnAllocBig(sizeof(int64) * Max(t->n, 1), MCXT_ALLOC_HUGE);
	t->rank = GnnAllocBig(sizeof(int64) * Max(t->n, 1), MCXT_ALLOC_HUGE);
	for (int64 i = 0; i < t->n; i++)
		t->perm[i] = i;
	qsort(t->perm, t->n, sizeof(int64), t->kk == KEY_INT ? CmpIntRows : CmpTextRows);
	for (int64 i = 0; i < t->n; i++)
	{
		t->rank[t->perm[i]] = i;
		if (i > 0 && (t->kk == KEY_INT ? CmpIntRows(&t->perm[i - 1], &t->perm[i]) :
					  CmpTextRows(&t->perm[i - 1], &t->perm[i])) == 0)
		{
			char	   *k = t->kk == KEY_INT ? psprintf(INT64_FORMAT, ((int64 *) t->ikeys.data)[t->perm[i]]) :
				((char **) t->tkeys.data)[t->perm[i]];

			ereport(ERROR,
					(errcode(ERRCODE_UNIQUE_VIOLATION),
					 errmsg("key %s appears twice in column \"%s\" of %s", k, t->key, t->relname),
					 errhint("A node key must be unique: use the primary key, or name a unique column in options.keys.")));
		}
	}
}

static inline uint64
TextHash(const char *s)
{
	return gnn_hash_bytes(s, strlen(s));
}

/*
 * A hash of t's keys, so that resolving a foreign key costs one probe rather
 * than a binary search of string comparisons (10M reviews x 2 keys).  A slot
 * holds the key itself (text: its 64-bit hash), so a probe touches one cache
 * line, and a text key is compared only when its hash matches.
 */
typedef struct UuidSlot
{
	U128		key;
	int64		pos;			/* -1 = empty */
} UuidSlot;

static inline uint64
UuidHash(U128 u)
{
	return gnn_mix64(u.hi ^ gnn_mix64(u.lo));
}

static void
KeyIndex(SchemaType *t)
{
	uint64		size = 16;

	while (size < (uint64) t->n * 2)
		size <<= 1;
	if (t->kk == KEY_UUID)
	{
		const U128 *k = (const U128 *) t->ukeys.data;

		t->uh = GnnAllocBig(sizeof(UuidSlot) * size, MCXT_ALLOC_HUGE);
		for (uint64 i = 0; i < size; i++)
			t->uh[i].pos = -1;
		t->kh_mask = size - 1;
		for (int64 i = 0; i < t->n; i++)
		{
			U128		u = k[PERM(t, i)];
			uint64		h = UuidHash(u);

			while (t->uh[h & t->kh_mask].pos >= 0)
				h++;
			t->uh[h & t->kh_mask].key = u;
			t->uh[h & t->kh_mask].pos = i;
		}
		return;
	}
	t->kh = GnnAllocBig(sizeof(KeySlot) * size, MCXT_ALLOC_HUGE);
	for (uint64 i = 0; i < size; i++)
		t->kh[i].pos = -1;
	t->kh_mask = size - 1;
	for (int64 i = 0; i < t->n; i++)
	{
		int64		row = PERM(t, i);
		int64		k = t->kk == KEY_INT ? ((int64 *) t->ikeys.data)[row] :
			(int64) TextHash(((char **) t->tkeys.data)[row]);
		uint64		h = t->kk == KEY_INT ? gnn_mix64((uint64) k) : (uint64) k;

		while (t->kh[h & t->kh_mask].pos >= 0)
			h++;
		t->kh[h & t->kh_mask].key = k;
		t->kh[h & t->kh_mask].pos = i;
	}
}

/* Global index of the node of integer-keyed type t with key ikey, or -1. */
static inline int64
FindIntKey(SchemaType *t, int64 ikey)
{
	for (uint64 h = gnn_mix64((uint64) ikey);; h++)
	{
		KeySlot    *e = &t->kh[h & t->kh_mask];

		if (e->pos < 0)
			return -1;
		if (e->key == ikey)
			return t->offset + e->pos;
	}
}

/* Global index of the node of uuid-keyed type t with key u, or -1. */
static inline int64
FindUuidKey(SchemaType *t, U128 u)
{
	for (uint64 h = UuidHash(u);; h++)
	{
		UuidSlot   *e = &t->uh[h & t->kh_mask];

		if (e->pos < 0)
			return -1;
		if (e->key.hi == u.hi && e->key.lo == u.lo)
			return t->offset + e->pos;
	}
}

/* Global index of the node of text-keyed type t with key tkey, or -1. */
static inline int64
FindTextKey(SchemaType *t, const char *tkey)
{
	uint64		hk = TextHash(tkey);

	for (uint64 h = hk;; h++)
	{
		KeySlot    *e = &t->kh[h & t->kh_mask];

		if (e->pos < 0)
			return -1;
		if (e->key == (int64) hk && strcmp(((char **) t->tkeys.data)[PERM(t, e->pos)], tkey) == 0)
			return t->offset + e->pos;
	}
}

/* ------------------------------------------------------------------ values */

char *
GnnKeyText(Datum d, Oid type)
{
	char	   *k;

	if (type == UUIDOID)
		return UuidText(UuidWords(d));
	k = TextDatumGetCString(d);
	/* char(n): trailing blanks are padding, as bpchar compares and casts to text */
	if (type == BPCHAROID)
	{
		size_t		n = strlen(k);

		while (n > 0 && k[n - 1] == ' ')
			k[--n] = '\0';
	}
	return k;
}

#define TimeValue GnnTimeValue

/* ------------------------------------------------------------------ planning */

static void
PlanFeatures(SchemaLoad *L, SchemaType *t, List *fk_cols)
{
	JsonbContainer *feats = JObject(JGet(&L->options->root, "features"), "features");
	JsonbContainer *excl = JObject(JGet(&L->options->root, "exclude"), "exclude");
	List	   *chosen = JStrings(JGet(feats, t->name), "features");
	List	   *excluded = JStrings(JGet(excl, t->name), "exclude");
	List	   *refused = lcons(t->key, list_copy(fk_cols));
	List	   *why = NIL;
	List	   *quiet = NIL;

	for (int i = 0; i < list_length(refused); i++)
		why = lappend(why, "is a key, not a feature");
	/* the part a row belongs to is where it lives, not what it is */
	if (L->part_column)
		quiet = lappend(quiet, (char *) L->part_column);
	if (t->is_target)
	{
		if (L->label)
			quiet = lappend(quiet, (char *) L->label);
		if (L->split)
			quiet = lappend(quiet, (char *) L->split);
		if (L->seed_time)
			quiet = lappend(quiet, (char *) L->seed_time);
	}
	t->fc.relid = t->relid;
	t->fc.relname = t->relname;
	t->fc.leave_out = "Exclude the column with options.exclude";
	t->fc.leave_out_lower = "exclude it with options.exclude";
	t->fc.choose = "Choose feature columns with options.features";
	t->fc.refused_hint = "Keys and foreign keys become the graph's nodes and edges; drop it from options.features";
	GnnFeatColsPlan(&t->fc, chosen, JGet(feats, t->name) != NULL, excluded, refused, why, quiet);
}

/* ------------------------------------------------------------------ reading */

static void
ReadTable(SchemaLoad *L, SchemaType *t, MemoryContext ctx)
{
	GnnScan		s;
	Datum	   *v = palloc(sizeof(Datum) * GNN_SCAN_MAXCOLS);
	bool	   *nl = palloc(sizeof(bool) * GNN_SCAN_MAXCOLS);
	int64		est = EstimateRows(t->relid);
	GrowArray	labels = {0},
				splits = {0};

	(void) L;
	static const Oid any_key[] = {INT2OID, INT4OID, INT8OID, TEXTOID, VARCHAROID, BPCHAROID, UUIDOID, InvalidOid};
	static const Oid time_types[] = {TIMESTAMPOID, TIMESTAMPTZOID, DATEOID, InvalidOid};

	memset(&s, 0, sizeof(s));
	s.relid = t->relid;
	s.relname = t->relname;
	ResolveColumn(&s, s.ncols++, t->key, "node key", any_key, "smallint, integer, bigint, text, varchar or uuid");
	for (int f = 0; f < t->nfks; f++)
	{
		SchemaFk   *fk = &t->fks[f];

		if (s.ncols >= GNN_SCAN_MAXCOLS)
			break;
		ResolveColumn(&s, fk->scan = s.ncols++, fk->column, "foreign key", any_key,
					  "smallint, integer, bigint, text, varchar or uuid");
		fk->type = s.types[fk->scan];
		GrowInit(&fk->nulls, ctx, sizeof(bool), est);
		if (L->types[fk->to].kk == KEY_INT)
			GrowInit(&fk->ivals, ctx, sizeof(int64), est);
		else if (L->types[fk->to].kk == KEY_UUID)
			GrowInit(&fk->uvals, ctx, sizeof(U128), est);
		else
			GrowInit(&fk->tvals, ctx, sizeof(char *), est);
		{
			KeyKind		k = KEY_INT;

			(void) IsKeyType(fk->type, &k);
			if (k != L->types[fk->to].kk)
				ereport(ERROR,
						(errcode(ERRCODE_DATATYPE_MISMATCH),
						 errmsg("edge %s.%s has type %s, but the key of %s is %s",
								t->name, fk->column, format_type_be(fk->type), L->types[fk->to].name,
								format_type_be(L->types[fk->to].key_type)),
						 errhint("A foreign key must have the type of the key it refers to.")));
		}
	}
	if (t->time_col)
	{
		ResolveColumn(&s, t->time_scan = s.ncols++, t->time_col, "time", time_types,
					  "timestamp, timestamptz or date");
		t->time_type = s.types[t->time_scan];
		GrowInit(&t->times, ctx, sizeof(int64), est);
	}
	else
		t->time_scan = -1;
	t->seed_time_scan = -1;
	if (t->is_target && L->seed_time)
	{
		ResolveColumn(&s, t->seed_time_scan = s.ncols++, L->seed_time, "seed time", time_types,
					  "timestamp, timestamptz or date");
		GrowInit(&t->seed_times, ctx, sizeof(int64), est);
	}
	t->part_scan = -1;
	if (L->part_column)
	{
		static const Oid part_types[] = {INT2OID, INT4OID, INT8OID, InvalidOid};

		(void) ColumnOf(t, L->part_column, "part column (options.part_column)");
		ResolveColumn(&s, t->part_scan = s.ncols++, L->part_column, "part", part_types,
					  "smallint, integer or bigint");
		GrowInit(&t->parts, ctx, sizeof(int32), est);
	}
	t->label_scan = t->split_scan = -1;
	if (t->is_target && L->label)
	{
		static const Oid lt[] = {INT2OID, INT4OID, INT8OID, TEXTOID, VARCHAROID, BPCHAROID, BOOLOID,
		FLOAT4OID, FLOAT8OID, NUMERICOID, InvalidOid};
		Oid			ltype = getBaseType(get_atttype(t->relid, ColumnOf(t, L->label, "label")));

		if (IsEnum(ltype))
			ResolveColumn(&s, t->label_scan = s.ncols++, L->label, "label", (Oid[]) {ltype, InvalidOid}, "");
		else
			ResolveColumn(&s, t->label_scan = s.ncols++, L->label, "label", lt,
						  "an integer, text, enum or boolean (classes) or a float or numeric (regression)");
		L->label_type = s.types[t->label_scan];
		GrowInit(&labels, ctx, sizeof(char *), est);
	}
	if (t->is_target && L->split)
	{
		(void) ColumnOf(t, L->split, "split");
		ResolveColumn(&s, t->split_scan = s.ncols++, L->split, "split", text_types, "text");
		GrowInit(&splits, ctx, 1, est);
	}
	GnnFeatColsScan(&t->fc, &s, L->max_categories);
	if (t->kk == KEY_INT)
		GrowInit(&t->ikeys, ctx, sizeof(int64), est);
	else if (t->kk == KEY_UUID)
		GrowInit(&t->ukeys, ctx, sizeof(U128), est);
	else
		GrowInit(&t->tkeys, ctx, sizeof(char *), est);

	ScanBegin(&s);
	while (ScanNext(&s, v, nl))
	{
		MemoryContext rowcxt = CurrentMemoryContext;

		if (nl[0])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("key column \"%s\" of %s contains a NULL", t->key, t->relname),
					 errdetail("The NULL is in %s.", ScanRowDesc(&s)),
					 errhint("A node key must not be NULL: use the primary key, or name a NOT NULL unique column in options.keys.")));
		MemoryContextSwitchTo(ctx);
		if (t->kk == KEY_INT)
			*(int64 *) GrowPush(&t->ikeys) = IntDatum(v[0], s.types[0]);
		else if (t->kk == KEY_UUID)
			*(U128 *) GrowPush(&t->ukeys) = UuidWords(v[0]);
		else
			*(char **) GrowPush(&t->tkeys) = GnnKeyText(v[0], s.types[0]);
		for (int f = 0; f < t->nfks; f++)
		{
			SchemaFk   *fk = &t->fks[f];
			bool		isnull = nl[fk->scan];

			*(bool *) GrowPush(&fk->nulls) = isnull;
			if (L->types[fk->to].kk == KEY_INT)
				*(int64 *) GrowPush(&fk->ivals) = isnull ? 0 : IntDatum(v[fk->scan], fk->type);
			else if (L->types[fk->to].kk == KEY_UUID)
			{
				U128		z = {0, 0};

				*(U128 *) GrowPush(&fk->uvals) = isnull ? z : UuidWords(v[fk->scan]);
			}
			else
				*(char **) GrowPush(&fk->tvals) = isnull ? NULL : GnnKeyText(v[fk->scan], fk->type);
		}
		if (t->part_scan >= 0)
		{
			int64		p = nl[t->part_scan] ? -1 : IntDatum(v[t->part_scan], s.types[t->part_scan]);

			if (p < 0 || p >= INT32_MAX)
				ereport(ERROR,
						(errcode(nl[t->part_scan] ? ERRCODE_NULL_VALUE_NOT_ALLOWED : ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
						 errmsg("part column \"%s\" of %s holds %s", L->part_column, t->relname,
								nl[t->part_scan] ? "a NULL" : psprintf("part " INT64_FORMAT, p)),
						 errdetail("In %s.", ScanRowDesc(&s)),
						 errhint("Every row belongs to one part, numbered from 0: the output of gnn.partition().")));
			*(int32 *) GrowPush(&t->parts) = (int32) p;
		}
		if (t->time_scan >= 0)
			*(int64 *) GrowPush(&t->times) = nl[t->time_scan] ? GNN_TIME_NONE :
				TimeValue(v[t->time_scan], t->time_type);
		/* a NULL seed time: the row's own time */
		if (t->seed_time_scan >= 0)
			*(int64 *) GrowPush(&t->seed_times) = nl[t->seed_time_scan] ? GNN_TIME_NONE :
				TimeValue(v[t->seed_time_scan], s.types[t->seed_time_scan]);
		if (t->label_scan >= 0)
		{
			char	   *lv = NULL;

			if (!nl[t->label_scan])
			{
				if (L->label_type == BOOLOID)
					lv = DatumGetBool(v[t->label_scan]) ? "true" : "false";
				else
				{
					MemoryContextSwitchTo(rowcxt);
					lv = TextDatum(v[t->label_scan], L->label_type);
					MemoryContextSwitchTo(ctx);
					lv = pstrdup(lv);
				}
			}
			*(char **) GrowPush(&labels) = lv;
		}
		if (t->split_scan >= 0)
		{
			uint8		sp = GNN_SPLIT_NONE;

			if (!nl[t->split_scan])
			{
				char	   *x = TextDatumGetCString(v[t->split_scan]);

				int			k = GnnParseSplit(x);

				if (k >= 0)
					sp = (uint8) k;
				else
					ereport(ERROR,
							(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
							 errmsg("split of a row of %s is \"%s\"", t->relname, x),
							 errdetail("In %s.", ScanRowDesc(&s)),
							 errhint("A split is train, val, test, or NULL for none.")));
			}
			*(uint8 *) GrowPush(&splits) = sp;
		}
		MemoryContextSwitchTo(rowcxt);
		GnnFeatColsFeed(&t->fc, &s, v, nl);
	}
	ScanEnd(&s);
	t->n = t->kk == KEY_INT ? t->ikeys.n : t->kk == KEY_UUID ? t->ukeys.n : t->tkeys.n;
	t->labels = labels;
	t->splits = splits;
}

/* ------------------------------------------------------------------ kept encodings */

/*
 * Replacing a schema graph keeps its encodings (options.encodings = keep,
 * the default): feat_cols.c's GnnKeepEncodings over every type.
 */
static void
KeepEncodings(SchemaLoad *L)
{
	GnnFeatCols **fcs = palloc(sizeof(GnnFeatCols *) * Max(L->ntypes, 1));
	const char **names = palloc(sizeof(char *) * Max(L->ntypes, 1));

	for (int t = 0; t < L->ntypes; t++)
	{
		fcs[t] = &L->types[t].fc;
		names[t] = L->types[t].name;
	}
	L->kept = GnnKeepEncodings(L->name, (GnnFeatCols *const *) fcs, names, L->ntypes);
}

/* ------------------------------------------------------------------ the load */

static void
SchemaReport(void *arg, const gnn_error *err)
{
	SchemaLoad *L = arg;

	ereport(ERROR,
			(errcode(err->status == GNN_ERR_NOMEM ? ERRCODE_OUT_OF_MEMORY :
					 err->status == GNN_ERR_LIMIT ? ERRCODE_PROGRAM_LIMIT_EXCEEDED :
					 ERRCODE_INTERNAL_ERROR),
			 errmsg("graph \"%s\": %s", L->name, err->msg)));
}

/*
 * The encoded features of every type, a CSR over the nodes in node order,
 * into fptr[0..n] / fidx / fval (at most limit entries), or, with fidx NULL,
 * only counted.  Either way the number of entries.  Each type's rows are
 * encoded a chunk at a time (on every core) into one reused buffer, and the
 * rows' non-zeros then counted and copied out (on every core too), each
 * row's constant column last; a type without
 * feature columns gets one entry per node (its own embedding column).
 */
static int64
SchemaWriteFeatures(SchemaLoad *L, int nrel, int64 n, int64 *fptr, int32 *fidx, float *fval, int64 limit)
{
	int64		nnz = 0;
#ifdef _OPENMP
	int			nthreads = gnn_threads > 0 ? gnn_threads : omp_get_max_threads();
#else
	int			nthreads = 1;
#endif

	for (int t = 0; t < nrel; t++)
	{
		SchemaType *T = &L->types[t];
		int64		chunk = 65536;
		float	   *buf;
		gnn_col_encoder **encs;
		int64	   *ident;		/* the rows of a chunk, for a type in key order */
		int64	   *at;			/* a chunk's rows: entries, then where each starts */
		int			nenc = 0;
		int32		W = T->feat_width,
					FO = T->feat_offset;

		if (T->embedding)
		{
			if (fidx && nnz + T->n > limit)
				elog(ERROR, "the features of %s outgrew their count", T->relname);
			for (int64 i = 0; fidx && i < T->n; i++)
			{
				fptr[T->offset + i] = nnz + i;
				fidx[nnz + i] = FO + (int32) i;
				fval[nnz + i] = 1.0f;
			}
			nnz += T->n;
			continue;
		}
		/* the encoders in slice order (their offsets follow one another) */
		encs = GnnFeatColsEncoders(&T->fc, &nenc);
		buf = GnnAllocBig(sizeof(float) * chunk * W, MCXT_ALLOC_HUGE);
		ident = palloc(sizeof(int64) * chunk);
		at = palloc(sizeof(int64) * (chunk + 1));
		for (int64 i0 = 0; i0 < T->n; i0 += chunk)
		{
			int64		rows = Min(chunk, T->n - i0);
			gnn_error	err;

			CHECK_FOR_INTERRUPTS();
			/* rows in key order, on every core; then the non-zeros in row order */
			if (!T->perm)
				for (int64 r = 0; r < rows; r++)
					ident[r] = i0 + r;
			if (gnn_enc_write_rows_perm(encs, nenc, rows, T->perm ? T->perm + i0 : ident, buf, W, 0,
										nthreads, &err) != GNN_OK)
				ereport(ERROR,
						(errcode(ERRCODE_INTERNAL_ERROR),
						 errmsg("encoding the features of %s failed: %s", T->relname, err.msg)));
			/* each row's entries (its non-zeros and the constant column), on every core */
#pragma omp parallel for schedule(static) num_threads(nthreads)
			for (int64 r = 0; r < rows; r++)
			{
				const float *row = buf + r * W;
				int64		c = 1;

				for (int32 j = 0; j < W - 1; j++)
					c += row[j] != 0.0f;
				at[r] = c;
			}
			/* where each row starts */
			for (int64 r = 0, o = nnz; r <= rows; r++)
			{
				int64		c = r < rows ? at[r] : 0;

				at[r] = o;
				o += c;
			}
			if (fidx)
			{
				if (at[rows] > limit)
					elog(ERROR, "the features of %s outgrew their count", T->relname);
#pragma omp parallel for schedule(static) num_threads(nthreads)
				for (int64 r = 0; r < rows; r++)
				{
					const float *row = buf + r * W;
					int64		o = at[r];

					fptr[T->offset + i0 + r] = o;
					for (int32 j = 0; j < W - 1; j++)
						if (row[j] != 0.0f)
						{
							fidx[o] = FO + j;
							fval[o++] = row[j];
						}
					fidx[o] = FO + W - 1;	/* the constant column */
					fval[o] = 1.0f;
				}
			}
			nnz = at[rows];
		}
		pfree(buf);
		pfree(ident);
		pfree(at);
		pfree(encs);
	}
	if (fidx)
		fptr[n] = nnz;
	return nnz;
}

typedef struct SchemaFeatFill
{
	SchemaLoad *L;
	int			nrel;
	int64		n;
} SchemaFeatFill;

/*
 * The build's sp_fill: the features written straight into the region, as
 * counted (never past nnz; fewer would leave ptr[n] short of it, which the
 * build's check of the written CSR refuses).  An error (interrupts
 * included) is caught here and handed back as a status, to be raised once
 * the build has let go of its memory.
 */
static gnn_status
SchemaFillFeatures(void *arg, int64_t *ptr, int32_t *idx, float *val, int64_t nnz, gnn_error *err)
{
	SchemaFeatFill *f = arg;
	MemoryContext mcxt = CurrentMemoryContext;

	PG_TRY();
	{
		(void) SchemaWriteFeatures(f->L, f->nrel, f->n, ptr, idx, val, nnz);
	}
	PG_CATCH();
	{
		return GnnFillCaught(mcxt, err);
	}
	PG_END_TRY();
	return GNN_OK;
}

/*
 * One part of a partitioned graph (options.part_column / part): the rows of
 * every type whose part column is L->part are the graph's own nodes; the
 * halo is every other row one foreign-key edge away from an own row; only
 * edges with an own endpoint are kept.  Reduces the whole graph's input in
 * place (node order, keys and features as they were: encodings stay fitted
 * over every row read, so every part encodes alike), gives halo rows no
 * label, split or target (their owners train on them) and records each
 * node's owner for the core.  Type offsets and counts follow.
 */
static void
KeepSchemaPart(SchemaLoad *L, gnn_graph_input *in)
{
	int64		n = in->num_nodes,
				n2 = 0,
				nhalo = 0,
				arcs = 0,
				kept_arcs = 0;
	int32	   *owner = GnnAllocBig(sizeof(int32) * Max(n, 1), MCXT_ALLOC_HUGE);
	uint8	   *keep = GnnAllocBig(Max(n, 1), MCXT_ALLOC_HUGE | MCXT_ALLOC_ZERO);
	int64	   *nidx = GnnAllocBig(sizeof(int64) * Max(n, 1), MCXT_ALLOC_HUGE);
	int64	   *kept_of = palloc0(sizeof(int64) * Max(L->ntypes, 1));	/* rows kept per type */
	int32	   *node_part;

	for (int t = 0; t < L->ntypes; t++)
	{
		SchemaType *T = &L->types[t];
		const int32 *pv = (const int32 *) T->parts.data;

		for (int64 i = 0; i < T->n; i++)
		{
			owner[T->offset + i] = pv[PERM(T, i)];
			keep[T->offset + i] = owner[T->offset + i] == L->part;
		}
	}
	/*
	 * with halo_hops = L, the rows within L - 1 edges of an own row keep
	 * all their edges too (bit 4), so that L hops drawn from own seeds find
	 * every neighbour the whole graph has
	 */
	for (int64 g = 0; g < n; g++)
		if (keep[g] & 1)
			keep[g] |= 4;
	for (int hop = 1; hop < L->halo_hops; hop++)
	{
		int64		added = 0;

		for (int r = 0; r < in->num_refs; r++)
		{
			const gnn_graph_ref *ref = &in->refs[r];
			SchemaType *S = &L->types[ref->src_type];
			const int32 *rv = (const int32 *) ref->ref;

			for (int64 i = 0; i < S->n; i++)
			{
				int64		a = S->offset + i,
							b = rv[i];

				if (b < 0 || ((keep[a] & 4) != 0) == ((keep[b] & 4) != 0))
					continue;
				/* (8: reached in this round, inner from the next) */
				if (!(keep[a] & 4) && !(keep[a] & 8))
					keep[a] |= 8, added++;
				if (!(keep[b] & 4) && !(keep[b] & 8))
					keep[b] |= 8, added++;
			}
		}
		for (int64 g = 0; g < n; g++)
			if (keep[g] & 8)
				keep[g] = (keep[g] & ~8) | 4;
		if (added == 0)
			break;
		CHECK_FOR_INTERRUPTS();
	}
	/* the halo: the other end of an edge at an inner node; edges elsewhere go */
	for (int r = 0; r < in->num_refs; r++)
	{
		const gnn_graph_ref *ref = &in->refs[r];
		SchemaType *S = &L->types[ref->src_type];
		int32	   *rv = (int32 *) ref->ref;

		for (int64 i = 0; i < S->n; i++)
		{
			int64		a = S->offset + i,
						b = rv[i];

			if (b < 0)
				continue;
			arcs++;
			if ((keep[a] & 4) || (keep[b] & 4))
			{
				keep[a] |= 2;
				keep[b] |= 2;
				kept_arcs++;
			}
			else
				rv[i] = -1;
		}
	}
	for (int64 g = 0; g < n; g++)
	{
		nidx[g] = keep[g] ? n2++ : -1;
		nhalo += keep[g] && owner[g] != L->part;
		kept_of[in->node_type[g]] += keep[g] != 0;
	}
	if (n2 - nhalo == 0)
		ereport(ERROR,
				(errcode(ERRCODE_NO_DATA_FOUND),
				 errmsg("no row of the tables of graph \"%s\" has %s = %d", L->name, L->part_column, L->part),
				 errhint("Parts are numbered from 0; each server loads the part it holds.")));

	/* node rows, in their order */
	{
		int64_t    *ids = GnnAllocBig(sizeof(int64) * n2, MCXT_ALLOC_HUGE);
		int64_t    *keys = in->keys ? GnnAllocBig(sizeof(int64) * n2, MCXT_ALLOC_HUGE) : NULL;
		int16_t    *ntype = GnnAllocBig(sizeof(int16) * n2, MCXT_ALLOC_HUGE);
		int64_t    *tm = in->node_time ? GnnAllocBig(sizeof(int64) * n2, MCXT_ALLOC_HUGE) : NULL;
		int64_t    *st = in->seed_time ? GnnAllocBig(sizeof(int64) * n2, MCXT_ALLOC_HUGE) : NULL;
		int32_t    *lab = in->labels ? GnnAllocBig(sizeof(int32) * n2, MCXT_ALLOC_HUGE) : NULL;
		uint8_t    *spl = in->split ? GnnAllocBig(n2, MCXT_ALLOC_HUGE) : NULL;
		float	   *tg = in->targets ? GnnAllocBig(sizeof(float) * n2, MCXT_ALLOC_HUGE) : NULL;
		int64_t    *koff = in->key_off ? GnnAllocBig(sizeof(int64) * (n2 + 1), MCXT_ALLOC_HUGE) : NULL;
		char	   *kb = NULL;
		int64_t    *fptr = in->sp_ptr ? GnnAllocBig(sizeof(int64) * (n2 + 1), MCXT_ALLOC_HUGE) : NULL;
		int32_t    *fidx = NULL;
		float	   *fval = NULL;
		int64		kbytes = 0,
					nnz = 0;

		node_part = GnnAllocBig(sizeof(int32) * n2, MCXT_ALLOC_HUGE);
		for (int64 g = 0; g < n; g++)
			if (keep[g])
			{
				kbytes += koff ? in->key_off[g + 1] - in->key_off[g] : 0;
				nnz += fptr ? in->sp_ptr[g + 1] - in->sp_ptr[g] : 0;
			}
		if (koff)
			kb = GnnAllocBig(kbytes + 1, MCXT_ALLOC_HUGE);
		if (fptr)
		{
			fidx = GnnAllocBig(sizeof(int32) * Max(nnz, 1), MCXT_ALLOC_HUGE);
			fval = GnnAllocBig(sizeof(float) * Max(nnz, 1), MCXT_ALLOC_HUGE);
		}
		kbytes = nnz = 0;
		for (int64 g = 0; g < n; g++)
		{
			int64		j = nidx[g];
			bool		own = owner[g] == L->part;

			if (j < 0)
				continue;
			ids[j] = j;
			ntype[j] = in->node_type[g];
			node_part[j] = owner[g];
			if (keys)
				keys[j] = in->keys[g];
			if (tm)
				tm[j] = in->node_time[g];
			if (st)
				st[j] = in->seed_time[g];
			if (lab)
				lab[j] = own ? in->labels[g] : -1;
			if (spl)
				spl[j] = own ? in->split[g] : GNN_SPLIT_NONE;
			if (tg)
				tg[j] = own ? in->targets[g] : NAN;
			if (koff)
			{
				int64		len = in->key_off[g + 1] - in->key_off[g];

				koff[j] = kbytes;
				memcpy(kb + kbytes, in->key_bytes + in->key_off[g], len);
				kbytes += len;
			}
			if (fptr)
			{
				int64		len = in->sp_ptr[g + 1] - in->sp_ptr[g];

				fptr[j] = nnz;
				memcpy(fidx + nnz, in->sp_index + in->sp_ptr[g], sizeof(int32) * len);
				memcpy(fval + nnz, in->sp_value + in->sp_ptr[g], sizeof(float) * len);
				nnz += len;
			}
		}
		if (koff)
		{
			koff[n2] = kbytes;
			in->key_off = koff;
			in->key_bytes = kb;
		}
		if (fptr)
		{
			fptr[n2] = nnz;
			in->sp_ptr = fptr;
			in->sp_index = fidx;
			in->sp_value = fval;
			in->sparse_nnz = nnz;
		}
		in->node_ids = ids;
		in->keys = keys;
		in->node_type = ntype;
		in->node_time = tm;
		in->seed_time = st;
		in->labels = lab;
		in->split = spl;
		in->targets = tg;
	}
	/* each reference array over its type's kept rows, to kept indices */
	for (int r = 0; r < in->num_refs; r++)
	{
		gnn_graph_ref *ref = (gnn_graph_ref *) &in->refs[r];
		SchemaType *S = &L->types[ref->src_type];
		int32	   *nr = GnnAllocBig(sizeof(int32) * Max(kept_of[ref->src_type], 1), MCXT_ALLOC_HUGE);
		int64		kept = 0;

		for (int64 i = 0; i < S->n; i++)
			if (keep[S->offset + i])
				nr[kept++] = ref->ref[i] < 0 ? -1 : (int32) nidx[ref->ref[i]];
		ref->ref = nr;
	}
	/* the types' ranges */
	{
		int64		off = 0;

		for (int t = 0; t < L->ntypes; t++)
		{
			L->types[t].offset = off;
			L->types[t].n = kept_of[t];
			off += kept_of[t];
		}
	}
	in->num_nodes = n2;
	in->node_part = node_part;
	in->part = L->part;
	elog(DEBUG1, "gnn: part %d of schema graph %s: %lld own nodes, %lld halo nodes, %lld of %lld edges",
		 L->part, L->name, (long long) (n2 - nhalo), (long long) nhalo, (long long) kept_arcs, (long long) arcs);
	pfree(owner);
	pfree(keep);
	pfree(nidx);
	pfree(kept_of);
}



/* Find the type a relation name in an option refers to, or raise an error listing the types. */
static int
OptionType(SchemaLoad *L, const char *name, const char *option)
{
	int			t = TypeByName(L, name);

	if (t < 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("options.%s names \"%s\", which is not one of the tables loaded", option, name),
				 errdetail("The tables are: %s.", TypeList(L)),
				 errhint("Name a table given in tables.")));
	return t;
}

static void
AddFk(SchemaType *t, const char *column, const char *conname, int to)
{
	SchemaFk   *fk;

	for (int f = 0; f < t->nfks; f++)
		if (strcmp(t->fks[f].column, column) == 0 && t->fks[f].to == to)
			return;				/* declared and constrained: one edge type */
	t->fks = t->nfks ? repalloc(t->fks, sizeof(SchemaFk) * (t->nfks + 1)) : palloc(sizeof(SchemaFk));
	fk = &t->fks[t->nfks++];
	memset(fk, 0, sizeof(*fk));
	fk->column = pstrdup(column);
	fk->conname = conname ? pstrdup(conname) : NULL;
	fk->to = to;
}

Datum
gnn_load_schema_graph(PG_FUNCTION_ARGS)
{
	MemoryContext ctx = AllocSetContextCreate(CurrentMemoryContext, "gnn schema load", ALLOCSET_DEFAULT_SIZES);
	MemoryContext old;
	SchemaLoad	L;
	ArrayType  *tables;
	Datum	   *relds;
	bool	   *relnulls;
	int			nrel;
	Oid		   *rels;
	List	   *cons;
	ListCell   *lc;
	JsonbContainer *opt_keys,
			   *opt_time;
	JsonbValue *jv;
	bool		replace;
	bool		track;
	bool		tracked;
	gnn_graph_input in;
	SchemaFeatFill fill;
	GnnGraphEntry proto;
	TupleDesc	tupdesc;
	int64		n = 0;
	StringInfoData meta,
				names;

	GnnRequirePreload();
	if (PG_ARGISNULL(0))
		ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("graph name must not be NULL")));
	if (PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("tables must not be NULL"),
				 errhint("Pass the tables of the schema, e.g. ARRAY['customers', 'orders']::regclass[].")));
	old = MemoryContextSwitchTo(ctx);
	memset(&L, 0, sizeof(L));
	L.name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	GnnCheckGraphName(L.name);
	tables = PG_GETARG_ARRAYTYPE_P(1);
	L.target_rel = PG_ARGISNULL(2) ? InvalidOid : PG_GETARG_OID(2);
	L.label = PG_ARGISNULL(3) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(3));
	L.split = PG_ARGISNULL(4) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(4));
	L.options = PG_ARGISNULL(5) ? DatumGetJsonbP(DirectFunctionCall1(jsonb_in, CStringGetDatum("{}"))) :
		PG_GETARG_JSONB_P(5);
	replace = PG_ARGISNULL(6) ? false : PG_GETARG_BOOL(6);
	track = PG_NARGS() > 7 && !PG_ARGISNULL(7) && PG_GETARG_BOOL(7);
	L.target = -1;
	if (!JB_ROOT_IS_OBJECT(L.options))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("options must be a JSON object")));
	{
		static const char *const known[] = {"keys", "edges", "features", "exclude", "time",
		"seed_time", "max_categories", "skip_dangling", "encodings", "persist", "feature_store",
		"part_column", "part", "halo_hops", NULL};
		ListCell   *k;

		foreach(k, JKeys(&L.options->root))
		{
			bool		ok = false;

			for (const char *const *a = known; *a; a++)
				ok |= strcmp(*a, lfirst(k)) == 0;
			if (!ok)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("unknown option \"%s\"", (char *) lfirst(k)),
						 errhint("Accepted options: keys, edges, features, exclude, time, seed_time, max_categories, skip_dangling, encodings, persist, feature_store, part_column, part, halo_hops.")));
		}
	}
	L.max_categories = 32;
	if ((jv = JGet(&L.options->root, "max_categories")) != NULL)
	{
		if (jv->type != jbvNumeric)
			ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
							errmsg("option \"max_categories\" must be a number")));
		L.max_categories = DatumGetInt32(DirectFunctionCall1(numeric_int4, NumericGetDatum(jv->val.numeric)));
		if (L.max_categories < 1 || L.max_categories > 10000)
			ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
							errmsg("option \"max_categories\" must be between 1 and 10000 (got %d)", L.max_categories)));
	}
	if ((jv = JGet(&L.options->root, "encodings")) != NULL)
	{
		char	   *e = JString(jv, "encodings");

		if (strcmp(e, "keep") != 0 && strcmp(e, "refit") != 0)
			ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
							errmsg("option \"encodings\" must be \"keep\" or \"refit\" (got \"%s\")", e)));
		L.refit = strcmp(e, "refit") == 0;
	}
	L.persist = -1;
	if ((jv = JGet(&L.options->root, "persist")) != NULL)
	{
		if (jv->type != jbvBool)
			ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
							errmsg("option \"persist\" must be true or false"),
							errhint("true writes the graph to the graph store (the default follows gnn.persist_graphs).")));
		L.persist = jv->val.boolean ? 1 : 0;
	}
	L.feature_store = GNN_FEATURES_MEMORY;
	if ((jv = JGet(&L.options->root, "feature_store")) != NULL)
	{
		if (jv->type != jbvString)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("option \"feature_store\" must be a string"),
					 errhint("'memory', 'disk' or 'auto'.")));
		L.feature_store = GnnParseFeatureStore(pnstrdup(jv->val.string.val, jv->val.string.len));
	}
	if ((jv = JGet(&L.options->root, "skip_dangling")) != NULL)
	{
		if (jv->type != jbvBool)
			ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
							errmsg("option \"skip_dangling\" must be true or false")));
		L.skip_dangling = jv->val.boolean;
	}
	if ((jv = JGet(&L.options->root, "part_column")) != NULL)
		L.part_column = JString(jv, "part_column");
	if ((jv = JGet(&L.options->root, "part")) != NULL)
	{
		if (jv->type != jbvNumeric)
			ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
							errmsg("option \"part\" must be a number")));
		L.part = DatumGetInt32(DirectFunctionCall1(numeric_int4, NumericGetDatum(jv->val.numeric)));
		if (L.part < 0)
			ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
							errmsg("option \"part\" must be zero or more (got %d)", L.part)));
	}
	L.halo_hops = 1;
	if ((jv = JGet(&L.options->root, "halo_hops")) != NULL)
	{
		if (jv->type != jbvNumeric)
			ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
							errmsg("option \"halo_hops\" must be a number")));
		L.halo_hops = DatumGetInt32(DirectFunctionCall1(numeric_int4, NumericGetDatum(jv->val.numeric)));
		if (L.halo_hops < 1 || L.halo_hops > GNN_MAX_LAYERS)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("option \"halo_hops\" must be in [1, %d] (got %d)", GNN_MAX_LAYERS, L.halo_hops),
					 errhint("Give the part as many hops of halo as the models trained on it sample.")));
		if (!L.part_column)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("option \"halo_hops\" is for one part of a partitioned graph"),
					 errhint("Pass options part_column and part too, or leave halo_hops out.")));
	}
	if ((L.part_column != NULL) != (JGet(&L.options->root, "part") != NULL))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("options \"part_column\" and \"part\" go together"),
				 errhint("For example {\"part_column\": \"part\", \"part\": 0}: the rows whose column part is 0, "
						 "and the halo around them.")));
	if (L.part_column && (track || L.feature_store != GNN_FEATURES_MEMORY))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("one part of a partitioned graph is loaded with its features in memory, without tracking"),
				 errhint("Drop track => true or option \"feature_store\", or load the whole graph.")));
	GnnLockGraph(L.name, GetUserId());	/* loads, refreshes and drops of the name in turn */
	if (!replace && GnnGraphExists(L.name))
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_OBJECT),
				 errmsg("graph \"%s\" already exists", L.name),
				 errhint("Pass replace => true to load it again, or drop it with gnn.drop_graph().")));

	/* node types */
	deconstruct_array(tables, REGCLASSOID, sizeof(Oid), true, TYPALIGN_INT, &relds, &relnulls, &nrel);
	if (nrel == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("tables must list at least one table")));
	if (nrel > GNN_MAX_NODE_TYPES)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("%d tables given; a graph has at most %d node types", nrel, GNN_MAX_NODE_TYPES)));
	rels = palloc(sizeof(Oid) * nrel);
	L.types = palloc0(sizeof(SchemaType) * nrel);
	L.ntypes = nrel;
	for (int t = 0; t < nrel; t++)
	{
		SchemaType *T = &L.types[t];

		if (relnulls[t])
			ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("tables must not contain NULL")));
		rels[t] = T->relid = DatumGetObjectId(relds[t]);
		T->relname = (char *) QualifiedRelName(T->relid);
		T->name = get_rel_name(T->relid);
		for (int u = 0; u < t; u++)
		{
			if (rels[u] == rels[t])
				ereport(ERROR,
						(errcode(ERRCODE_DUPLICATE_OBJECT),
						 errmsg("table %s is listed twice", T->relname)));
			if (strcmp(L.types[u].name, T->name) == 0)
			{
				/* same name in two schemas: both go by their qualified names */
				L.types[u].name = L.types[u].relname;
				T->name = T->relname;
			}
		}
		if (T->relid == L.target_rel)
		{
			L.target = t;
			T->is_target = true;
		}
	}
	if (OidIsValid(L.target_rel) && L.target < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("target %s is not one of the tables", QualifiedRelName(L.target_rel)),
				 errdetail("The tables are: %s.", TypeList(&L)),
				 errhint("Add it to tables.")));
	if (L.target < 0 && (L.label || L.split))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("label and split need a target table"),
				 errhint("Pass target => the table whose rows carry the label.")));
	/* change capture: the triggers, and a snapshot after them that the scans read under */
	tracked = GnnTrackSchemaBegin(L.name, rels, nrel, track);
	if (tracked && L.part_column)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("graph \"%s\" is tracked, and one part of a partitioned graph is not", L.name),
				 errhint("Untrack it with gnn.untrack() first, or load the part under another name.")));

	/* keys: options.keys, else the single-column primary key */
	cons = ReadConstraints(rels, nrel, ctx);
	opt_keys = JObject(JGet(&L.options->root, "keys"), "keys");
	foreach(lc, JKeys(opt_keys))
		(void) OptionType(&L, lfirst(lc), "keys");
	for (int t = 0; t < nrel; t++)
	{
		SchemaType *T = &L.types[t];
		char	   *k = JString(JGet(opt_keys, T->name), "keys");

		if (k == NULL)
			k = JString(JGet(opt_keys, T->relname), "keys");
		if (k)
		{
			bool		unique = false;

			(void) ColumnOf(T, k, "key (options.keys)");
			foreach(lc, cons)
			{
				ConInfo    *ci = lfirst(lc);

				if (ci->conrelid == T->relid && (ci->contype == 'p' || ci->contype == 'u') &&
					ci->nkeys == 1 && strcmp(ci->col, k) == 0)
					unique = true;
			}
			/* without a constraint the load checks uniqueness itself (OrderKeys) */
			(void) unique;
			T->key = k;
		}
		else
		{
			foreach(lc, cons)
			{
				ConInfo    *ci = lfirst(lc);

				if (ci->conrelid != T->relid || ci->contype != 'p')
					continue;
				if (ci->nkeys != 1)
					ereport(ERROR,
							(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
							 errmsg("the primary key of %s has %d columns", T->relname, ci->nkeys),
							 errdetail("A node key is one column."),
							 errhint("Name a unique single column of %s in options.keys, e.g. {\"keys\": {\"%s\": \"id\"}}.",
									 T->relname, T->name)));
				T->key = ci->col;
			}
			if (T->key == NULL)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_TABLE_DEFINITION),
						 errmsg("%s has no primary key", T->relname),
						 errdetail("Its columns are: %s.", GnnColumnList(T->relid)),
						 errhint("Add a primary key, or name a unique column in options.keys, e.g. {\"keys\": {\"%s\": \"id\"}}.",
								 T->name)));
		}
		T->key_type = getBaseType(get_atttype(T->relid, ColumnOf(T, T->key, "key")));
		if (!IsKeyType(T->key_type, &T->kk))
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("the key \"%s\" of %s has type %s", T->key, T->relname, format_type_be(T->key_type)),
					 errhint("A node key can be smallint, integer, bigint, text, varchar or uuid.")));
	}

	/* edges: foreign keys between listed tables, then declared ones */
	for (int t = 0; t < nrel; t++)
	{
		SchemaType *T = &L.types[t];

		foreach(lc, cons)
		{
			ConInfo    *ci = lfirst(lc);
			int			to = -1;

			if (ci->conrelid != T->relid || ci->contype != 'f')
				continue;
			for (int u = 0; u < nrel; u++)
				if (L.types[u].relid == ci->confrelid)
					to = u;
			if (to < 0)
				continue;		/* to a table not loaded */
			if (ci->nkeys != 1)
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("foreign key \"%s\" of %s has %d columns", ci->conname, T->relname, ci->nkeys),
						 errdetail("An edge type is a single-column foreign key."),
						 errhint("Leave %s out of tables, or declare the edge on a single column with options.edges.",
								 QualifiedRelName(ci->confrelid))));
			if (strcmp(ci->refcol, L.types[to].key) != 0)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_FOREIGN_KEY),
						 errmsg("foreign key \"%s\" of %s refers to column \"%s\" of %s, which is not its node key \"%s\"",
								ci->conname, T->relname, ci->refcol, L.types[to].relname, L.types[to].key),
						 errhint("Make \"%s\" the node key of %s with options.keys.", ci->refcol, L.types[to].name)));
			AddFk(T, ci->col, ci->conname, to);
		}
	}
	if ((jv = JGet(&L.options->root, "edges")) != NULL)
	{
		JsonbIterator *it;
		JsonbValue	e;
		JsonbIteratorToken tok;

		if (jv->type != jbvBinary || !JsonContainerIsArray(jv->val.binary.data))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("option \"edges\" must be an array"),
					 errhint("For example {\"edges\": [{\"from\": \"reviews.product_id\", \"to\": \"products\"}]}.")));
		it = JsonbIteratorInit(jv->val.binary.data);
		while ((tok = JsonbIteratorNext(&it, &e, true)) != WJB_DONE)
		{
			JsonbContainer *o;
			char	   *from,
					   *to,
					   *dot;
			int			ft,
						tt;

			if (tok != WJB_ELEM)
				continue;
			o = JObject(&e, "edges");
			from = JString(JGet(o, "from"), "edges.from");
			to = JString(JGet(o, "to"), "edges.to");
			if (!from || !to || !(dot = strrchr(from, '.')))
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("each declared edge needs \"from\": \"table.column\" and \"to\": \"table\""),
						 errhint("For example {\"from\": \"reviews.product_id\", \"to\": \"products\"}.")));
			*dot = '\0';
			ft = OptionType(&L, from, "edges");
			tt = OptionType(&L, to, "edges");
			(void) ColumnOf(&L.types[ft], dot + 1, "edge column (options.edges)");
			AddFk(&L.types[ft], dot + 1, NULL, tt);
		}
	}
	for (int t = 0; t < nrel; t++)
		for (int f = 0; f < L.types[t].nfks; f++)
		{
			if (L.nrels + 2 > GNN_MAX_EDGE_TYPES)
				ereport(ERROR,
						(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
						 errmsg("more than %d edge types", GNN_MAX_EDGE_TYPES)));
			L.types[t].fks[f].rel_fwd = L.nrels++;
			L.types[t].fks[f].rel_rev = L.nrels++;
		}

	/* times */
	opt_time = JObject(JGet(&L.options->root, "time"), "time");
	foreach(lc, JKeys(opt_time))
	{
		int			t = OptionType(&L, lfirst(lc), "time");

		L.types[t].time_col = JString(JGet(opt_time, lfirst(lc)), "time");
		(void) ColumnOf(&L.types[t], L.types[t].time_col, "time column (options.time)");
	}
	/*
	 * seed_time: the time each target row's prediction is made at, when not
	 * the row's own time (a snapshot of a customer taken after they signed
	 * up): temporal sampling bounds a seed by it
	 */
	if ((jv = JGet(&L.options->root, "seed_time")) != NULL)
	{
		bool		any_time = false;

		L.seed_time = JString(jv, "seed_time");
		if (L.target < 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("option \"seed_time\" needs a target"),
					 errhint("Pass target => the table whose rows are the seeds; seed_time names one of its time columns.")));
		(void) ColumnOf(&L.types[L.target], L.seed_time, "seed time column (options.seed_time)");
		for (int t = 0; t < nrel; t++)
			any_time |= L.types[t].time_col != NULL;
		if (!any_time)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("option \"seed_time\" needs row times"),
					 errdetail("A seed time bounds the times of the rows sampled around a seed; no table has a time column."),
					 errhint("Name the time columns with options.time, e.g. {\"time\": {\"%s\": \"created_at\"}}.",
							 L.types[0].name)));
	}
	foreach(lc, JKeys(JObject(JGet(&L.options->root, "features"), "features")))
		(void) OptionType(&L, lfirst(lc), "features");
	foreach(lc, JKeys(JObject(JGet(&L.options->root, "exclude"), "exclude")))
		(void) OptionType(&L, lfirst(lc), "exclude");

	/* the features: every ordinary column */
	{
		List	   *fkcols_all = NIL;

		foreach(lc, cons)
		{
			ConInfo    *ci = lfirst(lc);

			if (ci->contype == 'f')
				fkcols_all = lappend(fkcols_all, psprintf("%u.%s", ci->conrelid, ci->col));
		}
		for (int t = 0; t < nrel; t++)
		{
			List	   *fkc = NIL;
			ListCell   *c;
			char	   *prefix = psprintf("%u.", L.types[t].relid);

			foreach(c, fkcols_all)
				if (strncmp(lfirst(c), prefix, strlen(prefix)) == 0)
				fkc = lappend(fkc, (char *) lfirst(c) + strlen(prefix));
			for (int f = 0; f < L.types[t].nfks; f++)
				fkc = lappend(fkc, L.types[t].fks[f].column);
			PlanFeatures(&L, &L.types[t], fkc);
		}
	}
	if (L.target >= 0 && L.label)
		(void) ColumnOf(&L.types[L.target], L.label, "label");
	if (replace && !L.refit && GnnGraphExists(L.name))
		KeepEncodings(&L);

	/* read every table once */
	INSTR_TIME_SET_ZERO(phase_start);
	Phase("");
	for (int t = 0; t < nrel; t++)
	{
		ReadTable(&L, &L.types[t], ctx);
		Phase(psprintf("reading %s", L.types[t].relname));
	}

	/* number the nodes: types in order, keys ascending within a type */
	for (int t = 0; t < nrel; t++)
	{
		bool		referenced = false;

		OrderKeys(&L.types[t]);
		/* a hash of the keys, for the types foreign keys point at */
		for (int u = 0; u < nrel && !referenced; u++)
			for (int f = 0; f < L.types[u].nfks; f++)
				referenced |= L.types[u].fks[f].to == t;
		if (referenced)
			KeyIndex(&L.types[t]);
		L.types[t].offset = n;
		n += L.types[t].n;
	}
	if (n == 0)
		ereport(ERROR,
				(errcode(ERRCODE_NO_DATA_FOUND),
				 errmsg("the tables of graph \"%s\" have no rows", L.name)));
	if (n >= INT32_MAX)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("graph \"%s\" would have %lld nodes, more than %d", L.name, (long long) n, INT32_MAX - 1)));

	Phase("ordering keys");
	memset(&in, 0, sizeof(in));
	in.num_nodes = n;

	/*
	 * edges: each foreign key is a reference per row of its table, in node
	 * order (the core lays out both relations from it, without sorting)
	 */
	{
		int			nrefs = 0;
		gnn_graph_ref *refs;

		for (int t = 0; t < nrel; t++)
			nrefs += L.types[t].nfks;
		refs = palloc0(sizeof(gnn_graph_ref) * Max(nrefs, 1));
		nrefs = 0;
		GnnCoreThreadsInit();	/* gnn.threads for the lookups below */
		for (int t = 0; t < nrel; t++)
		{
			SchemaType *T = &L.types[t];

			for (int f = 0; f < T->nfks; f++)
			{
				SchemaFk   *fk = &T->fks[f];
				SchemaType *R = &L.types[fk->to];
				int32	   *ref = GnnAllocBig(sizeof(int32) * Max(T->n, 1), MCXT_ALLOC_HUGE);
				/* rows in key order: the lookups land in place */
				int32	   *found = T->rank ? GnnAllocBig(sizeof(int32) * Max(T->n, 1), MCXT_ALLOC_HUGE) : ref;
				const bool *fnull = (const bool *) fk->nulls.data;
				const int64 *fiv = (const int64 *) fk->ivals.data;
				const U128 *fuv = (const U128 *) fk->uvals.data;
				char	  **ftv = (char **) fk->tvals.data;
				const int64 *rank = T->rank;
				int64		tn = T->n;
				KeyKind		rk = R->kk;

				/*
				 * The lookups are independent (pure C, no PostgreSQL call): on
				 * every core.  -2 marks a NULL foreign key, -1 a missing key.
				 */
				CHECK_FOR_INTERRUPTS();
#pragma omp parallel for schedule(static)
				for (int64 row = 0; row < tn; row++)
					found[row] = fnull[row] ? -2 : (int32) (rk == KEY_INT ? FindIntKey(R, fiv[row]) :
															rk == KEY_UUID ? FindUuidKey(R, fuv[row]) :
															FindTextKey(R, ftv[row]));
				for (int64 row = 0; row < tn && !L.skip_dangling; row++)
					if (found[row] == -1)
					{
						char	   *key = rk == KEY_INT ? psprintf(INT64_FORMAT, fiv[row]) :
							rk == KEY_UUID ? UuidText(fuv[row]) : ftv[row];
						char	   *rowkey = RowKeyText(T, row);

						ereport(ERROR,
								(errcode(ERRCODE_FOREIGN_KEY_VIOLATION),
								 errmsg("edge %s.%s of graph \"%s\" refers to %s %s, which is not a row of %s",
										T->name, fk->column, L.name, R->key, key, R->relname),
								 errdetail("The row of %s with %s = %s has %s = %s.", T->relname, T->key, rowkey,
										   fk->column, key),
								 errhint("Add the row to %s, or pass options => '{\"skip_dangling\": true}' to leave such edges out.",
										 R->relname)));
					}
				/* a NULL foreign key, or a missing one skipped, is no edge */
#pragma omp parallel for schedule(static)
				for (int64 row = 0; row < tn; row++)
					ref[rank ? rank[row] : row] = found[row] < 0 ? -1 : found[row];
				if (found != ref)
					pfree(found);
				refs[nrefs].src_type = t;
				refs[nrefs].dst_type = fk->to;
				refs[nrefs].rel_fwd = fk->rel_fwd;
				refs[nrefs].rel_rev = fk->rel_rev;
				refs[nrefs].ref = ref;
				nrefs++;
			}
		}
		in.num_refs = nrefs;
		in.refs = refs;
		in.num_edges = 0;
	}

	Phase("resolving foreign keys");
	/* node arrays, in global order */
	{
		int64_t    *ids = GnnAllocBig(sizeof(int64) * n, MCXT_ALLOC_HUGE);
		int64_t    *keys = GnnAllocBig(sizeof(int64) * n, MCXT_ALLOC_HUGE);
		int16_t    *ntype = GnnAllocBig(sizeof(int16) * n, MCXT_ALLOC_HUGE);
		int64_t    *times = NULL;
		bool		any_text = false,
					any_time = false;
		int32_t    *esrc = palloc0(sizeof(int32) * Max(L.nrels, 1));
		int32_t    *edst = palloc0(sizeof(int32) * Max(L.nrels, 1));
		uint8_t    *ttk = palloc0(nrel);

		for (int t = 0; t < nrel; t++)
		{
			any_text |= L.types[t].kk != KEY_INT;
			any_time |= L.types[t].time_col != NULL;
			ttk[t] = L.types[t].kk != KEY_INT;
		}
		if (any_time)
			times = GnnAllocBig(sizeof(int64) * n, MCXT_ALLOC_HUGE);
		for (int t = 0; t < nrel; t++)
		{
			SchemaType *T = &L.types[t];
			const int64 *perm = T->perm;
			const int64 *ik = (const int64 *) T->ikeys.data;
			const int64 *tm = (const int64 *) T->times.data;
			int64		off = T->offset,
						tn = T->n;
			bool		isint = T->kk == KEY_INT,
						hastime = T->time_col != NULL;

#pragma omp parallel for schedule(static)
			for (int64 i = 0; i < tn; i++)
			{
				int64		g = off + i,
							row = perm ? perm[i] : i;

				ids[g] = g;
				ntype[g] = (int16) t;
				keys[g] = isint ? ik[row] : i;
				if (times)
					times[g] = hastime ? tm[row] : GNN_TIME_NONE;
			}
		}
		in.node_ids = ids;
		in.keys = keys;
		in.node_type = ntype;
		in.num_node_types = nrel;
		in.num_edge_types = L.nrels;
		in.node_time = times;
		if (L.seed_time)
		{
			SchemaType *T = &L.types[L.target];
			int64_t    *st = GnnAllocBig(sizeof(int64) * n, MCXT_ALLOC_HUGE);

			for (int64 g = 0; g < n; g++)
				st[g] = GNN_TIME_NONE;
			for (int64 i = 0; i < T->n; i++)
				st[T->offset + i] = ((int64 *) T->seed_times.data)[PERM(T, i)];
			in.seed_time = st;
		}
		for (int t = 0; t < nrel; t++)
			for (int f = 0; f < L.types[t].nfks; f++)
			{
				SchemaFk   *fk = &L.types[t].fks[f];

				esrc[fk->rel_fwd] = t;
				edst[fk->rel_fwd] = fk->to;
				esrc[fk->rel_rev] = fk->to;
				edst[fk->rel_rev] = t;
			}
		in.etype_src = esrc;
		in.etype_dst = edst;
		if (any_text)
		{
			int64_t    *koff = GnnAllocBig(sizeof(int64) * (n + 1), MCXT_ALLOC_HUGE);
			int64		bytes = 0,
						pos = 0;
			char	   *kb;

			/* sizes first, then the keys in node order (uuids: 36 characters each) */
			for (int t = 0; t < nrel; t++)
			{
				SchemaType *T = &L.types[t];

				if (T->kk == KEY_UUID)
					bytes += 36 * T->n;
				else if (T->kk == KEY_TEXT)
					for (int64 i = 0; i < T->n; i++)
						bytes += strlen(((char **) T->tkeys.data)[i]);
			}
			kb = GnnAllocBig(bytes + 37, MCXT_ALLOC_HUGE);
			for (int t = 0; t < nrel; t++)
			{
				SchemaType *T = &L.types[t];
				int64		off = T->offset;

				if (T->kk == KEY_UUID)
				{
					const U128 *uk = (const U128 *) T->ukeys.data;
					const int64 *perm = T->perm;
					int64		base = pos;

#pragma omp parallel for schedule(static)
					for (int64 i = 0; i < T->n; i++)
					{
						char		buf[37];

						koff[off + i] = base + 36 * i;
						UuidFormat(uk[perm ? perm[i] : i], buf);
						memcpy(kb + base + 36 * i, buf, 36);
					}
					pos += 36 * T->n;
					continue;
				}
				for (int64 i = 0; i < T->n; i++)
				{
					koff[off + i] = pos;
					if (T->kk == KEY_TEXT)
					{
						const char *k = ((char **) T->tkeys.data)[PERM(T, i)];
						size_t		len = strlen(k);

						memcpy(kb + pos, k, len);
						pos += len;
					}
				}
			}
			koff[n] = pos;
			in.key_off = koff;
			in.key_bytes = kb;
			in.type_text_key = ttk;
		}
	}

	/* labels and splits of the target type */
	if (L.target >= 0 && (L.label || L.split))
	{
		SchemaType *T = &L.types[L.target];
		int32_t    *labels = NULL;
		float	   *targets = NULL;
		uint8_t    *split = NULL;

		if (L.split)
		{
			split = GnnAllocBig(n, MCXT_ALLOC_HUGE | MCXT_ALLOC_ZERO);
			for (int64 i = 0; i < T->n; i++)
				split[T->offset + i] = ((uint8 *) T->splits.data)[PERM(T, i)];
			in.split = split;
		}
		if (L.label)
		{
			Oid			lt = L.label_type;
			char	  **lv = (char **) T->labels.data;

			L.regression = lt == FLOAT4OID || lt == FLOAT8OID || lt == NUMERICOID;
			if (L.regression)
			{
				targets = GnnAllocBig(sizeof(float) * n, MCXT_ALLOC_HUGE);
				for (int64 g = 0; g < n; g++)
					targets[g] = NAN;
				for (int64 i = 0; i < T->n; i++)
				{
					char	   *x = lv[PERM(T, i)];

					if (x)
					{
						double		d = strtod(x, NULL);

						if (!isfinite(d))
							ereport(ERROR,
									(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
									 errmsg("label of a row of %s is %s", T->relname, x),
									 errhint("Regression targets must be finite numbers.")));
						targets[T->offset + i] = (float) d;
					}
				}
				in.targets = targets;
			}
			else
			{
				bool		is_int = lt == INT2OID || lt == INT4OID || lt == INT8OID;
				char	  **distinct = palloc(sizeof(char *) * (T->n + 2));
				int64		nd = 0;
				StringInfoData cn;

				labels = GnnAllocBig(sizeof(int32) * n, MCXT_ALLOC_HUGE);
				for (int64 g = 0; g < n; g++)
					labels[g] = -1;
				if (is_int)
				{
					for (int64 i = 0; i < T->n; i++)
					{
						char	   *x = lv[PERM(T, i)];
						int64		l;

						if (!x)
							continue;
						l = strtoll(x, NULL, 10);
						if (l < 0 || l >= gnn_max_classes)
							ereport(ERROR,
									(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
									 errmsg("label %lld of a row of %s is %s", (long long) l, T->relname,
											l < 0 ? "negative" : "above gnn.max_classes"),
									 errhint("Integer labels are class numbers 0, 1, 2, ...; use a text label column for other values.")));
						labels[T->offset + i] = (int32) l;
					}
				}
				else
				{
					/* text, enum and boolean labels: classes in byte order of their names */
					for (int64 i = 0; i < T->n; i++)
						if (lv[PERM(T, i)])
							distinct[nd++] = lv[PERM(T, i)];
					qsort(distinct, nd, sizeof(char *), CompareStrings);
					{
						int64		u = 0;

						for (int64 i = 0; i < nd; i++)
							if (u == 0 || strcmp(distinct[u - 1], distinct[i]) != 0)
								distinct[u++] = distinct[i];
						nd = u;
					}
					if (nd > gnn_max_classes)
						ereport(ERROR,
								(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
								 errmsg("the label column \"%s\" of %s has %lld distinct values, more than gnn.max_classes (%d)",
										L.label, T->relname, (long long) nd, gnn_max_classes),
								 errhint("Use a column with fewer classes, or %s.", GnnRaiseSetting("gnn.max_classes"))));
					initStringInfo(&cn);
					for (int64 i = 0; i < nd; i++)
						appendBinaryStringInfo(&cn, distinct[i], strlen(distinct[i]) + 1);
					for (int64 i = 0; i < T->n; i++)
					{
						char	   *x = lv[PERM(T, i)];
						char	  **hit;

						if (!x)
							continue;
						hit = bsearch(&x, distinct, nd, sizeof(char *), CompareStrings);
						labels[T->offset + i] = (int32) (hit - distinct);
					}
					in.class_names = cn.data;
					in.class_names_bytes = cn.len;
				}
				in.labels = labels;
			}
		}
	}

	Phase("node arrays and labels");
	/* features: each type's slice of one block-diagonal sparse matrix */
	{
		int32		D = 0;

		for (int t = 0; t < nrel; t++)
		{
			SchemaType *T = &L.types[t];
			int32		w = GnnFeatColsFinish(&T->fc, L.max_categories);

			T->embedding = (w == 0);
			T->feat_width = T->embedding ? (int32) T->n : w + 1;	/* + the constant column */
			T->feat_offset = D;
			if ((int64) D + T->feat_width >= INT32_MAX)
				ereport(ERROR,
						(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
						 errmsg("graph \"%s\" would have more than %d feature columns", L.name, INT32_MAX - 1)));
			D += T->feat_width;
		}
		/*
		 * The features as a CSR over the nodes, in node order.  Counted here
		 * (one encoding pass into a reused chunk, no array kept), then written
		 * by the build straight into the graph's region (SchemaFillFeatures):
		 * a private copy would be touched, then copied, for nothing: some
		 * 0.6 GB at the benchmark's scale.  A part of a partitioned graph
		 * keeps its rows' features only (KeepSchemaPart), so it is written
		 * here, into room for every slot of every row (untouched room costs
		 * no memory).
		 */
		if (L.part_column)
		{
			int64		cap = 0;

			for (int t = 0; t < nrel; t++)
				cap += L.types[t].embedding ? L.types[t].n : L.types[t].n * (int64) L.types[t].feat_width;
			int64	   *fptr = GnnAllocBig(sizeof(int64) * (n + 1), MCXT_ALLOC_HUGE);
			int32	   *fidx = GnnAllocBig(sizeof(int32) * Max(cap, 1), MCXT_ALLOC_HUGE);
			float	   *fval = GnnAllocBig(sizeof(float) * Max(cap, 1), MCXT_ALLOC_HUGE);

			in.sparse_nnz = SchemaWriteFeatures(&L, nrel, n, fptr, fidx, fval, cap);
			in.sp_ptr = fptr;
			in.sp_index = fidx;
			in.sp_value = fval;
		}
		else
		{
			fill.L = &L;
			fill.nrel = nrel;
			fill.n = n;
			in.sparse_nnz = SchemaWriteFeatures(&L, nrel, n, NULL, NULL, NULL, 0);
			in.sp_fill = SchemaFillFeatures;
			in.sp_fill_arg = &fill;
		}
		in.sparse_dim = D;
	}

	Phase("encoding features");
	if (L.part_column)
		KeepSchemaPart(&L, &in);
	/* names and the description kept with the graph */
	initStringInfo(&names);
	for (int t = 0; t < nrel; t++)
		appendBinaryStringInfo(&names, L.types[t].name, strlen(L.types[t].name) + 1);
	{
		char	  **rn = palloc0(sizeof(char *) * Max(L.nrels, 1));

		for (int t = 0; t < nrel; t++)
			for (int f = 0; f < L.types[t].nfks; f++)
			{
				SchemaFk   *fk = &L.types[t].fks[f];

				rn[fk->rel_fwd] = psprintf("%s.%s", L.types[t].name, fk->column);
				rn[fk->rel_rev] = psprintf("rev_%s.%s", L.types[t].name, fk->column);
			}
		for (int r = 0; r < L.nrels; r++)
			appendBinaryStringInfo(&names, rn[r], strlen(rn[r]) + 1);
		/* tables with no foreign key between them: nodes without arcs, and one relation with none */
		if (L.nrels == 0)
			appendBinaryStringInfo(&names, "none", 5);
	}
	in.type_names = names.data;
	in.type_names_bytes = names.len;

	initStringInfo(&meta);
	appendStringInfoString(&meta, "{\"kind\":\"schema\",");
	GnnJsonKey(&meta, "target", L.target >= 0 ? L.types[L.target].name : NULL);
	appendStringInfoChar(&meta, ',');
	GnnJsonKey(&meta, "label", L.label);
	appendStringInfoChar(&meta, ',');
	GnnJsonKey(&meta, "split", L.split);
	appendStringInfoChar(&meta, ',');
	GnnJsonKey(&meta, "task", L.label ? (L.regression ? "regression" : "classification") : NULL);
	appendStringInfo(&meta, ",\"encodings\":\"%s\"", L.kept ? "kept" : "fitted");
	appendStringInfoString(&meta, ",\"types\":[");
	for (int t = 0; t < nrel; t++)
	{
		SchemaType *T = &L.types[t];

		appendStringInfo(&meta, "%s{", t ? "," : "");
		GnnJsonKey(&meta, "name", T->name);
		appendStringInfoChar(&meta, ',');
		GnnJsonKey(&meta, "table", T->relname);
		appendStringInfo(&meta, ",\"oid\":%u,", T->relid);
		GnnJsonKey(&meta, "key", T->key);
		appendStringInfoChar(&meta, ',');
		GnnJsonKey(&meta, "key_type", format_type_be(T->key_type));
		appendStringInfoChar(&meta, ',');
		GnnJsonKey(&meta, "time", T->time_col);
		if (T->is_target && L.seed_time)
		{
			appendStringInfoChar(&meta, ',');
			GnnJsonKey(&meta, "seed_time", L.seed_time);
		}
		appendStringInfo(&meta, ",\"offset\":" INT64_FORMAT ",\"count\":" INT64_FORMAT
						 ",\"feature_offset\":%d,\"feature_width\":%d,\"embedding\":%s,\"columns\":[",
						 T->offset, T->n, T->feat_offset, T->feat_width, T->embedding ? "true" : "false");
		GnnFeatColsDescribe(&T->fc, &meta, 0);
		if (T->embedding)
			appendStringInfo(&meta, "%s{\"column\":null,\"type\":null,\"encoding\":\"embedding\",\"offset\":0,\"width\":%d}",
							 T->fc.ncols ? "," : "", T->feat_width);
		else
			appendStringInfo(&meta, "%s{\"column\":null,\"type\":null,\"encoding\":\"constant\",\"offset\":%d,\"width\":1}",
							 T->fc.ncols ? "," : "", T->feat_width - 1);
		appendStringInfoString(&meta, "]}");
	}
	appendStringInfoString(&meta, "],\"edges\":[");
	{
		bool		first = true;

		for (int t = 0; t < nrel; t++)
			for (int f = 0; f < L.types[t].nfks; f++)
				for (int rev = 0; rev < 2; rev++)
				{
					SchemaFk   *fk = &L.types[t].fks[f];

					appendStringInfo(&meta, "%s{\"id\":%d,", first ? "" : ",", rev ? fk->rel_rev : fk->rel_fwd);
					first = false;
					GnnJsonKey(&meta, "name", psprintf("%s%s.%s", rev ? "rev_" : "", L.types[t].name, fk->column));
					appendStringInfoChar(&meta, ',');
					GnnJsonKey(&meta, "source", psprintf("%s.%s", L.types[t].relname, fk->column));
					appendStringInfoChar(&meta, ',');
					GnnJsonKey(&meta, "constraint", fk->conname);
					appendStringInfo(&meta, ",\"reverse\":%s}", rev ? "true" : "false");
				}
	}
	if (L.part_column)
	{
		/* (halo_hops first: GnnGraphHaloHops reads it there) */
		appendStringInfo(&meta, "],\"partition\":{\"halo_hops\":%d,", L.halo_hops);
		GnnJsonKey(&meta, "column", L.part_column);
		appendStringInfo(&meta, ",\"part\":%d}", L.part);
		appendStringInfoString(&meta, ",\"load\":{\"options\":");
	}
	else
		appendStringInfoString(&meta, "],\"load\":{\"options\":");
	/* how to load it again (a tracked graph's refresh): the tables are the types' oids */
	appendStringInfoString(&meta, JsonbToCString(NULL, &L.options->root, VARSIZE(L.options)));
	appendStringInfoString(&meta, "}}");
	in.meta = meta.data;
	in.meta_bytes = meta.len;

	/* build and register */
	memset(&proto, 0, sizeof(proto));
	if (L.target >= 0)
	{
		SchemaType *T = &L.types[L.target];

		proto.nodes_rel = T->relid;
		strlcpy(proto.id_col, T->key, sizeof(proto.id_col));
		if (L.label)
			strlcpy(proto.label_col, L.label, sizeof(proto.label_col));
		if (L.split)
			strlcpy(proto.split_col, L.split, sizeof(proto.split_col));
	}
	proto.tracked = tracked;
	proto.stored = GnnStoreTrackedToo(L.name, tracked, L.persist);
	proto.schema_graph = true;
	GnnBuildAndRegister(L.name, replace, &in, &proto, L.feature_store, NULL, SchemaReport, &L, ctx);
	if (tracked)
		GnnTrackEnd(L.name);
	Phase("building the graph");
	MemoryContextSwitchTo(old);
	{
		Datum		values[13];
		bool		nulls[13];

		if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
			elog(ERROR, "return type must be a row type");
		GnnEntryToValues(&proto, values, nulls);
		MemoryContextDelete(ctx);
		PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(tupdesc), values, nulls)));
	}
}

/* ------------------------------------------------------------------ text keys of gnn.load_graph */

/*
 * The text keys of a homogeneous graph (gnn.load_graph with text or uuid
 * ids): the same ordering and hash as a schema graph's types.
 */
struct GnnTextKeys
{
	SchemaType	t;
};

GnnTextKeys *
GnnTextKeysBuild(char **keys, int64 n, const char *column, const char *relname, MemoryContext ctx)
{
	GnnTextKeys *k = palloc0(sizeof(GnnTextKeys));

	k->t.kk = KEY_TEXT;
	k->t.key = (char *) column;
	k->t.relname = (char *) relname;
	k->t.tkeys.mcxt = ctx;
	k->t.tkeys.data = (char *) keys;
	k->t.tkeys.elem = sizeof(char *);
	k->t.tkeys.n = k->t.tkeys.cap = n;
	k->t.n = n;
	OrderKeys(&k->t);
	KeyIndex(&k->t);
	return k;
}

int64
GnnTextKeysFind(GnnTextKeys *k, const char *key)
{
	return FindTextKey(&k->t, key);
}

/* the sorted position (code) of input row r, and the row at a position */
int64
GnnTextKeysCode(GnnTextKeys *k, int64 r)
{
	return RANK(&k->t, r);
}

int64
GnnTextKeysRow(GnnTextKeys *k, int64 code)
{
	return PERM(&k->t, code);
}
