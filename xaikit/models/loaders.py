"""Load the classifiers the notebooks explain: the embedded offline defaults, a local folder, or a hub id.

Notebooks 02-04 call :func:`load_sentiment` (a BERT-family sentiment classifier; the lecture's is
``textattack/bert-base-uncased-SST-2``) and notebook 05 calls :func:`load_vit` (a Vision Transformer,
Dosovitskiy et al. 2021; the lecture's is ``google/vit-base-patch16-224``). ``name`` is one of

* ``"embedded"``: the model xaikit builds offline with ``python -m xaikit prepare`` (MiniLM fine-tuned
  on movie reviews, :mod:`xaikit.models.sentiment`; a small ViT trained on a generated image world,
  :mod:`xaikit.models.vitworld`), for ViT also ``"embedded-control"``, the control-world ViT that
  TCAV's ground-truth check uses, and for sentiment also ``"embedded-shuffled"``, the same recipe trained on
  shuffled labels (notebook 06's data randomisation test);
* a folder written by ``model.save_pretrained(folder)`` plus ``tokenizer.save_pretrained(folder)`` (or
  the image processor's);
* a Hugging Face hub id, loaded with ``from_pretrained``. Without a network it fails with a message
  that says so and names the embedded default.

Every model comes back in eval mode, on :func:`xaikit.device`, with eager attention (SDPA returns no
attention weights, which Grad-SAM, rollout and the attention explorer need; Vaswani et al. 2017) and a
filled ``config.id2label``. The embedded models and all local folders are loaded through the same code
path, so the tests of that path (tiny random models saved to a temporary folder) cover the hub route too.

**Dtype.** Models keep the dtype ``from_pretrained`` gives them (float32 for the embedded ones) unless
``XAIKIT_MODEL_DTYPE`` names one (``float32``, ``float64``, ``float16`` or ``bfloat16``; aliases
``double``, ``half``, ``bf16``). ``XAIKIT_MODEL_DTYPE=float64`` is the suite's CPU stand-in for a GPU: a
tensor built on the CPU in float32 and fed to the model without ``.to(model.device)`` (or, for floating
inputs, without the model's dtype) fails on the same line as it would on CUDA, so
``tests/test_notebooks.py`` runs notebooks 03, 04 and 06 that way on machines with no GPU.

**Caching.** Loaded models are kept in an in-process LRU cache keyed by the resolved source (and, for
folders, the modification time of their weights), so a notebook that calls ``load_sentiment()`` in
several cells gets the *same* objects back at once. A cached model whose weights or train/eval mode were
changed in place since it was handed out (a fingerprint taken at load, :mod:`xaikit.models.fingerprint`) is
not served again: the loader says so and loads it afresh. Pass ``cache=False`` for a separate copy you may
modify (e.g. to fine-tune or prune it), or call :func:`clear_cache`.
"""

from __future__ import annotations

import difflib
import os
import re
import sys
from pathlib import Path

from xaikit._validate import bool_flags

__all__ = ["load_sentiment", "load_vit", "clear_cache", "HubUnreachableError", "EMBEDDED", "HUB_EXAMPLES"]

EMBEDDED = "embedded"
EMBEDDED_CONTROL = "embedded-control"
EMBEDDED_SHUFFLED = "embedded-shuffled"
EMBEDDED_SUBSET = "embedded-subset"
_EMBEDDED_NAMES = {"text": (EMBEDDED, EMBEDDED_SHUFFLED, EMBEDDED_SUBSET), "image": (EMBEDDED, EMBEDDED_CONTROL)}
HUB_EXAMPLES = {"text": "textattack/bert-base-uncased-SST-2", "image": "google/vit-base-patch16-224"}
_LOADER = {"text": "load_sentiment", "image": "load_vit"}
_HEAD_SUFFIX = {"text": "ForSequenceClassification", "image": "ForImageClassification"}
_WHAT = {"text": "a text classifier (e.g. BertForSequenceClassification)",
         "image": "an image classifier (e.g. ViTForImageClassification)"}
