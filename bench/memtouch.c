/*
 * memtouch.c: this machine's memory limits, for reading load_graph figures.
 * Times, for a buffer of MB megabytes (default 512): the first write to fresh
 * malloc'd memory (page faults + kernel zeroing), the same with
 * MADV_HUGEPAGE, a second write to already-touched memory, and memcpy between
 * touched buffers.  Prints GB/s for each.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

static double
now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}

static char *
fresh(size_t n, int huge)
{
	char	   *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
	{
		perror("mmap");
		exit(1);
	}
	if (huge)
		madvise(p, n, MADV_HUGEPAGE);
	return p;
}

int
main(int argc, char **argv)
{
	size_t		mb = argc > 1 ? strtoul(argv[1], NULL, 10) : 512,
				n = mb << 20;
	double		t;
	char	   *a = fresh(n, 0),
			   *b;

	t = now();
	memset(a, 1, n);
	printf("first touch, 4 KiB pages:    %6.2f GB/s (%.0f ms for %zu MiB)\n", n / (now() - t) / 1e9, (now() - t) * 1e3, mb);
	t = now();
	memset(a, 2, n);
	printf("rewrite of touched memory:   %6.2f GB/s\n", n / (now() - t) / 1e9);
	b = fresh(n, 1);
	t = now();
	memset(b, 1, n);
	printf("first touch, MADV_HUGEPAGE:  %6.2f GB/s\n", n / (now() - t) / 1e9);
	t = now();
	memcpy(b, a, n);
	printf("memcpy between touched:      %6.2f GB/s\n", n / (now() - t) / 1e9);
	munmap(a, n);
	munmap(b, n);
	return 0;
}
