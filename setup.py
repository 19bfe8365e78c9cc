"""setuptools hook (the metadata is in pyproject.toml): a wheel of xaikit carries the lecture notebooks.

``build_py`` copies the built ``notebooks/NN_*.ipynb`` (committed, without outputs, and kept equal to their
``NN_*.py`` sources by ``xaikit notebooks check`` in the test command) into ``xaikit/_lectures/`` of the
build, so ``xaikit notebooks copy DIR`` and ``xaikit homework build`` work from a pip-installed xaikit
(``xaikit.course.notebooks.PACKAGED``). Nothing generated is committed: the folder exists only in a build.
An editable install reads ``notebooks/`` of its checkout instead. ``MANIFEST.in`` puts the notebooks into
the source distribution, so a wheel built from it carries them too.
"""

from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent


class BuildPyWithLectures(build_py):
    def run(self):
        super().run()
        if getattr(self, "editable_mode", False):
            return
        notebooks = sorted((HERE / "notebooks").glob("[0-9][0-9]_*.ipynb"))
        if not notebooks:
            raise SystemExit(f"setup.py: no lecture notebooks in {HERE / 'notebooks'} (NN_name.ipynb); build "
                             "the wheel from a checkout of xaikit or from its source distribution")
        target = Path(self.build_lib) / "xaikit" / "_lectures"
        target.mkdir(parents=True, exist_ok=True)
        for path in notebooks:
            self.copy_file(str(path), str(target / path.name))


setup(cmdclass={"build_py": BuildPyWithLectures})
