"""Transformer encoder classifier, BERT-style: a start token (<s>, or BERT's [CLS])
heads every text and its final hidden state is classified; BERT's vocabularies also
end each text with [SEP]."""

import dataclasses
from typing import ClassVar

import keras
import tensorflow as tf

from layers import EncoderBlock, TokenAndPositionEmbedding, padding_mask
from layers.dropout import Dropout
from layers.feed_forward import ACTIVATIONS as FEED_FORWARD_ACTIVATIONS
from layers.token_and_position_embedding import POSITIONS
from zoo.core import checks
from zoo.training.losses import smoothed_cross_entropy

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
    # "scaled": the paper's token embedding x sqrt(hidden_dim) plus positions; "normalized":
    # BERT's unscaled sum normalized by LayerNorm (`layers.TokenAndPositionEmbedding`).
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


PRESETS = {
    "tiny": ClassifierConfig(hidden_dim=32, num_heads=2, intermediate_dim=64, num_layers=1, max_length=128),
    # Two heads: on a CPU the (heads x length^2) softmax, not the matmuls, bounds the speed.
    "small": ClassifierConfig(hidden_dim=128, num_heads=2, intermediate_dim=512, num_layers=2, max_length=512),
    # Pretraining's (recipes.pretrain): wider and deeper, worth it once the encoder is pretrained.
    "medium": ClassifierConfig(hidden_dim=256, num_heads=4, intermediate_dim=1024, num_layers=4, max_length=512),
    "base": ClassifierConfig(hidden_dim=512, num_heads=8, intermediate_dim=2048, num_layers=6, max_length=512),
}


def build_encoder(config, embedding=None, prefix="encoder", name="encoder"):
    """token_ids (batch, seq) int32, 0 = padding -> hidden states (batch, seq, hidden_dim); with
    config.num_segments, {"token_ids", "segment_ids"} (batch, seq) each (text pairs) -> the same.

    The classifier's body, and what pretraining trains (`zoo.pretraining.model`). Layers are named
    "embedding", "<prefix>_<i>" and "<prefix>_final_norm" (pre-norm only). `embedding`: a
    TokenAndPositionEmbedding to share (ELECTRA's generator shares the discriminator's); when
    its width differs from config.hidden_dim, a Dense "<prefix>_projection" maps it.
    """
    token_ids = keras.Input((None,), dtype="int32", name="token_ids")
    segment_ids = keras.Input((None,), dtype="int32", name="segment_ids") if config.num_segments else None
    if embedding is None:
        normalized = config.embedding == "normalized"
        embedding = TokenAndPositionEmbedding(
            config.vocab_size,
            config.embedding_dim or config.hidden_dim,
            config.max_length,
            config.position,
            config.dropout,
            scale_tokens=not normalized,
            layer_norm_epsilon=config.epsilon if normalized else None,
            num_segments=config.num_segments,
            name="embedding",
        )
        embedding.token_embedding.trainable = not config.freeze_word_vectors
    x = embedding(token_ids, segment_ids=segment_ids)
    if embedding.hidden_dim != config.hidden_dim:
        x = keras.layers.Dense(config.hidden_dim, name=f"{prefix}_projection")(x)
    is_token = padding_mask(token_ids)
    for i in range(config.num_layers):
        x = EncoderBlock(
            config.num_heads,
            config.intermediate_dim,
            config.dropout,
            ACTIVATIONS.get(config.activation, config.activation),
            config.norm_first,
            config.epsilon,
            name=f"{prefix}_{i}",
        )(x, padding_mask=is_token)
    if config.norm_first:
        x = keras.layers.LayerNormalization(epsilon=config.epsilon, name=f"{prefix}_final_norm")(x)
    inputs = token_ids if segment_ids is None else {"token_ids": token_ids, "segment_ids": segment_ids}
    return keras.Model(inputs, x, name=name)


def build_classifier(config):
    """token_ids (batch, seq) int32, 0 = padding (and segment_ids for text pairs, `build_encoder`) -> logits
    (batch, num_classes) float32.

    The encoder's layers and a head on the <s> token's final state; the encoder's layers keep
    their names, so `zoo.pretraining.pretrained` copies a pretrained encoder's weights in by name."""
    encoder = build_encoder(config)
    head = Dropout(config.dropout)(encoder.output[:, 0])  # the <s> token's state
    logits = keras.layers.Dense(config.num_classes, dtype="float32", name="logits")(head)
    return keras.Model(encoder.input, logits, name="classifier")


def layer_depths(model):
    """Each trainable variable's depth below the head, for layer-wise learning-rate decay:
    the head 0, the last encoder block (and pre-norm's final norm) 1, ..., the first block
    num_layers, the embedding (and its projection) num_layers + 1 (Sun et al., 2019; ULMFiT's
    discriminative rates)."""
    blocks = {block.name: i for i, block in enumerate(encoder_blocks(model))}
    top = len(blocks)
    depths = []
    for variable in model.trainable_variables:
        layer = variable.path.split("/")[0]
        if layer == "embedding" or layer.endswith("_projection"):
            depths.append(top + 1)
        elif layer in blocks:
            depths.append(top - blocks[layer])
        else:
            depths.append(1 if layer.endswith("final_norm") else 0)
    return depths


def model_inputs(batch):
    """What the classifier takes from a batch: its token ids, and its segment ids where it has them (text pairs)."""
    if "segment_ids" in batch:
        return {"token_ids": batch["token_ids"], "segment_ids": batch["segment_ids"]}
    return batch["token_ids"]


def encoder_blocks(model):
    return [layer for layer in model.layers if isinstance(layer, EncoderBlock)]


