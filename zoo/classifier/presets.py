"""The classifier's presets: the model shapes `--preset` names (README's table gives their sizes)."""

from zoo.classifier.config import ClassifierConfig

PRESETS = {
    "tiny": ClassifierConfig(hidden_dim=32, num_heads=2, intermediate_dim=64, num_layers=1, max_length=128),
    # Two heads: on a CPU the (heads x length^2) softmax, not the matmuls, bounds the speed.
    "small": ClassifierConfig(hidden_dim=128, num_heads=2, intermediate_dim=512, num_layers=2, max_length=512),
    # Pretraining's (recipes.pretrain): wider and deeper, worth it once the encoder is pretrained.
    "medium": ClassifierConfig(hidden_dim=256, num_heads=4, intermediate_dim=1024, num_layers=4, max_length=512),
    "base": ClassifierConfig(hidden_dim=512, num_heads=8, intermediate_dim=2048, num_layers=6, max_length=512),
}
