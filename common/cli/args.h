#ifndef ARGS_H
#define ARGS_H

// Numbers from the command line, checked: the whole string must be the
// number and it must lie in [lo, hi]. Each returns 0 and sets *out, or -1
// (s NULL, not a number, trailing characters, out of range) and leaves *out.
int args_long(const char *s, long lo, long hi, long *out);
int args_int(const char *s, int lo, int hi, int *out);
int args_double(const char *s, double lo, double hi, double *out);
// Comma-separated whole numbers in [lo, hi] ("64,256") into out (at most
// max). Returns how many, or -1 when one is not such a number or there are
// more than max.
int args_counts(const char *list, long lo, long hi, int *out, int max);

#endif
