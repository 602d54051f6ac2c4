"""Runnable programs (absl flags): sentiment, translation, Transformer-XL LM, pretraining.

Importing this package starts a program (`python -m recipes.X` imports it first), so it sets up the process
as a recipe needs, which the library (zoo/, layers/) leaves to its caller: Keras's TensorFlow backend, chosen
whatever the environment says (Keras reads it once, when first imported), and TensorFlow imported without its
C++ start-up lines on the terminal unless they are asked for.
"""

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


# Every recipe runs on TensorFlow (tf.data, tf.distribute, TF Serving exports): a KERAS_BACKEND the user keeps
# for the layers' work on another backend does not reach the recipes' Keras.
if "keras" not in sys.modules:
    os.environ["KERAS_BACKEND"] = "tensorflow"
_import_tensorflow_quietly()
