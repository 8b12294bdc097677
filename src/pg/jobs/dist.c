/*
 * dist.c: several PostgreSQL servers working on one job (issue #16).
 *
 * The pieces every distributed job stands on:
 *  - connections to peers and to the coordinator over libpq, made as the
 *    calling role (its name unless the conninfo says otherwise), waiting
 *    interruptibly; a role that is not superuser follows dblink's rule: its
 *    conninfo carries the password, names no password file or service
 *    (which would read the server's own ~/.pgpass or pg_service.conf), and
 *    the connection must have used a password, so no role borrows the
 *    server's OS identity, its files or a trust rule;
 *  - the rendezvous store Gloo meets through: rows of gnn.dist_store on the
 *    coordinator (set = upsert, get = poll with a timeout), keyed by job and
 *    generation, each rank writing through its own connection so every row
 *    is committed at once; its callbacks use libpq only (no ereport, no
 *    palloc: they run inside Gloo's C++ frames) and give up when the query
 *    is cancelled or a watched peer has already ended;
 *  - one rank's work (DistRank): meet the others, check that every rank
 *    holds the same kind of graph, time an allreduce, and fetch the halo's
 *    features from their owners with two alltoallv (ids out, rows back),
 *    which is what training asks of the mesh.
 *
 * gnn.dist_check(peers, ...) runs rank 0 in the calling backend and the
 * others on the peers (gnn._dist_rank over libpq), and reports per rank.
 */
#include "postgres.h"

#include "common/gnn_pg.h"
#include "dist/dist.h"
#include "dist/halo.h"
#include "sample/sample.h"
#include "nn/serialize.h"
#include "train/train_dist.h"
#include "infer/infer.h"
#include "executor/spi.h"
#include "catalog/namespace.h"
#include "utils/json.h"
#include "utils/lsyscache.h"
#include "nodes/makefuncs.h"
#include "utils/regproc.h"

#include <math.h>
#include <sys/time.h>

#include "access/htup_details.h"
#include "access/xact.h"
#include "catalog/pg_type.h"
#include "fmgr.h"
#include "funcapi.h"
#include "libpq-fe.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/latch.h"
#include "tcop/tcopprot.h"
#include "commands/dbcommands.h"
#include "postmaster/postmaster.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"

#define DIST_MAX_RANKS 64

/* ------------------------------------------------------------------ libpq */

static double
NowMs(void)
{
	struct timeval tv;

	gettimeofday(&tv, NULL);
	return tv.tv_sec * 1e3 + tv.tv_usec / 1e3;
}

/* a libpq message on one line */
static char *
OneLine(const char *m)
{
	char	   *s = pstrdup(m ? m : "");
	int			n = strlen(s);

	while (n > 0 && (s[n - 1] == '\n' || s[n - 1] == ' '))
		s[--n] = 0;
	for (char *p = s; *p; p++)
		if (*p == '\n')
			*p = ' ';
	return s;
}

/* the conninfo without its password, for messages */
static char *
ConninfoForMessage(const char *conninfo)
{
	PQconninfoOption *opts = PQconninfoParse(conninfo, NULL);
	StringInfoData b;

	if (!opts)
		return pstrdup("(unparsable conninfo)");
	initStringInfo(&b);
	for (PQconninfoOption *o = opts; o->keyword; o++)
		if (o->val && *o->val && strcmp(o->keyword, "password") != 0 &&
			(strcmp(o->keyword, "host") == 0 || strcmp(o->keyword, "hostaddr") == 0 ||
			 strcmp(o->keyword, "port") == 0 || strcmp(o->keyword, "dbname") == 0 ||
			 strcmp(o->keyword, "user") == 0))
			appendStringInfo(&b, "%s%s=%s", b.len ? " " : "", o->keyword, o->val);
	PQconninfoFree(opts);
	return b.data;
}

/*
 * dblink's rule for a role that is not superuser: it brings its own
 * password.  A password in the conninfo is the one libpq sends (it reads a
 * password file only when none is given, and DistConnect points passfile at
 * /dev/null besides); a password file or a service would be read with this
 * server's OS identity, so neither may be named.  Nothing of the server's
 * environment (PGPASSWORD, PGPASSFILE, ~/.pgpass) is used when the conninfo
 * has the password; DistConnect then checks that the server asked for it.
 * gnn.train applies the rule to its peers before it queues a job.
 */
void
GnnDistCheckConninfo(const char *conninfo, const char *who)
{
	PQconninfoOption *opts;
	const char *server_file = NULL;
	bool		has_password = false;

	if (superuser())
		return;
	if (!(opts = PQconninfoParse(conninfo, NULL)))
		return;					/* DistConnect says what is wrong with it */
	for (PQconninfoOption *o = opts; o->keyword; o++)
		if (o->val && *o->val)
		{
			has_password |= strcmp(o->keyword, "password") == 0;
			if (strcmp(o->keyword, "passfile") == 0 || strcmp(o->keyword, "service") == 0)
				server_file = o->keyword;	/* libpq's static option table */
		}
	PQconninfoFree(opts);
	if (server_file)
		ereport(ERROR,
				(errcode(ERRCODE_S_R_E_PROHIBITED_SQL_STATEMENT_ATTEMPTED),
				 errmsg("a role that is not superuser may not name a %s in the conninfo of %s", server_file, who),
				 errdetail("It would be read with this server's own identity."),
				 errhint("Give the password in the conninfo: \"host=... dbname=... password=...\".")));
	if (!has_password)
		ereport(ERROR,
				(errcode(ERRCODE_S_R_E_PROHIBITED_SQL_STATEMENT_ATTEMPTED),
				 errmsg("password is required to connect to %s", who),
				 errdetail("A role that is not superuser must give its password in the conninfo, so that it never acts with this server's own identity or files."),
				 errhint("Give the password in the conninfo: \"host=... dbname=... password=...\".")));
}

/*
 * Connect to conninfo as the calling role, waiting at most timeout_ms and
 * answering cancels; `who` names the server in errors ("peer 2 (host=...)").
 */
static PGconn *
DistConnect(const char *conninfo, const char *who, int timeout_ms, const char *role)
{
	PQconninfoOption *opts;
	char	   *perr = NULL;
	const char *kw[64];
	const char *val[64];
	int			n = 0;
	bool		has_user = false,
				has_options = false;
	PGconn	   *conn;
	double		until = NowMs() + timeout_ms;
	PostgresPollingStatusType st = PGRES_POLLING_WRITING;

	GnnDistCheckConninfo(conninfo, who);
	if (!(opts = PQconninfoParse(conninfo, &perr)))
	{
		char	   *m = OneLine(perr ? perr : "out of memory");

		if (perr)
			PQfreemem(perr);
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the conninfo of %s is invalid: %s", who, m),
				 errhint("Write a libpq connection string: \"host=... port=... dbname=...\".")));
	}
	for (PQconninfoOption *o = opts; o->keyword && n < 60; o++)
		if (o->val && *o->val)
		{
			kw[n] = pstrdup(o->keyword);
			val[n] = pstrdup(o->val);
			has_user |= strcmp(o->keyword, "user") == 0;
			/*
			 * the other server's session checks that this one is still there
			 * while it runs a rank: a caller gone before the ranks met (a
			 * cancel, a crash) ends it within a second, not at the timeout
			 */
			if (strcmp(o->keyword, "options") == 0)
			{
				val[n] = psprintf("%s -c client_connection_check_interval=1000", o->val);
				has_options = true;
			}
			n++;
		}
	PQconninfoFree(opts);
	if (!has_options)
	{
		kw[n] = "options";
		val[n++] = "-c client_connection_check_interval=1000";
	}
	if (!superuser())
	{
		kw[n] = "passfile";
		val[n++] = "/dev/null";
	}
	if (!has_user)
	{
		kw[n] = "user";
		val[n++] = role ? role : GetUserNameFromId(GetUserId(), false);
	}
	kw[n] = "fallback_application_name";
	val[n++] = "gnn distributed";
	kw[n] = NULL;
	val[n] = NULL;

	if (!(conn = PQconnectStartParams(kw, val, false)))
		ereport(ERROR, (errcode(ERRCODE_OUT_OF_MEMORY), errmsg("out of memory connecting to %s", who)));
	while (PQstatus(conn) != CONNECTION_BAD && st != PGRES_POLLING_OK && st != PGRES_POLLING_FAILED)
	{
		int			ev = st == PGRES_POLLING_READING ? WL_SOCKET_READABLE : WL_SOCKET_WRITEABLE;
		double		left = until - NowMs();
		int			rc;

		if (left <= 0)
		{
			PQfinish(conn);
			ereport(ERROR,
					(errcode(ERRCODE_SQLCLIENT_UNABLE_TO_ESTABLISH_SQLCONNECTION),
					 errmsg("could not connect to %s: no answer within %d ms", who, timeout_ms),
					 errhint("Check that the server runs and listens there, or raise the timeout.")));
		}
		rc = WaitLatchOrSocket(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH | ev, PQsocket(conn),
							   (long) Min(left, 1000), PG_WAIT_EXTENSION);
		if (rc & WL_LATCH_SET)
		{
			ResetLatch(MyLatch);
			if (InterruptPending)
			{
				PQfinish(conn);
				CHECK_FOR_INTERRUPTS();
			}
		}
		st = PQconnectPoll(conn);
	}
	if (PQstatus(conn) != CONNECTION_OK)
	{
		char	   *m = OneLine(PQerrorMessage(conn));

		PQfinish(conn);
		ereport(ERROR,
				(errcode(ERRCODE_SQLCLIENT_UNABLE_TO_ESTABLISH_SQLCONNECTION),
				 errmsg("could not connect to %s: %s", who, m),
				 errhint("Check the peer's conninfo, that it runs and listens there, and the role's password.")));
	}
	if (!superuser() && !PQconnectionUsedPassword(conn))
	{
		PQfinish(conn);
		ereport(ERROR,
				(errcode(ERRCODE_S_R_E_PROHIBITED_SQL_STATEMENT_ATTEMPTED),
				 errmsg("password is required to connect to %s", who),
				 errdetail("A role that is not superuser must authenticate to other servers with a password, so that it never acts with this server's own identity."),
				 errhint("Give the password in the conninfo (password=...), and make the server there ask for it.")));
	}
	return conn;
}

/* wait for conn's result, answering cancels; NULL when until passed */
static PGresult *
DistWaitResult(PGconn *conn, double until)
{
	/*
	 * Read what has arrived before looking at the clock: when an earlier
	 * peer used up the deadline, a peer whose server already closed the
	 * connection must still be seen as gone, not as slow.
	 */
	while (PQconsumeInput(conn) && PQisBusy(conn))
	{
		double		left = until - NowMs();
		int			rc;

		if (left <= 0)
			return NULL;
		rc = WaitLatchOrSocket(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH | WL_SOCKET_READABLE,
							   PQsocket(conn), (long) Min(left, 1000), PG_WAIT_EXTENSION);
		if (rc & WL_LATCH_SET)
		{
			ResetLatch(MyLatch);
			CHECK_FOR_INTERRUPTS();
		}
	}
	return PQgetResult(conn);
}

