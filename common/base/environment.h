#ifndef ENVIRONMENT_H
#define ENVIRONMENT_H

// What the environment tells a program. Only the edge reads it (cli/env.c's
// env_read, at the top of a program's main) and hands the values down, so a
// library's behaviour shows in its arguments. Each is NULL when the variable
// is unset or empty.
struct environment {
    const char *openblas_coretype;  // OPENBLAS_CORETYPE: the kernel set OpenBLAS is held to
    const char *openblas_l2_size;   // OPENBLAS_L2_SIZE: the L2 size OpenBLAS blocks for
    const char *peak_cache;         // PEAK_CACHE: the file the measured peaks are kept in
    const char *data_dir;           // DATA_DIR: where mnist/ and fashion/ are
                                    // (else the checkout's build/datasets)
    const char *cc;                 // CC: the compiler of chapter 9's generated kernels
    const char *lazy_cache;         // LAZY_CACHE: their cache (else build/lazy-cache)
    const char *term;               // TERM: "dumb" is a terminal that draws no progress bar
    const char *strassen_rule;      // GEMM_STRASSEN_RULE: where gemm() may use Strassen's
                                    // algorithm (the file `make stage-05 strassen` wrote)
    const char *run_id;             // RUN_ID: the `make reference` run this measurement is part of
    const char *run_commit;         // RUN_COMMIT: the commit of the code measured (the Makefiles
                                    // set it from git; "+dirty" when the tree had changes)
};

#endif
