/* Tests for src/models/bevfusion/post.c: rotated-box IoU against hand-computed values, each
 * post-processing stage on small hand-made scenes (yaw gate, distance bins at their limits,
 * circle NMS, the non-greedy IoU NMS, the pedestrian exemption, the remapper's boundaries,
 * labels, quaternions), bad calls, and seeded random scenes checked against a plain
 * re-statement of the rules in this file plus the NMS invariants. The param files and runtime
 * overrides are tested in test_bevfusion_params.c.
 *
 * Scenes that test exact boundaries use "unit" parameters (range minimum -300 m, voxel 0.125 m,
 * out_size_factor 8), so one BEV cell is exactly 1 m and x = cell - 300 has no rounding. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "models/bevfusion/post.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PI_F 3.14159265358979f

/* ---- helpers -------------------------------------------------------------------------------- */
static pvm_bevfusion_params v2_params(void)
{
    pvm_bevfusion_params p;
    pvc_msg msg = { "" };
    if (pvm_bevfusion_params_v2(&p, &msg) != PV_OK) fail_msg("v2 params: %s", msg.text);
    return p;
}

static pvm_bevfusion_params unit_params(void)
{
    pvm_bevfusion_params p = v2_params();
    p.pc_range[0] = p.pc_range[1] = -300.0f;
    p.voxel_size[0] = p.voxel_size[1] = 0.125f;
    p.out_size_factor = 8;
    return p;
}

static void set_param(pvm_bevfusion_params *p, const char *key, const char *value)
{
    pvc_msg msg = { "" };
    if (pvm_bevfusion_param_set(p, key, value, &msg) != PV_OK) fail_msg("%s=%s: %s", key, value, msg.text);
}

/* One proposal as the test means it (metres, radians); packed into bbox_pred below. */
typedef struct tprop {
    float x, y, z, l, w, h, yaw, vx, vy, norm, score;
    int64_t cls;
} tprop;

static tprop tp(float x, float y, float l, float w, float yaw, float score, int64_t cls)
{
    tprop t = { x, y, 1.0f, l, w, 1.5f, yaw, 0.5f, -0.25f, 1.0f, score, cls };
    return t;
}

#define MAXP 600

typedef struct tscene {
    float   bb[10 * MAXP];
    float   score[MAXP];
    int64_t label[MAXP];
    int     P;
} tscene;

static void pack(const pvm_bevfusion_params *p, const tprop *t, int n, tscene *s)
{
    assert_true(n <= MAXP);
    s->P = n;
    double cell_x = (double)p->out_size_factor * p->voxel_size[0];
    double cell_y = (double)p->out_size_factor * p->voxel_size[1];
    for (int i = 0; i < n; i++) {
        float *b = s->bb + i;
        b[0] = (float)((t[i].x - (double)p->pc_range[0]) / cell_x);
        b[n] = (float)((t[i].y - (double)p->pc_range[1]) / cell_y);
        b[2 * n] = t[i].z;
        b[3 * n] = logf(t[i].l);
        b[4 * n] = logf(t[i].w);
        b[5 * n] = logf(t[i].h);
        b[6 * n] = t[i].norm * sinf(t[i].yaw);
        b[7 * n] = t[i].norm * cosf(t[i].yaw);
        b[8 * n] = t[i].vx;
        b[9 * n] = t[i].vy;
        s->score[i] = t[i].score;
        s->label[i] = t[i].cls;
    }
}

static int run_scene(const pvm_bevfusion_params *p, const tscene *s, pvm_bevfusion_object *out,
                     pvm_bevfusion_post_stats *st)
{
    pvc_msg msg = { "" };
    int nout = -1;
    void *ws = pvc_malloc(pvm_bevfusion_post_ws_bytes(s->P) + 1);
    assert_non_null(ws);
    pv_status r = pvm_bevfusion_post(p, s->bb, s->score, s->label, s->P, out, &nout, st, ws, &msg);
    pvc_free(ws);
    if (r != PV_OK) fail_msg("post: %s", msg.text);
    assert_true(nout >= 0 && nout <= s->P);
    assert_int_equal(st->proposals, s->P);
    assert_int_equal(st->after_iou, nout);
    return nout;
}

static int run_props(const pvm_bevfusion_params *p, const tprop *t, int n, pvm_bevfusion_object *out,
                     pvm_bevfusion_post_stats *st)
{
    static tscene s;
    pack(p, t, n, &s);
    return run_scene(p, &s, out, st);
}

/* A float whose expf is exactly v (for boxes whose size must come out exact). */
static float exact_log(float v)
{
    float x = logf(v), up = x, down = x;
    for (int i = 0; i < 8; i++) {
        if (expf(up) == v) return up;
        if (expf(down) == v) return down;
        up = nextafterf(up, INFINITY);
        down = nextafterf(down, -INFINITY);
    }
    fail_msg("no float x with expf(x) == %g", (double)v);
    return x;
}

/* The proposal indices of the output, in order, as "0,3,5" for readable failures. */
static const char *props_of(const pvm_bevfusion_object *o, int n, char *buf, size_t cap)
{
    size_t k = 0;
    buf[0] = '\0';
    for (int i = 0; i < n && k < cap; i++)
        k += (size_t)snprintf(buf + k, cap - k, i ? ",%d" : "%d", o[i].proposal);
    return buf;
}

#define EXPECT_PROPS(out, n, want) do { \
        char b_[512]; \
        assert_string_equal(props_of(out, n, b_, sizeof b_), want); \
    } while (0)

/* src with the first occurrence of `from` replaced by `to`, into a static buffer. */
static const char *edit(const char *src, const char *from, const char *to)
{
    static char buf[8192];
    const char *at = strstr(src, from);
    if (!at) fail_msg("edit: '%s' not in text", from);
    size_t pre = (size_t)(at - src), fl = strlen(from), tl = strlen(to), rest = strlen(at + fl);
    assert_true(pre + tl + rest < sizeof buf);
    memcpy(buf, src, pre);
    memcpy(buf + pre, to, tl);
    memcpy(buf + pre + tl, at + fl, rest + 1);
    return buf;
}

