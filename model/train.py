"""`python -m model.train` is kept as an alias of `python -m training.train` (training lives in `training/`)."""

import sys

if __name__ == "__main__":
    from training.train import main

    sys.exit(main())
