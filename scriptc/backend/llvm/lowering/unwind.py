"""The error path of generated functions: every reference native code owns when it raises is released.

A generated function returns an error code instead of its result when an operator raises (errors.py). Before it
returns, it drops every reference it owns at that point, so that a call that raises leaks nothing (a caller
catching IndexError in a loop must not run out of memory). Which references are owned where is what
``ownership`` decides; this mixin makes that state visible to the error path:

- *held values*: each counted part of an owned value (an array's meminfo, a str's object; tuples looked
  into) has a pointer-sized stack slot, null at the function's entry, set when the value is bound (a node's
  output, a loop body's carried parameter) and reset to null when ownership drops it. LLVM's mem2reg turns
  the slots back into SSA values, so the normal path pays nothing;
- *in-flight references*: what an operator allocates or retains (its output buffer, a view's reference, a
  temporary copy) before its outputs own it. Each such site has a slot, set when it takes the reference and
  reset when the operator has finished (its outputs are then held) or released the temporary, so a check that
  fails in the middle of an operator (an integer power's negative exponent after the output was allocated)
  frees the output too.

Every raise point branches to one ``unwind`` block per function, carrying its error code in a phi; the block
releases every slot (a null slot is a no-op) and returns the code. A call to another scripted function that
fails branches there with the callee's code: the callee has already released its own references.

The numbers a message needs go to the calling thread's payload (errors.py) through ``payload_buffer``.
"""

from __future__ import annotations

import ctypes
import re

from llvmlite import ir

from ....ir.core import Value
from ....ir.types import ListType, TensorType
from .common import I8P, I32, I64, i32, i64, process_global, ref_parts
from ..runtime.text_builder import TextBuilder
from ..runtime.errors import (
    ERROR_TABLE,
    FALLBACK_PAYLOAD_ADDRESS,
    PAYLOAD_KEY_ADDRESS,
    PAYLOAD_SLOTS,
    PAYLOAD_SYMBOLS,
    PTHREAD_KEY_T,
)
from . import lists, strings, summation

NULL = ir.Constant(I8P, None)
UNWIND_INLINE_SLOTS = 16  # above this many array slots, the unwind block releases them by one call


