/* The suite modes built on the engine's threads (engine.c): peak injection bandwidth (five traffic mixes, delay 0,
 * load threads on every CPU), bandwidth against the number of load threads, and the idle-latency and bandwidth
 * matrices (CPU node x memory node, every buffer bound with mbind before its first touch and its placement verified
 * from /proc/self/numa_maps and move_pages). Every figure is one engine start, one window, one stop. */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "memlat.h"
#include "engine.h"
#include "json.h"
#include "run.h"

/* MLC's five peak rows, in its order */
static const struct peak_row {
    int code;
    const char *label;
} PEAK_ROWS[] = {{0, "ALL Reads"}, {3, "3:1 Reads-Writes"}, {2, "2:1 Reads-Writes"}, {5, "1:1 Reads-Writes"},
                 {10, "Stream-triad like"}};

/* one figure of any suite mode, kept for the JSON object */
struct cell {
    char label[32];
    int code, threads, cpu_node, mem_node, cpu;
    struct point_result p;
    struct page_nodes placed;   /* matrices: the verified placement of the cell's buffers */
    size_t buffer_bytes;
    int huge;
};

struct suite {
    const struct opts *o;
    int cpus[MAX_CPUS], ncpus;
    struct run r;               /* the latest point's run: buffer size, huge pages, CPUs as text */
    struct cell *cells;
    int ncells;
    int printed_header;
    struct topo topo;
    int rows[MAX_NODES], nrows, cols[MAX_NODES], ncols;   /* matrices: CPU nodes, memory nodes */
};

/* starts the engine for one figure: the run's threads from `m`, traffic `code`, buffers bound to `node` (-1: the
 * kernel's policy) and, when bound, verified page by page before anything is measured */
static struct engine *start_point(struct suite *s, enum mode m, int code, const int *cpus, int n, int node,
                                  struct page_nodes *placed)
{
    struct run *r = &s->r;
    char err[512];
    memset(r, 0, sizeof *r);
    r->o = s->o;
    r->mode = mode_by_id(m);
    r->t = traffic_by_code(code);
    configure(r, cpus, n);
    r->cfg.mem_node = node;
    struct engine *e = engine_start(&r->cfg, err, sizeof err);
    if (!e)
        die_runtime(err);
    if (node >= 0) {
        memset(placed, 0, sizeof *placed);
        if (engine_verify_node(e, node, placed, err, sizeof err) != 0) {
            engine_stop(e);
            die_runtime(err);   /* a misplaced buffer is never a figure */
        }
    }
    describe(r);
    return e;
}

static void measure_point(struct engine *e, struct point_result *p)
{
    if (engine_measure(e, 0, p) != 0) {
        engine_stop(e);
        die_runtime("a thread made no progress during the measurement window (is -t too short?)");
    }
    engine_stop(e);
}

static struct cell *new_cell(struct suite *s)
{
    struct cell *c = &s->cells[s->ncells++];
    memset(c, 0, sizeof *c);
    c->cpu_node = c->mem_node = c->cpu = -1;
    return c;
}

static void keep_run(struct cell *c, const struct run *r)
{
    c->buffer_bytes = r->per;
    c->huge = r->huge;
}

static void busy_row(const struct point_result *p, const char *what)
{
    if (p->min_cpu_share < 0.9)
        printf("*** Busy machine at %s: a thread got %.0f%% of a CPU in its window\n", what, 100 * p->min_cpu_share);
}

static void traffic_line(const struct traffic *t, const struct point_result *p)
{
    printf("Traffic %s: reads %.1f MB/sec, writes %.1f MB/sec\n", t->name, p->read_mbps, p->write_mbps);
}

/* a peak or scaling figure: the table head before the first row (once the first engine told what pages it got),
 * then the measurement and, in text, its traffic line and the row (printed by `row`) */
