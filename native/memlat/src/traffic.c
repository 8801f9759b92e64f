/* Traffic types and the byte-counting rule. */
#include <stdio.h>
#include <string.h>
#include "memlat.h"

/* Ratios are bus bytes read : bus bytes written. An ordinary store brings its line in first (RFO), so it
 * counts on both sides; that is why W5 (1:1) is a pure store stream and W2 (2:1) is one load + one store. */
static const struct traffic TRAFFIC[] = {
    {0,  "R",   "1:0", "Read-only",                              1, {OP_LOAD}},
    {2,  "W2",  "2:1", "2:1 Reads-Writes",                       2, {OP_LOAD, OP_STORE}},
    {3,  "W3",  "3:1", "3:1 Reads-Writes",                       3, {OP_LOAD, OP_LOAD, OP_STORE}},
    {4,  "W4",  "3:2", "3:2 Reads-Writes",                       3, {OP_LOAD, OP_STORE, OP_STORE}},
    {5,  "W5",  "1:1", "1:1 Reads-Writes",                       1, {OP_STORE}},
    {6,  "W6",  "0:1", "0:1 Reads-NT Writes (non-temporal)",     1, {OP_NT}},
    {7,  "W7",  "2:1", "2:1 Reads-NT Writes (non-temporal)",     3, {OP_LOAD, OP_LOAD, OP_NT}},
    {8,  "W8",  "1:1", "1:1 Reads-NT Writes (non-temporal)",     2, {OP_LOAD, OP_NT}},
    {9,  "W9",  "3:1", "3:1 Reads-NT Writes (non-temporal)",     4, {OP_LOAD, OP_LOAD, OP_LOAD, OP_NT}},
    {10, "W10", "2:1", "Stream-triad like 2:1 Reads-NT Writes",  3, {OP_LOAD, OP_LOAD2, OP_NT}},
    {11, "W11", "3:1", "Stream-triad like 3:1 Reads-Writes (RFO)", 3, {OP_LOAD, OP_LOAD2, OP_STORE}},
    {12, "W12", "4:1", "4:1 Reads-Writes",                       4, {OP_LOAD, OP_LOAD, OP_LOAD, OP_STORE}},
};

const struct traffic *traffic_by_code(int code)
{
    for (size_t i = 0; i < sizeof TRAFFIC / sizeof TRAFFIC[0]; i++)
        if (TRAFFIC[i].code == code)
            return &TRAFFIC[i];
    return NULL;
}

int traffic_valid_codes(char *buf, size_t n)
{
    size_t used = 0;
    buf[0] = 0;
    for (size_t i = 1; i < sizeof TRAFFIC / sizeof TRAFFIC[0] && used < n; i++)
        used += (size_t)snprintf(buf + used, n - used, "%s%d", i > 1 ? "," : "", TRAFFIC[i].code);
    return (int)used;
}

void traffic_lines(const struct traffic *t, int *loads0, int *loads1, int *stores, int *nts)
{
    int l0 = 0, l1 = 0, st = 0, nt = 0;
    for (int i = 0; i < t->nops; i++) {
        switch (t->ops[i]) {
        case OP_LOAD: l0++; break;
        case OP_LOAD2: l1++; break;
        case OP_STORE: st++; break;
        case OP_NT: nt++; break;
        }
    }
    if (loads0) *loads0 = l0;
    if (loads1) *loads1 = l1;
    if (stores) *stores = st;
    if (nts) *nts = nt;
}

void traffic_bytes(const struct traffic *t, uint64_t steps, uint64_t *read_bytes, uint64_t *write_bytes)
{
    int l0, l1, st, nt;
    traffic_lines(t, &l0, &l1, &st, &nt);
    /* load: read once; ordinary store: RFO read + write-back; non-temporal store: write once */
    *read_bytes = steps * (uint64_t)(l0 + l1 + st) * LINE_BYTES;
    *write_bytes = steps * (uint64_t)(st + nt) * LINE_BYTES;
}

uint64_t chase_bytes(uint64_t hops, int stride)
{
    /* one latency-thread step is one dependent load of a line it has not just read (stride >= 64, so
     * consecutive steps never share a line): one line read, as for a load thread's load */
    (void)stride;
    return hops * LINE_BYTES;
}
