"""Using a pretraining run (`recipes.pretrain`) or a published checkpoint (`zoo.pretraining.published`: BERT, ELECTRA,
MiniLM): its encoder for your own Keras model, its weights for a classifier to fine-tune, and the export that serves it.

    from zoo.pretraining.pretrained import load_encoder
    encoder, tokenizer = load_encoder("runs/pretrain_imdb")  # or "hf:sentence-transformers/all-MiniLM-L6-v2"
    hidden = encoder(token_ids)  # (batch, seq) int32, 0 = padding -> (batch, seq, hidden_dim)
"""

import dataclasses
import os

import numpy as np
import tensorflow as tf

from zoo.classifier import model as classifier
from zoo.pretraining import checkpoint_weights, model as pretraining, published
from zoo.data import tokenizer
from zoo.pretraining.run_config import PretrainRunConfig
from zoo.runs.run_dir import CONFIG_FILE, LoadedRun, opened
from zoo.core.dtype_policy import dtype_policy

RECIPE = "pretrain"


# What word vectors set in an encoder's config (embedding_dim: the vectors' width), not a preset's shape.
WORD_FIELDS = ("tokenizer", "word_vectors", "freeze_word_vectors", "min_vector_coverage", "embedding_dim")


class PretrainedRunError(ValueError):
    """A fine-tuning setting that contradicts the pretrained run."""


def load_pretrained(model_dir, finished=True, average=1):
    """The newest checkpoint of a pretraining run (that reached its last step, unless finished=False: eval and export
    take any checkpoint), rebuilt in float32; with average=N, the mean of the newest N checkpoints' weights
    (`RunDir.load_model`). `model_dir`: a path or the command's RunDir."""
    run_dir = opened(model_dir)
    run = run_dir.read_finished(RECIPE, finished)
    record = run_dir.typed(run, RECIPE, PretrainRunConfig)
    config = record.config.model
    model, step = run_dir.load_model(lambda: pretraining.build_pretrainer(config), average)
    if finished:
        run_dir.check_finished(run, step)
    return LoadedRun(record, config, model, run_dir.tokenizer(), step)


def load_encoder(source):
    """(encoder, tokenizer) of a finished pretraining run or of a published checkpoint (`zoo.pretraining.published`: a
    Hugging Face folder, hf:ORG/NAME, keras_hub:PRESET). The encoder is a Keras model (float32), token ids (batch,
    seq) int32 with 0 = padding -> hidden states (batch, seq, hidden_dim). A run's tokenizer is a keras-hub
    SentencePieceTokenizer (ids 0-4: <pad>, <unk>, <s>, </s>, <mask>), or with word vectors a
    zoo.data.word_tokenizer.WordTokenizer (the same ids, [MASK] for <mask>): start each text with <s>
    (zoo.data.tokenizer.START_ID), as pretraining did. A checkpoint's is keras-hub's BertTokenizer over its
    vocabulary: frame each text as [CLS] ... [SEP] (zoo.data.tokenizer.framing)."""
    if published.is_published(source):
        checkpoint = published.read_checkpoint(source)
        with dtype_policy("float32"):
            encoder = classifier.build_encoder(checkpoint.config)
        copy_encoder_weights(checkpoint_weights.encoder_weights(checkpoint, encoder), encoder)
        return encoder, tokenizer.wordpiece_tokenizer(checkpoint.vocabulary, checkpoint.lowercase,
                                                      checkpoint.strip_accents)
    check_run_source(source)
    trained = load_pretrained(source)
    return trained.model.encoder, trained.tokenizer


def check_run_source(source):
    """Refuses a `source` that is not published (`published.is_published`) and cannot be a pretraining run
    either, saying what it is: no such path, a file, or a folder without config.json."""
    if not os.path.exists(source):
        raise PretrainedRunError(f"{source} does not exist: give a finished recipes.pretrain run folder, or a "
                                 f"published checkpoint (a folder with {published.LAYOUT}, hf:ORG/NAME or "
                                 "keras_hub:PRESET).")
    if not os.path.isdir(source):
        raise PretrainedRunError(f"{source} is a file, not a folder: give a finished recipes.pretrain run folder, "
                                 f"or a published checkpoint's folder ({published.LAYOUT}).")
    if not opened(source).holds(CONFIG_FILE):
        raise PretrainedRunError(
            f"{source} is a folder that is neither a zoo pretraining run (the {CONFIG_FILE} that recipes.pretrain "
            f"writes, and its checkpoints) nor a published checkpoint ({published.LAYOUT}): run recipes.pretrain "
            "there, or give the checkpoint's folder.")


def pretrained_encoder_config(model_dir):
    """The encoder config (a ClassifierConfig) of the finished pretraining run in `model_dir`."""
    check_run_source(model_dir)
    run_dir = opened(model_dir)
    return run_dir.typed(run_dir.read_finished(RECIPE), RECIPE, PretrainRunConfig).config.model.encoder


