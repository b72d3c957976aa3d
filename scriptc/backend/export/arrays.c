/* str(ndarray) and repr(ndarray) as NumPy writes them with its default print options (numpy/_core/arrayprint.py:
 * precision 8, floatmode 'maxprec', no suppression, line width 75, arrays over 1000 elements summarized with 3
 * items at each end of each axis). Included in the generated C after text.c when a plan prints an array. */

#define SCRIPTC_THRESHOLD 1000
#define SCRIPTC_EDGE 3
#define SCRIPTC_PRECISION 8
#define SCRIPTC_LINE_WIDTH 75

/* How the shown elements are written: NumPy picks one format from all of them (the shown corners of a
   summarized array), so that the columns line up. */
typedef struct {
    const scriptc_array *a;
    int summarize;
    const char *sep;                  /* " " (str) or ", " (repr) */
    int exp_format;                   /* floats: d.ddde+XX */
    int pad_left, pad_right;          /* floats: widths of the integer and fraction parts */
    int precision, exp_digits;        /* exponent format: fraction digits and exponent digits, all alike */
    int int_width;                    /* integers: the widest's width */
    /* what the shown elements hold, for choosing the format */
    int any_finite, any_nonfinite, any_neg_inf, any_nonzero;
    double max_abs, min_abs;
    int64_t max_int, min_int;
    int any_int;
} scriptc_arrayfmt;

static int scriptc_is_float(int dtype) {
    return dtype == SCRIPTC_FLOAT64 || dtype == SCRIPTC_FLOAT32 || dtype == SCRIPTC_FLOAT16;
}

static double scriptc_load_float(int dtype, const char *p) {
    if (dtype == SCRIPTC_FLOAT32) { float v; memcpy(&v, p, 4); return v; }
    if (dtype == SCRIPTC_FLOAT16) { uint16_t h; memcpy(&h, p, 2); return scriptc_half_to_double(h); }
    double v;
    memcpy(&v, p, 8);
    return v;
}

static int64_t scriptc_load_int(int dtype, const char *p) {
    switch (dtype) {
    case SCRIPTC_INT32: { int32_t v; memcpy(&v, p, 4); return v; }
    case SCRIPTC_UINT32: { uint32_t v; memcpy(&v, p, 4); return v; }
    case SCRIPTC_INT16: { int16_t v; memcpy(&v, p, 2); return v; }
    case SCRIPTC_INT8: return *(const int8_t *)p;
    case SCRIPTC_UINT8: case SCRIPTC_BOOL: return *(const uint8_t *)p;
    default: { int64_t v; memcpy(&v, p, 8); return v; }
    }
}

/* Call `fn` on each element shown, in order. */
static void scriptc_each_shown(scriptc_arrayfmt *f, const char *p, int axis,
                               void (*fn)(scriptc_arrayfmt *, const char *)) {
    const scriptc_array *a = f->a;
    if (axis == a->ndim) { fn(f, p); return; }
    int64_t n = a->shape[axis];
    for (int64_t i = 0; i < n; i++) {
        if (f->summarize && n > 2 * SCRIPTC_EDGE && i == SCRIPTC_EDGE) i = n - SCRIPTC_EDGE;
        scriptc_each_shown(f, p + i * a->strides[axis], axis + 1, fn);
    }
}

/* NumPy's choices happen in the array's type: the comparisons with 1e-4 and the cutoff, and the ratio. */
static double scriptc_in_dtype(int dtype, double v) {
    if (dtype == SCRIPTC_FLOAT32) return (float)v;
    if (dtype == SCRIPTC_FLOAT16) return scriptc_half_round((float)v);
    return v;
}

static void scriptc_survey(scriptc_arrayfmt *f, const char *p) {
    int dtype = f->a->dtype;
    if (!scriptc_is_float(dtype)) {
        int64_t v = scriptc_load_int(dtype, p);
        if (!f->any_int || v > f->max_int) f->max_int = v;
        if (!f->any_int || v < f->min_int) f->min_int = v;
        f->any_int = 1;
        return;
    }
    double v = scriptc_load_float(dtype, p);
    if (!isfinite(v)) {
        f->any_nonfinite = 1;
        if (isinf(v) && v < 0) f->any_neg_inf = 1;
        return;
    }
    f->any_finite = 1;
    if (v == 0) return;
    v = fabs(v);
    if (!f->any_nonzero || v > f->max_abs) f->max_abs = v;
    if (!f->any_nonzero || v < f->min_abs) f->min_abs = v;
    f->any_nonzero = 1;
}

