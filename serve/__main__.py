"""The command line of serve/: how `make run`, `make serve` (deploy/serve.sh) and the tests start the app.

    python -m serve run app.py --server.port 8501    streamlit run's arguments: the app through the door, preloaded
    python -m serve starting-page ko                 the page make serve's balancer shows until the app is ready
    python -m serve haproxy SOCKET COMMAND           one command on HAProxy's admin socket (deploy/serve.sh)
    python -m serve cookie-secret                    a new secret shared by make serve's processes
    python -m serve lecturer-key                     a new lecturer key (make run / make serve, when unset)
    python -m serve public-url 0.0.0.0:8501          the URL students open for a bind address ("" for loopback)

Any other arguments go to Streamlit's command line as they are, through the door.
"""

from __future__ import annotations

import sys

from i18n import LANGS


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["starting-page"] and len(args) == 2 and args[1] in LANGS:
        from .door import starting_page

        sys.stdout.buffer.write(starting_page(args[1]))
        return
    if args[:1] == ["haproxy"] and len(args) == 3:
        from .haproxy import admin

        print(admin(args[1], args[2]), end="")
        return
    if args[:1] == ["public-url"] and len(args) == 2:  # deploy/serve.sh: HEADLIGHT_PUBLIC_URL for the share dialog
        from ui.hosts import bind_public_url, lan_address

        print(bind_public_url(args[1], lan_address()))
        return
    if args == ["lecturer-key"]:  # HEADLIGHT_LECTURER_KEY for the Class page and the class endpoints
        from classroom.lecturer import new_key

        print(new_key())
        return
    if args == ["cookie-secret"]:
        import secrets

        print(secrets.token_hex(32))
        return
    from . import door, preload

    door.install()
    from streamlit.web import cli  # Streamlit (and the plotly theme it sets up) imported before the preload thread

    if args[:1] == ["run"] and preload.enabled():  # imports and models while the server starts
        preload.start()  # (HEADLIGHT_PRELOAD=0: on demand, in the first run)
    sys.argv = ["streamlit", *args]
    cli.main()


if __name__ == "__main__":
    main()
