"""Ahead-of-time export: scripted functions and signatures -> one shared library (or object) and a C header.

    export_library([(fn, [types, ...]), ...], "build/libkernels.so")

The kernels are the CPU backend's code (the same lowering, strict floating point, O3) for the host CPU, compiled
as position-independent code; ``runtime.c`` and the generated C entry points (``cabi.py``) replace what the
Python process gives JIT-compiled code, so the library needs only the C and math libraries (and libmvec when
vectorized math is used). The system C compiler links it. The library embeds, in its ``.scriptc_manifest``
section, a JSON manifest: the format version, the CPU and features the code was compiled for, and per function
its signatures and the IR graphs, which ``scriptc.load`` reads (without running anything from the file) before
loading the library.

Parallel regions (prange loops, large element-wise fusion groups) run on the library's own copy of scriptc's
thread pool (``pool.py``'s module, compiled as a second object, and ``pool.c``: the thread count from
``SCRIPTC_NUM_THREADS`` or the CPUs, the pool reset when loaded and in a forked child). Matrix products do not
call OpenBLAS: float products run a generated row loop (``matmul.py``'s ``row_core``), so their results are not
bit-identical to NumPy's. Printing (arrays as NumPy prints them), f-strings and ``raise`` with computed messages
are C (``text.c``, ``arrays.c``, ``format.c``), with CPython's text.

Not exported (an ExportError says so): module-level array constants, ``round(x, n)``; in f-strings, the format
types ``n`` and ``c``, zero padding with grouping, ``!a`` of text and specs CPython rejects; printing 0-d
float32/float16 arrays.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import llvmlite.binding as llvm

from ...ir.types import STR, TensorType
from ...signatures import format_signature
from ..llvm.runtime import disk_cache, pool
from ..llvm.lowering import strings
from ..llvm.runtime.engine import engine
from ..llvm.runtime.entry import PythonTable, lower_python_entry
from ..llvm.runtime.errors import ERROR_TABLE, encode_argument
from ..llvm.lowering.lower import ModuleLowering, check_graph
from ..llvm.lowering.target import CPU_LIBRARY
from . import cabi
from .cabi import ExportError, Exported, header, plan_supported, source
from .integrity import PLACEHOLDER, seal

FORMAT = 3  # 2: the manifest says which arguments each signature may write; 3: digests (integrity.py)
POOL_C = Path(__file__).with_name("pool.c")
SECTION = ".scriptc_manifest"
UNSUPPORTED = {
    "scriptc.blas.": "the code calls OpenBLAS, which exported libraries do not link",
    "scriptc.py.round_ndigits": "round(x, ndigits) calls Python's round",
    "scriptc.py.gil_": "the GIL",
}


def library_name(output: Path) -> str:
    stem = output.name.split(".")[0]
    name = stem[3:] if stem.startswith("lib") and len(stem) > 3 else stem
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
        raise ExportError(f"library name {name!r} (from {output.name}) must be a C identifier")
    return name


# symbols every library defines: <library>_<name>
LIBRARY_SYMBOLS = ("last_error", "release", "release_str", "python_table", "_python_error")


def runtime_names() -> set[str]:
    """The C names the library's runtime and generated code use (``scriptc_init``, ``scriptc_array``...): a
    library named ``scriptc`` must not define them again."""
    texts = [f.read_text() for f in Path(__file__).parent.iterdir() if f.suffix == ".c"]
    return set(re.findall(r"\b(?:scriptc|SCRIPTC)_\w+", "".join(texts) + Path(cabi.__file__).read_text()))


def _where(fn) -> str:
    code = getattr(getattr(fn, "py_func", None), "__code__", None)
    return f"{Path(code.co_filename).name}:{code.co_firstlineno}" if code is not None else repr(fn)


def export_library(functions, output, emit: str = "so", command: str = "scriptc export") -> list[Path]:
    """Compile ``functions`` (a list of (ScriptFunction, [signature types tuple, ...])) into ``output`` (a shared
    library, or with ``emit="obj"`` a relocatable object) and ``<name>.h`` beside it; the files written."""
    output = Path(output)
    lib = library_name(output)
    mod = ModuleLowering(f"scriptc.{lib}", target=CPU_LIBRARY)
    exported: list[Exported] = []
    seen: dict[str, int] = {}
    taken = {f"{lib}_{what}": f"the library's own {lib}_{what}" for what in LIBRARY_SYMBOLS}
    runtime = runtime_names()
    owners: dict[str, object] = {}
    with ERROR_TABLE.record() as codes:
        for fn, signatures in functions:
            owner = owners.setdefault(fn.__name__, fn)
            if owner is not fn:
                raise ExportError(
                    f"two functions are named {fn.__name__} ({_where(owner)} and {_where(fn)}): the "
                    f"functions of one library need distinct names"
                )
            for types in signatures:
                types = tuple(t.erase_shape() if isinstance(t, TensorType) else t for t in types)
                if any(e.fname == fn.__name__ and e.signature == format_signature(types) for e in exported):
                    raise ExportError(f"{fn.__name__} is exported twice for ({format_signature(types)})")
                graph = fn.graph_for_types(fn.specialization(types))
                check_graph(graph)
                k = seen[fn.__name__] = seen.get(fn.__name__, -1) + 1
                c_name = f"{lib}_{fn.__name__}" + (f"_{k}" if k else "")
                if c_name in runtime:
                    raise ExportError(
                        f"the C function {c_name} ({fn.__name__}({format_signature(types)})) would "
                        f"redefine a name of scriptc's runtime: name the library otherwise"
                    )
                clash = taken.setdefault(c_name, f"{fn.__name__}({format_signature(types)})")
                if clash != f"{fn.__name__}({format_signature(types)})":
                    raise ExportError(
                        f"the C function {c_name} would be both {clash} and {fn.__name__}"
                        f"({format_signature(types)}): rename the function"
                    )
                exported.append(
                    Exported(fn.__name__, c_name, mod.entry(graph), graph, format_signature(types), fn.param_names)
                )
    text = str(mod.module)
    check_standalone(text)
    plans = {pid: strings._PLANS[pid] for pid in map(int, re.findall(r'@"scriptc\.py\.callback"\(i64 (-?\d+)', text))}
    for plan in plans.values():
        plan_supported(plan)
    strs = str_constants(text)
    eng = engine()
    manifest = {
        "format": FORMAT,
        "library": lib,
        **{k: v for k, v in disk_cache.target_description().items() if k in ("scriptc", "triple", "cpu")},
        "features": [f for f in eng.features.split(",") if f.startswith("+")],
        "functions": {},
        **python_entries(mod.module, lib, exported),
        "digests": dict(PLACEHOLDER),
    }
    for e in exported:
        manifest["functions"].setdefault(e.fname, []).append(e.manifest())
    manifest["errors"] = exact_errors(codes)
    manifest["defaults"] = {fn.__name__: parameter_defaults(fn) for fn, _ in functions}
    objects = {"kernels.o": compile_object(str(mod.module))}
    uses_pool = '@"scriptc.pool.' in text  # scriptc.pool.run, scriptc.pool.threads
    if uses_pool:
        objects["pool.o"] = compile_object(pool_text())
    header_path = output.with_name(f"{lib}.h")
    output.parent.mkdir(parents=True, exist_ok=True)
    header_path.write_text(header(lib, exported, command))
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        for name, obj in objects.items():
            (tmp / name).write_bytes(obj)
        sources = ["exported.c"]
        if uses_pool:
            (tmp / "pool.c").write_text(POOL_C.read_text())
            sources.append("pool.c")
        (tmp / f"{lib}.h").write_text(header_path.read_text())
        (tmp / "exported.c").write_text(
            source(lib, exported, {c: ERROR_TABLE[c] for c in codes}, plans, strs, manifest)
        )
        public = [e.c_name for e in exported] + [f"{lib}_{what}" for what in LIBRARY_SYMBOLS]
        link(tmp, list(objects), sources, output, emit, needs_mvec="_ZGV" in text, public=public)
    if emit != "obj":
        seal(output, SECTION)
    return [output, header_path]


def python_entries(module, lib: str, exported: list[Exported]) -> dict:
    """Add to ``module`` a CPython entry point per exported signature that takes no str (``entry.py``, reading
    what it uses of Python from the ``<lib>_python_table`` the library defines and ``scriptc.load`` fills: the
    library still loads without Python); the manifest's description of them."""
    table = PythonTable(module, f"{lib}_python_table")
    for e in exported:
        types = [t for _, t in e.params] + e.results
        if any(t == STR for t in types):
            continue  # strs are const char * in exported code, PyObject * in entries
        e.python_entry = f"{e.c_name}__python"
        lower_python_entry(
            module,
            e.python_entry,
            module.globals[e.entry],
            [t for _, t in e.params],
            e.result_type,
            e.written,
            nogil=False,
            table=table,
        )
    return {
        "python_table": {"symbol": f"{lib}_python_table", "slots": table.names},
        "python_error": f"{lib}__python_error",
    }


