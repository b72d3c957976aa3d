/* The runtime of a library made by `scriptc export`: what the Python process provides to JIT-compiled code
 * (the libm functions under private names, the per-thread error payload, allocation counters, str reference
 * counts, printing), here in C so that the library needs only the C and math libraries.
 *
 * The generated part of the library (exported.c, written by scriptc/backend/export/cabi.py) includes this file
 * after defining SCRIPTC_LIB (the library's name) and the tables it refers to: the error messages, the print
 * plans and the str constants.
 *
 * Strings: exported code only ever holds str constants and str arguments, so a str is a `const char *` (UTF-8)
 * and reference counting it does nothing. */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SCRIPTC_PAYLOAD_SLOTS 64

/* -- what native code refers to by name ------------------------------------------------------------------ */
int64_t scriptc_allocations __asm__("scriptc.allocations") = 0;
int64_t scriptc_frees __asm__("scriptc.frees") = 0;
pthread_key_t scriptc_payload_key __asm__("scriptc.payload_key");
int64_t scriptc_payload_fallback[SCRIPTC_PAYLOAD_SLOTS] __asm__("scriptc.payload_fallback");

void *scriptc_getspecific(pthread_key_t k) __asm__("scriptc.pthread_getspecific");
void *scriptc_getspecific(pthread_key_t k) { return pthread_getspecific(k); }
int scriptc_setspecific(pthread_key_t k, const void *p) __asm__("scriptc.pthread_setspecific");
int scriptc_setspecific(pthread_key_t k, const void *p) { return pthread_setspecific(k, p); }
void *scriptc_calloc(size_t n, size_t size) __asm__("scriptc.calloc");
void *scriptc_calloc(size_t n, size_t size) { return calloc(n, size); }

void scriptc_incref(const void *s) __asm__("scriptc.py.incref");
void scriptc_incref(const void *s) { (void)s; }
void scriptc_decref(const void *s) __asm__("scriptc.py.decref");
void scriptc_decref(const void *s) { (void)s; }

#define LIBM1(name) double scriptc_libm_##name(double) __asm__("scriptc.libm." #name); \
    double scriptc_libm_##name(double x) { return name(x); }
#define LIBM2(name) double scriptc_libm_##name(double, double) __asm__("scriptc.libm." #name); \
    double scriptc_libm_##name(double x, double y) { return name(x, y); }
LIBM1(sin) LIBM1(cos) LIBM1(tan) LIBM1(asin) LIBM1(acos) LIBM1(atan) LIBM1(sinh) LIBM1(cosh) LIBM1(tanh)
LIBM1(exp) LIBM1(expm1) LIBM1(log) LIBM1(log2) LIBM1(log10) LIBM1(log1p)
LIBM2(pow) LIBM2(atan2) LIBM2(fmod) LIBM2(hypot)
double scriptc_libm_frexp(double, int *) __asm__("scriptc.libm.frexp");
double scriptc_libm_frexp(double x, int *e) { return frexp(x, e); }
double scriptc_libm_ldexp(double, int) __asm__("scriptc.libm.ldexp");
double scriptc_libm_ldexp(double x, int e) { return ldexp(x, e); }

/* -- errors ----------------------------------------------------------------------------------------------- */
typedef struct { int32_t code; const char *type; const char *text; int32_t payload; } scriptc_error;
static const scriptc_error *scriptc_find_error(int32_t code);   /* the generated table */

static pthread_once_t scriptc_once = PTHREAD_ONCE_INIT;
static void scriptc_make_key(void) {
    if (pthread_key_create(&scriptc_payload_key, free) != 0)
        abort();
}
static void scriptc_init(void) { pthread_once(&scriptc_once, scriptc_make_key); }
/* When the library is loaded: the CPython entry points (scriptc.load) call the kernels without the C wrappers. */
__attribute__((constructor)) static void scriptc_on_load(void) { scriptc_init(); }

