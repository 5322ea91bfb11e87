#ifndef BLAS_H
#define BLAS_H

#include <stddef.h>

#include "cpu.h"
#include "environment.h"

// OpenBLAS, the peer we measure ourselves against. It is never called from
// our own kernels: only the benchmarks and tests use it.

// C = A·B, row-major; A is m×k (lda ≥ k), B is k×n (ldb ≥ n), C is m×n (ldc ≥ n).
void blas_sgemm(int m, int n, int k, const float *A, int lda, const float *B, int ldb,
                float *C, int ldc);
// The full row-major SGEMM: C = alpha·op(A)·op(B) + beta·C, op(X) = Xᵀ when
// transX is 1 (the same arguments as gemm() in gemm.h).
void blas_gemm(int transa, int transb, int m, int n, int k, float alpha, const float *A,
               int lda, const float *B, int ldb, float beta, float *C, int ldc);
void blas_set_threads(int threads);

// What OpenBLAS says of itself: its build configuration, the name of the
// kernel set it chose for this CPU ("Cooperlake", "Haswell", ...), and the
// ISA those kernels use.
const char *blas_config(void);
const char *blas_core(void);
enum isa blas_isa(void);

// Whether OpenBLAS is on its best path for this CPU. OPENBLAS_CORETYPE can
// hold it to a lesser kernel set (Haswell's AVX2 on an AVX-512 CPU: half the
// vector width, about half the speed), and OPENBLAS_L2_SIZE changes its
// blocking and how many threads it uses. A comparison against OpenBLAS so
// held flatters our code, so every bench and plot says so.
// blas_limit_note writes one line into buf (size bytes): which variable holds
// OpenBLAS back, what that costs and the command that lifts it
// (`env -u ... make STAGE bench`, STAGE like "stage-05"). Returns 1 when
// OpenBLAS is held back, 0 (buf empty) when it is on its best path. env
// holds the two variables as the program found them (NULL: neither set).
int blas_limit_note(const char *stage, const struct environment *env, char *buf, size_t size);
// The same for given facts: the ISA of OpenBLAS's kernels (blas_isa()), its
// core name, the CPU's best ISA, and the two variables (NULL when unset).
int blas_limit_note_for(enum isa blas, const char *core, enum isa best, const char *coretype,
                        const char *l2_size, const char *stage, char *buf, size_t size);

#endif
