/* fkm_chacha.c -- ChaCha20 block function and buffered keystream.
 *
 * Written from the specification (RFC 8439, sections 2.1-2.3).  The refill
 * and fkm_chacha_first_blocks compute FKM_CHACHA_NBLK blocks side by side
 * with the state laid out as x[word][lane]: with GCC/clang as 16 vector
 * variables of 8 lanes (an AVX2 form chosen at run time on x86-64, a
 * generic one elsewhere), otherwise as an array whose lane loop the
 * compiler may vectorize.  fkm_chacha_block is the one-block reference form.
 */
#include "fkm_chacha.h"

#include <string.h>

/* The vector form needs GCC vector extensions with __builtin_shufflevector
 * (GCC >= 12, clang) on a little-endian host; FKM_CHACHA_PORTABLE forces
 * the portable form. */
#if defined(__has_builtin)
#if __has_builtin(__builtin_shufflevector)
#define FKM_CHACHA_HAS_SHUFFLEVECTOR 1
#endif
#endif
#if defined(__GNUC__) && defined(FKM_CHACHA_HAS_SHUFFLEVECTOR) && defined(__BYTE_ORDER__) && \
    __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ && !defined(FKM_CHACHA_PORTABLE)
#define FKM_CHACHA_VEC 1
#else
#define FKM_CHACHA_VEC 0
#endif

/* An AVX2 form picked at run time where FKM_HOT dispatches (fkm_common.h). */
#if FKM_CHACHA_VEC && defined(__x86_64__) && defined(__ELF__) && !defined(FKM_NO_CLONES) && \
    ((defined(__GNUC__) && __GNUC__ >= 12 && !defined(__clang__)) || \
     (defined(__clang__) && __clang_major__ >= 14))
#define FKM_CHACHA_AVX2 1
#else
#define FKM_CHACHA_AVX2 0
#endif

#define ROTL32(v, n) (((v) << (n)) | ((v) >> (32 - (n))))

#define QR(a, b, c, d)                 \
    do {                               \
        a += b; d ^= a; d = ROTL32(d, 16); \
        c += d; b ^= c; b = ROTL32(b, 12); \
        a += b; d ^= a; d = ROTL32(d, 8);  \
        c += d; b ^= c; b = ROTL32(b, 7);  \
    } while (0)

static uint32_t load_le32(const uint8_t *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) |
           ((uint32_t)p[3] << 24);
}

void fkm_chacha_block(uint32_t out[16], const uint32_t input[16])
{
    FKM_ASSERT(out != NULL && input != NULL);
    uint32_t x[16];
    memcpy(x, input, sizeof x);
    for (int r = 0; r < 10; r++) {
        QR(x[0], x[4], x[8], x[12]);
        QR(x[1], x[5], x[9], x[13]);
        QR(x[2], x[6], x[10], x[14]);
        QR(x[3], x[7], x[11], x[15]);
        QR(x[0], x[5], x[10], x[15]);
        QR(x[1], x[6], x[11], x[12]);
        QR(x[2], x[7], x[8], x[13]);
        QR(x[3], x[4], x[9], x[14]);
    }
    for (int i = 0; i < 16; i++)
        out[i] = x[i] + input[i];
}

void fkm_chacha_init(fkm_chacha_t *st, const uint8_t key[32],
                     const uint8_t nonce[12], uint32_t counter)
{
    FKM_ASSERT(st != NULL && key != NULL && nonce != NULL);
    st->input[0] = 0x61707865u; /* "expa" */
    st->input[1] = 0x3320646eu; /* "nd 3" */
    st->input[2] = 0x79622d32u; /* "2-by" */
    st->input[3] = 0x6b206574u; /* "te k" */
    for (int i = 0; i < 8; i++)
        st->input[4 + i] = load_le32(key + 4 * i);
    st->input[12] = counter;
    for (int i = 0; i < 3; i++)
        st->input[13 + i] = load_le32(nonce + 4 * i);
    st->pos = FKM_CHACHA_NWORDS;
    st->last = 0;
    st->failed = 0;
    st->filler = 0;
}

#if FKM_CHACHA_VEC
/* FKM_CHACHA_NBLK = 8 states side by side in GCC vector variables: vector w
 * holds word w of the 8 states (lane l = block l), so a quarter round is 12
 * vector instructions for 8 blocks and the 16 words stay in registers.
 * Rotations by 16 and 8 bits are byte shuffles when `shuf` is set (the
 * AVX2 build: one vpshufb instead of two shifts and an or), and the 8x8
 * transpositions between "word per vector" and "block per row" are
 * two-operand shuffles (unpack / permute) there; the generic build uses
 * shifts and goes through memory for the transpositions, since GCC lowers
 * 256-bit shuffles without AVX element by element. */
