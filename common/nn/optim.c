// SGD with momentum and Adam: the configuration, the state each keeps per
// parameter, and the scalar update loops the vector ones must match bit for
// bit (optim_avx2.c, optim_avx512.c, optim_neon.c).
#include <math.h>
#include <stdlib.h>
#include <string.h>

#if defined(_OPENMP)
#include <omp.h>
#endif

#include "gemm_parts.h"
#include "optim.h"

struct optim_config optim_defaults(enum optim_kind kind, float lr, float weight_decay)
{
    return (struct optim_config){.kind = kind,
                                 .lr = lr,
                                 .momentum = 0.9f,
                                 .beta1 = 0.9f,
                                 .beta2 = 0.999f,
                                 .eps = 1e-8f,
                                 .weight_decay = weight_decay,
                                 // a tape's default ISA: its GEMM's
                                 .isa = gemm_context_default().kernel.isa};
}

int optim_parse(const char *name, enum optim_kind *out)
{
    if (name && strcmp(name, "sgd") == 0)
        *out = OPTIM_SGD;
    else if (name && strcmp(name, "adam") == 0)
        *out = OPTIM_ADAM;
    else
        return -1;
    return 0;
}

static const char *const names[] = {"sgd", "adam", NULL};

const char *optim_name(enum optim_kind kind)
{
    return kind == OPTIM_ADAM ? "adam" : "sgd";
}

const char *const *optim_names(void)
{
    return names;
}

// listing: sgd_scalar
// PyTorch's SGD with momentum (dampening 0): the velocity v is a running sum
// of past gradients, each step's weighted by momentum once more.
void sgd_update_scalar(long n, float *p, const float *g, float *v, float lr, float momentum,
                       float wd)
{
    for (long i = 0; i < n; i++) {
        float gi = g[i] + wd * p[i];
        v[i] = momentum * v[i] + gi;
        p[i] = p[i] - lr * v[i];
    }
}
// end listing

// listing: adam_scalar
// m and v are running means of the gradient and of its square. Both start
// at zero, so early on they are too small by the factors 1 − β1ᵗ and
// 1 − β2ᵗ: dividing by them undoes that. Each weight then moves by about
// lr, whatever its gradient's scale: m/√v is a gradient measured in its own
// standard deviations.
void adam_update_scalar(long n, float *p, const float *g, float *m, float *v,
                        const struct adam_step *s)
{
    // BEGIN SOLUTION task 7.2: Adam's step for each parameter: what do the weight decay, the two moments and their bias corrections each do, in the header's order?
    for (long i = 0; i < n; i++) {
        float gi = g[i] + s->weight_decay * p[i];
        m[i] = s->beta1 * m[i] + (1.0f - s->beta1) * gi;
        v[i] = s->beta2 * v[i] + (1.0f - s->beta2) * (gi * gi);
        float mhat = m[i] / s->bias1;
        float vhat = v[i] / s->bias2;
        p[i] = p[i] - s->lr * mhat / (sqrtf(vhat) + s->eps);
    }
    // stub: (void)n; (void)p; (void)g; (void)m; (void)v; (void)s;
    // END SOLUTION
}
// end listing

static const struct optim_kernels by_isa[ISA_COUNT] = {
    [ISA_SCALAR] = {ISA_SCALAR, sgd_update_scalar, adam_update_scalar},
#if defined(__x86_64__)
    [ISA_AVX2] = {ISA_AVX2, sgd_update_avx2, adam_update_avx2},
    [ISA_AVX512] = {ISA_AVX512, sgd_update_avx512, adam_update_avx512},
#endif
#if defined(__aarch64__)
    [ISA_NEON] = {ISA_NEON, sgd_update_neon, adam_update_neon},
#endif
};

const struct optim_kernels *optim_kernels(enum isa isa)
{
    isa_count_use(isa);
    return &by_isa[isa];
}

// The optimizer: its config, its parameters, and per parameter the state
// (SGD: the velocity; Adam: the two moments), all in one zeroed block.
struct optim {
    struct optim_config c;
    int nparams;
    struct tensor **params;
    float **state1;  // SGD's v, Adam's m: one array per parameter, its size
    float **state2;  // Adam's v; NULL for SGD
    float *block;
    long total;      // floats in all the parameters
    int threads;     // 0: as many as OpenMP gives
    long steps;
};

static int valid(const struct optim_config *c)
{
    // Written so that a NaN fails every test.
    if (!(c->lr > 0.0f && isfinite(c->lr)))
        return 0;
    if (!(c->weight_decay >= 0.0f && isfinite(c->weight_decay)))
        return 0;
    if (c->kind == OPTIM_SGD)
        return c->momentum >= 0.0f && c->momentum < 1.0f;
    if (c->kind == OPTIM_ADAM)
        return c->beta1 >= 0.0f && c->beta1 < 1.0f && c->beta2 >= 0.0f && c->beta2 < 1.0f &&
               c->eps > 0.0f && isfinite(c->eps);
    return 0;
}

