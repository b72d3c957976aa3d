"""``TextBuilder``: an ``ir.IRBuilder`` whose instructions are written as LLVM IR text when they are built.

Why: an llvmlite instruction is an object that registers its name in the function's scope when built and formats
itself from its operands when the module is printed: ~10 us of Python per instruction in all, ~120 ms of the
MLP training step's first call (13,000 instructions; 1.5 us each as text). A ``Register`` is the instruction's text,
formatted once
from operand references that are themselves strings, and its name is numbered per function
(``%"name:N"``: no scope lookups; llvmlite's own names never contain ``:``). The text is what llvmlite prints for
the same instruction.

Built as text: arithmetic, comparisons, casts, select, memory (alloca, load, store, getelementptr), calls of
functions, aggregates, branches and returns. Everything else (phi, whose incoming edges are added later; vector
element operations; calls with attributes or through inline assembly) is llvmlite's instruction, which takes a
``Register`` as an operand like any other value. Registers carry no debug metadata (the lowering sets none).
"""

from __future__ import annotations

from llvmlite import ir

_LABEL = ir.LabelType()
_CMP = {">": "gt", "<": "lt", "==": "eq", "!=": "ne", ">=": "ge", "<=": "le"}
_I1 = ir.IntType(1)


class Register:
    """An instruction built as text: its result ``type``, ``opname`` and ``operands`` (for the lowering's peephole
    checks), its reference and its line of IR."""

    __slots__ = ("type", "opname", "operands", "ref", "text")

    def get_reference(self) -> str:
        return self.ref

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return f"<Register {self.text}>"

    @property
    def function_type(self):
        return self.type.pointee  # a function pointer's (a call through it)

    def set_metadata(self, name: str, node) -> None:
        self.text += f", !{name} {node.get_reference()}"


class Anchored(Register):
    """A register that knows its block: an alloca (an IRBuilder is positioned after one: ``position_after``) or
    a terminator (``goto_block`` positions before it; ``if_then`` sets its branch weights)."""

    __slots__ = ("parent", "allocated_type")

    def set_count(self, count: int) -> None:
        """An alloca's element count, known after the code that uses its slots is built."""
        self.operands = (ir.Constant(ir.IntType(64), count),)
        self.text = f"{self.ref} = alloca {self.allocated_type}, i64 {count}"

    def set_weights(self, weights) -> None:
        module = self.parent.module
        made = module.__dict__.setdefault("branch_weights", {})  # one node per weights (llvmlite looks its
        md = made.get(tuple(weights))  # operands up otherwise: slow)
        if md is None:
            md = made[tuple(weights)] = module.add_metadata(
                [ir.MetaDataString(module, "branch_weights"), *(ir.Constant(ir.IntType(32), w) for w in weights)]
            )
        self.set_metadata("prof", md)


_POINTERS: dict = {}


def _pointer(t, space: int):
    """``t.as_pointer(space)``, made once per type object (a new one formats its name again when printed; two
    modules' structs of one name differ)."""
    made = _POINTERS.get((id(t), space))
    if made is None:
        if len(_POINTERS) > 4096:  # (a long process's struct types)
            _POINTERS.clear()
        made = _POINTERS[id(t), space] = (t, t.as_pointer(space))  # (t kept: its id stays its own)
    return made[1]


def _typed(v) -> str:
    return f"{v.type} {v.get_reference()}"


