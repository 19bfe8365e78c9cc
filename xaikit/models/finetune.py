"""Fine-tuning a sequence classifier on ``(text, label)`` pairs, as the embedded sentiment models are trained
(their recipe, data and cache are :mod:`xaikit.models.sentiment` and :mod:`xaikit.models.reviews`): batches of
similar length, AdamW with warm-up and linear decay, bfloat16 autocast on CPUs with AMX tiles, accuracy, training
on to a quality target, saving as safetensors, and the check of a saved model's folder.
"""

from __future__ import annotations

import json
import os
import random
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from xaikit._validate import bool_flags
from xaikit.models import buildprogress

if TYPE_CHECKING:
    import torch
    from transformers import PreTrainedTokenizerBase as Tokenizer

__all__ = ["MAX_EXTRA_EPOCHS", "adamw", "check_classifier", "classifier_logits", "evaluate", "fit", "n_batches",
           "pretrained_classifier", "train_until"]


def _length_batches(lengths: list[int], batch_size: int, rng: random.Random) -> list[list[int]]:
    """Shuffled batches of indices of similar length: shuffle, sort within windows of 50 batches, cut."""
    order = list(range(len(lengths)))
    rng.shuffle(order)
    window = batch_size * 50
    batches = []
    for start in range(0, len(order), window):
        chunk = sorted(order[start:start + window], key=lambda i: lengths[i])
        batches += [chunk[j:j + batch_size] for j in range(0, len(chunk), batch_size)]
    rng.shuffle(batches)
    return batches


def _encode(tokenizer, texts: list[str], max_length: int):
    return tokenizer(texts, padding=True, truncation=True, max_length=max_length, return_tensors="pt")


def n_batches(n_texts: int, batch_size: int = 32) -> int:
    """How many batches :func:`_length_batches` cuts ``n_texts`` texts into (windows of 50 batches)."""
    window = batch_size * 50
    return sum(-(-min(window, n_texts - start) // batch_size) for start in range(0, n_texts, window))


def evaluate(model: torch.nn.Module, tokenizer: Tokenizer, pairs: list[tuple[str, int]], batch_size: int = 64,
             max_length: int = 64) -> tuple[float, list[int]]:
    """Accuracy of ``model`` on ``(sentence, label)`` pairs, and its predictions (batched, no gradients)."""
    import torch

    dev = next(model.parameters()).device
    was_training = model.training
    model.eval()
    order = sorted(range(len(pairs)), key=lambda i: len(pairs[i][0]))  # similar lengths: little padding
    preds = [0] * len(pairs)
    with torch.no_grad():
        for start in range(0, len(order), batch_size):
            idx = order[start:start + batch_size]
            enc = _encode(tokenizer, [pairs[i][0] for i in idx], max_length).to(dev)
            for i, p in zip(idx, model(**enc).logits.argmax(-1).tolist(), strict=True):  # (B,)
                preds[i] = p
    model.train(was_training)
    correct = sum(int(p == y) for p, (_, y) in zip(preds, pairs, strict=True))
    return correct / max(len(pairs), 1), preds


#: at most this many passes over the training texts after the recipe's, each with its own warm-up and decay
MAX_EXTRA_EPOCHS = 2


def adamw(model: torch.nn.Module, lr: float, weight_decay: float
          ) -> tuple[torch.optim.Optimizer, list[tuple[str, torch.nn.Parameter]]]:
    """AdamW over ``model``'s trainable parameters, with no weight decay on biases and LayerNorm weights;
    returns ``(optimizer, [(name, parameter), ...] of the trainable ones)``."""
    import torch

    trainable = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    decay = [p for n, p in trainable if not n.endswith("bias") and "LayerNorm" not in n]
    no_decay = [p for n, p in trainable if n.endswith("bias") or "LayerNorm" in n]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}], lr=lr)
    return opt, trainable


