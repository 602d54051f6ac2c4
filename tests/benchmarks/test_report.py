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

    (tmp_path / "config.json").write_text(json.dumps({
        "dataset": "tinyshakespeare",
        "model": {"dropout": 0.05, "clamp_length": None, "tie_embeddings": True},
        "train": {"learning_rate": 0.002, "train_steps": 2800, "mixed_precision": "bfloat16", "seed": 0},
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


def test_an_unfinished_or_missing_run_is_not_finished(tmp_path):
    assert not report.finished_run(str(tmp_path), ["--seed=0"])
    assert not report.finished_run(_run_dir(tmp_path, trained=False), ["--seed=5"])
