/* What a measured run needs, shared by main.c's modes (idle, loaded, bandwidth) and the suite modes (suite.c,
 * c2c.c, wset.c): the error exits, CPU choice and buffer sizing, the engine's configuration, the text banner and
 * header lines, the mode table, and the JSON fields every mode writes (run.h declares them). */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "memlat.h"
#include "engine.h"
#include "json.h"
#include "run.h"

__attribute__((noreturn)) void die_usage(const char *msg)
{
    fprintf(stderr, "memlat: error: %s\n", msg);
    exit(2);
}

__attribute__((noreturn)) void die_runtime(const char *msg)
{
    fprintf(stderr, "memlat: error: %s\n", msg);
    exit(1);
}

size_t round_up(size_t v, size_t a) { return (v + a - 1) / a * a; }

void cpu_list_str(char *buf, size_t n, const int *cpus, int k)
{
    size_t used = 0;
    buf[0] = 0;
    for (int i = 0; i < k && used < n; i++)
        used += (size_t)snprintf(buf + used, n - used, "%s%d", i ? "," : "", cpus[i]);
}


void header_top(const struct run *r)
{
    printf("Intel(R) Memory Latency Checker - compatible output: profiler-tui memlat v%s\n", MEMLAT_VERSION);
    printf("Command line parameters: %s\n\n", r->o->cmdline);
    if (r->shrunk && r->llc && r->per < 4 * r->llc)
        printf("*** Default buffer reduced to %.3fMiB/thread to fit the available memory: below 4x the %.3fMiB "
               "last-level cache, some chase steps may find their line in it (latency below DRAM's)\n", r->per / MIB,
               r->llc / MIB);
    else if (r->shrunk)
        printf("*** Default buffer reduced to %.3fMiB/thread to fit the available memory\n", r->per / MIB);
}

void huge_pages_line(const struct run *r)
{
    printf("Using huge pages: %s (%s)\n", r->huge ? "yes" : "no", r->hp_detail);
}

/* --mem_node only: where the buffers are, as verified page by page */
static void numa_line(const struct run *r)
{
    if (r->o->mem_node >= 0)
        printf("Using memory on NUMA node %d: pages %s (%zu-byte pages; bound with mbind MPOL_BIND before the first "
               "touch, verified with move_pages)\n", r->o->mem_node, r->placed_s, r->placed.page_bytes);
}

void load_buffers_line(const struct run *r)
{
    printf("Using buffer size of %.3fMiB/thread for reads and an additional %.3fMiB/thread for writes\n",
           (double)r->per * (r->l1 ? 2 : 1) / MIB, (r->st + r->nt) ? r->per / MIB : 0.0);
}

static void load_table_head(const struct run *r)
{
    printf("Using %s traffic type\n", r->t->desc);
    printf("Inject\tLatency\tBandwidth\nDelay\t(ns)\tMB/sec\n==========================\n");
}

/* One figure's sub-window values, WINDOWS_PER_LINE to a line (a line stays far below the 4096 characters a reader
 * keeps): "Windows of 0.0250 s, latency_ns: 150.123 149.870 ...".  Intel MLC prints no such line; each comes just
 * before the row (or figure, or idle line) it belongs to. */
#define WINDOWS_PER_LINE 50
static void window_lines(const char *name, const double *v, int n, int decimals, double window_s)
{
    for (int i = 0; i < n; i += WINDOWS_PER_LINE) {
        printf("Windows of %.4f s, %s:", window_s, name);
        for (int k = i; k < n && k < i + WINDOWS_PER_LINE; k++)
            printf(" %.*f", decimals, v[k]);
        printf("\n");
    }
}

void windows_lines(const struct run *r, const struct point_result *p)
{
    double sub = r->cfg.seconds / r->cfg.windows;
    if (r->cfg.windows < 2)
        return;
    if (r->cfg.lat_cpu >= 0)
        window_lines("latency_ns", p->win_latency_ns, p->nwin_latency, 3, sub);
    if (r->cfg.nload > 0)
        window_lines("bandwidth_mbps", p->win_bandwidth_mbps, p->nwin_bandwidth, 1, sub);
}

