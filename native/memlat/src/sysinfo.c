/* System facts read from sysfs/procfs, clocks, pinning and buffer allocation. */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <math.h>
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

/* the first line of a file, without its newline; -1 when absent, unreadable or empty */
int file_line(const char *path, char *buf, size_t n)
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
        if (file_line(path, buf, sizeof buf) < 0)
            continue;
        int level = atoi(buf);
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/type", i);
        if (file_line(path, buf, sizeof buf) == 0 && strcmp(buf, "Instruction") == 0)
            continue;
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
        if (file_line(path, buf, sizeof buf) < 0)
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
    if (file_line("/sys/kernel/mm/transparent_hugepage/enabled", line, sizeof line) < 0)
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
    if (file_line("/sys/devices/system/cpu/cpu0/cpufreq/base_frequency", buf, sizeof buf) == 0 ||
        file_line("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq", buf, sizeof buf) == 0)
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
    size_t tail = len - head - bytes;   /* at least one page: head < HUGE_ALIGN */
    size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    tail -= tail % pg;   /* bytes is a multiple of the page size, so this keeps [start, start+bytes) */
    /* the page after the buffer stays mapped PROT_NONE: the buffer is then never merged with a neighbouring
     * mapping, so /proc/self/numa_maps has a line for exactly this buffer (the placement check reads it) */
    mprotect((char *)start + bytes, pg, PROT_NONE);
    if (tail > pg)
        munmap((char *)start + bytes + pg, tail - pg);
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
        munmap(p, bytes + (size_t)sysconf(_SC_PAGESIZE));   /* with its guard page */
}

/* "32K" / "1024K" / "32M", bounded; 0 when malformed */
static uint64_t cache_size(const char *s)
{
    char *end;
    if (!isdigit((unsigned char)s[0]))
        return 0;
    unsigned long long v = strtoull(s, &end, 10);
    uint64_t mul = *end == 'K' ? 1024 : *end == 'M' ? 1 << 20 : *end == 'G' ? 1 << 30 : *end == 0 ? 1 : 0;
    if (!mul || (*end && end[1]) || v > (1ULL << 32))
        return 0;
    return v * mul;
}

static int list_chars_ok(const char *s)
{
    for (; *s; s++)
        if (!isdigit((unsigned char)*s) && *s != ',' && *s != '-')
            return 0;
    return 1;
}

/* the caches of `cpu` from sysfs (hostile input: an entry that does not parse is skipped) */
int read_caches(int cpu, struct cache *c, int max)
{
    int n = 0;
    for (int i = 0; i < 16 && n < max; i++) {
        char rel[128], buf[256];
        struct cache x;
        memset(&x, 0, sizeof x);
        snprintf(rel, sizeof rel, "devices/system/cpu/cpu%d/cache/index%d/level", cpu, i);
        if (sysfs_line(rel, buf, sizeof buf) < 0)
            continue;
        x.level = atoi(buf);
        snprintf(rel, sizeof rel, "devices/system/cpu/cpu%d/cache/index%d/type", cpu, i);
        if (x.level < 1 || x.level > 9 || sysfs_line(rel, x.type, sizeof x.type) < 0 ||
            (strcmp(x.type, "Data") && strcmp(x.type, "Instruction") && strcmp(x.type, "Unified")))
            continue;
        snprintf(rel, sizeof rel, "devices/system/cpu/cpu%d/cache/index%d/size", cpu, i);
        if (sysfs_line(rel, buf, sizeof buf) < 0 || !(x.bytes = cache_size(buf)))
            continue;
        snprintf(rel, sizeof rel, "devices/system/cpu/cpu%d/cache/index%d/shared_cpu_list", cpu, i);
        if (sysfs_line(rel, x.shared, sizeof x.shared) < 0 || !list_chars_ok(x.shared))
            snprintf(x.shared, sizeof x.shared, "?");
        c[n++] = x;
    }
    return n;
}

/* 4 KiB to top_kib, four points per octave (rounded to whole KiB) */
int default_sizes(uint64_t top_kib, uint64_t *kib, int max)
{
    uint64_t top = top_kib;
    int n = 0;
    for (int i = 0; n < max; i++) {
        uint64_t k = (uint64_t)llround(4.0 * pow(2.0, i / 4.0));
        if (k > top)
            break;
        if (!n || kib[n - 1] != k)
            kib[n++] = k;
    }
    return n;
}

