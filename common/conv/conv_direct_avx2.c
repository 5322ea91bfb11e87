// The direct 3×3 convolution with AVX2: 8 output columns a vector. As in the
// AVX-512 kernel, masks do the padding and the end of a row: a masked load
// reads zero (and never touches) a lane outside the row. conv_direct.h sits
// outside the guard so the file is never an empty translation unit.
#include "conv_direct.h"

#if defined(__x86_64__)

#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "transpose8_avx2.h"

enum { L = 8 };

// All-ones in lanes 0 .. lanes−1.
static __m256i first(int lanes)
{
    __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(lanes), lane);
}

// All-ones in the lanes l < lanes of the chunk at output column q0 whose
// tap v reads a column inside the row: 0 ≤ q0 + l + v − pad < w.
static __m256i inside(int q0, int lanes, int v, int pad, int w)
{
    __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    __m256i col = _mm256_add_epi32(lane, _mm256_set1_epi32(q0 + v - pad));
    __m256i ok = _mm256_and_si256(_mm256_cmpgt_epi32(col, _mm256_set1_epi32(-1)),
                                  _mm256_cmpgt_epi32(_mm256_set1_epi32(w), col));
    return _mm256_and_si256(ok, first(lanes));
}

// One row u of a 3×3 filter: the input row at xr (shifted so that lane l of
// tap v reads xr[l + v]) times the weights k0, k1, k2, added onto acc.
static inline __m256 row_taps(const float *xr, __m256i m0, __m256i m1, __m256i m2, __m256 k0,
                              __m256 k1, __m256 k2, __m256 acc)
{
    acc = _mm256_fmadd_ps(k0, _mm256_maskload_ps(xr, m0), acc);
    acc = _mm256_fmadd_ps(k1, _mm256_maskload_ps(xr + 1, m1), acc);
    return _mm256_fmadd_ps(k2, _mm256_maskload_ps(xr + 2, m2), acc);
}

// One input channel's share of one output plane y (oh×ow) with the filter
// k (3×3): the nine weights stay in registers for the whole plane (AVX2 has
// sixteen: nine weights, three masks, the sum and an input vector). Per
// output element the taps are added in the order u, v.
static void channel(const float *xc, int h, int w, const float *k, int pad, float *y)
{
    int oh = h + 2 * pad - 2, ow = w + 2 * pad - 2;
    __m256 k0 = _mm256_set1_ps(k[0]), k1 = _mm256_set1_ps(k[1]), k2 = _mm256_set1_ps(k[2]);
    __m256 k3 = _mm256_set1_ps(k[3]), k4 = _mm256_set1_ps(k[4]), k5 = _mm256_set1_ps(k[5]);
    __m256 k6 = _mm256_set1_ps(k[6]), k7 = _mm256_set1_ps(k[7]), k8 = _mm256_set1_ps(k[8]);
    for (int q0 = 0; q0 < ow; q0 += L) {
        int lanes = ow - q0 < L ? ow - q0 : L;
        __m256i all = first(lanes);
        __m256i m0 = inside(q0, lanes, 0, pad, w), m1 = inside(q0, lanes, 1, pad, w),
                m2 = inside(q0, lanes, 2, pad, w);
        for (int r = 0; r < oh; r++) {
            float *yr = y + (long)r * ow + q0;
            __m256 acc = _mm256_maskload_ps(yr, all);
            // Input row r + u − pad, from column q0 − pad. The middle row
            // (u = 1) is always inside the image; the top and bottom ones
            // may be padding, which adds nothing.
            const float *xr = xc + (long)(r + 1 - pad) * w + q0 - pad;
            if (r - pad >= 0)
                acc = row_taps(xr - w, m0, m1, m2, k0, k1, k2, acc);
            acc = row_taps(xr, m0, m1, m2, k3, k4, k5, acc);
            if (r + 2 - pad < h)
                acc = row_taps(xr + w, m0, m1, m2, k6, k7, k8, acc);
            _mm256_maskstore_ps(yr, all, acc);
        }
    }
}

