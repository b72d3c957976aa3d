"""The optimizing compiler's process: LLVM IR text in, an optimized object file out (``optimizer.py`` starts it).

Run as ``python -I -S optimizer_worker.py LLVMLITE_DIR`` with pipes for stdin and stdout; it imports llvmlite
and the standard library only (never scriptc, never the user's program), so it starts in ~60 ms and a crash in
LLVM ends this process, not the user's. It loads LLVM, then reads the first message, which sets the target;
then every message is a module.

Messages are frames: an 8-byte little-endian length, then that many bytes.
  parent -> child:  frame(JSON {"triple", "cpu", "features", "pipeline"}), then frame(IR text) per job
  child -> parent:  per job, frame(one status byte, b"o" then the object file or b"e" then LLVM's error text)
"""

import os
import struct
import sys

NICENESS = 10


def read_frame(stream) -> bytes | None:
    """A frame's bytes; None at the end of the stream. ``stream`` may be raw (reads return what is there)."""
    head = read_exactly(stream, 8)
    if head is None:
        return None
    (size,) = struct.unpack("<Q", head)
    return read_exactly(stream, size)


def read_exactly(stream, size: int) -> bytes | None:
    parts, left = [], size
    while left:
        part = stream.read(left)
        if not part:
            return None
        parts.append(part)
        left -= len(part)
    return b"".join(parts)


def write_frame(stream, data: bytes) -> None:
    """Write a frame; ``stream`` may be raw (a write may take part of the data)."""
    view = memoryview(struct.pack("<Q", len(data)) + data)
    while view:
        view = view[stream.write(view) :]


def serve(llvm, target: dict, stdin, stdout) -> None:
    machine = llvm.Target.from_triple(target["triple"]).create_target_machine(
        cpu=target["cpu"], features=target["features"], opt=3, jit=True
    )
    pipeline = target["pipeline"]
    while True:
        text = read_frame(stdin)
        if text is None:
            return
        try:
            mod = llvm.parse_assembly(text.decode())
            mod.triple = target["triple"]
            mod.data_layout = str(machine.target_data)
            mod.verify()
            options = llvm.create_pipeline_tuning_options(speed_level=pipeline["speed_level"])
            options.loop_vectorization = pipeline["loop_vectorization"]
            options.slp_vectorization = pipeline["slp_vectorization"]
            options.loop_unrolling = pipeline["loop_unrolling"]
            builder = llvm.create_pass_builder(machine, options)
            builder.getModulePassManager().run(mod, builder)
            status, reply = b"o", machine.emit_object(mod)
        except Exception as e:  # noqa: BLE001 - reported to the parent, which compiles the module itself
            status, reply = b"e", f"{type(e).__name__}: {e}".encode()
        write_frame(stdout, status + reply)
        stdout.flush()


def main() -> None:
    import json
    import signal  # here: the user's process imports this module for its frames, not to run it

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C in a terminal is for the user's process, not this one
    # background work: where the cores are all busy (the user's threads, the first tier's code generation on
    # threads), they go first; O3's code replaces code that already runs
    try:
        os.nice(NICENESS)
    except OSError:
        pass
    sys.path.insert(0, sys.argv[1])
    import llvmlite.binding as llvm  # before the header: LLVM loads while the parent writes it

    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    header = read_frame(stdin)
    if header is not None:
        serve(llvm, json.loads(header), stdin, stdout)


if __name__ == "__main__":
    main()
