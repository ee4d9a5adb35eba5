/* Fuzz target: .safetensors images (pvio_st_parse). On failure the pvio_st is zeroed and the
 * message set; on success every documented invariant holds (entries sorted and distinct, byte
 * ranges inside the data buffer, matching their shapes, not overlapping; metadata strings),
 * the readers agree with an independent conversion (fz_half_to_float, bfloat16 bit shifts,
 * the int32 range), and serializing the parsed tensors and metadata parses back the same. */
#include "fuzz.h"
#include "io/safetensors.h"

#include <stdlib.h>
#include <string.h>

static void check_zeroed(const pvio_st *st, const pvc_msg *msg)
{
    FZ_CHECK(st->e == NULL && st->n == 0 && st->meta_keys == NULL && st->meta_vals == NULL &&
             st->nmeta == 0 && st->base == NULL && st->size == 0 && st->map == NULL &&
             st->map_len == 0, "safetensors: failed (%s) but the pvio_st is not zeroed", msg->text);
}

static int64_t numel_of(const pvio_st_entry *e)
{
    int64_t n = 1;
    for (int d = 0; d < e->rank; d++) n *= e->dims[d];
    return n;
}

/* Element i of an integer dtype, read byte-wise (tensor bytes may sit at any alignment). */
static int64_t int_at(const uint8_t *p, pv_dtype t, int64_t i)
{
    if (t == PV_I64) { int64_t x; memcpy(&x, p + 8 * i, 8); return x; }
    if (t == PV_I32) { int32_t x; memcpy(&x, p + 4 * i, 4); return x; }
    if (t == PV_I8) return (int8_t)p[i];
    if (t == PV_U8) return p[i];
    return p[i] != 0;       /* BOOL */
}

/* The readers against conversions written here. */
static void check_readers(const pvio_st *st, const pvio_st_entry *e)
{
    int64_t n = (int64_t)((e->end - e->begin) / pv_dtype_size(e->dtype));
    const uint8_t *p = st->base + e->begin;
    pvc_msg msg = { { 0 } };
    bool is_float = e->dtype == PV_F32 || e->dtype == PV_F16 || e->dtype == PV_BF16;
    float *f = malloc((size_t)(n ? n : 1) * sizeof *f);
    int32_t *v = malloc((size_t)(n ? n : 1) * sizeof *v);
    FZ_CHECK(f && v, "safetensors: harness out of memory");
    pv_status sf = pvio_st_read_f32(st, e, f, &msg);
    FZ_CHECK(is_float ? sf == PV_OK : sf == PV_EFORMAT, "safetensors: read_f32 of %s gave %d (%s)",
             pv_dtype_name(e->dtype), (int)sf, msg.text);
    if (sf == PV_OK) {
        for (int64_t i = 0; i < n; i++) {
            uint32_t want;
            if (e->dtype == PV_F32) {
                memcpy(&want, p + 4 * i, 4);
            } else {
                uint16_t h;
                memcpy(&h, p + 2 * i, 2);
                if (e->dtype == PV_BF16) {
                    want = (uint32_t)h << 16;
                } else {
                    float x = fz_half_to_float(h);
                    memcpy(&want, &x, 4);
                }
            }
            uint32_t got;
            memcpy(&got, &f[i], 4);
            bool both_nan = (got & 0x7f800000u) == 0x7f800000u && (got & 0x7fffffu) &&
                            (want & 0x7f800000u) == 0x7f800000u && (want & 0x7fffffu);
            FZ_CHECK(got == want || both_nan, "safetensors: %s element %lld read as 0x%08x, want "
                     "0x%08x", pv_dtype_name(e->dtype), (long long)i, got, want);
        }
    }
    pv_status si = pvio_st_read_i32(st, e, v, &msg);
    if (is_float) {
        FZ_CHECK(si == PV_EFORMAT, "safetensors: read_i32 of %s gave %d", pv_dtype_name(e->dtype),
                 (int)si);
    } else {
        bool in_range = true;
        for (int64_t i = 0; i < n && in_range; i++) {
            int64_t x = int_at(p, e->dtype, i);
            in_range = x >= INT32_MIN && x <= INT32_MAX;
        }
        FZ_CHECK(in_range ? si == PV_OK : si == PV_EFORMAT, "safetensors: read_i32 of %s gave %d "
                 "(%s)", pv_dtype_name(e->dtype), (int)si, msg.text);
        for (int64_t i = 0; si == PV_OK && i < n; i++) {
            int64_t x = int_at(p, e->dtype, i);
            FZ_CHECK(v[i] == x, "safetensors: %s element %lld read as %d, want %lld",
                     pv_dtype_name(e->dtype), (long long)i, v[i], (long long)x);
        }
    }
    free(f);
    free(v);
}

