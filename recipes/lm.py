r"""Transformer-XL language modelling: segment memory in training, evaluation and generation.

  python -m recipes.lm --dataset=ptb --preset=small --model_dir=runs/ptb --export_dir=saved_models/lm_ptb
  python -m recipes.lm --mode=eval --model_dir=runs/ptb --eval_memory_length=256
  python -m recipes.lm --mode=generate --model_dir=runs/shakespeare --prompt="ROMEO:" --max_new_tokens=300 --top_k=40
"""

import dataclasses
import math
import time

from absl import app, flags

from recipes import common, driver
from zoo.data import datasets
from zoo.language_model import corpora as lm_corpora
from zoo.language_model import data as lm_data, inference as lm_inference, preprocessor as lm_preprocessing
from zoo.language_model import model as lm
from zoo.language_model.load import load_run as load_trained
from zoo.training.distribute import is_chief
from zoo.training.evaluation import write_summaries
from zoo.language_model.server import LanguageModelServer
from zoo.core.progress import Progress
from zoo.runs.run_dir import RunDir
from zoo.language_model.run_config import LMRunConfig, base as run_config_base
from zoo.training.config import Task

RECIPE = "lm"
# Flag -> config field, beside common.SHORTCUTS.
SHORTCUTS = {"eval_split": "data.eval_split", "level": "data.level", "vocab_size": "data.vocab_size",
             "text_column": "data.text_column", "random_offset": "data.random_offset",
             **{name: f"model.{name}" for name in ("segment_length", "memory_length", "clamp_length", "same_length",
                                                   "dropout", "attention_dropout", "activation")}}
common.define_mode("generate")
flags.DEFINE_enum("eval_split", None, datasets.SPLITS, "Split to evaluate (tune on validation). Default: test; for "
                  "files without {split}, their held-out share (validation).")
flags.DEFINE_enum("level", None, list(lm_data.FILE_LEVELS), "Tokens of your own text: subword (SentencePiece, "
                  "--vocab_size pieces; the default), word, char or byte. A built-in corpus has its own.")
flags.DEFINE_integer("vocab_size", 8000, "Pieces of a subword vocabulary (--level=subword).")
flags.DEFINE_integer("segment_length", None, "Tokens per segment. Default: the preset's.")
flags.DEFINE_integer("memory_length", None, "Cached positions per layer in training. Default: the preset's.")
flags.DEFINE_integer("eval_memory_length", None, "Cached positions per layer at evaluation (longer helps).")
# Longer is refused when parsed, before any allocation: attention's scores alone hold
# segment_length x (segment_length + memory_length) floats a head and a sequence (64 GiB at 65,536 each).
MAX_POSITIONS = 65_536


def bound_positions(flag):
    flags.register_validator(flag, lambda value: value is None or value <= MAX_POSITIONS,
                             f"--{flag} must be at most {MAX_POSITIONS:,} tokens (attention's scores grow with "
                             "segment_length x (segment_length + memory_length)).")


bound_positions("segment_length")
bound_positions("memory_length")
bound_positions("eval_memory_length")
flags.DEFINE_integer("clamp_length", None, "Relative distances beyond this share one encoding.")
flags.DEFINE_bool("same_length", None, "Every query attends to the same number of keys.")
flags.DEFINE_float("dropout", None, "Dropout rate. Default: the preset's.")
flags.DEFINE_float("attention_dropout", None, "Dropout on attention probabilities (the reference code's dropatt). "
                   "Default: the preset's, where None means --dropout.")
flags.DEFINE_string("activation", None, "Feed-forward activation (a Keras name, e.g. gelu). Default: the preset's.")
flags.DEFINE_bool("random_offset", False, "Start every pass over the training text at a random offset in "
                  "[0, segment_length): segment boundaries differ from pass to pass (for small corpora trained for "
                  "many passes). Drawn from --seed, so a resumed run reads the same segments.")
