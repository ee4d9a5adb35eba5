/* Tests for src/models/bevfusion/pre (point assembly, stateless sweeps, Autoware densification
 * streams).
 *
 * Expected rows are computed by hand in the comments (90-degree yaw + translation, so that every
 * value is exact in float) and checked exactly; the large-coordinate case checks the double
 * composition of poses against a double evaluation. Threads: pthreads drive interleaved ids
 * whose points encode (id, frame), so any mixing of state shows as a wrong row; one id from two
 * threads must give a chain of accepted frames; an allocator hook that parks threads inside the
 * cache pins all 16 streams to check that a 17th id waits rather than evicting a busy one.
 * (Checked by mutation: without the per-stream lock the one-id test fails in most runs; without
 * the busy check the 16-busy test fails every time.) */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "models/bevfusion/pre.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NaN ((float)NAN)
#define INF ((float)INFINITY)

/* ---- helpers -------------------------------------------------------------------------------- */

static void ident(double T[16])
{
    memset(T, 0, 16 * sizeof(double));
    T[0] = T[5] = T[10] = T[15] = 1.0;
}

/* Yaw by quarter turns (exact), then translation: row-major. */
static void yaw90(double T[16], int quarter_turns, double tx, double ty, double tz)
{
    static const double c4[4] = { 1, 0, -1, 0 }, s4[4] = { 0, 1, 0, -1 };
    int q = ((quarter_turns % 4) + 4) % 4;
    ident(T);
    T[0] = c4[q]; T[1] = -s4[q];
    T[4] = s4[q]; T[5] = c4[q];
    T[3] = tx; T[7] = ty; T[11] = tz;
}

static void yaw_rad(double T[16], double yaw, double tx, double ty, double tz)
{
    ident(T);
    T[0] = cos(yaw); T[1] = -sin(yaw);
    T[4] = sin(yaw); T[5] = cos(yaw);
    T[3] = tx; T[7] = ty; T[11] = tz;
}

static void expect_row(const pvm_bevfusion_points *o, int64_t i, float x, float y, float z, float t)
{
    if (i >= o->n) fail_msg("row %lld missing (n %lld)", (long long)i, (long long)o->n);
    const float *r = o->xyzt + i * 4;
    if (r[0] != x || r[1] != y || r[2] != z || r[3] != t)
        fail_msg("row %lld: (%.9g, %.9g, %.9g, %.9g), want (%.9g, %.9g, %.9g, %.9g)", (long long)i,
                 (double)r[0], (double)r[1], (double)r[2], (double)r[3], (double)x, (double)y,
                 (double)z, (double)t);
}

static void expect_fail(pv_status got, const pvc_msg *m, pv_status want, const char *sub)
{
    if (got != want || (sub && !strstr(m->text, sub)))
        fail_msg("status %d (want %d), message \"%s\" (want \"%s\")", (int)got, (int)want, m->text,
                 sub ? sub : "");
}

static float g_buf[1024 * 4];

static pvm_bevfusion_points out_buf(int64_t cap)
{
    assert_true(cap <= 1024);
    for (size_t i = 0; i < PVC_COUNTOF(g_buf); i++) g_buf[i] = -12345.0f;
    return (pvm_bevfusion_points){ .xyzt = g_buf, .cap = cap };
}

static pvm_bevfusion_frame_in frame(const float *pts, int64_t n, int32_t stride)
{
    return (pvm_bevfusion_frame_in){ .pts = pts, .n = n, .stride = stride, .time_lag_col = -1 };
}

/* ---- plain and time_lag modes --------------------------------------------------------------- */

static void test_plain(void **state)
{
    (void)state;
    /* x y z intensity: intensity NaN is ignored; NaN x and Inf z drop the point */
    const float pts[] = { 1, 2, 3, NaN,   NaN, 0, 0, 1,   4, 5, 6, 7,   0, 0, INF, 1,   -1, -2, -3, 0 };
    pvm_bevfusion_frame_in in = frame(pts, 5, 4);
    pvm_bevfusion_points o = out_buf(8);
    pvc_msg m;
    assert_int_equal(pvm_bevfusion_points_build(NULL, &in, &o, &m), PV_OK);
    assert_int_equal(o.n, 3);
    expect_row(&o, 0, 1, 2, 3, 0);
    expect_row(&o, 1, 4, 5, 6, 0);
    expect_row(&o, 2, -1, -2, -3, 0);
    assert_int_equal(o.dropped_nonfinite, 2);
    assert_int_equal(o.dropped_capacity, 0);
    assert_int_equal(o.sweeps_used, 1);
    assert_int_equal(o.sweeps_dropped, 0);

    /* stride 3, empty cloud */
    in = frame(pts, 0, 3);
    assert_int_equal(pvm_bevfusion_points_build(NULL, &in, &o, &m), PV_OK);
    assert_int_equal(o.n, 0);
    assert_int_equal(o.sweeps_used, 1);
    in = frame(NULL, 0, 3);
    assert_int_equal(pvm_bevfusion_points_build(NULL, &in, &o, &m), PV_OK);
}

static void test_time_lag_col(void **state)
{
    (void)state;
    /* x y z intensity time_lag: a NaN time_lag drops the point; values pass as given */
    const float pts[] = { 1, 2, 3, 9, 0.0f,   4, 5, 6, 9, 0.05f,   7, 8, 9, 9, NaN,   1, 1, 1, NaN, 0.45f };
    pvm_bevfusion_frame_in in = frame(pts, 4, 5);
    in.time_lag_col = 4;
    pvm_bevfusion_points o = out_buf(8);
    pvc_msg m;
    assert_int_equal(pvm_bevfusion_points_build(NULL, &in, &o, &m), PV_OK);
    assert_int_equal(o.n, 3);
    expect_row(&o, 0, 1, 2, 3, 0.0f);
    expect_row(&o, 1, 4, 5, 6, 0.05f);
    expect_row(&o, 2, 1, 1, 1, 0.45f);
    assert_int_equal(o.dropped_nonfinite, 1);
    assert_int_equal(o.sweeps_used, 1);

    /* column 3 works too (then intensity is the lag: the caller's choice) */
    in.time_lag_col = 3;
    assert_int_equal(pvm_bevfusion_points_build(NULL, &in, &o, &m), PV_OK);
    assert_int_equal(o.n, 3);
    expect_row(&o, 0, 1, 2, 3, 9);

    static const int32_t bad[] = { 0, 2, 5, -2 };
    for (size_t i = 0; i < PVC_COUNTOF(bad); i++) {
        in.time_lag_col = bad[i];
        expect_fail(pvm_bevfusion_points_build(NULL, &in, &o, &m), &m, PV_EINPUT, "frame.time_lag_col");
        assert_int_equal(o.n, 0);
    }
}

/* ---- stateless sweeps ----------------------------------------------------------------------- */

