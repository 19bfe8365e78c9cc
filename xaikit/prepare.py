"""``python -m xaikit prepare``: build and cache the embedded default models, once.

* the sentiment model (MiniLM fine-tuned on movie reviews, :mod:`xaikit.models.sentiment`), used by
  notebooks 02-04 and 06, and after it the same recipe trained on shuffled labels
  (:func:`xaikit.models.sentiment.ensure_shuffled_sentiment`), notebook 06's data randomisation test
  (Adebayo et al. 2018, section 4);
* the two Vision Transformers of notebooks 05 and 07 (:mod:`xaikit.models.vitworld`): the main image world,
  where "zebra" is a striped animal, and the control world, where stripes do not predict "zebra";
* the digits CNNs of notebooks 01 and 02 (:func:`xaikit.models.digits.digits_classifier`), on true and on
  shuffled labels;
* the attention that notebook 06's Wiegreffe & Pinter diagnostic reads from the sentiment model and its
  pretrained encoder (:func:`xaikit.lab.diagnostics.warm_notebook_cache`), for the
  sentences of the current mode (fast or student);
* the 100 random image sets of the rank test in notebook 07 (the TCAV lab)
  (:func:`xaikit.concepts.nullsets.warm_null_sets`).

``prepare --seed N`` trains all of them with training seed N and records N as the cache's training seed
(:func:`xaikit.training_seed`), so every later load from that cache serves the seed-N models. The default
is the recorded seed, 0 on a new cache.

Everything goes to :func:`xaikit.cache_dir` (``$XAIKIT_CACHE`` overrides it), into folders named by
recipe version, so a second run finds them and returns in seconds, and a changed recipe is rebuilt. On
two or more cores the ViTs train in a second process while the sentiment model trains, one thread each.

It sits above the method families: besides the models of :mod:`xaikit.models` it warms the caches of
notebook 06's diagnostic (``text``) and notebook 07's rank test (``concepts``).
"""

from __future__ import annotations

import importlib.util
import os
import threading
import time
from pathlib import Path

from xaikit._validate import bool_flags

__all__ = ["prepare"]

_FAMILIES = ("sentiment", "vit")
_WORLDS = ("main", "control")


