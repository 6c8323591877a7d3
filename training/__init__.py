"""Training and evaluation of `seq2seq-tiny` (not needed at run time: the app loads the shipped checkpoint).

    python -m training.data        # rebuild the vocabulary (tokenizer.json) from the wordfreq word list
    python -m training.train       # train from seed 0 (progress bar, Ctrl-C, --resume)
    python -m training.evaluate    # the quality bar: everyday English sets and held-out synthetic inputs

`data` (vocabulary, tokenizer, training sequences, padding) <- `evaluate` <- `train`: no cycle.
"""
