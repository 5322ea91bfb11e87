// Where the checkout is: found from the program's own location, once.
#define _POSIX_C_SOURCE 200809L  // readlink, getcwd, access
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "checkout.h"

// Every checkout has this file, and nothing else on a machine is likely to.
static const char MARK[] = "datasets/SHA256SUMS";

static char root[PATH_MAX];
static char program[PATH_MAX];  // the directory the search began at, for the message
static int looked;

static int holds_mark(const char *dir)
{
    char path[PATH_MAX + sizeof MARK + 1];
    snprintf(path, sizeof path, "%s/%s", dir, MARK);
    return access(path, R_OK) == 0;
}

// Cuts dir to its parent directory; 0 when it has none ("/" or no slash).
static int up(char *dir)
{
    char *slash = strrchr(dir, '/');
    if (slash == NULL || slash == dir)
        return 0;
    *slash = '\0';
    return 1;
}

// dir becomes the nearest directory at or above it holding the mark; 0 when none does.
static int find_above(char *dir)
{
    do {
        if (holds_mark(dir))
            return 1;
    } while (up(dir));
    return 0;
}

const char *checkout_root(void)
{
    if (!looked) {
        looked = 1;
        ssize_t n = readlink("/proc/self/exe", root, sizeof root - 1);
        int found = 0;
        if (n > 0) {
            root[n] = '\0';
            found = up(root);  // the program's directory
            snprintf(program, sizeof program, "%s", root);
            found = found && find_above(root);
        }
        if (!found && getcwd(root, sizeof root) != NULL)
            found = find_above(root);
        if (!found)
            root[0] = '\0';
    }
    return root[0] ? root : NULL;
}

void checkout_missing(char *buf, int size)
{
    char cwd[PATH_MAX];
    if (getcwd(cwd, sizeof cwd) == NULL)
        snprintf(cwd, sizeof cwd, "(unknown)");
    snprintf(buf, (size_t)size,
             "cannot find the checkout this program belongs to: no directory above %s "
             "(the program's) or %s (the current one) holds %s; run the program from "
             "inside its checkout",
             program[0] ? program : "(unknown)", cwd, MARK);
}
