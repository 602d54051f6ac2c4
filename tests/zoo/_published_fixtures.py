"""Tiny published checkpoints written from NumPy (Hugging Face's layout), and the references the
zoo's loader is checked against: a NumPy BERT / ELECTRA forward pass from the published equations,
keras-hub's BertBackbone with Hugging Face's exact GELU, and Hugging Face's tokenizer.json."""

import functools
import json
import math

import numpy as np

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]

# Word pieces that the tokenizer tests' texts hit (accents, CJK, emoji, punctuation, a long word), in
# both casings, so that lowercasing and accent stripping change ids instead of all giving [UNK].
PIECES = [
    "cafe", "café", "Café", "Caf", "##é", "##e", "de", "##ja", "déjà", "vu", "ja", "我", "爱", "北", "京",
    "!", "?", ".", ",", "'", "-", "😀", "the", "The", "movie", "was", "wasn", "##n", "t", "great", "i", "I",
    "love", "it", "hello", "Hello", "HELLO", "world", "World", "w", "##or", "##ö", "##r", "##ld", "un",
    "##believ", "##able", "ab", "##ab", "a", "##b", "fun", "##ny", "not", "bad", "at", "all", "film",
    "s", "##s", "and", "or", "is", "good", "very", "so", "to", "be", "naive", "naïve", "resume", "résumé",
    "东", "京", "日", "本", "語", "ü", "##ü", "u", "ber", "über", "Über",
]


def vocabulary(size=None):
    """[PAD] = 0, the other special tokens, PIECES, then filler pieces up to `size` entries."""
    vocab = SPECIALS + list(dict.fromkeys(PIECES))
    size = size or len(vocab)
    vocab += [f"w{i}" for i in range(size - len(vocab))]
    assert len(vocab) == size == len(set(vocab)), "vocabulary too small for PIECES"
    return vocab


def bert_config(model_type="bert", vocab_size=120, hidden=16, embedding=None, layers=2, heads=2,
                intermediate=32, max_positions=32, eps=1e-12):
    config = {
        "architectures": ["BertForPreTraining" if model_type == "bert" else "ElectraForPreTraining"],
        "model_type": model_type, "vocab_size": vocab_size, "hidden_size": hidden, "num_hidden_layers": layers,
        "num_attention_heads": heads, "intermediate_size": intermediate, "hidden_act": "gelu",
        "hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1, "max_position_embeddings": max_positions,
        "type_vocab_size": 2, "initializer_range": 0.02, "layer_norm_eps": eps, "pad_token_id": 0,
        "position_embedding_type": "absolute",
    }
    if model_type == "electra":
        config["embedding_size"] = embedding or hidden
    return config


