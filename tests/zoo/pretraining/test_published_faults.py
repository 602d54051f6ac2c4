"""What a published checkpoint, a run folder's WordPiece vocabulary and the pretraining export refuse
(issue 39): each refusal one ValueError naming the file or tensor, raised when the checkpoint is read
(zoo.pretraining.published.read_checkpoint checks it whole), before a recipe writes anything."""

import json

import numpy as np
import pytest
import tensorflow as tf

import zoo  # noqa: F401  (TensorFlow backend first)
from tests.zoo import _published_fixtures as F
from zoo.core.disk import DamagedFileError
from zoo.data import tokenizer
from zoo.pretraining import checkpoint_weights, pretrained, published
from zoo.pretraining.published import PublishedCheckpointError

VOCAB = F.vocabulary(120)


# ---------------------------------------------------------------- a checkpoint checked whole


@pytest.mark.parametrize("fault", list(F.FAULTS))
def test_a_faulty_checkpoint_is_refused_when_read_naming_the_file_or_tensor(fault, tmp_path):
    folder = F.write_small_bert(tmp_path / "bert", VOCAB, fault)
    with pytest.raises(PublishedCheckpointError) as raised:
        published.read_checkpoint(str(folder))
    assert F.FAULTS[fault] in str(raised.value), str(raised.value)
    assert "\n" not in str(raised.value)


def test_a_piece_written_twice_is_named_with_its_two_line_numbers(tmp_path):
    folder = F.write_small_bert(tmp_path / "bert", VOCAB, "duplicate_piece")
    with pytest.raises(PublishedCheckpointError) as raised:
        published.read_checkpoint(str(folder))
    assert str(raised.value).startswith(f"{folder / 'vocab.txt'} cannot be used: it holds {VOCAB[-2]!r} twice, on "
                                        f"lines {len(VOCAB) - 1} and {len(VOCAB)}."), str(raised.value)


def test_weights_with_fewer_layers_than_the_config_are_refused_naming_the_layer(tmp_path):
    config = F.bert_config(layers=3)
    weights = F.random_weights(dict(config, num_hidden_layers=2), prefix="bert.")
    folder = F.write_checkpoint(tmp_path / "bert", config, weights, VOCAB)
    with pytest.raises(PublishedCheckpointError, match="num_hidden_layers is 3, but the weights hold no layer 2"):
        published.read_checkpoint(str(folder))


def test_a_checkpoint_without_bert_s_special_pieces_is_refused_naming_them(tmp_path):
    vocab = [piece if piece != "[MASK]" else "mask" for piece in VOCAB]
    folder = F.write_small_bert(tmp_path / "bert", vocab)
    with pytest.raises(PublishedCheckpointError, match=r"vocab.txt cannot be used: it lacks \[MASK\]"):
        published.read_checkpoint(str(folder))


def test_a_tokenizer_json_giving_one_id_twice_is_refused_naming_both_pieces(tmp_path):
    folder = F.write_small_bert(tmp_path / "bert", VOCAB, vocab_files=("tokenizer.json",))
    document = json.loads((folder / "tokenizer.json").read_text(encoding="utf-8"))
    mapping = document["model"]["vocab"]
    mapping[VOCAB[-1]] = mapping[VOCAB[-2]]
    (folder / "tokenizer.json").write_text(json.dumps(document), encoding="utf-8")
    with pytest.raises(PublishedCheckpointError,
                       match=f"gives id {len(VOCAB) - 2} to both '{VOCAB[-2]}' and '{VOCAB[-1]}'"):
        published.read_checkpoint(str(folder))


def test_an_incomplete_masked_lm_head_is_refused(tmp_path):
    from safetensors.numpy import load_file, save_file

    folder = F.write_small_bert(tmp_path / "bert", VOCAB)
    weights = load_file(str(folder / "model.safetensors"))
    del weights["cls.predictions.transform.LayerNorm.weight"]
    save_file(weights, str(folder / "model.safetensors"))
    with pytest.raises(PublishedCheckpointError, match="lacks the tensor cls.predictions.transform.LayerNorm.weight"):
        published.read_checkpoint(str(folder))


