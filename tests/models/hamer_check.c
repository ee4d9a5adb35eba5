/* HaMeR model agreement: the bundle against the independent PyTorch re-statement
 * (tools/ref/hamer_ref.py) on the committed fixtures (tools/gen/make_hamer_fixtures.sh):
 *
 *   hamer_check FIXTURES_DIR [SHARED_DATA_DIR]
 *
 * The fixtures were made on the C generator's reduced-depth twin (2 of the 32 ViT blocks: the
 * same code path, `PERCEIVE_HAMER_GEN_DEPTH=2 perceive gen hamer`); this test regenerates that
 * file and refuses stale fixtures (sha256). Gates (issue 10):
 *   - crops: the pixels the ViT sees equal the reference's within 1/255 (1.0 in pixel units)
 *   - backbone tokens, decoder token, head outputs (pose96, betas, cam), vertices: PCC >= 0.9999;
 *     vertices and keypoints_3d within 1e-4 m; rotations within 1e-4; keypoints within 0.05 px
 *   - a left hand equals the mirrored right-hand run of the mirrored image (bit-exact crop,
 *     so the network outputs agree exactly and the mirrored outputs within float rounding)
 *   - a batch of 4 equals 4 single runs (the plans share weights; results within 1e-5)
 *   - bf16 (where the CPU has AVX512_BF16): vertices PCC >= 0.999 against fp32
 * With the shared data dir, the real images of ../shared/data/hands run end to end too. */
#include "io/checksum.h"
#include "io/image.h"
#include "io/io.h"
#include "models/hamer/bundle.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PCC_MIN   0.9999
#define M_TOL     1e-4     /* metres, rotation entries */
#define PX_TOL    0.05     /* pixels (2D keypoints: b * kp_n with b up to ~1400 px) */

static int failures;

#define CHECK(cond, ...) do { if (!(cond)) { failures++; printf("FAIL "); printf(__VA_ARGS__); printf("\n"); } } while (0)

static const pvc_tensor *arr(const pvio_arrays *a, const char *name)
{
    const pvio_array *x = pvio_arrays_find(a, name);
    if (!x) { printf("FAIL fixture lacks '%s'\n", name); failures++; exit(1); }
    return &x->t;
}

static double get(const pvc_tensor *t, int64_t i) { return pvc_get_f64(t->data, t->dtype, i); }

static double pcc(const float *a, const float *b, int64_t n)
{
    double ma = 0, mb = 0;
    for (int64_t i = 0; i < n; i++) { ma += a[i]; mb += b[i]; }
    ma /= (double)n;
    mb /= (double)n;
    double sab = 0, saa = 0, sbb = 0;
    for (int64_t i = 0; i < n; i++) {
        double x = a[i] - ma, y = b[i] - mb;
        sab += x * y; saa += x * x; sbb += y * y;
    }
    return saa > 0 && sbb > 0 ? sab / sqrt(saa * sbb) : (saa == sbb ? 1.0 : 0.0);
}

static double maxdiff(const float *a, const float *b, int64_t n)
{
    double m = 0;
    for (int64_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - b[i]);
        if (!(d <= m)) m = d;   /* NaN wins */
    }
    return m;
}

/* Compares got[n] with the fixture's array `name` at item `item` (n values per item). */
static void cmp(const pvio_arrays *fx, const char *name, int item, const float *got, int64_t n, double pcc_min, double tol, const char *what)
{
    const pvc_tensor *t = arr(fx, name);
    float *want = malloc((size_t)n * sizeof *want);
    for (int64_t i = 0; i < n; i++) want[i] = (float)get(t, (int64_t)item * n + i);
    double p = pcc(got, want, n), d = maxdiff(got, want, n);
    bool ok = (pcc_min <= 0 || p >= pcc_min) && (tol <= 0 || d <= tol);
    printf("%s %-8s %-18s pcc %.7f max|d| %.3g\n", ok ? "ok  " : "FAIL", what, name, p, d);
    if (!ok) failures++;
    free(want);
}

