"""The training flags of the benchmarks' models, in one place: the benchmarks that train them and
those that measure their steps (`benchmarks.allocator`) read them here."""

# benchmarks.translate: Multi30k de->en.
TRANSLATE = [
    "--dataset=multi30k", "--source=de", "--target=en", "--preset=small", "--train_steps=2000", "--max_tokens=4096",
    "--learning_rate=1e-3", "--warmup_steps=400", "--dropout=0.2",
]

# benchmarks.lm: each dataset's flags (--dataset=<key> besides). The dtype is --mixed_precision=auto's (bfloat16
# on the AVX512-BF16 machines of the recorded Tiny Shakespeare figures, which named it).
LM = {
    "ptb": ["--preset=small", "--batch_size=32", "--dropout=0.2", "--learning_rate=2e-3", "--warmup_steps=200",
            "--schedule=cosine", "--train_steps=3200", "--random_offset=false"],
    "tinyshakespeare": ["--preset=small", "--batch_size=32", "--segment_length=128", "--memory_length=128",
                        "--dropout=0.05", "--attention_dropout=0.0", "--learning_rate=2e-3", "--warmup_steps=200",
                        "--schedule=cosine", "--train_steps=2800", "--weight_decay=0.1",
                        "--random_offset=false"],
}
