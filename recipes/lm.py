r"""Transformer-XL language modelling: the command line of zoo.language_model.recipe (where the recipe lives;
zoo.train("lm", ...) runs the same from Python).

  python -m recipes.lm --dataset=ptb --preset=small --model_dir=runs/ptb --export_dir=saved_models/lm_ptb
  python -m recipes.lm --dataset=ptb --word_vectors=glove.6B.50d.txt.gz --model_dir=runs/ptb_glove
  python -m recipes.lm --mode=eval --model_dir=runs/ptb --eval_memory_length=256
  python -m recipes.lm --mode=generate --model_dir=runs/shakespeare --prompt="ROMEO:" --max_new_tokens=300 --top_k=40
"""

from absl import flags

from recipes import common, driver
from zoo.data import datasets
from zoo.language_model import data as lm_data
from zoo.language_model.recipe import LM, Generation

common.define_mode("generate")
flags.DEFINE_enum("eval_split", None, datasets.SPLITS, "Split to evaluate (tune on validation). Default: test; for "
                  "files without {split}, their held-out share (validation).")
flags.DEFINE_enum("level", None, list(lm_data.FILE_LEVELS), "Tokens of your own text: subword (SentencePiece, "
                  "--vocab_size pieces; the default), word, char or byte. A built-in corpus has its own.")
flags.DEFINE_integer("vocab_size", 8000, "Pieces of a subword vocabulary (--level=subword).")
flags.DEFINE_integer("segment_length", None, "Tokens per segment. Default: the preset's.")
flags.DEFINE_integer("memory_length", None, "Cached positions per layer in training. Default: the preset's.")
flags.DEFINE_integer("eval_memory_length", None, "Cached positions per layer at evaluation (longer helps).")
flags.DEFINE_integer("clamp_length", None, "Relative distances beyond this share one encoding.")
flags.DEFINE_bool("same_length", None, "Every query attends to the same number of keys.")
flags.DEFINE_float("dropout", None, "Dropout rate. Default: the preset's.")
flags.DEFINE_float("attention_dropout", None, "Dropout on attention probabilities (the reference code's dropatt). "
                   "Default: the preset's, where None means --dropout.")
flags.DEFINE_string("activation", None, "Feed-forward activation (a Keras name, e.g. gelu). Default: the preset's.")
flags.DEFINE_string("word_vectors", None, "Word level (ptb, wikitext103, your files with --level=word): start the "
                    "token embedding from these word vectors, a GloVe, word2vec (text or binary) or fastText .vec "
                    "file, plain or .gz; the vocabulary's words are looked up as they are, and a width other than "
                    "the model's is projected to it (docs/word_vectors.md).")
flags.DEFINE_bool("freeze_word_vectors", None, "With --word_vectors: keep the token embedding fixed (not trained).")
flags.DEFINE_bool("random_offset", False, "Start every pass over the training text at a random offset in "
                  "[0, segment_length): segment boundaries differ from pass to pass (for small corpora trained for "
                  "many passes). Drawn from --seed, so a resumed run reads the same segments.")
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
        own.update(eval_split=FLAGS.eval_split, bad_rows=FLAGS.bad_rows)
    if mode == "generate":
        own.update(prompt=FLAGS.prompt, seed=FLAGS.seed, generation=Generation(
            FLAGS.max_new_tokens, FLAGS.top_k, FLAGS.temperature, FLAGS.greedy))
    elif mode == "export" or (training and FLAGS.export_dir):
        own["generation"] = Generation(FLAGS.max_new_tokens, FLAGS.top_k, FLAGS.temperature)
    return own


if __name__ == "__main__":
    driver.run(LM, options)
