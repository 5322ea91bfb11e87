// gemm_kernel_avx2.c: AVX2 micro-kernels, 6×16: the packed one, and the direct
// one of the small path (gemm_small.c). Build with -mavx2 -mfma.
//
// Why 6×16: two FMA pipes × about 4 cycles of latency need at least 8
// independent accumulators. AVX2 has 16 ymm registers: a 6×16 block of C is
// 6 rows × 2 vectors = 12 accumulators, plus 2 for a row of B and 1 for the
// broadcast of an element of A, 15 in all. 8×16 or 4×24 would need 16 or
// more and spill.

// gemm.h sits outside the guard so the file is never an empty translation unit.
#include "gemm_parts.h"

#if defined(__x86_64__)

#include <immintrin.h>
#include <stdint.h>

// All-ones lanes for columns j < n of one 8-float vector (n may be ≤ 0 or > 8).
static __m256i column_mask(int n)
{
    __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), lane);
}

// C = alpha·acc + beta·C for the m×n block C (m ≤ rows, the kernel's rows of
// accumulators; n ≤ 16); C is not read when beta is 0. Full and partial
// blocks get the same arithmetic; only the memory operations differ. A full
// row uses plain loads and stores, because AMD's CPUs run a masked store as
// a long microcoded sequence: on a Zen 3, twelve of them cost about 200
// cycles per block (measured), some 35 steps of the k loop.
static inline void store_block(int rows, int m, int n, __m256 acc[][2], float *C, int ldc,
                               float alpha, float beta)
{
    __m256i mask0 = column_mask(n);
    __m256i mask1 = column_mask(n - 8);
    __m256 va = _mm256_set1_ps(alpha);
    __m256 vb = _mm256_set1_ps(beta);
#pragma GCC unroll 16
    for (int i = 0; i < rows; i++) {
        if (i >= m)
            break;
        float *c = C + (long)i * ldc;
        __m256 r0 = _mm256_mul_ps(va, acc[i][0]);
        __m256 r1 = _mm256_mul_ps(va, acc[i][1]);
        if (n == GEMM_AVX2_NR) {
            if (beta != 0.0f) {
                r0 = _mm256_add_ps(r0, _mm256_mul_ps(vb, _mm256_loadu_ps(c)));
                r1 = _mm256_add_ps(r1, _mm256_mul_ps(vb, _mm256_loadu_ps(c + 8)));
            }
            _mm256_storeu_ps(c, r0);
            _mm256_storeu_ps(c + 8, r1);
            continue;
        }
        if (beta != 0.0f) {
            r0 = _mm256_add_ps(r0, _mm256_mul_ps(vb, _mm256_maskload_ps(c, mask0)));
            r1 = _mm256_add_ps(r1, _mm256_mul_ps(vb, _mm256_maskload_ps(c + 8, mask1)));
        }
        _mm256_maskstore_ps(c, mask0, r0);
        _mm256_maskstore_ps(c + 8, mask1, r1);
    }
}

// listing: kernel_4x16
// A sliver of 4 rows or fewer (64 = 10·6 + 4: a batch of 64 images, or a
// layer of 64 filters, leaves one) without the FMAs of the 6 × 16 kernel's
// 2 rows of zeros. Eight accumulators, as many as two FMA pipes with a
// 4-cycle latency keep busy. Each sum is the big kernel's, FMA by FMA in
// the same order, then the same store_block: the same bits.
static void kernel_4x16(int m, int n, int kc, const float *a, const float *b, float *C,
                        int ldc, float alpha, float beta)
{
    enum { MR = GEMM_AVX2_MR, NR = GEMM_AVX2_NR, ROWS = 4 };
    __m256 acc[ROWS][2];
#pragma GCC unroll 4
    for (int i = 0; i < ROWS; i++) {
        acc[i][0] = _mm256_setzero_ps();
        acc[i][1] = _mm256_setzero_ps();
    }
    // a is still MR×kc, its rows 6 apart: the rows past m are pack_a_panel's zeros.
    for (int p = 0; p < kc; p++, a += MR, b += NR) {
        __m256 b0 = _mm256_load_ps(b), b1 = _mm256_load_ps(b + 8);
#pragma GCC unroll 4
        for (int i = 0; i < ROWS; i++) {
            __m256 ai = _mm256_broadcast_ss(a + i);
            acc[i][0] = _mm256_fmadd_ps(ai, b0, acc[i][0]);
            acc[i][1] = _mm256_fmadd_ps(ai, b1, acc[i][1]);
        }
    }
    store_block(ROWS, m, n, acc, C, ldc, alpha, beta);
}
// end listing

