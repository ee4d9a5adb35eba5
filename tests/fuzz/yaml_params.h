/* The body shared by the two param-file targets (fuzz_ml_package.c, fuzz_remapper.c): each
 * defines FZ_PARSE (the parser) and FZ_FILE (its file name in messages), and a static
 * check_parsed(const pvm_bevfusion_params *) for what a successful parse guarantees. */
#ifndef FZ_YAML_BODY
#define FZ_YAML_BODY

#include "fuzz.h"
#include "models/bevfusion/post.h"

#include <string.h>

static void check_parsed(const pvm_bevfusion_params *p);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* the parsers take text + length: no NUL needed, none may be read past */
    pvm_bevfusion_params p, before;
    pvm_bevfusion_params_defaults(&p);
    before = p;
    pvc_msg msg = { { 0 } };
    pv_status s = FZ_PARSE(&p, (const char *)data, size, FZ_FILE, &msg);
    if (s != PV_OK) {
        fz_check_error(s, &msg, FZ_FILE);
        FZ_CHECK(strncmp(msg.text, FZ_FILE ": ", strlen(FZ_FILE) + 2) == 0,
                 "%s: message '%s' does not name the file", FZ_FILE, msg.text);
        FZ_CHECK(memcmp(&p, &before, sizeof p) == 0, "%s: failed (%s) but changed the parameters",
                 FZ_FILE, msg.text);
        return 0;
    }
    check_parsed(&p);
    /* parsing is a pure function of the text: a second parse into the result changes nothing */
    pvm_bevfusion_params q = p;
    s = FZ_PARSE(&q, (const char *)data, size, FZ_FILE, &msg);
    FZ_CHECK(s == PV_OK || s == PV_ENOMEM, "%s: second parse of the same text failed: %s", FZ_FILE, msg.text);
    if (s == PV_OK) FZ_CHECK(memcmp(&p, &q, sizeof p) == 0, "%s: second parse gave other values", FZ_FILE);
    return 0;
}

#endif
