"""--mixed_precision=auto: bfloat16 where the device runs it fast, float32 elsewhere."""

import pytest

from zoo.training import precision

EPYC = """processor\t: 0
vendor_id\t: AuthenticAMD
model name\t: AMD EPYC 9B14
flags\t\t: fpu vme de pse avx2 avx512f avx512bw avx512_bf16 clzero
"""
SAPPHIRE_RAPIDS = "processor\t: 0\nflags\t\t: fpu avx512f avx512_fp16 amx_bf16 amx_tile amx_int8\n"
SKYLAKE = "processor\t: 0\nflags\t\t: fpu avx2 avx512f avx512bw avx512vl\n"
GRAVITON = "processor\t: 0\nFeatures\t: fp asimd bf16 i8mm\n"


@pytest.mark.parametrize(
    "cpuinfo, dtype",
    [(EPYC, "bfloat16"), (SAPPHIRE_RAPIDS, "bfloat16"), (SKYLAKE, "float32"), (GRAVITON, "float32"), ("", "float32")],
)
def test_a_cpu_gets_bfloat16_only_with_its_bfloat16_instructions(cpuinfo, dtype):
    chosen, reason = precision.auto_precision(gpus=[], cpuinfo=cpuinfo)
    assert chosen == dtype
    assert ("avx512_bf16" in reason) or ("amx_bf16" in reason)


def test_the_flags_are_matched_whole_not_as_substrings():
    assert precision.cpu_flags("flags : avx512_bf16x notavx512_bf16\n") == {"avx512_bf16x", "notavx512_bf16"}
    assert precision.auto_precision(gpus=[], cpuinfo="flags : avx512_bf16x\n")[0] == "float32"


@pytest.mark.parametrize(
    "gpus, dtype",
    [
        ([("NVIDIA H100 80GB HBM3", (9, 0))], "bfloat16"),
        ([("NVIDIA A100-SXM4-40GB", (8, 0)), ("NVIDIA A100-SXM4-40GB", (8, 0))], "bfloat16"),
        ([("Tesla V100-SXM2-16GB", (7, 0))], "float32"),
        ([("Tesla T4", (7, 5))], "float32"),
        ([("NVIDIA A100", (8, 0)), ("Tesla T4", (7, 5))], "float32"),  # the slowest decides
    ],
)
def test_a_gpu_decides_by_compute_capability_whatever_the_cpu(gpus, dtype):
    chosen, reason = precision.auto_precision(gpus=gpus, cpuinfo=SKYLAKE if dtype == "bfloat16" else EPYC)
    assert chosen == dtype and "compute capability" in reason


def test_a_gpu_without_a_compute_capability_gets_float32_and_the_reason():
    dtype, reason = precision.auto_precision(gpus=[("AMD Instinct MI250X", None)], cpuinfo=EPYC)
    assert dtype == "float32" and "reports no CUDA compute capability" in reason


def test_without_onednn_a_bfloat16_cpu_gets_float32(monkeypatch):
    monkeypatch.setenv("TF_ENABLE_ONEDNN_OPTS", "0")
    dtype, reason = precision.auto_precision(gpus=[], cpuinfo=EPYC)
    assert dtype == "float32" and "TF_ENABLE_ONEDNN_OPTS=0" in reason


def test_a_tpu_gets_bfloat16():
    assert precision.auto_precision(tpu=True, gpus=[], cpuinfo=SKYLAKE)[0] == "bfloat16"


def test_an_explicit_value_wins_and_auto_keeps_a_resumed_runs_dtype():
    assert precision.choose("float32", cpuinfo=EPYC, gpus=[]) == ("float32", "asked for (--mixed_precision)")
    assert precision.choose("bfloat16", resumed="float32", cpuinfo=SKYLAKE, gpus=[])[0] == "bfloat16"
    dtype, reason = precision.choose("auto", resumed="float32", cpuinfo=EPYC, gpus=[])
    assert dtype == "float32" and "resumed" in reason
    dtype, reason = precision.choose("auto", cpuinfo=EPYC, gpus=[])
    assert dtype == "bfloat16" and reason.startswith("auto: ") and "avx512_bf16" in reason
    with pytest.raises(ValueError, match="mixed_precision='half'"):
        precision.choose("half")


def test_a_config_asked_for_auto_holds_this_machines_choice_and_why_decided_once(monkeypatch):
    """Issue 59: TrainConfig keeps "auto" as given (it probed the machine too); the run's config is resolved in one
    place, which decides it once, for a typed config as for any other source."""
    from zoo.classifier.run_config import SentimentData, SentimentRunConfig
    from zoo.registry import RECIPES
    from zoo.training.config import TrainConfig
    from zoo.training.run_settings import resolve

    assert TrainConfig(mixed_precision="auto").mixed_precision == "auto"
    choose, calls = precision.choose, []
    monkeypatch.setattr(precision, "choose", lambda *args, **kwargs: calls.append(args) or choose(*args, **kwargs))
    typed = SentimentRunConfig(data=SentimentData("sst2"), train=TrainConfig(mixed_precision="auto"))
    config = resolve(RECIPES["sentiment"], source=typed)
    assert (config.train.mixed_precision, config.train.precision_reason) == choose("auto")
    assert config.train.mixed_precision in ("float32", "bfloat16") and len(calls) == 1


def test_a_fresh_run_from_a_copied_config_says_its_dtype_came_from_the_config(tmp_path):
    """Issue 58: a config.json of a resumed run held 'the run being resumed' as its reason; a fresh run from it
    said the same."""
    from zoo.api import RECIPES
    from zoo.training.run_settings import resolve

    copied = {"data": {"dataset": "sst2"}, "train": {"mixed_precision": "float32", "precision_reason": "auto: the run being resumed trained in it"}}
    config = resolve(RECIPES["sentiment"], source=copied, model_dir=str(tmp_path / "fresh"))
    assert (config.train.mixed_precision, config.train.precision_reason) == (
        "float32", "set in the config (train.mixed_precision)")
    auto = resolve(RECIPES["sentiment"], source={**copied, "train": {"mixed_precision": "auto"}})
    assert (auto.train.mixed_precision, auto.train.precision_reason) == precision.choose("auto")
    flag = resolve(RECIPES["sentiment"], source=copied, given={"mixed_precision": "bfloat16"})
    assert (flag.train.mixed_precision, flag.train.precision_reason) == ("bfloat16", "asked for (--mixed_precision)")
