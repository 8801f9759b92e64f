/* Threads and measurement: a pinned latency thread and pinned load threads, each first-touching its own
 * buffers, a common start barrier per point, a warm-up, then a fixed window that every thread measures
 * with its own clocks (wall and thread CPU time) at the moment it sees the phase change.  The window is cut
 * into cfg.windows equal sub-windows: the main thread moves a boundary counter at each cut, and every thread
 * reads its own counters and clocks when it sees the counter move (between two chunks of work, as it checks
 * the phase): nothing pauses, and the whole window's figures are exactly those without sub-windows. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "memlat.h"
#include "engine.h"

enum { PH_WARMUP = 0, PH_MEASURE = 1, PH_STOP = 2 };

/* a thread's counters at a sub-window boundary */
struct mark {
    uint64_t cnt;
    double cpu, wall;
};

struct worker {
    struct engine *e;
    int cpu, is_lat;
    pthread_t th;
    char *buf[3];
    size_t bufsz[3];
    struct kstate ks;
    void *p;
    char err[160];
    _Atomic int in_window;     /* set once the worker started its measurement window */
    uint64_t cnt0, cnt1;
    double cpu0, cpu1, wall0, wall1;
    struct mark *marks;        /* cfg.windows + 1: the window's start, each boundary, its end */
} __attribute__((aligned(64)));

struct engine {
    struct engine_cfg cfg;
    int nworkers;
    struct worker *w;
    pthread_barrier_t bar;
    _Atomic int phase;
    _Atomic int boundary;      /* sub-window boundaries passed in the current window */
    _Atomic int quit;
    uint64_t delay;
};

static void fill_ones(char *p, size_t bytes)
{
    uint64_t *q = (uint64_t *)p;
    for (size_t i = 0; i < bytes / 8; i++)
        q[i] = 1;
}

/* a new buffer, bound to the configured NUMA node before anything touches it */
static char *worker_buffer(struct worker *w, size_t bytes, const char *what)
{
    const struct engine_cfg *c = &w->e->cfg;
    char *p = alloc_buffer(bytes, c->huge_pages);
    if (!p) {
        snprintf(w->err, sizeof w->err, "cannot map %zu MiB for %s", bytes >> 20, what);
        return NULL;
    }
    if (c->mem_node >= 0 && bind_to_node(p, bytes, c->mem_node, w->err, sizeof w->err) != 0) {
        free_buffer(p, bytes);
        return NULL;
    }
    return p;
}

static void worker_setup(struct worker *w)
{
    const struct engine_cfg *c = &w->e->cfg;
    if (pin_to_cpu(w->cpu) != 0) {
        snprintf(w->err, sizeof w->err, "cannot pin a thread to CPU %d", w->cpu);
        return;
    }
    if (w->is_lat) {
        w->bufsz[0] = c->lat_bytes;
        w->buf[0] = worker_buffer(w, w->bufsz[0], "the latency buffer");
        if (!w->buf[0])
            return;
        memset(w->buf[0], 0, w->bufsz[0]);   /* first touch, in order, by the pinned thread */
        w->p = build_chain_grouped(w->buf[0], w->bufsz[0] / (size_t)c->stride, (size_t)c->stride, c->group_lines,
                                   c->seed);
        return;
    }
    int l0, l1, st, nt;
    traffic_lines(c->traffic, &l0, &l1, &st, &nt);
    size_t need[3] = {c->load_bytes, l1 ? c->load_bytes : 0, (st + nt) ? c->load_bytes : 0};
    for (int i = 0; i < 3; i++) {
        if (!need[i])
            continue;
        w->buf[i] = worker_buffer(w, need[i], "a load buffer");
        if (!w->buf[i])
            return;
        w->bufsz[i] = need[i];
        if (i < 2)
            fill_ones(w->buf[i], need[i]);
        else
            memset(w->buf[i], 0, need[i]);
    }
    w->ks.rd0 = w->buf[0];
    w->ks.rd1 = w->buf[1];
    w->ks.wr = w->buf[2];
    w->ks.rsize = c->load_bytes;
    w->ks.wsize = c->load_bytes;
}

