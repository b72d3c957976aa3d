"""``compile_graph(graph) -> NativeFunction``: lower, optimize, link, and (with a cache) keep the machine code.

One LLVM module per compiled signature holds everything the signature needs: the graph's function and its
callees, the C entry point ``i32 entry(<leaves>, out*)`` (what ctypes and exported libraries call), and, when
asked (``python_entry=True``, as ``@scriptc.script`` does), the CPython entry point (``entry.py``) with the
module's own ``release_capsule``. One optimization and one code generation per signature, then the object file
is linked by ``objload`` (no JIT needed; the JIT where the loader declines). (The first tier of tiered
compilation may compile it as two modules: ``first_tier.py``.) With a ``disk_cache.DiskCache`` the
object is stored with what the code refers to in this process (error codes, print plans, str constants) as
plain JSON, so that ``cached.py`` can load it in another process without LLVM.
"""

from __future__ import annotations

import itertools
import re
import threading
import warnings

from ...gc_pause import collecting_meanwhile
from ...ir.core import Graph
from ..argument_writes import written_inputs
from .runtime.callbacks import CALLBACK_SYMBOL, _CONSTANTS, describe_plan, str_symbol
from .runtime.engine import engine
from .runtime.entry import lower_python_entry, release_symbol
from .runtime.entry_runtime import entry_unsupported_reason
from .runtime.errors import ERROR_TABLE
from .lowering.lower import ModuleLowering, check_graph
from .runtime import codegen_threads, streaming
from .runtime.first_tier import first_tier_modules, first_tier_symbol
from .runtime.native import NativeFunction
from .runtime.objload import link
from .runtime.optimizer import submit
from .lowering.outline import outlinable_count
from .runtime.runtimes import objects as runtime_objects, runtime_dependencies
from .runtime.symbols import bind
from .runtime.text_builder import module_text

_COUNTER = itertools.count()
_COUNTER_LOCK = threading.Lock()
FAST_MATH = re.compile(r"\b(fadd|fsub|fmul|fdiv|frem|fneg|fcmp)\b(?! fast)")
_PLAN_CALL = re.compile(r'@"' + re.escape(CALLBACK_SYMBOL) + r'"\(i64 (-?\d+)')
_STR_SYMBOL = re.compile(r'@"(scriptc\.str\.[0-9a-f]+)"')


class _Signature:
    """What ``entry_unsupported_reason`` reads: the types of a graph's signature."""

    def __init__(self, graph: Graph):
        self.arg_types = [v.type for v in graph.inputs]
        self.result_type = graph.outputs[0].type


class Lowered:
    """A graph lowered to one module's LLVM IR text, with the symbols of its entry points and the error codes
    its code returns."""

    def __init__(
        self, graph: Graph, prefix: str, nogil: bool, fastmath: bool, python_entry: bool, written, stream=None
    ):
        """``stream``: a ``streaming.KernelStream`` that generates the first tier's code as functions are done."""
        try:
            text = self._lower(graph, prefix, nogil, python_entry, written, stream)
        except BaseException:
            if stream is not None:
                stream.codegen.cancel()
            raise
        if fastmath:  # every float instruction may be reassociated, contracted (FMA), vectorized as a reduction
            text = FAST_MATH.sub(r"\1 fast", text)
        self.text = text

    def _lower(self, graph: Graph, prefix: str, nogil: bool, python_entry: bool, written, stream) -> str:
        mod = ModuleLowering(prefix, nogil=nogil)
        mod.stream = stream
        with ERROR_TABLE.record() as codes:
            self.entry = mod.entry(graph)  # also binds, in this process, what the code refers to by name
            self.python_entry = self.release = None
            if python_entry and entry_unsupported_reason(_Signature(graph), rebuild=True) is None:
                self.python_entry = f"{prefix}.pyentry.{graph.name}"
                lower_python_entry(
                    mod.module,
                    self.python_entry,
                    mod.module.globals[self.entry],
                    [v.type for v in graph.inputs],
                    graph.outputs[0].type,
                    written,
                    nogil,
                )
                self.release = release_symbol(mod.module)
        self.codes = codes
        if stream is not None and stream.shipped:
            stream.ship_rest(mod.module, self.python_entry)
        elif stream is not None:
            stream.codegen.cancel()
        text = module_text(mod.module, stream.printed if stream is not None else None)
        if stream is not None and stream.shipped:
            # this thread generates code too; meanwhile another takes the module apart and collects
            stream.before_finish(lambda module=mod.module: _dismantle(module))
            stream.codegen.finish()
        else:
            _dismantle(mod.module)
        return text

    def references(self) -> dict | None:
        """What the code refers to in this process by content, as plain JSON for a cache entry (error codes,
        print plans, str constants); None when something cannot travel to another process."""
        errors = [ERROR_TABLE.describe(code) for code in sorted(self.codes)]
        plans = [describe_plan(pid) for pid in sorted(set(map(int, _PLAN_CALL.findall(self.text))))]
        names = set(_STR_SYMBOL.findall(self.text))
        strs = sorted(v for v in list(_CONSTANTS) if str_symbol(v) in names)
        if None in errors or None in plans or len(strs) != len(names):
            return None
        return {"errors": errors, "plans": plans, "strs": strs}


