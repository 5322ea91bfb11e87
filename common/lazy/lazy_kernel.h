#ifndef LAZY_KERNEL_H
#define LAZY_KERNEL_H

// What the scheduler, the code generator and the program share inside
// common/lazy/: a kernel, and the schedule that lists them. Not for use
// outside this folder (lazy.h is the interface).

#include "lazy.h"

enum lazy_kernel_kind { KERNEL_ELEMENTWISE, KERNEL_REDUCE, KERNEL_MATMUL };

// The signature of every generated kernel: its buffers in the order of
// lazy_kernel's args, and a GEMM (C = op(A)·op(B), alpha 1, beta 0; returns
// 0, or -1 out of memory). Returns 0, or -1 when the GEMM failed.
typedef int lazy_gemm_fn(int ta, int tb, int m, int n, int k, const float *A, int lda,
                         const float *B, int ldb, float *C, int ldc);
typedef int lazy_kernel_fn(float *const *args, lazy_gemm_fn *gemm);

// listing: lazy_kernel
struct lazy_kernel {
    enum lazy_kernel_kind kind;
    int index;                      // its place in the schedule, in run order
    int created;                    // the order the scheduler made it in
    char name[64];                  // "k03_rmax_sum_exp": what the file is called
    // The loops: an elementwise kernel runs over shape; a reduce kernel over
    // shape too, reducing `axis` to 1 (shape with axis 1 is its "outer"
    // shape); a matmul kernel over the m×n of its product.
    int ndim, shape[LAZY_MAX_DIMS], axis;
    struct lazy_node *matmul;       // a matmul kernel's product
    struct lazy_node **members;     // the nodes it computes, in topological order
    int nmembers;
    struct lazy_node **args;        // its buffers: the bases it reads, then the
    int nargs, ninputs;             //   members it stores (args[ninputs..])
    long *arg_elems;                // elements of each input it reads
    unsigned char *arg_view;        // 1: an input read through a view
    long panel_rows;                // matmul: rows of C per GEMM call and epilogue
    int parallel;                   // 1: its loops are shared among the OpenMP threads
    long bytes_read, bytes_written; // per run
    long bytes_unfused;             // its nodes, one kernel each
    // From the code generator and the compiler:
    char *source;
    char path[4096];                // the source file in the cache
    void *handle;
    lazy_kernel_fn *fn;
    int cached;                     // 1: found compiled in the cache
    double seconds;                 // time spent running it (when profiled)
};
// end listing

struct lazy_schedule {
    struct lazy_kernel *kernels;
    int nkernels;
    int nslots;                     // node ids 0..nslots-1 index the arrays below
    int *group;                     // node id → its kernel's index, −1: none
    unsigned char *stored;          // node id → 1 when a kernel writes it to memory
    const struct lazy_output *outputs;
    int noutputs;
    long bytes_unfused, bytes_floor;
};

// Groups the nodes under the outputs (rewritten) into kernels, in an order
// that runs: every value a kernel reads is written by an earlier one, and a
// buffer written in place is written after its last reader. Returns 0, or
// -1 with err.
int lazy_schedule_make(struct lazy_schedule *s, int n, const struct lazy_output *outputs,
                       const struct lazy_options *o, char *err, size_t errlen);
void lazy_schedule_free(struct lazy_schedule *s);

// How kernel k reaches a node it does not compute: 'm' a member, 'l' a load
// from memory (a buffer, or a value an earlier kernel stored), 'i' computed
// inline here from its inputs, 'c' a constant, 'v' a view (of a load, or a
// member broadcast along the reduced axis).
int lazy_access(const struct lazy_schedule *s, const struct lazy_kernel *k,
                const struct lazy_node *n);

// 1 when gemm() can read the 2-D node n in place: a buffer, or a view of one
// whose rows or columns are contiguous. *trans is then GEMM_TRANS or not, *ld
// the leading dimension and *offset the first element's.
int lazy_gemm_operand(const struct lazy_node *n, int *trans, long *ld, long *offset);

// Writes kernel k's C source into k->source (malloc'd). Returns 0, or -1.
int lazy_codegen(const struct lazy_schedule *s, struct lazy_kernel *k);

// Finds k's source compiled in the cache, else compiles it; loads it. The
// compiler, the cache, verbose and the ISA of the context (which must be
// given: lazy_program_new fills it in) are o's. Returns 0, or -1 with err naming
// the source file.
int lazy_compile(struct lazy_kernel *k, const struct lazy_options *o, char *err, size_t errlen);
void lazy_unload(struct lazy_kernel *k);
// Compiles the kernels not in the cache, several at once. Returns 0, or -1
// with err (the first failure).
int lazy_compile_all(struct lazy_kernel *ks, int n, const struct lazy_options *o, char *err,
                     size_t errlen);

#endif
