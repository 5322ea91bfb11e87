#ifndef CONV_FLAGS_H
#define CONV_FLAGS_H

// The --conv flag, for the drivers (the library's conv.h does not read
// flags). Its choices and their lines are conv_path.c's table.
#include "conv.h"
#include "flags.h"

// --conv PATH: *path becomes an enum conv_path_id (CONV_AUTO when not
// given; conv_path_of turns it into a tape_config's conv).
// --conv A,B for the benchmarks: the ids of the paths named, in order.
struct flag conv_path_flag(int *path);
struct flag conv_paths_flag(struct flag_list *paths);
// When path (an enum conv_path_id) takes no convolution of shape s: the
// problem and the paths that would take it in err, and -1; else 0.
int conv_path_check(int path, const struct conv_shape *s, const char *what, char *err,
                    size_t errlen);

#endif
