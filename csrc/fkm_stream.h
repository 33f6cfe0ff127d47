/* fkm_stream.h -- mask streams over F_p: 64-bit keystream words (ChaCha20,
 * fkm_chacha.h) mapped to field elements by rejection and added to (or
 * subtracted from) an accumulator.
 *
 * A word w is kept when w < lim, lim the largest multiple of p not above
 * 2^64 (lim = 0 stands for 2^64: every word kept), and contributes w mod p,
 * uniform on F_p.  Pairwise masks of secure aggregation are such streams,
 * added by one client of a pair and subtracted by the other.
 *
 * Common contract: F from fkm_field_init; acc's entries in [0, p)
 * (unchecked); words and acc do not overlap.
 */
#ifndef FKM_STREAM_H
#define FKM_STREAM_H

#include <stdint.h>

#include "fkm_common.h"
#include "fkm_field.h"

/* fkm_stream_accumulate: one stream.
 * acc    INOUT, n values: acc[filled ..] gets the kept words in order,
 *        added (negate == 0) or subtracted, until position n
 * words  IN, nw words (nw >= 0)
 * filled 0 <= filled <= n: the positions already done by earlier words of
 *        the same stream
 * Returns the new fill count (filled plus the words kept, at most n).
 */
int64_t fkm_stream_accumulate(fkm_field_t F, const uint64_t *words, int64_t nw,
                              uint64_t lim, int negate, uint64_t *acc,
                              int64_t n, int64_t filled);

/* fkm_streams_accumulate: the first nw words of nk short streams at once,
 * the same values as nk calls of fkm_stream_accumulate from filled = 0.
 * acc    INOUT, n <= FKM_STREAMS_MAX_N values: every stream's kept words,
 *        added or subtracted by negate[j]
 * filled OUT, nk: the number of words stream j gave (< n when its nw words
 *        held too few: the caller continues that stream with
 *        fkm_stream_accumulate from filled[j])
 * words  IN, nk x nw: stream j's words at words + j nw
 * negate IN, nk flags
 * Assumes nk >= 0, nw >= 0, 0 <= n <= FKM_STREAMS_MAX_N.
 */
#define FKM_STREAMS_MAX_N 64
void fkm_streams_accumulate(fkm_field_t F, const uint64_t *words, int64_t nk, int64_t nw,
                            uint64_t lim, const uint8_t *negate, uint64_t *acc, int64_t n,
                            int64_t *filled);

#endif /* FKM_STREAM_H */