// Output channel after output channel, and within each the input channels
// in order: each output element sums its terms in the order ch, u, v.
void conv_direct_avx2(const float *x, int c, int h, int w, const float *k, int oc, int pad,
                      float *y)
{
    long plane = (long)(h + 2 * pad - 2) * (w + 2 * pad - 2);
    for (int o = 0; o < oc; o++)
        for (int ch = 0; ch < c; ch++)
            channel(x + (long)ch * h * w, h, w, k + ((long)o * c + ch) * 9, pad, y + o * plane);
}

// listing: conv_pool_avx2
// The fused kernel turns the direct kernel round: a vector holds 8 output
// channels of one pixel, not 8 pixels of one channel. A window of the
// pooling is 4 outputs; with 16 channels that is 8 accumulators, 8
// independent chains of FMAs (two FMA units that each take 4 cycles need
// 8 in flight). Each tap loads its 16 weights once (two vectors) and each of
// the four input pixels under it once (a broadcast), for 8 FMAs.
static inline void tap(const float *kt, __m256i m0, __m256i m1, const float *px[4],
                       __m256 acc[4][2])
{
    __m256 w0 = _mm256_maskload_ps(kt, m0), w1 = _mm256_maskload_ps(kt + L, m1);
#pragma GCC unroll 4
    for (int at = 0; at < 4; at++) {
        if (!px[at])
            continue;  // the padding adds nothing
        __m256 xb = _mm256_broadcast_ss(px[at]);
        acc[at][0] = _mm256_fmadd_ps(w0, xb, acc[at][0]);
        acc[at][1] = _mm256_fmadd_ps(w1, xb, acc[at][1]);
    }
}

// The same inside the image for a full block of 16 channels, every tap of
// every input channel: plain loads, the weights of tap t at kt + t·oc (one
// add a tap), its four pixels at p, p + 1, p + w, p + w + 1 (constant offsets
// from one pointer). Nothing else but the eight sums, two weight vectors and
// a broadcast is live, so the eight sums stay in registers; with masks and
// four pixel pointers a tap, gcc kept some of them on the stack.
static inline __attribute__((always_inline)) void taps_inside16(const float *patch, long hw,
                                                                int c, int w, const float *kt,
                                                                int oc, __m256 acc[4][2])
{
    for (int ch = 0; ch < c; ch++, patch += hw) {
        const float *p = patch;
#pragma GCC unroll 3
        for (int u = 0; u < 3; u++, p += w)
#pragma GCC unroll 3
            for (int v = 0; v < 3; v++, kt += oc) {
                __m256 w0 = _mm256_loadu_ps(kt), w1 = _mm256_loadu_ps(kt + L);
                __m256 x0 = _mm256_broadcast_ss(p + v), x1 = _mm256_broadcast_ss(p + v + 1);
                acc[0][0] = _mm256_fmadd_ps(w0, x0, acc[0][0]);
                acc[0][1] = _mm256_fmadd_ps(w1, x0, acc[0][1]);
                acc[1][0] = _mm256_fmadd_ps(w0, x1, acc[1][0]);
                acc[1][1] = _mm256_fmadd_ps(w1, x1, acc[1][1]);
                __m256 x2 = _mm256_broadcast_ss(p + w + v), x3 = _mm256_broadcast_ss(p + w + v + 1);
                acc[2][0] = _mm256_fmadd_ps(w0, x2, acc[2][0]);
                acc[2][1] = _mm256_fmadd_ps(w1, x2, acc[2][1]);
                acc[3][0] = _mm256_fmadd_ps(w0, x3, acc[3][0]);
                acc[3][1] = _mm256_fmadd_ps(w1, x3, acc[3][1]);
            }
    }
}