/* a rank's options: on gnn.dist_host (loopback when unset), keys under prefix */
static void
DistOptions(gnn_dist_options *o, int rank, int size, const char *prefix, int timeout_ms)
{
	memset(o, 0, sizeof(*o));
	o->rank = rank;
	o->size = size;
	o->host = gnn_dist_host && *gnn_dist_host ? gnn_dist_host : "127.0.0.1";
	o->prefix = prefix;
	o->timeout_ms = timeout_ms;
}

/* a peer rank's one-row answer, or an error naming it (late: after the ranks met) */
static PGresult *
PeerAnswer(PGconn *conn, const char *name, int rank, double until, int timeout)
{
	PGresult   *res = DistWaitResult(conn, until);

	if (!res)
		ereport(ERROR,
				(errcode(ERRCODE_QUERY_CANCELED),
				 errmsg("%s did not answer within %d ms after the ranks met", name, timeout)));
	if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1)
	{
		char	   *m = OneLine(PQresultErrorMessage(res));

		PQclear(res);
		ereport(ERROR,
				(errcode(ERRCODE_CONNECTION_FAILURE),
				 errmsg("rank %d on %s failed", rank, name),
				 errdetail_internal("%s", m)));
	}
	return res;
}

/* close peers' connections, cancelling the queries still running there */
static void
ClosePeers(PGconn **peers, int n)
{
	for (int i = 0; peers && i < n; i++)
		if (peers[i])
		{
			if (PQisBusy(peers[i]))
			{
				PGcancel   *c = PQgetCancel(peers[i]);
				char		eb[256];

				if (c)
				{
					(void) PQcancel(c, eb, sizeof(eb));
					PQfreeCancel(c);
				}
			}
			PQfinish(peers[i]);
			peers[i] = NULL;
		}
}

/*
 * The coordinator's connection to the store (on its own server, as peers
 * reach it).  It holds job's advisory lock (a session lock: it goes when
 * that connection closes, however the coordinator ends) and sweeps the
 * role's rows of jobs whose lock no one holds: a coordinator that died (a
 * crash, a restart) never cleared them, and gnn.job_ranks would show its
 * ranks for good.  Best effort: a store this fails on fails the job's first
 * set or get instead.  (A lock not had is a hash shared with a live job,
 * whose lock keeps both jobs' rows.)
 */
static PGconn *
OpenStore(const char *coord, int timeout_ms, const char *role, const char *job)
{
	PGconn	   *store = DistConnect(coord, "the coordinator (this server, as peers reach it)", timeout_ms, role);
	const char *vals[1] = {job};

	PQclear(PQexecParams(store, "SELECT pg_try_advisory_lock(hashtext('gnn.dist_store'), hashtext($1))", 1, NULL,
						 vals, NULL, NULL, 0));
	PQclear(PQexecParams(store, "DELETE FROM gnn.dist_store WHERE job <> $1 "
						 "AND pg_try_advisory_xact_lock(hashtext('gnn.dist_store'), hashtext(job))", 1, NULL, vals,
						 NULL, NULL, 0));
	return store;
}

/* the job's rows of the store go, and the connection to it */
static void
CloseStore(PGconn *store, const char *job)
{
	const char *vals[1] = {job};

	if (!store)
		return;
	PQclear(PQexecParams(store, "DELETE FROM gnn.dist_store WHERE job = $1", 1, NULL, vals, NULL, NULL, 0));
	PQfinish(store);
}

/* ------------------------------------------------------------------ the store over gnn.dist_store */

typedef struct TableStore
{
	PGconn	   *conn;			/* to the coordinator */
	const char *job;			/* "<job key>/<generation>" */
	/* peers whose early end fails a wait (the coordinator's rank 0) */
	PGconn	  **watch;
	int			nwatch;
	const char *const *watch_names;
	int			peer_failed;	/* the watched peer that ended, -1: none */
	char		peer_msg[512];	/* its error */
	bool		meshing;		/* the ranks are connecting (gnn_dist_store.meshing) */
} TableStore;

/* (libpq/libpq.h's; that header pulls in GSSAPI's, which the server's build may need and this one lacks) */
extern bool pq_check_connection(void);

/*
 * This call's client gone: a peer's rank whose coordinator gave up (its
 * cancel can come while this backend still reads the call, where
 * PostgreSQL drops it; the closed connection stays), even while the ranks
 * connect: the coordinator will not.  Or this call cancelled, but not while
 * the ranks connect: a rank that gave up then would leave the others
 * waiting in the engine; it stops once connected (DistOpen).  (Where the
 * platform cannot report a closed socket, only the cancel; the check
 * resets this backend's latch, as CHECK_FOR_INTERRUPTS may: the store's
 * waits sleep, they do not wait on it.)
 */
static bool
Cancelled(TableStore *ts, char *msg, size_t msglen)
{
	if (MyProcPort && whereToSendOutput == DestRemote && WaitEventSetCanReportClosed() && !pq_check_connection())
	{
		snprintf(msg, msglen, "this call's client closed its connection");
		return true;
	}
	if (!ts->meshing && GnnInterruptShouldStop(NULL))
	{
		snprintf(msg, msglen, "cancelled");
		return true;
	}
	return false;
}

static void
StoreMeshing(void *arg, int on)
{
	((TableStore *) arg)->meshing = on != 0;
}

/* (a rank that failed to meet: its own keys, which the coordinator would not clear after it ended) */
static void
StoreForget(void *arg, const char *key)
{
	TableStore *ts = arg;
	const char *vals[2] = {ts->job, key};

	PQclear(PQexecParams(ts->conn, "DELETE FROM gnn.dist_store WHERE job = $1 AND key = $2", 2, NULL, vals, NULL,
						 NULL, 0));
}

static gnn_dist_store_status
StoreSet(void *arg, const char *key, const void *data, size_t len, char *msg, size_t msglen)
{
	TableStore *ts = arg;
	const char *vals[3] = {ts->job, key, data};
	int			lens[3] = {0, 0, (int) len};
	int			fmts[3] = {0, 0, 1};
	PGresult   *res;
	bool		ok;

	if (Cancelled(ts, msg, msglen))
		return GNN_DIST_STORE_ERROR;
	res = PQexecParams(ts->conn,
					   "INSERT INTO gnn.dist_store (job, key, value) VALUES ($1, $2, $3) "
					   "ON CONFLICT (job, key) DO UPDATE SET value = excluded.value",
					   3, NULL, vals, lens, fmts, 0);
	ok = res && PQresultStatus(res) == PGRES_COMMAND_OK;
	if (!ok)
		snprintf(msg, msglen, "%s", PQerrorMessage(ts->conn));
	PQclear(res);
	return ok ? GNN_DIST_STORE_OK : GNN_DIST_STORE_ERROR;
}

/* a watched peer that has already answered (with an error, as it must not before meeting) */
static bool
PeerEnded(TableStore *ts, char *msg, size_t msglen)
{
	for (int i = 0; i < ts->nwatch; i++)
	{
		PGconn	   *c = ts->watch[i];

		if (!c)
			continue;
		if (PQconsumeInput(c) && PQisBusy(c))
			continue;
		{
			PGresult   *res = PQgetResult(c);
			const char *prim = res ? PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY) : NULL;

			snprintf(ts->peer_msg, sizeof(ts->peer_msg), "%s",
					 prim ? prim : PQerrorMessage(c)[0] ? PQerrorMessage(c) : "it ended before the ranks met");
			PQclear(res);
		}
		ts->peer_failed = i;
		snprintf(msg, msglen, "%s ended before the ranks met: %s", ts->watch_names[i], ts->peer_msg);
		return true;
	}
	return false;
}

static gnn_dist_store_status
StoreGet(void *arg, const char *key, int timeout_ms, void **data, size_t *len, char *msg, size_t msglen)
{
	TableStore *ts = arg;
	const char *vals[2] = {ts->job, key};
	double		until = NowMs() + timeout_ms;
	int			sleep_us = 1000;

	for (;;)
	{
		PGresult   *res;

		if (Cancelled(ts, msg, msglen))
			return GNN_DIST_STORE_ERROR;
		res = PQexecParams(ts->conn, "SELECT value FROM gnn.dist_store WHERE job = $1 AND key = $2",
						   2, NULL, vals, NULL, NULL, 1);
		if (!res || PQresultStatus(res) != PGRES_TUPLES_OK)
		{
			snprintf(msg, msglen, "%s", PQerrorMessage(ts->conn));
			PQclear(res);
			return GNN_DIST_STORE_ERROR;
		}
		if (PQntuples(res) == 1)
		{
			size_t		n = PQgetlength(res, 0, 0);

			*data = malloc(n ? n : 1);
			if (!*data)
			{
				PQclear(res);
				snprintf(msg, msglen, "out of memory");
				return GNN_DIST_STORE_ERROR;
			}
			memcpy(*data, PQgetvalue(res, 0, 0), n);
			*len = n;
			PQclear(res);
			return GNN_DIST_STORE_OK;
		}
		PQclear(res);
		if (PeerEnded(ts, msg, msglen))
			return GNN_DIST_STORE_ERROR;
		if (NowMs() >= until)
			return GNN_DIST_STORE_TIMEOUT;
		pg_usleep(sleep_us);
		sleep_us = Min(sleep_us * 2, 20000);
	}
}

/*
 * gnn_dist_open over the table store: the store ignores a cancel while the
 * ranks connect (StoreMeshing), and a cancel that came meanwhile is raised
 * here, once connected, the handle closed (the others see it go).
 */
static gnn_status
DistOpen(const gnn_dist_options *o, gnn_dist_store *st, gnn_dist **d, gnn_error *err)
{
	gnn_status	rc;

	st->meshing = StoreMeshing;
	/* a rank that fails to meet takes its keys out (the engine names them) */
	st->forget = StoreForget;
	rc = gnn_dist_open(psprintf("%s/gnn_dist.so", pkglib_path), o, st, d, err);
	if (rc == GNN_OK && GnnInterruptShouldStop(NULL))
	{
		/* (the engine closes no pairs within a moment of their making: gloo.cc's pairs_settle) */
		gnn_dist_close(*d);
		*d = NULL;
		CHECK_FOR_INTERRUPTS();
		/* (interrupts held off: the caller fails as on a cancel) */
		return gnn_error_set(err, GNN_ERR_LIMIT, "cancelled while the ranks connected");
	}
	return rc;
}

/* ------------------------------------------------------------------ one rank's work */

typedef struct RankResult
{
	double		meet_ms;
	double		allreduce_ms;
	int64		halo;			/* halo rows fetched */
	int64		halo_missing;	/* halo nodes no rank owns */
	double		halo_sum;		/* of every fetched value */
	int32		part;
	int32		feat_dim;
} RankResult;

