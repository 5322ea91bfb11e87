// The multilayer perceptron: Linear, ReLU, Linear, ..., Linear (logits),
// and what every model shares (freeing, counting, zeroing gradients).
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "nn.h"
#include "ops.h"

enum { MAX_SIZE = 65536 };

// splitmix64: a 64-bit state stepped by a constant and scrambled; small, fast
// and the same on every machine.
static uint64_t splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

// listing: nn_normal
// Box-Muller: two uniform numbers u1 in (0, 1] and u2 in [0, 1) give the
// normal sample √(−2 ln u1)·cos(2π u2). u1 never reaches 0, so the log is
// finite. (The second sample, with sin, is dropped: simpler, and init is not
// where the time goes.)
double nn_normal(uint64_t *state)
{
    const double two_pi = 6.283185307179586;
    double u1 = ((splitmix64(state) >> 11) + 1) * 0x1.0p-53;
    double u2 = (splitmix64(state) >> 11) * 0x1.0p-53;
    return sqrt(-2.0 * log(u1)) * cos(two_pi * u2);
}
// end listing

// listing: mlp_forward
// x is b×sizes[0]; each layer is y = x·w + bias, b×sizes[l+1], with a ReLU
// between two layers and none after the last: the logits go to the loss.
static struct tensor *mlp_forward(struct nn_model *m, struct tape *t, struct tensor *x)
{
    int layers = m->nsizes - 1;
    for (int l = 0; l < layers; l++) {
        x = op_linear(t, x, m->params[2 * l], m->params[2 * l + 1]);
        if (l + 1 < layers)
            x = op_relu(t, x);
    }
    return x;  // NULL when an op failed, the tape's error set
}
// end listing

int nn_parse_sizes(const char *text, int *sizes, int max)
{
    int count = 0;
    const char *p = text;
    if (!text)
        return -1;
    for (;;) {
        long v = 0;
        const char *start = p;
        while (*p >= '0' && *p <= '9') {
            v = v * 10 + (*p - '0');
            if (v > MAX_SIZE)
                return -1;
            p++;
        }
        if (p == start || v < 1 || count == max)
            return -1;  // an empty field, a non-digit, a zero, or too many
        sizes[count++] = (int)v;
        if (*p == '\0')
            break;
        if (*p != ',')
            return -1;
        p++;
    }
    return count >= 2 ? count : -1;  // a network needs inputs and outputs
}

// listing: mlp_init
// He initialisation: a ReLU zeroes about half of its inputs, so to keep the
// variance of the activations the same from layer to layer each weight is
// drawn with variance 2/in (He et al., 2015). Biases start at zero.
int nn_mlp_init(struct nn_model *m, int nsizes, const int *sizes, uint64_t seed, char *err,
                size_t errlen)
{
    memset(m, 0, sizeof *m);
    if (nsizes < 2 || nsizes > NN_MAX_LAYERS + 1) {
        snprintf(err, errlen, "an MLP has 2 to %d sizes (1 to %d layers), not %d",
                 NN_MAX_LAYERS + 1, NN_MAX_LAYERS, nsizes);
        return -1;
    }
    int len = snprintf(m->desc, sizeof m->desc, "mlp ");
    for (int i = 0; i < nsizes; i++) {
        if (sizes[i] < 1 || sizes[i] > MAX_SIZE) {
            snprintf(err, errlen, "layer size %d is out of 1..%d", sizes[i], MAX_SIZE);
            return -1;
        }
        m->sizes[i] = sizes[i];
        len += snprintf(m->desc + len, sizeof m->desc - (size_t)len, "%s%d", i ? "," : "",
                        sizes[i]);
    }
    m->nsizes = nsizes;
    m->forward = mlp_forward;
    uint64_t state = seed;
    for (int l = 0; l + 1 < nsizes; l++) {
        int in = sizes[l], out = sizes[l + 1];
        struct tensor *w = tensor_param(2, (int[]){in, out});  // in×out: y = x·w
        struct tensor *b = tensor_param(1, (int[]){out});      // zeroed
        m->params[m->nparams++] = w;
        m->params[m->nparams++] = b;
        if (!w || !b) {
            nn_model_free(m);
            snprintf(err, errlen, "out of memory for layer %d (%d×%d)", l + 1, in, out);
            return -1;
        }
        double sd = sqrt(2.0 / in);
        for (long i = 0; i < w->size; i++)
            w->data[i] = (float)(sd * nn_normal(&state));
    }
    return 0;
}
// end listing

void nn_model_free(struct nn_model *m)
{
    for (int i = 0; i < m->nparams; i++) {
        tensor_free(m->params[i]);
        m->params[i] = NULL;
    }
    m->nparams = 0;
}

long nn_param_count(const struct nn_model *m)
{
    long n = 0;
    for (int i = 0; i < m->nparams; i++)
        n += m->params[i]->size;
    return n;
}

void nn_zero_grad(struct nn_model *m)
{
    for (int i = 0; i < m->nparams; i++)
        tensor_zero_grad(m->params[i]);
}

// A model whose layers are not all in sizes (the CNN) set its own counts.
double nn_forward_flops(const struct nn_model *m)
{
    if (m->forward_flops > 0)
        return m->forward_flops;
    double flops = 0.0;
    for (int l = 0; l + 1 < m->nsizes; l++)
        flops += 2.0 * m->sizes[l] * m->sizes[l + 1];
    return flops;
}

double nn_train_flops(const struct nn_model *m)
{
    if (m->train_flops > 0)
        return m->train_flops;
    double flops = 0.0;
    for (int l = 0; l + 1 < m->nsizes; l++)
        flops += (l == 0 ? 2.0 : 3.0) * 2.0 * m->sizes[l] * m->sizes[l + 1];
    return flops;
}
