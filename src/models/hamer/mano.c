/* hamer host post-processing: rot6d, MANO linear blend skinning, the synthetic template and the
 * camera (see mano.h for the contract, specs/hamer.md 4.4, 4.5, 5 for the maths). Every line is
 * written from the formulas in the spec; nothing is taken from smplx or HaMeR. */
#include "models/hamer/mano.h"

#include <math.h>
#include <string.h>

#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF   /* the synthetic template's bytes must not depend on FMA */
#endif

enum { NV = PVM_HAMER_NV, NF = PVM_HAMER_NF, NJ = PVM_HAMER_NJ, NB = PVM_HAMER_NBETAS,
       NPD = PVM_HAMER_NPOSEDIRS, NKP = PVM_HAMER_NKP };

const int pvm_hamer_mano_parents[PVM_HAMER_NJ] = { -1, 0, 1, 2, 0, 4, 5, 0, 7, 8, 0, 10, 11, 0,
                                                   13, 14 };
const int pvm_hamer_tip_ids[5] = { PVM_HAMER_TIP_THUMB, PVM_HAMER_TIP_INDEX, PVM_HAMER_TIP_MIDDLE,
                                   PVM_HAMER_TIP_RING, PVM_HAMER_TIP_PINKY };
const int pvm_hamer_mano_to_openpose[PVM_HAMER_NKP] = { 0, 13, 14, 15, 16, 1, 2, 3, 17, 4, 5, 6,
                                                        18, 10, 11, 12, 19, 7, 8, 9, 20 };

/* ---- small vector helpers (double) --------------------------------------------------------- */

static double dot3(const double a[3], const double b[3])
{
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
}

static void cross3(const double a[3], const double b[3], double o[3])
{
    o[0] = a[1] * b[2] - a[2] * b[1];
    o[1] = a[2] * b[0] - a[0] * b[2];
    o[2] = a[0] * b[1] - a[1] * b[0];
}

/* x / max(|x|, 1e-12) (torch.nn.functional.normalize) */
static void normalize3(const double x[3], double o[3])
{
    double n = sqrt(dot3(x, x));
    if (n < 1e-12) n = 1e-12;
    o[0] = x[0] / n;
    o[1] = x[1] / n;
    o[2] = x[2] / n;
}

/* o = A B, row-major 3x3 (o may not alias) */
static void matmul3(const double A[9], const double B[9], double o[9])
{
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            o[i * 3 + j] = A[i * 3 + 0] * B[0 * 3 + j] + A[i * 3 + 1] * B[1 * 3 + j] +
                           A[i * 3 + 2] * B[2 * 3 + j];
}

static void matvec3(const double A[9], const double x[3], double o[3])
{
    for (int i = 0; i < 3; i++)
        o[i] = A[i * 3 + 0] * x[0] + A[i * 3 + 1] * x[1] + A[i * 3 + 2] * x[2];
}

/* ---- rot6d ---------------------------------------------------------------------------------- */

void pvm_hamer_rot6d(const float *v6, int n, float *R)
{
    for (int j = 0; j < n; j++) {
        const float *v = v6 + (size_t)j * 6;
        double a1[3] = { v[0], v[1], v[2] }, a2[3] = { v[3], v[4], v[5] };
        double b1[3], b2[3], b3[3], u[3];
        normalize3(a1, b1);
        double p = dot3(b1, a2);
        for (int i = 0; i < 3; i++) u[i] = a2[i] - p * b1[i];
        normalize3(u, b2);
        cross3(b1, b2, b3);
        float *o = R + (size_t)j * 9;
        for (int i = 0; i < 3; i++) {   /* columns b1, b2, b3 */
            o[i * 3 + 0] = (float)b1[i];
            o[i * 3 + 1] = (float)b2[i];
            o[i * 3 + 2] = (float)b3[i];
        }
    }
}

/* ---- arrays --------------------------------------------------------------------------------- */

pv_status pvm_hamer_mano_alloc(pvm_hamer_mano *m)
{
    memset(m, 0, sizeof *m);
    m->v_template = pvc_calloc((size_t)NV * 3, sizeof(float));
    m->shapedirs = pvc_calloc((size_t)NV * 3 * NB, sizeof(float));
    m->posedirs = pvc_calloc((size_t)NV * 3 * NPD, sizeof(float));
    m->J_regressor = pvc_calloc((size_t)NJ * NV, sizeof(float));
    m->weights = pvc_calloc((size_t)NV * NJ, sizeof(float));
    m->faces = pvc_calloc((size_t)NF * 3, sizeof(int32_t));
    memcpy(m->parents, pvm_hamer_mano_parents, sizeof m->parents);
    if (!m->v_template || !m->shapedirs || !m->posedirs || !m->J_regressor || !m->weights ||
        !m->faces) {
        pvm_hamer_mano_free(m);
        return pvc_fail(NULL, PV_ENOMEM, "hamer: out of memory for the MANO arrays");
    }
    return PV_OK;
}

