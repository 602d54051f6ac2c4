"""Range checks for the frozen configs, run where a config is made: the library refuses
the same values the command line does, with the field's name and its valid range."""


def positive(config, *names):
    for name in names:
        value = getattr(config, name)
        if value is not None and not value > 0:
            raise ValueError(f"{name}={value!r} must be positive.")


def non_negative(config, *names):
    for name in names:
        value = getattr(config, name)
        if value is not None and not value >= 0:
            raise ValueError(f"{name}={value!r} must be non-negative.")


def rates(config, *names):
    """Probabilities that may be 0 but not 1 (dropout, label smoothing): [0, 1)."""
    for name in names:
        value = getattr(config, name)
        if value is not None and not 0.0 <= value < 1.0:
            raise ValueError(f"{name}={value!r} must be in [0, 1).")


def divisible(config):
    if config.hidden_dim % config.num_heads:
        raise ValueError(f"num_heads={config.num_heads} does not divide hidden_dim={config.hidden_dim}.")
