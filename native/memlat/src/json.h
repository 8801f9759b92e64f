/* A tiny JSON writer for memlat's one-line outputs: objects of named fields, arrays of objects.
 * Strings are escaped ('"', '\\' and control characters as \u00XX); a number that is not finite
 * is written as null by json_num. Fields are separated by ", " and keys by ": ", so an object comes out
 * as {"a": 1, "b": "x"} — the layout the engine has always printed (app/runners/memory.py reads it). */
#ifndef MEMLAT_JSON_H
#define MEMLAT_JSON_H
#include <stdint.h>
#include <stdio.h>

struct json {
    FILE *f;
    int first;      /* no field written yet in the innermost object or array */
};

void json_string(FILE *f, const char *s);                /* a quoted, escaped string */
void json_begin(struct json *j, FILE *f);                /* "{" */
void json_end(struct json *j);                           /* "}" */
void json_str(struct json *j, const char *key, const char *s);
void json_u64(struct json *j, const char *key, uint64_t v);
void json_int(struct json *j, const char *key, int v);
void json_bool(struct json *j, const char *key, int v);
void json_null(struct json *j, const char *key);
/* %.<decimals>f, or null when v is not finite */
void json_num(struct json *j, const char *key, double v, int decimals);
/* %.<decimals>f always (values the engine computes itself and that are finite) */
void json_fixed(struct json *j, const char *key, double v, int decimals);
/* [1,2,3]: integers joined by "," without spaces */
void json_int_list(struct json *j, const char *key, const int *v, int n);
/* [1.5,2.25]: numbers with `decimals` digits (null when not finite), no spaces */
void json_num_list(struct json *j, const char *key, const double *v, int n, int decimals);
/* "key": [ ... ]  with objects inside: json_array_item() before each, then json_array_end() */
void json_array_begin(struct json *j, const char *key);
void json_array_item(struct json *j);                    /* separator, then "{" */
void json_array_end(struct json *j);                     /* "]" */
/* "key": { ... }  closed by json_end() */
void json_object_begin(struct json *j, const char *key);
#endif
