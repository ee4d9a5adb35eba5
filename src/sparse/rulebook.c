/* Rulebooks: which input site feeds which output site through which kernel offset.
 *
 * Submanifold (out sites = in sites), pvs_rulebook_subm: a merge over the sites sorted by key
 * (section at the end); it replaced the hash builder below, now pvs_rulebook_subm_ref, its test
 * oracle, which makes the same rulebook (measured on 55k lidar sites, one thread: L0 7.1 ->
 * ~3.5 ms, L1 4.7 -> ~2.6 ms).
 *
 * Submanifold by hash (pvs_rulebook_subm_ref): the sites go into the coordinate hash (in parallel, slots
 * claimed by compare-and-swap); each site q looks up only the lower half of the offsets (k < K/2). A pair found that way, i = q + off(k), is
 * also the pair q = i + off(K-1-k) seen from i (odd kernels are symmetric), so it is written
 * into both neighbour rows of a [n, K] table: half the probes of a plain scan. The probes go
 * in chunks of sites whose neighbours' home slots are prefetched first (the table outgrows L2
 * at ~64k sites). A pass over the table in site order then emits every k's pairs with
 * increasing out_idx: the sites are cut into parts (by n alone), each part counts its pairs per
 * k, and from the prefix sums each part writes its own slice of every list. All passes run on
 * the pool; the rulebook is the same for any pool.
 *
 * Strided: no hash. The inputs are put in (x, y, z) order (a radix sort of their linear keys,
 * skipped when already sorted, as every level after the first is). For one offset k the map
 * i -> o = (i + p - k) / s (where it divides and lands in range) is strictly increasing in
 * that order, so visiting the sorted inputs and appending each valid (i, k) to list k yields
 * lists already sorted by output key. The distinct output keys are then numbered in
 * increasing order (the sorted output site set) and each list's keys rewritten as those
 * numbers: one output x-plane at a time through a plane bitmap and map (in the sort's spare
 * array, where they fit), else by a K-way merge of the lists. Scratch is O(n_in) whatever the
 * stride (two key arrays for the sort). */
#include "sparse/coord_hash.h"

#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

static const char AXIS[3] = { 'x', 'y', 'z' };

enum { SUBM_CHUNK = 8 };   /* sites whose neighbour slots are prefetched together (13 each) */

static pv_status check_sites(const char *fn, const char *what, const pvs_sites *s, pvc_msg *msg)
{
    if (!pvs_grid_keys_ok(s->shape))
        return pvc_fail(msg, PV_EINPUT, "%s: %s shape %d x %d x %d: every dim must be >= 1 and the cells fewer than 2^32 - 1",
                        fn, what, s->shape[0], s->shape[1], s->shape[2]);
    if (s->n < 0 || s->n > PVS_MAX_SITES)
        return pvc_fail(msg, PV_EINPUT, "%s: %s n = %lld must be in [0, 2^30]", fn, what, (long long)s->n);
    if (s->n > 0 && !s->xyz) return pvc_fail(msg, PV_EINPUT, "%s: %s xyz is NULL for %lld sites", fn, what, (long long)s->n);
    return PV_OK;
}

static pv_status check_ksize(const char *fn, const int32_t ksize[3], bool odd, int32_t *K, pvc_msg *msg)
{
    int64_t k = 1;
    for (int d = 0; d < 3; d++) {
        if (ksize[d] < 1 || ksize[d] > 27 || (odd && ksize[d] % 2 == 0))
            return pvc_fail(msg, PV_EINPUT, "%s: ksize.%c = %d must be %sin [1, 27]", fn, AXIS[d], ksize[d],
                            odd ? "odd and " : "");
        k *= ksize[d];
    }
    if (k > 27)
        return pvc_fail(msg, PV_EINPUT, "%s: ksize %d x %d x %d has %lld offsets, more than 27", fn, ksize[0], ksize[1],
                        ksize[2], (long long)k);
    *K = (int32_t)k;
    return PV_OK;
}

static pv_status check_rb(const char *fn, const pvs_rulebook *rb, pvc_msg *msg)
{
    if (rb->cap < 0 || (rb->cap > 0 && (!rb->in_idx || !rb->out_idx)))
        return pvc_fail(msg, PV_EINPUT, "%s: rulebook cap = %lld with missing in_idx/out_idx", fn, (long long)rb->cap);
    return PV_OK;
}

static void rb_reset(pvs_rulebook *rb, const int32_t ksize[3], int32_t K, int64_t n_in)
{
    memcpy(rb->ksize, ksize, sizeof rb->ksize);
    rb->K = K;
    memset(rb->start, 0, sizeof rb->start);
    rb->n_in = n_in;
    rb->n_out = 0;
}

static bool in_shape(const int32_t *c, const int32_t shape[3])
{
    return (uint32_t)c[0] < (uint32_t)shape[0] && (uint32_t)c[1] < (uint32_t)shape[1] && (uint32_t)c[2] < (uint32_t)shape[2];
}

static uint32_t site_key(const int32_t *c, const int32_t shape[3])
{
    return ((uint32_t)c[0] * (uint32_t)shape[1] + (uint32_t)c[1]) * (uint32_t)shape[2] + (uint32_t)c[2];
}

static pv_status outside(const char *fn, const pvs_sites *s, int64_t q, pvc_msg *msg)
{
    const int32_t *c = s->xyz + 3 * q;
    return pvc_fail(msg, PV_EINPUT, "%s: site %lld = (%d, %d, %d) is outside the shape %d x %d x %d", fn, (long long)q,
                    c[0], c[1], c[2], s->shape[0], s->shape[1], s->shape[2]);
}

static pv_status duplicate(const char *fn, const pvs_sites *s, int64_t a, int64_t b, pvc_msg *msg)
{
    const int32_t *c = s->xyz + 3 * b;
    return pvc_fail(msg, PV_EINPUT, "%s: sites %lld and %lld are both (%d, %d, %d)", fn, (long long)PVC_MIN(a, b),
                    (long long)PVC_MAX(a, b), c[0], c[1], c[2]);
}

