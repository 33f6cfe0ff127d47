/* fkm_common.h -- status codes, index type and portability macros shared by
 * every pyfkm C kernel.
 *
 * Kernels never abort and never print: they return an int status that the
 * Cython layer maps to a Python exception (check_status in
 * pyfkm/_core/_common.pxd, which maps every code below).  The only
 * exception is FKM_ASSERT, live in debug builds only (FKM_DEBUG).
 */
#ifndef FKM_COMMON_H
#define FKM_COMMON_H

#include <stddef.h>
#include <stdint.h>

/* Status codes returned by every fallible kernel: the only list (a kernel
 * that needs a new code adds it here, and check_status maps it). */
enum {
    FKM_OK = 0,            /* success */
    FKM_ENOMEM = 1,        /* an allocation failed; outputs are unspecified */
    FKM_EDOM = 2,          /* an argument is outside the kernel's domain */
    FKM_EOVERFLOW = 3,     /* an integer result does not fit its type (or a
                            * ChaCha20 stream ran out of block counters) */
    FKM_ENONFINITE = 4,    /* a NaN or infinity was met where none is allowed */
    FKM_ENOTSPLIT = 16,    /* a polynomial is not a product of distinct linear
                            * factors (fkm_polyfac.h) */
    FKM_EREPEATED = 17,    /* Vandermonde nodes are not distinct (fkm_vdm.h) */
    FKM_ENOSPLIT_RNG = 18  /* random splitting failed too often (tiny field,
                            * fkm_polyfac.h) */
};

/* Index type for point, center and coordinate positions. */
typedef int64_t fkm_index_t;

/* FKM_ASSERT(cond): a documented precondition of a kernel (what its header
 * says the caller guarantees without checking), asserted at the kernel's
 * entry.  Live only when FKM_DEBUG is defined (DEBUG=1 builds, see
 * setup.py): a false condition prints the file, line, function and
 * condition to stderr and aborts the process.  Elsewhere it compiles to
 * nothing and its argument is not evaluated.  It does not depend on NDEBUG
 * (Python's CFLAGS define it).  Conditions must be cheap: O(1), or a pass
 * over an array the kernel reads anyway (FKM_ASSERT_EACH). */
#ifdef FKM_DEBUG
void fkm_assert_fail(const char *cond, const char *file, int line,
                     const char *func);
#define FKM_ASSERT(cond) \
    ((cond) ? (void)0 : fkm_assert_fail(#cond, __FILE__, __LINE__, __func__))
/* FKM_ASSERT(cond) for every i in [0, n). */
#define FKM_ASSERT_EACH(i, n, cond)                                          \
    do {                                                                      \
        for (fkm_index_t i = 0; i < (fkm_index_t)(n); i++)                    \
            FKM_ASSERT(cond);                                                 \
    } while (0)
#else
#define FKM_ASSERT(cond) ((void)0)
#define FKM_ASSERT_EACH(i, n, cond) ((void)0)
#endif

/* 1 when the library was built with FKM_DEBUG (assertions live), else 0. */
int fkm_debug_build(void);

/* The first position j < m with ids[j] == id, or m (for assertions that
 * indices are distinct: fkm_first_index(ids, a, ids[a]) == a). */
static inline fkm_index_t fkm_first_index(const fkm_index_t *ids, fkm_index_t m,
                                          fkm_index_t id)
{
    fkm_index_t j = 0;
    while (j < m && ids[j] != id)
        j++;
    return j;
}

/* Runtime dispatch between a generic build and an AVX2+FMA build of a hot
 * kernel (GCC/clang function multiversioning on x86-64 ELF targets).  Wheels
 * stay portable: the loader picks the best clone on the running CPU. */
#if defined(__x86_64__) && defined(__ELF__) && !defined(FKM_NO_CLONES) && \
    ((defined(__GNUC__) && __GNUC__ >= 12 && !defined(__clang__)) || \
     (defined(__clang__) && __clang_major__ >= 14))
#define FKM_HOT __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define FKM_HOT
#endif

/* Run STMT(D) with D the compile-time constant equal to the run-time
 * dimension d when 1 <= d <= 16, else STMT(d): loops over coordinates in an
 * always-inlined STMT are then fully unrolled for the small dimensions. */
#define FKM_WITH_CONST_D(d, STMT)                                             \
    switch (d) {                                                              \
    case 1: STMT(1); break;                                                   \
    case 2: STMT(2); break;                                                   \
    case 3: STMT(3); break;                                                   \
    case 4: STMT(4); break;                                                   \
    case 5: STMT(5); break;                                                   \
    case 6: STMT(6); break;                                                   \
    case 7: STMT(7); break;                                                   \
    case 8: STMT(8); break;                                                   \
    case 9: STMT(9); break;                                                   \
    case 10: STMT(10); break;                                                 \
    case 11: STMT(11); break;                                                 \
    case 12: STMT(12); break;                                                 \
    case 13: STMT(13); break;                                                 \
    case 14: STMT(14); break;                                                 \
    case 15: STMT(15); break;                                                 \
    case 16: STMT(16); break;                                                 \
    default: STMT(d);                                                         \
    }

#endif /* FKM_COMMON_H */
