"""Wang & Manning's NBSVM-style linear model (2012), the peer a user would try first on a text classification task:
binarized uni+bigram counts scaled by the naive-Bayes log-count ratio r = log((p / |p|_1) / (q / |q|_1)) (alpha = 1),
then LogisticRegression(C=0.1, liblinear, dual), not tuned. Two classes: one model; more: one per class against the
rest, the class of the highest decision value. Needs the `bench` extra (scikit-learn)."""

import time


def vectorizer():
    """Binarized uni+bigram counts. Words of one letter kept ("a", "i": "not a", "i loved"), which scikit-learn's
    default pattern drops: the peer as STACK_NOTES measured it."""
    from sklearn.feature_extraction.text import CountVectorizer

    return CountVectorizer(ngram_range=(1, 2), binary=True, token_pattern=r"(?u)\b\w+\b")


def fit_binary(x, y):
    """(ratio, model) of one class (y == 1) against the other (y == 0) on the count matrix x."""
    import numpy as np
    from sklearn.linear_model import LogisticRegression

    p = np.asarray(x[y == 1].sum(axis=0)).ravel() + 1.0
    q = np.asarray(x[y == 0].sum(axis=0)).ravel() + 1.0
    ratio = np.log((p / p.sum()) / (q / q.sum()))
    model = LogisticRegression(C=0.1, solver="liblinear", dual=True, max_iter=1000)
    return ratio, model.fit(x.multiply(ratio).tocsr(), y)


def predict(train_texts, train_labels, texts):
    """The labels (of train_labels' kind) the model fitted on the training texts gives `texts`."""
    import numpy as np

    counts = vectorizer()
    x_train, x = counts.fit_transform(train_texts), counts.transform(texts)
    labels = np.asarray(train_labels)
    classes = sorted(set(labels.tolist()))
    if len(classes) == 2:  # one model, the second class against the first
        ratio, model = fit_binary(x_train, (labels == classes[1]).astype(int))
        return [classes[i] for i in model.predict(x.multiply(ratio).tocsr())]
    decisions = []
    for name in classes:
        ratio, model = fit_binary(x_train, (labels == name).astype(int))
        decisions.append(model.decision_function(x.multiply(ratio).tocsr()))
    return [classes[i] for i in np.argmax(np.stack(decisions, axis=1), axis=1)]


def accuracy(dataset, split, limit=None):
    """{"accuracy", "seconds"} of the model fitted on `dataset`'s train split (IMDB's with its held-out validation
    part: the whole of IMDB's train, as the peer figure was measured) and scored on `split`; `limit`: only the first
    that many examples of each (a smoke run)."""
    import numpy as np

    from zoo.data import datasets

    began = time.time()
    train = datasets.load_classification(dataset, "train")
    evaluated = datasets.load_classification(dataset, split)
    texts, labels = train.texts, train.labels
    if dataset == "imdb":
        held_out = datasets.load_classification(dataset, "validation")
        texts, labels = texts + held_out.texts, np.concatenate([labels, held_out.labels])
    predicted = predict(texts[:limit], labels[:limit], evaluated.texts[:limit])
    return {"accuracy": float(np.mean(np.asarray(predicted) == evaluated.labels[:limit])),
            "seconds": time.time() - began}