static void test_sweeps(void **state)
{
    (void)state;
    const float cur[] = { 0.5f, 0.25f, 1, 100 };
    /* sweep A, stride 3: yaw +90 (x' = -y, y' = x) then +(10, 20, 1):
     * (1, 2, 3) -> (-2, 1, 3) + t = (8, 21, 4); (-4, 0.5, 0) -> (-0.5, -4, 0) + t = (9.5, 16, 1) */
    const float a[] = { 1, 2, 3,   -4, 0.5f, 0 };
    /* sweep B, stride 5: identity + (-1, 0, 0); its second point is NaN */
    const float b[] = { 2, 2, 2, 0, 0,   NaN, 1, 1, 0, 0,   3, -3, 0.5f, 0, 0 };
    pvm_bevfusion_sweep sw[2] = {
        { .pts = a, .n = 2, .stride = 3, .time_lag_s = 0.05f },
        { .pts = b, .n = 3, .stride = 5, .time_lag_s = 0.1f },
    };
    yaw90(sw[0].T_current_from_sweep, 1, 10, 20, 1);
    yaw90(sw[1].T_current_from_sweep, 0, -1, 0, 0);
    pvm_bevfusion_frame_in in = frame(cur, 1, 4);
    in.sweeps = sw;
    in.nsweeps = 2;
    pvm_bevfusion_points o = out_buf(16);
    pvc_msg m;
    assert_int_equal(pvm_bevfusion_points_build(NULL, &in, &o, &m), PV_OK);
    assert_int_equal(o.n, 5);
    expect_row(&o, 0, 0.5f, 0.25f, 1, 0);
    expect_row(&o, 1, 8, 21, 4, 0.05f);
    expect_row(&o, 2, 9.5f, 16, 1, 0.05f);
    expect_row(&o, 3, 1, 2, 2, 0.1f);
    expect_row(&o, 4, 2, -3, 0.5f, 0.1f);
    assert_int_equal(o.dropped_nonfinite, 1);
    assert_int_equal(o.sweeps_used, 3);
    assert_int_equal(o.sweeps_dropped, 0);

    /* yaw -90 (x' = y, y' = -x): (1, 2, 3) -> (2, -1, 3); a 180 degree turn: -> (-1, -2, 3) */
    yaw90(sw[0].T_current_from_sweep, -1, 0, 0, 0);
    yaw90(sw[1].T_current_from_sweep, 2, 0, 0, 0);
    sw[1].pts = a;
    sw[1].n = 1;
    sw[1].stride = 3;
    assert_int_equal(pvm_bevfusion_points_build(NULL, &in, &o, &m), PV_OK);
    assert_int_equal(o.n, 4);
    expect_row(&o, 1, 2, -1, 3, 0.05f);
    expect_row(&o, 2, 0.5f, 4, 0, 0.05f);
    expect_row(&o, 3, -1, -2, 3, 0.1f);

    /* a sweep whose transform overflows float drops those points as non-finite */
    const float huge[] = { 3e38f, 3e38f, 0,   1, 1, 1 };
    sw[0].pts = huge;
    yaw90(sw[0].T_current_from_sweep, 0, 1e9, 0, 0);
    sw[0].T_current_from_sweep[0] = cos(0.5);
    sw[0].T_current_from_sweep[1] = -sin(0.5);
    sw[0].T_current_from_sweep[4] = sin(0.5);
    sw[0].T_current_from_sweep[5] = cos(0.5);
    in.nsweeps = 1;
    assert_int_equal(pvm_bevfusion_points_build(NULL, &in, &o, &m), PV_OK);
    assert_int_equal(o.n, 2);
    /* y' = sin(0.5) 3e38 + cos(0.5) 3e38 = 4.07e38 > FLT_MAX: dropped; x' stays finite */
    assert_int_equal(o.dropped_nonfinite, 1);
    for (int64_t i = 0; i < o.n * 4; i++) assert_true(isfinite(o.xyzt[i]));

    /* the stateless modes allocate nothing */
    pvc_alloc_test_begin(0);
    assert_int_equal(pvm_bevfusion_points_build(NULL, &in, &o, &m), PV_OK);
    long count = pvc_alloc_count();
    pvc_alloc_test_end();
    assert_int_equal(count, 0);
}

/* A table of bad transforms and lags; each names sweeps[1]. */
static void test_bad_matrices(void **state)
{
    (void)state;
    const float p[] = { 1, 2, 3 };
    pvm_bevfusion_sweep sw[2] = { { .pts = p, .n = 1, .stride = 3, .time_lag_s = 0.1f },
                                  { .pts = p, .n = 1, .stride = 3, .time_lag_s = 0.2f } };
    ident(sw[0].T_current_from_sweep);
    pvm_bevfusion_frame_in in = frame(p, 1, 3);
    in.sweeps = sw;
    in.nsweeps = 2;
    pvm_bevfusion_points o = out_buf(8);
    pvc_msg m;
    struct { int idx; double v; const char *sub; } cases[] = {
        { 5, NAN, "[1][1] is nan" },
        { 3, INFINITY, "[0][3] is inf" },
        { 14, 0.5, "last row is (0, 0, 0.5, 1)" },
        { 15, 2.0, "last row" },
        { 12, 1e-9, "last row" },
        { 0, 2.0, "not orthonormal" },                   /* scale */
        { 2, 2e-3, "not orthonormal" },                  /* R R^T off by 2e-3 */
        { 7, 2e9, "[1][3] is 2e+09" },                   /* translation too large */
    };
    for (size_t i = 0; i < PVC_COUNTOF(cases); i++) {
        yaw90(sw[1].T_current_from_sweep, 1, 1, 2, 3);
        sw[1].T_current_from_sweep[cases[i].idx] = cases[i].v;
        pv_status s = pvm_bevfusion_points_build(NULL, &in, &o, &m);
        expect_fail(s, &m, PV_EINPUT, "sweeps[1].T_current_from_sweep");
        expect_fail(s, &m, PV_EINPUT, cases[i].sub);
        assert_int_equal(o.n, 0);
    }
    /* a reflection (det -1) */
    ident(sw[1].T_current_from_sweep);
    sw[1].T_current_from_sweep[10] = -1;
    expect_fail(pvm_bevfusion_points_build(NULL, &in, &o, &m), &m, PV_EINPUT, "determinant -1");
    /* within tolerance: accepted */
    ident(sw[1].T_current_from_sweep);
    sw[1].T_current_from_sweep[1] = 4e-4;
    assert_int_equal(pvm_bevfusion_points_build(NULL, &in, &o, &m), PV_OK);
    assert_int_equal(o.n, 3);

    /* lags */
    ident(sw[1].T_current_from_sweep);
    sw[1].time_lag_s = -0.1f;
    expect_fail(pvm_bevfusion_points_build(NULL, &in, &o, &m), &m, PV_EINPUT, "sweeps[1].time_lag_s -0.1");
    sw[1].time_lag_s = NaN;
    expect_fail(pvm_bevfusion_points_build(NULL, &in, &o, &m), &m, PV_EINPUT, "sweeps[1].time_lag_s nan");
    sw[1].time_lag_s = 0.0f;
    assert_int_equal(pvm_bevfusion_points_build(NULL, &in, &o, &m), PV_OK);
    /* sweep cloud fields */
    sw[1].stride = 2;
    expect_fail(pvm_bevfusion_points_build(NULL, &in, &o, &m), &m, PV_EINPUT, "sweeps[1].stride 2");
    sw[1].stride = 3;
    sw[1].pts = NULL;
    expect_fail(pvm_bevfusion_points_build(NULL, &in, &o, &m), &m, PV_EINPUT, "sweeps[1].pts is NULL");
    sw[1].pts = p;
    sw[1].n = -1;
    expect_fail(pvm_bevfusion_points_build(NULL, &in, &o, &m), &m, PV_EINPUT, "sweeps[1].n -1");
}

