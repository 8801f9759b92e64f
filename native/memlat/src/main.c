/* memlat: command line, MLC-compatible text output, JSON output and the --count_check mode. */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "memlat.h"
#include "engine.h"

#define MIB (1024.0 * 1024.0)

static void die_usage(const char *msg)
{
    fprintf(stderr, "memlat: error: %s\n", msg);
    exit(2);
}

static void die_runtime(const char *msg)
{
    fprintf(stderr, "memlat: error: %s\n", msg);
    exit(1);
}

static void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

static void json_num(FILE *f, double v, int decimals)
{
    if (isfinite(v))
        fprintf(f, "%.*f", decimals, v);
    else
        fputs("null", f);
}

static size_t round_up(size_t v, size_t a) { return (v + a - 1) / a * a; }

static int count_check(const struct opts *o)
{
    const struct traffic *t = traffic_by_code(o->traffic_code);
    int l0, l1, st, nt;
    traffic_lines(t, &l0, &l1, &st, &nt);
    uint64_t steps = o->count_steps, delay = o->ndelays == 1 ? o->delays[0] : 0;
    size_t rsize = round_up((size_t)(steps * (uint64_t)(l0 > l1 ? l0 : l1) + 1) * LINE_BYTES, 4096);
    size_t wsize = round_up((size_t)(steps * (uint64_t)(st + nt) + 1) * LINE_BYTES, 4096);
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
    uint64_t first = steps < 3 ? steps : 3;
    run_steps(t, &ks, first, delay);
    run_steps(t, &ks, steps - first, delay);

    uint64_t load_lines = ks.acc / 8, written = 0, partial = 0;
    for (size_t off = 0; off < wsize; off += LINE_BYTES) {
        const uint64_t *q = (const uint64_t *)(ks.wr + off);
        int nz = 0;
        for (int i = 0; i < 8; i++)
            nz += q[i] != 0;
        if (nz == 8)
            written++;
        else if (nz)
            partial++;
    }
    uint64_t rb, wb;
    traffic_bytes(t, steps, &rb, &wb);

    /* the latency thread's share: a single-cycle chain of lat_steps slots (stride 64), chased lat_steps
     * hops by the real chase kernel, must end where it started (exactly one lap: one line per step);
     * the lap is measured by stepping the same chain one pointer at a time */
    uint64_t lat_steps = (steps + 15) / 16 * 16;
    size_t csize = round_up((size_t)lat_steps * LINE_BYTES, 4096);
    char *cbuf = alloc_buffer(csize, 0);
    if (!cbuf)
        die_runtime("cannot map the count-check chase buffer");
    memset(cbuf, 0, csize);
    void *start = build_chain(cbuf, (size_t)lat_steps, LINE_BYTES, 1);
    void *end = chase(start, lat_steps);
    uint64_t lap = 0;
    void *q = start;
    do {
        q = *(void **)q;
        lap++;
    } while (q != start && lap <= lat_steps);
    uint64_t lat_bytes = chase_bytes(lat_steps, LINE_BYTES), obs_lat = end == start ? lap * LINE_BYTES : 0;
    free_buffer(cbuf, csize);
    uint64_t obs_read = (load_lines + (st ? written : 0)) * LINE_BYTES, obs_write = written * LINE_BYTES;
    int ok = partial == 0 && load_lines == steps * (uint64_t)(l0 + l1) && written == steps * (uint64_t)(st + nt) &&
             rb == obs_read && wb == obs_write && lap == lat_steps && obs_lat == lat_bytes;
    printf("{\"mode\": \"count_check\", \"traffic\": \"%s\", \"ratio\": \"%s\", \"steps\": %llu, \"delay\": %llu, "
           "\"kernel_isa\": \"%s\", \"store_kind\": \"%s\", "
           "\"read_bytes\": %llu, \"write_bytes\": %llu, "
           "\"observed_load_lines\": %llu, \"observed_written_lines\": %llu, \"observed_partial_lines\": %llu, "
           "\"observed_read_bytes\": %llu, \"observed_write_bytes\": %llu, "
           "\"latency_steps\": %llu, \"latency_bytes\": %llu, \"observed_latency_bytes\": %llu, "
           "\"total_bytes\": %llu, \"observed_total_bytes\": %llu, \"ok\": %s}\n",
           t->name, t->ratio, (unsigned long long)steps, (unsigned long long)delay, kernel_isa,
           st ? "ordinary" : nt ? "non-temporal" : "none", (unsigned long long)rb, (unsigned long long)wb,
           (unsigned long long)load_lines, (unsigned long long)written, (unsigned long long)partial,
           (unsigned long long)obs_read, (unsigned long long)obs_write, (unsigned long long)lat_steps,
           (unsigned long long)lat_bytes, (unsigned long long)obs_lat, (unsigned long long)(rb + wb + lat_bytes),
           (unsigned long long)(obs_read + obs_write + obs_lat), ok ? "true" : "false");
    free_buffer(ks.rd0, rsize);
    free_buffer(ks.rd1, rsize);
    free_buffer(ks.wr, wsize);
    return ok ? 0 : 1;
}

