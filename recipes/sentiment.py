r"""Sentiment classification with a Transformer encoder, BERT-style.

A start token heads every text; its final hidden state is classified.

  python -m recipes.sentiment --dataset=imdb --preset=small --model_dir=runs/imdb \
      --export_dir=saved_models/sentiment
  python -m recipes.sentiment --dataset=sst2 --mode=eval --model_dir=runs/sst2
  python -m recipes.sentiment --mode=explain --model_dir=runs/imdb --text="A moving, funny film."
"""

import dataclasses
import os

import numpy as np
from absl import app, flags

from recipes import common, driver
from zoo.core import disk
from zoo.data import batching, datasets, tokenizer
from zoo.classifier import data as classifier_data, metrics, model as classifier
from zoo.classifier.load import load_run as load_trained, preprocessor
from zoo.pretraining import pretrained, published
from zoo.classifier.preprocessor import ClassifierPreprocessor
from zoo.training.distribute import is_chief
from zoo.training.evaluation import gather, write_summaries
from zoo.runs.run_dir import RunDir
from zoo.training.config import Task, TrainConfig

RECIPE = "sentiment"
DEFAULTS = TrainConfig(
    train_steps=2000, batch_size=32, learning_rate=5e-4, warmup_steps=400, checkpoint_every=500, log_every=50
)
# Fine-tuning a published checkpoint: BERT's (Devlin et al. 2019, appendix A.3) small rate, decayed to
# zero, with decoupled weight decay; a rate made for training from scratch would undo the pretraining.
PUBLISHED_DEFAULTS = dataclasses.replace(DEFAULTS, learning_rate=5e-5, warmup_steps=200, schedule="cosine",
                                         weight_decay=0.01)

common.define_mode("explain")
flags.DEFINE_enum("eval_split", "validation", datasets.SPLITS, "Split to evaluate (tune on validation).")
flags.DEFINE_integer("vocab_size", 8000, "Subword vocabulary size of the tokenizer trained on the train split.")
flags.DEFINE_integer("max_length", None, "Tokens per text (head token included). Default: the preset's.")
flags.DEFINE_float("dropout", None, "Dropout rate. Default: the preset's.")
flags.DEFINE_string("text", None, "The sentence to explain (--mode=explain).")
flags.DEFINE_string("init_from", None, "Fine-tune this encoder: a finished recipes.pretrain run directory (its "
                    "config and tokenizer; --preset and --vocab_size must agree or be left out, --max_length may "
                    "shorten its positions), or a published BERT/ELECTRA checkpoint: a Hugging Face folder, "
                    "hf:ORG/NAME[@REVISION] or "
                    "keras_hub:PRESET (its config and WordPiece vocabulary; --max_length may shorten its positions; "
                    "training defaults become --learning_rate=5e-5 --warmup_steps=200 --schedule=cosine "
                    "--weight_decay=0.01).")
flags.DEFINE_string("predictions", None, "--mode=eval and train_and_eval: write each evaluated text's label, "
                    "prediction and class probabilities to this file, one JSON object a line, in the data's order.")
flags.DEFINE_float("layer_decay", None, "Layer-wise learning-rate decay: each encoder layer learns at this "
                   "factor of the rate of the layer above it (the head at --learning_rate). Default: 1 (off).")
FLAGS = flags.FLAGS


@dataclasses.dataclass(frozen=True)
class Settings:
    """A sentiment run as the flags ask for it."""

    run: common.RunSettings
    dataset: str | None  # to train on; to evaluate (another dataset's split, e.g. sst2 for a run on sst2_tune)
    model: classifier.ClassifierConfig | None  # training only: the preset's, a pretrained encoder's or a checkpoint's
    init_from: str | None
    eval_split: str
    text: str | None  # --mode=explain
    columns: classifier_data.Columns | None  # your own files' columns; None: the trained run's
    predictions: str | None = None  # --predictions: the JSONL file of each evaluated text's prediction


def model_config(preset, **overrides):
    return common.preset_config(classifier.PRESETS, preset, **overrides)


def prepare_run(model_dir, dataset, model, data, seed, chief, init_from=None):
    """The run's record and tokenizer (`common.start_run`): a new run's tokenizer is trained on a sample of
    `data`'s texts, or is the pretrained run's or the published checkpoint's with `init_from`."""
    wordpiece = bool(init_from) and (published.is_published(init_from) or tokenizer.holds_wordpiece(init_from))

    def write_tokenizer():
        if wordpiece:  # a published checkpoint's vocabulary, or that of a run that continued one's pretraining
            source = init_from if published.is_published(init_from) else None
            vocab_of = published.read_checkpoint(source) if source else tokenizer.load_wordpiece(init_from)
            tokenizer.save_wordpiece(vocab_of.vocabulary, vocab_of.lowercase, vocab_of.strip_accents, model_dir)
        elif init_from:
            with open(RunDir(init_from).file(tokenizer.TOKENIZER_FILE), "rb") as f:
                proto = f.read()
            tokenizer.save_tokenizer(proto, model_dir)
        else:
            sample = data.tokenizer_sample(tokenizer.MAX_TRAINING_CHARACTERS, seed)
            tokenizer.save_tokenizer(tokenizer.train_tokenizer(sample, model.vocab_size, seed=seed), model_dir)

    fresh = {"recipe": RECIPE, "dataset": dataset, "model": dataclasses.asdict(model), "init_from": init_from}
    last = tokenizer.WORDPIECE_CONFIG_FILE if wordpiece else tokenizer.TOKENIZER_FILE
    run = common.start_run(model_dir, RECIPE, fresh, write_tokenizer, last, chief)
    return run, RunDir(model_dir).tokenizer()