# Labels of hub models whose config only says LABEL_0/LABEL_1 (SST-2 convention: 1 = positive).
_KNOWN_LABELS = {"textattack/bert-base-uncased-SST-2": {0: "NEGATIVE", 1: "POSITIVE"}}
_HUB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9][A-Za-z0-9._-]*)?$")
_WEIGHT_FILES = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin",
                 "pytorch_model.bin.index.json")


class HubUnreachableError(OSError):
    """The Hugging Face hub could not be reached (offline, or ``HF_HUB_OFFLINE=1``)."""


# ------------------------------------------------------------------------------------- public API

@bool_flags
def load_sentiment(name: str | os.PathLike = EMBEDDED, *, cache: bool = True):
    """``(model, tokenizer)`` of a sentiment classifier, ready to explain (notebooks 02, 03, 04, 06).

    ``name``: ``"embedded"`` (default; MiniLM fine-tuned on movie reviews, built by
    ``python -m xaikit prepare``, about 87% held-out accuracy), ``"embedded-shuffled"`` (the same recipe
    fine-tuned on shuffled labels, near chance: Adebayo et al. 2018's data randomisation test in notebook 06),
    ``"embedded-subset"`` (that test's control: the shuffled model's texts and steps with the real labels),
    a folder saved with ``save_pretrained``,
    or a hub id such as ``"textattack/bert-base-uncased-SST-2"`` (needs a network). The model is in eval
    mode on ``xaikit.device()`` with eager attention; ``cache=False`` bypasses the in-process cache.
    """
    return _load("text", name, cache)


@bool_flags
def load_vit(name: str | os.PathLike = EMBEDDED, *, cache: bool = True):
    """``(model, image_processor)`` of a Vision Transformer image classifier (notebook 05).

    ``name``: ``"embedded"`` (default; a small ViT trained by xaikit on a generated image world with a
    "zebra" class), ``"embedded-control"`` (the same architecture trained on a world where stripes do not
    predict "zebra", for TCAV's ground-truth check), a folder saved with ``save_pretrained``, or a hub id
    such as ``"google/vit-base-patch16-224"`` (needs a network). Eval mode, ``xaikit.device()``, eager
    attention; ``cache=False`` bypasses the in-process cache.
    """
    return _load("image", name, cache)


def clear_cache() -> None:
    """Forget every model the loaders have cached in this process."""
    _CACHE.clear()


# ------------------------------------------------------------------------------ resolving names

def _load(kind: str, name, cache: bool):
    if not isinstance(cache, bool):
        raise TypeError(f"cache must be True or False, got {type(cache).__name__} {cache!r}")
    source, local = _resolve(kind, name)
    from xaikit._config import device

    dev, dtype = str(device()), model_dtype_name()
    if not cache:
        return _load_uncached(kind, source, local, dev, dtype)
    return _load_cached(kind, source, local, _stamp(source) if local else None, dev, dtype)


#: ``XAIKIT_MODEL_DTYPE`` values and the torch dtype each one names.
MODEL_DTYPES = {"float32": "float32", "float": "float32", "fp32": "float32", "float64": "float64",
                "double": "float64", "fp64": "float64", "float16": "float16", "half": "float16", "fp16": "float16",
                "bfloat16": "bfloat16", "bf16": "bfloat16"}


def model_dtype_name() -> str | None:
    """The dtype the loaders put models in: ``$XAIKIT_MODEL_DTYPE`` (see the module docstring), or None
    (keep the checkpoint's) when it is unset."""
    from xaikit._config import MODEL_DTYPE_ENV

    raw = os.environ.get(MODEL_DTYPE_ENV, "").strip().lower()
    if not raw:
        return None
    if raw not in MODEL_DTYPES:
        raise ValueError(f"{MODEL_DTYPE_ENV}={os.environ[MODEL_DTYPE_ENV]!r} is not a dtype xaikit loads models in; "
                         f"set it to float32, float64, float16 or bfloat16, or unset it to keep the checkpoint's")
    return MODEL_DTYPES[raw]


