"""The recipe registry: each recipe's `zoo.training.driver.Recipe` by name (its config class, figures, default split,
modes ...). zoo.api, zoo.configs, the sweep and recipes/sweep.py ask it; none of them switches on a recipe's name."""

from zoo.language_model.recipe import LM
from zoo.pretraining.recipe import PRETRAIN
from zoo.sentiment.recipe import SENTIMENT
from zoo.translation.recipe import TRANSLATE

RECIPES = {"sentiment": SENTIMENT, "translate": TRANSLATE, "lm": LM, "pretrain": PRETRAIN}
