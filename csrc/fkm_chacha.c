/* fkm_chacha.c -- ChaCha20 block function and buffered keystream.
 *
 * Written from the specification (RFC 8439, sections 2.1-2.3).  The refill
 * computes FKM_CHACHA_NBLK blocks side by side with the state laid out as
 * x[word][lane], so that the compiler vectorizes the quarter rounds across
 * blocks; fkm_chacha_block is the one-block reference form.
 */
#include "fkm_chacha.h"

#include <string.h>

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

void fkm_chacha_refill(fkm_chacha_t *st)
{
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

int fkm_chacha_words(fkm_chacha_t *st, uint64_t *out, fkm_index_t n)
{
    for (fkm_index_t i = 0; i < n; i++)
        out[i] = fkm_chacha_u64(st);
    return st->failed ? FKM_EOVERFLOW : FKM_OK;
}

FKM_HOT
void fkm_chacha_first_blocks(const uint8_t *keys, fkm_index_t nk, const uint8_t nonce[12],
                             uint32_t nb, uint64_t *out)
{
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