struct optim *optim_new(const struct optim_config *c, struct tensor *const *params, int nparams)
{
    if (!c || !valid(c) || !isa_supported(c->isa) || nparams < 0 || (nparams > 0 && !params))
        return NULL;
    long total = 0;
    for (int i = 0; i < nparams; i++) {
        if (!params[i] || !params[i]->grad)
            return NULL;
        total += params[i]->size;
    }
    int moments = c->kind == OPTIM_ADAM ? 2 : 1;
    struct optim *o = calloc(1, sizeof *o);
    if (!o)
        return NULL;
    o->c = *c;
    o->nparams = nparams;
    o->params = calloc((size_t)nparams + 1, sizeof *o->params);
    o->state1 = calloc((size_t)nparams + 1, sizeof *o->state1);
    o->state2 = calloc((size_t)nparams + 1, sizeof *o->state2);
    o->block = calloc((size_t)(total * moments) + 1, sizeof(float));
    o->total = total;
    if (!o->params || !o->state1 || !o->state2 || !o->block) {
        optim_free(o);
        return NULL;
    }
    float *next = o->block;
    for (int i = 0; i < nparams; i++) {
        o->params[i] = params[i];
        o->state1[i] = next;
        next += params[i]->size;
        if (moments == 2) {
            o->state2[i] = next;
            next += params[i]->size;
        }
    }
    return o;
}

void optim_free(struct optim *o)
{
    if (!o)
        return;
    free(o->params);
    free(o->state1);
    free(o->state2);
    free(o->block);
    free(o);
}

// How many threads share the update: 64 KiB of parameters each at least
// (less is not worth waking a thread for), and one when called from inside
// a parallel region (as gemm() does).
static int update_threads(const struct optim *o)
{
    int threads = 1;
#if defined(_OPENMP)
    threads = omp_in_parallel() ? 1 : o->threads > 0 ? o->threads : omp_get_max_threads();
#endif
    long most = o->total / 16384;
    return threads < most ? threads : most > 1 ? (int)most : 1;
}

// Floats lo … hi − 1 of the parameters laid end to end, each parameter's
// share with its own loop.
static void update_range(const struct optim *o, const struct optim_kernels *k,
                         const struct adam_step *s, long lo, long hi)
{
    const struct optim_config *c = &o->c;
    long base = 0;  // where parameter i starts
    for (int i = 0; i < o->nparams && base < hi; base += o->params[i++]->size) {
        struct tensor *p = o->params[i];
        long from = lo > base ? lo - base : 0;
        long to = hi - base < p->size ? hi - base : p->size;
        if (from >= to)
            continue;
        float *m = o->state1[i] + from;
        if (c->kind == OPTIM_SGD)
            k->sgd(to - from, p->data + from, p->grad + from, m, c->lr, c->momentum,
                   c->weight_decay);
        else
            k->adam(to - from, p->data + from, p->grad + from, m, o->state2[i] + from, s);
    }
}

// listing: optim_step
// One parallel region for every parameter: laid end to end, thread t of T
// updates the t-th of T equal runs, so the first thread takes the first
// rows of the first weight matrix. Where the GEMM that made dW split it by
// rows too (gemm_parallel.c), those are the rows its core wrote. Every
// element gets the same arithmetic wherever it falls, so the result does
// not depend on the thread count.
void optim_step(struct optim *o)
{
    const struct optim_kernels *k = optim_kernels(o->c.isa);
    const struct optim_config *c = &o->c;
    o->steps++;
    // The bias corrections in double (β2ᵗ for t in the thousands loses
    // nothing that way), once per step, then as floats for the loops.
    double t = (double)o->steps;
    struct adam_step s = {.lr = c->lr, .beta1 = c->beta1, .beta2 = c->beta2, .eps = c->eps,
                          .weight_decay = c->weight_decay,
                          .bias1 = (float)(1.0 - pow(c->beta1, t)),
                          .bias2 = (float)(1.0 - pow(c->beta2, t))};
    // A parameter no backward reached since its gradient was forgotten
    // has a zero gradient.
    for (int i = 0; i < o->nparams; i++)
        tensor_grad_settle(o->params[i]);
    int threads = update_threads(o);
#pragma omp parallel num_threads(threads) if (threads > 1)
    {
        int me = 0, all = 1;
#if defined(_OPENMP)
        me = omp_get_thread_num();
        all = omp_get_num_threads();
#endif
        // Ends on multiples of 16 floats: in a parameter that starts on a
        // 64-byte line, no line is written by two threads.
        long lo = o->total * me / all / 16 * 16;
        long hi = me + 1 == all ? o->total : o->total * (me + 1) / all / 16 * 16;
        update_range(o, k, &s, lo, hi);
    }
}
// end listing

void optim_set_threads(struct optim *o, int threads)
{
    o->threads = threads > 0 ? threads : 0;
}

void optim_set_lr(struct optim *o, float lr)
{
    o->c.lr = lr;
}

long optim_steps_taken(const struct optim *o)
{
    return o->steps;
}
