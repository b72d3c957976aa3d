"""The first tier's modules (tiered compilation: ``optimizer.py``), made from a signature's module text.

``first_tier_text``: reference counting as calls, and, without optimization, the code that runs once per call
(the CPython entry point, and each long loop-free function: a large program's body between its kernels).

``first_tier_modules``: that text as one module, or two when the unoptimized functions are long (``SPLIT_LINES``):
the kernels, then the unoptimized functions, which LLVM generates with an unoptimizing code generator.
``optnone`` alone gives such a function FastISel but still the optimizing register allocator and machine
passes, and every function of a module, generated or not, goes through the code generator's IR passes. The MLP
training step's first tier (18,400 lines, 6,600 of them its body) spent 200 of its 640 ms of code generation on
that body. The second module declares what it calls in the first, which defines it under a name of its own, and
is linked after it.
"""
from __future__ import annotations

import re

# Reference counts: calls in the first tier (inlined, they were most of a large function's code: the MLP training
# step's 12,600 lines after inlining, ~600 counts), inlined by O3's pipeline
_REFCOUNT_INLINE = [(f'@"scriptc.rt.{name}"(i8* %".1") alwaysinline', f'@"scriptc.rt.{name}"(i8* %".1") noinline')
                    for name in ("retain", "release")]
_BRANCH_TARGET = re.compile(r'label %"?([^",\s\]]+)')
_LABEL = re.compile(r'\n([^ \n][^\n]*):(?=\n)')      # a block's label (a line not indented)
_REFERENCE = re.compile(r'@"([^"]+)"')
_GLOBAL = re.compile(r'^@"[^"]+" = (external global|(private |internal )?(unnamed_addr )?constant)', re.M)
STRAIGHT_LINE_UNOPTIMIZED = 300     # lines: a loop-free function this long is code generated without optimization
SPLIT_LINES = 1000                  # lines of unoptimized functions from which they are a module of their own


class _Function:
    """One ``define`` of a module's text: its name, header line, body (from the header's end to its ``}``)."""

    def __init__(self, text: str, at: int):
        self.header_end = text.index("\n", at)
        self.end = text.find("\n}\n", self.header_end) + 3
        self.name = text[text.index('@"', at) + 2:text.index('"(', at)]
        self.header, self.body = text[at:self.header_end], text[self.header_end:self.end]
        self.lines = self.body.count("\n") - 2
        self.unoptimized = " optnone" in self.header

    def declaration(self) -> str:
        """``declare`` with this function's signature (as another module calls it)."""
        name_at = self.header.index(f'@"{self.name}"(')
        result = self.header[len("define "):name_at].replace("internal ", "").strip()
        k = self.header.rindex(")")      # the parameters' end, unless a function attribute has parentheses
        if "(" in self.header[k:]:
            depth, k = 0, name_at + len(self.name) + 4
            while self.header[k] != ")" or depth:
                depth += {"(": 1, ")": -1}.get(self.header[k], 0)
                k += 1
        return f'declare {result} {self.header[name_at:k + 1]}\n'


def _functions(text: str) -> tuple[list[_Function], list[str]]:
    """The module's function definitions, and the rest of its text (types, globals, declarations, metadata)."""
    functions, rest, start = [], [], 0
    at = text.find("define ")
    while at >= 0:
        rest.append(text[start:at])
        functions.append(_Function(text, at))
        start = functions[-1].end
        at = text.find("\ndefine ", start - 1)
        at = at + 1 if at >= 0 else at
    rest.append(text[start:])
    return functions, rest


def first_tier_text(text: str, python_entry: str | None) -> str:
    """The first tier's module: reference counting as calls, and without optimization (FastISel, 3-5x faster
    to generate) the CPython entry point (argument conversion) and each long loop-free function (a large
    program's body between its kernels): code that runs once per call."""
    for inlined, called in _REFCOUNT_INLINE:
        text = text.replace(inlined, called)
    functions, rest = _functions(text)
    out = []
    for fn, before in zip(functions, rest):
        out.append(before)
        if "alwaysinline" not in fn.header and (fn.name == python_entry or (
                fn.lines >= STRAIGHT_LINE_UNOPTIMIZED and _loop_free(fn.body))):
            out.append(fn.header + (" optnone" if " noinline" in fn.header else " optnone noinline") + fn.body)
        else:
            out.append(fn.header + fn.body)
    return "".join(out) + rest[-1]


