"""Packages kiln with the native module the project's CMake built.

  scripts/build.sh && python3 -m pip install ./python

The extension (_kiln) is built by CMake with the rest of Kiln, into
build/python/kiln; this copies it into the wheel beside the package's
Python files. KILN_BUILD_DIR names another build folder.
"""
import glob
import os
import shutil

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

HERE = os.path.dirname(os.path.abspath(__file__))


class BuildWithNative(build_py):
    def run(self):
        super().run()
        build = os.environ.get("KILN_BUILD_DIR",
                               os.path.join(HERE, "..", "build"))
        found = glob.glob(os.path.join(build, "python", "kiln", "_kiln*.so"))
        if not found:
            raise SystemExit(f"kiln: no _kiln module in {build}/python/kiln; "
                             f"build Kiln first (scripts/build.sh) or set "
                             f"KILN_BUILD_DIR")
        target = os.path.join(self.build_lib, "kiln")
        os.makedirs(target, exist_ok=True)
        for path in found:
            shutil.copy2(path, target)


class NativeDistribution(Distribution):
    """The wheel holds a native module: platform-specific."""

    def has_ext_modules(self):
        return True


setup(packages=["kiln"], package_data={"kiln": ["py.typed", "_kiln.pyi"]},
      cmdclass={"build_py": BuildWithNative}, distclass=NativeDistribution)
