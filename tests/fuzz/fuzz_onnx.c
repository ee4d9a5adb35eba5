/* Fuzz target: ONNX import through the public door, pv_graph_open_memory (protobuf-c decode ->
 * pvg_graph_load_onnx -> operator binding -> load-time passes -> the plan, when every input's
 * shape is declared). The whole input is the model file; external data is looked up under a
 * folder that does not exist, so no file is read. On failure: a bad-input status, a non-empty
 * message, *out NULL. On success the graph's declared inputs and outputs must be readable. */
#include "fuzz.h"

#include "perceive.h"

#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const uint8_t none = 0;
    pv_graph_options opt = { .threads = 1 };
    pv_graph *g = (pv_graph *)&none;   /* must come back NULL on failure */
    pv_status s = pv_graph_open_memory(size ? data : &none, size, "/nonexistent-fuzz-dir", &opt, &g);
    if (s != PV_OK) {
        FZ_CHECK(g == NULL, "onnx: failed (%s) but *out is not NULL", pv_status_str(s));
        const char *m = pv_last_error();
        FZ_CHECK(s == PV_EINPUT || s == PV_EFORMAT || s == PV_EUNSUPPORTED || s == PV_ENOMEM,
                 "onnx: failed with status %d (%s: %s), not a bad-input status", (int)s, pv_status_str(s), m);
        FZ_CHECK(m && m[0], "onnx: failed (%s) with an empty message", pv_status_str(s));
        return 0;
    }
    FZ_CHECK(g != NULL, "onnx: PV_OK but no graph");
    int ni = pv_graph_num_inputs(g), no = pv_graph_num_outputs(g);
    FZ_CHECK(ni >= 0 && no >= 1, "onnx: %d inputs, %d outputs", ni, no);
    for (int i = 0; i < ni + no; i++) {
        pv_tensor d;
        memset(&d, 0, sizeof d);
        pv_status q = i < ni ? pv_graph_input(g, i, &d) : pv_graph_output(g, i - ni, &d);
        FZ_CHECK(q == PV_OK, "onnx: describing %s %d failed", i < ni ? "input" : "output", i < ni ? i : i - ni);
        FZ_CHECK(d.name != NULL, "onnx: value %d has no name", i);
        FZ_CHECK(d.rank >= -1 && d.rank <= PV_MAX_RANK, "onnx: value '%s' rank %d", d.name, d.rank);
    }
    pv_graph_close(g);
    return 0;
}