static void
DistFail(const char *what, int rank, const gnn_error *err)
{
	ereport(ERROR,
			(errcode(err->status == GNN_ERR_LIMIT ? ERRCODE_QUERY_CANCELED :
					 err->status == GNN_ERR_UNSUPPORTED ? ERRCODE_FEATURE_NOT_SUPPORTED :
					 ERRCODE_CONNECTION_FAILURE),
			 errmsg("rank %d: %s: %s", rank, what, err->msg),
			 err->status == GNN_ERR_UNSUPPORTED ?
			 errhint("Install libgloo-dev and build gnn with it (make deps; make install) on every server.") :
			 err->status == GNN_ERR_BACKEND || err->status == GNN_ERR_LIMIT ?
			 errhint("Every rank must reach the others' addresses (gnn.dist_host) and the coordinator within the timeout.") :
			 errhint("Every server needs its part loaded as the coordinator's: the same tables, times and options.")));
}

/*
 * The halo's features from their owners, by the plan training uses (halo.c:
 * nodes named by type and key, owners asked when known, every rank when
 * not); fills r->halo and halo_sum.  A halo node no rank owns, or two do,
 * fails the check naming it, as it would fail a job.
 */
static void
FetchHalo(gnn_dist *d, int rank, const gnn_graph *g, RankResult *r)
{
	int64		n = g->num_nodes;
	int32		dim = g->feat_dim;
	float	   *x = palloc_extended(sizeof(float) * Max(n, 1) * Max(dim, 1), MCXT_ALLOC_HUGE);
	gnn_halo_plan plan;
	gnn_error	err;
	gnn_status	st;

	if (gnn_graph_feat_range(g, 0, n, x, &err) != GNN_OK)
		ereport(ERROR, (errcode(ERRCODE_DATA_EXCEPTION), errmsg("rank %d: reading features: %s", rank, err.msg)));
	st = gnn_halo_plan_build(d, g, &plan, &err);
	if (st == GNN_OK)
		st = gnn_halo_forward(&plan, x, dim, &err);
	if (st != GNN_OK)
	{
		gnn_halo_plan_free(&plan);
		if (err.status == GNN_ERR_DANGLING || err.status == GNN_ERR_DUPLICATE)
			ereport(ERROR,
					(errcode(err.status == GNN_ERR_DUPLICATE ? ERRCODE_UNIQUE_VIOLATION : ERRCODE_FOREIGN_KEY_VIOLATION),
					 errmsg("rank %d: %s", rank, err.msg),
					 errhint("Each node belongs to one part; load every server's part from the same assignment, one part a server.")));
		DistFail("fetching the halo's features", rank, &err);
	}
	r->halo = plan.nrecv;
	r->halo_missing = 0;
	r->halo_sum = 0;
	for (int64 k = 0; k < plan.nrecv; k++)
		for (int32 j = 0; j < dim; j++)
			r->halo_sum += x[(int64) plan.recv_idx[k] * dim + j];
	gnn_halo_plan_free(&plan);
	pfree(x);
}

/*
 * One rank: meet the others through the coordinator's store, check the
 * graphs agree, time an allreduce of `floats` values, fetch the halo.
 */
static void
DistRank(const char *job, int rank, int size, PGconn *store_conn, PGconn **watch, const char *const *watch_names,
		 int nwatch, int timeout_ms, const char *graph, int64 floats, RankResult *r)
{
	TableStore	ts = {store_conn, job, watch, nwatch, watch_names, -1, ""};
	gnn_dist_store st = {&ts, StoreSet, StoreGet};
	gnn_dist_options o;
	gnn_dist   *d = NULL;
	gnn_error	err;
	double		t0;
	GnnGraphRef ref;
	bool		have_graph = graph != NULL;

	memset(r, 0, sizeof(*r));
	r->part = -1;
	memset(&ref, 0, sizeof(ref));
	if (have_graph)
	{
		GnnGraphAcquireView(graph, &ref);
		if (!ref.g.node_part)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("rank %d: graph \"%s\" is not one part of a partitioned graph", rank, graph),
					 errhint("Load each server's part with gnn.load_graph(..., part_column => ..., part => k).")));
		if (ref.g.feat_kind == GNN_FEAT_NONE)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("rank %d: graph \"%s\" has no features to fetch", rank, graph)));
		r->part = ref.g.part;
		r->feat_dim = ref.g.feat_dim;
	}
	DistOptions(&o, rank, size, job, timeout_ms);
	t0 = NowMs();
	if (DistOpen(&o, &st, &d, &err) != GNN_OK)
	{
		CHECK_FOR_INTERRUPTS();
		if (have_graph)
			GnnGraphRelease(&ref);
		/* a peer that failed before meeting: its own error is the one to see */
		if (ts.peer_failed >= 0)
			ereport(ERROR,
					(errcode(ERRCODE_CONNECTION_FAILURE),
					 errmsg("rank %d on %s failed: %s", ts.peer_failed + 1, watch_names[ts.peer_failed], ts.peer_msg),
					 errhint("Each server needs gnn, the graph (one part per server, loaded by the same role), and a way back to the coordinator.")));
		DistFail("meeting the other ranks", rank, &err);
	}
	r->meet_ms = NowMs() - t0;
	PG_TRY();
	{
		int32		mine[2] = {r->part, r->feat_dim};
		int32	   *all = palloc(sizeof(int32) * 2 * size);
		int32	   *part_of_rank = palloc(sizeof(int32) * size);
		float	   *buf;

		/* every rank's part and width */
		if (gnn_dist_allgather(d, mine, sizeof(mine), all, &err) != GNN_OK)
			DistFail("exchanging the graphs' shapes", rank, &err);
		for (int q = 0; q < size; q++)
		{
			part_of_rank[q] = all[2 * q];
			if (have_graph && all[2 * q + 1] != r->feat_dim)
				ereport(ERROR,
						(errcode(ERRCODE_DATATYPE_MISMATCH),
						 errmsg("rank %d's graph has features of width %d, rank %d's of width %d", q,
								all[2 * q + 1], rank, r->feat_dim),
						 errhint("Load every part from the same node table and feature column.")));
			for (int p = 0; p < q; p++)
				if (have_graph && part_of_rank[p] == part_of_rank[q])
					ereport(ERROR,
							(errcode(ERRCODE_UNIQUE_VIOLATION),
							 errmsg("ranks %d and %d both hold part %d", p, q, part_of_rank[q]),
							 errhint("Load a different part on each server.")));
		}
		/* an allreduce: every rank's value known, the sum exact */
		buf = palloc(sizeof(float) * Max(floats, 1));
		for (int64 i = 0; i < floats; i++)
			buf[i] = (float) (rank + 1);
		t0 = NowMs();
		if (gnn_dist_allreduce(d, buf, floats, GNN_DIST_F32, &err) != GNN_OK)
			DistFail("allreduce", rank, &err);
		r->allreduce_ms = NowMs() - t0;
		for (int64 i = 0; i < floats; i++)
			if (buf[i] != (float) (size * (size + 1) / 2))
				ereport(ERROR,
						(errcode(ERRCODE_DATA_CORRUPTED),
						 errmsg("rank %d: allreduce gave %g at %lld, not %d", rank, (double) buf[i], (long long) i,
								size * (size + 1) / 2)));
		if (have_graph)
			FetchHalo(d, rank, &ref.g, r);
		if (gnn_dist_barrier(d, &err) != GNN_OK)
			DistFail("the final barrier", rank, &err);
	}
	PG_FINALLY();
	{
		gnn_dist_close(d);
		if (have_graph)
			GnnGraphRelease(&ref);
	}
	PG_END_TRY();
}

/* ------------------------------------------------------------------ SQL */

PG_FUNCTION_INFO_V1(gnn_dist_rank_fn);
PG_FUNCTION_INFO_V1(gnn_dist_check);

static int
TimeoutArg(FunctionCallInfo fcinfo, int i)
{
	int			t = PG_ARGISNULL(i) ? 30000 : PG_GETARG_INT32(i);

	if (t < 100 || t > 3600 * 1000)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("timeout_ms must be between 100 and 3600000, not %d", t)));
	return t;
}

/*
 * _dist_rank(job, rank, size, coordinator, timeout_ms, graph, floats) ->
 * (server, engine, meet_ms, allreduce_ms, part, halo, halo_missing, halo_sum):
 * one peer's rank of gnn.dist_check, run on that peer.
 */
Datum
gnn_dist_rank_fn(PG_FUNCTION_ARGS)
{
	const char *job,
			   *coord,
			   *graph;
	int			rank,
				size,
				timeout;
	int64		floats;
	PGconn	   *conn = NULL;
	RankResult	r;
	TupleDesc	td;
	Datum		values[8];
	bool		nulls[8] = {false};

	for (int i = 0; i < 4; i++)
		if (PG_ARGISNULL(i))
			ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("job, rank, size and coordinator must not be NULL")));
	job = text_to_cstring(PG_GETARG_TEXT_PP(0));
	rank = PG_GETARG_INT32(1);
	size = PG_GETARG_INT32(2);
	coord = text_to_cstring(PG_GETARG_TEXT_PP(3));
	timeout = TimeoutArg(fcinfo, 4);
	graph = PG_ARGISNULL(5) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(5));
	floats = PG_ARGISNULL(6) ? 0 : PG_GETARG_INT64(6);
	if (size < 1 || size > DIST_MAX_RANKS || rank < 0 || rank >= size || floats < 0 || floats > 256 * 1024 * 1024)
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("invalid rank %d of %d", rank, size)));
	conn = DistConnect(coord, "the coordinator", timeout, NULL);
	PG_TRY();
	{
		DistRank(job, rank, size, conn, NULL, NULL, 0, timeout, graph, floats, &r);
	}
	PG_FINALLY();
	{
		PQfinish(conn);
	}
	PG_END_TRY();
	if (get_call_result_type(fcinfo, NULL, &td) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	values[0] = CStringGetTextDatum(psprintf("%s (%s)", GetConfigOption("cluster_name", true, false) &&
											 *GetConfigOption("cluster_name", true, false) ?
											 GetConfigOption("cluster_name", true, false) : "postgres",
											 PG_VERSION_STR));
	values[1] = CStringGetTextDatum("gloo");
	values[2] = Float8GetDatum(r.meet_ms);
	values[3] = Float8GetDatum(r.allreduce_ms);
	values[4] = Int32GetDatum(r.part);
	nulls[4] = r.part < 0;
	values[5] = Int64GetDatum(r.halo);
	values[6] = Int64GetDatum(r.halo_missing);
	values[7] = Float8GetDatum(r.halo_sum);
	nulls[5] = nulls[6] = nulls[7] = graph == NULL;
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(td), values, nulls)));
}

