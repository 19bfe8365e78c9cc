"""Time xaikit's layer IG against Captum's LayerIntegratedGradients on the sentiment model.

Same sentence, rule, steps and baseline ([PAD] with [CLS]/[SEP] kept); sequence lengths 8 and 64 tokens at
50 and 300 steps. Prints the time of each, the ratio xaikit / Captum (goal: <= 0.8) and the
largest attribution difference (goal: < 1e-6; the run fails above it). The two run interleaved and repeated,
and the median of each is compared, because the machine's cores may be shared.

Both run on the same number of torch threads, in two settings printed one after the other: one thread each,
and torch's default each. xaikit's method policy (:func:`xaikit.policies.method_threads`) would otherwise
hold xaikit to its own count while Captum, in the same process, runs on torch's, and the ratio would
compare thread counts rather than implementations.

    HF_HUB_OFFLINE=1 python benchmarks/ig_vs_captum.py [--repeats 5] [--tiny] [--threads 1 default]

Uses ``xaikit.models.load_sentiment()`` (the embedded model, after ``python -m xaikit prepare``); if it is
not available, falls back to a seeded random BERT of the same shape and says so.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch


def load(tiny: bool):
    if not tiny:
        try:
            import xaikit.models as models
            from xaikit.models.sentiment import sentiment_folder

            if not (sentiment_folder() / "metrics.json").is_file():  # never train from a benchmark
                raise FileNotFoundError("the embedded model is not prepared; run `python -m xaikit prepare`")
            loaded = models.load_sentiment()
            model, tok = (loaded.model, loaded.tokenizer) if hasattr(loaded, "model") else loaded
            return model.eval(), tok, "embedded sentiment model (load_sentiment)"
        except Exception as err:  # noqa: BLE001 - reported, then the fallback
            print(f"NOTE: load_sentiment() is not available ({type(err).__name__}: {err}); "
                  "falling back to a seeded random BERT of the same shape")
    from xaikit.models.tiny import tiny_bert, tiny_tokenizer

    # the embedded model's shape (MiniLM-L6-H384: 6 blocks, 12 heads, hidden 384), random weights
    model = tiny_bert(hidden_size=384, num_hidden_layers=6, num_attention_heads=12, max_position_embeddings=128)
    return model, tiny_tokenizer(), "seeded random BERT of MiniLM-L6-H384's shape (xaikit.models.tiny.tiny_bert)"


def sentence(tok, n_tokens: int) -> str:
    words = "a clever piece of cinema that i like and the story is wonderful but the plot is dull".split()
    text = []
    while len(tok(" ".join(text))["input_ids"]) < n_tokens:
        text.append(words[len(text) % len(words)])
    while len(tok(" ".join(text))["input_ids"]) > n_tokens:
        text.pop()
    return " ".join(text)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--rule", default="riemann_right")
    parser.add_argument("--tiny", action="store_true", help="use a seeded random BERT of the embedded model's shape")
    parser.add_argument("--threads", nargs="+", default=["1", "default"],
                        help="thread settings to compare at, each applied to both: a count or 'default' (torch's)")
    args = parser.parse_args()
    default_threads = torch.get_num_threads()
    settings = []
    for value in args.threads:
        if value == "default":
            settings.append(("torch's default", default_threads))
        elif value.isdigit() and int(value) >= 1:
            settings.append((f"{value} thread(s)", int(value)))
        else:
            parser.error(f"--threads takes positive counts or 'default', got {value!r}")

    from captum.attr import LayerIntegratedGradients

    from xaikit.models.arch import embeddings_module
    from xaikit.policies import set_method_threads, torch_threads
    from xaikit.text.text_ig import baseline_ids, text_integrated_gradients

    model, tok, name = load(args.tiny)
    print(f"model: {name}; rule {args.rule}; repeats {args.repeats}")
    lig = LayerIntegratedGradients(lambda ids, mask: model(input_ids=ids, attention_mask=mask).logits,
                                   embeddings_module(model))
    worst = 0.0
    for label, n_threads in settings:
        set_method_threads(n_threads)  # xaikit's policy and Captum's surroundings: the same count
        print(f"\n-- both on {label} ({n_threads} torch thread(s)) --")
        print(f"{'tokens':>6} {'steps':>5} {'xaikit s':>9} {'captum s':>9} {'ratio':>6} {'max |diff|':>11}")
        with torch_threads(n_threads):
            for n_tokens in (8, 64):
                text = sentence(tok, n_tokens)
                enc = tok(text, return_tensors="pt")
                ids, mask = enc["input_ids"], enc["attention_mask"]
                base = baseline_ids(ids, tok, "pad")
                for steps in (50, 300):
                    ours_t, theirs_t = [], []
                    for _ in range(args.repeats + 1):  # the first round warms up and is not counted
                        t0 = time.perf_counter()
                        ours = text_integrated_gradients(model, tok, text, target=1, baseline="pad", steps=steps,
                                                         rule=args.rule, progress=False)
                        t1 = time.perf_counter()
                        theirs = lig.attribute(ids, base, target=1, n_steps=steps, method=args.rule,
                                               additional_forward_args=(mask,))
                        t2 = time.perf_counter()
                        assert torch.get_num_threads() == n_threads, "a method changed the thread count"
                        ours_t.append(t1 - t0)
                        theirs_t.append(t2 - t1)
                    a, c = statistics.median(ours_t[1:]), statistics.median(theirs_t[1:])
                    diff = float((ours.detail.attributions - theirs[0]).abs().max())
                    worst = max(worst, diff)
                    print(f"{ids.shape[1]:>6} {steps:>5} {a:>9.3f} {c:>9.3f} {a / c:>6.2f} {diff:>11.2e}",
                          flush=True)
    if worst >= 1e-6:
        raise SystemExit(f"FAIL: xaikit and Captum differ by {worst:.2e} (goal < 1e-6)")

if __name__ == "__main__":
    main()
