/* Text in an exported library: what print, f-strings and raise with computed messages make, built in memory
 * (a print is one write, as CPython's print of one line is; an f-string's result is a str the library owns),
 * and the text of scalars as CPython writes it. Included in the generated C after runtime.c. */

typedef struct { char *p; size_t n, cap; int failed; } scriptc_text;

static void scriptc_put(scriptc_text *t, const char *s, size_t n) {
    if (t->failed) return;
    if (t->n + n + 1 > t->cap) {
        size_t cap = t->cap ? t->cap : 64;
        while (cap < t->n + n + 1) cap *= 2;
        char *p = realloc(t->p, cap);
        if (p == NULL) { t->failed = 1; return; }
        t->p = p;
        t->cap = cap;
    }
    memcpy(t->p + t->n, s, n);
    t->n += n;
    t->p[t->n] = 0;
}
static void scriptc_puts(scriptc_text *t, const char *s) { scriptc_put(t, s, strlen(s)); }
static void scriptc_putc(scriptc_text *t, char c) { scriptc_put(t, &c, 1); }
static void scriptc_repeat(scriptc_text *t, const char *s, int times) { while (times-- > 0) scriptc_puts(t, s); }

/* A callback's failure: this thread's error text (as CPython would name it), returned to native code as the
   callback's nonzero status, which it turns into the PendingException code scriptc_fail keeps the text for. */
static int32_t scriptc_callback_error(const char *type, const char *message) {
    if (*message) snprintf(scriptc_error_text, sizeof scriptc_error_text, "%s: %s", type, message);
    else snprintf(scriptc_error_text, sizeof scriptc_error_text, "%s", type);
    return 1;
}

/* The end of a print plan: the line goes out in one write. */
static int32_t scriptc_text_print(scriptc_text *t) {
    int failed = t->failed;
    if (!failed && t->n) fwrite(t->p, 1, t->n, stdout);
    free(t->p);
    return failed ? scriptc_callback_error("MemoryError", "") : 0;
}

/* The end of a raise plan: "Type: message", as str(exception) reads after the type's name. */
static int32_t scriptc_text_raise(scriptc_text *t, const char *type) {
    int32_t status = t->failed ? scriptc_callback_error("MemoryError", "")
                               : scriptc_callback_error(type, t->p ? t->p : "");
    free(t->p);
    return status;
}

/* The end of a format plan: the text becomes a str the library owns (one reference, native code's). */
static int32_t scriptc_text_str(scriptc_text *t, void **out) {
    if (!t->failed && t->p == NULL) scriptc_put(t, "", 0);
    if (t->failed || scriptc_adopt_str(t->p) != 0) {
        free(t->p);
        return scriptc_callback_error("MemoryError", "");
    }
    *out = t->p;
    return 0;
}

/* -- the shortest decimal digits that read back as a float of the array's type --------------------------- */

/* float16 <-> double: float16 arrays are stored as IEEE half bits; rounding is to nearest, ties to even. */
static double scriptc_half_to_double(uint16_t h) {
    int e = (h >> 10) & 31, m = h & 1023;
    double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(m + 1024, e - 25);
    return h & 0x8000 ? -v : v;
}

static double scriptc_half_round(double v) {
    if (v == 0 || isnan(v) || isinf(v)) return v;
    int e;
    frexp(v, &e);                                     /* |v| in [2^(e-1), 2^e) */
    double ulp = ldexp(1.0, (e - 1 < -14 ? -14 : e - 1) - 10);
    double q = rint(v / ulp) * ulp;
    return fabs(q) >= 65520.0 ? copysign(INFINITY, v) : q;
}

static int scriptc_reads_back(const char *s, double x, int dtype) {
    if (dtype == SCRIPTC_FLOAT32) return strtof(s, NULL) == (float)x;
    if (dtype == SCRIPTC_FLOAT16) return scriptc_half_round(strtod(s, NULL)) == x;
    return strtod(s, NULL) == x;
}

/* |x| = 0.d[0]d[1]...d[n-1] * 10^decpt */
typedef struct { char d[40]; int n, decpt, negative; } scriptc_digits;

/* Digits from printf's "%.*e" text ([-]d.ddde[+-]XX), trailing zeros dropped. */
static void scriptc_parse_e(const char *s, scriptc_digits *out) {
    out->negative = *s == '-';
    if (out->negative) s++;
    out->n = 0;
    for (; *s && *s != 'e'; s++)
        if (*s != '.' && out->n < (int)sizeof out->d - 1) out->d[out->n++] = *s;
    while (out->n > 1 && out->d[out->n - 1] == '0') out->n--;
    out->d[out->n] = 0;
    out->decpt = atoi(s + 1) + 1;
}

