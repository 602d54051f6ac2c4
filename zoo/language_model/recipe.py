"""The language-modelling recipe: Transformer-XL with segment memory in training, evaluation and generation, on a
built-in corpus or the user's files; run by zoo.training.driver from the command line (recipes/lm.py) or from
Python (zoo.train("lm", ...))."""

import dataclasses
import math
import time

from zoo.core.progress import Progress
from zoo.data import datasets, spec as dataset_spec, tokenizer, word_embedding
from zoo.language_model import corpora as lm_corpora
from zoo.language_model import data as lm_data, inference as lm_inference, preprocessor as lm_preprocessing
from zoo.language_model import model as lm
from zoo.language_model.load import RECIPE, load_run as load_trained
from zoo.language_model.run_config import LMRunConfig, base as run_config_base
from zoo.language_model.server import LanguageModelServer
from zoo.language_model.vocabulary import EOS, PAD, UNK, VOCABULARY_FILE, Vocabulary
from zoo.training import driver, run_settings
from zoo.training.config import Task
from zoo.training.distribute import is_chief
from zoo.training.evaluation import write_summaries

# Shortcut -> config field, beside zoo.training.run_settings.SHORTCUTS.
SHORTCUTS = {"eval_split": "data.eval_split", "level": "data.level", "vocab_size": "data.vocab_size",
             "text_column": "data.text_column", "random_offset": "data.random_offset",
             **{name: f"model.{name}" for name in ("segment_length", "memory_length", "clamp_length", "same_length",
                                                   "dropout", "attention_dropout", "activation",
                                                   "word_vectors", "freeze_word_vectors")},
             "eval_memory_length": "eval.memory_length", "eval_batch_size": "eval.batch_size",
             **{name: f"eval.{name}" for name in ("prompt", "max_new_tokens", "top_k", "temperature", "greedy")}}
SAMPLING = {name: f"eval.{name}" for name in ("max_new_tokens", "top_k", "temperature")}  # the export's defaults too
EVALUATION = {"eval_memory_length": "eval.memory_length", "eval_batch_size": "eval.batch_size"}
# The shortcuts each mode reads beside a training run's fields (zoo.training.run_settings.reads): the evaluation's
# memory and streams, --mode=eval's split and rows; --mode=generate's prompt and sampling, and the export's.
READS = {"train_and_eval": EVALUATION,
         "eval": {**EVALUATION, "eval_split": "data.eval_split", "bad_rows": "data.bad_rows"},
         "generate": {**SAMPLING, "greedy": "eval.greedy", "prompt": "eval.prompt", "seed": "eval.seed"},
         "export": SAMPLING}


def prepare_run(folder, config, corpus, chief, words=None):
    """The run's config and vocabulary (`run_settings.start_run`; `folder`: the run's RunDir): a new run's is built
    from the training text (a sample of it for a subword vocabulary of data.vocab_size pieces), or is the word
    vocabulary of `words` (a zoo.data.word_embedding.WordPlan) planned already; its size, not a flag, is the model's."""
    data, seed, model_dir = config.data, config.train.seed, folder.path

    def write_vocabulary():
        built = Vocabulary(words.words, corpus.level) if words is not None else \
            lm_data.build_vocabulary(corpus, data.vocab_size, seed)
        built.save(model_dir)

    last = tokenizer.TOKENIZER_FILE if corpus.level == "subword" else VOCABULARY_FILE  # the file a worker waits for
    config = run_settings.start_run(folder, RECIPE, config, write_vocabulary, last, chief, ("model.vocab_size",))
    vocabulary = lm_data.load_vocabulary(model_dir)
    return dataclasses.replace(config, model=dataclasses.replace(config.model, vocab_size=len(vocabulary))), vocabulary


