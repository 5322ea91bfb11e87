// The MLP of chapter 7 as one graph: forward, loss, gradients and the
// optimizer's update, compiled once and run once per batch.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "compiled_mlp.h"
#include "progress.h"
#include "timer.h"

static struct lazy_node *scalar_load(struct compiled_mlp *c, struct lazy_buffer *b,
                                     const char *name, float *data)
{
    lazy_buffer_init(b, name, data, 1, (int[]){1});
    return lazy_load(c->g, b);
}

// listing: cross_entropy
// The mean over the real rows of −log softmax(z)[label], from primitives:
// log-sum-exp with the row's max taken out (and detached: the max only keeps
// the exponentials in range, the loss does not depend on it), minus the
// label's logit, picked by a product with the one-hot row. The scheduler
// makes one kernel of the max, the sum and the pick, since all three reduce
// the same rows.
static struct lazy_node *cross_entropy(struct lazy_graph *g, struct lazy_node *z,
                                       struct lazy_node *onehot, struct lazy_node *mask,
                                       struct lazy_node *inv_rows)
{
    struct lazy_node *m = lazy_detach(g, lazy_max_reduce(g, z, 1));
    struct lazy_node *lse = lazy_add(g, lazy_log(g, lazy_sum(g, lazy_exp(g, lazy_sub(g, z, m)), 1)), m);
    struct lazy_node *picked = lazy_sum(g, lazy_mul(g, z, onehot), 1);
    struct lazy_node *rows = lazy_mul(g, lazy_sub(g, lse, picked), mask);
    return lazy_mul(g, lazy_sum(g, rows, 0), inv_rows);
}
// end listing

// listing: lazy_adam
// Adam as graph: PyTorch's formulas (common/nn/optim.h), one expression per
// new value. p, m and v are loads of the weight and its two moments; the
// program writes p', m' and v' back over them. lr, 1 − β1ᵗ and 1 − β2ᵗ
// change every step, so they are loads too (of one float each), not
// constants: a constant would be baked into the kernel, and a new value
// would mean a new kernel.
static void adam(struct compiled_mlp *c, struct lazy_node *p, struct lazy_node *grad,
                 struct lazy_node *m, struct lazy_node *v, struct lazy_node **out)
{
    struct lazy_graph *g = c->g;
    const struct optim_config *o = &c->opt;
    struct lazy_node *lr = lazy_load(g, &c->lr), *b1 = lazy_load(g, &c->bias1),
                     *b2 = lazy_load(g, &c->bias2);
    // With no weight decay this is grad + 0·p, which the rewrites fold to grad.
    struct lazy_node *gr = lazy_add(g, grad, lazy_mul_const(g, p, o->weight_decay));
    struct lazy_node *m2 = lazy_add(g, lazy_mul_const(g, m, o->beta1),
                                    lazy_mul_const(g, gr, 1.0f - o->beta1));
    struct lazy_node *v2 = lazy_add(g, lazy_mul_const(g, v, o->beta2),
                                    lazy_mul_const(g, lazy_mul(g, gr, gr), 1.0f - o->beta2));
    struct lazy_node *step = lazy_div(g, lazy_mul(g, lr, lazy_div(g, m2, b1)),
                                      lazy_add_const(g, lazy_sqrt(g, lazy_div(g, v2, b2)), o->eps));
    out[0] = lazy_sub(g, p, step);
    out[1] = m2;
    out[2] = v2;
}
// end listing

// SGD with momentum: v' = μ·v + g (+ wd·p), p' = p − lr·v'.
static void sgd(struct compiled_mlp *c, struct lazy_node *p, struct lazy_node *grad,
                struct lazy_node *v, struct lazy_node **out)
{
    struct lazy_graph *g = c->g;
    struct lazy_node *gr = lazy_add(g, grad, lazy_mul_const(g, p, c->opt.weight_decay));
    struct lazy_node *v2 = lazy_add(g, lazy_mul_const(g, v, c->opt.momentum), gr);
    out[0] = lazy_sub(g, p, lazy_mul(g, lazy_load(g, &c->lr), v2));
    out[1] = v2;
}

