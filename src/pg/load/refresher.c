/*
 * refresher.c: gnn.refresh_naptime.  A launcher (a background worker
 * started with the server) wakes every naptime seconds and, for each
 * (database, role) with tracked graphs loaded, starts one short-lived worker
 * that connects to that database as that role and refreshes each of them
 * that has changes pending, one transaction per graph; a graph found without
 * changes that still has a delta (gnn.merge_threshold) gets it merged into a
 * new graph.  So a tracked graph
 * lags its tables by about the naptime, and a refresh runs with its
 * owner's rights, as if the owner had called gnn.refresh_graph().  A
 * failing refresh (a table a load would refuse) is logged and retried at
 * the next round; nothing is lost meanwhile.
 */
#include "common/gnn_pg.h"

#include "access/xact.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "tcop/tcopprot.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/wait_event.h"

int			gnn_refresh_naptime = 0;

PGDLLEXPORT void GnnRefreshLauncherMain(Datum arg);
PGDLLEXPORT void GnnRefreshWorkerMain(Datum arg);

typedef struct RefreshTarget
{
	Oid			dbid;
	Oid			owner;
} RefreshTarget;

/* called from _PG_init while preloading */
void
GnnRefresherInit(void)
{
	BackgroundWorker w;

	memset(&w, 0, sizeof(w));
	w.bgw_flags = BGWORKER_SHMEM_ACCESS;
	w.bgw_start_time = BgWorkerStart_RecoveryFinished;
	w.bgw_restart_time = 10;
	strlcpy(w.bgw_library_name, "gnn", BGW_MAXLEN);
	strlcpy(w.bgw_function_name, "GnnRefreshLauncherMain", BGW_MAXLEN);
	strlcpy(w.bgw_name, "gnn refresh launcher", BGW_MAXLEN);
	strlcpy(w.bgw_type, "gnn refresh launcher", BGW_MAXLEN);
	RegisterBackgroundWorker(&w);
}

/* the (database, role) pairs with tracked graphs loaded */
static int
Targets(RefreshTarget *out, int max)
{
	int			n = 0;

	LWLockAcquire(gnn_shared->lock, LW_SHARED);
	for (int i = 0; i < gnn_shared->max_graphs && n < max; i++)
	{
		GnnGraphEntry *e = &gnn_shared->graphs[i];
		bool		seen = false;

		if (!e->in_use || !e->tracked)
			continue;
		for (int k = 0; k < n && !seen; k++)
			seen = out[k].dbid == e->dbid && out[k].owner == e->owner;
		if (!seen)
		{
			out[n].dbid = e->dbid;
			out[n].owner = e->owner;
			n++;
		}
	}
	LWLockRelease(gnn_shared->lock);
	return n;
}

static void
RunOne(const RefreshTarget *t)
{
	BackgroundWorker w;
	BackgroundWorkerHandle *h;
	pid_t		pid;

	memset(&w, 0, sizeof(w));
	w.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	w.bgw_start_time = BgWorkerStart_RecoveryFinished;
	w.bgw_restart_time = BGW_NEVER_RESTART;
	strlcpy(w.bgw_library_name, "gnn", BGW_MAXLEN);
	strlcpy(w.bgw_function_name, "GnnRefreshWorkerMain", BGW_MAXLEN);
	snprintf(w.bgw_name, BGW_MAXLEN, "gnn refresh (database %u, role %u)", t->dbid, t->owner);
	strlcpy(w.bgw_type, "gnn refresh", BGW_MAXLEN);
	memcpy(w.bgw_extra, t, sizeof(*t));
	w.bgw_notify_pid = 0;
	if (!RegisterDynamicBackgroundWorker(&w, &h))
	{
		ereport(LOG, (errmsg("gnn refresh launcher: no background worker slot free; retrying at the next round"),
					  errhint("Raise max_worker_processes.")));
		return;
	}
	/* until it is gone (polled: the postmaster's notifications are not needed) */
	for (;;)
	{
		BgwHandleStatus st = GetBackgroundWorkerPid(h, &pid);

		if (st == BGWH_STOPPED || st == BGWH_POSTMASTER_DIED)
			break;
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, 100, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
	pfree(h);
}

void
GnnRefreshLauncherMain(Datum arg)
{
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();
	pgstat_report_appname("gnn refresh launcher");

	/*
	 * A round every naptime.  The latch is also set when a worker this
	 * launcher started changes state (bgw_notify_pid), so a wakeup before the
	 * round is due waits again for what is left: the next round never starts
	 * right on the heels of the last one (whose worker the postmaster may
	 * still be cleaning up; a registration then was seen to wait for ever).
	 */
	TimestampTz next = 0;

	for (;;)
	{
		long		nap_ms = gnn_refresh_naptime > 0 ? gnn_refresh_naptime * 1000L : 10000L;
		long		wait_ms;
		TimestampTz now = GetCurrentTimestamp();

		if (next == 0)
			next = TimestampTzPlusMilliseconds(now, nap_ms);
		wait_ms = (long) Max((next - now) / 1000, 0);
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, Max(wait_ms, 1), PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
			next = 0;			/* a new naptime starts now */
			continue;
		}
		if (GetCurrentTimestamp() < next)
			continue;			/* woken early: not due yet */
		next = 0;
		if (gnn_refresh_naptime <= 0)
			continue;
		{
			RefreshTarget t[64];
			int			n = Targets(t, lengthof(t));

			for (int i = 0; i < n; i++)
				RunOne(&t[i]);
		}
	}
}