static void test_mode_conflicts(void **state)
{
    (void)state;
    const float p[] = { 1, 2, 3, 0 };
    pvm_bevfusion_sweep sw = { .pts = p, .n = 1, .stride = 4, .time_lag_s = 0.1f };
    ident(sw.T_current_from_sweep);
    pvm_bevfusion_stream_in si = { .id = "a", .timestamp_s = 1, .has_pose = true };
    ident(si.T_world_from_ego);
    pvm_bevfusion_points o = out_buf(8);
    pvc_msg m;
    pvm_bevfusion_streams *st;
    assert_int_equal(pvm_bevfusion_streams_create(16, 1, 100, &st, &m), PV_OK);

    pvm_bevfusion_frame_in in = frame(p, 1, 4);
    in.time_lag_col = 3;
    in.sweeps = &sw;
    in.nsweeps = 1;
    expect_fail(pvm_bevfusion_points_build(st, &in, &o, &m), &m, PV_EINPUT, "cannot be combined with sweeps");
    in.nsweeps = 0;
    in.stream = &si;
    expect_fail(pvm_bevfusion_points_build(st, &in, &o, &m), &m, PV_EINPUT,
                "cannot be combined with a stream");
    in.time_lag_col = -1;
    in.nsweeps = 1;
    expect_fail(pvm_bevfusion_points_build(st, &in, &o, &m), &m, PV_EINPUT, "both sweeps (1) and a stream");
    in.nsweeps = 0;
    expect_fail(pvm_bevfusion_points_build(NULL, &in, &o, &m), &m, PV_EINPUT, "needs a stream cache");
    /* none of the refusals reached the cache */
    assert_int_equal(pvm_bevfusion_streams_live(st), 0);
    in.stream = NULL;
    in.nsweeps = -1;
    expect_fail(pvm_bevfusion_points_build(st, &in, &o, &m), &m, PV_EINPUT, "frame.nsweeps -1");
    in.nsweeps = 1;
    in.sweeps = NULL;
    expect_fail(pvm_bevfusion_points_build(st, &in, &o, &m), &m, PV_EINPUT, "frame.sweeps is NULL");

    in = frame(p, 1, 2);
    expect_fail(pvm_bevfusion_points_build(NULL, &in, &o, &m), &m, PV_EINPUT, "frame.stride 2");
    in = frame(NULL, 3, 4);
    expect_fail(pvm_bevfusion_points_build(NULL, &in, &o, &m), &m, PV_EINPUT, "frame.pts is NULL with n 3");
    in = frame(p, -5, 4);
    expect_fail(pvm_bevfusion_points_build(NULL, &in, &o, &m), &m, PV_EINPUT, "frame.n -5");
    in = frame(p, INT64_MAX / 2, 4);
    expect_fail(pvm_bevfusion_points_build(NULL, &in, &o, &m), &m, PV_EINPUT, "overflows");
    in = frame(p, 1, 4);
    expect_fail(pvm_bevfusion_points_build(NULL, &in, NULL, &m), &m, PV_EINPUT, "out is NULL");
    expect_fail(pvm_bevfusion_points_build(NULL, NULL, &o, &m), &m, PV_EINPUT, "frame is NULL");
    pvm_bevfusion_points bad = { .xyzt = NULL, .cap = 4 };
    expect_fail(pvm_bevfusion_points_build(NULL, &in, &bad, &m), &m, PV_EINPUT,
                "out.cap 4 with out.xyzt NULL");
    bad = (pvm_bevfusion_points){ .xyzt = g_buf, .cap = -1 };
    expect_fail(pvm_bevfusion_points_build(NULL, &in, &bad, &m), &m, PV_EINPUT, "out.cap -1");
    /* a zero-initialized frame means time_lag_col 0 */
    pvm_bevfusion_frame_in z = { .pts = p, .n = 1, .stride = 4 };
    expect_fail(pvm_bevfusion_points_build(NULL, &z, &o, &m), &m, PV_EINPUT, "want -1 for none");

    /* create's arguments */
    pvm_bevfusion_streams *t = (pvm_bevfusion_streams *)&m;
    expect_fail(pvm_bevfusion_streams_create(15, 1, 100, &t, &m), &m, PV_EINPUT, "max_streams 15");
    assert_null(t);
    expect_fail(pvm_bevfusion_streams_create(16, 0, 100, &t, &m), &m, PV_EINPUT, "past_frames 0");
    expect_fail(pvm_bevfusion_streams_create(16, 17, 100, &t, &m), &m, PV_EINPUT, "past_frames 17");
    expect_fail(pvm_bevfusion_streams_create(16, 1, 0, &t, &m), &m, PV_EINPUT, "cloud_capacity 0");
    expect_fail(pvm_bevfusion_streams_create(5000, 1, 10, &t, &m), &m, PV_EINPUT, "max_streams 5000");
    expect_fail(pvm_bevfusion_streams_create(16, 1, 10, NULL, &m), &m, PV_EINPUT, "out is NULL");
    pvm_bevfusion_streams_free(NULL);
    pvm_bevfusion_streams_free(st);
}

/* Capacity: the current sweep whole or refused; Autoware stops at the first older sweep that
 * does not fit. */
static void test_capacity_sweeps(void **state)
{
    (void)state;
    const float c4[] = { 1, 0, 0,   2, 0, 0,   NaN, 0, 0,   3, 0, 0 };   /* 3 finite */
    const float s3[] = { 4, 0, 0,   5, 0, 0,   6, 0, 0 };
    const float s1[] = { 7, 0, 0 };
    pvm_bevfusion_sweep sw[3] = {
        { .pts = s1, .n = 1, .stride = 3, .time_lag_s = 0.1f },
        { .pts = s3, .n = 3, .stride = 3, .time_lag_s = 0.2f },   /* does not fit */
        { .pts = s1, .n = 1, .stride = 3, .time_lag_s = 0.3f },   /* would fit, dropped */
    };
    for (int i = 0; i < 3; i++) ident(sw[i].T_current_from_sweep);
    pvm_bevfusion_frame_in in = frame(c4, 4, 3);
    in.sweeps = sw;
    in.nsweeps = 3;
    pvm_bevfusion_points o = out_buf(6);
    pvc_msg m;
    assert_int_equal(pvm_bevfusion_points_build(NULL, &in, &o, &m), PV_OK);
    assert_int_equal(o.n, 4);
    expect_row(&o, 0, 1, 0, 0, 0);
    expect_row(&o, 2, 3, 0, 0, 0);
    expect_row(&o, 3, 7, 0, 0, 0.1f);
    assert_int_equal(o.sweeps_used, 2);
    assert_int_equal(o.sweeps_dropped, 2);
    assert_int_equal(o.dropped_capacity, 4);
    assert_int_equal(o.dropped_nonfinite, 1);

    /* exactly full: 3 + 1 + 3 = 7 */
    o = out_buf(7);
    in.nsweeps = 2;
    assert_int_equal(pvm_bevfusion_points_build(NULL, &in, &o, &m), PV_OK);
    assert_int_equal(o.n, 7);
    expect_row(&o, 6, 6, 0, 0, 0.2f);
    assert_int_equal(o.sweeps_dropped, 0);

    /* the current sweep: NaN rows do not count; 3 finite rows fit in 3, not in 2 */
    in.nsweeps = 0;
    o = out_buf(3);
    assert_int_equal(pvm_bevfusion_points_build(NULL, &in, &o, &m), PV_OK);
    assert_int_equal(o.n, 3);
    o = out_buf(2);
    expect_fail(pvm_bevfusion_points_build(NULL, &in, &o, &m), &m, PV_EINPUT,
                "the current sweep has 3 finite points (of 4) but only 2 fit (out.cap 2)");
    assert_int_equal(o.n, 0);
    assert_int_equal(o.dropped_nonfinite, 0);
    o = out_buf(0);
    o.xyzt = NULL;
    expect_fail(pvm_bevfusion_points_build(NULL, &in, &o, &m), &m, PV_EINPUT, "only 0 fit");
    in.n = 0;
    assert_int_equal(pvm_bevfusion_points_build(NULL, &in, &o, &m), PV_OK);
}

/* ---- streams -------------------------------------------------------------------------------- */

typedef struct sframe {
    pvm_bevfusion_stream_in si;
    pvm_bevfusion_frame_in in;
} sframe;

static void sframe_set(sframe *f, const char *id, double t, const double *pose, const float *pts, int64_t n)
{
    memset(f, 0, sizeof *f);
    f->si.id = id;
    f->si.timestamp_s = t;
    f->si.has_pose = pose != NULL;
    if (pose) memcpy(f->si.T_world_from_ego, pose, sizeof f->si.T_world_from_ego);
    f->in = frame(pts, n, 3);
    f->in.stream = &f->si;
}

static pv_status run_frame(pvm_bevfusion_streams *st, sframe *f, pvm_bevfusion_points *o, pvc_msg *m)
{
    return pvm_bevfusion_points_build(st, &f->in, o, m);
}

/* Poses of the hand example: frame 1 at (100, 50, 0) yaw 0; frame 2 at (110, 50, 0) yaw 90;
 * frame 3 at (110, 60, 1) yaw 180. */
static double P1[16], P2[16], P3[16];
static void poses(void)
{
    yaw90(P1, 0, 100, 50, 0);
    yaw90(P2, 1, 110, 50, 0);
    yaw90(P3, 2, 110, 60, 1);
}

