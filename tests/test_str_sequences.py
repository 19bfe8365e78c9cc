"""A str where a list of names or sentences belongs.

The rule: a parameter that takes a sequence of names (methods, rules, textures, concepts, ...) refuses one str
and suggests the list meant (``xaikit._validate.check_names``), since ``"chefer"`` read as a sequence is the
letters ``c``, ``h``, ...; a parameter whose docstring says it takes "one string or a list" (``shap_text``'s
``texts``, ``run_lab``'s and ``rank_agreement``'s ``sentences``, the course commands' ``names``) takes one str
as a one-element list. The walk below finds every public callable with such a parameter, so a new one must
be listed here with its case. The README's "Bad input and safety" table lists the inputs.
"""

from __future__ import annotations

import inspect

import numpy as np
import pytest
import torch

from tests._public import public_objects

#: parameter names that hold a sequence of names or sentences
SEQUENCE_PARAMETERS = {"texts", "sentences", "methods", "rankings", "rules", "textures", "concepts", "names",
                       "weightings", "words", "labels"}


@pytest.fixture(scope="module")
def bert():
    from xaikit.models.tiny import tiny_bert

    return tiny_bert(seed=3)


@pytest.fixture(scope="module")
def vit():
    from xaikit.models.tiny import tiny_vit

    return tiny_vit(seed=0, image_size=64, labels=("zebra", "horse", "leopard"))


def _refused(call, name: str, example: str):
    with pytest.raises((ValueError, TypeError), match=rf"{name}\b.*(str|string)") as err:
        call()
    assert example in str(err.value), str(err.value)  # the fix: the list meant


def _cases(bert, tok, vit):
    from xaikit.lab import intervention, pixel_scores, text_sanity
    from xaikit.lab import tensor_sanity as sanity
    from xaikit.lab.faithfulness import run_lab
    from xaikit.models import imageworld as iw
    from xaikit.tensor import integrated, quadrature
    from xaikit.text.text_ig import text_steps_for_tolerance
    from xaikit.text.views import all_views

    lin = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(16, 3)).eval()
    x = torch.ones(1, 4, 4)
    scenes = iw.scenes("zebra", 2, "main", seed=0)
    return {
        ("xaikit.lab.pixel_scores", "compare_methods", "methods"):
            (lambda: pixel_scores.compare_methods(vit, scenes, methods="chefer"), "['chefer']"),
        ("xaikit.lab.intervention", "intervene", "textures"):
            (lambda: intervention.intervene(vit, scenes, textures="striped"), "['striped']"),
        ("xaikit.lab.tensor_sanity", "sanity_maps", "methods"):
            (lambda: sanity.sanity_maps(lin, x, target=0, methods="gradient"), "['gradient']"),
        ("xaikit.lab.tensor_sanity", "cascade_scores", "methods"):
            (lambda: sanity.cascade_scores(lin, x[None], methods="gradient"), "['gradient']"),
        ("xaikit.lab.tensor_sanity", "compare_models", "methods"):
            (lambda: sanity.compare_models(lin, lin, x[None], methods="gradient"), "['gradient']"),
        ("xaikit.tensor.integrated", "gap_curves", "rules"):
            (lambda: integrated.gap_curves(lin, x, rules="gausslegendre", target=0), "['gausslegendre']"),
        ("xaikit.tensor.quadrature", "quadrature_errors", "rules"):
            (lambda: quadrature.quadrature_errors(lin, torch.zeros(1, 4, 4), x, rules="gausslegendre", target=0),
             "['gausslegendre']"),
        ("xaikit.text.text_ig", "text_steps_for_tolerance", "rules"):
            (lambda: text_steps_for_tolerance(bert, tok, "i like it", rules="gausslegendre"), "['gausslegendre']"),
        ("xaikit.text.views", "all_views", "methods"):
            (lambda: all_views(bert, tok, "i like it", methods="gradsam"), "[" ),
        ("xaikit.lab.text_sanity", "cascade_similarities", "texts"):
            (lambda: text_sanity.cascade_similarities(bert, tok, "i like it", [1], ["Grad-SAM"]), "[text]"),
        ("xaikit.lab.text_sanity", "cascade_similarities", "methods"):
            (lambda: text_sanity.cascade_similarities(bert, tok, ["i like it"], [1], "Grad-SAM"), "['Grad-SAM']"),
        ("xaikit.lab.faithfulness", "run_lab", "rankings"):
            (lambda: run_lab(bert, tok, ["i like it"], rankings="IG"), "['IG']"),
        ("xaikit.tensor.quadrature", "AdditiveModel", "names"):
            (lambda: quadrature.AdditiveModel([torch.sin, torch.cos], names="ab"), "['ab']"),
        ("xaikit.lab.text_sanity", "model_similarities", "texts"):
            (lambda: text_sanity.model_similarities(bert, bert, tok, "i like it", ["Grad-SAM"]), "[text]"),
        ("xaikit.lab.text_sanity", "model_similarities", "methods"):
            (lambda: text_sanity.model_similarities(bert, bert, tok, ["i like it"], "Grad-SAM"), "['Grad-SAM']"),
    }