static void cmp_hand(const pvio_arrays *fx, int i, const pvm_hamer_result *r, int k, const char *what)
{
    const pv_hand *h = &r->hands[k];
    cmp(fx, "token", i, r->token + (size_t)k * 1024, 1024, PCC_MIN, 0, what);
    cmp(fx, "pose96", i, r->raw + (size_t)k * 109, 96, PCC_MIN, 0, what);
    cmp(fx, "betas", i, r->raw + (size_t)k * 109 + 96, 10, PCC_MIN, 0, what);
    cmp(fx, "cam", i, r->raw + (size_t)k * 109 + 106, 3, 0, 1e-3, what);
    cmp(fx, "global_orient", i, h->global_orient, 9, 0, M_TOL, what);
    cmp(fx, "hand_pose", i, h->hand_pose, 135, 0, M_TOL, what);
    cmp(fx, "vertices", i, h->vertices, 778 * 3, PCC_MIN, M_TOL, what);
    cmp(fx, "keypoints_3d", i, h->keypoints_3d, 63, PCC_MIN, M_TOL, what);
    cmp(fx, "keypoints_2d_crop", i, h->keypoints_2d_crop, 42, 0, PX_TOL, what);
    cmp(fx, "cam_t", i, h->cam_t, 3, 0, 1e-3, what);
    /* tokens: the fixture keeps rows 0, 1, 95, 191 */
    const pvc_tensor *rows = arr(fx, "token_rows");
    float got[4 * 1280];
    for (int q = 0; q < 4; q++)
        memcpy(got + q * 1280, r->tokens + ((size_t)k * 192 + (size_t)get(rows, q)) * 1280, 1280 * sizeof(float));
    cmp(fx, "tokens_rows", i, got, 4 * 1280, PCC_MIN, 0, what);
}

static pvm_hamer *open_model(const char *dir, int precision)
{
    pvm_hamer_options o = { .weights_dir = dir, .threads = 2, .precision = precision };
    pvm_hamer *m = NULL;
    pvc_msg msg = { { 0 } };
    if (pvm_hamer_open(&o, &m, &msg) != PV_OK) { printf("FAIL open: %s\n", msg.text); exit(1); }
    return m;
}

static void run(pvm_hamer *m, const pvm_hamer_frame *f, pvm_hamer_result *r)
{
    pvc_msg msg = { { 0 } };
    if (pvm_hamer_run(m, f, true, r, &msg) != PV_OK) { printf("FAIL run: %s\n", msg.text); exit(1); }
}

static void check_crops(pvm_hamer *m, const pvio_arrays *fx)
{
    const pvc_tensor *crops = arr(fx, "crops"), *right = arr(fx, "is_right");
    for (int i = 0; i < 2; i++) {
        pvm_hamer_frame f = { .rgb = (const uint8_t *)crops->data + (size_t)i * 256 * 192 * 3, .crop = true,
                              .crop_is_right = get(right, i) != 0 };
        pvm_hamer_result r;
        run(m, &f, &r);
        char what[16];
        snprintf(what, sizeof what, "crop%d", i);
        cmp_hand(fx, i, &r, 0, what);
        pvm_hamer_result_free(&r);
    }
}

