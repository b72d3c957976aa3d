"""One LLVM JIT per process: host target (real CPU name and features), O3 with the new pass manager (Python
calls the code it makes through ``native.py``).

Floating point is strict: the target machine keeps LLVM's default FP-contraction setting (fuse only what the
IR marks ``contract``, and lowering never does), and no instruction carries fast-math flags.

libm functions are bound under private names (``scriptc.libm.sin`` -> the process's ``sin``) so that LLVM
neither constant-folds them with its own implementation nor rewrites them (``pow(x, 2.0) -> x*x``,
``pow(2.0, x) -> exp2(x)``): native code calls the very libm functions CPython's ``math`` module calls. Every name
the code leaves undefined is resolved through ``symbols.address_of`` (what scriptc binds, then the process's
libraries), as the loader of cached code (``objload.py``) resolves it.
"""

from __future__ import annotations

import struct
import threading

from . import symbols
from .objload import ObjectLoadError
from ....ops.mathfns import C_MATH

# The optimization pipeline (llvmlite's PipelineTuningOptions), one place to change it
PIPELINE = {"speed_level": 3, "loop_vectorization": True, "slp_vectorization": True, "loop_unrolling": True}
# The first tier's (optimizer.py): inline what must be, registers for allocas, fold, simplify the CFG. Measured
# on the bench kernels: compiles in a third to a fifth of O3's time, runs within 2x of O3's code
QUICK_MODULE_PASSES = ("always_inliner", "global_dead_code_eliminate")
QUICK_FUNCTION_PASSES = ("sroa", "instruction_combine", "simplify_cfg")
# ... for a module the unoptimizing code generator takes (first_tier.py): none. Instcombine was 90% of the passes'
# time (the MLP step's kernel halves: 30 -> 3.5 ms of passes each, against 15 ms of code generation); SROA and
# simplifycfg then cost more than they saved the code generator (the MLP step's seven modules: 50.9 -> 48.6 ms
# in all), and the code runs as fast without them (the MLP step 323 / 319 us, train_state's 31.4 / 31.1 us)
UNOPTIMIZED_FUNCTION_PASSES: tuple[str, ...] = ()


# llvmlite.binding, imported by the first Engine: importing the lowering (which imports this module) does not load
# LLVM. (Loading it on a background thread while the first compile does its Python work was slower: the two
# threads took turns holding the GIL; median of 25 cold first calls of mandelbrot, 110 against 95 ms.)
llvm = None


