/* Fuzz target: the runtime parameters of a request (pvm_bevfusion_param_set), as text lines
 * "key=value" (the `--param key=value` and server form). The parameters start from the
 * runtime defaults plus the shipped v2 ml_package (5 classes, 4 distance bins); each line is
 * applied in turn. A refused line must leave the parameters unchanged; an accepted one must
 * keep every documented range. */
#include "fuzz.h"
#include "models/bevfusion/post.h"

#include <stdlib.h>
#include <string.h>

#define LINE_MAX_BYTES 4096

static void check_ranges(const pvm_bevfusion_params *p)
{
    FZ_CHECK(p->circle_nms_dist_threshold >= 0 && p->circle_nms_dist_threshold <= 1000,
             "params: circle_nms_dist_threshold %g", (double)p->circle_nms_dist_threshold);
    FZ_CHECK(p->iou_nms_search_distance_2d >= 0 && p->iou_nms_search_distance_2d <= 1000,
             "params: iou_nms_search_distance_2d %g", (double)p->iou_nms_search_distance_2d);
    FZ_CHECK(p->iou_nms_threshold >= 0 && p->iou_nms_threshold <= 1, "params: iou_nms_threshold %g",
             (double)p->iou_nms_threshold);
    for (int c = 0; c < p->nclass; c++)
        FZ_CHECK(p->yaw_norm_thresholds[c] >= 0 && p->yaw_norm_thresholds[c] < 1,
                 "params: yaw_norm_thresholds[%d] %g", c, (double)p->yaw_norm_thresholds[c]);
    FZ_CHECK(p->nbins >= 1 && p->nbins <= PVM_BF_MAX_BINS, "params: nbins %d", p->nbins);
    for (int b = 0; b < p->nbins; b++) {
        FZ_CHECK(p->bin_upper[b] > 0 && p->bin_upper[b] <= 10000, "params: bin %d upper %g", b,
                 (double)p->bin_upper[b]);
        FZ_CHECK(b == 0 || p->bin_upper[b] > p->bin_upper[b - 1], "params: bins not increasing at %d", b);
    }
    for (int c = 0; c < PVM_BF_MAX_CLASSES; c++)
        for (int b = 0; b < PVM_BF_MAX_BINS; b++)
            FZ_CHECK(p->score_thr[c][b] >= 0 && p->score_thr[c][b] <= 1, "params: score_thr[%d][%d] %g", c, b,
                     (double)p->score_thr[c][b]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    pvm_bevfusion_params p;
    pvc_msg msg = { { 0 } };
    pvm_bevfusion_params_defaults(&p);
    pv_status s = pvm_bevfusion_params_parse_ml_package(&p, pvm_bevfusion_ml_package_v2_yaml,
                                                        strlen(pvm_bevfusion_ml_package_v2_yaml), NULL, &msg);
    FZ_CHECK(s == PV_OK, "params: the shipped ml_package does not parse: %s", msg.text);
    check_ranges(&p);

    /* one heap copy per line, exactly sized, so ASan sees any read past the value's NUL */
    size_t i = 0;
    while (i < size) {
        size_t j = i;
        while (j < size && data[j] != '\n') j++;
        size_t n = j - i < LINE_MAX_BYTES ? j - i : LINE_MAX_BYTES;
        char *line = malloc(n + 1);
        if (!line) abort();
        memcpy(line, data + i, n);
        line[n] = 0;
        char *eq = strchr(line, '=');
        const char *key = line, *value = "";
        if (eq) { *eq = 0; value = eq + 1; }

        pvm_bevfusion_params before = p;
        s = pvm_bevfusion_param_set(&p, key, value, &msg);
        if (s != PV_OK) {
            FZ_CHECK(s == PV_EINPUT, "params: '%s' failed with %s, not PV_EINPUT", key, pv_status_str(s));
            fz_check_error(s, &msg, "params");
            FZ_CHECK(memcmp(&p, &before, sizeof p) == 0, "params: refused '%s' (%s) but changed the parameters",
                     key, msg.text);
        } else {
            check_ranges(&p);
            /* the ml_package part is not a runtime parameter */
            FZ_CHECK(p.nclass == before.nclass && memcmp(p.class_names, before.class_names, sizeof p.class_names) == 0 &&
                     memcmp(p.pc_range, before.pc_range, sizeof p.pc_range) == 0,
                     "params: '%s' changed the model description", key);
        }
        free(line);
        i = j + 1;
    }
    return 0;
}