static void check_image(pvm_hamer *m, const char *fixdir, const pvio_arrays *fx, pvm_hamer_result *all)
{
    char p[4200];
    snprintf(p, sizeof p, "%s/image.png", fixdir);
    void *buf = NULL;
    size_t len = 0;
    FILE *fp = fopen(p, "rb");
    if (!fp) { printf("FAIL cannot read %s\n", p); exit(1); }
    fseek(fp, 0, SEEK_END);
    len = (size_t)ftell(fp);
    fseek(fp, 0, SEEK_SET);
    buf = malloc(len);
    if (fread(buf, 1, len, fp) != len) { printf("FAIL short read %s\n", p); exit(1); }
    fclose(fp);
    pvio_image img;
    pvc_msg msg = { { 0 } };
    if (pvio_image_decode(buf, len, "png", &img, &msg) != PV_OK) { printf("FAIL %s: %s\n", p, msg.text); exit(1); }
    free(buf);
    const pvc_tensor *bx = arr(fx, "boxes"), *right = arr(fx, "is_right");
    int nb = (int)bx->dims[0];
    pvm_hamer_box boxes[8];
    for (int i = 0; i < nb; i++)
        boxes[i] = (pvm_hamer_box){ get(bx, 4 * i), get(bx, 4 * i + 1), get(bx, 4 * i + 2), get(bx, 4 * i + 3), get(right, i) != 0 };
    pvm_hamer_frame f = { .rgb = img.rgb, .W = img.w, .H = img.h, .boxes = boxes, .nboxes = nb };
    run(m, &f, all);
    for (int i = 0; i < nb; i++) {
        char what[16];
        snprintf(what, sizeof what, "image%d", i);
        cmp(fx, "crop", i, all->pix + (size_t)i * 256 * 192 * 3, 256 * 192 * 3, 0, 1.0, what);   /* within 1/255 */
        cmp_hand(fx, i, all, i, what);
        cmp(fx, "keypoints_2d", i, all->hands[i].keypoints_2d, 42, 0, PX_TOL, what);
        cmp(fx, "cam_t_full", i, all->hands[i].cam_t_full, 3, 0, 1e-3 * (1 + fabs(all->hands[i].cam_t_full[2])), what);
        float c[3] = { all->hands[i].crop_center[0], all->hands[i].crop_center[1], 0 };
        cmp(fx, "center", i, c, 2, 0, 1e-3, what);
    }
    /* a batch equals single runs */
    for (int i = 0; i < nb; i++) {
        pvm_hamer_frame one = f;
        one.boxes = &boxes[i];
        one.nboxes = 1;
        pvm_hamer_result r;
        run(m, &one, &r);
        double d = maxdiff(r.hands[0].vertices, all->hands[i].vertices, 778 * 3);
        double dt = maxdiff(r.tokens, all->tokens + (size_t)i * 192 * 1280, 192 * 1280);
        CHECK(d <= 1e-5 && dt <= 1e-4, "batch of %d vs single run of box %d: vertices differ by %.3g, tokens by %.3g", nb, i, d, dt);
        if (d <= 1e-5 && dt <= 1e-4) printf("ok   batch    box %d alone == in the batch (vertices %.3g, tokens %.3g)\n", i, d, dt);
        pvm_hamer_result_free(&r);
    }
    /* left hand == mirrored right-hand run on the mirrored image */
    pvio_image mir = { img.w, img.h, malloc((size_t)img.w * img.h * 3) };
    for (int y = 0; y < img.h; y++)
        for (int x = 0; x < img.w; x++) memcpy(mir.rgb + ((size_t)y * img.w + x) * 3, img.rgb + ((size_t)y * img.w + (img.w - 1 - x)) * 3, 3);
    pvm_hamer_box mb[8];
    for (int i = 0; i < nb; i++)
        mb[i] = (pvm_hamer_box){ img.w - 1 - boxes[i].x2, boxes[i].y1, img.w - 1 - boxes[i].x1, boxes[i].y2, !boxes[i].is_right };
    pvm_hamer_frame fm = { .rgb = mir.rgb, .W = img.w, .H = img.h, .boxes = mb, .nboxes = nb };
    pvm_hamer_result rm;
    run(m, &fm, &rm);
    for (int i = 0; i < nb; i++) {
        const pv_hand *a = &all->hands[i], *b = &rm.hands[i];
        double dv = 0, dk = 0, dr = 0;
        for (int v = 0; v < 778; v++) {
            dv = fmax(dv, fabs(a->vertices[3 * v] + b->vertices[3 * v]));
            dv = fmax(dv, fabs(a->vertices[3 * v + 1] - b->vertices[3 * v + 1]));
            dv = fmax(dv, fabs(a->vertices[3 * v + 2] - b->vertices[3 * v + 2]));
        }
        for (int k = 0; k < 21; k++) {
            dk = fmax(dk, fabs(a->keypoints_2d[2 * k] - (img.w - 1 - b->keypoints_2d[2 * k])));
            dk = fmax(dk, fabs(a->keypoints_2d[2 * k + 1] - b->keypoints_2d[2 * k + 1]));
        }
        /* R_left = M R_right M: entries (0,1), (0,2), (1,0), (2,0) change sign */
        for (int j = 0; j < 16; j++) {
            const float *ra = j ? a->hand_pose + 9 * (j - 1) : a->global_orient, *rb = j ? b->hand_pose + 9 * (j - 1) : b->global_orient;
            for (int e = 0; e < 9; e++) {
                int r = e / 3, c = e % 3;
                double sgn = (r == 0) != (c == 0) ? -1 : 1;
                dr = fmax(dr, fabs(ra[e] - sgn * rb[e]));
            }
        }
        double dc = fabs(a->cam_t_full[0] + b->cam_t_full[0]) + fabs(a->cam_t_full[1] - b->cam_t_full[1]) + fabs(a->cam_t_full[2] - b->cam_t_full[2]);
        bool ok = dv <= 1e-6 && dk <= 1e-3 && dr <= 1e-6 && dc <= 1e-3 * (1 + fabs(a->cam_t_full[2]));
        printf("%s mirror   box %d (%s): vertices %.3g m, keypoints_2d %.3g px, rotations %.3g, cam_t_full %.3g\n", ok ? "ok  " : "FAIL", i,
               a->is_right ? "right" : "left", dv, dk, dr, dc);
        if (!ok) failures++;
    }
    pvm_hamer_result_free(&rm);
    free(mir.rgb);
    pvio_image_free(&img);
}

