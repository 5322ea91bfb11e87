#include <math.h>
#include <stddef.h>

#include "cpu.h"
#include "tiled.h"

long tile_working_set(struct tile_sizes t)
{
    return (long)sizeof(float) *
           ((long)t.kb * t.nb + (long)t.mb * t.nb + (long)t.mb * t.kb);
}

// listing: sizes
// A block's working set (kb×nb of B, mb×nb of C, mb×kb of A) should fit the
// cache with a quarter to spare: a cache is not fully associative, and the
// loop's other data (the next rows of A, the stack) needs room too.
// nb comes first: j is the vectorized loop, and a row of 256 floats (1 KiB)
// is long enough that the loop's start-up cost does not matter. Then mb = kb
// as large as fits, a multiple of 8.
struct tile_sizes tile_sizes_for_cache(long bytes)
{
    double budget = 0.75 * (double)bytes / sizeof(float);
    int nb = 256, s;
    for (;;) {
        // s² + 2·s·nb ≤ budget, solved for s; a small cache gets narrower rows
        s = (int)(sqrt((double)nb * nb + budget) - nb) / 8 * 8;
        if (s >= 8 || nb == 8)
            break;
        nb /= 2;
    }
    if (s < 8)
        s = 8;
    struct tile_sizes t = {s, nb, s};
    return t;
}
// end listing

// C += A·B for one block of mb×kb times kb×nb, in the i-p-j order of
// chapter 1: j is innermost, so a row of B and a row of C stream through.
// `restrict` promises the compiler that c and b do not overlap, so it can
// vectorize the j loop without checking at run time.
// listing: block
static void block_ipj(int mb, int nb, int kb, const float *A, int lda, const float *B,
                      int ldb, float *C, int ldc)
{
    for (int i = 0; i < mb; i++) {
        float *restrict c = C + (size_t)i * ldc;
        for (int p = 0; p < kb; p++) {
            const float *restrict b = B + (size_t)p * ldb;
            float a = A[(size_t)i * lda + p];
            for (int j = 0; j < nb; j++)
                c[j] += a * b[j];
        }
    }
}
// end listing

static int min(int a, int b)
{
    return a < b ? a : b;
}

static void zero(int m, int n, float *C, int ldc)
{
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++)
            C[(size_t)i * ldc + j] = 0.0f;
}

// C += A·B in blocks of mb×kb times kb×nb; the last block in each direction
// may be smaller.
// listing: tiled_loops
static void add_tiled(int mb, int nb, int kb, int m, int n, int k, const float *A, int lda,
                      const float *B, int ldb, float *C, int ldc)
{
    // BEGIN SOLUTION task 2.1: loop over the blocks of C and k; call block_ipj on each
    // stub: (void)mb, (void)nb, (void)kb, (void)m, (void)n, (void)k;
    // stub: (void)A, (void)lda, (void)B, (void)ldb, (void)C, (void)ldc;
    // stub: (void)block_ipj, (void)min;
    for (int i0 = 0; i0 < m; i0 += mb)
        for (int p0 = 0; p0 < k; p0 += kb)
            for (int j0 = 0; j0 < n; j0 += nb)
                block_ipj(min(mb, m - i0), min(nb, n - j0), min(kb, k - p0),
                          A + (size_t)i0 * lda + p0, lda, B + (size_t)p0 * ldb + j0, ldb,
                          C + (size_t)i0 * ldc + j0, ldc);
    // END SOLUTION
}
// end listing

void matmul_tiled(int mb, int nb, int kb, int m, int n, int k, const float *A, int lda,
                  const float *B, int ldb, float *C, int ldc)
{
    zero(m, n, C, ldc);
    add_tiled(mb, nb, kb, m, n, k, A, lda, B, ldb, C, ldc);
}

void matmul_tiled_l1(int m, int n, int k, const float *A, int lda, const float *B, int ldb,
                     float *C, int ldc)
{
    struct tile_sizes l1 = tile_sizes_for_cache(cpu_caches().l1d);
    matmul_tiled(l1.mb, l1.nb, l1.kb, m, n, k, A, lda, B, ldb, C, ldc);
}

// listing: two_levels
void matmul_tiled_l2(int m, int n, int k, const float *A, int lda, const float *B, int ldb,
                     float *C, int ldc)
{
    struct tile_sizes l1 = tile_sizes_for_cache(cpu_caches().l1d);
    struct tile_sizes l2 = tile_sizes_for_cache(cpu_caches().l2);
    zero(m, n, C, ldc);
    // BEGIN SOLUTION task 2.2: loop over L2-sized blocks; cut each into L1-sized ones
    // stub: (void)l1, (void)l2, (void)m, (void)n, (void)k;
    // stub: (void)A, (void)lda, (void)B, (void)ldb;
    for (int i0 = 0; i0 < m; i0 += l2.mb)
        for (int p0 = 0; p0 < k; p0 += l2.kb)
            for (int j0 = 0; j0 < n; j0 += l2.nb)
                add_tiled(l1.mb, l1.nb, l1.kb, min(l2.mb, m - i0), min(l2.nb, n - j0),
                          min(l2.kb, k - p0), A + (size_t)i0 * lda + p0, lda,
                          B + (size_t)p0 * ldb + j0, ldb, C + (size_t)i0 * ldc + j0, ldc);
    // END SOLUTION
}
// end listing