static char *
RandomKey(void)
{
	uint8		b[12];
	StringInfoData s;

	if (!pg_strong_random(b, sizeof(b)))
		ereport(ERROR, (errcode(ERRCODE_INTERNAL_ERROR), errmsg("could not generate a job key")));
	initStringInfo(&s);
	for (int i = 0; i < (int) sizeof(b); i++)
		appendStringInfo(&s, "%02x", b[i]);
	return s.data;
}

/* the conninfo peers reach this server by: the coordinator argument, else this server's socket */
static char *
CoordinatorConninfo(const char *given)
{
	const char *dirs = GetConfigOption("unix_socket_directories", false, false);
	char	   *dir = pstrdup(dirs ? dirs : "/tmp");
	char	   *comma = strchr(dir, ',');

	if (given && *given)
		return pstrdup(given);
	if (comma)
		*comma = 0;
	return psprintf("host='%s' port=%d dbname='%s'", dir, PostPortNumber, get_database_name(MyDatabaseId));
}

/*
 * dist_check(peers, graph, coordinator, timeout_ms, megabytes) -> a row per
 * rank: whether every server is reachable as the calling role, has gnn with
 * the engine, meets the others, sums an allreduce right, and (with a graph:
 * one part per server) fetches its halo's features from their owners.
 */
Datum
gnn_dist_check(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	ArrayType  *arr;
	Datum	   *elems;
	bool	   *enulls;
	int			npeers,
				size,
				timeout;
	const char *graph,
			   *coord;
	char	   *job;
	int64		floats;
	PGconn	  **peers;
	char	  **names;
	double	   *connect_ms;
	PGconn	   *store = NULL;
	RankResult	r0;
	double		until;

	if (PG_ARGISNULL(0))
		ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("peers must not be NULL")));
	arr = PG_GETARG_ARRAYTYPE_P(0);
	deconstruct_array(arr, TEXTOID, -1, false, TYPALIGN_INT, &elems, &enulls, &npeers);
	size = npeers + 1;
	if (npeers < 1 || size > DIST_MAX_RANKS)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("a distributed check needs 1 to %d peers, not %d", DIST_MAX_RANKS - 1, npeers),
				 errhint("Pass the peers' conninfos: ARRAY['host=... port=... dbname=...', ...].")));
	graph = PG_ARGISNULL(1) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(1));
	coord = CoordinatorConninfo(PG_ARGISNULL(2) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(2)));
	timeout = TimeoutArg(fcinfo, 3);
	floats = PG_ARGISNULL(4) ? 262144 : (int64) PG_GETARG_INT32(4) * 262144;
	if (floats < 0 || floats > 256 * 1024 * 1024)
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("megabytes must be between 0 and 1024")));
	InitMaterializedSRF(fcinfo, 0);
	job = psprintf("check-%s/g0", RandomKey());
	peers = palloc0(sizeof(PGconn *) * npeers);
	names = palloc0(sizeof(char *) * npeers);
	connect_ms = palloc0(sizeof(double) * npeers);
	for (int i = 0; i < npeers; i++)
	{
		if (enulls[i])
			ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("peer %d's conninfo is NULL", i + 1)));
		names[i] = psprintf("peer %d (%s)", i + 1, ConninfoForMessage(TextDatumGetCString(elems[i])));
	}
	PG_TRY();
	{
		/* everyone reachable first: a wrong peer fails before any rank waits */
		store = OpenStore(coord, timeout, NULL, job);
		for (int i = 0; i < npeers; i++)
		{
			double		t0 = NowMs();

			peers[i] = DistConnect(TextDatumGetCString(elems[i]), names[i], timeout, NULL);
			connect_ms[i] = NowMs() - t0;
		}
		/* start the peers' ranks, then take rank 0 here */
		for (int i = 0; i < npeers; i++)
		{
			char		rk[16],
						sz[16],
						tm[16],
						fl[24];
			const char *vals[7] = {job, rk, sz, coord, tm, graph, fl};

			snprintf(rk, sizeof(rk), "%d", i + 1);
			snprintf(sz, sizeof(sz), "%d", size);
			snprintf(tm, sizeof(tm), "%d", timeout);
			snprintf(fl, sizeof(fl), INT64_FORMAT, floats);
			if (!PQsendQueryParams(peers[i],
								   "SELECT * FROM gnn._dist_rank($1, $2::int, $3::int, $4, $5::int, $6, $7::bigint)",
								   7, NULL, vals, NULL, NULL, 0))
				ereport(ERROR,
						(errcode(ERRCODE_CONNECTION_FAILURE),
						 errmsg("could not start rank %d on %s", i + 1, names[i]),
						 errdetail_internal("%s", OneLine(PQerrorMessage(peers[i])))));
		}
		DistRank(job, 0, size, store, peers, (const char *const *) names, npeers, timeout, graph, floats, &r0);
		/* rank 0's row, then each peer's */
		{
			Datum		values[10];
			bool		nulls[10] = {false};

			values[0] = Int32GetDatum(0);
			values[1] = CStringGetTextDatum("this server");
			values[2] = CStringGetTextDatum("gloo");
			nulls[3] = true;
			values[4] = Float8GetDatum(r0.meet_ms);
			values[5] = Float8GetDatum(r0.allreduce_ms);
			values[6] = Int32GetDatum(r0.part);
			nulls[6] = r0.part < 0;
			values[7] = Int64GetDatum(r0.halo);
			values[8] = Int64GetDatum(r0.halo_missing);
			values[9] = Float8GetDatum(r0.halo_sum);
			nulls[7] = nulls[8] = nulls[9] = graph == NULL;
			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
		}
		until = NowMs() + timeout;
		for (int i = 0; i < npeers; i++)
		{
			PGresult   *res = PeerAnswer(peers[i], names[i], i + 1, until, timeout);
			Datum		values[10];
			bool		nulls[10] = {false};

			values[0] = Int32GetDatum(i + 1);
			values[1] = CStringGetTextDatum(names[i]);
			values[2] = CStringGetTextDatum(PQgetvalue(res, 0, 1));
			values[3] = Float8GetDatum(connect_ms[i]);
			values[4] = Float8GetDatum(strtod(PQgetvalue(res, 0, 2), NULL));
			values[5] = Float8GetDatum(strtod(PQgetvalue(res, 0, 3), NULL));
			for (int c = 4; c <= 7; c++)
				nulls[c + 2] = PQgetisnull(res, 0, c);
			values[6] = Int32GetDatum(nulls[6] ? 0 : atoi(PQgetvalue(res, 0, 4)));
			values[7] = Int64GetDatum(nulls[7] ? 0 : strtoll(PQgetvalue(res, 0, 5), NULL, 10));
			values[8] = Int64GetDatum(nulls[8] ? 0 : strtoll(PQgetvalue(res, 0, 6), NULL, 10));
			values[9] = Float8GetDatum(nulls[9] ? 0 : strtod(PQgetvalue(res, 0, 7), NULL));
			PQclear(res);
			while ((res = PQgetResult(peers[i])) != NULL)
				PQclear(res);
			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
		}
	}
	PG_FINALLY();
	{
		/* the job's rows go; a peer still running is cancelled */
		ClosePeers(peers, npeers);
		CloseStore(store, job);
	}
	PG_END_TRY();
	return (Datum) 0;
}


struct GnnDistJob
{
	bool		active;
	int			npeers;
	int			size;
	int			timeout_ms;
	char	   *job;
	char	   *coord;
	PGconn	   *store;
	PGconn	  **peers;
	char	  **names;
	gnn_dist   *d;
	gnn_dist   *d_batches;		/* minibatch jobs: the batches' exchanges (cfg.dist_batches) */
	TableStore	ts;
	gnn_dist_store st;
};

/* ------------------------------------------------------------------ training over several servers */

/*
 * A job's ranks from the coordinator's worker (rank 0): connections to the
 * coordinator's store and to each peer, the peers' ranks started
 * (gnn._train_rank over libpq, as the job's role), the mesh met.  One per
 * worker process: the progress callback and the error path find it here.
 */
static GnnDistJob *current_job = NULL;

/* the peer calls: gnn.train's 14 arguments, then the job's */
#define TRAIN_RANK_SQL \
	"SELECT * FROM gnn._train_rank($1, $2, $3, $4, $5::int, $6::int, $7::int, $8::float8, $9::float8, " \
	"$10::float8, $18, $11::int, false, $12::jsonb, $13, $14::int, $15::int, $16, $17::int)"

void
GnnDistJobStart(const GnnTrainRequest *r, int64 job_id, GnnDistJob *dj)
{
	char	   *list = pstrdup(r->dist_peers);
	char	   *line,
			   *save = NULL;
	int			i = 0;
	gnn_dist_options o;
	gnn_error	err;

	MemoryContext old;
	bool		xact = !IsTransactionState();
	char	   *role;

	memset(dj, 0, sizeof(*dj));
	/* what needs the catalogs, in a transaction of its own (a worker runs the job outside one) */
	if (xact)
		StartTransactionCommand();
	old = MemoryContextSwitchTo(TopMemoryContext);
	role = pstrdup(GetUserNameFromId(GetUserId(), false));
	(void) superuser();			/* remembered for the connections' password check */
	dj->coord = CoordinatorConninfo(r->dist_coordinator);
	dj->npeers = r->dist_npeers;
	dj->size = r->dist_npeers + 1;
	dj->timeout_ms = r->dist_timeout_ms;
	dj->job = psprintf("job%lld-%s/g0", (long long) job_id, RandomKey());
	dj->peers = palloc0(sizeof(PGconn *) * dj->npeers);
	dj->names = palloc0(sizeof(char *) * dj->npeers);
	for (line = strtok_r(list, "\n", &save); line && i < dj->npeers; line = strtok_r(NULL, "\n", &save), i++)
		dj->names[i] = psprintf("peer %d (%s)", i + 1, ConninfoForMessage(line));
	MemoryContextSwitchTo(old);
	if (xact)
		CommitTransactionCommand();
	dj->active = true;
	current_job = dj;
	/* everyone reachable first */
	dj->store = OpenStore(dj->coord, dj->timeout_ms, role, dj->job);
	list = pstrdup(r->dist_peers);
	save = NULL;
	i = 0;
	for (line = strtok_r(list, "\n", &save); line && i < dj->npeers; line = strtok_r(NULL, "\n", &save), i++)
		dj->peers[i] = DistConnect(line, dj->names[i], dj->timeout_ms, role);
	for (i = 0; i < dj->npeers; i++)
	{
		char		hid[16],
					lay[16],
					ep[16],
					lr[32],
					wd[32],
					dr[32],
					sd[24],
					rk[16],
					sz[16],
					tm[16];
		const char *vals[18] = {r->graph, r->model, r->task, r->model_name, hid, lay, ep, lr, wd, dr, sd,
			r->dist_options[0] ? r->dist_options : "{}", dj->job, rk, sz, dj->coord, tm, r->device};

		snprintf(hid, sizeof(hid), "%d", r->hidden);
		snprintf(lay, sizeof(lay), "%d", r->layers);
		snprintf(ep, sizeof(ep), "%d", r->epochs);
		snprintf(lr, sizeof(lr), "%.17g", r->lr);
		snprintf(wd, sizeof(wd), "%.17g", r->weight_decay);
		snprintf(dr, sizeof(dr), "%.17g", r->dropout);
		snprintf(sd, sizeof(sd), "%lld", (long long) r->seed);
		snprintf(rk, sizeof(rk), "%d", i + 1);
		snprintf(sz, sizeof(sz), "%d", dj->size);
		snprintf(tm, sizeof(tm), "%d", dj->timeout_ms);
		if (!PQsendQueryParams(dj->peers[i], TRAIN_RANK_SQL, 18, NULL, vals, NULL, NULL, 0))
			ereport(ERROR,
					(errcode(ERRCODE_CONNECTION_FAILURE),
					 errmsg("could not start rank %d on %s", i + 1, dj->names[i]),
					 errdetail_internal("%s", OneLine(PQerrorMessage(dj->peers[i])))));
	}
	/* rank 0 meets the others; a peer that fails before meeting is named */
	dj->ts.conn = dj->store;
	dj->ts.job = dj->job;
	dj->ts.watch = dj->peers;
	dj->ts.nwatch = dj->npeers;
	dj->ts.watch_names = (const char *const *) dj->names;
	dj->ts.peer_failed = -1;
	dj->st.arg = &dj->ts;
	dj->st.set = StoreSet;
	dj->st.get = StoreGet;
	DistOptions(&o, 0, dj->size, dj->job, dj->timeout_ms);
	if (DistOpen(&o, &dj->st, &dj->d, &err) != GNN_OK)
	{
		CHECK_FOR_INTERRUPTS();
		if (dj->ts.peer_failed >= 0)
			ereport(ERROR,
					(errcode(ERRCODE_CONNECTION_FAILURE),
					 errmsg("rank %d on %s failed: %s", dj->ts.peer_failed + 1, dj->names[dj->ts.peer_failed],
							dj->ts.peer_msg),
					 errhint("Each server needs gnn, its part of the graph loaded by the same role, and a way back to the coordinator.")));
		DistFail("meeting the other ranks", 0, &err);
	}
	if (r->nfanouts > 0)
	{
		/* a second mesh, for batches sampled across parts ahead of the steps (its keys: "<job>/b/...") */
		DistOptions(&o, 0, dj->size, psprintf("%s/b", dj->job), dj->timeout_ms);
		if (DistOpen(&o, &dj->st, &dj->d_batches, &err) != GNN_OK)
		{
			CHECK_FOR_INTERRUPTS();
			DistFail("meeting the other ranks for the batches", 0, &err);
		}
	}
	dj->ts.nwatch = 0;			/* met: from here a peer's end is read after training */
}

