"""The sentiment (classification) recipe: the classifier family's Transformer encoder, BERT-style, trained (from
scratch, or fine-tuned from a pretraining run or a published checkpoint: zoo.pretraining), evaluated, explained
and exported on a built-in dataset or the user's files; run by zoo.training.driver from the command line
(recipes/sentiment.py) or from Python (zoo.train("sentiment", ...)). It sits above zoo.classifier and
zoo.pretraining, which itself builds on the classifier's encoder."""

import dataclasses
import os

import numpy as np

from zoo.classifier import data as classifier_data, metrics, model as classifier, run_config
from zoo.classifier.load import load_run as load_trained, preprocessor
from zoo.classifier.preprocessor import ClassifierPreprocessor
from zoo.classifier.run_config import SentimentData, SentimentRunConfig
from zoo.core import disk
from zoo.data import batching, tokenizer, word_embedding, word_tokenizer
from zoo.pretraining import pretrained, published
from zoo.runs import outputs
from zoo.runs.run_dir import RunDir
from zoo.training import driver, run_settings
from zoo.training.config import Task
from zoo.training.distribute import is_chief
from zoo.training.evaluation import gather, write_summaries
from zoo.training.run_settings import RunSettings

RECIPE = "sentiment"
# Shortcut -> config field, beside zoo.training.run_settings.SHORTCUTS.
SHORTCUTS = {"eval_split": "data.eval_split", "text_column": "data.text_column", "label_column": "data.label_column",
             "classes": "data.classes", "vocab_size": "model.vocab_size", "max_length": "model.max_length",
             "dropout": "model.dropout", "init_from": "setup.init_from", "layer_decay": "train.layer_decay",
             "word_vectors": "model.word_vectors", "freeze_word_vectors": "model.freeze_word_vectors"}


@dataclasses.dataclass(frozen=True)
class Settings:
    """A sentiment run: the shared settings (its typed config in run.config when it trains) and its modes' options."""

    run: RunSettings
    dataset: str | None = None  # to evaluate another dataset's split (sst2 for a run on sst2_tune); None: the run's
    eval_split: str = SentimentData.eval_split  # the split evaluated (a training run's: data.eval_split)
    text: str | None = None  # the text to explain (mode explain)
    columns: classifier_data.Columns | None = None  # the evaluated files' columns; None: the trained run's
    predictions: str | None = None  # a JSON-lines file of each evaluated text's label, prediction and probabilities
    overwrite_predictions: bool = False  # replace an existing file at `predictions` that the zoo did not write


def columns_of(data):
    """The classifier_data.Columns of a SentimentData."""
    return classifier_data.Columns(data.text_column, data.label_column, data.bad_rows, data.classes)


def prepare_run(model_dir, config, data, chief, words=None):
    """The run's config and tokenizer (`run_settings.start_run`): a new run's tokenizer is trained on a sample of
    `data`'s texts, or is the pretrained run's (SentencePiece or words) or the published checkpoint's with
    setup.init_from; with `words` (a zoo.data.word_embedding.WordPlan), its word vocabulary."""
    init_from, seed = config.setup.init_from, config.train.seed
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
            with open(RunDir(init_from).file(tokenizer.TOKENIZER_FILE), "rb") as f:
                proto = f.read()
            tokenizer.save_tokenizer(proto, model_dir)
        else:
            sample = data.tokenizer_sample(tokenizer.MAX_TRAINING_CHARACTERS, seed)
            tokenizer.save_tokenizer(tokenizer.train_tokenizer(sample, config.model.vocab_size, seed=seed), model_dir)

    last = word_tokenizer.WORDS_FILE if words is not None or words_from else \
        tokenizer.WORDPIECE_CONFIG_FILE if wordpiece else tokenizer.TOKENIZER_FILE
    derived = ("model.vocab_size", "model.embedding_dim") if words is not None else ()
    config = run_settings.start_run(model_dir, RECIPE, config, write_tokenizer, last, chief, derived)
    return config, RunDir(model_dir).tokenizer()


