/* memlat: command line, MLC-compatible text output, JSON output and the --count_check mode.
 *
 * A run: parse the arguments (args.c), pick the CPUs and buffers, start the engine (engine.c), then
 * one point per injection delay. Each mode (idle, loaded, bandwidth) has its own thread layout, text
 * header and text row (the mode table in run.c, with what the suite modes share); the JSON object is the
 * same for all three apart from the idle-only fields. --count_check is a mode of its own that never starts the
 * engine. */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "memlat.h"
#include "engine.h"
#include "json.h"
#include "run.h"

/* ---- --count_check: exactly N steps in this thread, the lines really touched counted afterwards ---- */

struct count_result {
    uint64_t steps, delay, load_lines, written, partial, read_bytes, write_bytes;
    uint64_t lat_steps, lat_bytes, obs_lat, obs_read, obs_write;
    int st, nt, ok;
};

static void count_traffic(const struct traffic *t, struct count_result *c)
{
    int l0, l1, st, nt;
    traffic_lines(t, &l0, &l1, &st, &nt);
    size_t rsize = round_up((size_t)(c->steps * (uint64_t)(l0 > l1 ? l0 : l1) + 1) * LINE_BYTES, 4096);
    size_t wsize = round_up((size_t)(c->steps * (uint64_t)(st + nt) + 1) * LINE_BYTES, 4096);
    struct kstate ks;
    memset(&ks, 0, sizeof ks);
    ks.rd0 = alloc_buffer(rsize, 0);
    ks.rd1 = alloc_buffer(rsize, 0);
    ks.wr = alloc_buffer(wsize, 0);
    if (!ks.rd0 || !ks.rd1 || !ks.wr)
        die_runtime("cannot map the count-check buffers");
    ks.rsize = rsize;
    ks.wsize = wsize;
    for (size_t i = 0; i < rsize / 8; i++) {
        ((uint64_t *)ks.rd0)[i] = 1;
        ((uint64_t *)ks.rd1)[i] = 1;
    }
    memset(ks.wr, 0, wsize);
    /* uneven pieces exercise both the unrolled and the per-line paths */
    uint64_t first = c->steps < 3 ? c->steps : 3;
    run_steps(t, &ks, first, c->delay);
    run_steps(t, &ks, c->steps - first, c->delay);

    c->load_lines = ks.acc / 8;
    for (size_t off = 0; off < wsize; off += LINE_BYTES) {
        const uint64_t *q = (const uint64_t *)(ks.wr + off);
        int nz = 0;
        for (int i = 0; i < 8; i++)
            nz += q[i] != 0;
        if (nz == 8)
            c->written++;
        else if (nz)
            c->partial++;
    }
    traffic_bytes(t, c->steps, &c->read_bytes, &c->write_bytes);
    c->obs_read = (c->load_lines + (st ? c->written : 0)) * LINE_BYTES;
    c->obs_write = c->written * LINE_BYTES;
    c->st = st;
    c->nt = nt;
    c->ok = c->partial == 0 && c->load_lines == c->steps * (uint64_t)(l0 + l1) &&
            c->written == c->steps * (uint64_t)(st + nt) && c->read_bytes == c->obs_read &&
            c->write_bytes == c->obs_write;
    free_buffer(ks.rd0, rsize);
    free_buffer(ks.rd1, rsize);
    free_buffer(ks.wr, wsize);
}

/* the latency thread's share: a single-cycle chain of lat_steps slots (stride 64), chased lat_steps
 * hops by the real chase kernel, must end where it started (exactly one lap: one line per step);
 * the lap is measured by stepping the same chain one pointer at a time */