void pvm_hamer_mano_free(pvm_hamer_mano *m)
{
    if (!m) return;
    pvc_free(m->v_template);
    pvc_free(m->shapedirs);
    pvc_free(m->posedirs);
    pvc_free(m->J_regressor);
    pvc_free(m->weights);
    pvc_free(m->faces);
    m->v_template = m->shapedirs = m->posedirs = m->J_regressor = m->weights = NULL;
    m->faces = NULL;
}

pv_status pvm_hamer_mano_check(const pvm_hamer_mano *m, pvc_msg *msg)
{
    const struct { const char *name; const float *p; size_t n; } arr[] = {
        { "v_template", m->v_template, (size_t)NV * 3 },
        { "shapedirs", m->shapedirs, (size_t)NV * 3 * NB },
        { "posedirs", m->posedirs, (size_t)NV * 3 * NPD },
        { "J_regressor", m->J_regressor, (size_t)NJ * NV },
        { "weights", m->weights, (size_t)NV * NJ },
    };
    for (size_t a = 0; a < PVC_COUNTOF(arr); a++) {
        if (!arr[a].p) return pvc_fail(msg, PV_EFORMAT, "mano.%s is missing", arr[a].name);
        for (size_t i = 0; i < arr[a].n; i++) {
            if (!isfinite(arr[a].p[i]))
                return pvc_fail(msg, PV_EFORMAT, "mano.%s[%zu] = %g is not finite", arr[a].name,
                                i, (double)arr[a].p[i]);
        }
    }
    if (!m->faces) return pvc_fail(msg, PV_EFORMAT, "mano.faces is missing");
    for (size_t i = 0; i < (size_t)NF * 3; i++) {
        if (m->faces[i] < 0 || m->faces[i] >= NV)
            return pvc_fail(msg, PV_EFORMAT, "mano.faces[%zu] = %d is outside [0, %d)", i,
                            (int)m->faces[i], NV);
    }
    if (m->parents[0] != -1)
        return pvc_fail(msg, PV_EFORMAT, "mano.parents[0] = %d: the root's parent must be -1",
                        (int)m->parents[0]);
    for (int j = 1; j < NJ; j++) {
        if (m->parents[j] < 0 || m->parents[j] >= j)
            return pvc_fail(msg, PV_EFORMAT, "mano.parents[%d] = %d must be in [0, %d)", j,
                            (int)m->parents[j], j);
    }
    return PV_OK;
}

/* ---- forward -------------------------------------------------------------------------------- */

