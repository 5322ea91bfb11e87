// Which of the five ways op_conv2d computes a convolution: by shape, or
// as the tape's config says (a program's --conv).
#include <string.h>

#include "conv.h"
#include "conv_direct.h"
#include "conv_winograd.h"

static const char *const names[] = {"auto", "im2col", "1x1", "direct", "implicit", "winograd",
                                     NULL};

const char *const *conv_path_names(void)
{
    return names;
}

struct flag conv_path_flag(int *path)
{
    return flag_choice("--conv", "PATH", path, names, NULL, "how the convolutions compute");
}

struct flag conv_paths_flag(struct flag_list *paths)
{
    return flag_choices("--conv", "A,B", paths, names, NULL, "only these convolution paths");
}

int conv_parse_path(const char *name, enum conv_path *out)
{
    for (int p = CONV_AUTO; p <= CONV_WINOGRAD; p++)
        if (name && strcmp(name, names[p]) == 0) {
            *out = (enum conv_path)p;
            return 0;
        }
    return -1;
}

const char *conv_path_name(enum conv_path p)
{
    return p >= CONV_AUTO && p <= CONV_WINOGRAD ? names[p] : "unknown";
}

// The 1×1 path reads x as the GEMM's B operand where it lies: c rows of
// h·w pixels per image, which is im2col's matrix only for a 1×1 filter,
// stride 1 and no padding.
static int takes_1x1(int kh, int kw, int stride, int pad)
{
    return kh == 1 && kw == 1 && stride == 1 && pad == 0;
}

// listing: conv_choose
enum conv_path conv_choose(enum conv_path want, int c, int h, int w, int oc, int kh, int kw,
                           int stride, int pad)
{
    (void)h;
    (void)w;
    (void)oc;
    int direct_ok = conv_direct_takes(kh, kw, stride, pad);
    switch (want) {
    case CONV_IM2COL:
        return CONV_IM2COL;
    case CONV_1X1:
        return takes_1x1(kh, kw, stride, pad) ? CONV_1X1 : CONV_IM2COL;
    case CONV_DIRECT:
        return direct_ok ? CONV_DIRECT : CONV_IM2COL;
    case CONV_IMPLICIT:
        return CONV_IMPLICIT;
    case CONV_WINOGRAD:
        return conv_winograd_takes(kh, kw, stride) ? CONV_WINOGRAD : CONV_IMPLICIT;
    default:
        break;
    }
    // By shape: a 1×1 needs no copy at all. A 3×3 over a few channels makes
    // a GEMM with k = 9·c, too short to keep the micro-kernel busy, while
    // im2col's copy is nine times the input: the direct kernel wins there.
    // Over more channels a 3×3 at stride 1 takes Winograd's four times fewer
    // multiplications, whose transforms then cost less than the products
    // they save. Past that, the GEMM, its panels packed from the images
    // where no padding asks for a test per element (the implicit path), else
    // from im2col's matrix.
    if (takes_1x1(kh, kw, stride, pad))
        return CONV_1X1;
    if (direct_ok && c <= 4)
        return CONV_DIRECT;
    if (conv_winograd_takes(kh, kw, stride))
        return CONV_WINOGRAD;
    if (stride == 1 && pad == 0)
        return CONV_IMPLICIT;
    return CONV_IM2COL;
}
// end listing
