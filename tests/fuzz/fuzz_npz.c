/* Fuzz target: .npz archives (pvio_npz_parse) and the API's npz input path (pv_input_decode
 * with format "npz": find the array, re-serialize it, read it as a cloud). A parsed archive
 * must serialize (STORED and DEFLATED) and parse back to the same names, shapes and bytes. */
#include "fuzz.h"
#include "api/model_api.h"
#include "io/io.h"

#include <string.h>

static void same_arrays(const pvio_arrays *a, const pvio_arrays *b, const char *how)
{
    FZ_CHECK(a->n == b->n, "npz %s: %d arrays became %d", how, a->n, b->n);
    for (int i = 0; i < a->n; i++) {
        const pvc_tensor *x = &a->a[i].t, *y = &b->a[i].t;
        FZ_CHECK(strcmp(a->a[i].name, b->a[i].name) == 0, "npz %s: name '%s' became '%s'", how,
                 a->a[i].name, b->a[i].name);
        FZ_CHECK(x->dtype == y->dtype && x->rank == y->rank &&
                 memcmp(x->dims, y->dims, sizeof(x->dims[0]) * (size_t)x->rank) == 0,
                 "npz %s: array '%s' changed dtype or shape", how, a->a[i].name);
        FZ_CHECK(pvc_nbytes(x) == 0 || memcmp(x->data, y->data, pvc_nbytes(x)) == 0,
                 "npz %s: array '%s' changed data", how, a->a[i].name);
    }
}

static void round_trip(const pvio_arrays *arrs, bool deflate)
{
    const char *how = deflate ? "deflated round trip" : "stored round trip";
    void *buf = NULL;
    size_t len = 0;
    pvc_msg m = { { 0 } };
    pv_status s = pvio_npz_serialize(arrs, deflate, &buf, &len, &m);
    if (s == PV_ENOMEM) return;
    FZ_CHECK(s == PV_OK, "npz: a parsed archive does not serialize: %s", m.text);
    pvio_arrays back = { 0 };
    s = pvio_npz_parse(buf, len, &back, &m);
    FZ_CHECK(s == PV_OK || s == PV_ENOMEM, "npz %s: re-parse failed: %s", how, m.text);
    if (s == PV_OK) same_arrays(arrs, &back, how);
    pvio_arrays_free(&back);
    pvc_free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    pvio_arrays arrs;
    memset(&arrs, 0x5a, sizeof arrs);
    pvc_msg msg = { { 0 } };
    pv_status s = pvio_npz_parse(data, size, &arrs, &msg);
    if (s != PV_OK) {
        fz_check_error(s, &msg, "npz");
        FZ_CHECK(arrs.a == NULL && arrs.n == 0, "npz: failed (%s) but the set is not zeroed", msg.text);
    } else {
        FZ_CHECK(arrs.n >= 0 && (arrs.n == 0 || arrs.a), "npz: %d arrays, a %p", arrs.n, (void *)arrs.a);
        for (int i = 0; i < arrs.n; i++) {
            const pvio_array *a = &arrs.a[i];
            FZ_CHECK(a->name && a->name[0], "npz: array %d has no name", i);
            FZ_CHECK(a->t.name == a->name, "npz: array '%s': t.name is not the entry name", a->name);
            fz_check_tensor(&a->t, "npz array");
            FZ_CHECK(pvio_arrays_find(&arrs, a->name) == a, "npz: name '%s' is not unique", a->name);
        }
        round_trip(&arrs, false);
        round_trip(&arrs, true);
        pvio_arrays_free(&arrs);
        FZ_CHECK(arrs.a == NULL && arrs.n == 0, "npz: pvio_arrays_free left the set non-zero");
    }

    /* the API door: the "points" array (or the only one) as a cloud */
    pv_input in = { .name = "fuzz", .format = "npz", .data = data, .len = size };
    pvio_cloud c;
    pvc_msg mc = { { 0 } };
    pv_status sc = pv_input_decode(&in, &c, &mc);
    /* deflated entries may legitimately expand far beyond the input; the bound is the npz limit */
    fz_check_cloud(sc, &c, &mc, size, (uint64_t)1 << 40, "npz input");
    if (sc == PV_OK) FZ_CHECK(s == PV_OK || s == PV_ENOMEM, "npz input: decoded an archive pvio_npz_parse refused");
    pvio_cloud_free(&c);
    return 0;
}