// The ReLU and the pooling's rule on one vector of channels: the four
// outputs v clipped at zero, a later one taking the place of the best only
// when it is larger; k holds the winner's place as an integer. As a
// tournament, 0 against 1 and 2 against 3, then the two winners, the later
// side winning only when larger: the same winner as taking the four in
// turn, but the compares no longer wait on each other's blends. One after
// another, each compare waiting on the blend before it, they took a large
// share of the time of the FMAs before them. The largest value is a max:
// after the ReLU there is no NaN and no −0, so equal values are equal bits.
static inline void pool4(const __m256 v4[4], __m256 *best, __m256i *k)
{
    const __m256 zero = _mm256_setzero_ps();
    __m256 r0 = _mm256_max_ps(v4[0], zero), r1 = _mm256_max_ps(v4[1], zero);
    __m256 r2 = _mm256_max_ps(v4[2], zero), r3 = _mm256_max_ps(v4[3], zero);
    __m256 h0 = _mm256_cmp_ps(r1, r0, _CMP_GT_OQ), h1 = _mm256_cmp_ps(r3, r2, _CMP_GT_OQ);
    __m256 m01 = _mm256_max_ps(r0, r1), m23 = _mm256_max_ps(r2, r3);
    __m256 f = _mm256_cmp_ps(m23, m01, _CMP_GT_OQ);
    *best = _mm256_max_ps(m01, m23);
    __m256i c0 = _mm256_srli_epi32(_mm256_castps_si256(h0), 31);
    __m256i c1 = _mm256_sub_epi32(_mm256_set1_epi32(2), _mm256_castps_si256(h1));
    // h0 and h1 are all ones where the later of the pair won: c0 is 1 or 0
    // there, c1 is 2 + 1 or 2 + 0.
    *k = _mm256_castps_si256(
        _mm256_blendv_ps(_mm256_castsi256_ps(c0), _mm256_castsi256_ps(c1), f));
}

// The taps of one window over every input channel: its 4×4 input patch
// starts at row iy = 2r − pad, column ix = 2q − pad of each channel. Inside
// the image (always, without padding) and for a full block, tap (u, v) of
// output (2r + a, 2q + b) reads patch[(a + u)·w + b + v] with no test;
// otherwise each pixel is tested, NULL in the padding.
static inline __attribute__((always_inline)) void window_taps(const float *x, int c, int h,
                                                              int w, const float *kt, int oc,
                                                              int n, __m256i m0, __m256i m1,
                                                              int iy, int ix, __m256 acc[4][2])
{
    if (n == 2 * L && iy >= 0 && iy + 3 < h && ix >= 0 && ix + 3 < w) {
        taps_inside16(x + (long)iy * w + ix, (long)h * w, c, w, kt, oc, acc);
        return;
    }
    for (int ch = 0; ch < c; ch++)
        for (int u = 0; u < 3; u++)
            for (int v = 0; v < 3; v++) {
                const float *px[4];
                window_pixels(x, ch, h, w, iy + u, ix + v, px);
                tap(kt + ((ch * 3 + u) * 3 + v) * oc, m0, m1, px, acc);
            }
}

// The low byte of each of the 8 integers in k, stored as 8 bytes.
static inline void store_codes8(unsigned char *to, __m256i k)
{
    const __m256i low_bytes = _mm256_setr_epi8(0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1,
                                               -1, -1, -1, 0, 4, 8, 12, -1, -1, -1, -1, -1, -1,
                                               -1, -1, -1, -1, -1, -1);
    __m256i b = _mm256_shuffle_epi8(k, low_bytes);
    __m128i both = _mm_unpacklo_epi32(_mm256_castsi256_si128(b), _mm256_extracti128_si256(b, 1));
    _mm_storel_epi64((__m128i *)to, both);
}