def example_losses(problem_type, labels, logits, label_smoothing=0.0):
    """Each example's loss (batch,): the cross-entropy of its class; regression's squared error of the one output
    against the standardised target; multi-label's binary cross-entropy of each label's sigmoid, averaged over the
    labels (Hugging Face's BCEWithLogitsLoss), its 0/1 targets smoothed towards 1/2 as Keras's BinaryCrossentropy
    does."""
    if problem_type == REGRESSION:
        return tf.square(logits[:, 0] - labels)
    if problem_type == MULTI_LABEL:
        targets = labels * (1.0 - label_smoothing) + 0.5 * label_smoothing
        return tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(targets, logits), axis=-1)
    return smoothed_cross_entropy(labels, logits, label_smoothing)


def answers(problem_type, logits):
    """The model's answer before any naming: class probabilities (softmax), each label's probability (sigmoid),
    or regression's standardised score."""
    if problem_type == REGRESSION:
        return {"score": logits[:, 0]}
    return {"probabilities": (tf.sigmoid if problem_type == MULTI_LABEL else tf.nn.softmax)(logits)}


def classification_loss(label_smoothing, problem_type=SINGLE_LABEL):
    """The Task.loss of a classifier: summed `example_losses` over the examples."""
    def loss(model, batch, training):
        logits = model(model_inputs(batch), training=training)
        losses = example_losses(problem_type, batch["label"], logits, label_smoothing)
        tokens = tf.reduce_sum(tf.cast(batch["token_ids"] != 0, tf.int64))
        return tf.reduce_sum(losses), tf.shape(losses)[0], tokens

    return loss


def classification_outputs(model, problem_type=SINGLE_LABEL):
    """Per-example outputs for `zoo.training.evaluation.gather`: each text's loss, `answers` and index (batches
    come in length order; the index puts them back in the data's)."""

    def outputs(batch):
        logits = tf.cast(model(model_inputs(batch), training=False), tf.float32)
        return {"loss": example_losses(problem_type, batch["label"], logits), **answers(problem_type, logits),
                "label": batch["label"], "index": batch["index"]}

    return outputs


def attention_scores(model, inputs):
    """Each encoder layer's attention probabilities (batch, heads, seq, seq) for the model's `inputs` (token ids,
    or a pair model's {"token_ids", "segment_ids"})."""
    pair = isinstance(inputs, dict)
    token_ids, segment_ids = (inputs["token_ids"], inputs["segment_ids"]) if pair else (inputs, None)
    is_token = padding_mask(token_ids)
    x = model.get_layer("embedding")(token_ids, segment_ids=segment_ids)
    for layer in model.layers:
        if layer.name.endswith("_projection"):  # a narrower embedding's (ELECTRA's)
            x = layer(x)
    scores = []
    for block in encoder_blocks(model):
        x, layer_scores = block(x, padding_mask=is_token, return_attention_scores=True)
        scores.append(layer_scores.numpy())
    return scores


class TextServer(tf.Module):
    """What a classifier's export serves: `serve`, a tf.function of the preprocessor's inputs (`text`, and
    `text_pair` for a pair model: (batch,) strings each) -> `answer` of the model's float32 outputs."""

    def __init__(self, model, preprocessor):
        super().__init__()
        self.model = model
        self.preprocessor = preprocessor
        # Named arguments, so that a run's server is called as its export's signature is: serve(text=, text_pair=).
        one, pair = (lambda text: self.outputs(text)), (lambda text, text_pair: self.outputs(text, text_pair))
        self.serve = tf.function(pair if preprocessor.pairs else one, input_signature=preprocessor.signature)

    def outputs(self, *texts):
        return self.answer(tf.cast(self.model(self.preprocessor(*texts), training=False), tf.float32))


class ClassifierServer(TextServer):
    """Text in, label and class probabilities out: what the export serves."""

    def __init__(self, model, preprocessor, class_names):
        super().__init__(model, preprocessor)
        self.class_names = tf.constant(class_names)

    def answer(self, logits):
        probabilities = tf.nn.softmax(logits)
        label_id = tf.argmax(probabilities, axis=-1, output_type=tf.int32)
        return {
            "label": tf.gather(self.class_names, label_id),
            "label_id": label_id,
            "probabilities": probabilities,
        }


class RegressionServer(TextServer):
    """Text in, a number in the training labels' own units out: the standardised output times their `std`
    plus their `mean`."""

    def __init__(self, model, preprocessor, mean, std):
        super().__init__(model, preprocessor)
        self.mean, self.std = tf.constant(mean, tf.float32), tf.constant(std, tf.float32)

    def answer(self, outputs):
        return {"score": outputs[:, 0] * self.std + self.mean}


class MultiLabelServer(TextServer):
    """Text in, each label's probability and the predicted set out: `labels` (batch, labels) holds the labels whose
    probability is at least `threshold`, in `class_names`' order, then empty strings; `label_count` how many."""

    def __init__(self, model, preprocessor, class_names, threshold):
        super().__init__(model, preprocessor)
        self.class_names = tf.constant(class_names)
        self.threshold = tf.constant(threshold, tf.float32)

    def answer(self, logits):
        probabilities = tf.sigmoid(logits)
        chosen = probabilities >= self.threshold
        # The chosen labels first, each part in label order: a stable sort of "not chosen".
        order = tf.argsort(tf.cast(tf.logical_not(chosen), tf.int32), axis=-1, stable=True)
        labels = tf.where(tf.gather(chosen, order, batch_dims=1), tf.gather(self.class_names, order), "")
        return {"labels": labels, "label_count": tf.reduce_sum(tf.cast(chosen, tf.int32), axis=-1),
                "probabilities": probabilities}
