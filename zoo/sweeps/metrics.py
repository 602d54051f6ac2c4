"""The figures a sweep can optimize: what each recipe writes to its run's metrics.json, named SPLIT.FIGURE
(`validation.accuracy`: the `accuracy` of the `eval_validation` section), or `train.loss` (training's last loss).

A figure's goal follows its kind: accuracy, F1, BLEU, chrF, recall and correlations are maximized; loss, errors
(mse, rmse, mae), perplexity and bits per character minimized (a space file's `goal:` says otherwise)."""

import math

from zoo.core import config as cfg

# recipe -> the figures of its evaluation (zoo/<family>/recipe.py's run_eval); the LM's are those of the memory
# it trained with (its section's `train_memory`), a pretraining run's those of its held-out documents.
FIGURES = {
    # single-label classification's; regression's (model.problem_type, docs/tasks.md); multi-label's
    "sentiment": ("accuracy", "macro_f1", "loss", "mse", "rmse", "mae", "pearson", "spearman", "micro_f1",
                  "subset_accuracy"),
    "translate": ("bleu", "chrf", "loss"),
    "lm": ("perplexity", "bits_per_character"),
    "pretrain": ("masked_accuracy", "masked_perplexity", "detection_accuracy", "replaced_recall", "detection_loss"),
}
EXAMPLE_SPLIT = {"sentiment": "validation", "translate": "test", "lm": "test", "pretrain": "held_out"}
KINDS = (("accuracy", "max"), ("f1", "max"), ("bleu", "max"), ("chrf", "max"), ("recall", "max"), ("loss", "min"),
         ("perplexity", "min"), ("bits", "min"), ("mse", "min"), ("mae", "min"), ("pearson", "max"),
         ("spearman", "max"))
TRAIN = "train.loss"


def names(recipe):
    """The metric names of a `recipe` run, its evaluated split written SPLIT."""
    return [f"SPLIT.{figure}" for figure in FIGURES[recipe]] + [TRAIN]


def example(recipe):
    return f"{EXAMPLE_SPLIT[recipe]}.{FIGURES[recipe][0]}"


def check(recipe, metric, where):
    """`metric` if a `recipe` run writes it (the split is checked against each trial's config later: `split`)."""
    split, _, figure = str(metric).rpartition(".")
    if metric == TRAIN or (isinstance(metric, str) and split and figure in FIGURES[recipe]):
        return metric
    raise cfg.ConfigError(f"{where}: metric={metric!r} is not a figure {recipe} runs write: name one of "
                          f"{', '.join(names(recipe))} (SPLIT: the split each trial evaluates), e.g. "
                          f"{example(recipe)}.")


def goal(metric):
    """"max" or "min" by the figure's kind."""
    figure = metric.rpartition(".")[2]
    for kind, direction in KINDS:
        if kind in figure:
            return direction
    raise cfg.ConfigError(f"metric={metric!r}: say whether to maximize or minimize it (goal: max, or goal: min).")


def evaluated_split(recipe, config):
    """The split a `recipe` run of `config` evaluates after training (None: none, for the train.loss metric)."""
    if recipe == "pretrain":
        return "held_out"
    if recipe == "sentiment" or config.data.eval_split:
        return config.data.eval_split
    if recipe == "lm":
        from zoo.language_model.data import default_split
    else:
        from zoo.translation.recipe import default_split
    return default_split(config.data.dataset)


def check_split(recipe, metric, config, field_values):
    """Refuses a metric of another split than the one a trial of `config` evaluates (`field_values`: its point)."""
    if metric == TRAIN:
        return
    split = metric.rpartition(".")[0]
    evaluated = evaluated_split(recipe, config)
    if split != evaluated:
        point = ", ".join(f"{name}={value!r}" for name, value in field_values.items())
        raise cfg.ConfigError(f"metric={metric} but the trials evaluate {evaluated!r}"
                              f"{f' (at {point})' if point else ''}: name {evaluated}.{metric.rpartition('.')[2]}, "
                              f"or set data.eval_split={split}.")


def read(recipe, metric, figures):
    """The `metric`'s value in a run's metrics.json (`figures`: its contents), else a ValueError saying what it
    holds."""
    if metric == TRAIN:
        section, figure = figures.get("train") or {}, "loss"
    else:
        split, _, figure = metric.rpartition(".")
        section = figures.get(f"eval_{split}") or {}
        if recipe == "lm":
            section = section.get("train_memory") or {}
    value = section.get(figure)
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        held = ", ".join(name for name, item in section.items() if isinstance(item, (int, float))) or "nothing"
        raise ValueError(f"metrics.json holds no {metric} (that section holds {held}).")
    if not math.isfinite(value):
        raise ValueError(f"{metric} is {value}.")
    return float(value)
