r"""The published checkpoint of the transfer benchmark, and the fine-tuning speed of the zoo's
encoder against keras-hub's BertBackbone on it, both in one program.

  python -m benchmarks.published                      # the MiniLM folder's speed, zoo vs keras-hub
  python -m benchmarks.published --checkpoint=hf:google/electra-small-discriminator --steps=10
  python -m benchmarks.published --quick   # a smoke run: one step of 2 sequences of 16 tokens each

The default checkpoint is sentence-transformers' all-MiniLM-L6-v2 (`benchmarks.common.minilm`).
"""

from absl import app, flags

from benchmarks.common import quick
from benchmarks.common.finetune_speed import speed_lines
from benchmarks.common.minilm import minilm_folder
from benchmarks.common.report import write_section

flags.DEFINE_string("checkpoint", None, "A published checkpoint (folder, hf:..., keras_hub:...); default: MiniLM.")
flags.DEFINE_integer("batch_size", 32, "Sequences per step.")
flags.DEFINE_integer("length", 256, "Tokens per sequence.")
flags.DEFINE_integer("steps", 6, "Timed steps per model.")
flags.DEFINE_string("dtype", None, "Compute dtype; default: --mixed_precision=auto's choice for this machine.")
FLAGS = flags.FLAGS


def main(argv):
    del argv
    quick.shrink(batch_size=2, length=16, steps=1)
    body = "\n".join(speed_lines(FLAGS.checkpoint or minilm_folder(), FLAGS.batch_size, FLAGS.length, FLAGS.steps,
                                 FLAGS.dtype))
    write_section("Published checkpoint: fine-tuning speed", body)
    print(body)


if __name__ == "__main__":
    app.run(main)