static __thread char scriptc_error_text[1024];

static void scriptc_append(size_t *at, const char *s, size_t n) {
    size_t room = sizeof scriptc_error_text - 1 - *at;
    if (n > room) n = room;
    memcpy(scriptc_error_text + *at, s, n);
    *at += n;
    scriptc_error_text[*at] = 0;
}

/* Set this thread's error text for `code` (the payload numbers native code stored formatted into its
   template's {0}, {1}, ...); returns `code`. */
static int scriptc_fail(int32_t code) {
    const scriptc_error *e = scriptc_find_error(code);
    size_t at = 0;
    scriptc_error_text[0] = 0;
    if (e == NULL) {
        snprintf(scriptc_error_text, sizeof scriptc_error_text, "SystemError: native code returned unknown status %d",
                 (int)code);
        return code;
    }
    scriptc_append(&at, e->type, strlen(e->type));
    scriptc_append(&at, ": ", 2);
    const int64_t *payload = pthread_getspecific(scriptc_payload_key);
    if (payload == NULL) payload = scriptc_payload_fallback;
    for (const char *p = e->text; *p; p++) {
        if (e->payload && p[0] == '{' && p[1] >= '0' && p[1] <= '9') {
            char *end;
            long k = strtol(p + 1, &end, 10);
            if (*end == '}' && k < SCRIPTC_PAYLOAD_SLOTS) {
                char num[32];
                int n = snprintf(num, sizeof num, "%lld", (long long)payload[k]);
                scriptc_append(&at, num, (size_t)n);
                p = end;
                continue;
            }
        }
        if (e->payload && (p[0] == '{' || p[0] == '}') && p[1] == p[0])
            p++;                                  /* "{{" and "}}" in a template are literal braces */
        scriptc_append(&at, p, 1);
    }
    return code;
}

/* An argument of the wrong kind: the TypeError the Python entry raises. */
static int scriptc_argument_error(const char *message) {
    snprintf(scriptc_error_text, sizeof scriptc_error_text, "TypeError: %s", message);
    return -1;
}

static const char *scriptc_dtype_names[] = {"float64", "float32", "float16", "int64", "int32", "int16", "int8",
                                            "uint8", "bool"};

static int scriptc_check_array(const char *fname, const char *pname, const scriptc_array *a, int32_t dtype,
                               int32_t ndim, const int64_t *dims) {
    char message[256];
    if (a == NULL || a->ndim != ndim || a->dtype != dtype) {
        const char *got = a == NULL ? "NULL" : (a->dtype >= 0 && a->dtype <= 8 ? scriptc_dtype_names[a->dtype] : "?");
        snprintf(message, sizeof message, "%s(): argument '%s': expected a %s array of rank %d, got a %s array of rank %d",
                 fname, pname, scriptc_dtype_names[dtype], (int)ndim, got, a == NULL ? 0 : (int)a->ndim);
        return scriptc_argument_error(message);
    }
    for (int32_t k = 0; k < ndim; k++) {
        if (dims[k] >= 0 && a->shape[k] != dims[k]) {
            snprintf(message, sizeof message, "%s(): argument '%s': dimension %d is %lld, exported for %lld", fname,
                     pname, (int)k, (long long)a->shape[k], (long long)dims[k]);
            return scriptc_argument_error(message);
        }
    }
    return 0;
}

static void scriptc_release_meminfo(void *owner) {
    if (owner == NULL) return;
    int64_t *count = owner;
    if (--*count == 0) {
        free(owner);
        scriptc_frees++;
    }
}

/* -- printing: CPython's text ----------------------------------------------------------------------------- */

/* repr(float): the shortest digits that read back as the same double, laid out as CPython does (exponent
   form when the decimal point would be more than 16 digits right or 4 left of the first digit). */
