r"""Machine translation with the encoder-decoder Transformer.

  python -m recipes.translate --dataset=multi30k --source=de --target=en --preset=small \
      --model_dir=runs/m30k_de_en --export_dir=saved_models/translate_de_en
  python -m recipes.translate --mode=eval --model_dir=runs/m30k_de_en --beam_size=5
  echo "Ein Mann fährt Fahrrad." | python -m recipes.translate --mode=translate --model_dir=runs/m30k_de_en
"""

import dataclasses
import json
import os
import sys
import time

from absl import app, flags

from recipes import common
from zoo import batching, datasets, export, tokenizer, translation
from zoo.distribute import is_chief, make_strategy, uses_xla
from zoo.evaluation import evaluate, write_summaries
from zoo.progress import Progress
from zoo.run_dir import RunDir, RunDirError
from zoo.training import Task, Trainer, TrainConfig

RECIPE = "translate"
MODES = ("train", "eval", "train_and_eval", "export", "translate")
DEFAULTS = TrainConfig(
    train_steps=5000,
    batch_size=512,
    max_tokens=6144,
    learning_rate=1e-3,
    warmup_steps=800,
    label_smoothing=0.1,
    checkpoint_every=500,
    log_every=50,
)

flags.DEFINE_enum("mode", "train_and_eval", MODES, "What to do.")
flags.DEFINE_string("source", "de", "Source language code.")
flags.DEFINE_string("target", "en", "Target language code.")
flags.DEFINE_string("eval_split", "test", "Split to evaluate (test, validation, or a dataset's own, e.g. test_2017_flickr).")
flags.DEFINE_integer("vocab_size", 8000, "Subword vocabulary size (per language when not shared).")
flags.DEFINE_bool("shared_vocabulary", True, "One vocabulary and embedding for both languages, else one per language.")
flags.DEFINE_bool("tie_embeddings", None, "Output projection = the target embedding matrix. Default: the preset's "
                  "(tied).")
flags.DEFINE_integer("max_tokens", None, "Token budget of a global training batch, padding included.")
flags.DEFINE_integer("max_length", None, "Tokens per source or target sentence. Default: the preset's.")
flags.DEFINE_float("dropout", None, "Dropout rate. Default: the preset's.")
flags.DEFINE_integer("beam_size", 5, "Beam size (1 = greedy search).")
flags.DEFINE_float("length_penalty", 0.6, "GNMT length penalty alpha of beam search (0 = none).")
flags.DEFINE_integer("num_return", 1, "Translations returned per sentence (n-best, best first) in --mode=translate.")
flags.DEFINE_integer("top_k", 0, "Sample from the k most likely tokens instead of searching (needs --beam_size=1).")
flags.DEFINE_float("top_p", 1.0, "Sample from the smallest set of tokens reaching this probability (needs --beam_size=1).")
flags.DEFINE_float("temperature", 1.0, "Sampling temperature.")
flags.DEFINE_integer("eval_batch_size", 100, lower_bound=1, help="Sentences per decoding batch.")
FLAGS = flags.FLAGS


@dataclasses.dataclass(frozen=True)
class Trained:
    """A trained run loaded back for eval, export or translation (float32)."""

    run: dict
    config: translation.TranslatorConfig
    model: object
    source_tokenizer: object
    target_tokenizer: object
    step: int


def model_config(preset, **overrides):
    return common.preset_config(translation.PRESETS, preset, **overrides)


