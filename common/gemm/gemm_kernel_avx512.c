// gemm_kernel_avx512.c: AVX-512 micro-kernel, 14×32. Build with -mavx512f -mfma.
//
// Why 14×32: a core issues two 512-bit FMAs per cycle and each takes about
// 4 cycles, so at least 2·4 = 8 independent accumulators must be in flight.
// More accumulators per loaded value means fewer loads per FMA. AVX-512 has
// 32 zmm registers; a 14×32 block of C is 14 rows × 2 vectors = 28
// accumulators, leaving 2 registers for the two vectors of a row of B and
// room for the broadcast of an element of A. Each step p loads 2 vectors of
// B and broadcasts 14 elements of A for 28 FMAs: 16 loads, 184 bytes, for
// 896 flops, the most flops per byte loaded that fits. (9×48 has one
// accumulator fewer and needs only 12 loads per step, 9 + 3, but moves
// 228 bytes for 864 flops; 8×48 and 6×64 use only 24 accumulators.)

// gemm.h sits outside the guard so the file is never an empty translation unit.
#include "gemm_parts.h"

#if defined(__x86_64__)

#include <immintrin.h>
#include <stdint.h>

// C = alpha·acc + beta·C for the m×n block C (m ≤ rows, the kernel's rows
// of accumulators; n ≤ 32); C is not read when beta is 0. Masks cover the
// columns j < n, so full and partial blocks get the same arithmetic.
static inline void store_block(int rows, int m, int n, __m512 acc[][2], float *C, int ldc,
                               float alpha, float beta)
{
    __mmask16 mask0 = n >= 16 ? 0xFFFF : (__mmask16)((1u << n) - 1);
    __mmask16 mask1 = n >= 32 ? 0xFFFF
                      : n > 16 ? (__mmask16)((1u << (n - 16)) - 1)
                               : 0;
    __m512 va = _mm512_set1_ps(alpha);
    __m512 vb = _mm512_set1_ps(beta);
#pragma GCC unroll 16
    for (int i = 0; i < rows; i++) {
        if (i >= m)
            break;
        float *c = C + (long)i * ldc;
        __m512 r0 = _mm512_mul_ps(va, acc[i][0]);
        __m512 r1 = _mm512_mul_ps(va, acc[i][1]);
        if (beta != 0.0f) {
            // alpha·acc + beta·c, with one rounding after the product alpha·acc
            // and one after the sum, as in the other kernels.
            r0 = _mm512_add_ps(r0, _mm512_mul_ps(vb, _mm512_maskz_loadu_ps(mask0, c)));
            r1 = _mm512_add_ps(r1, _mm512_mul_ps(vb, _mm512_maskz_loadu_ps(mask1, c + 16)));
        }
        _mm512_mask_storeu_ps(c, mask0, r0);
        _mm512_mask_storeu_ps(c + 16, mask1, r1);
    }
}

// listing: microkernel_avx512
static void kernel_14x32(int m, int n, int kc, const float *a, const float *b,
                         float *C, int ldc, float alpha, float beta, int prefetch_c)
{
    enum { MR = GEMM_AVX512_MR, NR = GEMM_AVX512_NR };
    // acc[i][v] holds C[i][16v … 16v+15]; the compiler keeps all 28 in zmm
    // registers because every index is a constant once the loops unroll.
    __m512 acc[MR][2];
#pragma GCC unroll 16
    for (int i = 0; i < MR; i++) {
        acc[i][0] = _mm512_setzero_ps();
        acc[i][1] = _mm512_setzero_ps();
    }

    // Ask for the block of C a while (64 steps, ~900 cycles) before the
    // loads at the end need it. Its 14 rows lie ldc floats apart, usually
    // in different pages and not in cache. Chapter 4's staircase measures
    // what this buys (step3_simd_avx512 against packed_avx512). Exactly when
    // matters little, as long as it is well ahead of the end.
    // (prefetch_c = 0 asks never: step p = -1 does not come.)
    enum { PREFETCH_AHEAD = 64, A_AHEAD = 16 };
    int prefetch_at = !prefetch_c ? -1 : kc > PREFETCH_AHEAD ? kc - PREFETCH_AHEAD : 0;
    // a is MR×kc (a[p*MR + i]); b is kc×NR (b[p*NR + j]), 64-byte aligned.
    for (int p = 0; p < kc; p++) {
        if (p == prefetch_at) {
#pragma GCC unroll 16
            for (int i = 0; i < MR; i++) {
                if (i >= m)
                    break;
                _mm_prefetch((const char *)(C + (long)i * ldc), _MM_HINT_T0);
                _mm_prefetch((const char *)(C + (long)i * ldc + NR - 1), _MM_HINT_T0);
            }
        }
        // With a long kc the packed block of A is too big for L2 and the
        // sliver comes from L3: ask for it 16 steps (about 220 cycles)
        // before it is needed (+2 to 4%, measured at n = 512 to 4096).
        _mm_prefetch((const char *)(a + A_AHEAD * MR), _MM_HINT_T0);
        __m512 b0 = _mm512_load_ps(b + 0);
        __m512 b1 = _mm512_load_ps(b + 16);
#pragma GCC unroll 16
        for (int i = 0; i < MR; i++) {
            __m512 ai = _mm512_set1_ps(a[i]);
            acc[i][0] = _mm512_fmadd_ps(ai, b0, acc[i][0]);
            acc[i][1] = _mm512_fmadd_ps(ai, b1, acc[i][1]);
        }
        a += MR;
        b += NR;
    }

    store_block(MR, m, n, acc, C, ldc, alpha, beta);
}
// end listing

