/* Command line: MLC's flags (value attached or separate: -d0 / -d 0) plus the engine's own. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "memlat.h"

static const uint64_t DEFAULT_DELAYS[] = {0, 2, 8, 15, 50, 100, 200, 300, 400, 500, 700,
                                          1000, 1300, 1700, 2500, 3500, 5000, 9000, 20000};

void print_usage(FILE *f)
{
    fputs(
"usage: memlat MODE [options]\n"
"profiler-tui's memory engine: MLC-style idle and loaded latency (see native/memlat/README.md).\n"
"\n"
"modes:\n"
"  --idle_latency        latency of a dependent random pointer chase, one thread\n"
"  --loaded_latency      latency thread on the first CPU of -k, load threads on the others,\n"
"                        one row per injection delay\n"
"  --bandwidth_only      load threads on every CPU of -k, no latency thread (bandwidth per delay)\n"
"  --count_check N       run exactly N steps of the traffic in one thread and verify the byte count\n"
"  --peak_injection_bandwidth (or --max_bandwidth)\n"
"                        MLC's five traffic mixes (R, W3, W2, W5, W10), load threads on every CPU of -k,\n"
"                        delay 0; -R or -W N: only that row\n"
"  --bandwidth_scaling   bandwidth with 1..N load threads (--threads LIST, e.g. 1,2,4)\n"
"  --latency_matrix      idle latency per CPU node x memory node (buffers bound with mbind, verified)\n"
"  --bandwidth_matrix    bandwidth per CPU node x memory node (-R default, -W N allowed)\n"
"  --c2c_latency         cache-to-cache HIT and HITM latency between two CPUs (and between nodes)\n"
"  --working_set         idle latency against buffer size (--sizes KIB,KIB,... or 4 KiB to\n"
"                        max(4 x LLC, 64 MiB) at 4 points per octave, or up to -b KiB)\n"
"\n"
"options:\n"
"  -R                    all-reads traffic (default)\n"
"  -W N                  traffic type, MLC's codes: 2 (2:1 R:W), 3 (3:1), 4 (3:2), 5 (1:1),\n"
"                        6 (0:1 R:NT-W), 7 (2:1 NT), 8 (1:1 NT), 9 (3:1 NT),\n"
"                        10 (triad-like 2:1 NT, two read buffers), 11 (triad-like 3:1 with RFO), 12 (4:1)\n"
"  -d N                  one injection delay, in iterations of a spin loop (calibrated: delay_unit_ns)\n"
"  -D LIST               explicit delays, e.g. -D 0,100,1000 (default: MLC's 19 delays 0..20000)\n"
"  -l BYTES              stride of the latency chase: a power of two >= 64 (default 64)\n"
"  -b KIB                buffer per thread in KiB, 4 to 4194304 (default 4x the last-level cache, at least\n"
"                        256 MiB; at most 4 GiB: 8x the largest cache a thread fills today, a larger one\n"
"                        measures nothing more)\n"
"  -t SECONDS            measurement window per point, plain decimal seconds (default 2; fractions allowed)\n"
"  --warmup SECONDS      warm-up before each window (default 0.2 x -t, between 0.05 and 0.5)\n"
"  --windows N           also measure each figure in N equal sub-windows of -t, printed as `Windows of ...`\n"
"                        lines (1..1000, default 20; 1 = none; not for --c2c_latency, --working_set)\n"
"  -k LIST               CPUs, e.g. 0-3,6 (default: all CPUs this process may use)\n"
"  --no_huge_pages       do not ask for transparent huge pages (MADV_NOHUGEPAGE)\n"
"  --tlb_locality KIB    chase in random order within groups of KIB, groups in random order, like\n"
"                        multichase -T (default 0: one random permutation of the whole buffer)\n"
"  --seed N              seed of the random chase permutation (default 1)\n"
"  --mem_node N          bind every buffer to NUMA node N (mbind MPOL_BIND before the first touch) and\n"
"                        verify each page's node (move_pages); default: the kernel's policy, not checked\n"
"  --threads LIST        --bandwidth_scaling: load-thread counts, the first N CPUs of -k\n"
"  --sizes LIST          --working_set: buffer sizes in KiB (4 to 4194304, as -b)\n"
"  --plan_only           suite modes: print the figures that would be measured (nodes, CPUs), measure nothing\n"
"  --json                print one JSON object with every row instead of the MLC-style table\n"
"  -e, -r, -X            accepted for MLC compatibility; no effect (prefetchers are never changed,\n"
"                        the chase is always random, one thread per listed CPU)\n"
"  -h, --help            this text;  --version  the engine version\n"
"\n"
"exit status: 0 ok, 1 runtime failure, 2 bad arguments\n", f);
}

static int parse_u64(const char *s, uint64_t *out)
{
    if (!s || !*s || *s == '-' || *s == '+')
        return -1;
    for (const char *p = s; *p; p++)
        if (*p < '0' || *p > '9')
            return -1;
    errno = 0;
    unsigned long long v = strtoull(s, NULL, 10);
    if (errno)
        return -1;
    *out = v;
    return 0;
}

static int parse_delay(const char *s, uint64_t *out, char *err, size_t errlen)
{
    if (!s || !*s) {
        snprintf(err, errlen, "missing injection delay");
        return -1;
    }
    if (s[0] == '-') {
        snprintf(err, errlen, "invalid injection delay '%s': delays must not be negative", s);
        return -1;
    }
    if (parse_u64(s, out) < 0 || *out > MAX_DELAY_VALUE) {
        snprintf(err, errlen, "invalid injection delay '%s': expected an integer from 0 to %llu", s,
                 (unsigned long long)MAX_DELAY_VALUE);
        return -1;
    }
    return 0;
}

int parse_cpu_list(const char *s, int *cpus, int max, char *err, size_t errlen)
{
    int n = 0;
    const char *p = s;
    if (!s || !*s) {
        snprintf(err, errlen, "empty CPU list");
        return -1;
    }
    while (*p) {
        char *end;
        if (*p < '0' || *p > '9')
            goto bad;
        long a = strtol(p, &end, 10), b = a;
        p = end;
        if (*p == '-') {
            p++;
            if (*p < '0' || *p > '9')
                goto bad;
            b = strtol(p, &end, 10);
            p = end;
        }
        if (b < a || b >= MAX_CPUS)
            goto bad;
        for (long c = a; c <= b; c++) {
            for (int i = 0; i < n; i++)
                if (cpus[i] == c) {
                    snprintf(err, errlen, "invalid CPU list '%s': CPU %ld listed twice", s, c);
                    return -1;
                }
            if (n >= max)
                goto bad;
            cpus[n++] = (int)c;
        }
        if (*p == ',')
            p++;
        else if (*p)
            goto bad;
    }
    return n;
bad:
    snprintf(err, errlen, "invalid CPU list '%s': expected e.g. 0-3,6", s);
    return -1;
}

/* value of an option: attached ("-d0", "--seed=3") or the next argument */
static const char *optval(int argc, char **argv, int *i, const char *attached)
{
    if (attached && *attached)
        return attached;
    if (*i + 1 < argc)
        return argv[++*i];
    return NULL;
}