def _dismantle(module) -> None:
    """Free a printed llvmlite module now. Its instructions, blocks and functions refer to each other (parent and
    operand links), so only the cyclic collector could free them, and the MLP training step's ~110,000 objects
    took it 65-85 ms, all of it holding the GIL that the code generation threads need (gc_pause.py)."""
    for fn in module.functions:
        for block in fn.blocks:
            for instruction in block.instructions:
                if hasattr(instruction, "__dict__"):  # (a Register, text_builder.py, has no links to clear)
                    instruction.__dict__.clear()
            block.__dict__.clear()
        fn.__dict__.clear()
    module.globals.clear()


def compile_graph(
    graph: Graph,
    fastmath: bool = False,
    nogil: bool = False,
    cache=None,
    python_entry: bool = False,
    key: str | None = None,
    optimized=None,
) -> NativeFunction:
    """Compile a graph (scalars, arrays, tuples of them; calls to other such graphs) to native code. Raises
    LoweringError, naming the operator and its source position, for anything it cannot lower. ``cache``: a
    ``disk_cache.DiskCache`` to take the machine code from, or to store it in. ``python_entry``: also compile
    the CPython entry point (``NativeFunction.python_entry``). ``key``: the cache key ``cached.load_cached``
    made when it found no entry (it is not looked up again). ``optimized``: compile in two tiers (optimizer.py):
    return the first tier's code now and call ``optimized(native)`` with O3's once it is linked (on the
    optimizer's thread); without it, O3 now."""
    check_graph(graph)
    if cache is not None and key is None:
        from .runtime.cached import load_cached  # on-disk cache only: without it, no cached nor disk_cache

        native, key = load_cached(graph, fastmath, nogil, cache, python_entry, remake_ir)
        if native is not None:
            return native
    if cache is not None:
        prefix = f"scriptc.c{key[:20]}"  # the same code has the same symbols in every process
    else:
        key = None
        with _COUNTER_LOCK:
            prefix = f"scriptc{next(_COUNTER)}"
    written = written_inputs(graph)
    if optimized is not None and codegen_threads.THREADS > 1 and outlinable_count(graph) >= streaming.MIN_OUTLINED:
        with collecting_meanwhile() as collect:
            stream = streaming.KernelStream(prefix, f"{prefix}.quick.", engine().stream(), before_finish=collect)
            lowered = Lowered(graph, prefix, nogil, fastmath, python_entry, written, stream)
        return _first_tier(graph, lowered, prefix, cache, key, written, optimized, stream)
    lowered = Lowered(graph, prefix, nogil, fastmath, python_entry, written)
    if optimized is not None:
        return _first_tier(graph, lowered, prefix, cache, key, written, optimized)
    eng = engine()
    with collecting_meanwhile() as collect:
        llmod = eng.optimize(lowered.text)
        collect()
        obj = eng.emit_object(llmod)
    return _linked(graph, lowered, obj, cache, key, written, llmod)


