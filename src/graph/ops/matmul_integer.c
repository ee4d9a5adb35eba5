/* MatMulInteger (opset 10) and QLinearMatMul (opset 10): numpy-matmul shapes (1-D operands get a
 * unit dim, batch dims broadcast) over uint8 / int8 A and B.
 *   MatMulInteger: int32 Y = (A - a_zero_point) (B - b_zero_point), exact (wrapping).
 *   QLinearMatMul: Y = saturate(round(acc * a_scale * b_scale / y_scale) + y_zero_point), of
 *                  y_zero_point's dtype, acc the MatMulInteger sum (ONNX Runtime's float
 *                  requantization, round half to even).
 * a_zero_point: one value or one per row of A (MatMulInteger); b_zero_point and b_scale: one
 * value or one per column of B. A constant 2-D B (with constant zero points) is packed once in
 * prepare for the fast kernel (kernels/ref/quant.h); otherwise the kernel packs per call. */
#include "graph/ops/mm_geom.h"
#include "graph/ops/qparams.h"
#include "kernels/ref/quant.h"

#include <string.h>

#define U8S8 ((1u << PV_U8) | (1u << PV_I8))

typedef struct qmm_params {
    pvg_mm_geom g;            /* g.fold also needs one zero point for A: one tall GEMM */
    bool    qlinear;          /* QLinearMatMul */
    int     ia, ib, iza, izb; /* input indexes of A, B and their zero points (-1 none) */
    int64_t nza, nzb, nbs;    /* zero point / b_scale counts (1 or M / N) */
    pv_dtype yt;
    void   *packed_mem;       /* constant B packed (fast kernel only), else NULL */
    pvk_qpacked packed;
    size_t  ws_gemm;          /* the GEMM's workspace (past the zero points and the int32 sums) */
} qmm_params;
_Static_assert(sizeof(qmm_params) <= PVG_PARAMS_BYTES, "qmm params");

static size_t a64(size_t v) { return (v + 63) & ~(size_t)63; }

static pv_status shapes(pvg_prep *p, qmm_params *m, int64_t *odims, int *orank)
{
    return pvg_mm_geom_infer(p, &p->in[m->ia], &p->in[m->ib], &m->g, odims, orank);
}

static pv_status qmm_prepare(pvg_prep *p, bool qlinear)
{
    pv_status s;
    qmm_params *m = p->params;
    memset(m, 0, sizeof *m);
    m->qlinear = qlinear;
    if (qlinear) {
        if (p->nin != 8 || p->nout != 1)
            return pvg_prep_fail(p, PV_EFORMAT, "expects 8 inputs and 1 output, got %d and %d", p->nin, p->nout);
        m->ia = 0; m->iza = 2; m->ib = 3; m->izb = 5;
    } else {
        if (p->nin < 2 || p->nin > 4 || p->nout != 1)
            return pvg_prep_fail(p, PV_EFORMAT, "expects 2 to 4 inputs and 1 output, got %d and %d", p->nin, p->nout);
        m->ia = 0; m->ib = 1;
        m->iza = p->nin > 2 && pvg_has_in(p, 2) ? 2 : -1;
        m->izb = p->nin > 3 && pvg_has_in(p, 3) ? 3 : -1;
    }
    if ((s = pvg_check_dtype(p, m->ia, U8S8)) != PV_OK || (s = pvg_check_dtype(p, m->ib, U8S8)) != PV_OK) return s;
    int64_t odims[PV_MAX_RANK];
    int orank = 0;
    if ((s = shapes(p, m, odims, &orank)) != PV_OK) return s;
    int64_t one;
    m->nza = m->nzb = m->nbs = 1;
    if (m->iza >= 0 &&
        (s = pvg_qparam_check(p, m->iza, "a_zero_point", 1u << p->in[m->ia].dtype, qlinear ? 0 : m->g.M, &m->nza)) != PV_OK)
        return s;
    if (m->izb >= 0 && (s = pvg_qparam_check(p, m->izb, "b_zero_point", 1u << p->in[m->ib].dtype, m->g.N, &m->nzb)) != PV_OK)
        return s;
    if (m->nza > 1 && m->g.M == 1) m->nza = 1;
    if (m->nza > 1) m->g.fold = false;   /* per-row zero points repeat per batch */
    m->yt = PV_I32;
    if (qlinear) {
        if ((s = pvg_qparam_check(p, 1, "a_scale", 1u << PV_F32, 0, &one)) != PV_OK ||
            (s = pvg_qparam_check(p, 4, "b_scale", 1u << PV_F32, m->g.N, &m->nbs)) != PV_OK ||
            (s = pvg_qparam_check(p, 6, "y_scale", 1u << PV_F32, 0, &one)) != PV_OK ||
            (s = pvg_qparam_check(p, 7, "y_zero_point", U8S8, 0, &one)) != PV_OK)
            return s;
        if (!pvg_has_in(p, 1) || !pvg_has_in(p, 4) || !pvg_has_in(p, 6))
            return pvg_prep_fail(p, PV_EFORMAT, "inputs a_scale, b_scale and y_scale are required");
        m->yt = pvg_has_in(p, 7) ? p->in[7].dtype : PV_U8;
    }
    pvg_out_set(p, 0, m->yt, orank, odims);

    const pvc_tensor *B = &p->in[m->ib];
    int64_t rows = m->g.fold ? m->g.nbatch * m->g.M : m->g.M;
    bool bconst = B->data && (m->izb < 0 || p->in[m->izb].data);
    if (pvk_qgemm_fast() && bconst && B->rank == 2 && m->g.K > 0 && m->g.N > 0) {
        m->packed_mem = pvc_malloc_aligned(pvk_qpack_bytes(m->g.K, m->g.N));
        if (!m->packed_mem) return pvg_prep_fail(p, PV_ENOMEM, "packing B (%lld x %lld)", (long long)m->g.K, (long long)m->g.N);
        int32_t zb[1];
        int32_t *zbs = m->nzb > 1 ? pvc_malloc(sizeof(int32_t) * (size_t)m->g.N) : zb;
        if (!zbs) return pvg_prep_fail(p, PV_ENOMEM, "b_zero_point");
        pvg_qzp_read(m->izb >= 0 ? &p->in[m->izb] : &(pvc_tensor){ .rank = -1 }, m->nzb, zbs);
        pvk_qmat bm = { B->data, B->dtype, m->g.N, zbs, m->nzb };
        pvk_qpack_b(NULL, m->g.K, m->g.N, &bm, m->packed_mem, &m->packed);
        if (zbs != zb) pvc_free(zbs);
        p->consumed = 1u << m->ib;   /* run reads the packed copy only */
    }
    m->ws_gemm = pvk_qgemm_ws(rows, m->g.N, m->g.K, m->packed_mem != NULL);
    p->workspace = a64(sizeof(int32_t) * (size_t)(m->nza + m->nzb)) + a64(sizeof(float) * (size_t)m->nbs) +
                   (qlinear ? a64(sizeof(int32_t) * (size_t)(rows * m->g.N)) : 0) + m->ws_gemm;
    return PV_OK;
}