def prepare_run(model_dir, identity, wanted, data, seed, chief):
    """The run's record and tokenizers: read back when resuming, else trained now (cased)."""
    os.makedirs(model_dir, exist_ok=True)
    run_dir = RunDir(model_dir)
    run = run_dir.read_run(RECIPE)
    if run is not None:
        if {k: run[k] for k in identity} != identity or run["model"] != dataclasses.asdict(wanted):
            raise RunDirError(
                f"{model_dir} holds a run of {run['dataset']} {run['source']}->{run['target']} with model "
                f"{run['model']}; resume it with the same --dataset/--source/--target/--preset/--vocab_size/"
                "--shared_vocabulary/--tie_embeddings/--max_length/--dropout, or use another --model_dir."
            )
        return run, run_dir.tokenizers(wanted.shared_vocabulary)
    source_file, target_file = run_dir.tokenizer_files(wanted.shared_vocabulary)
    if chief:
        if wanted.shared_vocabulary:
            texts = data.sources + data.targets
            tokenizer.save_tokenizer(tokenizer.train_tokenizer(texts, wanted.source_vocab_size, False, seed), model_dir)
        else:
            for texts, size, name in (
                (data.sources, wanted.source_vocab_size, source_file),
                (data.targets, wanted.target_vocab_size, target_file),
            ):
                tokenizer.save_tokenizer(tokenizer.train_tokenizer(texts, size, False, seed), model_dir, name)
    else:
        run_dir.wait_for(target_file)
    run = {"recipe": RECIPE, **identity, "model": dataclasses.asdict(wanted), "example": data.sources[0]}
    return run, run_dir.tokenizers(wanted.shared_vocabulary)


