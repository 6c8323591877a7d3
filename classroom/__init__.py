"""Class mode's shared store: rooms, live questions and their answers, the class's sentences. Pure Python with the
standard library's sqlite3 (one host: the embedded default) or psycopg (several hosts: PostgreSQL); no Streamlit, no
torch, and nothing else of the project, so the door (serve/) and the Class page (ui/) both use it.

    from classroom.store import open_store
    store = open_store()                  # HEADLIGHT_CLASS_DB, else SQLite under HEADLIGHT_DATA_DIR
    room = store.open_room()              # Room(code="7K3M9X2A", ...)

`store.py` (the API and the SQL), `lecturer.py` (the lecturer key: generated, compared in constant time, wrong keys
rate-limited per client address).
"""