@bool_flags
def fit(model: torch.nn.Module, opt: torch.optim.Optimizer, trainable: list[tuple[str, torch.nn.Parameter]],
        pairs: list[tuple[str, int]], batches: list[list[int]], tokenizer: Tokenizer, *, max_length: int,
        warmup_fraction: float, bf16: bool = False, threads: int | Callable[[], int] | None = None,
        progress: bool = True, desc: str = "",
        used: set | None = None, clock: list | None = None) -> None:
    """Train ``model`` on ``batches`` (lists of indices into the ``(text, label)`` list ``pairs``) with ``opt``,
    the learning rate warming up linearly over ``warmup_fraction`` of the batches and decaying linearly to 0
    after, gradients of ``trainable`` clipped at norm 1, bfloat16 autocast on the CPU when ``bf16``.

    ``threads``: torch threads; ``None`` means all cores, or one when the CPU is already busy; a callable is
    asked before every step. ``used`` collects the thread counts used, ``clock`` adds the wall and the CPU
    seconds (``[wall, cpu]``). Each step is reported to :mod:`xaikit.models.buildprogress` under ``desc``.
    """
    import torch
    from tqdm.auto import tqdm

    from xaikit._config import cpu_busy, torch_threads

    used = set() if used is None else used
    clock = [0.0, 0.0] if clock is None else clock
    dev = next(model.parameters()).device
    ask = threads if callable(threads) else None
    warmup = max(1, int(warmup_fraction * len(batches)))
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda step: min((step + 1) / warmup, max(0.0, (len(batches) - step) / (len(batches) - warmup))))
    first = ask() if ask is not None else threads
    # without a count: one thread when the CPU is already busy, where OpenMP threads waiting for each other
    # are several times slower than one
    with torch_threads(first if first is not None else (1 if cpu_busy() else None)):
        used.add(torch.get_num_threads())
        t0, cpu0 = time.perf_counter(), time.process_time()
        bar = tqdm(batches, desc=desc, unit="batch", disable=not progress)
        for done, batch in enumerate(bar, 1):
            n = ask() if ask is not None else None
            if n is not None and n != torch.get_num_threads():
                torch.set_num_threads(n)
                used.add(n)
            enc = _encode(tokenizer, [pairs[i][0] for i in batch], max_length).to(dev)
            targets = torch.tensor([pairs[i][1] for i in batch], device=dev)  # (B,)
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
                loss = model(**enc, labels=targets).loss
            loss.backward()
            torch.nn.utils.clip_grad_norm_([p for _, p in trainable], 1.0)
            opt.step()
            sched.step()
            opt.zero_grad(set_to_none=True)
            bar.set_postfix(loss=f"{loss.item():.3f}", refresh=False)  # the bar redraws on its own clock
            buildprogress.step(done, len(batches), desc)  # for a process waiting for this build
        clock[0] += time.perf_counter() - t0
        clock[1] += time.process_time() - cpu0


def classifier_logits(model: torch.nn.Module, tokenizer: Tokenizer, probes: list[str],
                      max_length: int) -> list[list[float]]:
    """The logits of ``model`` on the texts ``probes``, float32 on the CPU, no gradients."""
    import torch

    with torch.no_grad():
        return model(**_encode(tokenizer, list(probes), max_length)).logits.float().cpu().tolist()


def check_classifier(folder: Path, probes: list[str], max_length: int) -> str | None:
    """Whether the classifier saved in ``folder`` works, for a folder that has lost its checksums
    (:func:`xaikit.models.cache.is_built`): ``None`` if it does, else what is wrong.

    The weights must be finite and of a trained model's size (:func:`xaikit.models.cache.weights_problem`), the
    logits of the texts ``probes`` finite and within :data:`xaikit.models.cache.PROBE_TOLERANCE` of those
    ``metrics.json`` recorded at build time (``probe_logits``), and their labels those it recorded
    (``lecture_sentences``), where the model was sure of them, so that a GPU-built model is not refused over
    rounding.
    """
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer
    from transformers.utils import logging as hf_logging

    from xaikit.models import cache

    folder = Path(folder)
    verbosity = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()
    try:
        model = AutoModelForSequenceClassification.from_pretrained(folder, use_safetensors=True).eval()
        tokenizer = AutoTokenizer.from_pretrained(folder)
    finally:
        hf_logging.set_verbosity(verbosity)
    problem = cache.weights_problem(model.state_dict())
    if problem:
        return problem
    logits = torch.tensor(classifier_logits(model, tokenizer, probes, max_length))  # (n, n_classes)
    if not bool(torch.isfinite(logits).all()):
        return "its logits on the lecture's sentences are NaN or inf"
    metrics = json.loads((folder / "metrics.json").read_text())
    problem = cache.logits_problem(metrics.get("probe_logits"), logits)
    if problem:
        return problem
    recorded = metrics.get("lecture_sentences") or {}
    top = logits.topk(2, dim=-1) if logits.shape[-1] > 1 else None
    for i, sentence in enumerate(probes):
        if sentence in recorded and top is not None:
            label, margin = int(top.indices[i, 0]), float(top.values[i, 0] - top.values[i, 1])
            if label != int(recorded[sentence]) and margin > 0.5:
                return (f"it labels {sentence!r} {label}, but metrics.json recorded {recorded[sentence]} when it "
                        "was built")
    return None


