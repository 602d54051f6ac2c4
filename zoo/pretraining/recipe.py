"""The pretraining recipe: BERT's masked LM (default) or ELECTRA's replaced-token detection of the classifier's
encoder, on documents packed into full sequences, or masked-LM training continued from a published checkpoint;
run by zoo.training.driver from the command line (recipes/pretrain.py) or from Python (zoo.train("pretrain",
...)). `zoo.train("sentiment", init_from=MODEL_DIR)` fine-tunes the result."""

import dataclasses
import functools

import tensorflow as tf

from zoo.data import batching, tokenizer, word_embedding, word_tokenizer
from zoo.classifier import run_config as classifier_config
from zoo.pretraining import checkpoint_weights, data as pretraining_data, masks as pretraining_masks
from zoo.pretraining import model as pretraining, pretrained, published, run_config
from zoo.pretraining.run_config import PretrainRunConfig
from zoo.training import driver, evaluation, run_settings
from zoo.training.config import Task
from zoo.training.distribute import is_chief
from zoo.training.evaluation import write_summaries

RECIPE = pretrained.RECIPE


# Shortcut -> config field, beside zoo.training.run_settings.SHORTCUTS.
SHORTCUTS = {"corpus": "data.corpus", "document_per_file": "data.document_per_file", "text_column": "data.text_column",
             "eval_fraction": "data.eval_fraction", "init_from": "setup.init_from",
             **{name: f"model.{name}" for name in ("objective", "sequence_length", "mask_rate", "generator_scale")},
             **{name: f"model.encoder.{name}" for name in ("vocab_size", "max_length", "dropout", "word_vectors",
                                                           "freeze_word_vectors")}}


def base_config(preset, init_from, record=None):
    """The run's base config: the preset's (None: small), or a published checkpoint's that continues its masked-LM
    training (its shape and vocabulary: no preset goes with it). model.sequence_length follows
    model.encoder.max_length unless set (PretrainRunConfig.FOLLOWS)."""
    if init_from is None:
        return run_config.base(preset or "small")
    if preset is not None:
        raise ValueError("--preset cannot be set with --init_from: the model's shape and vocabulary come from the "
                         "checkpoint. Leave it out.")
    checkpoint = published.read_checkpoint(init_from)
    model = pretraining.PretrainConfig(encoder=published.encoder_config(checkpoint),
                                       **checkpoint_weights.special_ids(checkpoint))
    return run_config.base(preset, init_from, model)


def documents_of(config, bad_rows="error"):
    """(documents, held-out mask) of a run's config: its corpora, split by its seed and eval fraction."""
    data = config.data
    documents = pretraining_data.load_corpora(config.corpus_specs, data.document_per_file, bad_rows=bad_rows)
    return documents, pretraining_data.held_out_mask(documents.count, data.eval_fraction, config.train.seed)


def prepare_run(folder, config, chief):
    """The run's config, training documents, tokenizer and word plan (zoo.data.word_embedding.WordPlan, None for
    subwords): read back when resuming, else made now (trained on the corpus, its words with
    model.encoder.words, or the published checkpoint's with setup.init_from)."""
    init_from, seed, model_dir = config.setup.init_from, config.train.seed, folder.path
    documents, held = documents_of(config, config.data.bad_rows)  # every row read: a bad one is refused now
    run_settings.check_same_files(folder, RECIPE, PretrainRunConfig, documents.digest)
    # The word vocabulary ([MASK] included) of the training documents, and the embedding the vectors start: a bad
    # vectors file is refused before any write, and a resumed run must find the matrix it started from.
    words, encoder = None, config.model.encoder
    if encoder.words:
        record = folder.read_record(RECIPE, PretrainRunConfig)
        words = word_embedding.plan_words(
            (document for document, out in zip(documents, held) if not out), encoder.vocab_size, encoder.word_vectors,
            encoder.min_vector_coverage, seed, mask=True, scaled=encoder.embedding != "normalized",
            coverage_setting="--config.model.encoder.min_vector_coverage", vectors_setting="model.encoder.word_vectors",
            started=record and record.derived.get("word_vectors"), model_dir=model_dir)
        encoder = encoder.with_words(words, "model.encoder")
        config = dataclasses.replace(config, model=dataclasses.replace(config.model, encoder=encoder))
    model = config.model

    def write_tokenizer():
        if words is not None:
            word_tokenizer.save_vocabulary(words.words, model_dir)
        elif init_from:
            checkpoint = published.read_checkpoint(init_from)
            tokenizer.save_wordpiece(checkpoint.vocabulary, checkpoint.lowercase, checkpoint.strip_accents, model_dir)
        else:  # named corpora (no files, digest None) are in memory: the tokenizer samples all their training texts
            sample = [d for d, h in zip(documents, held) if not h] if documents.digest is None else \
                documents.sample(~held, tokenizer.MAX_TRAINING_CHARACTERS, seed)
            tokenizer.save_tokenizer(tokenizer.train_tokenizer(sample, model.encoder.vocab_size, seed=seed,
                                                               user_symbols=(pretraining.MASK_TOKEN,)), model_dir)

    last = word_tokenizer.WORDS_FILE if words is not None else \
        tokenizer.WORDPIECE_CONFIG_FILE if init_from else tokenizer.TOKENIZER_FILE
    sized = ("model.encoder.vocab_size", "model.encoder.embedding_dim") if words is not None else ()
    config = run_settings.start_run(folder, RECIPE, config, write_tokenizer, last, chief, sized)
    derived = {"files": {"digest": documents.digest, "bad_rows_skipped": documents.skipped}} if documents.digest else {}
    if words is not None:
        derived["word_vectors"] = words.derived
    return config, derived, (documents, held), folder.tokenizer(), words