typedef uint32_t fkm_v8u32 __attribute__((vector_size(32)));
typedef uint8_t fkm_v32u8 __attribute__((vector_size(32)));

#define VROTL(v, n) (((v) << (n)) | ((v) >> (32 - (n))))

/* The 32 byte indices of the permutation that applies p0..p3 within each
 * of the 8 lanes of 4 bytes (byte b of a lane takes byte p_b of it). */
#define VLANES(p0, p1, p2, p3)                                                \
    p0, p1, p2, p3, 4 + p0, 4 + p1, 4 + p2, 4 + p3, 8 + p0, 8 + p1, 8 + p2,   \
        8 + p3, 12 + p0, 12 + p1, 12 + p2, 12 + p3, 16 + p0, 16 + p1,         \
        16 + p2, 16 + p3, 20 + p0, 20 + p1, 20 + p2, 20 + p3, 24 + p0,        \
        24 + p1, 24 + p2, 24 + p3, 28 + p0, 28 + p1, 28 + p2, 28 + p3

/* rotation of each 32-bit lane left by n (a multiple of 8) bits, as the
 * byte permutation p0..p3 of each lane (VLANES) when shuf is set */
#define VROTB(v, n, shuf, p0, p1, p2, p3)                                     \
    ((shuf) ? (fkm_v8u32)__builtin_shufflevector((fkm_v32u8)(v), (fkm_v32u8)(v), \
                                                 VLANES(p0, p1, p2, p3))       \
            : VROTL(v, n))
#define VROT16(v, shuf) VROTB(v, 16, shuf, 2, 3, 0, 1)
#define VROT8(v, shuf) VROTB(v, 8, shuf, 3, 0, 1, 2)

#define VQR(a, b, c, d, shuf)                           \
    do {                                                \
        a += b; d ^= a; d = VROT16(d, shuf);            \
        c += d; b ^= c; b = VROTL(b, 12);               \
        a += b; d ^= a; d = VROT8(d, shuf);             \
        c += d; b ^= c; b = VROTL(b, 7);                \
    } while (0)

/* x[w] <- ChaCha20 block words w of the 8 lanes: 20 rounds on x, then the
 * input x added back (RFC 8439 section 2.3). */
static inline __attribute__((always_inline)) void vec_block8(fkm_v8u32 x[16],
                                                             const int shuf)
{
    fkm_v8u32 x0 = x[0], x1 = x[1], x2 = x[2], x3 = x[3], x4 = x[4], x5 = x[5],
              x6 = x[6], x7 = x[7], x8 = x[8], x9 = x[9], x10 = x[10], x11 = x[11],
              x12 = x[12], x13 = x[13], x14 = x[14], x15 = x[15];
    for (int r = 0; r < 10; r++) {
        VQR(x0, x4, x8, x12, shuf);
        VQR(x1, x5, x9, x13, shuf);
        VQR(x2, x6, x10, x14, shuf);
        VQR(x3, x7, x11, x15, shuf);
        VQR(x0, x5, x10, x15, shuf);
        VQR(x1, x6, x11, x12, shuf);
        VQR(x2, x7, x8, x13, shuf);
        VQR(x3, x4, x9, x14, shuf);
    }
    x[0] += x0; x[1] += x1; x[2] += x2; x[3] += x3;
    x[4] += x4; x[5] += x5; x[6] += x6; x[7] += x7;
    x[8] += x8; x[9] += x9; x[10] += x10; x[11] += x11;
    x[12] += x12; x[13] += x13; x[14] += x14; x[15] += x15;
}

/* In-place 8x8 transposition of 32-bit elements: r[i][j] <-> r[j][i]
 * (unpack 32, unpack 64, then 128-bit halves; AVX2 builds only). */
