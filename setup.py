"""The one part of the build pyproject.toml cannot declare stably: the watermark pattern's blend
(render/_blend.c), a C extension. Installing needs a C compiler and the Python headers."""

from setuptools import Extension, setup

setup(ext_modules=[Extension("render._blend", ["render/_blend.c"], extra_compile_args=["-O3"])])
