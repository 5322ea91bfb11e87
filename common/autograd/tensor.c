#include <stdio.h>
#include <string.h>

#include "arena.h"
#include "tensor.h"

long tensor_shape_size(int ndim, const int *shape)
{
    if (ndim < 1 || ndim > TENSOR_MAX_DIMS || !shape)
        return -1;
    long size = 1;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 1 || size > (1L << 31) / shape[i])
            return -1;
        size *= shape[i];
    }
    return size;
}

void tensor_set_shape(struct tensor *x, int ndim, const int *shape, long size)
{
    memset(x, 0, sizeof *x);
    x->ndim = ndim;
    for (int i = 0; i < ndim; i++)
        x->shape[i] = shape[i];
    x->size = size;
    x->id = -1;
}

struct tensor *tensor_param(int ndim, const int *shape)
{
    long size = tensor_shape_size(ndim, shape);
    if (size < 0)
        return NULL;
    struct tensor *p = arena_heap_alloc(sizeof *p);
    float *data = arena_heap_alloc(sizeof(float) * (size_t)size);
    float *grad = arena_heap_alloc(sizeof(float) * (size_t)size);
    if (!p || !data || !grad) {
        arena_heap_free(p);
        arena_heap_free(data);
        arena_heap_free(grad);
        return NULL;
    }
    tensor_set_shape(p, ndim, shape, size);
    p->data = data;
    p->grad = grad;
    p->requires_grad = 1;
    p->owned = 1;
    memset(data, 0, sizeof(float) * (size_t)size);
    memset(grad, 0, sizeof(float) * (size_t)size);
    return p;
}

void tensor_free(struct tensor *p)
{
    if (!p || !p->owned)
        return;
    arena_heap_free(p->data);
    arena_heap_free(p->grad);
    arena_heap_free(p);
}

void tensor_zero_grad(struct tensor *p)
{
    if (p && p->grad)
        memset(p->grad, 0, sizeof(float) * (size_t)p->size);
    if (p)
        p->grad_forgotten = 0;
}

void tensor_forget_grad(struct tensor *p)
{
    if (p && p->grad)
        p->grad_forgotten = 1;
}

void tensor_grad_settle(struct tensor *p)
{
    if (p && p->grad_forgotten)
        tensor_zero_grad(p);
}

int tensor_same_shape(const struct tensor *a, const struct tensor *b)
{
    if (a->ndim != b->ndim)
        return 0;
    for (int i = 0; i < a->ndim; i++)
        if (a->shape[i] != b->shape[i])
            return 0;
    return 1;
}

void tensor_shape_str(const struct tensor *a, char *buf, int len)
{
    int at = 0;
    buf[0] = '\0';
    for (int i = 0; i < a->ndim && at < len; i++)
        at += snprintf(buf + at, (size_t)(len - at), i ? "×%d" : "%d", a->shape[i]);
}
