/* The JSON writer declared in json.h. */
#include <math.h>
#include "json.h"

void json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

static void key(struct json *j, const char *k)
{
    if (!j->first)
        fputs(", ", j->f);
    j->first = 0;
    json_string(j->f, k);
    fputs(": ", j->f);
}

void json_begin(struct json *j, FILE *f)
{
    j->f = f;
    j->first = 1;
    fputc('{', f);
}

void json_end(struct json *j)
{
    fputc('}', j->f);
    j->first = 0;
}

void json_str(struct json *j, const char *k, const char *s)
{
    key(j, k);
    json_string(j->f, s);
}

void json_u64(struct json *j, const char *k, uint64_t v)
{
    key(j, k);
    fprintf(j->f, "%llu", (unsigned long long)v);
}

void json_int(struct json *j, const char *k, int v)
{
    key(j, k);
    fprintf(j->f, "%d", v);
}

void json_bool(struct json *j, const char *k, int v)
{
    key(j, k);
    fputs(v ? "true" : "false", j->f);
}

void json_null(struct json *j, const char *k)
{
    key(j, k);
    fputs("null", j->f);
}

void json_num(struct json *j, const char *k, double v, int decimals)
{
    key(j, k);
    if (isfinite(v))
        fprintf(j->f, "%.*f", decimals, v);
    else
        fputs("null", j->f);
}

void json_fixed(struct json *j, const char *k, double v, int decimals)
{
    key(j, k);
    fprintf(j->f, "%.*f", decimals, v);
}

void json_int_list(struct json *j, const char *k, const int *v, int n)
{
    key(j, k);
    fputc('[', j->f);
    for (int i = 0; i < n; i++)
        fprintf(j->f, "%s%d", i ? "," : "", v[i]);
    fputc(']', j->f);
}

void json_num_list(struct json *j, const char *k, const double *v, int n, int decimals)
{
    key(j, k);
    fputc('[', j->f);
    for (int i = 0; i < n; i++) {
        if (isfinite(v[i]))
            fprintf(j->f, "%s%.*f", i ? "," : "", decimals, v[i]);
        else
            fprintf(j->f, "%snull", i ? "," : "");
    }
    fputc(']', j->f);
}

void json_array_begin(struct json *j, const char *k)
{
    key(j, k);
    fputc('[', j->f);
    j->first = 1;
}

void json_array_item(struct json *j)
{
    if (!j->first)
        fputs(", ", j->f);
    fputc('{', j->f);
    j->first = 1;
}

void json_array_end(struct json *j)
{
    fputc(']', j->f);
    j->first = 0;
}

void json_object_begin(struct json *j, const char *k)
{
    key(j, k);
    fputc('{', j->f);
    j->first = 1;
}