/* a rank's progress, under the job's key (gnn.job_ranks reads it) */
static void
PutProgress(PGconn *conn, const char *job, int rank, const gnn_epoch_metrics *m)
{
	char		key[32],
				val[160],
				msg[256];
	TableStore	ts;

	memset(&ts, 0, sizeof(ts));
	ts.conn = conn;
	ts.job = job;
	snprintf(key, sizeof(key), "rank/%d", rank);
	snprintf(val, sizeof(val), "%d|%.9g|%.9g|%.9g", m->epoch, (double) m->train_loss, (double) m->val_acc,
			 m->seconds);
	(void) StoreSet(&ts, key, val, strlen(val), msg, sizeof(msg));
}

void
GnnDistJobProgress(const gnn_epoch_metrics *m)
{
	if (current_job && current_job->active && current_job->store)
		PutProgress(current_job->store, current_job->job, 0, m);
}

/*
 * After rank 0's training: every peer's answer.  A peer that failed is the
 * job's error (its rank, server and message), whatever rank 0 saw; st is
 * rank 0's own outcome, reported when no peer says more.  On success the
 * ranks' figures go into metrics (a JSON array).
 */
void
GnnDistJobFinish(GnnDistJob *dj, gnn_status st, StringInfo ranks_json)
{
	double		until = NowMs() + (st == GNN_OK ? dj->timeout_ms : Min(dj->timeout_ms, 5000));
	int			failed = -1,
				failed_score = 0;
	char	   *failmsg = NULL;

	/*
	 * The cause, when several ranks failed: a rank whose server connection
	 * is gone (it died) over one that reported an error (often only that a
	 * peer went away) over one that did not answer in time (often blocked
	 * on the one that died); the lowest rank on a tie.
	 */
	appendStringInfoChar(ranks_json, '[');
	for (int i = 0; i < dj->npeers; i++)
	{
		PGresult   *res = dj->peers[i] ? DistWaitResult(dj->peers[i], until) : NULL;
		int			score = 0;
		char	   *msg = NULL;

		if (!res)
		{
			bool		gone = PQstatus(dj->peers[i]) == CONNECTION_BAD;

			score = gone ? 3 : 1;
			msg = gone || PQerrorMessage(dj->peers[i])[0] ? OneLine(PQerrorMessage(dj->peers[i])) :
				psprintf("no answer within %d ms", dj->timeout_ms);
		}
		else if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1)
		{
			const char *prim = PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY);

			score = !prim || PQstatus(dj->peers[i]) == CONNECTION_BAD ? 3 : 2;
			msg = OneLine(prim ? prim : PQresultErrorMessage(res));
		}
		else
		{
			appendStringInfo(ranks_json, "%s{\"rank\": %d, \"epochs\": %s, \"seconds\": %s, \"own_nodes\": %s, "
							 "\"halo_nodes\": %s, \"device\": ", i ? ", " : "", i + 1, PQgetvalue(res, 0, 0),
							 PQgetvalue(res, 0, 1), PQgetvalue(res, 0, 2), PQgetvalue(res, 0, 3));
			escape_json(ranks_json, PQgetvalue(res, 0, 4));
			if (!PQgetisnull(res, 0, 5))
			{
				appendStringInfoString(ranks_json, ", \"device_note\": ");
				escape_json(ranks_json, PQgetvalue(res, 0, 5));
			}
			appendStringInfoChar(ranks_json, '}');
		}
		if (score > failed_score)
		{
			failed = i;
			failed_score = score;
			failmsg = msg;
		}
		if (res)
		{
			PQclear(res);
			while ((res = PQgetResult(dj->peers[i])) != NULL)
				PQclear(res);
		}
	}
	appendStringInfoChar(ranks_json, ']');
	if (failed >= 0 && st != GNN_ERR_CANCELLED)
		ereport(ERROR,
				(errcode(ERRCODE_CONNECTION_FAILURE),
				 errmsg("rank %d on %s failed: %s", failed + 1, dj->names[failed], failmsg),
				 errhint("Every rank stops with the job; nothing is written to gnn.models.")));
}

/* close everything; the peers still running are cancelled, the job's store rows go */
void
GnnDistJobEnd(GnnDistJob *dj)
{
	if (!dj || !dj->active)
		return;
	dj->active = false;
	if (current_job == dj)
		current_job = NULL;
	gnn_dist_close(dj->d_batches);
	dj->d_batches = NULL;
	gnn_dist_close(dj->d);
	dj->d = NULL;
	ClosePeers(dj->peers, dj->npeers);
	CloseStore(dj->store, dj->job);
	dj->store = NULL;
}

/* ---- a peer's rank */

typedef struct PeerCtx
{
	PGconn	   *store;
	const char *job;
	int			rank;
} PeerCtx;

static void
PeerProgress(void *arg, const gnn_epoch_metrics *m)
{
	PeerCtx    *pc = arg;

	PutProgress(pc->store, pc->job, pc->rank, m);
}

/* a peer's rank meets the others, through the coordinator's store (conn) */
static gnn_dist *PeerMeetAs(PGconn *conn, TableStore *ts, gnn_dist_store *dst, const char *job, const char *prefix,
							int rank, int size, int timeout);

static gnn_dist *
PeerMeet(PGconn *conn, TableStore *ts, gnn_dist_store *dst, const char *job, int rank, int size, int timeout)
{
	return PeerMeetAs(conn, ts, dst, job, job, rank, size, timeout);
}

/* the same under another prefix of the job's keys (a second mesh) */
static gnn_dist *
PeerMeetAs(PGconn *conn, TableStore *ts, gnn_dist_store *dst, const char *job, const char *prefix, int rank, int size,
		   int timeout)
{
	gnn_dist_options o;
	gnn_dist   *d = NULL;
	gnn_error	err;

	ts->conn = conn;
	ts->job = job;
	ts->peer_failed = -1;
	DistOptions(&o, rank, size, prefix, timeout);
	if (DistOpen(&o, dst, &d, &err) != GNN_OK)
	{
		CHECK_FOR_INTERRUPTS();
		DistFail("meeting the other ranks", rank, &err);
	}
	return d;
}

PG_FUNCTION_INFO_V1(gnn_train_rank);

/*
 * _train_rank(gnn.train's 14 arguments, job, rank, size, coordinator,
 * timeout_ms) -> (epochs, seconds, own_nodes, halo_nodes, device,
 * device_note): one peer's rank of a job over several servers, run on that
 * peer over libpq as the job's role; the model stays with the coordinator.
 * The rank trains on this server's GPU as the job's device asks and the
 * server has one (the gradients are summed in host memory), else on its
 * CPU, saying why in device_note.
 */
