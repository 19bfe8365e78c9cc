"""Every process-wide setting xaikit changes, in one place, each with its reason.

A method that touches state outside its own arguments (torch's thread count, another library's module, a
global registry, Matplotlib's rcParams, an environment variable, a cache) does it through a name listed
here, so a reader can see all of it at once. Nothing here imports torch at module level.

========================  ==========================================  =================================
policy                    what changes                                 why
========================  ==========================================  =================================
:func:`method_threads`    torch's thread count while a text or         by the work's size unless the
                          concept method, or a ``lab.tensor_sanity``       user says (``XAIKIT_THREADS=N``
                          cascade, runs (restored afterwards): one     or ``auto``, or
                          thread for a model under 40 M weights        :func:`set_method_threads`).
                          outside its embedding tables (every          More threads pay off only at
                          embedded model), the cores idle when the     bert-base/vit-base sizes and for
                          method starts for bert-base/vit-base sizes   heavy work; on cores that other
                          and for heavy work (float64 LRP, the lab's   processes keep busy, extra
                          batches, the stacked diagnostics)            threads wait for a core and cost
                                                                       several times what they give
                                                                       (``benchmarks/threads_by_size.py``
                                                                       measures it)
:func:`panel_threads`     one torch thread while a panel updates       the panels' tiny models lose more
                          (restored afterwards)                        to thread hand-offs than they gain
``shaptext.use_numba``    SHAP's numba-compiled helpers swapped for    numba compiles for seconds on the
                          their plain Python functions (reversible;    first call; the texts are short
                          shap 0.45-0.51 only: 0.52+ ships them
                          compiled, and nothing is swapped)
``lab.editing``          one attention function registered under      editing attention needs a forward
                          its own name in transformers'                pass that transformers runs for us;
                          ``AttentionInterface`` (once, never          the name is xaikit's, so no other
                          replacing another)                           model's attention changes
``course.presenter``      ``Panel.scale``, rcParams, ``XAIKIT_FAST``   large figures and short runs in
                          inside ``presenting()`` (restored after)     front of a room
``concepts.activations``  activations, gradients and CAVs per model    TCAV's significance runs reuse
                          (weak references; ``clear_cache()`` after    them hundreds of times
                          training a model in place); for models of   vit-base's activations cost many
                          20 M parameters or more also on disk in      forward passes on a laptop CPU;
                          ``cache_dir()/activations`` (keyed by the    a new kernel reads them back
                          weights' SHA-256, block, pooling, target
                          and the pixel values; checksummed)
``lab.diagnostics``      a model's attention for a set of sentences   Wiegreffe & Pinter's diagnostic
                          on disk in ``cache_dir()/diagnostics``       reads thousands of sentences:
                          (``cache=True``; keyed by the sentences,     many forward passes, once per
                          layer, tokenizer and a fingerprint of        model
                          every weight)
``text.lrp``              float64 copies of a BERT's weights per       Chefer LRP re-runs the model for
                          model (weak references; remade when any      every sentence; casting and
                          parameter is replaced or changed in place)   splitting the weights each time
                                                                       would cost as much as the re-run
``_config.set_seed``      Python's, NumPy's and torch's global seeds   reproducible notebooks
``_config.device``        where models go: CUDA if present, else the   Apple's MPS holds no float64 (a
                          CPU; Apple's MPS only when asked             cast raises TypeError), and
                          (``XAIKIT_DEVICE=mps`` or                    Chefer LRP's re-run, IG's float64
                          ``device("mps")``)                           checks and the faithfulness lab's
                                                                       and Wiegreffe & Pinter's
                                                                       probabilities work in float64;
                                                                       several ops are missing there
                                                                       too (some fall back to the CPU
                                                                       only with a global switch, others
                                                                       raise). The embedded models are
                                                                       small, so a laptop's CPU is fast
                                                                       enough, and a student on a Mac
                                                                       gets the lecture's CPU numbers
:func:`float64_device`    float64 work on a tensor's own device if     the same, for a user who asks for
                          that device holds float64, else on the CPU   MPS anyway: LRP's float64 re-run,
                          (results come back on the CPU either way)    float64 probabilities and sums
                                                                       cannot crash on the device
========================  ==========================================  =================================
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import TYPE_CHECKING

from xaikit._validate import bool_flags

if TYPE_CHECKING:
    import torch

THREADS_ENV = "XAIKIT_THREADS"

_method_threads: int | None = None
_method_threads_set = False


def set_method_threads(n: int | None) -> None:
    """Use ``n`` torch threads inside xaikit's text and concept methods (``None``: torch's own default).

    Overrides ``XAIKIT_THREADS``. The default chooses by the model's size (:func:`method_thread_count`): one
    thread for the embedded models, every core for a hub-sized model (bert-base, ViT-base). ``1`` is the
    fast choice on a machine whose cores other processes keep busy.
    """
    import numbers

    global _method_threads, _method_threads_set
    if n is not None and (not isinstance(n, numbers.Integral) or isinstance(n, bool)):
        raise TypeError(f"n must be a positive int or None, got {type(n).__name__} {n!r}; e.g. set_method_threads(1)")
    if n is not None and int(n) < 1:
        raise ValueError(f"n must be a positive int or None, got {n!r}; e.g. set_method_threads(1)")
    _method_threads, _method_threads_set = (None if n is None else capped_threads(int(n), "set_method_threads")), True


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity where the system says, else ``os.cpu_count()``)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def capped_threads(n: int, source: str) -> int:
    """``n`` threads, at most :func:`usable_cores`, with a warning naming ``source`` when capped: more threads
    than cores only wait on each other, and a count like 1,000,000 makes OpenMP allocate a stack per thread
    until the kernel dies."""
    cores = usable_cores()
    if n <= cores:
        return n
    import warnings

    warnings.warn(f"{source} asks for {n:,} threads but this machine has {cores} core{'s' if cores > 1 else ''} for "
                  f"this process; xaikit uses {cores}. Set {THREADS_ENV}={cores} (or fewer) to silence this",
                  UserWarning, stacklevel=3)
    return cores


#: threads inside the methods on small work when neither :func:`set_method_threads` nor ``XAIKIT_THREADS``
#: says otherwise
DEFAULT_METHOD_THREADS = 1
#: weights outside the embedding tables from which a model's work counts as large: bert-base and
#: vit-base-patch16-224 have about 85 million, the embedded MiniLM about 11 million, the embedded ViTs under
#: one million
LARGE_MODEL_PARAMETERS = 40_000_000


@bool_flags
def method_thread_count(model: torch.nn.Module | None = None, heavy: bool = False) -> int | None:
    """The thread count :func:`method_threads` uses: :func:`set_method_threads`, else ``XAIKIT_THREADS`` (a
    positive integer, or ``auto`` for torch's own default), else by the size of the work: one thread
    (:data:`DEFAULT_METHOD_THREADS`) for a model under :data:`LARGE_MODEL_PARAMETERS` weights outside its
    embedding tables (every embedded model) and where no model is named; for a larger one, or for ``heavy``
    work on any model (float64 LRP re-runs, the faithfulness lab's batches of hundreds of edited inputs,
    Wiegreffe & Pinter's stacked diagnostic training), the cores other processes leave idle right now
    (:func:`idle_cores`, at most torch's count when xaikit first asked). ``None`` means torch's default
    (nothing changed).

    Why: the embedded models are too small to gain from a second thread, while bert-base and vit-base gain
    from idle cores; on cores that other processes keep busy, extra threads wait for a core and cost more
    than they give, so a large model takes only the cores that are idle when the method starts.
    ``benchmarks/threads_by_size.py`` measures both (``benchmarks/README.md`` holds its last result)."""
    if _method_threads_set:
        return _method_threads
    value = env_threads()
    if value is None:
        if heavy or (model is not None and weights_outside_embeddings(model) >= LARGE_MODEL_PARAMETERS):
            idle = idle_cores()
            return None if idle is None else max(1, min(_torch_default_threads(), idle))
        return DEFAULT_METHOD_THREADS
    return None if value == "auto" else value


def env_threads() -> int | str | None:
    """The one reader of ``XAIKIT_THREADS``: ``None`` when unset or empty, ``"auto"`` (torch's own default), or
    a positive integer (capped at the cores, :func:`capped_threads`). Anything else (``abc``, ``0``, ``-2``,
    ``1.5``) is a ``ValueError`` naming the variable. Every method reads the variable through this function
    at its start (:func:`check_thread_setting`), so a bad value is refused by each, not only by those that
    set threads."""
    value = os.environ.get(THREADS_ENV, "").strip()
    if not value:
        return None
    if value.lower() == "auto":
        return "auto"
    try:
        n = int(value)
    except ValueError:
        n = 0
    if n < 1:
        raise ValueError(f"{THREADS_ENV} must be a positive integer or 'auto', got {value!r}: e.g. "
                         f"{THREADS_ENV}=1 (one thread, best on a busy machine), or unset it for xaikit's default")
    return capped_threads(n, THREADS_ENV)


def check_thread_setting() -> None:
    """Refuse a bad ``XAIKIT_THREADS`` (see :func:`env_threads`) unless :func:`set_method_threads` overrides it."""
    if not _method_threads_set:
        env_threads()


def idle_cores(interval: float = 0.1) -> int | None:
    """The cores other processes leave idle now: the idle share of all CPU time over ``interval`` seconds
    (Linux's ``/proc/stat``; this process is between passes then, so its own work is not counted), times the
    core count, rounded. Elsewhere the 1-minute load average stands in; ``None`` where neither is known."""
    import time

    now = time.monotonic()
    if now - _idle_seen[0] < 2.0:  # nested calls of one method: one sample
        return _idle_seen[1]

    def sample():
        with open("/proc/stat") as f:
            values = [int(v) for v in f.readline().split()[1:]]
        return values[3] + values[4], sum(values[:8])  # idle + iowait, all but guest time

    cores = os.cpu_count() or 1
    try:
        idle0, total0 = sample()
        time.sleep(interval)
        idle1, total1 = sample()
        share = (idle1 - idle0) / max(1, total1 - total0)
    except (OSError, ValueError, IndexError):
        try:
            return max(0, int(cores - os.getloadavg()[0] + 0.5))
        except (OSError, AttributeError):
            return None
    _idle_seen[:] = [time.monotonic(), int(share * cores + 0.5)]
    return _idle_seen[1]


_idle_seen: list = [float("-inf"), None]  # (when, idle cores) of the last /proc/stat sample
_default_threads: list = []  # torch's thread count the first time xaikit asked (before any method changed it)


def _torch_default_threads() -> int:
    """torch's thread count when xaikit first asked (:func:`torch_threads` asks before it changes any count):
    the most a method takes, also inside another method's one-thread block (a heavy LRP re-run inside a view
    that runs on one thread)."""
    if not _default_threads:
        import torch

        _default_threads.append(torch.get_num_threads())
    return _default_threads[0]


def weights_outside_embeddings(model: torch.nn.Module) -> int:
    """The parameters of ``model`` outside its ``nn.Embedding`` tables: the weights each token or patch is
    multiplied with, a measure of the work per example."""
    from torch import nn

    total = sum(p.numel() for p in model.parameters())
    tables = sum(p.numel() for m in model.modules() if isinstance(m, nn.Embedding)
                 for p in m.parameters(recurse=False))
    return total - tables


@contextmanager
def torch_threads(n: int | None) -> Iterator[None]:
    """Run the block with ``n`` torch threads (``None``: leave the count alone), then restore the count."""
    import torch

    _torch_default_threads()  # torch's own count, remembered before xaikit first changes it
    before = torch.get_num_threads()
    if n is not None and n != before:
        torch.set_num_threads(n)
    try:
        yield
    finally:
        if torch.get_num_threads() != before:
            torch.set_num_threads(before)


@bool_flags
def method_threads(model: torch.nn.Module | None = None,
                   heavy: bool = False) -> AbstractContextManager[None]:
    """The thread count of :func:`method_thread_count` for the block (text and concept methods); ``model``,
    the model the block runs, chooses by its size, and ``heavy`` marks work worth the idle cores on any
    model, unless the user set a count."""
    return torch_threads(method_thread_count(model, heavy))


def panel_threads() -> AbstractContextManager[None]:
    """One torch thread for the block: a panel's update on a tiny model."""
    return torch_threads(1)


#: device types that hold no float64 tensors: Apple's MPS refuses every float64 cast or allocation ("Cannot
#: convert a MPS Tensor to float64 dtype as the MPS framework doesn't support float64"). Decided by device
#: type, not by a trial cast, so that asking costs no allocation on the device and no exception; a new
#: backend without float64 is added here.
NO_FLOAT64_DEVICE_TYPES = frozenset({"mps"})


def supports_float64(device: torch.device | str) -> bool:
    """Whether tensors on ``device`` (a ``torch.device`` or its name) can be float64."""
    import torch

    return torch.device(device).type not in NO_FLOAT64_DEVICE_TYPES


def float64_device(device: torch.device | str | None = None) -> torch.device:
    """Where float64 work on tensors from ``device`` runs: ``device`` itself if it holds float64, else the CPU
    (``None``: the CPU). See the table above (``_config.device``): on MPS the work moves to the CPU instead of
    raising; every result comes back on the CPU anyway."""
    import torch

    device = torch.device("cpu") if device is None else torch.device(device)
    return device if supports_float64(device) else torch.device("cpu")


def to_float64(t: torch.Tensor) -> torch.Tensor:
    """``t`` as float64 on :func:`float64_device` of its own device (differentiable, like ``.double()``).

    Moved first and cast second, so that nothing float64 is ever made on a device that refuses it."""
    import torch

    return t.to(float64_device(t.device)).to(torch.float64)
