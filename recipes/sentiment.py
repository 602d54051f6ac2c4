r"""Sentiment classification with a Transformer encoder, BERT-style.

A start token heads every text; its final hidden state is classified.

  python -m recipes.sentiment --dataset=imdb --preset=small --model_dir=runs/imdb \
      --export_dir=saved_models/sentiment
  python -m recipes.sentiment --dataset=sst2 --mode=eval --model_dir=runs/sst2
  python -m recipes.sentiment --mode=explain --model_dir=runs/imdb --text="A moving, funny film."
"""

import dataclasses
import os

from absl import app, flags

from recipes import common
from zoo import batching, classifier, datasets, export, pretrained, published, tokenizer
from zoo.distribute import is_chief, make_strategy
from zoo.evaluation import evaluate, write_summaries
from zoo.run_dir import RunDir, RunDirError
from zoo.training import Task, Trainer, TrainConfig

RECIPE = "sentiment"
MODES = ("train", "eval", "train_and_eval", "export", "explain")
DEFAULTS = TrainConfig(
    train_steps=2000, batch_size=32, learning_rate=5e-4, warmup_steps=400, checkpoint_every=500, log_every=50
)
# Fine-tuning a published checkpoint: BERT's (Devlin et al. 2019, appendix A.3) small rate, decayed to
# zero, with decoupled weight decay; a rate made for training from scratch would undo the pretraining.
PUBLISHED_DEFAULTS = dataclasses.replace(DEFAULTS, learning_rate=5e-5, warmup_steps=200, schedule="cosine",
                                         weight_decay=0.01)

flags.DEFINE_enum("mode", "train_and_eval", MODES, "What to do.")
flags.DEFINE_enum("eval_split", "validation", datasets.SPLITS, "Split to evaluate (tune on validation).")
flags.DEFINE_integer("vocab_size", 8000, "Subword vocabulary size of the tokenizer trained on the train split.")
flags.DEFINE_integer("max_length", None, "Tokens per text (head token included). Default: the preset's.")
flags.DEFINE_float("dropout", None, "Dropout rate. Default: the preset's.")
flags.DEFINE_string("text", None, "The sentence to explain (--mode=explain).")
flags.DEFINE_string("init_from", None, "Fine-tune this encoder: a finished recipes.pretrain run directory (its "
                    "config and tokenizer; --preset, --vocab_size and --max_length must agree or be left out), or a "
                    "published BERT/ELECTRA checkpoint: a Hugging Face folder, hf:ORG/NAME[@REVISION] or "
                    "keras_hub:PRESET (its config and WordPiece vocabulary; --max_length may shorten its positions; "
                    "training defaults become --learning_rate=5e-5 --warmup_steps=200 --schedule=cosine "
                    "--weight_decay=0.01).")
flags.DEFINE_float("layer_decay", None, "Layer-wise learning-rate decay: each encoder layer learns at this "
                   "factor of the rate of the layer above it (the head at --learning_rate). Default: 1 (off).")
FLAGS = flags.FLAGS


@dataclasses.dataclass(frozen=True)
class Trained:
    """A trained run loaded back for eval, export or explain (float32)."""

    run: dict
    config: classifier.ClassifierConfig
    model: object
    tokenizer: object
    step: int


def model_config(preset, **overrides):
    return common.preset_config(classifier.PRESETS, preset, **overrides)


