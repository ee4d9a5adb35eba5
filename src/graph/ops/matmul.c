/* MatMul: numpy matmul. 1-D operands get a unit dim prepended (A) / appended (B) that is dropped
 * from the output; batch dims broadcast. f32 (f16/bf16 staged through f32) via the GEMM, with
 * the fused activation; int32/int64 exact (wrapping) with a plain triple loop.
 * When B has no batch (weights of a linear layer) A's batch folds into one tall GEMM.
 * f32 with a constant 2-D B (a linear layer's weights): made in prepare, freed by release, and
 * computed in p->precision: oneDNN's matmul where its measured table (kernels/dnnl/
 * matmul_dnnl.c) takes the shape, else the pre-packed GEMM (kernels/gemm_packed.h); B is
 * reordered/packed once there. Everything else keeps the per-call GEMM. */
#include "graph/ops/lowp.h"
#include "graph/ops/mm_geom.h"
#include "kernels/dnnl/matmul_dnnl.h"
#include "kernels/gemm_packed.h"
#include "kernels/ref/conv.h"

#include <string.h>


typedef struct matmul_params {
    pvg_mm_geom g;
    pvk_gemm_packed *packed;        /* constant 2-D B, f32: made in prepare (else NULL) */
    pvk_dnnl_matmul *dnnl;          /* ... or oneDNN's matmul, when its table takes the shape */
    int64_t pk_ws;                  /* packed: workspace offset of A packed once (-1: none) */
} matmul_params;
_Static_assert(sizeof(matmul_params) <= PVG_PARAMS_BYTES, "matmul params");

pv_status pvg_mm_geom_infer(pvg_prep *p, const pvc_tensor *A, const pvc_tensor *B, pvg_mm_geom *g,
                            int64_t *odims, int *orank)
{
    if (A->rank < 1 || B->rank < 1)
        return pvg_prep_fail(p, PV_EFORMAT, "operands must have rank >= 1 (got %d and %d)", A->rank, B->rank);
    memset(g, 0, sizeof *g);
    g->M = A->rank == 1 ? 1 : A->dims[A->rank - 2];
    g->K = A->dims[A->rank - 1];
    int64_t kb = B->rank == 1 ? B->dims[0] : B->dims[B->rank - 2];
    g->N = B->rank == 1 ? 1 : B->dims[B->rank - 1];
    if (kb != g->K)
        return pvg_prep_fail(p, PV_EFORMAT, "inner dims differ: A has K=%lld, B has K=%lld", (long long)g->K, (long long)kb);
    int ra = PVC_MAX(A->rank - 2, 0), rb = PVC_MAX(B->rank - 2, 0);
    g->brank = PVC_MAX(ra, rb);
    int64_t an = 1, bn = 1, as = 1, bs = 1;
    g->nbatch = 1;
    for (int d = g->brank - 1; d >= 0; d--) {   /* right-aligned, innermost first for strides */
        int ia = d - (g->brank - ra), ib = d - (g->brank - rb);
        int64_t da = ia >= 0 ? A->dims[ia] : 1, db = ib >= 0 ? B->dims[ib] : 1;
        if (da != db && da != 1 && db != 1)
            return pvg_prep_fail(p, PV_EFORMAT, "batch dims do not broadcast: %lld vs %lld", (long long)da, (long long)db);
        g->bdims[d] = da == 1 ? db : da;
        g->astr[d] = da == 1 ? 0 : as;
        g->bstr[d] = db == 1 ? 0 : bs;
        as *= da;
        bs *= db;
        an *= da;
        bn *= db;
        g->nbatch *= g->bdims[d];
        odims[d] = g->bdims[d];
    }
    int r = g->brank;
    if (A->rank > 1) odims[r++] = g->M;
    if (B->rank > 1) odims[r++] = g->N;
    *orank = r;
    g->fold = bn == 1 && an == g->nbatch;
    return PV_OK;
}