/* boundaries marked+1 .. upto passed: one reading of the clocks for all of them (two boundaries seen at once leave
 * an empty sub-window, which engine_measure leaves out); the last boundary marked */
static int mark_boundaries(struct worker *w, int marked, int upto, uint64_t count)
{
    if (upto >= w->e->cfg.windows)   /* the window's end is the thread's own STOP reading */
        upto = w->e->cfg.windows - 1;
    struct mark m = {count, thread_cpu_ns(), now_ns()};
    while (marked < upto)
        w->marks[++marked] = m;
    return marked;
}

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    struct engine *e = w->e;
    worker_setup(w);
    pthread_barrier_wait(&e->bar);            /* setup done: main checks w->err */
    for (;;) {
        pthread_barrier_wait(&e->bar);        /* start of a point */
        if (atomic_load(&e->quit))
            break;
        const uint64_t delay = e->delay;
        const struct traffic *t = e->cfg.traffic;
        uint64_t chunk, count = 0;
        if (w->is_lat) {
            chunk = 256;
        } else {
            uint64_t per_step = (uint64_t)t->nops * (delay + 8);
            chunk = 8192 / per_step;
            if (chunk > 256) chunk = 256;
            if (chunk < 1) chunk = 1;
        }
        int state = PH_WARMUP, marked = 0;
        for (;;) {
            if (w->is_lat)
                w->p = chase(w->p, chunk);
            else
                run_steps(t, &w->ks, chunk, delay);
            count += chunk;
            /* acquire: a thread that sees STOP also sees every boundary the main thread moved before it */
            int ph = atomic_load_explicit(&e->phase, memory_order_acquire);
            int passed = atomic_load_explicit(&e->boundary, memory_order_relaxed);
            if (state == PH_MEASURE && marked < passed)
                marked = mark_boundaries(w, marked, passed, count);
            if (ph == state)
                continue;
            if (state == PH_WARMUP) {     /* window starts (even if this thread was starved until STOP) */
                w->cnt0 = count;
                w->cpu0 = thread_cpu_ns();
                w->wall0 = now_ns();
                w->marks[0] = (struct mark){w->cnt0, w->cpu0, w->wall0};
                marked = 0;
                state = PH_MEASURE;
                atomic_store(&w->in_window, 1);
                continue;
            }
            if (ph == PH_STOP && count > w->cnt0) {   /* at least one chunk inside the window */
                w->cnt1 = count;
                w->cpu1 = thread_cpu_ns();
                w->wall1 = now_ns();
                for (int b = marked + 1; b <= e->cfg.windows; b++)   /* boundaries not seen: empty sub-windows */
                    w->marks[b] = (struct mark){w->cnt1, w->cpu1, w->wall1};
                break;
            }
        }
        atomic_store(&w->in_window, 0);
        pthread_barrier_wait(&e->bar);        /* end of a point */
    }
    return NULL;
}

static void sleep_s(double s)
{
    if (s <= 0)
        return;
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    while (nanosleep(&ts, &ts) != 0)
        ;
}