def parameter_defaults(fn) -> dict:
    """{parameter: its default as JSON (errors.py's encoding)} of the Python function, for scriptc.load's
    binding; a default without a JSON form is left out (the argument must then be passed)."""
    import inspect

    found = {}
    for name, p in inspect.signature(getattr(fn, "py_func", fn)).parameters.items():
        if p.default is not inspect.Parameter.empty and encode_argument(p.default) is not None:
            found[name] = encode_argument(p.default)
    return found


def exact_errors(codes) -> dict:
    """{code: [exception name, its arguments as JSON]} for the errors whose arguments are constants (no numbers
    from the payload): ``scriptc.load`` raises those exactly (``KeyError('10')``, ``ValueError('a', 'b')``,
    ``ValueError()``), the others from the library's message text."""
    exact = {}
    for code in sorted(codes):
        described = ERROR_TABLE.describe(code)
        if described is not None and not described[5] and described[1].startswith("builtins:"):
            exact[str(code)] = [described[1], described[2]]
    return exact


def pool_text() -> str:
    """The thread pool's module (pool.py) for a library: it defines ``scriptc.pool.run`` (the JIT binds that name
    to its ``scriptc.pool.run.impl``) and ``scriptc.pool.reset`` (which pool.c runs when the library is loaded and
    in a forked child), both hidden: each library has its own pool, not exported to the program. ``pool.c``
    defines the thread count, ``scriptc.pool.threads``."""
    text = str(pool.build_module(run_name=pool.RUN_SYMBOL))
    return re.sub(r"^define (?!internal )", "define hidden ", text, flags=re.M)


