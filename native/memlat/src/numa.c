/* NUMA placement of the engine's buffers with the raw system calls (no libnuma needed): mbind(2) binds a
 * buffer to one node before its first touch, move_pages(2) with a NULL node list reports the node of every
 * page afterwards, so a run on node N proves its pages are on node N. */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "memlat.h"

#define MPOL_BIND 2        /* <numaif.h> (libnuma's header) is not needed for two constants */
#define MPOL_MF_STRICT 1
#define NODE_DIR "/sys/devices/system/node"
#define BATCH 4096         /* pages per move_pages call */

int numa_nodes(int *nodes, int max)
{
    char buf[4096], err[128];
    FILE *f = fopen(NODE_DIR "/online", "r");
    if (!f)
        return -1;
    char *r = fgets(buf, sizeof buf, f);
    fclose(f);
    if (!r)
        return -1;
    buf[strcspn(buf, "\n")] = 0;
    return parse_cpu_list(buf, nodes, max, err, sizeof err);   /* the same "0-1,4" list syntax */
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