def prepare_run(model_dir, dataset, wanted, texts, seed, chief, init_from=None):
    """The run's record and tokenizer: read back when resuming, else made now (trained on
    `texts`, or the pretrained run's or published checkpoint's with `init_from`).

    Only the chief writes the tokenizer; other workers wait for it.
    """
    os.makedirs(model_dir, exist_ok=True)
    run_dir = RunDir(model_dir)
    run = run_dir.read_run(RECIPE)
    if run is not None:
        if run.get("init_from") != init_from:
            raise RunDirError(
                f"{model_dir} holds a run with --init_from={run.get('init_from')}, not {init_from}: resume it with "
                "the same --init_from, or use another --model_dir."
            )
        if run["dataset"] != dataset or run["model"] != dataclasses.asdict(wanted):
            raise RunDirError(
                f"{model_dir} holds a run of dataset {run['dataset']!r} with model {run['model']}; "
                "resume it with the same --dataset/--preset/--vocab_size/--max_length/--dropout, "
                "or use another --model_dir."
            )
        return run, run_dir.tokenizer()
    wordpiece = bool(init_from) and (published.is_published(init_from) or tokenizer.holds_wordpiece(init_from))
    if chief:
        if wordpiece:  # a published checkpoint's vocabulary, or that of a run that continued one's pretraining
            source = init_from if published.is_published(init_from) else None
            vocab_of = published.read_checkpoint(source) if source else tokenizer.load_wordpiece(init_from)
            tokenizer.save_wordpiece(vocab_of.vocabulary, vocab_of.lowercase, vocab_of.strip_accents, model_dir)
        elif init_from:
            with open(RunDir(init_from).file(tokenizer.TOKENIZER_FILE), "rb") as f:
                proto = f.read()
            tokenizer.save_tokenizer(proto, model_dir)
        else:
            tokenizer.save_tokenizer(tokenizer.train_tokenizer(texts, wanted.vocab_size, seed=seed), model_dir)
    else:
        last = tokenizer.WORDPIECE_CONFIG_FILE if wordpiece else tokenizer.TOKENIZER_FILE
        run_dir.wait_for(last)
    run = {"recipe": RECIPE, "dataset": dataset, "model": dataclasses.asdict(wanted), "init_from": init_from}
    return run, run_dir.tokenizer()


def train(model_dir, dataset, wanted, train_config, epochs, max_examples, strategy, init_from=None):
    """Trains (or resumes) the run in model_dir; returns the training metrics.

    With `init_from` (a finished pretraining run; `wanted` then comes from
    `pretrained.classifier_config`), the encoder starts from its weights."""
    data = datasets.subsample(datasets.load_classification(dataset, "train"), max_examples, train_config.seed)
    chief = is_chief(strategy)
    wanted = dataclasses.replace(wanted, num_classes=len(data.class_names))
    run, tok = prepare_run(model_dir, dataset, wanted, data.texts, train_config.seed, chief, init_from)
    config = classifier.ClassifierConfig(**run["model"])
    rows = classifier.with_head_token(tokenizer.tokenize(tok, data.texts), config.max_length, *tokenizer.framing(tok))
    train_config = common.with_epochs(train_config, epochs, len(rows))
    replicas = strategy.num_replicas_in_sync
    setup = {"max_examples": max_examples, "replicas": replicas, "strategy": type(strategy).__name__}
    RunDir(model_dir).record_training({**run, "class_names": list(data.class_names)}, train_config, setup, chief)
    if train_config.batch_size % replicas:
        raise ValueError(f"batch_size={train_config.batch_size} is not divisible by the {replicas} replicas.")
    plan = batching.training_plan(
        [len(r) for r in rows], train_config.train_steps, train_config.batch_size, train_config.seed, replicas
    )
    fields = {"token_ids": rows, "label": data.labels}

    def dataset_fn(context, start_step):
        per_pipeline = replicas // context.num_input_pipelines
        part = batching.pipeline_part(plan, context.num_input_pipelines, context.input_pipeline_id, per_pipeline)
        return batching.plan_dataset(part, fields, skip=start_step * per_pipeline)

    task = Task(
        build_model=lambda: classifier.build_classifier(config),
        dataset=dataset_fn,
        loss=classifier.classification_loss(train_config.label_smoothing),
        initialize=pretrained.encoder_initializer(init_from) if init_from else None,
        layer_depths=classifier.layer_depths,
    )
    metrics = Trainer(task, train_config, model_dir, strategy).train()
    if chief and metrics is not None:
        RunDir(model_dir).update_metrics(train=metrics)
    return metrics


