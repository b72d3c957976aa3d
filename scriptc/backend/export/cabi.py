"""The C side of an exported library: the header, and the C source of its entry points and tables.

An exported function is a C function per signature that checks its array arguments, unpacks them into the
leaves of the kernel's entry point (``lower.py``: ``i32 entry(<leaves>, out*)``, bools as i8), calls it, and
stores the results through one out pointer per returned value. The source includes ``runtime.c``.
"""

from __future__ import annotations

import builtins
import json
import re
import string
from pathlib import Path

from ...ir.types import BOOL, DTYPE_NAMES, FLOAT, INT, NONE, STR, NamedTupleType, TensorType, TupleType, Type, decayed
from ..argument_writes import written_inputs
from ..llvm.runtime.callbacks import PendingException
from ..llvm.lowering.common import PTR, leaves
from ..llvm.lowering.strings import Plan

# scriptc_dtype, the C ABI's codes: new dtypes are appended (uint32 came after bool)
DTYPE_CODES = {
    name: k
    for k, name in enumerate(
        ["float64", "float32", "float16", "int64", "int32", "int16", "int8", "uint8", "bool", "uint32"]
    )
}
assert set(DTYPE_CODES) == set(DTYPE_NAMES)
C_LEAF = {INT: "int64_t", FLOAT: "double", BOOL: "int8_t", PTR: "void *"}
C_SCALAR = {INT: "int64_t", FLOAT: "double", BOOL: "bool", STR: "const char *"}
HERE = Path(__file__).parent
RUNTIME = HERE / "runtime.c"

ARRAY_DECLARATIONS = """\
#ifndef SCRIPTC_ARRAY_DEFINED
#define SCRIPTC_ARRAY_DEFINED
#define SCRIPTC_MAX_DIMS 8
typedef enum { SCRIPTC_FLOAT64, SCRIPTC_FLOAT32, SCRIPTC_FLOAT16, SCRIPTC_INT64, SCRIPTC_INT32,
               SCRIPTC_INT16, SCRIPTC_INT8, SCRIPTC_UINT8, SCRIPTC_BOOL, SCRIPTC_UINT32 } scriptc_dtype;
typedef struct {
    void *data;
    int64_t shape[SCRIPTC_MAX_DIMS];
    int64_t strides[SCRIPTC_MAX_DIMS];   /* in bytes, any sign */
    int32_t ndim;
    int32_t dtype;                       /* a scriptc_dtype */
    void *owner;                         /* NULL for arrays the caller owns; set on arrays the library made */
} scriptc_array;
#endif
"""


class ExportError(Exception):
    """A function or signature that cannot be exported (says what and why)."""


