r"""Transformer-XL language modelling: segment memory in training, evaluation and generation.

  python -m recipes.lm --dataset=ptb --preset=small --model_dir=runs/ptb --export_dir=saved_models/lm_ptb
  python -m recipes.lm --mode=eval --model_dir=runs/ptb --eval_memory_length=256
  python -m recipes.lm --mode=generate --model_dir=runs/shakespeare --prompt="ROMEO:" --max_new_tokens=300 --top_k=40
"""

import dataclasses
import math
import os
import time

from absl import app, flags

from recipes import common
from zoo import datasets, export
from zoo import language_model as lm
from zoo.distribute import is_chief, make_strategy
from zoo.evaluation import write_summaries
from zoo.progress import Progress
from zoo.run_dir import RunDir, RunDirError
from zoo.training import Task, Trainer, TrainConfig
from zoo.vocabulary import VOCABULARY_FILE, Vocabulary

RECIPE = "lm"
MODES = ("train", "eval", "train_and_eval", "export", "generate")
DEFAULTS = TrainConfig(
    train_steps=4000,
    batch_size=32,
    learning_rate=1e-3,
    warmup_steps=400,
    label_smoothing=0.0,
    clip_norm=0.25,
    checkpoint_every=500,
    log_every=50,
)

flags.DEFINE_enum("mode", "train_and_eval", MODES, "What to do.")
flags.DEFINE_enum("eval_split", "test", datasets.SPLITS, "Split to evaluate (tune on validation).")
flags.DEFINE_integer("segment_length", None, "Tokens per segment. Default: the preset's.")
flags.DEFINE_integer("memory_length", None, "Cached positions per layer in training. Default: the preset's.")
flags.DEFINE_integer("eval_memory_length", None, "Cached positions per layer at evaluation (longer helps).")
flags.DEFINE_integer("clamp_length", None, "Relative distances beyond this share one encoding.")
flags.DEFINE_bool("same_length", None, "Every query attends to the same number of keys.")
flags.DEFINE_float("dropout", None, "Dropout rate. Default: the preset's.")
flags.DEFINE_float("attention_dropout", None, "Dropout on attention probabilities (the reference code's dropatt). "
                   "Default: the preset's, where None means --dropout.")
flags.DEFINE_string("activation", None, "Feed-forward activation (a Keras name, e.g. gelu). Default: the preset's.")
flags.DEFINE_bool("random_offset", False, "Start every pass over the training text at a random offset in "
                  "[0, segment_length): segment boundaries differ from pass to pass (for small corpora trained for "
                  "many passes; it did not change Tiny Shakespeare's figure). Drawn from --seed, so a resumed run "
                  "reads the same segments.")
flags.DEFINE_integer("eval_batch_size", 10, lower_bound=1, help="Streams the evaluated text is laid out as.")
flags.DEFINE_string("prompt", None, "Text to continue (--mode=generate).")
flags.DEFINE_integer("max_new_tokens", 100, "Tokens to generate.")
flags.DEFINE_integer("top_k", 0, "Sample from the k most likely tokens (0 = all).")
flags.DEFINE_float("temperature", 1.0, "Sampling temperature.")
flags.DEFINE_bool("greedy", False, "Greedy generation instead of sampling.")
FLAGS = flags.FLAGS


def model_config(preset, **overrides):
    return common.preset_config(lm.PRESETS, preset, **overrides)


def prepare_run(model_dir, dataset, wanted, corpus, chief):
    """The run's record and vocabulary: read back when resuming, else built from the training text."""
    os.makedirs(model_dir, exist_ok=True)
    run_dir = RunDir(model_dir)
    run = run_dir.read_run(RECIPE)
    if run is not None:
        # The vocabulary's size comes from the text, not from a flag.
        wanted = dataclasses.replace(wanted, vocab_size=run["model"].get("vocab_size", wanted.vocab_size))
        if run["dataset"] != dataset or run["model"] != dataclasses.asdict(wanted):
            raise RunDirError(
                f"{model_dir} holds a run of {run['dataset']!r} with model {run['model']}; resume it with the same "
                "--dataset/--preset/--segment_length/--memory_length/--clamp_length/--same_length/--dropout/"
                "--attention_dropout/--activation, "
                "or use another --model_dir."
            )
        return run, Vocabulary.load(model_dir)
    if chief:
        Vocabulary.build(corpus.text, corpus.level).save(model_dir)
    else:
        run_dir.wait_for(VOCABULARY_FILE)
    vocabulary = Vocabulary.load(model_dir)
    wanted = dataclasses.replace(wanted, vocab_size=len(vocabulary))
    return {"recipe": RECIPE, "dataset": dataset, "model": dataclasses.asdict(wanted)}, vocabulary


