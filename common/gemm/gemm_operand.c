// gemm_operand.c: reading op(A) and op(B) where they lie, and the plain
// loops that need nothing more.
#include "gemm_parts.h"

#include <stddef.h>

static int min_int(int a, int b)
{
    return a < b ? a : b;
}

// listing: operands
const float *gemm_a_at(enum gemm_trans ta, const float *A, int lda, int i, int p)
{
    // op(A)[i][p] is A[i][p], or A[p][i] when A is stored transposed.
    return ta == GEMM_NOTRANS ? A + (long)i * lda + p : A + (long)p * lda + i;
}

const float *gemm_b_at(enum gemm_trans tb, const float *B, int ldb, int p, int j)
{
    return tb == GEMM_NOTRANS ? B + (long)p * ldb + j : B + (long)j * ldb + p;
}

void gemm_scale(int m, int n, float beta, float *C, int ldc)
{
    for (int i = 0; i < m; i++) {
        float *c = C + (long)i * ldc;
        for (int j = 0; j < n; j++)
            c[j] = beta == 0.0f ? 0.0f : beta * c[j];
    }
}

int gemm_no_products(int m, int n, int k, float alpha, float beta, float *C, int ldc)
{
    if (m <= 0 || n <= 0)
        return 1;
    if (k <= 0 || alpha == 0.0f) {
        gemm_scale(m, n, beta, C, ldc);
        return 1;
    }
    return 0;
}
// end listing

enum { CHUNK = 64 }; // columns of C accumulated at once

void gemm_plain_loops(enum gemm_trans ta, enum gemm_trans tb, int m, int n,
                      int k, float alpha, const float *A, int lda,
                      const float *B, int ldb, float beta, float *C, int ldc)
{
    for (int i = 0; i < m; i++) {
        float *c = C + (long)i * ldc;
        for (int j0 = 0; j0 < n; j0 += CHUNK) {
            int nj = min_int(n - j0, CHUNK);
            float acc[CHUNK] = {0.0f};
            // acc[j] = Σp op(A)[i][p]·op(B)[p][j0+j], summed in order of p.
            for (int p = 0; p < k; p++) {
                float a = *gemm_a_at(ta, A, lda, i, p);
                for (int j = 0; j < nj; j++)
                    acc[j] += a * *gemm_b_at(tb, B, ldb, p, j0 + j);
            }
            for (int j = 0; j < nj; j++) {
                if (beta == 0.0f)
                    c[j0 + j] = alpha * acc[j];
                else
                    c[j0 + j] = alpha * acc[j] + beta * c[j0 + j];
            }
        }
    }
}