def _panel_cases(bert, tok, vit):
    from xaikit.widgets.sanity import SanityCheckPanel
    from xaikit.widgets.tcav import LayerSweepPanel, PatchGridPanel, TCAVPanel
    from xaikit.widgets.text_sanity import TextSanityPanel

    images = np.zeros((2, 16, 16, 3), np.uint8)
    return {
        ("xaikit.widgets.text_sanity", "TextSanityPanel", "texts"):
            (lambda: TextSanityPanel(bert, tok, texts="I like the movie"), "[text]"),
        ("xaikit.widgets.text_sanity", "TextSanityPanel", "methods"):
            (lambda: TextSanityPanel(bert, tok, texts=["I like it"], methods="Grad-SAM"), "['Grad-SAM']"),
        ("xaikit.widgets.sanity", "SanityCheckPanel", "methods"):
            (lambda: SanityCheckPanel(methods="gradient"), "['gradient']"),
        ("xaikit.widgets.tcav", "TCAVPanel", "concepts"):
            (lambda: TCAVPanel(vit, concepts="striped"), "['striped']"),
        ("xaikit.widgets.tcav", "LayerSweepPanel", "concepts"):
            (lambda: LayerSweepPanel(vit, concepts="striped"), "['striped']"),
        ("xaikit.widgets.tcav", "PatchGridPanel", "labels"):
            (lambda: PatchGridPanel(images, labels="ab"), "['ab']"),
    }


#: public callables whose parameter of that name takes one str as a one-element list (documented), or is not
#: a sequence of names (why in the comment)
ONE_STR_OK = {
    ("xaikit.text.shaptext", "shap_text", "texts"),  # "one string or a list of strings"
    ("xaikit.lab.faithfulness", "run_lab", "sentences"),  # check_texts: one sentence
    ("xaikit.lab.agreement", "rank_agreement", "sentences"),  # check_texts: one sentence
    ("xaikit.widgets.text_methods", "LabPanel", "sentences"),  # run_lab's sentences
    ("xaikit.course.copies", "lectures", "names"), ("xaikit.course.copies", "copy_notebooks", "names"),
    ("xaikit.course.homework", "sources", "names"), ("xaikit.course.homework", "build", "names"),
    ("xaikit.course.nbgrading", "make_course", "names"), ("xaikit.course.notebooks", "sources", "names"),
    ("xaikit.course.notebooks", "build_notebooks", "names"), ("xaikit.course.notebooks", "build", "names"),
    ("xaikit.course.notebooks", "orphans", "names"), ("xaikit.course.notebooks", "check", "names"),
    ("xaikit.course.notebooks", "sources_match", "names"), ("xaikit.course.pages", "run", "names"),
    ("xaikit.course.pages", "slides", "names"), ("xaikit.course.notebooks", "check_names", "names"),
    ("xaikit.course.claims.report", "rows", "names"), ("xaikit.course.claims.report", "markdown", "names"),
    ("xaikit.course.claims.report", "to_html", "names"), ("xaikit.course.claims.report", "write", "names"),
    ("xaikit.course.warm", "warm", "names"),
}
#: not a sequence of names taken from the user: a label mode (one str), label arrays, internal steps
NOT_NAMES = {
    ("xaikit.models.digits", "shuffled_labels", "labels"), ("xaikit.models.sentiment", "recipe", "labels"),
    ("xaikit.models.sentiment", "is_built", "labels"), ("xaikit.models.sentiment", "sentiment_folder", "labels"),
    ("xaikit.models.sentiment", "train_sentiment", "labels"), ("xaikit.models.sentiment", "identity", "labels"), ("xaikit.models.vitworld", "accuracy", "labels"),
    ("xaikit.lab.diagnostic_model", "train_diagnostic", "labels"),
    ("xaikit.lab.diagnostic_model", "evaluate_diagnostic", "labels"),
    ("xaikit.tensor.integrated", "shared_path", "rules"),  # gap_curves' helper, given checked rules
    ("xaikit.text.shaptext", "additivity_gaps", "texts"),  # the texts a SHAP explanation was computed on
    ("xaikit.models.finetune", "logit_gaps", "texts"), ("xaikit.models.sentiment", "prepared_folder", "labels"),
    ("xaikit.widgets.tcav", "TCAVPanel.compute", "concepts"),  # the panel's own call, with checked values
    ("xaikit.text.shaptext", "check_lengths", "sentences"), ("xaikit.text.lime", "check_lengths", "sentences"),
    ("xaikit.concepts.significance", "tcav_significance", "concepts"),  # a mapping name -> images
    ("xaikit.concepts.tcav", "layer_sweep", "concepts"),  # a mapping name -> images
    ("xaikit.models.tiny", "tiny_tokenizer", "words"), ("xaikit.models.tiny", "tiny_vit", "labels"),
    ("xaikit.plotting", "signed_bars", "labels"),
    ("xaikit.widgets.tcav", "ImageSets.classes", "labels"),
    ("xaikit.lab.diagnostics", "run_diagnostic", "weightings"),
}


