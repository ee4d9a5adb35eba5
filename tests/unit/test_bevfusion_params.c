/* Tests for src/models/bevfusion/params.c: the two shipped param texts (length and sha256 of
 * the ml_package, every field of both once parsed), flow and block yaml styles, malformed files
 * (each refused with PV_EFORMAT naming the file and key, the struct left as it was), the runtime
 * defaults and per-request overrides (valid ones applied, invalid ones refused by key and
 * value with the struct untouched). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "models/bevfusion/post.h"

#include <openssl/sha.h>
#include <stdio.h>
#include <string.h>

/* ---- helpers -------------------------------------------------------------------------------- */
static pvm_bevfusion_params v2_params(void)
{
    pvm_bevfusion_params p;
    pvc_msg msg = { "" };
    if (pvm_bevfusion_params_v2(&p, &msg) != PV_OK) fail_msg("v2 params: %s", msg.text);
    return p;
}

static void set_param(pvm_bevfusion_params *p, const char *key, const char *value)
{
    pvc_msg msg = { "" };
    if (pvm_bevfusion_param_set(p, key, value, &msg) != PV_OK) fail_msg("%s=%s: %s", key, value, msg.text);
}

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

/* ---- shipped texts -------------------------------------------------------------------------- */
static void test_ml_package_text_sha256(void **state)
{
    (void)state;
    static const char want[] = "866265b9f0fc8c17805c0974339d3c7c4e601c1aa212818971fc650d71782181";
    unsigned char md[SHA256_DIGEST_LENGTH];
    char hex[2 * SHA256_DIGEST_LENGTH + 1];
    size_t len = strlen(pvm_bevfusion_ml_package_v2_yaml);
    assert_int_equal(len, 786);
    SHA256((const unsigned char *)pvm_bevfusion_ml_package_v2_yaml, len, md);
    for (int i = 0; i < SHA256_DIGEST_LENGTH; i++) snprintf(hex + 2 * i, 3, "%02x", md[i]);
    assert_string_equal(hex, want);
    assert_int_equal(pvm_bevfusion_ml_package_v2_yaml[len - 1], '\n');
}

static void test_parse_ml_package(void **state)
{
    (void)state;
    pvm_bevfusion_params p, d;
    pvm_bevfusion_params_defaults(&d);
    p = v2_params();
    static const char *const names[] = { "CAR", "TRUCK", "BUS", "BICYCLE", "PEDESTRIAN" };
    assert_int_equal(p.nclass, 5);
    for (int c = 0; c < 5; c++) assert_string_equal(p.class_names[c], names[c]);
    for (int c = 5; c < PVM_BF_MAX_CLASSES; c++) assert_int_equal(p.class_names[c][0], 0);
    assert_true(p.voxels_num[0] == 1 && p.voxels_num[1] == 128000 && p.voxels_num[2] == 256000);
    const float range[6] = { -122.4f, -122.4f, -3.0f, 122.4f, 122.4f, 5.0f };
    for (int i = 0; i < 6; i++) assert_true(p.pc_range[i] == range[i]);
    assert_true(p.voxel_size[0] == 0.17f && p.voxel_size[1] == 0.17f && p.voxel_size[2] == 0.2f);
    assert_int_equal(p.num_proposals, 500);
    assert_int_equal(p.out_size_factor, 8);
    assert_int_equal(p.max_points_per_voxel, 10);
    assert_false(p.use_intensity);
    /* the runtime fields are the defaults, untouched by the files */
    assert_true(p.circle_nms_dist_threshold == d.circle_nms_dist_threshold);
    assert_true(p.iou_nms_search_distance_2d == d.iou_nms_search_distance_2d);
    assert_true(p.iou_nms_threshold == d.iou_nms_threshold);
    assert_memory_equal(p.yaw_norm_thresholds, d.yaw_norm_thresholds, sizeof d.yaw_norm_thresholds);
    assert_memory_equal(p.score_thr, d.score_thr, sizeof d.score_thr);
    assert_int_equal(p.nbins, d.nbins);
}