static const float A[] = { 1, 2, 3,   NaN, 0, 0,   -1, 0, 0.5f };
static const float B[] = { 4, 0, 0 };
static const float C[] = { 0, 0, 0,   1, 1, 1 };

static void test_stream_basic(void **state)
{
    (void)state;
    poses();
    pvm_bevfusion_streams *st;
    pvc_msg m;
    assert_int_equal(pvm_bevfusion_streams_create(16, 1, 2000000, &st, &m), PV_OK);
    pvm_bevfusion_points o = out_buf(64);
    sframe f;

    /* cold: 1 sweep, nothing padded */
    sframe_set(&f, "veh", 10.0, P1, A, 3);
    assert_int_equal(run_frame(st, &f, &o, &m), PV_OK);
    assert_int_equal(o.n, 2);
    assert_int_equal(o.sweeps_used, 1);
    assert_int_equal(o.dropped_nonfinite, 1);
    expect_row(&o, 0, 1, 2, 3, 0);
    expect_row(&o, 1, -1, 0, 0.5f, 0);
    assert_int_equal(pvm_bevfusion_streams_live(st), 1);

    /* second frame: B, then A mapped by inverse(P2) * P1, lag (float)(10.1 - 10.0).
     * (1, 2, 3): world (101, 52, 3); minus (110, 50, 0) = (-9, 2, 3); yaw -90: (2, 9, 3).
     * (-1, 0, 0.5): world (99, 50, 0.5); (-11, 0, 0.5); yaw -90: (0, 11, 0.5). */
    sframe_set(&f, "veh", 10.1, P2, B, 1);
    assert_int_equal(run_frame(st, &f, &o, &m), PV_OK);
    const float lag21 = (float)(10.1 - 10.0);
    assert_true(fabsf(lag21 - 0.1f) < 1e-6f);
    assert_int_equal(o.n, 3);
    assert_int_equal(o.sweeps_used, 2);
    assert_int_equal(o.dropped_nonfinite, 0);     /* the cache holds finite points only */
    expect_row(&o, 0, 4, 0, 0, 0);
    expect_row(&o, 1, 2, 9, 3, lag21);
    expect_row(&o, 2, 0, 11, 0.5f, lag21);

    /* third frame: A is gone (1 past frame); B mapped by inverse(P3) * P2.
     * (4, 0, 0) in ego2: world (110, 54, 0); minus (110, 60, 1) = (0, -6, -1); yaw 180: (0, 6, -1). */
    sframe_set(&f, "veh", 10.25, P3, C, 2);
    assert_int_equal(run_frame(st, &f, &o, &m), PV_OK);
    assert_int_equal(o.n, 3);
    expect_row(&o, 0, 0, 0, 0, 0);
    expect_row(&o, 1, 1, 1, 1, 0);
    expect_row(&o, 2, 0, 6, -1, (float)(10.25 - 10.1));
    assert_int_equal(o.sweeps_used, 2);
    pvm_bevfusion_streams_free(st);
}

/* A missing or bad pose refuses the frame and leaves the cache alone, reset included. */
static void test_stream_missing_pose(void **state)
{
    (void)state;
    poses();
    pvm_bevfusion_streams *st;
    pvc_msg m;
    assert_int_equal(pvm_bevfusion_streams_create(16, 1, 2000000, &st, &m), PV_OK);
    pvm_bevfusion_points o = out_buf(64);
    sframe f;

    /* even the first frame of a stream needs a pose */
    sframe_set(&f, "veh-1", 9.0, NULL, C, 2);
    expect_fail(run_frame(st, &f, &o, &m), &m, PV_EINPUT, "stream 'veh-1': missing pose (T_world_from_ego)");
    assert_int_equal(o.n, 0);
    assert_int_equal(pvm_bevfusion_streams_live(st), 0);

    sframe_set(&f, "veh-1", 10.0, P1, A, 3);
    assert_int_equal(run_frame(st, &f, &o, &m), PV_OK);
    sframe_set(&f, "veh-1", 10.1, NULL, B, 1);
    expect_fail(run_frame(st, &f, &o, &m), &m, PV_EINPUT, "stream 'veh-1': missing pose (T_world_from_ego)");
    f.si.reset = true;
    expect_fail(run_frame(st, &f, &o, &m), &m, PV_EINPUT, "missing pose");
    /* a bad pose: same */
    sframe_set(&f, "veh-1", 10.1, P2, B, 1);
    f.si.T_world_from_ego[0] = 1.5;
    f.si.reset = true;
    expect_fail(run_frame(st, &f, &o, &m), &m, PV_EINPUT,
                "stream 'veh-1': T_world_from_ego: rotation is not orthonormal");
    f.si.T_world_from_ego[0] = NAN;
    expect_fail(run_frame(st, &f, &o, &m), &m, PV_EINPUT, "T_world_from_ego[0][0] is nan");
    /* bad timestamps */
    sframe_set(&f, "veh-1", NAN, P2, B, 1);
    expect_fail(run_frame(st, &f, &o, &m), &m, PV_EINPUT, "stream 'veh-1': timestamp_s nan");
    sframe_set(&f, "veh-1", 2e15, P2, B, 1);
    expect_fail(run_frame(st, &f, &o, &m), &m, PV_EINPUT, "timestamp_s 2e+15");

    /* the next good frame still densifies with frame 1 (see test_stream_basic for the values) */
    sframe_set(&f, "veh-1", 10.1, P2, B, 1);
    assert_int_equal(run_frame(st, &f, &o, &m), PV_OK);
    assert_int_equal(o.n, 3);
    assert_int_equal(o.sweeps_used, 2);
    expect_row(&o, 1, 2, 9, 3, (float)(10.1 - 10.0));
    pvm_bevfusion_streams_free(st);
}

static void test_stream_order_reset(void **state)
{
    (void)state;
    poses();
    pvm_bevfusion_streams *st;
    pvc_msg m;
    assert_int_equal(pvm_bevfusion_streams_create(16, 1, 2000000, &st, &m), PV_OK);
    pvm_bevfusion_points o = out_buf(64);
    sframe f;
    sframe_set(&f, "veh", 10.0, P1, A, 3);
    assert_int_equal(run_frame(st, &f, &o, &m), PV_OK);
    sframe_set(&f, "veh", 10.0, P2, B, 1);
    expect_fail(run_frame(st, &f, &o, &m), &m, PV_EINPUT, "stream 'veh': timestamp_s 10 is not after");
    expect_fail(run_frame(st, &f, &o, &m), &m, PV_EINPUT, "out of order");
    assert_int_equal(o.n, 0);
    sframe_set(&f, "veh", 9.9, P2, B, 1);
    expect_fail(run_frame(st, &f, &o, &m), &m, PV_EINPUT, "out of order");
    /* cache intact */
    sframe_set(&f, "veh", 10.1, P2, B, 1);
    assert_int_equal(run_frame(st, &f, &o, &m), PV_OK);
    assert_int_equal(o.sweeps_used, 2);
    expect_row(&o, 2, 0, 11, 0.5f, (float)(10.1 - 10.0));

    /* reset: an older timestamp is accepted and the stream starts cold */
    sframe_set(&f, "veh", 5.0, P1, A, 3);
    f.si.reset = true;
    assert_int_equal(run_frame(st, &f, &o, &m), PV_OK);
    assert_int_equal(o.sweeps_used, 1);
    assert_int_equal(o.n, 2);
    /* reset with a newer timestamp also drops the past */
    sframe_set(&f, "veh", 5.1, P2, B, 1);
    f.si.reset = true;
    assert_int_equal(run_frame(st, &f, &o, &m), PV_OK);
    assert_int_equal(o.sweeps_used, 1);
    assert_int_equal(o.n, 1);
    /* and the stream goes on from the reset frame */
    sframe_set(&f, "veh", 5.25, P3, C, 2);
    assert_int_equal(run_frame(st, &f, &o, &m), PV_OK);
    assert_int_equal(o.sweeps_used, 2);
    expect_row(&o, 2, 0, 6, -1, (float)(5.25 - 5.1));
    pvm_bevfusion_streams_free(st);
}