/* ---- IoU ------------------------------------------------------------------------------------ */
static float iou5(float ax, float ay, float al, float aw, float ayaw, float bx, float by, float bl, float bw,
                  float byaw)
{
    const float a[5] = { ax, ay, al, aw, ayaw }, b[5] = { bx, by, bl, bw, byaw };
    float r1 = pvm_bevfusion_iou_bev(a, b), r2 = pvm_bevfusion_iou_bev(b, a);
    assert_float_equal(r1, r2, 1e-6f);    /* symmetric */
    return r1;
}

static void test_iou_cases(void **state)
{
    (void)state;
    /* identical, also rotated and off-centre */
    assert_float_equal(iou5(0, 0, 4, 2, 0, 0, 0, 4, 2, 0), 1.0f, 1e-6f);
    assert_float_equal(iou5(3, -7, 4.5f, 1.8f, 0.7f, 3, -7, 4.5f, 1.8f, 0.7f), 1.0f, 1e-6f);
    /* the same rectangle described with length and width swapped and a quarter turn */
    assert_float_equal(iou5(1, 1, 4, 2, 0, 1, 1, 2, 4, PI_F / 2), 1.0f, 1e-6f);
    /* a half turn is the same footprint */
    assert_float_equal(iou5(0, 0, 4, 2, 0.3f, 0, 0, 4, 2, 0.3f + PI_F), 1.0f, 1e-6f);
    /* disjoint, near and far */
    assert_float_equal(iou5(0, 0, 2, 2, 0, 3, 0, 2, 2, 0), 0.0f, 0.0f);
    assert_float_equal(iou5(0, 0, 2, 2, 0, 100, 50, 2, 2, 1), 0.0f, 0.0f);
    /* axis-aligned partial overlap: 2x2 squares shifted by 1 -> I = 2, U = 6 */
    assert_float_equal(iou5(0, 0, 2, 2, 0, 1, 0, 2, 2, 0), 1.0f / 3.0f, 1e-6f);
    /* shifted in x and y: I = 1 * 1, U = 4 + 4 - 1 */
    assert_float_equal(iou5(0, 0, 2, 2, 0, 1, 1, 2, 2, 0), 1.0f / 7.0f, 1e-6f);
    /* a cross: 4x2 and the same turned 90 degrees -> I = 4, U = 12 */
    assert_float_equal(iou5(0, 0, 4, 2, 0, 0, 0, 4, 2, PI_F / 2), 1.0f / 3.0f, 1e-6f);
    /* square vs the same square turned 45 degrees: the intersection is a regular octagon of
     * apothem s/2, area 2 (sqrt2 - 1) s^2, so IoU = (sqrt2 - 1) / (2 - sqrt2) = 1 / sqrt2 */
    assert_float_equal(iou5(0, 0, 2, 2, 0, 0, 0, 2, 2, PI_F / 4), (float)(1.0 / sqrt(2.0)), 1e-6f);
    assert_float_equal(iou5(5, 5, 3, 3, 0.2f, 5, 5, 3, 3, 0.2f + PI_F / 4), (float)(1.0 / sqrt(2.0)), 1e-6f);
    /* containment: a rotated 1x2 box well inside a 4x4 square -> 2 / 16 */
    assert_float_equal(iou5(0, 0, 4, 4, 0, 0.5f, 0.5f, 1, 2, 0.3f), 0.125f, 1e-6f);
    /* the small box sharing one side with the big one from inside: still contained */
    assert_float_equal(iou5(0, 0, 4, 4, 0, 1.5f, 0, 1, 1, 0), 1.0f / 16.0f, 1e-6f);
    /* touching edges and touching corners: no area in common */
    assert_float_equal(iou5(0, 0, 2, 2, 0, 2, 0, 2, 2, 0), 0.0f, 1e-7f);
    assert_float_equal(iou5(0, 0, 2, 2, 0, 2, 2, 2, 2, 0), 0.0f, 1e-7f);
    /* a diamond touching a square's side with its corner */
    assert_float_equal(iou5(0, 0, 2, 2, 0, 1 + sqrtf(2.0f), 0, 2, 2, PI_F / 4), 0.0f, 1e-6f);
    /* union under 0.01 m^2 counts as nothing, even for identical boxes */
    assert_float_equal(iou5(0, 0, 0.05f, 0.05f, 0, 0, 0, 0.05f, 0.05f, 0), 0.0f, 0.0f);
    assert_float_equal(iou5(0, 0, 0.1f, 0.11f, 0, 0, 0, 0.1f, 0.11f, 0), 1.0f, 1e-5f);
    /* degenerate or non-finite boxes */
    assert_float_equal(iou5(0, 0, 0, 2, 0, 0, 0, 4, 2, 0), 0.0f, 0.0f);
    assert_float_equal(iou5(0, 0, NAN, 2, 0, 0, 0, 4, 2, 0), 0.0f, 0.0f);
    assert_float_equal(iou5(0, 0, INFINITY, 2, 0, 0, 0, 4, 2, 0), 0.0f, 0.0f);
    assert_float_equal(iou5(0, 0, -4, 2, 0, 0, 0, 4, 2, 0), 0.0f, 0.0f);
    assert_float_equal(pvm_bevfusion_iou_bev(NULL, NULL), 0.0f, 0.0f);
}