def random_weights(config, seed=0, prefix="", legacy_norm_names=False):
    """Random weights for `config` in Hugging Face's names and torch layout (Linear weight: (out, in)).

    Non-trivial everywhere: token-type embeddings, LayerNorm gammas (not 1) and betas (not 0) and
    biases are all random, so a weight that is skipped, transposed or swapped changes the output.
    Embedding tables have std 0.02 (BERT's initialiser): their sum has a small variance, which makes
    the embedding LayerNorm's epsilon matter. Extra parameters that fine-tuning ignores (pooler, the
    masked-LM head, ELECTRA's discriminator head) are included, without the prefix, as published.
    """
    rng = np.random.default_rng(seed)
    hidden, inner = config["hidden_size"], config["intermediate_size"]
    embedding = config.get("embedding_size", hidden)
    vocab, positions = config["vocab_size"], config["max_position_embeddings"]
    gamma, beta = ("gamma", "beta") if legacy_norm_names else ("weight", "bias")

    def normal(*shape, std=0.2):
        return (std * rng.standard_normal(shape)).astype(np.float32)

    def linear(name, out_dim, in_dim):
        return {f"{name}.weight": normal(out_dim, in_dim), f"{name}.bias": normal(out_dim, std=0.1)}

    def norm(name, dim):
        return {f"{name}.{gamma}": 1.0 + normal(dim), f"{name}.{beta}": normal(dim, std=0.1)}

    body = {
        "embeddings.word_embeddings.weight": normal(vocab, embedding, std=0.02),
        "embeddings.position_embeddings.weight": normal(positions, embedding, std=0.02),
        "embeddings.token_type_embeddings.weight": normal(config["type_vocab_size"], embedding, std=0.02),
        **norm("embeddings.LayerNorm", embedding),
    }
    # Every checkpoint's position_ids buffer (older transformers versions saved it).
    body["embeddings.position_ids"] = np.arange(positions, dtype=np.int64)[None]
    if embedding != hidden:
        body.update(linear("embeddings_project", hidden, embedding))
    for i in range(config["num_hidden_layers"]):
        layer = f"encoder.layer.{i}"
        for part in ("query", "key", "value"):
            body.update(linear(f"{layer}.attention.self.{part}", hidden, hidden))
        body.update(linear(f"{layer}.attention.output.dense", hidden, hidden))
        body.update(norm(f"{layer}.attention.output.LayerNorm", hidden))
        body.update(linear(f"{layer}.intermediate.dense", inner, hidden))
        body.update(linear(f"{layer}.output.dense", hidden, inner))
        body.update(norm(f"{layer}.output.LayerNorm", hidden))
    weights = {prefix + name: array for name, array in body.items()}
    if config["model_type"] == "bert":
        weights.update({prefix + name: array for name, array in linear("pooler.dense", hidden, hidden).items()})
        weights.update(linear("cls.predictions.transform.dense", hidden, hidden))
        weights.update(norm("cls.predictions.transform.LayerNorm", hidden))
        weights["cls.predictions.bias"] = normal(vocab)
        weights["cls.predictions.decoder.weight"] = weights[prefix + "embeddings.word_embeddings.weight"].copy()
        weights.update(linear("cls.seq_relationship", 2, hidden))
    else:
        weights.update(linear("discriminator_predictions.dense", hidden, hidden))
        weights.update(linear("discriminator_predictions.dense_prediction", 1, hidden))
    return weights


def tokenizer_json(vocab, lowercase, shuffle_seed=None):
    """A BertWordPiece tokenizer.json as Hugging Face's `tokenizers` writes it. With `shuffle_seed`
    the model.vocab mapping is written in a shuffled order: ids come from its values, not its order."""
    items = list(enumerate(vocab))
    if shuffle_seed is not None:
        np.random.default_rng(shuffle_seed).shuffle(items)
    special = [{"id": vocab.index(token), "content": token, "single_word": False, "lstrip": False,
                "rstrip": False, "normalized": False, "special": True} for token in SPECIALS]
    cls_id, sep_id = vocab.index("[CLS]"), vocab.index("[SEP]")
    return {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": special,
        "normalizer": {"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True,
                       "strip_accents": None, "lowercase": lowercase},
        "pre_tokenizer": {"type": "BertPreTokenizer"},
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                       {"SpecialToken": {"id": "[SEP]", "type_id": 0}}],
            "pair": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                     {"SpecialToken": {"id": "[SEP]", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}},
                     {"SpecialToken": {"id": "[SEP]", "type_id": 1}}],
            "special_tokens": {"[CLS]": {"id": "[CLS]", "ids": [cls_id], "tokens": ["[CLS]"]},
                               "[SEP]": {"id": "[SEP]", "ids": [sep_id], "tokens": ["[SEP]"]}},
        },
        "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": True},
        "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
                  "max_input_chars_per_word": 100, "vocab": {token: i for i, token in items}},
    }