def looks_like_path(text: str) -> bool:
    """Whether model name ``text`` reads as a folder path rather than a hub id (``org/name``): it starts with
    ``/``, ``.``, ``~`` or a drive letter, or has a backslash or more than one ``/``."""
    return (text.startswith(("/", ".", "~", "\\")) or text.count("/") > 1 or "\\" in text
            or re.match(r"^[A-Za-z]:", text) is not None)


def _resolve(kind: str, name) -> tuple[str, bool]:
    """``(source, is_local_folder)`` for ``name``; builds the embedded model if its cache is missing."""
    loader, example = _LOADER[kind], HUB_EXAMPLES[kind]
    usage = (f"pass {EMBEDDED!r} (the offline default), a folder saved with save_pretrained, or a Hugging "
             f"Face hub id such as {example!r}")
    if isinstance(name, os.PathLike):
        name = os.fspath(name)
    if hasattr(name, "forward") and hasattr(name, "parameters"):  # a model object, not a name
        raise TypeError(f"name must be a str or a path, got a {type(name).__name__} model; {loader} loads "
                        "a model by name. To use a model you already have, pass it to the xaikit function "
                        "directly, after xaikit.models.ensure_eager(model) so that it returns attention weights")
    if not isinstance(name, str):
        raise TypeError(f"name must be a str or a path, got {type(name).__name__} {name!r}; {usage}")
    text = name.strip()
    if not text:
        raise ValueError(f"name is empty; {usage}")
    if text.lower() in _EMBEDDED_NAMES[kind]:
        return str(_embedded_folder(kind, text.lower())), True
    if kind == "text" and text.lower() == EMBEDDED_CONTROL:  # "embedded-control" given to load_sentiment
        raise ValueError(f"name={text!r} is an image model; {loader} has "
                         f"{', '.join(repr(n) for n in _EMBEDDED_NAMES[kind])}. "
                         f"Use xaikit.models.load_vit({text!r}) for the control-world ViT")
    if kind == "image" and text.lower() == EMBEDDED_SHUFFLED:  # "embedded-shuffled" given to load_vit
        raise ValueError(f"name={text!r} is a text model; {loader} has {EMBEDDED!r} and {EMBEDDED_CONTROL!r}. "
                         f"Use xaikit.models.load_sentiment({text!r}) for the shuffled-label sentiment model")
    path = Path(text).expanduser()
    if path.is_dir():
        _check_folder(path)
        return str(path.resolve()), True
    if path.exists():
        raise ValueError(f"name={text!r} is a file, not a folder; pass the folder that holds config.json "
                         f"and the weights (what model.save_pretrained(folder) writes)")
    if looks_like_path(text):
        raise ValueError(f"name={text!r} looks like a folder, but no such folder exists; check the path, or {usage}")
    close = difflib.get_close_matches(text.lower(), _EMBEDDED_NAMES[kind], n=1, cutoff=0.7)
    close = close or [n for n in _EMBEDDED_NAMES[kind] if n.endswith(f"-{text.lower()}")]  # "control"
    if close or text.lower().startswith(EMBEDDED):
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise ValueError(f"unknown name {text!r} for {loader}: the embedded models are "
                         f"{', '.join(repr(n) for n in _EMBEDDED_NAMES[kind])}.{hint}")
    if not _HUB_ID.match(text) or "--" in text or ".." in text:
        raise ValueError(f"unknown name {text!r}: it is neither an embedded model, an existing folder nor a "
                         f"valid hub id; {usage}")
    return text, False


def _embedded_folder(kind: str, name: str) -> Path:
    if kind == "text":
        from xaikit.models import sentiment

        ensure = {EMBEDDED_SHUFFLED: sentiment.ensure_shuffled_sentiment,
                  EMBEDDED_SUBSET: sentiment.ensure_subset_sentiment}.get(name, sentiment.ensure_embedded_sentiment)
        return ensure(progress=True)
    try:
        from xaikit.models.vitworld import ensure_embedded_vit
    except ImportError as err:  # pragma: no cover - the module ships with xaikit
        raise RuntimeError(f"the embedded ViT is not available in this install ({err}); "
                           f"pass a folder or a hub id such as {HUB_EXAMPLES['image']!r}") from err
    return ensure_embedded_vit("control" if name == EMBEDDED_CONTROL else "main", progress=True)