/* ---- decode and object fields --------------------------------------------------------------- */
static void test_decode_fields(void **state)
{
    (void)state;
    pvm_bevfusion_params p = v2_params();
    tprop t[5] = {
        tp(10.0f, 5.0f, 4.5f, 1.9f, PI_F / 2, 0.9f, 0),     /* CAR */
        tp(-30.0f, 20.0f, 8.0f, 2.5f, -PI_F / 3, 0.8f, 1),  /* TRUCK */
        tp(40.0f, -40.0f, 11.0f, 2.8f, 3.0f, 0.7f, 2),      /* BUS */
        tp(-60.0f, -10.0f, 1.7f, 0.6f, 0.0f, 0.6f, 3),      /* BICYCLE */
        tp(0.0f, 70.0f, 0.6f, 0.6f, -2.5f, 0.5f, 4),        /* PEDESTRIAN */
    };
    t[2].vx = 3.5f;
    t[2].vy = -1.25f;
    t[4].z = -0.75f;
    static tscene s;
    pack(&p, t, 5, &s);
    pvm_bevfusion_object out[5];
    pvm_bevfusion_post_stats st;
    int n = run_scene(&p, &s, out, &st);
    assert_int_equal(n, 5);
    EXPECT_PROPS(out, n, "0,1,2,3,4");
    static const uint8_t lbl[5] = { 1, 2, 3, 6, 7 }, orient[5] = { 1, 1, 1, 0, 0 };
    for (int k = 0; k < 5; k++) {
        const pvm_bevfusion_object *o = &out[k];
        const float *b = s.bb + k;
        int P = s.P;
        assert_int_equal(o->class_index, k);
        assert_int_equal(o->label_before_remap, lbl[k]);
        assert_int_equal(o->label, lbl[k]);              /* no box here is in a remap range */
        assert_int_equal(o->orientation_availability, orient[k]);
        assert_int_equal(o->shape_type, 0);
        assert_true(o->existence_probability == t[k].score);
        /* exactly Autoware's float expression */
        assert_true(o->position[0] == b[0] * 8.0f * 0.17f + -122.4f);
        assert_true(o->position[1] == b[P] * 8.0f * 0.17f + -122.4f);
        assert_float_equal(o->position[0], t[k].x, 1e-4f);
        assert_float_equal(o->position[1], t[k].y, 1e-4f);
        assert_true(o->position[2] == t[k].z);
        assert_float_equal(o->dimensions[0], t[k].l, 1e-5f);
        assert_float_equal(o->dimensions[1], t[k].w, 1e-5f);
        assert_float_equal(o->dimensions[2], t[k].h, 1e-5f);
        assert_true(o->yaw == atan2f(b[6 * P], b[7 * P]));
        assert_float_equal(o->yaw, t[k].yaw, 1e-5f);
        assert_true(o->orientation[0] == 0 && o->orientation[1] == 0);
        assert_float_equal(o->orientation[2], sinf(t[k].yaw / 2), 1e-6f);
        assert_float_equal(o->orientation[3], cosf(t[k].yaw / 2), 1e-6f);
        float qz = o->orientation[2], qw = o->orientation[3];
        assert_float_equal(qz * qz + qw * qw, 1, 1e-6f);
        assert_true(o->velocity[0] == t[k].vx && o->velocity[1] == t[k].vy);
    }
    /* yaw = pi/2 -> (0, 0, sin 45, cos 45) */
    assert_float_equal(out[0].orientation[2], 0.70710678f, 1e-6f);
    assert_float_equal(out[0].orientation[3], 0.70710678f, 1e-6f);
    assert_int_equal(st.after_score, 5);
    assert_int_equal(st.after_circle, 5);
}

/* ---- score stage ---------------------------------------------------------------------------- */
static void test_yaw_gate(void **state)
{
    (void)state;
    pvm_bevfusion_params p = unit_params();
    tprop t[6] = {
        tp(0, 0, 1, 1, 0.4f, 0.9f, 0),     /* CAR, norm 0.2 < 0.3: score -> 0, dropped */
        tp(20, 0, 1, 1, 0.4f, 0.9f, 4),    /* PEDESTRIAN, threshold 0: kept */
        tp(40, 0, 1, 1, 0.0f, 0.9f, 1),    /* TRUCK, norm exactly 0.3f (cos 0): kept (>=) */
        tp(60, 0, 1, 1, 0.0f, 0.9f, 1),    /* TRUCK, norm just below 0.3f: dropped */
        tp(80, 0, 1, 1, 1.0f, 0.9f, 3),    /* BICYCLE, norm 1: kept */
        tp(100, 0, 1, 1, 1.0f, 0.05f, 3),  /* BICYCLE, norm 1, score under 0.1: dropped */
    };
    t[0].norm = 0.2f;
    t[1].norm = 0.2f;
    t[2].norm = 0.3f;
    t[3].norm = nextafterf(0.3f, 0.0f);
    pvm_bevfusion_object out[6];
    pvm_bevfusion_post_stats st;
    int n = run_props(&p, t, 6, out, &st);
    EXPECT_PROPS(out, n, "1,2,4");
    assert_int_equal(st.after_score, 3);
    assert_true(out[0].existence_probability == 0.9f);

    /* with no score threshold the gated boxes come through with probability 0 */
    set_param(&p, "score_threshold", "0");
    n = run_props(&p, t, 6, out, &st);
    EXPECT_PROPS(out, n, "1,2,4,5,0,3");
    assert_true(out[4].existence_probability == 0.0f && out[5].existence_probability == 0.0f);
    assert_true(out[3].existence_probability == 0.05f);

    /* thresholds from a request */
    set_param(&p, "score_threshold", "0.1");
    set_param(&p, "yaw_norm_thresholds", "0.1,0.3,0.3,0.3,0.5");
    n = run_props(&p, t, 6, out, &st);
    EXPECT_PROPS(out, n, "0,2,4");
}

static void test_distance_bins(void **state)
{
    (void)state;
    pvm_bevfusion_params p = unit_params();
    /* every class: bin 0 0.2, bin 1 0.5, bin 2 0.6, bin 3 0.7 */
    set_param(&p, "detection_score_thresholds",
              "0.2,0.5,0.6,0.7, 0.2,0.5,0.6,0.7, 0.2,0.5,0.6,0.7, 0.2,0.5,0.6,0.7, 0.2,0.5,0.6,0.7");
    tprop t[] = {
        tp(49.5f, 0, 1, 1, 0, 0.3f, 0),         /* 0: r 49.5 -> bin 0 (0.2): kept */
        tp(50.0f, 0, 1, 1, 0, 0.3f, 0),         /* 1: r 50 exactly -> bin 1 (0.5): dropped */
        tp(0, 50.0f, 1, 1, 0, 0.5f, 1),         /* 2: r 50 -> bin 1, score == threshold: kept */
        tp(-89.75f, 0, 1, 1, 0, 0.55f, 2),      /* 3: bin 1: kept */
        tp(-90.0f, 0, 1, 1, 0, 0.55f, 2),       /* 4: r 90 -> bin 2 (0.6): dropped */
        tp(0, -120.75f, 1, 1, 0, 0.65f, 3),     /* 5: bin 2: kept */
        tp(0, 121.0f, 1, 1, 0, 0.65f, 3),       /* 6: r 121 -> bin 3 (0.7): dropped */
        tp(0, -199.75f, 1, 1, 0, 0.99f, 4),     /* 7: bin 3: kept */
        tp(200.0f, 0, 1, 1, 0, 0.99f, 4),       /* 8: r 200 -> beyond the last limit: dropped */
        tp(150.0f, 150.0f, 1, 1, 0, 1.0f, 0),   /* 9: r 212: dropped */
        tp(-120.0f, 160.0f, 1, 1, 0, 0.7f, 0),  /* 10: r 200 exactly (3-4-5): dropped */
        tp(-96.0f, 72.0f, 1, 1, 0, 0.59f, 0),   /* 11: r 120 -> bin 2, below 0.6: dropped */
    };
    pvm_bevfusion_object out[16];
    pvm_bevfusion_post_stats st;
    int n = run_props(&p, t, (int)PVC_COUNTOF(t), out, &st);
    EXPECT_PROPS(out, n, "7,5,3,2,0");
    assert_int_equal(st.after_score, 5);

    /* fewer bins from a request: the stored per-bin thresholds stay */
    set_param(&p, "distance_bin_upper_limits", "50,90");
    n = run_props(&p, t, (int)PVC_COUNTOF(t), out, &st);
    EXPECT_PROPS(out, n, "3,2,0");
}

