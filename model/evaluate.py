"""`python -m model.evaluate` is kept as an alias of `python -m training.evaluate` (training lives in `training/`)."""

import sys

if __name__ == "__main__":
    from training.evaluate import main

    sys.exit(main())
