r"""Sentiment classification with a Transformer encoder, BERT-style.

A start token heads every text; its final hidden state is classified.

  python -m recipes.sentiment --dataset=imdb --preset=small --model_dir=runs/imdb \
      --export_dir=saved_models/sentiment
  python -m recipes.sentiment --dataset=sst2 --mode=eval --model_dir=runs/sst2
  python -m recipes.sentiment --mode=explain --model_dir=runs/imdb --text="A moving, funny film."
"""

import dataclasses
import functools
import os

import numpy as np
from absl import app, flags

from recipes import common, driver
from zoo.core import disk
from zoo.data import batching, datasets, tokenizer
from zoo.classifier import data as classifier_data, metrics, model as classifier
from zoo.classifier.load import load_run as load_trained, preprocessor
from zoo.pretraining import pretrained, published
from zoo.classifier import run_config
from zoo.classifier.preprocessor import ClassifierPreprocessor
from zoo.classifier.run_config import SentimentRunConfig
from zoo.training.distribute import is_chief
from zoo.training.evaluation import gather, write_summaries
from zoo.runs.run_dir import RunDir
from zoo.training.config import Task

RECIPE = "sentiment"

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
flags.DEFINE_list("classes", None, "Your own data: the labels (or, for folder:, the class folders) to use, in this "
                  "order, e.g. neg,pos for aclImdb's train/{neg,pos,unsup}; rows of other labels are left out and "
                  "counted in the log (Keras text_dataset_from_directory's class_names). Default: every label.")
flags.DEFINE_string("predictions", None, "--mode=eval and train_and_eval: write each evaluated text's label, "
                    "prediction and class probabilities to this file, one JSON object a line, in the data's order.")
flags.DEFINE_float("layer_decay", None, "Layer-wise learning-rate decay: each encoder layer learns at this "
                   "factor of the rate of the layer above it (the head at --learning_rate). Default: 1 (off).")
FLAGS = flags.FLAGS


@dataclasses.dataclass(frozen=True)
class Settings:
    """A sentiment run as the flags ask for it: the run's typed config (run.config) when it trains."""

    run: common.RunSettings
    dataset: str | None  # to train on; to evaluate (another dataset's split, e.g. sst2 for a run on sst2_tune)
    eval_split: str
    text: str | None  # --mode=explain
    columns: classifier_data.Columns | None  # your own files' columns; None: the trained run's
    predictions: str | None = None  # --predictions: the JSONL file of each evaluated text's prediction


def columns_of(data):
    """The classifier_data.Columns of a SentimentData."""
    return classifier_data.Columns(data.text_column, data.label_column, data.bad_rows, data.classes)


def prepare_run(model_dir, config, data, chief):
    """The run's config and tokenizer (`common.start_run`): a new run's tokenizer is trained on a sample of
    `data`'s texts, or is the pretrained run's or the published checkpoint's with setup.init_from."""
    init_from, seed = config.setup.init_from, config.train.seed
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
            tokenizer.save_tokenizer(tokenizer.train_tokenizer(sample, config.model.vocab_size, seed=seed), model_dir)

    last = tokenizer.WORDPIECE_CONFIG_FILE if wordpiece else tokenizer.TOKENIZER_FILE
    config = common.start_run(model_dir, RECIPE, config, write_tokenizer, last, chief)
    return config, RunDir(model_dir).tokenizer()


