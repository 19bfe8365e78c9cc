"""The rank test's null scores (Kim et al. 2018, section 3.5; notebooks 05 and 07): the TCAV scores of the random
concepts (:mod:`xaikit.concepts.nullsets`) through the same R runs as a concept, kept per model, layer and
pooling so that a second call reuses them; the check that the concept, random and negative sets share no images
(a concept that is one of the random sets would rank against itself); and the CAVs of those runs, cached by the
digests of their activations. :func:`xaikit.concepts.significance.tcav_significance` calls them.
"""

from __future__ import annotations

import hashlib

import numpy as np

from xaikit.concepts.activations import _score, _store
from xaikit.concepts.cav import CAV, train_cav
from xaikit.concepts.images import _imgs, pixel_values


def _image_keys(images, name: str) -> set[bytes]:
    """One digest per distinct image of a set (its shape and bytes): images equal bit for bit share a key."""
    keys = set()
    for img in _imgs(images, name):
        arr = np.ascontiguousarray(img)
        keys.add(hashlib.blake2b(repr(arr.shape).encode() + arr.tobytes(), digest_size=16).digest())
    return keys


#: two image sets sharing at least this fraction of the smaller one's images are refused as "the same set"
SAME_SET_SHARE = 0.5


def _check_distinct_sets(concepts, random_sets, negative, null_sets, R: int) -> None:
    """Refuse image sets that should differ but hold (nearly) the same images.

    ``imageworld.random_images(n)`` has a default seed, so ``[random_images(10) for _ in range(6)]`` is six
    copies of one set: every random-vs-random baseline CAV then trained on identical sets, scored 0.00, and
    an irrelevant set came out significant at p = 0.0025 (``[rs[0]] * 4``: p = 8e-6). Checked: the R+1 random
    sets among themselves, each concept against its counterparts (``random_sets[1..R]`` or ``negative``), and
    the rank test's null sets among themselves and against the random sets. Sets share "nearly" all images
    when at least :data:`SAME_SET_SHARE` of the smaller set's images are in the other, bit for bit.
    """
    named = [(f"random_sets[{i}]", _image_keys(r, f"random_sets[{i}]")) for i, r in enumerate(random_sets)]
    counterparts = named[1:R + 1]
    if negative is not None:
        counterparts = [("negative", _image_keys(negative, "negative"))]
    nulls = [(f"null_sets[{k}]", _image_keys(n, f"null_sets[{k}]")) for k, n in enumerate(null_sets or ())]

    def same(a, b) -> int | None:
        shared = len(a[1] & b[1])
        return shared if shared and shared >= SAME_SET_SHARE * min(len(a[1]), len(b[1])) else None

    def refuse(a, b, shared, param: str, fix: str):
        n = min(len(a[1]), len(b[1]))
        what = "the same images" if shared == len(a[1]) == len(b[1]) else f"{shared} of the same {n} images"
        raise ValueError(
            f"{a[0]} and {b[0]} hold {what}: a CAV trained to tell them apart separates nothing, its TCAV score is "
            f"meaningless, and a random-vs-random baseline of such sets makes any concept look significant. "
            f"{param} must hold different images: {fix}")

    fixes = {"random_sets": "draw each with its own seed, e.g. [imageworld.random_images(50, seed=i) for i in "
                            "range(R + 1)] (random_images(n) without a seed always draws the same images)",
             "null_sets": "draw each with its own seed, e.g. [imageworld.random_images(50, seed=1000 + k) for k in "
                          "range(100)], or leave null_sets out to get such sets"}
    for group, param in ((named, "random_sets"), (nulls, "null_sets")):
        for i, a in enumerate(group):
            for b in group[i + 1:]:
                if (shared := same(a, b)) is not None:
                    refuse(a, b, shared, param, fixes[param])
    for a in nulls:
        for b in named:
            if (shared := same(a, b)) is not None:
                refuse(a, b, shared, "null_sets", "draw the null sets with other seeds than the random sets")
    for cname, imgs in concepts.items():
        c = (f"concepts[{cname!r}]", _image_keys(imgs, f"concepts[{cname!r}]"))
        for b in counterparts:
            if (shared := same(c, b)) is not None:
                refuse(c, b, shared, "a concept and its counterparts",
                       "pass the concept's own images, and counterparts drawn apart from it")


