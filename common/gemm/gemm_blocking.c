// gemm_blocking.c: how big the blocks of the five loops are, from the sizes
// of this machine's caches (chapter 4 derives both rules), and how to cut a
// dimension into even blocks.
#include "gemm_parts.h"

// listing: blocking_l1
struct gemm_blocking gemm_blocking_for_l1(long l1_bytes, long l2_bytes,
                                          long l3_bytes, int mr, int nr)
{
    struct gemm_blocking b = {.mr = mr, .nr = nr};
    long fsize = (long)sizeof(float);

    // kc: the micro-kernel reuses one kc×nr micro-panel of B for every
    // sliver of A, so that panel and the mr×kc sliver streaming past it
    // should both fit in L1: (mr + nr)·kc floats ≤ L1.
    long kc = l1_bytes / (fsize * (mr + nr)) / 16 * 16;
    kc = kc < 16 ? 16 : kc > 512 ? 512 : kc;

    // mc: the packed mc×kc block of A is read once per micro-panel of B, so
    // it should stay in L2. Half of L2 leaves room for the B micro-panels
    // and the rows of C passing through.
    long mc = l2_bytes / 2 / (fsize * kc) / mr * mr;
    mc = mc < mr ? mr : mc;

    // nc: the packed kc×nc panel of B is read once per block of A, so it
    // should stay in L3, which other cores share: use a quarter of it.
    long nc = l3_bytes / 4 / (fsize * kc) / nr * nr;
    nc = nc < nr ? nr : nc > 8192 ? 8192 / nr * nr : nc;

    b.kc = (int)kc;
    b.mc = (int)mc;
    b.nc = (int)nc;
    return b;
}
// end listing

// listing: blocking
struct gemm_blocking gemm_blocking_for_caches(long l2_bytes, long l3_bytes,
                                              int mr, int nr)
{
    struct gemm_blocking b = {.mr = mr, .nr = nr};
    long fsize = (long)sizeof(float);

    // kc: every pass of the pc loop reads and writes all of C, k / kc passes
    // in all, so kc should be as long as the caches allow. The limit is the
    // kc×nr micro-panel of B, which every sliver of A meets in turn: it must
    // stay in L2 while they stream past, with room to spare for them and for
    // C (an eighth of L2). A multiple of 16 keeps packed rows aligned.
    long kc = l2_bytes / 8 / (fsize * nr) / 16 * 16;
    kc = kc < 64 ? 64 : kc > 4096 ? 4096 : kc;

    // mc: the packed mc×kc block of A is read once per micro-panel of B.
    // With a long kc it no longer fits in L2, so it lives in L3, an eighth
    // of it, leaving room for the other cores' blocks and the panel of B.
    long mc = l3_bytes / 8 / (fsize * kc) / mr * mr;
    mc = mc < mr ? mr : mc;

    // nc: the packed kc×nc panel of B is read once per block of A, so it
    // should stay in L3 too: a quarter of it.
    long nc = l3_bytes / 4 / (fsize * kc) / nr * nr;
    nc = nc < nr ? nr : nc > 8192 ? 8192 / nr * nr : nc;

    b.kc = (int)kc;
    b.mc = (int)mc;
    b.nc = (int)nc;
    return b;
}
// end listing

int gemm_even_block(int size, int block, int unit)
{
    // 4096 rows in blocks of 1022 would leave a last block of 8 rows, which
    // costs a whole pass over the panel of B for one sliver of work. Five
    // blocks of 826 (whole slivers) do the same work in even pieces.
    if (size <= 0)
        return block;
    int blocks = (size + block - 1) / block;
    int even = (size + blocks - 1) / blocks;
    even = (even + unit - 1) / unit * unit;
    return even < block ? even : block;
}
