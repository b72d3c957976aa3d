"""The ``scriptc`` command (also ``python -m scriptc``).

    scriptc dump path/to/file.py:func [--types float64[2,3] int ...] [--emit=ir|llvm|asm]
    scriptc cache [--list | --clear] [DIR ...]
    scriptc export kernels.py:saxpy --types "float64[*]" "float64[*]" float -o build/libkernels.so [--emit=obj]

prints the function's IR: the generic graph, or with ``--types`` the graph specialized to those argument types
(``int``, ``float``, ``bool``, or a dtype with dimensions such as ``float64[2,3]``, ``float32[*,*]``, ``int64[]``).
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path

from .backend.llvm.runtime.disk_cache import entries, side_files
from .errors import CompileError
from .function import GraphNeedsTypes, ScriptFunction, script
from .ir.types import TensorType, Type
from .ir.verifier import verify
from .signatures import format_type
from .signatures import parse_arg_type as _parse_arg_type


def parse_arg_type(text: str) -> Type:
    try:
        return _parse_arg_type(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def load_function(target: str) -> ScriptFunction:
    path, sep, name = target.rpartition(":")
    if not sep or not path:
        raise SystemExit(f"scriptc: expected FILE.py:FUNCTION, got {target!r}")
    file = Path(path).resolve()
    if not file.exists():
        raise SystemExit(f"scriptc: no such file: {path}")
    sys.path.insert(0, str(file.parent))
    spec = importlib.util.spec_from_file_location(f"_scriptc_cli_{file.stem}", file)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    fn = getattr(module, name, None)
    if fn is None:
        raise SystemExit(f"scriptc: {path} has no function {name!r}")
    return fn if isinstance(fn, ScriptFunction) else script(fn)


def _example_type(t: Type | None) -> str:
    if t is None:  # unannotated: any kind; an example only
        return "float"
    if isinstance(t, TensorType) and t.rank is None:
        return f"{t.dtype or 'float64'}[*]"
    return format_type(t)


def cmd_dump(args) -> int:
    if args.target.endswith(".ir"):
        return dump_ir_file(args)
    fn = load_function(args.target)
    if args.types is None:
        if args.emit != "ir" or args.passes is not None or args.print_after or args.print_after_all or args.time_passes:
            raise SystemExit("scriptc: --emit=llvm|asm and the pass options need --types (one signature)")
        try:
            graph = fn.graph
        except GraphNeedsTypes:
            what = (
                "the types of its unannotated parameters"
                if None in fn.param_types
                else "its arguments' dtypes and ranks"
            )
            print(
                f"scriptc: the graph of {fn.__name__!r} depends on {what}: pass "
                f"--types (for example --types {' '.join(_example_type(t) for t in fn.param_types)})",
                file=sys.stderr,
            )
            return 2
        print(graph, end="")
        return 0
    if args.passes is not None or args.print_after or args.print_after_all or args.time_passes:
        return dump_passes(fn, args)
    if len(args.types) != len(fn.param_types):
        raise SystemExit(
            f"scriptc: {fn.__name__} takes {len(fn.param_types)} arguments, --types gives {len(args.types)}"
        )
    types = (
        tuple(t.erase_shape() if isinstance(t, TensorType) else t for t in args.types)
        if args.emit != "ir"
        else tuple(args.types)
    )
    if args.device == "cuda" or args.emit == "ptx":
        if args.emit not in ("ir", "ptx"):
            raise SystemExit("scriptc: --target=cuda prints --emit=ir (the GPU signature's graph) or --emit=ptx")
        from .backend.nvptx import ptx_for_graph  # cuda only: loads the nvptx backend (and llvmlite)

        graph = fn.gpu_graph_for_types(tuple(t.erase_shape() if isinstance(t, TensorType) else t for t in args.types))
        if args.emit == "ir":
            print(graph, end="")
        else:
            ptx, kernels = ptx_for_graph(graph, args.arch)
            if not kernels:  # a comment line saying nothing runs on the device, and a failing status
                print(ptx, end="", file=sys.stderr)
                return 1
            print(ptx, end="")
    elif args.emit == "ir":
        print(fn.graph_for_types(types, optimize=not args.no_opt), end="")
    else:
        native = fn.native_for_types(types)
        print(native.llvm_ir if args.emit == "llvm" else native.asm, end="")
    return 0


def dump_passes(fn, args) -> int:
    """Run the pass pipeline (or --passes) on the frontend graph with LLVM-style instrumentation."""
    if len(args.types) != len(fn.param_types):
        raise SystemExit(
            f"scriptc: {fn.__name__} takes {len(fn.param_types)} arguments, --types gives {len(args.types)}"
        )
    pm = pass_manager(args)
    graph = pm.run(fn._compile(tuple(args.types)))
    if not (args.print_after_all or args.print_after):
        print(graph, end="")
    return 0


def dump_ir_file(args) -> int:
    """``scriptc dump file.ir``: the graph of an IR file (as the printer writes graphs; whole-line ``#`` comments
    are skipped) after the pipeline or ``--passes``, verified after each pass: LLVM's ``opt`` for scriptc IR."""
    from .ir.parser import parse  # dump only

    if args.types is not None or args.emit != "ir" or args.device != "cpu":
        raise SystemExit("scriptc: an .ir file's types are in its graph: dump it without --types, --emit or --target")
    graph = parse(Path(args.target).read_text())
    verify(graph)
    if args.no_opt:
        print(graph, end="")
        return 0
    graph = pass_manager(args).run(graph)
    if not (args.print_after_all or args.print_after):
        print(graph, end="")
    return 0


