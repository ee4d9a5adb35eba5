/* bevfusion host pre-processing: point assembly in four modes and Autoware's densification
 * streams (see pre.h for the contract, specs/bevfusion.md 1.2-1.3 for the facts). */
#include "models/bevfusion/pre.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

/* ---- the stream cache ----------------------------------------------------------------------- */

/* One cached frame: finite points in their own ego frame. */
typedef struct bf_frame {
    float  *xyz;                     /* n x 3 */
    int64_t n, cap;
    double  T_world_from_ego[16];
    double  t;
} bf_frame;

typedef struct bf_stream {
    /* guarded by the cache mutex */
    char     id[PVM_BF_STREAM_ID_MAX + 1];
    bool     used;                   /* holds an id */
    int      refs;                   /* threads using or waiting for this stream */
    uint64_t last_use;               /* LRU tick */
    /* guarded by mu (or by the cache mutex while refs == 0) */
    pthread_mutex_t mu;
    int       count;                 /* cached frames, newest first in frames[0..count) */
    bf_frame *frames;                /* [past_frames]; buffers are permuted, never lost */
} bf_stream;

struct pvm_bevfusion_streams {
    pthread_mutex_t mu;
    pthread_cond_t  released;        /* a stream's refs dropped to 0 */
    int       max_streams, past_frames;
    int64_t   cloud_capacity;
    uint64_t  tick;
    bf_stream *streams;              /* [max_streams] */
    bf_frame  *frames;               /* [max_streams * past_frames], backing of streams[].frames */
    int       nmutex;                /* stream mutexes initialized (for cleanup) */
};

static void streams_destroy(pvm_bevfusion_streams *s, bool sync_ready)
{
    if (s->frames) {
        for (int64_t i = 0; i < (int64_t)s->max_streams * s->past_frames; i++)
            pvc_free(s->frames[i].xyz);
    }
    for (int i = 0; i < s->nmutex; i++) pthread_mutex_destroy(&s->streams[i].mu);
    if (sync_ready) {
        pthread_cond_destroy(&s->released);
        pthread_mutex_destroy(&s->mu);
    }
    pvc_free(s->frames);
    pvc_free(s->streams);
    pvc_free(s);
}

pv_status pvm_bevfusion_streams_create(int max_streams, int past_frames, int64_t cloud_capacity,
                                       pvm_bevfusion_streams **out, pvc_msg *msg)
{
    if (!out) return pvc_fail(msg, PV_EINPUT, "bevfusion streams: out is NULL");
    *out = NULL;
    if (max_streams < PVM_BF_MIN_STREAMS || max_streams > PVM_BF_MAX_STREAMS)
        return pvc_fail(msg, PV_EINPUT, "bevfusion streams: max_streams %d (want %d..%d)",
                        max_streams, PVM_BF_MIN_STREAMS, PVM_BF_MAX_STREAMS);
    if (past_frames < 1 || past_frames > PVM_BF_MAX_PAST_FRAMES)
        return pvc_fail(msg, PV_EINPUT, "bevfusion streams: past_frames %d (want 1..%d)",
                        past_frames, PVM_BF_MAX_PAST_FRAMES);
    if (cloud_capacity < 1 || cloud_capacity > PVM_BF_MAX_CLOUD_CAPACITY)
        return pvc_fail(msg, PV_EINPUT, "bevfusion streams: cloud_capacity %lld (want 1..%lld)",
                        (long long)cloud_capacity, (long long)PVM_BF_MAX_CLOUD_CAPACITY);

    pvm_bevfusion_streams *s = pvc_calloc(1, sizeof *s);
    if (!s) return pvc_fail(msg, PV_ENOMEM, "bevfusion streams: out of memory");
    s->max_streams = max_streams;
    s->past_frames = past_frames;
    s->cloud_capacity = cloud_capacity;
    s->streams = pvc_calloc((size_t)max_streams, sizeof *s->streams);
    s->frames = pvc_calloc((size_t)max_streams * (size_t)past_frames, sizeof *s->frames);
    if (!s->streams || !s->frames) {
        streams_destroy(s, false);
        return pvc_fail(msg, PV_ENOMEM, "bevfusion streams: out of memory (%d streams)", max_streams);
    }
    if (pthread_mutex_init(&s->mu, NULL) != 0) {
        streams_destroy(s, false);
        return pvc_fail(msg, PV_ENOMEM, "bevfusion streams: cannot create a mutex");
    }
    if (pthread_cond_init(&s->released, NULL) != 0) {
        pthread_mutex_destroy(&s->mu);
        streams_destroy(s, false);
        return pvc_fail(msg, PV_ENOMEM, "bevfusion streams: cannot create a condition variable");
    }
    for (int i = 0; i < max_streams; i++) {
        if (pthread_mutex_init(&s->streams[i].mu, NULL) != 0) {
            streams_destroy(s, true);
            return pvc_fail(msg, PV_ENOMEM, "bevfusion streams: cannot create a mutex");
        }
        s->nmutex++;
        s->streams[i].frames = s->frames + (size_t)i * (size_t)past_frames;
    }
    *out = s;
    return PV_OK;
}