class TextBuilder(ir.IRBuilder):
    """``ir.IRBuilder`` building ``Register``s (module docstring; the binary operators and the conversions are
    set after the class, ``_binary`` and ``_conversion``)."""

    def append_basic_block(self, name=""):
        """A block named ``name:bN``, numbered per function: llvmlite's ``Block`` registers its name in the
        function's scope and makes it unique by trying suffixes (~4 us a block, 900 blocks in the MLP training
        step's body); ``:b`` is in no name llvmlite or ``_emit`` makes."""
        fn = self.function
        n = fn.__dict__.get("scriptc_blocks", 0) + 1
        fn.scriptc_blocks = n
        block = ir.Block.__new__(ir.Block)
        block.parent, block.type, block._name = fn, _LABEL, f"{name}:b{n}"
        block.scope, block.instructions, block.terminator = fn.scope, [], None
        fn.blocks.append(block)
        return block

    def _emit(self, typ, opname: str, operands, body: str, name: str, cls=Register) -> Register:
        r = cls()
        r.type, r.opname, r.operands = typ, opname, operands
        fn = self._block.parent
        n = fn.__dict__.get("scriptc_registers", 0) + 1  # (a name llvmlite's Function will not take)
        fn.scriptc_registers = n
        if '"' in name or "\\" in name:
            name = name.replace("\\", "\\5c").replace('"', "\\22")
        r.ref = ref = f'%"{name}:{n}"'
        r.text = f"{ref} = {body}"
        self._block.instructions.insert(self._anchor, r)
        self._anchor += 1
        return r

    def _emit_void(self, opname: str, operands, body: str, terminator: bool = False) -> Register:
        r = Anchored() if terminator else Register()
        r.type, r.opname, r.operands, r.ref, r.text = _VOID, opname, operands, None, body
        block = self._block
        if terminator:
            assert block.terminator is None, "the block is terminated"
            r.parent = block
            block.terminator = r
        block.instructions.insert(self._anchor, r)
        self._anchor += 1
        return r

    def _binop(self, opname: str, lhs, rhs, name: str, flags) -> Register:
        t = lhs.type
        if t is not rhs.type and t != rhs.type:
            raise ValueError(f"Operands must be the same type, got ({t}, {rhs.type})")
        op = " ".join((opname, *flags)) if flags else opname
        return self._emit(t, opname, (lhs, rhs), f"{op} {t} {lhs.get_reference()}, {rhs.get_reference()}", name)

    def fneg(self, arg, name="", flags=()):
        op = " ".join(("fneg", *flags)) if flags else "fneg"
        return self._emit(arg.type, "fneg", (arg,), f"{op} {arg.type} {arg.get_reference()}", name)

    def _compare(self, opname: str, op: str, lhs, rhs, name: str, flags=()) -> Register:
        t = lhs.type
        result = ir.VectorType(_I1, t.count) if isinstance(t, ir.VectorType) else _I1
        flag_text = "".join(" " + f for f in flags)
        return self._emit(
            result,
            opname,
            (lhs, rhs),
            f"{opname}{flag_text} {op} {t} {lhs.get_reference()}, {rhs.get_reference()}",
            name,
        )

    def icmp_signed(self, cmpop, lhs, rhs, name=""):
        return self._compare("icmp", _CMP[cmpop] if cmpop in ("==", "!=") else "s" + _CMP[cmpop], lhs, rhs, name)

    def icmp_unsigned(self, cmpop, lhs, rhs, name=""):
        return self._compare("icmp", _CMP[cmpop] if cmpop in ("==", "!=") else "u" + _CMP[cmpop], lhs, rhs, name)

    def fcmp_ordered(self, cmpop, lhs, rhs, name="", flags=()):
        return self._compare("fcmp", "o" + _CMP[cmpop] if cmpop in _CMP else cmpop, lhs, rhs, name, flags)

    def fcmp_unordered(self, cmpop, lhs, rhs, name="", flags=()):
        return self._compare("fcmp", "u" + _CMP[cmpop] if cmpop in _CMP else cmpop, lhs, rhs, name, flags)

    def select(self, cond, lhs, rhs, name="", flags=()):
        t = lhs.type
        if t is not rhs.type and t != rhs.type:
            raise ValueError(f"select of two types ({t}, {rhs.type})")
        op = " ".join(("select", *flags))
        return self._emit(
            t,
            "select",
            (cond, lhs, rhs),
            f"{op} {_typed(cond)}, {t} {lhs.get_reference()}, {t} {rhs.get_reference()}",
            name,
        )

    def _cast(self, opname: str, value, typ, name: str):
        if value.type is typ or value.type == typ:
            return value
        return self._emit(typ, opname, (value,), f"{opname} {_typed(value)} to {typ}", name)

    def alloca(self, typ, size=None, name=""):
        if size is not None and not hasattr(size, "type"):
            size = ir.Constant(ir.IntType(32), size)
        r = self._emit(
            _pointer(typ, 0),
            "alloca",
            (size,) if size is not None else (),
            f"alloca {typ}" + (f", {_typed(size)}" if size is not None else ""),
            name,
            Anchored,
        )
        r.parent, r.allocated_type = self._block, typ
        return r

    def load(self, ptr, name="", align=None, typ=None):
        if not isinstance(ptr.type, ir.PointerType):
            raise TypeError(f"cannot load from value of type {ptr.type}: not a pointer")
        typ = ptr.type.pointee if typ is None else typ
        return self._emit(
            typ, "load", (ptr,), f"load {typ}, {_typed(ptr)}" + (f", align {align}" if align is not None else ""), name
        )

    def store(self, value, ptr, align=None):
        pt = ptr.type
        if not isinstance(pt, ir.PointerType):
            raise TypeError(f"cannot store to value of type {pt}: not a pointer")
        if pt.pointee is not value.type and pt.pointee != value.type:
            raise TypeError(f"cannot store {value.type} to {pt}: mismatching types")
        return self._emit_void(
            "store",
            (value, ptr),
            f"store {_typed(value)}, {pt} {ptr.get_reference()}" + (f", align {align}" if align is not None else ""),
        )

    def gep(self, ptr, indices, inbounds=False, name="", source_etype=None):
        if source_etype is not None:
            return super().gep(ptr, indices, inbounds, name, source_etype)
        typ, last, space = ptr.type, None, 0
        for i in indices:  # the result's type, as llvmlite's GEPInstr finds it
            last, typ = typ, typ.gep(i)
            if isinstance(last, ir.PointerType):
                space = last.addrspace
        typ = last if not isinstance(typ, ir.PointerType) and isinstance(last, ir.PointerType) else _pointer(typ, space)
        op = "getelementptr inbounds" if inbounds else "getelementptr"
        return self._emit(
            typ,
            "getelementptr",
            (ptr, *indices),
            f"{op} {ptr.type.pointee}, {_typed(ptr)}, {', '.join(map(_typed, indices))}",
            name,
        )

    def call(self, fn, args, name="", cconv=None, tail=False, fastmath=(), attrs=(), arg_attrs=None):
        if not isinstance(fn, ir.Function) or cconv or fastmath or attrs or arg_attrs or fn.calling_convention:
            return super().call(fn, args, name, cconv, tail, fastmath, attrs, arg_attrs)
        fnty = fn.function_type
        expected = fnty.args
        if len(args) < len(expected):
            raise TypeError(f"{fn.name} takes {len(expected)} arguments, got {len(args)}")
        for k, (a, t) in enumerate(zip(args, expected)):
            if a.type is not t and a.type != t:
                if isinstance(t, ir.MetaDataType):  # llvmlite wraps the argument
                    return super().call(fn, args, name, cconv, tail, fastmath, attrs, arg_attrs)
                raise TypeError(f"Type of #{k + 1} arg mismatch: {t} != {a.type}")
        tail_marker = "" if not tail else (tail + " " if isinstance(tail, str) else "tail ")
        body = (
            f"{tail_marker}call {fnty if fnty.var_arg else fnty.return_type} {fn.get_reference()}"
            f"({', '.join(map(_typed, args))})"
        )
        if isinstance(fnty.return_type, ir.VoidType):
            return self._emit_void("call", (fn, *args), body)
        return self._emit(fnty.return_type, "call", (fn, *args), body, name)

    def extract_value(self, agg, idx, name=""):
        indices = idx if isinstance(idx, (tuple, list)) else (idx,)
        typ = agg.type
        for i in indices:
            typ = typ.elements[i]
        return self._emit(
            typ, "extractvalue", (agg,), f"extractvalue {_typed(agg)}, {', '.join(map(str, indices))}", name
        )

    def insert_value(self, agg, value, idx, name=""):
        indices = idx if isinstance(idx, (tuple, list)) else (idx,)
        typ = agg.type
        for i in indices:
            typ = typ.elements[i]
        if value.type is not typ and value.type != typ:
            raise TypeError(f"Can only insert {typ} at {list(indices)} in {agg.type}: got {value.type}")
        return self._emit(
            agg.type,
            "insertvalue",
            (agg, value),
            f"insertvalue {_typed(agg)}, {_typed(value)}, {', '.join(map(str, indices))}",
            name,
        )

    def branch(self, target):
        return self._emit_void("br", (target,), f"br label {target.get_reference()}", terminator=True)

    def cbranch(self, cond, truebr, falsebr):
        return self._emit_void(
            "br",
            (cond, truebr, falsebr),
            f"br {_typed(cond)}, label {truebr.get_reference()}, label {falsebr.get_reference()}",
            terminator=True,
        )

    def ret(self, value):
        return self._emit_void("ret", (value,), f"ret {_typed(value)}", terminator=True)

    def ret_void(self):
        return self._emit_void("ret", (), "ret void", terminator=True)

    def unreachable(self):
        return self._emit_void("unreachable", (), "unreachable", terminator=True)