static pv_status matmul_prepare(pvg_prep *p)
{
    pv_status s;
    matmul_params *m = p->params;
    if (p->nin != 2 || p->nout != 1)
        return pvg_prep_fail(p, PV_EFORMAT, "expects 2 inputs and 1 output, got %d and %d", p->nin, p->nout);
    unsigned ok = PVG_FLOATS | (1u << PV_I32) | (1u << PV_I64);
    if ((s = pvg_check_dtype(p, 0, ok)) != PV_OK || (s = pvg_check_dtype(p, 1, ok)) != PV_OK) return s;
    const pvc_tensor *A = &p->in[0], *B = &p->in[1];
    if (A->dtype != B->dtype)
        return pvg_prep_fail(p, PV_EFORMAT, "A is %s but B is %s", pv_dtype_name(A->dtype), pv_dtype_name(B->dtype));
    memset(m, 0, sizeof *m);
    int64_t odims[PV_MAX_RANK];
    int orank;
    if ((s = pvg_mm_geom_infer(p, A, B, &m->g, odims, &orank)) != PV_OK) return s;
    pvg_out_set(p, 0, A->dtype, orank, odims);
    p->workspace = pvg_lowp_bytes(p);
    if (A->dtype == PV_F32 && B->data && B->rank == 2 && m->g.fold && m->g.K > 0 && m->g.N > 0) {
        int64_t rows = m->g.nbatch * m->g.M;
        pvc_msg msg = {{0}};
        if (rows > 0 && pvk_dnnl_matmul_pick(rows, m->g.N, m->g.K, p->precision, p->threads, false)) {
            if ((s = pvk_dnnl_matmul_create(rows, m->g.N, m->g.K, m->g.K, B->data, m->g.N, false, 1.0f, m->g.N, false, &p->node->act,
                                            p->precision, p->threads, &m->dnnl, &p->workspace, &msg)) != PV_OK)
                return pvg_prep_fail(p, s, "%s", msg.text);
            if (m->dnnl) { p->consumed = 1u << 1; return PV_OK; }   /* B reordered into oneDNN's copy */
        }
        if ((s = pvk_gemm_packed_create(m->g.K, m->g.N, B->data, m->g.N, false, 1.0f, p->precision, NULL, &m->packed, &msg)) != PV_OK)
            return pvg_prep_fail(p, s, "%s", msg.text);
        if (m->packed) p->consumed = 1u << 1;   /* B lives on packed */
        m->pk_ws = pvg_ws_append(p, pvk_gemm_packed_ws_bytes(m->packed, rows));
    }
    return PV_OK;
}

static void matmul_release(void *params)
{
    matmul_params *m = params;
    pvk_gemm_packed_free(m->packed);
    pvk_dnnl_matmul_free(m->dnnl);
    m->packed = NULL;
    m->dnnl = NULL;
}

/* Offsets (in matrices) of A and B for output batch b. */
static void batch_offsets(const matmul_params *m, int64_t b, int64_t *ao, int64_t *bo)
{
    *ao = *bo = 0;
    for (int d = m->g.brank - 1; d >= 0; d--) {
        int64_t i = b % m->g.bdims[d];
        b /= m->g.bdims[d];
        *ao += i * m->g.astr[d];
        *bo += i * m->g.bstr[d];
    }
}

typedef struct mm_ctx {
    const matmul_params *m;
    const void *a, *b;
    void *y;
    pv_dtype t;
} mm_ctx;

static void mm_batches_f32(void *ctx, int64_t begin, int64_t end, int tid)
{
    const mm_ctx *c = ctx;
    const matmul_params *m = c->m;
    (void)tid;
    for (int64_t b = begin; b < end; b++) {
        int64_t ao, bo;
        batch_offsets(m, b, &ao, &bo);
        pvk_gemm_f32(NULL, m->g.M, m->g.N, m->g.K, (const float *)c->a + ao * m->g.M * m->g.K, m->g.K, false,
                     (const float *)c->b + bo * m->g.K * m->g.N, m->g.N, false,
                     (float *)c->y + b * m->g.M * m->g.N, m->g.N, 1.0f, 0.0f);
    }
}

