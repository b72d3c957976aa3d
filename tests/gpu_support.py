"""Shared by the GPU tests: the grid emulator with its device-to-host copies counted, so a test can tell a kernel
from a silent run on the host (which would copy the operands to the host first)."""

from __future__ import annotations

import numpy as np
import pytest

import scriptc.cuda as cuda
import scriptc.backend.nvptx.device as device_module


class CountingEmulator(cuda.EmulatorDevice):
    """The emulator device, recording the size in bytes of every copy to the host (``copy_to_host`` of the
    device: whole arrays, single elements and reduction results alike all go through it)."""

    def __init__(self):
        self.to_host: list[int] = []

    def copy_to_host(self, host: np.ndarray, pointer: int) -> None:
        self.to_host.append(host.nbytes)
        super().copy_to_host(host, pointer)


COUNTING = CountingEmulator()  # one device, as in use: compiled programs keep the device they were made for


@pytest.fixture
def counting(monkeypatch):
    """The emulator on, new device arrays on the CountingEmulator (returned, its record cleared); block size
    restored after."""
    device = COUNTING
    device.to_host.clear()
    monkeypatch.setattr(device_module, "_EMULATOR", device)
    cuda.use_emulator()
    yield device
    cuda.use_emulator(False)
    cuda.set_block_size(256)


def to_device(args):
    """Arguments with every host array copied to the device (the same array twice: the same device array)."""
    moved = {}
    return [moved.setdefault(id(a), cuda.to_device(a)) if isinstance(a, np.ndarray) else a for a in args]


@pytest.fixture
def emulator():
    """The grid emulator for the test, the default block size after it."""
    cuda.use_emulator()
    yield
    cuda.use_emulator(False)
    cuda.set_block_size(256)


def to_host(x):
    """A result with device arrays copied back (tuples element by element)."""
    if isinstance(x, cuda.DeviceArray):
        return x.copy_to_host()
    if isinstance(x, tuple):
        return tuple(to_host(e) for e in x)
    return x