def _public_parameters():
    """(module, callable, parameter) for every public function, class constructor and public method in xaikit
    with a parameter named in :data:`SEQUENCE_PARAMETERS` (dataclass fields left out: results, not input)."""
    import dataclasses

    found = set()
    for module, name, obj in public_objects():
        if inspect.isfunction(obj):
            targets = [(name, obj)]
        elif inspect.isclass(obj) and not dataclasses.is_dataclass(obj):
            targets = [(name, obj.__init__)] + [(f"{name}.{k}", v) for k, v in vars(obj).items()
                                                if inspect.isfunction(v) and not k.startswith("_")]
        else:
            continue
        for label, fn in targets:
            for p in inspect.signature(fn).parameters:
                if p in SEQUENCE_PARAMETERS:
                    found.add((module.__name__, label, p))
    return found


def test_every_public_sequence_parameter_is_covered(bert, tok, vit):
    covered = set(_cases(bert, tok, vit)) | set(_panel_cases(bert, tok, vit)) | ONE_STR_OK | NOT_NAMES
    missing = _public_parameters() - covered
    assert not missing, f"a public callable takes a sequence of names; add its one-str case here: {sorted(missing)}"


@pytest.mark.parametrize("which", ["functions", "panels"])
def test_one_str_is_refused_naming_the_parameter_and_the_list(bert, tok, vit, which):
    cases = _cases(bert, tok, vit) if which == "functions" else _panel_cases(bert, tok, vit)
    failed = []
    for (_module, fn, name), (call, example) in cases.items():
        try:
            _refused(call, name, example)
        except (AssertionError, pytest.fail.Exception, Exception) as err:  # noqa: BLE001 - report every case
            failed.append(f"{fn}({name}=...): {type(err).__name__}: {str(err)[:300]}")
    assert not failed, "\n".join(failed)


def test_one_str_as_one_sentence_where_documented(bert, tok):
    from xaikit.lab.agreement import rank_agreement

    one = rank_agreement(bert, tok, "i like the movie")
    assert one.sentences == ["i like the movie"]


def test_one_notebook_name_as_one_str_in_the_course_and_the_claims_report():
    from xaikit.course.claims import report
    from xaikit.course.notebooks import NotebookNotFoundError, check_names

    assert report.rows("04") == report.rows(["04"]) and {r["notebook"] for r in report.rows("04")} == {"04"}
    check_names("01", ["01_gradients", "02_integrated_gradients"])  # one name that matches: no error
    with pytest.raises(NotebookNotFoundError, match="'99'"):
        check_names("99", ["01_gradients"])  # named whole, not as '9' and '9'