void pvm_bevfusion_streams_free(pvm_bevfusion_streams *s)
{
    if (s) streams_destroy(s, true);
}

int pvm_bevfusion_streams_live(pvm_bevfusion_streams *s)
{
    if (!s) return 0;
    pthread_mutex_lock(&s->mu);
    int k = 0;
    for (int i = 0; i < s->max_streams; i++) k += s->streams[i].used;
    pthread_mutex_unlock(&s->mu);
    return k;
}

/* Finds id's stream, or claims a free one, or evicts the least recently used idle one (waiting
 * while every stream is busy), then takes its mutex. */
static bf_stream *stream_acquire(pvm_bevfusion_streams *s, const char *id)
{
    pthread_mutex_lock(&s->mu);
    bf_stream *e;
    for (;;) {
        bf_stream *unused = NULL, *lru = NULL;
        e = NULL;
        for (int i = 0; i < s->max_streams; i++) {
            bf_stream *c = &s->streams[i];
            if (!c->used) {
                if (!unused) unused = c;
            } else if (strcmp(c->id, id) == 0) {
                e = c;
                break;
            } else if (c->refs == 0 && (!lru || c->last_use < lru->last_use)) {
                lru = c;
            }
        }
        if (e) break;
        e = unused ? unused : lru;
        if (e) {
            /* refs == 0: nobody holds or waits for e->mu, so its state is ours to reset */
            strcpy(e->id, id);
            e->used = true;
            e->count = 0;
            break;
        }
        pthread_cond_wait(&s->released, &s->mu);
    }
    e->refs++;
    e->last_use = ++s->tick;
    pthread_mutex_unlock(&s->mu);
    pthread_mutex_lock(&e->mu);
    return e;
}

static void stream_release(pvm_bevfusion_streams *s, bf_stream *e)
{
    pthread_mutex_unlock(&e->mu);
    pthread_mutex_lock(&s->mu);
    if (--e->refs == 0) pthread_cond_broadcast(&s->released);
    pthread_mutex_unlock(&s->mu);
}

/* ---- validation ----------------------------------------------------------------------------- */

static pv_status check_cloud(const char *what, const float *pts, int64_t n, int32_t stride,
                             pvc_msg *msg)
{
    if (n < 0) return pvc_fail(msg, PV_EINPUT, "%s.n %lld (want >= 0)", what, (long long)n);
    if (stride < 3) return pvc_fail(msg, PV_EINPUT, "%s.stride %d (want >= 3: x, y, z)", what, (int)stride);
    if (n > 0 && !pts) return pvc_fail(msg, PV_EINPUT, "%s.pts is NULL with n %lld", what, (long long)n);
    int64_t total;
    if (pvc_mul_overflow(n, stride, &total))
        return pvc_fail(msg, PV_EINPUT, "%s: n %lld x stride %d overflows", what, (long long)n, (int)stride);
    return PV_OK;
}