class Unwinding:
    """Mixin of FunctionLowering (listed before ArrayOps, whose ``alloc``/``array_retain``/``release_temp`` it
    extends)."""

    # a function compiled once for the whole process (``summation.build_function``): it has no unwind block and
    # returns no status, so code that would raise there raises KernelRaises, and the caller lowers it inline
    compiled_once = False

    # set per function by ``init_unwind``
    _slots: list  # (slot, is_array) for every slot of this function
    _held: dict  # id(Value) -> its slots
    in_flight: list | None = None  # slots of the operator being lowered; None outside an operator
    _unwind_bb = None
    _status = None

    def init_unwind(self, arrays: int = 0) -> None:
        """``arrays``: about how many array references the function will hold; above ``UNWIND_INLINE_SLOTS``
        their slots are one stack array (``_array_slot``)."""
        self._slots, self._held, self.in_flight = [], {}, None
        self._free_array_slots: list = []  # array slots null again, for the next array to take
        self._unwind_bb = self._status = None
        self._slot_array = None
        self._array_slots = 0 if arrays > UNWIND_INLINE_SLOTS else None

    def _new_slot(self, is_array):
        """A stack slot for one reference, null from the function's entry on; ``is_array``: True for an array's
        meminfo, False for a str, a ListType for a list."""
        if is_array is True and self._free_array_slots:
            return self._free_array_slots.pop()
        if is_array is True and self._array_slots is not None:
            return self._array_slot()
        with self.b.goto_block(self.entry_block):
            self.b.position_at_start(self.entry_block)
            slot = self.b.alloca(I8P)
            self.b.store(NULL, slot)
        self._slots.append((slot, is_array))
        return slot

    def _array_slot(self):
        """An array's slot in a function holding many: an element of one stack array (its length set, and the
        array zeroed and released by one call each, in ``finish_unwind``). A slot of its own would be two
        lines of IR at the function's entry and two more where the unwind block takes its address
        (``_release_through_table``): the MLP training step's body held 381."""
        b = self.b
        with b.goto_block(self.entry_block):
            if self._slot_array is None:
                b.position_at_start(self.entry_block)
                self._slot_array = b.alloca(I8P, size=i64(0))  # its count: set_count in finish_unwind
            b.position_after(self._slot_array)
            slot = b.gep(self._slot_array, [i64(self._array_slots)], inbounds=True)
        self._array_slots += 1
        return slot

    # -- held values ---------------------------------------------------------------------------------------
    def hold(self, v: Value) -> None:
        """``v`` (bound) now owns its references: the error path releases them until ``unhold``."""
        parts = list(ref_parts(v.type, self.get(v)))
        held = self._held.get(id(v))
        if held is None:
            kinds = [t if isinstance(t, ListType) else isinstance(t, TensorType) for t, _ in parts]
            held = self._held[id(v)] = [(self._new_slot(kind), kind) for kind in kinds]
        for (slot, _), (_, vals) in zip(held, parts):
            self.b.store(vals[0], slot)

    def hold_taking_over(self, v: Value, inputs: list[Value], moved: list[Value]) -> None:
        """``v``, the tuple of ``inputs``, holds their references: those ``moved`` into it keep their slots, set
        already (no store); the others' parts take slots as ``hold`` gives them."""
        held = []
        for x in inputs:
            taken = self._held.pop(id(x), None) if any(m is x for m in moved) else None
            if taken is not None:
                held += taken
                continue
            for t, vals in ref_parts(x.type, self.get(x)):
                kind = t if isinstance(t, ListType) else isinstance(t, TensorType)
                held.append((self._new_slot(kind), kind))
                self.b.store(vals[0], held[-1][0])
        self._held[id(v)] = held

    def unhold(self, v: Value) -> None:
        """``v`` no longer owns its references: its slots are null, an array's free for the next array held.
        (Reused in lowering order, a slot never holds two values at once: a value is dropped in the block
        that defines it, so code lowered after the drop runs after it or on another branch.)"""
        for slot, kind in self._held.pop(id(v), ()):
            self.b.store(NULL, slot)
            if kind is True:
                self._free_array_slots.append(slot)

    # -- in-flight references --------------------------------------------------------------------------
    def _hold_in_flight(self, ref) -> None:
        if self.in_flight is not None:
            slot = self._new_slot(True)
            self.b.store(ref, slot)
            self.in_flight.append(slot)

    def land_in_flight(self) -> None:
        """The operator has finished: its outputs hold what it took."""
        for slot in self.in_flight or []:
            self.b.store(NULL, slot)
            self._free_array_slots.append(slot)

    def allocation_slot(self):
        """Where ``alloc`` has the allocator store the new meminfo, so that the error path sees it: inside an
        operator an in-flight slot, else a stack slot of its own."""
        if self.in_flight is None:
            return self.alloca(I8P)
        slot = self._new_slot(True)
        self.in_flight.append(slot)
        return slot

    def array_retain(self, vals) -> None:
        self.b.call(self.runtime("retain"), [vals[0]])
        self._hold_in_flight(vals[0])

    def take_ref(self, t, vals) -> None:
        """Retain one counted part for a value that will hold it (not an operator's in-flight reference)."""
        if isinstance(t, (TensorType, ListType)):
            self.b.call(self.runtime("retain"), [vals[0]])  # a list's count is at offset 0 too
        else:
            strings.str_retain(self, vals)

    def release_temp(self, a, original) -> None:
        """Release ``a``, a copy made of ``original`` (``unaliased``), if it is one."""
        b = self.b
        copied = b.icmp_unsigned("!=", a.mi, original.mi)
        with b.if_then(copied):
            self.array_release([a.mi])
        for slot in self.in_flight or []:
            cur = b.load(slot)
            b.store(b.select(b.and_(copied, b.icmp_unsigned("==", cur, a.mi)), NULL, cur), slot)

    def release_scratch(self, a) -> None:
        """Release a temporary the operator allocated for itself (``alloc``) before it finishes."""
        self.array_release([a.mi])
        b = self.b
        for slot in self.in_flight or []:
            cur = b.load(slot)
            b.store(b.select(b.icmp_unsigned("==", cur, a.mi), NULL, cur), slot)

    # -- raising ---------------------------------------------------------------------------------------------
    def fail(self, code) -> None:
        """Return error ``code`` (an int or an i32 value) from here, through the unwind block."""
        if self.compiled_once:
            raise summation.KernelRaises(code)
        if self._unwind_bb is None:
            self._unwind_bb = self.function.append_basic_block("unwind")
            with self.b.goto_block(self._unwind_bb):
                self._status = self.b.phi(I32, "status")
        self._status.add_incoming(i32(code) if isinstance(code, int) else code, self.b.block)
        self.b.branch(self._unwind_bb)

    def finish_unwind(self) -> None:
        """Fill the unwind block: release every slot, return the status (after the whole function is lowered,
        when all slots are known)."""
        b = self.b
        if self._slot_array is not None:
            self._slot_array.set_count(self._array_slots)
        if self._unwind_bb is None:
            return
        b.position_at_end(self._unwind_bb)
        if self._slot_array is not None:
            with b.goto_block(self.entry_block):
                b.position_after(self._slot_array)
                memset = self.mod.module.declare_intrinsic("llvm.memset", [I8P, I64])
                b.call(
                    memset,
                    [
                        b.bitcast(self._slot_array, I8P),
                        ir.Constant(ir.IntType(8), 0),
                        i64(8 * self._array_slots),
                        ir.Constant(ir.IntType(1), 0),
                    ],
                )
            b.call(self._release_slots(indirect=False), [self._slot_array, i64(self._array_slots)])
        arrays = [slot for slot, is_array in self._slots if is_array is True]
        out_of_line = len(arrays) > UNWIND_INLINE_SLOTS
        if out_of_line:
            self._release_through_table(arrays)
        for slot, is_array in self._slots:
            if out_of_line and is_array is True:
                continue
            ref = b.load(slot)
            if isinstance(is_array, ListType):
                lists.list_release(self, [ref], is_array)
            elif is_array:
                b.call(self.runtime("release"), [ref])
            else:
                with b.if_then(b.icmp_unsigned("!=", ref, NULL)):
                    strings.str_release(self, [ref])
        b.ret(self._status)

    def _release_through_table(self, slots) -> None:
        """Release array slots by one call that reads them through a table of their addresses. Read here
        directly, each slot would be promoted to SSA values and the unwind block would get a phi per slot with
        an operand per raise point (tens of thousands in a training step, which LLVM's code generation turns
        into as many copies); once their addresses are taken, the slots stay in memory: a store where a value
        is bound or dropped, nothing more."""
        b = self.b
        with b.goto_block(self.entry_block):
            b.position_at_start(self.entry_block)
            table = b.alloca(ir.ArrayType(I8P.as_pointer(), len(slots)))
        for k, slot in enumerate(slots):
            b.store(slot, b.gep(table, [i32(0), i32(k)], inbounds=True))
        b.call(self._release_slots(indirect=True), [b.bitcast(table, I8P.as_pointer().as_pointer()), i64(len(slots))])

    def _release_slots(self, indirect: bool) -> ir.Function:
        release = self.runtime("release")
        key = f"release_slots.{release.name}.{indirect}"
        fn = self.mod._decls.get(key)
        if fn is None:
            fn = self.mod._decls[key] = _build_release_slots(self.mod, release, indirect)
        return fn

    def raise_if(self, cond, exc_type: type, *args) -> None:
        """If ``cond`` (i1) holds, raise ``exc_type(*args)`` for the current node."""
        if isinstance(cond, ir.Constant) and cond.constant == 0:
            return
        code = ERROR_TABLE.code(exc_type, args, self.node)
        with self.b.if_then(cond, likely=False):
            self.fail(code)

    def error_code(self, exc_type: type, template: str, values: int = 0) -> int:
        """The code of ``exc_type(template.format(*payload))`` raised by the current node, where code that raises
        it writes ``values`` numbers to the payload."""
        if values > PAYLOAD_SLOTS:  # more numbers than a payload carries: the message without them
            template, values = re.sub(r"\{\d+\}", "?", template), 0
        return ERROR_TABLE.code(exc_type, (template,), self.node, payload=values)

    def raise_with(self, cond, exc_type: type, template: str, values: list) -> None:
        """If ``cond`` holds, raise ``exc_type(template.format(*values))`` with run-time i64 ``values``."""
        if isinstance(cond, ir.Constant) and cond.constant == 0:
            return
        code = self.error_code(exc_type, template, len(values))
        with self.b.if_then(cond, likely=False):
            self.fail_with(code, values)

    def fail_with(self, code, values: list) -> None:
        """``fail(code)`` with run-time i64 ``values`` in the payload (none where more than it holds: the code's
        message was made without them, ``error_code``)."""
        self.write_payload(self.b, values)
        self.fail(code)

    def write_payload(self, b: ir.IRBuilder, values: list) -> None:
        """Run-time i64 ``values`` into this thread's payload, by ``b`` (nothing where there are more than it
        holds: the message's code was made without them, ``error_code``)."""
        if values and len(values) <= PAYLOAD_SLOTS:
            b.call(self._payload_writer(len(values)), values)

    def _payload_writer(self, n: int) -> ir.Function:
        """``void write(i64 v0, ..., i64 v{n-1})``: the values into this thread's payload; one per module and
        count, called where an error is raised (inline, a raise with 3 numbers was 8 lines of IR, the MLP
        training step has ~90)."""
        key = f"payload_writer.{n}"
        fn = self.mod._decls.get(key)
        if fn is None:
            fn = self.mod._decls[key] = ir.Function(
                self.mod.module, ir.FunctionType(ir.VoidType(), [I64] * n), self.mod.unique(f"payload_writer.{n}")
            )
            fn.linkage = "internal"
            fn.attributes.add("noinline")
            fn.attributes.add("cold")
            b = TextBuilder(fn.append_basic_block())
            base = b.call(self.mod.helper("payload"), [])
            for k, v in enumerate(fn.args):
                b.store(v, b.gep(base, [i64(k)]))
            b.ret_void()
        return fn


