"""Serving the app: how a process is started and set up, before and around Streamlit (no page code here).

    python -m serve run app.py --server.port 8501    `make run`, `make serve` (deploy/serve.sh) and the tests

`__main__.py` the command line; `door.py` the HTTP-level fixes (long links, nested paths), the readiness path and
the starting page, installed into the uvicorn server Streamlit builds; `preload.py` a fresh process imports the
pages' modules and loads the models while its server starts; `process.py` once-per-process settings (torch threads,
glibc's allocator); `haproxy.py` what deploy/serve.sh asks of HAProxy.

serve/ may import ui/ (the page table, the model store) and i18n/; nothing of ui/, analysis/, model/ or viz/ imports
serve/ (tests/test_no_transformers.py). app.py, the entry, imports both.
"""
