"""Every recipe's typed run config by name, and docs/configuration.md's table of their fields, made from the
dataclasses themselves (tests/zoo/test_configs.py fails when the page is stale):

    python -m zoo.configs > docs/configuration.md
"""

from zoo.registry import RECIPES
from zoo.core import config as cfg

RUN_CONFIGS = {name: recipe.config_class for name, recipe in RECIPES.items()}  # asked of the recipe registry

HEAD = """# Configuration

Every recipe's run is one typed, frozen config: `data`, `model`, `train`, `setup` and `eval`, nested dataclasses
(zoo/<family>/run_config.py, zoo/training/config.py, zoo/training/setup.py). It is set, in this precedence:

1. the preset (`--preset=small`, the base; with `--init_from`, the pretrained encoder's shape);
2. a file, `--config=PATH`: YAML or JSON holding any subset of the fields, nested as below; a run's own
   `config.json` is such a file, so `--config=runs/a/config.json --model_dir=runs/b` trains run a again.
   Given more than once (`--config=base.yaml --config=exp.yaml`), the files are merged in order, each over the
   one before, section by section: a later file's field wins, a list is replaced whole;
3. dotted overrides, `--config.FIELD.PATH=VALUE` (e.g. `--config.model.num_layers=6
   --config.model.norm_first=true`): the value is read as YAML (`true`, `6`, `1e-4`, `null`, `[11, 20]`);
4. the shortcut flags, or zoo.train's keywords of the same names (`--learning_rate` sets `train.learning_rate`,
   `--dataset` `data.dataset` ...): each another name of one field, made from the config (recipes/shortcuts.py):
   of the field's type, an enum of its values where the field's class names them (`CHOICES`), its help the dotted
   field and its note (`--helpfull` lists them), its default the config's. A flag has no bounds of its own: a bad
   value is refused by the config, naming the field, whichever way it comes in.

A field may follow another unless it is set (its class's `FOLLOWS`), from whatever source sets the one it follows:
pretraining's `model.sequence_length` takes `model.encoder.max_length` (`--max_length=128` packs sequences of 128
tokens), translation's `model.target_vocab_size` takes `model.source_vocab_size` (`--vocab_size`).

Nothing given is dropped: a file (or an override's value) whose mapping names a key twice is refused naming
both lines, where YAML would keep the last; a field overridden twice is refused naming both values. A file
must be UTF-8 (else the refusal names it and the line of its first bad byte), at most 4 MB, and hold at most
100,000 values with its aliases expanded (a "billion laughs" file is refused before it is built). The modes
that read a trained run (eval, export, generate ...) refuse `--config`, the dotted overrides and the shortcut
flags of a run to train: they read the run's own `config.json`, with the flags of that mode over it.

`--mode=config` prints the resolved config as YAML and exits, writing nothing; an unknown field, a wrong type or
value is one `error:` line naming the dotted field (and the nearest valid names). From Python,
`zoo.train(recipe, model_dir=..., config=<dict, path or typed config, or a list of them>, **shortcuts)`.

The run writes the config whole into `config.json`, with what it derived beside it under `derived` (class
names, the files' digest, replicas, the strategy's class, the --epochs asked for). A resumed run must keep
every field but how long and fast it trains (`train.train_steps`, the rate schedule, logging and checkpoint
intervals), `data.eval_split`, the `eval` section and the devices; the refusal names each dotted field that
differs. Places are not config: `--model_dir`, `--export_dir`, `--average_checkpoints`; the modes' options are
(`--beam_size`, `--prompt`, `--text` ...: the `eval` section's fields, shortcuts like the training ones).

How a run's config is resolved: in one function, `zoo.training.run_settings.resolve`, for every mode, and the result
is handed down whole (`RunSettings.config`: to the recipe's prepare, the Trainer, its evaluate, its export and its
modes, each `(run, config)`). The command opens its run folder once (`zoo.runs.run_dir.RunDir`, in
`zoo.training.driver.settings`) and reads `config.json` once, at its first use; the resolve, a resumed run's checks,
the load of the trained model and the export all read that one copy (tests/zoo/test_train.py counts the reads). A
training mode (and `--mode=config`) resolves in this order: the recipe's base (the preset; with `setup.init_from`,
the encoder's shape, a resumed run's own from its record), the files, the dotted overrides, the shortcuts given;
then each field that follows another (`FOLLOWS`: `eval.batch_size` takes `train.batch_size`, translation's search
takes `train.seed` and `train.jit_compile`); then `train.mixed_precision`, decided once (`auto`: this machine's
dtype, or the resumed run's own); then the recipe's `finish` (what the dataclasses cannot check alone). A mode that
reads a trained run (eval, export, explain, generate, translate) takes the run's record as its config, its `eval`
section at the defaults (each command's own), and the shortcut flags that mode reads over them: `--mode=eval
--eval_split=test --batch_size=8` sets `data.eval_split` and `eval.batch_size`; the split evaluated is each
command's own too (the recipe's default unless given), the data's other fields it is not given stay the run's own. A training run writes the `eval` section it evaluated and exported with into `config.json`;
an older run's record, without it, takes its defaults.

Why not ml_collections' `config_flags`: its flags hold one config fixed when the flags are defined, while
ours starts from the preset (or the checkpoint) the command line names, and its `update_from_flattened_dict`
passes over a misspelt field without a word (ml_collections 1.1.0). The zoo keeps absl for the flags,
PyYAML for files and values, and checks each field against its dataclass's type (zoo/core/config.py).

The defaults below are the `small` preset's (generated by `python -m zoo.configs`).
"""


def page():
    """docs/configuration.md."""
    parts = [HEAD]
    for recipe, cls in RUN_CONFIGS.items():
        parts.append(f"\n## {recipe}\n\n| field | type | default | meaning |\n|---|---|---|---|\n")
        for name, kind, default, note in cfg.field_rows(cls()):
            kind, note = (text.replace("|", r"\|") for text in (kind, note))
            parts.append(f"| `{name}` | {kind} | `{default!r}` | {note} |\n")
    return "".join(parts)


if __name__ == "__main__":
    print(page(), end="")
