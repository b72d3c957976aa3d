"""The first tier's kernels generated while the rest of the program is still being lowered.

Why: a large program's first call lowered all of its functions (Python, one core), then generated code for them
(LLVM, two threads). The MLP training step: 51 ms of lowering, then ~45 ms of code generation for 6,000 lines of
kernels and a 5,000-line body and CPython entry. But each outlined function (outline.py) is finished as soon as
its node is lowered, long before the body is. ``KernelStream`` ships finished functions in batches of
``BATCH_LINES`` instructions to a code generation thread (``codegen_threads.Stream``), which works on the other
core while this one goes on lowering. The body is a batch once it is finished, and what is lowered after it (the
entry points) the last one (``ship_rest``), which this thread generates while the other finishes the body. The
objects are linked in the order shipped (the MLP step: passes 25, lowering and shipping ~67, then ~25 ms).

A batch holds every function the module defines that is finished (not being lowered, calling none that is) and
not yet shipped. It defines them exported, under the compile's names (``first_tier.exported_name``), and declares
the functions they call, so that a later module calls an earlier one. Every batch is generated without
optimization, as a large program's kernels are in the first tier (first_tier.py); O3 gets the whole module as
before. Only the first tier streams: the cache and O3 see one module, printed from the batches' texts.
"""

from __future__ import annotations

from llvmlite import ir

from .first_tier import (
    CONSTANT_GLOBAL,
    REFERENCE,
    declaration,
    exported_name,
    first_tier_symbol,
    first_tier_text,
    renaming,
)
from .text_builder import function_text, module_head

MIN_OUTLINED = 16  # outlined nodes from which a program's kernels stream (the MLP step: 40, train_state: 21)
BATCH_LINES = 700  # instructions of finished functions that make a batch


class KernelStream:
    """Ships the finished functions of a module being lowered (its symbols under ``prefix``) to ``codegen`` (a
    ``codegen_threads.Stream``) as first-tier modules, their symbols under ``quick`` as the first tier's are."""

    def __init__(self, prefix: str, quick: str, codegen, before_finish=lambda before=None: None):
        self.prefix, self.quick, self.codegen = prefix, quick, codegen
        # called before this thread generates code too: gc_pause.collecting_meanwhile's start(before)
        self.before_finish = before_finish
        self.shipped: set[str] = set()  # names in the module
        self.printed: dict[str, str] = {}  # the text of each function shipped, by its name
        self.exports: list[list[str]] = []  # each batch's exported names, in the first tier's text
        self.stopped = False
        self._declarations: dict[str, str] = {}
        self._first_tier_names: set[str] = set()

    def functions_finished(self, module: ir.Module, in_progress: list[ir.Function]) -> None:
        """Called when a function of ``module`` is finished; ships a batch when there is enough of them."""
        if self.stopped:
            return
        busy = {fn.name for fn in in_progress}
        batch = self._unshipped(module, busy)
        if sum(len(block.instructions) for fn in batch.values() for block in fn.blocks) < BATCH_LINES:
            return
        globals_ = [str(v) for v in module.globals.values() if not isinstance(v, ir.Function)]
        defined = [line for text in globals_ for line in text.split("\n") if line.startswith('@"')]
        if not all(CONSTANT_GLOBAL.match(line) for line in defined):
            self.stopped = True  # a global that is not a constant would be defined by two modules
            return
        texts = {name: function_text(fn) for name, fn in batch.items()}
        waiting = busy
        while True:  # a function calling one that is not finished waits with it
            late = {name for name, text in texts.items() if waiting & set(REFERENCE.findall(text))}
            if not late:
                break
            waiting |= late
            texts = {name: text for name, text in texts.items() if name not in late}
        if texts:
            self._ship(module, texts, globals_, None)

    def ship_rest(self, module: ir.Module, python_entry: str | None) -> None:
        """What is left of ``module`` (the entry points, what is lowered after the program), as the last module."""
        texts = {name: function_text(fn) for name, fn in self._unshipped(module, set()).items()}
        self._ship(
            module, texts, [str(v) for v in module.globals.values() if not isinstance(v, ir.Function)], python_entry
        )

    def _unshipped(self, module: ir.Module, busy: set[str]) -> dict[str, ir.Function]:
        return {
            v.name: v
            for v in module.globals.values()
            if isinstance(v, ir.Function) and v.blocks and v.name not in busy and v.name not in self.shipped
        }

    def _ship(self, module: ir.Module, texts: dict[str, str], globals_: list[str], python_entry: str | None) -> None:
        """A module defining ``texts`` (exported) with the globals, and declaring the functions they refer to."""
        referenced = set(REFERENCE.findall("".join(texts.values()) + "".join(globals_)))
        lines = module_head(module) + globals_
        for v in module.globals.values():
            if v.name in texts:
                lines.append(texts[v.name].replace("define internal ", "define ", 1))
            elif v.name in referenced and isinstance(v, ir.Function):
                lines.append(self._declaration(v))
        lines += module._get_metadata_lines()
        self.printed.update(texts)
        self.shipped.update(texts)
        text = first_tier_text("\n".join(lines), python_entry).replace(f'"{self.prefix}.', f'"{self.quick}')
        names = [first_tier_symbol(name, self.prefix, self.quick) for name in texts]
        self._first_tier_names.update(names)
        self.codegen.submit(renaming(self._first_tier_names, self.quick)(text), True)
        self.exports.append([exported_name(name, self.quick) for name in names])

    def _declaration(self, fn: ir.Function) -> str:
        """``fn`` declared (made once: a function's signature does not change)."""
        made = self._declarations.get(fn.name)
        if made is None:
            if fn.blocks:
                printed = self.printed.get(fn.name)
                if printed is None:
                    header: list[str] = []
                    fn.descr_prototype(header)
                    printed = header[0]
                made = declaration(printed[: printed.index("\n")], fn.name)
            else:
                made = str(fn)
            self._declarations[fn.name] = made
        return made