/* A finite float as Dragon4 writes it with at most SCRIPTC_PRECISION fraction digits: its shortest digits when
   they fit, else rounded there. In exponent form, `min_digits` more fraction digits are the exact value's (not
   zeros: float32 0.1 is 1.00000001e-01 beside a number with 8 fraction digits). Positional: ip "." fp;
   exponent form: ip "." fp "e" exp. */
typedef struct { char ip[24], fp[24]; int exp; } scriptc_parts;

static void scriptc_float_parts(double x, int dtype, int exp_format, int min_digits, scriptc_parts *out) {
    scriptc_digits g;
    char buf[64];
    scriptc_shortest(x, dtype, &g);
    const char *sign = g.negative ? "-" : "";
    if (exp_format) {
        int digits = g.n - 1 > SCRIPTC_PRECISION ? SCRIPTC_PRECISION : g.n - 1 < min_digits ? min_digits : -1;
        if (digits >= 0) {
            snprintf(buf, sizeof buf, "%.*e", digits, fabs(x));
            scriptc_parse_e(buf, &g);
            g.negative = signbit(x) != 0;
        }
        snprintf(out->ip, sizeof out->ip, "%s%c", sign, g.d[0]);
        snprintf(out->fp, sizeof out->fp, "%s", g.d + 1);
        out->exp = g.decpt - 1;
        return;
    }
    out->exp = 0;
    if (g.n - g.decpt > SCRIPTC_PRECISION) {
        snprintf(buf, sizeof buf, "%.*f", SCRIPTC_PRECISION, fabs(x));
        char *dot = strchr(buf, '.');
        *dot = 0;
        size_t k = strlen(dot + 1);
        while (k > 0 && dot[k] == '0') dot[k--] = 0;
        snprintf(out->ip, sizeof out->ip, "%s%s", sign, buf);
        snprintf(out->fp, sizeof out->fp, "%s", dot + 1);
        return;
    }
    char *ip = out->ip, *fp = out->fp;
    ip += sprintf(ip, "%s", sign);
    if (g.decpt <= 0) *ip++ = '0';
    for (int i = 0; i < g.decpt; i++) *ip++ = i < g.n ? g.d[i] : '0';
    *ip = 0;
    for (int i = g.decpt < 0 ? g.decpt : 0; i < 0; i++) *fp++ = '0';
    for (int i = g.decpt > 0 ? g.decpt : 0; i < g.n; i++) *fp++ = g.d[i];
    *fp = 0;
}

static void scriptc_measure(scriptc_arrayfmt *f, const char *p) {
    double v = scriptc_load_float(f->a->dtype, p);
    if (!isfinite(v)) return;
    scriptc_parts s;
    scriptc_float_parts(v, f->a->dtype, f->exp_format, 0, &s);
    int ip = (int)strlen(s.ip), fp = (int)strlen(s.fp);
    if (ip > f->pad_left) f->pad_left = ip;
    if (f->exp_format) {
        char e[8];
        int digits = snprintf(e, sizeof e, "%d", abs(s.exp));
        if (digits < 2) digits = 2;
        if (digits > f->exp_digits) f->exp_digits = digits;
        if (fp > f->precision) f->precision = fp;
    } else if (fp > f->pad_right) {
        f->pad_right = fp;
    }
}