/* Serializes st's tensors and metadata and checks the result parses back the same. */
static void check_roundtrip(const pvio_st *st)
{
    pvc_tensor *t = calloc((size_t)(st->n ? st->n : 1), sizeof *t);
    FZ_CHECK(t != NULL, "safetensors: harness out of memory");
    for (int i = 0; i < st->n; i++) {
        const pvio_st_entry *e = &st->e[i];
        t[i].name = e->name;
        t[i].dtype = e->dtype;
        t[i].rank = e->rank;
        memcpy(t[i].dims, e->dims, sizeof e->dims);
        t[i].data = (void *)(uintptr_t)(st->base + e->begin);
    }
    void *buf = NULL;
    size_t len = 0;
    pvc_msg msg = { { 0 } };
    pv_status s = pvio_st_serialize(t, st->n, (const char *const *)st->meta_keys,
                                    (const char *const *)st->meta_vals, st->nmeta, &buf, &len, &msg);
    FZ_CHECK(s == PV_OK || s == PV_ENOMEM, "safetensors: a parsed file does not serialize: %s",
             msg.text);
    if (s == PV_OK) {
        pvio_st u;
        s = pvio_st_parse(buf, len, &u, &msg);
        FZ_CHECK(s == PV_OK || s == PV_ENOMEM, "safetensors: re-parse of the serialized file "
                 "failed: %s", msg.text);
        if (s == PV_OK) {
            FZ_CHECK(u.n == st->n && u.nmeta == st->nmeta, "safetensors: round trip changed the "
                     "counts (%d/%d tensors, %d/%d metadata)", u.n, st->n, u.nmeta, st->nmeta);
            for (int i = 0; i < u.n; i++) {
                const pvio_st_entry *a = &st->e[i], *b = &u.e[i];
                FZ_CHECK(strcmp(a->name, b->name) == 0 && a->dtype == b->dtype &&
                         a->rank == b->rank && memcmp(a->dims, b->dims, sizeof(int64_t) *
                         (size_t)a->rank) == 0 && a->end - a->begin == b->end - b->begin,
                         "safetensors: round trip changed tensor %d", i);
                FZ_CHECK(memcmp(st->base + a->begin, u.base + b->begin,
                                (size_t)(a->end - a->begin)) == 0,
                         "safetensors: round trip changed the bytes of tensor %d", i);
            }
            for (int i = 0; i < u.nmeta; i++)
                FZ_CHECK(strcmp(u.meta_keys[i], st->meta_keys[i]) == 0 &&
                         strcmp(u.meta_vals[i], st->meta_vals[i]) == 0,
                         "safetensors: round trip changed metadata %d", i);
            pvio_st_close(&u);
        }
        pvc_free(buf);
    }
    free(t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    pvio_st st;
    pvc_msg msg = { { 0 } };
    memset(&st, 0x5a, sizeof st);
    pv_status s = pvio_st_parse(data, size, &st, &msg);
    if (s != PV_OK) {
        fz_check_error(s, &msg, "safetensors");
        check_zeroed(&st, &msg);
        return 0;
    }
    FZ_CHECK(st.base == data && st.size == size && st.map == NULL, "safetensors: base/size/map");
    FZ_CHECK(size >= 8, "safetensors: parsed %zu bytes", size);
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--) hlen = hlen << 8 | data[i];
    uint64_t data0 = 8 + hlen;
    FZ_CHECK(hlen <= PVIO_ST_MAX_HEADER && data0 <= size, "safetensors: header length %llu",
             (unsigned long long)hlen);
    FZ_CHECK(st.n >= 0 && (st.n == 0) == (st.e == NULL), "safetensors: n %d with e %p", st.n,
             (void *)st.e);
    for (int i = 0; i < st.n; i++) {
        const pvio_st_entry *e = &st.e[i];
        FZ_CHECK(e->name != NULL, "safetensors: entry %d has no name", i);
        if (i) FZ_CHECK(strcmp(st.e[i - 1].name, e->name) < 0, "safetensors: entries %d, %d not "
                        "sorted and distinct", i - 1, i);
        FZ_CHECK(strcmp(e->name, "__metadata__") != 0, "safetensors: a tensor named __metadata__");
        FZ_CHECK(e->dtype >= PV_F32 && e->dtype <= PV_BOOL, "safetensors: dtype %d", (int)e->dtype);
        FZ_CHECK(e->rank >= 0 && e->rank <= PV_MAX_RANK, "safetensors: rank %d", e->rank);
        for (int d = 0; d < e->rank; d++) FZ_CHECK(e->dims[d] >= 0, "safetensors: negative dim");
        FZ_CHECK(e->begin >= data0 && e->begin <= e->end && e->end <= size,
                 "safetensors: '%s' bytes [%llu, %llu) outside [%llu, %zu)", e->name,
                 (unsigned long long)e->begin, (unsigned long long)e->end,
                 (unsigned long long)data0, size);
        FZ_CHECK(e->end - e->begin == (uint64_t)numel_of(e) * pv_dtype_size(e->dtype),
                 "safetensors: '%s' holds %llu bytes for its shape", e->name,
                 (unsigned long long)(e->end - e->begin));
        FZ_CHECK(pvio_st_find(&st, e->name) == e, "safetensors: find('%s') misses", e->name);
        for (int j = 0; j < i; j++) {
            const pvio_st_entry *o = &st.e[j];
            bool apart = e->begin == e->end || o->begin == o->end || e->end <= o->begin ||
                         o->end <= e->begin;
            FZ_CHECK(apart, "safetensors: '%s' and '%s' overlap", o->name, e->name);
        }
        check_readers(&st, e);
    }
    FZ_CHECK(st.nmeta >= 0 && (st.nmeta == 0) == (st.meta_keys == NULL), "safetensors: nmeta %d",
             st.nmeta);
    for (int i = 0; i < st.nmeta; i++) {
        FZ_CHECK(st.meta_keys[i] && st.meta_vals[i], "safetensors: metadata %d NULL", i);
        FZ_CHECK(pvio_st_meta(&st, st.meta_keys[i]) == st.meta_vals[i],
                 "safetensors: meta('%s') is not its value", st.meta_keys[i]);
    }
    check_roundtrip(&st);
    pvio_st_close(&st);
    check_zeroed(&st, &msg);
    return 0;
}