/* ---- one handler per option: 0 ok, 1 done (text printed, exit 0), 2 bad value (message in err) ---- */
typedef int (*opt_fn)(struct opts *o, const char *v, char *err, size_t errlen);

static int opt_help(struct opts *o, const char *v, char *err, size_t errlen)
{
    (void)o, (void)v, (void)err, (void)errlen;
    print_usage(stdout);
    return 1;
}

static int opt_version(struct opts *o, const char *v, char *err, size_t errlen)
{
    (void)o, (void)v, (void)err, (void)errlen;
    printf("profiler-tui memlat v%s\n", MEMLAT_VERSION);
    return 1;
}

static int opt_plan_only(struct opts *o, const char *v, char *err, size_t errlen)
{
    (void)v, (void)err, (void)errlen;
    o->plan_only = 1;
    return 0;
}

/* "1,2,4": integers in [lo, hi], each once, no empty item; the count, or -1 with err set */
int parse_u64_list(const char *v, uint64_t *out, int max, uint64_t lo, uint64_t hi, const char *what, char *err,
                   size_t errlen)
{
    int n = 0;
    const char *p = v;
    if (!v || !*v)
        goto bad;
    while (*p) {
        char tok[32];
        size_t len = strcspn(p, ",");
        if (len == 0 || len >= sizeof tok)
            goto bad;
        memcpy(tok, p, len);
        tok[len] = 0;
        uint64_t x;
        if (parse_u64(tok, &x) < 0 || x < lo || x > hi)
            goto bad;
        for (int i = 0; i < n; i++)
            if (out[i] == x) {
                snprintf(err, errlen, "invalid %s '%s': %llu listed twice", what, v, (unsigned long long)x);
                return -1;
            }
        if (n >= max) {
            snprintf(err, errlen, "invalid %s '%s': at most %d values", what, v, max);
            return -1;
        }
        out[n++] = x;
        p += len;
        if (*p == ',' && !*++p)
            goto bad;   /* a trailing comma */
    }
    return n;
bad:
    snprintf(err, errlen, "invalid %s '%s': expected a comma-separated list of integers from %llu to %llu", what,
             v ? v : "", (unsigned long long)lo, (unsigned long long)hi);
    return -1;
}

