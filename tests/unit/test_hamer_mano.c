/* Tests for src/models/hamer/mano.c: rot6d (identity, a hand-computed case, orthonormality,
 * the eps path), the MANO arrays (alloc/free under allocation failure, check errors naming the
 * array and index), the synthetic template (passes check, deterministic bytes pinned by a
 * hash, mesh structure: one consistently wound surface with a 16-edge wrist hole, outward,
 * every vertex used, regressor/weight rows, tips at the finger ends), MANO forward (rest pose
 * gives v_template exactly, a pure global rotation turns everything about J0, and random poses
 * and betas against a literal re-statement of spec 5.2 with 4x4 matrices written here, also
 * with non-dyadic weights), and the camera (spec 4.5 numbers, crop/image consistency, and a
 * left hand equal to the mirrored right-hand run). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "models/hamer/mano.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { NV = PVM_HAMER_NV, NF = PVM_HAMER_NF, NJ = PVM_HAMER_NJ, NB = PVM_HAMER_NBETAS,
       NPD = PVM_HAMER_NPOSEDIRS, NKP = PVM_HAMER_NKP };

/* FNV-1a 64 of every synthetic array for seed 1; update only on purpose (the template's bytes
 * are part of generated artifacts and fixtures). */
#define SYNTH_HASH_SEED1 0x6e76b3ad571d02f0ull

/* ---- helpers -------------------------------------------------------------------------------- */

/* spec 5.2's mano_to_openpose, restated here */
static const int op[NKP] = { 0, 13, 14, 15, 16, 1, 2, 3, 17, 4, 5, 6, 18, 10, 11, 12, 19, 7, 8, 9,
                             20 };

static uint64_t rng_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static double rng_unit(uint64_t *s)   /* [-1, 1) */
{
    return (double)(rng_next(s) >> 11) / 9007199254740992.0 * 2.0 - 1.0;
}

static void synth(pvm_hamer_mano *m, uint64_t seed)
{
    assert_int_equal(pvm_hamer_mano_alloc(m), PV_OK);
    pvm_hamer_mano_synth(seed, m);
}

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

static uint64_t mano_hash(const pvm_hamer_mano *m)
{
    uint64_t h = 0xcbf29ce484222325ull;
    h = fnv(h, m->v_template, sizeof(float) * NV * 3);
    h = fnv(h, m->shapedirs, sizeof(float) * NV * 3 * NB);
    h = fnv(h, m->posedirs, sizeof(float) * NV * 3 * NPD);
    h = fnv(h, m->J_regressor, sizeof(float) * NJ * NV);
    h = fnv(h, m->weights, sizeof(float) * NV * NJ);
    h = fnv(h, m->faces, sizeof(int32_t) * NF * 3);
    h = fnv(h, m->parents, sizeof m->parents);
    return h;
}

static void identity16(float *R)
{
    memset(R, 0, sizeof(float) * NJ * 9);
    for (int j = 0; j < NJ; j++) R[j * 9 + 0] = R[j * 9 + 4] = R[j * 9 + 8] = 1.0f;
}

/* Rodrigues rotation about a unit axis. */
static void axis_angle(const double ax[3], double th, double R[9])
{
    double c = cos(th), s = sin(th), C = 1 - c, x = ax[0], y = ax[1], z = ax[2];
    double r[9] = { c + x * x * C, x * y * C - z * s, x * z * C + y * s,
                    y * x * C + z * s, c + y * y * C, y * z * C - x * s,
                    z * x * C - y * s, z * y * C + x * s, c + z * z * C };
    memcpy(R, r, sizeof r);
}

static void random_pose(uint64_t *s, double scale, float *R)
{
    for (int j = 0; j < NJ; j++) {
        double ax[3] = { rng_unit(s), rng_unit(s), rng_unit(s) }, n = 0, Rd[9];
        for (int c = 0; c < 3; c++) n += ax[c] * ax[c];
        n = sqrt(n);
        for (int c = 0; c < 3; c++) ax[c] /= n;
        axis_angle(ax, scale * rng_unit(s), Rd);
        for (int e = 0; e < 9; e++) R[j * 9 + e] = (float)Rd[e];
    }
}

static double rest_joint(const pvm_hamer_mano *m, int j, int c)
{
    double a = 0;
    for (int v = 0; v < NV; v++) a += (double)m->J_regressor[j * NV + v] * m->v_template[v * 3 + c];
    return a;
}

/* ---- rot6d ---------------------------------------------------------------------------------- */