def prepare(settings, strategy):
    """The training run (`driver.Prepared`): its config and tokenizer, the batch plan over the training
    texts, and the Task; with setup.init_from, the encoder starts from the pretrained run's or checkpoint's weights."""
    shared = settings.run
    config = shared.config
    data = classifier_data.load(config.data.dataset, "train", settings.columns, max_examples=config.data.max_examples,
                                seed=config.train.seed)  # every row read: a bad one is refused before any write
    train_config = common.with_epochs(config.train, shared.epochs, data.count)  # refused before any write
    if shared.evaluating and data.paths:  # its bad rows and unknown labels too, before any write
        classifier_data.load(config.data.dataset, settings.eval_split, settings.columns, data.class_names)
    common.check_same_files(shared.model_dir, RECIPE, SentimentRunConfig, data.key["files"] if data.paths else None)
    config = dataclasses.replace(config, model=dataclasses.replace(config.model, num_classes=len(data.class_names)),
                                 train=train_config)
    config, tok = prepare_run(shared.model_dir, config, data, is_chief(strategy))
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
        initialize=pretrained.encoder_initializer(init_from) if init_from else None,
        layer_depths=classifier.layer_depths,
    )
    derived = {"class_names": list(data.class_names)}
    if data.paths:  # your own files: a resumed run must find the same contents
        derived["files"] = {"digest": data.key["files"], "bad_rows_skipped": data.skipped}
    return driver.Prepared(config, derived, task)


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
    class_names = loaded.record.derived["class_names"]
    module = classifier.ClassifierServer(loaded.model, preprocessor(loaded), class_names)
    return driver.Serving(
        module, {"serving_default": module.serve}, {"text": ["a wonderful, moving film", "dull and far too long", ""]},
        metadata={"recipe": RECIPE, "dataset": loaded.record.config.data.dataset, "step": loaded.step,
                  "model": dataclasses.asdict(loaded.config), "class_names": class_names},
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
    label = loaded.record.derived["class_names"][int(np.argmax(probabilities))]
    print(f"{label} ({probabilities.max():.3f}); pictures: " + ", ".join(paths))
    return paths


# Flag -> config field, beside common.SHORTCUTS.
SHORTCUTS = {"eval_split": "data.eval_split", "text_column": "data.text_column", "label_column": "data.label_column",
             "classes": "data.classes", "vocab_size": "model.vocab_size", "max_length": "model.max_length",
             "dropout": "model.dropout", "init_from": "setup.init_from", "layer_decay": "train.layer_decay"}


@functools.lru_cache(maxsize=4)
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


def base_config(preset, init_from):
    """The run's base config: the preset's, or with an --init_from the encoder's (--preset must then be left out,
    or name the encoder's shape)."""
    if init_from is None:
        return run_config.base(preset)
    encoder = encoder_of(init_from, FLAGS.model_dir)
    if FLAGS["preset"].present:
        if published.is_published(init_from):
            raise ValueError("--preset cannot be set with a published --init_from: the model's shape and vocabulary "
                             "come from the checkpoint. Leave it out.")
        pretrained.classifier_config(encoder, preset=preset)  # refuses a preset of another shape
    return run_config.base(preset, init_from, encoder, published.is_published(init_from))


def config_from_flags(mode):
    """Settings from the flags; every flag and config field is checked here, before any work."""
    if mode == "explain" and not FLAGS.text:
        raise ValueError('--mode=explain needs --text="a sentence".')
    training = mode in common.TRAINING_MODES
    if FLAGS.init_from and not training and mode != "config":
        raise app.UsageError("--init_from is for training (--mode=train or train_and_eval).")
    config = None
    if training or mode == "config":
        config = common.run_config(SentimentRunConfig, base_config, RECIPE, SHORTCUTS)
        init_from = config.setup.init_from
        if init_from:
            run_config.check_encoder(config.model, encoder_of(init_from, FLAGS.model_dir))
            config = dataclasses.replace(config, setup=dataclasses.replace(
                config.setup, init_from=published.normalize(init_from)))
        if training and not config.data.dataset:
            raise app.UsageError("--dataset is required to train (imdb, sst2, tfds:<name>, or your own files: csv:, "
                                 "tsv:, jsonl:, folder:), or data.dataset in --config.")
    shared = common.run_settings(config)
    if training:
        if shared.evaluating:
            classifier_data.check_split(config.data.dataset, config.data.eval_split)
        return Settings(shared, config.data.dataset, config.data.eval_split, FLAGS.text, columns_of(config.data),
                        predictions_file(mode))
    given = any(FLAGS[name].present for name in ("text_column", "label_column", "bad_rows", "classes"))
    columns = classifier_data.Columns(FLAGS.text_column, FLAGS.label_column, FLAGS.bad_rows,
                                      tuple(FLAGS.classes) if FLAGS.classes else None)
    return Settings(shared, FLAGS.dataset, FLAGS.eval_split, FLAGS.text, columns if given else None,
                    predictions_file(mode))


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
