import tensorflow as tf

from zoo.training.distribute import make_strategy, uses_xla


def test_uses_xla_with_jit_compile_only_off_tpus():
    strategy = make_strategy("one_device")
    assert not uses_xla(strategy, False)
    assert uses_xla(strategy, True)
    assert uses_xla(tf.distribute.TPUStrategy.__new__(tf.distribute.TPUStrategy), False)