def packed_rows(tok, documents, keep, config, model_dir, name):
    """The kept documents packed into rows of config.sequence_length (`pretraining_data.PackedRows`), their ids
    from the token cache."""
    rows = pretraining_data.token_rows(documents, keep, tok.tokenize, tokenizer.files_key(model_dir),
                                       config.separator_id, name)
    rows.check_ids(config.encoder.vocab_size)
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


def prepare(run, config, strategy):
    """The training run (`driver.Prepared`): its record, documents and tokenizer, the documents packed
    into sequences, the batch plan and the Task. With `init_from` (a published checkpoint), a fresh run
    starts from its encoder and masked-LM head."""
    run_config, derived, (documents, held), tok, words = prepare_run(run.folder, config, is_chief(strategy))
    config, init_from = run_config.model, run_config.setup.init_from
    print(f"Packing {int((~held).sum())} documents into sequences of {config.sequence_length} tokens.", flush=True)
    rows = packed_rows(tok, documents, ~held, config, run.model_dir, "training")
    train_config = run_settings.with_epochs(run.train, run.epochs, len(rows))
    replicas = strategy.num_replicas_in_sync
    plan = batching.training_plan(rows.lengths, train_config.train_steps, train_config.batch_size,
                                  train_config.seed, replicas)
    task = Task(build_model=lambda: pretraining.build_pretrainer(config),
                dataset=batching.planned_dataset_fn(plan, replicas, lambda part, skip, pipeline_id: masked_dataset(
                    rows, part, config, train_config.seed, pipeline_id, skip=skip)),
                loss=pretraining.pretraining_loss(config, train_config.label_smoothing),
                initialize=pretrained.pretrainer_initializer(init_from) if init_from else
                words.initializer(pretraining.token_table) if words is not None else None)
    derived["sequences"] = len(rows)
    return driver.Prepared(dataclasses.replace(run_config, train=train_config), derived, task)


def evaluate(run, config):
    """Masked-token accuracy and perplexity (and ELECTRA's detection accuracy) on the held-out documents, in batches
    of the eval section's batch_size."""
    folder, average = run.folder, run.average_checkpoints
    model_dir, trained = folder.path, pretrained.load_pretrained(folder, finished=False, average=average)
    documents, held = documents_of(trained.record.config)
    rows = packed_rows(trained.tokenizer, documents, held, trained.config, model_dir, "held-out")
    plan = batching.evaluation_plan(rows.lengths, config.eval.batch_size)
    batches = masked_dataset(rows, plan, trained.config, seed=trained.record.config.train.seed + 1, stream_id=0)
    totals = evaluation.evaluate(pretraining.pretraining_metrics(trained.model), batches, len(plan),
                                 description="held-out")
    result = pretraining.summarize(totals)
    write_summaries(model_dir, "eval_held_out", trained.step, result)
    result.update(sequences=len(rows), documents=int(held.sum()), step=trained.step, average_checkpoints=average)
    folder.update_metrics(eval_held_out=result)
    print("held-out: " + ", ".join(f"{k} {v:.4f}" for k, v in result.items() if isinstance(v, float)))
    return result


def server(loaded, config):
    module = pretrained.EncoderServer(loaded.model, loaded.tokenizer, loaded.config)
    return driver.Serving(module, {"serving_default": module.encode, "encode": module.encode,
                                   "fill_mask": module.fill_mask}, {"text": ["a wonderful, moving film", ""]},
                          metadata={"recipe": RECIPE, "corpus": list(loaded.record.config.data.corpus),
                                    "step": loaded.step, "model": dataclasses.asdict(loaded.config)})


def finish(config, base, mode):
    """The published encoder's shape and vocabulary kept (whatever set its fields), setup.init_from as a path made
    absolute, and corpora to train on."""
    if config.setup.init_from:
        classifier_config.check_encoder(config.model.encoder, base.model.encoder, "model.encoder")
        config = dataclasses.replace(config, setup=dataclasses.replace(
            config.setup, init_from=published.normalize(config.setup.init_from)))
    if mode != "config" and not config.data.corpus:
        raise ValueError("--corpus is required to train (e.g. --corpus=imdb_unsup,imdb), or data.corpus in the "
                         "config.")
    return config


MASKED_FIGURES = ("masked_accuracy", "masked_perplexity")  # evaluate's of the held-out documents

PRETRAIN = driver.Recipe(
    name=RECIPE,
    config_class=PretrainRunConfig,
    base=base_config,
    shortcuts=SHORTCUTS,
    prepare=prepare,
    load=functools.partial(pretrained.load_pretrained, finished=False),
    server=server,
    evaluate=evaluate,
    reads={"eval": {"batch_size": "eval.batch_size"}},
    finish=finish,
    # ELECTRA's replaced-token detection is scored beside the masked tokens (pretraining.summarize).
    figures=driver.Figures({"mlm": MASKED_FIGURES, "electra": (*MASKED_FIGURES, "detection_accuracy", "replaced_recall",
                                                               "detection_loss")},
                           lambda config: "held_out", kind="model.objective"),
)