static void test_defaults(void **state)
{
    (void)state;
    pvm_bevfusion_params d;
    memset(&d, 0x5a, sizeof d);
    pvm_bevfusion_params_defaults(&d);
    assert_true(d.circle_nms_dist_threshold == 0.5f);
    assert_true(d.iou_nms_search_distance_2d == 10.0f);
    assert_true(d.iou_nms_threshold == 0.1f);
    const float yaw[5] = { 0.3f, 0.3f, 0.3f, 0.3f, 0.0f };
    for (int c = 0; c < 5; c++) assert_true(d.yaw_norm_thresholds[c] == yaw[c]);
    assert_int_equal(d.nbins, 4);
    assert_true(d.bin_upper[0] == 50 && d.bin_upper[1] == 90);
    assert_true(d.bin_upper[2] == 121 && d.bin_upper[3] == 200);
    for (int c = 0; c < PVM_BF_MAX_CLASSES; c++)
        for (int b = 0; b < PVM_BF_MAX_BINS; b++) assert_true(d.score_thr[c][b] == 0.1f);
    assert_int_equal(d.nclass, 0);
    assert_int_equal(d.num_proposals, 0);
    for (int r = 0; r < PVM_BF_NLABELS; r++)
        for (int c = 0; c < PVM_BF_NLABELS; c++) assert_int_equal(d.remap_allow[r][c], 0);
}

static void expect_remapper(const pvm_bevfusion_params *p)
{
    for (int r = 0; r < PVM_BF_NLABELS; r++)
        for (int c = 0; c < PVM_BF_NLABELS; c++) {
            int allow = 0;
            float mn = 0, mx = 0;
            if (r == PVM_BF_CAR && c == PVM_BF_TRUCK) { allow = 1; mn = 12.1f; mx = 36.0f; }
            if ((r == PVM_BF_CAR || r == PVM_BF_TRUCK || r == PVM_BF_BUS) && c == PVM_BF_TRAILER) {
                allow = 1;
                mn = 36.0f;
                mx = 999.999f;
            }
            if (p->remap_allow[r][c] != allow || p->remap_min[r][c] != mn || p->remap_max[r][c] != mx)
                fail_msg("remapper [%d][%d]: allow %d min %g max %g", r, c, p->remap_allow[r][c],
                         (double)p->remap_min[r][c], (double)p->remap_max[r][c]);
        }
}

static void test_parse_remapper(void **state)
{
    (void)state;
    pvm_bevfusion_params p = v2_params();
    expect_remapper(&p);
}

/* Block sequences, ints where floats go, another node name, comments: same values. */
static void test_parse_block_style(void **state)
{
    (void)state;
    static char text[16384];
    size_t k = 0;
    k += (size_t)snprintf(text + k, sizeof text - k, "bevfusion:\n  ros__parameters:\n");
    const char *keys[3] = { "allow_remapping_by_area_matrix", "min_area_matrix", "max_area_matrix" };
    for (int m = 0; m < 3; m++) {
        k += (size_t)snprintf(text + k, sizeof text - k, "    %s:   # row-major\n", keys[m]);
        for (int i = 0; i < 64; i++) {
            int r = i / 8, c = i % 8;
            bool truck = r == 1 && c == 2, trailer = (r >= 1 && r <= 3) && c == 4;
            const char *v = "0";
            if (m == 0 && (truck || trailer)) v = "1";
            if (m == 1 && truck) v = "12.1";
            if (m == 1 && trailer) v = "36";           /* an int in a float matrix */
            if (m == 2 && truck) v = "3.6e1";
            if (m == 2 && trailer) v = "999.999";
            k += (size_t)snprintf(text + k, sizeof text - k, "      - %s\n", v);
        }
    }
    pvm_bevfusion_params p;
    pvc_msg msg = { "" };
    pvm_bevfusion_params_defaults(&p);
    if (pvm_bevfusion_params_parse_remapper(&p, text, k, "block.yaml", &msg) != PV_OK)
        fail_msg("%s", msg.text);
    expect_remapper(&p);

    static const char ml[] =
        "/**:\n"
        "  ros__parameters:\n"
        "    class_names:\n"
        "      - CAR\n"
        "      - 'TRUCK'\n"
        "    voxels_num:\n      - 1\n      - 2\n      - 3\n"
        "    point_cloud_range: [-10, -20, -3, 10, 20, 5]\n"
        "    voxel_size:\n      - 0.5\n      - 0.25\n      - 1\n"
        "    num_proposals: 7\n"
        "    out_size_factor: 2\n"
        "    max_points_per_voxel: 4\n"
        "    use_intensity: True\n"
        "    some_future_key: {a: 1}\n";
    if (pvm_bevfusion_params_parse_ml_package(&p, ml, strlen(ml), "ml.yaml", &msg) != PV_OK)
        fail_msg("%s", msg.text);
    assert_int_equal(p.nclass, 2);
    assert_string_equal(p.class_names[0], "CAR");
    assert_string_equal(p.class_names[1], "TRUCK");
    assert_true(p.voxels_num[0] == 1 && p.voxels_num[1] == 2 && p.voxels_num[2] == 3);
    assert_true(p.pc_range[0] == -10 && p.pc_range[4] == 20 && p.pc_range[5] == 5);
    assert_true(p.voxel_size[0] == 0.5f && p.voxel_size[1] == 0.25f && p.voxel_size[2] == 1.0f);
    assert_int_equal(p.num_proposals, 7);
    assert_int_equal(p.out_size_factor, 2);
    assert_int_equal(p.max_points_per_voxel, 4);
    assert_true(p.use_intensity);
}