@bool_flags
def prepare(force: bool = False, only: str | None = None, progress: bool = True,
            parallel: bool | None = None, seed: int | None = None, background: bool = False) -> dict[str, Path]:
    """Build whatever embedded model is missing (everything with ``force=True``) and return the folders.

    ``only``: ``"sentiment"`` (the sentiment model, its shuffled-label twin and that one's control) or
    ``"vit"`` to build one
    family. ``parallel``: train the two ViTs in a
    second process while the sentiment model trains, one torch thread each (the default on a machine
    with two or more cores when both families need building). ``seed``: the training seed of every model
    (default: the cache's, :func:`xaikit.training_seed`); once everything is built it becomes the cache's
    training seed. ``only`` with a new ``seed`` builds that family only and leaves the recorded seed as it
    was. Prints what it builds,
    the time each step took and where it went.

    The order is the one the notebooks need: the digits CNNs (notebooks 01 and 02), the sentiment model
    (02-04), the ViTs (05), and only then what the labs alone read: the shuffled-label sentiment model and its
    control, the attention diagnostics (06) and the rank test's random sets (07). ``background``: build in
    this one process (no second one for the ViTs) and without progress bars, for :func:`run_in_background`,
    which ``scripts/start.sh`` runs behind JupyterLab; a notebook that needs a model still building waits for
    it and shows this build's progress (:mod:`xaikit.models.buildprogress`). Returns ``{"sentiment": folder, "sentiment-shuffled": folder,
    "sentiment-subset": folder,
    "attention": folder, "null-sets": folder, "vit-main": folder, "vit-control": folder}`` (the ViT and null-set entries are absent
    if the image-world module is missing).
    """
    from xaikit._config import SEED_ENV, cache_dir, record_training_seed, training_seed
    from xaikit._validate import check_choice, check_seed

    if not isinstance(force, bool):
        raise TypeError(f"force must be True or False, got {type(force).__name__} {force!r}")
    if only is not None:
        check_choice(only, "only", _FAMILIES)
    if not isinstance(background, bool):
        raise TypeError(f"background must be True or False, got {type(background).__name__} {background!r}")
    if parallel is not None and not isinstance(parallel, bool):
        raise TypeError(f"parallel must be True, False or None, got {type(parallel).__name__} {parallel!r}")
    chosen = seed is not None
    seed = check_seed(seed, "seed") if chosen else training_seed()  # checked before any process starts
    say = print if progress else (lambda *a, **k: None)
    say(f"xaikit prepare: cache folder {cache_dir()}, training seed {seed}", flush=True)
    folders: dict[str, Path] = {}
    t_all = time.perf_counter()
    want_vit = only in (None, "vit")
    if want_vit and importlib.util.find_spec("xaikit.models.vitworld") is None:
        say("xaikit prepare: skipping the embedded ViTs: xaikit.models.vitworld is not in this install", flush=True)
        want_vit = False
    want_sentiment = only in (None, "sentiment")

    from xaikit.models import sentiment

    vit_todo: list[str] = []
    if want_vit:
        from xaikit.models import vitworld

        vit_todo = [w for w in _WORLDS if force or not vitworld.is_built(w, seed)]
    sentiment_todo = want_sentiment and (force or not all(sentiment.is_built(seed, labels=labels)
                                                          for labels in sentiment.LABELS))
    if parallel is None:
        parallel = (os.cpu_count() or 1) >= 2
    background_vits = None
    if parallel and sentiment_todo and vit_todo and not background:
        background_vits = _VitProcess(vit_todo, force, progress, seed)
    bars = progress and not background  # a background build writes its log without tqdm's redraws
    try:
        # the lectures' models first, in the order the notebooks need them: the digits CNNs (01, 02, seconds),
        # the sentiment model (02-04), the ViTs (05; in the second process when there is one)
        if only is None:
            folders.update(_digits(say, seed, force, bars))
        threads = background_vits.threads if background_vits is not None else None
        if want_sentiment:
            folders["sentiment"] = _timed(say, "sentiment model", lambda: sentiment.ensure_embedded_sentiment(
                force, bars, threads=threads, seed=seed))
        if want_vit and background_vits is None:
            for world in _WORLDS:
                folders[f"vit-{world}"] = _timed(
                    say, f"ViT ({world} world)",
                    lambda world=world: vitworld.ensure_embedded_vit(world, force=force, progress=bars, seed=seed))
        # then what only the labs read (06, 07), never before a lecture's model: a lab that opens before it is
        # built builds it itself (the loaders run the same ensure, under the same lock)
        if want_sentiment:
            # notebook 06's data randomisation test: the same recipe on shuffled labels (as long as the above)
            folders["sentiment-shuffled"] = _timed(
                say, "sentiment (shuffled)",
                lambda: sentiment.ensure_shuffled_sentiment(force, bars, threads=threads, seed=seed))
            # ... and its control: the same texts and steps with the real labels (a few minutes)
            folders["sentiment-subset"] = _timed(
                say, "sentiment (control)",
                lambda: sentiment.ensure_subset_sentiment(force, bars, threads=threads, seed=seed))
            # notebook 06's Wiegreffe & Pinter attention for the current mode's sentences
            from xaikit.lab.diagnostics import warm_notebook_cache

            folders["attention"] = _timed(say, "attention (nb 06)", lambda: warm_notebook_cache(bars, seed=seed))
        if want_vit:  # notebook 07's rank test: its 100 random image sets (while the ViTs train, in parallel)
            from xaikit.concepts.nullsets import warm_null_sets

            folders["null-sets"] = _timed(say, "random sets (nb 05, 07)", lambda: warm_null_sets(progress=False))
        if background_vits is not None:
            folders.update(background_vits.join(say))
    finally:
        if background_vits is not None:
            background_vits.stop()
    if only is None:
        if chosen:
            record_training_seed(seed)
            say(f"xaikit prepare: this cache now serves training seed {seed} (python -m xaikit prepare --seed 0 "
                "switches back; both stay cached)", flush=True)
            overridden = os.environ.get(SEED_ENV, "").strip()
            if overridden and overridden != str(seed):
                say(f"xaikit prepare: but ${SEED_ENV}={overridden} is set in this shell and overrides the cache's "
                    f"seed: here, and in every kernel started from this shell, the models of seed {overridden} are "
                    f"served. Run `unset {SEED_ENV}` to use seed {seed}", flush=True)
    say(f"xaikit prepare: done in {time.perf_counter() - t_all:.1f} s", flush=True)
    return folders


