"""Your own data (issue 37) from the outside: files as datasets for every recipe, through the command line.

The files carry what real files carry: RFC 4180 quoting (commas, doubled quotes, newlines inside a field), a
BOM, CRLF line ends, emoji and CJK, a .gz shard, a glob of three shards, {split} and no {split}. Each form is
trained, evaluated and (sentiment, language model) exported once in module fixtures, two runs at a time (the
machine's two cores), and the exports answer in one fresh process; bad input goes to one warm probe process
per recipe (tests/conftest.py).
"""

import concurrent.futures
import csv
import gzip
import io
import json
import os
import random
import re
import shutil

import numpy as np
import pytest

from tests.conftest import fresh_process_json, run_recipe
from tests.recipes.test_exact_resumption import saved_tensors, stop_after

pytestmark = pytest.mark.slow  # outside the default run: python -m pytest -m slow

TINY = ["--preset=tiny", "--log_every=4"]
SENTIMENT = [*TINY, "--vocab_size=48", "--max_length=24", "--batch_size=16"]
TRANSLATE = [*TINY, "--source=zh", "--target=en", "--max_tokens=512", "--train_steps=4",
             "--eval_split=validation", "--beam_size=1"]
LM = [*TINY, "--batch_size=4", "--train_steps=6", "--eval_batch_size=2"]
CSV_STEPS = ["--train_steps=8", "--checkpoint_every=4"]
EXPLAINED = 'a witty, "lovely" 电影 😀'  # --mode=explain's text, served too
CLASS_WORDS = {"négatif": ["bad", "awful", "dull", "boring"], "positive": ["good", "great", "witty", "lovely"],
               "中性": ["plain", "fine", "okay", "so-so"]}
SHARED_WORDS = ["the", "film", "a", "plot", "cast", "and", "was", "very", "😀", "电影", 'a "quoted" word', "x, y"]
LM_WORDS = ["the", "cat", "sat", "on", "a", "mat", "and", "dog", "ran", "to", "park", "with", "ball", "in", "sun",
            "🙂", "猫", "狗"]
ENGLISH = ["man", "woman", "dog", "cat", "runs", "sits", "eats", "red", "blue", "big", "small", "the", "a", "on",
           "park", "street", "ball", "car", "house", "tree"]
CHINESE = list("男女狗猫跑坐吃红蓝大小这一在园街球车屋树")


# --- Files ---------------------------------------------------------------------------------------------------

def write(path, data):
    """Writes text (UTF-8) or bytes, gzipped when the name ends in .gz."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    data = data.encode("utf-8") if isinstance(data, str) else data
    with open(path, "wb") as f:
        f.write(gzip.compress(data) if path.endswith(".gz") else data)


def csv_text(header, rows, crlf=True, bom=False):
    """RFC 4180 as Python's csv module writes it: fields with commas, quotes or newlines quoted."""
    buffer = io.StringIO(newline="")
    writer = csv.writer(buffer, lineterminator="\r\n" if crlf else "\n")
    writer.writerows([header, *rows])
    return ("\ufeff" if bom else "") + buffer.getvalue()


def reviews(count, seed, labels=tuple(CLASS_WORDS)):
    """(text, label) pairs, labels in turn; a class's words in its texts, and commas, quotes, newlines,
    emoji and CJK among them."""
    rng = random.Random(seed)
    rows = []
    for i in range(count):
        label = labels[i % len(labels)]
        words = [rng.choice(CLASS_WORDS[sorted(CLASS_WORDS)[i % len(labels)]]) for _ in range(3)]
        words += [rng.choice(SHARED_WORDS) for _ in range(3)]
        rng.shuffle(words)
        text = " ".join(words)
        rows.append((text.replace(" ", "\n", 1) if i % 7 == 0 else text, label))
    return rows


def lm_lines(count, seed):
    rng = random.Random(seed)
    return [" ".join(rng.choice(LM_WORDS) for _ in range(rng.randint(4, 9))) for _ in range(count)]


def sentence_pairs(count, seed):
    """(Chinese, English) pairs, word for word: the two languages share no character."""
    rng = random.Random(seed)
    pairs = []
    for _ in range(count):
        words = [rng.randrange(len(ENGLISH)) for _ in range(rng.randint(3, 6))]
        pairs.append(("".join(CHINESE[w] for w in words) + "。", " ".join(ENGLISH[w] for w in words) + "."))
    return pairs