def _check_folder(path: Path) -> None:
    if not (path / "config.json").is_file():
        raise ValueError(f"folder {str(path)!r} holds no model: there is no config.json. Save one there with "
                         "model.save_pretrained(folder) (and tokenizer/image_processor.save_pretrained(folder))")
    if not any((path / f).is_file() for f in _WEIGHT_FILES):
        raise ValueError(f"folder {str(path)!r} has a config.json but no weights (looked for "
                         f"{', '.join(_WEIGHT_FILES)}); save the model with model.save_pretrained(folder)")
    from xaikit._config import SHARED_CACHE_ENV, in_caches
    from xaikit.models import cache

    if (path / cache.MANIFEST).is_file():  # a folder xaikit built: its files must match their checksums
        where = in_caches(path)
        fix = {"personal": None,
               "shared": (f"This folder is in the shared cache ({SHARED_CACHE_ENV}), which xaikit never writes: ask "
                          "the instructor to rebuild it (`python -m xaikit prepare --force` with XAIKIT_CACHE set to "
                          "the shared folder, where it is writable), or load the embedded model by its name (e.g. "
                          "'embedded'), which falls back to building it in your personal cache")}.get(where, (
            "This folder is outside xaikit's cache, so `prepare --force` cannot rebuild it: copy it again from "
            "where it came from, or load the embedded model by its name (e.g. 'embedded'), which xaikit "
            "checks and rebuilds in its cache"))
        cache.verify(path, required=(), what="model", fix=fix)
        return
    for weights in sorted(path.glob("*.safetensors")):  # a folder of the user's: a file cut short by a copy
        try:
            cache.check_safetensors_size(weights)
        except (ValueError, OSError) as err:
            raise ValueError(f"folder {str(path)!r}: {weights.name} is damaged ({err}), as a copy or download "
                             "cut short leaves it; copy or save the model there again "
                             "(model.save_pretrained(folder))") from None


def _stamp(source: str) -> tuple:
    """Changes when any file of the folder is rewritten, added or removed (weights, config, tokenizer or image
    processor files), so a re-saved model or tokenizer is not served from the in-process cache."""
    folder = Path(source)
    return tuple(sorted((f.name, f.stat().st_mtime_ns, f.stat().st_size) for f in folder.iterdir() if f.is_file()))


# --------------------------------------------------------------------------------------- loading

#: the models loaded in this process: ``(kind, source, local, stamp, device, dtype)`` -> ``(model, processor,
#: fingerprint)``, the least recently used first
_CACHE: dict[tuple, tuple] = {}
_CACHE_SIZE = 8


def _load_cached(kind: str, source: str, local: bool, stamp, dev: str, dtype: str | None = None):
    """The cached ``(model, processor)`` for these arguments, loaded if missing. A cached model whose weights or
    train/eval mode changed since it was loaded (:func:`~xaikit.models.fingerprint.fingerprint`: a student's
    in-place experiment on the model the loader handed out) is not served again: the loader says so and loads
    it afresh, so every call gives the model as saved."""
    from xaikit.models.fingerprint import fingerprint

    key = (kind, source, local, stamp, dev, dtype)
    hit = _CACHE.pop(key, None)
    if hit is not None:
        model, prep, seen = hit
        if fingerprint(model) == seen:
            _CACHE[key] = hit
            return model, prep
        print(f"xaikit: the model that {_LOADER[kind]}() handed out earlier in this session ({_short(source)}) was "
              "changed since (its weights or its train/eval mode), so it is loaded again as saved; the changed "
              "one is still the object you hold. cache=False always loads a separate copy.", file=sys.stderr,
              flush=True)
    model, prep = _load_uncached(kind, source, local, dev, dtype)
    _CACHE[key] = (model, prep, fingerprint(model))
    while len(_CACHE) > _CACHE_SIZE:
        _CACHE.pop(next(iter(_CACHE)))
    return model, prep


def _short(source: str) -> str:
    return Path(source).name if Path(source).is_dir() else source