class Engine:
    """The process's JIT. Thread-safe: compilation is serialized by a lock."""

    def __init__(self):
        global llvm
        import llvmlite.binding as llvm

        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        target = llvm.Target.from_default_triple()
        self.triple = target.triple
        self.cpu = llvm.get_host_cpu_name()
        self.features = llvm.get_host_cpu_features().flatten()
        self.target_machine = self._machine(3)
        self.data_layout = str(self.target_machine.target_data)
        self._lock = threading.RLock()
        self._unoptimized_machine = None
        self._codegen_pool = None
        symbols.attach_llvm(llvm.add_symbol)
        self.vector_math = self._vector_math()
        self._ee = llvm.create_mcjit_compiler(llvm.parse_assembly(""), self.target_machine)

    def _vector_math(self) -> dict[str, list[tuple[str, int]]]:
        """{name: [(vector function, lanes)...]}: glibc's libmvec variants this CPU runs, widest first, called by
        vectorized array loops (simd.py); the double variants under the function's name (``exp``: 8 lanes with
        AVX-512, 4 with AVX2, 2 with SSE), the float ones under its float name (``expf``: 16, 8 or 4 lanes).
        Scalar math keeps plain libm, bit-identical to CPython's math module."""
        isa = [
            (f, lanes)
            for f, lanes, feature in (("e", 8, "+avx512f"), ("d", 4, "+avx2"), ("b", 2, "+sse4.2"))
            if feature in self.features.split(",")
        ]
        found = {}
        for name, nargs in ((c.name, c.nargs) for c in C_MATH.values() if c.vector):
            for suffix, per_double in (("", 1), ("f", 2)):
                for letter, lanes in isa:
                    vname = f"_ZGV{letter}N{lanes * per_double}{'v' * nargs}_{name}{suffix}"
                    if symbols.address_of(vname):
                        found.setdefault(name + suffix, []).append((vname, lanes * per_double))
        return found

    def optimize(self, ir_text: str) -> llvm.ModuleRef:
        """Parse, verify and optimize (O3, new pass manager) a module for the host."""
        with self._lock:
            mod = self._parse(ir_text)
            pto = llvm.create_pipeline_tuning_options(speed_level=PIPELINE["speed_level"])
            pto.loop_vectorization = PIPELINE["loop_vectorization"]
            pto.slp_vectorization = PIPELINE["slp_vectorization"]
            pto.loop_unrolling = PIPELINE["loop_unrolling"]
            pb = llvm.create_pass_builder(self.target_machine, pto)
            pb.getModulePassManager().run(mod, pb)
            return mod

    def quick_object(self, ir_text: str, before_codegen=lambda: None, unoptimized: bool = False) -> bytes:
        """The object file of a module after the first tier's short pipeline (optimizer.py); ``unoptimized``:
        by the unoptimizing code generator (FastISel, the fast register allocator: first_tier.py)."""
        with self._lock:
            mod = self._parse(ir_text)
            passes, builder = self.quick_passes(self.target_machine, unoptimized)
            passes.run(mod, builder)
            before_codegen()
            if not unoptimized:
                return self.target_machine.emit_object(mod)
            if self._unoptimized_machine is None:
                self._unoptimized_machine = self._machine(0)
            return self._unoptimized_machine.emit_object(mod)

    def quick_objects(self, modules: list[tuple[str, bool]], before_codegen=lambda: None) -> list[bytes]:
        """``quick_object`` of each ``(text, unoptimized)``, generated at once on several threads
        (codegen_threads.py) when there are several."""
        from . import codegen_threads  # code generation only: linking cached code loads no codegen_threads

        if len(modules) == 1 or codegen_threads.THREADS == 1:
            return [
                self.quick_object(text, before_codegen if k == 0 else lambda: None, unoptimized)
                for k, (text, unoptimized) in enumerate(modules)
            ]
        with self._lock:
            if self._codegen_pool is None:
                self._codegen_pool = codegen_threads.Pool(self._machine, self.quick_passes)
            before_codegen()
            return self._codegen_pool.objects(modules, self.triple, self.data_layout)

    def stream(self):
        """A ``codegen_threads.Stream`` of first-tier modules (generated as ``quick_objects`` generates them)."""
        from . import codegen_threads  # code generation only: linking cached code loads no codegen_threads

        with self._lock:
            if self._codegen_pool is None:
                self._codegen_pool = codegen_threads.Pool(self._machine, self.quick_passes)
        return codegen_threads.Stream(self._codegen_pool, self.triple, self.data_layout)

    @staticmethod
    def quick_passes(machine, unoptimized: bool = False):
        """The first tier's (module pass manager, pass builder) for a target machine: the module passes, then each
        function pass over every function; ``unoptimized``: for the unoptimizing code generator. (One pass
        manager, run by one call: a code generation thread takes the GIL back after each call it makes.)"""
        builder = llvm.create_pass_builder(machine, llvm.create_pipeline_tuning_options(0))
        passes = llvm.create_new_module_pass_manager()
        for name in QUICK_MODULE_PASSES + (UNOPTIMIZED_FUNCTION_PASSES if unoptimized else QUICK_FUNCTION_PASSES):
            getattr(passes, f"add_{name}_pass")()
        return passes, builder

    def _machine(self, opt: int):
        """A target machine for the host, its code generator at optimization level ``opt``.

        At level 0 (the unoptimizing code generator, FastISel) the code is position-independent in the small
        code model, which objload.py links (calls through stubs, globals through slots of its own). In the
        large model that JIT code otherwise gets, FastISel handles no call and no global's address, and gives
        each block that has one to the SelectionDAG: the MLP training step's body (6,400 lines) took 60 ms to
        generate that way, 29 ms without (the kernels: 13 -> 9 ms per 3,600 lines)."""
        if opt == 0:
            return llvm.Target.from_triple(self.triple).create_target_machine(
                cpu=self.cpu, features=self.features, opt=0, reloc="pic", codemodel="small"
            )
        return llvm.Target.from_triple(self.triple).create_target_machine(
            cpu=self.cpu, features=self.features, opt=opt, jit=True
        )

    def _parse(self, ir_text: str) -> llvm.ModuleRef:
        mod = llvm.parse_assembly(ir_text)
        mod.triple = self.triple
        mod.data_layout = self.data_layout
        mod.verify()
        return mod

    def add_module(self, mod: llvm.ModuleRef, symbols: list[str]) -> dict[str, int]:
        """JIT-compile an optimized module; the addresses of the named functions."""
        return self.add_object(self.emit_object(mod), symbols, mod)

    def emit_object(self, mod: llvm.ModuleRef) -> bytes:
        with self._lock:
            return self.target_machine.emit_object(mod)

    def add_object(self, obj: bytes, symbols: list[str], mod: llvm.ModuleRef | None = None) -> dict[str, int]:
        """Link an object file into the JIT; the addresses of the named functions.

        Every symbol the object leaves undefined (its declarations, and the runtime calls code generation adds,
        such as compiler-rt's) must resolve, or this raises LinkError: MCJIT would abort the process on a
        missing symbol while finalizing."""
        with self._lock:
            missing = [name for name in undefined_symbols(obj, mod) if not self._resolves(name)]
            if missing:
                raise LinkError(f"native code needs symbols the JIT cannot resolve: {', '.join(missing)}")
            self._ee.add_object_file(llvm.ObjectFileRef.from_data(obj))
            self._ee.finalize_object()
            return {s: self._ee.get_function_address(s) for s in symbols}

    def _resolves(self, name: str) -> bool:
        # what scriptc binds (bound into LLVM as a side effect) and the process's libraries; then code already
        # in this JIT
        return (
            bool(symbols.address_of(name))
            or bool(llvm.address_of_symbol(name))
            or name in LINKER_SYMBOLS
            or bool(self._ee.get_function_address(name))
        )

    def assembly(self, ir_text: str) -> str:
        with self._lock:
            return self.target_machine.emit_assembly(llvm.parse_assembly(ir_text))