flags.DEFINE_integer("eval_batch_size", 10, lower_bound=1, help="Streams the evaluated text is laid out as.")
flags.DEFINE_string("prompt", None, "Text to continue (--mode=generate).")
flags.DEFINE_integer("max_new_tokens", 100, "Tokens to generate.")
flags.DEFINE_integer("top_k", 0, "Sample from the k most likely tokens (0 = all).")
flags.DEFINE_float("temperature", 1.0, "Sampling temperature.")
flags.DEFINE_bool("greedy", False, "Greedy generation instead of sampling.")
FLAGS = flags.FLAGS


@dataclasses.dataclass(frozen=True)
class Generation:
    """How text is generated (--mode=generate, and the export's defaults)."""

    max_new_tokens: int
    top_k: int
    temperature: float
    greedy: bool


@dataclasses.dataclass(frozen=True)
class Settings:
    """A language-modelling run as the flags ask for it: the run's typed config (run.config) when it trains."""

    run: common.RunSettings
    eval_split: str | None  # None: the run's dataset's `lm_data.default_split`
    eval_memory_length: int | None
    eval_batch_size: int
    bad_rows: str  # evaluation's (training's is config.data.bad_rows)
    prompt: str | None  # --mode=generate
    generation: Generation


def prepare_run(model_dir, config, corpus, chief):
    """The run's config and vocabulary (`common.start_run`): a new run's is built from the training text (a
    sample of it for a subword vocabulary of data.vocab_size pieces); its size, not a flag, is the model's."""
    data, seed = config.data, config.train.seed
    config = common.start_run(model_dir, RECIPE, config, lambda: lm_data.build_vocabulary(
        corpus, data.vocab_size, seed).save(model_dir), lm_data.vocabulary_file(corpus.level), chief,
        derived=("model.vocab_size",))
    vocabulary = lm_data.load_vocabulary(model_dir)
    return dataclasses.replace(config, model=dataclasses.replace(config.model, vocab_size=len(vocabulary))), vocabulary


def prepare(settings, strategy):
    """The training run (`driver.Prepared`): its config and vocabulary, the training text laid out as
    batch_size streams read segment after segment, and the Task (its memory carried from step to step)."""
    shared = settings.run
    data = shared.config.data
    # Every line read now: a bad one is refused before anything is written.
    corpus = lm_data.load(data.dataset, "train", data.level, data.text_column, data.bad_rows)
    common.check_same_files(shared.model_dir, RECIPE, LMRunConfig, corpus.key.get("files"))
    if shared.evaluating and corpus.paths:  # its bad rows too, before any write
        lm_data.load(data.dataset, settings.eval_split, corpus.level, data.text_column, data.bad_rows)
    asked = dataclasses.replace(shared.config, data=dataclasses.replace(data, level=corpus.level))
    run_config, vocabulary = prepare_run(shared.model_dir, asked, corpus, is_chief(strategy))
    derived = {"files": {"digest": corpus.key["files"], "bad_rows_skipped": corpus.skipped}} if corpus.paths else {}
    config = run_config.model
    replicas = strategy.num_replicas_in_sync
    ids = lm_data.token_stream(corpus, vocabulary, lm_data.vocabulary_key(shared.model_dir))
    ids.check_ids(config.vocab_size)
    if shared.evaluating and corpus.paths:  # a held-out share too short to evaluate is refused before training
        held_out = lm_data.load(data.dataset, settings.eval_split, corpus.level, data.text_column, "skip")
        evaluation_streams(lm_data.token_stream(held_out, vocabulary, lm_data.vocabulary_key(shared.model_dir)),
                           settings.eval_batch_size, config.segment_length, settings.eval_split)
    streams = lm_preprocessing.stream_layout(ids, shared.train.batch_size)
    per_pass = lm_preprocessing.segments_per_pass(streams, config.segment_length, data.random_offset)
    train_config = common.with_epochs(shared.train, shared.epochs, per_pass, per_batch=1)
    per_replica = train_config.batch_size // replicas

    def dataset_fn(context, start_step):
        local = replicas // context.num_input_pipelines
        first = context.input_pipeline_id * local
        return lm_preprocessing.stream_dataset(
            streams, config.segment_length, replicas, first, local, start_step, train_config.train_steps,
            offset_seed=train_config.seed if data.random_offset else None,
        )

    task = Task(
        build_model=lambda: lm.build_language_model(config),
        dataset=dataset_fn,
        loss=lm.lm_loss(train_config.label_smoothing),
        initial_state=lambda model: model.initial_state(per_replica),
    )
    derived["segments_per_pass"] = per_pass
    return driver.Prepared(dataclasses.replace(run_config, train=train_config), derived, task)


