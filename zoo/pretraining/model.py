"""Self-supervised pretraining of the classifier's encoder: BERT's masked LM and ELECTRA's replaced-token detection.

The encoder is `zoo.classifier.model.build_encoder`, the classifier's own body, so a pretrained encoder's weights go
into a classifier by layer name (`zoo.pretraining.pretrained`). The batches are masked by `zoo.pretraining.masks`."""

import dataclasses
import math
from typing import ClassVar

import keras
import tensorflow as tf

from zoo.core import checks
from zoo.classifier import model as classifier
from zoo.training.losses import smoothed_cross_entropy
from zoo.pretraining.masks import FIRST_REGULAR_ID, MASK_ID, scatter_at, with_masks
from zoo.data.tokenizer import END_ID, PAD_ID, START_ID

OBJECTIVES = ("mlm", "electra")
MASK_TOKEN = "<mask>"


@dataclasses.dataclass(frozen=True)
class PretrainConfig:
    encoder: classifier.ClassifierConfig = classifier.ClassifierConfig()  # the classifier's encoder to pretrain
    objective: str = "mlm"  # "mlm" (BERT's masked LM) or "electra" (replaced-token detection, with a generator)
    sequence_length: int | None = None  # tokens per packed sequence, <s> included; follows encoder.max_length unless set
    mask_rate: float = 0.15  # BERT: of those, 80% <mask>, 10% a random token, 10% kept
    generator_scale: float = 0.5  # ELECTRA: the generator's width (hidden, heads, FFN) / the encoder's
    detection_weight: float = 50.0  # ELECTRA's lambda: discriminator loss weight against the generator's
    # The vocabulary's special ids: the zoo's SentencePiece ones, or a published checkpoint's WordPiece ones
    # (BERT's [MASK] 103, its [unused...] and other bracketed pieces below 999, [CLS] 101, [SEP] 102).
    mask_id: int = MASK_ID  # the <mask> (BERT's [MASK]) token's id: 80% of the masked positions become it
    first_regular_id: int = FIRST_REGULAR_ID  # ids below are special (pad, mask, start, separator): never masked or sampled
    start_id: int = START_ID  # heads every packed sequence
    separator_id: int = END_ID  # ends every document of the stream

    CHOICES: ClassVar = {"objective": OBJECTIVES}

    def __post_init__(self):
        if isinstance(self.encoder, dict):  # read back from config.json
            object.__setattr__(self, "encoder", classifier.ClassifierConfig(**self.encoder))
        if self.sequence_length is None:
            object.__setattr__(self, "sequence_length", self.encoder.max_length)
        checks.choices(self)
        if not 0.0 < self.mask_rate < 1.0:
            raise ValueError(f"mask_rate={self.mask_rate} must be in (0, 1).")
        checks.non_negative(self, "detection_weight")
        if not 2 <= self.sequence_length <= self.encoder.max_length:
            raise ValueError(f"sequence_length={self.sequence_length} must be in [2, encoder.max_length="
                             f"{self.encoder.max_length}]: fine-tuning positions come from the pretrained model, so "
                             "raise encoder.max_length or shorten the sequences.")
        if not 0.0 < self.generator_scale <= 1.0:
            raise ValueError(f"generator_scale={self.generator_scale} must be in (0, 1].")
        if self.encoder.num_segments:
            raise ValueError(f"encoder.num_segments={self.encoder.num_segments}: pretraining reads single texts, so "
                             "leave it 0 (a text-pair fine-tuning adds its segment embedding, starting at zero).")
        checks.positive(self, "first_regular_id")
        if self.encoder.vocab_size <= self.first_regular_id:
            raise ValueError(f"encoder.vocab_size={self.encoder.vocab_size} leaves no regular token: the ids below "
                             f"first_regular_id={self.first_regular_id} are special. Raise it.")
        for name in ("mask_id", "start_id", "separator_id"):
            value, first = getattr(self, name), self.first_regular_id
            if not 0 < value < first:
                raise ValueError(f"{name}={value} must be a special id, 1 .. {first - 1}: 0 is padding, and the ids "
                                 f"from first_regular_id={first} on are regular tokens.")

    @property
    def max_predictions(self):
        """Masked positions per sequence (a static shape): mask_rate of sequence_length, rounded up."""
        return max(1, math.ceil(self.mask_rate * self.sequence_length))

    def generator(self):
        """ELECTRA's smaller generator: the encoder's config scaled in width."""
        e, s = self.encoder, self.generator_scale
        heads = max(1, round(e.num_heads * s))
        hidden = max(heads, round(e.hidden_dim * s / heads) * heads)
        return dataclasses.replace(e, hidden_dim=hidden, num_heads=heads,
                                   intermediate_dim=max(1, round(e.intermediate_dim * s)))


PRESETS = {name: PretrainConfig(encoder=config) for name, config in classifier.PRESETS.items()}


