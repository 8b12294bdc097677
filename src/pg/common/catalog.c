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

#include <math.h>

PG_FUNCTION_INFO_V1(gnn_drop_model);
PG_FUNCTION_INFO_V1(gnn_deploy);

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
	/* its deployments go too: a version number reused later is another model */
	GnnCatalogExec("DELETE FROM gnn.deployments WHERE owner = $3::oid::regrole AND name = $1 "
				   "AND ($2::int IS NULL OR version = $2::int)", 3, types, values, nulls, 0);
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

/* ------------------------------------------------------------------ deployment */

/*
 * A model row's validation metric, higher better, as SQL over its task and
 * metrics: accuracy (classification), AUC (link prediction), -MAE
 * (regression); NULL for a task without one (node2vec's embeddings).
 */
#define VAL_METRIC_SQL \
	"CASE task WHEN 'node_classification' THEN (metrics->>'val_acc')::float8 " \
	"WHEN 'link_prediction' THEN (metrics->>'val_auc')::float8 " \
	"WHEN 'regression' THEN -(metrics->>'val_mae')::float8 END"

/* the (owner, name) lock gnn.train's versions are numbered under: deployments and new versions in turn */
static void
LockModelName(const char *name)
{
	Oid			types[2] = {TEXTOID, OIDOID};
	Datum		values[2] = {CStringGetTextDatum(name), ObjectIdGetDatum(GetUserId())};

	if (SPI_execute_with_args("SELECT pg_advisory_xact_lock(hashtext('gnn.models:' || $2::text || ':' || $1))",
							  2, types, values, NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not lock model \"%s\"", name);
}

/* The single int of a query over (name, owner, $3), or -1 when it returns no row or NULL. */
static int32
QueryInt(const char *sql, const char *name, int32 arg)
{
	Oid			types[3] = {TEXTOID, OIDOID, INT4OID};
	Datum		values[3] = {CStringGetTextDatum(name), ObjectIdGetDatum(GetUserId()), Int32GetDatum(arg)};
	bool		isnull;
	Datum		d;

	/* not read-only: a fresh snapshot, after the name's lock and this transaction's writes */
	if (SPI_execute_with_args(sql, 3, types, values, NULL, false, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read gnn.models");
	if (SPI_processed == 0)
		return -1;
	d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	return isnull ? -1 : DatumGetInt32(d);
}

/*
 * Make version the deployed one of the calling role's model name (SPI
 * connected, the name locked): the deployment recorded (unless it is a
 * rollback's, which marks the one it undoes instead) and the models' flags
 * set.
 */
static void
SetDeployed(const char *name, int32 version, const char *strategy, bool record)
{
	Oid			types[4] = {TEXTOID, OIDOID, INT4OID, TEXTOID};
	Datum		values[4] = {CStringGetTextDatum(name), ObjectIdGetDatum(GetUserId()), Int32GetDatum(version),
	CStringGetTextDatum(strategy)};

	if (record)
		GnnCatalogExec("INSERT INTO gnn.deployments (owner, name, version, strategy) "
					   "VALUES ($2::oid::regrole, $1, $3, $4)", 4, types, values, NULL, 0);
	GnnCatalogExec("UPDATE gnn.models SET deployed = (version = $3) WHERE owner = $2::oid::regrole AND name = $1 "
				   "AND deployed <> (version = $3)", 3, types, values, NULL, 0);
}

/* gnn.deploy(name, version, strategy) -> the deployed version */
Datum
gnn_deploy(PG_FUNCTION_ARGS)
{
	char	   *name;
	char	   *strategy = PG_ARGISNULL(2) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(2));
	int32		version = PG_ARGISNULL(1) ? 0 : PG_GETARG_INT32(1);
	int32		target = -1;
	bool		record = true;

	if (PG_ARGISNULL(0))
		ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("model name must not be NULL")));
	name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	if (!PG_ARGISNULL(1))
		GnnCheckVersion(version);
	if (strategy && strcmp(strategy, "specific") != 0 && strcmp(strategy, "most_recent") != 0 &&
		strcmp(strategy, "best_score") != 0 && strcmp(strategy, "rollback") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("unknown deployment strategy \"%s\"", strategy),
				 errhint("Accepted values: specific (with version =>), most_recent, best_score, rollback.")));
	if (version > 0 && strategy && strcmp(strategy, "specific") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("strategy \"%s\" chooses the version itself: version => %d does not apply", strategy, version),
				 errhint("Pass version => alone to deploy that version, or strategy => alone.")));
	if (version == 0 && (!strategy || strcmp(strategy, "specific") == 0))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("which version of model \"%s\" to deploy?", name),
				 errhint("Pass version => n, or strategy => 'most_recent', 'best_score' or 'rollback'.")));
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	LockModelName(name);
	if (QueryInt("SELECT max(version) FROM gnn.models WHERE name = $1 AND owner = $2::oid::regrole AND $3 = $3",
				 name, 0) < 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("model \"%s\" does not exist", name),
				 errhint("gnn.models lists the models you own; gnn.train() makes one.")));
	if (version > 0)
	{
		target = QueryInt("SELECT version FROM gnn.models WHERE name = $1 AND owner = $2::oid::regrole AND version = $3",
						  name, version);
		if (target < 0)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_OBJECT),
					 errmsg("model \"%s\" version %d does not exist", name, version),
					 errhint("gnn.models lists the versions you own.")));
		strategy = "specific";
	}
	else if (strcmp(strategy, "most_recent") == 0)
		target = QueryInt("SELECT max(version) FROM gnn.models WHERE name = $1 AND owner = $2::oid::regrole AND $3 = $3",
						  name, 0);
	else if (strcmp(strategy, "best_score") == 0)
	{
		target = QueryInt("SELECT version FROM gnn.models WHERE name = $1 AND owner = $2::oid::regrole AND $3 = $3 "
						  "AND " VAL_METRIC_SQL " IS NOT NULL ORDER BY " VAL_METRIC_SQL " DESC, version DESC LIMIT 1",
						  name, 0);
		if (target < 0)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("no version of model \"%s\" has a validation metric to compare", name),
					 errdetail("best_score compares validation accuracy, AUC or MAE; node2vec's embeddings, and "
							   "models trained without a validation split, record none."),
					 errhint("Deploy a version by number, or strategy => 'most_recent'.")));
	}
	else
	{
		/*
		 * rollback: undo the current deployment (and those of the same
		 * version just below it); the latest one before them whose version
		 * still exists is deployed again
		 */
		Oid			types[2] = {TEXTOID, OIDOID};
		Datum		values[2] = {CStringGetTextDatum(name), ObjectIdGetDatum(GetUserId())};
		int32		current = -1;
		int64		undo_from = -1;

		if (SPI_execute_with_args("SELECT d.id, d.version FROM gnn.deployments d "
								  "WHERE d.name = $1 AND d.owner = $2::oid::regrole AND d.rolled_back_at IS NULL "
								  "AND EXISTS (SELECT 1 FROM gnn.models m WHERE m.name = d.name AND m.owner = d.owner "
								  "AND m.version = d.version) ORDER BY d.id DESC",
								  2, types, values, NULL, false, 0) != SPI_OK_SELECT)
			elog(ERROR, "could not read gnn.deployments");
		for (uint64 i = 0; i < SPI_processed && target < 0; i++)
		{
			bool		isnull;
			int64		id = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &isnull));
			int32		v = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 2, &isnull));

			if (i == 0)
				current = v;
			if (v != current)
			{
				target = v;
				undo_from = id;
			}
		}
		if (target < 0)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("model \"%s\" has no earlier deployment to roll back to", name),
					 errdetail("%s", current < 0 ? "It was never deployed." :
							   psprintf("Every deployment left whose version still exists is of version %d.", current)),
					 errhint("gnn.deployments lists its deployments; deploy a version by number instead.")));
		{
			Oid			t1[3] = {TEXTOID, OIDOID, INT8OID};
			Datum		v1[3] = {CStringGetTextDatum(name), ObjectIdGetDatum(GetUserId()), Int64GetDatum(undo_from)};

			GnnCatalogExec("UPDATE gnn.deployments SET rolled_back_at = now() WHERE name = $1 AND "
						   "owner = $2::oid::regrole AND rolled_back_at IS NULL AND id > $3", 3, t1, v1, NULL, 0);
		}
		record = false;
	}
	SetDeployed(name, target, strategy, record);
	SPI_finish();
	PG_RETURN_INT32(target);
}

