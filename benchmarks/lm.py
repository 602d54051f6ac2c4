r"""Transformer-XL language modelling: quality, and what the memory buys in speed.

1. Quality: trains `recipes.lm` with the dataset's RECIPE_FLAGS (or reuses a finished run in
   --run_dir made with them), then the test split with the training memory, a longer
   evaluation memory, and no memory (the paper's ablation).
2. Evaluation speed: the test set scored with the memory (segment T, memory 512 - T) against
   sliding windows that recompute the same 512-token context, for every segment of T tokens
   (for several T: the saving grows as T shrinks) and (the paper's vanilla baseline, Al-Rfou
   et al.) for every token; the windows use the same weights built without memory, so they
   compute no masked positions.
3. Generation speed: 300 new tokens with the cached states against recomputing the whole
   context for every token (greedy, one compiled graph for every length; outputs must match
   while the context fits in the memory).
`--seeds=0,1` also trains the same flags with seed 1 in <run_dir>_seed1 and tabulates the test
figures of both (how robust the recipe is); the speed rows use the first seed's run.
Each speed-up but the vanilla baseline's (timed once: it is by far the slowest) is
the median ratio over pairs of runs taken alternately (`report.paired`).

  python -m benchmarks.lm --dataset=ptb --run_dir=runs/ptb
  python -m benchmarks.lm --dataset=tinyshakespeare --run_dir=runs/shakespeare
  python -m benchmarks.lm --quick   # a smoke run: the tiny preset for 2 steps, a context of 64, short timings
"""

import os
import time

from absl import app, flags

from benchmarks.common import quick, recipe_flags, runs
from benchmarks.common.costs import multiply_adds
from benchmarks.common.peak import training_share
from benchmarks.common.report import ROOT, median_seconds, paired, read_record, write_section
from recipes import lm  # noqa: F401  (defines the recipe's flags, --dataset among them)
from zoo.language_model.recipe import load_trained

flags.DEFINE_string("run_dir", None, "Run directory of the benchmarked model (default runs/bench_lm_<dataset>).")
flags.DEFINE_integer("context", 512, "Context length of the evaluation-speed comparison.")
flags.DEFINE_list("speed_segment_lengths", None, "Evaluation segment lengths of the speed comparison (default: "
                  "the training segment length, its half and its quarter).")
flags.DEFINE_integer("speed_tokens", 768, "Tokens per stream scored by each evaluation method in the speed comparison.")
flags.DEFINE_integer("speed_streams", 32, "Streams (the batch) the test text is laid out as for the speed comparison.")
flags.DEFINE_integer("speed_repeats", 3, "Evaluation timings: pairs of runs (memory, window), taken alternately.")
flags.DEFINE_integer("generation_repeats", 5, "Generation timings: pairs of runs (cached, recomputed), alternately.")
flags.DEFINE_list("seeds", ["0"], "Training seeds (--seed of the recipe). The first seed's run is the one timed; each "
                  "further seed trains its own run (<run_dir>_seed<N>) with the same flags, for its test figures.")
flags.DEFINE_list("averages", ["1"], "How many of the last checkpoints to average (the recipe's "
                  "--average_checkpoints), each scored on validation; the best one is evaluated on test. N above 1 "
                  "needs the run's --keep_checkpoints of N or more.")
flags.DEFINE_integer("vanilla_windows", 20, "Windows (per stream) timed for the one-prediction-per-window baseline.")
FLAGS = flags.FLAGS

RECIPE_FLAGS = recipe_flags.LM


def train_and_evaluate(dataset, run_dir, seed=0, averages=(1,)):
    """Trains (unless done); with several `averages`, picks on validation how many of the last checkpoints to
    average (`--average_checkpoints`); evaluates test with it. Returns metrics.json, the training command and
    {checkpoints averaged: validation figure with the training memory} ({} with one choice)."""
    flags_ = quick.training([f"--dataset={dataset}", *RECIPE_FLAGS[dataset], f"--seed={seed}"])
    runs.train_unless_finished("lm", run_dir, flags_)  # a finished run must have these flags, --seed among them
    key = "perplexity" if dataset == "ptb" else "bits_per_character"
    averages = tuple(dict.fromkeys(averages))

    def validate(n):  # evaluation reads the run's config
        return runs.evaluation("lm", run_dir, "eval_validation", "--eval_split=validation",
                               f"--average_checkpoints={n}")["train_memory"][key]

    tried = {n: validate(n) for n in averages} if len(averages) > 1 else {}
    best = min(tried, key=tried.get) if tried else averages[0]
    if tried and best != averages[-1]:  # metrics.json keeps the chosen one's validation figures
        validate(best)
    metrics = runs.run_recipe("lm", run_dir, "--mode=eval", "--eval_split=test", "--eval_memory_length=256",
                              f"--average_checkpoints={best}")
    return metrics, runs.command("lm", flags_, run_dir), tried


