"""Range checks for the frozen configs, run where a config is made: the library refuses
the same values the command line does, with the field's name and its valid range."""


def positive(config, *names):
    _each(config, names, lambda value: value > 0, "positive")


def non_negative(config, *names):
    _each(config, names, lambda value: value >= 0, "non-negative")


def rates(config, *names):
    """Probabilities that may be 0 but not 1 (dropout, label smoothing)."""
    _each(config, names, lambda value: 0.0 <= value < 1.0, "in [0, 1)")


def _each(config, names, holds, what):
    """Each field of `names` that is set `holds`, else a ValueError saying it must be `what`."""
    for name in names:
        value = getattr(config, name)
        if value is not None and not holds(value):
            raise ValueError(f"{name}={value!r} must be {what}.")


def divisible(config):
    if config.hidden_dim % config.num_heads:
        raise ValueError(f"num_heads={config.num_heads} does not divide hidden_dim={config.hidden_dim}.")


def one_of(config, name, allowed):
    """A name from a list (an activation, a position encoding ...): the list is the code's that uses it."""
    value = getattr(config, name)
    if value not in allowed:
        raise ValueError(f"{name}={value!r} must be one of {', '.join(allowed)}.")


def choices(config):
    """Every field named in the config class's `CHOICES` ({field: the code's list of its values}) holds one of them,
    or None (an optional field's type allows it); its shortcut flags are enums of that list (recipes/shortcuts.py)."""
    for name, allowed in type(config).CHOICES.items():
        if getattr(config, name) is not None:
            one_of(config, name, allowed)


# NumPy's legacy seeding (np.random.seed, which keras.utils.set_random_seed calls) takes 0 .. 2**32 - 1.
MAX_SEED = 2**32 - 1


def seed(config, name="seed"):
    value = getattr(config, name)
    if not 0 <= value <= MAX_SEED:
        raise ValueError(f"{name}={value} must be in 0 .. {MAX_SEED} (2**32 - 1, NumPy's seeds).")


def word_vectors(config, *paths):
    """Word vectors' settings (docs/word_vectors.md): freeze_word_vectors needs a file in one of the fields `paths`,
    and min_vector_coverage is a share of the training tokens; a path field given empty names no file."""
    for name in paths:
        if getattr(config, name) == "":
            raise ValueError(f"{name}='' names no file: give the path of a word-vectors file (GloVe text, word2vec "
                             "text or binary, or fastText .vec), or leave it out.")
    if config.freeze_word_vectors and not any(getattr(config, name) for name in paths):
        raise ValueError(f"freeze_word_vectors=True needs {' or '.join(paths)}: there is nothing to keep fixed.")
    if not 0.0 <= config.min_vector_coverage <= 1.0:
        raise ValueError(f"min_vector_coverage={config.min_vector_coverage!r} must be a share in [0, 1].")
