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

common.define_flags(TRANSLATE, "translate")  # and the shortcut flags of its config's fields (recipes.shortcuts)
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
            temperature=FLAGS.temperature, seed=common.option("seed"),
            num_return=FLAGS.num_return if mode == "translate" else 1)
    if mode in ("eval", "train_and_eval", "translate"):
        own["eval_batch_size"] = FLAGS.eval_batch_size
    if mode == "eval":
        own.update(eval_split=FLAGS.eval_split, bad_rows=common.option("bad_rows"))
    if mode in ("eval", "export"):
        own["jit_compile"] = common.option("jit_compile")
    return own


if __name__ == "__main__":
    driver.run(TRANSLATE, options)