static inline __attribute__((always_inline)) void vec_transpose8(fkm_v8u32 r[8])
{
    fkm_v8u32 t[8], u[8];
    for (int i = 0; i < 8; i += 2) {
        t[i] = __builtin_shufflevector(r[i], r[i + 1], 0, 8, 1, 9, 4, 12, 5, 13);
        t[i + 1] = __builtin_shufflevector(r[i], r[i + 1], 2, 10, 3, 11, 6, 14, 7, 15);
    }
    for (int h = 0; h < 8; h += 4) {
        /* u[h + c] = rows h..h+3 of columns c (low half) and c + 4 (high) */
        u[h + 0] = __builtin_shufflevector(t[h], t[h + 2], 0, 1, 8, 9, 4, 5, 12, 13);
        u[h + 1] = __builtin_shufflevector(t[h], t[h + 2], 2, 3, 10, 11, 6, 7, 14, 15);
        u[h + 2] = __builtin_shufflevector(t[h + 1], t[h + 3], 0, 1, 8, 9, 4, 5, 12, 13);
        u[h + 3] = __builtin_shufflevector(t[h + 1], t[h + 3], 2, 3, 10, 11, 6, 7, 14, 15);
    }
    for (int c = 0; c < 4; c++) {
        r[c] = __builtin_shufflevector(u[c], u[c + 4], 0, 1, 2, 3, 8, 9, 10, 11);
        r[c + 4] = __builtin_shufflevector(u[c], u[c + 4], 4, 5, 6, 7, 12, 13, 14, 15);
    }
}

/* Serialize the 8 blocks of x (x[w] = word w of each lane) block after
 * block: dst gets lanes * 64 bytes, block l at dst + 64 l (host order is
 * little-endian here, so the 32-bit words are the keystream bytes). */
static inline __attribute__((always_inline)) void vec_store8(uint8_t *dst, fkm_v8u32 x[16],
                                                             int lanes, const int shuf)
{
    if (shuf) {
        vec_transpose8(x);
        vec_transpose8(x + 8);
        if (lanes == FKM_CHACHA_NBLK) {
            for (int l = 0; l < FKM_CHACHA_NBLK; l++) {
                memcpy(dst + 64 * l, &x[l], 32);
                memcpy(dst + 64 * l + 32, &x[8 + l], 32);
            }
        } else {
            for (int l = 0; l < lanes; l++) {
                memcpy(dst + 64 * l, &x[l], 32);
                memcpy(dst + 64 * l + 32, &x[8 + l], 32);
            }
        }
    } else {
        uint32_t t[16][FKM_CHACHA_NBLK], o[16];
        memcpy(t, x, sizeof t);
        for (int l = 0; l < lanes; l++) {
            for (int w = 0; w < 16; w++)
                o[w] = t[w][l];
            memcpy(dst + 64 * l, o, sizeof o);
        }
    }
}

/* The refill: 8 consecutive blocks of the state `in` (counters in[12] + l). */
static inline __attribute__((always_inline)) void blocks_body(uint64_t *restrict buf,
                                                              const uint32_t *restrict in,
                                                              const int shuf)
{
    fkm_v8u32 x[16];
    for (int w = 0; w < 16; w++)
        x[w] = (fkm_v8u32){in[w], in[w], in[w], in[w], in[w], in[w], in[w], in[w]};
    x[12] += (fkm_v8u32){0, 1, 2, 3, 4, 5, 6, 7};
    vec_block8(x, shuf);
    vec_store8((uint8_t *)buf, x, FKM_CHACHA_NBLK, shuf);
}

/* fkm_chacha_first_blocks, 8 (key, counter) lanes at a time; the key and
 * counter of the next lane are carried from group to group (no divisions). */
static inline __attribute__((always_inline)) void first_blocks_body(
    const uint8_t *keys, fkm_index_t nk, const uint8_t nonce[12], uint32_t nb,
    uint64_t *out, const int shuf)
{
    const uint32_t n0 = load_le32(nonce), n1 = load_le32(nonce + 4), n2 = load_le32(nonce + 8);
    fkm_index_t total = nk * (fkm_index_t)nb, key = 0;
    uint32_t ctr = 0;
    for (fkm_index_t g = 0; g < total; g += FKM_CHACHA_NBLK) {
        int lanes = (int)(total - g < FKM_CHACHA_NBLK ? total - g : FKM_CHACHA_NBLK);
        const uint8_t *kp[FKM_CHACHA_NBLK];
        uint32_t c[FKM_CHACHA_NBLK];
        /* idle lanes repeat the last real one (their output is dropped) */
        for (int l = 0; l < FKM_CHACHA_NBLK; l++) {
            kp[l] = keys + 32 * key;
            c[l] = ctr;
            if (l + 1 < lanes && ++ctr == nb) {
                ctr = 0;
                key++;
            }
        }
        if (++ctr == nb) { /* past the last real lane */
            ctr = 0;
            key++;
        }
        fkm_v8u32 x[16];
        if (shuf) { /* key l as row l, transposed to words */
            for (int l = 0; l < FKM_CHACHA_NBLK; l++)
                memcpy(&x[4 + l], kp[l], 32);
            vec_transpose8(x + 4);
        } else {
            uint32_t k[8][FKM_CHACHA_NBLK];
            for (int l = 0; l < FKM_CHACHA_NBLK; l++)
                for (int w = 0; w < 8; w++)
                    k[w][l] = load_le32(kp[l] + 4 * w);
            memcpy(&x[4], k, sizeof k);
        }
        x[0] = (fkm_v8u32){0} + 0x61707865u; /* "expa" */
        x[1] = (fkm_v8u32){0} + 0x3320646eu; /* "nd 3" */
        x[2] = (fkm_v8u32){0} + 0x79622d32u; /* "2-by" */
        x[3] = (fkm_v8u32){0} + 0x6b206574u; /* "te k" */
        memcpy(&x[12], c, sizeof c);
        x[13] = (fkm_v8u32){0} + n0;
        x[14] = (fkm_v8u32){0} + n1;
        x[15] = (fkm_v8u32){0} + n2;
        vec_block8(x, shuf);
        vec_store8((uint8_t *)(out + g * 8), x, lanes, shuf);
    }
}

