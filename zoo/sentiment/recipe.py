"""The sentiment (classification) recipe: the classifier family's Transformer encoder, BERT-style, trained (from
scratch, or fine-tuned from a pretraining run or a published checkpoint: zoo.pretraining), evaluated, explained
and exported on a built-in dataset or the user's files; run by zoo.training.driver from the command line
(recipes/sentiment.py) or from Python (zoo.train("sentiment", ...)). It sits above zoo.classifier and
zoo.pretraining, which itself builds on the classifier's encoder."""

import dataclasses
import os

import numpy as np

from zoo.classifier import data as classifier_data, losses, metrics, model as classifier, run_config
from zoo.classifier.load import RECIPE, load_run as load_trained, preprocessor, serving_module
from zoo.classifier.preprocessor import ClassifierPreprocessor
from zoo.classifier.run_config import SentimentRunConfig
from zoo.core import disk
from zoo.data import batching, tokenizer, word_embedding, word_tokenizer
from zoo.distill import losses as distill_losses, training_set
from zoo.pretraining import pretrained, published
from zoo.runs import outputs, run_dir
from zoo.sentiment.explaining import run_explain
from zoo.sentiment.figures import FIGURES
from zoo.training import driver, run_settings
from zoo.training.config import Task
from zoo.training.distribute import is_chief
from zoo.training.evaluation import gather, write_summaries

# Shortcut -> config field, beside zoo.training.run_settings.SHORTCUTS.
SHORTCUTS = {"eval_split": "data.eval_split", "text_column": "data.text_column", "label_column": "data.label_column",
             "classes": "data.classes", "vocab_size": "model.vocab_size", "max_length": "model.max_length",
             "dropout": "model.dropout", "init_from": "setup.init_from", "layer_decay": "train.layer_decay",
             "word_vectors": "model.word_vectors", "freeze_word_vectors": "model.freeze_word_vectors",
             "problem_type": "model.problem_type", "threshold": "model.threshold",
             "label_separator": "data.label_separator", "text_pair_column": "data.text_pair_column",
             "teacher": "distill.teacher", "distill_loss": "distill.loss", "temperature": "distill.temperature",
             "distill_weight": "distill.weight", "transfer": "distill.transfer", "max_transfer": "distill.max_transfer",
             "transfer_text_column": "distill.transfer_text_column",
             "augment": "augment.methods", "copies": "augment.copies", "augment_vectors": "augment.vectors",
             **{name: f"eval.{name}" for name in ("predictions", "overwrite_predictions", "text", "text_pair")}}
COLUMNS = ("text_column", "label_column", "bad_rows", "classes", "text_pair_column")  # what --mode=eval may re-point
PREDICTIONS = {name: f"eval.{name}" for name in ("predictions", "overwrite_predictions")}  # read, or refused, by all
# The shortcuts each mode reads beside a training run's fields (zoo.training.run_settings.reads): --mode=eval
# evaluates another dataset, split or columns of the run's with its own batch; --mode=explain explains a text.
READS = {**{mode: PREDICTIONS for mode in ("train", "train_and_eval", "export")},
         "eval": {**PREDICTIONS, "dataset": "data.dataset", "eval_split": "data.eval_split",
                  **{name: f"data.{name}" for name in COLUMNS}, "batch_size": "eval.batch_size"},
         "explain": {**PREDICTIONS, "text": "eval.text", "text_pair": "eval.text_pair"}}


def label_field(data, rows, problem_type, stats=None):
    """What training and evaluation read as each row's label: its class id; regression's number standardised
    with training's `stats` (mean and std); multi-label's 0/1 row, as float32."""
    if problem_type == classifier.SINGLE_LABEL:
        return rows.labels
    values = data.targets.values[rows.labels]  # a regression or multi-label split's ids number its rows
    if problem_type == classifier.REGRESSION:
        values = (values - stats["mean"]) / stats["std"]
    return values.astype(np.float32)