/* FloatingFormat.fillFormat, IntegerFormat: the format of the shown elements. */
static void scriptc_choose_format(scriptc_arrayfmt *f, const char *data) {
    int dtype = f->a->dtype;
    scriptc_each_shown(f, data, 0, scriptc_survey);
    if (!scriptc_is_float(dtype)) {
        char lo[24], hi[24];
        snprintf(hi, sizeof hi, "%lld", (long long)f->max_int);
        snprintf(lo, sizeof lo, "%lld", (long long)f->min_int);
        f->int_width = (int)(strlen(hi) > strlen(lo) ? strlen(hi) : strlen(lo));
        return;
    }
    if (f->any_nonzero) {
        double cutoff = dtype == SCRIPTC_FLOAT64 ? 1e8 : dtype == SCRIPTC_FLOAT32 ? 1e6 : 1e3;
        double ratio = dtype == SCRIPTC_FLOAT64 ? f->max_abs / f->min_abs
                     : dtype == SCRIPTC_FLOAT32 ? (double)((float)f->max_abs / (float)f->min_abs)
                     : scriptc_half_round((float)f->max_abs / (float)f->min_abs);
        f->exp_format = f->max_abs >= cutoff || f->min_abs < scriptc_in_dtype(dtype, 1e-4) || ratio > 1000.0;
    }
    if (f->any_finite) scriptc_each_shown(f, data, 0, scriptc_measure);
    if (f->exp_format) f->pad_right = f->exp_digits + 2 + f->precision;
    if (f->any_nonfinite) {
        int offset = f->pad_right + 1;
        if (3 - offset > f->pad_left) f->pad_left = 3 - offset;
        if (3 + f->any_neg_inf - offset > f->pad_left) f->pad_left = 3 + f->any_neg_inf - offset;
    }
}

/* One element's text ("word"), in `word` (big enough for any: the widths are at most a few dozen). */
static int scriptc_word(const scriptc_arrayfmt *f, const char *p, char *word, size_t size) {
    int dtype = f->a->dtype;
    if (dtype == SCRIPTC_BOOL) return snprintf(word, size, "%s", *p ? " True" : "False");
    if (!scriptc_is_float(dtype))
        return snprintf(word, size, "%*lld", f->int_width, (long long)scriptc_load_int(dtype, p));
    double v = scriptc_load_float(dtype, p);
    if (!isfinite(v))
        return snprintf(word, size, "%*s", f->pad_left + f->pad_right + 1, isnan(v) ? "nan" : v < 0 ? "-inf" : "inf");
    scriptc_parts s;
    scriptc_float_parts(v, dtype, f->exp_format, f->precision, &s);
    if (f->exp_format)
        return snprintf(word, size, "%*s.%s%.*se%c%0*d", f->pad_left, s.ip, s.fp,
                        f->precision - (int)strlen(s.fp), "00000000", s.exp < 0 ? '-' : '+', f->exp_digits,
                        abs(s.exp));
    return snprintf(word, size, "%*s.%-*s", f->pad_left, s.ip, f->pad_right, s.fp);
}

/* _formatArray's recursion, writing as it goes: `hang` is the hanging indent's width (the first line's is
   replaced by "["), `width` the line width left at this depth. */
static void scriptc_format_axis(scriptc_text *t, const scriptc_arrayfmt *f, const char *p, int axis, int hang,
                                int width) {
    const scriptc_array *a = f->a;
    int64_t n = a->shape[axis];
    int axes_left = a->ndim - axis;
    int summary = f->summarize && n > 2 * SCRIPTC_EDGE;
    size_t sep_len = strlen(f->sep), sep_word = f->sep[sep_len - 1] == ' ' ? sep_len - 1 : sep_len;
    scriptc_putc(t, '[');
    if (axes_left == 1) {
        int elem_width = width - 1;
        int line = hang;                               /* the logical line's length, hanging indent included */
        for (int64_t i = 0; i < n; i++) {
            char word[96];
            int len;
            if (summary && i == SCRIPTC_EDGE) {
                len = snprintf(word, sizeof word, "...");
                i = n - SCRIPTC_EDGE - 1;
            } else {
                len = scriptc_word(f, p + i * a->strides[axis], word, sizeof word);
            }
            if (line + len > elem_width && line > hang) {
                while (t->n && t->p[t->n - 1] == ' ') t->p[--t->n] = 0;
                scriptc_putc(t, '\n');
                scriptc_repeat(t, " ", hang);
                line = hang;
            }
            scriptc_puts(t, word);
            line += len;
            if (i + 1 < n) { scriptc_puts(t, f->sep); line += (int)sep_len; }
        }
    } else {
        for (int64_t i = 0; i < n; i++) {
            if (i) scriptc_repeat(t, " ", hang);
            if (summary && i == SCRIPTC_EDGE) {
                scriptc_puts(t, "...");
                i = n - SCRIPTC_EDGE - 1;
            } else {
                scriptc_format_axis(t, f, p + i * a->strides[axis], axis + 1, hang + 1, width - 1);
            }
            if (i + 1 < n) {
                scriptc_put(t, f->sep, sep_word);
                scriptc_repeat(t, "\n", axes_left - 1);
            }
        }
    }
    scriptc_putc(t, ']');
}