/* A rigid row-major 4x4 (see pre.h). */
static pv_status check_rigid(const double *T, const char *what, pvc_msg *msg)
{
    for (int i = 0; i < 16; i++) {
        if (!isfinite(T[i]))
            return pvc_fail(msg, PV_EINPUT, "%s[%d][%d] is %g (want finite)", what, i / 4, i % 4, T[i]);
    }
    if (T[12] != 0.0 || T[13] != 0.0 || T[14] != 0.0 || T[15] != 1.0)
        return pvc_fail(msg, PV_EINPUT, "%s: last row is (%g, %g, %g, %g), want (0, 0, 0, 1)", what,
                        T[12], T[13], T[14], T[15]);
    for (int r = 0; r < 3; r++) {
        if (fabs(T[r * 4 + 3]) > PVM_BF_MAX_TRANSLATION)
            return pvc_fail(msg, PV_EINPUT, "%s[%d][3] is %g (translation beyond +-%g m)", what, r,
                            T[r * 4 + 3], PVM_BF_MAX_TRANSLATION);
    }
    double err = 0.0;
    for (int i = 0; i < 3; i++) {
        for (int j = 0; j < 3; j++) {
            double d = 0.0;
            for (int k = 0; k < 3; k++) d += T[i * 4 + k] * T[j * 4 + k];
            err = fmax(err, fabs(d - (i == j ? 1.0 : 0.0)));
        }
    }
    if (err > PVM_BF_RIGID_TOL)
        return pvc_fail(msg, PV_EINPUT, "%s: rotation is not orthonormal (max |R R^T - I| = %.3g > %g)",
                        what, err, PVM_BF_RIGID_TOL);
    double det = T[0] * (T[5] * T[10] - T[6] * T[9]) - T[1] * (T[4] * T[10] - T[6] * T[8]) +
                 T[2] * (T[4] * T[9] - T[5] * T[8]);
    if (det <= 0.0)
        return pvc_fail(msg, PV_EINPUT, "%s: rotation has determinant %.6g (a reflection, not rigid)",
                        what, det);
    return PV_OK;
}

/* 1..PVM_BF_STREAM_ID_MAX printable ASCII bytes. */
static pv_status check_id(const char *id, pvc_msg *msg)
{
    if (!id) return pvc_fail(msg, PV_EINPUT, "stream.id is NULL");
    size_t len = 0;
    for (; len <= PVM_BF_STREAM_ID_MAX && id[len]; len++) {
        unsigned char c = (unsigned char)id[len];
        if (c < 0x20 || c > 0x7e)
            return pvc_fail(msg, PV_EINPUT, "stream.id has byte 0x%02x at offset %zu (want printable ASCII)",
                            c, len);
    }
    if (len == 0) return pvc_fail(msg, PV_EINPUT, "stream.id is empty");
    if (len > PVM_BF_STREAM_ID_MAX)
        return pvc_fail(msg, PV_EINPUT, "stream.id '%.32s...' is longer than %d bytes", id,
                        PVM_BF_STREAM_ID_MAX);
    return PV_OK;
}

static pv_status check_stream(const pvm_bevfusion_stream_in *si, pvc_msg *msg)
{
    pv_status st = check_id(si->id, msg);
    if (st != PV_OK) return st;
    if (!isfinite(si->timestamp_s) || fabs(si->timestamp_s) > PVM_BF_MAX_TIMESTAMP)
        return pvc_fail(msg, PV_EINPUT, "stream '%s': timestamp_s %g (want finite, |t| <= %g)", si->id,
                        si->timestamp_s, PVM_BF_MAX_TIMESTAMP);
    if (!si->has_pose)
        return pvc_fail(msg, PV_EINPUT, "stream '%s': missing pose (T_world_from_ego)", si->id);
    char what[PVM_BF_STREAM_ID_MAX + 48];
    snprintf(what, sizeof what, "stream '%s': T_world_from_ego", si->id);
    return check_rigid(si->T_world_from_ego, what, msg);
}