def prepare_run(folder, config, data, chief, words=None):
    """The run's config and tokenizer (`run_settings.start_run`; `folder`: the run's RunDir): a new run's tokenizer
    is trained on a sample of `data`'s texts, or is the pretrained run's (SentencePiece or words) or the published
    checkpoint's with setup.init_from; with `words` (a zoo.data.word_embedding.WordPlan), its word vocabulary."""
    init_from, seed, model_dir = config.setup.init_from, config.train.seed, folder.path
    wordpiece = bool(init_from) and (published.is_published(init_from) or tokenizer.holds_wordpiece(init_from))
    words_from = bool(init_from) and not wordpiece and word_tokenizer.holds_words(init_from)  # a word pretraining run

    def write_tokenizer():
        if words is not None:
            word_tokenizer.save_vocabulary(words.words, model_dir)
        elif wordpiece:  # a published checkpoint's vocabulary, or that of a run that continued one's pretraining
            source = init_from if published.is_published(init_from) else None
            vocab_of = published.read_checkpoint(source) if source else tokenizer.load_wordpiece(init_from)
            tokenizer.save_wordpiece(vocab_of.vocabulary, vocab_of.lowercase, vocab_of.strip_accents, model_dir)
        elif words_from:
            word_tokenizer.save_vocabulary(word_tokenizer.load_word_tokenizer(init_from).get_vocabulary(), model_dir)
        elif init_from:
            with open(run_dir.opened(init_from).file(tokenizer.TOKENIZER_FILE), "rb") as f:
                proto = f.read()
            tokenizer.save_tokenizer(proto, model_dir)
        else:
            sample = data.tokenizer_sample(tokenizer.MAX_TRAINING_CHARACTERS, seed)
            tokenizer.save_tokenizer(tokenizer.train_tokenizer(sample, config.model.vocab_size, seed=seed), model_dir)

    last = word_tokenizer.WORDS_FILE if words is not None or words_from else \
        tokenizer.WORDPIECE_CONFIG_FILE if wordpiece else tokenizer.TOKENIZER_FILE
    config = run_settings.start_run(folder, RECIPE, config, write_tokenizer, last, chief, from_words(words))
    return config, folder.tokenizer()


def from_words(words):
    """The model fields a word vocabulary (`words`, a WordPlan or None) sets: a resumed run's own, not compared."""
    return ("model.vocab_size", "model.embedding_dim") if words is not None else ()