def train(model_dir, dataset, wanted, train_config, epochs, strategy, random_offset=False):
    corpus = datasets.load_corpus(dataset, "train")
    chief = is_chief(strategy)
    run, vocabulary = prepare_run(model_dir, dataset, wanted, corpus, chief)
    if "data" in run:  # runs recorded before --random_offset existed trained without it
        run = {**run, "data": {"random_offset": False, **run["data"]}}
    config = lm.LMConfig(**run["model"])
    replicas = strategy.num_replicas_in_sync
    if train_config.batch_size % replicas:
        raise ValueError(f"batch_size={train_config.batch_size} streams are not divisible by the {replicas} replicas.")
    streams = lm.stream_layout(vocabulary.encode(corpus.text), train_config.batch_size)
    per_pass = lm.segments_per_pass(streams, config.segment_length, random_offset)
    if epochs is not None:
        train_config = dataclasses.replace(train_config, train_steps=max(1, round(epochs * per_pass)))
    setup = {"replicas": replicas, "strategy": type(strategy).__name__, "segments_per_pass": per_pass,
             "random_offset": random_offset}
    RunDir(model_dir).record_training(run, train_config, setup, chief)
    per_replica = train_config.batch_size // replicas

    def dataset_fn(context, start_step):
        local = replicas // context.num_input_pipelines
        first = context.input_pipeline_id * local
        return lm.stream_dataset(streams, config.segment_length, replicas, first, local, start_step,
                                 train_config.train_steps, offset_seed=train_config.seed if random_offset else None)

    task = Task(
        build_model=lambda: lm.build_language_model(config),
        dataset=dataset_fn,
        loss=lm.lm_loss(train_config.label_smoothing),
        initial_state=lambda model: model.initial_state(per_replica),
    )
    metrics = Trainer(task, train_config, model_dir, strategy).train()
    if chief and metrics is not None:
        RunDir(model_dir).update_metrics(train=metrics)
    return metrics


def load_trained(model_dir, memory_length=None):
    """The newest checkpoint (float32), optionally keeping a different memory length."""
    run_dir = RunDir(model_dir)
    run = run_dir.require_run(RECIPE)
    config = lm.LMConfig(**run["model"])
    if memory_length is not None:
        config = lm.with_memory_length(config, memory_length)
    model, step = run_dir.load_model(lambda: lm.build_language_model(config), common.averaged())
    return run, model, Vocabulary.load(model_dir), step


def report(nll, count, level):
    """Perplexity for words, bits per character (or byte) otherwise."""
    mean = nll / count
    return {"perplexity": math.exp(mean)} if level == "word" else {"bits_per_character": mean / math.log(2)}


def run_eval(model_dir, split, eval_memory_length, batch_size):
    run = RunDir(model_dir).require_run(RECIPE)
    corpus = datasets.load_corpus(run["dataset"], split)
    trained_memory = run["model"]["memory_length"]
    settings = {"train_memory": trained_memory, "no_memory": 0}
    if eval_memory_length and eval_memory_length != trained_memory:
        settings["eval_memory"] = eval_memory_length
    results = {}
    for name, memory_length in settings.items():
        _, model, vocabulary, step = load_trained(model_dir, memory_length)
        streams = lm.stream_layout(vocabulary.encode(corpus.text), batch_size)
        segment = model.config.segment_length
        progress = Progress(lm.segments_per_pass(streams, segment), unit=f"{split} segment (memory {memory_length})")
        began = time.time()
        nll, count = lm.evaluate_streams(model, streams, segment, progress, use_memory=memory_length > 0)
        result = {**report(nll, count, corpus.level), "memory_length": memory_length, "tokens": count,
                  "seconds": time.time() - began}
        results[name] = result
        figure = next(iter(report(nll, count, corpus.level).items()))
        print(f"{split}, memory {memory_length}: {figure[0]} {figure[1]:.3f} over {count} tokens")
    write_summaries(
        model_dir, f"eval_{split}", step, {f"{k}_{n}": v for n, r in results.items() for k, v in r.items() if k != "tokens"}
    )
    RunDir(model_dir).update_metrics(**{f"eval_{split}": {**results, "step": step,
                                                          "average_checkpoints": common.averaged()}})
    return results


