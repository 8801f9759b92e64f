/* Load-thread kernels with run-time dispatch (AVX2 via a function target attribute, so the binary runs
 * on any x86-64), the calibrated injection-delay loop and the latency chain. */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "memlat.h"

#if (defined(__x86_64__) || defined(__i386__)) && !defined(MEMLAT_PORTABLE)
#include <immintrin.h>
#define KSUF avx2
#define KISA 2
#define KATTR __attribute__((target("avx2")))
#include "kernels_impl.h"
#undef KSUF
#undef KISA
#undef KATTR
#define KSUF sse2
#define KISA 1
#define KATTR
#include "kernels_impl.h"
#else
#define KSUF portable
#define KISA 0
#define KATTR
#include "kernels_impl.h"
#endif

typedef void (*run_fn)(const struct traffic *, struct kstate *, uint64_t, uint64_t);
static run_fn run_impl;
const char *kernel_isa = "unset";

void kernels_init(void)
{
#if (defined(__x86_64__) || defined(__i386__)) && !defined(MEMLAT_PORTABLE)
    const char *force = getenv("MEMLAT_ISA");   /* tests: exercise the SSE2 path on AVX2 machines */
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2") && !(force && strcmp(force, "sse2") == 0)) {
        run_impl = run_steps_avx2;
        kernel_isa = "avx2";
    } else {
        run_impl = run_steps_sse2;
        kernel_isa = "sse2";
    }
#else
    run_impl = run_steps_portable;
    kernel_isa = "portable";
#endif
}

void run_steps(const struct traffic *t, struct kstate *s, uint64_t steps, uint64_t delay)
{
    if (!run_impl)
        kernels_init();
    run_impl(t, s, steps, delay);
}

/* One delay unit = one iteration of this loop: an increment kept in a register and a compare-and-branch (a
 * loop-carried dependency). Its duration depends on the CPU and its clock, so calibrate_delay_unit_ns measures
 * it rather than assuming a clock per iteration. Monotonic in `units` by construction. */
__attribute__((noinline)) void spin_delay(uint64_t units)
{
    for (uint64_t i = 0; i < units; i++)
        __asm__ volatile("" : "+r"(i));
}

double calibrate_delay_unit_ns(void)
{
    double best = 0;
    for (int rep = 0; rep < 10; rep++) {
        const uint64_t n = 1000000;
        double t0 = thread_cpu_ns();   /* CPU time: a preemption does not inflate the unit */
        spin_delay(n);
        double dt = (thread_cpu_ns() - t0) / (double)n;
        if (rep == 0 || dt < best)
            best = dt;
    }
    return best;
}

/* xoshiro-style splitmix64: good enough for a permutation, deterministic per seed */
static inline uint64_t splitmix64(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

static inline uint64_t below(uint64_t *s, uint64_t n) /* uniform in [0, n) */
{
#ifdef __SIZEOF_INT128__
    return (uint64_t)(((unsigned __int128)splitmix64(s) * n) >> 64);
#else
    return splitmix64(s) % n;
#endif
}

void *build_chain(char *buf, size_t lines, size_t stride, uint64_t seed)
{
    /* slot i's first word holds the index of its successor: start from the identity, then Sattolo's
     * shuffle (j < i strictly) turns it into a single cycle through every slot */
    for (size_t i = 0; i < lines; i++)
        *(uint64_t *)(buf + i * stride) = i;
    uint64_t st = seed;
    for (size_t i = lines - 1; i > 0; i--) {
        size_t j = (size_t)below(&st, i);
        uint64_t *a = (uint64_t *)(buf + i * stride), *b = (uint64_t *)(buf + j * stride);
        uint64_t tmp = *a;
        *a = *b;
        *b = tmp;
    }
    for (size_t i = 0; i < lines; i++) {
        char *slot = buf + i * stride;
        *(void **)slot = buf + (*(uint64_t *)slot) * stride;
    }
    return buf;
}

static void shuffle(uint64_t *a, size_t n, uint64_t *st) /* Fisher-Yates */
{
    for (size_t i = n; i > 1; i--) {
        size_t j = (size_t)below(st, i);
        uint64_t t = a[i - 1];
        a[i - 1] = a[j];
        a[j] = t;
    }
}

void *build_chain_grouped(char *buf, size_t lines, size_t stride, size_t group_lines, uint64_t seed)
{
    if (group_lines == 0 || group_lines >= lines)
        return build_chain(buf, lines, stride, seed);
    /* multichase-style locality: the groups of `group_lines` consecutive slots are visited in random
     * order, and the slots of each group in random order; every slot once, then back to the start,
     * so it is still one cycle through the whole buffer */
    size_t ngroups = (lines + group_lines - 1) / group_lines;
    uint64_t *gorder = malloc(ngroups * sizeof *gorder), *lorder = malloc(group_lines * sizeof *lorder);
    if (!gorder || !lorder) {
        free(gorder);
        free(lorder);
        return build_chain(buf, lines, stride, seed);
    }
    uint64_t st = seed;
    for (size_t g = 0; g < ngroups; g++)
        gorder[g] = g;
    shuffle(gorder, ngroups, &st);
    char *first = NULL, *prev = NULL;
    for (size_t gi = 0; gi < ngroups; gi++) {
        size_t g0 = (size_t)gorder[gi] * group_lines;
        size_t n = lines - g0 < group_lines ? lines - g0 : group_lines;
        for (size_t i = 0; i < n; i++)
            lorder[i] = g0 + i;
        shuffle(lorder, n, &st);
        for (size_t i = 0; i < n; i++) {
            char *slot = buf + lorder[i] * stride;
            if (prev)
                *(void **)prev = slot;
            else
                first = slot;
            prev = slot;
        }
    }
    *(void **)prev = first;
    free(gorder);
    free(lorder);
    return first;
}

#define HOP p = *(void *volatile *)p;
void *chase(void *p, uint64_t hops)
{
    for (uint64_t i = 0; i < hops; i += 16) {
        HOP HOP HOP HOP HOP HOP HOP HOP
        HOP HOP HOP HOP HOP HOP HOP HOP
    }
    return p;
}
