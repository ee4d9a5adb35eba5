/* Small-node detection for the planner: a node whose whole work takes a few microseconds on one
 * thread loses more to waking the pool (and, at its end, waiting for every worker to arrive)
 * than splitting it saves, and on a loaded machine the wait for a descheduled worker can take a
 * scheduler tick. The planner prepares such nodes for one thread and runs them without the pool
 * (plan.c). The estimate is deliberately rough: element reads and writes, plus the
 * multiply-adds of the contracting operators, in units of about a nanosecond of one core. */
#include "graph/plan_impl.h"

#include <stdlib.h>
#include <string.h>

/* ~30 us of one core: below it a fork/join (a few us warm, far more under load) is not repaid. */
#define SOLO_WORK_DEFAULT 32768.0
/* multiply-adds per element-operation unit: small contractions run ~20 MAC/ns on one core */
#define MACS_PER_UNIT 20.0

double pvg_solo_limit(void)
{
    const char *e = getenv("PERCEIVE_SOLO_WORK");
    if (!e || !*e) return SOLO_WORK_DEFAULT;
    char *end;
    double v = strtod(e, &end);
    return end != e && v >= 0 ? v : SOLO_WORK_DEFAULT;
}

static double numel_of(const pvc_tensor *t) { return t->rank < 0 ? 0.0 : (double)pvc_numel(t); }

static bool named(const pvg_node *n, const char *op) { return !strcmp(n->op_type, op); }

double pvg_node_work(const pvg_node *n, const pvc_tensor *in, const pvc_tensor *out)
{
    bool onnx = !*n->domain || !strcmp(n->domain, "ai.onnx");
    /* custom domains (bundles' ops, perceive::Attention): unknown cost, keep the pool; the
     * element-wise perceive::Gelu is the exception */
    if (!onnx && !(!strcmp(n->domain, "perceive") && named(n, "Gelu"))) return -1;
    /* control flow, recurrences and Einsum hide their work in attributes or subgraphs */
    static const char *const opaque[] = { "Loop", "Scan", "If", "LSTM", "GRU", "RNN", "Einsum" };
    for (size_t i = 0; i < PVC_COUNTOF(opaque); i++) if (named(n, opaque[i])) return -1;
    double elems = 0;
    for (int k = 0; k < n->nin; k++) if (n->in[k] >= 0 && !in[k].data) elems += numel_of(&in[k]);
    for (int k = 0; k < n->nout; k++) if (n->out[k] >= 0) elems += numel_of(&out[k]);
    double macs = 0;
    int wi = named(n, "QLinearConv") ? 3 : 1;
    const pvc_tensor *w = n->nin > wi && n->in[wi] >= 0 ? &in[wi] : NULL;
    const pvc_tensor *y = n->nout > 0 && n->out[0] >= 0 ? &out[0] : NULL;
    const pvc_tensor *x = n->nin > 0 && n->in[0] >= 0 ? &in[0] : NULL;
    if (strstr(n->op_type, "Conv") && w && y && x && w->rank >= 1 && w->dims[0] > 0) {
        /* Conv: per output element cin/group * k multiply-adds; ConvTranspose: per input element
         * cout/group * k (both are W's numel over its first dimension) */
        double per = numel_of(w) / (double)w->dims[0];
        macs = per * (strstr(n->op_type, "Transpose") ? numel_of(x) : numel_of(y));
    } else if ((strstr(n->op_type, "MatMul") || named(n, "Gemm")) && x && y && x->rank >= 1) {
        /* K = A's elements per output row (Gemm's transA included: A is M x K either way) */
        double rows = y->rank >= 2 ? numel_of(y) / (double)(y->dims[y->rank - 1] ? y->dims[y->rank - 1] : 1) : 1;
        double k = x->rank >= 2 ? numel_of(x) / (rows > 0 ? rows : 1) : numel_of(x);
        if (strstr(n->op_type, "MatMul")) k = (double)x->dims[x->rank - 1];
        macs = numel_of(y) * k;
    }
    return elems + macs / MACS_PER_UNIT;
}
