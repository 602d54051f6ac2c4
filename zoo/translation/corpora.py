"""The built-in translation datasets: Multi30k (task 1) and TensorFlow Datasets' translation sets."""

import dataclasses

import numpy as np

from zoo.data.datasets import DatasetError, Source, fetch, read_lines, tfds_builder


@dataclasses.dataclass(frozen=True)
class Translation:
    """Aligned sentence pairs of one split."""

    sources: list
    targets: list


MULTI30K_URL = "https://github.com/multi30k/dataset/raw/master/data/task1/raw/"
MULTI30K_LANGUAGES = ("en", "de")
# split -> file stem; the later test sets are not in the shared data folder and are downloaded.
MULTI30K_SPLITS = {
    "train": "train",
    "validation": "val",
    "test": "test_2016_flickr",
    "test_2016_flickr": "test_2016_flickr",
    "test_2017_flickr": "test_2017_flickr",
    "test_2017_mscoco": "test_2017_mscoco",
    "test_2018_flickr": "test_2018_flickr",
}


def _multi30k(split, source, target):
    for language in (source, target):
        if language not in MULTI30K_LANGUAGES:
            raise DatasetError(f"Multi30k (task 1) has languages {MULTI30K_LANGUAGES}, not {language!r}.")
    if split not in MULTI30K_SPLITS:
        raise DatasetError(f"Multi30k has no split {split!r}: use one of {sorted(MULTI30K_SPLITS)}.")
    names = [f"{MULTI30K_SPLITS[split]}.{language}.gz" for language in (source, target)]
    sides = [[line.strip() for line in read_lines(fetch(Source("multi30k", name, MULTI30K_URL + name)))]
             for name in names]
    if len(sides[0]) != len(sides[1]):
        raise DatasetError(f"Multi30k {split}: {len(sides[0])} {source} lines but {len(sides[1])} {target} lines.")
    return Translation(*sides)


def _tfds_translation(name, split, source, target):
    import tensorflow_datasets as tfds

    builder = tfds_builder(name)
    if split not in builder.info.splits:
        raise DatasetError(f"TFDS dataset {name!r} has no {split!r} split; it has {sorted(builder.info.splits)}.")
    languages = sorted(builder.info.features.keys())
    if source not in languages or target not in languages:
        raise DatasetError(f"TFDS dataset {name!r} has languages {languages}; --source/--target must be two of them.")
    builder.download_and_prepare()
    sources, targets = [], []
    for example in tfds.as_numpy(builder.as_dataset(split=split)):
        sources.append(example[source].decode("utf-8"))
        targets.append(example[target].decode("utf-8"))
    return Translation(sources, targets)


TRANSLATION = {"multi30k": _multi30k}


def load_translation(name, split, source, target):
    """Sentence pairs (source language -> target language) of a translation dataset. `name` is "multi30k" or
    "tfds:<catalog name>" (e.g. tfds:ted_hrlr_translate/pt_to_en, tfds:wmt14_translate/de-en); `split` "train",
    "validation", "test" or a dataset-specific name (Multi30k's test_2017_flickr ...)."""
    if source == target:
        raise DatasetError(f"--source and --target are both {source!r}: choose two languages.")
    if name.startswith("tfds:"):
        return _tfds_translation(name[len("tfds:") :], split, source, target)
    if name not in TRANSLATION:
        raise DatasetError(f"Unknown translation dataset {name!r}: use one of {sorted(TRANSLATION)} or tfds:<name> "
                           "(e.g. tfds:ted_hrlr_translate/pt_to_en).")
    return TRANSLATION[name](split, source, target)


def subsample_pairs(data, count, seed):
    """A seeded random `count` of the pairs, in their original order."""
    if count is None or count >= len(data.sources):
        return data
    keep = np.sort(np.random.default_rng(seed).permutation(len(data.sources))[:count])
    return Translation([data.sources[i] for i in keep], [data.targets[i] for i in keep])
