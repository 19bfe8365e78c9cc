"""check_attention_grads (notebook 04, section 4c): the student captures the attention of every layer and head and
the gradient of the target logit with respect to it. Two right ways pass (retain_grad, a forward hook); each usual
mistake, written as a small wrong function, gets its own name and message."""

from __future__ import annotations

import warnings

import pytest
import torch
import torch.nn.functional as F

from xaikit.course import checks
from xaikit.models.hooks import forward_hooks

pytest.importorskip("transformers")


def capture_retain_grad(model, inputs, target):
    out = model(**inputs, output_attentions=True)
    for a in out.attentions:  # L x (1, M, N, N)
        a.retain_grad()
    out.logits[0, target].backward()
    return (torch.stack([a[0] for a in out.attentions]).detach(),  # (L, M, N, N)
            torch.stack([a.grad[0] for a in out.attentions]))  # (L, M, N, N)


def capture_hook(model, inputs, target):
    """Forward hooks on each layer's self-attention module keep its weights, as they are in the graph."""
    kept = []
    hooks = [(layer.attention.self, lambda mod, args, out: kept.append(out[1])) for layer in model.bert.encoder.layer]
    with forward_hooks(*hooks):
        logits = model(**inputs, output_attentions=True).logits
    grads = torch.autograd.grad(logits[0, target], kept)
    return [a.detach() for a in kept], list(grads)  # lists of L tensors (1, M, N, N) are accepted


def _with_output(score):
    """A capture that differentiates ``score(logits (C,), target)`` instead of the target logit."""
    def capture(model, inputs, target):
        out = model(**inputs, output_attentions=True)
        grads = torch.autograd.grad(score(out.logits[0], target), out.attentions)
        return torch.stack([a[0] for a in out.attentions]).detach(), torch.stack([g[0] for g in grads])
    return capture


capture_other_logit = _with_output(lambda logits, t: logits[1 - t])
capture_predicted_class = _with_output(lambda logits, t: logits[int(logits.argmax())])  # ignores the target
capture_probability = _with_output(lambda logits, t: torch.softmax(logits, -1)[t])
capture_loss = _with_output(lambda logits, t: F.cross_entropy(logits[None], torch.tensor([t])))


def capture_detached_zeros(model, inputs, target):
    """Detached copies made leaves again: the logit never depends on them, so their gradient is None -> 0."""
    out = model(**inputs, output_attentions=True)
    copies = [a.detach().requires_grad_(True) for a in out.attentions]
    grads = torch.autograd.grad(out.logits[0, target], copies, allow_unused=True)
    return (torch.stack([a[0] for a in copies]).detach(),
            torch.stack([torch.zeros_like(c[0]) if g is None else g[0] for g, c in zip(grads, copies, strict=True)]))


def capture_detached_none(model, inputs, target):
    out = model(**inputs, output_attentions=True)
    copies = [a.detach().requires_grad_(True) for a in out.attentions]
    out.logits[0, target].backward()
    return [c.detach() for c in copies], [c.grad for c in copies]  # every .grad is None


def capture_detached_raises(model, inputs, target):
    out = model(**inputs, output_attentions=True)
    kept = [a.detach() for a in out.attentions]
    for a in kept:
        a.retain_grad()  # RuntimeError: can't retain_grad on Tensor that has requires_grad=False
    out.logits[0, target].backward()
    return kept, [a.grad for a in kept]


def capture_no_grad(model, inputs, target):
    with torch.no_grad():
        out = model(**inputs, output_attentions=True)
    grads = torch.autograd.grad(out.logits[0, target], out.attentions)  # RuntimeError: no grad_fn
    return out.attentions, grads


def capture_forgot_retain_grad(model, inputs, target):
    """The attention is in the graph, but .grad is read on it without retain_grad(): PyTorch warns, gives None."""
    out = model(**inputs, output_attentions=True)
    out.logits[0, target].backward()
    return torch.stack([a[0] for a in out.attentions]).detach(), [a.grad for a in out.attentions]


def capture_forgot_retain_grad_raises(model, inputs, target):
    """The same mistake, with the None indexed: TypeError."""
    out = model(**inputs, output_attentions=True)
    out.logits[0, target].backward()
    return (torch.stack([a[0] for a in out.attentions]).detach(),
            torch.stack([a.grad[0] for a in out.attentions]))  # TypeError: 'NoneType' object is not subscriptable


def capture_transposed(model, inputs, target):
    a, g = capture_retain_grad(model, inputs, target)
    return a.transpose(-1, -2), g.transpose(-1, -2)


def capture_gradient_transposed(model, inputs, target):
    a, g = capture_retain_grad(model, inputs, target)
    return a, g.transpose(-1, -2)


