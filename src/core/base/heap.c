/*
 * heap.c: the C heap's counts (heap.h).  With the linker's --wrap=malloc
 * (and the others below) every call of those functions in the wrapped
 * objects lands in __wrap_X, which calls the real one (__real_X) and adds
 * or subtracts malloc_usable_size of the block.  Without --wrap the real
 * functions are never reached through here: the weak __real_ references
 * stay null and gnn_heap_tracked() says the counts are not live.
 *
 * A block that libc allocated for the core (getline's buffer) and the core
 * frees is subtracted without having been added: the current count is
 * clamped at zero, so such a block can only make the figures low by its
 * size, never negative.
 */
#include "base/heap.h"

#include <malloc.h>
#include <stdatomic.h>
#include <stdlib.h>

extern void *__real_malloc(size_t n) __attribute__((weak));
extern void *__real_calloc(size_t n, size_t size) __attribute__((weak));
extern void *__real_realloc(void *p, size_t n) __attribute__((weak));
extern void *__real_aligned_alloc(size_t align, size_t n) __attribute__((weak));
extern int	__real_posix_memalign(void **p, size_t align, size_t n) __attribute__((weak));
extern void __real_free(void *p) __attribute__((weak));

void	   *__wrap_malloc(size_t n);
void	   *__wrap_calloc(size_t n, size_t size);
void	   *__wrap_realloc(void *p, size_t n);
void	   *__wrap_aligned_alloc(size_t align, size_t n);
int			__wrap_posix_memalign(void **p, size_t align, size_t n);
void		__wrap_free(void *p);

static _Atomic int64_t heap_now;
static _Atomic int64_t heap_peak;
static _Atomic int64_t heap_phase_peak;	/* since gnn_heap_phase_reset */

static void
heap_add(void *p)
{
	int64_t		now,
				peak;

	if (p == NULL)
		return;
	now = atomic_fetch_add_explicit(&heap_now, (int64_t) malloc_usable_size(p), memory_order_relaxed) +
		(int64_t) malloc_usable_size(p);
	peak = atomic_load_explicit(&heap_peak, memory_order_relaxed);
	while (now > peak &&
		   !atomic_compare_exchange_weak_explicit(&heap_peak, &peak, now, memory_order_relaxed,
												  memory_order_relaxed))
		;
	peak = atomic_load_explicit(&heap_phase_peak, memory_order_relaxed);
	while (now > peak &&
		   !atomic_compare_exchange_weak_explicit(&heap_phase_peak, &peak, now, memory_order_relaxed,
												  memory_order_relaxed))
		;
}

static void
heap_sub_bytes(int64_t n)
{
	int64_t		now = atomic_fetch_sub_explicit(&heap_now, n, memory_order_relaxed) - n;

	if (now < 0)				/* a block libc allocated (see above) */
		atomic_fetch_add_explicit(&heap_now, -now > n ? n : -now, memory_order_relaxed);
}

static void
heap_sub(void *p)
{
	if (p != NULL)
		heap_sub_bytes((int64_t) malloc_usable_size(p));
}

void *
__wrap_malloc(size_t n)
{
	void	   *p = __real_malloc(n);

	heap_add(p);
	return p;
}

void *
__wrap_calloc(size_t n, size_t size)
{
	void	   *p = __real_calloc(n, size);

	heap_add(p);
	return p;
}

void *
__wrap_realloc(void *p, size_t n)
{
	size_t		old = p ? malloc_usable_size(p) : 0;
	void	   *q = __real_realloc(p, n);

	if (q == NULL && n != 0)
		return NULL;			/* failed: p is untouched */
	heap_sub_bytes((int64_t) old);	/* moved, or freed by realloc(p, 0) */
	heap_add(q);
	return q;
}

void *
__wrap_aligned_alloc(size_t align, size_t n)
{
	void	   *p = __real_aligned_alloc(align, n);

	heap_add(p);
	return p;
}

int
__wrap_posix_memalign(void **p, size_t align, size_t n)
{
	int			rc = __real_posix_memalign(p, align, n);

	if (rc == 0)
		heap_add(*p);
	return rc;
}

void
__wrap_free(void *p)
{
	heap_sub(p);
	__real_free(p);
}

bool
gnn_heap_tracked(void)
{
	return __real_malloc != NULL;
}

int64_t
gnn_heap_current(void)
{
	return atomic_load_explicit(&heap_now, memory_order_relaxed);
}

int64_t
gnn_heap_peak(void)
{
	return atomic_load_explicit(&heap_peak, memory_order_relaxed);
}

void
gnn_heap_peak_reset(void)
{
	atomic_store_explicit(&heap_peak, atomic_load_explicit(&heap_now, memory_order_relaxed), memory_order_relaxed);
	gnn_heap_phase_reset();
}

int64_t
gnn_heap_phase_peak(void)
{
	return atomic_load_explicit(&heap_phase_peak, memory_order_relaxed);
}

void
gnn_heap_phase_reset(void)
{
	atomic_store_explicit(&heap_phase_peak, atomic_load_explicit(&heap_now, memory_order_relaxed),
						  memory_order_relaxed);
}
