#ifndef TIMER_H
#define TIMER_H

// Seconds since an arbitrary fixed point, from a clock that never jumps
// (CLOCK_MONOTONIC): only differences between two calls mean anything.
double timer_now(void);

#endif