static int opt_threads(struct opts *o, const char *v, char *err, size_t errlen)
{
    uint64_t t[MAX_CPUS];
    int n = parse_u64_list(v, t, MAX_CPUS, 1, MAX_CPUS, "--threads", err, errlen);
    if (n < 0)
        return 2;
    for (int i = 0; i < n; i++)
        o->threads_list[i] = (int)t[i];
    o->nthreads = n;
    return 0;
}

static int opt_sizes(struct opts *o, const char *v, char *err, size_t errlen)
{
    int n = parse_u64_list(v, o->sizes_kib, MAX_SIZES, 4, MAX_BUFFER_KIB, "--sizes (KiB, at most 4 GiB as -b)", err,
                           errlen);
    if (n < 0)
        return 2;
    o->nsizes = n;
    return 0;
}

static int opt_count_check(struct opts *o, const char *v, char *err, size_t errlen)
{
    if (parse_u64(v, &o->count_steps) < 0 || o->count_steps == 0 || o->count_steps > (1u << 24)) {
        snprintf(err, errlen, "invalid --count_check '%s': expected a step count from 1 to %u", v ? v : "", 1u << 24);
        return 2;
    }
    return 0;
}

static int opt_windows(struct opts *o, const char *v, char *err, size_t errlen)
{
    uint64_t n;
    if (parse_u64(v, &n) < 0 || n < 1 || n > MAX_WINDOWS) {
        snprintf(err, errlen, "invalid --windows '%s': expected a number of sub-windows from 1 to %d", v ? v : "",
                 MAX_WINDOWS);
        return 2;
    }
    o->windows = (int)n;
    o->windows_given = 1;
    return 0;
}

static int opt_json(struct opts *o, const char *v, char *err, size_t errlen)
{
    (void)v, (void)err, (void)errlen;
    o->json = 1;
    return 0;
}

static int opt_no_huge_pages(struct opts *o, const char *v, char *err, size_t errlen)
{
    (void)v, (void)err, (void)errlen;
    o->huge_pages = 0;
    return 0;
}

static int opt_seed(struct opts *o, const char *v, char *err, size_t errlen)
{
    if (parse_u64(v, &o->seed) < 0) {
        snprintf(err, errlen, "invalid --seed '%s': expected a non-negative integer", v ? v : "");
        return 2;
    }
    return 0;
}

static int opt_mem_node(struct opts *o, const char *v, char *err, size_t errlen)
{
    uint64_t n;
    if (parse_u64(v, &n) < 0 || n >= MAX_NODES) {
        snprintf(err, errlen, "invalid --mem_node '%s': expected a NUMA node number from 0 to %d", v ? v : "",
                 MAX_NODES - 1);
        return 2;
    }
    o->mem_node = (int)n;
    return 0;
}

static int opt_tlb_locality(struct opts *o, const char *v, char *err, size_t errlen)
{
    if (parse_u64(v, &o->tlb_locality_kib) < 0 || o->tlb_locality_kib > (1ULL << 30)) {
        snprintf(err, errlen, "invalid --tlb_locality '%s': expected KiB (0 = global random chase)", v ? v : "");
        return 2;
    }
    return 0;
}

/* seconds in [lo, hi], written as plain decimal ("2", "0.25", ".5"); -1 for anything else.  strtod alone would
 * also take "0x10" (16 s), "1e1", "inf", "nan" and leading blanks: the digits are checked first. */
