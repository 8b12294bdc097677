/*
 * test_memory: the large-array helpers of the loads (common.c).
 * gnn_realloc_big keeps an array's contents as it grows across the 8 MB
 * line where it stops calling realloc; gnn_advise_huge marks the 2 MB-aligned
 * interior of a large array for transparent huge pages (the VMA's "hg" flag
 * in /proc/self/smaps, set whether or not huge pages are free), leaves
 * arrays under 8 MB alone, and does nothing with GNN_HUGE_PAGES=0 (checked
 * in a fresh process: the variable is read once).  The flag checks skip
 * where the kernel has no THP.  gnn_sort_i32 sorts as qsort does, over the
 * shapes its radix passes take apart: sizes around its 512-value switch,
 * negatives and the extremes, duplicates, digits every value shares.
 */
#include "check.h"
#include "base/gnn_core.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

/* 1 when the mapping holding addr has VmFlags "hg", 0 when not, -1 unknown */
static int
advised(const void *addr)
{
	FILE	   *f = fopen("/proc/self/smaps", "r");
	char		line[512];
	int			in = 0,
				r = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
	{
		unsigned long lo,
					hi;

		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' '))
			in = (uintptr_t) addr >= lo && (uintptr_t) addr < hi;
		else if (in && strncmp(line, "VmFlags:", 8) == 0)
		{
			r = strstr(line, " hg") != NULL;
			break;
		}
	}
	fclose(f);
	return r;
}

static int
thp_present(void)
{
	FILE	   *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
	char		buf[128] = "";
	int			ok;

	if (!f)
		return 0;
	ok = fgets(buf, sizeof(buf), f) != NULL && strstr(buf, "[never]") == NULL;
	fclose(f);
	return ok;
}

