#ifndef OPTIM_H
#define OPTIM_H

#include "cpu.h"
#include "tensor.h"

// The optimizers, with PyTorch's definitions so golden values compare:
//   SGD:  g = grad + wd·p;  v = μ·v + g;  p −= lr·v
//   Adam: g = grad + wd·p;  m = β1·m + (1−β1)·g;  v = β2·v + (1−β2)·g²;
//         p −= lr·(m/(1−β1ᵗ)) / (√(v/(1−β2ᵗ)) + ε)
// (wd is weight decay as an L2 term in the gradient, as torch.optim.Adam;
// AdamW's decoupled form is an exercise of chapter 7.)
enum optim_kind { OPTIM_SGD, OPTIM_ADAM };

struct optim_config {
    enum optim_kind kind;
    float lr;
    float momentum;        // SGD
    float beta1, beta2;    // Adam
    float eps;             // Adam
    float weight_decay;
    enum isa isa; // the update loops' instruction set
};

// PyTorch's defaults: SGD momentum 0.9; Adam β 0.9, 0.999, ε 1e-8. lr and
// weight decay as given; the loops of the default context's ISA
// (tape_config_default: a program that trains on a tape of another ISA
// sets isa to the tape's).
struct optim_config optim_defaults(enum optim_kind kind, float lr, float weight_decay);
// "sgd" or "adam"; 0 and *out set, or -1.
int optim_parse(const char *name, enum optim_kind *out);
const char *optim_name(enum optim_kind kind);
// The names in enum order, then NULL (for a flag's choices).
const char *const *optim_names(void);

// The per-step constants of one Adam update, worked out once per step.
struct adam_step {
    float lr, beta1, beta2, eps, weight_decay;
    float bias1, bias2;    // 1 − β1ᵗ and 1 − β2ᵗ for this step t
};

// The update loops over n floats of one parameter. Scalar versions are the
// reference; the vector ones do the same operations in the same order per
// element (no FMA), so every path gives the same bits.
struct optim_kernels {
    enum isa isa;
    void (*sgd)(long n, float *p, const float *g, float *v, float lr, float momentum, float wd);
    void (*adam)(long n, float *p, const float *g, float *m, float *v, const struct adam_step *s);
};
// The loops of isa, which must be one this CPU runs (isa_supported);
// optim_step uses its config's.
const struct optim_kernels *optim_kernels(enum isa isa);

void sgd_update_scalar(long n, float *p, const float *g, float *v, float lr, float momentum,
                       float wd);
void adam_update_scalar(long n, float *p, const float *g, float *m, float *v,
                        const struct adam_step *s);
void sgd_update_avx2(long n, float *p, const float *g, float *v, float lr, float momentum,
                     float wd);
void adam_update_avx2(long n, float *p, const float *g, float *m, float *v,
                      const struct adam_step *s);
void sgd_update_avx512(long n, float *p, const float *g, float *v, float lr, float momentum,
                       float wd);
void adam_update_avx512(long n, float *p, const float *g, float *m, float *v,
                        const struct adam_step *s);
void sgd_update_neon(long n, float *p, const float *g, float *v, float lr, float momentum,
                     float wd);
void adam_update_neon(long n, float *p, const float *g, float *m, float *v,
                      const struct adam_step *s);

// An optimizer over a fixed list of parameters: their state (velocity, or
// the two moments) is allocated here, once, zeroed.
struct optim;
// NULL when out of memory or the config is invalid (lr not > 0, ...).
struct optim *optim_new(const struct optim_config *c, struct tensor *const *params, int nparams);
void optim_free(struct optim *o);
// One update of every parameter from its grad (after tape_backward), shared
// among OpenMP's threads in fixed pieces: the same bits on any thread count.
void optim_step(struct optim *o);
// The threads optim_step uses (0, the default: OpenMP's count, as the GEMM).
// 1 runs the update on the calling thread alone, as a benchmark compares.
void optim_set_threads(struct optim *o, int threads);
// The learning rate of the steps after it (a schedule's next value; > 0).
void optim_set_lr(struct optim *o, float lr);
long optim_steps_taken(const struct optim *o);

#endif