// One window: the bias, its taps, then the ReLU and the pooling's rule.
static inline __attribute__((always_inline)) void window(const float *x, int c, int h, int w,
                                                         const float *kt, int oc, int n,
                                                         __m256i m0, __m256i m1, __m256 b0,
                                                         __m256 b1, int iy, int ix,
                                                         __m256 best[2], __m256i k[2])
{
    __m256 acc[4][2];
#pragma GCC unroll 4
    for (int at = 0; at < 4; at++) {
        acc[at][0] = b0;
        acc[at][1] = b1;
    }
    window_taps(x, c, h, w, kt, oc, n, m0, m1, iy, ix, acc);
#pragma GCC unroll 2
    for (int half = 0; half < 2; half++) {
        __m256 four[4] = {acc[0][half], acc[1][half], acc[2][half], acc[3][half]};
        pool4(four, &best[half], &k[half]);
    }
}

// The first nq < 8 windows of a channel's transposed run: a call of memcpy
// with a length known only at run time costs more than the arithmetic, so
// from 4 windows on two overlapping stores of 4 (floats, then code bytes),
// the second ending at window nq − 1, and below 4 one at a time.
static inline void store_part(float *y, unsigned char *code, int nq, __m256 best,
                              const unsigned char bytes[L])
{
    float part[L];
    _mm256_storeu_ps(part, best);
    if (nq < 4) {
        for (int j = 0; j < nq; j++) {
            y[j] = part[j];
            code[j] = bytes[j];
        }
        return;
    }
    _mm_storeu_ps(y, _mm_loadu_ps(part));
    _mm_storeu_ps(y + nq - 4, _mm_loadu_ps(part + nq - 4));
    memcpy(code, bytes, 4);
    memcpy(code + nq - 4, bytes + nq - 4, 4);
}

// The codes of 8 windows, c[g] a vector of 8 channels with a code 0..3 in
// each int, as each channel's 8 bytes, bytes[l][g]. A code fits in a byte,
// so shifts and ors put the codes of windows 0..3 into the bytes of one
// int, the first lowest, which is their order in memory: lane l of lo holds
// channel l's first four, lane l of hi its last four. An unpack pairs the
// two lanes of each channel; 16 instructions where the transpose and a
// shuffle per channel took 48.
static inline void codes_by_channel(const __m256i c[L], unsigned char bytes[L][L])
{
    __m256i lo = _mm256_or_si256(_mm256_or_si256(c[0], _mm256_slli_epi32(c[1], 8)),
                                 _mm256_or_si256(_mm256_slli_epi32(c[2], 16),
                                                 _mm256_slli_epi32(c[3], 24)));
    __m256i hi = _mm256_or_si256(_mm256_or_si256(c[4], _mm256_slli_epi32(c[5], 8)),
                                 _mm256_or_si256(_mm256_slli_epi32(c[6], 16),
                                                 _mm256_slli_epi32(c[7], 24)));
    // Channels 0, 1 in the low 128 bits of a, 4, 5 in its high; 2, 3 and
    // 6, 7 likewise in b.
    __m256i a = _mm256_unpacklo_epi32(lo, hi), b = _mm256_unpackhi_epi32(lo, hi);
    _mm256_storeu_si256((__m256i *)bytes[0], _mm256_permute2x128_si256(a, b, 0x20));
    _mm256_storeu_si256((__m256i *)bytes[4], _mm256_permute2x128_si256(a, b, 0x31));
}