static double parse_seconds(const char *v, double lo, double hi)
{
    if (!v || !*v)
        return -1;
    int digits = 0, dots = 0;
    for (const char *p = v; *p; p++) {
        if (*p >= '0' && *p <= '9')
            digits++;
        else if (*p == '.' && !dots++)
            continue;
        else
            return -1;
    }
    if (!digits || strlen(v) > 32)
        return -1;
    char *end = NULL;
    double s = strtod(v, &end);
    if (end == v || *end || !(s >= lo && s <= hi))
        return -1;
    return s;
}

static int opt_warmup(struct opts *o, const char *v, char *err, size_t errlen)
{
    double w = parse_seconds(v, 0, 600);
    if (w < 0) {
        snprintf(err, errlen, "invalid --warmup '%s': expected plain decimal seconds from 0 to 600", v ? v : "");
        return 2;
    }
    o->warmup = w;
    return 0;
}

static int opt_reads(struct opts *o, const char *v, char *err, size_t errlen)
{
    (void)v, (void)err, (void)errlen;
    o->traffic_code = 0;
    o->traffic_given = 1;
    return 0;
}

static int opt_ignored(struct opts *o, const char *v, char *err, size_t errlen)
{
    (void)o, (void)v, (void)err, (void)errlen;
    return 0;
}

static int opt_traffic(struct opts *o, const char *v, char *err, size_t errlen)
{
    uint64_t c;
    if (parse_u64(v, &c) < 0 || c > 1000 || c == 0 || !traffic_by_code((int)c)) {
        char codes[64];
        traffic_valid_codes(codes, sizeof codes);
        snprintf(err, errlen, "invalid traffic type -W '%s': valid codes are %s (or -R for all reads)",
                 v ? v : "", codes);
        return 2;
    }
    o->traffic_code = (int)c;
    o->traffic_given = 1;
    return 0;
}

static int opt_delay(struct opts *o, const char *v, char *err, size_t errlen)
{
    if (parse_delay(v, &o->delays[0], err, errlen) < 0)
        return 2;
    o->ndelays = 1;
    o->delays_given = 1;
    return 0;
}

static int opt_delay_list(struct opts *o, const char *v, char *err, size_t errlen)
{
    if (!v || !*v) {
        snprintf(err, errlen, "missing delay list after -D (e.g. -D 0,100,1000)");
        return 2;
    }
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", v);
    int n = 0;
    char *save = NULL;
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (n >= MAX_DELAYS) {
            snprintf(err, errlen, "too many delays in -D (at most %d)", MAX_DELAYS);
            return 2;
        }
        if (parse_delay(tok, &o->delays[n], err, errlen) < 0)
            return 2;
        n++;
    }
    if (n == 0 || v[strlen(v) - 1] == ',' || v[0] == ',' || strstr(v, ",,")) {
        snprintf(err, errlen, "invalid delay list '%s': expected e.g. 0,100,1000", v);
        return 2;
    }
    o->ndelays = n;
    o->delays_given = 1;
    return 0;
}

static int opt_stride(struct opts *o, const char *v, char *err, size_t errlen)
{
    uint64_t s;
    if (parse_u64(v, &s) < 0 || s < 64 || s > 4096 || (s & (s - 1))) {
        snprintf(err, errlen, "invalid stride -l '%s': must be a power of two from 64 to 4096 bytes "
                 "(e.g. 64, 128, 256)", v ? v : "");
        return 2;
    }
    o->stride = (int)s;
    return 0;
}

static int opt_buffer(struct opts *o, const char *v, char *err, size_t errlen)
{
    if (parse_u64(v, &o->buffer_kib) < 0 || o->buffer_kib < 4 || o->buffer_kib > MAX_BUFFER_KIB) {
        snprintf(err, errlen, "invalid buffer size -b '%s': expected KiB per thread from 4 to %llu (4 GiB: 8x the "
                 "largest last-level cache a thread fills today; a larger buffer measures nothing more)", v ? v : "",
                 MAX_BUFFER_KIB);
        return 2;
    }
    return 0;
}

static int opt_duration(struct opts *o, const char *v, char *err, size_t errlen)
{
    double t = parse_seconds(v, 0.01, 3600);
    if (t < 0) {
        snprintf(err, errlen, "invalid duration -t '%s': expected plain decimal seconds from 0.01 to 3600", v ? v : "");
        return 2;
    }
    o->seconds = t;
    return 0;
}

static int opt_cpus(struct opts *o, const char *v, char *err, size_t errlen)
{
    int n = parse_cpu_list(v, o->cpus, MAX_CPUS, err, errlen);
    if (n < 0)
        return 2;
    o->ncpus = n;
    return 0;
}