class Exported:
    """One exported signature: the C function ``c_name`` calling the kernel entry ``entry`` of ``graph``."""

    def __init__(self, fname: str, c_name: str, entry: str, graph, signature: str, param_names: list[str]):
        self.fname, self.c_name, self.entry, self.graph, self.signature = fname, c_name, entry, graph, signature
        self.params = [(name, v.type) for name, v in zip(param_names, graph.inputs)]
        result = graph.outputs[0].type
        results = list(result.elems) if isinstance(result, TupleType) else ([] if result == NONE else [result])
        self.results = [decayed(t) for t in results]  # an np.float32 result: the double holding it, exactly
        self.result_type = (
            result
            if isinstance(result, NamedTupleType)
            else TupleType(tuple(self.results))
            if isinstance(result, TupleType)
            else decayed(result)
        )
        self.python_entry = None  # the CPython entry's symbol, when the library has one (export.python_entries)
        self.written = written_inputs(graph)  # {argument it may write: NumPy's message for a read-only one}
        for name, t in self.params:
            check_exportable(t, f"argument '{name}' of {fname}")
        if isinstance(result, NamedTupleType):  # (its class is Python's: a loaded library has no source)
            raise ExportError(
                f"the result of {fname} is a {result.cls.__name__} (a NamedTuple): exported functions "
                f"return a plain tuple (return tuple(...))"
            )
        for t in self.results:
            check_exportable(t, f"the result of {fname}")

    def prototype(self) -> str:
        params = [
            f"const scriptc_array *{n}" if isinstance(t, TensorType) else f"{C_SCALAR[t]} {n}" for n, t in self.params
        ]
        outs = ["out" if len(self.results) == 1 else f"out{k}" for k in range(len(self.results))]
        params += [
            f"scriptc_array *{o}" if isinstance(t, TensorType) else f"{C_SCALAR[t]} *{o}"
            for o, t in zip(outs, self.results)
        ]
        return f"int {self.c_name}({', '.join(params) or 'void'})"

    def manifest(self) -> dict:
        return {
            "c_name": self.c_name,
            "signature": self.signature,
            "graph": str(self.graph),
            "params": [n for n, _ in self.params],
            "results": [type_text(t) for t in self.results],
            "tuple": isinstance(self.result_type, TupleType),
            "python_entry": self.python_entry,
            "written": {str(k): message for k, message in sorted(self.written.items())},
        }

    def definition(self) -> str:
        leaf_types = [t for _, p in self.params for t in leaves(p)]
        out_leaves = leaves(self.result_type)
        lines = [
            f"int32_t {symbol(self.entry)}({', '.join([C_LEAF[t] for t in leaf_types] + ['void *'])}) "
            f'__asm__("{self.entry}");',
            f"{self.prototype()} {{",
            "    scriptc_init();",
        ]
        args = []
        for name, t in self.params:
            if isinstance(t, TensorType):
                any_shape = ", ".join(["-1"] * max(t.rank, 1))
                lines.append(
                    f'    if (scriptc_check_array("{self.fname}", "{name}", {name}, '
                    f"{DTYPE_CODES[t.dtype]}, {t.rank}, (const int64_t[]){{{any_shape}}})) return -1;"
                )
                args += (
                    ["NULL", f"{name}->data"]
                    + [f"{name}->shape[{k}]" for k in range(t.rank)]
                    + [f"{name}->strides[{k}]" for k in range(t.rank)]
                )
            elif t == BOOL:
                args.append(f"(int8_t){name}")
            else:
                args.append(f"(void *){name}" if t == STR else name)
        for k in range(len(self.results)):
            out = "out" if len(self.results) == 1 else f"out{k}"
            lines.append(f'    if (scriptc_check_out("{self.fname}", "{out}", {out})) return -1;')
        fields = " ".join(f"{C_LEAF[t]} f{k};" for k, t in enumerate(out_leaves)) or "char unused;"
        lines += [
            f"    struct {{ {fields} }} r;",
            f"    int32_t status = {symbol(self.entry)}({', '.join(args + ['&r'])});",
            "    if (status) return scriptc_fail(status);",
        ]
        at = 0
        for k, t in enumerate(self.results):
            out = "out" if len(self.results) == 1 else f"out{k}"
            if isinstance(t, TensorType):
                lines += [
                    f"    {out}->owner = r.f{at}; {out}->data = r.f{at + 1};",
                    f"    {out}->ndim = {t.rank}; {out}->dtype = {DTYPE_CODES[t.dtype]};",
                ]
                for d in range(8):
                    shape = f"r.f{at + 2 + d}" if d < t.rank else "0"
                    stride = f"r.f{at + 2 + t.rank + d}" if d < t.rank else "0"
                    lines.append(f"    {out}->shape[{d}] = {shape}; {out}->strides[{d}] = {stride};")
                at += 2 + 2 * t.rank
            elif t == BOOL:
                lines.append(f"    *{out} = r.f{at} != 0;")
                at += 1
            else:
                lines.append(f"    *{out} = ({C_SCALAR[t]})r.f{at};")
                at += 1
        lines += ["    return 0;", "}"]
        return "\n".join(lines)


def check_exportable(t: Type, what: str) -> None:
    if isinstance(t, TensorType):
        if t.dtype not in DTYPE_CODES or t.rank is None or t.rank > 8:
            raise ExportError(
                f"{what} is a {t} array: the C ABI has the dtypes {', '.join(DTYPE_CODES)} and at most 8 dimensions"
            )
    elif t not in C_SCALAR:
        raise ExportError(
            f"{what} has type {t}: exported functions take and return int, float, bool, str and "
            "arrays (a tuple of them as the result)"
        )


def type_text(t: Type) -> str:
    return f"{t.dtype}[{','.join(['*'] * t.rank)}]" if isinstance(t, TensorType) else str(t)


def symbol(name: str) -> str:
    return "scriptc_" + "".join(c if c.isalnum() else "_" for c in name)


def c_string(text: str) -> str:
    return json.dumps(text, ensure_ascii=False).replace("?", "\\?")  # JSON escapes are C escapes; no trigraphs