def encoder_initializer(source):
    """A Task.initialize for fine-tuning: copies the encoder weights of a finished pretraining
    run or a published checkpoint (read then, in float32) into the classifier the Trainer builds."""

    def initialize(model):  # called on a fresh run only: a resumed one needs nothing from `source`
        if published.is_published(source):
            checkpoint = published.read_checkpoint(source)
            count = copy_encoder_weights(checkpoint_weights.encoder_weights(checkpoint, model), model)
            unused = checkpoint_weights.unused_parts(checkpoint)
            print(f"Initialized the encoder from {source}: {count} published weights"
                  + (f"; not used for fine-tuning: {', '.join(unused)}." if unused else "."), flush=True)
        else:  # a finished pretraining run's encoder, its layers with weights
            encoder = load_pretrained(source).model.encoder
            count = copy_encoder_weights({layer.name: layer.get_weights() for layer in encoder.layers if layer.weights},
                                         model)
            print(f"Initialized the encoder from {source}: {count} pretrained weights.", flush=True)

    return initialize


def pretrainer_initializer(source):
    """A Task.initialize for continued pretraining: copies a published checkpoint's encoder into the Pretrainer's
    encoder, and its masked-LM head where it has one (else the head starts fresh, tied to the embedding)."""

    def initialize(model):  # a fresh run only
        checkpoint = published.read_checkpoint(source)
        count = copy_encoder_weights(checkpoint_weights.encoder_weights(checkpoint, model.encoder), model.encoder)
        head = checkpoint_weights.mlm_head_weights(checkpoint)
        if head is not None:
            model.mlm_head.dense.set_weights(head["dense"])
            model.mlm_head.norm.set_weights(head["norm"])
            model.mlm_head.bias.assign(head["bias"][0])
        said = "its masked-LM head" if head is not None else "a new masked-LM head (the checkpoint has none)"
        unused = checkpoint_weights.unused_parts(checkpoint, head=head is not None)
        print(f"Initialized the encoder from {source} ({count} published weights) and {said}"
              + (f"; not used: {', '.join(unused)}." if unused else "."), flush=True)

    return initialize


def classifier_config(encoder, dropout=None, **asked):
    """The fine-tuned classifier's config: the pretrained `encoder`'s (a ClassifierConfig), with `dropout` (default:
    ClassifierConfig's, 0.1, BERT's fine-tuning rate; pretraining may have used none), and without its word vectors (a
    word encoder keeps tokenizer="words" and its embedding_dim: the vectors started its pretraining, the fine-tuned
    model starts from the pretrained embedding, trainable). Each of `asked` (preset, vocab_size, max_length: what the
    user set, None if not) must agree with the pretrained encoder, else PretrainedRunError; max_length may be shorter
    than the encoder's (fewer positions: learned ones are cut to it when the weights are copied), not longer."""
    preset, max_length = asked.pop("preset", None), asked.pop("max_length", None)
    wrong = [f"--{k}={v} (the pretrained encoder has {getattr(encoder, k)})"
             for k, v in asked.items() if v is not None and v != getattr(encoder, k)]
    if max_length is not None and max_length > encoder.max_length:
        wrong.append(f"--max_length={max_length} (the pretrained encoder has {encoder.max_length} positions: "
                     f"at most {encoder.max_length})")
    if preset is not None and preset not in classifier.PRESETS:
        raise PretrainedRunError(f"Unknown preset {preset!r}: use one of {sorted(classifier.PRESETS)}, or leave it "
                                 "out.")
    own = {name: getattr(encoder, name) for name in ("vocab_size", "max_length", "dropout",
                                                     *(WORD_FIELDS if encoder.words else ()))}
    if preset is not None and dataclasses.replace(classifier.PRESETS[preset], **own) != encoder:
        wrong.append(f"--preset={preset} (the pretrained encoder's shape is another preset's)")
    if wrong:
        raise PretrainedRunError(f"The pretrained run of --init_from contradicts {', '.join(wrong)}: leave those flags "
                                 "out (they come from the pretrained run) or pretrain with them.")
    return dataclasses.replace(encoder, dropout=classifier.ClassifierConfig.dropout if dropout is None else dropout,
                               max_length=max_length or encoder.max_length,
                               tokenizer="words" if encoder.words else encoder.tokenizer, word_vectors=None,
                               freeze_word_vectors=False)


def copy_encoder_weights(weights, target):
    """Copies `encoder_weights` into the layers of `target` (a classifier) with the same names, and checks that each
    of them now holds the pretrained value exactly and that no weight of target's encoder was left out. Returns how
    many weights were copied."""
    copied = 0
    for name, values in weights.items():
        destination = target.get_layer(name)
        segments = getattr(destination, "segment_embedding", None)
        if segments is not None and len(values) == len(destination.weights) - 1:
            # An encoder pretrained on single texts has no segment table: a text-pair model's starts at zero.
            at = [weight.path for weight in destination.weights].index(segments.embeddings.path)
            values = [*values[:at], np.zeros(segments.embeddings.shape, np.float32), *values[at:]]
        # A classifier with fewer positions than the pretrained encoder takes the first rows of its learned table.
        values = [value[: weight.shape[0]] if "position_embedding" in weight.path and len(value) > weight.shape[0]
                  else value for value, weight in zip(values, destination.weights)]
        destination.set_weights(values)
        for value, weight in zip(values, destination.get_weights()):
            if not np.array_equal(value, weight):
                raise RuntimeError(f"Layer {name}: a weight did not copy exactly.")
        copied += len(values)
    expected = sum(len(layer.weights) for layer in target.layers if layer.name != "logits")
    if copied != expected:
        raise RuntimeError(f"Copied {copied} pretrained weights but the classifier's encoder has {expected}.")
    return copied


