/* What run.c gives main.c and the suite modes (suite.c, c2c.c, wset.c): a measured run's state and the helpers
 * that pick CPUs, size buffers, start the banner and describe huge pages. */
#ifndef MEMLAT_RUN_H
#define MEMLAT_RUN_H
#include "memlat.h"
#include "engine.h"
#include "json.h"

#define MIB (1024.0 * 1024.0)

struct run {
    const struct opts *o;
    const struct mode_def *mode;
    const struct traffic *t;
    struct engine_cfg cfg;
    int l0, l1, st, nt;          /* traffic lines per step by kind */
    size_t per, nbufs;           /* bytes per buffer, buffers in all */
    int shrunk;                  /* the default buffer was made smaller to fit the memory available */
    uint64_t llc, ahp;           /* last-level cache bytes, AnonHugePages KiB */
    double unit_ns, ghz;
    int huge;                    /* the kernel gave some huge pages */
    char thp[32], hp_detail[256];
    char lat_cpu_s[16], load_s[1024], chase_s[96];
    struct point_result *rows;
    int nrows, low_share;
    struct page_nodes placed;    /* --mem_node: the node of every page of every buffer, as verified */
    char placed_s[256];          /* the same as numa_maps writes it: "N1=16384" */
};

struct mode_def {
    enum mode mode;
    const char *name;                                          /* "mode" in the JSON */
    void (*threads)(struct engine_cfg *cfg, const int *cpus, int ncpus);
    void (*header)(const struct run *r);                       /* the text lines before the rows */
    void (*row)(const struct run *r, const struct point_result *p, uint64_t delay);
};


__attribute__((noreturn)) void die_usage(const char *msg);     /* "memlat: error: msg", exit 2 */
__attribute__((noreturn)) void die_runtime(const char *msg);   /* "memlat: error: msg", exit 1 */
size_t round_up(size_t v, size_t a);
void cpu_list_str(char *buf, size_t n, const int *cpus, int k);
void header_top(const struct run *r);           /* banner, command line, the shrunk-buffer warning */
void huge_pages_line(const struct run *r);
void load_buffers_line(const struct run *r);
const struct mode_def *mode_by_id(enum mode m);
int pick_cpus(const struct opts *o, int *cpus); /* -k (checked against the affinity mask) or all allowed */
void configure(struct run *r, const int *cpus, int ncpus);   /* r->o, r->mode, r->t set first */
void describe(struct run *r);                   /* after engine_start: huge pages, CPUs and chase as text */

/* a figure's sub-window values (cfg.windows > 1): text lines before its row, JSON arrays in its row */
void windows_lines(const struct run *r, const struct point_result *p);
void json_windows(struct json *j, const struct run *r, const struct point_result *p);
void json_head(struct json *j, const char *mode, const struct opts *o);   /* tool, version, mode, command_line */
void json_page_nodes(struct json *j, const struct page_nodes *pn);      /* page_bytes, pages {...}, pages_total */

/* the suite modes */
int suite_run(const struct opts *o);            /* peak, scaling, latency and bandwidth matrices */
int c2c_run(const struct opts *o);
int wset_run(const struct opts *o);
#endif
