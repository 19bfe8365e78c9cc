"""Wiegreffe & Pinter's diagnostic model (2019, "Attention is not not Explanation", EMNLP, section 4): a
classifier that sees every token on its own and pools the tokens with weights imposed from outside
(notebook 06, section 4; the experiment is :mod:`xaikit.lab.diagnostics`).

* **token encoder** (non-contextual): the classifier's own word embeddings e_t, frozen, then one trained
  layer h_t = tanh(W e_t + b) per token;
* **pooling** with weights alpha over the word tokens: c = sum_t alpha_t h_t / sum_t alpha_t (uniform, the
  model's attention, or learned: alpha = softmax_t(v . h_t));
* **classifier**: logits = U c + u.

:func:`pool` is the pooling (uniform weights give the mean, one-hot weights one token's output),
:class:`DiagnosticMLP` the model, :func:`train_diagnostic` its seeded training and
:func:`evaluate_diagnostic` its scores; every (seed, weighting) model of an experiment trains at once,
stacked, to the same numbers.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from xaikit._validate import bool_flags, check_float, check_int
from xaikit.policies import method_threads

__all__ = ["WEIGHTINGS", "pool", "DiagnosticMLP", "train_diagnostic", "evaluate_diagnostic"]

#: the pooling weights compared by :func:`xaikit.lab.diagnostics.run_diagnostic`, in Wiegreffe &
#: Pinter's order (their Table 3: uniform, trained MLP, the base model's attention).
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


def pool(outputs: torch.Tensor, weights: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
    """Pool token outputs ``(B, T, H)`` with weights ``(B, T)`` into ``(B, H)``: ``sum_t w_t h_t / sum_t w_t``.

    Only positions where ``mask`` ``(B, T)`` is True count (padding is dropped, whatever its weight), and the
    weights are renormalised over them, so uniform weights give the mean of the real tokens and one-hot
    weights that token's output. Weights must be non-negative with some weight on a real token. The pooling
    of Wiegreffe & Pinter's diagnostic model (2019, section 4; notebook 06, section 4).
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
    classifier. Notebook 06, section 4.

    ``embedding``: the ``(V, d)`` word-embedding matrix (kept frozen). ``forward(ids, mask, weights)`` takes
    token ids ``(B, T)``, the mask of the tokens to pool ``(B, T)`` and, unless the weights are learned, the
    pooling weights ``(B, T)``; it returns logits ``(B, n_classes)``.
    """

    @bool_flags
    def __init__(self, embedding: torch.Tensor, hidden: int = 64, n_classes: int = 2,
                 learn_weights: bool = False) -> None:
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

    def forward(self, ids: torch.Tensor, mask: torch.Tensor,
                weights: torch.Tensor | None = None) -> torch.Tensor:
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


@bool_flags
def train_diagnostic(embedding: torch.Tensor, ids: torch.Tensor | np.ndarray, mask: torch.Tensor | np.ndarray,
                     labels: torch.Tensor | np.ndarray, weights: torch.Tensor | np.ndarray | None = None,
                     learn_weights: bool = False, seed: int = 0,
                     hidden: int = 64, epochs: int = 8, lr: float = 3e-3, batch_size: int = 64,
                     n_classes: int | None = None) -> DiagnosticMLP:
    """Train a :class:`DiagnosticMLP` on ``(ids, mask, labels)`` with fixed pooling ``weights`` ``(N, T)`` (or
    learned ones), by Adam on the cross-entropy, in shuffled mini-batches. ``seed`` fixes the initial
    weights and the batch order (torch's global seed is left as it was). Returns the model in eval mode.
    Wiegreffe & Pinter 2019, section 4; notebook 06, section 4.
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
    with method_threads(mlp):
        for _ in range(epochs):
            for batch in torch.randperm(ids.shape[0], generator=order).split(batch_size):
                logits = mlp._logits(ids[batch], mask[batch], None if learn_weights else weights[batch],
                                     check=False)  # (b, C); the weights were checked above, for every batch
                loss = loss_fn(logits, labels[batch])
                opt.zero_grad()
                loss.backward()
                opt.step()
    return mlp.eval()


def evaluate_diagnostic(mlp: DiagnosticMLP, ids: torch.Tensor | np.ndarray, mask: torch.Tensor | np.ndarray,
                        labels: torch.Tensor | np.ndarray,
                        weights: torch.Tensor | np.ndarray | None = None) -> dict[str, float]:
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
    with method_threads(heavy=True):  # every seed and weighting in one stacked model
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