static void test_stream_ids(void **state)
{
    (void)state;
    double I[16];
    ident(I);
    pvm_bevfusion_streams *st;
    pvc_msg m;
    assert_int_equal(pvm_bevfusion_streams_create(16, 1, 100, &st, &m), PV_OK);
    pvm_bevfusion_points o = out_buf(8);
    sframe f;
    char longid[PVM_BF_STREAM_ID_MAX + 2];
    memset(longid, 'q', sizeof longid);
    longid[PVM_BF_STREAM_ID_MAX + 1] = 0;
    sframe_set(&f, longid, 1, I, B, 1);
    expect_fail(run_frame(st, &f, &o, &m), &m, PV_EINPUT, "is longer than 128 bytes");
    longid[PVM_BF_STREAM_ID_MAX] = 0;     /* 128: fine */
    sframe_set(&f, longid, 1, I, B, 1);
    assert_int_equal(run_frame(st, &f, &o, &m), PV_OK);
    sframe_set(&f, "", 1, I, B, 1);
    expect_fail(run_frame(st, &f, &o, &m), &m, PV_EINPUT, "stream.id is empty");
    sframe_set(&f, NULL, 1, I, B, 1);
    expect_fail(run_frame(st, &f, &o, &m), &m, PV_EINPUT, "stream.id is NULL");
    sframe_set(&f, "ab\ncd", 1, I, B, 1);
    expect_fail(run_frame(st, &f, &o, &m), &m, PV_EINPUT, "byte 0x0a at offset 2");
    sframe_set(&f, "caf\xc3\xa9", 1, I, B, 1);
    expect_fail(run_frame(st, &f, &o, &m), &m, PV_EINPUT, "byte 0xc3 at offset 3");
    sframe_set(&f, "a b/c:d", 1, I, B, 1);
    assert_int_equal(run_frame(st, &f, &o, &m), PV_OK);
    /* ids are exact strings: "a b/c:d" and "a b/c:d " are two streams */
    sframe_set(&f, "a b/c:d ", 1, I, B, 1);
    assert_int_equal(run_frame(st, &f, &o, &m), PV_OK);
    assert_int_equal(pvm_bevfusion_streams_live(st), 3);
    pvm_bevfusion_streams_free(st);
}

/* warm: the frame got a past sweep. */
static int lru_frame(pvm_bevfusion_streams *st, int id, double t)
{
    double I[16];
    ident(I);
    char name[16];
    snprintf(name, sizeof name, "s%d", id);
    sframe f;
    sframe_set(&f, name, t, I, B, 1);
    pvm_bevfusion_points o = out_buf(8);
    pvc_msg m;
    pv_status s = run_frame(st, &f, &o, &m);
    if (s != PV_OK) fail_msg("%s at %g: %s", name, t, m.text);
    return o.sweeps_used == 2;
}

static void test_stream_lru(void **state)
{
    (void)state;
    pvm_bevfusion_streams *st;
    pvc_msg m;
    assert_int_equal(pvm_bevfusion_streams_create(16, 1, 100, &st, &m), PV_OK);
    for (int i = 0; i < 16; i++) assert_false(lru_frame(st, i, 1));
    assert_int_equal(pvm_bevfusion_streams_live(st), 16);
    assert_true(lru_frame(st, 0, 2));          /* s0 now the most recent; s1 the least */
    assert_false(lru_frame(st, 16, 1));        /* the 17th id evicts s1 */
    assert_int_equal(pvm_bevfusion_streams_live(st), 16);
    assert_false(lru_frame(st, 1, 0.5));       /* s1 is cold (an older time is fine); evicts s2 */
    assert_true(lru_frame(st, 3, 2));          /* s3 survived */
    assert_true(lru_frame(st, 0, 3));
    assert_true(lru_frame(st, 16, 2));
    assert_false(lru_frame(st, 2, 0.5));       /* s2 was evicted by s1; evicts s4 */
    assert_false(lru_frame(st, 4, 0.5));       /* s4 was evicted by s2; evicts s5 */
    assert_false(lru_frame(st, 5, 0.5));       /* evicts s6 */
    /* every other one of the first 16 is still warm */
    for (int i = 7; i < 16; i++) assert_true(lru_frame(st, i, 2));
    assert_true(lru_frame(st, 0, 4));
    assert_true(lru_frame(st, 1, 1));
    assert_true(lru_frame(st, 2, 1));
    assert_true(lru_frame(st, 3, 3));
    assert_true(lru_frame(st, 4, 1));
    assert_true(lru_frame(st, 5, 1));
    assert_true(lru_frame(st, 16, 3));
    /* 40 more ids cycle through the cache: afterwards s0..s16 are all gone */
    for (int i = 100; i < 140; i++) assert_false(lru_frame(st, i, 1));
    assert_int_equal(pvm_bevfusion_streams_live(st), 16);
    for (int i = 0; i < 17; i++) assert_false(lru_frame(st, i, 0.25));
    pvm_bevfusion_streams_free(st);
}

/* Capacity in stream mode, and past_frames = 2 (newest first, break at the first overflow). */
static void test_stream_capacity(void **state)
{
    (void)state;
    double I[16], T1[16], T2[16];
    ident(I);
    yaw90(T1, 0, 1, 0, 0);
    yaw90(T2, 0, 2, 0, 0);
    const float six[] = { 0, 0, 0, 1, 0, 0, 2, 0, 0, 3, 0, 0, 4, 0, 0, 5, 0, 0, 6, 0, 0, 7, 0, 0,
                          8, 0, 0, 9, 0, 0, 10, 0, 0 };
    pvm_bevfusion_streams *st;
    pvc_msg m;
    assert_int_equal(pvm_bevfusion_streams_create(16, 1, 10, &st, &m), PV_OK);
    pvm_bevfusion_points o = out_buf(100);
    sframe f;
    sframe_set(&f, "c", 1, I, six, 6);
    assert_int_equal(run_frame(st, &f, &o, &m), PV_OK);
    sframe_set(&f, "c", 2, I, six, 6);               /* 6 + 6 > 10: the past is dropped */
    assert_int_equal(run_frame(st, &f, &o, &m), PV_OK);
    assert_int_equal(o.n, 6);
    assert_int_equal(o.sweeps_used, 1);
    assert_int_equal(o.sweeps_dropped, 1);
    assert_int_equal(o.dropped_capacity, 6);
    sframe_set(&f, "c", 3, I, six, 11);              /* the current sweep alone is too big */
    expect_fail(run_frame(st, &f, &o, &m), &m, PV_EINPUT,
                "has 11 finite points (of 11) but only 10 fit (out.cap 100, cloud_capacity 10)");
    sframe_set(&f, "c", 3, T1, six, 4);              /* 4 + 6 = 10 fit; frame 2 was cached */
    assert_int_equal(run_frame(st, &f, &o, &m), PV_OK);
    assert_int_equal(o.n, 10);
    assert_int_equal(o.sweeps_used, 2);
    expect_row(&o, 4, -1, 0, 0, 1.0f);               /* (0,0,0) at world 0 -> ego3 at x=1 */
    expect_row(&o, 9, 4, 0, 0, 1.0f);
    /* out->cap below cloud_capacity limits too */
    o = out_buf(9);
    sframe_set(&f, "c", 4, I, six, 2);               /* 2 + 4 fit in 9 */
    assert_int_equal(run_frame(st, &f, &o, &m), PV_OK);
    assert_int_equal(o.n, 6);
    pvm_bevfusion_streams_free(st);

    /* two past frames */
    assert_int_equal(pvm_bevfusion_streams_create(16, 2, 1000, &st, &m), PV_OK);
    o = out_buf(100);
    sframe_set(&f, "p", 1.0, I, six, 1);             /* (0,0,0) at world 0 */
    assert_int_equal(run_frame(st, &f, &o, &m), PV_OK);
    sframe_set(&f, "p", 1.5, T1, six + 3, 3);        /* (1,0,0),(2,0,0),(3,0,0) at world +1 */
    assert_int_equal(run_frame(st, &f, &o, &m), PV_OK);
    assert_int_equal(o.sweeps_used, 2);
    sframe_set(&f, "p", 2.0, T2, six + 30, 1);       /* (10,0,0) at world +2 */
    assert_int_equal(run_frame(st, &f, &o, &m), PV_OK);
    assert_int_equal(o.n, 5);
    assert_int_equal(o.sweeps_used, 3);
    expect_row(&o, 0, 10, 0, 0, 0);
    expect_row(&o, 1, 0, 0, 0, 0.5f);                /* frame 2 first: x + 1 - 2 */
    expect_row(&o, 3, 2, 0, 0, 0.5f);
    expect_row(&o, 4, -2, 0, 0, 1.0f);               /* then frame 1: x + 0 - 2 */
    /* next frame: the 1.0 frame is popped; in 3 rows, the current point and the 2.0 frame's
     * point fit, the 1.5 frame's 3 points do not */
    o = out_buf(3);
    sframe_set(&f, "p", 2.5, I, six + 3, 1);
    assert_int_equal(run_frame(st, &f, &o, &m), PV_OK);
    assert_int_equal(o.n, 2);
    expect_row(&o, 1, 12, 0, 0, 0.5f);
    assert_int_equal(o.sweeps_used, 2);
    assert_int_equal(o.sweeps_dropped, 1);
    assert_int_equal(o.dropped_capacity, 3);
    /* the first sweep overflowing stops everything after it */
    o = out_buf(2);
    const float big[] = { 0, 0, 0, 0, 0, 0 };
    sframe_set(&f, "p", 3.0, I, big, 2);             /* fills the buffer; past: 2.5 and 2.0, 1 point each */
    assert_int_equal(run_frame(st, &f, &o, &m), PV_OK);
    assert_int_equal(o.n, 2);
    assert_int_equal(o.sweeps_used, 1);
    assert_int_equal(o.sweeps_dropped, 2);
    assert_int_equal(o.dropped_capacity, 2);
    pvm_bevfusion_streams_free(st);
}