def prepare(settings, strategy):
    """The training run (`driver.Prepared`): its record and tokenizer, the batch plan over the training
    texts, and the Task; with `init_from`, the encoder starts from the pretrained run's or checkpoint's weights."""
    shared = settings.run
    data = classifier_data.load(settings.dataset, "train", settings.columns, max_examples=shared.max_examples,
                                seed=shared.train.seed)  # every row read: a bad one is refused before any write
    model = dataclasses.replace(settings.model, num_classes=len(data.class_names))
    train_config = common.with_epochs(shared.train, shared.epochs, data.count)  # refused before any write
    if shared.evaluating and data.paths:  # its bad rows and unknown labels too, before any write
        classifier_data.load(settings.dataset, settings.eval_split, settings.columns, data.class_names)
    common.check_same_files(shared.model_dir, RECIPE, data.key["files"] if data.paths else None)
    run, tok = prepare_run(shared.model_dir, settings.dataset, model, data, shared.train.seed,
                           is_chief(strategy), settings.init_from)
    config = classifier.ClassifierConfig(**run["model"])
    rows = classifier_data.token_rows(data, ClassifierPreprocessor.for_tokenizer(tok, config.max_length),
                                      tokenizer.files_key(shared.model_dir))
    replicas = strategy.num_replicas_in_sync
    plan = batching.training_plan(rows.lengths, train_config.train_steps, train_config.batch_size,
                                  train_config.seed, replicas)
    fields = {"token_ids": rows, "label": rows.labels}
    task = Task(
        build_model=lambda: classifier.build_classifier(config),
        dataset=batching.planned_dataset_fn(plan, replicas, lambda part, skip, _: batching.plan_dataset(
            part, fields, skip=skip, max_length=config.max_length)),
        loss=classifier.classification_loss(train_config.label_smoothing),
        initialize=pretrained.encoder_initializer(settings.init_from) if settings.init_from else None,
        layer_depths=classifier.layer_depths,
    )
    record = {**run, "class_names": list(data.class_names)}
    if data.paths:  # your own files: which ones, read how; a resumed run must find the same contents
        record["files"] = {"digest": data.key["files"], "columns": dataclasses.asdict(settings.columns),
                          "bad_rows_skipped": data.skipped}
    return driver.Prepared(record, train_config, {"max_examples": shared.max_examples}, task)


def run_eval(model_dir, split, dataset=None, batch_size=64, average=1, columns=None, predictions=None):
    """Accuracy, loss, macro-F1, each class's precision, recall, F1 and support and the confusion matrix of
    the `split`, printed and written to metrics.json; with `predictions`, each text's prediction to that file."""
    loaded = load_trained(model_dir, average)
    dataset = dataset or loaded.run["dataset"]
    if columns is None:  # the columns the run trained with
        columns = classifier_data.Columns(**loaded.run.get("files", {}).get("columns", {}))
    data = classifier_data.load(dataset, split, columns, class_names=loaded.run["class_names"])
    rows = classifier_data.token_rows(data, preprocessor(loaded), tokenizer.files_key(model_dir))
    plan = batching.evaluation_plan(rows.lengths, batch_size)
    fields = {"token_ids": rows, "label": rows.labels, "index": np.arange(len(rows.labels))}
    batches = batching.plan_dataset(plan, fields, max_length=loaded.config.max_length)
    outputs = gather(classifier.classification_outputs(loaded.model), batches, len(plan), description=split)
    order = np.argsort(outputs["index"])  # the data's order
    labels, probabilities = outputs["label"][order], outputs["probabilities"][order]
    class_names = loaded.run["class_names"]
    report = metrics.classification_report(labels, probabilities.argmax(-1), class_names)
    result = {"accuracy": report["accuracy"], "loss": float(outputs["loss"].mean()), "macro_f1": report["macro_f1"]}
    # Another dataset's split (SST-2 dev for a run trained on sst2_tune) is kept beside the run's own.
    name = f"eval_{split}" if dataset == loaded.run["dataset"] else f"eval_{dataset}_{split}"
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


def predictions_file(mode):
    """--predictions, checked before any work: only where the mode evaluates, into a folder that exists."""
    path = FLAGS.predictions
    if path is None:
        return None
    if mode not in ("eval", "train_and_eval"):
        raise app.UsageError("--predictions is written by --mode=eval and --mode=train_and_eval.")
    folder = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path) or not os.path.isdir(folder):
        problem = "is a folder" if os.path.isdir(path) else f"is in {folder}, which is not a folder"
        raise ValueError(f"--predictions={path} {problem}: name a file in a folder that exists.")
    return path


