#ifndef AVX512_EMULATED_H
#define AVX512_EMULATED_H

// `make test-avx512` builds every *_avx512.c file with this header first
// (common/build.mk, EMULATE=avx512), so that the AVX-512 kernels run and are
// tested on a CPU without AVX-512, as the NEON ones run under qemu. SIMDe
// (Debian's libsimde-dev) writes each AVX-512 intrinsic in AVX2 and plain C;
// its "native aliases" give those versions the intrinsics' own names, so the
// kernels' source is compiled unchanged.
//
// SIMDe 0.7.4, Debian 12's, lacks the five intrinsics below. They are written
// out lane by lane as Intel's guide defines them. A masked load or store
// touches only the lanes of its mask, as the instruction does: the kernels
// rely on that at the ends of rows, and AddressSanitizer checks each lane it
// touches. The streaming store faults on an address not 64-byte aligned, as
// the instruction does.
#define SIMDE_ENABLE_NATIVE_ALIASES
#include <simde/x86/avx512.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static inline simde__m512 emulated_mm512_maskz_loadu_ps(simde__mmask16 k, const void *p)
{
    simde__m512_private r = simde__m512_to_private(simde_mm512_setzero_ps());
    for (int i = 0; i < 16; i++)
        if (k >> i & 1)
            r.f32[i] = ((const float *)p)[i];
    return simde__m512_from_private(r);
}

static inline void emulated_mm512_mask_storeu_ps(void *p, simde__mmask16 k, simde__m512 a)
{
    simde__m512_private v = simde__m512_to_private(a);
    for (int i = 0; i < 16; i++)
        if (k >> i & 1)
            ((float *)p)[i] = v.f32[i];
}

static inline void emulated_mm512_mask_storeu_epi32(void *p, simde__mmask16 k, simde__m512i a)
{
    simde__m512i_private v = simde__m512i_to_private(a);
    for (int i = 0; i < 16; i++)
        if (k >> i & 1)
            ((int32_t *)p)[i] = v.i32[i];
}

static inline void emulated_mm512_stream_ps(void *p, simde__m512 a)
{
    if ((uintptr_t)p % 64 != 0) {
        fprintf(stderr, "_mm512_stream_ps: %p is not 64-byte aligned\n", p);
        abort();
    }
    simde_mm512_storeu_ps(p, a);
}

static inline float emulated_mm512_cvtss_f32(simde__m512 a)
{
    return simde__m512_to_private(a).f32[0];
}

#define _mm512_maskz_loadu_ps emulated_mm512_maskz_loadu_ps
#define _mm512_mask_storeu_ps emulated_mm512_mask_storeu_ps
#define _mm512_mask_storeu_epi32 emulated_mm512_mask_storeu_epi32
#define _mm512_stream_ps emulated_mm512_stream_ps
#define _mm512_cvtss_f32 emulated_mm512_cvtss_f32

#endif
