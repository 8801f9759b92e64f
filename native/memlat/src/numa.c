/* NUMA placement of the engine's buffers with the raw system calls (no libnuma needed): mbind(2) binds a
 * buffer to one node before its first touch, move_pages(2) with a NULL node list reports the node of every
 * page afterwards, so a run on node N proves its pages are on node N. */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "memlat.h"

#define MPOL_BIND 2        /* <numaif.h> (libnuma's header) is not needed for two constants */
#define MPOL_MF_STRICT 1
#define BATCH 4096         /* pages per move_pages call */

const char *sysfs_root(void)
{
    const char *r = getenv("MEMLAT_SYSFS_ROOT");   /* tests fake a topology under another directory */
    return r && *r ? r : "/sys";
}

/* one line of a sysfs file under sysfs_root(), without its newline; -1 when absent or unreadable */
int sysfs_line(const char *rel, char *buf, size_t n)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", sysfs_root(), rel);
    return file_line(path, buf, n);
}

int numa_nodes(int *nodes, int max)
{
    char buf[4096], err[128];
    if (sysfs_line("devices/system/node/online", buf, sizeof buf) < 0)
        return -1;
    return parse_cpu_list(buf, nodes, max, err, sizeof err);   /* the same "0-1,4" list syntax */
}

/* a node's CPU list ("" for a memory-only node); -1 when unreadable or malformed */
static int node_cpus(int node, int *cpus, int max)
{
    char rel[96], buf[4096], err[128];
    snprintf(rel, sizeof rel, "devices/system/node/node%d/cpulist", node);
    if (sysfs_line(rel, buf, sizeof buf) < 0)
        return -1;
    if (!buf[0])
        return 0;
    return parse_cpu_list(buf, cpus, max, err, sizeof err);
}

int topo_read(struct topo *t, char *err, size_t errlen)
{
    static int cpus[MAX_CPUS], mem[MAX_NODES];
    char buf[4096];
    memset(t, 0, sizeof *t);
    for (int c = 0; c < MAX_CPUS; c++)
        t->cpu_node[c] = -1;
    t->nnodes = numa_nodes(t->nodes, MAX_NODES);
    if (t->nnodes < 0) {
        snprintf(err, errlen, "cannot read the NUMA topology: %s/devices/system/node/online is missing or malformed",
                 sysfs_root());
        return -1;
    }
    /* has_memory is absent on old kernels: then every online node counts as having memory */
    int nmem = sysfs_line("devices/system/node/has_memory", buf, sizeof buf) == 0 && buf[0]
               ? parse_cpu_list(buf, mem, MAX_NODES, err, errlen) : -2;
    for (int i = 0; i < t->nnodes; i++) {
        int node = t->nodes[i];
        t->has_memory[node] = nmem == -2;
        for (int k = 0; k < nmem; k++)
            t->has_memory[node] |= mem[k] == node;
        int n = node_cpus(node, cpus, MAX_CPUS);
        if (n < 0) {
            snprintf(err, errlen, "cannot read the NUMA topology: %s/devices/system/node/node%d/cpulist is missing or "
                     "malformed", sysfs_root(), node);
            return -1;
        }
        for (int k = 0; k < n; k++)
            t->cpu_node[cpus[k]] = node;
    }
    return 0;
}

int bind_to_node(void *p, size_t bytes, int node, char *err, size_t errlen)
{
    unsigned long mask[MAX_NODES / (8 * sizeof(unsigned long))];
    memset(mask, 0, sizeof mask);
    mask[(size_t)node / (8 * sizeof(unsigned long))] = 1UL << ((size_t)node % (8 * sizeof(unsigned long)));
    /* maxnode is the mask's bits plus one: the kernel reads one bit fewer than it is given */
    if (syscall(SYS_mbind, p, bytes, MPOL_BIND, mask, (unsigned long)MAX_NODES + 1, MPOL_MF_STRICT) != 0) {
        snprintf(err, errlen, "cannot bind a %zu MiB buffer to NUMA node %d (mbind: %s)", bytes >> 20, node,
                 strerror(errno));
        return -1;
    }
    return 0;
}

int count_page_nodes(void *p, size_t bytes, struct page_nodes *pn)
{
    size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    void *pages[BATCH];
    int status[BATCH];
    pn->page_bytes = pg;
    for (size_t off = 0; off < bytes;) {
        unsigned long n = 0;
        for (; n < BATCH && off < bytes; n++, off += pg)
            pages[n] = (char *)p + off;
        if (syscall(SYS_move_pages, 0, n, pages, NULL, status, 0) != 0)
            return -1;
        for (unsigned long i = 0; i < n; i++) {
            if (status[i] >= 0 && status[i] < MAX_NODES)
                pn->pages[status[i]]++;
            else
                pn->absent++;     /* -ENOENT: not present; -EFAULT: not mapped */
        }
        pn->total += n;
    }
    return 0;
}

int placement_ok(const struct page_nodes *pn, int node)
{
    return pn->total > 0 && pn->pages[node] == pn->total;
}

void placement_str(const struct page_nodes *pn, char *buf, size_t n)
{
    size_t used = 0;
    buf[0] = 0;
    for (int k = 0; k < MAX_NODES && used < n; k++)
        if (pn->pages[k])
            used += (size_t)snprintf(buf + used, n - used, "%sN%d=%llu", used ? " " : "", k,
                                     (unsigned long long)pn->pages[k]);
    if (pn->absent && used < n)
        snprintf(buf + used, n - used, "%snot_present=%llu", used ? " " : "", (unsigned long long)pn->absent);
}

