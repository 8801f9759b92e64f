/* Fallback bandwidth reference for `make bench` when likwid-bench cannot run: N pinned threads each sum
 * their own first-touched buffer of 64-bit words (plain C, auto-vectorised by the compiler) for a fixed
 * time; prints total read MB/s (10^6 bytes). Usage: ref_read THREADS BYTES_PER_THREAD SECONDS */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

struct arg {
    int cpu;
    size_t n;
    double seconds, mbps;
    uint64_t sink;
};

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void *body(void *p)
{
    struct arg *a = p;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(a->cpu, &set);
    sched_setaffinity(0, sizeof set, &set);
    uint64_t *buf = aligned_alloc(64, a->n * 8);
    for (size_t i = 0; i < a->n; i++)
        buf[i] = i;
    uint64_t s = 0, passes = 0;
    double t0 = now(), t;
    do {
        for (size_t i = 0; i < a->n; i++)
            s += buf[i];
        passes++;
        t = now();
    } while (t - t0 < a->seconds);
    a->mbps = (double)passes * (double)a->n * 8 / (t - t0) / 1e6;
    a->sink = s;
    free(buf);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc != 4)
        return 2;
    int n = atoi(argv[1]);
    size_t bytes = strtoull(argv[2], NULL, 10);
    double secs = atof(argv[3]);
    struct arg a[64];
    pthread_t th[64];
    if (n < 1 || n > 64)
        return 2;
    for (int i = 0; i < n; i++) {
        a[i] = (struct arg){.cpu = i, .n = bytes / 8, .seconds = secs};
        pthread_create(&th[i], NULL, body, &a[i]);
    }
    double total = 0;
    uint64_t sink = 0;
    for (int i = 0; i < n; i++) {
        pthread_join(th[i], NULL);
        total += a[i].mbps;
        sink ^= a[i].sink;
    }
    printf("MByte/s: %.2f (sink %llu)\n", total, (unsigned long long)(sink & 1));
    return 0;
}