/* start[] from per-offset counts; fails when the pairs do not fit the capacity. */
static pv_status layout(const char *fn, pvs_rulebook *rb, const int64_t *count, pvc_msg *msg)
{
    int64_t total = 0;
    for (int k = 0; k < rb->K; k++) total += count[k];
    if (total > INT32_MAX)   /* keeps every index, out sites included, an int32 */
        return pvc_fail(msg, PV_EINPUT, "%s: %lld pairs: more than 2^31 - 1", fn, (long long)total);
    if (total > rb->cap)
        return pvc_fail(msg, PV_EINPUT, "%s: %lld pairs (%lld in sites, ksize %d x %d x %d) exceed the rulebook capacity of %lld",
                        fn, (long long)total, (long long)rb->n_in, rb->ksize[0], rb->ksize[1], rb->ksize[2],
                        (long long)rb->cap);
    rb->start[0] = 0;
    for (int k = 0; k < rb->K; k++) rb->start[k + 1] = rb->start[k] + count[k];
    return PV_OK;
}

/* ---- submanifold ---------------------------------------------------------------------------- */

size_t pvs_hash_scratch_bytes(int64_t n)
{
    if (n < 1) n = 1;
    return pvs_hash_table_bytes(n, 4) + (size_t)n * 27 * sizeof(int32_t);
}

/* Sites into the hash one after the other, each table row initialized; names the first bad
 * site (outside the shape, or a repeat) in site order. The inline path, and the message of the
 * parallel one (which only notices that there is a bad site). */
static pv_status subm_insert_serial(const char *fn, const pvs_sites *s, pvs_hash *h, void *scratch, int32_t *nbr,
                                    int32_t K, pvc_msg *msg)
{
    pvs_hash_init(h, scratch, s->n, 4);
    for (int64_t q = 0; q < s->n; q++) {
        const int32_t *c = s->xyz + 3 * q;
        if (!in_shape(c, s->shape)) return outside(fn, s, q, msg);
        uint32_t key = site_key(c, s->shape);
        uint64_t *slot = pvs_hash_probe(h, key, (uint32_t)c[0], (uint32_t)c[1], (uint32_t)c[2]);
        if (*slot != PVS_HASH_FREE) return duplicate(fn, s, (int32_t)(uint32_t)*slot, q, msg);
        pvs_hash_put(slot, key, (int32_t)q);
        int32_t *row = nbr + q * K;
        for (int32_t k = (K - 1) / 2 + 1; k < K; k++) row[k] = -1;
        row[(K - 1) / 2] = (int32_t)q;
    }
    return PV_OK;
}

enum { PARTS_MAX = 64, PART_MIN = 2048 };   /* site ranges of the counting and emitting passes */
/* Below this many sites a builder runs inline: its passes take well under a millisecond, and
 * each handoff to the pool costs a wake-up and a join (much more on an oversubscribed box). */
enum { PAR_MIN_SITES = 16384 };

typedef struct subm_job {
    const pvs_sites *s;
    pvs_hash         h;
    int32_t         *nbr;        /* [n, K] */
    int32_t          K, center;
    int32_t          off[27][3];
    int64_t          delta[27];
    int64_t          part_len;   /* sites per part (the last may be shorter) */
    int64_t        (*cnt)[27];   /* per part: pairs per offset, then the part's first slot per offset */
    pvs_rulebook    *rb;
    int64_t         *count;      /* inline only: lower-half pairs per offset, counted by the probe */
    int              bad;        /* set (atomically) when an insert meets a bad site */
} subm_job;

/* Sites into the hash (lock-free: a slot is claimed by compare-and-swap, so the layout depends
 * on the thread timing but the lookups' answers do not) and their table rows initialized. */
