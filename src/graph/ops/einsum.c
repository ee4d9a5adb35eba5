/* Einsum with one or two operands, explicit ("ij,jk->ik") or implicit output; an ellipsis
 * ("...ij,...jk") is expanded into fresh letters that broadcast like numpy's.
 * Fast path (float, two operands, no letter repeated inside an operand, every summed letter in
 * both operands): letters are classed batch (A, B, out), m (A, out), n (B, out), k (A, B) and the
 * product is a batched GEMM on [b, m, k] x [b, k, n] -> [b, m, n]. Operands already laid out
 * that way (or k-transposed) are used in place; others are gathered into the workspace, as is
 * the result when the output order differs. Everything else (one operand, diagonals, letters
 * summed out of one operand, int32/int64) uses a direct loop over output and summed letters. */
#include "graph/ops/lowp.h"
#include "kernels/kernels.h"

#include <string.h>

#define EQ_MAX 64           /* letters in an equation (after removing spaces) */
#define EL_MAX 16           /* distinct letters: two operands of rank <= 8 */

typedef struct einsum_params {
    int     nops, nl, nol;          /* operands, distinct letters, output letters (letters 0..nol-1) */
    int64_t dim[EL_MAX];
    int64_t str[2][EL_MAX];         /* element strides of each operand per letter (repeats summed) */
    bool    bcast[2];               /* operand broadcast along an ellipsis letter (never in place) */
    /* fast path */
    bool    fast, a_in_place, a_trans, b_in_place, b_trans, c_in_place;
    int     nbl, nml, nnl, nkl;
    int     bl[EL_MAX], ml[EL_MAX], nl_[EL_MAX], kl[EL_MAX];   /* letter indexes per class */
    int64_t nb, M, N, K;
    int64_t ws_a, ws_b, ws_c;       /* float offsets of the gathered A, B, C in the workspace; -1 none */
} einsum_params;
_Static_assert(sizeof(einsum_params) <= PVG_PARAMS_BYTES, "einsum params");

