/* The format-spec mini-language for int, float and str values, as CPython's format() writes them. cabi.py
 * parses each spec at export time (and checks CPython accepts it), resolving the defaults that depend on the
 * value's type: here a spec is plain fields. Included in the generated C after text.c when a plan uses a spec. */

typedef struct {
    const char *fill;        /* one character, UTF-8 */
    char align;              /* '<' '>' '^' '=' */
    char sign;               /* '-' '+' ' ' */
    char z;                  /* 'z': negative zero (after rounding) loses its sign */
    char alt;                /* '#' */
    int width;
    char group;              /* ',' '_' or 0 */
    int precision;           /* -1: none given */
    char type;               /* 0 for none */
} scriptc_spec;

/* Width counts characters, not bytes. */
static int scriptc_chars(const char *s, size_t n) {
    int count = 0;
    for (size_t k = 0; k < n; k++) count += ((unsigned char)s[k] & 0xC0) != 0x80;
    return count;
}

/* head (sign, 0x) and body padded to the width: '=' pads between them. */
static void scriptc_pad(scriptc_text *t, const scriptc_spec *s, const char *head, const char *body, size_t body_n) {
    int pad = s->width - scriptc_chars(head, strlen(head)) - scriptc_chars(body, body_n);
    int left = 0, right = 0;
    if (pad > 0) {
        if (s->align == '<') right = pad;
        else if (s->align == '^') { left = pad / 2; right = pad - left; }
        else left = pad;
    }
    if (s->align != '=') scriptc_repeat(t, s->fill, left);
    scriptc_puts(t, head);
    if (s->align == '=') scriptc_repeat(t, s->fill, left);
    scriptc_put(t, body, body_n);
    scriptc_repeat(t, s->fill, right);
}

/* body with `group` between every `every` of its first `run` digits. */
static void scriptc_group(const char *body, size_t run, char group, int every, char *out, size_t size) {
    size_t o = 0;
    for (size_t k = 0; k < run && o + 2 < size; k++) {
        if (k && (run - k) % every == 0) out[o++] = group;
        out[o++] = body[k];
    }
    snprintf(out + o, size - o, "%s", body + run);
}

static const char *scriptc_sign_of(int negative, const scriptc_spec *s) {
    return negative ? "-" : s->sign == '+' ? "+" : s->sign == ' ' ? " " : "";
}

static void scriptc_format_float(scriptc_text *t, double x, const scriptc_spec *s) {
    char body[400], grouped[560];
    char type = s->type;
    int upper = type == 'E' || type == 'F' || type == 'G';
    int negative = signbit(x) && !isnan(x);
    double v = fabs(x);
    if (type == '%') v *= 100;
    if (!isfinite(v)) {
        snprintf(body, sizeof body, "%s%s", isnan(v) ? (upper ? "NAN" : "nan") : (upper ? "INF" : "inf"),
                 type == '%' ? "%" : "");
    } else if (type == 0 && s->precision < 0) {
        scriptc_text r = {0};
        scriptc_put_float(&r, v);
        snprintf(body, sizeof body, "%s", r.p ? r.p : "");
        free(r.p);
    } else if (type == 0) {
        /* like 'g', but exponent form from exp >= p - 1 on, and fixed form keeps a fraction digit */
        int p = s->precision ? s->precision : 1;
        snprintf(body, sizeof body, "%.*e", p - 1, v);
        char *e = strchr(body, 'e');
        int exp = atoi(e + 1);
        if (exp < -4 || exp >= p - 1) {
            char *end = e;
            if (memchr(body, '.', (size_t)(e - body))) {    /* a fraction's zeros go ("0e+00" keeps its 0) */
                while (end[-1] == '0') end--;
                if (end[-1] == '.') end--;
            }
            memmove(end, e, strlen(e) + 1);
        } else {
            snprintf(body, sizeof body, "%.*f", p - 1 - exp, v);
            size_t n = strlen(body);
            while (body[n - 1] == '0' && body[n - 2] != '.') body[--n] = 0;
        }
    } else {
        int p = s->precision < 0 ? 6 : s->precision;
        char c = type == '%' ? 'f' : type;
        if ((c == 'g' || c == 'G') && p == 0) p = 1;
        char f[8];
        snprintf(f, sizeof f, "%%%s.*%c", s->alt ? "#" : "", c);
        snprintf(body, sizeof body, f, p, v);
        if (type == '%') strncat(body, "%", sizeof body - strlen(body) - 1);
    }
    if (negative && s->z && strspn(body, "0.") == strcspn(body, "eE%"))
        negative = 0;
    if (s->group) {
        scriptc_group(body, strspn(body, "0123456789"), s->group, 3, grouped, sizeof grouped);
        scriptc_pad(t, s, scriptc_sign_of(negative, s), grouped, strlen(grouped));
    } else {
        scriptc_pad(t, s, scriptc_sign_of(negative, s), body, strlen(body));
    }
}

static void scriptc_format_int(scriptc_text *t, int64_t x, const scriptc_spec *s) {
    char type = s->type;
    if (type == 'e' || type == 'E' || type == 'f' || type == 'F' || type == 'g' || type == 'G' || type == '%') {
        scriptc_format_float(t, (double)x, s);
        return;
    }
    uint64_t m = x < 0 ? 0 - (uint64_t)x : (uint64_t)x;
    int base = type == 'b' ? 2 : type == 'o' ? 8 : type == 'x' || type == 'X' ? 16 : 10;
    const char *digits = type == 'X' ? "0123456789ABCDEF" : "0123456789abcdef";
    char rev[72], body[72], grouped[100], head[8];
    int n = 0;
    do { rev[n++] = digits[m % base]; m /= base; } while (m);
    for (int k = 0; k < n; k++) body[k] = rev[n - 1 - k];
    body[n] = 0;
    snprintf(head, sizeof head, "%s%s", scriptc_sign_of(x < 0, s),
             !s->alt || base == 10 ? "" : base == 2 ? "0b" : base == 8 ? "0o" : type == 'X' ? "0X" : "0x");
    if (s->group) {
        scriptc_group(body, (size_t)n, s->group, base == 10 ? 3 : 4, grouped, sizeof grouped);
        scriptc_pad(t, s, head, grouped, strlen(grouped));
    } else {
        scriptc_pad(t, s, head, body, (size_t)n);
    }
}

static void scriptc_format_str(scriptc_text *t, const char *str, const scriptc_spec *s) {
    size_t n = strlen(str);
    if (s->precision >= 0) {                  /* at most `precision` characters */
        int chars = 0;
        size_t k = 0;
        for (; k < n; k++) {
            if (((unsigned char)str[k] & 0xC0) != 0x80 && chars++ == s->precision) break;
        }
        n = k;
    }
    scriptc_pad(t, s, "", str, n);
}