void compiled_mlp_free(struct compiled_mlp *c)
{
    lazy_program_free(c->train);
    lazy_program_free(c->eval);
    lazy_graph_free(c->g);
    free(c->x_data);
    free(c->y_data);
    free(c->mask_data);
    for (int i = 0; i < 2 * NN_MAX_PARAMS; i++)
        free(c->state_data[i]);
    memset(c, 0, sizeof *c);
}

// listing: compiled_mlp_init
int compiled_mlp_init(struct compiled_mlp *c, struct nn_model *m, int batch,
                      const struct optim_config *o, const struct lazy_options *lo, char *err,
                      size_t errlen)
{
    memset(c, 0, sizeof *c);
    c->model = m;
    // An MLP's parameters are w1, b1, w2, b2, ...: wₗ is in×out, bₗ has out.
    c->layers = m->nparams / 2;
    c->batch = batch;
    c->pixels = m->inputs;
    c->classes = m->params[m->nparams - 1]->shape[0];
    c->opt = *o;
    c->g = lazy_graph_new();
    c->x_data = calloc((size_t)batch * (size_t)c->pixels, sizeof(float));
    c->y_data = calloc((size_t)batch * (size_t)c->classes, sizeof(float));
    c->mask_data = calloc((size_t)batch, sizeof(float));
    if (!c->g || !c->x_data || !c->y_data || !c->mask_data) {
        snprintf(err, errlen, "out of memory for a compiled MLP of batch %d", batch);
        compiled_mlp_free(c);
        return -1;
    }
    struct lazy_graph *g = c->g;
    lazy_buffer_init(&c->x, "x", c->x_data, 2, (int[]){batch, c->pixels});
    lazy_buffer_init(&c->y, "onehot", c->y_data, 2, (int[]){batch, c->classes});
    lazy_buffer_init(&c->mask, "mask", c->mask_data, 2, (int[]){batch, 1});
    struct lazy_node *inv_rows = scalar_load(c, &c->inv_rows, "1/rows", &c->inv_rows_data);
    scalar_load(c, &c->lr, "lr", &c->lr_data);
    scalar_load(c, &c->bias1, "1-beta1^t", &c->bias1_data);
    scalar_load(c, &c->bias2, "1-beta2^t", &c->bias2_data);
    c->lr_data = o->lr;

    // listing: lazy_forward
    // The forward: Linear, ReLU, ..., Linear, as in common/nn/mlp.c.
    static const char *const names[2 * NN_MAX_LAYERS] = {
        "w1", "b1", "w2", "b2", "w3", "b3", "w4", "b4", "w5", "b5", "w6", "b6", "w7", "b7",
        "w8", "b8"};
    struct lazy_node *p[NN_MAX_PARAMS], *h = lazy_load(g, &c->x);
    for (int l = 0; l < c->layers; l++) {
        struct tensor *w = m->params[2 * l], *b = m->params[2 * l + 1];
        lazy_buffer_init(&c->param[2 * l], names[2 * l], w->data, 2, w->shape);
        lazy_buffer_init(&c->param[2 * l + 1], names[2 * l + 1], b->data, 2,
                         (int[]){1, b->shape[0]});
        p[2 * l] = lazy_load(g, &c->param[2 * l]);
        p[2 * l + 1] = lazy_load(g, &c->param[2 * l + 1]);
        h = lazy_add(g, lazy_matmul(g, h, p[2 * l]), p[2 * l + 1]);
        if (l + 1 < c->layers)
            h = lazy_relu(g, h);
        if (l == 0)
            c->layer1 = h;
    }
    c->logits = h;
    c->loss = cross_entropy(g, h, lazy_load(g, &c->y), lazy_load(g, &c->mask), inv_rows);
    // end listing lazy_forward

    // The backward, as more graph, and the optimizer's update of each weight.
    int np = 2 * c->layers, per = o->kind == OPTIM_ADAM ? 2 : 1;
    struct lazy_node *grads[NN_MAX_PARAMS];
    struct lazy_output outs[1 + 3 * NN_MAX_PARAMS];
    int n = 0;
    if (lazy_grad(g, c->loss, np, p, grads) != 0)
        goto graph_error;
    outs[n++] = (struct lazy_output){c->loss, NULL};
    for (int i = 0; i < np; i++) {
        struct lazy_node *s[2], *upd[3];
        for (int j = 0; j < per; j++) {
            struct lazy_buffer *sb = &c->state[per * i + j];
            c->state_data[per * i + j] = calloc((size_t)c->param[i].size, sizeof(float));
            if (!c->state_data[per * i + j]) {
                snprintf(err, errlen, "out of memory for the optimizer's state");
                compiled_mlp_free(c);
                return -1;
            }
            lazy_buffer_init(sb, j ? "adam v" : per == 2 ? "adam m" : "velocity",
                             c->state_data[per * i + j], c->param[i].ndim, c->param[i].shape);
            s[j] = lazy_load(g, sb);
        }
        if (per == 2)
            adam(c, p[i], grads[i], s[0], s[1], upd);
        else
            sgd(c, p[i], grads[i], s[0], upd);
        outs[n++] = (struct lazy_output){upd[0], &c->param[i]};
        for (int j = 0; j < per; j++)
            outs[n++] = (struct lazy_output){upd[1 + j], &c->state[per * i + j]};
    }
    if (lazy_error(g)[0])
        goto graph_error;
    c->train = lazy_program_new(g, n, outs, lo, err, errlen);
    struct lazy_output eval_outs[2] = {{c->logits, NULL}, {c->loss, NULL}};
    c->eval = c->train ? lazy_program_new(g, 2, eval_outs, lo, err, errlen) : NULL;
    if (!c->eval) {
        compiled_mlp_free(c);
        return -1;
    }
    return 0;
graph_error:
    snprintf(err, errlen, "building the step's graph: %s", lazy_error(g));
    compiled_mlp_free(c);
    return -1;
}
// end listing

