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

A large program's kernels (``FAST_CODEGEN_LINES`` in all) get the unoptimizing code generator too, after the
short IR pipeline: the MLP training step's two kernel modules of ~4,800 lines took 150 ms each to generate
optimized, 20 ms not, for code that runs about 2x slower (0.57 against 0.27 ms a step) until O3's replaces it,
which for programs that size takes seconds.
"""

from __future__ import annotations

import re

# Reference counts, allocations and the entry's array arguments: calls in the first tier (inlined, they were most
# of a large function's code: the MLP training step's 12,600 lines after inlining, ~600 counts), inlined at O3
_RUNTIME_INLINE = re.compile(
    r'(@"scriptc\.rt\.(?:retain|release|(?:alloc_array|unbox_array|reshape_dims)\.[^"]+)"'
    r"\([^\n]*\)) alwaysinline\n"
)
_BRANCH_TARGET = re.compile(r'label %"?([^",\s\]]+)')
_LABEL = re.compile(r"\n([^ \n][^\n]*):(?=\n)")  # a block's label (a line not indented)
REFERENCE = re.compile(r'@"([^"]+)"')
CONSTANT_GLOBAL = re.compile(r'^@"[^"]+" = (external global|(private |internal )?(unnamed_addr )?constant)', re.M)
STRAIGHT_LINE_UNOPTIMIZED = 300  # lines: a loop-free function this long is code generated without optimization
SPLIT_LINES = 1000  # lines of unoptimized functions from which they are a module of their own
FAST_CODEGEN_LINES = 3000  # lines of kernels from which they too get the unoptimizing code generator


class _Function:
    """One ``define`` of a module's text: its name, header line, body (from the header's end to its ``}``)."""

    def __init__(self, text: str, at: int):
        self.header_end = text.index("\n", at)
        self.end = text.find("\n}\n", self.header_end) + 3
        self.name = text[text.index('@"', at) + 2 : text.index('"(', at)]
        self.header, self.body = text[at : self.header_end], text[self.header_end : self.end]
        self.lines = self.body.count("\n") - 2
        self.unoptimized = " optnone" in self.header

    def declaration(self) -> str:
        """``declare`` with this function's signature (as another module calls it)."""
        return declaration(self.header, self.name)


def declaration(header: str, name: str) -> str:
    """``declare`` with the signature of the function ``name`` whose ``define`` line is ``header``."""
    name_at = header.index(f'@"{name}"(')
    result = header[len("define ") : name_at].replace("internal ", "").strip()
    k = header.rindex(")")  # the parameters' end, unless a function attribute has parentheses
    if "(" in header[k:]:
        depth, k = 0, name_at + len(name) + 4
        while header[k] != ")" or depth:
            depth += {"(": 1, ")": -1}.get(header[k], 0)
            k += 1
    return f"declare {result} {header[name_at : k + 1]}\n"


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
    text = _RUNTIME_INLINE.sub(r"\1 noinline\n", text)
    functions, rest = _functions(text)
    out = []
    for fn, before in zip(functions, rest):
        out.append(before)
        if "alwaysinline" not in fn.header and (
            fn.name == python_entry or (fn.lines >= STRAIGHT_LINE_UNOPTIMIZED and _loop_free(fn.body))
        ):
            out.append(fn.header + (" optnone" if " noinline" in fn.header else " optnone noinline") + fn.body)
        else:
            out.append(fn.header + fn.body)
    return "".join(out) + rest[-1]