static void count_chase(struct count_result *c)
{
    c->lat_steps = (c->steps + 15) / 16 * 16;
    size_t csize = round_up((size_t)c->lat_steps * LINE_BYTES, 4096);
    char *cbuf = alloc_buffer(csize, 0);
    if (!cbuf)
        die_runtime("cannot map the count-check chase buffer");
    memset(cbuf, 0, csize);
    void *start = build_chain(cbuf, (size_t)c->lat_steps, LINE_BYTES, 1);
    void *end = chase(start, c->lat_steps);
    uint64_t lap = 0;
    void *q = start;
    do {
        q = *(void **)q;
        lap++;
    } while (q != start && lap <= c->lat_steps);
    c->lat_bytes = chase_bytes(c->lat_steps, LINE_BYTES);
    c->obs_lat = end == start ? lap * LINE_BYTES : 0;
    c->ok = c->ok && lap == c->lat_steps && c->obs_lat == c->lat_bytes;
    free_buffer(cbuf, csize);
}

static void print_count_json(const struct traffic *t, const struct count_result *c)
{
    struct json j;
    json_begin(&j, stdout);
    json_str(&j, "mode", "count_check");
    json_str(&j, "traffic", t->name);
    json_str(&j, "ratio", t->ratio);
    json_u64(&j, "steps", c->steps);
    json_u64(&j, "delay", c->delay);
    json_str(&j, "kernel_isa", kernel_isa);
    json_str(&j, "store_kind", c->st ? "ordinary" : c->nt ? "non-temporal" : "none");
    json_u64(&j, "read_bytes", c->read_bytes);
    json_u64(&j, "write_bytes", c->write_bytes);
    json_u64(&j, "observed_load_lines", c->load_lines);
    json_u64(&j, "observed_written_lines", c->written);
    json_u64(&j, "observed_partial_lines", c->partial);
    json_u64(&j, "observed_read_bytes", c->obs_read);
    json_u64(&j, "observed_write_bytes", c->obs_write);
    json_u64(&j, "latency_steps", c->lat_steps);
    json_u64(&j, "latency_bytes", c->lat_bytes);
    json_u64(&j, "observed_latency_bytes", c->obs_lat);
    json_u64(&j, "total_bytes", c->read_bytes + c->write_bytes + c->lat_bytes);
    json_u64(&j, "observed_total_bytes", c->obs_read + c->obs_write + c->obs_lat);
    json_bool(&j, "ok", c->ok);
    json_end(&j);
    fputc('\n', stdout);
}

static int count_check(const struct opts *o)
{
    const struct traffic *t = traffic_by_code(o->traffic_code);
    struct count_result c;
    memset(&c, 0, sizeof c);
    c.steps = o->count_steps;
    c.delay = o->ndelays == 1 ? o->delays[0] : 0;
    count_traffic(t, &c);
    count_chase(&c);
    print_count_json(t, &c);
    return c.ok ? 0 : 1;
}

/* ---- a measured run (idle, loaded, bandwidth) ---- */
/* --mem_node must name a node this machine has online: a usage error before any buffer is mapped */
static void check_mem_node(int node)
{
    int nodes[MAX_NODES], n = numa_nodes(nodes, MAX_NODES);
    char err[512], list[256];
    if (node < 0)
        return;
    if (n < 0)
        die_usage("--mem_node needs NUMA support: this kernel has no /sys/devices/system/node/online");
    for (int i = 0; i < n; i++)
        if (nodes[i] == node)
            return;
    cpu_list_str(list, sizeof list, nodes, n);
    snprintf(err, sizeof err, "NUMA node %d in --mem_node does not exist on this machine (online nodes: %s)", node,
             list);
    die_usage(err);
}

/* every page of every buffer must be on the --mem_node node, or the run measures another node's memory */
static void verify_placement(struct run *r, struct engine *e)
{
    int node = r->o->mem_node;
    char err[512];
    if (node < 0)
        return;
    int rc = engine_count_pages(e, &r->placed);
    placement_str(&r->placed, r->placed_s, sizeof r->placed_s);
    if (rc == 0 && placement_ok(&r->placed, node))
        return;
    engine_stop(e);
    if (rc != 0)
        snprintf(err, sizeof err, "cannot verify the buffers' NUMA node (move_pages failed)");
    else
        snprintf(err, sizeof err, "the buffers are not all on NUMA node %d (pages: %s)", node, r->placed_s);
    die_runtime(err);
}