/* "window_latency_ns": [...], "window_bandwidth_mbps": [...] (the figures the row has) with sub-windows */
void json_windows(struct json *j, const struct run *r, const struct point_result *p)
{
    if (r->cfg.windows < 2)
        return;
    if (r->cfg.lat_cpu >= 0)
        json_num_list(j, "window_latency_ns", p->win_latency_ns, p->nwin_latency, 3);
    if (r->cfg.nload > 0)
        json_num_list(j, "window_bandwidth_mbps", p->win_bandwidth_mbps, p->nwin_bandwidth, 1);
}

static void busy_line(const struct point_result *p, uint64_t delay)
{
    if (p->min_cpu_share < 0.9)   /* before its row, so a reader of the row sees it */
        printf("*** Busy machine at delay %llu: a thread got %.0f%% of a CPU in its window\n",
               (unsigned long long)delay, 100 * p->min_cpu_share);
}

/* idle: one latency thread on the first CPU, no load */
static void idle_threads(struct engine_cfg *cfg, const int *cpus, int ncpus)
{
    (void)ncpus;
    cfg->lat_cpu = cpus[0];
    cfg->nload = 0;
}

static void idle_header(const struct run *r)
{
    header_top(r);
    printf("Using buffer size of %.3fMiB\n", r->per / MIB);
    huge_pages_line(r);
    numa_line(r);
    printf("Using latency thread on CPU %s, stride %d bytes, %s\n", r->lat_cpu_s, r->o->stride, r->chase_s);
}

static void idle_row(const struct run *r, const struct point_result *p, uint64_t delay)
{
    (void)delay;
    windows_lines(r, p);
    printf("Each iteration took %.1f base frequency clocks (\t%5.1f\tns)\n", p->latency_ns * r->ghz, p->latency_ns);
}

/* loaded: the latency thread on the first CPU, load threads on the others */
static void loaded_threads(struct engine_cfg *cfg, const int *cpus, int ncpus)
{
    if (ncpus < 2)
        die_usage("loaded latency needs at least two CPUs in -k: the first runs the latency thread, "
                  "the others the load threads");
    cfg->lat_cpu = cpus[0];
    cfg->nload = ncpus - 1;
    memcpy(cfg->load_cpus, cpus + 1, sizeof(int) * (size_t)cfg->nload);
}

static void loaded_header(const struct run *r)
{
    header_top(r);
    load_buffers_line(r);
    huge_pages_line(r);
    numa_line(r);
    printf("Using latency thread on CPU %s (stride %d bytes, %s) and %d load thread(s) on CPU(s) %s\n",
           r->lat_cpu_s, r->o->stride, r->chase_s, r->cfg.nload, r->load_s);
    printf("Using injection delay unit of %.3f ns (one iteration of a spin loop)\n", r->unit_ns);
    printf("\nMeasuring Loaded Latencies for the system\n");
    load_table_head(r);
}

static void loaded_row(const struct run *r, const struct point_result *p, uint64_t delay)
{
    busy_line(p, delay);
    /* the row's bandwidth counts the latency thread too (MLC's convention): its parts on a line of their own,
     * before the row, so the table keeps MLC's three columns */
    printf("Load threads at delay %05llu: %.1f MB/sec (latency thread %.1f MB/sec)\n", (unsigned long long)delay,
           p->load_bandwidth_mbps, p->latency_mbps);
    windows_lines(r, p);
    printf(" %05llu\t%6.2f\t%9.1f\n", (unsigned long long)delay, p->latency_ns, p->bandwidth_mbps);
}

/* bandwidth: load threads on every CPU, no latency thread */
static void bandwidth_threads(struct engine_cfg *cfg, const int *cpus, int ncpus)
{
    cfg->lat_cpu = -1;
    cfg->nload = ncpus;
    memcpy(cfg->load_cpus, cpus, sizeof(int) * (size_t)ncpus);
}

static void bandwidth_header(const struct run *r)
{
    header_top(r);
    load_buffers_line(r);
    huge_pages_line(r);
    numa_line(r);
    printf("Using %d load thread(s) on CPU(s) %s, no latency thread\n", r->cfg.nload, r->load_s);
    printf("Using injection delay unit of %.3f ns (one iteration of a spin loop)\n", r->unit_ns);
    printf("\nMeasuring Memory Bandwidths for the system (no latency thread)\n");
    printf("Bandwidths are in MB/sec (1 MB/sec = 1,000,000 Bytes/sec)\n");
    load_table_head(r);
}