def _build_release_slots(mod, release: ir.Function, indirect: bool) -> ir.Function:
    """``void release_slots(i8*** table, i64 n)``: release ``*table[k]`` for k < n (null: nothing); not
    ``indirect``: ``void release_slots(i8** slots, i64 n)`` releases ``slots[k]``."""
    table_t = I8P.as_pointer().as_pointer() if indirect else I8P.as_pointer()
    fn = ir.Function(mod.module, ir.FunctionType(ir.VoidType(), [table_t, I64]), mod.unique("release_slots"))
    fn.linkage = "internal"
    fn.attributes.add("noinline")
    fn.attributes.add("cold")
    table, n = fn.args
    entry, loop, body, done = (fn.append_basic_block(name) for name in ("entry", "loop", "body", "done"))
    b = TextBuilder(entry)
    b.branch(loop)
    b.position_at_end(loop)
    k = b.phi(I64, "k")
    k.add_incoming(i64(0), entry)
    b.cbranch(b.icmp_signed("<", k, n), body, done)
    b.position_at_end(body)
    slot = b.gep(table, [k])
    b.call(release, [b.load(b.load(slot) if indirect else slot)])
    k.add_incoming(b.add(k, i64(1)), body)
    b.branch(loop)
    b.position_at_end(done)
    b.ret_void()
    return fn