typedef struct bad_case { const char *from, *to, *sub; pv_status st; } bad_case;

static void check_bad(bool ml, const bad_case *c, size_t n)
{
    const char *base = ml ? pvm_bevfusion_ml_package_v2_yaml : pvm_bevfusion_remapper_yaml;
    for (size_t i = 0; i < n; i++) {
        pvm_bevfusion_params p = v2_params(), before;
        memcpy(&before, &p, sizeof p);
        const char *text = edit(base, c[i].from, c[i].to);
        pvc_msg msg = { "" };
        pv_status s = ml ? pvm_bevfusion_params_parse_ml_package(&p, text, strlen(text), "f.yaml", &msg)
                         : pvm_bevfusion_params_parse_remapper(&p, text, strlen(text), "f.yaml", &msg);
        if (s != c[i].st || !strstr(msg.text, c[i].sub) || strncmp(msg.text, "f.yaml: ", 8) != 0)
            fail_msg("%s case %zu ('%s' -> '%s'): status %d, message \"%s\", expected %d with \"%s\"",
                     ml ? "ml_package" : "remapper", i, c[i].from, c[i].to, (int)s, msg.text, (int)c[i].st,
                     c[i].sub);
        if (memcmp(&p, &before, sizeof p) != 0) fail_msg("case %zu changed the parameters", i);
    }
}

