"""The one part of the build pyproject.toml cannot declare stably: the watermark pattern's blend
(render/_blend.c), a C extension.

It is optional: without a C compiler (or without the Python headers) the build goes on and
vaultd blends with Pillow's paste instead (render/blend.py), about six times slower on that
step. Prebuilt wheels carry the compiled extension (docs/operations.md, *Installing without a
compiler*).
"""

from setuptools import Extension, setup

setup(ext_modules=[Extension("render._blend", ["render/_blend.c"], extra_compile_args=["-O3"],
                             optional=True)])
