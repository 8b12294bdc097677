/*
 * test_threads: thread teams that make way for other work (gnn_team_size).
 * With more busy processes than cores the team shrinks to one thread; the
 * team never leaves [1, want]; a kernel's result does not change with it
 * (a GEMM and a dropout on a backend of all cores, idle and contended,
 * against one thread); GNN_ADAPTIVE_THREADS=0 keeps the configured count
 * (checked in a child process: the variable is read once).
 */
#include "check.h"
#include "nn/backend.h"

#include <omp.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void
sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long) (ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

/* a GEMM and a dropout of fixed inputs on be; the outputs in out (n floats) */
static void
kernels(gnn_backend *be, float *out, int n)
{
	int			m = 300,
				k = 200,
				c = 64;
	float	   *A = malloc(sizeof(float) * m * k),
			   *B = malloc(sizeof(float) * k * c),
			   *X = malloc(sizeof(float) * n);

	for (int i = 0; i < m * k; i++)
		A[i] = (float) ((i * 37) % 101) / 101.0f - 0.5f;
	for (int i = 0; i < k * c; i++)
		B[i] = (float) ((i * 53) % 89) / 89.0f - 0.5f;
	for (int i = 0; i < n; i++)
		X[i] = (float) (i % 17);
	gnn_backend_gemm(be, false, false, m, c, k, 1.0f, A, k, B, c, 0.0f, out, c);
	gnn_backend_dropout_forward(be, X, out + m * c, n - m * c, 0.5f, 12345);
	free(A);
	free(B);
	free(X);
}

int
main(int argc, char **argv)
{
	long		ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	int			want = ncpu > 1 ? (int) ncpu : 2;
	int			n = 300 * 64 + (1 << 18);
	float	   *one = malloc(sizeof(float) * n),
			   *idle = malloc(sizeof(float) * n),
			   *busy = malloc(sizeof(float) * n);
	gnn_backend *b1,
			   *bn;
	gnn_error	err;
	pid_t		kids[64];
	int			nkids = 0,
				team_busy,
				team_idle;

	if (argc > 1 && strcmp(argv[1], "--fixed") == 0)
	{
		bool		fixed;

		sleep_ms(30);
		fixed = gnn_team_size(want) == want && gnn_team_size(want) == want;
		free(one);
		free(idle);
		free(busy);
		return fixed ? 0 : 1;
	}
	CHECK(gnn_team_size(1) == 1 && gnn_team_size(0) == 1, "a team of 1 (or 0) is 1");
	{
		/* the calling thread's cap (a pipeline's producer and computing thread while evaluating) */
		int			was = gnn_team_cap_set(1),
					capped = gnn_team_size(want),
					capped_for = gnn_team_for(want),
					capped_n = gnn_team_capped(want),
					other = -1,
					team = 0;

		/* another thread has no cap */
#pragma omp parallel num_threads(2)
		{
			if (omp_get_thread_num() == 1)
				other = gnn_team_capped(want);
			if (omp_get_thread_num() == 0)
				team = omp_get_num_threads();
		}
		CHECK(was == 0 && capped == 1 && capped_for == 1 && capped_n == 1 && (team < 2 || other == want),
			  "a cap of 1 makes every team of this thread 1 (size %d, for %d, capped %d), no other thread's (%d)",
			  capped, capped_for, capped_n, other);
		CHECK(gnn_team_cap_set(was) == 1 && gnn_team_capped(want) == want && gnn_team_cap_set(-3) == 0 &&
			  gnn_team_capped(want) == want && gnn_team_cap_set(0) == 0,
			  "the cap put back, and a cap of 0 or less is none");
	}
	team_idle = gnn_team_size(want);
	CHECK(team_idle >= 1 && team_idle <= want, "the team is within [1, %d]: %d", want, team_idle);
	if (gnn_backend_create("cpu", 1, NULL, &b1, &err) != GNN_OK ||
		gnn_backend_create("cpu", want, NULL, &bn, &err) != GNN_OK)
	{
		CHECK(0, "backend: %s", err.msg);
		return check_done();
	}
	kernels(b1, one, n);
	kernels(bn, idle, n);

	/* twice as many busy processes as cores */
	for (int i = 0; i < 2 * want && i < 64; i++)
	{
		pid_t		p = fork();

		if (p == 0)
		{
			volatile unsigned long x = 0;

			alarm(20);			/* never outlive a killed test */
			for (;;)
				x++;
		}
		if (p > 0)
			kids[nkids++] = p;
	}
	sleep_ms(100);
	team_busy = 0;
	for (int tries = 0; tries < 20 && team_busy != 1; tries++)
	{
		sleep_ms(30);			/* the runnable count is read at most every 20 ms */
		team_busy = gnn_team_size(want);
	}
	kernels(bn, busy, n);
	/* GNN_ADAPTIVE_THREADS=0: the count as configured, however busy (a fresh
	 * process: the variable is read once) */
	{
		pid_t		p = fork();
		int			status = -1;

		if (p == 0)
		{
			setenv("GNN_ADAPTIVE_THREADS", "0", 1);
			execl("/proc/self/exe", "test_threads", "--fixed", (char *) NULL);
			_exit(3);
		}
		if (p > 0)
			waitpid(p, &status, 0);
		CHECK(p > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0,
			  "GNN_ADAPTIVE_THREADS=0 keeps all %d threads under the same load (child status %d)", want, status);
	}
	for (int i = 0; i < nkids; i++)
		kill(kids[i], SIGKILL);
	for (int i = 0; i < nkids; i++)
		waitpid(kids[i], NULL, 0);
	if (access("/proc/loadavg", R_OK) != 0)
		CHECK_SKIP("no /proc/loadavg", "the team shrinks under load");
	else
		CHECK(team_busy == 1, "with %d busy processes on %d cores the team is 1 thread of %d (got %d)",
			  nkids, (int) ncpu, want, team_busy);
	CHECK(memcmp(one, idle, sizeof(float) * n) == 0 && memcmp(one, busy, sizeof(float) * n) == 0,
		  "a GEMM and a dropout give the same bits on 1 thread, on %d idle and on %d contended", want, want);
	gnn_backend_destroy(b1);
	gnn_backend_destroy(bn);
	free(one);
	free(idle);
	free(busy);
	return check_done();
}