def prepare(run, config, strategy):
    """The training run (`driver.Prepared`): its config and vocabulary, the training text laid out as
    batch_size streams read segment after segment, and the Task (its memory carried from step to step)."""
    data, spec = config.data, config.dataset_spec
    eval_split = data.eval_split or lm_data.default_split(spec)
    # Every line read now: a bad one is refused before anything is written.
    corpus = lm_data.load(spec, "train", data.level, bad_rows=data.bad_rows)
    run_settings.check_same_files(run.folder, RECIPE, LMRunConfig, corpus.key.get("files"))
    # The held-out split's bad rows too, before any write; a share too short to evaluate is refused before training.
    held_out = lm_data.load(spec, eval_split, corpus.level, bad_rows=data.bad_rows) \
        if run.evaluating and corpus.paths else None
    asked = dataclasses.replace(config, data=dataclasses.replace(data, level=corpus.level))
    words, model = None, asked.model  # with word vectors, the LM's own word vocabulary and the embedding they start
    if model.word_vectors is not None:  # a bad vectors file: refused before any write
        counts = lm_data.token_counts(corpus)  # <eos> and PTB's own <unk> too: tokens without a vector of their own
        record = run.folder.read_record(RECIPE, LMRunConfig)
        words = word_embedding.plan_vocabulary(
            Vocabulary.from_counts(counts.copy(), corpus.level).tokens, counts, model.word_vectors,
            model.min_vector_coverage, asked.train.seed, coverage_setting="--config.model.min_vector_coverage",
            specials=(PAD, UNK, EOS), specials_found=False, started=record and record.derived.get("word_vectors"),
            model_dir=run.model_dir)
        asked = dataclasses.replace(asked, model=model.with_words(words))
    run_config, vocabulary = prepare_run(run.folder, asked, corpus, is_chief(strategy), words)
    derived = {"files": {"digest": corpus.key["files"], "bad_rows_skipped": corpus.skipped}} if corpus.paths else {}
    if words is not None:
        derived["word_vectors"] = words.derived
    if corpus.paths:  # validation as train's contiguous blocks, or files of its own: a resumed run must agree
        derived["held_out"] = "blocks" if dataset_spec.holds_out(spec) else None
    config = run_config.model
    replicas = strategy.num_replicas_in_sync
    ids = lm_data.token_stream(corpus, vocabulary, lm_data.vocabulary_key(run.model_dir))
    ids.check_ids(config.vocab_size)
    if held_out is not None:
        evaluation_streams(lm_data.token_stream(held_out, vocabulary, lm_data.vocabulary_key(run.model_dir)),
                           run_config.eval.batch_size, config.segment_length, eval_split)
    streams = lm_preprocessing.stream_layout(ids, run.train.batch_size)
    per_pass = lm_preprocessing.segments_per_pass(streams, config.segment_length, data.random_offset)
    train_config = run_settings.with_epochs(run.train, run.epochs, per_pass, per_batch=1)
    per_replica = train_config.batch_size // replicas

    def dataset_fn(context, start_step):
        local = replicas // context.num_input_pipelines
        return lm_preprocessing.stream_dataset(
            streams, config.segment_length, replicas, context.input_pipeline_id * local, local, start_step,
            train_config.train_steps, offset_seed=train_config.seed if data.random_offset else None)

    task = Task(build_model=lambda: lm.build_language_model(config), dataset=dataset_fn,
                loss=lm.lm_loss(train_config.label_smoothing),
                initial_state=lambda model: model.initial_state(per_replica),
                initialize=words.initializer(lm.token_table) if words is not None else None)
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


def evaluate(run, config):
    """Perplexity or bits per character of the data section's split (None: the dataset's default; --mode=eval: the
    run's own unless given) and rows, over the eval section's batch_size streams, at the memory the run trained with,
    without memory, and at the eval section's memory_length."""
    folder, batch_size, average = run.folder, config.eval.batch_size, run.average_checkpoints
    model_dir, trained = folder.path, folder.typed(folder.require_run(RECIPE), RECIPE, LMRunConfig).config
    split = config.data.eval_split or lm_data.default_split(trained.dataset_spec)
    corpus = lm_data.load(trained.dataset_spec, split, trained.data.level, bad_rows=config.data.bad_rows)
    ids, trained_memory, eval_memory_length = None, trained.model.memory_length, config.eval.memory_length
    memories = {"train_memory": trained_memory, "no_memory": 0}
    if eval_memory_length and eval_memory_length != trained_memory:
        memories["eval_memory"] = eval_memory_length
    results = {}
    for name, memory_length in memories.items():
        loaded = load_trained(folder, memory_length, average)
        if ids is None:
            ids = lm_data.token_stream(corpus, loaded.tokenizer, lm_data.vocabulary_key(model_dir))
            ids.check_ids(loaded.config.vocab_size)
        segment = loaded.config.segment_length
        streams, per_pass = evaluation_streams(ids, batch_size, segment, split)
        progress = Progress(per_pass, unit=f"{split} segment (memory {memory_length})")
        began = time.time()
        nll, count = lm_inference.evaluate_streams(loaded.model, streams, segment, progress,
                                                   use_memory=memory_length > 0)
        figures = report(nll, count, corpus.level)
        results[name] = {**figures, "memory_length": memory_length, "tokens": count, "seconds": time.time() - began}
        [(figure, value)] = figures.items()
        print(f"{split}, memory {memory_length}: {figure} {value:.3f} over {count} tokens")
    write_summaries(model_dir, f"eval_{split}", loaded.step,
                    {f"{k}_{n}": v for n, r in results.items() for k, v in r.items() if k != "tokens"})
    folder.update_metrics(**{f"eval_{split}": {**results, "step": loaded.step, "average_checkpoints": average}})
    return results


