/* System facts read from sysfs/procfs, clocks, pinning and buffer allocation. */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include "memlat.h"
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

static int read_line(const char *path, char *buf, size_t n)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    char *r = fgets(buf, (int)n, f);
    fclose(f);
    if (!r)
        return -1;
    buf[strcspn(buf, "\n")] = 0;
    return 0;
}

/* sysfs cache sizes look like "107520K" or "2048K" or "32M" */
static uint64_t parse_size(const char *s)
{
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    while (*end == ' ')
        end++;
    switch (toupper((unsigned char)*end)) {
    case 'K': return v << 10;
    case 'M': return v << 20;
    case 'G': return v << 30;
    default: return v;
    }
}

uint64_t llc_bytes(void)
{
    uint64_t best = 0;
    int best_level = 0;
    for (int i = 0; i < 16; i++) {
        char path[128], buf[64];
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/level", i);
        if (read_line(path, buf, sizeof buf) < 0)
            continue;
        int level = atoi(buf);
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/type", i);
        if (read_line(path, buf, sizeof buf) == 0 && strcmp(buf, "Instruction") == 0)
            continue;
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
        if (read_line(path, buf, sizeof buf) < 0)
            continue;
        uint64_t sz = parse_size(buf);
        if (level > best_level || (level == best_level && sz > best)) {
            best_level = level;
            best = sz;
        }
    }
    return best;
}

static uint64_t meminfo_kib(const char *file, const char *key)
{
    FILE *f = fopen(file, "r");
    if (!f)
        return 0;
    char line[256];
    uint64_t v = 0;
    size_t kl = strlen(key);
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, key, kl) == 0 && line[kl] == ':') {
            v = strtoull(line + kl + 1, NULL, 10);
            break;
        }
    }
    fclose(f);
    return v;
}

uint64_t mem_available_bytes(void) { return meminfo_kib("/proc/meminfo", "MemAvailable") << 10; }

uint64_t anon_huge_kib(void)
{
    uint64_t v = meminfo_kib("/proc/self/smaps_rollup", "AnonHugePages");
    return v;
}

void thp_mode(char *buf, size_t n)
{
    char line[256];
    snprintf(buf, n, "unavailable");
    if (read_line("/sys/kernel/mm/transparent_hugepage/enabled", line, sizeof line) < 0)
        return;
    char *a = strchr(line, '['), *b = a ? strchr(a, ']') : NULL;
    if (a && b) {
        *b = 0;
        snprintf(buf, n, "%s", a + 1);
    }
}

int allowed_cpus(int *cpus, int max)
{
    cpu_set_t set;
    int n = 0;
    if (sched_getaffinity(0, sizeof set, &set) != 0) {
        long c = sysconf(_SC_NPROCESSORS_ONLN);
        for (int i = 0; i < c && n < max; i++)
            cpus[n++] = i;
        return n;
    }
    for (int i = 0; i < CPU_SETSIZE && n < max; i++)
        if (CPU_ISSET(i, &set))
            cpus[n++] = i;
    return n;
}

int pin_to_cpu(int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return sched_setaffinity(0, sizeof set, &set);
}

double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

double thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

double tsc_ghz(void)
{
#if defined(__x86_64__) || defined(__i386__)
    /* the TSC ticks at the base (nominal) frequency on every CPU made in the last 15 years */
    double best = 0;
    for (int rep = 0; rep < 3; rep++) {
        struct timespec d = {0, 10 * 1000 * 1000};
        double t0 = now_ns();
        uint64_t c0 = __rdtsc();
        nanosleep(&d, NULL);
        uint64_t c1 = __rdtsc();
        double t1 = now_ns();
        double g = (double)(c1 - c0) / (t1 - t0);
        if (rep == 0 || g < best)
            best = g;
    }
    return best;
#else
    char buf[64];
    if (read_line("/sys/devices/system/cpu/cpu0/cpufreq/base_frequency", buf, sizeof buf) == 0 ||
        read_line("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq", buf, sizeof buf) == 0)
        return strtod(buf, NULL) / 1e6; /* kHz */
    return 0;
#endif
}

#define HUGE_ALIGN (2UL << 20)

void *alloc_buffer(size_t bytes, int huge)
{
    /* over-map by 2 MiB and trim so the buffer starts on a huge-page boundary */
    size_t len = bytes + HUGE_ALIGN;
    char *raw = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED)
        return NULL;
    uintptr_t start = ((uintptr_t)raw + HUGE_ALIGN - 1) & ~(uintptr_t)(HUGE_ALIGN - 1);
    size_t head = start - (uintptr_t)raw;
    if (head)
        munmap(raw, head);
    size_t tail = len - head - bytes;
    size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    tail -= tail % pg;   /* bytes is a multiple of the page size, so this keeps [start, start+bytes) */
    if (tail)
        munmap((char *)start + (len - head - tail), tail);
#ifdef MADV_HUGEPAGE
    if (huge)
        madvise((void *)start, bytes, MADV_HUGEPAGE);
#else
    (void)huge;
#endif
#ifdef MADV_NOHUGEPAGE
    if (!huge)
        madvise((void *)start, bytes, MADV_NOHUGEPAGE);
#endif
    return (void *)start;
}

void free_buffer(void *p, size_t bytes)
{
    if (p)
        munmap(p, bytes);
}
