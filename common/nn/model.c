// What every model shares: its parameters (made, counted, zeroed, freed) and
// its starting weights (He's rule over a normal generator that gives the
// same numbers on every machine).
#include <math.h>

#include "nn.h"

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

// listing: he_fill
// He initialisation: a ReLU zeroes about half of its inputs, so to keep the
// variance of the activations the same from layer to layer each weight is
// drawn with variance 2/fan_in, fan_in being what one output sums over: a
// Linear layer's in, a convolution's c·kh·kw (He et al., 2015).
void nn_he_fill(struct tensor *w, int fan_in, uint64_t *state)
{
    double sd = sqrt(2.0 / fan_in);
    for (long i = 0; i < w->size; i++)
        w->data[i] = (float)(sd * nn_normal(state));
}
// end listing

struct tensor *nn_add_param(struct nn_model *m, int ndim, const int *shape)
{
    if (m->nparams == NN_MAX_PARAMS)
        return NULL;
    struct tensor *p = tensor_param(ndim, shape);
    if (p)
        m->params[m->nparams++] = p;
    return p;
}

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

void nn_forget_grad(struct nn_model *m)
{
    for (int i = 0; i < m->nparams; i++)
        tensor_forget_grad(m->params[i]);
}
