"""Long reviews as short texts in SST-2's form: a transfer set for a sentence classifier's distillation
(benchmarks.distill). SST-2's sentences are lower-cased and PTB-tokenized ("it 's a charming and often affecting
journey . "); imdb_unsup's reviews, cut into sentences and written the same way, give the teacher in-domain texts
of the length and form the student is tested on."""

import os
import re

# A sentence ends at . ! or ? (and any closing quote or bracket) before a space and a capital, quote or bracket.
SENTENCE_END = re.compile(r"(?:(?<=[.!?])|(?<=[.!?][\"')]))\s+(?=[A-Z\"'(])")
CLITIC = re.compile(r"(\w)(n't|'s|'re|'ve|'ll|'d|'m)\b")
TOKEN = re.compile(r"n't|'(?:s|re|ve|ll|d|m)\b|\.\.\.|--|\w+(?:[-'.]\w+)*|\S")


def sst_form(sentence):
    """One sentence as SST-2 writes it: lower case, tokens split by spaces, clitics apart (do n't, film 's)."""
    text = CLITIC.sub(r"\1 \2", sentence.lower())
    return " ".join(TOKEN.findall(text))


def split_sentences(document):
    return [part.strip() for part in SENTENCE_END.split(document) if part.strip()]


def review_sentences(documents, low=4, high=50):
    """Every sentence of `documents` in SST-2's form, of `low` to `high` tokens (SST-2's dev sentences are 2-55)."""
    for document in documents:
        for sentence in split_sentences(document):
            text = sst_form(sentence)
            if low <= text.count(" ") + 1 <= high:
                yield text


def write_sentences(path, corpus="imdb_unsup", limit=None):
    """`corpus`'s sentences (zoo.pretraining.data names it; its first `limit` documents) in SST-2's form, one a
    line, unless `path` exists; written through a temporary file (zoo.core.disk), so a killed run leaves none."""
    if not os.path.exists(path):
        from zoo.core import disk
        from zoo.pretraining.data import load_documents

        print(f"Writing {corpus}'s sentences in SST-2's form to {path} ...", flush=True)
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        lines = (f"{text}\n".encode("utf-8") for text in review_sentences(load_documents(corpus)[:limit]))
        disk.write_atomically(path, lines, "the sentence file")
    return path
