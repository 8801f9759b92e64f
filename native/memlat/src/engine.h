#ifndef MEMLAT_ENGINE_H
#define MEMLAT_ENGINE_H
#include "memlat.h"

struct engine_cfg {
    const struct traffic *traffic;
    int stride;
    size_t lat_bytes;          /* latency chase buffer */
    size_t load_bytes;         /* each load buffer (reads, second read for triads, writes) */
    int lat_cpu;               /* -1: no latency thread */
    int load_cpus[MAX_CPUS];
    int nload;
    int huge_pages;
    uint64_t seed;
    int mem_node;              /* bind every buffer to this NUMA node before its first touch; -1: no binding */
    size_t group_lines;        /* latency chain locality groups, 0 = global */
    double warmup, seconds;
    int windows;               /* sub-windows of each window, 1..MAX_WINDOWS (1: the whole window only) */
};

struct point_result {
    uint64_t delay;
    double latency_ns;          /* latency thread CPU time / hops */
    double latency_ns_wall;     /* wall time / hops */
    double bandwidth_mbps;      /* load_bandwidth_mbps + latency_mbps (MLC's convention), MB/s (10^6 B) */
    double load_bandwidth_mbps; /* sum over load threads of bytes / wall time of its window */
    double latency_mbps;        /* the latency thread's bytes (chase_bytes) / wall time of its window */
    double read_mbps, write_mbps;
    double bandwidth_mbps_cpu;  /* the same per thread CPU-second, latency thread included */
    uint64_t read_bytes, write_bytes, hops;   /* read/write: the load threads' bytes */
    uint64_t latency_bytes;     /* chase_bytes(hops, stride) */
    double window_s;
    double min_cpu_share;       /* lowest CPU time / wall time of any thread in the window */
    /* the same figures in each sub-window (cfg.windows > 1), in order; a sub-window in which a thread did no work
     * (its boundaries fell in one chunk of it) is left out, so there may be fewer than cfg.windows */
    double win_latency_ns[MAX_WINDOWS];
    double win_bandwidth_mbps[MAX_WINDOWS];
    int nwin_latency, nwin_bandwidth;
};

struct engine;
struct engine *engine_start(const struct engine_cfg *cfg, char *err, size_t errlen);
int engine_measure(struct engine *e, uint64_t delay, struct point_result *r);
void engine_stop(struct engine *e);
/* adds the node of every page of every buffer to pn (move_pages); 0 ok, -1 when the kernel refused */
int engine_count_pages(struct engine *e, struct page_nodes *pn);
/* every buffer on `node` by /proc/self/numa_maps and move_pages; adds the numa_maps counts to pn; 0 ok */
int engine_verify_node(struct engine *e, int node, struct page_nodes *pn, char *err, size_t errlen);
#endif
