#ifndef CHECKOUT_H
#define CHECKOUT_H

// The checkout a program belongs to, found at run time: the nearest
// directory above the program's own file (/proc/self/exe) that holds
// datasets/SHA256SUMS. So a checkout moved or copied after `make` runs as it
// is: nothing of where it was built is compiled in. A program that lives
// outside any checkout looks above the current directory instead.
// NULL when neither finds one; checkout_missing says so in words.
const char *checkout_root(void);

// "cannot find the checkout this program belongs to: ..." into buf: which
// directories were searched and what to do.
void checkout_missing(char *buf, int size);

#endif