static pv_status matmul_run_f32(const pvg_exec *x)
{
    const matmul_params *m = x->params;
    const float *A = x->in[0].data, *B = x->in[1].data;
    float *Y = x->out[0].data;
    if (m->packed) {
        pvk_gemm_epilogue ep = { NULL, &x->node->act, NULL, NULL, 0 };
        pvk_gemm_packed_run_ws(m->packed, x->pool, m->g.nbatch * m->g.M, A, m->g.K, false, Y, m->g.N, 0.0f, &ep,
                               pvg_ws_at(x, m->pk_ws));
        return PV_OK;
    }
    if (m->g.fold) {
        pvk_gemm_f32(x->pool, m->g.nbatch * m->g.M, m->g.N, m->g.K, A, m->g.K, false, B, m->g.N, false, Y, m->g.N, 1.0f, 0.0f);
    } else {
        mm_ctx c = { m, A, B, Y, PV_F32 };
        if (m->g.nbatch >= pvc_pool_threads(x->pool)) {
            pvc_parallel_for(x->pool, m->g.nbatch, 1, mm_batches_f32, &c);   /* a GEMM per batch, one thread each */
        } else {
            for (int64_t b = 0; b < m->g.nbatch; b++) {
                int64_t ao, bo;
                batch_offsets(m, b, &ao, &bo);
                pvk_gemm_f32(x->pool, m->g.M, m->g.N, m->g.K, A + ao * m->g.M * m->g.K, m->g.K, false,
                             B + bo * m->g.K * m->g.N, m->g.N, false, Y + b * m->g.M * m->g.N, m->g.N, 1.0f, 0.0f);
            }
        }
    }
    pvk_bias_act_f32(x->pool, Y, 1, m->g.nbatch * m->g.M, m->g.N, NULL, &x->node->act);
    return PV_OK;
}

/* Integer rows: row r = batch * M + i. Wrapping arithmetic in uint64 (exact modulo 2^bits). */
static void mm_rows_int(void *ctx, int64_t begin, int64_t end, int tid)
{
    const mm_ctx *c = ctx;
    const matmul_params *m = c->m;
    (void)tid;
    for (int64_t r = begin; r < end; r++) {
        int64_t b = r / m->g.M, i = r % m->g.M, ao, bo;
        batch_offsets(m, b, &ao, &bo);
        int64_t abase = (ao * m->g.M + i) * m->g.K, bbase = bo * m->g.K * m->g.N;
        for (int64_t j = 0; j < m->g.N; j++) {
            uint64_t acc = 0;
            if (c->t == PV_I32) {
                const int32_t *a = (const int32_t *)c->a + abase, *bm = (const int32_t *)c->b + bbase + j;
                for (int64_t k = 0; k < m->g.K; k++) acc += (uint64_t)(int64_t)a[k] * (uint64_t)(int64_t)bm[k * m->g.N];
                ((int32_t *)c->y)[r * m->g.N + j] = (int32_t)(uint32_t)acc;
            } else {
                const int64_t *a = (const int64_t *)c->a + abase, *bm = (const int64_t *)c->b + bbase + j;
                for (int64_t k = 0; k < m->g.K; k++) acc += (uint64_t)a[k] * (uint64_t)bm[k * m->g.N];
                ((int64_t *)c->y)[r * m->g.N + j] = (int64_t)acc;
            }
        }
    }
}

static pv_status matmul_run(const pvg_exec *x)
{
    const matmul_params *m = x->params;
    pv_dtype t = x->in[0].dtype;
    if (t == PV_I32 || t == PV_I64) {
        mm_ctx c = { m, x->in[0].data, x->in[1].data, x->out[0].data, t };
        pvc_parallel_for(x->pool, m->g.nbatch * m->g.M, 16, mm_rows_int, &c);
        return PV_OK;
    }
    if (m->dnnl) return pvk_dnnl_matmul_run(m->dnnl, x->in[0].data, NULL, x->out[0].data, x->ws);
    return pvg_lowp_needed(x) ? pvg_lowp_run(x, matmul_run_f32) : matmul_run_f32(x);
}

const pvg_op pvg_op_MatMul = { "MatMul", "", PVG_OP_FUSE_ACT, matmul_prepare, matmul_run, matmul_release };