Datum
gnn_train_rank(PG_FUNCTION_ARGS)
{
	GnnTrainRequest r;
	const char *job,
			   *coord;
	int			rank,
				size,
				timeout;
	PGconn	   *conn = NULL;
	GnnGraphRef ref;
	gnn_train_config cfg;
	gnn_train_result res;
	gnn_backend *be = NULL;
	gnn_dist   *d = NULL,
			   *d_batches = NULL;
	gnn_error	err;
	gnn_status	st = GNN_OK;
	TupleDesc	td;
	Datum		values[6];
	bool		nulls[6] = {false, false, false, false, false, false};
	char		note[256];
	bool		note_expected;
	TableStore	ts;
	gnn_dist_store dst = {&ts, StoreSet, StoreGet};
	PeerCtx		pc;
	bool		have_ref = false;

	for (int i = 14; i <= 18; i++)
		if (PG_ARGISNULL(i))
			ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("the job's arguments must not be NULL")));
	GnnRequirePreload();
	GnnTrainRequestFromArgs(fcinfo, &r);
	job = text_to_cstring(PG_GETARG_TEXT_PP(14));
	rank = PG_GETARG_INT32(15);
	size = PG_GETARG_INT32(16);
	coord = text_to_cstring(PG_GETARG_TEXT_PP(17));
	timeout = TimeoutArg(fcinfo, 18);
	if (size < 2 || size > DIST_MAX_RANKS || rank < 1 || rank >= size)
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("invalid rank %d of %d", rank, size)));
	if ((r.sampler[0] && strcmp(r.sampler, "neighbor") != 0) ||
		(strcmp(r.task, "link_prediction") == 0 && r.nfanouts == 0))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("rank %d: a job over several servers trains full batch or on neighbour-sampled minibatches (link prediction: on minibatches)", rank)));
	memset(&ref, 0, sizeof(ref));
	memset(&ts, 0, sizeof(ts));
	conn = DistConnect(coord, "the coordinator", timeout, NULL);
	PG_TRY();
	{
		GnnGraphAcquire(r.graph, &ref);
		have_ref = true;
		GnnDistPreflight(&ref.g, &r, rank, size);
		GnnCoreThreadsInit();
		be = GnnJobBackend(&r, rank, note, sizeof(note), &note_expected);
		GnnTrainConfigFor(&r, &ref.g, strncmp(be->name, "cuda", 4) == 0, &cfg);
		d = PeerMeet(conn, &ts, &dst, job, rank, size, timeout);
		cfg.dist = d;
		if (r.nfanouts > 0)
			cfg.dist_batches = d_batches = PeerMeetAs(conn, &ts, &dst, job, psprintf("%s/b", job), rank, size, timeout);
		pc.store = conn;
		pc.job = job;
		pc.rank = rank;
		if (strcmp(r.task, "link_prediction") == 0)
		{
			gnn_linkpred_result lres;

			st = GnnRunLinkPrediction(&ref.g, &cfg, &r, be, PeerProgress, &pc, GnnInterruptShouldStop, NULL, &res, &lres, &err);
		}
		else if (r.nfanouts > 0)
		{
			gnn_minibatch_stats ms;

			st = GnnRunMinibatch(&ref.g, &cfg, &r, be, PeerProgress, &pc, GnnInterruptShouldStop, NULL, &res, &ms, &err);
		}
		else
			st = gnn_train_full(&ref.g, &cfg, be, PeerProgress, &pc, GnnInterruptShouldStop, NULL, NULL, &res, &err);
		CHECK_FOR_INTERRUPTS();
		if (st != GNN_OK)
			ereport(ERROR,
					(errcode(st == GNN_ERR_CANCELLED ? ERRCODE_QUERY_CANCELED : ERRCODE_EXTERNAL_ROUTINE_EXCEPTION),
					 errmsg("rank %d: %s", rank, err.msg)));
		values[0] = Int32GetDatum(res.epochs_run);
		values[1] = Float8GetDatum(res.seconds);
		values[2] = Int64GetDatum(ref.g.n_owned);
		values[3] = Int64GetDatum(ref.g.num_nodes - ref.g.n_owned);
		values[4] = CStringGetTextDatum(be->name);
		values[5] = CStringGetTextDatum(note);
		nulls[5] = note[0] == '\0';
	}
	PG_FINALLY();
	{
		gnn_dist_close(d_batches);
		gnn_dist_close(d);
		gnn_backend_destroy(be);
		if (have_ref)
			GnnGraphRelease(&ref);
		PQfinish(conn);
	}
	PG_END_TRY();
	if (get_call_result_type(fcinfo, NULL, &td) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(td), values, nulls)));
}

GnnDistJob *
GnnDistJobAlloc(void)
{
	return MemoryContextAllocZero(TopMemoryContext, sizeof(GnnDistJob));
}

struct gnn_dist *
GnnDistJobMesh(GnnDistJob *dj)
{
	return dj ? dj->d : NULL;
}

struct gnn_dist *
GnnDistJobBatchesMesh(GnnDistJob *dj)
{
	return dj ? dj->d_batches : NULL;
}

/* ------------------------------------------------------------------ results over several servers */

/*
 * gnn.embed over the parts of a model trained over several servers
 * (options.peers): every server computes its part with the halo's rows of
 * each layer from their owners (gnn_model_infer_dist), then the rows go to
 * the coordinator, or each server writes its own (options.write "local").
 * Rank 0 runs in the calling backend, the peers' ranks over libpq
 * (gnn._infer_rank, as the calling role), the model given to them as its
 * serialized bytes.
 */

/* rows for gnn._dist_rows, the writer's source (one statement at a time, this backend's) */
static const GnnDistRows *dist_rows = NULL;

PG_FUNCTION_INFO_V1(gnn_dist_rows);

/*
 * _dist_rows() -> (id, embedding, key): the rows a write over parts is
 * inserting; key is the node's key as text (what gnn._embedding_rows gives:
 * a uuid or text key, or the integer)
 */
Datum
gnn_dist_rows(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	const GnnDistRows *r = dist_rows;

	InitMaterializedSRF(fcinfo, 0);
	for (int64 i = 0; r && i < r->n; i++)
	{
		Datum	   *e = palloc(sizeof(Datum) * Max(r->cols, 1));
		Datum		values[3];
		bool		nulls[3] = {false, false, false};

		for (int j = 0; j < r->cols; j++)
			e[j] = Float4GetDatum(r->rows[i * r->cols + j]);
		values[0] = Int64GetDatum(r->ids[i]);
		values[1] = PointerGetDatum(construct_array(e, r->cols, FLOAT4OID, 4, true, TYPALIGN_INT));
		values[2] = r->key_off ?
			PointerGetDatum(cstring_to_text_with_len(r->key_bytes + r->key_off[i], (int) (r->key_off[i + 1] - r->key_off[i]))) :
			CStringGetTextDatum(psprintf(INT64_FORMAT, r->ids[i]));
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
		pfree(e);
	}
	return (Datum) 0;
}

/* column_name => names a column of a table that does not exist */
void
GnnEmbedNoColumnTable(const char *table)
{
	ereport(ERROR,
			(errcode(ERRCODE_UNDEFINED_TABLE),
			 errmsg("table \"%s\" does not exist", table),
			 errhint("With column_name =>, table_name names the node table that gets the column.")));
}

/*
 * gnn.embed's target made ready in the caller's SPI connection: without a
 * column, a new table (id <key_type, else bigint> PRIMARY KEY, embedding
 * <coltype>) or the existing one emptied (readers see the old rows until
 * the transaction commits); with one, that column added to an existing
 * table.  Returns the statement writing the rows of source (a FROM item of
 * id, key when key_type is set, and embedding) into it, a column's matched
 * on idcol; *qname: the target's quoted name.  One server's rows and the
 * rows gathered over several (GnnDistWriteRows) are written alike.  Here,
 * below both callers (gnn_embed in pg/serve, GnnDistWriteRows).
 */
char *
GnnEmbedTargetPrepare(const char *table, const char *column, const char *idcol, const char *key_type,
					  const char *coltype, const char *source, char **qname)
{
	RangeVar   *rv = makeRangeVarFromNameList(stringToQualifiedNameList(table));
	Oid			relid = RangeVarGetRelid(rv, NoLock, true);
	const char *idexpr = key_type ? psprintf("key::%s", key_type) : "id";

	if (column == NULL)
	{
		if (!OidIsValid(relid))
		{
			*qname = rv->schemaname ? quote_qualified_identifier(rv->schemaname, rv->relname) :
				(char *) quote_identifier(rv->relname);
			if (SPI_execute(psprintf("CREATE TABLE %s (id %s PRIMARY KEY, embedding %s)", *qname,
									 key_type ? key_type : "bigint", coltype), false, 0) != SPI_OK_UTILITY)
				elog(ERROR, "could not create %s", *qname);
		}
		else
		{
			*qname = quote_qualified_identifier(get_namespace_name(get_rel_namespace(relid)), get_rel_name(relid));
			if (SPI_execute(psprintf("DELETE FROM %s", *qname), false, 0) < 0)
				elog(ERROR, "could not empty %s", *qname);
		}
		return psprintf("INSERT INTO %s (id, embedding) SELECT %s, embedding FROM %s", *qname, idexpr, source);
	}
	if (!OidIsValid(relid))
		GnnEmbedNoColumnTable(table);
	*qname = quote_qualified_identifier(get_namespace_name(get_rel_namespace(relid)), get_rel_name(relid));
	if (SPI_execute(psprintf("ALTER TABLE %s ADD COLUMN IF NOT EXISTS %s %s", *qname, quote_identifier(column),
							 coltype), false, 0) != SPI_OK_UTILITY)
		elog(ERROR, "could not add column %s", column);
	return psprintf("UPDATE %s t SET %s = e.embedding FROM %s e WHERE t.%s = e.%s", *qname,
					quote_identifier(column), source, quote_identifier(idcol), idexpr);
}

/*
 * Rows into table (its name as the caller gave it), or into its column
 * matched on idcol, of coltype (real[] when NULL), prepared as gnn.embed
 * prepares one server's (GnnEmbedTargetPrepare); the caller's privileges
 * decide.  Returns the rows written.
 */
int64
GnnDistWriteRows(const char *table, const char *column, const char *idcol, const char *coltype,
				 const GnnDistRows *rows)
{
	char	   *qname,
			   *sql;
	int64		written;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	sql = GnnEmbedTargetPrepare(table, column, idcol, rows->key_type, coltype ? coltype : "real[]",
								"gnn._dist_rows()", &qname);
	dist_rows = rows;
	PG_TRY();
	{
		if (SPI_execute(sql, false, 0) < 0)
			elog(ERROR, "could not write into %s", qname);
		written = (int64) SPI_processed;
	}
	PG_FINALLY();
	{
		dist_rows = NULL;
	}
	PG_END_TRY();
	SPI_finish();
	return written;
}

/*
 * The node type a pass over the parts answers: node_type's index (NULL on a
 * graph of one node type: -1, every row), and its keys' SQL type (NULL:
 * integers).
 */
static int32
DistResultType(const gnn_graph *g, const char *graph, const char *node_type, const char **key_type)
{
	MemoryContext caller = CurrentMemoryContext;
	int32		t;
	char	   *kt;

	*key_type = NULL;
	if (!node_type)
		return -1;
	t = GnnResultType(g, node_type, graph);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	kt = GnnKeySqlType(graph, t);
	*key_type = kt ? MemoryContextStrdup(caller, kt) : NULL;
	SPI_finish();
	return t;
}

/* the core's rows (malloc'd, freed here) copied into r, in this memory context */
static void
OwnToRows(gnn_dist_own *own, GnnDistRows *r)
{
	r->n = own->n;
	r->ids = palloc_extended(sizeof(int64) * Max(own->n, 1), MCXT_ALLOC_HUGE);
	r->rows = palloc_extended(sizeof(float) * Max(own->n, 1) * Max(r->cols, 1), MCXT_ALLOC_HUGE);
	if (own->n > 0)
	{
		memcpy(r->ids, own->ids, sizeof(int64) * own->n);
		memcpy(r->rows, own->rows, sizeof(float) * own->n * r->cols);
	}
	r->key_off = NULL;
	r->key_bytes = NULL;
	if (own->key_off)
	{
		r->key_off = palloc_extended(sizeof(int64) * (own->n + 1), MCXT_ALLOC_HUGE);
		memcpy(r->key_off, own->key_off, sizeof(int64) * (own->n + 1));
		r->key_bytes = palloc_extended(Max(own->key_off[own->n], 1), MCXT_ALLOC_HUGE);
		memcpy(r->key_bytes, own->key_bytes, own->key_off[own->n]);
	}
	free(own->ids);
	free(own->rows);
	free(own->key_off);
	free(own->key_bytes);
	memset(own, 0, sizeof(*own));
}