// One input channel and no padding (conv1: every window inside the image)
// change the balance. A tap of the blocks of 16 above loads two weight
// vectors and four pixels for 8 FMAs. Here a vector holds 8 output
// channels, the block's nine weight vectors are its whole filter (read
// from L1, see windows_two), and a window's 4×4 input patch is read once:
// each of its 16 pixels is broadcast once for every output of the window
// whose taps cover it, 36 FMAs for 16 loads. Two windows side by side
// (nwin = 2) make eight chains of FMAs, where one has four, each nine long,
// from a 4×6 patch: 24 loads for 72 FMAs. The pixels go in reading order,
// so each output still adds its taps in the order u, v, and the bits are
// the direct kernel's.
static inline __attribute__((always_inline)) void windows_one(const float *p, int w,
                                                              const __m256 k[9], __m256 b,
                                                              int nwin, __m256 best[2],
                                                              __m256i code[2])
{
    __m256 acc[2][4] = {{b, b, b, b}, {b, b, b, b}};
#pragma GCC unroll 4
    for (int i = 0; i < 4; i++)
#pragma GCC unroll 6
        for (int j = 0; j < 2 + 2 * nwin; j++) {
            __m256 xb = _mm256_broadcast_ss(p + i * w + j);
#pragma GCC unroll 2
            for (int s = 0; s < nwin; s++)
#pragma GCC unroll 4
                for (int at = 0; at < 4; at++) {
                    // the tap of output at of window s under pixel (i, j)
                    int u = i - at / 2, v = j - 2 * s - at % 2;
                    if (u >= 0 && u < 3 && v >= 0 && v < 3)
                        acc[s][at] = _mm256_fmadd_ps(k[u * 3 + v], xb, acc[s][at]);
                }
        }
#pragma GCC unroll 2
    for (int s = 0; s < nwin; s++)
        pool4(acc[s], &best[s], &code[s]);
}

// The two cases conv_pool_one calls, each a function of its own. Inlined
// into the loop over windows, the nine weight vectors were values of that
// loop, kept in registers all along, and with the eight sums, the bias and
// a broadcast that is 19 of AVX2's 16: gcc kept sums on the stack, so the
// FMAs of a chain waited on a store and a load. In a call, k[t] is read
// from memory where the taps first need it: a row of the filter serves two
// rows of the patch, so no more than six are live at once, and everything
// fits in the registers.
static __attribute__((noinline)) void windows_two(const float *p, int w, const __m256 k[9],
                                                  __m256 b, __m256 best[2], __m256i code[2])
{
    windows_one(p, w, k, b, 2, best, code);
}

static __attribute__((noinline)) void windows_single(const float *p, int w, const __m256 k[9],
                                                     __m256 b, __m256 best[2], __m256i code[2])
{
    windows_one(p, w, k, b, 1, best, code);
}

// conv_pool_one computes this many windows of a plane before it stores
// them: a multiple of 8, and few enough that the two arrays that hold them
// (8 KB) stay in L1.
enum { STRETCH = 128 };