/* ---- point assembly ------------------------------------------------------------------------- */

/* Appends the finite points of one sweep at dst (room rows free), mapped by m (row-major 3x4
 * float, NULL for none), time_lag from column tcol (>= 0) or lag. Returns the sweep's finite
 * row count; the rows are all written only when that count is <= room. */
static int64_t put_sweep(float *dst, int64_t room, const float *pts, int64_t n, int32_t stride,
                         int32_t tcol, const float *m, float lag, int64_t *nonfinite)
{
    int64_t k = 0, bad = 0;
    for (int64_t i = 0; i < n; i++) {
        const float *p = pts + i * stride;
        float x = p[0], y = p[1], z = p[2], t = tcol >= 0 ? p[tcol] : lag;
        if (!isfinite(x) || !isfinite(y) || !isfinite(z) || !isfinite(t)) { bad++; continue; }
        if (m) {
            /* Autoware's order: T[0]x + T[4]y + T[8]z + T[12] on a column-major float 4x4 */
            float tx = m[0] * x + m[1] * y + m[2] * z + m[3];
            float ty = m[4] * x + m[5] * y + m[6] * z + m[7];
            float tz = m[8] * x + m[9] * y + m[10] * z + m[11];
            if (!isfinite(tx) || !isfinite(ty) || !isfinite(tz)) { bad++; continue; }
            x = tx; y = ty; z = tz;
        }
        if (k < room) {
            float *q = dst + k * 4;
            q[0] = x; q[1] = y; q[2] = z; q[3] = t;
        }
        k++;
    }
    *nonfinite += bad;
    return k;
}

/* One older sweep under Autoware's capacity rule: once a sweep does not fit, it and every later
 * one are dropped whole (*full set), still counted. */
static void add_older(pvm_bevfusion_points *out, int64_t limit, bool *full, const float *pts,
                      int64_t n, int32_t stride, const float *m, float lag)
{
    int64_t room = *full ? 0 : limit - out->n;
    float *dst = out->xyzt ? out->xyzt + out->n * 4 : NULL;    /* NULL only when cap is 0 */
    int64_t k = put_sweep(dst, room, pts, n, stride, -1, m, lag,
                          &out->dropped_nonfinite);
    if (!*full && k <= room) {
        out->n += k;
        out->sweeps_used++;
        return;
    }
    *full = true;
    out->sweeps_dropped++;
    out->dropped_capacity += k;
}

static void to_float34(const double *T, float *m)
{
    for (int i = 0; i < 12; i++) m[i] = (float)T[i];
}

/* inverse(A) * B for rigid row-major 4x4s, in double. */
static void rigid_inv_mul(const double *A, const double *B, double *C)
{
    for (int i = 0; i < 3; i++) {
        for (int j = 0; j < 3; j++)
            C[i * 4 + j] = A[0 * 4 + i] * B[0 * 4 + j] + A[1 * 4 + i] * B[1 * 4 + j] +
                           A[2 * 4 + i] * B[2 * 4 + j];
        C[i * 4 + 3] = A[0 * 4 + i] * (B[3] - A[3]) + A[1 * 4 + i] * (B[7] - A[7]) +
                       A[2 * 4 + i] * (B[11] - A[11]);
    }
    C[12] = C[13] = C[14] = 0.0;
    C[15] = 1.0;
}