def prepare(settings, strategy):
    """The training run (`driver.Prepared`): its config and tokenizer, the batch plan over the training
    texts, and the Task; with setup.init_from, the encoder starts from the pretrained run's or checkpoint's weights."""
    shared = settings.run
    config = shared.config
    data = classifier_data.load(config.data.dataset, "train", settings.columns, max_examples=config.data.max_examples,
                                seed=config.train.seed)  # every row read: a bad one is refused before any write
    train_config = run_settings.with_epochs(config.train, shared.epochs, data.count)  # refused before any write
    if shared.evaluating and data.paths:  # its bad rows and unknown labels too, before any write
        classifier_data.load(config.data.dataset, settings.eval_split, settings.columns, data.class_names)
    digest = data.key["files"] if data.paths else None
    run_settings.check_same_files(shared.model_dir, RECIPE, SentimentRunConfig, digest)
    config = dataclasses.replace(config, model=dataclasses.replace(config.model, num_classes=len(data.class_names)),
                                 train=train_config)
    # A bad vectors file is refused before any write; a fine-tuned encoder keeps its pretraining's words and embedding.
    words = None if config.setup.init_from else plan_words(shared.model_dir, config.model, data, config.train.seed)
    if words is not None:
        config = dataclasses.replace(config, model=word_embedding.words_model(config.model, words))
    config, tok = prepare_run(shared.model_dir, config, data, is_chief(strategy), words)
    model = config.model
    rows = classifier_data.token_rows(data, ClassifierPreprocessor.for_tokenizer(tok, model.max_length),
                                      tokenizer.files_key(shared.model_dir))
    rows.check_ids(model.vocab_size)
    replicas = strategy.num_replicas_in_sync
    plan = batching.training_plan(rows.lengths, train_config.train_steps, train_config.batch_size,
                                  train_config.seed, replicas)
    fields = {"token_ids": rows, "label": rows.labels}
    init_from = config.setup.init_from
    task = Task(
        build_model=lambda: classifier.build_classifier(model),
        dataset=batching.planned_dataset_fn(plan, replicas, lambda part, skip, _: batching.plan_dataset(
            part, fields, skip=skip, max_length=model.max_length)),
        loss=classifier.classification_loss(train_config.label_smoothing),
        initialize=pretrained.encoder_initializer(init_from) if init_from else
        word_embedding.initializer(words.matrix) if words is not None and words.matrix is not None else None,
        layer_depths=classifier.layer_depths,
    )
    derived = {"class_names": list(data.class_names)}
    if words is not None:
        derived["word_vectors"] = words.derived
    if data.paths:  # your own files: a resumed run must find the same contents
        derived["files"] = {"digest": data.key["files"], "bad_rows_skipped": data.skipped}
        derived["held_out"] = data.key["held_out"]  # validation is train's share: a resumed run must agree
    return driver.Prepared(config, derived, task)


def plan_words(model_dir, model, data, seed):
    """The word vocabulary and initial embedding of a run whose model.words (zoo.data.word_embedding), None for
    a subword run. A resumed run plans them again, from the same files, and must find the matrix it started
    from (the vectors file unchanged)."""
    if not model.words:
        return None
    plan = word_embedding.plan_words(data.texts(), model.vocab_size, model.word_vectors, model.min_vector_coverage,
                                     seed, scaled=model.embedding != "normalized",
                                     coverage_setting="--config.model.min_vector_coverage")
    record = RunDir(model_dir).read_record(RECIPE, SentimentRunConfig) if os.path.isdir(model_dir) else None
    word_embedding.check_resumed(plan, record, model.word_vectors, model_dir)
    print(plan.line, flush=True)
    return plan