def _load_uncached(kind: str, source: str, local: bool, dev: str, dtype: str | None = None):
    from transformers import (
        AutoConfig,
        AutoImageProcessor,
        AutoModelForImageClassification,
        AutoModelForSequenceClassification,
        AutoTokenizer,
    )

    from xaikit.models.arch import ensure_eager

    # No network: look only in the local Hugging Face cache instead of retrying for a minute.
    hub = {} if local or _hub_reachable() else {"local_files_only": True}
    with _hub_errors(kind, source, local, "configuration"):
        config = AutoConfig.from_pretrained(source, **hub)
    _check_kind(kind, source, config)
    _check_head_in_config(kind, source, config)

    auto = AutoModelForSequenceClassification if kind == "text" else AutoModelForImageClassification
    extra = {"use_safetensors": True} if _is_embedded_folder(source) else dict(hub)
    with _hub_errors(kind, source, local, "weights"), _quiet_transformers():
        try:
            model, info = auto.from_pretrained(source, attn_implementation="eager", output_loading_info=True,
                                               **extra)
        except ValueError as err:
            if "Unrecognized configuration class" in str(err):
                raise ValueError(f"{source!r} is a {config.model_type!r} model, which has no "
                                 f"{_HEAD_SUFFIX[kind]} class in transformers; pass {_WHAT[kind]}") from err
            raise
    _check_head_loaded(kind, source, model, info)
    with _hub_errors(kind, source, local, "tokenizer" if kind == "text" else "image processor"), \
            _quiet_transformers():
        try:
            auto_prep = AutoTokenizer if kind == "text" else AutoImageProcessor
            prep = auto_prep.from_pretrained(source, **hub)
            if kind == "text" and len(prep) <= len(set(prep.all_special_tokens)):
                # transformers 5.x builds a tokenizer with an empty vocabulary when the files are missing
                raise ValueError(f"the tokenizer has no vocabulary ({len(prep)} tokens)")
        except (OSError, ValueError) as err:
            if not local:
                raise
            what = "tokenizer" if kind == "text" else "image_processor"
            raise ValueError(f"folder {source!r} holds a model but no usable {what.replace('_', ' ')} ({err}); "
                             f"save it next to the model with {what}.save_pretrained(folder)") from err

    _fill_labels(model, source)
    ensure_eager(model)
    import torch

    model = model.to(torch.device(dev))
    if dtype is not None:
        model = model.to(getattr(torch, dtype))  # XAIKIT_MODEL_DTYPE
    model = model.eval()
    return model, prep


def _is_embedded_folder(source: str) -> bool:
    from xaikit._config import in_caches

    try:
        return in_caches(source) is not None
    except (OSError, ValueError):
        return False


def _config_kind(config) -> str:
    """"image" for ViT-style configs, "text" for configs with a vocabulary, "other" otherwise."""
    if hasattr(config, "image_size") and hasattr(config, "num_channels") and not hasattr(config, "vocab_size"):
        return "image"
    if hasattr(config, "vocab_size") and not hasattr(config, "image_size"):
        return "text"
    return "other"


def _check_kind(kind: str, source: str, config) -> None:
    found = _config_kind(config)
    if found == kind:
        return
    model_type = getattr(config, "model_type", "?")
    if found == "other":
        raise ValueError(f"{source!r} is a {model_type!r} model, neither a text encoder nor an image "
                         f"Transformer; {_LOADER[kind]} needs {_WHAT[kind]}")
    other = "image" if kind == "text" else "text"
    article = "an" if other == "image" else "a"
    raise ValueError(f"{source!r} is {article} {other} model ({model_type!r}), but {_LOADER[kind]} needs "
                     f"{_WHAT[kind]}; use xaikit.models.{_LOADER[other]}({source!r}) instead")


def _check_head_in_config(kind: str, source: str, config) -> None:
    archs = list(getattr(config, "architectures", None) or [])
    if archs and not any(a.endswith(_HEAD_SUFFIX[kind]) for a in archs):
        raise ValueError(
            f"{source!r} has no classification head: it was saved as {', '.join(archs)}. xaikit explains "
            f"a classifier's prediction, so pass {_WHAT[kind]}, e.g. {HUB_EXAMPLES[kind]!r}, or fine-tune "
            f"the encoder with a {_HEAD_SUFFIX[kind]} head first"
        )