static void check_bf16(const char *dir, const pvio_arrays *fx, const pvm_hamer_result *fp32)
{
    pvm_hamer *m = open_model(dir, PV_PRECISION_BF16);
    if (strcmp(pvm_hamer_precision(m), "bf16")) {
        printf("SKIP bf16: %s\n", pvm_hamer_precision_note(m));
        pvm_hamer_close(m);
        return;
    }
    (void)fx;
    (void)fp32;
    const pvc_tensor *crops = arr(fx, "crops"), *right = arr(fx, "is_right");
    pvm_hamer *m32 = open_model(dir, PV_PRECISION_FP32);
    for (int i = 0; i < 2; i++) {
        pvm_hamer_frame f = { .rgb = (const uint8_t *)crops->data + (size_t)i * 256 * 192 * 3, .crop = true, .crop_is_right = get(right, i) != 0 };
        pvm_hamer_result a, b;
        run(m, &f, &a);
        run(m32, &f, &b);
        double p = pcc(a.hands[0].vertices, b.hands[0].vertices, 778 * 3), d = maxdiff(a.hands[0].vertices, b.hands[0].vertices, 778 * 3);
        double pt = pcc(a.tokens, b.tokens, 192 * 1280);
        bool ok = p >= 0.999;
        printf("%s bf16     crop%d vertices pcc %.6f (max|d| %.3g m), tokens pcc %.6f\n", ok ? "ok  " : "FAIL", i, p, d, pt);
        if (!ok) failures++;
        pvm_hamer_result_free(&a);
        pvm_hamer_result_free(&b);
    }
    pvm_hamer_close(m32);
    pvm_hamer_close(m);
}

/* The real images, end to end through the public API (no reference: they must run, give finite
 * meshes, and a left box must mirror a right one on the mirrored image). */