def _digits(say, seed: int, force: bool, progress: bool) -> dict[str, Path]:
    """The digits CNNs of notebooks 01 and 02 (true and shuffled labels) for ``seed``, with the epochs of the
    current mode (fast or student); seconds each, so they are trained in this process."""
    from xaikit.models import digits

    folders = {}
    for shuffled in (False, True):
        what = "digits CNN (shuffled)" if shuffled else "digits CNN"
        t0 = time.perf_counter()
        trained = digits.digits_classifier(seed=seed, progress=progress, shuffle_labels=shuffled, force=force)
        folders["digits-shuffled" if shuffled else "digits"] = trained.path
        _report(say, what, time.perf_counter() - t0, trained.path,
                "  (cached)" if trained.from_cache else f"  (test accuracy {trained.accuracy:.3f})")
    return folders


def _timed(say, what: str, build) -> Path:
    t0 = time.perf_counter()
    folder = Path(build())
    _report(say, what, time.perf_counter() - t0, folder)
    return folder


def _report(say, what: str, seconds: float, folder: Path, where: str = "") -> None:
    say(f"xaikit prepare: {what:<22} {seconds:7.1f} s  {folder}{where}", flush=True)


def die_with_parent(parent: int, interval: float = 1.0) -> threading.Thread:
    """Exit this process (``os._exit``) as soon as process ``parent`` is gone, checked every ``interval`` s.

    The ViT trainer is a child of ``prepare``; killed with ``kill -9``, SIGTERM or a closed terminal, the
    parent cannot stop it, and it kept training, and holding the build lock, for minutes. The child polls its
    parent's id (on every system; when the parent dies the child is handed to another process), and the
    operating system then releases the lock and the next ``prepare`` cleans up the half-built folder."""
    def watch():
        while True:
            time.sleep(interval)
            if os.getppid() != parent:
                os._exit(3)

    thread = threading.Thread(target=watch, name="xaikit-parent-watch", daemon=True)
    thread.start()
    return thread


def _build_vits(worlds: list[str], force: bool, counter, times, seed: int, parent: int | None = None) -> None:
    """The second process: train the ViTs of ``worlds`` one after the other (one thread each), ending with
    its parent (:func:`die_with_parent`)."""
    from xaikit.models.vitworld import ensure_embedded_vit

    if parent is not None:
        die_with_parent(parent)
    for i, world in enumerate(worlds):
        t0 = time.perf_counter()
        ensure_embedded_vit(world, force=force, progress=False, counter=counter, seed=seed)
        times[i] = time.perf_counter() - t0


