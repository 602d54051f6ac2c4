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
from zoo import batching, classifier, datasets, export, tokenizer
from zoo.distribute import is_chief, make_strategy
from zoo.evaluation import evaluate
from zoo.training import Task, Trainer, TrainConfig, restore_model

RECIPE = "sentiment"
MODES = ("train", "eval", "train_and_eval", "export", "explain")
DEFAULTS = TrainConfig(
    train_steps=2000, batch_size=32, learning_rate=5e-4, warmup_steps=400, checkpoint_every=500, log_every=50
)

flags.DEFINE_enum("mode", "train_and_eval", MODES, "What to do.")
flags.DEFINE_enum("eval_split", "validation", datasets.SPLITS, "Split to evaluate (tune on validation).")
flags.DEFINE_integer("vocab_size", 8000, "Subword vocabulary size of the tokenizer trained on the train split.")
flags.DEFINE_integer("max_length", None, "Tokens per text (head token included). Default: the preset's.")
flags.DEFINE_float("dropout", None, "Dropout rate. Default: the preset's.")
flags.DEFINE_string("text", None, "The sentence to explain (--mode=explain).")
FLAGS = flags.FLAGS


def model_config(preset, **overrides):
    """The preset with the fields given (not None) replaced."""
    if preset not in classifier.PRESETS:
        raise ValueError(f"Unknown preset {preset!r}: use one of {sorted(classifier.PRESETS)}.")
    overrides = {name: value for name, value in overrides.items() if value is not None}
    return dataclasses.replace(classifier.PRESETS[preset], **overrides)


def prepare_run(model_dir, dataset, wanted, train_data, seed, chief=True):
    """Creates (or checks, when resuming) the run directory: tokenizer and config.json.

    Only the chief writes; other workers train the same tokenizer (same text,
    same seed) in memory.
    """
    os.makedirs(model_dir, exist_ok=True)
    run = common.read_run(model_dir, RECIPE)
    if run is not None:
        if run["dataset"] != dataset or run["model"] != dataclasses.asdict(wanted):
            raise common.RunDirError(
                f"{model_dir} holds a run of dataset {run['dataset']!r} with model {run['model']}; "
                "resume it with the same --dataset/--preset/--vocab_size/--max_length/--dropout, "
                "or use another --model_dir."
            )
        return run, tokenizer.load_tokenizer(model_dir)
    proto = tokenizer.train_tokenizer(train_data.texts, wanted.vocab_size, seed=seed)
    if chief:
        tokenizer.save_tokenizer(proto, model_dir)
    run = {
        "recipe": RECIPE,
        "dataset": dataset,
        "class_names": list(train_data.class_names),
        "model": dataclasses.asdict(wanted),
    }
    return run, tokenizer.load_tokenizer(proto)


def train(model_dir, dataset, wanted, strategy):
    train_data = datasets.load_classification(dataset, "train")
    if FLAGS.max_examples:
        train_data = datasets.Classification(
            train_data.texts[: FLAGS.max_examples], train_data.labels[: FLAGS.max_examples], train_data.class_names
        )
    chief = is_chief(strategy)
    wanted = dataclasses.replace(wanted, num_classes=len(train_data.class_names))
    run, tok = prepare_run(model_dir, dataset, wanted, train_data, FLAGS.seed, chief)
    config = classifier.ClassifierConfig(**run["model"])
    rows = classifier.with_head_token(tokenizer.tokenize(tok, train_data.texts), config.max_length)
    train_config = common.train_config(DEFAULTS, num_examples=len(rows))
    if chief:
        common.write_json(model_dir, common.CONFIG_FILE, {**run, "train": dataclasses.asdict(train_config)})
    replicas = strategy.num_replicas_in_sync
    if train_config.batch_size % replicas:
        raise ValueError(f"batch_size={train_config.batch_size} is not divisible by the {replicas} replicas.")
    plan = batching.training_plan(
        [len(r) for r in rows], train_config.train_steps, train_config.batch_size, train_config.seed, replicas
    )
    fields = {"token_ids": rows, "label": train_data.labels}

    def dataset_fn(context, start_step):
        per_pipeline = replicas // context.num_input_pipelines
        part = batching.pipeline_part(plan, context.num_input_pipelines, context.input_pipeline_id, per_pipeline)
        return batching.plan_dataset(part, fields, skip=start_step * per_pipeline)

    task = Task(
        build_model=lambda: classifier.build_classifier(config),
        dataset=dataset_fn,
        loss=classifier.classification_loss(train_config.label_smoothing),
    )
    metrics = Trainer(task, train_config, model_dir, strategy).train()
    if chief:
        common.update_metrics(model_dir, train=metrics)
    return metrics