static void cpu_list_str(char *buf, size_t n, const int *cpus, int k)
{
    size_t used = 0;
    buf[0] = 0;
    for (int i = 0; i < k && used < n; i++)
        used += (size_t)snprintf(buf + used, n - used, "%s%d", i ? "," : "", cpus[i]);
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
    const struct traffic *t = traffic_by_code(o.traffic_code);

    if (o.mode == MODE_COUNT_CHECK)
        return count_check(&o);

    /* CPUs */
    int allowed[MAX_CPUS], nallowed = allowed_cpus(allowed, MAX_CPUS);
    int cpus[MAX_CPUS], ncpus;
    if (o.ncpus) {
        for (int i = 0; i < o.ncpus; i++) {
            int found = 0;
            for (int j = 0; j < nallowed; j++)
                found |= allowed[j] == o.cpus[i];
            if (!found) {
                char al[256];
                cpu_list_str(al, sizeof al, allowed, nallowed);
                snprintf(err, sizeof err, "CPU %d in -k is not available to this process (available: %s)", o.cpus[i], al);
                die_usage(err);
            }
        }
        memcpy(cpus, o.cpus, sizeof(int) * (size_t)o.ncpus);
        ncpus = o.ncpus;
    } else {
        memcpy(cpus, allowed, sizeof(int) * (size_t)nallowed);
        ncpus = nallowed;
    }

    struct engine_cfg cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.traffic = t;
    cfg.stride = o.stride;
    cfg.huge_pages = o.huge_pages;
    cfg.seed = o.seed;
    cfg.group_lines = (size_t)(o.tlb_locality_kib * 1024 / (uint64_t)o.stride);
    cfg.seconds = o.seconds;
    cfg.warmup = o.warmup >= 0 ? o.warmup : fmin(0.5, fmax(0.05, 0.2 * o.seconds));
    if (o.mode == MODE_IDLE) {
        cfg.lat_cpu = cpus[0];
        cfg.nload = 0;
    } else if (o.mode == MODE_LOADED) {
        if (ncpus < 2)
            die_usage("loaded latency needs at least two CPUs in -k: the first runs the latency thread, "
                      "the others the load threads");
        cfg.lat_cpu = cpus[0];
        cfg.nload = ncpus - 1;
        memcpy(cfg.load_cpus, cpus + 1, sizeof(int) * (size_t)cfg.nload);
    } else {
        cfg.lat_cpu = -1;
        cfg.nload = ncpus;
        memcpy(cfg.load_cpus, cpus, sizeof(int) * (size_t)ncpus);
    }

    /* buffers: default 2x the last-level cache per thread */
    uint64_t llc = llc_bytes(), avail = mem_available_bytes();
    int l0, l1, st, nt;
    traffic_lines(t, &l0, &l1, &st, &nt);
    int bufs_per_load = 1 + (l1 ? 1 : 0) + ((st + nt) ? 1 : 0);
    size_t nbufs = (size_t)(cfg.lat_cpu >= 0 ? 1 : 0) + (size_t)cfg.nload * (size_t)bufs_per_load;
    size_t per;
    int shrunk = 0;
    if (o.buffer_kib) {
        per = round_up((size_t)o.buffer_kib * 1024, 4096);
        if (avail && per > avail) {
            snprintf(err, sizeof err, "buffer of %.1f MiB per thread (-b %llu) is larger than the memory available "
                     "(MemAvailable %.1f MiB)", per / MIB, (unsigned long long)o.buffer_kib, avail / MIB);
            die_usage(err);
        }
        if (avail && (double)per * (double)nbufs > 0.9 * (double)avail) {
            snprintf(err, sizeof err, "%zu buffers of %.1f MiB (-b %llu) need %.1f MiB, more than 90%% of the "
                     "memory available (MemAvailable %.1f MiB); use a smaller -b or fewer CPUs",
                     nbufs, per / MIB, (unsigned long long)o.buffer_kib, (double)per * (double)nbufs / MIB, avail / MIB);
            die_usage(err);
        }
    } else {
        per = llc ? round_up((size_t)(2 * llc), 1 << 20) : (size_t)256 << 20;
        if (avail && (double)per * (double)nbufs > 0.5 * (double)avail) {
            per = round_up((size_t)(0.5 * (double)avail / (double)nbufs), 1 << 20) - (1 << 20);
            if (per < (4u << 20))
                die_usage("not enough free memory for the default buffers; give a smaller -b or fewer CPUs");
            shrunk = 1;
        }
    }
    cfg.lat_bytes = per;
    cfg.load_bytes = per;

    double unit_ns = calibrate_delay_unit_ns();
    double ghz = tsc_ghz();

    struct engine *e = engine_start(&cfg, err, sizeof err);
    if (!e)
        die_runtime(err);

    /* huge pages actually granted */
    char thp[32], hp_detail[256];
    thp_mode(thp, sizeof thp);
    uint64_t ahp = anon_huge_kib();
    double total_mib = (double)per * (double)nbufs / MIB;
    int huge = ahp > 0;
    if (!o.huge_pages)
        snprintf(hp_detail, sizeof hp_detail, "disabled by --no_huge_pages");
    else if (huge)
        snprintf(hp_detail, sizeof hp_detail, "transparent huge pages (%s): %.1f of %.1f MiB in 2 MiB pages",
                 thp, ahp / 1024.0, total_mib);
    else if (!strcmp(thp, "never") || !strcmp(thp, "unavailable"))
        snprintf(hp_detail, sizeof hp_detail, "transparent huge pages are %s on this kernel", thp);
    else
        snprintf(hp_detail, sizeof hp_detail, "MADV_HUGEPAGE asked (THP %s) but the kernel gave none", thp);

    char lat_cpu_s[16] = "none", load_s[1024], chase_s[96];
    if (cfg.group_lines)
        snprintf(chase_s, sizeof chase_s, "random chase within %llu KiB groups",
                 (unsigned long long)o.tlb_locality_kib);
    else
        snprintf(chase_s, sizeof chase_s, "random chase over the whole buffer");
    if (cfg.lat_cpu >= 0)
        snprintf(lat_cpu_s, sizeof lat_cpu_s, "%d", cfg.lat_cpu);
    cpu_list_str(load_s, sizeof load_s, cfg.load_cpus, cfg.nload);

    if (!o.json) {
        printf("Intel(R) Memory Latency Checker - compatible output: profiler-tui memlat v%s\n", MEMLAT_VERSION);
        printf("Command line parameters: %s\n\n", o.cmdline);
        if (shrunk)
            printf("*** Default buffer reduced to %.3fMiB/thread to fit the available memory\n", per / MIB);
        if (o.mode == MODE_IDLE)
            printf("Using buffer size of %.3fMiB\n", per / MIB);
        else
            printf("Using buffer size of %.3fMiB/thread for reads and an additional %.3fMiB/thread for writes\n",
                   (double)per * (l1 ? 2 : 1) / MIB, (st + nt) ? per / MIB : 0.0);
        printf("Using huge pages: %s (%s)\n", huge ? "yes" : "no", hp_detail);
        if (o.mode == MODE_IDLE)
            printf("Using latency thread on CPU %s, stride %d bytes, %s\n", lat_cpu_s, o.stride, chase_s);
        else if (o.mode == MODE_LOADED)
            printf("Using latency thread on CPU %s (stride %d bytes, %s) and %d load thread(s) on CPU(s) %s\n",
                   lat_cpu_s, o.stride, chase_s, cfg.nload, load_s);
        else
            printf("Using %d load thread(s) on CPU(s) %s, no latency thread\n", cfg.nload, load_s);
        if (o.mode != MODE_IDLE)
            printf("Using injection delay unit of %.3f ns (one iteration of a spin loop)\n", unit_ns);
        if (o.mode == MODE_LOADED) {
            printf("\nMeasuring Loaded Latencies for the system\n");
        } else if (o.mode == MODE_BANDWIDTH) {
            printf("\nMeasuring Memory Bandwidths for the system (no latency thread)\n");
            printf("Bandwidths are in MB/sec (1 MB/sec = 1,000,000 Bytes/sec)\n");
        }
        if (o.mode != MODE_IDLE) {
            printf("Using %s traffic type\n", t->desc);
            printf("Inject\tLatency\tBandwidth\nDelay\t(ns)\tMB/sec\n==========================\n");
        }
        fflush(stdout);
    }

    struct point_result *rows = calloc((size_t)o.ndelays, sizeof *rows);
    int nrows = o.mode == MODE_IDLE ? 1 : o.ndelays;
    int low_share = 0;
    for (int i = 0; i < nrows; i++) {
        uint64_t d = o.mode == MODE_IDLE ? 0 : o.delays[i];
        if (engine_measure(e, d, &rows[i]) != 0) {
            engine_stop(e);
            die_runtime("a thread made no progress during the measurement window (is -t too short?)");
        }
        if (rows[i].min_cpu_share < 0.9)
            low_share = 1;
        if (o.json)
            continue;
        if (rows[i].min_cpu_share < 0.9 && o.mode != MODE_IDLE)   /* before its row, so a reader of the row sees it */
            printf("*** Busy machine at delay %llu: a thread got %.0f%% of a CPU in its window\n",
                   (unsigned long long)d, 100 * rows[i].min_cpu_share);
        if (o.mode == MODE_IDLE)
            printf("Each iteration took %.1f base frequency clocks (\t%5.1f\tns)\n", rows[i].latency_ns * ghz,
                   rows[i].latency_ns);
        else if (o.mode == MODE_LOADED)
            printf(" %05llu\t%6.2f\t%9.1f\n", (unsigned long long)d, rows[i].latency_ns, rows[i].bandwidth_mbps);
        else
            printf(" %05llu\t%6s\t%9.1f\n", (unsigned long long)d, "-", rows[i].bandwidth_mbps);
        fflush(stdout);
    }
    engine_stop(e);
    if (low_share && !o.json)
        printf("*** Some threads got less than 90%% of a CPU during a window (busy machine): latency is per CPU-second of the latency thread, bandwidth per wall second\n");

    if (o.json) {
        FILE *f = stdout;
        const char *mode = o.mode == MODE_IDLE ? "idle" : o.mode == MODE_LOADED ? "loaded" : "bandwidth";
        fprintf(f, "{\"tool\": \"profiler-tui memlat\", \"version\": \"%s\", \"mode\": \"%s\", \"command_line\": ",
                MEMLAT_VERSION, mode);
        json_str(f, o.cmdline);
        fprintf(f, ", \"traffic\": \"%s\", \"traffic_code\": %d, \"traffic_desc\": ", t->name, t->code);
        json_str(f, t->desc);
        fprintf(f, ", \"read_write_ratio\": \"%s\", \"stride\": %d, \"buffer_kib\": %zu, "
                   "\"read_buffers_per_thread\": %d, \"write_buffers_per_thread\": %d, "
                   "\"huge_pages\": %s, \"huge_pages_detail\": ",
                t->name[0] == 'R' ? "1:0" : t->ratio, o.stride, per / 1024, o.mode == MODE_IDLE ? 1 : 1 + (l1 ? 1 : 0),
                o.mode == MODE_IDLE ? 0 : ((st + nt) ? 1 : 0), huge ? "true" : "false");
        json_str(f, hp_detail);
        fprintf(f, ", \"thp_mode\": \"%s\", \"anon_huge_kib\": %llu, \"threads\": %d, \"latency_cpu\": %s, "
                   "\"load_threads\": %d, \"load_cpus\": [%s], \"duration_s\": %.3f, \"warmup_s\": %.3f, "
                   "\"delay_unit_ns\": %.4f, \"delay_unit\": \"one iteration of a calibrated spin loop\", "
                   "\"tsc_ghz\": %.4f, \"kernel_isa\": \"%s\", \"llc_kib\": %llu, \"busy_machine\": %s, "
                   "\"tlb_locality_kib\": %llu, \"bandwidth_includes_latency_thread\": %s, \"chase\": ",
                thp, (unsigned long long)ahp, cfg.nload + (cfg.lat_cpu >= 0), cfg.lat_cpu >= 0 ? lat_cpu_s : "null",
                cfg.nload, load_s, cfg.seconds, cfg.warmup, unit_ns, ghz, kernel_isa, (unsigned long long)(llc >> 10),
                low_share ? "true" : "false", (unsigned long long)o.tlb_locality_kib,
                o.mode == MODE_LOADED ? "true" : "false");
        json_str(f, chase_s);
        if (o.mode == MODE_IDLE) {
            fprintf(f, ", \"latency_ns\": ");
            json_num(f, rows[0].latency_ns, 3);
            fprintf(f, ", \"clocks_per_hop\": ");
            json_num(f, ghz > 0 ? rows[0].latency_ns * ghz : NAN, 2);
        }
        fprintf(f, ", \"rows\": [");
        for (int i = 0; i < nrows; i++) {
            struct point_result *r = &rows[i];
            fprintf(f, "%s{\"delay\": ", i ? ", " : "");
            if (o.mode == MODE_IDLE)
                fputs("null", f);
            else
                fprintf(f, "%llu", (unsigned long long)r->delay);
            fprintf(f, ", \"latency_ns\": ");
            json_num(f, cfg.lat_cpu >= 0 ? r->latency_ns : NAN, 3);
            fprintf(f, ", \"latency_ns_wall\": ");
            json_num(f, cfg.lat_cpu >= 0 ? r->latency_ns_wall : NAN, 3);
            fprintf(f, ", \"bandwidth_mbps\": ");
            json_num(f, cfg.nload ? r->bandwidth_mbps : NAN, 1);
            fprintf(f, ", \"load_bandwidth_mbps\": ");
            json_num(f, cfg.nload ? r->load_bandwidth_mbps : NAN, 1);
            fprintf(f, ", \"latency_mbps\": ");
            json_num(f, cfg.nload && cfg.lat_cpu >= 0 ? r->latency_mbps : NAN, 1);
            fprintf(f, ", \"read_mbps\": ");
            json_num(f, cfg.nload ? r->read_mbps : NAN, 1);
            fprintf(f, ", \"write_mbps\": ");
            json_num(f, cfg.nload ? r->write_mbps : NAN, 1);
            fprintf(f, ", \"bandwidth_mbps_cpu\": ");
            json_num(f, cfg.nload ? r->bandwidth_mbps_cpu : NAN, 1);
            fprintf(f, ", \"read_bytes\": %llu, \"write_bytes\": %llu, \"latency_bytes\": %llu, \"hops\": %llu, "
                       "\"window_s\": %.4f, \"min_cpu_share\": %.3f}",
                    (unsigned long long)r->read_bytes, (unsigned long long)r->write_bytes,
                    (unsigned long long)r->latency_bytes,
                    (unsigned long long)r->hops, r->window_s, r->min_cpu_share);
        }
        fprintf(f, "]}\n");
    }
    free(rows);
    return 0;
}