class _VitProcess:
    """The ViTs training in a spawned process, with a progress bar in this one fed by a shared counter."""

    def __init__(self, worlds: list[str], force: bool, progress: bool, seed: int):
        import multiprocessing as mp

        import torch

        from xaikit.models.vitworld import n_steps

        self.all_threads = torch.get_num_threads()
        ctx = mp.get_context("spawn")  # a fresh interpreter: no forked torch thread pools
        self.worlds, self.seed = worlds, seed
        self.counter = ctx.Value("l", 0)
        self.times = ctx.Array("d", len(worlds))
        self.proc = ctx.Process(target=_build_vits, args=(worlds, force, self.counter, self.times, seed, os.getpid()),
                                name="xaikit-prepare-vit", daemon=True)
        self.proc.start()
        self._done = threading.Event()
        self._bar_thread = None
        if progress:
            from tqdm.auto import tqdm

            self.bar = tqdm(total=sum(n_steps(w) for w in worlds), position=1, unit="step",
                            desc=f"training embedded ViTs ({', '.join(worlds)}) in a second process")
            self._bar_thread = threading.Thread(target=self._follow, daemon=True)
            self._bar_thread.start()

    def threads(self) -> int:
        """Torch threads for the training in this process: one while the ViTs train, then all."""
        return 1 if self.proc.is_alive() else self.all_threads

    def _follow(self) -> None:
        while not self._done.wait(0.5):
            self.bar.update(self.counter.value - self.bar.n)

    def join(self, say) -> dict[str, Path]:
        from xaikit.models.vitworld import model_folder

        self.proc.join()
        self.stop()
        if self.proc.exitcode != 0:
            raise RuntimeError(f"training the embedded ViTs failed in the second process (exit code "
                               f"{self.proc.exitcode}; its traceback is printed above). Rerun with "
                               f"`python -m xaikit prepare --only vit --serial` to see it in this process.")
        for world, seconds in zip(self.worlds, self.times, strict=True):
            _report(say, f"ViT ({world} world)", seconds, model_folder(world, self.seed), "  (second process)")
        return {f"vit-{w}": model_folder(w, self.seed) for w in _WORLDS}

    def stop(self) -> None:
        if self._bar_thread is not None and not self._done.is_set():
            self._done.set()
            self._bar_thread.join()
            self.bar.update(self.counter.value - self.bar.n)
            self.bar.close()
        self._done.set()
        if self.proc.is_alive():  # only after an error in this process: do not leave a trainer behind
            self.proc.terminate()
            self.proc.join()


def run_in_background(log: str | os.PathLike | None = None, seed: int | None = None) -> int:
    """``python -m xaikit prepare --background``: :func:`prepare` as ``scripts/start.sh`` runs it behind
    JupyterLab, in one process, and stopping cleanly.

    SIGTERM and SIGHUP end it as an exception would: the model being built is dropped with its
    temporary folder (:func:`xaikit.models.cache.building`), the lock is released, and the next run builds it
    again from the start. It also ends when its parent process (``start.sh``) is gone, killed outright or not.
    ``log``: append what it prints to that file instead. Returns the exit status (0 when everything is built,
    143 when it was stopped).
    """
    import contextlib
    import signal

    from xaikit.models import buildprogress

    parent = os.getppid()
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")  # transformers' loading bars, not in the log

    def stop(signum, frame):
        raise SystemExit(128 + signum)

    for name in ("SIGTERM", "SIGHUP"):  # SIGINT (Ctrl-C) stays as it is: ignored behind start.sh, whose
        # JupyterLab asks before a Ctrl-C shuts it down; KeyboardInterrupt when run by hand
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), stop)

    def watch():  # the parent is gone: stop as SIGTERM would (the handler runs in the main thread)
        while True:
            time.sleep(1.0)
            if os.getppid() != parent:
                os.kill(os.getpid(), signal.SIGTERM)
                return

    threading.Thread(target=watch, name="xaikit-parent-watch", daemon=True).start()
    with contextlib.ExitStack() as stack:
        if log is not None:
            Path(log).parent.mkdir(parents=True, exist_ok=True)
            out = stack.enter_context(open(log, "a", buffering=1, encoding="utf-8"))
            stack.enter_context(contextlib.redirect_stdout(out))
            stack.enter_context(contextlib.redirect_stderr(out))
        print(f"xaikit prepare --background: process {os.getpid()}, started {time.strftime('%H:%M:%S')}, "
              f"parent {parent}", flush=True)
        try:
            with buildprogress.announce_background():
                prepare(parallel=False, background=True, seed=seed)
        except SystemExit as stopped:
            print(f"xaikit prepare --background: stopped at {time.strftime('%H:%M:%S')}; what was being built is "
                  "dropped, and the next start builds it again", flush=True)
            return int(stopped.code or 1)
        return 0