static void qmm_release(void *params)
{
    qmm_params *m = params;
    pvc_free_aligned(m->packed_mem);
    m->packed_mem = NULL;
}

static pv_status prep_MatMulInteger(pvg_prep *p) { return qmm_prepare(p, false); }
static pv_status prep_QLinearMatMul(pvg_prep *p) { return qmm_prepare(p, true); }

static void batch_offsets(const qmm_params *m, int64_t b, int64_t *ao, int64_t *bo)
{
    *ao = *bo = 0;
    for (int d = m->g.brank - 1; d >= 0; d--) {
        int64_t i = b % m->g.bdims[d];
        b /= m->g.bdims[d];
        *ao += i * m->g.astr[d];
        *bo += i * m->g.bstr[d];
    }
}

static pv_status qmm_run(const pvg_exec *x)
{
    const qmm_params *m = x->params;
    static const pvc_tensor none = { .rank = -1 };
    char *ws = x->ws;
    int32_t *za = (int32_t *)ws, *zb = za + m->nza;
    ws += a64(sizeof(int32_t) * (size_t)(m->nza + m->nzb));
    float *mult = (float *)ws;
    ws += a64(sizeof(float) * (size_t)m->nbs);
    pvg_qzp_read(m->iza >= 0 ? &x->in[m->iza] : &none, m->nza, za);
    pvg_qzp_read(m->izb >= 0 ? &x->in[m->izb] : &none, m->nzb, zb);
    int64_t rows = m->g.fold ? m->g.nbatch * m->g.M : m->g.M, nmat = m->g.fold ? 1 : m->g.nbatch;
    int32_t *acc = x->out[0].data;
    if (m->qlinear) {
        acc = (int32_t *)ws;
        ws += a64(sizeof(int32_t) * (size_t)(rows * m->g.N));
        float as = *(const float *)x->in[1].data, ys = *(const float *)x->in[6].data;
        const float *bs = x->in[4].data;
        for (int64_t n = 0; n < m->nbs; n++) mult[n] = as * bs[n] / ys;   /* ORT's order */
    }
    const pvc_tensor *A = &x->in[m->ia], *B = &x->in[m->ib];
    size_t ae = 1, be = 1;   /* 8-bit elements */
    int32_t yzp = 0;
    if (m->qlinear) pvg_qzp_read(&x->in[7], 1, &yzp);
    for (int64_t b = 0; b < nmat; b++) {
        int64_t ao = 0, bo = 0;
        if (!m->g.fold) batch_offsets(m, b, &ao, &bo);
        pvk_qmat am = { (const char *)A->data + ae * (size_t)(ao * m->g.M * m->g.K), A->dtype, m->g.K, m->iza >= 0 ? za : NULL, m->nza };
        pvk_qmat bm = { (const char *)B->data + be * (size_t)(bo * m->g.K * m->g.N), B->dtype, m->g.N, m->izb >= 0 ? zb : NULL, m->nzb };
        pvk_qgemm(x->pool, rows, m->g.N, m->g.K, &am, &bm, m->packed_mem ? &m->packed : NULL, acc, m->g.N, ws);
        if (m->qlinear)
            pvk_requantize(x->pool, acc, rows, m->g.N, mult, m->nbs, yzp, m->yt, (char *)x->out[0].data + (size_t)(b * rows * m->g.N));
        else
            acc += rows * m->g.N;
    }
    return PV_OK;
}

const pvg_op pvg_op_MatMulInteger = { "MatMulInteger", "", 0, prep_MatMulInteger, qmm_run, qmm_release };
const pvg_op pvg_op_QLinearMatMul = { "QLinearMatMul", "", 0, prep_QLinearMatMul, qmm_run, qmm_release };