// listing: microkernel_avx2
void gemm_kernel_avx2(int m, int n, int kc, const float *a, const float *b,
                      float *C, int ldc, float alpha, float beta)
{
    enum { MR = GEMM_AVX2_MR, NR = GEMM_AVX2_NR };
    if (m <= 4) {
        kernel_4x16(m, n, kc, a, b, C, ldc, alpha, beta);
        return;
    }
    __m256 acc[MR][2];
#pragma GCC unroll 16
    for (int i = 0; i < MR; i++) {
        acc[i][0] = _mm256_setzero_ps();
        acc[i][1] = _mm256_setzero_ps();
    }

    // a is MR×kc (a[p*MR + i]); b is kc×NR (b[p*NR + j]), 64-byte aligned.
    for (int p = 0; p < kc; p++) {
        __m256 b0 = _mm256_load_ps(b + 0);
        __m256 b1 = _mm256_load_ps(b + 8);
#pragma GCC unroll 16
        for (int i = 0; i < MR; i++) {
            __m256 ai = _mm256_broadcast_ss(a + i);
            acc[i][0] = _mm256_fmadd_ps(ai, b0, acc[i][0]);
            acc[i][1] = _mm256_fmadd_ps(ai, b1, acc[i][1]);
        }
        a += MR;
        b += NR;
    }

    store_block(MR, m, n, acc, C, ldc, alpha, beta);
}
// end listing

// listing: microkernel_avx2_direct
void gemm_kernel_avx2_direct(int m, int n, int kc, const float *a, long rs_a,
                             long cs_a, const float *b, long ldb, float *C,
                             int ldc, float alpha, float beta, int stream)
{
    enum { MR = GEMM_AVX2_MR, NR = GEMM_AVX2_NR };
    // The 6×16 block above, with A read where it lies:
    // op(A)[i][p] = a[i*rs_a + p*cs_a]. Rows i ≥ m are never read; they
    // repeat row 0, and their sums are dropped by the store.
    const float *row[MR];
    for (int i = 0; i < MR; i++)
        row[i] = a + (i < m ? i : 0) * rs_a;
    // B may be the caller's matrix, so columns j ≥ n must not be read: the
    // masked loads leave those lanes 0 and never fault.
    __m256i mask0 = column_mask(n);
    __m256i mask1 = column_mask(n - 8);

    __m256 acc[MR][2];
#pragma GCC unroll 16
    for (int i = 0; i < MR; i++) {
        acc[i][0] = _mm256_setzero_ps();
        acc[i][1] = _mm256_setzero_ps();
    }
    for (long p = 0; p < kc; p++) {
        __m256 b0 = _mm256_maskload_ps(b, mask0);
        __m256 b1 = _mm256_maskload_ps(b + 8, mask1);
        long offset = p * cs_a;
#pragma GCC unroll 16
        for (int i = 0; i < MR; i++) {
            __m256 ai = _mm256_broadcast_ss(row[i] + offset);
            acc[i][0] = _mm256_fmadd_ps(ai, b0, acc[i][0]);
            acc[i][1] = _mm256_fmadd_ps(ai, b1, acc[i][1]);
        }
        b += ldb;
    }
    if (stream && beta == 0.0f && m == MR && n == NR &&
        ((uintptr_t)C & 31) == 0 && ldc % 8 == 0) {
        // A large C written once: non-temporal stores skip reading its old
        // lines into cache (the caller fences once, after all blocks).
        __m256 va = _mm256_set1_ps(alpha);
#pragma GCC unroll 16
        for (int i = 0; i < MR; i++) {
            _mm256_stream_ps(C + (long)i * ldc, _mm256_mul_ps(va, acc[i][0]));
            _mm256_stream_ps(C + (long)i * ldc + 8, _mm256_mul_ps(va, acc[i][1]));
        }
        return;
    }
    store_block(MR, m, n, acc, C, ldc, alpha, beta);
}
// end listing

#endif
