r"""Self-supervised pretraining of the classifier's encoder on unlabeled text.

BERT's masked LM (default) or ELECTRA's replaced-token detection, on documents packed
into full sequences; `recipes.sentiment --init_from=MODEL_DIR` fine-tunes the result. With
--init_from, masked-LM training continues from a published checkpoint (domain-adaptive
pretraining, Gururangan et al. 2020) with its WordPiece vocabulary and [MASK].

  python -m recipes.pretrain --corpus=imdb_unsup,imdb --preset=small --model_dir=runs/pretrain_imdb
  python -m recipes.pretrain --corpus=imdb_unsup --init_from=hf:google/electra-small-discriminator \
      --sequence_length=128 --model_dir=runs/dapt
  python -m recipes.pretrain --mode=eval --model_dir=runs/pretrain_imdb
  python -m recipes.pretrain --mode=export --model_dir=runs/pretrain_imdb --export_dir=saved_models/encoder
"""

import dataclasses
import functools

import tensorflow as tf
from absl import app, flags

from recipes import common, driver
from zoo.data import batching, tokenizer
from zoo.pretraining import checkpoint_weights, pretrained, model as pretraining, data as pretraining_data, masks as pretraining_masks, published
from zoo.training.distribute import is_chief
from zoo.training.evaluation import evaluate, write_summaries
from zoo.runs.run_dir import RunDir
from zoo.training.config import Task, TrainConfig

RECIPE = "pretrain"
DEFAULTS = TrainConfig(
    train_steps=6000, batch_size=32, learning_rate=1e-3, warmup_steps=400, schedule="cosine", label_smoothing=0.0,
    weight_decay=0.01, checkpoint_every=250, log_every=50,
)

common.define_mode()
flags.DEFINE_list("corpus", None, "Comma-separated corpora: imdb_unsup, imdb, sst2 (training texts), "
                  "tfds:<name>, or your own files: text:<glob> (a document a line), csv:<glob>, jsonl:<glob> "
                  "(a document a row, --text_column).")
flags.DEFINE_bool("document_per_file", False, "text:<glob> files hold one document each (else one per line).")
flags.DEFINE_enum("objective", None, list(pretraining.OBJECTIVES), "mlm (masked LM) or electra (replaced-token "
                  "detection). Default: mlm. Caution: in every electra run here (small encoder, at most 2,000 steps, about "
                  "16M tokens on 2 CPU cores) the discriminator stayed near its prior: its generator's samples soon "
                  "follow the unigram distribution, which only context tells apart (README): use mlm.")
flags.DEFINE_integer("sequence_length", None, "Tokens per packed sequence, <s> included. Default: the preset's "
                     "max_length, the longest text fine-tuning will give it.")
flags.DEFINE_float("mask_rate", None, "Share of the tokens chosen for masking. Default: 0.15.")
flags.DEFINE_float("generator_scale", None, "ELECTRA: the generator's width as a share of the encoder's. Default: 0.5.")
flags.DEFINE_integer("vocab_size", 16000, "Size of the SentencePiece vocabulary trained on the corpus.")
flags.DEFINE_integer("max_length", None, "Longest text the encoder will take when fine-tuned. Default: the preset's.")
flags.DEFINE_float("dropout", None, "Dropout rate. Default: the preset's.")
flags.DEFINE_string("init_from", None, "Continue masked-LM training from a published BERT/ELECTRA checkpoint (a "
                    "Hugging Face folder, hf:ORG/NAME[@REVISION], keras_hub:PRESET): its encoder, its masked-LM head "
                    "where it has one (else a new head tied to the embedding), its vocabulary and [MASK]. --preset "
                    "and --vocab_size come from it; --max_length may shorten its positions.")
flags.DEFINE_float("eval_fraction", 0.01, lower_bound=0.0, upper_bound=0.5,
                   help="Share of the documents held out for --mode=eval.")
FLAGS = flags.FLAGS


@dataclasses.dataclass(frozen=True)
class Settings:
    """A pretraining run as the flags ask for it."""

    run: common.RunSettings
    model: pretraining.PretrainConfig | None  # training only
    corpus: list | None
    document_per_file: bool
    eval_fraction: float
    init_from: str | None  # a published checkpoint to continue from
    text_column: str  # csv:, jsonl: corpora
    bad_rows: str


def pretrain_config(preset, objective, sequence_length, mask_rate, generator_scale, **encoder):
    if preset not in pretraining.PRESETS:
        raise ValueError(f"Unknown preset {preset!r}: use one of {sorted(pretraining.PRESETS)}.")
    base = pretraining.PRESETS[preset]
    encoder = dataclasses.replace(base.encoder, **{k: v for k, v in encoder.items() if v is not None})
    fields = dict(objective=objective, sequence_length=sequence_length, mask_rate=mask_rate,
                  generator_scale=generator_scale)
    return dataclasses.replace(base, encoder=encoder, **{k: v for k, v in fields.items() if v is not None})


