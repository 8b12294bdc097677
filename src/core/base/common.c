/*
 * common.c: status codes, error buffer, RNG seeding.
 */
#include "base/gnn_core.h"
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>

#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

gnn_status
gnn_error_set(gnn_error *err, gnn_status status, const char *fmt,...)
{
	if (err)
	{
		va_list		ap;

		err->status = status;
		va_start(ap, fmt);
		vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
		va_end(ap);
	}
	return status;
}

void
gnn_error_clear(gnn_error *err)
{
	if (err)
	{
		err->status = GNN_OK;
		err->row = -1;
		err->id = 0;
		err->msg[0] = '\0';
	}
}

const char *
gnn_status_name(gnn_status status)
{
	switch (status)
	{
		case GNN_OK:
			return "ok";
		case GNN_ERR_NOMEM:
			return "out of memory";
		case GNN_ERR_INVALID:
			return "invalid argument";
		case GNN_ERR_DANGLING:
			return "dangling edge";
		case GNN_ERR_DUPLICATE:
			return "duplicate id";
		case GNN_ERR_BAD_VALUE:
			return "bad value";
		case GNN_ERR_DIMENSION:
			return "dimension mismatch";
		case GNN_ERR_EMPTY:
			return "empty input";
		case GNN_ERR_LIMIT:
			return "limit exceeded";
		case GNN_ERR_CORRUPT:
			return "corrupt data";
		case GNN_ERR_BACKEND:
			return "backend failure";
		case GNN_ERR_UNSUPPORTED:
			return "unsupported";
		case GNN_ERR_CANCELLED:
			return "cancelled";
	}
	return "unknown status";
}

