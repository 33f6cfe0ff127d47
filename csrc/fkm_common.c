/* fkm_common.c -- the assertion handler of debug builds and the build
 * query (see fkm_common.h).  The only place that prints or aborts, and only
 * under FKM_DEBUG. */
#include "fkm_common.h"

#ifdef FKM_DEBUG
#include <stdio.h>
#include <stdlib.h>

void fkm_assert_fail(const char *cond, const char *file, int line,
                     const char *func)
{
    fprintf(stderr, "pyfkm: %s:%d: %s: precondition failed: %s\n", file, line,
            func, cond);
    fflush(stderr);
    abort();
}
#endif

int fkm_debug_build(void)
{
#ifdef FKM_DEBUG
    return 1;
#else
    return 0;
#endif
}
