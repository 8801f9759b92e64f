/* C-level tests of the engine's pieces: counting rule, chain shape, argument parsing, JSON writer, delay loop. */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "memlat.h"
#include "json.h"

static int failures, checks;
#define CHECK(cond, ...) do { checks++; if (!(cond)) { failures++; printf("FAIL %s:%d: ", __FILE__, __LINE__); \
                              printf(__VA_ARGS__); printf("\n"); } } while (0)

static void test_counting(void)
{
    /* code, bus lines read per step, bus lines written per step (RFO of an ordinary store is a read) */
    static const int table[][3] = {{0, 1, 0}, {2, 2, 1}, {3, 3, 1}, {4, 3, 2}, {5, 1, 1}, {6, 0, 1},
                                   {7, 2, 1}, {8, 1, 1}, {9, 3, 1}, {10, 2, 1}, {11, 3, 1}, {12, 4, 1}};
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        const struct traffic *t = traffic_by_code(table[i][0]);
        CHECK(t != NULL, "traffic %d missing", table[i][0]);
        if (!t)
            continue;
        uint64_t rb, wb;
        traffic_bytes(t, 1000, &rb, &wb);
        CHECK(rb == 1000ULL * table[i][1] * 64 && wb == 1000ULL * table[i][2] * 64,
              "%s: read %llu write %llu", t->name, (unsigned long long)rb, (unsigned long long)wb);
        char want[16];
        snprintf(want, sizeof want, "%d:%d", table[i][1], table[i][2]);
        if (table[i][0] != 0)
            CHECK(strcmp(want, t->ratio) == 0, "%s ratio %s, bytes say %s", t->name, t->ratio, want);
    }
    CHECK(traffic_by_code(1) == NULL && traffic_by_code(13) == NULL, "codes 1 and 13 must not exist");
}

static void test_chain(size_t lines, size_t stride, size_t group)
{
    char *buf = alloc_buffer((lines * stride + 4095) / 4096 * 4096, 0);
    void *start = build_chain_grouped(buf, lines, stride, group, 42);
    unsigned char *seen = calloc(lines, 1);
    void *p = start;
    size_t n = 0, bad = 0;
    do {
        size_t off = (size_t)((char *)p - buf);
        if (off % stride || off / stride >= lines || seen[off / stride]) {
            bad++;
            break;
        }
        seen[off / stride] = 1;
        p = *(void **)p;
        n++;
    } while (p != start && n <= lines);
    CHECK(bad == 0 && n == lines, "chain lines=%zu stride=%zu group=%zu: cycle of %zu, bad=%zu", lines, stride,
          group, n, bad);
    if (lines % 16 == 0)
        CHECK(chase(start, lines) == start, "chase of %zu hops does not return to start", lines);
    /* a random permutation, not the identity walk */
    size_t sequential = 0;
    p = start;
    for (size_t i = 0; i < lines; i++) {
        void *q = *(void **)p;
        sequential += (char *)q == (char *)p + stride;
        p = q;
    }
    if (lines >= 64)
        CHECK(sequential < lines / 4, "chain looks sequential (%zu of %zu)", sequential, lines);
    free(seen);
    free_buffer(buf, (lines * stride + 4095) / 4096 * 4096);
}

static int parse(const char *line, struct opts *o)
{
    char buf[512], *argv[32], err[512];
    int argc = 0;
    snprintf(buf, sizeof buf, "memlat %s", line);
    for (char *tok = strtok(buf, " "); tok && argc < 31; tok = strtok(NULL, " "))
        argv[argc++] = tok;
    argv[argc] = NULL;
    return parse_args(argc, argv, o, err, sizeof err);
}

