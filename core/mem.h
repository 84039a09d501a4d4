/*
 * Large zeroed arrays for the models' state.  calloc hands back pages the
 * kernel maps lazily: the first sweep that reads a cell maps the shared
 * zero page, the first that writes it takes a second, copy-on-write fault
 * and a TLB shootdown on every other thread, 4 KiB at a time (perf on a
 * 1-step 4096^2 Mei run puts most of the model phase there).  These
 * arrays are instead aligned to 2 MiB, offered to transparent huge pages
 * where the system enables them on request (madvise), and written once by
 * all threads before the model reads them.  Contents: all bits zero, as
 * calloc.
 */
#ifndef ER_MEM_H
#define ER_MEM_H

#include <stddef.h>

/* n * size zero bytes, or NULL (out of memory or overflow).  Release with
 * free().  Thread-safe; parallel inside (OpenMP). */
void *er_calloc_large(size_t n, size_t size);

/* As er_calloc_large but not zeroed, for an array the caller fills whole
 * at once on all threads (that fill is then its first touch: one write
 * per page instead of two).  Release with free(). */
void *er_alloc_large(size_t n, size_t size);

#endif
