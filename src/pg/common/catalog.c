/*
 * catalog.c: writing the extension's own tables (gnn.job_history,
 * gnn.training_log, gnn.models) and sequences.
 *
 * No role may write them directly: PUBLIC has SELECT only (row-level
 * security shows each role its own rows).  The extension writes them with
 * the rights of their owner (the role that created the extension), for the
 * few fixed statements in this file's callers, and always records the
 * calling role as the owner of the row it writes.  While it does, the
 * search path is pg_catalog only, so no object of the calling role (an
 * operator, a function) can run with those rights, and the operation is
 * security-restricted as a maintenance command's is.
 *
 * Everything else (reading the user's tables, training, writing
 * embeddings) runs as the calling role.
 */
#include "common/gnn_pg.h"

#include "access/htup_details.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"

PG_FUNCTION_INFO_V1(gnn_drop_model);

/* The owner of gnn.models: the role that created the extension. */
static Oid
CatalogOwner(void)
{
	Oid			nsp = get_namespace_oid("gnn", false);
	Oid			rel = get_relname_relid("models", nsp);
	HeapTuple	tup;
	Oid			owner;

	if (!OidIsValid(rel))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("table gnn.models does not exist"),
				 errhint("Recreate the extension: DROP EXTENSION gnn; CREATE EXTENSION gnn;")));
	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(rel));
	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for relation %u", rel);
	owner = ((Form_pg_class) GETSTRUCT(tup))->relowner;
	ReleaseSysCache(tup);
	return owner;
}

/*
 * Enter catalog-writing mode.  Must be paired with GnnCatalogEnd; an error
 * in between is undone by the transaction's abort (user id and GUCs are
 * restored by it).
 */
void
GnnCatalogBegin(GnnCatalogWrite *w)
{
	Oid			owner = CatalogOwner();

	GetUserIdAndSecContext(&w->save_user, &w->save_sec);
	w->nestlevel = NewGUCNestLevel();
	(void) set_config_option("search_path", "pg_catalog, pg_temp", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	SetUserIdAndSecContext(owner, w->save_sec | SECURITY_LOCAL_USERID_CHANGE |
						   SECURITY_RESTRICTED_OPERATION);
}

void
GnnCatalogEnd(GnnCatalogWrite *w)
{
	SetUserIdAndSecContext(w->save_user, w->save_sec);
	AtEOXact_GUC(false, w->nestlevel);
}

/*
 * Run one fixed statement as the catalog's owner.  SPI must be connected.
 * Returns SPI's result code (errors are raised).
 */
int
GnnCatalogExec(const char *sql, int nargs, Oid *types, Datum *values, const char *nulls, long tcount)
{
	GnnCatalogWrite w;
	int			rc;

	GnnCatalogBegin(&w);
	rc = SPI_execute_with_args(sql, nargs, types, values, nulls, false, tcount);
	GnnCatalogEnd(&w);
	if (rc < 0)
		elog(ERROR, "SPI failed (%d) on: %s", rc, sql);
	return rc;
}

/* gnn.drop_model(name, version, if_exists): the calling role's model, all versions or one */
Datum
gnn_drop_model(PG_FUNCTION_ARGS)
{
	char	   *name;
	int32		version = 0;
	Oid			types[3] = {TEXTOID, INT4OID, OIDOID};
	Datum		values[3];
	char		nulls[4] = "   ";
	int			n;

	if (PG_ARGISNULL(0))
		ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("model name must not be NULL")));
	name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	if (!PG_ARGISNULL(1))
	{
		version = PG_GETARG_INT32(1);
		GnnCheckVersion(version);
	}
	values[0] = CStringGetTextDatum(name);
	values[1] = Int32GetDatum(version);
	nulls[1] = version > 0 ? ' ' : 'n';
	values[2] = ObjectIdGetDatum(GetUserId());
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	GnnCatalogExec("DELETE FROM gnn.models WHERE owner = $3::oid::regrole AND name = $1 "
				   "AND ($2::int IS NULL OR version = $2::int)", 3, types, values, nulls, 0);
	n = (int) SPI_processed;
	SPI_finish();
	/* its shared results go with it (a retrain under the name starts from nothing) */
	if (n > 0)
		(void) GnnCacheDrop(name, version);
	if (n == 0 && !(PG_NARGS() > 2 && !PG_ARGISNULL(2) && PG_GETARG_BOOL(2)))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 version > 0 ? errmsg("model \"%s\" version %d does not exist", name, version) :
				 errmsg("model \"%s\" does not exist", name),
				 errhint("gnn.models lists the models you own; if_exists => true drops nothing quietly.")));
	PG_RETURN_BOOL(n > 0);
}

/* version => : NULL means the latest; anything else must be a version number */
void
GnnCheckVersion(int32 version)
{
	if (version < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("version must be 1 or more (got %d)", version),
				 errhint("Omit version (or pass NULL) for the latest version.")));
}
