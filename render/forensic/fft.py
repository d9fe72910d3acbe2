"""The decoder's Fourier transforms: SciPy's, in single precision, on the worker's one thread.

Every reading of a leak makes them (autocorrelations of the whole image, correlations of
folded tiles with the sync template), and an unmarked image pays for all of them. NumPy's
`numpy.fft` computes in double precision whatever it is given; `scipy.fft` keeps float32 as
float32. Measured on a 1728 x 1250 autocorrelation (the size of a served page): 55 ms with
NumPy, 21 ms with SciPy; 103 and 32 ms at 2048 x 1536 (`python -m bench.leakmark_misses`
gives what that saves a whole trace). Single precision is ample: what is read off the results
is where peaks lie (relative error about 1e-6 of the largest value). `workers=1`: a render
worker is one process on one CPU, and its seccomp filter is not the place to find out whether
a thread pool may start.

SciPy is imported where it is used, not here: the server imports this module (a task names its
function) but never runs it, and `scipy.fft` is about 27 MB of its resident memory. The render
zygote preloads it (`render.pool.zygote`), so a confined worker finds it already loaded.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

Real = npt.NDArray[np.float32]
Spectrum = npt.NDArray[np.complex64]


def rfft2(plane: npt.NDArray[np.floating], shape: tuple[int, int] | None = None) -> Spectrum:
    """The 2-D real FFT over the last two axes (zero-padded to `shape`), in single precision."""
    import scipy.fft  # preloaded by the zygote: see the module's note

    spectrum: Spectrum = scipy.fft.rfft2(np.asarray(plane, dtype=np.float32), s=shape,
                                         workers=1)
    return spectrum


def irfft2(spectrum: npt.NDArray[np.inexact], shape: tuple[int, int]) -> Real:
    """The inverse of `rfft2`, the last two axes `shape` long, in single precision."""
    import scipy.fft  # preloaded by the zygote: see the module's note

    plane: Real = scipy.fft.irfft2(np.asarray(spectrum, dtype=np.complex64), s=shape,
                                   workers=1)
    return plane
