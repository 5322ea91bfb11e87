// The training loop stages 07 and 08 share: a step (forward, loss, backward,
// update), an epoch over a shuffled split, and evaluation without a tape.
// Every buffer is allocated once in trainer_init; the tape keeps what the
// first step reserved (its arena, or its plan and block), so a step after
// the first calls no malloc.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "ops.h"
#include "progress.h"
#include "timer.h"
#include "train.h"

// listing: train_step
int train_step(struct tape *t, struct nn_model *m, struct optim *o, const float *x,
               const int *y, int b, float *loss)
{
    // BEGIN SOLUTION task 7.3: clear the tape; x as a b×inputs tensor; forward; cross-entropy; zero (or forget) the grads; backward; optimizer step
    tape_clear(t);
    struct tensor *in = tensor_from(t, 2, (int[]){b, m->inputs}, x, (long)b * m->inputs);
    struct tensor *l = op_cross_entropy(t, m->forward(m, t, in), y, b);
    if (!l)
        return -1;
    nn_forget_grad(m);  // the backward writes them: no zeroing pass
    if (tape_backward(t, l) != 0)
        return -1;
    optim_step(o);
    *loss = l->data[0];
    return 0;
    // stub: (void)m; (void)o; (void)x; (void)y; (void)b; (void)loss;
    // stub: tape_fail(t, "train_step is not written yet (task 7.3)");
    // stub: return -1;
    // END SOLUTION
}
// end listing

int train_pass_threads(const struct gemm_backend *gemm)
{
    return gemm && !gemm->openmp ? 1 : 0;
}

int trainer_init(struct trainer *tr, const struct tape_config *config, int batch, int pixels,
                 int ntrain, char *err, size_t errlen)
{
    memset(tr, 0, sizeof *tr);
    if (batch < 1 || batch > 65536 || pixels < 1 || ntrain < 0) {
        snprintf(err, errlen, "batch %d, %d pixels, %d images: out of range", batch, pixels,
                 ntrain);
        return -1;
    }
    tr->batch = batch;
    tr->pixels = pixels;
    tr->norder = ntrain;
    tr->tape = tape_new(config);
    if (tr->tape)
        tr->batch_threads = train_pass_threads(tape_config(tr->tape)->gemm);
    tr->x = malloc((size_t)batch * (size_t)pixels * sizeof *tr->x);
    tr->y = malloc((size_t)batch * sizeof *tr->y);
    tr->order = malloc((size_t)(ntrain > 0 ? ntrain : 1) * sizeof *tr->order);
    if (!tr->tape || !tr->x || !tr->y || !tr->order) {
        trainer_free(tr);
        snprintf(err, errlen, "out of memory for a trainer of batch %d", batch);
        return -1;
    }
    return 0;
}

void trainer_free(struct trainer *tr)
{
    if (tr->tape)
        tape_free(tr->tape);
    free(tr->x);
    free(tr->y);
    free(tr->order);
    memset(tr, 0, sizeof *tr);
}

static int check_split(const struct trainer *tr, const struct nn_model *m,
                       const struct dataset_split *s, char *err, size_t errlen)
{
    if (s->pixels != tr->pixels || m->inputs != tr->pixels) {
        snprintf(err, errlen, "images of %d pixels, but the trainer takes %d and the model %d",
                 s->pixels, tr->pixels, m->inputs);
        return -1;
    }
    return 0;
}

// listing: train_epoch
int train_epoch(struct trainer *tr, struct nn_model *m, struct optim *o,
                const struct dataset_split *s, uint64_t seed, int epoch, struct epoch_stats *st,
                char *err, size_t errlen)
{
    if (check_split(tr, m, s, err, errlen) != 0)
        return -1;
    if (s->count > tr->norder) {
        snprintf(err, errlen, "a split of %d images, but the trainer was made for %d", s->count,
                 tr->norder);
        return -1;
    }
    struct progress bar;
    progress_begin(&bar, tr->progress ? stdout : NULL, s->count);
    double start = timer_now();
    // Each epoch its own order, from seed + epoch: rerunning epoch 7 alone
    // sees the same batches as it did in a run of 10.
    dataset_shuffle(tr->order, s->count, seed + (uint64_t)epoch);
    double total = 0.0;
    // The last batch may be smaller: every image is seen once per epoch.
    for (int at = 0; at < s->count; at += tr->batch) {
        int b = dataset_batch_threads(s, tr->order, at, tr->batch, tr->x, tr->y,
                                      tr->batch_threads);
        float loss;
        if (train_step(tr->tape, m, o, tr->x, tr->y, b, &loss) != 0) {
            progress_end(&bar);
            snprintf(err, errlen, "epoch %d, images %d..%d: %s", epoch, at, at + b - 1,
                     tape_error(tr->tape));
            return -1;
        }
        // With the arena, one block of a step's size from now on, so that
        // the last batch and the evaluations do not grow it (tape_fit).
        if (tape_fit(tr->tape) != 0) {
            progress_end(&bar);
            snprintf(err, errlen, "epoch %d: out of memory for the tape's arena", epoch);
            return -1;
        }
        total += (double)loss * b;  // the mean over images, not over batches
        progress_update(&bar, at + b, loss);
    }
    progress_end(&bar);
    st->epoch = epoch;
    st->seconds = timer_now() - start;
    st->images_per_s = st->seconds > 0 ? s->count / st->seconds : 0.0;
    st->train_loss = s->count > 0 ? total / s->count : 0.0;
    return 0;
}
// end listing

// listing: evaluate
int evaluate(struct trainer *tr, struct nn_model *m, const struct dataset_split *s,
             double *loss, double *acc, char *err, size_t errlen)
{
    if (check_split(tr, m, s, err, errlen) != 0)
        return -1;
    // No nodes, no gradients: the forward alone, as at inference.
    int was = tape_set_recording(tr->tape, 0);
    double total = 0.0;
    long right = 0;
    int status = 0;
    for (int at = 0; at < s->count; at += tr->batch) {
        int b = dataset_batch(s, NULL, at, tr->batch, tr->x, tr->y);
        tape_clear(tr->tape);
        struct tensor *in =
            tensor_from(tr->tape, 2, (int[]){b, tr->pixels}, tr->x, (long)b * tr->pixels);
        struct tensor *logits = m->forward(m, tr->tape, in);
        tape_keep(tr->tape, logits);  // read below, after the loss has used them
        struct tensor *l = op_cross_entropy(tr->tape, logits, tr->y, b);
        if (!l) {
            snprintf(err, errlen, "evaluating images %d..%d: %s", at, at + b - 1,
                     tape_error(tr->tape));
            status = -1;
            break;
        }
        total += (double)l->data[0] * b;
        int c = logits->shape[1];
        // The predicted class is the largest logit; the first one on a tie.
        for (int i = 0; i < b; i++) {
            const float *row = logits->data + (long)i * c;
            int best = 0;
            for (int j = 1; j < c; j++)
                if (row[j] > row[best])
                    best = j;
            right += best == tr->y[i];
        }
    }
    tape_clear(tr->tape);
    tape_set_recording(tr->tape, was);
    if (status == 0) {
        *loss = s->count > 0 ? total / s->count : 0.0;
        *acc = s->count > 0 ? (double)right / s->count : 0.0;
    }
    return status;
}
// end listing

double peak_rss_mb(void)
{
    struct rusage u;
    if (getrusage(RUSAGE_SELF, &u) != 0)
        return 0.0;
    return (double)u.ru_maxrss / 1024.0;  // Linux reports kilobytes
}