def first_tier_modules(text: str, python_entry: str | None, entries: list[str], prefix: str
                       ) -> list[tuple[str, bool, list[str]]]:
    """The first tier's modules, each ``(text, unoptimized, exports)``, to be linked in order, the names in
    ``exports`` bound (``symbols.bind``) before the next is linked. One module, or two: the kernels, then the
    unoptimized functions with those that call them and the ``entries`` (the symbols the caller looks up), all
    loop-free (one module, unoptimized, when there are no kernels). Functions the second calls in the first are renamed under ``prefix`` (names a process binds must
    be the compile's own); functions inlined wherever called are in both. Not split when the module defines a
    global that is not a constant (it would be two)."""
    text = first_tier_text(text, python_entry)
    functions, rest = _functions(text)
    late = {fn.name for fn in functions if fn.unoptimized or fn.name in entries}
    shared = "".join(rest)
    if sum(fn.lines for fn in functions if fn.unoptimized) < SPLIT_LINES or not all(
            _GLOBAL.match(line) for line in shared.split("\n") if line.startswith('@"')):
        return [(text, False, [])]
    by_name = {fn.name: fn for fn in functions}
    calls = {fn.name: set(_REFERENCE.findall(fn.body)) & by_name.keys() for fn in functions}
    inlined = {fn.name for fn in functions if "alwaysinline" in fn.header}
    grew = True
    while grew:        # a function calling into the second module is in it
        grew = False
        for fn in functions:
            if fn.name not in late and fn.name not in inlined and calls[fn.name] & late:
                if not _loop_free(fn.body):
                    return [(text, False, [])]     # a kernel would lose its optimization
                late.add(fn.name)
                grew = True
    if all(fn.name in late or fn.name in inlined for fn in functions):
        return [(text, True, [])]       # all of it runs once per call: one module, unoptimized code generation
    exported = sorted(set().union(*(calls[name] for name in late | inlined)) - late - inlined)
    renamed = {name: name if name.startswith(prefix) else f"{prefix}split.{name}" for name in exported}
    others = re.compile("|".join(re.escape(f'@"{name}"') for name in exported if not name.startswith(prefix)))

    def rename(piece: str) -> str:
        return others.sub(lambda m: f'@"{prefix}split.{m.group(0)[2:]}', piece) if others.pattern else piece

    early = shared + "".join(
        rename(fn.header.replace("define internal ", "define ", 1) if fn.name in exported else fn.header) +
        rename(fn.body) for fn in functions if fn.name not in late)
    second = shared + "".join(rename(by_name[name].declaration()) for name in exported) + "".join(
        rename(fn.header + fn.body) for fn in functions if fn.name in late or fn.name in inlined)
    return [(early, False, [renamed[name] for name in exported]), (second, True, [])]


def _loop_free(body: str) -> bool:
    """Whether a function's control-flow graph (its text's blocks and branches) has no cycle."""
    pieces = _LABEL.split(body)     # code before the first label, then (label, its block's code) pairs
    successors: dict[str, list[str]] = {"": _BRANCH_TARGET.findall(pieces[0])}
    for label, code in zip(pieces[1::2], pieces[2::2]):
        successors.setdefault(label.strip('"'), []).extend(_BRANCH_TARGET.findall(code))
    state = dict.fromkeys(successors, 0)      # 0 unvisited, 1 on the path, 2 done
    for root in successors:
        if state[root]:
            continue
        state[root] = 1
        path = [(root, iter(successors[root]))]
        while path:
            node, rest = path[-1]
            succ = next(rest, None)
            if succ is None:
                state[node] = 2
                path.pop()
            elif state.get(succ) == 1:
                return False
            elif state.get(succ) == 0:
                state[succ] = 1
                path.append((succ, iter(successors[succ])))
    return True