/* Poses in map coordinates far from the origin: composing in double keeps centimetres that a
 * float composition (Autoware's Affine3f) would lose. */
static void test_stream_large_coords(void **state)
{
    (void)state;
    double Pa[16], Pb[16];
    yaw_rad(Pa, 0.3, 654321.25, 5432109.5, 12.0);
    yaw_rad(Pb, 0.31, 654322.75, 5432110.0, 12.05);
    const float pts[] = { 10.5f, -3.25f, 0.5f,   -40, 25, 2 };
    pvm_bevfusion_streams *st;
    pvc_msg m;
    assert_int_equal(pvm_bevfusion_streams_create(16, 1, 100, &st, &m), PV_OK);
    pvm_bevfusion_points o = out_buf(16);
    sframe f;
    sframe_set(&f, "utm", 1700000000.0, Pa, pts, 2);
    assert_int_equal(run_frame(st, &f, &o, &m), PV_OK);
    sframe_set(&f, "utm", 1700000000.1, Pb, pts, 1);
    assert_int_equal(run_frame(st, &f, &o, &m), PV_OK);
    assert_int_equal(o.n, 3);
    for (int k = 0; k < 2; k++) {
        /* world = Ra p + ta; current = Rb^T (world - tb), all in double */
        const float *p = pts + k * 3;
        double w[3];
        for (int r = 0; r < 3; r++)
            w[r] = Pa[r * 4] * p[0] + Pa[r * 4 + 1] * p[1] + Pa[r * 4 + 2] * p[2] + Pa[r * 4 + 3] -
                   Pb[r * 4 + 3];
        for (int c = 0; c < 3; c++) {
            double want = Pb[c] * w[0] + Pb[4 + c] * w[1] + Pb[8 + c] * w[2];
            double got = o.xyzt[(1 + k) * 4 + c];
            if (fabs(got - want) > 1e-4) fail_msg("point %d axis %d: %.9g, want %.9g", k, c, got, want);
        }
        assert_true(fabsf(o.xyzt[(1 + k) * 4 + 3] - 0.1f) < 1e-5f);
    }
    pvm_bevfusion_streams_free(st);
}

/* ---- threads -------------------------------------------------------------------------------- */

/* Frame k of id code c: npts points (c, k, 7 + q); pose translation (0, 0, 2k). A past row of
 * the same id is then (c, k - 1, 5 + q) with lag 1. */
typedef struct tjob {
    pvm_bevfusion_streams *st;
    int first_id, nids, nframes, npts;
    bool must_be_warm;               /* no eviction possible: every frame k >= 1 has its past */
    atomic_int *errors;
    pthread_barrier_t *bar;          /* all threads start each round together */
    char err[PVC_MSG_LEN + 64];
    int warm;
} tjob;

static void *tjob_main(void *arg)
{
    tjob *j = arg;
    const int np = j->npts;
    float *buf = malloc((size_t)np * 2 * 4 * sizeof(float)), *pts = malloc((size_t)np * 3 * sizeof(float));
    for (int k = 0; k < j->nframes; k++) {
        pthread_barrier_wait(j->bar);
        for (int i = 0; buf && pts && i < j->nids; i++) {
            int c = j->first_id + i;
            char id[16];
            snprintf(id, sizeof id, "id%d", c);
            for (int q = 0; q < np; q++) {
                pts[q * 3] = (float)c;
                pts[q * 3 + 1] = (float)k;
                pts[q * 3 + 2] = 7.0f + (float)q;
            }
            pvm_bevfusion_stream_in si = { .id = id, .timestamp_s = k, .has_pose = true };
            yaw90(si.T_world_from_ego, 0, 0, 0, 2.0 * k);
            pvm_bevfusion_frame_in in = { .pts = pts, .n = np, .stride = 3, .time_lag_col = -1,
                                          .stream = &si };
            pvm_bevfusion_points o = { .xyzt = buf, .cap = 2 * np };
            pvc_msg m;
            pv_status s = pvm_bevfusion_points_build(j->st, &in, &o, &m);
            bool ok = s == PV_OK && (o.n == np || o.n == 2 * np) && o.sweeps_used == (int)(o.n / np);
            for (int64_t r = 0; ok && r < o.n; r++) {
                const float *q = buf + r * 4;
                bool past = r >= np;
                ok = q[0] == (float)c && q[1] == (float)(past ? k - 1 : k) &&
                     q[2] == (past ? 5.0f : 7.0f) + (float)(r % np) && q[3] == (past ? 1.0f : 0.0f);
            }
            if (ok && j->must_be_warm && k > 0 && o.n != 2 * np) ok = false;
            if (!ok) {
                if (atomic_fetch_add(j->errors, 1) == 0)
                    snprintf(j->err, sizeof j->err, "id%d frame %d: status %d n %lld (%s)", c, k,
                             (int)s, (long long)o.n, m.text);
            }
            j->warm += o.n == 2 * np;
        }
    }
    if (!buf || !pts) atomic_fetch_add(j->errors, 1);
    free(buf);
    free(pts);
    return NULL;
}

/* nthreads threads, each with its own nids ids; returns how many frames had their past. */
static int run_threads(int nthreads, int nids_each, int nframes, int npts, bool must_be_warm)
{
    enum { MAXT = 32 };
    assert_true(nthreads <= MAXT);
    pvm_bevfusion_streams *st;
    pvc_msg m;
    assert_int_equal(pvm_bevfusion_streams_create(16, 1, 1 << 20, &st, &m), PV_OK);
    atomic_int errors = 0;
    pthread_barrier_t bar;
    assert_int_equal(pthread_barrier_init(&bar, NULL, (unsigned)nthreads), 0);
    tjob jobs[MAXT];
    pthread_t th[MAXT];
    for (int i = 0; i < nthreads; i++) {
        jobs[i] = (tjob){ .st = st, .first_id = 1000 * i, .nids = nids_each, .nframes = nframes, .npts = npts,
                          .must_be_warm = must_be_warm, .errors = &errors, .bar = &bar };
        assert_int_equal(pthread_create(&th[i], NULL, tjob_main, &jobs[i]), 0);
    }
    int warm = 0;
    for (int i = 0; i < nthreads; i++) {
        pthread_join(th[i], NULL);
        warm += jobs[i].warm;
    }
    pthread_barrier_destroy(&bar);
    if (atomic_load(&errors)) {
        for (int i = 0; i < nthreads; i++)
            if (jobs[i].err[0]) fail_msg("%d errors: %s", atomic_load(&errors), jobs[i].err);
    }
    assert_int_equal(pvm_bevfusion_streams_live(st), 16);
    pvm_bevfusion_streams_free(st);
    return warm;
}

