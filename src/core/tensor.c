/* Tensor descriptors, dtypes and element conversion. */
#include "core/core.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const struct { const char *name; size_t size; } dtypes[PV_DTYPE_COUNT] = {
    [PV_F32] = { "float32", 4 }, [PV_F16] = { "float16", 2 }, [PV_BF16] = { "bfloat16", 2 },
    [PV_I64] = { "int64", 8 },   [PV_I32] = { "int32", 4 },   [PV_I8] = { "int8", 1 },
    [PV_U8] = { "uint8", 1 },    [PV_BOOL] = { "bool", 1 },
};

const char *pv_dtype_name(pv_dtype t) { return (unsigned)t < PV_DTYPE_COUNT ? dtypes[t].name : "invalid"; }
size_t pv_dtype_size(pv_dtype t) { return (unsigned)t < PV_DTYPE_COUNT ? dtypes[t].size : 0; }
bool pvc_dtype_is_float(pv_dtype t) { return t == PV_F32 || t == PV_F16 || t == PV_BF16; }
bool pvc_dtype_is_int(pv_dtype t) { return t == PV_I64 || t == PV_I32 || t == PV_I8 || t == PV_U8; }

int64_t pv_tensor_numel(const pv_tensor *t) { return pvc_numel(t); }

int64_t pvc_numel(const pvc_tensor *t)
{
    int64_t n = 1;
    for (int i = 0; i < t->rank; i++) n *= t->dims[i];
    return n;
}

size_t pvc_nbytes(const pvc_tensor *t) { return (size_t)pvc_numel(t) * pv_dtype_size(t->dtype); }

void pvc_tensor_set_contiguous(pvc_tensor *t)
{
    int64_t s = (int64_t)pv_dtype_size(t->dtype);
    for (int i = t->rank - 1; i >= 0; i--) { t->strides[i] = s; s *= t->dims[i]; }
}

bool pvc_tensor_is_contiguous(const pvc_tensor *t)
{
    int64_t s = (int64_t)pv_dtype_size(t->dtype);
    bool zero = true;
    for (int i = 0; i < t->rank; i++) zero = zero && t->strides[i] == 0;
    if (zero) return true;
    for (int i = t->rank - 1; i >= 0; i--) {
        if (t->dims[i] != 1 && t->strides[i] != s) return false;
        s *= t->dims[i];
    }
    return true;
}

bool pvc_same_shape(const pvc_tensor *a, const pvc_tensor *b)
{
    if (a->rank != b->rank) return false;
    for (int i = 0; i < a->rank; i++) if (a->dims[i] != b->dims[i]) return false;
    return true;
}

const char *pvc_shape_str(const pvc_tensor *t, char *buf, size_t n)
{
    size_t k = 0;
    k += (size_t)snprintf(buf + k, n - k, "[");
    for (int i = 0; i < t->rank && k < n; i++)
        k += (size_t)snprintf(buf + k, n - k, i ? ",%lld" : "%lld", (long long)t->dims[i]);
    if (k < n) snprintf(buf + k, n - k, "]");
    return buf;
}

bool pvc_mul_overflow(int64_t a, int64_t b, int64_t *out) { return __builtin_mul_overflow(a, b, out); }

float pvc_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff, bits;
    if (exp == 0) {
        if (man == 0) bits = sign;
        else {                                   /* subnormal: normalize */
            int e = -1;
            do { e++; man <<= 1; } while (!(man & 0x400));
            bits = sign | ((uint32_t)(127 - 15 - e) << 23) | ((man & 0x3ff) << 13);
        }
    } else if (exp == 31) bits = sign | 0x7f800000u | (man << 13);
    else bits = sign | ((exp + 127 - 15) << 23) | (man << 13);
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

