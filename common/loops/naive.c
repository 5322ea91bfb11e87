#include <stddef.h>

#include "naive.h"

// listing: ijk
void matmul_ijk(int m, int n, int k, const float *A, int lda, const float *B, int ldb,
                float *C, int ldc)
{
    // BEGIN SOLUTION task 1.1: the i, j, p loops; finish each C element before the next
    // stub: (void)m, (void)n, (void)k, (void)A, (void)lda, (void)B, (void)ldb, (void)C, (void)ldc;
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            float sum = 0.0f;
            for (int p = 0; p < k; p++)
                sum += A[(size_t)i * lda + p] * B[(size_t)p * ldb + j];
            C[(size_t)i * ldc + j] = sum;
        }
    // END SOLUTION
}
// end listing

// The orders that do not finish one C element before the next accumulate
// into C, so C starts at zero.
static void zero(int m, int n, float *C, int ldc)
{
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++)
            C[(size_t)i * ldc + j] = 0.0f;
}

// listing: ikj
void matmul_ikj(int m, int n, int k, const float *A, int lda, const float *B, int ldb,
                float *C, int ldc)
{
    // BEGIN SOLUTION task 1.2: the i, p, j loops; C starts at zero and accumulates
    // stub: (void)m, (void)n, (void)k, (void)A, (void)lda, (void)B, (void)ldb, (void)C, (void)ldc;
    zero(m, n, C, ldc);
    for (int i = 0; i < m; i++)
        for (int p = 0; p < k; p++) {
            float a = A[(size_t)i * lda + p];
            for (int j = 0; j < n; j++)
                C[(size_t)i * ldc + j] += a * B[(size_t)p * ldb + j];
        }
    // END SOLUTION
}
// end listing

void matmul_jik(int m, int n, int k, const float *A, int lda, const float *B, int ldb,
                float *C, int ldc)
{
    // BEGIN SOLUTION task 1.1: the j, i, p loops: ijk with its two outer loops swapped
    // stub: (void)m, (void)n, (void)k, (void)A, (void)lda, (void)B, (void)ldb, (void)C, (void)ldc;
    for (int j = 0; j < n; j++)
        for (int i = 0; i < m; i++) {
            float sum = 0.0f;
            for (int p = 0; p < k; p++)
                sum += A[(size_t)i * lda + p] * B[(size_t)p * ldb + j];
            C[(size_t)i * ldc + j] = sum;
        }
    // END SOLUTION
}

// listing: jki
void matmul_jki(int m, int n, int k, const float *A, int lda, const float *B, int ldb,
                float *C, int ldc)
{
    zero(m, n, C, ldc);
    for (int j = 0; j < n; j++)
        for (int p = 0; p < k; p++) {
            float b = B[(size_t)p * ldb + j];
            for (int i = 0; i < m; i++)
                C[(size_t)i * ldc + j] += A[(size_t)i * lda + p] * b;
        }
}
// end listing

void matmul_kij(int m, int n, int k, const float *A, int lda, const float *B, int ldb,
                float *C, int ldc)
{
    // BEGIN SOLUTION task 1.2: the p, i, j loops: ikj with its two outer loops swapped
    // stub: (void)m, (void)n, (void)k, (void)A, (void)lda, (void)B, (void)ldb, (void)C, (void)ldc;
    zero(m, n, C, ldc);
    for (int p = 0; p < k; p++)
        for (int i = 0; i < m; i++) {
            float a = A[(size_t)i * lda + p];
            for (int j = 0; j < n; j++)
                C[(size_t)i * ldc + j] += a * B[(size_t)p * ldb + j];
        }
    // END SOLUTION
}

void matmul_kji(int m, int n, int k, const float *A, int lda, const float *B, int ldb,
                float *C, int ldc)
{
    zero(m, n, C, ldc);
    for (int p = 0; p < k; p++)
        for (int j = 0; j < n; j++) {
            float b = B[(size_t)p * ldb + j];
            for (int i = 0; i < m; i++)
                C[(size_t)i * ldc + j] += A[(size_t)i * lda + p] * b;
        }
}