static void bandwidth_figure(struct suite *s, struct cell *c, struct engine *e, void (*header)(const struct suite *),
                             const char *what)
{
    keep_run(c, &s->r);
    if (!s->o->json && !s->printed_header++)
        header(s);
    measure_point(e, &c->p);
    if (s->o->json)
        return;
    busy_row(&c->p, what);
    traffic_line(s->r.t, &c->p);
    windows_lines(&s->r, &c->p);
}

/* ---- --peak_injection_bandwidth ---- */

static const char *peak_label(int code, char *buf, size_t n)
{
    for (size_t i = 0; i < sizeof PEAK_ROWS / sizeof PEAK_ROWS[0]; i++)
        if (PEAK_ROWS[i].code == code)
            return PEAK_ROWS[i].label;
    snprintf(buf, n, "W%d traffic", code);
    return buf;
}

static void peak_header(const struct suite *s)
{
    const struct run *r = &s->r;
    header_top(r);
    printf("Using buffer size of %.3fMiB/thread for each read stream and for writes\n", r->per / MIB);
    huge_pages_line(r);
    printf("Using %d load thread(s) on CPU(s) %s, delay 0, no latency thread\n", r->cfg.nload, r->load_s);
    printf("\nMeasuring Peak Injection Memory Bandwidths for the system\n");
    printf("Bandwidths are in MB/sec (1 MB/sec = 1,000,000 Bytes/sec)\n");
    printf("Using all the threads from each core if Hyper-threading is enabled\n");
    printf("Using traffic with the following read-write ratios\n");
}

static void run_peak(struct suite *s)
{
    int codes[8], n = 0;
    if (s->o->traffic_given)
        codes[n++] = s->o->traffic_code;
    else
        for (size_t i = 0; i < sizeof PEAK_ROWS / sizeof PEAK_ROWS[0]; i++)
            codes[n++] = PEAK_ROWS[i].code;
    if (s->o->plan_only) {
        cpu_list_str(s->r.load_s, sizeof s->r.load_s, s->cpus, s->ncpus);
        for (int i = 0; i < n; i++)
            printf("Plan: peak bandwidth, traffic %s, load threads on CPU(s) %s\n", traffic_by_code(codes[i])->name,
                   s->r.load_s);
        return;
    }
    for (int i = 0; i < n; i++) {
        struct cell *c = new_cell(s);
        struct engine *e = start_point(s, MODE_BANDWIDTH, codes[i], s->cpus, s->ncpus, -1, NULL);
        c->code = codes[i];
        c->threads = s->ncpus;
        char other[32];
        snprintf(c->label, sizeof c->label, "%s", peak_label(codes[i], other, sizeof other));
        bandwidth_figure(s, c, e, peak_header, c->label);
        if (s->o->json)
            continue;
        printf("%-17s:\t%.1f\t\n", c->label, c->p.bandwidth_mbps);
        fflush(stdout);
    }
}

/* ---- --bandwidth_scaling ---- */

static void scaling_header(const struct suite *s)
{
    const struct run *r = &s->r;
    char all[1024];
    cpu_list_str(all, sizeof all, s->cpus, s->ncpus);
    header_top(r);
    load_buffers_line(r);
    huge_pages_line(r);
    printf("\nMeasuring Memory Bandwidth against the number of load threads\n");
    printf("Bandwidths are in MB/sec (1 MB/sec = 1,000,000 Bytes/sec)\n");
    printf("Using %s traffic type\n", r->t->desc);
    printf("Using load threads on CPU(s) %s in this order (N threads use the first N)\n", all);
    printf("Threads\tBandwidth\n\tMB/sec\n==========================\n");
}

