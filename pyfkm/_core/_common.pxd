# Helpers shared by the Cython modules: status mapping, optional arrays and
# generator plumbing.
from numpy.random cimport bitgen_t
from cpython.pycapsule cimport PyCapsule_GetPointer
from pyfkm._core._csrc cimport (fkm_rng_t, fkm_rng_set, FKM_OK, FKM_ENOMEM, FKM_EDOM,
                                FKM_EOVERFLOW, FKM_ENONFINITE, FKM_ENOTSPLIT,
                                FKM_EREPEATED, FKM_ENOSPLIT_RNG)


cdef inline int check_status(int status, str where) except -1:
    """Map a C status code (every one of csrc/fkm_common.h) to a pyfkm
    exception; nothing on FKM_OK."""
    if status == FKM_OK:
        return 0
    from pyfkm import exceptions as exc
    if status == FKM_ENOMEM:
        raise MemoryError(f"{where}: out of memory")
    if status == FKM_EOVERFLOW:
        raise exc.CapacityError(f"{where}: an integer result does not fit in 64 bits")
    if status == FKM_ENONFINITE:
        raise exc.NumericalError(
            f"{where}: squared distances overflow to infinity; rescale the data")
    if status == FKM_EDOM:
        raise exc.InvalidInputError(f"{where}: argument outside the kernel's domain")
    if status == FKM_ENOTSPLIT:
        raise exc.DecodeError(
            f"{where}: the polynomial is not a product of distinct linear "
            f"factors (repeated root or a root outside the field)")
    if status == FKM_EREPEATED:
        raise exc.FieldError(f"{where}: the nodes are not distinct")
    if status == FKM_ENOSPLIT_RNG:
        raise exc.PyfkmError(f"{where}: random splitting failed too often")
    raise exc.PyfkmError(f"{where}: unknown status {status}")


cdef inline const double *in_ptr(const double[::1] view) noexcept:
    """The data of an optional IN array for a kernel: NULL for None or an
    empty view (valid while the caller holds ``view``)."""
    if view is None or view.shape[0] == 0:
        return NULL
    return &view[0]


cdef inline double *out_ptr(double[::1] view) noexcept:
    """The data of an optional OUT array for a kernel: NULL for None or an
    empty view (valid while the caller holds ``view``)."""
    if view is None or view.shape[0] == 0:
        return NULL
    return &view[0]


cdef inline bitgen_t *bitgen_of(object generator) except NULL:
    """The bitgen_t behind a numpy Generator (hold its lock while drawing)."""
    capsule = generator.bit_generator.capsule
    return <bitgen_t *> PyCapsule_GetPointer(capsule, "BitGenerator")


cdef inline void rng_from_bitgen(fkm_rng_t *out, bitgen_t *bg) noexcept nogil:
    """The generator interface of csrc/fkm_rng.h over a numpy bitgen_t."""
    fkm_rng_set(out, bg.state, bg.next_uint64, bg.next_double)