def load_trained(model_dir):
    run = common.require_run(model_dir, RECIPE)
    config = classifier.ClassifierConfig(**run["model"])
    model = classifier.build_classifier(config)
    restore_model(model, model_dir)
    return run, config, model, tokenizer.load_tokenizer(model_dir)


def run_eval(model_dir, split, dataset=None, batch_size=64):
    run, config, model, tok = load_trained(model_dir)
    data = datasets.load_classification(dataset or run["dataset"], split)
    if list(data.class_names) != run["class_names"]:
        raise ValueError(f"{dataset} has classes {data.class_names}; the model was trained on {run['class_names']}.")
    rows = classifier.with_head_token(tokenizer.tokenize(tok, data.texts), config.max_length)
    plan = batching.evaluation_plan([len(r) for r in rows], batch_size)
    dataset = batching.plan_dataset(plan, {"token_ids": rows, "label": data.labels})
    totals = evaluate(classifier.classification_metrics(model), dataset, len(plan), description=split)
    result = {"accuracy": totals["correct"] / totals["examples"], "loss": totals["loss"] / totals["examples"]}
    result["examples"] = int(totals["examples"])
    common.update_metrics(model_dir, **{f"eval_{split}": result})
    print(f"{split}: accuracy {result['accuracy']:.4f}, loss {result['loss']:.4f} on {result['examples']} texts")
    return result


def run_export(model_dir, export_dir):
    run, config, model, tok = load_trained(model_dir)
    server = classifier.ClassifierServer(model, tok, config.max_length, run["class_names"])
    path = export.export(
        server,
        {"serving_default": server.serve},
        export_dir,
        {"text": ["a wonderful, moving film", "dull and far too long", ""]},
        metadata={"recipe": RECIPE, "dataset": run["dataset"], "model": run["model"]},
    )
    print(f"Exported to {path}")
    return path


def run_explain(model_dir, text):
    import numpy as np
    import tensorflow as tf

    from zoo import explain

    if not text:
        raise ValueError("--mode=explain needs --text=\"a sentence\".")
    run, config, model, tok = load_trained(model_dir)
    token_ids = classifier.head_token_ids(tok, tf.constant([text]), config.max_length)
    tokens = ["<s>"] + [tok.id_to_token(int(i)) for i in token_ids[0, 1:].numpy()]
    scores = classifier.attention_scores(model, token_ids)
    directory = os.path.join(model_dir, "explain")
    paths = explain.save_attention_maps([s[0] for s in scores], tokens, directory)
    paths.append(explain.plot_positional_encoding(min(config.max_length, 128), config.hidden_dim,
                                                  os.path.join(directory, "positional_encoding.png")))
    probabilities = tf.nn.softmax(model(token_ids)).numpy()[0]
    label = run["class_names"][int(np.argmax(probabilities))]
    print(f"{label} ({probabilities.max():.3f}); pictures: " + ", ".join(paths))
    return paths


def main(argv):
    del argv
    if not FLAGS.model_dir:
        raise app.UsageError("--model_dir is required.")
    mode = FLAGS.mode
    if mode in ("train", "train_and_eval"):
        if not FLAGS.dataset:
            raise app.UsageError("--dataset is required to train (imdb, sst2 or tfds:<name>).")
        wanted = model_config(
            FLAGS.preset, vocab_size=FLAGS.vocab_size, max_length=FLAGS.max_length, dropout=FLAGS.dropout
        )
        strategy = make_strategy(FLAGS.strategy, FLAGS.cpu_replicas, FLAGS.tpu)
        train(FLAGS.model_dir, FLAGS.dataset, wanted, strategy)
        if not is_chief(strategy):
            return
    if mode in ("eval", "train_and_eval"):
        run_eval(FLAGS.model_dir, FLAGS.eval_split, FLAGS.dataset)
    if mode == "export" or (mode in ("train", "train_and_eval") and FLAGS.export_dir):
        if not FLAGS.export_dir:
            raise app.UsageError("--mode=export needs --export_dir.")
        run_export(FLAGS.model_dir, FLAGS.export_dir)
    if mode == "explain":
        run_explain(FLAGS.model_dir, FLAGS.text)


if __name__ == "__main__":
    common.run(main)
