/* The allocator hook (Lua's lua_Alloc, SQLite's mem_methods) and a test mode that fails the
 * Nth allocation and counts live blocks (SQLite's test_malloc). Every block carries a 64-byte
 * header recording its size so the hook's free sees what it allocated and aligned blocks work
 * through the same path. */
#include "core/core.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define HDR 64

static void *libc_malloc(void *ud, size_t n) { (void)ud; return malloc(n); }
static void *libc_realloc(void *ud, void *p, size_t n) { (void)ud; return realloc(p, n); }
static void libc_free(void *ud, void *p) { (void)ud; free(p); }

static pv_allocator hook = { libc_malloc, libc_realloc, libc_free, NULL };

static atomic_long t_fail_at, t_count, t_live;
static atomic_bool t_on, t_failed;

void pv_set_allocator(const pv_allocator *a)
{
    if (a && a->malloc_fn && a->realloc_fn && a->free_fn) hook = *a;
    else hook = (pv_allocator){ libc_malloc, libc_realloc, libc_free, NULL };
}

void pvc_alloc_test_begin(long fail_at)
{
    atomic_store(&t_fail_at, fail_at);
    atomic_store(&t_count, 0);
    atomic_store(&t_live, 0);
    atomic_store(&t_failed, false);
    atomic_store(&t_on, true);
}

void pvc_alloc_test_end(void) { atomic_store(&t_on, false); }
long pvc_alloc_live(void) { return atomic_load(&t_live); }
long pvc_alloc_count(void) { return atomic_load(&t_count); }
bool pvc_alloc_failed(void) { return atomic_load(&t_failed); }

/* true: this allocation must fail (test mode). */
static bool inject(void)
{
    if (!atomic_load(&t_on)) return false;
    long k = atomic_fetch_add(&t_count, 1) + 1;
    long at = atomic_load(&t_fail_at);
    if (at > 0 && k == at) { atomic_store(&t_failed, true); return true; }
    return false;
}

typedef struct { size_t size; unsigned char tracked; } hdr_t;

void *pvc_malloc(size_t n)
{
    if (n > SIZE_MAX - HDR || inject()) return NULL;
    unsigned char *b = hook.malloc_fn(hook.ud, n + HDR);
    if (!b) return NULL;
    hdr_t *h = (hdr_t *)b;
    h->size = n;
    h->tracked = atomic_load(&t_on);
    if (h->tracked) atomic_fetch_add(&t_live, 1);
    return b + HDR;
}

void *pvc_calloc(size_t count, size_t size)
{
    if (size && count > SIZE_MAX / size) return NULL;
    void *p = pvc_malloc(count * size);
    if (p) memset(p, 0, count * size);
    return p;
}

void *pvc_realloc(void *p, size_t n)
{
    if (!p) return pvc_malloc(n);
    if (n > SIZE_MAX - HDR || inject()) return NULL;
    unsigned char *b = (unsigned char *)p - HDR;
    unsigned char *nb = hook.realloc_fn(hook.ud, b, n + HDR);
    if (!nb) return NULL;
    ((hdr_t *)nb)->size = n;
    return nb + HDR;
}

void pvc_free(void *p)
{
    if (!p) return;
    unsigned char *b = (unsigned char *)p - HDR;
    if (((hdr_t *)b)->tracked) atomic_fetch_sub(&t_live, 1);
    hook.free_fn(hook.ud, b);
}

char *pvc_strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = pvc_malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

/* The hook's blocks are at least 16-aligned; the header keeps the payload 64-aligned when the
 * base is, so over-allocate and shift, storing the shift just below the payload. */
void *pvc_malloc_aligned(size_t n)
{
    if (n > SIZE_MAX - 128) return NULL;
    unsigned char *b = pvc_malloc(n + 64);
    if (!b) return NULL;
    size_t shift = 64 - ((uintptr_t)b & 63);          /* 1..64 */
    unsigned char *p = b + shift;
    p[-1] = (unsigned char)shift;
    return p;
}

void pvc_free_aligned(void *p)
{
    if (!p) return;
    unsigned char *q = p;
    pvc_free(q - q[-1]);
}