static void conv_pool_one(const float *x, int h, int w, const float *kt, const float *bias,
                          int oc, float *y, unsigned char *code)
{
    int ph = (h - 2) / 2, pw = (w - 2) / 2;
    long plane = (long)ph * pw, chunks = (plane + L - 1) / L;
    __m256 best[STRETCH];
    __m256i codes[STRETCH];
    for (int o0 = 0; o0 < oc; o0 += L) {
        int n = oc - o0 < L ? oc - o0 : L;  // channels in this block
        __m256i m = first(n);
        __m256 k[9];
        for (int t = 0; t < 9; t++)
            k[t] = _mm256_maskload_ps(kt + t * oc + o0, m);
        __m256 b = _mm256_maskload_ps(bias + o0, m);
        // The next block's outputs (after the last block, the next image's,
        // which follow in the batch) asked for ahead, a share each run of
        // eight windows, so that the stores find their cache lines in cache:
        // without, the stores into y, not the FMAs, were the larger part of
        // the time. A prefetch never faults, even past the end of y.
        uintptr_t next_y = (uintptr_t)y + sizeof(float) * (size_t)((o0 + L) * plane),
                  next_code = (uintptr_t)code + (size_t)((o0 + L) * plane);
        long share_y = (sizeof(float) * L * plane / chunks + 63) & ~63L,
             share_code = (L * plane / chunks + 63) & ~63L;
        // A channel's plane is one run of ph·pw windows in y, so the windows
        // go in that order, a stretch at a time, rows one after another:
        // eight of them make one store per channel wherever a row ends, and
        // only the plane's last eight can be fewer.
        for (long p0 = 0; p0 < plane; p0 += STRETCH) {
            int len = plane - p0 < STRETCH ? (int)(plane - p0) : STRETCH;
            int r = (int)(p0 / pw), q = (int)(p0 % pw);  // the window at p0
            for (int i = 0; i < len;) {
                const float *patch = x + 2L * r * w + 2 * q;
                int two = i + 1 < len && q + 1 < pw;  // two windows side by side
                if (two)
                    windows_two(patch, w, k, b, best + i, codes + i);
                else
                    windows_single(patch, w, k, b, best + i, codes + i);
                i += 1 + two;
                q += 1 + two;
                if (q == pw) {
                    q = 0;
                    r++;
                }
            }
            // Eight windows at a time, transposed into each channel's run of
            // eight, as above; a last run of fewer the same way, the missing
            // windows zero, stored as far as it goes.
            for (int i = 0; i < len; i += L) {
                int nq = len - i < L ? len - i : L;
                long chunk = (p0 + i) / L;
                for (long off = 0; off < share_y; off += 64)
                    __builtin_prefetch((const void *)(next_y + chunk * share_y + off), 1, 3);
                for (long off = 0; off < share_code; off += 64)
                    __builtin_prefetch((const void *)(next_code + chunk * share_code + off), 1,
                                       3);
                for (int g = nq; g < L; g++) {
                    best[i + g] = _mm256_setzero_ps();
                    codes[i + g] = _mm256_setzero_si256();
                }
                transpose8(best + i);
                unsigned char bytes[L][L];
                codes_by_channel(codes + i, bytes);
                for (int l = 0; l < n; l++) {
                    long to = (long)(o0 + l) * plane + p0 + i;
                    if (nq == L) {
                        _mm256_storeu_ps(y + to, best[i + l]);
                        memcpy(code + to, bytes[l], L);
                    } else {
                        store_part(y + to, code + to, nq, best[i + l], bytes[l]);
                    }
                }
            }
        }
    }
}

void conv_pool_avx2(const float *x, int c, int h, int w, const float *kt, const float *bias,
                    int oc, int pad, float *y, unsigned char *code)
{
    if (c == 1 && pad == 0) {
        conv_pool_one(x, h, w, kt, bias, oc, y, code);
        return;
    }
    int ph = (h + 2 * pad - 2) / 2, pw = (w + 2 * pad - 2) / 2;
    long plane = (long)ph * pw;
    for (int o0 = 0; o0 < oc; o0 += 2 * L) {
        int n = oc - o0 < 2 * L ? oc - o0 : 2 * L;  // channels in this block
        __m256i m0 = first(n), m1 = first(n - L);
        __m256 b0 = _mm256_maskload_ps(bias + o0, m0), b1 = _mm256_maskload_ps(bias + o0 + L, m1);
        for (int r = 0; r < ph; r++) {
            long at = (long)o0 * plane + (long)r * pw;  // window (r, 0) of channel o0
            int q = 0;
            // Only the pooled maxima and their codes leave the registers,
            // each channel's to its own plane. A window's result is a vector
            // of channels, but a plane wants a row of windows: eight windows
            // at a time, transposed, make one vector store per channel
            // instead of eight single ones.
            for (; q + L <= pw; q += L) {
                __m256 best[2][L], codes[2][L];
                for (int g = 0; g < L; g++) {
                    __m256 bv[2];
                    __m256i kv[2];
                    window(x, c, h, w, kt + o0, oc, n, m0, m1, b0, b1, 2 * r - pad,
                           2 * (q + g) - pad, bv, kv);
                    for (int half = 0; half < 2; half++) {
                        best[half][g] = bv[half];
                        codes[half][g] = _mm256_castsi256_ps(kv[half]);
                    }
                }
                for (int half = 0; half < 2 && half * L < n; half++) {
                    transpose8(best[half]);
                    transpose8(codes[half]);
                    for (int l = 0; l < L && half * L + l < n; l++) {
                        long to = at + (half * L + l) * plane + q;
                        _mm256_storeu_ps(y + to, best[half][l]);
                        store_codes8(code + to, _mm256_castps_si256(codes[half][l]));
                    }
                }
            }
            // The last windows of the row one at a time.
            for (; q < pw; q++) {
                __m256 bv[2];
                __m256i kv[2];
                window(x, c, h, w, kt + o0, oc, n, m0, m1, b0, b1, 2 * r - pad, 2 * q - pad, bv,
                       kv);
                float best[2 * L];
                int k[2 * L];
                for (int half = 0; half < 2; half++) {
                    _mm256_storeu_ps(best + half * L, bv[half]);
                    _mm256_storeu_si256((__m256i *)(k + half * L), kv[half]);
                }
                for (int l = 0; l < n; l++) {
                    y[at + l * plane + q] = best[l];
                    code[at + l * plane + q] = (unsigned char)k[l];
                }
            }
        }
    }
}
// end listing