def test_every_tensor_is_loaded_or_named_unused(tmp_path):
    """Outside the encoder, a tensor is named by unused_parts (the masked-LM head too when it is not loaded);
    inside, one the zoo has no place for is refused (the faults above)."""
    from safetensors.numpy import load_file, save_file

    folder = F.write_small_bert(tmp_path / "bert", VOCAB)
    weights = load_file(str(folder / "model.safetensors"))
    weights["adapter.scale"] = np.ones(3, np.float32)
    save_file(weights, str(folder / "model.safetensors"))
    checkpoint = published.read_checkpoint(str(folder))
    assert checkpoint_weights.unused_parts(checkpoint) == ["adapter.scale", "cls.predictions", "cls.seq_relationship",
                                                  "pooler.dense"]
    assert checkpoint_weights.unused_parts(checkpoint, head=True) == ["adapter.scale", "cls.seq_relationship", "pooler.dense"]


# ---------------------------------------------------------------- what --init_from names


def test_paths_that_are_no_checkpoint_say_what_they_are(tmp_path):
    (tmp_path / "a_file").write_text("x")
    (tmp_path / "hf_folder").mkdir()
    (tmp_path / "hf_folder" / "vocab.txt").write_text("".join(f"{p}\n" for p in VOCAB))
    expected = {"missing": "does not exist", "a_file": "is a file, not a folder",
                "hf_folder": "is a folder without config.json"}
    for name, said in expected.items():
        with pytest.raises(PublishedCheckpointError, match=said):
            published.read_checkpoint(str(tmp_path / name))
    expected["hf_folder"] = ("is a folder that is neither a zoo pretraining run (the config.json that recipes.pretrain "
                             "writes, and its checkpoints) nor a published checkpoint (config.json with model_type")
    for name, said in expected.items():
        for read in (pretrained.pretrained_encoder_config, pretrained.load_encoder):
            with pytest.raises(pretrained.PretrainedRunError) as raised:
                read(str(tmp_path / name))
            assert said in str(raised.value) and "no config.json): run recipes.pretrain" not in str(raised.value)


def test_a_zoo_run_given_as_a_published_checkpoint_is_named_so(tmp_path):
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "config.json").write_text(json.dumps({"recipe": "pretrain", "model": {}}))
    with pytest.raises(PublishedCheckpointError, match="holds a zoo 'pretrain' run, not a published checkpoint"):
        published.read_checkpoint(str(tmp_path / "run"))


class NameResolutionError(Exception):
    pass


def test_keras_hub_errors_are_whole_or_in_our_words(monkeypatch):
    import keras_hub

    def unknown(preset, **_):
        raise ValueError("Unknown preset identifier. A preset must be a one of:\n1) a built-in preset identifier "
                         f"like `'bert_base_en'`\n2) a path to a local preset directory\nReceived: preset='{preset}'")

    monkeypatch.setattr(keras_hub.models.Backbone, "from_preset", unknown)
    with pytest.raises(PublishedCheckpointError) as raised:
        published.read_checkpoint("keras_hub:no_such_preset")
    message = str(raised.value)
    assert "knows no preset 'no_such_preset'" in message and "one of:" not in message, message

    class ConnectionError(OSError):  # requests.exceptions' name
        pass

    def offline(preset, **_):
        raise ConnectionError("HTTPSConnectionPool(host='api.kaggle.com', port=443): Max retries exceeded with url: "
                              "/v1/models (Caused by NameResolutionError(\"HTTPSConnection(host='api.kaggle.com', "
                              "port=443): Failed to resolve 'api.kaggle.com'\"))")

    monkeypatch.setattr(keras_hub.models.Backbone, "from_preset", offline)
    with pytest.raises(PublishedCheckpointError) as raised:
        published.read_checkpoint("keras_hub:bert_tiny_en_uncased")
    assert "could not reach api.kaggle.com" in str(raised.value), str(raised.value)

    def other(preset, **_):
        raise NameResolutionError("first line\nsecond line, " + "long " * 60 + "end")

    monkeypatch.setattr(keras_hub.models.Backbone, "from_preset", other)
    with pytest.raises(PublishedCheckpointError) as raised:
        published.read_checkpoint("keras_hub:bert_tiny_en_uncased")
    assert "first line second line, " in str(raised.value) and "long end." in str(raised.value), str(raised.value)