def report(nll, count, level):
    """Perplexity for words (and subword pieces), bits per character (or byte) otherwise."""
    mean = nll / count
    if level in ("word", "subword"):
        return {"perplexity": math.exp(mean)}
    return {"bits_per_character": mean / math.log(2)}


def evaluation_streams(ids, batch_size, segment_length, split):
    """The evaluated text as `batch_size` streams and the segments each holds; too short a text is refused."""
    streams = lm_preprocessing.stream_layout(ids, batch_size)
    per_pass = lm_preprocessing.segments_per_pass(streams, segment_length)
    if per_pass < 1:
        raise ValueError(f"The {split} text ({ids.num_tokens} tokens) is too short for --eval_batch_size={batch_size} "
                         f"streams of a {segment_length}-token segment: lower --eval_batch_size, or give a longer "
                         f"{split} split.")
    return streams, per_pass


def run_eval(model_dir, split, eval_memory_length, batch_size, average=1, bad_rows="error"):
    RunDir(model_dir).require_run(RECIPE)
    trained = RunDir(model_dir).read_record(RECIPE, LMRunConfig).config
    split = split or lm_data.default_split(trained.data.dataset)
    corpus = lm_data.load(trained.data.dataset, split, trained.data.level, trained.data.text_column, bad_rows)
    ids = None
    trained_memory = trained.model.memory_length
    memories = {"train_memory": trained_memory, "no_memory": 0}
    if eval_memory_length and eval_memory_length != trained_memory:
        memories["eval_memory"] = eval_memory_length
    results = {}
    for name, memory_length in memories.items():
        loaded = load_trained(model_dir, memory_length, average)
        if ids is None:
            ids = lm_data.token_stream(corpus, loaded.tokenizer, lm_data.vocabulary_key(model_dir))
            ids.check_ids(loaded.config.vocab_size)
        segment = loaded.config.segment_length
        streams, per_pass = evaluation_streams(ids, batch_size, segment, split)
        progress = Progress(per_pass, unit=f"{split} segment (memory {memory_length})")
        began = time.time()
        nll, count = lm_inference.evaluate_streams(loaded.model, streams, segment, progress,
                                                   use_memory=memory_length > 0)
        result = {**report(nll, count, corpus.level), "memory_length": memory_length, "tokens": count,
                  "seconds": time.time() - began}
        results[name] = result
        figure = next(iter(report(nll, count, corpus.level).items()))
        print(f"{split}, memory {memory_length}: {figure[0]} {figure[1]:.3f} over {count} tokens")
    write_summaries(
        model_dir, f"eval_{split}", loaded.step,
        {f"{k}_{n}": v for n, r in results.items() for k, v in r.items() if k != "tokens"},
    )
    RunDir(model_dir).update_metrics(**{f"eval_{split}": {**results, "step": loaded.step,
                                                          "average_checkpoints": average}})
    return results


def server(loaded, settings):
    generation, vocabulary = settings.generation, loaded.tokenizer
    module = LanguageModelServer(loaded.model, vocabulary, generation.max_new_tokens, generation.temperature,
                                 generation.top_k)
    example = "the company said" if vocabulary.level in ("word", "subword") else "ROMEO:"
    return driver.Serving(
        module, {"serving_default": module.serve, "generate": module.generate, "score": module.score},
        {"prompt": [example, ""]},
        metadata={"recipe": RECIPE, "dataset": loaded.record.config.data.dataset, "step": loaded.step,
                  "model": dataclasses.asdict(loaded.record.config.model), "level": vocabulary.level},
    )


