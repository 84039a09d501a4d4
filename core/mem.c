/* madvise and MADV_HUGEPAGE are not in POSIX. */
#define _DEFAULT_SOURCE
#include "mem.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "parallel.h"

enum { HUGE_PAGE = 2 << 20 };

/* n * size bytes aligned to a huge page and offered to THP, or NULL; *bytes
 * their count.  Small arrays come from calloc. */
static void *alloc_aligned(size_t n, size_t size, size_t *bytes)
{
    if (size && n > SIZE_MAX / size)
        return NULL;
    *bytes = n * size;
    if (*bytes < HUGE_PAGE)
        return calloc(n ? n : 1, size ? size : 1);
    void *p = NULL;
    if (posix_memalign(&p, HUGE_PAGE, *bytes) != 0)
        return NULL;
#ifdef MADV_HUGEPAGE
    (void)madvise(p, *bytes, MADV_HUGEPAGE); /* advice: refused is fine */
#endif
    return p;
}

void *er_alloc_large(size_t n, size_t size)
{
    size_t bytes;
    return alloc_aligned(n, size, &bytes);
}

void *er_calloc_large(size_t n, size_t size)
{
    size_t bytes;
    void *p = alloc_aligned(n, size, &bytes);
    if (!p || bytes < HUGE_PAGE)
        return p;
    /* First touch is a write, one huge page (or 512 small ones) per chunk. */
    const long chunks = (long)((bytes + HUGE_PAGE - 1) / HUGE_PAGE);
    unsigned char *c = p;
    ER_OMP_FOR()
    for (long k = 0; k < chunks; k++) {
        size_t at = (size_t)k * HUGE_PAGE, len = bytes - at < HUGE_PAGE ? bytes - at : HUGE_PAGE;
        memset(c + at, 0, len);
    }
    return p;
}
