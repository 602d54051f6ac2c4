"""What a classifier's export serves (and `zoo.load` answers with), one module per problem type: the label and
class probabilities (`ClassifierServer`), a number in the labels' units (`RegressionServer`), a label set
(`MultiLabelServer`)."""

import tensorflow as tf


class TextServer(tf.Module):
    """What a classifier's export serves: `serve`, a tf.function of the preprocessor's inputs (`text`, and
    `text_pair` for a pair model: (batch,) strings each) -> `answer` of the model's float32 outputs."""

    def __init__(self, model, preprocessor):
        super().__init__()
        self.model = model
        self.preprocessor = preprocessor
        # Named arguments, so that a run's server is called as its export's signature is: serve(text=, text_pair=).
        one, pair = (lambda text: self.outputs(text)), (lambda text, text_pair: self.outputs(text, text_pair))
        self.serve = tf.function(pair if preprocessor.pairs else one, input_signature=preprocessor.signature)

    def outputs(self, *texts):
        return self.answer(tf.cast(self.model(self.preprocessor(*texts), training=False), tf.float32))


class ClassifierServer(TextServer):
    """Text in, label and class probabilities out: what the export serves."""

    def __init__(self, model, preprocessor, class_names):
        super().__init__(model, preprocessor)
        self.class_names = tf.constant(class_names)

    def answer(self, logits):
        probabilities = tf.nn.softmax(logits)
        label_id = tf.argmax(probabilities, axis=-1, output_type=tf.int32)
        return {"label": tf.gather(self.class_names, label_id), "label_id": label_id, "probabilities": probabilities}


class RegressionServer(TextServer):
    """Text in, a number in the training labels' own units out: the standardised output times their `std`
    plus their `mean`."""

    def __init__(self, model, preprocessor, mean, std):
        super().__init__(model, preprocessor)
        self.mean, self.std = tf.constant(mean, tf.float32), tf.constant(std, tf.float32)

    def answer(self, outputs):
        return {"score": outputs[:, 0] * self.std + self.mean}


class MultiLabelServer(TextServer):
    """Text in, each label's probability and the predicted set out: `labels` (batch, labels) holds the labels whose
    probability is at least `threshold`, in `class_names`' order, then empty strings; `label_count` how many."""

    def __init__(self, model, preprocessor, class_names, threshold):
        super().__init__(model, preprocessor)
        self.class_names = tf.constant(class_names)
        self.threshold = tf.constant(threshold, tf.float32)

    def answer(self, logits):
        probabilities = tf.sigmoid(logits)
        chosen = probabilities >= self.threshold
        # The chosen labels first, each part in label order: a stable sort of "not chosen".
        order = tf.argsort(tf.cast(tf.logical_not(chosen), tf.int32), axis=-1, stable=True)
        labels = tf.where(tf.gather(chosen, order, batch_dims=1), tf.gather(self.class_names, order), "")
        return {"labels": labels, "label_count": tf.reduce_sum(tf.cast(chosen, tf.int32), axis=-1),
                "probabilities": probabilities}
