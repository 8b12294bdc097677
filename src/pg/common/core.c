/*
 * core.c: running the compute core inside a PostgreSQL process.
 *
 * The core runs OpenMP threads (BLAS stays on the thread that calls it).
 * PostgreSQL's signal handlers must only ever run on the main thread, so the
 * thread pool is created once per process with every signal blocked:
 * threads inherit that mask and keep it.
 */
#include "common/gnn_pg.h"

#include "miscadmin.h"

#include <pthread.h>
#include <signal.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#include <cblas.h>

static bool threads_ready = false;

void
GnnCoreThreadsInit(void)
{
	sigset_t	all,
				old;
	int			n = gnn_threads;

	if (threads_ready)
		return;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
#ifdef _OPENMP
	if (n > 0)
		omp_set_num_threads(n);
	else
		n = omp_get_max_threads();
#pragma omp parallel
	{
		(void) omp_get_thread_num();
	}
#endif
	/*
	 * BLAS on one thread: the CPU backend splits products into row blocks
	 * across the OpenMP team (backend_cpu.c's cpu_set_threads), so BLAS's
	 * own pool is never used, and must never start (its threads would not
	 * have the signal mask above).  It was once woken here, a 256^3
	 * product at n threads: 1.5-10 ms of every job's start, and of every
	 * session's first call, on the 2-core VM (0.5-0.8 ms without it), and
	 * a pool thread left polling for work (OpenBLAS's threads yield in a
	 * loop for a while after a product) beside the job's own.
	 */
	openblas_set_num_threads(1);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	threads_ready = true;
}

/*
 * The core's should-stop callback for work run in a session (a query, a
 * peer's rank): true once a cancel or a termination is pending, polled
 * between pieces of work; CHECK_FOR_INTERRUPTS then reports it.
 */
bool
GnnInterruptShouldStop(void *arg)
{
	(void) arg;
	return InterruptPending && (QueryCancelPending || ProcDiePending);
}

/* Turn a core status into an ERROR. */
void
GnnReportCoreError(const char *what, const gnn_error *err)
{
	int			code;

	switch (err->status)
	{
		case GNN_ERR_NOMEM:
			code = ERRCODE_OUT_OF_MEMORY;
			break;
		case GNN_ERR_INVALID:
		case GNN_ERR_DIMENSION:
		case GNN_ERR_BAD_VALUE:
			code = ERRCODE_INVALID_PARAMETER_VALUE;
			break;
		case GNN_ERR_EMPTY:
			code = ERRCODE_NO_DATA_FOUND;
			break;
		case GNN_ERR_LIMIT:
			code = ERRCODE_PROGRAM_LIMIT_EXCEEDED;
			break;
		case GNN_ERR_CORRUPT:
			code = ERRCODE_DATA_CORRUPTED;
			break;
		case GNN_ERR_UNSUPPORTED:
			code = ERRCODE_FEATURE_NOT_SUPPORTED;
			break;
		case GNN_ERR_CANCELLED:
			/* the interrupt that stopped the core says what it was (statement timeout, cancel, terminate) */
			CHECK_FOR_INTERRUPTS();
			code = ERRCODE_QUERY_CANCELED;
			break;
		default:
			code = ERRCODE_EXTERNAL_ROUTINE_EXCEPTION;
	}
	ereport(ERROR,
			(errcode(code),
			 errmsg("%s: %s", what, err->msg[0] ? err->msg : gnn_status_name(err->status))));
}