def run_export(model_dir, export_dir):
    run, model, vocabulary, step = load_trained(model_dir)
    server = lm.LanguageModelServer(model, vocabulary, FLAGS.max_new_tokens, FLAGS.temperature, FLAGS.top_k)
    example = "the company said" if vocabulary.level == "word" else "ROMEO:"
    path = export.export(
        server,
        {"serving_default": server.serve, "generate": server.generate, "score": server.score},
        export_dir,
        {"prompt": [example, ""]},
        metadata={"recipe": RECIPE, "dataset": run["dataset"], "step": step, "model": run["model"],
                  "level": vocabulary.level},
    )
    print(f"Exported step {step} to {path}")
    return path


def run_generate(model_dir, prompt, max_new_tokens, top_k, temperature, greedy, seed):
    import tensorflow as tf

    if not prompt or not prompt.strip():
        raise ValueError('--prompt is empty: give the text to continue, e.g. --prompt="ROMEO:".')
    if max_new_tokens <= 0:
        raise ValueError(f"--max_new_tokens={max_new_tokens}: it must be positive.")
    if temperature <= 0 or top_k < 0:
        raise ValueError("--temperature must be positive and --top_k non-negative.")
    _, model, vocabulary, _ = load_trained(model_dir)
    prompt_ids = lm.prompt_ids(vocabulary, tf.constant([prompt]))
    if prompt_ids.row_lengths()[0] > model.config.memory_length:
        print(f"(The prompt has {int(prompt_ids.row_lengths()[0]) - 1} tokens; it is read segment by segment and the "
              f"continuation sees its last {model.config.memory_length} through the memory.)")
    generate = tf.function(
        lambda ids: lm.generate(model, ids, max_new_tokens, temperature, top_k, greedy=greedy, seed=(seed, 0))
    )
    tokens = generate(prompt_ids)
    text = vocabulary.detokenize(tokens).numpy()[0].decode("utf-8", errors="replace")
    separator = " " if vocabulary.level == "word" and not text.startswith("\n") else ""
    print(prompt + separator + text)
    return text


def main(argv):
    del argv
    mode, model_dir = FLAGS.mode, FLAGS.model_dir
    if not model_dir:
        raise app.UsageError("--model_dir is required.")
    training, evaluating = mode in ("train", "train_and_eval"), mode in ("eval", "train_and_eval")
    exporting = mode == "export" or (training and FLAGS.export_dir)
    if exporting and not FLAGS.export_dir:
        raise app.UsageError("--mode=export needs --export_dir.")
    strategy = None
    if training:
        if not FLAGS.dataset:
            raise app.UsageError(f"--dataset is required to train (one of {sorted(datasets.CORPORA)}).")
        if FLAGS.dataset not in datasets.CORPORA:
            raise datasets.DatasetError(f"Unknown language-modelling dataset {FLAGS.dataset!r}: use one of "
                                        f"{sorted(datasets.CORPORA)}.")
        if FLAGS.max_examples is not None:
            raise ValueError("--max_examples picks training examples (sentiment, translation); a language model "
                             "trains on the whole text: shorten a quick run with --train_steps instead.")
        wanted = model_config(
            FLAGS.preset,
            segment_length=FLAGS.segment_length,
            memory_length=FLAGS.memory_length,
            clamp_length=FLAGS.clamp_length,
            same_length=FLAGS.same_length,
            dropout=FLAGS.dropout,
            attention_dropout=FLAGS.attention_dropout,
            activation=FLAGS.activation,
        )
        if evaluating:  # a missing or damaged evaluation file fails now, not after training
            datasets.load_corpus(FLAGS.dataset, FLAGS.eval_split)
        train_config, epochs = common.train_config(DEFAULTS)
        strategy = make_strategy(FLAGS.strategy, FLAGS.cpu_replicas, FLAGS.tpu)
    with common.hold_model_dir(mode, strategy):
        if training:
            train(model_dir, FLAGS.dataset, wanted, train_config, epochs, strategy, FLAGS.random_offset)
            if not is_chief(strategy):
                return
        if evaluating:
            run_eval(model_dir, FLAGS.eval_split, FLAGS.eval_memory_length, FLAGS.eval_batch_size)
        if exporting:
            run_export(model_dir, FLAGS.export_dir)
        if mode == "generate":
            run_generate(model_dir, FLAGS.prompt, FLAGS.max_new_tokens, FLAGS.top_k, FLAGS.temperature, FLAGS.greedy,
                         FLAGS.seed)


if __name__ == "__main__":
    common.run(main)