/* One /proc/PID/numa_maps line: "7f0000000000 bind:1 anon=512 dirty=512 N1=512 kernelpagesize_kB=4".
 * Adds its N<node>=<pages> counts to pn; the start address in *start. 0 ok, -1 malformed (hostile input:
 * every number bounded). */
int parse_numa_maps_line(const char *line, uintptr_t *start, struct page_nodes *pn)
{
    char *end;
    errno = 0;
    unsigned long long a = strtoull(line, &end, 16);
    if (end == line || errno || (*end != ' ' && *end != '\0'))
        return -1;
    *start = (uintptr_t)a;
    uint64_t kib = 0;
    for (const char *p = end; *p;) {
        while (*p == ' ')
            p++;
        size_t len = strcspn(p, " \n");
        char tok[128];
        if (len && len < sizeof tok) {
            memcpy(tok, p, len);
            tok[len] = 0;
            unsigned node;
            unsigned long long pages, kb;
            char extra;
            if (sscanf(tok, "N%u=%llu%c", &node, &pages, &extra) == 2) {
                if (node >= MAX_NODES || pages > (1ULL << 40))
                    return -1;
                pn->pages[node] += pages;
                pn->total += pages;
            } else if (sscanf(tok, "kernelpagesize_kB=%llu%c", &kb, &extra) == 1) {
                if (kb == 0 || kb > (1ULL << 21))
                    return -1;
                kib = kb;
            }
        }
        p += len;
        if (*p == '\n')
            break;
    }
    if (!kib)
        return -1;
    pn->page_bytes = (size_t)kib * 1024;
    return 0;
}

/* the end of the mapping that starts at p, from /proc/self/maps; 0 when there is none */
static uintptr_t mapping_end(const void *p)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[1024];
    uintptr_t end = 0;
    if (!f)
        return 0;
    while (fgets(line, sizeof line, f)) {
        unsigned long long a, b;
        if (sscanf(line, "%llx-%llx", &a, &b) == 2 && (uintptr_t)a == (uintptr_t)p) {
            end = (uintptr_t)b;
            break;
        }
    }
    fclose(f);
    return end;
}

int numa_maps_pages(const void *p, size_t bytes, struct page_nodes *pn, char *err, size_t errlen)
{
    uintptr_t end = mapping_end(p);
    if (end != (uintptr_t)p + bytes) {
        snprintf(err, errlen, "the buffer at %p is not one mapping of its own in /proc/self/maps", p);
        return -1;
    }
    FILE *f = fopen("/proc/self/numa_maps", "r");
    if (!f) {
        snprintf(err, errlen, "cannot read /proc/self/numa_maps (%s)", strerror(errno));
        return -1;
    }
    char line[4096];
    int found = 0, bad = 0, cont = 0;
    while (fgets(line, sizeof line, f)) {
        int whole = strchr(line, '\n') != NULL;
        if (!cont) {   /* only the beginning of a line holds an address; a longer line's rest is skipped */
            struct page_nodes one;
            uintptr_t start = 0;
            memset(&one, 0, sizeof one);
            if (strtoull(line, NULL, 16) == (unsigned long long)(uintptr_t)p) {
                found = 1;
                bad = parse_numa_maps_line(line, &start, &one) != 0 || start != (uintptr_t)p;
                if (!bad) {
                    for (int k = 0; k < MAX_NODES; k++)
                        pn->pages[k] += one.pages[k];
                    pn->total += one.total;
                    pn->page_bytes = one.page_bytes;
                }
                break;
            }
        }
        cont = !whole;
    }
    fclose(f);
    if (!found || bad) {
        snprintf(err, errlen, "/proc/self/numa_maps has %s line for the buffer at %p", found ? "a malformed" : "no", p);
        return -1;
    }
    return 0;
}

int verify_node(const void *p, size_t bytes, int node, struct page_nodes *pn, char *err, size_t errlen)
{
    static struct page_nodes mine, moved;
    char placed[256];
    memset(&mine, 0, sizeof mine);
    memset(&moved, 0, sizeof moved);
    if (numa_maps_pages(p, bytes, &mine, err, errlen) != 0)
        return -1;
    if (count_page_nodes((void *)p, bytes, &moved) != 0) {
        snprintf(err, errlen, "cannot cross-check the buffer's pages with move_pages (%s)", strerror(errno));
        return -1;
    }
    /* numa_maps counts only present pages, so all of them on `node` and as many as the buffer has means every
     * page is there; move_pages, page by page, must agree */
    if (!(mine.page_bytes && mine.pages[node] == mine.total && mine.total * mine.page_bytes == bytes) ||
        !placement_ok(&moved, node)) {
        placement_str(&mine, placed, sizeof placed);
        snprintf(err, errlen, "a buffer is not all on NUMA node %d (numa_maps pages: %s; %zu-byte pages, %zu bytes)",
                 node, placed[0] ? placed : "none", mine.page_bytes, bytes);
        return -1;
    }
    for (int k = 0; k < MAX_NODES; k++)
        pn->pages[k] += mine.pages[k];
    pn->total += mine.total;
    pn->page_bytes = mine.page_bytes;
    return 0;
}