static uint64_t
splitmix64(uint64_t *x)
{
	uint64_t	z = (*x += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

void
gnn_rng_seed(gnn_rng *rng, uint64_t seed)
{
	uint64_t	x = seed;

	for (int i = 0; i < 4; i++)
		rng->s[i] = splitmix64(&x);
}

void
gnn_rng_split(const gnn_rng *parent, uint64_t stream, gnn_rng *child)
{
	uint64_t	x = parent->s[0] ^ gnn_rng_rotl(parent->s[1], 13) ^
		gnn_rng_rotl(parent->s[2], 29) ^ gnn_rng_rotl(parent->s[3], 41) ^
		(stream * 0xd1342543de82ef95ULL);

	for (int i = 0; i < 4; i++)
		child->s[i] = splitmix64(&x);
}

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23	/* Linux 5.14 */
#endif
#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22	/* Linux 5.14 */
#endif

void
gnn_premap(const void *addr, uint64_t bytes)
{
	long		ps = sysconf(_SC_PAGESIZE);
	uintptr_t	lo,
				hi;

	if (ps <= 0)
		ps = 4096;
	lo = (uintptr_t) addr & ~((uintptr_t) ps - 1);
	hi = ((uintptr_t) addr + bytes + (uintptr_t) ps - 1) & ~((uintptr_t) ps - 1);
	if (addr && hi > lo)
		(void) madvise((void *) lo, hi - lo, MADV_POPULATE_READ);	/* a hint: failure changes nothing */
}

void
gnn_advise_huge(void *addr, uint64_t bytes)
{
#ifdef MADV_HUGEPAGE
	static int	on = -1;
	const uintptr_t huge = (uintptr_t) 2 << 20;
	uintptr_t	lo,
				hi;

	if (on < 0)
	{
		const char *e = getenv("GNN_HUGE_PAGES");

		on = !(e && strcmp(e, "0") == 0);
	}
	if (!on || !addr || bytes < GNN_BIG_BYTES)
		return;
	lo = ((uintptr_t) addr + huge - 1) & ~(huge - 1);
	hi = ((uintptr_t) addr + bytes) & ~(huge - 1);
	if (hi > lo)
		(void) madvise((void *) lo, hi - lo, MADV_HUGEPAGE);	/* a hint: failure changes nothing */
#else
	(void) addr;
	(void) bytes;
#endif
}

void *
gnn_malloc_big(size_t bytes)
{
	const size_t huge = (size_t) 2 << 20;
	size_t		rounded;
	void	   *p;

	/*
	 * A large array starts on a 2 MB boundary and ends on one: advised
	 * whole, every page of it can be a huge page.  (Advising only the
	 * aligned inside of a plain malloc left up to 4 MB of 4 kB pages: an 8
	 * MB calloc took 8-10 ms on a VM, 1.1 ms aligned, 50 ms not advised.)
	 * A smaller one is gnn_advise_huge's to leave alone anyway.
	 */
	if (bytes < GNN_BIG_BYTES || bytes > SIZE_MAX - huge)
		return malloc(bytes);
	rounded = (bytes + huge - 1) & ~(huge - 1);
	if (posix_memalign(&p, huge, rounded) != 0)
		return NULL;
	gnn_advise_huge(p, rounded);
	return p;
}

void
gnn_sort_i32(int32_t *a, int64_t n)
{
	uint32_t   *src = (uint32_t *) a,
			   *dst;

	if (n < 512 || !(dst = malloc(sizeof(uint32_t) * (size_t) n)))
	{
		if (n > 1)
			qsort(a, (size_t) n, sizeof(int32_t), gnn_cmp_i32);
		return;
	}
	for (int shift = 0; shift < 32; shift += 11)
	{
		int64_t		at[2048] = {0},
					sum = 0;
		uint32_t   *t;

		/* (the sign bit flipped: negative values first) */
		for (int64_t i = 0; i < n; i++)
			at[((src[i] ^ 0x80000000u) >> shift) & 2047]++;
		if (at[((src[0] ^ 0x80000000u) >> shift) & 2047] == n)
			continue;
		for (int d = 0; d < 2048; d++)
		{
			int64_t		c = at[d];

			at[d] = sum;
			sum += c;
		}
		for (int64_t i = 0; i < n; i++)
			dst[at[((src[i] ^ 0x80000000u) >> shift) & 2047]++] = src[i];
		t = src;
		src = dst;
		dst = t;
	}
	if (src != (uint32_t *) a)
	{
		memcpy(a, src, sizeof(uint32_t) * (size_t) n);
		dst = src;
	}
	free(dst);
}

void *
gnn_calloc_big(size_t n, size_t size)
{
	void	   *p;

	if (size != 0 && n > SIZE_MAX / size)
		return NULL;
	if (n * size < GNN_BIG_BYTES)
		return calloc(n, size);
	/* advised before the zeroing touches it: a fault per 2 MB, not per 4 kB */
	if ((p = gnn_malloc_big(n * size)) != NULL)
		memset(p, 0, n * size);
	return p;
}

void *
gnn_realloc_big(void *p, size_t old_bytes, size_t new_bytes)
{
	void	   *q;

	if (new_bytes < GNN_BIG_BYTES)
		return realloc(p, new_bytes);
	if (!(q = gnn_malloc_big(new_bytes)))
		return NULL;
	if (p)
		memcpy(q, p, old_bytes < new_bytes ? old_bytes : new_bytes);
	free(p);
	return q;
}

void
gnn_prefault(void *addr, uint64_t bytes, int nthreads)
{
	long		ps = sysconf(_SC_PAGESIZE);
	uintptr_t	lo,
				hi;
	uint64_t	pages;

	if (ps <= 0)
		ps = 4096;
	/* whole pages inside [addr, addr + bytes) */
	lo = ((uintptr_t) addr + (uintptr_t) ps - 1) & ~((uintptr_t) ps - 1);
	hi = ((uintptr_t) addr + bytes) & ~((uintptr_t) ps - 1);
	if (!addr || hi <= lo)
		return;
	pages = (hi - lo) / (uint64_t) ps;
#ifdef _OPENMP
	if (nthreads <= 0)
		nthreads = omp_get_max_threads();
	if (pages < 4096)
		nthreads = 1;
#pragma omp parallel num_threads(nthreads)
#endif
	{
#ifdef _OPENMP
		int			k = omp_get_thread_num(),
					nt = omp_get_num_threads();
#else
		int			k = 0,
					nt = 1;
#endif
		char	   *a = (char *) lo + pages * k / nt * (uint64_t) ps,
				   *b = (char *) lo + pages * (k + 1) / nt * (uint64_t) ps;

		if (b > a && madvise(a, (size_t) (b - a), MADV_POPULATE_WRITE) != 0)
			for (volatile char *p = a; p < b; p += ps)
				*p = *p;
	}
}

/* runnable tasks of the whole system now (/proc/loadavg's 4th field), -1 unknown */
static int
procs_running(void)
{
	char		buf[128];
	int			fd = open("/proc/loadavg", O_RDONLY | O_CLOEXEC),
				n,
				r = -1;
	char	   *p;

	if (fd < 0)
		return -1;
	n = (int) read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	/* "0.52 0.61 0.70 3/412 12345" */
	p = buf;
	for (int f = 0; f < 3 && p; f++)
	{
		p = strchr(p, ' ');
		if (p)
			p++;
	}
	if (p)
		r = atoi(p);
	return r > 0 ? r : -1;
}

int
gnn_team_for(int32_t nthreads)
{
#ifdef _OPENMP
	return gnn_team_size(nthreads > 0 ? nthreads : omp_get_max_threads());
#else
	(void) nthreads;
	return 1;
#endif
}

/* the calling thread's cap on its teams (gnn_team_cap_set); 0: none */
static __thread int team_cap = 0;

int
gnn_team_cap_set(int cap)
{
	int			old = team_cap;

	team_cap = cap > 0 ? cap : 0;
	return old;
}

int
gnn_team_capped(int n)
{
	return team_cap > 0 && n > team_cap ? team_cap : n;
}

int
gnn_team_size(int want)
{
	static int	adaptive = -1;	/* -1: not read yet */
	static int	ncpu;
	static double checked;		/* when /proc/loadavg was last read */
	static int	seen[3];		/* other runnable tasks at the last three reads */
	static int	nseen;
	static int	last_team = 1;
	double		now;
	int			idle,
				others,
				team;

	want = gnn_team_capped(want);
	if (want <= 1)
		return want < 1 ? 1 : want;
	/* benign races: every field is a word written whole, and any value read is usable */
	if (__atomic_load_n(&adaptive, __ATOMIC_RELAXED) < 0)
	{
		const char *e = getenv("GNN_ADAPTIVE_THREADS");
		long		c = sysconf(_SC_NPROCESSORS_ONLN);

		__atomic_store_n(&ncpu, c > 0 ? (int) c : 1, __ATOMIC_RELAXED);
		__atomic_store_n(&adaptive, !(e && strcmp(e, "0") == 0), __ATOMIC_RELAXED);
	}
	if (!__atomic_load_n(&adaptive, __ATOMIC_RELAXED))
		return want;
	now = gnn_now_s();
	if (now - checked >= 0.02 || checked == 0)
	{
		int			r = procs_running();

		checked = now;
		if (r > 0)
		{
			int			o = r - __atomic_load_n(&last_team, __ATOMIC_RELAXED),
						k = __atomic_fetch_add(&nseen, 1, __ATOMIC_RELAXED);

			__atomic_store_n(&seen[(unsigned) k % 3], o > 0 ? o : 0, __ATOMIC_RELAXED);
		}
	}
	/*
	 * The least of the last three readings (about 40 ms): a task that was
	 * runnable for an instant (a process starting, a short query) does not
	 * shrink the team; load that stays does.
	 */
	others = __atomic_load_n(&seen[0], __ATOMIC_RELAXED);
	for (int i = 1; i < 3; i++)
	{
		int			o = __atomic_load_n(&seen[i], __ATOMIC_RELAXED);

		others = o < others ? o : others;
	}
	idle = __atomic_load_n(&ncpu, __ATOMIC_RELAXED) - others;
	team = idle < 1 ? 1 : idle > want ? want : idle;
	__atomic_store_n(&last_team, team, __ATOMIC_RELAXED);
	return team;
}

double
gnn_now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double) ts.tv_sec + (double) ts.tv_nsec * 1e-9;
}

bool
gnn_thread_start(pthread_t *t, bool detached, void *(*fn) (void *), void *arg)
{
	pthread_attr_t at;
	sigset_t	all,
				old;
	bool		started;

	if (pthread_attr_init(&at) != 0)
		return false;
	if (detached)
		pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	started = pthread_create(t, &at, fn, arg) == 0;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&at);
	return started;
}

void
gnn_bytes_put(gnn_bytes *b, const void *s, size_t len)
{
	if (b->oom)
		return;
	if (b->n + len + 1 > b->cap)
	{
		size_t		cap = b->cap ? b->cap : 256;
		char	   *np;

		while (cap < b->n + len + 1)
			cap *= 2;
		if (!(np = realloc(b->p, cap)))
		{
			b->oom = true;
			return;
		}
		b->p = np;
		b->cap = cap;
	}
	memcpy(b->p + b->n, s, len);
	b->n += len;
	b->p[b->n] = '\0';
}
