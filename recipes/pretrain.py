r"""Self-supervised pretraining of the classifier's encoder on unlabeled text: the command line of
zoo.pretraining.recipe (where the recipe lives; zoo.train("pretrain", ...) runs the same from Python).

BERT's masked LM (default) or ELECTRA's replaced-token detection (each ELECTRA discriminator
trained here stayed near its prior: README), on documents packed into full sequences;
`recipes.sentiment --init_from=MODEL_DIR` fine-tunes the result. With
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

from recipes import common, driver
from zoo.pretraining.recipe import PRETRAIN

common.define_flags(PRETRAIN)  # and the shortcut flags of its config's fields (recipes.shortcuts)

if __name__ == "__main__":
    driver.run(PRETRAIN)  # --mode=eval reads --batch_size as its batch (eval.batch_size)