static void scriptc_float_repr(double x, char *out, size_t size) {
    if (isnan(x)) { snprintf(out, size, "nan"); return; }
    if (isinf(x)) { snprintf(out, size, x < 0 ? "-inf" : "inf"); return; }
    char buf[40];
    int precision;
    for (precision = 1; precision <= 17; precision++) {
        snprintf(buf, sizeof buf, "%.*e", precision - 1, x);
        if (strtod(buf, NULL) == x) break;
    }
    /* buf: [-]d[.ddd]e[+-]XX */
    const char *p = buf;
    int negative = *p == '-';
    if (negative) p++;
    char digits[24];
    int n = 0;
    for (; *p && *p != 'e'; p++)
        if (*p != '.') digits[n++] = *p;
    while (n > 1 && digits[n - 1] == '0') n--;            /* "%.*e" pads; repr does not */
    digits[n] = 0;
    int exponent = atoi(p + 1);
    int decpt = exponent + 1;                              /* digits before the decimal point */
    char *o = out;
    char *end = out + size - 1;
#define PUT(c) do { if (o < end) *o++ = (c); } while (0)
    if (negative) PUT('-');
    if (decpt <= -4 || decpt > 16) {
        PUT(digits[0]);
        if (n > 1) { PUT('.'); for (int i = 1; i < n; i++) PUT(digits[i]); }
        char e[8];
        snprintf(e, sizeof e, "e%c%02d", exponent < 0 ? '-' : '+', exponent < 0 ? -exponent : exponent);
        for (char *q = e; *q; q++) PUT(*q);
    } else if (decpt <= 0) {
        PUT('0'); PUT('.');
        for (int i = 0; i < -decpt; i++) PUT('0');
        for (int i = 0; i < n; i++) PUT(digits[i]);
    } else {
        for (int i = 0; i < decpt; i++) PUT(i < n ? digits[i] : '0');
        PUT('.');
        if (n > decpt) for (int i = decpt; i < n; i++) PUT(digits[i]);
        else PUT('0');
    }
#undef PUT
    *o = 0;
}

static void scriptc_print_float(double x) {
    char text[48];
    scriptc_float_repr(x, text, sizeof text);
    fputs(text, stdout);
}

static void scriptc_print_int(int64_t x) { printf("%lld", (long long)x); }
static void scriptc_print_bool(int8_t x) { fputs(x ? "True" : "False", stdout); }
static void scriptc_print_str(const char *s) { fputs(s ? s : "", stdout); }

/* repr(str) for a str inside a printed tuple: CPython's choice of quotes for text without escapes. */
static void scriptc_print_str_repr(const char *s) {
    int single = strchr(s, '\'') != NULL, dbl = strchr(s, '"') != NULL;
    char quote = single && !dbl ? '"' : '\'';
    putchar(quote);
    for (const char *p = s; *p; p++) {
        if (*p == quote || *p == '\\') putchar('\\');
        if (*p == '\n') { fputs("\\n", stdout); continue; }
        if (*p == '\t') { fputs("\\t", stdout); continue; }
        putchar(*p);
    }
    putchar(quote);
}

/* -- the library's own entry points ----------------------------------------------------------------------- */
#define SCRIPTC_CAT2(a, b) a##b
#define SCRIPTC_CAT(a, b) SCRIPTC_CAT2(a, b)

const char *SCRIPTC_CAT(SCRIPTC_LIB, _last_error)(void) { return scriptc_error_text; }

/* For scriptc.load's CPython entry points, which call the kernels directly: this thread's error text for
   `code`, as the C functions set it (not in the header: not part of the C interface). */
int SCRIPTC_CAT(SCRIPTC_LIB, __python_error)(int32_t code) { return scriptc_fail(code); }

void SCRIPTC_CAT(SCRIPTC_LIB, _release)(scriptc_array *a) {
    if (a == NULL) return;
    scriptc_release_meminfo(a->owner);
    a->owner = NULL;
    a->data = NULL;
}