static void run_scaling(struct suite *s)
{
    int list[MAX_CPUS], n = s->o->nthreads;
    char err[256];
    if (n)
        memcpy(list, s->o->threads_list, sizeof(int) * (size_t)n);
    else
        for (n = 0; n < s->ncpus; n++)
            list[n] = n + 1;
    for (int i = 0; i < n; i++)
        if (list[i] > s->ncpus) {
            snprintf(err, sizeof err, "--threads %d needs %d CPUs in -k, there are %d", list[i], list[i], s->ncpus);
            die_usage(err);
        }
    for (int i = 0; i < n; i++) {
        if (s->o->plan_only) {
            cpu_list_str(err, sizeof err, s->cpus, list[i]);
            printf("Plan: %d load thread(s) on CPU(s) %s\n", list[i], err);
            continue;
        }
        struct cell *c = new_cell(s);
        struct engine *e = start_point(s, MODE_BANDWIDTH, s->o->traffic_code, s->cpus, list[i], -1, NULL);
        c->code = s->o->traffic_code;
        c->threads = list[i];
        snprintf(err, sizeof err, "%d threads", list[i]);
        bandwidth_figure(s, c, e, scaling_header, err);
        if (s->o->json)
            continue;
        printf(" %d\t%9.1f\n", list[i], c->p.bandwidth_mbps);
        fflush(stdout);
    }
}

/* ---- --latency_matrix and --bandwidth_matrix ---- */

/* the CPUs of -k on `node`, in -k's order */
static int node_cpus_of(const struct suite *s, int node, int *out)
{
    int n = 0;
    for (int i = 0; i < s->ncpus; i++)
        if (s->topo.cpu_node[s->cpus[i]] == node)
            out[n++] = s->cpus[i];
    return n;
}

/* rows: nodes with a CPU of -k; columns: nodes with memory */
static void plan_matrix(struct suite *s)
{
    char err[512];
    int tmp[MAX_CPUS];
    if (topo_read(&s->topo, err, sizeof err) != 0)
        die_runtime(err);
    for (int i = 0; i < s->topo.nnodes; i++) {
        int node = s->topo.nodes[i];
        if (node_cpus_of(s, node, tmp) > 0)
            s->rows[s->nrows++] = node;
        if (s->topo.has_memory[node])
            s->cols[s->ncols++] = node;
    }
    if (!s->nrows)
        die_usage("no CPU of -k is on a NUMA node listed in sysfs (devices/system/node/node*/cpulist)");
    if (!s->ncols)
        die_runtime("no NUMA node has memory (sysfs devices/system/node/has_memory)");
    free(s->cells);
    s->cells = calloc((size_t)s->nrows * (size_t)s->ncols, sizeof *s->cells);
    if (!s->cells)
        die_runtime("out of memory");
}

static void matrix_plan_lines(const struct suite *s, int bw)
{
    int cpus[MAX_CPUS];
    char list[1024];
    for (int i = 0; i < s->nrows; i++) {
        int n = node_cpus_of(s, s->rows[i], cpus);
        cpu_list_str(list, sizeof list, cpus, bw ? n : 1);
        for (int k = 0; k < s->ncols; k++)
            printf("Plan: CPU node %d (CPU(s) %s), memory node %d\n", s->rows[i], list, s->cols[k]);
    }
}

static void matrix_header(const struct suite *s, int bw)
{
    const struct run *r = &s->r;
    int cpus[MAX_CPUS];
    char list[1024];
    header_top(r);
    if (bw)
        load_buffers_line(r);
    else
        printf("Using buffer size of %.3fMiB\n", r->per / MIB);
    huge_pages_line(r);
    for (int i = 0; i < s->nrows; i++) {
        int n = node_cpus_of(s, s->rows[i], cpus);
        cpu_list_str(list, sizeof list, cpus, bw ? n : 1);
        if (bw)
            printf("Using CPU node %d: load threads on CPU(s) %s\n", s->rows[i], list);
        else
            printf("Using CPU node %d: latency thread on CPU %s (stride %d bytes, %s)\n", s->rows[i], list,
                   s->o->stride, r->chase_s);
    }
    printf("Every buffer bound to its memory node with mbind MPOL_BIND before its first touch\n");
    if (s->topo.nnodes == 1)
        printf("*** One NUMA node: the matrix is 1x1\n");
    if (bw) {
        printf("\nMeasuring Memory Bandwidths between nodes within system \n");
        printf("Bandwidths are in MB/sec (1 MB/sec = 1,000,000 Bytes/sec)\n");
        printf("Using all the threads from each core if Hyper-threading is enabled\n");
        printf("Using %s traffic type\n", r->t->desc);
    } else {
        printf("\nMeasuring idle latencies for random access (in ns)...\n");
    }
    printf("\t\tNuma node\nNuma node");
    for (int k = 0; k < s->ncols; k++)
        printf("\t%6d", s->cols[k]);
    printf("\t\n");
}

