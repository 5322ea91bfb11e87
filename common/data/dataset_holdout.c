// A validation split carved from the training set: the recipe (learning
// rate, epochs, width) is chosen on it, so that the test set is read once,
// at the end, and its accuracy is still a fair guess of what the model does
// on images it has never seen.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dataset.h"

// The held-out images are those the seed's shuffle puts first: a different
// stream from the epochs' shuffles (seed + epoch), so the split is not the
// first batch of epoch 0.
enum { HOLDOUT_STREAM = 0x5eed };

static void copy_split(const struct dataset_split *all, const int *which, int n,
                      struct dataset_split *out, unsigned char *images, unsigned char *labels)
{
    *out = (struct dataset_split){.count = n, .rows = all->rows, .cols = all->cols,
                                  .pixels = all->pixels, .images = images, .labels = labels};
    for (int i = 0; i < n; i++) {
        memcpy(images + (size_t)i * all->pixels, all->images + (size_t)which[i] * all->pixels,
               (size_t)all->pixels);
        labels[i] = all->labels[which[i]];
    }
}

int dataset_holdout(const struct dataset_split *all, int n, uint64_t seed,
                    struct dataset_holdout *h, char *err, size_t errlen)
{
    memset(h, 0, sizeof *h);
    if (n < 1 || n >= all->count) {
        snprintf(err, errlen,
                 "a validation split of %d images out of %d training images: it needs at least "
                 "1 and must leave some to train on (try --val %d)",
                 n, all->count, all->count / 12 > 0 ? all->count / 12 : 1);
        return -1;
    }
    int *order = malloc((size_t)all->count * sizeof *order);
    char *held = calloc((size_t)all->count, 1);
    h->images = malloc((size_t)all->count * (size_t)all->pixels);
    h->labels = malloc((size_t)all->count);
    if (!order || !held || !h->images || !h->labels) {
        free(order);
        free(held);
        dataset_holdout_free(h);
        snprintf(err, errlen, "out of memory for a validation split of %d images", n);
        return -1;
    }
    // listing: dataset_holdout
    // The first n images of a shuffle by the seed are held out.
    dataset_shuffle(order, all->count, seed ^ HOLDOUT_STREAM);
    for (int i = 0; i < n; i++)
        held[order[i]] = 1;
    // Both parts keep the images in the file's order: order[] is reused for
    // the training part's indices, then the validation part's.
    int nt = 0, nv = 0;
    for (int i = 0; i < all->count; i++)
        if (!held[i])
            order[nt++] = i;
    for (int i = 0; i < all->count; i++)
        if (held[i])
            order[nt + nv++] = i;
    // end listing
    size_t px = (size_t)all->pixels;
    copy_split(all, order, nt, &h->train, h->images, h->labels);
    copy_split(all, order + nt, nv, &h->val, h->images + (size_t)nt * px, h->labels + nt);
    h->index = order;  // the first nt are the training part's, then the validation's
    free(held);
    return 0;
}

void dataset_holdout_free(struct dataset_holdout *h)
{
    free(h->images);
    free(h->labels);
    free(h->index);
    memset(h, 0, sizeof *h);
}