/* ---- circle NMS ----------------------------------------------------------------------------- */
static void test_circle_nms(void **state)
{
    (void)state;
    pvm_bevfusion_params p = unit_params();
    tprop t[] = {
        tp(0.0f, 0, 0.1f, 0.1f, 0, 0.9f, 0),    /* 0: kept */
        tp(0.375f, 0, 0.1f, 0.1f, 0, 0.8f, 0),  /* 1: 0.375 from 0: suppressed */
        tp(0.75f, 0, 0.1f, 0.1f, 0, 0.7f, 0),   /* 2: 0.375 from 1 (not kept), 0.75 from 0: kept */
        tp(1.125f, 0, 0.1f, 0.1f, 0, 0.6f, 0),  /* 3: 0.375 from 2: suppressed */
        tp(20.0f, 0, 0.1f, 0.1f, 0, 0.5f, 1),   /* 4: tie with 5; lower index wins */
        tp(20.25f, 0, 0.1f, 0.1f, 0, 0.5f, 1),  /* 5: suppressed by 4 */
        tp(40.0f, 0, 0.1f, 0.1f, 0, 0.6f, 0),   /* 6: CAR, suppressed by the pedestrian */
        tp(40.0f, 0.3f, 0.1f, 0.1f, 0, 0.95f, 4), /* 7: PEDESTRIAN: class-agnostic */
        tp(60.0f, 0, 0.1f, 0.1f, 0, 0.4f, 2),   /* 8: */
        tp(60.5f, 0, 0.1f, 0.1f, 0, 0.3f, 2),   /* 9: exactly 0.5 from 8: not suppressed (<) */
        tp(60.0f, 0.25f, 0.1f, 0.1f, 0, 0.2f, 2), /* 10: 0.25 from 8: suppressed */
    };
    pvm_bevfusion_object out[16];
    pvm_bevfusion_post_stats st;
    int n = run_props(&p, t, (int)PVC_COUNTOF(t), out, &st);
    EXPECT_PROPS(out, n, "7,0,2,4,8,9");
    assert_int_equal(st.after_score, 11);
    assert_int_equal(st.after_circle, 6);
    for (int k = 1; k < n; k++) assert_true(out[k - 1].existence_probability >= out[k].existence_probability);

    /* the tie the other way round: the lower index still wins wherever it sits */
    t[4].x = 20.25f;
    t[5].x = 20.0f;
    n = run_props(&p, t, (int)PVC_COUNTOF(t), out, &st);
    EXPECT_PROPS(out, n, "7,0,2,4,8,9");
    assert_true(out[3].position[0] == 20.25f);

    /* distance 0: nothing is suppressed */
    set_param(&p, "circle_nms_dist_threshold", "0");
    n = run_props(&p, t, (int)PVC_COUNTOF(t), out, &st);
    assert_int_equal(st.after_circle, 11);
    EXPECT_PROPS(out, n, "7,0,1,2,3,6,4,5,8,9,10");
    /* a wider circle */
    set_param(&p, "circle_nms_dist_threshold", "1.0");
    n = run_props(&p, t, (int)PVC_COUNTOF(t), out, &st);
    EXPECT_PROPS(out, n, "7,0,3,4,8");
}

/* ---- IoU NMS -------------------------------------------------------------------------------- */
static void test_iou_nms_chain(void **state)
{
    (void)state;
    pvm_bevfusion_params p = unit_params();
    /* 4x2 cars in a row, 2 m apart: IoU(A,B) = IoU(B,C) = 1/3, IoU(A,C) = 0 (touching).
     * B goes because of A; C goes because of B, although B itself was dropped. */
    tprop t[] = {
        tp(0, 0, 4, 2, 0, 0.9f, 0),
        tp(2, 0, 4, 2, 0, 0.8f, 0),
        tp(4, 0, 4, 2, 0, 0.7f, 0),
    };
    pvm_bevfusion_object out[8];
    pvm_bevfusion_post_stats st;
    int n = run_props(&p, t, 3, out, &st);
    EXPECT_PROPS(out, n, "0");
    assert_int_equal(st.after_circle, 3);
    assert_int_equal(st.after_iou, 1);
    /* without B, A and C only touch: both stay (a greedy NMS would give this with B too) */
    tprop ac[2] = { t[0], t[2] };
    n = run_props(&p, ac, 2, out, &st);
    EXPECT_PROPS(out, n, "0,1");
    /* the chain in score order C > B > A drops B and A */
    t[0].score = 0.7f;
    t[2].score = 0.9f;
    n = run_props(&p, t, 3, out, &st);
    EXPECT_PROPS(out, n, "2");
    /* threshold above 1/3: all three stay */
    set_param(&p, "iou_nms_threshold", "0.34");
    n = run_props(&p, t, 3, out, &st);
    EXPECT_PROPS(out, n, "2,1,0");
    /* search distance: the centres are 2 m apart; at 2 m (<=) they are compared, below not */
    set_param(&p, "iou_nms_threshold", "0.1");
    set_param(&p, "iou_nms_search_distance_2d", "1.99");
    n = run_props(&p, t, 3, out, &st);
    EXPECT_PROPS(out, n, "2,1,0");
    set_param(&p, "iou_nms_search_distance_2d", "2");
    n = run_props(&p, t, 3, out, &st);
    EXPECT_PROPS(out, n, "2");
    /* IoU exactly at the threshold stays (> drops). 2.5 x 1 boxes 1.5 m apart: I = 1, U = 4. */
    {
        pvm_bevfusion_params e = unit_params();
        tprop q[2] = { tp(0, 0, 2.5f, 1, 0, 0.9f, 0), tp(1.5f, 0, 2.5f, 1, 0, 0.8f, 0) };
        static tscene sc;
        pack(&e, q, 2, &sc);
        for (int i = 0; i < 2; i++) {
            sc.bb[3 * 2 + i] = exact_log(2.5f);
            sc.bb[4 * 2 + i] = exact_log(1.0f);
        }
        const float ba[5] = { 0, 0, 2.5f, 1, 0 }, bb[5] = { 1.5f, 0, 2.5f, 1, 0 };
        assert_true(pvm_bevfusion_iou_bev(ba, bb) == 0.25f);
        set_param(&e, "iou_nms_threshold", "0.25");
        n = run_scene(&e, &sc, out, &st);
        EXPECT_PROPS(out, n, "0,1");
        set_param(&e, "iou_nms_threshold", "0.2499");
        n = run_scene(&e, &sc, out, &st);
        EXPECT_PROPS(out, n, "0");
    }
    /* CAR vs TRUCK are compared too (all classes) */
    set_param(&p, "iou_nms_search_distance_2d", "10");
    t[1].cls = 1;
    n = run_props(&p, t, 3, out, &st);
    EXPECT_PROPS(out, n, "2");
}