// Σ of the 8 lanes, in a fixed order.
static float lanes_sum(__m256 v)
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

// listing: conv_dw_avx2
// For one pair of channels (o, ch) the nine weights' gradients are nine
// sums over the same output positions: one accumulator each, nine
// independent chains that hide the FMA's latency; the lanes are added once,
// at the end. Several output rows at a time share their input rows: two
// rows read four input rows, three shifted vectors each, for 18 FMAs, 14
// loads where one row at a time needs 10 for 9; four rows, where all six
// input rows lie inside the image (pad and an odd last row aside, every
// row), read 18 and four of dy for 36 FMAs: 22 loads where two rows at a
// time need 28. Each sum still takes its rows in order, so the bits do not
// depend on how many rows go at a time. Inside the row (always, but at its
// end), the loads are plain ones: a masked load is slower, and the row's
// last columns are a full chunk that overlaps the one before it.
//
// The nine sums, two vectors of dy (four) and one of x take 12 (14) of
// AVX2's 16 registers, and they stay there only if the compiler sees nine
// separate values: so the accumulators are a local array of one column
// chunk, filled from the running sums before its rows and stored back after
// them, with every loop that indexes it unrolled. Passed down through the loops by
// pointer instead, they lived on the stack: each FMA read its accumulator
// from memory and wrote it back. always_inline makes two copies, one for
// each value of full: the full one holds no masks (with them, the sixteen
// registers did not suffice), and only it takes four rows at a time.
static inline __attribute__((always_inline)) void dw_chunk(const float *xc, int h, int w,
                                                          const float *g, int oh, int ow,
                                                          int pad, int q0, int skip, int full,
                                                          __m256 sums[9])
{
    int lanes = ow - q0 < L ? ow - q0 : L;
    __m256i all = first(lanes), m0 = inside(q0, lanes, 0, pad, w),
            m1 = inside(q0, lanes, 1, pad, w), m2 = inside(q0, lanes, 2, pad, w);
    // A full chunk's first `skip` columns were done by the chunk before it:
    // their dy counts as zero.
    __m256 keep = _mm256_castsi256_ps(_mm256_cmpgt_epi32(
        _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), _mm256_set1_epi32(skip - 1)));
    __m256 acc[9];