static bool is_letter(char ch) { return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z'); }

/* 0..51 for letters (validated by the parser); 0 for anything else. */
static int letter_code(char ch)
{
    if (ch >= 'a' && ch <= 'z') return ch - 'a';
    if (ch >= 'A' && ch <= 'Z') return 26 + ch - 'A';
    return 0;
}

/* Does operand op's letter sequence equal the concatenation of classes c0, c1, c2? */
static bool seq_is(const char *term, const int *code2idx, const int *c0, int n0, const int *c1, int n1,
                   const int *c2, int n2)
{
    int pos = 0;
    const int *cls[3] = { c0, c1, c2 };
    int cn[3] = { n0, n1, n2 };
    for (int c = 0; c < 3; c++)
        for (int i = 0; i < cn[c]; i++, pos++)
            if (!term[pos] || code2idx[letter_code(term[pos])] != cls[c][i]) return false;
    return term[pos] == 0;
}

static void plan_fast(pvg_prep *p, einsum_params *e, char terms[2][EQ_MAX], const int *code2idx)
{
    e->fast = false;
    if (e->nops != 2) return;
    int cnt[2][EL_MAX];
    memset(cnt, 0, sizeof cnt);
    for (int op = 0; op < 2; op++)
        for (const char *c = terms[op]; *c; c++) cnt[op][code2idx[letter_code(*c)]]++;
    e->nbl = e->nml = e->nnl = e->nkl = 0;
    for (int l = 0; l < e->nl; l++) {
        if (cnt[0][l] > 1 || cnt[1][l] > 1) return;              /* diagonal */
        bool a = cnt[0][l], b = cnt[1][l];
        if (l < e->nol) {
            if (a && b) e->bl[e->nbl++] = l;
            else if (a) e->ml[e->nml++] = l;
            else e->nl_[e->nnl++] = l;
        } else {
            if (!(a && b)) return;                                /* summed out of one operand */
            e->kl[e->nkl++] = l;
        }
    }
    /* k letters in A's order, so A can often be used in place. */
    int nk = 0;
    for (const char *c = terms[0]; *c; c++) {
        int l = code2idx[letter_code(*c)];
        if (l >= e->nol) e->kl[nk++] = l;
    }
    e->nb = e->M = e->N = e->K = 1;
    for (int i = 0; i < e->nbl; i++) e->nb *= e->dim[e->bl[i]];
    for (int i = 0; i < e->nml; i++) e->M *= e->dim[e->ml[i]];
    for (int i = 0; i < e->nnl; i++) e->N *= e->dim[e->nl_[i]];
    for (int i = 0; i < e->nkl; i++) e->K *= e->dim[e->kl[i]];
    e->a_trans = e->b_trans = false;
    e->a_in_place = !e->bcast[0] && seq_is(terms[0], code2idx, e->bl, e->nbl, e->ml, e->nml, e->kl, e->nkl);
    if (!e->a_in_place && !e->bcast[0] && seq_is(terms[0], code2idx, e->bl, e->nbl, e->kl, e->nkl, e->ml, e->nml))
        e->a_in_place = e->a_trans = true;
    e->b_in_place = !e->bcast[1] && seq_is(terms[1], code2idx, e->bl, e->nbl, e->kl, e->nkl, e->nl_, e->nnl);
    if (!e->b_in_place && !e->bcast[1] && seq_is(terms[1], code2idx, e->bl, e->nbl, e->nl_, e->nnl, e->kl, e->nkl))
        e->b_in_place = e->b_trans = true;
    int outseq[EL_MAX];
    for (int i = 0; i < e->nol; i++) outseq[i] = i;
    int cat[EL_MAX], nc = 0;
    for (int i = 0; i < e->nbl; i++) cat[nc++] = e->bl[i];
    for (int i = 0; i < e->nml; i++) cat[nc++] = e->ml[i];
    for (int i = 0; i < e->nnl; i++) cat[nc++] = e->nl_[i];
    e->c_in_place = nc == e->nol && !memcmp(cat, outseq, sizeof(int) * (size_t)nc);
    int64_t off = 0;
    e->ws_a = e->a_in_place ? -1 : off;
    off += e->a_in_place ? 0 : e->nb * e->M * e->K;
    e->ws_b = e->b_in_place ? -1 : off;
    off += e->b_in_place ? 0 : e->nb * e->K * e->N;
    e->ws_c = e->c_in_place ? -1 : off;
    off += e->c_in_place ? 0 : e->nb * e->M * e->N;
    p->workspace += (size_t)off * sizeof(float);
    e->fast = true;
}

static pv_status einsum_prepare(pvg_prep *p)
{
    pv_status s;
    einsum_params *e = p->params;
    memset(e, 0, sizeof *e);
    const char *eq;
    if ((s = pvg_attr_string(p, "equation", NULL, &eq)) != PV_OK) return s;
    if (!eq) return pvg_prep_fail(p, PV_EFORMAT, "attribute 'equation' is missing");
    if (p->nin < 1 || p->nin > 2 || p->nout != 1)
        return pvg_prep_fail(p, PV_EUNSUPPORTED, "%d operands: only 1 or 2 are supported", p->nin);
    e->nops = p->nin;
    unsigned ok = PVG_FLOATS | (1u << PV_I32) | (1u << PV_I64);
    for (int i = 0; i < p->nin; i++) {
        if ((s = pvg_check_dtype(p, i, ok)) != PV_OK) return s;
        if (p->in[i].dtype != p->in[0].dtype) return pvg_prep_fail(p, PV_EFORMAT, "operands have different dtypes");
    }
    /* Split "t0,t1->out" into letter strings, dropping spaces; "..." becomes one '.'. */
    char raw[3][EQ_MAX];
    int nt = 0, len = 0;
    bool arrow = false;
    memset(raw, 0, sizeof raw);
    for (const char *c = eq; *c; c++) {
        char *term = raw[arrow ? 2 : nt];
        if (*c == ' ') continue;
        if (*c == ',' && !arrow) {
            if (++nt >= 2) return pvg_prep_fail(p, PV_EUNSUPPORTED, "attribute 'equation'='%s': more than 2 operands", eq);
            len = 0;
        } else if (c[0] == '-' && c[1] == '>' && !arrow) {
            arrow = true;
            c++;
            len = 0;
        } else if (c[0] == '.' && c[1] == '.' && c[2] == '.' && !strchr(term, '.') && len < EQ_MAX - 1) {
            term[len++] = '.';
            c += 2;
        } else if (is_letter(*c) && len < EQ_MAX - 1) {
            term[len++] = *c;
        } else {
            return pvg_prep_fail(p, PV_EFORMAT, "attribute 'equation'='%s': unexpected '%c'", eq, *c);
        }
    }
    if (nt + 1 != p->nin)
        return pvg_prep_fail(p, PV_EFORMAT, "attribute 'equation'='%s' names %d operands, the node has %d", eq, nt + 1, p->nin);
    /* Ellipsis: operand op's "..." stands for its ne[op] dims not named by letters; they get the
     * last ne[op] of nell fresh letters (right-aligned, as numpy broadcasts them). */
    bool used_code[52] = { false };
    int ne[2] = { 0, 0 }, nell = 0;
    for (int t = 0; t < 3; t++)
        for (const char *c = raw[t]; *c; c++) if (*c != '.') used_code[letter_code(*c)] = true;
    for (int op = 0; op < p->nin; op++) {
        bool ell = strchr(raw[op], '.') != NULL;
        int named = (int)strlen(raw[op]) - ell;
        ne[op] = p->in[op].rank - named;
        if (ne[op] < 0 || (!ell && ne[op] != 0))
            return pvg_prep_fail(p, PV_EFORMAT, "attribute 'equation'='%s': term %d has %d letters, operand rank is %d",
                                 eq, op, named, p->in[op].rank);
        nell = PVC_MAX(nell, ne[op]);
    }
    for (int t = 0; t < 3; t++)
        if ((int)strlen(raw[t]) + nell >= EQ_MAX)
            return pvg_prep_fail(p, PV_EFORMAT, "attribute 'equation'='%s': term %d is too long", eq, t);
    char fresh[PV_MAX_RANK];
    for (int code = 0, k = 0; k < nell; code++) {
        if (code == 52) return pvg_prep_fail(p, PV_EUNSUPPORTED, "attribute 'equation'='%s': too many letters", eq);
        if (!used_code[code]) fresh[k++] = (char)(code < 26 ? 'a' + code : 'A' + code - 26);
    }
    char terms[3][EQ_MAX];
    int ell_at[3] = { 0, 0, 0 };   /* where each term's ellipsis letters start */
    memset(terms, 0, sizeof terms);
    for (int t = 0; t < 3; t++) {
        int k = 0, take = t < 2 ? ne[t] : nell;
        for (const char *c = raw[t]; *c; c++) {
            if (*c != '.') { terms[t][k++] = *c; continue; }
            ell_at[t] = k;
            for (int i = nell - take; i < nell; i++) terms[t][k++] = fresh[i];
        }
    }
    if (!arrow) {   /* implicit output: the ellipsis, then letters used once in ASCII order (numpy) */
        int uses[52] = { 0 }, k = 0;
        for (int op = 0; op < p->nin; op++)
            for (const char *c = raw[op]; *c; c++) if (*c != '.') uses[letter_code(*c)]++;
        for (int i = 0; i < nell; i++) terms[2][k++] = fresh[i];
        for (int code = 26; code < 52; code++) if (uses[code] == 1) terms[2][k++] = (char)('A' + code - 26);
        for (int code = 0; code < 26; code++) if (uses[code] == 1) terms[2][k++] = (char)('a' + code);
    }
    /* Letter table: output letters first, in output order. */
    int in_input[52] = { 0 }, code2idx[52];
    for (int i = 0; i < 52; i++) code2idx[i] = -1;
    for (int op = 0; op < p->nin; op++)
        for (const char *c = terms[op]; *c; c++) in_input[letter_code(*c)] = 1;
    int no = 0;
    for (const char *c = terms[2]; *c; c++) {
        int code = letter_code(*c);
        if (!in_input[code]) return pvg_prep_fail(p, PV_EFORMAT, "attribute 'equation'='%s': output letter '%c' is not in any input", eq, *c);
        if (code2idx[code] >= 0) return pvg_prep_fail(p, PV_EFORMAT, "attribute 'equation'='%s': output letter '%c' repeats", eq, *c);
        code2idx[code] = no++;
    }
    e->nol = e->nl = no;
    for (int op = 0; op < p->nin; op++)
        for (const char *c = terms[op]; *c; c++)
            if (code2idx[letter_code(*c)] < 0) code2idx[letter_code(*c)] = e->nl++;
    if (e->nl > EL_MAX) return pvg_prep_fail(p, PV_EUNSUPPORTED, "attribute 'equation'='%s': more than %d letters", eq, EL_MAX);
    for (int l = 0; l < e->nl; l++) e->dim[l] = -1;
    for (int op = 0; op < p->nin; op++) {
        const pvc_tensor *t = &p->in[op];
        for (int d = 0; d < t->rank; d++) {
            int l = code2idx[letter_code(terms[op][d])];
            bool ell = d >= ell_at[op] && d < ell_at[op] + ne[op];   /* ellipsis dims broadcast (1 vs n) */
            int64_t v = t->dims[d];
            if (e->dim[l] >= 0 && e->dim[l] != v && !(ell && (e->dim[l] == 1 || v == 1)))
                return pvg_prep_fail(p, PV_EFORMAT, "attribute 'equation'='%s': letter '%c' has sizes %lld and %lld",
                                     eq, terms[op][d], (long long)e->dim[l], (long long)v);
            e->dim[l] = e->dim[l] < 0 ? v : PVC_MAX(e->dim[l], v);
        }
    }
    for (int op = 0; op < p->nin; op++) {
        const pvc_tensor *t = &p->in[op];
        int64_t st = 1;
        for (int d = t->rank - 1; d >= 0; d--) {
            int l = code2idx[letter_code(terms[op][d])];
            if (t->dims[d] == e->dim[l]) e->str[op][l] += st;   /* else broadcast: stride 0 */
            else e->bcast[op] = true;
            st *= t->dims[d];
        }
    }
    int64_t od[PV_MAX_RANK];
    if (no > PV_MAX_RANK) return pvg_prep_fail(p, PV_EUNSUPPORTED, "output rank %d exceeds %d", no, PV_MAX_RANK);
    for (int i = 0; i < no; i++) od[i] = e->dim[i];
    pvg_out_set(p, 0, p->in[0].dtype, no, od);
    p->workspace = 0;
    if (pvc_dtype_is_float(p->in[0].dtype)) plan_fast(p, e, terms, code2idx);
    p->workspace += pvg_lowp_bytes(p);
    return PV_OK;
}

/* ---- direct loop ---------------------------------------------------------------------------- */

typedef struct direct_ctx {
    const einsum_params *e;
    const void *in[2];
    void *out;
    pv_dtype t;
    int64_t nsum;       /* product of the summed letters' dims */
} direct_ctx;

static void direct_range(void *ctx, int64_t begin, int64_t end, int tid)
{
    const direct_ctx *c = ctx;
    const einsum_params *e = c->e;
    (void)tid;
    for (int64_t o = begin; o < end; o++) {
        int64_t base[2] = { 0, 0 }, rem = o;
        for (int l = e->nol - 1; l >= 0; l--) {
            int64_t i = rem % e->dim[l];
            rem /= e->dim[l];
            for (int op = 0; op < e->nops; op++) base[op] += i * e->str[op][l];
        }
        double facc = 0.0;
        uint64_t iacc = 0;
        for (int64_t s = 0; s < c->nsum; s++) {
            int64_t off[2] = { base[0], base[1] }, r = s;
            for (int l = e->nl - 1; l >= e->nol; l--) {
                int64_t i = r % e->dim[l];
                r /= e->dim[l];
                for (int op = 0; op < e->nops; op++) off[op] += i * e->str[op][l];
            }
            if (c->t == PV_F32) {
                double v = ((const float *)c->in[0])[off[0]];
                if (e->nops == 2) v *= ((const float *)c->in[1])[off[1]];
                facc += v;
            } else {
                uint64_t v = (uint64_t)pvc_get_i64(c->in[0], c->t, off[0]);
                if (e->nops == 2) v *= (uint64_t)pvc_get_i64(c->in[1], c->t, off[1]);
                iacc += v;
            }
        }
        if (c->t == PV_F32) ((float *)c->out)[o] = (float)facc;
        else if (c->t == PV_I32) ((int32_t *)c->out)[o] = (int32_t)(uint32_t)iacc;
        else ((int64_t *)c->out)[o] = (int64_t)iacc;
    }
}

static void run_direct(const pvg_exec *x)
{
    const einsum_params *e = x->params;
    direct_ctx c = { e, { x->in[0].data, e->nops == 2 ? x->in[1].data : NULL }, x->out[0].data, x->in[0].dtype, 1 };
    int64_t nout = 1;
    for (int l = 0; l < e->nol; l++) nout *= e->dim[l];
    for (int l = e->nol; l < e->nl; l++) c.nsum *= e->dim[l];
    pvc_parallel_for(x->pool, nout, PVC_MAX(1, 4096 / PVC_MAX(c.nsum, 1)), direct_range, &c);
}

/* ---- fast path ------------------------------------------------------------------------------- */

/* dst (contiguous over n dims) = src viewed with element strides sstr. */
static void gather(const float *src, int n, const int64_t *dims, const int64_t *sstr, float *dst)
{
    int64_t total = 1, idx[EL_MAX] = { 0 };
    for (int d = 0; d < n; d++) total *= dims[d];
    if (total == 0) return;
    int64_t inner = n ? dims[n - 1] : 1, is = n ? sstr[n - 1] : 0, off = 0;
    for (int64_t done = 0; done < total; done += inner) {
        for (int64_t i = 0; i < inner; i++) dst[done + i] = src[off + i * is];
        for (int d = n - 2; d >= 0; d--) {   /* odometer over the outer dims */
            off += sstr[d];
            if (++idx[d] < dims[d]) break;
            off -= sstr[d] * dims[d];
            idx[d] = 0;
        }
    }
}

/* Gathers operand op into [classes c0, c1, c2] order. */
static void gather_operand(const einsum_params *e, int op, const float *src, const int *c0, int n0,
                           const int *c1, int n1, const int *c2, int n2, float *dst)
{
    int64_t dims[EL_MAX], str[EL_MAX];
    int n = 0;
    const int *cls[3] = { c0, c1, c2 };
    int cn[3] = { n0, n1, n2 };
    for (int c = 0; c < 3; c++)
        for (int i = 0; i < cn[c]; i++, n++) {
            dims[n] = e->dim[cls[c][i]];
            str[n] = e->str[op][cls[c][i]];
        }
    gather(src, n, dims, str, dst);
}

typedef struct bmm_ctx {
    const einsum_params *e;
    const float *a, *b;
    float *c;
} bmm_ctx;

static void bmm_one(const bmm_ctx *c, pvc_pool *pool, int64_t i)
{
    const einsum_params *e = c->e;
    pvk_gemm_f32(pool, e->M, e->N, e->K, c->a + i * e->M * e->K, e->a_trans ? e->M : e->K, e->a_trans,
                 c->b + i * e->K * e->N, e->b_trans ? e->K : e->N, e->b_trans, c->c + i * e->M * e->N, e->N, 1.0f, 0.0f);
}

static void bmm_range(void *ctx, int64_t begin, int64_t end, int tid)
{
    (void)tid;
    for (int64_t i = begin; i < end; i++) bmm_one(ctx, NULL, i);
}

static void run_fast(const pvg_exec *x)
{
    const einsum_params *e = x->params;
    float *ws = x->ws;
    bmm_ctx c = { e, x->in[0].data, x->in[1].data, x->out[0].data };
    if (e->ws_a >= 0) {
        gather_operand(e, 0, c.a, e->bl, e->nbl, e->ml, e->nml, e->kl, e->nkl, ws + e->ws_a);
        c.a = ws + e->ws_a;
    }
    if (e->ws_b >= 0) {
        gather_operand(e, 1, c.b, e->bl, e->nbl, e->kl, e->nkl, e->nl_, e->nnl, ws + e->ws_b);
        c.b = ws + e->ws_b;
    }
    if (e->ws_c >= 0) c.c = ws + e->ws_c;
    if (e->nb >= pvc_pool_threads(x->pool)) pvc_parallel_for(x->pool, e->nb, 1, bmm_range, &c);
    else for (int64_t i = 0; i < e->nb; i++) bmm_one(&c, x->pool, i);
    if (e->ws_c >= 0) {   /* [b, m, n] -> output letter order */
        int64_t cstr[EL_MAX], st = 1, dims[EL_MAX], str[EL_MAX];
        const int *cls[3] = { e->bl, e->ml, e->nl_ };
        int cn[3] = { e->nbl, e->nml, e->nnl };
        for (int k = 2; k >= 0; k--)
            for (int i = cn[k] - 1; i >= 0; i--) {
                cstr[cls[k][i]] = st;
                st *= e->dim[cls[k][i]];
            }
        for (int l = 0; l < e->nol; l++) {
            dims[l] = e->dim[l];
            str[l] = cstr[l];
        }
        gather(c.c, e->nol, dims, str, x->out[0].data);
    }
}

static pv_status einsum_run_f32(const pvg_exec *x)
{
    const einsum_params *e = x->params;
    if (e->fast) run_fast(x);
    else run_direct(x);
    return PV_OK;
}

static pv_status einsum_run(const pvg_exec *x)
{
    if (x->in[0].dtype == PV_I32 || x->in[0].dtype == PV_I64) {
        run_direct(x);
        return PV_OK;
    }
    return pvg_lowp_needed(x) ? pvg_lowp_run(x, einsum_run_f32) : einsum_run_f32(x);
}

const pvg_op pvg_op_Einsum = { "Einsum", "", 0, einsum_prepare, einsum_run };
