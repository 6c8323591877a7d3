"""Local Hugging Face-format folders (config.json, model.safetensors, tokenizer.json) run on the project's
own modules; `transformers` is never imported.

Families: encoders bert, roberta, xlm-roberta, distilbert (model/bert.py); decoder-only gpt2 (gpt2.py);
encoder-decoders bart, marian (seq2seq.py). Folders are registered by HEADLIGHT_MODELS or `--model-dir`
(registration.py) and loaded by `load.load_local`. This package imports nothing heavy until a model loads.
"""
