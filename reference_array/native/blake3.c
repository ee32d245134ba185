/*
 * Copyright 2026 The cinder-flash Authors
 *
 *    Licensed under the Apache License, Version 2.0 (the "License"); you may
 *    not use this file except in compliance with the License. You may obtain
 *    a copy of the License at
 *
 *         http://www.apache.org/licenses/LICENSE-2.0
 *
 *    Unless required by applicable law or agreed to in writing, software
 *    distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
 *    WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
 *    License for the specific language governing permissions and limitations
 *    under the License.
 */

/* BLAKE3 (hash mode, 32-byte output), written from the specification.
 *
 * The dedup index keys chunks by their BLAKE3 digest; chunks are 16 KiB,
 * so every digest is a small tree of 1 KiB chunk nodes. Whole 1 KiB
 * nodes are compressed eight at a time, one per vector lane; the
 * remaining nodes and the parents go one at a time. The lanes are AVX2
 * intrinsics on x86-64 CPUs that have it (chosen at run time: the
 * message words transposed with unpack/permute, rotations by 16 and 8
 * as byte shuffles), else GCC vector extensions (SSE2 on x86-64, NEON
 * on arm64, plain code elsewhere).
 */

#include <stdint.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define HAVE_AVX2_PATH 1
#endif

#include "native.h"

#define BLOCK_LEN 64
#define CHUNK_LEN 1024

enum {
    CHUNK_START = 1,
    CHUNK_END = 2,
    PARENT = 4,
    ROOT = 8,
};

static const uint32_t IV[8] = {
    0x6A09E667, 0xBB67AE85, 0x3C6EF372, 0xA54FF53A,
    0x510E527F, 0x9B05688C, 0x1F83D9AB, 0x5BE0CD19,
};

/* Message word order of each of the seven rounds: the schedule
 * permutes the previous round's order by (2 6 3 10 7 0 4 13 1 11 12 5
 * 9 14 15 8). */
static const uint8_t SCHEDULE[7][16] = {
    {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15},
    {2, 6, 3, 10, 7, 0, 4, 13, 1, 11, 12, 5, 9, 14, 15, 8},
    {3, 4, 10, 12, 13, 2, 7, 14, 6, 5, 9, 0, 11, 15, 8, 1},
    {10, 7, 12, 9, 14, 3, 13, 15, 4, 0, 11, 2, 5, 8, 1, 6},
    {12, 13, 9, 11, 15, 10, 14, 8, 7, 2, 5, 3, 0, 1, 6, 4},
    {9, 14, 11, 5, 8, 12, 15, 1, 13, 3, 0, 10, 2, 6, 4, 7},
    {11, 15, 5, 0, 1, 9, 8, 6, 14, 10, 2, 12, 3, 4, 7, 13},
};

static inline uint32_t load32(const uint8_t *p)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    uint32_t w;
    memcpy(&w, p, 4);
    return w;
#else
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
        (uint32_t)p[3] << 24;
#endif
}

static inline uint32_t rotr(uint32_t x, int n)
{
    return (x >> n) | (x << (32 - n));
}

/* The mixing function on columns, then diagonals; one round. Written
 * once as a macro over the word type, for one lane and for several. */
#define G(v, a, b, c, d, x, y, ROT) do { \
        v[a] = v[a] + v[b] + (x); v[d] = ROT(v[d] ^ v[a], 16); \
        v[c] = v[c] + v[d]; v[b] = ROT(v[b] ^ v[c], 12); \
        v[a] = v[a] + v[b] + (y); v[d] = ROT(v[d] ^ v[a], 8); \
        v[c] = v[c] + v[d]; v[b] = ROT(v[b] ^ v[c], 7); \
    } while (0)

#define ROUND(v, m, s, ROT) do { \
        G(v, 0, 4, 8, 12, m[s[0]], m[s[1]], ROT); \
        G(v, 1, 5, 9, 13, m[s[2]], m[s[3]], ROT); \
        G(v, 2, 6, 10, 14, m[s[4]], m[s[5]], ROT); \
        G(v, 3, 7, 11, 15, m[s[6]], m[s[7]], ROT); \
        G(v, 0, 5, 10, 15, m[s[8]], m[s[9]], ROT); \
        G(v, 1, 6, 11, 12, m[s[10]], m[s[11]], ROT); \
        G(v, 2, 7, 8, 13, m[s[12]], m[s[13]], ROT); \
        G(v, 3, 4, 9, 14, m[s[14]], m[s[15]], ROT); \
    } while (0)

