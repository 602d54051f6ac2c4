r"""Transformer-XL language modelling: quality, and what the memory buys in speed.

1. Quality: trains `recipes.lm` with the dataset's RECIPE_FLAGS (or reuses a finished run in
   --run_dir made with them), then the test split with the training memory, a longer
   evaluation memory, and no memory (the paper's ablation).
2. Evaluation speed: the test set scored with the memory (segment T, memory 512 - T) against
   sliding windows that recompute the same 512-token context, for every segment of T tokens and
   (the paper's vanilla baseline, Al-Rfou et al.) for every token; the windows use the same
   weights built without memory, so they compute no masked positions.
3. Generation speed: 300 new tokens with the cached states against recomputing the whole
   context for every token (greedy, one compiled graph for every length; outputs must match
   while the context fits in the memory).

  python -m benchmarks.lm --dataset=ptb --run_dir=runs/ptb
  python -m benchmarks.lm --dataset=tinyshakespeare --run_dir=runs/shakespeare
"""

import json
import os
import subprocess
import sys
import time

from absl import app, flags

from benchmarks.report import ROOT, write_section
from recipes.lm import load_trained  # also defines the recipes' flags, --dataset among them

flags.DEFINE_string("run_dir", None, "Run directory of the benchmarked model (default runs/bench_lm_<dataset>).")
flags.DEFINE_integer("context", 512, "Context length of the evaluation-speed comparison.")
flags.DEFINE_integer("speed_segments", 40, "Segments timed per evaluation method (the rate is extrapolated).")
flags.DEFINE_integer("speed_streams", 32, "Streams (the batch) the test text is laid out as for the speed comparison.")
flags.DEFINE_integer("speed_repeats", 3, "Each timing is the fastest of this many runs (the machine is noisy).")
flags.DEFINE_integer("vanilla_windows", 20, "Windows (per stream) timed for the one-prediction-per-window baseline.")
FLAGS = flags.FLAGS

RECIPE_FLAGS = {
    "ptb": ["--preset=small", "--batch_size=32", "--dropout=0.2", "--learning_rate=2e-3", "--warmup_steps=200",
            "--schedule=cosine", "--train_steps=3200"],
    "tinyshakespeare": ["--preset=small", "--batch_size=32", "--segment_length=128", "--memory_length=128",
                        "--dropout=0.0", "--learning_rate=2e-3", "--warmup_steps=150", "--schedule=cosine",
                        "--train_steps=1300"],
}


def train_and_evaluate(dataset, run_dir):
    metrics_path = os.path.join(run_dir, "metrics.json")
    flags_ = [f"--dataset={dataset}", *RECIPE_FLAGS[dataset]]
    command = [sys.executable, "-m", "recipes.lm", *flags_, f"--model_dir={run_dir}"]
    done = os.path.exists(metrics_path) and "train" in json.load(open(metrics_path))
    if not done:
        subprocess.run([*command, "--mode=train"], cwd=ROOT, check=True)
    subprocess.run([*command, "--mode=eval", "--eval_split=test", "--eval_memory_length=256"], cwd=ROOT, check=True)
    with open(metrics_path) as f:
        return json.load(f), " ".join(["python -m recipes.lm", *flags_, f"--model_dir={run_dir}"])


def fastest(function, repeats):
    """(result, seconds) of the fastest of `repeats` calls."""
    runs = []
    for _ in range(repeats):
        began = time.time()
        result = function()
        runs.append((time.time() - began, result))
    seconds, result = min(runs, key=lambda run: run[0])
    return result, seconds


def evaluation_speed(run_dir, dataset, context, segments, windows, num_streams, repeats):
    """Scored tokens per second at the same context: memory evaluation (segment T, memory
    context - T) against sliding windows of `context` tokens recomputed from scratch by the
    same weights without memory, scoring T tokens per window, and scoring 1 (Al-Rfou et al.)."""
    from zoo import datasets
    from zoo import language_model as lm

    run = json.load(open(os.path.join(run_dir, "config.json")))
    segment = run["model"]["segment_length"]
    _, model, vocabulary, _ = load_trained(run_dir, memory_length=context - segment)
    _, no_memory, _, _ = load_trained(run_dir, memory_length=0)
    ids = vocabulary.encode(datasets.load_corpus(dataset, "test").text)
    streams = lm.stream_layout(ids, num_streams)

    def timed(evaluate, *args):
        evaluate(*args[:1], args[1][:, : args[2] * 2 + 1], *args[2:])  # traces
        (nll, count), seconds = fastest(lambda: evaluate(*args), repeats)
        return nll / count, count, seconds

    memory = timed(lm.evaluate_streams, model, streams[:, : segment * segments + 1], segment)
    window = timed(lm.evaluate_sliding_window, no_memory, streams[:, : segment * segments + 1], segment, context)
    # One prediction per window, on the windows that end where the memory evaluation's first segments do.
    vanilla = timed(lm.evaluate_sliding_window, no_memory, streams[:, : windows + 1], 1, context)
    return {"segment": segment, "memory": memory, "window": window, "vanilla": vanilla}


