// The one reader of the command line (flags.h): argv against a program's
// table of flags, every value checked before the program starts its work,
// and the usage text made from the same table.
#define _POSIX_C_SOURCE 200809L
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "args.h"
#include "cpu.h"
#include "flags.h"

void flags_add(struct flags *f, struct flag flag)
{
    // A table too long is the program's bug, not the user's: say so loudly.
    if (f->n == FLAGS_MAX) {
        fprintf(stderr, "error: %s: more than %d flags in one program\n", flag.name, FLAGS_MAX);
        abort();
    }
    f->list[f->n++] = flag;
}

static int index_of(const char *const *names, const char *s, size_t len)
{
    for (int i = 0; names[i]; i++)
        if (strlen(names[i]) == len && strncmp(names[i], s, len) == 0)
            return i;
    return -1;
}

static int isa_names_line(char *buf, size_t size)
{
    int len = 0;
    for (int i = 0; i < ISA_COUNT; i++)
        len += snprintf(buf + len, size - (size_t)len, "%s%s", i ? ", " : "",
                        isa_name((enum isa)i));
    return len;
}

// The words of the usage: "N", "NAME", or the choices when they are few.
static void print_choices(FILE *out, const char *const *names)
{
    fprintf(out, "%*s", 21, "");
    int col = 21;
    for (int i = 0; names[i]; i++) {
        int w = (int)strlen(names[i]) + (names[i + 1] ? 2 : 0);
        if (col + w > 96) {
            fprintf(out, "\n%*s", 21, "");
            col = 21;
        }
        fprintf(out, "%s%s", names[i], names[i + 1] ? ", " : "");
        col += w;
    }
    fprintf(out, "\n");
}

// The default of a flag as it stands before parsing, or when it has none
// to show.
static void default_of(const struct flag *fl, char *buf, size_t size)
{
    buf[0] = '\0';
    if (!fl->to || (fl->help && strstr(fl->help, "default")))
        return;
    const char *const *names = fl->choices;
    switch (fl->type) {
    case FLAG_INT:
        snprintf(buf, size, "%d", *(int *)fl->to);
        break;
    case FLAG_LONG:
        snprintf(buf, size, "%ld", *(long *)fl->to);
        break;
    case FLAG_DOUBLE:
        snprintf(buf, size, "%g", *(double *)fl->to);
        break;
    case FLAG_TEXT:
    case FLAG_OUTPUT:
    case FLAG_INPUT:
        if (*(const char **)fl->to)
            snprintf(buf, size, "%s", *(const char **)fl->to);
        break;
    case FLAG_CHOICE:
        snprintf(buf, size, "%s", names[*(int *)fl->to]);
        break;
    case FLAG_ISA:
        snprintf(buf, size, "%s, the widest this CPU runs", isa_name(isa_best()));
        break;
    default:
        break;
    }
}

// Prints text from column 21 on, wrapping between words before column 96.
static void print_wrapped(FILE *out, const char *text, int col)
{
    int start = col;
    for (const char *p = text; *p;) {
        while (*p == ' ')
            p++;
        size_t word = strcspn(p, " ");
        if (word == 0)
            break;
        if (col > start && col + 1 + (int)word > 96) {
            fprintf(out, "\n%*s", start, "");
            col = start;
        } else if (col > start) {
            fputc(' ', out);
            col++;
        }
        fprintf(out, "%.*s", (int)word, p);
        col += (int)word;
        p += word;
    }
    fputc('\n', out);
}

static void usage_with(const struct flags *f, FILE *out, char defaults[][64])
{
    fprintf(out, "usage: %s [flags]\n", f->prog ? f->prog : "program");
    if (f->about)
        fprintf(out, "%s\n", f->about);
    for (int i = 0; i < f->n; i++) {
        const struct flag *fl = &f->list[i];
        char left[40], text[512];
        snprintf(left, sizeof left, "%s%s%s", fl->name, fl->arg ? " " : "",
                 fl->arg ? fl->arg : "");
        snprintf(text, sizeof text, "%s%s%s%s", fl->help ? fl->help : "",
                 defaults[i][0] ? " (default " : "", defaults[i], defaults[i][0] ? ")" : "");
        fprintf(out, "  %-18s ", left);
        print_wrapped(out, text, 21);
        const char *const *names = fl->choices;
        if (names && fl->about) {
            for (int c = 0; names[c]; c++)
                fprintf(out, "%*s%-9s %s\n", 21, "", names[c], fl->about[c]);
        } else if (fl->type == FLAG_ISA) {
            char line[128];
            isa_names_line(line, sizeof line);
            fprintf(out, "%*s%s; every kernel family runs it\n", 21, "", line);
        } else if (names) {
            print_choices(out, names);
        }
    }
    fprintf(out, "  %-18s this text\n", "--help");
}

void flags_usage(const struct flags *f, FILE *out)
{
    char defaults[FLAGS_MAX][64];
    for (int i = 0; i < f->n; i++)
        default_of(&f->list[i], defaults[i], sizeof defaults[i]);
    usage_with(f, out, defaults);
}