def train_until(value: float, target: float, one_more: Callable[[int], object], measure: Callable[[], float],
                *, what: str, name: str,
                max_extra: int = MAX_EXTRA_EPOCHS) -> list[float]:
    """Train on until a model reaches its recipe's quality, and say so.

    ``value``: the quality (e.g. the held-out accuracy) the model reached after its recipe's steps. While it
    is below ``target`` and fewer than ``max_extra`` extra epochs have run, print why, call ``one_more(k)`` to
    train extra epoch ``k`` (1, 2, ...) and ``measure()`` to score the model again. A model that reaches the
    target after its recipe trains no further. Returns the quality after the recipe and after each extra
    epoch; warns (``RuntimeWarning``) when the target is still missed at the end.
    """
    import warnings

    history = [float(value)]
    while history[-1] < target and len(history) <= max_extra:
        k = len(history)
        after = "its recipe's steps" if k == 1 else f"{k - 1} extra epoch{'s' if k > 2 else ''}"
        print(f"xaikit: the {name} reached {what} {history[-1]:.3f} after {after}, below its recipe's "
              f"{target:g}: training on, extra epoch {k} of at most {max_extra}", flush=True)
        one_more(k)
        history.append(float(measure()))
    n = len(history) - 1
    if history[-1] < target:
        warnings.warn(f"the {name} reached {what} {history[-1]:.3f} after {n} extra epoch{'s' if n != 1 else ''}, "
                      f"still below its recipe's {target:g}", RuntimeWarning, stacklevel=2)
    elif n:
        print(f"xaikit: the {name} reached {what} {history[-1]:.3f} after {n} extra epoch{'s' if n != 1 else ''} "
              f"(target {target:g})", flush=True)
    return history


def _cpu_has_amx() -> bool:
    """True when the CPU has AMX tiles, where torch's bfloat16 matmuls are fast (Intel Sapphire Rapids and
    later). Asked through a private torch helper, so any failure means "no"."""
    import torch

    isa = os.environ.get("ONEDNN_MAX_CPU_ISA", "").strip().upper()
    if isa and not isa.startswith(("AVX512_CORE_AMX", "DEFAULT", "ALL")):
        return False  # kernels capped below AMX (e.g. AVX2): train as a CPU without AMX would, in float32
    try:
        return bool(torch.cpu._is_amx_tile_supported())
    except Exception:  # noqa: BLE001 - an older or newer torch without the helper
        return False


def _save_pretrained(model, folder: Path) -> None:
    """Save as safetensors on every transformers release (4.x needs the flag; 5.x always does it)."""
    import inspect

    if "safe_serialization" in inspect.signature(model.save_pretrained).parameters:
        model.save_pretrained(folder, safe_serialization=True)
    else:
        model.save_pretrained(folder)
    if not (folder / "model.safetensors").is_file():
        raise RuntimeError(f"save_pretrained wrote no model.safetensors into {folder}")


def pretrained_classifier(path: Path, id2label: dict, seed: int) -> torch.nn.Module:
    """The pretrained encoder in ``path`` with a new classification head of ``id2label``'s classes, drawn with
    torch seed ``seed`` (the global random state is left as it was), eager attention, in eval mode; the
    Hugging Face warnings about the new head and the loading bar are kept quiet."""
    import torch
    from transformers import AutoModelForSequenceClassification
    from transformers.utils import logging as hf_logging

    verbosity, bars = hf_logging.get_verbosity(), hf_logging.is_progress_bar_enabled()
    hf_logging.set_verbosity_error()  # the head is *meant* to be new and untrained
    hf_logging.disable_progress_bar()  # a 0.1 s load needs no bar in the notebook
    try:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            model = AutoModelForSequenceClassification.from_pretrained(
                path, num_labels=len(id2label), id2label=id2label,
                label2id={v: k for k, v in id2label.items()}, use_safetensors=True, attn_implementation="eager")
    finally:
        hf_logging.set_verbosity(verbosity)
        if bars:
            hf_logging.enable_progress_bar()
    return model.eval()


def logit_gaps(model: torch.nn.Module, tokenizer: Tokenizer, texts: list[str], max_length: int = 64,
               batch_size: int = 64) -> torch.Tensor:
    """``logit[positive] - logit[negative]`` for each text, in float32 on the CPU (batched, no gradients)."""
    import torch

    dev = next(model.parameters()).device
    gaps = []
    with torch.no_grad():
        for start in range(0, len(texts), batch_size):
            logits = model(**_encode(tokenizer, texts[start:start + batch_size], max_length).to(dev)).logits
            gaps.append((logits[:, 1] - logits[:, 0]).float().cpu())  # (B,)
    return torch.cat(gaps)
