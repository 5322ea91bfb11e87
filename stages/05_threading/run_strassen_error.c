// The error half of the Strassen study (`make stage-05 strassen`): how far
// the five loops and Strassen's algorithm land from the exact product, on
// uniform data and on data of mixed magnitude, against the double-precision
// product that OpenBLAS's dgemm computes from the same numbers.
//
//   run_strassen_error [--sizes 256,512] [--threads N] [--csv FILE]
//
// (the flags of the benchmark drivers; the others are accepted and unused).
// One row per kernel, data set and size:
//   max_error    max |C − exact| over every element
//   normwise     max_error / (u·k·max|A|·max|B|), u = 2^-24: the error
//                against the size of the matrices
//   elementwise  max over elements of |C − exact| / the bound gemm() keeps
//                for that element (mat_error_bound: γ_{k+2}·Σ|a·b|); above 1
//                means outside gemm()'s bound
//   vs_bound     max_error / the kernel's own normwise bound
//                (gemm_strassen_error_bound, 0 levels for the five loops)
#define _POSIX_C_SOURCE 200809L
#include <cblas.h>
#include <float.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "gemm.h"
#include "machine.h"

static int threads;
static struct gemm_context context; // the default, made once --isa is read

static void five_loops(int n, const float *A, const float *B, float *C)
{
    gemm_parallel_threads(&context, threads, GEMM_NOTRANS, GEMM_NOTRANS, n, n, n, 1.0f, A, n, B, n,
                          0.0f, C, n);
}

static void strassen1(int n, const float *A, const float *B, float *C)
{
    gemm_strassen_threads(&context, threads, 1, GEMM_NOTRANS, GEMM_NOTRANS, n, n, n, 1.0f, A, n, B,
                          n, 0.0f, C, n);
}

static void strassen2(int n, const float *A, const float *B, float *C)
{
    gemm_strassen_threads(&context, threads, 2, GEMM_NOTRANS, GEMM_NOTRANS, n, n, n, 1.0f, A, n, B,
                          n, 0.0f, C, n);
}

static void strassen_plain(int n, const float *A, const float *B, float *C)
{
    gemm_strassen_plain_threads(&context, threads, 1, GEMM_NOTRANS, GEMM_NOTRANS, n, n, n, 1.0f, A,
                                n, B, n, 0.0f, C, n);
}

struct kernel {
    const char *name;
    int levels;
    void (*run)(int n, const float *A, const float *B, float *C);
};

static const struct kernel kernels[] = {
    {"gemm", 0, five_loops},
    {"strassen1", 1, strassen1},
    {"strassen2", 2, strassen2},
    {"strassen_plain", 1, strassen_plain},
};
enum { KERNELS = sizeof kernels / sizeof kernels[0] };

// Mixed magnitude: each row of A and each column of B scaled by its own
// power of two from 2^-12 to 2^12, as the rows of a batch and the columns of
// a weight matrix can differ. Powers of two change no rounding in the five
// loops, whose error follows each element; Strassen's sums mix rows and
// columns of different sizes.
static void scale_mixed(float *A, float *B, int n)
{
    unsigned seed = 53;
    for (int i = 0; i < n; i++) {
        float row = ldexpf(1.0f, rand_r(&seed) % 25 - 12);
        float col = ldexpf(1.0f, rand_r(&seed) % 25 - 12);
        for (int j = 0; j < n; j++) {
            A[(size_t)i * n + j] *= row;
            B[(size_t)j * n + i] *= col;
        }
    }
}

static double max_abs(const float *X, size_t count)
{
    double m = 0.0;
    for (size_t i = 0; i < count; i++)
        m = fmax(m, fabs(X[i]));
    return m;
}

// exact = A·B and size = |A|·|B| in double (the latter is Σ|a·b| for each
// element, what gemm()'s elementwise bound scales with).
static int reference(int n, const float *A, const float *B, double *exact, double *size)
{
    size_t count = (size_t)n * n;
    double *a = malloc(sizeof(double) * count), *b = malloc(sizeof(double) * count);
    if (a == NULL || b == NULL) {
        free(a);
        free(b);
        return -1;
    }
    for (size_t i = 0; i < count; i++) {
        a[i] = A[i];
        b[i] = B[i];
    }
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0, a, n, b, n, 0.0, exact,
                n);
    for (size_t i = 0; i < count; i++) {
        a[i] = fabs(a[i]);
        b[i] = fabs(b[i]);
    }
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0, a, n, b, n, 0.0, size, n);
    free(a);
    free(b);
    return 0;
}