static void test_threads_distinct_ids(void **state)
{
    (void)state;
    /* 16 ids, no eviction: every frame after the first has its own past */
    assert_int_equal(run_threads(2, 8, 200, 3, true), 2 * 8 * 199);
    /* 20 ids over 16 slots: each thread alone would fit, together they evict each other */
    int warm = run_threads(2, 10, 200, 3, false);
    print_message("2 threads, 20 ids on 16 streams: %d of %d frames had their past\n", warm, 2 * 10 * 200);
    /* 24 threads with one id each and big frames: often every stream is busy, so new ids must
     * wait instead of evicting a stream in use */
    warm = run_threads(24, 1, 20, 2000, false);
    print_message("24 threads on 16 streams: %d of %d frames had their past\n", warm, 24 * 20);
}

/* Every stream busy: an allocator that parks chosen threads inside their first allocation
 * (the stream buffer, made while the stream is held) pins all 16 streams; a 17th id must then
 * wait, and take the first stream released, never one in use. */
static pthread_mutex_t g_hold_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_hold_cv = PTHREAD_COND_INITIALIZER;
static int g_parked;
static bool g_release[16];
static _Thread_local int tl_park = -1;

static void park(void)
{
    if (tl_park < 0) return;
    int i = tl_park;
    tl_park = -1;
    pthread_mutex_lock(&g_hold_mu);
    g_parked++;
    pthread_cond_broadcast(&g_hold_cv);
    while (!g_release[i]) pthread_cond_wait(&g_hold_cv, &g_hold_mu);
    pthread_mutex_unlock(&g_hold_mu);
}
static void *park_malloc(void *ud, size_t n) { (void)ud; park(); return malloc(n); }
static void *park_realloc(void *ud, void *p, size_t n) { (void)ud; park(); return realloc(p, n); }
static void park_free(void *ud, void *p) { (void)ud; free(p); }

typedef struct bjob {
    pvm_bevfusion_streams *st;
    int idx;                          /* 0..15: parked holder; 16: the newcomer */
    atomic_bool done;
    pv_status s;
    int64_t n;
    int sweeps;
    float x0;
} bjob;

static void *bjob_main(void *arg)
{
    bjob *j = arg;
    if (j->idx < 16) tl_park = j->idx;
    char id[16];
    snprintf(id, sizeof id, "h%d", j->idx);
    float pts[3] = { (float)j->idx, 0, 0 }, buf[8 * 4];
    pvm_bevfusion_stream_in si = { .id = id, .timestamp_s = 1, .has_pose = true };
    ident(si.T_world_from_ego);
    pvm_bevfusion_frame_in in = { .pts = pts, .n = 1, .stride = 3, .time_lag_col = -1, .stream = &si };
    pvm_bevfusion_points o = { .xyzt = buf, .cap = 8 };
    pvc_msg m;
    j->s = pvm_bevfusion_points_build(j->st, &in, &o, &m);
    j->n = o.n;
    j->sweeps = o.sweeps_used;
    j->x0 = o.n ? buf[0] : -1;
    atomic_store(&j->done, true);
    return NULL;
}

static void test_stream_all_busy(void **state)
{
    (void)state;
    pv_allocator hook = { park_malloc, park_realloc, park_free, NULL };
    pv_set_allocator(&hook);
    g_parked = 0;
    memset(g_release, 0, sizeof g_release);
    pvm_bevfusion_streams *st;
    pvc_msg m;
    assert_int_equal(pvm_bevfusion_streams_create(16, 1, 100, &st, &m), PV_OK);
    static bjob jobs[17];
    pthread_t th[17];
    for (int i = 0; i < 17; i++) {
        jobs[i] = (bjob){ .st = st, .idx = i };
        atomic_init(&jobs[i].done, false);
    }
    for (int i = 0; i < 16; i++) assert_int_equal(pthread_create(&th[i], NULL, bjob_main, &jobs[i]), 0);
    pthread_mutex_lock(&g_hold_mu);
    while (g_parked < 16) pthread_cond_wait(&g_hold_cv, &g_hold_mu);
    pthread_mutex_unlock(&g_hold_mu);
    assert_int_equal(pvm_bevfusion_streams_live(st), 16);

    /* all 16 busy: the newcomer waits (a wrong cache would take h0's stream, the LRU one) */
    assert_int_equal(pthread_create(&th[16], NULL, bjob_main, &jobs[16]), 0);
    for (int i = 0; i < 20; i++) { usleep(1000); assert_false(atomic_load(&jobs[16].done)); }
    /* h3 finishes; the newcomer takes its stream */
    pthread_mutex_lock(&g_hold_mu);
    g_release[3] = true;
    pthread_cond_broadcast(&g_hold_cv);
    pthread_mutex_unlock(&g_hold_mu);
    pthread_join(th[3], NULL);
    /* correct code needs nothing else; a cache that took a busy stream would wait for its
     * holder forever, so give up after 30 s (a liveness bound, not a speed check) */
    for (int i = 0; i < 30000 && !atomic_load(&jobs[16].done); i++) usleep(1000);
    bool newcomer_done = atomic_load(&jobs[16].done);
    pthread_mutex_lock(&g_hold_mu);
    for (int i = 0; i < 16; i++) g_release[i] = true;
    pthread_cond_broadcast(&g_hold_cv);
    pthread_mutex_unlock(&g_hold_mu);
    for (int i = 0; i < 16; i++) if (i != 3) pthread_join(th[i], NULL);
    pthread_join(th[16], NULL);
    pv_set_allocator(NULL);
    if (!newcomer_done) fail_msg("the 17th id did not take the stream released by h3");
    for (int i = 0; i < 17; i++) {
        if (jobs[i].s != PV_OK || jobs[i].n != 1 || jobs[i].sweeps != 1 || jobs[i].x0 != (float)i)
            fail_msg("h%d: status %d n %lld sweeps %d x %g", i, (int)jobs[i].s, (long long)jobs[i].n,
                     jobs[i].sweeps, (double)jobs[i].x0);
    }
    /* second frames: every id but h3 (evicted) has its own past; h3 last, as it evicts one */
    for (int k = 0; k < 17; k++) {
        int i = k < 16 ? (k < 3 ? k : k + 1) : 3;
        char id[16];
        snprintf(id, sizeof id, "h%d", i);
        double I[16];
        ident(I);
        sframe f;
        sframe_set(&f, id, 2, I, B, 1);
        pvm_bevfusion_points o = out_buf(8);
        assert_int_equal(run_frame(st, &f, &o, &m), PV_OK);
        if (i == 3) {
            assert_int_equal(o.sweeps_used, 1);
            continue;
        }
        assert_int_equal(o.sweeps_used, 2);
        expect_row(&o, 1, (float)i, 0, 0, 1);
    }
    pvm_bevfusion_streams_free(st);
}

/* One id from two threads: frames are serialized, so the accepted ones form a chain in which
 * each one's past is the previously accepted frame. */
typedef struct sjob {
    pvm_bevfusion_streams *st;
    atomic_int *clock;
    pthread_barrier_t *bar;
    int n;
    double *acc_t, *acc_past;         /* per accepted frame: its time, its past's time (-1: cold) */
    int nacc, errors;
} sjob;

