/* fkm_alloc.h -- large scratch buffers.
 *
 * Fresh memory costs one page fault per 4 KiB page on first touch, which on
 * virtual machines is slower than computing on it.  Buffers of 4 MiB and more
 * are aligned to 2 MiB and advised for transparent huge pages (as numpy does
 * for its own arrays); smaller ones come from malloc.  Release with
 * fkm_free_large.
 */
#ifndef FKM_ALLOC_H
#define FKM_ALLOC_H

#include <stddef.h>

/* Returns NULL on failure (or for size 0). */
void *fkm_alloc_large(size_t size);
void fkm_free_large(void *ptr);

#endif /* FKM_ALLOC_H */
