"""Model builders, presets and the machinery every recipe shares, on Keras's TensorFlow backend; the Python
API `zoo.load(path)` and `zoo.train(recipe, ...)` (zoo.api)."""

import faulthandler
import os
import re
import sys
import tempfile

# A line of TensorFlow's C++ log (glog's prefix: severity, date, time), absl's notice before its log starts, or the
# second line of the notice of CPU instructions the binary was not built for.
_NATIVE_LINE = re.compile(r"([IWEF]\d{4} \d\d:\d\d:\d\d|WARNING: All log messages before absl|To enable the following)")


def _tensorflow_lines_asked_for():
    """ZOO_DEBUG=1, TF_CPP_MIN_LOG_LEVEL set, or absl's --verbosity (-v) given: a recipe parses its flags only
    after this import, so the command line is looked at here."""
    verbosity = any(re.match(r"--?(v|verbosity)(=|$)", argument) for argument in sys.argv[1:])
    return bool(os.environ.get("ZOO_DEBUG") or os.environ.get("TF_CPP_MIN_LOG_LEVEL") or verbosity)


def _import_tensorflow_quietly():
    """Imports TensorFlow without its C++ lines on the terminal, unless they are asked for.

    They say nothing a run's user can act on (no CUDA driver here, cuInit's failure on a machine without a
    GPU, the CPU instructions the binary was not built for, oneDNN's fallbacks), and bury the one line a run
    ends with; what matters reaches Python, as an exception or a warning, and shows. So TensorFlow's C++ log
    keeps fatal errors alone (TF_CPP_MIN_LOG_LEVEL=3, read once, while it is imported; a multi-worker job
    keeps every line, in each worker's log file: recipes.native_log), and the lines written while it is
    imported, before that level applies, go to a file, of which only the lines that are not TensorFlow's are
    shown (all of them if the import fails). Should the import crash, Python's fault handler says where."""
    if "tensorflow" in sys.modules or _tensorflow_lines_asked_for():
        return
    own_level = "TF_CONFIG" not in os.environ
    if own_level:
        os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
    sys.stderr.flush()
    terminal, crash_report = os.dup(2), not faulthandler.is_enabled()  # else whoever enabled it reports
    imported = False
    with tempfile.TemporaryFile() as lines:
        os.dup2(lines.fileno(), 2)
        if crash_report:
            faulthandler.enable(terminal)
        try:
            import tensorflow  # noqa: F401

            imported = True
        finally:
            sys.stderr.flush()
            os.dup2(terminal, 2)
            if crash_report:
                faulthandler.disable()
            os.close(terminal)
            if own_level:
                del os.environ["TF_CPP_MIN_LOG_LEVEL"]  # read: the processes this one starts choose their own
            lines.seek(0)
            for line in lines.read().decode(errors="replace").splitlines(keepends=True):
                if not (imported and _NATIVE_LINE.match(line)):
                    sys.stderr.write(line)


# The zoo runs on TensorFlow (tf.data, tf.distribute, TF Serving exports). Keras reads its backend once, when
# it is first imported: choose TensorFlow then, whatever the environment says, as every recipe needs.
if "keras" not in sys.modules:
    os.environ["KERAS_BACKEND"] = "tensorflow"
_import_tensorflow_quietly()  # every recipe comes here first

import keras  # noqa: E402

if keras.backend.backend() != "tensorflow":
    raise ImportError(
        f"The zoo needs Keras's TensorFlow backend, but Keras was already imported with the "
        f"{keras.backend.backend()!r} backend: import zoo before keras (or the layers package), or set "
        "KERAS_BACKEND=tensorflow; the layers package alone runs on other backends."
    )

# Registers the layers with Keras's serialization: a model file of the zoo loads after `import zoo` alone.
import layers  # noqa: E402,F401


def __getattr__(name):
    """`zoo.load` and `zoo.train` (zoo.api), imported at their first use: `import zoo` alone stays light."""
    if name in ("load", "train"):
        from zoo import api

        return getattr(api, name)
    raise AttributeError(f"module 'zoo' has no attribute {name!r}")
