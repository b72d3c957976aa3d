"""``scriptc.cuda``: device arrays and GPU execution of scripted functions.

    dx = scriptc.cuda.to_device(x)         # a DeviceArray in GPU memory
    dy = f(dx, 2.0)                        # host control flow on the CPU, array operators as kernels
    y = dy.copy_to_host()

On a machine with an NVIDIA GPU and driver, kernels are PTX loaded and launched through NVIDIA's cuda-bindings
(``backend/nvptx/driver.py``; ``pip install scriptc[cuda]``). Device arrays speak ``__cuda_array_interface__``
and DLPack, so CuPy arrays and ``torch.cuda`` tensors pass in (to a scripted function or ``to_device``) and out
(``cupy.asarray(d)``, ``torch.from_dlpack(d)``) without copies.

Without a GPU, ``scriptc.cuda.use_emulator()`` (or ``SCRIPTC_CUDA=emulate``) keeps device arrays in host memory
and runs each kernel by compiling the LLVM module its PTX is made from for the host CPU and walking the whole
grid (``backend/nvptx/emulator.py``); everything above the driver is the same code.
"""

from .backend.nvptx.device import (  # noqa: F401  (the public API)
    DeviceArray,
    EmulatorDevice,
    GpuUnsupported,
    as_device_array,
    current_device,
    device_array,
    empty_cache,
    is_available,
    is_device_array,
    launch_config,
    memory_stats,
    set_block_size,
    synchronize,
    to_device,
    use_emulator,
)