def _null_scores(model, null_sets: list, layer: int, pooling: str, processor, counterpart, R: int, context,
                 progress: bool) -> np.ndarray:
    """(K, R) TCAV scores of R runs of each random image set posing as a concept, cached per model, so that
    moving a panel's alpha or concept set does not train the K x R CAVs again. Their activations are not
    cached (K sets would hold hundreds of MB); each set's are taken at ``layer`` only (the blocks above it
    are not run) and dropped.

    Run i pits every set against the same counterpart with the same held-out split (it depends on the seed
    and the set sizes only), so the counterpart's training rows are prepared once per run, and only each
    CAV's unit vector is computed (:func:`xaikit.concepts.cav._vector_from_training_rows`: the vector of
    ``train_cav``, without the held-out accuracy nobody reads here).

    At the lecture's size (a model of 20 M parameters or more: vit-base) the table is also kept on
    disk, keyed by the model's weights and the same digest, through the checksummed cache
    (:func:`xaikit.concepts.activations._disk_kept`): K = 100 sets of 50 images cost 5,000 forward passes
    there, so a new kernel reads the scores back instead."""
    g, classifier, seed, counterparts = context
    digest = hashlib.sha1(g.tobytes())
    for a in (*null_sets, *counterparts):  # the gradients, the random concepts and what they were run against
        digest.update(np.ascontiguousarray(a).tobytes())
    key = ("null-scores", digest.hexdigest()[:16], len(null_sets), layer, pooling, classifier, seed, R)
    store = _store(model)
    if key not in store:
        from xaikit.concepts.activations import _DISK_CACHE_MIN_PARAMS, _disk_folder, _disk_kept, _n_params

        def compute():
            return _null_score_table(model, null_sets, layer, pooling, processor, counterpart, R, classifier, seed,
                                     g, progress)

        if _n_params(model) >= _DISK_CACHE_MIN_PARAMS:  # a large model: the K x R scores kept on disk too
            name = hashlib.sha256(repr(key).encode()).hexdigest()[:16]
            try:
                store[key] = _disk_kept(_disk_folder(model, f"null-scores-{name}"), compute, "rank test's scores")
            except ValueError:  # XAIKIT_CACHE unusable
                store[key] = compute()
        else:
            store[key] = compute()
    return store[key]


def _null_score_table(model, null_sets, layer, pooling, processor, counterpart, R, classifier, seed, g,
                      progress) -> np.ndarray:
    """The (K, R) table of :func:`_null_scores`, computed."""
    from tqdm.auto import tqdm

    from xaikit.concepts.activations import _run
    from xaikit.concepts.cav import _held_out, _vector_from_training_rows

    n_pos = len(null_sets[0])  # the sets are of one size (tcav_significance checks it)
    runs = []  # per run: the concept's training rows among the set's, and the training rows of a CAV
    for i in range(R):  # with the counterpart's already in place
        counter, rows = counterpart(i, n_pos)
        rows = np.arange(n_pos) if rows is None else rows
        test = _held_out(len(rows), len(counter), seed + i)
        train = rows[~test[:len(rows)]]
        xt = np.empty((len(train) + int((~test[len(rows):]).sum()), counter.shape[1]))
        xt[len(train):] = np.asarray(counter, np.float64)[~test[len(rows):]]
        runs.append((train, xt))
    scores = []
    for k, imgs in enumerate(tqdm(null_sets, desc="random concepts", disable=not progress, leave=False)):
        a = _run(model, pixel_values(model, imgs, processor, f"null_sets[{k}]"), [layer], pooling, None, 64,
                 stop=True)[layer]
        a = np.asarray(a, np.float64)
        # not through the CAV cache: K x R CAVs of throwaway sets would crowd out the concepts' own
        row = []
        for i, (train, xt) in enumerate(runs):
            np.take(a, train, axis=0, out=xt[:len(train)])  # this set's training rows, then the counterpart's
            row.append(_score(g @ _vector_from_training_rows(xt, len(train), classifier, seed + i))[0])
        scores.append(row)
    return np.array(scores)


def _digest(a: np.ndarray, digests: dict | None = None) -> str:
    """The first 16 hex digits of the SHA-1 of ``a``'s bytes; ``digests`` (id -> (array, digest)) remembers them
    for arrays that stay alive, so an activation set in R runs is hashed once (30 MB at vit-base: 0.07 s)."""
    if digests is not None and id(a) in digests and digests[id(a)][0] is a:
        return digests[id(a)][1]
    d = hashlib.sha1(np.ascontiguousarray(a).data).hexdigest()[:16]
    if digests is not None:
        digests[id(a)] = (a, d)
    return d


def _cav_cached(model, a_pos, a_neg, classifier, seed, concept, negative, layer, pooling, digests=None) -> CAV:
    key = ("cav", _digest(a_pos, digests), _digest(a_neg, digests), classifier, seed)
    store = _store(model)
    if key not in store:
        store[key] = train_cav(a_pos, a_neg, classifier, seed, concept=concept, negative=negative, layer=layer,
                               pooling=pooling)
    return store[key]
