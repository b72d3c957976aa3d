"""The C side of an exported library: the header, and the C source of its entry points and tables.

An exported function is a C function per signature that checks its array arguments, unpacks them into the
leaves of the kernel's entry point (``lower.py``: ``i32 entry(<leaves>, out*)``, bools as i8), calls it, and
stores the results through one out pointer per returned value. The source includes ``runtime.c``.
"""
from __future__ import annotations

import json
from pathlib import Path

from ...ir.types import BOOL, DTYPE_NAMES, FLOAT, INT, NONE, STR, TensorType, TupleType, Type
from ..llvm.common import PTR, leaves
from ..llvm.strings import Plan

DTYPE_CODES = {name: k for k, name in enumerate(DTYPE_NAMES)}   # scriptc_dtype: float64 = 0, ... bool = 8
C_LEAF = {INT: "int64_t", FLOAT: "double", BOOL: "int8_t", PTR: "void *"}
C_SCALAR = {INT: "int64_t", FLOAT: "double", BOOL: "bool", STR: "const char *"}
RUNTIME = Path(__file__).with_name("runtime.c")

ARRAY_DECLARATIONS = """\
#ifndef SCRIPTC_ARRAY_DEFINED
#define SCRIPTC_ARRAY_DEFINED
#define SCRIPTC_MAX_DIMS 8
typedef enum { SCRIPTC_FLOAT64, SCRIPTC_FLOAT32, SCRIPTC_FLOAT16, SCRIPTC_INT64, SCRIPTC_INT32,
               SCRIPTC_INT16, SCRIPTC_INT8, SCRIPTC_UINT8, SCRIPTC_BOOL } scriptc_dtype;
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
        self.results = list(result.elems) if isinstance(result, TupleType) else ([] if result == NONE else [result])
        self.result_type = result
        self.python_entry = None      # the CPython entry's symbol, when the library has one (export.python_entries)
        for name, t in self.params:
            check_exportable(t, f"argument '{name}' of {fname}")
        for t in self.results:
            check_exportable(t, f"the result of {fname}")

    def prototype(self) -> str:
        params = [f"const scriptc_array *{n}" if isinstance(t, TensorType) else f"{C_SCALAR[t]} {n}"
                  for n, t in self.params]
        outs = ["out" if len(self.results) == 1 else f"out{k}" for k in range(len(self.results))]
        params += [f"scriptc_array *{o}" if isinstance(t, TensorType) else f"{C_SCALAR[t]} *{o}"
                   for o, t in zip(outs, self.results)]
        return f"int {self.c_name}({', '.join(params) or 'void'})"

    def manifest(self) -> dict:
        return {"c_name": self.c_name, "signature": self.signature, "graph": str(self.graph),
                "params": [n for n, _ in self.params], "results": [type_text(t) for t in self.results],
                "tuple": isinstance(self.result_type, TupleType), "python_entry": self.python_entry}

    def definition(self) -> str:
        leaf_types = [t for _, p in self.params for t in leaves(p)]
        out_leaves = leaves(self.result_type)
        lines = [f"int32_t {symbol(self.entry)}({', '.join([C_LEAF[t] for t in leaf_types] + ['void *'])}) "
                 f"__asm__(\"{self.entry}\");",
                 f"{self.prototype()} {{", "    scriptc_init();"]
        args = []
        for name, t in self.params:
            if isinstance(t, TensorType):
                lines.append(f"    if (scriptc_check_array(\"{self.fname}\", \"{name}\", {name}, {DTYPE_CODES[t.dtype]}, "
                             f"{t.rank}, (const int64_t[]){{{', '.join(['-1'] * max(t.rank, 1))}}})) return -1;")
                args += ["NULL", f"{name}->data"] + [f"{name}->shape[{k}]" for k in range(t.rank)] + \
                    [f"{name}->strides[{k}]" for k in range(t.rank)]
            elif t == BOOL:
                args.append(f"(int8_t){name}")
            else:
                args.append(f"(void *){name}" if t == STR else name)
        fields = " ".join(f"{C_LEAF[t]} f{k};" for k, t in enumerate(out_leaves)) or "char unused;"
        lines += [f"    struct {{ {fields} }} r;",
                  f"    int32_t status = {symbol(self.entry)}({', '.join(args + ['&r'])});",
                  "    if (status) return scriptc_fail(status);"]
        at = 0
        for k, t in enumerate(self.results):
            out = "out" if len(self.results) == 1 else f"out{k}"
            if isinstance(t, TensorType):
                lines += [f"    {out}->owner = r.f{at}; {out}->data = r.f{at + 1};",
                          f"    {out}->ndim = {t.rank}; {out}->dtype = {DTYPE_CODES[t.dtype]};"]
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
            raise ExportError(f"{what} is a {t} array: the C ABI has the dtypes {', '.join(DTYPE_CODES)} and at "
                              "most 8 dimensions")
    elif t not in C_SCALAR:
        raise ExportError(f"{what} has type {t}: exported functions take and return int, float, bool, str and "
                          "arrays (a tuple of them as the result)")


def type_text(t: Type) -> str:
    return f"{t.dtype}[{','.join(['*'] * t.rank)}]" if isinstance(t, TensorType) else str(t)


def symbol(name: str) -> str:
    return "scriptc_" + "".join(c if c.isalnum() else "_" for c in name)


def c_string(text: str) -> str:
    return json.dumps(text, ensure_ascii=False).replace("?", "\\?")   # JSON escapes are C escapes; no trigraphs


def header(lib: str, exported: list[Exported], command: str) -> str:
    guard = f"SCRIPTC_{lib.upper()}_H"
    lines = [f"/* {lib}.h: the C interface of lib{lib}.so, made by scriptc ({command}).",
             " *",
             " * Each function returns 0 on success, or an error code; then "
             f"{lib}_last_error() gives this thread's",
             " * message, CPython's exception type and text (\"IndexError: index 7 is out of bounds ...\").",
             " * Scalars are passed by value (int64_t, double, bool), arrays by pointer, strings as const char *",
             " * (UTF-8); each returned value is stored through an out pointer (a tuple gives several). An array",
             f" * the library made has owner != NULL: give it back with {lib}_release(). An array whose owner is NULL",
             " * is a view of an argument (or of constant data) and lives as long as that argument. */",
             f"#ifndef {guard}", f"#define {guard}", "#include <stdbool.h>", "#include <stdint.h>",
             "#ifdef __cplusplus", 'extern "C" {', "#endif", "", ARRAY_DECLARATIONS]
    for e in exported:
        lines += [f"/* {e.fname}({e.signature}) */", f"{e.prototype()};", ""]
    lines += [f"const char *{lib}_last_error(void);    /* thread-local: this thread's last error */",
              f"void {lib}_release(scriptc_array *a);   /* frees an array the library returned (owner != NULL) */",
              "", "#ifdef __cplusplus", "}", "#endif", f"#endif  /* {guard} */", ""]
    return "\n".join(lines)


def source(lib: str, exported: list[Exported], errors: dict, plans: dict, strs: dict, manifest: dict) -> str:
    """The C source of the library's entry points, tables and runtime."""
    parts = [f"#define SCRIPTC_LIB {lib}", f'#include "{lib}.h"', RUNTIME.read_text(), error_table(errors),
             "\n".join(f"const char {symbol(name)}[] __asm__(\"{name}\") = {c_string(value)};"
                       for name, value in strs.items()),
             callback(plans),
             f"__attribute__((used, section(\".scriptc_manifest\"))) static const char scriptc_manifest[] = "
             f"{c_string(json.dumps(manifest))};"]
    parts += [e.definition() for e in exported]
    return "\n\n".join(parts) + "\n"