class LinkError(ObjectLoadError, RuntimeError):
    """Native code refers to a symbol nothing in the process defines (a bug of the backend)."""


LINKER_SYMBOLS = {"_GLOBAL_OFFSET_TABLE_"}  # provided by the JIT's own linker


def undefined_symbols(obj: bytes, mod: llvm.ModuleRef | None) -> list[str]:
    """The symbols an ELF64 little-endian object file leaves undefined; for other formats, the module's
    function declarations (code generation's own runtime calls are then not seen)."""
    if obj[:4] != b"\x7fELF" or obj[4] != 2 or obj[5] != 1:
        if mod is None:
            raise LinkError("cannot check the symbols of a non-ELF object file")
        return [f.name for f in mod.functions if f.is_declaration and not f.name.startswith("llvm.")]
    (shoff,) = struct.unpack_from("<Q", obj, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", obj, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", obj, shoff + k * shentsize) for k in range(shnum)]
    names = []
    for _, kind, _, _, offset, size, link, _, _, entsize in sections:
        if kind != 2:  # SHT_SYMTAB
            continue
        strtab = sections[link][4]
        for k in range(1, size // entsize):
            name_at, _, _, shndx = struct.unpack_from("<IBBH", obj, offset + k * entsize)
            if shndx == 0 and name_at:  # SHN_UNDEF
                end = obj.index(b"\0", strtab + name_at)
                names.append(obj[strtab + name_at : end].decode())
    return names


_ENGINE: Engine | None = None
_ENGINE_LOCK = threading.Lock()


def engine() -> Engine:
    global _ENGINE
    if _ENGINE is None:
        with _ENGINE_LOCK:
            if _ENGINE is None:
                _ENGINE = Engine()
    return _ENGINE
