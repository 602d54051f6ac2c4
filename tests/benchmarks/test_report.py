import itertools

from benchmarks import report


def test_paired_alternates_the_two_sides_and_takes_the_median_of_the_pairs_ratios(monkeypatch):
    calls = []
    # Each call takes the next duration: ours 1, peer 3 | ours 2, peer 2 | ours 1, peer 10.
    durations = iter([1.0, 3.0, 2.0, 2.0, 1.0, 10.0])
    clock = itertools.count()
    now = [0.0]

    def fake_time():
        next(clock)
        return now[0]

    def side(name):
        def run():
            calls.append(name)
            now[0] += next(durations)
            return f"{name}{len(calls)}"
        return run

    monkeypatch.setattr(report.time, "time", fake_time)
    ours, peer, ratio = report.paired(side("ours"), side("peer"), 3)
    assert calls == ["ours", "peer"] * 3
    assert [s for s, _ in ours] == [1.0, 2.0, 1.0] and [s for s, _ in peer] == [3.0, 2.0, 10.0]
    assert ours[-1][1] == "ours5" and peer[-1][1] == "peer6"
    assert ratio == 3.0  # ratios 3, 1, 10: the median, not the ratio of the medians (2 / 1)
    assert report.median_seconds(ours) == 1.0
