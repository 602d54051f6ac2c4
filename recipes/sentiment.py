r"""Sentiment classification with a Transformer encoder, BERT-style: the command line of
zoo.sentiment.recipe (where the recipe lives; zoo.train("sentiment", ...) runs the same from Python).

A start token heads every text; its final hidden state is classified.

  python -m recipes.sentiment --dataset=imdb --preset=small --model_dir=runs/imdb \
      --export_dir=saved_models/sentiment
  python -m recipes.sentiment --dataset=sst2 --mode=eval --model_dir=runs/sst2
  python -m recipes.sentiment --mode=explain --model_dir=runs/imdb --text="A moving, funny film."
"""

from absl import flags

from recipes import common, driver
from zoo.sentiment.recipe import SENTIMENT

common.define_flags(SENTIMENT, "explain")  # and the shortcut flags of its config's fields (recipes.shortcuts)
flags.DEFINE_string("text", None, "The sentence to explain (--mode=explain).")
flags.DEFINE_string("text_pair", None, "Its second text, for a run trained on text pairs (--mode=explain).")
flags.DEFINE_string("predictions", None, "--mode=eval and train_and_eval: write each evaluated text's label, "
                    "prediction and class probabilities to this file, one JSON object a line, in the data's order. "
                    "Never a file of the run's own; an existing file only if it holds such predictions.")
flags.DEFINE_bool("overwrite_predictions", False, "Let --predictions replace an existing file the zoo did not "
                  "write (as Hugging Face's --overwrite_output_dir).")
FLAGS = common.FLAGS  # notes what each mode reads: a flag given that it does not read is refused


def options(mode):
    """The options each mode reads (training's come from its config): --mode=eval's dataset or split, its columns
    (the run's own unless given) and batch; the text to explain; the predictions file (refused by the modes that
    do not evaluate)."""
    own = {"predictions": FLAGS.predictions, "overwrite_predictions": FLAGS.overwrite_predictions}
    if mode == "eval":
        given = any(FLAGS[name].present for name in ("text_column", "label_column", "bad_rows", "classes",
                                                     "text_pair_column"))
        columns = {"text_column": common.option("text_column"), "label_column": common.option("label_column"),
                   "bad_rows": common.option("bad_rows"), "classes": tuple(FLAGS.classes) if FLAGS.classes else None,
                   "text_pair_column": FLAGS.text_pair_column}
        own.update(dataset=FLAGS.dataset, eval_split=common.option("eval_split"), columns=columns if given else None,
                   batch_size=FLAGS.batch_size)
    if mode == "explain":
        own.update(text=FLAGS.text, text_pair=FLAGS.text_pair)
    return own


if __name__ == "__main__":
    driver.run(SENTIMENT, options)