void pvm_hamer_mano_forward(const pvm_hamer_mano *m, const float *R, const float *betas,
                            float *verts, float *joints21)
{
    double vs[NV][3];   /* v_shaped, then v_posed */

    /* 1. shape blend */
    for (int v = 0; v < NV; v++) {
        for (int c = 0; c < 3; c++) {
            const float *sd = m->shapedirs + ((size_t)v * 3 + (size_t)c) * NB;
            double s = m->v_template[v * 3 + c];
            for (int l = 0; l < NB; l++) s += (double)sd[l] * (double)betas[l];
            vs[v][c] = s;
        }
    }
    /* 2. rest joints from v_shaped */
    double J[NJ][3];
    for (int j = 0; j < NJ; j++) {
        const float *row = m->J_regressor + (size_t)j * NV;
        double a0 = 0.0, a1 = 0.0, a2 = 0.0;
        for (int v = 0; v < NV; v++) {
            double w = row[v];
            if (w == 0.0) continue;
            a0 += w * vs[v][0];
            a1 += w * vs[v][1];
            a2 += w * vs[v][2];
        }
        J[j][0] = a0;
        J[j][1] = a1;
        J[j][2] = a2;
    }
    /* 3. pose blend: pf = vec_rowmajor(R_j - I), j = 1..15 */
    double pf[NPD];
    for (int j = 1; j < NJ; j++)
        for (int e = 0; e < 9; e++)
            pf[(j - 1) * 9 + e] = (double)R[j * 9 + e] - ((e % 4) == 0 ? 1.0 : 0.0);
    for (int v = 0; v < NV; v++) {
        for (int c = 0; c < 3; c++) {
            const float *pd = m->posedirs + ((size_t)v * 3 + (size_t)c) * NPD;
            double s = vs[v][c];
            for (int k = 0; k < NPD; k++) s += (double)pd[k] * pf[k];
            vs[v][c] = s;
        }
    }
    /* 4. forward kinematics. G_i = G_parent T_i with T_i = [R_i | J_i - J_parent]; A_i = G_i with
     * translation G_t - G_R J_i. Written in the equivalent recursive form
     *   A_t(0) = J_0 - R_0 J_0,   A_t(i) = A_t(p) + (G_R(p) - G_R(i)) J_i,
     *   posed joint G_t(i) = A_t(i) + G_R(i) J_i
     * which has no cancellation of large translations (and gives A_t = 0 exactly at rest). */
    double GR[NJ][9], At[NJ][3], Jp[NJ][3];
    for (int j = 0; j < NJ; j++) {
        double Rj[9], t[3];
        for (int e = 0; e < 9; e++) Rj[e] = R[j * 9 + e];
        int p = m->parents[j];
        if (p < 0) {
            memcpy(GR[j], Rj, sizeof Rj);
            matvec3(GR[j], J[j], t);
            for (int c = 0; c < 3; c++) At[j][c] = J[j][c] - t[c];
        } else {
            double D[9];
            matmul3(GR[p], Rj, GR[j]);
            for (int e = 0; e < 9; e++) D[e] = GR[p][e] - GR[j][e];
            matvec3(D, J[j], t);
            for (int c = 0; c < 3; c++) At[j][c] = At[p][c] + t[c];
        }
        matvec3(GR[j], J[j], t);
        for (int c = 0; c < 3; c++) Jp[j][c] = At[j][c] + t[c];
    }
    /* 5. skinning: T_v = sum_j w_vj A_j; v = T_R v_posed + T_t */
    for (int v = 0; v < NV; v++) {
        double T[12] = { 0 };
        const float *w = m->weights + (size_t)v * NJ;
        for (int j = 0; j < NJ; j++) {
            double wj = w[j];
            if (wj == 0.0) continue;
            for (int e = 0; e < 9; e++) T[e] += wj * GR[j][e];
            for (int c = 0; c < 3; c++) T[9 + c] += wj * At[j][c];
        }
        for (int c = 0; c < 3; c++)
            verts[v * 3 + c] = (float)(T[c * 3 + 0] * vs[v][0] + T[c * 3 + 1] * vs[v][1] +
                                       T[c * 3 + 2] * vs[v][2] + T[9 + c]);
    }
    /* 6. 16 posed joints + 5 tips, OpenPose order */
    float all[NKP][3];
    for (int j = 0; j < NJ; j++)
        for (int c = 0; c < 3; c++) all[j][c] = (float)Jp[j][c];
    for (int t = 0; t < 5; t++)
        for (int c = 0; c < 3; c++) all[NJ + t][c] = verts[pvm_hamer_tip_ids[t] * 3 + c];
    for (int k = 0; k < NKP; k++)
        for (int c = 0; c < 3; c++) joints21[k * 3 + c] = all[pvm_hamer_mano_to_openpose[k]][c];
}

/* ---- camera --------------------------------------------------------------------------------- */

/* Image and normalised-crop projection of a right-frame point with the right-frame t, through
 * the crop camera (focal 5000 / 256 in crop units), for the virtual right-hand centre cxv. */
static void project_right(const pvm_hamer_crop_geom *g, double cxv, const double t[3],
                          const double X[3], double kp[2], double img[2])
{
    const double F = PVM_HAMER_FOCAL / PVM_HAMER_PATCH;
    double z = X[2] + t[2];
    kp[0] = F * ((X[0] + t[0]) / z);
    kp[1] = F * ((X[1] + t[1]) / z);
    double xv = cxv + g->b * kp[0];
    img[0] = g->is_right ? xv : (double)(g->W - 1) - xv;
    img[1] = g->cy + g->b * kp[1];
}

static double virtual_cx(const pvm_hamer_crop_geom *g)
{
    return g->is_right ? g->cx : (double)(g->W - 1) - g->cx;
}