/* Every option; a mode flag has no handler, only its mode (and --count_check both). Long options take their value attached ("--seed=3") or as the next argument; a long
 * option without a value ignores anything attached ("--json=x" is --json). A one-letter option with a
 * value takes it attached ("-d0") or next ("-d 0"); one without a value must stand alone ("-Rx" is refused). */
static const struct option_def {
    const char *name;
    int has_value;
    opt_fn apply;
    enum mode mode;
} OPTIONS[] = {
    {"--help", 0, opt_help, MODE_NONE},
    {"--version", 0, opt_version, MODE_NONE},
    {"--idle_latency", 0, NULL, MODE_IDLE},
    {"--loaded_latency", 0, NULL, MODE_LOADED},
    {"--bandwidth_only", 0, NULL, MODE_BANDWIDTH},
    {"--count_check", 1, opt_count_check, MODE_COUNT_CHECK},
    {"--peak_injection_bandwidth", 0, NULL, MODE_PEAK},
    {"--max_bandwidth", 0, NULL, MODE_PEAK},
    {"--bandwidth_scaling", 0, NULL, MODE_SCALING},
    {"--latency_matrix", 0, NULL, MODE_LAT_MATRIX},
    {"--bandwidth_matrix", 0, NULL, MODE_BW_MATRIX},
    {"--c2c_latency", 0, NULL, MODE_C2C},
    {"--working_set", 0, NULL, MODE_WSET},
    {"--threads", 1, opt_threads, MODE_NONE},
    {"--sizes", 1, opt_sizes, MODE_NONE},
    {"--plan_only", 0, opt_plan_only, MODE_NONE},
    {"--json", 0, opt_json, MODE_NONE},
    {"--no_huge_pages", 0, opt_no_huge_pages, MODE_NONE},
    {"--seed", 1, opt_seed, MODE_NONE},
    {"--tlb_locality", 1, opt_tlb_locality, MODE_NONE},
    {"--mem_node", 1, opt_mem_node, MODE_NONE},
    {"--warmup", 1, opt_warmup, MODE_NONE},
    {"--windows", 1, opt_windows, MODE_NONE},
    {"-h", 0, opt_help, MODE_NONE},
    {"-R", 0, opt_reads, MODE_NONE},
    {"-e", 0, opt_ignored, MODE_NONE},
    {"-r", 0, opt_ignored, MODE_NONE},
    {"-X", 0, opt_ignored, MODE_NONE},
    {"-W", 1, opt_traffic, MODE_NONE},
    {"-d", 1, opt_delay, MODE_NONE},
    {"-D", 1, opt_delay_list, MODE_NONE},
    {"-l", 1, opt_stride, MODE_NONE},
    {"-b", 1, opt_buffer, MODE_NONE},
    {"-t", 1, opt_duration, MODE_NONE},
    {"-k", 1, opt_cpus, MODE_NONE},
};

static const struct option_def *find_option(const char *name, size_t len)
{
    for (size_t i = 0; i < sizeof OPTIONS / sizeof OPTIONS[0]; i++)
        if (strlen(OPTIONS[i].name) == len && !strncmp(OPTIONS[i].name, name, len))
            return &OPTIONS[i];
    return NULL;
}

static void set_defaults(struct opts *o, int argc, char **argv)
{
    memset(o, 0, sizeof *o);
    o->stride = 64;
    o->seconds = 2.0;
    o->warmup = -1;
    o->windows = DEFAULT_WINDOWS;
    o->huge_pages = 1;
    o->seed = 1;
    o->mem_node = -1;
    o->ndelays = (int)(sizeof DEFAULT_DELAYS / sizeof DEFAULT_DELAYS[0]);
    memcpy(o->delays, DEFAULT_DELAYS, sizeof DEFAULT_DELAYS);
    size_t used = 0;
    for (int i = 1; i < argc && used < sizeof o->cmdline; i++)
        used += (size_t)snprintf(o->cmdline + used, sizeof o->cmdline - used, "%s%s", i > 1 ? " " : "", argv[i]);
}