def run_eval(model_dir, split, dataset=None, batch_size=64, average=1, columns=None, predictions=None):
    """Accuracy, loss, macro-F1, each class's precision, recall, F1 and support and the confusion matrix of
    the `split`, printed and written to metrics.json; with `predictions`, each text's prediction to that file."""
    loaded = load_trained(model_dir, average)
    trained = loaded.record.config.data
    dataset = dataset or trained.dataset
    columns = columns or columns_of(trained)  # default: the columns the run trained with
    data = classifier_data.load(dataset, split, columns, class_names=loaded.record.derived["class_names"])
    rows = classifier_data.token_rows(data, preprocessor(loaded), tokenizer.files_key(model_dir))
    rows.check_ids(loaded.config.vocab_size)
    plan = batching.evaluation_plan(rows.lengths, batch_size)
    fields = {"token_ids": rows, "label": rows.labels, "index": np.arange(len(rows.labels))}
    batches = batching.plan_dataset(plan, fields, max_length=loaded.config.max_length)
    outputs = gather(classifier.classification_outputs(loaded.model), batches, len(plan), description=split)
    order = np.argsort(outputs["index"])  # the data's order
    labels, probabilities = outputs["label"][order], outputs["probabilities"][order]
    class_names = loaded.record.derived["class_names"]
    report = metrics.classification_report(labels, probabilities.argmax(-1), class_names)
    result = {"accuracy": report["accuracy"], "loss": float(outputs["loss"].mean()), "macro_f1": report["macro_f1"]}
    # Another dataset's split (SST-2 dev for a run trained on sst2_tune) is kept beside the run's own.
    name = f"eval_{split}" if dataset == trained.dataset else f"eval_{dataset}_{split}"
    write_summaries(model_dir, name, loaded.step, result)
    result.update({key: report[key] for key in ("per_class", "macro_avg", "weighted_avg", "confusion_matrix")})
    result.update(examples=len(labels), step=loaded.step, dataset=dataset, average_checkpoints=average)
    if predictions:
        disk.write_atomically(predictions, metrics.predictions_lines(data.texts(), labels, probabilities, class_names),
                              "the predictions")
        result["predictions"] = os.path.abspath(predictions)
    RunDir(model_dir).update_metrics(**{name: result})
    print(f"{split}: accuracy {result['accuracy']:.4f}, loss {result['loss']:.4f}, macro-F1 {result['macro_f1']:.4f} "
          f"on {result['examples']} texts\n{metrics.format_report(report)}")
    if predictions:
        print(f"Predictions of the {len(labels)} texts in {predictions}")
    return result


def server(loaded, settings):
    class_names = loaded.record.derived["class_names"]
    module = classifier.ClassifierServer(loaded.model, preprocessor(loaded), class_names)
    return driver.Serving(
        module, {"serving_default": module.serve}, {"text": ["a wonderful, moving film", "dull and far too long", ""]},
        metadata={"recipe": RECIPE, "dataset": loaded.record.config.data.dataset, "step": loaded.step,
                  "model": dataclasses.asdict(loaded.config), "class_names": class_names},
    )


def run_explain(model_dir, text, average=1):
    import tensorflow as tf

    from zoo.classifier import explain

    loaded = load_trained(model_dir, average)
    token_ids = preprocessor(loaded)(tf.constant([text]))
    tokens = [loaded.tokenizer.id_to_token(int(i)) for i in token_ids[0].numpy()]
    scores = classifier.attention_scores(loaded.model, token_ids)
    directory = os.path.join(model_dir, "explain")
    paths = explain.save_attention_maps([s[0] for s in scores], tokens, directory)
    heatmap = os.path.join(directory, "positional_encoding.png")
    config = loaded.config
    paths.append(explain.plot_positional_encoding(min(config.max_length, 128), config.hidden_dim, heatmap))
    probabilities = tf.nn.softmax(loaded.model(token_ids)).numpy()[0]
    label = loaded.record.derived["class_names"][int(np.argmax(probabilities))]
    print(f"{label} ({probabilities.max():.3f}); pictures: " + ", ".join(paths))
    return paths