class MaskedLMHead(keras.layers.Layer):
    """BERT's masked-LM head: the hidden states at `mask_positions` through Dense + GELU and LayerNorm, then the
    token embedding's transpose (tied) plus a bias: float32 logits.

    keras-hub's MaskedLMHead does the same but fails under mixed precision (its float32 bias is added to bfloat16
    logits). Inputs may be narrower than the embedding (ELECTRA's generator): the Dense maps them to its width.

    Call arguments: inputs (batch, seq, width); mask_positions (batch, k) int. Returns (batch, k, vocab_size) float32.

    A part of the Pretrainer (it holds the Pretrainer's embedding), saved with it in checkpoints, not a layer to
    serialize on its own."""

    def __init__(self, token_embedding, epsilon=1e-5, activation="gelu", **kwargs):
        super().__init__(**kwargs)
        self.token_embedding = token_embedding
        width = token_embedding.output_dim
        self.dense = keras.layers.Dense(width, activation=activation, dtype=self.dtype_policy, name="dense")
        self.norm = keras.layers.LayerNormalization(epsilon=epsilon, dtype=self.dtype_policy, name="norm")

    def build(self, inputs_shape, mask_positions_shape=None):
        self.dense.build(inputs_shape)
        self.norm.build((*inputs_shape[:-1], self.token_embedding.output_dim))
        self.bias = self.add_weight(shape=(self.token_embedding.input_dim,), initializer="zeros", name="bias")
        self.built = True

    def call(self, inputs, mask_positions):
        x = tf.gather(inputs, mask_positions, batch_dims=1)  # (batch, k, width)
        x = self.norm(self.dense(x))
        return tf.cast(self.token_embedding(x, reverse=True), tf.float32) + tf.cast(self.bias, tf.float32)


@keras.saving.register_keras_serializable(package="zoo")
class Pretrainer(keras.Model):
    """The encoder and what pretraining puts on top of it.

    mlm: a masked-LM head (output tied to the token embedding) on the encoder. electra: a smaller generator (its own
    blocks, the encoder's embedding shared) with that head proposes tokens at the masked positions; the encoder, the
    discriminator, reads the input with the proposals in place and a detection head scores every position as replaced
    or original. The proposals are sampled under stop_gradient: the discriminator's loss reaches the generator only
    through the shared embedding.

    Call arguments: a batch of `mask_tokens` (with "original_ids" and, for electra, "seed"). Returns a dict:
    "mlm_logits" (batch, max_predictions, vocab); for electra also "replaced" (batch, seq) bool and
    "detection_logits" (batch, seq) float32."""

    def __init__(self, config, **kwargs):
        super().__init__(**kwargs)
        if isinstance(config, dict):
            config = PretrainConfig(**config)
        self.config = config
        self.encoder = classifier.build_encoder(config.encoder)
        embedding = self.encoder.get_layer("embedding")
        self.generator = None
        if config.objective == "electra":
            self.generator = classifier.build_encoder(config.generator(), embedding=embedding, prefix="generator",
                                                      name="generator")
            self.detection_dense = keras.layers.Dense(config.encoder.hidden_dim, activation="gelu",
                                                      name="detection_dense")
            self.detection_logits = keras.layers.Dense(1, dtype="float32", name="detection_logits")
        # BERT's head uses the encoder's activation and epsilon; the zoo's own encoders ReLU-based or not, GELU.
        activation = config.encoder.activation if config.encoder.activation.startswith("gelu") else "gelu"
        self.mlm_head = MaskedLMHead(embedding.token_embedding, config.encoder.epsilon,
                                     classifier.ACTIVATIONS.get(activation, activation), name="mlm_head")

    def call(self, batch, training=None):
        token_ids, positions = batch["token_ids"], batch["mask_positions"]
        proposer = self.generator if self.generator is not None else self.encoder
        mlm_logits = self.mlm_head(proposer(token_ids, training=training), mask_positions=positions)
        outputs = {"mlm_logits": mlm_logits}
        if self.generator is None:
            return outputs
        sampled = sample(tf.stop_gradient(tf.cast(mlm_logits, tf.float32)), batch["seed"], self.config.first_regular_id)
        original = batch["original_ids"]
        corrupted = scatter_at(original, positions, sampled, batch["mask_weights"] > 0)
        hidden = self.encoder(corrupted, training=training)
        outputs["replaced"] = corrupted != original
        outputs["detection_logits"] = self.detection_logits(self.detection_dense(hidden))[..., 0]
        return outputs

    def get_config(self):
        return {**super().get_config(), "config": dataclasses.asdict(self.config)}


def sample(logits, seed, first_regular_id=FIRST_REGULAR_ID):
    """One token per position from softmax(logits) (Gumbel-max, stateless), never a special token."""
    vocab = tf.shape(logits)[-1]
    special = tf.range(vocab) < first_regular_id
    logits = tf.where(special, tf.constant(-1e9, logits.dtype), logits)
    uniform = tf.random.stateless_uniform(tf.shape(logits), tf.cast(seed, tf.int64), minval=1e-9, maxval=1.0)
    return tf.argmax(logits - tf.math.log(-tf.math.log(uniform)), axis=-1, output_type=tf.int32)


