"""A model folder of the user's (saved with ``save_pretrained``, or a copy of a cache folder placed elsewhere)
that a copy or a download cut short is refused with an error that says how to mend that folder: copy or
save it again. ``prepare --force`` rebuilds folders in xaikit's cache only, so it is named for those alone."""

from __future__ import annotations

import shutil

import pytest

from xaikit.models import cache, loaders
from xaikit.models.tiny import tiny_bert, tiny_tokenizer


@pytest.fixture
def saved(tmp_path):
    folder = tmp_path / "my-bert"
    folder.mkdir()
    tiny_bert().save_pretrained(folder)
    tiny_tokenizer(folder).save_pretrained(folder)
    return folder


def _truncate(path, keep=2000):
    path.write_bytes(path.read_bytes()[:keep])


def test_an_intact_user_folder_loads(saved):
    loaders.clear_cache()
    model, _ = loaders.load_sentiment(saved)
    assert model.config.num_hidden_layers >= 1


def test_truncated_weights_in_a_user_folder_name_the_file_and_the_fix(saved):
    _truncate(saved / "model.safetensors")
    loaders.clear_cache()
    with pytest.raises(ValueError, match=r"model\.safetensors is damaged .*save_pretrained") as err:
        loaders.load_sentiment(saved)
    assert "prepare" not in str(err.value)  # prepare cannot mend a folder of the user's


def test_a_copied_cache_folder_outside_the_cache_is_not_sent_to_prepare(saved, tmp_path, monkeypatch):
    monkeypatch.setenv("XAIKIT_CACHE", str(tmp_path / "cache"))
    cache.write_manifest(saved)  # as a build in the cache leaves it
    assert (saved / cache.MANIFEST).is_file()
    copy = tmp_path / "elsewhere" / "copy"
    shutil.copytree(saved, copy)
    _truncate(copy / "model.safetensors")
    loaders.clear_cache()
    with pytest.raises(cache.CacheCorruptError) as err:
        loaders.load_sentiment(copy)
    message = str(err.value)
    assert "outside xaikit's cache" in message and "copy it again" in message
    assert "prepare --force` (or" not in message  # the advice for cache folders is not given