/* one point per delay (one for idle), each text row printed as soon as it is measured */
static void measure(struct run *r, struct engine *e)
{
    const struct opts *o = r->o;
    int idle = o->mode == MODE_IDLE;
    r->rows = calloc((size_t)o->ndelays, sizeof *r->rows);
    r->nrows = idle ? 1 : o->ndelays;
    for (int i = 0; i < r->nrows; i++) {
        uint64_t d = idle ? 0 : o->delays[i];
        if (engine_measure(e, d, &r->rows[i]) != 0) {
            engine_stop(e);
            die_runtime("a thread made no progress during the measurement window (is -t too short?)");
        }
        if (r->rows[i].min_cpu_share < 0.9)
            r->low_share = 1;
        if (o->json)
            continue;
        r->mode->row(r, &r->rows[i], d);
        fflush(stdout);
    }
}

static void json_row(struct json *j, const struct run *r, const struct point_result *p)
{
    int lat = r->cfg.lat_cpu >= 0, load = r->cfg.nload > 0;
    json_array_item(j);
    if (r->o->mode == MODE_IDLE)
        json_null(j, "delay");
    else
        json_u64(j, "delay", p->delay);
    json_num(j, "latency_ns", lat ? p->latency_ns : NAN, 3);
    json_num(j, "latency_ns_wall", lat ? p->latency_ns_wall : NAN, 3);
    json_num(j, "bandwidth_mbps", load ? p->bandwidth_mbps : NAN, 1);
    json_num(j, "load_bandwidth_mbps", load ? p->load_bandwidth_mbps : NAN, 1);
    json_num(j, "latency_mbps", load && lat ? p->latency_mbps : NAN, 1);
    json_num(j, "read_mbps", load ? p->read_mbps : NAN, 1);
    json_num(j, "write_mbps", load ? p->write_mbps : NAN, 1);
    json_num(j, "bandwidth_mbps_cpu", load ? p->bandwidth_mbps_cpu : NAN, 1);
    json_u64(j, "read_bytes", p->read_bytes);
    json_u64(j, "write_bytes", p->write_bytes);
    json_u64(j, "latency_bytes", p->latency_bytes);
    json_u64(j, "hops", p->hops);
    json_fixed(j, "window_s", p->window_s, 4);
    json_fixed(j, "min_cpu_share", p->min_cpu_share, 3);
    json_windows(j, r, p);
    json_end(j);
}

/* "numa": {"node": 1, "page_bytes": 4096, "pages": {"1": 16384}, "pages_total": 16384, ...}: verified */
static void json_numa(struct json *j, const struct run *r)
{
    json_object_begin(j, "numa");
    json_int(j, "node", r->o->mem_node);
    json_str(j, "bound_with", "mbind MPOL_BIND");
    json_str(j, "verified_with", "move_pages");
    json_page_nodes(j, &r->placed);
    json_end(j);
}

/* what was run: the settings, the machine and the buffers */
static void json_setup(struct json *j, const struct run *r)
{
    const struct opts *o = r->o;
    const struct traffic *t = r->t;
    int idle = o->mode == MODE_IDLE;
    json_head(j, r->mode->name, o);
    json_str(j, "traffic", t->name);
    json_int(j, "traffic_code", t->code);
    json_str(j, "traffic_desc", t->desc);
    json_str(j, "read_write_ratio", t->name[0] == 'R' ? "1:0" : t->ratio);
    json_int(j, "stride", o->stride);
    json_u64(j, "buffer_kib", r->per / 1024);
    json_int(j, "read_buffers_per_thread", idle ? 1 : 1 + (r->l1 ? 1 : 0));
    json_int(j, "write_buffers_per_thread", idle ? 0 : ((r->st + r->nt) ? 1 : 0));
    json_bool(j, "huge_pages", r->huge);
    json_str(j, "huge_pages_detail", r->hp_detail);
    json_str(j, "thp_mode", r->thp);
    json_u64(j, "anon_huge_kib", r->ahp);
    if (o->mem_node >= 0)
        json_numa(j, r);
}