void pvm_hamer_camera(const float cam_net[3], const pvm_hamer_crop_geom *g, float *verts,
                      float *joints21, float *R16, pvm_hamer_hand_out *o)
{
    bool left = !g->is_right;
    double s = cam_net[0], tx = cam_net[1], ty = cam_net[2];
    /* the reported float tz is the one every projection uses (pvm_hamer_project reproduces it) */
    float tzf = (float)(2.0 * PVM_HAMER_FOCAL / ((double)PVM_HAMER_PATCH * s + 1e-9));
    double t[3] = { tx, ty, (double)tzf };
    double cxv = virtual_cx(g);

    for (int k = 0; k < NKP; k++) {
        double X[3] = { joints21[k * 3 + 0], joints21[k * 3 + 1], joints21[k * 3 + 2] };
        double kp[2], img[2];
        project_right(g, cxv, t, X, kp, img);
        o->keypoints_2d_crop[k][0] = (float)(PVM_HAMER_PATCH * kp[0] + PVM_HAMER_PATCH / 2);
        o->keypoints_2d_crop[k][1] = (float)(PVM_HAMER_PATCH * kp[1] + PVM_HAMER_PATCH / 2);
        o->keypoints_2d[k][0] = (float)img[0];
        o->keypoints_2d[k][1] = (float)img[1];
    }

    /* full-image camera, for the (virtual) right hand, then mirrored */
    double ff = PVM_HAMER_FOCAL / PVM_HAMER_PATCH * (double)PVC_MAX(g->W, g->H);
    double bs = g->b * s + 1e-9;
    double tfx = 2.0 * (cxv - (double)(g->W - 1) / 2.0) / bs + tx;
    double tfy = 2.0 * (g->cy - (double)(g->H - 1) / 2.0) / bs + ty;
    double tfz = 2.0 * ff / bs;
    double txo = left ? -tx : tx;
    o->cam[0] = (float)s;
    o->cam[1] = (float)txo;
    o->cam[2] = (float)ty;
    o->cam_t[0] = (float)txo;
    o->cam_t[1] = (float)ty;
    o->cam_t[2] = tzf;
    o->cam_t_full[0] = (float)(left ? -tfx : tfx);
    o->cam_t_full[1] = (float)tfy;
    o->cam_t_full[2] = (float)tfz;
    o->focal_full = (float)ff;

    if (!left) return;
    if (verts)
        for (int v = 0; v < NV; v++) verts[v * 3] = -verts[v * 3];
    for (int k = 0; k < NKP; k++) joints21[k * 3] = -joints21[k * 3];
    if (R16) {   /* M R M, M = diag(-1, 1, 1): negate (0,1), (0,2), (1,0), (2,0) */
        for (int j = 0; j < NJ; j++) {
            float *r = R16 + j * 9;
            r[1] = -r[1];
            r[2] = -r[2];
            r[3] = -r[3];
            r[6] = -r[6];
        }
    }
}

void pvm_hamer_project(const pvm_hamer_crop_geom *g, const float cam_t[3], const float *pts,
                       int n, float *xy)
{
    double sx = g->is_right ? 1.0 : -1.0;   /* back to the right-hand frame (exact) */
    double t[3] = { sx * (double)cam_t[0], cam_t[1], cam_t[2] };
    double cxv = virtual_cx(g);
    for (int i = 0; i < n; i++) {
        double X[3] = { sx * (double)pts[i * 3 + 0], pts[i * 3 + 1], pts[i * 3 + 2] };
        double kp[2], img[2];
        project_right(g, cxv, t, X, kp, img);
        xy[i * 2 + 0] = (float)img[0];
        xy[i * 2 + 1] = (float)img[1];
    }
}

/* ---- synthetic template ------------------------------------------------------------------ */
/* Layout in "natural" vertex order (then permuted so the tips get MANO's ids):
 *   palm: 6 rings x 32 (ring i at y = 0.085 i / 5; positions 0..15 the front (z > 0) with x
 *         decreasing, 16..31 the back with x increasing): 0..191; wrist centre: 192;
 *   fingers index, middle, ring, pinky: n rings x 8 then the apex tip;
 *   thumb: 10 rings x 6 then the apex tip.
 * Every ring runs clockwise about its tube's outward axis; a band between ring A (inner) and
 * ring B (outer) is triangulated (A_m, B_m, B_m+1), (A_m, B_m+1, A_m+1), so faces are outward. */

#define SY_PR   6          /* palm rings */
#define SY_PN   32         /* vertices per palm ring */
#define SY_YTOP 0.085      /* palm top (MCP line), m */
#define SY_NT   10         /* thumb rings */