def test_hugging_face_hub_errors_are_kept_whole(monkeypatch):
    huggingface_hub = pytest.importorskip("huggingface_hub")

    def failing(name, **_):
        raise RuntimeError("Repository Not Found for url: https://huggingface.co/api/models/" + name + ".\n"
                           + "Please make sure you specified the correct `repo_id` and `repo_type`. " * 4 + "End")

    monkeypatch.setattr(huggingface_hub, "snapshot_download", failing)
    with pytest.raises(PublishedCheckpointError) as raised:
        published.read_checkpoint("hf:nobody/nothing")
    message = str(raised.value)
    assert "\n" not in message and "`repo_type`. End." in message and "local folder" in message, message


# ---------------------------------------------------------------- a fine-tuned run's WordPiece vocabulary


@pytest.fixture(name="wordpiece_run")
def wordpiece_run_fixture(tmp_path):
    tokenizer.save_wordpiece(VOCAB, True, None, str(tmp_path))
    assert tokenizer.load_tokenizer(str(tmp_path)).token_to_id("[CLS]") == VOCAB.index("[CLS]")
    return tmp_path


@pytest.mark.parametrize("damage, said", [
    ("empty", "is damaged (it is empty)"),
    ("duplicate", f"is damaged (it holds {VOCAB[7]!r} twice, on lines 8 and 10)"),
    ("deleted", "vocab.txt is missing: it is the run's WordPiece vocabulary"),
])
def test_a_damaged_run_vocabulary_is_named(wordpiece_run, damage, said):
    path = wordpiece_run / "vocab.txt"
    if damage == "deleted":
        path.unlink()
    else:
        pieces = [] if damage == "empty" else [*VOCAB[:9], VOCAB[7], *VOCAB[10:]]
        path.write_text("".join(f"{piece}\n" for piece in pieces), encoding="utf-8")
    with pytest.raises(DamagedFileError) as raised:
        tokenizer.load_tokenizer(str(wordpiece_run))
    assert str(raised.value).startswith(str(path)) and said in str(raised.value), str(raised.value)
    assert "tokenizer.model" not in str(raised.value)


# ---------------------------------------------------------------- the pretraining export's fill_mask


def test_fill_mask_refuses_a_top_k_above_the_pieces_it_can_propose(tmp_path):
    from zoo.classifier.model import ClassifierConfig
    from zoo.pretraining.model import PretrainConfig, build_pretrainer

    encoder = ClassifierConfig(vocab_size=50, hidden_dim=16, num_heads=2, intermediate_dim=32, num_layers=1,
                               dropout=0.0, max_length=16, position="learned")
    config = PretrainConfig(encoder=encoder, sequence_length=16)
    words = [f"w{i}" for i in range(200)]
    proto = tokenizer.train_tokenizer([" ".join(words[i:] + words[:i]) for i in range(200)], encoder.vocab_size,
                                      user_symbols=("<mask>",))
    server = pretrained.EncoderServer(build_pretrainer(config), tokenizer.load_tokenizer(proto), config)
    proposable = encoder.vocab_size - config.first_regular_id
    text = tf.constant(["w1 <mask> w2"])
    filled = server.fill_mask(text, tf.constant(proposable))
    assert filled["tokens"].shape == (1, 1, proposable)
    assert not any(token.decode().startswith("<") for token in filled["tokens"].numpy().ravel())
    for top_k in (proposable + 1, encoder.vocab_size, encoder.vocab_size + 1, 100_000):
        with pytest.raises(tf.errors.InvalidArgumentError, match=f"top_k must be <= {proposable}"):
            server.fill_mask(text, tf.constant(top_k))
