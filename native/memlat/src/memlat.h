/* memlat — profiler-tui's built-in loaded-latency engine (native/memlat/README.md).
 * Declarations used by more than one of the engine's modules. */
#ifndef MEMLAT_H
#define MEMLAT_H

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

#define MEMLAT_VERSION "0.1"
#define LINE_BYTES 64          /* one access of a load thread moves one 64-byte cache line */
#define MAX_OPS 6
#define MAX_DELAYS 256
#define MAX_CPUS 1024
#define MAX_NODES 1024            /* NUMA nodes 0 … 1023 (the kernel's largest MAX_NUMNODES) */
#define MAX_DELAY_VALUE 100000000ULL
#define MAX_SIZES 256             /* --sizes entries, and the default working-set points */
#define MIN_WINDOW_NEW_MODES 0.05 /* -t floor of the suite modes (peak .. working set) */
#define MAX_WINDOWS 1000          /* --windows: sub-windows of a point's -t window */
/* -b and --sizes: at most 4 GiB per buffer.  The largest last-level cache one thread can fill on current server
 * CPUs is about 0.5 GiB, so 4 GiB is 8 times past every cache (and the TLB reach of 2 MiB pages): a larger
 * buffer measures nothing more, it only takes longer to lay out and more of the machine's memory per thread. */
#define MAX_BUFFER_KIB (4ULL << 20)
#define DEFAULT_MIN_BUFFER (256ULL << 20)   /* the default buffer's floor (bytes): above MLC's >= 100 MiB per thread */
#define DEFAULT_WINDOWS 20

/* ---- traffic types (MLC's -R / -W codes) ---- */
enum op {
    OP_LOAD = 1,   /* read one line from read buffer 0 */
    OP_LOAD2,      /* read one line from read buffer 1 (triad's second source) */
    OP_STORE,      /* ordinary store of a whole line: the CPU reads it first (RFO), then writes it back */
    OP_NT,         /* non-temporal (streaming) store of a whole line: written once, never read */
};

struct traffic {
    int code;                 /* 0 = all reads (-R), else MLC's -W code */
    const char *name;         /* "R", "W2", ...: the "traffic" value of a memory point (docs/presets.md) */
    const char *ratio;        /* "1:0", "2:1", ... bus read : bus write */
    const char *desc;         /* MLC-style wording for the "Using ... traffic type" line */
    int nops;
    unsigned char ops[MAX_OPS];  /* one step = these line accesses, in order */
};

const struct traffic *traffic_by_code(int code);   /* NULL when unknown */
int traffic_valid_codes(char *buf, size_t n);        /* "2,3,4,..." for error messages */

/* Bytes moved by `steps` steps of a traffic type, by the counting rule (README "How bytes are counted"):
 * a load counts LINE_BYTES read; an ordinary store counts LINE_BYTES read (its RFO) and LINE_BYTES
 * written; a non-temporal store counts LINE_BYTES written. */
void traffic_bytes(const struct traffic *t, uint64_t steps, uint64_t *read_bytes, uint64_t *write_bytes);
/* Bytes read by `hops` steps of the latency chase (stride >= 64): one line per step, LINE_BYTES each —
 * counted in the reported bandwidth as Intel MLC counts it (README "How bytes are counted"). */
uint64_t chase_bytes(uint64_t hops, int stride);
/* lines per step by kind */
void traffic_lines(const struct traffic *t, int *loads0, int *loads1, int *stores, int *nts);

/* ---- command line ---- */
enum mode { MODE_NONE = 0, MODE_IDLE, MODE_LOADED, MODE_BANDWIDTH, MODE_COUNT_CHECK,
            /* the suite modes (suite.c, c2c.c, wset.c) */
            MODE_PEAK, MODE_SCALING, MODE_LAT_MATRIX, MODE_BW_MATRIX, MODE_C2C, MODE_WSET };

struct opts {
    enum mode mode;
    int traffic_code;           /* 0 = R */
    uint64_t delays[MAX_DELAYS];
    int ndelays;
    int stride;                 /* bytes */
    uint64_t buffer_kib;        /* 0 = default (max(4x LLC, 256 MiB), at most 4 GiB) */
    double seconds;             /* measurement window per point */
    double warmup;              /* < 0 = default */
    int cpus[MAX_CPUS];
    int ncpus;                  /* 0 = default (all CPUs this process may run on) */
    int json;
    int huge_pages;             /* 1 = MADV_HUGEPAGE, 0 = --no_huge_pages */
    uint64_t seed;
    uint64_t tlb_locality_kib;  /* 0 = one global random permutation (default) */
    uint64_t count_steps;       /* --count_check N */
    int mem_node;               /* --mem_node N: bind every buffer to node N; -1 = the kernel's default policy */
    int traffic_given;          /* -R or -W appeared (peak: only that row) */
    int delays_given;           /* -d or -D appeared */
    int threads_list[MAX_CPUS]; /* --threads: load-thread counts of --bandwidth_scaling */
    int nthreads;
    uint64_t sizes_kib[MAX_SIZES];  /* --sizes: working-set buffer sizes */
    int nsizes;
    int plan_only;              /* --plan_only: print what would be measured (topology, cells), measure nothing */
    int windows;                /* --windows N: each figure also measured in N equal sub-windows of -t (1: none) */
    int windows_given;
    char cmdline[2048];         /* argv[1..] as given, for "Command line parameters:" */
};

