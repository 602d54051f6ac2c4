"""Every config value is checked when the config is built (issue 52): each field of every recipe's run config,
nested, refuses a bad value of each kind (the wrong type, a number out of range, a name not on its list) with a
ConfigError naming the dotted field, so that no value reaches training to be refused there in a library's words."""

import copy

import pytest

from layers.feed_forward import ACTIVATIONS, FeedForward
from zoo.configs import RUN_CONFIGS
from zoo.core import config as cfg

# String fields that name one of a list (the list is the code's that uses it), and those that hold any text the
# data decides (a dataset, a column, a language, a path: checked against the data before the run folder is
# written). Every string field of every config must be in one of them.
NAMES = {"bad_rows", "level", "eval_split", "position", "activation", "embedding", "objective", "schedule",
         "mixed_precision", "strategy", "tokenizer", "problem_type", "loss"}
TEXTS = {"dataset", "text_column", "label_column", "source", "target", "precision_reason", "tpu", "init_from",
         "label_separator", "word_vectors", "source_vectors", "target_vectors", "text_pair_column",
         "predictions", "text", "text_pair", "prompt",  # the eval sections' (issue 59): a file, texts to read
         "teacher", "transfer", "transfer_text_column", "vectors"}  # distillation's (issue 60): a run, texts, a file
NAME_FREE = {("translate", "data.eval_split")}  # a dataset's own split names (Multi30k's test_2017_flickr ...)

# Values out of range beyond the kinds every field of a type refuses (below): upper bounds, framing, vocabularies;
# by field, or by recipe:field.
OUT_OF_RANGE = {
    "train.seed": [2**32],  # NumPy's seeds are 0 .. 2**32 - 1
    "model.mask_id": [0, 5, 99999999],  # a special id: 1 .. first_regular_id - 1 (0 is padding)
    "model.start_id": [0, 5],
    "model.separator_id": [0, 5],
    "model.first_regular_id": [16000],  # leaves no regular token
    "model.max_length": [1],  # translation and sentiment: no room for text beside <s> or </s>
    "sentiment:model.vocab_size": [5],  # SentencePiece's 4 special pieces, a character and the word-start mark
    "model.encoder.vocab_size": [6],  # pretraining: and <mask>
    "data.vocab_size": [261],  # the LM's subword vocabulary: and <n> and 256 bytes
    "data.eval_fraction": [1.0],
    "model.generator_scale": [1.5],
    "train.layer_decay": [1.5],
    "model.min_vector_coverage": [1.5],  # a share
    "model.threshold": [0.0, 1.0],  # a probability a label's must reach: in (0, 1)
    "model.num_segments": [1, 3],  # 0 (one text) or 2 (text pairs)
    "model.encoder.num_segments": [2],  # pretraining reads single texts
}


def bad_values(recipe, name, kind):
    """The values field `name` (of type `kind`, as docs/configuration.md names it) must refuse."""
    leaf = name.rsplit(".", 1)[-1]
    extra = OUT_OF_RANGE.get(name, []) + OUT_OF_RANGE.get(f"{recipe}:{name}", [])
    if kind.startswith("tuple[int"):
        return [5, ["x", 2], [-1, 2]]
    if kind.startswith("tuple"):
        return [5, [["a"]]]
    if kind.startswith("bool"):
        return ["maybe", 1]
    if kind.startswith("int"):
        return ["x", 1.5, True, -1, 2**63, *extra]
    if kind.startswith("float"):
        return ["x", float("nan"), -1.0, *extra]
    assert kind.startswith("str"), (name, kind)
    assert (leaf in NAMES) != (leaf in TEXTS), f"{name}: say whether it names one of a list or holds free text"
    named = leaf in NAMES and (recipe, name) not in NAME_FREE
    return [["a"], {"a": 1}, *(["nosuch"] if named else [])]


def put(tree, name, value):
    *path, last = name.split(".")
    for part in path:
        tree = tree.setdefault(part, {})
    tree[last] = value


FIELDS = [(recipe, name, kind) for recipe, cls in RUN_CONFIGS.items() for name, kind, _, _ in cfg.field_rows(cls())]


@pytest.mark.parametrize("recipe, name, kind", FIELDS, ids=[f"{recipe}:{name}" for recipe, name, _ in FIELDS])
def test_every_field_refuses_a_bad_value_of_each_kind_naming_the_dotted_field(recipe, name, kind):
    cls = RUN_CONFIGS[recipe]
    for value in bad_values(recipe, name, kind):
        data = copy.deepcopy(cfg.to_dict(cls()))
        if name in ("model.source_vocab_size", "model.target_vocab_size"):
            put(data, "model.shared_vocabulary", False)  # one size at a time
        put(data, name, value)
        with pytest.raises(cfg.ConfigError) as refused:
            cfg.from_dict(cls, data)
            pytest.fail(f"{recipe}: {name}={value!r} was accepted")
        message = str(refused.value)
        assert (f"{name}=" in message or f"{name}[" in message) and "\n" not in message, (value, message)


def test_the_smallest_vocabularies_a_run_trains_are_accepted():
    sizes = {"sentiment": {"model": {"vocab_size": 6}},
             "translate": {"model": {"source_vocab_size": 6, "target_vocab_size": 6}},
             "pretrain": {"model": {"encoder": {"vocab_size": 7}}}, "lm": {"data": {"vocab_size": 262}}}
    for recipe, data in sizes.items():
        cfg.from_dict(RUN_CONFIGS[recipe], data)


def test_the_named_lists_say_what_is_allowed():
    from zoo.core.config import ConfigError
    from zoo.classifier.run_config import SentimentRunConfig

    with pytest.raises(ConfigError, match="model.activation='nosuch' must be one of relu, gelu, silu"):
        cfg.from_dict(SentimentRunConfig, {"model": {"activation": "nosuch"}})
    with pytest.raises(ConfigError, match="model.position='rotary' must be one of sinusoidal, learned"):
        cfg.from_dict(SentimentRunConfig, {"model": {"position": "rotary"}})


@pytest.mark.parametrize("name", ACTIVATIONS)
def test_every_activation_a_config_takes_builds_a_feed_forward_network(name):
    import numpy as np

    layer = FeedForward(8, name)
    assert layer(np.ones((1, 3, 4), "float32")).shape == (1, 3, 4)
    assert FeedForward.from_config(layer.get_config()).activation is not None


def test_a_feed_forward_network_refuses_an_activation_it_does_not_list():
    with pytest.raises(ValueError, match="activation='glu' is not one of relu, gelu"):
        FeedForward(8, "glu")