def write_checkpoint(folder, config, weights, vocab, vocab_files=("vocab.txt",), lowercase=True, shards=1,
                     shuffle_json_vocab=False):
    """Writes `folder` in Hugging Face's layout: config.json, model.safetensors (or `shards` shards and
    model.safetensors.index.json), the vocabulary files named in `vocab_files` ("vocab.txt",
    "tokenizer.json") and tokenizer_config.json (do_lower_case = `lowercase`; None: no such file, and
    uncased as BERT's default)."""
    from safetensors.numpy import save_file

    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(config, indent=2))
    if shards == 1:
        save_file(weights, str(folder / "model.safetensors"), metadata={"format": "pt"})
    else:
        names = list(weights)
        weight_map = {}
        for shard, part in enumerate(np.array_split(np.arange(len(names)), shards)):
            file = f"model-{shard + 1:05d}-of-{shards:05d}.safetensors"
            save_file({names[i]: weights[names[i]] for i in part}, str(folder / file), metadata={"format": "pt"})
            weight_map.update({names[i]: file for i in part})
        total = int(sum(array.nbytes for array in weights.values()))
        (folder / "model.safetensors.index.json").write_text(
            json.dumps({"metadata": {"total_size": total}, "weight_map": weight_map}, indent=2))
    if "vocab.txt" in vocab_files:
        (folder / "vocab.txt").write_text("".join(token + "\n" for token in vocab), encoding="utf-8")
    if "tokenizer.json" in vocab_files:
        document = tokenizer_json(vocab, lowercase is not False, shuffle_seed=0 if shuffle_json_vocab else None)
        (folder / "tokenizer.json").write_text(json.dumps(document, ensure_ascii=False), encoding="utf-8")
    if lowercase is not None:
        tokenizer_config = {"do_lower_case": bool(lowercase), "tokenizer_class": "BertTokenizer",
                            "unk_token": "[UNK]", "sep_token": "[SEP]", "pad_token": "[PAD]",
                            "cls_token": "[CLS]", "mask_token": "[MASK]", "model_max_length": 512}
        (folder / "tokenizer_config.json").write_text(json.dumps(tokenizer_config, indent=2))
    return folder


# What a small BERT's checkpoint may have wrong, each refused when the checkpoint is read, before a recipe
# writes anything: fault -> a part of the message, which names the file or tensor.
FAULTS = {
    "nan_weight": "of the tensor encoder.layer.1.output.dense.weight are not finite",
    "duplicate_piece": "vocab.txt cannot be used: it holds",
    "empty_vocabulary": "vocab.txt cannot be used: it is empty",
    "config_with_fewer_layers": "num_hidden_layers is 1, but the weights hold layer 1",
    "unknown_tensor_in_a_layer": "encoder.layer.0.attention.self.extra.weight in its encoder",
    "hidden_size_of_another_model": "config.json (hidden_size=8)",
    "missing_weight": "lacks the tensor encoder.layer.0.output.dense.weight",
}


def write_small_bert(folder, vocab, fault=None, vocab_files=("vocab.txt",)):
    """A small random BERT (2 layers, 16 wide, 32 positions, the `bert.` prefix) over `vocab` in Hugging
    Face's layout, with one of FAULTS (or none); a folder written before is written over."""
    config = bert_config(vocab_size=len(vocab), max_positions=32)
    weights = random_weights(config, prefix="bert.")
    if fault == "nan_weight":
        weights["bert.encoder.layer.1.output.dense.weight"][3, 5] = np.nan
    elif fault == "duplicate_piece":
        vocab = [*vocab[:-1], vocab[-2]]
    elif fault == "empty_vocabulary":
        vocab = []
    elif fault == "config_with_fewer_layers":
        config = {**config, "num_hidden_layers": 1}
    elif fault == "unknown_tensor_in_a_layer":
        weights["bert.encoder.layer.0.attention.self.extra.weight"] = np.ones((16, 16), np.float32)
    elif fault == "hidden_size_of_another_model":
        config = {**config, "hidden_size": 8}
    elif fault == "missing_weight":
        del weights["bert.encoder.layer.0.output.dense.weight"]
    else:
        assert fault is None, fault
    for name in ("vocab.txt", "tokenizer.json"):  # none of another write stays behind
        (folder / name).unlink(missing_ok=True)
    return write_checkpoint(folder, config, weights, vocab, vocab_files=vocab_files)


# ---------------------------------------------------------------- NumPy forward pass (float64)


def _erf(x):
    try:
        from scipy.special import erf
    except ImportError:
        erf = np.vectorize(math.erf)
    return erf(x)


def gelu(x):
    """Exact GELU, x * Phi(x): Hugging Face's hidden_act "gelu" (BERT, ELECTRA)."""
    return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))


def layer_norm(x, gamma, beta, eps):
    mean = x.mean(-1, keepdims=True)
    variance = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(variance + eps) * gamma + beta


