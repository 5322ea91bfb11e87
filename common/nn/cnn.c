// Chapter 8's convolutional network, the one of the Keras and PyTorch MNIST
// examples: two 3×3 convolutions, each with ReLU and 2×2 max pooling, then
// two Linear layers. Another nn_model: the training loop, the optimizers and
// the checkpoints of chapter 7 take it as they take the MLP.
#include <stdio.h>
#include <string.h>

#include "conv.h"
#include "nn.h"
#include "ops.h"

// The shapes, in one place: init, forward and the FLOP count read them.
// 28×28 → conv 3×3 → 26×26 → pool → 13×13 → conv 3×3 → 11×11 → pool → 5×5.
enum {
    IMG = 28, C1 = 32, C2 = 64, K = 3, HIDDEN = 128, CLASSES = 10,
    H1 = IMG - K + 1,   // 26
    P1 = H1 / 2,        // 13
    H2 = P1 - K + 1,    // 11
    P2 = H2 / 2,        // 5 (the last row and column of 11 are dropped)
    FLAT = C2 * P2 * P2 // 1,600
};

// listing: cnn_forward
// A convolution with its ReLU and 2×2 max pooling: one op,
// op_conv2d_relu_maxpool2, or two, op_conv2d_relu then op_maxpool2. The
// same bits either way; which is faster is a measurement (chapter 8).
static struct tensor *conv_block(struct tape *t, struct tensor *x, struct tensor *w,
                                 struct tensor *bias, int fused)
{
    if (fused)
        return op_conv2d_relu_maxpool2(t, x, w, bias, 1, 0);
    // The convolution's output is read by its pooling and by nothing after
    // it: tape_done says so, for the first step, which cannot know (chapter 6).
    struct tensor *c = op_conv2d_relu(t, x, w, bias, 1, 0);
    struct tensor *pooled = op_maxpool2(t, c);
    tape_done(t, c);
    return pooled;
}

// x is b×784, a batch of flattened images; seen (no copy) as b×1×28×28,
// NCHW. The parameters are, in order: conv1 w (32×1×3×3) and bias (32),
// conv2 w (64×32×3×3) and bias (64), fc1 w (1600×128) and bias (128),
// fc2 w (128×10) and bias (10). The first fused_convs convolutions are
// fused with their pooling.
static struct tensor *cnn_forward_fused(struct nn_model *m, struct tape *t, struct tensor *x,
                                        int fused_convs)
{
    if (!x)
        return NULL;
    struct tensor **p = m->params;
    int b = x->shape[0];
    x = op_reshape(t, x, 4, (int[]){b, 1, IMG, IMG});
    x = conv_block(t, x, p[0], p[1], fused_convs >= 1);  // b×32×13×13
    x = conv_block(t, x, p[2], p[3], fused_convs >= 2);  // b×64×5×5
    x = op_reshape(t, x, 2, (int[]){b, FLAT});           // b×1600, channel-major
    x = op_relu(t, op_linear(t, x, p[4], p[5]));         // b×128
    return op_linear(t, x, p[6], p[7]);                  // b×10 logits, or NULL
}
// end listing

// The forward of every step: with as many convolutions fused with their
// pooling as the tape's config says (NN_CNN_FUSED unless it says).
static struct tensor *cnn_forward(struct nn_model *m, struct tape *t, struct tensor *x)
{
    int fused = tape_config(t)->fused_pools;
    return cnn_forward_fused(m, t, x, fused < 0 ? NN_CNN_FUSED : fused);
}

int nn_cnn_init(struct nn_model *m, uint64_t seed, char *err, size_t errlen)
{
    memset(m, 0, sizeof *m);
    snprintf(m->desc, sizeof m->desc, "cnn 1x28x28-c32-p-c64-p-128-10");
    m->forward = cnn_forward;
    m->inputs = IMG * IMG;  // a flattened image, as for the MLP
    m->forward_flops = nn_cnn_forward_flops();
    m->train_flops = nn_cnn_train_flops();
    struct {
        int ndim, shape[4], fan_in;
    } const layers[] = {
        {4, {C1, 1, K, K}, 1 * K * K},    {1, {C1}, 0},
        {4, {C2, C1, K, K}, C1 * K * K},  {1, {C2}, 0},
        {2, {FLAT, HIDDEN}, FLAT},        {1, {HIDDEN}, 0},
        {2, {HIDDEN, CLASSES}, HIDDEN},   {1, {CLASSES}, 0},
    };
    uint64_t state = seed;
    for (size_t i = 0; i < sizeof layers / sizeof layers[0]; i++) {
        struct tensor *p = nn_add_param(m, layers[i].ndim, layers[i].shape);
        if (!p) {
            nn_model_free(m);
            snprintf(err, errlen, "out of memory for the CNN's parameter %zu", i + 1);
            return -1;
        }
        if (layers[i].fan_in)
            nn_he_fill(p, layers[i].fan_in, &state);  // biases stay zero
    }
    return 0;
}

// listing: cnn_flops
// A convolution costs 2·oc·c·kh·kw FLOPs per output pixel (a multiply and an
// add per weight), a Linear layer 2·in·out. Per image, forward:
//   conv1  2·32·1·9  · 26·26 =   389,376
//   conv2  2·64·32·9 · 11·11 = 4,460,544
//   fc1    2·1600·128        =   409,600
//   fc2    2·128·10          =     2,560
//   total                      5,262,080, about 5.3 MFLOP
// Pooling, ReLU and the biases add about 0.1 % and are not counted.
static double conv_flops(int c, int oc, int oh)
{
    return 2.0 * oc * c * K * K * oh * oh;
}

double nn_cnn_forward_flops(void)
{
    return conv_flops(1, C1, H1) + conv_flops(C1, C2, H2) + 2.0 * FLAT * HIDDEN +
           2.0 * HIDDEN * CLASSES;
}

// A training step: the forward, the weight gradient of every layer (the same
// FLOPs as its forward), and the data gradient of every layer but the first
// (the images need none): 2·389,376 + 3·(4,460,544 + 409,600 + 2,560) =
// 15,396,864 per image, 0.92 TFLOP per epoch of 60,000 images.
double nn_cnn_train_flops(void)
{
    return 2.0 * conv_flops(1, C1, H1) +
           3.0 * (conv_flops(C1, C2, H2) + 2.0 * FLAT * HIDDEN + 2.0 * HIDDEN * CLASSES);
}
// end listing