def check_standalone(text: str) -> None:
    if disk_cache.ABSOLUTE_ADDRESS.search(text):
        raise ExportError(
            "the code embeds a Python object's address (a module-level array constant): pass the "
            "array as an argument to export it"
        )
    for prefix, why in UNSUPPORTED.items():
        if f'@"{prefix}' in text:
            raise ExportError(f"cannot export: {why}")


def str_constants(text: str) -> dict[str, str]:
    """The str constants the code refers to (symbol -> value)."""
    names = set(re.findall(r'@"(scriptc\.str\.[0-9a-f]+)"', text))
    found = {}
    for value in list(strings._CONSTANTS):
        name = strings.str_symbol(value)
        if name in names:
            found[name] = value
    return found


def compile_object(text: str) -> bytes:
    """Optimize (O3) and compile for the host CPU as position-independent code."""
    eng = engine()
    target = llvm.Target.from_triple(eng.triple)
    tm = target.create_target_machine(cpu=eng.cpu, features=eng.features, opt=3, reloc="pic", codemodel="default")
    mod = llvm.parse_assembly(text)
    mod.triple, mod.data_layout = eng.triple, str(tm.target_data)
    mod.verify()
    pto = llvm.create_pipeline_tuning_options(speed_level=3)
    pto.loop_vectorization = pto.slp_vectorization = True
    pb = llvm.create_pass_builder(tm, pto)
    pb.getModulePassManager().run(mod, pb)
    return tm.emit_object(mod)


def link(
    tmp: Path, objects: list[str], sources: list[str], output: Path, emit: str, needs_mvec: bool, public: list[str]
) -> None:
    """Link the compiled ``objects`` and the C ``sources`` (files in ``tmp``) into ``output``; of an object, only
    the ``public`` names stay global (objcopy), so that a program links the objects of several libraries."""
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if cc is None:
        raise ExportError("no C compiler found (cc, gcc or clang): exporting links the library with one")
    flags = ["-O2", "-fPIC", "-std=gnu11", "-w"]
    if emit == "obj":
        compiled = []
        for src in sources:
            compiled.append(tmp / src.replace(".c", ".c.o"))
            run([cc, *flags, "-c", str(tmp / src), "-o", str(compiled[-1])])
        ld = shutil.which("ld")
        run([ld or cc, "-r", *(str(tmp / o) for o in objects), *map(str, compiled), "-o", str(output)])
        objcopy = shutil.which("objcopy") or shutil.which("llvm-objcopy")
        if objcopy is None:
            raise ExportError(
                "--emit=obj needs objcopy (binutils or LLVM) to keep only the library's names "
                "global; install binutils, or export a shared library"
            )
        (tmp / "public.txt").write_text("".join(f"{name}\n" for name in public))
        run([objcopy, f"--keep-global-symbols={tmp / 'public.txt'}", str(output)])
        return
    libs = ["-lmvec"] if needs_mvec else []
    # a library with the pool is never unloaded: its workers (which never exit) run its code
    keep = ["-Wl,-z,nodelete"] if "pool.o" in objects else []
    run(
        [
            cc,
            *flags,
            "-shared",
            "-o",
            str(output),
            *(str(tmp / o) for o in objects),
            *(str(tmp / s) for s in sources),
            *libs,
            "-lm",
            "-pthread",
            "-Wl,-Bsymbolic",
            "-Wl,--no-undefined",
            *keep,
        ]
    )


def run(cmd: list[str]) -> None:
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise ExportError(f"{' '.join(cmd)} failed:\n{proc.stderr.strip()}")