/* One compression: the new chaining value (first eight output words). */
static void compress1(uint32_t cv[8], const uint8_t block[BLOCK_LEN],
                      uint64_t counter, uint32_t len, uint32_t flags)
{
    uint32_t m[16], v[16];
    for (int i = 0; i < 16; i++)
        m[i] = load32(block + 4 * i);
    memcpy(v, cv, 32);
    memcpy(v + 8, IV, 16);
    v[12] = (uint32_t)counter;
    v[13] = (uint32_t)(counter >> 32);
    v[14] = len;
    v[15] = flags;
    for (int r = 0; r < 7; r++)
        ROUND(v, m, SCHEDULE[r], rotr);
    for (int i = 0; i < 8; i++)
        cv[i] = v[i] ^ v[i + 8];
}

/* The chaining value of one chunk node of ``len`` (1..1024, or 0 for
 * the empty input) bytes. */
static void chunk1(uint32_t cv[8], const uint8_t *in, size_t len,
                   uint64_t counter, uint32_t root)
{
    uint8_t last[BLOCK_LEN];
    size_t blocks = len ? (len + BLOCK_LEN - 1) / BLOCK_LEN : 1;
    memcpy(cv, IV, 32);
    for (size_t b = 0; b < blocks; b++) {
        uint32_t flags = (b == 0 ? CHUNK_START : 0);
        size_t take = len - b * BLOCK_LEN;
        const uint8_t *block = in + b * BLOCK_LEN;
        if (b + 1 == blocks) {
            flags |= CHUNK_END | root;
            memset(last, 0, sizeof(last));
            if (len)
                memcpy(last, block, take);
            block = last;
        } else {
            take = BLOCK_LEN;
        }
        compress1(cv, block, counter, (uint32_t)take, flags);
    }
}

#define LANES 8
typedef uint32_t lanes __attribute__((vector_size(4 * LANES)));

#define rotr_lanes(x, n) (((x) >> (n)) | ((x) << (32 - (n))))

/* Whole chunk nodes, LANES at once, counters ``counter`` onwards. */
static void chunks_wide(uint32_t cvs[LANES][8], const uint8_t *in,
                        uint64_t counter)
{
    lanes h[8], m[16], v[16];
    for (int i = 0; i < 8; i++)
        h[i] = (lanes){0} + IV[i];
    lanes lo, hi;
    for (int l = 0; l < LANES; l++) {
        lo[l] = (uint32_t)(counter + l);
        hi[l] = (uint32_t)((counter + l) >> 32);
    }
    for (int b = 0; b < CHUNK_LEN / BLOCK_LEN; b++) {
        uint32_t flags = (b == 0 ? CHUNK_START : 0) |
            (b == CHUNK_LEN / BLOCK_LEN - 1 ? CHUNK_END : 0);
        for (int i = 0; i < 16; i++)
            for (int l = 0; l < LANES; l++)
                m[i][l] = load32(in + l * CHUNK_LEN + b * BLOCK_LEN + 4 * i);
        for (int i = 0; i < 8; i++)
            v[i] = h[i];
        for (int i = 0; i < 4; i++)
            v[8 + i] = (lanes){0} + IV[i];
        v[12] = lo;
        v[13] = hi;
        v[14] = (lanes){0} + BLOCK_LEN;
        v[15] = (lanes){0} + flags;
        for (int r = 0; r < 7; r++)
            ROUND(v, m, SCHEDULE[r], rotr_lanes);
        for (int i = 0; i < 8; i++)
            h[i] = v[i] ^ v[i + 8];
    }
    for (int l = 0; l < LANES; l++)
        for (int i = 0; i < 8; i++)
            cvs[l][i] = h[i][l];
}

#ifdef HAVE_AVX2_PATH
#define AVX2 __attribute__((target("avx2")))

AVX2 static inline __m256i rot16_8x(__m256i x)
{
    return _mm256_shuffle_epi8(x, _mm256_setr_epi8(
        2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13,
        2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13));
}

AVX2 static inline __m256i rot8_8x(__m256i x)
{
    return _mm256_shuffle_epi8(x, _mm256_setr_epi8(
        1, 2, 3, 0, 5, 6, 7, 4, 9, 10, 11, 8, 13, 14, 15, 12,
        1, 2, 3, 0, 5, 6, 7, 4, 9, 10, 11, 8, 13, 14, 15, 12));
}

