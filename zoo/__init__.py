"""Model builders, presets and the machinery every recipe shares."""

import layers  # noqa: F401  (sets the TensorFlow backend before keras loads)
