"""Positions in a sequence as attention sees them (notebook 03): the sinusoidal positional encoding of
Vaswani et al. (2017), "Attention Is All You Need", ``PE(pos, 2i) = sin(pos / 10000^(2i/d))``,
``PE(pos, 2i+1) = cos(pos / 10000^(2i/d))``; the linear map that shifts it by k positions, and the similarity of
two positions' encodings.
"""

from __future__ import annotations

import torch

from xaikit._validate import bool_flags, check_float, check_int
from xaikit.attention.scratch import _as_tensor

__all__ = ["sinusoidal_positional_encoding", "position_shift", "position_similarity"]


# -- positions ----------------------------------------------------------------------------------------------
def sinusoidal_positional_encoding(n_positions: int, d_model: int, base: float = 10000.0) -> torch.Tensor:
    """The fixed encoding of Vaswani et al. (2017): ``(n_positions, d_model)``, with
    ``PE[pos, 2i] = sin(pos / base^(2i/d))`` and ``PE[pos, 2i+1] = cos(pos / base^(2i/d))``."""
    n_positions = check_int(n_positions, "n_positions", 1)
    d_model = check_int(d_model, "d_model", 2, hint="use an even number such as 16 or 64")
    base = _check_base(base)
    pos = torch.arange(n_positions, dtype=torch.float64).unsqueeze(1)  # (P, 1)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)  # (ceil(d/2),)
    angle = pos / base ** (two_i / d_model)  # (P, ceil(d/2)); wavelengths from 2*pi to base*2*pi
    pe = torch.zeros(n_positions, d_model, dtype=torch.float64)  # (P, d)
    pe[:, 0::2] = torch.sin(angle)  # even features
    pe[:, 1::2] = torch.cos(angle[:, : d_model // 2])  # odd features
    return pe.to(torch.get_default_dtype())


def _check_base(base) -> float:
    """The wavelength base: > 1, so the wavelengths grow from 2 pi to base * 2 pi (0 or less gives NaN, 1 the same
    frequency in every column)."""
    return check_float(base, "base", 1.0, strict_min=True,
                       hint="base sets the longest wavelength, base * 2 pi; the usual value is 10000")


def position_shift(k: int, d_model: int, base: float = 10000.0) -> torch.Tensor:
    """The ``(d_model, d_model)`` matrix ``M_k`` with ``PE[p + k] = M_k @ PE[p]`` for *every* position ``p``
    (Vaswani et al. 2017, section 3.5: "for any fixed offset k, PE_{pos+k} can be represented as a linear
    function of PE_pos").

    Each (sin, cos) feature pair of frequency ``w_i = base^(-2i/d)`` turns by the angle ``k * w_i``:
    ``sin((p+k)w) = sin(pw)cos(kw) + cos(pw)sin(kw)`` and ``cos((p+k)w) = cos(pw)cos(kw) - sin(pw)sin(kw)``,
    so ``M_k`` is block diagonal with 2x2 rotations (``[[cos, sin], [-sin, cos]]``, since the features are
    stored as (sin, cos)), orthogonal, and ``M_a @ M_b = M_(a+b)``. It depends on the offset only: what
    Vaswani et al. hypothesised would let attention learn relative positions with one linear map. It holds
    for the bare sinusoidal table, not once token embeddings are added. Notebook 03.
    """
    k = check_int(k, "k", None)
    d_model = check_int(d_model, "d_model", 2)
    if d_model % 2:
        raise ValueError(f"d_model must be even for the shift to be a rotation, got {d_model}: the last sine "
                         "feature of an odd d_model has no cosine partner; use e.g. 64")
    base = _check_base(base)
    w = 1.0 / base ** (torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)  # (d/2,) frequencies
    c, s = torch.cos(k * w), torch.sin(k * w)  # (d/2,)
    m = torch.zeros(d_model, d_model, dtype=torch.float64)
    even, odd = torch.arange(0, d_model, 2), torch.arange(1, d_model, 2)
    m[even, even], m[even, odd] = c, s  # new sin =  cos(kw) sin + sin(kw) cos
    m[odd, even], m[odd, odd] = -s, c  # new cos = -sin(kw) sin + cos(kw) cos
    return m.to(torch.get_default_dtype())


@bool_flags
def position_similarity(pe: torch.Tensor, normalize: bool = True) -> torch.Tensor:
    """``(P, P)`` dot products between position vectors (cosine similarity when ``normalize``): nearby
    positions are similar, and the similarity depends only on the offset between two positions."""
    pe = _as_tensor(pe, "pe")
    if pe.dim() != 2:
        raise ValueError(f"pe must be (positions, d_model), got shape {tuple(pe.shape)}")
    if normalize:
        norms = pe.norm(dim=-1, keepdim=True)  # (P, 1)
        if bool((norms == 0).any()):
            zero = [int(i) for i in torch.nonzero(norms.squeeze(-1) == 0).ravel()]
            raise ValueError(f"position_similarity: row(s) {zero} of pe are all zero, and a zero vector has no "
                             f"direction, so its cosine similarity is undefined (NaN); pass normalize=False for the "
                             f"plain dot products, or leave the zero rows out")
        pe = pe / norms  # (P, d), unit rows
    return pe @ pe.T  # (P, P)