def header(lib: str, exported: list[Exported], command: str) -> str:
    guard = f"SCRIPTC_{lib.upper()}_H"
    lines = [
        f"/* {lib}.h: the C interface of lib{lib}.so, made by scriptc ({command}).",
        " *",
        f" * Each function returns 0 on success, or an error code; then {lib}_last_error() gives this thread's",
        ' * message, CPython\'s exception type and text ("IndexError: index 7 is out of bounds ...").',
        " * Scalars are passed by value (int64_t, double, bool), arrays by pointer, strings as const char *",
        " * (UTF-8); each returned value is stored through an out pointer (a tuple gives several). An array",
        f" * the library made has owner != NULL: give it back with {lib}_release(). An array whose owner is NULL",
        " * is a view of an argument (or of constant data) and lives as long as that argument. */",
        f"#ifndef {guard}",
        f"#define {guard}",
        "#include <stdbool.h>",
        "#include <stdint.h>",
        "#ifdef __cplusplus",
        'extern "C" {',
        "#endif",
        "",
        ARRAY_DECLARATIONS,
    ]
    for e in exported:
        lines += [f"/* {e.fname}({e.signature}) */", f"{e.prototype()};", ""]
    lines += [
        f"const char *{lib}_last_error(void);    /* thread-local: this thread's last error */",
        f"void {lib}_release(scriptc_array *a);   /* frees an array the library returned (owner != NULL) */",
        f"void {lib}_release_str(const char *s);  /* frees a str the library made and returned (an f-string); "
        "other strs: nothing */",
        "",
        "#ifdef __cplusplus",
        "}",
        "#endif",
        f"#endif  /* {guard} */",
        "",
    ]
    return "\n".join(lines)


def source(lib: str, exported: list[Exported], errors: dict, plans: dict, strs: dict, manifest: dict) -> str:
    """The C source of the library's entry points, tables and runtime."""
    callbacks, needs = callback(plans)
    parts = [
        f"#define SCRIPTC_LIB {lib}",
        f'#include "{lib}.h"',
        RUNTIME.read_text(),
        (HERE / "text.c").read_text(),
        *[(HERE / f"{part}.c").read_text() for part in ("arrays", "format") if part in needs],
        error_table(errors),
        "\n".join(
            f'const char {symbol(name)}[] __asm__("{name}") = {c_string(value)};' for name, value in strs.items()
        ),
        callbacks,
        f'__attribute__((used, section(".scriptc_manifest"))) static const char scriptc_manifest[] = '
        f"{c_string(json.dumps(manifest))};",
    ]
    parts += [e.definition() for e in exported]
    return "\n\n".join(parts) + "\n"


def error_table(errors: dict) -> str:
    """``errors``: code -> RuntimeErrorEntry, as text: CPython's message, or the template of one with numbers."""
    rows = []
    for code, entry in sorted(errors.items()):
        if entry.exc_type is PendingException:  # a callback's error: the callback sets the text
            rows.append(f'    {{{code}, "PendingException", "", -1}},')
            continue
        if entry.payload:
            text = entry.args[0]
        else:
            text = str(entry.exc_type(*entry.args))
        rows.append(f"    {{{code}, {c_string(entry.exc_type.__name__)}, {c_string(text)}, {entry.payload}}},")
    return "\n".join(
        [
            "static const scriptc_error scriptc_errors[] = {",
            *rows,
            "    {0, 0, 0, 0}",
            "};",
            "static const scriptc_error *scriptc_find_error(int32_t code) {",
            "    for (const scriptc_error *e = scriptc_errors; e->type; e++)",
            "        if (e->code == code) return e;",
            "    return NULL;",
            "}",
        ]
    )


def callback(plans: dict) -> tuple[str, set[str]]:
    """``scriptc.py.callback`` for the print, format and raise plans the code uses (``plans``: id -> Plan), and
    the runtime parts it needs (``arrays``, ``format``)."""
    lines = [
        'int32_t scriptc_callback(int64_t, void *) __asm__("scriptc.py.callback");',
        "int32_t scriptc_callback(int64_t plan, void *record) {",
        "    switch (plan) {",
    ]
    needs: set[str] = set()
    for pid, plan in plans.items():
        glue = PlanGlue(plan)
        lines += [f"    case {pid}LL: {{", *glue.lines, "    }"]
        needs |= glue.needs
    lines += [
        "    }",
        '    return scriptc_callback_error("SystemError", "native code called an unknown print plan");',
        "}",
    ]
    return "\n".join(lines), needs


def plan_supported(plan: Plan) -> None:
    """Raise ExportError if ``plan`` prints, formats or raises with something exported code cannot write."""
    PlanGlue(plan)


FORMAT_SPEC = re.compile(
    r"(?:(?P<fill>.)?(?P<align>[<>=^]))?(?P<sign>[-+ ])?(?P<z>z)?(?P<alt>#)?(?P<zero>0)?"
    r"(?P<width>\d+)?(?P<group>[,_])?(?:\.(?P<precision>\d+))?(?P<type>[bcdeEfFgGnosxX%])?",
    re.DOTALL,
)
SPEC_SAMPLES = {INT: 12345, FLOAT: 1.5, BOOL: True, STR: "ab"}


