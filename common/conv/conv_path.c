// The ways op_conv2d computes a convolution, one row each, and the rule that
// chooses one by shape when the tape's config says auto (a program's
// --conv). The names here are the only spelling of the paths: flags, help
// text and messages take them from this table.
#include <stddef.h>
#include <string.h>

#include "conv2d_parts.h"
#include "conv_winograd.h"

static int takes_any(const struct conv_shape *s)
{
    (void)s;
    return 1;
}

// The 1×1 path reads x as the GEMM's B operand where it lies: c rows of
// h·w pixels per image, which is im2col's matrix only for a 1×1 filter,
// stride 1 and no padding.
static int takes_1x1(const struct conv_shape *s)
{
    return s->kh == 1 && s->kw == 1 && s->stride == 1 && s->pad == 0;
}

static int takes_direct(const struct conv_shape *s)
{
    return conv_direct_takes(s->kh, s->kw, s->stride, s->pad);
}

static int takes_winograd(const struct conv_shape *s)
{
    return conv_winograd_takes(s->kh, s->kw, s->stride);
}

// listing: conv_paths
static const struct conv_path paths[CONV_PATHS] = {
    [CONV_AUTO] = {"auto", "chosen by shape (conv_choose)", NULL, NULL, NULL, NULL, CONV_AUTO},
    [CONV_IM2COL] = {"im2col", "the image's patches copied into a matrix, one GEMM",
                     takes_any, conv_im2col_scratch, conv_im2col_path_forward,
                     conv_im2col_path_backward, CONV_IM2COL},
    [CONV_1X1] = {"1x1", "a 1x1 filter, stride 1, no pad: a GEMM on x as it lies",
                  takes_1x1, conv_im2col_scratch, conv_1x1_path_forward,
                  conv_im2col_path_backward, CONV_IM2COL},
    [CONV_DIRECT] = {"direct", "a 3x3 kernel in SIMD registers, no copy (stride 1)",
                     takes_direct, conv_im2col_scratch, conv_direct_path_forward,
                     conv_direct_path_backward, CONV_IM2COL},
    [CONV_IMPLICIT] = {"implicit", "im2col's GEMMs, their panels packed from the images",
                       takes_any, conv_implicit_path_scratch, conv_implicit_path_forward,
                       conv_implicit_path_backward, CONV_IMPLICIT},
    [CONV_WINOGRAD] = {"winograd", "a 3x3 at stride 1 in F(4x4, 3x3)'s fewer multiplications",
                       takes_winograd, conv_winograd_path_scratch, conv_winograd_path_forward,
                       conv_winograd_path_backward, CONV_IMPLICIT},
};
// end listing

const struct conv_path *conv_path_of(enum conv_path_id id)
{
    return id > CONV_AUTO && id < CONV_PATHS ? &paths[id] : NULL;
}

enum conv_path_id conv_path_id(const struct conv_path *p)
{
    return p ? (enum conv_path_id)(p - paths) : CONV_AUTO;
}

const char *conv_path_name(const struct conv_path *p)
{
    return p ? p->name : paths[CONV_AUTO].name;
}

const char *conv_path_about(enum conv_path_id id)
{
    return id >= CONV_AUTO && id < CONV_PATHS ? paths[id].about : NULL;
}

int conv_parse_path(const char *name, enum conv_path_id *out)
{
    for (int p = CONV_AUTO; p < CONV_PATHS; p++)
        if (name && strcmp(name, paths[p].name) == 0) {
            *out = (enum conv_path_id)p;
            return 0;
        }
    return -1;
}

// listing: conv_choose
const struct conv_path *conv_choose(const struct conv_path *want, const struct conv_shape *s)
{
    if (want && want->forward)
        return want->takes(s) ? want : &paths[want->instead];
    // By shape: a 1×1 needs no copy at all. A 3×3 over a few channels makes
    // a GEMM with k = 9·c, too short to keep the micro-kernel busy, while
    // im2col's copy is nine times the input: the direct kernel wins there.
    // Over more channels a 3×3 at stride 1 takes Winograd's four times fewer
    // multiplications, whose transforms then cost less than the products
    // they save. Past that, the GEMM, its panels packed from the images
    // where no padding asks for a test per element (the implicit path), else
    // from im2col's matrix.
    if (takes_1x1(s))
        return &paths[CONV_1X1];
    if (takes_direct(s) && s->c <= 4)
        return &paths[CONV_DIRECT];
    if (takes_winograd(s))
        return &paths[CONV_WINOGRAD];
    if (s->stride == 1 && s->pad == 0)
        return &paths[CONV_IMPLICIT];
    return &paths[CONV_IM2COL];
}
// end listing
