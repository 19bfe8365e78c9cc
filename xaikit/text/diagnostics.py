"""Wiegreffe & Pinter's diagnostic: does a model's attention carry task information a context-free model can
use? (notebook 04, section 7, "Wiegreffe & Pinter: attention as a guide for a model without context").

Wiegreffe & Pinter (2019, "Attention is not not Explanation", EMNLP, section 4 and Table 3) answer Jain &
Wallace's permutations with a *diagnostic model*: a classifier that sees every token on its own, with no
access to its neighbours, and pools the tokens with weights imposed from outside. If the trained model's
attention weights help such a model more than uniform weights do, they say something about which tokens
matter that does not depend on the rest of the trained model. The diagnostic here:

* **token encoder** (non-contextual): the classifier's own word embeddings e_t, frozen, then one trained
  layer h_t = tanh(W e_t + b) per token;
* **pooling** with weights alpha over the word tokens: c = sum_t alpha_t h_t / sum_t alpha_t, where alpha is
  (a) **uniform** (the plain mean), (b) the **model's attention** (by default the last layer's [CLS] row,
  mean of the heads, renormalised over the word tokens; see :func:`diagnostic_data`), or (c) **learned** by
  the diagnostic itself (alpha = softmax_t(v . h_t), trained with everything else, Wiegreffe & Pinter's
  "trained MLP");
* **classifier**: logits = U c + u.

Only the weights differ between (a), (b) and (c): same data, same seed, same training. [CLS] and [SEP]
are left out of the pooling: without context their embeddings are the same for every sentence, so weight
on them only scales the word tokens down.

:func:`pool` is the pooling (uniform weights give the mean, one-hot weights one token's output),
:class:`DiagnosticMLP` the model, :func:`train_diagnostic` its seeded training, :func:`diagnostic_data` the
model's attention for a set of sentences (one forward pass, batched), :func:`run_diagnostic` the whole
comparison over several training seeds, returned as a :class:`DiagnosticResult`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from xaikit._fn import inputs_to_model, to_cpu
from xaikit._validate import check_choice, check_float, check_int
from xaikit.models.arch import check_layer
from xaikit.policies import method_threads
from xaikit.text.encoding import check_model, check_texts, max_tokens

__all__ = ["WEIGHTINGS", "pool", "DiagnosticMLP", "DiagnosticData", "diagnostic_data", "train_diagnostic",
           "evaluate_diagnostic", "DiagnosticResult", "run_diagnostic", "notebook_sentences", "warm_notebook_cache"]

#: the pooling weights compared by :func:`run_diagnostic`, in Wiegreffe & Pinter's order (their Table 3:
#: uniform, trained MLP, the base model's attention).
WEIGHTINGS = ("uniform", "learned", "model attention")


# ----------------------------------------------------------------------------------------------- pooling

def _check_weights(outputs: torch.Tensor, weights, mask) -> tuple[torch.Tensor, torch.Tensor]:
    """``weights`` and ``mask`` as ``(B, T)`` tensors on ``outputs``' device, with clear errors."""
    if not isinstance(outputs, torch.Tensor) or outputs.ndim != 3:
        raise ValueError(f"outputs must be a (batch, tokens, features) tensor, got "
                         f"{tuple(getattr(outputs, 'shape', ())) or type(outputs).__name__}")
    B, T, _ = outputs.shape
    weights = torch.as_tensor(weights)
    if weights.ndim != 2 or weights.shape[0] != B:
        raise ValueError(f"weights must have shape (batch, tokens) = ({B}, {T}), one weight per token of each "
                         f"sequence; got {tuple(weights.shape)}")
    if weights.shape[1] != T:
        raise ValueError(f"weights has {weights.shape[1]} positions per sequence but the token outputs have {T}: "
                         f"give one weight per token position, padding included (any value there; the mask "
                         f"drops it)")
    if not weights.is_floating_point():
        weights = weights.float()
    weights = weights.to(outputs.device, outputs.dtype)
    if mask is None:
        mask = torch.ones(B, T, dtype=torch.bool, device=outputs.device)
    else:
        mask = torch.as_tensor(mask)
        if tuple(mask.shape) != (B, T):
            raise ValueError(f"mask must have shape (batch, tokens) = ({B}, {T}) like the weights (True at real "
                             f"tokens); got {tuple(mask.shape)}")
        mask = mask.to(outputs.device).bool()
    real = torch.where(mask, weights, torch.zeros_like(weights))  # (B, T): padding never counts
    if not bool(torch.isfinite(real).all()):
        raise ValueError("weights contain NaN or inf at real tokens; pass finite, non-negative weights")
    if bool((real < 0).any()):
        b, t = (int(i) for i in (real < 0).nonzero()[0])
        raise ValueError(f"weights must be non-negative (a distribution over the tokens, e.g. attention); "
                         f"weights[{b}, {t}] = {float(real[b, t]):.4g}")
    empty = real.sum(-1) <= 0
    if bool(empty.any()):
        raise ValueError(f"the weights of sequence {int(empty.nonzero()[0])} are zero on every real token (or it "
                         f"has none): give each sequence some weight where its mask is True")
    return real, mask


def _pool(outputs: torch.Tensor, real: torch.Tensor) -> torch.Tensor:
    """``sum_t w_t h_t / sum_t w_t`` for checked weights ``real`` (zero at padding)."""
    alpha = real / real.sum(-1, keepdim=True)  # (B, T), each row sums to 1
    return torch.einsum("bt,bth->bh", alpha, outputs)  # (B, H)


