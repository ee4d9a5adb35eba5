/* coord_hash: open-addressing hash from a linear voxel key to an int32 index, in caller memory.
 * One implementation for the voxelizer and the submanifold rulebook. Private to src/sparse.
 *
 * Keys are linear cell numbers ((x * Y + y) * Z + z) of a grid with fewer than 2^32 - 1 cells
 * (pvs_grid_keys_ok), so a slot packs key and value into one uint64 (key high, value low) and
 * a probe touches 8 bytes. A slot of all ones is free: no key reaches 0xFFFFFFFF. The table
 * has a power-of-two size (at least 64 slots) of at least `spread` (2 or 4) slots per key of its capacity, so the
 * load stays <= 1/2 or 1/4, and probes linearly from a home slot; it is never full, so every
 * probe ends. The SubM rulebook fills its table to capacity and takes spread 4 (measured:
 * ~25% faster than 2); the voxelizer's capacity is max_voxels, usually far above the voxels
 * made, and takes 2 (half the table to clear per frame). */
#ifndef PVS_COORD_HASH_H
#define PVS_COORD_HASH_H

#include "sparse/sparse.h"

#define PVS_HASH_FREE UINT64_MAX
#define PVS_MAX_SITES ((int64_t)1 << 30)   /* keys a table may hold: its slots stay < 2^32 */

typedef struct pvs_hash {
    uint64_t *slot;     /* (key << 32) | (uint32_t)value, or PVS_HASH_FREE */
    uint32_t  mask;     /* slots - 1 */
} pvs_hash;

/* Bytes of a table that holds up to `capacity` keys. */
size_t pvs_hash_table_bytes(int64_t capacity, int spread);
/* Lays the table over mem (pvs_hash_table_bytes(capacity, spread) bytes, 8-byte aligned) and
 * frees every slot. */
void   pvs_hash_init(pvs_hash *h, void *mem, int64_t capacity, int spread);
/* True when a grid of these dims has keys that fit (every dim >= 1, product < 2^32 - 1). */
bool   pvs_grid_keys_ok(const int32_t dims[3]);

/* Home slot of cell (x, y, z): the coordinates mixed (three odd multipliers, then a
 * murmur-style finalizer). Spatial blocks of 2x2x2 or 4x4x4 cells in consecutive slots were
 * tried for locality and measured no faster (the prefetching callers hide the misses). */
static inline uint32_t pvs_hash_home(const pvs_hash *h, uint32_t x, uint32_t y, uint32_t z)
{
    uint32_t b = x * 0x9E3779B1u ^ y * 0x85EBCA77u ^ z * 0xC2B2AE3Du;
    b ^= b >> 16;
    b *= 0x7FEB352Du;
    b ^= b >> 15;
    return b & h->mask;
}

/* The slot that holds key (the cell (x, y, z)), or the free slot where it belongs:
 * *slot == PVS_HASH_FREE means absent; store (uint64_t)key << 32 | (uint32_t)value there. */
static inline uint64_t *pvs_hash_probe_at(const pvs_hash *h, uint32_t key, uint32_t home)
{
    uint32_t i = home;
    for (;;) {
        uint64_t s = h->slot[i];
        if ((uint32_t)(s >> 32) == key || s == PVS_HASH_FREE) return &h->slot[i];
        i = (i + 1) & h->mask;
    }
}

static inline uint64_t *pvs_hash_probe(const pvs_hash *h, uint32_t key, uint32_t x, uint32_t y, uint32_t z)
{
    return pvs_hash_probe_at(h, key, pvs_hash_home(h, x, y, z));
}

/* The value stored under key, or -1. */
static inline int32_t pvs_hash_find(const pvs_hash *h, uint32_t key, uint32_t x, uint32_t y, uint32_t z)
{
    uint64_t s = *pvs_hash_probe(h, key, x, y, z);
    return s == PVS_HASH_FREE ? -1 : (int32_t)(uint32_t)s;
}

static inline void pvs_hash_put(uint64_t *slot, uint32_t key, int32_t value)
{
    *slot = (uint64_t)key << 32 | (uint32_t)value;
}

#endif
