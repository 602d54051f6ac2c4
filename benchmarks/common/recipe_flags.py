"""The training flags of the benchmarks' models, in one place: the benchmarks that train them and
those that time or trace their steps (`benchmarks.allocator`, `benchmarks.profile`) read them here."""

# benchmarks.translate: Multi30k de->en.
TRANSLATE = [
    "--dataset=multi30k", "--source=de", "--target=en", "--preset=small", "--train_steps=4000", "--max_tokens=4096",
    "--learning_rate=1e-3", "--warmup_steps=400", "--dropout=0.2", "--checkpoint_every=200", "--keep_checkpoints=5",
]

# benchmarks.lm: each dataset's flags (--dataset=<key> besides). The dtype is --mixed_precision=auto's.
LM = {
    "ptb": ["--preset=medium", "--batch_size=32", "--dropout=0.25", "--attention_dropout=0.1", "--weight_decay=0.1",
            "--learning_rate=1e-3", "--warmup_steps=400", "--schedule=cosine", "--train_steps=5600",
            "--random_offset=false", "--checkpoint_every=500", "--keep_checkpoints=12"],
    "tinyshakespeare": ["--preset=small", "--batch_size=32", "--segment_length=128", "--memory_length=128",
                        "--dropout=0.05", "--attention_dropout=0.0", "--learning_rate=2e-3", "--warmup_steps=200",
                        "--schedule=cosine", "--train_steps=2800", "--weight_decay=0.1",
                        "--random_offset=false"],
}

# benchmarks.objectives and benchmarks.electra_replacements: the shorter pretraining budget's values over PRETRAIN's.
PRETRAIN_SHORT = {"sequence_length": "128", "max_length": "128", "batch_size": "64", "warmup_steps": "300"}


def with_values(flags_, values):
    """`flags_` (--name=value strings) with the values of `values` (name -> value) put in or added."""
    named = {f.removeprefix("--").partition("=")[0]: f for f in flags_}
    named.update({name: f"--{name}={value}" for name, value in values.items()})
    return list(named.values())


# benchmarks.transfer: the encoder pretrained once for both fine-tunings (--train_steps and --objective besides).
PRETRAIN = ["--corpus=imdb_unsup,imdb", "--preset=small", "--sequence_length=512", "--batch_size=32",
            "--learning_rate=1e-3", "--warmup_steps=400", "--schedule=cosine",
            "--dropout=0", "--weight_decay=0.01", "--vocab_size=16000"]


# benchmarks.transfer with a published checkpoint (--init_from=<its folder> besides): each task's fine-tuning,
# BERT's fine-tuning defaults otherwise (recipes.sentiment). SST-2 trains on sst2_tune, whose held-out 5% is
# its validation split, and reports SST-2 dev from that run.
PUBLISHED = {
    "imdb": ["--dataset=imdb", "--max_length=512", "--epochs=1", "--batch_size=32", "--learning_rate=1e-4",
             "--warmup_steps=74", "--checkpoint_every=50", "--log_every=10"],
    "sst2": ["--dataset=sst2_tune", "--max_length=128", "--epochs=1", "--batch_size=32", "--checkpoint_every=500",
             "--log_every=100"],
}


def step_flags(name):
    """(recipe module, flags) of a benchmark model, for the programs that time its training steps
    (`benchmarks.allocator`, `benchmarks.profile`): the flags less the step count and any fixed dtype (auto decides).
    "finetune" is IMDB's fine-tuning of the published MiniLM checkpoint (benchmarks.common.minilm)."""
    if name == "finetune":
        from benchmarks.common.minilm import minilm_folder

        module, flags_ = "sentiment", [*PUBLISHED["imdb"], f"--init_from={minilm_folder()}"]
    else:
        module, flags_ = name, {
            "translate": TRANSLATE,
            "lm": ["--dataset=ptb", *LM["ptb"]],
            "pretrain": ["--corpus=sst2", "--vocab_size=8000",  # SST-2's sentences: a small corpus, a quick tokenizer
                         *[f for f in PRETRAIN if not f.startswith(("--corpus=", "--vocab_size="))]],
        }[name]
    return module, [f for f in flags_ if not f.startswith(("--train_steps=", "--mixed_precision=", "--epochs="))]
