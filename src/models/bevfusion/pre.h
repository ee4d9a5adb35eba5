/* bevfusion host pre-processing: the point buffer the voxelizer reads, and Autoware's
 * stateful densification streams (specs/bevfusion.md sections 1.2-1.3). Prefix pvm_bevfusion_.
 *
 * Output: rows of 4 floats (x, y, z, time_lag) in the current ego frame, current sweep first,
 * then the older sweeps in order; every row is finite. Voxelization is src/sparse's job.
 *
 * Example (a stream of frames from one vehicle, Autoware's 1-past-frame densification):
 *
 *     pvm_bevfusion_streams *st;
 *     pvc_msg msg;
 *     if (pvm_bevfusion_streams_create(16, 1, 2000000, &st, &msg) != PV_OK) { puts(msg.text); return; }
 *     float *buf = pvc_malloc(2000000 * 4 * sizeof(float));
 *     pvm_bevfusion_points out = { .xyzt = buf, .cap = 2000000 };
 *     pvm_bevfusion_stream_in sin = { .id = "vehicle-1", .timestamp_s = stamp, .has_pose = true };
 *     memcpy(sin.T_world_from_ego, pose, sizeof sin.T_world_from_ego);   // row-major 4x4
 *     pvm_bevfusion_frame_in in = { .pts = cloud, .n = npoints, .stride = 4,   // x y z intensity
 *                                   .time_lag_col = -1, .stream = &sin };
 *     if (pvm_bevfusion_points_build(st, &in, &out, &msg) != PV_OK) puts(msg.text);
 *     else voxelize(out.xyzt, out.n);                      // out.sweeps_used is 1 or 2
 *     ...
 *     pvc_free(buf);
 *     pvm_bevfusion_streams_free(st);
 *
 * Modes: exactly one per frame, chosen by the fields of pvm_bevfusion_frame_in:
 *   plain      time_lag_col < 0, nsweeps == 0, stream == NULL: time_lag 0 for every point.
 *   time_lag   time_lag_col >= 0: the cloud is already densified; that column (3 <= col <
 *              stride) is copied as the time_lag, unchanged.
 *   sweeps     nsweeps > 0: stateless host densification. Each sweep's points are mapped into
 *              the current frame by its T_current_from_sweep and get its time_lag_s.
 *   stream     stream != NULL: Autoware's pointcloud_densification, state kept per stream id
 *              in a pvm_bevfusion_streams cache (see below).
 *   time_lag_col >= 0 together with sweeps or a stream, or sweeps together with a stream, is
 *   PV_EINPUT. A zero-initialized frame has time_lag_col 0, which is x, so it is refused:
 *   set -1 for "no time_lag column".
 *
 * Points: row i of a cloud starts at pts[i * stride] (stride in floats, >= 3), x y z at 0..2;
 *   other columns (intensity, ...) are ignored. A row with a NaN or Inf in x, y, z (or in the
 *   time_lag column), or whose transformed coordinates overflow, is dropped and counted in
 *   dropped_nonfinite, in every mode and every sweep.
 *
 * Transforms (T_current_from_sweep, T_world_from_ego): row-major 4x4 doubles, rigid: every
 *   element finite, last row exactly (0, 0, 0, 1), the rotation R orthonormal within
 *   PVM_BF_RIGID_TOL (max |R R^T - I|) with det R > 0, translation components within
 *   +-PVM_BF_MAX_TRANSLATION m. Anything else is PV_EINPUT naming the field. A transform is
 *   applied as float (Autoware keeps a float 4x4): x' = T00*x + T01*y + T02*z + T03, etc.,
 *   evaluated left to right in float.
 *
 * Stream mode (Autoware semantics, past_frames = 1 for v2):
 *   - Each stream id has a cache of its last past_frames accepted frames (finite points in
 *     their own ego frame, T_world_from_ego, timestamp).
 *   - Refused WITHOUT touching the cache: a frame without a pose ("stream 'ID': missing pose
 *     (T_world_from_ego)"; also with reset set), a bad pose, id or timestamp, a current sweep
 *     that does not fit, and a timestamp <= the newest cached one ("out of order") unless
 *     reset is set. reset clears the stream's cache before the frame is used.
 *   - Output: the current points (time_lag 0), then each cached frame, newest first, mapped by
 *     T_current_from_past = inverse(T_world_from_ego_current) * T_world_from_ego_past
 *     (computed in double, applied as float), time_lag = (float)(t_current - t_past).
 *     Then the current frame becomes the newest cached frame (its points are copied), and the
 *     oldest is dropped. A cold stream yields 1 sweep; nothing is padded.
 *   - Ids: 1..PVM_BF_STREAM_ID_MAX bytes, printable ASCII (0x20..0x7e).
 *   - LRU: up to max_streams ids are cached; a new id evicts the least recently used stream
 *     (every frame that passes the checks above the cache, accepted or refused later, counts
 *     as a use). Only a new id evicts, so a refused frame of a new id (out of memory) may have
 *     evicted another stream. A stream being used by another thread is never evicted; when all
 *     max_streams are busy, a new id waits for one to be released.
 *   - Thread safety: one cache mutex for the id table plus one mutex per stream: frames of
 *     different ids run in parallel and never share state; frames of one id are serialized
 *     (in the order the lock is granted; a frame that loses the race with a newer timestamp is
 *     refused as out of order).
 *
 * Capacity: limit = out->cap, and also the cache's cloud_capacity in stream mode (or when s is
 *   given). The current sweep must fit whole, else the frame is refused (PV_EINPUT with the
 *   counts). Older sweeps are added in order; the first one whose finite points do not fit
 *   is dropped whole and so is every sweep after it (Autoware stops at the first overflow):
 *   sweeps_dropped counts them, dropped_capacity counts their finite points.
 *
 * Ownership: in, its clouds, sweeps and stream are borrowed for the call. out->xyzt is the
 *   caller's buffer of out->cap rows (4 floats each); on success out->n rows are filled and
 *   the counters set; on failure out->n and all counters are 0 and the buffer's contents are
 *   unspecified. The stateless modes allocate nothing; the stream cache allocates through
 *   pvc_malloc/pvc_realloc (each stream's buffer grows to its largest frame and is kept, also
 *   across eviction, until pvm_bevfusion_streams_free).
 *
 * Errors: PV_EINPUT (bad argument, message names the field and value), PV_ENOMEM.
 */