static void test_rot6d_cases(void **state)
{
    (void)state;
    float R[9];
    const float id6[6] = { 1, 0, 0, 0, 1, 0 };
    pvm_hamer_rot6d(id6, 1, R);
    const float I[9] = { 1, 0, 0, 0, 1, 0, 0, 0, 1 };
    assert_memory_equal(R, I, sizeof I);

    /* a1 = (3,0,4) -> b1 = (0.6, 0, 0.8); a2 = (1,2,0): b1.a2 = 0.6, u = (0.64, 2, -0.48),
     * |u| = sqrt(4.64); b3 = b1 x b2 = (-1.6, 0.8, 1.2) / sqrt(4.64). Columns b1 b2 b3. */
    const float v6[6] = { 3, 0, 4, 1, 2, 0 };
    pvm_hamer_rot6d(v6, 1, R);
    double n = sqrt(4.64);
    const double want[9] = { 0.6, 0.64 / n, -1.6 / n, 0.0, 2.0 / n, 0.8 / n, 0.8, -0.48 / n, 1.2 / n };
    for (int e = 0; e < 9; e++) assert_true(fabs(R[e] - want[e]) < 1e-7);

    /* the eps path: a zero a1 gives zeros, not NaN */
    const float z6[6] = { 0, 0, 0, 0, 0, 0 };
    pvm_hamer_rot6d(z6, 1, R);
    for (int e = 0; e < 9; e++) assert_true(R[e] == 0.0f);

    /* HaMeR's degenerate mean global orientation (a2 = -a1) stays finite */
    const float d6[6] = { 1, 0, 0, -1, 0, 0 };
    pvm_hamer_rot6d(d6, 1, R);
    for (int e = 0; e < 9; e++) assert_true(isfinite(R[e]));
}

static void test_rot6d_orthonormal(void **state)
{
    (void)state;
    uint64_t s = 5;
    float v6[64 * 6], R[64 * 9];
    for (int i = 0; i < 64 * 6; i++) v6[i] = (float)(3.0 * rng_unit(&s));
    pvm_hamer_rot6d(v6, 64, R);
    for (int j = 0; j < 64; j++) {
        const float *r = R + j * 9;
        for (int a = 0; a < 3; a++)
            for (int b = 0; b < 3; b++) {
                double d = 0;
                for (int k = 0; k < 3; k++) d += (double)r[k * 3 + a] * r[k * 3 + b];
                assert_true(fabs(d - (a == b)) < 1e-6);
            }
        double det = r[0] * (r[4] * r[8] - r[5] * r[7]) - r[1] * (r[3] * r[8] - r[5] * r[6]) +
                     r[2] * (r[3] * r[7] - r[4] * r[6]);
        assert_true(fabs(det - 1.0) < 1e-6);
        /* first column along a1; second in the (a1, a2) plane on a2's side */
        const float *v = v6 + j * 6;
        double na = sqrt((double)v[0] * v[0] + (double)v[1] * v[1] + (double)v[2] * v[2]);
        for (int k = 0; k < 3; k++) assert_true(fabs(r[k * 3] - v[k] / na) < 1e-6);
        assert_true(r[1] * v[3] + r[4] * v[4] + r[7] * v[5] > 0);
        assert_true(fabs(r[2] * v[3] + r[5] * v[4] + r[8] * v[5]) < 1e-5);
    }
}

/* ---- arrays --------------------------------------------------------------------------------- */

static void test_mano_alloc_free(void **state)
{
    (void)state;
    pvm_hamer_mano m;
    for (long k = 1; k <= 6; k++) {
        pvc_alloc_test_begin(k);
        assert_int_equal(pvm_hamer_mano_alloc(&m), PV_ENOMEM);
        assert_true(pvc_alloc_failed());
        assert_null(m.v_template);
        assert_null(m.faces);
        assert_int_equal(pvc_alloc_live(), 0);
        pvc_alloc_test_end();
    }
    pvc_alloc_test_begin(0);
    assert_int_equal(pvm_hamer_mano_alloc(&m), PV_OK);
    assert_int_equal(m.parents[0], -1);
    assert_int_equal(m.parents[15], 14);
    pvm_hamer_mano_free(&m);
    pvm_hamer_mano_free(&m);   /* twice is fine */
    pvm_hamer_mano_free(NULL);
    assert_int_equal(pvc_alloc_live(), 0);
    pvc_alloc_test_end();
}

static void expect_bad_mano(const pvm_hamer_mano *m, const char *needle)
{
    pvc_msg msg = { "" };
    assert_int_equal(pvm_hamer_mano_check(m, &msg), PV_EFORMAT);
    if (!strstr(msg.text, needle)) fail_msg("message '%s' lacks '%s'", msg.text, needle);
}