typedef struct sy_finger {
    int    joint[3];       /* MANO joints, proximal first */
    int    nseg[3];        /* rings in each segment */
    double len[3];         /* segment lengths, m */
    double radius;         /* at the base, m */
    double tilt;           /* axis = normalise(tilt, 1, 0) */
} sy_finger;

/* index, middle, ring, pinky: across the palm from +x to -x */
static const sy_finger sy_fingers[4] = {
    { { 1, 2, 3 }, { 6, 5, 6 }, { 0.040, 0.025, 0.022 }, 0.0085, 0.06 },
    { { 4, 5, 6 }, { 7, 5, 6 }, { 0.045, 0.028, 0.024 }, 0.0088, 0.00 },
    { { 10, 11, 12 }, { 6, 4, 6 }, { 0.042, 0.027, 0.023 }, 0.0082, -0.05 },
    { { 7, 8, 9 }, { 5, 4, 5 }, { 0.033, 0.021, 0.020 }, 0.0072, -0.12 },
};
static const int sy_thumb_joint[3] = { 13, 14, 15 };
static const int sy_thumb_nseg[3] = { 3, 3, 4 };
static const double sy_thumb_len[3] = { 0.032, 0.030, 0.026 };
static const double sy_thumb_dir[3][3] = { { 0.75, 0.55, 0.35 }, { 0.45, 0.80, 0.30 },
                                           { 0.30, 0.90, 0.25 } };

typedef struct sy_build {
    pvm_hamer_mano *m;
    int perm[NV];          /* natural index -> MANO-style id */
    int nf;
} sy_build;

static uint64_t sy_next(uint64_t *s)   /* splitmix64 */
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static int sy_rand(uint64_t *s) { return (int)(sy_next(s) % 2001u) - 1000; }   /* [-1000, 1000] */

/* metres rounded to multiples of 2^-20 (exact in float) */
static float sy_q(double x) { return (float)(floor(x * 1048576.0 + 0.5) / 1048576.0); }

/* weight rounded to multiples of 1/16 */
static double sy_q16(double w) { return floor(w * 16.0 + 0.5) / 16.0; }

static int sy_finger_base(int f)   /* natural index of finger f's first ring vertex */
{
    int n = SY_PR * SY_PN + 1;
    for (int i = 0; i < f; i++)
        n += (sy_fingers[i].nseg[0] + sy_fingers[i].nseg[1] + sy_fingers[i].nseg[2]) * 8 + 1;
    return n;
}

static void sy_vertex(sy_build *B, int nat, const double p[3])
{
    float *o = B->m->v_template + (size_t)B->perm[nat] * 3;
    for (int c = 0; c < 3; c++) o[c] = sy_q(p[c]);
}

static void sy_pos(const sy_build *B, int nat, double p[3])
{
    const float *o = B->m->v_template + (size_t)B->perm[nat] * 3;
    for (int c = 0; c < 3; c++) p[c] = o[c];
}

/* LBS weights of a vertex: w_a to joint a, the rest (1 - w_a) to joint b */
static void sy_weight(sy_build *B, int nat, int a, double wa, int b)
{
    float *w = B->m->weights + (size_t)B->perm[nat] * NJ;
    memset(w, 0, NJ * sizeof(float));
    w[a] += (float)wa;
    w[b] += (float)(1.0 - wa);
}

static void sy_face(sy_build *B, int a, int b, int c)
{
    if (B->nf >= NF) return;   /* cannot happen: the layout above has exactly NF faces */
    int32_t *f = B->m->faces + (size_t)B->nf * 3;
    f[0] = B->perm[a];
    f[1] = B->perm[b];
    f[2] = B->perm[c];
    B->nf++;
}

/* The band between rings A and B of n vertices (natural indices). */
static void sy_band(sy_build *B, const int *A, const int *Bv, int n)
{
    for (int i = 0; i < n; i++) {
        int j = (i + 1) % n;
        sy_face(B, A[i], Bv[i], Bv[j]);
        sy_face(B, A[i], Bv[j], A[j]);
    }
}

static void sy_regress(sy_build *B, int joint, const int *ring, int n)
{
    float w = (float)(1.0 / n);
    for (int i = 0; i < n; i++)
        B->m->J_regressor[(size_t)joint * NV + (size_t)B->perm[ring[i]]] = w;
}

/* A tube from the base loop (n0 natural indices, n0 == ns) along a polyline of three segments
 * starting at the loop's centroid; rings of ns vertices with unit offsets dirs (in the ring's
 * frame e1, e2), radius tapering and closing on a hemispherical cap at the apex. Writes vertices,
 * weights, faces and the regressor rows of the three joints. */