def build_pretrainer(config):
    """A Pretrainer with its weights made (called once on a dummy batch)."""
    model = Pretrainer(config, name="pretrainer")
    dummy = tf.fill([1, config.sequence_length], config.first_regular_id)
    model(with_masks(dummy, tf.constant([0, 0], tf.int64), config))
    return model


def token_table(model):
    """A Pretrainer's token embedding table, the encoder's, which ELECTRA's generator and the masked-LM head's output
    share: what word vectors start."""
    return classifier.token_table(model.encoder)


def _per_sequence(values, weights):
    """(batch, n) values averaged over each row's weights: (batch,)."""
    return tf.reduce_sum(values * weights, axis=1) / tf.maximum(tf.reduce_sum(weights, axis=1), 1.0)


def _detection(batch, outputs):
    """ELECTRA's (is_token, replaced labels, detection cross-entropy), each (batch, seq) float32."""
    is_token = tf.cast(batch["original_ids"] != PAD_ID, tf.float32)
    labels = tf.cast(outputs["replaced"], tf.float32)
    return is_token, labels, tf.nn.sigmoid_cross_entropy_with_logits(labels=labels, logits=outputs["detection_logits"])


def pretraining_loss(config, label_smoothing=0.0):
    """The Task.loss of pretraining: summed over sequences, mlm (its cross-entropy smoothed by `label_smoothing`,
    averaged over a sequence's chosen positions) + detection_weight * detection (averaged over its real tokens)."""

    def loss(model, batch, training):
        outputs = model(batch, training=training)
        cross_entropy = smoothed_cross_entropy(batch["mask_ids"], outputs["mlm_logits"], label_smoothing)  # (batch, k)
        total = _per_sequence(cross_entropy, batch["mask_weights"])
        if "detection_logits" in outputs:
            is_token, _, detection = _detection(batch, outputs)
            total += config.detection_weight * _per_sequence(detection, is_token)
        tokens = tf.reduce_sum(tf.cast(batch["original_ids"] != PAD_ID, tf.int64))
        return tf.reduce_sum(total), tf.shape(total)[0], tokens

    return loss


def pretraining_metrics(model):
    """Per-batch sums for `zoo.training.evaluation.evaluate`: masked-token accuracy and cross-entropy,
    and for electra the replaced-token detection accuracy over real tokens."""

    def metrics(batch):
        outputs = model(batch, training=False)  # the sums below need the outputs, not the losses
        weights = batch["mask_weights"]
        cross_entropy = smoothed_cross_entropy(batch["mask_ids"], outputs["mlm_logits"])
        predicted = tf.argmax(outputs["mlm_logits"], axis=-1, output_type=tf.int32)
        sums = {"masked": tf.reduce_sum(weights),
                "masked_correct": tf.reduce_sum(tf.cast(predicted == batch["mask_ids"], tf.float32) * weights),
                "masked_cross_entropy": tf.reduce_sum(cross_entropy * weights)}
        if "detection_logits" in outputs:
            is_token, labels, detection = _detection(batch, outputs)
            guess, probability = outputs["detection_logits"] > 0, tf.sigmoid(outputs["detection_logits"])
            replaced = labels * is_token
            sums.update(tokens=tf.reduce_sum(is_token),
                        detection_correct=tf.reduce_sum(tf.cast(guess == outputs["replaced"], tf.float32) * is_token),
                        detection_cross_entropy=tf.reduce_sum(detection * is_token), replaced=tf.reduce_sum(replaced),
                        replaced_found=tf.reduce_sum(replaced * tf.cast(guess, tf.float32)),
                        replaced_probability=tf.reduce_sum(probability * replaced),
                        original_probability=tf.reduce_sum(probability * (is_token - replaced)))
        return sums

    return metrics


def summarize(totals):
    """The figures of `pretraining_metrics`' totals."""
    masked = max(totals["masked"], 1.0)
    result = {"masked_accuracy": totals["masked_correct"] / masked,
              "masked_perplexity": math.exp(totals["masked_cross_entropy"] / masked)}
    if "tokens" in totals:
        tokens, replaced = max(totals["tokens"], 1.0), totals["replaced"]
        rate = replaced / tokens
        result["detection_accuracy"] = totals["detection_correct"] / tokens
        result["replaced_recall"] = totals["replaced_found"] / max(replaced, 1.0)
        # Recall at 0.5 stays near 0 while the discriminator is unsure: its loss against the loss of answering
        # the replaced rate everywhere (the prior's entropy), and its mean probability on each kind of token,
        # show whether it has learned anything.
        result["detection_loss"] = totals["detection_cross_entropy"] / tokens
        result["detection_prior_loss"] = -sum(p * math.log(p) for p in (rate, 1.0 - rate) if p > 0)
        result["replaced_probability"] = totals["replaced_probability"] / max(replaced, 1.0)
        result["original_probability"] = totals["original_probability"] / max(totals["tokens"] - replaced, 1.0)
    return result