def run_generate(model_dir, prompt, generation, seed, average=1):
    import tensorflow as tf

    if not prompt or not prompt.strip():
        raise ValueError('--prompt is empty: give the text to continue, e.g. --prompt="ROMEO:".')
    loaded = load_trained(model_dir, average=average)
    model, vocabulary = loaded.model, loaded.tokenizer
    if generation.top_k > len(vocabulary):
        raise ValueError(f"--top_k={generation.top_k} is more than the {len(vocabulary)} tokens of the vocabulary: "
                         f"give at most {len(vocabulary)} (0 = all).")
    prompt_ids = lm_preprocessing.text_ids(vocabulary, tf.constant([prompt]))
    if prompt_ids.row_lengths()[0] > model.config.memory_length:
        print(f"(The prompt has {int(prompt_ids.row_lengths()[0]) - 1} tokens; it is read segment by segment and the "
              f"continuation sees its last {model.config.memory_length} through the memory.)")
    generate = tf.function(lambda ids: lm_inference.generate(
        model, ids, generation.max_new_tokens, generation.temperature, generation.top_k, greedy=generation.greedy,
        seed=(seed, 0)))
    tokens = generate(prompt_ids)
    text = vocabulary.detokenize(tokens).numpy()[0].decode("utf-8", errors="replace")
    separator = " " if vocabulary.level == "word" and not text.startswith("\n") else ""
    print(prompt + separator + text)
    return text


def config_from_flags(mode):
    """Settings from the flags; every flag is checked here, before any work."""
    generation = Generation(FLAGS.max_new_tokens, FLAGS.top_k, FLAGS.temperature, FLAGS.greedy)
    if generation.max_new_tokens <= 0:
        raise ValueError(f"--max_new_tokens={generation.max_new_tokens}: it must be positive.")
    if not (0 < generation.temperature < math.inf) or generation.top_k < 0:
        raise ValueError("--temperature must be positive and finite, and --top_k non-negative.")
    training = mode in common.TRAINING_MODES
    config = None
    if training or mode == "config":
        config = common.run_config(LMRunConfig, run_config_base, RECIPE, SHORTCUTS)
        dataset = config.data.dataset
        if training and not dataset:
            raise app.UsageError(f"--dataset is required to train (one of {sorted(lm_corpora.CORPORA)}, or your own "
                                 "files: text:, csv:, jsonl:), or data.dataset in --config.")
        if dataset and dataset not in lm_corpora.CORPORA and lm_data.files.parse(dataset, lm_data.FORMS) is None:
            raise datasets.DatasetError(f"Unknown language-modelling dataset {dataset!r}: use one of "
                                        f"{sorted(lm_corpora.CORPORA)}, or your own files (text:PATTERN, csv:, jsonl:).")
        if config.data.level is not None and dataset in lm_corpora.CORPORA:
            lm_data.load(dataset, "validation", config.data.level)  # a built-in corpus has its own level
    eval_split = config.data.eval_split if config is not None else FLAGS.eval_split
    if config is not None and eval_split is None and config.data.dataset:
        eval_split = lm_data.default_split(config.data.dataset)
    if mode == "train_and_eval":  # a missing or damaged evaluation file fails now, not after training
        lm_data.check_split(config.data.dataset, eval_split)
    return Settings(common.run_settings(config), eval_split, FLAGS.eval_memory_length, FLAGS.eval_batch_size,
                    FLAGS.bad_rows, FLAGS.prompt, generation)


LM = driver.Recipe(
    name=RECIPE,
    config_from_flags=config_from_flags,
    prepare=prepare,
    load=load_trained,
    server=server,
    evaluate=lambda settings: run_eval(settings.run.model_dir, settings.eval_split, settings.eval_memory_length,
                                       settings.eval_batch_size, settings.run.average_checkpoints,
                                       settings.bad_rows),
    modes={"generate": lambda settings: run_generate(settings.run.model_dir, settings.prompt, settings.generation,
                                                     settings.run.seed, settings.run.average_checkpoints)},
)

if __name__ == "__main__":
    driver.run(LM)