def first_tier_modules(
    text: str, python_entry: str | None, entries: list[str], prefix: str, parts: int = 1
) -> list[tuple[str, bool, list[str]]]:
    """The first tier's modules, each ``(text, unoptimized, exports)``, to be linked in order, the names in
    ``exports`` bound (``symbols.bind``) before the next is linked; they may be generated at once (each calls
    only what modules before it export).

    The kernels, in up to ``parts`` modules of about equal size when they are ``PART_LINES`` long or more;
    then, when they are long (``SPLIT_LINES``), the unoptimized functions with those that call them and the
    ``entries`` (the symbols the caller looks up), all loop-free (one module, unoptimized, when there are no
    kernels). Functions a module calls in another are renamed under ``prefix`` (names a process binds must be
    the compile's own); functions inlined wherever called are in every module, and so are short ones called
    from several (``SHARED_LINES``), under internal names. Nothing is split when the module defines a global
    that is not a constant (it would be two)."""
    text = first_tier_text(text, python_entry)
    functions, rest = _functions(text)
    fast = sum(fn.lines for fn in functions if not fn.unoptimized) >= FAST_CODEGEN_LINES
    shared = "".join(rest)
    if not all(CONSTANT_GLOBAL.match(line) for line in shared.split("\n") if line.startswith('@"')):
        return [(text, fast, [])]
    by_name = {fn.name: fn for fn in functions}
    calls = {fn.name: set(REFERENCE.findall(fn.body)) & by_name.keys() for fn in functions}
    inlined = {fn.name for fn in functions if "alwaysinline" in fn.header}
    late = _late(functions, calls, inlined, entries)
    if late and all(fn.name in late or fn.name in inlined for fn in functions):
        return [(text, True, [])]  # all of it runs once per call: one module, unoptimized code generation
    early = [fn for fn in functions if fn.name not in late and fn.name not in inlined]
    groups = _partition(early, calls, inlined, set(entries) - late, parts)
    if late:
        groups.append(sorted(late))
    if len(groups) == 1:
        return [(text, fast, [])]
    home = {name: k for k, group in enumerate(groups) for name in group}
    local = {k: {n for name in group for n in _closure(name, calls, home)} for k, group in enumerate(groups)}
    needs = {k: set().union(*(calls[n] for n in local[k] | inlined)) - local[k] - inlined for k in local}
    if any(home.get(name, k) >= k for k in needs for name in needs[k]):
        return [(text, fast, [])]  # a module would call one linked after it (an inlined function's call)
    exported = sorted(set().union(*needs.values()))
    renamed = {name: exported_name(name, prefix) for name in exported}
    rename = renaming(exported, prefix)

    modules = []
    for k in range(len(groups)):
        own = set(groups[k])
        defined = "".join(
            rename(
                by_name[name].header.replace("define internal ", "define ", 1)
                if name in exported and name in own
                else by_name[name].header
            )
            + rename(by_name[name].body)
            for name in (fn.name for fn in functions)
            if name in local[k] or name in inlined
        )
        declared = "".join(rename(by_name[name].declaration()) for name in sorted(needs[k]))
        modules.append(
            (
                shared + declared + defined,
                fast or (bool(late) and k == len(groups) - 1),
                [renamed[name] for name in exported if name in own],
            )
        )
    return modules


def exported_name(name: str, prefix: str) -> str:
    """The name under which a module exports one of its functions to those linked after it: the compile's own
    (``prefix``), since the process binds it."""
    return name if name.startswith(prefix) else f"{prefix}split.{name}"


def renaming(names, prefix: str):
    """``rename(text)``: references to ``names`` that are not the compile's own, under their exported names."""
    others = re.compile("|".join(re.escape(f'@"{name}"') for name in sorted(names) if not name.startswith(prefix)))
    if not others.pattern:
        return lambda piece: piece
    return lambda piece: others.sub(lambda m: f'@"{exported_name(m.group(0)[2:-1], prefix)}"', piece)


def first_tier_symbol(name: str, prefix: str, quick: str) -> str:
    """A symbol of the compile (``prefix``) under the first tier's own prefix ``quick`` (both tiers' objects live
    in one process); another symbol as it is."""
    return quick + name[len(prefix) + 1 :] if name.startswith(prefix + ".") else name


SHARED_LINES = 60  # a function this short, called from several modules, is in each of them
PART_LINES = 1500  # lines of kernels from which they are generated in parts, on threads


def _late(functions: list[_Function], calls: dict, inlined: set, entries: list[str]) -> set[str]:
    """The unoptimized functions with those that call them and the entries, when they are long enough to be a
    module of their own and all loop-free; else none."""
    late = {fn.name for fn in functions if fn.unoptimized or fn.name in entries}
    if sum(fn.lines for fn in functions if fn.unoptimized) < SPLIT_LINES:
        return set()
    grew = True
    while grew:  # a function calling into the second module is in it
        grew = False
        for fn in functions:
            if fn.name not in late and fn.name not in inlined and calls[fn.name] & late:
                if not _loop_free(fn.body):
                    return set()  # a kernel would lose its optimization
                late.add(fn.name)
                grew = True
    return late


