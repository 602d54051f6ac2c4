r"""Self-supervised pretraining of the classifier's encoder on unlabeled text: the command line of
zoo.pretraining.recipe (where the recipe lives; zoo.train("pretrain", ...) runs the same from Python).

BERT's masked LM (default) or ELECTRA's replaced-token detection, on documents packed
into full sequences; `recipes.sentiment --init_from=MODEL_DIR` fine-tunes the result. With
--init_from, masked-LM training continues from a published checkpoint (domain-adaptive
pretraining, Gururangan et al. 2020) with its WordPiece vocabulary and [MASK].

  python -m recipes.pretrain --corpus=imdb_unsup,imdb --preset=small --model_dir=runs/pretrain_imdb
  python -m recipes.pretrain --corpus=imdb_unsup,imdb --word_vectors=glove.6B.50d.txt.gz --vocab_size=20000 \
      --model_dir=runs/pretrain_glove
  python -m recipes.pretrain --corpus=imdb_unsup --init_from=hf:google/electra-small-discriminator \
      --sequence_length=128 --model_dir=runs/dapt
  python -m recipes.pretrain --mode=eval --model_dir=runs/pretrain_imdb
  python -m recipes.pretrain --mode=export --model_dir=runs/pretrain_imdb --export_dir=saved_models/encoder
"""

from absl import flags

from recipes import common, driver
from zoo.pretraining import model as pretraining
from zoo.pretraining.recipe import PRETRAIN

common.define_mode()
flags.DEFINE_list("corpus", None, "Comma-separated corpora: imdb_unsup, imdb, sst2 (training texts), "
                  "tfds:<name>, or your own files: text:<glob> (a document a line), csv:<glob>, jsonl:<glob> "
                  "(a document a row, --text_column).")
flags.DEFINE_bool("document_per_file", False, "text:<glob> files hold one document each (else one per line).")
flags.DEFINE_enum("objective", None, list(pretraining.OBJECTIVES), "mlm (masked LM) or electra (replaced-token "
                  "detection). Default: mlm. Caution: in every electra run here (small encoder, at most 2,000 steps, about "
                  "16M tokens on 2 CPU cores) the discriminator stayed near its prior: its generator's samples soon "
                  "follow the unigram distribution, which only context tells apart (README): use mlm.")
flags.DEFINE_integer("sequence_length", None, "Tokens per packed sequence, <s> included. Default: the preset's "
                     "max_length, the longest text fine-tuning will give it.")
flags.DEFINE_float("mask_rate", None, "Share of the tokens chosen for masking. Default: 0.15.")
flags.DEFINE_float("generator_scale", None, "ELECTRA: the generator's width as a share of the encoder's. Default: 0.5.")
flags.DEFINE_integer("vocab_size", None, "Size of the SentencePiece vocabulary trained on the corpus (with "
                     "--word_vectors: its most frequent words). Default: 16,000.")
flags.DEFINE_integer("max_length", None, "Longest text the encoder will take when fine-tuned. Default: the preset's.")
flags.DEFINE_float("dropout", None, "Dropout rate. Default: the preset's.")
flags.DEFINE_string("init_from", None, "Continue masked-LM training from a published BERT/ELECTRA checkpoint (a "
                    "Hugging Face folder, hf:ORG/NAME[@REVISION], keras_hub:PRESET): its encoder, its masked-LM head "
                    "where it has one (else a new head tied to the embedding), its vocabulary and [MASK]. --preset "
                    "and --vocab_size come from it; --max_length may shorten its positions.")
flags.DEFINE_string("word_vectors", None, "Start the token embedding from these word vectors: a GloVe, word2vec "
                    "(text or binary) or fastText .vec file, plain or .gz; the vocabulary becomes the corpus's words "
                    "(--vocab_size of them, [MASK] among them), tokenized as GloVe's were (docs/word_vectors.md).")
flags.DEFINE_bool("freeze_word_vectors", None, "With --word_vectors: keep the token embedding fixed (not trained).")
flags.DEFINE_float("eval_fraction", 0.01, lower_bound=0.0, upper_bound=0.5,
                   help="Share of the documents held out for --mode=eval.")
FLAGS = common.FLAGS  # notes what each mode reads: a flag given that it does not read is refused


def options(mode):
    """Pretraining's modes take no options of their own; --mode=eval takes its batch."""
    return {"batch_size": FLAGS.batch_size} if mode == "eval" else {}


if __name__ == "__main__":
    driver.run(PRETRAIN, options)
