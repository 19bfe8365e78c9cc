"""Look inside a real transformer: the tokens, the attention weights of every layer and head, and the
queries, keys and values of one layer, captured with forward hooks. Used by notebooks 03 (section 7) and 04.

Works for BERT-family text encoders (BERT, RoBERTa, MiniLM, DistilBERT, ...) and for ViT, in
transformers 4.x and 5.x: the parts are found by structure with :mod:`xaikit.models.arch`, not by a
release's module names. :func:`recompute_attention` rebuilds a layer's attention weights from the
model's own ``W_Q`` and ``W_K`` with :func:`xaikit.attention.scratch.multi_head_attention`, the check that the
from-scratch maths of notebook 03 (Vaswani et al. 2017, "Attention Is All You Need") is what the model
computes.

The model runs on its own device and in its own dtype; everything captured comes back on the CPU
(float16/bfloat16 widened to float32), so the notebooks' NumPy and plotting code is the same on a GPU.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from xaikit._fn import ensure_eval, in_float32, to_cpu, to_model
from xaikit._text_input import PreparedText, Tokenizer, prepare_text
from xaikit._types import Input
from xaikit._validate import check_finite, check_int
from xaikit.models import arch
from xaikit.models.hooks import forward_hooks

__all__ = ["AttentionCapture", "capture_attention", "recompute_attention", "qkv_projections"]

# (query, key, value) Linear names: BERT / RoBERTa / ViT 4.x, ViT 5.x / many 5.x models, DistilBERT.
_QKV_NAMES = (("query", "key", "value"), ("q_proj", "k_proj", "v_proj"), ("q_lin", "k_lin", "v_lin"))


def qkv_projections(attention: nn.Module) -> tuple[nn.Linear, nn.Linear, nn.Linear]:
    """The query, key and value ``nn.Linear`` layers of one attention module."""
    for names in _QKV_NAMES:
        found = [getattr(attention, n, None) for n in names]
        if all(isinstance(m, nn.Linear) for m in found):
            return found[0], found[1], found[2]
    raise ValueError(f"{type(attention).__name__} has no query/key/value projections xaikit knows (looked for "
                     f"{', '.join('/'.join(n) for n in _QKV_NAMES)}); pass a BERT-family or ViT model")


@dataclass
class AttentionCapture:
    """What one forward pass showed; every tensor is on the CPU.

    Attributes:
        tokens: the model's tokens (``[CLS] the cat ... [SEP]``), or ``[CLS]`` and patch labels for ViT.
        attentions: ``(n_layers, n_heads, T, T)`` attention weights the model returned (row = query).
        layer: the layer whose ``q``, ``k``, ``v`` were captured.
        q, k, v: ``(n_heads, T, d_head)`` queries, keys and values of ``layer``, split into heads.
        hidden: ``(T, d_model)`` the input of ``layer``'s query/key/value projections.
        embeddings: ``(T, d_model)`` the output of the embeddings module (the input of block 0).
        attention_mask: ``(T,)`` 1 for real tokens.
        logits: the model's output logits ``(C,)`` when it has a head, else ``None``.
    """

    tokens: list[str]
    attentions: torch.Tensor
    layer: int
    q: torch.Tensor
    k: torch.Tensor
    v: torch.Tensor
    hidden: torch.Tensor
    embeddings: torch.Tensor
    attention_mask: torch.Tensor
    logits: torch.Tensor | None = None

    @property
    def n_layers(self) -> int:
        return int(self.attentions.shape[0])

    @property
    def n_heads(self) -> int:
        return int(self.attentions.shape[1])

    def _layer(self, layer: int) -> int:
        return check_int(layer, "layer", -self.n_layers, self.n_layers - 1,
                         hint=f"the model has {self.n_layers} layers: use 0..{self.n_layers - 1}") % self.n_layers

    def head(self, layer: int, head: int | str) -> torch.Tensor:
        """``(T, T)`` weights of one head, or their mean over heads with ``head="mean"``."""
        layer = self._layer(layer)
        if head == "mean":
            return self.attentions[layer].mean(0)  # (T, T)
        head = check_int(head, "head", -self.n_heads, self.n_heads - 1,
                         hint=f"the model has {self.n_heads} heads per layer: use 0..{self.n_heads - 1} "
                              "or 'mean'")
        return self.attentions[layer, head % self.n_heads]  # (T, T)

    def weights_from_qk(self) -> torch.Tensor:
        """``softmax(q k^T / sqrt(d_head))`` from the captured q and k: ``(n_heads, T, T)``."""
        from xaikit.attention.scratch import scaled_dot_product_attention

        key_mask = self.attention_mask.bool().view(1, 1, -1)  # (1, 1, T)
        _, weights = scaled_dot_product_attention(self.q, self.k, self.v, mask=key_mask)  # (nh, T, T)
        return weights


def _prepared_text(model: nn.Module, tokenizer, text, max_length, caller: str) -> PreparedText:
    """The text entry every text call here makes (:func:`xaikit._text_input.prepare_text`, without its forward
    pass: the capture's own pass is the one): a tokenizer that belongs to ``model``, a non-empty ``text``
    (cut to the model's limit, with a warning), a sane ``max_length``, tokenized once."""
    if tokenizer is None:
        raise ValueError(f"tokenizer is required for a text model: {caller}(model, tokenizer, text)")
    return prepare_text(model, tokenizer, text, method=caller, max_length=max_length, forward=False)


def _run_with_hooks(model: nn.Module, inputs: dict, hooks) -> tuple:
    """One forward pass without gradients, asking for attentions, with ``hooks`` (``(module, hook)`` pairs)
    registered for its length. Returns ``(output, attentions)``, the attentions checked
    (:func:`arch.assert_attentions`)."""
    with forward_hooks(*hooks), torch.no_grad():
        out = model(**inputs, output_attentions=True)
    return out, arch.assert_attentions(getattr(out, "attentions", None), model)


@in_float32("model")
def capture_attention(model: nn.Module, tokenizer: Tokenizer | None = None, text: str | None = None, *,
                      pixel_values: Input | None = None, layer: int = 0,
                      max_length: int | None = None) -> AttentionCapture:
    """Run ``model`` once on ``text`` (or ViT ``pixel_values``) and capture its attention.

    Args:
        model: a BERT-family encoder or ViT (task head or bare); switched to eager attention and eval
            mode if needed (with a warning), since SDPA returns no weights and dropout is random.
        tokenizer: the model's tokenizer (text models).
        text: one sentence.
        pixel_values: ``(3, H, W)`` or ``(1, 3, H, W)`` for ViT.
        layer: the layer whose queries, keys and values are captured (negative counts from the end).
        max_length: the most tokens; ``None`` is the model's maximum. A longer text is cut to its first
            words with a warning, the same cut as in every text method (:func:`xaikit._text_input.fit_text`).

    Returns:
        An :class:`AttentionCapture`.
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a transformers model (torch nn.Module), got {type(model).__name__}")
    vision = arch.is_vision_model(model)
    if pixel_values is not None and text is not None:
        raise ValueError("capture_attention takes either text (a text model) or pixel_values (a ViT), not both: "
                         "text and pixel_values were passed, and one would be ignored; "
                         + ("call capture_attention(vit, pixel_values=pixels)" if vision
                            else "call capture_attention(model, tokenizer, text)"))
    if not vision and pixel_values is not None:
        raise ValueError(f"pixel_values is for an image model, and {type(model).__name__} is a text model: call "
                         "capture_attention(model, tokenizer, text)")
    if vision:
        if pixel_values is None:
            raise ValueError("this is an image model: pass pixel_values=(3, H, W) tensor, not text")
        pv = torch.as_tensor(pixel_values)
        if not pv.is_floating_point():
            raise TypeError(f"pixel_values must be a floating-point tensor (the image processor's output), got "
                            f"dtype {pv.dtype}")
        if pv.dim() == 3:
            pv = pv.unsqueeze(0)  # (1, 3, H, W)
        if pv.dim() != 4 or pv.shape[0] != 1:
            raise ValueError(f"pixel_values must be (3, H, W) or (1, 3, H, W), got {tuple(pv.shape)}")
        check_finite(pv, "pixel_values")  # NaN pixels give NaN attention, drawn as if it meant something
    else:
        prepared = _prepared_text(model, tokenizer, text, max_length, "capture_attention")
    layer = arch.check_layer(model, layer)
    arch.ensure_eager(model)
    ensure_eval(model, "capture_attention")

    if vision:
        inputs = {"pixel_values": to_model(model, pv)}  # the model's device and dtype
    else:
        inputs = prepared.inputs  # on the model's device

    seen: dict[str, torch.Tensor] = {}
    q_lin, k_lin, v_lin = qkv_projections(arch.attention_modules(model)[layer])

    def keep(name):
        def hook(module, args, output):
            seen[name] = output.detach()  # (1, T, d_model)
            if name == "q":
                seen["hidden"] = args[0].detach()  # (1, T, d_model), input of the projections
        return hook

    def keep_embeddings(module, args, output):
        seen["embeddings"] = (output[0] if isinstance(output, tuple) else output).detach()  # (1, T, d_model)

    hooks = [(q_lin, keep("q")), (k_lin, keep("k")), (v_lin, keep("v")),
             (arch.embeddings_module(model), keep_embeddings)]
    out, attentions = _run_with_hooks(model, inputs, hooks)
    att = to_cpu(torch.stack([a[0] for a in attentions]))  # (L, nh, T, T)

    n_heads = att.shape[1]
    T = att.shape[-1]

    def heads(t):
        return to_cpu(t[0].view(T, n_heads, -1).transpose(0, 1))  # (T, C) -> (nh, T, hs)

    if vision:
        side = int(round((T - 1) ** 0.5))
        tokens = ["[CLS]"] + [f"({i // side},{i % side})" for i in range(T - 1)]
        mask = torch.ones(T, dtype=torch.long)
    else:
        tokens = list(prepared.tokens)
        mask = inputs.get("attention_mask", torch.ones(1, T, dtype=torch.long))[0].cpu()
    logits = getattr(out, "logits", None)
    return AttentionCapture(
        tokens=tokens, attentions=att, layer=layer, q=heads(seen["q"]), k=heads(seen["k"]), v=heads(seen["v"]),
        hidden=to_cpu(seen["hidden"][0]), embeddings=to_cpu(seen["embeddings"][0]),
        attention_mask=mask, logits=None if logits is None else to_cpu(logits[0]),
    )


def recompute_attention(model: nn.Module, embeddings: torch.Tensor,
                        attention_mask: Input | None = None) -> torch.Tensor:
    """Layer 0's attention weights rebuilt by hand from the model's own parameters: ``(n_heads, T, T)``.

    ``embeddings`` is the output of the embeddings module (already LayerNorm'd in BERT). Pre-LN blocks
    (ViT) apply their ``layernorm_before`` first. Then ``Q = h W_Q + b_Q``, ``K = h W_K + b_K``, split into
    heads and ``softmax(Q_i K_i^T / sqrt(d_head))``, using :func:`xaikit.attention.scratch.multi_head_attention`.
    Compare with ``capture.attentions[0]``: they agree to float precision (notebook 03, section 7).

    Computed on the CPU, in float64 for a float64 model and in float32 otherwise; returned on the CPU.
    """
    from xaikit.attention.scratch import multi_head_attention, padding_mask

    h = torch.as_tensor(embeddings).detach()
    if h.dim() != 2:
        raise ValueError(f"embeddings must be (T, d_model), got shape {tuple(h.shape)}")
    block = arch.encoder_layers(model)[0]
    pre_norm = getattr(block, "layernorm_before", None)
    q_lin, k_lin, v_lin = qkv_projections(arch.attention_modules(model)[0])
    d_model = h.shape[1]
    if q_lin.out_features != d_model:
        raise ValueError(f"recompute_attention needs all heads together to span d_model; the model projects "
                         f"{d_model} features to {q_lin.out_features}")
    dtype = torch.float64 if q_lin.weight.dtype == torch.float64 else torch.float32
    with torch.no_grad():
        if isinstance(pre_norm, nn.LayerNorm):
            h = to_cpu(pre_norm(to_model(pre_norm, h)))  # (T, C), ViT normalises before attention
        h = h.cpu().to(dtype)
        p = {name: t.detach().cpu().to(dtype) for name, t in
             (("w_q", q_lin.weight), ("w_k", k_lin.weight), ("w_v", v_lin.weight))}
        bias = {name: (lin.bias.detach().cpu().to(dtype) if lin.bias is not None else None)
                for name, lin in (("b_q", q_lin), ("b_k", k_lin), ("b_v", v_lin))}
        mask = None if attention_mask is None else padding_mask(torch.as_tensor(attention_mask).view(1, -1))[0]
        _, weights = multi_head_attention(
            h, p["w_q"].T, p["w_k"].T, p["w_v"].T, torch.eye(d_model, dtype=dtype), arch.n_heads(model), mask=mask,
            b_q=bias["b_q"], b_k=bias["b_k"], b_v=bias["b_v"],
        )  # (nh, T, T); W_O = I since only the weights are compared
    return weights
