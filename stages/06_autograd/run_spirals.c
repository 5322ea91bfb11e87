// Fits a small network to two interleaved spirals, from scratch: the first
// thing the autograd learns. Two inputs (x, y), two hidden layers of tanh,
// two classes; plain gradient descent with momentum on the whole set.
//   run_spirals [--gemm NAME] [--memory arena|planned] [--seed N] [--steps N] [--hidden N] [--lr X]
//               [--csv FILE] [--boundary FILE] [--dot FILE]
// --csv writes the loss and accuracy as it learns, --boundary the network's
// answer over the plane at four moments, --dot the tape of one step.
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu.h"
#include "env.h"
#include "flags.h"
#include "machine.h"
#include "gemm_backend.h"
#include "gemm_flags.h"
#include "ops.h"
#include "tape.h"
#include "tape_flags.h"

enum { POINTS = 200, CLASSES = 2, MAX_HIDDEN = 1024, GRID = 49 };
static const double GRID_EDGE = 1.25;  // the grid covers [-1.25, 1.25]²

// splitmix64: a small generator, the same numbers on every machine.
static uint64_t next(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

// Uniform in [-1, 1).
static float uniform(uint64_t *s)
{
    return (float)((next(s) >> 40) * (2.0 / 16777216.0) - 1.0);
}

// Class c's spiral winds 1.5 turns out from the centre, half a turn away
// from the other's; a little noise keeps the task honest.
static void make_spirals(float *xy, int *labels, uint64_t *seed)
{
    const double pi = 3.14159265358979323846;
    for (int i = 0; i < POINTS; i++) {
        int c = i % CLASSES;
        double t = (double)(i / CLASSES) / (POINTS / CLASSES);
        double r = 0.1 + 0.9 * t, angle = 3.0 * pi * t + c * pi;
        xy[2 * i] = (float)(r * cos(angle)) + 0.02f * uniform(seed);
        xy[2 * i + 1] = (float)(r * sin(angle)) + 0.02f * uniform(seed);
        labels[i] = c;
    }
}

struct layer {
    struct tensor *w, *b, *vw, *vb;  // weights, bias, and their momentum
};

// Weights uniform in ±√(6/(in+out)) (Glorot), so tanh starts in its
// linear range; biases zero.
static int layer_init(struct layer *l, int in, int out, uint64_t *seed)
{
    l->w = tensor_param(2, (int[]){in, out});
    l->b = tensor_param(1, (int[]){out});
    l->vw = tensor_param(2, (int[]){in, out});
    l->vb = tensor_param(1, (int[]){out});
    if (!l->w || !l->b || !l->vw || !l->vb)
        return -1;
    float a = sqrtf(6.0f / (float)(in + out));
    for (long i = 0; i < l->w->size; i++)
        l->w->data[i] = a * uniform(seed);
    return 0;
}

static void layer_free(struct layer *l)
{
    tensor_free(l->w);
    tensor_free(l->b);
    tensor_free(l->vw);
    tensor_free(l->vb);
}

// v = μ·v − lr·g; p += v. (Chapter 7 has the optimizers; this is the simplest.)
static void descend(struct tensor *p, struct tensor *v, float lr)
{
    for (long i = 0; i < p->size; i++) {
        v->data[i] = 0.9f * v->data[i] - lr * p->grad[i];
        p->data[i] += v->data[i];
    }
}

// listing: spirals_forward
static struct tensor *forward(struct tape *t, struct layer *l, struct tensor *x)
{
    struct tensor *h = op_tanh(t, op_bias_add(t, op_matmul(t, x, l[0].w), l[0].b));
    h = op_tanh(t, op_bias_add(t, op_matmul(t, h, l[1].w), l[1].b));
    return op_bias_add(t, op_matmul(t, h, l[2].w), l[2].b);
}
// end listing

// Opens a results file ("-": stdout) and writes its `#` lines and header.
static FILE *open_out(const char *path, const char *header, const struct environment *env)
{
    FILE *f = results_open(path, "stage-06", cpu_count(), tape_config_default().isa, env, 0, NULL);
    if (f)
        fprintf(f, "%s\n", header);
    return f;
}

// The network's probability of class 1 at every point of a GRID×GRID grid,
// with recording off: the forward alone. One row per grid point.
static int write_boundary(FILE *f, struct tape *t, struct layer *l, long step)
{
    static float grid[GRID * GRID * 2];
    for (int i = 0; i < GRID; i++)
        for (int j = 0; j < GRID; j++) {
            grid[2 * (i * GRID + j)] = (float)(-GRID_EDGE + 2.0 * GRID_EDGE * j / (GRID - 1));
            grid[2 * (i * GRID + j) + 1] = (float)(-GRID_EDGE + 2.0 * GRID_EDGE * i / (GRID - 1));
        }
    tape_clear(t);
    int was = tape_set_recording(t, 0);
    struct tensor *logits =
        forward(t, l, tensor_from(t, 2, (int[]){GRID * GRID, 2}, grid, GRID * GRID * 2));
    if (logits)
        for (int i = 0; i < GRID * GRID; i++) {
            double d = (double)logits->data[2 * i + 1] - logits->data[2 * i];
            fprintf(f, "grid,%ld,%.4f,%.4f,%.4f\n", step, grid[2 * i], grid[2 * i + 1],
                    1.0 / (1.0 + exp(-d)));
        }
    tape_clear(t);
    tape_set_recording(t, was);
    if (!logits) {
        fprintf(stderr, "error: %s\n", tape_error(t));
        return -1;
    }
    return 0;
}

static double accuracy(const struct tensor *logits, const int *labels)
{
    int right = 0;
    for (int i = 0; i < POINTS; i++)
        right += (logits->data[2 * i + 1] > logits->data[2 * i]) == labels[i];
    return (double)right / POINTS;
}

int main(int argc, char **argv)
{
    const struct environment env = env_read();
    // When gemm() may use Strassen: the rule `make stage-05 strassen` measured.
    gemm_strassen_use_file(env.strassen_rule);
    int gemm = 0, memory = tape_config_default().memory;
    long seed = 6, steps = 2000;
    int hidden = 32;
    double lr = 0.1;
    enum isa isa = ISA_COUNT;
    struct flags f = {.about = "Fits a 2-H-H-2 tanh network to two interleaved spirals with "
                               "gradient descent."};
    flags_add(&f, gemm_backend_flag(&gemm));
    flags_add(&f, tape_memory_flag(&memory));
    flags_add(&f, flag_isa(&isa));
    flags_add(&f, flag_long("--seed", "N", &seed, 0, 1e12, "data and initial weights"));
    flags_add(&f, flag_long("--steps", "N", &steps, 1, 1000000, "gradient steps"));
    flags_add(&f, flag_int("--hidden", "N", &hidden, 1, MAX_HIDDEN, "units in each hidden layer"));
    flags_add(&f, flag_double("--lr", "X", &lr, 1e-12, 99.999, "learning rate"));
    const char *csv = NULL, *boundary = NULL, *dot = NULL;
    struct flag fl = flag_csv(&csv);
    fl.help = "the loss and accuracy every 1/100 of the steps (- is stdout)";
    flags_add(&f, fl);
    flags_add(&f, flag_output("--boundary", "FILE", &boundary,
                              "the points, and the probability of class 1 over a grid of the "
                              "plane after the first step, 1/4, 1/2 and all of the steps"));
    flags_add(&f, flag_output("--dot", "FILE", &dot,
                              "the tape of the first step, as a Graphviz graph (dot -Tsvg "
                              "draws it)"));
    int rc = flags_parse(&f, argc, argv);
    if (rc != 0)
        return rc == 1 ? 0 : rc;
    int count;
    const struct gemm_backend *backend = &gemm_backend_all(&count)[gemm];
    struct tape_config config = tape_config_default();
    config.gemm = backend;
    config.memory = (enum memory_mode)memory;

    uint64_t rng = (uint64_t)seed;
    static float xy[POINTS * 2];
    static int labels[POINTS];
    make_spirals(xy, labels, &rng);
    struct layer l[3];
    const int sizes[4] = {2, hidden, hidden, CLASSES};
    struct tape *t = tape_new(&config);
    for (int i = 0; i < 3; i++)
        if (!t || layer_init(&l[i], sizes[i], sizes[i + 1], &rng) != 0) {
            fprintf(stderr, "error: out of memory\n");
            return 1;
        }
    printf("two spirals: %d points, network 2-%d-%d-2 (tanh), gemm %s, seed %ld\n",
           POINTS, hidden, hidden, backend->name, seed);
    FILE *curve = NULL, *plane = NULL;
    if (csv && !(curve = open_out(csv, "step,loss,accuracy", &env)))
        return 1;
    if (boundary && !(plane = open_out(boundary, "kind,step,x,y,value", &env)))
        return 1;
    if (plane)
        for (int i = 0; i < POINTS; i++)
            fprintf(plane, "point,0,%.4f,%.4f,%d\n", xy[2 * i], xy[2 * i + 1], labels[i]);
    printf("%6s %10s %9s\n", "step", "loss", "accuracy");
    int status = 0;
    for (long step = 1; step <= steps; step++) {
        // listing: spirals_step
        tape_clear(t);
        struct tensor *x = tensor_from(t, 2, (int[]){POINTS, 2}, xy, POINTS * 2);
        struct tensor *logits = forward(t, l, x);
        tape_keep(t, logits);  // the accuracy reads them after the backward
        struct tensor *loss = op_cross_entropy(t, logits, labels, POINTS);
        for (int i = 0; i < 3; i++) {
            tensor_zero_grad(l[i].w);
            tensor_zero_grad(l[i].b);
        }
        if (tape_backward(t, loss) != 0) {
            fprintf(stderr, "error: step %ld: %s\n", step, tape_error(t));
            status = 1;
            break;
        }
        for (int i = 0; i < 3; i++) {
            descend(l[i].w, l[i].vw, (float)lr);
            descend(l[i].b, l[i].vb, (float)lr);
        }
        // end listing
        if (step == 1 || step % (steps / 10 > 0 ? steps / 10 : 1) == 0 || step == steps)
            printf("%6ld %10.5f %8.1f%%\n", step, loss->data[0], 100.0 * accuracy(logits, labels));
        if (curve && (step == 1 || step % (steps / 100 > 0 ? steps / 100 : 1) == 0))
            fprintf(curve, "%ld,%.6f,%.4f\n", step, loss->data[0], accuracy(logits, labels));
        if (dot && step == 1) {
            // The machine lines first, as in every results file: Graphviz
            // skips lines that start with `#`.
            FILE *g = results_open(dot, "stage-06", cpu_count(), tape_config_default().isa, &env,
                                   0, NULL);
            if (!g || tape_write_dot(t, g) != 0 || results_close(g, dot, 0) != 0) {
                if (g)
                    fprintf(stderr, "error: cannot write %s\n", dot);
                status = 1;
                break;
            }
        }
        if (plane && (step == 1 || step == steps / 4 || step == steps / 2 || step == steps) &&
            write_boundary(plane, t, l, step) != 0) {
            status = 1;
            break;
        }
    }
    if (status == 0) {
        // Evaluation: no tape, no gradients.
        tape_clear(t);
        tape_set_recording(t, 0);
        struct tensor *logits =
            forward(t, l, tensor_from(t, 2, (int[]){POINTS, 2}, xy, POINTS * 2));
        if (!logits) {
            fprintf(stderr, "error: %s\n", tape_error(t));
            status = 1;
        } else {
            printf("final accuracy: %.1f%% of %d points\n", 100.0 * accuracy(logits, labels),
                   POINTS);
            printf("memory (%s): %zu bytes reserved, %zu live at the worst moment of a step\n",
                   tape_memory_name(config.memory), tape_reserved_bytes(t), tape_live_bytes(t));
        }
    }
    if (curve && results_close(curve, csv, 0) != 0)
        status = 1;
    if (plane && results_close(plane, boundary, 0) != 0)
        status = 1;
    for (int i = 0; i < 3; i++)
        layer_free(&l[i]);
    tape_free(t);
    return status;
}