/* The `precision`-digit decimal one unit (`delta`) above or below printf's "%.*e" text `buf`, in `out`. */
static void scriptc_neighbor(const char *buf, int precision, int delta, char *out, size_t size) {
    const char *p = buf + (*buf == '-');
    uint64_t m = 0, top = 1;
    for (; *p != 'e'; p++)
        if (*p != '.') m = 10 * m + (uint64_t)(*p - '0');
    int exp = atoi(p + 1);
    for (int k = 1; k < precision; k++) top *= 10;          /* the smallest `precision`-digit mantissa */
    m += (uint64_t)(int64_t)delta;
    if (m == 10 * top) { m = top; exp++; }
    else if (m < top) { m = 10 * top - 1; exp--; }
    char digits[24];
    snprintf(digits, sizeof digits, "%llu", (unsigned long long)m);
    snprintf(out, size, "%s%c.%se%d", *buf == '-' ? "-" : "", digits[0], digits + 1, exp);
}

/* The fewest significant digits that read back as x in `dtype` (finite x), the closest such if several.
   Rounding x to them usually gives them, but not always: at a power of two the values below are closer
   together, and the digits may have to be the ones a unit above (float16 0.015625 is 0.01563). */
static void scriptc_shortest(double x, int dtype, scriptc_digits *out) {
    char buf[48], up[48], down[48];
    for (int precision = 1; precision <= 17; precision++) {
        snprintf(buf, sizeof buf, "%.*e", precision - 1, x);
        if (scriptc_reads_back(buf, x, dtype)) break;
        if (x == 0) continue;
        scriptc_neighbor(buf, precision, 1, up, sizeof up);
        scriptc_neighbor(buf, precision, -1, down, sizeof down);
        int u = scriptc_reads_back(up, x, dtype), d = scriptc_reads_back(down, x, dtype);
        if (u && (!d || fabs(strtod(up, NULL) - x) <= fabs(strtod(down, NULL) - x))) { strcpy(buf, up); break; }
        if (d) { strcpy(buf, down); break; }
    }
    scriptc_parse_e(buf, out);
    out->negative = signbit(x) != 0;
}

/* CPython's float repr layout of digits: exponent form when the point is more than 16 digits right or 4 left
   of the first digit (NumPy's float32/float16 scalars print their own shortest digits the same way). */
static void scriptc_put_repr_digits(scriptc_text *t, const scriptc_digits *g) {
    int n = g->n, decpt = g->decpt;
    if (g->negative) scriptc_putc(t, '-');
    if (decpt <= -4 || decpt > 16) {
        char e[8];
        scriptc_putc(t, g->d[0]);
        if (n > 1) { scriptc_putc(t, '.'); scriptc_put(t, g->d + 1, (size_t)n - 1); }
        snprintf(e, sizeof e, "e%c%02d", decpt - 1 < 0 ? '-' : '+', abs(decpt - 1));
        scriptc_puts(t, e);
    } else if (decpt <= 0) {
        scriptc_puts(t, "0.");
        scriptc_repeat(t, "0", -decpt);
        scriptc_put(t, g->d, (size_t)n);
    } else {
        for (int i = 0; i < decpt; i++) scriptc_putc(t, i < n ? g->d[i] : '0');
        scriptc_putc(t, '.');
        if (n > decpt) scriptc_put(t, g->d + decpt, (size_t)(n - decpt));
        else scriptc_putc(t, '0');
    }
}

static void scriptc_put_float_of(scriptc_text *t, double x, int dtype) {
    if (isnan(x)) { scriptc_puts(t, "nan"); return; }      /* whatever the sign bit: CPython prints nan */
    if (isinf(x)) { scriptc_puts(t, x < 0 ? "-inf" : "inf"); return; }
    scriptc_digits g;
    scriptc_shortest(x, dtype, &g);
    scriptc_put_repr_digits(t, &g);
}

static void scriptc_put_float(scriptc_text *t, double x) { scriptc_put_float_of(t, x, SCRIPTC_FLOAT64); }

static void scriptc_put_int(scriptc_text *t, int64_t x) {
    char num[24];
    snprintf(num, sizeof num, "%lld", (long long)x);
    scriptc_puts(t, num);
}
static void scriptc_put_bool(scriptc_text *t, int8_t x) { scriptc_puts(t, x ? "True" : "False"); }
static void scriptc_put_str(scriptc_text *t, const char *s) { scriptc_puts(t, s ? s : ""); }

/* repr(str): CPython's choice of quotes and its escapes of control characters (UTF-8 text is printable). */
static void scriptc_put_str_repr(scriptc_text *t, const char *s) {
    int single = strchr(s, '\'') != NULL, dbl = strchr(s, '"') != NULL;
    char quote = single && !dbl ? '"' : '\'';
    scriptc_putc(t, quote);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        char esc[8];
        if (*p == quote || *p == '\\') { scriptc_putc(t, '\\'); scriptc_putc(t, (char)*p); }
        else if (*p == '\n') scriptc_puts(t, "\\n");
        else if (*p == '\t') scriptc_puts(t, "\\t");
        else if (*p == '\r') scriptc_puts(t, "\\r");
        else if (*p < 0x20 || *p == 0x7f) { snprintf(esc, sizeof esc, "\\x%02x", *p); scriptc_puts(t, esc); }
        else scriptc_putc(t, (char)*p);
    }
    scriptc_putc(t, quote);
}