def reference_encoder(weights, config, token_ids):
    """BERT's encoder (ELECTRA's, with its embedding projection) from the published equations, on
    token_ids (batch, seq) with 0 = [PAD], token type 0 everywhere. Returns (batch, seq, hidden)."""
    names = {name.split(".", 1)[1] if name.startswith(("bert.", "electra.")) else name: name for name in weights}

    def w(name):
        return weights[names[name]].astype(np.float64)

    def norm(name, x):
        gamma, beta = ("gamma", "beta") if f"{name}.gamma" in names else ("weight", "bias")
        return layer_norm(x, w(f"{name}.{gamma}"), w(f"{name}.{beta}"), config["layer_norm_eps"])

    def linear(name, x):
        return x @ w(f"{name}.weight").T + w(f"{name}.bias")

    token_ids = np.asarray(token_ids)
    batch, seq = token_ids.shape
    hidden, heads = config["hidden_size"], config["num_attention_heads"]
    head_dim = hidden // heads
    x = (w("embeddings.word_embeddings.weight")[token_ids] + w("embeddings.position_embeddings.weight")[:seq]
         + w("embeddings.token_type_embeddings.weight")[0])
    x = norm("embeddings.LayerNorm", x)
    if "embeddings_project.weight" in names:
        x = linear("embeddings_project", x)  # ELECTRA: (batch, seq, embedding) -> (batch, seq, hidden)
    # Padding keys get no attention: (batch, 1, 1, k_len) additive bias.
    bias = np.where(token_ids != 0, 0.0, -1e30)[:, None, None, :]

    def split_heads(t):  # (batch, seq, hidden) -> (batch, heads, seq, head_dim)
        return t.reshape(batch, seq, heads, head_dim).transpose(0, 2, 1, 3)

    for i in range(config["num_hidden_layers"]):
        layer = f"encoder.layer.{i}"
        q, k, v = (split_heads(linear(f"{layer}.attention.self.{part}", x)) for part in ("query", "key", "value"))
        scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(head_dim) + bias  # (batch, heads, q_len, k_len)
        scores -= scores.max(-1, keepdims=True)
        probs = np.exp(scores)
        probs /= probs.sum(-1, keepdims=True)
        context = (probs @ v).transpose(0, 2, 1, 3).reshape(batch, seq, hidden)
        attended = norm(f"{layer}.attention.output.LayerNorm", x + linear(f"{layer}.attention.output.dense", context))
        inner = gelu(linear(f"{layer}.intermediate.dense", attended))
        x = norm(f"{layer}.output.LayerNorm", attended + linear(f"{layer}.output.dense", inner))
    return x


# ---------------------------------------------------------------- keras-hub


def keras_hub_bert(folder):
    """keras-hub's BertBackbone.from_preset(folder), with Hugging Face's exact GELU.

    keras-hub builds BertBackbone with the tanh approximation of GELU (keras_hub's
    `gelu_approximate`), whatever config.json's hidden_act says; Hugging Face's and the original
    BERT's "gelu" is the exact erf form, which the issue asks of the zoo. The two differ by ~1e-4 on
    these checkpoints, so the reference gets the exact form; everything else is keras-hub's.
    """
    import keras
    import keras_hub

    backbone = keras_hub.models.BertBackbone.from_preset(str(folder))
    exact = functools.partial(keras.activations.gelu, approximate=False)
    for i in range(backbone.num_layers):
        backbone.get_layer(f"transformer_layer_{i}")._feedforward_intermediate_dense.activation = exact
    return backbone


def keras_hub_sequence_output(backbone, token_ids):
    token_ids = np.asarray(token_ids, np.int32)
    outputs = backbone({"token_ids": token_ids, "segment_ids": np.zeros_like(token_ids),
                        "padding_mask": (token_ids != 0).astype(np.int32)}, training=False)
    return np.asarray(outputs["sequence_output"])


def keras_hub_tokenizer(vocab, lowercase):
    """keras-hub's BertTokenizer as BERT tokenizes: accents stripped exactly when lowercasing
    (Hugging Face's BertTokenizer with strip_accents=None, google-research/bert's tokenization.py).
    keras-hub's own default keeps accents when it lowercases, so strip_accents is passed."""
    import keras_hub

    return keras_hub.models.BertTokenizer(vocabulary=list(vocab), lowercase=lowercase, strip_accents=lowercase)


def ragged_ids(tokenized):
    """Token ids as a list of lists of ints, from a tf.RaggedTensor, a dense array or a list."""
    if hasattr(tokenized, "to_list"):
        tokenized = tokenized.to_list()
    return [[int(i) for i in np.asarray(row).reshape(-1)] for row in tokenized]