uint16_t pvc_f32_to_f16(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000;
    int32_t exp = (int32_t)((x >> 23) & 0xff);
    uint32_t man = x & 0x7fffff;
    if (exp == 255) return (uint16_t)(sign | 0x7c00 | (man ? 0x200 : 0));
    int32_t e = exp - 127 + 15;
    if (e >= 31) return (uint16_t)(sign | 0x7c00);
    if (e <= 0) {
        if (e < -10) return (uint16_t)sign;
        man |= 0x800000;
        uint32_t shift = (uint32_t)(14 - e);
        uint32_t half = man >> shift, rem = man & ((1u << shift) - 1), mid = 1u << (shift - 1);
        if (rem > mid || (rem == mid && (half & 1))) half++;
        return (uint16_t)(sign | half);
    }
    uint32_t h = ((uint32_t)e << 10) | (man >> 13), rem = man & 0x1fff;
    if (rem > 0x1000 || (rem == 0x1000 && (h & 1))) h++;   /* may carry into exp: correct */
    return (uint16_t)(sign | h);
}

float pvc_bf16_to_f32(uint16_t h)
{
    uint32_t bits = (uint32_t)h << 16;
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

uint16_t pvc_f32_to_bf16(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    if ((x & 0x7fffffff) > 0x7f800000) return (uint16_t)((x >> 16) | 0x40);   /* quiet NaN */
    x += 0x7fff + ((x >> 16) & 1);
    return (uint16_t)(x >> 16);
}

double pvc_get_f64(const void *d, pv_dtype t, int64_t i)
{
    switch (t) {
    case PV_F32: return ((const float *)d)[i];
    case PV_F16: return pvc_f16_to_f32(((const uint16_t *)d)[i]);
    case PV_BF16: return pvc_bf16_to_f32(((const uint16_t *)d)[i]);
    case PV_I64: return (double)((const int64_t *)d)[i];
    case PV_I32: return ((const int32_t *)d)[i];
    case PV_I8: return ((const int8_t *)d)[i];
    case PV_U8: return ((const uint8_t *)d)[i];
    case PV_BOOL: return ((const uint8_t *)d)[i] != 0;
    default: return 0;
    }
}

int64_t pvc_get_i64(const void *d, pv_dtype t, int64_t i)
{
    switch (t) {
    case PV_I64: return ((const int64_t *)d)[i];
    case PV_I32: return ((const int32_t *)d)[i];
    case PV_I8: return ((const int8_t *)d)[i];
    case PV_U8: return ((const uint8_t *)d)[i];
    case PV_BOOL: return ((const uint8_t *)d)[i] != 0;
    default: {
        double v = pvc_get_f64(d, t, i);
        if (isnan(v)) return 0;
        if (v >= 9.2e18) return INT64_MAX;
        if (v <= -9.2e18) return INT64_MIN;
        return (int64_t)v;
    }
    }
}

void pvc_set_f64(void *d, pv_dtype t, int64_t i, double v)
{
    switch (t) {
    case PV_F32: ((float *)d)[i] = (float)v; break;
    case PV_F16: ((uint16_t *)d)[i] = pvc_f32_to_f16((float)v); break;
    case PV_BF16: ((uint16_t *)d)[i] = pvc_f32_to_bf16((float)v); break;
    case PV_BOOL: ((uint8_t *)d)[i] = v != 0; break;
    default: {
        /* float -> int truncates toward zero (C, ONNX Cast); out of range saturates. */
        int64_t k = isnan(v) ? 0 : v >= 9.2e18 ? INT64_MAX : v <= -9.2e18 ? INT64_MIN : (int64_t)v;
        pvc_set_i64(d, t, i, k);
    }
    }
}

void pvc_set_i64(void *d, pv_dtype t, int64_t i, int64_t v)
{
    switch (t) {
    case PV_I64: ((int64_t *)d)[i] = v; break;
    case PV_I32: ((int32_t *)d)[i] = (int32_t)v; break;
    case PV_I8: ((int8_t *)d)[i] = (int8_t)v; break;
    case PV_U8: ((uint8_t *)d)[i] = (uint8_t)v; break;
    case PV_BOOL: ((uint8_t *)d)[i] = v != 0; break;
    default: pvc_set_f64(d, t, i, (double)v);
    }
}