static void test_mano_check_errors(void **state)
{
    (void)state;
    pvm_hamer_mano m;
    synth(&m, 1);
    pvc_msg msg = { "" };
    assert_int_equal(pvm_hamer_mano_check(&m, &msg), PV_OK);

    m.parents[0] = 0;
    expect_bad_mano(&m, "mano.parents[0] = 0");
    m.parents[0] = -1;
    m.parents[5] = 7;
    expect_bad_mano(&m, "mano.parents[5] = 7");
    m.parents[5] = -1;
    expect_bad_mano(&m, "mano.parents[5] = -1");
    m.parents[5] = 4;

    int32_t f = m.faces[1000];
    m.faces[1000] = NV;
    expect_bad_mano(&m, "mano.faces[1000] = 778");
    m.faces[1000] = -1;
    expect_bad_mano(&m, "mano.faces[1000] = -1");
    m.faces[1000] = f;

    float p = m.posedirs[123456];
    m.posedirs[123456] = NAN;
    expect_bad_mano(&m, "mano.posedirs[123456]");
    m.posedirs[123456] = p;
    m.weights[77] = INFINITY;
    expect_bad_mano(&m, "mano.weights[77]");
    m.weights[77] = 0;
    m.J_regressor[5] = -INFINITY;
    expect_bad_mano(&m, "mano.J_regressor[5]");
    m.J_regressor[5] = 0;
    m.shapedirs[9] = NAN;
    expect_bad_mano(&m, "mano.shapedirs[9]");
    m.shapedirs[9] = 0;
    m.v_template[2] = NAN;
    expect_bad_mano(&m, "mano.v_template[2]");
    pvm_hamer_mano_free(&m);
    expect_bad_mano(&m, "mano.v_template is missing");
}

/* ---- synthetic template --------------------------------------------------------------------- */