#if FKM_CHACHA_AVX2
/* The AVX2 forms, picked at run time (the generic forms serve other CPUs). */
__attribute__((target("avx2"))) static void blocks_avx2(uint64_t *restrict buf,
                                                        const uint32_t *restrict in)
{
    blocks_body(buf, in, 1);
}

__attribute__((target("avx2"))) static void first_blocks_avx2(
    const uint8_t *keys, fkm_index_t nk, const uint8_t nonce[12], uint32_t nb, uint64_t *out)
{
    first_blocks_body(keys, nk, nonce, nb, out, 1);
}

static int have_avx2(void)
{
    __builtin_cpu_init(); /* idempotent; needed only before constructors ran */
    return __builtin_cpu_supports("avx2");
}
#endif

static void chacha_blocks(uint64_t *restrict buf, const uint32_t *restrict in)
{
#if FKM_CHACHA_AVX2
    if (have_avx2()) {
        blocks_avx2(buf, in);
        return;
    }
#endif
    blocks_body(buf, in, 0);
}

void fkm_chacha_first_blocks(const uint8_t *keys, fkm_index_t nk, const uint8_t nonce[12],
                             uint32_t nb, uint64_t *out)
{
    FKM_ASSERT(nk >= 0 && nb >= 1 && nonce != NULL);
    FKM_ASSERT(nk == 0 || (keys != NULL && out != NULL));
#if FKM_CHACHA_AVX2
    if (have_avx2()) {
        first_blocks_avx2(keys, nk, nonce, nb, out);
        return;
    }
#endif
    first_blocks_body(keys, nk, nonce, nb, out, 0);
}

#else /* portable form */

/* The 20 rounds on FKM_CHACHA_NBLK states side by side (x[word][lane]);
 * the loop over lanes is the one the compiler vectorizes. */
static inline void lane_rounds(uint32_t x[16][FKM_CHACHA_NBLK])
{
    for (int r = 0; r < 10; r++) {
        for (int l = 0; l < FKM_CHACHA_NBLK; l++) {
            QR(x[0][l], x[4][l], x[8][l], x[12][l]);
            QR(x[1][l], x[5][l], x[9][l], x[13][l]);
            QR(x[2][l], x[6][l], x[10][l], x[14][l]);
            QR(x[3][l], x[7][l], x[11][l], x[15][l]);
            QR(x[0][l], x[5][l], x[10][l], x[15][l]);
            QR(x[1][l], x[6][l], x[11][l], x[12][l]);
            QR(x[2][l], x[7][l], x[8][l], x[13][l]);
            QR(x[3][l], x[4][l], x[9][l], x[14][l]);
        }
    }
}

FKM_HOT
static void chacha_blocks(uint64_t *restrict buf, const uint32_t *restrict in)
{
    uint32_t x[16][FKM_CHACHA_NBLK];
    for (int w = 0; w < 16; w++)
        for (int l = 0; l < FKM_CHACHA_NBLK; l++)
            x[w][l] = in[w];
    for (int l = 0; l < FKM_CHACHA_NBLK; l++)
        x[12][l] += (uint32_t)l;
    lane_rounds(x);
    /* add the input and serialize: word w of block l is the w-th 32-bit
     * little-endian chunk of the block's 64 keystream bytes */
    for (int l = 0; l < FKM_CHACHA_NBLK; l++) {
        for (int w = 0; w < 16; w += 2) {
            uint32_t lo = x[w][l] + in[w] + (w == 12 ? (uint32_t)l : 0u);
            uint32_t hi = x[w + 1][l] + in[w + 1];
            buf[l * 8 + w / 2] = (uint64_t)lo | ((uint64_t)hi << 32);
        }
    }
}

#endif /* FKM_CHACHA_VEC */