def load_trained(model_dir):
    """The newest checkpoint of a run, rebuilt in float32 whatever it trained in."""
    run_dir = RunDir(model_dir)
    run = run_dir.require_run(RECIPE)
    config = classifier.ClassifierConfig(**run["model"])
    model, step = run_dir.load_model(lambda: classifier.build_classifier(config), common.averaged())
    return Trained(run, config, model, run_dir.tokenizer(), step)


def run_eval(model_dir, split, dataset=None, batch_size=64):
    trained = load_trained(model_dir)
    dataset = dataset or trained.run["dataset"]
    data = datasets.load_classification(dataset, split)
    if list(data.class_names) != trained.run["class_names"]:
        raise ValueError(f"{dataset} has classes {data.class_names}; the model knows {trained.run['class_names']}.")
    rows = classifier.with_head_token(tokenizer.tokenize(trained.tokenizer, data.texts), trained.config.max_length,
                                      *tokenizer.framing(trained.tokenizer))
    plan = batching.evaluation_plan([len(r) for r in rows], batch_size)
    batches = batching.plan_dataset(plan, {"token_ids": rows, "label": data.labels})
    totals = evaluate(classifier.classification_metrics(trained.model), batches, len(plan), description=split)
    result = {"accuracy": totals["correct"] / totals["examples"], "loss": totals["loss"] / totals["examples"]}
    # Another dataset's split (SST-2 dev for a run trained on sst2_tune) is kept beside the run's own.
    name = f"eval_{split}" if dataset == trained.run["dataset"] else f"eval_{dataset}_{split}"
    write_summaries(model_dir, name, trained.step, result)
    result.update(examples=int(totals["examples"]), step=trained.step, dataset=dataset,
                  average_checkpoints=common.averaged())
    RunDir(model_dir).update_metrics(**{name: result})
    print(f"{split}: accuracy {result['accuracy']:.4f}, loss {result['loss']:.4f} on {result['examples']} texts")
    return result


def run_export(model_dir, export_dir):
    trained = load_trained(model_dir)
    server = classifier.ClassifierServer(
        trained.model, trained.tokenizer, trained.config.max_length, trained.run["class_names"],
        *tokenizer.framing(trained.tokenizer),
    )
    path = export.export(
        server,
        {"serving_default": server.serve},
        export_dir,
        {"text": ["a wonderful, moving film", "dull and far too long", ""]},
        metadata={"recipe": RECIPE, "dataset": trained.run["dataset"], "step": trained.step, "model": trained.run["model"]},
    )
    print(f"Exported step {trained.step} to {path}")
    return path


def run_explain(model_dir, text):
    import numpy as np
    import tensorflow as tf

    from zoo import explain

    trained = load_trained(model_dir)
    token_ids = classifier.head_token_ids(trained.tokenizer, tf.constant([text]), trained.config.max_length,
                                          *tokenizer.framing(trained.tokenizer))
    tokens = [trained.tokenizer.id_to_token(int(i)) for i in token_ids[0].numpy()]
    scores = classifier.attention_scores(trained.model, token_ids)
    directory = os.path.join(model_dir, "explain")
    paths = explain.save_attention_maps([s[0] for s in scores], tokens, directory)
    heatmap = os.path.join(directory, "positional_encoding.png")
    paths.append(explain.plot_positional_encoding(min(trained.config.max_length, 128), trained.config.hidden_dim, heatmap))
    probabilities = tf.nn.softmax(trained.model(token_ids)).numpy()[0]
    label = trained.run["class_names"][int(np.argmax(probabilities))]
    print(f"{label} ({probabilities.max():.3f}); pictures: " + ", ".join(paths))
    return paths


