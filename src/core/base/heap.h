/*
 * heap.h: how many bytes the core holds on the C heap, now and at its peak.
 *
 * Every malloc, calloc, realloc, aligned_alloc, posix_memalign and free of
 * the objects linked with GNN_HEAP_WRAP (gnn.so and the core tests: the
 * linker's --wrap) passes through heap.c, which counts the usable size of
 * each block.  The counts are process-wide by nature (one heap per
 * process), the one global the core keeps: a training worker runs one job,
 * so its peak since gnn_heap_peak_reset is the job's peak, measured rather
 * than estimated (gnn.estimate is checked against it; gnn.max_job_memory
 * stops a job that goes over).  Memory that libraries allocate for
 * themselves (OpenBLAS's buffers, libgomp) is not counted; device memory is
 * counted by the backend.
 */
#ifndef GNN_HEAP_H
#define GNN_HEAP_H

#include <stdbool.h>
#include <stdint.h>

/* whether the counts are live (the objects were linked with the wrapper) */
bool		gnn_heap_tracked(void);

/* bytes held now, and the most held since the last reset */
int64_t		gnn_heap_current(void);
int64_t		gnn_heap_peak(void);

/* start a new peak from what is held now */
void		gnn_heap_peak_reset(void);

/*
 * A phase's peak, beside the whole peak (which it does not reset): the most
 * held since gnn_heap_phase_reset (gnn_heap_peak_reset resets both), so a
 * loop can say which of its phases the peak was in.
 */
int64_t		gnn_heap_phase_peak(void);
void		gnn_heap_phase_reset(void);

#endif							/* GNN_HEAP_H */