static void test_parse_malformed_ml_package(void **state)
{
    (void)state;
    static const bad_case cases[] = {
        { "    num_proposals: 500\n", "", "missing key 'num_proposals'", PV_EFORMAT },
        { "    class_names: [", "    class_namez: [", "missing key 'class_names'", PV_EFORMAT },
        { "out_size_factor: 8", "out_size_factor: eight", "'out_size_factor': 'eight' is not a finite number",
          PV_EFORMAT },
        { "num_proposals: 500", "num_proposals: 500.5", "'num_proposals': '500.5' is not an integer", PV_EFORMAT },
        { "max_points_per_voxel: 10", "max_points_per_voxel: \"10\"", "'max_points_per_voxel'", PV_EFORMAT },
        { "max_points_per_voxel: 10", "max_points_per_voxel: 0", "'max_points_per_voxel': 0 is out of range",
          PV_EFORMAT },
        { "voxel_size: [0.17, 0.17, 0.2]", "voxel_size: [0.17, 0.17]", "'voxel_size': expected 3 values, got 2",
          PV_EFORMAT },
        { "voxel_size: [0.17, 0.17, 0.2]", "voxel_size: [0.17, 0.0, 0.2]", "'voxel_size'", PV_EFORMAT },
        { "voxel_size: [0.17, 0.17, 0.2]", "voxel_size: 0.17", "'voxel_size': expected a sequence", PV_EFORMAT },
        { "[-122.4, -122.4, -3.0,", "[-122.4, .nan, -3.0,", "'point_cloud_range' value 1: '.nan'", PV_EFORMAT },
        { "[-122.4, -122.4, -3.0,", "[-122.4, -122.4, 1e999,", "'point_cloud_range' value 2", PV_EFORMAT },
        { "[-122.4, -122.4, -3.0,", "[122.4, -122.4, -3.0,", "'point_cloud_range': axis x", PV_EFORMAT },
        { "voxels_num: [1, 128000, 256000]", "voxels_num: [1, 300000, 256000]", "'voxels_num'", PV_EFORMAT },
        { "voxels_num: [1, 128000, 256000]", "voxels_num: [1, 128000, [256000]]", "'voxels_num' value 2",
          PV_EFORMAT },
        { "[\"CAR\", \"TRUCK\", \"BUS\", \"BICYCLE\", \"PEDESTRIAN\"]", "[]", "'class_names': 0 names",
          PV_EFORMAT },
        { "[\"CAR\", \"TRUCK\",", "[\"A\", \"B\", \"C\", \"D\", \"CAR\", \"TRUCK\",", "'class_names': 9 names",
          PV_EFORMAT },
        { "\"BUS\"", "\"CAR\"", "'class_names': 'CAR' appears twice", PV_EFORMAT },
        { "\"BUS\"", "\"THIS_NAME_IS_FAR_TOO_LONG\"", "'class_names' value 2", PV_EFORMAT },
        { "use_intensity: false", "use_intensity: maybe", "'use_intensity': 'maybe'", PV_EFORMAT },
        { "num_cameras: 0", "num_cameras: 6", "'num_cameras'", PV_EUNSUPPORTED },
        { "roi_width: 0", "roi_width: -1", "'roi_width'", PV_EFORMAT },
        { "d_bound: [1.0, 166.2, 1.4]", "d_bound: [1.0, 166.2, 0]", "'d_bound'", PV_EFORMAT },
        { "    num_cameras: 0\n", "    num_cameras: 0\n    out_size_factor: 4\n", "'out_size_factor' appears twice",
          PV_EFORMAT },
        { "  ros__parameters:\n", "  parameters:\n", "missing key 'ros__parameters'", PV_EFORMAT },
        { "\"PEDESTRIAN\"]", "\"PEDESTRIAN\"", "not valid YAML", PV_EFORMAT },
        { "    use_intensity: false\n", "    use_intensity: false\n\t\n", "not valid YAML", PV_EFORMAT },
        { "image_feature_channel: 0\n", "image_feature_channel: 0\n---\nx: 1\n", "more than one YAML document",
          PV_EFORMAT },
    };
    check_bad(true, cases, PVC_COUNTOF(cases));

    /* no text at all, an empty document, a plain scalar */
    pvm_bevfusion_params p = v2_params();
    pvc_msg msg = { "" };
    assert_int_equal(pvm_bevfusion_params_parse_ml_package(&p, NULL, 0, "f", &msg), PV_EFORMAT);
    assert_int_equal(pvm_bevfusion_params_parse_ml_package(&p, "", 0, "f", &msg), PV_EFORMAT);
    assert_non_null(strstr(msg.text, "empty"));
    assert_int_equal(pvm_bevfusion_params_parse_ml_package(&p, "42", 2, "f", &msg), PV_EFORMAT);
    assert_non_null(strstr(msg.text, "ros__parameters"));
    assert_int_equal(pvm_bevfusion_params_parse_ml_package(NULL, "42", 2, "f", &msg), PV_EINPUT);
    /* a self-referencing alias must not loop */
    static const char loop[] = "/**:\n  ros__parameters: &a\n    class_names: *a\n";
    assert_int_equal(pvm_bevfusion_params_parse_ml_package(&p, loop, strlen(loop), "f", &msg), PV_EFORMAT);
}

