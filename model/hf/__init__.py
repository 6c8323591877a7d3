"""Local Hugging Face-format folders (config.json, model.safetensors, tokenizer.json) run on the project's one
Transformer; `transformers` is never imported.

    folder.py     inspect a folder without loading it (what the registry and the errors need)
    families.py   one record per family: config.json -> TransformerConfig, and its weight-name table
    load.py       a folder's Source (`folder_source`), built by model/source.py; `load_local(device, path)`
    specs.py      a folder as a registry entry (the entry points register them)
    configs.py, tokenizer.py   typed config.json fields; tokenizer.json through `tokenizers`
"""