def _check_head_loaded(kind: str, source: str, model, info: dict) -> None:
    """Refuse a head that ``from_pretrained`` had to initialise at random (the checkpoint had none)."""
    missing = [k for k in (info or {}).get("missing_keys", []) if not k.startswith(model.base_model_prefix)]
    if missing:
        raise ValueError(
            f"{source!r} has no trained classification head (the checkpoint lacks {', '.join(sorted(missing))}, "
            f"so it would be random); pass {_WHAT[kind]}, e.g. {HUB_EXAMPLES[kind]!r}"
        )


def _fill_labels(model, source: str) -> None:
    config = model.config
    n = int(config.num_labels)
    labels = {int(k): str(v) for k, v in (getattr(config, "id2label", None) or {}).items()}
    generic = all(v == f"LABEL_{k}" for k, v in labels.items())
    if source in _KNOWN_LABELS and generic:
        labels = dict(_KNOWN_LABELS[source])
    if sorted(labels) != list(range(n)):
        labels = {i: labels.get(i, f"LABEL_{i}") for i in range(n)}
    config.id2label = labels
    config.label2id = {v: k for k, v in labels.items()}


class _hub_errors:
    """Turn hub/network failures into :class:`HubUnreachableError` naming the embedded default."""

    def __init__(self, kind: str, source: str, local: bool, what: str):
        self.kind, self.source, self.local, self.what = kind, source, local, what

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc is None or self.local or not isinstance(exc, Exception):
            return False
        if _is_connection_error(exc):
            raise HubUnreachableError(
                f"cannot load {self.source!r}: the Hugging Face hub cannot be reached (no network, or "
                f"HF_HUB_OFFLINE=1) and the {self.what} is not in the local Hugging Face cache. Use the "
                f"embedded default instead: xaikit.models.{_LOADER[self.kind]}({EMBEDDED!r}), or a folder "
                f"saved with save_pretrained"
            ) from exc
        if isinstance(exc, OSError):
            raise ValueError(
                f"{self.source!r} is neither an embedded model, a local folder nor a model on the Hugging "
                f"Face hub ({exc}); pass {EMBEDDED!r} or a hub id such as {HUB_EXAMPLES[self.kind]!r}"
            ) from exc
        return False


def _hub_reachable(timeout: float = 3.0) -> bool:
    """Whether the hub's host answers a TCP connection within ``timeout`` seconds (False when offline)."""
    import socket
    from urllib.parse import urlparse

    from huggingface_hub import constants

    if constants.HF_HUB_OFFLINE:
        return False
    url = urlparse(constants.ENDPOINT)
    try:
        with socket.create_connection((url.hostname, url.port or (443 if url.scheme == "https" else 80)),
                                      timeout=timeout):
            return True
    except OSError:
        return False


def _is_connection_error(exc: BaseException) -> bool:
    from huggingface_hub import constants

    if constants.HF_HUB_OFFLINE and isinstance(exc, OSError):
        return True  # offline mode: every hub miss is "cannot reach the hub"
    names = {"LocalEntryNotFoundError", "OfflineModeIsEnabled", "ConnectError", "ConnectionError",
             "ConnectTimeout", "ReadTimeout", "TimeoutException", "NetworkError"}
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if any(c.__name__ in names for c in type(exc).__mro__) or "couldn't connect" in str(exc).lower():
            return True
        exc = exc.__cause__ or exc.__context__
    return False


class _quiet_transformers:
    """Silence transformers' load report and weight-loading bars; xaikit raises its own clear errors."""

    def __enter__(self):
        from transformers.utils import logging as hf_logging

        self._logging = hf_logging
        self._level = hf_logging.get_verbosity()
        self._bars = hf_logging.is_progress_bar_enabled()
        hf_logging.set_verbosity_error()
        hf_logging.disable_progress_bar()
        return self

    def __exit__(self, *exc):
        self._logging.set_verbosity(self._level)
        if self._bars:
            self._logging.enable_progress_bar()
        return False