typedef struct sy_tube {
    const int *joint, *nseg;
    const double *len;
    double dir[3][3];       /* unit segment directions */
    double radius, taper;   /* radius at the base; fraction lost along the length */
    int ns;                 /* ring size */
    const double (*off)[2]; /* ring offsets (e1, e2) */
    int first;              /* natural index of the first ring vertex */
    bool thumb_frame;       /* e1/e2 from z (thumb) or from the xy-plane (fingers) */
} sy_tube;

static void sy_frame(const sy_tube *T, const double d[3], double e1[3], double e2[3])
{
    if (!T->thumb_frame) {   /* d in the xy-plane: e1 = (dy, -dx, 0), e2 = z */
        double a[3] = { d[1], -d[0], 0.0 };
        normalize3(a, e1);
        e2[0] = 0.0; e2[1] = 0.0; e2[2] = 1.0;
    } else {                 /* e1 = z made orthogonal to d, e2 = e1 x d */
        double z[3] = { 0.0, 0.0, 1.0 }, a[3];
        double p = dot3(z, d);
        for (int c = 0; c < 3; c++) a[c] = z[c] - p * d[c];
        normalize3(a, e1);
        cross3(e1, d, e2);
    }
}

static void sy_build_tube(sy_build *B, const sy_tube *T, const int *base)
{
    int ns = T->ns, nring = T->nseg[0] + T->nseg[1] + T->nseg[2];
    double P0[3] = { 0, 0, 0 }, q[3];
    for (int i = 0; i < ns; i++) {
        sy_pos(B, base[i], q);
        for (int c = 0; c < 3; c++) P0[c] += q[c];
    }
    for (int c = 0; c < 3; c++) P0[c] /= ns;
    double ltot = T->len[0] + T->len[1] + T->len[2];
    double rtip = T->radius * (1.0 - T->taper);

    /* joints: the base loop (weights 1/2 wrist, 1/2 first joint) and its regressor row */
    sy_regress(B, T->joint[0], base, ns);
    for (int i = 0; i < ns; i++) sy_weight(B, base[i], 0, 0.5, T->joint[0]);

    int prev[8], cur[8];
    memcpy(prev, base, (size_t)ns * sizeof(int));
    double start[3];   /* the current segment's start point */
    memcpy(start, P0, sizeof start);
    double lstart = 0.0;
    int k = 0;
    for (int s = 0; s < 3; s++) {
        int n = T->nseg[s];
        for (int i = 1; i <= n; i++, k++) {
            /* fraction along the segment: the last ring of segments 0, 1 sits on the joint;
             * segment 2 ends at the apex, so its rings stop short of it */
            double t = s < 2 ? (double)i / n : (double)i / (n + 1);
            double P[3], d[3], e1[3], e2[3];
            for (int c = 0; c < 3; c++) P[c] = start[c] + T->len[s] * t * T->dir[s][c];
            if (s < 2 && i == n) {   /* on a joint: the mean direction */
                double a[3];
                for (int c = 0; c < 3; c++) a[c] = T->dir[s][c] + T->dir[s + 1][c];
                normalize3(a, d);
            } else {
                memcpy(d, T->dir[s], sizeof d);
            }
            sy_frame(T, d, e1, e2);
            double l = lstart + T->len[s] * t;
            double r = T->radius * (1.0 - T->taper * l / ltot);
            if (l > ltot - rtip) {
                double u = (l - (ltot - rtip)) / rtip;
                r *= sqrt(1.0 - u * u);
            }
            /* LBS: joint s, blended with the previous joint near the start, the next one near
             * the end (1/2 on a joint) */
            int jm = T->joint[s], jprev = s == 0 ? 0 : T->joint[s - 1];
            double wprev = t < 0.25 ? sy_q16(2.0 * (0.25 - t)) : 0.0;
            double wnext = (s < 2 && t > 0.75) ? sy_q16(PVC_MIN(0.5, 2.0 * (t - 0.75))) : 0.0;
            for (int v = 0; v < ns; v++) {
                double p[3];
                cur[v] = T->first + k * ns + v;
                for (int c = 0; c < 3; c++)
                    p[c] = P[c] + r * (T->off[v][0] * e1[c] + T->off[v][1] * e2[c]);
                sy_vertex(B, cur[v], p);
                if (wnext > 0.0) sy_weight(B, cur[v], jm, 1.0 - wnext, T->joint[s + 1]);
                else sy_weight(B, cur[v], jm, 1.0 - wprev, jprev);
            }
            sy_band(B, prev, cur, ns);
            if (s < 2 && i == n) sy_regress(B, T->joint[s + 1], cur, ns);
            memcpy(prev, cur, (size_t)ns * sizeof(int));
        }
        for (int c = 0; c < 3; c++) start[c] += T->len[s] * T->dir[s][c];
        lstart += T->len[s];
    }
    /* apex tip and its cap */
    int apex = T->first + nring * ns;
    sy_vertex(B, apex, start);
    sy_weight(B, apex, T->joint[2], 1.0, T->joint[2]);
    for (int v = 0; v < ns; v++) sy_face(B, prev[v], apex, prev[(v + 1) % ns]);
}