static void *sjob_main(void *arg)
{
    sjob *j = arg;
    enum { NP = 2000 };              /* some work before the stream lock widens the race */
    float buf[2 * NP * 4], pts[NP * 3];
    for (int i = 0; i < j->n; i++) {
        if (i % 10 == 0) pthread_barrier_wait(j->bar);    /* keep the threads overlapping */
        int t = atomic_fetch_add(j->clock, 1) + 1;
        for (int q = 0; q < NP; q++) { pts[q * 3] = (float)t; pts[q * 3 + 1] = (float)q; pts[q * 3 + 2] = 0; }
        pvm_bevfusion_stream_in si = { .id = "shared", .timestamp_s = t, .has_pose = true };
        ident(si.T_world_from_ego);
        pvm_bevfusion_frame_in in = { .pts = pts, .n = NP, .stride = 3, .time_lag_col = -1, .stream = &si };
        pvm_bevfusion_points o = { .xyzt = buf, .cap = 2 * NP };
        pvc_msg m;
        pv_status s = pvm_bevfusion_points_build(j->st, &in, &o, &m);
        if (s == PV_EINPUT && strstr(m.text, "out of order")) continue;
        if (s != PV_OK || (o.n != NP && o.n != 2 * NP) || o.sweeps_dropped) { j->errors++; continue; }
        double past = o.n == 2 * NP ? buf[NP * 4] : -1;
        for (int r = 0; r < o.n; r++) {     /* every row of a sweep from the same frame */
            const float *q = buf + r * 4;
            bool is_past = r >= NP;
            if (q[0] != (float)(is_past ? past : t) || q[1] != (float)(r % NP) ||
                q[3] != (is_past ? (float)(t - past) : 0.0f))
                j->errors++;
        }
        if (past >= t) j->errors++;
        j->acc_t[j->nacc] = t;
        j->acc_past[j->nacc] = past;
        j->nacc++;
    }
    return NULL;
}

static int cmp_pair(const void *a, const void *b)
{
    const double *x = a, *y = b;
    return (x[0] > y[0]) - (x[0] < y[0]);
}

static void test_threads_same_id(void **state)
{
    (void)state;
    enum { N = 1000 };
    pvm_bevfusion_streams *st;
    pvc_msg m;
    assert_int_equal(pvm_bevfusion_streams_create(16, 1, 100000, &st, &m), PV_OK);
    atomic_int clock = 0;
    pthread_barrier_t bar;
    assert_int_equal(pthread_barrier_init(&bar, NULL, 2), 0);
    sjob jobs[2];
    for (int i = 0; i < 2; i++) {
        jobs[i] = (sjob){ .st = st, .clock = &clock, .bar = &bar, .n = N };
        jobs[i].acc_t = calloc(N, sizeof(double));
        jobs[i].acc_past = calloc(N, sizeof(double));
        assert_non_null(jobs[i].acc_t);
        assert_non_null(jobs[i].acc_past);
    }
    pthread_t th[2];
    for (int i = 0; i < 2; i++) assert_int_equal(pthread_create(&th[i], NULL, sjob_main, &jobs[i]), 0);
    for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
    pthread_barrier_destroy(&bar);
    assert_int_equal(jobs[0].errors + jobs[1].errors, 0);
    int n = jobs[0].nacc + jobs[1].nacc;
    double (*acc)[2] = calloc((size_t)n, sizeof *acc);
    assert_non_null(acc);
    int k = 0;
    for (int i = 0; i < 2; i++)
        for (int a = 0; a < jobs[i].nacc; a++, k++) {
            acc[k][0] = jobs[i].acc_t[a];
            acc[k][1] = jobs[i].acc_past[a];
        }
    qsort(acc, (size_t)n, sizeof *acc, cmp_pair);
    assert_true(n > 0);
    assert_true(acc[0][1] == -1.0);
    for (int i = 1; i < n; i++) {
        if (acc[i][1] != acc[i - 1][0])
            fail_msg("accepted frame %g has past %g, want %g", acc[i][0], acc[i][1], acc[i - 1][0]);
    }
    print_message("same id from 2 threads: %d of %d frames accepted\n", n, 2 * N);
    free(acc);
    for (int i = 0; i < 2; i++) { free(jobs[i].acc_t); free(jobs[i].acc_past); }
    pvm_bevfusion_streams_free(st);
}

/* ---- allocation failures -------------------------------------------------------------------- */

static void test_alloc_failures(void **state)
{
    (void)state;
    double I[16];
    ident(I);
    const float pts[] = { 1, 0, 0, 2, 0, 0, 3, 0, 0, 4, 0, 0, 5, 0, 0 };
    int fired = 0;
    for (long at = 1;; at++) {
        pvc_msg m;
        pvm_bevfusion_streams *st = NULL;
        pvc_alloc_test_begin(at);
        pv_status s = pvm_bevfusion_streams_create(16, 1, 100, &st, &m);
        pv_status s1 = PV_OK, s2 = PV_OK, s3 = PV_OK;
        if (s == PV_OK) {
            pvm_bevfusion_points o = out_buf(32);
            sframe f;
            sframe_set(&f, "x", 1, I, pts, 2);
            s1 = run_frame(st, &f, &o, &m);
            if (s1 == PV_OK) {
                sframe_set(&f, "x", 2, I, pts, 5);       /* grows x's buffer */
                s2 = run_frame(st, &f, &o, &m);
                sframe_set(&f, "y", 1, I, pts, 1);
                s3 = run_frame(st, &f, &o, &m);
            }
        } else {
            assert_null(st);
        }
        bool failed = pvc_alloc_failed();
        pvm_bevfusion_streams_free(st);
        long live = pvc_alloc_live();
        pvc_alloc_test_end();
        assert_int_equal(live, 0);
        if (!failed) {
            assert_true(s == PV_OK && s1 == PV_OK && s2 == PV_OK && s3 == PV_OK);
            break;
        }
        fired++;
        int nfail = (s != PV_OK) + (s1 != PV_OK) + (s2 != PV_OK) + (s3 != PV_OK);
        assert_int_equal(nfail, 1);
        pv_status bad = s != PV_OK ? s : s1 != PV_OK ? s1 : s2 != PV_OK ? s2 : s3;
        expect_fail(bad, &m, PV_ENOMEM, "out of memory");
    }
    assert_true(fired >= 4);     /* create (3 blocks) and at least one stream buffer */

    /* running out while growing a stream's buffer leaves its cache as it was */
    pvm_bevfusion_streams *st;
    pvc_msg m;
    assert_int_equal(pvm_bevfusion_streams_create(16, 1, 100, &st, &m), PV_OK);
    pvm_bevfusion_points o = out_buf(32);
    sframe f;
    sframe_set(&f, "x", 1, I, pts, 2);
    assert_int_equal(run_frame(st, &f, &o, &m), PV_OK);
    sframe_set(&f, "x", 2, I, pts + 6, 3);
    pvc_alloc_test_begin(1);
    expect_fail(run_frame(st, &f, &o, &m), &m, PV_ENOMEM, "stream 'x': out of memory caching 3 points");
    pvc_alloc_test_end();
    assert_int_equal(o.n, 0);
    assert_int_equal(run_frame(st, &f, &o, &m), PV_OK);
    assert_int_equal(o.n, 5);
    expect_row(&o, 0, 3, 0, 0, 0);
    expect_row(&o, 3, 1, 0, 0, 1);
    expect_row(&o, 4, 2, 0, 0, 1);
    pvm_bevfusion_streams_free(st);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plain),
        cmocka_unit_test(test_time_lag_col),
        cmocka_unit_test(test_sweeps),
        cmocka_unit_test(test_bad_matrices),
        cmocka_unit_test(test_mode_conflicts),
        cmocka_unit_test(test_capacity_sweeps),
        cmocka_unit_test(test_stream_basic),
        cmocka_unit_test(test_stream_missing_pose),
        cmocka_unit_test(test_stream_order_reset),
        cmocka_unit_test(test_stream_ids),
        cmocka_unit_test(test_stream_lru),
        cmocka_unit_test(test_stream_capacity),
        cmocka_unit_test(test_stream_large_coords),
        cmocka_unit_test(test_threads_distinct_ids),
        cmocka_unit_test(test_threads_same_id),
        cmocka_unit_test(test_stream_all_busy),
        cmocka_unit_test(test_alloc_failures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
