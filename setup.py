"""The one part of the build pyproject.toml cannot declare stably: the watermark pattern's blend
(render/kernels/_blend.c) and the invisible mark's pass over the paper (render/kernels/_paper.c), C
extensions.

It is optional: without a C compiler (or without the Python headers) the build goes on and
vaultd blends with Pillow's paste instead (render/kernels/blend.py), about six times slower on that
step. Prebuilt wheels carry the compiled extension (docs/operations.md, *Installing without a
compiler*).
"""

from setuptools import Extension, setup

# Each depends on the shared header, so editing it rebuilds both.
setup(ext_modules=[
    Extension(name, [f"render/kernels/{name.split('.')[-1]}.c"],
              depends=["render/kernels/_chipmask.h"], extra_compile_args=["-O3"], optional=True)
    for name in ("render.kernels._blend", "render.kernels._paper")
])