static const char *scriptc_array_data(const scriptc_array *a) { return a->data; }

static int64_t scriptc_size(const scriptc_array *a) {
    int64_t size = 1;
    for (int k = 0; k < a->ndim; k++) size *= a->shape[k];
    return size;
}

/* str(a) (`repr` 0) or repr(a) (`repr` 1). */
static void scriptc_put_array(scriptc_text *t, const scriptc_array *a, int repr) {
    int64_t size = scriptc_size(a);
    scriptc_arrayfmt f;
    memset(&f, 0, sizeof f);
    f.a = a;
    f.sep = repr ? ", " : " ";
    f.summarize = size > SCRIPTC_THRESHOLD;
    if (a->ndim == 0 && !repr) {                /* a 0-d array prints as its scalar */
        if (scriptc_is_float(a->dtype)) scriptc_put_float_of(t, scriptc_load_float(a->dtype, a->data), a->dtype);
        else if (a->dtype == SCRIPTC_BOOL) scriptc_put_bool(t, *(const int8_t *)a->data);
        else scriptc_put_int(t, scriptc_load_int(a->dtype, a->data));
        return;
    }
    size_t start = t->n;
    if (repr) scriptc_puts(t, "array(");
    if (size == 0) {
        scriptc_puts(t, "[]");
    } else if (a->ndim == 0) {
        char word[96];
        scriptc_choose_format(&f, scriptc_array_data(a));
        scriptc_word(&f, scriptc_array_data(a), word, sizeof word);
        scriptc_puts(t, word);
    } else {
        scriptc_choose_format(&f, scriptc_array_data(a));
        int prefix = repr ? 6 : 0;                /* "array(" */
        scriptc_format_axis(t, &f, scriptc_array_data(a), 0, 1 + prefix, SCRIPTC_LINE_WIDTH - repr);
    }
    if (!repr) return;
    /* what the text does not tell: the shape (empty or summarized), the dtype (unless float64, int64, bool) */
    char extras[200];
    int n = 0;
    if ((size == 0 && !(a->ndim == 1)) || f.summarize) {
        n += snprintf(extras + n, sizeof extras - n, "shape=(");
        for (int k = 0; k < a->ndim; k++)
            n += snprintf(extras + n, sizeof extras - n, k ? ", %lld" : "%lld", (long long)a->shape[k]);
        n += snprintf(extras + n, sizeof extras - n, a->ndim == 1 ? ",)" : ")");
    }
    if (size == 0 || !(a->dtype == SCRIPTC_FLOAT64 || a->dtype == SCRIPTC_INT64 || a->dtype == SCRIPTC_BOOL))
        n += snprintf(extras + n, sizeof extras - n, "%sdtype=%s", n ? ", " : "", scriptc_dtype_names[a->dtype]);
    if (n == 0) { scriptc_putc(t, ')'); return; }
    scriptc_putc(t, ',');
    if (t->failed) return;
    const char *last = t->p + t->n;
    while (last > t->p + start && last[-1] != '\n') last--;
    int last_line = (int)(t->p + t->n - last);
    if (last_line + n + 1 + 1 > SCRIPTC_LINE_WIDTH) scriptc_puts(t, "\n      ");
    else scriptc_putc(t, ' ');
    scriptc_puts(t, extras);
    scriptc_putc(t, ')');
}