static void test_parse_malformed_remapper(void **state)
{
    (void)state;
    static const bad_case cases[] = {
        { "      [0, 0, 0, 0, 0, 0, 0, 0,\n", "      [0, 0, 0, 0, 0, 0, 0,\n",
          "'allow_remapping_by_area_matrix': expected 64 values, got 63", PV_EFORMAT },
        { "      [0, 0, 0, 0, 0, 0, 0, 0,\n", "      [0, 0, 0, 0, 0, 0, 0, 0, 0,\n",
          "'allow_remapping_by_area_matrix': expected 64 values, got 65", PV_EFORMAT },
        { "12.1", "twelve", "'min_area_matrix' value 10: 'twelve' is not a finite number", PV_EFORMAT },
        { "0, 0, 1, 0, 1, 0, 0, 0,", "0, 0, 2, 0, 1, 0, 0, 0,", "'allow_remapping_by_area_matrix' value 10",
          PV_EFORMAT },
        { "0.0, 0.0, 36.0, 0.0, 999.999", "0.0, 0.0, 10.0, 0.0, 999.999", "'min_area_matrix' value 10", PV_EFORMAT },
        { "[0.0, 0.0,  0.0, 0.0,  0.0", "[0.0, -1.0,  0.0, 0.0,  0.0", "'min_area_matrix' value 1 (row 0, column 1)",
          PV_EFORMAT },
        { "    max_area_matrix:", "    max_area_matrixx:", "missing key 'max_area_matrix'", PV_EFORMAT },
        { "    min_area_matrix:\n      [", "    min_area_matrix:\n      {", "not valid YAML", PV_EFORMAT },
        { "    min_area_matrix:\n", "    min_area_matrix: 5\n    unused:\n", "'min_area_matrix': expected a sequence",
          PV_EFORMAT },
    };
    check_bad(false, cases, PVC_COUNTOF(cases));
}

/* ---- runtime parameters --------------------------------------------------------------------- */
static void test_param_set_valid(void **state)
{
    (void)state;
    pvm_bevfusion_params p = v2_params();
    set_param(&p, "circle_nms_dist_threshold", "1.5");
    assert_true(p.circle_nms_dist_threshold == 1.5f);
    set_param(&p, "iou_nms_search_distance_2d", "20");
    assert_true(p.iou_nms_search_distance_2d == 20.0f);
    set_param(&p, "iou_nms_threshold", " 0.25 ");
    assert_true(p.iou_nms_threshold == 0.25f);
    set_param(&p, "yaw_norm_thresholds", "[0.1, 0.2, 0.3, 0.4, 0]");
    assert_true(p.yaw_norm_thresholds[1] == 0.2f && p.yaw_norm_thresholds[3] == 0.4f);
    assert_true(p.yaw_norm_thresholds[4] == 0);
    set_param(&p, "score_threshold", "0.35");
    for (int c = 0; c < PVM_BF_MAX_CLASSES; c++)
        for (int b = 0; b < PVM_BF_MAX_BINS; b++) assert_true(p.score_thr[c][b] == 0.35f);
    set_param(&p, "detection_score_thresholds",
              "0.01,0.02,0.03,0.04, 0.11,0.12,0.13,0.14, 0.21,0.22,0.23,0.24, "
              "0.31,0.32,0.33,0.34, 0.41,0.42,0.43,0.44");
    for (int c = 0; c < 5; c++)
        for (int b = 0; b < 4; b++) assert_true(p.score_thr[c][b] == (float)(0.1 * c + 0.01 * (b + 1)));
    set_param(&p, "distance_bin_upper_limits", "10,20,30");
    assert_int_equal(p.nbins, 3);
    assert_true(p.bin_upper[0] == 10 && p.bin_upper[1] == 20 && p.bin_upper[2] == 30);
    set_param(&p, "detection_score_thresholds", "0,0,0, 1,1,1, 0.5,0.5,0.5, 0,1,0, 1e-1,1e-1,1e-1");
    assert_true(p.score_thr[1][2] == 1.0f && p.score_thr[3][1] == 1.0f && p.score_thr[4][0] == 0.1f);
    set_param(&p, "circle_nms_dist_threshold", "0");
    assert_true(p.circle_nms_dist_threshold == 0.0f);
}