static void test_pedestrian_exemption(void **state)
{
    (void)state;
    pvm_bevfusion_params p = unit_params();
    /* 1x1 boxes 0.6 m apart (past the circle): IoU = 0.4 / 1.6 = 0.25 > 0.1 */
    tprop t[] = {
        tp(0, 0, 1, 1, 0, 0.9f, 4),      /* 0: PEDESTRIAN */
        tp(0.6f, 0, 1, 1, 0, 0.8f, 0),   /* 1: CAR next to it: exempt, stays */
        tp(20, 0, 1, 1, 0, 0.9f, 4),     /* 2: PEDESTRIAN */
        tp(20.6f, 0, 1, 1, 0, 0.8f, 4),  /* 3: PEDESTRIAN next to it: same label, dropped */
        tp(40, 0, 1, 1, 0, 0.9f, 3),     /* 4: BICYCLE */
        tp(40.6f, 0, 1, 1, 0, 0.8f, 4),  /* 5: PEDESTRIAN next to it: exempt, stays */
        tp(60, 0, 1, 1, 0, 0.9f, 3),     /* 6: BICYCLE */
        tp(60.6f, 0, 1, 1, 0, 0.8f, 0),  /* 7: CAR next to it: different, neither pedestrian: dropped */
    };
    pvm_bevfusion_object out[8];
    pvm_bevfusion_post_stats st;
    int n = run_props(&p, t, 8, out, &st);
    EXPECT_PROPS(out, n, "0,2,4,6,1,5");
    assert_int_equal(st.after_circle, 8);
    assert_int_equal(st.after_iou, 6);
}