static void placement_line(const struct cell *c)
{
    char pages[256];
    placement_str(&c->placed, pages, sizeof pages);
    printf("Placement verified: CPU node %d, memory node %d: pages %s (%zu-byte pages; /proc/self/numa_maps)\n",
           c->cpu_node, c->mem_node, pages, c->placed.page_bytes);
}

static void run_matrix(struct suite *s, int bw)
{
    int cpus[MAX_CPUS];
    plan_matrix(s);
    if (s->o->plan_only) {
        matrix_plan_lines(s, bw);
        return;
    }
    for (int i = 0; i < s->nrows; i++) {
        int n = node_cpus_of(s, s->rows[i], cpus);
        struct cell *row = &s->cells[s->ncells];
        for (int k = 0; k < s->ncols; k++) {
            struct cell *c = new_cell(s);
            c->cpu_node = s->rows[i];
            c->mem_node = s->cols[k];
            c->cpu = cpus[0];
            c->threads = bw ? n : 1;
            c->code = bw ? s->o->traffic_code : 0;
            struct engine *e = start_point(s, bw ? MODE_BANDWIDTH : MODE_IDLE, c->code, cpus, c->threads,
                                           c->mem_node, &c->placed);
            keep_run(c, &s->r);
            if (!s->o->json && !s->printed_header++) {
                matrix_header(s, bw);
                fflush(stdout);
            }
            measure_point(e, &c->p);
        }
        if (s->o->json)
            continue;
        /* the row is printed when its last cell is measured, its placements first */
        for (int k = 0; k < s->ncols; k++) {
            char what[64];
            snprintf(what, sizeof what, "CPU node %d, memory node %d", row[k].cpu_node, row[k].mem_node);
            busy_row(&row[k].p, what);
            placement_line(&row[k]);
        }
        printf("%8d", s->rows[i]);
        for (int k = 0; k < s->ncols; k++)
            printf("\t%6.1f", bw ? row[k].p.bandwidth_mbps : row[k].p.latency_ns);
        printf("\t\n");
        fflush(stdout);
    }
}

/* ---- JSON ---- */

static void json_placed(struct json *j, const struct cell *c)
{
    json_object_begin(j, "numa");
    json_int(j, "node", c->mem_node);
    json_str(j, "bound_with", "mbind MPOL_BIND");
    json_str(j, "verified_with", "numa_maps");
    json_str(j, "cross_checked_with", "move_pages");
    json_page_nodes(j, &c->placed);
    json_end(j);
}