struct engine *engine_start(const struct engine_cfg *cfg, char *err, size_t errlen)
{
    struct engine *e = calloc(1, sizeof *e);
    if (!e) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    e->cfg = *cfg;
    e->nworkers = cfg->nload + (cfg->lat_cpu >= 0 ? 1 : 0);
    if (posix_memalign((void **)&e->w, 64, sizeof(struct worker) * (size_t)e->nworkers) != 0) {
        free(e);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    memset(e->w, 0, sizeof(struct worker) * (size_t)e->nworkers);
    int k = 0;
    if (cfg->lat_cpu >= 0) {
        e->w[k].cpu = cfg->lat_cpu;
        e->w[k].is_lat = 1;
        k++;
    }
    for (int i = 0; i < cfg->nload; i++, k++)
        e->w[k].cpu = cfg->load_cpus[i];
    if (e->cfg.windows < 1 || e->cfg.windows > MAX_WINDOWS)
        e->cfg.windows = 1;
    for (k = 0; k < e->nworkers; k++) {
        e->w[k].marks = calloc((size_t)e->cfg.windows + 1, sizeof(struct mark));
        if (!e->w[k].marks) {
            for (int i = 0; i < k; i++)
                free(e->w[i].marks);
            free(e->w);
            free(e);
            snprintf(err, errlen, "out of memory");
            return NULL;
        }
    }
    pthread_barrier_init(&e->bar, NULL, (unsigned)e->nworkers + 1);
    atomic_store(&e->quit, 0);
    int started = 0;
    for (k = 0; k < e->nworkers; k++) {
        e->w[k].e = e;
        if (pthread_create(&e->w[k].th, NULL, worker_main, &e->w[k]) != 0)
            break;
        started++;
    }
    if (started < e->nworkers) {
        /* cannot happen in practice; the started threads are left blocked and the process exits */
        snprintf(err, errlen, "cannot start %d threads", e->nworkers);
        return NULL;
    }
    pthread_barrier_wait(&e->bar);            /* every worker finished its setup */
    for (k = 0; k < e->nworkers; k++) {
        if (e->w[k].err[0]) {
            snprintf(err, errlen, "%s", e->w[k].err);
            engine_stop(e);
            return NULL;
        }
    }
    return e;
}

/* the bytes a thread moved between two marks: a load thread's traffic, or the latency thread's chase */
static uint64_t bytes_between(const struct engine *e, const struct worker *w, const struct mark *a,
                              const struct mark *b)
{
    uint64_t rb, wb;
    if (w->is_lat)
        return chase_bytes(b->cnt - a->cnt, e->cfg.stride);
    traffic_bytes(e->cfg.traffic, b->cnt - a->cnt, &rb, &wb);
    return rb + wb;
}

/* each sub-window's figures, computed as the whole window's: latency = the latency thread's CPU time / hops;
 * bandwidth (when there are load threads) = the sum over every thread of its bytes / its wall time */
static void sub_windows(const struct engine *e, struct point_result *r)
{
    int load = e->cfg.nload > 0;
    for (int b = 0; b < e->cfg.windows; b++) {
        double bw = 0;
        int bw_ok = load;
        for (int k = 0; k < e->nworkers; k++) {
            const struct worker *w = &e->w[k];
            const struct mark *a = &w->marks[b], *z = &w->marks[b + 1];
            double cpu = z->cpu - a->cpu, wall = z->wall - a->wall;
            if (w->is_lat && z->cnt > a->cnt && cpu > 0)
                r->win_latency_ns[r->nwin_latency++] = cpu / (double)(z->cnt - a->cnt);
            if (wall > 0)
                bw += (double)bytes_between(e, w, a, z) / wall * 1e3;
            else
                bw_ok = 0;   /* a thread without this sub-window: no figure for it */
        }
        if (bw_ok)
            r->win_bandwidth_mbps[r->nwin_bandwidth++] = bw;
    }
}

int engine_measure(struct engine *e, uint64_t delay, struct point_result *r)
{
    memset(r, 0, sizeof *r);
    e->delay = delay;
    atomic_store(&e->phase, PH_WARMUP);
    atomic_store(&e->boundary, 0);
    pthread_barrier_wait(&e->bar);
    sleep_s(e->cfg.warmup);
    atomic_store(&e->phase, PH_MEASURE);
    double start = now_ns();
    for (int b = 1; b < e->cfg.windows; b++) {   /* cut the window into equal sub-windows, by the clock */
        sleep_s((start + e->cfg.seconds * 1e9 * b / e->cfg.windows - now_ns()) / 1e9);
        atomic_store(&e->boundary, b);
    }
    sleep_s((start + e->cfg.seconds * 1e9 - now_ns()) / 1e9);
    /* on a busy machine a thread may not have run yet: give it up to 10 s more to enter its window */
    for (int waited = 0; waited < 10000; waited++) {
        int all = 1;
        for (int k = 0; k < e->nworkers; k++)
            all &= atomic_load(&e->w[k].in_window);
        if (all)
            break;
        sleep_s(0.001);
    }
    atomic_store(&e->phase, PH_STOP);
    pthread_barrier_wait(&e->bar);

    r->delay = delay;
    r->min_cpu_share = 1.0;
    double lat_mbps_cpu = 0;
    for (int k = 0; k < e->nworkers; k++) {
        struct worker *w = &e->w[k];
        uint64_t n = w->cnt1 - w->cnt0;
        double cpu = w->cpu1 - w->cpu0, wall = w->wall1 - w->wall0;
        if (n == 0 || cpu <= 0 || wall <= 0)
            return -1;
        double share = cpu / wall;
        if (share < r->min_cpu_share)
            r->min_cpu_share = share;
        if (w->is_lat) {
            r->hops = n;
            r->latency_ns = cpu / (double)n;
            r->latency_ns_wall = wall / (double)n;
            r->latency_bytes = chase_bytes(n, e->cfg.stride);
            r->latency_mbps = (double)r->latency_bytes / wall * 1e3;
            lat_mbps_cpu = (double)r->latency_bytes / cpu * 1e3;
        } else {
            uint64_t rb, wb;
            traffic_bytes(e->cfg.traffic, n, &rb, &wb);
            r->read_bytes += rb;
            r->write_bytes += wb;
            /* bytes per ns = GB/s; x1000 = MB/s (10^6 bytes) */
            r->load_bandwidth_mbps += (double)(rb + wb) / wall * 1e3;
            r->read_mbps += (double)rb / wall * 1e3;
            r->write_mbps += (double)wb / wall * 1e3;
            r->bandwidth_mbps_cpu += (double)(rb + wb) / cpu * 1e3;
        }
        if (wall / 1e9 > r->window_s)
            r->window_s = wall / 1e9;
    }
    /* MLC's convention: the bandwidth column includes the latency thread's own reads */
    r->bandwidth_mbps = r->load_bandwidth_mbps + r->latency_mbps;
    r->bandwidth_mbps_cpu += lat_mbps_cpu;
    if (e->cfg.windows > 1)
        sub_windows(e, r);
    return 0;
}

int engine_count_pages(struct engine *e, struct page_nodes *pn)
{
    for (int k = 0; k < e->nworkers; k++)
        for (int i = 0; i < 3; i++)
            if (e->w[k].buf[i] && count_page_nodes(e->w[k].buf[i], e->w[k].bufsz[i], pn) != 0)
                return -1;
    return 0;
}

int engine_verify_node(struct engine *e, int node, struct page_nodes *pn, char *err, size_t errlen)
{
    for (int k = 0; k < e->nworkers; k++)
        for (int i = 0; i < 3; i++)
            if (e->w[k].buf[i] && verify_node(e->w[k].buf[i], e->w[k].bufsz[i], node, pn, err, errlen) != 0)
                return -1;
    return 0;
}

void engine_stop(struct engine *e)
{
    if (!e)
        return;
    atomic_store(&e->quit, 1);
    pthread_barrier_wait(&e->bar);
    for (int k = 0; k < e->nworkers; k++) {
        pthread_join(e->w[k].th, NULL);
        for (int i = 0; i < 3; i++)
            free_buffer(e->w[k].buf[i], e->w[k].bufsz[i]);
        free(e->w[k].marks);
    }
    pthread_barrier_destroy(&e->bar);
    free(e->w);
    free(e);
}