def evaluation_speed(run_dir, dataset, context, segment_lengths, tokens, windows, num_streams, repeats):
    """Scored tokens per second at the same context, for each evaluation segment length T:
    memory evaluation (memory context - T) against sliding windows of `context` tokens
    recomputed from scratch by the same weights without memory, scoring T tokens per window;
    and, once, windows scoring 1 token each (Al-Rfou et al.)."""
    from benchmarks.common.baselines import evaluate_sliding_window
    from zoo.language_model import corpora as lm_corpora
    from zoo.language_model.inference import evaluate_streams
    from zoo.language_model.preprocessor import stream_layout

    memoryless = load_trained(run_dir, memory_length=0)
    config, no_memory, vocabulary = memoryless.config, memoryless.model, memoryless.tokenizer
    vocab_size = config.vocab_size
    streams = stream_layout(vocabulary.encode(lm_corpora.load_corpus(dataset, "test").text), num_streams)
    rows = []
    for segment in segment_lengths:
        model = load_trained(run_dir, memory_length=context - segment).model
        text = streams[:, : tokens // segment * segment + 1]
        warm = streams[:, : segment + 1]
        evaluate_streams(model, warm, segment)  # traces
        evaluate_sliding_window(no_memory, warm, segment, context)
        memory_runs, window_runs, speedup = paired(
            lambda: evaluate_streams(model, text, segment),
            lambda: evaluate_sliding_window(no_memory, text, segment, context),
            repeats,
            f"evaluation, T = {segment} (memory, window)",
        )
        (memory_nll, count), (window_nll, _) = memory_runs[-1][1], window_runs[-1][1]
        compute = multiply_adds(config, context, context, segment, vocab_size) / multiply_adds(
            config, segment, context, segment, vocab_size
        )
        rows.append({"segment": segment, "tokens": count, "memory_rate": count / median_seconds(memory_runs),
                     "window_rate": count / median_seconds(window_runs), "speedup": speedup,
                     "compute_ratio": compute, "memory_nll": memory_nll / count, "window_nll": window_nll / count})
        print(rows[-1], flush=True)
    # One prediction per window, on the windows that end where the memory evaluation's first segments do.
    text = streams[:, : windows + 1]
    evaluate_sliding_window(no_memory, text[:, :2], 1, context)
    began = time.time()
    _, count = evaluate_sliding_window(no_memory, text, 1, context)
    first = segment_lengths[0]  # the vanilla window's multiply-adds per scored token over the memory's at T = first
    compute = multiply_adds(config, context, context, 1, vocab_size) * first / multiply_adds(
        config, first, context, first, vocab_size
    )
    vanilla = {"tokens": count, "rate": count / (time.time() - began), "compute_ratio": compute}
    return rows, vanilla


def generation_speed(run_dir, repeats, new_tokens):
    import numpy as np
    import tensorflow as tf

    from benchmarks.common.baselines import generate_recomputing
    from zoo.language_model.inference import generate

    # A memory long enough for the whole text, so both see the same context and must agree.
    loaded = load_trained(run_dir, memory_length=new_tokens + 16)
    model, vocabulary = loaded.model, loaded.tokenizer
    no_memory = load_trained(run_dir, memory_length=0).model
    prompt = vocabulary.tokenize(tf.constant(["the company said" if vocabulary.level == "word" else "ROMEO:"]))
    cached_generate = tf.function(lambda p: generate(model, p, new_tokens, greedy=True))
    cached_generate(prompt)  # traces
    generate_recomputing(no_memory, prompt.to_tensor(), 2)  # traces
    cached, recomputed, speedup = paired(
        lambda: cached_generate(prompt).numpy(),
        lambda: generate_recomputing(no_memory, prompt.to_tensor(), new_tokens).numpy(),
        repeats,
        "generation (cached, recomputed)",
    )
    return {"cached_seconds": median_seconds(cached), "recomputed_seconds": median_seconds(recomputed),
            "speedup": speedup, "same": bool(np.array_equal(cached[-1][1], recomputed[-1][1])), "tokens": new_tokens}


def main(argv):
    del argv
    quick.shrink(context=64, speed_tokens=32, speed_streams=4, speed_repeats=1, generation_repeats=1,
                 vanilla_windows=2)
    dataset = FLAGS.dataset or "ptb"
    if dataset not in RECIPE_FLAGS:
        raise app.UsageError(f"--dataset={dataset}: this benchmark knows {sorted(RECIPE_FLAGS)}.")
    run_dir = FLAGS.run_dir or (quick.folder("lm") if quick.active() else os.path.join("runs", f"bench_lm_{dataset}"))
    run_dir = run_dir if os.path.isabs(run_dir) else os.path.join(ROOT, run_dir)
    seeds = [int(seed) for seed in FLAGS.seeds]
    if not seeds:
        raise app.UsageError("--seeds needs at least one seed.")
    averages = tuple(int(n) for n in FLAGS.averages)
    metrics, command, tried = train_and_evaluate(dataset, run_dir, seeds[0], averages)
    other_seeds = [(seed, train_and_evaluate(dataset, f"{run_dir}_seed{seed}", seed, averages)[0])
                   for seed in seeds[1:]]
    config = read_record(run_dir).config
    dtype = config.train.mixed_precision
    share = training_share("lm", config, run_dir, metrics["train"])
    segment = config.model.segment_length
    lengths = [int(t) for t in FLAGS.speed_segment_lengths or (segment, segment // 2, segment // 4)]
    rows, vanilla = evaluation_speed(run_dir, dataset, FLAGS.context, lengths, FLAGS.speed_tokens,
                                     FLAGS.vanilla_windows, FLAGS.speed_streams, FLAGS.speed_repeats)
    generation = generation_speed(run_dir, FLAGS.generation_repeats, new_tokens=20 if quick.active() else 300)

    test, train = metrics["eval_test"], metrics["train"]
    word = dataset == "ptb"
    key, unit = ("perplexity", "perplexity") if word else ("bits_per_character", "bits per character")
    lines = [
        f"Model trained by: `{command}` (step {train['step']}, {train['seconds'] / 60:.1f} min of training, "
        f"{train['tokens_per_second']:.0f} tokens/s, {dtype} by `--mixed_precision=auto`).",
        "",
        share,
        "",
    ]
    if tried:
        lines += [f"Checkpoints averaged (`--average_checkpoints`), chosen on validation ({unit} with the training "
                  "memory): " + ", ".join(f"{n}: {v:.3f}" for n, v in tried.items())
                  + f"; the test rows use {metrics['eval_test'].get('average_checkpoints', 1)}.", ""]
    lines += [
        f"| test set, {unit} | memory | value | evaluation time |",
        "|---|---|---|---|",
    ]
    for name, label in (("train_memory", "training memory"), ("eval_memory", "longer memory"), ("no_memory", "no memory")):
        if name in test:
            lines.append(f"| {label} | {test[name]['memory_length']} | **{test[name][key]:.3f}** | "
                         f"{test[name]['seconds']:.0f} s |")
    if other_seeds:
        lines += [
            "",
            f"The same flags with other seeds (`--seed`: initialization, data order, the tokenizer's sample), each "
            f"its own run (`--model_dir={run_dir}_seed<N>`): test {unit}",
            "",
            "| seed | training memory | no memory | training time |",
            "|---|---|---|---|",
        ]
        for seed, other in [(seeds[0], metrics), *other_seeds]:
            other_test = other["eval_test"]
            lines.append(f"| {seed} | **{other_test['train_memory'][key]:.3f}** | {other_test['no_memory'][key]:.3f} | "
                         f"{other['train']['seconds'] / 60:.1f} min |")
    context = FLAGS.context
    lines += [
        "",
        f"Evaluation speed at context {context}: the test text as {FLAGS.speed_streams} streams, "
        f"{rows[0]['tokens'] // FLAGS.speed_streams} tokens of each scored in segments of T tokens (the first "
        f"{rows[-1]['tokens'] // FLAGS.speed_streams} for the last T), with the memory (the last "
        f"{context} - T positions) and by sliding windows of {context} tokens recomputed for every segment by the "
        "same weights without memory (each window projects only its T scored positions onto the vocabulary). "
        f"Tokens/s: each method's median run. Speed-up: the median of the ratios of {FLAGS.speed_repeats} pairs "
        "of runs taken alternately, so both methods see the same spells of this noisy machine. Compute ratio: the window's multiply-adds per scored token over "
        f"the memory's (`multiply_adds` in benchmarks/common/costs.py); the model was trained with T = {segment}.",
        "",
        "| T | memory, tokens/s | window, tokens/s | memory's speed-up | compute ratio | mean NLL, memory / window |",
        "|---|---|---|---|---|---|",
    ]
    for row in rows:
        lines.append(
            f"| {row['segment']} | {row['memory_rate']:.0f} | {row['window_rate']:.0f} | **{row['speedup']:.1f}x** "
            f"| {row['compute_ratio']:.1f} | {row['memory_nll']:.3f} / {row['window_nll']:.3f} |"
        )
    first = rows[0]
    lines += [
        "",
        f"The paper's vanilla baseline (Al-Rfou et al.: a window of {context} recomputed for every scored token), "
        f"timed once on {vanilla['tokens']:,} tokens: {vanilla['rate']:.1f} tokens/s, so the memory at T = "
        f"{first['segment']} is **{first['memory_rate'] / vanilla['rate']:.0f}x** faster (compute ratio "
        f"{vanilla['compute_ratio']:.0f}).",
        "",
        f"Generating {generation['tokens']} tokens (greedy, one prompt; medians of {FLAGS.generation_repeats} "
        f"pairs of runs taken alternately): cached states {generation['cached_seconds']:.2f} s, recomputing the "
        f"context every token {generation['recomputed_seconds']:.2f} s, speed-up "
        f"**{generation['speedup']:.1f}x**; identical tokens: {'yes' if generation['same'] else 'NO'}.",
    ]
    write_section(f"Language model: {dataset}", "\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    app.run(main)
