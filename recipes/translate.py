r"""Machine translation with the paper's encoder-decoder: the command line of zoo.translation.recipe (where the
recipe lives; zoo.train("translate", ...) runs the same from Python).

  python -m recipes.translate --dataset=multi30k --source=de --target=en --model_dir=runs/m30k_de_en
  python -m recipes.translate --dataset=multi30k --target_vectors=glove.6B.50d.txt.gz --noshared_vocabulary \
      --model_dir=runs/m30k_de_en_glove
  python -m recipes.translate --mode=eval --model_dir=runs/m30k_de_en --beam_size=5
  echo "Ein Mann fährt Fahrrad." | python -m recipes.translate --mode=translate --model_dir=runs/m30k_de_en
"""

import math

from absl import flags

from recipes import common, driver
from zoo.translation.recipe import TRANSLATE
from zoo.translation.search import DecodeConfig

common.define_mode("translate")
flags.DEFINE_string("source", "de", "Source language code.")
flags.DEFINE_string("target", "en", "Target language code.")
flags.DEFINE_string("eval_split", None, "Split to evaluate (test, validation, or a dataset's own, e.g. "
                    "test_2017_flickr). Default: test; for files without {split}, their held-out share (validation).")
flags.DEFINE_integer("vocab_size", 8000, "Subword vocabulary size (per language when not shared).")
flags.DEFINE_bool("shared_vocabulary", True, "One vocabulary and embedding for both languages, else one per language.")
flags.DEFINE_bool("tie_embeddings", None, "Output projection = the target embedding matrix. Default: the preset's "
                  "(tied).")
flags.DEFINE_integer("max_tokens", None, "Token budget of a global training batch, padding included.")
flags.DEFINE_integer("max_length", None, "Tokens per source or target sentence. Default: the preset's.")
flags.DEFINE_float("dropout", None, "Dropout rate. Default: the preset's.")
flags.DEFINE_string("source_vectors", None, "Start the source embedding from these word vectors of the source "
                    "language: a GloVe, word2vec (text or binary) or fastText .vec file, plain or .gz; the side's "
                    "vocabulary becomes its training text's words (--vocab_size of them), tokenized as GloVe's were "
                    "(docs/word_vectors.md). A shared vocabulary takes either file.")
flags.DEFINE_string("target_vectors", None, "The same for the target side: translations are then its words, "
                    "lower-cased as the vectors' were, joined by spaces.")
flags.DEFINE_bool("freeze_word_vectors", None, "With --source_vectors or --target_vectors: keep the embeddings they "
                  "start fixed (not trained).")
flags.DEFINE_float("min_vector_coverage", None, "Refuse word vectors covering less than this share of their side's "
                   "training tokens (the wrong file, or another language). Default: 0.2.")
flags.DEFINE_integer("beam_size", 5, "Beam size (1 = greedy search).")
flags.DEFINE_float("length_penalty", 0.6, "GNMT length penalty alpha of beam search (0 = none).")
flags.register_validator("length_penalty", lambda value: 0 <= value < math.inf,
                         "--length_penalty must be a finite number (GNMT's alpha, e.g. 0.6; 0 = none).")
flags.DEFINE_integer("num_return", 1, "Translations returned per sentence (n-best, best first) in --mode=translate.")
flags.DEFINE_integer("top_k", 0, "Sample from the k most likely tokens instead of searching (needs --beam_size=1).")
flags.DEFINE_float("top_p", 1.0, "Sample from the smallest set of tokens reaching this probability (needs --beam_size=1).")
flags.DEFINE_float("temperature", 1.0, "Sampling temperature.")
flags.DEFINE_integer("eval_batch_size", 100, lower_bound=1, help="Sentences per decoding batch.")
FLAGS = common.FLAGS  # notes what each mode reads: a flag given that it does not read is refused


def options(mode):
    """The options each mode reads (training's split, rows and compilation come from its config): the search of
    evaluation, translation and the export (n-best for translation alone), the decoding batches, --mode=eval's
    split and bad rows, the search compiled with XLA (eval, export)."""
    own, training = {}, mode in ("train", "train_and_eval")
    if mode in ("eval", "train_and_eval", "translate", "export") or (training and FLAGS.export_dir):
        own["decode"] = DecodeConfig(
            beam_size=FLAGS.beam_size, length_penalty=FLAGS.length_penalty, top_k=FLAGS.top_k, top_p=FLAGS.top_p,
            temperature=FLAGS.temperature, seed=FLAGS.seed, num_return=FLAGS.num_return if mode == "translate" else 1)
    if mode in ("eval", "train_and_eval", "translate"):
        own["eval_batch_size"] = FLAGS.eval_batch_size
    if mode == "eval":
        own.update(eval_split=FLAGS.eval_split, bad_rows=FLAGS.bad_rows)
    if mode in ("eval", "export"):
        own["jit_compile"] = FLAGS.jit_compile
    return own


if __name__ == "__main__":
    driver.run(TRANSLATE, options)