static void bandwidth_row(const struct run *r, const struct point_result *p, uint64_t delay)
{
    busy_line(p, delay);
    windows_lines(r, p);
    printf(" %05llu\t%6s\t%9.1f\n", (unsigned long long)delay, "-", p->bandwidth_mbps);
}

static const struct mode_def modes[] = {
    {MODE_IDLE, "idle", idle_threads, idle_header, idle_row},
    {MODE_LOADED, "loaded", loaded_threads, loaded_header, loaded_row},
    {MODE_BANDWIDTH, "bandwidth", bandwidth_threads, bandwidth_header, bandwidth_row},
};

const struct mode_def *mode_by_id(enum mode m)
{
    for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++)
        if (modes[i].mode == m)
            return &modes[i];
    return NULL;
}

/* the CPUs of -k (each must be in this process' affinity mask), or every CPU it may use */
int pick_cpus(const struct opts *o, int *cpus)
{
    int allowed[MAX_CPUS], nallowed = allowed_cpus(allowed, MAX_CPUS);
    if (!o->ncpus) {
        memcpy(cpus, allowed, sizeof(int) * (size_t)nallowed);
        return nallowed;
    }
    for (int i = 0; i < o->ncpus; i++) {
        int found = 0;
        for (int j = 0; j < nallowed; j++)
            found |= allowed[j] == o->cpus[i];
        if (!found) {
            char al[256], err[512];
            cpu_list_str(al, sizeof al, allowed, nallowed);
            snprintf(err, sizeof err, "CPU %d in -k is not available to this process (available: %s)",
                     o->cpus[i], al);
            die_usage(err);
        }
    }
    memcpy(cpus, o->cpus, sizeof(int) * (size_t)o->ncpus);
    return o->ncpus;
}

/* the bytes of each buffer: -b (refused when it cannot fit), else 4x the last-level cache per thread and at least
 * DEFAULT_MIN_BUFFER (so at most a quarter of a random chase's steps can find their line in the cache, and Intel MLC's
 * own guidance of >= 100 MiB per thread holds), at most the 4 GiB cap; made smaller when all of them would take more
 * than half the memory available, and then the *** line says when the chase is no longer 4x the cache */
static void size_buffers(struct run *r)
{
    const struct opts *o = r->o;
    uint64_t avail = mem_available_bytes();
    int bufs_per_load = 1 + (r->l1 ? 1 : 0) + ((r->st + r->nt) ? 1 : 0);
    r->nbufs = (size_t)(r->cfg.lat_cpu >= 0 ? 1 : 0) + (size_t)r->cfg.nload * (size_t)bufs_per_load;
    double nbufs = (double)r->nbufs;
    char err[512];
    if (o->buffer_kib) {
        r->per = round_up((size_t)o->buffer_kib * 1024, 4096);
        if (avail && r->per > avail) {
            snprintf(err, sizeof err, "buffer of %.1f MiB per thread (-b %llu) is larger than the memory available "
                     "(MemAvailable %.1f MiB)", r->per / MIB, (unsigned long long)o->buffer_kib, avail / MIB);
            die_usage(err);
        }
        if (avail && (double)r->per * nbufs > 0.9 * (double)avail) {
            snprintf(err, sizeof err, "%zu buffers of %.1f MiB (-b %llu) need %.1f MiB, more than 90%% of the "
                     "memory available (MemAvailable %.1f MiB); use a smaller -b or fewer CPUs", r->nbufs,
                     r->per / MIB, (unsigned long long)o->buffer_kib, (double)r->per * nbufs / MIB, avail / MIB);
            die_usage(err);
        }
    } else {
        uint64_t want = 4 * r->llc > DEFAULT_MIN_BUFFER ? 4 * r->llc : DEFAULT_MIN_BUFFER;
        if (want > (MAX_BUFFER_KIB << 10))
            want = MAX_BUFFER_KIB << 10;
        r->per = round_up((size_t)want, 1 << 20);
        if (avail && (double)r->per * nbufs > 0.5 * (double)avail) {
            r->per = round_up((size_t)(0.5 * (double)avail / nbufs), 1 << 20) - (1 << 20);
            if (r->per < (4u << 20))
                die_usage("not enough free memory for the default buffers; give a smaller -b or fewer CPUs");
            r->shrunk = 1;
        }
    }
    r->cfg.lat_bytes = r->per;
    r->cfg.load_bytes = r->per;
}