// listing: kernel_8x32
// A sliver of 8 rows or fewer. 64 = 4·14 + 8: a batch of 64 images, or a
// layer of 64 filters, leaves a last sliver of 8 rows and 6 rows of zeros,
// and kernel_14x32 would spend 6 of every 70 FMAs (9 %) on the zeros. Here
// the 8 rows alone: 16 accumulators, still twice the 8 that two FMA pipes
// of 4 cycles' latency need. Each sum runs in the order p = 0, 1, 2, … from
// zero and goes through the same store_block, so the bits are
// kernel_14x32's.
static void kernel_8x32(int m, int n, int kc, const float *a, const float *b, float *C,
                        int ldc, float alpha, float beta)
{
    enum { MR = GEMM_AVX512_MR, NR = GEMM_AVX512_NR, ROWS = 8 };
    __m512 acc[ROWS][2];
#pragma GCC unroll 8
    for (int i = 0; i < ROWS; i++) {
        acc[i][0] = _mm512_setzero_ps();
        acc[i][1] = _mm512_setzero_ps();
    }
    // a is still MR×kc, its rows 14 apart: the rows past m are pack_a_panel's zeros.
    for (int p = 0; p < kc; p++, a += MR, b += NR) {
        __m512 b0 = _mm512_load_ps(b), b1 = _mm512_load_ps(b + 16);
#pragma GCC unroll 8
        for (int i = 0; i < ROWS; i++) {
            __m512 ai = _mm512_set1_ps(a[i]);
            acc[i][0] = _mm512_fmadd_ps(ai, b0, acc[i][0]);
            acc[i][1] = _mm512_fmadd_ps(ai, b1, acc[i][1]);
        }
    }
    store_block(ROWS, m, n, acc, C, ldc, alpha, beta);
}
// end listing

// listing: microkernel_avx512_entry
void gemm_kernel_avx512(int m, int n, int kc, const float *a, const float *b,
                        float *C, int ldc, float alpha, float beta)
{
    if (m <= 8)
        kernel_8x32(m, n, kc, a, b, C, ldc, alpha, beta);
    else
        kernel_14x32(m, n, kc, a, b, C, ldc, alpha, beta, 1);
}
// end listing

// The same kernel without the prefetch of C, so that chapter 4 can measure
// what the prefetch buys (stages/04_packing/staircase.c, step 3). The two
// differ in that one flag: the test of p against prefetch_at runs in both.
void gemm_kernel_avx512_no_prefetch_c(int m, int n, int kc, const float *a,
                                      const float *b, float *C, int ldc,
                                      float alpha, float beta)
{
    if (m <= 8)
        kernel_8x32(m, n, kc, a, b, C, ldc, alpha, beta);
    else
        kernel_14x32(m, n, kc, a, b, C, ldc, alpha, beta, 0);
}

