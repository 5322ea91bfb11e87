#ifndef FLAGS_H
#define FLAGS_H

#include <stdio.h>

#include "cpu.h"

// The command line of every program of the book, read one way. A program
// lists its flags in a table (struct flags); flags_parse reads argv against
// it and checks every value before any work starts: numbers in their range,
// names it knows, an ISA this CPU runs, a file it will write in a directory
// that exists. The usage text is made from the same table, so it cannot
// drift from what the program accepts.
//
// The flags several programs share are made by functions, so that each has
// one spelling and one line of help everywhere: flag_isa, flag_threads ...
// below; gemm_backend_flag (gemm_flags.h), conv_path_flag (conv_flags.h) and
// tape_memory_flag (tape_flags.h) for --gemm, --conv and --memory;
// train_flags_add (train_flags.h) for the training drivers'. This file
// knows nothing of what the names mean: a choice is an index into its list
// of names.

enum flag_type {
    FLAG_SWITCH,   // no value: *(int *)to = 1
    FLAG_INT,      // a whole number in [lo, hi]: int *
    FLAG_LONG,     // a whole number in [lo, hi]: long *
    FLAG_DOUBLE,   // a number in [lo, hi]: double *
    FLAG_TEXT,     // a non-empty word: const char **
    FLAG_OUTPUT,   // a file to write, "-" for standard output: const char **.
                   // Its directory must exist and be writable.
    FLAG_INPUT,    // a file to read: const char **. It must be readable.
    FLAG_CHOICE,   // one of choices: int * (its index)
    FLAG_CHOICES,  // some of choices, comma-separated: struct flag_list *
    FLAG_COUNTS,   // whole numbers in [lo, hi], comma-separated: struct flag_list *
    FLAG_ISA,      // scalar, avx2, avx512 or neon: enum isa *, and made the
                   // ISA of every kernel family at once (isa_force)
};

enum { FLAG_LIST_MAX = 64, FLAGS_MAX = 32 };

// The values of a list flag, in the order given; n is 0 when it was not.
struct flag_list {
    int n;
    int v[FLAG_LIST_MAX];
};

struct flag {
    const char *name;   // "--threads"
    const char *arg;    // the value's name in the usage, "N"; NULL for a switch
    enum flag_type type;
    void *to;           // where the value goes, of the type above
    // One line of help. A number's or a word's default is added from *to as
    // it is before parsing, unless the help names its default itself.
    const char *help;
    double lo, hi;                // a number's range
    const char *const *choices;   // FLAG_CHOICE(S): the names, NULL-terminated
    const char *const *about;     // and a line on each for the usage, or NULL
};

// A program's flags: what it is (one line for the usage), and its table.
struct flags {
    const char *prog;   // argv[0], set by flags_parse
    const char *about;
    int n;
    struct flag list[FLAGS_MAX];
};

// Adds a flag to the table (a program has at most FLAGS_MAX).
void flags_add(struct flags *f, struct flag flag);

// Reads argv. Returns 0; 1 after printing the usage for --help (exit 0);
// or 2 after printing "error: ..." and the usage to stderr (exit 2). So
// `int rc = flags_parse(...); if (rc) return rc == 1 ? 0 : rc;`.
int flags_parse(struct flags *f, int argc, char **argv);
void flags_usage(const struct flags *f, FILE *out);
// For a problem found after parsing (two flags that cannot go together, a
// shape the program cannot take): prints "error: ..." and the usage to
// stderr, and returns 2.
#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
int flags_fail(const struct flags *f, const char *fmt, ...);

// One flag of each type, for a program's table. help is one line; a
// number's range is [lo, hi]; choices is NULL-terminated, about NULL or a
// line per choice.
struct flag flag_switch(const char *name, int *to, const char *help);
struct flag flag_int(const char *name, const char *arg, int *to, double lo, double hi,
                     const char *help);
struct flag flag_long(const char *name, const char *arg, long *to, double lo, double hi,
                      const char *help);
struct flag flag_double(const char *name, const char *arg, double *to, double lo, double hi,
                        const char *help);
struct flag flag_text(const char *name, const char *arg, const char **to, const char *help);
struct flag flag_output(const char *name, const char *arg, const char **to, const char *help);
struct flag flag_input(const char *name, const char *arg, const char **to, const char *help);
struct flag flag_choice(const char *name, const char *arg, int *to, const char *const *choices,
                        const char *const *about, const char *help);
struct flag flag_choices(const char *name, const char *arg, struct flag_list *to,
                         const char *const *choices, const char *const *about,
                         const char *help);
struct flag flag_counts(const char *name, const char *arg, struct flag_list *to, double lo,
                        double hi, const char *help);

// The shared flags.
struct flag flag_isa(enum isa *to);            // --isa NAME
struct flag flag_threads(int *to);             // --threads N, 1..1024
struct flag flag_reps(int *to);                // --reps R, 1..100000
struct flag flag_quick(int *to);               // --quick
struct flag flag_csv(const char **to);         // --csv FILE
struct flag flag_data(const char **to);        // --data NAME|DIR
// --machine: print the `#` lines this program's results files start with
// (base/machine.c: the machine, the build, the commit) and stop, for a
// tool whose own results file has no program of ours to write them.
struct flag flag_machine(int *to);

#endif