/* Stream mode, after the current sweep's n_cur rows are in out. */
static pv_status stream_frame(pvm_bevfusion_streams *s, const pvm_bevfusion_stream_in *si,
                              pvm_bevfusion_points *out, int64_t limit, pvc_msg *msg)
{
    int64_t n_cur = out->n;
    bf_stream *e = stream_acquire(s, si->id);
    pv_status st = PV_OK;
    if (!si->reset && e->count > 0 && !(si->timestamp_s > e->frames[0].t)) {
        st = pvc_fail(msg, PV_EINPUT,
                      "stream '%s': timestamp_s %.17g is not after the newest cached frame's %.17g "
                      "(out of order; set reset to restart the stream)",
                      si->id, si->timestamp_s, e->frames[0].t);
        goto done;
    }
    /* The last slot is recycled for the current frame: grow it first, so that running out of
     * memory leaves the cache as it was. */
    bf_frame *slot = &e->frames[s->past_frames - 1];
    if (slot->cap < n_cur) {
        /* n_cur <= cloud_capacity, so the cap stays within it */
        int64_t cap = PVC_MIN(PVC_MAX(n_cur, slot->cap + slot->cap / 2), s->cloud_capacity);
        float *p = pvc_realloc(slot->xyz, (size_t)cap * 3 * sizeof(float));
        if (!p) {
            st = pvc_fail(msg, PV_ENOMEM, "stream '%s': out of memory caching %lld points", si->id,
                          (long long)n_cur);
            goto done;
        }
        slot->xyz = p;
        slot->cap = cap;
    }
    if (si->reset) e->count = 0;
    out->stream_started = e->count == 0;

    bool full = false;
    for (int i = 0; i < e->count; i++) {
        const bf_frame *f = &e->frames[i];
        double T[16];
        float m[12];
        rigid_inv_mul(si->T_world_from_ego, f->T_world_from_ego, T);
        to_float34(T, m);
        add_older(out, limit, &full, f->xyz, f->n, 3, m, (float)(si->timestamp_s - f->t));
    }

    /* the current frame becomes the newest cached one */
    bf_frame cur = *slot;
    memmove(&e->frames[1], &e->frames[0], (size_t)(s->past_frames - 1) * sizeof *e->frames);
    for (int64_t i = 0; i < n_cur; i++) memcpy(cur.xyz + i * 3, out->xyzt + i * 4, 3 * sizeof(float));
    cur.n = n_cur;
    memcpy(cur.T_world_from_ego, si->T_world_from_ego, sizeof cur.T_world_from_ego);
    cur.t = si->timestamp_s;
    e->frames[0] = cur;
    e->count = PVC_MIN(e->count + 1, s->past_frames);
done:
    stream_release(s, e);
    return st;
}

static void points_clear(pvm_bevfusion_points *out)
{
    out->n = 0;
    out->dropped_nonfinite = out->dropped_capacity = 0;
    out->sweeps_used = out->sweeps_dropped = 0;
    out->stream_started = false;
}