def sentiment_files(root):
    """The four forms of sentiment data; their validation rows by form."""
    validation = {"csv": reviews(30, 3), "jsonl": reviews(20, 13, labels=(0, 1)), "folder": reviews(12, 23)}
    header = ["id", "review", "sentiment"]
    numbered = lambda rows: [(i, text, label) for i, (text, label) in enumerate(rows)]
    write(f"{root}/csv/train-0.csv", csv_text(header, numbered(reviews(60, 0)), bom=True))
    write(f"{root}/csv/train-1.csv", csv_text(header, numbered(reviews(60, 1)), crlf=False))
    write(f"{root}/csv/train-2.csv.gz", csv_text(header, numbered(reviews(60, 2))))
    write(f"{root}/csv/validation-0.csv", csv_text(header, numbered(validation["csv"]), bom=True))
    write(f"{root}/csv/test-0.csv", csv_text(header, numbered(reviews(30, 4))))
    # TSV: a header, TABs, no quoting (a quote is a character); integer labels; two bad rows to skip.
    tsv_rows = [(label, text.replace("\n", " ")) for text, label in reviews(200, 5, labels=(10, 2, -3))]
    lines = ["label\ttext", *(f"{label}\t{text}" for label, text in tsv_rows)]
    lines[50:50] = ["2\tone\ttab too many", "a line without a tab"]
    write(f"{root}/tsv/reviews.tsv", "\n".join(lines) + "\n")
    for name, seed in (("train-a.jsonl", 10), ("train-b.jsonl.gz", 11)):
        rows = reviews(90, seed, labels=(0, 1))
        write(f"{root}/jsonl/{name}", "".join(json.dumps({"text": t, "label": l, "stars": 3}, ensure_ascii=i % 2 == 0)
                                              + "\n" for i, (t, l) in enumerate(rows)))
    write(f"{root}/jsonl/validation.jsonl", "".join(json.dumps({"label": l, "text": t}) + "\n"
                                                    for t, l in validation["jsonl"]))
    for split, rows in (("train", reviews(90, 20)), ("validation", validation["folder"])):
        for i, (text, label) in enumerate(rows):
            write(f"{root}/folder/{split}/{label}/{i}.txt", text)
    return validation