def _binary(opname: str):
    def build(self, lhs, rhs, name="", flags=()):
        return self._binop(opname, lhs, rhs, name, flags)

    return build


def _conversion(opname: str):
    def build(self, value, typ, name=""):
        return self._cast(opname, value, typ, name)

    return build


for _method, _opname in (
    ("add", "add"),
    ("sub", "sub"),
    ("mul", "mul"),
    ("sdiv", "sdiv"),
    ("udiv", "udiv"),
    ("srem", "srem"),
    ("urem", "urem"),
    ("and_", "and"),
    ("or_", "or"),
    ("xor", "xor"),
    ("shl", "shl"),
    ("lshr", "lshr"),
    ("ashr", "ashr"),
    ("fadd", "fadd"),
    ("fsub", "fsub"),
    ("fmul", "fmul"),
    ("fdiv", "fdiv"),
    ("frem", "frem"),
):
    setattr(TextBuilder, _method, _binary(_opname))
for _opname in (
    "trunc",
    "zext",
    "sext",
    "fptrunc",
    "fpext",
    "bitcast",
    "addrspacecast",
    "fptoui",
    "uitofp",
    "fptosi",
    "sitofp",
    "ptrtoint",
    "inttoptr",
):
    setattr(TextBuilder, _opname, _conversion(_opname))


