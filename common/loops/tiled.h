#ifndef TILED_H
#define TILED_H

// Chapter 2: the i-p-j loops of chapter 1, cut into blocks that fit a cache.
// A is m×k (lda ≥ k), B is k×n (ldb ≥ n), C is m×n (ldc ≥ n), all row-major.

// The sizes of one block: mb rows of A and C, kb columns of A (rows of B),
// nb columns of B and C.
struct tile_sizes {
    int mb, nb, kb;
};

// Bytes a block touches: kb×nb of B, mb×nb of C and mb×kb of A.
long tile_working_set(struct tile_sizes t);

// Block sizes whose working set fits a cache of `bytes` (see tiled.c).
struct tile_sizes tile_sizes_for_cache(long bytes);

// One level of blocking with the given block sizes (the sweep varies them).
void matmul_tiled(int mb, int nb, int kb, int m, int n, int k, const float *A, int lda,
                  const float *B, int ldb, float *C, int ldc);

// One level, blocks sized for this machine's L1 data cache.
void matmul_tiled_l1(int m, int n, int k, const float *A, int lda, const float *B, int ldb,
                     float *C, int ldc);

// Two levels: blocks sized for L2, each cut into blocks sized for L1.
void matmul_tiled_l2(int m, int n, int k, const float *A, int lda, const float *B, int ldb,
                     float *C, int ldc);

#endif
