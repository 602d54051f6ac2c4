r"""Transformer-XL language modelling: the command line of zoo.language_model.recipe (where the recipe lives;
zoo.train("lm", ...) runs the same from Python).

  python -m recipes.lm --dataset=ptb --preset=small --model_dir=runs/ptb --export_dir=saved_models/lm_ptb
  python -m recipes.lm --dataset=ptb --word_vectors=glove.6B.50d.txt.gz --model_dir=runs/ptb_glove
  python -m recipes.lm --mode=eval --model_dir=runs/ptb --eval_memory_length=256
  python -m recipes.lm --mode=generate --model_dir=runs/shakespeare --prompt="ROMEO:" --max_new_tokens=300 --top_k=40

Every flag but the places and --mode is another name of one config field (recipes.shortcuts), the modes'
options too: --eval_memory_length, --eval_batch_size, --prompt, --max_new_tokens, --top_k, --temperature and
--greedy set the eval section's fields; --mode=generate reads --seed as its sampling's (eval.seed;
zoo.language_model.recipe.READS).
"""

from recipes import common, driver
from zoo.language_model.recipe import LM

common.define_flags(LM, "generate")  # and the shortcut flags of its config's fields (recipes.shortcuts)

if __name__ == "__main__":
    driver.run(LM)