// The usage after an error shows the defaults as they were before parsing.
static char saved_defaults[FLAGS_MAX][64];

static int fail_with(const struct flags *f, const char *fmt, va_list ap)
{
    fprintf(stderr, "error: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    usage_with(f, stderr, saved_defaults);
    return 2;
}

int flags_fail(const struct flags *f, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = fail_with(f, fmt, ap);
    va_end(ap);
    return rc;
}

// A file the program will write: its directory must exist and take files,
// and the name must not be a directory. Checked now, so that a long run does
// not end by failing to save its result.
static int writable(const char *path, char *why, size_t size)
{
    if (strcmp(path, "-") == 0)
        return 1;
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        snprintf(why, size, "%s is a directory, not a file", path);
        return 0;
    }
    char dir[4096];
    const char *slash = strrchr(path, '/');
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else if (slash == path)
        snprintf(dir, sizeof dir, "/");
    else
        snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        snprintf(why, size, "the directory %s does not exist (make it first)", dir);
        return 0;
    }
    if (access(dir, W_OK | X_OK) != 0 || (access(path, F_OK) == 0 && access(path, W_OK) != 0)) {
        snprintf(why, size, "%s cannot be written here (permissions)", path);
        return 0;
    }
    return 1;
}

static int readable(const char *path, char *why, size_t size)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        snprintf(why, size, "%s does not exist", path);
        return 0;
    }
    if (S_ISDIR(st.st_mode) || access(path, R_OK) != 0) {
        snprintf(why, size, "%s is not a file this program can read", path);
        return 0;
    }
    return 1;
}

// A comma-separated list of names into l (their indices). Returns 0, or -1
// with bad pointing at the name that is not one of names.
static int read_names(const char *value, const char *const *names, struct flag_list *l,
                      const char **bad)
{
    l->n = 0;
    for (const char *p = value;;) {
        size_t len = strcspn(p, ",");
        *bad = p;
        int i = index_of(names, p, len);
        if (l->n == FLAG_LIST_MAX || i < 0)
            return -1;
        l->v[l->n++] = i;
        if (p[len] == '\0')
            return 0;
        p += len + 1;
    }
}

// One flag's value into its place. Returns 0, or 2 after saying what is wrong.
static int take(const struct flags *f, const struct flag *fl, const char *value)
{
    char why[4200];
    const char *const *names = fl->choices;
    const char *bad;
    switch (fl->type) {
    case FLAG_SWITCH:
        *(int *)fl->to = 1;
        return 0;
    case FLAG_INT: {
        long v;
        if (args_long(value, (long)fl->lo, (long)fl->hi, &v) != 0)
            return flags_fail(f, "%s wants a whole number from %.0f to %.0f, not '%s'", fl->name,
                              fl->lo, fl->hi, value);
        *(int *)fl->to = (int)v;
        return 0;
    }
    case FLAG_LONG:
        if (args_long(value, (long)fl->lo, (long)fl->hi, (long *)fl->to) != 0)
            return flags_fail(f, "%s wants a whole number from %.0f to %.0f, not '%s'", fl->name,
                              fl->lo, fl->hi, value);
        return 0;
    case FLAG_DOUBLE:
        if (args_double(value, fl->lo, fl->hi, (double *)fl->to) != 0)
            return flags_fail(f, "%s wants a number from %g to %g, not '%s'", fl->name, fl->lo,
                              fl->hi, value);
        return 0;
    case FLAG_TEXT:
        *(const char **)fl->to = value;
        return 0;
    case FLAG_OUTPUT:
        if (!writable(value, why, sizeof why))
            return flags_fail(f, "%s %s: %s", fl->name, value, why);
        *(const char **)fl->to = value;
        return 0;
    case FLAG_INPUT:
        if (!readable(value, why, sizeof why))
            return flags_fail(f, "%s %s: %s", fl->name, value, why);
        *(const char **)fl->to = value;
        return 0;
    case FLAG_CHOICE: {
        int i = index_of(names, value, strlen(value));
        if (i < 0)
            return flags_fail(f, "%s wants one of the names below, not '%s'", fl->name, value);
        *(int *)fl->to = i;
        return 0;
    }
    case FLAG_CHOICES:
        if (read_names(value, names, fl->to, &bad) != 0)
            return flags_fail(f, "%s wants names from the list below, comma-separated; '%.*s' "
                                 "is not one",
                              fl->name, (int)strcspn(bad, ","), bad);
        return 0;
    case FLAG_COUNTS: {
        struct flag_list *l = fl->to;
        l->n = args_counts(value, (long)fl->lo, (long)fl->hi, l->v, FLAG_LIST_MAX);
        if (l->n < 0)
            return flags_fail(f, "%s wants whole numbers from %.0f to %.0f, comma-separated "
                                 "(at most %d), not '%s'",
                              fl->name, fl->lo, fl->hi, FLAG_LIST_MAX, value);
        return 0;
    }
    case FLAG_ISA: {
        enum isa isa;
        if (isa_parse(value, &isa) != 0) {
            isa_names_line(why, sizeof why);
            return flags_fail(f, "%s wants one of %s, not '%s'", fl->name, why, value);
        }
        if (isa_force(isa) != 0) {
            // Not a typing mistake: the usage would not help.
            isa_unsupported_message(isa, why, sizeof why);
            fprintf(stderr, "error: %s\n", why);
            return 2;
        }
        *(enum isa *)fl->to = isa;
        return 0;
    }
    }
    return 0;
}

