"""Self-checks for the homework: ``check_<exercise>(your_function)`` runs your function on fixed small cases,
compares it with xaikit's reference and says plainly what passed, or exactly what differs and where (which
token, layer, head, step, image) and by how much. It also recognises the classic mistakes: a missing
(x - x') factor in Integrated Gradients, a sum over the wrong axis, a missing ReLU, a ReLU after the sum or a
transposed attention in Grad-SAM, the gradient of the wrong output or of an attention detached too early
when capturing it, a softmax over the wrong dimension in attention, a CAV pointing the wrong way.

In the spirit of d2l's ``check_shape`` and ARENA's ``test_*`` helpers. Every check prints its report and
returns a :class:`CheckResult`, which is truthy when everything passed, so a notebook cell can say
``assert check_gradsam(my_gradsam)``.

**Exercise sheets run to the end.** A notebook marks each exercise function with the check that grades it,
``@exercise(check_gradsam)``. In an exercise sheet the function's body is a stub that raises
``NotImplementedError``; the check then reports "not written yet" (``result.todo``; the result is still
truthy, so the ``assert`` lets the sheet go on), and every later call of the function runs xaikit's
reference instead and prints a note saying so. "Run All" reaches the end, and each note names a stub left
to write. A function written wrong (its check fails, or it raises) gets the same treatment once its own check
has run: the check names the mistake on stderr (shown in red; nbgrader counts the grade cell as failed) and
``result.fallback`` keeps the result truthy, and every later call runs the reference with a note, so one
wrong answer never breaks the cells after it; a check that passes hands the calls back. Grade with
``.passed``. A function without the decorator keeps the old behaviour: the stub's ``NotImplementedError``
stops the sheet at the check, and a failed check is falsy. The exercises and their signatures:

=============================  ========================================================  ==========
check                          your function                                             notebook
=============================  ========================================================  ==========
``check_grad_times_input``     ``fn(f, x) -> attributions (x.shape)``                    01
``check_ig_riemann``           ``fn(f, x, baseline, steps) -> attributions (x.shape)``   02
``check_attention``            ``fn(x, w_q, w_k, w_v) -> (out, weights)`` or             03
                               ``fn(q, k, v) -> (out, weights)``
``check_gradsam``              ``fn(attentions, gradients) -> (N,)``, both (L, M, N, N)  04
``check_cls_share``            ``fn(attentions, gradients) -> (L,)``: per layer, the     04
                               share of Grad-SAM's mass on the [CLS] row (SHAP vs
                               Grad-SAM: why [CLS] tops Grad-SAM)
``check_head_plots``           ``fn(attentions, tokens, picks) -> Figure``, picks =      04
                               ``[(layer, head), (layer, head)]``
``check_attention_grads``      ``fn(model, inputs, target) -> (attentions, gradients)``  04
                               both (L, M, N, N): the attention and dS/dA, captured
                               by you (a hook, or ``retain_grad``)
``check_cav``                  ``fn(concept_acts, negative_acts) -> cav (D,)``           05
``check_tcav_score``           ``fn(grads (N, D), cav (D,)) -> float``                   05
``check_rank_p``               ``fn(value, null (K,)) -> p``: the rank test's p-value    05
``check_cav_cosines``          ``fn(acts (N, D), cav (D,)) -> (N,)``: each image's      07
                               cosine with the CAV (sorting by a CAV)
``check_rollout``              ``fn(attentions (L, M, N, N)) -> (N, N)``: attention      06
                               rollout
=============================  ========================================================  ==========

The package: ``_core`` (the report, calling the student's function, the exercise wrapper and the skeleton every
check runs), one module per lecture with its checks and references (``gradients``: notebooks 01-02,
``attention``: 03, ``gradsam``: 04, ``concepts``: 05 and 07, ``lab``: 06), and here :func:`exercise` and the
table of references.
"""

from __future__ import annotations

from collections.abc import Callable

from xaikit.course.checks._core import CheckResult, ExerciseFunction
from xaikit.course.checks.attention import (
    _attention_reference,
    check_attention,
    check_scaled_dot_product_attention,
)
from xaikit.course.checks.concepts import (
    _cav_cosines_reference,
    _cav_reference,
    _rank_p_reference,
    _tcav_score_reference,
    check_cav,
    check_cav_cosines,
    check_rank_p,
    check_tcav_score,
)
from xaikit.course.checks.gradients import (
    _grad_times_input_reference,
    _ig_reference,
    check_grad_times_input,
    check_ig_riemann,
)
from xaikit.course.checks.gradsam import (
    _attention_grads_reference,
    _cls_share_reference,
    _gradsam_reference,
    _head_plots_reference,
    check_attention_grads,
    check_cls_share,
    check_gradsam,
    check_head_plots,
)
from xaikit.course.checks.lab import _rollout_reference, check_rollout

__all__ = ["CheckResult", "exercise", "ExerciseFunction", "check_grad_times_input", "check_ig_riemann", "check_attention",
           "check_scaled_dot_product_attention", "check_gradsam", "check_cls_share", "check_head_plots",
           "check_attention_grads", "check_cav", "check_tcav_score", "check_rank_p", "check_cav_cosines",
           "check_rollout"]


def exercise(check: Callable | str) -> Callable[[Callable], ExerciseFunction]:
    """Decorator: ``@exercise(check_gradsam)`` above ``def my_gradsam(...)`` names the check that grades the
    function and, through it, the reference that stands in while the body is a stub (module docstring).

    Args:
        check: one of this module's ``check_*`` functions (or its name).
    """
    check = globals().get(check) if isinstance(check, str) else check
    name = getattr(check, "__name__", repr(check))
    if name not in _REFERENCES:
        raise ValueError(f"exercise() takes one of xaikit's checks ({', '.join(sorted(_REFERENCES))}), got {name}")

    def wrap(student):
        if not callable(student):
            raise TypeError(f"@exercise({name}) decorates a function, got {type(student).__name__}")
        return ExerciseFunction(student, check, _REFERENCES[name]())

    return wrap


#: check name -> a function returning the reference an exercise graded by that check falls back to.
_REFERENCES = {
    "check_grad_times_input": lambda: _grad_times_input_reference,
    "check_ig_riemann": lambda: _ig_reference,
    "check_attention": lambda: _attention_reference,
    "check_scaled_dot_product_attention": lambda: _attention_reference,
    "check_gradsam": lambda: _gradsam_reference,
    "check_cls_share": lambda: _cls_share_reference,
    "check_head_plots": lambda: _head_plots_reference,
    "check_attention_grads": lambda: _attention_grads_reference,
    "check_cav": lambda: _cav_reference,
    "check_tcav_score": lambda: _tcav_score_reference,
    "check_rank_p": lambda: _rank_p_reference,
    "check_cav_cosines": lambda: _cav_cosines_reference,
    "check_rollout": lambda: _rollout_reference,
}