def published_config(spec, objective, sequence_length, mask_rate, max_length, dropout):
    """The PretrainConfig that continues a published checkpoint's masked-LM training."""
    given = [f"--{name}" for name in ("preset", "vocab_size") if FLAGS[name].present]
    if given:
        raise ValueError(f"{' and '.join(given)} cannot be set with --init_from: the model's shape and "
                         "vocabulary come from the checkpoint. Leave them out.")
    if objective not in (None, "mlm"):
        raise ValueError(f"--objective={objective} cannot continue a published checkpoint: --init_from continues "
                         "masked-LM training (--objective=mlm).")
    checkpoint = published.read_checkpoint(spec)
    return pretraining.PretrainConfig(
        encoder=published.encoder_config(checkpoint, max_length, dropout),
        sequence_length=sequence_length, **({} if mask_rate is None else {"mask_rate": mask_rate}),
        **checkpoint_weights.special_ids(checkpoint),
    )


def documents_of(run, bad_rows="error"):
    """(documents, held-out mask) of a run: its corpora, split by its seed and eval fraction."""
    documents = pretraining_data.load_corpora(run["corpus"], run["document_per_file"],
                                              run.get("text_column", "text"), bad_rows)
    return documents, pretraining_data.held_out_mask(documents.count, run["eval_fraction"], run["seed"])


def prepare_run(model_dir, model, corpus, document_per_file, eval_fraction, seed, chief, init_from=None,
                text_column="text", bad_rows="error"):
    """The run's record, training documents and tokenizer: read back when resuming, else made now
    (trained on the corpus, or the published checkpoint's with `init_from`)."""
    fresh = {"recipe": RECIPE, "corpus": corpus, "document_per_file": document_per_file,
             "eval_fraction": eval_fraction, "seed": seed, "model": dataclasses.asdict(model), "init_from": init_from}
    if any(name.partition(":")[0] in ("csv", "jsonl") for name in corpus):
        fresh["text_column"] = text_column
    documents, held = documents_of(fresh, bad_rows)  # every row read: a bad one is refused before any write
    common.check_same_files(model_dir, RECIPE, documents.digest)

    def write_tokenizer():
        if init_from:
            checkpoint = published.read_checkpoint(init_from)
            tokenizer.save_wordpiece(checkpoint.vocabulary, checkpoint.lowercase, checkpoint.strip_accents, model_dir)
            return
        if documents.digest is None:  # named corpora, in memory: the tokenizer samples all training texts
            sample = [d for d, h in zip(documents, held) if not h]
        else:
            sample = documents.sample(~held, tokenizer.MAX_TRAINING_CHARACTERS, seed)
        proto = tokenizer.train_tokenizer(sample, model.encoder.vocab_size, seed=seed,
                                          user_symbols=(pretraining.MASK_TOKEN,))
        tokenizer.save_tokenizer(proto, model_dir)

    last = tokenizer.WORDPIECE_CONFIG_FILE if init_from else tokenizer.TOKENIZER_FILE
    run = common.start_run(model_dir, RECIPE, fresh, write_tokenizer, last, chief)
    if documents.digest:
        run = {**run, "files": {"digest": documents.digest, "bad_rows_skipped": documents.skipped}}
    return run, (documents, held), RunDir(model_dir).tokenizer()


def packed_rows(tok, documents, keep, config, model_dir, name):
    """The kept documents packed into rows of config.sequence_length (`pretraining_data.PackedRows`), their ids
    from the token cache."""
    rows = pretraining_data.token_rows(documents, keep, tok.tokenize, tokenizer.files_key(model_dir),
                                       config.separator_id, name)
    return pretraining_data.PackedRows(rows, config.sequence_length, config.start_id)


def masked_dataset(rows, plan, config, seed, stream_id, skip=0):
    """plan_dataset of packed rows, each batch masked by `pretraining_masks.with_masks` with a seed
    made of (seed, stream_id, the batch's index): the same masks whatever step a run resumes at."""
    dataset = batching.plan_dataset(plan, {"token_ids": rows}, skip=skip,
                                    max_length=config.encoder.max_length).enumerate(start=skip)
    base = tf.constant(stream_id * 2**32, tf.int64)

    def masked(index, batch):
        batch_seed = tf.stack([tf.constant(seed, tf.int64), base + index])
        return pretraining_masks.with_masks(batch["token_ids"], batch_seed, config)

    return dataset.map(masked, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)