static void test_param_set_invalid(void **state)
{
    (void)state;
    static const struct { const char *key, *value, *sub; } cases[] = {
        { "bogus", "1", "param 'bogus' is unknown" },
        { "circle_nms_dist_threshold", "-1", "circle_nms_dist_threshold='-1'" },
        { "circle_nms_dist_threshold", "nan", "circle_nms_dist_threshold='nan': not a finite number" },
        { "circle_nms_dist_threshold", "inf", "circle_nms_dist_threshold='inf'" },
        { "circle_nms_dist_threshold", "abc", "circle_nms_dist_threshold='abc'" },
        { "circle_nms_dist_threshold", "", "circle_nms_dist_threshold=''" },
        { "circle_nms_dist_threshold", "0.5m", "circle_nms_dist_threshold='0.5m'" },
        { "circle_nms_dist_threshold", "1,2", "circle_nms_dist_threshold='1,2': 2 values, expected 1" },
        { "iou_nms_search_distance_2d", "1e9", "iou_nms_search_distance_2d='1e9': value 0 (1e+09) is out of range" },
        { "iou_nms_threshold", "1.5", "iou_nms_threshold='1.5'" },
        { "yaw_norm_thresholds", "0.3,0.3,0.3,0.3", "yaw_norm_thresholds='0.3,0.3,0.3,0.3': 4 values, expected 5" },
        { "yaw_norm_thresholds", "0.3,0.3,0.3,0.3,1.0", "yaw_norm_thresholds='0.3,0.3,0.3,0.3,1.0': value 4" },
        { "yaw_norm_thresholds", "0.3,0.3,,0.3,0.3", "yaw_norm_thresholds='0.3,0.3,,0.3,0.3': not a finite" },
        { "score_threshold", "1.01", "score_threshold='1.01'" },
        { "score_threshold", "-0.1", "score_threshold='-0.1'" },
        { "detection_score_thresholds", "0.1,0.1,0.1", "detection_score_thresholds='0.1,0.1,0.1': 3 values, expected 20" },
        { "distance_bin_upper_limits", "50,40", "distance_bin_upper_limits='50,40': limits must increase" },
        { "distance_bin_upper_limits", "0,10", "distance_bin_upper_limits='0,10': value 0" },
        { "distance_bin_upper_limits", "1,2,3,4,5,6,7,8,9", "distance_bin_upper_limits='1,2,3,4,5,6,7,8,9': 9 values" },
        { "distance_bin_upper_limits", "[10, 20", "distance_bin_upper_limits='[10, 20'" },
        /* fuzz_params: positive doubles that are 0 or equal as the stored floats */
        { "distance_bin_upper_limits", "1e-300", "distance_bin_upper_limits='1e-300': value 0" },
        { "distance_bin_upper_limits", "1,1.00000001", "distance_bin_upper_limits='1,1.00000001': limits must increase" },
    };
    pvm_bevfusion_params p = v2_params(), before;
    memcpy(&before, &p, sizeof p);
    for (size_t i = 0; i < PVC_COUNTOF(cases); i++) {
        pvc_msg msg = { "" };
        pv_status s = pvm_bevfusion_param_set(&p, cases[i].key, cases[i].value, &msg);
        if (s != PV_EINPUT || !strstr(msg.text, cases[i].sub))
            fail_msg("case %zu %s=%s: status %d, message \"%s\"", i, cases[i].key, cases[i].value, (int)s,
                     msg.text);
        if (memcmp(&p, &before, sizeof p) != 0) fail_msg("case %zu changed the parameters", i);
    }
    pvc_msg msg = { "" };
    assert_int_equal(pvm_bevfusion_param_set(&p, "iou_nms_threshold", NULL, &msg), PV_EINPUT);
    assert_int_equal(pvm_bevfusion_param_set(&p, NULL, "1", &msg), PV_EINPUT);
    assert_int_equal(pvm_bevfusion_param_set(NULL, "iou_nms_threshold", "0.2", &msg), PV_EINPUT);
    assert_memory_equal(&p, &before, sizeof p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ml_package_text_sha256),
        cmocka_unit_test(test_parse_ml_package),
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_parse_remapper),
        cmocka_unit_test(test_parse_block_style),
        cmocka_unit_test(test_parse_malformed_ml_package),
        cmocka_unit_test(test_parse_malformed_remapper),
        cmocka_unit_test(test_param_set_valid),
        cmocka_unit_test(test_param_set_invalid),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
