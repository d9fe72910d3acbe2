"""vaultd performance benchmarks: `python -m bench.run` (see bench/README.md).

A tree whose render kernels were not built (a bare `git clone`, without `scripts/setup.sh`)
blends every page with the Pillow fallback (`render.kernels.blend`), about six times the
cost: a page bench run there times the fallback, so each bench says so before it starts."""

import sys

from render.kernels.blend import IMPLEMENTATION

FALLBACK_WARNING = (
    "bench: render/kernels are not built here, so pages are blended by the Pillow fallback "
    "(about six times the C loop's cost): build them with `bash scripts/setup.sh` or "
    "`python setup.py build_ext --inplace` before timing pages")

if IMPLEMENTATION != "C":
    print(FALLBACK_WARNING, file=sys.stderr, flush=True)
