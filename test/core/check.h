/*
 * check.h: a tiny TAP emitter for the core unit tests (plain C programs,
 * no server).  Each CHECK prints "ok N - name" or "not ok N - name"; the
 * program ends with check_done(), which prints the plan and returns the exit
 * status.  test/run_all.sh counts the lines.
 */
#ifndef GNN_CHECK_H
#define GNN_CHECK_H

#include <stdio.h>
#include <stdlib.h>
#include <stdarg.h>
#include <string.h>

static int	check_count = 0;
static int	check_failed = 0;

static inline int
check_report(int cond, const char *file, int line, const char *fmt,...)
{
	va_list		ap;

	check_count++;
	if (!cond)
		check_failed++;
	printf("%sok %d - ", cond ? "" : "not ", check_count);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	if (!cond)
		printf(" (at %s:%d)", file, line);
	printf("\n");
	fflush(stdout);
	return cond;
}

/* CHECK(cond, "name fmt", ...) */
#define CHECK(cond, ...) check_report(!!(cond), __FILE__, __LINE__, __VA_ARGS__)

/* Skip a named test with a reason: counted as passed with a SKIP directive. */
#define CHECK_SKIP(reason, ...) \
	do { check_count++; printf("ok %d - ", check_count); printf(__VA_ARGS__); \
		 printf(" # SKIP %s\n", reason); fflush(stdout); } while (0)

/* Diagnostics go to TAP comments. */
#define NOTE(...) do { printf("# "); printf(__VA_ARGS__); printf("\n"); fflush(stdout); } while (0)

static inline int
check_done(void)
{
	printf("1..%d\n", check_count);
	return check_failed ? 1 : 0;
}

/*
 * The length of a randomised or exhaustive loop: full unless GNN_TEST_SHORT
 * is set (make test sets it for the sanitizer builds, which run 3-5x slower;
 * make fuzz runs them full).  The short share is the full run's first part,
 * the same seeds every time.
 */
static inline int
check_short(void)
{
	const char *v = getenv("GNN_TEST_SHORT");

	return v && *v && strcmp(v, "0") != 0;
}

static inline long
check_len(long full, long short_len)
{
	return check_short() ? short_len : full;
}

/* Path of ../shared/data relative to the repository root, or NULL (tests skip). */
static inline const char *
check_data_dir(void)
{
	static const char *candidates[] = {"../shared/data", "../../shared/data", NULL};
	const char *env = getenv("GNN_DATA_DIR");

	if (env && *env)
		return env;
	for (int i = 0; candidates[i]; i++)
	{
		char		p[512];
		FILE	   *f;

		snprintf(p, sizeof(p), "%s/cora/nodes.csv", candidates[i]);
		if ((f = fopen(p, "r")) != NULL)
		{
			fclose(f);
			return candidates[i];
		}
	}
	return NULL;
}

#endif							/* GNN_CHECK_H */
