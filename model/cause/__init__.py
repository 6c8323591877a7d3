"""From attention to cause, on a decoder-only language model (the issue "From attention to cause"):

- generation.py: generation replay over the KV cache (greedy or sampled), each step's query row, the keys and values
  it appended, the cache's size and the work of a step with and without it;
- attribution.py: direct logit attribution, each head's, MLP's and the embeddings' part of the logit (difference);
- patching.py: activation patching of each head's output and of the residual stream, clean into corrupted.

All run the one forward through run requests (model/run.py). The command line (`python -m model generate |
attribute | patch`, model/cli_cause.py) writes their arrays; analysis/cause.py freezes them for the app.
"""
