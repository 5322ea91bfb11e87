// The progress bar of a training epoch: `[=====>     ] 41% 24576/60000 loss 0.4312`
// rewritten in place with a carriage return.
#define _POSIX_C_SOURCE 200809L  // fileno, isatty
#include <string.h>
#include <unistd.h>

#include "progress.h"
#include "timer.h"

enum { BAR_WIDTH = 30 };
// Seconds between redraws: a few per second reads as live and costs nothing.
static const double REDRAW_EVERY = 0.25;

int progress_wanted(FILE *f, const char *term)
{
    return f && isatty(fileno(f)) && !(term && strcmp(term, "dumb") == 0);
}

void progress_begin(struct progress *p, FILE *out, long total)
{
    p->out = out;
    p->total = total > 0 ? total : 1;
    p->start = p->last = timer_now();
    p->drawn = 0;
}

void progress_update(struct progress *p, long done, double loss)
{
    if (!p->out)
        return;
    double now = timer_now();
    if (now - p->last < REDRAW_EVERY)
        return;
    p->last = now;
    int fill = (int)((double)BAR_WIDTH * (double)done / (double)p->total);
    if (fill > BAR_WIDTH)
        fill = BAR_WIDTH;
    char bar[BAR_WIDTH + 1];
    for (int i = 0; i < BAR_WIDTH; i++)
        bar[i] = i < fill ? '=' : (i == fill ? '>' : ' ');
    bar[BAR_WIDTH] = '\0';
    fprintf(p->out, "\r[%s] %3d%% %ld/%ld loss %.4f", bar, (int)(100 * done / p->total), done,
            p->total, loss);
    fflush(p->out);
    p->drawn = 1;
}

void progress_end(struct progress *p)
{
    if (p->out && p->drawn) {
        // Blank the line and return to its start: ANSI "erase line".
        fprintf(p->out, "\r\033[K");
        fflush(p->out);
    }
    p->drawn = 0;
}