void fkm_chacha_refill(fkm_chacha_t *st)
{
    FKM_ASSERT(st != NULL);
    uint32_t ctr = st->input[12];
    st->pos = 0;
    if (st->last || ctr > UINT32_MAX - (FKM_CHACHA_NBLK - 1)) {
        /* the next blocks would reuse counter values: refuse, and serve a
         * SplitMix64 sequence so that callers' loops terminate */
        st->failed = 1;
        for (int i = 0; i < FKM_CHACHA_NWORDS; i++) {
            uint64_t z = (st->filler += UINT64_C(0x9e3779b97f4a7c15));
            z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
            z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
            st->buf[i] = z ^ (z >> 31);
        }
        return;
    }
    chacha_blocks(st->buf, st->input);
    if (ctr == UINT32_MAX - (FKM_CHACHA_NBLK - 1))
        st->last = 1;
    st->input[12] = ctr + FKM_CHACHA_NBLK; /* wraps to 0 only when last */
}

static uint64_t chacha_next_uint64(void *st)
{
    return fkm_chacha_u64((fkm_chacha_t *)st);
}

static double chacha_next_double(void *st)
{
    return (double)(fkm_chacha_u64((fkm_chacha_t *)st) >> 11) * 0x1.0p-53;
}

void fkm_chacha_rng(fkm_rng_t *rng, fkm_chacha_t *st)
{
    FKM_ASSERT(rng != NULL && st != NULL);
    fkm_rng_set(rng, st, chacha_next_uint64, chacha_next_double);
    rng->words = st->buf; /* the buffer view: words[pos..) not drawn yet */
    rng->pos = &st->pos;
    rng->nwords = FKM_CHACHA_NWORDS;
}

int fkm_chacha_words(fkm_chacha_t *st, uint64_t *out, fkm_index_t n)
{
    FKM_ASSERT(st != NULL && n >= 0 && (n == 0 || out != NULL));
    /* the buffered words in runs (the same words fkm_chacha_u64 returns) */
    for (fkm_index_t i = 0; i < n;) {
        if (st->pos >= FKM_CHACHA_NWORDS)
            fkm_chacha_refill(st);
        fkm_index_t run = FKM_CHACHA_NWORDS - st->pos;
        if (run > n - i)
            run = n - i;
        memcpy(out + i, st->buf + st->pos, (size_t)run * sizeof *out);
        st->pos += (int)run;
        i += run;
    }
    return st->failed ? FKM_EOVERFLOW : FKM_OK;
}

#if !FKM_CHACHA_VEC
FKM_HOT
void fkm_chacha_first_blocks(const uint8_t *keys, fkm_index_t nk, const uint8_t nonce[12],
                             uint32_t nb, uint64_t *out)
{
    FKM_ASSERT(nk >= 0 && nb >= 1 && nonce != NULL);
    FKM_ASSERT(nk == 0 || (keys != NULL && out != NULL));
    uint32_t nw[3];
    for (int i = 0; i < 3; i++)
        nw[i] = load_le32(nonce + 4 * i);
    fkm_index_t total = nk * (fkm_index_t)nb;
    for (fkm_index_t g = 0; g < total; g += FKM_CHACHA_NBLK) {
        uint32_t in[16][FKM_CHACHA_NBLK], x[16][FKM_CHACHA_NBLK];
        int lanes = (int)(total - g < FKM_CHACHA_NBLK ? total - g : FKM_CHACHA_NBLK);
        for (int l = 0; l < FKM_CHACHA_NBLK; l++) {
            /* idle lanes repeat the last real one (their output is dropped) */
            fkm_index_t i = g + (l < lanes ? l : lanes - 1);
            const uint8_t *key = keys + 32 * (i / nb);
            in[0][l] = 0x61707865u;
            in[1][l] = 0x3320646eu;
            in[2][l] = 0x79622d32u;
            in[3][l] = 0x6b206574u;
            for (int w = 0; w < 8; w++)
                in[4 + w][l] = load_le32(key + 4 * w);
            in[12][l] = (uint32_t)(i % nb);
            for (int w = 0; w < 3; w++)
                in[13 + w][l] = nw[w];
        }
        memcpy(x, in, sizeof x);
        lane_rounds(x);
        for (int l = 0; l < lanes; l++) {
            uint64_t *o = out + (g + l) * 8;
            for (int w = 0; w < 16; w += 2)
                o[w / 2] = (uint64_t)(x[w][l] + in[w][l]) |
                           ((uint64_t)(x[w + 1][l] + in[w + 1][l]) << 32);
        }
    }
}
#endif /* !FKM_CHACHA_VEC */
