"""The classifier's config (`ClassifierConfig`: the model's fields, each checked) and the names it takes: problem
types, embeddings, tokenizers and the activation Keras does not know (`gelu_approximate`)."""

import dataclasses
from typing import ClassVar

import keras

from layers.feed_forward import ACTIVATIONS as FEED_FORWARD_ACTIVATIONS
from layers.token_and_position_embedding import POSITIONS
from zoo.core import checks

EMBEDDINGS = ("scaled", "normalized")
TOKENIZERS = ("subword", "words")
# What the head answers (docs/sentiment.md, "Problem types"), in Hugging Face's names: one class of several,
# one number, or a set of labels.
SINGLE_LABEL, REGRESSION, MULTI_LABEL = "single_label_classification", "regression", "multi_label_classification"
PROBLEM_TYPES = (SINGLE_LABEL, REGRESSION, MULTI_LABEL)


@keras.saving.register_keras_serializable(package="zoo")
def gelu_approximate(x):
    """GELU's tanh approximation: Google's original BERT, keras-hub's BERT and ELECTRA, Hugging Face's
    "gelu_new". The activation "gelu" is the exact (erf) one."""
    return keras.activations.gelu(x, approximate=True)


# ClassifierConfig.activation names Keras does not know.
ACTIVATIONS = {"gelu_approximate": gelu_approximate}


@dataclasses.dataclass(frozen=True)
class ClassifierConfig:
    vocab_size: int = 8000  # token ids: the pieces of the run's tokenizer (trained to this size, or published)
    num_classes: int = 2  # labels the head scores (one logit each)
    hidden_dim: int = 128  # width of every hidden state (model dimension)
    num_heads: int = 4  # attention heads per layer; must divide hidden_dim
    intermediate_dim: int = 512  # inner width of each block's feed-forward network
    num_layers: int = 2  # encoder blocks
    dropout: float = 0.1  # rate on embeddings, attention probabilities, sub-layer outputs and the head, in [0, 1)
    max_length: int = 512  # tokens per text, <s> included; longer texts keep their head and tail
    position: str = "sinusoidal"  # "sinusoidal" (fixed, the paper's) or "learned" position embeddings
    norm_first: bool = False  # pre-norm (LayerNorm before each sub-layer, and a final one); False: post-norm
    activation: str = "relu"  # the feed-forward's: relu, gelu ... (layers.feed_forward.ACTIVATIONS) or gelu_approximate
    embedding: str = "scaled"  # "scaled" (tokens x sqrt(hidden_dim) + positions) or "normalized" (BERT's LayerNorm)
    embedding_dim: int | None = None  # None: hidden_dim; narrower (ELECTRA's) goes through a projection
    epsilon: float = 1e-5  # every LayerNorm's
    # Word vectors (docs/word_vectors.md): the vocabulary becomes the training text's words, tokenized as GloVe's.
    tokenizer: str | None = None  # "subword" (SentencePiece) or "words"; None: words with word_vectors, else subword
    word_vectors: str | None = None  # a GloVe, word2vec or fastText .vec file (plain or .gz) to start the embedding
    freeze_word_vectors: bool = False  # keep the token embedding as the vectors give it (not trained)
    min_vector_coverage: float = 0.2  # refuse vectors covering less than this share of the training tokens
    num_segments: int = 0  # segment (token-type) ids embedded: 0 for one text, 2 for text pairs (set from the data)
    problem_type: str = SINGLE_LABEL  # single_label_classification, regression or multi_label_classification
    threshold: float = 0.5  # multi_label_classification: a label is predicted when its probability is at least this

    CHOICES: ClassVar = {"problem_type": PROBLEM_TYPES}

    def __post_init__(self):
        checks.positive(self, "vocab_size", "num_classes", "hidden_dim", "num_heads", "intermediate_dim",
                        "num_layers", "max_length", "embedding_dim", "epsilon")
        if self.tokenizer is not None:
            checks.one_of(self, "tokenizer", TOKENIZERS)
        if self.word_vectors is not None and self.tokenizer == "subword":
            raise ValueError(f"word_vectors={self.word_vectors!r} needs tokenizer='words' (or None): vectors are "
                             "a word's, not a subword piece's.")
        checks.word_vectors(self, "word_vectors")
        checks.rates(self, "dropout")
        if self.num_segments not in (0, 2):
            raise ValueError(f"num_segments={self.num_segments!r} must be 0 (one text) or 2 (text pairs).")
        checks.divisible(self)
        if self.embedding not in EMBEDDINGS:
            raise ValueError(f"embedding={self.embedding!r} must be one of {EMBEDDINGS}.")
        checks.one_of(self, "position", POSITIONS)
        checks.one_of(self, "activation", (*FEED_FORWARD_ACTIVATIONS, *ACTIVATIONS))
        checks.choices(self)
        if not 0.0 < self.threshold < 1.0:
            raise ValueError(f"threshold={self.threshold!r} must be a probability in (0, 1).")

    @property
    def words(self):
        """Whether the tokens are words (zoo.data.word_tokenizer), not SentencePiece pieces."""
        return self.tokenizer == "words" or (self.tokenizer is None and self.word_vectors is not None)

    def with_words(self, plan, section="model"):
        """This config (the run config's `section`) sized to a word plan (zoo.data.word_embedding.WordPlan): its
        vocabulary's size, and the vectors' width as embedding_dim (a projection maps it to hidden_dim)."""
        dim = plan.embedding_dim(self.embedding_dim, f"{section}.embedding_dim",
                                 f"{section}.hidden_dim={self.hidden_dim}")
        return dataclasses.replace(self, vocab_size=len(plan.words), embedding_dim=dim)
