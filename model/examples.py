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

# The same examples in Korean, as a Korean lecture writes them (the lecture notes are Korean). Presets too; the
# models that read Korean (multilingual-e5-small, seq2seq-tiny) are evaluated on them.
KOREAN_DEFAULT_TEXT = "그 동물은 너무 피곤해서 길을 건너지 않았다"

KOREAN_EXAMPLE_SENTENCES = [
    KOREAN_DEFAULT_TEXT,
    "그 동물은 길을 건너지 않았다. 그것은 너무 피곤했기 때문이다",  # "그것은" -> "동물"
    "그 동물은 길을 건너지 않았다. 그것은 너무 넓었기 때문이다",  # "그것은" -> "길"
    "개가 음식을 먹었다. 그것은 배가 고팠기 때문이다",  # seed 003 in Korean: "그것은" is the dog
    "나는 잘 지낸다",  # "I am good"
    "이것은 내 차다",  # the padding example ...
    "저것은 아니다",  # ... padded to the length of "이것은 내 차다"
]

# For the translators (Firefox Translations en<->pt): the classic alignment example, whose reordered noun phrase
# crosses the diagonal (European Economic Area -> Espaço Económico Europeu), and the flagship in Portuguese.
ALIGNMENT_TEXT = "The agreement on the European Economic Area was signed in August 1992."
TRANSLATION_SENTENCES = [
    ALIGNMENT_TEXT,
    "O animal não atravessou a rua porque estava cansado.",  # the flagship, for Portuguese -> English
]
