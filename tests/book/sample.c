/* sample.c: a fixture for the book filter tests (tools/check-book.sh). */
#include <stddef.h>

// listing: dot
// A dot product: x and y hold n floats each.
float sample_dot(size_t n, const float *x, const float *y)
{
    float s = 0.0f;
    // listing: dot_loop
    for (size_t i = 0; i < n; ++i) {
        // BEGIN SOLUTION task 0.1
        s += x[i] * y[i];
        // END SOLUTION
        // stub: (void)x; (void)y;
    }
    // end listing
    return s;
}
// end listing