def server(loaded, config):
    generation, vocabulary = config.eval, loaded.tokenizer
    module = LanguageModelServer(loaded.model, vocabulary, generation.max_new_tokens, generation.temperature,
                                 generation.top_k)
    example = "the company said" if vocabulary.level in ("word", "subword") else "ROMEO:"
    return driver.Serving(module, {"serving_default": module.serve, "generate": module.generate, "score": module.score},
                          {"prompt": [example, ""]},
                          metadata={"recipe": RECIPE, "dataset": loaded.record.config.data.dataset, "step": loaded.step,
                                    "model": dataclasses.asdict(loaded.record.config.model), "level": vocabulary.level})


def generate(run, config):
    """--mode=generate: the continuation of the eval section's prompt (its sampling and seed), printed after it."""
    import tensorflow as tf

    generation, prompt = config.eval, config.eval.prompt
    if not prompt or not prompt.strip():
        raise ValueError('--prompt is empty: give the text to continue, e.g. --prompt="ROMEO:".')
    loaded = load_trained(run.folder, average=run.average_checkpoints)
    model, vocabulary = loaded.model, loaded.tokenizer
    if generation.top_k > len(vocabulary):
        raise ValueError(f"--top_k={generation.top_k} is more than the {len(vocabulary)} tokens of the vocabulary: "
                         f"give at most {len(vocabulary)} (0 = all).")
    prompt_ids = lm_preprocessing.text_ids(vocabulary, tf.constant([prompt]))
    if prompt_ids.row_lengths()[0] > model.config.memory_length:
        print(f"(The prompt has {int(prompt_ids.row_lengths()[0]) - 1} tokens; it is read segment by segment and the "
              f"continuation sees its last {model.config.memory_length} through the memory.)")
    tokens = tf.function(lambda ids: lm_inference.generate(
        model, ids, generation.max_new_tokens, generation.temperature, generation.top_k, greedy=generation.greedy,
        seed=(generation.seed, 0)))(prompt_ids)
    text = vocabulary.detokenize(tokens).numpy()[0].decode("utf-8", errors="replace")
    separator = " " if vocabulary.level == "word" and not text.startswith("\n") else ""
    print(prompt + separator + text)
    return text


def finish(config, base, mode):
    """A dataset to train on, that the recipe knows, and a built-in corpus at its own level."""
    dataset = config.data.dataset
    if mode != "config" and not dataset:
        raise ValueError(f"--dataset is required to train (one of {sorted(lm_corpora.CORPORA)}, or your own files: "
                         "text:, csv:, jsonl:), or data.dataset in the config.")
    if dataset and dataset not in lm_corpora.CORPORA and not config.dataset_spec.files:
        raise datasets.DatasetError(f"Unknown language-modelling dataset {dataset!r}: use one of "
                                    f"{sorted(lm_corpora.CORPORA)}, or your own files (text:PATTERN, csv:, jsonl:).")
    if config.data.level is not None and dataset in lm_corpora.CORPORA:
        lm_data.load(config.dataset_spec, "validation", config.data.level)  # a built-in corpus has its own level
    return config


def check(run, config):
    """A training run that evaluates: its split's files checked now (a missing or damaged one fails before training)."""
    if run.training and run.evaluating:
        spec = config.dataset_spec
        lm_data.check_split(spec, config.data.eval_split or lm_data.default_split(spec))


LM = driver.Recipe(
    name=RECIPE,
    config_class=LMRunConfig,
    base=run_config_base,
    shortcuts=SHORTCUTS,
    prepare=prepare,
    load=load_trained,
    server=server,
    evaluate=evaluate,
    modes={"generate": generate},
    reads=READS,
    check=check,
    finish=finish,
    # The figures `report` writes at each data.level, of the memory the run trained with.
    figures=driver.Figures({level: tuple(report(1.0, 1, level)) for level in lm_data.FILE_LEVELS},
                           lambda config: config.data.eval_split or lm_data.default_split(config.data.dataset),
                           kind="data.level", within="train_memory"),
)
