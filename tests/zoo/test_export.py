"""The ops manifest lists exactly the ops a TensorFlow-only process lacks (checked in such a process)."""

from zoo import export


def test_non_core_ops_are_found_in_a_tensorflow_only_process_registry():
    found = export.non_core_ops({"MatMul", "XlaDynamicUpdateSlice", "SentencepieceOp", "SentencepieceTokenizeOp",
                                 "NoSuchOpAnywhere"})
    # XlaDynamicUpdateSlice is registered by TensorFlow itself, though tf.raw_ops has no attribute for it.
    assert found == {"SentencepieceOp": "tensorflow_text", "SentencepieceTokenizeOp": "tensorflow_text",
                     "NoSuchOpAnywhere": "unknown"}