#pragma GCC unroll 9
    for (int t = 0; t < 9; t++)
        acc[t] = sums[t];
    for (int r = 0; r < oh; r += 2) {
        if (full && r + 3 < oh && r - pad >= 0 && r + 5 - pad < h) {
            // Four rows whose six input rows all lie inside the image: each
            // input vector feeds every row whose taps reach it (up to three
            // FMAs), with no test between them.
            const float *gr = g + (long)r * ow + q0;
            __m256 d[4];
#pragma GCC unroll 4
            for (int i = 0; i < 4; i++)
                d[i] = _mm256_and_ps(keep, _mm256_loadu_ps(gr + (long)i * ow));
            const float *xr = xc + (long)(r - pad) * w + q0 - pad;
#pragma GCC unroll 6
            for (int u = 0; u < 6; u++)
#pragma GCC unroll 3
                for (int v = 0; v < 3; v++) {
                    __m256 xv = _mm256_loadu_ps(xr + (long)u * w + v);
#pragma GCC unroll 4
                    for (int i = 0; i < 4; i++) {
                        int t = (u - i) * 3 + v;  // row r + i, tap (u − i, v)
                        if (u - i >= 0 && u - i < 3)
                            acc[t] = _mm256_fmadd_ps(d[i], xv, acc[t]);
                    }
                }
            r += 2;  // four rows, not two
            continue;
        }
        const float *g0 = g + (long)r * ow + q0, *g1 = g0 + ow;
        int two = r + 1 < oh;  // a second row below this one
        __m256 d0 = full ? _mm256_and_ps(keep, _mm256_loadu_ps(g0)) : _mm256_maskload_ps(g0, all);
        __m256 d1 = _mm256_setzero_ps();
        if (two)
            d1 = full ? _mm256_and_ps(keep, _mm256_loadu_ps(g1)) : _mm256_maskload_ps(g1, all);
#pragma GCC unroll 4
        for (int u = 0; u < 4; u++) {
            int iy = r + u - pad;
            if (iy < 0 || iy >= h || (u == 3 && !two))
                continue;
            const float *xr = xc + (long)iy * w + q0 - pad;
#pragma GCC unroll 3
            for (int v = 0; v < 3; v++) {
                __m256i m = v == 0 ? m0 : v == 1 ? m1 : m2;
                __m256 xv = full ? _mm256_loadu_ps(xr + v) : _mm256_maskload_ps(xr + v, m);
                if (u < 3)  // row r, tap (u, v)
                    acc[u * 3 + v] = _mm256_fmadd_ps(d0, xv, acc[u * 3 + v]);
                if (u > 0 && two)  // row r + 1, tap (u − 1, v)
                    acc[(u - 1) * 3 + v] = _mm256_fmadd_ps(d1, xv, acc[(u - 1) * 3 + v]);
            }
        }
    }
#pragma GCC unroll 9
    for (int t = 0; t < 9; t++)
        sums[t] = acc[t];
}

void conv_dw_avx2(const float *x, int c, int h, int w, const float *dy, long ldy, int oc,
                  int pad, float *dw)
{
    int oh = h + 2 * pad - 2, ow = w + 2 * pad - 2;
    for (int o = 0; o < oc; o++)
        for (int ch = 0; ch < c; ch++) {
            const float *xc = x + (long)ch * h * w, *g = dy + o * ldy;
            __m256 sums[9];
            for (int t = 0; t < 9; t++)
                sums[t] = _mm256_setzero_ps();
            for (int q0 = 0; q0 < ow; q0 += L) {
                // The last chunk of a row of 8 columns or more moves left to
                // end where the row ends, and skips the columns it shares
                // with the chunk before. Every tap of a chunk at column at
                // reads columns at − pad .. at − pad + 9.
                int at = ow >= L && q0 + L > ow ? ow - L : q0;
                if (at - pad >= 0 && at - pad + L + 2 <= w)
                    dw_chunk(xc, h, w, g, oh, ow, pad, at, q0 - at, 1, sums);
                else
                    dw_chunk(xc, h, w, g, oh, ow, pad, q0, 0, 0, sums);
            }
            float *d = dw + ((long)o * c + ch) * 9;
            for (int t = 0; t < 9; t++)
                d[t] += lanes_sum(sums[t]);
        }
}
// end listing

#endif
