/* The runtime of a library made by `scriptc export`: what the Python process provides to JIT-compiled code
 * (the libm functions under private names, the per-thread error payload, allocation counters, str reference
 * counts, printing), here in C so that the library needs only the C and math libraries.
 *
 * The generated part of the library (exported.c, written by scriptc/backend/export/cabi.py) includes this file
 * after defining SCRIPTC_LIB (the library's name) and the tables it refers to: the error messages, the print
 * plans and the str constants.
 *
 * Strings: a str is a `const char *` (UTF-8): a constant, an argument, or one the library made (an f-string's
 * result), which alone is reference counted: the library's strs are found by address among the live ones. */
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
int64_t scriptc_list_allocations __asm__("scriptc.list.allocations") = 0;    /* lists' buffers, counted apart */
int64_t scriptc_list_frees __asm__("scriptc.list.frees") = 0;
pthread_key_t scriptc_payload_key __asm__("scriptc.payload_key");
int64_t scriptc_payload_fallback[SCRIPTC_PAYLOAD_SLOTS + 1] __asm__("scriptc.payload_fallback");   /* + stack floor */

void *scriptc_getspecific(pthread_key_t k) __asm__("scriptc.pthread_getspecific");
void *scriptc_getspecific(pthread_key_t k) { return pthread_getspecific(k); }
int scriptc_setspecific(pthread_key_t k, const void *p) __asm__("scriptc.pthread_setspecific");
int scriptc_setspecific(pthread_key_t k, const void *p) { return pthread_setspecific(k, p); }
void *scriptc_calloc(size_t n, size_t size) __asm__("scriptc.calloc");
void *scriptc_calloc(size_t n, size_t size) { return calloc(n, size); }

/* The live strs the library made and their reference counts. Few are alive at once (an f-string is made,
   printed or raised, and dropped), so a list searched under a lock will do; none alive is the common case
   (constants and arguments), checked without the lock. */
typedef struct { const void *s; int64_t refs; } scriptc_owned_str;
static pthread_mutex_t scriptc_strs_lock = PTHREAD_MUTEX_INITIALIZER;
static scriptc_owned_str *scriptc_strs;
static size_t scriptc_strs_n, scriptc_strs_cap;
static volatile size_t scriptc_strs_live;

static int scriptc_adopt_str(const void *s) {
    pthread_mutex_lock(&scriptc_strs_lock);
    if (scriptc_strs_n == scriptc_strs_cap) {
        size_t cap = scriptc_strs_cap ? 2 * scriptc_strs_cap : 16;
        scriptc_owned_str *grown = realloc(scriptc_strs, cap * sizeof *grown);
        if (grown == NULL) { pthread_mutex_unlock(&scriptc_strs_lock); return -1; }
        scriptc_strs = grown;
        scriptc_strs_cap = cap;
    }
    scriptc_strs[scriptc_strs_n++] = (scriptc_owned_str){s, 1};
    __atomic_store_n(&scriptc_strs_live, scriptc_strs_n, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&scriptc_strs_lock);
    return 0;
}

static void scriptc_str_refs(const void *s, int64_t change) {
    if (s == NULL || __atomic_load_n(&scriptc_strs_live, __ATOMIC_ACQUIRE) == 0) return;
    pthread_mutex_lock(&scriptc_strs_lock);
    for (size_t k = 0; k < scriptc_strs_n; k++) {
        if (scriptc_strs[k].s != s) continue;
        if ((scriptc_strs[k].refs += change) == 0) {
            free((void *)s);
            scriptc_strs[k] = scriptc_strs[--scriptc_strs_n];
            __atomic_store_n(&scriptc_strs_live, scriptc_strs_n, __ATOMIC_RELEASE);
        }
        break;
    }
    pthread_mutex_unlock(&scriptc_strs_lock);
}

void scriptc_incref(const void *s) __asm__("scriptc.py.incref");
void scriptc_incref(const void *s) { scriptc_str_refs(s, 1); }
void scriptc_decref(const void *s) __asm__("scriptc.py.decref");
void scriptc_decref(const void *s) { scriptc_str_refs(s, -1); }

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