def _partition(early: list[_Function], calls: dict, inlined: set, entries: set[str], parts: int) -> list[list[str]]:
    """The early functions in groups of about equal lines, each calling only into groups before it; the
    entries in the last. Short functions called from several places are in every group that calls them
    (``_closure``), not in a group of their own."""
    size = sum(fn.lines for fn in early)
    parts = max(1, min(parts, size // PART_LINES))
    names = [fn.name for fn in early]
    copied = {fn.name for fn in early if fn.lines <= SHARED_LINES and fn.header.startswith("define internal ")}
    while True:  # ... calling only copied functions (so that a copy never calls a later group)
        calling_others = {n for n in copied if calls[n] - copied - inlined}
        if not calling_others:
            break
        copied -= calling_others
    units = [n for n in names if n not in copied] or names[:1]
    if parts == 1:
        return [names]
    lines = {fn.name: fn.lines for fn in early}
    order = _callees_first(units, {n: calls[n] & set(units) for n in units})

    # the entries and functions calling several others (a program's body) in the last group, whose lines count
    # from the start, so that the kernels they call fill the others first
    def calls_several(scc):
        return len(set().union(*(calls[n] for n in scc)) & set(units) - scc) > 1

    last = [scc for scc in order if scc & entries or calls_several(scc)]
    load, group_of = [0] * parts, {}
    load[-1] = sum(lines[n] for scc in last for n in scc)
    for scc in order:
        lowest = max((group_of[c] for n in scc for c in calls[n] if c in group_of and c not in scc), default=0)
        k = parts - 1 if scc in last else min(range(lowest, parts), key=lambda j: load[j])
        for n in scc:
            group_of[n] = k
            load[k] += lines[n] if scc not in last else 0
    groups = [[n for n in units if group_of[n] == k] for k in range(parts)]
    for n in copied:  # defined where called; one never called is in the first group
        if not any(n in calls[u] for u in units):
            groups[0].append(n)
    return [g for g in groups if g]


def _closure(name: str, calls: dict, home: dict) -> set[str]:
    """``name`` and the functions it calls, transitively, that have no group of their own (copied ones)."""
    seen, stack = {name}, [name]
    while stack:
        for callee in calls[stack.pop()]:
            if callee not in seen and callee not in home:
                seen.add(callee)
                stack.append(callee)
    return seen


def _callees_first(units: list[str], calls: dict) -> list[set[str]]:
    """The call graph's strongly connected components, callees before callers (Tarjan's algorithm)."""
    index, low, on_stack, stack, order = {}, {}, set(), [], []
    for root in units:
        if root in index:
            continue
        work = [(root, iter(sorted(calls[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, successors = work[-1]
            succ = next(successors, None)
            if succ is not None:
                if succ not in index:
                    index[succ] = low[succ] = len(index)
                    stack.append(succ)
                    on_stack.add(succ)
                    work.append((succ, iter(sorted(calls[succ]))))
                elif succ in on_stack:
                    low[node] = min(low[node], index[succ])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                scc = set()
                while True:
                    n = stack.pop()
                    on_stack.discard(n)
                    scc.add(n)
                    if n == node:
                        break
                order.append(scc)
    return order


def _loop_free(body: str) -> bool:
    """Whether a function's control-flow graph (its text's blocks and branches) has no cycle."""
    if ", !llvm.loop !" in body:
        return False  # a loop's back-edge (common.loop_hints): the loops the lowering makes have one
    pieces = _LABEL.split(body)  # code before the first label, then (label, its block's code) pairs
    successors: dict[str, list[str]] = {"": _BRANCH_TARGET.findall(pieces[0])}
    for label, code in zip(pieces[1::2], pieces[2::2]):
        successors.setdefault(label.strip('"'), []).extend(_BRANCH_TARGET.findall(code))
    state = dict.fromkeys(successors, 0)  # 0 unvisited, 1 on the path, 2 done
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
