// The multilayer perceptron: Linear, ReLU, Linear, ..., Linear (logits).
#include <stdio.h>
#include <string.h>

#include "nn.h"
#include "ops.h"

enum { MAX_SIZE = 65536 };

// listing: mlp_forward
// x is b×in; the parameters are each layer's w (in×out) and bias (out), in
// order. Each layer is y = x·w + bias, with a ReLU between two layers and
// none after the last: the logits go to the loss.
static struct tensor *mlp_forward(struct nn_model *m, struct tape *t, struct tensor *x)
{
    int layers = m->nparams / 2;
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

void nn_mlp_flops(int nsizes, const int *sizes, double *forward, double *train)
{
    *forward = *train = 0.0;
    for (int l = 0; l + 1 < nsizes; l++) {
        double layer = 2.0 * sizes[l] * sizes[l + 1];
        *forward += layer;
        *train += (l == 0 ? 2.0 : 3.0) * layer;
    }
}

// listing: mlp_init
// Each layer's weights drawn by He's rule (nn_he_fill) with fan_in = in,
// its bias zero.
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
        len += snprintf(m->desc + len, sizeof m->desc - (size_t)len, "%s%d", i ? "," : "",
                        sizes[i]);
    }
    m->forward = mlp_forward;
    m->inputs = sizes[0];
    nn_mlp_flops(nsizes, sizes, &m->forward_flops, &m->train_flops);
    uint64_t state = seed;
    for (int l = 0; l + 1 < nsizes; l++) {
        int in = sizes[l], out = sizes[l + 1];
        struct tensor *w = nn_add_param(m, 2, (int[]){in, out});  // in×out: y = x·w
        struct tensor *b = nn_add_param(m, 1, (int[]){out});      // zeroed
        if (!w || !b) {
            nn_model_free(m);
            snprintf(err, errlen, "out of memory for layer %d (%d×%d)", l + 1, in, out);
            return -1;
        }
        nn_he_fill(w, in, &state);
    }
    return 0;
}
// end listing