def pass_manager(args):
    from .passes import PASSES, PassManager  # dump only: `scriptc cache` loads no pass

    pm = PassManager(
        verify_each=True,
        print_after=set(args.print_after or ()),
        print_after_all=args.print_after_all,
        time_passes=args.time_passes,
        out=sys.stdout,
    )
    if args.passes is not None:
        names = [p for p in args.passes.split(",") if p]
        unknown = [p for p in names if p not in PASSES]
        if unknown:
            raise SystemExit(f"scriptc: unknown pass {unknown[0]!r}; known: {', '.join(sorted(PASSES))}")
        pm.passes = names
    return pm


def cmd_cache(args) -> int:
    """List or clear on-disk cache entries under the given directories (default: ``SCRIPTC_CACHE_DIR`` if set,
    else every ``__pycache__`` below the current directory)."""
    import os

    dirs = args.dirs or ([os.environ["SCRIPTC_CACHE_DIR"]] if os.environ.get("SCRIPTC_CACHE_DIR") else None)
    missing = [d for d in dirs or () if not os.path.isdir(d)]
    if missing:
        print(f"scriptc cache: no such directory: {', '.join(missing)}", file=sys.stderr)
        return 2
    found = entries(dirs)
    if args.clear:
        for path, _ in found:
            path.unlink(missing_ok=True)
        side = side_files(dirs)  # shared runtimes, host descriptions, source-key manifests
        for path in side:
            path.unlink(missing_ok=True)
        print(
            f"removed {len(found)} entr{'y' if len(found) == 1 else 'ies'}"
            + (f" (and {len(side)} runtime, host and manifest file{'s' * (len(side) != 1)})" if side else "")
        )
        return 0
    for path, header in found:
        what = f"{header['function']}  {header['size']} bytes" if header else "invalid (will be rewritten)"
        print(f"{path}  {what}")
    print(f"{len(found)} entr{'y' if len(found) == 1 else 'ies'}, {sum(p.stat().st_size for p, _ in found)} bytes")
    return 0


EXPORT_USAGE = """usage: scriptc export FILE.py:FUNCTION --types TYPE... [--types TYPE...]
                      [FILE.py:FUNCTION --types ...] -o build/libNAME.so [--emit=so|obj]"""


