/* Multidirectional (numpy) broadcasting: output shapes, per-input element strides and a row
 * iterator shared by the binary, comparison and Where kernels.
 *
 * pvk_broadcast_rows coalesces the iteration space first: 1-dims are dropped and adjacent dims
 * are merged where every input is contiguous (or broadcast) across both, so a same-shape
 * operation becomes one long row and "tensor op per-channel vector" becomes rows of the
 * spatial size. Row callbacks then see only element strides 0 or 1 and can use tight loops. */
#include "kernels/ref/eltwise.h"

#define ROW_GRAIN 16384

void pvk_broadcast_strides(int r, const int64_t *out_dims, int ri, const int64_t *in_dims,
                           int64_t *estrides)
{
    (void)out_dims;
    int64_t s = 1;
    for (int i = r - 1; i >= 0; i--) {
        int j = i - (r - ri);
        if (j < 0) { estrides[i] = 0; continue; }
        estrides[i] = in_dims[j] == 1 ? 0 : s;
        s *= in_dims[j];
    }
}

bool pvk_broadcast_shape(int n, const pvc_tensor *const *in, int *rank, int64_t *dims)
{
    int r = 0;
    for (int k = 0; k < n; k++) r = PVC_MAX(r, in[k]->rank);
    for (int i = r - 1; i >= 0; i--) {
        int64_t d = 1;
        for (int k = 0; k < n; k++) {
            int j = i - (r - in[k]->rank);
            int64_t e = j < 0 ? 1 : in[k]->dims[j];
            if (e == 1) continue;
            if (d == 1) d = e;
            else if (d != e) return false;
        }
        dims[i] = d;
    }
    *rank = r;
    return true;
}

typedef struct bc_job {
    int         nin, r;
    int64_t     dims[PV_MAX_RANK];
    int64_t     st[PVK_BCAST_MAX_IN][PV_MAX_RANK];
    const char *base[PVK_BCAST_MAX_IN];
    size_t      esz[PVK_BCAST_MAX_IN];
    char       *ybase;
    size_t      ysz;
    pvk_row_fn  fn;
    const void *ctx;
} bc_job;

/* Output elements [begin, end): walk the coalesced index, one callback per (partial) row. */
static void bc_chunk(void *vctx, int64_t begin, int64_t end, int tid)
{
    (void)tid;
    const bc_job *j = vctx;
    int last = j->r - 1;
    int64_t coord[PV_MAX_RANK], off[PVK_BCAST_MAX_IN] = { 0 };
    int64_t rem = begin;
    for (int d = last; d >= 0; d--) {
        coord[d] = rem % j->dims[d];
        rem /= j->dims[d];
    }
    for (int k = 0; k < j->nin; k++)
        for (int d = 0; d <= last; d++) off[k] += coord[d] * j->st[k][d];
    const void *xp[PVK_BCAST_MAX_IN];
    int64_t s[PVK_BCAST_MAX_IN];
    for (int k = 0; k < j->nin; k++) s[k] = j->st[k][last];
    for (int64_t pos = begin; pos < end;) {
        int64_t len = PVC_MIN(j->dims[last] - coord[last], end - pos);
        for (int k = 0; k < j->nin; k++) xp[k] = j->base[k] + off[k] * (int64_t)j->esz[k];
        j->fn(j->ctx, len, j->ybase + pos * (int64_t)j->ysz, xp, s);
        pos += len;
        coord[last] += len;
        for (int k = 0; k < j->nin; k++) off[k] += len * s[k];
        for (int d = last; d > 0 && coord[d] == j->dims[d]; d--) {   /* carry */
            coord[d] = 0;
            coord[d - 1]++;
            for (int k = 0; k < j->nin; k++) off[k] += j->st[k][d - 1] - j->dims[d] * j->st[k][d];
        }
    }
}

void pvk_broadcast_rows(pvc_pool *pool, int nin, const pvc_tensor *const *in, pvc_tensor *y,
                        pvk_row_fn fn, const void *ctx)
{
    int64_t total = pvc_numel(y);
    if (total <= 0) return;
    int64_t full[PVK_BCAST_MAX_IN][PV_MAX_RANK];
    for (int k = 0; k < nin; k++)
        pvk_broadcast_strides(y->rank, y->dims, in[k]->rank, in[k]->dims, full[k]);

    /* Coalesce, innermost first: a dim joins the group inside it when, for every input, its
     * stride equals the group's stride times the group's extent (true for 0 strides too). */
    bc_job j;
    j.nin = nin;
    j.r = 0;
    int64_t rd[PV_MAX_RANK], rs[PVK_BCAST_MAX_IN][PV_MAX_RANK];
    for (int i = y->rank - 1; i >= 0; i--) {
        if (y->dims[i] == 1) continue;
        bool merge = j.r > 0;
        for (int k = 0; merge && k < nin; k++)
            merge = full[k][i] == rs[k][j.r - 1] * rd[j.r - 1];
        if (merge) { rd[j.r - 1] *= y->dims[i]; continue; }
        rd[j.r] = y->dims[i];
        for (int k = 0; k < nin; k++) rs[k][j.r] = full[k][i];
        j.r++;
    }
    if (j.r == 0) {              /* a single element */
        rd[0] = 1;
        for (int k = 0; k < nin; k++) rs[k][0] = 0;
        j.r = 1;
    }
    for (int d = 0; d < j.r; d++) {
        j.dims[d] = rd[j.r - 1 - d];
        for (int k = 0; k < nin; k++) j.st[k][d] = rs[k][j.r - 1 - d];
    }
    for (int k = 0; k < nin; k++) {
        j.base[k] = in[k]->data;
        j.esz[k] = pv_dtype_size(in[k]->dtype);
    }
    j.ybase = y->data;
    j.ysz = pv_dtype_size(y->dtype);
    j.fn = fn;
    j.ctx = ctx;
    pvc_parallel_for(pool, total, ROW_GRAIN, bc_chunk, &j);
}