def build_payload_function(mod) -> ir.Function:
    """``i64* payload()``: this thread's payload buffer, allocated (zeroed) on its first use; the process-wide
    fallback buffer if that allocation fails."""
    key_t = ir.IntType(8 * ctypes.sizeof(PTHREAD_KEY_T))
    module = mod.module

    def extern(name, fnty):
        symbol = PAYLOAD_SYMBOLS[name]
        return module.globals.get(symbol) or ir.Function(module, fnty, symbol)

    get = extern("pthread_getspecific", ir.FunctionType(I8P, [key_t]))
    put = extern("pthread_setspecific", ir.FunctionType(I32, [key_t, I8P]))
    calloc = extern("calloc", ir.FunctionType(I8P, [I64, I64]))
    free = mod._decls.get("free") or mod._decls.setdefault(
        "free", ir.Function(module, ir.FunctionType(ir.VoidType(), [I8P]), "free")
    )  # shared with ArrayOps._libc
    fn = ir.Function(module, ir.FunctionType(I64.as_pointer(), []), mod.unique("payload"))
    fn.linkage = "internal"
    fn.attributes.add("noinline")
    fn.attributes.add("cold")
    b = TextBuilder(fn.append_basic_block("entry"))
    key = b.load(process_global(module, "scriptc.payload_key", PAYLOAD_KEY_ADDRESS, key_t))
    found = b.call(get, [key])
    have = b.icmp_unsigned("!=", found, NULL)
    with b.if_then(have):
        b.ret(b.bitcast(found, I64.as_pointer()))
    fresh = b.call(calloc, [i64(PAYLOAD_SLOTS + 1), i64(8)])  # (and the stack floor: STACK_FLOOR_SLOT)
    fallback = process_global(module, "scriptc.payload_fallback", FALLBACK_PAYLOAD_ADDRESS, I64)
    with b.if_then(b.icmp_unsigned("==", fresh, NULL), likely=False):
        b.ret(fallback)
    with b.if_then(b.icmp_unsigned("!=", b.call(put, [key, fresh]), ir.Constant(I32, 0)), likely=False):
        b.call(free, [fresh])  # the Python side would not find it: use the fallback
        b.ret(fallback)
    b.ret(b.bitcast(fresh, I64.as_pointer()))
    return fn
