/* fkm_common.h -- status codes, index type and portability macros shared by
 * every pyfkm C kernel.
 *
 * Kernels never abort and never print: they return an int status that the
 * Cython layer maps to a Python exception (see pyfkm/_core/_status.pxi).
 */
#ifndef FKM_COMMON_H
#define FKM_COMMON_H

#include <stddef.h>
#include <stdint.h>

/* Status codes returned by every fallible kernel. */
enum {
    FKM_OK = 0,        /* success */
    FKM_ENOMEM = 1,    /* an allocation failed; outputs are unspecified */
    FKM_EDOM = 2,      /* an argument is outside the kernel's domain */
    FKM_EOVERFLOW = 3, /* an integer result does not fit its type */
    FKM_ENONFINITE = 4 /* a NaN or infinity was met where none is allowed */
};

/* Index type for point, center and coordinate positions. */
typedef int64_t fkm_index_t;

/* Debug-only assertion: compiled out unless FKM_DEBUG is defined. */
#ifdef FKM_DEBUG
#include <assert.h>
#define FKM_ASSERT(x) assert(x)
#else
#define FKM_ASSERT(x) ((void)0)
#endif

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

#endif /* FKM_COMMON_H */