/* ---- remapper and labels -------------------------------------------------------------------- */
static void test_remap_boundaries(void **state)
{
    (void)state;
    pvm_bevfusion_params p = v2_params();
    const uint8_t CAR = PVM_BF_CAR, TRUCK = PVM_BF_TRUCK, BUS = PVM_BF_BUS, TRAILER = PVM_BF_TRAILER;
    assert_int_equal(pvm_bevfusion_remap_label(&p, CAR, 4.5f, 1.9f), CAR);
    assert_int_equal(pvm_bevfusion_remap_label(&p, CAR, 12.1f, 1.0f), TRUCK);               /* min inclusive */
    assert_int_equal(pvm_bevfusion_remap_label(&p, CAR, nextafterf(12.1f, 0), 1.0f), CAR);
    assert_int_equal(pvm_bevfusion_remap_label(&p, CAR, 6.0f, 6.0f), TRUCK);                /* 36: TRUCK first */
    assert_int_equal(pvm_bevfusion_remap_label(&p, CAR, 36.0f, 1.0f), TRUCK);
    assert_int_equal(pvm_bevfusion_remap_label(&p, CAR, nextafterf(36.0f, 100), 1.0f), TRAILER);
    assert_int_equal(pvm_bevfusion_remap_label(&p, CAR, 999.999f, 1.0f), TRAILER);          /* max inclusive */
    assert_int_equal(pvm_bevfusion_remap_label(&p, CAR, nextafterf(999.999f, 2000), 1.0f), CAR);
    assert_int_equal(pvm_bevfusion_remap_label(&p, TRUCK, 36.0f, 1.0f), TRAILER);
    assert_int_equal(pvm_bevfusion_remap_label(&p, TRUCK, nextafterf(36.0f, 0), 1.0f), TRUCK);
    assert_int_equal(pvm_bevfusion_remap_label(&p, TRUCK, 20.0f, 1.0f), TRUCK);              /* no TRUCK->TRUCK row */
    assert_int_equal(pvm_bevfusion_remap_label(&p, BUS, 36.0f, 1.0f), TRAILER);
    assert_int_equal(pvm_bevfusion_remap_label(&p, BUS, 12.1f, 1.0f), BUS);
    assert_int_equal(pvm_bevfusion_remap_label(&p, BUS, 999.999f, 1.0f), TRAILER);
    assert_int_equal(pvm_bevfusion_remap_label(&p, BUS, 1000.0f, 1.0f), BUS);
    assert_int_equal(pvm_bevfusion_remap_label(&p, PVM_BF_PEDESTRIAN, 50.0f, 1.0f), PVM_BF_PEDESTRIAN);
    assert_int_equal(pvm_bevfusion_remap_label(&p, PVM_BF_BICYCLE, 40.0f, 1.0f), PVM_BF_BICYCLE);
    assert_int_equal(pvm_bevfusion_remap_label(&p, PVM_BF_UNKNOWN, 40.0f, 1.0f), PVM_BF_UNKNOWN);
    assert_int_equal(pvm_bevfusion_remap_label(&p, 9, 40.0f, 1.0f), 9);
    assert_int_equal(pvm_bevfusion_remap_label(&p, CAR, NAN, 1.0f), CAR);
    assert_int_equal(pvm_bevfusion_remap_label(NULL, CAR, 40.0f, 1.0f), CAR);

    /* through post: remapping is last, the label before it and orientation stay */
    pvm_bevfusion_params u = unit_params();
    tprop t[] = {
        tp(0, 0, 10, 2, 0, 0.9f, 0),     /* CAR 20 m^2 -> TRUCK */
        tp(30, 0, 20, 3, 0, 0.8f, 0),    /* CAR 60 m^2 -> TRAILER */
        tp(60, 0, 15, 3, 0, 0.7f, 2),    /* BUS 45 m^2 -> TRAILER */
        tp(90, 0, 30, 2, 0, 0.6f, 4),    /* PEDESTRIAN, huge: stays */
        tp(120, 0, 4, 2, 0, 0.5f, 0),    /* CAR 8 m^2: stays */
    };
    pvm_bevfusion_object out[8];
    pvm_bevfusion_post_stats st;
    int n = run_props(&u, t, 5, out, &st);
    EXPECT_PROPS(out, n, "0,1,2,3,4");
    static const uint8_t after[5] = { 2, 4, 4, 7, 1 }, before[5] = { 1, 1, 3, 7, 1 };
    static const uint8_t orient[5] = { 1, 1, 1, 0, 1 };
    for (int k = 0; k < 5; k++) {
        assert_int_equal(out[k].label, after[k]);
        assert_int_equal(out[k].label_before_remap, before[k]);
        assert_int_equal(out[k].orientation_availability, orient[k]);
    }
    /* orientation_availability follows the label BEFORE remapping: with a made-up matrix that
     * turns pedestrians into cars and cars into pedestrians, both keep their first value */
    pvm_bevfusion_params x = u;
    memset(x.remap_allow, 0, sizeof x.remap_allow);
    x.remap_allow[PVM_BF_PEDESTRIAN][PVM_BF_CAR] = 1;
    x.remap_min[PVM_BF_PEDESTRIAN][PVM_BF_CAR] = 0;
    x.remap_max[PVM_BF_PEDESTRIAN][PVM_BF_CAR] = 1000;
    x.remap_allow[PVM_BF_CAR][PVM_BF_PEDESTRIAN] = 1;
    x.remap_min[PVM_BF_CAR][PVM_BF_PEDESTRIAN] = 0;
    x.remap_max[PVM_BF_CAR][PVM_BF_PEDESTRIAN] = 1000;
    n = run_props(&x, t, 5, out, &st);
    EXPECT_PROPS(out, n, "0,1,2,3,4");
    static const uint8_t swapped[5] = { 7, 7, 3, 1, 7 };
    for (int k = 0; k < 5; k++) {
        assert_int_equal(out[k].label, swapped[k]);
        assert_int_equal(out[k].orientation_availability, orient[k]);
    }
    /* without remapper matrices nothing changes */
    memset(u.remap_allow, 0, sizeof u.remap_allow);
    n = run_props(&u, t, 5, out, &st);
    for (int k = 0; k < n; k++) assert_int_equal(out[k].label, before[k]);
}

static void test_label_mapping(void **state)
{
    (void)state;
    assert_int_equal(pvm_bevfusion_label_from_name("CAR"), 1);
    assert_int_equal(pvm_bevfusion_label_from_name("TRUCK"), 2);
    assert_int_equal(pvm_bevfusion_label_from_name("BUS"), 3);
    assert_int_equal(pvm_bevfusion_label_from_name("TRAILER"), 4);
    assert_int_equal(pvm_bevfusion_label_from_name("MOTORCYCLE"), 5);
    assert_int_equal(pvm_bevfusion_label_from_name("BICYCLE"), 6);
    assert_int_equal(pvm_bevfusion_label_from_name("PEDESTRIAN"), 7);
    assert_int_equal(pvm_bevfusion_label_from_name("car"), 0);
    assert_int_equal(pvm_bevfusion_label_from_name("BARRIER"), 0);
    assert_int_equal(pvm_bevfusion_label_from_name(""), 0);
    assert_int_equal(pvm_bevfusion_label_from_name(NULL), 0);

    /* the network's class list decides, by name */
    pvm_bevfusion_params p = unit_params();
    pvc_msg msg = { "" };
    const char *text = edit(pvm_bevfusion_ml_package_v2_yaml,
                            "[\"CAR\", \"TRUCK\", \"BUS\", \"BICYCLE\", \"PEDESTRIAN\"]",
                            "[PEDESTRIAN, car, TRAILER, MOTORCYCLE, BARRIER, BUS]");
    pvm_bevfusion_params q = p;
    if (pvm_bevfusion_params_parse_ml_package(&q, text, strlen(text), NULL, &msg) != PV_OK)
        fail_msg("%s", msg.text);
    assert_int_equal(q.nclass, 6);
    q.pc_range[0] = q.pc_range[1] = -300.0f;
    q.voxel_size[0] = q.voxel_size[1] = 0.125f;
    tprop t[8];
    for (int c = 0; c < 8; c++) t[c] = tp(20.0f * (float)c, 0, 1, 1, 0, 0.9f - 0.05f * (float)c, c);
    t[7].cls = -1;          /* 6 (>= nclass) and -1: dropped */
    pvm_bevfusion_object out[8];
    pvm_bevfusion_post_stats st;
    int n = run_props(&q, t, 8, out, &st);
    EXPECT_PROPS(out, n, "0,1,2,3,4,5");
    static const uint8_t lbl[6] = { 7, 0, 4, 5, 0, 3 }, orient[6] = { 0, 0, 1, 0, 0, 1 };
    for (int k = 0; k < 6; k++) {
        assert_int_equal(out[k].label_before_remap, lbl[k]);
        assert_int_equal(out[k].orientation_availability, orient[k]);
        assert_int_equal(out[k].class_index, k);
    }
    assert_int_equal(st.after_score, 6);
}