def parse_export(argv: list[str]):
    """``FILE.py:F --types T... [--types T...] ... -o OUT [--emit=so|obj]``: each --types after a function is
    one more signature of it, in order."""
    targets, output, emit, i = [], None, "so", 0
    while i < len(argv):
        arg = argv[i]
        if arg in ("-o", "--output") and i + 1 < len(argv):
            output, i = argv[i + 1], i + 2
        elif arg.startswith("--emit"):
            emit = arg.split("=", 1)[1] if "=" in arg else (argv[i + 1] if i + 1 < len(argv) else "")
            i += 1 if "=" in arg else 2
        elif arg == "--types":
            if not targets:
                raise SystemExit(f"scriptc: --types before any FILE.py:FUNCTION\n{EXPORT_USAGE}")
            j = i + 1
            while j < len(argv) and not argv[j].startswith("-") and not _is_target(argv[j]):
                j += 1
            targets[-1][1].append(tuple(parse_arg_type(t) for t in argv[i + 1 : j]))
            i = j
        elif _is_target(arg):
            targets.append((arg, []))
            i += 1
        else:
            raise SystemExit(f"scriptc: unexpected argument {arg!r}\n{EXPORT_USAGE}")
    if not targets or output is None or emit not in ("so", "obj"):
        raise SystemExit(EXPORT_USAGE)
    for target, sigs in targets:
        if not sigs:
            raise SystemExit(f"scriptc: {target}: give its argument types with --types")
    return targets, output, emit


def _is_target(arg: str) -> bool:
    return ".py:" in arg and not arg.startswith("-")


def cmd_export(argv: list[str]) -> int:
    from .backend.export import ExportError, export_library  # export only: loads llvmlite (`scriptc cache` loads none)

    try:
        targets, output, emit = parse_export(argv)
    except argparse.ArgumentTypeError as e:
        raise SystemExit(f"scriptc: {e}") from None
    functions = []
    for target, sigs in targets:
        fn = load_function(target)
        for types in sigs:
            if len(types) != len(fn.param_types):
                raise SystemExit(
                    f"scriptc: {fn.__name__} takes {len(fn.param_types)} arguments, --types gives {len(types)}"
                )
        functions.append((fn, sigs))
    try:
        written = export_library(functions, output, emit, command="scriptc export " + " ".join(argv))
    except ExportError as e:
        print(f"scriptc: {e}", file=sys.stderr)
        return 1
    for path in written:
        print(f"wrote {path}")
    return 0


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["export"]:  # its interleaved FILE:F --types ... arguments are parsed by hand
        try:
            return cmd_export(argv[1:])
        except CompileError as e:
            print(e, file=sys.stderr)
            return 1
    parser = argparse.ArgumentParser(prog="scriptc", description="scriptc: compile typed numerical Python")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("export", help="compile functions into a shared library and a C header: " + EXPORT_USAGE[7:])
    dump = sub.add_parser("dump", help="print a function's IR")
    dump.add_argument("target", help="path/to/file.py:function, or an IR file (path/to/graph.ir)")
    dump.add_argument(
        "--types",
        nargs="+",
        type=parse_arg_type,
        metavar="TYPE",
        help="argument types: int, float, bool, float64[2,3], int32[*] ...",
    )
    dump.add_argument(
        "--emit",
        choices=("ir", "llvm", "asm", "ptx"),
        default="ir",
        help="what to print: the IR graph (default), optimized LLVM IR, host assembly, or PTX",
    )
    dump.add_argument(
        "--target", dest="device", choices=("cpu", "cuda"), default="cpu", help="the target (cuda: GPU kernels)"
    )
    dump.add_argument("--arch", default="sm_80", help="the GPU architecture for --emit=ptx (default sm_80)")
    dump.add_argument("--no-opt", action="store_true", help="print the frontend's graph, before any pass")
    dump.add_argument("--passes", help="run these passes (comma-separated) instead of the default pipeline")
    dump.add_argument("--print-after", action="append", metavar="PASS", help="print the IR after this pass")
    dump.add_argument("--print-after-all", action="store_true", help="print the IR after every pass")
    dump.add_argument("--time-passes", action="store_true", help="report the time each pass took")
    cache = sub.add_parser("cache", help="list or clear the on-disk cache of @script(cache=True) functions")
    cache.add_argument(
        "dirs",
        nargs="*",
        metavar="DIR",
        help="where to look (default: SCRIPTC_CACHE_DIR, else __pycache__ directories below .)",
    )
    action = cache.add_mutually_exclusive_group()
    action.add_argument("--list", action="store_true", help="list the entries (the default)")
    action.add_argument("--clear", action="store_true", help="remove the entries")
    args = parser.parse_args(argv)
    try:
        return {"dump": cmd_dump, "cache": cmd_cache}[args.command](args)
    except CompileError as e:
        print(e, file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