def encoder_of(init_from, model_dir):
    """The ClassifierConfig of the encoder `init_from` names: a resumed run's own (the checkpoint or the
    pretraining folder is not read again), a published checkpoint's, or a pretraining run's (at fine-tuning's
    dropout)."""
    existing = RunDir(model_dir).read_record(RECIPE, SentimentRunConfig) if model_dir and os.path.isdir(model_dir) \
        else None
    if existing is not None and existing.config.setup.init_from == published.normalize(init_from):
        return existing.config.model
    if published.is_published(init_from):
        return published.encoder_config(published.read_checkpoint(init_from))
    return pretrained.classifier_config(pretrained.pretrained_encoder_config(init_from))


def base_config(preset, init_from, given, model_dir):
    """The run's base config: the preset's (`preset` None: small), or with `init_from` the encoder's (a preset
    given must then name the encoder's shape, and none goes with a published checkpoint)."""
    if init_from is None:
        return run_config.base(preset or "small")
    encoder = encoder_of(init_from, model_dir)
    if published.is_published(init_from) and preset is not None:  # the model's fields: finish's check_encoder
        raise ValueError("--preset cannot be set with a published --init_from: the model's shape and vocabulary "
                         "come from the checkpoint. Leave it out.")
    elif preset is not None:
        pretrained.classifier_config(encoder, preset=preset)  # refuses a preset of another shape
    return run_config.base(preset, init_from, encoder, published.is_published(init_from))


def finish(config, base, given, model_dir, mode):
    """The encoder's shape kept (`run_config.check_encoder`), setup.init_from as a path made absolute, and a
    dataset to train on."""
    init_from = config.setup.init_from
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
    if mode != "config" and not config.data.dataset:
        raise ValueError("--dataset is required to train (imdb, sst2, tfds:<name>, or your own files: csv:, tsv:, "
                         "jsonl:, folder:), or data.dataset in the config.")
    return config


def make_settings(run, **options):
    """Settings of a run, checked before any work: a training run evaluates its config's split and columns."""
    settings = Settings(run, **options)
    if run.mode == "explain" and not settings.text:
        raise ValueError('--mode=explain needs --text="a sentence".')
    check_predictions(settings, run)
    if run.training:
        data = run.config.data
        settings = dataclasses.replace(settings, dataset=data.dataset, eval_split=data.eval_split,
                                       columns=columns_of(data))
        if run.evaluating:
            classifier_data.check_split(data.dataset, data.eval_split)
    return settings


def check_predictions(settings, run):
    """The predictions file: only where the mode evaluates, never over the run's own files, an input or any
    other file the zoo did not write unless asked (zoo.runs.outputs)."""
    path = settings.predictions
    if path is None:
        if settings.overwrite_predictions:
            raise ValueError("--overwrite_predictions replaces the file --predictions names: give --predictions too.")
        return
    if run.mode not in ("eval", "train_and_eval"):
        raise ValueError("--predictions is written by --mode=eval and --mode=train_and_eval.")
    outputs.check_file("--predictions", path, run.model_dir, metrics.is_predictions_file,
                       settings.overwrite_predictions)


SENTIMENT = driver.Recipe(
    name=RECIPE,
    config_class=SentimentRunConfig,
    base=base_config,
    shortcuts=SHORTCUTS,
    settings_class=Settings,
    make_settings=make_settings,
    prepare=prepare,
    load=load_trained,
    server=server,
    evaluate=lambda settings: run_eval(settings.run.model_dir, settings.eval_split, settings.dataset,
                                       settings.run.batch_size or 64, settings.run.average_checkpoints,
                                       settings.columns, settings.predictions),
    modes={"explain": lambda settings: run_explain(settings.run.model_dir, settings.text,
                                                   settings.run.average_checkpoints)},
    finish=finish,
)
