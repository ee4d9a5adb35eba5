/* coord_hash: table sizing and set-up (the probes are inline in coord_hash.h). */
#include "sparse/coord_hash.h"

#include <string.h>

static int table_bits(int64_t capacity, int spread)
{
    if (capacity < 1) capacity = 1;
    if (capacity > PVS_MAX_SITES) capacity = PVS_MAX_SITES;   /* callers check their counts */
    spread = spread == 4 ? 4 : 2;
    int bits = 6;
    while (bits < 32 && ((int64_t)1 << bits) < spread * capacity) bits++;
    return bits;
}

size_t pvs_hash_table_bytes(int64_t capacity, int spread)
{
    return ((size_t)1 << table_bits(capacity, spread)) * sizeof(uint64_t);
}

void pvs_hash_init(pvs_hash *h, void *mem, int64_t capacity, int spread)
{
    int bits = table_bits(capacity, spread);
    h->slot = mem;
    h->mask = (uint32_t)(((uint64_t)1 << bits) - 1);
    memset(mem, 0xff, ((size_t)1 << bits) * sizeof(uint64_t));
}

bool pvs_grid_keys_ok(const int32_t dims[3])
{
    if (dims[0] < 1 || dims[1] < 1 || dims[2] < 1) return false;
    uint64_t cells = (uint64_t)dims[0] * (uint64_t)dims[1] * (uint64_t)dims[2];
    return cells < UINT32_MAX;
}