def error_table(errors: dict) -> str:
    """``errors``: code -> RuntimeErrorEntry, as text: CPython's message, or the template of one with numbers."""
    rows = []
    for code, entry in sorted(errors.items()):
        if entry.payload:
            text = entry.args[0]
        else:
            text = str(entry.exc_type(*entry.args))
        rows.append(f"    {{{code}, {c_string(entry.exc_type.__name__)}, {c_string(text)}, {entry.payload}}},")
    return "\n".join(["static const scriptc_error scriptc_errors[] = {", *rows, "    {0, 0, 0, 0}", "};",
                      "static const scriptc_error *scriptc_find_error(int32_t code) {",
                      "    for (const scriptc_error *e = scriptc_errors; e->type; e++)",
                      "        if (e->code == code) return e;",
                      "    return NULL;", "}"])


def callback(plans: dict) -> str:
    """``scriptc.py.callback`` for the print plans the code uses (``plans``: id -> Plan)."""
    lines = ['int32_t scriptc_callback(int64_t, void *) __asm__("scriptc.py.callback");',
             "int32_t scriptc_callback(int64_t plan, void *record) {", "    switch (plan) {"]
    for pid, plan in plans.items():
        lines.append(f"    case {pid}LL: {{")
        leaf_types = [x for t in plan.types for x in leaves(t)]
        fields = " ".join(f"{C_LEAF[t]} f{k};" for k, t in enumerate(leaf_types)) or "char unused;"
        lines.append(f"        struct {{ {fields} }} *r = record; (void)r;")
        at = 0
        for k, t in enumerate(plan.types):
            if k:
                lines.append(f"        fputs({c_string(plan.sep)}, stdout);")
            code, at = print_value(t, at, top=True)
            lines += code
        lines += [f"        fputs({c_string(plan.end)}, stdout);", "        return 0;", "    }"]
    lines += ["    }", "    return 1;", "}"]
    return "\n".join(lines)


def print_value(t: Type, at: int, top: bool) -> tuple[list[str], int]:
    if t == INT:
        return [f"        scriptc_print_int(r->f{at});"], at + 1
    if t == FLOAT:
        return [f"        scriptc_print_float(r->f{at});"], at + 1
    if t == BOOL:
        return [f"        scriptc_print_bool(r->f{at});"], at + 1
    if t == NONE:
        return ['        fputs("None", stdout);'], at
    if t == STR:
        fn = "scriptc_print_str" if top else "scriptc_print_str_repr"
        return [f"        {fn}((const char *)r->f{at});"], at + 1
    if isinstance(t, TupleType):
        code = ['        putchar(\'(\');']
        for k, e in enumerate(t.elems):
            if k:
                code.append('        fputs(", ", stdout);')
            more, at = print_value(e, at, top=False)
            code += more
        code.append('        fputs("' + (",)" if len(t.elems) == 1 else ")") + '", stdout);')
        return code, at
    raise ExportError(f"printing a {t} is not supported in exported code yet (ints, floats, bools, None, strs and "
                      "tuples of them are)")


def plan_supported(plan: Plan) -> None:
    if plan.kind != "print":
        raise ExportError(f"{'str.format/f-strings' if plan.kind == 'format' else 'raise with computed values'} "
                          "needs Python at run time: not supported in exported code yet")