/* 0 ok, 1 help printed (exit 0), 2 usage error (message in err) */
int parse_args(int argc, char **argv, struct opts *o, char *err, size_t errlen);
void print_usage(FILE *f);
int parse_cpu_list(const char *s, int *cpus, int max, char *err, size_t errlen);
/* "1,2,4": integers in [lo, hi], no duplicates; the count, or -1 with a message naming `what` in err */
int parse_u64_list(const char *v, uint64_t *out, int max, uint64_t lo, uint64_t hi, const char *what, char *err,
                   size_t errlen);

/* ---- system facts ---- */
uint64_t llc_bytes(void);                  /* largest cache of cpu0 from sysfs, 0 if unknown */
uint64_t mem_available_bytes(void);        /* MemAvailable, 0 if unknown */
int allowed_cpus(int *cpus, int max);      /* CPUs in this process' affinity mask */
void thp_mode(char *buf, size_t n);        /* e.g. "madvise" (the bracketed word), or "unavailable" */
uint64_t anon_huge_kib(void);              /* AnonHugePages of this process */
#define MAX_CACHES 16
struct cache {
    int level;              /* 1..9 */
    char type[16];          /* Data, Instruction, Unified */
    uint64_t bytes;
    char shared[128];       /* shared_cpu_list, "?" when unreadable */
};
/* the caches of `cpu` from sysfs_root()/devices/system/cpu/cpuN/cache (an entry that does not parse is skipped) */
int read_caches(int cpu, struct cache *c, int max);
/* working-set sizes in KiB: 4 to top_kib, four per octave rounded to whole KiB; the count */
int default_sizes(uint64_t top_kib, uint64_t *kib, int max);
double tsc_ghz(void);                      /* base-frequency clock (TSC) in GHz, 0 if unknown */
double now_ns(void);                       /* CLOCK_MONOTONIC */
double thread_cpu_ns(void);                /* CLOCK_THREAD_CPUTIME_ID */
int pin_to_cpu(int cpu);

/* ---- NUMA placement (numa.c): mbind before the first touch, move_pages to verify ---- */
struct page_nodes {
    uint64_t pages[MAX_NODES];  /* pages found on each node */
    uint64_t absent;            /* pages not present (never touched) or not mapped */
    uint64_t total;
    size_t page_bytes;
};
const char *sysfs_root(void);                /* /sys, or $MEMLAT_SYSFS_ROOT (tests fake a topology) */
int file_line(const char *path, char *buf, size_t n);   /* first line of a file, no newline; -1 if unreadable */
int sysfs_line(const char *rel, char *buf, size_t n);   /* first line of sysfs_root()/rel; -1 if unreadable */
int numa_nodes(int *nodes, int max);         /* the online nodes (/sys/devices/system/node/online), -1 if unknown */
int bind_to_node(void *p, size_t bytes, int node, char *err, size_t errlen);  /* MPOL_BIND; 0 ok */
int count_page_nodes(void *p, size_t bytes, struct page_nodes *pn);         /* adds to pn; 0 ok, -1 errno */
int placement_ok(const struct page_nodes *pn, int node);                     /* every page on node */
void placement_str(const struct page_nodes *pn, char *buf, size_t n);        /* "N0=12 N1=4", as numa_maps */
/* the machine's nodes: online ones, which have memory, the node of each CPU (-1: none) */
struct topo {
    int nodes[MAX_NODES];
    int nnodes;
    unsigned char has_memory[MAX_NODES];
    int cpu_node[MAX_CPUS];
};
int topo_read(struct topo *t, char *err, size_t errlen);                    /* 0 ok, -1 (message in err) */
int parse_numa_maps_line(const char *line, uintptr_t *start, struct page_nodes *pn);   /* 0 ok, -1 malformed */
/* adds the pages /proc/self/numa_maps reports for the mapping that is exactly [p, p+bytes); 0 ok */
int numa_maps_pages(const void *p, size_t bytes, struct page_nodes *pn, char *err, size_t errlen);
/* every page of [p, p+bytes) on `node`, by numa_maps and by move_pages; adds the numa_maps counts to pn */
int verify_node(const void *p, size_t bytes, int node, struct page_nodes *pn, char *err, size_t errlen);

/* ---- kernels ---- */
struct kstate {
    char *rd0, *rd1, *wr;       /* buffers (64-byte aligned, sizes multiples of 256) */
    size_t rsize, wsize;
    size_t r0, r1, w;           /* current offsets */
    uint64_t acc;               /* sum of all 64-bit words loaded (sink; checked by --count_check) */
};
extern const char *kernel_isa;   /* "avx2", "sse2" or "portable" */
void kernels_init(void);
/* run `steps` steps of traffic `t`, spinning `delay` units after every line access */
void run_steps(const struct traffic *t, struct kstate *s, uint64_t steps, uint64_t delay);
void spin_delay(uint64_t units);
double calibrate_delay_unit_ns(void);

/* ---- latency chain ---- */
/* Builds a single-cycle random permutation (Sattolo) of the `lines` slots of `buf` spaced `stride`
 * bytes apart: the first word of each slot points to the next slot. Returns the start pointer. */
void *build_chain(char *buf, size_t lines, size_t stride, uint64_t seed);
/* the same with multichase-style TLB locality: groups of group_lines slots (0 = one global permutation) */
void *build_chain_grouped(char *buf, size_t lines, size_t stride, size_t group_lines, uint64_t seed);
/* follows `hops` pointers (a multiple of 16) from p, returns where it ended */
void *chase(void *p, uint64_t hops);

/* ---- memory ---- */
void *alloc_buffer(size_t bytes, int huge);   /* page-aligned (2 MiB when huge), not touched */
void free_buffer(void *p, size_t bytes);

#endif
