"""The faithfulness lab runs each forward row once: blocks below an edited attention layer run
on the sentence once instead of on every copy, and rows two rankings share run once. Its numbers must be
those of the plain way (every copy through every block, every row on its own), within 1e-6."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from xaikit.models.hooks import forward_hooks

SENTENCES = ["a clever piece of cinema that i like", "the plot is dull and the acting is worse",
             "wonderful story and a great cast"]


@pytest.fixture(scope="module")
def bert():
    from xaikit.models.arch import ensure_eager
    from xaikit.models.tiny import tiny_bert, tiny_tokenizer

    model = tiny_bert(seed=5)
    torch.manual_seed(2)
    with torch.no_grad():  # larger weights: decisions that flip, outputs that move under edits
        for p in model.parameters():
            if p.ndim == 2:
                p.normal_(0.0, 0.3)
    return ensure_eager(model).eval(), tiny_tokenizer()


# -- the plain way, every copy through every block, every row on its own: the oracle --------------------
def _plain_erased(model, enc, masks, layer):
    from xaikit.lab.editing import run_edited

    b = masks.shape[0]
    inputs = {k: v.expand(b, *v.shape[1:]) for k, v in enc.inputs.items()}
    return torch.softmax(run_edited(model, inputs, remove=masks, layers=(layer,)).double(), -1).numpy()


def _plain_deleted(model, enc, masks, pad_id, batch_size=64):
    ids = enc.inputs["input_ids"][0]
    out = []
    for row in masks:  # one row at a time: no padding, no sharing
        inputs = {"input_ids": ids[~row][None]}
        if "token_type_ids" in enc.inputs:
            inputs["token_type_ids"] = torch.zeros_like(inputs["input_ids"])
        with torch.no_grad():
            out.append(torch.softmax(model(**inputs).logits[0].double(), -1).numpy())
    return np.stack(out)


def _plain_permutation(model, enc, n_permutations=16, layers=(-1,), seed=0, queries=None):
    from xaikit.lab.editing import run_edited
    from xaikit.lab.removal import PermutationChange

    inputs = {k: v.expand(n_permutations, *v.shape[1:]) for k, v in enc.inputs.items()}
    q = torch.softmax(run_edited(model, inputs, permute=True, layers=layers, seed=seed,
                                 queries=queries).double(), -1).numpy()
    p = torch.softmax(enc.logits.double(), -1).numpy()
    tvd = 0.5 * np.abs(q - p[None]).sum(-1)
    return PermutationChange(median_tvd=float(np.median(tvd)), flips=float(np.mean(q.argmax(-1) != p.argmax())))


def _run(model, tok):
    from xaikit.lab.faithfulness import run_lab
    from xaikit.models.arch import encoder_layers

    seen = []  # the rows each pass through block 0 holds
    with forward_hooks((encoder_layers(model)[0], lambda m, args, out: seen.append(args[0].shape[0]))):
        lab = run_lab(model, tok, SENTENCES, n_permutations=4, shap_evals=40, ig_steps=4, progress=False)
    return lab, sum(seen)


def test_lab_equals_the_plain_way_with_fewer_rows(bert, monkeypatch):
    from xaikit.lab import agreement, faithfulness

    model, tok = bert
    lab, rows = _run(model, tok)
    monkeypatch.setattr(faithfulness, "_probs_erased", _plain_erased)
    monkeypatch.setattr(faithfulness, "_probs_deleted", _plain_deleted)
    monkeypatch.setattr(agreement, "_probs_deleted", _plain_deleted)
    monkeypatch.setattr(faithfulness, "permutation_change", _plain_permutation)
    ref, ref_rows = _run(model, tok)
    for name in ("js_top", "js_random", "permutation_tvd", "permutation_by_layer", "permutation_by_layer_cls",
                 "max_attention", "empty_probs"):
        np.testing.assert_allclose(getattr(lab, name), getattr(ref, name), atol=1e-6, rtol=0, err_msg=name)
    for name in ("flip_top", "flip_random", "predicted"):
        np.testing.assert_array_equal(getattr(lab, name), getattr(ref, name), err_msg=name)
    for name in ("fraction", "fraction_deleted", "comprehensiveness", "sufficiency"):
        for ranking in lab.rankings:
            np.testing.assert_allclose(getattr(lab, name)[ranking], getattr(ref, name)[ranking], atol=1e-6, rtol=0,
                                       err_msg=f"{name}[{ranking}]")
    for pair in lab.agreement.tau:
        np.testing.assert_allclose(lab.agreement.tau[pair], ref.agreement.tau[pair], atol=1e-6, rtol=0)
    assert np.ptp(np.concatenate([lab.comprehensiveness[r] for r in lab.rankings])) > 1e-3  # the test sees numbers move
    # the encoder's first block sees far fewer rows: the edited runs start at the edited layer, shared rows run once
    assert rows < 0.6 * ref_rows, (rows, ref_rows)


def test_permutation_change_equals_every_copy_through_every_block(bert):
    from xaikit._text_input import prepare_text
    from xaikit.lab.removal import permutation_change
    from xaikit.models.arch import n_layers

    model, tok = bert
    enc = prepare_text(model, tok, SENTENCES[0], method="test")
    tvds = []
    for layer in range(n_layers(model)):
        for queries in (None, (0,)):
            ours = permutation_change(model, enc, 8, layers=(layer,), seed=7, queries=queries)
            plain = _plain_permutation(model, enc, 8, layers=(layer,), seed=7, queries=queries)
            assert ours.median_tvd == pytest.approx(plain.median_tvd, abs=1e-6)
            assert ours.flips == plain.flips
            tvds.append(ours.median_tvd)
    assert max(tvds) > 1e-3  # the shuffles change the output, so equal numbers mean something
