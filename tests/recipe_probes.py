"""A warm recipe process for the suite's quick probes: `python -m tests.recipe_probes sentiment`.

Most fault tests start a recipe that must refuse its arguments before any work; a fresh process spends
most of its time on each of them starting TensorFlow. This process imports the recipe once and then runs one command
line per line of standard input ({"argv": [...], "env": {...}, "input": the command's standard input})
through the recipe's own entry point,
`recipes.driver.run` (absl's flag parsing, the `error:` lines, the exit status), answering each with
one JSON line: {"returncode", "stdout", "stderr"}. Flags go back to their defaults and the environment
to what it was between commands. An exception that escapes the driver is printed as its traceback, as
Python would, with return code 1. Only for commands that do not train: those refused before any work, and
the modes that read a trained run (config, eval, export, explain, generate, translate). A run that trains here
would leave its state (Keras, TensorFlow) to the next command.
"""

import contextlib
import ctypes
import importlib
import io
import json
import os
import signal
import sys
import traceback


def end_with_parent():
    """Asks Linux to end this process when the test process that started it ends, even killed (no EOF reaches
    this process's standard input while any other child of the test process holds that pipe open)."""
    if sys.platform.startswith("linux"):
        pr_set_pdeathsig = 1
        ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGKILL)  # a driver may handle SIGTERM


def serve(recipe_name):
    end_with_parent()
    from absl import flags

    from recipes import driver
    from zoo.training.driver import Recipe

    module = importlib.import_module(f"recipes.{recipe_name}")
    recipe = next(value for value in vars(module).values() if isinstance(value, Recipe))
    requests, answers = sys.stdin, sys.stdout
    for line in requests:
        request = json.loads(line)
        saved_environment = dict(os.environ)
        os.environ.update(request.get("env") or {})
        flags.FLAGS.unparse_flags()
        sys.argv = [f"recipes.{recipe_name}", *request["argv"]]
        out, err = io.StringIO(), io.StringIO()
        sys.stdin = io.StringIO(request.get("input") or "")
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                driver.run(recipe)
                returncode = 0
            except SystemExit as stop:
                if isinstance(stop.code, str):
                    print(stop.code, file=sys.stderr)
                returncode = stop.code if isinstance(stop.code, int) else int(stop.code is not None)
            except BaseException:  # what an uncaught exception does to a real process
                traceback.print_exc()
                returncode = 1
        os.environ.clear()
        os.environ.update(saved_environment)
        answers.write(json.dumps({"returncode": returncode, "stdout": out.getvalue(), "stderr": err.getvalue()}) + "\n")
        answers.flush()


if __name__ == "__main__":
    serve(sys.argv[1])
