"""Analytic compute counts that the benchmarks set beside their timings (importable without
the recipes and their flags)."""

import math


def multiply_adds(config, positions, keys, scored, vocab_size):
    """Multiply-adds of one forward pass of the language model (`config`, an LMConfig): `positions` new
    positions, each attending over `keys` keys, `scored` of them projected onto the vocabulary (projections of
    the new positions, attention's content and position scores and its weighted values, the feed-forward
    network, the output layer)."""
    d, f = config.hidden_dim, config.intermediate_dim
    per_position = config.num_layers * (4 * d * d + 2 * d * f + 3 * keys * d)
    return positions * per_position + scored * vocab_size * d


def encoder_multiply_adds(config, length, predicted, vocab_size):
    """Multiply-adds of one forward pass of the classifier's encoder (`zoo.classifier.model.build_encoder`, `config`
    a ClassifierConfig) over one sequence of `length` positions, `predicted` of them through the masked-LM head (a
    width x width Dense, then the tied projection onto the vocabulary): per position and layer the
    Q, K, V, O projections, the scores and weighted values over `length` keys, the feed-forward."""
    d, f = config.hidden_dim, config.intermediate_dim
    per_position = config.num_layers * (4 * d * d + 2 * d * f + 2 * length * d)
    return length * per_position + predicted * (d * d + vocab_size * d)


def seq2seq_multiply_adds(config, source_length, target_length, vocab_size):
    """Multiply-adds of one forward pass of the translator (`zoo.translation.model.Translator`, `config` a
    TranslatorConfig) over one sentence pair: `source_length` source positions (with </s>), `target_length`
    decoder positions (<s> + target, one per label). Per encoder layer and source position the Q, K, V, O
    projections, the scores and weighted values over the source, the feed-forward. Per decoder layer and target
    position the self-attention's projections and its scores and weighted values over all `target_length`
    positions (the full square is computed, the causal mask applied after), cross-attention's Q and O projections
    and its scores and weighted values over the source, the feed-forward; and per decoder layer and source
    position the cross-attention's K and V projections of the encoder output. Then every target position projected
    onto the vocabulary (tied or not, a vocabulary x width matrix). Embeddings, norms and softmax not counted."""
    d, f = config.hidden_dim, config.intermediate_dim
    encoder = config.num_encoder_layers * source_length * (4 * d * d + 2 * d * f + 2 * source_length * d)
    per_target = (4 * d * d + 2 * target_length * d) + (2 * d * d + 2 * source_length * d) + 2 * d * f
    decoder = config.num_decoder_layers * (target_length * per_target + source_length * 2 * d * d)
    return encoder + decoder + target_length * vocab_size * d


def training_flops(multiply_adds_forward):
    """FLOPs of one training step that costs `multiply_adds_forward` multiply-adds forward: 2 FLOPs
    a multiply-add, and the backward pass twice the forward (gradients of inputs and of weights)."""
    return 6 * multiply_adds_forward


def translation_lengths(config, model_dir):
    """(source, decoder input) lengths of the run's training pairs as `zoo.translation.recipe` makes them: its
    training data (`config`, the run's TranslateRunConfig; subsampled as it was) tokenized by the tokenizers it
    trained in `model_dir`, each source ending with </s>, each decoder input <s> + target (one position per label)."""
    from zoo.translation import corpora as translation_corpora
    from zoo.translation import preprocessor as translation_preprocessing
    from zoo.runs.run_dir import RunDir

    data, model = config.data, config.model
    pairs = translation_corpora.load_translation(data.dataset, "train", data.source, data.target)
    pairs = translation_corpora.subsample_pairs(pairs, data.max_examples, config.train.seed)
    source_tokenizer, target_tokenizer = RunDir(model_dir).tokenizers(model.shared_vocabulary)
    sources = translation_preprocessing.source_rows(source_tokenizer, pairs.sources, model.max_length)
    targets = translation_preprocessing.target_rows(target_tokenizer, pairs.targets, model.max_length)
    return [(len(s), len(t) - 1) for s, t in zip(sources, targets)]


def flops_per_token(name, config, model_dir):
    """Training FLOPs per counted token of the model of a run of the benchmark model `name` (translate, lm,
    pretrain, finetune), `config` its typed run config (`zoo.runs.record.Record.config`), in `model_dir`; or None.

    Translation counts as tokens each pair's real source tokens (with </s>) and decoder inputs (<s> + target,
    one per label; `zoo.translation.model.translation_loss`); its lengths vary, so the figure is the multiply-adds
    of every training pair over all their counted tokens (`translation_lengths`), padding's work left out."""
    model = config.model
    if name == "translate":
        pairs = translation_lengths(config, model_dir)
        total = sum(seq2seq_multiply_adds(model, source, target, model.target_vocab_size) for source, target in pairs)
        return training_flops(total / sum(source + target for source, target in pairs))
    if name == "lm":
        segment, memory = model.segment_length, model.memory_length
        return training_flops(multiply_adds(model, segment, segment + memory, segment, model.vocab_size) / segment)
    if name == "pretrain" and model.objective == "mlm":
        length, encoder = model.sequence_length, model.encoder
        predicted = math.ceil(model.mask_rate * length)
        return training_flops(encoder_multiply_adds(encoder, length, predicted, encoder.vocab_size) / length)
    if name == "finetune":  # full rows of max_length tokens (IMDB's reviews mostly fill them)
        length = model.max_length
        return training_flops(encoder_multiply_adds(model, length, 0, model.vocab_size) / length)
    return None