/*
 * After a training job has inserted version new_version of the calling
 * role's model name (SPI connected, in the job's transaction): deploy it,
 * always, or only when its validation metric beats the version calls used
 * until now (the deployed one, else the latest before it; the first version
 * has none to beat).  When it does not, that version is made the deployed
 * one (if it was not), so that calls keep using it.  Returns whether the new
 * version was deployed; *why says why not.
 */
bool
GnnDeployAfterTraining(const char *name, int32 new_version, const char *mode, const char **why)
{
	Oid			types[3] = {TEXTOID, OIDOID, INT4OID};
	Datum		values[3] = {CStringGetTextDatum(name), ObjectIdGetDatum(GetUserId()), Int32GetDatum(new_version)};
	bool		better = true;

	*why = NULL;
	LockModelName(name);
	if (strcmp(mode, "if_better") == 0)
	{
		bool		n1,
					n2,
					n3;
		double		mnew,
					mold;
		int32		incumbent;

		/*
		 * The version to beat: the deployed one, else the one calls used
		 * until now (the latest before this one)
		 */
		if (SPI_execute_with_args("SELECT (SELECT " VAL_METRIC_SQL " FROM gnn.models WHERE name = $1 AND "
								  "owner = $2::oid::regrole AND version = $3), m.metric, m.version "
								  "FROM (SELECT 1) one LEFT JOIN LATERAL (SELECT " VAL_METRIC_SQL " AS metric, version "
								  "FROM gnn.models WHERE name = $1 AND owner = $2::oid::regrole AND version <> $3 "
								  "ORDER BY deployed DESC, version DESC LIMIT 1) m ON true",
								  3, types, values, NULL, false, 1) != SPI_OK_SELECT || SPI_processed != 1)
			elog(ERROR, "could not read gnn.models");
		mnew = DatumGetFloat8(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &n1));
		mold = DatumGetFloat8(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &n2));
		incumbent = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 3, &n3));
		if (!n3)
		{
			if (n1)
			{
				better = false;
				*why = "it has no validation metric to compare";
			}
			else if (!n2 && !(mnew > mold))
			{
				better = false;
				*why = psprintf("its validation metric %.4g does not beat version %d's %.4g",
								fabs(mnew), incumbent, fabs(mold));
			}
			/* calls keep answering with the version they used: deployed now if it was not */
			if (!better)
				SetDeployed(name, incumbent, "if_better", true);
		}
	}
	if (better)
		SetDeployed(name, new_version, mode, true);
	return better;
}
