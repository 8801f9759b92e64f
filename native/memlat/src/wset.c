/* --working_set: idle latency against buffer size (lmbench lat_mem_rd's figure). One buffer as large as the largest
 * size, 2 MiB aligned (MADV_HUGEPAGE unless --no_huge_pages), first-touched by the pinned thread; each size is a prefix
 * of it, chased as one random cycle confined to that prefix, so small sizes sit in the same huge page as large ones.
 * The chase is the engine's: 16 dependent loads per loop iteration; latency = thread CPU time / hops, nothing
 * subtracted. The cache levels of the latency thread's CPU come from sysfs and are printed beside the curve. */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "memlat.h"
#include "json.h"
#include "run.h"

#define CHUNK_HOPS 4096     /* hops between two looks at the clock (a multiple of 16) */

struct wrow {
    uint64_t kib, hops;
    double ns, ns_wall, window_s, share;
};

static void cache_name(const struct cache *c, char *buf, size_t n)
{
    const char *suffix = !strcmp(c->type, "Data") ? "d" : !strcmp(c->type, "Instruction") ? "i" : "";
    snprintf(buf, n, "L%d%s", c->level, suffix);
}

static uint64_t largest_cache(const struct cache *c, int n)
{
    uint64_t best = 0;
    for (int i = 0; i < n; i++)
        if (strcmp(c[i].type, "Instruction") && c[i].bytes > best)
            best = c[i].bytes;
    return best;
}

/* warm-up, then a window of -t seconds chasing the cycle that starts at p */
/* max(4 x the largest data/unified cache, 64 MiB) */
static uint64_t default_top_kib(uint64_t llc)
{
    uint64_t top = 4 * (llc >> 10);
    top = top < 64 * 1024 ? 64 * 1024 : top;
    return top > MAX_BUFFER_KIB ? MAX_BUFFER_KIB : top;   /* -b's cap (memlat.h) */
}

static void measure_size(void *p, double warmup, double seconds, struct wrow *w)
{
    double end = now_ns() + warmup * 1e9;
    while (now_ns() < end)
        p = chase(p, CHUNK_HOPS);
    double c0 = thread_cpu_ns(), t0 = now_ns();
    end = t0 + seconds * 1e9;
    uint64_t hops = 0;
    double t1;
    do {
        p = chase(p, CHUNK_HOPS);
        hops += CHUNK_HOPS;
    } while ((t1 = now_ns()) < end);
    double c1 = thread_cpu_ns();
    __asm__ volatile("" ::"r"(p));
    w->hops = hops;
    w->ns = (c1 - c0) / (double)hops;
    w->ns_wall = (t1 - t0) / (double)hops;
    w->window_s = (t1 - t0) / 1e9;
    w->share = (c1 - c0) / (t1 - t0);
}

static void wset_header(const struct run *r, const struct cache *c, int nc)
{
    header_top(r);
    printf("Measuring idle latency against buffer size (working set)\n");
    printf("Using latency thread on CPU %s, stride %d bytes, random chase within each buffer\n", r->lat_cpu_s,
           r->o->stride);
    printf("Using huge pages: %s (%s; every size is a prefix of one %.3fMiB buffer)\n", r->huge ? "yes" : "no",
           r->o->huge_pages ? r->hp_detail : "disabled by --no_huge_pages: 4 KiB pages", r->per / MIB);
    for (int i = 0; i < nc; i++) {
        char name[16];
        cache_name(&c[i], name, sizeof name);
        printf("Cache %s: %llu KiB (level %d, %s, shared by CPU(s) %s)\n", name,
               (unsigned long long)(c[i].bytes >> 10), c[i].level, c[i].type, c[i].shared);
    }
    if (!nc)
        printf("*** No cache levels in sysfs (devices/system/cpu/cpuN/cache)\n");
    printf("Buffer\tLatency\n(KiB)\t(ns)\n==========================\n");
}