def train(model_dir, identity, wanted, train_config, epochs, max_examples, strategy):
    """Trains (or resumes) the run in model_dir; returns the training metrics."""
    data = datasets.load_translation(identity["dataset"], "train", identity["source"], identity["target"])
    data = datasets.subsample_pairs(data, max_examples, train_config.seed)
    chief = is_chief(strategy)
    run, (source_tok, target_tok) = prepare_run(model_dir, identity, wanted, data, train_config.seed, chief)
    config = translation.TranslatorConfig(**run["model"])
    sources = translation.source_rows(tokenizer.tokenize(source_tok, data.sources), config.max_length)
    targets = translation.target_rows(tokenizer.tokenize(target_tok, data.targets), config.max_length)
    lengths = [max(len(s), len(t) - 1) for s, t in zip(sources, targets)]
    if epochs is not None:  # batches hold max_tokens tokens, not batch_size sentences
        per_batch = min(train_config.batch_size, train_config.max_tokens // max(1, int(sum(lengths) / len(lengths))))
        train_config = dataclasses.replace(train_config, train_steps=max(1, round(epochs * len(lengths) / per_batch)))
    replicas = strategy.num_replicas_in_sync
    setup = {"max_examples": max_examples, "replicas": replicas, "strategy": type(strategy).__name__}
    RunDir(model_dir).record_training(run, train_config, setup, chief)
    if train_config.batch_size % replicas:
        raise ValueError(f"batch_size={train_config.batch_size} is not divisible by the {replicas} replicas.")
    plan = batching.training_plan(
        lengths, train_config.train_steps, train_config.batch_size, train_config.seed, replicas, train_config.max_tokens
    )
    fields = {"source": sources, "target": targets}

    def dataset_fn(context, start_step):
        per_pipeline = replicas // context.num_input_pipelines
        part = batching.pipeline_part(plan, context.num_input_pipelines, context.input_pipeline_id, per_pipeline)
        return batching.plan_dataset(part, fields, skip=start_step * per_pipeline)

    task = Task(
        build_model=lambda: translation.build_translator(config),
        dataset=dataset_fn,
        loss=translation.translation_loss(
            train_config.label_smoothing, skip_padding=not uses_xla(strategy, train_config.jit_compile)
        ),
    )
    metrics = Trainer(task, train_config, model_dir, strategy).train()
    if chief and metrics is not None:
        RunDir(model_dir).update_metrics(train=metrics)
    return metrics


def load_trained(model_dir):
    """The newest checkpoint of a run, rebuilt in float32 whatever it trained in."""
    run_dir = RunDir(model_dir)
    run = run_dir.require_run(RECIPE)
    config = translation.TranslatorConfig(**run["model"])
    model, step = run_dir.load_model(lambda: translation.build_translator(config), common.averaged())
    return Trained(run, config, model, *run_dir.tokenizers(config.shared_vocabulary), step)


def decode_config():
    beam_size = FLAGS.beam_size
    return translation.DecodeConfig(
        beam_size=beam_size,
        length_penalty=FLAGS.length_penalty,
        num_return=FLAGS.num_return,
        top_k=FLAGS.top_k,
        top_p=FLAGS.top_p,
        temperature=FLAGS.temperature,
        seed=FLAGS.seed,
    )


def translate_corpus(trained, sources, decode, batch_size, jit_compile=False, cached=True, description="translate"):
    """Translations (best hypothesis) of every source sentence, in order; batches of similar lengths."""
    import numpy as np
    import tensorflow as tf

    rows = translation.source_rows(tokenizer.tokenize(trained.source_tokenizer, sources), trained.config.max_length)
    plan = batching.evaluation_plan([len(r) for r in rows], batch_size)
    batches = batching.plan_dataset(plan, {"source": rows, "index": np.arange(len(rows))})
    search = tf.function(
        lambda ids: translation.translate_ids(trained.model, ids, decode, cached=cached), jit_compile=jit_compile
    )
    hypotheses = [""] * len(rows)
    progress = Progress(len(rows), unit=f"{description} sentence")
    done = 0
    for batch in batches:
        tokens, _ = search(batch["source"])
        texts = translation.text_from_ids(trained.target_tokenizer, tokens[:, 0])
        for i, text in zip(batch["index"].numpy(), texts.numpy()):
            hypotheses[i] = text.decode("utf-8") if sources[i].strip() else ""
        done += len(texts)
        progress.update(done)
    return hypotheses


def run_eval(model_dir, split, decode, batch_size, jit_compile=False):
    import sacrebleu

    trained = load_trained(model_dir)
    run = trained.run
    data = datasets.load_translation(run["dataset"], split, run["source"], run["target"])
    began = time.time()
    hypotheses = translate_corpus(trained, data.sources, decode, batch_size, jit_compile, description=split)
    seconds = time.time() - began
    name = f"hypotheses.{split}.{run['source']}-{run['target']}.txt"
    with open(os.path.join(model_dir, name + ".tmp"), "w", encoding="utf-8") as f:
        f.writelines(h + "\n" for h in hypotheses)
    os.replace(os.path.join(model_dir, name + ".tmp"), os.path.join(model_dir, name))
    bleu = sacrebleu.corpus_bleu(hypotheses, [data.targets])
    chrf = sacrebleu.corpus_chrf(hypotheses, [data.targets])
    rows = {
        "source": translation.source_rows(tokenizer.tokenize(trained.source_tokenizer, data.sources), trained.config.max_length),
        "target": translation.target_rows(tokenizer.tokenize(trained.target_tokenizer, data.targets), trained.config.max_length),
    }
    plan = batching.evaluation_plan([len(r) for r in rows["target"]], batch_size)
    totals = evaluate(translation.translation_metrics(trained.model), batching.plan_dataset(plan, rows), len(plan), split)
    loss = totals["loss"] / totals["tokens"]
    result = {"bleu": bleu.score, "chrf": chrf.score, "loss": loss}
    write_summaries(model_dir, f"eval_{split}", trained.step, result)
    result.update(
        bleu_signature=str(bleu.format(signature=True)) if hasattr(bleu, "format") else str(bleu),
        sentences=len(hypotheses),
        decode=dataclasses.asdict(decode),
        decode_seconds=seconds,
        step=trained.step,
        average_checkpoints=common.averaged(),
        hypotheses=name,
    )
    RunDir(model_dir).update_metrics(**{f"eval_{split}": result})
    print(f"{split}: sacreBLEU {bleu.score:.2f}, chrF {chrf.score:.2f}, loss {loss:.4f} on {len(hypotheses)} "
          f"sentences (decoding {seconds:.1f} s); hypotheses in {os.path.join(model_dir, name)}")
    return result


def run_export(model_dir, export_dir, decode, jit_compile=False):
    trained = load_trained(model_dir)
    server = translation.TranslatorServer(
        trained.model, trained.source_tokenizer, trained.target_tokenizer, decode, jit_compile
    )
    run = trained.run
    path = export.export(
        server,
        {"serving_default": server.serve},
        export_dir,
        {"text": [run["example"], ""]},
        metadata={
            "recipe": RECIPE,
            **{k: run[k] for k in ("dataset", "source", "target", "model")},
            "decode": dataclasses.asdict(decode),
            "step": trained.step,
        },
    )
    print(f"Exported step {trained.step} to {path}")
    return path


def run_translate(model_dir, decode, batch_size, lines_in=sys.stdin, out=sys.stdout):
    """Reads source sentences, one per line, and writes one line per input line: the translation,
    or with --num_return > 1 a JSON object {"translations": [...], "scores": [...]}."""
    import tensorflow as tf

    trained = load_trained(model_dir)
    server = translation.TranslatorServer(trained.model, trained.source_tokenizer, trained.target_tokenizer, decode)

    def flush(batch):
        translations, scores = server.translate_n_best(tf.constant(batch))
        for texts, values in zip(translations.numpy(), scores.numpy()):
            texts = [t.decode("utf-8") for t in texts]
            if decode.num_return == 1:
                out.write(texts[0] + "\n")
            else:
                out.write(json.dumps({"translations": texts, "scores": [float(v) for v in values]}, ensure_ascii=False))
                out.write("\n")
        out.flush()

    batch = []
    for line in lines_in:
        batch.append(line.rstrip("\n"))
        if len(batch) == batch_size:
            flush(batch)
            batch = []
    if batch:
        flush(batch)


def main(argv):
    del argv
    mode, model_dir = FLAGS.mode, FLAGS.model_dir
    if not model_dir:
        raise app.UsageError("--model_dir is required.")
    training, evaluating = mode in ("train", "train_and_eval"), mode in ("eval", "train_and_eval")
    exporting = mode == "export" or (training and FLAGS.export_dir)
    if exporting and not FLAGS.export_dir:
        raise app.UsageError("--mode=export needs --export_dir.")
    decode = decode_config()  # bad search flags fail before any training
    strategy = None
    if training:
        if not FLAGS.dataset:
            raise app.UsageError("--dataset is required to train (multi30k or tfds:<name>).")
        if FLAGS.dataset == "multi30k":  # checks the pair, and a damaged evaluation file, before training
            for split in {"validation", FLAGS.eval_split if evaluating else "validation"}:
                datasets.load_translation("multi30k", split, FLAGS.source, FLAGS.target)
        identity = {"dataset": FLAGS.dataset, "source": FLAGS.source, "target": FLAGS.target}
        wanted = model_config(
            FLAGS.preset,
            source_vocab_size=FLAGS.vocab_size,
            target_vocab_size=FLAGS.vocab_size,
            shared_vocabulary=FLAGS.shared_vocabulary,
            tie_embeddings=FLAGS.tie_embeddings,
            max_length=FLAGS.max_length,
            dropout=FLAGS.dropout,
        )
        train_config, epochs = common.train_config(DEFAULTS)
        if FLAGS.max_tokens is not None:
            train_config = dataclasses.replace(train_config, max_tokens=FLAGS.max_tokens)
        strategy = make_strategy(FLAGS.strategy, FLAGS.cpu_replicas, FLAGS.tpu)
    with common.hold_model_dir(mode, strategy):
        if training:
            train(model_dir, identity, wanted, train_config, epochs, FLAGS.max_examples, strategy)
            if not is_chief(strategy):
                return
        if evaluating:
            run_eval(model_dir, FLAGS.eval_split, decode, FLAGS.eval_batch_size, FLAGS.jit_compile)
        if exporting:
            run_export(model_dir, FLAGS.export_dir, decode, FLAGS.jit_compile)
        if mode == "translate":
            run_translate(model_dir, decode, FLAGS.eval_batch_size)


if __name__ == "__main__":
    common.run(main)
