"""The figures a sweep can optimize: what a recipe's runs write to metrics.json, named SPLIT.FIGURE
(`validation.accuracy`: the `accuracy` of the `eval_validation` section), or `train.loss` (training's last loss). Each
recipe says which figures it writes and the split it evaluates (its zoo.training.driver.Figures): this module asks it,
and knows no recipe by name. A figure's goal follows its kind (`KINDS`; a space file's `goal:` may say otherwise)."""

import math

from zoo.core import config as cfg

KINDS = (("accuracy", "max"), ("f1", "max"), ("bleu", "max"), ("chrf", "max"), ("recall", "max"), ("loss", "min"),
         ("perplexity", "min"), ("bits", "min"), ("mse", "min"), ("mae", "min"), ("pearson", "max"),
         ("spearman", "max"))
TRAIN = "train.loss"


def names(recipe):
    """The metric names of a `recipe` run (a zoo.training.driver.Recipe), its evaluated split written SPLIT."""
    return [f"SPLIT.{figure}" for figure in recipe.figures.every()] + [TRAIN]


def example(recipe):
    """A metric of a run of the recipe's default config: its evaluated split and headline figure."""
    config = recipe.config_class()
    return f"{recipe.figures.split(config)}.{recipe.figures.of(config)[0]}"


def check(recipe, metric, where):
    """`metric` if some `recipe` run writes it (each trial's split and kind are checked against its config later:
    `check_trial`)."""
    split, _, figure = str(metric).rpartition(".")
    if metric == TRAIN or (isinstance(metric, str) and split and figure in recipe.figures.every()):
        return metric
    raise cfg.ConfigError(f"{where}: metric={metric!r} is not a figure {recipe.name} runs write: name one of "
                          f"{', '.join(names(recipe))} (SPLIT: the split each trial evaluates), e.g. "
                          f"{example(recipe)}.")


def goal(metric):
    """"max" or "min" by the figure's kind."""
    figure = metric.rpartition(".")[2]
    for kind, direction in KINDS:
        if kind in figure:
            return direction
    raise cfg.ConfigError(f"metric={metric!r}: say whether to maximize or minimize it (goal: max, or goal: min).")


def check_trial(recipe, metric, config, point):
    """Refuses a metric a trial of `config` (at `point`, {field: value}) does not write: of another split than the
    one it evaluates, or a figure its kind (model.problem_type ...) does not write."""
    if metric == TRAIN:
        return
    figures, at = recipe.figures, f" (at {shown(point)})" if point else ""
    split, _, figure = metric.rpartition(".")
    evaluated = figures.split(config)
    if split != evaluated:
        raise cfg.ConfigError(f"metric={metric} but the trials evaluate {evaluated!r}{at}: name "
                              f"{evaluated}.{figure}, or set data.eval_split={split}.")
    written = figures.of(config)
    if figure not in written:
        kind = f"{figures.kind}={figures.kind_of(config)}"
        others = [str(value) for value, group in dict(figures.names).items() if figure in group]
        where = f"; {figure} is written where {figures.kind} is {' or '.join(others)}" if others else ""
        raise cfg.ConfigError(f"metric={metric} is not written by a run of {kind}{at}: it writes "
                              f"{', '.join(written)}{where}. Name one of its figures (e.g. {split}.{written[0]}), or "
                              f"set {figures.kind}.")


def check_kinds(recipe, metric, configs):
    """Refuses a sweep whose trials (`configs`: their configs) are runs of different kinds: each kind writes its own
    figures (a single-label classifier's loss is a softmax cross-entropy, a multi-label one's a sigmoid's), which
    do not rank against each other."""
    figures = recipe.figures
    kinds = dict.fromkeys(figures.kind_of(config) for config in configs)
    kinds.pop(None, None)  # not known from the config alone (an LM's data.level before its data is read)
    if len(kinds) > 1:
        raise cfg.ConfigError(f"metric={metric} would rank runs of different kinds against each other: "
                              f"{figures.kind} is {' and '.join(map(str, kinds))} in this space, and each kind writes "
                              f"its own figures (its own loss), which do not rank against each other. Search one "
                              f"{figures.kind} per sweep.")


def read(recipe, metric, figures):
    """The `metric`'s value in a run's metrics.json (`figures`: its contents), else a ValueError saying what it
    holds."""
    if metric == TRAIN:
        section, figure = figures.get("train") or {}, "loss"
    else:
        split, _, figure = metric.rpartition(".")
        section = figures.get(f"eval_{split}") or {}
        within = recipe.figures.within
        if within is not None:
            section = section.get(within) or {}
    value = section.get(figure)
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        held = ", ".join(name for name, item in section.items() if isinstance(item, (int, float))) or "nothing"
        raise ValueError(f"metrics.json holds no {metric} (that section holds {held}).")
    if not math.isfinite(value):
        raise ValueError(f"{metric} is {value}.")
    return float(value)


def shown(point):
    return ", ".join(f"{name}={value!r}" for name, value in point.items())