void
GnnRefreshWorkerMain(Datum arg)
{
	RefreshTarget t;
	char		(*names)[GNN_GRAPH_NAME_LEN];
	int			n = 0;

	memcpy(&t, MyBgworkerEntry->bgw_extra, sizeof(t));
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();
	/* as the graphs' owner, in their database */
	BackgroundWorkerInitializeConnectionByOid(t.dbid, t.owner, 0);
	pgstat_report_appname("gnn refresh");

	names = MemoryContextAlloc(TopMemoryContext, sizeof(*names) * gnn_shared->max_graphs);
	LWLockAcquire(gnn_shared->lock, LW_SHARED);
	for (int i = 0; i < gnn_shared->max_graphs; i++)
	{
		GnnGraphEntry *e = &gnn_shared->graphs[i];

		if (e->in_use && e->tracked && e->dbid == t.dbid && e->owner == t.owner)
			strlcpy(names[n++], e->name, GNN_GRAPH_NAME_LEN);
	}
	LWLockRelease(gnn_shared->lock);

	for (int i = 0; i < n; i++)
	{
		MemoryContext cxt = CurrentMemoryContext;

		SetCurrentStatementStartTimestamp();
		StartTransactionCommand();
		PushActiveSnapshot(GetTransactionSnapshot());
		pgstat_report_activity(STATE_RUNNING, psprintf("gnn: refreshing graph \"%s\"", names[i]));
		PG_TRY();
		{
			GnnRefreshResult r;
			bool		idle;

			GnnRefreshGraph(names[i], false, &r);
			PopActiveSnapshot();
			CommitTransactionCommand();
			idle = r.ins_e + r.del_e + r.ins_n + r.del_n + r.upd_n == 0 && !r.reloaded;
			if (!idle)
				ereport(DEBUG1,
						(errmsg("gnn: refreshed graph \"%s\": %lld edges in, %lld out, %lld nodes in, %lld out, %lld updated",
								names[i], (long long) r.ins_e, (long long) r.del_e, (long long) r.ins_n,
								(long long) r.del_n, (long long) r.upd_n)));
			/*
			 * a round without changes: the delta the earlier rounds left is
			 * merged into a new graph now, in the background, so readers and
			 * whole-graph work read one flat graph again
			 */
			if (idle && GnnGraphHasDelta(names[i]))
			{
				SetCurrentStatementStartTimestamp();
				StartTransactionCommand();
				PushActiveSnapshot(GetTransactionSnapshot());
				pgstat_report_activity(STATE_RUNNING, psprintf("gnn: merging the delta of graph \"%s\"", names[i]));
				GnnRefreshGraph(names[i], true, &r);
				PopActiveSnapshot();
				CommitTransactionCommand();
				ereport(DEBUG1, (errmsg("gnn: merged the delta of graph \"%s\"", names[i])));
			}
		}
		PG_CATCH();
		{
			ErrorData  *ed;

			MemoryContextSwitchTo(cxt);
			ed = CopyErrorData();
			FlushErrorState();
			AbortCurrentTransaction();
			ereport(LOG,
					(errmsg("gnn: background refresh of graph \"%s\" failed: %s", names[i], ed->message),
					 ed->detail ? errdetail("%s", ed->detail) : 0,
					 errhint("The changes stay in gnn.change_log; the next round retries.")));
			FreeErrorData(ed);
		}
		PG_END_TRY();
	}
	pgstat_report_activity(STATE_IDLE, NULL);
	proc_exit(0);
}
