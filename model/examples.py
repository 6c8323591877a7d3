"""The example sentences of the lecture notes (../shared/BRIEF.md), shipped as presets and always part of
seq2seq-tiny's evaluation set. One list for the whole project."""

DEFAULT_TEXT = "The animal didn't cross the street because it was tired"  # the flagship: which heads send "it" to "animal"?

EXAMPLE_SENTENCES = [
    DEFAULT_TEXT,
    "The animal didn't cross the street because it was wide",  # now "it" should go to "street"
    "A dog ate the food because it was hungry",  # seed 003: "it" is the dog
    "I am good",  # seed 003: a 3 x d_model input
    "I am sam",  # seed 002: the look-ahead mask example
    "this is my car",  # seed 002: the padding example ...
    "that is not",  # ... padded to the length of "this is my car"
]