static void print_json(const struct run *r)
{
    const struct engine_cfg *cfg = &r->cfg;
    struct json j;
    json_begin(&j, stdout);
    json_setup(&j, r);
    json_int(&j, "threads", cfg->nload + (cfg->lat_cpu >= 0));
    if (cfg->lat_cpu >= 0)
        json_int(&j, "latency_cpu", cfg->lat_cpu);
    else
        json_null(&j, "latency_cpu");
    json_int(&j, "load_threads", cfg->nload);
    json_int_list(&j, "load_cpus", cfg->load_cpus, cfg->nload);
    json_fixed(&j, "duration_s", cfg->seconds, 3);
    json_fixed(&j, "warmup_s", cfg->warmup, 3);
    json_int(&j, "windows", cfg->windows);
    json_fixed(&j, "delay_unit_ns", r->unit_ns, 4);
    json_str(&j, "delay_unit", "one iteration of a calibrated spin loop");
    json_fixed(&j, "tsc_ghz", r->ghz, 4);
    json_str(&j, "kernel_isa", kernel_isa);
    json_u64(&j, "llc_kib", r->llc >> 10);
    json_bool(&j, "busy_machine", r->low_share);
    json_u64(&j, "tlb_locality_kib", r->o->tlb_locality_kib);
    json_bool(&j, "bandwidth_includes_latency_thread", r->o->mode == MODE_LOADED);
    json_str(&j, "chase", r->chase_s);
    if (r->o->mode == MODE_IDLE) {
        json_num(&j, "latency_ns", r->rows[0].latency_ns, 3);
        json_num(&j, "clocks_per_hop", r->ghz > 0 ? r->rows[0].latency_ns * r->ghz : NAN, 2);
    }
    json_array_begin(&j, "rows");
    for (int i = 0; i < r->nrows; i++)
        json_row(&j, r, &r->rows[i]);
    json_array_end(&j);
    json_end(&j);
    fputc('\n', stdout);
}

static int measured_run(const struct opts *o)
{
    static struct run r;   /* large (CPU lists); one per process */
    int cpus[MAX_CPUS];
    char err[512];
    r.o = o;
    r.mode = mode_by_id(o->mode);
    r.t = traffic_by_code(o->traffic_code);
    check_mem_node(o->mem_node);
    configure(&r, cpus, pick_cpus(o, cpus));
    r.unit_ns = calibrate_delay_unit_ns();
    r.ghz = tsc_ghz();
    struct engine *e = engine_start(&r.cfg, err, sizeof err);
    if (!e)
        die_runtime(err);
    verify_placement(&r, e);
    describe(&r);
    if (!o->json) {
        r.mode->header(&r);
        fflush(stdout);
    }
    measure(&r, e);
    engine_stop(e);
    if (r.low_share && !o->json)
        printf("*** Some threads got less than 90%% of a CPU during a window (busy machine): latency is per "
               "CPU-second of the latency thread, bandwidth per wall second\n");
    if (o->json)
        print_json(&r);
    free(r.rows);
    return 0;
}

int main(int argc, char **argv)
{
    struct opts o;
    char err[512];
    int rc = parse_args(argc, argv, &o, err, sizeof err);
    if (rc == 1)
        return 0;
    if (rc == 2)
        die_usage(err);
    kernels_init();
    if (o.mode == MODE_COUNT_CHECK)
        return count_check(&o);
    if (o.mode == MODE_C2C)
        return c2c_run(&o);
    if (o.mode == MODE_WSET)
        return wset_run(&o);
    if (o.mode >= MODE_PEAK)
        return suite_run(&o);
    return measured_run(&o);
}