static void subm_insert(void *ctx, int64_t begin, int64_t end, int tid)
{
    (void)tid;
    subm_job *j = ctx;
    const pvs_sites *s = j->s;
    for (int64_t q = begin; q < end; q++) {
        const int32_t *c = s->xyz + 3 * q;
        if (!in_shape(c, s->shape)) { __atomic_store_n(&j->bad, 1, __ATOMIC_RELAXED); return; }
        const uint32_t key = site_key(c, s->shape);
        const uint64_t want = (uint64_t)key << 32 | (uint32_t)q;
        uint32_t i = pvs_hash_home(&j->h, (uint32_t)c[0], (uint32_t)c[1], (uint32_t)c[2]);
        for (;;) {
            uint64_t cur = __atomic_load_n(&j->h.slot[i], __ATOMIC_RELAXED);
            if (cur == PVS_HASH_FREE &&
                __atomic_compare_exchange_n(&j->h.slot[i], &cur, want, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
                break;
            if ((uint32_t)(cur >> 32) == key) { __atomic_store_n(&j->bad, 1, __ATOMIC_RELAXED); return; }
            i = (i + 1) & j->h.mask;   /* cur is taken (a failed swap leaves the winner in cur) */
        }
        int32_t *row = j->nbr + q * j->K;
        for (int32_t k = j->center + 1; k < j->K; k++) row[k] = -1;
        row[j->center] = (int32_t)q;
    }
}

/* Lower-half lookups for sites [begin, end) in chunks whose neighbours' home slots are
 * prefetched first; each pair found also fills the mirrored cell of the neighbour's row (a
 * cell only its mirror site writes, so threads never write the same cell). */
static void subm_probe(void *ctx, int64_t begin, int64_t end, int tid)
{
    (void)tid;
    const subm_job *j = ctx;
    const pvs_sites *s = j->s;
    const int32_t K = j->K, center = j->center;
    for (int64_t q0 = begin; q0 < end; q0 += SUBM_CHUNK) {
        const int m = (int)PVC_MIN((int64_t)SUBM_CHUNK, end - q0);
        uint32_t nkey[SUBM_CHUNK][13], home[SUBM_CHUNK][13];
        for (int i = 0; i < m; i++) {
            const int32_t *c = s->xyz + 3 * (q0 + i);
            int64_t key = site_key(c, s->shape);
            for (int32_t k = 0; k < center; k++) {
                int32_t nc[3] = { c[0] + j->off[k][0], c[1] + j->off[k][1], c[2] + j->off[k][2] };
                nkey[i][k] = UINT32_MAX;   /* outside the grid */
                if (!in_shape(nc, s->shape)) continue;
                nkey[i][k] = (uint32_t)(key + j->delta[k]);
                home[i][k] = pvs_hash_home(&j->h, (uint32_t)nc[0], (uint32_t)nc[1], (uint32_t)nc[2]);
                __builtin_prefetch(&j->h.slot[home[i][k]], 0, 3);
            }
        }
        for (int i = 0; i < m; i++) {
            int64_t q = q0 + i;
            int32_t *row = j->nbr + q * K;
            for (int32_t k = 0; k < center; k++) {
                int32_t v = -1;
                if (nkey[i][k] != UINT32_MAX) {
                    uint64_t sl = *pvs_hash_probe_at(&j->h, nkey[i][k], home[i][k]);
                    v = sl == PVS_HASH_FREE ? -1 : (int32_t)(uint32_t)sl;
                }
                row[k] = v;
                if (v >= 0) {
                    j->nbr[(int64_t)v * K + (K - 1 - k)] = (int32_t)q;
                    if (j->count) j->count[k]++;
                }
            }
        }
    }
}

static void subm_count(void *ctx, int64_t begin, int64_t end, int tid)
{
    (void)tid;
    const subm_job *j = ctx;
    for (int64_t part = begin; part < end; part++) {
        int64_t *cnt = j->cnt[part];
        for (int32_t k = 0; k < j->K; k++) cnt[k] = 0;
        const int64_t q1 = PVC_MIN(j->s->n, (part + 1) * j->part_len);
        for (int64_t q = part * j->part_len; q < q1; q++) {
            const int32_t *row = j->nbr + q * j->K;
            for (int32_t k = 0; k < j->K; k++) cnt[k] += row[k] >= 0;
        }
    }
}

/* Each part writes its sites' pairs from its own first slot per offset: lists in site order. */
static void subm_emit(void *ctx, int64_t begin, int64_t end, int tid)
{
    (void)tid;
    const subm_job *j = ctx;
    for (int64_t part = begin; part < end; part++) {
        int64_t cur[27];
        memcpy(cur, j->cnt[part], sizeof cur);
        const int64_t q1 = PVC_MIN(j->s->n, (part + 1) * j->part_len);
        for (int64_t q = part * j->part_len; q < q1; q++) {
            const int32_t *row = j->nbr + q * j->K;
            for (int32_t k = 0; k < j->K; k++) {
                if (row[k] < 0) continue;
                j->rb->in_idx[cur[k]] = row[k];
                j->rb->out_idx[cur[k]++] = (int32_t)q;
            }
        }
    }
}

/* Both SubM builders' argument checks (one message wording, the public name's) and the reset. */
static const char subm_fn[] = "pvs_rulebook_subm";

static pv_status subm_begin(const pvs_sites *s, const int32_t ksize[3], pvs_rulebook *rb, const void *scratch, int32_t *K,
                            pvc_msg *msg)
{
    const char *fn = subm_fn;
    if (!s || !ksize || !rb || !scratch)
        return pvc_fail(msg, PV_EINPUT, "%s: sites, ksize, rulebook and scratch must be non-NULL", fn);
    pv_status st = check_sites(fn, "sites", s, msg);
    if (st == PV_OK) st = check_ksize(fn, ksize, true, K, msg);
    if (st == PV_OK) st = check_rb(fn, rb, msg);
    if (st == PV_OK) rb_reset(rb, ksize, *K, s->n);
    return st;
}

/* Every builder's end: the lists laid out from the counts, each part's first slot per offset
 * (parts in order, so the pairs land in the same order for any pool), then the parts' pairs
 * written by fill (one item per part). */
static pv_status lists_fill(const char *fn, pvc_pool *pool, pvs_rulebook *rb, const int64_t count[27],
                            int64_t (*cnt)[27], int64_t parts, int32_t K,
                            void (*fill)(void *, int64_t, int64_t, int), void *job, pvc_msg *msg)
{
    pv_status st = layout(fn, rb, count, msg);
    if (st != PV_OK) return st;
    int64_t next[27];
    memcpy(next, rb->start, sizeof next);
    for (int64_t part = 0; part < parts; part++)
        for (int32_t k = 0; k < K; k++) {
            int64_t c = cnt[part][k];
            cnt[part][k] = next[k];
            next[k] += c;
        }
    pvc_parallel_for(pool, parts, 1, fill, job);
    return PV_OK;
}

pv_status pvs_rulebook_subm_ref(pvc_pool *pool, const pvs_sites *s, const int32_t ksize[3], pvs_rulebook *rb,
                                void *scratch, pvc_msg *msg)
{
    int32_t K;
    pv_status st = subm_begin(s, ksize, rb, scratch, &K, msg);
    if (st != PV_OK) return st;
    const int64_t n = s->n;
    if (n < PAR_MIN_SITES || pvc_pool_threads(pool) < 2) pool = NULL;

    subm_job j = { .s = s, .K = K, .center = (K - 1) / 2, .rb = rb };
    pvs_hash_init(&j.h, scratch, n, 4);
    j.nbr = (int32_t *)((char *)scratch + pvs_hash_table_bytes(n, 4));
    const int32_t Y = s->shape[1], Z = s->shape[2];
    for (int32_t k = 0; k < K; k++) {
        int32_t kx = k / (ksize[1] * ksize[2]), ky = k / ksize[2] % ksize[1], kz = k % ksize[2];
        j.off[k][0] = kx - ksize[0] / 2;
        j.off[k][1] = ky - ksize[1] / 2;
        j.off[k][2] = kz - ksize[2] / 2;
        j.delta[k] = ((int64_t)j.off[k][0] * Y + j.off[k][1]) * Z + j.off[k][2];
    }
    int64_t cnt[PARTS_MAX][27], count[27] = { 0 }, parts;
    j.cnt = cnt;
    if (!pool) {
        /* inline: serial insert, pairs counted while probing, one part (no extra pass over the
         * table: the parallel path's count pass and compare-and-swap cost ~1.4x the CPU time) */
        st = subm_insert_serial(subm_fn, s, &j.h, scratch, j.nbr, K, msg);
        if (st != PV_OK) return st;
        j.count = count;
        subm_probe(&j, 0, n, 0);
        for (int32_t k = 0; k < j.center; k++) count[K - 1 - k] = count[k];
        count[j.center] = n;
        parts = 1;
        j.part_len = PVC_MAX(n, 1);
        memcpy(cnt[0], count, sizeof count);
    } else {
        pvc_parallel_for(pool, n, 1024, subm_insert, &j);
        if (j.bad) {
            st = subm_insert_serial(subm_fn, s, &j.h, scratch, j.nbr, K, msg);
            return st != PV_OK ? st : pvc_fail(msg, PV_EINTERNAL, "%s: a bad site was reported and not found again", subm_fn);
        }
        pvc_parallel_for(pool, n, 16 * SUBM_CHUNK, subm_probe, &j);
        /* parts depend on n only: the lists come out the same for any pool */
        parts = PVC_MAX(1, PVC_MIN((int64_t)PARTS_MAX, n / PART_MIN));
        j.part_len = (n + parts - 1) / parts;
        pvc_parallel_for(pool, parts, 1, subm_count, &j);
        for (int64_t part = 0; part < parts; part++)
            for (int32_t k = 0; k < K; k++) count[k] += cnt[part][k];
    }
    st = lists_fill(subm_fn, pool, rb, count, cnt, parts, K, subm_emit, &j, msg);
    if (st == PV_OK) rb->n_out = n;
    return st;
}

/* ---- strided -------------------------------------------------------------------------------- */

size_t pvs_down_scratch_bytes(int64_t n_in, int32_t K)
{
    (void)K;   /* the scratch does not depend on the kernel */
    if (n_in < 1) n_in = 1;
    return 2 * (size_t)n_in * sizeof(uint64_t);
}

/* LSD radix sort of (key << 32 | index) by key, 11 bits a pass, only as many passes as the
 * largest key needs; ping-pongs between a and b and returns the sorted one. */
static uint64_t *sort_keys(uint64_t *a, uint64_t *b, int64_t n, uint32_t max_key)
{
    uint32_t cnt[2048];
    for (int shift = 0; shift < 32 && (max_key >> shift) != 0; shift += 11) {
        memset(cnt, 0, sizeof cnt);
        for (int64_t i = 0; i < n; i++) cnt[(a[i] >> (32 + shift)) & 2047]++;
        uint32_t sum = 0;
        for (int d = 0; d < 2048; d++) {
            uint32_t c = cnt[d];
            cnt[d] = sum;
            sum += c;
        }
        for (int64_t i = 0; i < n; i++) b[cnt[(a[i] >> (32 + shift)) & 2047]++] = a[i];
        uint64_t *t = a;
        a = b;
        b = t;
    }
    return a;
}

/* The output coordinates one input coordinate c reaches along an axis, with their kernel
 * offsets: o = (c + p - k) / s for each k in [0, ksize) where it divides and 0 <= o < out.
 * The first such k is (c + p) mod s, each next one s further and one output lower: one
 * division per call, none for strides 1 and 2 (BEVFusion's). c + p < 2^31 + 2^20. */
static int axis_hits(int32_t c, int32_t ks, int32_t s, int32_t p, int32_t out, int32_t *k, int32_t *o)
{
    uint32_t t = (uint32_t)c + (uint32_t)p, q, k0;
    if (s == 1) { q = t; k0 = 0; }
    else if (s == 2) { q = t >> 1; k0 = t & 1; }
    else { q = t / (uint32_t)s; k0 = t - q * (uint32_t)s; }
    int m = 0;
    int64_t oo = q;
    for (int32_t kk = (int32_t)k0; kk < ks && oo >= 0; kk += s, oo--)
        if (oo < out) { k[m] = kk; o[m] = (int32_t)oo; m++; }
    return m;
}

/* Calls the body for every (k, out key) of input coordinate c. */
#define FOR_HITS(c, BODY)                                                                           \
    do {                                                                                            \
        int32_t kx_[27], ox_[27], ky_[27], oy_[27], kz_[27], oz_[27];                               \
        int nx_ = axis_hits((c)[0], ksize[0], stride[0], pad[0], od[0], kx_, ox_);                  \
        int ny_ = nx_ ? axis_hits((c)[1], ksize[1], stride[1], pad[1], od[1], ky_, oy_) : 0;       \
        int nz_ = ny_ ? axis_hits((c)[2], ksize[2], stride[2], pad[2], od[2], kz_, oz_) : 0;       \
        for (int a_ = 0; a_ < nx_; a_++)                                                            \
            for (int b_ = 0; b_ < ny_; b_++)                                                        \
                for (int c_ = 0; c_ < nz_; c_++) {                                                  \
                    int32_t hk = (kx_[a_] * ksize[1] + ky_[b_]) * ksize[2] + kz_[c_];               \
                    uint32_t hkey = ((uint32_t)ox_[a_] * (uint32_t)od[1] + (uint32_t)oy_[b_])       \
                                    * (uint32_t)od[2] + (uint32_t)oz_[c_];                          \
                    BODY;                                                                           \
                }                                                                                   \
    } while (0)

typedef struct down_job {
    const pvs_sites *in;
    const uint64_t  *a;          /* (key << 32 | index), sorted by key */
    int64_t          n, part_len;
    int32_t          ksize[3], stride[3], pad[3], od[3];
    int64_t        (*cnt)[27];   /* per part: pairs per offset, then the part's first slot */
    pvs_rulebook    *rb;
} down_job;

static void down_count(void *ctx, int64_t begin, int64_t end, int tid)
{
    (void)tid;
    const down_job *j = ctx;
    const int32_t *ksize = j->ksize, *stride = j->stride, *pad = j->pad, *od = j->od;
    for (int64_t part = begin; part < end; part++) {
        int64_t *cnt = j->cnt[part];
        memset(cnt, 0, 27 * sizeof *cnt);
        const int64_t e = PVC_MIN(j->n, (part + 1) * j->part_len);
        for (int64_t i = part * j->part_len; i < e; i++)
            FOR_HITS(j->in->xyz + 3 * (int64_t)(uint32_t)j->a[i], { (void)hkey; cnt[hk]++; });
    }
}

static void down_fill(void *ctx, int64_t begin, int64_t end, int tid)
{
    (void)tid;
    const down_job *j = ctx;
    const int32_t *ksize = j->ksize, *stride = j->stride, *pad = j->pad, *od = j->od;
    int32_t *in_idx = j->rb->in_idx, *out_idx = j->rb->out_idx;
    for (int64_t part = begin; part < end; part++) {
        int64_t cur[27];
        memcpy(cur, j->cnt[part], sizeof cur);
        const int64_t e = PVC_MIN(j->n, (part + 1) * j->part_len);
        for (int64_t i = part * j->part_len; i < e; i++) {
            int32_t idx = (int32_t)(uint32_t)j->a[i];
            if (i + 16 < e) __builtin_prefetch(j->in->xyz + 3 * (int64_t)(uint32_t)j->a[i + 16], 0, 3);   /* unsorted inputs */
            FOR_HITS(j->in->xyz + 3 * (int64_t)idx, {
                in_idx[cur[hk]] = idx;
                out_idx[cur[hk]++] = (int32_t)hkey;
            });
        }
    }
}

/* Out keys (parked in out_idx, each list sorted) -> out site numbers in increasing key order,
 * by a K-way merge; the out coordinates written while they fit out->cap. Returns the count.
 * One pass over the heads per output both consumes the current key and finds the next; keys
 * never reach UINT32_MAX. */
static int64_t down_number_merge(pvs_rulebook *rb, const int32_t od[3], pvs_sites *out)
{
    const int32_t K = rb->K;
    uint32_t head[27], m = UINT32_MAX;
    int64_t pos[27];
    for (int32_t k = 0; k < K; k++) {
        pos[k] = rb->start[k];
        head[k] = pos[k] < rb->start[k + 1] ? (uint32_t)rb->out_idx[pos[k]] : UINT32_MAX;
        m = head[k] < m ? head[k] : m;
    }
    const uint32_t plane = (uint32_t)od[1] * (uint32_t)od[2];
    int64_t n_out = 0;
    while (m != UINT32_MAX) {
        if (n_out < out->cap) {
            int32_t *o = out->xyz + 3 * n_out;
            o[0] = (int32_t)(m / plane);
            o[1] = (int32_t)(m % plane / (uint32_t)od[2]);
            o[2] = (int32_t)(m % (uint32_t)od[2]);
        }
        uint32_t next = UINT32_MAX;
        for (int32_t k = 0; k < K; k++) {
            uint32_t h = head[k];
            if (h == m) {
                rb->out_idx[pos[k]++] = (int32_t)n_out;
                h = head[k] = pos[k] < rb->start[k + 1] ? (uint32_t)rb->out_idx[pos[k]] : UINT32_MAX;
            }
            next = h < next ? h : next;
        }
        m = next;
        n_out++;
    }
    return n_out;
}

/* The same numbers one out x-plane at a time, without comparing heads: each list's keys in the
 * plane (a run, as the list is sorted) set bits of a plane bitmap, the set bits in order are
 * the plane's out sites (numbered into a plane map), and the runs are rewritten from the map.
 * ~27 head compares per out site become ~2 touches per pair. bits: (plane + 63) / 64 words,
 * zero on return; map: plane int32s. */
static int64_t down_number_planes(pvs_rulebook *rb, const int32_t od[3], uint64_t *bits, int32_t *map,
                                  pvs_sites *out)
{
    const int32_t K = rb->K;
    const uint32_t plane = (uint32_t)od[1] * (uint32_t)od[2];
    const int64_t words = ((int64_t)plane + 63) / 64;
    int32_t *out_idx = rb->out_idx;
    int64_t pos[27], run_end[27], n_out = 0;
    memcpy(pos, rb->start, sizeof pos);
    memset(bits, 0, (size_t)words * sizeof *bits);
    for (int32_t ox = 0; ox < od[0]; ox++) {
        const uint32_t base = (uint32_t)ox * plane, lim = base + plane;   /* < 2^32 - 1: cells fit */
        bool any = false;
        for (int32_t k = 0; k < K; k++) {
            int64_t p = pos[k];
            const int64_t e = rb->start[k + 1];
            for (; p < e && (uint32_t)out_idx[p] < lim; p++) {
                const uint32_t c = (uint32_t)out_idx[p] - base;
                bits[c >> 6] |= (uint64_t)1 << (c & 63);
            }
            run_end[k] = p;
            any |= p > pos[k];
        }
        if (!any) continue;
        for (int64_t w = 0; w < words; w++) {
            uint64_t m = bits[w];
            if (!m) continue;
            bits[w] = 0;
            for (; m; m &= m - 1) {
                const uint32_t c = (uint32_t)(w * 64 + __builtin_ctzll(m));
                map[c] = (int32_t)n_out;
                if (n_out < out->cap) {
                    int32_t *o = out->xyz + 3 * n_out;
                    o[0] = ox;
                    o[1] = (int32_t)(c / (uint32_t)od[2]);
                    o[2] = (int32_t)(c % (uint32_t)od[2]);
                }
                n_out++;
            }
        }
        for (int32_t k = 0; k < K; k++) {
            for (int64_t p = pos[k]; p < run_end[k]; p++) out_idx[p] = map[(uint32_t)out_idx[p] - base];
            pos[k] = run_end[k];
        }
    }
    return n_out;
}

pv_status pvs_rulebook_down(pvc_pool *pool, const pvs_sites *in, const int32_t ksize[3], const int32_t stride[3],
                            const int32_t pad[3], pvs_sites *out, pvs_rulebook *rb, void *scratch,
                            pvc_msg *msg)
{
    static const char fn[] = "pvs_rulebook_down";
    if (!in || !ksize || !stride || !pad || !out || !rb || !scratch)
        return pvc_fail(msg, PV_EINPUT, "%s: in, ksize, stride, pad, out, rulebook and scratch must be non-NULL", fn);
    int32_t K;
    pv_status st = check_sites(fn, "in", in, msg);
    if (st == PV_OK) st = check_ksize(fn, ksize, false, &K, msg);
    if (st == PV_OK) st = check_rb(fn, rb, msg);
    if (st != PV_OK) return st;
    out->n = 0;
    int32_t od[3];
    for (int d = 0; d < 3; d++) {
        if (stride[d] < 1 || stride[d] > (1 << 20))
            return pvc_fail(msg, PV_EINPUT, "%s: stride.%c = %d must be in [1, 2^20]", fn, AXIS[d], stride[d]);
        if (pad[d] < 0 || pad[d] > (1 << 20))
            return pvc_fail(msg, PV_EINPUT, "%s: pad.%c = %d must be in [0, 2^20]", fn, AXIS[d], pad[d]);
        int64_t span = (int64_t)in->shape[d] + 2 * (int64_t)pad[d] - ksize[d];
        if (span < 0)
            return pvc_fail(msg, PV_EINPUT, "%s: along %c, in %d + 2 x pad %d < ksize %d: no output", fn, AXIS[d],
                            in->shape[d], pad[d], ksize[d]);
        int64_t o = span / stride[d] + 1;
        if (o > INT32_MAX) return pvc_fail(msg, PV_EINPUT, "%s: out dim %c = %lld is too large", fn, AXIS[d], (long long)o);
        od[d] = (int32_t)o;
    }
    memcpy(out->shape, od, sizeof od);
    if (!pvs_grid_keys_ok(od))
        return pvc_fail(msg, PV_EINPUT, "%s: out shape %d x %d x %d has 2^32 - 1 cells or more", fn, od[0], od[1], od[2]);
    if (out->cap < 0 || (out->cap > 0 && !out->xyz))
        return pvc_fail(msg, PV_EINPUT, "%s: out cap = %lld with a NULL xyz", fn, (long long)out->cap);
    const int64_t n = in->n;
    rb_reset(rb, ksize, K, n);
    if (n < PAR_MIN_SITES) pool = NULL;

    /* inputs in (x, y, z) order */
    uint64_t *a = scratch, *b = a + (n > 0 ? n : 1);
    bool sorted = true;
    uint32_t max_key = 0;
    int64_t max_j = 0;
    for (int64_t j = 0; j < n; j++) {
        const int32_t *c = in->xyz + 3 * j;
        if (!in_shape(c, in->shape)) return outside(fn, in, j, msg);
        uint32_t key = site_key(c, in->shape);
        if (j > 0 && key <= max_key) {
            if (key == max_key) return duplicate(fn, in, max_j, j, msg);
            sorted = false;
        } else {
            max_key = key;
            max_j = j;
        }
        a[j] = (uint64_t)key << 32 | (uint64_t)j;
    }
    if (!sorted) {
        a = sort_keys(a, b, n, max_key);
        for (int64_t j = 1; j < n; j++)
            if (a[j] >> 32 == a[j - 1] >> 32) return duplicate(fn, in, (uint32_t)a[j - 1], (uint32_t)a[j], msg);
    }

    /* per part of the sorted inputs: count, prefix sums, then each part fills its slices; the
     * lists come out in sorted-input order, so each is sorted by output key (keys parked in
     * out_idx until the merge) */
    int64_t cnt[PARTS_MAX][27], count[27] = { 0 };
    down_job dj = { .in = in, .a = a, .n = n, .cnt = cnt, .rb = rb };
    memcpy(dj.ksize, ksize, sizeof dj.ksize);
    memcpy(dj.stride, stride, sizeof dj.stride);
    memcpy(dj.pad, pad, sizeof dj.pad);
    memcpy(dj.od, od, sizeof dj.od);
    int64_t parts = PVC_MAX(1, PVC_MIN((int64_t)PARTS_MAX, n / PART_MIN));
    dj.part_len = (n + parts - 1) / parts;
    pvc_parallel_for(pool, parts, 1, down_count, &dj);
    for (int64_t part = 0; part < parts; part++)
        for (int32_t k = 0; k < K; k++) count[k] += cnt[part][k];
    st = lists_fill(fn, pool, rb, count, cnt, parts, K, down_fill, &dj, msg);
    if (st != PV_OK) return st;

    /* number the out keys: plane by plane where the plane's scratch fits in the sort's spare
     * key array, else by a K-way merge (the same numbers) */
    const int64_t plane_cells = (int64_t)od[1] * od[2], words = (plane_cells + 63) / 64;
    uint64_t *spare = a == (uint64_t *)scratch ? b : (uint64_t *)scratch;
    const int64_t n_out = words * 8 + plane_cells * 4 <= (n > 0 ? n : 1) * 8
                              ? down_number_planes(rb, od, spare, (int32_t *)(spare + words), out)
                              : down_number_merge(rb, od, out);
    if (n_out > out->cap)
        return pvc_fail(msg, PV_EINPUT, "%s: %lld out sites (from %lld in sites, ksize %d x %d x %d, stride %d x %d x %d) "
                        "exceed the out capacity of %lld", fn, (long long)n_out, (long long)n, ksize[0], ksize[1],
                        ksize[2], stride[0], stride[1], stride[2], (long long)out->cap);
    out->n = n_out;
    rb->n_out = n_out;
    return PV_OK;
}

/* ---- submanifold by a merge over sorted keys ------------------------------------------------ */
/* The same rulebook as pvs_rulebook_subm_ref (its test oracle), without the hash: the sites go
 * in key order (the radix sort above, skipped when already sorted, as every level after the
 * first is), and for each column (dx, dy) of the kernel's lower half one cursor walks the
 * sorted keys: the target key(q) + off is increasing in the sorted order, so each cursor only
 * moves forward, and the column's KZ cells are consecutive keys, matched one after the other
 * from the cursor. A cell is a neighbour only when all three coordinates stay in the grid
 * (the linear key wraps across rows). Pairs are mirrored into the neighbour's row as in the
 * hash builder, and the count and emit passes are the hash builder's. Scratch: the sort's two
 * key arrays (16 bytes a site) fit in the hash table's share (>= 32 bytes a site). */

enum { MERGE_COLS = 14 };   /* lower-half columns of a kernel of <= 27 offsets, the centre's included */

typedef struct subm_merge_job {
    subm_job         base;       /* nbr, K, center, cnt, part_len, rb, count, bad as in the hash builder */
    uint64_t        *a;          /* (key << 32 | site) in site order, then sorted by key */
    int64_t          n;
    int32_t          ncol, rz;
    int32_t          col_dx[MERGE_COLS], col_dy[MERGE_COLS], col_k0[MERGE_COLS], col_nz[MERGE_COLS];
    int64_t          col_delta[MERGE_COLS];   /* key step to the column's first cell (dz = -rz) */
} subm_merge_job;

/* Keys in site order, rows initialized (upper half -1, centre the site itself). */
static void merge_keys(void *ctx, int64_t begin, int64_t end, int tid)
{
    (void)tid;
    subm_merge_job *j = ctx;
    const pvs_sites *s = j->base.s;
    const int32_t K = j->base.K, center = j->base.center;
    for (int64_t q = begin; q < end; q++) {
        const int32_t *c = s->xyz + 3 * q;
        if (!in_shape(c, s->shape)) { __atomic_store_n(&j->base.bad, 1, __ATOMIC_RELAXED); return; }
        j->a[q] = (uint64_t)site_key(c, s->shape) << 32 | (uint64_t)q;
        int32_t *row = j->base.nbr + q * K;
        for (int32_t k = center + 1; k < K; k++) row[k] = -1;
        row[center] = (int32_t)q;
    }
}

/* First sorted position whose key is >= t (n when none). */
static int64_t lower_bound_key(const uint64_t *a, int64_t n, int64_t t)
{
    int64_t lo = 0, hi = n;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if ((int64_t)(a[mid] >> 32) < t) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

/* Lower-half neighbours of sorted positions [begin, end): each column's cursor starts at a
 * binary search, then moves forward with the sites. */
static void merge_probe(void *ctx, int64_t begin, int64_t end, int tid)
{
    (void)tid;
    const subm_merge_job *j = ctx;
    const pvs_sites *s = j->base.s;
    const uint64_t *a = j->a;
    const int64_t n = j->n;
    const int32_t K = j->base.K, ncol = j->ncol, rz = j->rz;
    int32_t *nbr = j->base.nbr;
    int64_t *count = j->base.count;
    int64_t cur[MERGE_COLS];
    const int64_t key0 = (int64_t)(a[begin] >> 32);
    for (int32_t c = 0; c < ncol; c++) cur[c] = lower_bound_key(a, n, key0 + j->col_delta[c]);
    for (int64_t p = begin; p < end; p++) {
        if (p + 16 < end) {   /* the first level's sites are not in key order: their rows are apart */
            const int64_t qa = (int64_t)(uint32_t)a[p + 16];
            __builtin_prefetch(s->xyz + 3 * qa, 0, 3);
            __builtin_prefetch(nbr + qa * K, 1, 3);
        }
        const int64_t key = (int64_t)(a[p] >> 32);
        const int32_t q = (int32_t)(uint32_t)a[p];
        const int32_t *xyz = s->xyz + 3 * (int64_t)q;
        int32_t *row = nbr + (int64_t)q * K;
        for (int32_t c = 0; c < ncol; c++) {
            const int32_t k0 = j->col_k0[c], nz = j->col_nz[c];
            if ((uint32_t)(xyz[0] + j->col_dx[c]) >= (uint32_t)s->shape[0] ||
                (uint32_t)(xyz[1] + j->col_dy[c]) >= (uint32_t)s->shape[1]) {
                for (int32_t kz = 0; kz < nz; kz++) row[k0 + kz] = -1;
                continue;   /* the cursor stays behind; it catches up when the column is back in the grid */
            }
            const int64_t t = key + j->col_delta[c];
            int64_t r = cur[c];
            while (r < n && (int64_t)(a[r] >> 32) < t) r++;
            cur[c] = r;
            for (int32_t kz = 0; kz < nz; kz++) {
                int32_t v = -1;
                if (r < n && (int64_t)(a[r] >> 32) == t + kz) {
                    if ((uint32_t)(xyz[2] + kz - rz) < (uint32_t)s->shape[2]) v = (int32_t)(uint32_t)a[r];
                    r++;
                }
                row[k0 + kz] = v;
                if (v >= 0) {
                    nbr[(int64_t)v * K + (K - 1 - (k0 + kz))] = q;
                    if (count) count[k0 + kz]++;
                }
            }
        }
    }
}

/* Bit k set where row[k] >= 0 (a present neighbour). SSE2 (baseline x86-64): the sign bits of
 * four cells a step; the scalar loop is its twin and the rest of the row. */
static inline uint32_t row_mask(const int32_t *row, int32_t K)
{
    uint32_t neg = 0;
    int32_t k = 0;
#if defined(__SSE2__)
    for (; k + 4 <= K; k += 4)
        neg |= (uint32_t)_mm_movemask_ps(_mm_castsi128_ps(_mm_loadu_si128((const __m128i *)(row + k)))) << k;
#endif
    for (; k < K; k++) neg |= ((uint32_t)row[k] >> 31) << k;
    return ~neg & (uint32_t)(((uint64_t)1 << K) - 1);
}

/* subm_emit without its unpredictable branch per cell (a site has 7-15 of 27 neighbours): the
 * row's present cells as a bit mask first (a branch-free loop), then one step per pair. */
static void merge_emit(void *ctx, int64_t begin, int64_t end, int tid)
{
    (void)tid;
    const subm_job *j = ctx;
    const int32_t K = j->K;
    int32_t *in_idx = j->rb->in_idx, *out_idx = j->rb->out_idx;
    for (int64_t part = begin; part < end; part++) {
        int64_t cur[27];
        memcpy(cur, j->cnt[part], sizeof cur);
        const int64_t q1 = PVC_MIN(j->s->n, (part + 1) * j->part_len);
        for (int64_t q = part * j->part_len; q < q1; q++) {
            const int32_t *row = j->nbr + q * K;
            uint32_t mask = row_mask(row, K);
            while (mask) {
                const int k = __builtin_ctz(mask);
                mask &= mask - 1;
                in_idx[cur[k]] = row[k];
                out_idx[cur[k]++] = (int32_t)q;
            }
        }
    }
}

pv_status pvs_rulebook_subm(pvc_pool *pool, const pvs_sites *s, const int32_t ksize[3], pvs_rulebook *rb,
                            void *scratch, pvc_msg *msg)
{
    int32_t K;
    pv_status st = subm_begin(s, ksize, rb, scratch, &K, msg);
    if (st != PV_OK) return st;
    const int64_t n = s->n;
    if (n < PAR_MIN_SITES || pvc_pool_threads(pool) < 2) pool = NULL;

    subm_merge_job m = { .base = { .s = s, .K = K, .center = (K - 1) / 2, .rb = rb }, .n = n, .rz = ksize[2] / 2 };
    subm_job *j = &m.base;
    m.a = scratch;
    uint64_t *b = m.a + PVC_MAX(n, 1);
    j->nbr = (int32_t *)((char *)scratch + pvs_hash_table_bytes(n, 4));
    const int64_t Y = s->shape[1], Z = s->shape[2];
    /* lower-half columns: every (kx, ky) before the centre's, then the centre's below it */
    const int32_t cols = ksize[0] * ksize[1], center_col = (cols - 1) / 2;
    for (int32_t c = 0; c <= center_col; c++) {
        int32_t kx = c / ksize[1], ky = c % ksize[1];
        m.col_dx[c] = kx - ksize[0] / 2;
        m.col_dy[c] = ky - ksize[1] / 2;
        m.col_k0[c] = c * ksize[2];
        m.col_nz[c] = c < center_col ? ksize[2] : ksize[2] / 2;
        m.col_delta[c] = ((int64_t)m.col_dx[c] * Y + m.col_dy[c]) * Z - m.rz;
    }
    m.ncol = m.col_nz[center_col] > 0 ? center_col + 1 : center_col;

    pvc_parallel_for(pool, n, 1024, merge_keys, &m);
    bool bad = j->bad, sorted = true;
    uint32_t max_key = 0;
    for (int64_t q = 1; q < n && !bad; q++)
        if (m.a[q] >> 32 <= m.a[q - 1] >> 32) { sorted = false; break; }
    if (!bad && !sorted) {
        for (int64_t q = 0; q < n; q++) max_key = PVC_MAX(max_key, (uint32_t)(m.a[q] >> 32));
        m.a = sort_keys(m.a, b, n, max_key);
        for (int64_t p = 1; p < n && !bad; p++) bad = m.a[p] >> 32 == m.a[p - 1] >> 32;
    }
    if (bad) {   /* the hash insert names the first bad site in site order */
        pvs_hash h;
        st = subm_insert_serial(subm_fn, s, &h, scratch, j->nbr, K, msg);
        return st != PV_OK ? st : pvc_fail(msg, PV_EINTERNAL, "%s: a bad site was reported and not found again", subm_fn);
    }

    int64_t cnt[PARTS_MAX][27], count[27] = { 0 }, parts;
    j->cnt = cnt;
    if (!pool) {
        j->count = count;   /* pairs counted while merging, one part (as the hash builder) */
        if (n > 0) merge_probe(&m, 0, n, 0);
        for (int32_t k = 0; k < j->center; k++) count[K - 1 - k] = count[k];
        count[j->center] = n;
        parts = 1;
        j->part_len = PVC_MAX(n, 1);
        memcpy(cnt[0], count, sizeof count);
    } else {
        pvc_parallel_for(pool, n, 1024, merge_probe, &m);
        parts = PVC_MAX(1, PVC_MIN((int64_t)PARTS_MAX, n / PART_MIN));
        j->part_len = (n + parts - 1) / parts;
        pvc_parallel_for(pool, parts, 1, subm_count, j);
        for (int64_t part = 0; part < parts; part++)
            for (int32_t k = 0; k < K; k++) count[k] += cnt[part][k];
    }
    st = lists_fill(subm_fn, pool, rb, count, cnt, parts, K, merge_emit, j, msg);
    if (st == PV_OK) rb->n_out = n;
    return st;
}