pv_status pvm_bevfusion_points_build(pvm_bevfusion_streams *s, const pvm_bevfusion_frame_in *in,
                                     pvm_bevfusion_points *out, pvc_msg *msg)
{
    if (!out) return pvc_fail(msg, PV_EINPUT, "bevfusion points: out is NULL");
    points_clear(out);
    if (!in) return pvc_fail(msg, PV_EINPUT, "bevfusion points: frame is NULL");
    if (out->cap < 0 || (out->cap > 0 && !out->xyzt))
        return pvc_fail(msg, PV_EINPUT, "out.cap %lld with out.xyzt %s", (long long)out->cap,
                        out->xyzt ? "set" : "NULL");
    pv_status st = check_cloud("frame", in->pts, in->n, in->stride, msg);
    if (st != PV_OK) return st;

    /* exactly one mode */
    int32_t tcol = in->time_lag_col;
    if (tcol < -1 || (tcol >= 0 && (tcol < 3 || tcol >= in->stride)))
        return pvc_fail(msg, PV_EINPUT,
                        "frame.time_lag_col %d (want -1 for none, or 3..%d; 0..2 are x, y, z)",
                        (int)tcol, (int)in->stride - 1);
    if (in->nsweeps < 0) return pvc_fail(msg, PV_EINPUT, "frame.nsweeps %d (want >= 0)", in->nsweeps);
    if (in->nsweeps > 0 && !in->sweeps)
        return pvc_fail(msg, PV_EINPUT, "frame.sweeps is NULL with nsweeps %d", in->nsweeps);
    if (in->time_lag_col >= 0 && (in->nsweeps > 0 || in->stream))
        return pvc_fail(msg, PV_EINPUT,
                        "frame.time_lag_col %d marks an already densified cloud; it cannot be combined "
                        "with %s", (int)tcol, in->nsweeps > 0 ? "sweeps" : "a stream");
    if (in->nsweeps > 0 && in->stream)
        return pvc_fail(msg, PV_EINPUT, "frame has both sweeps (%d) and a stream: choose one densification",
                        in->nsweeps);
    if (in->stream && !s)
        return pvc_fail(msg, PV_EINPUT, "stream mode needs a stream cache (pvm_bevfusion_streams is NULL)");

    for (int i = 0; i < in->nsweeps; i++) {
        const pvm_bevfusion_sweep *sw = &in->sweeps[i];
        char what[64];
        snprintf(what, sizeof what, "sweeps[%d]", i);
        if ((st = check_cloud(what, sw->pts, sw->n, sw->stride, msg)) != PV_OK) return st;
        if (!isfinite(sw->time_lag_s) || sw->time_lag_s < 0.0f)
            return pvc_fail(msg, PV_EINPUT, "sweeps[%d].time_lag_s %g (want finite, >= 0)", i,
                            (double)sw->time_lag_s);
        snprintf(what, sizeof what, "sweeps[%d].T_current_from_sweep", i);
        if ((st = check_rigid(sw->T_current_from_sweep, what, msg)) != PV_OK) return st;
    }
    if (in->stream && (st = check_stream(in->stream, msg)) != PV_OK) return st;

    int64_t limit = out->cap;
    if (s) limit = PVC_MIN(limit, s->cloud_capacity);

    /* the current sweep: whole or refused */
    int64_t k = put_sweep(out->xyzt, limit, in->pts, in->n, in->stride, in->time_lag_col, NULL, 0.0f,
                          &out->dropped_nonfinite);
    if (k > limit) {
        char cc[48] = "";
        if (s) snprintf(cc, sizeof cc, ", cloud_capacity %lld", (long long)s->cloud_capacity);
        pv_status f = pvc_fail(msg, PV_EINPUT,
                               "frame: the current sweep has %lld finite points (of %lld) but only %lld "
                               "fit (out.cap %lld%s)",
                               (long long)k, (long long)in->n, (long long)limit, (long long)out->cap, cc);
        points_clear(out);
        return f;
    }
    out->n = k;
    out->sweeps_used = 1;

    if (in->nsweeps > 0) {
        bool full = false;
        for (int i = 0; i < in->nsweeps; i++) {
            const pvm_bevfusion_sweep *sw = &in->sweeps[i];
            float m[12];
            to_float34(sw->T_current_from_sweep, m);
            add_older(out, limit, &full, sw->pts, sw->n, sw->stride, m, sw->time_lag_s);
        }
    } else if (in->stream) {
        if ((st = stream_frame(s, in->stream, out, limit, msg)) != PV_OK) {
            points_clear(out);
            return st;
        }
    }
    return PV_OK;
}

void pvm_bevfusion_transform_f32(float *pts, int64_t n, int32_t stride, const double T[16])
{
    float t[12];
    for (int i = 0; i < 12; i++) t[i] = (float)T[i];
    for (int64_t i = 0; i < n; i++) {
        float *p = pts + i * stride;
        float x = p[0], y = p[1], z = p[2];
        for (int r = 0; r < 3; r++) {
            float a = t[4 * r] * x;
            float b = t[4 * r + 1] * y;
            float ab = a + b;
            float c = t[4 * r + 2] * z;
            float abc = ab + c;
            p[r] = abc + t[4 * r + 3];
        }
    }
}