static void json_cell(struct json *j, const struct suite *s, const struct cell *c)
{
    int lat = s->o->mode == MODE_LAT_MATRIX;
    const struct traffic *t = traffic_by_code(c->code);
    json_array_item(j);
    if (s->o->mode == MODE_PEAK)
        json_str(j, "label", c->label);
    if (!lat) {
        json_str(j, "traffic", t->name);
        json_str(j, "read_write_ratio", t->code ? t->ratio : "1:0");
        json_int(j, "threads", c->threads);
    }
    if (c->cpu_node >= 0) {
        json_int(j, "cpu_node", c->cpu_node);
        json_int(j, "mem_node", c->mem_node);
    }
    if (lat) {
        json_int(j, "cpu", c->cpu);
        json_num(j, "latency_ns", c->p.latency_ns, 3);
        json_num(j, "latency_ns_wall", c->p.latency_ns_wall, 3);
        json_u64(j, "hops", c->p.hops);
    } else {
        json_num(j, "bandwidth_mbps", c->p.bandwidth_mbps, 1);
        json_num(j, "read_mbps", c->p.read_mbps, 1);
        json_num(j, "write_mbps", c->p.write_mbps, 1);
        json_num(j, "bandwidth_mbps_cpu", c->p.bandwidth_mbps_cpu, 1);
        json_u64(j, "read_bytes", c->p.read_bytes);
        json_u64(j, "write_bytes", c->p.write_bytes);
    }
    json_u64(j, "buffer_kib", c->buffer_bytes / 1024);
    json_bool(j, "huge_pages", c->huge);
    json_fixed(j, "window_s", c->p.window_s, 4);
    json_fixed(j, "min_cpu_share", c->p.min_cpu_share, 3);
    json_windows(j, &s->r, &c->p);   /* every cell of a run has the same threads' layout as the last */
    if (c->mem_node >= 0)
        json_placed(j, c);
    json_end(j);
}

static const char *mode_name(enum mode m)
{
    switch (m) {
    case MODE_PEAK: return "peak";
    case MODE_SCALING: return "scaling";
    case MODE_LAT_MATRIX: return "latency_matrix";
    default: return "bandwidth_matrix";
    }
}

static void print_json(const struct suite *s)
{
    const struct opts *o = s->o;
    struct json j;
    json_begin(&j, stdout);
    json_head(&j, mode_name(o->mode), o);
    json_int_list(&j, "cpus", s->cpus, s->ncpus);
    json_fixed(&j, "duration_s", s->r.cfg.seconds, 3);
    json_fixed(&j, "warmup_s", s->r.cfg.warmup, 3);
    json_int(&j, "windows", o->windows);
    json_str(&j, "kernel_isa", kernel_isa);
    json_str(&j, "thp_mode", s->r.thp);
    json_str(&j, "huge_pages_detail", s->r.hp_detail);
    json_bool(&j, "pages_4k_asked", !o->huge_pages);
    json_u64(&j, "llc_kib", s->r.llc >> 10);
    if (o->mode == MODE_LAT_MATRIX) {
        json_int(&j, "stride", o->stride);
        json_str(&j, "chase", s->r.chase_s);
    } else {
        json_int(&j, "delay", 0);
        json_bool(&j, "latency_thread", 0);
    }
    if (o->mode == MODE_LAT_MATRIX || o->mode == MODE_BW_MATRIX) {
        json_int_list(&j, "cpu_nodes", s->rows, s->nrows);
        json_int_list(&j, "mem_nodes", s->cols, s->ncols);
        json_bool(&j, "one_node", s->topo.nnodes == 1);
    }
    json_array_begin(&j, "rows");
    for (int i = 0; i < s->ncells; i++)
        json_cell(&j, s, &s->cells[i]);
    json_array_end(&j);
    json_end(&j);
    fputc('\n', stdout);
}

int suite_run(const struct opts *o)
{
    static struct suite s;   /* large (CPU lists, topology); one per process */
    s.o = o;
    s.ncpus = pick_cpus(o, s.cpus);
    s.cells = calloc(MAX_CPUS, sizeof *s.cells);   /* peak: 5 rows, scaling: one per --threads item */
    if (!s.cells)
        die_runtime("out of memory");
    switch (o->mode) {
    case MODE_PEAK: run_peak(&s); break;
    case MODE_SCALING: run_scaling(&s); break;
    case MODE_LAT_MATRIX: run_matrix(&s, 0); break;
    default: run_matrix(&s, 1); break;
    }
    if (o->json && !o->plan_only)
        print_json(&s);
    free(s.cells);
    return 0;
}