class PlanGlue:
    """The C of one plan's case: its values' text built in ``text`` (runtime's ``scriptc_text``), then printed,
    made a str (format) or raised. ``needs``: the runtime parts the case calls."""

    def __init__(self, plan: Plan):
        self.plan, self.needs, self.specs = plan, set(), 0
        leaf_types = [x for t in plan.types for x in leaves(t)]
        fields = " ".join(f"{C_LEAF[t]} f{k};" for k, t in enumerate(leaf_types))
        if plan.kind == "format":
            fields += " void *out;"
        self.lines = [
            f"        struct {{ {fields or 'char unused;'} }} *r = record; (void)r;",
            "        scriptc_text text = {0};",
        ]
        self.at = []
        at = 0
        for t in plan.types:
            self.at.append(at)
            at += len(leaves(t))
        getattr(self, "raise_" if plan.kind == "raise" else plan.kind)()

    def emit(self, code: str) -> None:
        self.lines.append("        " + code)

    def print(self) -> None:
        for k, t in enumerate(self.plan.types):
            if k:
                self.emit(f"scriptc_puts(&text, {c_string(self.plan.sep)});")
            self.value(t, self.at[k], "&text", repr_=False)
        self.emit(f"scriptc_puts(&text, {c_string(self.plan.end)});")
        self.emit("return scriptc_text_print(&text);")

    def raise_(self) -> None:
        name, types = self.plan.fmt, self.plan.types
        exc = getattr(builtins, name, None)
        if exc is None or issubclass(exc, UnicodeError) or (issubclass(exc, OSError) and len(types) > 1):
            raise ExportError(
                f"raise {name}(...) with {len(types)} computed values: its message is not "
                "str(value) or repr(args); not supported in exported code"
            )
        if len(types) == 1:  # str(exception) is str(arg), or repr(arg) for KeyError
            self.value(types[0], self.at[0], "&text", repr_=issubclass(exc, KeyError))
        elif types:
            self.tuple_text(types, self.at, "&text")
        self.emit(f"return scriptc_text_raise(&text, {c_string(name)});")

    def format(self) -> None:
        auto = 0
        for literal, field, spec, conversion in string.Formatter().parse(self.plan.fmt):
            if literal:
                self.emit(f"scriptc_puts(&text, {c_string(literal)});")
            if field is None:
                continue
            k = int(field) if field else auto
            auto += 1
            self.field(self.plan.types[k], self.at[k], spec or "", conversion)
        self.emit("return scriptc_text_str(&text, &r->out);")

    def field(self, t: Type, at: int, spec: str, conversion: str | None) -> None:
        where = f"f-string field {{{'!' + conversion if conversion else ''}{':' + spec if spec else ''}}} (a {t} value)"
        if conversion == "a":
            if t not in (INT, FLOAT, BOOL, NONE) and not isinstance(t, TensorType):
                raise ExportError(f"{where}: ascii() of text is not supported in exported code")
            conversion = "r"
        scalar = conversion is None and t in SPEC_SAMPLES
        if not spec:
            if t == BOOL and scalar:
                self.emit(f"scriptc_put_bool(&text, r->f{at});")
            else:
                self.value(t, at, "&text", repr_=conversion == "r")
            return
        if not scalar and conversion is None:
            raise ExportError(f"{where}: a {t} takes no format spec (CPython raises TypeError)")
        kind = t if scalar else STR
        try:
            format(SPEC_SAMPLES[kind], spec)
        except (ValueError, TypeError) as e:
            raise ExportError(f"{where}: CPython raises {type(e).__name__}: {e}") from None
        name = self.spec(spec, kind, where)
        if kind == STR and t != STR or (conversion == "r" and t == STR):
            self.emit("{ scriptc_text v = {0};")
            self.value(t, at, "&v", repr_=conversion == "r")
            self.emit(f'  scriptc_format_str(&text, v.p ? v.p : "", &{name}); text.failed |= v.failed; free(v.p); }}')
        elif kind == STR:
            self.emit(f"scriptc_format_str(&text, (const char *)r->f{at}, &{name});")
        elif kind == FLOAT:
            self.emit(f"scriptc_format_float(&text, r->f{at}, &{name});")
        else:
            self.emit(f"scriptc_format_int(&text, r->f{at}, &{name});")

    def spec(self, spec: str, kind: Type, where: str) -> str:
        """The C ``scriptc_spec`` of ``spec`` for a value of ``kind`` (INT, FLOAT, BOOL or STR): its name."""
        m = FORMAT_SPEC.fullmatch(spec)
        if m is None:
            raise ExportError(f"{where}: the format spec is not supported in exported code")
        g = m.groupdict()
        typ, fill, align = g["type"] or "", g["fill"], g["align"]
        default_align = "<" if kind == STR else ">"
        if g["zero"] and fill is None:  # CPython: '0' is fill '0', and sign-aware for numbers
            fill = "0"
            if align is None and default_align == ">":
                align = "="
        fill, align = fill or " ", align or default_align
        precision = int(g["precision"]) if g["precision"] is not None else -1
        if (
            typ in ("n", "c")
            or (g["group"] and fill == "0" and align == "=")
            or precision > 50
            or (g["alt"] and kind == FLOAT and not typ)
        ):
            raise ExportError(
                f"{where}: the format spec is not supported in exported code (the types n and c, "
                "zero padding with grouping, '#' without a type for floats, precisions over 50)"
            )
        self.needs.add("format")
        self.specs += 1
        name = f"spec{self.specs}"
        fields = [
            c_string(fill),
            f"'{align}'",
            f"'{g['sign'] or '-'}'",
            "'z'" if g["z"] else "0",
            "'#'" if g["alt"] else "0",
            str(int(g["width"] or 0)),
            f"'{g['group']}'" if g["group"] else "0",
            str(precision),
            f"'{typ}'" if typ else "0",
        ]
        self.emit(f"static const scriptc_spec {name} = {{{', '.join(fields)}}};")
        return name

    def value(self, t: Type, at: int, text: str, repr_: bool) -> None:
        """Code putting str(value) (repr(value) with ``repr_``) of the value at leaf ``at`` into ``text``."""
        if t == INT:
            self.emit(f"scriptc_put_int({text}, r->f{at});")
        elif t == FLOAT:
            self.emit(f"scriptc_put_float({text}, r->f{at});")
        elif t == BOOL:
            self.emit(f"scriptc_put_bool({text}, r->f{at});")
        elif t == NONE:
            self.emit(f'scriptc_puts({text}, "None");')
        elif t == STR:
            self.emit(f"scriptc_put_str{'_repr' if repr_ else ''}({text}, (const char *)r->f{at});")
        elif isinstance(t, NamedTupleType) and t.cls is not None:  # P(a=1, b=2.0)
            self.emit(f"scriptc_puts({text}, {c_string(t.cls.__name__ + '(')});")
            for k, (field, e) in enumerate(zip(t.fields, t.elems)):
                self.emit(f"scriptc_puts({text}, {c_string((', ' if k else '') + field + '=')});")
                self.value(e, at, text, repr_=True)
                at += len(leaves(e))
            self.emit(f"scriptc_putc({text}, ')');")
        elif isinstance(t, TupleType):
            ats = []
            for e in t.elems:
                ats.append(at)
                at += len(leaves(e))
            self.tuple_text(list(t.elems), ats, text)
        elif isinstance(t, TensorType) and t.known and t.dtype in DTYPE_CODES:
            if t.rank == 0 and not repr_ and t.dtype in ("float32", "float16"):
                raise ExportError(
                    f"printing a 0-d {t.dtype} array (NumPy's {t.dtype} scalar text) is not supported in exported code"
                )
            self.needs.add("arrays")
            rank = t.rank
            shape = ", ".join(f"r->f{at + 2 + d}" for d in range(rank)) or "0"
            strides = ", ".join(f"r->f{at + 2 + rank + d}" for d in range(rank)) or "0"
            self.emit(
                f"{{ scriptc_array a = {{r->f{at + 1}, {{{shape}}}, {{{strides}}}, {rank}, "
                f"{DTYPE_CODES[t.dtype]}, NULL}}; scriptc_put_array({text}, &a, {int(repr_)}); }}"
            )
        else:
            raise ExportError(
                f"printing a {t} is not supported in exported code (ints, floats, bools, None, strs, "
                "arrays and tuples of them are)"
            )

    def tuple_text(self, elems: list, ats: list, text: str) -> None:
        self.emit(f"scriptc_putc({text}, '(');")
        for k, (e, at) in enumerate(zip(elems, ats)):
            if k:
                self.emit(f'scriptc_puts({text}, ", ");')
            self.value(e, at, text, repr_=True)
        self.emit(f'scriptc_puts({text}, "{",)" if len(elems) == 1 else ")"}");')