void configure(struct run *r, const int *cpus, int ncpus)
{
    const struct opts *o = r->o;
    struct engine_cfg *cfg = &r->cfg;
    memset(cfg, 0, sizeof *cfg);
    cfg->traffic = r->t;
    cfg->stride = o->stride;
    cfg->huge_pages = o->huge_pages;
    cfg->seed = o->seed;
    cfg->mem_node = o->mem_node;
    cfg->group_lines = (size_t)(o->tlb_locality_kib * 1024 / (uint64_t)o->stride);
    cfg->seconds = o->seconds;
    cfg->windows = o->windows;
    cfg->warmup = o->warmup >= 0 ? o->warmup : fmin(0.5, fmax(0.05, 0.2 * o->seconds));
    r->mode->threads(cfg, cpus, ncpus);
    r->llc = llc_bytes();
    traffic_lines(r->t, &r->l0, &r->l1, &r->st, &r->nt);
    size_buffers(r);
}

/* what the run looks like once the engine has its buffers: huge pages granted, CPUs and chase as text */
void describe(struct run *r)
{
    thp_mode(r->thp, sizeof r->thp);
    r->ahp = anon_huge_kib();
    double total_mib = (double)r->per * (double)r->nbufs / MIB;
    r->huge = r->ahp > 0;
    if (!r->o->huge_pages)
        snprintf(r->hp_detail, sizeof r->hp_detail, "disabled by --no_huge_pages");
    else if (r->huge)
        snprintf(r->hp_detail, sizeof r->hp_detail, "transparent huge pages (%s): %.1f of %.1f MiB in 2 MiB pages",
                 r->thp, r->ahp / 1024.0, total_mib);
    else if (!strcmp(r->thp, "never") || !strcmp(r->thp, "unavailable"))
        snprintf(r->hp_detail, sizeof r->hp_detail, "transparent huge pages are %s on this kernel", r->thp);
    else
        snprintf(r->hp_detail, sizeof r->hp_detail, "MADV_HUGEPAGE asked (THP %s) but the kernel gave none", r->thp);

    if (r->cfg.group_lines)
        snprintf(r->chase_s, sizeof r->chase_s, "random chase within %llu KiB groups",
                 (unsigned long long)r->o->tlb_locality_kib);
    else
        snprintf(r->chase_s, sizeof r->chase_s, "random chase over the whole buffer");
    snprintf(r->lat_cpu_s, sizeof r->lat_cpu_s, "none");
    if (r->cfg.lat_cpu >= 0)
        snprintf(r->lat_cpu_s, sizeof r->lat_cpu_s, "%d", r->cfg.lat_cpu);
    cpu_list_str(r->load_s, sizeof r->load_s, r->cfg.load_cpus, r->cfg.nload);
}

/* "page_bytes", "pages": {"1": 16384} and "pages_total" of a verified placement */
void json_page_nodes(struct json *j, const struct page_nodes *pn)
{
    char name[16];
    json_u64(j, "page_bytes", pn->page_bytes);
    json_object_begin(j, "pages");
    for (int k = 0; k < MAX_NODES; k++) {
        if (!pn->pages[k])
            continue;
        snprintf(name, sizeof name, "%d", k);
        json_u64(j, name, pn->pages[k]);
    }
    json_end(j);
    json_u64(j, "pages_total", pn->total);
}

/* the first fields of every JSON object: the tool, its version, the mode and the command line */
void json_head(struct json *j, const char *mode, const struct opts *o)
{
    json_str(j, "tool", "profiler-tui memlat");
    json_str(j, "version", MEMLAT_VERSION);
    json_str(j, "mode", mode);
    json_str(j, "command_line", o->cmdline);
}