static void test_synth_deterministic(void **state)
{
    (void)state;
    pvm_hamer_mano a, b;
    synth(&a, 1);
    synth(&b, 1);
    uint64_t ha = mano_hash(&a), hb = mano_hash(&b);
    assert_true(ha == hb);
    if (ha != SYNTH_HASH_SEED1)
        fail_msg("synthetic MANO bytes changed: hash 0x%016llxull, recorded 0x%016llxull",
                 (unsigned long long)ha, (unsigned long long)SYNTH_HASH_SEED1);
    /* another seed: the same geometry, other blend shapes */
    pvm_hamer_mano_synth(2, &b);
    assert_memory_equal(a.v_template, b.v_template, sizeof(float) * NV * 3);
    assert_memory_equal(a.faces, b.faces, sizeof(int32_t) * NF * 3);
    assert_true(memcmp(a.posedirs, b.posedirs, sizeof(float) * NV * 3 * NPD) != 0);
    assert_true(mano_hash(&b) != ha);
    pvm_hamer_mano_free(&a);
    pvm_hamer_mano_free(&b);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static void test_synth_mesh(void **state)
{
    (void)state;
    pvm_hamer_mano m;
    synth(&m, 1);
    pvc_msg msg = { "" };
    assert_int_equal(pvm_hamer_mano_check(&m, &msg), PV_OK);

    /* faces: distinct corners, every vertex used */
    int used[NV] = { 0 };
    for (int f = 0; f < NF; f++) {
        const int32_t *t = m.faces + f * 3;
        assert_true(t[0] != t[1] && t[1] != t[2] && t[0] != t[2]);
        for (int k = 0; k < 3; k++) used[t[k]]++;
    }
    for (int v = 0; v < NV; v++) if (!used[v]) fail_msg("vertex %d in no face", v);

    /* directed edges each once (consistent winding, manifold); boundary = undirected edges used
     * once: exactly 16, one loop (every boundary vertex has boundary degree 2) */
    uint64_t *e = malloc(sizeof(uint64_t) * NF * 3);
    assert_non_null(e);
    for (int f = 0; f < NF; f++)
        for (int k = 0; k < 3; k++)
            e[f * 3 + k] = (uint64_t)m.faces[f * 3 + k] << 32 | (uint32_t)m.faces[f * 3 + (k + 1) % 3];
    qsort(e, NF * 3, sizeof *e, cmp_u64);
    for (int i = 1; i < NF * 3; i++) if (e[i] == e[i - 1]) fail_msg("directed edge used twice");
    int nb = 0, bdeg[NV] = { 0 };
    for (int i = 0; i < NF * 3; i++) {
        uint64_t rev = (e[i] << 32) | (e[i] >> 32);
        if (!bsearch(&rev, e, NF * 3, sizeof *e, cmp_u64)) {
            nb++;
            bdeg[e[i] >> 32]++;
            bdeg[e[i] & 0xffffffffu]++;
        }
    }
    free(e);
    assert_int_equal(nb, 16);
    int nbv = 0;
    for (int v = 0; v < NV; v++) {
        assert_true(bdeg[v] == 0 || bdeg[v] == 2);
        nbv += bdeg[v] == 2;
    }
    assert_int_equal(nbv, 16);

    /* outward: positive signed volume; the wrist hole lies at y = 0 */
    double vol = 0, ymin = 1, ymax = -1;
    for (int f = 0; f < NF; f++) {
        const float *a = m.v_template + m.faces[f * 3] * 3, *b = m.v_template + m.faces[f * 3 + 1] * 3,
                    *c = m.v_template + m.faces[f * 3 + 2] * 3;
        vol += (a[0] * ((double)b[1] * c[2] - (double)b[2] * c[1]) -
                a[1] * ((double)b[0] * c[2] - (double)b[2] * c[0]) +
                a[2] * ((double)b[0] * c[1] - (double)b[1] * c[0])) / 6.0;
    }
    for (int v = 0; v < NV; v++) {
        ymin = fmin(ymin, m.v_template[v * 3 + 1]);
        ymax = fmax(ymax, m.v_template[v * 3 + 1]);
    }
    assert_true(vol > 1e-4 && vol < 1e-3);   /* a hand: a few hundred cm^3 */
    assert_true(ymin == 0.0 && ymax > 0.16 && ymax < 0.20);
    printf("synthetic hand: volume %.1f cm^3, length %.3f m\n", vol * 1e6, ymax - ymin);

    /* regressor rows sum to 1; weights: 1-2 joints, rows sum to 1 exactly (multiples of 1/16);
     * blend shapes small */
    for (int j = 0; j < NJ; j++) {
        double s = 0;
        for (int v = 0; v < NV; v++) s += m.J_regressor[j * NV + v];
        assert_true(fabs(s - 1.0) < 1e-6);
    }
    for (int v = 0; v < NV; v++) {
        double s = 0;
        int nz = 0;
        for (int j = 0; j < NJ; j++) {
            float w = m.weights[v * NJ + j];
            assert_true(w >= 0.0f && w * 16.0f == floorf(w * 16.0f));
            s += w;
            nz += w != 0.0f;
        }
        assert_true(s == 1.0 && nz >= 1 && nz <= 2);
    }
    for (size_t i = 0; i < (size_t)NV * 3 * NB; i++) assert_true(fabsf(m.shapedirs[i]) <= 1e-2f);
    for (size_t i = 0; i < (size_t)NV * 3 * NPD; i++) assert_true(fabsf(m.posedirs[i]) <= 1e-3f);

    /* rest joints: wrist at the origin, every joint beyond its parent (y up the fingers) */
    for (int c = 0; c < 3; c++) assert_true(fabs(rest_joint(&m, 0, c)) < 1e-6);
    for (int j = 1; j < NJ; j++) assert_true(rest_joint(&m, j, 1) > rest_joint(&m, m.parents[j], 1));
    pvm_hamer_mano_free(&m);
}

static void test_synth_tips(void **state)
{
    (void)state;
    pvm_hamer_mano m;
    synth(&m, 1);
    /* tips thumb, index, middle, ring, pinky and each finger's last joint (DIP / IP) */
    static const int dip[5] = { 15, 3, 6, 12, 9 };
    for (int t = 0; t < 5; t++) {
        int tip = pvm_hamer_tip_ids[t], jd = dip[t], jp = m.parents[jd];
        double d[3], n = 0, best = -1;
        int arg = -1;
        for (int c = 0; c < 3; c++) {
            d[c] = rest_joint(&m, jd, c) - rest_joint(&m, jp, c);
            n += d[c] * d[c];
        }
        n = sqrt(n);
        /* among the vertices bound to this joint, the tip is the farthest along the bone */
        for (int v = 0; v < NV; v++) {
            if (m.weights[v * NJ + jd] == 0.0f) continue;
            double pr = 0;
            for (int c = 0; c < 3; c++) pr += (m.v_template[v * 3 + c] - rest_joint(&m, jd, c)) * d[c] / n;
            if (pr > best) { best = pr; arg = v; }
        }
        assert_int_equal(arg, tip);
        assert_true(best > 0.015);
        assert_true(m.weights[tip * NJ + jd] == 1.0f);
    }
    /* the middle fingertip is the highest vertex */
    int top = 0;
    for (int v = 1; v < NV; v++) if (m.v_template[v * 3 + 1] > m.v_template[top * 3 + 1]) top = v;
    assert_int_equal(top, PVM_HAMER_TIP_MIDDLE);
    pvm_hamer_mano_free(&m);
}

/* ---- forward -------------------------------------------------------------------------------- */

static void test_forward_rest(void **state)
{
    (void)state;
    pvm_hamer_mano m;
    synth(&m, 1);
    float R[NJ * 9], betas[NB] = { 0 }, verts[NV * 3], j21[NKP * 3];
    identity16(R);
    pvm_hamer_mano_forward(&m, R, betas, verts, j21);
    assert_memory_equal(verts, m.v_template, sizeof verts);
    /* keypoints: rest joints and tips, OpenPose order */
    for (int k = 0; k < NKP; k++) {
        int s = op[k];
        for (int c = 0; c < 3; c++) {
            if (s < NJ) assert_true(fabs(j21[k * 3 + c] - rest_joint(&m, s, c)) < 1e-7);
            else assert_true(j21[k * 3 + c] == m.v_template[pvm_hamer_tip_ids[s - NJ] * 3 + c]);
        }
    }
    assert_true(j21[4 * 3 + 1] == m.v_template[744 * 3 + 1]);    /* OpenPose 4 = thumb tip */
    assert_true(j21[20 * 3 + 1] == m.v_template[671 * 3 + 1]);   /* 20 = pinky tip */
    pvm_hamer_mano_free(&m);
}

static void test_forward_global_rotation(void **state)
{
    (void)state;
    pvm_hamer_mano m;
    synth(&m, 1);
    float R[NJ * 9], betas[NB] = { 0 }, verts[NV * 3], j21[NKP * 3];
    identity16(R);
    double ax[3] = { 1 / sqrt(14.0), 2 / sqrt(14.0), 3 / sqrt(14.0) }, R0[9];
    axis_angle(ax, 0.7, R0);
    for (int e = 0; e < 9; e++) R[e] = (float)R0[e];
    pvm_hamer_mano_forward(&m, R, betas, verts, j21);
    double J0[3];
    for (int c = 0; c < 3; c++) J0[c] = rest_joint(&m, 0, c);
    for (int v = 0; v < NV; v++) {
        for (int c = 0; c < 3; c++) {
            double want = J0[c];
            for (int k = 0; k < 3; k++) want += (double)R[c * 3 + k] * (m.v_template[v * 3 + k] - J0[k]);
            assert_true(fabs(verts[v * 3 + c] - want) < 1e-7);
        }
    }
    for (int k = 0; k < NKP; k++) {
        if (op[k] >= NJ) continue;
        for (int c = 0; c < 3; c++) {
            double want = J0[c];
            for (int q = 0; q < 3; q++) want += (double)R[c * 3 + q] * (rest_joint(&m, op[k], q) - J0[q]);
            assert_true(fabs(j21[k * 3 + c] - want) < 1e-7);
        }
    }
    pvm_hamer_mano_free(&m);
}

/* Spec 5.2 literally: 4x4 transforms T_i = [R_i | J_i - J_parent], G = G_parent T_i, A_i = G_i
 * with translation G_t - G_R J_i, T_v = sum w A, v = T_v [v_posed; 1]. */
static void textbook_forward(const pvm_hamer_mano *m, const float *R, const float *betas,
                             double *verts, double *J16)
{
    static double vs[NV][3];
    for (int v = 0; v < NV; v++)
        for (int c = 0; c < 3; c++) {
            double s = m->v_template[v * 3 + c];
            for (int l = 0; l < NB; l++) s += (double)m->shapedirs[(v * 3 + c) * NB + l] * betas[l];
            vs[v][c] = s;
        }
    double J[NJ][3] = { { 0 } };
    for (int j = 0; j < NJ; j++)
        for (int v = 0; v < NV; v++)
            for (int c = 0; c < 3; c++) J[j][c] += (double)m->J_regressor[j * NV + v] * vs[v][c];
    double pf[NPD];
    for (int j = 1; j < NJ; j++)
        for (int a = 0; a < 3; a++)
            for (int b = 0; b < 3; b++) pf[(j - 1) * 9 + a * 3 + b] = R[j * 9 + a * 3 + b] - (a == b ? 1.0 : 0.0);
    for (int v = 0; v < NV; v++)
        for (int c = 0; c < 3; c++)
            for (int k = 0; k < NPD; k++) vs[v][c] += (double)m->posedirs[(v * 3 + c) * NPD + k] * pf[k];
    double G[NJ][16], A[NJ][16];
    for (int j = 0; j < NJ; j++) {
        double T[16] = { 0 };
        int p = m->parents[j];
        for (int a = 0; a < 3; a++) {
            for (int b = 0; b < 3; b++) T[a * 4 + b] = R[j * 9 + a * 3 + b];
            T[a * 4 + 3] = J[j][a] - (p >= 0 ? J[p][a] : 0.0);
        }
        T[15] = 1;
        if (p < 0) memcpy(G[j], T, sizeof T);
        else
            for (int a = 0; a < 4; a++)
                for (int b = 0; b < 4; b++) {
                    double s = 0;
                    for (int k = 0; k < 4; k++) s += G[p][a * 4 + k] * T[k * 4 + b];
                    G[j][a * 4 + b] = s;
                }
        memcpy(A[j], G[j], sizeof A[j]);
        for (int a = 0; a < 3; a++) {
            J16[j * 3 + a] = G[j][a * 4 + 3];
            A[j][a * 4 + 3] -= G[j][a * 4 + 0] * J[j][0] + G[j][a * 4 + 1] * J[j][1] + G[j][a * 4 + 2] * J[j][2];
        }
    }
    for (int v = 0; v < NV; v++) {
        double T[16] = { 0 };
        for (int j = 0; j < NJ; j++)
            for (int e = 0; e < 16; e++) T[e] += (double)m->weights[v * NJ + j] * A[j][e];
        for (int a = 0; a < 3; a++)
            verts[v * 3 + a] = T[a * 4 + 0] * vs[v][0] + T[a * 4 + 1] * vs[v][1] + T[a * 4 + 2] * vs[v][2] + T[a * 4 + 3];
    }
}

static void compare_textbook(const pvm_hamer_mano *m, uint64_t seed, double pose_scale)
{
    uint64_t s = seed;
    float R[NJ * 9], betas[NB], verts[NV * 3], j21[NKP * 3];
    random_pose(&s, pose_scale, R);
    for (int l = 0; l < NB; l++) betas[l] = (float)(2.0 * rng_unit(&s));
    pvm_hamer_mano_forward(m, R, betas, verts, j21);
    static double tv[NV * 3];
    double tj[NJ * 3];
    textbook_forward(m, R, betas, tv, tj);
    double worst = 0;
    for (int i = 0; i < NV * 3; i++) worst = fmax(worst, fabs(verts[i] - tv[i]));
    for (int k = 0; k < NKP; k++)
        for (int c = 0; c < 3; c++) {
            double want = op[k] < NJ ? tj[op[k] * 3 + c] : tv[pvm_hamer_tip_ids[op[k] - NJ] * 3 + c];
            worst = fmax(worst, fabs(j21[k * 3 + c] - want));
        }
    if (worst > 1e-7) fail_msg("seed %llu: max |diff| %g m", (unsigned long long)seed, worst);
    /* and the pose moved things (the comparison is not vacuous) */
    double moved = 0;
    for (int i = 0; i < NV * 3; i++) moved = fmax(moved, fabs(verts[i] - m->v_template[i]));
    assert_true(moved > 0.01);
}

static void test_forward_vs_textbook(void **state)
{
    (void)state;
    pvm_hamer_mano m;
    synth(&m, 3);
    for (uint64_t seed = 1; seed <= 4; seed++) compare_textbook(&m, seed, 1.5);
    /* MANO-like weights: every vertex on 4 joints, non-dyadic, rows summing to 1 in float */
    uint64_t s = 99;
    for (int v = 0; v < NV; v++) {
        float *w = m.weights + v * NJ;
        memset(w, 0, sizeof(float) * NJ);
        double raw[4], sum = 0;
        for (int k = 0; k < 4; k++) sum += raw[k] = 0.1 + fabs(rng_unit(&s));
        for (int k = 0; k < 4; k++) w[(v + 5 * k) % NJ] += (float)(raw[k] / sum);
    }
    for (uint64_t seed = 5; seed <= 8; seed++) compare_textbook(&m, seed, 3.0);
    pvm_hamer_mano_free(&m);
}

/* ---- camera --------------------------------------------------------------------------------- */

static pvm_hamer_crop_geom geom(double cx, double cy, double b, bool right, int W, int H)
{
    pvm_hamer_crop_geom g = { .cx = cx, .cy = cy, .b = b, .is_right = right, .sigma = 0, .W = W, .H = H };
    return g;
}

typedef struct hand_run {
    float R[NJ * 9], verts[NV * 3], j21[NKP * 3];
    pvm_hamer_hand_out o;
} hand_run;

static void run_hand(const pvm_hamer_mano *m, uint64_t seed, const float cam[3],
                     const pvm_hamer_crop_geom *g, hand_run *h)
{
    uint64_t s = seed;
    float betas[NB];
    random_pose(&s, 0.8, h->R);
    for (int l = 0; l < NB; l++) betas[l] = (float)rng_unit(&s);
    pvm_hamer_mano_forward(m, h->R, betas, h->verts, h->j21);
    pvm_hamer_camera(cam, g, h->verts, h->j21, h->R, &h->o);
}

static void test_camera_right(void **state)
{
    (void)state;
    pvm_hamer_mano m;
    synth(&m, 1);
    const int W = 640, H = 480;
    pvm_hamer_crop_geom g = geom(140.0, 110.0, 240.0, true, W, H);
    const float cam[3] = { 0.9f, 0.02f, -0.03f };
    hand_run h, h0;
    run_hand(&m, 17, cam, &g, &h0);   /* the right-frame joints before the camera: unchanged */
    run_hand(&m, 17, cam, &g, &h);
    assert_memory_equal(h.j21, h0.j21, sizeof h.j21);
    const pvm_hamer_hand_out *o = &h.o;
    double s = cam[0], tx = cam[1], ty = cam[2];
    double tz = 2 * 5000.0 / (256 * s + 1e-9);
    assert_true(o->cam[0] == cam[0] && o->cam[1] == cam[1] && o->cam[2] == cam[2]);
    assert_true(o->cam_t[0] == cam[1] && o->cam_t[1] == cam[2]);
    assert_true(fabs(o->cam_t[2] - tz) < 1e-5 * tz);
    double ff = 5000.0 / 256.0 * 640.0, bs = 240.0 * s + 1e-9;
    assert_true(o->focal_full == 12500.0f);
    assert_true(fabs(o->cam_t_full[0] - (2 * (140.0 - 319.5) / bs + tx)) < 1e-5);
    assert_true(fabs(o->cam_t_full[1] - (2 * (110.0 - 239.5) / bs + ty)) < 1e-5);
    assert_true(fabs(o->cam_t_full[2] - 2 * ff / bs) < 1e-5 * (2 * ff / bs));
    for (int k = 0; k < NKP; k++) {
        const float *X = h.j21 + k * 3;
        double z = X[2] + (double)o->cam_t[2];
        double kx = 5000.0 / 256.0 * (X[0] + tx) / z, ky = 5000.0 / 256.0 * (X[1] + ty) / z;
        assert_true(fabs(o->keypoints_2d_crop[k][0] - (256 * kx + 128)) < 1e-4);
        assert_true(fabs(o->keypoints_2d_crop[k][1] - (256 * ky + 128)) < 1e-4);
        assert_true(fabs(o->keypoints_2d[k][0] - (140.0 + 240.0 * kx)) < 1e-4);
        assert_true(fabs(o->keypoints_2d[k][1] - (110.0 + 240.0 * ky)) < 1e-4);
        /* the image point is the one the crop sampled at that crop pixel (spec 2.3) */
        double u = o->keypoints_2d_crop[k][0], v = o->keypoints_2d_crop[k][1];
        assert_true(fabs(o->keypoints_2d[k][0] - (g.cx + (u - 128) * g.b / 256)) < 1e-3);
        assert_true(fabs(o->keypoints_2d[k][1] - (g.cy + (v - 128) * g.b / 256)) < 1e-3);
    }
    /* a plausible hand: the keypoints land in the crop */
    for (int k = 0; k < NKP; k++) {
        assert_true(o->keypoints_2d_crop[k][0] > 0 && o->keypoints_2d_crop[k][0] < 256);
        assert_true(o->keypoints_2d_crop[k][1] > 0 && o->keypoints_2d_crop[k][1] < 256);
    }
    /* project() reproduces keypoints_2d exactly */
    float xy[NKP * 2];
    pvm_hamer_project(&g, o->cam_t, h.j21, NKP, xy);
    assert_memory_equal(xy, o->keypoints_2d, sizeof xy);
    pvm_hamer_mano_free(&m);
}

static void test_camera_left_is_mirrored_right(void **state)
{
    (void)state;
    pvm_hamer_mano m;
    synth(&m, 1);
    const int W = 640, H = 480;
    /* box (100, 50, 180, 170) as a left hand, and its mirror (459, 50, 539, 170) as a right
     * hand on the mirrored image: the network sees the same crop, so the same outputs */
    const double x1 = 100, y1 = 50, x2 = 180, y2 = 170;
    pvm_hamer_crop_geom gl = geom((x1 + x2) / 2, (y1 + y2) / 2, 240, false, W, H);
    pvm_hamer_crop_geom gr = geom(((W - 1 - x2) + (W - 1 - x1)) / 2, (y1 + y2) / 2, 240, true, W, H);
    const float cam[3] = { 1.1f, -0.013f, 0.041f };
    static hand_run L, Rr;
    run_hand(&m, 23, cam, &gl, &L);
    run_hand(&m, 23, cam, &gr, &Rr);
    for (int v = 0; v < NV; v++) {
        assert_true(L.verts[v * 3 + 0] == -Rr.verts[v * 3 + 0]);
        assert_true(L.verts[v * 3 + 1] == Rr.verts[v * 3 + 1]);
        assert_true(L.verts[v * 3 + 2] == Rr.verts[v * 3 + 2]);
    }
    for (int k = 0; k < NKP; k++) {
        assert_true(L.j21[k * 3 + 0] == -Rr.j21[k * 3 + 0]);
        assert_true(L.j21[k * 3 + 1] == Rr.j21[k * 3 + 1] && L.j21[k * 3 + 2] == Rr.j21[k * 3 + 2]);
    }
    static const float M[3] = { -1, 1, 1 };
    for (int j = 0; j < NJ; j++)
        for (int a = 0; a < 3; a++)
            for (int b = 0; b < 3; b++)
                assert_true(L.R[j * 9 + a * 3 + b] == M[a] * M[b] * Rr.R[j * 9 + a * 3 + b]);
    assert_true(L.o.cam[0] == Rr.o.cam[0] && L.o.cam[1] == -Rr.o.cam[1] && L.o.cam[2] == Rr.o.cam[2]);
    assert_true(L.o.cam_t[0] == -Rr.o.cam_t[0]);
    assert_true(L.o.cam_t[1] == Rr.o.cam_t[1] && L.o.cam_t[2] == Rr.o.cam_t[2]);
    assert_true(L.o.cam_t_full[0] == -Rr.o.cam_t_full[0]);
    assert_true(L.o.cam_t_full[1] == Rr.o.cam_t_full[1] && L.o.cam_t_full[2] == Rr.o.cam_t_full[2]);
    assert_true(L.o.focal_full == Rr.o.focal_full);
    /* the crop keypoints are in the (mirrored) crop the network saw: equal; image keypoints are
     * mirrored about (W - 1) / 2 (exact in double; each float rounded once) */
    assert_memory_equal(L.o.keypoints_2d_crop, Rr.o.keypoints_2d_crop, sizeof L.o.keypoints_2d_crop);
    for (int k = 0; k < NKP; k++) {
        assert_true(fabs((double)L.o.keypoints_2d[k][0] + Rr.o.keypoints_2d[k][0] - (W - 1)) < 1e-4);
        assert_true(L.o.keypoints_2d[k][1] == Rr.o.keypoints_2d[k][1]);
    }
    /* spec 4.5's direct left-hand formulas agree: x = cx - b kp_n.x, t_full.x with tx' = -tx */
    double s = cam[0], tx = cam[1], bs = 240.0 * s + 1e-9;
    assert_true(fabs(L.o.cam_t_full[0] - (2 * (gl.cx - 319.5) / bs - tx)) < 1e-5);
    for (int k = 0; k < NKP; k++) {
        const float *X = L.j21 + k * 3;   /* left frame now: X_right = -x */
        double z = X[2] + (double)L.o.cam_t[2];
        double kx = 5000.0 / 256.0 * (-X[0] + tx) / z;
        assert_true(fabs(L.o.keypoints_2d[k][0] - (gl.cx - 240.0 * kx)) < 1e-4);
    }
    /* project() of the mirrored points reproduces keypoints_2d exactly, and the mesh mirrors */
    float xy[NKP * 2];
    pvm_hamer_project(&gl, L.o.cam_t, L.j21, NKP, xy);
    assert_memory_equal(xy, L.o.keypoints_2d, sizeof xy);
    static float vl[NV * 2], vr[NV * 2];
    pvm_hamer_project(&gl, L.o.cam_t, L.verts, NV, vl);
    pvm_hamer_project(&gr, Rr.o.cam_t, Rr.verts, NV, vr);
    for (int v = 0; v < NV; v++) {
        assert_true(fabs((double)vl[v * 2] + vr[v * 2] - (W - 1)) < 1e-4);
        assert_true(vl[v * 2 + 1] == vr[v * 2 + 1]);
    }
    /* NULL verts / R16 are skipped */
    hand_run N;
    memcpy(&N, &Rr, sizeof N);
    pvm_hamer_camera(cam, &gl, NULL, N.j21, NULL, &N.o);
    pvm_hamer_mano_free(&m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rot6d_cases),
        cmocka_unit_test(test_rot6d_orthonormal),
        cmocka_unit_test(test_mano_alloc_free),
        cmocka_unit_test(test_mano_check_errors),
        cmocka_unit_test(test_synth_deterministic),
        cmocka_unit_test(test_synth_mesh),
        cmocka_unit_test(test_synth_tips),
        cmocka_unit_test(test_forward_rest),
        cmocka_unit_test(test_forward_global_rotation),
        cmocka_unit_test(test_forward_vs_textbook),
        cmocka_unit_test(test_camera_right),
        cmocka_unit_test(test_camera_left_is_mirrored_right),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