/* ---- bad calls ------------------------------------------------------------------------------ */
static void test_post_bad_input(void **state)
{
    (void)state;
    pvm_bevfusion_params p = unit_params(), d;
    pvm_bevfusion_params_defaults(&d);
    static tscene s;
    tprop t[6] = {
        tp(0, 0, 1, 1, 0, 0.9f, 0), tp(20, 0, 1, 1, 0, 0.9f, 0), tp(40, 0, 1, 1, 0, 0.9f, 0),
        tp(60, 0, 1, 1, 0, 0.9f, 0), tp(80, 0, 1, 1, 0, 0.9f, 0), tp(100, 0, 1, 1, 0, 0.9f, 0),
    };
    pack(&p, t, 6, &s);
    s.score[1] = NAN;
    s.bb[2 * 6 + 2] = INFINITY;   /* z of 2 */
    s.bb[3 * 6 + 3] = 100.0f;     /* exp overflows: length of 3 */
    s.bb[6 * 6 + 4] = NAN;        /* sin of 4 */
    pvm_bevfusion_object out[6];
    pvm_bevfusion_post_stats st;
    int n = run_scene(&p, &s, out, &st);
    EXPECT_PROPS(out, n, "0,5");
    assert_int_equal(st.after_score, 2);

    pvc_msg msg = { "" };
    void *ws = pvc_malloc(pvm_bevfusion_post_ws_bytes(6));
    assert_int_equal(pvm_bevfusion_post(NULL, s.bb, s.score, s.label, 6, out, &n, &st, ws, &msg), PV_EINPUT);
    assert_int_equal(pvm_bevfusion_post(&p, s.bb, s.score, s.label, -1, out, &n, &st, ws, &msg), PV_EINPUT);
    assert_int_equal(pvm_bevfusion_post(&p, NULL, s.score, s.label, 6, out, &n, &st, ws, &msg), PV_EINPUT);
    assert_int_equal(pvm_bevfusion_post(&p, s.bb, s.score, s.label, 6, out, &n, &st, NULL, &msg), PV_EINPUT);
    assert_int_equal(pvm_bevfusion_post(&p, s.bb, s.score, s.label, 6, out, NULL, &st, ws, &msg), PV_EINPUT);
    assert_int_equal(pvm_bevfusion_post(&p, s.bb, s.score, s.label, 6, out, &n, &st, (char *)ws + 1, &msg),
                     PV_EINPUT);
    assert_int_equal(pvm_bevfusion_post(&d, s.bb, s.score, s.label, 6, out, &n, &st, ws, &msg), PV_EINPUT);
    assert_non_null(strstr(msg.text, "nclass"));
    pvm_bevfusion_params z = p;
    z.nbins = 0;
    assert_int_equal(pvm_bevfusion_post(&z, s.bb, s.score, s.label, 6, out, &n, &st, ws, &msg), PV_EINPUT);
    assert_non_null(strstr(msg.text, "nbins"));
    /* no proposals: fine, nothing out; st may be NULL */
    n = -1;
    assert_int_equal(pvm_bevfusion_post(&p, NULL, NULL, NULL, 0, out, &n, NULL, NULL, &msg), PV_OK);
    assert_int_equal(n, 0);
    assert_int_equal(pvm_bevfusion_post_ws_bytes(0), 0);
    assert_int_equal(pvm_bevfusion_post_ws_bytes(-5), 0);
    assert_true(pvm_bevfusion_post_ws_bytes(500) >= 500 * 17);
    pvc_free(ws);
}

/* ---- random scenes vs a plain re-statement ------------------------------------------------- */
static uint64_t rng_state;

