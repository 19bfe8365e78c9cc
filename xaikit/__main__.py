"""Command line: ``python -m xaikit prepare | notebooks build|check|run | homework build|nbgrader``.

* ``prepare [--seed N]`` builds and caches the embedded default models (see :mod:`xaikit.prepare`),
  with training seed N (recorded as the cache's training seed; default the recorded one, 0 on a new cache).
* ``notebooks build`` writes each ``notebooks/NN_*.ipynb`` from its jupytext source ``NN_*.py``, never
  over cells, metadata or pasted images edited in the ``.ipynb`` (they go into the ``.py``, or both files
  are kept and the exit status is 1; see :mod:`xaikit.course.notebooks`); ``notebooks check`` fails if a committed notebook is out of
  sync, has outputs or has lost its ``.py`` source (so does ``build``); ``notebooks run`` executes notebooks headless and can write HTML.
* ``homework build`` writes ``exercises/`` and ``solutions/`` sheets (see :mod:`xaikit.course.homework`), never
  over a sheet changed since it was written (exit status 1 lists them; ``--force`` backs them up first).
* ``homework nbgrader`` writes an nbgrader course folder (``source/NN_name/`` per notebook and
  ``nbgrader_config.py``; see :mod:`xaikit.course.nbgrading`), keeping files changed there unless ``--force``.

Flags and names go in any order: ``notebooks build --force 01`` is ``notebooks build 01 --force``.
"""

from __future__ import annotations

import argparse
import sys


def main(argv: list[str] | None = None) -> int:
    from xaikit.course.notebooks import NotebookNotFoundError

    try:
        return _main(argv)
    except NotebookNotFoundError as err:
        print(f"python -m xaikit: {err}", file=sys.stderr)
        return 2


def _main(argv: list[str] | None) -> int:
    parser = argparse.ArgumentParser(prog="python -m xaikit", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)

    prep = sub.add_parser("prepare", help="build and cache the embedded default models")
    prep.add_argument("--force", action="store_true", help="rebuild even if the cache is current")
    prep.add_argument("--only", choices=["sentiment", "vit"], default=None, help="build one family only")
    prep.add_argument("--seed", type=int, default=None, metavar="N",
                      help="train every embedded model with training seed N and make N this cache's training "
                           "seed (default: the cache's, 0 on a new cache); e.g. one seed per student group")
    prep.add_argument("--serial", action="store_true",
                      help="build one model after the other in this process (default: the ViTs train in a "
                           "second process while the sentiment model trains)")

    nb = sub.add_parser("notebooks", help="build, check or run the lecture notebooks")
    nb.add_argument("action", choices=["build", "check", "run"])
    nb.add_argument("names", nargs="*", help="notebook stems or numbers, e.g. 01 or 02_integrated_gradients")
    nb.add_argument("--html", default=None, help="with run: write HTML exports to this folder")
    nb.add_argument("--timeout", type=int, default=600, help="with run: seconds allowed per cell")
    nb.add_argument("--force", action="store_true",
                    help="with build: rebuild every .ipynb from its .py even where its cells were edited "
                         "(an edited one is first copied to notebooks/backup-NN_name-<time>.ipynb). Without "
                         "it, edited cells are copied into the .py when only the .ipynb changed, and both "
                         "files are kept (exit status 1) when both changed")

    hw = sub.add_parser("homework", help="build exercise and solution sheets, or an nbgrader course, from the "
                                         "notebooks")
    hw.add_argument("action", choices=["build", "nbgrader"])
    hw.add_argument("names", nargs="*", help="notebook stems or numbers, e.g. 02 or 04_gradsam_shap")
    hw.add_argument("--out", default=None,
                    help="build: folder to write exercises/ and solutions/ into (default: the repository "
                         "root); nbgrader: the course folder (default: nbgrader-course/ in the repository)")
    hw.add_argument("--force", action="store_true",
                    help="overwrite sheets that were changed since they were built (e.g. filled in by a "
                         "student), after copying each to backup-NN_name-<time>.ipynb beside it. Without "
                         "it such sheets are kept, listed, and the exit status is 1")

    # names may come after a flag (`notebooks build --force 01`, as the build's own advice has it): argparse
    # fills ``names`` from the words before the first flag and leaves the later ones over
    args, extra = parser.parse_known_args(argv)
    if extra:
        flags = [word for word in extra if word.startswith("-")]
        if flags or args.command not in ("notebooks", "homework"):
            parser.error(f"unrecognized arguments: {' '.join(flags or extra)}")
        args.names = [*args.names, *extra]
    if args.command == "prepare":
        from xaikit.prepare import prepare

        if args.seed is not None and args.seed < 0:
            parser.error(f"--seed must be a non-negative integer, got {args.seed}")
        prepare(force=args.force, only=args.only, parallel=False if args.serial else None, seed=args.seed)
        return 0
    if args.command == "homework":
        from xaikit.course import homework

        if args.action == "nbgrader":
            from xaikit.course import nbgrading
            from xaikit.course.notebooks import ROOT

            course = nbgrading.make_course(args.out or ROOT / "nbgrader-course", args.names or None,
                                           force=args.force)
            for path in course.kept:
                print(f"xaikit homework nbgrader: {path} was changed since it was written and was NOT "
                      "overwritten; rerun with --force to replace it (a backup is made first)", file=sys.stderr)
            return 1 if course.kept else 0
        try:
            homework.build(args.out, args.names or None, force=args.force)
        except homework.SheetChangedError as err:
            print(f"xaikit homework build: {err}", file=sys.stderr)
            return 1
        return 0
    from xaikit.course import notebooks as _nbtools

    if args.force and args.action != "build":
        parser.error("--force goes with `notebooks build` only")
    if args.action == "build":
        orphans = _nbtools.orphans(args.names)
        if not orphans or not args.names or _nbtools.sources_match(args.names):
            kept = [b for b in _nbtools.build_notebooks(args.names, force=args.force) if b.action == "kept"]
        else:
            kept = []
        for p in orphans:
            print(p, file=sys.stderr)
        return 1 if kept or orphans else 0
    elif args.action == "check":
        problems = _nbtools.check(args.names)
        for p in problems:
            print(p, file=sys.stderr)
        return 1 if problems else 0
    else:
        _nbtools.run(args.names, html_dir=args.html, timeout=args.timeout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