// listing: microkernel_avx512_direct
void gemm_kernel_avx512_direct(int m, int n, int kc, const float *a, long rs_a,
                               long cs_a, const float *b, long ldb, float *C,
                               int ldc, float alpha, float beta, int stream)
{
    enum { MR = GEMM_AVX512_MR, NR = GEMM_AVX512_NR, PREFETCH_AHEAD = 64 };
    // The same 14×32 block as above, but A is read where it lies:
    // op(A)[i][p] = a[i*rs_a + p*cs_a]. Rows i ≥ m are never read, so they
    // repeat row 0 (their sums are computed and then dropped).
    const float *row[MR];
    for (int i = 0; i < MR; i++)
        row[i] = a + (i < m ? i : 0) * rs_a;
    // B may be the caller's matrix, so columns j ≥ n must not be read: masked
    // loads leave those lanes 0 (and never fault), the other lanes get the
    // same arithmetic as with a packed, zero-padded B.
    __mmask16 mask0 = n >= 16 ? 0xFFFF : (__mmask16)((1u << n) - 1);
    __mmask16 mask1 = n >= 32 ? 0xFFFF
                      : n > 16 ? (__mmask16)((1u << (n - 16)) - 1)
                               : 0;

    __m512 acc[MR][2];
#pragma GCC unroll 16
    for (int i = 0; i < MR; i++) {
        acc[i][0] = _mm512_setzero_ps();
        acc[i][1] = _mm512_setzero_ps();
    }
    if (n <= 16) {
        // Narrow C (a classifier layer, say): the second vector of each row
        // would be all padding, so skip it and do half the FMAs. Two steps
        // at a time: the 14 row pointers do not all fit in the general
        // registers, so each costs a move per use, and two FMAs per move
        // halve that cost. (Each sum still runs in order p = 0, 1, 2, ….)
        long p = 0;
        for (; p + 3 < kc; p += 4) {
            __m512 b0 = _mm512_maskz_loadu_ps(mask0, b);
            __m512 b1 = _mm512_maskz_loadu_ps(mask0, b + ldb);
            __m512 b2 = _mm512_maskz_loadu_ps(mask0, b + 2 * ldb);
            __m512 b3 = _mm512_maskz_loadu_ps(mask0, b + 3 * ldb);
            long offset = p * cs_a;
#pragma GCC unroll 16
            for (int i = 0; i < MR; i++) {
                const float *r = row[i] + offset;
                acc[i][0] = _mm512_fmadd_ps(_mm512_set1_ps(r[0]), b0, acc[i][0]);
                acc[i][0] = _mm512_fmadd_ps(_mm512_set1_ps(r[cs_a]), b1, acc[i][0]);
                acc[i][0] = _mm512_fmadd_ps(_mm512_set1_ps(r[2 * cs_a]), b2, acc[i][0]);
                acc[i][0] = _mm512_fmadd_ps(_mm512_set1_ps(r[3 * cs_a]), b3, acc[i][0]);
            }
            b += 4 * ldb;
        }
        for (; p < kc; p++) {
            __m512 b0 = _mm512_maskz_loadu_ps(mask0, b);
            long offset = p * cs_a;
#pragma GCC unroll 16
            for (int i = 0; i < MR; i++)
                acc[i][0] = _mm512_fmadd_ps(_mm512_set1_ps(row[i][offset]), b0,
                                            acc[i][0]);
            b += ldb;
        }
    } else {
        for (long p = 0; p < kc; p++) {
            __m512 b0 = _mm512_maskz_loadu_ps(mask0, b);
            __m512 b1 = _mm512_maskz_loadu_ps(mask1, b + 16);
            long offset = p * cs_a;
            // A comes from memory, 14 rows at once: more streams than the
            // hardware prefetcher follows well. Once per cache line of a
            // row, ask for the line 64 floats ahead (+5% at 30976×64×288,
            // measured). Short rows fit in a few lines and need no help.
            if (kc > PREFETCH_AHEAD && (p & 15) == 0) {
#pragma GCC unroll 16
                for (int i = 0; i < MR; i++)
                    _mm_prefetch((const char *)(row[i] + offset + PREFETCH_AHEAD * cs_a),
                                 _MM_HINT_T0);
            }
#pragma GCC unroll 16
            for (int i = 0; i < MR; i++) {
                __m512 ai = _mm512_set1_ps(row[i][offset]);
                acc[i][0] = _mm512_fmadd_ps(ai, b0, acc[i][0]);
                acc[i][1] = _mm512_fmadd_ps(ai, b1, acc[i][1]);
            }
            b += ldb;
        }
    }
    if (stream && beta == 0.0f && m == MR && n == NR &&
        ((uintptr_t)C & 63) == 0 && ldc % 16 == 0) {
        // alpha·acc, as store_block computes it, straight to memory.
        __m512 va = _mm512_set1_ps(alpha);
#pragma GCC unroll 16
        for (int i = 0; i < MR; i++) {
            _mm512_stream_ps(C + (long)i * ldc, _mm512_mul_ps(va, acc[i][0]));
            _mm512_stream_ps(C + (long)i * ldc + 16, _mm512_mul_ps(va, acc[i][1]));
        }
        return; // (the caller fences once, after all blocks)
    }
    store_block(MR, m, n, acc, C, ldc, alpha, beta);
}
// end listing

#endif