static void check_shared(const char *shared)
{
    static const char *const files[] = { "hamer_test1.jpg", "hamer_test2.jpg", "hamer_test3.jpg", "hamer_test5.jpg" };
    pv_model *m = NULL;
    if (pv_model_open("hamer", &(pv_model_options){ .threads = 2 }, &m) != PV_OK) { printf("FAIL open: %s\n", pv_last_error()); failures++; return; }
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        char p[4200];
        snprintf(p, sizeof p, "%s/hands/%s", shared, files[i]);
        FILE *fp = fopen(p, "rb");
        if (!fp) { printf("SKIP %s: absent\n", p); continue; }
        fseek(fp, 0, SEEK_END);
        size_t len = (size_t)ftell(fp);
        fseek(fp, 0, SEEK_SET);
        void *buf = malloc(len);
        size_t got = fread(buf, 1, len, fp);
        fclose(fp);
        pv_input in = { .name = "image", .format = "jpeg", .data = buf, .len = got };
        pv_param prm[] = { { "box", "100,100,260,300" }, { "box", "300,120,420,300,0" } };
        pv_result *r = NULL;
        if (pv_model_run(m, &in, 1, prm, 2, &r) != PV_OK) { printf("FAIL %s: %s\n", p, pv_last_error()); failures++; free(buf); continue; }
        const pv_hand *h;
        int n = pv_result_hands(r, &h);
        bool finite = n == 2;
        for (int k = 0; k < n; k++)
            for (int v = 0; v < 778 * 3; v++) finite = finite && isfinite(h[k].vertices[v]);
        void *png = NULL;
        size_t pl = 0;
        bool pic = pv_result_png(r, 0, &png, &pl) == PV_OK && pl > 1000;
        pv_free(png);
        printf("%s real     %s: %d hands, finite %d, picture %zu bytes\n", finite && pic ? "ok  " : "FAIL", files[i], n, finite, pl);
        if (!finite || !pic) failures++;
        pv_result_free(r);
        free(buf);
    }
    pv_model_close(m);
}

int main(int argc, char **argv)
{
    if (argc < 2) { fprintf(stderr, "usage: hamer_check FIXTURES_DIR [SHARED_DATA_DIR]\n"); return 2; }
    const char *fixdir = argv[1];
    char p[4200], tmp[] = "/tmp/hamer_check.XXXXXX";
    if (!mkdtemp(tmp)) { perror("mkdtemp"); return 1; }
    setenv("PERCEIVE_HAMER_GEN_DEPTH", "2", 1);
    if (pv_model_generate("hamer", tmp) != PV_OK) { printf("FAIL gen: %s\n", pv_last_error()); return 1; }
    pvio_arrays crops = { 0 }, image = { 0 };
    pvc_msg msg = { { 0 } };
    snprintf(p, sizeof p, "%s/crops.npz", fixdir);
    if (pvio_npz_read_file(p, &crops, &msg) != PV_OK) { printf("FAIL %s: %s\n", p, msg.text); return 1; }
    snprintf(p, sizeof p, "%s/image.npz", fixdir);
    if (pvio_npz_read_file(p, &image, &msg) != PV_OK) { printf("FAIL %s: %s\n", p, msg.text); return 1; }
    /* stale fixtures: the reference ran other weights than the generator now writes */
    char hex[65], want[65];
    snprintf(p, sizeof p, "%s/hamer.safetensors", tmp);
    if (pvio_sha256_file(p, hex, &msg) != PV_OK) { printf("FAIL %s\n", msg.text); return 1; }
    const pvc_tensor *ws = arr(&crops, "weights_sha256");
    for (int i = 0; i < 32; i++) snprintf(want + 2 * i, 3, "%02x", ((const uint8_t *)ws->data)[i]);
    if (strcmp(hex, want)) {
        printf("FAIL the fixtures were made with other weights (sha256 %.16s..., the generator now writes %.16s...): "
               "regenerate them with tools/gen/make_hamer_fixtures.sh\n", want, hex);
        return 1;
    }
    printf("ok   weights  %s (depth 2, sha256 matches the fixtures')\n", p);
    pvm_hamer *m = open_model(tmp, PV_PRECISION_FP32);
    check_crops(m, &crops);
    pvm_hamer_result all;
    check_image(m, fixdir, &image, &all);
    pvm_hamer_close(m);
    if (!getenv("PV_SANITIZED")) check_bf16(tmp, &crops, &all);   /* the sanitized build repeats the fp32 gates only */
    pvm_hamer_result_free(&all);
    if (argc > 2 && !getenv("PV_SANITIZED")) check_shared(argv[2]);
    pvio_arrays_free(&crops);
    pvio_arrays_free(&image);
    unlink(p);
    rmdir(tmp);
    printf("%s: %d failure(s)\n", failures ? "FAILED" : "PASSED", failures);
    return failures ? 1 : 0;
}