@pytest.fixture(scope="module", name="files")
def files_fixture(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("own_data"))
    validation = sentiment_files(root)
    for split, count, seed in (("train", 200, 0), ("validation", 20, 1), ("test", 20, 2)):
        pairs = sentence_pairs(count, seed)
        write(f"{root}/mt/{split}.zh", "".join(zh + "\n" for zh, _ in pairs))
        write(f"{root}/mt/{split}.en", "".join(en + "\n" for _, en in pairs))
        # The first shard names its columns (target first), the second has none: --source first.
        write(f"{root}/mt/{split}-0.tsv", "en\tzh\n" + "".join(f"{en}\t{zh}\n" for zh, en in pairs[:count // 2]))
        write(f"{root}/mt/{split}-1.tsv", "".join(f"{zh}\t{en}\n" for zh, en in pairs[count // 2:]))
    for name, seed in (("a.txt", 0), ("b.txt", 1), ("c.txt.gz", 2)):
        write(f"{root}/lm/{name}", "\n".join(lm_lines(100, seed)) + "\n")
    quoted = [(i, line.replace(" ", ", ", 1) if i % 5 == 0 else line) for i, line in enumerate(lm_lines(200, 3))]
    write(f"{root}/lm/d.csv", csv_text(["id", "body"], quoted, bom=True))
    write(f"{root}/lm/e.jsonl", "".join(json.dumps({"body": line, "n": i}, ensure_ascii=i % 2 == 0) + "\n"
                                        for i, line in enumerate(lm_lines(200, 4))))
    return root, validation


# --- Runs --------------------------------------------------------------------------------------------------

def in_pairs(runs):
    """Runs {name: (recipe, args, env)} two at a time; their results by name. env "no check": a run that may
    fail, its exit status left to the test."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        futures = {name: pool.submit(run_recipe, recipe, *args, env=None if env == "no check" else env,
                                     check=env != "no check")
                   for name, (recipe, args, env) in runs.items()}
        return {name: future.result() for name, future in futures.items()}


def csv_flags(root):
    return [f"--dataset=csv:{root}/csv/{{split}}-*.csv*", "--text_column=review", "--label_column=sentiment",
            *SENTIMENT]


def cache_listing(cache_dir):
    """Every file under the token cache with its modification time."""
    return {os.path.join(d, n): os.stat(os.path.join(d, n)).st_mtime_ns
            for d, _, names in os.walk(cache_dir) for n in names}


@pytest.fixture(scope="module", name="sentiment_runs")
def sentiment_runs_fixture(files, tmp_path_factory):
    """One run per form, trained, evaluated and exported; the csv: run with a token cache of its own."""
    root, _ = files
    base = str(tmp_path_factory.mktemp("sentiment_runs"))
    cache = f"{base}/cache"
    dirs = lambda name: [f"--model_dir={base}/{name}", f"--export_dir={base}/{name}_export"]
    results = in_pairs({
        "csv": ("sentiment", [*csv_flags(root), *CSV_STEPS, *dirs("csv")], {"ZOO_CACHE_DIR": cache}),
        "tsv": ("sentiment", [f"--dataset=tsv:{root}/tsv/*.tsv", *SENTIMENT, "--train_steps=4", "--bad_rows=skip",
                              *dirs("tsv")], None),
        "jsonl": ("sentiment", [f"--dataset=jsonl:{root}/jsonl/{{split}}*.jsonl*", *SENTIMENT, "--train_steps=4",
                                *dirs("jsonl")], None),
        "folder": ("sentiment", [f"--dataset=folder:{root}/folder/{{split}}", *SENTIMENT, "--train_steps=4",
                                 *dirs("folder")], None),
    })
    return {"base": base, "cache": cache, "cache_after_first_run": cache_listing(cache), "results": results}


@pytest.fixture(scope="module", name="translate_runs")
def translate_runs_fixture(files, tmp_path_factory):
    root, _ = files
    base = str(tmp_path_factory.mktemp("translate_runs"))
    results = in_pairs({
        "text": ("translate", [f"--dataset=text:{root}/mt/{{split}}.{{lang}}", *TRANSLATE, "--vocab_size=64",
                               f"--model_dir={base}/text"], None),
        "tsv": ("translate", [f"--dataset=tsv:{root}/mt/{{split}}-*.tsv", *TRANSLATE, "--noshared_vocabulary",
                              "--vocab_size=40", f"--model_dir={base}/tsv"], None),
    })
    return base, results


@pytest.fixture(scope="module", name="lm_runs")
def lm_runs_fixture(files, tmp_path_factory):
    """The language model on each form (subword, word and character tokens), and pretraining on all three at once."""
    root, _ = files
    base = str(tmp_path_factory.mktemp("lm_runs"))
    dirs = lambda name: [f"--model_dir={base}/{name}", f"--export_dir={base}/{name}_export"]
    corpus = f"--corpus=text:{root}/lm/*.txt*,csv:{root}/lm/d.csv,jsonl:{root}/lm/e.jsonl"
    results = in_pairs({
        "text": ("lm", [f"--dataset=text:{root}/lm/*.txt*", "--level=subword", "--vocab_size=300", *LM, *dirs("text")],
                 None),
        "csv": ("lm", [f"--dataset=csv:{root}/lm/d.csv", "--text_column=body", "--level=word", *LM, *dirs("csv")],
                None),
        "jsonl": ("lm", [f"--dataset=jsonl:{root}/lm/e.jsonl", "--text_column=body", "--level=char", *LM,
                         *dirs("jsonl")], None),
        "pretrain": ("pretrain", [corpus, "--text_column=body", *TINY, "--vocab_size=40", "--sequence_length=32",
                                  "--batch_size=8", "--train_steps=4", "--eval_fraction=0.1",
                                  f"--model_dir={base}/pretrain"], None),
    })
    return base, results


def read_json(*path):
    with open(os.path.join(*path), encoding="utf-8") as f:
        return json.load(f)


def test_each_sentiment_form_trains_and_evaluates_with_its_class_names(sentiment_runs):
    base, results = sentiment_runs["base"], sentiment_runs["results"]
    class_names = {"csv": sorted(CLASS_WORDS), "tsv": [-3, 2, 10], "jsonl": [0, 1], "folder": sorted(CLASS_WORDS)}
    examples = {"csv": 30, "tsv": 10, "jsonl": 20, "folder": 12}  # tsv: a held-out 1 in 20 of its 200 good rows
    for form, result in results.items():
        assert "validation: accuracy" in result.stdout, form
        config, metrics = read_json(base, form, "config.json"), read_json(base, form, "metrics.json")
        assert [str(c) for c in config["derived"]["class_names"]] == [str(c) for c in class_names[form]], form
        assert metrics["eval_validation"]["examples"] == examples[form], form
    assert read_json(base, "tsv", "config.json")["derived"]["files"]["bad_rows_skipped"] == 2


@pytest.fixture(scope="module", name="served")
def served_fixture(sentiment_runs, lm_runs, files):
    """Every export's answers, from one fresh process that imports TensorFlow and TensorFlow Text only."""
    _, validation = files
    texts = {form: [text for text, _ in rows] for form, rows in validation.items()}
    texts["csv"].append(EXPLAINED)
    texts["tsv"] = ["good great film", "", "awful 😀 电影 " * 50]
    exports = {form: f"{sentiment_runs['base']}/{form}_export/1" for form in ("csv", "tsv", "jsonl", "folder")}
    lm_exports = {form: f"{lm_runs[0]}/{form}_export/1" for form in ("text", "csv", "jsonl")}
    program = (
        "import json\n"
        "import tensorflow as tf\n"
        "import tensorflow_text\n"
        f"texts = {texts!r}\n"
        "answers = {}\n"
        f"for form, path in {exports!r}.items():\n"
        "    out = tf.saved_model.load(path).signatures['serving_default'](text=tf.constant(texts[form]))\n"
        "    answers[form] = {'label': [s.decode() for s in out['label'].numpy()],\n"
        "                     'label_id': out['label_id'].numpy().tolist(),\n"
        "                     'probabilities': out['probabilities'].numpy().tolist()}\n"
        f"for form, path in {lm_exports!r}.items():\n"
        "    model = tf.saved_model.load(path)\n"
        "    gen = model.signatures['generate'](prompt=tf.constant(['the cat 猫']), max_new_tokens=tf.constant(7),\n"
        "        temperature=tf.constant(1.0), top_k=tf.constant(1), seed=tf.constant(0))\n"
        "    out = model.signatures['serving_default'](prompt=tf.constant(['the dog', '']))\n"
        "    score = model.signatures['score'](text=tf.constant(['the cat sat on a mat', '']))\n"
        "    answers['lm_' + form] = {'generate': [t.decode() for t in gen['continuation'].numpy()],\n"
        "                             'continuation': [t.decode() for t in out['continuation'].numpy()],\n"
        "                             'tokens': score['tokens'].numpy().tolist(),\n"
        "                             'perplexity': score['perplexity'].numpy().tolist()}\n"
        "print(json.dumps(answers))\n"
    )
    return fresh_process_json(program)


def test_the_sentiment_exports_answer_the_validation_texts_as_evaluation_scored_them(sentiment_runs, served, files):
    """Accuracy of the served labels on the validation files equals what --mode=eval reported."""
    _, validation = files
    for form in ("csv", "jsonl", "folder"):
        class_names = [str(c) for c in read_json(sentiment_runs["base"], form, "config.json")["derived"]["class_names"]]
        answer = served[form]
        assert answer["label"] == [class_names[i] for i in answer["label_id"]], form
        np.testing.assert_allclose(np.sum(answer["probabilities"], -1), 1.0, atol=1e-5)
        truth = [str(label) for _, label in validation[form]]
        accuracy = np.mean([label == true for label, true in zip(answer["label"], truth)])  # EXPLAINED left out
        reported = read_json(sentiment_runs["base"], form, "metrics.json")["eval_validation"]["accuracy"]
        assert accuracy == pytest.approx(reported, abs=1e-9), form


def test_integer_labels_are_served_as_their_names_in_numeric_order(served):
    answer = served["tsv"]
    assert len(answer["label"]) == 3 and np.array(answer["probabilities"]).shape == (3, 3)
    assert answer["label"] == [["-3", "2", "10"][i] for i in answer["label_id"]]


# --- Runs that read the trained ones ------------------------------------------------------------------------

@pytest.fixture(scope="module", name="follow_ups")
def follow_ups_fixture(files, sentiment_runs, lm_runs):
    """The csv: run resumed from its step-4 checkpoint (in a copy) and --mode=explain on it; the subword language
    model's greedy --mode=generate, and its --mode=eval with the default --eval_batch_size."""
    root, _ = files
    base, lm_base = sentiment_runs["base"], lm_runs[0]
    resumed = f"{base}/csv_resumed"
    shutil.copytree(f"{base}/csv", resumed)
    stop_after(resumed, 4)
    results = in_pairs({
        "resumed": ("sentiment", [*csv_flags(root), *CSV_STEPS, "--mode=train", f"--model_dir={resumed}"],
                    {"ZOO_CACHE_DIR": sentiment_runs["cache"]}),
        "explain": ("sentiment", ["--mode=explain", f"--model_dir={base}/csv", f"--text={EXPLAINED}"], None),
        "generate": ("lm", ["--mode=generate", "--greedy", "--max_new_tokens=7", "--prompt=the cat 猫",
                            f"--model_dir={lm_base}/text"], None),
        "lm_eval": ("lm", ["--mode=eval", "--eval_split=validation", f"--model_dir={lm_base}/text"], "no check"),
    })
    return {"resumed_dir": resumed, "cache_after_resume": cache_listing(sentiment_runs["cache"]), **results}


def test_a_resumed_csv_run_ends_with_the_uninterrupted_runs_weights(sentiment_runs, follow_ups):
    assert "Resuming from step 4" in follow_ups["resumed"].stdout
    expected, got = saved_tensors(f"{sentiment_runs['base']}/csv", 8), saved_tensors(follow_ups["resumed_dir"], 8)
    assert sorted(got) == sorted(expected) and any("optimizer" in name for name in got)
    for name, value in expected.items():
        np.testing.assert_array_equal(got[name], value, err_msg=f"{name} differs after resuming")


def test_a_second_run_on_the_same_files_reuses_the_token_cache(sentiment_runs, follow_ups):
    """The resumed run reads the same files with the same tokenizer (its folder a copy): nothing new is cached."""
    first, second = sentiment_runs["cache_after_first_run"], follow_ups["cache_after_resume"]
    assert first, "the first run cached nothing"
    new = sorted(os.path.relpath(p, sentiment_runs["cache"]) for p in set(second) - set(first))
    assert not new, f"the same files were tokenized again: {new}"


def test_explain_names_the_label_and_probability_that_the_export_serves(served, follow_ups):
    label, probabilities = served["csv"]["label"][-1], served["csv"]["probabilities"][-1]  # EXPLAINED's
    match = re.search(r"^(.+) \((\d\.\d+)\); pictures:", follow_ups["explain"].stdout, re.MULTILINE)
    assert match, follow_ups["explain"].stdout
    assert match.group(1) == label and float(match.group(2)) == pytest.approx(max(probabilities), abs=1e-3)


# --- Translation, language model, pretraining ----------------------------------------------------------------

def test_translation_trains_and_evaluates_on_aligned_text_files_and_on_tsv_shards(translate_runs):
    base, results = translate_runs
    for form, result in results.items():
        assert "validation: sacreBLEU" in result.stdout, form
        metrics = read_json(base, form, "metrics.json")["eval_validation"]
        assert metrics["sentences"] == 20, form
        with open(os.path.join(base, form, metrics["hypotheses"]), encoding="utf-8") as f:
            assert len(f.read().split("\n")[:-1]) == 20, form
        config = read_json(base, form, "config.json")
        assert (config["data"]["source"], config["data"]["target"]) == ("zh", "en")


def test_a_tsv_header_sets_the_column_order_and_without_one_the_source_comes_first(translate_runs):
    """With a vocabulary per language, English output means the target column was English in both shards."""
    base, _ = translate_runs
    hypotheses = read_json(base, "tsv", "metrics.json")["eval_validation"]["hypotheses"]
    with open(os.path.join(base, "tsv", hypotheses), encoding="utf-8") as f:
        output = f.read()
    assert output.strip() and not set(output) & set("".join(CHINESE) + "。")


def test_the_language_model_trains_on_each_form_and_evaluates_its_held_out_share(lm_runs):
    base, results = lm_runs
    for form, level in (("text", "subword"), ("csv", "word"), ("jsonl", "char")):
        assert "validation" in results[form].stdout, form
        config = read_json(base, form, "config.json")
        assert config["data"]["level"] == level, form
        held_out = read_json(base, form, "metrics.json")["eval_validation"]  # without {split}: validation
        for memory in ("train_memory", "no_memory"):  # characters are scored in bits, words and pieces in perplexity
            score = held_out[memory].get("perplexity", held_out[memory].get("bits_per_character"))
            assert score is not None and 0 < score < 1e6 and held_out[memory]["tokens"] > 0, form
    assert read_json(base, "text", "config.json")["model"]["vocab_size"] == 300  # 256 of them bytes


def test_the_language_model_exports_generate_and_score(served):
    for form in ("text", "csv", "jsonl"):
        answer = served[f"lm_{form}"]
        assert answer["generate"][0] and len(answer["continuation"]) == 2, form
        assert answer["tokens"][1] == 0 and answer["tokens"][0] > 0 and answer["perplexity"][0] > 1, form


def test_greedy_generation_serves_what_generate_mode_prints(served, follow_ups):
    printed = follow_ups["generate"].stdout.rstrip("\n")
    continuation = served["lm_text"]["generate"][0]
    assert printed.startswith("the cat 猫") and printed.endswith(continuation)
    assert printed[len("the cat 猫"):-len(continuation)].strip() == ""


def test_the_default_evaluation_of_a_small_held_out_share_reports_or_refuses(follow_ups):
    """15 lines held out make fewer tokens than ten evaluation streams (the default) of a segment each."""
    result = follow_ups["lm_eval"]
    assert "Traceback" not in result.stderr, result.stderr[-3000:]
    assert result.returncode == 0 and "perplexity" in result.stdout or result.returncode == 2


def test_pretraining_reads_text_csv_and_jsonl_corpora_together(lm_runs):
    base, results = lm_runs
    assert "step 4/4" in results["pretrain"].stdout
    held_out = read_json(base, "pretrain", "metrics.json")["eval_held_out"]["documents"]
    trained = int(re.search(r"Packing (\d+) documents", results["pretrain"].stdout).group(1))
    assert trained + held_out == 300 + 200 + 200  # a line, a CSV row (commas and a BOM in it), a JSON object each
    assert 0.05 < held_out / 700 < 0.15  # --eval_fraction=0.1


# --- Bad input: refused with exit status 2, one error line, before anything is written ----------------------

def refused(result, model_dir, *phrases):
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert result.returncode == 2 and len(errors) == 1 and "Traceback" not in result.stderr, result.stderr[-3000:]
    for phrase in phrases:
        assert phrase in errors[0], f"{phrase!r} not in {errors[0]!r}"
    written = os.listdir(model_dir) if os.path.exists(model_dir) else []
    assert not [n for n in written if n in ("config.json", "checkpoint") or n.startswith(("tokenizer", "ckpt"))]
    return errors[0]


GOOD = "".join(f"{'good great' if i % 2 else 'bad awful'} film {i},{'pos' if i % 2 else 'neg'}\n" for i in range(40))


def sentiment_faults(root):
    """{name: (pattern, extra flags, phrases the error names)}; `root` holds the files written here."""
    quirky = csv_text(["text", "label"], reviews(12, 0), bom=True)  # quoted newlines: more lines than rows
    physical = quirky.count("\n") + 1
    write(f"{root}/quirky.csv", quirky + "one,two,three\r\n")
    write(f"{root}/nocol.csv", "body,label\n" + GOOD)
    write(f"{root}/many/a.csv", "text,label\n" + GOOD)
    write(f"{root}/many/b.csv.gz", "text,label\n" + GOOD + "".join(f"x,y,z{i}\n" for i in range(9)))
    write(f"{root}/many/c.csv", "text,label\n" + GOOD)
    data = ("text,label\n" + GOOD).encode()
    write(f"{root}/latin1.csv", data[:100] + "é".encode("latin-1") + data[100:])
    write(f"{root}/unseen/train.csv", "text,label\n" + GOOD)
    write(f"{root}/unseen/validation.csv", "text,label\nfine film,pos\nmeh film,other\n")
    write(f"{root}/empty/train.csv", "text,label\n" + GOOD)
    write(f"{root}/empty/validation.csv", "text,label\nfine film,pos\n,neg\n")
    write(f"{root}/single.csv", "text,label\n" + "".join(f"film {i},pos\n" for i in range(40)))
    return {
        "no file": (f"csv:{root}/nothing-*.csv", [], [f"{root}/nothing-*.csv", "matches no file"]),
        "missing column": (f"csv:{root}/nocol.csv", [], ["'text'", "'body'", "'label'"]),
        "wrong field count": (f"csv:{root}/quirky.csv", [], [f"{root}/quirky.csv:{physical}"]),
        "many bad rows": (f"csv:{root}/many/*.csv*", [], ["9 bad row", f"{root}/many/b.csv.gz:42"]),
        "invalid utf-8": (f"csv:{root}/latin1.csv", [], [f"{root}/latin1.csv", "offset 100"]),
        "unseen label": (f"csv:{root}/unseen/{{split}}.csv", [], [f"{root}/unseen/validation.csv:3", "'other'"]),
        "empty text": (f"csv:{root}/empty/{{split}}.csv", [], [f"{root}/empty/validation.csv:3"]),
        "single class": (f"csv:{root}/single.csv", [], ["'pos'"]),
        "no test split": (f"csv:{root}/many/a.csv", ["--eval_split=test"], ["no test split"]),
    }


def test_bad_sentiment_files_are_refused_naming_file_and_line(tmp_path, probe_recipe):
    for name, (pattern, flags, phrases) in sentiment_faults(str(tmp_path)).items():
        model_dir = str(tmp_path / name.replace(" ", "_"))
        result = probe_recipe("sentiment", f"--dataset={pattern}", *SENTIMENT, *flags, f"--model_dir={model_dir}")
        try:
            refused(result, model_dir, *phrases)
        except AssertionError as error:
            raise AssertionError(f"{name}: {error}") from None


def test_bad_translation_files_are_refused_naming_both_counts_or_the_line(tmp_path, probe_recipe):
    root = str(tmp_path)
    write(f"{root}/uneven/train.zh", "".join(zh + "\n" for zh, _ in sentence_pairs(10, 0)))
    write(f"{root}/uneven/train.en", "".join(en + "\n" for _, en in sentence_pairs(9, 0)))
    pairs = "".join(f"{zh}\t{en}\n" for zh, en in sentence_pairs(20, 0))
    write(f"{root}/tabs.tsv", pairs + "男\tman\textra\n" + pairs + "no tab here\n")
    error = refused(probe_recipe("translate", f"--dataset=text:{root}/uneven/train.{{lang}}", *TRANSLATE,
                                 f"--model_dir={root}/run1"), f"{root}/run1", "10", "9")
    assert f"{root}/uneven/train.zh" in error and f"{root}/uneven/train.en" in error
    refused(probe_recipe("translate", f"--dataset=tsv:{root}/tabs.tsv", *TRANSLATE, f"--model_dir={root}/run2"),
            f"{root}/run2", f"{root}/tabs.tsv:21", f"{root}/tabs.tsv:42")


def test_bad_language_model_files_are_refused(tmp_path, probe_recipe, files):
    root, _ = files
    run = str(tmp_path / "run")
    refused(probe_recipe("lm", f"--dataset=csv:{root}/lm/d.csv", *LM, f"--model_dir={run}"), run,
            "'text'", "'id'", "'body'")
    refused(probe_recipe("lm", f"--dataset=text:{tmp_path}/none/*.txt", *LM, f"--model_dir={run}"), run,
            "matches no file")


# --- Last: the csv: run's files change ---------------------------------------------------------------------

def test_a_changed_file_is_tokenized_again_and_a_resumed_run_refuses_changed_files(sentiment_runs, follow_ups,
                                                                                  files, probe_recipe):
    root, validation = files
    base, cache = sentiment_runs["base"], sentiment_runs["cache"]
    before = cache_listing(cache)
    more = [(100, "good great", "positive"), (101, "bad, awful", "négatif")]
    with open(f"{root}/csv/validation-0.csv", "a", encoding="utf-8", newline="") as f:
        csv.writer(f, lineterminator="\r\n").writerows(more)
    result = run_recipe("sentiment", "--mode=eval", f"--model_dir={base}/csv", env={"ZOO_CACHE_DIR": cache})
    assert read_json(base, "csv", "metrics.json")["eval_validation"]["examples"] == len(validation["csv"]) + 2
    assert set(cache_listing(cache)) - set(before), "the changed validation file was not tokenized again"
    assert "validation: accuracy" in result.stdout
    with open(f"{root}/csv/train-1.csv", "a", encoding="utf-8") as f:
        f.write("999,good film,positive\n")
    resumed = probe_recipe("sentiment", *csv_flags(root), "--train_steps=12", "--mode=train",
                           f"--model_dir={base}/csv", env={"ZOO_CACHE_DIR": cache})
    errors = [line for line in resumed.stderr.splitlines() if line.startswith("error:")]
    assert resumed.returncode == 2 and len(errors) == 1 and "changed" in errors[0], resumed.stderr[-3000:]
    assert not os.path.exists(f"{base}/csv/ckpt-12.index")