int flags_parse(struct flags *f, int argc, char **argv)
{
    f->prog = argc > 0 ? argv[0] : "program";
    for (int i = 0; i < f->n; i++)
        default_of(&f->list[i], saved_defaults[i], sizeof saved_defaults[i]);
    for (int i = 1; i < argc; i++) {
        const char *name = argv[i];
        if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0) {
            usage_with(f, stdout, saved_defaults);
            return 1;
        }
        const struct flag *fl = NULL;
        for (int j = 0; j < f->n && !fl; j++)
            if (strcmp(f->list[j].name, name) == 0)
                fl = &f->list[j];
        if (!fl)
            return flags_fail(f, "unknown flag '%s'", name);
        const char *value = NULL;
        if (fl->type != FLAG_SWITCH) {
            if (i + 1 >= argc || argv[i + 1][0] == '\0')
                return flags_fail(f, "%s needs a value (%s)", name, fl->arg ? fl->arg : "");
            value = argv[++i];
        }
        int rc = take(f, fl, value);
        if (rc != 0)
            return rc;
    }
    return 0;
}

// The one place a struct flag is filled in.
static struct flag make(const char *name, const char *arg, enum flag_type type, void *to,
                        double lo, double hi, const char *const *choices,
                        const char *const *about, const char *help)
{
    return (struct flag){.name = name, .arg = arg, .type = type, .to = to, .help = help,
                         .lo = lo, .hi = hi, .choices = choices, .about = about};
}

struct flag flag_switch(const char *name, int *to, const char *help)
{
    return make(name, NULL, FLAG_SWITCH, to, 0, 0, NULL, NULL, help);
}

struct flag flag_int(const char *name, const char *arg, int *to, double lo, double hi,
                     const char *help)
{
    return make(name, arg, FLAG_INT, to, lo, hi, NULL, NULL, help);
}

struct flag flag_long(const char *name, const char *arg, long *to, double lo, double hi,
                      const char *help)
{
    return make(name, arg, FLAG_LONG, to, lo, hi, NULL, NULL, help);
}

struct flag flag_double(const char *name, const char *arg, double *to, double lo, double hi,
                        const char *help)
{
    return make(name, arg, FLAG_DOUBLE, to, lo, hi, NULL, NULL, help);
}

struct flag flag_text(const char *name, const char *arg, const char **to, const char *help)
{
    return make(name, arg, FLAG_TEXT, to, 0, 0, NULL, NULL, help);
}

struct flag flag_output(const char *name, const char *arg, const char **to, const char *help)
{
    return make(name, arg, FLAG_OUTPUT, to, 0, 0, NULL, NULL, help);
}

struct flag flag_input(const char *name, const char *arg, const char **to, const char *help)
{
    return make(name, arg, FLAG_INPUT, to, 0, 0, NULL, NULL, help);
}

struct flag flag_choice(const char *name, const char *arg, int *to, const char *const *choices,
                        const char *const *about, const char *help)
{
    return make(name, arg, FLAG_CHOICE, to, 0, 0, choices, about, help);
}

struct flag flag_choices(const char *name, const char *arg, struct flag_list *to,
                         const char *const *choices, const char *const *about,
                         const char *help)
{
    return make(name, arg, FLAG_CHOICES, to, 0, 0, choices, about, help);
}

struct flag flag_counts(const char *name, const char *arg, struct flag_list *to, double lo,
                        double hi, const char *help)
{
    return make(name, arg, FLAG_COUNTS, to, lo, hi, NULL, NULL, help);
}

struct flag flag_isa(enum isa *to)
{
    return make("--isa", "NAME", FLAG_ISA, to, 0, 0, NULL, NULL, "the instruction set");
}
struct flag flag_threads(int *to)
{
    return flag_int("--threads", "N", to, 1, 1024, "threads");
}

struct flag flag_reps(int *to)
{
    return flag_int("--reps", "R", to, 1, 100000, "timed repetitions, median kept");
}

struct flag flag_quick(int *to)
{
    return flag_switch("--quick", to, "a short pass: proves it runs, measures little");
}

struct flag flag_csv(const char **to)
{
    return flag_output("--csv", "FILE", to, "write the results to FILE (- for stdout)");
}

struct flag flag_machine(int *to)
{
    return flag_switch("--machine", to, "print the # lines its results files start with, and stop");
}

struct flag flag_data(const char **to)
{
    return flag_text("--data", "NAME", to,
                     "mnist, fashion (from build/datasets/ or $DATA_DIR; `make datasets`), "
                     "sample (committed), or a directory of the four IDX files however written "
                     "(mysplit, mysplit/, ./mysplit, /data/mysplit); one datasets/SHA256SUMS "
                     "does not list trains, with a note");
}
