/* Status names and per-thread / per-handle messages. */
#include "core/core.h"

#include <stdio.h>
#include <string.h>

static _Thread_local char last_error[PVC_MSG_LEN];

const char *pv_status_str(pv_status s)
{
    switch (s) {
    case PV_OK: return "ok";
    case PV_EINPUT: return "bad input";
    case PV_ENOWEIGHTS: return "model artifacts not found";
    case PV_EFORMAT: return "malformed file";
    case PV_ENOMEM: return "out of memory";
    case PV_EUNSUPPORTED: return "unsupported";
    case PV_ECLOSED: return "handle closed";
    case PV_EINTERNAL: return "internal error";
    }
    return "unknown status";
}

void pvc_set_last_error(const char *text)
{
    snprintf(last_error, sizeof last_error, "%s", text ? text : "");
}

const char *pv_last_error(void) { return last_error; }

pv_status pvc_fail(pvc_msg *m, pv_status s, const char *fmt, ...)
{
    char buf[PVC_MSG_LEN];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (m) memcpy(m->text, buf, sizeof buf);
    pvc_set_last_error(buf);
    return s;
}
