r"""Transformer-XL language modelling: the command line of zoo.language_model.recipe (where the recipe lives;
zoo.train("lm", ...) runs the same from Python).

  python -m recipes.lm --dataset=ptb --preset=small --model_dir=runs/ptb --export_dir=saved_models/lm_ptb
  python -m recipes.lm --dataset=ptb --word_vectors=glove.6B.50d.txt.gz --model_dir=runs/ptb_glove
  python -m recipes.lm --mode=eval --model_dir=runs/ptb --eval_memory_length=256
  python -m recipes.lm --mode=generate --model_dir=runs/shakespeare --prompt="ROMEO:" --max_new_tokens=300 --top_k=40
"""

from absl import flags

from recipes import common, driver
from zoo.language_model.recipe import LM, Generation

common.define_flags(LM, "generate")  # and the shortcut flags of its config's fields (recipes.shortcuts)
flags.DEFINE_integer("eval_memory_length", None, "Cached positions per layer at evaluation (longer helps).")
flags.DEFINE_integer("eval_batch_size", 10, lower_bound=1, help="Streams the evaluated text is laid out as.")
flags.DEFINE_string("prompt", None, "Text to continue (--mode=generate).")
flags.DEFINE_integer("max_new_tokens", 100, "Tokens to generate.")
flags.DEFINE_integer("top_k", 0, "Sample from the k most likely tokens (0 = all).")
flags.DEFINE_float("temperature", 1.0, "Sampling temperature.")
flags.DEFINE_bool("greedy", False, "Greedy generation instead of sampling.")
FLAGS = common.FLAGS  # notes what each mode reads: a flag given that it does not read is refused


def options(mode):
    """The options each mode reads (training's split and rows come from its config): evaluation's memory and
    streams, --mode=eval's split and bad rows; generation's prompt, seed and sampling, and the export's sampling
    defaults."""
    own, training = {}, mode in ("train", "train_and_eval")
    if mode in ("eval", "train_and_eval"):
        own.update(eval_memory_length=FLAGS.eval_memory_length, eval_batch_size=FLAGS.eval_batch_size)
    if mode == "eval":
        own.update(eval_split=FLAGS.eval_split, bad_rows=common.option("bad_rows"))
    if mode == "generate":
        own.update(prompt=FLAGS.prompt, seed=common.option("seed"), generation=Generation(
            FLAGS.max_new_tokens, FLAGS.top_k, FLAGS.temperature, FLAGS.greedy))
    elif mode == "export" or (training and FLAGS.export_dir):
        own["generation"] = Generation(FLAGS.max_new_tokens, FLAGS.top_k, FLAGS.temperature)
    return own


if __name__ == "__main__":
    driver.run(LM, options)