void compiled_mlp_set_lr(struct compiled_mlp *c, float lr)
{
    c->lr_data = lr;
}

// The batch's labels, mask and 1/rows; rows b.. of x zeroed (they must be
// finite: their loss is multiplied by 0, and NaN·0 is NaN).
static int set_batch(struct compiled_mlp *c, const int *y, int b, char *err, size_t errlen)
{
    if (b < 1 || b > c->batch) {
        snprintf(err, errlen, "a batch of %d rows for a program of %d", b, c->batch);
        return -1;
    }
    memset(c->y_data, 0, sizeof(float) * (size_t)c->batch * (size_t)c->classes);
    for (int i = 0; i < c->batch; i++) {
        c->mask_data[i] = i < b ? 1.0f : 0.0f;
        if (i < b) {
            if (y[i] < 0 || y[i] >= c->classes) {
                snprintf(err, errlen, "label %d of row %d is outside 0..%d", y[i], i,
                         c->classes - 1);
                return -1;
            }
            c->y_data[(long)i * c->classes + y[i]] = 1.0f;
        }
    }
    if (b < c->batch)
        memset(c->x_data + (long)b * c->pixels, 0,
               sizeof(float) * (size_t)(c->batch - b) * (size_t)c->pixels);
    c->inv_rows_data = 1.0f / (float)b;
    return 0;
}

