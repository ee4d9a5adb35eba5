/* hamer bundle: the handle and one frame's run (bundle.h). */
#include "models/hamer/bundle.h"
#include "api/model_api.h"
#include "models/hamer/mano.h"
#include "models/hamer/net.h"
#include "models/hamer/pre.h"
#include "io/checksum.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

struct pvm_hamer {
    pvm_hamer_wset  w;              /* MANO arrays (the network's tensors live in the plans) */
    pvm_hamer_net  *net;
    pvc_pool       *pool;
    pthread_mutex_t engine_mu;      /* the plans' arenas serve one run at a time */
    float          *batch;          /* [8,3,256,192] engine input, under engine_mu */
    pvc_precision   precision;
    char            precision_note[160];
    char            path[4096], sha256[65];
    double          load_ms;
};


static bool is_file(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

/* DIR/hamer.safetensors or DIR/hamer/hamer.safetensors into path. */
static bool in_dir(const char *dir, char *path, size_t cap)
{
    if (pv_pathf(path, cap, "%s/%s", dir, PVM_HAMER_FILE) && is_file(path)) return true;
    return pv_pathf(path, cap, "%s/hamer/%s", dir, PVM_HAMER_FILE) && is_file(path);
}

static const char convert_hint[] =
    "convert the release with: python3 tools/convert/hamer.py --ckpt _DATA/hamer_ckpts/checkpoints/hamer.ckpt "
    "--mano _DATA/data/mano/MANO_RIGHT.pkl --out DIR/hamer.safetensors (hamer_demo_data.tar.gz from the HaMeR repo's "
    "fetch_demo_data.sh; MANO_RIGHT.pkl from https://mano.is.tue.mpg.de after registering)";

/* The weights file into path, or "" for generated weights. */
static pv_status resolve(const pvm_hamer_options *opt, char *path, size_t cap, pvc_msg *msg)
{
    path[0] = 0;
    const char *wd = opt && opt->weights_dir ? opt->weights_dir : NULL;
    if (wd) {
        if (in_dir(wd, path, cap)) return PV_OK;
        char ck[4200];
        bool has_ckpt = pv_pathf(ck, sizeof ck, "%s/hamer.ckpt", wd) && is_file(ck);
        path[0] = 0;
        return pvc_fail(msg, PV_ENOWEIGHTS, "--weights '%.200s': no %s there (nor in '%.200s/hamer')%s; %s", wd, PVM_HAMER_FILE, wd,
                        has_ckpt ? " but hamer.ckpt is: it needs converting" : "", convert_hint);
    }
    const char *env = getenv("PERCEIVE_WEIGHTS_DIR");
    if (env && *env && in_dir(env, path, cap)) return PV_OK;
    char root[4096];
    if (pv_cache_root(root, sizeof root) && in_dir(root, path, cap)) return PV_OK;
    path[0] = 0;
    if (opt && opt->strict)
        return pvc_fail(msg, PV_ENOWEIGHTS, "hamer: %s not found (--weights, PERCEIVE_WEIGHTS_DIR, %.200s/hamer); %s", PVM_HAMER_FILE,
                        pv_cache_root(root, sizeof root) ? root : "the cache", convert_hint);
    return PV_OK;
}

static int gen_depth(void)
{
    const char *d = getenv("PERCEIVE_HAMER_GEN_DEPTH");
    int v = d && *d ? atoi(d) : PVM_HAMER_DEPTH;
    return v >= 1 && v <= PVM_HAMER_DEPTH ? v : PVM_HAMER_DEPTH;
}

void pvm_hamer_close(pvm_hamer *m)
{
    if (!m) return;
    pvm_hamer_net_free(m->net);
    pvm_hamer_wset_free(&m->w);
    pvc_pool_free(m->pool);
    pvc_free_aligned(m->batch);
    pthread_mutex_destroy(&m->engine_mu);
    pvc_free(m);
}

pv_status pvm_hamer_open(const pvm_hamer_options *opt, pvm_hamer **out, pvc_msg *msg)
{
    *out = NULL;
    double t0 = pvc_now_ms();
    pvm_hamer *m = pvc_calloc(1, sizeof *m);
    if (!m) return pvc_fail(msg, PV_ENOMEM, "out of memory opening hamer");
    pthread_mutex_init(&m->engine_mu, NULL);
    pv_status s = pvc_precision_resolve(opt ? opt->precision : 0, &m->precision, m->precision_note, sizeof m->precision_note);
    if (s != PV_OK) { pvc_fail(msg, s, "%s", pv_last_error()); goto fail; }
    /* artifacts are resolved and verified before any compute is claimed */
    if ((s = resolve(opt, m->path, sizeof m->path, msg)) != PV_OK) goto fail;
    if (m->path[0]) {
        if ((s = pvio_sha256_file(m->path, m->sha256, msg)) != PV_OK) goto fail;
        if ((s = pvm_hamer_wset_load(m->path, &m->w, msg)) != PV_OK) goto fail;
    } else if ((s = pvm_hamer_wset_generate(gen_depth(), PVM_HAMER_GEN_SEED, &m->w, msg)) != PV_OK) goto fail;
    if ((s = pvc_pool_create(opt ? opt->threads : 0, &m->pool)) != PV_OK) { pvc_fail(msg, s, "%s", pv_last_error()); goto fail; }
    if (!(m->batch = pvc_malloc_aligned((size_t)PVM_HAMER_MAX_BATCH * 3 * PVM_HAMER_H_IN * PVM_HAMER_W_IN * sizeof(float)))) {
        s = pvc_fail(msg, PV_ENOMEM, "out of memory for the hamer batch");
        goto fail;
    }
    if ((s = pvm_hamer_net_create(&m->w, m->precision, pvc_pool_threads(m->pool), &m->net, msg)) != PV_OK) goto fail;
    if (!(opt && opt->no_warmup)) {
        /* one run of the single-crop plan, so the first call costs what the next ones do */
        memset(m->batch, 0, (size_t)3 * PVM_HAMER_H_IN * PVM_HAMER_W_IN * sizeof(float));
        pvm_hamer_net_out o;
        if ((s = pvm_hamer_net_run(m->net, m->batch, 1, m->pool, &o, msg)) != PV_OK) goto fail;
    }
    m->load_ms = pvc_now_ms() - t0;
    *out = m;
    return PV_OK;
fail:
    pvm_hamer_close(m);
    return s;
}

void pvm_hamer_result_free(pvm_hamer_result *r)
{
    pvc_free(r->hands);
    pvc_free(r->pix);
    pvc_free(r->tokens);
    pvc_free(r->token);
    pvc_free(r->raw);
    memset(r, 0, sizeof *r);
}

enum { CROP_PIX = PVM_HAMER_H_IN * PVM_HAMER_W_IN * 3, NTOK = 192 * 1280 };

pv_status pvm_hamer_run(pvm_hamer *m, const pvm_hamer_frame *f, bool want_stages, pvm_hamer_result *r, pvc_msg *msg)
{
    memset(r, 0, sizeof *r);
    int n = f->crop ? 1 : f->nboxes;
    if (n < 1 || n > PVM_HAMER_MAX_BATCH)
        return pvc_fail(msg, PV_EINPUT, "box: %d boxes (want 1..%d per image)", n, PVM_HAMER_MAX_BATCH);
    double t0 = pvc_now_ms();
    pvm_hamer_crop_geom geom[PVM_HAMER_MAX_BATCH];
    float *pix = pvc_malloc((size_t)n * CROP_PIX * sizeof *pix), *x = pvc_malloc((size_t)n * CROP_PIX * sizeof *x);
    r->hands = pvc_calloc((size_t)n, sizeof *r->hands);
    pv_status s = PV_OK;
    if (!pix || !x || !r->hands) { s = pvc_fail(msg, PV_ENOMEM, "out of memory for %d crops", n); goto done; }
    if (want_stages) {
        r->tokens = pvc_malloc((size_t)n * NTOK * sizeof(float));
        r->token = pvc_malloc((size_t)n * 1024 * sizeof(float));
        r->raw = pvc_malloc((size_t)n * 109 * sizeof(float));
        if (!r->tokens || !r->token || !r->raw) { s = pvc_fail(msg, PV_ENOMEM, "out of memory for the stage copies"); goto done; }
    }
    for (int i = 0; i < n && s == PV_OK; i++) {
        if (f->crop) {
            /* the crop is the network window itself (for a left hand: the mirrored view the
             * network sees): the square crop of side 256 centred on (96, 128) of a 192 x 256
             * image samples it pixel for pixel, and a left hand's window is that of the
             * mirrored image, centred on 191 - 96 = 95 */
            geom[i] = (pvm_hamer_crop_geom){ .cx = f->crop_is_right ? 96 : 95, .cy = 128, .b = 256, .is_right = f->crop_is_right,
                                             .sigma = 0, .W = 192, .H = 256 };
            for (int k = 0; k < CROP_PIX; k++) pix[(size_t)i * CROP_PIX + k] = f->rgb[k];
        } else {
            if ((s = pvm_hamer_crop_geometry(&f->boxes[i], i, f->W, f->H, &geom[i], msg)) != PV_OK) break;
            s = pvm_hamer_crop(f->rgb, f->W, f->H, &geom[i], pix + (size_t)i * CROP_PIX, msg);
        }
        if (s == PV_OK) pvm_hamer_normalise(pix + (size_t)i * CROP_PIX, x + (size_t)i * CROP_PIX);
    }
    if (s != PV_OK) goto done;
    double t1 = pvc_now_ms();
    float raw[PVM_HAMER_MAX_BATCH][109];
    pthread_mutex_lock(&m->engine_mu);
    double t2 = pvc_now_ms();
    pvm_hamer_net_out o;
    s = pvm_hamer_net_run(m->net, x, n, m->pool, &o, msg);
    if (s == PV_OK) {
        for (int i = 0; i < n; i++) {
            memcpy(raw[i], o.pose96 + i * 96, 96 * sizeof(float));
            memcpy(raw[i] + 96, o.betas + i * 10, 10 * sizeof(float));
            memcpy(raw[i] + 106, o.cam + i * 3, 3 * sizeof(float));
        }
        if (want_stages) {
            memcpy(r->tokens, o.tokens, (size_t)n * NTOK * sizeof(float));
            memcpy(r->token, o.token, (size_t)n * 1024 * sizeof(float));
            memcpy(r->raw, raw, (size_t)n * 109 * sizeof(float));
        }
    }
    pthread_mutex_unlock(&m->engine_mu);
    double t3 = pvc_now_ms();
    if (s != PV_OK) goto done;
    for (int i = 0; i < n; i++) {
        pv_hand *h = &r->hands[i];
        float R[16 * 9], verts[PVM_HAMER_NV * 3], joints[PVM_HAMER_NKP * 3];
        pvm_hamer_rot6d(raw[i], PVM_HAMER_NJ, R);
        pvm_hamer_mano_forward(&m->w.mano, R, raw[i] + 96, verts, joints);
        pvm_hamer_hand_out ho;
        pvm_hamer_camera(raw[i] + 106, &geom[i], verts, joints, R, &ho);
        h->is_right = geom[i].is_right;
        if (f->crop) { h->box[0] = 0; h->box[1] = 0; h->box[2] = 192; h->box[3] = 256; }
        else { h->box[0] = (float)f->boxes[i].x1; h->box[1] = (float)f->boxes[i].y1; h->box[2] = (float)f->boxes[i].x2; h->box[3] = (float)f->boxes[i].y2; }
        h->crop_center[0] = (float)geom[i].cx;
        h->crop_center[1] = (float)geom[i].cy;
        h->crop_size = (float)geom[i].b;
        memcpy(h->cam, ho.cam, sizeof h->cam);
        memcpy(h->cam_t, ho.cam_t, sizeof h->cam_t);
        memcpy(h->cam_t_full, ho.cam_t_full, sizeof h->cam_t_full);
        h->focal_length_full = ho.focal_full;
        memcpy(h->betas, raw[i] + 96, sizeof h->betas);
        memcpy(h->global_orient, R, 9 * sizeof(float));
        memcpy(h->hand_pose, R + 9, 15 * 9 * sizeof(float));
        memcpy(h->vertices, verts, sizeof h->vertices);
        memcpy(h->keypoints_3d, joints, sizeof h->keypoints_3d);
        memcpy(h->keypoints_2d, ho.keypoints_2d, sizeof h->keypoints_2d);
        memcpy(h->keypoints_2d_crop, ho.keypoints_2d_crop, sizeof h->keypoints_2d_crop);
    }
    r->n = n;
    r->t_crop = t1 - t0;
    r->t_wait = t2 - t1;
    r->t_engine = t3 - t2;
    r->t_skin = pvc_now_ms() - t3;
    if (want_stages) { r->pix = pix; pix = NULL; }
done:
    pvc_free(pix);
    pvc_free(x);
    if (s != PV_OK) pvm_hamer_result_free(r);
    return s;
}

const char *pvm_hamer_weights_kind(const pvm_hamer *m) { return m->w.kind; }
const char *pvm_hamer_weights_path(const pvm_hamer *m) { return m->path; }
const char *pvm_hamer_weights_sha256(const pvm_hamer *m) { return m->sha256; }
const char *pvm_hamer_precision(const pvm_hamer *m) { return pvc_precision_name(m->precision); }
const char *pvm_hamer_precision_note(const pvm_hamer *m) { return m->precision_note; }
int         pvm_hamer_depth(const pvm_hamer *m) { return m->w.depth; }
int64_t     pvm_hamer_params(const pvm_hamer *m) { return m->w.params; }
double      pvm_hamer_load_ms(const pvm_hamer *m) { return m->load_ms; }
size_t      pvm_hamer_arena_bytes(const pvm_hamer *m) { return pvm_hamer_net_arena_bytes(m->net); }
const int32_t *pvm_hamer_faces(const pvm_hamer *m) { return m->w.mano.faces; }

const char *pvm_hamer_meta(const pvm_hamer *m, const char *key)
{
    if (!strcmp(key, "hamer_ckpt_sha256")) return m->w.ckpt_sha256[0] ? m->w.ckpt_sha256 : NULL;
    if (!strcmp(key, "mano_sha256")) return m->w.mano_sha256[0] ? m->w.mano_sha256 : NULL;
    return NULL;
}

pv_status pvm_hamer_generate(const char *dir, pvc_msg *msg)
{
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) return pvc_fail(msg, PV_EINPUT, "cannot create '%s': %s", dir, strerror(errno));
    char path[4200];
    if (!pv_pathf(path, sizeof path, "%s/%s", dir, PVM_HAMER_FILE)) return pvc_fail(msg, PV_EINPUT, "directory name too long: '%.200s'", dir);
    pvm_hamer_wset w;
    pv_status s = pvm_hamer_wset_generate(gen_depth(), PVM_HAMER_GEN_SEED, &w, msg);
    if (s != PV_OK) return s;
    s = pvm_hamer_wset_write(&w, path, "generated", msg);
    pvm_hamer_wset_free(&w);
    return s;
}