_VOID = ir.VoidType()
_REGISTERS = (Register, Anchored)


def module_text(module: ir.Module, printed: dict[str, str] | None = None) -> str:
    """``str(module)``, with each ``Register``'s line taken as it is (llvmlite formats every line of a block through
    ``str.format``): 16 -> 9 ms for the MLP training step's 12,800 lines. ``printed``: functions' texts already
    made (``function_text``), by name."""
    printed = printed or {}
    lines = module_head(module)
    lines += [
        (printed.get(v.name) or function_text(v)) if isinstance(v, ir.Function) and v.blocks else str(v)
        for v in module.globals.values()
    ]
    lines += module._get_metadata_lines()
    return "\n".join(lines)


def module_head(module: ir.Module) -> list[str]:
    """A module's first lines: its name, target, and named struct types."""
    return [
        f'; ModuleID = "{module.name}"',
        f'target triple = "{module.triple}"',
        f'target datalayout = "{module.data_layout}"',
        "",
    ] + [t.get_declaration() for t in module.get_identified_types().values()]


def function_text(fn: ir.Function) -> str:
    """A defined function's text, as ``str(fn)``."""
    buf: list[str] = []
    fn.descr_prototype(buf)
    buf.append("{\n")
    for block in fn.blocks:
        buf.append(f"{block._format_name()}:\n  ")
        buf.append("\n  ".join([i.text if i.__class__ in _REGISTERS else str(i) for i in block.instructions]))
        buf.append("\n")
    buf.append("}\n")
    return "".join(buf)