static void wset_json(const struct run *r, const struct cache *c, int nc, const struct wrow *rows, int n, double ghz)
{
    struct json j;
    json_begin(&j, stdout);
    json_head(&j, "working_set", r->o);
    json_int(&j, "latency_cpu", r->cfg.lat_cpu);
    json_int(&j, "stride", r->o->stride);
    json_str(&j, "chase", "random chase within each buffer (a prefix of one allocation)");
    json_bool(&j, "huge_pages", r->huge);
    json_str(&j, "pages", r->o->huge_pages ? "2m" : "4k");
    json_str(&j, "huge_pages_detail", r->hp_detail);
    json_u64(&j, "allocation_kib", r->per >> 10);
    json_fixed(&j, "duration_s", r->o->seconds, 3);
    json_fixed(&j, "warmup_s", r->cfg.warmup, 3);
    json_fixed(&j, "tsc_ghz", ghz, 4);
    json_array_begin(&j, "caches");
    for (int i = 0; i < nc; i++) {
        char name[16];
        cache_name(&c[i], name, sizeof name);
        json_array_item(&j);
        json_str(&j, "name", name);
        json_int(&j, "level", c[i].level);
        json_str(&j, "type", c[i].type);
        json_u64(&j, "size_bytes", c[i].bytes);
        json_str(&j, "shared_cpus", c[i].shared);
        json_end(&j);
    }
    json_array_end(&j);
    json_array_begin(&j, "rows");
    for (int i = 0; i < n; i++) {
        json_array_item(&j);
        json_u64(&j, "buffer_kib", rows[i].kib);
        json_u64(&j, "buffer_bytes", rows[i].kib << 10);
        json_num(&j, "latency_ns", rows[i].ns, 3);
        json_num(&j, "latency_ns_wall", rows[i].ns_wall, 3);
        json_num(&j, "clocks_per_hop", ghz > 0 ? rows[i].ns * ghz : NAN, 2);
        json_u64(&j, "hops", rows[i].hops);
        json_fixed(&j, "window_s", rows[i].window_s, 4);
        json_fixed(&j, "cpu_share", rows[i].share, 3);
        json_end(&j);
    }
    json_array_end(&j);
    json_end(&j);
    fputc('\n', stdout);
}

/* the sizes to measure, each holding at least 16 chase slots; die on a bad --sizes */
static int wset_sizes(const struct opts *o, uint64_t llc, uint64_t *kib)
{
    char err[256];
    int n = o->nsizes;
    if (n)
        memcpy(kib, o->sizes_kib, sizeof(uint64_t) * (size_t)n);
    else
        n = default_sizes(o->buffer_kib ? o->buffer_kib : default_top_kib(llc), kib, MAX_SIZES);
    for (int i = 0; i < n; i++)
        if (kib[i] * 1024 / (uint64_t)o->stride < 16) {
            snprintf(err, sizeof err, "--sizes %llu KiB holds fewer than 16 chase slots of stride %d bytes (-l)",
                     (unsigned long long)kib[i], o->stride);
            die_usage(err);
        }
    return n;
}

int wset_run(const struct opts *o)
{
    static struct run r;
    static struct cache caches[MAX_CACHES];
    static uint64_t kib[MAX_SIZES];
    static struct wrow rows[MAX_SIZES];
    int cpus[MAX_CPUS];
    char err[256];
    pick_cpus(o, cpus);
    int nc = read_caches(cpus[0], caches, MAX_CACHES);
    int n = wset_sizes(o, largest_cache(caches, nc), kib);
    uint64_t top = 0;
    for (int i = 0; i < n; i++)
        top = kib[i] > top ? kib[i] : top;
    r.o = o;
    r.per = round_up((size_t)top << 10, 2u << 20);
    r.nbufs = 1;
    r.cfg.lat_cpu = cpus[0];
    r.cfg.warmup = o->warmup >= 0 ? o->warmup : fmin(0.5, fmax(0.05, 0.2 * o->seconds));
    uint64_t avail = mem_available_bytes();
    if (avail && r.per > avail / 2) {
        snprintf(err, sizeof err, "--sizes up to %llu KiB needs %.1f MiB, more than half the memory available "
                 "(MemAvailable %.1f MiB)", (unsigned long long)top, r.per / MIB, avail / MIB);
        die_usage(err);
    }
    if (o->plan_only) {
        for (int i = 0; i < n; i++)
            printf("Plan: working set %llu KiB on CPU %d\n", (unsigned long long)kib[i], cpus[0]);
        return 0;
    }
    if (pin_to_cpu(cpus[0]) != 0)
        die_runtime("cannot pin the latency thread");
    char *buf = alloc_buffer(r.per, o->huge_pages);
    if (!buf)
        die_runtime("cannot map the working-set buffer");
    memset(buf, 0, r.per);   /* first touch, in order, by the pinned thread */
    describe(&r);
    double ghz = tsc_ghz();
    if (!o->json) {
        wset_header(&r, caches, nc);
        fflush(stdout);
    }
    for (int i = 0; i < n; i++) {
        size_t lines = (size_t)(kib[i] * 1024 / (uint64_t)o->stride);
        void *p = build_chain(buf, lines, (size_t)o->stride, o->seed);
        rows[i].kib = kib[i];
        measure_size(p, r.cfg.warmup, o->seconds, &rows[i]);
        if (o->json)
            continue;
        if (rows[i].share < 0.9)
            printf("*** Busy machine at %llu KiB: the thread got %.0f%% of a CPU in its window\n",
                   (unsigned long long)kib[i], 100 * rows[i].share);
        printf(" %llu\t%8.2f\n", (unsigned long long)kib[i], rows[i].ns);
        fflush(stdout);
    }
    free_buffer(buf, r.per);
    if (o->json)
        wset_json(&r, caches, nc, rows, n, ghz);
    return 0;
}
