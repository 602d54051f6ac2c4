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
from zoo.classifier import data as classifier_data
from zoo.sentiment.recipe import SENTIMENT
from zoo.data import datasets

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
                    "prediction and class probabilities to this file, one JSON object a line, in the data's order. "
                    "Never a file of the run's own; an existing file only if it holds such predictions.")
flags.DEFINE_bool("overwrite_predictions", False, "Let --predictions replace an existing file the zoo did not "
                  "write (as Hugging Face's --overwrite_output_dir).")
flags.DEFINE_float("layer_decay", None, "Layer-wise learning-rate decay: each encoder layer learns at this "
                   "factor of the rate of the layer above it (the head at --learning_rate). Default: 1 (off).")
flags.DEFINE_string("word_vectors", None, "Start the token embedding from these word vectors: a GloVe, word2vec "
                    "(text or binary) or fastText .vec file, plain or .gz; the vocabulary becomes the training text's "
                    "words (--vocab_size of them), tokenized as GloVe's were (docs/word_vectors.md).")
flags.DEFINE_bool("freeze_word_vectors", None, "With --word_vectors: keep the token embedding fixed (not trained).")
FLAGS = common.FLAGS  # notes what each mode reads: a flag given that it does not read is refused


def options(mode):
    """The options each mode reads (training's come from its config): --mode=eval's dataset or split, its columns
    (the run's own unless given) and batch; the text to explain; the predictions file (refused by the modes that
    do not evaluate)."""
    own = {"predictions": FLAGS.predictions, "overwrite_predictions": FLAGS.overwrite_predictions}
    if mode == "eval":
        given = any(FLAGS[name].present for name in ("text_column", "label_column", "bad_rows", "classes"))
        columns = classifier_data.Columns(FLAGS.text_column, FLAGS.label_column, FLAGS.bad_rows,
                                          tuple(FLAGS.classes) if FLAGS.classes else None)
        own.update(dataset=FLAGS.dataset, eval_split=FLAGS.eval_split, columns=columns if given else None,
                   batch_size=FLAGS.batch_size)
    if mode == "explain":
        own["text"] = FLAGS.text
    return own


if __name__ == "__main__":
    driver.run(SENTIMENT, options)