static uint64_t rng_next(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static float rng_uniform(float lo, float hi)
{
    return lo + (hi - lo) * (float)((double)(rng_next() >> 11) / 9007199254740992.0);
}

typedef struct rcand { int prop; float score, x, y, l, w, yaw; uint8_t lbl; } rcand;

/* The rules of specs/bevfusion.md 3.1-3.6 written out the slow, obvious way. */
static int reference(const pvm_bevfusion_params *p, const tscene *s, rcand *keep, int *n_score, int *n_circle)
{
    static rcand c[MAXP], sorted[MAXP], kept[MAXP];
    static const uint8_t lbl[5] = { 1, 2, 3, 6, 7 };
    int P = s->P, n = 0;
    for (int i = 0; i < P; i++) {
        const float *b = s->bb + i;
        int64_t cls = s->label[i];
        if (cls < 0 || cls > 4) continue;
        float x = b[0] * (float)p->out_size_factor * p->voxel_size[0] + p->pc_range[0];
        float y = b[P] * (float)p->out_size_factor * p->voxel_size[1] + p->pc_range[1];
        float norm = sqrtf(b[6 * P] * b[6 * P] + b[7 * P] * b[7 * P]);
        float sc = norm >= p->yaw_norm_thresholds[cls] ? s->score[i] : 0.0f;
        int bin = -1;
        for (int k = p->nbins - 1; k >= 0; k--)
            if (x * x + y * y < p->bin_upper[k] * p->bin_upper[k]) bin = k;
        if (bin < 0 || !(sc >= p->score_thr[cls][bin])) continue;
        rcand rc = { i, sc, x, y, expf(b[3 * P]), expf(b[4 * P]), atan2f(b[6 * P], b[7 * P]), lbl[cls] };
        c[n++] = rc;
    }
    *n_score = n;
    /* selection sort: best remaining each time */
    bool used[MAXP] = { false };
    for (int k = 0; k < n; k++) {
        int best = -1;
        for (int i = 0; i < n; i++) {
            if (used[i]) continue;
            bool better = best < 0 || c[i].score > c[best].score ||
                          (c[i].score == c[best].score && c[i].prop < c[best].prop);
            if (better) best = i;
        }
        used[best] = true;
        sorted[k] = c[best];
    }
    int nk = 0;
    float d2 = p->circle_nms_dist_threshold * p->circle_nms_dist_threshold;
    for (int i = 0; i < n; i++) {
        bool near = false;
        for (int j = 0; j < nk; j++) {
            float dx = sorted[i].x - kept[j].x, dy = sorted[i].y - kept[j].y;
            near = near || dx * dx + dy * dy < d2;
        }
        if (!near) kept[nk++] = sorted[i];
    }
    *n_circle = nk;
    int m = 0;
    double s2 = (double)p->iou_nms_search_distance_2d * p->iou_nms_search_distance_2d;
    for (int i = 0; i < nk; i++) {
        bool suppressed = false;
        for (int j = 0; j < i; j++) {
            const rcand *a = &kept[i], *o = &kept[j];
            double dx = (double)a->x - o->x, dy = (double)a->y - o->y;
            bool ped_pair = a->lbl != o->lbl && (a->lbl == 7 || o->lbl == 7);
            float ba[5] = { a->x, a->y, a->l, a->w, a->yaw }, bo[5] = { o->x, o->y, o->l, o->w, o->yaw };
            if (dx * dx + dy * dy <= s2 && !ped_pair && pvm_bevfusion_iou_bev(ba, bo) > p->iou_nms_threshold)
                suppressed = true;
        }
        if (!suppressed) keep[m++] = kept[i];
    }
    return m;
}

static void random_scene(const pvm_bevfusion_params *p, tscene *s, int P)
{
    tprop t[MAXP];
    float cx[40], cy[40];
    for (int k = 0; k < 40; k++) {
        float r = rng_uniform(0, 215), a = rng_uniform(-PI_F, PI_F);
        cx[k] = r * cosf(a);
        cy[k] = r * sinf(a);
    }
    for (int i = 0; i < P; i++) {
        int k = (int)(rng_next() % 40);
        float l = rng_uniform(0.4f, 12.0f), w = rng_uniform(0.4f, 3.5f);
        /* scores on a 1/20 grid: many ties */
        float score = (float)(rng_next() % 21) / 20.0f;
        int64_t cls = (int64_t)(rng_next() % 5);
        if (rng_next() % 50 == 0) cls = rng_next() % 2 ? 5 : -1;
        t[i] = tp(cx[k] + rng_uniform(-2.5f, 2.5f), cy[k] + rng_uniform(-2.5f, 2.5f), l, w,
                  rng_uniform(-PI_F, PI_F), score, cls);
        t[i].norm = rng_uniform(0.1f, 1.2f);
        t[i].z = rng_uniform(-2, 3);
    }
    pack(p, t, P, s);
}

static void check_random(const pvm_bevfusion_params *p, const tscene *s)
{
    static pvm_bevfusion_object out[MAXP];
    static rcand want[MAXP];
    pvm_bevfusion_post_stats st;
    int n = run_scene(p, s, out, &st);
    int ns = 0, nc = 0, nw = reference(p, s, want, &ns, &nc);
    assert_int_equal(st.after_score, ns);
    assert_int_equal(st.after_circle, nc);
    assert_int_equal(n, nw);
    assert_true(st.proposals >= st.after_score && st.after_score >= st.after_circle && st.after_circle >= n);
    for (int k = 0; k < n; k++) {
        const pvm_bevfusion_object *o = &out[k];
        assert_int_equal(o->proposal, want[k].prop);
        assert_true(o->existence_probability == want[k].score);
        assert_true(o->position[0] == want[k].x && o->position[1] == want[k].y);
        assert_int_equal(o->label_before_remap, want[k].lbl);
        assert_int_equal(o->label, pvm_bevfusion_remap_label(p, want[k].lbl, want[k].l, want[k].w));
        assert_int_equal(o->class_index, (int)s->label[o->proposal]);
        /* invariants: score order, and no pair of outputs that either NMS would have split */
        if (k > 0) assert_true(out[k - 1].existence_probability >= o->existence_probability);
        for (int j = 0; j < k; j++) {
            const pvm_bevfusion_object *q = &out[j];
            float dx = o->position[0] - q->position[0], dy = o->position[1] - q->position[1];
            assert_false(dx * dx + dy * dy < p->circle_nms_dist_threshold * p->circle_nms_dist_threshold);
            if (q->existence_probability == o->existence_probability) assert_true(q->proposal < o->proposal);
            bool ped = o->label_before_remap != q->label_before_remap &&
                       (o->label_before_remap == 7 || q->label_before_remap == 7);
            float bo[5] = { o->position[0], o->position[1], o->dimensions[0], o->dimensions[1], o->yaw };
            float bq[5] = { q->position[0], q->position[1], q->dimensions[0], q->dimensions[1], q->yaw };
            double dd = (double)dx * dx + (double)dy * dy;
            double s2 = (double)p->iou_nms_search_distance_2d * p->iou_nms_search_distance_2d;
            if (dd <= s2 && !ped) assert_false(pvm_bevfusion_iou_bev(bo, bq) > p->iou_nms_threshold);
        }
    }
}

static void test_random_invariants(void **state)
{
    (void)state;
    static tscene s;
    rng_state = 20261130;
    pvm_bevfusion_params p = v2_params();
    long drops_circle = 0, drops_iou = 0;
    for (int round = 0; round < 6; round++) {
        pvm_bevfusion_params q = p;
        if (round == 2) set_param(&q, "circle_nms_dist_threshold", "0");
        if (round == 3) set_param(&q, "iou_nms_threshold", "0.3");
        if (round == 4) set_param(&q, "score_threshold", "0");
        if (round == 5) {
            set_param(&q, "distance_bin_upper_limits", "30,60,100");
            set_param(&q, "detection_score_thresholds",
                      "0.1,0.3,0.5, 0.2,0.2,0.2, 0,0.5,0.9, 0.4,0.3,0.2, 0.05,0.1,0.15");
            set_param(&q, "circle_nms_dist_threshold", "2");
        }
        random_scene(&q, &s, 500);
        check_random(&q, &s);
        pvm_bevfusion_object out[MAXP];
        pvm_bevfusion_post_stats st;
        run_scene(&q, &s, out, &st);
        drops_circle += st.after_score - st.after_circle;
        drops_iou += st.after_circle - st.after_iou;
    }
    /* the scenes are crowded enough that both stages had work to do */
    assert_true(drops_circle > 20);
    assert_true(drops_iou > 20);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_iou_cases),
        cmocka_unit_test(test_decode_fields),
        cmocka_unit_test(test_yaw_gate),
        cmocka_unit_test(test_distance_bins),
        cmocka_unit_test(test_circle_nms),
        cmocka_unit_test(test_iou_nms_chain),
        cmocka_unit_test(test_pedestrian_exemption),
        cmocka_unit_test(test_remap_boundaries),
        cmocka_unit_test(test_label_mapping),
        cmocka_unit_test(test_post_bad_input),
        cmocka_unit_test(test_random_invariants),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
