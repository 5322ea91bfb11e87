#ifndef ARGS_H
#define ARGS_H

// Numbers from the command line, checked: the whole string must be the
// number and it must lie in [lo, hi]. Each returns 0 and sets *out, or -1
// (s NULL, not a number, trailing characters, out of range) and leaves *out.
int args_long(const char *s, long lo, long hi, long *out);
int args_int(const char *s, int lo, int hi, int *out);
int args_double(const char *s, double lo, double hi, double *out);
// 1 when name is one of the comma-separated words of list ("im2col,auto"),
// else 0.
int args_in_list(const char *list, const char *name);

#endif