int
main(int argc, char **argv)
{
	size_t		big = (size_t) 32 << 20;
	char	   *p;
	int32_t    *a = NULL;
	size_t		n = 0;
	bool		kept = true;

	if (argc > 1 && strcmp(argv[1], "--off") == 0)
	{
		/* GNN_HUGE_PAGES=0: no advice */
		int			r;

		p = malloc(big);
		gnn_advise_huge(p, big);
		r = advised(p + big / 2) == 0 ? 0 : 1;
		free(p);				/* LeakSanitizer runs this child too */
		return r;
	}

	unsetenv("GNN_HUGE_PAGES");	/* read at the first call, below */

	/* gnn_sort_i32 against qsort */
	{
		int64_t		sizes[] = {0, 1, 2, 511, 512, 513, 4096, 100000};
		bool		same = true;
		char		failed[128] = "";

		for (int shape = 0; shape < 6; shape++)
			for (size_t z = 0; z < sizeof(sizes) / sizeof(sizes[0]); z++)
			{
				int64_t		m = sizes[z];
				int32_t    *x = malloc(sizeof(int32_t) * (m + 1)),
						   *y = malloc(sizeof(int32_t) * (m + 1));
				uint64_t	h = 0x9e3779b97f4a7c15ULL * (uint64_t) (shape + 1);

				for (int64_t i = 0; i < m; i++)
				{
					h = h * 6364136223846793005ULL + 1442695040888963407ULL;
					switch (shape)
					{
						case 0:	/* anything, negatives included */
							x[i] = (int32_t) (uint32_t) (h >> 32);
							break;
						case 1:	/* node ids: below 2^20 (the top digit shared) */
							x[i] = (int32_t) ((h >> 40) & 0xFFFFF);
							break;
						case 2:	/* few values, many duplicates */
							x[i] = (int32_t) ((h >> 60) & 7) - 3;
							break;
						case 3:	/* all one value (every pass skipped) */
							x[i] = 42;
							break;
						case 4:	/* descending */
							x[i] = (int32_t) (m - i);
							break;
						default:	/* the extremes among others */
							x[i] = i % 3 == 0 ? INT32_MIN : i % 3 == 1 ? INT32_MAX : (int32_t) (h >> 33);
							break;
					}
					y[i] = x[i];
				}
				gnn_sort_i32(x, m);
				if (m > 1)
					qsort(y, (size_t) m, sizeof(int32_t), gnn_cmp_i32);
				if (m > 0 && memcmp(x, y, sizeof(int32_t) * m) != 0 && same)
				{
					same = false;
					snprintf(failed, sizeof(failed), "shape %d, %lld values", shape, (long long) m);
				}
				free(x);
				free(y);
			}
		CHECK(same, "gnn_sort_i32 sorts as qsort does: any values, node ids, duplicates, one value, descending, "
			  "the extremes; 0 to 100,000 values%s%s", failed[0] ? ": not at " : "", failed);
	}

	/* growing by doubling from 1k to 16M elements (64 MB): contents kept */
	for (size_t cap = 1024; cap <= ((size_t) 16 << 20) && kept; cap *= 2)
	{
		int32_t    *b = gnn_realloc_big(a, n * sizeof(int32_t), cap * sizeof(int32_t));

		if (!b)
		{
			kept = false;
			break;
		}
		a = b;
		for (size_t i = 0; i < n; i++)
			kept &= a[i] == (int32_t) (i * 2654435761u);
		for (size_t i = n; i < cap; i++)
			a[i] = (int32_t) (i * 2654435761u);
		n = cap;
	}
	CHECK(kept && n == ((size_t) 16 << 20), "gnn_realloc_big keeps the contents from 4 kB to 64 MB (%zu elements)", n);
	free(a);
	a = gnn_realloc_big(NULL, 0, 16);
	CHECK(a != NULL, "gnn_realloc_big from NULL allocates");
	free(a);

	/* a large array starts on a 2 MB boundary (all of it can be huge pages); zeroed when asked */
	{
		size_t		sizes[] = {((size_t) 8 << 20) + 8, (size_t) 9 << 20, (size_t) 40 << 20};
		bool		aligned = true,
					zero = true;

		for (int i = 0; i < 3; i++)
		{
			char	   *m = gnn_malloc_big(sizes[i]),
					   *z;

			aligned &= m && ((uintptr_t) m & (((uintptr_t) 2 << 20) - 1)) == 0;
			if (m)
				memset(m, 0xab, sizes[i]);	/* dirty the heap for the calloc that follows */
			free(m);
			z = gnn_calloc_big(sizes[i] / 8, 8);
			aligned &= z && ((uintptr_t) z & (((uintptr_t) 2 << 20) - 1)) == 0;
			for (size_t k = 0; z && k < sizes[i] / 8 * 8; k += 4093)
				zero &= z[k] == 0;
			zero &= z && z[sizes[i] / 8 * 8 - 1] == 0;
			free(z);
		}
		CHECK(aligned && zero, "gnn_malloc_big and gnn_calloc_big: 8 MB and more on a 2 MB boundary (%s), "
			  "calloc's zeroed (%s)", aligned ? "yes" : "no", zero ? "yes" : "no");
		a = gnn_calloc_big(3, 4);
		CHECK(a && a[0] == 0 && a[2] == 0, "gnn_calloc_big of a small array is calloc's");
		free(a);
		CHECK(gnn_calloc_big(SIZE_MAX / 4, 8) == NULL, "gnn_calloc_big refuses a size that overflows");
	}

	if (!thp_present() || advised(&n) < 0)
	{
		printf("# skipped: no transparent huge pages (or no VmFlags in /proc/self/smaps) on this kernel\n");
		return check_done();
	}
	p = mmap(NULL, big, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(p != MAP_FAILED, "a 32 MB mapping");
	if (p == MAP_FAILED)
		return check_done();
	CHECK(advised(p + big / 2) == 0, "a fresh mapping is not advised");
	gnn_advise_huge(p, big);
	memset(p, 1, big);
	CHECK(advised(p + big / 2) == 1, "gnn_advise_huge marks a 32 MB array for huge pages");
	CHECK(p[0] == 1 && p[big - 1] == 1, "and the array is still plain writable memory");
	munmap(p, big);

	p = mmap(NULL, (size_t) 4 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	gnn_advise_huge(p, (size_t) 4 << 20);
	CHECK(advised(p + (2 << 20)) == 0, "an array under 8 MB is left alone");
	munmap(p, (size_t) 4 << 20);

	{
		pid_t		pid = fork();
		int			status = -1;

		if (pid == 0)
		{
			setenv("GNN_HUGE_PAGES", "0", 1);
			execl("/proc/self/exe", argv[0], "--off", (char *) NULL);
			_exit(2);
		}
		waitpid(pid, &status, 0);
		CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "GNN_HUGE_PAGES=0 gives no advice");
	}
	return check_done();
}