def prepare(settings, strategy):
    """The training run (`driver.Prepared`): its record, documents and tokenizer, the documents packed
    into sequences, the batch plan and the Task. With `init_from` (a published checkpoint), a fresh run
    starts from its encoder and masked-LM head."""
    shared = settings.run
    run, (documents, held), tok = prepare_run(
        shared.model_dir, settings.model, settings.corpus, settings.document_per_file, settings.eval_fraction,
        shared.train.seed, is_chief(strategy), settings.init_from, settings.text_column, settings.bad_rows)
    config = pretraining.PretrainConfig(**run["model"])
    print(f"Packing {int((~held).sum())} documents into sequences of {config.sequence_length} tokens.", flush=True)
    rows = packed_rows(tok, documents, ~held, config, shared.model_dir, "training")
    train_config = common.with_epochs(shared.train, shared.epochs, len(rows))
    replicas = strategy.num_replicas_in_sync
    plan = batching.training_plan(rows.lengths, train_config.train_steps, train_config.batch_size,
                                  train_config.seed, replicas)
    task = Task(
        build_model=lambda: pretraining.build_pretrainer(config),
        dataset=batching.planned_dataset_fn(plan, replicas, lambda part, skip, pipeline_id: masked_dataset(
            rows, part, config, train_config.seed, pipeline_id, skip=skip)),
        loss=pretraining.pretraining_loss(config, train_config.label_smoothing),
        initialize=pretrained.pretrainer_initializer(settings.init_from) if settings.init_from else None,
    )
    return driver.Prepared(run, train_config, {"sequences": len(rows)}, task)


def run_eval(model_dir, batch_size=64, average=1):
    """Masked-token accuracy and perplexity (and ELECTRA's detection accuracy) on the held-out documents."""
    trained = pretrained.load_pretrained(model_dir, finished=False, average=average)
    documents, held = documents_of(trained.run)
    rows = packed_rows(trained.tokenizer, documents, held, trained.config, model_dir, "held-out")
    plan = batching.evaluation_plan(rows.lengths, batch_size)
    batches = masked_dataset(rows, plan, trained.config, seed=trained.run["seed"] + 1, stream_id=0)
    totals = evaluate(pretraining.pretraining_metrics(trained.model), batches, len(plan), description="held-out")
    result = pretraining.summarize(totals)
    write_summaries(model_dir, "eval_held_out", trained.step, result)
    result.update(sequences=len(rows), documents=int(held.sum()), step=trained.step, average_checkpoints=average)
    RunDir(model_dir).update_metrics(eval_held_out=result)
    print("held-out: " + ", ".join(f"{k} {v:.4f}" for k, v in result.items() if isinstance(v, float)))
    return result


def server(loaded, settings):
    module = pretrained.EncoderServer(loaded.model, loaded.tokenizer, loaded.config)
    return driver.Serving(
        module, {"serving_default": module.encode, "encode": module.encode, "fill_mask": module.fill_mask},
        {"text": ["a wonderful, moving film", ""]},
        metadata={"recipe": RECIPE, "corpus": loaded.run["corpus"], "step": loaded.step, "model": loaded.run["model"]},
    )


def config_from_flags(mode):
    """Settings from the flags; every flag is checked here, before any work."""
    model = init_from = None
    if mode in common.TRAINING_MODES:
        if not FLAGS.corpus:
            raise app.UsageError("--corpus is required to train (e.g. --corpus=imdb_unsup,imdb).")
        if not 0.0 < FLAGS.eval_fraction < 1.0:
            raise ValueError(f"--eval_fraction={FLAGS.eval_fraction} must be in (0, 1).")
        init_from = published.normalize(FLAGS.init_from) if FLAGS.init_from else None
        if init_from:
            model = published_config(init_from, FLAGS.objective, FLAGS.sequence_length, FLAGS.mask_rate,
                                     FLAGS.max_length, FLAGS.dropout)
        else:
            model = pretrain_config(
                FLAGS.preset, FLAGS.objective, FLAGS.sequence_length, FLAGS.mask_rate, FLAGS.generator_scale,
                vocab_size=FLAGS.vocab_size, max_length=FLAGS.max_length, dropout=FLAGS.dropout,
            )
    return Settings(common.run_settings(DEFAULTS), model, FLAGS.corpus, FLAGS.document_per_file, FLAGS.eval_fraction,
                    init_from, FLAGS.text_column, FLAGS.bad_rows)


PRETRAIN = driver.Recipe(
    name=RECIPE,
    config_from_flags=config_from_flags,
    prepare=prepare,
    load=functools.partial(pretrained.load_pretrained, finished=False),
    server=server,
    evaluate=lambda settings: run_eval(settings.run.model_dir, settings.run.batch_size or 64,
                                       settings.run.average_checkpoints),
)

if __name__ == "__main__":
    driver.run(PRETRAIN)
