"""Tiny seeded random models for tests and quick demos: same architectures as the real ones, built in
milliseconds with no download. Also used to test the loaders: save one with ``save_pretrained`` to a
folder and load it back through the path a hub id takes (see ``tests/test_models.py``).
"""

from __future__ import annotations

import os

import torch


def tiny_bert(seed: int = 0, num_labels: int = 2, vocab_size: int = 120, hidden_size: int = 32,
              num_hidden_layers: int = 2, num_attention_heads: int = 4, max_position_embeddings: int = 64):
    """A random ``BertForSequenceClassification`` in eval mode with eager attention."""
    from transformers import BertConfig, BertForSequenceClassification

    from xaikit.models.hooks import set_attention_implementation

    config = BertConfig(
        vocab_size=vocab_size, hidden_size=hidden_size, num_hidden_layers=num_hidden_layers,
        num_attention_heads=num_attention_heads, intermediate_size=2 * hidden_size,
        max_position_embeddings=max_position_embeddings, num_labels=num_labels,
        id2label={i: ("NEGATIVE", "POSITIVE")[i] if num_labels == 2 else f"LABEL_{i}" for i in range(num_labels)},
        hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, attn_implementation="eager",
    )
    config.label2id = {v: k for k, v in config.id2label.items()}
    torch.manual_seed(seed)
    model = BertForSequenceClassification(config)
    set_attention_implementation(model, "eager")
    return model.eval()


def tiny_tokenizer(folder: str | os.PathLike | None = None, words: tuple[str, ...] | None = None):
    """A BERT WordPiece tokenizer over a small word list (written to ``folder`` or a temp dir).

    The lecture's sentences tokenize to whole words; anything else falls back to [UNK].
    """
    import tempfile
    from pathlib import Path

    from transformers import BertTokenizerFast

    words = words or _WORDS
    folder = Path(folder or tempfile.mkdtemp(prefix="xaikit-tok-"))
    folder.mkdir(parents=True, exist_ok=True)
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *sorted(set(words))]
    (folder / "vocab.txt").write_text("\n".join(vocab) + "\n")
    # transformers 5.x reads the word list from `vocab` (it ignores `vocab_file`); 4.x from `vocab_file`.
    return BertTokenizerFast(vocab=str(folder / "vocab.txt"), vocab_file=str(folder / "vocab.txt"),
                             do_lower_case=True, model_max_length=64)


def tiny_vit(seed: int = 0, num_labels: int = 3, image_size: int = 32, patch_size: int = 8, hidden_size: int = 32,
             num_hidden_layers: int = 2, num_attention_heads: int = 4, labels: tuple[str, ...] | None = None):
    """A random ``ViTForImageClassification`` in eval mode with eager attention."""
    from transformers import ViTConfig, ViTForImageClassification

    from xaikit.models.hooks import set_attention_implementation

    if labels is None:
        defaults = ("zebra", "horse", "leopard", "other")
        labels = defaults[:num_labels] if num_labels <= len(defaults) else tuple(f"LABEL_{i}" for i in range(num_labels))
    if len(labels) != num_labels:
        raise ValueError(f"labels must have num_labels={num_labels} names, got {len(labels)}")
    id2label = dict(enumerate(labels))
    config = ViTConfig(
        image_size=image_size, patch_size=patch_size, hidden_size=hidden_size,
        num_hidden_layers=num_hidden_layers, num_attention_heads=num_attention_heads,
        intermediate_size=2 * hidden_size, num_labels=num_labels, id2label=id2label,
        label2id={v: k for k, v in id2label.items()}, hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0, attn_implementation="eager",
    )
    torch.manual_seed(seed)
    model = ViTForImageClassification(config)
    set_attention_implementation(model, "eager")
    return model.eval()


_WORDS = (
    "i like the movie she hates book this is so boring cannot wait for next time you look extremely "
    "confused a clever piece of cinema cat drank milk because it was hungry good bad great awful not "
    "film story plot acting fun dull love loved wonderful terrible and but very"
).split()