@pytest.mark.parametrize("fn", [capture_retain_grad, capture_hook])
def test_right_captures_pass(fn, capsys):
    result = checks.check_attention_grads(fn)
    assert result.passed and result.mistake is None, result.report()
    out = capsys.readouterr().out
    assert "dS/dA of all 2 layers x 4 heads matches" in out and "(the other class)" in out


MISTAKES = [
    (capture_other_logit, "wrong_output", "the logit of class"),
    (capture_predicted_class, "wrong_output", "the logit of class"),
    (capture_probability, "wrong_output", "the softmax probability"),
    (capture_loss, "wrong_output", "the cross-entropy loss"),
    (capture_detached_zeros, "detached", "your gradients are all zero"),
    (capture_detached_none, "detached", "your gradients are None"),
    (capture_detached_raises, "detached", "cut from the graph"),
    (capture_no_grad, "detached", "cut from the graph"),
    (capture_forgot_retain_grad, "not_retained", "your gradients are None: the attention's gradient was never kept"),
    (capture_forgot_retain_grad_raises, "not_retained", "the attention's gradient was never kept"),
    (capture_transposed, "transposed", "your attention is transposed"),
    (capture_gradient_transposed, "transposed", "your gradient is transposed"),
]


@pytest.mark.parametrize("fn, mistake, message", MISTAKES, ids=[f.__name__ for f, _, _ in MISTAKES])
def test_each_mistake_is_named(fn, mistake, message):
    result = checks.check_attention_grads(fn, verbose=False)
    report = result.report()
    assert not result and result.mistake == mistake, report
    assert message in report, report


@pytest.mark.parametrize("fn", [capture_forgot_retain_grad, capture_forgot_retain_grad_raises])
def test_forgetting_retain_grad_is_not_called_a_detach(fn, recwarn):
    """No .detach() was written, so the report does not blame one: it names retain_grad and a hook as the fix,
    and PyTorch's own warning about the .grad read is answered by the report, not passed on."""
    report = checks.check_attention_grads(fn, verbose=False).report()
    assert "retain_grad() on each attention tensor before S.backward()" in report, report
    assert "register_hook" in report, report
    assert "cut from the graph" not in report and ".detach()" not in report, report
    assert not [w for w in recwarn if "leaf Tensor" in str(w.message)]


def test_other_warnings_of_the_students_function_still_reach_the_student():
    def capture_that_warns(model, inputs, target):
        warnings.warn("a warning of the student's own", UserWarning, stacklevel=1)
        return capture_retain_grad(model, inputs, target)

    with pytest.warns(UserWarning, match="of the student's own"):
        assert checks.check_attention_grads(capture_that_warns, verbose=False).passed


def test_the_predicted_class_instead_of_the_target_passes_the_first_case_only():
    """Explaining the predicted class whatever the target is right for the first case (target = the predicted
    class) and wrong for the second: the report shows both."""
    report = checks.check_attention_grads(capture_predicted_class, verbose=False).report()
    assert "(the predicted class): dS/dA of all 2 layers x 4 heads matches" in report, report
    assert "(the other class): you differentiate the logit of class" in report, report


def test_the_mistakes_differ_from_the_reference_and_from_each_other():
    """On the check's model the alternative outputs' gradients are far from dS/dA and from each other, so no
    right answer is given a mistake's name and no mistake another's."""
    from xaikit.course.checks.gradsam import _capture_cases, _near

    for _, (_, a, g, alternatives, _, _) in _capture_cases():
        grads = [g, g.transpose(-1, -2)] + [cand for _, cand in alternatives.values()]
        for i, x in enumerate(grads):
            assert not [j for j, y in enumerate(grads) if j != i and _near(x, y)], i
        assert not _near(a, a.transpose(-1, -2))


def test_exercise_stub_and_wrong_answer_fall_back_to_the_reference(capsys):
    @checks.exercise(checks.check_attention_grads)
    def stub(model, inputs, target):
        raise NotImplementedError

    assert checks.check_attention_grads(stub, verbose=False).todo
    wrong = checks.exercise(checks.check_attention_grads)(capture_detached_raises)
    result = checks.check_attention_grads(wrong, verbose=False)
    assert result and result.fallback and result.mistake == "detached"
    from xaikit.models.tiny import tiny_bert, tiny_tokenizer

    model, tok = tiny_bert(), tiny_tokenizer()
    enc = dict(tok("I like the movie", return_tensors="pt"))
    a, g = wrong(model, enc, 0)
    assert "NOTE: capture_detached_raises failed check_attention_grads(capture_detached_raises) (detached)" in (
        capsys.readouterr().out)
    ref_a, ref_g = capture_retain_grad(model, enc, 0)
    torch.testing.assert_close(a, ref_a)
    torch.testing.assert_close(g, ref_g)
