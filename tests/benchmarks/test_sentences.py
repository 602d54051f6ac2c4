"""benchmarks.common.sentences: reviews cut into sentences and written as SST-2 writes its sentences."""

from benchmarks.common import sentences


def test_sst_form_lowers_splits_punctuation_and_clitics_as_sst2_does():
    # SST-2's dev set writes "you do n't have to know about music to appreciate the film 's easygoing blend ."
    assert sentences.sst_form("You don't have to know about music to appreciate the film's easygoing blend.") == \
        "you do n't have to know about music to appreciate the film 's easygoing blend ."
    assert sentences.sst_form('It\'s "great" (really), I\'d say... 7.5/10 -- ex-wife!') == \
        'it \'s " great " ( really ) , i \'d say ... 7.5 / 10 -- ex-wife !'


def test_split_sentences_at_an_end_before_a_capital_quote_or_bracket():
    review = 'I loved it. "Why?" you ask! (Because.) It was 7.5 out of 10. mr. smith agrees.'
    assert sentences.split_sentences(review) == ["I loved it.", '"Why?" you ask!', "(Because.)",
                                                 "It was 7.5 out of 10. mr. smith agrees."]


def test_review_sentences_keep_four_to_fifty_tokens():
    reviews = ["Too short. This one has enough words in it.", "word " * 60 + "end."]
    assert list(sentences.review_sentences(reviews)) == ["this one has enough words in it ."]