/*
 * one rank's pass: the part's rows (a time-aware model's, tc: its own rows
 * sampled across the parts), then its own ones (of node type type, with
 * their keys; type < 0: all) to rank 0 (out) or written here (local)
 */
static int64
InferRank(gnn_dist *d, gnn_model *model, const gnn_graph *g, int32 layer, bool softmax, bool row_normalise,
		  const gnn_infer_temporal_config *tc, int32 type, const char *key_type, const char *local_table,
		  GnnDistRows *out)
{
	int32		cols = layer < 0 ? gnn_model_config_of(model)->out_dim : gnn_model_layer_dim(model, layer);
	float	   *rows = palloc_extended(sizeof(float) * Max(g->num_nodes, 1) * Max(cols, 1), MCXT_ALLOC_HUGE);
	gnn_error	err;
	gnn_dist_own own;
	GnnDistRows r;

	if ((tc ? gnn_model_infer_temporal_dist(d, model, g, tc, layer, softmax, rows, &err) :
		 gnn_model_infer_dist(d, model, g, row_normalise, layer, softmax, rows, &err)) != GNN_OK)
	{
		CHECK_FOR_INTERRUPTS();
		DistFail("computing the part's rows", gnn_dist_rank(d), &err);
	}
	memset(&r, 0, sizeof(r));
	r.cols = cols;
	r.key_type = key_type;
	if (local_table)
	{
		/* this server's own rows, here */
		if (gnn_train_dist_own_rows(g, rows, cols, type, &own, &err) != GNN_OK)
			GnnReportCoreError("packing the part's own rows", &err);
		OwnToRows(&own, &r);
		if (out)
			*out = r;
		return GnnDistWriteRows(local_table, NULL, NULL, NULL, &r);
	}
	if (gnn_train_dist_gather_own_typed(d, g, rows, cols, 0, type, &own, &err) != GNN_OK)
	{
		CHECK_FOR_INTERRUPTS();
		DistFail("gathering the rows at the coordinator", gnn_dist_rank(d), &err);
	}
	OwnToRows(&own, &r);
	if (out)
		*out = r;
	return 0;
}

/*
 * options.write "local": each peer writes its rows in a transaction that
 * stays open until this one ends, then commits with it (COMMIT sent before
 * this server commits: one that fails fails this commit) or rolls back with
 * it, a savepoint's rollback included.  No two-phase commit: a peer that
 * commits before another fails to leaves its rows.  PREPARE TRANSACTION is
 * refused while peers hold rows.
 */
typedef struct PendingPeer
{
	PGconn	   *conn;
	char	   *name;
	int			timeout_ms;
	SubTransactionId subid;
} PendingPeer;

static List *pending_peers = NIL;	/* of PendingPeer *, TopMemoryContext */
static bool pending_callbacks = false;

static void
PendingDrop(PendingPeer *pp)
{
	PQfinish(pp->conn);		/* (an open transaction rolls back with its connection) */
	pfree(pp->name);
	pfree(pp);
}

static void
PendingXact(XactEvent event, void *arg)
{
	List	   *list = pending_peers;
	ListCell   *lc;

	if (list == NIL)
		return;
	if (event == XACT_EVENT_PRE_PREPARE)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot prepare a transaction whose gnn.embed wrote rows on other servers (options.write local)")));
	if (event == XACT_EVENT_PRE_COMMIT || event == XACT_EVENT_PARALLEL_PRE_COMMIT)
	{
		foreach(lc, list)
		{
			PendingPeer *pp = lfirst(lc);
			PGresult   *res;
			bool		ok;

			if (!PQsendQuery(pp->conn, "COMMIT"))
				res = NULL;
			else
				res = DistWaitResult(pp->conn, NowMs() + pp->timeout_ms);
			ok = res && PQresultStatus(res) == PGRES_COMMAND_OK && strcmp(PQcmdStatus(res), "COMMIT") == 0;
			if (res)
				PQclear(res);
			while (ok && (res = PQgetResult(pp->conn)) != NULL)
				PQclear(res);
			if (!ok)
				ereport(ERROR,
						(errcode(ERRCODE_CONNECTION_FAILURE),
						 errmsg("could not commit the rows gnn.embed wrote on %s", pp->name),
						 errdetail_internal("%s", OneLine(PQerrorMessage(pp->conn))),
						 errhint("The servers listed before it have committed theirs.")));
		}
		return;
	}
	if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_PARALLEL_COMMIT || event == XACT_EVENT_ABORT ||
		event == XACT_EVENT_PARALLEL_ABORT)
	{
		pending_peers = NIL;
		foreach(lc, list)
			PendingDrop(lfirst(lc));
		list_free(list);
	}
}

static void
PendingSubXact(SubXactEvent event, SubTransactionId mySubid, SubTransactionId parentSubid, void *arg)
{
	List	   *keep = NIL;
	ListCell   *lc;
	MemoryContext old;

	if (pending_peers == NIL || (event != SUBXACT_EVENT_ABORT_SUB && event != SUBXACT_EVENT_COMMIT_SUB))
		return;
	old = MemoryContextSwitchTo(TopMemoryContext);
	foreach(lc, pending_peers)
	{
		PendingPeer *pp = lfirst(lc);

		if (pp->subid != mySubid)
			keep = lappend(keep, pp);
		else if (event == SUBXACT_EVENT_COMMIT_SUB)
		{
			pp->subid = parentSubid;
			keep = lappend(keep, pp);
		}
		else
			PendingDrop(pp);	/* rolled back to before the write */
	}
	list_free(pending_peers);
	pending_peers = keep;
	MemoryContextSwitchTo(old);
}

/* the peers' open transactions, to end with this one */
static void
PendingAdd(PGconn *conn, const char *name, int timeout_ms)
{
	MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);
	PendingPeer *pp = palloc(sizeof(PendingPeer));

	if (!pending_callbacks)
	{
		RegisterXactCallback(PendingXact, NULL);
		RegisterSubXactCallback(PendingSubXact, NULL);
		pending_callbacks = true;
	}
	pp->conn = conn;
	pp->name = pstrdup(name);
	pp->timeout_ms = timeout_ms;
	pp->subid = GetCurrentSubTransactionId();
	pending_peers = lappend(pending_peers, pp);
	MemoryContextSwitchTo(old);
}

#define INFER_RANK_SQL \
	"SELECT gnn._infer_rank($1::bytea, $2, $3::int, $4::bool, $5::bool, $6, $7::int, $8::int, $9, $10::int, $11, $12, $13)"

/*
 * A time-aware model's sampling for the peers, as integers: hops, their
 * fan-outs, strategy, seed, batch size, whether as_of and its time, the
 * relations R (0: untyped) and R fan-outs a hop.  The relations are
 * numbered alike on every part of a schema graph, as training reads them.
 */
static char *
TemporalSpec(const gnn_infer_temporal_config *tc, const gnn_graph *g)
{
	StringInfoData b;
	int32		R = tc->sampler.type_fanouts ? g->num_edge_types : 0;

	initStringInfo(&b);
	appendStringInfo(&b, "%d", tc->sampler.nhops);
	for (int h = 0; h < tc->sampler.nhops; h++)
		appendStringInfo(&b, " %d", tc->sampler.fanouts[h]);
	appendStringInfo(&b, " %d %llu %d %d " INT64_FORMAT " %d", (int) tc->sampler.temporal_strategy,
					 (unsigned long long) tc->seed, tc->batch_size, tc->has_as_of ? 1 : 0, (int64) tc->as_of, R);
	for (int64 i = 0; i < (int64) R * tc->sampler.nhops; i++)
		appendStringInfo(&b, " %d", tc->sampler.type_fanouts[i]);
	return b.data;
}

/* TemporalSpec's integers into tc (the part g's relations), or an error naming the rank */
static void
TemporalFromSpec(const char *spec, const gnn_graph *g, int rank, bool row_normalise, gnn_infer_temporal_config *tc)
{
	const char *p = spec;
	char	   *end;
	int64		v[8];
	int32		R;

#define NEXT(out) \
	do { \
		errno = 0; \
		(out) = strtoll(p, &end, 10); \
		if (end == p || errno) \
			ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), \
							errmsg("rank %d: the coordinator's time-aware sampling cannot be read: \"%s\"", rank, spec))); \
		p = end; \
	} while (0)
	memset(tc, 0, sizeof(*tc));
	tc->sampler.kind = GNN_SAMPLER_NEIGHBOR;
	NEXT(v[0]);
	if (v[0] < 1 || v[0] > GNN_MAX_FANOUTS)
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("rank %d: %lld hops of time-aware sampling", rank, (long long) v[0])));
	tc->sampler.nhops = (int) v[0];
	for (int h = 0; h < tc->sampler.nhops; h++)
	{
		NEXT(v[1]);
		tc->sampler.fanouts[h] = (int32) v[1];
	}
	NEXT(v[2]);
	errno = 0;
	tc->seed = strtoull(p, &end, 10);
	if (end == p || errno)
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("rank %d: the coordinator's seed cannot be read", rank)));
	p = end;
	NEXT(v[3]);
	NEXT(v[4]);
	NEXT(v[5]);
	NEXT(v[6]);
	tc->sampler.temporal_strategy = (int) v[2];
	tc->batch_size = (int32) v[3];
	tc->has_as_of = v[4] != 0;
	tc->as_of = v[5];
	R = (int32) v[6];
	if (R != 0 && R != g->num_edge_types)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("rank %d: the coordinator's part has %d relations and this one %d", rank, R, g->num_edge_types),
				 errhint("Load every server's part of the same schema graph.")));
	if (R > 0)
	{
		int32	   *tf = palloc(sizeof(int32) * R * tc->sampler.nhops);

		for (int64 i = 0; i < (int64) R * tc->sampler.nhops; i++)
		{
			NEXT(v[7]);
			tf[i] = (int32) v[7];
		}
		tc->sampler.type_fanouts = tf;
	}
#undef NEXT
	tc->sampler.weighted = true;
	tc->sampler.nthreads = gnn_threads;
	tc->sampler.temporal = true;
	tc->sampler.stream_by_id = true;
	tc->row_normalise = row_normalise;
}

