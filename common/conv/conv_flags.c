// The --conv flag: its choices and their lines from conv_path.c's table.
#include <stdio.h>
#include <string.h>

#include "conv_flags.h"

// The names and their lines, NULL-terminated, as a flag's choices: filled
// when the first flag is made (a program makes its flags before any thread).
static const char *names[CONV_PATHS + 1], *abouts[CONV_PATHS + 1];

static void fill_names(void)
{
    for (int p = CONV_AUTO; p < CONV_PATHS; p++) {
        names[p] = conv_path_name(conv_path_of((enum conv_path_id)p));
        abouts[p] = conv_path_about((enum conv_path_id)p);
    }
}

struct flag conv_path_flag(int *path)
{
    fill_names();
    return flag_choice("--conv", "PATH", path, names, abouts, "how the convolutions compute");
}

struct flag conv_paths_flag(struct flag_list *paths)
{
    fill_names();
    return flag_choices("--conv", "A,B", paths, names, abouts, "only these convolution paths");
}

int conv_path_check(int path, const struct conv_shape *s, const char *what, char *err,
                    size_t errlen)
{
    const struct conv_path *p = conv_path_of((enum conv_path_id)path);
    if (!p || p->takes(s))
        return 0;
    int at = snprintf(err, errlen, "--conv %s takes none of %s: use", p->name, what);
    const char *sep = " ";
    for (int q = CONV_AUTO; q < CONV_PATHS && at > 0 && (size_t)at < errlen; q++) {
        const struct conv_path *r = conv_path_of((enum conv_path_id)q);
        if (r && !r->takes(s))
            continue;
        at += snprintf(err + at, errlen - (size_t)at, "%s%s", sep, conv_path_name(r));
        sep = ", ";
    }
    return -1;
}