def published_config(spec, existing):
    """The classifier config of a published checkpoint: its encoder's, with --max_length and
    --dropout; a resumed run's own (the checkpoint is not read again)."""
    given = [f"--{name}" for name in ("preset", "vocab_size") if FLAGS[name].present]
    if given:
        raise ValueError(f"{' and '.join(given)} cannot be set with a published --init_from: the model's shape and "
                         "vocabulary come from the checkpoint. Leave them out.")
    if existing is not None and existing.get("init_from") == published.normalize(spec):
        return classifier.ClassifierConfig(**existing["model"])
    return published.encoder_config(published.read_checkpoint(spec), FLAGS.max_length, FLAGS.dropout)


def wanted_config():
    """The classifier config the flags ask for: the preset's, or the pretrained run's with --init_from
    (where an explicit --preset, --vocab_size or --max_length must agree with it), or the
    published checkpoint's."""
    if not FLAGS.init_from:
        return model_config(FLAGS.preset, vocab_size=FLAGS.vocab_size, max_length=FLAGS.max_length,
                            dropout=FLAGS.dropout)
    existing = RunDir(FLAGS.model_dir).read_run(RECIPE) if os.path.isdir(FLAGS.model_dir) else None
    if published.is_published(FLAGS.init_from):
        return published_config(FLAGS.init_from, existing)
    asked = {name: getattr(FLAGS, name) if FLAGS[name].present else None
             for name in ("preset", "vocab_size", "max_length")}
    if existing is not None and existing.get("init_from") == os.path.abspath(FLAGS.init_from):
        # Resuming: the run holds its model and tokenizer; the pretraining folder may have moved since.
        run = {"model": {"encoder": existing["model"]}}
    else:
        run = RunDir(FLAGS.init_from).read_finished(pretrained.RECIPE)
    return pretrained.classifier_config(run, dropout=FLAGS.dropout, **asked)


def main(argv):
    del argv
    mode, model_dir = FLAGS.mode, FLAGS.model_dir
    if not model_dir:
        raise app.UsageError("--model_dir is required.")
    training, evaluating = mode in ("train", "train_and_eval"), mode in ("eval", "train_and_eval")
    exporting = mode == "export" or (training and FLAGS.export_dir)
    if exporting and not FLAGS.export_dir:
        raise app.UsageError("--mode=export needs --export_dir.")
    if mode == "explain" and not FLAGS.text:
        raise ValueError('--mode=explain needs --text="a sentence".')
    init_from = published.normalize(FLAGS.init_from) if FLAGS.init_from else None
    if init_from and not training:
        raise app.UsageError("--init_from is for training (--mode=train or train_and_eval).")
    strategy = None
    if training:
        if not FLAGS.dataset:
            raise app.UsageError("--dataset is required to train (imdb, sst2 or tfds:<name>).")
        wanted = wanted_config()
        from_checkpoint = init_from is not None and published.is_published(init_from)
        train_config, epochs = common.train_config(PUBLISHED_DEFAULTS if from_checkpoint else DEFAULTS)
        if FLAGS.layer_decay is not None:
            train_config = dataclasses.replace(train_config, layer_decay=FLAGS.layer_decay)
        if evaluating:
            datasets.check_split(FLAGS.dataset, FLAGS.eval_split)
        strategy = make_strategy(FLAGS.strategy, FLAGS.cpu_replicas, FLAGS.tpu)
    with common.hold_model_dir(mode, strategy):
        if training:
            train(model_dir, FLAGS.dataset, wanted, train_config, epochs, FLAGS.max_examples, strategy, init_from)
            if not is_chief(strategy):
                return
        if evaluating:
            run_eval(model_dir, FLAGS.eval_split, FLAGS.dataset, FLAGS.batch_size or 64)
        if exporting:
            run_export(model_dir, FLAGS.export_dir)
        if mode == "explain":
            run_explain(model_dir, FLAGS.text)


if __name__ == "__main__":
    common.run(main)