void
GnnDistInferRows(const GnnTrainRequest *dr, gnn_model *model, const gnn_graph *g, const char *graph, int32 layer,
				 bool softmax, bool row_normalise, const char *node_type, const char *local_table,
				 const gnn_infer_temporal_config *tc, GnnDistRows *out)
{
	char	   *list = pstrdup(dr->dist_peers);
	char	   *line,
			   *save = NULL;
	int			npeers = dr->dist_npeers,
				size = npeers + 1,
				timeout = dr->dist_timeout_ms;
	char	   *coord = CoordinatorConninfo(dr->dist_coordinator);
	char	   *job = psprintf("infer-%s/g0", RandomKey());
	char	   *spec = tc ? TemporalSpec(tc, g) : NULL;	/* every peer's time-aware sampling */
	PGconn	  **peers = palloc0(sizeof(PGconn *) * npeers);
	char	  **names = palloc0(sizeof(char *) * npeers);
	PGconn	   *store = NULL;
	gnn_dist   *d = NULL;
	void	   *blob = NULL;
	size_t		bloblen = 0;
	gnn_error	err;
	TableStore	ts;
	gnn_dist_store st = {&ts, StoreSet, StoreGet};
	int			i = 0;
	int32		type;
	const char *key_type;

	memset(out, 0, sizeof(*out));
	if (!g->node_part)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("graph \"%s\" is a whole graph, not one part of a partitioned graph", graph),
				 errhint("Leave options.peers out: this server computes every row itself.")));
	type = DistResultType(g, graph, node_type, &key_type);
	{
		gnn_model_meta meta;

		memset(&meta, 0, sizeof(meta));
		if (gnn_model_serialize(model, &meta, &blob, &bloblen, &err) != GNN_OK)
			GnnReportCoreError("could not serialize the model for the peers", &err);
	}
	for (line = strtok_r(list, "\n", &save); line && i < npeers; line = strtok_r(NULL, "\n", &save), i++)
		names[i] = psprintf("peer %d (%s)", i + 1, ConninfoForMessage(line));
	memset(&ts, 0, sizeof(ts));
	PG_TRY();
	{
		gnn_dist_options o;
		double		until;

		store = OpenStore(coord, timeout, NULL, job);
		list = pstrdup(dr->dist_peers);
		save = NULL;
		i = 0;
		for (line = strtok_r(list, "\n", &save); line && i < npeers; line = strtok_r(NULL, "\n", &save), i++)
			peers[i] = DistConnect(line, names[i], timeout, NULL);
		for (i = 0; local_table && i < npeers; i++)
		{
			/* each peer's rows in a transaction that ends with this one (PendingXact) */
			PGresult   *res = PQexec(peers[i], "BEGIN");
			bool		ok = PQresultStatus(res) == PGRES_COMMAND_OK;

			PQclear(res);
			if (!ok)
				ereport(ERROR,
						(errcode(ERRCODE_CONNECTION_FAILURE),
						 errmsg("could not begin a transaction on %s", names[i]),
						 errdetail_internal("%s", OneLine(PQerrorMessage(peers[i])))));
		}
		for (i = 0; i < npeers; i++)
		{
			char		ly[16],
						rk[16],
						sz[16],
						tm[16];
			const char *vals[13] = {blob, graph, ly, softmax ? "true" : "false", row_normalise ? "true" : "false",
			job, rk, sz, coord, tm, local_table, node_type, spec};
			int			lens[13] = {(int) bloblen};
			int			fmts[13] = {1};

			snprintf(ly, sizeof(ly), "%d", layer);
			snprintf(rk, sizeof(rk), "%d", i + 1);
			snprintf(sz, sizeof(sz), "%d", size);
			snprintf(tm, sizeof(tm), "%d", timeout);
			if (!PQsendQueryParams(peers[i], INFER_RANK_SQL, 13, NULL, vals, lens, fmts, 0))
				ereport(ERROR,
						(errcode(ERRCODE_CONNECTION_FAILURE),
						 errmsg("could not start rank %d on %s", i + 1, names[i]),
						 errdetail_internal("%s", OneLine(PQerrorMessage(peers[i])))));
		}
		ts.conn = store;
		ts.job = job;
		ts.watch = peers;
		ts.nwatch = npeers;
		ts.watch_names = (const char *const *) names;
		ts.peer_failed = -1;
		DistOptions(&o, 0, size, job, timeout);
		if (DistOpen(&o, &st, &d, &err) != GNN_OK)
		{
			CHECK_FOR_INTERRUPTS();
			if (ts.peer_failed >= 0)
				ereport(ERROR,
						(errcode(ERRCODE_CONNECTION_FAILURE),
						 errmsg("rank %d on %s failed: %s", ts.peer_failed + 1, names[ts.peer_failed], ts.peer_msg),
						 errhint("Each server needs gnn and its part of the graph loaded by the same role.")));
			DistFail("meeting the other ranks", 0, &err);
		}
		ts.nwatch = 0;
		{
			MemoryContext ctx = CurrentMemoryContext;

			PG_TRY();
			{
				out->written_elsewhere += InferRank(d, model, g, layer, softmax, row_normalise, tc, type, key_type,
													local_table, out);
			}
			PG_CATCH();
			{
				/*
				 * a broken connection here is most often a peer that failed on
				 * its own (its part, its sampling): its error, when it has
				 * one within a moment, says why
				 */
				ErrorData  *edata;

				MemoryContextSwitchTo(ctx);
				edata = CopyErrorData();
				if (edata->sqlerrcode == ERRCODE_CONNECTION_FAILURE && !QueryCancelPending && !ProcDiePending)
					for (i = 0; i < npeers; i++)
					{
						PGresult   *res = DistWaitResult(peers[i], NowMs() + 2000);

						if (res && PQresultStatus(res) != PGRES_TUPLES_OK)
						{
							char	   *m = OneLine(PQresultErrorMessage(res));

							PQclear(res);
							FlushErrorState();
							ereport(ERROR,
									(errcode(ERRCODE_EXTERNAL_ROUTINE_EXCEPTION),
									 errmsg("rank %d on %s failed: %s", i + 1, names[i], m),
									 errdetail_internal("This server's rank saw: %s", edata->message)));
						}
						if (res)
							PQclear(res);
					}
				PG_RE_THROW();
			}
			PG_END_TRY();
		}
		/* every peer's answer: the rows it wrote (local), or none */
		until = NowMs() + timeout;
		for (i = 0; i < npeers; i++)
		{
			PGresult   *res = PeerAnswer(peers[i], names[i], i + 1, until, timeout);

			out->written_elsewhere += strtoll(PQgetvalue(res, 0, 0), NULL, 10);
			PQclear(res);
			while ((res = PQgetResult(peers[i])) != NULL)
				PQclear(res);
		}
		/* local writes: the peers' transactions end with this one */
		for (i = 0; local_table && i < npeers; i++)
		{
			PendingAdd(peers[i], names[i], timeout);
			peers[i] = NULL;
		}
	}
	PG_FINALLY();
	{
		gnn_dist_close(d);
		ClosePeers(peers, npeers);
		CloseStore(store, job);
		free(blob);
	}
	PG_END_TRY();
}

PG_FUNCTION_INFO_V1(gnn_infer_rank);

/*
 * _infer_rank(model bytes, graph, layer, softmax, row_normalise, job, rank,
 * size, coordinator, timeout_ms, local_table, node_type, temporal) -> the
 * rows written here (0: sent to the coordinator): one peer's rank of
 * gnn.embed over parts; temporal: a time-aware model's sampling
 * (TemporalSpec), NULL for any other model.
 */
Datum
gnn_infer_rank(PG_FUNCTION_ARGS)
{
	bytea	   *blob;
	const char *graph,
			   *job,
			   *coord,
			   *local_table,
			   *node_type;
	int32		layer;
	bool		softmax,
				row_normalise;
	int			rank,
				size,
				timeout;
	PGconn	   *conn = NULL;
	GnnGraphRef ref;
	gnn_backend *be = NULL;
	gnn_model  *model = NULL;
	gnn_model_meta meta;
	gnn_dist   *d = NULL;
	gnn_error	err;
	TableStore	ts;
	gnn_dist_store dst = {&ts, StoreSet, StoreGet};
	bool		have_ref = false;
	int64		written = 0;
	const char *spec;
	gnn_infer_temporal_config tc;

	for (int i = 0; i < 10; i++)
		if (PG_ARGISNULL(i))
			ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("the rank's arguments must not be NULL")));
	GnnRequirePreload();
	blob = PG_GETARG_BYTEA_PP(0);
	graph = text_to_cstring(PG_GETARG_TEXT_PP(1));
	layer = PG_GETARG_INT32(2);
	softmax = PG_GETARG_BOOL(3);
	row_normalise = PG_GETARG_BOOL(4);
	job = text_to_cstring(PG_GETARG_TEXT_PP(5));
	rank = PG_GETARG_INT32(6);
	size = PG_GETARG_INT32(7);
	coord = text_to_cstring(PG_GETARG_TEXT_PP(8));
	timeout = TimeoutArg(fcinfo, 9);
	local_table = PG_ARGISNULL(10) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(10));
	node_type = PG_NARGS() > 11 && !PG_ARGISNULL(11) ? text_to_cstring(PG_GETARG_TEXT_PP(11)) : NULL;
	spec = PG_NARGS() > 12 && !PG_ARGISNULL(12) ? text_to_cstring(PG_GETARG_TEXT_PP(12)) : NULL;
	if (size < 2 || size > DIST_MAX_RANKS || rank < 1 || rank >= size)
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("invalid rank %d of %d", rank, size)));
	memset(&ref, 0, sizeof(ref));
	memset(&ts, 0, sizeof(ts));
	conn = DistConnect(coord, "the coordinator", timeout, NULL);
	PG_TRY();
	{
		GnnGraphAcquire(graph, &ref);
		have_ref = true;
		if (!ref.g.node_part)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("rank %d: graph \"%s\" here is a whole graph, not one part", rank, graph),
					 errhint("Load this server's part with part_column and part.")));
		GnnCoreThreadsInit();
		if (gnn_backend_cpu_create(0, &be, &err) != GNN_OK)
			GnnReportCoreError("could not create the CPU backend", &err);
		if (gnn_model_deserialize(be, VARDATA_ANY(blob), VARSIZE_ANY_EXHDR(blob), &model, &meta, &err) != GNN_OK)
			GnnReportCoreError(psprintf("rank %d: the model sent by the coordinator", rank), &err);
		d = PeerMeet(conn, &ts, &dst, job, rank, size, timeout);
		{
			const char *key_type;
			int32		type = DistResultType(&ref.g, graph, node_type, &key_type);

			if (spec)
			{
				GnnGraphFlattenRef(&ref);	/* (the temporal sampler reads a flat graph) */
				TemporalFromSpec(spec, &ref.g, rank, row_normalise, &tc);
				tc.should_stop = GnnInterruptShouldStop;	/* (every rank stops with it) */
			}
			written = InferRank(d, model, &ref.g, layer, softmax, row_normalise, spec ? &tc : NULL, type, key_type,
								local_table, NULL);
		}
	}
	PG_FINALLY();
	{
		gnn_dist_close(d);
		gnn_model_free(model);
		gnn_backend_destroy(be);
		if (have_ref)
			GnnGraphRelease(&ref);
		PQfinish(conn);
	}
	PG_END_TRY();
	PG_RETURN_INT64(written);
}
