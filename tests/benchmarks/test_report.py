from benchmarks.common import report


def test_paired_alternates_the_sides_and_takes_the_median_of_the_pairs_ratios(monkeypatch):
    calls, now = [], [0.0]
    # Seconds each call takes, by side: ours 1, 2, 3 and peer 4, 2, 3. The pairs' ratios are
    # 4, 1, 1 (median 1), while the ratio of the medians would be 3 / 2.
    seconds = {"ours": iter([1.0, 2.0, 3.0]), "peer": iter([4.0, 2.0, 3.0])}

    def side(name):
        def run():
            calls.append(name)
            now[0] += next(seconds[name])
            return f"{name}{len(calls)}"
        return run

    monkeypatch.setattr(report.time, "time", lambda: now[0])
    ours, peer, ratio = report.paired(side("ours"), side("peer"), 3)
    assert calls == ["ours", "peer", "peer", "ours", "ours", "peer"]  # every other pair starts with the peer
    assert [s for s, _ in ours] == [1.0, 2.0, 3.0] and [s for s, _ in peer] == [4.0, 2.0, 3.0]
    assert ours[-1][1] == "ours5" and peer[-1][1] == "peer6"
    assert ratio == 1.0
    assert report.median_seconds(ours) == 2.0 and report.median_seconds(peer) == 3.0


def test_cpu_name_reads_the_model_name_and_falls_back_to_the_architecture(tmp_path):
    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 9R14\nflags\t: fpu\n")
    assert report.cpu_name(str(info)) == "AMD EPYC 9R14"
    assert report.cpu_name(str(tmp_path / "missing")) == (report.platform.processor() or report.platform.machine())
    assert report.machine().startswith(report.cpu_name())


def _run_dir(tmp_path, trained=True):
    import json

    tmp_path.mkdir(exist_ok=True)
    (tmp_path / "config.json").write_text(json.dumps({  # a record's sections hold the fields it sets; others default
        "format": 2, "recipe": "lm",
        "data": {"dataset": "tinyshakespeare"},
        "model": {"dropout": 0.05, "clamp_length": None, "tie_embeddings": True},
        "train": {"learning_rate": 0.002, "train_steps": 2800, "mixed_precision": "bfloat16", "seed": 0},
        "derived": {"epochs": 3},
    }))
    (tmp_path / "metrics.json").write_text(json.dumps({"train": {"step": 2800}} if trained else {"eval_test": {}}))
    return str(tmp_path)


def test_finished_run_is_reused_only_with_the_benchmarks_flags(tmp_path):
    import pytest

    run_dir = _run_dir(tmp_path)
    same = ["--dataset=tinyshakespeare", "--preset=small", "--dropout=0.05", "--learning_rate=2e-3",
            "--train_steps=2800", "--mixed_precision=bfloat16", "--seed=0", "--tie_embeddings=true"]
    assert report.finished_run(run_dir, same)  # --preset is not in config.json: not checked
    with pytest.raises(ValueError, match=r"--learning_rate=3e-3 \(the run has 0.002\).*--seed=1 \(the run has 0\)"):
        report.finished_run(run_dir, [*same, "--learning_rate=3e-3", "--seed=1"])
    with pytest.raises(ValueError, match="--dataset=ptb"):
        report.finished_run(run_dir, ["--dataset=ptb"])
    # The record is read as its typed config: a field the file leaves to its default holds that default, and what
    # the run derived is compared too.
    assert report.finished_run(run_dir, ["--num_layers=4", "--epochs=3"])
    with pytest.raises(ValueError, match=r"--num_layers=6 \(the run has 4\), --epochs=5 \(the run has 3\)"):
        report.finished_run(run_dir, ["--num_layers=6", "--epochs=5"])


def test_the_record_is_read_typed_and_an_older_runs_record_upgraded(tmp_path):
    import json

    import pytest

    from zoo.language_model.run_config import LMRunConfig

    record = report.read_record(_run_dir(tmp_path / "new"))
    assert (record.recipe, record.derived) == ("lm", {"epochs": 3}) and isinstance(record.config, LMRunConfig)
    assert (record.config.model.dropout, record.config.train.mixed_precision) == (0.05, "bfloat16")
    older = tmp_path / "older"  # format 1: the data settings at the top level, no "format"
    older.mkdir()
    (older / "config.json").write_text(json.dumps({"recipe": "lm", "dataset": "ptb", "model": {"num_layers": 6},
                                                   "train": {"seed": 1}}))
    (older / "metrics.json").write_text(json.dumps({"train": {"step": 10}}))
    assert report.read_record(str(older)).config.data.dataset == "ptb"
    assert report.finished_run(str(older), ["--dataset=ptb", "--num_layers=6", "--seed=1"])
    with pytest.raises(ValueError, match=r"--dataset=wikitext2 \(the run has 'ptb'\)"):
        report.finished_run(str(older), ["--dataset=wikitext2"])
    assert report.read_record(str(tmp_path)) is None


def test_an_unfinished_or_missing_run_is_not_finished(tmp_path):
    assert not report.finished_run(str(tmp_path), ["--seed=0"])
    assert not report.finished_run(_run_dir(tmp_path, trained=False), ["--seed=5"])
