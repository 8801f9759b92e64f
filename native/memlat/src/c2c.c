/* --c2c_latency: cache-to-cache transfer latency between a writer thread and a reader thread, pinned on two CPUs.
 *
 * One round k, with a fixed set of C2C_LINES lines (random lines of a 64 KiB region, chained in random order: each
 * line's first word points to the next):
 *   writer: waits until the reader allows round k, flushes the set from every cache (clflush, x86), then either
 *           stores to every line (HITM: the lines end Modified in the writer's cache) or loads every line (HIT: the
 *           lines end clean in the writer's cache), then publishes k;
 *   reader: waits for k, reads the time stamp counter, follows the chain through the set (dependent loads, so one
 *           line's transfer at a time), reads the counter again, and allows round k + 1.
 * A round's figure is (t1 - t0) / C2C_LINES: the time of one line transfer from the writer's cache to the reader,
 * with 1/C2C_LINES of the two counter reads included (nothing is subtracted). The run is a warm-up, then C2C_WINDOWS
 * windows of -t / C2C_WINDOWS seconds each; a window's figure is its median round (a round in which the reader was
 * preempted or interrupted is a long outlier that a mean would spread over every transfer); the figure printed is
 * the median of the windows. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "memlat.h"
#include "json.h"
#include "run.h"
#if (defined(__x86_64__) || defined(__i386__)) && !defined(MEMLAT_PORTABLE)   /* portable: tests the pool path */
#include <x86intrin.h>
#define HAVE_CLFLUSH 1
#else
#define HAVE_CLFLUSH 0
#endif

#define C2C_LINES 16
#define C2C_WINDOWS 5
#define C2C_HIST 65536                /* ticks (or ns) per round, one bin each: a round's 16 transfers fit easily */
#define C2C_REGION (64 * 1024)       /* with clflush: the lines are picked from this many bytes */
#define C2C_BUFFER (2UL << 20)        /* one huge page's worth, so the region can be a huge page */
/* without clflush a set must not be in the reader's caches when its turn comes again: 65536 sets in 64 MiB (more
 * than the last-level cache of most machines), taken in a scrambled order so no prefetcher runs ahead of it; a set
 * is one line at the same offset in each of 16 consecutive 4 KiB pages, chained in random order */
#define C2C_POOL_SETS 65536
#define C2C_POOL_BYTES ((size_t)C2C_POOL_SETS * C2C_LINES * LINE_BYTES)

enum { HIT = 0, HITM = 1 };

struct c2c_job {
    _Atomic uint64_t ready __attribute__((aligned(128)));   /* the round the writer finished */
    _Atomic uint64_t go __attribute__((aligned(128)));      /* the round the reader allows */
    _Atomic int stop __attribute__((aligned(128)));
    int kind, writer_cpu, reader_cpu, node;                  /* node: bind the buffer there, -1 = no binding */
    int huge;
    double warmup, seconds, ghz;
    char *buf;
    size_t bytes;
    uint32_t *first;                                         /* the chain's first line, per set: offset */
    int nsets;
    char err[256];
    double window_ns[C2C_WINDOWS];                           /* each window's median round, per transfer */
    double window_mean_ns[C2C_WINDOWS];                      /* each window's mean round, per transfer */
    uint64_t transfers;
    struct page_nodes placed;
};

struct c2c_fig {
    int kind, remote, writer_node, reader_node, home_reader, writer_cpu, reader_cpu;
    double latency_ns, window_ns[C2C_WINDOWS], window_mean_ns[C2C_WINDOWS];
    uint64_t transfers;
    struct page_nodes placed;
};

static inline void cpu_relax(void)
{
#if HAVE_CLFLUSH
    _mm_pause();
#endif
}

/* a time stamp that waits for the loads before it and is not overtaken by the loads after it */
static inline uint64_t stamp(void)
{
#if HAVE_CLFLUSH
    _mm_lfence();
    uint64_t t = __rdtsc();
    _mm_lfence();
    return t;
#else
    return (uint64_t)now_ns();
#endif
}