void pvm_hamer_mano_synth(uint64_t seed, pvm_hamer_mano *m)
{
    sy_build Bd, *B = &Bd;
    memset(B, 0, sizeof *B);
    B->m = m;
    memset(m->v_template, 0, (size_t)NV * 3 * sizeof(float));
    memset(m->shapedirs, 0, (size_t)NV * 3 * NB * sizeof(float));
    memset(m->posedirs, 0, (size_t)NV * 3 * NPD * sizeof(float));
    memset(m->J_regressor, 0, (size_t)NJ * NV * sizeof(float));
    memset(m->weights, 0, (size_t)NV * NJ * sizeof(float));
    memset(m->faces, 0, (size_t)NF * 3 * sizeof(int32_t));
    memcpy(m->parents, pvm_hamer_mano_parents, sizeof m->parents);

    /* natural -> id: the five apexes get MANO's tip ids, the rest fill the other ids in order */
    int thumb_first = sy_finger_base(4);
    int tip_nat[5] = { thumb_first + SY_NT * 6, 0, 0, 0, 0 };
    for (int f = 0; f < 4; f++) tip_nat[1 + f] = sy_finger_base(f + 1) - 1;
    bool taken[NV] = { false }, is_tip[NV] = { false };
    for (int t = 0; t < 5; t++) {
        B->perm[tip_nat[t]] = pvm_hamer_tip_ids[t];
        taken[pvm_hamer_tip_ids[t]] = true;
        is_tip[tip_nat[t]] = true;
    }
    for (int nat = 0, next = 0; nat < NV; nat++) {
        if (is_tip[nat]) continue;
        while (taken[next]) next++;
        B->perm[nat] = next++;
    }

    /* palm rings */
    int ring[SY_PR][SY_PN];
    for (int i = 0; i < SY_PR; i++) {
        double y = SY_YTOP * i / (SY_PR - 1);
        double a = 0.030 + 0.010 * i / (SY_PR - 1), cz = 0.012;
        for (int p = 0; p < SY_PN; p++) {
            int mm = p < 16 ? p : 31 - p;
            double u = 1.0 - (2.0 * mm + 1.0) / 16.0;
            double pos[3] = { a * u, y, (p < 16 ? cz : -cz) * sqrt(1.0 - u * u) };
            ring[i][p] = i * SY_PN + p;
            sy_vertex(B, ring[i][p], pos);
            sy_weight(B, ring[i][p], 0, 1.0, 0);
        }
    }
    int wrist = SY_PR * SY_PN;
    const double origin[3] = { 0, 0, 0 };
    sy_vertex(B, wrist, origin);
    sy_weight(B, wrist, 0, 1.0, 0);
    sy_regress(B, 0, ring[0], SY_PN);
    /* wrist: a partial fan over 18 of the 32 edges, leaving a 16-edge hole (like MANO's) */
    for (int p = 0; p < 18; p++) sy_face(B, wrist, ring[0][p], ring[0][p + 1]);
    /* palm bands, without the two quads of the thumb's hole (ring 1, positions 31-0-1) */
    for (int i = 0; i + 1 < SY_PR; i++) {
        for (int p = 0; p < SY_PN; p++) {
            if (i == 1 && (p == 31 || p == 0)) continue;
            int q = (p + 1) % SY_PN;
            sy_face(B, ring[i][p], ring[i + 1][p], ring[i + 1][q]);
            sy_face(B, ring[i][p], ring[i + 1][q], ring[i][q]);
        }
    }
    /* webs between neighbouring fingers on the palm top */
    const int *top = ring[SY_PR - 1];
    for (int f = 0; f < 3; f++) {
        int f3 = top[4 * f + 3], f4 = top[4 * f + 4], k3 = top[28 - 4 * f], k4 = top[27 - 4 * f];
        sy_face(B, f4, f3, k3);
        sy_face(B, f4, k3, k4);
    }

    /* fingers: base loop = 4 front + 4 back vertices of the palm top */
    const double c8 = sqrt(2.0 + sqrt(2.0)) / 2.0, s8 = sqrt(2.0 - sqrt(2.0)) / 2.0;
    const double oct[8][2] = { { c8, s8 }, { s8, c8 }, { -s8, c8 }, { -c8, s8 },
                               { -c8, -s8 }, { -s8, -c8 }, { s8, -c8 }, { c8, -s8 } };
    for (int f = 0; f < 4; f++) {
        const sy_finger *F = &sy_fingers[f];
        int base[8] = { top[4 * f], top[4 * f + 1], top[4 * f + 2], top[4 * f + 3],
                        top[28 - 4 * f], top[29 - 4 * f], top[30 - 4 * f], top[31 - 4 * f] };
        sy_tube T = { .joint = F->joint, .nseg = F->nseg, .len = F->len, .radius = F->radius,
                      .taper = 0.25, .ns = 8, .off = oct, .first = sy_finger_base(f),
                      .thumb_frame = false };
        double a[3] = { F->tilt, 1.0, 0.0 };
        for (int s = 0; s < 3; s++) normalize3(a, T.dir[s]);
        sy_build_tube(B, &T, base);
    }

    /* thumb: base loop on the palm's +x side between rings 1 and 2 */
    const double h3 = sqrt(3.0) / 2.0;
    const double hex[6][2] = { { -h3, -0.5 }, { 0.0, -1.0 }, { h3, -0.5 },
                               { h3, 0.5 }, { 0.0, 1.0 }, { -h3, 0.5 } };
    int tbase[6] = { ring[1][31], ring[1][0], ring[1][1], ring[2][1], ring[2][0], ring[2][31] };
    sy_tube T = { .joint = sy_thumb_joint, .nseg = sy_thumb_nseg, .len = sy_thumb_len,
                  .radius = 0.0100, .taper = 0.2, .ns = 6, .off = hex, .first = thumb_first,
                  .thumb_frame = true };
    for (int s = 0; s < 3; s++) normalize3(sy_thumb_dir[s], T.dir[s]);
    sy_build_tube(B, &T, tbase);

    /* shape and pose blend shapes (after the weights, which they are smoothed with) */
    uint64_t st = seed;
    double Ts[NJ][3][NB - 4], Tp[NJ][3][NPD];
    for (int j = 0; j < NJ; j++)
        for (int c = 0; c < 3; c++)
            for (int l = 0; l < NB - 4; l++) Ts[j][c][l] = sy_rand(&st) / 262144.0;   /* 2^-18 */
    for (int j = 0; j < NJ; j++)
        for (int c = 0; c < 3; c++)
            for (int k = 0; k < NPD; k++) Tp[j][c][k] = sy_rand(&st) / 1048576.0;   /* 2^-20 */
    for (int v = 0; v < NV; v++) {
        const float *P = m->v_template + (size_t)v * 3;
        const float *w = m->weights + (size_t)v * NJ;
        bool finger = P[1] > SY_YTOP && w[13] == 0.0f && w[14] == 0.0f && w[15] == 0.0f;
        for (int c = 0; c < 3; c++) {
            float *sd = m->shapedirs + ((size_t)v * 3 + (size_t)c) * NB;
            sd[0] = (float)(0.05 * (double)P[c]);                                 /* size */
            if (c == 1 && finger) sd[1] = (float)(((double)P[1] - SY_YTOP) * 0.06);  /* length */
            if (c == 0) sd[2] = (float)(0.05 * (double)P[0]);                     /* width */
            if (c == 2) sd[3] = (float)(0.1 * (double)P[2]);                      /* thickness */
            for (int l = 4; l < NB; l++) {
                double acc = 0.0;
                for (int j = 0; j < NJ; j++) acc += (double)w[j] * Ts[j][c][l - 4];
                sd[l] = (float)acc;
            }
            float *pd = m->posedirs + ((size_t)v * 3 + (size_t)c) * NPD;
            for (int k = 0; k < NPD; k++) {
                double acc = 0.0;
                for (int j = 0; j < NJ; j++) acc += (double)w[j] * Tp[j][c][k];
                pd[k] = (float)acc;
            }
        }
    }
}
