/* fkm_alloc.c -- see fkm_alloc.h. */
#if defined(__linux__) && !defined(_DEFAULT_SOURCE)
#define _DEFAULT_SOURCE /* posix_memalign, madvise */
#endif
#include "fkm_alloc.h"

#include <stdlib.h>

#if defined(__linux__)
#include <sys/mman.h>
#endif

#define FKM_HUGE_MIN ((size_t)4 << 20)
#define FKM_HUGE_ALIGN ((size_t)2 << 20)

void *fkm_alloc_large(size_t size)
{
    if (size == 0)
        return NULL;
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (size >= FKM_HUGE_MIN) {
        void *p = NULL;
        size_t rounded = (size + FKM_HUGE_ALIGN - 1) & ~(FKM_HUGE_ALIGN - 1);
        if (posix_memalign(&p, FKM_HUGE_ALIGN, rounded) != 0)
            return NULL;
        (void)madvise(p, rounded, MADV_HUGEPAGE); /* advice only */
        return p;
    }
#endif
    return malloc(size);
}

void fkm_free_large(void *ptr)
{
    free(ptr);
}
