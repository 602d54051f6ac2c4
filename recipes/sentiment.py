r"""Sentiment classification with a Transformer encoder, BERT-style: the command line of
zoo.sentiment.recipe (where the recipe lives; zoo.train("sentiment", ...) runs the same from Python).

A start token heads every text; its final hidden state is classified.

  python -m recipes.sentiment --dataset=imdb --preset=small --model_dir=runs/imdb \
      --export_dir=saved_models/sentiment
  python -m recipes.sentiment --dataset=sst2 --mode=eval --model_dir=runs/sst2
  python -m recipes.sentiment --mode=explain --model_dir=runs/imdb --text="A moving, funny film."

Every flag but the places and --mode is another name of one config field (recipes.shortcuts), the modes'
options too: --text, --text_pair, --predictions and --overwrite_predictions set the eval section's fields, and
--mode=eval reads --dataset, --eval_split, the columns and --batch_size (eval.batch_size) as the run's to evaluate
(zoo.sentiment.recipe.READS).
"""

from recipes import common, driver
from zoo.sentiment.recipe import SENTIMENT

common.define_flags(SENTIMENT, "explain")  # and the shortcut flags of its config's fields (recipes.shortcuts)

if __name__ == "__main__":
    driver.run(SENTIMENT)