def prepare(run, config, strategy):
    """The training run (`driver.Prepared`): its config and tokenizer, the batch plan over the training
    texts, and the Task; with setup.init_from, the encoder starts from the pretrained run's or checkpoint's weights."""
    data = classifier_data.load(config.dataset_spec, "train", max_examples=config.data.max_examples,
                                seed=config.train.seed)  # every row read: a bad one is refused before any write
    if run.evaluating and data.paths:  # its bad rows and unknown labels too, before any write
        classifier_data.load(config.dataset_spec, config.data.eval_split, class_names=data.class_names)
    digest = data.key["files"] if data.paths else None
    run_settings.check_same_files(run.folder, RECIPE, SentimentRunConfig, digest)
    # A teacher, transfer set or augmented copies (zoo.distill): checked, and the teacher's outputs made, before any
    # write; an epoch is a pass over every text trained on (its refusal comes before the teacher's long labelling).
    record = run.folder.read_record(RECIPE, SentimentRunConfig)
    taught = training_set.plan(config, data, config.train.seed, record, run.model_dir)
    train_config = run_settings.with_epochs(config.train, run.epochs, (taught.examples if taught else data).count)
    problem_type = config.model.problem_type
    outputs = 1 if problem_type == classifier.REGRESSION else len(data.class_names)
    segments = 2 if config.data.text_pair_column else 0  # a pair's two texts: BERT's token types 0 and 1
    config = dataclasses.replace(config, model=dataclasses.replace(config.model, num_classes=outputs,
                                                                   num_segments=segments),
                                 train=train_config)
    # A bad vectors file is refused before any write; a fine-tuned encoder keeps its pretraining's words and embedding.
    words, model = None, config.model
    if model.words and not config.setup.init_from:
        words = word_embedding.plan_words(
            data.strings(), model.vocab_size, model.word_vectors, model.min_vector_coverage, config.train.seed,
            scaled=model.embedding != "normalized", coverage_setting="--config.model.min_vector_coverage",
            started=record and record.derived.get("word_vectors"), model_dir=run.model_dir)
        config = dataclasses.replace(config, model=model.with_words(words))
    # The teacher answers once every check has passed, a resumed run's settings and data position too (start_run's
    # and the driver's record_training's checks, made before the long labelling); the log says what the run trains on.
    held_out = {"held_out": data.key["held_out"]} if data.paths else {}  # validation is train's share: resumes agree
    if taught:
        resume = {"replicas": strategy.num_replicas_in_sync, **held_out}
        run_settings.check_settings(run.folder, RECIPE, config, from_words(words), resume)
        taught.label()
    config, tok = prepare_run(run.folder, config, data, is_chief(strategy), words)
    model = config.model
    framing = ClassifierPreprocessor.for_tokenizer(tok, model.max_length, pairs=bool(model.num_segments))
    rows = classifier_data.token_rows(taught.examples if taught else data, framing, tokenizer.files_key(run.model_dir))
    rows.check_ids(model.vocab_size)
    replicas = strategy.num_replicas_in_sync
    plan = batching.training_plan(rows.lengths, train_config.train_steps, train_config.batch_size,
                                  train_config.seed, replicas)
    stats = data.targets.stats if problem_type == classifier.REGRESSION else None
    fields = taught.fields(rows, problem_type, stats) if taught else \
        {"token_ids": rows, "label": label_field(data, rows, problem_type, stats)}
    distill = config.distill if taught and taught.teacher is not None else None
    init_from = config.setup.init_from
    task = Task(
        build_model=lambda: classifier.build_classifier(model),
        dataset=batching.planned_dataset_fn(plan, replicas, lambda part, skip, _: framing.with_segments(
            batching.plan_dataset(part, fields, skip=skip, max_length=model.max_length))),
        loss=distill_losses.distillation_loss(distill, train_config.label_smoothing, problem_type) if distill else
        losses.classification_loss(train_config.label_smoothing, problem_type),
        initialize=pretrained.encoder_initializer(init_from) if init_from else
        words.initializer(classifier.token_table) if words is not None else None,
        layer_depths=classifier.layer_depths,
    )
    derived = {"class_names": list(data.class_names)}
    if stats is not None:  # the model learns standardised targets and answers in the labels' units
        derived["targets"] = stats
    if words is not None:
        derived["word_vectors"] = words.derived
    if taught and taught.derived:  # the teacher and transfer set a resumed run must find again
        derived["distill"] = taught.derived
    if data.paths:  # your own files: a resumed run must find the same contents
        derived["files"] = {"digest": data.key["files"], "bad_rows_skipped": data.skipped}
    derived.update(held_out)
    return driver.Prepared(config, derived, task)


