/* fkm_typed.h -- instantiates a type-generic body once per input type.
 *
 * Define FKM_TYPED_BODY as the body's header name (a string literal, e.g.
 * "fkm_lloyd_impl.h") and include this file.  The body is included twice:
 * with FKM_REAL double and FKM_SFX f64, then with FKM_REAL float and FKM_SFX
 * f32; it names its functions with the suffix (its FKM_NAME).  Both macros
 * and FKM_TYPED_BODY are undefined afterwards.  No include guard: each
 * inclusion instantiates one body.
 */
#ifndef FKM_TYPED_BODY
#error "define FKM_TYPED_BODY before including fkm_typed.h"
#endif

#define FKM_REAL double
#define FKM_SFX f64
#include FKM_TYPED_BODY
#undef FKM_REAL
#undef FKM_SFX

#define FKM_REAL float
#define FKM_SFX f32
#include FKM_TYPED_BODY
#undef FKM_REAL
#undef FKM_SFX

#undef FKM_TYPED_BODY
