"""An element-wise chain on device arrays: `exp(-x*x) * sin(3x) + 0.5x` as one GPU kernel.

Without a GPU (every machine this was developed on) it runs in scriptc's grid emulator, which compiles the very
LLVM module the PTX is made from for the host CPU and walks the whole grid. It prints the kernel's PTX entry and
checks the result against NumPy.

    python samples/gpu_chain.py
"""

import numpy as np

import scriptc
import scriptc.cuda as cuda


@scriptc.script
def chain(x: np.ndarray) -> np.ndarray:
    return np.exp(-x * x) * np.sin(3.0 * x) + 0.5 * x


def main(n: int = 1_000_000) -> None:
    if not cuda.is_available():
        print("no CUDA device here: using the grid emulator")
        cuda.use_emulator()
    x = np.random.default_rng(0).standard_normal(n).astype(np.float32)
    ptx = chain.inspect_ptx(x)
    print(next(line for line in ptx.splitlines() if ".entry" in line).strip())
    d = chain(cuda.to_device(x))
    cuda.synchronize()
    y = d.copy_to_host()
    expected = np.exp(-x * x) * np.sin(3.0 * x) + 0.5 * x
    print(f"{n} float32 elements, max abs difference from NumPy: {np.abs(y - expected).max():.2e}")


if __name__ == "__main__":
    try:
        main()
    except RuntimeError as e:  # a GPU is present but the driver launch path is not written yet
        print(e)