def run_eval(model_dir, split, dataset=None, batch_size=64, average=1, columns=None, predictions=None):
    """The `split`'s figures by model.problem_type (zoo.sentiment.figures), printed and written to metrics.json; with
    `predictions`, each text's prediction to that file. `dataset` and `columns` (SentimentData fields) name other files
    or columns than the run's; `model_dir`: a path or the run's RunDir."""
    folder = run_dir.opened(model_dir)
    model_dir, loaded = folder.path, load_trained(folder, average)
    trained, problem_type, derived = loaded.record.config.data, loaded.config.problem_type, loaded.record.derived
    dataset = dataset or trained.dataset
    # Default: the columns the run trained with; labels are always read as the run's. A run trained on single
    # texts takes no second-text column.
    given = dict(columns or {})
    if given.get("text_pair_column") and not trained.text_pair_column:
        raise ValueError(f"--text_pair_column={given['text_pair_column']}: this run was trained on single texts, and "
                         "reads no second text. Leave it out.")
    given["text_pair_column"] = given.get("text_pair_column") or trained.text_pair_column
    evaluated = dataclasses.replace(trained, dataset=dataset, **given)
    data = classifier_data.load(run_config.spec_of(evaluated, problem_type), split, class_names=derived["class_names"])
    framing = preprocessor(loaded)
    rows = classifier_data.token_rows(data, framing, tokenizer.files_key(model_dir))
    rows.check_ids(loaded.config.vocab_size)
    plan = batching.evaluation_plan(rows.lengths, batch_size)
    fields = {"token_ids": rows, "label": label_field(data, rows, problem_type, derived.get("targets")),
              "index": np.arange(len(rows.labels))}
    batches = framing.with_segments(batching.plan_dataset(plan, fields, max_length=loaded.config.max_length))
    outputs = gather(losses.classification_outputs(loaded.model, problem_type), batches, len(plan),
                     description=split)
    order = np.argsort(outputs["index"])  # the data's order
    figures = FIGURES[problem_type]({key: value[order] for key, value in outputs.items()}, data, loaded)
    # Another dataset's split (SST-2 dev for a run trained on sst2_tune) is kept beside the run's own.
    name = f"eval_{split}" if dataset == trained.dataset else f"eval_{dataset}_{split}"
    write_summaries(model_dir, name, loaded.step, figures.scalars)
    result = {**figures.scalars, **figures.details}
    result.update(examples=len(order), step=loaded.step, dataset=dataset, average_checkpoints=average)
    if predictions:
        disk.write_atomically(predictions, figures.lines(), "the predictions")
        result["predictions"] = os.path.abspath(predictions)
    folder.update_metrics(**{name: result})
    headline, _, report = figures.text.partition("\n")
    print(f"{split}: {headline} on {len(order)} texts" + (f"\n{report}" if report else ""))
    if predictions:
        print(f"Predictions of the {len(order)} texts in {predictions}")
    return result


def evaluate(run, config):
    """`run_eval` as the command's config says: its data section's split, dataset and columns (--mode=eval: the
    run's own unless given), its eval section's batch and predictions file."""
    data = config.data
    return run_eval(run.folder, data.eval_split, data.dataset, config.eval.batch_size, run.average_checkpoints,
                    {name: getattr(data, name) for name in COLUMNS}, config.eval.predictions)


def explain(run, config):
    """--mode=explain of the eval section's text (and text pair)."""
    return run_explain(run.folder, config.eval.text, run.average_checkpoints, config.eval.text_pair)


def server(loaded, config):
    module = serving_module(loaded)
    derived = loaded.record.derived
    # The export's warm-up request: three texts (the last empty), with a second text each for a pair model.
    warmup = {"text": ["a wonderful, moving film", "dull and far too long", ""]}
    if loaded.config.num_segments:
        warmup["text_pair"] = ["a film worth seeing", "", "an empty first text"]
    return driver.Serving(module, {"serving_default": module.serve}, warmup,
                          metadata={"recipe": RECIPE, "dataset": loaded.record.config.data.dataset,
                                    "step": loaded.step, "model": dataclasses.asdict(loaded.config),
                                    "class_names": derived["class_names"],
                                    **({"targets": derived["targets"]} if "targets" in derived else {})})


def encoder_of(init_from, existing):
    """The ClassifierConfig of the encoder `init_from` names: a resumed run's own (`existing`, its record: the
    checkpoint or the pretraining folder is not read again), a published checkpoint's, or a pretraining run's (at
    fine-tuning's dropout)."""
    if existing is not None and existing.config.setup.init_from == published.normalize(init_from):
        return existing.config.model
    if published.is_published(init_from):
        return published.encoder_config(published.read_checkpoint(init_from))
    return pretrained.classifier_config(pretrained.pretrained_encoder_config(init_from))


def base_config(preset, init_from, record=None):
    """The run's base config: the preset's (`preset` None: small), or with `init_from` the encoder's (a preset
    given must then name the encoder's shape, and none goes with a published checkpoint); `record`: the run's, when
    it resumes."""
    if init_from is None:
        return run_config.base(preset or "small")
    encoder = encoder_of(init_from, record)
    if published.is_published(init_from) and preset is not None:  # the model's fields: finish's check_encoder
        raise ValueError("--preset cannot be set with a published --init_from: the model's shape and vocabulary "
                         "come from the checkpoint. Leave it out.")
    elif preset is not None:
        pretrained.classifier_config(encoder, preset=preset)  # refuses a preset of another shape
    return run_config.base(preset, init_from, encoder, published.is_published(init_from))