#ifndef PVM_BEVFUSION_PRE_H
#define PVM_BEVFUSION_PRE_H

#include "core/core.h"

#define PVM_BF_STREAM_ID_MAX      128        /* bytes, without the NUL */
#define PVM_BF_RIGID_TOL          1e-3       /* max |R R^T - I| */
#define PVM_BF_MAX_TRANSLATION    1e9        /* m, per component (keeps float conversion finite) */
#define PVM_BF_MAX_TIMESTAMP      1e15       /* s, |timestamp_s| */
#define PVM_BF_MIN_STREAMS        16
#define PVM_BF_MAX_STREAMS        4096
#define PVM_BF_MAX_PAST_FRAMES    16
#define PVM_BF_MAX_CLOUD_CAPACITY ((int64_t)1 << 30)

/* One older sweep for stateless densification. */
typedef struct pvm_bevfusion_sweep {
    const float *pts;                /* n rows of stride floats; may be NULL when n == 0 */
    int64_t      n;
    int32_t      stride;             /* >= 3; x, y, z at 0..2 */
    float        time_lag_s;         /* finite, >= 0 */
    double       T_current_from_sweep[16];   /* row-major 4x4, rigid */
} pvm_bevfusion_sweep;

/* Stateful (Autoware) densification: the frame's place in a stream. */
typedef struct pvm_bevfusion_stream_in {
    const char *id;                  /* printable, 1..PVM_BF_STREAM_ID_MAX bytes */
    double      timestamp_s;         /* finite, |t| <= PVM_BF_MAX_TIMESTAMP; increasing per id */
    bool        has_pose;            /* false: the frame is refused, the cache untouched */
    double      T_world_from_ego[16];          /* row-major 4x4, rigid */
    bool        reset;               /* clear this id's cache first (e.g. after a time jump) */
} pvm_bevfusion_stream_in;

typedef struct pvm_bevfusion_frame_in {
    const float *pts;                /* the current cloud: n rows of stride floats */
    int64_t      n;
    int32_t      stride;             /* >= 3 */
    int32_t      time_lag_col;       /* >= 0: already densified, that column is time_lag; -1: none */
    const pvm_bevfusion_sweep *sweeps;          /* stateless densification (nsweeps > 0) */
    int          nsweeps;
    const pvm_bevfusion_stream_in *stream;      /* stateful densification, or NULL */
} pvm_bevfusion_frame_in;

typedef struct pvm_bevfusion_points {
    float  *xyzt;                    /* caller-owned [cap, 4] */
    int64_t n, cap;                  /* rows written; rows available */
    int64_t dropped_nonfinite;       /* rows dropped for NaN/Inf, all sweeps */
    int64_t dropped_capacity;        /* finite rows of the sweeps dropped for capacity */
    int     sweeps_used;             /* sweeps in xyzt, the current one included */
    int     sweeps_dropped;          /* sweeps dropped for capacity */
    bool    stream_started;          /* stream mode: no cached frame was used (an id this cache
                                      * has not seen, or evicted, or reset): the stream starts
                                      * here, e.g. on a replica it was moved to */
} pvm_bevfusion_points;

typedef struct pvm_bevfusion_streams pvm_bevfusion_streams;   /* opaque, thread-safe */

/* max_streams in [PVM_BF_MIN_STREAMS, PVM_BF_MAX_STREAMS] (16 for Autoware parity),
 * past_frames in [1, PVM_BF_MAX_PAST_FRAMES] (1 for v2), cloud_capacity in
 * [1, PVM_BF_MAX_CLOUD_CAPACITY] points (2,000,000 for v2). *out is NULL on failure. */
pv_status pvm_bevfusion_streams_create(int max_streams, int past_frames, int64_t cloud_capacity,
                                       pvm_bevfusion_streams **out, pvc_msg *msg);
/* Accepts NULL. No frame may be in flight. */
void pvm_bevfusion_streams_free(pvm_bevfusion_streams *s);
/* Ids currently cached (<= max_streams). */
int  pvm_bevfusion_streams_live(pvm_bevfusion_streams *s);

/* Builds the point buffer of one frame (see the modes above). s may be NULL unless
 * in->stream is set. */
pv_status pvm_bevfusion_points_build(pvm_bevfusion_streams *s, const pvm_bevfusion_frame_in *in,
                                     pvm_bevfusion_points *out, pvc_msg *msg);

/* x, y, z of n rows (stride floats) mapped in place by T (row-major 4x4) the way Autoware applies
 * a float 4x4: T converted to float, x' = ((T00 x + T01 y) + T02 z) + T03 with every product and
 * sum rounded to float (the references do the same, so voxel borders agree). */
void pvm_bevfusion_transform_f32(float *pts, int64_t n, int32_t stride, const double T[16]);

#endif