static void measure(FILE *csv, const struct kernel *kern, const char *data, int n,
                    const float *A, const float *B, float *C, const double *exact,
                    const double *size)
{
    size_t count = (size_t)n * n;
    kern->run(n, A, B, C);
    double max_error = 0.0, elementwise = 0.0;
    for (size_t i = 0; i < count; i++) {
        double e = fabs(C[i] - exact[i]);
        max_error = fmax(max_error, e);
        elementwise = fmax(elementwise, e / mat_error_bound(n, size[i]));
    }
    double ab = max_abs(A, count) * max_abs(B, count);
    double u = 0.5 * FLT_EPSILON;
    double normwise = max_error / (u * n * ab);
    double vs_bound =
        max_error / gemm_strassen_error_bound(kern->levels, n, context.kernel.blocking.kc, ab, 0.0);
    fprintf(csv, "%s,%s,%d,%d,%d,%d,%.4g,%.4g,%.4g,%.4g\n", kern->name, data, threads, n, n, n,
            max_error, normwise, elementwise, vs_bound);
    fflush(csv);
    fprintf(stderr, "%-15s %-7s %6d  max error %.3g  normwise %.3g  elementwise %.3g  "
                    "of its bound %.3g\n",
            kern->name, data, n, max_error, normwise, elementwise, vs_bound);
}

// Whether --kernels (none: all) names kernel i.
static int wanted(const struct bench_options *o, int i)
{
    for (int j = 0; j < o->kernels.n; j++)
        if (o->kernels.v[j] == i)
            return 1;
    return o->kernels.n == 0;
}

int main(int argc, char **argv)
{
    // The benchmark's flag reader, with this study's kernels for --kernels.
    static const struct bench_kernel names[] = {
        {"gemm", ISA_SCALAR, 1, NULL},
        {"strassen1", ISA_SCALAR, 1, NULL},
        {"strassen2", ISA_SCALAR, 1, NULL},
        {"strassen_plain", ISA_SCALAR, 1, NULL},
    };
    struct bench_stage stage = {
        .name = "stage-05-strassen-error",
        .kernels = names,
        .nkernels = KERNELS,
        .sizes = "256,512,1024,2048,4096",
        .quick_sizes = "256,512",
    };
    struct bench_options o;
    int rc = bench_parse(&stage, argc, argv, &o);
    if (rc != 0)
        return rc == 1 ? 0 : rc;
    threads = o.threads;
    context = gemm_context_default();
    omp_set_num_threads(threads);
    FILE *csv = stdout;
    if (o.csv != NULL && strcmp(o.csv, "-") != 0 && (csv = fopen(o.csv, "w")) == NULL) {
        fprintf(stderr, "error: cannot write %s\n", o.csv);
        return 1;
    }
    machine_write(csv, stage.name, threads, context.kernel.isa, &o.env);
    fprintf(csv, "kernel,data,threads,m,n,k,max_error,normwise,elementwise,vs_bound\n");
    int status = 0;
    for (int s = 0; s < o.nshapes && status == 0; s++) {
        int n = o.shapes[s].m;
        if (o.shapes[s].n != n || o.shapes[s].k != n) {
            fprintf(stderr, "error: the error study takes square sizes (--sizes), not %dx%dx%d\n",
                    o.shapes[s].m, o.shapes[s].n, o.shapes[s].k);
            status = 2;
            break;
        }
        size_t count = (size_t)n * n;
        float *A = mat_alloc(n, n), *B = mat_alloc(n, n), *C = mat_alloc(n, n);
        double *exact = malloc(sizeof(double) * count), *size = malloc(sizeof(double) * count);
        if (!A || !B || !C || !exact || !size) {
            fprintf(stderr, "error: out of memory for n = %d\n", n);
            status = 1;
        }
        for (int mixed = 0; mixed < 2 && status == 0; mixed++) {
            mat_fill_random(A, n, n, n, 1);
            mat_fill_random(B, n, n, n, 2);
            if (mixed)
                scale_mixed(A, B, n);
            if (reference(n, A, B, exact, size) != 0) {
                fprintf(stderr, "error: out of memory for the reference at n = %d\n", n);
                status = 1;
                break;
            }
            for (int i = 0; i < KERNELS; i++)
                if (wanted(&o, i))
                    measure(csv, &kernels[i], mixed ? "mixed" : "uniform", n, A, B, C, exact,
                            size);
        }
        mat_free(A);
        mat_free(B);
        mat_free(C);
        free(exact);
        free(size);
    }
    if (csv != stdout)
        fclose(csv);
    return status;
}