def server(loaded, settings):
    module = classifier.ClassifierServer(loaded.model, preprocessor(loaded), loaded.run["class_names"])
    return driver.Serving(
        module, {"serving_default": module.serve}, {"text": ["a wonderful, moving film", "dull and far too long", ""]},
        metadata={"recipe": RECIPE, "dataset": loaded.run["dataset"], "step": loaded.step,
                  "model": loaded.run["model"], "class_names": loaded.run["class_names"]},
    )


def run_explain(model_dir, text, average=1):
    import numpy as np
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
    label = loaded.run["class_names"][int(np.argmax(probabilities))]
    print(f"{label} ({probabilities.max():.3f}); pictures: " + ", ".join(paths))
    return paths


def published_config(spec, existing):
    """The classifier config of a published checkpoint: its encoder's, with --max_length and
    --dropout; a resumed run's own (the checkpoint is not read again)."""
    given = [f"--{name}" for name in ("preset", "vocab_size") if FLAGS[name].present]
    if given:
        raise ValueError(f"{' and '.join(given)} cannot be set with a published --init_from: the model's shape and "
                         "vocabulary come from the checkpoint. Leave them out.")
    if existing is not None and existing.get("init_from") == spec:
        return classifier.ClassifierConfig(**existing["model"])
    return published.encoder_config(published.read_checkpoint(spec), FLAGS.max_length, FLAGS.dropout)


def model_from_flags(init_from):
    """The classifier config the flags ask for: the preset's, or the pretrained run's with --init_from
    (where an explicit --preset or --vocab_size must agree with it, and --max_length be at most its), or the
    published checkpoint's."""
    if not init_from:
        return model_config(FLAGS.preset, vocab_size=FLAGS.vocab_size, max_length=FLAGS.max_length,
                            dropout=FLAGS.dropout)
    existing = RunDir(FLAGS.model_dir).read_run(RECIPE) if os.path.isdir(FLAGS.model_dir) else None
    if published.is_published(init_from):
        return published_config(init_from, existing)
    asked = {name: getattr(FLAGS, name) if FLAGS[name].present else None
             for name in ("preset", "vocab_size", "max_length")}
    if existing is not None and existing.get("init_from") == init_from:
        # Resuming: the run holds its model and tokenizer; the pretraining folder may have moved since.
        encoder = classifier.ClassifierConfig(**existing["model"])
    else:
        encoder = pretrained.pretrained_encoder_config(init_from)
    return pretrained.classifier_config(encoder, dropout=FLAGS.dropout, **asked)


def config_from_flags(mode):
    """Settings from the flags; every flag is checked here, before any work."""
    if mode == "explain" and not FLAGS.text:
        raise ValueError('--mode=explain needs --text="a sentence".')
    training = mode in common.TRAINING_MODES
    init_from = published.normalize(FLAGS.init_from) if FLAGS.init_from else None
    if init_from and not training:
        raise app.UsageError("--init_from is for training (--mode=train or train_and_eval).")
    model, defaults = None, DEFAULTS
    if training:
        if not FLAGS.dataset:
            raise app.UsageError("--dataset is required to train (imdb, sst2, tfds:<name>, or your own files: csv:, "
                                 "tsv:, jsonl:, folder:).")
        model = model_from_flags(init_from)
        if init_from is not None and published.is_published(init_from):
            defaults = PUBLISHED_DEFAULTS  # the checkpoint's framing ([CLS] ... [SEP]) is checked by its config
        elif model.max_length < 2:
            raise ValueError(f"--max_length={model.max_length} leaves no room for text beside the start token: "
                             "use at least 2.")
        if FLAGS.layer_decay is not None:
            defaults = dataclasses.replace(defaults, layer_decay=FLAGS.layer_decay)
    shared = common.run_settings(defaults)
    if training and shared.evaluating:
        classifier_data.check_split(FLAGS.dataset, FLAGS.eval_split)
    given = any(FLAGS[name].present for name in ("text_column", "label_column", "bad_rows"))
    columns = classifier_data.Columns(FLAGS.text_column, FLAGS.label_column, FLAGS.bad_rows)
    return Settings(shared, FLAGS.dataset, model, init_from, FLAGS.eval_split, FLAGS.text,
                    columns if training or given else None, predictions_file(mode))


SENTIMENT = driver.Recipe(
    name=RECIPE,
    config_from_flags=config_from_flags,
    prepare=prepare,
    load=load_trained,
    server=server,
    evaluate=lambda settings: run_eval(settings.run.model_dir, settings.eval_split, settings.dataset,
                                       settings.run.batch_size or 64, settings.run.average_checkpoints,
                                       settings.columns, settings.predictions),
    modes={"explain": lambda settings: run_explain(settings.run.model_dir, settings.text,
                                                   settings.run.average_checkpoints)},
)

if __name__ == "__main__":
    driver.run(SENTIMENT)