/* argv[*i]: find its option, take its value (possibly argv[*i + 1]) and apply it */
static int parse_one(int argc, char **argv, int *i, struct opts *o, char *err, size_t errlen)
{
    const char *a = argv[*i], *att;
    const struct option_def *def;
    if (a[0] == '-' && a[1] == '-') {
        const char *eq = strchr(a, '=');
        def = find_option(a, eq ? (size_t)(eq - a) : strlen(a));
        att = eq ? eq + 1 : NULL;
    } else {
        if (a[0] != '-' || a[1] == 0) {
            snprintf(err, errlen, "unknown argument '%s' (see --help)", a);
            return 2;
        }
        def = find_option(a, 2);
        att = a[2] ? a + 2 : NULL;
        if (def && !def->has_value && att) {
            snprintf(err, errlen, "unknown argument '%s' (see --help)", a);
            return 2;
        }
    }
    if (!def) {
        snprintf(err, errlen, "unknown option '%s' (see --help)", a);
        return 2;
    }
    if (def->mode)
        o->mode = def->mode;
    return def->apply ? def->apply(o, def->has_value ? optval(argc, argv, i, att) : NULL, err, errlen) : 0;
}

static const char *mode_flag(enum mode m)
{
    static const char *names[] = {"", "--idle_latency", "--loaded_latency", "--bandwidth_only", "--count_check",
                                  "--peak_injection_bandwidth", "--bandwidth_scaling", "--latency_matrix",
                                  "--bandwidth_matrix", "--c2c_latency", "--working_set"};
    return names[m];
}

/* options that belong to one mode, and the suite modes' limits: a usage error, not silently ignored */
static int check_combination(const struct opts *o, char *err, size_t errlen)
{
    int suite = o->mode >= MODE_PEAK;
    const char *m = mode_flag(o->mode);
    if (o->nthreads && o->mode != MODE_SCALING)
        snprintf(err, errlen, "--threads belongs to --bandwidth_scaling, not %s", m);
    else if (o->nsizes && o->mode != MODE_WSET)
        snprintf(err, errlen, "--sizes belongs to --working_set, not %s", m);
    else if (o->plan_only && !suite)
        snprintf(err, errlen, "--plan_only belongs to the suite modes (--peak_injection_bandwidth .. --working_set), "
                 "not %s", m);
    else if (suite && o->seconds < MIN_WINDOW_NEW_MODES)
        snprintf(err, errlen, "invalid duration -t %g for %s: at least %.2f seconds", o->seconds, m,
                 MIN_WINDOW_NEW_MODES);
    else if (suite && o->delays_given)
        snprintf(err, errlen, "-d/-D do not apply to %s (it runs its load threads at delay 0)", m);
    else if (suite && o->mem_node >= 0)
        snprintf(err, errlen, "--mem_node does not apply to %s (it places its buffers itself)", m);
    else if (suite && o->tlb_locality_kib)
        snprintf(err, errlen, "--tlb_locality does not apply to %s", m);
    else if (o->mode == MODE_C2C && o->buffer_kib)
        snprintf(err, errlen, "-b does not apply to --c2c_latency (its lines lie in a 64 KiB region)");
    else if (o->mode == MODE_WSET && o->buffer_kib && o->nsizes)
        snprintf(err, errlen, "give either --sizes or -b (the largest size of the default range) to --working_set");
    else if (o->windows_given && (o->mode == MODE_C2C || o->mode == MODE_WSET || o->mode == MODE_COUNT_CHECK))
        snprintf(err, errlen, "--windows does not apply to %s (%s)", m, o->mode == MODE_C2C ?
                 "it always takes the median of 5 windows" : o->mode == MODE_WSET ?
                 "each size is one window" : "it measures nothing over time");
    else if ((o->mode == MODE_C2C || o->mode == MODE_WSET || o->mode == MODE_LAT_MATRIX) && o->traffic_given)
        snprintf(err, errlen, "-R/-W do not apply to %s (it runs no load threads)", m);
    else
        return 0;
    return 2;
}

int parse_args(int argc, char **argv, struct opts *o, char *err, size_t errlen)
{
    set_defaults(o, argc, argv);
    for (int i = 1; i < argc; i++) {
        int rc = parse_one(argc, argv, &i, o, err, errlen);
        if (rc)
            return rc;
    }
    if (o->mode == MODE_NONE) {
        snprintf(err, errlen, "no mode given: use --idle_latency, --loaded_latency or --bandwidth_only (see --help)");
        return 2;
    }
    return check_combination(o, err, errlen);
}