def finish(config, base, mode):
    """The encoder's shape kept (`run_config.check_encoder`), setup.init_from and distill.teacher as paths made
    absolute, a regression without label smoothing, and a dataset to train on."""
    init_from = config.setup.init_from
    if config.distill.teacher:
        config = dataclasses.replace(config, distill=dataclasses.replace(
            config.distill, teacher=os.path.abspath(config.distill.teacher)))
    if init_from and config.model.word_vectors:
        raise ValueError(f"--word_vectors={config.model.word_vectors} cannot go with --init_from={init_from}: the "
                         "encoder already holds its token embedding (a pretraining run with --word_vectors started it "
                         "from them, and its words.txt comes along). Leave --word_vectors out, or train without "
                         "--init_from.")
    if init_from:
        positions = base.model.max_length
        if published.is_published(init_from) and not 2 < config.model.max_length <= positions:
            raise ValueError(f"--max_length={config.model.max_length} must be in [3, {positions}]: {init_from} has "
                             f"{positions} positions, and [CLS] and [SEP] take two.")
        run_config.check_encoder(config.model, base.model)
        config = dataclasses.replace(config, setup=dataclasses.replace(
            config.setup, init_from=published.normalize(init_from)))
    smoothing = config.train.label_smoothing
    if config.model.problem_type == classifier.REGRESSION and smoothing:  # the recipe's default goes to 0
        if smoothing != base.train.label_smoothing:
            raise ValueError(f"train.label_smoothing={smoothing} smooths class targets, and a regression "
                             "(model.problem_type) has none: leave it out.")
        config = dataclasses.replace(config, train=dataclasses.replace(config.train, label_smoothing=0.0))
    if mode != "config" and not config.data.dataset:
        raise ValueError("--dataset is required to train (imdb, sst2, tfds:<name>, or your own files: csv:, tsv:, "
                         "jsonl:, folder:), or data.dataset in the config.")
    return config


def check(run, config):
    """What the command's options need, before any work: explain's text; the predictions file only where the mode
    evaluates, never over the run's own files, an input or any other file the zoo did not write unless asked
    (zoo.runs.outputs); and the split a training run evaluates."""
    options = config.eval
    if run.mode == "explain" and not options.text:
        raise ValueError('--mode=explain needs --text="a sentence".')
    if options.predictions is None and options.overwrite_predictions:
        raise ValueError("--overwrite_predictions replaces the file --predictions names: give --predictions too.")
    if options.predictions is not None:
        if run.mode not in ("eval", "train_and_eval"):
            raise ValueError("--predictions is written by --mode=eval and --mode=train_and_eval.")
        outputs.check_file("--predictions", options.predictions, run.model_dir, metrics.is_predictions_file,
                           options.overwrite_predictions)
    if run.training and run.evaluating:
        classifier_data.check_split(config.dataset_spec, config.data.eval_split)


# What run_eval writes to metrics.json by model.problem_type (zoo.sentiment.figures), the figures a sweep ranks by.
FIGURE_NAMES = {classifier.SINGLE_LABEL: ("accuracy", "macro_f1", "loss"),
                classifier.REGRESSION: ("mse", "rmse", "mae", "pearson", "spearman", "loss"),
                classifier.MULTI_LABEL: ("micro_f1", "macro_f1", "subset_accuracy", "loss")}

SENTIMENT = driver.Recipe(
    name=RECIPE, config_class=SentimentRunConfig, base=base_config, shortcuts=SHORTCUTS, prepare=prepare,
    load=load_trained, server=server, evaluate=evaluate, modes={"explain": explain}, reads=READS, check=check,
    finish=finish,
    figures=driver.Figures(FIGURE_NAMES, lambda config: config.data.eval_split, kind="model.problem_type"),
)
