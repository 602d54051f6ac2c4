"""Runnable programs (absl flags): sentiment, translation, Transformer-XL LM."""
