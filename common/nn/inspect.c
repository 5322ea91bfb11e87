// What a trained model shows beyond its accuracy (inspect.h): its
// predictions over a split, the confusion matrix, the wrong images it was
// surest of, and weights or activations laid out as one picture.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "inspect.h"
#include "ops.h"

int inspect_predict(struct trainer *tr, struct nn_model *m, const struct dataset_split *s,
                    int *pred, float *prob, char *err, size_t errlen)
{
    if (s->pixels != tr->pixels || m->inputs != tr->pixels) {
        snprintf(err, errlen, "images of %d pixels, but the trainer takes %d and the model %d",
                 s->pixels, tr->pixels, m->inputs);
        return -1;
    }
    int was = tape_set_recording(tr->tape, 0);
    int status = 0;
    for (int at = 0; at < s->count; at += tr->batch) {
        int b = dataset_batch(s, NULL, at, tr->batch, tr->x, tr->y);
        tape_clear(tr->tape);
        struct tensor *in =
            tensor_from(tr->tape, 2, (int[]){b, tr->pixels}, tr->x, (long)b * tr->pixels);
        struct tensor *logits = m->forward(m, tr->tape, in);
        if (!logits) {
            snprintf(err, errlen, "predicting images %d..%d: %s", at, at + b - 1,
                     tape_error(tr->tape));
            status = -1;
            break;
        }
        int c = logits->shape[1];
        for (int i = 0; i < b; i++) {
            const float *row = logits->data + (long)i * c;
            int best = 0;
            for (int j = 1; j < c; j++)
                if (row[j] > row[best])
                    best = j;
            // softmax(row)[best] = 1 / Σ exp(row[j] − row[best]): every term
            // is at most 1, so nothing overflows.
            double sum = 0.0;
            for (int j = 0; j < c; j++)
                sum += exp((double)row[j] - row[best]);
            pred[at + i] = best;
            prob[at + i] = (float)(1.0 / sum);
        }
    }
    tape_clear(tr->tape);
    tape_set_recording(tr->tape, was);
    return status;
}

void inspect_confusion(const struct dataset_split *s, const int *pred,
                       long counts[DATASET_CLASSES * DATASET_CLASSES])
{
    memset(counts, 0, sizeof(long) * DATASET_CLASSES * DATASET_CLASSES);
    for (int i = 0; i < s->count; i++)
        counts[s->labels[i] * DATASET_CLASSES + pred[i]]++;
}

void inspect_write_confusion(FILE *f, const long counts[DATASET_CLASSES * DATASET_CLASSES])
{
    fprintf(f, "label,predicted,count,share\n");
    for (int l = 0; l < DATASET_CLASSES; l++) {
        long total = 0;
        for (int p = 0; p < DATASET_CLASSES; p++)
            total += counts[l * DATASET_CLASSES + p];
        for (int p = 0; p < DATASET_CLASSES; p++) {
            long n = counts[l * DATASET_CLASSES + p];
            fprintf(f, "%d,%d,%ld,%.6f\n", l, p, n, total ? (double)n / (double)total : 0.0);
        }
    }
}

struct wrong {
    int index;
    float prob;
};

// Surest first; on a tie, the earlier image first, so the order is the same
// on every machine.
static int by_confidence(const void *a, const void *b)
{
    const struct wrong *x = a, *y = b;
    if (x->prob != y->prob)
        return x->prob < y->prob ? 1 : -1;
    return (x->index > y->index) - (x->index < y->index);
}

int inspect_write_wrong(FILE *f, const struct dataset_split *s, const int *pred,
                        const float *prob, int k)
{
    struct wrong *w = malloc((size_t)(s->count > 0 ? s->count : 1) * sizeof *w);
    if (!w)
        return -1;
    int n = 0;
    for (int i = 0; i < s->count; i++)
        if (pred[i] != s->labels[i])
            w[n++] = (struct wrong){i, prob[i]};
    qsort(w, (size_t)n, sizeof *w, by_confidence);
    if (k > n)
        k = n;
    fprintf(f, "rank,index,label,predicted,confidence");
    for (int p = 0; p < s->pixels; p++)
        fprintf(f, ",p%d", p);
    fputc('\n', f);
    for (int r = 0; r < k; r++) {
        int i = w[r].index;
        fprintf(f, "%d,%d,%d,%d,%.6f", r + 1, i, s->labels[i], pred[i], (double)w[r].prob);
        const unsigned char *img = s->images + (size_t)i * s->pixels;
        for (int p = 0; p < s->pixels; p++)
            fprintf(f, ",%d", img[p]);
        fputc('\n', f);
    }
    free(w);
    return k;
}

int inspect_write_mosaic(FILE *f, const float *tiles, int n, int h, int w, int cols,
                         int scale_each)
{
    if (cols > n)
        cols = n;
    int rows = (n + cols - 1) / cols;
    int height = rows * (h + 1) - 1, width = cols * (w + 1) - 1;
    // Each tile's factor: 100 / its largest |value| (hundredths keep the file
    // small), or 1.
    double *scale = malloc((size_t)n * sizeof *scale);
    if (!scale)
        return -1;
    for (int t = 0; t < n; t++) {
        float big = 0.0f;
        for (int i = 0; i < h * w; i++)
            big = fmaxf(big, fabsf(tiles[(size_t)t * h * w + i]));
        scale[t] = !scale_each ? 1.0 : big > 0.0f ? 100.0 / big : 0.0;
    }
    fprintf(f, "# tiles: %d\n# tile_rows: %d\n# tile_cols: %d\n# grid_rows: %d\n"
               "# grid_cols: %d\n# matrix_rows: %d\n# matrix_cols: %d\n"
               "# gap: one value of 0 between tiles; tile i at grid row i / %d, column i %% %d\n"
               "# scale: %s\n",
            n, h, w, rows, cols, height, width, cols, cols,
            scale_each ? "each tile divided by its largest |value|, in hundredths: -100..100"
                       : "the values as they are");
    for (int y = 0; y < height; y++) {
        int tr = y / (h + 1), ty = y % (h + 1);
        for (int x = 0; x < width; x++) {
            int tc = x / (w + 1), tx = x % (w + 1);
            int t = tr * cols + tc;
            double v = 0.0;
            if (ty < h && tx < w && t < n)
                v = tiles[(size_t)t * h * w + ty * w + tx] * scale[t];
            if (x)
                fputc(',', f);
            if (scale_each)
                fprintf(f, "%ld", lround(v));
            else
                fprintf(f, "%.4g", v);
        }
        fputc('\n', f);
    }
    free(scale);
    return 0;
}
