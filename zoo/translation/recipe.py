"""The translation recipe: the paper's encoder-decoder trained, evaluated (sacreBLEU, chrF), used and exported
on Multi30k or the user's files; run by zoo.training.driver from the command line (recipes/translate.py) or from
Python (zoo.train("translate", ...))."""

import dataclasses
import itertools
import json
import os
import sys
import time

import numpy as np

from zoo.core import disk
from zoo.core.progress import Progress
from zoo.data import batching, spec as dataset_spec, tokenizer, word_tokenizer
from zoo.runs import run_dir
from zoo.training import driver, evaluation, run_settings
from zoo.training.config import Task
from zoo.training.distribute import is_chief, uses_xla
from zoo.translation import corpora as translation_corpora, data as translation_data, model as translation
from zoo.translation import preprocessor as translation_preprocessing, word_embedding as translation_words
from zoo.translation.load import RECIPE, load_run as load_trained
from zoo.translation.run_config import TranslateRunConfig, base as run_config_base
from zoo.translation.search import translate_ids
from zoo.translation.server import TranslatorServer

DECODE = {name: f"eval.decode.{name}" for name in ("beam_size", "length_penalty", "top_k", "top_p", "temperature")}
# Shortcut -> config field, beside zoo.training.run_settings.SHORTCUTS (model.target_vocab_size follows
# model.source_vocab_size unless set: TranslateRunConfig.FOLLOWS).
SHORTCUTS = {"source": "data.source", "target": "data.target", "eval_split": "data.eval_split",
             "vocab_size": "model.source_vocab_size",
             "max_tokens": "train.max_tokens",
             **{name: f"model.{name}" for name in ("shared_vocabulary", "tie_embeddings", "max_length", "dropout",
                                                   "source_vectors", "target_vectors", "freeze_word_vectors",
                                                   "min_vector_coverage")},
             **DECODE, "num_return": "eval.decode.num_return", "eval_batch_size": "eval.batch_size"}
SEARCH = {**DECODE, "seed": "eval.decode.seed"}  # a mode's search (in a training run, --seed is train.seed's)
# The shortcuts each mode reads beside a training run's fields (zoo.training.run_settings.reads): the search and
# batches of the evaluation, of --mode=translate (its n-best too) and of the export; --mode=eval's split and rows.
READS = {"train_and_eval": {**DECODE, "eval_batch_size": "eval.batch_size"},
         "export": {**SEARCH, "jit_compile": "eval.jit_compile"},
         "eval": {**SEARCH, "eval_batch_size": "eval.batch_size", "eval_split": "data.eval_split",
                  "bad_rows": "data.bad_rows", "jit_compile": "eval.jit_compile"},
         "translate": {**SEARCH, "num_return": "eval.decode.num_return", "eval_batch_size": "eval.batch_size"}}


def prepare_run(folder, config, data, chief, plans):
    """The run's config and tokenizers (`run_settings.start_run`): a new run's are trained now (cased), or are the
    word vocabularies of `plans` (planned already by zoo.translation.word_embedding.plan_sides) for its word sides."""
    model_dir, model, seed = folder.path, config.model, config.train.seed
    source_file, target_file = folder.tokenizer_files(model.shared_vocabulary, model.words)

    def write_tokenizers():
        # Every side's tokenizer is made before any is written: a side refused (a vocab_size its text cannot make)
        # leaves no other side's file behind. SentencePiece reads all the training text up to train_tokenizer's
        # limit; above it a seeded share of about that much, read from the files a side at a time (train_tokenizer
        # would need every text in memory to sample).
        def make(sides, name, size, plan):
            if plan is not None:
                return lambda: word_tokenizer.save_vocabulary(plan.words, model_dir, name)
            texts = data.tokenizer_sample(sides, tokenizer.MAX_TRAINING_CHARACTERS, seed)
            trained = tokenizer.train_tokenizer(texts, size, False, seed)
            return lambda: tokenizer.save_tokenizer(trained, model_dir, name)

        names = {"source": source_file, "target": target_file}
        sides = {"source": (0, 1)} if model.shared_vocabulary else {"source": (0,), "target": (1,)}
        writes = [make(read, names[side], getattr(model, f"{side}_vocab_size"), plans.get(side))
                  for side, read in sides.items()]
        for write in writes:
            write()

    derived = tuple(f"model.{side}_{name}" for side in plans for name in ("vocab_size", "embedding_dim"))
    config = run_settings.start_run(folder, RECIPE, config, write_tokenizers, target_file, chief, derived)
    return config, folder.tokenizers(model.shared_vocabulary, model.words)