// listing: compiled_step
int compiled_mlp_step(struct compiled_mlp *c, const int *y, int b, float *loss, char *err,
                      size_t errlen)
{
    if (set_batch(c, y, b, err, errlen) != 0)
        return -1;
    // Adam's bias corrections for step t, as optim_step works them out.
    c->steps++;
    c->bias1_data = (float)(1.0 - pow(c->opt.beta1, (double)c->steps));
    c->bias2_data = (float)(1.0 - pow(c->opt.beta2, (double)c->steps));
    if (lazy_program_run(c->train, err, errlen) != 0)
        return -1;
    *loss = lazy_program_output(c->train, 0)[0];
    return 0;
}
// end listing

int compiled_mlp_eval(struct compiled_mlp *c, const int *y, int b, float *loss, int *right,
                      char *err, size_t errlen)
{
    if (set_batch(c, y, b, err, errlen) != 0 || lazy_program_run(c->eval, err, errlen) != 0)
        return -1;
    const float *z = lazy_program_output(c->eval, 0);
    *loss = lazy_program_output(c->eval, 1)[0];
    *right = 0;
    // The predicted class is the largest logit; the first one on a tie.
    for (int i = 0; i < b; i++) {
        const float *row = z + (long)i * c->classes;
        int best = 0;
        for (int j = 1; j < c->classes; j++)
            if (row[j] > row[best])
                best = j;
        *right += best == y[i];
    }
    return 0;
}

void compiled_mlp_dot(const struct compiled_mlp *c, FILE *f)
{
    lazy_write_dot(f, &c->layer1, 1);
}

void compiled_mlp_kernels(const struct compiled_mlp *c, const char *model, FILE *f)
{
    fprintf(f, "// The kernels common/lazy/ generates for %s, batch %d, %s: the training\n"
               "// step, then the evaluation. A \"// ----\" line names a kernel's file in the\n"
               "// cache, which depends on the compiler and the ISA; the rest does not.\n\n",
            model, c->batch, c->opt.kind == OPTIM_ADAM ? "Adam" : "SGD");
    lazy_program_dump(c->train, "step", f);
    lazy_program_dump(c->eval, "eval", f);
}

int compiled_mlp_epoch(struct compiled_mlp *c, const struct dataset_split *s, int *order,
                       uint64_t seed, int epoch, int progress, double *seconds,
                       double *train_loss, char *err, size_t errlen)
{
    if (s->pixels != c->pixels) {
        snprintf(err, errlen, "images of %d pixels for a model of %d", s->pixels, c->pixels);
        return -1;
    }
    struct progress bar;
    int *labels = malloc(sizeof *labels * (size_t)c->batch);
    if (!labels) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    progress_begin(&bar, progress ? stdout : NULL, s->count);
    double start = timer_now(), total = 0.0;
    dataset_shuffle(order, s->count, seed + (uint64_t)epoch);
    int status = 0;
    for (int at = 0; at < s->count && status == 0; at += c->batch) {
        int b = dataset_batch(s, order, at, c->batch, c->x_data, labels);
        float loss;
        status = compiled_mlp_step(c, labels, b, &loss, err, errlen);
        total += (double)loss * b;
        progress_update(&bar, at + b, loss);
    }
    progress_end(&bar);
    free(labels);
    *seconds = timer_now() - start;
    *train_loss = s->count > 0 ? total / s->count : 0.0;
    return status;
}

int compiled_mlp_evaluate(struct compiled_mlp *c, const struct dataset_split *s, double *loss,
                          double *acc, char *err, size_t errlen)
{
    int *labels = malloc(sizeof *labels * (size_t)c->batch), status = 0;
    long right = 0;
    double total = 0.0;
    if (!labels) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (int at = 0; at < s->count && status == 0; at += c->batch) {
        int b = dataset_batch(s, NULL, at, c->batch, c->x_data, labels), r = 0;
        float l;
        status = compiled_mlp_eval(c, labels, b, &l, &r, err, errlen);
        total += (double)l * b;
        right += r;
    }
    free(labels);
    *loss = s->count > 0 ? total / s->count : 0.0;
    *acc = s->count > 0 ? (double)right / s->count : 0.0;
    return status;
}