def pool(outputs, weights, mask=None) -> torch.Tensor:
    """Pool token outputs ``(B, T, H)`` with weights ``(B, T)`` into ``(B, H)``: ``sum_t w_t h_t / sum_t w_t``.

    Only positions where ``mask`` ``(B, T)`` is True count (padding is dropped, whatever its weight), and the
    weights are renormalised over them, so uniform weights give the mean of the real tokens and one-hot
    weights that token's output. Weights must be non-negative with some weight on a real token. The pooling
    of Wiegreffe & Pinter's diagnostic model (2019, section 4; notebook 04, section 7).
    """
    real, _ = _check_weights(outputs, weights, mask)
    return _pool(outputs, real)


# --------------------------------------------------------------------------------------------- the model

def _initial_layers(features: int, hidden: int, n_classes: int, learn_weights: bool):
    """The trained layers of a :class:`DiagnosticMLP`, drawn from torch's global generator in the model's order
    (token layer, score if learned, classifier): the one place both the model and the batched training
    initialise them, so that a seed gives the same start either way."""
    token_layer = nn.Linear(features, hidden)  # h_t = tanh(W e_t + b), one token at a time
    score = nn.Linear(hidden, 1) if learn_weights else None  # alpha_t = softmax_t(v . h_t)
    return token_layer, score, nn.Linear(hidden, n_classes)


