r"""Machine translation with the paper's encoder-decoder: the command line of zoo.translation.recipe (where the
recipe lives; zoo.train("translate", ...) runs the same from Python).

  python -m recipes.translate --dataset=multi30k --source=de --target=en --model_dir=runs/m30k_de_en
  python -m recipes.translate --dataset=multi30k --target_vectors=glove.6B.50d.txt.gz --noshared_vocabulary \
      --model_dir=runs/m30k_de_en_glove
  python -m recipes.translate --mode=eval --model_dir=runs/m30k_de_en --beam_size=5
  echo "Ein Mann fährt Fahrrad." | python -m recipes.translate --mode=translate --model_dir=runs/m30k_de_en

Every flag but the places and --mode is another name of one config field (recipes.shortcuts), the modes'
options too: --beam_size, --length_penalty, --num_return, --top_k, --top_p and --temperature set eval.decode,
--eval_batch_size eval.batch_size; --mode=eval, translate and export read --seed and --jit_compile as the search's
(zoo.translation.recipe.READS).
"""

import math

from absl import flags

from recipes import common, driver
from zoo.translation.recipe import TRANSLATE

common.define_flags(TRANSLATE, "translate")  # and the shortcut flags of its config's fields (recipes.shortcuts)
# Refused when parsed, as absl refuses a flag of the wrong type; the config refuses the same values by field.
flags.register_validator("length_penalty", lambda value: value is None or 0 <= value < math.inf,
                         "--length_penalty must be a finite number, 0 or more (eval.decode.length_penalty: GNMT's "
                         "alpha, e.g. 0.6; 0 = none).")
flags.register_validator("eval_batch_size", lambda value: value is None or value >= 1,
                         "--eval_batch_size must be at least 1 (eval.batch_size: sentences per decoding batch).")

if __name__ == "__main__":
    driver.run(TRANSLATE)