#define ROT_8X(x, n) ((n) == 16 ? rot16_8x(x) : (n) == 8 ? rot8_8x(x) : \
    _mm256_or_si256(_mm256_srli_epi32((x), (n)), \
                    _mm256_slli_epi32((x), 32 - (n))))
#define ADD_8X _mm256_add_epi32
#define G_8X(v, a, b, c, d, x, y) do { \
        v[a] = ADD_8X(ADD_8X(v[a], v[b]), (x)); \
        v[d] = ROT_8X(_mm256_xor_si256(v[d], v[a]), 16); \
        v[c] = ADD_8X(v[c], v[d]); \
        v[b] = ROT_8X(_mm256_xor_si256(v[b], v[c]), 12); \
        v[a] = ADD_8X(ADD_8X(v[a], v[b]), (y)); \
        v[d] = ROT_8X(_mm256_xor_si256(v[d], v[a]), 8); \
        v[c] = ADD_8X(v[c], v[d]); \
        v[b] = ROT_8X(_mm256_xor_si256(v[b], v[c]), 7); \
    } while (0)

/* Rows r[0..8) of eight 32-bit words become columns: r[i] word j moves
 * to r[j] word i. */
AVX2 static inline void transpose_8x(__m256i r[8])
{
    __m256i t[8], u[8];
    for (int i = 0; i < 4; i++) {
        t[2 * i] = _mm256_unpacklo_epi32(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm256_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
    }
    for (int i = 0; i < 2; i++) {
        /* Rows 4i..4i+3: words 0 and 4, 1 and 5, 2 and 6, 3 and 7. */
        u[4 * i] = _mm256_unpacklo_epi64(t[4 * i], t[4 * i + 2]);
        u[4 * i + 1] = _mm256_unpackhi_epi64(t[4 * i], t[4 * i + 2]);
        u[4 * i + 2] = _mm256_unpacklo_epi64(t[4 * i + 1], t[4 * i + 3]);
        u[4 * i + 3] = _mm256_unpackhi_epi64(t[4 * i + 1], t[4 * i + 3]);
    }
    for (int j = 0; j < 4; j++) {
        r[j] = _mm256_permute2x128_si256(u[j], u[4 + j], 0x20);
        r[j + 4] = _mm256_permute2x128_si256(u[j], u[4 + j], 0x31);
    }
}

/* chunks_wide with AVX2 intrinsics. */
AVX2 static void chunks_avx2(uint32_t cvs[LANES][8], const uint8_t *in,
                             uint64_t counter)
{
    __m256i h[8], m[16], v[16];
    for (int i = 0; i < 8; i++)
        h[i] = _mm256_set1_epi32((int)IV[i]);
    __m256i lanes_n = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    __m256i lo = _mm256_add_epi32(_mm256_set1_epi32((int)counter), lanes_n);
    /* A lane whose low word wrapped carries into its high word. */
    __m256i carry = _mm256_cmpgt_epi32(
        _mm256_xor_si256(_mm256_set1_epi32((int)counter),
                         _mm256_set1_epi32(INT32_MIN)),
        _mm256_xor_si256(lo, _mm256_set1_epi32(INT32_MIN)));
    __m256i hi = _mm256_sub_epi32(
        _mm256_set1_epi32((int)(counter >> 32)), carry);
    for (int b = 0; b < CHUNK_LEN / BLOCK_LEN; b++) {
        uint32_t flags = (b == 0 ? CHUNK_START : 0) |
            (b == CHUNK_LEN / BLOCK_LEN - 1 ? CHUNK_END : 0);
        for (int l = 0; l < LANES; l++) {
            const uint8_t *p = in + l * CHUNK_LEN + b * BLOCK_LEN;
            m[l] = _mm256_loadu_si256((const __m256i *)p);
            m[8 + l] = _mm256_loadu_si256((const __m256i *)(p + 32));
        }
        transpose_8x(m);
        transpose_8x(m + 8);
        for (int i = 0; i < 8; i++)
            v[i] = h[i];
        for (int i = 0; i < 4; i++)
            v[8 + i] = _mm256_set1_epi32((int)IV[i]);
        v[12] = lo;
        v[13] = hi;
        v[14] = _mm256_set1_epi32(BLOCK_LEN);
        v[15] = _mm256_set1_epi32((int)flags);
#pragma GCC unroll 7
        for (int r = 0; r < 7; r++) {
            const uint8_t *s = SCHEDULE[r];
            G_8X(v, 0, 4, 8, 12, m[s[0]], m[s[1]]);
            G_8X(v, 1, 5, 9, 13, m[s[2]], m[s[3]]);
            G_8X(v, 2, 6, 10, 14, m[s[4]], m[s[5]]);
            G_8X(v, 3, 7, 11, 15, m[s[6]], m[s[7]]);
            G_8X(v, 0, 5, 10, 15, m[s[8]], m[s[9]]);
            G_8X(v, 1, 6, 11, 12, m[s[10]], m[s[11]]);
            G_8X(v, 2, 7, 8, 13, m[s[12]], m[s[13]]);
            G_8X(v, 3, 4, 9, 14, m[s[14]], m[s[15]]);
        }
        for (int i = 0; i < 8; i++)
            h[i] = _mm256_xor_si256(v[i], v[i + 8]);
    }
    transpose_8x(h);
    for (int l = 0; l < LANES; l++)
        _mm256_storeu_si256((__m256i *)cvs[l], h[l]);
}
#endif

typedef void (*WideFn)(uint32_t cvs[LANES][8], const uint8_t *in,
                       uint64_t counter);

/* The lanes this CPU runs best (a load of libgcc's CPU model once it is
 * set; cheap beside a digest). */
static WideFn wide_for_cpu(void)
{
#ifdef HAVE_AVX2_PATH
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2"))
        return chunks_avx2;
#endif
    return chunks_wide;
}

const char *native_blake3_simd(void)
{
    return wide_for_cpu() == chunks_wide ? "" : "avx2";
}

static void parent(uint32_t out[8], const uint32_t left[8],
                   const uint32_t right[8], uint32_t root)
{
    uint8_t block[BLOCK_LEN];
    for (int i = 0; i < 8; i++) {
        for (int k = 0; k < 4; k++) {
            block[4 * i + k] = (uint8_t)(left[i] >> (8 * k));
            block[32 + 4 * i + k] = (uint8_t)(right[i] >> (8 * k));
        }
    }
    memcpy(out, IV, 32);
    compress1(out, block, 0, BLOCK_LEN, PARENT | root);
}

/* The subtree over chunk nodes [lo, hi): its left part holds the largest
 * power of two of nodes that leaves the right part non-empty. */
static void merge(uint32_t out[8], uint32_t (*cvs)[8], size_t lo, size_t hi,
                  uint32_t root)
{
    if (hi - lo == 1) {
        memcpy(out, cvs[lo], 32);
        return;
    }
    size_t left = 1;
    while (left * 2 < hi - lo)
        left *= 2;
    uint32_t l[8], r[8];
    merge(l, cvs, lo, lo + left, 0);
    merge(r, cvs, lo + left, hi, 0);
    parent(out, l, r, root);
}

/* Digests of inputs up to ``NATIVE_DIGEST_MAX_CHUNKS`` KiB (a chunk of
 * the store is at most that); longer inputs return -1. */
int native_blake3(const uint8_t *in, size_t len, uint8_t out[32])
{
    return native_blake3_with(in, len, out, 1);
}

/* ``simd``: the CPU's best lanes, else the portable ones (the tests
 * compare both with the reference). */
int native_blake3_with(const uint8_t *in, size_t len, uint8_t out[32],
                       int simd)
{
    WideFn wide = simd ? wide_for_cpu() : chunks_wide;
    uint32_t root_cv[8];
    size_t n = len ? (len + CHUNK_LEN - 1) / CHUNK_LEN : 1;
    if (n > NATIVE_DIGEST_MAX_CHUNKS)
        return -1;
    if (n == 1) {
        chunk1(root_cv, in, len, 0, ROOT);
    } else {
        uint32_t cvs[NATIVE_DIGEST_MAX_CHUNKS][8];
        size_t i = 0, whole = len / CHUNK_LEN;
        for (; i + LANES <= whole; i += LANES)
            wide(cvs + i, in + i * CHUNK_LEN, i);
        for (; i < n; i++) {
            size_t take = i + 1 < n ? CHUNK_LEN : len - i * CHUNK_LEN;
            chunk1(cvs[i], in + i * CHUNK_LEN, take, i, 0);
        }
        merge(root_cv, cvs, 0, n, ROOT);
    }
    for (int i = 0; i < 8; i++)
        for (int k = 0; k < 4; k++)
            out[4 * i + k] = (uint8_t)(root_cv[i] >> (8 * k));
    return 0;
}