def _linked(
    graph: Graph,
    lowered: Lowered,
    obj: bytes,
    cache,
    key: str | None,
    written,
    llmod=None,
    rename=lambda symbol: symbol,
) -> NativeFunction:
    """Link a module's object file (its symbols renamed by ``rename``); with a cache key, store it."""
    symbols = {s: rename(s) for s in (lowered.entry, lowered.python_entry, lowered.release) if s}
    found = link(obj, list(symbols.values()), llmod)
    addresses = {s: found[renamed] for s, renamed in symbols.items()}
    if key is not None:
        from .runtime import disk_cache  # here: a process without the on-disk cache does not import it (nor json)

        disk_cache.stats["misses"] += 1
        from .runtime.cached import remember  # on-disk cache only (as load_cached)

        remember(
            key,
            {
                "entry_symbol": lowered.entry,
                "entry": addresses[lowered.entry],
                "python_entry": addresses.get(lowered.python_entry),
                "release": addresses.get(lowered.release),
            },
        )
        references = lowered.references()
        needed = runtime_dependencies(obj)
        if references is not None and needed is not None and not disk_cache.ABSOLUTE_ADDRESS.search(lowered.text):
            cache.store(
                graph.name,
                key,
                obj,
                {
                    "entry": lowered.entry,
                    "python_entry": lowered.python_entry,
                    "release": lowered.release,
                    "runtimes": needed,
                    **references,
                },
                runtimes=runtime_objects(needed),
            )
    text = lowered.text

    def remake():  # the optimized IR as text, for inspect_llvm (printing it costs a first call several ms)
        return text, str(engine().optimize(text))

    return NativeFunction(
        graph,
        None,
        lowered.entry,
        addresses[lowered.entry],
        lowered.text,
        remake,
        python_entry_address=addresses.get(lowered.python_entry, 0),
        release_address=addresses.get(lowered.release, 0),
        written=written,
    )


def _first_tier(
    graph: Graph, lowered: Lowered, prefix: str, cache, key: str | None, written, optimized, stream=None
) -> NativeFunction:
    """The first tier's code, its symbols renamed (both tiers' objects live in one process); O3 queued.
    ``stream``: the ``streaming.KernelStream`` that generated some of its functions meanwhile."""
    quick = f"{prefix}.quick."

    def rename(symbol: str) -> str:
        return first_tier_symbol(symbol, prefix, quick)

    if stream is not None and stream.shipped:
        objects = stream.codegen.results()
        exports = stream.exports
    else:
        entries = [rename(s) for s in (lowered.entry, lowered.python_entry, lowered.release) if s]
        modules = first_tier_modules(
            lowered.text.replace(f'"{prefix}.', f'"{quick}'),
            lowered.python_entry and rename(lowered.python_entry),
            entries,
            quick,
            parts=codegen_threads.THREADS,
        )
        with collecting_meanwhile() as collect:
            objects = engine().quick_objects(
                [(text, unoptimized) for text, unoptimized, _ in modules], before_codegen=collect
            )
        exports = [exports for _, _, exports in modules]
    for obj, names in zip(objects[:-1], exports):  # what the modules after it call in this one
        for name, address in link(obj, names).items():
            bind(name, address)
    native = _linked(graph, lowered, objects[-1], None, None, written, rename=rename)
    native.tier = "first"
    native.optimizing = threading.Event()

    def done(obj: bytes | None, error: str | None) -> None:
        try:
            if obj is not None:
                optimized(_linked(graph, lowered, obj, cache, key, written))
        except Exception as e:  # noqa: BLE001 - reported below; the first tier's code keeps running
            error = f"{type(e).__name__}: {e}"
        try:
            if error is not None:
                native.tier_error = error
                warnings.warn(
                    f"scriptc: optimizing {graph.name} failed, its first-tier code stays: {error}",
                    RuntimeWarning,
                    stacklevel=1,
                )
        finally:
            native.optimizing.set()

    submit(lowered.text, done, persistent=key is not None)
    return native


def remake_ir(graph: Graph, prefix: str, nogil: bool, fastmath: bool, python_entry: bool):
    """(unoptimized, optimized) LLVM IR of a graph whose machine code came from the cache (for inspect_llvm)."""
    lowered = Lowered(graph, prefix, nogil, fastmath, python_entry, written_inputs(graph))
    return lowered.text, str(engine().optimize(lowered.text))