def padded_lengths(config):
    """The longest padded source and target rows the model takes: its max_length positions for the source, and
    for the target one more (<s> ... </s>: the decoder reads all but the last, the labels are all but the first),
    so that rounding a batch up to a multiple of 8 never passes the learned positions."""
    return {"source": config.max_length, "target": config.max_length + 1}


def token_rows(data, tokenizers, model_dir, config):
    """(source rows, target rows) of `data` from the token cache, keyed by the contents of the run's tokenizer files,
    their ids checked against the model `config`'s vocabularies."""
    key = tokenizer.files_key(model_dir, run_dir.RunDir.tokenizer_files(config.shared_vocabulary, config.words))
    sources, targets = translation_data.token_rows(data, tokenizers, key, config.max_length)
    sources.check_ids(config.source_vocab_size)
    targets.check_ids(config.target_vocab_size)
    return sources, targets


def prepare(run, config, strategy):
    """The training run (`driver.Prepared`): its record and tokenizers, the batch plan over the
    training pairs (batches of at most max_tokens tokens) and the Task."""
    names, spec = config.data, config.dataset_spec
    data = translation_data.load(spec, "train", names.source, names.target, names.bad_rows)
    data = data.subsample(names.max_examples, run.train.seed)
    digest = data.key.get("files")  # your own files' digest, as load read them (None for a built-in dataset)
    if run.evaluating and digest:  # its bad rows and line counts too, before any write
        translation_data.load(spec, names.eval_split or default_split(spec), names.source, names.target,
                              names.bad_rows)
    run_settings.check_same_files(run.folder, RECIPE, TranslateRunConfig, digest)
    # Word vectors: a bad file is refused before any write, and a resumed run must find the matrices it started from.
    record = run.folder.read_record(RECIPE, TranslateRunConfig) if any(config.model.words) else None
    plans = translation_words.plan_sides(config.model, data, config.train.seed, names,
                                         record.derived.get("word_vectors", {}) if record else {}, run.model_dir)
    asked = dataclasses.replace(config, model=config.model.with_words(plans))
    run_config, tokenizers = prepare_run(run.folder, asked, data, is_chief(strategy), plans)
    derived = {"example": data.example}
    if plans:
        derived["word_vectors"] = {side: plan.derived for side, plan in plans.items()}
    if digest:  # your own files: a resumed run must find the same contents
        derived["files"] = {"digest": digest, "bad_rows_skipped": data.skipped}
        derived["held_out"] = translation_data.held_out(spec, names.source)
    config = run_config.model
    sources, targets = token_rows(data, tokenizers, run.model_dir, config)
    lengths = np.maximum(sources.lengths, targets.lengths - 1)
    train_config = run.train
    # A batch holds max_tokens tokens (at most batch_size pairs), not batch_size pairs: an epoch's steps
    # count batches of the mean pair's length.
    per_batch = min(train_config.batch_size, train_config.max_tokens // max(1, int(lengths.mean())))
    train_config = run_settings.with_epochs(train_config, run.epochs, len(lengths), per_batch)
    replicas = strategy.num_replicas_in_sync
    plan = batching.training_plan(lengths, train_config.train_steps, train_config.batch_size, train_config.seed,
                                  replicas, train_config.max_tokens)
    fields = {"source": sources, "target": targets}
    task = Task(
        build_model=lambda: translation.build_translator(config),
        dataset=batching.planned_dataset_fn(plan, replicas, lambda part, skip, _: batching.plan_dataset(
            part, fields, skip=skip, max_length=padded_lengths(config))),
        loss=translation.translation_loss(train_config.label_smoothing,
                                          skip_padding=not uses_xla(strategy, train_config.jit_compile)),
        initialize=translation.words_initializer(plans) if plans else None,
    )
    return driver.Prepared(dataclasses.replace(run_config, train=train_config), derived, task)


def translate_corpus(loaded, sources, decode, batch_size, jit_compile=False, search=translate_ids,
                     description="translate"):
    """Translations (best hypothesis) of every source sentence, in order; batches of similar lengths.
    `search`: (model, source ids, decode config) -> (tokens, scores), as `translate_ids`."""
    import tensorflow as tf

    rows = translation_preprocessing.source_rows(loaded.tokenizer.source, sources, loaded.config.max_length)
    plan = batching.evaluation_plan([len(r) for r in rows], batch_size)
    batches = batching.plan_dataset(plan, {"source": rows, "index": np.arange(len(rows))},
                                    max_length=padded_lengths(loaded.config))
    # Batches differ in shape (sentences of similar lengths): one graph for all of them, not a trace per shape.
    compiled_search = tf.function(lambda ids: search(loaded.model, ids, decode), jit_compile=jit_compile,
                                  reduce_retracing=True)
    hypotheses = [""] * len(rows)
    progress = Progress(len(rows), unit=f"{description} sentence")
    done = 0
    for batch in batches:
        tokens, _ = compiled_search(batch["source"])
        texts = translation_preprocessing.text_from_ids(loaded.tokenizer.target, tokens[:, 0])
        for i, text in zip(batch["index"].numpy(), texts.numpy()):
            hypotheses[i] = text.decode("utf-8") if sources[i].strip() else ""
        done += len(texts)
        progress.update(done)
    return hypotheses


def default_split(dataset):
    """The split evaluated when --eval_split is not given (zoo.data.spec.default_split): test, or for files without
    {split} (which have no test split) their held-out share, validation. `dataset`: a DatasetSpec, or a dataset
    string (zoo.sweeps reads it of a config's data.dataset)."""
    return dataset_spec.default_split(dataset_spec.given(dataset, translation_data.FORMS))


def evaluate(run, config):
    """sacreBLEU, chrF and the loss of the data section's split (None: `default_split`; --mode=eval: the run's own
    unless given) and rows, with the eval section's search and batches; its hypotheses written beside the run's
    files."""
    import sacrebleu

    folder, decode, batch_size = run.folder, config.eval.decode, config.eval.batch_size
    model_dir, loaded = folder.path, load_trained(folder, run.average_checkpoints)
    trained, spec = loaded.record.config.data, loaded.record.config.dataset_spec
    split = config.data.eval_split or default_split(spec)
    data = translation_data.load(spec, split, trained.source, trained.target, config.data.bad_rows)
    references = list(data.texts(1))  # sacrebleu scores lists of texts; an evaluation split is small
    began = time.time()
    hypotheses = translate_corpus(loaded, list(data.texts(0)), decode, batch_size, config.eval.jit_compile,
                                  description=split)
    seconds = time.time() - began
    name = f"hypotheses.{split}.{trained.source}-{trained.target}.txt"
    disk.write_atomically(os.path.join(model_dir, name), "".join(h + "\n" for h in hypotheses).encode("utf-8"),
                          "the hypotheses")
    bleu_metric, chrf_metric = sacrebleu.BLEU(), sacrebleu.CHRF()
    bleu = bleu_metric.corpus_score(hypotheses, [references])
    chrf = chrf_metric.corpus_score(hypotheses, [references])
    sources, targets = token_rows(data, loaded.tokenizer, model_dir, loaded.config)
    plan = batching.evaluation_plan(targets.lengths, batch_size)
    batches = batching.plan_dataset(plan, {"source": sources, "target": targets},
                                    max_length=padded_lengths(loaded.config))
    totals = evaluation.evaluate(translation.translation_metrics(loaded.model), batches, len(plan), split)
    loss = totals["loss"] / totals["tokens"]
    result = {"bleu": bleu.score, "chrf": chrf.score, "loss": loss}
    evaluation.write_summaries(model_dir, f"eval_{split}", loaded.step, result)
    # sacreBLEU's signatures (nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:...): how to reproduce the scores
    result.update(bleu_signature=str(bleu_metric.get_signature()), chrf_signature=str(chrf_metric.get_signature()),
                  sentences=len(hypotheses), decode=dataclasses.asdict(decode), decode_seconds=seconds,
                  step=loaded.step, average_checkpoints=run.average_checkpoints, hypotheses=name)
    folder.update_metrics(**{f"eval_{split}": result})
    print(f"{split}: sacreBLEU {bleu.score:.2f}, chrF {chrf.score:.2f}, loss {loss:.4f} on {len(hypotheses)} "
          f"sentences (decoding {seconds:.1f} s); hypotheses in {os.path.join(model_dir, name)}")
    return result


def server(loaded, config):
    decode = config.eval.decode
    module = TranslatorServer(loaded.model, loaded.tokenizer.source, loaded.tokenizer.target, decode,
                              config.eval.jit_compile)
    run = loaded.record.config.data
    return driver.Serving(module, {"serving_default": module.serve}, {"text": [loaded.record.derived["example"], ""]},
                          metadata={"recipe": RECIPE, "dataset": run.dataset, "source": run.source,
                                    "target": run.target, "model": dataclasses.asdict(loaded.config),
                                    "decode": dataclasses.asdict(decode), "step": loaded.step})


def translate(run, config):
    """--mode=translate with the eval section's search and batches: reads source sentences, one per line, from
    standard input and writes one line per input line to standard output (the streams of the moment the mode runs,
    so a caller's redirection holds): the translation, or with --num_return > 1 a JSON object {"translations":
    [...], "scores": [...]}."""
    import tensorflow as tf

    decode, out = config.eval.decode, sys.stdout
    loaded = load_trained(run.folder, run.average_checkpoints)
    module = TranslatorServer(loaded.model, loaded.tokenizer.source, loaded.tokenizer.target, decode)

    def flush(batch):
        translations, scores = module.translate_n_best(tf.constant(batch))
        for texts, values in zip(translations.numpy(), scores.numpy()):
            texts = [t.decode("utf-8") for t in texts]
            out.write((texts[0] if decode.num_return == 1 else json.dumps(
                {"translations": texts, "scores": [float(v) for v in values]}, ensure_ascii=False)) + "\n")
        out.flush()

    lines = (line.rstrip("\n") for line in sys.stdin)
    while batch := list(itertools.islice(lines, config.eval.batch_size)):  # a batch written as soon as it is read
        flush(batch)


def finish(config, base, mode):
    """A dataset to train on."""
    if mode != "config" and not config.data.dataset:
        raise ValueError("--dataset is required to train (multi30k, tfds:<name>, or your own files: text:PATTERN "
                         "with {lang}, tsv:PATTERN), or data.dataset in the config.")
    return config


def check(run, config):
    """A training run's data, before any work: the pair (multi30k), and the split it evaluates, whose data is
    checked now."""
    if not run.training:
        return
    data, spec = config.data, config.dataset_spec
    split = data.eval_split or default_split(spec)
    if data.dataset == "multi30k":  # checks the pair, and a damaged evaluation file, before training
        for name in {"validation", split if run.evaluating else "validation"}:
            translation_corpora.load_translation("multi30k", name, data.source, data.target)
    elif run.evaluating:
        translation_data.check_split(spec, split, data.source, data.target)


TRANSLATE = driver.Recipe(
    name=RECIPE, config_class=TranslateRunConfig, base=run_config_base, shortcuts=SHORTCUTS, prepare=prepare,
    load=load_trained, server=server, evaluate=evaluate, modes={"translate": translate}, reads=READS, check=check,
    finish=finish, figures=driver.Figures(("bleu", "chrf", "loss"),
                                          lambda config: config.data.eval_split or default_split(config.data.dataset)),
)