static void test_args(void)
{
    struct opts o;
    CHECK(parse("--loaded_latency", &o) == 0 && o.ndelays == 19 && o.delays[18] == 20000 && o.stride == 64 &&
          o.traffic_code == 0 && o.seconds == 2.0, "defaults");
    CHECK(parse("--loaded_latency -W6 -l256 -d100 -t 0.5", &o) == 0 && o.traffic_code == 6 && o.stride == 256 &&
          o.ndelays == 1 && o.delays[0] == 100 && o.seconds == 0.5, "attached and separate values");
    CHECK(parse("--loaded_latency -D 0,100,1000", &o) == 0 && o.ndelays == 3 && o.delays[2] == 1000, "-D list");
    CHECK(parse("--loaded_latency -k 0-2,5", &o) == 0 && o.ncpus == 4 && o.cpus[3] == 5, "-k list");
    CHECK(parse("--idle_latency", &o) == 0 && o.windows == 20 && !o.windows_given, "20 sub-windows by default");
    CHECK(parse("--loaded_latency --windows 1", &o) == 0 && o.windows == 1, "--windows 1: the whole window only");
    CHECK(parse("--peak_injection_bandwidth --windows=1000", &o) == 0 && o.windows == 1000, "--windows at its cap");
    CHECK(parse("--idle_latency -b 1048576 -e -r -X", &o) == 0 && o.buffer_kib == 1048576 && o.mode == MODE_IDLE,
          "MLC no-op flags");
    const char *bad[] = {"--loaded_latency -d -5", "--loaded_latency -d abc", "--loaded_latency -D 0,-1",
                         "--loaded_latency -D 0,,5", "--loaded_latency -W 1", "--loaded_latency -W 13",
                         "--loaded_latency -W x", "--loaded_latency -l 96", "--loaded_latency -l 32",
                         "--loaded_latency -l 8192", "--loaded_latency --bogus", "--loaded_latency -Q",
                         "--loaded_latency -t 0", "--loaded_latency -t -1", "--loaded_latency -b 2",
                         "--loaded_latency -k 3-1", "--loaded_latency -k 1,1", "-R", "--loaded_latency stray",
                         "--loaded_latency -Rx", "--loaded_latency -d", "--idle_latency --windows 0",
                         "--idle_latency --windows 1001", "--idle_latency --windows -3", "--idle_latency --windows x",
                         "--idle_latency --windows", "--c2c_latency --windows 5", "--working_set --windows 4",
                         "--count_check 100 --windows 2",
                         /* a buffer past the 4 GiB cap (19 GiB used to start allocating) */
                         "--idle_latency -b 4194305", "--idle_latency -b 20000000", "--working_set --sizes 4194305",
                         /* seconds are plain decimal: strtod alone read 0x10 as 16 s */
                         "--idle_latency -t 0x10", "--idle_latency -t 1e1", "--idle_latency -t inf",
                         "--idle_latency -t nan", "--idle_latency -t 1.2.3", "--idle_latency -t .",
                         "--idle_latency -t +2", "--idle_latency --warmup 0x1", "--idle_latency --warmup 1e-1"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK(parse(bad[i], &o) == 2, "'%s' should be a usage error", bad[i]);
    CHECK(parse("--idle_latency -b 4194304 -t .5 --warmup 0.25", &o) == 0 && o.buffer_kib == 4194304 &&
          o.seconds == 0.5 && o.warmup == 0.25, "the cap itself and decimal fractions");
    CHECK(parse("--idle_latency -t 2.", &o) == 0 && o.seconds == 2.0, "a trailing point");
}

static void test_suite_args(void)
{
    struct opts o;
    CHECK(parse("--max_bandwidth", &o) == 0 && o.mode == MODE_PEAK && !o.traffic_given, "--max_bandwidth alias");
    CHECK(parse("--peak_injection_bandwidth -W5 -t 0.05", &o) == 0 && o.traffic_given && o.traffic_code == 5,
          "peak with one traffic");
    CHECK(parse("--bandwidth_scaling --threads 4,1,2", &o) == 0 && o.nthreads == 3 && o.threads_list[0] == 4 &&
          o.threads_list[2] == 2, "--threads list in the given order");
    CHECK(parse("--working_set --sizes 4,48,1024 --no_huge_pages", &o) == 0 && o.nsizes == 3 &&
          o.sizes_kib[1] == 48 && !o.huge_pages, "--sizes list");
    CHECK(parse("--latency_matrix --plan_only", &o) == 0 && o.plan_only && o.mode == MODE_LAT_MATRIX, "plan only");
    CHECK(parse("--c2c_latency -k 0,1", &o) == 0 && o.mode == MODE_C2C, "c2c");
    const char *bad[] = {"--bandwidth_scaling --threads 0", "--bandwidth_scaling --threads -2",
                         "--bandwidth_scaling --threads 1,,2", "--bandwidth_scaling --threads 2,2",
                         "--bandwidth_scaling --threads 1025", "--bandwidth_scaling --threads ,1",
                         "--bandwidth_scaling --threads 1,", "--bandwidth_scaling --threads 18446744073709551616",
                         "--working_set --sizes 3", "--working_set --sizes 8,8", "--working_set --sizes 4;8",
                         "--working_set --sizes 1073741825", "--working_set --sizes 4 -b 64",
                         "--idle_latency --sizes 4", "--peak_injection_bandwidth --threads 1",
                         "--loaded_latency --plan_only", "--peak_injection_bandwidth -t 0.04",
                         "--bandwidth_scaling -D 0,100", "--latency_matrix -d 0", "--bandwidth_matrix --mem_node 0",
                         "--working_set --tlb_locality 64", "--c2c_latency -W 5", "--latency_matrix -R",
                         "--working_set -W 2", "--c2c_latency -b 64"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK(parse(bad[i], &o) == 2, "'%s' should be a usage error", bad[i]);
    uint64_t v[4];
    char err[256];
    CHECK(parse_u64_list("1,2,3,4,5", v, 4, 1, 9, "x", err, sizeof err) == -1 && strstr(err, "at most 4"),
          "list longer than its room: %s", err);
    CHECK(parse_u64_list("7", v, 4, 1, 9, "x", err, sizeof err) == 1 && v[0] == 7, "one item");
    CHECK(parse_u64_list("123456789012345678901234567890", v, 4, 1, 9, "x", err, sizeof err) == -1, "huge item");
}

/* numa_maps lines as the kernel writes them, and hostile ones */
static void test_numa_maps_line(void)
{
    static struct page_nodes pn;
    uintptr_t start = 0;
    memset(&pn, 0, sizeof pn);
    CHECK(parse_numa_maps_line("7f1200000000 bind:1 anon=512 dirty=512 active=0 N1=500 N0=12 kernelpagesize_kB=4\n",
                               &start, &pn) == 0 && start == 0x7f1200000000 && pn.pages[1] == 500 && pn.pages[0] == 12 &&
          pn.total == 512 && pn.page_bytes == 4096, "numa_maps line");
    const char *bad[] = {"", "zz bind:0 N0=1 kernelpagesize_kB=4", "7f00 bind:0 N0=1",
                         "7f00 bind:0 N1024=1 kernelpagesize_kB=4", "7f00 N0=1 kernelpagesize_kB=0",
                         "7f00 N0=99999999999999 kernelpagesize_kB=4", "7f00x N0=1 kernelpagesize_kB=4",
                         "7f00 N0=1 kernelpagesize_kB=99999999999"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        memset(&pn, 0, sizeof pn);
        CHECK(parse_numa_maps_line(bad[i], &start, &pn) == -1, "'%s' must be refused", bad[i]);
    }
    memset(&pn, 0, sizeof pn);
    CHECK(parse_numa_maps_line("7f00 default file=/x\\ N0=3 kernelpagesize_kB=2048 Nx=1 N2=", &start, &pn) == 0 &&
          pn.pages[0] == 3 && pn.total == 3 && pn.page_bytes == 2048 * 1024, "odd tokens are skipped");
}

/* a bound, touched buffer verifies on node 0 from numa_maps and move_pages; the same buffer checked against another
 * node, or only half touched, is refused (the placement check a matrix cell must pass) */
static void test_verify_node(void)
{
    int nodes[MAX_NODES];
    if (numa_nodes(nodes, MAX_NODES) < 1) {
        printf("verify_node: skipped (this kernel has no NUMA support)\n");
        return;
    }
    static struct page_nodes pn;
    char err[256] = "";
    size_t bytes = 4u << 20;
    for (int huge = 0; huge < 2; huge++) {
        char *p = alloc_buffer(bytes, huge);
        CHECK(p && bind_to_node(p, bytes, 0, err, sizeof err) == 0, "bind: %s", err);
        memset(p, 1, bytes / 2);
        memset(&pn, 0, sizeof pn);
        CHECK(verify_node(p, bytes, 0, &pn, err, sizeof err) == -1 && strstr(err, "not all on NUMA node 0"),
              "half-touched buffer must fail: %s", err);
        memset(p, 1, bytes);
        memset(&pn, 0, sizeof pn);
        CHECK(verify_node(p, bytes, 0, &pn, err, sizeof err) == 0 && pn.pages[0] * pn.page_bytes == bytes &&
              pn.total == pn.pages[0], "bound buffer on node 0 (huge=%d): %s", huge, err);
        CHECK(verify_node(p, bytes, 1, &pn, err, sizeof err) == -1 && strstr(err, "node 1"),
              "the same buffer is not on node 1: %s", err);
        CHECK(verify_node(p + 4096, bytes - 4096, 0, &pn, err, sizeof err) == -1 && strstr(err, "one mapping"),
              "a part of a mapping is refused: %s", err);
        free_buffer(p, bytes);
    }
}

static void write_file(const char *root, const char *rel, const char *text)
{
    char path[512], cmd[600];
    snprintf(path, sizeof path, "%s/%s", root, rel);
    snprintf(cmd, sizeof cmd, "mkdir -p \"$(dirname '%s')\"", path);
    if (system(cmd) != 0)
        return;
    FILE *f = fopen(path, "w");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

/* a faked sysfs: two nodes with CPUs, a memory-only node, caches; then broken files */
static void test_fake_sysfs(void)
{
    char root[] = "/tmp/memlat-sysfs-XXXXXX", err[256], cmd[128];
    if (!mkdtemp(root))
        return;
    setenv("MEMLAT_SYSFS_ROOT", root, 1);
    write_file(root, "devices/system/node/online", "0-2\n");
    write_file(root, "devices/system/node/has_memory", "0,2\n");
    write_file(root, "devices/system/node/node0/cpulist", "0\n");
    write_file(root, "devices/system/node/node1/cpulist", "1\n");
    write_file(root, "devices/system/node/node2/cpulist", "\n");
    static struct topo t;
    CHECK(topo_read(&t, err, sizeof err) == 0 && t.nnodes == 3 && t.has_memory[0] && !t.has_memory[1] &&
          t.has_memory[2] && t.cpu_node[0] == 0 && t.cpu_node[1] == 1 && t.cpu_node[2] == -1, "fake topology: %s", err);
    write_file(root, "devices/system/node/node1/cpulist", "1-0\n");
    CHECK(topo_read(&t, err, sizeof err) == -1 && strstr(err, "node1/cpulist"), "malformed cpulist: %s", err);
    write_file(root, "devices/system/node/online", "garbage\n");
    CHECK(topo_read(&t, err, sizeof err) == -1 && strstr(err, "online"), "malformed online: %s", err);

    const char *c = "devices/system/cpu/cpu0/cache/index";
    char rel[128];
    static const char *files[][5] = {{"0", "1", "Data", "32K", "0"}, {"1", "2", "Unified", "1024K", "0"},
                                     {"2", "3", "Unified", "32M", "0-1"}, {"3", "99", "Data", "8K", "0"},
                                     {"4", "2", "Bogus", "8K", "0"}, {"5", "2", "Data", "8Q", "0"},
                                     {"6", "2", "Data", "K", "0"}, {"7", "4", "Unified", "64M", "0;rm"}};
    static const char *names[] = {"level", "type", "size", "shared_cpu_list"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++)
        for (int k = 0; k < 4; k++) {
            snprintf(rel, sizeof rel, "%s%s/%s", c, files[i][0], names[k]);
            write_file(root, rel, files[i][k + 1]);
        }
    struct cache caches[MAX_CACHES];
    int n = read_caches(0, caches, MAX_CACHES);
    CHECK(n == 4 && caches[0].bytes == 32768 && caches[2].bytes == 32u << 20 && !strcmp(caches[2].shared, "0-1") &&
          caches[3].level == 4 && !strcmp(caches[3].shared, "?"), "fake caches: %d read", n);
    unsetenv("MEMLAT_SYSFS_ROOT");
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    CHECK(system(cmd) == 0, "cleanup");
}

static void test_default_sizes(void)
{
    uint64_t kib[MAX_SIZES];
    int n = default_sizes(64 * 1024, kib, MAX_SIZES);
    CHECK(n == 57 && kib[0] == 4 && kib[1] == 5 && kib[2] == 6 && kib[3] == 7 && kib[4] == 8 && kib[n - 1] == 65536,
          "4 KiB .. 64 MiB at 4 per octave: %d points, last %llu", n, (unsigned long long)kib[n - 1]);
    int up = 1;
    for (int i = 1; i < n; i++)
        up &= kib[i] > kib[i - 1];
    CHECK(up, "sizes strictly increasing");
    CHECK(default_sizes(4, kib, MAX_SIZES) == 1 && default_sizes(1ULL << 30, kib, 10) == 10, "bounds");
}

static void test_json(void)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    struct json j;
    int cpus[] = {0, 2, 3};
    json_begin(&j, f);
    json_str(&j, "s", "a\"b\\c\nd\x01");
    json_u64(&j, "u", 18446744073709551615ULL);
    json_num(&j, "n", 2.5, 1);
    json_num(&j, "nan", NAN, 3);
    json_num(&j, "inf", INFINITY, 3);
    json_bool(&j, "b", 0);
    json_int_list(&j, "cpus", cpus, 3);
    json_int_list(&j, "none", cpus, 0);
    json_array_begin(&j, "rows");
    for (int i = 0; i < 2; i++) {
        json_array_item(&j);
        json_int(&j, "i", i);
        json_null(&j, "x");
        json_end(&j);
    }
    json_array_end(&j);
    json_array_begin(&j, "empty");
    json_array_end(&j);
    json_object_begin(&j, "o");
    json_u64(&j, "1", 2);
    json_end(&j);
    json_end(&j);
    fclose(f);
    const char *want = "{\"s\": \"a\\\"b\\\\c\\u000ad\\u0001\", \"u\": 18446744073709551615, \"n\": 2.5, "
                       "\"nan\": null, \"inf\": null, \"b\": false, \"cpus\": [0,2,3], \"none\": [], "
                       "\"rows\": [{\"i\": 0, \"x\": null}, {\"i\": 1, \"x\": null}], \"empty\": [], \"o\": {\"1\": 2}}";
    CHECK(!strcmp(buf, want), "json writer wrote %s\n want %s", buf, want);
    free(buf);
}

/* mbind to node 0 (present on every NUMA kernel), touch half the buffer, count: the touched pages are on
 * node 0, the others not present; a placement with a page elsewhere is not ok; the text is numa_maps' */
static void test_numa(void)
{
    int nodes[MAX_NODES];
    if (numa_nodes(nodes, MAX_NODES) < 1) {
        printf("numa: skipped (this kernel has no NUMA support)\n");
        return;
    }
    size_t bytes = 64 * 4096;
    char err[256], text[256];
    char *p = alloc_buffer(bytes, 0);
    CHECK(p && bind_to_node(p, bytes, 0, err, sizeof err) == 0, "bind to node 0: %s", err);
    memset(p, 1, bytes / 2);
    static struct page_nodes pn;
    CHECK(count_page_nodes(p, bytes, &pn) == 0, "move_pages failed");
    size_t half = bytes / 2 / pn.page_bytes;
    CHECK(pn.pages[0] == half && pn.absent == pn.total - half, "node 0: %llu of %llu, absent %llu",
          (unsigned long long)pn.pages[0], (unsigned long long)pn.total, (unsigned long long)pn.absent);
    CHECK(!placement_ok(&pn, 0), "untouched pages must not pass");
    memset(p, 1, bytes);
    memset(&pn, 0, sizeof pn);
    CHECK(count_page_nodes(p, bytes, &pn) == 0 && placement_ok(&pn, 0), "all pages on node 0");
    placement_str(&pn, text, sizeof text);
    snprintf(err, sizeof err, "N0=%zu", bytes / pn.page_bytes);
    CHECK(!strcmp(text, err), "placement text %s, want %s", text, err);
    pn.pages[3] = 2;
    pn.total += 2;
    CHECK(!placement_ok(&pn, 0), "a page on node 3 must fail node 0");
    placement_str(&pn, text, sizeof text);
    CHECK(strstr(text, " N3=2") != NULL, "placement text %s", text);
    CHECK(bind_to_node(p, bytes, MAX_NODES - 1, err, sizeof err) != 0 && strstr(err, "mbind"),
          "binding to a node that is not there must fail: %s", err);
    free_buffer(p, bytes);
}

static void test_delay(void)
{
    /* the fastest of five runs, in thread CPU time: a preemption (or a sanitizer's pause) of one run on a
       busy machine must not make the short delay look longer than the long one */
    double short_ns = 0, long_ns = 0;
    for (int rep = 0; rep < 5; rep++) {
        double t0 = thread_cpu_ns();
        spin_delay(1000000);
        double t1 = thread_cpu_ns();
        spin_delay(8000000);
        double t2 = thread_cpu_ns();
        if (rep == 0 || t1 - t0 < short_ns)
            short_ns = t1 - t0;
        if (rep == 0 || t2 - t1 < long_ns)
            long_ns = t2 - t1;
    }
    CHECK(long_ns > 2 * short_ns, "spin_delay not monotonic: 1e6 units %.0f ns, 8e6 units %.0f ns", short_ns, long_ns);
    double u = calibrate_delay_unit_ns();
    CHECK(u > 0.01 && u < 100, "delay unit %.3f ns out of range", u);
}

int main(void)
{
    kernels_init();
    test_counting();
    test_chain(1000, 64, 0);
    test_chain(4096, 128, 0);
    test_chain(777, 256, 0);
    test_chain(4096, 64, 256);
    test_chain(1000, 256, 64);
    test_chain(2, 64, 0);
    test_args();
    test_suite_args();
    test_numa_maps_line();
    test_verify_node();
    test_fake_sysfs();
    test_default_sizes();
    test_json();
    test_numa();
    test_delay();
    printf("unit tests (%s kernels): %d checks, %d failures\n", kernel_isa, checks, failures);
    return failures ? 1 : 0;
}
