#ifndef PROGRESS_H
#define PROGRESS_H

#include <stdio.h>

// A plain progress bar inside an epoch, drawn on a terminal only: redrawn
// at most a few times a second (drawing every step would cost more than a
// small step), erased when the epoch ends, so what stays on the screen is
// the one line per epoch. On a file or a pipe it draws nothing.
struct progress {
    FILE *out;        // NULL: off
    long total;       // images in the epoch
    double start;     // timer_now() at progress_begin
    double last;      // when the bar was last drawn
    int drawn;        // 1 when a bar is on the screen
};

// 1 when f is a terminal and term (the program's $TERM, NULL when unset) is
// not "dumb".
int progress_wanted(FILE *f, const char *term);
// Starts a bar over total images on out (NULL: stay silent).
void progress_begin(struct progress *p, FILE *out, long total);
// done images so far, loss the latest batch's loss.
void progress_update(struct progress *p, long done, double loss);
// Erases the bar.
void progress_end(struct progress *p);

#endif