static uint64_t rnd(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

/* chains the C2C_LINES lines at these offsets of buf in the given order, the last back to the first */
static uint32_t chain_lines(char *buf, const size_t *off)
{
    for (int i = 0; i < C2C_LINES; i++)
        *(char **)(buf + off[i]) = buf + off[(i + 1) % C2C_LINES];
    return (uint32_t)off[0];
}

/* with clflush: C2C_LINES distinct random lines of the first C2C_REGION bytes, in random order */
static uint32_t make_set(char *buf, uint64_t *seed)
{
    size_t off[C2C_LINES];
    for (int i = 0; i < C2C_LINES; i++) {
        int dup;
        do {
            off[i] = (size_t)(rnd(seed) % (C2C_REGION / LINE_BYTES)) * LINE_BYTES;
            dup = 0;
            for (int k = 0; k < i; k++)
                dup |= off[k] == off[i];
        } while (dup);
    }
    return chain_lines(buf, off);
}

/* without clflush: set s is line s % 64 of each of 16 consecutive pages, in random order */
static uint32_t make_pool_set(char *buf, size_t s, uint64_t *seed)
{
    size_t off[C2C_LINES];
    size_t base = s / 64 * C2C_LINES * 4096 + s % 64 * LINE_BYTES;
    for (int i = 0; i < C2C_LINES; i++)
        off[i] = base + (size_t)i * 4096;
    for (int i = C2C_LINES - 1; i > 0; i--) {
        size_t k = (size_t)(rnd(seed) % (uint64_t)(i + 1)), t = off[i];
        off[i] = off[k];
        off[k] = t;
    }
    return chain_lines(buf, off);
}

/* round k's set: an odd multiplier modulo a power of two visits every set once per lap, in a scrambled order */
static char *set_of_round(const struct c2c_job *j, uint64_t k)
{
    size_t s = (size_t)((k * 0x9E3779B1ULL) & (uint64_t)(j->nsets - 1));
    return j->buf + j->first[s];
}

static void writer_round(struct c2c_job *j, char *first, uint64_t k)
{
    char *p = first;
#if HAVE_CLFLUSH
    for (int i = 0; i < C2C_LINES; i++, p = *(char **)p)
        _mm_clflush(p);
    _mm_mfence();
#endif
    p = first;
    uint64_t sink = 0;
    for (int i = 0; i < C2C_LINES; i++) {
        char *next = *(char **)p;      /* HITM: the load brings the line in, the store makes it Modified */
        if (j->kind == HITM)
            ((volatile uint64_t *)p)[1] = k;
        else
            sink += ((volatile uint64_t *)p)[1];
        p = next;
    }
    __asm__ volatile("" ::"r"(sink));
}

static void *writer_main(void *arg)
{
    struct c2c_job *j = arg;
    if (pin_to_cpu(j->writer_cpu) != 0) {
        snprintf(j->err, sizeof j->err, "cannot pin the writer thread to CPU %d", j->writer_cpu);
        atomic_store(&j->stop, 1);
        return NULL;
    }
    for (uint64_t k = 1;; k++) {
        while (atomic_load_explicit(&j->go, memory_order_acquire) < k)
            if (atomic_load_explicit(&j->stop, memory_order_relaxed))
                return NULL;
            else
                cpu_relax();
        writer_round(j, set_of_round(j, k), k);
        atomic_store_explicit(&j->ready, k, memory_order_release);
    }
}

/* one round as the reader: the ticks of C2C_LINES dependent loads */
static uint64_t reader_round(struct c2c_job *j, uint64_t k)
{
    while (atomic_load_explicit(&j->ready, memory_order_acquire) < k)
        cpu_relax();
    char *p = set_of_round(j, k);
    uint64_t t0 = stamp();
    for (int i = 0; i < C2C_LINES; i++)
        p = *(char *volatile *)p;
    uint64_t t1 = stamp();
    __asm__ volatile("" ::"r"(p));
    atomic_store_explicit(&j->go, k + 1, memory_order_release);
    return t1 - t0;
}

/* the median of the rounds counted in hist (ticks per round; the last bin holds every longer round) */
static double hist_median(const uint32_t *hist, uint64_t rounds)
{
    uint64_t seen = 0;
    for (size_t b = 0; b < C2C_HIST; b++) {
        seen += hist[b];
        if (2 * seen >= rounds)
            return (double)b;
    }
    return (double)(C2C_HIST - 1);
}

static void reader_measure(struct c2c_job *j)
{
    static uint32_t hist[C2C_HIST];
    uint64_t k = 1;
    atomic_store_explicit(&j->go, 1, memory_order_release);
    for (double end = now_ns() + j->warmup * 1e9; now_ns() < end; k++)
        reader_round(j, k);
    for (int w = 0; w < C2C_WINDOWS; w++) {
        uint64_t ticks = 0, rounds = 0;
        memset(hist, 0, sizeof hist);
        for (double end = now_ns() + j->seconds / C2C_WINDOWS * 1e9; now_ns() < end || rounds == 0; k++, rounds++) {
            uint64_t t = reader_round(j, k);
            ticks += t;
            hist[t < C2C_HIST ? t : C2C_HIST - 1]++;
        }
        double per_ns = HAVE_CLFLUSH ? 1 / j->ghz : 1.0;
        j->window_ns[w] = hist_median(hist, rounds) * per_ns / C2C_LINES;
        j->window_mean_ns[w] = (double)ticks * per_ns / (double)(rounds * C2C_LINES);
        j->transfers += rounds * C2C_LINES;
    }
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* maps the buffer (bound to j->node before the first touch when asked), touches it on the writer's CPU, builds
 * the sets, and verifies the placement; 0 ok, -1 with j->err */
static int c2c_buffer(struct c2c_job *j)
{
    uint64_t seed = 1;
    j->nsets = HAVE_CLFLUSH ? 1 : C2C_POOL_SETS;
    j->bytes = HAVE_CLFLUSH ? C2C_BUFFER : C2C_POOL_BYTES;
    j->buf = alloc_buffer(j->bytes, j->huge);
    j->first = malloc(sizeof *j->first * (size_t)j->nsets);
    if (!j->buf || !j->first) {
        snprintf(j->err, sizeof j->err, "cannot map the cache-to-cache buffer");
        return -1;
    }
    if (j->node >= 0 && bind_to_node(j->buf, j->bytes, j->node, j->err, sizeof j->err) != 0)
        return -1;
    if (pin_to_cpu(j->writer_cpu) != 0) {
        snprintf(j->err, sizeof j->err, "cannot pin to CPU %d", j->writer_cpu);
        return -1;
    }
    memset(j->buf, 0, j->bytes);
    for (int i = 0; i < j->nsets; i++)
        j->first[i] = HAVE_CLFLUSH ? make_set(j->buf, &seed) : make_pool_set(j->buf, (size_t)i, &seed);
    if (j->node >= 0 && verify_node(j->buf, j->bytes, j->node, &j->placed, j->err, sizeof j->err) != 0)
        return -1;
    return 0;
}

/* one figure: HIT or HITM between two CPUs; the median of the windows, ns per line transfer */
static void c2c_measure(struct c2c_job *j, struct c2c_fig *f)
{
    pthread_t th;
    if (c2c_buffer(j) != 0)
        die_runtime(j->err);
    if (pin_to_cpu(j->reader_cpu) != 0)
        die_runtime("cannot pin the reader thread");
    if (pthread_create(&th, NULL, writer_main, j) != 0)
        die_runtime("cannot start the writer thread");
    reader_measure(j);
    atomic_store(&j->stop, 1);
    pthread_join(th, NULL);
    if (j->err[0])
        die_runtime(j->err);
    free_buffer(j->buf, j->bytes);
    free(j->first);
    memcpy(f->window_ns, j->window_ns, sizeof f->window_ns);
    memcpy(f->window_mean_ns, j->window_mean_ns, sizeof f->window_mean_ns);
    double sorted[C2C_WINDOWS];
    memcpy(sorted, j->window_ns, sizeof sorted);
    qsort(sorted, C2C_WINDOWS, sizeof sorted[0], cmp_double);
    f->latency_ns = sorted[C2C_WINDOWS / 2];
    f->transfers = j->transfers;
    f->placed = j->placed;
}

/* A figure whose windows disagree by more than C2C_STEADY: said on a '***' line just before the figure (readers
 * attach it to that figure).  The threads stay pinned, so a jump between windows means the cores behind the CPUs
 * changed: in a VM the hypervisor may move vCPUs between cores of one L3 and cores of different dies. */
#define C2C_STEADY 1.10
static void unsteady_note(const struct c2c_fig *f, const char *what)
{
    double lo = f->window_ns[0], hi = f->window_ns[0];
    for (int i = 1; i < C2C_WINDOWS; i++) {
        lo = f->window_ns[i] < lo ? f->window_ns[i] : lo;
        hi = f->window_ns[i] > hi ? f->window_ns[i] : hi;
    }
    if (hi > lo * C2C_STEADY)
        printf("*** Unsteady c2c figure (%s): its %d windows ranged from %.1f to %.1f ns; the cores behind CPUs %d and "
               "%d may have changed during the run (a hypervisor moving vCPUs)\n", what, C2C_WINDOWS, lo, hi,
               f->writer_cpu, f->reader_cpu);
}

struct c2c_run {
    const struct opts *o;
    int cpus[MAX_CPUS], ncpus;
    struct topo topo;
    int have_topo;
    int wnodes[MAX_NODES], nwnodes;      /* nodes with a CPU of -k */
    int first_cpu[MAX_NODES];
    double ghz, warmup;
    struct c2c_fig *figs;
    int nfigs;
};

static struct c2c_fig *figure(struct c2c_run *r, int kind, int wcpu, int rcpu, int node)
{
    static struct c2c_job j;
    memset(&j, 0, sizeof j);
    j.kind = kind;
    j.writer_cpu = wcpu;
    j.reader_cpu = rcpu;
    j.node = node;
    j.huge = r->o->huge_pages;
    j.warmup = r->warmup;
    j.seconds = r->o->seconds;
    j.ghz = r->ghz;
    struct c2c_fig *f = &r->figs[r->nfigs++];
    memset(f, 0, sizeof *f);
    f->kind = kind;
    f->writer_cpu = wcpu;
    f->reader_cpu = rcpu;
    c2c_measure(&j, f);
    return f;
}

/* the local pair: the first CPU of -k writes, the next CPU of -k on its node reads (else the second CPU) */
static void local_pair(const struct c2c_run *r, int *w, int *rd)
{
    *w = r->cpus[0];
    *rd = r->cpus[1];
    if (!r->have_topo)
        return;
    for (int i = 1; i < r->ncpus; i++)
        if (r->topo.cpu_node[r->cpus[i]] == r->topo.cpu_node[*w] && r->topo.cpu_node[*w] >= 0) {
            *rd = r->cpus[i];
            return;
        }
}

static void remote_nodes(struct c2c_run *r)
{
    char err[256];
    r->have_topo = topo_read(&r->topo, err, sizeof err) == 0;
    if (!r->have_topo)
        return;
    for (int i = 0; i < r->topo.nnodes; i++) {
        int node = r->topo.nodes[i];
        for (int c = 0; c < r->ncpus; c++)
            if (r->topo.cpu_node[r->cpus[c]] == node) {
                r->first_cpu[node] = r->cpus[c];
                r->wnodes[r->nwnodes++] = node;
                break;
            }
    }
}

static void remote_matrix(struct c2c_run *r, int home_reader)
{
    const char *home = home_reader ? "reader" : "writer";
    int text = !r->o->json && !r->o->plan_only;
    if (text) {
        printf("Remote Socket L2->L2 HITM latency (data address homed in %s socket)\n\t\t\tReader Numa Node\n"
               "Writer Numa Node", home);
        for (int b = 0; b < r->nwnodes; b++)
            printf("%6d\t", r->wnodes[b]);
        printf("\n");
        fflush(stdout);
    }
    for (int a = 0; a < r->nwnodes; a++) {
        struct c2c_fig *row[MAX_NODES];
        for (int b = 0; b < r->nwnodes; b++) {
            int wn = r->wnodes[a], rn = r->wnodes[b], node = home_reader ? rn : wn;
            row[b] = NULL;
            if (wn == rn)
                continue;
            if (r->o->plan_only) {
                printf("Plan: c2c hitm, writer node %d (CPU %d), reader node %d (CPU %d), memory on node %d (%s)\n", wn,
                       r->first_cpu[wn], rn, r->first_cpu[rn], node, home);
                continue;
            }
            row[b] = figure(r, HITM, r->first_cpu[wn], r->first_cpu[rn], node);
            row[b]->remote = 1;
            row[b]->writer_node = wn;
            row[b]->reader_node = rn;
            row[b]->home_reader = home_reader;
        }
        if (!text)
            continue;
        for (int b = 0; b < r->nwnodes; b++) {
            if (!row[b])
                continue;
            char pages[256];
            placement_str(&row[b]->placed, pages, sizeof pages);
            printf("Placement verified: writer node %d, reader node %d, memory node %d: pages %s (%zu-byte pages; "
                   "/proc/self/numa_maps)\n", row[b]->writer_node, row[b]->reader_node, home_reader ? row[b]->reader_node
                   : row[b]->writer_node, pages, row[b]->placed.page_bytes);
        }
        for (int b = 0; b < r->nwnodes; b++)
            if (row[b])
                unsteady_note(row[b], "remote HITM");
        printf("%13d\t", r->wnodes[a]);
        for (int b = 0; b < r->nwnodes; b++)
            if (row[b])
                printf("%6.1f\t", row[b]->latency_ns);
            else
                printf("%6s\t", "-");
        printf("\n");
        fflush(stdout);
    }
}

static void c2c_header(const struct c2c_run *r, int w, int rd)
{
    printf("Intel(R) Memory Latency Checker - compatible output: profiler-tui memlat v%s\n", MEMLAT_VERSION);
    printf("Command line parameters: %s\n\n", r->o->cmdline);
    printf("Using %d lines per round (%s, chased in random order), %s, median of %d windows' median rounds, "
           "windows of %.3f s\n", C2C_LINES,
           HAVE_CLFLUSH ? "random lines of a 64 KiB region" : "1 KiB sets", HAVE_CLFLUSH ?
           "flushed with clflush before each round" : "a fresh set each round from a 64 MiB pool", C2C_WINDOWS,
           r->o->seconds / C2C_WINDOWS);
    printf("Measuring cache-to-cache transfer latency (in ns)...\n");
    printf("Using writer thread on CPU %d and reader thread on CPU %d\n", w, rd);
    fflush(stdout);
}

static void c2c_json_fig(struct json *j, const struct c2c_fig *f)
{
    json_array_item(j);
    json_str(j, "c2c", f->kind == HITM ? "hitm" : "hit");
    json_str(j, "scope", f->remote ? "remote" : "local");
    json_int(j, "writer_cpu", f->writer_cpu);
    json_int(j, "reader_cpu", f->reader_cpu);
    if (f->remote) {
        json_int(j, "writer_node", f->writer_node);
        json_int(j, "reader_node", f->reader_node);
        json_str(j, "home", f->home_reader ? "reader" : "writer");
    }
    json_num(j, "latency_ns", f->latency_ns, 2);
    json_u64(j, "transfers", f->transfers);
    json_num_list(j, "window_ns", f->window_ns, C2C_WINDOWS, 2);
    json_num_list(j, "window_mean_ns", f->window_mean_ns, C2C_WINDOWS, 2);
    if (f->remote) {
        json_object_begin(j, "numa");
        json_int(j, "node", f->home_reader ? f->reader_node : f->writer_node);
        json_str(j, "bound_with", "mbind MPOL_BIND");
        json_str(j, "verified_with", "numa_maps");
        json_str(j, "cross_checked_with", "move_pages");
        json_page_nodes(j, &f->placed);
        json_end(j);
    }
    json_end(j);
}

static void c2c_json(const struct c2c_run *r, int w, int rd)
{
    struct json j;
    json_begin(&j, stdout);
    json_head(&j, "c2c", r->o);
    json_int(&j, "writer_cpu", w);
    json_int(&j, "reader_cpu", rd);
    json_int(&j, "lines_per_round", C2C_LINES);
    json_int(&j, "windows", C2C_WINDOWS);
    json_str(&j, "timer", HAVE_CLFLUSH ? "rdtsc (lfence-ordered)" : "clock_gettime");
    json_str(&j, "flush", HAVE_CLFLUSH ? "clflush" : "fresh lines");
    json_fixed(&j, "tsc_ghz", r->ghz, 4);
    json_fixed(&j, "duration_s", r->o->seconds, 3);
    json_fixed(&j, "warmup_s", r->warmup, 3);
    json_bool(&j, "one_node", r->nwnodes < 2);
    json_array_begin(&j, "rows");
    for (int i = 0; i < r->nfigs; i++)
        c2c_json_fig(&j, &r->figs[i]);
    json_array_end(&j);
    json_end(&j);
    fputc('\n', stdout);
}

int c2c_run(const struct opts *o)
{
    static struct c2c_run r;
    int w, rd;
    r.o = o;
    r.ncpus = pick_cpus(o, r.cpus);
    if (r.ncpus < 2)
        die_usage("--c2c_latency needs at least two CPUs in -k (a writer and a reader)");
    remote_nodes(&r);
    local_pair(&r, &w, &rd);
    r.ghz = tsc_ghz();
    if (HAVE_CLFLUSH && !(r.ghz > 0))
        die_runtime("cannot calibrate the time stamp counter");
    r.warmup = o->warmup >= 0 ? o->warmup : (o->seconds * 0.2 < 0.05 ? 0.05 : o->seconds * 0.2 > 0.5 ? 0.5 : o->seconds * 0.2);
    r.figs = calloc(2 + 2 * (size_t)r.nwnodes * (size_t)r.nwnodes, sizeof *r.figs);
    if (!r.figs)
        die_runtime("out of memory");
    if (o->plan_only) {
        printf("Plan: c2c hit and hitm, writer CPU %d, reader CPU %d\n", w, rd);
    } else {
        if (!o->json)
            c2c_header(&r, w, rd);
        struct c2c_fig *hit = figure(&r, HIT, w, rd, -1);
        if (!o->json) {
            unsteady_note(hit, "HIT");
            printf("Local Socket L2->L2 HIT  latency\t%.1f\n", hit->latency_ns);
            fflush(stdout);
        }
        struct c2c_fig *hitm = figure(&r, HITM, w, rd, -1);
        if (!o->json) {
            unsteady_note(hitm, "HITM");
            printf("Local Socket L2->L2 HITM latency\t%.1f\n", hitm->latency_ns);
            fflush(stdout);
        }
    }
    if (r.nwnodes < 2) {
        if (!o->json)
            printf("*** One NUMA node: no remote cache-to-cache figures\n");
    } else {
        remote_matrix(&r, 0);
        remote_matrix(&r, 1);
    }
    if (o->json && !o->plan_only)
        c2c_json(&r, w, rd);
    free(r.figs);
    return 0;
}