class EncoderServer(tf.Module):
    """What the pretraining export serves: `encode` (text -> one mean-pooled vector per text) and `fill_mask` (text
    holding <mask> -> the top-k tokens and probabilities per mask)."""

    def __init__(self, model, tokenizer_, config):
        super().__init__()
        # The parts, not the Pretrainer: Keras would trace the Pretrainer's dict call for a signature of its own.
        self.encoder, self.mlm_head, self.tokenizer = model.encoder, model.mlm_head, tokenizer_
        self.proposer = model.generator if model.generator is not None else model.encoder
        self.max_length = config.encoder.max_length
        self.mask_id, self.first_regular_id, self.start_id = config.mask_id, config.first_regular_id, config.start_id
        self.proposable = config.encoder.vocab_size - config.first_regular_id  # the pieces fill_mask may propose
        pieces = [tokenizer_.id_to_token(i) for i in range(tokenizer_.vocabulary_size())]
        self.space_id = tokenizer_.token_to_id("▁") if "▁" in pieces else -1
        self.words = tf.constant([p.removeprefix("▁") for p in pieces])

    def _token_ids(self, text):
        """<s> + the text's pieces (the first max_length - 1), a lone "▁" before <mask> dropped (SentencePiece writes
        "a <mask>" as a, ▁, <mask>; pretraining masked whole pieces)."""
        ragged = self.tokenizer.tokenize(text)
        following = tf.concat([ragged[:, 1:], tf.zeros_like(ragged[:, :1])], axis=1)
        ragged = tf.ragged.boolean_mask(ragged, ~((ragged == self.space_id) & (following == self.mask_id)))
        ragged = ragged[:, : self.max_length - 1]
        start = tf.fill([tf.shape(text)[0], 1], tf.constant(self.start_id, ragged.dtype))
        return tf.cast(tf.concat([start, ragged], axis=1).to_tensor(0), tf.int32)

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="text")])
    def encode(self, text):
        token_ids = self._token_ids(text)
        hidden = tf.cast(self.encoder(token_ids, training=False), tf.float32)
        is_token = tf.cast(token_ids != tokenizer.PAD_ID, tf.float32)[..., None]
        return {"pooled": tf.reduce_sum(hidden * is_token, axis=1) / tf.maximum(tf.reduce_sum(is_token, axis=1), 1.0)}

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="text"),
                                  tf.TensorSpec([], tf.int32, name="top_k")])
    def fill_mask(self, text, top_k):
        """tokens (batch, masks, top_k) string and probabilities (batch, masks, top_k) float32, masks = the most
        <mask>s of any text (within the first max_length - 1 pieces); a text's unused rows are "" and 0, and
        mask_count (batch,) says how many are its own. top_k is at least 1 and at most the regular pieces of the
        vocabulary (special ones are never proposed)."""
        with tf.control_dependencies([
            tf.debugging.assert_greater(top_k, 0, message="top_k must be at least 1"),
            tf.debugging.assert_less_equal(
                top_k, self.proposable, message=f"top_k must be <= {self.proposable}, the pieces of the vocabulary "
                f"fill_mask can propose (its {self.proposable + self.first_regular_id} less the "
                f"{self.first_regular_id} special ones)"),
        ]):
            top_k = tf.identity(top_k)
        token_ids = self._token_ids(text)
        is_mask = token_ids == self.mask_id
        mask_count = tf.reduce_sum(tf.cast(is_mask, tf.int32), axis=1)
        width = tf.reduce_max(tf.concat([mask_count, [0]], axis=0))
        # Each text's mask positions, first to last, padded with position 0.
        order = tf.argsort(tf.cast(is_mask, tf.int32), axis=1, direction="DESCENDING", stable=True)[:, :width]
        used = tf.range(width)[None, :] < mask_count[:, None]
        positions = tf.where(used, order, 0)
        logits = self.mlm_head(self.proposer(token_ids, training=False), mask_positions=positions)  # float32
        special = tf.range(tf.shape(logits)[-1]) < self.first_regular_id
        probabilities = tf.nn.softmax(tf.where(special, -1e9, logits))
        best, ids = tf.math.top_k(probabilities, top_k)
        keep = used[..., None]
        return {"tokens": tf.where(keep, tf.gather(self.words, ids), ""), "probabilities": tf.where(keep, best, 0.0),
                "mask_count": mask_count}