def generation_speed(run_dir, repeats, new_tokens=300):
    import numpy as np
    import tensorflow as tf

    from zoo import language_model as lm

    # A memory long enough for the whole text, so both see the same context and must agree.
    _, model, vocabulary, _ = load_trained(run_dir, memory_length=new_tokens + 16)
    _, no_memory, _, _ = load_trained(run_dir, memory_length=0)
    prompt = vocabulary.tokenize(tf.constant(["the company said" if vocabulary.level == "word" else "ROMEO:"]))
    generate = tf.function(lambda p: lm.generate(model, p, new_tokens, greedy=True))
    generate(prompt)
    cached, cached_seconds = fastest(lambda: generate(prompt).numpy(), repeats)
    lm.generate_recomputing(no_memory, prompt.to_tensor(), 2)  # traces
    recomputed, recomputed_seconds = fastest(
        lambda: lm.generate_recomputing(no_memory, prompt.to_tensor(), new_tokens).numpy(), repeats
    )
    return {"cached_seconds": cached_seconds, "recomputed_seconds": recomputed_seconds,
            "same": bool(np.array_equal(cached, recomputed)), "tokens": new_tokens}


def main(argv):
    del argv
    dataset = FLAGS.dataset or "ptb"
    if dataset not in RECIPE_FLAGS:
        raise app.UsageError(f"--dataset={dataset}: this benchmark knows {sorted(RECIPE_FLAGS)}.")
    run_dir = FLAGS.run_dir or os.path.join("runs", f"bench_lm_{dataset}")
    run_dir = run_dir if os.path.isabs(run_dir) else os.path.join(ROOT, run_dir)
    metrics, command = train_and_evaluate(dataset, run_dir)
    evaluation = evaluation_speed(run_dir, dataset, FLAGS.context, FLAGS.speed_segments, FLAGS.vanilla_windows,
                                  FLAGS.speed_streams, FLAGS.speed_repeats)
    generation = generation_speed(run_dir, FLAGS.speed_repeats)

    test, train = metrics["eval_test"], metrics["train"]
    word = dataset == "ptb"
    key, unit = ("perplexity", "perplexity") if word else ("bits_per_character", "bits per character")
    lines = [
        f"Model trained by: `{command}` (step {train['step']}, {train['seconds'] / 60:.1f} min of training, "
        f"{train['tokens_per_second']:.0f} tokens/s).",
        "",
        f"| test set, {unit} | memory | value | evaluation time |",
        "|---|---|---|---|",
    ]
    for name, label in (("train_memory", "training memory"), ("eval_memory", "longer memory"), ("no_memory", "no memory")):
        if name in test:
            lines.append(f"| {label} | {test[name]['memory_length']} | **{test[name][key]:.3f}** | "
                         f"{test[name]['seconds']:.0f} s |")
    rate = {name: evaluation[name][1] / evaluation[name][2] for name in ("memory", "window", "vanilla")}
    segment = evaluation["segment"]
    lines += [
        "",
        f"Evaluation speed at context {FLAGS.context}, test text as {FLAGS.speed_streams} streams (scored tokens "
        f"per second, the fastest of {FLAGS.speed_repeats} runs; the windows are recomputed by the same weights without memory and project only the "
        "positions they score onto the vocabulary):",
        "",
        "| evaluation | scored tokens | tokens/s | memory's speed-up | mean NLL |",
        "|---|---|---|---|---|",
        f"| memory: segments of {segment}, memory {FLAGS.context - segment} | {evaluation['memory'][1]:,} | "
        f"{rate['memory']:.0f} | | {evaluation['memory'][0]:.3f} |",
        f"| sliding window of {FLAGS.context}, {segment} scored per window | {evaluation['window'][1]:,} | "
        f"{rate['window']:.0f} | **{rate['memory'] / rate['window']:.1f}x** | {evaluation['window'][0]:.3f} |",
        f"| sliding window of {FLAGS.context}, 1 scored per window (Al-Rfou et al., the paper's vanilla "
        f"baseline) | {evaluation['vanilla'][1]:,} | {rate['vanilla']:.1f} | "
        f"**{rate['memory'] / rate['vanilla']:.0f}x** | |",
        "",
        f"Generating {generation['tokens']} tokens (greedy, one prompt; the fastest of {FLAGS.speed_repeats} runs): cached states "
        f"{generation['cached_seconds']:.2f} s, recomputing the context every token "
        f"{generation['recomputed_seconds']:.2f} s, speed-up **{generation['recomputed_seconds'] / generation['cached_seconds']:.1f}x**; "
        f"identical tokens: {'yes' if generation['same'] else 'NO'}.",
    ]
    write_section(f"Language model: {dataset}", "\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    app.run(main)