class DiagnosticMLP(nn.Module):
    """Wiegreffe & Pinter's diagnostic model (2019, section 4): a frozen embedding, one tanh layer per token
    (no context), pooling with given weights (or with weights it learns, ``learn_weights=True``), a linear
    classifier. Notebook 04, section 7.

    ``embedding``: the ``(V, d)`` word-embedding matrix (kept frozen). ``forward(ids, mask, weights)`` takes
    token ids ``(B, T)``, the mask of the tokens to pool ``(B, T)`` and, unless the weights are learned, the
    pooling weights ``(B, T)``; it returns logits ``(B, n_classes)``.
    """

    def __init__(self, embedding: torch.Tensor, hidden: int = 64, n_classes: int = 2, learn_weights: bool = False):
        super().__init__()
        embedding = torch.as_tensor(embedding)
        if embedding.ndim != 2 or not embedding.is_floating_point():
            raise ValueError(f"embedding must be a (vocabulary, features) float matrix, got "
                             f"{embedding.dtype} {tuple(embedding.shape)}")
        hidden = check_int(hidden, "hidden", 1)
        n_classes = check_int(n_classes, "n_classes", 2)
        self.embedding = nn.Embedding.from_pretrained(embedding.detach().float().cpu(), freeze=True)
        self.token_layer, self.score, self.classifier = _initial_layers(embedding.shape[1], hidden, n_classes,
                                                                        learn_weights)

    @property
    def learn_weights(self) -> bool:
        return self.score is not None

    def token_outputs(self, ids: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """``h_t`` ``(B, T, hidden)``, each from its own token only; with a ``mask``, computed at its True
        positions alone and 0 elsewhere (the same numbers, without the work on padding)."""
        if mask is None:
            return torch.tanh(self.token_layer(self.embedding(ids)))  # (B, T, hidden)
        vocab, where = torch.unique(ids[mask], return_inverse=True)  # each distinct token once: (U,), (n_real,)
        h = torch.zeros(*ids.shape, self.token_layer.out_features)  # (B, T, hidden)
        h[mask] = torch.tanh(self.token_layer(self.embedding(vocab)))[where]  # (U, hidden) -> (n_real, hidden)
        return h

    @torch.no_grad()
    def weights(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """The learned weights ``(B, T)``: a softmax of ``v . h_t`` over the masked-in tokens (for reading)."""
        if self.score is None:
            raise ValueError("this diagnostic pools with given weights (learn_weights=False); it has none of its own")
        ids, mask = _check_ids(ids, mask, self.embedding.num_embeddings)
        s = self.score(self.token_outputs(ids, mask)).squeeze(-1)  # (B, T)
        return torch.softmax(s.masked_fill(~mask.bool(), float("-inf")), dim=-1)  # (B, T)

    def forward(self, ids: torch.Tensor, mask: torch.Tensor, weights=None) -> torch.Tensor:
        ids, mask = _check_ids(ids, mask, self.embedding.num_embeddings)
        return self._logits(ids, mask, weights, check=True)

    def _logits(self, ids: torch.Tensor, mask: torch.Tensor, weights, check: bool) -> torch.Tensor:
        """The forward pass; ``check=False`` trusts weights that were checked already (the training loop)."""
        h = self.token_outputs(ids, mask)  # (B, T, hidden), 0 at positions the mask leaves out
        if self.score is not None:
            if weights is not None:
                raise ValueError("this diagnostic learns its own weights (learn_weights=True); call it with "
                                 "weights=None")
            s = self.score(h).squeeze(-1).masked_fill(~mask, float("-inf"))  # (B, T)
            if bool((~mask.any(-1)).any()):
                raise ValueError(f"sequence {int((~mask.any(-1)).nonzero()[0])} has no token to pool (its mask is "
                                 f"all False)")
            real = torch.softmax(s, dim=-1)  # (B, T), zero at masked positions
        else:
            if weights is None:
                raise ValueError("weights is None: pass the pooling weights (batch, tokens), e.g. mask.float() "
                                 "for uniform, or build the diagnostic with learn_weights=True")
            real = _check_weights(h, weights, mask)[0] if check else weights
        return self.classifier(_pool(h, real))  # (B, n_classes)


def _check_ids(ids, mask, vocabulary: int) -> tuple[torch.Tensor, torch.Tensor]:
    ids, mask = torch.as_tensor(ids), torch.as_tensor(mask)
    if ids.ndim != 2 or ids.is_floating_point():
        raise ValueError(f"ids must be a (batch, tokens) tensor of token ids, got {ids.dtype} {tuple(ids.shape)}")
    if tuple(mask.shape) != tuple(ids.shape):
        raise ValueError(f"mask must have the shape of ids {tuple(ids.shape)} (True at the tokens to pool), got "
                         f"{tuple(mask.shape)}")
    if ids.numel() and (int(ids.min()) < 0 or int(ids.max()) >= vocabulary):
        raise ValueError(f"ids must lie in 0..{vocabulary - 1} (the embedding's rows), got {int(ids.min())}.."
                         f"{int(ids.max())}: use the tokenizer that belongs to the embedding")
    return ids.long().cpu(), mask.bool().cpu()


def train_diagnostic(embedding, ids, mask, labels, weights=None, learn_weights: bool = False, seed: int = 0,
                     hidden: int = 64, epochs: int = 8, lr: float = 3e-3, batch_size: int = 64,
                     n_classes: int | None = None) -> DiagnosticMLP:
    """Train a :class:`DiagnosticMLP` on ``(ids, mask, labels)`` with fixed pooling ``weights`` ``(N, T)`` (or
    learned ones), by Adam on the cross-entropy, in shuffled mini-batches. ``seed`` fixes the initial
    weights and the batch order (torch's global seed is left as it was). Returns the model in eval mode.
    Wiegreffe & Pinter 2019, section 4; notebook 04, section 7.
    """
    seed = check_int(seed, "seed", 0)
    epochs = check_int(epochs, "epochs", 1)
    batch_size = check_int(batch_size, "batch_size", 1)
    lr = check_float(lr, "lr", 0.0, strict_min=True)
    ids, mask = _check_ids(ids, mask, torch.as_tensor(embedding).shape[0] if torch.as_tensor(embedding).ndim == 2
                           else 1 << 62)
    labels = _class_labels(labels)
    if tuple(labels.shape) != (ids.shape[0],):
        raise ValueError(f"labels must have one class per sequence, shape ({ids.shape[0]},), got {tuple(labels.shape)}")
    if ids.shape[0] == 0:
        raise ValueError("ids holds no sequence; pass at least one training sentence")
    n_classes = max(int(labels.max()) + 1, 2) if n_classes is None else check_int(n_classes, "n_classes", 2)
    if int(labels.min()) < 0 or int(labels.max()) >= n_classes:
        raise ValueError(f"labels must be classes 0..{n_classes - 1}, got {int(labels.min())}..{int(labels.max())}")
    if learn_weights and weights is not None:
        raise ValueError("pass weights=None with learn_weights=True: the diagnostic learns its own weights")
    if not learn_weights:
        if weights is None:
            raise ValueError("weights is None: pass the pooling weights (N, tokens), or learn_weights=True")
        dummy = torch.zeros(ids.shape[0], ids.shape[1], 1)  # checks the weights once, for the whole set
        weights, _ = _check_weights(dummy, weights, mask)
    with torch.random.fork_rng(devices=[]):  # the seed below leaves torch's global generator as it was
        torch.manual_seed(seed)
        mlp = DiagnosticMLP(embedding, hidden=hidden, n_classes=n_classes, learn_weights=learn_weights)
    order = torch.Generator().manual_seed(seed)
    trainable = [p for p in mlp.parameters() if p.requires_grad]
    opt = torch.optim.Adam(trainable, lr=lr)
    loss_fn = nn.CrossEntropyLoss()
    mlp.train()
    with method_threads():
        for _ in range(epochs):
            for batch in torch.randperm(ids.shape[0], generator=order).split(batch_size):
                logits = mlp._logits(ids[batch], mask[batch], None if learn_weights else weights[batch],
                                     check=False)  # (b, C); the weights were checked above, for every batch
                loss = loss_fn(logits, labels[batch])
                opt.zero_grad()
                loss.backward()
                opt.step()
    return mlp.eval()


def evaluate_diagnostic(mlp: DiagnosticMLP, ids, mask, labels, weights=None) -> dict[str, float]:
    """Accuracy and macro-F1 (the mean over the classes of each class's F1) of a trained diagnostic."""
    with torch.no_grad():
        pred = mlp(ids, mask, weights).argmax(-1).numpy()  # (N,)
    return _scores(pred, _class_labels(labels).numpy(), mlp.classifier.out_features)


def _class_labels(labels) -> torch.Tensor:
    """Class indices as a long tensor; fractional numbers (probabilities, scores) are refused, not truncated to 0."""
    labels = torch.as_tensor(labels).cpu()
    if (labels.is_floating_point() or labels.is_complex()) and labels.numel():
        frac = ~torch.isfinite(labels) | (labels != labels.round())
        if bool(frac.any()):
            i = int(frac.flatten().nonzero()[0])
            raise ValueError(f"labels must be class indices 0, 1, ..., got {float(labels.flatten()[i]):g} at index "
                             f"{i}: a probability or score would be truncated to a class; pass classes, e.g. "
                             f"(p > 0.5).long() for probabilities of class 1")
    return labels.long()


def _scores(pred: np.ndarray, y: np.ndarray, n_classes: int) -> dict[str, float]:
    f1 = []
    for c in range(n_classes):
        tp, fp, fn = np.sum((pred == c) & (y == c)), np.sum((pred == c) & (y != c)), np.sum((pred != c) & (y == c))
        f1.append(2 * tp / (2 * tp + fp + fn) if tp + fp + fn else 1.0)
    return {"accuracy": float(np.mean(pred == y)), "f1": float(np.mean(f1))}


class _Stacked:
    """Every (seed, weighting) diagnostic of :func:`run_diagnostic` as one set of stacked parameters, trained
    together: seed ``s`` and weighting ``m`` start from the weights :func:`train_diagnostic` gives them (the
    same draws of the same seed) and see the same mini-batches in the same order, with one Adam over the
    stacked tensors (Adam works element by element, and each model's loss depends on its own slice only).
    The numbers equal one :func:`train_diagnostic` per pair up to the order of float sums in the batched
    matrix products."""

    def __init__(self, features: int, seeds, learned, hidden: int, n_classes: int):
        w, b, u, ub, v, vb = [], [], [], [], [], []
        self.learned = [j for j, flag in enumerate(learned) if flag]  # at most one slot learns its weights
        for s in seeds:
            for flag in learned:
                with torch.random.fork_rng(devices=[]):
                    torch.manual_seed(s)
                    token_layer, score, classifier = _initial_layers(features, hidden, n_classes, flag)
                w.append(token_layer.weight.detach().T)
                b.append(token_layer.bias.detach())
                u.append(classifier.weight.detach())
                ub.append(classifier.bias.detach())
                if score is not None:
                    v.append(score.weight.detach()[0])
                    vb.append(score.bias.detach())
        S, M = len(seeds), len(learned)
        params = [  # the token layers as (S, d, M*H): one matrix product per seed for all its weightings
            torch.stack(w).view(S, M, features, hidden).permute(0, 2, 1, 3).reshape(S, features, M * hidden),
            torch.stack(b).view(S, 1, M * hidden), torch.stack(u).view(S, M, n_classes, hidden),
            torch.stack(ub).view(S, M, 1, n_classes)]
        if self.learned:
            params += [torch.stack(v).view(S, hidden), torch.stack(vb).view(S, 1, 1)]
        self.params = [p.clone().contiguous().requires_grad_(True) for p in params]
        self.S, self.M, self.H = S, M, hidden

    def logits(self, embedding, ids, mask, alpha):
        """Logits ``(S, M, b, C)``: ``ids``/``mask`` ``(S, b, T)``, one batch per seed; ``alpha`` ``(S, M, b, T)``
        the normalised fixed weights (zero outside the mask; any value in the learned slot).

        Each seed's distinct tokens go through the token layer once, ``h`` ``(S, M, U, H)``; the pooling
        ``sum_t alpha_t h_t`` is then ``A h`` with ``A[b, u]`` the weight of token ``u`` in sentence ``b``
        (summed where it occurs twice), so no ``(b, T, H)`` tensor is formed per model.
        """
        w, b, u, ub = self.params[:4]
        S, M, H = self.S, self.M, self.H
        rows = []
        index = torch.zeros(ids.shape, dtype=torch.long)  # (S, b, T): each token's row among its seed's distinct ones
        for s in range(S):
            vocab, where = torch.unique(ids[s][mask[s]], return_inverse=True)  # (U_s,), (n_real,)
            rows.append(embedding[vocab])
            index[s][mask[s]] = where
        width = max(len(r) for r in rows)
        e = torch.zeros(S, width, embedding.shape[1])  # (S, U, d), zero rows past a seed's own U_s
        for s, r in enumerate(rows):
            e[s, :len(r)] = r
        h = torch.tanh(torch.baddbmm(b, e, w)).view(S, width, M, H).transpose(1, 2)  # (S, M, U, H)
        spread = index[:, None].expand(alpha.shape)  # (S, M, b, T)
        weight = torch.zeros(*alpha.shape[:3], width).scatter_add_(-1, spread, alpha)  # (S, M, b, U)
        c = torch.matmul(weight, h)  # (S, M, b, H)
        if self.learned:
            v, vb = self.params[4:]
            j = self.learned[0]
            score = torch.einsum("suh,sh->su", h[:, j], v)[:, None, :].expand(-1, ids.shape[1], -1)  # (S, b, U)
            score = torch.gather(score, -1, index) + vb  # (S, b, T)
            learned = torch.softmax(score.masked_fill(~mask, float("-inf")), dim=-1)  # (S, b, T)
            weight = torch.zeros(*learned.shape[:2], width).scatter_add(-1, index, learned)  # (S, b, U)
            c = torch.cat([c[:, :j], torch.matmul(weight, h[:, j])[:, None], c[:, j + 1:]], dim=1)
        return torch.einsum("smbh,smch->smbc", c, u) + ub  # (S, M, b, C)


def _train_stacked(embedding, train, test, weights: dict, seeds, hidden: int, epochs: int, lr: float,
                   batch_size: int, n_classes: int, progress: bool = False):
    """Train every (seed, weighting) diagnostic of :func:`run_diagnostic` at once (:class:`_Stacked`); their
    logits on ``test``, ``(seeds, weightings, N_test, C)``. ``weights[w]``: the (train, test) pooling weights
    of weighting ``w`` (``None`` for "learned")."""
    from tqdm.auto import tqdm

    names = tuple(weights)
    learned = [w == "learned" for w in names]
    for data in (train, test):
        if bool((~data.mask.any(-1)).any()):
            raise ValueError(f"sequence {int((~data.mask.any(-1)).nonzero()[0])} has no token to pool (its mask is "
                             f"all False)")
    embedding = embedding.detach().float().cpu()

    def fixed(k):  # (M, N, T): each weighting's weights over the mask, normalised as the pooling does
        out = []
        for w, flag in zip(names, learned, strict=True):
            data = (train, test)[k]
            if flag:
                out.append(torch.zeros(data.mask.shape))
                continue
            real, _ = _check_weights(torch.zeros(*data.mask.shape, 1), weights[w][k], data.mask)
            out.append(real / real.sum(-1, keepdim=True))
        return torch.stack(out)

    def last(mask):  # (N,): one past each sequence's last pooled token, to trim the padding of a batch
        return (mask * torch.arange(1, mask.shape[1] + 1)).amax(-1)

    stacked = _Stacked(embedding.shape[1], seeds, learned, hidden, n_classes)
    opt = torch.optim.Adam(stacked.params, lr=lr)
    train_alpha, train_end = fixed(0), last(train.mask)
    orders = [torch.Generator().manual_seed(s) for s in seeds]
    S, M, N = len(seeds), len(names), len(train)
    with method_threads():
        for _ in tqdm(range(epochs), desc="diagnostic", disable=not progress):
            for batches in zip(*(torch.randperm(N, generator=g).split(batch_size) for g in orders), strict=True):
                idx = torch.stack(batches)  # (S, b): each seed's own mini-batch, of the same size
                width = int(train_end[idx].max())
                alpha = train_alpha[:, idx, :width].transpose(0, 1)  # (S, M, b, T)
                logits = stacked.logits(embedding, train.ids[idx, :width], train.mask[idx, :width], alpha)
                y = train.labels[idx][:, None, :].expand(S, M, idx.shape[1])  # (S, M, b)
                loss = nn.functional.cross_entropy(logits.reshape(-1, n_classes), y.reshape(-1), reduction="none")
                # each model's mean over its batch; summed, every model still gets its own gradient
                loss = loss.view(S, M, -1).mean(-1).sum()
                opt.zero_grad()
                loss.backward()
                opt.step()
        test_alpha, test_end = fixed(1), last(test.mask)
        out = torch.zeros(S, M, len(test), n_classes)
        with torch.no_grad():
            for rows in torch.arange(len(test)).split(batch_size):
                idx = rows.expand(S, -1)  # every seed scores the same sentences
                width = int(test_end[rows].max())
                alpha = test_alpha[:, idx, :width].transpose(0, 1)
                out[:, :, rows] = stacked.logits(embedding, test.ids[idx, :width], test.mask[idx, :width], alpha)
    return out


# ------------------------------------------------------------------------------- the model's attention

@dataclass
class DiagnosticData:
    """Sentences ready for the diagnostic: token ids ``(N, T)`` padded, ``mask`` ``(N, T)`` True at the word
    tokens (not [CLS], [SEP] or padding), ``labels`` ``(N,)``, the model's ``attention`` ``(N, T)`` (the chosen
    layer's [CLS] row, mean of the heads, renormalised over the word tokens; 0 elsewhere) and the model's own
    predictions ``predicted`` ``(N,)``. All on the CPU."""

    texts: list[str]
    ids: torch.Tensor
    mask: torch.Tensor
    labels: torch.Tensor
    attention: torch.Tensor
    predicted: torch.Tensor
    layer: int

    def __len__(self) -> int:
        return len(self.texts)

    def weights(self, weighting: str) -> torch.Tensor | None:
        """The pooling weights ``(N, T)`` of one of :data:`WEIGHTINGS` (``None`` for "learned")."""
        check_choice(weighting, "weighting", WEIGHTINGS)
        if weighting == "uniform":
            return self.mask.float()
        return self.attention if weighting == "model attention" else None


def diagnostic_data(model, tokenizer, pairs, layer: int = -1, batch_size: int = 64, progress: bool = False,
                    cache: bool = False) -> DiagnosticData:
    """Tokenize ``(sentence, label)`` pairs and read the model's attention for each, in one batched forward pass.

    The attention is the ``layer``'s [CLS] row, mean of the heads: in the last layer (the default) it is the
    one distribution over the tokens that forms what the classification head reads, the transformer's
    counterpart of the single attention layer of Wiegreffe & Pinter's LSTMs. It is renormalised over the
    word tokens (the pooling leaves [CLS] and [SEP] out). Sentences of similar length share a batch;
    padding changes nothing (the mask drops it). Notebook 04, section 7.

    ``cache=True`` keeps the result on disk in ``xaikit.cache_dir()/diagnostics/`` (:mod:`xaikit.policies`),
    keyed by the sentences, labels, layer, tokenizer and a fingerprint of every weight of the model (so a
    model trained further, or cast to another dtype, reads its own attention again): thousands of
    sentences cost half a minute of forward passes on a busy CPU, a cached set a fraction of a second.
    """
    if cache:
        return _cached(model, tokenizer, pairs, layer, batch_size, progress)
    return _diagnostic_data(model, tokenizer, pairs, layer, batch_size, progress)


def _fingerprint(model) -> str:
    """A fingerprint of the weights: SHA-256 of every byte of every parameter and buffer, with names, shapes
    and dtypes (one edited value changes it; half a second for MiniLM's 90 MB)."""
    import hashlib

    h = hashlib.sha256()
    with torch.no_grad():
        for name, t in list(model.named_parameters()) + list(model.named_buffers()):
            t = t.detach().cpu().contiguous()
            h.update(f"{name}|{tuple(t.shape)}|{t.dtype}|".encode())
            h.update(t.view(torch.uint8).numpy().tobytes() if t.numel() else b"")
    return h.hexdigest()


def _cache_key(model, tokenizer, pairs, layer: int, prints=None) -> str:
    """The attention cache's key; ``prints``: the model's :func:`_fingerprint` if taken already (a second
    set of sentences for the same weights need not hash every weight again)."""
    import hashlib
    import json

    prints = _fingerprint(model) if prints is None else prints
    what = {"model": str(getattr(model.config, "_name_or_path", "")), "dtype": str(model.dtype), "layer": layer,
            "weights": prints, "tokenizer": [str(getattr(tokenizer, "name_or_path", "")), len(tokenizer)],
            "pairs": [[t, int(y)] for t, y in pairs], "version": 2}
    return hashlib.sha256(json.dumps(what).encode()).hexdigest()[:24]


def _cached(model, tokenizer, pairs, layer, batch_size, progress, prints=None) -> DiagnosticData:
    """:func:`_diagnostic_data` through the model cache's safety net (:func:`xaikit.models.cache.ensure`): a
    folder per key with a checksum manifest, built under a lock in a temporary folder renamed into place, so a
    half-written or damaged file is detected and rebuilt, never loaded."""
    from xaikit._config import cache_dir
    from xaikit.models import cache

    check_model(model, tokenizer, "diagnostic_data")
    layer = check_layer(model, layer)
    folder = cache_dir() / "diagnostics" / f"attention-{_cache_key(model, tokenizer, _check_pairs(pairs), layer, prints)}"
    built: list[DiagnosticData] = []

    def build(tmp):
        data = _diagnostic_data(model, tokenizer, pairs, layer, batch_size, progress)
        torch.save({"texts": data.texts, "ids": data.ids.int(), "mask": data.mask, "labels": data.labels,
                    "attention": data.attention, "predicted": data.predicted, "layer": data.layer},
                   tmp / _ATTENTION_FILE)
        built.append(data)

    cache.ensure(folder, build, required=(_ATTENTION_FILE,), what="attention cache", progress=progress)
    if built:
        return built[0]
    d = torch.load(folder / _ATTENTION_FILE, weights_only=True)
    return DiagnosticData(d["texts"], d["ids"].long(), d["mask"], d["labels"], d["attention"], d["predicted"],
                          d["layer"])


_ATTENTION_FILE = "attention.pt"


def _check_pairs(pairs) -> list[tuple[str, int]]:
    if isinstance(pairs, (str, tuple)) or not isinstance(pairs, list) or not pairs:
        raise ValueError("pairs must be a non-empty list of (sentence, label) pairs, e.g. "
                         "xaikit.models.sentiment.load_movie_reviews('test')")
    if not all(isinstance(p, (tuple, list)) and len(p) == 2 for p in pairs):
        raise ValueError("pairs must hold (sentence, label) pairs; got an item that is not a pair")
    texts = check_texts([p[0] for p in pairs], "pairs' sentences")
    return [(t, check_int(p[1], "label", 0)) for t, p in zip(texts, pairs, strict=True)]


def _diagnostic_data(model, tokenizer, pairs, layer, batch_size, progress) -> DiagnosticData:
    from tqdm.auto import tqdm

    pairs = _check_pairs(pairs)
    texts = [t for t, _ in pairs]
    labels = torch.tensor([y for _, y in pairs])  # (N,)
    check_model(model, tokenizer, "diagnostic_data")
    layer = check_layer(model, layer)
    batch_size = check_int(batch_size, "batch_size", 1)
    limit = max_tokens(model, tokenizer)
    special = torch.tensor(sorted(set(getattr(tokenizer, "all_special_ids", []) or [])), dtype=torch.long)
    encoded = tokenizer(texts, truncation=True, max_length=limit)["input_ids"]
    T = max(len(e) for e in encoded)
    N = len(texts)
    pad = getattr(tokenizer, "pad_token_id", None) or 0
    ids = torch.full((N, T), int(pad), dtype=torch.long)  # (N, T)
    attention = torch.zeros(N, T)  # (N, T)
    predicted = torch.zeros(N, dtype=torch.long)  # (N,)
    order = sorted(range(N), key=lambda i: len(encoded[i]))  # similar lengths together: little padding
    batches = [order[s:s + batch_size] for s in range(0, N, batch_size)]
    with method_threads(), torch.no_grad():
        for rows in tqdm(batches, desc="attention", disable=not progress):
            width = max(len(encoded[i]) for i in rows)
            b_ids = torch.full((len(rows), width), int(pad), dtype=torch.long)  # (b, width)
            b_mask = torch.zeros(len(rows), width, dtype=torch.long)  # (b, width)
            for j, i in enumerate(rows):
                b_ids[j, :len(encoded[i])] = torch.tensor(encoded[i])
                b_mask[j, :len(encoded[i])] = 1
            inputs = {"input_ids": b_ids, "attention_mask": b_mask, "token_type_ids": torch.zeros_like(b_ids)}
            if "token_type_ids" not in getattr(tokenizer, "model_input_names", ("token_type_ids",)):
                inputs.pop("token_type_ids")
            out = model(**inputs_to_model(model, inputs), output_attentions=True)
            a = to_cpu(out.attentions[layer]).float()[:, :, 0, :].mean(1)  # (b, width): [CLS] row, mean of heads
            ids[rows, :width] = b_ids
            attention[rows, :width] = a
            predicted[rows] = to_cpu(out.logits).argmax(-1)
    mask = (ids.unsqueeze(-1) != special).all(-1) if special.numel() else torch.ones_like(ids, dtype=torch.bool)
    mask &= torch.arange(T) < torch.tensor([len(e) for e in encoded])[:, None]  # (N, T): word tokens only
    attention = torch.where(mask, attention, torch.zeros_like(attention))
    total = attention.sum(-1, keepdim=True)
    attention = torch.where(total > 0, attention / total.clamp_min(1e-30), mask.float() / mask.sum(-1, keepdim=True).clamp_min(1))
    return DiagnosticData(texts, ids, mask, labels, attention, predicted, layer)


# ---------------------------------------------------------------------------------------- the comparison

@dataclass
class DiagnosticResult:
    """Held-out accuracy and macro-F1 of the diagnostic per training seed (rows) and weighting (columns,
    :data:`WEIGHTINGS`), and the transformer's own accuracy on the same sentences. Notebook 04, section 7."""

    weightings: tuple[str, ...]
    seeds: tuple[int, ...]
    accuracy: np.ndarray  # (seeds, weightings)
    f1: np.ndarray  # (seeds, weightings)
    model_accuracy: float
    layer: int
    n_train: int
    n_test: int
    seconds: float

    def column(self, weighting: str, metric: str = "accuracy") -> np.ndarray:
        """One weighting's scores, one per seed."""
        check_choice(weighting, "weighting", self.weightings)
        check_choice(metric, "metric", ("accuracy", "f1"))
        return getattr(self, metric)[:, self.weightings.index(weighting)]

    def gain(self, a: str = "model attention", b: str = "uniform", metric: str = "accuracy") -> np.ndarray:
        """Per seed, how much weighting ``a`` beats ``b`` (same seed, same data)."""
        return self.column(a, metric) - self.column(b, metric)

    def table(self) -> str:
        """The per-seed table as text, one row per seed, then the mean."""
        width = [max(len(w) + 6, 10) for w in self.weightings]
        head = f"{'seed':>6} " + "".join(f"{w + ' acc':>{n}}{'F1':>7}" for w, n in zip(self.weightings, width, strict=True))
        rows = [head]
        for i, s in enumerate(self.seeds):
            rows.append(f"{s:>6} " + "".join(f"{self.accuracy[i, j]:{n}.3f}{self.f1[i, j]:7.3f}"
                                            for j, n in enumerate(width)))
        rows.append(f"{'mean':>6} " + "".join(f"{self.accuracy[:, j].mean():{n}.3f}{self.f1[:, j].mean():7.3f}"
                                              for j, n in enumerate(width)))
        return "\n".join(rows)

    def plot(self, ax, metric: str = "accuracy"):
        """One dot per seed for each weighting, the seeds joined by thin lines, the transformer's own accuracy
        and chance as reference lines."""
        from xaikit.plotting import OKABE_ITO

        values = getattr(self, check_choice(metric, "metric", ("accuracy", "f1")))
        x = np.arange(len(self.weightings))
        for i in range(len(self.seeds)):
            ax.plot(x, values[i], color="0.75", lw=0.8, zorder=1)
            for j in x:
                ax.scatter(j, values[i, j], color=OKABE_ITO[j % len(OKABE_ITO)], s=30, zorder=2,
                           label=self.weightings[j] if i == 0 else None)
        if metric == "accuracy":
            ax.axhline(self.model_accuracy, color=OKABE_ITO[7], ls="--", lw=1,
                       label=f"the transformer itself ({self.model_accuracy:.2f})")
        ax.axhline(0.5, color="0.5", ls=":", lw=1, label="chance")
        ax.set_xticks(x, [f"{w}\n(mean {values[:, j].mean():.3f})" for j, w in enumerate(self.weightings)])
        ax.set(ylabel=f"held-out {metric}", xlim=(-0.5, len(x) - 0.5),
               title=f"Diagnostic model, {len(self.seeds)} training seeds (Wiegreffe & Pinter 2019)")
        ax.legend(fontsize="small", loc="lower right")
        return ax


def run_diagnostic(model, tokenizer, train_pairs, test_pairs, seeds=(0, 1, 2), weightings=WEIGHTINGS,
                   layer: int = -1, hidden: int = 64, epochs: int = 8, lr: float = 3e-3, batch_size: int = 64,
                   progress: bool = True, cache: bool = True, controls: dict | None = None) -> DiagnosticResult:
    """Wiegreffe & Pinter's diagnostic (2019, section 4, Table 3) on a transformer classifier: train the
    context-free :class:`DiagnosticMLP` on ``train_pairs`` with each weighting, once per seed, and score it on
    ``test_pairs``. The model's attention is read once (:func:`diagnostic_data`, kept on disk with
    ``cache=True``); every seed and weighting trains on the same data. Notebook 04, section 7.

    ``controls``: other models that share the tokenizer, by name (e.g. ``{"pretrained": encoder}``, the
    encoder before fine-tuning); each adds the weighting ``"<name> attention"``, read the same way.
    """
    seeds = tuple(check_int(s, "seeds[i]", 0) for s in (seeds if isinstance(seeds, (list, tuple)) else [seeds]))
    hidden, epochs = check_int(hidden, "hidden", 1), check_int(epochs, "epochs", 1)
    batch_size, lr = check_int(batch_size, "batch_size", 1), check_float(lr, "lr", 0.0, strict_min=True)
    if not seeds:
        raise ValueError("seeds is empty; pass at least one training seed, e.g. seeds=(0, 1, 2)")
    weightings = tuple(check_choice(w, "weightings[i]", WEIGHTINGS) for w in weightings)
    controls = dict(controls or {})
    if not all(isinstance(k, str) and k for k in controls):
        raise ValueError("controls must map a name (a str, e.g. 'pretrained') to a model that shares the tokenizer")
    for name, other in controls.items():  # before any forward pass, so the error names the entry
        if not isinstance(other, torch.nn.Module) or not callable(getattr(other, "get_input_embeddings", None)):
            raise TypeError(f"controls[{name!r}] must be a transformers model that shares the tokenizer (e.g. "
                            f"xaikit.models.sentiment.pretrained_encoder()); got {type(other).__name__}")
    start = time.perf_counter()

    prints = {}  # the train and test sets of one model share its weights' fingerprint, taken once

    def data(m, pairs):
        if not cache:
            return diagnostic_data(m, tokenizer, pairs, layer, progress=progress)
        check_model(m, tokenizer, "diagnostic_data")
        if id(m) not in prints:
            prints[id(m)] = _fingerprint(m)
        return _cached(m, tokenizer, pairs, layer, 64, progress, prints[id(m)])

    train, test = data(model, train_pairs), data(model, test_pairs)
    weights = {w: (train.weights(w), test.weights(w)) for w in weightings}
    for name, other in controls.items():
        a, b = data(other, train_pairs), data(other, test_pairs)
        if not (torch.equal(a.ids, train.ids) and torch.equal(b.ids, test.ids)):
            raise ValueError(f"controls[{name!r}] reads other token ids: pass models that share the tokenizer")
        weights[f"{name} attention"] = (a.attention, b.attention)
    weightings = tuple(weights)
    embedding = model.get_input_embeddings().weight
    n_classes = int(model.config.num_labels)
    for name, data in (("train_pairs", train), ("test_pairs", test)):
        if int(data.labels.max()) >= n_classes:  # the model's accuracy on them would mean nothing
            raise ValueError(f"{name} hold label {int(data.labels.max())}, but the model has {n_classes} classes "
                             f"(0..{n_classes - 1}); pass labels the model predicts, e.g. "
                             f"xaikit.models.sentiment.load_movie_reviews('test')")
    # every (seed, weighting) pair at once: the same numbers as train_diagnostic and evaluate_diagnostic per
    # pair (tests/test_diagnostics.py compares them), in a fraction of the time
    logits = _train_stacked(embedding, train, test, weights, seeds, hidden, epochs, lr, batch_size, n_classes,
                            progress)
    acc, f1 = np.zeros((len(seeds), len(weightings))), np.zeros((len(seeds), len(weightings)))
    for i in range(len(seeds)):
        for j in range(len(weightings)):
            scores = _scores(logits[i, j].argmax(-1).numpy(), test.labels.numpy(), n_classes)
            acc[i, j], f1[i, j] = scores["accuracy"], scores["f1"]
    model_acc = float((test.predicted == test.labels).float().mean())
    return DiagnosticResult(weightings, seeds, acc, f1, model_acc, train.layer, len(train), len(test),
                            time.perf_counter() - start)


# ------------------------------------------------------------------------------------- notebook 04's sets

def notebook_sentences(fast: bool | None = None) -> tuple[list[tuple[str, int]], list[tuple[str, int]]]:
    """Notebook 04 section 7's ``(train_pairs, test_pairs)``: training sentences drawn once with
    ``random.Random(0)`` (the same for every diagnostic seed) and the first held-out movie sentences;
    2,000 and 500, or 1,000 and 400 in fast mode (``fast=None``: :func:`xaikit.fast_mode`)."""
    import random

    from xaikit._config import fast_mode
    from xaikit.models.sentiment import load_movie_reviews, training_pairs

    fast = fast_mode() if fast is None else bool(fast)
    n_train, n_test = (1000, 400) if fast else (2000, 500)
    train = random.Random(0).sample(training_pairs(progress=False), n_train)
    return train, load_movie_reviews("test", progress=False)[:n_test]


def warm_notebook_cache(progress: bool = True, fast: bool | None = None, seed: int | None = None):
    """Read the attention that notebook 04's section 7 needs (the embedded model's and the pretrained
    encoder's, on :func:`notebook_sentences`) into the disk cache, so the notebook's first run after
    ``python -m xaikit prepare`` trains its diagnostics at once instead of spending half a minute on forward
    passes. ``seed``: the training seed of the embedded model (default: the cache's). Called by ``prepare``;
    returns the cache folder."""
    import os

    from xaikit._config import SEED_ENV, cache_dir
    from xaikit.models import load_sentiment
    from xaikit.models.sentiment import pretrained_encoder

    saved = os.environ.get(SEED_ENV)
    if seed is not None:  # prepare --seed N records N only at its end
        os.environ[SEED_ENV] = str(check_int(seed, "seed", 0))
    try:
        model, tokenizer = load_sentiment("embedded", cache=False)
    finally:
        if saved is None:
            os.environ.pop(SEED_ENV, None)
        else:
            os.environ[SEED_ENV] = saved
    train, test = notebook_sentences(fast)
    for m in (model, pretrained_encoder()):
        prints = _fingerprint(m)
        for pairs in (train, test):
            _cached(m, tokenizer, pairs, -1, 64, progress, prints)
    return cache_dir() / "diagnostics"