/* CPython's messages have no limit; 1 KB cut a long f-string message (1,502 characters) to 1,011. Thread-local
   storage of a loaded library is allocated per thread, when first used. */
static __thread char scriptc_error_text[16384];

static void scriptc_append(size_t *at, const char *s, size_t n) {
    size_t room = sizeof scriptc_error_text - 1 - *at;
    if (n > room) n = room;
    memcpy(scriptc_error_text + *at, s, n);
    *at += n;
    scriptc_error_text[*at] = 0;
}

/* A size in bytes as NumPy's MemoryError for an array writes it: in the binary unit its bit length picks (the
   next one when it rounds to 1024 of it), three significant digits below 1000 of a unit, none for bytes. */
static int scriptc_size_text(char *out, size_t room, int64_t nbytes) {
    static const char *units[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    int bits = 0;
    for (uint64_t v = (uint64_t)nbytes; v; v >>= 1) bits++;
    int unit = (bits - 1 > 1 ? bits - 1 : 1) / 10;
    double n = (double)nbytes / (double)((uint64_t)1 << (10 * unit));
    if (nearbyint(n) == 1024 && unit < 6) {
        unit++;
        n /= 1024;
    }
    if (unit == 0) return snprintf(out, room, "%.0f bytes", n);
    return snprintf(out, room, nearbyint(n) < 1000 ? "%#.3g %s" : "%#.0f %s", n, units[unit]);
}

/* Set this thread's error text for `code` (the payload numbers native code stored formatted into its
   template's {0}, {1}, ...); returns `code`. */
static int scriptc_fail(int32_t code) {
    const scriptc_error *e = scriptc_find_error(code);
    size_t at = 0;
    if (e != NULL && e->payload < 0)
        return code;                              /* a callback's error: it has set the text */
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
            int as_size = end[0] == '!' && end[1] == 'B' && end[2] == '}';     /* {k!B}: a size in bytes */
            if ((*end == '}' || as_size) && k < SCRIPTC_PAYLOAD_SLOTS) {
                char num[48];
                int n = as_size ? scriptc_size_text(num, sizeof num, payload[k])
                                : snprintf(num, sizeof num, "%lld", (long long)payload[k]);
                scriptc_append(&at, num, (size_t)n);
                p = end + (as_size ? 2 : 0);
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

/* A NULL out pointer: nothing is run (its result would have nowhere to go). */
static int scriptc_check_out(const char *fname, const char *oname, const void *out) {
    char message[256];
    if (out != NULL) return 0;
    snprintf(message, sizeof message, "%s(): out pointer '%s' is NULL", fname, oname);
    return scriptc_argument_error(message);
}

static const char *scriptc_dtype_names[] = {"float64", "float32", "float16", "int64", "int32", "int16", "int8",
                                            "uint8", "bool", "uint32"};

static int scriptc_check_array(const char *fname, const char *pname, const scriptc_array *a, int32_t dtype,
                               int32_t ndim, const int64_t *dims) {
    char message[256];
    if (a == NULL || a->ndim != ndim || a->dtype != dtype) {
        const char *got = a == NULL ? "NULL"
                          : (a->dtype >= 0 && a->dtype <= SCRIPTC_UINT32 ? scriptc_dtype_names[a->dtype] : "?");
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

/* -- the library's own entry points ----------------------------------------------------------------------- */
#define SCRIPTC_CAT2(a, b) a##b
#define SCRIPTC_CAT(a, b) SCRIPTC_CAT2(a, b)

const char *SCRIPTC_CAT(SCRIPTC_LIB, _last_error)(void) { return scriptc_error_text; }

/* For scriptc.load's CPython entry points, which call the kernels directly: this thread's error text for
   `code`, as the C functions set it (not in the header: not part of the C interface). */
int SCRIPTC_CAT(SCRIPTC_LIB, __python_error)(int32_t code) { return scriptc_fail(code); }

void SCRIPTC_CAT(SCRIPTC_LIB, _release_str)(const char *s) { scriptc_decref(s); }

void SCRIPTC_CAT(SCRIPTC_LIB, _release)(scriptc_array *a) {
    if (a == NULL) return;
    scriptc_release_meminfo(a->owner);
    a->owner = NULL;
    a->data = NULL;
}
